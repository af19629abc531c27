/* histogram.h - a latency histogram with bounded relative error.
 *
 * Values (e.g. microseconds) land in log-linear buckets: 2^HISTOGRAM_SUB_BITS
 * linear sub-buckets per power of two, so a reported percentile is within
 * 1/2^HISTOGRAM_SUB_BITS (about 1.6 %) of the true value. Fixed size, no
 * allocation, not thread-safe: one owner records; merge copies to report.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_HISTOGRAM_H
#define EMG_HISTOGRAM_H

#include <stdint.h>

#define HISTOGRAM_SUB_BITS 6
#define HISTOGRAM_BUCKETS ((64 - HISTOGRAM_SUB_BITS + 1) << HISTOGRAM_SUB_BITS)

struct histogram {
  uint64_t count;
  uint64_t sum;
  uint64_t min;
  uint64_t max;
  uint64_t buckets[HISTOGRAM_BUCKETS];
};

void histogram_init(struct histogram *h);
void histogram_record(struct histogram *h, uint64_t value);

/* Adds every value of src to dst. */
void histogram_merge(struct histogram *dst, const struct histogram *src);

/* The value at percentile p (0-100]: the upper edge of the bucket holding
 * it, clamped to the recorded maximum. 0 when empty. */
uint64_t histogram_percentile(const struct histogram *h, double p);

#endif
