/* connector_receipt.c - receipts: those an SMSC sends, matched in the DLR
 * table (tried again for a while when they beat their submit response,
 * then handed to the cluster thread), and those queued for the origin of a
 * message, whoever made them.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "account.h"
#include "cluster.h"
#include "connector_internal.h"
#include "sms_text.h"
#include "strutil.h"

/* What match_receipt returns when the journal refused a record the receipt
 * needs: the SMSC is told to send it again, as when the journal was
 * already refusing before the receipt came. */
#define TICKET_REFUSED (UINT64_MAX - 1)

/* A receipt whose DLR entry is not there (yet): an SMSC may send the
 * receipt on another bind before the submit response reaches us. */
struct early_receipt {
  struct early_receipt *next;
  uint64_t due_ms;
  unsigned tries;
  uint32_t ref, raw_status;        /* of the SMSC's deliver, until it is answered */
  bool answered;                   /* the SMSC was told we have it */
  uint64_t journal_id;             /* persist on, once answered: its UNRESOLVED record */
  char key[DLR_ID_LEN];
  struct msg_receipt receipt;
};

/* When an unmatched receipt is looked up again, after it first came. */
static const unsigned early_retry_ms[] = { 50, 250, 1000, 3000 };
/* Tries for which the SMSC's deliver stays unanswered. The race an early
 * receipt waits out (a receipt overtaking its submit response) is over in
 * milliseconds, while each unanswered deliver holds a slot of the SMSC's
 * window: receipts that match nothing at all (their entries evicted, or
 * for messages sent by someone else) would otherwise throttle all of the
 * SMSC's receipts to a window per 4.3 s. After that the receipt is
 * answered (with persist on once journaled) and tried on from memory. */
#define EARLY_HOLD_TRIES 1
/* With a database: tries before the receipt is looked up there (300 ms). */
#define CLUSTER_AFTER_TRIES 2
#define EARLY_MAX 100000

/* ---- receipts towards origins ---- */

/* The whole a part of a split message belongs to, when the connector it
 * went out on (via) answers its origin once for all parts. */
static bool joined_part(struct core *core, const struct dlr_info *info, int via, struct receipt_join_key *k)
{
  if (!core->receipt_join || info->part_total < 2 || via < 0 || (unsigned)via >= core->n_connectors ||
      core_connector(core, (unsigned)via)->cfg->long_receipts != CONFIG_LONG_COMBINED)
    return false;
  *k = (struct receipt_join_key){ .origin_connector = info->origin_connector, .origin_user = info->origin_user,
                                  .origin_ref = info->origin_ref, .seq = info->part_seq,
                                  .total = info->part_total };
  return true;
}

void connector_join_parts(struct core *core, const struct qlist *parts, unsigned target)
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

void connector_join_replayed(struct core *core, const struct msg *m, unsigned target)
{
  struct dlr_info info;
  struct receipt_join_key k;
  if (!core->receipt_join || !m->dlr_mask)
    return;
  dlr_info_from_msg(&info, m);
  if (joined_part(core, &info, (int)target, &k))
    receipt_join_register(core->receipt_join, &k, m->id, true, time(NULL));
}

/* Whether the origin hears r about the message of info: not when r is one
 * part's and the connector answers for the whole. The first failure of a
 * whole finishes its other parts in the journal. */
static bool origin_hears(struct core *core, struct instance *in, const struct dlr_info *info,
                         const struct msg_receipt *r, int via)
{
  struct receipt_join_key k;
  if (!joined_part(core, info, via, &k))
    return true;
  uint64_t finish[255];
  size_t n_finish;
  bool pass = receipt_join_offer(core->receipt_join, &k, r->state, finish, &n_finish) == RECEIPT_JOIN_PASS;
  for (size_t i = 0; i < n_finish; i++)
    if (finish[i] != info->msg_id)
      connector_journal_msg_event(core, in, SPOOL_REC_FINISHED, finish[i], 0, NULL);
  if (!pass)
    history_add(core->history, info->msg_id, HISTORY_RECEIPT_HELD, info->origin_connector, r->state, r->err,
                info->origin_user);
  return pass;
}

/* The receipt item for the origin of a message and the queue it goes to,
 * or NULL when the origin does not want this state, cannot be found, or
 * hears of the message as a whole. */
struct qitem *connector_origin_receipt(struct core *core, struct instance *in, struct log_category *log,
                                       const struct dlr_info *info, const struct msg_receipt *r, int via,
                                       struct queue **q, uint64_t *ticket)
{
  if (!msg_receipt_wanted(info->dlr_mask, r->state) || info->origin_connector >= core->n_connectors ||
      !origin_hears(core, in, info, r, via))
    return NULL;
  if (msg_state_final(r->state))
    accounts_count_receipt(core->accounts, info->origin_user, r->state == MSG_STATE_DELIVERED);
  struct connector *origin = core_connector(core, info->origin_connector);
  *q = connector_user_queue(origin, info->origin_user);
  struct qitem *it = *q ? qitem_new(QITEM_RECEIPT) : NULL;
  if (!it) {
    LOGW(log, "receipt for message %" PRIu64 " dropped: account %s of %s is unknown or memory is short",
         info->msg_id, info->origin_user, origin->cfg->name);
    return NULL;
  }
  it->receipt = *r;   /* its id, the SMSC's, is replaced by the origin's below */
  it->msg_id = info->msg_id;
  it->via = via >= 0 ? (uint16_t)(via + 1) : 0;
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
  if (core->spool) {
    /* Receipt ids come from the message id space: they only need to be unique. */
    static _Thread_local struct id_block receipt_ids;
    it->journal_id = ids_next(&core->ids, &receipt_ids);
    struct spool_record rec = { .type = SPOOL_REC_RECEIPT, .id = it->journal_id,
                                .target = info->origin_connector, .receipt = &it->receipt,
                                .user = info->origin_user, .callback = it->callback,
                                .callback_method = it->callback_method, .via = it->via,
                                .smsc_id = it->smsc_msgid };
    *ticket = connector_journal(core, in, &rec);
  }
  return it;
}

/* Queues a receipt for the origin of a message, if the origin wants it.
 * Returns the journal ticket of its record (1 when nothing was journaled). */
uint64_t connector_receipt_to_origin(struct instance *in, const struct dlr_info *info,
                                     const struct msg_receipt *r)
{
  struct queue *q;
  uint64_t ticket = 1;
  struct qitem *it = connector_origin_receipt(in->conn->core, in, in->log, info, r, (int)in->conn->index, &q, &ticket);
  if (it)
    connector_stage(in, q, it);
  return ticket;
}

/* ---- client side: what the SMSC sends us ---- */

/* Looks the receipt up in the DLR table and passes it on to the origin.
 * Returns 0 when its entry is not (or no longer) there, TICKET_REFUSED
 * when the journal began refusing after connector_receipt_in looked (its
 * records are not kept: the SMSC must send it again), else the journal
 * ticket that must be durable before the SMSC is told we have it. */
static uint64_t match_receipt(struct instance *in, const char *key, const struct msg_receipt *r)
{
  struct dlr_info info;
  if (!dlrtab_lookup(in->conn->core->dlr, (uint16_t)in->conn->index, key,
                     msg_state_final(r->state), &info))
    return 0;
  LOGD2(in->log, "receipt for %" PRIu64 " (SMSC id %s): state %u err %u", info.msg_id, r->id,
        r->state, r->err);
  core_enter(in->conn->core);
  plugin_host_after_dlr(atomic_load_explicit(&in->conn->core->plugins, memory_order_acquire),
                        info.msg_id, r);
  core_leave(in->conn->core);
  history_add(in->conn->core->history, info.msg_id, HISTORY_RECEIPT, (uint16_t)in->conn->index, r->state,
              r->err, r->id);
  core_log_receipt(in->conn->core, info.msg_id, &info, (int)in->conn->index, r);
  if (r->state == MSG_STATE_DELIVERED)
    atomic_fetch_add(&in->conn->core->stats.delivered, 1);
  uint64_t ticket = connector_receipt_to_origin(in, &info, r);
  bool refused = ticket == 0;
  if (msg_state_final(r->state)) {
    uint64_t t = connector_journal_msg_event(in->conn->core, in, SPOOL_REC_FINISHED, info.msg_id, 0, NULL);
    refused |= t == 0;
    if (t > ticket)
      ticket = t;
  }
  if (refused) {
    LOGW(in->log, "receipt for %" PRIu64 " (SMSC id %s) not kept: the journal refused it; the SMSC is asked "
         "to send it again", info.msg_id, r->id);
    return TICKET_REFUSED;
  }
  return ticket;
}

static void unmatched(struct instance *in, const struct msg_receipt *r)
{
  atomic_fetch_add(&in->conn->core->stats.receipts_unmatched, 1);
  LOGI(in->log, "receipt for unknown message id '%s' (state %u)", r->id, r->state);
}

/* A receipt to be tried again at due_ms (not tried yet, not answered), or
 * NULL when the instance holds EARLY_MAX already or memory is short. */
static struct early_receipt *early_new(struct instance *in, const char *key, const struct msg_receipt *r,
                                       uint64_t due_ms)
{
  struct early_receipt *e = in->early_count < EARLY_MAX ? calloc(1, sizeof *e) : NULL;
  if (!e)
    return NULL;
  e->due_ms = due_ms;
  str_copy(e->key, sizeof e->key, key);
  e->receipt = *r;
  return e;
}

static void early_append(struct instance *in, struct early_receipt *e)
{
  e->next = NULL;
  if (in->early_tail)
    in->early_tail->next = e;
  else
    in->early_head = e;
  in->early_tail = e;
  in->early_count++;
}

/* Answers an SMSC's receipt: with persist on, only once what it changed is
 * in the journal, so that a receipt the SMSC was told we have is never lost. */
static void answer_receipt(struct instance *in, uint32_t ref, uint32_t raw_status, uint64_t ticket)
{
  if (ticket == TICKET_REFUSED) {
    connector_respond(in, ref, raw_status, PROTO_OP_DELIVER_RESP, PROTO_E_TEMPORARY, NULL);
    return;
  }
  if (!in->conn->core->spool) {
    connector_respond(in, ref, raw_status, PROTO_OP_DELIVER_RESP, PROTO_OK, NULL);
    return;
  }
  struct reply rp = { .ref = ref, .raw_status = raw_status, .op = PROTO_OP_DELIVER_RESP };
  connector_hold_ack(in, &rp, NULL, 0, ticket, 0);
}

void connector_receipt_in(struct instance *in, const struct proto_pdu *req)
{
  struct connector *c = in->conn;
  atomic_fetch_add(&c->core->stats.receipts_in, 1);
  count_one(&in->live.receipts_in);
  /* The journal cannot keep what the receipt changes (disk full): the SMSC
   * sends it again later, and the DLR entry waits for it untouched. */
  if (c->core->spool && spool_failing(c->core->spool, NULL, 0)) {
    connector_respond(in, req->ref, req->raw_status, PROTO_OP_DELIVER_RESP, PROTO_E_TEMPORARY, NULL);
    return;
  }
  char key[DLR_ID_LEN];
  if (dlr_id_normalize(key, sizeof key, req->receipt.id,
                       (enum dlr_id_type)c->cfg->msgid_receipt) < 0) {
    unmatched(in, &req->receipt);
    connector_respond(in, req->ref, req->raw_status, PROTO_OP_DELIVER_RESP, PROTO_OK, NULL);
    return;
  }
  uint64_t ticket = match_receipt(in, key, &req->receipt);
  if (ticket) {
    answer_receipt(in, req->ref, req->raw_status, ticket);
    return;
  }
  struct early_receipt *e = early_new(in, key, &req->receipt, evloop_now_ms(in->loop) + early_retry_ms[0]);
  if (!e) {
    unmatched(in, &req->receipt);
    connector_respond(in, req->ref, req->raw_status, PROTO_OP_DELIVER_RESP, PROTO_OK, NULL);
    return;
  }
  e->ref = req->ref;
  e->raw_status = req->raw_status;
  early_append(in, e);
}

/* Answers an early receipt that still matches nothing. With persist on it
 * is journaled first (UNRESOLVED, live until RECEIPT_DONE) and the SMSC
 * hears we have it once that is durable: after a crash the next start
 * tries it again. The record goes to the journal at once, not into the
 * instance's batch, so that it comes before the RECEIPT_DONE that ends it
 * (from this instance's batch, or the cluster thread). Returns false when
 * the journal refused it: the SMSC was told to send it again later. */
static bool early_answer(struct instance *in, struct early_receipt *e)
{
  struct core *core = in->conn->core;
  uint64_t ticket = 1;
  if (core->spool) {
    static _Thread_local struct id_block unresolved_ids;
    uint64_t journal_id = ids_next(&core->ids, &unresolved_ids);
    struct spool_record rec = { .type = SPOOL_REC_UNRESOLVED, .id = journal_id,
                                .target = (uint16_t)in->conn->index, .smsc_id = e->key,
                                .receipt = &e->receipt };
    if (!(ticket = core_journal(core, &rec))) {
      connector_respond(in, e->ref, e->raw_status, PROTO_OP_DELIVER_RESP, PROTO_E_TEMPORARY, NULL);
      return false;
    }
    e->journal_id = journal_id;
  }
  answer_receipt(in, e->ref, e->raw_status, ticket);
  e->answered = true;
  return true;
}

/* An early receipt is done with (matched, given up, or handed on): its
 * SMSC answered if it was not yet, its UNRESOLVED record ended. */
static void early_done(struct instance *in, const struct early_receipt *e, uint64_t ticket)
{
  if (!e->answered)
    answer_receipt(in, e->ref, e->raw_status, ticket);
  else if (e->journal_id && ticket != TICKET_REFUSED)   /* refused: its UNRESOLVED record keeps it */
    connector_journal_msg_event(in->conn->core, in, SPOOL_REC_RECEIPT_DONE, e->journal_id, 0, NULL);
}

/* Hands a receipt no DLR entry here matched to the cluster thread, to be
 * resolved through the database. It is answered (journaled first, with
 * persist on) before, if it was not yet. */
static void receipt_to_cluster(struct instance *in, struct early_receipt *e)
{
  struct core *core = in->conn->core;
  if (!e->answered && !early_answer(in, e))
    return;
  if (!cluster_resolve_receipt(core->cluster, (uint16_t)in->conn->index, e->key, &e->receipt, e->journal_id) &&
      e->journal_id)
    core_journal(core, &(struct spool_record){ .type = SPOOL_REC_RECEIPT_DONE, .id = e->journal_id });
}

/* Retries the receipts that came before their DLR entry. Retries keep
 * their order: each try's delay is the same for all, so the list stays
 * sorted by due time. give_up (the instance stops): each is tried once
 * more; one kept in the journal stays there for the next start. */
void connector_retry_early_receipts(struct instance *in, bool give_up)
{
  uint64_t now = evloop_now_ms(in->loop);
  struct early_receipt *e;
  while ((e = in->early_head) && (give_up || e->due_ms <= now)) {
    in->early_head = e->next;
    if (!in->early_head)
      in->early_tail = NULL;
    in->early_count--;
    uint64_t ticket = match_receipt(in, e->key, &e->receipt);
    if (ticket) {
      early_done(in, e, ticket);
      free(e);
      continue;
    }
    /* With a database, a receipt no local entry knows may be for a message
     * another node sent: after a short wait it is looked up there. */
    struct cluster *cluster = in->conn->core->cluster;
    e->tries++;
    if (give_up && e->journal_id) {
      free(e);
      continue;
    }
    if (give_up || e->tries == sizeof early_retry_ms / sizeof early_retry_ms[0] ||
        (cluster && e->tries == CLUSTER_AFTER_TRIES)) {
      if (cluster) {
        receipt_to_cluster(in, e);
      } else {
        unmatched(in, &e->receipt);
        early_done(in, e, 1);
      }
      free(e);
      continue;
    }
    if (!e->answered && e->tries >= EARLY_HOLD_TRIES && !early_answer(in, e)) {
      free(e);
      continue;
    }
    /* Re-queue at the back: later tries have longer delays, and the list
     * must stay ordered, so it waits until at least the last one's time. */
    e->due_ms = now + early_retry_ms[e->tries];
    if (in->early_tail && in->early_tail->due_ms > e->due_ms)
      e->due_ms = in->early_tail->due_ms;
    early_append(in, e);
  }
}

int connector_adopt_receipt(struct connector *c, const char *key, const struct msg_receipt *r,
                            uint64_t journal_id)
{
  if (is_server(c) || c->cfg->http || !c->n_instances)
    return -1;
  struct instance *in = &c->instances[0];
  /* Due at once: adopted before any other comes, so the list stays in due order. */
  struct early_receipt *e = early_new(in, key, r, 0);
  if (!e)
    return -1;
  e->tries = EARLY_HOLD_TRIES;
  e->answered = true;
  e->journal_id = journal_id;
  early_append(in, e);
  return 0;
}


int connector_receipt_for_origin(struct core *core, struct instance *in, const struct dlr_info *info,
                                 const struct msg_receipt *r,
                                 int via)
{
  struct queue *q;
  uint64_t ticket;
  struct qitem *it = connector_origin_receipt(core, in, core->log, info, r, via, &q, &ticket);
  if (!it)
    return -1;
  struct qlist l = { 0 };
  qlist_append(&l, it);
  queue_push(q, &l, 0);
  return 0;
}
