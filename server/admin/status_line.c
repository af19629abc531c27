/* status_line.c - the periodic status line and when to write it.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "tables.h"
#include "status_line.h"
#include "strutil.h"

void status_line_start(struct status_line *st, uint64_t now_ms)
{
  memset(st, 0, sizeof *st);
  st->looked_ms = now_ms;
}

void status_line_read(struct core *c, struct status_counts *out)
{
  const struct core_stats *s = &c->stats;
  struct dlr_stats ds;
  memset(out, 0, sizeof *out);
  dlrtab_stats(c->dlr, &ds);
  out->received = atomic_load(&s->received);
  out->sent = atomic_load(&s->sent);
  out->failed = atomic_load(&s->failed);
  out->expired = atomic_load(&s->expired);
  out->in_flight = atomic_load(&c->in_flight);
  core_refusals(c, -1, out->refused);
  out->receipts_in = atomic_load(&s->receipts_in);
  out->receipts_out = atomic_load(&s->receipts_out);
  out->receipts_unmatched = atomic_load(&s->receipts_unmatched);
  out->dlr_used = ds.used;
  out->dlr_size = ds.size;
  out->dlr_evicted = ds.evicted;
  out->binds_refused = atomic_load(&s->binds_refused);
  out->sessions_refused = atomic_load(&s->sessions_refused);
  out->reloads = atomic_load(&s->reloads);
  out->reloads_refused = atomic_load(&s->reloads_refused);
}

void status_line_format(const struct status_counts *n, char *buf, size_t cap)
{
  /* The refusals: the total, then each reason that has any, by the names
   * of /metrics and emgctl ("refused 905 (rate 898, no_route 7)"). */
  char refused[256];
  struct str_out r = str_out(refused, sizeof refused);
  uint64_t total = 0;
  for (unsigned i = 0; i < CORE_REFUSALS; i++)
    total += n->refused[i];
  str_put_dec(&r, total, 1);
  const char *sep = " (";
  for (unsigned i = 0; i < CORE_REFUSALS; i++) {
    if (!n->refused[i])
      continue;
    str_puts(&r, sep);
    str_puts(&r, core_refusal_name((enum core_refusal)i));
    str_put(&r, " ", 1);
    str_put_dec(&r, n->refused[i], 1);
    sep = ", ";
  }
  if (total)
    str_put(&r, ")", 1);
  snprintf(buf, cap,
           "status: received %" PRIu64 ", sent %" PRIu64 ", failed %" PRIu64 ", expired %" PRIu64
           ", in flight %" PRIu64 ", refused %s, receipts in %" PRIu64 " out %" PRIu64 " unmatched %" PRIu64
           ", DLR table %" PRIu64 "/%" PRIu64 " (evicted %" PRIu64 "), binds refused %" PRIu64
           ", sessions refused %" PRIu64 ", reloads %" PRIu64 " (refused %" PRIu64 ")",
           n->received, n->sent, n->failed, n->expired, n->in_flight, refused, n->receipts_in, n->receipts_out,
           n->receipts_unmatched, n->dlr_used, n->dlr_size, n->dlr_evicted, n->binds_refused, n->sessions_refused,
           n->reloads, n->reloads_refused);
}

bool status_line_due(struct status_line *st, const struct status_counts *counts, uint64_t now_ms, bool force)
{
  if (!force) {
    if (st->looked_ms && now_ms - st->looked_ms < STATUS_LINE_EVERY_MS)
      return false;
    st->looked_ms = now_ms;
    /* The first line always: it tells the state at start. */
    if (st->logged && memcmp(counts, &st->last, sizeof *counts) == 0 &&
        now_ms - st->logged_ms < STATUS_LINE_IDLE_EVERY_MS)
      return false;
  }
  st->logged = true;
  st->logged_ms = now_ms;
  st->last = *counts;
  return true;
}

void status_line_tick(struct status_line *st, struct core *c, struct log_category *log, uint64_t now_ms,
                      bool force)
{
  if (!force && st->looked_ms && now_ms - st->looked_ms < STATUS_LINE_EVERY_MS)
    return;   /* no look due: the counters are not even read */
  struct status_counts counts;
  status_line_read(c, &counts);
  if (!status_line_due(st, &counts, now_ms, force))
    return;
  char line[1024];
  status_line_format(&counts, line, sizeof line);
  LOGI(log, "%s", line);
}
