/* grace.h - frees what a reload swapped out once no thread can still use it.
 *
 * A reload swaps a shared pointer (the router, the plugin host, an account
 * table) while other threads may be reading the old object. Freeing it at
 * once would crash them; keeping it for ever, or for a fixed time, leaks or
 * guesses. Here readers mark each use with grace_enter / grace_leave, the
 * writer hands the old object to grace_retire after the swap, and
 * grace_reclaim frees it once every reader that could have loaded it has
 * left (epoch-based reclamation: see grace.c for why it is safe).
 *
 *   reader, any thread:                 writer (reload):
 *     grace_enter(g);                     old = atomic_exchange(&shared, fresh);
 *     struct router *r = atomic_load(&shared);
 *     ... use r ...                       if (grace_retire(g, old, router_free, err, sizeof err))
 *     grace_leave(g);                       ... out of memory: keep old, as before
 *                                         housekeeping tick: grace_reclaim(g);
 *
 * Readers: any thread, no registration. A thread's first grace_enter on a
 * domain takes one of the domain's slots (and may allocate); after that an
 * enter is a thread-specific lookup, a load, a store and a fence, and a
 * leave a lookup and a store: no lock, no allocation. The slot goes back to
 * the domain when the thread exits. Slots come in blocks
 * of GRACE_BLOCK_SLOTS; when all are taken a new block is added (existing
 * slots never move). If that block cannot be allocated, the thread reads
 * under a shared count instead, which is as safe but holds back every
 * reclaim while any such reader is inside.
 *
 * Enter/leave pairs nest within a thread. A reader must not keep a pointer
 * loaded inside a section after leaving it, and must leave before the
 * thread exits. A leave with no enter open in the thread is ignored. A
 * reader that stays inside holds back the freeing of everything retired
 * after it entered (grace_pending grows).
 *
 * Writers: grace_retire, grace_reclaim, grace_pending and grace_wait may be
 * called from any thread, at the same time; free_fn runs in the thread that
 * reclaims, outside any lock of the domain, once per retired object.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_GRACE_H
#define EMG_GRACE_H

#include <stdbool.h>
#include <stddef.h>

#define GRACE_BLOCK_SLOTS 64

struct grace;

/* A domain: one set of readers and one list of retired objects (one per
 * process is enough; a few are fine). NULL when out of memory or when the
 * process has no thread-specific key left (pthread_key_create). */
struct grace *grace_create(void);

/* Frees every object still retired (free_fn each), then the domain. Call it
 * when no thread will use the domain again and none is inside it, and not
 * while a thread that used it is exiting (at process exit, after joining).
 * Threads that used it may still be alive: their slots go with it. NULL is
 * ignored. */
void grace_destroy(struct grace *g);

/* Around each use of a pointer that a writer may swap and retire. */
void grace_enter(struct grace *g);
void grace_leave(struct grace *g);

/* Hands p, already swapped away so that no new reader can load it, to the
 * domain: free_fn(p) runs in a later grace_reclaim, once no reader that
 * entered before this call is still inside. Call it in the thread that did
 * the swap, after the swap. free_fn NULL means free(). p NULL does nothing.
 * Returns 0, or -1 with err filled when out of memory: then p was not
 * taken and stays the caller's (keep it rather than free it too soon).
 *
 * For a plugin's shared object, dlclose belongs in free_fn: the library is
 * then unloaded only when no thread can still be running its code. */
int grace_retire(struct grace *g, void *p, void (*free_fn)(void *p), char *err, size_t err_len);

/* Frees what no reader can hold any more; returns how many were freed.
 * Never waits for readers: call it from a periodic tick. */
size_t grace_reclaim(struct grace *g);

/* Objects retired and not yet freed. */
size_t grace_pending(struct grace *g);

/* Reclaims until nothing is pending (true) or timeout_ms pass (false),
 * checking every millisecond or so. Waits for everything pending, including
 * what other threads retire meanwhile. Never call it inside a read section
 * of the same domain: it would wait for itself until the time-out. */
bool grace_wait(struct grace *g, unsigned timeout_ms);

/* Slots the domain has (all blocks); *taken, if not NULL, gets how many of
 * them threads hold now. For the status page and tests. */
size_t grace_slots(struct grace *g, size_t *taken);

#endif
