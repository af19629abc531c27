/* timerheap.h - many pending deadlines in one structure (a 4-ary min-heap).
 *
 * Holds hundreds of thousands of timers (pending receipts, retries) in one
 * array instead of a thread or a sleep each. Timers with equal deadlines fire
 * in the order they were added. Not thread-safe: one owner.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_TIMERHEAP_H
#define EMG_TIMERHEAP_H

#include <stddef.h>
#include <stdint.h>

struct timerheap_entry {
  uint64_t deadline;  /* caller's clock, e.g. monotonic ms */
  uint64_t order;     /* insertion order, breaks ties */
  void *data;         /* the caller's; the heap never touches it */
};

struct timerheap {
  struct timerheap_entry *entries;
  size_t count;
  size_t capacity;
  size_t max_count;   /* 0 = unbounded */
  uint64_t next_order;
};

/* max_count bounds the heap (timerheap_push fails beyond it); 0 = unbounded. */
void timerheap_init(struct timerheap *h, size_t max_count);
void timerheap_destroy(struct timerheap *h);

/* Adds a timer. Returns 0, or -1 when full or out of memory. */
int timerheap_push(struct timerheap *h, uint64_t deadline, void *data);

/* If the earliest timer is due at or before now, removes it, stores its data
 * in *data and returns 1; else returns 0. */
int timerheap_pop_due(struct timerheap *h, uint64_t now, void **data);

/* Deadline of the earliest timer, or UINT64_MAX when empty. */
uint64_t timerheap_next(const struct timerheap *h);

static inline size_t timerheap_count(const struct timerheap *h)
{
  return h->count;
}

#endif
