/* main.c - emgd: read the configuration, start the connectors (paused
 * again where the operator left them paused), run until SIGTERM, then stop
 * in order: no new submits, drain what can leave now, unbind from the
 * SMSCs, and say what the journal keeps. SIGHUP reloads the configuration
 * (and reopens the logs); SIGUSR1 only reopens the logs.
 *
 * Usage: emgd -c FILE [--foreground] [--check-config]
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>
#include "admin.h"
#include "clock.h"
#include "config.h"
#include "endpoint.h"
#include "cluster.h"
#include "core.h"
#include "log.h"
#include "netutil.h"
#include "path.h"
#include "strutil.h"

/* How long a graceful stop waits for in-flight messages, then for unbinds. */
#define DRAIN_TIMEOUT_MS 10000
#define UNBIND_TIMEOUT_MS 5000

struct daemon {
  struct core core;
  struct admin *admin;
  struct config *cfg;
  const char *path;
  struct evloop *loop;
  int signal_fd;
  int spool_lock_fd;                  /* held while we run: one emgd per spool_dir */
  struct status_line status;           /* the status line: when it was looked at, what it said */
  uint64_t last_sample_s;
  bool journal_failing;               /* as last logged */
  struct path_replay *replay;         /* replayed receipts for the cluster, until it starts */
  struct group_watch *groups;         /* the routes' groups, their switches logged */
  struct log_category *log;
};


static void usage(FILE *out)
{
  fprintf(out, "usage: emgd [-c FILE] [--foreground] [--check-config | --init-db]\n"
               "  -c, --config FILE   the configuration (libconfig syntax, see emgd.conf(5));\n"
               "                      default " EMG_CONFIG_DEFAULT "\n"
               "  --check-config      check the configuration, print every error, and exit\n"
               "  --init-db           create or upgrade the schema of the configured database\n"
               "  --foreground        stay in the foreground (emgd never daemonises itself)\n"
               "  --version           print the version and exit\n"
               "  -h, --help          print this and exit\n");
}

/* Logs when the journal starts refusing (disk full, I/O error) and when it
 * writes again: the spool retries by itself, and refuses submits meanwhile. */
static void watch_journal(struct daemon *d)
{
  char why[256];
  bool failing = d->core.spool && spool_failing(d->core.spool, why, sizeof why);
  if (failing == d->journal_failing)
    return;
  d->journal_failing = failing;
  if (failing)
    LOGE(d->log, "journal in %s cannot write: %s; submits are refused until it can",
         d->cfg->spool_dir, why);
  else
    LOGI(d->log, "journal in %s writes again: submits accepted", d->cfg->spool_dir);
}

/* Housekeeping: held messages whose time came (each tick, 100 ms), DLR
 * entries past their TTL (each second: a look at each shard's oldest entry
 * while none is due), the journal's state, a status line every 10 s. */
static void on_tick(struct evloop *loop, void *arg)
{
  struct daemon *d = arg;
  uint64_t now = evloop_now_ms(loop);
  watch_journal(d);
  core_scts_note_ahead(&d->core);
  schedule_release(d->core.schedule, time(NULL), connector_release_due, &d->core);
  if (d->core.mo_join)
    mo_join_expire(d->core.mo_join, time(NULL), connector_release_part, &d->core);
  if (now / 1000 != d->last_sample_s) {
    d->last_sample_s = now / 1000;
    core_sample_rates(&d->core);
    if (d->core.series)
      series_sample_core(d->core.series, &d->core, time(NULL));
    if (d->core.access_log)
      access_log_flush(d->core.access_log);
    accounts_tick(d->core.accounts, clock_now_ns());
    account_admin_tick(&d->core);
    core_reclaim(&d->core, NULL);   /* routers and plugins a reload replaced */
    if (d->groups)
      group_watch_look(d->groups, &d->core);
    size_t expired = dlrtab_expire(d->core.dlr, time(NULL));
    if (d->core.receipt_join)
      receipt_join_expire(d->core.receipt_join, time(NULL));
    if (expired)
      LOGI(d->log, "%zu DLR entries expired without a final receipt", expired);
  }
  status_line_tick(&d->status, &d->core, d->log, now, false);
}

/* A reload's certificates: each connector's and the admin API's, read
 * again (new files or new content) for the connections to come, each an
 * item of report. The configuration checked them whole; what HTTPS still
 * cannot read keeps the running one, refused. An HTTP client connector
 * builds its context when its instances start (a change of its files is
 * refused before this as needing a restart): not an item. */
static void reload_tls(struct daemon *d, const struct config *next, struct reload_report *report)
{
  char err[RELOAD_ERROR_LEN], item[RELOAD_ITEM_LEN];
  for (unsigned i = 0; i < next->n_connectors; i++) {
    const struct config_connector *cc = &next->connectors[i];
    bool tls = cc->tls.enabled || d->cfg->connectors[i].tls.enabled;
    if (!tls || (cc->http && cc->mode != CONFIG_CONN_SERVER))
      continue;
    snprintf(item, sizeof item, "tls of connector %.60s", cc->name);
    if (connector_tls_reload(d->core.connectors[i], &cc->tls, err, sizeof err) < 0)
      reload_refused(report, item, "%s; the running certificate stays", err);
    else
      reload_applied(report, "%s", item);
  }
  if (!next->admin_tls.enabled)
    return;
  if (admin_tls_reload(d->admin, &next->admin_tls, err, sizeof err) < 0)
    reload_refused(report, "tls of the admin API", "%s; the running certificate stays", err);
  else
    reload_applied(report, "tls of the admin API");
}

/* A reload refused whole: its reasons in report, nothing put in place. */
static void reload_refuse_whole(struct daemon *d, struct reload_report *report, const char *item, const char *why)
{
  atomic_fetch_add(&d->core.stats.reloads_refused, 1);
  LOGE(d->log, "reload refused, routes unchanged: %s", why);
  reload_refused(report, item, "%s", why);
}

/* The refusals of a reload that put the rest in place, each logged. */
static void reload_log_refusals(struct daemon *d, const struct reload_report *report)
{
  for (unsigned i = 0; i < report->n_refused; i++)
    LOGE(d->log, "reload: refused %s: %s", report->refused[i].item, report->refused[i].error);
  if (report->refused_more)
    LOGE(d->log, "reload: refused %u more items", report->refused_more);
}

/* SIGHUP and POST /api/reload: read the file again and put its routes,
 * plugins, accounts and certificates in place, each an item of report
 * (zeroed by the caller). Anything else that changed needs a restart, and a
 * file with errors changes nothing: both are refused whole with the reason,
 * and the running routes stay. An account or a certificate that cannot be
 * put in place is refused on its own while the rest goes in. */
static void reload(struct daemon *d, struct reload_report *report)
{
  /* SIGHUP (main thread) and POST /api/reload (admin thread) may race. */
  static pthread_mutex_t reload_lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&reload_lock);
  sd_notify(0, "RELOADING=1");
  struct config_errors errors = { 0 };
  struct config *next = config_load(d->path, &errors);
  if (!next) {
    atomic_fetch_add(&d->core.stats.reloads_refused, 1);
    LOGE(d->log, "reload refused, routes unchanged: %u error%s in %s", errors.count,
         errors.count == 1 ? "" : "s", d->path);
    for (unsigned i = 0; i < errors.count; i++) {
      LOGE(d->log, "reload: %s", errors.lines[i]);
      reload_refused(report, "configuration", "%s", errors.lines[i]);
    }
    if (!errors.count)
      reload_refused(report, "configuration", "cannot read %s", d->path);
    config_errors_free(&errors);
    goto out;
  }
  char restart_why[512];
  if (config_needs_restart(d->cfg, next, restart_why, sizeof restart_why)) {
    /* The item is the key that changed ("connectors.[2].tls changed: ..."). */
    char item[RELOAD_ITEM_LEN];
    snprintf(item, sizeof item, "%.*s", (int)strcspn(restart_why, " "), restart_why);
    reload_refuse_whole(d, report, item, restart_why);
    config_free(next);
    goto out;
  }
  char plugin_err[2048] = "";
  struct plugin_host *plugins = plugin_host_load(next, plugin_err, sizeof plugin_err);
  struct router *r = plugins ? router_create(next) : NULL;
  if (!plugins || !r) {
    reload_refuse_whole(d, report, plugins ? "routes" : "plugins", plugins ? "out of memory" : plugin_err);
    plugin_host_destroy(plugins);
    config_free(next);
    goto out;
  }
  /* Routes and plugins go in whatever an account or a certificate does:
   * the accounts and certificates that could be put in place are, those
   * refused stay as they were. */
  account_admin_reload(&d->core, next, report);
  reload_tls(d, next, report);
  core_swap_plugins(&d->core, plugins);
  core_swap_router(&d->core, r);
  reload_applied(report, "routes: %u", next->n_routes);
  reload_applied(report, "plugins: %u", next->n_plugins);
  if (d->groups && group_watch_routes(d->groups, next) == -1)
    LOGW(d->log, "reload: out of memory for the groups' watch: their switches are told for the old routes");
  if (reload_report_ok(report)) {
    atomic_fetch_add(&d->core.stats.reloads, 1);
    LOGI(d->log, "reloaded %s: %u routes, %u plugins and %u accounts in place", d->path, next->n_routes,
         next->n_plugins, next->n_accounts);
  } else {
    atomic_fetch_add(&d->core.stats.reloads_refused, 1);
    reload_log_refusals(d, report);
    LOGW(d->log, "reloaded %s in part: %u routes and %u plugins in place, %u item%s refused", d->path,
         next->n_routes, next->n_plugins, report->n_refused + report->refused_more,
         report->n_refused + report->refused_more == 1 ? "" : "s");
  }
  config_free(next);
out:
  sd_notifyf(0, "READY=1\nSTATUS=%s",
             reload_report_ok(report)             ? "running; reloaded"
             : reload_report_any_applied(report) ? "running; the last reload was refused in part"
                                                 : "running; the last reload was refused");
  pthread_mutex_unlock(&reload_lock);
}

static void reload_from_admin(void *ctx, struct reload_report *report)
{
  reload(ctx, report);
}

/* The log file and the access log opened again by their names (logrotate
 * moved them): what is written from now on goes to the new files. Returns
 * whether both could be (the one that could not keeps the old file). */
static bool reopen_logs(struct daemon *d, const char *signal_name)
{
  bool ok = true;
  if (log_reopen() == -1) {
    LOGE(d->log, "%s: cannot open the log file %s again: %s; writing on to the old one", signal_name,
         d->cfg->log_file, strerror(errno));
    ok = false;
  }
  if (d->core.access_log && access_log_reopen(d->core.access_log) == -1) {
    LOGE(d->log, "%s: cannot open the access log %s again: %s; writing on to the old one", signal_name,
         d->cfg->access_log, strerror(errno));
    ok = false;
  }
  return ok;
}

static void on_signal(struct evloop *loop, int fd, unsigned events, void *arg)
{
  struct daemon *d = arg;
  struct signalfd_siginfo info;
  while (read(fd, &info, sizeof info) == (ssize_t)sizeof info) {
    if (info.ssi_signo == SIGUSR1) {
      /* Log rotation alone: the configuration is not read, so that a
       * half-finished edit is not put in place by the nightly rotation. */
      if (reopen_logs(d, "SIGUSR1"))
        LOGI(d->log, "SIGUSR1: log files reopened");
      continue;
    }
    if (info.ssi_signo == SIGHUP) {
      /* The logs reopened as well (as before SIGUSR1 did it alone), then
       * the reload, whose lines go to the new log. */
      reopen_logs(d, "SIGHUP");
      struct reload_report *report = calloc(1, sizeof *report);
      if (report)
        reload(d, report);
      else
        LOGE(d->log, "SIGHUP: out of memory: no reload");
      free(report);
      continue;
    }
    LOGI(d->log, "%s: stopping", info.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
    sd_notify(0, "STOPPING=1");
    evloop_stop(loop);
  }
}

static int setup_signals(struct daemon *d)
{
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGUSR1);
  /* Blocked before any thread starts, so every thread inherits the mask and
   * the signals reach the signalfd only. */
  if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
    return -1;
  signal(SIGPIPE, SIG_IGN);
  d->signal_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (d->signal_fd == -1)
    return -1;
  return evloop_add(d->loop, d->signal_fd, EVLOOP_READ, on_signal, d);
}

/* Messages in flight that cannot leave before the stop, whatever it waits:
 * queued on a paused connector, on a client connector with no session
 * bound, or for the clients of a server connector (its sessions are
 * closing); held until their time, or for the other parts of a long MO.
 * *paused: those queued on paused connectors. */
static uint64_t messages_staying(struct core *core, uint64_t *paused)
{
  uint64_t staying = 0;
  *paused = 0;
  for (unsigned i = 0; i < core->n_connectors; i++) {
    struct connector *c = core->connectors[i];
    if (!c)
      continue;
    bool is_paused = connector_paused(c);
    if (!is_paused && connector_config(c)->mode != CONFIG_CONN_SERVER && connector_bound(c) > 0)
      continue;
    size_t queued = connector_queued_messages(c);
    staying += queued;
    if (is_paused)
      *paused += queued;
  }
  staying += schedule_count(core->schedule, -1);
  if (core->mo_join)
    staying += mo_join_held(core->mo_join);
  return staying;
}

/* Graceful stop: no new submits, wait (bounded) until every accepted
 * message that can leave now has left through its out connector (those in
 * the SMSCs' windows answered), then unbind everything. What cannot leave
 * now is not waited for: with persist on it stays in the journal for the
 * next start, which is said at INFO; with persist off it is lost, which is
 * said at WARN. */
static void stop_all(struct daemon *d)
{
  struct core *core = &d->core;
  atomic_store(&core->stopping, true);
  for (unsigned i = 0; i < core->n_connectors; i++)
    if (core->connectors[i])
      connector_stop_accepting(core->connectors[i]);
  uint64_t deadline = clock_now_ms() + DRAIN_TIMEOUT_MS, behind_paused = 0;
  uint64_t can_go = 0;
  for (;;) {
    uint64_t in_flight = atomic_load(&core->in_flight);
    uint64_t staying = in_flight ? messages_staying(core, &behind_paused) : 0;
    can_go = in_flight > staying ? in_flight - staying : 0;
    if (!can_go || clock_now_ms() >= deadline)
      break;
    struct timespec ts = { 0, 20000000 };
    nanosleep(&ts, NULL);
  }
  if (can_go)
    LOGW(d->log, "%" PRIu64 " messages that could go still in flight after %u s; stopping anyway", can_go,
         DRAIN_TIMEOUT_MS / 1000);
  for (unsigned i = 0; i < core->n_connectors; i++)
    if (core->connectors[i])
      connector_stop(core->connectors[i], UNBIND_TIMEOUT_MS);
  /* Counted again once the sessions are closed: what was in their windows
   * unanswered went back to the queues. */
  uint64_t left = atomic_load(&core->in_flight);
  if (left)
    messages_staying(core, &behind_paused);
  if (!left)
    LOGI(d->log, "stopped: no messages left in flight");
  else if (d->cfg->persist)
    LOGI(d->log, "stopped: %" PRIu64 " messages kept in the journal for the next start (%" PRIu64
         " behind paused connectors)", left, behind_paused);
  else
    LOGW(d->log, "stopped: %" PRIu64 " messages lost (%" PRIu64 " behind paused connectors): persist is off, "
         "so nothing keeps them for the next start", left, behind_paused);
  status_line_tick(&d->status, &d->core, d->log, clock_now_ms(), true);
}

/* ---- restart: what the journal gives back ---- */

/* Opens the journal and puts back what it holds (connector_journal.c):
 * queued messages, open DLR entries, receipts not yet delivered, credit,
 * and the ids used. */
static int open_journal(struct daemon *d)
{
  char err[256];
  struct spool_options opt = { .sync = true, .commit_interval_us = d->cfg->journal_commit_interval_us,
                               .segment_size = (size_t)d->cfg->journal_segment_mb << 20,
                               .credit_snapshot = account_admin_snapshot, .credit_ctx = &d->core };
  struct path_replay_summary r;
  d->replay = path_replay_open(&d->core, d->cfg->spool_dir, &opt, d->log, &connector_replay_edge, &d->core, &r, err,
                               sizeof err);
  if (r.credit_restored)
    LOGI(d->log, "journal: credit of %u account%s as the journal left it", r.credit_restored,
         r.credit_restored == 1 ? "" : "s");
  if (!d->replay) {
    LOGE(d->log, "journal in %s: %s", d->cfg->spool_dir, err);
    return -1;
  }
  if (r.evicted)
    LOGW(d->log, "journal: %zu messages awaiting receipts did not fit in the DLR table (dlr_table_size): "
         "their receipts will not be matched", r.evicted);
  /* Past every id the journal saw, and a window more: ids are never reused. */
  ids_init(&d->core.ids, d->cfg->node_id, d->cfg->id_window,
           (r.max_id & IDS_SEQ_MASK) + d->cfg->id_window + 1);
  LOGI(d->log, "journal: %" PRIu64 " messages queued again, %" PRIu64 " awaiting receipts, %" PRIu64
       " receipts to deliver, %" PRIu64 " matching no message yet, %" PRIu64 " dropped, %" PRIu64
       " held until their time, %" PRIu64 " parts of long MOs joined or waiting for the rest",
       r.messages, r.awaiting_receipt, r.receipts, r.unresolved, r.dropped, r.scheduled, r.joining);
  return 0;
}

static void journal_ids(void *ctx, uint64_t end)
{
  struct core *core = ctx;
  struct spool_record rec = { .type = SPOOL_REC_IDS, .id = end };
  core_journal(core, &rec);
}

static enum log_level log_level_of(enum config_log_level level)
{
  switch (level) {
  case CONFIG_LOG_ERROR: return LOG_ERROR;
  case CONFIG_LOG_WARN: return LOG_WARN;
  case CONFIG_LOG_INFO: return LOG_INFO;
  case CONFIG_LOG_DEBUG: return LOG_DEBUG;
  case CONFIG_LOG_DEBUG2: return LOG_DEBUG2;
  }
  return LOG_INFO;
}

/* Every client costs a descriptor: the soft limit (often 1,024) is raised
 * to the hard one, so that a flood of one listener's clients reaches the
 * configured connection limits before the process's own. */
static void raise_fd_limit(struct log_category *log)
{
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
    return;
  if (rl.rlim_cur < rl.rlim_max) {
    rlim_t was = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) == -1) {
      LOGW(log, "cannot raise the open files limit from %llu: %s", (unsigned long long)was, strerror(errno));
      return;
    }
  }
  LOGI(log, "open files limit %llu", (unsigned long long)rl.rlim_cur);
}

/* Each listener's share of the descriptors (fd_budget.c), and a warning
 * when they do not fit the open files limit. */
static void log_fd_budget(struct log_category *log, const struct config *cfg)
{
  struct fd_budget b;
  char text[1024];
  fd_budget_plan(cfg, &b);
  fd_budget_describe(cfg, &b, text, sizeof text);
  if (!b.fits)
    LOGW(log, "%s: above the limit, so a flood on one listener could take the descriptors of the others; "
         "raise the limit (LimitNOFILE= in the service unit) or lower unbound_max and max_connections", text);
  else if (b.cut)
    LOGW(log, "%s: the HTTP connectors' max_connections lowered so that one listener's flood cannot take "
         "the descriptors of the others; raise the limit to serve more", text);
  else
    LOGI(log, "%s", text);
}

/* spool_dir holds the journal (persist on) and the message log's spill
 * files (with a database). */
static bool uses_spool_dir(const struct config *cfg)
{
  return cfg->persist || cfg->has_database;
}

static int check_config_only(const char *path)
{
  struct config_errors errors = { 0 };
  struct config *cfg = config_load(path, &errors);
  if (!cfg) {
    for (unsigned i = 0; i < errors.count; i++)
      fprintf(stderr, "%s\n", errors.lines[i]);
    fprintf(stderr, "%s: %u error%s\n", path, errors.count, errors.count == 1 ? "" : "s");
    config_errors_free(&errors);
    return 1;
  }
  /* Plugins are loaded too: their init checks their own settings. */
  char err[2048];
  struct plugin_host *plugins = plugin_host_load(cfg, err, sizeof err);
  if (!plugins) {
    fprintf(stderr, "%s\n", err);
    config_free(cfg);
    return 1;
  }
  printf("%s: configuration OK (%u connectors, %u routes, %u plugins)\n", path, cfg->n_connectors,
         cfg->n_routes, plugin_host_count(plugins));
  /* A note, not an error: checking the running gateway's file before a
   * reload is what --check-config is for. */
  char held[256];
  if (uses_spool_dir(cfg) && spool_lock_check(cfg->spool_dir, held, sizeof held))
    printf("%s: note: spool_dir %s: an emgd started on this file now would refuse to start\n", path, held);
  plugin_host_destroy(plugins);
  config_free(cfg);
  return 0;
}

/* --init-db: creates the schema of the configured database, or brings it up
 * to date, and exits. */
static int init_database(const char *path)
{
  struct config_errors errors = { 0 };
  struct config *cfg = config_load(path, &errors);
  if (!cfg) {
    for (unsigned i = 0; i < errors.count; i++)
      fprintf(stderr, "%s\n", errors.lines[i]);
    config_errors_free(&errors);
    return 1;
  }
  int rc = 1;
  if (!cfg->has_database) {
    fprintf(stderr, "%s: no database section: there is no database to set up\n", path);
    goto out;
  }
  char err[DB_ERR_LEN];
  int applied = 0;
  if (db_init_schema(cfg->db_conninfo, 0, &applied, err, sizeof err) < 0) {
    fprintf(stderr, "%s: database: %s\n", path, err);
    goto out;
  }
  printf("database schema at version %d (%d migration%s applied)\n", DB_SCHEMA_VERSION, applied,
         applied == 1 ? "" : "s");
  rc = 0;
out:
  config_free(cfg);
  return rc;
}

/* The message log's writers tell when it comes up or goes down. */
static void db_log_changed(void *ctx, bool connected, const char *error)
{
  struct daemon *d = ctx;
  if (connected)
    LOGI(d->log, "message log: connected, writing");
  else
    LOGW(d->log, "message log: database unreachable (%s); events wait in memory and %s, and "
         "are written when it is back", error ? error : "?", d->cfg->spool_dir);
}

/* With a database section: the message log and the cluster thread. */
static int open_database(struct daemon *d)
{
  char err[DB_ERR_LEN];
  if (d->cfg->db_message_log) {
    struct db_log_limits limits = { .on_change = db_log_changed, .ctx = d };
    d->core.db_log = db_log_open(d->cfg->db_conninfo, d->cfg->spool_dir, &limits, err, sizeof err);
    if (!d->core.db_log) {
      LOGE(d->log, "message log: %s", err);
      return -1;
    }
  }
  d->core.cluster = cluster_start(&d->core, ids_high_water(&d->core.ids), 5000, account_db_sync, err, sizeof err);
  if (!d->core.cluster) {
    LOGE(d->log, "database: %s", err);
    return -1;
  }
  return 0;
}

int main(int argc, char **argv)
{
  static const struct option longopts[] = {
    { "config", required_argument, 0, 'c' },   { "check-config", no_argument, 0, 'k' },
    { "foreground", no_argument, 0, 'f' },     { "version", no_argument, 0, 'V' },
    { "help", no_argument, 0, 'h' },           { "init-db", no_argument, 0, 'i' },
    { 0, 0, 0, 0 }
  };
  const char *path = EMG_CONFIG_DEFAULT;
  bool check_only = false, init_db = false;
  int ch;
  while ((ch = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
    switch (ch) {
    case 'c': path = optarg; break;
    case 'k': check_only = true; break;
    case 'i': init_db = true; break;
    case 'f': break;
    case 'V': printf("emgd %s\n", EMG_VERSION); return 0;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 5;
    }
  }
  if (optind < argc) {
    usage(stderr);
    return 5;
  }
  if (check_only)
    return check_config_only(path);
  if (init_db)
    return init_database(path);

  static struct daemon d;
  d.path = path;
  struct config_errors errors = { 0 };
  d.cfg = config_load(path, &errors);
  if (!d.cfg) {
    for (unsigned i = 0; i < errors.count; i++)
      fprintf(stderr, "%s\n", errors.lines[i]);
    config_errors_free(&errors);
    return 1;
  }
  if (log_init(log_level_of(d.cfg->log_level), d.cfg->log_file) == -1) {
    fprintf(stderr, "emgd: cannot open the log %s: %s (general.log_file in %s)\n",
            d.cfg->log_file[0] ? d.cfg->log_file : "on stderr", strerror(errno), path);
    return 1;
  }
  /* The log is written by a thread of its own: every way out of main,
   * an early "return 1" included, must let it write what it holds, or the
   * reason emgd did not start is lost. */
  atexit(log_shutdown);
  d.log = log_category("emg.main");
  raise_fd_limit(d.log);
  log_fd_budget(d.log, d.cfg);
  /* Before anything reads or writes the spool: a second emgd on it would
   * replay the first one's live journal and truncate what it writes. */
  d.spool_lock_fd = -1;
  if (uses_spool_dir(d.cfg)) {
    char why[256];
    d.spool_lock_fd = spool_lock(d.cfg->spool_dir, why, sizeof why);
    if (d.spool_lock_fd < 0) {
      LOGE(d.log, "spool_dir %s: not starting", why);
      return 1;
    }
  }
  d.loop = evloop_create(100);
  if (!d.loop || setup_signals(&d) == -1 || evloop_tick(d.loop, on_tick, &d) == -1) {
    LOGE(d.log, "cannot set up the main loop");
    return 1;
  }
  if (core_init(&d.core, d.cfg) == -1) {
    LOGE(d.log, "out of memory setting up the core (dlr_table_size %zu)", d.cfg->dlr_table_size);
    return 1;
  }
  d.core.n_connectors = d.cfg->n_connectors;
  if (!(d.groups = group_watch_create(d.cfg)))
    LOGW(d.log, "out of memory for the groups' watch: their switches go unlogged");
  if (d.cfg->access_log[0]) {
    char why[CONFIG_PATH_LEN + 128];
    if (!(d.core.access_log = access_log_open(d.cfg->access_log, why, sizeof why))) {
      LOGE(d.log, "cannot open the access log %s (general.access_log in %s)", why, path);
      group_watch_destroy(d.groups);
  core_destroy(&d.core);
      return 1;
    }
  }
  char plugin_err[2048];
  struct plugin_host *plugins = plugin_host_load(d.cfg, plugin_err, sizeof plugin_err);
  if (!plugins) {
    LOGE(d.log, "plugins: %s", plugin_err);
    return 1;
  }
  core_swap_plugins(&d.core, plugins);
  char err[NETUTIL_ERR_LEN];
  for (unsigned i = 0; i < d.cfg->n_connectors; i++)
    if (!connector_create(&d.core, i, err, sizeof err)) {
      LOGE(d.log, "connector %s: %s", d.cfg->connectors[i].name, err);
      return 1;
    }
  /* The journal's credit records name the database's accounts. */
  if (d.cfg->has_database)
    account_db_load(&d.core);
  if (d.cfg->persist) {
    if (open_journal(&d) == -1)
      return 1;
    core_set_scts_floor(&d.core, spool_previous_write(d.core.spool), spool_previous_floor(d.core.spool),
                        spool_previous_scts_ceiling(d.core.spool));
    if (core_scts_note(&d.core, d.core.scts_floor) == -1)
      return 1;
    d.core.ids.on_window = journal_ids;
    d.core.ids.on_window_ctx = &d.core;
  }
  /* The operator's pauses, before any connector sends (the journal has
   * filled their queues: the log says what waits). */
  char pause_err[CONFIG_PATH_LEN + 256];
  if (connector_pause_restore(&d.core, d.log, pause_err, sizeof pause_err) == -1) {
    LOGE(d.log, "paused connectors: %s; not starting, as the connectors paused before the stop are not known "
         "(make the file readable, or remove it to start with every connector running)", pause_err);
    return 1;
  }
  if (d.cfg->has_database && open_database(&d) == -1)
    return 1;
  path_replay_finish(d.replay);
  d.replay = NULL;
  for (unsigned i = 0; i < d.cfg->n_connectors; i++)
    if (connector_start(d.core.connectors[i], err, sizeof err) == -1) {
      LOGE(d.log, "connector %s: %s", d.cfg->connectors[i].name, err);
      stop_all(&d);
      return 1;
    }
  if (d.cfg->has_admin && !(d.admin = admin_start(&d.core, d.cfg->admin_listen, d.cfg->admin_token,
                                                   &d.cfg->admin_tls, reload_from_admin, &d, err, sizeof err))) {
    LOGE(d.log, "admin: %s", err);
    stop_all(&d);
    return 1;
  }
  LOGI(d.log, "emgd %s started: node %u, %u connectors, persist %s", EMG_VERSION,
       d.cfg->node_id, d.cfg->n_connectors, d.cfg->persist ? "on" : "off");
  /* systemd (Type=notify) takes the service as started from here. */
  sd_notifyf(0, "READY=1\nSTATUS=running: %u connectors", d.cfg->n_connectors);
  status_line_start(&d.status, clock_now_ms());

  evloop_run(d.loop);

  admin_stop(d.admin);
  stop_all(&d);
  cluster_stop(d.core.cluster);
  d.core.cluster = NULL;
  /* The journal's writer calls the instances when records become durable,
   * and destroying a connector still journals (HTTP callbacks done): the
   * instances are forgotten before any connector frees its own. */
  if (d.core.spool)
    spool_forget_listeners(d.core.spool);
  for (unsigned i = 0; i < d.cfg->n_connectors; i++)
    connector_destroy(d.core.connectors[i]);
  if (d.core.db_log) {
    db_log_close(d.core.db_log, 10000);
    d.core.db_log = NULL;
  }
  if (d.core.spool) {
    struct spool_stats st;
    spool_stats(d.core.spool, &st);
    LOGI(d.log, "journal: %" PRIu64 " records, %" PRIu64 " MB written in %" PRIu64 " commits, %" PRIu64
         " records compacted, %" PRIu64 " segments deleted, %" PRIu64 " written into a deleted one's file",
         st.records, st.bytes >> 20, st.fsyncs, st.compacted, st.segments_deleted, st.segments_reused);
    spool_close(d.core.spool);
  }
  group_watch_destroy(d.groups);
  core_destroy(&d.core);
  LOGI(d.log, "emgd stopped");
  log_shutdown();
  evloop_destroy(d.loop);
  close(d.signal_fd);
  if (d.spool_lock_fd >= 0)
    close(d.spool_lock_fd);
  config_free(d.cfg);
  return 0;
}
