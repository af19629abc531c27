/* queue.h - the queues between threads: messages waiting for an out
 * connector, receipts (and later MO) waiting for a client's session.
 *
 * A queue serves messages by priority (msg.priority 0-3, 3 first): one lane
 * per level, each in order. A lower lane that has waited QUEUE_STARVE_MS
 * since it was last served while higher ones kept the consumers busy is
 * served next, so that no level starves. With every message at level 0
 * (priorities unused) a queue is one lane and reads no clock.
 *
 * Items move in batches: a producer links what it gathered in one loop
 * iteration and pushes the list under one lock; a consumer takes up to what
 * its window can send. Pushing wakes as many consumers' event loops as the
 * batch needs (one per QUEUE_WAKE_SHARE items), in turn, among those that
 * say they can take: waking all ten instances of a connector for every
 * batch cost more CPU than the sending did, and the woken loops crowded out
 * the threads whose acks were due.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_QUEUE_H
#define EMG_QUEUE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "evloop.h"
#include "msg.h"

enum qitem_kind {
  QITEM_MSG,                      /* a message to send (owned: msg_clone) */
  QITEM_RECEIPT,                  /* a receipt for the origin's session */
  QITEM_ABOUT                     /* a client's query, cancel or replace passed on to an SMSC: never
                                     in a queue, only in a window (connector_about.c) */
};

struct about_request;

struct qitem {
  struct qitem *next;
  enum qitem_kind kind;
  uint16_t attempts;              /* sends that failed temporarily */
  uint8_t last_status;            /* enum proto_status of the last failed send; 0 = none */
  int64_t next_attempt_ms;        /* throttled: Unix ms before which it is not sent again */
  struct msg *msg;                /* QITEM_MSG */
  struct msg_receipt receipt;     /* QITEM_RECEIPT: id = what the origin knows the message by */
  uint64_t journal_id;            /* QITEM_RECEIPT: ties its journal records together */
  uint64_t msg_id;                /* QITEM_RECEIPT: the message it reports on (its history) */
  char *callback;                 /* QITEM_RECEIPT to an HTTP origin: its URL (owned); else NULL */
  char *smsc_msgid;               /* QITEM_RECEIPT to an HTTP origin: the SMSC's id of the message
                                     (owned; Kannel's %F); NULL = none */
  uint8_t callback_method;        /* enum msg_callback_method */
  uint16_t via;                   /* QITEM_RECEIPT: 1 + the connector the message went out on; 0 = unknown */
  uint64_t sent_ns;               /* monotonic: when its request went out */
  uint16_t target;                /* restart: the connector it waited for */
  uint64_t refused_by;            /* the connectors that refused it and rerouted it, a bit each
                                     (index % 64): a reroute passes over them */
  struct about_request *about;    /* QITEM_ABOUT (owned, one allocation) */
};

#define QUEUE_LEVELS 4
#define QUEUE_STARVE_MS 1000

/* The lane an item waits in: a message's priority (at most the highest
 * level); receipts at level 0. */
static inline unsigned qitem_level(const struct qitem *it)
{
  unsigned p = it->kind == QITEM_MSG && it->msg ? it->msg->priority : 0;
  return p < QUEUE_LEVELS ? p : QUEUE_LEVELS - 1;
}

/* A list being built before one push. */
struct qlist {
  struct qitem *head, *tail;
  size_t count;
  unsigned levels;                /* bit L: it holds items of level L (0: not known, counted at push) */
};

static inline void qlist_append(struct qlist *l, struct qitem *it)
{
  l->levels |= 1u << qitem_level(it);
  it->next = NULL;
  if (l->tail)
    l->tail->next = it;
  else
    l->head = it;
  l->tail = it;
  l->count++;
}

#define QUEUE_MAX_WAITERS 1024
/* Items a push counts per consumer it wakes. */
#define QUEUE_WAKE_SHARE 64

struct queue_waiter {
  struct evloop *loop;
  /* The consumer's own flag: it would take items if woken (its window has
   * room). NULL: always. A consumer whose flag is false takes items by
   * itself once it can (on a response, a bind, a resume). */
  const _Atomic bool *ready;
};

struct queue_lane {
  struct qitem *head, *tail;
  uint64_t served_ms;             /* monotonic: last served, or since it waits beside another lane */
};

struct queue {
  pthread_mutex_t lock;
  struct queue_lane lanes[QUEUE_LEVELS];
  unsigned busy;                  /* bit L: lane L holds items */
  _Atomic size_t count;           /* written under lock; read without it */
  struct queue_waiter waiters[QUEUE_MAX_WAITERS];
  unsigned n_waiters;
  unsigned wake_next;             /* where the next push starts looking: turns */
  /* queue_walk lets go of the lock between chunks; walk_next is its place
   * meanwhile (the next item it visits), moved on by whoever removes that
   * item. walk_lock admits one walker at a time; the message path never
   * takes it. */
  pthread_mutex_t walk_lock;
  struct qitem *walk_next;
};

void queue_init(struct queue *q);
/* Frees the items still queued. */
void queue_destroy(struct queue *q);

/* Consumers: their loop is woken when items arrive, if *ready (or ready is
 * NULL). A consumer that sets its flag must look at queue_count after
 * setting it: a push that saw the flag still false did not wake it. */
void queue_add_waiter(struct queue *q, struct evloop *loop, const _Atomic bool *ready);
void queue_remove_waiter(struct queue *q, struct evloop *loop);

/* Moves the whole list into the queue (each item at the back of its lane,
 * or at the front for items that must keep their place, e.g. after a lost
 * connection), leaving l empty, and wakes the waiters. */
void queue_push(struct queue *q, struct qlist *l, int front);

/* Takes up to max items from the front of the lane served next into l
 * (which must be empty). Returns how many. */
size_t queue_take(struct queue *q, size_t max, struct qlist *l);

/* Items queued now (a snapshot: no lock taken). */
static inline size_t queue_count(struct queue *q)
{
  return atomic_load_explicit(&q->count, memory_order_relaxed);
}

/* Calls fn for up to limit items from position offset, in the order they
 * would be served if nothing starved (lane by lane, the highest first),
 * under the queue's lock (fn must be quick and must not touch the queue).
 * The lock is held for at most QUEUE_WALK_CHUNK items at a time, however
 * far offset is, so that a listing never holds up the threads pushing and
 * taking; what they do between two chunks shifts the positions a little,
 * as it would a moment later anyway. Returns the number of items in the
 * queue. */
#define QUEUE_WALK_CHUNK 1024
size_t queue_walk(struct queue *q, size_t offset, size_t limit,
                  void (*fn)(const struct qitem *it, void *ctx), void *ctx);

/* Removes and returns the first message item with this id, or NULL. Like
 * queue_walk, it holds the lock for at most QUEUE_WALK_CHUNK items at a
 * time; an item taken and put back at the front meanwhile may be missed. */
struct qitem *queue_remove_msg(struct queue *q, uint64_t id);

/* A new item of kind; NULL when out of memory. Free with qitem_free. */
struct qitem *qitem_new(enum qitem_kind kind);
void qitem_free(struct qitem *it);

#endif
