/* http_server.h - the HTTP connector's incoming side, with keep-alive and
 * pipelining: POST /api/v1/messages (JSON, one message or a batch) and
 * GET|POST /cgi-bin/sendsms (Kannel's parameters and answers), parsed by
 * http_codec and handed to the gateway one message at a time.
 *
 * Threads: the server runs on the event loops that attach to it (http_listen:
 * each keeps the connections it accepted). check_user, submit and flush run
 * in the loop's thread with the ctx it attached with, and the gateway
 * completes each message with http_server_complete in that same thread,
 * inside submit or later; a request's answer goes once every message of it
 * is completed. Nothing crosses threads on the way in or back.
 *
 * Authentication: the JSON API takes HTTP Basic ("Authorization: Basic
 * base64(user:password)") or "Authorization: Bearer user:password"; missing
 * or wrong credentials get 401 with a WWW-Authenticate challenge. Kannel's
 * sendsms takes username (or user) and password (or pass) parameters, or the
 * X-Kannel-Username and X-Kannel-Password headers of a text/plain POST; a
 * failure gets 403 "Authorization failed for sendsms", as from Kannel.
 *
 * A Kannel POST is either application/x-www-form-urlencoded (the parameters
 * in the body, with those of the query string) or, as Kannel's own, a
 * text/plain (coding 0 by default) or application/octet-stream (coding 1)
 * body with the parameters in X-Kannel-* headers and the charset in the
 * Content-Type.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_HTTP_SERVER_H
#define EMG_HTTP_SERVER_H

#include <stdint.h>
#include "evloop.h"
#include "http_codec.h"
#include "msg.h"

enum http_server_api {
  HTTP_SERVER_JSON,
  HTTP_SERVER_KANNEL
};

struct http_server_request;

/* The token of one submitted message: complete it exactly once. */
struct http_server_completion {
  struct http_server_request *request;
  unsigned index;
};

/* One message, as submit sees it. */
struct http_server_message {
  enum http_server_api api;
  const char *user;                       /* the authenticated account */
  struct msg *msg;                        /* origin.user set; it and its payload stay valid until
                                           * its completion (msg_clone to keep it longer) */
  enum http_codec_dlr_method dlr_method;
  const char *dlr_url;                    /* NULL = none; valid as msg */
  const struct http_codec_batch *batch;   /* the request's Kannel hints: smsc, account, binfo */
};

/* ctx: the attaching loop's (see http_server_attach). */
struct http_server_handler {
  /* 0 when user and password are an account of the connector, else -1;
   * peer is the client's "ADDRESS:PORT" (a brake on guessing counts per
   * address). */
  int (*check_user)(void *ctx, const char *peer, const char *user, const char *password);
  /* One message of a request. The gateway calls http_server_complete(c, ...)
   * exactly once for it, in this loop's thread, inside submit or later. */
  void (*submit)(void *ctx, const struct http_server_message *m, struct http_server_completion c);
  /* After the last submit of a request, so that what submit staged moves on
   * as one batch. May be NULL. */
  void (*flush)(void *ctx);
};

struct tls_ctx;

/* Zero means the default. */
struct http_server_config {
  const char *listen;              /* "HOST:PORT"; port 0 picks a free one (http_server_port) */
  unsigned connection_limit;       /* connections at once; default 1000 */
  unsigned idle_timeout_s;         /* an idle keep-alive connection is closed after; default 30 */
  unsigned connections_per_ip;      /* connections at once from one address; default 64 */
  unsigned request_timeout_s;      /* a request must come whole within, counted from the
                                    * connection's opening or its previous answer; default 30 */
  struct http_codec_limits limits; /* body size, batch size, parts */
  struct tls_ctx *tls;             /* HTTPS with it (a reference is kept); NULL = plain HTTP */
};

struct http_server_stats {
  uint64_t requests;               /* on the two routes */
  uint64_t messages;               /* submitted to the gateway */
  uint64_t accepted;               /* completed as ACCEPTED or QUEUED */
  uint64_t refused;                /* completed otherwise */
  uint64_t bad_requests;           /* refused by the codec (400, 413) */
  uint64_t auth_failures;
  uint64_t abandoned;              /* answered 503 at stop, still waiting for completions */
};

struct http_server;
struct http_server_loop;

/* Binds the socket. err says why on NULL. */
struct http_server *http_server_start(const struct http_server_config *cfg,
                                      const struct http_server_handler *h, char *err, size_t err_len);

/* The port it listens on. */
int http_server_port(const struct http_server *s);

/* Serves on loop (call in its thread); ctx goes to the handler. NULL when
 * out of memory. */
struct http_server_loop *http_server_attach(struct http_server *s, struct evloop *loop, void *ctx);

/* The gateway's verdict on one message, with its id when taken, in the
 * thread of the loop that submitted it. The last completion of a request
 * sends its answer. Valid after the connection went, or the loop detached:
 * the request's memory lives until its last completion. */
void http_server_complete(struct http_server_completion c, enum http_codec_outcome outcome,
                          uint64_t id);

/* The certificate and key of the connections to come (a reload). */
void http_server_set_tls(struct http_server *s, struct tls_ctx *tls);

/* The counters, from any thread. */
void http_server_stats(struct http_server *s, struct http_server_stats *out);

/* Stops accepting, and waits up to wait_ms for the requests in progress to
 * be answered (their loops go on completing them meanwhile). Any thread but
 * the loops'. */
void http_server_drain(struct http_server *s, unsigned wait_ms);

/* In the loop's thread: closes its connections; requests still waiting
 * for completions are answered 503 (their completions may still come, and
 * are then ignored). */
void http_server_detach(struct http_server_loop *sl);

/* After every loop detached. */
void http_server_free(struct http_server *s);

#endif
