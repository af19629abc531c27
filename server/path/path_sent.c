/* path_sent.c - the response path (path.h): what the peer's answer to
 * something the gateway sent does to it. A stage per step, as the accept
 * path has; each function below is one.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "account.h"
#include "clock.h"
#include "log.h"
#include "path.h"
#include "routing.h"
#include "strutil.h"

static const char *const outcome_names[] = {
  [PATH_SENT_FINISHED] = "finished", [PATH_SENT_AWAITS_RECEIPT] = "awaits receipt", [PATH_SENT_RETRY] = "retry",
  [PATH_SENT_REROUTED] = "rerouted",  [PATH_SENT_FAILED] = "failed",
};

const char *path_sent_outcome_name(enum path_sent_outcome outcome)
{
  return (unsigned)outcome < sizeof outcome_names / sizeof outcome_names[0] ? outcome_names[outcome] : "?";
}

static void journal_event(const struct path_sent_request *rq, enum spool_record_type type, uint64_t id,
                          uint16_t target, const char *key)
{
  if (rq->edge->journal_event)
    rq->edge->journal_event(rq->edge_ctx, type, id, target, key);
}

void path_plugins_sent(struct core *core, const struct msg *m, const char *connector,
                       enum emg_plugin_send_status status)
{
  core_enter(core);
  plugin_host_after_send(atomic_load_explicit(&core->plugins, memory_order_acquire), m, connector, status);
  core_leave(core);
}

/* The plugins hear how the peer answered. */
static void after_send(const struct path_sent_request *rq)
{
  path_plugins_sent(rq->core, rq->it->msg, rq->cfg->name,
                    rq->status == PROTO_OK ? EMG_PLUGIN_SENT
                    : proto_status_temporary(rq->status) ? EMG_PLUGIN_SEND_TEMPORARY
                                                         : EMG_PLUGIN_SEND_FAILED);
}

static void tell(const struct path_sent_request *rq, uint8_t state, const char *smsc_id)
{
  struct dlr_info info;
  dlr_info_from_msg(&info, rq->it->msg);
  struct msg_receipt r = { .state = state, .done_time = time(NULL) };
  if (smsc_id)
    str_copy(r.id, sizeof r.id, smsc_id);
  rq->edge->tell_origin(rq->edge_ctx, &info, &r);
}

/* ---- a submit to an SMSC ---- */

/* record: a submit whose peer sends receipts gets a DLR entry under the id
 * the peer gave it, in key; false when there is none to wait for. */
static bool record_receipt_entry(const struct path_sent_request *rq, char key[DLR_ID_LEN])
{
  const struct msg *m = rq->it->msg;
  if (!(m->dlr_mask & MSG_DLR_FROM_SMSC) || !rq->peer_receipts)
    return false;
  struct dlr_info info;
  dlr_info_from_msg(&info, m);
  if (dlr_id_normalize(key, DLR_ID_LEN, rq->msgid, (enum dlr_id_type)rq->cfg->msgid_submit) < 0 ||
      dlrtab_insert(rq->core->dlr, (uint16_t)rq->connector, key, &info, time(NULL)) == -1) {
    LOGW(rq->log, "message %" PRIu64 ": SMSC id '%s' unusable, its receipt cannot be matched", m->id, rq->msgid);
    return false;
  }
  return true;
}

static enum path_sent_outcome submit_accepted(const struct path_sent_request *rq)
{
  struct core *core = rq->core;
  struct qitem *it = rq->it;
  char key[DLR_ID_LEN];
  atomic_fetch_add(&core->stats.sent, 1);
  atomic_fetch_sub(&core->in_flight, 1);
  history_add(core->history, it->msg->id, HISTORY_SENT, (uint16_t)rq->connector, 0, 0, rq->msgid);
  if (it->msg->dlr_mask & MSG_DLR_SMSC_ACCEPTED)
    tell(rq, MSG_STATE_SMSC_ACCEPTED, rq->msgid);
  bool awaits_receipt = record_receipt_entry(rq, key);
  /* The journal keeps a message that awaits its receipt (its DLR entry),
   * and lets go of one that needs nothing more. */
  if (awaits_receipt)
    journal_event(rq, SPOOL_REC_SENT, it->msg->id, (uint16_t)rq->connector, key);
  else
    journal_event(rq, SPOOL_REC_FINISHED, it->msg->id, 0, NULL);
  core_log_event(core, DB_LOG_SENT, it->msg, (int)rq->connector, awaits_receipt ? key : NULL, 0, 0);
  LOGD2(rq->log, "message %" PRIu64 " accepted by the SMSC as %s", it->msg->id, rq->msgid);
  qitem_free(it);
  return awaits_receipt ? PATH_SENT_AWAITS_RECEIPT : PATH_SENT_FINISHED;
}

/* settle: what the connector's retry policy says of a refusal, by its code
 * first, then by its class. */
static enum config_retry_action settle(const struct path_sent_request *rq)
{
  const struct config_retry *rp = &rq->cfg->retry;
  for (unsigned i = 0; i < rp->n_errors; i++)
    if (rp->errors[i].code == rq->raw_status)
      return rp->errors[i].action;
  return proto_status_temporary(rq->status) ? rp->temporary : rp->permanent;
}

/* A submit the peer refused: sent again after the back-off, moved to
 * another member of its route's group, or failed with a receipt to its
 * origin, as the retry policy says. A message that used up its attempts
 * fails; one that cannot be rerouted does what its class does without a
 * policy (temporary: retry, else fail). */
static enum path_sent_outcome submit_refused(const struct path_sent_request *rq, struct path_sent_verdict *v)
{
  const struct config_retry *rp = &rq->cfg->retry;
  struct qitem *it = rq->it;
  enum config_retry_action action = settle(rq);
  it->attempts++;
  if (action != CONFIG_RETRY_FAIL && rp->attempts && it->attempts >= rp->attempts) {
    LOGI(rq->log, "message %" PRIu64 " to %s failed: refused %u times, the last %s", it->msg->id,
         it->msg->dst.addr, (unsigned)it->attempts, rq->why);
    rq->edge->give_up(rq->edge_ctx, it, MSG_STATE_REJECTED, rq->raw_status);
    return PATH_SENT_FAILED;
  }
  if (action == CONFIG_RETRY_REROUTE) {
    if (rq->edge->reroute(rq->edge_ctx, it, rq->why))
      return PATH_SENT_REROUTED;
    action = proto_status_temporary(rq->status) ? CONFIG_RETRY_RETRY : CONFIG_RETRY_FAIL;
  }
  if (action == CONFIG_RETRY_FAIL) {
    LOGI(rq->log, "message %" PRIu64 " to %s refused by the SMSC: %s", it->msg->id, it->msg->dst.addr, rq->why);
    rq->edge->give_up(rq->edge_ctx, it, MSG_STATE_REJECTED, rq->raw_status);
    return PATH_SENT_FAILED;
  }
  atomic_fetch_add(&rq->core->stats.retried, 1);
  history_add(rq->core->history, it->msg->id, HISTORY_RETRY, (uint16_t)rq->connector, 0, rq->raw_status, rq->why);
  double next = rq->backoff_ms ? (double)rq->backoff_ms * rp->backoff_factor : (double)rp->backoff_first_ms;
  v->backoff_ms = next < (double)rp->backoff_max_ms ? (uint64_t)next : rp->backoff_max_ms;
  it->next_attempt_ms = (int64_t)time(NULL) * 1000 + (int64_t)v->backoff_ms;
  LOGD(rq->log, "message %" PRIu64 ": %s, retrying in %" PRIu64 " ms", it->msg->id, rq->why, v->backoff_ms);
  rq->edge->again(rq->edge_ctx, it, v->backoff_ms);
  return PATH_SENT_RETRY;
}

/* ---- a delivery to a client of ours ---- */

/* Taken: it is done, and an origin that asked for a receipt hears it was
 * delivered, as an SMSC would tell it. A temporary refusal sends it again
 * at once (the client's window says when); any other fails it. */
static enum path_sent_outcome delivery_answered(const struct path_sent_request *rq)
{
  struct core *core = rq->core;
  struct qitem *it = rq->it;
  if (proto_status_temporary(rq->status)) {
    it->attempts++;
    rq->edge->again(rq->edge_ctx, it, 0);
    return PATH_SENT_RETRY;
  }
  if (rq->status != PROTO_OK) {
    LOGI(rq->log, "message %" PRIu64 " refused by %s: %s", it->msg->id, rq->peer, rq->why);
    rq->edge->give_up(rq->edge_ctx, it, MSG_STATE_REJECTED, rq->raw_status);
    return PATH_SENT_FAILED;
  }
  atomic_fetch_add(&core->stats.sent, 1);
  atomic_fetch_sub(&core->in_flight, 1);
  history_add(core->history, it->msg->id, HISTORY_SENT, (uint16_t)rq->connector, 0, 0, rq->peer);
  core_log_event(core, DB_LOG_SENT, it->msg, (int)rq->connector, NULL, 0, 0);
  journal_event(rq, SPOOL_REC_FINISHED, it->msg->id, 0, NULL);
  if (it->msg->dlr_mask)
    tell(rq, MSG_STATE_DELIVERED, NULL);
  qitem_free(it);
  return PATH_SENT_FINISHED;
}

/* ---- a receipt to a client of ours ---- */

/* Taken: done with, and out of the journal. Not taken now: it stays first
 * for its account. */
static enum path_sent_outcome receipt_answered(const struct path_sent_request *rq)
{
  struct qitem *it = rq->it;
  if (rq->status != PROTO_OK) {
    it->attempts++;
    rq->edge->again(rq->edge_ctx, it, 0);
    return PATH_SENT_RETRY;
  }
  atomic_fetch_add(&rq->core->stats.receipts_out, 1);
  history_add(rq->core->history, it->msg_id, HISTORY_RECEIPT_DELIVERED, (uint16_t)rq->connector, it->receipt.state,
              0, rq->peer);
  if (it->journal_id)
    journal_event(rq, SPOOL_REC_RECEIPT_DONE, it->journal_id, 0, NULL);
  qitem_free(it);
  return PATH_SENT_FINISHED;
}

void path_sent(const struct path_sent_request *rq, struct path_sent_verdict *v)
{
  v->backoff_ms = rq->backoff_ms;
  if (rq->it->kind != QITEM_MSG) {
    v->outcome = receipt_answered(rq);
    return;
  }
  if (rq->delivery) {
    v->outcome = delivery_answered(rq);
    return;
  }
  after_send(rq);
  if (rq->status == PROTO_OK) {
    v->outcome = submit_accepted(rq);
    v->backoff_ms = 0;
  } else {
    v->outcome = submit_refused(rq, v);
  }
}
