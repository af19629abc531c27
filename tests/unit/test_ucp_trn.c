/* test_ucp_trn.c - UCP TRN window: allocation order, wrap, skipping, window limit, expiry. */
#include "testutil.h"
#include "ucp_trn.h"

static int cookies[UCP_TRN_COUNT];

static void test_order_and_answer(void)
{
  struct ucp_trn_window w;
  void *c = NULL;
  ucp_trn_init(&w, 10);
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, &cookies[0], 1000), 0);
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, &cookies[1], 1001), 1);
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, &cookies[2], 1002), 2);
  CU_ASSERT_EQUAL(w.outstanding, 3);
  CU_ASSERT_EQUAL(ucp_trn_answer(&w, 1, &c), 0);
  CU_ASSERT_PTR_EQUAL(c, &cookies[1]);
  CU_ASSERT_EQUAL(w.outstanding, 2);
  /* answered twice, never sent, out of range */
  CU_ASSERT_EQUAL(ucp_trn_answer(&w, 1, &c), UCP_TRN_E_UNKNOWN);
  CU_ASSERT_EQUAL(ucp_trn_answer(&w, 50, NULL), UCP_TRN_E_UNKNOWN);
  CU_ASSERT_EQUAL(ucp_trn_answer(&w, -1, NULL), UCP_TRN_E_UNKNOWN);
  CU_ASSERT_EQUAL(ucp_trn_answer(&w, 100, NULL), UCP_TRN_E_UNKNOWN);
  /* a freed TRN is not reused before the counter comes round */
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, NULL, 1003), 3);
  CU_ASSERT_EQUAL(ucp_trn_answer(&w, 0, NULL), 0);
  CU_ASSERT_EQUAL(ucp_trn_answer(&w, 2, NULL), 0);
  CU_ASSERT_EQUAL(ucp_trn_answer(&w, 3, NULL), 0);
  CU_ASSERT_EQUAL(w.outstanding, 0);
}

static void test_wrap_and_skip(void)
{
  struct ucp_trn_window w;
  ucp_trn_init(&w, 100);
  for (int i = 0; i < 98; i++) {
    CU_ASSERT_EQUAL(ucp_trn_alloc(&w, NULL, 0), i);
    if (i != 5 && i != 7)
      CU_ASSERT_EQUAL(ucp_trn_answer(&w, i, NULL), 0);
  }
  /* 05 and 07 still outstanding */
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, NULL, 0), 98);
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, NULL, 0), 99);
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, NULL, 0), 0); /* 99 -> 00 */
  for (int i = 1; i < 5; i++)
    CU_ASSERT_EQUAL(ucp_trn_alloc(&w, NULL, 0), i);
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, NULL, 0), 6); /* skips 05 */
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, NULL, 0), 8); /* skips 07 */
  CU_ASSERT_EQUAL(w.outstanding, 11);
}

static void test_window_full(void)
{
  struct ucp_trn_window w;
  ucp_trn_init(&w, 3);
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, NULL, 0), 0);
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, NULL, 0), 1);
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, NULL, 0), 2);
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, NULL, 0), UCP_TRN_E_FULL);
  CU_ASSERT_EQUAL(ucp_trn_answer(&w, 1, NULL), 0);
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, NULL, 0), 3);
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, NULL, 0), UCP_TRN_E_FULL);

  /* stop-and-wait */
  ucp_trn_init(&w, 1);
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, NULL, 0), 0);
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, NULL, 0), UCP_TRN_E_FULL);

  /* the window is clamped to 1-100: all 100 TRNs, then full */
  ucp_trn_init(&w, 1000);
  CU_ASSERT_EQUAL(w.window, 100);
  for (int i = 0; i < 100; i++)
    CU_ASSERT_EQUAL(ucp_trn_alloc(&w, NULL, 0), i);
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, NULL, 0), UCP_TRN_E_FULL);
  ucp_trn_init(&w, 0);
  CU_ASSERT_EQUAL(w.window, 1);
}

static void test_expire(void)
{
  struct ucp_trn_window w;
  struct ucp_trn_expired out[2];
  uint64_t sent = 0;
  ucp_trn_init(&w, 10);
  CU_ASSERT_EQUAL(ucp_trn_oldest(&w, &sent), UCP_TRN_E_UNKNOWN);
  CU_ASSERT_EQUAL(ucp_trn_expire(&w, 1000000, 0, out, 2), 0);

  /* 00 at t=300, 01 at t=100, 02 at t=200, 03 at t=5000 */
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, &cookies[0], 300), 0);
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, &cookies[1], 100), 1);
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, &cookies[2], 200), 2);
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, &cookies[3], 5000), 3);
  CU_ASSERT_EQUAL(ucp_trn_oldest(&w, &sent), 1);
  CU_ASSERT_EQUAL(sent, 100);

  /* nothing is 1000 ms old at t=1099; at t=1100 only 01 is (>= timeout) */
  CU_ASSERT_EQUAL(ucp_trn_expire(&w, 1099, 1000, out, 2), 0);
  CU_ASSERT_EQUAL(ucp_trn_expire(&w, 1100, 1000, out, 2), 1);
  CU_ASSERT_EQUAL(out[0].trn, 1);
  CU_ASSERT_PTR_EQUAL(out[0].cookie, &cookies[1]);
  CU_ASSERT_EQUAL(out[0].sent_ms, 100);
  CU_ASSERT_EQUAL(w.outstanding, 3);

  /* at t=4000 three are old enough (02, 04, 00); out holds two, oldest first */
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, &cookies[4], 250), 4);
  CU_ASSERT_EQUAL(ucp_trn_expire(&w, 4000, 1000, out, 2), 2);
  CU_ASSERT_EQUAL(out[0].trn, 2);
  CU_ASSERT_EQUAL(out[1].trn, 4);
  /* 00 stayed outstanding for the next call */
  CU_ASSERT_EQUAL(w.outstanding, 2);
  CU_ASSERT_EQUAL(ucp_trn_expire(&w, 4000, 1000, out, 2), 1);
  CU_ASSERT_EQUAL(out[0].trn, 0);
  CU_ASSERT_PTR_EQUAL(out[0].cookie, &cookies[0]);
  /* an expired TRN is free again; 03 is not expired and cannot be answered twice */
  CU_ASSERT_EQUAL(ucp_trn_answer(&w, 0, NULL), UCP_TRN_E_UNKNOWN);
  CU_ASSERT_EQUAL(ucp_trn_answer(&w, 3, NULL), 0);
  CU_ASSERT_EQUAL(w.outstanding, 0);

  /* a send time in the future (clock handed in out of order) never expires */
  CU_ASSERT_EQUAL(ucp_trn_alloc(&w, NULL, 9000), 5);
  CU_ASSERT_EQUAL(ucp_trn_expire(&w, 8000, 0, out, 2), 0);
}

void suite_ucp_trn(void);
void suite_ucp_trn(void)
{
  static const struct test_case cases[] = {
    { "order and answer", test_order_and_answer },
    { "wrap and skip outstanding", test_wrap_and_skip },
    { "window full", test_window_full },
    { "expiry", test_expire },
    { NULL, NULL },
  };
  test_add_suite("ucp_trn", cases);
}
