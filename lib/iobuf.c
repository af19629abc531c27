/* iobuf.c - growable byte buffer for sockets.
 * SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "iobuf.h"

void iobuf_init(struct iobuf *b)
{
  b->data = NULL;
  b->start = b->end = b->capacity = 0;
}

void iobuf_destroy(struct iobuf *b)
{
  free(b->data);
  iobuf_init(b);
}

uint8_t *iobuf_reserve(struct iobuf *b, size_t n)
{
  if (b->capacity - b->end >= n)
    return b->data + b->end;
  size_t used = b->end - b->start;
  if (b->start && b->capacity - used >= n && used <= b->capacity / 2) {
    memmove(b->data, b->data + b->start, used);
  } else {
    size_t cap = b->capacity ? b->capacity : 4096;
    while (cap - used < n)
      cap *= 2;
    uint8_t *data = malloc(cap);
    if (!data)
      return NULL;
    if (used)
      memcpy(data, b->data + b->start, used);
    free(b->data);
    b->data = data;
    b->capacity = cap;
  }
  b->start = 0;
  b->end = used;
  return b->data + b->end;
}

void iobuf_consume(struct iobuf *b, size_t n)
{
  b->start += n;
  if (b->start >= b->end)
    b->start = b->end = 0;
}

int iobuf_append(struct iobuf *b, const void *src, size_t len)
{
  uint8_t *dst = iobuf_reserve(b, len);
  if (!dst)
    return -1;
  memcpy(dst, src, len);
  b->end += len;
  return 0;
}

ssize_t iobuf_read_fd(struct iobuf *b, int fd, size_t max)
{
  uint8_t *dst = iobuf_reserve(b, max);
  if (!dst) {
    errno = ENOMEM;
    return -1;
  }
  ssize_t n = read(fd, dst, max);
  if (n > 0)
    b->end += (size_t)n;
  return n;
}

ssize_t iobuf_write_fd(struct iobuf *b, int fd)
{
  size_t total = 0;
  while (iobuf_len(b)) {
    /* MSG_NOSIGNAL: a peer that has gone is an EPIPE error, not a SIGPIPE. */
    ssize_t n = send(fd, iobuf_head(b), iobuf_len(b), MSG_NOSIGNAL);
    if (n == -1) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        break;
      return -1;
    }
    iobuf_consume(b, (size_t)n);
    total += (size_t)n;
  }
  return (ssize_t)total;
}
