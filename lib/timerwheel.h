/* timerwheel.h - many deadlines a bounded time ahead, in slots of one tick.
 *
 * For timers by the hundred thousand that are mostly set a few seconds
 * out: a sink's pending receipts. A push appends the timer to its tick's
 * slot and a pop takes it from there, touching only the timer and its
 * slot, where a heap of that size walks a path of cache misses at every
 * pop. Deadlines further out than the wheel spans wait in a timerheap until
 * they come within it.
 *
 * Timers fire in deadline order, equal deadlines in the order they were
 * pushed; one pushed with a deadline already passed is due at once, after
 * those passed before it. Intrusive: the caller's own struct holds the
 * node, so a push allocates nothing. Not thread-safe: one owner.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_TIMERWHEEL_H
#define EMG_TIMERWHEEL_H

#include <stddef.h>
#include <stdint.h>
#include "timerheap.h"

struct timerwheel_node {
  struct timerwheel_node *next;
  uint64_t deadline;
};

struct timerwheel_list {
  struct timerwheel_node *head, *tail;
};

struct timerwheel {
  struct timerwheel_list *slots;  /* slot d & mask holds the deadline d */
  size_t mask;
  uint64_t cursor;                /* every deadline before it has been handed out */
  struct timerwheel_list late;    /* pushed with a deadline before the cursor */
  size_t near;                    /* timers in the slots and late */
  struct timerheap far;           /* deadlines beyond cursor + mask */
};

/* A wheel of 2^slots_log2 ticks (the span pushes go straight into a slot)
 * starting at tick now. Returns 0, or -1 when out of memory. */
int timerwheel_init(struct timerwheel *w, unsigned slots_log2, uint64_t now);
void timerwheel_destroy(struct timerwheel *w);

/* Adds node to fire at deadline. Returns 0, or -1 when a far deadline
 * cannot be held (out of memory). */
int timerwheel_push(struct timerwheel *w, struct timerwheel_node *node, uint64_t deadline);

/* The next timer due at or before now, removed; NULL when none is. now
 * never goes back between calls. */
struct timerwheel_node *timerwheel_pop_due(struct timerwheel *w, uint64_t now);

static inline size_t timerwheel_count(const struct timerwheel *w)
{
  return w->near + timerheap_count(&w->far);
}

#endif
