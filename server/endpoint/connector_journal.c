/* connector_journal.c - the journal of messages and receipts: the records
 * the connectors write (into their instance's batch, in order with the
 * rest of that thread's records, or at once from any other thread), and
 * what each record means when the journal is replayed at start:
 *
 *   MSG           a message accepted (or moved): queued again, unless a
 *                 later record says it was sent or finished;
 *   SENT          the SMSC took it: its DLR entry back in the table, it
 *                 waits for its receipt;
 *   FINISHED      nothing more to do for it;
 *   RECEIPT       a receipt for an origin: back to the origin's queue;
 *   RECEIPT_DONE  that receipt delivered;
 *   UNRESOLVED    a receipt no message matched yet: to the cluster, or
 *                 tried again against the DLR table;
 *   CREDIT, CREDIT_PART  an account's credit (accounts/account_credit.c,
 *                 which writes and replays them).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "account.h"
#include "cluster.h"
#include "connector_internal.h"
#include "path.h"
#include "strutil.h"

/* The ticket of a record still in its instance's journal batch: higher
 * than any real one, so that nothing waiting for it goes out before the
 * batch is appended and the real ticket put in its place. */
#define TICKET_IN_BATCH UINT64_MAX

/* ---- an instance's batch ---- */

/* Appends the batch and puts its ticket into the acks held for it (or
 * marks them refused when the journal refused the batch: those clients get
 * an error, as if the journal had refused at once). */
void connector_journal_flush(struct instance *in)
{
  size_t fresh = in->held_new;
  in->held_new = 0;
  if (!in->journal.count)
    return;
  uint64_t ticket = spool_batch_append(in->conn->core->spool, &in->journal);
  struct held_acks *q = &in->held;
  for (size_t i = q->count - (fresh < q->count ? fresh : q->count); i < q->count; i++) {
    struct held_ack *h = &q->slots[(q->head + i) & (q->cap - 1)];
    if (h->ticket == TICKET_IN_BATCH) {
      h->ticket = ticket;
      h->refused = !ticket;
    }
  }
  if (q->count)
    atomic_store(&in->held_ticket, q->slots[q->head].ticket);
}

uint64_t connector_journal(struct core *core, struct instance *in, const struct spool_record *rec)
{
  if (!core->spool || !in)
    return core_journal(core, rec);
  if (spool_batch_add(core->spool, &in->journal, rec) < 0)
    return 0;
  connector_schedule_flush(in);
  return TICKET_IN_BATCH;
}

uint64_t connector_journal_msg_event(struct core *core, struct instance *in, enum spool_record_type type,
                                     uint64_t id, uint16_t target, const char *smsc_id)
{
  struct spool_record rec = { .type = type, .id = id, .target = target, .smsc_id = smsc_id };
  return connector_journal(core, in, &rec);
}

/* ---- replayed at start ---- */

/* A receipt the journal kept for the cluster to resolve (UNRESOLVED). */
struct unresolved {
  struct unresolved *next;
  uint64_t journal_id;
  uint16_t connector;
  char key[DLR_ID_LEN];
  struct msg_receipt receipt;
};

/* Messages met during replay, by id, until the replay is over: a SENT
 * record takes its message out (it waits for a receipt, not in a queue). */
struct connector_replay {
  struct core *core;
  struct log_category *log;
  struct qitem **slots;           /* open addressing on the id */
  size_t mask, used;
  struct connector_replay_summary sum;
  struct dlr_dropped *evicted;    /* messages whose replayed DLR entries the table dropped */
  size_t n_evicted, evicted_cap;
  struct unresolved *unresolved;  /* for the cluster, until it runs */
};

static void replay_dlr_dropped(void *ctx, const struct dlr_dropped *dropped, size_t n, enum dlr_drop why)
{
  (void)why;   /* a replay only overfills a table made smaller */
  struct connector_replay *r = ctx;
  if (r->n_evicted + n > r->evicted_cap) {
    size_t cap = r->evicted_cap ? r->evicted_cap * 2 : 1024;
    while (cap < r->n_evicted + n)
      cap *= 2;
    struct dlr_dropped *grown = realloc(r->evicted, cap * sizeof *grown);
    if (!grown)
      return;   /* they stay live: put back into the table at the next start */
    r->evicted = grown;
    r->evicted_cap = cap;
  }
  memcpy(r->evicted + r->n_evicted, dropped, n * sizeof *dropped);
  r->n_evicted += n;
}

static struct qitem **replay_slot(struct connector_replay *r, uint64_t id)
{
  size_t i = (size_t)(id * 0x9E3779B97F4A7C15ull) & r->mask;
  while (r->slots[i] && r->slots[i]->msg->id != id)
    i = (i + 1) & r->mask;
  return &r->slots[i];
}

static int replay_grow(struct connector_replay *r)
{
  size_t cap = r->mask ? (r->mask + 1) * 2 : 1 << 16;
  struct qitem **old = r->slots;
  size_t old_cap = r->mask ? r->mask + 1 : 0;
  r->slots = calloc(cap, sizeof *r->slots);
  if (!r->slots) {
    r->slots = old;
    return -1;
  }
  r->mask = cap - 1;
  for (size_t i = 0; i < old_cap; i++)
    if (old[i])
      *replay_slot(r, old[i]->msg->id) = old[i];
  free(old);
  return 0;
}

static void replay_record(void *ctx, const struct spool_record *rec)
{
  struct connector_replay *r = ctx;
  struct core *core = r->core;
  if (rec->id > r->sum.max_id && rec->type != SPOOL_REC_RECEIPT_DONE)
    r->sum.max_id = rec->id;
  switch (rec->type) {
  case SPOOL_REC_CREDIT:
    accounts_credit_replay_snapshot(core->accounts, rec->user, rec->credit_set, rec->credit_left,
                                    rec->credit_epoch);
    return;
  case SPOOL_REC_CREDIT_PART:
    accounts_credit_replay_part(core->accounts, rec->user, rec->credit_epoch);
    return;
  case SPOOL_REC_MSG: {
    if ((r->used + 1) * 2 > r->mask + 1 && replay_grow(r) == -1)
      return;
    struct qitem *it = qitem_new(QITEM_MSG);
    if (!it || !(it->msg = msg_clone(rec->msg))) {
      free(it);
      r->sum.dropped++;
      return;
    }
    it->target = rec->target;
    path_join_replayed(core, it->msg, rec->target);
    struct qitem **slot = replay_slot(r, rec->id);
    if (*slot)
      qitem_free(*slot);   /* a compacted or drained copy: the later one stands */
    else
      r->used++;
    *slot = it;
    break;
  }
  case SPOOL_REC_SENT: {
    if (!r->mask)
      return;
    struct qitem **slot = replay_slot(r, rec->id);
    if (!*slot)
      return;
    struct dlr_info info;
    const struct msg *m = (*slot)->msg;
    dlr_info_from_msg(&info, m);
    dlrtab_insert(core->dlr, rec->target, rec->smsc_id, &info, m->received_ms / 1000);
    /* Sent already: it waits for its receipt, not for a send. The slot
     * keeps a tombstone so that the table stays probe-able. */
    (*slot)->kind = QITEM_RECEIPT;
    r->sum.awaiting_receipt++;
    break;
  }
  case SPOOL_REC_RECEIPT: {
    struct qitem *it = qitem_new(QITEM_RECEIPT);
    if (!it) {
      r->sum.dropped++;
      return;
    }
    it->receipt = *rec->receipt;
    it->journal_id = rec->id;
    it->via = rec->via;
    it->callback_method = rec->callback_method;
    if ((rec->callback && !(it->callback = strdup(rec->callback))) ||
        (rec->smsc_id && !(it->smsc_msgid = strdup(rec->smsc_id)))) {
      qitem_free(it);
      r->sum.dropped++;
      return;
    }
    if (connector_restore(core, rec->target, it, rec->user) == -1) {
      qitem_free(it);
      r->sum.dropped++;
      return;
    }
    r->sum.receipts++;
    break;
  }
  case SPOOL_REC_UNRESOLVED: {
    struct unresolved *u = calloc(1, sizeof *u);
    if (!u) {
      r->sum.dropped++;
      return;
    }
    u->journal_id = rec->id;
    u->connector = rec->target;
    str_copy(u->key, sizeof u->key, rec->smsc_id);
    u->receipt = *rec->receipt;
    u->next = r->unresolved;
    r->unresolved = u;
    r->sum.unresolved++;
    break;
  }
  default:
    break;
  }
}

static void replay_warn(void *ctx, const char *text)
{
  struct connector_replay *r = ctx;
  LOGW(r->log, "journal: %s", text);
}

struct connector_replay *connector_journal_open(struct core *core, const char *dir, const struct spool_options *opt,
                                                struct log_category *log, struct connector_replay_summary *sum,
                                                char *err, size_t err_len)
{
  struct connector_replay *r = calloc(1, sizeof *r);
  memset(sum, 0, sizeof *sum);
  if (!r) {
    snprintf(err, err_len, "out of memory");
    return NULL;
  }
  r->core = core;
  r->log = log;
  dlrtab_on_drop(core->dlr, replay_dlr_dropped, r);
  core->spool = spool_open(dir, opt, replay_record, replay_warn, r, err, err_len);
  dlrtab_on_drop(core->dlr, core_dlr_dropped, core);
  r->sum.credit_restored = accounts_credit_replay_done(core->accounts);
  if (!core->spool) {
    sum->credit_restored = r->sum.credit_restored;
    free(r->slots);
    free(r->evicted);
    free(r);
    return NULL;
  }
  core_dlr_dropped(core, r->evicted, r->n_evicted, DLR_DROP_EVICTED);
  r->sum.evicted = r->n_evicted;
  r->sum.awaiting_receipt -= r->n_evicted;
  free(r->evicted);
  r->evicted = NULL;
  for (size_t i = 0; r->mask && i <= r->mask; i++) {
    struct qitem *it = r->slots[i];
    if (!it)
      continue;
    if (it->kind == QITEM_RECEIPT) {    /* sent before the restart: its DLR entry stands */
      qitem_free(it);
      continue;
    }
    /* Every message counts in flight until it is sent or fails; the parts
     * of a long MO joined count once. */
    atomic_fetch_add(&core->in_flight, 1);
    enum connector_held held = connector_hold(core, NULL, &it, it->target, time(NULL));
    r->sum.joining += held == CONNECTOR_HELD_JOINING;
    r->sum.scheduled += held == CONNECTOR_HELD_SCHEDULED;
    if (held != CONNECTOR_NOT_HELD)
      continue;
    if (connector_restore(core, it->target, it, "") == -1) {
      LOGW(log, "journal: message %" PRIu64 " has no connector to go to any more; dropped", it->msg->id);
      qitem_free(it);
      atomic_fetch_sub(&core->in_flight, 1);
      r->sum.dropped++;
      continue;
    }
    r->sum.messages++;
  }
  free(r->slots);
  r->slots = NULL;
  *sum = r->sum;
  return r;
}

/* The receipts the journal kept unmatched go to the cluster again now that
 * it runs; without a database, to their connector, which tries them
 * against the DLR table the journal has filled. What neither can take is
 * given up (its record ends). */
void connector_replay_finish(struct connector_replay *r)
{
  if (!r)
    return;
  struct core *core = r->core;
  unsigned dropped = 0, adopted = 0;
  while (r->unresolved) {
    struct unresolved *u = r->unresolved;
    r->unresolved = u->next;
    bool taken = false;
    if (u->connector < core->cfg->n_connectors) {
      if (core->cluster)
        taken = cluster_resolve_receipt(core->cluster, u->connector, u->key, &u->receipt, u->journal_id);
      else if ((taken = connector_adopt_receipt(core->connectors[u->connector], u->key, &u->receipt,
                                                u->journal_id) == 0))
        adopted++;
    }
    if (!taken) {
      core_journal(core, &(struct spool_record){ .type = SPOOL_REC_RECEIPT_DONE, .id = u->journal_id });
      atomic_fetch_add(&core->stats.receipts_unmatched, 1);
      dropped++;
    }
    free(u);
  }
  if (adopted)
    LOGI(r->log, "journal: %u receipts that matched no message yet are tried again", adopted);
  if (dropped)
    LOGW(r->log, "journal: %u kept receipts that matched no message given up (%s)", dropped,
         core->cluster ? "their connector is gone, or too many wait"
                         : "their connector is gone or takes no receipts from an SMSC now");
  free(r);
}
