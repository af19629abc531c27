/* connector_submit.c - messages into the core: a client's submit, an MO
 * from an SMSC or a message of an HTTP request goes through the message
 * path (server/path/) with an instance as its edge; the answers, at once
 * or held (the soft limit, the journal); and messages moved between
 * connectors (drain, reroute).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "clock.h"
#include "account.h"
#include "connector_internal.h"
#include "path.h"
#include "strutil.h"
#include "scts.h"

/* ---- answers ---- */

/* The id the client will know the message by: UCP "AdC:SCTS", CIMD2
 * "021:060" (unique per recipient), SMPP our message id in decimal. -1 when no SCTS can be
 * handed out now (past 2069, or its ceiling cannot be noted). */
static int origin_ref(struct instance *in, struct msg *m)
{
  struct connector *c = in->conn;
  struct str_out ref = str_out(m->origin.ref, sizeof m->origin.ref);
  if (!c->scts) {
    str_put_dec(&ref, m->id, 1);
    return 0;
  }
  char scts[13];
  /* (AdC, SCTS) must stay unique across a restart too (core_set_scts_floor,
   * core_scts_handing). */
  int64_t now = m->received_ms / 1000;
  if (now < c->core->scts_floor)
    now = c->core->scts_floor;
  pthread_mutex_lock(&c->scts_lock);
  int rc = scts_next(c->scts, m->dst.addr, now, scts);
  if (rc == 0)
    rc = core_scts_handing(c->core, scts_last(c->scts));
  pthread_mutex_unlock(&c->scts_lock);
  if (rc != 0)
    return -1;
  /* The recipient as the client wrote it: a UCP or CIMD2 recipient is
   * international only when it came with a '+'. */
  if (m->dst.ton == MSG_TON_INTERNATIONAL)
    str_put(&ref, "+", 1);
  str_put(&ref, m->dst.addr, strnlen(m->dst.addr, 32));
  str_put(&ref, ":", 1);
  str_puts(&ref, scts);
  return 0;
}

void connector_reply_to(struct instance *in, const struct reply *rp, enum proto_status status, const char *msgid)
{
  if (rp->none || !in->conn->ops->answer) {
    if (status != PROTO_OK)
      count_one(&in->live.refused);
    return;
  }
  in->conn->ops->answer(in, rp, status, msgid);
}

/* Holds an ack until due_in_ms have passed (the soft limit) and, with
 * persist on, until the journal says ticket is durable. */
void connector_hold_ack(struct instance *in, const struct reply *rp, const char *msgid, unsigned due_in_ms,
                        uint64_t ticket, uint64_t received_ns)
{
  struct held_acks *q = &in->held;
  if (q->count == q->cap) {
    size_t cap = q->cap ? q->cap * 2 : 256;
    struct held_ack *grown = malloc(cap * sizeof *grown);
    if (!grown) {
      connector_reply_to(in, rp, PROTO_E_TEMPORARY, NULL);
      return;
    }
    for (size_t i = 0; i < q->count; i++)
      grown[i] = q->slots[(q->head + i) & (q->cap - 1)];
    free(q->slots);
    q->slots = grown;
    q->cap = cap;
    q->head = 0;
  }
  struct held_ack *h = &q->slots[(q->head + q->count++) & (q->cap - 1)];
  h->reply = *rp;
  h->due_ms = evloop_now_ms(in->loop) + due_in_ms;
  h->ticket = ticket;
  h->refused = false;
  h->received_ns = received_ns;
  str_copy(h->msgid, sizeof h->msgid, msgid);
  in->held_new++;
  if (q->count == 1)
    atomic_store(&in->held_ticket, ticket);
}

void connector_release_held_acks(struct instance *in, bool all)
{
  struct held_acks *q = &in->held;
  connector_journal_flush(in);
  uint64_t now = evloop_now_ms(in->loop);
  struct spool *spool = in->conn->core->spool;
  uint64_t durable = spool ? spool_durable(spool) : UINT64_MAX;
  /* Tickets grow along the ring, so the first one not ready stops it. */
  while (q->count) {
    struct held_ack *h = &q->slots[q->head];
    if (!all && (h->due_ms > now || h->ticket > durable))
      break;
    if (h->refused) {
      core_refused(in->conn->core, (int)in->conn->index, CORE_REFUSED_JOURNAL);
      connector_reply_to(in, &h->reply, PROTO_E_TEMPORARY, NULL);
    } else
      connector_reply_to(in, &h->reply, PROTO_OK, h->msgid[0] ? h->msgid : NULL);
    if (h->received_ns)
      connector_latency_record(&in->counted.ack, (clock_now_ns() - h->received_ns) / 1000);
    q->head = (q->head + 1) & (q->cap - 1);
    q->count--;
  }
  /* Sequentially consistent, as spool_durable(): published, then the
   * durable ticket read again by the next call, so a commit in between
   * either sees what we wait for or is seen by us. */
  atomic_store(&in->held_ticket, q->count ? q->slots[q->head].ticket : 0);
}

/* Where a routed message waits: a client connector's queue, or for a
 * server connector the queue of the account the route names (or of its
 * only account). NULL when the account is not there. */
struct queue *connector_target_queue(struct connector *out, const char *user)
{
  if (!out->ops->account_queues)
    return &out->out;
  if (user[0])
    return connector_user_queue(out, user);
  int sole = accounts_sole(out->core->accounts, out->index);
  return sole >= 0 ? &out->user_queues[sole] : NULL;
}

const char *connector_unusable(struct connector *c)
{
  if (connector_paused(c))
    return "paused";
  if (connector_bound(c) == 0)
    return "no session bound";
  if (!c->ops->account_queues && c->cfg->max_queue && queue_count(&c->out) >= c->cfg->max_queue)
    return "its queue is full (max_queue)";
  return NULL;
}

/* For the router's groups. */
static bool connector_usable(void *ctx, int index)
{
  return !connector_unusable(core_connector(ctx, (unsigned)index));
}

/* The client connector (an SMSC link) called name, or -1. */
static int smsc_connector(struct core *core, const char *name)
{
  for (unsigned i = 0; i < core->n_connectors; i++) {
    struct connector *c = core_connector(core, i);
    if (!c->ops->account_queues && strcmp(c->cfg->name, name) == 0)
      return (int)i;
  }
  return -1;
}

/* ---- the message path's edge: what it asks of an instance ---- */

static int edge_name(void *ctx, struct msg *m)
{
  return origin_ref(ctx, m);
}

static int edge_smsc_named(void *ctx, const char *name)
{
  struct instance *in = ctx;
  return smsc_connector(in->conn->core, name);
}

static bool edge_usable(void *ctx, int index)
{
  struct instance *in = ctx;
  return connector_usable(in->conn->core, index);
}

static struct queue *edge_queue_of(void *ctx, unsigned target, const char *user)
{
  struct instance *in = ctx;
  return target < in->conn->core->n_connectors ? connector_target_queue(core_connector(in->conn->core, target), user)
                                               : NULL;
}

static void edge_parts_made(void *ctx, const struct qlist *parts, unsigned target)
{
  struct instance *in = ctx;
  path_join_parts(in->conn->core, parts, target);
}

static uint64_t edge_journal(void *ctx, const struct spool_record *rec)
{
  struct instance *in = ctx;
  return connector_journal(in->conn->core, in, rec);
}

/* Held until its time, joined with its siblings, or staged for its queue. */
static void edge_hand_over(void *ctx, unsigned target, struct queue *q, struct qitem *it, int64_t now)
{
  struct instance *in = ctx;
  if (connector_hold(in->conn->core, in, &it, target, now) == CONNECTOR_NOT_HELD)
    connector_stage(in, q, it);
}

static void edge_answer(void *ctx, const void *reply, enum proto_status status, const char *ref, unsigned hold_ms,
                        uint64_t ticket, uint64_t received_ns)
{
  struct instance *in = ctx;
  const struct reply *rp = reply;
  if (status != PROTO_OK)
    connector_reply_to(in, rp, status, NULL);
  else if (hold_ms || ticket)
    connector_hold_ack(in, rp, ref, hold_ms, ticket, received_ns);
  else {
    connector_reply_to(in, rp, PROTO_OK, ref);
    connector_latency_record(&in->counted.ack, (clock_now_ns() - received_ns) / 1000);
  }
}

static const struct path_edge persist_edge = {
  .name = edge_name, .smsc_named = edge_smsc_named, .usable = edge_usable, .queue_of = edge_queue_of,
  .parts_made = edge_parts_made, .journal = edge_journal, .hand_over = edge_hand_over, .answer = edge_answer,
};
/* Persist off: no journal. */
static const struct path_edge memory_edge = {
  .name = edge_name, .smsc_named = edge_smsc_named, .usable = edge_usable, .queue_of = edge_queue_of,
  .parts_made = edge_parts_made, .hand_over = edge_hand_over, .answer = edge_answer,
};

/* Takes a message into the core: a client's submit (server connectors) or
 * an MO from an SMSC (client connectors, answered with resp_op
 * DELIVER_RESP), through the message path (server/path/). */
void connector_accept_message(struct instance *in, const struct msg *msg, const char *origin_user, int account,
                              const struct reply *rp)
{
  struct connector *c = in->conn;
  count_one(&in->live.submits_in);
  struct path_request rq = { .core = c->core, .edge = c->core->spool ? &persist_edge : &memory_edge,
                             .edge_ctx = in, .log = in->log, .connector = c->index, .instance = in->index,
                             .ids = &in->ids, .concat_ref = &in->concat_ref, .msg = msg, .user = origin_user,
                             .account = account, .route_to = rp->route_to,
                             .stopping = atomic_load(&in->phase) != PHASE_RUN, .reply = rp };
  struct path_verdict v;
  path_accept(&rq, &v);
  /* A submitter past its account's rate is not read until its budget
   * takes a submit again: one that sends as fast as it is refused would
   * otherwise cost a core in refusals (doc/limits.md). */
  if (v.status == PROTO_E_THROTTLED && c->ops->hold_input) {
    uint64_t wait_ns = accounts_rate_wait_ns(c->core->accounts, account, v.received_ns);
    c->ops->hold_input(in, (unsigned)((wait_ns + 999999) / 1000000));
  }
}

/* ---- moving messages between connectors: drain and reroute ---- */

/* Connectors a message may move to: usable, neither the one it leaves nor
 * one that refused it. */
struct move {
  struct core *core;
  int from;
  uint64_t refused_by;
};

static uint64_t connector_bit(unsigned index)
{
  return 1ull << (index % 64);
}

static bool usable_elsewhere(void *ctx, int index)
{
  const struct move *d = ctx;
  return index != d->from && !(d->refused_by & connector_bit((unsigned)index)) &&
         connector_usable(d->core, index);
}

/* Routes message it again, as usable_elsewhere allows; the connector it
 * moves to and that connector's queue for it, or -1 when it has nowhere
 * else to go (alone on its route, or no other member can take it now). */
static int move_target(struct move *d, const struct qitem *it, struct queue **q)
{
  const char *user = "";
  if (it->kind != QITEM_MSG)
    return -1;
  d->refused_by = it->refused_by;
  core_enter(d->core);
  int t = router_route_user(atomic_load_explicit(&d->core->router, memory_order_acquire),
                            it->msg->origin.connector, it->msg, usable_elsewhere, d, &user);
  core_leave(d->core);
  if (t < 0 || !usable_elsewhere(d, t))
    return -1;
  *q = connector_target_queue(core_connector(d->core, (unsigned)t), user);
  return *q ? t : -1;
}

/* Moves it, which connector from let go of, to connector t's queue q: the
 * journal learns the new connector first (after a crash the message waits
 * there), then its history (detail: where from and why) and the count.
 * False when the journal refuses: the caller keeps it. */
static bool move_message(struct core *core, struct instance *in, struct qitem *it, const struct connector *from,
                         int t, struct queue *q, const char *why)
{
  struct spool_record rec = path_moved_record(it->msg, (unsigned)t);
  char detail[HISTORY_DETAIL_LEN];
  if (core->spool && !connector_journal(core, in, &rec))
    return false;
  snprintf(detail, sizeof detail, "%.20s: %s", from->cfg->name, why);
  history_add(core->history, it->msg->id, HISTORY_REROUTED, (uint16_t)t, 0, 0, detail);
  atomic_fetch_add(&core->stats.rerouted, 1);
  LOGD(from->log, "message %" PRIu64 " to %s moved to %s: %s", it->msg->id, it->msg->dst.addr,
       core_connector(core, (unsigned)t)->cfg->name, why);
  struct qlist one = { 0 };
  qlist_append(&one, it);
  queue_push(q, &one, 0);
  return true;
}

bool connector_reroute(struct connector *c, struct instance *in, struct qitem *it, const char *why)
{
  struct move d = { c->core, (int)c->index, 0 };
  struct queue *q = NULL;
  it->refused_by |= connector_bit(c->index);
  int t = move_target(&d, it, &q);
  if (t < 0 || !move_message(c->core, in, it, c, t, q, why))
    return false;
  LOGI(c->log, "message %" PRIu64 " to %s rerouted to %s: %s", it->msg->id, it->msg->dst.addr,
       core_connector(c->core, (unsigned)t)->cfg->name, why);
  return true;
}

int connector_drain(struct connector *c, size_t *moved, size_t *stayed)
{
  struct move d = { c->core, (int)c->index, 0 };
  struct qlist l, keep = { 0 };
  *moved = *stayed = 0;
  if (c->ops->account_queues)
    return -1;
  /* What stays is put back only at the end, so each batch taken is new. */
  while (memset(&l, 0, sizeof l), queue_take(&c->out, PUMP_BATCH, &l))
    for (struct qitem *it = l.head, *next; it; it = next) {
      struct queue *q = NULL;
      next = it->next;
      int t = move_target(&d, it, &q);
      if (t >= 0 && move_message(c->core, NULL, it, c, t, q, "drained"))
        (*moved)++;
      else
        qlist_append(&keep, it);
    }
  *stayed = keep.count;
  if (keep.head)
    connector_requeue_rest(&c->out, keep.head, keep.tail);
  LOGI(c->log, "drained: %zu messages moved to other connectors of their routes, %zu stay", *moved,
       *stayed);
  return 0;
}
