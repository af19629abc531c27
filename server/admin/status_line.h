/* status_line.h - the periodic status line of the log: the totals, the
 * refusals by reason, the DLR table. Looked at every 10 s; logged then only
 * when something moved since the line before (a counter, in_flight), and
 * while idle once an hour, so that an idle gateway does not write 8,640
 * lines a day that all say the same.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_STATUS_LINE_H
#define EMG_STATUS_LINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core.h"
#include "log.h"

#define STATUS_LINE_EVERY_MS 10000u           /* a look at the counters */
#define STATUS_LINE_IDLE_EVERY_MS 3600000u    /* a line even when nothing moved */

/* What a status line says. */
struct status_counts {
  uint64_t received, sent, failed, expired, in_flight;
  uint64_t refused[CORE_REFUSALS];
  uint64_t receipts_in, receipts_out, receipts_unmatched;
  uint64_t dlr_used, dlr_size, dlr_evicted;
  uint64_t binds_refused, sessions_refused, reloads, reloads_refused;
};

/* Zeroed before the first tick. */
struct status_line {
  bool logged;                 /* a line has been written */
  uint64_t looked_ms;          /* the last look at the counters */
  uint64_t logged_ms;          /* the last line */
  struct status_counts last;   /* what it said */
};

/* The first look comes STATUS_LINE_EVERY_MS after now_ms (the start). */
void status_line_start(struct status_line *st, uint64_t now_ms);

/* The counters of c now. */
void status_line_read(struct core *c, struct status_counts *out);

/* The line for counts into buf (truncated to cap). */
void status_line_format(const struct status_counts *counts, char *buf, size_t cap);

/* Whether a line is due at now_ms (monotonic) for counts: at most one look
 * every STATUS_LINE_EVERY_MS, a line at a look when counts differ from the
 * last line's or STATUS_LINE_IDLE_EVERY_MS passed since it; force (the
 * stop): always. When due, st takes counts as the last line's. */
bool status_line_due(struct status_line *st, const struct status_counts *counts, uint64_t now_ms, bool force);

/* The main loop's tick (every 100 ms is fine): reads and logs the line at
 * INFO when status_line_due says so. */
void status_line_tick(struct status_line *st, struct core *c, struct log_category *log, uint64_t now_ms,
                      bool force);

#endif
