/* history.c - a ring of recent message events.
 *
 * Writers claim slots HISTORY_CLAIM at a time with one atomic increment (a
 * shared counter bumped for every event would bounce between the cores at
 * millions of events a second) and fill them; each slot has a sequence
 * word, written odd before and even after the fill (a seqlock), so that a
 * reader walking the ring while it is written skips a slot it saw
 * half-written instead of reporting garbage. Since threads fill their own
 * runs of slots, a message's events are sorted by time when read. Times
 * come from the coarse clock: a few milliseconds of resolution, at a
 * fraction of the cost.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bigmem.h"
#include "history.h"
#include "strutil.h"

struct slot {
  _Atomic uint64_t seq;       /* 2 * (claim number + 1) when complete; odd while written */
  struct history_entry e;
};

#define HISTORY_CLAIM 32

struct history {
  uint64_t serial;            /* tells a thread's run of slots from one of a freed history */
  struct slot *slots;
  size_t mask;                /* entries - 1; slots NULL when keeping nothing */
  _Atomic uint64_t next;      /* claims so far */
};

struct history *history_create(size_t entries)
{
  static _Atomic uint64_t serials;
  struct history *h = calloc(1, sizeof *h);
  if (!h)
    return NULL;
  h->serial = atomic_fetch_add(&serials, 1) + 1;
  if (!entries)
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
  /* A run that other threads' claims have since passed by half the ring is
   * given up: its slots are about to hold their newer events. */
  static _Thread_local struct { uint64_t serial, next, end; } run;
  if (run.serial != h->serial || run.next == run.end ||
      atomic_load_explicit(&h->next, memory_order_relaxed) - run.end > (h->mask + 1) / 2) {
    run.serial = h->serial;
    run.next = atomic_fetch_add_explicit(&h->next, HISTORY_CLAIM, memory_order_relaxed);
    run.end = run.next + HISTORY_CLAIM;
  }
  uint64_t n = run.next++;
  struct slot *s = &h->slots[n & h->mask];
  /* Two writers in one slot (one of them a whole lap late) would mix their
   * fields: the second to come leaves the slot to the first, and the first
   * publishes only if nobody came meanwhile. */
  uint64_t odd = 2 * n + 1;
  if (atomic_exchange_explicit(&s->seq, odd, memory_order_acq_rel) & 1)
    return;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME_COARSE, &now);
  s->e.id = id;
  s->e.time_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
  s->e.event = (uint8_t)event;
  s->e.state = state;
  s->e.connector = connector;
  s->e.code = code;
  str_copy(s->e.detail, sizeof s->e.detail, detail);   /* several a message: no snprintf */
  atomic_compare_exchange_strong_explicit(&s->seq, &odd, 2 * n + 2, memory_order_release, memory_order_relaxed);
}

/* Where an event comes among those of the same millisecond: in the order
 * of the list, but its recipient right after a message's receipt. */
static unsigned event_rank(uint8_t event)
{
  return event == HISTORY_ADDRESSED ? 2 * HISTORY_RECEIVED + 1 : 2u * event;
}

/* Earlier in the message's life: by time, then by the order of events. */
static bool entry_before(const struct history_entry *a, const struct history_entry *b)
{
  return a->time_ms < b->time_ms || (a->time_ms == b->time_ms && event_rank(a->event) < event_rank(b->event));
}

size_t history_find(const struct history *h, uint64_t id, struct history_entry *out, size_t max)
{
  if (!h || !h->slots)
    return 0;
  struct history *m = (struct history *)h;
  size_t found = 0;
  /* Every slot: claimed runs are filled at the writers' pace, so a slot's
   * own sequence word, not the claim counter, says what it holds. */
  for (size_t i = 0; i <= h->mask && found < max; i++) {
    struct slot *s = &m->slots[i];
    uint64_t before = atomic_load_explicit(&s->seq, memory_order_acquire);
    if (!before || (before & 1) || ((before / 2 - 1) & h->mask) != i || s->e.id != id)
      continue;
    struct history_entry copy = s->e;
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&s->seq, memory_order_relaxed) == before && copy.id == id)
      out[found++] = copy;
  }
  /* Insertion sort: a message has a handful of events. */
  for (size_t i = 1; i < found; i++)
    for (size_t j = i; j > 0 && entry_before(&out[j], &out[j - 1]); j--) {
      struct history_entry t = out[j];
      out[j] = out[j - 1];
      out[j - 1] = t;
    }
  return found;
}

size_t history_search(const struct history *h, enum history_event event, const char *detail, uint64_t *ids,
                      size_t max)
{
  if (!h || !h->slots || !max)
    return 0;
  struct history *m = (struct history *)h;
  size_t found = 0;
  int64_t times[64];
  if (max > 64)
    max = 64;
  for (size_t i = 0; i <= h->mask; i++) {
    struct slot *s = &m->slots[i];
    uint64_t before = atomic_load_explicit(&s->seq, memory_order_acquire);
    if (!before || (before & 1) || s->e.event != event || strncmp(s->e.detail, detail, HISTORY_DETAIL_LEN) != 0)
      continue;
    struct history_entry copy = s->e;
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&s->seq, memory_order_relaxed) != before)
      continue;
    /* Keep the newest max, newest first: an insertion into a short list. */
    size_t at = found;
    while (at > 0 && times[at - 1] < copy.time_ms)
      at--;
    if (at >= max)
      continue;
    size_t last = found < max ? found : max - 1;
    memmove(&ids[at + 1], &ids[at], (last - at) * sizeof *ids);
    memmove(&times[at + 1], &times[at], (last - at) * sizeof *times);
    ids[at] = copy.id;
    times[at] = copy.time_ms;
    if (found < max)
      found++;
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
                                       "receipt", "receipt_queued", "receipt_delivered", "receipt_given_up",
                                       "rerouted", "scheduled", "joined", "receipt_held", "replaced", "to" };
  return event < sizeof names / sizeof names[0] ? names[event] : "?";
}
