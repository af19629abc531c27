/* window.h - the window of our outstanding requests on one connection, for
 * every protocol.
 *
 * Each request we send takes a ref (SMPP sequence_number, UCP TRN) from the
 * protocol's ref space: refs run ref_first .. ref_first + ref_count - 1 and
 * wrap, and the next ref skips refs still waiting for their response
 * (doc/ucp.md 6: UCP TRNs 00-99; doc/smpp.md 6.3: SMPP 1-0x7FFFFFFF). The window
 * holds at most `capacity` of them, each with the caller's cookie, a tag
 * and the send time, so that responses are matched by ref and requests that
 * got none expire oldest first.
 *
 * Every operation is O(1) (amortised, for send times that do not go
 * backwards): refs are found through a small open-addressing index sized to
 * the capacity, and outstanding requests are kept in send-time order.
 * Pure bookkeeping: no clock (times are the caller's milliseconds), no I/O;
 * one allocation at creation. Cookies are never dereferenced.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_WINDOW_H
#define EMG_WINDOW_H

#include <stddef.h>
#include <stdint.h>

/* The largest capacity a window takes (bigger ones are clamped). */
#define WINDOW_CAPACITY_MAX (1u << 20)

enum window_error {
  WINDOW_E_FULL = -1,      /* capacity requests are outstanding */
  WINDOW_E_UNKNOWN = -2    /* no outstanding request has this ref */
};

/* One outstanding request. */
struct window_entry {
  uint32_t ref;
  unsigned tag;            /* the caller's label (the session keeps the request op) */
  void *cookie;
  uint64_t sent_ms;
};

struct window;

/* An empty window whose first ref is ref_first, capacity clamped to
 * 1 .. min(ref_count, WINDOW_CAPACITY_MAX). NULL when out of memory or the
 * ref space is empty or runs past UINT32_MAX. Free with window_destroy. */
struct window *window_create(uint32_t ref_first, uint32_t ref_count, unsigned capacity);
void window_destroy(struct window *w);

/* Takes the next ref after the last one handed out (wrapping, skipping refs
 * still outstanding) for a request sent at now_ms. Returns 0 with the ref in
 * *ref, or WINDOW_E_FULL. */
int window_alloc(struct window *w, void *cookie, unsigned tag, uint64_t now_ms, uint32_t *ref);

/* The outstanding request with this ref, or NULL. Valid until w changes. */
const struct window_entry *window_find(const struct window *w, uint32_t ref);

/* Its response arrived: frees ref. Returns 0 and the request in *entry (if
 * not NULL), or WINDOW_E_UNKNOWN. */
int window_answer(struct window *w, uint32_t ref, struct window_entry *entry);

/* Frees every request sent at or before now_ms - timeout_ms and lists it in
 * out[0..cap), oldest first; those that do not fit stay outstanding for the
 * next call. A send time after now_ms never expires. Returns the number listed. */
size_t window_expire(struct window *w, uint64_t now_ms, uint64_t timeout_ms,
                     struct window_entry *out, size_t cap);

/* The outstanding request sent first (the earliest send time), or NULL. */
const struct window_entry *window_oldest(const struct window *w);

unsigned window_outstanding(const struct window *w);
unsigned window_capacity(const struct window *w);

/* Forgets every outstanding request; numbering restarts at ref_first (a new
 * connection). */
void window_reset(struct window *w);

#endif
