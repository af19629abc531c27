/* http_callback.h - sends delivery receipts to HTTP clients: a GET of an
 * expanded dlr-url or a JSON POST to a callback URL, retried with
 * exponential back-off on connection errors, time-outs, 408, 429 and 5xx,
 * within a bound of attempts and of time.
 *
 * It lives on its owner's event loop (http_pool: connections to a client
 * are kept alive and reused); the loop's thread makes every call but
 * http_callback_stats, and hears of each callback's end in it. Up to a
 * bounded number of callbacks are held at once.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_HTTP_CALLBACK_H
#define EMG_HTTP_CALLBACK_H

#include <stdint.h>
#include "evloop.h"
#include "http_pool.h"

/* Zero means the default. */
struct http_callback_limits {
  unsigned queue_max;           /* callbacks held at once, waiting or in flight; default 10000 */
  unsigned concurrency;         /* requests at once; default 16 */
  unsigned connections;         /* kept-alive connections to one host at most; default concurrency */
  unsigned pipeline;            /* requests in flight on one connection (HTTP/1.1 pipelining); default 1 */
  unsigned attempts_max;        /* tries per callback; default 6 */
  unsigned backoff_min_ms;      /* wait before the first retry, doubling after each; default 1000 */
  unsigned backoff_max_ms;      /* longest wait between tries; default 60000 */
  unsigned give_up_ms;          /* no try later than this after the first; default 600000 */
  unsigned timeout_ms;          /* one request, connection included; default 10000 */
  unsigned connect_timeout_ms;  /* default 5000 */
  struct http_pool_tls tls;     /* for https:// callbacks */
};

enum http_callback_method {
  HTTP_CALLBACK_GET,
  HTTP_CALLBACK_POST            /* body as application/json */
};

enum http_callback_outcome {
  HTTP_CALLBACK_SENT,           /* the client answered 2xx */
  HTTP_CALLBACK_FAILED,         /* refused for good (another 4xx), or out of attempts or time */
  HTTP_CALLBACK_DROPPED         /* still held when the sender was destroyed */
};

enum http_callback_error {
  HTTP_CALLBACK_E_FULL = -1,    /* queue_max callbacks are held: count it, drop or retry later */
  HTTP_CALLBACK_E_INVALID = -3, /* no URL */
  HTTP_CALLBACK_E_NOMEM = -4
};

/* Told once per callback that was accepted, in the loop's thread. Must not
 * call back into the sender. May be NULL. */
typedef void (*http_callback_done_fn)(void *arg, void *cookie, enum http_callback_outcome outcome);

struct http_callback_stats {
  uint64_t sent;                /* delivered */
  uint64_t retried;             /* tries after the first */
  uint64_t failed;              /* given up */
  uint64_t refused;             /* not accepted: queue full */
  uint64_t dropped;             /* held at stop */
  uint64_t pending;             /* held now */
  uint64_t tries_failed;        /* tries without a 2xx answer (retried or not) */
  char last_error[160];         /* why the last of them failed: curl's reason, or the HTTP status */
};

struct http_callback;

/* A sender on loop. NULL when it cannot (memory, TLS files: err says
 * why). */
struct http_callback *http_callback_create(struct evloop *loop, const struct http_callback_limits *lim,
                                           http_callback_done_fn done, void *arg, char *err, size_t err_len);

/* Enqueues a callback (url and body are copied; body NULL for GET).
 * Never blocks on the network. Returns 0 or an HTTP_CALLBACK_E_* code;
 * done is called only for a callback that was accepted. */
int http_callback_send(struct http_callback *cb, const char *url, enum http_callback_method method,
                       const char *body, void *cookie);

/* Callbacks held now, waiting or in flight, and how many more fit. */
unsigned http_callback_held(const struct http_callback *cb);
unsigned http_callback_room(const struct http_callback *cb);

/* The counters, from any thread. */
void http_callback_stats(struct http_callback *cb, struct http_callback_stats *out);

/* Drops what is held (done with DROPPED for each) and frees cb. Returns
 * how many were dropped. */
uint64_t http_callback_destroy(struct http_callback *cb);

#endif
