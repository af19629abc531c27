/* timerheap.c - a 4-ary min-heap of deadlines.
 *
 * Four children a node, side by side: a heap of hundreds of thousands of
 * timers is half as deep as a binary one, and a pop's walk down fetches
 * one run of 96 bytes a level instead of two scattered entries, so it
 * misses the cache about half as often.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdlib.h>
#include "timerheap.h"

#define ARITY 4

static int earlier(const struct timerheap_entry *a, const struct timerheap_entry *b)
{
  return a->deadline < b->deadline || (a->deadline == b->deadline && a->order < b->order);
}

void timerheap_init(struct timerheap *h, size_t max_count)
{
  h->entries = NULL;
  h->count = 0;
  h->capacity = 0;
  h->max_count = max_count;
  h->next_order = 0;
}

void timerheap_destroy(struct timerheap *h)
{
  free(h->entries);
  h->entries = NULL;
  h->count = h->capacity = 0;
}

int timerheap_push(struct timerheap *h, uint64_t deadline, void *data)
{
  if (h->max_count && h->count >= h->max_count)
    return -1;
  if (h->count == h->capacity) {
    size_t cap = h->capacity ? h->capacity * 2 : 1024;
    struct timerheap_entry *e = realloc(h->entries, cap * sizeof *e);
    if (!e)
      return -1;
    h->entries = e;
    h->capacity = cap;
  }
  struct timerheap_entry item = { deadline, h->next_order++, data };
  size_t i = h->count++;
  while (i > 0) {
    size_t parent = (i - 1) / ARITY;
    if (!earlier(&item, &h->entries[parent]))
      break;
    h->entries[i] = h->entries[parent];
    i = parent;
  }
  h->entries[i] = item;
  return 0;
}

int timerheap_pop_due(struct timerheap *h, uint64_t now, void **data)
{
  if (h->count == 0 || h->entries[0].deadline > now)
    return 0;
  *data = h->entries[0].data;
  struct timerheap_entry last = h->entries[--h->count];
  size_t i = 0;
  for (;;) {
    size_t first = ARITY * i + 1, child = first;
    if (first >= h->count)
      break;
    size_t end = first + ARITY < h->count ? first + ARITY : h->count;
    for (size_t k = first + 1; k < end; k++)
      if (earlier(&h->entries[k], &h->entries[child]))
        child = k;
    if (!earlier(&h->entries[child], &last))
      break;
    h->entries[i] = h->entries[child];
    i = child;
  }
  if (h->count)
    h->entries[i] = last;
  return 1;
}

uint64_t timerheap_next(const struct timerheap *h)
{
  return h->count ? h->entries[0].deadline : UINT64_MAX;
}
