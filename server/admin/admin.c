/* admin.c - the admin HTTP API's server: it listens (HTTP or HTTPS),
 * checks the bearer token or the console's session, reads a request's
 * body, and routes each request to its answer: the status page, the views
 * of status, connectors, queues and the DLR table (admin_status.c,
 * admin_queues.c), one message's history (admin_messages.c), accounts
 * (account_admin.c), the operator's actions (pause, resume, drain, drop,
 * reload) and Prometheus metrics (admin_metrics.c).
 *
 * Everything here runs in libmicrohttpd's thread. It reads atomics and the
 * snapshots other modules publish; the only locks of the message path it
 * takes are held for a bounded time (a queue listing holds a queue's lock
 * for at most QUEUE_WALK_CHUNK items at a time, see queue_walk).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "account_admin.h"
#include "admin_history.h"
#include "admin_internal.h"
#include "admin_json.h"
#include "admin_messages.h"
#include "admin_session.h"
#include "admin.h"
#include "logins.h"
#include "endpoint.h"
#include "http_edge.h"
#include "http_tls.h"
#include "netutil.h"

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
  json_t *j = admin_queue_messages_json(c, target, offset, limit);
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
    return reply_json(conn, MHD_HTTP_OK, admin_status_json(c));
  if (get && strcmp(url, "/api/connectors") == 0)
    return reply_json(conn, MHD_HTTP_OK, admin_connectors_json(c));
  if (get && strcmp(url, "/api/queues") == 0)
    return reply_json(conn, MHD_HTTP_OK, admin_queues_json(c));
  if (get && strcmp(url, "/api/dlr") == 0)
    return reply_json(conn, MHD_HTTP_OK, admin_dlr_json(c));
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
    char *text = admin_metrics_text(c);
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
