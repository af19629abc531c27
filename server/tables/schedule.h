/* schedule.h - messages held until their deferred delivery time.
 *
 * A message whose deferred time (SMPP schedule_delivery_time, UCP's DD/DDT,
 * the HTTP APIs' deferred) is ahead waits here, outside every queue, until
 * it is due; then it goes to the queue of the connector it was routed to.
 * Its MSG record in the journal carries the time, so a restart holds it
 * again. A min-heap by due time under one lock: adds from the instances'
 * threads, releases from the daemon's tick, lookups and cancels from the
 * admin API.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_SCHEDULE_H
#define EMG_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>
#include "queue.h"

struct schedule;

/* NULL when out of memory. */
struct schedule *schedule_create(void);
/* Frees the messages still held. */
void schedule_destroy(struct schedule *s);

/* Holds message it for connector target until its msg->deferred (Unix s).
 * -1 when out of memory (it stays the caller's). */
int schedule_add(struct schedule *s, struct qitem *it, unsigned target);

/* Calls fn(ctx, target, it) for each message due at now (Unix s), the
 * earliest first, after taking it out (fn owns it). Returns how many. */
size_t schedule_release(struct schedule *s, int64_t now, void (*fn)(void *ctx, unsigned target, struct qitem *it),
                        void *ctx);

/* Takes message id out; its connector in *target. NULL when not held. */
struct qitem *schedule_remove(struct schedule *s, uint64_t id, unsigned *target);

/* Messages held, for connector target or (target < 0) all. */
size_t schedule_count(struct schedule *s, int target);

/* Calls fn for up to limit of connector target's held messages from
 * position offset, the earliest due first, under the lock (fn must be
 * quick). Returns how many the connector has held. */
size_t schedule_walk(struct schedule *s, unsigned target, size_t offset, size_t limit,
                     void (*fn)(const struct qitem *it, void *ctx), void *ctx);

#endif
