/* http_callback.c - the receipt callback sender: a thread with an evloop and
 * a curl multi handle. New callbacks come through a locked hand-off stack;
 * in the thread, one timer heap orders everything waiting for a request
 * slot: new callbacks due at once (in the order they came), retries after
 * their back-off.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "clock.h"
#include "evloop.h"
#include "http_callback.h"
#include "http_curl.h"
#include "timerheap.h"

#define TICK_MS 10

struct cb_item {
  struct cb_item *next;         /* in the hand-off stack */
  void *cookie;
  enum http_callback_method method;
  unsigned attempts;            /* tries made */
  unsigned slot;                /* in inflight[] while a request is out */
  CURL *easy;                   /* its request while one is out */
  uint64_t first_ms;            /* when the first try started */
  const char *body;             /* NULL for GET; in the same allocation */
  size_t body_len;
  char url[];
};

struct http_callback {
  struct http_callback_limits lim;
  http_callback_done_fn done;
  void *arg;
  pthread_t thread;
  struct evloop *loop;
  struct http_curl *curl;
  struct curl_slist *json_headers;

  pthread_mutex_t lock;         /* guards incoming and stopping */
  struct cb_item *incoming;     /* newest first */
  bool stopping;
  atomic_bool quit;             /* the thread ends its loop */

  /* The sender's thread only. */
  struct timerheap queue;       /* waiting for a slot, by when they are due */
  struct cb_item **inflight;    /* concurrency slots */
  unsigned inflight_count;
  CURL **spare;                 /* easy handles kept for reuse */
  unsigned spare_count;
  uint64_t rng;

  atomic_uint_fast64_t held, sent, retried, failed, refused, dropped, tries_failed;
  char last_error[160];         /* under lock */
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
  if (cb->done)
    cb->done(cb->arg, it->cookie, outcome);
  free(it);
  atomic_fetch_sub(&cb->held, 1);
}

static size_t discard_body(char *data, size_t size, size_t n, void *arg)
{
  return size * n;
}

static CURL *easy_for(struct http_callback *cb, struct cb_item *it)
{
  CURL *easy = cb->spare_count ? cb->spare[--cb->spare_count] : curl_easy_init();
  if (!easy)
    return NULL;
  curl_easy_reset(easy);
  curl_easy_setopt(easy, CURLOPT_URL, (const char *)it->url);
  curl_easy_setopt(easy, CURLOPT_PRIVATE, it);
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(easy, CURLOPT_USERAGENT, "emg");
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, (long)cb->lim.timeout_ms);
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, (long)cb->lim.connect_timeout_ms);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard_body);
  curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
  http_curl_tls_apply(easy, &cb->lim.tls);
  if (it->method == HTTP_CALLBACK_POST) {
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, it->body);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, (long)it->body_len);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, cb->json_headers);
  }
  return easy;
}

static void easy_release(struct http_callback *cb, CURL *easy)
{
  if (cb->spare_count < cb->lim.concurrency)
    cb->spare[cb->spare_count++] = easy;
  else
    curl_easy_cleanup(easy);
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

/* Starts what is due while request slots are free. */
static void start_due(struct http_callback *cb)
{
  void *due;
  uint64_t now = clock_now_ms();
  while (cb->inflight_count < cb->lim.concurrency && timerheap_pop_due(&cb->queue, now, &due)) {
    struct cb_item *it = due;
    CURL *easy = easy_for(cb, it);
    if (!it->attempts++)
      it->first_ms = clock_now_ms();
    if (!easy || http_curl_add(cb->curl, easy) == -1) {
      if (easy)
        easy_release(cb, easy);
      retry_or_fail(cb, it, true);
      continue;
    }
    it->easy = easy;
    it->slot = cb->inflight_count;
    cb->inflight[cb->inflight_count++] = it;
  }
}

static void on_done(void *arg, CURL *easy, CURLcode result)
{
  struct http_callback *cb = arg;
  char *priv;
  long status = 0;
  curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
  struct cb_item *it = (struct cb_item *)priv;
  if (result == CURLE_OK)
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
  easy_release(cb, easy);
  it->easy = NULL;
  cb->inflight[it->slot] = cb->inflight[--cb->inflight_count];
  cb->inflight[it->slot]->slot = it->slot;
  if (status >= 200 && status < 300) {
    finish(cb, it, HTTP_CALLBACK_SENT);
  } else {
    /* Said to the owner through the stats: a certificate that does not
     * verify, a host that refuses, an answer that is not 2xx. */
    const char *host = strstr(it->url, "://");
    host = host ? host + 3 : it->url;
    pthread_mutex_lock(&cb->lock);
    if (result != CURLE_OK)
      snprintf(cb->last_error, sizeof cb->last_error, "%.*s: %s", (int)strcspn(host, "/?"), host,
               curl_easy_strerror(result));
    else
      snprintf(cb->last_error, sizeof cb->last_error, "%.*s: HTTP %ld", (int)strcspn(host, "/?"), host, status);
    pthread_mutex_unlock(&cb->lock);
    atomic_fetch_add(&cb->tries_failed, 1);
    retry_or_fail(cb, it, result != CURLE_OK || status == 408 || status == 429 || status >= 500);
  }
  start_due(cb);
}

static void on_wake(struct evloop *loop, void *arg)
{
  struct http_callback *cb = arg;
  struct cb_item *it;
  if (atomic_load(&cb->quit)) {
    evloop_stop(loop);
    return;
  }
  pthread_mutex_lock(&cb->lock);
  struct cb_item *taken = cb->incoming, *oldest_first = NULL;
  cb->incoming = NULL;
  pthread_mutex_unlock(&cb->lock);
  while ((it = taken)) {
    taken = it->next;
    it->next = oldest_first;
    oldest_first = it;
  }
  /* Due at once: the heap keeps them in this order among themselves. */
  while ((it = oldest_first)) {
    oldest_first = it->next;
    if (timerheap_push(&cb->queue, 0, it) == -1)
      finish(cb, it, HTTP_CALLBACK_FAILED);
  }
  start_due(cb);
}

static void on_tick(struct evloop *loop, void *arg)
{
  start_due(arg);
}

static void *run(void *arg)
{
  struct http_callback *cb = arg;
  evloop_run(cb->loop);
  return NULL;
}

/* Drops what the sender still holds, telling the owner of each. Returns how many. */
static uint64_t drop_all(struct http_callback *cb)
{
  struct cb_item *it;
  void *due;
  uint64_t dropped = 0;
  for (unsigned i = 0; i < cb->inflight_count; i++, dropped++) {
    it = cb->inflight[i];
    http_curl_remove(cb->curl, it->easy);
    curl_easy_cleanup(it->easy);
    finish(cb, it, HTTP_CALLBACK_DROPPED);
  }
  cb->inflight_count = 0;
  for (; timerheap_pop_due(&cb->queue, UINT64_MAX, &due); dropped++)
    finish(cb, due, HTTP_CALLBACK_DROPPED);
  for (; (it = cb->incoming); dropped++) {
    cb->incoming = it->next;
    finish(cb, it, HTTP_CALLBACK_DROPPED);
  }
  return dropped;
}

static uint64_t destroy(struct http_callback *cb)
{
  uint64_t dropped = drop_all(cb);
  http_curl_destroy(cb->curl);
  for (unsigned i = 0; i < cb->spare_count; i++)
    curl_easy_cleanup(cb->spare[i]);
  evloop_destroy(cb->loop);
  timerheap_destroy(&cb->queue);
  curl_slist_free_all(cb->json_headers);
  pthread_mutex_destroy(&cb->lock);
  free(cb->inflight);
  free(cb->spare);
  free(cb);
  return dropped;
}

struct http_callback *http_callback_start(const struct http_callback_limits *lim,
                                          http_callback_done_fn done, void *arg)
{
  struct http_callback *cb = calloc(1, sizeof *cb);
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
  cb->rng = (uint64_t)clock_now_ns() | 1;
  pthread_mutex_init(&cb->lock, NULL);
  timerheap_init(&cb->queue, 0);
  cb->inflight = calloc(cb->lim.concurrency, sizeof *cb->inflight);
  cb->spare = calloc(cb->lim.concurrency, sizeof *cb->spare);
  cb->json_headers = curl_slist_append(NULL, "Content-Type: application/json");
  cb->loop = evloop_create(TICK_MS);
  cb->curl = cb->loop ? http_curl_create(cb->loop, cb->lim.concurrency, on_done, cb) : NULL;
  if (!cb->inflight || !cb->spare || !cb->json_headers || !cb->curl ||
      evloop_tick(cb->loop, on_tick, cb) == -1)
    goto fail;
  evloop_on_wake(cb->loop, on_wake, cb);
  if (pthread_create(&cb->thread, NULL, run, cb) == 0)
    pthread_setname_np(cb->thread, "emg-callbacks");
  else
    goto fail;
  return cb;
fail:
  destroy(cb);
  return NULL;
}

int http_callback_send(struct http_callback *cb, const char *url, enum http_callback_method method,
                       const char *body, void *cookie)
{
  size_t url_len = url ? strlen(url) : 0;
  size_t body_len = method == HTTP_CALLBACK_POST && body ? strlen(body) : 0;
  struct cb_item *it;
  bool wake;
  if (!url_len)
    return HTTP_CALLBACK_E_INVALID;
  if (atomic_fetch_add(&cb->held, 1) >= cb->lim.queue_max) {
    atomic_fetch_sub(&cb->held, 1);
    atomic_fetch_add(&cb->refused, 1);
    return HTTP_CALLBACK_E_FULL;
  }
  it = malloc(sizeof *it + url_len + 1 + body_len + 1);
  if (!it) {
    atomic_fetch_sub(&cb->held, 1);
    return HTTP_CALLBACK_E_NOMEM;
  }
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
  pthread_mutex_lock(&cb->lock);
  if (cb->stopping) {
    pthread_mutex_unlock(&cb->lock);
    free(it);
    atomic_fetch_sub(&cb->held, 1);
    return HTTP_CALLBACK_E_STOPPED;
  }
  /* The thread takes the whole stack per wake-up: only the first needs one. */
  wake = cb->incoming == NULL;
  it->next = cb->incoming;
  cb->incoming = it;
  pthread_mutex_unlock(&cb->lock);
  if (wake)
    evloop_wake(cb->loop);
  return 0;
}

void http_callback_stats(struct http_callback *cb, struct http_callback_stats *out)
{
  out->sent = atomic_load(&cb->sent);
  out->retried = atomic_load(&cb->retried);
  out->failed = atomic_load(&cb->failed);
  out->refused = atomic_load(&cb->refused);
  out->dropped = atomic_load(&cb->dropped);
  out->pending = atomic_load(&cb->held);
  out->tries_failed = atomic_load(&cb->tries_failed);
  pthread_mutex_lock(&cb->lock);
  memcpy(out->last_error, cb->last_error, sizeof out->last_error);
  pthread_mutex_unlock(&cb->lock);
}

uint64_t http_callback_stop(struct http_callback *cb, unsigned wait_ms)
{
  uint64_t deadline = clock_now_ms() + wait_ms;
  pthread_mutex_lock(&cb->lock);
  cb->stopping = true;
  pthread_mutex_unlock(&cb->lock);
  while (atomic_load(&cb->held) && clock_now_ms() < deadline)
    nanosleep(&(struct timespec){ 0, 5 * 1000 * 1000 }, NULL);
  atomic_store(&cb->quit, true);
  evloop_wake(cb->loop);
  pthread_join(cb->thread, NULL);
  return destroy(cb);
}
