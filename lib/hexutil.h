/* hexutil.h - hex text <-> octets, as UCP's IRA-hex fields and the tools need it.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef EMG_HEXUTIL_H
#define EMG_HEXUTIL_H

#include <stddef.h>
#include <stdint.h>

/* Writes 2*len uppercase hex digits for src to dst (no NUL). Returns 2*len. */
size_t hex_encode(char *dst, const uint8_t *src, size_t len);

/* Decodes hex digits (either case) to octets. hex_len must be even and dst
 * must hold hex_len/2 octets. Returns the octet count, or -1 on an odd length
 * or a non-hex digit. */
int hex_decode(uint8_t *dst, const char *hex, size_t hex_len);

/* Value of one hex digit, or -1. */
static inline int hex_digit(int c)
{
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

#endif
