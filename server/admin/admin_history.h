/* admin_history.h - GET /api/history: the console's history of the
 * gateway's counters (series.h), for the status page's charts and emgctl.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_ADMIN_HISTORY_H
#define EMG_ADMIN_HISTORY_H

#include <jansson.h>
#include "core.h"

/* The answer to GET /api/history with the query's series, since and step
 * (each NULL when absent): its HTTP status, the body in *answer. Without
 * series: the series there are, and the rings' shape. */
unsigned admin_history_request(struct core *c, const char *series, const char *since, const char *step,
                               json_t **answer);

#endif
