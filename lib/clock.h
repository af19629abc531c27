/* clock.h - monotonic and wall-clock time in the units the gateway counts in.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef EMG_CLOCK_H
#define EMG_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Monotonic nanoseconds: for latencies, timers and rates. */
static inline uint64_t clock_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t clock_now_ms(void)
{
  return clock_now_ns() / 1000000u;
}

/* Wall-clock seconds since the epoch: for protocol time stamps and records. */
static inline time_t clock_wall(void)
{
  return time(NULL);
}

/* Wall-clock milliseconds since the epoch: message time stamps. */
static inline int64_t clock_wall_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
