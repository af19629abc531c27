/* schedule.c - a min-heap of held messages by due time. See schedule.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <pthread.h>
#include <stdlib.h>
#include "schedule.h"

struct held {
  int64_t due;
  unsigned target;
  struct qitem *it;
};

struct schedule {
  pthread_mutex_t lock;
  struct held *heap;
  size_t count, cap;
};

struct schedule *schedule_create(void)
{
  struct schedule *s = calloc(1, sizeof *s);
  if (s)
    pthread_mutex_init(&s->lock, NULL);
  return s;
}

void schedule_destroy(struct schedule *s)
{
  if (!s)
    return;
  for (size_t i = 0; i < s->count; i++)
    qitem_free(s->heap[i].it);
  free(s->heap);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

/* Earlier due first; equal times in id order, so that parts of one
 * message leave together and in order. */
static int earlier(const struct held *a, const struct held *b)
{
  if (a->due != b->due)
    return a->due < b->due;
  return a->it->msg->id < b->it->msg->id;
}

static void swap(struct held *a, struct held *b)
{
  struct held t = *a;
  *a = *b;
  *b = t;
}

static void sift_up(struct held *h, size_t i)
{
  while (i > 0 && earlier(&h[i], &h[(i - 1) / 2])) {
    swap(&h[i], &h[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
}

static void sift_down(struct held *h, size_t n, size_t i)
{
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < n && earlier(&h[l], &h[m]))
      m = l;
    if (r < n && earlier(&h[r], &h[m]))
      m = r;
    if (m == i)
      return;
    swap(&h[i], &h[m]);
    i = m;
  }
}

/* Under the lock: takes entry i out, keeping the heap. */
static struct held take_at(struct schedule *s, size_t i)
{
  struct held out = s->heap[i];
  s->heap[i] = s->heap[--s->count];
  if (i < s->count) {
    sift_down(s->heap, s->count, i);
    sift_up(s->heap, i);
  }
  return out;
}

int schedule_add(struct schedule *s, struct qitem *it, unsigned target)
{
  pthread_mutex_lock(&s->lock);
  if (s->count == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 64;
    struct held *heap = realloc(s->heap, cap * sizeof *heap);
    if (!heap) {
      pthread_mutex_unlock(&s->lock);
      return -1;
    }
    s->heap = heap;
    s->cap = cap;
  }
  s->heap[s->count] = (struct held){ it->msg->deferred, target, it };
  sift_up(s->heap, s->count++);
  pthread_mutex_unlock(&s->lock);
  return 0;
}

size_t schedule_release(struct schedule *s, int64_t now, void (*fn)(void *ctx, unsigned target, struct qitem *it),
                        void *ctx)
{
  size_t n = 0;
  for (;;) {
    pthread_mutex_lock(&s->lock);
    if (!s->count || s->heap[0].due > now) {
      pthread_mutex_unlock(&s->lock);
      return n;
    }
    struct held h = take_at(s, 0);
    pthread_mutex_unlock(&s->lock);
    fn(ctx, h.target, h.it);
    n++;
  }
}

struct qitem *schedule_remove(struct schedule *s, uint64_t id, unsigned *target)
{
  struct qitem *it = NULL;
  pthread_mutex_lock(&s->lock);
  for (size_t i = 0; i < s->count; i++)
    if (s->heap[i].it->msg->id == id) {
      struct held h = take_at(s, i);
      it = h.it;
      *target = h.target;
      break;
    }
  pthread_mutex_unlock(&s->lock);
  return it;
}

size_t schedule_count(struct schedule *s, int target)
{
  size_t n = 0;
  pthread_mutex_lock(&s->lock);
  if (target < 0)
    n = s->count;
  else
    for (size_t i = 0; i < s->count; i++)
      n += s->heap[i].target == (unsigned)target;
  pthread_mutex_unlock(&s->lock);
  return n;
}

static int by_due(const void *a, const void *b)
{
  return earlier(a, b) ? -1 : earlier(b, a) ? 1 : 0;
}

size_t schedule_walk(struct schedule *s, unsigned target, size_t offset, size_t limit,
                     void (*fn)(const struct qitem *it, void *ctx), void *ctx)
{
  size_t n = 0;
  pthread_mutex_lock(&s->lock);
  struct held *mine = malloc((s->count ? s->count : 1) * sizeof *mine);
  if (mine) {
    for (size_t i = 0; i < s->count; i++)
      if (s->heap[i].target == target)
        mine[n++] = s->heap[i];
    qsort(mine, n, sizeof *mine, by_due);
    for (size_t i = offset; i < n && i - offset < limit; i++)
      fn(mine[i].it, ctx);
    free(mine);
  }
  pthread_mutex_unlock(&s->lock);
  return n;
}
