/* http_server.c - routes, authentication, parsing and answers of the HTTP
 * connector's incoming side, on http_listen.
 *
 * A request's life, all in the loop's thread: http_listen hands it whole;
 * it is routed, authenticated and parsed into a batch; every message is
 * submitted; the answer goes when the last of them is completed (at once
 * when the gateway answered inside submit). The request holds one share
 * per completion due plus one while it is being submitted; whoever drops
 * the last answers and frees it. A completion that comes after the
 * connection went answers into nothing.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <openssl/evp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "clock.h"
#include "http_listen.h"
#include "http_server.h"
#include "netutil.h"

#define ROUTE_JSON_PATH "/api/v1/messages"
#define ROUTE_KANNEL_PATH "/cgi-bin/sendsms"
#define DEFAULT_MAX_BODY (1024 * 1024)
#define KANNEL_PARAMS_MAX 64
#define PASSWORD_MAX 256
#define KANNEL_TEMPORARY "Temporal failure, try again later."
#define RETRY_AFTER "Retry-After: 1\r\n"

struct http_server_request {
  struct http_server *srv;
  struct http_pending *pending;
  enum http_server_api api;
  unsigned shares;            /* completions due, plus one while submitting */
  char user[MSG_USER_LEN];
  struct http_codec_batch *batch;
  struct http_codec_result *results;
};

struct http_server {
  struct http_listen *listen;
  struct http_server_handler h;
  struct http_codec_limits limits;
  atomic_uint_fast64_t requests, messages, accepted, refused, bad_requests, auth_failures, abandoned;
};

struct http_server_loop {
  struct http_server *srv;
  struct http_listen_loop *ll;
  void *ctx;
};

/* ---- answers ---- */

static void reply(struct http_pending *p, unsigned status, const char *type, const char *text, const char *extra)
{
  static const char oom[] = "{\"error\":\"out of memory\"}";
  if (!text) {
    status = 503;
    type = "application/json";
    text = oom;
  }
  /* Too fast, or full: when to try again (RFC 9110, 10.2.3). */
  if (!extra && (status == 429 || status == 503))
    extra = RETRY_AFTER;
  http_answer(p, status, type, text, strlen(text), extra, false);
}

/* jansson's text, freed here. */
static void reply_json(struct http_pending *p, unsigned status, char *json)
{
  reply(p, status, "application/json", json, NULL);
  free(json);
}

/* Kannel answers as text/html. */
static void reply_kannel(struct http_pending *p, unsigned status, const char *text)
{
  reply(p, status, "text/html", text, NULL);
}

static void reply_error(struct http_pending *p, enum http_server_api api, unsigned status, const char *json_text,
                        const char *kannel_text)
{
  if (api == HTTP_SERVER_KANNEL)
    reply_kannel(p, status, kannel_text);
  else
    reply_json(p, status, http_codec_json_error(json_text));
}

static void reply_unauthorized(struct http_server *s, struct http_pending *p, enum http_server_api api)
{
  atomic_fetch_add(&s->auth_failures, 1);
  if (api == HTTP_SERVER_KANNEL) {
    reply_kannel(p, HTTP_CODEC_KANNEL_AUTH_STATUS, HTTP_CODEC_KANNEL_AUTH_FAILED);
    return;
  }
  char *json = http_codec_json_error("missing or wrong credentials");
  reply(p, 401, "application/json", json, "WWW-Authenticate: Basic realm=\"emg\"\r\n");
  free(json);
}

static void request_free(struct http_server_request *r)
{
  http_codec_batch_free(r->batch);
  free(r->results);
  free(r);
}

/* The answer once every message is completed; frees r. */
static void answer(struct http_server_request *r)
{
  struct http_server *s = r->srv;
  struct http_codec_batch *b = r->batch;
  unsigned status;
  char buf[1024];
  uint64_t taken = 0;
  for (size_t i = 0; i < b->count; i++)
    taken += r->results[i].outcome == HTTP_CODEC_ACCEPTED || r->results[i].outcome == HTTP_CODEC_QUEUED;
  atomic_fetch_add(&s->accepted, taken);
  atomic_fetch_add(&s->refused, b->count - taken);
  if (r->api == HTTP_SERVER_JSON) {
    char *text = http_codec_json_answer(b, r->results, &status);
    reply_json(r->pending, status, text);
  } else {
    const char *text = http_codec_kannel_answer(b, r->results, &status, buf, sizeof buf);
    reply_kannel(r->pending, status, text);
  }
  request_free(r);
}

static void request_drop_share(struct http_server_request *r)
{
  if (--r->shares == 0)
    answer(r);
}

void http_server_complete(struct http_server_completion c, enum http_codec_outcome outcome, uint64_t id)
{
  struct http_server_request *r = c.request;
  r->results[c.index] = (struct http_codec_result){ outcome, id };
  request_drop_share(r);
}

/* ---- authentication and parameters ---- */

/* "Basic base64(user:password)" into user and password. */
static bool basic_credentials(const char *b64, char user[MSG_USER_LEN], char password[PASSWORD_MAX])
{
  unsigned char plain[MSG_USER_LEN + PASSWORD_MAX + 4];
  size_t len = strcspn(b64, " \t");
  if (!len || len % 4 || len / 4 * 3 >= sizeof plain)
    return false;
  int n = EVP_DecodeBlock(plain, (const unsigned char *)b64, (int)len);
  if (n < 0)
    return false;
  n -= (b64[len - 1] == '=') + (b64[len - 2] == '=');
  plain[n] = 0;
  char *colon = memchr(plain, ':', (size_t)n);
  if (!colon || memchr(plain, 0, (size_t)n) || (size_t)(colon - (char *)plain) >= MSG_USER_LEN ||
      strlen(colon + 1) >= PASSWORD_MAX)
    return false;
  *colon = 0;
  strcpy(user, (char *)plain);
  strcpy(password, colon + 1);
  memset(plain, 0, sizeof plain);
  return true;
}

/* HTTP Basic, or "Bearer user:password". */
static bool json_authenticate(struct http_server_loop *sl, const struct http_request *rq, char user[MSG_USER_LEN])
{
  const char *auth = http_request_header(rq, "Authorization");
  char password[PASSWORD_MAX];
  bool ok;
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
  } else if (strncasecmp(auth, "Basic ", 6) == 0) {
    const char *b64 = auth + 6;
    while (*b64 == ' ')
      b64++;
    if (!basic_credentials(b64, user, password))
      return false;
  } else {
    return false;
  }
  ok = sl->srv->h.check_user(sl->ctx, rq->peer, user, password) == 0;
  memset(password, 0, sizeof password);
  return ok;
}

struct param_list {
  struct http_codec_param p[KANNEL_PARAMS_MAX];
  size_t n;
  bool coding_given;
};

static int add_param(struct param_list *l, const char *name, const char *value, size_t len)
{
  if (l->n == KANNEL_PARAMS_MAX)
    return -1;
  l->coding_given |= strcmp(name, "coding") == 0;
  l->p[l->n++] = (struct http_codec_param){ name, value, len };
  return 0;
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

/* Form-encoded parameters from text (decoded in place). */
static int add_form(struct param_list *l, char *text, size_t len)
{
  int n = http_codec_form_parse(text, len, l->p + l->n, KANNEL_PARAMS_MAX - l->n);
  if (n < 0)
    return -1;
  for (int i = 0; i < n; i++)
    l->coding_given |= strcmp(l->p[l->n + (size_t)i].name, "coding") == 0;
  l->n += (size_t)n;
  return 0;
}

/* Kannel's parameters, from wherever this request carries them (the query,
 * a form body, or X-Kannel-* headers around a text body). Returns 0, or
 * the HTTP status to refuse it with and *why. */
static unsigned kannel_params(const struct http_request *rq, bool is_get, struct param_list *l, char *charset,
                              size_t charset_cap, const char **why)
{
  char type[64];
  content_type(http_request_header(rq, "Content-Type"), type, sizeof type, charset, charset_cap);
  *why = "Too many parameters, rejected";
  /* The query and the body stay the listener's during the request: decoded in place. */
  if (add_form(l, (char *)rq->query, strlen(rq->query)) == -1 || l->n == KANNEL_PARAMS_MAX)
    return 400;
  if (is_get)
    return 0;
  if (strcasecmp(type, "application/x-www-form-urlencoded") == 0)
    return add_form(l, (char *)rq->body, rq->body_len) == -1 ? 400 : 0;
  bool octets = strcasecmp(type, "application/octet-stream") == 0;
  if (!octets && strcasecmp(type, "text/plain") != 0) {
    *why = "Invalid content-type";
    return 400;
  }
  for (unsigned i = 0; i < rq->n_headers; i++) {
    const char *name = http_codec_kannel_header_param(rq->headers[i].name);
    if (name && add_param(l, name, rq->headers[i].value, strlen(rq->headers[i].value)) == -1)
      return 400;
  }
  if (l->n + 3 > KANNEL_PARAMS_MAX)
    return 400;
  add_param(l, "text", (const char *)rq->body, rq->body_len);
  if (charset[0])
    add_param(l, "charset", charset, strlen(charset));
  if (octets && !l->coding_given)
    add_param(l, "coding", "1", 1);
  return 0;
}

/* Parses a request into r->batch. Returns true when there is something to
 * submit; otherwise it was answered. */
static bool parse(struct http_server_loop *sl, struct http_server_request *r, const struct http_request *rq,
                  bool is_get)
{
  struct http_server *s = sl->srv;
  int rc;
  if (r->api == HTTP_SERVER_JSON) {
    rc = http_codec_json_parse(&r->batch, (const char *)rq->body, rq->body_len, &s->limits);
    if (rc == HTTP_CODEC_E_NOMEM) {
      reply_json(r->pending, 503, http_codec_json_error("out of memory"));
      return false;
    }
    if (rc < 0) {
      atomic_fetch_add(&s->bad_requests, 1);
      reply_json(r->pending, rc == HTTP_CODEC_E_TOO_LARGE ? 413 : 400, http_codec_json_faults(r->batch));
      return false;
    }
  } else {
    struct param_list l = { .n = 0 };
    char charset[40], password[MSG_USER_LEN];
    const char *why;
    unsigned status = kannel_params(rq, is_get, &l, charset, sizeof charset, &why);
    if (status) {
      atomic_fetch_add(&s->bad_requests, 1);
      reply_kannel(r->pending, status, why);
      return false;
    }
    if (http_codec_kannel_credentials(l.p, l.n, r->user, password) != 0 ||
        s->h.check_user(sl->ctx, rq->peer, r->user, password) != 0) {
      memset(password, 0, sizeof password);
      reply_unauthorized(s, r->pending, r->api);
      return false;
    }
    memset(password, 0, sizeof password);
    rc = http_codec_kannel_parse(&r->batch, l.p, l.n, &s->limits);
    if (rc == HTTP_CODEC_E_NOMEM) {
      reply_kannel(r->pending, 503, KANNEL_TEMPORARY);
      return false;
    }
    if (rc < 0) {
      atomic_fetch_add(&s->bad_requests, 1);
      reply_kannel(r->pending, r->batch->kannel_status, r->batch->kannel_answer);
      return false;
    }
  }
  if (!(r->results = calloc(r->batch->count, sizeof *r->results))) {
    reply_error(r->pending, r->api, 503, "out of memory", KANNEL_TEMPORARY);
    return false;
  }
  return true;
}

/* Hands every message to the gateway; the last share dropped answers. */
static void submit_all(struct http_server_loop *sl, struct http_server_request *r)
{
  struct http_server *s = sl->srv;
  struct http_codec_batch *b = r->batch;
  r->shares = (unsigned)b->count + 1;
  atomic_fetch_add(&s->messages, b->count);
  for (size_t i = 0; i < b->count; i++) {
    struct http_codec_submit *it = &b->items[i];
    struct http_server_message m = { r->api, r->user, &it->msg, it->dlr_method, it->dlr_url, b };
    snprintf(it->msg.origin.user, sizeof it->msg.origin.user, "%s", r->user);
    s->h.submit(sl->ctx, &m, (struct http_server_completion){ r, (unsigned)i });
  }
  if (s->h.flush)
    s->h.flush(sl->ctx);
  request_drop_share(r);
}

/* ---- the listener's handler ---- */

static void on_request(void *ctx, const struct http_request *rq, struct http_pending *p)
{
  struct http_server_loop *sl = ctx;
  struct http_server *s = sl->srv;
  enum http_server_api api;
  bool is_get = strcmp(rq->method, "GET") == 0;
  bool is_post = strcmp(rq->method, "POST") == 0;
  char user[MSG_USER_LEN];
  if (strcmp(rq->path, ROUTE_JSON_PATH) == 0) {
    api = HTTP_SERVER_JSON;
    if (!is_post) {
      char *json = http_codec_json_error("use POST");
      reply(p, 405, "application/json", json, "Allow: POST\r\n");
      free(json);
      return;
    }
  } else if (strcmp(rq->path, ROUTE_KANNEL_PATH) == 0) {
    api = HTTP_SERVER_KANNEL;
    if (!is_get && !is_post) {
      reply(p, 405, "text/html", "Use GET or POST", "Allow: GET, POST\r\n");
      return;
    }
  } else {
    reply_json(p, 404, http_codec_json_error("no such resource"));
    return;
  }
  atomic_fetch_add(&s->requests, 1);
  if (api == HTTP_SERVER_JSON && !json_authenticate(sl, rq, user)) {
    reply_unauthorized(s, p, api);
    return;
  }
  struct http_server_request *r = calloc(1, sizeof *r);
  if (!r) {
    reply_error(p, api, 503, "out of memory", KANNEL_TEMPORARY);
    return;
  }
  r->srv = s;
  r->pending = p;
  r->api = api;
  if (api == HTTP_SERVER_JSON)
    memcpy(r->user, user, sizeof user);
  if (!parse(sl, r, rq, is_get)) {
    request_free(r);
    return;
  }
  submit_all(sl, r);
}

/* The listener's own refusals, in the words of the route asked for. */
static void on_refuse(void *ctx, struct http_refusal *rf)
{
  struct http_server *s = ((struct http_server_loop *)ctx)->srv;
  bool kannel = strcmp(rf->path, ROUTE_KANNEL_PATH) == 0;
  if (rf->status != 503)
    atomic_fetch_add(&s->bad_requests, 1);
  else
    atomic_fetch_add(&s->abandoned, 1);
  bool ambiguous = rf->status == 400 && strcmp(rf->reason, "ambiguous request length") == 0;
  rf->content_type = kannel ? "text/html" : "application/json";
  if (rf->status == 413)
    rf->body = kannel ? "Request entity too large, rejected" : "{\"error\":\"body too large\"}";
  else if (rf->status == 503)
    rf->body = kannel ? KANNEL_TEMPORARY : "{\"error\":\"shutting down, retry later\"}";
  else if (ambiguous)
    rf->body = kannel ? "Ambiguous request length, rejected" : "{\"error\":\"ambiguous request length\"}";
  else if (kannel)
    rf->body = "Malformed request, rejected";
  else {
    snprintf(rf->buf, sizeof rf->buf, "{\"error\":\"%s\"}", rf->reason);
    rf->body = rf->buf;
  }
}

/* ---- the server ---- */

struct http_server *http_server_start(const struct http_server_config *cfg,
                                      const struct http_server_handler *h, char *err, size_t err_len)
{
  if (!h || !h->check_user || !h->submit) {
    snprintf(err, err_len, "the HTTP server needs check_user and submit");
    return NULL;
  }
  struct http_server *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, err_len, "out of memory");
    return NULL;
  }
  s->h = *h;
  s->limits = cfg->limits;
  struct http_listen_config lc = {
    .listen = cfg->listen, .connection_limit = cfg->connection_limit, .connections_per_ip = cfg->connections_per_ip,
    .idle_timeout_s = cfg->idle_timeout_s, .request_timeout_s = cfg->request_timeout_s,
    .max_body = cfg->limits.max_body ? cfg->limits.max_body : DEFAULT_MAX_BODY,
  };
  struct http_listen_handler lh = { on_request, on_refuse };
  if (!(s->listen = http_listen_create(&lc, &lh, cfg->tls, err, err_len))) {
    free(s);
    return NULL;
  }
  return s;
}

int http_server_port(const struct http_server *s)
{
  return http_listen_port(s->listen);
}

struct http_server_loop *http_server_attach(struct http_server *s, struct evloop *loop, void *ctx)
{
  struct http_server_loop *sl = calloc(1, sizeof *sl);
  if (!sl)
    return NULL;
  sl->srv = s;
  sl->ctx = ctx;
  if (!(sl->ll = http_listen_attach(s->listen, loop, sl))) {
    free(sl);
    return NULL;
  }
  return sl;
}

void http_server_set_tls(struct http_server *s, struct tls_ctx *tls)
{
  http_listen_set_tls(s->listen, tls);
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

void http_server_drain(struct http_server *s, unsigned wait_ms)
{
  uint64_t deadline = clock_now_ms() + wait_ms;
  http_listen_quiesce(s->listen);
  while (http_listen_busy(s->listen) && clock_now_ms() < deadline)
    nanosleep(&(struct timespec){ 0, 5 * 1000 * 1000 }, NULL);
}

void http_server_detach(struct http_server_loop *sl)
{
  if (!sl)
    return;
  http_listen_detach(sl->ll);
  free(sl);
}

void http_server_free(struct http_server *s)
{
  if (!s)
    return;
  http_listen_free(s->listen);
  free(s);
}
