/* test_msg.c - the neutral message: copies that own their payload, final
 * states, and which receipts a dlr_mask asks for.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <string.h>
#include "msg.h"
#include "testutil.h"

static void test_clone(void)
{
  uint8_t udh[] = { 0x05, 0x00, 0x03, 0x2A, 0x02, 0x01 };
  uint8_t data[] = { 'h', 'e', 'l', 'l', 'o' };
  struct msg m = { .id = 42, .coding = 0, .dlr_mask = MSG_DLR_DELIVERED, .udh_len = sizeof udh,
                   .data_len = sizeof data, .udh = udh, .data = data, .credit_epoch = 9 };
  strcpy(m.src.addr, "4912345");
  strcpy(m.dst.addr, "4967890");
  strcpy(m.origin.ref, "abc");
  struct msg *c = msg_clone(&m);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  /* the copy owns its payload: changing the original's buffers leaves it alone */
  memset(udh, 0, sizeof udh);
  memset(data, 'x', sizeof data);
  CU_ASSERT_EQUAL(c->id, 42);
  CU_ASSERT_STRING_EQUAL(c->src.addr, "4912345");
  CU_ASSERT_STRING_EQUAL(c->dst.addr, "4967890");
  CU_ASSERT_STRING_EQUAL(c->origin.ref, "abc");
  CU_ASSERT_EQUAL(c->dlr_mask, MSG_DLR_DELIVERED);
  CU_ASSERT_EQUAL(c->credit_epoch, 9);   /* the credit taken for it goes with the copy */
  CU_ASSERT_EQUAL_FATAL(c->udh_len, 6);
  CU_ASSERT_EQUAL_FATAL(c->data_len, 5);
  CU_ASSERT_PTR_NOT_EQUAL(c->udh, udh);
  CU_ASSERT_PTR_NOT_EQUAL(c->data, data);
  CU_ASSERT_EQUAL(c->udh[3], 0x2A);
  CU_ASSERT_EQUAL(memcmp(c->data, "hello", 5), 0);
  /* a clone of a clone is independent too */
  struct msg *cc = msg_clone(c);
  CU_ASSERT_PTR_NOT_NULL_FATAL(cc);
  msg_free(c);
  CU_ASSERT_EQUAL(memcmp(cc->data, "hello", 5), 0);
  CU_ASSERT_EQUAL(cc->udh[0], 0x05);
  CU_ASSERT_PTR_NULL(cc->callback);
  msg_free(cc);

  /* A receipt callback URL is owned by the copy too. */
  char url[] = "http://127.0.0.1:8080/dlr?id=%I&status=%d";
  m.udh = udh;
  m.data = data;
  m.callback = url;
  m.callback_method = MSG_CALLBACK_GET;
  c = msg_clone(&m);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  url[0] = 'X';
  CU_ASSERT_PTR_NOT_EQUAL(c->callback, url);
  CU_ASSERT_STRING_EQUAL(c->callback, "http://127.0.0.1:8080/dlr?id=%I&status=%d");
  CU_ASSERT_EQUAL(c->callback_method, MSG_CALLBACK_GET);
  CU_ASSERT_EQUAL(c->data_len, 5);
  msg_free(c);
}

static void test_clone_empty(void)
{
  struct msg m = { .id = 7 };
  struct msg *c = msg_clone(&m);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_PTR_NULL(c->udh);
  CU_ASSERT_EQUAL(c->udh_len, 0);
  CU_ASSERT_EQUAL(c->data_len, 0);
  CU_ASSERT_EQUAL(c->id, 7);
  msg_free(c);
  /* no UDH, some text */
  m.data = (const uint8_t *)"abc";
  m.data_len = 3;
  c = msg_clone(&m);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_PTR_NULL(c->udh);
  CU_ASSERT_EQUAL(memcmp(c->data, "abc", 3), 0);
  msg_free(c);
  msg_free(NULL);
}

static void test_state_final(void)
{
  CU_ASSERT_FALSE(msg_state_final(MSG_STATE_ENROUTE));
  CU_ASSERT_TRUE(msg_state_final(MSG_STATE_DELIVERED));
  CU_ASSERT_TRUE(msg_state_final(MSG_STATE_EXPIRED));
  CU_ASSERT_TRUE(msg_state_final(MSG_STATE_DELETED));
  CU_ASSERT_TRUE(msg_state_final(MSG_STATE_UNDELIVERABLE));
  CU_ASSERT_TRUE(msg_state_final(MSG_STATE_ACCEPTED)); /* final, as SMPP 3.4 says */
  CU_ASSERT_TRUE(msg_state_final(MSG_STATE_UNKNOWN));
  CU_ASSERT_TRUE(msg_state_final(MSG_STATE_REJECTED));
  /* undefined values are not final */
  CU_ASSERT_FALSE(msg_state_final(0));
  CU_ASSERT_FALSE(msg_state_final(9));
  CU_ASSERT_FALSE(msg_state_final(255));
}

static void test_receipt_wanted(void)
{
  static const uint8_t failures[] = { MSG_STATE_EXPIRED, MSG_STATE_DELETED,
                                      MSG_STATE_UNDELIVERABLE, MSG_STATE_UNKNOWN,
                                      MSG_STATE_REJECTED };
  const uint8_t all = MSG_DLR_DELIVERED | MSG_DLR_FAILED | MSG_DLR_BUFFERED;
  CU_ASSERT_TRUE(msg_receipt_wanted(MSG_DLR_DELIVERED, MSG_STATE_DELIVERED));
  CU_ASSERT_FALSE(msg_receipt_wanted(MSG_DLR_FAILED | MSG_DLR_BUFFERED, MSG_STATE_DELIVERED));
  for (size_t i = 0; i < sizeof failures; i++) {
    CU_ASSERT_TRUE(msg_receipt_wanted(MSG_DLR_FAILED, failures[i]));
    CU_ASSERT_FALSE(msg_receipt_wanted(MSG_DLR_DELIVERED | MSG_DLR_BUFFERED, failures[i]));
  }
  /* ENROUTE and ACCEPTED are what Kannel calls buffered */
  CU_ASSERT_TRUE(msg_receipt_wanted(MSG_DLR_BUFFERED, MSG_STATE_ENROUTE));
  CU_ASSERT_TRUE(msg_receipt_wanted(MSG_DLR_BUFFERED, MSG_STATE_ACCEPTED));
  CU_ASSERT_FALSE(msg_receipt_wanted(MSG_DLR_DELIVERED | MSG_DLR_FAILED, MSG_STATE_ENROUTE));
  CU_ASSERT_FALSE(msg_receipt_wanted(MSG_DLR_DELIVERED | MSG_DLR_FAILED, MSG_STATE_ACCEPTED));
  /* no receipt wanted at all; unknown states never */
  CU_ASSERT_FALSE(msg_receipt_wanted(0, MSG_STATE_DELIVERED));
  CU_ASSERT_FALSE(msg_receipt_wanted(0, MSG_STATE_REJECTED));
  CU_ASSERT_FALSE(msg_receipt_wanted(all, 0));
  CU_ASSERT_FALSE(msg_receipt_wanted(all, 9));
}

static void test_resolve_times(void)
{
  struct msg m = { 0 };
  m.validity = -3600;       /* one hour after acceptance */
  m.deferred = 1700000000;  /* already absolute: unchanged */
  msg_resolve_times(&m, 1800000000);
  CU_ASSERT_EQUAL(m.validity, 1800003600);
  CU_ASSERT_EQUAL(m.deferred, 1700000000);
  m.validity = 0;           /* none: stays none */
  msg_resolve_times(&m, 1800000000);
  CU_ASSERT_EQUAL(m.validity, 0);
}

void suite_msg(void);
void suite_msg(void)
{
  static const struct test_case cases[] = {
    { "relative times resolved", test_resolve_times },
    { "clone owns its payload", test_clone },
    { "clone without payload", test_clone_empty },
    { "final states", test_state_final },
    { "receipts wanted by dlr_mask", test_receipt_wanted },
    { NULL, NULL },
  };
  test_add_suite("msg", cases);
}
