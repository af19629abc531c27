/* grace.c - epoch-based reclamation.
 *
 * Why a reader blocks the free of what it may hold. The domain has a global
 * epoch E (from 1, only grows). A reader's outermost grace_enter reads E and
 * publishes it in its slot, then fences (seq_cst), and only then loads a
 * shared pointer; its last grace_leave stores 0 (release). grace_retire
 * tags the object with E as it bumps E, then fences; the caller swapped the
 * pointer before. grace_reclaim fences, reads every slot (acquire) and frees
 * the objects whose tag is below the smallest epoch published.
 *
 * Take a reader that loaded the old pointer p, retired with tag t:
 *  - it read E before the bump: had it read the bumped value, the swap
 *    (which comes before the bump) would be visible to it and its later
 *    load would have found the new pointer. So its slot shows an epoch <= t
 *    from its enter to its leave.
 *  - the reclaimer cannot miss that slot. The retire's fence follows the
 *    swap and precedes the reclaimer's fence; the reader's fence follows its
 *    slot store and precedes its pointer load. Seq_cst fences are in one
 *    order: if the reader's comes before the reclaimer's, the reclaimer sees
 *    the slot; if after, the retire's fence came before it too and the
 *    reader's load finds the new pointer, not p.
 * So p stays until that reader's leave, whose release store the reclaimer
 * reads with acquire: the reader's last use of p happens before free_fn(p).
 * A reader that enters after the retire reads the bumped E (> t) and does
 * not hold p. Retired objects are listed newest first with falling tags, so
 * a reclaim cuts the list at the first tag below the oldest reader's epoch.
 *
 * Slots: one per thread and domain, taken on its first enter (kept with
 * pthread_setspecific), given back by the key's destructor at thread exit.
 * A block of GRACE_BLOCK_SLOTS, one cache line per slot (readers do not
 * share lines); more blocks are appended to a list, never moved, so a slot
 * pointer stays valid for the domain's life. A thread that cannot get a slot
 * (no memory for a block) counts itself in `shared_readers` instead: while
 * that is not 0, the reclaimer takes the oldest epoch as 1 and frees
 * nothing, by the same fence argument.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "clock.h"
#include "grace.h"

#define CACHE_LINE 64

struct slot {
  _Alignas(CACHE_LINE) _Atomic uint64_t epoch; /* 0: not inside; else E at the outermost enter */
  _Atomic bool taken;                          /* held by a thread */
  unsigned depth;                              /* the holder's nesting; only the holder touches it */
};

struct block {
  struct slot slots[GRACE_BLOCK_SLOTS];
  struct block *_Atomic next;
};

struct retired {
  void *p;
  void (*free_fn)(void *p);
  uint64_t epoch;                              /* E when it was retired */
  struct retired *next;
};

struct grace {
  _Alignas(CACHE_LINE) _Atomic uint64_t epoch; /* E: read by every enter, bumped by each retire */
  pthread_key_t key;                           /* this thread's slot */
  _Alignas(CACHE_LINE) _Atomic unsigned long shared_readers; /* inside without a slot */
  pthread_mutex_t lock;                        /* the retired list */
  struct retired *retired;                     /* newest first */
  size_t pending;
  pthread_mutex_t grow_lock;                   /* appending a block */
  struct block first;
};

/* This thread's sections under a shared count, in any domain: while it has
 * one open it takes no slot, so that its leaves match its enters. */
static _Thread_local unsigned shared_depth;

static void give_back(void *p)
{
  struct slot *s = p;
  s->depth = 0;
  atomic_store_explicit(&s->epoch, 0, memory_order_release);
  atomic_store_explicit(&s->taken, false, memory_order_release);
}

static void block_init(struct block *b)
{
  for (size_t i = 0; i < GRACE_BLOCK_SLOTS; i++) {
    atomic_init(&b->slots[i].epoch, 0);
    atomic_init(&b->slots[i].taken, false);
    b->slots[i].depth = 0;
  }
  atomic_init(&b->next, NULL);
}

struct grace *grace_create(void)
{
  struct grace *g = aligned_alloc(_Alignof(struct grace), sizeof *g);
  if (!g)
    return NULL;
  if (pthread_key_create(&g->key, give_back) != 0) {
    free(g);
    return NULL;
  }
  atomic_init(&g->epoch, 1);
  atomic_init(&g->shared_readers, 0);
  pthread_mutex_init(&g->lock, NULL);
  pthread_mutex_init(&g->grow_lock, NULL);
  g->retired = NULL;
  g->pending = 0;
  block_init(&g->first);
  return g;
}

/* A free slot, or a new block's first; NULL when a block cannot be had. */
static struct slot *take_slot(struct grace *g)
{
  struct block *b = &g->first;
  for (;;) {
    for (size_t i = 0; i < GRACE_BLOCK_SLOTS; i++) {
      struct slot *s = &b->slots[i];
      bool free_slot = false;
      if (!atomic_load_explicit(&s->taken, memory_order_relaxed) &&
          atomic_compare_exchange_strong_explicit(&s->taken, &free_slot, true, memory_order_acquire,
                                                  memory_order_relaxed))
        return s;
    }
    struct block *next = atomic_load_explicit(&b->next, memory_order_acquire);
    if (!next) {
      pthread_mutex_lock(&g->grow_lock);
      next = atomic_load_explicit(&b->next, memory_order_acquire);
      if (!next) {
        next = aligned_alloc(_Alignof(struct block), sizeof *next);
        if (!next) {
          pthread_mutex_unlock(&g->grow_lock);
          return NULL;
        }
        block_init(next);
        atomic_store_explicit(&next->slots[0].taken, true, memory_order_relaxed);
        atomic_store_explicit(&b->next, next, memory_order_release);
        pthread_mutex_unlock(&g->grow_lock);
        return &next->slots[0];
      }
      pthread_mutex_unlock(&g->grow_lock);
    }
    b = next;
  }
}

/* The thread's first enter on g (or one after a failed first). */
static struct slot *first_enter(struct grace *g)
{
  if (shared_depth)
    return NULL;
  struct slot *s = take_slot(g);
  if (s && pthread_setspecific(g->key, s) != 0) {
    give_back(s);
    s = NULL;
  }
  return s;
}

void grace_enter(struct grace *g)
{
  struct slot *s = pthread_getspecific(g->key);
  if (!s)
    s = first_enter(g);
  if (!s) {
    shared_depth++;
    atomic_fetch_add_explicit(&g->shared_readers, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    return;
  }
  if (s->depth++ == 0) {
    uint64_t e = atomic_load_explicit(&g->epoch, memory_order_acquire);
    atomic_store_explicit(&s->epoch, e, memory_order_relaxed);
    /* Before any load of a shared pointer: see the top of the file. */
    atomic_thread_fence(memory_order_seq_cst);
  }
}

void grace_leave(struct grace *g)
{
  struct slot *s = pthread_getspecific(g->key);
  if (!s) {
    if (shared_depth) {
      atomic_fetch_sub_explicit(&g->shared_readers, 1, memory_order_release);
      shared_depth--;
    }
    return;
  }
  if (s->depth == 0)   /* a leave without its enter: the slot is idle already */
    return;
  if (--s->depth == 0)
    atomic_store_explicit(&s->epoch, 0, memory_order_release);
}

int grace_retire(struct grace *g, void *p, void (*free_fn)(void *p), char *err, size_t err_len)
{
  if (!p)
    return 0;
  struct retired *r = malloc(sizeof *r);
  if (!r) {
    if (err && err_len)
      snprintf(err, err_len, "out of memory retiring an object: it is kept, not freed");
    return -1;
  }
  r->p = p;
  r->free_fn = free_fn ? free_fn : free;
  pthread_mutex_lock(&g->lock);
  /* Under the lock: the list stays in the order of the tags. */
  r->epoch = atomic_fetch_add_explicit(&g->epoch, 1, memory_order_seq_cst);
  atomic_thread_fence(memory_order_seq_cst);
  r->next = g->retired;
  g->retired = r;
  g->pending++;
  pthread_mutex_unlock(&g->lock);
  return 0;
}

/* The smallest epoch a reader inside has published; UINT64_MAX if none. */
static uint64_t oldest_reader(struct grace *g)
{
  if (atomic_load_explicit(&g->shared_readers, memory_order_acquire))
    return 1;
  uint64_t oldest = UINT64_MAX;
  for (struct block *b = &g->first; b; b = atomic_load_explicit(&b->next, memory_order_acquire))
    for (size_t i = 0; i < GRACE_BLOCK_SLOTS; i++) {
      uint64_t e = atomic_load_explicit(&b->slots[i].epoch, memory_order_acquire);
      if (e && e < oldest)
        oldest = e;
    }
  return oldest;
}

size_t grace_reclaim(struct grace *g)
{
  pthread_mutex_lock(&g->lock);
  atomic_thread_fence(memory_order_seq_cst);
  uint64_t oldest = oldest_reader(g);
  struct retired **at = &g->retired;
  while (*at && (*at)->epoch >= oldest)
    at = &(*at)->next;
  struct retired *done = *at;
  *at = NULL;
  size_t n = 0;
  for (struct retired *r = done; r; r = r->next)
    n++;
  g->pending -= n;
  pthread_mutex_unlock(&g->lock);
  /* Outside the lock: a free_fn may take its time (dlclose) or retire more. */
  while (done) {
    struct retired *next = done->next;
    done->free_fn(done->p);
    free(done);
    done = next;
  }
  return n;
}

size_t grace_pending(struct grace *g)
{
  pthread_mutex_lock(&g->lock);
  size_t n = g->pending;
  pthread_mutex_unlock(&g->lock);
  return n;
}

bool grace_wait(struct grace *g, unsigned timeout_ms)
{
  uint64_t deadline = clock_now_ns() + (uint64_t)timeout_ms * 1000000u;
  for (;;) {
    grace_reclaim(g);
    if (grace_pending(g) == 0)
      return true;
    uint64_t now = clock_now_ns();
    if (now >= deadline)
      return false;
    uint64_t nap = deadline - now < 1000000u ? deadline - now : 1000000u;
    nanosleep(&(struct timespec){ .tv_nsec = (long)nap }, NULL);
  }
}

size_t grace_slots(struct grace *g, size_t *taken)
{
  size_t total = 0, held = 0;
  for (struct block *b = &g->first; b; b = atomic_load_explicit(&b->next, memory_order_acquire))
    for (size_t i = 0; i < GRACE_BLOCK_SLOTS; i++) {
      total++;
      held += atomic_load_explicit(&b->slots[i].taken, memory_order_relaxed);
    }
  if (taken)
    *taken = held;
  return total;
}

void grace_destroy(struct grace *g)
{
  if (!g)
    return;
  struct retired *r = g->retired;
  while (r) {
    struct retired *next = r->next;
    r->free_fn(r->p);
    free(r);
    r = next;
  }
  pthread_key_delete(g->key);
  struct block *b = atomic_load_explicit(&g->first.next, memory_order_acquire);
  while (b) {
    struct block *next = atomic_load_explicit(&b->next, memory_order_acquire);
    free(b);
    b = next;
  }
  pthread_mutex_destroy(&g->grow_lock);
  pthread_mutex_destroy(&g->lock);
  free(g);
}
