/* connector_accept.c - a server connector's listener: its thread accepts
 * connections and hands each to a free instance, and refuses a connection
 * beyond the instances at its bind. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "connector_internal.h"
#include "netutil.h"
#include "strutil.h"

/* A connection beyond the connector's instances gets a session of its own
 * in the listener's loop, only to answer its bind with a refusal (SMPP
 * ESME_RBINDFAIL, UCP NACK 07) and close: the client learns why, instead of
 * seeing its connection drop. */
static enum proto_status refuse_bind(struct session *s, const struct proto_pdu *bind)
{
  struct connector *c = session_app(s);
  atomic_fetch_add(&c->core->stats.sessions_refused, 1);
  LOGW(c->log, "bind from %s as '%s' refused: all %u instances are in use", session_peer(s),
       bind->user, c->n_instances);
  return PROTO_E_AUTH;
}

static void refused_gone(struct session *s, const char *reason)
{
  struct connector *c = session_app(s);
  for (unsigned i = 0; i < sizeof c->refusing / sizeof c->refusing[0]; i++)
    if (c->refusing[i] == s)
      c->refusing[i] = NULL;
  session_destroy(s);
}

static void refuse_request(struct session *s, const struct proto_pdu *req)
{
  struct proto_pdu resp;
  memset(&resp, 0, sizeof resp);
  resp.op = req->op == PROTO_OP_DELIVER ? PROTO_OP_DELIVER_RESP : PROTO_OP_SUBMIT_RESP;
  resp.ref = req->ref;
  resp.raw_status = req->raw_status;
  resp.status = PROTO_E_BIND_STATE;
  session_respond(s, &resp);
}

static const struct session_handler refuse_handler = {
  .on_bind = refuse_bind,
  .on_request = refuse_request,
  .on_disconnect = refused_gone,
};

static void refuse_session(struct connector *c, int fd, const char *peer)
{
  /* A bounded number at a time: a flood of extra connections is closed. */
  unsigned slot = 0;
  while (slot < sizeof c->refusing / sizeof c->refusing[0] && c->refusing[slot])
    slot++;
  if (slot == sizeof c->refusing / sizeof c->refusing[0] || !atomic_load(&c->accepting) ||
      !(c->refusing[slot] = session_server_create(c->accept_loop, fd, peer, &c->session_cfg,
                                                  &refuse_handler, c))) {
    atomic_fetch_add(&c->core->stats.sessions_refused, 1);
    LOGW(c->log, "connection from %s closed: all %u instances are in use", peer, c->n_instances);
    close(fd);
  }
}

/* How long the listener stops accepting when the process is out of
 * descriptors: the pending connection keeps the listener readable, so
 * without a pause it would spin on EMFILE and log the same line forever. */
#define ACCEPT_PAUSE_MS 100

static void pause_accepting(struct connector *c, struct evloop *loop, int err)
{
  if (!c->accept_pauses++)
    LOGW(c->log, "listener: cannot accept: %s; accepting paused %d ms at a time until descriptors are free",
         strerror(err), ACCEPT_PAUSE_MS);
  c->accept_paused_until = evloop_now_ms(loop) + ACCEPT_PAUSE_MS;
  evloop_modify(loop, c->listen_fd, 0);
}

/* The listener's tick: accepting again once a pause is over. */
static void resume_accepting(struct evloop *loop, void *arg)
{
  struct connector *c = arg;
  if (c->accept_paused_until && evloop_now_ms(loop) >= c->accept_paused_until) {
    c->accept_paused_until = 0;
    evloop_modify(loop, c->listen_fd, EVLOOP_READ);
  }
}

static void on_accept(struct evloop *loop, int fd, unsigned events, void *arg)
{
  struct connector *c = arg;
  char peer[64];
  int cfd;
  (void)events;
  while ((cfd = net_accept(fd, peer, sizeof peer)) != -1) {
    if (c->accept_pauses) {
      LOGI(c->log, "listener: accepting again, after %" PRIu64 " pauses for want of descriptors", c->accept_pauses);
      c->accept_pauses = 0;
    }
    struct instance *free_in = NULL;
    for (unsigned i = 0; i < c->n_instances && !free_in; i++) {
      bool expected = false;
      if (atomic_compare_exchange_strong(&c->instances[i].busy, &expected, true))
        free_in = &c->instances[i];
    }
    if (!free_in || !atomic_load(&c->accepting)) {
      if (free_in)
        atomic_store(&free_in->busy, false);
      refuse_session(c, cfd, peer);
      continue;
    }
    pthread_mutex_lock(&free_in->handoff_lock);
    free_in->handoff_fd = cfd;
    str_copy(free_in->handoff_peer, sizeof free_in->handoff_peer, peer);
    pthread_mutex_unlock(&free_in->handoff_lock);
    evloop_wake(free_in->loop);
  }
  if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
    pause_accepting(c, loop, errno);
}

static void on_accept_wake(struct evloop *loop, void *arg)
{
  struct connector *c = arg;
  if (!atomic_load(&c->accepting))
    evloop_stop(loop);
}

static void *accept_main(void *arg)
{
  struct connector *c = arg;
  evloop_run(c->accept_loop);
  for (unsigned i = 0; i < sizeof c->refusing / sizeof c->refusing[0]; i++)
    if (c->refusing[i]) {
      session_destroy(c->refusing[i]);
      c->refusing[i] = NULL;
    }
  evloop_remove(c->accept_loop, c->listen_fd);
  close(c->listen_fd);
  c->listen_fd = -1;
  return NULL;
}

int connector_listen(struct connector *c, char *err)
{
  c->listen_fd = net_listen(c->cfg->listen, err);
  if (c->listen_fd == -1)
    return -1;
  c->accept_loop = evloop_create(100);
  if (!c->accept_loop ||
      evloop_add(c->accept_loop, c->listen_fd, EVLOOP_READ, on_accept, c) == -1) {
    snprintf(err, NETUTIL_ERR_LEN, "cannot watch the listener of %s", c->cfg->name);
    return -1;
  }
  evloop_on_wake(c->accept_loop, on_accept_wake, c);
  if (evloop_tick(c->accept_loop, resume_accepting, c) == -1) {
    snprintf(err, NETUTIL_ERR_LEN, "cannot watch the listener of %s", c->cfg->name);
    return -1;
  }
  atomic_store(&c->accepting, true);
  return 0;
}

int connector_accept_start(struct connector *c, char *err)
{
  if (pthread_create(&c->accept_thread, NULL, accept_main, c) != 0) {
    snprintf(err, NETUTIL_ERR_LEN, "cannot start the listener: %s", strerror(errno));
    return -1;
  }
  char name[16];
  snprintf(name, sizeof name, "%.10s/lsn", c->cfg->name);
  pthread_setname_np(c->accept_thread, name);
  c->accept_started = true;
  return 0;
}
