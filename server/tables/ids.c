/* ids.c - message id allocation.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stddef.h>
#include "ids.h"

void ids_init(struct ids *ids, unsigned node_id, unsigned window, uint64_t first)
{
  ids->prefix = (uint64_t)(node_id & 0xFFFF) << IDS_SEQ_BITS;
  ids->window = window ? window : 1;
  atomic_init(&ids->next, first ? first : 1);
  ids->on_window = NULL;
  ids->on_window_ctx = NULL;
  ids->ranged = false;
  pthread_mutex_init(&ids->range_lock, NULL);
  ids->range_first = ids->range_end = ids->spare_first = ids->spare_end = 0;
  atomic_init(&ids->unbacked, 0);
}

void ids_use_ranges(struct ids *ids, uint64_t first, uint64_t count)
{
  atomic_store(&ids->next, first);
  ids->range_first = first;
  ids->range_end = first + count;
  ids->ranged = true;
}

bool ids_offer(struct ids *ids, uint64_t first, uint64_t count)
{
  pthread_mutex_lock(&ids->range_lock);
  bool taken = ids->spare_first == ids->spare_end;
  if (taken) {
    ids->spare_first = first;
    ids->spare_end = first + count;
  }
  pthread_mutex_unlock(&ids->range_lock);
  return taken;
}

bool ids_want_range(struct ids *ids)
{
  pthread_mutex_lock(&ids->range_lock);
  uint64_t next = atomic_load(&ids->next);
  bool want = ids->ranged && ids->spare_first == ids->spare_end &&
              next >= ids->range_first + (ids->range_end - ids->range_first) / 2;
  pthread_mutex_unlock(&ids->range_lock);
  return want;
}

uint64_t ids_high_water(struct ids *ids)
{
  return atomic_load(&ids->next);
}

void ids_refill(struct ids *ids, struct id_block *b)
{
  if (!ids->ranged) {
    b->next = atomic_fetch_add(&ids->next, ids->window);
  } else {
    pthread_mutex_lock(&ids->range_lock);
    uint64_t next = atomic_load(&ids->next);
    if (next + ids->window > ids->range_end) {
      /* A spare below next came too late (ids went on alone meanwhile): unusable. */
      if (ids->spare_first != ids->spare_end && ids->spare_first >= next) {
        next = ids->spare_first;
        ids->range_first = ids->spare_first;
        ids->range_end = ids->spare_end;
      } else {
        atomic_fetch_add(&ids->unbacked, 1);   /* on alone, past the range */
      }
      ids->spare_first = ids->spare_end = 0;
    }
    b->next = next;
    atomic_store(&ids->next, next + ids->window);
    pthread_mutex_unlock(&ids->range_lock);
  }
  b->end = b->next + ids->window;
  if (ids->on_window)
    ids->on_window(ids->on_window_ctx, ids->prefix | (b->end & IDS_SEQ_MASK));
}
