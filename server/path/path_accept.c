/* path_accept.c - a message coming in, stage by stage (path.h). Each stage
 * passes the message on or refuses it with a status and a reason; what the
 * stages before did is undone in one place, unwind().
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "account.h"
#include "clock.h"
#include "journal.h"
#include "log.h"
#include "path.h"
#include "routing.h"
#include "sms_text.h"
#include "strutil.h"
#include "tables.h"

/* How long an ack is held above max_total_queue_soft. */
#define SLOW_ACK_MS 100

/* One message on its way: what the stages found and did, so that a
 * refusal undoes exactly that. */
struct run {
  const struct path_request *rq;
  struct core *core;
  struct msg head;                 /* the request's message, which the stages fill in */
  uint64_t received_ns;
  struct timespec now;             /* wall clock at the split: the message's received time */
  enum core_admit admit;
  bool holds_place;                /* counted in core->in_flight */
  int target;
  const char *target_user;         /* the account a route names, "" */
  struct queue *queue;
  struct qlist parts;              /* owned until staged */
  bool charged;                    /* credit taken for every part */
  uint32_t epoch;                  /* ... in this credit epoch */
  struct qitem *journaled_to;      /* a refused journal: the parts before this one are journaled */
  uint64_t ticket;                 /* the last part's journal ticket */
  /* a refusal */
  enum proto_status status;
  enum core_refusal why;
};

static const char *const stage_names[] = {
  [PATH_ADMIT] = "admit", [PATH_FILTER] = "filter", [PATH_ROUTE] = "route",     [PATH_SPLIT] = "split",
  [PATH_CHARGE] = "charge", [PATH_JOURNAL] = "journal", [PATH_STAGE] = "stage", [PATH_ACK] = "ack",
};

const char *path_stage_name(enum path_stage stage)
{
  return (unsigned)stage < sizeof stage_names / sizeof stage_names[0] ? stage_names[stage] : "?";
}

/* A stage's outcome: on to the next, or refused (r->status, r->why). */
enum step { GO, REFUSE };

static enum step refuse(struct run *r, enum proto_status status, enum core_refusal why)
{
  r->status = status;
  r->why = why;
  return REFUSE;
}

static void free_parts(struct qlist *parts)
{
  while (parts->head) {
    struct qitem *next = parts->head->next;
    qitem_free(parts->head);
    parts->head = next;
  }
  *parts = (struct qlist){ 0 };
}

/* ---- the stages ---- */

/* The account's own limits first, the cheapest refusals; then room in the
 * gateway, from which on the message holds a place in in_flight. */
static enum step admit(struct run *r)
{
  const struct path_request *rq = r->rq;
  enum proto_status limits = accounts_admit(r->core->accounts, rq->account, &r->head, r->received_ns);
  if (limits != PROTO_OK) {
    LOGD(rq->log, "submit from %s to %s refused: %s", rq->user, rq->msg->dst.addr, proto_status_name(limits));
    return refuse(r, limits, limits == PROTO_E_THROTTLED ? CORE_REFUSED_RATE : CORE_REFUSED_ACCOUNT_LIMIT);
  }
  r->admit = rq->stopping ? CORE_ADMIT_FULL : core_admit(r->core);
  if (r->admit == CORE_ADMIT_FULL) {
    LOGD(rq->log, "submit to %s refused: queue full", rq->msg->dst.addr);
    return refuse(r, PROTO_E_QUEUE_FULL, CORE_REFUSED_QUEUE_FULL);
  }
  r->holds_place = true;
  return GO;
}

/* The plugins: before_receive may refuse or rewrite, route may pick. */
static enum step filter(struct run *r)
{
  const struct path_request *rq = r->rq;
  const char *connector = r->core->cfg->connectors[rq->connector].name;
  struct plugin_host *plugins = atomic_load_explicit(&r->core->plugins, memory_order_acquire);
  char reason[PLUGIN_HOST_REASON_LEN];
  str_copy(r->head.origin.user, sizeof r->head.origin.user, rq->user);   /* routes may name the account */
  enum plugin_host_verdict verdict =
    plugin_host_before_receive(plugins, &r->head, connector, rq->user, reason, sizeof reason);
  if (verdict == PLUGIN_HOST_ACCEPT)
    verdict = plugin_host_route(plugins, &r->head, connector, rq->user, &r->target, reason, sizeof reason);
  if (verdict == PLUGIN_HOST_ACCEPT)
    return GO;
  LOGI(rq->log, "message from %s to %s refused by %s", rq->user, r->head.dst.addr, reason);
  return refuse(r, verdict == PLUGIN_HOST_REFUSE ? PROTO_E_PERMANENT : PROTO_E_TEMPORARY, CORE_REFUSED_PLUGIN);
}

static bool usable(void *ctx, int index)
{
  const struct run *r = ctx;
  return r->rq->edge->usable(r->rq->edge_ctx, index);
}

/* Where it goes: a plugin's pick, the origin's SMSC, or the routes; then
 * room in that connector's queue. */
static enum step route(struct run *r)
{
  const struct path_request *rq = r->rq;
  r->target_user = "";
  if (r->target < 0 && rq->route_to && (r->target = rq->edge->smsc_named(rq->edge_ctx, rq->route_to)) < 0) {
    LOGI(rq->log, "message from %s to %s refused: no SMSC connector named '%s'", rq->user, r->head.dst.addr,
         rq->route_to);
    return refuse(r, PROTO_E_ADDRESS, CORE_REFUSED_NO_ROUTE);
  }
  if (r->target < 0)
    r->target = router_route_user(atomic_load_explicit(&r->core->router, memory_order_acquire),
                                  (int)rq->connector, &r->head, usable, r, &r->target_user);
  if (r->target >= 0 && (unsigned)r->target < r->core->cfg->n_connectors)
    r->queue = rq->edge->queue_of(rq->edge_ctx, (unsigned)r->target, r->target_user);
  if (!r->queue) {
    LOGI(rq->log, "message from %s to %s refused: no route", rq->user, r->head.dst.addr);
    return refuse(r, PROTO_E_ADDRESS, CORE_REFUSED_NO_ROUTE);
  }
  const struct config_connector *out = &r->core->cfg->connectors[r->target];
  if (out->max_queue && queue_count(r->queue) >= out->max_queue) {
    LOGD(rq->log, "submit to %s refused: queue of %s full (%u)", rq->msg->dst.addr, out->name, out->max_queue);
    return refuse(r, PROTO_E_QUEUE_FULL, CORE_REFUSED_CONNECTOR_QUEUE_FULL);
  }
  return GO;
}

/* A message longer than one SMS (and not already a part of one) is split
 * into concatenated parts here, after routing, so that every part takes the
 * route the whole message took and no out protocol has to carry more than
 * one SMS. Which parts ask for a receipt is the out connector's policy
 * (long_receipts): the last only (the origin hears when its last part is
 * delivered), or every part (combined into one for the origin, or passed
 * on each). Parts get ids of their own; all carry the origin's reference.
 * The parts (the message itself when it fits), or none with *refusal set:
 * PROTO_E_TOO_LONG beyond the longest concatenation (255 parts),
 * PROTO_E_TEMPORARY when out of memory. */
static struct qlist split_parts(struct run *r, enum config_long_receipts policy, enum proto_status *refusal)
{
  struct msg *m = &r->head;
  struct qlist parts = { 0 };
  struct sms_text_payload p = { .coding = (enum sms_text_coding)m->coding, .data = m->data,
                                .len = m->data_len, .udh = m->udh, .udh_len = m->udh_len };
  struct sms_text_concat concat = { 0 };
  int n = 1;
  if (m->coding == SMS_TEXT_GSM7 || m->coding == SMS_TEXT_8BIT || m->coding == SMS_TEXT_UCS2) {
    bool has_concat = msg_concat(m, &concat);
    if (!has_concat)
      n = sms_text_segment_count(&p, SMS_TEXT_REF8);
  }
  *refusal = PROTO_E_TEMPORARY;
  if (n == SMS_TEXT_E_TOO_LONG) {
    *refusal = PROTO_E_TOO_LONG;
    return parts;
  }
  struct qitem *it;
  if (n <= 1) {
    /* Fits, or cannot be split (unknown coding, bad UDH): it goes as it is. */
    if ((it = qitem_new(QITEM_MSG)) && (it->msg = msg_clone(m)))
      qlist_append(&parts, it);
    else
      free(it);
    return parts;
  }
  struct sms_text_segment *segs = malloc((size_t)n * sizeof *segs);
  if (!segs)
    return parts;
  n = sms_text_split(segs, (size_t)n, &p, SMS_TEXT_REF8, (*r->rq->concat_ref)++);
  for (int i = 0; i < n; i++) {
    struct msg part = *m;
    part.udh = segs[i].udh;
    part.udh_len = (uint16_t)segs[i].udh_len;
    part.data = segs[i].data;
    part.data_len = (uint32_t)segs[i].len;
    if (i > 0)
      part.id = ids_next(&r->core->ids, r->rq->ids);
    if (i < n - 1 && policy == CONFIG_LONG_LAST)
      part.dlr_mask = 0;
    if (!(it = qitem_new(QITEM_MSG)) || !(it->msg = msg_clone(&part))) {
      free(it);
      free_parts(&parts);
      break;
    }
    qlist_append(&parts, it);
  }
  free(segs);
  return parts;
}

/* Its id, the id its origin knows it by, then its parts. */
static enum step split(struct run *r)
{
  const struct path_request *rq = r->rq;
  struct msg *m = &r->head;
  clock_gettime(CLOCK_REALTIME, &r->now);
  m->id = ids_next(&r->core->ids, rq->ids);
  m->received_ms = (int64_t)r->now.tv_sec * 1000 + r->now.tv_nsec / 1000000;
  msg_resolve_times(m, r->now.tv_sec);
  m->origin.connector = (uint16_t)rq->connector;
  m->origin.instance = (uint16_t)rq->instance;
  str_copy(m->origin.user, sizeof m->origin.user, rq->user);
  enum proto_status refusal = PROTO_E_TEMPORARY;
  bool named = rq->edge->name ? rq->edge->name(rq->edge_ctx, m) == 0
                              : (snprintf(m->origin.ref, sizeof m->origin.ref, "%" PRIu64, m->id), true);
  if (named)
    r->parts = split_parts(r, r->core->cfg->connectors[r->target].long_receipts, &refusal);
  if (r->parts.count)
    return GO;
  if (refusal == PROTO_E_TOO_LONG) {
    LOGI(rq->log, "message from %s to %s refused: %u octets need more than %d parts", rq->user, m->dst.addr,
         m->data_len, SMS_TEXT_SEGMENTS_MAX);
    return refuse(r, refusal, CORE_REFUSED_TOO_LONG);
  }
  return refuse(r, refusal, CORE_REFUSED_OTHER);
}

/* Credit per part, all or none; each part carries the epoch it was taken
 * in, so that the journal can tell what a crash left. */
static enum step charge(struct run *r)
{
  const struct path_request *rq = r->rq;
  enum proto_status credit =
    accounts_credit_take(r->core->accounts, rq->account, (unsigned)r->parts.count, &r->epoch);
  if (credit != PROTO_OK) {
    LOGD(rq->log, "message from %s to %s refused: %s", rq->user, r->head.dst.addr,
         credit == PROTO_E_CREDIT ? "credit used up" : "credit batch taken, waiting for its push");
    return refuse(r, credit, CORE_REFUSED_CREDIT);
  }
  r->charged = true;
  for (struct qitem *it = r->parts.head; it; it = it->next)
    it->msg->credit_epoch = r->epoch;
  return GO;
}

/* With persist on, each part is journaled and the ack waits until the
 * records are durable: an acked message survives any crash. */
static enum step journal(struct run *r)
{
  const struct path_request *rq = r->rq;
  if (r->parts.count > 1 && rq->edge->parts_made)
    rq->edge->parts_made(rq->edge_ctx, &r->parts, (unsigned)r->target);
  if (!rq->edge->journal)   /* persist off */
    return GO;
  for (struct qitem *it = r->parts.head; it; it = it->next) {
    struct spool_record rec = { .type = SPOOL_REC_MSG, .id = it->msg->id, .target = (uint16_t)r->target,
                                .msg = it->msg };
    uint64_t ticket = rq->edge->journal(rq->edge_ctx, &rec);
    if (!ticket) {
      /* The journal refuses (disk full, I/O error): never ack what is not
       * stored. The parts before this one are journaled (unwind). */
      r->journaled_to = it;
      LOGD(rq->log, "message to %s refused: the journal cannot write", rq->msg->dst.addr);
      return refuse(r, PROTO_E_TEMPORARY, CORE_REFUSED_JOURNAL);
    }
    r->ticket = ticket;
  }
  return GO;
}

/* In its history and the message log, then each part to its target. */
static enum step stage(struct run *r)
{
  const struct path_request *rq = r->rq;
  struct core *core = r->core;
  if (r->parts.count > 1)
    atomic_fetch_add(&core->in_flight, r->parts.count - 1);
  atomic_fetch_add(&core->stats.received, 1);
  for (struct qitem *it = r->parts.head; it; it = it->next) {
    history_add(core->history, it->msg->id, HISTORY_RECEIVED, (uint16_t)rq->connector, 0, 0, r->head.origin.user);
    history_add(core->history, it->msg->id, HISTORY_QUEUED, (uint16_t)r->target, 0, 0, r->target_user);
    history_add(core->history, it->msg->id, HISTORY_ADDRESSED, (uint16_t)rq->connector, 0, 0, it->msg->dst.addr);
    core_log_event(core, DB_LOG_ACCEPTED, it->msg, r->target, NULL, 0, 0);
  }
  LOGD2(rq->log, "accepted %" PRIu64 " from %s: %s -> %s, %u octets in %zu part%s, receipt mask %u, route %s",
        r->head.id, r->head.origin.user, r->head.src.addr, r->head.dst.addr, r->head.data_len, r->parts.count,
        r->parts.count == 1 ? "" : "s", r->head.dlr_mask, core->cfg->connectors[r->target].name);
  struct qlist parts = r->parts;
  r->parts = (struct qlist){ 0 };   /* the targets' from here */
  for (struct qitem *part = parts.head, *next; part; part = next) {
    next = part->next;
    part->next = NULL;
    rq->edge->hand_over(rq->edge_ctx, (unsigned)r->target, r->queue, part, r->now.tv_sec);
  }
  return GO;
}

/* Undoes what the stages before a refusal did, latest first. */
static void unwind(struct run *r)
{
  const struct path_request *rq = r->rq;
  if (r->journaled_to)   /* the parts journaled before the refusal end there */
    for (struct qitem *it = r->parts.head; it != r->journaled_to; it = it->next)
      rq->edge->journal(rq->edge_ctx, &(struct spool_record){ .type = SPOOL_REC_FINISHED, .id = it->msg->id });
  if (r->charged && r->epoch)
    accounts_credit_give_back(r->core->accounts, rq->user, (unsigned)r->parts.count);
  free_parts(&r->parts);
  if (r->holds_place)
    atomic_fetch_sub(&r->core->in_flight, 1);
}

static enum step (*const stages[])(struct run *) = {
  [PATH_ADMIT] = admit, [PATH_FILTER] = filter, [PATH_ROUTE] = route,     [PATH_SPLIT] = split,
  [PATH_CHARGE] = charge, [PATH_JOURNAL] = journal, [PATH_STAGE] = stage,
};

void path_accept(const struct path_request *rq, struct path_verdict *v)
{
  struct run r = { .rq = rq, .core = rq->core, .head = *rq->msg, .received_ns = clock_now_ns(), .target = -1 };
  *v = (struct path_verdict){ .status = PROTO_OK, .stage = PATH_ACK, .target = -1, .received_ns = r.received_ns };
  core_enter(r.core);
  for (enum path_stage s = PATH_ADMIT; s < PATH_ACK; s++) {
    if (stages[s](&r) == GO)
      continue;
    unwind(&r);
    core_leave(r.core);
    *v = (struct path_verdict){ .status = r.status, .stage = s, .why = r.why, .target = r.target,
                                .received_ns = r.received_ns };
    core_refused(r.core, (int)rq->connector, r.why);
    rq->edge->answer(rq->edge_ctx, rq->reply, r.status, NULL, 0, 0, r.received_ns);
    return;
  }
  core_leave(r.core);
  v->id = r.head.id;
  v->target = r.target;
  if (r.admit == CORE_ADMIT_SLOW)
    atomic_fetch_add(&r.core->stats.slowed, 1);
  /* Past the soft limit the ack waits a little; with persist on, until the
   * records are durable. */
  rq->edge->answer(rq->edge_ctx, rq->reply, PROTO_OK, r.head.origin.ref, r.admit == CORE_ADMIT_SLOW ? SLOW_ACK_MS : 0,
                   rq->edge->journal ? r.ticket : 0, r.received_ns);
}

struct spool_record path_moved_record(const struct msg *m, unsigned target)
{
  return (struct spool_record){ .type = SPOOL_REC_MSG, .id = m->id, .target = (uint16_t)target, .msg = m,
                                .moved = true };
}
