/* admin.c - the admin HTTP API: status, connectors and their instances,
 * queues and what waits in them, one message's history, the DLR table,
 * the operator's actions, and Prometheus metrics.
 *
 * Everything here runs in libmicrohttpd's thread. It reads atomics and the
 * snapshots other modules publish; the only locks of the message path it
 * takes are held for a bounded time (a queue listing holds a queue's lock
 * for at most QUEUE_WALK_CHUNK items at a time, see queue_walk).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <microhttpd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "account.h"
#include "account_admin.h"
#include "admin_history.h"
#include "admin_json.h"
#include "admin_messages.h"
#include "admin_session.h"
#include "admin.h"
#include "logins.h"
#include "cluster.h"
#include "endpoint.h"
#include "http_edge.h"
#include "http_tls.h"
#include "netutil.h"
#include "proto.h"

/* The status page (server/www/status.html, embedded at build time). */
extern const unsigned char status_html[], status_js[];
extern const unsigned long status_html_len, status_js_len;

/* Most queue items one listing returns. */
#define ADMIN_LIST_MAX 10000
#define ADMIN_LIST_DEFAULT 100
/* Most octets of a request's body: an account's settings are the largest. */
#define ADMIN_MAX_BODY (64 * 1024)
/* Connections at once from one address, and how long a request may take
 * to come whole: an operator's tools need few, and are quick. */
#define ADMIN_CONNECTIONS_PER_IP 16
#define ADMIN_REQUEST_TIMEOUT_S 30

/* A request's body as it comes. */
struct request_body {
  char *data;
  size_t len;
};

struct admin {
  struct core *core;
  admin_reload_fn reload;
  void *reload_ctx;
  struct MHD_Daemon *daemon;
  struct http_edge_guard *guard;
  struct http_tls *tls;            /* HTTPS, or NULL */
  char token[160];
  size_t token_len;
  struct admin_sessions *sessions; /* the console's logins */
  /* Wrong tokens are braked here, apart from the connectors' guard: a
   * customer guessing passwords behind the operator's NAT must not lock the
   * operator out of the API. */
  struct auth_guard *auth;
};

/* The console's sessions: at most this many at once, each for 12 hours. */
#define ADMIN_SESSIONS_MAX 64
#define ADMIN_SESSION_TTL_S 43200

/* ---- replies ---- */

/* Compares every byte whatever the first difference, so the time taken
 * does not tell an attacker how much of a guessed token was right. */
static bool token_matches(const struct admin *a, const char *header)
{
  static const char prefix[] = "Bearer ";
  if (!header || strncmp(header, prefix, sizeof prefix - 1) != 0)
    return false;
  const char *given = header + sizeof prefix - 1;
  size_t len = strlen(given);
  unsigned char diff = (unsigned char)(len != a->token_len);
  for (size_t i = 0; i < a->token_len; i++)
    diff |= (unsigned char)(a->token[i] ^ (i < len ? given[i] : 0));
  return diff == 0;
}

/* A reply with a Set-Cookie header (set_cookie NULL: none). */
static enum MHD_Result reply_cookie(struct MHD_Connection *conn, unsigned status, const char *type, char *body,
                                    const char *set_cookie)
{
  if (!body)
    return MHD_NO;   /* out of memory: libmicrohttpd closes the connection */
  struct MHD_Response *r =
    MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
  if (!r) {
    free(body);
    return MHD_NO;
  }
  if (set_cookie)
    MHD_add_response_header(r, "Set-Cookie", set_cookie);
  MHD_add_response_header(r, "Content-Type", type);
  MHD_add_response_header(r, "Cache-Control", "no-store");
  /* The console runs only its own script, in no other site's frame. */
  MHD_add_response_header(r, "Content-Security-Policy",
                          "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; "
                          "base-uri 'none'; form-action 'self'");
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(r, "X-Frame-Options", "DENY");
  MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
  if (status == MHD_HTTP_UNAUTHORIZED)
    MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
  enum MHD_Result rc = MHD_queue_response(conn, status, r);
  MHD_destroy_response(r);
  return rc;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type, char *body)
{
  return reply_cookie(conn, status, type, body, NULL);
}

/* Takes j; a NULL j (a json_pack that failed: out of memory) gives a 500. */
static enum MHD_Result reply_json(struct MHD_Connection *conn, unsigned status, json_t *j)
{
  /* Six significant digits: rates, ages and latencies, not float noise. */
  char *body = j ? json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(6)) : strdup("{\"error\": \"out of memory\"}");
  if (!j)
    status = MHD_HTTP_INTERNAL_SERVER_ERROR;
  json_decref(j);
  return reply(conn, status, "application/json", body);
}

static enum MHD_Result reply_error(struct MHD_Connection *conn, unsigned status, const char *what)
{
  return reply_json(conn, status, json_pack("{s:s}", "error", what));
}

/* POST /api/reload: what the reload put in place and what it refused, item
 * by item. 200 when everything was put in place; 409 when it was refused
 * whole (nothing changed); 422 when part went in and the refused items did
 * not. "error" repeats the first refusal for clients that read only it. */
static json_t *reload_json(const struct reload_report *r)
{
  json_t *applied = json_array(), *refused = json_array();
  for (unsigned i = 0; i < r->n_applied; i++)
    json_array_append_new(applied, json_text(r->applied[i]));
  for (unsigned i = 0; i < r->n_refused; i++)
    json_array_append_new(refused, json_pack("{s:o, s:o}", "item", json_text(r->refused[i].item), "error",
                                             json_text(r->refused[i].error)));
  json_t *j = json_pack("{s:b, s:o, s:o}", "reloaded", reload_report_ok(r), "applied", applied, "refused", refused);
  if (j && r->applied_more)
    json_object_set_new(j, "applied_more", json_integer(r->applied_more));
  if (j && r->refused_more)
    json_object_set_new(j, "refused_more", json_integer(r->refused_more));
  if (j && r->n_refused)
    json_object_set_new(j, "error", json_text(r->refused[0].error));
  return j;
}

static enum MHD_Result reload_reply(struct MHD_Connection *conn, struct admin *a)
{
  struct reload_report *r = calloc(1, sizeof *r);
  if (!r)
    return reply_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
  if (a->reload)
    a->reload(a->reload_ctx, r);
  else
    reload_refused(r, "configuration", "this server does not reload");
  unsigned status = reload_report_ok(r)           ? MHD_HTTP_OK
                    : reload_report_any_applied(r) ? MHD_HTTP_UNPROCESSABLE_CONTENT
                                                   : MHD_HTTP_CONFLICT;
  json_t *j = reload_json(r);
  free(r);
  return reply_json(conn, status, j);
}

/* ---- values as the API shows them ---- */

static int64_t now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


/* "throttled" for PROTO_E_THROTTLED: what a retry was for. */
static void status_text(uint8_t status, char *out, size_t cap)
{
  static const char prefix[] = "PROTO_E_";
  const char *name = proto_status_name((enum proto_status)status);
  if (strncmp(name, prefix, sizeof prefix - 1) == 0)
    name += sizeof prefix - 1;
  size_t i = 0;
  for (; name[i] && i + 1 < cap; i++)
    out[i] = (char)tolower((unsigned char)name[i]);
  out[i] = '\0';
}


/* ---- totals: one table for /api/status and /metrics ---- */

static const struct total {
  const char *key;             /* in /api/status "totals" */
  const char *metric;          /* Prometheus family (several entries may share one) */
  const char *label;           /* the entry's label in that family, or NULL */
  const char *help;
  size_t offset;               /* in struct core_stats */
} totals[] = {
#define TOTAL(key, metric, label, field, help) { key, metric, label, help, offsetof(struct core_stats, field) }
  TOTAL("received", "emg_messages_received_total", NULL, received, "Messages accepted from clients."),
  TOTAL("sent", "emg_messages_sent_total", NULL, sent, "Messages accepted by their destination."),
  TOTAL("failed", "emg_messages_failed_total", NULL, failed,
        "Messages refused for good by their destination or dropped by the operator."),
  TOTAL("expired", "emg_messages_expired_total", NULL, expired,
        "Messages whose validity passed before they could be sent."),
  TOTAL("retried", "emg_messages_retried_total", NULL, retried,
        "Sends repeated after a temporary error or a lost connection."),
  TOTAL("rerouted", "emg_messages_rerouted_total", NULL, rerouted,
        "Messages moved from one connector's queue to another's (drain, reroute)."),
  /* Every reason of enum core_refusal, keyed "refused_" and its name. */
  TOTAL("refused_rate", "emg_messages_refused_total", "reason=\"rate\"", refused[CORE_REFUSED_RATE],
        "Messages refused on their way in, by reason."),
  TOTAL("refused_account_limit", "emg_messages_refused_total", "reason=\"account_limit\"",
        refused[CORE_REFUSED_ACCOUNT_LIMIT], NULL),
  TOTAL("refused_credit", "emg_messages_refused_total", "reason=\"credit\"", refused[CORE_REFUSED_CREDIT], NULL),
  TOTAL("refused_queue_full", "emg_messages_refused_total", "reason=\"queue_full\"",
        refused[CORE_REFUSED_QUEUE_FULL], NULL),
  TOTAL("refused_connector_queue_full", "emg_messages_refused_total", "reason=\"connector_queue_full\"",
        refused[CORE_REFUSED_CONNECTOR_QUEUE_FULL], NULL),
  TOTAL("refused_no_route", "emg_messages_refused_total", "reason=\"no_route\"", refused[CORE_REFUSED_NO_ROUTE], NULL),
  TOTAL("refused_plugin", "emg_messages_refused_total", "reason=\"plugin\"", refused[CORE_REFUSED_PLUGIN], NULL),
  TOTAL("refused_too_long", "emg_messages_refused_total", "reason=\"too_long\"", refused[CORE_REFUSED_TOO_LONG], NULL),
  TOTAL("refused_journal", "emg_messages_refused_total", "reason=\"journal\"", refused[CORE_REFUSED_JOURNAL], NULL),
  TOTAL("refused_other", "emg_messages_refused_total", "reason=\"other\"", refused[CORE_REFUSED_OTHER], NULL),
  TOTAL("slowed", "emg_acks_slowed_total", NULL, slowed,
        "Acks held back because max_total_queue_soft was passed."),
  TOTAL("receipts_in", "emg_receipts_in_total", NULL, receipts_in, "Delivery receipts received from SMSCs."),
  TOTAL("delivered", "emg_messages_delivered_total", NULL, delivered,
        "Messages whose receipt from the SMSC says DELIVERED."),
  TOTAL("receipts_out", "emg_receipts_out_total", NULL, receipts_out, "Delivery receipts delivered to clients."),
  TOTAL("receipts_unmatched", "emg_receipts_unmatched_total", NULL, receipts_unmatched,
        "Receipts from SMSCs that matched no message."),
  TOTAL("mo_in", "emg_mo_received_total", NULL, mo_in, "MO messages received from SMSCs."),
  TOTAL("binds_refused", "emg_binds_refused_total", NULL, binds_refused,
        "Binds refused for an unknown account or a wrong password."),
  TOTAL("logins_blocked", "emg_logins_blocked_total", NULL, logins_blocked,
        "Logins refused unread: their address had failed auth_max_failures times."),
  TOTAL("admin_logins_blocked", "emg_admin_logins_blocked_total", NULL, admin_logins_blocked,
        "Admin API requests refused unread: their address had sent auth_max_failures wrong tokens."),
  TOTAL("sessions_refused", "emg_sessions_refused_total", NULL, sessions_refused,
        "Connections beyond a server connector's instances."),
  TOTAL("reloads", "emg_reloads_total", NULL, reloads, "Configuration reloads done."),
  TOTAL("reloads_refused", "emg_reloads_refused_total", NULL, reloads_refused,
        "Configuration reloads refused (errors in the file)."),
#undef TOTAL
};

static uint64_t total_value(const struct core *c, const struct total *t)
{
  return atomic_load((const _Atomic uint64_t *)((const char *)&c->stats + t->offset));
}

/* ---- connectors: instances and their sums ---- */

/* A connector's instances summed, for its row and its metrics (all
 * uint64_t but the histograms, so that one table prints the metrics). */
struct connector_sum {
  uint64_t bound, window_used, queued, paused;
  uint64_t submits_in, submits_out, receipts_in, receipts_out, refused, errors, reconnects;
  struct connector_latency ack, response, delivery;
};

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

/* Sums the instances of conn into *sum and, when instances is given,
 * appends each one's view to it. */
static void connector_sum(struct connector *conn, struct connector_sum *sum, json_t *instances)
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

static json_t *connectors_json(struct admin *a)
{
  struct core *c = a->core;
  json_t *list = json_array();
  for (unsigned i = 0; i < c->n_connectors; i++) {
    struct connector *conn = core_connector(c, i);
    const struct config_connector *cfg = connector_config(conn);
    struct connector_sum sum;
    json_t *instances = json_array();
    connector_sum(conn, &sum, instances);
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

static size_t queued_total(struct core *c)
{
  size_t n = 0;
  for (unsigned i = 0; i < c->n_connectors; i++)
    n += connector_queued(core_connector(c, i));
  return n;
}

static struct plugin_host *plugins(struct core *c)
{
  return atomic_load_explicit(&c->plugins, memory_order_acquire);
}

static json_t *plugins_json(struct core *c)
{
  core_enter(c);
  struct plugin_host *h = plugins(c);
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

static json_t *dlr_json(struct core *c)
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

static json_t *status_json(struct admin *a)
{
  struct core *c = a->core;
  json_t *counts = json_object();
  for (size_t i = 0; i < sizeof totals / sizeof totals[0]; i++)
    json_object_set_new(counts, totals[i].key, json_integer((json_int_t)total_value(c, &totals[i])));
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
    (json_int_t)atomic_load(&c->in_flight), "queued", (json_int_t)queued_total(c), "soft_limit",
    (json_int_t)c->cfg->max_total_queue_soft, "hard_limit", (json_int_t)c->cfg->max_total_queue,
    "dlr", dlr_json(c), "spool", spool_json(c), "database", database_json(c), "plugins", plugins_json(c),
    "history", "capacity",
    (json_int_t)history_capacity(c->history), "recorded", (json_int_t)history_recorded(c->history));
}

/* ---- queues ---- */

/* What a listing shows of one item, copied under the queue's lock (the
 * JSON is built after it is released). */
struct listed {
  enum qitem_kind kind;
  uint64_t id;                 /* the message's (a receipt's: the message it reports on) */
  char from[MSG_ADDR_LEN], to[MSG_ADDR_LEN];
  int64_t received_ms;         /* messages */
  uint16_t attempts;
  uint8_t last_status;
  uint8_t level;               /* the priority lane it waits in */
  bool scheduled;              /* held by the gateway until send_at */
  int64_t send_at;             /* its deferred time (Unix s); 0 = none */
  uint8_t state;               /* receipts */
  int64_t next_attempt_ms;
  uint16_t origin_connector;   /* messages */
  char origin_user[MSG_USER_LEN];
  char origin_ref[MSG_ID_LEN];
};

struct listing {
  struct listed *items;
  size_t count, cap;
};

static void list_item(const struct qitem *it, void *arg)
{
  struct listing *l = arg;
  if (l->count == l->cap)
    return;
  struct listed *d = &l->items[l->count++];
  d->kind = it->kind;
  d->level = (uint8_t)qitem_level(it);
  d->scheduled = false;
  d->send_at = it->kind == QITEM_MSG ? it->msg->deferred : 0;
  d->attempts = it->attempts;
  d->last_status = it->last_status;
  d->next_attempt_ms = it->next_attempt_ms;
  if (it->kind == QITEM_MSG) {
    const struct msg *m = it->msg;
    d->id = m->id;
    memcpy(d->from, m->src.addr, sizeof d->from);
    memcpy(d->to, m->dst.addr, sizeof d->to);
    d->received_ms = m->received_ms;
    d->origin_connector = m->origin.connector;
    memcpy(d->origin_user, m->origin.user, sizeof d->origin_user);
    memcpy(d->origin_ref, m->origin.ref, sizeof d->origin_ref);
    d->state = 0;
  } else {
    d->id = it->msg_id;
    memcpy(d->from, it->receipt.src.addr, sizeof d->from);
    memcpy(d->to, it->receipt.dst.addr, sizeof d->to);
    d->received_ms = 0;
    d->origin_user[0] = '\0';
    memcpy(d->origin_ref, it->receipt.id, sizeof d->origin_ref);
    d->state = it->receipt.state;
  }
}

/* A held message: listed as any, and marked. */
static void list_scheduled(const struct qitem *it, void *arg)
{
  struct listing *l = arg;
  size_t before = l->count;
  list_item(it, arg);
  if (l->count > before)
    l->items[before].scheduled = true;
}

static json_t *listed_json(const struct core *c, const struct listed *d, int64_t now)
{
  char error[32] = "";
  if (d->last_status)
    status_text(d->last_status, error, sizeof error);
  json_t *j = json_pack("{s:s, s:o, s:o, s:o, s:i, s:i, s:o, s:o, s:o}", "kind",
                        d->kind == QITEM_MSG ? "message" : "receipt", "id", json_id(d->id), "from",
                        json_text(d->from), "to", json_text(d->to), "priority", (int)d->level,
                        "attempts", (int)d->attempts,
                        "next_attempt", json_time_ms(d->next_attempt_ms), "last_error",
                        json_text_or_null(error), "origin_ref", json_text(d->origin_ref));
  if (!j)
    return NULL;
  json_object_set_new(j, "scheduled", json_boolean(d->scheduled));
  json_object_set_new(j, "send_at", d->send_at > 0 ? json_time_ms(d->send_at * 1000) : json_null());
  if (d->kind == QITEM_MSG) {
    json_object_set_new(j, "age_s", json_real((double)(now - d->received_ms) / 1000.0));
    json_object_set_new(j, "origin", json_pack("{s:s, s:o}", "connector",
                                               connector_name(c, d->origin_connector), "user",
                                               json_text(d->origin_user)));
  } else {
    json_object_set_new(j, "age_s", json_null());
    json_object_set_new(j, "state", json_text_or_null(state_name(d->state)));
  }
  return j;
}

/* The first item of q, when there is one. */
static bool queue_first(struct queue *q, struct listed *first)
{
  struct listing l = { first, 0, 1 };
  queue_walk(q, 0, 1, list_item, &l);
  return l.count == 1;
}

static json_t *oldest_age(struct queue *q, int64_t now)
{
  struct listed first;
  return queue_first(q, &first) && first.kind == QITEM_MSG
           ? json_real((double)(now - first.received_ms) / 1000.0) : json_null();
}

static json_t *queues_json(struct admin *a)
{
  struct core *c = a->core;
  json_t *list = json_array();
  json_int_t total = 0;
  int64_t now = now_ms();
  for (unsigned i = 0; i < c->n_connectors; i++) {
    struct connector *conn = core_connector(c, i);
    const struct config_connector *cfg = connector_config(conn);
    size_t n = connector_queued(conn);
    total += (json_int_t)n;
    /* Queue 0 is the out queue; a server connector has one per account after it. */
    json_t *accounts = json_array();
    for (unsigned q = 1; q < connector_queue_count(conn); q++) {
      struct account_view v;
      struct queue *aq = connector_queue(conn, q);
      /* An account that may use the connector, or a queue that still holds
       * something (an account since changed, or one waiting to be removed). */
      if (!(accounts_view(c->accounts, q - 1, &v) && accounts_uses(c->accounts, (int)q - 1, i)) && !queue_count(aq))
        continue;
      json_array_append_new(accounts, json_pack("{s:o, s:I, s:o}", "user", json_text(v.exists ? v.cfg.name : NULL),
                                                "queued", (json_int_t)queue_count(aq),
                                                "oldest_age_s", oldest_age(aq, now)));
    }
    json_array_append_new(list, json_pack("{s:s, s:I, s:I, s:I, s:b, s:o, s:o}", "connector", cfg->name,
                                          "queued", (json_int_t)n, "scheduled",
                                          (json_int_t)schedule_count(c->schedule, (int)i),
                                          "max_queue", (json_int_t)cfg->max_queue,
                                          "paused", connector_paused(conn), "oldest_age_s",
                                          oldest_age(connector_queue(conn, 0), now), "accounts",
                                          accounts));
  }
  return json_pack("{s:o, s:I, s:I, s:I, s:I, s:I}", "queues", list, "total", total, "scheduled",
                   (json_int_t)schedule_count(c->schedule, -1), "in_flight",
                   (json_int_t)atomic_load(&c->in_flight), "soft_limit",
                   (json_int_t)c->cfg->max_total_queue_soft, "hard_limit",
                   (json_int_t)c->cfg->max_total_queue);
}

/* What waits in a connector's queues, then what the gateway holds for it
 * until its time: offset and limit over all of them in order. NULL when
 * out of memory. */
static json_t *queue_messages_json(struct core *core, struct connector *conn, size_t offset, size_t limit)
{
  struct listing l = { calloc(limit ? limit : 1, sizeof *l.items), 0, limit };
  if (!l.items)
    return NULL;
  size_t total = 0, skip = offset;
  for (unsigned i = 0; i < connector_queue_count(conn); i++) {
    struct queue *q = connector_queue(conn, i);
    /* A queue wholly before the offset, or after the limit, is only counted. */
    size_t n = queue_count(q);
    if (skip < n && l.count < l.cap)
      n = queue_walk(q, skip, l.cap - l.count, list_item, &l);
    skip = skip > n ? skip - n : 0;
    total += n;
  }
  size_t scheduled = schedule_walk(core->schedule, connector_index(conn), skip, l.cap - l.count, list_scheduled, &l);
  int64_t now = now_ms();
  json_t *list = json_array();
  for (size_t i = 0; i < l.count; i++)
    json_array_append_new(list, listed_json(core, &l.items[i], now));
  free(l.items);
  return json_pack("{s:s, s:I, s:I, s:I, s:I, s:b, s:o}", "connector", connector_config(conn)->name,
                   "queued", (json_int_t)total, "scheduled", (json_int_t)scheduled, "offset", (json_int_t)offset, "limit",
                   (json_int_t)limit, "paused", connector_paused(conn), "messages", list);
}

/* ---- metrics ---- */

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
static char *metrics_text(struct admin *a)
{
  struct core *c = a->core;
  struct connector_sum *sums = calloc(c->n_connectors ? c->n_connectors : 1, sizeof *sums);
  char *out = NULL;
  size_t len = 0;
  FILE *f = sums ? open_memstream(&out, &len) : NULL;
  if (!f) {
    free(sums);
    return NULL;
  }
  const char *family = "";
  for (size_t i = 0; i < sizeof totals / sizeof totals[0]; i++) {
    const struct total *t = &totals[i];
    if (strcmp(family, t->metric) != 0)
      metric_head(f, t->metric, "counter", t->help);
    family = t->metric;
    fprintf(f, t->label ? "%s{%s} %" PRIu64 "\n" : "%s%s %" PRIu64 "\n", t->metric, t->label ? t->label : "",
            total_value(c, t));
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
  metric_value(f, "emg_queued", "gauge", "Messages and receipts waiting in all queues.", queued_total(c));
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
    connector_sum(core_connector(c, i), &sums[i], NULL);
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
  struct plugin_host *h = plugins(c);
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

/* ---- requests ---- */

static struct connector *connector_named(struct core *c, const char *name, size_t len)
{
  for (unsigned i = 0; i < c->n_connectors; i++) {
    const char *n = connector_config(core_connector(c, i))->name;
    if (strlen(n) == len && strncmp(n, name, len) == 0)
      return core_connector(c, i);
  }
  return NULL;
}

/* A count from the query string: fallback when absent, -1 when it is not
 * a number; at most max. */
static int query_size(struct MHD_Connection *conn, const char *key, size_t fallback, size_t max,
                      size_t *out)
{
  const char *v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, key);
  if (!v) {
    *out = fallback;
    return 0;
  }
  char *end;
  errno = 0;
  unsigned long long n = strtoull(v, &end, 10);
  if (!isdigit((unsigned char)v[0]) || *end || errno == ERANGE)
    return -1;
  *out = n > max ? max : (size_t)n;
  return 0;
}

static bool starts_with(const char *s, const char *prefix)
{
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* NAME of PREFIX NAME SUFFIX in url: the connector, or NULL. */
static struct connector *url_connector(struct core *c, const char *url, const char *prefix, const char *suffix)
{
  size_t plen = strlen(prefix), slen = strlen(suffix), ulen = strlen(url);
  if (ulen <= plen + slen || !starts_with(url, prefix) || strcmp(url + ulen - slen, suffix) != 0)
    return NULL;
  return connector_named(c, url + plen, ulen - plen - slen);
}

static enum MHD_Result queue_listing_reply(struct MHD_Connection *conn, struct core *c,
                                           struct connector *target)
{
  size_t offset, limit;
  if (query_size(conn, "offset", 0, SIZE_MAX / 2, &offset) == -1 ||
      query_size(conn, "limit", ADMIN_LIST_DEFAULT, ADMIN_LIST_MAX, &limit) == -1)
    return reply_error(conn, MHD_HTTP_BAD_REQUEST, "offset and limit are non-negative numbers");
  json_t *j = queue_messages_json(c, target, offset, limit);
  return j ? reply_json(conn, MHD_HTTP_OK, j) : reply_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **state)
{
  struct admin *a = cls;
  struct core *c = a->core;
  if (!*state && !http_edge_framing_ok(conn))
    return http_edge_refuse_framing(conn, "application/json", "{\"error\": \"ambiguous request length\"}");
  /* The page holds no data: it asks the API for it, with the token. */
  if (strcmp(method, "GET") == 0 && strcmp(url, "/") == 0)
    return reply(conn, MHD_HTTP_OK, "text/html; charset=utf-8",
                 strndup((const char *)status_html, status_html_len));
  if (strcmp(method, "GET") == 0 && strcmp(url, "/status.js") == 0)
    return reply(conn, MHD_HTTP_OK, "text/javascript; charset=utf-8",
                 strndup((const char *)status_js, status_js_len));
  /* Guessing the token is braked per address, as logins are. */
  char peer[64];
  http_edge_peer(conn, peer, sizeof peer);
  if (auth_guard_blocked(a->auth, peer)) {
    atomic_fetch_add(&c->stats.admin_logins_blocked, 1);
    return reply_error(conn, MHD_HTTP_TOO_MANY_REQUESTS, "too many failed attempts from this address: try later");
  }
  const char *authorization = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
  const char *cookie = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Cookie");
  char csrf[ADMIN_SESSION_HEX];
  int64_t session_ends = 0, now_s = time(NULL);
  bool by_token = token_matches(a, authorization);
  bool by_session = !by_token && !authorization && admin_session_find(a->sessions, cookie, now_s, csrf, &session_ends);
  if (!by_token && !by_session) {
    /* A request with no credentials at all (a browser's first look, a
     * probe, a session that ended) is no guess: only a wrong token counts. */
    if (authorization) {
      LOGW(a->core->log, "admin API: request from %s refused: wrong bearer token", peer);
      auth_guard_failed(a->auth, peer, "an admin request");
    }
    return reply_error(conn, MHD_HTTP_UNAUTHORIZED, "missing or wrong bearer token (or no session)");
  }
  /* A session's actions must come from the console's own page: another
   * site's page can make the browser send the cookie, not the token. */
  if (by_session && strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0 &&
      !admin_session_same_site(csrf, MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-CSRF-Token"),
                               MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin"),
                               MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host"), a->tls != NULL)) {
    LOGW(a->core->log, "admin API: %s %s from %s refused: not from the console's own page (CSRF token or origin)",
         method, url, peer);
    return reply_error(conn, MHD_HTTP_FORBIDDEN, "refused: the request does not come from the console's own page");
  }
  /* The first call only announces a request; its body (kept in *state,
   * at most ADMIN_MAX_BODY) comes in the calls after. */
  if (!*state) {
    const char *length = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (length && strtoull(length, NULL, 10) > ADMIN_MAX_BODY)
      return reply_error(conn, MHD_HTTP_CONTENT_TOO_LARGE, "body too large");
    return (*state = calloc(1, sizeof(struct request_body))) ? MHD_YES : MHD_NO;
  }
  struct request_body *body = *state;
  if (*upload_size) {
    if (body->len + *upload_size > ADMIN_MAX_BODY)
      return http_edge_refuse_body(conn, "application/json", "{\"error\": \"body too large\"}");
    char *more = realloc(body->data, body->len + *upload_size + 1);
    if (!more)
      return MHD_NO;
    memcpy(more + body->len, upload, *upload_size);
    body->data = more;
    body->len += *upload_size;
    body->data[body->len] = 0;
    *upload_size = 0;
    return MHD_YES;
  }
  http_edge_guard_received(conn);
  bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0,
       del = strcmp(method, "DELETE") == 0;
  static const char queues_prefix[] = "/api/queues/", connectors_prefix[] = "/api/connectors/",
                    messages_prefix[] = "/api/messages/";
  struct connector *target;
  if (post && strcmp(url, "/api/login") == 0) {
    /* The token, once, for a session cookie the page's requests carry. */
    if (!by_token)
      return reply_error(conn, MHD_HTTP_BAD_REQUEST, "log in with the token: Authorization: Bearer TOKEN");
    char id[ADMIN_SESSION_HEX], set[256];
    admin_session_new(a->sessions, now_s, id, csrf, &session_ends);
    admin_session_cookie(set, sizeof set, id, ADMIN_SESSION_TTL_S, a->tls != NULL);
    LOGI(a->core->log, "admin API: a console session for %s", peer);
    json_t *j = json_pack("{s:s, s:o}", "csrf", csrf, "expires", json_time_ms(session_ends * 1000));
    char *text_out = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
    json_decref(j);
    return reply_cookie(conn, MHD_HTTP_OK, "application/json", text_out, set);
  }
  if (get && strcmp(url, "/api/session") == 0) {
    if (!by_session)
      return reply_json(conn, MHD_HTTP_OK, json_pack("{s:b}", "session", 0));
    return reply_json(conn, MHD_HTTP_OK, json_pack("{s:b, s:s, s:o}", "session", 1, "csrf", csrf, "expires",
                                                   json_time_ms(session_ends * 1000)));
  }
  if (post && strcmp(url, "/api/logout") == 0) {
    char set[256];
    admin_session_end(a->sessions, cookie);
    admin_session_cookie(set, sizeof set, NULL, 0, a->tls != NULL);
    return reply_cookie(conn, MHD_HTTP_OK, "application/json", strdup("{\"session\": false}"), set);
  }
  if (get && strcmp(url, "/api/status") == 0)
    return reply_json(conn, MHD_HTTP_OK, status_json(a));
  if (get && strcmp(url, "/api/connectors") == 0)
    return reply_json(conn, MHD_HTTP_OK, connectors_json(a));
  if (get && strcmp(url, "/api/queues") == 0)
    return reply_json(conn, MHD_HTTP_OK, queues_json(a));
  if (get && strcmp(url, "/api/dlr") == 0)
    return reply_json(conn, MHD_HTTP_OK, dlr_json(c));
  if (get && strcmp(url, "/api/history") == 0) {
    json_t *answer = NULL;
    unsigned status = admin_history_request(c, MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "series"),
                                            MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "since"),
                                            MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "step"),
                                            &answer);
    return reply_json(conn, status, answer);
  }
  static const char accounts_path[] = "/api/accounts";
  if (starts_with(url, accounts_path) && (!url[sizeof accounts_path - 1] || url[sizeof accounts_path - 1] == '/')) {
    json_t *answer = NULL;
    unsigned status = account_admin_request(c, method, url + sizeof accounts_path - 1, body->data, body->len,
                                            &answer);
    return reply_json(conn, status, answer);
  }
  if (get && strcmp(url, "/metrics") == 0) {
    char *text = metrics_text(a);
    return text ? reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4", text)
                : reply_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
  }
  if (post && strcmp(url, "/api/reload") == 0)
    return reload_reply(conn, a);
  if (get && starts_with(url, queues_prefix)) {
    target = url_connector(c, url, queues_prefix, "/messages");
    return target ? queue_listing_reply(conn, c, target) : reply_error(conn, MHD_HTTP_NOT_FOUND, "no such queue");
  }
  if (post && (target = url_connector(c, url, connectors_prefix, "/drain"))) {
    size_t moved, stayed;
    if (connector_drain(target, &moved, &stayed) == -1)
      return reply_error(conn, MHD_HTTP_CONFLICT,
                         "a server connector's queues belong to its accounts: only a client connector drains");
    return reply_json(conn, MHD_HTTP_OK, json_pack("{s:s, s:I, s:I}", "connector", connector_config(target)->name,
                                                   "moved", (json_int_t)moved, "stayed", (json_int_t)stayed));
  }
  if (post && starts_with(url, connectors_prefix)) {
    bool pause = (target = url_connector(c, url, connectors_prefix, "/pause")) != NULL;
    if (!pause && !(target = url_connector(c, url, connectors_prefix, "/resume")))
      return reply_error(conn, MHD_HTTP_NOT_FOUND, "no such connector or action");
    connector_pause(target, pause);
    return reply_json(conn, MHD_HTTP_OK, json_pack("{s:s, s:b}", "connector", connector_config(target)->name,
                                                   "paused", pause));
  }
  if (get && strcmp(url, "/api/messages") == 0) {
    json_t *answer = NULL;
    unsigned status = admin_message_search(c, MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "smsc_id"),
                                           MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "to"),
                                           MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "q"), &answer);
    return reply_json(conn, status, answer);
  }
  if ((get || del) && starts_with(url, messages_prefix)) {
    uint64_t id;
    if (parse_msg_id(url + sizeof messages_prefix - 1, &id) == -1)
      return reply_error(conn, MHD_HTTP_BAD_REQUEST, "a message id is a decimal number, or hex after 0x");
    json_t *answer = NULL;
    unsigned status = get ? admin_message_get(c, id, &answer) : admin_message_drop(c, id, &answer);
    return reply_json(conn, status, answer);
  }
  return reply_error(conn, MHD_HTTP_NOT_FOUND, "no such resource");
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **state,
                         enum MHD_RequestTerminationCode toe)
{
  http_edge_guard_completed(conn);
  struct request_body *body = *state;
  if (body)
    free(body->data);
  free(body);
  *state = NULL;
}

struct admin *admin_start(struct core *core, const char *listen, const char *token, const struct config_tls *tls,
                          admin_reload_fn reload, void *reload_ctx, char *err, size_t err_len)
{
  struct sockaddr_storage addr;
  socklen_t addr_len;
  if (net_parse_addr(listen, &addr, &addr_len, err, err_len) == -1)
    return NULL;
  struct admin *a = calloc(1, sizeof *a);
  if (!a) {
    snprintf(err, err_len, "out of memory");
    return NULL;
  }
  a->core = core;
  a->reload = reload;
  a->reload_ctx = reload_ctx;
  snprintf(a->token, sizeof a->token, "%s", token);
  a->token_len = strlen(a->token);
  char why[HTTP_TLS_ERR_LEN];
  if (tls->enabled && !(a->tls = http_tls_create(tls->cert, tls->key, tls->min_version, why, sizeof why))) {
    snprintf(err, err_len, "tls: %.240s", why);
    free(a);
    return NULL;
  }
  const struct config *cfg = core->cfg;
  if (!(a->guard = http_edge_guard_create(ADMIN_REQUEST_TIMEOUT_S)) ||
      !(a->sessions = admin_sessions_create(ADMIN_SESSIONS_MAX, ADMIN_SESSION_TTL_S)) ||
      !(a->auth = auth_guard_create(cfg->auth_max_failures, cfg->auth_failure_window_s, cfg->auth_block_s,
                                    log_category("emg.auth")))) {
    snprintf(err, err_len, "out of memory");
    admin_sessions_destroy(a->sessions);
    http_edge_guard_destroy(a->guard);
    http_tls_destroy(a->tls);
    free(a);
    return NULL;
  }
  /* epoll, not select: a descriptor past FD_SETSIZE would not do. */
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG | http_tls_flags(a->tls);
  if (addr.ss_family == AF_INET6)
    flags |= MHD_USE_IPv6;
  http_tls_starting();
  a->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, a, MHD_OPTION_SOCK_ADDR,
                               (struct sockaddr *)&addr, MHD_OPTION_CONNECTION_TIMEOUT,
                               (unsigned)30, MHD_OPTION_CONNECTION_LIMIT, (unsigned)FD_BUDGET_ADMIN,
                               MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                               (unsigned)ADMIN_CONNECTIONS_PER_IP, MHD_OPTION_NOTIFY_CONNECTION,
                               http_edge_guard_notify, a->guard, MHD_OPTION_NOTIFY_COMPLETED,
                               on_completed, NULL, MHD_OPTION_ARRAY, http_tls_options(a->tls), MHD_OPTION_END);
  http_tls_attach(a->tls, a->daemon);
  if (!a->daemon) {
    snprintf(err, err_len, "cannot listen on %s for the admin API", listen);
    admin_sessions_destroy(a->sessions);
    auth_guard_destroy(a->auth);
    http_edge_guard_destroy(a->guard);
    http_tls_destroy(a->tls);
    free(a);
    return NULL;
  }
  return a;
}

int admin_tls_reload(struct admin *a, const struct config_tls *next, char *err, size_t err_len)
{
  char why[HTTP_TLS_ERR_LEN];
  if (!a || !a->tls || !next->enabled)
    return 0;
  if (http_tls_reload(a->tls, next->cert, next->key, why, sizeof why) < 0) {
    snprintf(err, err_len, "admin: tls: %s", why);
    return -1;
  }
  return 0;
}

void admin_stop(struct admin *a)
{
  if (!a)
    return;
  http_tls_detach(a->tls);
  MHD_stop_daemon(a->daemon);
  http_tls_destroy(a->tls);
  http_edge_guard_destroy(a->guard);
  admin_sessions_destroy(a->sessions);
  auth_guard_destroy(a->auth);
  free(a);
}
