/* bytebuf.h - a byte buffer that only grows at its end: journal batches,
 * COPY data, spill reads. (Socket buffers, which are also consumed from
 * the front, are iobuf.h's.)
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_BYTEBUF_H
#define EMG_BYTEBUF_H

#include <stddef.h>
#include <stdint.h>

struct bytebuf {
  uint8_t *p;
  size_t len, cap;
};

/* Room for `more` bytes past len: the capacity doubles from `first` (the
 * size of the first allocation) until they fit. 0, or -1 when out of memory
 * (the buffer is unchanged then). */
int bytebuf_reserve(struct bytebuf *b, size_t more, size_t first);

void bytebuf_free(struct bytebuf *b);

#endif
