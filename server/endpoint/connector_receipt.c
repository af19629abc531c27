/* connector_receipt.c - receipts at the edge: those an SMSC sends, taken
 * through the receipt path (server/path/path_receipt.c) and answered once
 * durable, tried again for a while when they beat their submit response,
 * then handed to the cluster thread; and the receipt path's edge for
 * receipts queued for the origin of a message, whoever made them.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "account.h"
#include "cluster.h"
#include "connector_internal.h"
#include "path.h"
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

/* ---- receipts towards origins: the receipt path's edge ---- */

/* The thread a receipt path runs in: an instance's (in), or another
 * (NULL: the cluster thread, the admin API's drops). */
struct receipt_thread {
  struct core *core;
  struct instance *in;
};

static struct queue *receipt_account_queue(void *ctx, unsigned connector, const char *user)
{
  struct receipt_thread *t = ctx;
  return connector_user_queue(core_connector(t->core, connector), user);
}

static uint64_t receipt_journal(void *ctx, const struct spool_record *rec)
{
  struct receipt_thread *t = ctx;
  return connector_journal(t->core, t->in, rec);
}

/* Staged: pushed at the end of the instance's loop iteration, after its
 * journal batch. */
static void receipt_stage(void *ctx, struct queue *q, struct qitem *it)
{
  struct receipt_thread *t = ctx;
  connector_stage(t->in, q, it);
}

static void receipt_push(void *ctx, struct queue *q, struct qitem *it)
{
  (void)ctx;
  struct qlist l = { 0 };
  qlist_append(&l, it);
  queue_push(q, &l, 0);
}

static const struct path_receipt_edge staged_persist = {
  .account_queue = receipt_account_queue, .journal = receipt_journal, .hand_over = receipt_stage,
};
static const struct path_receipt_edge staged_memory = {
  .account_queue = receipt_account_queue, .hand_over = receipt_stage,
};
static const struct path_receipt_edge pushed_persist = {
  .account_queue = receipt_account_queue, .journal = receipt_journal, .hand_over = receipt_push,
};
static const struct path_receipt_edge pushed_memory = {
  .account_queue = receipt_account_queue, .hand_over = receipt_push,
};

/* The block a thread without an instance draws receipts' journal ids
 * from: each such thread has its own, as each instance has. */
static _Thread_local struct id_block other_thread_ids;

/* Stages a receipt for the origin of a message, if the origin wants it.
 * Returns the journal ticket of its record (1 when nothing was journaled). */
uint64_t connector_receipt_to_origin(struct instance *in, const struct dlr_info *info,
                                     const struct msg_receipt *r)
{
  struct core *core = in->conn->core;
  struct receipt_thread t = { core, in };
  struct path_origin_request rq = { .core = core, .edge = core->spool ? &staged_persist : &staged_memory,
                                    .edge_ctx = &t, .log = in->log, .ids = &in->ids, .info = info, .receipt = r,
                                    .via = (int)in->conn->index };
  uint64_t ticket;
  path_receipt_to_origin(&rq, &ticket);
  return ticket;
}

/* ---- client side: what the SMSC sends us ---- */

/* Looks the receipt up in the DLR table and passes it on to the origin
 * (the receipt path). Returns 0 when its entry is not (or no longer)
 * there, TICKET_REFUSED when the journal refused its records (the SMSC
 * must send it again), else the journal ticket that must be durable before
 * the SMSC is told we have it. */
static uint64_t match_receipt(struct instance *in, const char *key, const struct msg_receipt *r)
{
  struct core *core = in->conn->core;
  struct receipt_thread t = { core, in };
  struct path_receipt_request rq = { .core = core, .edge = core->spool ? &staged_persist : &staged_memory,
                                     .edge_ctx = &t, .log = in->log, .ids = &in->ids,
                                     .connector = in->conn->index, .key = key, .receipt = r };
  struct path_receipt_verdict v;
  path_receipt(&rq, &v);
  return v.outcome == PATH_RECEIPT_UNMATCHED ? 0 : v.outcome == PATH_RECEIPT_REFUSED ? TICKET_REFUSED : v.ticket;
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

/* Answers an early receipt that still matches nothing: with persist on
 * once it is kept in the journal (path_receipt_keep_unmatched), so that the
 * SMSC hears we have it only when a crash cannot lose it. Returns false
 * when the journal refused it: the SMSC was told to send it again later. */
static bool early_answer(struct instance *in, struct early_receipt *e)
{
  struct core *core = in->conn->core;
  uint64_t ticket = 1;
  if (core->spool) {
    uint64_t journal_id = path_receipt_keep_unmatched(core, &in->ids, in->conn->index, e->key, &e->receipt, &ticket);
    if (!journal_id) {
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
  if (!c->ops->smsc_session || !c->n_instances)
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
                                 const struct msg_receipt *r, int via)
{
  struct receipt_thread t = { core, in };
  struct path_origin_request rq = { .core = core, .edge = core->spool ? &pushed_persist : &pushed_memory,
                                    .edge_ctx = &t, .log = core->log, .ids = in ? &in->ids : &other_thread_ids,
                                    .info = info, .receipt = r, .via = via };
  uint64_t ticket;
  return path_receipt_to_origin(&rq, &ticket) ? 0 : -1;
}
