/* db_test.c - server/db*.c against a real PostgreSQL.
 *
 * Run by tests/integration/db.sh, which starts a throw-away cluster and sets
 *   EMG_TEST_PGURL     the URL of an empty database "emg"
 *   EMG_TEST_PG_STOP   a command that stops the cluster (pg_ctl stop -m fast)
 *   EMG_TEST_PG_START  a command that starts it again
 *   EMG_TEST_TMP       a scratch directory (spill files)
 * Without EMG_TEST_PGURL it says so and exits 77 (skipped).
 *
 * The suites run in order: the first finds the database without a schema.
 * Usage: emg_db_test [suite...]
 * SPDX-License-Identifier: Apache-2.0
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <CUnit/Basic.h>
#include <libpq-fe.h>
#include "clock.h"
#include "db.h"

static const char *pg_url, *pg_stop, *pg_start, *tmp_dir;

/* ---- helpers ---- */

static PGconn *check_connect(const char *url)
{
  PGconn *c = PQconnectdb(url);
  if (PQstatus(c) != CONNECTION_OK) {
    fprintf(stderr, "db_test: %s", PQerrorMessage(c));
    PQfinish(c);
    return NULL;
  }
  return c;
}

/* The first column of the first row of sql, as a number (-1 on error). */
static long long sql_value(const char *sql)
{
  PGconn *c = check_connect(pg_url);
  if (!c)
    return -1;
  PGresult *r = PQexec(c, sql);
  long long v = -1;
  if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0)
    v = atoll(PQgetvalue(r, 0, 0));
  else
    fprintf(stderr, "db_test: %s: %s", sql, PQresultErrorMessage(r));
  PQclear(r);
  PQfinish(c);
  return v;
}

static int sql_run(const char *url, const char *sql)
{
  PGconn *c = check_connect(url);
  if (!c)
    return -1;
  PGresult *r = PQexec(c, sql);
  int rc = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK ? 0 : -1;
  if (rc)
    fprintf(stderr, "db_test: %s: %s", sql, PQresultErrorMessage(r));
  PQclear(r);
  PQfinish(c);
  return rc;
}

/* The test database's URL with another database name. */
static void url_for(char *out, size_t cap, const char *dbname)
{
  const char *slash = strrchr(pg_url, '/');
  snprintf(out, cap, "%.*s/%s", (int)(slash - pg_url), pg_url, dbname);
}

static void spill_dir(char *out, size_t cap, const char *name)
{
  snprintf(out, cap, "%s/%s", tmp_dir, name);
  mkdir(out, 0700);
}

static uint64_t node_msg(unsigned node, uint64_t n)
{
  return (uint64_t)node << 48 | n;
}

static void ev_accepted(struct db_log_event *ev, uint64_t id, int64_t t)
{
  memset(ev, 0, sizeof *ev);
  ev->kind = DB_LOG_ACCEPTED;
  ev->msg_id = id;
  ev->time_ms = t;
  ev->origin_connector = "ucp-in";
  ev->origin_user = "load";
  ev->origin_ref = "4917600000000:010125120000";
  snprintf(ev->src.addr, sizeof ev->src.addr, "4912345");
  ev->src.ton = 1;
  ev->src.npi = 1;
  snprintf(ev->dst.addr, sizeof ev->dst.addr, "49176%" PRIu64, id & 0xffffff);
  ev->dst.ton = 1;
  ev->dst.npi = 1;
  ev->dlr_mask = MSG_DLR_DELIVERED | MSG_DLR_FAILED;
  ev->target_connector = "smpp-out";
}

static void ev_sent(struct db_log_event *ev, uint64_t id, int64_t t, unsigned attempt, const char *smsc_id)
{
  memset(ev, 0, sizeof *ev);
  ev->kind = DB_LOG_SENT;
  ev->msg_id = id;
  ev->time_ms = t;
  ev->target_connector = attempt > 1 ? "smpp-backup" : "smpp-out";
  ev->smsc_id = smsc_id;
  ev->attempt = (uint16_t)attempt;
}

static void ev_state(struct db_log_event *ev, enum db_log_kind kind, uint64_t id, int64_t t, uint8_t state,
                     uint16_t error)
{
  memset(ev, 0, sizeof *ev);
  ev->kind = kind;
  ev->msg_id = id;
  ev->time_ms = t;
  ev->state = state;
  ev->error = error;
  ev->done_time = t / 1000;
}

/* ---- schema ---- */

static void test_schema_missing(void)
{
  char err[DB_ERR_LEN];
  uint64_t first;
  struct db *db = db_open(pg_url, 2000, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(db);
  CU_ASSERT_EQUAL(db_id_block(db, 10, 1, &first, err, sizeof err), DB_E_SCHEMA);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "--init-db"));
  db_close(db);
  CU_ASSERT_PTR_NULL(db_open("host=127.0.0.1 port=notaport x==y", 1000, err, sizeof err));
}

static void test_init_twice(void)
{
  char err[DB_ERR_LEN] = "";
  int applied = -1;
  CU_ASSERT_EQUAL(db_init_schema(pg_url, 10000, &applied, err, sizeof err), 0);
  CU_ASSERT_EQUAL(applied, DB_SCHEMA_VERSION);
  CU_ASSERT_EQUAL(db_init_schema(pg_url, 10000, &applied, err, sizeof err), 0);
  CU_ASSERT_EQUAL(applied, 0);
  CU_ASSERT_EQUAL(sql_value("SELECT count(*) FROM schema_migrations"), DB_SCHEMA_VERSION);
  CU_ASSERT_EQUAL(sql_value("SELECT count(*) FROM message_states"), 9);
}

struct init_arg {
  char url[512];
  int rc, applied;
  char err[DB_ERR_LEN];
};

static void *init_thread(void *arg)
{
  struct init_arg *a = arg;
  a->rc = db_init_schema(a->url, 20000, &a->applied, a->err, sizeof a->err);
  return NULL;
}

static void test_init_concurrent(void)
{
  struct init_arg a[3];
  pthread_t t[3];
  char url[512];
  url_for(url, sizeof url, "emg_conc");
  CU_ASSERT_EQUAL_FATAL(sql_run(pg_url, "CREATE DATABASE emg_conc"), 0);
  for (int i = 0; i < 3; i++) {
    snprintf(a[i].url, sizeof a[i].url, "%s", url);
    pthread_create(&t[i], NULL, init_thread, &a[i]);
  }
  int total = 0;
  for (int i = 0; i < 3; i++) {
    pthread_join(t[i], NULL);
    CU_ASSERT_EQUAL(a[i].rc, 0);
    if (a[i].rc)
      fprintf(stderr, "init: %s\n", a[i].err);
    total += a[i].applied;
  }
  CU_ASSERT_EQUAL(total, DB_SCHEMA_VERSION);
}

/* A database whose schema lacks migrations that only add indexes still
 * serves a node; one older than it needs does not; --init-db brings either
 * up to date. */
static void test_schema_older(void)
{
  char url[512], err[DB_ERR_LEN] = "", sql[160];
  int applied = -1;
  uint64_t first;
  url_for(url, sizeof url, "emg_old");
  CU_ASSERT_EQUAL_FATAL(sql_run(pg_url, "CREATE DATABASE emg_old"), 0);
  CU_ASSERT_EQUAL_FATAL(db_init_schema(url, 10000, &applied, err, sizeof err), 0);
  snprintf(sql, sizeof sql, "DELETE FROM schema_migrations WHERE version > %d", DB_SCHEMA_NEEDED);
  CU_ASSERT_EQUAL(sql_run(url, sql), 0);
  CU_ASSERT_EQUAL(sql_run(url, "DROP INDEX message_log_dst"), 0);
  struct db *db = db_open(url, 2000, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(db);
  CU_ASSERT_EQUAL(db_id_block(db, 10, 1, &first, err, sizeof err), 0);
  struct db_message rows[4];
  CU_ASSERT_EQUAL(db_message_search(db, DB_MESSAGE_BY_RECIPIENT, "+4917000", NULL, rows, 4, err, sizeof err), 0);
  db_close(db);
  CU_ASSERT_EQUAL(db_init_schema(url, 10000, &applied, err, sizeof err), 0);
  CU_ASSERT_EQUAL(applied, DB_SCHEMA_VERSION - DB_SCHEMA_NEEDED);
  snprintf(sql, sizeof sql, "DELETE FROM schema_migrations WHERE version >= %d", DB_SCHEMA_NEEDED);
  CU_ASSERT_EQUAL(sql_run(url, sql), 0);
  db = db_open(url, 2000, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(db);
  CU_ASSERT_EQUAL(db_id_block(db, 10, 1, &first, err, sizeof err), DB_E_SCHEMA);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "--init-db"));
  db_close(db);
}

/* ---- the message log ---- */

static struct db *db1, *db2;

/* What on_change said. */
static atomic_int link_ups, link_downs;

static void link_changed(void *ctx, bool connected, const char *error)
{
  (void)ctx;
  if (connected)
    atomic_fetch_add(&link_ups, 1);
  else if (error && *error)
    atomic_fetch_add(&link_downs, 1);
}

static struct db_log *log_open(const char *url, const char *dir_name, unsigned writers, unsigned batch,
                               size_t memory)
{
  char dir[1024], err[DB_ERR_LEN];
  spill_dir(dir, sizeof dir, dir_name);
  struct db_log_limits lim = { .writers = writers, .batch_events = batch, .memory_bytes = memory,
                               .flush_ms = 20, .timeout_ms = 3000, .retry_min_ms = 50, .retry_max_ms = 400,
                               .on_change = link_changed };
  struct db_log *log = db_log_open(url, dir, &lim, err, sizeof err);
  if (!log)
    fprintf(stderr, "db_log_open: %s\n", err);
  return log;
}

/* When the histories start (Unix ms): fixed, so that logging them again
 * logs the very same events. */
#define HISTORY_T0 INT64_C(1764480000000)

/* Logs 4 kinds of message histories for ids [first, first + n), in orders
 * the writer must merge whatever they are. */
static void log_histories(struct db_log *log, uint64_t first, unsigned n)
{
  struct db_log_event ev;
  int64_t t = HISTORY_T0;
  for (unsigned i = 0; i < n; i++) {
    uint64_t id = first + i;
    int64_t t0 = t + i;
    char smsc[32], smsc2[32];
    snprintf(smsc, sizeof smsc, "s%" PRIu64, id);
    snprintf(smsc2, sizeof smsc2, "r%" PRIu64, id);
    switch (i % 4) {
    case 0:                      /* in order, the accepted event twice */
      ev_accepted(&ev, id, t0);
      db_log_event(log, &ev);
      db_log_event(log, &ev);
      ev_sent(&ev, id, t0 + 10, 1, smsc);
      db_log_event(log, &ev);
      ev_state(&ev, DB_LOG_RECEIPT, id, t0 + 2000, MSG_STATE_DELIVERED, 0);
      db_log_event(log, &ev);
      break;
    case 1:                      /* backwards */
      ev_state(&ev, DB_LOG_RECEIPT, id, t0 + 2000, MSG_STATE_DELIVERED, 0);
      db_log_event(log, &ev);
      ev_sent(&ev, id, t0 + 10, 1, smsc);
      db_log_event(log, &ev);
      ev_accepted(&ev, id, t0);
      db_log_event(log, &ev);
      break;
    case 2:                      /* refused by the SMSC */
      ev_accepted(&ev, id, t0);
      db_log_event(log, &ev);
      ev_state(&ev, DB_LOG_FAILED, id, t0 + 5, MSG_STATE_REJECTED, 0x45);
      db_log_event(log, &ev);
      break;
    default:                     /* retried elsewhere; an intermediate receipt after the final one */
      ev_accepted(&ev, id, t0);
      db_log_event(log, &ev);
      ev_sent(&ev, id, t0 + 10, 2, smsc2);
      db_log_event(log, &ev);
      ev_sent(&ev, id, t0 + 5, 1, smsc);
      db_log_event(log, &ev);
      ev_state(&ev, DB_LOG_RECEIPT, id, t0 + 3000, MSG_STATE_UNDELIVERABLE, 12);
      db_log_event(log, &ev);
      ev_state(&ev, DB_LOG_RECEIPT, id, t0 + 4000, MSG_STATE_ENROUTE, 0);
      db_log_event(log, &ev);
      break;
    }
  }
}

static void check_histories(uint64_t first, unsigned n)
{
  char err[DB_ERR_LEN];
  unsigned bad = 0;
  for (unsigned i = 0; i < n; i++) {
    struct db_message m;
    uint64_t id = first + i;
    char smsc[32];
    if (db_message_get(db1, id, &m, err, sizeof err) != 1) {
      bad++;
      continue;
    }
    bool ok = m.id == id && m.node_id == (unsigned)(id >> 48) && strcmp(m.origin_user, "load") == 0 &&
              strcmp(m.origin_connector, "ucp-in") == 0 && strcmp(m.src.addr, "4912345") == 0 &&
              m.dlr_mask == 3 && m.received_ms > 0;
    switch (i % 4) {
    case 0:
    case 1:
      snprintf(smsc, sizeof smsc, "s%" PRIu64, id);
      ok = ok && m.state == MSG_STATE_DELIVERED && m.has_receipt && m.receipt_state == MSG_STATE_DELIVERED &&
           strcmp(m.smsc_id, smsc) == 0 && m.attempts == 1 && m.final_ms == m.received_ms + 2000 &&
           m.sent_ms == m.received_ms + 10 && strcmp(m.target_connector, "smpp-out") == 0;
      break;
    case 2:
      ok = ok && m.state == MSG_STATE_REJECTED && m.error_code == 0x45 && !m.has_receipt && m.smsc_id[0] == 0 &&
           strcmp(m.target_connector, "smpp-out") == 0 && m.attempts == 0;
      break;
    default:
      snprintf(smsc, sizeof smsc, "r%" PRIu64, id);
      ok = ok && m.state == MSG_STATE_UNDELIVERABLE && m.error_code == 12 && m.attempts == 2 &&
           strcmp(m.smsc_id, smsc) == 0 && strcmp(m.target_connector, "smpp-backup") == 0 &&
           m.receipt_state == MSG_STATE_UNDELIVERABLE && m.final_ms == m.received_ms + 3000;
      break;
    }
    if (!ok && bad++ < 3)
      fprintf(stderr,
              "message %" PRIu64 " (case %u): state %u err %d smsc %s target %s attempts %u received %" PRId64
              " sent +%" PRId64 " final +%" PRId64 " receipt %u user %s\n",
              id, i % 4, m.state, m.error_code, m.smsc_id, m.target_connector, m.attempts, m.received_ms,
              m.sent_ms - m.received_ms, m.final_ms - m.received_ms, m.receipt_state, m.origin_user);
  }
  CU_ASSERT_EQUAL(bad, 0);
}

static void test_log_merge(void)
{
  char err[DB_ERR_LEN];
  db1 = db_open(pg_url, 3000, err, sizeof err);
  db2 = db_open(pg_url, 3000, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(db1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(db2);

  /* Tiny batches: one message's events land in different transactions. */
  struct db_log *log = log_open(pg_url, "merge-small", 1, 7, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(log);
  log_histories(log, node_msg(1, 1), 1000);
  CU_ASSERT_EQUAL(db_log_sync(log, 30000), 0);
  struct db_log_stats st;
  db_log_stats(log, &st);
  CU_ASSERT_TRUE(st.connected);
  CU_ASSERT_EQUAL(st.events_pending, 0);
  CU_ASSERT_EQUAL(st.events_written, st.events_logged);
  CU_ASSERT_TRUE(st.batches >= st.events_written / 7);
  db_log_close(log, 5000);
  check_histories(node_msg(1, 1), 1000);

  /* One big batch: the fold merges them before the database sees them. */
  log = log_open(pg_url, "merge-big", 0, 0, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(log);
  log_histories(log, node_msg(2, 1), 1000);
  CU_ASSERT_EQUAL(db_log_sync(log, 30000), 0);
  db_log_close(log, 5000);
  check_histories(node_msg(2, 1), 1000);

  /* Logging the same events again changes nothing. */
  log = log_open(pg_url, "merge-again", 3, 5, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(log);
  log_histories(log, node_msg(2, 1), 1000);
  CU_ASSERT_EQUAL(db_log_sync(log, 30000), 0);
  db_log_close(log, 5000);
  check_histories(node_msg(2, 1), 1000);
  /* Found by the SMSC's id, on its connector only. */
  struct db_message m, rows[3];
  /* sent twice: its SMSC id the second one's */
  CU_ASSERT_EQUAL_FATAL(db_message_get(db1, node_msg(2, 8), &m, err, sizeof err), 1);
  CU_ASSERT_EQUAL(db_message_search(db1, DB_MESSAGE_BY_SMSC_ID, m.smsc_id, m.target_connector, rows, 3, err,
                                    sizeof err), 1);
  CU_ASSERT_EQUAL(rows[0].id, node_msg(2, 8));
  CU_ASSERT_EQUAL(db_message_search(db1, DB_MESSAGE_BY_SMSC_ID, m.smsc_id, "other", rows, 3, err, sizeof err), 0);
  CU_ASSERT_EQUAL(sql_value("SELECT count(*) FROM message_log"), 2000);
  CU_ASSERT_EQUAL(sql_value("SELECT count(*) FROM message_log_named WHERE state_name = 'DELIVERED'"), 1000);
}

/* Text from the network: tabs, backslashes, newlines and bytes that are
 * not UTF-8 must neither break COPY nor poison the batch. */
static void test_log_text(void)
{
  struct db_log *log = log_open(pg_url, "text", 0, 0, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(log);
  struct db_log_event ev;
  uint64_t id = node_msg(3, 1);
  ev_accepted(&ev, id, 0);
  ev.origin_user = "a\tb\\c\nd\re";
  snprintf(ev.src.addr, sizeof ev.src.addr, "Caf\xc3\xa9\xff\xed\xa0\x80!");
  ev.origin_ref = "\xf0\x9f\x93\xb1";
  CU_ASSERT_EQUAL(db_log_event(log, &ev), 0);
  ev.kind = DB_LOG_RECEIPT;
  CU_ASSERT_EQUAL(db_log_event(log, &ev), DB_E_ARG); /* a receipt needs a state */
  ev.kind = 9;
  CU_ASSERT_EQUAL(db_log_event(log, &ev), DB_E_ARG);
  CU_ASSERT_EQUAL(db_log_sync(log, 10000), 0);
  db_log_close(log, 5000);
  struct db_message m;
  char err[DB_ERR_LEN];
  CU_ASSERT_EQUAL_FATAL(db_message_get(db1, id, &m, err, sizeof err), 1);
  CU_ASSERT_STRING_EQUAL(m.origin_user, "a\tb\\c\nd\re");
  CU_ASSERT_STRING_EQUAL(m.src.addr, "Caf\xc3\xa9\?\?\?\?!");
  CU_ASSERT_STRING_EQUAL(m.origin_ref, "\xf0\x9f\x93\xb1");
  CU_ASSERT_EQUAL(m.state, 0);
  CU_ASSERT_EQUAL(db_message_get(db1, node_msg(3, 999), &m, err, sizeof err), 0);
  /* Its recipient's messages, newest first, by the address as it is kept. */
  struct db_message rows[4];
  char count[160];
  snprintf(count, sizeof count, "SELECT least(count(*), 4) FROM message_log WHERE dst_addr = '%s'", m.dst.addr);
  long long same = sql_value(count);   /* other tests' messages may share it: ids of other nodes, older */
  CU_ASSERT_TRUE(same >= 1);
  CU_ASSERT_EQUAL(db_message_search(db1, DB_MESSAGE_BY_RECIPIENT, m.dst.addr, NULL, rows, 4, err, sizeof err), same);
  CU_ASSERT_EQUAL(rows[0].id, id);
  /* bounded */
  CU_ASSERT_EQUAL(db_message_search(db1, DB_MESSAGE_BY_RECIPIENT, m.dst.addr, NULL, rows, 1, err, sizeof err), 1);
  CU_ASSERT_EQUAL(db_message_search(db1, DB_MESSAGE_BY_RECIPIENT, "+1", NULL, rows, 4, err, sizeof err), 0);
}

/* A database that was never there: events go to the spill file; the next
 * open (with the database there) writes them; a torn tail is cut. */
static void test_log_spill_restart(void)
{
  char dir[1024], path[1100];
  spill_dir(dir, sizeof dir, "restart");
  snprintf(path, sizeof path, "%s/dblog-0.spill", dir);
  struct db_log *log = log_open("postgresql://emg@127.0.0.1:1/emg?connect_timeout=1", "restart", 1, 0, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(log);
  log_histories(log, node_msg(4, 1), 500);
  CU_ASSERT_EQUAL(db_log_sync(log, 300), DB_E_TIMEOUT);
  struct db_log_stats st;
  db_log_stats(log, &st);
  CU_ASSERT_FALSE(st.connected);
  CU_ASSERT_TRUE(st.last_error[0] != '\0');
  CU_ASSERT_EQUAL(st.events_pending, st.events_logged);
  db_log_close(log, 500);
  struct stat sb;
  CU_ASSERT_EQUAL_FATAL(stat(path, &sb), 0);
  CU_ASSERT_TRUE(sb.st_size > 0);

  /* A crash in the middle of an append. */
  int fd = open(path, O_WRONLY | O_APPEND);
  CU_ASSERT_TRUE_FATAL(fd >= 0);
  const uint8_t torn[20] = { 0x45, 0x44, 0x42, 0x4c, 1, 2, 3, 4, 200, 0, 0, 0, 1 };
  CU_ASSERT_EQUAL(write(fd, torn, sizeof torn), (ssize_t)sizeof torn);
  close(fd);

  log = log_open(pg_url, "restart", 1, 0, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(log);
  db_log_stats(log, &st);
  CU_ASSERT_EQUAL(st.events_logged, 500 / 4 * 14);
  CU_ASSERT_EQUAL(db_log_sync(log, 30000), 0);
  db_log_stats(log, &st);
  CU_ASSERT_EQUAL(st.events_written, st.events_logged);
  CU_ASSERT_EQUAL(st.spill_bytes, 0);
  db_log_close(log, 5000);
  check_histories(node_msg(4, 1), 500);
  CU_ASSERT_NOT_EQUAL(stat(path, &sb), 0); /* an empty spill file is removed */

  /* A run with three writers leaves three files; one with two takes the
   * third over. */
  log = log_open("postgresql://emg@127.0.0.1:1/emg?connect_timeout=1", "restart", 3, 0, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(log);
  log_histories(log, node_msg(4, 1001), 400);
  db_log_close(log, 500);
  snprintf(path, sizeof path, "%s/dblog-2.spill", dir);
  CU_ASSERT_EQUAL(stat(path, &sb), 0);
  log = log_open(pg_url, "restart", 2, 0, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(log);
  CU_ASSERT_NOT_EQUAL(stat(path, &sb), 0);
  db_log_stats(log, &st);
  CU_ASSERT_EQUAL(st.events_logged, 400 / 4 * 14);
  CU_ASSERT_EQUAL(db_log_sync(log, 30000), 0);
  db_log_close(log, 5000);
  check_histories(node_msg(4, 1001), 400);
}

/* The database stopped under load and started again. */
struct producer {
  struct db_log *log;
  uint64_t first;
  unsigned count, per_second;
  uint64_t max_call_ns;
  unsigned failures;
};

static void *produce(void *arg)
{
  struct producer *p = arg;
  uint64_t start = clock_now_ns();
  for (unsigned i = 0; i < p->count; i++) {
    uint64_t id = p->first + i;
    char smsc[32];
    snprintf(smsc, sizeof smsc, "%" PRIx64, id);
    struct db_log_event ev[3];
    ev_accepted(&ev[0], id, 0);
    ev_sent(&ev[1], id, 0, 1, smsc);
    ev_state(&ev[2], DB_LOG_RECEIPT, id, 0, MSG_STATE_DELIVERED, 0);
    for (int k = 0; k < 3; k++) {
      uint64_t t0 = clock_now_ns();
      if (db_log_event(p->log, &ev[k]) != 0)
        p->failures++;
      uint64_t took = clock_now_ns() - t0;
      if (took > p->max_call_ns)
        p->max_call_ns = took;
    }
    /* Keep the pace: i messages by now. */
    uint64_t due = start + (uint64_t)i * 1000000000u / p->per_second;
    uint64_t now = clock_now_ns();
    if (due > now)
      usleep((useconds_t)((due - now) / 1000));
  }
  return NULL;
}

static void test_log_outage(void)
{
  enum { THREADS = 2, PER_THREAD = 16000, RATE = 2000 };       /* 8 s of traffic */
  const size_t memory = 256u << 10;
  atomic_store(&link_ups, 0);
  atomic_store(&link_downs, 0);
  struct db_log *log = log_open(pg_url, "outage", 2, 2000, memory);
  CU_ASSERT_PTR_NOT_NULL_FATAL(log);
  struct producer prod[THREADS];
  pthread_t tid[THREADS];
  for (int t = 0; t < THREADS; t++) {
    prod[t] = (struct producer){ .log = log, .first = node_msg(5, (uint64_t)t * PER_THREAD + 1),
                                 .count = PER_THREAD, .per_second = RATE };
    pthread_create(&tid[t], NULL, produce, &prod[t]);
  }
  /* 1.5 s of normal traffic, then 3 s without the database. */
  size_t max_memory = 0;
  double max_lag = 0;
  bool seen_down = false;
  uint64_t spilled_during = 0, written_before = 0;
  struct db_log_stats st;
  usleep(1500000);
  db_log_stats(log, &st);
  written_before = st.events_written;
  CU_ASSERT_EQUAL_FATAL(system(pg_stop), 0);
  uint64_t down_until = clock_now_ms() + 3000;
  while (clock_now_ms() < down_until) {
    db_log_stats(log, &st);
    if (st.memory_bytes > max_memory)
      max_memory = st.memory_bytes;
    if (st.lag_s > max_lag)
      max_lag = st.lag_s;
    seen_down |= !st.connected;
    usleep(20000);
  }
  db_log_stats(log, &st);
  spilled_during = st.events_spilled;
  CU_ASSERT_EQUAL_FATAL(system(pg_start), 0);
  for (int t = 0; t < THREADS; t++)
    pthread_join(tid[t], NULL);
  CU_ASSERT_EQUAL(db_log_sync(log, 60000), 0);
  db_log_stats(log, &st);
  db_log_close(log, 5000);

  printf("\n  outage: written before %" PRIu64 ", spilled %" PRIu64 " while down, max memory %zu bytes,"
         " max lag %.1f s, slowest db_log_event %.2f ms\n",
         written_before, spilled_during, max_memory, max_lag,
         (double)(prod[0].max_call_ns > prod[1].max_call_ns ? prod[0].max_call_ns : prod[1].max_call_ns) / 1e6);
  CU_ASSERT_TRUE(written_before > 0);
  CU_ASSERT_TRUE(seen_down);
  CU_ASSERT_TRUE(atomic_load(&link_ups) >= 2);    /* at start, after the restart */
  CU_ASSERT_TRUE(atomic_load(&link_downs) >= 1);
  CU_ASSERT_EQUAL(atomic_load(&link_ups), atomic_load(&link_downs) + 1);
  CU_ASSERT_TRUE(spilled_during > 0);
  CU_ASSERT_TRUE(max_memory <= 2 * memory);
  CU_ASSERT_TRUE(max_lag >= 2.0);
  for (int t = 0; t < THREADS; t++) {
    CU_ASSERT_EQUAL(prod[t].failures, 0);
    CU_ASSERT_TRUE(prod[t].max_call_ns < 1000000000u);  /* traffic never waited for the database */
  }
  CU_ASSERT_EQUAL(st.events_logged, (uint64_t)THREADS * PER_THREAD * 3);
  CU_ASSERT_EQUAL(st.events_written, st.events_logged);
  CU_ASSERT_EQUAL(st.events_lost + st.events_dropped, 0);
  CU_ASSERT_EQUAL(st.events_pending, 0);
  CU_ASSERT_EQUAL(st.spill_bytes, 0);
  CU_ASSERT_EQUAL(sql_value("SELECT count(*) FROM message_log WHERE node_id = 5"), THREADS * PER_THREAD);
  CU_ASSERT_EQUAL(sql_value("SELECT count(*) FROM message_log WHERE node_id = 5 AND state = 2"
                            " AND receipt_state = 2 AND smsc_id = to_hex(id) AND received_at IS NOT NULL"),
                  THREADS * PER_THREAD);
}

/* ---- ids ---- */

struct id_taker {
  struct db *db;
  uint64_t first[300], count[300];
  int failures;
};

static void *take_ids(void *arg)
{
  struct id_taker *t = arg;
  char err[DB_ERR_LEN];
  unsigned seed = (unsigned)(uintptr_t)t;
  for (int i = 0; i < 300; i++) {
    t->count[i] = 1 + (uint64_t)(rand_r(&seed) % 1000);
    if (db_id_block(t->db, t->count[i], 1, &t->first[i], err, sizeof err) != 0) {
      t->failures++;
      fprintf(stderr, "db_id_block: %s\n", err);
    }
  }
  return NULL;
}

struct range {
  uint64_t first, end;
};

static int range_cmp(const void *a, const void *b)
{
  const struct range *x = a, *y = b;
  return (x->first > y->first) - (x->first < y->first);
}

static void test_ids(void)
{
  static struct id_taker takers[2];
  pthread_t tid[2];
  takers[0].db = db1;
  takers[1].db = db2;
  for (int i = 0; i < 2; i++)
    pthread_create(&tid[i], NULL, take_ids, &takers[i]);
  for (int i = 0; i < 2; i++)
    pthread_join(tid[i], NULL);
  CU_ASSERT_EQUAL(takers[0].failures + takers[1].failures, 0);
  static struct range r[600];
  for (int i = 0; i < 600; i++) {
    const struct id_taker *t = &takers[i / 300];
    r[i].first = t->first[i % 300];
    r[i].end = r[i].first + t->count[i % 300];
  }
  qsort(r, 600, sizeof r[0], range_cmp);
  int overlaps = 0;
  for (int i = 1; i < 600; i++)
    overlaps += r[i].first < r[i - 1].end;
  CU_ASSERT_EQUAL(overlaps, 0);
  CU_ASSERT_TRUE(r[0].first >= 1);

  /* A node that handed out ids while the database was away asks for a
   * block above them; everyone's next block is above that too. */
  char err[DB_ERR_LEN];
  uint64_t above = r[599].end + 1000000, first = 0, next = 0;
  CU_ASSERT_EQUAL(db_id_block(db1, 100, above, &first, err, sizeof err), 0);
  CU_ASSERT_EQUAL(first, above);
  CU_ASSERT_EQUAL(db_id_block(db2, 5, 1, &next, err, sizeof err), 0);
  CU_ASSERT_EQUAL(next, above + 100);
  CU_ASSERT_EQUAL(db_id_block(db1, 0, 1, &first, err, sizeof err), DB_E_ARG);
}

/* ---- nodes and cross-node receipts ---- */

struct taken {
  int calls, accept_after;
  struct db_handoff last;
};

static int take(void *ctx, const struct db_handoff *h)
{
  struct taken *t = ctx;
  if (t->calls++ >= t->accept_after && t->accept_after >= 0) {
    t->last = *h;
    return 0;
  }
  return -1;
}

static int settle_fails(void *ctx)
{
  (void)ctx;
  return -1;
}

static void test_receipts(void)
{
  char err[DB_ERR_LEN];
  CU_ASSERT_EQUAL(db_node_register(db1, 1, "node-a", err, sizeof err), 0);
  CU_ASSERT_EQUAL(db_node_register(db2, 2, "node-b", err, sizeof err), 0);
  CU_ASSERT_EQUAL(db_node_heartbeat(db2, 2, "node-b", err, sizeof err), 0);
  struct db_node nodes[4];
  CU_ASSERT_EQUAL(db_node_list(db1, nodes, 4, err, sizeof err), 2);
  CU_ASSERT_EQUAL(nodes[0].node_id, 1);
  CU_ASSERT_STRING_EQUAL(nodes[1].name, "node-b");
  CU_ASSERT_TRUE(nodes[1].seen_ago_s < 5);

  /* Node 1 sent a message; its receipt reaches node 2. */
  struct db_log *log = log_open(pg_url, "receipts", 0, 0, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(log);
  struct db_log_event ev;
  uint64_t id = node_msg(1, 777777);
  ev_accepted(&ev, id, 0);
  ev.origin_ref = "ref-777";
  db_log_event(log, &ev);
  ev_sent(&ev, id, 0, 1, "abc123");
  db_log_event(log, &ev);
  CU_ASSERT_EQUAL(db_log_sync(log, 10000), 0);

  struct db_message m;
  CU_ASSERT_EQUAL_FATAL(db_receipt_lookup(db2, "smpp-out", "abc123", &m, err, sizeof err), 1);
  CU_ASSERT_EQUAL(m.id, id);
  CU_ASSERT_EQUAL(m.node_id, 1);
  CU_ASSERT_STRING_EQUAL(m.origin_connector, "ucp-in");
  CU_ASSERT_STRING_EQUAL(m.origin_user, "load");
  CU_ASSERT_STRING_EQUAL(m.origin_ref, "ref-777");
  CU_ASSERT_EQUAL(m.dlr_mask, 3);
  CU_ASSERT_EQUAL(db_receipt_lookup(db2, "smpp-out", "nope", &m, err, sizeof err), 0);
  CU_ASSERT_EQUAL(db_receipt_lookup(db2, "other", "abc123", &m, err, sizeof err), 0);

  /* Node 2 logs the receipt and hands it to node 1. */
  ev_state(&ev, DB_LOG_RECEIPT, id, 0, MSG_STATE_DELIVERED, 0);
  db_log_event(log, &ev);
  struct db_handoff h = { .msg_id = id };
  snprintf(h.origin_connector, sizeof h.origin_connector, "%s", m.origin_connector);
  snprintf(h.origin_user, sizeof h.origin_user, "%s", m.origin_user);
  snprintf(h.target_connector, sizeof h.target_connector, "smpp-out");
  snprintf(h.smsc_id, sizeof h.smsc_id, "abc123");
  snprintf(h.receipt.id, sizeof h.receipt.id, "%s", m.origin_ref);
  h.receipt.state = MSG_STATE_DELIVERED;
  h.receipt.err = 3;
  h.receipt.submit_time = m.received_ms / 1000;
  h.receipt.done_time = time(NULL);
  h.receipt.src = m.src;
  h.receipt.dst = m.dst;
  h.dlr_mask = m.dlr_mask;
  CU_ASSERT_EQUAL(db_receipt_handoff(db2, 2, 1, &h, err, sizeof err), 0);

  struct taken t = { .accept_after = 0 };
  CU_ASSERT_EQUAL(db_receipt_claim(db2, 2, 10, take, NULL, &t, err, sizeof err), 0);  /* not node 2's */
  CU_ASSERT_EQUAL(t.calls, 0);
  t = (struct taken){ .accept_after = -1 };                          /* node 1 busy: stays */
  CU_ASSERT_EQUAL(db_receipt_claim(db1, 1, 10, take, NULL, &t, err, sizeof err), 0);
  CU_ASSERT_EQUAL(t.calls, 1);
  t = (struct taken){ .accept_after = 0 };                           /* taken, not made durable: stays */
  CU_ASSERT_EQUAL(db_receipt_claim(db1, 1, 10, take, settle_fails, &t, err, sizeof err), DB_E_IO);
  CU_ASSERT_EQUAL(t.calls, 1);
  t = (struct taken){ .accept_after = 0 };
  CU_ASSERT_EQUAL(db_receipt_claim(db1, 1, 10, take, NULL, &t, err, sizeof err), 1);
  CU_ASSERT_EQUAL(t.last.msg_id, id);
  CU_ASSERT_EQUAL(t.last.from_node, 2);
  CU_ASSERT_STRING_EQUAL(t.last.origin_user, "load");
  CU_ASSERT_STRING_EQUAL(t.last.smsc_id, "abc123");
  CU_ASSERT_STRING_EQUAL(t.last.receipt.id, "ref-777");
  CU_ASSERT_EQUAL(t.last.receipt.state, MSG_STATE_DELIVERED);
  CU_ASSERT_EQUAL(t.last.receipt.err, 3);
  CU_ASSERT_STRING_EQUAL(t.last.receipt.dst.addr, m.dst.addr);
  CU_ASSERT_EQUAL(t.last.receipt.done_time, h.receipt.done_time);
  CU_ASSERT_EQUAL(t.last.dlr_mask, 3);
  t = (struct taken){ .accept_after = 0 };
  CU_ASSERT_EQUAL(db_receipt_claim(db1, 1, 10, take, NULL, &t, err, sizeof err), 0);  /* taken once only */

  CU_ASSERT_EQUAL(db_log_sync(log, 10000), 0);
  db_log_close(log, 5000);
  CU_ASSERT_EQUAL(db_message_get(db1, id, &m, err, sizeof err), 1);
  CU_ASSERT_EQUAL(m.state, MSG_STATE_DELIVERED);
}

/* ---- a database that is away, or mute ---- */

static void test_down_fast(void)
{
  char err[DB_ERR_LEN];
  uint64_t first;
  struct db *db = db_open("postgresql://emg@127.0.0.1:1/emg", 1000, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(db);
  CU_ASSERT_EQUAL(db_id_block(db, 1, 1, &first, err, sizeof err), DB_E_DOWN);
  uint64_t t0 = clock_now_ms();
  CU_ASSERT_EQUAL(db_id_block(db, 1, 1, &first, err, sizeof err), DB_E_DOWN);  /* backing off: at once */
  CU_ASSERT_TRUE(clock_now_ms() - t0 < 50);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "next attempt"));
  db_close(db);

  /* A server that accepts the connection and never answers. */
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  socklen_t len = sizeof a;
  CU_ASSERT_EQUAL_FATAL(bind(s, (struct sockaddr *)&a, sizeof a), 0);
  CU_ASSERT_EQUAL_FATAL(listen(s, 4), 0);
  getsockname(s, (struct sockaddr *)&a, &len);
  char url[128];
  snprintf(url, sizeof url, "postgresql://emg@127.0.0.1:%u/emg?sslmode=disable", ntohs(a.sin_port));
  db = db_open(url, 500, err, sizeof err);
  t0 = clock_now_ms();
  CU_ASSERT_EQUAL(db_id_block(db, 1, 1, &first, err, sizeof err), DB_E_TIMEOUT);
  uint64_t took = clock_now_ms() - t0;
  CU_ASSERT_TRUE(took >= 400 && took < 2000);
  db_close(db);

  /* The log writer stuck on it: logging goes on, closing takes its
   * time-out and not the statement's, and the events are on disk. */
  char dir[1024], err2[DB_ERR_LEN], path[1100];
  spill_dir(dir, sizeof dir, "mute");
  snprintf(path, sizeof path, "%s/dblog-0.spill", dir);
  struct db_log_limits lim = { .writers = 1, .timeout_ms = 30000 };
  struct db_log *log = db_log_open(url, dir, &lim, err2, sizeof err2);
  CU_ASSERT_PTR_NOT_NULL_FATAL(log);
  struct db_log_event ev;
  for (unsigned i = 0; i < 2000; i++) {
    ev_accepted(&ev, node_msg(6, i + 1), 0);
    CU_ASSERT_EQUAL(db_log_event(log, &ev), 0);
  }
  t0 = clock_now_ms();
  db_log_close(log, 300);
  took = clock_now_ms() - t0;
  CU_ASSERT_TRUE(took < 1500);
  struct stat sb;
  CU_ASSERT_TRUE(stat(path, &sb) == 0 && sb.st_size > 2000 * 40);
  close(s);

  /* The next run with the database there writes them. */
  log = log_open(pg_url, "mute", 0, 0, 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(log);
  CU_ASSERT_EQUAL(db_log_sync(log, 10000), 0);
  db_log_close(log, 5000);
  CU_ASSERT_EQUAL(sql_value("SELECT count(*) FROM message_log WHERE node_id = 6"), 2000);
}

static void test_cleanup(void)
{
  db_close(db1);
  db_close(db2);
  db1 = db2 = NULL;
}

static const struct {
  const char *name;
  void (*fn)(void);
} tests[] = {
  { "schema_missing", test_schema_missing },
  { "init_twice", test_init_twice },
  { "init_concurrent", test_init_concurrent },
  { "schema_older", test_schema_older },
  { "log_merge", test_log_merge },
  { "log_text", test_log_text },
  { "log_spill_restart", test_log_spill_restart },
  { "ids", test_ids },
  { "receipts", test_receipts },
  { "log_outage", test_log_outage },
  { "down_fast", test_down_fast },
  { "cleanup", test_cleanup },
};

int main(int argc, char **argv)
{
  pg_url = getenv("EMG_TEST_PGURL");
  pg_stop = getenv("EMG_TEST_PG_STOP");
  pg_start = getenv("EMG_TEST_PG_START");
  tmp_dir = getenv("EMG_TEST_TMP");
  if (!pg_url || !*pg_url) {
    printf("db_test: skipped: EMG_TEST_PGURL is not set (tests/integration/db.sh sets it)\n");
    return 77;
  }
  if (!pg_stop || !pg_start || !tmp_dir) {
    fprintf(stderr, "db_test: EMG_TEST_PG_STOP, EMG_TEST_PG_START and EMG_TEST_TMP must be set too\n");
    return 2;
  }
  if (CU_initialize_registry() != CUE_SUCCESS)
    return 2;
  CU_pSuite suite = CU_add_suite("db", NULL, NULL);
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
    bool wanted = argc < 2 || strcmp(tests[i].name, "cleanup") == 0;
    for (int a = 1; a < argc; a++)
      wanted |= strcmp(argv[a], tests[i].name) == 0;
    if (wanted)
      CU_add_test(suite, tests[i].name, tests[i].fn);
  }
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failed = CU_get_number_of_failures() + CU_get_number_of_suites_failed();
  unsigned ran = CU_get_number_of_tests_run();
  CU_cleanup_registry();
  return failed || ran == 0 ? 1 : 0;
}
