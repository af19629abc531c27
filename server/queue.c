/* queue.c - batched queues between threads. */
#include <stdlib.h>
#include "queue.h"

void queue_init(struct queue *q)
{
  pthread_mutex_init(&q->lock, NULL);
  q->head = q->tail = NULL;
  atomic_init(&q->count, 0);
  q->n_waiters = 0;
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
}

void queue_add_waiter(struct queue *q, struct evloop *loop)
{
  pthread_mutex_lock(&q->lock);
  if (q->n_waiters < QUEUE_MAX_WAITERS)
    q->waiters[q->n_waiters++] = loop;
  pthread_mutex_unlock(&q->lock);
}

void queue_remove_waiter(struct queue *q, struct evloop *loop)
{
  pthread_mutex_lock(&q->lock);
  for (unsigned i = 0; i < q->n_waiters; i++)
    if (q->waiters[i] == loop) {
      q->waiters[i] = q->waiters[--q->n_waiters];
      break;
    }
  pthread_mutex_unlock(&q->lock);
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
  q->count += l->count;
  n_wake = q->n_waiters;
  for (unsigned i = 0; i < n_wake; i++)
    wake[i] = q->waiters[i];
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
  while (it && n < max) {
    last = it;
    it = it->next;
    n++;
  }
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

size_t queue_walk(struct queue *q, size_t offset, size_t limit,
                  void (*fn)(const struct qitem *it, void *ctx), void *ctx)
{
  pthread_mutex_lock(&q->lock);
  size_t i = 0;
  for (struct qitem *it = q->head; it && i < offset + limit; it = it->next, i++)
    if (i >= offset)
      fn(it, ctx);
  size_t n = q->count;
  pthread_mutex_unlock(&q->lock);
  return n;
}

struct qitem *queue_remove_msg(struct queue *q, uint64_t id)
{
  pthread_mutex_lock(&q->lock);
  struct qitem *prev = NULL, *it = q->head;
  while (it && !(it->kind == QITEM_MSG && it->msg->id == id)) {
    prev = it;
    it = it->next;
  }
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
  free(it);
}
