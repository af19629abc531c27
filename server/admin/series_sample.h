/* series_sample.h - one second's sample of the gateway for the console's
 * history (series_sample.c).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_SERIES_SAMPLE_H
#define EMG_SERIES_SAMPLE_H

#include <stdint.h>
#include "core.h"
#include "tables.h"

/* Samples the core's totals, connectors and accounts into s at Unix second now. */
void series_sample_core(struct series_set *s, struct core *c, int64_t now);

#endif
