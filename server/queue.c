/* queue.c - batched queues between threads.
 * SPDX-License-Identifier: Apache-2.0 */
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include "queue.h"

void queue_init(struct queue *q)
{
  pthread_mutex_init(&q->lock, NULL);
  pthread_mutex_init(&q->walk_lock, NULL);
  q->walk_next = NULL;
  q->head = q->tail = NULL;
  atomic_init(&q->count, 0);
  q->n_waiters = 0;
  q->wake_next = 0;
}

void queue_destroy(struct queue *q)
{
  struct qitem *it = q->head;
  while (it) {
    struct qitem *next = it->next;
    qitem_free(it);
    it = next;
  }
  q->head = q->tail = NULL;
  q->count = 0;
  pthread_mutex_destroy(&q->lock);
  pthread_mutex_destroy(&q->walk_lock);
}

void queue_add_waiter(struct queue *q, struct evloop *loop, const _Atomic bool *ready)
{
  pthread_mutex_lock(&q->lock);
  if (q->n_waiters < QUEUE_MAX_WAITERS)
    q->waiters[q->n_waiters++] = (struct queue_waiter){ .loop = loop, .ready = ready };
  pthread_mutex_unlock(&q->lock);
}

void queue_remove_waiter(struct queue *q, struct evloop *loop)
{
  pthread_mutex_lock(&q->lock);
  for (unsigned i = 0; i < q->n_waiters; i++)
    if (q->waiters[i].loop == loop) {
      q->waiters[i] = q->waiters[--q->n_waiters];
      break;
    }
  pthread_mutex_unlock(&q->lock);
}

/* Under the lock: up to want waiters that can take, in turns from
 * wake_next, into wake. Returns how many. */
static unsigned pick_waiters(struct queue *q, size_t want, struct evloop **wake)
{
  unsigned n = 0, n_waiters = q->n_waiters, start = q->wake_next;
  for (unsigned seen = 0; seen < n_waiters && n < want; seen++) {
    unsigned i = (start + seen) % n_waiters;
    const struct queue_waiter *w = &q->waiters[i];
    if (w->ready && !atomic_load(w->ready))
      continue;
    wake[n++] = w->loop;
    q->wake_next = (i + 1) % n_waiters;
  }
  return n;
}

void queue_push(struct queue *q, struct qlist *l, int front)
{
  if (!l->count)
    return;
  struct evloop *wake[QUEUE_MAX_WAITERS];
  unsigned n_wake;
  pthread_mutex_lock(&q->lock);
  if (!q->head) {
    q->head = l->head;
    q->tail = l->tail;
  } else if (front) {
    l->tail->next = q->head;
    q->head = l->head;
  } else {
    q->tail->next = l->head;
    q->tail = l->tail;
  }
  q->count += l->count;   /* seq_cst: ordered before the ready flags are read */
  n_wake = pick_waiters(q, (l->count + QUEUE_WAKE_SHARE - 1) / QUEUE_WAKE_SHARE, wake);
  pthread_mutex_unlock(&q->lock);
  l->head = l->tail = NULL;
  l->count = 0;
  /* Woken outside the lock: a wake is a write to an eventfd. */
  for (unsigned i = 0; i < n_wake; i++)
    evloop_wake(wake[i]);
}

size_t queue_take(struct queue *q, size_t max, struct qlist *l)
{
  size_t n = 0;
  pthread_mutex_lock(&q->lock);
  struct qitem *it = q->head, *last = NULL;
  bool walker_passed = false;
  while (it && n < max) {
    walker_passed |= it == q->walk_next;
    last = it;
    it = it->next;
    n++;
  }
  if (walker_passed)
    q->walk_next = it;
  if (n) {
    l->head = q->head;
    l->tail = last;
    last->next = NULL;
    l->count = n;
    q->head = it;
    if (!it)
      q->tail = NULL;
    q->count -= n;
  }
  pthread_mutex_unlock(&q->lock);
  return n;
}

/* A walker's pause between chunks: a producer or consumer waiting for the
 * lock has it first. The walker keeps its place in walk_next meanwhile. */
static void walk_pause(struct queue *q)
{
  pthread_mutex_unlock(&q->lock);
  sched_yield();
  pthread_mutex_lock(&q->lock);
}

size_t queue_walk(struct queue *q, size_t offset, size_t limit,
                  void (*fn)(const struct qitem *it, void *ctx), void *ctx)
{
  size_t end = limit > SIZE_MAX - offset ? SIZE_MAX : offset + limit, pos = 0;
  pthread_mutex_lock(&q->walk_lock);
  pthread_mutex_lock(&q->lock);
  q->walk_next = q->head;
  while (q->walk_next && pos < end) {
    struct qitem *it = q->walk_next;
    for (size_t steps = 0; it && pos < end && steps < QUEUE_WALK_CHUNK; steps++, pos++) {
      if (pos >= offset)
        fn(it, ctx);
      it = it->next;
    }
    q->walk_next = it;
    if (it && pos < end)
      walk_pause(q);
  }
  q->walk_next = NULL;
  size_t n = q->count;
  pthread_mutex_unlock(&q->lock);
  pthread_mutex_unlock(&q->walk_lock);
  return n;
}

struct qitem *queue_remove_msg(struct queue *q, uint64_t id)
{
  pthread_mutex_lock(&q->walk_lock);
  pthread_mutex_lock(&q->lock);
  struct qitem *prev = NULL, *it = q->head;
  for (;;) {
    size_t steps = 0;
    while (it && steps < QUEUE_WALK_CHUNK && !(it->kind == QITEM_MSG && it->msg->id == id)) {
      prev = it;
      it = it->next;
      steps++;
    }
    if (!it || steps < QUEUE_WALK_CHUNK)
      break;
    /* A pause: the place kept is prev, the last item looked at, so that
     * the item after it can still be unlinked. A consumer that takes prev
     * moves the place to the new head, and the search starts again there. */
    q->walk_next = prev;
    walk_pause(q);
    if (q->walk_next == prev && prev) {
      it = prev->next;
    } else {
      prev = NULL;
      it = q->head;
    }
  }
  q->walk_next = NULL;
  if (it) {
    if (prev)
      prev->next = it->next;
    else
      q->head = it->next;
    if (q->tail == it)
      q->tail = prev;
    it->next = NULL;
    q->count--;
  }
  pthread_mutex_unlock(&q->lock);
  pthread_mutex_unlock(&q->walk_lock);
  return it;
}

struct qitem *qitem_new(enum qitem_kind kind)
{
  struct qitem *it = calloc(1, sizeof *it);
  if (it)
    it->kind = kind;
  return it;
}

void qitem_free(struct qitem *it)
{
  if (!it)
    return;
  msg_free(it->msg);
  free(it->callback);
  free(it->smsc_msgid);
  free(it);
}
