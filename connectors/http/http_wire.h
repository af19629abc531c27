/* http_wire.h - the bytes of one HTTP connection, plain or TLS, on a
 * non-blocking socket: an input and an output buffer and the reads and
 * writes between them and the socket. The server (http_listen) and the
 * client (http_pool) share it; neither knows which kind of socket it has.
 *
 * One owner thread; nothing here is thread-safe.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_HTTP_WIRE_H
#define EMG_HTTP_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "iobuf.h"
#include "tls.h"

#define HTTP_WIRE_ERR_LEN 200

struct http_wire {
  int fd;                          /* -1 when closed */
  struct tls_conn *tls;            /* NULL: plain TCP */
  struct iobuf in, out;
  bool write_wants_read;           /* TLS: the last write waits for input */
  bool handshake_wants_write;      /* TLS: the handshake waits for room to write */
  char error[HTTP_WIRE_ERR_LEN];   /* why the last call failed */
};

/* Takes fd (and tls, may be NULL) over; buffers empty. */
void http_wire_init(struct http_wire *w, int fd, struct tls_conn *tls);

/* Frees the buffers and the TLS and closes the socket (the caller removed
 * it from its loop first). Safe to call twice. */
void http_wire_close(struct http_wire *w);

/* Moves a TLS handshake on: 1 done (or plain TCP), 0 waiting for the
 * socket (see http_wire_events), -1 failed (error says why). */
int http_wire_handshake(struct http_wire *w);

/* Reads up to max bytes into in: how many (> 0), 0 when the peer closed,
 * -1 with errno EAGAIN when nothing is there now, -1 otherwise with error
 * set. TLS may hold more decrypted input than the socket shows: read
 * again while http_wire_pending. */
ssize_t http_wire_read(struct http_wire *w, size_t max);
bool http_wire_pending(const struct http_wire *w);

/* Writes what out holds, as far as the socket takes it: the bytes written
 * (0 when it is full), or -1 with error set. */
ssize_t http_wire_write(struct http_wire *w);

/* The events to watch for: READ unless paused, WRITE while output waits
 * for room (or a handshake does). */
unsigned http_wire_events(const struct http_wire *w, bool read_paused, bool handshaking);

#endif
