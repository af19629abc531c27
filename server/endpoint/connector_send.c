/* connector_send.c - messages and receipts out of the queues: whether a
 * message may still go, sending as far as the window goes, what the peer's
 * answer does to each, and a message that fails for good.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "clock.h"
#include "account.h"
#include "connector_internal.h"
#include "http_client.h"
#include "strutil.h"

void connector_credit_give_back(struct core *core, const struct msg *m)
{
  if (m->credit_epoch)
    accounts_credit_give_back(core->accounts, m->origin.user, 1);
}

/* A message that will not be delivered: refused for good by the SMSC
 * (REJECTED, code = its error) or past its validity (EXPIRED). Its origin
 * hears of it as a receipt in that state. */
void connector_give_up_message(struct instance *in, struct qitem *it, uint8_t state, uint32_t code)
{
  struct core *core = in->conn->core;
  atomic_fetch_add(state == MSG_STATE_EXPIRED ? &core->stats.expired : &core->stats.failed, 1);
  atomic_fetch_sub(&core->in_flight, 1);
  /* Failed by the gateway itself (expired, refused by a plugin, not
   * expressible), not refused by the peer (code): its credit goes back. */
  if (!code)
    connector_credit_give_back(core, it->msg);
  history_add(core->history, it->msg->id, HISTORY_FAILED, (uint16_t)in->conn->index, state, code,
              state == MSG_STATE_EXPIRED ? "validity passed" : NULL);
  core_log_event(core, DB_LOG_FAILED, it->msg, (int)in->conn->index, NULL, state,
                 (uint16_t)(code > 65535 ? 65535 : code));
  connector_journal_msg_event(core, in, SPOOL_REC_FINISHED, it->msg->id, 0, NULL);
  struct dlr_info info;
  dlr_info_from_msg(&info, it->msg);
  struct msg_receipt r = { 0 };
  /* Refused by the peer: one event, reported as Kannel's "SMSC rejected"
   * to an origin that asked for that, else as the failure it is. */
  r.state = code && (it->msg->dlr_mask & MSG_DLR_SMSC_REJECTED) ? MSG_STATE_SMSC_REJECTED : state;
  r.err = (uint16_t)(code > 999 ? 999 : code);
  r.done_time = time(NULL);
  connector_receipt_to_origin(in, &info, &r);
  qitem_free(it);
}

/* ---- sending from the queues ---- */

/* The after_send hooks. */
static void plugins_sent(struct instance *in, const struct msg *m, enum emg_plugin_send_status status)
{
  core_enter(in->conn->core);
  plugin_host_after_send(atomic_load_explicit(&in->conn->core->plugins, memory_order_acquire), m,
                         in->conn->cfg->name, status);
  core_leave(in->conn->core);
}

/* Whether a message taken from a queue may go out now: not when its
 * validity has passed (EXPIRED to its origin) or a before_send hook refuses
 * it (REJECTED); then it has failed and is gone. */
bool connector_may_send(struct instance *in, struct qitem *it)
{
  if (it->msg->validity && it->msg->validity < time(NULL)) {
    LOGI(in->log, "message %" PRIu64 " to %s expired before it could be sent", it->msg->id,
         it->msg->dst.addr);
    plugins_sent(in, it->msg, EMG_PLUGIN_SEND_FAILED);
    connector_give_up_message(in, it, MSG_STATE_EXPIRED, 0);
    return false;
  }
  struct core *core = in->conn->core;
  char reason[PLUGIN_HOST_REASON_LEN];
  core_enter(core);
  enum plugin_host_verdict verdict = plugin_host_before_send(
    atomic_load_explicit(&core->plugins, memory_order_acquire), it->msg, in->conn->cfg->name, reason, sizeof reason);
  core_leave(core);
  if (verdict == PLUGIN_HOST_ACCEPT)
    return true;
  core_refused(core, -1, CORE_REFUSED_PLUGIN);
  LOGI(in->log, "message %" PRIu64 " to %s not sent: %s", it->msg->id, it->msg->dst.addr, reason);
  connector_give_up_message(in, it, MSG_STATE_REJECTED, 0);
  return false;
}

/* The queue a client instance, or a session server instance, sends from
 * now, or NULL when it sends nothing (unbound, stopping, paused, backing
 * off). */
static struct queue *pump_source(struct instance *in)
{
  struct connector *c = in->conn;
  struct session *s = in->session;
  if (atomic_load(&in->phase) != PHASE_RUN || atomic_load(&c->paused))
    return NULL;
  if (c->cfg->http)
    return &c->out;
  if (!s || !atomic_load(&in->bound))
    return NULL;
  if (!is_server(c))
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
        pdu.op = is_server(c) ? PROTO_OP_DELIVER : PROTO_OP_SUBMIT;
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

/* Requests the instance could send now: its session's window, or its HTTP
 * client's room. */
static unsigned send_room(struct instance *in)
{
  if (!in->conn->cfg->http)
    return session_can_send(in->session);
  return in->http_client ? http_client_room(in->http_client) : 0;
}

/* Sends what the instance's queue holds, as far as it can, and then says
 * whether a push should wake it. The flag is set before the queue is looked
 * at again, so that what a push left while it still said no is not left
 * waiting: either the push sees the flag or this sees the items. */
void connector_pump(struct instance *in)
{
  struct connector *c = in->conn;
  if (c->cfg->http && is_server(c)) {
    /* Every instance calls back receipts from its queues (each is woken
     * by their pushes). */
    if (in->callbacks && atomic_load(&in->phase) == PHASE_RUN && !atomic_load(&c->paused))
      connector_http_pump_receipts(in);
    return;
  }
  /* Queries and cancels go first, paused or not: they are not messages. */
  if (!is_server(c) && !c->cfg->http && in->session && atomic_load(&in->bound))
    connector_about_pump(in);
  for (int pass = 0; pass < 2; pass++) {
    struct queue *q = pump_source(in);
    if (q && c->cfg->http)
      connector_http_pump_out(in);
    else if (q)
      pump_session(in, q);
    bool ready = q && send_room(in) > 0;
    atomic_store(&in->ready, ready);
    if (!ready || queue_count(q) == 0)
      return;
  }
}

/* ---- answers to what was sent ---- */

/* What the connector's retry policy says for a refusal: by its code first,
 * then by its class. */
static enum config_retry_action retry_action(const struct config_retry *rp, const struct proto_pdu *resp)
{
  for (unsigned i = 0; i < rp->n_errors; i++)
    if (rp->errors[i].code == resp->raw_status)
      return rp->errors[i].action;
  return proto_status_temporary(resp->status) ? rp->temporary : rp->permanent;
}

/* A submit the peer refused: sent again here after the back-off (the
 * queue's order kept, this instance waiting), moved to another member of
 * its route's group, or failed with a receipt to its origin, as the
 * connector's retry policy says. A message that used up its attempts fails;
 * one that cannot be rerouted does what its error's class does without a
 * policy (temporary: retry, else fail). */
static void submit_refused(struct instance *in, struct qitem *it, const struct proto_pdu *resp)
{
  struct connector *c = in->conn;
  struct core *core = c->core;
  const struct config_retry *rp = &c->cfg->retry;
  enum config_retry_action action = retry_action(rp, resp);
  char why[PROTO_DESCRIBE_LEN];
  proto_describe(c->cfg->proto, PROTO_OP_SUBMIT_RESP, resp->status, resp->raw_status, why, sizeof why);
  it->attempts++;
  if (action != CONFIG_RETRY_FAIL && rp->attempts && it->attempts >= rp->attempts) {
    LOGI(in->log, "message %" PRIu64 " to %s failed: refused %u times, the last %s", it->msg->id,
         it->msg->dst.addr, (unsigned)it->attempts, why);
    connector_give_up_message(in, it, MSG_STATE_REJECTED, resp->raw_status);
    return;
  }
  if (action == CONFIG_RETRY_REROUTE) {
    if (connector_reroute(c, in, it, why))
      return;
    action = proto_status_temporary(resp->status) ? CONFIG_RETRY_RETRY : CONFIG_RETRY_FAIL;
  }
  if (action == CONFIG_RETRY_FAIL) {
    LOGI(in->log, "message %" PRIu64 " to %s refused by the SMSC: %s", it->msg->id, it->msg->dst.addr, why);
    connector_give_up_message(in, it, MSG_STATE_REJECTED, resp->raw_status);
    return;
  }
  atomic_fetch_add(&core->stats.retried, 1);
  history_add(core->history, it->msg->id, HISTORY_RETRY, (uint16_t)c->index, 0, resp->raw_status, why);
  double next = in->backoff_ms ? (double)in->backoff_ms * rp->backoff_factor : (double)rp->backoff_first_ms;
  in->backoff_ms = next < (double)rp->backoff_max_ms ? (uint64_t)next : rp->backoff_max_ms;
  in->paused_until_ms = evloop_now_ms(in->loop) + in->backoff_ms;
  atomic_store(&in->ready, false);   /* the requeue below wakes another instance */
  it->next_attempt_ms = (int64_t)time(NULL) * 1000 + (int64_t)in->backoff_ms;
  LOGD(in->log, "message %" PRIu64 ": %s, retrying in %" PRIu64 " ms", it->msg->id, why, in->backoff_ms);
  connector_requeue_front(&c->out, it);
}

static void submit_answered(struct instance *in, struct qitem *it, const struct proto_pdu *resp)
{
  struct connector *c = in->conn;
  struct core *core = c->core;
  plugins_sent(in, it->msg, resp->status == PROTO_OK ? EMG_PLUGIN_SENT
                           : proto_status_temporary(resp->status) ? EMG_PLUGIN_SEND_TEMPORARY
                                                                   : EMG_PLUGIN_SEND_FAILED);
  if (resp->status == PROTO_OK) {
    atomic_fetch_add(&core->stats.sent, 1);
    atomic_fetch_sub(&core->in_flight, 1);
    history_add(core->history, it->msg->id, HISTORY_SENT, (uint16_t)c->index, 0, 0, resp->msgid);
    int64_t waited_ms = clock_wall_ms() - it->msg->received_ms;
    connector_latency_record(&in->counted.delivery, waited_ms > 0 ? (uint64_t)waited_ms * 1000 : 0);
    char key[DLR_ID_LEN];
    bool awaits_receipt = false;
    if (it->msg->dlr_mask & MSG_DLR_SMSC_ACCEPTED) {
      struct dlr_info info;
      dlr_info_from_msg(&info, it->msg);
      struct msg_receipt r = { .state = MSG_STATE_SMSC_ACCEPTED, .done_time = time(NULL) };
      str_copy(r.id, sizeof r.id, resp->msgid);
      connector_receipt_to_origin(in, &info, &r);
    }
    /* An HTTP provider sends no receipts this gateway could match. */
    if ((it->msg->dlr_mask & MSG_DLR_FROM_SMSC) && !c->cfg->http) {
      struct dlr_info info;
      dlr_info_from_msg(&info, it->msg);
      if (dlr_id_normalize(key, sizeof key, resp->msgid, (enum dlr_id_type)c->cfg->msgid_submit) < 0 ||
          dlrtab_insert(core->dlr, (uint16_t)c->index, key, &info, time(NULL)) == -1)
        LOGW(in->log, "message %" PRIu64 ": SMSC id '%s' unusable, its receipt cannot be matched",
             it->msg->id, resp->msgid);
      else
        awaits_receipt = true;
    }
    /* The journal keeps a message that awaits its receipt (its DLR entry),
     * and lets go of one that needs nothing more. */
    if (awaits_receipt)
      connector_journal_msg_event(core, in, SPOOL_REC_SENT, it->msg->id, (uint16_t)c->index, key);
    else
      connector_journal_msg_event(core, in, SPOOL_REC_FINISHED, it->msg->id, 0, NULL);
    core_log_event(core, DB_LOG_SENT, it->msg, (int)c->index, awaits_receipt ? key : NULL, 0, 0);
    LOGD2(in->log, "message %" PRIu64 " accepted by the SMSC as %s", it->msg->id, resp->msgid);
    qitem_free(it);
  } else {
    submit_refused(in, it, resp);
  }
}

/* A message delivered to a client of ours (an MO, or from another client)
 * was answered. Taken: it is done, and an origin that asked for a receipt
 * hears it was delivered, as an SMSC would tell it. */
static void delivery_answered(struct instance *in, struct qitem *it, const struct proto_pdu *resp)
{
  struct core *core = in->conn->core;
  if (proto_status_temporary(resp->status)) {
    it->attempts++;
    connector_requeue_front(&in->conn->user_queues[in->user], it);
    return;
  }
  if (resp->status != PROTO_OK) {
    char why[PROTO_DESCRIBE_LEN];
    LOGI(in->log, "message %" PRIu64 " refused by %s: %s", it->msg->id, session_user(in->session),
         proto_describe(in->conn->cfg->proto, PROTO_OP_DELIVER_RESP, resp->status, resp->raw_status, why,
                        sizeof why));
    connector_give_up_message(in, it, MSG_STATE_REJECTED, resp->raw_status);
    return;
  }
  atomic_fetch_add(&core->stats.sent, 1);
  atomic_fetch_sub(&core->in_flight, 1);
  history_add(core->history, it->msg->id, HISTORY_SENT, (uint16_t)in->conn->index, 0, 0,
              session_user(in->session));
  core_log_event(core, DB_LOG_SENT, it->msg, (int)in->conn->index, NULL, 0, 0);
  connector_journal_msg_event(core, in, SPOOL_REC_FINISHED, it->msg->id, 0, NULL);
  if (it->msg->dlr_mask) {
    struct dlr_info info;
    dlr_info_from_msg(&info, it->msg);
    struct msg_receipt r = { 0 };
    r.state = MSG_STATE_DELIVERED;
    r.done_time = time(NULL);
    connector_receipt_to_origin(in, &info, &r);
  }
  qitem_free(it);
}

/* A response to a request of ours (a session's, or an HTTP provider's answer). */
void connector_response_in(struct instance *in, struct qitem *it, const struct proto_pdu *resp)
{
  if (it->kind == QITEM_ABOUT) {
    connector_about_sent_back(in, it, resp);
    return;
  }
  if (it->sent_ns)
    connector_latency_record(&in->counted.response, (clock_now_ns() - it->sent_ns) / 1000);
  if (resp->status == PROTO_OK) {
    if (it->kind == QITEM_MSG)
      count_one(&in->live.submits_out);
    else
      count_one(&in->live.receipts_out);
  } else {
    char why[PROTO_DESCRIBE_LEN];
    proto_describe(in->conn->cfg->proto, is_server(in->conn) ? PROTO_OP_DELIVER_RESP : PROTO_OP_SUBMIT_RESP,
                   resp->status, resp->raw_status, why, sizeof why);
    connector_instance_error(in, "%s %" PRIu64 " refused: %s", it->kind == QITEM_MSG ? "message" : "receipt",
                             it->kind == QITEM_MSG ? it->msg->id : it->journal_id, why);
    it->last_status = (uint8_t)resp->status;
  }
  if (it->kind == QITEM_MSG && is_server(in->conn)) {
    delivery_answered(in, it, resp);
    return;
  }
  if (it->kind == QITEM_MSG) {
    submit_answered(in, it, resp);
    if (resp->status == PROTO_OK)
      in->backoff_ms = 0;
    return;
  }
  if (resp->status == PROTO_OK) {
    atomic_fetch_add(&in->conn->core->stats.receipts_out, 1);
    history_add(in->conn->core->history, it->msg_id, HISTORY_RECEIPT_DELIVERED, (uint16_t)in->conn->index,
                it->receipt.state, 0, session_user(in->session));
    if (it->journal_id)
      connector_journal_msg_event(in->conn->core, in, SPOOL_REC_RECEIPT_DONE, it->journal_id, 0, NULL);
    qitem_free(it);
    return;
  }
  /* The client could not take it now: it stays first for this account. */
  it->attempts++;
  connector_requeue_front(&in->conn->user_queues[in->user], it);
}
