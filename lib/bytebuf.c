/* bytebuf.c - a byte buffer that only grows at its end.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include "bytebuf.h"

int bytebuf_reserve(struct bytebuf *b, size_t more, size_t first)
{
  if (b->len + more <= b->cap)
    return 0;
  size_t cap = b->cap ? b->cap : first;
  while (cap < b->len + more)
    cap *= 2;
  uint8_t *grown = realloc(b->p, cap);
  if (!grown)
    return -1;
  b->p = grown;
  b->cap = cap;
  return 0;
}

void bytebuf_free(struct bytebuf *b)
{
  free(b->p);
  *b = (struct bytebuf){ 0 };
}
