/* hexutil.c - hex text <-> octets.
 * SPDX-License-Identifier: Apache-2.0 */
#include "hexutil.h"

static const char hex_upper[16] = "0123456789ABCDEF";

size_t hex_encode(char *dst, const uint8_t *src, size_t len)
{
  for (size_t i = 0; i < len; i++) {
    dst[2 * i] = hex_upper[src[i] >> 4];
    dst[2 * i + 1] = hex_upper[src[i] & 0x0F];
  }
  return 2 * len;
}

/* 0x10 | the digit's value by character, 0 for what is no hex digit: a UCP
 * message is decoded from hex twice on its way (its text in, its receipt
 * out), so one load a digit rather than three range checks. */
#define D(c, v) [c] = 0x10 | (v)
static const uint8_t hex_value[256] = {
  D('0', 0), D('1', 1), D('2', 2), D('3', 3), D('4', 4), D('5', 5), D('6', 6), D('7', 7), D('8', 8), D('9', 9),
  D('A', 10), D('B', 11), D('C', 12), D('D', 13), D('E', 14), D('F', 15),
  D('a', 10), D('b', 11), D('c', 12), D('d', 13), D('e', 14), D('f', 15),
};
#undef D

int hex_decode(uint8_t *dst, const char *hex, size_t hex_len)
{
  if (hex_len % 2)
    return -1;
  for (size_t i = 0; i < hex_len; i += 2) {
    uint8_t hi = hex_value[(unsigned char)hex[i]], lo = hex_value[(unsigned char)hex[i + 1]];
    if (!(hi & lo & 0x10))
      return -1;
    dst[i / 2] = (uint8_t)((hi & 0x0F) << 4 | (lo & 0x0F));
  }
  return (int)(hex_len / 2);
}
