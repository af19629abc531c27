/* connector_about.c - what a client asks about a message it submitted:
 * SMPP query_sm, cancel_sm and replace_sm on a server connector.
 *
 * Where the message is comes from its history (the gateway's log of recent
 * events, history_size of them): held until its time or queued, it is
 * answered, cancelled or replaced here; sent to an SMSC and awaiting its
 * receipt, the request is passed on to that SMSC when it speaks SMPP (the
 * ids translated both ways), else answered from what the gateway knows
 * (a query: ENROUTE; a cancel or replace: too late); done (delivered,
 * failed, expired, cancelled), its final state answers a query, and a
 * cancel or replace is too late. A message of another account, or one the
 * history no longer holds, is unknown (ESME_RINVMSGID): a client learns
 * nothing about what is not its own.
 *
 * A request passed on crosses threads twice: from the client's instance to
 * the SMSC connector's list (any of its instances sends it, before its
 * queued messages), and its answer back to the client's instance, which
 * responds if the same session is still there.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "clock.h"
#include "cluster.h"
#include "connector_internal.h"
#include "db.h"
#include "netutil.h"
#include "sms_text.h"
#include "strutil.h"

/* How long a request passed on may wait for a session to take it. */
#define ABOUT_WAIT_MS 10000
/* Requests waiting to be passed on to one SMSC connector, at most: a
 * client asking faster than the SMSC answers is told to slow down
 * (ESME_RTHROTTLED), and costs no memory beyond these. */
#define ABOUT_PASS_MAX 1024
/* Events of one message looked at, at most. */
#define ABOUT_EVENTS 64

enum whereabouts {
  WHERE_UNKNOWN,                   /* no history, or not the asking account's */
  WHERE_HELD,                      /* until its deferred time */
  WHERE_QUEUED,
  WHERE_SENT,                      /* at an SMSC, awaiting its receipt */
  WHERE_DONE                       /* final: state says how */
};

struct message_state {
  bool known;                      /* the history holds events of it (whoever's it is) */
  enum whereabouts where;
  unsigned connector;              /* where it waits, or where it went */
  char smsc_id[HISTORY_DETAIL_LEN];
  uint8_t state;
  uint16_t err;
  int64_t done_s;
};

/* The message's state from its history, if it is account user's on
 * connector origin. */
static void find_message(struct core *core, uint64_t id, unsigned origin, const char *user,
                         struct message_state *st)
{
  struct history_entry ev[ABOUT_EVENTS];
  size_t n = history_find(core->history, id, ev, ABOUT_EVENTS);
  memset(st, 0, sizeof *st);
  st->known = n > 0;
  bool theirs = false;
  for (size_t i = 0; i < n; i++) {
    const struct history_entry *e = &ev[i];
    switch (e->event) {
    case HISTORY_RECEIVED:
      theirs = e->connector == origin && strcmp(e->detail, user) == 0;
      break;
    case HISTORY_QUEUED:
    case HISTORY_REROUTED:
    case HISTORY_RETRY:
      st->where = WHERE_QUEUED;
      st->connector = e->connector;
      break;
    case HISTORY_SCHEDULED:
      st->where = WHERE_HELD;
      st->connector = e->connector;
      break;
    case HISTORY_SENT:
      st->connector = e->connector;
      if (core_connector(core, e->connector)->cfg->mode == CONFIG_CONN_SERVER) {
        /* Taken by a client of ours: as delivered as it gets. */
        st->where = WHERE_DONE;
        st->state = MSG_STATE_DELIVERED;
        st->done_s = e->time_ms / 1000;
      } else {
        st->where = WHERE_SENT;
        str_copy(st->smsc_id, sizeof st->smsc_id, e->detail);
      }
      break;
    case HISTORY_RECEIPT:
      if (!msg_state_final(e->state))
        break;
      /* fall through */
    case HISTORY_FAILED:
    case HISTORY_RECEIPT_GIVEN_UP:
      st->where = WHERE_DONE;
      st->state = e->event == HISTORY_RECEIPT_GIVEN_UP ? MSG_STATE_UNKNOWN
                  : e->state                           ? e->state
                                                       : MSG_STATE_REJECTED;
      st->err = (uint16_t)(e->code > 255 ? 255 : e->code);
      st->done_s = e->time_ms / 1000;
      break;
    default:
      break;
    }
  }
  if (!theirs)
    st->where = WHERE_UNKNOWN;
}

/* Answers on the instance's session (if it still has one). */
static void respond(struct instance *in, uint32_t ref, uint32_t raw_status, enum proto_op op,
                    enum proto_status status, const char *client_id, const struct msg_receipt *answer)
{
  struct proto_pdu resp;
  memset(&resp, 0, sizeof resp);
  resp.op = proto_response_op(op);
  resp.ref = ref;
  resp.raw_status = raw_status;
  resp.status = status;
  str_copy(resp.msgid, sizeof resp.msgid, client_id);
  if (answer)
    resp.receipt = *answer;
  connector_answer(in, &resp);
}

/* ---- held or queued: done here ---- */

/* The parts of a message as its client knows it (one, unless it was split
 * here): its origin, account and reference. */
struct parts_of {
  uint16_t connector;
  const char *user, *ref;
  uint64_t ids[SMS_TEXT_SEGMENTS_MAX];
  size_t n;
};

/* For queue_walk and schedule_walk. */
static void collect_part(const struct qitem *it, void *ctx)
{
  struct parts_of *p = ctx;
  const struct msg *m = it->msg;
  if (it->kind == QITEM_MSG && p->n < SMS_TEXT_SEGMENTS_MAX && m->origin.connector == p->connector &&
      strcmp(m->origin.ref, p->ref) == 0 && strcmp(m->origin.user, p->user) == 0)
    p->ids[p->n++] = m->id;
}

/* Whether m is one part of a message split into several. */
static bool is_part(const struct msg *m)
{
  struct sms_text_concat c;
  return msg_concat(m, &c) && c.total > 1;
}

/* A client's cancel of a message still held or queued on connector
 * target: its parts are dropped, as the operator's drops are, with a
 * DELETED receipt to the client if it asked. Too late when none was found
 * (sent meanwhile). */
static enum proto_status cancel_waiting(struct instance *in, const char *ref, unsigned target)
{
  static const char why[] = "cancelled by its client";
  struct core *core = in->conn->core;
  struct connector *c = core_connector(core, target);
  static _Thread_local struct parts_of parts;
  parts = (struct parts_of){ .connector = (uint16_t)in->conn->index, .user = session_user(in->session),
                             .ref = ref };
  schedule_walk(core->schedule, target, 0, SIZE_MAX, collect_part, &parts);
  for (unsigned i = 0; i < connector_queue_count(c); i++)
    queue_walk(connector_queue(c, i), 0, SIZE_MAX, collect_part, &parts);
  size_t dropped = 0;
  for (size_t i = 0; i < parts.n; i++)
    dropped += (size_t)(connector_cancel_scheduled(core, in, parts.ids[i], why) ||
                        connector_drop_message(c, in, parts.ids[i], why));
  return dropped ? PROTO_OK : PROTO_E_MESSAGE_STATE;
}

/* A client's replace of a message still held or queued on connector
 * target (one that was not split: parts cannot take a text of another
 * length): the new text and times, journaled as a later copy of it, and
 * back where it was (or held, when its new time is ahead). */
static enum proto_status replace_waiting(struct instance *in, uint64_t id, unsigned target,
                                         const struct proto_pdu *req)
{
  struct core *core = in->conn->core;
  struct connector *c = core_connector(core, target);
  unsigned where;
  struct queue *q = NULL;
  struct qitem *it = schedule_remove(core->schedule, id, &where);
  for (unsigned i = 0; !it && i < connector_queue_count(c); i++)
    if ((it = queue_remove_msg(connector_queue(c, i), id)))
      q = connector_queue(c, i);
  if (!it)
    return PROTO_E_MESSAGE_STATE;   /* sent meanwhile */
  const struct msg *old = it->msg;
  struct msg m = *old;
  m.data = req->msg.data;
  m.data_len = req->msg.data_len;
  m.dlr_mask = req->msg.dlr_mask;
  if (req->msg.validity)
    m.validity = req->msg.validity;
  if (req->msg.deferred)
    m.deferred = req->msg.deferred;
  msg_resolve_times(&m, time(NULL));
  struct sms_text_payload p = { .coding = (enum sms_text_coding)m.coding, .data = m.data, .len = m.data_len,
                                .udh = m.udh, .udh_len = m.udh_len };
  enum proto_status status = PROTO_OK;
  struct msg *fresh = NULL;
  if (is_part(old))
    status = PROTO_E_MESSAGE_STATE;
  else if (req->msg.src.addr[0] && strcmp(req->msg.src.addr, old->src.addr) != 0)
    status = PROTO_E_NO_MESSAGE;
  else if (sms_text_segment_count(&p, SMS_TEXT_REF8) != 1)
    status = PROTO_E_TOO_LONG;
  else if (!(fresh = msg_clone(&m)))
    status = PROTO_E_TEMPORARY;
  if (fresh) {
    struct spool_record rec = { .type = SPOOL_REC_MSG, .id = fresh->id, .target = (uint16_t)target,
                                .msg = fresh, .moved = true };
    if (core->spool && connector_journal(core, in, &rec) == 0) {
      msg_free(fresh);
      status = PROTO_E_TEMPORARY;
    } else {
      msg_free(it->msg);
      it->msg = fresh;
      history_add(core->history, id, HISTORY_REPLACED, (uint16_t)target, 0, 0, session_user(in->session));
    }
  }
  if (connector_hold(core, in, &it, target, time(NULL)) != CONNECTOR_NOT_HELD)
    return status;
  if (!q) {
    /* Held until now, due now: as the schedule lets it go. */
    it->msg->deferred = 0;
    connector_release_held(core, in, target, it);
    return status;
  }
  struct qlist l = { 0 };
  qlist_append(&l, it);
  queue_push(q, &l, 1);
  return status;
}

/* ---- sent: passed on to the SMSC ---- */

/* Whether connector c can pass a request on to its SMSC now. */
static bool passes_on(struct connector *c)
{
  return c->ops->smsc_session && c->cfg->proto->passes_about && connector_bound(c) > 0;
}

static void pass_on(struct instance *in, struct connector *smsc, const struct proto_pdu *req,
                    const struct message_state *st)
{
  struct about_request *r = calloc(1, sizeof *r);
  struct qitem *it = r ? qitem_new(QITEM_ABOUT) : NULL;
  if (!it) {
    free(r);
    respond(in, req->ref, req->raw_status, req->op, PROTO_E_TEMPORARY, req->msgid, NULL);
    return;
  }
  it->about = r;
  r->item = it;
  r->op = req->op;
  str_copy(r->smsc_id, sizeof r->smsc_id, st->smsc_id);
  str_copy(r->client_id, sizeof r->client_id, req->msgid);
  r->src = req->msg.src;
  r->dst = req->msg.dst;
  r->validity = req->msg.validity;
  r->deferred = req->msg.deferred;
  r->dlr_mask = req->msg.dlr_mask;
  r->data_len = (uint8_t)(req->msg.data_len > sizeof r->data ? sizeof r->data : req->msg.data_len);
  if (r->data_len)
    memcpy(r->data, req->msg.data, r->data_len);
  r->origin = in->conn;
  r->origin_instance = in->index;
  r->origin_session = in->session_serial;
  r->ref = req->ref;
  r->raw_status = req->raw_status;
  r->deadline_ms = clock_now_ns() / 1000000 + ABOUT_WAIT_MS;
  pthread_mutex_lock(&smsc->about_lock);
  if (smsc->about_tail)
    smsc->about_tail->next = r;
  else
    smsc->about_head = r;
  smsc->about_tail = r;
  atomic_fetch_add(&smsc->about_waiting, 1);
  pthread_mutex_unlock(&smsc->about_lock);
  for (unsigned i = 0; i < smsc->n_instances; i++)
    evloop_wake(smsc->instances[i].loop);
}

/* The answer to a request passed on goes back to the client's instance. */
static void answer_back(struct about_request *r, enum proto_status status, const struct msg_receipt *answer)
{
  r->status = status;
  if (answer)
    r->answer = *answer;
  if (r->item) {
    r->item->about = NULL;   /* the request outlives its item */
    qitem_free(r->item);
    r->item = NULL;
  }
  struct connector *c = r->origin;
  struct instance *in = &c->instances[r->origin_instance];
  pthread_mutex_lock(&c->about_lock);
  r->next = in->about_answers;
  in->about_answers = r;
  atomic_store(&in->about_answered, true);
  pthread_mutex_unlock(&c->about_lock);
  evloop_wake(in->loop);
}

void connector_about_sent_back(struct instance *in, struct qitem *it, const struct proto_pdu *resp)
{
  struct about_request *r = it->about;
  if (!resp) {
    LOGI(in->log, "%s of %s at the SMSC: no answer", proto_op_name(r->op), r->smsc_id);
    answer_back(r, PROTO_E_MESSAGE_STATE, NULL);
    return;
  }
  char why[PROTO_DESCRIBE_LEN];
  LOGD(in->log, "%s of %s at the SMSC: %s", proto_op_name(r->op), r->smsc_id,
       proto_describe(in->conn->cfg->proto, resp->op, resp->status, resp->raw_status, why, sizeof why));
  /* The SMSC's answer, in the client's terms: its own error codes where
   * they say the same, else the request failed. */
  enum proto_status status = resp->status == PROTO_OK || resp->status == PROTO_E_NO_MESSAGE ||
                                 resp->status == PROTO_E_MESSAGE_STATE || proto_status_temporary(resp->status)
                               ? resp->status
                               : PROTO_E_MESSAGE_STATE;
  answer_back(r, status, resp->op == PROTO_OP_QUERY_RESP ? &resp->receipt : NULL);
}

/* The first request waiting to be passed on to c's SMSC, taken out; with
 * due_before, only one whose deadline is before it. NULL when there is
 * none. Without the lock while none waits: the pump runs for every batch. */
static struct about_request *about_take(struct connector *c, uint64_t due_before)
{
  if (!atomic_load(&c->about_waiting))
    return NULL;
  pthread_mutex_lock(&c->about_lock);
  struct about_request *r = c->about_head;
  if (r && due_before && r->deadline_ms >= due_before)
    r = NULL;
  if (r) {
    if (!(c->about_head = r->next))
      c->about_tail = NULL;
    atomic_fetch_sub(&c->about_waiting, 1);
  }
  pthread_mutex_unlock(&c->about_lock);
  return r;
}

void connector_about_pump(struct instance *in)
{
  struct connector *c = in->conn;
  uint64_t now = clock_now_ns() / 1000000;
  while (in->session && session_can_send(in->session) > 0) {
    struct about_request *r = about_take(c, 0);
    if (!r)
      return;
    struct proto_pdu pdu;
    memset(&pdu, 0, sizeof pdu);
    pdu.op = r->op;
    str_copy(pdu.msgid, sizeof pdu.msgid, r->smsc_id);
    pdu.msg.src = r->src;
    pdu.msg.dst = r->dst;
    pdu.msg.validity = r->validity;
    pdu.msg.deferred = r->deferred;
    pdu.msg.dlr_mask = r->dlr_mask;
    pdu.msg.data = r->data;
    pdu.msg.data_len = r->data_len;
    if (now > r->deadline_ms || session_request(in->session, &pdu, r->item) == -1) {
      LOGI(in->log, "%s of %s could not be passed on to the SMSC", proto_op_name(r->op), r->smsc_id);
      answer_back(r, PROTO_E_MESSAGE_STATE, NULL);
    }
  }
}

void connector_about_expire(struct connector *c)
{
  uint64_t now = clock_now_ns() / 1000000;
  struct about_request *r;
  while ((r = about_take(c, now))) {
    LOGI(c->log, "%s of %s: no session to pass it on within %u ms", proto_op_name(r->op), r->smsc_id,
         ABOUT_WAIT_MS);
    answer_back(r, PROTO_E_MESSAGE_STATE, NULL);
  }
}

void connector_about_answers(struct instance *in)
{
  if (!atomic_load(&in->about_answered))
    return;
  pthread_mutex_lock(&in->conn->about_lock);
  struct about_request *r = in->about_answers;
  in->about_answers = NULL;
  atomic_store(&in->about_answered, false);
  pthread_mutex_unlock(&in->conn->about_lock);
  while (r) {
    struct about_request *next = r->next;
    /* The session that asked may be gone: then nobody waits for it. */
    if (in->session && in->session_serial == r->origin_session)
      respond(in, r->ref, r->raw_status, r->op, r->status, r->client_id,
              r->op == PROTO_OP_QUERY ? &r->answer : NULL);
    free(r);
    r = next;
  }
}

void connector_about_free(struct connector *c)
{
  for (struct about_request *r = c->about_head, *next; r; r = next) {
    next = r->next;
    qitem_free(r->item);   /* frees r */
  }
  c->about_head = c->about_tail = NULL;
  for (struct about_request *r = c->lookup_head, *next; r; r = next) {
    next = r->next;
    free(r);
  }
  c->lookup_head = c->lookup_tail = NULL;
  for (unsigned i = 0; c->instances && i < c->n_instances; i++)
    for (struct about_request *r = c->instances[i].about_answers, *next; r; r = next) {
      next = r->next;
      free(r);
    }
}

/* ---- older messages: the message log ---- */

/* Lookups waiting for the worker at most: beyond, a request is answered
 * as failed at once (a flood of queries costs no memory). */
#define ABOUT_LOOKUPS_MAX 256

/* The answer from the message log's row of the message. It is not passed
 * on to an SMSC: the log has the SMSC's id only in its normalised form. */
static void answer_from_log(struct connector *c, struct about_request *r, int found, const struct db_message *row)
{
  struct msg_receipt answer = { .state = MSG_STATE_ENROUTE };
  if (found < 0) {
    answer_back(r, PROTO_E_MESSAGE_STATE, NULL);
    return;
  }
  if (!found || strcmp(row->origin_connector, c->cfg->name) != 0 || strcmp(row->origin_user, r->user) != 0) {
    answer_back(r, PROTO_E_NO_MESSAGE, NULL);
    return;
  }
  uint8_t state = row->has_receipt && msg_state_final(row->receipt_state) ? row->receipt_state : row->state;
  if (state && msg_state_final(state)) {
    answer.state = state;
    answer.err = (uint16_t)(row->error_code > 0 && row->error_code < 256 ? row->error_code : 0);
    int64_t done_ms = row->done_ms ? row->done_ms : row->final_ms ? row->final_ms : row->state_ms;
    answer.done_time = done_ms / 1000;
  }
  if (r->op != PROTO_OP_QUERY)
    answer_back(r, PROTO_E_MESSAGE_STATE, NULL);
  else
    answer_back(r, PROTO_OK, &answer);
}

static void *lookup_main(void *arg)
{
  struct connector *c = arg;
  pthread_setname_np(pthread_self(), "about-log");
  pthread_mutex_lock(&c->about_lock);
  for (;;) {
    while (!c->lookup_head && !c->lookup_stop)
      pthread_cond_wait(&c->lookup_cond, &c->about_lock);
    struct about_request *r = c->lookup_head;
    if (!r)
      break;
    if (!(c->lookup_head = r->next))
      c->lookup_tail = NULL;
    c->lookups--;
    pthread_mutex_unlock(&c->about_lock);
    struct db_message row;
    char err[256];
    int found = c->lookup_stop ? -1 : cluster_message(c->core->cluster, r->msg_id, &row, err, sizeof err);
    if (found < 0)
      LOGI(c->log, "%s of %" PRIu64 ": the message log cannot answer: %s", proto_op_name(r->op), r->msg_id,
           c->lookup_stop ? "stopping" : err);
    answer_from_log(c, r, found, &row);
    pthread_mutex_lock(&c->about_lock);
  }
  pthread_mutex_unlock(&c->about_lock);
  return NULL;
}

int connector_about_start(struct connector *c, char *err, size_t err_len)
{
  /* Only where clients name messages by the gateway's ids, which the
   * message log keys (not UCP's or CIMD2's recipient:stamp). */
  if (!c->core->cluster || c->cfg->proto->msgid_scts != SCTS_NONE)
    return 0;
  if (pthread_create(&c->lookup_thread, NULL, lookup_main, c) != 0) {
    snprintf(err, err_len, "cannot start the message log lookups: %s", strerror(errno));
    return -1;
  }
  c->lookup_started = true;
  return 0;
}

void connector_about_stop(struct connector *c)
{
  if (!c->lookup_started)
    return;
  pthread_mutex_lock(&c->about_lock);
  c->lookup_stop = true;
  pthread_cond_signal(&c->lookup_cond);
  pthread_mutex_unlock(&c->about_lock);
  pthread_join(c->lookup_thread, NULL);
  c->lookup_started = false;
}

/* Hands a request about message id, which the history does not hold, to
 * the worker; false when there is none (no database) or it has too many. */
static bool look_up(struct instance *in, const struct proto_pdu *req, uint64_t id)
{
  struct connector *c = in->conn;
  if (!c->lookup_started)
    return false;
  struct about_request *r = calloc(1, sizeof *r);
  if (!r)
    return false;
  r->op = req->op;
  r->msg_id = id;
  str_copy(r->user, sizeof r->user, session_user(in->session));
  str_copy(r->client_id, sizeof r->client_id, req->msgid);
  r->origin = c;
  r->origin_instance = in->index;
  r->origin_session = in->session_serial;
  r->ref = req->ref;
  r->raw_status = req->raw_status;
  pthread_mutex_lock(&c->about_lock);
  bool room = c->lookups < ABOUT_LOOKUPS_MAX && !c->lookup_stop;
  if (room) {
    if (c->lookup_tail)
      c->lookup_tail->next = r;
    else
      c->lookup_head = r;
    c->lookup_tail = r;
    c->lookups++;
    pthread_cond_signal(&c->lookup_cond);
  }
  pthread_mutex_unlock(&c->about_lock);
  if (!room) {
    free(r);
    respond(in, req->ref, req->raw_status, req->op, PROTO_E_MESSAGE_STATE, req->msgid, NULL);
  }
  return true;
}

/* ---- the request ---- */

static bool parse_id(const char *text, uint64_t *id)
{
  char *end;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (!*text || *end || errno || text[0] == '-' || text[0] == '+' || v == 0)
    return false;
  *id = v;
  return true;
}

void connector_about_in(struct instance *in, const struct proto_pdu *req)
{
  struct connector *c = in->conn;
  struct core *core = c->core;
  struct message_state st = { .where = WHERE_UNKNOWN };
  uint64_t id = 0;
  /* SMPP clients know a message by our id in decimal. */
  if (!c->scts && parse_id(req->msgid, &id))
    find_message(core, id, c->index, session_user(in->session), &st);
  LOGD(in->log, "%s of %s from %s", proto_op_name(req->op), req->msgid, session_user(in->session));
  enum proto_status status = PROTO_OK;
  struct msg_receipt answer = { .state = MSG_STATE_ENROUTE };
  struct connector *smsc = st.where == WHERE_SENT ? core_connector(core, st.connector) : NULL;
  if (smsc && passes_on(smsc)) {
    if (atomic_load(&smsc->about_waiting) >= ABOUT_PASS_MAX)
      respond(in, req->ref, req->raw_status, req->op, PROTO_E_THROTTLED, req->msgid, NULL);
    else
      pass_on(in, smsc, req, &st);
    return;
  }
  /* Not in the history: the message log may know it. */
  if (!st.known && id && look_up(in, req, id))
    return;
  switch (st.where) {
  case WHERE_UNKNOWN:
    status = PROTO_E_NO_MESSAGE;
    break;
  case WHERE_HELD:
  case WHERE_QUEUED:
    if (req->op == PROTO_OP_CANCEL)
      status = cancel_waiting(in, req->msgid, st.connector);
    else if (req->op == PROTO_OP_REPLACE)
      status = replace_waiting(in, id, st.connector, req);
    break;
  case WHERE_SENT:
    /* An SMSC that cannot be asked: still on its way, as far as we know. */
    if (req->op != PROTO_OP_QUERY)
      status = PROTO_E_MESSAGE_STATE;
    break;
  case WHERE_DONE:
    answer.state = st.state;
    answer.err = st.err;
    answer.done_time = st.done_s;
    if (req->op != PROTO_OP_QUERY)
      status = PROTO_E_MESSAGE_STATE;
    break;
  }
  respond(in, req->ref, req->raw_status, req->op, status, req->msgid,
          req->op == PROTO_OP_QUERY && status == PROTO_OK ? &answer : NULL);
}
