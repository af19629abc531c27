/* ids.h - 64-bit message ids: node_id in the top 16 bits, a sequence in the
 * low 48. Threads take id_window ids at a time from one shared counter, so
 * allocating an id is a thread-local increment almost always.
 *
 * With a database, the sequence numbers come in ranges from a sequence that
 * every node shares (ids_offer), so that even two nodes given the same
 * node_id never hand out the same id. A thread's window is then cut from
 * the current range under a lock, once per window. When a range runs out
 * and no next one has come (the database is away), the node goes on past
 * it on its own, counted in `unbacked`: its node_id still keeps its ids
 * apart from other nodes', and the next range starts above them.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_IDS_H
#define EMG_IDS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define IDS_SEQ_BITS 48
#define IDS_SEQ_MASK ((UINT64_C(1) << IDS_SEQ_BITS) - 1)

struct ids {
  uint64_t prefix;                /* node_id << 48 */
  uint64_t window;                /* ids taken at a time */
  _Atomic uint64_t next;          /* next sequence not yet handed to a thread */
  /* Told of each window taken (its end, as a full id), so that a journal can
   * record how far ids have gone and a restart never hands them out again. */
  void (*on_window)(void *ctx, uint64_t end);
  void *on_window_ctx;
  /* ranges from a shared sequence (ids_use_ranges) */
  bool ranged;
  pthread_mutex_t range_lock;
  uint64_t range_first, range_end;/* the range next is in */
  uint64_t spare_first, spare_end;/* the next range, offered ahead of need; empty when equal */
  _Atomic uint64_t unbacked;      /* windows taken past the ranges (the database was away) */
};

/* A thread's current window of ids: [next, end). */
struct id_block {
  uint64_t next;
  uint64_t end;
};

/* first: the first sequence number to hand out (1 on a fresh node; after a
 * restart, above every id used before). */
void ids_init(struct ids *ids, unsigned node_id, unsigned window, uint64_t first);

/* From now on windows are cut from ranges given by ids_offer; the first
 * range is [first, first + count). Call before any thread takes ids. */
void ids_use_ranges(struct ids *ids, uint64_t first, uint64_t count);

/* Offers the range that follows when the current one runs out. Returns
 * false when a spare range is already waiting (it is kept). Any thread. */
bool ids_offer(struct ids *ids, uint64_t first, uint64_t count);

/* Whether a next range should be fetched now: none waits and the current
 * one is past its half. Any thread. */
bool ids_want_range(struct ids *ids);

/* The highest sequence number handed to a thread so far, + 1. */
uint64_t ids_high_water(struct ids *ids);

/* Refills b (the slow path of ids_next). */
void ids_refill(struct ids *ids, struct id_block *b);

/* The next id, refilling the thread's block when it runs out. */
static inline uint64_t ids_next(struct ids *ids, struct id_block *b)
{
  if (b->next == b->end)
    ids_refill(ids, b);
  return ids->prefix | (b->next++ & IDS_SEQ_MASK);
}

static inline unsigned ids_node(uint64_t id)
{
  return (unsigned)(id >> IDS_SEQ_BITS);
}

#endif
