/* db.c - emgd's PostgreSQL connections and what the other db_*.c files
 * share: connecting, statements, COPY, the back-off while the database is
 * away, the synchronous handle (struct db), the error texts. The rest of
 * db.h: db_schema.c (migrations), db_log.c, db_spill.c and db_rec.c (the
 * message log), db_nodes.c (ids, nodes), db_receipts.c (message rows,
 * receipts between nodes).
 *
 * Connections are non-blocking libpq driven by poll() with a deadline, so no
 * call waits longer than its time-out whatever the server or the network
 * does: a server that stops answering mid-statement costs one time-out and
 * the connection, not a thread stuck until TCP gives up.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libpq-fe.h>
#include "bytebuf.h"
#include "clock.h"
#include "db_internal.h"
#include "strutil.h"

const char *db_strerror(int code)
{
  switch (code) {
  case DB_OK: return "ok";
  case DB_E_DOWN: return "database down";
  case DB_E_TIMEOUT: return "database time-out";
  case DB_E_SQL: return "statement refused";
  case DB_E_SCHEMA: return "database schema missing or old";
  case DB_E_IO: return "spill file error";
  case DB_E_NOMEM: return "out of memory";
  case DB_E_ARG: return "bad argument";
  default: return "unknown database error";
  }
}

/* ---- small utilities ---- */

/* Formats a message into err (err_len bytes), on one line: libpq's messages
 * end in, and may contain, line breaks. */
void db_err_set(char *err, size_t err_len, const char *fmt, ...)
{
  if (!err || !err_len)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, err_len, fmt, ap);
  va_end(ap);
  size_t n = strlen(err);
  while (n && (err[n - 1] == '\n' || err[n - 1] == ' '))
    err[--n] = '\0';
  for (char *p = err; *p; p++)
    if (*p == '\n' || *p == '\t')
      *p = ' ';
}

/* Room for more bytes in one of the message log's buffers (4 KiB at first). */
int db_buf_reserve(struct bytebuf *b, size_t more)
{
  return bytebuf_reserve(b, more, 4096);
}

/* ---- connections ---- */

int db_conn_init(struct conn *c, const char *conninfo, unsigned timeout_ms, unsigned statement_ms,
                 bool check_schema, unsigned backoff_min_ms, unsigned backoff_max_ms, char *err, size_t err_len)
{
  memset(c, 0, sizeof *c);
  atomic_init(&c->cap_ms, 0);
  char *why = NULL;
  PQconninfoOption *opts = PQconninfoParse(conninfo ? conninfo : "", &why);
  if (!opts) {
    db_err_set(err, err_len, "bad conninfo: %s", why ? why : "out of memory");
    PQfreemem(why);
    return why ? DB_E_ARG : DB_E_NOMEM;
  }
  PQconninfoFree(opts);
  c->conninfo = strdup(conninfo);
  if (!c->conninfo) {
    db_err_set(err, err_len, "out of memory");
    return DB_E_NOMEM;
  }
  c->timeout_ms = timeout_ms;
  c->statement_ms = statement_ms;
  c->check_schema = check_schema;
  c->backoff_min_ms = backoff_min_ms;
  c->backoff_max_ms = backoff_max_ms < backoff_min_ms ? backoff_min_ms : backoff_max_ms;
  c->backoff_ms = c->backoff_min_ms;
  return 0;
}

void db_conn_drop(struct conn *c)
{
  if (c->pg)
    PQfinish(c->pg);
  c->pg = NULL;
}

void db_conn_free(struct conn *c)
{
  db_conn_drop(c);
  free(c->conninfo);
  c->conninfo = NULL;
}

/* The deadline of one statement: the server's statement_timeout fires
 * first, so a slow statement ends with an error and the connection stays. */
static uint64_t conn_deadline(const struct conn *c)
{
  return c->statement_ms ? clock_now_ms() + c->statement_ms + 1000 : UINT64_MAX;
}

/* Waits until the socket is readable (or writable, when asked). It looks
 * at the cap every 100 ms, so that a closer is not kept waiting. */
static int conn_wait(struct conn *c, bool want_write, uint64_t deadline, char *err, size_t err_len)
{
  for (;;) {
    uint64_t now = clock_now_ms(), cap = atomic_load(&c->cap_ms);
    if (cap && cap < deadline)
      deadline = cap;
    if (now >= deadline) {
      db_err_set(err, err_len, "no answer from the database in time");
      db_conn_drop(c);
      return DB_E_TIMEOUT;
    }
    struct pollfd p = { .fd = PQsocket(c->pg), .events = POLLIN | (want_write ? POLLOUT : 0) };
    uint64_t left = deadline - now;
    int r = poll(&p, 1, left > 100 ? 100 : (int)left);
    if (r > 0)
      return 0;
    if (r < 0 && errno != EINTR) {
      db_err_set(err, err_len, "poll: %s", strerror(errno));
      db_conn_drop(c);
      return DB_E_DOWN;
    }
  }
}

static int conn_broken(struct conn *c, char *err, size_t err_len)
{
  db_err_set(err, err_len, "database connection lost: %s", c->pg ? PQerrorMessage(c->pg) : "closed");
  db_conn_drop(c);
  return DB_E_DOWN;
}

/* Maps a failed result to a DB_E_* code; drops the connection when it is
 * gone or going (the server shutting down, a crashed backend). */
static int conn_failed(struct conn *c, const PGresult *r, char *err, size_t err_len)
{
  const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
  const char *primary = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
  if (!state)
    state = "";
  str_copy(c->sqlstate, sizeof c->sqlstate, state);
  db_err_set(err, err_len, "%s%s%s", primary ? primary : PQresultErrorMessage(r), *state ? " SQLSTATE " : "", state);
  if (PQstatus(c->pg) != CONNECTION_OK || strncmp(state, "08", 2) == 0 || strncmp(state, "57P", 3) == 0) {
    db_conn_drop(c);
    return DB_E_DOWN;
  }
  if (strcmp(state, "57014") == 0)
    return DB_E_TIMEOUT;
  if (strcmp(state, "42P01") == 0 || strcmp(state, "42883") == 0)
    return DB_E_SCHEMA;
  return DB_E_SQL;
}

/* Flushes what was sent and collects the results of one query string until
 * the connection is idle. The first error wins; *out (may be NULL) gets the
 * last result, or the COPY IN result as soon as the server asks for data. */
static int conn_collect(struct conn *c, uint64_t deadline, PGresult **out, char *err, size_t err_len)
{
  int rc = 0, w;
  PGresult *last = NULL;
  for (;;) {
    int f;
    while ((f = PQflush(c->pg)) == 1) {
      if ((w = conn_wait(c, true, deadline, err, err_len)) < 0) {
        rc = w;
        goto out;
      }
      if (!PQconsumeInput(c->pg)) {
        rc = conn_broken(c, err, err_len);
        goto out;
      }
    }
    if (f < 0) {
      rc = conn_broken(c, err, err_len);
      goto out;
    }
    while (PQisBusy(c->pg)) {
      if ((w = conn_wait(c, false, deadline, err, err_len)) < 0) {
        rc = w;
        goto out;
      }
      if (!PQconsumeInput(c->pg)) {
        rc = conn_broken(c, err, err_len);
        goto out;
      }
    }
    PGresult *r = PQgetResult(c->pg);
    if (!r)
      break;
    ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_COPY_IN) {
      PQclear(last);
      last = r;
      break;
    }
    if (st == PGRES_FATAL_ERROR || st == PGRES_BAD_RESPONSE || st == PGRES_NONFATAL_ERROR) {
      if (rc == 0)
        rc = conn_failed(c, r, err, err_len);
      PQclear(r);
      if (!c->pg)
        goto out;
      continue;
    }
    PQclear(last);
    last = r;
  }
  if (PQstatus(c->pg) != CONNECTION_OK && rc == 0)
    rc = conn_broken(c, err, err_len);
out:
  if (rc < 0 || !out) {
    PQclear(last);
    last = NULL;
  }
  if (out)
    *out = last;
  return rc;
}

/* Runs sql with n text parameters; *out (may be NULL) gets the result. */
int db_conn_exec(struct conn *c, const char *sql, int n, const char *const *values, PGresult **out,
                 char *err, size_t err_len)
{
  if (out)
    *out = NULL;
  if (!PQsendQueryParams(c->pg, sql, n, NULL, values, NULL, NULL, 0))
    return conn_broken(c, err, err_len);
  return conn_collect(c, conn_deadline(c), out, err, err_len);
}

/* Runs a script of several statements without parameters (migrations). */
int db_conn_script(struct conn *c, const char *sql, char *err, size_t err_len)
{
  if (!PQsendQuery(c->pg, sql))
    return conn_broken(c, err, err_len);
  return conn_collect(c, conn_deadline(c), NULL, err, err_len);
}

void db_conn_rollback(struct conn *c)
{
  if (c->pg && PQtransactionStatus(c->pg) != PQTRANS_IDLE && db_conn_exec(c, "ROLLBACK", 0, NULL, NULL, NULL, 0) < 0)
    db_conn_drop(c);
}

/* COPY sql FROM STDIN with data (text format). */
int db_conn_copy(struct conn *c, const char *sql, const uint8_t *data, size_t len, char *err, size_t err_len)
{
  uint64_t deadline = conn_deadline(c);
  PGresult *r = NULL;
  int rc;
  if (!PQsendQuery(c->pg, sql))
    return conn_broken(c, err, err_len);
  if ((rc = conn_collect(c, deadline, &r, err, err_len)) < 0)
    return rc;
  bool copy_in = r && PQresultStatus(r) == PGRES_COPY_IN;
  PQclear(r);
  if (!copy_in) {
    db_err_set(err, err_len, "COPY did not start");
    db_conn_drop(c);
    return DB_E_DOWN;
  }
  while (len) {
    size_t chunk = len < (1u << 20) ? len : (1u << 20);
    int w = PQputCopyData(c->pg, (const char *)data, (int)chunk);
    if (w < 0)
      return conn_broken(c, err, err_len);
    if (w == 0) {
      if ((rc = conn_wait(c, true, deadline, err, err_len)) < 0)
        return rc;
      if (!PQconsumeInput(c->pg))
        return conn_broken(c, err, err_len);
      continue;
    }
    data += chunk;
    len -= chunk;
  }
  int e;
  while ((e = PQputCopyEnd(c->pg, NULL)) == 0)
    if ((rc = conn_wait(c, true, deadline, err, err_len)) < 0)
      return rc;
  if (e < 0)
    return conn_broken(c, err, err_len);
  return conn_collect(c, deadline, NULL, err, err_len);
}

/* Connects within the time-out, sets the session up and checks the schema. */
int db_conn_connect(struct conn *c, char *err, size_t err_len)
{
  char timeout_s[16], statement_ms[16];
  snprintf(timeout_s, sizeof timeout_s, "%u", (c->timeout_ms + 999) / 1000);
  snprintf(statement_ms, sizeof statement_ms, "%u", c->statement_ms);
  /* Keywords before dbname are defaults the conninfo may override; the
   * encoding after it is forced, since text is sent as UTF-8. Keep-alives
   * notice a peer that vanished while the connection is idle. */
  const char *const keys[] = { "connect_timeout", "application_name", "keepalives_idle",
                               "keepalives_interval", "keepalives_count", "dbname",
                               "client_encoding", NULL };
  const char *const values[] = { timeout_s, "emgd", "10", "5", "3", c->conninfo, "UTF8", NULL };
  uint64_t deadline = clock_now_ms() + c->timeout_ms;
  PGresult *r = NULL;
  int rc = 0;

  db_conn_drop(c);
  c->pg = PQconnectStartParams(keys, values, 1);
  if (!c->pg) {
    db_err_set(err, err_len, "out of memory");
    return DB_E_NOMEM;
  }
  if (PQstatus(c->pg) == CONNECTION_BAD) {
    rc = conn_broken(c, err, err_len);
    goto out;
  }
  PostgresPollingStatusType st = PGRES_POLLING_WRITING;
  while (st != PGRES_POLLING_OK) {
    if (st == PGRES_POLLING_FAILED) {
      db_err_set(err, err_len, "cannot connect to the database: %s", PQerrorMessage(c->pg));
      db_conn_drop(c);
      rc = DB_E_DOWN;
      goto out;
    }
    if ((rc = conn_wait(c, st == PGRES_POLLING_WRITING, deadline, err, err_len)) < 0)
      goto out;
    st = PQconnectPoll(c->pg);
  }
  if (PQsetnonblocking(c->pg, 1) != 0) {
    rc = conn_broken(c, err, err_len);
    goto out;
  }
  const char *const timeout_param[] = { statement_ms };
  if ((rc = db_conn_exec(c, "SELECT set_config('statement_timeout', $1, false)", 1, timeout_param, NULL, err,
                         err_len)) < 0)
    goto out;
  if (c->check_schema) {
    rc = db_conn_exec(c, "SELECT coalesce(max(version), 0) FROM schema_migrations", 0, NULL, &r, err, err_len);
    if (rc == DB_E_SCHEMA || (rc == 0 && atoi(PQgetvalue(r, 0, 0)) < DB_SCHEMA_NEEDED)) {
      db_err_set(err, err_len, "the database has %s schema version %d: run emgd --init-db",
                 rc == 0 ? "only" : "no", rc == 0 ? atoi(PQgetvalue(r, 0, 0)) : 0);
      db_conn_drop(c);
      rc = DB_E_SCHEMA;
      goto out;
    }
    if (rc < 0)
      goto out;
  }
  c->generation++;
out:
  PQclear(r);
  return rc;
}

/* A usable connection, connecting when there is none and the back-off has
 * passed; DB_E_DOWN at once while it has not. */
int db_conn_ensure(struct conn *c, char *err, size_t err_len)
{
  if (c->pg && PQstatus(c->pg) == CONNECTION_OK)
    return 0;
  db_conn_drop(c);
  uint64_t now = clock_now_ms();
  if (now < c->retry_at_ms) {
    db_err_set(err, err_len, "database down, next attempt in %" PRIu64 " ms (%s)", c->retry_at_ms - now, c->last_error);
    return DB_E_DOWN;
  }
  char why[DB_ERR_LEN] = "";
  int rc = db_conn_connect(c, why, sizeof why);
  if (rc < 0) {
    str_copy(c->last_error, sizeof c->last_error, why);
    db_err_set(err, err_len, "%s", why);
    c->retry_at_ms = clock_now_ms() + c->backoff_ms;
    c->backoff_ms = c->backoff_ms * 2 > c->backoff_max_ms ? c->backoff_max_ms : c->backoff_ms * 2;
    return rc;
  }
  c->backoff_ms = c->backoff_min_ms;
  c->retry_at_ms = 0;
  return 0;
}

/* After a statement failed on a live connection: next time, start afresh
 * after the back-off (the error may be the server being overloaded). */
void db_conn_backoff(struct conn *c, const char *why)
{
  str_copy(c->last_error, sizeof c->last_error, why);
  db_conn_drop(c);
  c->retry_at_ms = clock_now_ms() + c->backoff_ms;
  c->backoff_ms = c->backoff_ms * 2 > c->backoff_max_ms ? c->backoff_max_ms : c->backoff_ms * 2;
}

/* ---- the synchronous handle ---- */

struct db *db_open(const char *conninfo, unsigned timeout_ms, char *err, size_t err_len)
{
  struct db *db = calloc(1, sizeof *db);
  if (!db) {
    db_err_set(err, err_len, "out of memory");
    return NULL;
  }
  timeout_ms = timeout_ms ? timeout_ms : 5000;
  if (db_conn_init(&db->conn, conninfo, timeout_ms, timeout_ms, true, 500, 5000, err, err_len) < 0) {
    free(db);
    return NULL;
  }
  pthread_mutex_init(&db->lock, NULL);
  return db;
}

void db_close(struct db *db)
{
  if (!db)
    return;
  db_conn_free(&db->conn);
  pthread_mutex_destroy(&db->lock);
  free(db);
}

/* One statement under the handle's lock, connecting first if need be. A
 * failure other than a refused statement starts the back-off. */
int db_query(struct db *db, const char *sql, int n, const char *const *values, PGresult **out, char *err,
             size_t err_len)
{
  char why[DB_ERR_LEN] = "";
  int rc = db_conn_ensure(&db->conn, why, sizeof why);
  if (rc < 0)
    goto out;
  rc = db_conn_exec(&db->conn, sql, n, values, out, why, sizeof why);
  if (rc < 0 && rc != DB_E_SQL && rc != DB_E_SCHEMA)
    db_conn_backoff(&db->conn, why);
out:
  if (rc < 0)
    db_err_set(err, err_len, "%s", why);
  return rc;
}
