/* window.c - outstanding requests: ref allocation, matching and expiry.
 *
 * Slots live in one array with a free list. The index maps a ref to its slot
 * by linear probing at most half full, with backward-shift deletion (no
 * tombstones, so lookups never degrade). The slots of outstanding requests
 * form a doubly linked list in send-time order; a new request is linked in
 * from the newest end, which is one step when the clock does not go back.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdlib.h>
#include <string.h>
#include "window.h"

#define NIL UINT32_MAX

struct window_slot {
  struct window_entry entry;
  uint32_t older;          /* send-time list; `newer` also links the free list */
  uint32_t newer;
};

struct window {
  uint32_t ref_first;
  uint32_t ref_count;
  uint32_t next;           /* offset from ref_first of the next ref to try */
  unsigned capacity;
  unsigned outstanding;
  uint32_t oldest;
  uint32_t newest;
  uint32_t free_head;
  unsigned index_bits;
  uint32_t *index;         /* slot number + 1; 0 = empty */
  struct window_slot slots[];
};

static size_t index_size(const struct window *w)
{
  return (size_t)1 << w->index_bits;
}

/* Fibonacci hashing: consecutive refs (the usual case) spread evenly. */
static size_t home(const struct window *w, uint32_t ref)
{
  return (uint32_t)(ref * 2654435769u) >> (32 - w->index_bits);
}

/* Position in the index of ref, or NIL. */
static uint32_t index_find(const struct window *w, uint32_t ref)
{
  size_t mask = index_size(w) - 1;
  for (size_t i = home(w, ref); w->index[i]; i = (i + 1) & mask)
    if (w->slots[w->index[i] - 1].entry.ref == ref)
      return (uint32_t)i;
  return NIL;
}

static void index_insert(struct window *w, uint32_t ref, uint32_t slot)
{
  size_t mask = index_size(w) - 1, i = home(w, ref);
  while (w->index[i])
    i = (i + 1) & mask;
  w->index[i] = slot + 1;
}

/* Empties position hole and moves later members of its probe run back, so
 * every entry stays reachable from its home position. */
static void index_delete(struct window *w, size_t hole)
{
  size_t mask = index_size(w) - 1;
  for (size_t j = (hole + 1) & mask; w->index[j]; j = (j + 1) & mask) {
    size_t h = home(w, w->slots[w->index[j] - 1].entry.ref);
    /* The entry at j may fill the hole unless its home lies cyclically in (hole, j]. */
    if (((j - h) & mask) >= ((j - hole) & mask)) {
      w->index[hole] = w->index[j];
      hole = j;
    }
  }
  w->index[hole] = 0;
}

static void list_unlink(struct window *w, uint32_t slot)
{
  struct window_slot *s = &w->slots[slot];
  if (s->older != NIL)
    w->slots[s->older].newer = s->newer;
  else
    w->oldest = s->newer;
  if (s->newer != NIL)
    w->slots[s->newer].older = s->older;
  else
    w->newest = s->older;
}

/* Links slot in after the newest request sent no later than it. */
static void list_insert(struct window *w, uint32_t slot)
{
  struct window_slot *s = &w->slots[slot];
  uint32_t older = w->newest;
  while (older != NIL && w->slots[older].entry.sent_ms > s->entry.sent_ms)
    older = w->slots[older].older;
  s->older = older;
  s->newer = older != NIL ? w->slots[older].newer : w->oldest;
  if (s->older != NIL)
    w->slots[s->older].newer = slot;
  else
    w->oldest = slot;
  if (s->newer != NIL)
    w->slots[s->newer].older = slot;
  else
    w->newest = slot;
}

struct window *window_create(uint32_t ref_first, uint32_t ref_count, unsigned capacity)
{
  if (ref_count == 0 || (uint64_t)ref_first + ref_count - 1 > UINT32_MAX)
    return NULL;
  if (capacity > ref_count)
    capacity = ref_count;
  if (capacity > WINDOW_CAPACITY_MAX)
    capacity = WINDOW_CAPACITY_MAX;
  if (capacity < 1)
    capacity = 1;
  unsigned bits = 1;
  while (((size_t)1 << bits) < 2 * (size_t)capacity)
    bits++;
  size_t slots_size = sizeof(struct window) + capacity * sizeof(struct window_slot);
  struct window *w = malloc(slots_size + ((size_t)1 << bits) * sizeof(uint32_t));
  if (!w)
    return NULL;
  w->ref_first = ref_first;
  w->ref_count = ref_count;
  w->capacity = capacity;
  w->index_bits = bits;
  w->index = (uint32_t *)((char *)w + slots_size);
  window_reset(w);
  return w;
}

void window_destroy(struct window *w)
{
  free(w);
}

void window_reset(struct window *w)
{
  memset(w->index, 0, index_size(w) * sizeof *w->index);
  for (unsigned i = 0; i < w->capacity; i++)
    w->slots[i].newer = i + 1 < w->capacity ? i + 1 : NIL;
  w->free_head = 0;
  w->oldest = w->newest = NIL;
  w->outstanding = 0;
  w->next = 0;
}

int window_alloc(struct window *w, void *cookie, unsigned tag, uint64_t now_ms, uint32_t *ref)
{
  if (w->outstanding >= w->capacity)
    return WINDOW_E_FULL;
  /* Fewer than ref_count refs are outstanding, so this ends within one turn. */
  uint32_t candidate;
  do {
    candidate = w->ref_first + w->next;
    w->next = w->next + 1 == w->ref_count ? 0 : w->next + 1;
  } while (index_find(w, candidate) != NIL);
  uint32_t slot = w->free_head;
  w->free_head = w->slots[slot].newer;
  w->slots[slot].entry = (struct window_entry){ candidate, tag, cookie, now_ms };
  index_insert(w, candidate, slot);
  list_insert(w, slot);
  w->outstanding++;
  *ref = candidate;
  return 0;
}

const struct window_entry *window_find(const struct window *w, uint32_t ref)
{
  uint32_t pos = index_find(w, ref);
  return pos == NIL ? NULL : &w->slots[w->index[pos] - 1].entry;
}

int window_answer(struct window *w, uint32_t ref, struct window_entry *entry)
{
  uint32_t pos = index_find(w, ref);
  if (pos == NIL)
    return WINDOW_E_UNKNOWN;
  uint32_t slot = w->index[pos] - 1;
  if (entry)
    *entry = w->slots[slot].entry;
  index_delete(w, pos);
  list_unlink(w, slot);
  w->slots[slot].newer = w->free_head;
  w->free_head = slot;
  w->outstanding--;
  return 0;
}

size_t window_expire(struct window *w, uint64_t now_ms, uint64_t timeout_ms,
                     struct window_entry *out, size_t cap)
{
  size_t n = 0;
  const struct window_entry *e;
  /* The list is in send-time order: stop at the first one not yet due. */
  while (n < cap && (e = window_oldest(w)) && e->sent_ms <= now_ms &&
         now_ms - e->sent_ms >= timeout_ms)
    window_answer(w, e->ref, &out[n++]);
  return n;
}

const struct window_entry *window_oldest(const struct window *w)
{
  return w->oldest == NIL ? NULL : &w->slots[w->oldest].entry;
}

unsigned window_outstanding(const struct window *w)
{
  return w->outstanding;
}

unsigned window_capacity(const struct window *w)
{
  return w->capacity;
}
