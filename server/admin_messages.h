/* admin_messages.h - the admin API's messages: one message's history
 * (GET /api/messages/ID: from the history ring, else the message log), the
 * recent ones an SMSC knows by an id (GET /api/messages?smsc_id=X), and a
 * queued or held one dropped (DELETE /api/messages/ID). Each gives the
 * HTTP status and puts the body in *answer.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_ADMIN_MESSAGES_H
#define EMG_ADMIN_MESSAGES_H

#include <jansson.h>
#include <stdint.h>
#include "core.h"

unsigned admin_message_get(struct core *c, uint64_t id, json_t **answer);
unsigned admin_message_search(struct core *c, const char *smsc_id, json_t **answer);
unsigned admin_message_drop(struct core *c, uint64_t id, json_t **answer);

#endif
