/* connector_http.c - HTTP connectors: the glue between the connector and
 * connectors/http (requests read on the instances' loops, receipt
 * callbacks, the client that sends to a provider).
 *
 * An HTTP server connector has no sessions: every instance accepts
 * connections on the connector's socket and serves those it accepted; its
 * thread takes each message of a request through the same accept path as a
 * submit, and completes the request's message where a session would answer. Receipts for its
 * accounts go back by callback (the URL the message came with), sent by
 * one callback sender per connector; instance 0 feeds it and, when a
 * callback is done, marks the receipt delivered.
 *
 * An HTTP client connector's instances each own a client on their loop and
 * send what the out queue holds, as many at once as its window allows; the
 * provider's answer is handled as an SMSC's submit response.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "clock.h"
#include "account.h"
#include "connector_internal.h"
#include "fd_budget.h"
#include "http_callback.h"
#include "http_client.h"
#include "charset.h"
#include "sms_text.h"
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
  struct reply rp = { .http = true, .completion = done,
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

/* Instance 0 of an HTTP server connector: the receipts (and anything else)
 * waiting for its accounts. A message routed to an HTTP account has no way
 * to it: it fails. */
void connector_http_pump_receipts(struct instance *in)
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

/* An application's answer to an MO pushed to it, as Kannel's get-url
 * services have it: the body's text goes back to the handset, from the
 * number the MO was sent to, on the SMSC connector it came in on. An empty
 * body sends nothing. */
static void reply_to_mo(struct instance *in, const struct msg *mo, const char *smsc, const char *text, size_t len)
{
  static const char blank[] = " \t\r\n";
  uint8_t data[SMS_TEXT_SEGMENTS_MAX * 160];
  while (len && strchr(blank, text[0]))
    text++, len--;
  while (len && strchr(blank, text[len - 1]))
    len--;
  if (!len)
    return;
  int coding = sms_text_choose_coding(text, len);
  int n = coding == SMS_TEXT_GSM7   ? charset_utf8_to_gsm(data, sizeof data, text, len, 1)
          : coding == SMS_TEXT_UCS2 ? charset_utf8_to_ucs2(data, sizeof data, text, len)
                                    : -1;
  if (n < 0) {
    LOGW(in->log, "reply to the MO from %s not sent: %s", mo->src.addr,
         coding < 0 ? "the answer is not UTF-8 text" : "the answer is too long for an SMS");
    return;
  }
  struct msg m;
  memset(&m, 0, sizeof m);
  m.src = mo->dst;
  m.dst = mo->src;
  m.coding = (uint8_t)coding;
  m.dcs = (uint8_t)coding;
  m.data = data;
  m.data_len = (uint32_t)n;
  struct reply rp = { .none = true, .route_to = smsc };
  connector_accept_message(in, &m, "", -1, &rp);
}

/* The SMSC connector an MO came in on (its handset is its sender, Kannel's
 * %p), or NULL for a message that came from a client. */
static struct connector *mo_smsc(struct core *core, const struct msg *m)
{
  unsigned from = m->origin.connector;
  struct connector *origin = from < core->n_connectors ? core_connector(core, from) : NULL;
  return origin && !is_server(origin) ? origin : NULL;
}

/* In the instance's thread: the provider answered (or not). */
static void http_client_answered(void *arg, void *cookie, const struct http_client_result *r)
{
  struct instance *in = arg;
  struct qitem *it = cookie;
  struct connector *c = in->conn;
  struct connector *smsc = mo_smsc(c->core, it->msg);
  if (c->cfg->reply_sms && r->status == PROTO_OK && smsc)
    reply_to_mo(in, it->msg, smsc->cfg->name, r->answer, r->answer_len);
  struct proto_pdu resp;
  memset(&resp, 0, sizeof resp);
  resp.op = PROTO_OP_SUBMIT_RESP;
  resp.status = r->status;
  resp.raw_status = (uint32_t)r->http_status;
  str_copy(resp.msgid, sizeof resp.msgid, r->msgid);
  uint64_t skipped;
  if (r->status != PROTO_OK && r->http_status) {
    LOGD(in->log, "message %" PRIu64 ": provider answered %ld: %s", it->msg->id, r->http_status, r->detail);
  } else if (r->status != PROTO_OK) {
    /* No answer at all (refused, timed out, a certificate that does not
     * verify): an operator's matter, said at most every 10 s. */
    connector_instance_error(in, "provider did not answer: %s", r->detail);
    if (log_every_due(&in->provider_log, evloop_now_ms(in->loop), 10000, &skipped))
      LOGW(in->log, "instance %u: the provider did not answer: %s (%" PRIu64 " more such since the last "
           "such line)", in->index, r->detail, skipped);
  }
  connector_response_in(in, it, &resp);
}

/* An HTTP client instance: what the out queue holds, as far as its window goes. */
void connector_http_pump_out(struct instance *in)
{
  struct connector *c = in->conn;
  unsigned room;
  while (in->http_client && (room = http_client_room(in->http_client)) > 0) {
    struct qlist l = { 0 };
    if (!queue_take(&c->out, room < PUMP_BATCH ? room : PUMP_BATCH, &l))
      return;
    for (struct qitem *it = l.head, *next; it; it = next) {
      next = it->next;
      if (!connector_may_send(in, it))
        continue;
      it->sent_ns = clock_now_ns();
      struct connector *smsc = mo_smsc(c->core, it->msg);
      int rc = http_client_submit(in->http_client, it->msg, smsc ? smsc->cfg->name : NULL, it);
      if (rc == HTTP_CLIENT_E_TEMPLATE) {
        LOGW(in->log, "message %" PRIu64 " does not fit the URL template: failed", it->msg->id);
        connector_give_up_message(in, it, MSG_STATE_REJECTED, 0);
      } else if (rc < 0) {
        connector_requeue_rest(&c->out, it, l.tail);
        return;
      }
    }
  }
}

int connector_http_start(struct connector *c, char *err, size_t err_len)
{
  if (!is_server(c))
    return 0;
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

/* An HTTP instance's thread: its client (client connectors) or the
 * receipt queues it feeds to callbacks (instance 0 of a server connector). */
void connector_http_run(struct instance *in)
{
  struct connector *c = in->conn;
  if (!is_server(c)) {
    struct http_client_config hc = {
      .url = c->cfg->url, .method = (enum http_client_method)c->cfg->http_method,
      .body = c->cfg->body[0] ? c->cfg->body : NULL, .id_field = c->cfg->id_field[0] ? c->cfg->id_field : NULL,
      .smsc = c->cfg->name, .user = c->cfg->system_id[0] ? c->cfg->system_id : NULL,
      .password = c->cfg->password, .connections = c->cfg->connections, .window = c->cfg->window,
      .timeout_ms = c->cfg->response_timeout_ms,
      .tls = { .ca = c->cfg->tls.ca, .cert = c->cfg->tls.cert, .key = c->cfg->tls.key,
               .insecure = c->cfg->tls.enabled && !c->cfg->tls.verify_peer },
    };
    char why[TLS_ERR_LEN];
    in->http_client = http_client_create(in->loop, &hc, http_client_answered, in, why, sizeof why);
    if (!in->http_client)
      LOGE(in->log, "instance %u: cannot create its HTTP client: %s", in->index, why);
    atomic_store(&in->bound, in->http_client != NULL);
    queue_add_waiter(&c->out, in->loop, &in->ready);
  } else {
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
  }
  connector_instance_publish(in, true);
  evloop_run(in->loop);
  if (!is_server(c)) {
    queue_remove_waiter(&c->out, in->loop);
    http_client_destroy(in->http_client);   /* what is outstanding comes back as temporary: requeued */
    in->http_client = NULL;
  } else {
    for (unsigned u = 0; u < c->n_user_queues; u++)
      queue_remove_waiter(&c->user_queues[u], in->loop);
    uint64_t dropped = http_callback_destroy(in->callbacks);
    in->callbacks = NULL;
    if (dropped)
      LOGW(in->log, "instance %u: %" PRIu64 " receipt callbacks not sent at stop (sent again after a restart with "
           "persist on)", in->index, dropped);
  }
  atomic_store(&in->bound, false);
  connector_flush_stages(in->loop, in);
  connector_release_held_acks(in, true);
  http_server_detach(in->http_loop);   /* after the last completions: their answers go out first */
  in->http_loop = NULL;
}

void connector_http_watch_callbacks(struct instance *in)
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

bool connector_http_busy(const struct instance *in)
{
  return in->callbacks && http_callback_held(in->callbacks) > 0;
}
