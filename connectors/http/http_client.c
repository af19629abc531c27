/* http_client.c - requests to an HTTP provider from message templates, on
 * the owner's event loop. Each window slot keeps its easy handle, so the
 * per-request work is the template expansion and curl's URL copy.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "http_client.h"
#include "http_codec.h"
#include "http_curl.h"
#include "iobuf.h"

#define ANSWER_MAX 65536        /* provider answers beyond this are not kept */
#define DETAIL_LEN CURL_ERROR_SIZE

struct client_req {
  struct http_client *c;
  CURL *easy;
  void *cookie;
  bool busy;                    /* a request is out */
  struct iobuf answer;
  char error[CURL_ERROR_SIZE];
};

struct http_client {
  struct http_client_config cfg;
  char *url, *body, *id_field, *smsc, *user, *password; /* the copies cfg points at */
  http_client_done_fn done;
  void *arg;
  struct http_curl *curl;
  struct curl_slist *headers;
  struct client_req *reqs;      /* window slots */
  struct client_req **free_reqs;
  unsigned free_count;
  char *scratch;                /* one expansion at a time: curl copies what it keeps */
};

static size_t on_answer(char *data, size_t size, size_t n, void *arg)
{
  struct client_req *r = arg;
  size_t len = size * n;
  if (iobuf_len(&r->answer) < ANSWER_MAX)
    iobuf_append(&r->answer, data, len < ANSWER_MAX - iobuf_len(&r->answer) ? len : ANSWER_MAX - iobuf_len(&r->answer));
  return len;
}

/* A short, printable start of the answer for a log line. */
static void answer_detail(char *dst, const struct iobuf *answer)
{
  size_t n = iobuf_len(answer) < DETAIL_LEN - 1 ? iobuf_len(answer) : DETAIL_LEN - 1;
  const uint8_t *p = iobuf_head(answer);
  for (size_t i = 0; i < n; i++)
    dst[i] = p[i] >= 0x20 && p[i] < 0x7F ? (char)p[i] : ' ';
  dst[n] = 0;
}

static void release(struct http_client *c, struct client_req *r)
{
  iobuf_consume(&r->answer, iobuf_len(&r->answer));
  r->cookie = NULL;
  r->busy = false;
  c->free_reqs[c->free_count++] = r;
}

static void on_done(void *arg, CURL *easy, CURLcode result)
{
  struct http_client *c = arg;
  struct http_client_result res;
  char detail[DETAIL_LEN] = "", *priv;
  long status = 0;
  curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
  struct client_req *r = (struct client_req *)priv;
  void *cookie = r->cookie;
  if (result == CURLE_OK)
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
  memset(&res, 0, sizeof res);
  res.http_status = status;
  res.status = http_codec_out_classify(status, (const char *)iobuf_head(&r->answer), iobuf_len(&r->answer),
                                       c->id_field, res.msgid, sizeof res.msgid);
  if (result != CURLE_OK)
    snprintf(detail, sizeof detail, "%s", r->error[0] ? r->error : curl_easy_strerror(result));
  else if (res.status != PROTO_OK)
    answer_detail(detail, &r->answer);
  res.detail = detail;
  /* The slot is free before the owner hears of it, so that it can submit again. */
  release(c, r);
  c->done(c->arg, cookie, &res);
}

static char *copy(const char *s)
{
  return s ? strdup(s) : NULL;
}

static bool copies_ok(const char *from, const char *to)
{
  return !from || to;
}

struct http_client *http_client_create(struct evloop *loop, const struct http_client_config *cfg,
                                       http_client_done_fn done, void *arg)
{
  struct http_client *c;
  if (!cfg || !cfg->url || !*cfg->url || !done || !(c = calloc(1, sizeof *c)))
    return NULL;
  c->cfg = *cfg;
  c->done = done;
  c->arg = arg;
  if (!c->cfg.connections)
    c->cfg.connections = 10;
  if (!c->cfg.window)
    c->cfg.window = c->cfg.connections;
  if (!c->cfg.timeout_ms)
    c->cfg.timeout_ms = 30000;
  if (!c->cfg.connect_timeout_ms)
    c->cfg.connect_timeout_ms = 5000;
  if (!c->cfg.max_request)
    c->cfg.max_request = 65536;
  c->url = copy(cfg->url);
  c->body = copy(cfg->body);
  c->id_field = copy(cfg->id_field);
  c->smsc = copy(cfg->smsc);
  c->user = copy(cfg->user);
  c->password = copy(cfg->password);
  c->reqs = calloc(c->cfg.window, sizeof *c->reqs);
  c->free_reqs = calloc(c->cfg.window, sizeof *c->free_reqs);
  c->scratch = malloc(c->cfg.max_request);
  if (c->cfg.method == HTTP_CLIENT_POST_JSON)
    c->headers = curl_slist_append(NULL, "Content-Type: application/json");
  c->curl = http_curl_create(loop, c->cfg.connections, on_done, c);
  if (!c->url || !copies_ok(cfg->body, c->body) || !copies_ok(cfg->id_field, c->id_field) ||
      !copies_ok(cfg->smsc, c->smsc) || !copies_ok(cfg->user, c->user) ||
      !copies_ok(cfg->password, c->password) || !c->reqs || !c->free_reqs || !c->scratch ||
      (c->cfg.method == HTTP_CLIENT_POST_JSON && !c->headers) || !c->curl)
    goto fail;
  for (unsigned i = 0; i < c->cfg.window; i++) {
    struct client_req *r = &c->reqs[i];
    CURL *easy = curl_easy_init();
    if (!easy)
      goto fail;
    r->c = c;
    r->easy = easy;
    iobuf_init(&r->answer);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, (char *)r);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(easy, CURLOPT_USERAGENT, "emg");
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, (long)c->cfg.timeout_ms);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, (long)c->cfg.connect_timeout_ms);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_answer);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, r->error);
    http_curl_tls_apply(easy, &c->cfg.tls);
    if (c->user) {
      curl_easy_setopt(easy, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
      curl_easy_setopt(easy, CURLOPT_USERNAME, c->user);
      curl_easy_setopt(easy, CURLOPT_PASSWORD, c->password ? c->password : "");
    }
    if (c->headers)
      curl_easy_setopt(easy, CURLOPT_HTTPHEADER, c->headers);
    c->free_reqs[c->free_count++] = r;
  }
  return c;
fail:
  http_client_destroy(c);
  return NULL;
}

int http_client_submit(struct http_client *c, const struct msg *m, const char *mo_smsc, void *cookie)
{
  struct http_codec_out out = { mo_smsc ? mo_smsc : c->smsc, m->origin.user, (int64_t)time(NULL), mo_smsc != NULL };
  struct client_req *r;
  int n;
  if (!c->free_count)
    return HTTP_CLIENT_E_FULL;
  r = c->free_reqs[c->free_count - 1];
  r->error[0] = 0;
  n = http_codec_out_expand(c->scratch, c->cfg.max_request, c->url, m, &out, HTTP_CODEC_ESC_URL);
  if (n < 0 || curl_easy_setopt(r->easy, CURLOPT_URL, c->scratch) != CURLE_OK)
    return n == HTTP_CODEC_E_SPACE || n == HTTP_CODEC_E_INVALID ? HTTP_CLIENT_E_TEMPLATE : HTTP_CLIENT_E_NOMEM;
  if (c->cfg.method != HTTP_CLIENT_GET) {
    n = c->body ? http_codec_out_expand(c->scratch, c->cfg.max_request, c->body, m, &out,
                                        c->cfg.method == HTTP_CLIENT_POST_JSON ? HTTP_CODEC_ESC_JSON
                                                                               : HTTP_CODEC_ESC_URL)
                : 0;
    if (n < 0)
      return HTTP_CLIENT_E_TEMPLATE;
    if (!c->body)
      c->scratch[0] = 0;
    curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE, (long)n);
    if (curl_easy_setopt(r->easy, CURLOPT_COPYPOSTFIELDS, c->scratch) != CURLE_OK)
      return HTTP_CLIENT_E_NOMEM;
  }
  if (http_curl_add(c->curl, r->easy) == -1)
    return HTTP_CLIENT_E_NOMEM;
  r->cookie = cookie;
  r->busy = true;
  c->free_count--;
  return 0;
}

unsigned http_client_room(const struct http_client *c)
{
  return c->free_count;
}

void http_client_destroy(struct http_client *c)
{
  if (!c)
    return;
  for (unsigned i = 0; c->reqs && i < c->cfg.window; i++) {
    struct client_req *r = &c->reqs[i];
    if (r->busy) {
      struct http_client_result res = { .status = PROTO_E_TEMPORARY, .detail = "stopped" };
      http_curl_remove(c->curl, r->easy);
      r->busy = false;
      c->done(c->arg, r->cookie, &res);
    }
    if (r->easy)
      curl_easy_cleanup(r->easy);
    iobuf_destroy(&r->answer);
  }
  http_curl_destroy(c->curl);
  curl_slist_free_all(c->headers);
  free(c->reqs);
  free(c->free_reqs);
  free(c->scratch);
  free(c->url);
  free(c->body);
  free(c->id_field);
  free(c->smsc);
  free(c->user);
  free(c->password);
  free(c);
}
