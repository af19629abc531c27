/* endpoint_session.c - the endpoint of SMPP, UCP and CIMD2 connectors:
 * one session per instance (connectors/session.h), which does the
 * protocol. As a server, each instance takes a connection the listener
 * (connector_accept.c) hands over once its bind proved the account, and
 * sends that account's deliveries and receipts; as a client, each keeps a
 * session to the SMSC and sends the connector's out queue.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "account.h"
#include "connector_internal.h"
#include "scts.h"
#include "strutil.h"

/* A server connector's session: a client of ours, bound to an account. */
static bool serving(const struct connector *c)
{
  return c->ops == &endpoint_session_server;
}

/* ---- answers to requests ---- */

void connector_respond(struct instance *in, uint32_t ref, uint32_t raw_status, enum proto_op op,
                       enum proto_status status, const char *msgid)
{
  struct proto_pdu resp;
  memset(&resp, 0, sizeof resp);
  resp.op = op;
  resp.ref = ref;
  resp.raw_status = raw_status;
  resp.status = status;
  if (msgid)
    str_copy(resp.msgid, sizeof resp.msgid, msgid);   /* 64 characters at most */
  connector_answer(in, &resp);
}

void connector_answer(struct instance *in, const struct proto_pdu *resp)
{
  if (resp->status != PROTO_OK)
    count_one(&in->live.refused);
  /* An instance ending (or between sessions) has nobody to answer. */
  if (in->session)
    session_respond(in->session, resp);
}

static void session_answer(struct instance *in, const struct reply *rp, enum proto_status status, const char *msgid)
{
  connector_respond(in, rp->ref, rp->raw_status, rp->op, status, msgid);
}

static void session_hold_input_for(struct instance *in, unsigned ms)
{
  if (in->session)
    session_hold_input(in->session, ms);
}

/* ---- session callbacks ---- */

/* Gives back the account's bind the listener took for this session. */
static void bind_release(struct instance *in)
{
  if (in->bind_held >= 0)
    accounts_unbind(in->conn->core->accounts, in->bind_held);
  in->bind_held = -1;
}

/* The bind the listener proved (connector_accept.c) comes first on every
 * connection handed over: its account is taken without a second check. */
static enum proto_status on_bind(struct session *s, const struct proto_pdu *bind)
{
  struct instance *in = session_app(s);
  int user = in->proven_user;
  in->proven_user = -1;
  if (user >= 0 && accounts_find(in->conn->core->accounts, bind->user) == user) {
    in->user = user;
    return PROTO_OK;
  }
  LOGW(in->log, "bind from %s as '%s' refused: not the bind the listener proved", session_peer(s), bind->user);
  return PROTO_E_AUTH;
}

static void on_bound(struct session *s)
{
  struct instance *in = session_app(s);
  struct connector *c = in->conn;
  atomic_store(&in->bound, true);
  in->backoff_ms = 0;
  in->counted.connected_since = time(NULL);
  connector_instance_publish(in, true);
  if (serving(c) && in->user >= 0) {
    in->waiting_on = &c->user_queues[in->user];
    queue_add_waiter(in->waiting_on, in->loop, &in->ready);
  }
  LOGI(in->log, "instance %u bound%s%s (%s)", in->index, serving(c) ? " as " : "",
       serving(c) ? session_user(s) : "", session_peer(s));
  connector_pump(in);
}

static void on_request(struct session *s, const struct proto_pdu *req)
{
  struct instance *in = session_app(s);
  struct connector *c = in->conn;
  if (serving(c) && (req->op == PROTO_OP_QUERY || req->op == PROTO_OP_CANCEL || req->op == PROTO_OP_REPLACE)) {
    connector_about_in(in, req);
  } else if (serving(c) && req->op == PROTO_OP_SUBMIT) {
    struct reply rp = { .ref = req->ref, .raw_status = req->raw_status, .op = PROTO_OP_SUBMIT_RESP };
    /* Bound, so the listener proved its account: in->user is set. */
    connector_accept_message(in, &req->msg, session_user(s), in->user, &rp);
  } else if (!serving(c) && req->op == PROTO_OP_DELIVER && req->is_receipt) {
    connector_receipt_in(in, req);
  } else if (!serving(c) && req->op == PROTO_OP_DELIVER) {
    /* An MO: routed like any other message. */
    atomic_fetch_add(&c->core->stats.mo_in, 1);
    struct reply rp = { .ref = req->ref, .raw_status = req->raw_status, .op = PROTO_OP_DELIVER_RESP };
    connector_accept_message(in, &req->msg, session_user(s), -1, &rp);
  } else {
    connector_respond(in, req->ref, req->raw_status,
                      req->op == PROTO_OP_DELIVER ? PROTO_OP_DELIVER_RESP : PROTO_OP_SUBMIT_RESP,
                      PROTO_E_BIND_STATE, NULL);
  }
}

static void on_response(struct session *s, void *cookie, const struct proto_pdu *resp)
{
  connector_response_in(session_app(s), cookie, resp);
}

static void on_unanswered(struct session *s, void *cookie, enum session_loss why)
{
  struct instance *in = session_app(s);
  struct qitem *it = cookie;
  struct connector *c = in->conn;
  if (it->kind == QITEM_ABOUT) {
    connector_about_sent_back(in, it, NULL);
    return;
  }
  if (why == SESSION_LOST_TIMEOUT)
    connector_instance_error(in, "no response to a %s within %u ms",
                             it->kind == QITEM_MSG ? "message" : "receipt", c->cfg->response_timeout_ms);
  if (it->kind == QITEM_MSG)
    history_add(c->core->history, it->msg->id, HISTORY_RETRY, (uint16_t)c->index, 0, 0,
                why == SESSION_LOST_TIMEOUT ? "no response" : "connection lost");
  if (it->kind == QITEM_MSG && !serving(c)) {
    atomic_fetch_add(&c->core->stats.retried, 1);
    connector_requeue_front(&c->out, it);
  } else if (in->user >= 0) {
    connector_requeue_front(&c->user_queues[in->user], it);
  } else {
    qitem_free(it);
  }
}

static void on_ready(struct session *s)
{
  connector_pump(session_app(s));
}

static void on_disconnect(struct session *s, const char *reason)
{
  struct instance *in = session_app(s);
  bool was_bound = atomic_exchange(&in->bound, false);
  atomic_store(&in->ready, false);
  /* A session we stopped (emgd stopping) ends closed, not disconnected:
   * its unbind is what we asked for, no error. */
  bool ours = session_state(s) == SESSION_CLOSED;
  if (!serving(in->conn) && !ours)   /* a client leaving is no error of ours */
    connector_instance_error(in, "connection lost: %s", reason);
  if (in->waiting_on) {
    queue_remove_waiter(in->waiting_on, in->loop);
    in->waiting_on = NULL;
  }
  if (serving(in->conn)) {
    /* One that never bound ends in debug: its refusal is logged already, and
     * a flood of them would bury the log. */
    if (was_bound)
      LOGI(in->log, "instance %u: session from %s ended: %s", in->index, session_peer(s), reason);
    else
      LOGD(in->log, "instance %u: session from %s ended before a bind: %s", in->index, session_peer(s), reason);
    connector_release_held_acks(in, true);
    /* Destroying reports the receipts still unanswered, which go back to
     * the account's queue: the account must still be known then. */
    session_destroy(s);
    in->session = NULL;
    in->user = -1;
    bind_release(in);
    atomic_store(&in->busy, false);
  } else if (ours) {
    if (strcmp(reason, "unbound") == 0)
      LOGI(in->log, "instance %u: unbound from %s (stopping)", in->index, in->conn->cfg->connect);
    else
      LOGI(in->log, "instance %u: connection to %s closed (stopping): %s", in->index, in->conn->cfg->connect,
           reason);
  } else {
    uint64_t again_ms = session_reconnect_in_ms(s);
    char again[48] = "";
    if (again_ms)
      snprintf(again, sizeof again, "; next attempt in %.1f s", (double)again_ms / 1000.0);
    LOGW(in->log, "instance %u: connection to %s lost: %s%s", in->index, in->conn->cfg->connect, reason, again);
  }
  connector_instance_publish(in, true);
}

static const struct session_handler instance_handler = {
  .on_bind = on_bind,
  .on_bound = on_bound,
  .on_request = on_request,
  .on_response = on_response,
  .on_unanswered = on_unanswered,
  .on_ready = on_ready,
  .on_disconnect = on_disconnect,
};

static void take_handoff(struct instance *in)
{
  pthread_mutex_lock(&in->handoff_lock);
  int fd = in->handoff_fd;
  char peer[64];
  memcpy(peer, in->handoff_peer, sizeof peer);
  uint8_t *input = in->handoff_input;
  size_t len = in->handoff_input_len;
  struct tls_conn *tls = in->handoff_tls;
  in->proven_user = in->bind_held = in->handoff_user;
  in->handoff_fd = -1;
  in->handoff_input = NULL;
  in->handoff_tls = NULL;
  pthread_mutex_unlock(&in->handoff_lock);
  if (fd < 0)
    return;
  in->user = -1;
  in->session_serial++;
  in->session = session_server_adopt(in->loop, fd, tls, peer, &in->conn->session_cfg, &instance_handler, in,
                                     input, len);
  free(input);
  if (!in->session) {
    LOGE(in->log, "instance %u: no session for %s (out of memory)", in->index, peer);
    bind_release(in);
    atomic_store(&in->busy, false);
  }
}

/* Accounts changed: a session whose account is gone, disabled, expired or
 * no longer allowed here (connector, address) is unbound. */
static void account_recheck(struct instance *in)
{
  struct session *s = in->session;
  enum account_refusal why;
  if (!s || in->user < 0 || session_state(s) == SESSION_CLOSED ||
      accounts_session_allowed(in->conn->core->accounts, in->user, in->conn->index, session_peer(s), &why))
    return;
  LOGI(in->log, "instance %u: unbinding '%s' (%s): %s", in->index, session_user(s), session_peer(s),
       account_refusal_text(why));
  session_stop(s);
}


/* ---- sending ---- */

/* The queue an instance sends from now, or NULL when it sends nothing
 * (unbound, stopping, paused, backing off). */
static struct queue *pump_source(struct instance *in)
{
  struct connector *c = in->conn;
  struct session *s = in->session;
  if (atomic_load(&in->phase) != PHASE_RUN || atomic_load(&c->paused))
    return NULL;
  if (!s || !atomic_load(&in->bound))
    return NULL;
  if (!serving(c))
    return in->paused_until_ms > evloop_now_ms(in->loop) ? NULL : &c->out;
  /* A client bound as transmitter only takes no deliveries: its account's
   * receipts and messages wait for a receiver or transceiver bind. */
  if (in->user < 0 || !(session_bind_mode(s) & PROTO_BIND_RX))
    return NULL;
  return &c->user_queues[in->user];
}

/* Sends from q as far as the session's window goes. */
static void pump_session(struct instance *in, struct queue *q)
{
  struct connector *c = in->conn;
  struct session *s = in->session;
  unsigned room;
  while ((room = session_can_send(s)) > 0) {
    struct qlist l = { 0 };
    if (!queue_take(q, room < PUMP_BATCH ? room : PUMP_BATCH, &l))
      return;
    struct qitem *it = l.head;
    while (it) {
      struct qitem *next = it->next;
      if (it->kind == QITEM_MSG && !connector_may_send(in, it)) {
        it = next;
        continue;
      }
      struct proto_pdu pdu;
      memset(&pdu, 0, sizeof pdu);
      if (it->kind == QITEM_MSG) {
        /* To an SMSC a message is a submit; to a client of ours, a delivery. */
        pdu.op = serving(c) ? PROTO_OP_DELIVER : PROTO_OP_SUBMIT;
        pdu.msg = *it->msg;
      } else {
        pdu.op = PROTO_OP_DELIVER;
        pdu.is_receipt = true;
        pdu.receipt = it->receipt;
      }
      if (session_request(s, &pdu, it) == -1) {
        if (session_can_send(s) > 0) {
          /* Room to send, yet refused: the protocol cannot express it.
           * Retrying would loop forever; it fails for good. */
          LOGW(in->log, "%s to %s cannot be sent over %s: dropped with a failure receipt",
               it->kind == QITEM_MSG ? "message" : "receipt",
               it->kind == QITEM_MSG ? it->msg->dst.addr : it->receipt.src.addr,
               c->cfg->proto->name);
          if (it->kind == QITEM_MSG)
            connector_give_up_message(in, it, MSG_STATE_REJECTED, 0);
          else
            qitem_free(it);
          it = next;
          continue;
        }
        /* Not sendable now: back to the front, in order. */
        connector_requeue_rest(q, it, l.tail);
        return;
      }
      it->sent_ns = clock_now_ns();
      LOGD2(in->log, "sent %s %" PRIu64 " to %s", it->kind == QITEM_MSG ? "message" : "receipt",
            it->kind == QITEM_MSG ? it->msg->id : 0,
            it->kind == QITEM_MSG ? it->msg->dst.addr : it->receipt.src.addr);
      it = next;
    }
  }
}

static unsigned session_room(struct instance *in)
{
  return session_can_send(in->session);
}

static void session_send(struct instance *in)
{
  /* Queries and cancels go first, paused or not: they are not messages. */
  if (!serving(in->conn) && in->session && atomic_load(&in->bound))
    connector_about_pump(in);
  connector_send_from(in, pump_source, pump_session, session_room);
}

/* ---- the instance's life ---- */

/* The end of an instance's thread: its session goes, then what every
 * instance does at its end. */
static void session_end(struct instance *in)
{
  if (in->session) {
    session_destroy(in->session);
    in->session = NULL;
  }
  connector_instance_end(in);
}

static void server_run(struct instance *in)
{
  evloop_run(in->loop);
  if (in->waiting_on)
    queue_remove_waiter(in->waiting_on, in->loop);
  session_end(in);
}

static void client_run(struct instance *in)
{
  struct connector *c = in->conn;
  in->session = session_client_create(in->loop, &c->session_cfg, &instance_handler, in);
  if (!in->session)
    LOGE(in->log, "instance %u: cannot create its session", in->index);
  queue_add_waiter(&c->out, in->loop, &in->ready);
  in->waiting_on = NULL;
  evloop_run(in->loop);
  queue_remove_waiter(&c->out, in->loop);
  session_end(in);
}

static void session_stop_now(struct instance *in)
{
  if (in->session && session_state(in->session) != SESSION_CLOSED)
    session_stop(in->session);
}

static void server_wake(struct instance *in)
{
  if (!in->session)
    take_handoff(in);
  connector_about_answers(in);
}

static void client_wake(struct instance *in)
{
  connector_tls_take(in);
}

static void client_tick(struct instance *in)
{
  if (in->index == 0)
    connector_about_expire(in->conn);
}

static void session_describe(struct instance *in, struct connector_instance_info *i)
{
  struct connector *c = in->conn;
  struct session *s = in->session;
  bool up = s && session_state(s) != SESSION_DISCONNECTED && session_state(s) != SESSION_CLOSED;
  switch (s ? session_state(s) : SESSION_CLOSED) {
  case SESSION_OPEN: i->state = "connected"; break;
  case SESSION_BINDING: i->state = "binding"; break;
  case SESSION_BOUND: i->state = "bound"; break;
  case SESSION_UNBINDING: i->state = "unbinding"; break;
  default: i->state = c->ops->idle_state; break;
  }
  str_copy(i->peer, sizeof i->peer, up ? session_peer(s) : "");
  str_copy(i->user, sizeof i->user, !serving(c) ? c->cfg->system_id : up ? session_user(s) : "");
  enum proto_bind_mode mode = up ? session_bind_mode(s) : 0;
  str_copy(i->bind, sizeof i->bind, mode == PROTO_BIND_TRX ? "trx" : mode == PROTO_BIND_TX ? "tx"
                                          : mode == PROTO_BIND_RX ? "rx" : "");
  i->window_used = up ? session_outstanding(s) : 0;
  if (s)
    i->reconnects = session_stats(s)->reconnects;
  if (!up)
    i->connected_since = 0;
}

/* ---- the connector's start and stop ---- */

static int server_start(struct connector *c, char *err, size_t err_len)
{
  return connector_listen(c, err, err_len);
}

static int server_started(struct connector *c, char *err, size_t err_len)
{
  if (connector_accept_start(c, err, err_len) < 0 || connector_about_start(c, err, err_len) < 0)
    return -1;
  LOGI(c->log, "listening on %s (%s, %u instances)", c->cfg->listen, c->cfg->proto->name, c->n_instances);
  return 0;
}

static int client_started(struct connector *c, char *err, size_t err_len)
{
  (void)err, (void)err_len;
  LOGI(c->log, "connecting to %s (%s, %u instances, window %u)", c->cfg->connect, c->cfg->proto->name,
       c->n_instances, c->cfg->window);
  return 0;
}

static void server_stop_accepting(struct connector *c)
{
  if (c->accept_started) {
    atomic_store(&c->accepting, false);
    evloop_wake(c->accept_loop);
    pthread_join(c->accept_thread, NULL);
    c->accept_started = false;
  }
}

static void server_destroy(struct connector *c)
{
  connector_about_free(c);
  for (unsigned i = 0; c->instances && i < c->n_instances; i++) {
    struct instance *in = &c->instances[i];
    if (in->handoff_fd >= 0)
      close(in->handoff_fd);
    free(in->handoff_input);
    tls_conn_free(in->handoff_tls);
  }
  if (c->accept_loop)
    evloop_destroy(c->accept_loop);
  connector_accept_free(c);
  if (c->listen_fd != -1)
    close(c->listen_fd);
  if (c->scts)
    scts_alloc_destroy(c->scts);
}

const struct endpoint_ops endpoint_session_server = {
  .kind = "session server",
  .account_queues = true,
  .to_application = true,
  .tls = ENDPOINT_TLS_ACCEPTS,
  .idle_state = "idle",
  .start = server_start,
  .started = server_started,
  .stop_accepting = server_stop_accepting,
  .run = server_run,
  .stop = session_stop_now,
  .wake = server_wake,
  .send = session_send,
  .answer = session_answer,
  .hold_input = session_hold_input_for,
  .accounts_changed = account_recheck,
  .describe = session_describe,
  .destroy = server_destroy,
};

const struct endpoint_ops endpoint_session_client = {
  .kind = "session client",
  .smsc_session = true,
  .tls = ENDPOINT_TLS_CONNECTS,
  .idle_state = "down",
  .started = client_started,
  .run = client_run,
  .stop = session_stop_now,
  .wake = client_wake,
  .tick = client_tick,
  .send = session_send,
  .answer = session_answer,
  .hold_input = session_hold_input_for,
  .describe = session_describe,
  .destroy = connector_about_free,
};
