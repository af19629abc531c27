/* history.c - a ring of recent message events.
 *
 * Writers claim a slot with one atomic increment and fill it; each slot has
 * a sequence word, written odd before and even after the fill (a seqlock),
 * so that a reader walking the ring while it is written skips a slot it saw
 * half-written instead of reporting garbage. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bigmem.h"
#include "history.h"

struct slot {
  _Atomic uint64_t seq;       /* 2 * (claim number + 1) when complete; odd while written */
  struct history_entry e;
};

struct history {
  struct slot *slots;
  size_t mask;                /* entries - 1; slots NULL when keeping nothing */
  _Atomic uint64_t next;      /* claims so far */
};

struct history *history_create(size_t entries)
{
  struct history *h = calloc(1, sizeof *h);
  if (!h || !entries)
    return h;
  size_t n = 1;
  while (n < entries)
    n <<= 1;
  h->slots = bigmem_alloc(n * sizeof *h->slots);
  if (!h->slots) {
    free(h);
    return NULL;
  }
  h->mask = n - 1;
  return h;
}

void history_destroy(struct history *h)
{
  if (!h)
    return;
  if (h->slots)
    bigmem_free(h->slots, (h->mask + 1) * sizeof *h->slots);
  free(h);
}

void history_add(struct history *h, uint64_t id, enum history_event event, uint16_t connector,
                 uint8_t state, uint32_t code, const char *detail)
{
  if (!h || !h->slots)
    return;
  uint64_t n = atomic_fetch_add_explicit(&h->next, 1, memory_order_relaxed);
  struct slot *s = &h->slots[n & h->mask];
  atomic_store_explicit(&s->seq, 2 * n + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  s->e.id = id;
  s->e.time_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
  s->e.event = (uint8_t)event;
  s->e.state = state;
  s->e.connector = connector;
  s->e.code = code;
  if (detail)
    snprintf(s->e.detail, sizeof s->e.detail, "%s", detail);
  else
    s->e.detail[0] = '\0';
  atomic_store_explicit(&s->seq, 2 * n + 2, memory_order_release);
}

size_t history_find(const struct history *h, uint64_t id, struct history_entry *out, size_t max)
{
  if (!h || !h->slots)
    return 0;
  struct history *m = (struct history *)h;
  uint64_t end = atomic_load_explicit(&m->next, memory_order_acquire);
  uint64_t span = end < h->mask + 1 ? end : h->mask + 1;
  size_t found = 0;
  /* Oldest first, so that the events come out in the order they happened. */
  for (uint64_t n = end - span; n < end && found < max; n++) {
    struct slot *s = &m->slots[n & h->mask];
    uint64_t before = atomic_load_explicit(&s->seq, memory_order_acquire);
    if (before != 2 * n + 2 || s->e.id != id)
      continue;
    struct history_entry copy = s->e;
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&s->seq, memory_order_relaxed) == before && copy.id == id)
      out[found++] = copy;
  }
  return found;
}

size_t history_capacity(const struct history *h)
{
  return h && h->slots ? h->mask + 1 : 0;
}

uint64_t history_recorded(const struct history *h)
{
  return h ? atomic_load_explicit(&((struct history *)h)->next, memory_order_relaxed) : 0;
}

const char *history_event_name(uint8_t event)
{
  static const char *const names[] = { "?", "received", "queued", "sent", "retry", "failed",
                                       "receipt", "receipt_queued", "receipt_delivered" };
  return event < sizeof names / sizeof names[0] ? names[event] : "?";
}
