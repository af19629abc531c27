/* series.c - the recent past of the gateway's counters. See series.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "series.h"
#include "strutil.h"

struct one {
  char name[SERIES_NAME_LEN];
  char unit[SERIES_UNIT_LEN];
  enum series_kind kind;
  bool has_total;
  uint64_t last_total;             /* a counter's running total at the last put */
  uint64_t acc;                    /* the coarse sample so far: a counter's growth, a gauge's value */
  uint32_t *fine, *coarse;         /* the rings (one allocation) */
};

struct series_set {
  pthread_mutex_t lock;
  struct one *ones;
  size_t n, max, dropped, cursor;
  unsigned fine_n, coarse_step, coarse_n;
  /* both rings advance together for every series: their newest sample's
   * index and time, and how many they hold */
  size_t fine_head, fine_filled, coarse_head, coarse_filled;
  int64_t fine_last, coarse_last;
  int64_t now;
  bool skip;                       /* this sample is not newer than the last */
};

struct series_set *series_create(size_t max_series, unsigned fine, unsigned coarse_step, unsigned coarse)
{
  struct series_set *s = calloc(1, sizeof *s);
  if (!s || !fine || !coarse_step || !coarse || !(s->ones = calloc(max_series ? max_series : 1, sizeof *s->ones))) {
    free(s);
    return NULL;
  }
  pthread_mutex_init(&s->lock, NULL);
  s->max = max_series;
  s->fine_n = fine;
  s->coarse_step = coarse_step;
  s->coarse_n = coarse;
  return s;
}

void series_destroy(struct series_set *s)
{
  if (!s)
    return;
  for (size_t i = 0; i < s->n; i++)
    free(s->ones[i].fine);
  free(s->ones);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

static uint32_t clamp32(uint64_t v)
{
  return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* Under the lock: both rings one second on, to t, with what a second
 * without a sample holds (no growth, the gauges as they were). */
static void step(struct series_set *s, int64_t t)
{
  size_t prev = s->fine_head;
  s->fine_head = s->fine_filled ? (s->fine_head + 1) % s->fine_n : 0;
  if (s->fine_filled < s->fine_n)
    s->fine_filled++;
  s->fine_last = t;
  for (size_t i = 0; i < s->n; i++) {
    struct one *o = &s->ones[i];
    o->fine[s->fine_head] = o->kind == SERIES_GAUGE && s->fine_filled > 1 ? o->fine[prev] : 0;
    if (o->kind == SERIES_GAUGE)
      o->acc = o->fine[s->fine_head];
  }
}

/* Under the lock: the coarse sample that ends at t. */
static void close_coarse(struct series_set *s, int64_t t)
{
  s->coarse_head = s->coarse_filled ? (s->coarse_head + 1) % s->coarse_n : 0;
  if (s->coarse_filled < s->coarse_n)
    s->coarse_filled++;
  s->coarse_last = t;
  for (size_t i = 0; i < s->n; i++) {
    struct one *o = &s->ones[i];
    o->coarse[s->coarse_head] = clamp32(o->acc);
    if (o->kind == SERIES_COUNTER)
      o->acc = 0;
  }
}

void series_begin(struct series_set *s, int64_t now)
{
  pthread_mutex_lock(&s->lock);
  s->skip = s->fine_filled && now <= s->fine_last;
  if (s->skip)
    return;
  s->now = now;
  s->cursor = 0;
  if (s->fine_filled) {
    /* Seconds without a sample (a stalled loop, a clock set forward): at
     * most a day's, more and the rings start afresh. */
    int64_t gap = now - s->fine_last;
    if (gap > (int64_t)s->coarse_step * s->coarse_n) {
      s->fine_filled = s->coarse_filled = 0;
    } else {
      for (int64_t t = s->fine_last + 1; t < now; t++) {
        step(s, t);
        if (t % s->coarse_step == 0)
          close_coarse(s, t);
      }
    }
  }
  step(s, now);
}

/* Under the lock: the series of name, made when it is new; NULL when there
 * is no room for it. Puts come in the same order every second: the one
 * after the last put is tried first. */
static struct one *find(struct series_set *s, const char *name, enum series_kind kind, const char *unit)
{
  if (s->cursor < s->n && strcmp(s->ones[s->cursor].name, name) == 0)
    return &s->ones[s->cursor++];
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->ones[i].name, name) == 0) {
      s->cursor = i + 1;
      return &s->ones[i];
    }
  if (s->n >= s->max || strlen(name) >= SERIES_NAME_LEN) {
    s->dropped++;
    return NULL;
  }
  struct one *o = &s->ones[s->n];
  if (!(o->fine = calloc((size_t)s->fine_n + s->coarse_n, sizeof *o->fine))) {
    s->dropped++;
    return NULL;
  }
  o->coarse = o->fine + s->fine_n;
  str_copy(o->name, sizeof o->name, name);
  str_copy(o->unit, sizeof o->unit, unit);
  o->kind = kind;
  s->cursor = ++s->n;
  return o;
}

void series_put(struct series_set *s, const char *name, enum series_kind kind, const char *unit, uint64_t value)
{
  if (s->skip)
    return;
  struct one *o = find(s, name, kind, unit);
  if (!o)
    return;
  if (o->kind == SERIES_GAUGE) {
    o->fine[s->fine_head] = clamp32(value);
    o->acc = value;
    return;
  }
  /* Counters start at zero with what they count (the daemon, a connector,
   * an account): the first total is all growth since. A total that went
   * down (a counter reset) grew by what it is now. */
  uint64_t grew = o->has_total && value >= o->last_total ? value - o->last_total : value;
  o->has_total = true;
  o->last_total = value;
  o->fine[s->fine_head] = clamp32(grew);
  o->acc += grew;
}

void series_end(struct series_set *s)
{
  if (!s->skip && s->now % s->coarse_step == 0)
    close_coarse(s, s->now);
  pthread_mutex_unlock(&s->lock);
}

bool series_read(struct series_set *s, const char *name, int64_t since, unsigned step_s, double *values,
                 size_t max, struct series_view *view)
{
  pthread_mutex_lock(&s->lock);
  const struct one *o = NULL;
  for (size_t i = 0; i < s->n && !o; i++)
    if (strcmp(s->ones[i].name, name) == 0)
      o = &s->ones[i];
  if (!o) {
    pthread_mutex_unlock(&s->lock);
    return false;
  }
  bool coarse = step_s != 1;
  const uint32_t *ring = coarse ? o->coarse : o->fine;
  size_t n = coarse ? s->coarse_n : s->fine_n, head = coarse ? s->coarse_head : s->fine_head;
  size_t filled = coarse ? s->coarse_filled : s->fine_filled;
  int64_t last = coarse ? s->coarse_last : s->fine_last;
  unsigned step = coarse ? s->coarse_step : 1;
  /* The samples after since: the newest `take` of the ring, at most max. */
  size_t take = filled;
  if (since >= last)
    take = 0;
  else if ((last - since + step - 1) / step < (int64_t)take)
    take = (size_t)((last - since + step - 1) / step);
  if (take > max)
    take = max;
  view->kind = o->kind;
  str_copy(view->unit, sizeof view->unit, o->unit);
  view->step = step;
  view->count = take;
  view->start = last - (int64_t)(take ? take - 1 : 0) * step;
  for (size_t i = 0; i < take; i++) {
    uint32_t v = ring[(head + n - (take - 1 - i)) % n];
    values[i] = o->kind == SERIES_COUNTER ? (double)v / step : (double)v;
  }
  pthread_mutex_unlock(&s->lock);
  return true;
}

size_t series_list(struct series_set *s, void (*fn)(void *ctx, const char *name, enum series_kind kind,
                                                     const char *unit),
                   void *ctx)
{
  pthread_mutex_lock(&s->lock);
  for (size_t i = 0; i < s->n; i++)
    fn(ctx, s->ones[i].name, s->ones[i].kind, s->ones[i].unit);
  size_t n = s->n;
  pthread_mutex_unlock(&s->lock);
  return n;
}

void series_stats(struct series_set *s, struct series_stats *out)
{
  pthread_mutex_lock(&s->lock);
  *out = (struct series_stats){ .series = s->n, .max_series = s->max, .dropped_names = s->dropped,
                                .bytes = s->n * ((size_t)s->fine_n + s->coarse_n) * sizeof(uint32_t),
                                .fine = s->fine_n, .coarse_step = s->coarse_step, .coarse = s->coarse_n };
  pthread_mutex_unlock(&s->lock);
}
