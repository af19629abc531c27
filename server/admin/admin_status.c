/* admin_status.c - the admin API's JSON of the gateway as a whole and of
 * its connectors: GET /api/status (totals, refusals, rates, queue limits,
 * the DLR table, the journal, the database, plugins, history), GET
 * /api/connectors (each connector with its instances summed, its
 * latencies and its refusals by reason) and GET /api/dlr. The sum of a
 * connector's instances also feeds /metrics (admin_metrics.c).
 *
 * It reads atomics and the snapshots instances publish; the plugins are
 * read between core_enter and core_leave.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "account.h"
#include "admin_internal.h"
#include "admin_json.h"
#include "cluster.h"

/* ---- connectors: instances and their sums ---- */

static void latency_add(struct connector_latency *sum, const struct connector_latency *l)
{
  for (unsigned i = 0; i < CONNECTOR_LATENCY_BUCKETS; i++)
    sum->buckets[i] += l->buckets[i];
  sum->count += l->count;
  sum->sum_us += l->sum_us;
}

/* The bucket bound (ms) under which fraction q of the values fall: null
 * when there are none or they lie beyond the last bound. */
static json_t *latency_quantile_ms(const struct connector_latency *l, double q)
{
  if (!l->count)
    return json_null();
  uint64_t want = (uint64_t)((double)l->count * q + 0.999999), seen = 0;
  for (unsigned i = 0; i < CONNECTOR_LATENCY_BUCKETS - 1; i++) {
    seen += l->buckets[i];
    if (seen >= want)
      return json_real((double)connector_latency_bounds_us[i] / 1000.0);
  }
  return json_null();
}

static json_t *latency_json(const struct connector_latency *l)
{
  return json_pack("{s:I, s:o, s:o, s:o}", "count", (json_int_t)l->count, "mean_ms",
                   l->count ? json_real((double)l->sum_us / (double)l->count / 1000.0) : json_null(),
                   "p50_ms", latency_quantile_ms(l, 0.50), "p99_ms", latency_quantile_ms(l, 0.99));
}

/* A bound instance of a paused connector sends nothing: the operator sees
 * that rather than "bound". */
static const char *instance_state(const struct connector *conn, const struct connector_instance_info *i)
{
  return connector_paused(conn) && strcmp(i->state, "bound") == 0 ? "paused" : i->state;
}

static json_t *instance_json(const struct connector *conn, const struct connector_instance_info *i)
{
  return json_pack(
    "{s:i, s:s, s:o, s:o, s:o, s:i, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o}",
    "index", (int)i->index, "state", instance_state(conn, i), "peer", json_text_or_null(i->peer),
    "user", json_text_or_null(i->user), "bind", json_text_or_null(i->bind), "window_used",
    (int)i->window_used, "window", (int)i->window, "submits_in", (json_int_t)i->submits_in,
    "submits_out", (json_int_t)i->submits_out, "receipts_in", (json_int_t)i->receipts_in,
    "receipts_out", (json_int_t)i->receipts_out, "refused", (json_int_t)i->refused, "errors",
    (json_int_t)i->errors, "reconnects", (json_int_t)i->reconnects, "connected_since",
    json_time_ms(i->connected_since * 1000), "last_error", json_text_or_null(i->last_error),
    "last_error_time", json_time_ms(i->last_error_time * 1000));
}

void admin_connector_sum(struct connector *conn, struct connector_sum *sum, json_t *instances)
{
  memset(sum, 0, sizeof *sum);
  sum->bound = connector_bound(conn);
  sum->queued = connector_queued(conn);
  sum->paused = connector_paused(conn);
  struct connector_instance_info info;
  for (unsigned i = 0; connector_instance_info(conn, i, &info) == 0; i++) {
    sum->window_used += info.window_used;
    sum->submits_in += info.submits_in;
    sum->submits_out += info.submits_out;
    sum->receipts_in += info.receipts_in;
    sum->receipts_out += info.receipts_out;
    sum->refused += info.refused;
    sum->errors += info.errors;
    sum->reconnects += info.reconnects;
    latency_add(&sum->ack, &info.ack);
    latency_add(&sum->response, &info.response);
    latency_add(&sum->delivery, &info.delivery);
    if (instances)
      json_array_append_new(instances, instance_json(conn, &info));
  }
}

/* Messages refused on their way in, by reason (every reason, 0 or not): of
 * the connector of index connector, or -1, of all. */
static json_t *refused_by_json(const struct core *c, int connector, uint64_t *total)
{
  uint64_t n[CORE_REFUSALS];
  *total = core_refusals(c, connector, n);
  json_t *j = json_object();
  for (unsigned r = 0; r < CORE_REFUSALS; r++)
    json_object_set_new(j, core_refusal_name((enum core_refusal)r), json_integer((json_int_t)n[r]));
  return j;
}

json_t *admin_connectors_json(struct core *c)
{
  json_t *list = json_array();
  for (unsigned i = 0; i < c->n_connectors; i++) {
    struct connector *conn = core_connector(c, i);
    const struct config_connector *cfg = connector_config(conn);
    struct connector_sum sum;
    json_t *instances = json_array();
    admin_connector_sum(conn, &sum, instances);
    uint64_t refused_messages;
    json_t *refused_by = refused_by_json(c, (int)i, &refused_messages);
    json_t *item =
      json_pack("{s:s, s:s, s:s, s:s, s:b, s:i, s:i, s:i, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
                " s:{s:o, s:o, s:o}, s:o}",
                "name", cfg->name, "protocol", config_protocol_name(cfg), "mode",
                cfg->mode == CONFIG_CONN_SERVER ? "server" : "client", "address",
                cfg->mode == CONFIG_CONN_SERVER ? cfg->listen : cfg->connect, "paused",
                connector_paused(conn), "instance_count", (int)connector_instance_count(conn),
                "bound", (int)sum.bound, "window", (int)cfg->window, "window_used",
                (int)sum.window_used, "queued", (json_int_t)connector_queued(conn), "submits_in",
                (json_int_t)sum.submits_in, "submits_out", (json_int_t)sum.submits_out,
                "receipts_in", (json_int_t)sum.receipts_in, "receipts_out",
                (json_int_t)sum.receipts_out, "refused", (json_int_t)sum.refused, "errors",
                (json_int_t)sum.errors, "reconnects", (json_int_t)sum.reconnects, "latency", "ack",
                latency_json(&sum.ack), "response", latency_json(&sum.response), "delivery",
                latency_json(&sum.delivery), "instances", instances);
    /* "refused" counts every request answered with an error; these, the
     * messages refused and why. */
    json_object_set_new(item, "refused_messages", json_integer((json_int_t)refused_messages));
    json_object_set_new(item, "refused_by", refused_by);
    json_array_append_new(list, item);
  }
  return json_pack("{s:o}", "connectors", list);
}

/* ---- status ---- */

size_t admin_queued_total(struct core *c)
{
  size_t n = 0;
  for (unsigned i = 0; i < c->n_connectors; i++)
    n += connector_queued(core_connector(c, i));
  return n;
}

struct plugin_host *admin_plugin_host(struct core *c)
{
  return atomic_load_explicit(&c->plugins, memory_order_acquire);
}

static json_t *plugins_json(struct core *c)
{
  core_enter(c);
  struct plugin_host *h = admin_plugin_host(c);
  json_t *list = json_array();
  struct plugin_host_stats ps;
  for (unsigned i = 0; plugin_host_stats(h, i, &ps) == 0; i++)
    json_array_append_new(list, json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "name", ps.name,
                                          "path", ps.path, "calls", (json_int_t)ps.calls, "refusals",
                                          (json_int_t)ps.refusals, "flagged", (json_int_t)ps.flagged,
                                          "errors", (json_int_t)ps.errors, "timeouts",
                                          (json_int_t)ps.timeouts));
  core_leave(c);
  return list;
}

/* persist off: null (there is no journal). */
static json_t *spool_json(struct core *c)
{
  if (!c->spool)
    return json_null();
  struct spool_stats ss;
  spool_stats(c->spool, &ss);
  return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:o}",
                   "disk_bytes", (json_int_t)ss.disk_bytes, "spare_bytes", (json_int_t)ss.spare_bytes,
                   "segments_reused", (json_int_t)ss.segments_reused, "records", (json_int_t)ss.records,
                   "bytes", (json_int_t)ss.bytes, "fsyncs", (json_int_t)ss.fsyncs, "segments",
                   (json_int_t)ss.segments, "segments_deleted", (json_int_t)ss.segments_deleted,
                   "compacted", (json_int_t)ss.compacted, "live_messages",
                   (json_int_t)ss.live_messages, "live_receipts", (json_int_t)ss.live_receipts,
                   "failing", ss.failed, "reason", ss.failed ? json_text_or_null(ss.last_error) : json_null());
}

/* Without a database section: null. The message log's and the cluster's
 * snapshots never wait for the database. */
static json_t *database_json(struct core *c)
{
  if (!c->db_log && !c->cluster)
    return json_null();
  json_t *log = json_null(), *cluster = json_null();
  if (c->db_log) {
    struct db_log_stats ls;
    db_log_stats(c->db_log, &ls);
    log = json_pack("{s:b, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "connected", ls.connected,
                    "lag_s", ls.lag_s, "events_logged", (json_int_t)ls.events_logged, "events_written",
                    (json_int_t)ls.events_written, "events_pending", (json_int_t)ls.events_pending,
                    "events_spilled", (json_int_t)ls.events_spilled, "events_lost",
                    (json_int_t)ls.events_lost, "events_dropped", (json_int_t)ls.events_dropped,
                    "spill_bytes", (json_int_t)ls.spill_bytes, "memory_bytes", (json_int_t)ls.memory_bytes,
                    "last_error", json_text_or_null(ls.last_error));
  }
  if (c->cluster) {
    struct cluster_stats cs;
    cluster_stats(c->cluster, &cs);
    cluster = json_pack("{s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "connected", cs.connected,
                        "receipts_waiting", (json_int_t)cs.receipts_waiting,
                        "receipts_resolved", (json_int_t)cs.receipts_resolved, "receipts_handed_over",
                        (json_int_t)cs.receipts_handed_over, "receipts_claimed",
                        (json_int_t)cs.receipts_claimed, "receipts_unresolved",
                        (json_int_t)cs.receipts_unresolved, "id_ranges", (json_int_t)cs.id_ranges,
                        "ids_unbacked", (json_int_t)cs.ids_unbacked, "last_error",
                        json_text_or_null(cs.last_error));
  }
  return json_pack("{s:o, s:o}", "message_log", log, "cluster", cluster);
}

json_t *admin_dlr_json(struct core *c)
{
  struct dlr_stats ds;
  dlrtab_stats(c->dlr, &ds);
  return json_pack("{s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "size", (json_int_t)ds.size,
                   "used", (json_int_t)ds.used, "used_pct",
                   ds.size ? 100.0 * (double)ds.used / (double)ds.size : 0.0, "ttl_s",
                   (json_int_t)c->cfg->dlr_ttl_s, "inserted", (json_int_t)ds.inserted, "matched",
                   (json_int_t)ds.matched, "unmatched", (json_int_t)ds.unmatched, "evicted",
                   (json_int_t)ds.evicted, "expired", (json_int_t)ds.expired, "replaced",
                   (json_int_t)ds.replaced, "combining",
                   (json_int_t)(c->receipt_join ? receipt_join_count(c->receipt_join) : 0));
}

json_t *admin_status_json(struct core *c)
{
  json_t *counts = json_object();
  for (size_t i = 0; i < admin_totals_count; i++)
    json_object_set_new(counts, admin_totals[i].key,
                        json_integer((json_int_t)admin_total_value(c, &admin_totals[i])));
  json_t *refusals = json_object();
  for (enum account_refusal r = ACCOUNT_OK + 1; r < ACCOUNT_REFUSALS; r++)
    json_object_set_new(refusals, account_refusal_key(r), json_integer((json_int_t)accounts_refused(c->accounts, r)));
  uint64_t refused_messages;
  json_t *refused_by = refused_by_json(c, -1, &refused_messages);
  json_t *rates = json_object();
  static const unsigned spans[] = { 1, 10, 60 };
  for (unsigned i = 0; i < sizeof spans / sizeof spans[0]; i++) {
    double in, out;
    char key[8];
    core_rates(c, spans[i], &in, &out);
    snprintf(key, sizeof key, "%us", spans[i]);
    json_object_set_new(rates, key, json_pack("{s:f, s:f}", "received", in, "sent", out));
  }
  return json_pack(
    "{s:s, s:o, s:I, s:i, s:b, s:o, s:I, s:o, s:o, s:o, s:{s:I, s:I, s:I, s:I}, s:o, s:o, s:o, s:o, s:{s:I, s:I}}",
    "version", EMG_VERSION, "started", json_time_ms(c->started * 1000), "uptime_s",
    (json_int_t)(time(NULL) - c->started), "node_id", (int)c->cfg->node_id, "persist",
    c->cfg->persist, "totals", counts, "refused_messages", (json_int_t)refused_messages, "refused_by", refused_by,
    "refusals", refusals, "rates", rates, "queue", "in_flight",
    (json_int_t)atomic_load(&c->in_flight), "queued", (json_int_t)admin_queued_total(c), "soft_limit",
    (json_int_t)c->cfg->max_total_queue_soft, "hard_limit", (json_int_t)c->cfg->max_total_queue,
    "dlr", admin_dlr_json(c), "spool", spool_json(c), "database", database_json(c), "plugins", plugins_json(c),
    "history", "capacity",
    (json_int_t)history_capacity(c->history), "recorded", (json_int_t)history_recorded(c->history));
}
