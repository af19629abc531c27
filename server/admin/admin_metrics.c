/* admin_metrics.c - GET /metrics: the gateway's counters and gauges in
 * Prometheus text format (0.0.4): the totals (whose table, which
 * /api/status's "totals" also reads, is admin_totals.c's), accounts,
 * queues, the DLR table, the journal, the history, each connector's
 * counts and latency histograms, and each plugin's calls. Apart from the server (admin.c) so that what a
 * scrape shows can be read in one place.
 *
 * It reads atomics and the snapshots other threads publish; the plugins
 * are read between core_enter and core_leave.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "account.h"
#include "admin_internal.h"
#include "admin_json.h"

/* ---- the Prometheus text ---- */

static void metric_head(FILE *f, const char *name, const char *type, const char *help)
{
  fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value, escaped as the text format wants. */
static void label_value(FILE *f, const char *v)
{
  for (; *v; v++) {
    if (*v == '\\' || *v == '"')
      fprintf(f, "\\%c", *v);
    else if (*v == '\n')
      fputs("\\n", f);
    else
      fputc(*v, f);
  }
}

/* Starts a sample: NAME SUFFIX{KEY="VALUE" (the caller closes the labels). */
static void sample_start(FILE *f, const char *name, const char *suffix, const char *key, const char *value)
{
  fprintf(f, "%s%s{%s=\"", name, suffix, key);
  label_value(f, value);
  fputc('"', f);
}

/* The per connector families, from struct connector_sum. */
static const struct connector_metric {
  const char *name, *type, *help;
  size_t offset;               /* of a uint64_t in struct connector_sum */
} connector_metrics[] = {
#define CM(name, type, field, help) { name, type, help, offsetof(struct connector_sum, field) }
  CM("emg_connector_submits_in_total", "counter", submits_in,
     "Messages taken from clients (server connectors) or MO messages from SMSCs (client connectors)."),
  CM("emg_connector_submits_out_total", "counter", submits_out, "Messages sent and accepted by the peer."),
  CM("emg_connector_receipts_in_total", "counter", receipts_in, "Delivery receipts received."),
  CM("emg_connector_receipts_out_total", "counter", receipts_out, "Delivery receipts sent and accepted."),
  CM("emg_connector_refused_total", "counter", refused, "Requests answered with an error."),
  CM("emg_connector_errors_total", "counter", errors,
     "Error responses, time-outs and undecodable frames."),
  CM("emg_connector_reconnects_total", "counter", reconnects, "Connections made again after a loss."),
  CM("emg_connector_bound", "gauge", bound, "Sessions bound now."),
  CM("emg_connector_window_used", "gauge", window_used, "Requests awaiting a response now."),
  CM("emg_connector_queued", "gauge", queued, "Messages and receipts waiting in the connector's queues."),
  CM("emg_connector_paused", "gauge", paused, "1 while the operator has the connector paused."),
#undef CM
};

static const struct plugin_metric {
  const char *name, *help;
  size_t offset;               /* of a uint64_t in struct plugin_host_stats */
} plugin_metrics[] = {
  { "emg_plugin_calls_total", "Plugin hook calls.", offsetof(struct plugin_host_stats, calls) },
  { "emg_plugin_refusals_total", "Messages a plugin refused.", offsetof(struct plugin_host_stats, refusals) },
  { "emg_plugin_flagged_total", "Messages a plugin flagged.", offsetof(struct plugin_host_stats, flagged) },
  { "emg_plugin_errors_total", "Plugin hooks that failed.", offsetof(struct plugin_host_stats, errors) },
  { "emg_plugin_timeouts_total", "Plugin hooks that took too long.", offsetof(struct plugin_host_stats, timeouts) },
};

static void metric_value(FILE *f, const char *name, const char *type, const char *help, uint64_t value)
{
  metric_head(f, name, type, help);
  fprintf(f, "%s %" PRIu64 "\n", name, value);
}

/* Each account's sessions, submits and refusals: one series per account
 * and, for the refusals, per reason. */
static void account_metrics(FILE *f, const struct core *c)
{
  static const struct {
    const char *name, *type, *help, *label;   /* label: "reason=..." or "state=..." */
    size_t field;                  /* a uint64_t of struct account_view */
  } series[] = {
    { "emg_account_binds", "gauge", "Sessions an account holds now.", NULL, offsetof(struct account_view, binds) },
    { "emg_account_submitted_total", "counter", "Submits an account's limits let through.", NULL,
      offsetof(struct account_view, submitted) },
    { "emg_account_refused_total", "counter", "Submits an account's limits refused, by reason.", "reason=\"rate",
      offsetof(struct account_view, refused_rate) },
    { "emg_account_refused_total", NULL, NULL, "reason=\"sender", offsetof(struct account_view, refused_sender) },
    { "emg_account_refused_total", NULL, NULL, "reason=\"credit", offsetof(struct account_view, refused_credit) },
    { "emg_account_receipts_total", "counter", "Final receipts given to an account's sessions, by outcome.",
      "state=\"delivered", offsetof(struct account_view, delivered) },
    { "emg_account_receipts_total", NULL, NULL, "state=\"undelivered", offsetof(struct account_view, undelivered) },
  };
  for (size_t s = 0; s < sizeof series / sizeof series[0]; s++) {
    if (series[s].help)
      metric_head(f, series[s].name, series[s].type, series[s].help);
    for (unsigned i = 0; i < accounts_used(c->accounts); i++) {
      struct account_view v;
      if (!accounts_view(c->accounts, i, &v))
        continue;
      fprintf(f, "%s{account=\"", series[s].name);
      label_value(f, v.cfg.name);
      if (series[s].label)
        fprintf(f, "\",%s", series[s].label);
      fprintf(f, "\"} %" PRIu64 "\n", *(const uint64_t *)((const char *)&v + series[s].field));
    }
  }
}

/* One histogram family over every connector: cumulative buckets in
 * seconds ending with +Inf (equal to _count), the sum in seconds. */
static void metric_histogram(FILE *f, const struct core *c, const struct connector_sum *sums,
                             size_t field, const char *name, const char *help)
{
  metric_head(f, name, "histogram", help);
  for (unsigned i = 0; i < c->n_connectors; i++) {
    const struct connector_latency *l = (const void *)((const char *)&sums[i] + field);
    const char *cname = connector_name(c, i);
    uint64_t cumulative = 0;
    for (unsigned b = 0; b < CONNECTOR_LATENCY_BUCKETS; b++) {
      cumulative += l->buckets[b];
      sample_start(f, name, "_bucket", "connector", cname);
      if (b < CONNECTOR_LATENCY_BUCKETS - 1)
        fprintf(f, ",le=\"%g\"} %" PRIu64 "\n", (double)connector_latency_bounds_us[b] / 1e6, cumulative);
      else
        fprintf(f, ",le=\"+Inf\"} %" PRIu64 "\n", cumulative);
    }
    sample_start(f, name, "_sum", "connector", cname);
    fprintf(f, "} %.6f\n", (double)l->sum_us / 1e6);
    sample_start(f, name, "_count", "connector", cname);
    fprintf(f, "} %" PRIu64 "\n", l->count);
  }
}

/* Prometheus text format (0.0.4). NULL when out of memory. */
char *admin_metrics_text(struct core *c)
{
  struct connector_sum *sums = calloc(c->n_connectors ? c->n_connectors : 1, sizeof *sums);
  char *out = NULL;
  size_t len = 0;
  FILE *f = sums ? open_memstream(&out, &len) : NULL;
  if (!f) {
    free(sums);
    return NULL;
  }
  const char *family = "";
  for (size_t i = 0; i < admin_totals_count; i++) {
    const struct total *t = &admin_totals[i];
    if (strcmp(family, t->metric) != 0)
      metric_head(f, t->metric, "counter", t->help);
    family = t->metric;
    fprintf(f, t->label ? "%s{%s} %" PRIu64 "\n" : "%s%s %" PRIu64 "\n", t->metric, t->label ? t->label : "",
            admin_total_value(c, t));
  }
  metric_head(f, "emg_logins_refused_total", "counter", "Binds and HTTP logins refused, by reason.");
  for (enum account_refusal r = ACCOUNT_OK + 1; r < ACCOUNT_REFUSALS; r++)
    fprintf(f, "emg_logins_refused_total{reason=\"%s\"} %" PRIu64 "\n", account_refusal_key(r),
            accounts_refused(c->accounts, r));
  account_metrics(f, c);
  metric_value(f, "emg_uptime_seconds", "gauge", "Seconds since emgd started.",
               (uint64_t)(time(NULL) - c->started));
  metric_value(f, "emg_in_flight", "gauge", "Messages accepted and not yet sent or failed.",
               atomic_load(&c->in_flight));
  metric_value(f, "emg_queued", "gauge", "Messages and receipts waiting in all queues.", admin_queued_total(c));
  metric_value(f, "emg_queue_soft_limit", "gauge", "max_total_queue_soft.", c->cfg->max_total_queue_soft);
  metric_value(f, "emg_queue_hard_limit", "gauge", "max_total_queue.", c->cfg->max_total_queue);

  struct dlr_stats ds;
  dlrtab_stats(c->dlr, &ds);
  metric_value(f, "emg_dlr_entries", "gauge", "Open entries of the DLR table.", ds.used);
  metric_value(f, "emg_dlr_size", "gauge", "Capacity of the DLR table.", ds.size);
  metric_value(f, "emg_dlr_inserted_total", "counter", "DLR table entries made.", ds.inserted);
  metric_value(f, "emg_dlr_matched_total", "counter", "Receipts matched in the DLR table.", ds.matched);
  metric_value(f, "emg_dlr_unmatched_total", "counter", "Receipt lookups that found nothing.", ds.unmatched);
  metric_value(f, "emg_dlr_evicted_total", "counter", "Entries evicted by a full DLR table.", ds.evicted);
  metric_value(f, "emg_dlr_expired_total", "counter", "Entries whose receipt never came (TTL).", ds.expired);

  if (c->spool) {
    struct spool_stats ss;
    spool_stats(c->spool, &ss);
    metric_value(f, "emg_spool_disk_bytes", "gauge", "Bytes the journal takes on disk.", ss.disk_bytes);
    metric_value(f, "emg_spool_failing", "gauge", "1 while the journal cannot write (submits are refused).",
                 ss.failed);
    metric_value(f, "emg_spool_records_total", "counter", "Records written to the journal.", ss.records);
    metric_value(f, "emg_spool_bytes_total", "counter", "Bytes written to the journal.", ss.bytes);
    metric_value(f, "emg_spool_fsyncs_total", "counter", "Journal commits (fsyncs).", ss.fsyncs);
  }
  metric_value(f, "emg_history_capacity", "gauge", "Message events the history keeps.",
               history_capacity(c->history));
  metric_value(f, "emg_history_events_total", "counter", "Message events recorded.",
               history_recorded(c->history));

  for (unsigned i = 0; i < c->n_connectors; i++)
    admin_connector_sum(core_connector(c, i), &sums[i], NULL);
  for (size_t m = 0; m < sizeof connector_metrics / sizeof connector_metrics[0]; m++) {
    const struct connector_metric *cm = &connector_metrics[m];
    metric_head(f, cm->name, cm->type, cm->help);
    for (unsigned i = 0; i < c->n_connectors; i++) {
      sample_start(f, cm->name, "", "connector", connector_name(c, i));
      fprintf(f, "} %" PRIu64 "\n", *(const uint64_t *)((const char *)&sums[i] + cm->offset));
    }
  }
  metric_head(f, "emg_connector_messages_refused_total", "counter",
              "Messages refused on their way in through the connector, by reason.");
  for (unsigned i = 0; i < c->n_connectors; i++) {
    uint64_t n[CORE_REFUSALS];
    core_refusals(c, (int)i, n);
    for (unsigned r = 0; r < CORE_REFUSALS; r++) {
      sample_start(f, "emg_connector_messages_refused_total", "", "connector", connector_name(c, i));
      fprintf(f, ",reason=\"%s\"} %" PRIu64 "\n", core_refusal_name((enum core_refusal)r), n[r]);
    }
  }
  metric_histogram(f, c, sums, offsetof(struct connector_sum, ack), "emg_ack_latency_seconds",
                   "Server connectors: from a submit in to its ack out (journal and soft limit included).");
  metric_histogram(f, c, sums, offsetof(struct connector_sum, response), "emg_response_latency_seconds",
                   "From a request out to the peer's response.");
  metric_histogram(f, c, sums, offsetof(struct connector_sum, delivery), "emg_delivery_latency_seconds",
                   "Client connectors: from a message's acceptance to its acceptance by the SMSC.");

  core_enter(c);
  struct plugin_host *h = admin_plugin_host(c);
  unsigned n_plugins = plugin_host_count(h);
  for (size_t m = 0; n_plugins && m < sizeof plugin_metrics / sizeof plugin_metrics[0]; m++) {
    metric_head(f, plugin_metrics[m].name, "counter", plugin_metrics[m].help);
    struct plugin_host_stats ps;
    for (unsigned i = 0; plugin_host_stats(h, i, &ps) == 0; i++) {
      sample_start(f, plugin_metrics[m].name, "", "plugin", ps.name);
      fprintf(f, "} %" PRIu64 "\n", *(const uint64_t *)((const char *)&ps + plugin_metrics[m].offset));
    }
  }
  core_leave(c);
  free(sums);
  if (fclose(f) != 0) {
    free(out);
    return NULL;
  }
  return out;
}
