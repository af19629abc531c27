/* tls.h - TLS for the connections of every protocol, on OpenSSL 3.
 *
 * A context holds what a connector's `tls` settings name: its certificate
 * and key, the CAs it trusts, whether it verifies the peer, the lowest
 * version and the ciphers. It is checked whole when it is built (files
 * readable, certificate not expired and matching its key), so that a bad
 * file is refused with its name and the reason, at start or at a reload,
 * and the context in use stays. Contexts are counted references: a reload
 * swaps in a new one for new connections, and each connection keeps the
 * one it began with.
 *
 * A connection wraps a non-blocking socket the caller owns and polls. Its
 * calls never block: they say what the socket must become ready for
 * (TLS_WANT_READ or TLS_WANT_WRITE) before the call is tried again. After
 * a read, more plain bytes may wait inside the connection without the
 * socket becoming readable again: tls_pending says so.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_TLS_H
#define EMG_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define TLS_ERR_LEN 256

struct tls_settings {
  const char *cert;                /* PEM certificate (chain) file; NULL or "" = none */
  const char *key;                 /* PEM private key file; "" = in cert's file */
  const char *ca;                  /* PEM file of trusted CAs; "" = the system's */
  bool verify_peer;                /* client: verify the server (name and chain); server: require a
                                      client certificate from ca */
  const char *min_version;         /* "1.2" (default) or "1.3" */
  const char *ciphers;             /* TLS 1.2 cipher list (OpenSSL syntax); "" = OpenSSL's default */
};

struct tls_ctx;
struct tls_conn;
struct iobuf;

/* A context for the client or the server side. NULL with the file and the
 * reason in err: unreadable, not PEM, expired or not yet valid, a key that
 * does not match the certificate, a server without a certificate, a bad
 * version or cipher list. */
struct tls_ctx *tls_ctx_create(const struct tls_settings *s, bool server, char *err, size_t err_len);
void tls_ctx_ref(struct tls_ctx *ctx);
void tls_ctx_unref(struct tls_ctx *ctx);   /* NULL is fine */

/* The certificate's subject ("CN=...,O=...") and expiry ("2027-01-31
 * 12:00:00 UTC"), for logs; "" without a certificate. */
void tls_ctx_describe(const struct tls_ctx *ctx, char *subject, size_t subject_len, char *expires,
                      size_t expires_len);

enum tls_status {
  TLS_OK = 0,
  TLS_WANT_READ = -1,              /* call again once the socket is readable */
  TLS_WANT_WRITE = -2,             /* ... writable */
  TLS_CLOSED = -3,                 /* the peer closed the TLS session (close_notify) or the socket */
  TLS_ERROR = -4                   /* tls_conn_error says why; the connection is unusable */
};

/* A connection over fd (not closed by tls_conn_free). server_name, for a
 * client: sent as SNI and, when the context verifies, the name the
 * certificate must carry (a host name or an IP address). NULL on failure
 * (out of memory). */
struct tls_conn *tls_conn_create(struct tls_ctx *ctx, int fd, bool server, const char *server_name);
void tls_conn_free(struct tls_conn *c);

/* Moves the handshake on: TLS_OK once done, or a status above. */
enum tls_status tls_handshake(struct tls_conn *c);
bool tls_handshake_done(const struct tls_conn *c);

/* Plain bytes in: how many (> 0), or a status. */
ssize_t tls_read(struct tls_conn *c, void *buf, size_t len);
/* Plain bytes out: how many were taken (> 0; fewer than len when the
 * socket is full), or a status. A write that wanted the socket must be
 * repeated with the same bytes (they may have moved: allowed). */
ssize_t tls_write(struct tls_conn *c, const void *buf, size_t len);
/* Buffered forms of the two, for every connection that keeps its bytes in
 * iobufs (sessions, HTTP). tls_read_into: one read of up to max plain bytes
 * into in: how many (> 0), 0 when the peer closed, -1 with errno EAGAIN when
 * the socket must become ready first, or -1 with the reason in err (errno
 * ENOMEM or EPROTO); err is "" unless it says why. tls_write_from: what out
 * holds, record after record, as far as the socket takes it: the bytes
 * taken (0 when it is full; *wants_read set when a write waits for input),
 * or -1 with the reason in err. */
ssize_t tls_read_into(struct tls_conn *c, struct iobuf *in, size_t max, char *err, size_t err_len);
ssize_t tls_write_from(struct tls_conn *c, struct iobuf *out, bool *wants_read, char *err, size_t err_len);

/* Plain bytes read from the socket and not yet returned by tls_read. */
bool tls_pending(const struct tls_conn *c);

/* Sends close_notify, without waiting for the peer's. */
void tls_close(struct tls_conn *c);

/* Why the last call failed, in words ("certificate verify failed:
 * certificate has expired", "wrong version number: not TLS", ...). */
const char *tls_conn_error(const struct tls_conn *c);

/* The peer's certificate subject (verified), e.g. for tying an account
 * to it; "" when it sent none. The protocol version and cipher in use,
 * for logs ("TLSv1.3 TLS_AES_256_GCM_SHA384"). */
const char *tls_peer_subject(const struct tls_conn *c);
void tls_conn_describe(const struct tls_conn *c, char *out, size_t len);

#endif
