/* history.h - what happened to recent messages, for operators looking one up.
 *
 * A fixed ring of events (received, queued, sent with the SMSC's id, refused,
 * receipt in, receipt delivered...), each tagged with its message id. Adding
 * is lock-free and cheap enough for every message; looking a message up
 * walks the ring (a few milliseconds for a million events), which only the
 * admin API does. Old events are overwritten: a message whose events are
 * gone is looked up in the database, when there is one.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_HISTORY_H
#define EMG_HISTORY_H

#include <stddef.h>
#include <stdint.h>

enum history_event {
  HISTORY_RECEIVED = 1,       /* accepted from its origin (detail: origin account) */
  HISTORY_QUEUED,             /* routed: waits on connector (detail: account for a server connector) */
  HISTORY_SENT,               /* accepted by the SMSC or client (detail: its message id) */
  HISTORY_RETRY,              /* refused for now or unanswered: sent again later (code: status) */
  HISTORY_FAILED,             /* refused for good, expired or dropped (state, code) */
  HISTORY_RECEIPT,            /* receipt from the SMSC (state, code) */
  HISTORY_RECEIPT_QUEUED,     /* receipt for the origin queued (state) */
  HISTORY_RECEIPT_DELIVERED,  /* receipt delivered to the origin (state) */
  HISTORY_RECEIPT_GIVEN_UP,   /* its DLR entry dropped: no receipt awaited any more (detail: why) */
  HISTORY_REROUTED,           /* moved to another connector, drained or rerouted (connector: the
                                 new one; detail: "the one it left: why") */
  HISTORY_SCHEDULED,          /* held by the gateway until its deferred time (detail: the time, UTC) */
  HISTORY_JOINED,             /* a long MO's parts joined (the whole: "N parts"; a part: "into ID") */
  HISTORY_RECEIPT_HELD,       /* a part's receipt kept from its origin, which hears of the whole once
                                 (state; detail: the origin account) */
  HISTORY_REPLACED,           /* its text and times replaced by its client while it waited (detail:
                                 the account) */
  HISTORY_ADDRESSED           /* accepted for this recipient (detail: its address as the gateway
                                 keeps it, a number without '+'): for finding a recipient's messages */
};

#define HISTORY_DETAIL_LEN 40

struct history_entry {
  uint64_t id;                /* message id */
  int64_t time_ms;            /* Unix ms */
  uint8_t event;              /* enum history_event */
  uint8_t state;              /* enum msg_state where it applies, else 0 */
  uint16_t connector;         /* index of the connector it happened on */
  uint32_t code;              /* protocol or network error code, 0 = none */
  char detail[HISTORY_DETAIL_LEN];
};

struct history;

/* A ring of `entries` events (rounded up to a power of two); NULL when out
 * of memory. entries 0 gives a history that keeps nothing. */
struct history *history_create(size_t entries);
void history_destroy(struct history *h);

/* Records an event; any thread. detail may be NULL. h may be NULL. */
void history_add(struct history *h, uint64_t id, enum history_event event, uint16_t connector,
                 uint8_t state, uint32_t code, const char *detail);

/* The events still held for message id, oldest first: up to max into out.
 * Returns how many were found. */
size_t history_find(const struct history *h, uint64_t id, struct history_entry *out, size_t max);

/* The ids of messages with an event of this kind whose detail is detail
 * (a message sent as an SMSC's id: HISTORY_SENT; a recipient's messages:
 * HISTORY_ADDRESSED), newest first, up to max into ids. Returns how many.
 * A walk over the whole ring: for lookups. */
size_t history_search(const struct history *h, enum history_event event, const char *detail, uint64_t *ids,
                      size_t max);

/* Events the ring holds at most, and events recorded so far (counted as
 * writers claim slots, a few dozen at a time: an upper bound). */
size_t history_capacity(const struct history *h);
uint64_t history_recorded(const struct history *h);

/* "received", "queued", "sent", ... */
const char *history_event_name(uint8_t event);

#endif
