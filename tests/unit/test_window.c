/* test_window.c - the window of outstanding requests: allocation order,
 * wrap-around, skipping outstanding refs, capacity, expiry, in UCP's TRN
 * space (00-99) and SMPP's sequence space (1-0x7FFFFFFF).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdlib.h>
#include "testutil.h"
#include "window.h"

#define UCP_FIRST 0
#define UCP_COUNT 100
#define SMPP_FIRST 1
#define SMPP_COUNT 0x7FFFFFFFu

static int cookies[UCP_COUNT];

/* The ref window_alloc hands out, or -1 when it fails. */
static int64_t take(struct window *w, void *cookie, uint64_t now_ms)
{
  uint32_t ref;
  return window_alloc(w, cookie, 0, now_ms, &ref) == 0 ? (int64_t)ref : -1;
}

static void test_order_and_answer(void)
{
  struct window *w = window_create(UCP_FIRST, UCP_COUNT, 10);
  struct window_entry e;
  CU_ASSERT_PTR_NOT_NULL_FATAL(w);
  CU_ASSERT_EQUAL(take(w, &cookies[0], 1000), 0);
  CU_ASSERT_EQUAL(take(w, &cookies[1], 1001), 1);
  CU_ASSERT_EQUAL(take(w, &cookies[2], 1002), 2);
  CU_ASSERT_EQUAL(window_outstanding(w), 3);
  CU_ASSERT_PTR_EQUAL(window_find(w, 2)->cookie, &cookies[2]);
  CU_ASSERT_EQUAL(window_answer(w, 1, &e), 0);
  CU_ASSERT_PTR_EQUAL(e.cookie, &cookies[1]);
  CU_ASSERT_EQUAL(e.sent_ms, 1001);
  CU_ASSERT_EQUAL(window_outstanding(w), 2);
  /* answered twice, never sent, out of the space */
  CU_ASSERT_EQUAL(window_answer(w, 1, &e), WINDOW_E_UNKNOWN);
  CU_ASSERT_PTR_NULL(window_find(w, 1));
  CU_ASSERT_EQUAL(window_answer(w, 50, NULL), WINDOW_E_UNKNOWN);
  CU_ASSERT_EQUAL(window_answer(w, 100, NULL), WINDOW_E_UNKNOWN);
  CU_ASSERT_EQUAL(window_answer(w, UINT32_MAX, NULL), WINDOW_E_UNKNOWN);
  /* a freed ref is not reused before the counter comes round */
  CU_ASSERT_EQUAL(take(w, NULL, 1003), 3);
  CU_ASSERT_EQUAL(window_answer(w, 0, NULL), 0);
  CU_ASSERT_EQUAL(window_answer(w, 2, NULL), 0);
  CU_ASSERT_EQUAL(window_answer(w, 3, NULL), 0);
  CU_ASSERT_EQUAL(window_outstanding(w), 0);
  CU_ASSERT_PTR_NULL(window_oldest(w));
  window_destroy(w);
}

static void test_tag(void)
{
  struct window *w = window_create(SMPP_FIRST, SMPP_COUNT, 4);
  uint32_t ref;
  struct window_entry e;
  CU_ASSERT_EQUAL_FATAL(window_alloc(w, NULL, 0x104, 5, &ref), 0);
  CU_ASSERT_EQUAL(ref, 1);
  CU_ASSERT_EQUAL(window_find(w, 1)->tag, 0x104);
  CU_ASSERT_EQUAL(window_answer(w, 1, &e), 0);
  CU_ASSERT_EQUAL(e.tag, 0x104);
  CU_ASSERT_EQUAL(e.ref, 1);
  window_destroy(w);
}

static void test_wrap_and_skip(void)
{
  struct window *w = window_create(UCP_FIRST, UCP_COUNT, 100);
  CU_ASSERT_PTR_NOT_NULL_FATAL(w);
  for (int i = 0; i < 98; i++) {
    CU_ASSERT_EQUAL(take(w, NULL, 0), i);
    if (i != 5 && i != 7)
      CU_ASSERT_EQUAL(window_answer(w, (uint32_t)i, NULL), 0);
  }
  /* 05 and 07 still outstanding */
  CU_ASSERT_EQUAL(take(w, NULL, 0), 98);
  CU_ASSERT_EQUAL(take(w, NULL, 0), 99);
  CU_ASSERT_EQUAL(take(w, NULL, 0), 0); /* 99 -> 00 */
  for (int i = 1; i < 5; i++)
    CU_ASSERT_EQUAL(take(w, NULL, 0), i);
  CU_ASSERT_EQUAL(take(w, NULL, 0), 6); /* skips 05 */
  CU_ASSERT_EQUAL(take(w, NULL, 0), 8); /* skips 07 */
  CU_ASSERT_EQUAL(window_outstanding(w), 11);
  /* a new connection numbers from the start again */
  window_reset(w);
  CU_ASSERT_EQUAL(window_outstanding(w), 0);
  CU_ASSERT_PTR_NULL(window_find(w, 5));
  CU_ASSERT_EQUAL(take(w, NULL, 0), 0);
  window_destroy(w);
}

static void test_full(void)
{
  struct window *w = window_create(UCP_FIRST, UCP_COUNT, 3);
  CU_ASSERT_EQUAL(take(w, NULL, 0), 0);
  CU_ASSERT_EQUAL(take(w, NULL, 0), 1);
  CU_ASSERT_EQUAL(take(w, NULL, 0), 2);
  CU_ASSERT_EQUAL(take(w, NULL, 0), -1);
  uint32_t ref = 77;
  CU_ASSERT_EQUAL(window_alloc(w, NULL, 0, 0, &ref), WINDOW_E_FULL);
  CU_ASSERT_EQUAL(ref, 77);
  CU_ASSERT_EQUAL(window_answer(w, 1, NULL), 0);
  CU_ASSERT_EQUAL(take(w, NULL, 0), 3);
  CU_ASSERT_EQUAL(take(w, NULL, 0), -1);
  window_destroy(w);

  /* stop-and-wait */
  w = window_create(UCP_FIRST, UCP_COUNT, 1);
  CU_ASSERT_EQUAL(take(w, NULL, 0), 0);
  CU_ASSERT_EQUAL(take(w, NULL, 0), -1);
  window_destroy(w);

  /* the capacity is clamped to the ref space: all 100 TRNs, then full */
  w = window_create(UCP_FIRST, UCP_COUNT, 1000);
  CU_ASSERT_EQUAL(window_capacity(w), 100);
  for (int i = 0; i < 100; i++)
    CU_ASSERT_EQUAL(take(w, NULL, 0), i);
  CU_ASSERT_EQUAL(take(w, NULL, 0), -1);
  window_destroy(w);
  w = window_create(UCP_FIRST, UCP_COUNT, 0);
  CU_ASSERT_EQUAL(window_capacity(w), 1);
  window_destroy(w);

  /* no ref space, or one running past UINT32_MAX */
  CU_ASSERT_PTR_NULL(window_create(0, 0, 10));
  CU_ASSERT_PTR_NULL(window_create(2, UINT32_MAX, 10));
}

static void test_expire(void)
{
  struct window *w = window_create(UCP_FIRST, UCP_COUNT, 10);
  struct window_entry out[2];
  CU_ASSERT_PTR_NULL(window_oldest(w));
  CU_ASSERT_EQUAL(window_expire(w, 1000000, 0, out, 2), 0);

  /* 00 at t=300, 01 at t=100, 02 at t=200, 03 at t=5000 */
  CU_ASSERT_EQUAL(take(w, &cookies[0], 300), 0);
  CU_ASSERT_EQUAL(take(w, &cookies[1], 100), 1);
  CU_ASSERT_EQUAL(take(w, &cookies[2], 200), 2);
  CU_ASSERT_EQUAL(take(w, &cookies[3], 5000), 3);
  CU_ASSERT_EQUAL(window_oldest(w)->ref, 1);
  CU_ASSERT_EQUAL(window_oldest(w)->sent_ms, 100);

  /* nothing is 1000 ms old at t=1099; at t=1100 only 01 is (>= timeout) */
  CU_ASSERT_EQUAL(window_expire(w, 1099, 1000, out, 2), 0);
  CU_ASSERT_EQUAL(window_expire(w, 1100, 1000, out, 2), 1);
  CU_ASSERT_EQUAL(out[0].ref, 1);
  CU_ASSERT_PTR_EQUAL(out[0].cookie, &cookies[1]);
  CU_ASSERT_EQUAL(out[0].sent_ms, 100);
  CU_ASSERT_EQUAL(window_outstanding(w), 3);

  /* at t=4000 three are old enough (02, 04, 00); out holds two, oldest first */
  CU_ASSERT_EQUAL(take(w, &cookies[4], 250), 4);
  CU_ASSERT_EQUAL(window_expire(w, 4000, 1000, out, 2), 2);
  CU_ASSERT_EQUAL(out[0].ref, 2);
  CU_ASSERT_EQUAL(out[1].ref, 4);
  /* 00 stayed outstanding for the next call */
  CU_ASSERT_EQUAL(window_outstanding(w), 2);
  CU_ASSERT_EQUAL(window_expire(w, 4000, 1000, out, 2), 1);
  CU_ASSERT_EQUAL(out[0].ref, 0);
  CU_ASSERT_PTR_EQUAL(out[0].cookie, &cookies[0]);
  /* an expired ref is gone; 03 is not expired and cannot be answered twice */
  CU_ASSERT_EQUAL(window_answer(w, 0, NULL), WINDOW_E_UNKNOWN);
  CU_ASSERT_EQUAL(window_answer(w, 3, NULL), 0);
  CU_ASSERT_EQUAL(window_answer(w, 3, NULL), WINDOW_E_UNKNOWN);
  CU_ASSERT_EQUAL(window_outstanding(w), 0);

  /* a send time in the future (clock handed in out of order) never expires */
  CU_ASSERT_EQUAL(take(w, NULL, 9000), 5);
  CU_ASSERT_EQUAL(window_expire(w, 8000, 0, out, 2), 0);
  /* equal send times expire in the order they were sent */
  CU_ASSERT_EQUAL(take(w, NULL, 10), 6);
  CU_ASSERT_EQUAL(take(w, NULL, 10), 7);
  CU_ASSERT_EQUAL(window_expire(w, 20, 5, out, 2), 2);
  CU_ASSERT_EQUAL(out[0].ref, 6);
  CU_ASSERT_EQUAL(out[1].ref, 7);
  window_destroy(w);
}

static void test_smpp_space(void)
{
  struct window *w = window_create(SMPP_FIRST, SMPP_COUNT, 1000);
  CU_ASSERT_PTR_NOT_NULL_FATAL(w);
  CU_ASSERT_EQUAL(window_capacity(w), 1000);
  /* sequence numbers start at 1, never 0 */
  CU_ASSERT_EQUAL(take(w, NULL, 0), 1);
  CU_ASSERT_EQUAL(take(w, NULL, 0), 2);
  CU_ASSERT_EQUAL(window_answer(w, 0, NULL), WINDOW_E_UNKNOWN);
  CU_ASSERT_EQUAL(window_answer(w, 1, NULL), 0);
  CU_ASSERT_EQUAL(window_answer(w, 2, NULL), 0);
  window_destroy(w);

  /* a small space starting at 1 wraps to 1, skipping what is outstanding */
  w = window_create(SMPP_FIRST, 5, 5);
  for (int64_t want = 1; want <= 5; want++)
    CU_ASSERT_EQUAL(take(w, NULL, 0), want);
  CU_ASSERT_EQUAL(window_answer(w, 2, NULL), 0);
  CU_ASSERT_EQUAL(window_answer(w, 4, NULL), 0);
  CU_ASSERT_EQUAL(take(w, NULL, 0), 2);
  CU_ASSERT_EQUAL(take(w, NULL, 0), 4);
  CU_ASSERT_EQUAL(take(w, NULL, 0), -1);
  window_destroy(w);

  /* a space ending at UINT32_MAX wraps without overflowing */
  w = window_create(UINT32_MAX - 2, 3, 2);
  CU_ASSERT_PTR_NOT_NULL_FATAL(w);
  CU_ASSERT_EQUAL(take(w, NULL, 0), UINT32_MAX - 2);
  CU_ASSERT_EQUAL(take(w, NULL, 0), UINT32_MAX - 1);
  CU_ASSERT_EQUAL(window_answer(w, UINT32_MAX - 2, NULL), 0);
  CU_ASSERT_EQUAL(take(w, NULL, 0), UINT32_MAX);
  CU_ASSERT_EQUAL(window_answer(w, UINT32_MAX - 1, NULL), 0);
  CU_ASSERT_EQUAL(take(w, NULL, 0), UINT32_MAX - 2);
  window_destroy(w);
}

/* Many outstanding requests in a large space, answered in a scrambled
 * order: every ref stays findable through the index's deletions. */
static void test_large_scrambled(void)
{
  enum { N = 4096 };
  struct window *w = window_create(SMPP_FIRST, SMPP_COUNT, N);
  static uint32_t refs[N];
  uint32_t seen_sum = 0;
  CU_ASSERT_PTR_NOT_NULL_FATAL(w);
  for (int round = 0; round < 3; round++) {
    for (uint32_t i = 0; i < N; i++)
      CU_ASSERT_EQUAL(window_alloc(w, &refs[i], 0, i, &refs[i]), 0);
    CU_ASSERT_EQUAL(window_alloc(w, NULL, 0, 0, &seen_sum), WINDOW_E_FULL);
    for (uint32_t i = 0; i < N; i++) {
      uint32_t k = (i * 2654435761u) % N; /* a permutation: N is a power of two, the factor odd */
      struct window_entry e;
      CU_ASSERT_PTR_NOT_NULL(window_find(w, refs[k]));
      CU_ASSERT_EQUAL(window_answer(w, refs[k], &e), 0);
      CU_ASSERT_PTR_EQUAL(e.cookie, &refs[k]);
      CU_ASSERT_EQUAL(e.sent_ms, k);
    }
    CU_ASSERT_EQUAL(window_outstanding(w), 0);
  }
  /* three rounds of 4096 refs numbered on without reuse */
  CU_ASSERT_EQUAL(refs[N - 1], 3 * N);
  window_destroy(w);
}

void suite_window(void);
void suite_window(void)
{
  static const struct test_case cases[] = {
    { "order and answer", test_order_and_answer },
    { "tags", test_tag },
    { "wrap 99 -> 00 and skip outstanding", test_wrap_and_skip },
    { "window full", test_full },
    { "expiry", test_expire },
    { "SMPP sequence space", test_smpp_space },
    { "large window, scrambled answers", test_large_scrambled },
    { NULL, NULL },
  };
  test_add_suite("window", cases);
}
