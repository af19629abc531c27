/* queue.c - batched queues between threads.
 * SPDX-License-Identifier: Apache-2.0 */
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "clock.h"
#include "queue.h"

void queue_init(struct queue *q)
{
  pthread_mutex_init(&q->lock, NULL);
  pthread_mutex_init(&q->walk_lock, NULL);
  q->walk_next = NULL;
  memset(q->lanes, 0, sizeof q->lanes);
  q->busy = 0;
  atomic_init(&q->count, 0);
  q->n_waiters = 0;
  q->wake_next = 0;
}

void queue_destroy(struct queue *q)
{
  for (unsigned lane = 0; lane < QUEUE_LEVELS; lane++) {
    struct qitem *it = q->lanes[lane].head;
    while (it) {
      struct qitem *next = it->next;
      qitem_free(it);
      it = next;
    }
  }
  memset(q->lanes, 0, sizeof q->lanes);
  q->busy = 0;
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

static bool one_lane(unsigned levels)
{
  return (levels & (levels - 1)) == 0;
}

/* Under the lock: the chain head..tail into lane, at its back or front. */
static void lane_splice(struct queue *q, unsigned lane, struct qitem *head, struct qitem *tail, int front)
{
  struct queue_lane *ln = &q->lanes[lane];
  if (!ln->head) {
    ln->head = head;
    ln->tail = tail;
  } else if (front) {
    tail->next = ln->head;
    ln->head = head;
  } else {
    ln->tail->next = head;
    ln->tail = tail;
  }
}

/* Under the lock, after a push made lanes of was_busy and more busy: a
 * lane starts waiting beside others now (a lone lane had no one to wait
 * for). Only then is the clock read. */
static void lanes_start_waiting(struct queue *q, unsigned was_busy)
{
  if (one_lane(q->busy))
    return;
  unsigned starting = one_lane(was_busy) ? q->busy : q->busy & ~was_busy;
  uint64_t now = clock_now_ms();
  for (unsigned lane = 0; lane < QUEUE_LEVELS; lane++)
    if (starting & (1u << lane))
      q->lanes[lane].served_ms = now;
}

void queue_push(struct queue *q, struct qlist *l, int front)
{
  if (!l->count)
    return;
  struct evloop *wake[QUEUE_MAX_WAITERS];
  unsigned n_wake, levels = l->levels;
  if (!levels)   /* a list made by hand, not by qlist_append */
    for (struct qitem *it = l->head; it; it = it->next)
      levels |= 1u << qitem_level(it);
  pthread_mutex_lock(&q->lock);
  unsigned was_busy = q->busy;
  if (one_lane(levels)) {
    lane_splice(q, (unsigned)__builtin_ctz(levels), l->head, l->tail, front);
  } else {
    /* Mixed levels: each item to its lane, their order kept. */
    struct qlist by[QUEUE_LEVELS] = { { 0 } };
    for (struct qitem *it = l->head, *next; it; it = next) {
      next = it->next;
      qlist_append(&by[qitem_level(it)], it);
    }
    for (unsigned lane = 0; lane < QUEUE_LEVELS; lane++)
      if (by[lane].count)
        lane_splice(q, lane, by[lane].head, by[lane].tail, front);
  }
  q->busy |= levels;
  if (q->busy != was_busy)
    lanes_start_waiting(q, was_busy);
  q->count += l->count;   /* seq_cst: ordered before the ready flags are read */
  n_wake = pick_waiters(q, (l->count + QUEUE_WAKE_SHARE - 1) / QUEUE_WAKE_SHARE, wake);
  pthread_mutex_unlock(&q->lock);
  l->head = l->tail = NULL;
  l->count = 0;
  l->levels = 0;
  /* Woken outside the lock: a wake is a write to an eventfd. */
  for (unsigned i = 0; i < n_wake; i++)
    evloop_wake(wake[i]);
}

/* Under the lock, with items queued: the lane to serve. The highest busy
 * one, unless a lower one has waited QUEUE_STARVE_MS since it was last
 * served (the one that waited longest of those). */
static unsigned lane_to_serve(struct queue *q)
{
  unsigned top = 31u - (unsigned)__builtin_clz(q->busy);
  if (one_lane(q->busy))
    return top;
  uint64_t now = clock_now_ms();
  unsigned pick = top;
  for (unsigned lane = 0; lane < top; lane++)
    if ((q->busy & (1u << lane)) && now - q->lanes[lane].served_ms >= QUEUE_STARVE_MS &&
        (pick == top || q->lanes[lane].served_ms < q->lanes[pick].served_ms))
      pick = lane;
  q->lanes[pick].served_ms = now;
  return pick;
}

size_t queue_take(struct queue *q, size_t max, struct qlist *l)
{
  size_t n = 0;
  pthread_mutex_lock(&q->lock);
  if (!q->busy || !max) {
    pthread_mutex_unlock(&q->lock);
    return 0;
  }
  unsigned lane = lane_to_serve(q);
  struct queue_lane *ln = &q->lanes[lane];
  struct qitem *it = ln->head, *last = NULL;
  bool walker_passed = false;
  while (it && n < max) {
    walker_passed |= it == q->walk_next;
    last = it;
    it = it->next;
    n++;
  }
  if (walker_passed)
    q->walk_next = it;
  l->head = ln->head;
  l->tail = last;
  last->next = NULL;
  l->count = n;
  l->levels = 1u << lane;
  ln->head = it;
  if (!it) {
    ln->tail = NULL;
    q->busy &= ~(1u << lane);
  }
  q->count -= n;
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
  for (int lane = QUEUE_LEVELS - 1; lane >= 0 && pos < end; lane--) {
    q->walk_next = q->lanes[lane].head;
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
  }
  q->walk_next = NULL;
  size_t n = q->count;
  pthread_mutex_unlock(&q->lock);
  pthread_mutex_unlock(&q->walk_lock);
  return n;
}

/* Under the lock (and the walk lock): the message id in lane, unlinked,
 * or NULL. */
static struct qitem *lane_remove_msg(struct queue *q, unsigned lane, uint64_t id)
{
  struct queue_lane *ln = &q->lanes[lane];
  struct qitem *prev = NULL, *it = ln->head;
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
     * moves the place to the lane's new head, and the search starts again
     * there. */
    q->walk_next = prev;
    walk_pause(q);
    if (q->walk_next == prev && prev) {
      it = prev->next;
    } else {
      prev = NULL;
      it = ln->head;
    }
  }
  q->walk_next = NULL;
  if (!it)
    return NULL;
  if (prev)
    prev->next = it->next;
  else
    ln->head = it->next;
  if (ln->tail == it)
    ln->tail = prev;
  if (!ln->head)
    q->busy &= ~(1u << lane);
  it->next = NULL;
  q->count--;
  return it;
}

struct qitem *queue_remove_msg(struct queue *q, uint64_t id)
{
  struct qitem *it = NULL;
  pthread_mutex_lock(&q->walk_lock);
  pthread_mutex_lock(&q->lock);
  for (int lane = QUEUE_LEVELS - 1; lane >= 0 && !it; lane--)
    it = lane_remove_msg(q, (unsigned)lane, id);
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
  free(it->about);
  free(it);
}
