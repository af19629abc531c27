/* http_tls.h - HTTPS for the servers on libmicrohttpd (the HTTP server
 * connector and the admin API).
 *
 * libmicrohttpd runs its TLS on GnuTLS. Its certificate and key are
 * handed over through GnuTLS's certificate callback rather than fixed at
 * start, so that a reload puts new ones in place for the next handshakes
 * while the connections made keep theirs. The files are checked whole by
 * the configuration (lib/tls.c, OpenSSL) before they get here; here they
 * are only read.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_HTTP_TLS_H
#define EMG_HTTP_TLS_H

#include <microhttpd.h>
#include <stddef.h>

#define HTTP_TLS_ERR_LEN 256

struct http_tls;

/* cert: PEM certificate chain; key: its key ("" = in cert's file);
 * min_version "1.2" or "1.3". NULL with the file and the reason in err. */
struct http_tls *http_tls_create(const char *cert, const char *key, const char *min_version, char *err,
                                 size_t err_len);

/* New certificate and key for the handshakes to come; on failure (-1,
 * err says why) the running ones stay. */
int http_tls_reload(struct http_tls *t, const char *cert, const char *key, char *err, size_t err_len);

/* The options a daemon serving HTTPS with t starts with (MHD_OPTION_ARRAY;
 * with t NULL, none), and its flags (MHD_USE_TLS, or 0). */
const struct MHD_OptionItem *http_tls_options(struct http_tls *t);
unsigned http_tls_flags(const struct http_tls *t);

/* Around MHD_start_daemon: handshakes find their daemon's certificate
 * through a registry, which http_tls_starting holds until http_tls_attach
 * has put the new daemon (NULL: it did not start) in it with t (NULL: no
 * HTTPS). http_tls_detach before MHD_stop_daemon. */
void http_tls_starting(void);
void http_tls_attach(struct http_tls *t, struct MHD_Daemon *daemon);
void http_tls_detach(struct http_tls *t);

void http_tls_destroy(struct http_tls *t);   /* NULL is fine; detached first */

#endif
