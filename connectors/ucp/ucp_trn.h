/* ucp_trn.h - the UCP transaction reference window of one direction of a session.
 *
 * TRNs run 00-99 and wrap; the sender of an operation picks the next TRN that
 * is not still waiting for its result (protocols.md 1.11). A window tracks
 * those outstanding TRNs, each with a caller cookie and its send time, so the
 * session can match results and expire operations that got none.
 *
 * Pure bookkeeping: no threads, no clock (the caller passes monotonic
 * milliseconds), no allocation. The struct lives wherever the caller puts it
 * (typically inside the session); cookies are the caller's and are never
 * dereferenced. */
#ifndef EMG_UCP_TRN_H
#define EMG_UCP_TRN_H

#include <stddef.h>
#include <stdint.h>

#define UCP_TRN_COUNT 100

enum ucp_trn_error {
  UCP_TRN_E_FULL = -1,   /* window holds its maximum of outstanding TRNs */
  UCP_TRN_E_UNKNOWN = -2 /* no outstanding operation has this TRN */
};

struct ucp_trn_slot {
  void *cookie;
  uint64_t sent_ms;
  uint8_t busy;
};

struct ucp_trn_window {
  struct ucp_trn_slot slot[UCP_TRN_COUNT];
  unsigned window;      /* most outstanding TRNs allowed, 1-100 */
  unsigned outstanding; /* TRNs now waiting for a result */
  unsigned next;        /* where the search for a free TRN starts */
};

/* One expired operation, as ucp_trn_expire() hands it back. */
struct ucp_trn_expired {
  int trn;
  void *cookie;
  uint64_t sent_ms;
};

/* Sets w up empty, first TRN 00, window clamped to 1-100. */
void ucp_trn_init(struct ucp_trn_window *w, unsigned window);

/* Takes the next free TRN after the last one allocated (mod 100, skipping
 * outstanding ones) for an operation sent at now_ms. Returns the TRN (0-99)
 * or UCP_TRN_E_FULL. */
int ucp_trn_alloc(struct ucp_trn_window *w, void *cookie, uint64_t now_ms);

/* Marks trn answered (its result arrived) and frees it. Returns 0 and the
 * cookie in *cookie (if not NULL), or UCP_TRN_E_UNKNOWN. */
int ucp_trn_answer(struct ucp_trn_window *w, int trn, void **cookie);

/* Frees every TRN sent at or before now_ms - timeout_ms and lists it in
 * out[0..cap), oldest first; those that do not fit stay outstanding for the
 * next call. Returns the number listed. */
size_t ucp_trn_expire(struct ucp_trn_window *w, uint64_t now_ms, uint64_t timeout_ms,
                      struct ucp_trn_expired *out, size_t cap);

/* Send time of the oldest outstanding TRN in *sent_ms, for arming the
 * session's timer. Returns that TRN, or UCP_TRN_E_UNKNOWN when none is. */
int ucp_trn_oldest(const struct ucp_trn_window *w, uint64_t *sent_ms);

#endif
