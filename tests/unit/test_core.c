/* test_core.c - the core's small modules: queues, message ids. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "ids.h"
#include "queue.h"
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

void suite_core(void);
void suite_core(void)
{
  static const struct test_case cases[] = {
    { "queue order and front pushes", test_queue_order },
    { "ids unique across threads", test_ids_unique },
    { "ids from ranges of a shared sequence", test_ids_ranges },
    { "UCP SCTS floor after a restart", test_scts_floor },
    { NULL, NULL },
  };
  test_add_suite("core", cases);
}
