/* scts.c - service-centre time stamps, written and read in UCP's and
 * CIMD2's layouts, and the allocator of unique ones (scts.h).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdbool.h>
#include <string.h>
#include "bigmem.h"
#include "scts.h"

/* ---- time stamps ---- */

static char *put_two(char *p, unsigned v)
{
  p[0] = (char)('0' + v / 10 % 10);
  p[1] = (char)('0' + v % 10);
  return p + 2;
}

static int two(const char *p)
{
  if (p[0] < '0' || p[0] > '9' || p[1] < '0' || p[1] > '9')
    return -1;
  return (p[0] - '0') * 10 + (p[1] - '0');
}

int scts_format(char *dst, size_t digits, enum scts_layout layout, time_t t)
{
  struct tm tm;
  if ((digits != 10 && digits != 12) || layout == SCTS_NONE || !gmtime_r(&t, &tm) || tm.tm_year < 70 ||
      tm.tm_year > 169)
    return -1;
  unsigned first = layout == SCTS_DDMMYY ? (unsigned)tm.tm_mday : (unsigned)tm.tm_year % 100;
  unsigned third = layout == SCTS_DDMMYY ? (unsigned)tm.tm_year % 100 : (unsigned)tm.tm_mday;
  dst = put_two(dst, first);
  dst = put_two(dst, (unsigned)tm.tm_mon + 1);
  dst = put_two(dst, third);
  dst = put_two(dst, (unsigned)tm.tm_hour);
  dst = put_two(dst, (unsigned)tm.tm_min);
  if (digits == 12)
    put_two(dst, (unsigned)tm.tm_sec);
  return (int)digits;
}

int scts_parse(const char *p, size_t len, enum scts_layout layout, time_t *t)
{
  if ((len != 10 && len != 12) || layout == SCTS_NONE)
    return -1;
  int first = two(p), mon = two(p + 2), third = two(p + 4), hour = two(p + 6), min = two(p + 8);
  int sec = len == 12 ? two(p + 10) : 0;
  int day = layout == SCTS_DDMMYY ? first : third, year = layout == SCTS_DDMMYY ? third : first;
  if (day < 1 || mon < 1 || mon > 12 || year < 0 || hour < 0 || hour > 23 || min < 0 || min > 59 || sec < 0 ||
      sec > 59)
    return -1;
  struct tm tm = { .tm_mday = day, .tm_mon = mon - 1, .tm_year = year < 70 ? year + 100 : year,
                   .tm_hour = hour, .tm_min = min, .tm_sec = sec };
  *t = timegm(&tm);
  /* timegm normalises 31 February into March: such a date does not exist. */
  return tm.tm_mday == day ? 0 : -1;
}

/* ---- the allocator ---- */

/* How many slots from its home a recipient may live in: a lookup reads at
 * most this many (neighbouring, so mostly one cache line or two). */
#define SCTS_PROBES 16

struct scts_slot {
  uint64_t key;  /* hash of the recipient; 0 = never used */
  int64_t last;  /* the last second handed out to it */
};

struct scts_alloc {
  size_t mask;       /* slots - 1 */
  int64_t now;       /* the latest time seen: the clock never goes back */
  int64_t evicted;   /* the latest second of a slot dropped before it passed */
  int64_t fmt_time;  /* the second in fmt, to skip formatting it again */
  enum scts_layout layout;
  char fmt[12];
  struct scts_slot slot[];
};

struct scts_alloc *scts_alloc_create(size_t capacity, enum scts_layout layout)
{
  struct scts_alloc *a;
  size_t n = 1;

  if (capacity == 0 || capacity > ((size_t)1 << 32) || layout == SCTS_NONE)
    return NULL;
  while (n < capacity)
    n <<= 1;
  a = bigmem_alloc(sizeof *a + n * sizeof a->slot[0]);
  if (!a)
    return NULL;
  a->mask = n - 1;
  a->now = INT64_MIN;
  a->evicted = INT64_MIN;
  a->fmt_time = INT64_MIN;
  a->layout = layout;
  return a;
}

void scts_alloc_destroy(struct scts_alloc *a)
{
  if (a)
    bigmem_free(a, sizeof *a + (a->mask + 1) * sizeof a->slot[0]);
}

/* FNV-1a, then a 64-bit finaliser so that the low bits (the home slot) mix
 * every byte; never 0, which marks an unused slot. Two recipients with the
 * same hash share one sequence of seconds: still unique, just stepped more. */
static uint64_t recipient_hash(const char *s)
{
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h ? h : 1;
}

int scts_next(struct scts_alloc *a, const char *recipient, int64_t now, char stamp[13])
{
  uint64_t key = recipient_hash(recipient);
  struct scts_slot *use = NULL, *s;
  size_t probes = a->mask + 1 < SCTS_PROBES ? a->mask + 1 : SCTS_PROBES;
  int64_t t;

  if (now < a->now)
    now = a->now;
  /* Its own slot if it has one (never behind the first unused slot, as
   * slots are only ever taken, never freed); else the first unused slot;
   * else the one with the oldest second: one that has passed needs no
   * memory, one that has not is remembered in a->evicted. */
  for (size_t i = 0; i < probes; i++) {
    s = &a->slot[(key + i) & a->mask];
    if (s->key == key || s->key == 0) {
      use = s;
      break;
    }
    if (!use || s->last < use->last)
      use = s;
  }
  if (use->key == key)
    t = use->last >= now ? use->last + 1 : now;
  else /* it may have had a slot that was dropped: start after every such one */
    t = a->evicted >= now ? a->evicted + 1 : now;

  if (t != a->fmt_time) {
    if (scts_format(a->fmt, 12, a->layout, (time_t)t) < 0)
      return -1;
    a->fmt_time = t;
  }
  if (use->key != key && use->last > a->evicted)
    a->evicted = use->last;
  use->key = key;
  use->last = t;
  a->now = now;
  memcpy(stamp, a->fmt, 12);
  stamp[12] = '\0';
  return 0;
}

int64_t scts_last(const struct scts_alloc *a)
{
  return a->fmt_time;
}
