/* test_hexutil.c - hex encode/decode. */
#include <string.h>
#include "hexutil.h"
#include "testutil.h"

static void test_roundtrip(void)
{
  const uint8_t in[] = { 0x00, 0x1B, 0x65, 0xAB, 0xFF };
  char hex[16];
  uint8_t out[8];
  CU_ASSERT_EQUAL(hex_encode(hex, in, sizeof in), 10);
  CU_ASSERT_NSTRING_EQUAL(hex, "001B65ABFF", 10);
  CU_ASSERT_EQUAL(hex_decode(out, hex, 10), 5);
  CU_ASSERT_EQUAL(memcmp(in, out, 5), 0);
  CU_ASSERT_EQUAL(hex_decode(out, "abff", 4), 2);
  CU_ASSERT_EQUAL(out[0], 0xAB);
}

static void test_bad_input(void)
{
  uint8_t out[4];
  CU_ASSERT_EQUAL(hex_decode(out, "ABC", 3), -1);
  CU_ASSERT_EQUAL(hex_decode(out, "AG", 2), -1);
  CU_ASSERT_EQUAL(hex_decode(out, " 1", 2), -1);
  CU_ASSERT_EQUAL(hex_decode(out, "", 0), 0);
}

void suite_hexutil(void);
void suite_hexutil(void)
{
  static const struct test_case cases[] = {
    { "roundtrip", test_roundtrip },
    { "bad input", test_bad_input },
    { NULL, NULL },
  };
  test_add_suite("hexutil", cases);
}
