/* iobuf.h - a growable byte buffer for socket input and output.
 *
 * Data lives in [start, end) of one allocation. Reading appends at end;
 * parsing consumes from start; space is reclaimed by moving the unread
 * tail to the front only when the free room runs short, so a stream of
 * small frames costs no copies. Not thread-safe: the connection owns it.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_IOBUF_H
#define EMG_IOBUF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct iobuf {
  uint8_t *data;
  size_t start;
  size_t end;
  size_t capacity;
};

void iobuf_init(struct iobuf *b);
void iobuf_destroy(struct iobuf *b);

static inline size_t iobuf_len(const struct iobuf *b)
{
  return b->end - b->start;
}

static inline uint8_t *iobuf_head(const struct iobuf *b)
{
  return b->data + b->start;
}

/* Makes room for at least n more bytes at the end; returns a pointer to it,
 * or NULL when out of memory. Pointers into the buffer are invalid after it. */
uint8_t *iobuf_reserve(struct iobuf *b, size_t n);

/* Marks n bytes written at the pointer iobuf_reserve returned. */
static inline void iobuf_commit(struct iobuf *b, size_t n)
{
  b->end += n;
}

/* Drops n bytes from the front. */
void iobuf_consume(struct iobuf *b, size_t n);

/* Appends len bytes; returns 0 or -1 when out of memory. */
int iobuf_append(struct iobuf *b, const void *src, size_t len);

/* One read(2) of up to max bytes into the end. Returns what read returned. */
ssize_t iobuf_read_fd(struct iobuf *b, int fd, size_t max);

/* Writes as much of the buffer as the socket takes, consuming it. Returns
 * bytes written (0 when the socket is full) or -1 on an error (EPIPE when
 * the peer has gone; never a SIGPIPE). fd must be a socket. */
ssize_t iobuf_write_fd(struct iobuf *b, int fd);

#endif
