/* ids.h - 64-bit message ids: node_id in the top 16 bits, a sequence in the
 * low 48. Threads take id_window ids at a time from one shared counter, so
 * allocating an id is a thread-local increment almost always. */
#ifndef EMG_IDS_H
#define EMG_IDS_H

#include <stdatomic.h>
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
};

/* A thread's current window of ids: [next, end). */
struct id_block {
  uint64_t next;
  uint64_t end;
};

/* first: the first sequence number to hand out (1 on a fresh node; after a
 * restart, above every id used before). */
void ids_init(struct ids *ids, unsigned node_id, unsigned window, uint64_t first);

/* The next id, refilling the thread's block from the shared counter when
 * it runs out. */
static inline uint64_t ids_next(struct ids *ids, struct id_block *b)
{
  if (b->next == b->end) {
    b->next = atomic_fetch_add(&ids->next, ids->window);
    b->end = b->next + ids->window;
    if (ids->on_window)
      ids->on_window(ids->on_window_ctx, ids->prefix | (b->end & IDS_SEQ_MASK));
  }
  return ids->prefix | (b->next++ & IDS_SEQ_MASK);
}

static inline unsigned ids_node(uint64_t id)
{
  return (unsigned)(id >> IDS_SEQ_BITS);
}

#endif
