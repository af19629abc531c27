/* series.h - the recent past of the gateway's counters, for the console.
 *
 * A set of named series (rates in and out, receipts, errors, queue depths,
 * per connector and per account), sampled together once a second by the
 * daemon's tick: the last `fine` samples at 1 s, and every `coarse_step`
 * seconds a coarser sample kept for `coarse` steps (24 h at 10 s by
 * default). A counter is put as its running total (from zero when what it
 * counts began) and kept as what it grew by in each interval; a gauge as
 * its value then. Each value is 32 bits,
 * so a series costs 4 * (fine + coarse) bytes: 37 KB at the defaults. A
 * series is made the first time it is put, up to max_series; beyond that
 * new names are not kept (counted). One lock: the sampler writes once a
 * second, the admin thread reads.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_SERIES_H
#define EMG_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SERIES_NAME_LEN 96
#define SERIES_UNIT_LEN 16

enum series_kind {
  SERIES_COUNTER,                  /* put as a running total; read as a rate (per second) */
  SERIES_GAUGE                     /* put as a value; read as that value */
};

struct series_set;

/* fine: 1 s samples kept; coarse_step: seconds a coarse sample covers (a
 * divisor of 60 or a multiple of it, e.g. 10); coarse: coarse samples kept.
 * NULL when out of memory. */
struct series_set *series_create(size_t max_series, unsigned fine, unsigned coarse_step, unsigned coarse);
void series_destroy(struct series_set *s);

/* One sample of every series, at Unix second now: begin, then put each
 * series (kind and unit are fixed by its first put), then end. A second
 * that passed without a sample reads as zero rates and the last gauges. */
void series_begin(struct series_set *s, int64_t now);
void series_put(struct series_set *s, const char *name, enum series_kind kind, const char *unit, uint64_t value);
void series_end(struct series_set *s);

/* What a reader gets: the samples of one series from `start` (Unix s, the
 * end of the first interval) every `step` seconds, oldest first. */
struct series_view {
  enum series_kind kind;
  char unit[SERIES_UNIT_LEN];
  int64_t start;
  unsigned step;
  size_t count;
};

/* The samples of series name after since (Unix s), at step 1 (fine) or
 * coarse_step (coarse): rates per second for counters, values for gauges,
 * up to max into values. false when there is no such series. */
bool series_read(struct series_set *s, const char *name, int64_t since, unsigned step, double *values,
                 size_t max, struct series_view *view);

/* Calls fn for each series' name, kind and unit, in the order they were
 * made. Returns how many. */
size_t series_list(struct series_set *s, void (*fn)(void *ctx, const char *name, enum series_kind kind,
                                                     const char *unit),
                   void *ctx);

struct series_stats {
  size_t series, max_series, dropped_names;
  size_t bytes;                    /* the rings' memory */
  unsigned fine, coarse_step, coarse;
};
void series_stats(struct series_set *s, struct series_stats *out);

#endif
