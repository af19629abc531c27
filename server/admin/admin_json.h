/* admin_json.h - how the admin API writes values: times, ids, a peer's
 * text, states and connector names; and reads a message id. Shared by the
 * files of the admin API (admin*.c).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_ADMIN_JSON_H
#define EMG_ADMIN_JSON_H

#include <jansson.h>
#include <stdint.h>
#include "core.h"

/* Unix ms as ISO 8601 UTC with milliseconds; null for 0 (never, unknown). */
json_t *json_time_ms(int64_t ms);
/* A 64-bit id as a decimal string (JSON numbers would lose its low digits). */
json_t *json_id(uint64_t id);
/* A string a peer gave, its bytes that are not UTF-8 as '?'; and the same
 * or null for NULL or "". */
json_t *json_text(const char *s);
json_t *json_text_or_null(const char *s);
/* A message id as an operator writes it (decimal, or hex after "0x"): 0, or -1. */
int parse_msg_id(const char *text, uint64_t *id);
/* The name of a message state (NULL for none), of connector index ("?"). */
const char *state_name(uint8_t state);
const char *connector_name(const struct core *c, unsigned index);

#endif
