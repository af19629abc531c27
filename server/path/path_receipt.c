/* path_receipt.c - the receipt path (path.h): a receipt from an SMSC,
 * matched to its message and passed on to the message's origin, and a
 * receipt for an origin, whoever made it. A stage per function.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "account.h"
#include "log.h"
#include "path.h"
#include "routing.h"
#include "sms_text.h"
#include "strutil.h"

static const char *const receipt_outcome_names[] = {
  [PATH_RECEIPT_MATCHED] = "matched", [PATH_RECEIPT_UNMATCHED] = "unmatched", [PATH_RECEIPT_REFUSED] = "refused",
};

const char *path_receipt_outcome_name(enum path_receipt_outcome outcome)
{
  return (unsigned)outcome < sizeof receipt_outcome_names / sizeof receipt_outcome_names[0]
           ? receipt_outcome_names[outcome] : "?";
}

/* ---- combined receipts of split messages ---- */

/* The whole a part of a split message belongs to, when the connector it
 * went out on (via) answers its origin once for all parts. */
static bool joined_part(struct core *core, const struct dlr_info *info, int via, struct receipt_join_key *k)
{
  if (!core->receipt_join || info->part_total < 2 || via < 0 || (unsigned)via >= core->cfg->n_connectors ||
      core->cfg->connectors[via].long_receipts != CONFIG_LONG_COMBINED)
    return false;
  *k = (struct receipt_join_key){ .origin_connector = info->origin_connector, .origin_user = info->origin_user,
                                  .origin_ref = info->origin_ref, .seq = info->part_seq,
                                  .total = info->part_total };
  return true;
}

void path_join_parts(struct core *core, const struct qlist *parts, unsigned target)
{
  struct dlr_info info;
  struct receipt_join_key k;
  if (!core->receipt_join || !parts->head || !parts->head->msg->dlr_mask)
    return;
  dlr_info_from_msg(&info, parts->head->msg);
  if (!joined_part(core, &info, (int)target, &k) || parts->count != k.total)
    return;
  uint64_t ids[SMS_TEXT_SEGMENTS_MAX];
  size_t n = 0;
  for (const struct qitem *it = parts->head; it && n < SMS_TEXT_SEGMENTS_MAX; it = it->next)
    ids[n++] = it->msg->id;
  if (!receipt_join_register_whole(core->receipt_join, &k, ids, time(NULL)))
    LOGD(core->log, "message %" PRIu64 ": its parts' receipts pass one by one (no room to combine them)",
         parts->head->msg->id);
}

void path_join_replayed(struct core *core, const struct msg *m, unsigned target)
{
  struct dlr_info info;
  struct receipt_join_key k;
  if (!core->receipt_join || !m->dlr_mask)
    return;
  dlr_info_from_msg(&info, m);
  if (joined_part(core, &info, (int)target, &k))
    receipt_join_register(core->receipt_join, &k, m->id, true, time(NULL));
}

/* ---- to the origin ---- */

/* hears: whether the origin hears r about the message of info: not when r
 * is one part's and the connector answers for the whole. The first
 * failure of a whole finishes its other parts in the journal. */
static bool origin_hears(const struct path_origin_request *rq)
{
  struct core *core = rq->core;
  const struct dlr_info *info = rq->info;
  struct receipt_join_key k;
  if (!joined_part(core, info, rq->via, &k))
    return true;
  uint64_t finish[255];
  size_t n_finish;
  bool pass = receipt_join_offer(core->receipt_join, &k, rq->receipt->state, finish, &n_finish) == RECEIPT_JOIN_PASS;
  for (size_t i = 0; i < n_finish; i++)
    if (finish[i] != info->msg_id && rq->edge->journal)
      rq->edge->journal(rq->edge_ctx, &(struct spool_record){ .type = SPOOL_REC_FINISHED, .id = finish[i] });
  if (!pass)
    history_add(core->history, info->msg_id, HISTORY_RECEIPT_HELD, info->origin_connector, rq->receipt->state,
                rq->receipt->err, info->origin_user);
  return pass;
}

/* queue: the receipt item for the origin's account, as the origin knows
 * the message; NULL when the account is not there or memory is short. */
static struct qitem *origin_item(const struct path_origin_request *rq, struct queue **q)
{
  struct core *core = rq->core;
  const struct dlr_info *info = rq->info;
  const struct msg_receipt *r = rq->receipt;
  *q = rq->edge->account_queue(rq->edge_ctx, info->origin_connector, info->origin_user);
  struct qitem *it = *q ? qitem_new(QITEM_RECEIPT) : NULL;
  if (!it) {
    LOGW(rq->log, "receipt for message %" PRIu64 " dropped: account %s of %s is unknown or memory is short",
         info->msg_id, info->origin_user, core->cfg->connectors[info->origin_connector].name);
    return NULL;
  }
  it->receipt = *r;   /* its id, the SMSC's, is replaced by the origin's below */
  it->msg_id = info->msg_id;
  it->via = rq->via >= 0 ? (uint16_t)(rq->via + 1) : 0;
  history_add(core->history, info->msg_id, HISTORY_RECEIPT_QUEUED, info->origin_connector, r->state, r->err,
              info->origin_user);
  str_copy(it->receipt.id, sizeof it->receipt.id, info->origin_ref);
  it->receipt.src = info->src;
  it->receipt.dst = info->dst;
  if (!it->receipt.submit_time)
    it->receipt.submit_time = info->submit_time;
  /* An HTTP origin may ask for the SMSC's id (%F); the others know the
   * message by their own. */
  if (info->callback[0] && (!(it->callback = strdup(info->callback)) ||
                            (r->id[0] && !(it->smsc_msgid = strdup(r->id))))) {
    qitem_free(it);
    return NULL;
  }
  it->callback_method = info->callback_method;
  return it;
}

bool path_receipt_to_origin(const struct path_origin_request *rq, uint64_t *ticket)
{
  *ticket = 1;
  struct core *core = rq->core;
  const struct dlr_info *info = rq->info;
  if (!msg_receipt_wanted(info->dlr_mask, rq->receipt->state) || info->origin_connector >= core->cfg->n_connectors ||
      !origin_hears(rq))
    return false;
  if (msg_state_final(rq->receipt->state))
    accounts_count_receipt(core->accounts, info->origin_user, rq->receipt->state == MSG_STATE_DELIVERED);
  struct queue *q;
  struct qitem *it = origin_item(rq, &q);
  if (!it)
    return false;
  if (rq->edge->journal) {
    /* journal: receipt ids come from the message id space, they only
     * need to be unique. */
    it->journal_id = ids_next(&core->ids, rq->ids);
    struct spool_record rec = { .type = SPOOL_REC_RECEIPT, .id = it->journal_id,
                                .target = info->origin_connector, .receipt = &it->receipt,
                                .user = info->origin_user, .callback = it->callback,
                                .callback_method = it->callback_method, .via = it->via,
                                .smsc_id = it->smsc_msgid };
    *ticket = rq->edge->journal(rq->edge_ctx, &rec);
  }
  rq->edge->hand_over(rq->edge_ctx, q, it);
  return true;
}

/* ---- from an SMSC ---- */

/* record: the plugins, its history and the message log hear of it. */
static void record(const struct path_receipt_request *rq, const struct dlr_info *info)
{
  struct core *core = rq->core;
  const struct msg_receipt *r = rq->receipt;
  LOGD2(rq->log, "receipt for %" PRIu64 " (SMSC id %s): state %u err %u", info->msg_id, r->id, r->state, r->err);
  core_enter(core);
  plugin_host_after_dlr(atomic_load_explicit(&core->plugins, memory_order_acquire), info->msg_id, r);
  core_leave(core);
  history_add(core->history, info->msg_id, HISTORY_RECEIPT, (uint16_t)rq->connector, r->state, r->err, r->id);
  core_log_receipt(core, info->msg_id, info, (int)rq->connector, r);
  if (r->state == MSG_STATE_DELIVERED)
    atomic_fetch_add(&core->stats.delivered, 1);
}

void path_receipt(const struct path_receipt_request *rq, struct path_receipt_verdict *v)
{
  struct core *core = rq->core;
  const struct msg_receipt *r = rq->receipt;
  struct dlr_info info;
  v->msg_id = 0;
  v->ticket = 0;
  /* match: a final state removes the DLR entry. */
  if (!dlrtab_lookup(core->dlr, (uint16_t)rq->connector, rq->key, msg_state_final(r->state), &info)) {
    v->outcome = PATH_RECEIPT_UNMATCHED;
    return;
  }
  v->msg_id = info.msg_id;
  record(rq, &info);
  /* origin */
  struct path_origin_request to = { .core = core, .edge = rq->edge, .edge_ctx = rq->edge_ctx, .log = rq->log,
                                    .ids = rq->ids, .info = &info, .receipt = r, .via = (int)rq->connector };
  uint64_t ticket;
  path_receipt_to_origin(&to, &ticket);
  bool refused = ticket == 0;
  /* finish: the message needs nothing more. */
  if (msg_state_final(r->state) && rq->edge->journal) {
    uint64_t t = rq->edge->journal(rq->edge_ctx, &(struct spool_record){ .type = SPOOL_REC_FINISHED, .id = info.msg_id });
    refused |= t == 0;
    if (t > ticket)
      ticket = t;
  }
  /* answer: once what it changed is durable, or asked again. */
  if (refused) {
    LOGW(rq->log, "receipt for %" PRIu64 " (SMSC id %s) not kept: the journal refused it; the SMSC is asked "
         "to send it again", info.msg_id, r->id);
    v->outcome = PATH_RECEIPT_REFUSED;
    return;
  }
  v->outcome = PATH_RECEIPT_MATCHED;
  v->ticket = ticket;
}

uint64_t path_receipt_keep_unmatched(struct core *core, struct id_block *ids, unsigned connector, const char *key,
                                     const struct msg_receipt *r, uint64_t *ticket)
{
  uint64_t journal_id = ids_next(&core->ids, ids);
  struct spool_record rec = { .type = SPOOL_REC_UNRESOLVED, .id = journal_id, .target = (uint16_t)connector,
                              .smsc_id = key, .receipt = r };
  *ticket = core_journal(core, &rec);
  return *ticket ? journal_id : 0;
}
