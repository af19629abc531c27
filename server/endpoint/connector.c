/* connector.c - a connector's life and its instances' threads, the same
 * for every kind: create, start, stop and destroy, each instance's event
 * loop (its wakes and ticks call the endpoint's, struct endpoint_ops), the
 * pushes it gathers in one loop iteration, what it publishes for the admin
 * API, and the rest of connector.h. What differs by kind is in the
 * endpoint_*.c files; the message path is in server/path/; the protocol is
 * the session's business (connectors/session.h).
 * SPDX-License-Identifier: Apache-2.0
 */
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
#include "account.h"
#include "connector_internal.h"
#include "http_callback.h"
#include "netutil.h"
#include "pause_state.h"
#include "strutil.h"
#include "scts.h"

/* How often an instance publishes what connector_instance_info shows. */
#define INFO_PUBLISH_MS 250

/* How the cluster thread reaches the origins (core->origin). */
/* For the cluster thread: a receipt resolved through the database. */
static int receipt_from_elsewhere(struct core *core, const struct dlr_info *info, const struct msg_receipt *r, int via)
{
  return connector_receipt_for_origin(core, NULL, info, r, via);
}

static const struct core_origin connector_origin = {
  .deliver_receipt = receipt_from_elsewhere,
  .user_bound = connector_user_bound,
};

/* ---- what the admin API sees of an instance ---- */

const uint64_t connector_latency_bounds_us[CONNECTOR_LATENCY_BUCKETS - 1] = {
  100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
  1000000, 2500000, 5000000, 10000000
};

void connector_latency_record(struct connector_latency *l, uint64_t us)
{
  unsigned i = 0;
  while (i < CONNECTOR_LATENCY_BUCKETS - 1 && us > connector_latency_bounds_us[i])
    i++;
  l->buckets[i]++;
  l->count++;
  l->sum_us += us;
}

void connector_instance_error(struct instance *in, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(in->counted.last_error, sizeof in->counted.last_error, fmt, ap);
  va_end(ap);
  in->counted.last_error_time = time(NULL);
  count_one(&in->live.errors);
}

/* Copies what the thread counted where other threads may read it: at most
 * every INFO_PUBLISH_MS, or at once when force is set (a state change). */
void connector_instance_publish(struct instance *in, bool force)
{
  uint64_t t = evloop_now_ms(in->loop);
  if (!force && t - in->published_ms < INFO_PUBLISH_MS)
    return;
  in->published_ms = t;
  struct connector_instance_info *i = &in->counted;
  i->index = in->index;
  i->window = in->conn->cfg->window;
  in->conn->ops->describe(in, i);
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
  out->submits_in = atomic_load_explicit(&in->live.submits_in, memory_order_relaxed);
  out->submits_out = atomic_load_explicit(&in->live.submits_out, memory_order_relaxed);
  out->receipts_in = atomic_load_explicit(&in->live.receipts_in, memory_order_relaxed);
  out->receipts_out = atomic_load_explicit(&in->live.receipts_out, memory_order_relaxed);
  out->refused = atomic_load_explicit(&in->live.refused, memory_order_relaxed);
  out->errors = atomic_load_explicit(&in->live.errors, memory_order_relaxed);
  if (!out->state)
    out->state = c->ops->idle_state;
  out->index = i;
  return 0;
}

/* ---- staging: one push per target queue per loop iteration ---- */

/* The end of a loop iteration: the journal batch first, so that no thread
 * sees a message or receipt before its record is in the journal, then the
 * staged pushes, then whatever acks that made ready. */
void connector_flush_stages(struct evloop *loop, void *arg)
{
  struct instance *in = arg;
  (void)loop;
  connector_journal_flush(in);
  for (unsigned i = 0; i < in->n_stages; i++)
    queue_push(in->stages[i].queue, &in->stages[i].list, 0);
  in->n_stages = 0;
  in->flush_pending = false;
  if (in->held.count)
    connector_release_held_acks(in, false);
}

void connector_schedule_flush(struct instance *in)
{
  if (!in->flush_pending) {
    in->flush_pending = true;
    evloop_defer(in->loop, connector_flush_stages, in);
  }
}

void connector_stage(struct instance *in, struct queue *q, struct qitem *it)
{
  unsigned i = 0;
  while (i < in->n_stages && in->stages[i].queue != q)
    i++;
  if (i == in->n_stages) {
    if (i == MAX_STAGES) {
      connector_flush_stages(in->loop, in);
      i = 0;
    }
    in->stages[i].queue = q;
    memset(&in->stages[i].list, 0, sizeof in->stages[i].list);
    in->n_stages = i + 1;
  }
  qlist_append(&in->stages[i].list, it);
  connector_schedule_flush(in);
}

/* Puts it and the items after it (up to tail) back at the front, in order:
 * what a batch taken from q could not send now. */
void connector_requeue_rest(struct queue *q, struct qitem *it, struct qitem *tail)
{
  struct qlist rest = { .head = it, .tail = tail };
  for (struct qitem *x = it; x; x = x->next)
    rest.count++;
  queue_push(q, &rest, 1);
}

void connector_requeue_front(struct queue *q, struct qitem *it)
{
  struct qlist l = { 0 };
  qlist_append(&l, it);
  queue_push(q, &l, 1);
}

/* ---- instance threads ---- */

void connector_accounts_changed(struct connector *c)
{
  if (!c->ops->accounts_changed)
    return;
  for (unsigned i = 0; i < c->n_instances; i++)
    if (c->instances[i].started) {
      atomic_store(&c->instances[i].account_changed, true);
      evloop_wake(c->instances[i].loop);
    }
}

void connector_pump(struct instance *in)
{
  in->conn->ops->send(in);
}

static void on_wake(struct evloop *loop, void *arg)
{
  struct instance *in = arg;
  const struct endpoint_ops *ops = in->conn->ops;
  int phase = atomic_load(&in->phase);
  if (phase == PHASE_EXIT) {
    evloop_stop(loop);
    return;
  }
  if (phase == PHASE_STOP_SESSION) {
    ops->stop(in);
    return;
  }
  if (ops->wake)
    ops->wake(in);
  if (atomic_exchange(&in->account_changed, false) && ops->accounts_changed)
    ops->accounts_changed(in);
  connector_release_held_acks(in, false);
  connector_pump(in);
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
  (void)loop;
  connector_instance_publish(in, false);
  connector_release_held_acks(in, false);
  connector_retry_early_receipts(in, false);
  if (in->conn->ops->tick)
    in->conn->ops->tick(in);
  connector_pump(in);
}

static void *instance_main(void *arg)
{
  struct instance *in = arg;
  in->conn->ops->run(in);
  return NULL;
}

void connector_instance_end(struct instance *in)
{
  connector_retry_early_receipts(in, true);
  connector_flush_stages(in->loop, in);
  connector_release_held_acks(in, true);
}

/* ---- life cycle ---- */

struct connector *connector_create(struct core *core, unsigned index, char *err, size_t err_len)
{
  const struct config_connector *cfg = &core->cfg->connectors[index];
  struct connector *c = calloc(1, sizeof *c);
  char category[CONFIG_NAME_LEN + 16];
  if (!c) {
    snprintf(err, err_len, "out of memory");
    return NULL;
  }
  c->core = core;
  c->cfg = cfg;
  c->ops = endpoint_ops_of(cfg);
  c->index = index;
  c->listen_fd = -1;
  snprintf(category, sizeof category, "emg.conn.%s", cfg->name);
  c->log = log_category(category);
  queue_init(&c->out);
  pthread_mutex_init(&c->scts_lock, NULL);
  pthread_mutex_init(&c->about_lock, NULL);
  pthread_cond_init(&c->lookup_cond, NULL);
  if (connector_tls_init(c, err, err_len) < 0) {
    connector_destroy(c);
    return NULL;
  }
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
    .tls = c->tls,
    .tls_server_name = c->tls_server_name,
  };
  if (c->ops->account_queues) {
    /* A queue per account slot: accounts added live have theirs. */
    c->n_user_queues = accounts_capacity(core->accounts);
    c->user_queues = calloc(c->n_user_queues, sizeof *c->user_queues);
    for (unsigned i = 0; c->user_queues && i < c->n_user_queues; i++)
      queue_init(&c->user_queues[i]);
    if (cfg->proto && cfg->proto->msgid_scts)
      c->scts = scts_alloc_create(1 << 16, cfg->proto->msgid_scts);
  }
  c->n_instances = cfg->instances;
  c->instances = calloc(c->n_instances, sizeof *c->instances);
  if (!c->instances || (c->ops->account_queues && !c->user_queues) ||
      (c->ops->account_queues && cfg->proto && cfg->proto->msgid_scts && !c->scts)) {
    snprintf(err, err_len, "out of memory");
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
    in->proven_user = in->bind_held = -1;
    pthread_mutex_init(&in->handoff_lock, NULL);
    pthread_mutex_init(&in->info_lock, NULL);
    in->loop = evloop_create(10);
    if (!in->loop || evloop_tick(in->loop, on_tick, in) == -1) {
      snprintf(err, err_len, "cannot create the event loop of instance %u", i);
      connector_destroy(c);
      return NULL;
    }
    evloop_on_wake(in->loop, on_wake, in);
  }
  core->connectors[index] = c;
  core->origin = &connector_origin;
  return c;
}

int connector_start(struct connector *c, char *err, size_t err_len)
{
  if (c->core->spool)
    for (unsigned i = 0; i < c->n_instances; i++)
      if (spool_on_durable(c->core->spool, journal_advanced, &c->instances[i]) == -1) {
        snprintf(err, err_len, "too many journal listeners");
        return -1;
      }
  if (c->ops->start && c->ops->start(c, err, err_len) < 0)
    return -1;
  for (unsigned i = 0; i < c->n_instances; i++) {
    if (pthread_create(&c->instances[i].thread, NULL, instance_main, &c->instances[i]) != 0) {
      snprintf(err, err_len, "cannot start instance %u: %s", i, strerror(errno));
      return -1;
    }
    /* Named for top -H and perf: the connector (cut to fit 15 bytes) and the instance. */
    char name[16];
    snprintf(name, sizeof name, "%.10s/%u", c->cfg->name, i % 1000);
    pthread_setname_np(c->instances[i].thread, name);
    c->instances[i].started = true;
  }
  return c->ops->started ? c->ops->started(c, err, err_len) : 0;
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
  if (!c->ops->stop_accepting)
    return;
  c->ops->stop_accepting(c);
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
  connector_about_stop(c);
}

void connector_destroy(struct connector *c)
{
  if (!c)
    return;
  if (c->ops->destroy)
    c->ops->destroy(c);
  for (unsigned i = 0; c->instances && i < c->n_instances; i++) {
    if (c->instances[i].loop)
      evloop_destroy(c->instances[i].loop);
    pthread_mutex_destroy(&c->instances[i].handoff_lock);
    pthread_mutex_destroy(&c->instances[i].info_lock);
    free(c->instances[i].held.slots);
    spool_batch_free(&c->instances[i].journal);
  }
  free(c->instances);
  for (unsigned i = 0; c->user_queues && i < c->n_user_queues; i++)
    queue_destroy(&c->user_queues[i]);
  free(c->user_queues);
  queue_destroy(&c->out);
  pthread_mutex_destroy(&c->scts_lock);
  pthread_mutex_destroy(&c->about_lock);
  pthread_cond_destroy(&c->lookup_cond);
  connector_tls_free(c);
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
  int slot = accounts_find(c->core->accounts, user);
  return accounts_uses(c->core->accounts, slot, c->index) ? &c->user_queues[slot] : NULL;
}

const struct config_connector *connector_config(const struct connector *c)
{
  return c->cfg;
}

/* ---- pauses, kept across restarts (pause_state.h) ---- */

/* One writer of the file at a time, and the file written in the order of
 * the pauses and resumes it records. */
static pthread_mutex_t pause_file_lock = PTHREAD_MUTEX_INITIALIZER;

/* Writes the set of paused connectors now; under pause_file_lock. */
static int pause_save(struct core *core, char *err, size_t err_len)
{
  char path[CONFIG_PATH_LEN + sizeof PAUSE_STATE_FILE + 1];
  if (pause_state_path(core->cfg->spool_dir, path, sizeof path) < 0) {
    snprintf(err, err_len, "spool_dir %s: path too long", core->cfg->spool_dir);
    return -1;
  }
  const char **names = calloc(core->n_connectors ? core->n_connectors : 1, sizeof *names);
  if (!names) {
    snprintf(err, err_len, "out of memory");
    return -1;
  }
  unsigned n = 0;
  for (unsigned i = 0; i < core->n_connectors; i++)
    if (core->connectors[i] && atomic_load(&core->connectors[i]->paused))
      names[n++] = core->connectors[i]->cfg->name;
  int rc = pause_state_write(path, names, n, err, err_len);
  free(names);
  return rc;
}

void connector_pause(struct connector *c, bool paused)
{
  char err[CONFIG_PATH_LEN + 256];
  pthread_mutex_lock(&pause_file_lock);
  atomic_store(&c->paused, paused);
  int saved = pause_save(c->core, err, sizeof err);
  pthread_mutex_unlock(&pause_file_lock);
  const char *what = paused ? "paused" : "resumed";
  const char *then = paused ? "a restart would send its messages" : "a restart would pause it again";
  if (saved == 0)
    LOGI(c->log, "%s by the operator", what);
  else if (c->core->cfg->persist)
    LOGE(c->log, "%s by the operator, but not kept for the next start: cannot write %s; %s", what, err, then);
  else   /* nothing else is kept for the next start either: said, not an error */
    LOGW(c->log, "%s by the operator, not kept for the next start (persist off, and spool_dir cannot be "
         "written: %s); %s", what, err, then);
  if (!paused)
    for (unsigned i = 0; i < c->n_instances; i++)
      if (c->instances[i].started)
        evloop_wake(c->instances[i].loop);
}

int connector_pause_restore(struct core *core, struct log_category *log, char *err, size_t err_len)
{
  char path[CONFIG_PATH_LEN + sizeof PAUSE_STATE_FILE + 1];
  if (pause_state_path(core->cfg->spool_dir, path, sizeof path) < 0) {
    snprintf(err, err_len, "spool_dir %s: path too long", core->cfg->spool_dir);
    return -1;
  }
  struct pause_state st;
  if (pause_state_read(path, &st, err, err_len) < 0)
    return -1;
  for (unsigned i = 0; i < st.n_bad && i < PAUSE_STATE_BAD_SHOWN; i++)
    LOGE(log, "%s:%u: %s; the connectors named on its other lines stay paused, and the file is written "
         "again at the next pause or resume", path, st.bad[i].line, st.bad[i].why);
  if (st.n_bad > PAUSE_STATE_BAD_SHOWN)
    LOGE(log, "%s: %u more lines that are not connector names", path, st.n_bad - PAUSE_STATE_BAD_SHOWN);
  unsigned dropped = 0;
  for (unsigned i = 0; i < st.count; i++) {
    struct connector *c = NULL;
    for (unsigned k = 0; k < core->n_connectors && !c; k++)
      if (core->connectors[k] && strcmp(core->connectors[k]->cfg->name, st.names[i].name) == 0)
        c = core->connectors[k];
    if (!c) {
      LOGW(log, "%s:%u: connector %s was paused before the stop but is no longer in the configuration: "
           "its pause is dropped", path, st.names[i].line, st.names[i].name);
      dropped++;
      continue;
    }
    atomic_store(&c->paused, true);
    LOGI(c->log, "connector %s paused (kept from before the stop): %zu messages waiting; resume with "
         "emgctl resume %s", c->cfg->name, connector_queued_messages(c), c->cfg->name);
  }
  pause_state_free(&st);
  /* The file says no more than the truth: a dropped name goes from it now
   * (a file with bad lines stays as it is, for the operator to look at). */
  if (dropped && !st.n_bad) {
    char why[CONFIG_PATH_LEN + 256];
    pthread_mutex_lock(&pause_file_lock);
    int saved = pause_save(core, why, sizeof why);
    pthread_mutex_unlock(&pause_file_lock);
    if (saved < 0)
      LOGE(log, "cannot write %s without the dropped names: %s", path, why);
  }
  return 0;
}

bool connector_paused(const struct connector *c)
{
  return atomic_load(&c->paused);
}

unsigned connector_queue_count(const struct connector *c)
{
  return 1 + (c->user_queues ? accounts_used(c->core->accounts) : 0);
}

struct queue *connector_queue(struct connector *c, unsigned i)
{
  return i == 0 ? &c->out : &c->user_queues[i - 1];
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

/* A message that will not go, dropped from a queue (by the operator, or
 * with its account): failed, and its origin told so by a receipt. */
static void drop_queued_message(struct connector *c, struct instance *in, struct qitem *it, const char *why)
{
  struct core *core = c->core;
  uint64_t id = it->msg->id;
  atomic_fetch_add(&core->stats.failed, 1);
  atomic_fetch_sub(&core->in_flight, 1);
  connector_credit_give_back(core, it->msg);
  connector_journal_msg_event(core, in, SPOOL_REC_FINISHED, id, 0, NULL);
  LOGW(c->log, "message %" PRIu64 " to %s: %s", id, it->msg->dst.addr, why);
  history_add(core->history, id, HISTORY_FAILED, (uint16_t)c->index, MSG_STATE_DELETED, 0, why);
  core_log_event(core, DB_LOG_FAILED, it->msg, (int)c->index, NULL, MSG_STATE_DELETED, 0);
  struct dlr_info info;
  dlr_info_from_msg(&info, it->msg);
  struct msg_receipt r = { 0 };
  r.state = MSG_STATE_DELETED;
  r.done_time = time(NULL);
  connector_receipt_for_origin(core, in, &info, &r, (int)c->index);
  qitem_free(it);
}

int connector_drop_message(struct connector *c, struct instance *in, uint64_t id, const char *why)
{
  for (unsigned i = 0; i < connector_queue_count(c); i++) {
    struct qitem *it = queue_remove_msg(connector_queue(c, i), id);
    if (it) {
      drop_queued_message(c, in, it, why);
      return 1;
    }
  }
  return 0;
}

int connector_cancel_scheduled(struct core *core, struct instance *in, uint64_t id, const char *why)
{
  unsigned target;
  struct qitem *it = schedule_remove(core->schedule, id, &target);
  if (!it)
    return 0;
  drop_queued_message(core_connector(core, target), in, it, why);
  return 1;
}

unsigned connector_index(const struct connector *c)
{
  return c->index;
}

void connector_drop_account_queue(struct connector *c, int slot, const char *why)
{
  if (!c->user_queues || slot < 0 || (unsigned)slot >= c->n_user_queues)
    return;
  struct qlist l = { 0 };
  size_t messages = 0, receipts = 0;
  while (queue_take(&c->user_queues[slot], PUMP_BATCH, &l)) {
    for (struct qitem *it = l.head, *next; it; it = next) {
      next = it->next;
      if (it->kind == QITEM_MSG) {
        drop_queued_message(c, NULL, it, why);
        messages++;
        continue;
      }
      /* A receipt for the account: nobody is left to take it. */
      if (it->journal_id)
        connector_journal_msg_event(c->core, NULL, SPOOL_REC_RECEIPT_DONE, it->journal_id, 0, NULL);
      qitem_free(it);
      receipts++;
    }
    memset(&l, 0, sizeof l);
  }
  if (messages || receipts)
    LOGW(c->log, "%zu messages and %zu receipts dropped: %s", messages, receipts, why);
}

int connector_restore(struct core *core, unsigned target, struct qitem *it, const char *user)
{
  if (target >= core->n_connectors)
    return -1;
  struct connector *c = core_connector(core, target);
  struct queue *q;
  if (it->kind == QITEM_RECEIPT) {
    q = connector_user_queue(c, user);
  } else if (!c->ops->account_queues) {
    q = &c->out;
  } else {
    const char *routed_user = "";
    core_enter(core);
    int again = router_route_user(atomic_load(&core->router), it->msg->origin.connector, it->msg,
                                  NULL, NULL, &routed_user);
    core_leave(core);
    q = again == (int)target ? connector_target_queue(c, routed_user) : NULL;
  }
  if (!q)
    return -1;
  struct qlist l = { 0 };
  qlist_append(&l, it);
  queue_push(q, &l, 0);
  return 0;
}

static void count_message(const struct qitem *it, void *ctx)
{
  *(size_t *)ctx += it->kind == QITEM_MSG;
}

size_t connector_queued_messages(struct connector *c)
{
  size_t n = 0;
  for (unsigned i = 0, queues = connector_queue_count(c); i < queues; i++)
    if (queue_count(connector_queue(c, i)))
      queue_walk(connector_queue(c, i), 0, SIZE_MAX, count_message, &n);
  return n;
}

size_t connector_queued(struct connector *c)
{
  size_t n = 0;
  for (unsigned i = 0, queues = connector_queue_count(c); i < queues; i++)
    n += queue_count(connector_queue(c, i));
  return n;
}

unsigned connector_bound(const struct connector *c)
{
  unsigned n = 0;
  for (unsigned i = 0; i < c->n_instances; i++)
    n += atomic_load(&c->instances[i].bound);
  return n;
}

const struct endpoint_ops *endpoint_ops_of(const struct config_connector *cfg)
{
  if (cfg->http)
    return cfg->mode == CONFIG_CONN_SERVER ? &endpoint_http_server : &endpoint_http_client;
  return cfg->mode == CONFIG_CONN_SERVER ? &endpoint_session_server : &endpoint_session_client;
}
