/* http_callback.c - the receipt callback sender on its owner's loop: one
 * timer heap orders everything waiting for a request slot (new callbacks
 * due at once, in the order they came; retries after their back-off), and
 * http_pool carries the requests.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "clock.h"
#include "http_callback.h"
#include "http_pool.h"
#include "timerheap.h"

struct cb_item {
  void *cookie;
  enum http_callback_method method;
  unsigned attempts;            /* tries made */
  uint64_t first_ms;            /* when the first try started */
  const char *body;             /* NULL for GET; in the same allocation */
  size_t body_len;
  char url[];
};

struct http_callback {
  struct http_callback_limits lim;
  http_callback_done_fn done;
  void *arg;
  struct evloop *loop;
  struct http_pool *pool;
  struct timerheap queue;       /* waiting for a slot, by when they are due */
  unsigned held;                /* waiting or in flight */
  unsigned inflight;
  uint64_t rng;
  bool destroying;

  atomic_uint_fast64_t sent, retried, failed, refused, dropped, tries_failed, pending;
  atomic_flag error_lock;       /* guards last_error for http_callback_stats */
  char last_error[160];
};

static void lim_default(unsigned *v, unsigned dflt)
{
  if (!*v)
    *v = dflt;
}

/* Ends a callback: counts it, tells the owner, frees it. */
static void finish(struct http_callback *cb, struct cb_item *it, enum http_callback_outcome outcome)
{
  atomic_fetch_add(outcome == HTTP_CALLBACK_SENT     ? &cb->sent
                   : outcome == HTTP_CALLBACK_FAILED ? &cb->failed
                                                     : &cb->dropped,
                   1);
  cb->held--;
  atomic_store(&cb->pending, cb->held);
  if (cb->done)
    cb->done(cb->arg, it->cookie, outcome);
  free(it);
}

/* The wait before try attempts + 1: backoff_min doubled per try made, at
 * most backoff_max, give or take a tenth, so that a client coming back is
 * not hit by every retry at once. */
static uint64_t backoff_ms(struct http_callback *cb, unsigned attempts)
{
  uint64_t delay = cb->lim.backoff_min_ms;
  for (unsigned i = 1; i < attempts && delay < cb->lim.backoff_max_ms; i++)
    delay *= 2;
  if (delay > cb->lim.backoff_max_ms)
    delay = cb->lim.backoff_max_ms;
  cb->rng ^= cb->rng << 13;
  cb->rng ^= cb->rng >> 7;
  cb->rng ^= cb->rng << 17;
  return delay - delay / 10 + (delay / 5 ? cb->rng % (delay / 5 + 1) : 0);
}

/* After a try that did not get through: retry when attempts and time allow. */
static void retry_or_fail(struct http_callback *cb, struct cb_item *it, bool retryable)
{
  uint64_t now = clock_now_ms();
  uint64_t due = now + backoff_ms(cb, it->attempts);
  if (retryable && it->attempts < cb->lim.attempts_max && due - it->first_ms <= cb->lim.give_up_ms &&
      timerheap_push(&cb->queue, due, it) == 0) {
    atomic_fetch_add(&cb->retried, 1);
    return;
  }
  finish(cb, it, HTTP_CALLBACK_FAILED);
}

/* Why the last try failed, for http_callback_stats in another thread. */
static void note_error(struct http_callback *cb, const char *why)
{
  while (atomic_flag_test_and_set(&cb->error_lock))
    ;
  snprintf(cb->last_error, sizeof cb->last_error, "%s", why);
  atomic_flag_clear(&cb->error_lock);
  atomic_fetch_add(&cb->tries_failed, 1);
}

static void start_due(struct http_callback *cb);

static void on_done(void *arg, void *cookie, const struct http_pool_answer *a)
{
  struct http_callback *cb = arg;
  struct cb_item *it = cookie;
  cb->inflight--;
  if (cb->destroying) {
    finish(cb, it, HTTP_CALLBACK_DROPPED);
    return;
  }
  if (a->status >= 200 && a->status < 300) {
    finish(cb, it, HTTP_CALLBACK_SENT);
  } else {
    /* Said to the owner through the stats: a certificate that does not
     * verify, a host that refuses, an answer that is not 2xx. */
    char why[sizeof cb->last_error];
    if (!a->status) {
      note_error(cb, a->error);
    } else {
      const char *host = strstr(it->url, "://");
      host = host ? host + 3 : it->url;
      snprintf(why, sizeof why, "%.*s: HTTP %u", (int)strcspn(host, "/?"), host, a->status);
      note_error(cb, why);
    }
    retry_or_fail(cb, it, !a->status || a->status == 408 || a->status == 429 || a->status >= 500);
  }
  start_due(cb);
}

/* Starts what is due while request slots are free. */
static void start_due(struct http_callback *cb)
{
  void *due;
  uint64_t now = clock_now_ms();
  while (cb->inflight < cb->lim.concurrency && timerheap_pop_due(&cb->queue, now, &due)) {
    struct cb_item *it = due;
    struct http_pool_request rq = { .method = "GET", .url = it->url };
    if (it->method == HTTP_CALLBACK_POST) {
      rq.method = "POST";
      rq.content_type = "application/json";
      rq.body = it->body;
      rq.body_len = it->body_len;
    }
    if (!it->attempts++)
      it->first_ms = now;
    /* Counted before: the pool may end it (on_done) before it returns. */
    cb->inflight++;
    int rc = http_pool_send(cb->pool, &rq, it);
    if (rc < 0)
      cb->inflight--;
    if (rc == HTTP_POOL_E_URL) {
      note_error(cb, "a callback URL that is not http:// or https://");
      finish(cb, it, HTTP_CALLBACK_FAILED);
    } else if (rc < 0) {
      retry_or_fail(cb, it, true);
    }
  }
}

static void on_tick(struct evloop *loop, void *arg)
{
  start_due(arg);
}

struct http_callback *http_callback_create(struct evloop *loop, const struct http_callback_limits *lim,
                                           http_callback_done_fn done, void *arg, char *err, size_t err_len)
{
  struct http_callback *cb = calloc(1, sizeof *cb);
  snprintf(err, err_len, "out of memory");
  if (!cb)
    return NULL;
  if (lim)
    cb->lim = *lim;
  lim_default(&cb->lim.queue_max, 10000);
  lim_default(&cb->lim.concurrency, 16);
  lim_default(&cb->lim.attempts_max, 6);
  lim_default(&cb->lim.backoff_min_ms, 1000);
  lim_default(&cb->lim.backoff_max_ms, 60000);
  lim_default(&cb->lim.give_up_ms, 600000);
  lim_default(&cb->lim.timeout_ms, 10000);
  lim_default(&cb->lim.connect_timeout_ms, 5000);
  cb->done = done;
  cb->arg = arg;
  cb->loop = loop;
  cb->rng = (uint64_t)clock_now_ns() | 1;
  atomic_flag_clear(&cb->error_lock);
  timerheap_init(&cb->queue, 0);
  lim_default(&cb->lim.connections, cb->lim.concurrency);
  lim_default(&cb->lim.pipeline, 1);
  struct http_pool_config pc = { .connections = cb->lim.connections, .pipeline = cb->lim.pipeline,
                                 .timeout_ms = cb->lim.timeout_ms,
                                 .connect_timeout_ms = cb->lim.connect_timeout_ms, .max_answer = 1024 };
  /* https:// callbacks verify the client's server: the system's CAs, or the
   * connector's callback_ca. */
  if (!(pc.tls = http_pool_tls_ctx(&cb->lim.tls, err, err_len)))
    goto fail;
  cb->pool = http_pool_create(loop, &pc, on_done, cb);
  tls_ctx_unref(pc.tls);
  if (!cb->pool || evloop_tick(loop, on_tick, cb) == -1)
    goto fail;
  return cb;
fail:
  http_pool_destroy(cb->pool);
  timerheap_destroy(&cb->queue);
  free(cb);
  return NULL;
}

int http_callback_send(struct http_callback *cb, const char *url, enum http_callback_method method,
                       const char *body, void *cookie)
{
  size_t url_len = url ? strlen(url) : 0;
  size_t body_len = method == HTTP_CALLBACK_POST && body ? strlen(body) : 0;
  if (!url_len)
    return HTTP_CALLBACK_E_INVALID;
  if (cb->held >= cb->lim.queue_max) {
    atomic_fetch_add(&cb->refused, 1);
    return HTTP_CALLBACK_E_FULL;
  }
  struct cb_item *it = malloc(sizeof *it + url_len + 1 + body_len + 1);
  if (!it)
    return HTTP_CALLBACK_E_NOMEM;
  memset(it, 0, sizeof *it);
  it->cookie = cookie;
  it->method = method;
  memcpy(it->url, url, url_len + 1);
  if (method == HTTP_CALLBACK_POST) {
    char *copy = it->url + url_len + 1;
    memcpy(copy, body ? body : "", body_len + 1);
    it->body = copy;
    it->body_len = body_len;
  }
  /* Due at once: the heap keeps them in the order they came among themselves. */
  if (timerheap_push(&cb->queue, 0, it) == -1) {
    free(it);
    return HTTP_CALLBACK_E_NOMEM;
  }
  cb->held++;
  atomic_store(&cb->pending, cb->held);
  start_due(cb);
  return 0;
}

unsigned http_callback_held(const struct http_callback *cb)
{
  return cb->held;
}

unsigned http_callback_room(const struct http_callback *cb)
{
  return cb->held < cb->lim.queue_max ? cb->lim.queue_max - cb->held : 0;
}

void http_callback_stats(struct http_callback *cb, struct http_callback_stats *out)
{
  out->sent = atomic_load(&cb->sent);
  out->retried = atomic_load(&cb->retried);
  out->failed = atomic_load(&cb->failed);
  out->refused = atomic_load(&cb->refused);
  out->dropped = atomic_load(&cb->dropped);
  out->pending = atomic_load(&cb->pending);
  out->tries_failed = atomic_load(&cb->tries_failed);
  while (atomic_flag_test_and_set(&cb->error_lock))
    ;
  memcpy(out->last_error, cb->last_error, sizeof out->last_error);
  atomic_flag_clear(&cb->error_lock);
}

uint64_t http_callback_destroy(struct http_callback *cb)
{
  if (!cb)
    return 0;
  uint64_t before = atomic_load(&cb->dropped);
  void *due;
  cb->destroying = true;
  evloop_untick(cb->loop, on_tick, cb);
  http_pool_destroy(cb->pool);   /* those in flight end "stopped": dropped */
  while (timerheap_pop_due(&cb->queue, UINT64_MAX, &due))
    finish(cb, due, HTTP_CALLBACK_DROPPED);
  timerheap_destroy(&cb->queue);
  uint64_t dropped = atomic_load(&cb->dropped) - before;
  free(cb);
  return dropped;
}
