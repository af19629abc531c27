/* fd_budget.h - the process's descriptors shared out among its listeners,
 * so that a flood on one (idle HTTP connections, say) cannot take the
 * descriptors another needs, nor the operator's way in through the admin
 * API.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_FD_BUDGET_H
#define EMG_FD_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "config.h"

/* Connections the admin API serves at once (its reserve: never cut). */
#define FD_BUDGET_ADMIN 64

struct fd_budget {
  uint64_t limit;        /* the open files limit */
  unsigned own;          /* about what emgd keeps open itself: loops, journal, logs, clients */
  unsigned listeners;    /* what the listeners may hold, with the cuts below */
  bool cut;              /* HTTP connectors' max_connections were lowered to fit */
  bool fits;             /* own + listeners within the limit */
  uint64_t http_room;    /* what the HTTP connectors may hold together */
  uint64_t http_wanted;  /* ... and what their max_connections add up to */
};

/* The plan for cfg under the current RLIMIT_NOFILE. */
void fd_budget_plan(const struct config *cfg, struct fd_budget *b);

/* The connections HTTP server connector index may hold under the plan:
 * its max_connections, lowered when all listeners together would not fit. */
unsigned fd_budget_http_limit(const struct config *cfg, unsigned index);

/* One line for the log: each listener's share under plan b, and the limit. */
void fd_budget_describe(const struct config *cfg, const struct fd_budget *b, char *out, size_t cap);

#endif
