/* dblog_bench.c - the message log writer's sustained throughput.
 *
 * Producer threads log what the gateway logs for each message: ACCEPTED
 * when it comes in, SENT a little later (the submit response, here 200
 * messages behind), and a DELIVERED receipt much later (here 20,000
 * messages behind, as receipts come seconds after the submit). They log as
 * fast as db_log_event takes events; the figure is the time until the
 * database holds them all (db_log_sync), so it is the writer's rate,
 * including its trips through the spill file when memory is full. At the
 * end the rows are counted in the database: one per message, each
 * DELIVERED with its SMSC id.
 *
 * Usage: dblog_bench --url CONNINFO [--messages N] [--threads T] [--writers W]
 *                    [--memory BYTES] [--batch EVENTS] [--spill-dir DIR]
 * (writers, memory and batch as in struct db_log_limits; 0 = its default)
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libpq-fe.h>
#include "clock.h"
#include "db.h"

#define SENT_LAG 200
#define RECEIPT_LAG 20000

static const char *url;
static uint64_t messages = 1000000;
static unsigned threads = 2;
static unsigned writers;
static size_t memory_bytes;
static unsigned batch_events;
static const char *spill_dir;

struct producer {
  struct db_log *log;
  unsigned index;
  uint64_t first, count;           /* message numbers [first, first + count) */
  uint64_t logged, failed;
};

static void die(const char *what)
{
  fprintf(stderr, "dblog_bench: %s\n", what);
  exit(1);
}

static uint64_t msg_id(uint64_t n)
{
  return (UINT64_C(1) << 48) | (n + 1);
}

static void log_one(struct producer *p, struct db_log_event *ev)
{
  if (db_log_event(p->log, ev) == 0)
    p->logged++;
  else
    p->failed++;
}

static void accepted(struct producer *p, uint64_t n)
{
  char ref[24];
  struct db_log_event ev = { .kind = DB_LOG_ACCEPTED, .msg_id = msg_id(n) };
  snprintf(ref, sizeof ref, "%" PRIu64, msg_id(n));
  ev.origin_connector = "ucp-in";
  ev.origin_user = "load";
  ev.origin_ref = ref;
  snprintf(ev.src.addr, sizeof ev.src.addr, "4912345678901");
  ev.src.ton = MSG_TON_INTERNATIONAL;
  ev.src.npi = 1;
  snprintf(ev.dst.addr, sizeof ev.dst.addr, "49176%08" PRIu64, n % 100000000);
  ev.dst.ton = MSG_TON_INTERNATIONAL;
  ev.dst.npi = 1;
  ev.dlr_mask = MSG_DLR_DELIVERED | MSG_DLR_FAILED;
  ev.target_connector = "smpp-out";
  log_one(p, &ev);
}

static void sent(struct producer *p, uint64_t n)
{
  char smsc_id[24];
  snprintf(smsc_id, sizeof smsc_id, "%" PRIx64, n * 7919 + 1);
  struct db_log_event ev = { .kind = DB_LOG_SENT, .msg_id = msg_id(n), .target_connector = "smpp-out",
                             .smsc_id = smsc_id, .attempt = 1 };
  log_one(p, &ev);
}

static void receipt(struct producer *p, uint64_t n)
{
  struct db_log_event ev = { .kind = DB_LOG_RECEIPT, .msg_id = msg_id(n), .state = MSG_STATE_DELIVERED,
                             .done_time = time(NULL) };
  log_one(p, &ev);
}

static void *produce(void *arg)
{
  struct producer *p = arg;
  for (uint64_t i = 0; i < p->count + RECEIPT_LAG; i++) {
    if (i < p->count)
      accepted(p, p->first + i);
    if (i >= SENT_LAG && i - SENT_LAG < p->count)
      sent(p, p->first + i - SENT_LAG);
    if (i >= RECEIPT_LAG)
      receipt(p, p->first + i - RECEIPT_LAG);
  }
  return NULL;
}

static long long count_rows(const char *sql)
{
  PGconn *c = PQconnectdb(url);
  if (PQstatus(c) != CONNECTION_OK)
    die(PQerrorMessage(c));
  PGresult *r = PQexec(c, sql);
  if (PQresultStatus(r) != PGRES_TUPLES_OK)
    die(PQresultErrorMessage(r));
  long long n = atoll(PQgetvalue(r, 0, 0));
  PQclear(r);
  PQfinish(c);
  return n;
}

int main(int argc, char **argv)
{
  char err[DB_ERR_LEN], tmp_dir[] = "/tmp/dblog-bench.XXXXXX";
  /* Options come in pairs: NAME VALUE. */
  for (int i = 1; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v)
      die("every option takes a value");
    if (strcmp(a, "--url") == 0)
      url = v;
    else if (strcmp(a, "--messages") == 0)
      messages = strtoull(v, NULL, 10);
    else if (strcmp(a, "--threads") == 0)
      threads = (unsigned)atoi(v);
    else if (strcmp(a, "--memory") == 0)
      memory_bytes = strtoull(v, NULL, 10);
    else if (strcmp(a, "--writers") == 0)
      writers = (unsigned)atoi(v);
    else if (strcmp(a, "--batch") == 0)
      batch_events = (unsigned)atoi(v);
    else if (strcmp(a, "--spill-dir") == 0)
      spill_dir = v;
    else
      die("usage: dblog_bench --url CONNINFO [--messages N] [--threads T] [--writers W] [--memory BYTES] "
          "[--batch N] [--spill-dir DIR]");
  }
  if (!url || threads == 0 || threads > 64 || messages < threads)
    die("need --url, 1..64 threads and at least one message per thread");
  if (!spill_dir && !(spill_dir = mkdtemp(tmp_dir)))
    die("cannot make a spill directory");
  int applied;
  if (db_init_schema(url, 0, &applied, err, sizeof err) < 0)
    die(err);
  if (count_rows("SELECT count(*) FROM message_log") != 0)
    die("message_log is not empty: use a fresh database");

  struct db_log_limits limits = { .writers = writers, .memory_bytes = memory_bytes, .batch_events = batch_events };
  struct db_log *log = db_log_open(url, spill_dir, &limits, err, sizeof err);
  if (!log)
    die(err);
  struct producer prod[64];
  pthread_t tid[64];
  uint64_t per = messages / threads;
  uint64_t start = clock_now_ns();
  for (unsigned t = 0; t < threads; t++) {
    prod[t] = (struct producer){ .log = log, .index = t, .first = t * per,
                                 .count = t + 1 == threads ? messages - t * per : per };
    if (pthread_create(&tid[t], NULL, produce, &prod[t]) != 0)
      die("pthread_create");
  }
  uint64_t logged = 0, failed = 0;
  for (unsigned t = 0; t < threads; t++) {
    pthread_join(tid[t], NULL);
    logged += prod[t].logged;
    failed += prod[t].failed;
  }
  double produced_s = (double)(clock_now_ns() - start) / 1e9;
  if (db_log_sync(log, 600000) < 0)
    die("the log did not catch up within 600 s");
  double total_s = (double)(clock_now_ns() - start) / 1e9;
  struct db_log_stats st;
  db_log_stats(log, &st);
  db_log_close(log, 5000);

  long long rows = count_rows("SELECT count(*) FROM message_log");
  long long delivered = count_rows("SELECT count(*) FROM message_log WHERE state = 2 AND smsc_id IS NOT NULL"
                                   " AND received_at IS NOT NULL AND receipt_state = 2");
  printf("dblog: %" PRIu64 " messages, %" PRIu64 " events (%" PRIu64 " refused) from %u threads, %u writers\n",
         messages, logged, failed, threads, writers ? writers : 2);
  printf("dblog: producers done in %.2f s (%.0f events/s offered)\n", produced_s, (double)logged / produced_s);
  printf("dblog: all written in %.2f s: %.0f events/s, %.0f messages/s; %" PRIu64 " transactions, "
         "%" PRIu64 " events through the spill file\n",
         total_s, (double)st.events_written / total_s, (double)messages / total_s, st.batches, st.events_spilled);
  printf("dblog: message_log has %lld rows, %lld of them complete and DELIVERED\n", rows, delivered);
  if (spill_dir == tmp_dir)
    rmdir(tmp_dir);
  return rows == (long long)messages && delivered == rows && failed == 0 ? 0 : 1;
}
