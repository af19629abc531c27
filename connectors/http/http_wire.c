/* http_wire.c - plain or TLS reads and writes between a socket and two
 * buffers.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "evloop.h"
#include "http_wire.h"

void http_wire_init(struct http_wire *w, int fd, struct tls_conn *tls)
{
  memset(w, 0, sizeof *w);
  w->fd = fd;
  w->tls = tls;
  iobuf_init(&w->in);
  iobuf_init(&w->out);
}

void http_wire_close(struct http_wire *w)
{
  if (w->tls) {
    tls_conn_free(w->tls);
    w->tls = NULL;
  }
  if (w->fd >= 0) {
    close(w->fd);
    w->fd = -1;
  }
  iobuf_destroy(&w->in);
  iobuf_destroy(&w->out);
}

int http_wire_handshake(struct http_wire *w)
{
  if (!w->tls || tls_handshake_done(w->tls))
    return 1;
  enum tls_status st = tls_handshake(w->tls);
  w->handshake_wants_write = st == TLS_WANT_WRITE;
  if (st == TLS_OK)
    return 1;
  if (st == TLS_WANT_READ || st == TLS_WANT_WRITE)
    return 0;
  snprintf(w->error, sizeof w->error, "TLS handshake: %s",
           st == TLS_CLOSED ? "closed by the peer" : tls_conn_error(w->tls));
  return -1;
}

ssize_t http_wire_read(struct http_wire *w, size_t max)
{
  if (w->tls)
    return tls_read_into(w->tls, &w->in, max, w->error, sizeof w->error);
  ssize_t n;
  do
    n = iobuf_read_fd(&w->in, w->fd, max);
  while (n < 0 && errno == EINTR);
  if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    snprintf(w->error, sizeof w->error, "read: %s", strerror(errno));
  return n;
}

bool http_wire_pending(const struct http_wire *w)
{
  return w->tls && tls_pending(w->tls);
}

ssize_t http_wire_write(struct http_wire *w)
{
  if (w->tls) {
    w->write_wants_read = false;
    return tls_write_from(w->tls, &w->out, &w->write_wants_read, w->error, sizeof w->error);
  }
  ssize_t n = iobuf_write_fd(&w->out, w->fd);
  if (n < 0)
    snprintf(w->error, sizeof w->error, "write: %s", strerror(errno));
  return n;
}

unsigned http_wire_events(const struct http_wire *w, bool read_paused, bool handshaking)
{
  if (handshaking)
    return w->handshake_wants_write ? EVLOOP_WRITE : EVLOOP_READ;
  unsigned ev = read_paused ? 0u : EVLOOP_READ;
  if (iobuf_len(&w->out) && !w->write_wants_read)
    ev |= EVLOOP_WRITE;
  if (w->write_wants_read)
    ev |= EVLOOP_READ;
  return ev;
}
