/* http_curl.h - libcurl's multi interface driven by an evloop.
 *
 * The sockets curl opens are watched by the loop, curl's timer runs from the
 * loop's ticks (and, when curl wants to act at once, from a deferred
 * callback), and each finished transfer goes to done() in the loop's thread.
 * The HTTP client connector and the receipt callback sender share it, so
 * that neither needs a thread of its own for I/O. Connections are kept alive
 * in the multi handle's cache and reused by later transfers to the same host.
 *
 * One owner thread (the loop's); nothing here is thread-safe.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_HTTP_CURL_H
#define EMG_HTTP_CURL_H

#include <curl/curl.h>
#include <stdbool.h>
#include "evloop.h"

struct http_curl;

/* TLS for https:// URLs. The peer is always verified (chain and host
 * name) unless insecure is set, which only an explicit verify_peer =
 * false in the configuration does; the strings must outlive the handles. */
struct http_curl_tls {
  const char *ca;               /* PEM file of trusted CAs; NULL or "" = the system's */
  const char *cert;             /* client certificate (PEM), or NULL */
  const char *key;              /* its key; NULL or "" = in cert's file */
  bool insecure;
};

/* Sets t on easy (t NULL: the defaults, peer verified by the system's CAs). */
void http_curl_tls_apply(CURL *easy, const struct http_curl_tls *t);

/* A transfer ended: result is curl's code (CURLE_OK when an answer came,
 * whatever its HTTP status). The easy handle is out of the multi handle
 * again and belongs to the caller. */
typedef void (*http_curl_done_fn)(void *arg, CURL *easy, CURLcode result);

/* A multi handle on loop: at most max_connections connections at once (and
 * kept alive), further transfers wait for one. NULL when out of memory. */
struct http_curl *http_curl_create(struct evloop *loop, unsigned max_connections,
                                   http_curl_done_fn done, void *arg);

/* Starts a transfer of easy (set up by the caller). Returns 0 or -1. */
int http_curl_add(struct http_curl *hc, CURL *easy);

/* Stops a transfer before it ends; done is not called for it. */
void http_curl_remove(struct http_curl *hc, CURL *easy);

/* Frees the multi handle. The caller removes its transfers first. Not from
 * within done. */
void http_curl_destroy(struct http_curl *hc);

#endif
