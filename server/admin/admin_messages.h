/* admin_messages.h - the admin API's messages: one message's history
 * (GET /api/messages/ID: from the history ring, else the message log), a
 * search (GET /api/messages?smsc_id=X, ?to=RECIPIENT, or ?q=X for our id,
 * an SMSC's or a recipient: the recent messages in the history and older
 * ones from the message log, newest first), and a queued or held one
 * dropped (DELETE /api/messages/ID). Each gives the HTTP status and puts
 * the body in *answer.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_ADMIN_MESSAGES_H
#define EMG_ADMIN_MESSAGES_H

#include <jansson.h>
#include <stdint.h>
#include "core.h"

unsigned admin_message_get(struct core *c, uint64_t id, json_t **answer);
/* Exactly one of smsc_id, to and any is given; the others are NULL. */
unsigned admin_message_search(struct core *c, const char *smsc_id, const char *to, const char *any,
                              json_t **answer);
unsigned admin_message_drop(struct core *c, uint64_t id, json_t **answer);

#endif
