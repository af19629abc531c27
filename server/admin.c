/* admin.c - the admin HTTP API: GET /api/status, /api/connectors, /metrics. */
#include <inttypes.h>
#include <stdint.h>
#include <jansson.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "admin.h"
#include "connector.h"
#include "netutil.h"

/* The status page (server/www/status.html, embedded at build time). */
extern const unsigned char status_html[];
extern const unsigned long status_html_len;

struct admin {
  struct core *core;
  admin_reload_fn reload;
  void *reload_ctx;
  struct MHD_Daemon *daemon;
  char token[160];
  size_t token_len;
};

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

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type,
                             char *body)
{
  struct MHD_Response *r =
    MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
  MHD_add_response_header(r, "Content-Type", type);
  if (status == MHD_HTTP_UNAUTHORIZED)
    MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
  enum MHD_Result rc = MHD_queue_response(conn, status, r);
  MHD_destroy_response(r);
  return rc;
}

static enum MHD_Result reply_json(struct MHD_Connection *conn, unsigned status, json_t *j)
{
  char *body = json_dumps(j, JSON_INDENT(2));
  json_decref(j);
  return reply(conn, status, "application/json", body ? body : strdup("{}"));
}

static enum MHD_Result reply_error(struct MHD_Connection *conn, unsigned status, const char *what)
{
  return reply_json(conn, status, json_pack("{s:s}", "error", what));
}

#define STAT(c, name) ((json_int_t)atomic_load(&(c)->stats.name))

static json_t *status_json(struct admin *a)
{
  struct core *c = a->core;
  struct dlr_stats ds;
  dlrtab_stats(c->dlr, &ds);
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
    "{s:s, s:I, s:i, s:b, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I},"
    " s:o, s:{s:I, s:I, s:I}, s:{s:I, s:I, s:I, s:I}}",
    "version", EMGD_VERSION, "uptime_s", (json_int_t)(time(NULL) - c->started), "node_id",
    (int)c->cfg->node_id, "persist", c->cfg->persist,
    "totals", "received", STAT(c, received), "sent", STAT(c, sent), "failed", STAT(c, failed),
    "expired", STAT(c, expired), "retried", STAT(c, retried), "refused_queue_full",
    STAT(c, refused_full), "refused_connector_queue_full", STAT(c, refused_connector_full),
    "refused_no_route", STAT(c, refused_route), "receipts_in", STAT(c, receipts_in),
    "receipts_out", STAT(c, receipts_out), "receipts_unmatched", STAT(c, receipts_unmatched),
    "mo_in", STAT(c, mo_in),
    "rates", rates,
    "queue", "in_flight", (json_int_t)atomic_load(&c->in_flight), "soft_limit",
    (json_int_t)c->cfg->max_total_queue_soft, "hard_limit", (json_int_t)c->cfg->max_total_queue,
    "dlr", "used", (json_int_t)ds.used, "size", (json_int_t)ds.size, "evicted",
    (json_int_t)ds.evicted, "expired", (json_int_t)ds.expired);
}

static json_t *connectors_json(struct admin *a)
{
  struct core *c = a->core;
  json_t *list = json_array();
  for (unsigned i = 0; i < c->n_connectors; i++) {
    struct connector *conn = core_connector(c, i);
    const struct config_connector *cfg = connector_config(conn);
    json_array_append_new(
      list, json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I}", "name", cfg->name, "protocol",
                      cfg->proto->name, "mode", cfg->mode == CONFIG_CONN_SERVER ? "server" : "client",
                      "address", cfg->mode == CONFIG_CONN_SERVER ? cfg->listen : cfg->connect,
                      "instances", (json_int_t)cfg->instances, "bound",
                      (json_int_t)connector_bound(conn), "window", (json_int_t)cfg->window,
                      "queued", (json_int_t)connector_queued(conn)));
  }
  return json_pack("{s:o}", "connectors", list);
}

/* Prometheus text format: counters end in _total, gauges do not. */
static char *metrics_text(struct admin *a)
{
  struct core *c = a->core;
  struct dlr_stats ds;
  dlrtab_stats(c->dlr, &ds);
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  if (!f)
    return NULL;
  static const struct { const char *name, *help; size_t offset; } counters[] = {
#define COUNTER(n, h) { #n, h, offsetof(struct core_stats, n) }
    COUNTER(received, "Messages accepted from clients and SMSCs."),
    COUNTER(sent, "Messages accepted by their destination."),
    COUNTER(failed, "Messages refused for good by their destination."),
    COUNTER(expired, "Messages whose validity passed before they could be sent."),
    COUNTER(retried, "Sends repeated after a temporary error or a lost connection."),
    COUNTER(refused_full, "Submits refused because max_total_queue was reached."),
    COUNTER(refused_connector_full, "Submits refused because the target connector's queue was full."),
    COUNTER(refused_route, "Submits refused for want of a route."),
    COUNTER(receipts_in, "Delivery receipts received from SMSCs."),
    COUNTER(receipts_out, "Delivery receipts delivered to clients."),
    COUNTER(receipts_unmatched, "Receipts that matched no message."),
    COUNTER(mo_in, "MO messages received from SMSCs."),
    COUNTER(binds_refused, "Binds refused for a wrong account or password."),
    COUNTER(sessions_refused, "Connections beyond a server connector's instances."),
#undef COUNTER
  };
  for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++) {
    const _Atomic uint64_t *v = (const _Atomic uint64_t *)((const char *)&c->stats + counters[i].offset);
    fprintf(f, "# HELP emg_%s_total %s\n# TYPE emg_%s_total counter\nemg_%s_total %" PRIu64 "\n",
            counters[i].name, counters[i].help, counters[i].name, counters[i].name, atomic_load(v));
  }
  fprintf(f, "# HELP emg_in_flight Messages accepted and not yet sent or failed.\n"
             "# TYPE emg_in_flight gauge\nemg_in_flight %" PRIu64 "\n",
          atomic_load(&c->in_flight));
  fprintf(f, "# HELP emg_dlr_entries Open entries of the DLR table.\n"
             "# TYPE emg_dlr_entries gauge\nemg_dlr_entries %zu\n", ds.used);
  fprintf(f, "# HELP emg_connector_bound Bound sessions per connector.\n# TYPE emg_connector_bound gauge\n");
  for (unsigned i = 0; i < c->n_connectors; i++)
    fprintf(f, "emg_connector_bound{connector=\"%s\"} %u\n",
            connector_config(core_connector(c, i))->name, connector_bound(core_connector(c, i)));
  fprintf(f, "# HELP emg_connector_queued Messages and receipts waiting per connector.\n"
             "# TYPE emg_connector_queued gauge\n");
  for (unsigned i = 0; i < c->n_connectors; i++)
    fprintf(f, "emg_connector_queued{connector=\"%s\"} %zu\n",
            connector_config(core_connector(c, i))->name, connector_queued(core_connector(c, i)));
  fclose(f);
  return out;
}

static struct connector *connector_named(struct core *c, const char *name, size_t len)
{
  for (unsigned i = 0; i < c->n_connectors; i++) {
    const char *n = connector_config(core_connector(c, i))->name;
    if (strlen(n) == len && strncmp(n, name, len) == 0)
      return core_connector(c, i);
  }
  return NULL;
}

static json_t *queues_json(struct admin *a)
{
  struct core *c = a->core;
  json_t *list = json_array();
  json_int_t total = 0;
  for (unsigned i = 0; i < c->n_connectors; i++) {
    struct connector *conn = core_connector(c, i);
    size_t n = connector_queued(conn);
    total += (json_int_t)n;
    json_array_append_new(list, json_pack("{s:s, s:I, s:b}", "connector", connector_config(conn)->name,
                                          "queued", (json_int_t)n, "paused", connector_paused(conn)));
  }
  return json_pack("{s:o, s:I, s:I, s:I}", "queues", list, "total", total, "soft_limit",
                   (json_int_t)c->cfg->max_total_queue_soft, "hard_limit",
                   (json_int_t)c->cfg->max_total_queue);
}

struct listing {
  json_t *list;
  int64_t now_ms;
};

static void list_item(const struct qitem *it, void *arg)
{
  struct listing *l = arg;
  if (it->kind == QITEM_MSG)
    json_array_append_new(l->list, json_pack("{s:s, s:I, s:s, s:s, s:I, s:i, s:s}", "kind", "message",
      "id", (json_int_t)it->msg->id, "from", it->msg->src.addr, "to", it->msg->dst.addr,
      "age_ms", (json_int_t)(l->now_ms - it->msg->received_ms), "attempts", (int)it->attempts,
      "origin", it->msg->origin.ref));
  else
    json_array_append_new(l->list, json_pack("{s:s, s:s, s:i, s:i}", "kind", "receipt", "id",
      it->receipt.id, "state", (int)it->receipt.state, "attempts", (int)it->attempts));
}

/* What waits in a connector's queues, offset and limit over all of them
 * in order. Each queue is walked under its own lock for only that span. */
static json_t *queue_messages_json(struct connector *conn, size_t offset, size_t limit)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct listing l = { json_array(), (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 };
  size_t total = 0;
  for (unsigned i = 0; i < connector_queue_count(conn); i++) {
    size_t before = json_array_size(l.list);
    size_t n = queue_walk(connector_queue(conn, i), offset, limit, list_item, &l);
    size_t listed = json_array_size(l.list) - before;
    offset = offset > n ? offset - n : 0;
    limit -= listed;
    total += n;
  }
  return json_pack("{s:s, s:I, s:o}", "connector", connector_config(conn)->name, "queued",
                   (json_int_t)total, "messages", l.list);
}

static size_t query_size(struct MHD_Connection *conn, const char *key, size_t fallback, size_t max)
{
  const char *v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, key);
  char *end;
  unsigned long long n = v ? strtoull(v, &end, 10) : fallback;
  if (!v || *end || v[0] == '-')
    n = fallback;
  return n > max ? max : (size_t)n;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **state)
{
  struct admin *a = cls;
  /* The page holds no data: it asks the API for it, with the token. */
  if (strcmp(method, "GET") == 0 && strcmp(url, "/") == 0)
    return reply(conn, MHD_HTTP_OK, "text/html; charset=utf-8",
                 strndup((const char *)status_html, status_html_len));
  if (!token_matches(a, MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization")))
    return reply_error(conn, MHD_HTTP_UNAUTHORIZED, "missing or wrong bearer token");
  /* Requests have no body here; the first call only announces them. */
  if (!*state) {
    *state = a;
    return MHD_YES;
  }
  if (*upload_size) {
    *upload_size = 0;
    return MHD_YES;
  }
  bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
  static const char connectors_prefix[] = "/api/connectors/", queues_prefix[] = "/api/queues/",
                    messages_prefix[] = "/api/messages/";
  if (get && strcmp(url, "/api/status") == 0)
    return reply_json(conn, MHD_HTTP_OK, status_json(a));
  if (get && strcmp(url, "/api/connectors") == 0)
    return reply_json(conn, MHD_HTTP_OK, connectors_json(a));
  if (get && strcmp(url, "/api/queues") == 0)
    return reply_json(conn, MHD_HTTP_OK, queues_json(a));
  if (get && strcmp(url, "/metrics") == 0) {
    char *text = metrics_text(a);
    return text ? reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4", text)
                : reply_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
  }
  if (post && strcmp(url, "/api/reload") == 0) {
    char why[512] = "";
    if (!a->reload || a->reload(a->reload_ctx, why, sizeof why) == -1)
      return reply_json(conn, MHD_HTTP_CONFLICT, json_pack("{s:b, s:s}", "reloaded", 0, "error", why));
    return reply_json(conn, MHD_HTTP_OK, json_pack("{s:b}", "reloaded", 1));
  }
  if (strncmp(url, queues_prefix, sizeof queues_prefix - 1) == 0 && get) {
    const char *name = url + sizeof queues_prefix - 1, *slash = strchr(name, '/');
    struct connector *c = slash && strcmp(slash, "/messages") == 0
                            ? connector_named(a->core, name, (size_t)(slash - name)) : NULL;
    if (!c)
      return reply_error(conn, MHD_HTTP_NOT_FOUND, "no such queue");
    return reply_json(conn, MHD_HTTP_OK,
                      queue_messages_json(c, query_size(conn, "offset", 0, SIZE_MAX / 2),
                                          query_size(conn, "limit", 100, 10000)));
  }
  if (strncmp(url, connectors_prefix, sizeof connectors_prefix - 1) == 0 && post) {
    const char *name = url + sizeof connectors_prefix - 1, *slash = strchr(name, '/');
    struct connector *c = slash ? connector_named(a->core, name, (size_t)(slash - name)) : NULL;
    bool pause = slash && strcmp(slash, "/pause") == 0, resume = slash && strcmp(slash, "/resume") == 0;
    if (!c || (!pause && !resume))
      return reply_error(conn, MHD_HTTP_NOT_FOUND, "no such connector or action");
    connector_pause(c, pause);
    return reply_json(conn, MHD_HTTP_OK, json_pack("{s:s, s:b}", "connector", connector_config(c)->name,
                                                   "paused", pause));
  }
  if (strncmp(url, messages_prefix, sizeof messages_prefix - 1) == 0 &&
      strcmp(method, "DELETE") == 0) {
    char *end;
    const char *text = url + sizeof messages_prefix - 1;
    unsigned long long id = strtoull(text, &end, 10);
    if (*text == 0 || *end)
      return reply_error(conn, MHD_HTTP_BAD_REQUEST, "a message id is a decimal number");
    for (unsigned i = 0; i < a->core->n_connectors; i++)
      if (connector_drop_message(core_connector(a->core, i), id))
        return reply_json(conn, MHD_HTTP_OK, json_pack("{s:I, s:b}", "id", (json_int_t)id, "dropped", 1));
    return reply_error(conn, MHD_HTTP_NOT_FOUND, "not in any queue (in a window, sent, or unknown)");
  }
  return reply_error(conn, MHD_HTTP_NOT_FOUND, "no such resource");
}

struct admin *admin_start(struct core *core, const char *listen, const char *token,
                          admin_reload_fn reload, void *reload_ctx, char *err)
{
  struct sockaddr_storage addr;
  socklen_t addr_len;
  if (net_parse_addr(listen, &addr, &addr_len, err) == -1)
    return NULL;
  struct admin *a = calloc(1, sizeof *a);
  if (!a) {
    snprintf(err, NETUTIL_ERR_LEN, "out of memory");
    return NULL;
  }
  a->core = core;
  a->reload = reload;
  a->reload_ctx = reload_ctx;
  snprintf(a->token, sizeof a->token, "%s", token);
  a->token_len = strlen(a->token);
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  if (addr.ss_family == AF_INET6)
    flags |= MHD_USE_IPv6;
  a->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, a, MHD_OPTION_SOCK_ADDR,
                               (struct sockaddr *)&addr, MHD_OPTION_CONNECTION_TIMEOUT,
                               (unsigned)30, MHD_OPTION_END);
  if (!a->daemon) {
    snprintf(err, NETUTIL_ERR_LEN, "cannot listen on %s for the admin API", listen);
    free(a);
    return NULL;
  }
  return a;
}

void admin_stop(struct admin *a)
{
  if (!a)
    return;
  MHD_stop_daemon(a->daemon);
  free(a);
}
