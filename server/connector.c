/* connector.c - connector instances: threads, sessions and the message path
 * through them. See connector.h for the shape; the protocol is the
 * session's business (connectors/session.h), never this file's. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "cluster.h"
#include "connector.h"
#include "http_callback.h"
#include "http_client.h"
#include "http_server.h"
#include "netutil.h"
#include "session.h"
#include "sms_text.h"
#include "strutil.h"
#include "ucp_proto.h"

/* Items taken from a queue at once: bounded so one instance cannot hog a
 * queue that others share. */
#define PUMP_BATCH 256
/* How long an ack is held above max_total_queue_soft. */
#define SLOW_ACK_MS 100
/* Distinct target queues one instance stages to in one loop iteration. */
#define MAX_STAGES 16
/* How often an instance publishes what connector_instance_info shows. */
#define INFO_PUBLISH_MS 250

enum instance_phase {
  PHASE_RUN,
  PHASE_STOP_SESSION,              /* finish in-flight work, unbind, close */
  PHASE_EXIT                       /* leave the loop */
};

/* Where the answer to a request goes: a response on the instance's session,
 * or the completion of a message of an HTTP request. */
struct reply {
  uint32_t ref;
  uint32_t raw_status;
  enum proto_op op;
  bool http;
  struct http_server_completion completion;
};

/* The ticket of a record still in its instance's journal batch: higher
 * than any real one, so that nothing waiting for it goes out before the
 * batch is appended and the real ticket put in its place. */
#define TICKET_IN_BATCH UINT64_MAX

/* What match_receipt returns when the journal refused a record the receipt
 * needs: the SMSC is told to send it again, as when the journal was
 * already refusing before the receipt came. */
#define TICKET_REFUSED (UINT64_MAX - 1)

/* An ack held back by the soft limit or until the journal has its records. */
struct held_ack {
  uint64_t due_ms;
  uint64_t received_ns;            /* monotonic: when the request came (its ack latency) */
  struct reply reply;
  uint64_t ticket;                 /* persist on: the journal ticket that must be durable first */
  bool refused;                    /* the journal refused those records: answered with an error */
  char msgid[MSG_ID_LEN];
};

/* Held acks in arrival order: a ring that grows, so that holding an ack
 * (every submit with persist on) costs no allocation. */
struct held_acks {
  struct held_ack *slots;
  size_t cap, head, count;         /* cap a power of two */
};

struct stage {
  struct queue *queue;
  struct qlist list;
};

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

struct instance {
  struct connector *conn;
  unsigned index;
  pthread_t thread;
  bool started;
  struct evloop *loop;
  struct session *session;
  struct log_category *log;
  struct id_block ids;
  _Atomic int phase;
  /* server: a connection handed over by the listener */
  pthread_mutex_t handoff_lock;
  int handoff_fd;
  char handoff_peer[64];
  _Atomic bool busy;               /* has (or is being handed) a connection */
  int user;                        /* index of the bound account, -1 */
  struct queue *waiting_on;        /* the queue whose waiter list holds this loop */
  _Atomic bool ready;              /* could send more from its queue: pushes may wake it */
  _Atomic bool bound;
  /* pushes gathered in this iteration, flushed once at its end */
  struct stage stages[MAX_STAGES];
  unsigned n_stages;
  bool flush_pending;
  struct held_acks held;
  _Atomic uint64_t held_ticket;    /* ticket the oldest held ack waits for; 0 = none waits */
  /* persist on: the records of this iteration, appended to the journal at
   * its end (or before anything they concern is handed to another thread) */
  struct spool_batch journal;
  size_t held_new;                 /* acks held since the batch was last appended */
  uint64_t paused_until_ms;        /* client: backing off after a throttling answer */
  uint8_t concat_ref;              /* reference of the next message this instance splits */
  struct early_receipt *early_head, *early_tail;
  unsigned early_count;
  uint64_t backoff_ms;
  /* HTTP: messages from libmicrohttpd's threads, receipt callbacks done (both
   * under handoff_lock), and a client connector's client */
  struct http_inbox_item *inbox_head, *inbox_tail;
  struct http_done_item *callbacks_done;
  struct http_client *http_client;
  /* what connector_instance_info shows: counted in the thread, published under the lock */
  struct connector_instance_info counted;
  uint64_t published_ms;
  pthread_mutex_t info_lock;
  struct connector_instance_info published;
};

struct connector {
  struct core *core;
  const struct config_connector *cfg;
  unsigned index;
  struct log_category *log;
  struct session_config session_cfg;
  struct queue out;
  struct queue *user_queues;       /* server: one per configured account */
  struct instance *instances;
  unsigned n_instances;
  /* server */
  int listen_fd;
  struct evloop *accept_loop;
  pthread_t accept_thread;
  bool accept_started;
  _Atomic bool accepting;
  /* sessions answering a refusal, in the listener's loop */
  struct session *refusing[16];
  /* UCP server: (AdC, SCTS) must be unique across all sessions of the connector */
  pthread_mutex_t scts_lock;
  struct ucp_scts_alloc *scts;
  _Atomic uint32_t next_serial;
  _Atomic bool paused;             /* by the operator: queues hold, nothing is sent */
  /* HTTP server connectors */
  struct http_server *http_server;
  struct http_callback *callbacks;
};

static bool is_server(const struct connector *c)
{
  return c->cfg->mode == CONFIG_CONN_SERVER;
}

/* ---- what the admin API sees of an instance ---- */

const uint64_t connector_latency_bounds_us[CONNECTOR_LATENCY_BUCKETS - 1] = {
  100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
  1000000, 2500000, 5000000, 10000000
};

static void latency_record(struct connector_latency *l, uint64_t us)
{
  unsigned i = 0;
  while (i < CONNECTOR_LATENCY_BUCKETS - 1 && us > connector_latency_bounds_us[i])
    i++;
  l->buckets[i]++;
  l->count++;
  l->sum_us += us;
}

static void instance_error(struct instance *in, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void instance_error(struct instance *in, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(in->counted.last_error, sizeof in->counted.last_error, fmt, ap);
  va_end(ap);
  in->counted.last_error_time = time(NULL);
  in->counted.errors++;
}

static const char *instance_state(const struct instance *in)
{
  if (in->conn->cfg->http)
    return atomic_load(&in->bound) ? "bound" : "down";
  if (!in->session)
    return is_server(in->conn) ? "idle" : "down";
  switch (session_state(in->session)) {
  case SESSION_OPEN: return "connected";
  case SESSION_BINDING: return "binding";
  case SESSION_BOUND: return "bound";
  case SESSION_UNBINDING: return "unbinding";
  default: return is_server(in->conn) ? "idle" : "down";
  }
}

/* Copies what the thread counted where other threads may read it: at most
 * every INFO_PUBLISH_MS, or at once when force is set (a state change). */
static void instance_publish(struct instance *in, bool force)
{
  uint64_t t = evloop_now_ms(in->loop);
  if (!force && t - in->published_ms < INFO_PUBLISH_MS)
    return;
  in->published_ms = t;
  struct connector_instance_info *i = &in->counted;
  struct session *s = in->session;
  bool up = s && session_state(s) != SESSION_DISCONNECTED && session_state(s) != SESSION_CLOSED;
  i->index = in->index;
  i->state = instance_state(in);
  str_copy(i->peer, sizeof i->peer, up ? session_peer(s) : "");
  str_copy(i->user, sizeof i->user, !is_server(in->conn) ? in->conn->cfg->system_id : up ? session_user(s) : "");
  enum proto_bind_mode mode = up ? session_bind_mode(s) : 0;
  str_copy(i->bind, sizeof i->bind, mode == PROTO_BIND_TRX ? "trx" : mode == PROTO_BIND_TX ? "tx"
                                          : mode == PROTO_BIND_RX ? "rx" : "");
  i->window_used = up ? session_outstanding(s) : 0;
  i->window = in->conn->cfg->window;
  if (s)
    i->reconnects = session_stats(s)->reconnects;
  if (!up)
    i->connected_since = 0;
  pthread_mutex_lock(&in->info_lock);
  in->published = *i;
  pthread_mutex_unlock(&in->info_lock);
}

unsigned connector_instance_count(const struct connector *c)
{
  return c->n_instances;
}

int connector_instance_info(struct connector *c, unsigned i, struct connector_instance_info *out)
{
  if (i >= c->n_instances)
    return -1;
  struct instance *in = &c->instances[i];
  pthread_mutex_lock(&in->info_lock);
  *out = in->published;
  pthread_mutex_unlock(&in->info_lock);
  if (!out->state)
    out->state = is_server(c) ? "idle" : "down";
  out->index = i;
  return 0;
}

/* ---- the journal batch of an instance (persist on) ---- */

/* The instance whose thread this is: its records go into its batch. */
static _Thread_local struct instance *batching;

/* Appends the batch and puts its ticket into the acks held for it (or
 * marks them refused when the journal refused the batch: those clients get
 * an error, as if the journal had refused at once). */
static void journal_flush(struct instance *in)
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

static void release_held_acks(struct instance *in, bool all);

/* ---- staging: one push per target queue per loop iteration ---- */

/* The end of a loop iteration: the journal batch first, so that no thread
 * sees a message or receipt before its record is in the journal, then the
 * staged pushes, then whatever acks that made ready. */
static void flush_stages(struct evloop *loop, void *arg)
{
  struct instance *in = arg;
  (void)loop;
  journal_flush(in);
  for (unsigned i = 0; i < in->n_stages; i++)
    queue_push(in->stages[i].queue, &in->stages[i].list, 0);
  in->n_stages = 0;
  in->flush_pending = false;
  if (in->held.count)
    release_held_acks(in, false);
}

static void schedule_flush(struct instance *in)
{
  if (!in->flush_pending) {
    in->flush_pending = true;
    evloop_defer(in->loop, flush_stages, in);
  }
}

static void stage(struct instance *in, struct queue *q, struct qitem *it)
{
  unsigned i = 0;
  while (i < in->n_stages && in->stages[i].queue != q)
    i++;
  if (i == in->n_stages) {
    if (i == MAX_STAGES) {
      flush_stages(in->loop, in);
      i = 0;
    }
    in->stages[i].queue = q;
    memset(&in->stages[i].list, 0, sizeof in->stages[i].list);
    in->n_stages = i + 1;
  }
  qlist_append(&in->stages[i].list, it);
  schedule_flush(in);
}

/* Puts it and the items after it (up to tail) back at the front, in order:
 * what a batch taken from q could not send now. */
static void requeue_rest(struct queue *q, struct qitem *it, struct qitem *tail)
{
  struct qlist rest = { it, tail, 0 };
  for (struct qitem *x = it; x; x = x->next)
    rest.count++;
  queue_push(q, &rest, 1);
}

static void requeue_front(struct queue *q, struct qitem *it)
{
  struct qlist l = { 0 };
  qlist_append(&l, it);
  queue_push(q, &l, 1);
}

/* ---- the journal (persist on) ---- */

/* Journals rec: in an instance's own thread into its batch, in any other
 * thread at once. Returns the ticket to wait for (TICKET_IN_BATCH for a
 * batched record; 1 with persist off), or 0 when the journal refuses. */
static uint64_t journal(struct core *core, const struct spool_record *rec)
{
  struct instance *in = batching;
  if (!core->spool || !in)
    return core_journal(core, rec);
  if (spool_batch_add(core->spool, &in->journal, rec) < 0)
    return 0;
  schedule_flush(in);
  return TICKET_IN_BATCH;
}

static uint64_t journal_msg_event(struct core *core, enum spool_record_type type, uint64_t id,
                                  uint16_t target, const char *smsc_id)
{
  struct spool_record rec = { .type = type, .id = id, .target = target, .smsc_id = smsc_id };
  return journal(core, &rec);
}

/* ---- receipts towards origins ---- */

/* The receipt item for the origin of a message and the queue it goes to,
 * or NULL when the origin does not want this state or cannot be found. */
static struct qitem *origin_receipt(struct core *core, struct log_category *log,
                                   const struct dlr_info *info, const struct msg_receipt *r, int via,
                                   struct queue **q, uint64_t *ticket)
{
  if (!msg_receipt_wanted(info->dlr_mask, r->state) || info->origin_connector >= core->n_connectors)
    return NULL;
  struct connector *origin = core_connector(core, info->origin_connector);
  *q = connector_user_queue(origin, info->origin_user);
  struct qitem *it = *q ? qitem_new(QITEM_RECEIPT) : NULL;
  if (!it) {
    LOGW(log, "receipt for message %" PRIu64 " dropped: account %s of %s is unknown or memory is short",
         info->msg_id, info->origin_user, origin->cfg->name);
    return NULL;
  }
  it->receipt = *r;
  it->msg_id = info->msg_id;
  it->via = via >= 0 ? (uint16_t)(via + 1) : 0;
  history_add(core->history, info->msg_id, HISTORY_RECEIPT_QUEUED, info->origin_connector, r->state, r->err,
              info->origin_user);
  str_copy(it->receipt.id, sizeof it->receipt.id, info->origin_ref);
  it->receipt.src = info->src;
  it->receipt.dst = info->dst;
  if (!it->receipt.submit_time)
    it->receipt.submit_time = info->submit_time;
  if (info->callback[0] && !(it->callback = strdup(info->callback))) {
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
                                .callback_method = it->callback_method, .via = it->via };
    *ticket = journal(core, &rec);
  }
  return it;
}

/* Queues a receipt for the origin of a message, if the origin wants it.
 * Returns the journal ticket of its record (1 when nothing was journaled). */
static uint64_t receipt_to_origin(struct instance *in, const struct dlr_info *info,
                                  const struct msg_receipt *r)
{
  struct queue *q;
  uint64_t ticket = 1;
  struct qitem *it = origin_receipt(in->conn->core, in->log, info, r, (int)in->conn->index, &q, &ticket);
  if (it)
    stage(in, q, it);
  return ticket;
}

/* A message that will not be delivered: refused for good by the SMSC
 * (REJECTED, code = its error) or past its validity (EXPIRED). Its origin
 * hears of it as a receipt in that state. */
static void give_up_message(struct instance *in, struct qitem *it, uint8_t state, uint32_t code)
{
  struct core *core = in->conn->core;
  atomic_fetch_add(state == MSG_STATE_EXPIRED ? &core->stats.expired : &core->stats.failed, 1);
  atomic_fetch_sub(&core->in_flight, 1);
  history_add(core->history, it->msg->id, HISTORY_FAILED, (uint16_t)in->conn->index, state, code,
              state == MSG_STATE_EXPIRED ? "validity passed" : NULL);
  core_log_event(core, DB_LOG_FAILED, it->msg, (int)in->conn->index, NULL, state,
                 (uint16_t)(code > 65535 ? 65535 : code));
  journal_msg_event(core, SPOOL_REC_FINISHED, it->msg->id, 0, NULL);
  struct dlr_info info;
  dlr_info_from_msg(&info, it->msg);
  struct msg_receipt r = { 0 };
  r.state = state;
  r.err = (uint16_t)(code > 999 ? 999 : code);
  r.done_time = time(NULL);
  receipt_to_origin(in, &info, &r);
  qitem_free(it);
}

/* ---- sending from the queues ---- */

static void http_pump_out(struct instance *in);
static void http_pump_receipts(struct instance *in);

/* The after_send hooks. */
static void plugins_sent(struct instance *in, const struct msg *m, enum emg_plugin_send_status status)
{
  plugin_host_after_send(atomic_load_explicit(&in->conn->core->plugins, memory_order_acquire), m,
                         in->conn->cfg->name, status);
}

/* Whether a message taken from a queue may go out now: not when its
 * validity has passed (EXPIRED to its origin) or a before_send hook refuses
 * it (REJECTED); then it has failed and is gone. */
static bool may_send(struct instance *in, struct qitem *it)
{
  if (it->msg->validity && it->msg->validity < time(NULL)) {
    LOGI(in->log, "message %" PRIu64 " to %s expired before it could be sent", it->msg->id,
         it->msg->dst.addr);
    plugins_sent(in, it->msg, EMG_PLUGIN_SEND_FAILED);
    give_up_message(in, it, MSG_STATE_EXPIRED, 0);
    return false;
  }
  struct core *core = in->conn->core;
  struct plugin_host *plugins = atomic_load_explicit(&core->plugins, memory_order_acquire);
  char reason[PLUGIN_HOST_REASON_LEN];
  if (plugin_host_before_send(plugins, it->msg, in->conn->cfg->name, reason, sizeof reason) ==
      PLUGIN_HOST_ACCEPT)
    return true;
  atomic_fetch_add(&core->stats.refused_plugin, 1);
  LOGI(in->log, "message %" PRIu64 " to %s not sent: %s", it->msg->id, it->msg->dst.addr, reason);
  give_up_message(in, it, MSG_STATE_REJECTED, 0);
  return false;
}

/* The queue a client instance, or a session server instance, sends from
 * now, or NULL when it sends nothing (unbound, stopping, paused, backing
 * off). */
static struct queue *pump_source(struct instance *in)
{
  struct connector *c = in->conn;
  struct session *s = in->session;
  if (atomic_load(&in->phase) != PHASE_RUN || atomic_load(&c->paused))
    return NULL;
  if (c->cfg->http)
    return &c->out;
  if (!s || !atomic_load(&in->bound))
    return NULL;
  if (!is_server(c))
    return in->paused_until_ms > evloop_now_ms(in->loop) ? NULL : &c->out;
  /* A client bound as transmitter only takes no deliveries: its account's
   * receipts and messages wait for a receiver or transceiver bind. */
  if (in->user < 0 || !(session_bind_mode(s) & PROTO_BIND_RX))
    return NULL;
  return &c->user_queues[in->user];
}

/* Sends from q as far as the session's window goes. */
static void pump_session(struct instance *in, struct queue *q)
{
  struct connector *c = in->conn;
  struct session *s = in->session;
  unsigned room;
  while ((room = session_can_send(s)) > 0) {
    struct qlist l = { 0 };
    if (!queue_take(q, room < PUMP_BATCH ? room : PUMP_BATCH, &l))
      return;
    struct qitem *it = l.head;
    while (it) {
      struct qitem *next = it->next;
      if (it->kind == QITEM_MSG && !may_send(in, it)) {
        it = next;
        continue;
      }
      struct proto_pdu pdu;
      memset(&pdu, 0, sizeof pdu);
      if (it->kind == QITEM_MSG) {
        /* To an SMSC a message is a submit; to a client of ours, a delivery. */
        pdu.op = is_server(c) ? PROTO_OP_DELIVER : PROTO_OP_SUBMIT;
        pdu.msg = *it->msg;
      } else {
        pdu.op = PROTO_OP_DELIVER;
        pdu.is_receipt = true;
        pdu.receipt = it->receipt;
      }
      if (session_request(s, &pdu, it) == -1) {
        if (session_can_send(s) > 0) {
          /* Room to send, yet refused: the protocol cannot express it.
           * Retrying would loop forever; it fails for good. */
          LOGW(in->log, "%s to %s cannot be sent over %s: dropped with a failure receipt",
               it->kind == QITEM_MSG ? "message" : "receipt",
               it->kind == QITEM_MSG ? it->msg->dst.addr : it->receipt.src.addr,
               c->cfg->proto->name);
          if (it->kind == QITEM_MSG)
            give_up_message(in, it, MSG_STATE_REJECTED, 0);
          else
            qitem_free(it);
          it = next;
          continue;
        }
        /* Not sendable now: back to the front, in order. */
        requeue_rest(q, it, l.tail);
        return;
      }
      it->sent_ns = clock_now_ns();
      LOGD2(in->log, "sent %s %" PRIu64 " to %s", it->kind == QITEM_MSG ? "message" : "receipt",
            it->kind == QITEM_MSG ? it->msg->id : 0,
            it->kind == QITEM_MSG ? it->msg->dst.addr : it->receipt.src.addr);
      it = next;
    }
  }
}

/* Requests the instance could send now: its session's window, or its HTTP
 * client's room. */
static unsigned send_room(struct instance *in)
{
  if (!in->conn->cfg->http)
    return session_can_send(in->session);
  return in->http_client ? http_client_room(in->http_client) : 0;
}

/* Sends what the instance's queue holds, as far as it can, and then says
 * whether a push should wake it. The flag is set before the queue is looked
 * at again, so that what a push left while it still said no is not left
 * waiting: either the push sees the flag or this sees the items. */
static void pump(struct instance *in)
{
  struct connector *c = in->conn;
  if (c->cfg->http && is_server(c)) {
    /* Instance 0 is the only consumer of its queues: always woken. */
    if (in->index == 0 && atomic_load(&in->phase) == PHASE_RUN && !atomic_load(&c->paused))
      http_pump_receipts(in);
    return;
  }
  for (int pass = 0; pass < 2; pass++) {
    struct queue *q = pump_source(in);
    if (q && c->cfg->http)
      http_pump_out(in);
    else if (q)
      pump_session(in, q);
    bool ready = q && send_room(in) > 0;
    atomic_store(&in->ready, ready);
    if (!ready || queue_count(q) == 0)
      return;
  }
}

/* ---- server side: submits in ---- */

static void respond(struct instance *in, uint32_t ref, uint32_t raw_status, enum proto_op op,
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
  if (status != PROTO_OK)
    in->counted.refused++;
  /* An instance ending (or between sessions) has nobody to answer. */
  if (in->session)
    session_respond(in->session, &resp);
}

/* The id the client will know the message by: UCP "AdC:SCTS" (unique per
 * recipient), SMPP our message id in decimal. -1 when no SCTS can be
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
  int rc = ucp_scts_next(c->scts, m->dst.addr, now, scts);
  if (rc == 0)
    rc = core_scts_handing(c->core, ucp_scts_last(c->scts));
  pthread_mutex_unlock(&c->scts_lock);
  if (rc != 0)
    return -1;
  /* The AdC as the client wrote it: a UCP recipient is international only
   * when it came with a '+'. */
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
  default: return HTTP_CODEC_REJECTED;
  }
}

/* Answers a request: on the session, or by completing the HTTP message
 * (its id is msgid, the decimal gateway id the origin knows it by). */
static void reply_to(struct instance *in, const struct reply *rp, enum proto_status status, const char *msgid)
{
  if (!rp->http) {
    respond(in, rp->ref, rp->raw_status, rp->op, status, msgid);
    return;
  }
  if (status != PROTO_OK)
    in->counted.refused++;
  http_server_complete(rp->completion, http_outcome(status), msgid ? strtoull(msgid, NULL, 10) : 0);
}

/* Holds an ack until due_in_ms have passed (the soft limit) and, with
 * persist on, until the journal says ticket is durable. */
static void hold_ack(struct instance *in, const struct reply *rp, const char *msgid, unsigned due_in_ms,
                     uint64_t ticket, uint64_t received_ns)
{
  struct held_acks *q = &in->held;
  if (q->count == q->cap) {
    size_t cap = q->cap ? q->cap * 2 : 256;
    struct held_ack *grown = malloc(cap * sizeof *grown);
    if (!grown) {
      reply_to(in, rp, PROTO_E_TEMPORARY, NULL);
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

static void release_held_acks(struct instance *in, bool all)
{
  struct held_acks *q = &in->held;
  journal_flush(in);
  uint64_t now = evloop_now_ms(in->loop);
  struct spool *spool = in->conn->core->spool;
  uint64_t durable = spool ? spool_durable(spool) : UINT64_MAX;
  /* Tickets grow along the ring, so the first one not ready stops it. */
  while (q->count) {
    struct held_ack *h = &q->slots[q->head];
    if (!all && (h->due_ms > now || h->ticket > durable))
      break;
    if (h->refused)
      reply_to(in, &h->reply, PROTO_E_TEMPORARY, NULL);
    else
      reply_to(in, &h->reply, PROTO_OK, h->msgid[0] ? h->msgid : NULL);
    if (h->received_ns)
      latency_record(&in->counted.ack, (clock_now_ns() - h->received_ns) / 1000);
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
static struct queue *target_queue(struct connector *out, const char *user)
{
  if (!is_server(out))
    return &out->out;
  if (user[0])
    return connector_user_queue(out, user);
  return out->cfg->n_users == 1 ? &out->user_queues[0] : NULL;
}

/* For the router's groups: a connector that can take a message now has a
 * bound session and room in its queue. */
static bool connector_usable(void *ctx, int index)
{
  struct connector *c = core_connector(ctx, (unsigned)index);
  return connector_bound(c) > 0 &&
         (is_server(c) || !c->cfg->max_queue || queue_count(&c->out) < c->cfg->max_queue);
}

/* A message longer than one SMS (and not already a part of one) is split
 * into concatenated parts here, after routing, so that every part takes the
 * route the whole message took and no out protocol has to carry more than
 * one SMS. Only the last part asks for a receipt: the origin submitted one
 * message and hears about it once, when its last part is delivered. Parts
 * get ids of their own; all carry the origin's reference. Returns the list
 * of parts (the message itself when it fits), empty when out of memory. */
static struct qlist split_message(struct instance *in, struct msg *m)
{
  struct qlist parts = { 0 };
  struct sms_text_payload p = { .coding = (enum sms_text_coding)m->coding, .data = m->data,
                                .len = m->data_len, .udh = m->udh, .udh_len = m->udh_len };
  struct sms_text_concat concat = { 0 };
  int n = 1;
  if (m->coding == SMS_TEXT_GSM7 || m->coding == SMS_TEXT_8BIT || m->coding == SMS_TEXT_UCS2) {
    bool has_concat = m->udh_len && sms_text_udh_parse(m->udh, m->udh_len, &concat) > 0 &&
                      concat.total > 0;
    if (!has_concat)
      n = sms_text_segment_count(&p, SMS_TEXT_REF8);
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
    if (i < n - 1)
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

/* Takes a message into the core: a client's submit (server connectors) or
 * an MO from an SMSC (client connectors, answered with resp_op
 * DELIVER_RESP). Admission, routing, ids, splitting, then the ack. */
static void accept_message(struct instance *in, const struct msg *msg, const char *origin_user,
                           const struct reply *rp)
{
  struct connector *c = in->conn;
  struct core *core = c->core;
  in->counted.submits_in++;
  uint64_t received_ns = clock_now_ns();
  enum core_admit admit = atomic_load(&in->phase) != PHASE_RUN ? CORE_ADMIT_FULL : core_admit(core);
  if (admit == CORE_ADMIT_FULL) {
    atomic_fetch_add(&core->stats.refused_full, 1);
    LOGD(in->log, "submit to %s refused: queue full", msg->dst.addr);
    reply_to(in, rp, PROTO_E_QUEUE_FULL, NULL);
    return;
  }
  /* From here the message holds its place in in_flight (core_admit took
   * it); every refusal below gives it back. */
  struct msg head = *msg;
  struct msg *m = &head;
  const char *user = "";
  int target = -1;
  struct plugin_host *plugins = atomic_load_explicit(&core->plugins, memory_order_acquire);
  char reason[PLUGIN_HOST_REASON_LEN];
  enum plugin_host_verdict verdict =
    plugin_host_before_receive(plugins, m, c->cfg->name, origin_user, reason, sizeof reason);
  if (verdict == PLUGIN_HOST_ACCEPT)
    verdict = plugin_host_route(plugins, m, c->cfg->name, origin_user, &target, reason,
                                sizeof reason);
  if (verdict != PLUGIN_HOST_ACCEPT) {
    atomic_fetch_add(&core->stats.refused_plugin, 1);
    LOGI(in->log, "message from %s to %s refused by %s", origin_user, m->dst.addr, reason);
    atomic_fetch_sub(&core->in_flight, 1);
    reply_to(in, rp, verdict == PLUGIN_HOST_REFUSE ? PROTO_E_PERMANENT : PROTO_E_TEMPORARY, NULL);
    return;
  }
  if (target < 0)
    target = router_route_user(atomic_load_explicit(&core->router, memory_order_acquire),
                               (int)c->index, m, connector_usable, core, &user);
  struct connector *out = target >= 0 ? core_connector(core, (unsigned)target) : NULL;
  struct queue *q = out ? target_queue(out, user) : NULL;
  if (!q) {
    atomic_fetch_add(&core->stats.refused_route, 1);
    LOGI(in->log, "message from %s to %s refused: no route", origin_user,
         m->dst.addr);
    atomic_fetch_sub(&core->in_flight, 1);
    reply_to(in, rp, PROTO_E_ADDRESS, NULL);
    return;
  }
  if (out->cfg->max_queue && queue_count(q) >= out->cfg->max_queue) {
    atomic_fetch_add(&core->stats.refused_connector_full, 1);
    LOGD(in->log, "submit to %s refused: queue of %s full (%u)", msg->dst.addr,
         out->cfg->name, out->cfg->max_queue);
    atomic_fetch_sub(&core->in_flight, 1);
    reply_to(in, rp, PROTO_E_QUEUE_FULL, NULL);
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
  struct qlist parts = origin_ref(in, m) == 0 ? split_message(in, m) : (struct qlist){ 0 };
  if (!parts.count) {
    atomic_fetch_sub(&core->in_flight, 1);
    reply_to(in, rp, PROTO_E_TEMPORARY, NULL);
    return;
  }
  /* With persist on, each part is journaled and the ack waits until the
   * records are durable: an acked message survives any crash. */
  uint64_t ticket = 1;
  for (struct qitem *it = parts.head; it && core->spool; it = it->next) {
    struct spool_record rec = { .type = SPOOL_REC_MSG, .id = it->msg->id,
                                .target = (uint16_t)target, .msg = it->msg };
    uint64_t t = journal(core, &rec);
    if (!t) {
      /* The journal refuses (disk full, I/O error): never ack what is not
       * stored. Parts already journaled are marked finished. */
      for (struct qitem *done = parts.head; done != it; done = done->next)
        journal_msg_event(core, SPOOL_REC_FINISHED, done->msg->id, 0, NULL);
      while (parts.head) {
        struct qitem *next = parts.head->next;
        qitem_free(parts.head);
        parts.head = next;
      }
      atomic_fetch_sub(&core->in_flight, 1);
      atomic_fetch_add(&core->stats.refused_journal, 1);
      LOGD(in->log, "message to %s refused: the journal cannot write", msg->dst.addr);
      reply_to(in, rp, PROTO_E_TEMPORARY, NULL);
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
    core_log_event(core, DB_LOG_ACCEPTED, it->msg, target, NULL, 0, 0);
  }
  LOGD2(in->log, "accepted %" PRIu64 " from %s: %s -> %s, %u octets in %zu part%s, receipt mask %u, route %s",
        m->id, m->origin.user, m->src.addr, m->dst.addr, m->data_len, parts.count,
        parts.count == 1 ? "" : "s", m->dlr_mask, out->cfg->name);
  for (struct qitem *it = parts.head, *next; it; it = next) {
    next = it->next;
    stage(in, q, it);
  }
  if (admit == CORE_ADMIT_SLOW)
    atomic_fetch_add(&core->stats.slowed, 1);
  if (admit == CORE_ADMIT_SLOW || core->spool)
    hold_ack(in, rp, m->origin.ref, admit == CORE_ADMIT_SLOW ? SLOW_ACK_MS : 0, ticket,
             received_ns);
  else {
    reply_to(in, rp, PROTO_OK, m->origin.ref);
    latency_record(&in->counted.ack, (clock_now_ns() - received_ns) / 1000);
  }
}

/* ---- client side: what the SMSC sends us ---- */

/* Looks the receipt up in the DLR table and passes it on to the origin.
 * Returns 0 when its entry is not (or no longer) there, TICKET_REFUSED
 * when the journal began refusing after receipt_in looked (its records are
 * not kept: the SMSC must send it again), else the journal ticket that must
 * be durable before the SMSC is told we have it. */
static uint64_t match_receipt(struct instance *in, const char *key, const struct msg_receipt *r)
{
  struct dlr_info info;
  if (!dlrtab_lookup(in->conn->core->dlr, (uint16_t)in->conn->index, key,
                     msg_state_final(r->state), &info))
    return 0;
  LOGD2(in->log, "receipt for %" PRIu64 " (SMSC id %s): state %u err %u", info.msg_id, r->id,
        r->state, r->err);
  plugin_host_after_dlr(atomic_load_explicit(&in->conn->core->plugins, memory_order_acquire),
                        info.msg_id, r);
  history_add(in->conn->core->history, info.msg_id, HISTORY_RECEIPT, (uint16_t)in->conn->index, r->state,
              r->err, r->id);
  core_log_receipt(in->conn->core, info.msg_id, r);
  if (r->state == MSG_STATE_DELIVERED)
    atomic_fetch_add(&in->conn->core->stats.delivered, 1);
  uint64_t ticket = receipt_to_origin(in, &info, r);
  bool refused = ticket == 0;
  if (msg_state_final(r->state)) {
    uint64_t t = journal_msg_event(in->conn->core, SPOOL_REC_FINISHED, info.msg_id, 0, NULL);
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
    respond(in, ref, raw_status, PROTO_OP_DELIVER_RESP, PROTO_E_TEMPORARY, NULL);
    return;
  }
  if (!in->conn->core->spool) {
    respond(in, ref, raw_status, PROTO_OP_DELIVER_RESP, PROTO_OK, NULL);
    return;
  }
  struct reply rp = { .ref = ref, .raw_status = raw_status, .op = PROTO_OP_DELIVER_RESP };
  hold_ack(in, &rp, NULL, 0, ticket, 0);
}

static void receipt_in(struct instance *in, const struct proto_pdu *req)
{
  struct connector *c = in->conn;
  atomic_fetch_add(&c->core->stats.receipts_in, 1);
  in->counted.receipts_in++;
  /* The journal cannot keep what the receipt changes (disk full): the SMSC
   * sends it again later, and the DLR entry waits for it untouched. */
  if (c->core->spool && spool_failing(c->core->spool, NULL, 0)) {
    respond(in, req->ref, req->raw_status, PROTO_OP_DELIVER_RESP, PROTO_E_TEMPORARY, NULL);
    return;
  }
  char key[DLR_ID_LEN];
  if (dlr_id_normalize(key, sizeof key, req->receipt.id,
                       (enum dlr_id_type)c->cfg->msgid_receipt) < 0) {
    unmatched(in, &req->receipt);
    respond(in, req->ref, req->raw_status, PROTO_OP_DELIVER_RESP, PROTO_OK, NULL);
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
    respond(in, req->ref, req->raw_status, PROTO_OP_DELIVER_RESP, PROTO_OK, NULL);
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
      respond(in, e->ref, e->raw_status, PROTO_OP_DELIVER_RESP, PROTO_E_TEMPORARY, NULL);
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
    journal_msg_event(in->conn->core, SPOOL_REC_RECEIPT_DONE, e->journal_id, 0, NULL);
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
static void retry_early_receipts(struct instance *in, bool give_up)
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

/* ---- session callbacks ---- */

static enum proto_status on_bind(struct session *s, const struct proto_pdu *bind)
{
  struct instance *in = session_app(s);
  const struct config_connector *cfg = in->conn->cfg;
  for (unsigned i = 0; i < cfg->n_users; i++)
    if (strcmp(cfg->users[i].name, bind->user) == 0 &&
        strcmp(cfg->users[i].password, bind->password) == 0) {
      in->user = (int)i;
      return PROTO_OK;
    }
  atomic_fetch_add(&in->conn->core->stats.binds_refused, 1);
  LOGW(in->log, "bind from %s as '%s' refused: unknown account or wrong password",
       session_peer(s), bind->user);
  return PROTO_E_AUTH;
}

static void on_bound(struct session *s)
{
  struct instance *in = session_app(s);
  struct connector *c = in->conn;
  atomic_store(&in->bound, true);
  in->backoff_ms = 0;
  in->counted.connected_since = time(NULL);
  instance_publish(in, true);
  if (is_server(c) && in->user >= 0) {
    in->waiting_on = &c->user_queues[in->user];
    queue_add_waiter(in->waiting_on, in->loop, &in->ready);
  }
  LOGI(in->log, "instance %u bound%s%s (%s)", in->index, is_server(c) ? " as " : "",
       is_server(c) ? session_user(s) : "", session_peer(s));
  pump(in);
}

static void on_request(struct session *s, const struct proto_pdu *req)
{
  struct instance *in = session_app(s);
  struct connector *c = in->conn;
  if (is_server(c) && req->op == PROTO_OP_SUBMIT) {
    struct reply rp = { .ref = req->ref, .raw_status = req->raw_status, .op = PROTO_OP_SUBMIT_RESP };
    accept_message(in, &req->msg, session_user(s), &rp);
  } else if (!is_server(c) && req->op == PROTO_OP_DELIVER && req->is_receipt) {
    receipt_in(in, req);
  } else if (!is_server(c) && req->op == PROTO_OP_DELIVER) {
    /* An MO: routed like any other message. */
    atomic_fetch_add(&c->core->stats.mo_in, 1);
    struct reply rp = { .ref = req->ref, .raw_status = req->raw_status, .op = PROTO_OP_DELIVER_RESP };
    accept_message(in, &req->msg, session_user(s), &rp);
  } else {
    respond(in, req->ref, req->raw_status,
            req->op == PROTO_OP_DELIVER ? PROTO_OP_DELIVER_RESP : PROTO_OP_SUBMIT_RESP,
            PROTO_E_BIND_STATE, NULL);
  }
}

static void submit_answered(struct instance *in, struct qitem *it, const struct proto_pdu *resp)
{
  struct connector *c = in->conn;
  struct core *core = c->core;
  plugins_sent(in, it->msg, resp->status == PROTO_OK ? EMG_PLUGIN_SENT
                           : proto_status_temporary(resp->status) ? EMG_PLUGIN_SEND_TEMPORARY
                                                                   : EMG_PLUGIN_SEND_FAILED);
  if (resp->status == PROTO_OK) {
    atomic_fetch_add(&core->stats.sent, 1);
    atomic_fetch_sub(&core->in_flight, 1);
    history_add(core->history, it->msg->id, HISTORY_SENT, (uint16_t)c->index, 0, 0, resp->msgid);
    int64_t waited_ms = clock_wall_ms() - it->msg->received_ms;
    latency_record(&in->counted.delivery, waited_ms > 0 ? (uint64_t)waited_ms * 1000 : 0);
    char key[DLR_ID_LEN];
    bool awaits_receipt = false;
    /* An HTTP provider sends no receipts this gateway could match. */
    if (it->msg->dlr_mask && !c->cfg->http) {
      struct dlr_info info;
      dlr_info_from_msg(&info, it->msg);
      if (dlr_id_normalize(key, sizeof key, resp->msgid, (enum dlr_id_type)c->cfg->msgid_submit) < 0 ||
          dlrtab_insert(core->dlr, (uint16_t)c->index, key, &info, time(NULL)) == -1)
        LOGW(in->log, "message %" PRIu64 ": SMSC id '%s' unusable, its receipt cannot be matched",
             it->msg->id, resp->msgid);
      else
        awaits_receipt = true;
    }
    /* The journal keeps a message that awaits its receipt (its DLR entry),
     * and lets go of one that needs nothing more. */
    if (awaits_receipt)
      journal_msg_event(core, SPOOL_REC_SENT, it->msg->id, (uint16_t)c->index, key);
    else
      journal_msg_event(core, SPOOL_REC_FINISHED, it->msg->id, 0, NULL);
    core_log_event(core, DB_LOG_SENT, it->msg, (int)c->index, awaits_receipt ? key : NULL, 0, 0);
    LOGD2(in->log, "message %" PRIu64 " accepted by the SMSC as %s", it->msg->id, resp->msgid);
    qitem_free(it);
  } else if (proto_status_temporary(resp->status)) {
    /* Throttled or full: keep the queue's order and back off this instance. */
    atomic_fetch_add(&core->stats.retried, 1);
    it->attempts++;
    history_add(core->history, it->msg->id, HISTORY_RETRY, (uint16_t)c->index, 0, resp->raw_status,
                proto_status_name(resp->status));
    in->backoff_ms = in->backoff_ms ? in->backoff_ms * 2 : 100;
    if (in->backoff_ms > 10000)
      in->backoff_ms = 10000;
    in->paused_until_ms = evloop_now_ms(in->loop) + in->backoff_ms;
    atomic_store(&in->ready, false);   /* the requeue below wakes another instance */
    it->next_attempt_ms = (int64_t)time(NULL) * 1000 + (int64_t)in->backoff_ms;
    LOGD(in->log, "message %" PRIu64 ": %s, retrying in %" PRIu64 " ms", it->msg->id,
         proto_status_name(resp->status), in->backoff_ms);
    requeue_front(&c->out, it);
  } else {
    LOGI(in->log, "message %" PRIu64 " to %s refused by the SMSC: %s (%u)", it->msg->id,
         it->msg->dst.addr, proto_status_name(resp->status), resp->raw_status);
    give_up_message(in, it, MSG_STATE_REJECTED, resp->raw_status);
  }
}

/* A message delivered to a client of ours (an MO, or from another client)
 * was answered. Taken: it is done, and an origin that asked for a receipt
 * hears it was delivered, as an SMSC would tell it. */
static void delivery_answered(struct instance *in, struct qitem *it, const struct proto_pdu *resp)
{
  struct core *core = in->conn->core;
  if (proto_status_temporary(resp->status)) {
    it->attempts++;
    requeue_front(&in->conn->user_queues[in->user], it);
    return;
  }
  if (resp->status != PROTO_OK) {
    LOGI(in->log, "message %" PRIu64 " refused by %s: %s", it->msg->id, session_user(in->session),
         proto_status_name(resp->status));
    give_up_message(in, it, MSG_STATE_REJECTED, resp->raw_status);
    return;
  }
  atomic_fetch_add(&core->stats.sent, 1);
  atomic_fetch_sub(&core->in_flight, 1);
  history_add(core->history, it->msg->id, HISTORY_SENT, (uint16_t)in->conn->index, 0, 0,
              session_user(in->session));
  core_log_event(core, DB_LOG_SENT, it->msg, (int)in->conn->index, NULL, 0, 0);
  journal_msg_event(core, SPOOL_REC_FINISHED, it->msg->id, 0, NULL);
  if (it->msg->dlr_mask) {
    struct dlr_info info;
    dlr_info_from_msg(&info, it->msg);
    struct msg_receipt r = { 0 };
    r.state = MSG_STATE_DELIVERED;
    r.done_time = time(NULL);
    receipt_to_origin(in, &info, &r);
  }
  qitem_free(it);
}

/* A response to a request of ours (a session's, or an HTTP provider's answer). */
static void response_in(struct instance *in, struct qitem *it, const struct proto_pdu *resp)
{
  if (it->sent_ns)
    latency_record(&in->counted.response, (clock_now_ns() - it->sent_ns) / 1000);
  if (resp->status == PROTO_OK) {
    if (it->kind == QITEM_MSG)
      in->counted.submits_out++;
    else
      in->counted.receipts_out++;
  } else {
    instance_error(in, "%s %" PRIu64 " refused: %s (%u)", it->kind == QITEM_MSG ? "message" : "receipt",
                   it->kind == QITEM_MSG ? it->msg->id : it->journal_id, proto_status_name(resp->status),
                   resp->raw_status);
    it->last_status = (uint8_t)resp->status;
  }
  if (it->kind == QITEM_MSG && is_server(in->conn)) {
    delivery_answered(in, it, resp);
    return;
  }
  if (it->kind == QITEM_MSG) {
    submit_answered(in, it, resp);
    if (resp->status == PROTO_OK)
      in->backoff_ms = 0;
    return;
  }
  if (resp->status == PROTO_OK) {
    atomic_fetch_add(&in->conn->core->stats.receipts_out, 1);
    history_add(in->conn->core->history, it->msg_id, HISTORY_RECEIPT_DELIVERED, (uint16_t)in->conn->index,
                it->receipt.state, 0, session_user(in->session));
    if (it->journal_id)
      journal_msg_event(in->conn->core, SPOOL_REC_RECEIPT_DONE, it->journal_id, 0, NULL);
    qitem_free(it);
    return;
  }
  /* The client could not take it now: it stays first for this account. */
  it->attempts++;
  requeue_front(&in->conn->user_queues[in->user], it);
}

static void on_response(struct session *s, void *cookie, const struct proto_pdu *resp)
{
  response_in(session_app(s), cookie, resp);
}

static void on_unanswered(struct session *s, void *cookie, enum session_loss why)
{
  struct instance *in = session_app(s);
  struct qitem *it = cookie;
  struct connector *c = in->conn;
  if (why == SESSION_LOST_TIMEOUT)
    instance_error(in, "no response to a %s within %u ms", it->kind == QITEM_MSG ? "message" : "receipt",
                   c->cfg->response_timeout_ms);
  if (it->kind == QITEM_MSG)
    history_add(c->core->history, it->msg->id, HISTORY_RETRY, (uint16_t)c->index, 0, 0,
                why == SESSION_LOST_TIMEOUT ? "no response" : "connection lost");
  if (it->kind == QITEM_MSG && !is_server(c)) {
    atomic_fetch_add(&c->core->stats.retried, 1);
    requeue_front(&c->out, it);
  } else if (in->user >= 0) {
    requeue_front(&c->user_queues[in->user], it);
  } else {
    qitem_free(it);
  }
}

static void on_ready(struct session *s)
{
  pump(session_app(s));
}

static void on_disconnect(struct session *s, const char *reason)
{
  struct instance *in = session_app(s);
  atomic_store(&in->bound, false);
  atomic_store(&in->ready, false);
  if (!is_server(in->conn))   /* a client leaving is no error of ours */
    instance_error(in, "connection lost: %s", reason);
  if (in->waiting_on) {
    queue_remove_waiter(in->waiting_on, in->loop);
    in->waiting_on = NULL;
  }
  if (is_server(in->conn)) {
    LOGI(in->log, "instance %u: session from %s ended: %s", in->index, session_peer(s), reason);
    release_held_acks(in, true);
    /* Destroying reports the receipts still unanswered, which go back to
     * the account's queue: the account must still be known then. */
    session_destroy(s);
    in->session = NULL;
    in->user = -1;
    atomic_store(&in->busy, false);
  } else {
    LOGW(in->log, "instance %u: connection to %s lost: %s", in->index, in->conn->cfg->connect,
         reason);
  }
}

static const struct session_handler instance_handler = {
  .on_bind = on_bind,
  .on_bound = on_bound,
  .on_request = on_request,
  .on_response = on_response,
  .on_unanswered = on_unanswered,
  .on_ready = on_ready,
  .on_disconnect = on_disconnect,
};

/* ---- instance threads ---- */

/* ---- HTTP connectors ----
 *
 * An HTTP server connector has no sessions: libmicrohttpd's threads hand
 * each message of a request to an instance (round robin), whose thread
 * takes it through the same accept path as a submit, and completes the
 * request's message where a session would answer. Receipts for its
 * accounts go back by callback (the URL the message came with), sent by
 * one callback sender per connector; instance 0 feeds it and, when a
 * callback is done, marks the receipt delivered.
 *
 * An HTTP client connector's instances each own a client on their loop and
 * send what the out queue holds, as many at once as its window allows; the
 * provider's answer is handled as an SMSC's submit response. */

struct http_inbox_item {
  struct http_inbox_item *next;
  struct msg *msg;                 /* owned; origin.user and the callback set */
  struct http_server_completion completion;
};

struct http_done_item {
  struct http_done_item *next;
  struct qitem *receipt;
  enum http_callback_outcome outcome;
};

static int http_check_user(void *ctx, const char *user, const char *password)
{
  const struct connector *c = ctx;
  for (unsigned i = 0; i < c->cfg->n_users; i++)
    if (strcmp(c->cfg->users[i].name, user) == 0 && strcmp(c->cfg->users[i].password, password) == 0)
      return 0;
  atomic_fetch_add(&c->core->stats.binds_refused, 1);
  return -1;
}

/* In a libmicrohttpd thread: the message goes to an instance's inbox. */
static void http_submit(void *ctx, const struct http_server_message *hm, struct http_server_completion done)
{
  struct connector *c = ctx;
  struct msg m = *hm->msg;
  m.dlr_mask &= MSG_DLR_DELIVERED | MSG_DLR_FAILED | MSG_DLR_BUFFERED;   /* Kannel's 8 and 16: SMSC level */
  m.callback = hm->dlr_url;
  m.callback_method = !hm->dlr_url ? MSG_CALLBACK_NONE
                      : hm->dlr_method == HTTP_CODEC_DLR_POST ? MSG_CALLBACK_POST : MSG_CALLBACK_GET;
  if (!m.callback)
    m.dlr_mask = 0;   /* no URL: nowhere to send a receipt */
  struct http_inbox_item *item = malloc(sizeof *item);
  if (!item || !(item->msg = msg_clone(&m))) {
    free(item);
    http_server_complete(done, HTTP_CODEC_TEMPORARY, 0);
    return;
  }
  item->completion = done;
  item->next = NULL;
  struct instance *in = &c->instances[atomic_fetch_add(&c->next_serial, 1) % c->n_instances];
  pthread_mutex_lock(&in->handoff_lock);
  if (in->inbox_tail)
    in->inbox_tail->next = item;
  else
    in->inbox_head = item;
  in->inbox_tail = item;
  pthread_mutex_unlock(&in->handoff_lock);
  evloop_wake(in->loop);
}

/* In the instance's thread: what libmicrohttpd's threads handed over. */
static void http_take_inbox(struct instance *in)
{
  pthread_mutex_lock(&in->handoff_lock);
  struct http_inbox_item *item = in->inbox_head;
  in->inbox_head = in->inbox_tail = NULL;
  pthread_mutex_unlock(&in->handoff_lock);
  while (item) {
    struct http_inbox_item *next = item->next;
    struct reply rp = { .http = true, .completion = item->completion };
    if (atomic_load(&in->phase) != PHASE_RUN)
      reply_to(in, &rp, PROTO_E_TEMPORARY, NULL);
    else
      accept_message(in, item->msg, item->msg->origin.user, &rp);
    msg_free(item->msg);
    free(item);
    item = next;
  }
}

/* In the callback sender's thread: a receipt's callback is done. */
static void http_callback_done(void *arg, void *cookie, enum http_callback_outcome outcome)
{
  struct connector *c = arg;
  struct instance *in = &c->instances[0];
  struct http_done_item *d = malloc(sizeof *d);
  if (!d) {
    qitem_free(cookie);   /* not marked delivered: with persist on it comes back at restart */
    return;
  }
  d->receipt = cookie;
  d->outcome = outcome;
  pthread_mutex_lock(&in->handoff_lock);
  d->next = in->callbacks_done;
  in->callbacks_done = d;
  pthread_mutex_unlock(&in->handoff_lock);
  evloop_wake(in->loop);
}

static void http_take_done(struct instance *in)
{
  pthread_mutex_lock(&in->handoff_lock);
  struct http_done_item *d = in->callbacks_done;
  in->callbacks_done = NULL;
  pthread_mutex_unlock(&in->handoff_lock);
  struct core *core = in->conn->core;
  while (d) {
    struct http_done_item *next = d->next;
    struct qitem *it = d->receipt;
    if (d->outcome == HTTP_CALLBACK_SENT) {
      atomic_fetch_add(&core->stats.receipts_out, 1);
      in->counted.receipts_out++;
      history_add(core->history, it->msg_id, HISTORY_RECEIPT_DELIVERED, (uint16_t)in->conn->index,
                  it->receipt.state, 0, "callback");
    } else {
      instance_error(in, "receipt callback for message %" PRIu64 " failed: %s", it->msg_id,
                     d->outcome == HTTP_CALLBACK_FAILED ? "refused or out of attempts" : "dropped at stop");
      LOGW(in->log, "receipt for message %" PRIu64 " could not be called back to %s", it->msg_id, it->callback);
    }
    /* Sent, or given up after its retries: either way it needs nothing more.
     * Dropped at stop: left in the journal, it is sent again after a restart. */
    if (d->outcome != HTTP_CALLBACK_DROPPED && it->journal_id)
      journal_msg_event(core, SPOOL_REC_RECEIPT_DONE, it->journal_id, 0, NULL);
    qitem_free(it);
    free(d);
    d = next;
  }
}

/* Sends one receipt's callback; false when the sender is full (it is
 * requeued by the caller). */
static bool http_send_receipt(struct instance *in, struct qitem *it)
{
  struct connector *c = in->conn;
  char url[MSG_CALLBACK_LEN + 2048], body[2048];
  /* %i: the connector the message went out on; empty when the receipt came
   * back through another node or from the journal after a restart. */
  struct http_codec_dlr d = { .receipt = &it->receipt, .id = it->msg_id, .time = time(NULL),
                              .smsc = it->via ? core_connector(c->core, it->via - 1u)->cfg->name : NULL };
  int n = it->callback_method == MSG_CALLBACK_POST
            ? (str_copy(url, sizeof url, it->callback), http_codec_dlr_json(body, sizeof body, &d))
            : http_codec_dlr_url(url, sizeof url, it->callback, &d);
  if (n < 0) {
    LOGW(in->log, "receipt for message %" PRIu64 ": callback %s cannot be expanded: dropped", it->msg_id,
         it->callback);
    if (it->journal_id)
      journal_msg_event(c->core, SPOOL_REC_RECEIPT_DONE, it->journal_id, 0, NULL);
    qitem_free(it);
    return true;
  }
  int rc = http_callback_send(c->callbacks, url, it->callback_method == MSG_CALLBACK_POST ? HTTP_CALLBACK_POST
                                                                                         : HTTP_CALLBACK_GET,
                              it->callback_method == MSG_CALLBACK_POST ? body : NULL, it);
  if (rc == HTTP_CALLBACK_E_FULL)
    return false;
  if (rc < 0) {
    LOGW(in->log, "receipt for message %" PRIu64 " not called back: %s", it->msg_id,
         rc == HTTP_CALLBACK_E_STOPPED ? "stopping" : "no URL or memory");
    qitem_free(it);
    return true;
  }
  return true;
}

/* Instance 0 of an HTTP server connector: the receipts (and anything else)
 * waiting for its accounts. A message routed to an HTTP account has no way
 * to it: it fails. */
static void http_pump_receipts(struct instance *in)
{
  struct connector *c = in->conn;
  for (unsigned u = 0; u < c->cfg->n_users; u++) {
    struct qlist l = { 0 };
    while (queue_take(&c->user_queues[u], PUMP_BATCH, &l)) {
      for (struct qitem *it = l.head, *next; it; it = next) {
        next = it->next;
        if (it->kind == QITEM_MSG) {
          LOGW(in->log, "message %" PRIu64 " routed to HTTP account %s: HTTP clients take no messages",
               it->msg->id, c->cfg->users[u].name);
          give_up_message(in, it, MSG_STATE_UNDELIVERABLE, 0);
        } else if (!it->callback) {
          /* Its origin gave no URL: nobody to tell. */
          if (it->journal_id)
            journal_msg_event(c->core, SPOOL_REC_RECEIPT_DONE, it->journal_id, 0, NULL);
          qitem_free(it);
        } else if (!http_send_receipt(in, it)) {
          requeue_rest(&c->user_queues[u], it, l.tail);
          return;
        }
      }
      memset(&l, 0, sizeof l);
    }
  }
}

/* In the instance's thread: the provider answered (or not). */
static void http_client_answered(void *arg, void *cookie, const struct http_client_result *r)
{
  struct instance *in = arg;
  struct qitem *it = cookie;
  struct proto_pdu resp;
  memset(&resp, 0, sizeof resp);
  resp.op = PROTO_OP_SUBMIT_RESP;
  resp.status = r->status;
  resp.raw_status = (uint32_t)r->http_status;
  str_copy(resp.msgid, sizeof resp.msgid, r->msgid);
  if (r->status != PROTO_OK)
    LOGD(in->log, "message %" PRIu64 ": provider answered %ld: %s", it->msg->id, r->http_status, r->detail);
  response_in(in, it, &resp);
}

/* An HTTP client instance: what the out queue holds, as far as its window goes. */
static void http_pump_out(struct instance *in)
{
  struct connector *c = in->conn;
  unsigned room;
  while (in->http_client && (room = http_client_room(in->http_client)) > 0) {
    struct qlist l = { 0 };
    if (!queue_take(&c->out, room < PUMP_BATCH ? room : PUMP_BATCH, &l))
      return;
    for (struct qitem *it = l.head, *next; it; it = next) {
      next = it->next;
      if (!may_send(in, it))
        continue;
      it->sent_ns = clock_now_ns();
      int rc = http_client_submit(in->http_client, it->msg, it);
      if (rc == HTTP_CLIENT_E_TEMPLATE) {
        LOGW(in->log, "message %" PRIu64 " does not fit the URL template: failed", it->msg->id);
        give_up_message(in, it, MSG_STATE_REJECTED, 0);
      } else if (rc < 0) {
        requeue_rest(&c->out, it, l.tail);
        return;
      }
    }
  }
}

static int http_connector_start(struct connector *c, char *err)
{
  if (!is_server(c))
    return 0;
  struct http_callback_limits limits = { 0 };
  c->callbacks = http_callback_start(&limits, http_callback_done, c);
  struct http_server_config scfg = { .listen = c->cfg->listen, .threads = 1 };
  struct http_server_handler h = { .check_user = http_check_user, .submit = http_submit, .ctx = c };
  if (!c->callbacks || !(c->http_server = http_server_start(&scfg, &h, err)))
    return -1;
  atomic_store(&c->accepting, true);
  for (unsigned i = 0; i < c->n_instances; i++)
    atomic_store(&c->instances[i].bound, true);
  return 0;
}

static void take_handoff(struct instance *in)
{
  pthread_mutex_lock(&in->handoff_lock);
  int fd = in->handoff_fd;
  char peer[64];
  memcpy(peer, in->handoff_peer, sizeof peer);
  in->handoff_fd = -1;
  pthread_mutex_unlock(&in->handoff_lock);
  if (fd < 0)
    return;
  in->user = -1;
  in->session = session_server_create(in->loop, fd, peer, &in->conn->session_cfg,
                                      &instance_handler, in);
  if (!in->session) {
    LOGE(in->log, "instance %u: no session for %s (out of memory)", in->index, peer);
    atomic_store(&in->busy, false);
  }
}

static void on_wake(struct evloop *loop, void *arg)
{
  struct instance *in = arg;
  int phase = atomic_load(&in->phase);
  if (phase == PHASE_EXIT) {
    evloop_stop(loop);
    return;
  }
  if (phase == PHASE_STOP_SESSION) {
    if (in->session && session_state(in->session) != SESSION_CLOSED)
      session_stop(in->session);
    if (in->conn->cfg->http) {
      http_take_inbox(in);      /* what came before the stop is still answered */
      atomic_store(&in->bound, false);
    }
    return;
  }
  if (in->conn->cfg->http) {
    http_take_inbox(in);
    http_take_done(in);
  } else if (is_server(in->conn) && !in->session) {
    take_handoff(in);
  }
  release_held_acks(in, false);
  pump(in);
}

/* The journal made more records durable: acks may go out. Called from the
 * journal's writer thread; the instance's own thread does the rest. */
static void journal_advanced(void *arg)
{
  struct instance *in = arg;
  uint64_t waits = atomic_load(&in->held_ticket);
  if (waits && waits <= spool_durable(in->conn->core->spool))
    evloop_wake(in->loop);
}

static void on_tick(struct evloop *loop, void *arg)
{
  struct instance *in = arg;
  instance_publish(in, false);
  release_held_acks(in, false);
  retry_early_receipts(in, false);
  pump(in);
}

/* An HTTP instance's thread: its client (client connectors) or the
 * receipt queues it feeds to callbacks (instance 0 of a server connector). */
static void http_instance_run(struct instance *in)
{
  struct connector *c = in->conn;
  if (!is_server(c)) {
    struct http_client_config hc = {
      .url = c->cfg->url, .method = (enum http_client_method)c->cfg->http_method,
      .body = c->cfg->body[0] ? c->cfg->body : NULL, .id_field = c->cfg->id_field[0] ? c->cfg->id_field : NULL,
      .smsc = c->cfg->name, .user = c->cfg->system_id[0] ? c->cfg->system_id : NULL,
      .password = c->cfg->password, .connections = c->cfg->connections, .window = c->cfg->window,
      .timeout_ms = c->cfg->response_timeout_ms,
    };
    in->http_client = http_client_create(in->loop, &hc, http_client_answered, in);
    if (!in->http_client)
      LOGE(in->log, "instance %u: cannot create its HTTP client", in->index);
    atomic_store(&in->bound, in->http_client != NULL);
    queue_add_waiter(&c->out, in->loop, &in->ready);
  } else if (in->index == 0) {
    for (unsigned u = 0; u < c->cfg->n_users; u++)
      queue_add_waiter(&c->user_queues[u], in->loop, NULL);
  }
  instance_publish(in, true);
  evloop_run(in->loop);
  if (!is_server(c)) {
    queue_remove_waiter(&c->out, in->loop);
    http_client_destroy(in->http_client);   /* what is outstanding comes back as temporary: requeued */
    in->http_client = NULL;
  } else if (in->index == 0) {
    for (unsigned u = 0; u < c->cfg->n_users; u++)
      queue_remove_waiter(&c->user_queues[u], in->loop);
  }
  atomic_store(&in->bound, false);
  http_take_inbox(in);
  flush_stages(in->loop, in);
  release_held_acks(in, true);
}

static void *instance_main(void *arg)
{
  struct instance *in = arg;
  struct connector *c = in->conn;
  batching = in;
  if (c->cfg->http) {
    http_instance_run(in);
    return NULL;
  }
  if (!is_server(c)) {
    in->session = session_client_create(in->loop, &c->session_cfg, &instance_handler, in);
    if (!in->session)
      LOGE(in->log, "instance %u: cannot create its session", in->index);
    queue_add_waiter(&c->out, in->loop, &in->ready);
    in->waiting_on = NULL;
  }
  evloop_run(in->loop);
  if (!is_server(c))
    queue_remove_waiter(&c->out, in->loop);
  if (in->waiting_on)
    queue_remove_waiter(in->waiting_on, in->loop);
  if (in->session) {
    session_destroy(in->session);
    in->session = NULL;
  }
  retry_early_receipts(in, true);
  flush_stages(in->loop, in);
  release_held_acks(in, true);
  return NULL;
}

/* ---- listener (server connectors) ---- */

/* A connection beyond the connector's instances gets a session of its own
 * in the listener's loop, only to answer its bind with a refusal (SMPP
 * ESME_RBINDFAIL, UCP NACK 07) and close: the client learns why, instead of
 * seeing its connection drop. */
static enum proto_status refuse_bind(struct session *s, const struct proto_pdu *bind)
{
  struct connector *c = session_app(s);
  atomic_fetch_add(&c->core->stats.sessions_refused, 1);
  LOGW(c->log, "bind from %s as '%s' refused: all %u instances are in use", session_peer(s),
       bind->user, c->n_instances);
  return PROTO_E_AUTH;
}

static void refused_gone(struct session *s, const char *reason)
{
  struct connector *c = session_app(s);
  for (unsigned i = 0; i < sizeof c->refusing / sizeof c->refusing[0]; i++)
    if (c->refusing[i] == s)
      c->refusing[i] = NULL;
  session_destroy(s);
}

static void refuse_request(struct session *s, const struct proto_pdu *req)
{
  struct proto_pdu resp;
  memset(&resp, 0, sizeof resp);
  resp.op = req->op == PROTO_OP_DELIVER ? PROTO_OP_DELIVER_RESP : PROTO_OP_SUBMIT_RESP;
  resp.ref = req->ref;
  resp.raw_status = req->raw_status;
  resp.status = PROTO_E_BIND_STATE;
  session_respond(s, &resp);
}

static const struct session_handler refuse_handler = {
  .on_bind = refuse_bind,
  .on_request = refuse_request,
  .on_disconnect = refused_gone,
};

static void refuse_session(struct connector *c, int fd, const char *peer)
{
  /* A bounded number at a time: a flood of extra connections is closed. */
  unsigned slot = 0;
  while (slot < sizeof c->refusing / sizeof c->refusing[0] && c->refusing[slot])
    slot++;
  if (slot == sizeof c->refusing / sizeof c->refusing[0] || !atomic_load(&c->accepting) ||
      !(c->refusing[slot] = session_server_create(c->accept_loop, fd, peer, &c->session_cfg,
                                                  &refuse_handler, c))) {
    atomic_fetch_add(&c->core->stats.sessions_refused, 1);
    LOGW(c->log, "connection from %s closed: all %u instances are in use", peer, c->n_instances);
    close(fd);
  }
}

static void on_accept(struct evloop *loop, int fd, unsigned events, void *arg)
{
  struct connector *c = arg;
  char peer[64];
  int cfd;
  while ((cfd = net_accept(fd, peer, sizeof peer)) != -1) {
    struct instance *free_in = NULL;
    for (unsigned i = 0; i < c->n_instances && !free_in; i++) {
      bool expected = false;
      if (atomic_compare_exchange_strong(&c->instances[i].busy, &expected, true))
        free_in = &c->instances[i];
    }
    if (!free_in || !atomic_load(&c->accepting)) {
      if (free_in)
        atomic_store(&free_in->busy, false);
      refuse_session(c, cfd, peer);
      continue;
    }
    pthread_mutex_lock(&free_in->handoff_lock);
    free_in->handoff_fd = cfd;
    str_copy(free_in->handoff_peer, sizeof free_in->handoff_peer, peer);
    pthread_mutex_unlock(&free_in->handoff_lock);
    evloop_wake(free_in->loop);
  }
}

static void on_accept_wake(struct evloop *loop, void *arg)
{
  struct connector *c = arg;
  if (!atomic_load(&c->accepting))
    evloop_stop(loop);
}

static void *accept_main(void *arg)
{
  struct connector *c = arg;
  evloop_run(c->accept_loop);
  for (unsigned i = 0; i < sizeof c->refusing / sizeof c->refusing[0]; i++)
    if (c->refusing[i]) {
      session_destroy(c->refusing[i]);
      c->refusing[i] = NULL;
    }
  evloop_remove(c->accept_loop, c->listen_fd);
  close(c->listen_fd);
  c->listen_fd = -1;
  return NULL;
}

/* ---- life cycle ---- */

struct connector *connector_create(struct core *core, unsigned index, char *err)
{
  const struct config_connector *cfg = &core->cfg->connectors[index];
  struct connector *c = calloc(1, sizeof *c);
  char category[CONFIG_NAME_LEN + 16];
  if (!c) {
    snprintf(err, NETUTIL_ERR_LEN, "out of memory");
    return NULL;
  }
  c->core = core;
  c->cfg = cfg;
  c->index = index;
  c->listen_fd = -1;
  snprintf(category, sizeof category, "emg.conn.%s", cfg->name);
  c->log = log_category(category);
  queue_init(&c->out);
  pthread_mutex_init(&c->scts_lock, NULL);
  c->session_cfg = (struct session_config){
    .proto = cfg->proto,
    .role = cfg->mode == CONFIG_CONN_SERVER ? SESSION_SERVER : SESSION_CLIENT,
    .connect = cfg->connect,
    .bind_mode = cfg->bind_mode,
    .user = cfg->system_id,
    .password = cfg->password,
    .window = cfg->window,
    .response_timeout_ms = cfg->response_timeout_ms,
    .keepalive_ms = cfg->keepalive_ms,
    .reconnect_min_ms = cfg->reconnect_min_ms,
    .reconnect_max_ms = cfg->reconnect_max_ms,
    /* The connector's limit is shared by its instances. */
    .max_rate = cfg->max_rate > 0 ? cfg->max_rate / cfg->instances : 0,
  };
  if (is_server(c)) {
    c->user_queues = calloc(cfg->n_users ? cfg->n_users : 1, sizeof *c->user_queues);
    for (unsigned i = 0; c->user_queues && i < cfg->n_users; i++)
      queue_init(&c->user_queues[i]);
    if (cfg->proto && strcmp(cfg->proto->name, "ucp") == 0)
      c->scts = ucp_scts_alloc_create(1 << 16);
  }
  c->n_instances = cfg->instances;
  c->instances = calloc(c->n_instances, sizeof *c->instances);
  if (!c->instances || (is_server(c) && !c->user_queues) ||
      (is_server(c) && cfg->proto && strcmp(cfg->proto->name, "ucp") == 0 && !c->scts)) {
    snprintf(err, NETUTIL_ERR_LEN, "out of memory");
    connector_destroy(c);
    return NULL;
  }
  for (unsigned i = 0; i < c->n_instances; i++) {
    struct instance *in = &c->instances[i];
    in->conn = c;
    in->index = i;
    in->log = c->log;
    in->user = -1;
    in->handoff_fd = -1;
    pthread_mutex_init(&in->handoff_lock, NULL);
    pthread_mutex_init(&in->info_lock, NULL);
    in->loop = evloop_create(10);
    if (!in->loop || evloop_tick(in->loop, on_tick, in) == -1) {
      snprintf(err, NETUTIL_ERR_LEN, "cannot create the event loop of instance %u", i);
      connector_destroy(c);
      return NULL;
    }
    evloop_on_wake(in->loop, on_wake, in);
  }
  core->connectors[index] = c;
  return c;
}

int connector_start(struct connector *c, char *err)
{
  if (c->core->spool)
    for (unsigned i = 0; i < c->n_instances; i++)
      if (spool_on_durable(c->core->spool, journal_advanced, &c->instances[i]) == -1) {
        snprintf(err, NETUTIL_ERR_LEN, "too many journal listeners");
        return -1;
      }
  if (c->cfg->http) {
    if (http_connector_start(c, err) < 0)
      return -1;
  } else if (is_server(c)) {
    c->listen_fd = net_listen(c->cfg->listen, err);
    if (c->listen_fd == -1)
      return -1;
    c->accept_loop = evloop_create(100);
    if (!c->accept_loop ||
        evloop_add(c->accept_loop, c->listen_fd, EVLOOP_READ, on_accept, c) == -1) {
      snprintf(err, NETUTIL_ERR_LEN, "cannot watch the listener of %s", c->cfg->name);
      return -1;
    }
    evloop_on_wake(c->accept_loop, on_accept_wake, c);
    atomic_store(&c->accepting, true);
  }
  for (unsigned i = 0; i < c->n_instances; i++) {
    if (pthread_create(&c->instances[i].thread, NULL, instance_main, &c->instances[i]) != 0) {
      snprintf(err, NETUTIL_ERR_LEN, "cannot start instance %u: %s", i, strerror(errno));
      return -1;
    }
    /* Named for top -H and perf: the connector (cut to fit 15 bytes) and the instance. */
    char name[16];
    snprintf(name, sizeof name, "%.10s/%u", c->cfg->name, i % 1000);
    pthread_setname_np(c->instances[i].thread, name);
    c->instances[i].started = true;
  }
  if (c->cfg->http) {
    LOGI(c->log, "%s %s (http, %u instances)", is_server(c) ? "listening on" : "sending to",
         is_server(c) ? c->cfg->listen : c->cfg->url, c->n_instances);
  } else if (is_server(c)) {
    if (pthread_create(&c->accept_thread, NULL, accept_main, c) != 0) {
      snprintf(err, NETUTIL_ERR_LEN, "cannot start the listener: %s", strerror(errno));
      return -1;
    }
    char name[16];
    snprintf(name, sizeof name, "%.10s/lsn", c->cfg->name);
    pthread_setname_np(c->accept_thread, name);
    c->accept_started = true;
    LOGI(c->log, "listening on %s (%s, %u instances)", c->cfg->listen, c->cfg->proto->name,
         c->n_instances);
  } else {
    LOGI(c->log, "connecting to %s (%s, %u instances, window %u)", c->cfg->connect,
         c->cfg->proto->name, c->n_instances, c->cfg->window);
  }
  return 0;
}

static void set_phase(struct connector *c, int phase)
{
  for (unsigned i = 0; i < c->n_instances; i++) {
    atomic_store(&c->instances[i].phase, phase);
    if (c->instances[i].started)
      evloop_wake(c->instances[i].loop);
  }
}

void connector_stop_accepting(struct connector *c)
{
  if (!is_server(c))
    return;
  if (c->http_server) {
    /* Waits (bounded) for the requests in progress: the instances still
     * complete them. */
    atomic_store(&c->accepting, false);
    http_server_stop(c->http_server, 5000);
    c->http_server = NULL;
  }
  if (c->accept_started) {
    atomic_store(&c->accepting, false);
    evloop_wake(c->accept_loop);
    pthread_join(c->accept_thread, NULL);
    c->accept_started = false;
  }
  set_phase(c, PHASE_STOP_SESSION);
}

void connector_stop(struct connector *c, unsigned timeout_ms)
{
  connector_stop_accepting(c);
  set_phase(c, PHASE_STOP_SESSION);
  uint64_t deadline = clock_now_ms() + timeout_ms;
  while (connector_bound(c) > 0 && clock_now_ms() < deadline) {
    struct timespec ts = { 0, 10000000 };
    nanosleep(&ts, NULL);
  }
  set_phase(c, PHASE_EXIT);
  for (unsigned i = 0; i < c->n_instances; i++)
    if (c->instances[i].started) {
      pthread_join(c->instances[i].thread, NULL);
      c->instances[i].started = false;
    }
}

void connector_destroy(struct connector *c)
{
  if (!c)
    return;
  for (unsigned i = 0; c->instances && i < c->n_instances; i++) {
    if (c->instances[i].loop)
      evloop_destroy(c->instances[i].loop);
    pthread_mutex_destroy(&c->instances[i].handoff_lock);
    pthread_mutex_destroy(&c->instances[i].info_lock);
    free(c->instances[i].held.slots);
    spool_batch_free(&c->instances[i].journal);
  }
  free(c->instances);
  if (c->callbacks) {
    uint64_t dropped = http_callback_stop(c->callbacks, 2000);
    if (dropped)
      LOGW(c->log, "%" PRIu64 " receipt callbacks not sent at stop (sent again after a restart with persist on)",
           dropped);
  }
  if (c->accept_loop)
    evloop_destroy(c->accept_loop);
  if (c->listen_fd != -1)
    close(c->listen_fd);
  for (unsigned i = 0; c->user_queues && i < c->cfg->n_users; i++)
    queue_destroy(&c->user_queues[i]);
  free(c->user_queues);
  queue_destroy(&c->out);
  if (c->scts)
    ucp_scts_alloc_destroy(c->scts);
  pthread_mutex_destroy(&c->scts_lock);
  if (c->core->connectors[c->index] == c)
    c->core->connectors[c->index] = NULL;
  free(c);
}

struct queue *connector_out_queue(struct connector *c)
{
  return &c->out;
}

struct queue *connector_user_queue(struct connector *c, const char *user)
{
  if (!c->user_queues)
    return NULL;
  for (unsigned i = 0; i < c->cfg->n_users; i++)
    if (strcmp(c->cfg->users[i].name, user) == 0)
      return &c->user_queues[i];
  return NULL;
}

const struct config_connector *connector_config(const struct connector *c)
{
  return c->cfg;
}

void connector_pause(struct connector *c, bool paused)
{
  atomic_store(&c->paused, paused);
  LOGI(c->log, "%s by the operator", paused ? "paused" : "resumed");
  if (!paused)
    for (unsigned i = 0; i < c->n_instances; i++)
      if (c->instances[i].started)
        evloop_wake(c->instances[i].loop);
}

bool connector_paused(const struct connector *c)
{
  return atomic_load(&c->paused);
}

unsigned connector_queue_count(const struct connector *c)
{
  return 1 + (c->user_queues ? c->cfg->n_users : 0);
}

struct queue *connector_queue(struct connector *c, unsigned i)
{
  return i == 0 ? &c->out : &c->user_queues[i - 1];
}

int connector_receipt_for_origin(struct core *core, const struct dlr_info *info, const struct msg_receipt *r,
                                 int via)
{
  struct queue *q;
  uint64_t ticket;
  struct qitem *it = origin_receipt(core, core->log, info, r, via, &q, &ticket);
  if (!it)
    return -1;
  struct qlist l = { 0 };
  qlist_append(&l, it);
  queue_push(q, &l, 0);
  return 0;
}

bool connector_user_bound(struct connector *c, const char *user)
{
  for (unsigned i = 0; i < c->n_instances; i++) {
    struct connector_instance_info info;
    if (connector_instance_info(c, i, &info) == 0 && strcmp(info.state, "bound") == 0 &&
        strcmp(info.user, user) == 0)
      return true;
  }
  return false;
}

int connector_drop_message(struct connector *c, uint64_t id)
{
  for (unsigned i = 0; i < connector_queue_count(c); i++) {
    struct qitem *it = queue_remove_msg(connector_queue(c, i), id);
    if (!it)
      continue;
    struct core *core = c->core;
    atomic_fetch_add(&core->stats.failed, 1);
    atomic_fetch_sub(&core->in_flight, 1);
    journal_msg_event(core, SPOOL_REC_FINISHED, id, 0, NULL);
    LOGW(c->log, "message %" PRIu64 " to %s dropped by the operator", id, it->msg->dst.addr);
    history_add(core->history, id, HISTORY_FAILED, (uint16_t)c->index, MSG_STATE_DELETED, 0, "dropped by the operator");
    core_log_event(core, DB_LOG_FAILED, it->msg, (int)c->index, NULL, MSG_STATE_DELETED, 0);
    struct dlr_info info;
    dlr_info_from_msg(&info, it->msg);
    struct msg_receipt r = { 0 };
    r.state = MSG_STATE_DELETED;
    r.done_time = time(NULL);
    struct queue *q;
    uint64_t ticket;
    struct qitem *rit = origin_receipt(core, c->log, &info, &r, (int)c->index, &q, &ticket);
    if (rit) {
      struct qlist l = { 0 };
      qlist_append(&l, rit);
      queue_push(q, &l, 0);
    }
    qitem_free(it);
    return 1;
  }
  return 0;
}

int connector_restore(struct core *core, unsigned target, struct qitem *it, const char *user)
{
  if (target >= core->n_connectors)
    return -1;
  struct connector *c = core_connector(core, target);
  struct queue *q;
  if (it->kind == QITEM_RECEIPT) {
    q = connector_user_queue(c, user);
  } else if (!is_server(c)) {
    q = &c->out;
  } else {
    const char *routed_user = "";
    int again = router_route_user(atomic_load(&core->router), it->msg->origin.connector, it->msg,
                                  NULL, NULL, &routed_user);
    q = again == (int)target ? target_queue(c, routed_user) : NULL;
  }
  if (!q)
    return -1;
  struct qlist l = { 0 };
  qlist_append(&l, it);
  queue_push(q, &l, 0);
  return 0;
}

size_t connector_queued(struct connector *c)
{
  size_t n = queue_count(&c->out);
  for (unsigned i = 0; c->user_queues && i < c->cfg->n_users; i++)
    n += queue_count(&c->user_queues[i]);
  return n;
}

unsigned connector_bound(const struct connector *c)
{
  unsigned n = 0;
  for (unsigned i = 0; i < c->n_instances; i++)
    n += atomic_load(&c->instances[i].bound);
  return n;
}
