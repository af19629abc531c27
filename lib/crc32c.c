/* crc32c.c - CRC-32C, by instruction where the CPU has one, else by tables.
 * SPDX-License-Identifier: Apache-2.0 */
#include <pthread.h>
#include <string.h>
#include "crc32c.h"

static uint32_t crc_table[8][256];

static uint32_t load_le32(const uint8_t *p)
{
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t crc32c_tables(uint32_t crc, const uint8_t *p, size_t n)
{
  crc = ~crc;
  while (n >= 8) {
    uint32_t lo = crc ^ load_le32(p), hi = load_le32(p + 4);
    crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^ crc_table[5][(lo >> 16) & 0xff] ^
          crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
          crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--)
    crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
  return ~crc;
}

#if defined(__x86_64__)
/* About ten times the tables' speed: every journal record is summed when
 * written and again whenever compaction or replay reads it. */
__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const uint8_t *p, size_t n)
{
  uint64_t c = ~crc;
  while (n >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);   /* x86 is little-endian, as the tables read */
    c = __builtin_ia32_crc32di(c, v);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = (uint32_t)c;
  while (n--)
    c32 = __builtin_ia32_crc32qi(c32, *p++);
  return ~c32;
}
#endif

static uint32_t (*crc_impl)(uint32_t, const uint8_t *, size_t) = crc32c_tables;
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
      c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    crc_table[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int t = 1; t < 8; t++)
      crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("sse4.2"))
    crc_impl = crc32c_sse42;
#endif
}

uint32_t crc32c(uint32_t crc, const void *p, size_t n)
{
  pthread_once(&crc_once, crc_init);
  return crc_impl(crc, p, n);
}

uint32_t crc32c_portable(uint32_t crc, const void *p, size_t n)
{
  pthread_once(&crc_once, crc_init);
  return crc32c_tables(crc, p, n);
}
