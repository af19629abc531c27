/* endpoint_http_server.c - the endpoint of HTTP server connectors
 * (connectors/http/http_server.h): Kannel's sendsms interface and the
 * gateway's own. They have no sessions: every instance accepts
 * connections on the connector's socket and serves those it accepted; its
 * thread takes each message of a request through the message path, as a
 * submit is, and completes the request's message where a session would
 * answer. Receipts for its accounts go back by callback (the URL the
 * message came with), each instance calling back what its queues hold.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "account.h"
#include "connector_internal.h"
#include "fd_budget.h"
#include "http_callback.h"
#include "strutil.h"

static int http_check_user(void *ctx, const char *peer, const char *user, const char *password)
{
  const struct connector *c = ((struct instance *)ctx)->conn;
  /* As for binds: an address that failed too often is refused unread. */
  if (core_login_blocked(c->core, peer))
    return -1;
  int index;
  enum account_refusal why = accounts_login(c->core->accounts, c->index, peer, user, password, NULL, false, &index);
  if (why == ACCOUNT_OK)
    return 0;
  atomic_fetch_add(&c->core->stats.binds_refused, 1);
  if (why == ACCOUNT_UNKNOWN || why == ACCOUNT_PASSWORD || why == ACCOUNT_CERTIFICATE)
    auth_guard_failed(c->core->auth_guard, peer, "an HTTP request");
  else
    LOGW(c->log, "HTTP request from %s as '%s' refused: %s", peer, user, account_refusal_text(why));
  return -1;
}

/* The gateway's verdict as an HTTP client is told it. */
static enum http_codec_outcome http_outcome(enum proto_status status)
{
  switch (status) {
  case PROTO_OK: return HTTP_CODEC_ACCEPTED;
  case PROTO_E_THROTTLED: return HTTP_CODEC_THROTTLED;
  case PROTO_E_QUEUE_FULL:
  case PROTO_E_TEMPORARY: return HTTP_CODEC_TEMPORARY;
  case PROTO_E_ADDRESS: return HTTP_CODEC_NO_ROUTE;
  case PROTO_E_CREDIT: return HTTP_CODEC_NO_CREDIT;
  default: return HTTP_CODEC_REJECTED;
  }
}

/* Completes the request's message; its id is msgid, the decimal gateway id
 * the origin knows it by. */
static void http_answer(struct instance *in, const struct reply *rp, enum proto_status status, const char *msgid)
{
  if (status != PROTO_OK)
    count_one(&in->live.refused);
  http_server_complete(rp->completion, http_outcome(status), msgid ? strtoull(msgid, NULL, 10) : 0);
}

/* In the instance's thread, which read the request: the message takes the
 * accept path of a submit; the answer completes it. */
static void http_submit(void *ctx, const struct http_server_message *hm, struct http_server_completion done)
{
  struct instance *in = ctx;
  struct msg m = *hm->msg;
  m.callback = hm->dlr_url;
  m.callback_method = !hm->dlr_url ? MSG_CALLBACK_NONE
                      : hm->dlr_method == HTTP_CODEC_DLR_POST ? MSG_CALLBACK_POST : MSG_CALLBACK_GET;
  if (!m.callback)
    m.dlr_mask = 0;   /* no URL: nowhere to send a receipt */
  /* Kannel's smsc: the message leaves on that SMSC connector, routes aside. */
  struct reply rp = { .completion = done,
                      .route_to = hm->batch && hm->batch->smsc[0] ? hm->batch->smsc : NULL };
  if (atomic_load(&in->phase) != PHASE_RUN) {
    core_refused(in->conn->core, (int)in->conn->index, CORE_REFUSED_QUEUE_FULL);
    connector_reply_to(in, &rp, PROTO_E_TEMPORARY, NULL);
  }
  else
    connector_accept_message(in, &m, m.origin.user, accounts_find(in->conn->core->accounts, m.origin.user), &rp);
}

/* A receipt's callback is done (in the instance's thread). */
static void http_callback_done(void *arg, void *cookie, enum http_callback_outcome outcome)
{
  struct instance *in = arg;
  struct qitem *it = cookie;
  struct core *core = in->conn->core;
  if (outcome == HTTP_CALLBACK_SENT) {
    atomic_fetch_add(&core->stats.receipts_out, 1);
    count_one(&in->live.receipts_out);
    history_add(core->history, it->msg_id, HISTORY_RECEIPT_DELIVERED, (uint16_t)in->conn->index, it->receipt.state,
                0, "callback");
  } else if (outcome == HTTP_CALLBACK_FAILED) {
    connector_instance_error(in, "receipt callback for message %" PRIu64 " failed: refused or out of attempts",
                             it->msg_id);
    LOGW(in->log, "receipt for message %" PRIu64 " could not be called back to %s", it->msg_id, it->callback);
  }
  /* Sent, or given up after its retries: either way it needs nothing more.
   * Dropped at stop: left in the journal, it is sent again after a restart. */
  if (outcome != HTTP_CALLBACK_DROPPED && it->journal_id)
    connector_journal_msg_event(core, in, SPOOL_REC_RECEIPT_DONE, it->journal_id, 0, NULL);
  qitem_free(it);
}

/* Sends one receipt's callback for account slot; false when the sender is
 * full (it is requeued by the caller). */
static bool http_send_receipt(struct instance *in, struct qitem *it, unsigned slot)
{
  struct connector *c = in->conn;
  char url[MSG_CALLBACK_LEN + 2048], body[2048], user[MSG_USER_LEN];
  /* %i: the connector the message went out on; empty when the receipt came
   * back through another node. */
  struct http_codec_dlr d = { .receipt = &it->receipt, .id = it->msg_id, .time = time(NULL),
                              .smsc = it->via ? core_connector(c->core, it->via - 1u)->cfg->name : NULL,
                              .smsc_msgid = it->smsc_msgid,
                              .user = accounts_name(c->core->accounts, slot, user) ? user : NULL };
  int n = it->callback_method == MSG_CALLBACK_POST
            ? (str_copy(url, sizeof url, it->callback), http_codec_dlr_json(body, sizeof body, &d))
            : http_codec_dlr_url(url, sizeof url, it->callback, &d);
  if (n < 0) {
    LOGW(in->log, "receipt for message %" PRIu64 ": callback %s cannot be expanded: dropped", it->msg_id,
         it->callback);
    if (it->journal_id)
      connector_journal_msg_event(c->core, in, SPOOL_REC_RECEIPT_DONE, it->journal_id, 0, NULL);
    qitem_free(it);
    return true;
  }
  int rc = http_callback_send(in->callbacks, url, it->callback_method == MSG_CALLBACK_POST ? HTTP_CALLBACK_POST
                                                                                         : HTTP_CALLBACK_GET,
                              it->callback_method == MSG_CALLBACK_POST ? body : NULL, it);
  if (rc == HTTP_CALLBACK_E_FULL)
    return false;
  if (rc < 0) {
    LOGW(in->log, "receipt for message %" PRIu64 " not called back: no URL or memory", it->msg_id);
    qitem_free(it);
    return true;
  }
  return true;
}

/* The receipts (and anything else) waiting for the connector's accounts,
 * called back. A message routed to an HTTP account has no way
 * to it: it fails. */
static void pump_receipts(struct instance *in)
{
  struct connector *c = in->conn;
  unsigned room;
  for (unsigned u = 0; u < accounts_used(c->core->accounts); u++) {
    struct qlist l = { 0 };
    /* No more than the sender has room for: the rest stays queued (the
     * tick comes back for it) rather than be taken and put back. */
    while ((room = http_callback_room(in->callbacks)) > 0 &&
           queue_take(&c->user_queues[u], room < PUMP_BATCH ? room : PUMP_BATCH, &l)) {
      for (struct qitem *it = l.head, *next; it; it = next) {
        next = it->next;
        if (it->kind == QITEM_MSG) {
          LOGW(in->log, "message %" PRIu64 " from %s routed to an HTTP account: HTTP clients take no messages",
               it->msg->id, it->msg->src.addr);
          connector_give_up_message(in, it, MSG_STATE_UNDELIVERABLE, 0);
        } else if (!it->callback) {
          /* Its origin gave no URL: nobody to tell. */
          if (it->journal_id)
            connector_journal_msg_event(c->core, in, SPOOL_REC_RECEIPT_DONE, it->journal_id, 0, NULL);
          qitem_free(it);
        } else if (!http_send_receipt(in, it, u)) {
          connector_requeue_rest(&c->user_queues[u], it, l.tail);
          return;
        }
      }
      memset(&l, 0, sizeof l);
    }
  }
}

static void http_endpoint_send(struct instance *in)
{
  /* Every instance calls back receipts from its queues (each is woken by
   * their pushes). */
  if (in->callbacks && atomic_load(&in->phase) == PHASE_RUN && !atomic_load(&in->conn->paused))
    pump_receipts(in);
}

static int http_endpoint_start(struct connector *c, char *err, size_t err_len)
{
  struct http_server_config scfg = { .listen = c->cfg->listen,
                                      .connections_per_ip = c->cfg->connections_per_ip,
                                      .connection_limit = fd_budget_http_limit(c->core->cfg, c->index),
                                      .request_timeout_s = c->cfg->request_timeout_s,
                                      .idle_timeout_s = c->cfg->request_timeout_s,
                                      .tls = c->tls };
  struct http_server_handler h = { .check_user = http_check_user, .submit = http_submit };
  if (!(c->http_server = http_server_start(&scfg, &h, err, err_len)))
    return -1;
  atomic_store(&c->accepting, true);
  for (unsigned i = 0; i < c->n_instances; i++)
    atomic_store(&c->instances[i].bound, true);
  return 0;
}

static int http_endpoint_started(struct connector *c, char *err, size_t err_len)
{
  (void)err, (void)err_len;
  LOGI(c->log, "listening on %s (http, %u instances)", c->cfg->listen, c->n_instances);
  return 0;
}

/* Waits (bounded) for the requests in progress: the instances still
 * complete them. Each closes its connections as it ends. */
static void http_endpoint_stop_accepting(struct connector *c)
{
  atomic_store(&c->accepting, false);
  http_server_drain(c->http_server, 5000);
}

static void http_endpoint_run(struct instance *in)
{
  struct connector *c = in->conn;
  char why[TLS_ERR_LEN];
  struct http_callback_limits limits = { .concurrency = c->cfg->callback_connections * c->cfg->callback_pipeline,
                                         .connections = c->cfg->callback_connections,
                                         .pipeline = c->cfg->callback_pipeline,
                                         .tls = { .ca = c->cfg->callback_ca } };
  if (!(in->http_loop = http_server_attach(c->http_server, in->loop, in)))
    LOGE(in->log, "instance %u: cannot serve HTTP (out of memory)", in->index);
  if (!(in->callbacks = http_callback_create(in->loop, &limits, http_callback_done, in, why, sizeof why)))
    LOGE(in->log, "instance %u: cannot send receipt callbacks: %s", in->index, why);
  for (unsigned u = 0; u < c->n_user_queues; u++)
    queue_add_waiter(&c->user_queues[u], in->loop, NULL);
  connector_instance_publish(in, true);
  evloop_run(in->loop);
  for (unsigned u = 0; u < c->n_user_queues; u++)
    queue_remove_waiter(&c->user_queues[u], in->loop);
  uint64_t dropped = http_callback_destroy(in->callbacks);
  in->callbacks = NULL;
  if (dropped)
    LOGW(in->log, "instance %u: %" PRIu64 " receipt callbacks not sent at stop (sent again after a restart with "
         "persist on)", in->index, dropped);
  atomic_store(&in->bound, false);
  connector_instance_end(in);
  http_server_detach(in->http_loop);   /* after the last completions: their answers go out first */
  in->http_loop = NULL;
}

/* Stopping: it stays bound while it still holds callbacks (connector_stop
 * waits, bounded). */
static void http_endpoint_stop(struct instance *in)
{
  atomic_store(&in->bound, in->callbacks && http_callback_held(in->callbacks) > 0);
}

/* Callbacks that failed since the last such line, with the last reason,
 * at most every 10 s. */
static void watch_callbacks(struct instance *in)
{
  uint64_t now = evloop_now_ms(in->loop);
  if (!in->callbacks || now < in->callback_log_next_ms)
    return;
  struct http_callback_stats st;
  http_callback_stats(in->callbacks, &st);
  if (st.tries_failed == in->callback_failures_logged)
    return;
  LOGW(in->log, "receipt callbacks: %" PRIu64 " tries failed since the last such line, the last: %s "
       "(each is tried again after a back-off)", st.tries_failed - in->callback_failures_logged, st.last_error);
  in->callback_failures_logged = st.tries_failed;
  in->callback_log_next_ms = now + 10000;
}

static void http_endpoint_tick(struct instance *in)
{
  watch_callbacks(in);
  if (atomic_load(&in->phase) == PHASE_STOP_SESSION)
    http_endpoint_stop(in);
}

static void http_endpoint_describe(struct instance *in, struct connector_instance_info *i)
{
  i->state = atomic_load(&in->bound) ? "bound" : "down";
  i->peer[0] = i->user[0] = i->bind[0] = '\0';
  i->window_used = 0;
  i->connected_since = 0;
}

static void http_endpoint_destroy(struct connector *c)
{
  http_server_free(c->http_server);   /* every instance has left it */
  c->http_server = NULL;
}

const struct endpoint_ops endpoint_http_server = {
  .kind = "HTTP server",
  .account_queues = true,
  .to_application = true,
  .tls = ENDPOINT_TLS_ACCEPTS,
  .idle_state = "idle",
  .start = http_endpoint_start,
  .started = http_endpoint_started,
  .stop_accepting = http_endpoint_stop_accepting,
  .run = http_endpoint_run,
  .stop = http_endpoint_stop,
  .tick = http_endpoint_tick,
  .send = http_endpoint_send,
  .answer = http_answer,
  .describe = http_endpoint_describe,
  .destroy = http_endpoint_destroy,
};
