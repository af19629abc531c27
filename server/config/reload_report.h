/* reload_report.h - what a reload put in place and what it refused, item
 * by item: filled by the reload (main.c, account_admin.c), answered by
 * POST /api/reload (admin.c) and logged on SIGHUP. doc/operations.md
 * describes the answer.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_RELOAD_REPORT_H
#define EMG_RELOAD_REPORT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#define RELOAD_ITEMS_MAX 64       /* of each kind; those beyond are counted */
#define RELOAD_ITEM_LEN 96
#define RELOAD_ERROR_LEN 512

struct reload_refusal {
  char item[RELOAD_ITEM_LEN];     /* "configuration", "account acme", "tls of connector out", ... */
  char error[RELOAD_ERROR_LEN];
};

struct reload_report {
  unsigned n_applied, n_refused;
  unsigned applied_more, refused_more;    /* beyond RELOAD_ITEMS_MAX, not listed */
  char applied[RELOAD_ITEMS_MAX][RELOAD_ITEM_LEN];
  struct reload_refusal refused[RELOAD_ITEMS_MAX];
};

/* Nothing was refused: the reload is answered as done. */
static inline bool reload_report_ok(const struct reload_report *r)
{
  return r->n_refused == 0 && r->refused_more == 0;
}

/* Something was put in place: a refusal makes the reload a partial one. */
static inline bool reload_report_any_applied(const struct reload_report *r)
{
  return r->n_applied > 0 || r->applied_more > 0;
}

__attribute__((format(printf, 2, 3))) static inline void reload_applied(struct reload_report *r, const char *fmt,
                                                                       ...)
{
  if (r->n_applied == RELOAD_ITEMS_MAX) {
    r->applied_more++;
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->applied[r->n_applied++], RELOAD_ITEM_LEN, fmt, ap);
  va_end(ap);
}

__attribute__((format(printf, 3, 4))) static inline void reload_refused(struct reload_report *r, const char *item,
                                                                       const char *fmt, ...)
{
  if (r->n_refused == RELOAD_ITEMS_MAX) {
    r->refused_more++;
    return;
  }
  struct reload_refusal *f = &r->refused[r->n_refused++];
  snprintf(f->item, sizeof f->item, "%s", item);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->error, sizeof f->error, fmt, ap);
  va_end(ap);
}

#endif
