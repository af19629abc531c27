/* connector_submit.c - messages into the core: a client's submit, an MO
 * from an SMSC or a message of an HTTP request is admitted, passed through
 * the plugins, routed, split, given ids and journaled, and its ack goes out
 * at once or is held (the soft limit, the journal).
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
#include "sms_text.h"
#include "strutil.h"
#include "scts.h"

/* How long an ack is held above max_total_queue_soft. */
#define SLOW_ACK_MS 100

/* ---- server side: submits in ---- */

void connector_respond(struct instance *in, uint32_t ref, uint32_t raw_status, enum proto_op op,
                       enum proto_status status, const char *msgid)
{
  struct proto_pdu resp;
  memset(&resp, 0, sizeof resp);
  resp.op = op;
  resp.ref = ref;
  resp.raw_status = raw_status;
  resp.status = status;
  if (msgid)
    str_copy(resp.msgid, sizeof resp.msgid, msgid);   /* 64 characters at most */
  connector_answer(in, &resp);
}

void connector_answer(struct instance *in, const struct proto_pdu *resp)
{
  if (resp->status != PROTO_OK)
    count_one(&in->live.refused);
  /* An instance ending (or between sessions) has nobody to answer. */
  if (in->session)
    session_respond(in->session, resp);
}

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

/* The gateway's verdict as an HTTP client is told it. */
static enum http_codec_outcome http_outcome(enum proto_status status)
{
  switch (status) {
  case PROTO_OK: return HTTP_CODEC_ACCEPTED;
  case PROTO_E_THROTTLED: return HTTP_CODEC_THROTTLED;
  case PROTO_E_QUEUE_FULL:
  case PROTO_E_TEMPORARY: return HTTP_CODEC_TEMPORARY;
  case PROTO_E_ADDRESS: return HTTP_CODEC_NO_ROUTE;
  case PROTO_E_CREDIT: return HTTP_CODEC_NO_CREDIT;
  default: return HTTP_CODEC_REJECTED;
  }
}

/* Answers a request: on the session, or by completing the HTTP message
 * (its id is msgid, the decimal gateway id the origin knows it by). */
void connector_reply_to(struct instance *in, const struct reply *rp, enum proto_status status, const char *msgid)
{
  if (rp->none) {
    if (status != PROTO_OK)
      count_one(&in->live.refused);
    return;
  }
  if (!rp->http) {
    connector_respond(in, rp->ref, rp->raw_status, rp->op, status, msgid);
    return;
  }
  if (status != PROTO_OK)
    count_one(&in->live.refused);
  http_server_complete(rp->completion, http_outcome(status), msgid ? strtoull(msgid, NULL, 10) : 0);
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
  if (!is_server(out))
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
  if (!is_server(c) && c->cfg->max_queue && queue_count(&c->out) >= c->cfg->max_queue)
    return "its queue is full (max_queue)";
  return NULL;
}

/* For the router's groups. */
static bool connector_usable(void *ctx, int index)
{
  return !connector_unusable(core_connector(ctx, (unsigned)index));
}

/* A message longer than one SMS (and not already a part of one) is split
 * into concatenated parts here, after routing, so that every part takes the
 * route the whole message took and no out protocol has to carry more than
 * one SMS. Which parts ask for a receipt is the out connector's policy
 * (long_receipts): the last only (the origin hears when its last part is
 * delivered), or every part (combined into one for the origin, or passed
 * on each). Parts get ids of their own; all carry the origin's reference.
 * Returns the list
 * of parts (the message itself when it fits), or an empty one with *refusal
 * set: PROTO_E_TOO_LONG beyond the longest concatenation (255 parts),
 * PROTO_E_TEMPORARY when out of memory. */
static struct qlist split_message(struct instance *in, struct msg *m, enum config_long_receipts policy,
                                  enum proto_status *refusal)
{
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
  static _Thread_local struct sms_text_segment segs[SMS_TEXT_SEGMENTS_MAX];
  n = sms_text_split(segs, SMS_TEXT_SEGMENTS_MAX, &p, SMS_TEXT_REF8, in->concat_ref++);
  for (int i = 0; i < n; i++) {
    struct msg part = *m;
    part.udh = segs[i].udh;
    part.udh_len = (uint16_t)segs[i].udh_len;
    part.data = segs[i].data;
    part.data_len = (uint32_t)segs[i].len;
    if (i > 0)
      part.id = ids_next(&in->conn->core->ids, &in->ids);
    if (i < n - 1 && policy == CONFIG_LONG_LAST)
      part.dlr_mask = 0;
    if (!(it = qitem_new(QITEM_MSG)) || !(it->msg = msg_clone(&part))) {
      free(it);
      while (parts.head) {
        struct qitem *next = parts.head->next;
        qitem_free(parts.head);
        parts.head = next;
      }
      return (struct qlist){ 0 };
    }
    qlist_append(&parts, it);
  }
  return parts;
}

/* The client connector (an SMSC link) called name, or -1. */
static int smsc_connector(struct core *core, const char *name)
{
  for (unsigned i = 0; i < core->n_connectors; i++) {
    struct connector *c = core_connector(core, i);
    if (!is_server(c) && strcmp(c->cfg->name, name) == 0)
      return (int)i;
  }
  return -1;
}

/* A session whose account is past its max_rate is not read until its
 * budget takes a submit again: a client that sends into it as fast as it
 * is refused would otherwise cost a core in refusals (doc/limits.md). */
static void hold_until_budget(struct instance *in, int account, uint64_t now_ns)
{
  uint64_t wait_ns = accounts_rate_wait_ns(in->conn->core->accounts, account, now_ns);
  if (in->session)
    session_hold_input(in->session, (unsigned)((wait_ns + 999999) / 1000000));
}

/* A message refused on its way in: counted by reason (the totals and the
 * connector's), then answered with status. */
static void refuse(struct instance *in, const struct reply *rp, enum core_refusal why, enum proto_status status)
{
  core_refused(in->conn->core, (int)in->conn->index, why);
  connector_reply_to(in, rp, status, NULL);
}

/* Admission, routing, ids, splitting, then the ack; inside core_enter, so
 * that the plugins and the router it uses stay in place. */
static void accept_message(struct instance *in, const struct msg *msg, const char *origin_user, int account,
                           const struct reply *rp)
{
  struct connector *c = in->conn;
  struct core *core = c->core;
  count_one(&in->live.submits_in);
  uint64_t received_ns = clock_now_ns();
  /* The account's own limits first: the cheapest refusals. */
  struct msg head = *msg;
  struct msg *m = &head;
  enum proto_status limits = accounts_admit(core->accounts, account, m, received_ns);
  if (limits != PROTO_OK) {
    LOGD(in->log, "submit from %s to %s refused: %s", origin_user, msg->dst.addr, proto_status_name(limits));
    refuse(in, rp, limits == PROTO_E_THROTTLED ? CORE_REFUSED_RATE : CORE_REFUSED_ACCOUNT_LIMIT, limits);
    if (limits == PROTO_E_THROTTLED && !rp->http)
      hold_until_budget(in, account, received_ns);
    return;
  }
  enum core_admit admit = atomic_load(&in->phase) != PHASE_RUN ? CORE_ADMIT_FULL : core_admit(core);
  if (admit == CORE_ADMIT_FULL) {
    LOGD(in->log, "submit to %s refused: queue full", msg->dst.addr);
    refuse(in, rp, CORE_REFUSED_QUEUE_FULL, PROTO_E_QUEUE_FULL);
    return;
  }
  /* From here the message holds its place in in_flight (core_admit took
   * it); every refusal below gives it back. */
  const char *user = "";
  int target = -1;
  str_copy(m->origin.user, sizeof m->origin.user, origin_user);   /* routes may name the account */
  struct plugin_host *plugins = atomic_load_explicit(&core->plugins, memory_order_acquire);
  char reason[PLUGIN_HOST_REASON_LEN];
  enum plugin_host_verdict verdict =
    plugin_host_before_receive(plugins, m, c->cfg->name, origin_user, reason, sizeof reason);
  if (verdict == PLUGIN_HOST_ACCEPT)
    verdict = plugin_host_route(plugins, m, c->cfg->name, origin_user, &target, reason,
                                sizeof reason);
  if (verdict != PLUGIN_HOST_ACCEPT) {
    LOGI(in->log, "message from %s to %s refused by %s", origin_user, m->dst.addr, reason);
    atomic_fetch_sub(&core->in_flight, 1);
    refuse(in, rp, CORE_REFUSED_PLUGIN, verdict == PLUGIN_HOST_REFUSE ? PROTO_E_PERMANENT : PROTO_E_TEMPORARY);
    return;
  }
  if (target < 0 && rp->route_to && (target = smsc_connector(core, rp->route_to)) < 0) {
    LOGI(in->log, "message from %s to %s refused: no SMSC connector named '%s'", origin_user, m->dst.addr,
         rp->route_to);
    atomic_fetch_sub(&core->in_flight, 1);
    refuse(in, rp, CORE_REFUSED_NO_ROUTE, PROTO_E_ADDRESS);
    return;
  }
  if (target < 0)
    target = router_route_user(atomic_load_explicit(&core->router, memory_order_acquire),
                               (int)c->index, m, connector_usable, core, &user);
  struct connector *out = target >= 0 ? core_connector(core, (unsigned)target) : NULL;
  struct queue *q = out ? connector_target_queue(out, user) : NULL;
  if (!q) {
    LOGI(in->log, "message from %s to %s refused: no route", origin_user,
         m->dst.addr);
    atomic_fetch_sub(&core->in_flight, 1);
    refuse(in, rp, CORE_REFUSED_NO_ROUTE, PROTO_E_ADDRESS);
    return;
  }
  if (out->cfg->max_queue && queue_count(q) >= out->cfg->max_queue) {
    LOGD(in->log, "submit to %s refused: queue of %s full (%u)", msg->dst.addr,
         out->cfg->name, out->cfg->max_queue);
    atomic_fetch_sub(&core->in_flight, 1);
    refuse(in, rp, CORE_REFUSED_CONNECTOR_QUEUE_FULL, PROTO_E_QUEUE_FULL);
    return;
  }
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  m->id = ids_next(&core->ids, &in->ids);
  m->received_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
  msg_resolve_times(m, now.tv_sec);
  m->origin.connector = (uint16_t)c->index;
  m->origin.instance = (uint16_t)in->index;
  str_copy(m->origin.user, sizeof m->origin.user, origin_user);
  enum proto_status refusal = PROTO_E_TEMPORARY;
  struct qlist parts = origin_ref(in, m) == 0 ? split_message(in, m, out->cfg->long_receipts, &refusal) : (struct qlist){ 0 };
  if (!parts.count) {
    atomic_fetch_sub(&core->in_flight, 1);
    if (refusal == PROTO_E_TOO_LONG)
      LOGI(in->log, "message from %s to %s refused: %u octets need more than %d parts", origin_user,
           m->dst.addr, m->data_len, SMS_TEXT_SEGMENTS_MAX);
    refuse(in, rp, refusal == PROTO_E_TOO_LONG ? CORE_REFUSED_TOO_LONG : CORE_REFUSED_OTHER, refusal);
    return;
  }
  /* Credit per part, all or none; each part carries the epoch it was
   * taken in, so that the journal can tell what a crash left. */
  uint32_t epoch;
  enum proto_status credit = accounts_credit_take(core->accounts, account, (unsigned)parts.count, &epoch);
  if (credit != PROTO_OK) {
    while (parts.head) {
      struct qitem *next = parts.head->next;
      qitem_free(parts.head);
      parts.head = next;
    }
    atomic_fetch_sub(&core->in_flight, 1);
    LOGD(in->log, "message from %s to %s refused: %s", origin_user, m->dst.addr,
         credit == PROTO_E_CREDIT ? "credit used up" : "credit batch taken, waiting for its push");
    refuse(in, rp, CORE_REFUSED_CREDIT, credit);
    return;
  }
  if (parts.count > 1)
    connector_join_parts(core, &parts, out->index);
  for (struct qitem *it = parts.head; it; it = it->next)
    it->msg->credit_epoch = epoch;
  /* With persist on, each part is journaled and the ack waits until the
   * records are durable: an acked message survives any crash. */
  uint64_t ticket = 1;
  for (struct qitem *it = parts.head; it && core->spool; it = it->next) {
    struct spool_record rec = { .type = SPOOL_REC_MSG, .id = it->msg->id,
                                .target = (uint16_t)target, .msg = it->msg };
    uint64_t t = connector_journal(core, &rec);
    if (!t) {
      /* The journal refuses (disk full, I/O error): never ack what is not
       * stored. Parts already journaled are marked finished. */
      for (struct qitem *done = parts.head; done != it; done = done->next)
        connector_journal_msg_event(core, SPOOL_REC_FINISHED, done->msg->id, 0, NULL);
      if (epoch)
        accounts_credit_give_back(core->accounts, origin_user, (unsigned)parts.count);
      while (parts.head) {
        struct qitem *next = parts.head->next;
        qitem_free(parts.head);
        parts.head = next;
      }
      atomic_fetch_sub(&core->in_flight, 1);
      LOGD(in->log, "message to %s refused: the journal cannot write", msg->dst.addr);
      refuse(in, rp, CORE_REFUSED_JOURNAL, PROTO_E_TEMPORARY);
      return;
    }
    ticket = t;
  }
  if (parts.count > 1)
    atomic_fetch_add(&core->in_flight, parts.count - 1);
  atomic_fetch_add(&core->stats.received, 1);
  for (struct qitem *it = parts.head; it; it = it->next) {
    history_add(core->history, it->msg->id, HISTORY_RECEIVED, (uint16_t)c->index, 0, 0, m->origin.user);
    history_add(core->history, it->msg->id, HISTORY_QUEUED, (uint16_t)target, 0, 0, user);
    history_add(core->history, it->msg->id, HISTORY_ADDRESSED, (uint16_t)c->index, 0, 0, it->msg->dst.addr);
    core_log_event(core, DB_LOG_ACCEPTED, it->msg, target, NULL, 0, 0);
  }
  LOGD2(in->log, "accepted %" PRIu64 " from %s: %s -> %s, %u octets in %zu part%s, receipt mask %u, route %s",
        m->id, m->origin.user, m->src.addr, m->dst.addr, m->data_len, parts.count,
        parts.count == 1 ? "" : "s", m->dlr_mask, out->cfg->name);
  for (struct qitem *part = parts.head, *next, *it; part; part = next) {
    next = part->next;
    it = part;
    if (connector_hold(core, &it, (unsigned)target, now.tv_sec) == CONNECTOR_NOT_HELD)
      connector_stage(in, q, it);
  }
  if (admit == CORE_ADMIT_SLOW)
    atomic_fetch_add(&core->stats.slowed, 1);
  if (admit == CORE_ADMIT_SLOW || core->spool)
    connector_hold_ack(in, rp, m->origin.ref, admit == CORE_ADMIT_SLOW ? SLOW_ACK_MS : 0, ticket,
                       received_ns);
  else {
    connector_reply_to(in, rp, PROTO_OK, m->origin.ref);
    connector_latency_record(&in->counted.ack, (clock_now_ns() - received_ns) / 1000);
  }
}

/* Takes a message into the core: a client's submit (server connectors) or
 * an MO from an SMSC (client connectors, answered with resp_op
 * DELIVER_RESP). */
void connector_accept_message(struct instance *in, const struct msg *msg, const char *origin_user, int account,
                              const struct reply *rp)
{
  core_enter(in->conn->core);
  accept_message(in, msg, origin_user, account, rp);
  core_leave(in->conn->core);
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
static bool move_message(struct core *core, struct qitem *it, const struct connector *from, int t,
                         struct queue *q, const char *why)
{
  struct spool_record rec = { .type = SPOOL_REC_MSG, .id = it->msg->id, .target = (uint16_t)t,
                              .msg = it->msg, .moved = true };
  char detail[HISTORY_DETAIL_LEN];
  if (core->spool && !connector_journal(core, &rec))
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

bool connector_reroute(struct connector *c, struct qitem *it, const char *why)
{
  struct move d = { c->core, (int)c->index, 0 };
  struct queue *q = NULL;
  it->refused_by |= connector_bit(c->index);
  int t = move_target(&d, it, &q);
  if (t < 0 || !move_message(c->core, it, c, t, q, why))
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
  if (is_server(c))
    return -1;
  /* What stays is put back only at the end, so each batch taken is new. */
  while (memset(&l, 0, sizeof l), queue_take(&c->out, PUMP_BATCH, &l))
    for (struct qitem *it = l.head, *next; it; it = next) {
      struct queue *q = NULL;
      next = it->next;
      int t = move_target(&d, it, &q);
      if (t >= 0 && move_message(c->core, it, c, t, q, "drained"))
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
