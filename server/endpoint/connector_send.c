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
#include "path.h"
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

/* Whether a message taken from a queue may go out now: not when its
 * validity has passed (EXPIRED to its origin) or a before_send hook refuses
 * it (REJECTED); then it has failed and is gone. */
bool connector_may_send(struct instance *in, struct qitem *it)
{
  if (it->msg->validity && it->msg->validity < time(NULL)) {
    LOGI(in->log, "message %" PRIu64 " to %s expired before it could be sent", it->msg->id,
         it->msg->dst.addr);
    path_plugins_sent(in->conn->core, it->msg, in->conn->cfg->name, EMG_PLUGIN_SEND_FAILED);
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

/* Sends from the queue source names, twice at most, and then says whether
 * a push should wake it. The flag is set before the queue is looked at
 * again, so that what a push left while it still said no is not left
 * waiting: either the push sees the flag or this sees the items. */
void connector_send_from(struct instance *in, struct queue *(*source)(struct instance *),
                         void (*send_from)(struct instance *, struct queue *),
                         unsigned (*room)(struct instance *))
{
  for (int pass = 0; pass < 2; pass++) {
    struct queue *q = source(in);
    if (q)
      send_from(in, q);
    bool ready = q && room(in) > 0;
    atomic_store(&in->ready, ready);
    if (!ready || queue_count(q) == 0)
      return;
  }
}

/* ---- answers to what was sent: the response path's edge ---- */

static void sent_journal_event(void *ctx, enum spool_record_type type, uint64_t id, uint16_t target, const char *key)
{
  struct instance *in = ctx;
  connector_journal_msg_event(in->conn->core, in, type, id, target, key);
}

/* Back first in the queue it was taken from. A submit waits out the
 * back-off in this instance (the requeue wakes another); a delivery or a
 * receipt goes when the client can take it. */
static void sent_again(void *ctx, struct qitem *it, uint64_t backoff_ms)
{
  struct instance *in = ctx;
  struct connector *c = in->conn;
  if (c->ops->account_queues) {
    connector_requeue_front(&c->user_queues[in->user], it);
    return;
  }
  in->paused_until_ms = evloop_now_ms(in->loop) + backoff_ms;
  atomic_store(&in->ready, false);
  connector_requeue_front(&c->out, it);
}

static bool sent_reroute(void *ctx, struct qitem *it, const char *why)
{
  struct instance *in = ctx;
  return connector_reroute(in->conn, in, it, why);
}

static void sent_give_up(void *ctx, struct qitem *it, uint8_t state, uint32_t code)
{
  connector_give_up_message(ctx, it, state, code);
}

static void sent_tell_origin(void *ctx, const struct dlr_info *info, const struct msg_receipt *r)
{
  connector_receipt_to_origin(ctx, info, r);
}

static const struct path_sent_edge persist_sent_edge = {
  .journal_event = sent_journal_event, .again = sent_again, .reroute = sent_reroute, .give_up = sent_give_up,
  .tell_origin = sent_tell_origin,
};
/* Persist off: no journal. */
static const struct path_sent_edge memory_sent_edge = {
  .again = sent_again, .reroute = sent_reroute, .give_up = sent_give_up, .tell_origin = sent_tell_origin,
};

/* A response to a request of ours (a session's, or an HTTP provider's
 * answer): counted in the instance's view, then the response path. */
void connector_response_in(struct instance *in, struct qitem *it, const struct proto_pdu *resp)
{
  struct connector *c = in->conn;
  if (it->kind == QITEM_ABOUT) {
    connector_about_sent_back(in, it, resp);
    return;
  }
  if (it->sent_ns)
    connector_latency_record(&in->counted.response, (clock_now_ns() - it->sent_ns) / 1000);
  char why[PROTO_DESCRIBE_LEN] = "";
  if (resp->status == PROTO_OK) {
    if (it->kind == QITEM_MSG)
      count_one(&in->live.submits_out);
    else
      count_one(&in->live.receipts_out);
    if (it->kind == QITEM_MSG && !c->ops->account_queues) {
      int64_t waited_ms = clock_wall_ms() - it->msg->received_ms;
      connector_latency_record(&in->counted.delivery, waited_ms > 0 ? (uint64_t)waited_ms * 1000 : 0);
    }
  } else {
    proto_describe(c->cfg->proto, c->ops->account_queues ? PROTO_OP_DELIVER_RESP : PROTO_OP_SUBMIT_RESP,
                   resp->status, resp->raw_status, why, sizeof why);
    connector_instance_error(in, "%s %" PRIu64 " refused: %s", it->kind == QITEM_MSG ? "message" : "receipt",
                             it->kind == QITEM_MSG ? it->msg->id : it->journal_id, why);
    it->last_status = (uint8_t)resp->status;
  }
  struct path_sent_request rq = {
    .core = c->core, .edge = c->core->spool ? &persist_sent_edge : &memory_sent_edge, .edge_ctx = in,
    .log = in->log, .connector = c->index, .cfg = c->cfg, .delivery = c->ops->account_queues,
    .peer_receipts = c->ops->smsc_session, .peer = in->session ? session_user(in->session) : "",
    .backoff_ms = in->backoff_ms, .it = it, .status = resp->status, .raw_status = resp->raw_status,
    .msgid = resp->msgid, .why = why,
  };
  struct path_sent_verdict v;
  path_sent(&rq, &v);
  in->backoff_ms = v.backoff_ms;
}
