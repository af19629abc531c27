/* http_client.h - the outgoing HTTP connector's sender: each message goes to
 * a provider's HTTP API as a request built from a URL template (and, for a
 * POST, a body template), with a bounded number of requests outstanding and
 * connections kept alive; each answer is classified as ok with the
 * provider's message id, throttled, temporary or permanent
 * (http_codec_out_classify).
 *
 * Threads: none of its own. A client lives on the event loop of the thread
 * that owns it (a connector instance's, or emgload's), over http_pool; that
 * thread makes every call here, and the results come back by callback in
 * it, from the loop's I/O and tick callbacks.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_HTTP_CLIENT_H
#define EMG_HTTP_CLIENT_H

#include <stddef.h>
#include "evloop.h"
#include "http_pool.h"
#include "msg.h"
#include "proto.h"

enum http_client_method {
  HTTP_CLIENT_GET = 0,
  HTTP_CLIENT_POST_FORM,        /* body template with %-encoded values, application/x-www-form-urlencoded */
  HTTP_CLIENT_POST_JSON         /* body template with JSON-escaped values, application/json */
};

/* Zero or NULL means the default. */
struct http_client_config {
  const char *url;              /* template, http_codec escapes (e.g. "http://h/send?to=%p&text=%b") */
  enum http_client_method method;
  const char *body;             /* POST body template; NULL = empty */
  const char *id_field;         /* the id in a 2xx JSON answer ("messages.0.id"); NULL = the whole body */
  const char *smsc;             /* %i: the connector's name */
  const char *user;             /* HTTP Basic credentials for the provider; NULL = none */
  const char *password;
  unsigned connections;         /* connections at most, kept alive; default 10 */
  unsigned window;              /* requests outstanding at most; default connections (one per
                                 * connection: the rest wait for one) */
  unsigned pipeline;            /* requests in flight on one connection (HTTP/1.1 pipelining, for
                                 * a server known to take it); default 1 */
  unsigned timeout_ms;          /* one request; default 30000 */
  unsigned connect_timeout_ms;  /* default 5000 */
  size_t max_request;           /* longest expanded URL or body; default 65536 */
  struct http_pool_tls tls;     /* for an https:// URL */
};

struct http_client_result {
  enum proto_status status;     /* PROTO_OK, PROTO_E_THROTTLED, PROTO_E_TEMPORARY or PROTO_E_PERMANENT */
  long http_status;             /* 0 when no answer came */
  char msgid[MSG_ID_LEN];       /* the provider's id on PROTO_OK; may be "" */
  const char *detail;           /* for a log line: why no answer came, or the answer's start; "" on PROTO_OK */
  const char *answer;           /* the answer's body (at most 64 KiB), NUL-terminated; "" without one */
  size_t answer_len;
};

/* One submitted message is done. r is valid during the call; the callback
 * may submit again. */
typedef void (*http_client_done_fn)(void *arg, void *cookie, const struct http_client_result *r);

enum http_client_error {
  HTTP_CLIENT_E_FULL = -1,      /* window requests are outstanding: wait for a done */
  HTTP_CLIENT_E_TEMPLATE = -2,  /* the message does not expand (too long, payload not convertible) */
  HTTP_CLIENT_E_NOMEM = -3
};

struct http_client;

/* A client on loop. cfg's strings are copied. NULL when the configuration
 * is unusable (no URL, TLS files that do not load: err says why) or out of
 * memory. */
struct http_client *http_client_create(struct evloop *loop, const struct http_client_config *cfg,
                                       http_client_done_fn done, void *arg, char *err, size_t err_len);

/* Sends m (the template's %n is m->origin.user); mo_smsc: for an MO, the
 * connector it came in on (its %i; the handset is %p, see struct
 * http_codec_out), NULL for a message to send on. m may be freed once this
 * returns. Returns 0 (done follows, exactly once) or an HTTP_CLIENT_E_* code
 * (no done). */
int http_client_submit(struct http_client *c, const struct msg *m, const char *mo_smsc, void *cookie);

/* A JSON POST client: n messages in one request, the body template
 * expanded for each and the results joined as a JSON array; the URL is
 * expanded for the first. Otherwise as http_client_submit (one done for
 * the request). */
int http_client_submit_batch(struct http_client *c, const struct msg *const *msgs, size_t n, void *cookie);

/* How many more submits fit in the window now. */
unsigned http_client_room(const struct http_client *c);

/* Aborts what is outstanding, each with done(PROTO_E_TEMPORARY, "stopped")
 * so that its owner can requeue it, closes the connections and frees c. */
void http_client_destroy(struct http_client *c);

#endif
