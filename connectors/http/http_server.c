/* http_server.c - routes, authentication, bodies and suspended answers on
 * libmicrohttpd.
 *
 * A request's life: the first call of the access handler routes and (for
 * JSON) authenticates it; body chunks gather in an iobuf; the final call
 * parses, submits every message and either answers at once (every
 * completion came inside submit) or suspends the connection. The last
 * completion resumes it and the handler, called again, answers.
 *
 * Who frees a request: it holds one reference for libmicrohttpd (dropped
 * when the request completes) and one per outstanding completion, so a
 * completion that comes after the connection closed, or after the server
 * stopped, still finds it. `pending` counts the completions still due plus
 * one held by the handler until it has decided whether to suspend; the one
 * that takes it to zero resumes the connection.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "http_edge.h"
#include "http_server.h"
#include "http_tls.h"
#include "iobuf.h"
#include "netutil.h"

#define ROUTE_JSON_PATH "/api/v1/messages"
#define ROUTE_KANNEL_PATH "/cgi-bin/sendsms"
#define DEFAULT_MAX_BODY (1024 * 1024)
#define KANNEL_PARAMS_MAX 64
#define PASSWORD_MAX 256
#define KANNEL_TEMPORARY "Temporal failure, try again later."

enum phase {
  PHASE_BODY,                 /* gathering the body */
  PHASE_WAIT,                 /* submitted; suspended until the last completion */
  PHASE_DONE                  /* answered */
};

struct http_server_request {
  struct http_server *srv;
  struct MHD_Connection *conn;
  enum http_server_api api;
  bool is_get;
  bool no_memory;             /* the body could not be kept */
  enum phase phase;
  struct iobuf body;
  char user[MSG_USER_LEN];
  struct http_codec_batch *batch;
  struct http_codec_result *results;
  atomic_uint pending;
  atomic_uint refs;
  atomic_bool resumed;        /* whoever sets it resumes the connection */
  atomic_bool abandoned;      /* answered 503 by http_server_stop */
  bool linked;                /* in srv->suspended (under srv->lock) */
  struct http_server_request *prev, *next;
};

struct http_server {
  struct MHD_Daemon *daemon;
  struct http_tls *tls;            /* or NULL */
  struct http_edge_guard *guard;
  struct http_server_handler h;
  struct http_codec_limits limits;
  size_t max_body;
  int port;
  pthread_mutex_t lock;       /* guards the suspended list and stopping */
  struct http_server_request *suspended;
  bool stopping;              /* no more suspensions: MHD_stop_daemon must find none */
  int refused_marker;         /* *con_cls of a request answered before its body */
  atomic_uint_fast64_t requests, messages, accepted, refused, bad_requests, auth_failures, abandoned;
};

/* ---- requests ---- */

static void request_free(struct http_server_request *r)
{
  iobuf_destroy(&r->body);
  http_codec_batch_free(r->batch);
  free(r->results);
  free(r);
}

static void request_release(struct http_server_request *r)
{
  if (atomic_fetch_sub(&r->refs, 1) == 1)
    request_free(r);
}

static void unlink_request(struct http_server *s, struct http_server_request *r)
{
  if (!r->linked)
    return;
  if (r->prev)
    r->prev->next = r->next;
  else
    s->suspended = r->next;
  if (r->next)
    r->next->prev = r->prev;
  r->linked = false;
}

/* Resumes a suspended request, once, whoever asks first. */
static void request_wake(struct http_server_request *r)
{
  if (atomic_exchange(&r->resumed, true))
    return;
  pthread_mutex_lock(&r->srv->lock);
  unlink_request(r->srv, r);
  pthread_mutex_unlock(&r->srv->lock);
  MHD_resume_connection(r->conn);
}

void http_server_complete(struct http_server_completion c, enum http_codec_outcome outcome,
                          uint64_t id)
{
  struct http_server_request *r = c.request;
  r->results[c.index] = (struct http_codec_result){ outcome, id };
  if (atomic_fetch_sub(&r->pending, 1) == 1)
    request_wake(r);
  request_release(r);
}

/* ---- answers ---- */

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type,
                             char *text, enum MHD_ResponseMemoryMode mode, const char *header,
                             const char *header_value)
{
  static char oom[] = "{\"error\":\"out of memory\"}";
  if (!text) {
    status = MHD_HTTP_SERVICE_UNAVAILABLE;
    type = "application/json";
    text = oom;
    mode = MHD_RESPMEM_PERSISTENT;
  }
  struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(text), text, mode);
  if (!resp)
    return MHD_NO;
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  if (header)
    MHD_add_response_header(resp, header, header_value);
  /* Too fast, or full: when to try again (RFC 9110, 10.2.3). */
  if (status == MHD_HTTP_TOO_MANY_REQUESTS || status == MHD_HTTP_SERVICE_UNAVAILABLE)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
  enum MHD_Result rc = MHD_queue_response(conn, status, resp);
  MHD_destroy_response(resp);
  return rc;
}

static enum MHD_Result reply_json(struct MHD_Connection *conn, unsigned status, char *json)
{
  return reply(conn, status, "application/json", json, MHD_RESPMEM_MUST_FREE, NULL, NULL);
}

/* Kannel answers as text/html. */
static enum MHD_Result reply_kannel(struct MHD_Connection *conn, unsigned status, const char *text)
{
  return reply(conn, status, "text/html", (char *)text, MHD_RESPMEM_MUST_COPY, NULL, NULL);
}

static enum MHD_Result reply_error(struct MHD_Connection *conn, enum http_server_api api,
                                   unsigned status, const char *json_text, const char *kannel_text)
{
  if (api == HTTP_SERVER_KANNEL)
    return reply_kannel(conn, status, kannel_text);
  return reply_json(conn, status, http_codec_json_error(json_text));
}

static enum MHD_Result reply_unauthorized(struct http_server *s, struct MHD_Connection *conn,
                                          enum http_server_api api)
{
  atomic_fetch_add(&s->auth_failures, 1);
  if (api == HTTP_SERVER_KANNEL)
    return reply_kannel(conn, HTTP_CODEC_KANNEL_AUTH_STATUS, HTTP_CODEC_KANNEL_AUTH_FAILED);
  return reply(conn, MHD_HTTP_UNAUTHORIZED, "application/json",
               http_codec_json_error("missing or wrong credentials"), MHD_RESPMEM_MUST_FREE,
               MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Basic realm=\"emg\"");
}

/* The answer once every message is completed (or the server gave up). */
static enum MHD_Result answer(struct http_server *s, struct http_server_request *r)
{
  struct http_codec_batch *b = r->batch;
  unsigned status;
  char buf[1024];
  r->phase = PHASE_DONE;
  if (atomic_load(&r->pending) && atomic_load(&r->abandoned))
    return reply_error(r->conn, r->api, MHD_HTTP_SERVICE_UNAVAILABLE, "shutting down, retry later",
                       KANNEL_TEMPORARY);
  uint64_t taken = 0;
  for (size_t i = 0; i < b->count; i++)
    taken += r->results[i].outcome == HTTP_CODEC_ACCEPTED || r->results[i].outcome == HTTP_CODEC_QUEUED;
  atomic_fetch_add(&s->accepted, taken);
  atomic_fetch_add(&s->refused, b->count - taken);
  if (r->api == HTTP_SERVER_JSON) {
    char *text = http_codec_json_answer(b, r->results, &status);
    return reply_json(r->conn, status, text);
  }
  const char *text = http_codec_kannel_answer(b, r->results, &status, buf, sizeof buf);
  return reply_kannel(r->conn, status, text);
}

/* ---- authentication and parameters ---- */

/* HTTP Basic, or "Bearer user:password". */
static bool json_authenticate(struct http_server *s, struct MHD_Connection *conn, char user[MSG_USER_LEN])
{
  const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
  char password[PASSWORD_MAX];
  bool ok = false;
  if (!auth)
    return false;
  if (strncasecmp(auth, "Bearer ", 7) == 0) {
    const char *cred = auth + 7, *colon;
    while (*cred == ' ')
      cred++;
    colon = strchr(cred, ':');
    if (!colon || (size_t)(colon - cred) >= MSG_USER_LEN || strlen(colon + 1) >= sizeof password)
      return false;
    memcpy(user, cred, (size_t)(colon - cred));
    user[colon - cred] = 0;
    snprintf(password, sizeof password, "%s", colon + 1);
  } else {
    char *pass = NULL, *name = MHD_basic_auth_get_username_password(conn, &pass);
    if (name && pass && strlen(name) < MSG_USER_LEN && strlen(pass) < sizeof password) {
      strcpy(user, name);
      strcpy(password, pass);
      ok = true;
    }
    MHD_free(name);
    MHD_free(pass);
    if (!ok)
      return false;
  }
  char peer[64];
  http_edge_peer(conn, peer, sizeof peer);
  ok = s->h.check_user(s->h.ctx, peer, user, password) == 0;
  memset(password, 0, sizeof password);
  return ok;
}

struct param_list {
  struct http_codec_param p[KANNEL_PARAMS_MAX];
  size_t n;
  bool headers;               /* X-Kannel-* headers, mapped to parameter names */
  bool coding_given;
};

static enum MHD_Result collect_param(void *cls, enum MHD_ValueKind kind, const char *key,
                                     size_t key_size, const char *value, size_t value_size)
{
  struct param_list *l = cls;
  const char *name = key;
  if (l->headers && !(name = http_codec_kannel_header_param(key)))
    return MHD_YES;
  if (l->n == KANNEL_PARAMS_MAX)
    return MHD_NO;
  l->coding_given |= strcmp(name, "coding") == 0;
  l->p[l->n++] = (struct http_codec_param){ name, value ? value : "", value ? value_size : 0 };
  return MHD_YES;
}

/* "text/plain; charset=ISO-8859-1" -> type "text/plain", charset "ISO-8859-1". */
static void content_type(const char *header, char *type, size_t type_cap, char *charset, size_t charset_cap)
{
  const char *semi, *cs;
  size_t n;
  type[0] = charset[0] = 0;
  if (!header)
    return;
  semi = strchr(header, ';');
  n = semi ? (size_t)(semi - header) : strlen(header);
  while (n && header[n - 1] == ' ')
    n--;
  snprintf(type, type_cap, "%.*s", (int)n, header);
  if (semi && (cs = strcasestr(semi, "charset="))) {
    cs += 8;
    if (*cs == '"')
      cs++;
    n = strcspn(cs, "\"; ");
    snprintf(charset, charset_cap, "%.*s", (int)n, cs);
  }
}

/* Keeps a NUL after the body, as http_codec_param values need. */
static int body_terminate(struct http_server_request *r)
{
  uint8_t *end = iobuf_reserve(&r->body, 1);
  if (!end)
    return -1;
  *end = 0;
  return 0;
}

/* Kannel's parameters, from wherever this request carries them. Returns 0,
 * or the HTTP status and text to refuse it with. */
static unsigned kannel_params(struct http_server_request *r, struct param_list *l, char *charset,
                              size_t charset_cap, const char **why)
{
  char type[64];
  content_type(MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE),
               type, sizeof type, charset, charset_cap);
  *why = "Too many parameters, rejected";
  if (MHD_get_connection_values_n(r->conn, MHD_GET_ARGUMENT_KIND, collect_param, l) < 0 ||
      l->n == KANNEL_PARAMS_MAX)
    return MHD_HTTP_BAD_REQUEST;
  if (r->is_get)
    return 0;
  if (body_terminate(r) == -1) {
    *why = KANNEL_TEMPORARY;
    return MHD_HTTP_SERVICE_UNAVAILABLE;
  }
  if (strcasecmp(type, "application/x-www-form-urlencoded") == 0) {
    int n = http_codec_form_parse((char *)iobuf_head(&r->body), iobuf_len(&r->body), l->p + l->n,
                                  KANNEL_PARAMS_MAX - l->n);
    if (n < 0)
      return MHD_HTTP_BAD_REQUEST;
    l->n += (size_t)n;
    return 0;
  }
  bool octets = strcasecmp(type, "application/octet-stream") == 0;
  if (!octets && strcasecmp(type, "text/plain") != 0) {
    *why = "Invalid content-type";
    return MHD_HTTP_BAD_REQUEST;
  }
  l->headers = true;
  if (MHD_get_connection_values_n(r->conn, MHD_HEADER_KIND, collect_param, l) < 0 ||
      l->n + 3 > KANNEL_PARAMS_MAX)
    return MHD_HTTP_BAD_REQUEST;
  l->p[l->n++] = (struct http_codec_param){ "text", (const char *)iobuf_head(&r->body), iobuf_len(&r->body) };
  if (charset[0])
    l->p[l->n++] = (struct http_codec_param){ "charset", charset, strlen(charset) };
  if (octets && !l->coding_given)
    l->p[l->n++] = (struct http_codec_param){ "coding", "1", 1 };
  return 0;
}

/* Parses the request into r->batch. Returns MHD_YES with *done false when
 * there is something to submit, else the result of the answer sent. */
static enum MHD_Result parse(struct http_server *s, struct http_server_request *r, bool *done)
{
  int rc;
  *done = true;
  if (r->no_memory)
    return reply_error(r->conn, r->api, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory", KANNEL_TEMPORARY);
  if (r->api == HTTP_SERVER_JSON) {
    rc = http_codec_json_parse(&r->batch, (const char *)iobuf_head(&r->body), iobuf_len(&r->body),
                               &s->limits);
    if (rc == HTTP_CODEC_E_NOMEM)
      return reply_json(r->conn, MHD_HTTP_SERVICE_UNAVAILABLE, http_codec_json_error("out of memory"));
    if (rc < 0) {
      atomic_fetch_add(&s->bad_requests, 1);
      return reply_json(r->conn, rc == HTTP_CODEC_E_TOO_LARGE ? MHD_HTTP_CONTENT_TOO_LARGE : MHD_HTTP_BAD_REQUEST,
                        http_codec_json_faults(r->batch));
    }
  } else {
    struct param_list l = { .n = 0 };
    char charset[40], password[MSG_USER_LEN];
    const char *why;
    unsigned status = kannel_params(r, &l, charset, sizeof charset, &why);
    if (status) {
      atomic_fetch_add(&s->bad_requests, 1);
      return reply_kannel(r->conn, status, why);
    }
    char peer[64];
    http_edge_peer(r->conn, peer, sizeof peer);
    if (http_codec_kannel_credentials(l.p, l.n, r->user, password) != 0 ||
        s->h.check_user(s->h.ctx, peer, r->user, password) != 0)
      return reply_unauthorized(s, r->conn, r->api);
    memset(password, 0, sizeof password);
    rc = http_codec_kannel_parse(&r->batch, l.p, l.n, &s->limits);
    if (rc == HTTP_CODEC_E_NOMEM)
      return reply_kannel(r->conn, MHD_HTTP_SERVICE_UNAVAILABLE, KANNEL_TEMPORARY);
    if (rc < 0) {
      atomic_fetch_add(&s->bad_requests, 1);
      return reply_kannel(r->conn, r->batch->kannel_status, r->batch->kannel_answer);
    }
  }
  if (!(r->results = calloc(r->batch->count, sizeof *r->results)))
    return reply_error(r->conn, r->api, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory", KANNEL_TEMPORARY);
  *done = false;
  return MHD_YES;
}

/* Hands every message to the gateway, then answers or suspends. */
static enum MHD_Result submit_all(struct http_server *s, struct http_server_request *r)
{
  struct http_codec_batch *b = r->batch;
  atomic_store(&r->pending, (unsigned)b->count + 1);
  atomic_fetch_add(&r->refs, (unsigned)b->count);
  atomic_fetch_add(&s->messages, b->count);
  for (size_t i = 0; i < b->count; i++) {
    struct http_codec_submit *it = &b->items[i];
    struct http_server_message m = { r->api, r->user, &it->msg, it->dlr_method, it->dlr_url, b };
    snprintf(it->msg.origin.user, sizeof it->msg.origin.user, "%s", r->user);
    s->h.submit(s->h.ctx, &m, (struct http_server_completion){ r, (unsigned)i });
  }
  if (s->h.flush)
    s->h.flush(s->h.ctx);
  if (atomic_load(&r->pending) == 1) {
    /* Every completion came inside submit: answer now, no suspension. */
    atomic_store(&r->pending, 0);
    return answer(s, r);
  }
  r->phase = PHASE_WAIT;
  pthread_mutex_lock(&s->lock);
  if (s->stopping) {
    /* Too late to wait: answer 503 now; the completions still due are
     * ignored (pending keeps the handler's share, so none resumes). */
    pthread_mutex_unlock(&s->lock);
    atomic_store(&r->resumed, true);
    atomic_store(&r->abandoned, true);
    atomic_fetch_add(&s->abandoned, 1);
    return answer(s, r);
  }
  r->prev = NULL;
  r->next = s->suspended;
  if (s->suspended)
    s->suspended->prev = r;
  s->suspended = r;
  r->linked = true;
  pthread_mutex_unlock(&s->lock);
  MHD_suspend_connection(r->conn);
  if (atomic_fetch_sub(&r->pending, 1) == 1)
    request_wake(r);
  return MHD_YES;
}

/* ---- the access handler ---- */

/* The first call: route, method, size and (JSON) credentials. Returns
 * MHD_YES with *r set to go on, or the result of an answer sent now. */
static enum MHD_Result first_call(struct http_server *s, struct MHD_Connection *conn, const char *url,
                                  const char *method, struct http_server_request **out)
{
  enum http_server_api api;
  bool is_get = strcmp(method, MHD_HTTP_METHOD_GET) == 0;
  bool is_post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
  const char *length;
  char user[MSG_USER_LEN];
  *out = NULL;
  if (!http_edge_framing_ok(conn)) {
    atomic_fetch_add(&s->bad_requests, 1);
    if (strcmp(url, ROUTE_KANNEL_PATH) == 0)
      return http_edge_refuse_framing(conn, "text/html", "Ambiguous request length, rejected");
    return http_edge_refuse_framing(conn, "application/json",
                                    "{\"error\":\"ambiguous request length\"}");
  }
  if (strcmp(url, ROUTE_JSON_PATH) == 0) {
    api = HTTP_SERVER_JSON;
    if (!is_post)
      return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "application/json",
                   http_codec_json_error("use POST"), MHD_RESPMEM_MUST_FREE, MHD_HTTP_HEADER_ALLOW, "POST");
  } else if (strcmp(url, ROUTE_KANNEL_PATH) == 0) {
    api = HTTP_SERVER_KANNEL;
    if (!is_get && !is_post)
      return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/html", (char *)"Use GET or POST",
                   MHD_RESPMEM_PERSISTENT, MHD_HTTP_HEADER_ALLOW, "GET, POST");
  } else {
    return reply_json(conn, MHD_HTTP_NOT_FOUND, http_codec_json_error("no such resource"));
  }
  atomic_fetch_add(&s->requests, 1);
  if (api == HTTP_SERVER_JSON && !json_authenticate(s, conn, user))
    return reply_unauthorized(s, conn, api);
  length = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  if (length && strtoull(length, NULL, 10) > s->max_body) {
    atomic_fetch_add(&s->bad_requests, 1);
    return reply_error(conn, api, MHD_HTTP_CONTENT_TOO_LARGE, "body too large",
                       "Request entity too large, rejected");
  }
  struct http_server_request *r = calloc(1, sizeof *r);
  if (!r)
    return reply_error(conn, api, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory", KANNEL_TEMPORARY);
  r->srv = s;
  r->conn = conn;
  r->api = api;
  r->is_get = is_get;
  r->phase = PHASE_BODY;
  atomic_init(&r->refs, 1);
  iobuf_init(&r->body);
  if (api == HTTP_SERVER_JSON)
    memcpy(r->user, user, sizeof user);
  *out = r;
  return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **con_cls)
{
  struct http_server *s = cls;
  struct http_server_request *r = *con_cls;
  enum MHD_Result rc;
  bool done;
  if ((void *)r == &s->refused_marker) {
    /* Answered at the first call: what more of the body comes is dropped. */
    *upload_size = 0;
    return MHD_YES;
  }
  if (!r) {
    rc = first_call(s, conn, url, method, &r);
    *con_cls = r ? (void *)r : (void *)&s->refused_marker;
    return rc;
  }
  switch (r->phase) {
  case PHASE_BODY:
    if (*upload_size) {
      if (iobuf_len(&r->body) + *upload_size > s->max_body) {
        /* Counted as the body comes, chunked or not: no more of it is read. */
        atomic_fetch_add(&s->bad_requests, 1);
        if (r->api == HTTP_SERVER_KANNEL)
          return http_edge_refuse_body(conn, "text/html", "Request entity too large, rejected");
        return http_edge_refuse_body(conn, "application/json", "{\"error\":\"body too large\"}");
      }
      if (r->no_memory || iobuf_append(&r->body, upload_data, *upload_size) == -1)
        r->no_memory = true;
      *upload_size = 0;
      return MHD_YES;
    }
    http_edge_guard_received(conn);
    rc = parse(s, r, &done);
    return done ? rc : submit_all(s, r);
  case PHASE_WAIT:
    return answer(s, r);
  default:
    return MHD_NO;
  }
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
  struct http_server *s = cls;
  struct http_server_request *r = *con_cls;
  *con_cls = NULL;
  http_edge_guard_completed(conn);
  if (r && (void *)r != &s->refused_marker)
    request_release(r);
}

/* ---- the server ---- */

struct http_server *http_server_start(const struct http_server_config *cfg,
                                      const struct http_server_handler *h, char *err)
{
  struct sockaddr_storage addr;
  socklen_t addr_len;
  struct http_server *s;
  const union MHD_DaemonInfo *info;
  if (!h || !h->check_user || !h->submit) {
    snprintf(err, NETUTIL_ERR_LEN, "the HTTP server needs check_user and submit");
    return NULL;
  }
  if (net_parse_addr(cfg->listen, &addr, &addr_len, err) == -1)
    return NULL;
  if (!(s = calloc(1, sizeof *s))) {
    snprintf(err, NETUTIL_ERR_LEN, "out of memory");
    return NULL;
  }
  s->h = *h;
  s->limits = cfg->limits;
  s->max_body = cfg->limits.max_body ? cfg->limits.max_body : DEFAULT_MAX_BODY;
  pthread_mutex_init(&s->lock, NULL);
  if (!(s->guard = http_edge_guard_create(cfg->request_timeout_s ? cfg->request_timeout_s : 30u))) {
    snprintf(err, NETUTIL_ERR_LEN, "out of memory");
    pthread_mutex_destroy(&s->lock);
    free(s);
    return NULL;
  }
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                   http_tls_flags(cfg->tls);
  if (addr.ss_family == AF_INET6)
    flags |= MHD_USE_IPv6;
  s->tls = cfg->tls;
  http_tls_starting();
  s->daemon = MHD_start_daemon(
    flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
    MHD_OPTION_CONNECTION_TIMEOUT, cfg->idle_timeout_s ? cfg->idle_timeout_s : 30u,
    MHD_OPTION_CONNECTION_LIMIT, cfg->connection_limit ? cfg->connection_limit : 1000u,
    MHD_OPTION_PER_IP_CONNECTION_LIMIT, cfg->connections_per_ip ? cfg->connections_per_ip : 64u,
    MHD_OPTION_NOTIFY_CONNECTION, http_edge_guard_notify, s->guard,
    MHD_OPTION_THREAD_POOL_SIZE, cfg->threads > 1 ? cfg->threads : 0u,
    MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_ARRAY, http_tls_options(cfg->tls), MHD_OPTION_END);
  http_tls_attach(cfg->tls, s->daemon);
  if (!s->daemon || !(info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT))) {
    snprintf(err, NETUTIL_ERR_LEN, "cannot listen on %s for HTTP", cfg->listen);
    if (s->daemon)
      MHD_stop_daemon(s->daemon);
    http_edge_guard_destroy(s->guard);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return NULL;
  }
  s->port = info->port;
  return s;
}

int http_server_port(const struct http_server *s)
{
  return s->port;
}

void http_server_stats(struct http_server *s, struct http_server_stats *out)
{
  out->requests = atomic_load(&s->requests);
  out->messages = atomic_load(&s->messages);
  out->accepted = atomic_load(&s->accepted);
  out->refused = atomic_load(&s->refused);
  out->bad_requests = atomic_load(&s->bad_requests);
  out->auth_failures = atomic_load(&s->auth_failures);
  out->abandoned = atomic_load(&s->abandoned);
}

void http_server_stop(struct http_server *s, unsigned wait_ms)
{
  uint64_t deadline = clock_now_ms() + wait_ms;
  MHD_socket listen_fd = MHD_quiesce_daemon(s->daemon);
  for (;;) {
    pthread_mutex_lock(&s->lock);
    bool waiting = s->suspended != NULL;
    pthread_mutex_unlock(&s->lock);
    if (!waiting || clock_now_ms() >= deadline)
      break;
    nanosleep(&(struct timespec){ 0, 5 * 1000 * 1000 }, NULL);
  }
  pthread_mutex_lock(&s->lock);
  s->stopping = true;
  while (s->suspended) {
    struct http_server_request *r = s->suspended;
    unlink_request(s, r);
    atomic_store(&r->abandoned, true);
    if (!atomic_exchange(&r->resumed, true)) {
      atomic_fetch_add(&s->abandoned, 1);
      MHD_resume_connection(r->conn);
    }
  }
  pthread_mutex_unlock(&s->lock);
  http_tls_detach(s->tls);
  MHD_stop_daemon(s->daemon);
  http_edge_guard_destroy(s->guard);
  if (listen_fd != MHD_INVALID_SOCKET)
    close(listen_fd);
  pthread_mutex_destroy(&s->lock);
  free(s);
}
