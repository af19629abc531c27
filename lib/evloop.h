/* evloop.h - a small epoll event loop: file descriptors and periodic ticks.
 *
 * One loop per thread; nothing here is thread-safe except evloop_wake(),
 * which another thread may call to interrupt a wait (the loop then runs its
 * wake callback). Time is cached per iteration (evloop_now_ms).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_EVLOOP_H
#define EMG_EVLOOP_H

#include <stdint.h>

#define EVLOOP_READ 1u
#define EVLOOP_WRITE 2u

struct evloop;

/* events: EVLOOP_READ / EVLOOP_WRITE that are ready, or both when the peer
 * hung up or the socket has an error (the next read or write reports it). */
typedef void (*evloop_io_fn)(struct evloop *loop, int fd, unsigned events, void *arg);
typedef void (*evloop_fn)(struct evloop *loop, void *arg);

/* tick_ms: how often tick callbacks run (e.g. 10). NULL on failure. */
struct evloop *evloop_create(unsigned tick_ms);
/* Runs the deferred callbacks still pending (so deferred frees happen), then
 * frees the loop. The fds still watched stay open: their owners close them. */
void evloop_destroy(struct evloop *loop);

/* Watches fd for events (EVLOOP_READ|EVLOOP_WRITE). Returns 0 or -1. */
int evloop_add(struct evloop *loop, int fd, unsigned events, evloop_io_fn fn, void *arg);
int evloop_modify(struct evloop *loop, int fd, unsigned events);
/* Stops watching fd (call before closing it). Safe inside a callback. */
void evloop_remove(struct evloop *loop, int fd);

/* Adds a callback run every tick; returns 0 or -1. Removed by evloop_untick. */
int evloop_tick(struct evloop *loop, evloop_fn fn, void *arg);
void evloop_untick(struct evloop *loop, evloop_fn fn, void *arg);

/* Adds a callback run once at the end of the current iteration, after all
 * I/O callbacks (used to flush output once per iteration). Deferred callbacks
 * run in the order they were added; one added by a deferred callback runs in
 * the next iteration, which then does not wait. Returns 0 or -1. */
int evloop_defer(struct evloop *loop, evloop_fn fn, void *arg);

/* Sets the callback evloop_wake() triggers. */
void evloop_on_wake(struct evloop *loop, evloop_fn fn, void *arg);
/* From any thread: interrupts the loop's wait; the wake callback runs in the loop's thread. */
void evloop_wake(struct evloop *loop);

/* Runs until evloop_stop(). Returns 0, or -1 on an epoll error. */
int evloop_run(struct evloop *loop);
/* Ends evloop_run after the current iteration; callable from callbacks or signal-safe via wake. */
void evloop_stop(struct evloop *loop);

/* Monotonic milliseconds as of this iteration. */
uint64_t evloop_now_ms(const struct evloop *loop);

#endif
