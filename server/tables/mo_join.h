/* mo_join.h - the parts of a long MO joined before an application gets it.
 *
 * An MO from an SMSC in concatenated parts (a concatenation IE with an 8-
 * or 16-bit reference; SMPP's sar_* TLVs arrive as one) waits here, part by
 * part, keyed by its connector, sender, recipient, reference and total,
 * until every part came: then one message (the first part's id, the texts
 * in order, the UDH without the concatenation IE) goes on, and the other
 * parts are done with. Parts that wait longer than the time-out go on as
 * they are. Bounded: beyond max_groups messages being joined at once, a new
 * one's parts pass unjoined. One lock; adds from the instances, expiry
 * from the daemon's tick.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_MO_JOIN_H
#define EMG_MO_JOIN_H

#include <stddef.h>
#include <stdint.h>
#include "queue.h"

struct mo_join;

struct mo_join *mo_join_create(size_t max_groups, unsigned timeout_s);
/* Frees the parts still held. */
void mo_join_destroy(struct mo_join *j);

enum mo_join_result {
  MO_JOIN_PASS,        /* not a part of a concatenated message (or no room): the caller sends it */
  MO_JOIN_HELD,        /* kept until its siblings come */
  MO_JOIN_DUPLICATE,   /* a part number its message has already (an SMSC sending it again): the
                          caller is done with it */
  MO_JOIN_WHOLE        /* the last part came: *whole is the joined message, *done the other parts */
};

/* Offers message item it, routed to connector target. With MO_JOIN_WHOLE,
 * *whole (a new item, the first part's id) and *done (the parts, it among
 * them, to be finished and freed) are the caller's; NULL *whole when out of
 * memory (then *done holds the parts to send as they are). */
enum mo_join_result mo_join_add(struct mo_join *j, struct qitem *it, unsigned target, struct qitem **whole,
                                struct qlist *done);

/* Calls fn(ctx, target, it) for each part of the messages whose first part
 * came more than the time-out before now (Unix s), after taking them out.
 * Returns how many parts. */
size_t mo_join_expire(struct mo_join *j, int64_t now, void (*fn)(void *ctx, unsigned target, struct qitem *it),
                      void *ctx);

/* Parts held now. */
size_t mo_join_held(struct mo_join *j);

#endif
