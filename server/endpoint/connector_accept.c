/* connector_accept.c - a server connector's listener: its thread accepts
 * connections and holds each until its bind proves an account, then hands
 * it to a free instance. So instances serve only bound sessions: a
 * connection that never binds, or binds with a wrong password, costs the
 * listener one of a bounded number of slots for at most bind_timeout, and
 * no instance.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "account.h"
#include "connector_internal.h"
#include "netutil.h"
#include "strutil.h"

/* Lines a flood of connections would repeat: one each 10 s at most. */
#define REFUSAL_LOG_MS 10000

/* An unbound connection closed for a newcomer after this long (a client
 * binds within milliseconds) counts as a failed login. */
#define UNBOUND_GRACE_MS 1000

/* A connection that has not bound, in the listener's loop. */
struct unbound {
  struct session *session;
  uint64_t since_ms;
  char peer[64];
};

/* The host parts of two peers are the same. */
static bool same_address(const char *peer, const char *other)
{
  const char *host, *other_host;
  size_t len = net_peer_host(peer, &host);
  return net_peer_host(other, &other_host) == len && memcmp(host, other_host, len) == 0;
}

static struct unbound *unbound_of(struct connector *c, const struct session *s)
{
  for (unsigned i = 0; i < c->n_unbound; i++)
    if (c->unbound[i].session == s)
      return &c->unbound[i];
  return NULL;
}

/* Forgets s (gone, or handed over) and destroys it when asked to. */
static void unbound_forget(struct connector *c, struct session *s, bool destroy)
{
  struct unbound *u = unbound_of(c, s);
  if (u)
    *u = c->unbound[--c->n_unbound];
  if (destroy)
    session_destroy(s);
}

static unsigned unbound_from(const struct connector *c, const char *peer)
{
  unsigned n = 0;
  for (unsigned i = 0; i < c->n_unbound; i++)
    n += same_address(c->unbound[i].peer, peer);
  return n;
}

static struct instance *instance_take(struct connector *c)
{
  for (unsigned i = 0; i < c->n_instances; i++) {
    bool expected = false;
    if (atomic_compare_exchange_strong(&c->instances[i].busy, &expected, true))
      return &c->instances[i];
  }
  return NULL;
}

/* Gives in the connection of s, whose bind proved account user: in's own
 * session takes it from the bind on (endpoint_session.c: take_handoff). */
static bool hand_over(struct connector *c, struct instance *in, struct session *s, int user)
{
  char peer[64];
  int fd;
  struct tls_conn *tls;
  uint8_t *input;
  size_t len;
  str_copy(peer, sizeof peer, session_peer(s));
  if (session_hand_over(s, &fd, &tls, &input, &len) < 0)
    return false;
  unbound_forget(c, s, false);   /* s is destroyed, its memory kept to the iteration's end */
  pthread_mutex_lock(&in->handoff_lock);
  if (in->handoff_fd >= 0) {   /* cannot be: the instance was free; never leak one */
    close(in->handoff_fd);
    free(in->handoff_input);
    tls_conn_free(in->handoff_tls);
  }
  in->handoff_fd = fd;
  in->handoff_tls = tls;
  in->handoff_input = input;
  in->handoff_input_len = len;
  in->handoff_user = user;
  str_copy(in->handoff_peer, sizeof in->handoff_peer, peer);
  pthread_mutex_unlock(&in->handoff_lock);
  evloop_wake(in->loop);
  return true;
}

static enum proto_status refuse(struct connector *c, struct session *s, const struct proto_pdu *bind,
                                enum account_refusal why)
{
  if (why != ACCOUNT_NO_INSTANCE)   /* counted as a session refused */
    atomic_fetch_add(&c->core->stats.binds_refused, 1);
  uint64_t skipped = 0;
  /* A flood of binds beyond the instances is logged once each 10 s, with
   * a count; guessing is braked by the guard, which logs its blocks. */
  if (why != ACCOUNT_NO_INSTANCE)
    LOGW(c->log, "bind from %s as '%s' refused: %s", session_peer(s), bind->user, account_refusal_text(why));
  else if (log_every_due(&c->refusal_log, evloop_now_ms(c->accept_loop), REFUSAL_LOG_MS, &skipped))
    LOGW(c->log, "bind from %s as '%s' refused: %s (%" PRIu64 " more refused since the last such line)",
         session_peer(s), bind->user, account_refusal_text(why), skipped);
  if (why == ACCOUNT_UNKNOWN || why == ACCOUNT_PASSWORD || why == ACCOUNT_CERTIFICATE)
    auth_guard_failed(c->core->auth_guard, session_peer(s), "a bind");
  return account_refusal_status(why);
}

static enum proto_status unbound_bind(struct session *s, const struct proto_pdu *bind)
{
  struct connector *c = session_app(s);
  struct core *core = c->core;
  /* An address that failed too often is refused unheard: guessing from it
   * learns nothing until its block ends (logged once, by the guard). */
  if (core_login_blocked(core, session_peer(s)))
    return PROTO_E_AUTH;
  int user;
  const struct tls_conn *tls = session_tls(s);
  enum account_refusal why = accounts_login(core->accounts, c->index, session_peer(s), bind->user, bind->password,
                                            tls && *tls_peer_subject(tls) ? tls_peer_subject(tls) : NULL, true,
                                            &user);
  if (why != ACCOUNT_OK)
    return refuse(c, s, bind, why);
  struct instance *in = atomic_load(&c->accepting) ? instance_take(c) : NULL;
  if (!in) {
    accounts_unbind(core->accounts, user);
    accounts_count(core->accounts, ACCOUNT_NO_INSTANCE);
    atomic_fetch_add(&core->stats.sessions_refused, 1);
    return refuse(c, s, bind, ACCOUNT_NO_INSTANCE);
  }
  if (!hand_over(c, in, s, user)) {
    atomic_store(&in->busy, false);
    accounts_unbind(core->accounts, user);
    LOGW(c->log, "bind from %s as '%s' refused: the connection could not be handed to an instance "
         "(out of memory, or answers it has not read)", session_peer(s), bind->user);
    return PROTO_E_AUTH;
  }
  return PROTO_OK;   /* s is gone: the instance answers the bind */
}

static void unbound_gone(struct session *s, const char *reason)
{
  struct connector *c = session_app(s);
  uint64_t skipped;
  /* A failed handshake says why (wrong version, no shared cipher, a bad
   * certificate, plain text at a TLS port); a flood of them ten lines a
   * second at most. */
  if (strncmp(reason, "TLS", 3) != 0)
    LOGD(c->log, "connection from %s ended before a bind: %s", session_peer(s), reason);
  else if (log_burst_due(&c->tls_log, evloop_now_ms(c->accept_loop), 1000, 10, &skipped))
    LOGW(c->log, "connection from %s closed: %s (%" PRIu64 " more failed handshakes since the last such line)",
         session_peer(s), reason, skipped);
  unbound_forget(c, s, true);
}

/* No on_request: the session runtime answers a submit before the bind
 * itself (ESME_RINVBNDSTS, UCP NACK 04). */
static const struct session_handler unbound_handler = {
  .on_bind = unbound_bind,
  .on_disconnect = unbound_gone,
};

/* Room for a connection from peer among the unbound ones: false when its
 * address holds unbound_per_ip already. With all unbound_max taken, a
 * newcomer from an address that holds none closes the oldest from another
 * address: a client binds within milliseconds, so what goes is nearly
 * always a squatter's, however fast squatters cycle their connections; one
 * held past UNBOUND_GRACE_MS counts as a failed login of its address, which
 * the guard blocks after auth_max_failures. A newcomer from an address that
 * holds some already is closed instead: otherwise a squatter whose
 * connection was just closed would come back and close the oldest in turn,
 * which, while squatters cycle, is the one client still binding. */
static bool unbound_room(struct connector *c, const char *peer, uint64_t now)
{
  uint64_t skipped;
  unsigned mine = unbound_from(c, peer);
  if (mine >= c->cfg->unbound_per_ip) {
    if (log_every_due(&c->unbound_log, now, REFUSAL_LOG_MS, &skipped))
      LOGW(c->log, "connection from %s closed: %u connections from its address have not bound yet "
           "(unbound_per_ip; %" PRIu64 " more such since the last such line)",
           peer, c->cfg->unbound_per_ip, skipped);
    return false;
  }
  if (c->n_unbound < c->cfg->unbound_max)
    return true;
  struct unbound *oldest = NULL;
  for (unsigned i = 0; !mine && i < c->n_unbound; i++)
    if ((!oldest || c->unbound[i].since_ms < oldest->since_ms) && !same_address(c->unbound[i].peer, peer))
      oldest = &c->unbound[i];
  if (log_every_due(&c->unbound_full_log, now, REFUSAL_LOG_MS, &skipped))
    LOGW(c->log, "connection from %s: all %u unbound slots taken (unbound_max); %s (%" PRIu64 " more "
         "such since the last such line)", peer, c->cfg->unbound_max,
         oldest ? "the oldest from another address closed for it"
                : mine ? "closed: its address holds unbound ones already" : "closed", skipped);
  if (!oldest)
    return false;
  if (now - oldest->since_ms >= UNBOUND_GRACE_MS)
    auth_guard_failed(c->core->auth_guard, oldest->peer, "a connection that did not bind");
  unbound_forget(c, oldest->session, true);
  return true;
}

static void unbound_add(struct connector *c, int fd, const char *peer, uint64_t now)
{
  if (!atomic_load(&c->accepting) || !unbound_room(c, peer, now)) {
    atomic_fetch_add(&c->core->stats.sessions_refused, 1);
    close(fd);
    return;
  }
  /* The context of the moment: a reload may have put in a new one. */
  struct session_config cfg = c->unbound_cfg;
  cfg.tls = connector_tls_current(c, NULL);
  struct session *s = session_server_create(c->accept_loop, fd, peer, &cfg, &unbound_handler, c);
  tls_ctx_unref(cfg.tls);
  if (!s) {   /* fd closed */
    atomic_fetch_add(&c->core->stats.sessions_refused, 1);
    return;
  }
  struct unbound *u = &c->unbound[c->n_unbound++];
  u->session = s;
  u->since_ms = now;
  str_copy(u->peer, sizeof u->peer, peer);
}

/* How long the listener stops accepting when the process is out of
 * descriptors: the pending connection keeps the listener readable, so
 * without a pause it would spin on EMFILE and log the same line forever. */
#define ACCEPT_PAUSE_MS 100

static void pause_accepting(struct connector *c, struct evloop *loop, int err)
{
  uint64_t skipped, now = evloop_now_ms(loop);
  c->accept_pauses++;
  /* Once per 10 s at most: descriptors freed and taken again make the
   * listener pause and resume in turn. */
  if (log_every_due(&c->emfile_log, now, REFUSAL_LOG_MS, &skipped)) {
    LOGW(c->log, "listener: cannot accept: %s; accepting paused %d ms at a time until descriptors are free "
         "(%" PRIu64 " more pauses since the last such line)", strerror(err), ACCEPT_PAUSE_MS, skipped);
    c->accept_warned = true;
  }
  c->accept_paused_until = now + ACCEPT_PAUSE_MS;
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
    if (c->accept_warned) {
      LOGI(c->log, "listener: accepting again, after %" PRIu64 " pauses for want of descriptors", c->accept_pauses);
      c->accept_warned = false;
    }
    c->accept_pauses = 0;
    /* An address the guard blocks is closed at once: it costs no slot. */
    if (core_login_blocked(c->core, peer)) {
      close(cfd);
      continue;
    }
    unbound_add(c, cfd, peer, evloop_now_ms(loop));
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
  while (c->n_unbound)
    unbound_forget(c, c->unbound[c->n_unbound - 1].session, true);
  evloop_remove(c->accept_loop, c->listen_fd);
  close(c->listen_fd);
  c->listen_fd = -1;
  return NULL;
}

int connector_listen(struct connector *c, char *err, size_t err_len)
{
  c->unbound_cfg = c->session_cfg;
  c->unbound_cfg.window = 1;
  c->unbound_cfg.bind_timeout_ms = c->cfg->bind_timeout_ms;
  c->unbound = calloc(c->cfg->unbound_max, sizeof *c->unbound);
  if (!c->unbound) {
    snprintf(err, err_len, "out of memory");
    return -1;
  }
  c->listen_fd = net_listen(c->cfg->listen, err, err_len);
  if (c->listen_fd == -1)
    return -1;
  c->accept_loop = evloop_create(100);
  if (!c->accept_loop ||
      evloop_add(c->accept_loop, c->listen_fd, EVLOOP_READ, on_accept, c) == -1) {
    snprintf(err, err_len, "cannot watch the listener of %s", c->cfg->name);
    return -1;
  }
  evloop_on_wake(c->accept_loop, on_accept_wake, c);
  if (evloop_tick(c->accept_loop, resume_accepting, c) == -1) {
    snprintf(err, err_len, "cannot watch the listener of %s", c->cfg->name);
    return -1;
  }
  atomic_store(&c->accepting, true);
  return 0;
}

int connector_accept_start(struct connector *c, char *err, size_t err_len)
{
  if (pthread_create(&c->accept_thread, NULL, accept_main, c) != 0) {
    snprintf(err, err_len, "cannot start the listener: %s", strerror(errno));
    return -1;
  }
  char name[16];
  snprintf(name, sizeof name, "%.10s/lsn", c->cfg->name);
  pthread_setname_np(c->accept_thread, name);
  c->accept_started = true;
  return 0;
}

void connector_accept_free(struct connector *c)
{
  free(c->unbound);
  c->unbound = NULL;
}
