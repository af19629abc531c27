/* admin.h - the operator's HTTP API (libmicrohttpd, jansson), behind a
 * bearer token: status, connectors and their instances, queues and what
 * waits in them, one message's history, the DLR table, pause, resume,
 * reload, dropping a message, Prometheus metrics, and the status page.
 * doc/operations.md describes every endpoint.
 *
 * It runs in libmicrohttpd's own thread and reads the core's atomic
 * counters and the snapshots other threads publish; queue listings hold a
 * queue's lock for a bounded span only (queue_walk), so a request never
 * blocks the message path.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_ADMIN_H
#define EMG_ADMIN_H

#include <stddef.h>
#include "core.h"
#include "config.h"
/* The room's other parts: accounts changed while emgd runs (in the file
 * or the database), the samples behind the graphs, the status line. */
#include "account_admin.h"
#include "account_db.h"
#include "series_sample.h"
#include "status_line.h"

struct admin;

/* What POST /api/reload calls: fills report (zeroed by the caller) with
 * what the reload put in place and what it refused. */
typedef void (*admin_reload_fn)(void *ctx, struct reload_report *report);

/* Listens on listen ("HOST:PORT"), over HTTPS when tls is enabled, and
 * answers requests carrying "Authorization: Bearer <token>" (401
 * otherwise). NULL with a reason in err when it cannot
 * listen. */
struct admin *admin_start(struct core *core, const char *listen, const char *token, const struct config_tls *tls,
                          admin_reload_fn reload, void *reload_ctx, char *err, size_t err_len);
/* A reload's certificate and key for the handshakes to come; -1 with err
 * when they cannot be read (the running ones stay). */
int admin_tls_reload(struct admin *a, const struct config_tls *next, char *err, size_t err_len);
void admin_stop(struct admin *a);

#endif
