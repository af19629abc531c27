/* hexutil.c - hex text <-> octets. */
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

int hex_decode(uint8_t *dst, const char *hex, size_t hex_len)
{
  if (hex_len % 2)
    return -1;
  for (size_t i = 0; i < hex_len; i += 2) {
    int hi = hex_digit((unsigned char)hex[i]), lo = hex_digit((unsigned char)hex[i + 1]);
    if (hi < 0 || lo < 0)
      return -1;
    dst[i / 2] = (uint8_t)(hi << 4 | lo);
  }
  return (int)(hex_len / 2);
}
