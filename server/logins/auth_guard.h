/* auth_guard.h - a brake on password guessing, per source address: after
 * `limit` failed logins within `window_s`, an address is blocked for
 * `block_s` (doubled each time it is blocked again within a day, up to a
 * day): its logins are refused without their password being looked at.
 * The server connectors share one guard; the admin API has its own, so
 * that customers' failures never lock the operator out. Other addresses are not
 * affected. The table is bounded: a flood of addresses replaces the
 * oldest entries, never grows memory.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_AUTH_GUARD_H
#define EMG_AUTH_GUARD_H

#include <stdbool.h>
#include <stdint.h>
#include "log.h"

struct auth_guard;

struct auth_guard_stats {
  uint64_t failures;      /* logins refused for wrong credentials */
  uint64_t blocked;       /* logins refused because their address was blocked */
  uint64_t blocks;        /* times an address was blocked */
};

/* limit 0: no blocking (failures are still counted). NULL when out of memory. */
struct auth_guard *auth_guard_create(unsigned limit, unsigned window_s, unsigned block_s,
                                     struct log_category *log);
void auth_guard_destroy(struct auth_guard *g);

/* peer: "ADDRESS:PORT" or "[ADDRESS]:PORT" (the port is ignored). True when
 * the address is blocked now: refuse without checking the credentials. */
bool auth_guard_blocked(struct auth_guard *g, const char *peer);
/* A login from peer failed; logs once when that blocks its address. */
void auth_guard_failed(struct auth_guard *g, const char *peer, const char *what);
/* True when peer's address has failed within the window (or is blocked). */
bool auth_guard_suspect(struct auth_guard *g, const char *peer);
void auth_guard_stats(struct auth_guard *g, struct auth_guard_stats *out);

#endif
