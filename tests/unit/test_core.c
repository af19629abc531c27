/* test_core.c - the core's small modules: routes, queues, message ids. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "ids.h"
#include "queue.h"
#include "router.h"
#include "testutil.h"

static const char routes_conf[] =
  "connectors = (\n"
  "  { name = \"in\"; protocol = \"ucp\"; mode = \"server\"; listen = \"127.0.0.1:1\";\n"
  "    users = ( { name = \"u\"; password = \"p\"; } ); },\n"
  "  { name = \"in2\"; protocol = \"smpp\"; mode = \"server\"; listen = \"127.0.0.1:2\";\n"
  "    users = ( { name = \"u\"; password = \"p\"; } ); },\n"
  "  { name = \"a\"; protocol = \"smpp\"; mode = \"client\"; connect = \"127.0.0.1:3\"; system_id = \"x\"; },\n"
  "  { name = \"b\"; protocol = \"smpp\"; mode = \"client\"; connect = \"127.0.0.1:4\"; system_id = \"x\"; },\n"
  "  { name = \"c\"; protocol = \"smpp\"; mode = \"client\"; connect = \"127.0.0.1:5\"; system_id = \"x\"; },\n"
  "  { name = \"d\"; protocol = \"smpp\"; mode = \"client\"; connect = \"127.0.0.1:6\"; system_id = \"x\"; }\n"
  ");\n"
  "routes = (\n"
  "  { dst_prefix = \"49\"; to = \"a\"; },\n"
  "  { dst_prefix = \"4917\"; to = \"b\"; },\n"
  "  { from = \"in2\"; dst_prefix = \"4917\"; to = \"c\"; },\n"
  "  { dst_prefix = \"4917\"; src_prefix = \"31\"; to = \"d\"; },\n"
  "  { to = \"a\"; }\n"
  ");\n";

static int route_of(const struct router *r, int from, const char *src, const char *dst)
{
  struct msg m;
  memset(&m, 0, sizeof m);
  snprintf(m.src.addr, sizeof m.src.addr, "%s", src);
  snprintf(m.dst.addr, sizeof m.dst.addr, "%s", dst);
  return router_route(r, from, &m);
}

static void test_router_precedence(void)
{
  struct config_errors errors = { 0 };
  struct config *cfg = config_load_string(routes_conf, "routes.conf", &errors);
  CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
  struct router *r = router_create(cfg);
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  /* indexes: in 0, in2 1, a 2, b 3, c 4, d 5 */
  CU_ASSERT_EQUAL(route_of(r, 0, "111", "4930123"), 2);     /* 49 */
  CU_ASSERT_EQUAL(route_of(r, 0, "111", "4917123"), 3);     /* the longer prefix wins */
  CU_ASSERT_EQUAL(route_of(r, 1, "111", "4917123"), 4);     /* a route of its source connector wins */
  CU_ASSERT_EQUAL(route_of(r, 0, "3161", "4917123"), 5);    /* then the source prefix */
  CU_ASSERT_EQUAL(route_of(r, 1, "3161", "4917123"), 4);    /* from beats src_prefix */
  CU_ASSERT_EQUAL(route_of(r, 0, "111", "3312345"), 2);     /* the default */
  router_destroy(r);
  config_free(cfg);
}

static void test_router_no_default(void)
{
  static const char conf[] =
    "connectors = ( { name = \"a\"; protocol = \"smpp\"; mode = \"client\"; connect = \"127.0.0.1:3\";"
    " system_id = \"x\"; } );\n"
    "routes = ( { dst_prefix = \"49\"; to = \"a\"; } );\n";
  struct config_errors errors = { 0 };
  struct config *cfg = config_load_string(conf, "nodefault.conf", &errors);
  CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
  struct router *r = router_create(cfg);
  CU_ASSERT_EQUAL(route_of(r, 0, "1", "4930"), 0);
  CU_ASSERT_EQUAL(route_of(r, 0, "1", "3130"), -1);
  router_destroy(r);
  config_free(cfg);
}

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

void suite_core(void);
void suite_core(void)
{
  static const struct test_case cases[] = {
    { "router precedence", test_router_precedence },
    { "router without a default", test_router_no_default },
    { "queue order and front pushes", test_queue_order },
    { "ids unique across threads", test_ids_unique },
    { NULL, NULL },
  };
  test_add_suite("core", cases);
}
