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
/* Lines a flood of connections would repeat: one each 10 s at most. */
#define REFUSAL_LOG_MS 10000

static enum proto_status refuse_bind(struct session *s, const struct proto_pdu *bind)
{
  struct connector *c = session_app(s);
  uint64_t skipped;
  atomic_fetch_add(&c->core->stats.sessions_refused, 1);
  if (log_every_due(&c->refusal_log, evloop_now_ms(c->accept_loop), REFUSAL_LOG_MS, &skipped))
    LOGW(c->log, "bind from %s as '%s' refused: all %u instances are in use (%" PRIu64 " more refused "
         "since the last such line)", session_peer(s), bind->user, c->n_instances, skipped);
  return PROTO_E_AUTH;
}

/* The host parts of two peers are the same. */
static bool same_address(const char *peer, const char *other)
{
  const char *host, *other_host;
  size_t len = net_peer_host(peer, &host);
  return net_peer_host(other, &other_host) == len && memcmp(host, other_host, len) == 0;
}

/* A connection has this long to bind before a newcomer from another
 * address may take its instance (a client binds within milliseconds). */
#define UNBOUND_GRACE_MS 1000

/* With every instance taken: the one held longest by a connection from
 * another address than peer's that has not bound within UNBOUND_GRACE_MS
 * (at once when its address failed lately: auth_guard), to be handed
 * peer's connection instead; NULL when there is none. Each such drop counts
 * as a failed login of its address, which the guard blocks after
 * auth_max_failures. So a client that connects and never binds, again and
 * again, holds instances only while nobody else wants them. */
static struct instance *unbound_victim(struct connector *c, const char *peer, uint64_t now)
{
  struct instance *victim = NULL;
  for (unsigned i = 0; i < c->n_instances; i++) {
    struct instance *in = &c->instances[i];
    if (!atomic_load(&in->busy) || atomic_load(&in->bound) || same_address(in->handoff_peer, peer) ||
        (victim && in->handoff_ms >= victim->handoff_ms) ||
        (now - in->handoff_ms < UNBOUND_GRACE_MS && !auth_guard_suspect(c->core->auth_guard, in->handoff_peer)))
      continue;
    victim = in;
  }
  return victim;
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
    uint64_t skipped;
    atomic_fetch_add(&c->core->stats.sessions_refused, 1);
    if (log_every_due(&c->refusal_log, evloop_now_ms(c->accept_loop), REFUSAL_LOG_MS, &skipped))
      LOGW(c->log, "connection from %s closed: all %u instances are in use (%" PRIu64 " more refused "
           "since the last such line)", peer, c->n_instances, skipped);
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
    /* An address the guard blocks is closed at once: it costs no instance. */
    if (auth_guard_blocked(c->core->auth_guard, peer)) {
      atomic_fetch_add(&c->core->stats.logins_blocked, 1);
      close(cfd);
      continue;
    }
    struct instance *free_in = NULL;
    for (unsigned i = 0; i < c->n_instances && !free_in; i++) {
      bool expected = false;
      if (atomic_compare_exchange_strong(&c->instances[i].busy, &expected, true))
        free_in = &c->instances[i];
    }
    uint64_t now = evloop_now_ms(loop);
    if (!free_in && atomic_load(&c->accepting) && (free_in = unbound_victim(c, peer, now))) {
      /* Its instance drops the unbound connection for this one (on_wake);
       * busy again in case that connection has just gone by itself. */
      atomic_store(&free_in->busy, true);
      uint64_t skipped;
      if (log_every_due(&c->unbound_log, now, REFUSAL_LOG_MS, &skipped))
        LOGW(c->log, "connection from %s, which had not bound within %d ms, dropped for one from %s "
             "(every instance was taken; %" PRIu64 " more such since the last such line)",
             free_in->handoff_peer, UNBOUND_GRACE_MS, peer, skipped);
    }
    if (!free_in || !atomic_load(&c->accepting)) {
      if (free_in)
        atomic_store(&free_in->busy, false);
      refuse_session(c, cfd, peer);
      continue;
    }
    pthread_mutex_lock(&free_in->handoff_lock);
    if (free_in->handoff_fd >= 0)   /* one handed over already waits there */
      close(free_in->handoff_fd);
    free_in->handoff_fd = cfd;
    free_in->handoff_ms = now;
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
