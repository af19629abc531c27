/* receipt_join.h - one receipt for a long message sent in parts.
 *
 * A connector whose long_receipts policy is "combined" asks the SMSC for a
 * receipt on every part of a message the gateway split, and the origin
 * hears once: delivered when every part is, or the first failure as soon as
 * it comes. The parts of such a message are registered here when they are
 * made (and again on replay, for the parts still in the journal: those that
 * are not were resolved before the restart). Each part's receipt (or the
 * gateway's own failure of a part) is offered here; the verdict says
 * whether the origin hears it. After the first failure the parts still
 * open are finished in the journal (the caller is given their ids), so
 * that a restart cannot turn their later receipts into a second answer.
 *
 * A whole is keyed by the origin's connector, account and reference (the
 * id the origin knows it by: all its parts carry it). Bounded: beyond max
 * wholes at once a new one is not registered, and its parts' receipts pass
 * as they come, as with the "each" policy. A whole is forgotten ttl_s after
 * it was registered, as its parts' DLR entries are. One lock.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_RECEIPT_JOIN_H
#define EMG_RECEIPT_JOIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct receipt_join;

struct receipt_join *receipt_join_create(size_t max, uint32_t ttl_s);
void receipt_join_destroy(struct receipt_join *j);

/* Which whole a part belongs to, and which part it is (1-based). */
struct receipt_join_key {
  uint16_t origin_connector;
  const char *origin_user;
  const char *origin_ref;
  uint8_t seq, total;
};

/* Registers part k->seq of a whole, with its message id. replayed: the
 * whole is being rebuilt from the journal, where every part not registered
 * has been resolved. Returns false when the whole could not be kept (full,
 * no memory, no reference): its receipts then pass as they come. */
bool receipt_join_register(struct receipt_join *j, const struct receipt_join_key *k, uint64_t msg_id,
                           bool replayed, int64_t now);

/* Registers a whole as it is split: part i + 1 has ids[i], k->total parts
 * (k->seq is not used). One look in the table for all of them. */
bool receipt_join_register_whole(struct receipt_join *j, const struct receipt_join_key *k, const uint64_t *ids,
                                 int64_t now);

enum receipt_join_verdict {
  RECEIPT_JOIN_PASS,   /* the origin hears this receipt (the whole's answer, or not a registered whole) */
  RECEIPT_JOIN_HOLD    /* it does not: other parts are still open, or the whole was answered */
};

/* A receipt (state: enum msg_state) for part k->seq. A non-final state
 * passes for the first part only. *finish (room for 255 ids) gets the ids of
 * the parts left open when this is the whole's first failure, *n_finish
 * their count. */
enum receipt_join_verdict receipt_join_offer(struct receipt_join *j, const struct receipt_join_key *k,
                                             uint8_t state, uint64_t *finish, size_t *n_finish);

/* Forgets the wholes registered more than ttl_s before now; returns how many. */
size_t receipt_join_expire(struct receipt_join *j, int64_t now);

/* Wholes kept now. */
size_t receipt_join_count(struct receipt_join *j);

#endif
