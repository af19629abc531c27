/* admin.h - the operator's HTTP API (libmicrohttpd, jansson): status,
 * connectors and Prometheus metrics, behind a bearer token.
 *
 * It runs in libmicrohttpd's own thread and only reads the core's atomic
 * counters and snapshots, so a request never blocks the message path. */
#ifndef EMG_ADMIN_H
#define EMG_ADMIN_H

#include "core.h"

struct admin;

/* Listens on listen ("HOST:PORT") and answers requests carrying
 * "Authorization: Bearer <token>" (401 otherwise). NULL with a reason in
 * err (NETUTIL_ERR_LEN bytes) when it cannot listen. */
struct admin *admin_start(struct core *core, const char *listen, const char *token, char *err);
void admin_stop(struct admin *a);

#endif
