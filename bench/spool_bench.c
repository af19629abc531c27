/* spool_bench.c - spool throughput with group commit, and replay time.
 *
 * 1. For 1, 4 and 10 threads (fsync on, a temp dir under --dir, on the disk
 *    the gateway would use): each thread does what an instance does per
 *    window: appends 64 MSG records (145-character texts, 13-digit
 *    addresses), waits until the last is durable (the acks), then appends a
 *    SENT and a FINISHED for each. Prints records/s, MB/s and fsyncs/s.
 * 2. Replay: writes --count MSG and as many SENT records (1,000,000 each by
 *    default: the 1M queued + 1M open DLR entries), then times
 *    spool_open replaying them, and the memory it took (max RSS growth).
 *
 * Usage: spool_bench [--dir DIR] [--count N] [--seconds S]
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "clock.h"
#include "spool.h"

#define WINDOW 64

static const char *base_dir = ".";
static size_t count = 1000000;
static double seconds = 3;
static uint8_t text[145];

struct worker {
  struct spool *spool;
  unsigned index;
  uint64_t records, bytes;
  volatile const int *stop;
};

static void msg_make(struct msg *m, uint64_t id)
{
  memset(m, 0, sizeof *m);
  m->id = id;
  snprintf(m->src.addr, sizeof m->src.addr, "4912345678901");
  m->src.ton = MSG_TON_INTERNATIONAL;
  m->src.npi = 1;
  snprintf(m->dst.addr, sizeof m->dst.addr, "49176%08" PRIu64, id % 100000000);
  m->dst.ton = MSG_TON_INTERNATIONAL;
  m->dst.npi = 1;
  m->dlr_mask = MSG_DLR_DELIVERED | MSG_DLR_FAILED;
  m->received_ms = 1764480000000 + (int64_t)id;
  m->origin.connector = 1;
  snprintf(m->origin.user, sizeof m->origin.user, "load");
  snprintf(m->origin.ref, sizeof m->origin.ref, "4917612345678:261130053501");
  m->data_len = sizeof text;
  m->data = text;
}

static void die(const char *what)
{
  fprintf(stderr, "spool_bench: %s\n", what);
  exit(1);
}

static void *work(void *arg)
{
  struct worker *w = arg;
  uint64_t id = (uint64_t)w->index << 40;
  struct msg m;
  char smsc_id[24];
  while (!*w->stop) {
    uint64_t first = id + 1, ticket = 0;
    for (int i = 0; i < WINDOW; i++) {
      msg_make(&m, ++id);
      ticket = spool_append(w->spool, &(struct spool_record){ .type = SPOOL_REC_MSG, .id = id, .msg = &m });
    }
    if (!ticket)
      die("append refused");
    while (spool_durable(w->spool) < ticket)
      usleep(50);
    for (uint64_t k = first; k <= id; k++) {
      snprintf(smsc_id, sizeof smsc_id, "%" PRIu64, k * 7919);
      spool_append(w->spool, &(struct spool_record){ .type = SPOOL_REC_SENT, .id = k, .smsc_id = smsc_id });
      spool_append(w->spool, &(struct spool_record){ .type = SPOOL_REC_FINISHED, .id = k });
    }
    w->records += 3 * WINDOW;
  }
  return NULL;
}

static char *temp_dir(void)
{
  static char path[512];
  snprintf(path, sizeof path, "%s/spool-bench-XXXXXX", base_dir);
  if (!mkdtemp(path))
    die("cannot make a temp dir");
  return path;
}

static void remove_dir(const char *dir)
{
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "spool_bench: cannot remove %s\n", dir);
}

static void no_replay(void *ctx, const struct spool_record *rec)
{
  (void)ctx;
  (void)rec;
}

static void group_commit(unsigned threads)
{
  char *dir = temp_dir(), err[256];
  struct spool_options opt = { .sync = true };
  struct spool *s = spool_open(dir, &opt, no_replay, NULL, NULL, err, sizeof err);
  if (!s)
    die(err);
  volatile int stop = 0;
  struct worker w[16];
  pthread_t t[16];
  uint64_t start = clock_now_ns();
  for (unsigned i = 0; i < threads; i++) {
    w[i] = (struct worker){ s, i + 1, 0, 0, &stop };
    pthread_create(&t[i], NULL, work, &w[i]);
  }
  usleep((useconds_t)(seconds * 1e6));
  stop = 1;
  uint64_t records = 0;
  for (unsigned i = 0; i < threads; i++) {
    pthread_join(t[i], NULL);
    records += w[i].records;
  }
  double elapsed = (double)(clock_now_ns() - start) / 1e9;
  struct spool_stats st;
  spool_stats(s, &st);
  spool_close(s);
  printf("group commit, %2u thread%s: %9.0f records/s  %6.1f MB/s  %7.0f fsyncs/s  (%.0f msgs/s of 3 records)\n",
         threads, threads > 1 ? "s" : " ", (double)records / elapsed, (double)st.bytes / elapsed / 1e6,
         (double)st.fsyncs / elapsed, (double)records / 3 / elapsed);
  remove_dir(dir);
}

static void count_replay(void *ctx, const struct spool_record *rec)
{
  uint64_t *n = ctx;
  n[rec->type]++;
}

static long max_rss_kb(void)
{
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

static void replay_time(void)
{
  char *dir = temp_dir(), err[256];
  struct spool_options opt = { .sync = false };
  struct spool *s = spool_open(dir, &opt, no_replay, NULL, NULL, err, sizeof err);
  if (!s)
    die(err);
  struct msg m;
  char smsc_id[24];
  uint64_t ticket = 0;
  for (uint64_t id = 1; id <= count; id++) {
    msg_make(&m, id);
    if (!spool_append(s, &(struct spool_record){ .type = SPOOL_REC_MSG, .id = id, .target = 1, .msg = &m }))
      die("append refused");
  }
  for (uint64_t id = 1; id <= count; id++) {
    snprintf(smsc_id, sizeof smsc_id, "%" PRIu64, id * 7919);
    ticket = spool_append(s, &(struct spool_record){ .type = SPOOL_REC_SENT, .id = id, .target = 2,
                                                      .smsc_id = smsc_id });
  }
  while (spool_durable(s) < ticket)
    usleep(1000);
  struct spool_stats st;
  spool_stats(s, &st);
  spool_close(s);
  if (system("sync") != 0)
    fprintf(stderr, "spool_bench: sync failed\n");

  uint64_t seen[8] = { 0 };
  long rss_before = max_rss_kb();
  uint64_t start = clock_now_ns();
  s = spool_open(dir, &opt, count_replay, NULL, seen, err, sizeof err);
  double elapsed = (double)(clock_now_ns() - start) / 1e9;
  if (!s)
    die(err);
  long rss_after = max_rss_kb();
  spool_close(s);
  printf("replay: %" PRIu64 " MSG + %" PRIu64 " SENT (%.0f MB in %" PRIu64 " segments) in %.2f s, "
         "max RSS +%ld MB\n",
         seen[SPOOL_REC_MSG], seen[SPOOL_REC_SENT], (double)st.disk_bytes / 1e6, st.segments, elapsed,
         (rss_after - rss_before) / 1024);
  if (seen[SPOOL_REC_MSG] != count || seen[SPOOL_REC_SENT] != count)
    die("replay lost records");
  remove_dir(dir);
}

int main(int argc, char **argv)
{
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--dir") && i + 1 < argc)
      base_dir = argv[++i];
    else if (!strcmp(argv[i], "--count") && i + 1 < argc)
      count = strtoul(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = atof(argv[++i]);
    else
      die("usage: spool_bench [--dir DIR] [--count N] [--seconds S]");
  }
  memset(text, 'a', sizeof text);
  const unsigned threads[] = { 1, 4, 10 };
  for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++)
    group_commit(threads[i]);
  replay_time();
  return 0;
}
