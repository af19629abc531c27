/* test_evloop.c - the event loop: fd callbacks, removal inside callbacks
 * (same epoll batch included), ticks, deferred callbacks, wake-ups from
 * another thread, stop. Every loop run is bounded by a guard tick.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "evloop.h"
#include "testutil.h"

#define GUARD_MS 10000

/* Ends a run that would otherwise hang the suite: a bound no slow machine
 * (sanitizers, a busy CI host) reaches for runs of some 100 ms. */
struct guard {
  uint64_t deadline;
  int fired;
};

static void guard_tick(struct evloop *loop, void *arg)
{
  struct guard *g = arg;
  if (evloop_now_ms(loop) >= g->deadline) {
    g->fired = 1;
    evloop_stop(loop);
  }
}

static void run_guarded(struct evloop *loop, struct guard *g)
{
  g->deadline = evloop_now_ms(loop) + GUARD_MS;
  g->fired = 0;
  CU_ASSERT_EQUAL_FATAL(evloop_tick(loop, guard_tick, g), 0);
  CU_ASSERT_EQUAL(evloop_run(loop), 0);
  evloop_untick(loop, guard_tick, g);
  CU_ASSERT_FALSE(g->fired);
}

/* ---- fd callbacks ---- */

struct reader {
  int calls;
  unsigned events;
  char data[16];
};

static void read_and_stop(struct evloop *loop, int fd, unsigned events, void *arg)
{
  struct reader *r = arg;
  r->calls++;
  r->events = events;
  if (events & EVLOOP_READ)
    CU_ASSERT(read(fd, r->data, sizeof r->data - 1) > 0);
  evloop_stop(loop);
}

static void test_fd_callbacks(void)
{
  struct evloop *loop = evloop_create(5);
  struct reader r = { 0 };
  struct guard g;
  int sv[2];
  CU_ASSERT_PTR_NOT_NULL_FATAL(loop);
  CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  CU_ASSERT_EQUAL(evloop_add(loop, sv[0], EVLOOP_READ, read_and_stop, &r), 0);
  CU_ASSERT_EQUAL(evloop_add(loop, sv[0], EVLOOP_READ, read_and_stop, &r), -1); /* already watched */
  CU_ASSERT_EQUAL(evloop_add(loop, -1, EVLOOP_READ, read_and_stop, &r), -1);
  CU_ASSERT_EQUAL(write(sv[1], "hello", 5), 5);
  run_guarded(loop, &g);
  CU_ASSERT_EQUAL(r.calls, 1);
  CU_ASSERT_EQUAL(r.events, EVLOOP_READ);
  CU_ASSERT_STRING_EQUAL(r.data, "hello");

  /* write interest: an empty socket is writable at once */
  CU_ASSERT_EQUAL(evloop_modify(loop, sv[0], EVLOOP_WRITE), 0);
  r.calls = 0;
  run_guarded(loop, &g);
  CU_ASSERT_EQUAL(r.calls, 1);
  CU_ASSERT(r.events & EVLOOP_WRITE);

  /* a hung-up peer is reported as both */
  CU_ASSERT_EQUAL(evloop_modify(loop, sv[0], EVLOOP_READ), 0);
  CU_ASSERT_EQUAL(write(sv[1], "x", 1), 1);
  close(sv[1]);
  r.calls = 0;
  run_guarded(loop, &g);
  CU_ASSERT_EQUAL(r.events, EVLOOP_READ | EVLOOP_WRITE);

  evloop_remove(loop, sv[0]);
  CU_ASSERT_EQUAL(evloop_modify(loop, sv[0], EVLOOP_READ), -1); /* no longer watched */
  close(sv[0]);
  evloop_destroy(loop);
}

/* ---- removal inside a callback ---- */

struct pair_state {
  int fds[2];              /* two readable sockets, ready in the same batch */
  int calls[2];
  int reused_fd;           /* a new socket on the number just freed */
  int reused_calls;
  int spare[2];            /* its socketpair */
};

static void stop_tick(struct evloop *loop, void *arg)
{
  evloop_stop(loop);
}

static void reused_called(struct evloop *loop, int fd, unsigned events, void *arg)
{
  struct pair_state *p = arg;
  p->reused_calls++;
}

/* Whichever of the two runs first removes and closes the other, then puts a
 * new, idle socket on the same fd number: the other's pending event of this
 * batch must reach neither the old callback nor the new one. */
static void remove_other(struct evloop *loop, int fd, unsigned events, void *arg)
{
  struct pair_state *p = arg;
  int me = fd == p->fds[0] ? 0 : 1, other = 1 - me;
  char buf[8];
  p->calls[me]++;
  CU_ASSERT(read(fd, buf, sizeof buf) > 0);
  if (p->fds[other] >= 0) {
    int number = p->fds[other];
    evloop_remove(loop, number);
    close(number);
    p->fds[other] = -1;
    CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, p->spare), 0);
    /* the lowest free number is the one just closed */
    CU_ASSERT_EQUAL(p->spare[0], number);
    p->reused_fd = p->spare[0];
    CU_ASSERT_EQUAL(evloop_add(loop, p->reused_fd, EVLOOP_READ, reused_called, p), 0);
  }
  evloop_stop(loop);
}

static void test_remove_in_callback(void)
{
  struct evloop *loop = evloop_create(5);
  struct pair_state p = { .reused_fd = -1 };
  int a[2], b[2];
  struct guard g;
  CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, a), 0);
  CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, b), 0);
  p.fds[0] = a[0];
  p.fds[1] = b[0];
  CU_ASSERT_EQUAL(evloop_add(loop, a[0], EVLOOP_READ, remove_other, &p), 0);
  CU_ASSERT_EQUAL(evloop_add(loop, b[0], EVLOOP_READ, remove_other, &p), 0);
  CU_ASSERT_EQUAL(write(a[1], "a", 1), 1);
  CU_ASSERT_EQUAL(write(b[1], "b", 1), 1);
  run_guarded(loop, &g);
  CU_ASSERT_EQUAL(p.calls[0] + p.calls[1], 1);
  CU_ASSERT_EQUAL(p.reused_calls, 0);
  /* the new socket on the reused number is watched for real */
  CU_ASSERT_EQUAL(write(p.spare[1], "c", 1), 1);
  CU_ASSERT_EQUAL(evloop_tick(loop, stop_tick, NULL), 0);
  run_guarded(loop, &g);
  evloop_untick(loop, stop_tick, NULL);
  CU_ASSERT(p.reused_calls >= 1);
  evloop_remove(loop, p.reused_fd);
  for (int i = 0; i < 2; i++)
    if (p.fds[i] >= 0) {
      evloop_remove(loop, p.fds[i]);
      close(p.fds[i]);
    }
  close(p.spare[0]);
  close(p.spare[1]);
  close(a[1]);
  close(b[1]);
  evloop_destroy(loop);
}

/* ---- ticks ---- */

struct ticker {
  int count;
  int limit;
  struct ticker *other;    /* unticked by this one once it reaches its limit */
  uint64_t first_ms;
  uint64_t last_ms;
};

static void count_tick(struct evloop *loop, void *arg)
{
  struct ticker *t = arg;
  if (t->count++ == 0)
    t->first_ms = evloop_now_ms(loop);
  t->last_ms = evloop_now_ms(loop);
  if (t->count == t->limit) {
    if (t->other)
      evloop_untick(loop, count_tick, t->other);
    else
      evloop_stop(loop);
  }
}

static void test_ticks(void)
{
  struct evloop *loop = evloop_create(10);
  struct ticker stopper = { .limit = 10 }, quitter = { .limit = 1000 }, early = { .limit = 3 };
  struct guard g;
  early.other = &quitter;
  CU_ASSERT_EQUAL(evloop_tick(loop, count_tick, &quitter), 0);
  CU_ASSERT_EQUAL(evloop_tick(loop, count_tick, &early), 0);
  CU_ASSERT_EQUAL(evloop_tick(loop, count_tick, &stopper), 0);
  uint64_t start = clock_now_ms();
  run_guarded(loop, &g);
  uint64_t elapsed = clock_now_ms() - start;
  CU_ASSERT_EQUAL(stopper.count, 10);
  /* ten ticks of 10 ms: about 100 ms, never much less; the upper bound is
   * for ticks ten times too far apart, with room for a busy machine's
   * late wake-ups */
  CU_ASSERT(elapsed >= 85 && elapsed < 1000);
  CU_ASSERT(stopper.last_ms - stopper.first_ms >= 80);
  /* early unticked quitter on its third tick; quitter had run that tick before it */
  CU_ASSERT_EQUAL(quitter.count, 3);
  /* early keeps ticking: untick removes only the one asked for */
  CU_ASSERT_EQUAL(early.count, 10);
  evloop_untick(loop, count_tick, &early);
  evloop_untick(loop, count_tick, &stopper);
  evloop_destroy(loop);
}

/* ---- deferred callbacks ---- */

struct order_log {
  char seq[32];
  size_t len;
};

static void log_char(struct order_log *l, char c)
{
  if (l->len < sizeof l->seq - 1)
    l->seq[l->len++] = c;
}

static void defer_a(struct evloop *loop, void *arg)
{
  log_char(arg, 'a');
}

static void defer_c(struct evloop *loop, void *arg)
{
  log_char(arg, 'c');
  evloop_stop(loop);
}

static void defer_b(struct evloop *loop, void *arg)
{
  log_char(arg, 'b');
  /* deferred from a deferred callback: runs next iteration, not now */
  evloop_defer(loop, defer_c, arg);
}

static void io_defers(struct evloop *loop, int fd, unsigned events, void *arg)
{
  char buf[8];
  if (read(fd, buf, sizeof buf) <= 0)
    return;
  log_char(arg, 'i');
  evloop_defer(loop, defer_a, arg);
  evloop_defer(loop, defer_b, arg);
}

static void io_log(struct evloop *loop, int fd, unsigned events, void *arg)
{
  char buf[8];
  if (read(fd, buf, sizeof buf) > 0)
    log_char(arg, 'j');
}

static void test_defer(void)
{
  struct evloop *loop = evloop_create(5);
  struct order_log l = { { 0 }, 0 };
  struct guard g;
  int a[2], b[2];
  CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, a), 0);
  CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, b), 0);
  CU_ASSERT_EQUAL(evloop_add(loop, a[0], EVLOOP_READ, io_defers, &l), 0);
  CU_ASSERT_EQUAL(evloop_add(loop, b[0], EVLOOP_READ, io_log, &l), 0);
  CU_ASSERT_EQUAL(write(a[1], "x", 1), 1);
  CU_ASSERT_EQUAL(write(b[1], "y", 1), 1);
  run_guarded(loop, &g);
  /* both I/O callbacks (in either order) before the deferred ones, which run
   * in the order they were added; c, deferred by b, after the iteration */
  CU_ASSERT(strcmp(l.seq, "ijabc") == 0 || strcmp(l.seq, "jiabc") == 0);

  /* what is still pending when the loop is destroyed runs then */
  l.len = 0;
  memset(l.seq, 0, sizeof l.seq);
  CU_ASSERT_EQUAL(evloop_defer(loop, defer_a, &l), 0);
  evloop_remove(loop, a[0]);
  evloop_remove(loop, b[0]);
  evloop_destroy(loop);
  CU_ASSERT_STRING_EQUAL(l.seq, "a");
  close(a[0]);
  close(a[1]);
  close(b[0]);
  close(b[1]);
}

/* ---- wake from another thread ---- */

struct waker {
  struct evloop *loop;
  pthread_t loop_thread;
  int wakes;
  int in_loop_thread;
};

static void on_wake(struct evloop *loop, void *arg)
{
  struct waker *w = arg;
  w->wakes++;
  w->in_loop_thread = pthread_equal(pthread_self(), w->loop_thread);
  evloop_stop(loop);
}

static void *wake_later(void *arg)
{
  struct waker *w = arg;
  struct timespec pause = { 0, 30 * 1000000L };
  nanosleep(&pause, NULL);
  evloop_wake(w->loop);
  evloop_wake(w->loop); /* coalesces with the first, or wakes a later run */
  return NULL;
}

static void test_wake(void)
{
  struct waker w = { .loop = evloop_create(1000), .loop_thread = pthread_self() };
  pthread_t thread;
  CU_ASSERT_PTR_NOT_NULL_FATAL(w.loop);
  evloop_on_wake(w.loop, on_wake, &w);
  struct guard g;
  uint64_t start = clock_now_ms();
  CU_ASSERT_EQUAL_FATAL(pthread_create(&thread, NULL, wake_later, &w), 0);
  /* the only tick is the guard's, every second: the wake ends the wait sooner */
  run_guarded(w.loop, &g);
  uint64_t elapsed = clock_now_ms() - start;
  pthread_join(thread, NULL);
  CU_ASSERT(w.wakes >= 1);
  CU_ASSERT(w.in_loop_thread);
  CU_ASSERT(elapsed >= 25 && elapsed < 1000);
  evloop_destroy(w.loop);
}

/* ---- stop ---- */

struct stopper {
  int ticks;
  int deferred;
};

static void note_deferred(struct evloop *loop, void *arg)
{
  ((struct stopper *)arg)->deferred++;
}

static void stop_on_tick(struct evloop *loop, void *arg)
{
  struct stopper *s = arg;
  s->ticks++;
  evloop_defer(loop, note_deferred, s);
  evloop_stop(loop);
}

static void test_stop(void)
{
  struct evloop *loop = evloop_create(5);
  struct stopper s = { 0, 0 };
  CU_ASSERT_EQUAL(evloop_tick(loop, stop_on_tick, &s), 0);
  uint64_t before = evloop_now_ms(loop);
  CU_ASSERT_EQUAL(evloop_run(loop), 0);
  /* the iteration that stopped finished: its deferred callback ran */
  CU_ASSERT_EQUAL(s.ticks, 1);
  CU_ASSERT_EQUAL(s.deferred, 1);
  /* the loop runs again after a stop, and its clock moves on */
  CU_ASSERT_EQUAL(evloop_run(loop), 0);
  CU_ASSERT_EQUAL(s.ticks, 2);
  CU_ASSERT(evloop_now_ms(loop) >= before + 5);
  evloop_untick(loop, stop_on_tick, &s);
  evloop_destroy(loop);
}

void suite_evloop(void);
void suite_evloop(void)
{
  static const struct test_case cases[] = {
    { "fd callbacks", test_fd_callbacks },
    { "remove inside a callback", test_remove_in_callback },
    { "ticks", test_ticks },
    { "deferred callbacks", test_defer },
    { "wake from another thread", test_wake },
    { "stop", test_stop },
    { NULL, NULL },
  };
  test_add_suite("evloop", cases);
}
