/* http_listen.h - an HTTP/1.1 server on the owners' event loops, with
 * Debian's http-parser reading the requests.
 *
 * One listening socket serves any number of loops: each loop that attaches
 * accepts connections from it and keeps those it accepted, so a request is
 * read, handled and answered in one thread, with no hand-off. Answers go
 * out in order (pipelined requests included: up to `pipeline` in progress
 * per connection), gathered in the connection's output and written once
 * per loop iteration.
 *
 * The edge holds against hostile clients by itself: a bounded number of
 * connections (in all and per address); a deadline for a whole request
 * counted from the connection's opening or its previous answer (a client
 * sending a byte a second gets no longer, and is closed without an
 * answer); bounded heads and bodies,
 * refused as they come (431, 413); an ambiguous length (two different
 * Content-Length, or one with chunks) refused with 400 and a close; a
 * client that does not read its answers is not read from, and dropped once
 * it has taken nothing for the idle time-out; TLS handshakes within the
 * request deadline.
 *
 * Threads: http_listen_create and _free in any one thread; attach, detach
 * and every call about a request in the attached loop's thread. quiesce
 * and busy from any thread.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_HTTP_LISTEN_H
#define EMG_HTTP_LISTEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "evloop.h"
#include "tls.h"

#define HTTP_LISTEN_HEADERS_MAX 48

/* Zero means the default. */
struct http_listen_config {
  const char *listen;              /* "HOST:PORT"; port 0 picks a free one */
  unsigned connection_limit;       /* connections at once; default 1000 */
  unsigned connections_per_ip;     /* from one address at once; default 64 */
  unsigned idle_timeout_s;         /* a kept-alive connection with nothing to do; default 30 */
  unsigned request_timeout_s;      /* a whole request (and a TLS handshake); default 30 */
  size_t max_head;                 /* request line and headers; default 32 KiB */
  size_t max_body;                 /* default 1 MiB */
  unsigned pipeline;               /* requests in progress per connection; default 16 */
};

struct http_header {
  const char *name, *value;        /* NUL-terminated */
};

/* One request, valid during on_request. */
struct http_request {
  const char *method;              /* "GET", "POST", ... */
  const char *path;                /* without the query, NUL-terminated */
  const char *query;               /* after '?', NUL-terminated; "" when none */
  const struct http_header *headers;
  unsigned n_headers;
  const uint8_t *body;             /* NUL after its end */
  size_t body_len;
  const char *peer;                /* "HOST:PORT" */
};

/* The value of header name (any case), or NULL. */
const char *http_request_header(const struct http_request *r, const char *name);

/* A request waiting for its answer. */
struct http_pending;

/* What the owner says when the server refuses a request by itself (path
 * may be "" when the request line did not come whole). */
struct http_refusal {
  const char *path;
  unsigned status;                 /* 400, 413, 414, 431, 503 */
  const char *reason;              /* in words, for a plain text body */
  const char *content_type;        /* the owner may set these two */
  const char *body;
  char buf[160];                   /* room for the owner's body */
};

struct http_listen_handler {
  /* A whole request: answer it with http_answer, now or later (in this
   * loop's thread), exactly once. ctx is the attaching loop's. */
  void (*on_request)(void *ctx, const struct http_request *r, struct http_pending *p);
  /* May dress a refusal (its type and body); NULL: plain text. */
  void (*on_refuse)(void *ctx, struct http_refusal *r);
};

struct http_listen_stats {
  uint64_t connections;            /* accepted */
  uint64_t refused_connections;    /* over a limit, closed at once */
  uint64_t requests;
  uint64_t refused_requests;       /* by the server itself: framing, size, time */
  uint64_t timeouts;               /* connections closed for a deadline */
  uint64_t tls_failures;           /* handshakes that failed */
};

struct http_listen;
struct http_listen_loop;

/* Binds the socket. tls: HTTPS on every connection (a reference is kept;
 * http_listen_set_tls swaps it); NULL = plain HTTP. NULL with err
 * on failure. */
struct http_listen *http_listen_create(const struct http_listen_config *cfg, const struct http_listen_handler *h,
                                       struct tls_ctx *tls, char *err, size_t err_len);
int http_listen_port(const struct http_listen *l);

/* The TLS of the connections to come (a reload); the open ones keep theirs. */
void http_listen_set_tls(struct http_listen *l, struct tls_ctx *tls);

/* Starts accepting on loop (call in its thread); ctx goes to the handler. */
struct http_listen_loop *http_listen_attach(struct http_listen *l, struct evloop *loop, void *ctx);

/* Serves a connected, non-blocking socket on ll as if it had been accepted
 * (limits apply; the socket is closed when refused). For tests and fuzzing
 * over a socketpair. Returns 0 or -1. */
int http_listen_adopt(struct http_listen_loop *ll, int fd, const char *peer);

/* Stops accepting on every loop (at each loop's next tick): open
 * connections finish what they are doing and close when idle. */
void http_listen_quiesce(struct http_listen *l);

/* Requests in progress on every loop. */
unsigned http_listen_busy(const struct http_listen *l);

/* In the loop's thread: closes its connections (requests not answered yet
 * get 503 from on_refuse; their http_pending stays valid until answered)
 * and frees ll. */
void http_listen_detach(struct http_listen_loop *ll);

/* After every loop detached: closes the socket and frees l. */
void http_listen_free(struct http_listen *l);

void http_listen_stats(const struct http_listen *l, struct http_listen_stats *out);

/* Answers p: status, a Content-Type and the body (copied). extra: more
 * header lines, each ending in "\r\n", or NULL. close: close the connection
 * after this answer. In the loop's thread. */
void http_answer(struct http_pending *p, unsigned status, const char *content_type, const char *body,
                 size_t body_len, const char *extra, bool close);

/* The peer of p's connection ("" once it is gone). */
const char *http_pending_peer(const struct http_pending *p);

#endif
