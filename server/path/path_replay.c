/* path_replay.c - the journal read again at start (path.h): what each
 * record of the message path means, beside path_accept.c, path_sent.c and
 * path_receipt.c, which write most of them:
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
#include "log.h"
#include "path.h"
#include "strutil.h"

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
struct path_replay {
  struct core *core;
  struct log_category *log;
  const struct path_replay_edge *edge;
  void *edge_ctx;
  struct qitem **slots;           /* open addressing on the id */
  size_t mask, used;
  struct path_replay_summary sum;
  struct dlr_dropped *evicted;    /* messages whose replayed DLR entries the table dropped */
  size_t n_evicted, evicted_cap;
  struct unresolved *unresolved;  /* for the cluster, until it runs */
};

static void replay_dlr_dropped(void *ctx, const struct dlr_dropped *dropped, size_t n, enum dlr_drop why)
{
  (void)why;   /* a replay only overfills a table made smaller */
  struct path_replay *r = ctx;
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

static struct qitem **replay_slot(struct path_replay *r, uint64_t id)
{
  size_t i = (size_t)(id * 0x9E3779B97F4A7C15ull) & r->mask;
  while (r->slots[i] && r->slots[i]->msg->id != id)
    i = (i + 1) & r->mask;
  return &r->slots[i];
}

static int replay_grow(struct path_replay *r)
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
  struct path_replay *r = ctx;
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
    if (r->edge->restore(r->edge_ctx, rec->target, it, rec->user) == -1) {
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
  struct path_replay *r = ctx;
  LOGW(r->log, "journal: %s", text);
}

struct path_replay *path_replay_open(struct core *core, const char *dir, const struct spool_options *opt,
                                     struct log_category *log, const struct path_replay_edge *edge, void *edge_ctx,
                                     struct path_replay_summary *sum, char *err, size_t err_len)
{
  struct path_replay *r = calloc(1, sizeof *r);
  memset(sum, 0, sizeof *sum);
  if (!r) {
    snprintf(err, err_len, "out of memory");
    return NULL;
  }
  r->core = core;
  r->log = log;
  r->edge = edge;
  r->edge_ctx = edge_ctx;
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
    enum path_held held = r->edge->hold(r->edge_ctx, &it, it->target, time(NULL));
    r->sum.joining += held == PATH_HELD_JOINING;
    r->sum.scheduled += held == PATH_HELD_SCHEDULED;
    if (held != PATH_NOT_HELD)
      continue;
    if (r->edge->restore(r->edge_ctx, it->target, it, "") == -1) {
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
void path_replay_finish(struct path_replay *r)
{
  if (!r)
    return;
  struct core *core = r->core;
  unsigned dropped = 0, adopted = 0;
  while (r->unresolved) {
    struct unresolved *u = r->unresolved;
    r->unresolved = u->next;
    enum path_unresolved taken = PATH_UNRESOLVED_DROPPED;
    if (u->connector < core->cfg->n_connectors)
      taken = r->edge->unresolved(r->edge_ctx, u->connector, u->key, &u->receipt, u->journal_id);
    adopted += taken == PATH_UNRESOLVED_ADOPTED;
    if (taken == PATH_UNRESOLVED_DROPPED) {
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
