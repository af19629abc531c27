/* histogram.c - log-linear latency histogram.
 * SPDX-License-Identifier: Apache-2.0 */
#include <string.h>
#include "histogram.h"

#define SUB_COUNT (1u << HISTOGRAM_SUB_BITS)

/* Values below SUB_COUNT map one to one; above, the top HISTOGRAM_SUB_BITS
 * bits after the leading one pick the sub-bucket of their power of two. */
static unsigned bucket_of(uint64_t v)
{
  if (v < SUB_COUNT)
    return (unsigned)v;
  unsigned msb = 63u - (unsigned)__builtin_clzll(v);
  unsigned shift = msb - HISTOGRAM_SUB_BITS;
  return ((shift + 1) << HISTOGRAM_SUB_BITS) + (unsigned)((v >> shift) & (SUB_COUNT - 1));
}

/* The largest value that falls in bucket b. */
static uint64_t bucket_upper(unsigned b)
{
  if (b < SUB_COUNT)
    return b;
  unsigned shift = (b >> HISTOGRAM_SUB_BITS) - 1;
  uint64_t base = (uint64_t)(SUB_COUNT | (b & (SUB_COUNT - 1))) << shift;
  return base + ((uint64_t)1 << shift) - 1;
}

void histogram_init(struct histogram *h)
{
  memset(h, 0, sizeof *h);
  h->min = UINT64_MAX;
}

void histogram_record(struct histogram *h, uint64_t value)
{
  h->buckets[bucket_of(value)]++;
  h->count++;
  h->sum += value;
  if (value < h->min)
    h->min = value;
  if (value > h->max)
    h->max = value;
}

void histogram_merge(struct histogram *dst, const struct histogram *src)
{
  for (unsigned b = 0; b < HISTOGRAM_BUCKETS; b++)
    dst->buckets[b] += src->buckets[b];
  dst->count += src->count;
  dst->sum += src->sum;
  if (src->min < dst->min)
    dst->min = src->min;
  if (src->max > dst->max)
    dst->max = src->max;
}

uint64_t histogram_percentile(const struct histogram *h, double p)
{
  if (h->count == 0)
    return 0;
  uint64_t rank = (uint64_t)(p / 100.0 * (double)h->count + 0.5);
  if (rank < 1)
    rank = 1;
  if (rank > h->count)
    rank = h->count;
  uint64_t seen = 0;
  for (unsigned b = 0; b < HISTOGRAM_BUCKETS; b++) {
    seen += h->buckets[b];
    if (seen >= rank) {
      uint64_t v = bucket_upper(b);
      return v > h->max ? h->max : v;
    }
  }
  return h->max;
}
