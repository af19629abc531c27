/* ratelimit.h - a token bucket for smooth throughput limits.
 *
 * Tokens accrue at `rate` per second up to `burst`; sending n messages takes
 * n tokens. A small burst keeps the flow smooth (no bursts at second
 * boundaries). Times are the caller's monotonic nanoseconds. One owner.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_RATELIMIT_H
#define EMG_RATELIMIT_H

#include <stdint.h>

struct ratelimit {
  double rate;      /* tokens per second; <= 0 means unlimited */
  double burst;     /* most tokens held at once */
  double tokens;
  uint64_t last_ns;
};

void ratelimit_init(struct ratelimit *r, double rate, double burst, uint64_t now_ns);

/* Takes up to want tokens; returns how many were granted (0..want). */
uint64_t ratelimit_take(struct ratelimit *r, uint64_t now_ns, uint64_t want);

/* Nanoseconds until one token is available (0 if one is now). */
uint64_t ratelimit_wait_ns(struct ratelimit *r, uint64_t now_ns);

#endif
