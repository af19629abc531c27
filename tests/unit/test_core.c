/* test_core.c - the core's small modules: queues, message ids.
 * SPDX-License-Identifier: Apache-2.0 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core.h"
#include "grace.h"
#include "ids.h"
#include "queue.h"
#include "mo_join.h"
#include "receipt_join.h"
#include "series.h"
#include "schedule.h"
#include "testutil.h"

static struct qitem *numbered(uint16_t n)
{
  struct qitem *it = qitem_new(QITEM_RECEIPT);
  it->attempts = n;
  return it;
}

static void test_queue_order(void)
{
  struct queue q;
  queue_init(&q);
  struct qlist l = { 0 };
  for (uint16_t i = 1; i <= 5; i++)
    qlist_append(&l, numbered(i));
  queue_push(&q, &l, 0);
  CU_ASSERT_EQUAL(l.count, 0);
  CU_ASSERT_PTR_NULL(l.head);
  CU_ASSERT_EQUAL(queue_count(&q), 5);
  struct qlist front = { 0 };
  qlist_append(&front, numbered(0));
  queue_push(&q, &front, 1);                      /* a retry keeps its place */
  struct qlist got = { 0 };
  CU_ASSERT_EQUAL(queue_take(&q, 4, &got), 4);
  uint16_t expect = 0;
  for (struct qitem *it = got.head; it; it = it->next)
    CU_ASSERT_EQUAL(it->attempts, expect++);
  CU_ASSERT_EQUAL(got.tail->attempts, 3);
  CU_ASSERT_PTR_NULL(got.tail->next);
  CU_ASSERT_EQUAL(queue_count(&q), 2);
  while (got.head) {
    struct qitem *next = got.head->next;
    qitem_free(got.head);
    got.head = next;
  }
  struct qlist rest = { 0 };
  CU_ASSERT_EQUAL(queue_take(&q, 100, &rest), 2);
  CU_ASSERT_EQUAL(rest.head->attempts, 4);
  CU_ASSERT_EQUAL(queue_take(&q, 100, &got), 0);
  struct qlist back = rest;                       /* freed by queue_destroy */
  queue_push(&q, &back, 0);
  queue_destroy(&q);
}

static struct qitem *message_item(uint64_t id)
{
  struct qitem *it = qitem_new(QITEM_MSG);
  struct msg m;
  memset(&m, 0, sizeof m);
  m.id = id;
  it->msg = msg_clone(&m);
  return it;
}

static void queue_fill(struct queue *q, uint64_t n)
{
  struct qlist l = { 0 };
  for (uint64_t id = 1; id <= n; id++)
    qlist_append(&l, message_item(id));
  queue_push(q, &l, 0);
}

/* A message of a priority level, its id telling which. */
static struct qitem *urgent_item(uint64_t id, uint8_t priority)
{
  struct qitem *it = message_item(id);
  it->msg->priority = priority;
  return it;
}

static void ids_of(const struct qitem *it, void *ctx)
{
  char *out = ctx;
  size_t n = strlen(out);
  snprintf(out + n, 256 - n, "%s%llu", n ? " " : "", (unsigned long long)it->msg->id);
}

/* Takes up to max and writes the ids taken into out (then frees them). */
static size_t queue_take_ids(struct queue *q, size_t max, char *out)
{
  struct qlist l = { 0 };
  size_t n = queue_take(q, max, &l);
  out[0] = 0;
  for (struct qitem *it = l.head, *next; it; it = next) {
    next = it->next;
    ids_of(it, out);
    qitem_free(it);
  }
  return n;
}

/* Priorities: higher levels first, each in order; a front push keeps its
 * place in its own level; walks and removals see every level; a lower
 * level that waited a second beside a busy higher one is served. */
static void test_queue_priorities(void)
{
  struct queue q;
  char ids[256];
  queue_init(&q);
  struct qlist l = { 0 };
  static const uint8_t level[] = { 0, 3, 1, 3, 0, 2, 9 };   /* 9: above the top, taken as 3 */
  for (uint64_t i = 0; i < sizeof level; i++)
    qlist_append(&l, urgent_item(i + 1, level[i]));
  queue_push(&q, &l, 0);
  struct qlist front = { 0 };
  qlist_append(&front, urgent_item(8, 1));
  queue_push(&q, &front, 1);
  CU_ASSERT_EQUAL(queue_count(&q), 8);
  ids[0] = 0;
  CU_ASSERT_EQUAL(queue_walk(&q, 0, 100, ids_of, ids), 8);
  CU_ASSERT_STRING_EQUAL(ids, "2 4 7 6 8 3 1 5");
  struct qitem *gone = queue_remove_msg(&q, 6);
  CU_ASSERT_PTR_NOT_NULL_FATAL(gone);
  qitem_free(gone);
  CU_ASSERT_EQUAL(queue_take_ids(&q, 2, ids), 2);
  CU_ASSERT_STRING_EQUAL(ids, "2 4");
  CU_ASSERT_EQUAL(queue_take_ids(&q, 100, ids), 1);   /* one level a take */
  CU_ASSERT_STRING_EQUAL(ids, "7");
  CU_ASSERT_EQUAL(queue_take_ids(&q, 100, ids), 2);
  CU_ASSERT_STRING_EQUAL(ids, "8 3");
  CU_ASSERT_EQUAL(queue_take_ids(&q, 100, ids), 2);
  CU_ASSERT_STRING_EQUAL(ids, "1 5");
  CU_ASSERT_EQUAL(queue_count(&q), 0);

  /* Starving: level 0 beside a level 3 that never runs dry. */
  qlist_append(&l, urgent_item(100, 0));
  queue_push(&q, &l, 0);
  for (uint64_t i = 0; i < 3; i++)
    qlist_append(&l, urgent_item(200 + i, 3));
  queue_push(&q, &l, 0);
  CU_ASSERT_EQUAL(queue_take_ids(&q, 1, ids), 1);
  CU_ASSERT_STRING_EQUAL(ids, "200");
  nanosleep(&(struct timespec){ .tv_sec = (QUEUE_STARVE_MS + 50) / 1000, .tv_nsec = (QUEUE_STARVE_MS + 50) % 1000 * 1000000L }, NULL);
  CU_ASSERT_EQUAL(queue_take_ids(&q, 1, ids), 1);
  CU_ASSERT_STRING_EQUAL(ids, "100");
  CU_ASSERT_EQUAL(queue_take_ids(&q, 5, ids), 2);
  CU_ASSERT_STRING_EQUAL(ids, "201 202");
  queue_destroy(&q);
}

struct released {
  char ids[256];
  unsigned targets;
};

static void note_release(void *ctx, unsigned target, struct qitem *it)
{
  struct released *r = ctx;
  ids_of(it, r->ids);
  r->targets += target;
  qitem_free(it);
}

/* The schedule: held until due, the earliest first (ids in order on a
 * tie), counted per connector, listed by due time, one taken out. */
static void test_schedule(void)
{
  struct schedule *s = schedule_create();
  static const int64_t due[] = { 500, 100, 300, 100, 200 };
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  for (uint64_t i = 0; i < 5; i++) {
    struct qitem *it = message_item(i + 1);
    it->msg->deferred = due[i];
    CU_ASSERT_EQUAL(schedule_add(s, it, i % 2 ? 7 : 3), 0);
  }
  CU_ASSERT_EQUAL(schedule_count(s, -1), 5);
  CU_ASSERT_EQUAL(schedule_count(s, 3), 3);
  char ids[256] = "";
  CU_ASSERT_EQUAL(schedule_walk(s, 3, 0, 10, ids_of, ids), 3);
  CU_ASSERT_STRING_EQUAL(ids, "5 3 1");
  unsigned target = 0;
  struct qitem *it = schedule_remove(s, 3, &target);
  CU_ASSERT_PTR_NOT_NULL_FATAL(it);
  CU_ASSERT_EQUAL(target, 3);
  qitem_free(it);
  CU_ASSERT_PTR_NULL(schedule_remove(s, 3, &target));
  struct released r = { "", 0 };
  CU_ASSERT_EQUAL(schedule_release(s, 99, note_release, &r), 0);
  CU_ASSERT_EQUAL(schedule_release(s, 200, note_release, &r), 3);
  CU_ASSERT_STRING_EQUAL(r.ids, "2 4 5");
  CU_ASSERT_EQUAL(r.targets, 7 + 7 + 3);
  CU_ASSERT_EQUAL(schedule_count(s, -1), 1);
  schedule_destroy(s);   /* frees message 1, still held */
}

/* Part seq of total of an MO from 4917 (8-bit reference ref), text t. */
static struct qitem *mo_part(uint64_t id, uint8_t ref, uint8_t total, uint8_t seq, const char *t)
{
  uint8_t udh[6] = { 5, 0x00, 3, ref, total, seq };
  struct msg m;
  memset(&m, 0, sizeof m);
  m.id = id;
  snprintf(m.src.addr, sizeof m.src.addr, "4917");
  snprintf(m.dst.addr, sizeof m.dst.addr, "5555");
  m.udh = udh;
  m.udh_len = sizeof udh;
  m.data = (const uint8_t *)t;
  m.data_len = (uint32_t)strlen(t);
  struct qitem *it = qitem_new(QITEM_MSG);
  it->msg = msg_clone(&m);
  return it;
}

static void note_part(void *ctx, unsigned target, struct qitem *it)
{
  (void)target;
  ids_of(it, ctx);
  qitem_free(it);
}

/* Long MOs: parts in any order joined into the first part's id, its text
 * whole and its UDH without the concatenation IE; a part twice is a
 * duplicate; a message that never completes goes on in parts after the
 * time-out; beyond the groups allowed, parts pass. */
static void test_mo_join(void)
{
  struct mo_join *j = mo_join_create(2, 0);
  struct qitem *whole;
  struct qlist done;
  CU_ASSERT_PTR_NOT_NULL_FATAL(j);
  struct qitem *plain = message_item(9);
  CU_ASSERT_EQUAL(mo_join_add(j, plain, 1, &whole, &done), MO_JOIN_PASS);   /* no UDH */
  qitem_free(plain);
  CU_ASSERT_EQUAL(mo_join_add(j, mo_part(12, 7, 3, 3, "c"), 1, &whole, &done), MO_JOIN_HELD);
  CU_ASSERT_EQUAL(mo_join_add(j, mo_part(10, 7, 3, 1, "a"), 1, &whole, &done), MO_JOIN_HELD);
  struct qitem *again = mo_part(13, 7, 3, 1, "a");
  CU_ASSERT_EQUAL(mo_join_add(j, again, 1, &whole, &done), MO_JOIN_DUPLICATE);
  qitem_free(again);
  CU_ASSERT_EQUAL(mo_join_add(j, mo_part(20, 8, 2, 1, "x"), 1, &whole, &done), MO_JOIN_HELD);
  struct qitem *third = mo_part(30, 9, 2, 1, "y");   /* a third message at once: passes */
  CU_ASSERT_EQUAL(mo_join_add(j, third, 1, &whole, &done), MO_JOIN_PASS);
  qitem_free(third);
  CU_ASSERT_EQUAL(mo_join_held(j), 3);
  CU_ASSERT_EQUAL(mo_join_add(j, mo_part(11, 7, 3, 2, "b"), 4, &whole, &done), MO_JOIN_WHOLE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(whole);
  CU_ASSERT_EQUAL(whole->msg->id, 10);
  CU_ASSERT_EQUAL(whole->target, 1);
  CU_ASSERT_EQUAL_FATAL(whole->msg->data_len, 3);
  CU_ASSERT_EQUAL(memcmp(whole->msg->data, "abc", 3), 0);
  CU_ASSERT_EQUAL(whole->msg->udh_len, 0);
  CU_ASSERT_EQUAL(done.count, 3);
  for (struct qitem *p = done.head, *next; p; p = next) {
    next = p->next;
    qitem_free(p);
  }
  qitem_free(whole);
  char ids[256] = "";
  CU_ASSERT_EQUAL(mo_join_expire(j, time(NULL), note_part, ids), 1);   /* time-out 0: due at once */
  CU_ASSERT_STRING_EQUAL(ids, "20");
  CU_ASSERT_EQUAL(mo_join_held(j), 0);
  mo_join_destroy(j);
}

/* A part with its sender and its whole UDH given. */
static struct qitem *mo_part_udh(uint64_t id, const char *src, const uint8_t *udh, uint16_t udh_len, const char *t)
{
  struct msg m;
  memset(&m, 0, sizeof m);
  m.id = id;
  snprintf(m.src.addr, sizeof m.src.addr, "%s", src);
  snprintf(m.dst.addr, sizeof m.dst.addr, "5555");
  m.udh = udh;
  m.udh_len = udh_len;
  m.data = (const uint8_t *)t;
  m.data_len = (uint32_t)strlen(t);
  struct qitem *it = qitem_new(QITEM_MSG);
  it->msg = msg_clone(&m);
  return it;
}

/* What keys a long MO's group and what its joined UDH keeps: two handsets
 * sending with the same reference are two messages (not one part seen
 * twice, not one text mixed from both); a 16-bit reference's IE goes from
 * the joined message as an 8-bit one's does, other IEs stay. */
static void test_mo_join_keys(void)
{
  struct mo_join *j = mo_join_create(4, 60);
  struct qitem *whole = NULL;
  struct qlist done;
  CU_ASSERT_PTR_NOT_NULL_FATAL(j);
  const uint8_t p1[6] = { 5, 0x00, 3, 5, 2, 1 }, p2[6] = { 5, 0x00, 3, 5, 2, 2 };
  CU_ASSERT_EQUAL(mo_join_add(j, mo_part_udh(40, "4917", p1, 6, "one "), 1, &whole, &done), MO_JOIN_HELD);
  CU_ASSERT_EQUAL(mo_join_add(j, mo_part_udh(50, "4918", p1, 6, "other "), 1, &whole, &done), MO_JOIN_HELD);
  CU_ASSERT_EQUAL(mo_join_held(j), 2);
  CU_ASSERT_EQUAL_FATAL(mo_join_add(j, mo_part_udh(51, "4918", p2, 6, "handset"), 1, &whole, &done), MO_JOIN_WHOLE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(whole);
  CU_ASSERT_EQUAL(whole->msg->id, 50);
  CU_ASSERT_STRING_EQUAL(whole->msg->src.addr, "4918");
  CU_ASSERT_EQUAL_FATAL(whole->msg->data_len, 13);
  CU_ASSERT_EQUAL(memcmp(whole->msg->data, "other handset", 13), 0);
  for (struct qitem *p = done.head, *next; p; p = next) {
    next = p->next;
    qitem_free(p);
  }
  qitem_free(whole);
  CU_ASSERT_EQUAL(mo_join_held(j), 1);   /* 4917's first part still waits for its second */

  /* 16-bit reference, with a national language shift IE (0x24) beside it. */
  const uint8_t w1[10] = { 9, 0x24, 1, 1, 0x08, 4, 0x12, 0x34, 2, 1 };
  const uint8_t w2[10] = { 9, 0x24, 1, 1, 0x08, 4, 0x12, 0x34, 2, 2 };
  CU_ASSERT_EQUAL(mo_join_add(j, mo_part_udh(60, "4919", w1, 10, "ab"), 1, &whole, &done), MO_JOIN_HELD);
  CU_ASSERT_EQUAL_FATAL(mo_join_add(j, mo_part_udh(61, "4919", w2, 10, "cd"), 1, &whole, &done), MO_JOIN_WHOLE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(whole);
  const uint8_t kept[4] = { 3, 0x24, 1, 1 };
  CU_ASSERT_EQUAL_FATAL(whole->msg->udh_len, sizeof kept);
  CU_ASSERT_EQUAL(memcmp(whole->msg->udh, kept, sizeof kept), 0);
  CU_ASSERT_EQUAL(memcmp(whole->msg->data, "abcd", 4), 0);
  for (struct qitem *p = done.head, *next; p; p = next) {
    next = p->next;
    qitem_free(p);
  }
  qitem_free(whole);
  mo_join_destroy(j);
}

/* Removing one message by id walks the queue in chunks: found past the
 * first chunk, at the head and at the tail, and the queue stays whole. */
static void test_queue_remove(void)
{
  struct queue q;
  queue_init(&q);
  queue_fill(&q, 5000);
  struct qitem *it = queue_remove_msg(&q, 4500);
  CU_ASSERT(it && it->msg->id == 4500);
  qitem_free(it);
  CU_ASSERT_PTR_NULL(queue_remove_msg(&q, 4500));
  it = queue_remove_msg(&q, 1);
  CU_ASSERT(it && it->msg->id == 1);
  qitem_free(it);
  it = queue_remove_msg(&q, 5000);
  CU_ASSERT(it && it->msg->id == 5000);
  qitem_free(it);
  CU_ASSERT_EQUAL(queue_count(&q), 4997);
  struct qlist l = { 0 };
  qlist_append(&l, message_item(6000));           /* the tail moved back: pushes go after 4999 */
  queue_push(&q, &l, 0);
  struct qlist got = { 0 };
  CU_ASSERT_EQUAL(queue_take(&q, 10000, &got), 4998);
  uint64_t expect = 2;
  bool in_order = true;
  for (struct qitem *x = got.head, *next; x; x = next) {
    next = x->next;
    in_order &= x->msg->id == expect;
    expect = expect == 4499 ? 4501 : expect == 4999 ? 6000 : expect + 1;
    qitem_free(x);
  }
  CU_ASSERT(in_order);
  queue_destroy(&q);
}

/* A consumer's loop for the wake tests: counts the wakes it sees in one
 * short run (a tick of 1 ms ends it). */
struct waker_probe {
  struct evloop *loop;
  _Atomic bool ready;
  unsigned wakes;
};

static void probe_woken(struct evloop *loop, void *arg)
{
  (void)loop;
  ((struct waker_probe *)arg)->wakes++;
}

static void probe_stop(struct evloop *loop, void *arg)
{
  (void)arg;
  evloop_stop(loop);
}

/* Runs every probe's loop once; returns a mask of those woken since the last call. */
static unsigned probes_woken(struct waker_probe *p, unsigned n)
{
  unsigned mask = 0;
  for (unsigned i = 0; i < n; i++) {
    p[i].wakes = 0;
    evloop_run(p[i].loop);
    if (p[i].wakes)
      mask |= 1u << i;
  }
  return mask;
}

/* A push wakes one consumer per QUEUE_WAKE_SHARE items, in turns, and only
 * those that say they can take (or say nothing). */
static void test_queue_wakes(void)
{
  struct queue q;
  queue_init(&q);
  struct waker_probe p[4];
  memset(p, 0, sizeof p);
  for (unsigned i = 0; i < 4; i++) {
    p[i].loop = evloop_create(1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p[i].loop);
    evloop_on_wake(p[i].loop, probe_woken, &p[i]);
    evloop_tick(p[i].loop, probe_stop, NULL);
    atomic_init(&p[i].ready, i != 1);          /* probe 1's window is full */
    queue_add_waiter(&q, p[i].loop, i == 3 ? NULL : &p[i].ready);
  }
  queue_fill(&q, 1);
  CU_ASSERT_EQUAL(probes_woken(p, 4), 1u << 0);
  queue_fill(&q, 1);
  CU_ASSERT_EQUAL(probes_woken(p, 4), 1u << 2);   /* the next in turn that can take */
  queue_fill(&q, 1);
  CU_ASSERT_EQUAL(probes_woken(p, 4), 1u << 3);   /* no flag: always a candidate */
  queue_fill(&q, QUEUE_WAKE_SHARE + 1);
  CU_ASSERT_EQUAL(probes_woken(p, 4), (1u << 0) | (1u << 2));
  queue_fill(&q, 10 * QUEUE_WAKE_SHARE);           /* more than all of them: each ready one once */
  CU_ASSERT_EQUAL(probes_woken(p, 4), (1u << 0) | (1u << 2) | (1u << 3));
  atomic_store(&p[0].ready, false);
  atomic_store(&p[2].ready, false);
  queue_remove_waiter(&q, p[3].loop);
  queue_fill(&q, 5);                               /* nobody can take: nobody woken */
  CU_ASSERT_EQUAL(probes_woken(p, 4), 0u);
  atomic_store(&p[1].ready, true);
  queue_fill(&q, 5);
  CU_ASSERT_EQUAL(probes_woken(p, 4), 1u << 1);
  CU_ASSERT_EQUAL(queue_count(&q), 1 + 1 + 1 + QUEUE_WAKE_SHARE + 1 + 10 * QUEUE_WAKE_SHARE + 5 + 5);
  for (unsigned i = 0; i < 4; i++)
    evloop_destroy(p[i].loop);
  queue_destroy(&q);
}

struct taker {
  struct queue *q;
  _Atomic bool stop;
  uint8_t seen[5001];
};

static void *take_slowly(void *arg)
{
  struct taker *t = arg;
  while (!atomic_load(&t->stop) || queue_count(t->q)) {
    struct qlist got = { 0 };
    queue_take(t->q, 7, &got);
    for (struct qitem *x = got.head, *next; x; x = next) {
      next = x->next;
      t->seen[x->msg->id]++;
      qitem_free(x);
    }
    sched_yield();
  }
  return NULL;
}

/* Removals while a consumer takes from the head: every message ends up
 * taken or removed, exactly once. */
static void test_queue_remove_concurrent(void)
{
  for (int round = 0; round < 20; round++) {
    struct queue q;
    queue_init(&q);
    queue_fill(&q, 5000);
    static struct taker t;
    memset(&t, 0, sizeof t);
    t.q = &q;
    pthread_t th;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, take_slowly, &t), 0);
    uint8_t removed[5001] = { 0 };
    for (uint64_t id = 1100; id <= 5000; id += 1100) {
      struct qitem *it = queue_remove_msg(&q, id);
      if (it) {
        removed[it->msg->id]++;
        qitem_free(it);
      }
    }
    atomic_store(&t.stop, true);
    pthread_join(th, NULL);
    bool once = true;
    for (int id = 1; id <= 5000; id++)
      once &= t.seen[id] + removed[id] == 1;
    CU_ASSERT(once);
    queue_destroy(&q);
  }
}

struct id_worker {
  struct ids *ids;
  uint64_t out[20000];
};

static void *take_ids(void *arg)
{
  struct id_worker *w = arg;
  struct id_block b = { 0, 0 };
  for (size_t i = 0; i < sizeof w->out / sizeof w->out[0]; i++)
    w->out[i] = ids_next(w->ids, &b);
  return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void test_ids_unique(void)
{
  static struct ids ids;
  static struct id_worker w[4];
  pthread_t t[4];
  ids_init(&ids, 513, 100, 1);
  for (int i = 0; i < 4; i++) {
    w[i].ids = &ids;
    pthread_create(&t[i], NULL, take_ids, &w[i]);
  }
  for (int i = 0; i < 4; i++)
    pthread_join(t[i], NULL);
  static uint64_t all[80000];
  for (int i = 0; i < 4; i++)
    memcpy(all + i * 20000, w[i].out, sizeof w[i].out);
  qsort(all, 80000, sizeof all[0], cmp_u64);
  size_t dups = 0;
  for (size_t i = 1; i < 80000; i++)
    dups += all[i] == all[i - 1];
  CU_ASSERT_EQUAL(dups, 0);
  CU_ASSERT_EQUAL(ids_node(all[0]), 513);
  CU_ASSERT_EQUAL(ids_node(all[79999]), 513);
  CU_ASSERT_EQUAL(all[0] & IDS_SEQ_MASK, 1);
  /* A restart continues above what was used. */
  struct id_block b = { 0, 0 };
  ids_init(&ids, 513, 100, 80001);
  CU_ASSERT_EQUAL(ids_next(&ids, &b) & IDS_SEQ_MASK, 80001);
}

/* Ranges from a shared sequence: windows stay inside them, a spare range
 * follows on, ids go on alone (counted) when none came, and a spare that
 * came too late is not used below what was handed out. */
static void test_ids_ranges(void)
{
  static struct ids ids;
  ids_init(&ids, 7, 10, 1);
  ids_use_ranges(&ids, 1000, 30);
  struct id_block b = { 0, 0 };
  CU_ASSERT_EQUAL(ids_next(&ids, &b) & IDS_SEQ_MASK, 1000);
  CU_ASSERT_FALSE(ids_want_range(&ids));     /* 10 of 30 taken */
  for (int i = 0; i < 10; i++)
    ids_next(&ids, &b);                       /* 20 of 30 taken */
  CU_ASSERT_TRUE(ids_want_range(&ids));
  CU_ASSERT_TRUE(ids_offer(&ids, 5000, 20));
  CU_ASSERT_FALSE(ids_offer(&ids, 9000, 20)); /* one spare at a time */
  CU_ASSERT_FALSE(ids_want_range(&ids));
  uint64_t seq[40];
  for (int i = 0; i < 39; i++)
    seq[i] = ids_next(&ids, &b) & IDS_SEQ_MASK;
  CU_ASSERT_EQUAL(seq[8], 1019);              /* the first range's end */
  CU_ASSERT_EQUAL(seq[9], 1020);
  CU_ASSERT_EQUAL(seq[18], 1029);
  CU_ASSERT_EQUAL(seq[19], 5000);             /* then the spare */
  CU_ASSERT_EQUAL(seq[38], 5019);
  CU_ASSERT_EQUAL(atomic_load(&ids.unbacked), 0);
  seq[39] = ids_next(&ids, &b) & IDS_SEQ_MASK;
  CU_ASSERT_EQUAL(seq[39], 5020);             /* no range left: on alone, counted */
  CU_ASSERT_EQUAL(atomic_load(&ids.unbacked), 1);
  CU_ASSERT_TRUE(ids_offer(&ids, 100, 50));   /* too late: below what was handed out */
  for (int i = 0; i < 10; i++)
    ids_next(&ids, &b);
  CU_ASSERT((ids_next(&ids, &b) & IDS_SEQ_MASK) > 5020);
  CU_ASSERT_EQUAL(ids_node(ids_next(&ids, &b)), 7);
}

/* UCP SCTS after a restart: past the ceiling the previous process noted;
 * for one of an earlier version (no ceiling), past its last write, its own
 * floor, and what it may have run ahead, however soon the restart came. */
static void test_scts_floor(void)
{
  struct core c;
  memset(&c, 0, sizeof c);
  c.started = 1000;
  core_set_scts_floor(&c, 0, 0, 0);
  CU_ASSERT_EQUAL(c.scts_floor, 1000 + CORE_SCTS_RESTART_MARGIN_S);
  core_set_scts_floor(&c, 999, 0, 0);   /* restarted a second after the last write */
  CU_ASSERT_EQUAL(c.scts_floor, 999 + CORE_SCTS_RESTART_MARGIN_S + CORE_SCTS_RUNAHEAD_S + 1);
  core_set_scts_floor(&c, 500, 0, 0);   /* long ago: its own start decides */
  CU_ASSERT_EQUAL(c.scts_floor, 1000 + CORE_SCTS_RESTART_MARGIN_S);
  /* The previous process started a second after one before it: it stamped
   * from its floor, ahead of its clock and of its last write. */
  core_set_scts_floor(&c, 999, 1008, 0);
  CU_ASSERT_EQUAL(c.scts_floor, 1008 + CORE_SCTS_RUNAHEAD_S + 1);
  core_set_scts_floor(&c, 999, 990, 0);   /* a floor it had passed: its last write decides */
  CU_ASSERT_EQUAL(c.scts_floor, 999 + CORE_SCTS_RESTART_MARGIN_S + CORE_SCTS_RUNAHEAD_S + 1);
  /* A noted ceiling is exact: a second past it, far ahead or not. */
  core_set_scts_floor(&c, 999, 0, 1090);
  CU_ASSERT_EQUAL(c.scts_floor, 1091);
  core_set_scts_floor(&c, 999, 0, 990);   /* long passed: its own start */
  CU_ASSERT_EQUAL(c.scts_floor, 1000);
}

static struct receipt_join_key part_key(const char *ref, uint8_t seq, uint8_t total)
{
  return (struct receipt_join_key){ .origin_connector = 2, .origin_user = "acme", .origin_ref = ref,
                                    .seq = seq, .total = total };
}

static enum receipt_join_verdict offer(struct receipt_join *j, const char *ref, uint8_t seq, uint8_t state,
                                       size_t *n_finish, uint64_t *finish)
{
  struct receipt_join_key k = part_key(ref, seq, 3);
  return receipt_join_offer(j, &k, state, finish, n_finish);
}

static void test_receipt_join(void)
{
  struct receipt_join *j = receipt_join_create(2, 60);
  uint64_t finish[255];
  size_t n;
  /* Delivered: one answer, after the last part's, whatever the order. */
  const uint64_t ids_a[3] = { 101, 102, 103 };
  struct receipt_join_key whole = part_key("A", 0, 3);
  CU_ASSERT_TRUE(receipt_join_register_whole(j, &whole, ids_a, 1000));
  CU_ASSERT_EQUAL(receipt_join_count(j), 1);
  CU_ASSERT_EQUAL(offer(j, "A", 2, MSG_STATE_ENROUTE, &n, finish), RECEIPT_JOIN_HOLD);   /* not the first */
  CU_ASSERT_EQUAL(offer(j, "A", 1, MSG_STATE_ENROUTE, &n, finish), RECEIPT_JOIN_PASS);
  CU_ASSERT_EQUAL(offer(j, "A", 3, MSG_STATE_DELIVERED, &n, finish), RECEIPT_JOIN_HOLD);
  CU_ASSERT_EQUAL(offer(j, "A", 3, MSG_STATE_DELIVERED, &n, finish), RECEIPT_JOIN_HOLD);  /* twice */
  CU_ASSERT_EQUAL(offer(j, "A", 1, MSG_STATE_DELIVERED, &n, finish), RECEIPT_JOIN_HOLD);
  CU_ASSERT_EQUAL(offer(j, "A", 2, MSG_STATE_DELIVERED, &n, finish), RECEIPT_JOIN_PASS);
  CU_ASSERT_EQUAL(n, 0);
  CU_ASSERT_EQUAL(receipt_join_count(j), 0);
  /* Not registered: passes as it comes. */
  CU_ASSERT_EQUAL(offer(j, "A", 1, MSG_STATE_DELIVERED, &n, finish), RECEIPT_JOIN_PASS);

  /* The first failure answers at once and finishes the parts still open;
   * what comes after is held. */
  for (uint8_t seq = 1; seq <= 3; seq++) {
    struct receipt_join_key k = part_key("B", seq, 3);
    CU_ASSERT_TRUE(receipt_join_register(j, &k, 200 + seq, false, 1000));
  }
  CU_ASSERT_EQUAL(offer(j, "B", 1, MSG_STATE_DELIVERED, &n, finish), RECEIPT_JOIN_HOLD);
  CU_ASSERT_EQUAL(offer(j, "B", 2, MSG_STATE_UNDELIVERABLE, &n, finish), RECEIPT_JOIN_PASS);
  CU_ASSERT_EQUAL(n, 1);
  CU_ASSERT_EQUAL(finish[0], 203);
  CU_ASSERT_EQUAL(offer(j, "B", 1, MSG_STATE_ENROUTE, &n, finish), RECEIPT_JOIN_HOLD);
  CU_ASSERT_EQUAL(offer(j, "B", 3, MSG_STATE_REJECTED, &n, finish), RECEIPT_JOIN_HOLD);
  CU_ASSERT_EQUAL(n, 0);
  CU_ASSERT_EQUAL(receipt_join_count(j), 0);

  /* Rebuilt from the journal: only the parts registered are open. */
  struct receipt_join_key k = part_key("C", 2, 3);
  CU_ASSERT_TRUE(receipt_join_register(j, &k, 302, true, 1000));
  CU_ASSERT_EQUAL(offer(j, "C", 2, MSG_STATE_DELIVERED, &n, finish), RECEIPT_JOIN_PASS);
  CU_ASSERT_EQUAL(receipt_join_count(j), 0);

  /* Bounded: a third whole is not kept (its parts pass); no reference, no whole. */
  k = part_key("D", 1, 3);
  CU_ASSERT_TRUE(receipt_join_register(j, &k, 401, false, 1000));
  k = part_key("E", 1, 3);
  CU_ASSERT_TRUE(receipt_join_register(j, &k, 501, false, 1010));
  k = part_key("F", 1, 3);
  CU_ASSERT_FALSE(receipt_join_register(j, &k, 601, false, 1010));
  k = part_key("", 1, 3);
  CU_ASSERT_FALSE(receipt_join_register(j, &k, 701, false, 1010));
  CU_ASSERT_EQUAL(offer(j, "F", 1, MSG_STATE_DELIVERED, &n, finish), RECEIPT_JOIN_PASS);
  /* The same reference from another origin account is another whole. */
  struct receipt_join_key other = part_key("D", 1, 3);
  other.origin_user = "other";
  CU_ASSERT_EQUAL(receipt_join_offer(j, &other, MSG_STATE_DELIVERED, finish, &n), RECEIPT_JOIN_PASS);
  CU_ASSERT_EQUAL(offer(j, "D", 1, MSG_STATE_DELIVERED, &n, finish), RECEIPT_JOIN_HOLD);
  /* Forgotten after the TTL, oldest first. */
  CU_ASSERT_EQUAL(receipt_join_expire(j, 1061), 1);
  CU_ASSERT_EQUAL(receipt_join_count(j), 1);
  CU_ASSERT_EQUAL(receipt_join_expire(j, 1071), 1);
  CU_ASSERT_EQUAL(receipt_join_count(j), 0);
  receipt_join_destroy(j);
}

/* The console's series: counters as rates, gauges as values, 1 s and
 * coarse samples, gaps, resets, bounds. */
static void test_series(void)
{
  struct series_set *s = series_create(3, 5, 10, 4);
  CU_ASSERT_FATAL(s != NULL);
  double v[16];
  struct series_view view;
  /* t = 100..109: received grows by 2 a second (from 1000), queue is t - 100 */
  for (int64_t t = 100; t < 110; t++) {
    series_begin(s, t);
    series_put(s, "received", SERIES_COUNTER, "msgs/s", 1000 + 2 * (uint64_t)(t - 100));
    series_put(s, "queue", SERIES_GAUGE, "messages", (uint64_t)(t - 100));
    series_end(s);
  }
  /* The fine ring holds the last 5 seconds. */
  CU_ASSERT_TRUE(series_read(s, "received", 0, 1, v, 16, &view));
  CU_ASSERT_EQUAL(view.count, 5);
  CU_ASSERT_EQUAL(view.start, 105);
  CU_ASSERT_EQUAL(view.kind, SERIES_COUNTER);
  CU_ASSERT_STRING_EQUAL(view.unit, "msgs/s");
  CU_ASSERT_DOUBLE_EQUAL(v[0], 2.0, 1e-9);
  CU_ASSERT_DOUBLE_EQUAL(v[4], 2.0, 1e-9);
  CU_ASSERT_TRUE(series_read(s, "queue", 107, 1, v, 16, &view));
  CU_ASSERT(view.count == 2 && view.start == 108 && v[0] == 8 && v[1] == 9);
  /* One coarse sample so far (at 100, the first: the whole 1000 counted
   * as growth, the counter having started with what it counts) */
  CU_ASSERT_TRUE(series_read(s, "received", 0, 10, v, 16, &view));
  CU_ASSERT(view.count == 1 && view.start == 100 && view.step == 10);
  CU_ASSERT_DOUBLE_EQUAL(v[0], 100.0, 1e-9);
  /* t = 110 closes the next: 20 grown over 10 s, the queue at 10 */
  series_begin(s, 110);
  series_put(s, "received", SERIES_COUNTER, "msgs/s", 1020);
  series_put(s, "queue", SERIES_GAUGE, "messages", 10);
  series_end(s);
  CU_ASSERT_TRUE(series_read(s, "received", 100, 10, v, 16, &view));
  CU_ASSERT(view.count == 1 && view.start == 110);
  CU_ASSERT_DOUBLE_EQUAL(v[0], 2.0, 1e-9);
  CU_ASSERT_TRUE(series_read(s, "queue", 100, 10, v, 16, &view));
  CU_ASSERT_DOUBLE_EQUAL(v[0], 10.0, 1e-9);
  /* A sample not newer than the last is ignored. */
  series_begin(s, 110);
  series_put(s, "received", SERIES_COUNTER, "msgs/s", 999999);
  series_end(s);
  CU_ASSERT_TRUE(series_read(s, "received", 109, 1, v, 16, &view));
  CU_ASSERT(view.count == 1 && v[0] == 2.0);
  /* A gap of 3 s: no growth and the gauge as it was; then a reset counts
   * what the counter is at. */
  series_begin(s, 114);
  series_put(s, "received", SERIES_COUNTER, "msgs/s", 7);
  series_put(s, "queue", SERIES_GAUGE, "messages", 4);
  series_end(s);
  CU_ASSERT_TRUE(series_read(s, "received", 110, 1, v, 16, &view));
  CU_ASSERT(view.count == 4 && v[0] == 0 && v[1] == 0 && v[2] == 0 && v[3] == 7);
  CU_ASSERT_TRUE(series_read(s, "queue", 110, 1, v, 16, &view));
  CU_ASSERT(view.count == 4 && v[0] == 10 && v[2] == 10 && v[3] == 4);
  /* Bounded: a third name fits, a fourth does not; an unknown name reads false. */
  series_begin(s, 115);
  series_put(s, "third", SERIES_GAUGE, "x", 1);
  series_put(s, "fourth", SERIES_GAUGE, "x", 1);
  series_end(s);
  struct series_stats st;
  series_stats(s, &st);
  CU_ASSERT(st.series == 3 && st.dropped_names == 1 && st.bytes == 3 * (5 + 4) * sizeof(uint32_t));
  CU_ASSERT_FALSE(series_read(s, "fourth", 0, 1, v, 16, &view));
  /* Nothing after since: none. */
  CU_ASSERT_TRUE(series_read(s, "queue", 115, 1, v, 16, &view));
  CU_ASSERT_EQUAL(view.count, 0);
  series_destroy(s);
}

/* A router swapped out by a reload stays while a thread that may hold it
 * is inside core_enter, and is freed by the next reclaim once it left. */
static void test_swap_grace(void)
{
  struct config cfg;
  memset(&cfg, 0, sizeof cfg);
  struct core c;
  memset(&c, 0, sizeof c);
  c.grace = grace_create();
  CU_ASSERT_PTR_NOT_NULL_FATAL(c.grace);
  atomic_init(&c.router, router_create(&cfg));
  size_t pending = 99;
  core_enter(&c);
  struct router *held = atomic_load(&c.router);
  core_swap_router(&c, router_create(&cfg));
  CU_ASSERT_PTR_NOT_EQUAL(atomic_load(&c.router), held);
  core_reclaim(&c, &pending);
  CU_ASSERT_EQUAL(pending, 1);   /* this thread is inside: kept */
  core_leave(&c);
  core_reclaim(&c, &pending);
  CU_ASSERT_EQUAL(pending, 0);
  /* With nobody inside, the next reclaim frees it. */
  core_swap_router(&c, router_create(&cfg));
  core_reclaim(&c, &pending);
  CU_ASSERT_EQUAL(pending, 0);
  /* No plugin host yet: swapping one in retires nothing. */
  core_swap_plugins(&c, NULL);
  core_reclaim(&c, &pending);
  CU_ASSERT_EQUAL(pending, 0);
  grace_destroy(c.grace);
  router_destroy(atomic_load(&c.router));
}

void suite_core(void);
void suite_core(void)
{
  static const struct test_case cases[] = {
    { "queue order and front pushes", test_queue_order },
    { "a message removed from a long queue", test_queue_remove },
    { "priorities: levels, front pushes, walks, no starving", test_queue_priorities },
    { "the schedule: held until due, in order, listed, cancelled", test_schedule },
    { "long MOs joined, duplicates, time-outs, bounds", test_mo_join },
    { "long MOs: a group per sender, a 16-bit reference's IE dropped", test_mo_join_keys },
    { "long MTs: one receipt for the parts, the first failure, replay, bounds", test_receipt_join },
    { "the console's series: rates, gauges, steps, gaps, bounds", test_series },
    { "removals while a consumer takes", test_queue_remove_concurrent },
    { "a push wakes the consumers it needs, in turns", test_queue_wakes },
    { "ids unique across threads", test_ids_unique },
    { "ids from ranges of a shared sequence", test_ids_ranges },
    { "UCP SCTS floor after a restart", test_scts_floor },
    { "a swapped router kept while a thread is inside", test_swap_grace },
    { NULL, NULL },
  };
  test_add_suite("core", cases);
}
