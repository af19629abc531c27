/* test_router.c - routes: precedence, failover and weighted groups, the
 * parts of a concatenated message, the group keys of the config, and
 * routing from many threads at once.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "router.h"
#include "sms_text.h"
#include "config_checks.h"
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

/* Three out connectors and one group route per destination prefix. */
#define ABC_CONNECTORS \
  "connectors = (\n" \
  "  { name = \"a\"; protocol = \"smpp\"; mode = \"client\"; connect = \"127.0.0.1:3\"; system_id = \"x\"; },\n" \
  "  { name = \"b\"; protocol = \"smpp\"; mode = \"client\"; connect = \"127.0.0.1:4\"; system_id = \"x\"; },\n" \
  "  { name = \"c\"; protocol = \"smpp\"; mode = \"client\"; connect = \"127.0.0.1:5\"; system_id = \"x\"; }\n" \
  ");\n"

static const char groups_conf[] =
  ABC_CONNECTORS
  "routes = (\n"
  "  { dst_prefix = \"1\"; to = [ \"a\", \"b\", \"c\" ]; },\n"
  "  { dst_prefix = \"2\"; to = [ \"a\", \"b\", \"c\" ]; mode = \"weighted\"; weights = [ 3, 1, 1 ]; },\n"
  "  { dst_prefix = \"3\"; to = [ \"a\", \"b\", \"c\" ]; mode = \"weighted\"; },\n"
  "  { dst_prefix = \"4\"; to = [ \"a\", \"b\", \"c\" ]; mode = \"weighted\"; weights = [ 200, 100, 100 ]; },\n"
  "  { dst_prefix = \"5\"; to = [ \"c\" ]; mode = \"weighted\"; },\n"
  "  { dst_prefix = \"6\"; to = [ \"a\", \"b\", \"c\" ]; mode = \"weighted\"; weights = [ 4, 1, 1 ]; }\n"
  ");\n";

enum { A, B, C, MEMBERS };   /* the connector indexes of groups_conf */

static struct config *load(const char *text)
{
  struct config_errors errors = { 0 };
  struct config *cfg = config_load_string(text, "router.conf", &errors);
  for (unsigned i = 0; i < errors.count; i++)
    fprintf(stderr, "%s\n", errors.lines[i]);
  config_errors_free(&errors);
  return cfg;
}

/* The router of a config. The config is freed at once: a router keeps
 * nothing of it, as a reload relies on. */
static struct router *router_of(const char *text)
{
  struct config *cfg = load(text);
  struct router *r = cfg ? router_create(cfg) : NULL;
  config_free(cfg);
  return r;
}

/* ctx: a mask of the connectors that are down. */
static bool usable(void *ctx, int connector)
{
  return !(*(const unsigned *)ctx & 1u << connector);
}

static struct msg message(const char *src, const char *dst)
{
  struct msg m;
  memset(&m, 0, sizeof m);
  snprintf(m.src.addr, sizeof m.src.addr, "%s", src);
  snprintf(m.dst.addr, sizeof m.dst.addr, "%s", dst);
  return m;
}

static int route_of(const struct router *r, int from, const char *src, const char *dst)
{
  struct msg m = message(src, dst);
  return router_route(r, from, &m, NULL, NULL);
}

/* A message to dst routed with the connectors of down unusable. */
static int pick(const struct router *r, const char *dst, unsigned down)
{
  struct msg m = message("1000", dst);
  return router_route(r, 0, &m, usable, &down);
}

/* Part seq of a 3-part message with reference ref from src. */
static int pick_part(const struct router *r, const char *src, uint16_t ref, uint8_t seq, unsigned down)
{
  struct sms_text_concat concat = { .ref_size = SMS_TEXT_REF16, .ref = ref, .total = 3, .seq = seq };
  uint8_t udh[16];
  struct msg m = message(src, "2000");
  int len = sms_text_udh_build(udh, sizeof udh, &concat, NULL, 0);
  CU_ASSERT_FATAL(len > 0);
  m.udh = udh;
  m.udh_len = (uint16_t)len;
  return router_route(r, 0, &m, usable, &down);
}

static void test_precedence(void)
{
  struct router *r = router_of(routes_conf);
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  /* indexes: in 0, in2 1, a 2, b 3, c 4, d 5 */
  CU_ASSERT_EQUAL(route_of(r, 0, "111", "4930123"), 2);     /* 49 */
  CU_ASSERT_EQUAL(route_of(r, 0, "111", "4917123"), 3);     /* the longer prefix wins */
  CU_ASSERT_EQUAL(route_of(r, 1, "111", "4917123"), 4);     /* a route of its source connector wins */
  CU_ASSERT_EQUAL(route_of(r, 0, "3161", "4917123"), 5);    /* then the source prefix */
  CU_ASSERT_EQUAL(route_of(r, 1, "3161", "4917123"), 4);    /* from beats src_prefix */
  CU_ASSERT_EQUAL(route_of(r, 0, "111", "3312345"), 2);     /* the default */
  router_destroy(r);
}

/* Of equal routes (the same keys), the earliest in the file wins, whichever
 * connector it names. */
static void test_equal_routes(void)
{
  static const char conf[] =
    ABC_CONNECTORS
    "routes = (\n"
    "  { dst_prefix = \"4914\"; to = \"a\"; },\n"
    "  { dst_prefix = \"4914\"; to = \"b\"; },\n"
    "  { dst_prefix = \"4915\"; src_prefix = \"31\"; to = \"c\"; },\n"
    "  { dst_prefix = \"4915\"; src_prefix = \"31\"; to = \"a\"; },\n"
    "  { dst_prefix = \"4916\"; to = \"b\"; },\n"
    "  { dst_prefix = \"4916\"; to = \"a\"; }\n"
    ");\n";
  struct router *r = router_of(conf);
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  CU_ASSERT_EQUAL(route_of(r, 0, "111", "4914000"), A);
  CU_ASSERT_EQUAL(route_of(r, 0, "3161", "4915000"), C);
  CU_ASSERT_EQUAL(route_of(r, 0, "111", "4916000"), B);
  router_destroy(r);
}

static void test_no_default(void)
{
  static const char conf[] =
    "connectors = ( { name = \"a\"; protocol = \"smpp\"; mode = \"client\"; connect = \"127.0.0.1:3\";"
    " system_id = \"x\"; } );\n"
    "routes = ( { dst_prefix = \"49\"; to = \"a\"; } );\n";
  struct router *r = router_of(conf);
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  CU_ASSERT_EQUAL(route_of(r, 0, "1", "4930"), 0);
  CU_ASSERT_EQUAL(route_of(r, 0, "1", "3130"), -1);
  router_destroy(r);
}

/* What the config holds for groups: names in order, the mode, and a weight
 * for every connector. */
static void test_config_groups(void)
{
  struct config *cfg = load(groups_conf);
  CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
  CU_ASSERT_EQUAL_FATAL(cfg->n_routes, 6);
  const struct config_route *failover = &cfg->routes[0], *weighted = &cfg->routes[1];
  CU_ASSERT_EQUAL(failover->n_to, 3);
  CU_ASSERT_STRING_EQUAL(failover->to[0], "a");
  CU_ASSERT_STRING_EQUAL(failover->to[2], "c");
  CU_ASSERT_EQUAL(failover->mode, CONFIG_ROUTE_FAILOVER);
  CU_ASSERT_EQUAL(failover->n_weights, 3);
  CU_ASSERT_EQUAL(failover->weights[2], 1);
  CU_ASSERT_EQUAL(weighted->mode, CONFIG_ROUTE_WEIGHTED);
  CU_ASSERT_EQUAL(weighted->n_weights, 3);
  CU_ASSERT_EQUAL(weighted->weights[0], 3);
  CU_ASSERT_EQUAL(weighted->weights[1], 1);
  CU_ASSERT_EQUAL(cfg->routes[2].weights[1], 1);           /* weighted without weights: equal */
  config_free(cfg);
}

static void test_failover(void)
{
  struct router *r = router_of(groups_conf);
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  CU_ASSERT_EQUAL(pick(r, "100", 0), A);
  CU_ASSERT_EQUAL(pick(r, "100", 0), A);                   /* no rotation */
  CU_ASSERT_EQUAL(pick(r, "100", 1u << A), B);
  CU_ASSERT_EQUAL(pick(r, "100", 1u << A | 1u << B), C);
  CU_ASSERT_EQUAL(pick(r, "100", 1u << A | 1u << C), B);
  CU_ASSERT_EQUAL(pick(r, "100", 1u << B), A);
  /* None usable: the first, to wait in its queue. */
  CU_ASSERT_EQUAL(pick(r, "100", 1u << A | 1u << B | 1u << C), A);
  CU_ASSERT_EQUAL(route_of(r, 0, "1000", "100"), A);      /* no callback: all usable */
  router_destroy(r);
}

/* counts[] of n picks to dst with the connectors of down unusable. */
static void count_picks(const struct router *r, const char *dst, unsigned down, unsigned n,
                        unsigned counts[MEMBERS])
{
  memset(counts, 0, MEMBERS * sizeof counts[0]);
  for (unsigned i = 0; i < n; i++) {
    int to = pick(r, dst, down);
    CU_ASSERT_FATAL(to >= 0 && to < MEMBERS);
    counts[to]++;
  }
}

static void test_weighted_cycle(void)
{
  struct router *r = router_of(groups_conf);
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  /* 3,1,1: a b a c a, every cycle of five. */
  static const int order[] = { A, B, A, C, A };
  for (unsigned cycle = 0; cycle < 4; cycle++)
    for (unsigned i = 0; i < 5; i++)
      CU_ASSERT_EQUAL(pick(r, "200", 0), order[i]);
  unsigned counts[MEMBERS];
  for (unsigned cycle = 0; cycle < 3; cycle++) {
    count_picks(r, "200", 0, 5, counts);
    CU_ASSERT_EQUAL(counts[A], 3);
    CU_ASSERT_EQUAL(counts[B], 1);
    CU_ASSERT_EQUAL(counts[C], 1);
  }
  /* 200,100,100 is the order of 2,1,1. */
  static const int halves[] = { A, B, C, A };
  for (unsigned cycle = 0; cycle < 3; cycle++)
    for (unsigned i = 0; i < 4; i++)
      CU_ASSERT_EQUAL(pick(r, "400", 0), halves[i]);
  /* Equal weights: smooth, never the same twice in a row. */
  int last = pick(r, "300", 0);
  for (unsigned i = 0; i < 30; i++) {
    int to = pick(r, "300", 0);
    CU_ASSERT_NOT_EQUAL(to, last);
    last = to;
  }
  CU_ASSERT_EQUAL(pick(r, "500", 0), C);                   /* a group of one */
  CU_ASSERT_EQUAL(pick(r, "500", 1u << C), C);
  router_destroy(r);
}

static void test_weighted_unusable(void)
{
  struct router *r = router_of(groups_conf);
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  unsigned counts[MEMBERS];
  /* a (3 of 5) down: b and c share its messages equally, as their weights are. */
  count_picks(r, "200", 1u << A, 10000, counts);
  CU_ASSERT_EQUAL(counts[A], 0);
  CU_ASSERT(counts[B] > 4750 && counts[B] < 5250);
  CU_ASSERT_EQUAL(counts[B] + counts[C], 10000);
  /* b down in 2,1,1: a and c keep 2:1. */
  count_picks(r, "400", 1u << B, 12000, counts);
  CU_ASSERT_EQUAL(counts[B], 0);
  CU_ASSERT(counts[A] > 7800 && counts[A] < 8200);
  CU_ASSERT_EQUAL(counts[A] + counts[C], 12000);
  /* a down in 4,1,1 (a a b a c a): most of its places are odd, yet b and c
   * still share them evenly. */
  count_picks(r, "600", 1u << A, 12000, counts);
  CU_ASSERT(counts[B] > 5800 && counts[B] < 6200);
  CU_ASSERT_EQUAL(counts[B] + counts[C], 12000);
  /* Two down: all to the third. */
  count_picks(r, "200", 1u << A | 1u << C, 100, counts);
  CU_ASSERT_EQUAL(counts[B], 100);
  /* None usable: the regular order, to wait in the queues. */
  router_destroy(r);
  r = router_of(groups_conf);
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  static const int order[] = { A, B, A, C, A };
  for (unsigned i = 0; i < 5; i++)
    CU_ASSERT_EQUAL(pick(r, "200", 1u << A | 1u << B | 1u << C), order[i]);
  router_destroy(r);
}

/* The parts of one message take one connector, whatever was routed between
 * them; different messages spread by weight. */
static void test_concat_parts(void)
{
  struct router *r = router_of(groups_conf);
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  unsigned counts[MEMBERS] = { 0 };
  bool together = true;
  for (uint16_t ref = 0; ref < 100; ref++) {
    int first = pick_part(r, "4915550", ref, 1, 0);
    pick(r, "200", 0);                                     /* the rotation moves on */
    together &= pick_part(r, "4915550", ref, 2, 0) == first;
    pick(r, "200", 0);
    together &= pick_part(r, "4915550", ref, 3, 0) == first;
    CU_ASSERT_FATAL(first >= 0 && first < MEMBERS);
    counts[first]++;
  }
  CU_ASSERT_TRUE(together);
  /* 3,1,1 over 100 messages: 60, 20, 20 give or take a few standard deviations. */
  CU_ASSERT(counts[A] >= 45 && counts[A] <= 75);
  CU_ASSERT(counts[B] >= 8 && counts[B] <= 32);
  CU_ASSERT(counts[C] >= 8 && counts[C] <= 32);
  /* The same reference from another sender is another message. */
  unsigned differ = 0;
  for (uint16_t ref = 0; ref < 100; ref++)
    differ += pick_part(r, "4915550", ref, 1, 0) != pick_part(r, "4915551", ref, 1, 0);
  CU_ASSERT(differ > 20);
  /* With a member down, the parts still agree, and avoid it. */
  together = true;
  for (uint16_t ref = 0; ref < 100; ref++) {
    int first = pick_part(r, "4915550", ref, 1, 1u << A);
    CU_ASSERT_NOT_EQUAL(first, A);
    together &= pick_part(r, "4915550", ref, 2, 1u << A) == first;
  }
  CU_ASSERT_TRUE(together);
  router_destroy(r);
}

/* A reload builds a router from the new config alone: it starts its own
 * cycle, whatever the old one has routed. */
static void test_rebuild(void)
{
  struct router *old = router_of(groups_conf);
  CU_ASSERT_PTR_NOT_NULL_FATAL(old);
  CU_ASSERT_EQUAL(pick(old, "200", 0), A);
  CU_ASSERT_EQUAL(pick(old, "200", 0), B);
  struct router *fresh = router_of(groups_conf);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fresh);
  CU_ASSERT_EQUAL(pick(fresh, "200", 0), A);
  CU_ASSERT_EQUAL(pick(fresh, "200", 0), B);
  CU_ASSERT_EQUAL(pick(old, "200", 0), A);
  CU_ASSERT_EQUAL(pick(fresh, "100", 1u << A), B);
  router_destroy(old);
  router_destroy(fresh);
}

static void load_bad(const char *text, struct config_errors *e)
{
  config_check_refused(text, "router.conf", e);
}

static bool has_error(const struct config_errors *e, unsigned line, const char *key, const char *what)
{
  return config_check_has_error(e, "router.conf", line, key, what);
}

/* A route may name the submitting account: it ranks after the source
 * connector and before the source prefix. */
static void test_account_condition(void)
{
  struct router *r = router_of(
    "connectors = (\n"
    "  { name = \"in\"; protocol = \"ucp\"; mode = \"server\"; listen = \"127.0.0.1:1\";\n"
    "    users = ( { name = \"u\"; password = \"p\"; }, { name = \"v\"; password = \"p\"; } ); },\n"
    "  { name = \"a\"; protocol = \"smpp\"; mode = \"client\"; connect = \"127.0.0.1:3\"; system_id = \"x\"; },\n"
    "  { name = \"b\"; protocol = \"smpp\"; mode = \"client\"; connect = \"127.0.0.1:4\"; system_id = \"x\"; },\n"
    "  { name = \"c\"; protocol = \"smpp\"; mode = \"client\"; connect = \"127.0.0.1:5\"; system_id = \"x\"; }\n"
    ");\n"
    "routes = (\n"
    "  { dst_prefix = \"49\"; src_prefix = \"31\"; to = \"a\"; },\n"
    "  { dst_prefix = \"49\"; account = \"u\"; to = \"b\"; },\n"
    "  { dst_prefix = \"4917\"; to = \"c\"; },\n"
    "  { to = \"a\"; }\n"
    ");\n");
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  struct msg m = message("3161", "4930");
  snprintf(m.origin.user, sizeof m.origin.user, "u");
  CU_ASSERT_EQUAL(router_route(r, 0, &m, NULL, NULL), 2);     /* the account beats the source prefix */
  snprintf(m.origin.user, sizeof m.origin.user, "v");
  CU_ASSERT_EQUAL(router_route(r, 0, &m, NULL, NULL), 1);     /* another account: the source prefix */
  snprintf(m.dst.addr, sizeof m.dst.addr, "4917");
  snprintf(m.origin.user, sizeof m.origin.user, "u");
  CU_ASSERT_EQUAL(router_route(r, 0, &m, NULL, NULL), 3);     /* a longer destination prefix beats it */
  router_destroy(r);

  struct config_errors e = { 0 };
  load_bad(ABC_CONNECTORS "routes = ( { account = \"nobody\"; to = \"a\"; } );\n", &e);
  CU_ASSERT_EQUAL(e.count, 1);
  CU_ASSERT(has_error(&e, 6, "routes.[0].account", "no account is named 'nobody'"));
  config_errors_free(&e);
}

static void test_config_errors(void)
{
  struct config_errors e = { 0 };
  load_bad(
    ABC_CONNECTORS                                                                     /* lines 1-5 */
    "routes = (\n"
    "  { dst_prefix = \"1\"; to = [ \"a\", \"x\" ]; },\n"
    "  { dst_prefix = \"2\"; to = [ \"a\", \"b\" ]; mode = \"weighted\"; weights = [ 1, 2, 3 ]; },\n"
    "  { dst_prefix = \"3\"; to = [ \"a\", \"b\" ]; mode = \"weighted\"; weights = [ 1, 0 ]; },\n"
    "  { dst_prefix = \"4\"; to = \"a\"; mode = \"failover\"; },\n"
    "  { dst_prefix = \"5\"; to = [ \"a\", \"b\" ]; weights = [ 1, 2 ]; },\n"
    "  { dst_prefix = \"6\"; to = [ \"a\", \"b\",\n"
    "                             \"a\" ]; },\n"
    "  { dst_prefix = \"7\"; to = [ ]; },\n"
    "  { dst_prefix = \"8\"; to = 7; },\n"
    "  { dst_prefix = \"9\"; to = [ \"a\", \"b\" ]; mode = \"random\"; },\n"
    "  { dst_prefix = \"10\"; to = [ 1, 2 ]; },\n"
    "  { dst_prefix = \"11\"; to = [ \"a\", \"b\" ]; mode = \"failover\"; weights = [ 1, 1 ]; }\n"
    ");\n",
    &e);
  CU_ASSERT_EQUAL(e.count, 12);
  CU_ASSERT(has_error(&e, 7, "routes.[0].to.[1]", "no connector is named 'x'"));
  CU_ASSERT(has_error(&e, 8, "routes.[1].weights", "3 weights for 2 connectors"));
  CU_ASSERT(has_error(&e, 9, "routes.[2].weights.[1]", "must be 1..1000"));
  CU_ASSERT(has_error(&e, 10, "routes.[3].mode", "applies only when to is an array"));
  CU_ASSERT(has_error(&e, 11, "routes.[4].weights", "applies only when mode = \"weighted\""));
  CU_ASSERT(has_error(&e, 13, "routes.[5].to.[2]", "'a' is already to.[0]"));
  CU_ASSERT(has_error(&e, 14, "routes.[6].to", "needs at least 1 entry"));
  CU_ASSERT(has_error(&e, 15, "routes.[7].to", "must be a string or an array [ ... ] of them, not an integer"));
  CU_ASSERT(has_error(&e, 16, "routes.[8].mode", "'random' is not one of failover|weighted"));
  CU_ASSERT(has_error(&e, 17, "routes.[9].to.[0]", "must be a string, not an integer"));
  CU_ASSERT(has_error(&e, 17, "routes.[9].to.[1]", "must be a string, not an integer"));
  CU_ASSERT(has_error(&e, 18, "routes.[10].weights", "applies only when mode = \"weighted\""));
  config_errors_free(&e);
}

/* A group holds CONFIG_ROUTE_TARGETS_MAX connectors at most. */
static void test_config_group_size(void)
{
  char text[8192];
  size_t len = (size_t)snprintf(text, sizeof text, "connectors = (\n");
  for (unsigned i = 0; i <= CONFIG_ROUTE_TARGETS_MAX; i++)
    len += (size_t)snprintf(text + len, sizeof text - len,
                            "  { name = \"c%u\"; protocol = \"smpp\"; mode = \"client\"; "
                            "connect = \"127.0.0.1:1\"; system_id = \"x\"; }%s\n",
                            i, i < CONFIG_ROUTE_TARGETS_MAX ? "," : "");
  len += (size_t)snprintf(text + len, sizeof text - len, ");\nroutes = ( { to = [");
  for (unsigned i = 0; i <= CONFIG_ROUTE_TARGETS_MAX; i++)
    len += (size_t)snprintf(text + len, sizeof text - len, "%s\"c%u\"", i ? ", " : " ", i);
  snprintf(text + len, sizeof text - len, " ]; } );\n");
  CU_ASSERT_FATAL(strlen(text) < sizeof text - 1);
  struct config_errors e = { 0 };
  load_bad(text, &e);
  char what[64];
  snprintf(what, sizeof what, "holds more than %u entries", CONFIG_ROUTE_TARGETS_MAX);
  CU_ASSERT_EQUAL(e.count, 1);
  CU_ASSERT(has_error(&e, CONFIG_ROUTE_TARGETS_MAX + 4, "routes.[0].to", what));
  config_errors_free(&e);
}

enum { THREADS = 4, PICKS = 100000 };

struct picker {
  const struct router *router;
  unsigned counts[MEMBERS];
};

static void *pick_many(void *arg)
{
  struct picker *p = arg;
  unsigned down = 0;
  struct msg m = message("1000", "200");
  for (unsigned i = 0; i < PICKS; i++) {
    int to = router_route(p->router, 0, &m, usable, &down);
    if (to >= 0 && to < MEMBERS)
      p->counts[to]++;
  }
  return NULL;
}

/* Every pick takes its own place in the cycle, so the totals are exact
 * however the threads interleave: 400000 picks are 80000 cycles of 3,1,1. */
static void test_threads(void)
{
  struct router *r = router_of(groups_conf);
  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  struct picker pickers[THREADS];
  pthread_t threads[THREADS];
  memset(pickers, 0, sizeof pickers);
  for (unsigned i = 0; i < THREADS; i++) {
    pickers[i].router = r;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&threads[i], NULL, pick_many, &pickers[i]), 0);
  }
  unsigned totals[MEMBERS] = { 0 };
  for (unsigned i = 0; i < THREADS; i++) {
    pthread_join(threads[i], NULL);
    for (unsigned k = 0; k < MEMBERS; k++)
      totals[k] += pickers[i].counts[k];
  }
  CU_ASSERT_EQUAL(totals[A], THREADS * PICKS / 5 * 3);
  CU_ASSERT_EQUAL(totals[B], THREADS * PICKS / 5);
  CU_ASSERT_EQUAL(totals[C], THREADS * PICKS / 5);
  router_destroy(r);
}

void suite_router(void);
void suite_router(void)
{
  static const struct test_case cases[] = {
    { "account condition", test_account_condition },
    { "precedence", test_precedence },
    { "the earliest of equal routes", test_equal_routes },
    { "without a default", test_no_default },
    { "groups in the config", test_config_groups },
    { "failover order and unusable members", test_failover },
    { "weighted cycle exact and smooth", test_weighted_cycle },
    { "weighted with unusable members", test_weighted_unusable },
    { "concatenated parts take one member", test_concat_parts },
    { "a rebuilt router starts afresh", test_rebuild },
    { "config errors of groups", test_config_errors },
    { "config group size", test_config_group_size },
    { "threads route at once", test_threads },
    { NULL, NULL },
  };
  test_add_suite("router", cases);
}
