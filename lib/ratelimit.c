/* ratelimit.c - token bucket.
 * SPDX-License-Identifier: Apache-2.0 */
#include "ratelimit.h"

void ratelimit_init(struct ratelimit *r, double rate, double burst, uint64_t now_ns)
{
  r->rate = rate;
  r->burst = burst < 1 ? 1 : burst;
  r->tokens = r->burst;
  r->last_ns = now_ns;
}

static void refill(struct ratelimit *r, uint64_t now_ns)
{
  if (now_ns > r->last_ns) {
    r->tokens += (double)(now_ns - r->last_ns) * r->rate / 1e9;
    if (r->tokens > r->burst)
      r->tokens = r->burst;
    r->last_ns = now_ns;
  }
}

uint64_t ratelimit_take(struct ratelimit *r, uint64_t now_ns, uint64_t want)
{
  if (r->rate <= 0)
    return want;
  refill(r, now_ns);
  uint64_t granted = r->tokens >= (double)want ? want : (uint64_t)r->tokens;
  r->tokens -= (double)granted;
  return granted;
}

uint64_t ratelimit_wait_ns(struct ratelimit *r, uint64_t now_ns)
{
  if (r->rate <= 0)
    return 0;
  refill(r, now_ns);
  if (r->tokens >= 1)
    return 0;
  return (uint64_t)((1 - r->tokens) * 1e9 / r->rate) + 1;
}
