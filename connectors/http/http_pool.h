/* http_pool.h - an HTTP/1.1 client on the owner's event loop: requests to
 * any number of origins (scheme, host, port), each with its own bounded set
 * of connections kept alive and reused; what finds no free connection
 * waits, in order, for one. Answers are read by Debian's http-parser.
 *
 * Made for many small requests (receipt callbacks, a provider's HTTP API,
 * a benchmark's submits): a request costs its formatting, one write and
 * the reads of its answer, with no thread, handle or connection set up for
 * it. https:// runs on lib/tls (OpenSSL), which verifies the server's chain
 * and name as the context says.
 *
 * A request waits for a connection of its own unless `pipeline` allows
 * more than one in flight on each (for servers known to take pipelined
 * requests, as emgd does). Requests given to a connection in one loop
 * iteration go out in one write. One sent on a kept-alive connection that
 * the server had closed meanwhile (nothing of an answer came), and those
 * pipelined behind an answer that closed the connection, are sent once
 * more on a new connection, as browsers and libcurl do; after a time-out
 * or a reset, those pipelined behind end in failure (the server may have
 * acted on them). A host name is resolved on the loop's thread (getaddrinfo)
 * when its origin is first used, and again at most once a minute while it
 * has no connection open; an address in the URL costs nothing.
 *
 * One owner thread; nothing here is thread-safe.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_HTTP_POOL_H
#define EMG_HTTP_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include "evloop.h"
#include "tls.h"

/* Zero means the default. */
struct http_pool_config {
  unsigned connections;            /* per origin at most; default 10 */
  unsigned pipeline;               /* requests in flight on one connection (HTTP/1.1 pipelining, answers
                                      in order) once every connection has one; default 1: none */
  unsigned timeout_ms;             /* a request, from when it is sent (or queued) to its answer; default 30000 */
  unsigned connect_timeout_ms;     /* default 5000 */
  unsigned idle_ms;                /* a kept-alive connection unused this long is closed; default 30000 */
  size_t max_answer;               /* answer bodies kept up to this (the rest is read and dropped); default 65536 */
  struct tls_ctx *tls;             /* for https:// (a reference is kept); NULL: https:// is refused */
};

struct http_pool_request {
  const char *method;              /* "GET", "POST", ... */
  const char *url;                 /* absolute: http:// or https://, user:password@ for HTTP Basic */
  const char *content_type;        /* with a body; NULL: none */
  const char *body;
  size_t body_len;
  const char *headers;             /* more header lines, each ending in "\r\n", or NULL */
};

struct http_pool_answer {
  unsigned status;                 /* the HTTP status; 0 when no answer came */
  const char *body;                /* NUL-terminated, at most max_answer bytes */
  size_t body_len;
  const char *error;               /* why no answer came; "" with one */
};

/* A request ended; a is valid during the call, which may send again (not
 * destroy the pool). */
typedef void (*http_pool_done_fn)(void *arg, void *cookie, const struct http_pool_answer *a);

struct http_pool;

struct http_pool *http_pool_create(struct evloop *loop, const struct http_pool_config *cfg, http_pool_done_fn done,
                                   void *arg);

enum http_pool_error {
  HTTP_POOL_E_URL = -1,            /* not an absolute http(s) URL, or https:// without TLS */
  HTTP_POOL_E_NOMEM = -2
};

/* Sends a request (everything copied). 0: done follows, exactly once (it
 * may come before this returns, when no connection can even be started);
 * otherwise an HTTP_POOL_E_* code and no done. */
int http_pool_send(struct http_pool *p, const struct http_pool_request *rq, void *cookie);

/* Requests sent and not done yet. */
unsigned http_pool_outstanding(const struct http_pool *p);

/* Ends what is outstanding (done with status 0, "stopped"), closes the
 * connections and frees p. Not from within done. */
void http_pool_destroy(struct http_pool *p);

/* What a connector's configuration says about https:// to it. */
struct http_pool_tls {
  const char *ca;                  /* PEM file of trusted CAs; NULL or "" = the system's */
  const char *cert;                /* client certificate (PEM), or NULL */
  const char *key;                 /* its key; NULL or "" = in cert's file */
  bool insecure;                   /* no check of the server's chain and name: only an explicit
                                      verify_peer = false in the configuration sets it */
};

/* A client context for t (NULL: the defaults, the server verified against
 * the system's CAs). NULL with the file and the reason in err. */
struct tls_ctx *http_pool_tls_ctx(const struct http_pool_tls *t, char *err, size_t err_len);

/* Counters. */
struct http_pool_stats {
  unsigned long long requests, answers, failures, connects, reuses, resends;
};
void http_pool_stats(const struct http_pool *p, struct http_pool_stats *out);

#endif
