/* test_grace.c - the grace-period reclaimer: an object retired is freed
 * once, and only after every reader that could hold it has left; threads
 * give their slots back when they exit.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "clock.h"
#include "grace.h"
#include "testutil.h"

/* Objects whose free is counted, not done: a test checks each went once. */
#define TRACKED 16
static _Atomic unsigned freed_count[TRACKED];
static int tracked[TRACKED];

static void count_free(void *p)
{
  atomic_fetch_add(&freed_count[(int *)p - tracked], 1);
}

static void tracked_reset(void)
{
  for (int i = 0; i < TRACKED; i++)
    atomic_store(&freed_count[i], 0);
}

static int retire_tracked(struct grace *g, int i)
{
  char err[128];
  return grace_retire(g, &tracked[i], count_free, err, sizeof err);
}

/* Waits at most 10 s: a test that hangs fails instead. */
static int sem_wait_10s(sem_t *s)
{
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_sec += 10;
  int rc;
  while ((rc = sem_timedwait(s, &t)) != 0 && errno == EINTR)
    ;
  return rc;
}

/* A reader in another thread, entering and leaving when told. */
struct reader {
  struct grace *g;
  pthread_t thread;
  sem_t go_enter, entered, go_leave, left;
};

static void *reader_main(void *arg)
{
  struct reader *r = arg;
  if (sem_wait_10s(&r->go_enter) == 0) {
    grace_enter(r->g);
    sem_post(&r->entered);
    sem_wait_10s(&r->go_leave);
    grace_leave(r->g);
  }
  sem_post(&r->left);
  return NULL;
}

static void reader_start(struct reader *r, struct grace *g)
{
  r->g = g;
  sem_init(&r->go_enter, 0, 0);
  sem_init(&r->entered, 0, 0);
  sem_init(&r->go_leave, 0, 0);
  sem_init(&r->left, 0, 0);
  CU_ASSERT_EQUAL_FATAL(pthread_create(&r->thread, NULL, reader_main, r), 0);
}

static void reader_enter(struct reader *r)
{
  sem_post(&r->go_enter);
  CU_ASSERT_EQUAL(sem_wait_10s(&r->entered), 0);
}

static void reader_leave(struct reader *r)
{
  sem_post(&r->go_leave);
  CU_ASSERT_EQUAL(sem_wait_10s(&r->left), 0);
}

static void reader_join(struct reader *r)
{
  pthread_join(r->thread, NULL);
  sem_destroy(&r->go_enter);
  sem_destroy(&r->entered);
  sem_destroy(&r->go_leave);
  sem_destroy(&r->left);
}

/* No reader: the next reclaim frees all, each once; NULL is not retired. */
static void test_no_readers(void)
{
  tracked_reset();
  struct grace *g = grace_create();
  CU_ASSERT_PTR_NOT_NULL_FATAL(g);
  CU_ASSERT_EQUAL(grace_reclaim(g), 0);
  for (int i = 0; i < 3; i++)
    CU_ASSERT_EQUAL(retire_tracked(g, i), 0);
  CU_ASSERT_EQUAL(grace_retire(g, NULL, count_free, NULL, 0), 0);
  CU_ASSERT_EQUAL(grace_pending(g), 3);
  CU_ASSERT_EQUAL(grace_reclaim(g), 3);
  CU_ASSERT_EQUAL(grace_pending(g), 0);
  CU_ASSERT_EQUAL(grace_reclaim(g), 0);
  for (int i = 0; i < 3; i++)
    CU_ASSERT_EQUAL(freed_count[i], 1);
  /* free_fn NULL: free() (the sanitizer build would report a leak). */
  char err[128];
  CU_ASSERT_EQUAL(grace_retire(g, malloc(32), NULL, err, sizeof err), 0);
  CU_ASSERT_EQUAL(grace_reclaim(g), 1);
  grace_destroy(g);
  grace_destroy(NULL);
}

/* A reader inside since before the retire, in this thread or another,
 * holds the free until it leaves. */
static void test_reader_before_holds(void)
{
  tracked_reset();
  struct grace *g = grace_create();
  CU_ASSERT_PTR_NOT_NULL_FATAL(g);

  grace_enter(g);
  CU_ASSERT_EQUAL(retire_tracked(g, 0), 0);
  CU_ASSERT_EQUAL(grace_reclaim(g), 0);
  CU_ASSERT_EQUAL(freed_count[0], 0);
  grace_leave(g);
  CU_ASSERT_EQUAL(grace_reclaim(g), 1);
  CU_ASSERT_EQUAL(freed_count[0], 1);

  struct reader r;
  reader_start(&r, g);
  reader_enter(&r);
  CU_ASSERT_EQUAL(retire_tracked(g, 1), 0);
  CU_ASSERT_EQUAL(grace_reclaim(g), 0);
  CU_ASSERT_EQUAL(grace_pending(g), 1);
  CU_ASSERT_EQUAL(freed_count[1], 0);
  reader_leave(&r);
  CU_ASSERT_EQUAL(grace_reclaim(g), 1);
  CU_ASSERT_EQUAL(freed_count[1], 1);
  reader_join(&r);
  grace_destroy(g);
}

/* A reader that entered after the retire cannot have loaded the old
 * pointer: it does not hold the free; an older one still does. */
static void test_reader_after_does_not_hold(void)
{
  tracked_reset();
  struct grace *g = grace_create();
  CU_ASSERT_PTR_NOT_NULL_FATAL(g);
  struct reader early, late;
  reader_start(&early, g);
  reader_start(&late, g);

  CU_ASSERT_EQUAL(retire_tracked(g, 0), 0);
  reader_enter(&late);
  grace_enter(g);
  CU_ASSERT_EQUAL(grace_reclaim(g), 1);
  grace_leave(g);
  CU_ASSERT_EQUAL(freed_count[0], 1);

  reader_enter(&early);
  CU_ASSERT_EQUAL(retire_tracked(g, 1), 0);
  CU_ASSERT_EQUAL(retire_tracked(g, 2), 0);
  CU_ASSERT_EQUAL(grace_reclaim(g), 0);
  reader_leave(&early);
  /* Only `late` is inside now, since before both retires: it holds them. */
  CU_ASSERT_EQUAL(grace_reclaim(g), 0);
  reader_leave(&late);
  CU_ASSERT_EQUAL(grace_reclaim(g), 2);
  CU_ASSERT_EQUAL(freed_count[1], 1);
  CU_ASSERT_EQUAL(freed_count[2], 1);
  reader_join(&early);
  reader_join(&late);
  grace_destroy(g);
}

/* Nested sections: only the outermost leave ends the hold; a stray leave
 * is ignored and does not end a later section early. */
static void test_nesting(void)
{
  tracked_reset();
  struct grace *g = grace_create();
  CU_ASSERT_PTR_NOT_NULL_FATAL(g);
  grace_enter(g);
  grace_enter(g);
  CU_ASSERT_EQUAL(retire_tracked(g, 0), 0);
  grace_enter(g);
  grace_leave(g);
  grace_leave(g);
  CU_ASSERT_EQUAL(grace_reclaim(g), 0);
  grace_leave(g);
  CU_ASSERT_EQUAL(grace_reclaim(g), 1);
  CU_ASSERT_EQUAL(freed_count[0], 1);

  grace_leave(g);   /* stray */
  grace_enter(g);
  CU_ASSERT_EQUAL(retire_tracked(g, 1), 0);
  CU_ASSERT_EQUAL(grace_reclaim(g), 0);
  grace_leave(g);
  CU_ASSERT_EQUAL(grace_reclaim(g), 1);
  grace_destroy(g);
}

/* Destroy frees what is still retired, each once. */
static void test_destroy_frees_rest(void)
{
  tracked_reset();
  struct grace *g = grace_create();
  CU_ASSERT_PTR_NOT_NULL_FATAL(g);
  grace_enter(g);
  for (int i = 0; i < 5; i++)
    CU_ASSERT_EQUAL(retire_tracked(g, i), 0);
  CU_ASSERT_EQUAL(grace_reclaim(g), 0);
  grace_leave(g);
  CU_ASSERT_EQUAL(grace_pending(g), 5);
  grace_destroy(g);
  for (int i = 0; i < 5; i++)
    CU_ASSERT_EQUAL(freed_count[i], 1);
}

/* grace_wait gives up while a reader holds, succeeds once it has left. */
static void test_wait(void)
{
  tracked_reset();
  struct grace *g = grace_create();
  CU_ASSERT_PTR_NOT_NULL_FATAL(g);
  CU_ASSERT_TRUE(grace_wait(g, 0));
  struct reader r;
  reader_start(&r, g);
  reader_enter(&r);
  CU_ASSERT_EQUAL(retire_tracked(g, 0), 0);
  uint64_t t0 = clock_now_ns();
  CU_ASSERT_FALSE(grace_wait(g, 30));
  CU_ASSERT(clock_now_ns() - t0 >= 30000000u);
  CU_ASSERT_EQUAL(grace_pending(g), 1);
  CU_ASSERT_EQUAL(freed_count[0], 0);
  reader_leave(&r);
  CU_ASSERT_TRUE(grace_wait(g, 10000));
  CU_ASSERT_EQUAL(grace_pending(g), 0);
  CU_ASSERT_EQUAL(freed_count[0], 1);
  reader_join(&r);
  grace_destroy(g);
}

/* ---- threads that come and go ---- */

static void *enter_leave_once(void *arg)
{
  struct grace *g = arg;
  grace_enter(g);
  grace_leave(g);
  return NULL;
}

/* 2,000 short threads, 8 at a time: their slots come back at exit, so the
 * domain never needs more than its first block. */
static void test_thread_exit_gives_back(void)
{
  struct grace *g = grace_create();
  CU_ASSERT_PTR_NOT_NULL_FATAL(g);
  size_t taken;
  CU_ASSERT_EQUAL(grace_slots(g, &taken), GRACE_BLOCK_SLOTS);
  CU_ASSERT_EQUAL(taken, 0);
  int started = 0;
  for (int round = 0; round < 250; round++) {
    pthread_t t[8];
    int n = 0;
    for (; n < 8; n++)
      if (pthread_create(&t[n], NULL, enter_leave_once, g) != 0)
        break;
    for (int i = 0; i < n; i++)
      pthread_join(t[i], NULL);
    started += n;
  }
  CU_ASSERT_EQUAL(started, 2000);
  CU_ASSERT_EQUAL(grace_slots(g, &taken), GRACE_BLOCK_SLOTS);
  CU_ASSERT_EQUAL(taken, 0);
  grace_destroy(g);
}

/* Threads that hold a slot (idle) until released. */
struct parked {
  struct grace *g;
  sem_t *has_slot, *release;
};

static void *park(void *arg)
{
  struct parked *p = arg;
  grace_enter(p->g);
  grace_leave(p->g);
  sem_post(p->has_slot);
  sem_wait_10s(p->release);
  return NULL;
}

/* More threads than a block holds: a second block is added, and a reader
 * whose slot is in it holds the free like any other. */
static void test_second_block(void)
{
  enum { PARKED = GRACE_BLOCK_SLOTS + 6 };
  tracked_reset();
  struct grace *g = grace_create();
  CU_ASSERT_PTR_NOT_NULL_FATAL(g);
  sem_t has_slot, release;
  sem_init(&has_slot, 0, 0);
  sem_init(&release, 0, 0);
  struct parked p = { g, &has_slot, &release };
  pthread_t t[PARKED];
  int n = 0;
  for (; n < PARKED; n++)
    if (pthread_create(&t[n], NULL, park, &p) != 0)
      break;
  CU_ASSERT_EQUAL_FATAL(n, PARKED);
  for (int i = 0; i < n; i++)
    CU_ASSERT_EQUAL(sem_wait_10s(&has_slot), 0);
  size_t taken;
  CU_ASSERT_EQUAL(grace_slots(g, &taken), 2 * GRACE_BLOCK_SLOTS);
  CU_ASSERT_EQUAL(taken, PARKED);

  struct reader r;
  reader_start(&r, g);
  reader_enter(&r);   /* the first block is full: its slot is in the second */
  CU_ASSERT_EQUAL(retire_tracked(g, 0), 0);
  CU_ASSERT_EQUAL(grace_reclaim(g), 0);
  reader_leave(&r);
  CU_ASSERT_EQUAL(grace_reclaim(g), 1);
  CU_ASSERT_EQUAL(freed_count[0], 1);
  reader_join(&r);

  for (int i = 0; i < n; i++)
    sem_post(&release);
  for (int i = 0; i < n; i++)
    pthread_join(t[i], NULL);
  CU_ASSERT_EQUAL(grace_slots(g, &taken), 2 * GRACE_BLOCK_SLOTS);
  CU_ASSERT_EQUAL(taken, 0);
  sem_destroy(&has_slot);
  sem_destroy(&release);
  grace_destroy(g);
}

/* ---- many readers while a writer swaps, retires and reclaims ---- */

#define ALIVE 0xA11FEA11A11FEA11u
#define DEAD 0xDEADDEADDEADDEADu
#define READERS 8
#define READS 100000
#define SWAPS 20000

/* Freed objects are poisoned, not given back to malloc, so that a reader
 * holding one sees DEAD whatever the build. */
struct obj {
  _Atomic uint64_t canary;
  _Atomic unsigned frees;
  uint64_t value;
};

static struct obj *pool;
static _Atomic(struct obj *) shared;
static _Atomic int readers_running;
static _Atomic unsigned long dead_seen;

static void poison(void *p)
{
  struct obj *o = p;
  atomic_store_explicit(&o->canary, DEAD, memory_order_relaxed);
  atomic_fetch_add(&o->frees, 1);
}

static void *stress_reader(void *arg)
{
  struct grace *g = arg;
  for (int i = 0; i < READS; i++) {
    grace_enter(g);
    bool nested = i % 7 == 0;
    if (nested)
      grace_enter(g);
    struct obj *o = atomic_load_explicit(&shared, memory_order_acquire);
    if (atomic_load_explicit(&o->canary, memory_order_relaxed) != ALIVE)
      atomic_fetch_add(&dead_seen, 1);
    volatile uint64_t sum = 0;
    for (int k = 0; k < 16; k++)
      sum += o->value + (uint64_t)k;
    (void)sum;   /* read only to keep the reader in its section a while */
    if (nested)
      grace_leave(g);
    if (atomic_load_explicit(&o->canary, memory_order_relaxed) != ALIVE)
      atomic_fetch_add(&dead_seen, 1);
    grace_leave(g);
  }
  atomic_fetch_sub(&readers_running, 1);
  return NULL;
}

static void test_stress(void)
{
  struct grace *g = grace_create();
  CU_ASSERT_PTR_NOT_NULL_FATAL(g);
  pool = calloc(SWAPS + 1, sizeof *pool);
  CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
  atomic_store(&pool[0].canary, ALIVE);
  atomic_store(&shared, &pool[0]);
  atomic_store(&dead_seen, 0);
  atomic_store(&readers_running, READERS);
  pthread_t t[READERS];
  int n = 0;
  for (; n < READERS; n++)
    if (pthread_create(&t[n], NULL, stress_reader, g) != 0)
      break;
  CU_ASSERT_EQUAL_FATAL(n, READERS);

  int swaps = 0;
  size_t freed = 0;
  char err[128];
  while (swaps < SWAPS && atomic_load(&readers_running) > 0) {
    struct obj *fresh = &pool[++swaps];
    fresh->value = (uint64_t)swaps;
    atomic_store_explicit(&fresh->canary, ALIVE, memory_order_relaxed);
    struct obj *old = atomic_exchange(&shared, fresh);
    CU_ASSERT_EQUAL(grace_retire(g, old, poison, err, sizeof err), 0);
    if (swaps % 4 == 0)
      freed += grace_reclaim(g);
  }
  for (int i = 0; i < n; i++)
    pthread_join(t[i], NULL);
  CU_ASSERT_TRUE(grace_wait(g, 10000));
  CU_ASSERT_EQUAL(atomic_load(&dead_seen), 0);
  unsigned wrong = 0;
  for (int i = 0; i < swaps; i++)
    wrong += atomic_load(&pool[i].frees) != 1;
  CU_ASSERT_EQUAL(wrong, 0);
  CU_ASSERT_EQUAL(atomic_load(&pool[swaps].frees), 0);   /* the current one */
  printf("\n    %d swaps, %zu freed while %d readers x %d reads ran ", swaps, freed, READERS, READS);
  grace_destroy(g);
  free(pool);
  pool = NULL;
}

/* What a reader pays per section, printed, never asserted. */
static void test_cost(void)
{
  enum { ROUNDS = 2000000 };
  struct grace *g = grace_create();
  CU_ASSERT_PTR_NOT_NULL_FATAL(g);
  grace_enter(g);   /* the first enter takes the slot: not measured */
  grace_leave(g);
  uint64_t t0 = clock_now_ns();
  for (int i = 0; i < ROUNDS; i++) {
    grace_enter(g);
    grace_leave(g);
  }
  uint64_t ns = clock_now_ns() - t0;
  printf("\n    enter+leave: %.1f ns ", (double)ns / ROUNDS);
  tracked_reset();
  CU_ASSERT_EQUAL(retire_tracked(g, 0), 0);
  CU_ASSERT_EQUAL(grace_reclaim(g), 1);
  grace_destroy(g);
}

void suite_grace(void);
void suite_grace(void)
{
  static const struct test_case cases[] = {
    { "no readers: reclaim frees all, once", test_no_readers },
    { "a reader inside before the retire holds the free", test_reader_before_holds },
    { "a reader that entered after the retire does not", test_reader_after_does_not_hold },
    { "nested sections hold until the outermost leave", test_nesting },
    { "destroy frees what is still retired", test_destroy_frees_rest },
    { "grace_wait times out while held, succeeds after", test_wait },
    { "2,000 short threads give their slots back", test_thread_exit_gives_back },
    { "a reader in an added block holds the free", test_second_block },
    { "8 readers never see a freed object", test_stress },
    { "cost of enter+leave", test_cost },
    { NULL, NULL },
  };
  test_add_suite("grace", cases);
}
