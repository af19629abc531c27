/* admin_history.c - GET /api/history. See admin_history.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "admin_history.h"
#include "tables.h"

/* Series one request may name, at most. */
#define HISTORY_SERIES_MAX 32

static const char *kind_name(enum series_kind kind)
{
  return kind == SERIES_COUNTER ? "rate" : "gauge";
}

static void list_one(void *ctx, const char *name, enum series_kind kind, const char *unit)
{
  json_array_append_new(ctx, json_pack("{s:s, s:s, s:s}", "name", name, "kind", kind_name(kind), "unit", unit));
}

static json_t *error(const char *why)
{
  return json_pack("{s:s}", "error", why);
}

unsigned admin_history_request(struct core *c, const char *series, const char *since, const char *step,
                               json_t **answer)
{
  if (!c->series) {
    *answer = error("no history is kept (history_series = 0)");
    return 404;
  }
  struct series_stats st;
  series_stats(c->series, &st);
  int64_t now = time(NULL);
  if (!series) {
    json_t *list = json_array();
    series_list(c->series, list_one, list);
    *answer = json_pack("{s:o, s:I, s:I, s:I, s:I, s:I, s:I}", "series", list, "now", (json_int_t)now, "fine_step", 1,
                        "fine_samples", (json_int_t)st.fine, "coarse_step", (json_int_t)st.coarse_step,
                        "coarse_samples", (json_int_t)st.coarse, "bytes", (json_int_t)st.bytes);
    return 200;
  }
  /* step: 1 (the last fine samples) or the coarse step; by default the
   * fine one when since is within its reach. */
  int64_t from = now - (int64_t)st.fine;
  if (since) {
    char *end;
    errno = 0;
    long long v = strtoll(since, &end, 10);
    if (!*since || *end || errno) {
      *answer = error("since: Unix seconds, or negative seconds before now");
      return 400;
    }
    from = v < 0 ? now + v : v;
  }
  unsigned step_s = now - from <= (int64_t)st.fine ? 1 : st.coarse_step;
  if (step) {
    if (strcmp(step, "1") == 0)
      step_s = 1;
    else if (atoi(step) == (int)st.coarse_step && strspn(step, "0123456789") == strlen(step))
      step_s = st.coarse_step;
    else {
      *answer = json_pack("{s:s, s:I}", "error", "step: 1 or the coarse step", "coarse_step",
                          (json_int_t)st.coarse_step);
      return 400;
    }
  }
  size_t max = step_s == 1 ? st.fine : st.coarse;
  double *values = malloc(max * sizeof *values);
  char *names = strdup(series);
  json_t *out = json_object();
  if (!values || !names || !out) {
    free(values);
    free(names);
    json_decref(out);
    *answer = error("out of memory");
    return 500;
  }
  unsigned status = 200, n = 0;
  for (char *save = NULL, *name = strtok_r(names, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
    struct series_view v;
    if (++n > HISTORY_SERIES_MAX) {
      status = 400;
      json_decref(out);
      out = error("at most 32 series a request");
      break;
    }
    if (!series_read(c->series, name, from, step_s, values, max, &v)) {
      status = 404;
      json_decref(out);
      out = json_pack("{s:s, s:s}", "error", "no such series (GET /api/history lists them)", "series", name);
      break;
    }
    json_t *samples = json_array();
    for (size_t i = 0; i < v.count; i++)
      json_array_append_new(samples, json_real(values[i]));
    json_object_set_new(out, name, json_pack("{s:s, s:s, s:I, s:I, s:o}", "kind", kind_name(v.kind), "unit", v.unit,
                                             "start", (json_int_t)v.start, "step", (json_int_t)v.step, "values",
                                             samples));
  }
  free(values);
  free(names);
  *answer = status == 200 ? json_pack("{s:I, s:o}", "now", (json_int_t)now, "series", out) : out;
  return status;
}
