/* core.c - the gateway's shared state.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "account.h"
#include "core.h"
#include "grace.h"
#include "sms_text.h"

void core_dlr_dropped(void *core, const struct dlr_dropped *dropped, size_t n, enum dlr_drop why)
{
  struct core *c = core;
  static const char *const reason[] = {
    [DLR_DROP_EVICTED] = "DLR table full", [DLR_DROP_REPLACED] = "SMSC id given again",
    [DLR_DROP_EXPIRED] = "no receipt within dlr_ttl",
  };
  /* The message log and the history show that no receipt is awaited any
   * more: a receipt in state UNKNOWN, from the gateway. */
  struct msg_receipt r = { .state = MSG_STATE_UNKNOWN, .done_time = time(NULL) };
  for (size_t i = 0; i < n; i++) {
    history_add(c->history, dropped[i].msg_id, HISTORY_RECEIPT_GIVEN_UP, dropped[i].out_connector,
                MSG_STATE_UNKNOWN, 0, reason[why]);
    core_log_receipt(c, dropped[i].msg_id, NULL, dropped[i].out_connector, &r);
  }
  if (!c->spool)
    return;
  struct spool_batch b = { 0 };
  for (size_t i = 0; i < n; i++)
    spool_batch_add(c->spool, &b, &(struct spool_record){ .type = SPOOL_REC_FINISHED, .id = dropped[i].msg_id });
  spool_batch_append(c->spool, &b);
  spool_batch_free(&b);
}

int core_init(struct core *c, const struct config *cfg)
{
  memset(c, 0, sizeof *c);
  c->cfg = cfg;
  c->log = log_category("emg.core");
  c->grace = grace_create();
  atomic_init(&c->router, router_create(cfg));
  c->dlr = dlrtab_create(cfg->dlr_table_size, cfg->dlr_ttl_s);
  c->history = history_create(cfg->history_size);
  if (cfg->history_series &&
      !(c->series = series_create(cfg->history_series, CORE_SERIES_FINE, CORE_SERIES_STEP, CORE_SERIES_COARSE))) {
    core_destroy(c);
    return -1;
  }
  c->schedule = schedule_create();
  if (cfg->mo_join_timeout_s && !(c->mo_join = mo_join_create(cfg->mo_join_max, cfg->mo_join_timeout_s))) {
    core_destroy(c);
    return -1;
  }
  for (size_t i = 0; i < cfg->n_connectors; i++)
    if (cfg->connectors[i].long_receipts == CONFIG_LONG_COMBINED && !c->receipt_join &&
        !(c->receipt_join = receipt_join_create(cfg->dlr_table_size / 2 + 1, cfg->dlr_ttl_s))) {
      core_destroy(c);
      return -1;
    }
  c->auth_guard = auth_guard_create(cfg->auth_max_failures, cfg->auth_failure_window_s, cfg->auth_block_s,
                                    log_category("emg.auth"));
  char err[256];
  c->accounts = accounts_create(cfg, err, sizeof err);
  c->connectors = calloc(cfg->n_connectors ? cfg->n_connectors : 1, sizeof *c->connectors);
  c->connector_refused = calloc(cfg->n_connectors ? cfg->n_connectors : 1, sizeof *c->connector_refused);
  c->n_connector_refused = (unsigned)cfg->n_connectors;
  if (!c->grace || !atomic_load(&c->router) || !c->dlr || !c->history || !c->schedule || !c->auth_guard || !c->accounts ||
      !c->connectors || !c->connector_refused) {
    core_destroy(c);
    return -1;
  }
  dlrtab_on_drop(c->dlr, core_dlr_dropped, c);
  ids_init(&c->ids, cfg->node_id, cfg->id_window, 1);
  pthread_mutex_init(&c->rates.lock, NULL);
  pthread_mutex_init(&c->scts_note_lock, NULL);
  c->started = time(NULL);
  core_set_scts_floor(c, 0, 0, 0);
  return 0;
}

void core_destroy(struct core *c)
{
  /* Every thread has stopped: what was retired goes with the domain. */
  grace_destroy(c->grace);
  c->grace = NULL;
  router_destroy(atomic_exchange(&c->router, NULL));
  plugin_host_destroy(atomic_exchange(&c->plugins, NULL));
  if (c->dlr)
    dlrtab_destroy(c->dlr);
  c->dlr = NULL;
  history_destroy(c->history);
  c->history = NULL;
  series_destroy(c->series);
  c->series = NULL;
  access_log_close(c->access_log);
  c->access_log = NULL;
  schedule_destroy(c->schedule);
  c->schedule = NULL;
  mo_join_destroy(c->mo_join);
  c->mo_join = NULL;
  receipt_join_destroy(c->receipt_join);
  c->receipt_join = NULL;
  auth_guard_destroy(c->auth_guard);
  c->auth_guard = NULL;
  accounts_destroy(c->accounts);
  c->accounts = NULL;
  free(c->connectors);
  c->connectors = NULL;
  free(c->connector_refused);
  c->connector_refused = NULL;
  c->n_connector_refused = 0;
}

void core_enter(struct core *c)
{
  grace_enter(c->grace);
}

void core_leave(struct core *c)
{
  grace_leave(c->grace);
}

/* Hands what a swap replaced to the grace domain. Without the memory to
 * note it, it is kept for the process's life: never freed too soon. */
static void retire(struct core *c, void *old, void (*free_fn)(void *), const char *what)
{
  char err[64];
  if (old && grace_retire(c->grace, old, free_fn, err, sizeof err) < 0)
    LOGW(c->log, "the %s replaced stays in memory: %s", what, err);
}

static void free_router(void *r)
{
  router_destroy(r);
}

static void free_plugins(void *h)
{
  plugin_host_destroy(h);
}

void core_swap_router(struct core *c, struct router *r)
{
  retire(c, atomic_exchange(&c->router, r), free_router, "router");
}

void core_reclaim(struct core *c, size_t *pending)
{
  grace_reclaim(c->grace);
  if (pending)
    *pending = grace_pending(c->grace);
}

uint64_t core_journal(struct core *c, const struct spool_record *rec)
{
  return c->spool ? spool_append(c->spool, rec) : 1;
}

int core_journal_settle(struct core *c, unsigned timeout_ms)
{
  if (!c->spool)
    return 0;
  uint64_t ticket = spool_appended(c->spool);
  /* Commits come every millisecond or so: polling at a fifth of that costs little. */
  for (unsigned waited_us = 0; spool_durable(c->spool) < ticket; waited_us += 200) {
    if (waited_us >= timeout_ms * 1000u || spool_failing(c->spool, NULL, 0))
      return -1;
    nanosleep(&(struct timespec){ .tv_nsec = 200000 }, NULL);
  }
  return 0;
}

void core_sample_rates(struct core *c)
{
  struct core_rates *r = &c->rates;
  pthread_mutex_lock(&r->lock);
  r->head = (r->head + 1) % CORE_RATE_SAMPLES;
  r->received[r->head] = atomic_load(&c->stats.received);
  r->sent[r->head] = atomic_load(&c->stats.sent);
  if (r->filled < CORE_RATE_SAMPLES)
    r->filled++;
  pthread_mutex_unlock(&r->lock);
}

void core_rates(struct core *c, unsigned seconds, double *received, double *sent)
{
  struct core_rates *r = &c->rates;
  pthread_mutex_lock(&r->lock);
  unsigned span = seconds < r->filled ? seconds : (r->filled ? r->filled - 1 : 0);
  unsigned then = (r->head + CORE_RATE_SAMPLES - span) % CORE_RATE_SAMPLES;
  *received = span ? (double)(r->received[r->head] - r->received[then]) / span : 0;
  *sent = span ? (double)(r->sent[r->head] - r->sent[then]) / span : 0;
  pthread_mutex_unlock(&r->lock);
}

enum core_admit core_admit(struct core *c)
{
  /* Taking the place first and checking after makes the hard limit exact
   * however many instances admit at once. */
  uint64_t before = atomic_fetch_add(&c->in_flight, 1);
  if (before >= c->cfg->max_total_queue) {
    atomic_fetch_sub(&c->in_flight, 1);
    return CORE_ADMIT_FULL;
  }
  return before >= c->cfg->max_total_queue_soft ? CORE_ADMIT_SLOW : CORE_ADMIT_OK;
}

void core_swap_plugins(struct core *c, struct plugin_host *h)
{
  /* Unloading a plugin whose hook a thread is still running would crash:
   * the host is unloaded only once no such thread can be inside. */
  retire(c, atomic_exchange(&c->plugins, h), free_plugins, "plugin host");
}

static const char *connector_name_of(const struct core *c, int index)
{
  return index >= 0 && (unsigned)index < c->cfg->n_connectors ? c->cfg->connectors[index].name : NULL;
}

/* A message's final state in the access log. */
static void access_final(struct core *c, const struct msg *m, int out, const char *state, unsigned error)
{
  struct access_line l = { .id = m->id, .account = m->origin.user, .in = connector_name_of(c, m->origin.connector),
                           .out = connector_name_of(c, out), .from = m->src.addr, .to = m->dst.addr,
                           .state = state, .error = error };
  struct sms_text_concat concat;
  if (msg_concat(m, &concat)) {
    l.part = concat.seq;
    l.parts = concat.total;
  }
  access_log_write(c->access_log, &l);
}

void core_log_event(struct core *c, enum db_log_kind kind, const struct msg *m, int target,
                    const char *smsc_id, uint8_t state, uint16_t error)
{
  /* Final: failed, or sent with no receipt to wait for (to a client of
   * ours: delivered). */
  if (c->access_log && (kind == DB_LOG_FAILED || (kind == DB_LOG_SENT && !smsc_id))) {
    const char *name = kind == DB_LOG_FAILED ? msg_state_name(state)
                       : target >= 0 && (unsigned)target < c->cfg->n_connectors &&
                             c->cfg->connectors[target].mode == CONFIG_CONN_SERVER
                         ? "delivered"
                         : "sent";
    access_final(c, m, target, name, error);
  }
  if (!c->db_log)
    return;
  struct db_log_event ev;
  db_log_event_from_msg(&ev, kind, m);
  if (m->origin.connector < c->cfg->n_connectors)
    ev.origin_connector = c->cfg->connectors[m->origin.connector].name;
  if (target >= 0 && (unsigned)target < c->cfg->n_connectors)
    ev.target_connector = c->cfg->connectors[target].name;
  ev.smsc_id = smsc_id;
  ev.state = state;
  ev.error = error;
  struct sms_text_concat concat;
  if (kind == DB_LOG_ACCEPTED && msg_concat(m, &concat)) {
    ev.segment_ref = concat.ref;
    ev.segment_seq = concat.seq;
    ev.segment_count = concat.total;
  }
  db_log_event(c->db_log, &ev);
}

void core_log_receipt(struct core *c, uint64_t msg_id, const struct dlr_info *info, int via,
                      const struct msg_receipt *r)
{
  if (c->access_log && msg_state_final(r->state)) {
    struct access_line l = { .id = msg_id, .out = connector_name_of(c, via), .state = msg_state_name(r->state),
                             .smsc_id = r->id, .error = r->err };
    if (info) {
      l.account = info->origin_user;
      l.in = connector_name_of(c, info->origin_connector);
      l.from = info->src.addr;
      l.to = info->dst.addr;
      l.part = info->part_seq;
      l.parts = info->part_total;
    }
    access_log_write(c->access_log, &l);
  }
  if (!c->db_log)
    return;
  struct db_log_event ev = { .kind = DB_LOG_RECEIPT, .msg_id = msg_id, .state = r->state,
                             .error = r->err, .done_time = r->done_time };
  db_log_event(c->db_log, &ev);
}

int core_scts_note(struct core *c, int64_t upto)
{
  int rc = 0;
  pthread_mutex_lock(&c->scts_note_lock);
  if (upto > atomic_load(&c->scts_noted)) {
    char why[256];
    if (spool_note_scts_ceiling(c->spool, upto, why, sizeof why) == 0) {
      atomic_store(&c->scts_noted, upto);
    } else {
      LOGE(c->log, "UCP references: %s", why);
      rc = -1;
    }
  }
  pthread_mutex_unlock(&c->scts_note_lock);
  return rc;
}

int core_scts_handing(struct core *c, int64_t second)
{
  int64_t handed = atomic_load_explicit(&c->scts_handed, memory_order_relaxed);
  while (second > handed && !atomic_compare_exchange_weak(&c->scts_handed, &handed, second)) {
  }
  int64_t noted = atomic_load(&c->scts_noted);
  if (!noted || second <= noted)
    return 0;
  return core_scts_note(c, second + CORE_SCTS_NOTE_STEP_S);
}

void core_scts_note_ahead(struct core *c)
{
  int64_t noted = atomic_load(&c->scts_noted), handed = atomic_load(&c->scts_handed);
  if (noted && handed + CORE_SCTS_NOTE_LEAD_S > noted)
    core_scts_note(c, handed + CORE_SCTS_NOTE_LEAD_S + CORE_SCTS_NOTE_STEP_S);
}

void core_set_scts_floor(struct core *c, int64_t previous_write, int64_t previous_floor,
                         int64_t previous_ceiling)
{
  /* The ceiling is exact: every stamp of the previous process is at or below it. */
  if (previous_ceiling) {
    c->scts_floor = previous_ceiling + 1 > c->started ? previous_ceiling + 1 : c->started;
    return;
  }
  int64_t floor = c->started + CORE_SCTS_RESTART_MARGIN_S;
  if (previous_write && previous_write + CORE_SCTS_RESTART_MARGIN_S + CORE_SCTS_RUNAHEAD_S + 1 > floor)
    floor = previous_write + CORE_SCTS_RESTART_MARGIN_S + CORE_SCTS_RUNAHEAD_S + 1;
  /* Its floor is exact: no margin for clocks and file times on top. */
  if (previous_floor && previous_floor + CORE_SCTS_RUNAHEAD_S + 1 > floor)
    floor = previous_floor + CORE_SCTS_RUNAHEAD_S + 1;
  c->scts_floor = floor;
}

/* The names stand in JSON keys and metric labels: never renamed. */
static const char *const refusal_names[CORE_REFUSALS] = {
  [CORE_REFUSED_RATE] = "rate", [CORE_REFUSED_ACCOUNT_LIMIT] = "account_limit",
  [CORE_REFUSED_CREDIT] = "credit", [CORE_REFUSED_QUEUE_FULL] = "queue_full",
  [CORE_REFUSED_CONNECTOR_QUEUE_FULL] = "connector_queue_full", [CORE_REFUSED_NO_ROUTE] = "no_route",
  [CORE_REFUSED_PLUGIN] = "plugin", [CORE_REFUSED_TOO_LONG] = "too_long", [CORE_REFUSED_JOURNAL] = "journal",
  [CORE_REFUSED_OTHER] = "other",
};

const char *core_refusal_name(enum core_refusal why)
{
  return (unsigned)why < CORE_REFUSALS ? refusal_names[why] : "other";
}

void core_refused(struct core *c, int connector, enum core_refusal why)
{
  if ((unsigned)why >= CORE_REFUSALS)
    why = CORE_REFUSED_OTHER;
  atomic_fetch_add_explicit(&c->stats.refused[why], 1, memory_order_relaxed);
  if (connector >= 0 && (unsigned)connector < c->n_connector_refused)
    atomic_fetch_add_explicit(&c->connector_refused[connector][why], 1, memory_order_relaxed);
}

uint64_t core_refusals(const struct core *c, int connector, uint64_t out[CORE_REFUSALS])
{
  const _Atomic uint64_t *from = connector < 0 ? c->stats.refused
                                 : (unsigned)connector < c->n_connector_refused ? c->connector_refused[connector]
                                                                                : NULL;
  uint64_t sum = 0;
  for (unsigned i = 0; i < CORE_REFUSALS; i++)
    sum += out[i] = from ? atomic_load_explicit(&from[i], memory_order_relaxed) : 0;
  return sum;
}

bool core_login_blocked(struct core *c, const char *peer)
{
  if (!auth_guard_blocked(c->auth_guard, peer))
    return false;
  atomic_fetch_add(&c->stats.logins_blocked, 1);
  return true;
}
