/* evloop.c - the epoll event loop: fd watchers, periodic ticks, deferred
 * callbacks and an eventfd for wake-ups from other threads.
 *
 * One iteration: wait (no longer than the next tick, not at all while
 * deferred callbacks are pending), run the I/O callbacks of the ready fds,
 * run the tick callbacks when a tick is due, then run the deferred callbacks
 * in the order they were added. Epoll is level-triggered, so a callback that
 * reads only part of what is pending is called again next iteration.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "clock.h"
#include "evloop.h"

#define EVLOOP_BATCH 256

/* A watched fd. Each registration gets a fresh generation, carried in the
 * epoll event next to the fd: an event of the current batch for an fd that
 * a callback removed (or removed and re-added as a new socket with the same
 * number) no longer matches and is dropped. */
struct watcher {
  evloop_io_fn fn;
  void *arg;
  uint32_t generation;      /* 0 = not watched */
};

struct callback {
  evloop_fn fn;
  void *arg;
  bool live;                /* ticks: false once unticked while the ticks run */
};

struct callback_list {
  struct callback *items;
  size_t count;
  size_t capacity;
};

struct evloop {
  int epoll_fd;
  int wake_fd;
  _Atomic bool wake_pending;       /* a wake is asked for and not yet handled: later ones need nothing */
  _Atomic bool sleeping;           /* in (or about to enter) a blocking epoll_wait: a wake must write */
  unsigned tick_ms;
  uint64_t now_ms;
  uint64_t next_tick_ms;
  bool stopping;

  struct watcher *watchers; /* indexed by fd */
  size_t watcher_count;
  uint32_t last_generation;

  struct callback_list ticks;
  bool ticks_running;
  bool ticks_dead;          /* entries were unticked while running: compact after */

  /* Deferred callbacks are added to `pending`; an iteration swaps it with
   * `running` and runs that, so what a deferred callback defers in turn
   * runs in the next iteration (which then does not wait). */
  struct callback_list pending;
  struct callback_list running;

  evloop_fn wake_fn;
  void *wake_arg;
};

static int list_push(struct callback_list *l, evloop_fn fn, void *arg)
{
  if (l->count == l->capacity) {
    size_t capacity = l->capacity ? l->capacity * 2 : 16;
    struct callback *items = realloc(l->items, capacity * sizeof *items);
    if (!items)
      return -1;
    l->items = items;
    l->capacity = capacity;
  }
  l->items[l->count++] = (struct callback){ fn, arg, true };
  return 0;
}

static void run_deferred(struct evloop *loop)
{
  struct callback_list swap = loop->running;
  loop->running = loop->pending;
  loop->pending = swap;
  for (size_t i = 0; i < loop->running.count; i++)
    loop->running.items[i].fn(loop, loop->running.items[i].arg);
  loop->running.count = 0;
}

/* Handles a pending wake. The flag is cleared before the call: a waker
 * that still saw it set has made its change before the call looks. */
static void take_wake(struct evloop *loop)
{
  if (atomic_load_explicit(&loop->wake_pending, memory_order_relaxed) &&
      atomic_exchange(&loop->wake_pending, false) && loop->wake_fn)
    loop->wake_fn(loop, loop->wake_arg);
}

static void wake_ready(struct evloop *loop, int fd, unsigned events, void *arg)
{
  (void)events;
  (void)arg;
  uint64_t count;
  /* Draining the counter re-arms it; several wakes coalesce into one call. */
  ssize_t n = read(fd, &count, sizeof count);
  (void)n;
  take_wake(loop);
}

struct evloop *evloop_create(unsigned tick_ms)
{
  struct evloop *loop = calloc(1, sizeof *loop);
  if (!loop)
    return NULL;
  loop->wake_fd = -1;
  loop->tick_ms = tick_ms ? tick_ms : 1;
  loop->now_ms = clock_now_ms();
  loop->next_tick_ms = loop->now_ms + loop->tick_ms;
  loop->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (loop->epoll_fd == -1)
    goto fail;
  loop->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (loop->wake_fd == -1 || evloop_add(loop, loop->wake_fd, EVLOOP_READ, wake_ready, NULL) == -1)
    goto fail;
  return loop;
fail:
  evloop_destroy(loop);
  return NULL;
}

void evloop_destroy(struct evloop *loop)
{
  if (!loop)
    return;
  /* Deferred work still pending (typically frees of destroyed sessions)
   * runs now rather than leaking. */
  while (loop->pending.count)
    run_deferred(loop);
  if (loop->wake_fd >= 0)
    close(loop->wake_fd);
  if (loop->epoll_fd >= 0)
    close(loop->epoll_fd);
  free(loop->watchers);
  free(loop->ticks.items);
  free(loop->pending.items);
  free(loop->running.items);
  free(loop);
}

static uint32_t epoll_events(unsigned events)
{
  return (events & EVLOOP_READ ? EPOLLIN : 0u) | (events & EVLOOP_WRITE ? EPOLLOUT : 0u);
}

static int watch(struct evloop *loop, int op, int fd, unsigned events)
{
  struct epoll_event ev = {
    .events = epoll_events(events),
    .data.u64 = (uint64_t)loop->watchers[fd].generation << 32 | (uint32_t)fd,
  };
  return epoll_ctl(loop->epoll_fd, op, fd, &ev);
}

int evloop_add(struct evloop *loop, int fd, unsigned events, evloop_io_fn fn, void *arg)
{
  if (fd < 0)
    return -1;
  if ((size_t)fd >= loop->watcher_count) {
    size_t count = loop->watcher_count ? loop->watcher_count : 64;
    while (count <= (size_t)fd)
      count *= 2;
    struct watcher *watchers = realloc(loop->watchers, count * sizeof *watchers);
    if (!watchers)
      return -1;
    for (size_t i = loop->watcher_count; i < count; i++)
      watchers[i] = (struct watcher){ NULL, NULL, 0 };
    loop->watchers = watchers;
    loop->watcher_count = count;
  }
  struct watcher *w = &loop->watchers[fd];
  if (w->generation)
    return -1;
  if (++loop->last_generation == 0)
    loop->last_generation = 1;
  *w = (struct watcher){ fn, arg, loop->last_generation };
  if (watch(loop, EPOLL_CTL_ADD, fd, events) == -1) {
    w->generation = 0;
    return -1;
  }
  return 0;
}

int evloop_modify(struct evloop *loop, int fd, unsigned events)
{
  if (fd < 0 || (size_t)fd >= loop->watcher_count || !loop->watchers[fd].generation)
    return -1;
  return watch(loop, EPOLL_CTL_MOD, fd, events);
}

void evloop_remove(struct evloop *loop, int fd)
{
  if (fd < 0 || (size_t)fd >= loop->watcher_count || !loop->watchers[fd].generation)
    return;
  loop->watchers[fd].generation = 0;
  epoll_ctl(loop->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
}

int evloop_tick(struct evloop *loop, evloop_fn fn, void *arg)
{
  return list_push(&loop->ticks, fn, arg);
}

void evloop_untick(struct evloop *loop, evloop_fn fn, void *arg)
{
  struct callback_list *l = &loop->ticks;
  for (size_t i = 0; i < l->count; i++) {
    if (!l->items[i].live || l->items[i].fn != fn || l->items[i].arg != arg)
      continue;
    if (loop->ticks_running) {
      /* run_ticks is walking the array: leave the hole for it to compact. */
      l->items[i].live = false;
      loop->ticks_dead = true;
    } else {
      l->items[i] = l->items[--l->count];
    }
    return;
  }
}

static void run_ticks(struct evloop *loop)
{
  struct callback_list *l = &loop->ticks;
  size_t count = l->count; /* ticks added by a tick callback start next time */
  loop->ticks_running = true;
  for (size_t i = 0; i < count; i++)
    if (l->items[i].live)
      l->items[i].fn(loop, l->items[i].arg);
  loop->ticks_running = false;
  if (loop->ticks_dead) {
    size_t kept = 0;
    for (size_t i = 0; i < l->count; i++)
      if (l->items[i].live)
        l->items[kept++] = l->items[i];
    l->count = kept;
    loop->ticks_dead = false;
  }
}

int evloop_defer(struct evloop *loop, evloop_fn fn, void *arg)
{
  return list_push(&loop->pending, fn, arg);
}

void evloop_on_wake(struct evloop *loop, evloop_fn fn, void *arg)
{
  loop->wake_fn = fn;
  loop->wake_arg = arg;
}

void evloop_wake(struct evloop *loop)
{
  /* One write per handled wake, and none while the loop is running (it
   * looks at the flag before it sleeps): the writes were most of the cost
   * of waking a loop that other threads signal many times a millisecond. */
  if (atomic_exchange(&loop->wake_pending, true) || !atomic_load(&loop->sleeping))
    return;
  uint64_t one = 1;
  /* Only fails when the counter is about to overflow, i.e. a wake is pending anyway. */
  ssize_t written = write(loop->wake_fd, &one, sizeof one);
  (void)written;
}

static int wait_timeout(const struct evloop *loop)
{
  if (loop->pending.count)
    return 0;
  if (!loop->ticks.count)
    return -1;
  return loop->next_tick_ms > loop->now_ms ? (int)(loop->next_tick_ms - loop->now_ms) : 0;
}

static void dispatch(struct evloop *loop, const struct epoll_event *ev)
{
  int fd = (int)(uint32_t)ev->data.u64;
  uint32_t generation = (uint32_t)(ev->data.u64 >> 32);
  struct watcher *w = &loop->watchers[fd];
  if (w->generation != generation)
    return;
  unsigned events = (ev->events & EPOLLIN ? EVLOOP_READ : 0u) |
                    (ev->events & EPOLLOUT ? EVLOOP_WRITE : 0u);
  if (ev->events & (EPOLLHUP | EPOLLERR))
    events = EVLOOP_READ | EVLOOP_WRITE;
  w->fn(loop, fd, events, w->arg);
}

int evloop_run(struct evloop *loop)
{
  struct epoll_event events[EVLOOP_BATCH];
  int rc = 0;
  while (!loop->stopping) {
    loop->now_ms = clock_now_ms();
    int timeout = wait_timeout(loop);
    if (timeout != 0) {
      /* Sequentially consistent, as in evloop_wake: either the waker sees
       * us sleeping and writes, or we see its wake and do not block. */
      atomic_store(&loop->sleeping, true);
      if (atomic_load(&loop->wake_pending))
        timeout = 0;
    }
    int n = epoll_wait(loop->epoll_fd, events, EVLOOP_BATCH, timeout);
    atomic_store_explicit(&loop->sleeping, false, memory_order_relaxed);
    if (n == -1 && errno != EINTR) {
      rc = -1;
      break;
    }
    loop->now_ms = clock_now_ms();
    for (int i = 0; i < n; i++)
      dispatch(loop, &events[i]);
    take_wake(loop);   /* a wake that came while the loop was busy wrote nothing */
    if (loop->ticks.count && loop->now_ms >= loop->next_tick_ms) {
      loop->next_tick_ms += loop->tick_ms;
      /* After a long callback, skip the missed ticks rather than run them back to back. */
      if (loop->next_tick_ms <= loop->now_ms)
        loop->next_tick_ms = loop->now_ms + loop->tick_ms;
      run_ticks(loop);
    }
    run_deferred(loop);
  }
  loop->stopping = false;
  return rc;
}

void evloop_stop(struct evloop *loop)
{
  loop->stopping = true;
}

uint64_t evloop_now_ms(const struct evloop *loop)
{
  return loop->now_ms;
}
