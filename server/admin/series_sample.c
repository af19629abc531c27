/* series_sample.c - what the console's history records each second: the
 * gateway's totals, each connector's traffic and queue, each account's
 * submits, refusals and receipts (series.h keeps them).
 *
 * Names: the totals by themselves ("received", "sent", ...), then
 * "connector.NAME.in", ".out", ".receipts_in", ".receipts_out", ".errors",
 * ".refused", ".queue", ".bound", and "account.NAME.submitted", ".refused",
 * ".delivered", ".undelivered", ".binds".
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include "account.h"
#include "endpoint.h"
#include "series_sample.h"

static void put_counter(struct series_set *s, const char *name, const char *unit, uint64_t total)
{
  series_put(s, name, SERIES_COUNTER, unit, total);
}

static void put_gauge(struct series_set *s, const char *name, const char *unit, uint64_t value)
{
  series_put(s, name, SERIES_GAUGE, unit, value);
}

static void sample_connector(struct series_set *s, struct connector *c)
{
  const char *name = connector_config(c)->name;
  struct connector_instance_info info, sum = { 0 };
  for (unsigned i = 0; connector_instance_info(c, i, &info) == 0; i++) {
    sum.submits_in += info.submits_in;
    sum.submits_out += info.submits_out;
    sum.receipts_in += info.receipts_in;
    sum.receipts_out += info.receipts_out;
    sum.errors += info.errors;
    sum.refused += info.refused;
  }
  static const struct {
    const char *what, *unit;
    size_t offset;
  } counters[] = {
    { "in", "msgs/s", offsetof(struct connector_instance_info, submits_in) },
    { "out", "msgs/s", offsetof(struct connector_instance_info, submits_out) },
    { "receipts_in", "receipts/s", offsetof(struct connector_instance_info, receipts_in) },
    { "receipts_out", "receipts/s", offsetof(struct connector_instance_info, receipts_out) },
    { "errors", "errors/s", offsetof(struct connector_instance_info, errors) },
    { "refused", "refusals/s", offsetof(struct connector_instance_info, refused) },
  };
  char key[SERIES_NAME_LEN];
  for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++) {
    snprintf(key, sizeof key, "connector.%s.%s", name, counters[i].what);
    put_counter(s, key, counters[i].unit, *(const uint64_t *)((const char *)&sum + counters[i].offset));
  }
  snprintf(key, sizeof key, "connector.%s.queue", name);
  put_gauge(s, key, "messages", connector_queued(c));
  snprintf(key, sizeof key, "connector.%s.bound", name);
  put_gauge(s, key, "sessions", connector_bound(c));
}

static void sample_accounts(struct series_set *s, struct accounts *a)
{
  char key[SERIES_NAME_LEN];
  struct account_view v;
  for (unsigned slot = 0; slot < accounts_capacity(a); slot++) {
    if (!accounts_view(a, slot, &v) || !v.exists)
      continue;
    snprintf(key, sizeof key, "account.%s.submitted", v.cfg.name);
    put_counter(s, key, "msgs/s", v.submitted);
    snprintf(key, sizeof key, "account.%s.refused", v.cfg.name);
    put_counter(s, key, "refusals/s", v.refused_rate + v.refused_sender + v.refused_credit);
    snprintf(key, sizeof key, "account.%s.delivered", v.cfg.name);
    put_counter(s, key, "receipts/s", v.delivered);
    snprintf(key, sizeof key, "account.%s.undelivered", v.cfg.name);
    put_counter(s, key, "receipts/s", v.undelivered);
    snprintf(key, sizeof key, "account.%s.binds", v.cfg.name);
    put_gauge(s, key, "sessions", v.binds);
  }
}

void series_sample_core(struct series_set *s, struct core *c, int64_t now)
{
  const struct core_stats *st = &c->stats;
  series_begin(s, now);
  put_counter(s, "received", "msgs/s", atomic_load(&st->received));
  put_counter(s, "sent", "msgs/s", atomic_load(&st->sent));
  put_counter(s, "delivered", "msgs/s", atomic_load(&st->delivered));
  put_counter(s, "failed", "msgs/s", atomic_load(&st->failed) + atomic_load(&st->expired));
  put_counter(s, "retried", "msgs/s", atomic_load(&st->retried));
  put_counter(s, "mo_in", "msgs/s", atomic_load(&st->mo_in));
  put_counter(s, "receipts_in", "receipts/s", atomic_load(&st->receipts_in));
  put_counter(s, "receipts_out", "receipts/s", atomic_load(&st->receipts_out));
  uint64_t refused_by[CORE_REFUSALS];
  put_counter(s, "refused", "refusals/s", core_refusals(c, -1, refused_by));
  put_gauge(s, "in_flight", "messages", atomic_load(&c->in_flight));
  struct dlr_stats ds;
  dlrtab_stats(c->dlr, &ds);
  put_gauge(s, "dlr_used", "entries", ds.used);
  put_gauge(s, "scheduled", "messages", schedule_count(c->schedule, -1));
  for (unsigned i = 0; i < c->n_connectors; i++)
    sample_connector(s, core_connector(c, i));
  sample_accounts(s, c->accounts);
  series_end(s);
}
