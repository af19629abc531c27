/* admin_internal.h - what the files of the admin API share, inside the
 * admin room only (from outside, admin.h): the totals table that both
 * /api/status and /metrics read, a connector's instances summed, and the
 * views admin.c answers requests with.
 *
 * admin.c: the server, its authentication and its routes;
 * admin_status.c: the JSON of status, connectors and their instances, DLR;
 * admin_queues.c: the JSON of the queues and what waits in them;
 * admin_totals.c: the totals table;
 * admin_metrics.c: the Prometheus text.
 * All of it runs in libmicrohttpd's thread.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_ADMIN_INTERNAL_H
#define EMG_ADMIN_INTERNAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include "core.h"
#include "endpoint.h"

/* ---- totals: one table for /api/status and /metrics (admin_totals.c) ---- */

struct total {
  const char *key;             /* in /api/status "totals" */
  const char *metric;          /* Prometheus family (several entries may share one) */
  const char *label;           /* the entry's label in that family, or NULL */
  const char *help;
  size_t offset;               /* in struct core_stats */
};

extern const struct total admin_totals[];
extern const size_t admin_totals_count;

uint64_t admin_total_value(const struct core *c, const struct total *t);

/* ---- connectors and status (admin_status.c) ---- */

/* A connector's instances summed, for its row and its metrics (all
 * uint64_t but the histograms, so that one table prints the metrics). */
struct connector_sum {
  uint64_t bound, window_used, queued, paused;
  uint64_t submits_in, submits_out, receipts_in, receipts_out, refused, errors, reconnects;
  struct connector_latency ack, response, delivery;
};

/* Sums the instances of conn into *sum and, when instances is given,
 * appends each one's view to it. */
void admin_connector_sum(struct connector *conn, struct connector_sum *sum, json_t *instances);
/* What waits in every connector's queues. */
size_t admin_queued_total(struct core *c);
/* The plugins in place now: read between core_enter and core_leave. */
struct plugin_host *admin_plugin_host(struct core *c);

/* GET /api/status, /api/connectors, /api/dlr. */
json_t *admin_status_json(struct core *c);
json_t *admin_connectors_json(struct core *c);
json_t *admin_dlr_json(struct core *c);

/* ---- queues (admin_queues.c) ---- */

/* GET /api/queues. */
json_t *admin_queues_json(struct core *c);
/* GET /api/queues/NAME/messages: what waits in a connector's queues, then
 * what the gateway holds for it until its time: offset and limit over all
 * of them in order. NULL when out of memory. */
json_t *admin_queue_messages_json(struct core *core, struct connector *conn, size_t offset, size_t limit);

/* ---- metrics (admin_metrics.c) ---- */

/* GET /metrics: Prometheus text format (0.0.4). NULL when out of memory. */
char *admin_metrics_text(struct core *c);

#endif
