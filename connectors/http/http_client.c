/* http_client.c - requests to an HTTP provider from message templates, on
 * the owner's event loop (http_pool): the per-request work is the template
 * expansion, the request's formatting and its write.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "http_client.h"
#include "http_codec.h"
#include "http_pool.h"

#define DETAIL_LEN 256

struct http_client {
  struct http_client_config cfg;
  char *url, *body, *id_field, *smsc;     /* the copies cfg points at */
  char auth[440];                         /* "Authorization: Basic ...\r\n", or "" */
  http_client_done_fn done;
  void *arg;
  struct http_pool *pool;
  unsigned outstanding;
  char *url_scratch, *body_scratch;       /* one expansion at a time: the pool copies what it sends */
};

/* A short, printable start of the answer for a log line. */
static void answer_detail(char *dst, const char *body, size_t len)
{
  size_t n = len < DETAIL_LEN - 1 ? len : DETAIL_LEN - 1;
  for (size_t i = 0; i < n; i++)
    dst[i] = body[i] >= 0x20 && body[i] < 0x7F ? body[i] : ' ';
  dst[n] = 0;
}

static void on_done(void *arg, void *cookie, const struct http_pool_answer *a)
{
  struct http_client *c = arg;
  struct http_client_result res;
  char detail[DETAIL_LEN] = "";
  memset(&res, 0, sizeof res);
  res.http_status = a->status;
  res.status = http_codec_out_classify(a->status, a->body, a->body_len, c->id_field, res.msgid, sizeof res.msgid);
  if (!a->status)
    snprintf(detail, sizeof detail, "%s", a->error);
  else if (res.status != PROTO_OK)
    answer_detail(detail, a->body, a->body_len);
  res.detail = detail;
  res.answer = a->body;
  res.answer_len = a->body_len;
  /* The slot is free before the owner hears of it, so that it can submit again. */
  c->outstanding--;
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
                                       http_client_done_fn done, void *arg, char *err, size_t err_len)
{
  struct http_client *c;
  snprintf(err, err_len, "out of memory");
  if (!cfg || !cfg->url || !*cfg->url || !done) {
    snprintf(err, err_len, "no URL");
    return NULL;
  }
  if (!(c = calloc(1, sizeof *c)))
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
  c->url_scratch = malloc(c->cfg.max_request);
  c->body_scratch = malloc(c->cfg.max_request);
  if (cfg->user) {
    char plain[300], b64[404];
    int n = snprintf(plain, sizeof plain, "%s:%s", cfg->user, cfg->password ? cfg->password : "");
    if (n < 0 || (size_t)n >= sizeof plain) {
      snprintf(err, err_len, "user and password too long");
      goto fail;
    }
    EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)plain, n);
    snprintf(c->auth, sizeof c->auth, "Authorization: Basic %s\r\n", b64);
  }
  if (!c->url || !copies_ok(cfg->body, c->body) || !copies_ok(cfg->id_field, c->id_field) ||
      !copies_ok(cfg->smsc, c->smsc) || !c->url_scratch || !c->body_scratch)
    goto fail;
  struct http_pool_config pc = { .connections = c->cfg.connections, .pipeline = c->cfg.pipeline,
                                 .timeout_ms = c->cfg.timeout_ms, .connect_timeout_ms = c->cfg.connect_timeout_ms };
  if (strncmp(c->url, "https:", 6) == 0 && !(pc.tls = http_pool_tls_ctx(&cfg->tls, err, err_len)))
    goto fail;
  c->pool = http_pool_create(loop, &pc, on_done, c);
  tls_ctx_unref(pc.tls);   /* the pool keeps its own reference */
  if (!c->pool)
    goto fail;
  return c;
fail:
  http_client_destroy(c);
  return NULL;
}

/* The request for msgs (one, or a JSON batch): URL and body expanded, sent. */
static int submit(struct http_client *c, const struct msg *const *msgs, size_t n, const char *mo_smsc, void *cookie)
{
  struct http_codec_out out = { mo_smsc ? mo_smsc : c->smsc, msgs[0]->origin.user, (int64_t)time(NULL), mo_smsc != NULL };
  int len;
  if (c->outstanding >= c->cfg.window)
    return HTTP_CLIENT_E_FULL;
  len = http_codec_out_expand(c->url_scratch, c->cfg.max_request, c->url, msgs[0], &out, HTTP_CODEC_ESC_URL);
  if (len < 0)
    return len == HTTP_CODEC_E_SPACE || len == HTTP_CODEC_E_INVALID ? HTTP_CLIENT_E_TEMPLATE : HTTP_CLIENT_E_NOMEM;
  struct http_pool_request rq = { .method = "GET", .url = c->url_scratch, .headers = c->auth };
  if (c->cfg.method != HTTP_CLIENT_GET) {
    enum http_codec_escape esc = c->cfg.method == HTTP_CLIENT_POST_JSON ? HTTP_CODEC_ESC_JSON : HTTP_CODEC_ESC_URL;
    size_t used = 0;
    bool array = n > 1;
    if (array)
      c->body_scratch[used++] = '[';
    for (size_t i = 0; i < n && c->body; i++) {
      if (used + 2 >= c->cfg.max_request)
        return HTTP_CLIENT_E_TEMPLATE;   /* no room for another, nor the closing bracket */
      if (i)
        c->body_scratch[used++] = ',';
      out.user = msgs[i]->origin.user;
      len = http_codec_out_expand(c->body_scratch + used, c->cfg.max_request - used - 1, c->body, msgs[i], &out, esc);
      if (len < 0)
        return HTTP_CLIENT_E_TEMPLATE;
      used += (size_t)len;
    }
    if (array)
      c->body_scratch[used++] = ']';
    rq.method = "POST";
    rq.content_type = c->cfg.method == HTTP_CLIENT_POST_JSON ? "application/json"
                                                               : "application/x-www-form-urlencoded";
    rq.body = c->body_scratch;
    rq.body_len = used;
  }
  len = http_pool_send(c->pool, &rq, cookie);
  if (len == HTTP_POOL_E_URL)
    return HTTP_CLIENT_E_TEMPLATE;
  if (len < 0)
    return HTTP_CLIENT_E_NOMEM;
  c->outstanding++;
  return 0;
}

int http_client_submit(struct http_client *c, const struct msg *m, const char *mo_smsc, void *cookie)
{
  return submit(c, &m, 1, mo_smsc, cookie);
}

int http_client_submit_batch(struct http_client *c, const struct msg *const *msgs, size_t n, void *cookie)
{
  if (!n || (n > 1 && c->cfg.method != HTTP_CLIENT_POST_JSON))
    return HTTP_CLIENT_E_TEMPLATE;
  return submit(c, msgs, n, NULL, cookie);
}

unsigned http_client_room(const struct http_client *c)
{
  return c->outstanding < c->cfg.window ? c->cfg.window - c->outstanding : 0;
}

void http_client_destroy(struct http_client *c)
{
  if (!c)
    return;
  /* What is outstanding ends as "stopped": temporary, so that it is requeued. */
  http_pool_destroy(c->pool);
  free(c->url_scratch);
  free(c->body_scratch);
  free(c->url);
  free(c->body);
  free(c->id_field);
  free(c->smsc);
  free(c);
}
