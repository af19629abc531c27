/* log_bench.c - what verbose logging costs: debug2 lines per second written
 * to a file from 1, 2, 10 and 20 threads, the gateway's target load paced
 * from 20 threads, and disabled log calls per second.
 *
 * Usage: log_bench [--lines N] [--dir DIR]
 * Lines are about 280 bytes, the size of a debug2 line that shows a
 * submit_sm with its 145-character text, written to a new file in DIR
 * (default $TMPDIR or /tmp) that is removed afterwards.
 *
 * Flat out: the threads do nothing but log N lines in all (default
 * 1,000,000). "callers/s" is the rate at which they got through their calls,
 * "written/s" counts until log_shutdown has flushed the last line. Threads
 * that only log outrun one writer on a small machine; what the writer could
 * not take in time is dropped and counted in the file ("dropped").
 * Paced: 20 threads log 20,000 msgs/s at five debug2 lines per message for
 * three seconds, the load the gateway must carry; nothing may be dropped,
 * and the time a log call takes is shown as percentiles.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "histogram.h"
#include "log.h"

enum {
  LINES_PER_MSG = 5,
  PACED_THREADS = 20,
  PACED_MSGS_PER_S = 20000,
  PACED_SECONDS = 3,
};

static const char text145[] =
  "Dear customer, your parcel 4711 has been dispatched and will arrive tomorrow between "
  "08:00 and 12:00. Reply STOP to opt out. Thanks for ordering!";

/* One logging thread: flat out (msgs_per_s 0) or paced. */
struct worker {
  pthread_t thread;
  struct log_category *cat;
  long lines;                  /* flat out: to log; paced: logged */
  double msgs_per_s;
  struct histogram latency;    /* paced: ns per call */
};

static void log_line(struct log_category *cat, long i)
{
  LOGD2(cat, "smpp-out[%ld]: submit_sm seq=%ld src=4912345678901 dst=4917612345678 dcs=0 "
             "len=145 text=%s", i % 10, i, text145);
}

static void *work(void *arg)
{
  struct worker *w = arg;
  if (w->msgs_per_s == 0) {
    for (long i = 0; i < w->lines; i++)
      log_line(w->cat, i);
    return NULL;
  }
  uint64_t period = (uint64_t)(1e9 / w->msgs_per_s), next = clock_now_ns();
  long msgs = (long)(w->msgs_per_s * PACED_SECONDS);
  for (long m = 0; m < msgs; m++) {
    for (long l = 0; l < LINES_PER_MSG; l++) {
      uint64_t start = clock_now_ns();
      log_line(w->cat, m * LINES_PER_MSG + l);
      histogram_record(&w->latency, clock_now_ns() - start);
    }
    next += period;
    struct timespec until = { (time_t)(next / 1000000000u), (long)(next % 1000000000u) };
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL);
  }
  w->lines = msgs * LINES_PER_MSG;
  return NULL;
}

struct result {
  long calls, lines;               /* lines logged, and found in the file */
  unsigned long long dropped;      /* as the writer reported them */
  double bytes;
  double call_seconds, total_seconds;
  struct histogram latency;
};

/* Lines in the file that a caller wrote, their bytes, and the drops the
 * writer reported. */
static int count_file(const char *path, struct result *r)
{
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  while ((len = getline(&line, &cap, f)) != -1) {
    unsigned long long n;
    const char *report = strstr(line, " emg.log: ");
    if (report && sscanf(report, " emg.log: %llu lines dropped", &n) == 1) {
      r->dropped += n;
    } else {
      r->lines++;
      r->bytes += (double)len;
    }
  }
  free(line);
  fclose(f);
  return 0;
}

static void bench_path(char *path, size_t size, const char *dir)
{
  snprintf(path, size, "%s/log_bench.%d.log", dir, (int)getpid());
}

/* Logs from `threads` workers into a new file under dir and counts what
 * reached it; 0, or -1 when a line is neither in the file nor counted. */
static int run(const char *dir, int threads, long lines, double msgs_per_s, struct result *r)
{
  char path[4096];
  bench_path(path, sizeof path, dir);
  unlink(path);
  memset(r, 0, sizeof *r);
  histogram_init(&r->latency);
  struct worker *w = calloc((size_t)threads, sizeof *w);
  if (!w || log_init(LOG_DEBUG2, path) != 0) {
    perror(path);
    free(w);
    return -1;
  }
  uint64_t start = clock_now_ns();
  for (int t = 0; t < threads; t++) {
    w[t].cat = log_category("emg.conn.smpp-out");
    w[t].lines = lines / threads;
    w[t].msgs_per_s = msgs_per_s;
    histogram_init(&w[t].latency);
    if (pthread_create(&w[t].thread, NULL, work, &w[t]) != 0)
      abort();
  }
  for (int t = 0; t < threads; t++) {
    pthread_join(w[t].thread, NULL);
    r->calls += w[t].lines;
    histogram_merge(&r->latency, &w[t].latency);
  }
  r->call_seconds = (double)(clock_now_ns() - start) / 1e9;
  log_shutdown();
  r->total_seconds = (double)(clock_now_ns() - start) / 1e9;
  free(w);

  int rc = count_file(path, r);
  if (rc != 0)
    perror(path);
  unlink(path);
  if (rc == 0 && r->lines + (long)r->dropped != r->calls) {
    fprintf(stderr, "log_bench: %lld lines neither written nor counted as dropped\n",
            (long long)r->calls - r->lines - (long long)r->dropped);
    rc = -1;
  }
  return rc;
}

/* A debug2 call while the level is info: the inline compare alone. */
static double disabled_calls_per_s(struct log_category *cat)
{
  uint64_t calls = 0, start = clock_now_ns(), elapsed;
  do {
    for (long i = 0; i < 10000000; i++)
      log_line(cat, i);
    calls += 10000000;
    elapsed = clock_now_ns() - start;
  } while (elapsed < 1000000000u);
  return (double)calls / ((double)elapsed / 1e9);
}

int main(int argc, char **argv)
{
  long lines = 1000000;
  const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--lines") == 0 && i + 1 < argc) {
      lines = atol(argv[++i]);
    } else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) {
      dir = argv[++i];
    } else {
      fprintf(stderr, "usage: log_bench [--lines N] [--dir DIR]\n");
      return 5;
    }
  }
  if (lines < 100)
    lines = 100;

  static const int flat_out[] = { 1, 2, 10, 20 };
  struct result r;
  int failed = 0;
  printf("emg log benchmark: debug2 lines into %s, %ld CPUs\n\n"
         "flat out, %ld lines per run:\n%8s %14s %14s %10s %10s\n",
         dir, sysconf(_SC_NPROCESSORS_ONLN), lines, "threads", "callers/s", "written/s", "MB/s",
         "dropped");
  for (size_t i = 0; i < sizeof flat_out / sizeof flat_out[0]; i++) {
    failed |= run(dir, flat_out[i], lines, 0, &r) != 0;
    printf("%8d %14.0f %14.0f %10.1f %10llu\n", flat_out[i], (double)r.calls / r.call_seconds,
           (double)r.lines / r.total_seconds, r.bytes / r.total_seconds / 1e6, r.dropped);
    fflush(stdout);
  }

  failed |= run(dir, PACED_THREADS, 0, (double)PACED_MSGS_PER_S / PACED_THREADS, &r) != 0;
  printf("\npaced: %d threads, %d msgs/s x %d debug2 lines for %d s: %ld lines, %.0f lines/s, "
         "dropped %llu (%s)\n  time per call: p50 %llu ns, p99 %llu ns, p99.9 %llu ns, max %llu ns\n",
         PACED_THREADS, PACED_MSGS_PER_S, LINES_PER_MSG, PACED_SECONDS, r.lines,
         (double)r.lines / r.call_seconds, r.dropped,
         r.dropped == 0 && r.lines == r.calls ? "target met" : "target MISSED",
         (unsigned long long)histogram_percentile(&r.latency, 50),
         (unsigned long long)histogram_percentile(&r.latency, 99),
         (unsigned long long)histogram_percentile(&r.latency, 99.9),
         (unsigned long long)r.latency.max);
  failed |= r.dropped != 0;

  char path[4096];
  bench_path(path, sizeof path, dir);
  if (log_init(LOG_INFO, path) == 0) {
    printf("\ndisabled debug2 calls/s (level info, one thread): %.0f\n",
           disabled_calls_per_s(log_category("emg.conn.smpp-out")));
    log_shutdown();
    unlink(path);
  }
  return failed;
}
