/* test_hexutil.c - hex encode/decode.
 * SPDX-License-Identifier: Apache-2.0 */
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

/* Every pair of characters, against hex_digit: the decoder's table must
 * take exactly the 22 hex digits and give their values. */
static void test_every_pair(void)
{
  unsigned wrong = 0, valid = 0;
  for (int a = 0; a < 256; a++)
    for (int b = 0; b < 256; b++) {
      char in[2] = { (char)a, (char)b };
      uint8_t out = 0;
      int hi = hex_digit(a), lo = hex_digit(b);
      int rc = hex_decode(&out, in, 2);
      if (hi < 0 || lo < 0)
        wrong += rc != -1;
      else
        wrong += rc != 1 || out != (uint8_t)(hi << 4 | lo), valid++;
    }
  CU_ASSERT_EQUAL(wrong, 0);
  CU_ASSERT_EQUAL(valid, 22 * 22);
}

void suite_hexutil(void);
void suite_hexutil(void)
{
  static const struct test_case cases[] = {
    { "roundtrip", test_roundtrip },
    { "bad input", test_bad_input },
    { "every pair of characters", test_every_pair },
    { NULL, NULL },
  };
  test_add_suite("hexutil", cases);
}
