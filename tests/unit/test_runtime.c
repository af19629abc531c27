/* test_runtime.c - the runtime utilities: histogram, timer heap, I/O buffer,
 * rate limiter and socket helpers.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "histogram.h"
#include "iobuf.h"
#include "netutil.h"
#include "ratelimit.h"
#include "testutil.h"
#include "timerheap.h"
#include "timerwheel.h"

static void test_histogram_percentiles(void)
{
  static struct histogram h;
  histogram_init(&h);
  CU_ASSERT_EQUAL(histogram_percentile(&h, 50), 0);
  for (uint64_t v = 1; v <= 10000; v++)
    histogram_record(&h, v);
  CU_ASSERT_EQUAL(h.count, 10000);
  CU_ASSERT_EQUAL(h.min, 1);
  CU_ASSERT_EQUAL(h.max, 10000);
  uint64_t p50 = histogram_percentile(&h, 50), p99 = histogram_percentile(&h, 99);
  /* Within the 1/64 relative error the bucketing promises. */
  CU_ASSERT(p50 >= 5000 && p50 <= 5000 + 5000 / 64 + 1);
  CU_ASSERT(p99 >= 9900 && p99 <= 9900 + 9900 / 64 + 1);
  CU_ASSERT_EQUAL(histogram_percentile(&h, 100), 10000);
  /* Small values are exact. */
  static struct histogram small;
  histogram_init(&small);
  histogram_record(&small, 3);
  histogram_record(&small, 7);
  CU_ASSERT_EQUAL(histogram_percentile(&small, 50), 3);
  CU_ASSERT_EQUAL(histogram_percentile(&small, 100), 7);
  /* Huge values do not overflow a bucket index. */
  histogram_record(&small, UINT64_MAX);
  CU_ASSERT_EQUAL(histogram_percentile(&small, 100), UINT64_MAX);
  histogram_merge(&h, &small);
  CU_ASSERT_EQUAL(h.count, 10003);
  CU_ASSERT_EQUAL(h.max, UINT64_MAX);
}

static void test_timerheap_order(void)
{
  struct timerheap h;
  timerheap_init(&h, 0);
  static int items[1000];
  /* Deadlines in a scrambled order, with ties. */
  for (int i = 0; i < 1000; i++) {
    items[i] = i;
    CU_ASSERT_EQUAL(timerheap_push(&h, (uint64_t)((i * 7919) % 500), &items[i]), 0);
  }
  CU_ASSERT_EQUAL(timerheap_count(&h), 1000);
  CU_ASSERT_EQUAL(timerheap_next(&h), 0);
  void *data;
  uint64_t last_deadline = 0;
  int last_index = -1, popped = 0;
  while (timerheap_pop_due(&h, 249, &data)) {
    int i = *(int *)data;
    uint64_t d = (uint64_t)((i * 7919) % 500);
    CU_ASSERT(d <= 249);
    CU_ASSERT(d > last_deadline || (d == last_deadline && i > last_index) || popped == 0);
    last_deadline = d;
    last_index = i;
    popped++;
  }
  CU_ASSERT_EQUAL(popped, 500);
  CU_ASSERT_EQUAL(timerheap_next(&h), 250);
  CU_ASSERT_EQUAL(timerheap_pop_due(&h, 249, &data), 0);
  timerheap_destroy(&h);
  CU_ASSERT_EQUAL(timerheap_next(&h), UINT64_MAX);
}

/* Pushes and pops interleaved, as a sink's receipts come and go: every pop
 * is the earliest of what is held (ties in the order pushed), checked
 * against a plain scan of the same timers. */
static void test_timerheap_interleaved(void)
{
  enum { N = 20000 };
  struct timerheap h;
  timerheap_init(&h, 0);
  static uint64_t deadline[N], order[N];
  static bool held[N];
  uint64_t rng = 42, now = 0;
  unsigned pushed = 0, popped = 0, wrong = 0;
  for (unsigned step = 0; step < 4 * N && popped < N; step++) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    if (pushed < N && (rng >> 60) < 9) {   /* a push, a little more often than a pop */
      deadline[pushed] = now + (rng >> 33) % 1000;
      order[pushed] = pushed;
      held[pushed] = true;
      CU_ASSERT_EQUAL_FATAL(timerheap_push(&h, deadline[pushed], &order[pushed]), 0);
      pushed++;
      continue;
    }
    now += (rng >> 40) % 50;
    void *data;
    while (timerheap_pop_due(&h, now, &data)) {
      unsigned got = (unsigned)*(uint64_t *)data, want = N;
      for (unsigned i = 0; i < pushed; i++)
        if (held[i] && (want == N || deadline[i] < deadline[want]))
          want = i;
      wrong += got != want || deadline[got] > now;
      held[got] = false;
      popped++;
    }
  }
  CU_ASSERT_EQUAL(wrong, 0);
  CU_ASSERT(popped > N / 2);
  CU_ASSERT_EQUAL(timerheap_count(&h), pushed - popped);
  timerheap_destroy(&h);
}

/* The wheel against the heap on one random schedule: deadlines 0-3000
 * ticks out (a wheel of 1024 holds the near ones in slots, the rest far),
 * ties, pushes at or before now, long idle gaps. Both must hand out the
 * same timers in the same order, save that a timer pushed already due may
 * come first (the heap orders it by its deadline, the wheel hands it out at
 * once): the wheel's order is checked by deadline and push order instead. */
static void test_timerwheel_against_heap(void)
{
  enum { N = 30000 };
  struct wt { struct timerwheel_node node; unsigned index; bool was_due; };
  static struct wt items[N];
  static bool held[N];
  struct timerwheel w;
  struct timerheap h;
  uint64_t rng = 7, now = 1000000;
  CU_ASSERT_EQUAL_FATAL(timerwheel_init(&w, 10, now), 0);
  timerheap_init(&h, 0);
  unsigned pushed = 0, popped = 0, early = 0, kept = 0, unordered = 0, differ = 0, far = 0;
  uint64_t last_deadline = 0;
  unsigned last_index = 0;
  for (unsigned step = 0; step < 4 * N && popped < N; step++) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    unsigned r = (unsigned)(rng >> 33);
    if (pushed < N && r % 16 < 9) {
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;   /* fresh bits for the deadline */
      r = (unsigned)(rng >> 33);
      uint64_t ahead = r % 7 == 0 ? 1000 + r % 2000 : r % 997;
      uint64_t d = r % 29 == 0 ? now - r % 5 : now + ahead;   /* some already due */
      items[pushed] = (struct wt){ .index = pushed, .was_due = d <= now };
      far += ahead > 1023;
      held[pushed] = true;
      CU_ASSERT_EQUAL_FATAL(timerwheel_push(&w, &items[pushed].node, d), 0);
      CU_ASSERT_EQUAL_FATAL(timerheap_push(&h, d, &items[pushed]), 0);
      pushed++;
      continue;
    }
    now += r % 64 == 0 ? 5000 : r % 40;   /* now and then a long gap */
    struct timerwheel_node *n;
    unsigned got = 0;
    while ((n = timerwheel_pop_due(&w, now))) {
      struct wt *t = (struct wt *)n;
      early += n->deadline > now;
      /* by deadline, then push order; a timer pushed already due may jump */
      if (!t->was_due) {
        unordered += n->deadline < last_deadline || (n->deadline == last_deadline && t->index < last_index);
        last_deadline = n->deadline;
        last_index = t->index;
      }
      held[t->index] = false;
      got++;
      popped++;
    }
    void *data;
    unsigned heap_got = 0;
    for (; timerheap_pop_due(&h, now, &data); heap_got++)
      kept += held[((struct wt *)data)->index];   /* due, yet the wheel kept it */
    differ += heap_got != got;
  }
  CU_ASSERT_EQUAL(early, 0);
  CU_ASSERT_EQUAL(kept, 0);
  CU_ASSERT_EQUAL(differ, 0);
  CU_ASSERT_EQUAL(unordered, 0);
  CU_ASSERT(popped > N / 2);
  CU_ASSERT(far > 1000);
  CU_ASSERT_EQUAL(timerwheel_count(&w), timerheap_count(&h));
  CU_ASSERT_EQUAL(timerwheel_count(&w), pushed - popped);
  timerwheel_destroy(&w);
  timerheap_destroy(&h);
}

/* The wheel's edges: an idle wheel jumping over a gap to a far timer that
 * is already due, and a far timer keeping its place before a near one with
 * the same deadline pushed after it. */
static void test_timerwheel_edges(void)
{
  struct timerwheel w;
  struct timerwheel_node a, b, c;
  CU_ASSERT_EQUAL_FATAL(timerwheel_init(&w, 10, 0), 0);
  CU_ASSERT_EQUAL(timerwheel_push(&w, &a, 5000), 0);
  CU_ASSERT_PTR_NULL(timerwheel_pop_due(&w, 100));
  CU_ASSERT_PTR_EQUAL(timerwheel_pop_due(&w, 6000), &a);   /* due long ago when asked */
  CU_ASSERT_PTR_NULL(timerwheel_pop_due(&w, 6000));
  CU_ASSERT_EQUAL(timerwheel_count(&w), 0);

  CU_ASSERT_EQUAL(timerwheel_push(&w, &a, 9000), 0);      /* far: beyond 6001 + 1023 */
  CU_ASSERT_PTR_NULL(timerwheel_pop_due(&w, 7976));       /* 9000 comes within the span */
  CU_ASSERT_EQUAL(timerwheel_push(&w, &b, 9000), 0);      /* near, same deadline */
  CU_ASSERT_EQUAL(timerwheel_push(&w, &c, 7000), 0);      /* already due */
  CU_ASSERT_PTR_EQUAL(timerwheel_pop_due(&w, 7976), &c);
  CU_ASSERT_PTR_NULL(timerwheel_pop_due(&w, 8999));
  CU_ASSERT_PTR_EQUAL(timerwheel_pop_due(&w, 9000), &a);
  CU_ASSERT_PTR_EQUAL(timerwheel_pop_due(&w, 9000), &b);
  CU_ASSERT_PTR_NULL(timerwheel_pop_due(&w, 100000));
  timerwheel_destroy(&w);
}

static void test_timerheap_bound(void)
{
  struct timerheap h;
  int x;
  timerheap_init(&h, 2);
  CU_ASSERT_EQUAL(timerheap_push(&h, 5, &x), 0);
  CU_ASSERT_EQUAL(timerheap_push(&h, 1, &x), 0);
  CU_ASSERT_EQUAL(timerheap_push(&h, 3, &x), -1);
  CU_ASSERT_EQUAL(timerheap_count(&h), 2);
  timerheap_destroy(&h);
}

static void test_iobuf(void)
{
  struct iobuf b;
  iobuf_init(&b);
  char chunk[1000];
  for (int i = 0; i < 1000; i++)
    chunk[i] = (char)i;
  for (int round = 0; round < 100; round++) {
    CU_ASSERT_EQUAL(iobuf_append(&b, chunk, sizeof chunk), 0);
    CU_ASSERT_EQUAL(memcmp(iobuf_head(&b), chunk, 10), 0);
    iobuf_consume(&b, 999);
    CU_ASSERT_EQUAL(iobuf_len(&b), 1);
    CU_ASSERT_EQUAL(iobuf_head(&b)[0], (uint8_t)chunk[999]);
    iobuf_consume(&b, 1);
  }
  /* Data that stays unread survives growth. */
  for (int i = 0; i < 50; i++)
    CU_ASSERT_EQUAL(iobuf_append(&b, chunk, sizeof chunk), 0);
  CU_ASSERT_EQUAL(iobuf_len(&b), 50000);
  CU_ASSERT_EQUAL(memcmp(iobuf_head(&b) + 49000, chunk, 1000), 0);

  int sv[2];
  CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  CU_ASSERT_EQUAL(iobuf_write_fd(&b, sv[0]), 50000);
  CU_ASSERT_EQUAL(iobuf_len(&b), 0);
  struct iobuf in;
  iobuf_init(&in);
  while (iobuf_len(&in) < 50000 && iobuf_read_fd(&in, sv[1], 16384) > 0)
    ;
  CU_ASSERT_EQUAL(iobuf_len(&in), 50000);
  CU_ASSERT_EQUAL(memcmp(iobuf_head(&in) + 1000, chunk, 1000), 0);
  CU_ASSERT_EQUAL(iobuf_read_fd(&in, sv[1], 16), -1);
  CU_ASSERT_EQUAL(errno, EAGAIN);
  close(sv[0]);
  close(sv[1]);
  iobuf_destroy(&in);
  iobuf_destroy(&b);
}

static void test_ratelimit(void)
{
  struct ratelimit r;
  uint64_t t = 1000000000ull;
  ratelimit_init(&r, 1000, 10, t);
  CU_ASSERT_EQUAL(ratelimit_take(&r, t, 100), 10);   /* the burst only */
  CU_ASSERT_EQUAL(ratelimit_take(&r, t, 1), 0);
  CU_ASSERT(ratelimit_wait_ns(&r, t) > 0);
  t += 5000000;                                       /* 5 ms: 5 tokens */
  CU_ASSERT_EQUAL(ratelimit_take(&r, t, 100), 5);
  uint64_t granted = 0;
  for (int ms = 0; ms < 1000; ms++) {
    t += 1000000;
    granted += ratelimit_take(&r, t, 100);
  }
  CU_ASSERT(granted >= 999 && granted <= 1001);
  ratelimit_init(&r, 0, 1, t);                        /* unlimited */
  CU_ASSERT_EQUAL(ratelimit_take(&r, t, 123456), 123456);
}

static void test_netutil(void)
{
  char err[NETUTIL_ERR_LEN], peer[64];
  struct sockaddr_storage addr;
  socklen_t len;
  CU_ASSERT_EQUAL(net_parse_addr("127.0.0.1:2775", &addr, &len, err, sizeof err), 0);
  CU_ASSERT_EQUAL(net_parse_addr("[::1]:2775", &addr, &len, err, sizeof err), 0);
  CU_ASSERT_EQUAL(net_parse_addr("127.0.0.1", &addr, &len, err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "HOST:PORT"));
  CU_ASSERT_EQUAL(net_parse_addr("127.0.0.1:99999", &addr, &len, err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "bad port"));

  int lfd = net_listen("127.0.0.1:0", err, sizeof err);
  CU_ASSERT_FATAL(lfd >= 0);
  int port = net_local_port(lfd);
  CU_ASSERT(port > 0);
  char target[64];
  snprintf(target, sizeof target, "127.0.0.1:%d", port);
  int cfd = net_connect(target, 1000, err, sizeof err);
  CU_ASSERT_FATAL(cfd >= 0);
  struct pollfd p = { .fd = lfd, .events = POLLIN };
  CU_ASSERT_EQUAL(poll(&p, 1, 1000), 1);
  int afd = net_accept(lfd, peer, sizeof peer);
  CU_ASSERT(afd >= 0);
  CU_ASSERT_EQUAL(strncmp(peer, "127.0.0.1:", 10), 0);
  close(afd);
  close(cfd);
  close(lfd);
  /* Nothing listens on the port any more: a clear error. */
  CU_ASSERT_EQUAL(net_connect(target, 1000, err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "connect to"));
}

void suite_runtime(void);
void suite_runtime(void)
{
  static const struct test_case cases[] = {
    { "histogram percentiles", test_histogram_percentiles },
    { "timer heap order", test_timerheap_order },
    { "timer heap bound", test_timerheap_bound },
    { "timer heap, pushes and pops interleaved", test_timerheap_interleaved },
    { "timer wheel against the heap", test_timerwheel_against_heap },
    { "timer wheel: idle gaps, far and near ties", test_timerwheel_edges },
    { "iobuf", test_iobuf },
    { "rate limiter", test_ratelimit },
    { "socket helpers", test_netutil },
    { NULL, NULL },
  };
  test_add_suite("runtime", cases);
}
