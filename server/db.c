/* db.c - emgd's PostgreSQL connections and what the other db_*.c files
 * share (connecting, statements, COPY, the back-off while the database is
 * away, the synchronous handle, the error texts), and the message log
 * writer. The rest of db.h: db_schema.c (migrations), db_nodes.c (ids,
 * nodes), db_receipts.c (message rows, receipts between nodes).
 *
 * Connections are non-blocking libpq driven by poll() with a deadline, so no
 * call waits longer than its time-out whatever the server or the network
 * does: a server that stops answering mid-statement costs one time-out and
 * the connection, not a thread stuck until TCP gives up.
 *
 * The log writer. The log is split into lanes by message id, each with its
 * own writer thread, connection, memory and spill file, so that batches are
 * written in parallel and two lanes never touch one row. A producer encodes
 * its event into a record (the spill file's format) on its stack and copies
 * it into its lane's `pending` under the lane's lock.
 * The writer swaps `pending` for its own `work` buffer, folds up to
 * batch_events records into one row per message, and writes the rows in one
 * transaction: COPY into a temporary staging table, then one INSERT ...
 * SELECT ... ON CONFLICT (id) DO UPDATE. Folding first is required, not an
 * optimisation: ON CONFLICT DO UPDATE refuses to touch a row twice in one
 * statement. The fold applies the same merge rules as the SQL (a lattice:
 * see sql/001_init.sql), so the order events reach the database in, and
 * replays, do not matter.
 *
 * The spill file. When `pending` is full (the writer is slow or stuck in a
 * statement), the producer that finds it full appends all of it to the
 * spill file and starts again empty; while the database is away, the writer
 * does the same every flush_ms, including what it holds of a failed batch.
 * The writer reads the spill file before memory (its events are the older
 * ones), and once it has read and committed the whole file it truncates it.
 * Records are checksummed; on open, a torn tail is cut, and damaged records
 * are skipped (and counted) when read. The file is in native byte order: it
 * never leaves the machine that wrote it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <libpq-fe.h>
#include "bytebuf.h"
#include "clock.h"
#include "crc32c.h"
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

/* Formats a message into err (DB_ERR_LEN), on one line: libpq's messages
 * end in, and may contain, line breaks. */
void db_err_set(char *err, const char *fmt, ...)
{
  if (!err)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, DB_ERR_LEN, fmt, ap);
  va_end(ap);
  size_t n = strlen(err);
  while (n && (err[n - 1] == '\n' || err[n - 1] == ' '))
    err[--n] = '\0';
  for (char *p = err; *p; p++)
    if (*p == '\n' || *p == '\t')
      *p = ' ';
}

static int64_t wall_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The CLOCK_MONOTONIC time ms from now, for the condition variables. */
static struct timespec monotonic_in(uint64_t ms)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += (time_t)(ms / 1000);
  ts.tv_nsec += (long)(ms % 1000) * 1000000;
  if (ts.tv_nsec >= 1000000000) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000;
  }
  return ts;
}

/* Room for more bytes in one of the message log's buffers (4 KiB at first). */
int db_buf_reserve(struct bytebuf *b, size_t more)
{
  return bytebuf_reserve(b, more, 4096);
}

/* ---- connections ---- */

int db_conn_init(struct conn *c, const char *conninfo, unsigned timeout_ms, unsigned statement_ms,
                 bool check_schema, unsigned backoff_min_ms, unsigned backoff_max_ms, char *err)
{
  memset(c, 0, sizeof *c);
  atomic_init(&c->cap_ms, 0);
  char *why = NULL;
  PQconninfoOption *opts = PQconninfoParse(conninfo ? conninfo : "", &why);
  if (!opts) {
    db_err_set(err, "bad conninfo: %s", why ? why : "out of memory");
    PQfreemem(why);
    return why ? DB_E_ARG : DB_E_NOMEM;
  }
  PQconninfoFree(opts);
  c->conninfo = strdup(conninfo);
  if (!c->conninfo) {
    db_err_set(err, "out of memory");
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
static int conn_wait(struct conn *c, bool want_write, uint64_t deadline, char *err)
{
  for (;;) {
    uint64_t now = clock_now_ms(), cap = atomic_load(&c->cap_ms);
    if (cap && cap < deadline)
      deadline = cap;
    if (now >= deadline) {
      db_err_set(err, "no answer from the database in time");
      db_conn_drop(c);
      return DB_E_TIMEOUT;
    }
    struct pollfd p = { .fd = PQsocket(c->pg), .events = POLLIN | (want_write ? POLLOUT : 0) };
    uint64_t left = deadline - now;
    int r = poll(&p, 1, left > 100 ? 100 : (int)left);
    if (r > 0)
      return 0;
    if (r < 0 && errno != EINTR) {
      db_err_set(err, "poll: %s", strerror(errno));
      db_conn_drop(c);
      return DB_E_DOWN;
    }
  }
}

static int conn_broken(struct conn *c, char *err)
{
  db_err_set(err, "database connection lost: %s", c->pg ? PQerrorMessage(c->pg) : "closed");
  db_conn_drop(c);
  return DB_E_DOWN;
}

/* Maps a failed result to a DB_E_* code; drops the connection when it is
 * gone or going (the server shutting down, a crashed backend). */
static int conn_failed(struct conn *c, const PGresult *r, char *err)
{
  const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
  const char *primary = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
  if (!state)
    state = "";
  str_copy(c->sqlstate, sizeof c->sqlstate, state);
  db_err_set(err, "%s%s%s", primary ? primary : PQresultErrorMessage(r), *state ? " SQLSTATE " : "", state);
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
static int conn_collect(struct conn *c, uint64_t deadline, PGresult **out, char *err)
{
  int rc = 0, w;
  PGresult *last = NULL;
  for (;;) {
    int f;
    while ((f = PQflush(c->pg)) == 1) {
      if ((w = conn_wait(c, true, deadline, err)) < 0) {
        rc = w;
        goto out;
      }
      if (!PQconsumeInput(c->pg)) {
        rc = conn_broken(c, err);
        goto out;
      }
    }
    if (f < 0) {
      rc = conn_broken(c, err);
      goto out;
    }
    while (PQisBusy(c->pg)) {
      if ((w = conn_wait(c, false, deadline, err)) < 0) {
        rc = w;
        goto out;
      }
      if (!PQconsumeInput(c->pg)) {
        rc = conn_broken(c, err);
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
        rc = conn_failed(c, r, err);
      PQclear(r);
      if (!c->pg)
        goto out;
      continue;
    }
    PQclear(last);
    last = r;
  }
  if (PQstatus(c->pg) != CONNECTION_OK && rc == 0)
    rc = conn_broken(c, err);
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
                 char *err)
{
  if (out)
    *out = NULL;
  if (!PQsendQueryParams(c->pg, sql, n, NULL, values, NULL, NULL, 0))
    return conn_broken(c, err);
  return conn_collect(c, conn_deadline(c), out, err);
}

/* Runs a script of several statements without parameters (migrations). */
int db_conn_script(struct conn *c, const char *sql, char *err)
{
  if (!PQsendQuery(c->pg, sql))
    return conn_broken(c, err);
  return conn_collect(c, conn_deadline(c), NULL, err);
}

void db_conn_rollback(struct conn *c)
{
  if (c->pg && PQtransactionStatus(c->pg) != PQTRANS_IDLE && db_conn_exec(c, "ROLLBACK", 0, NULL, NULL, NULL) < 0)
    db_conn_drop(c);
}

/* COPY sql FROM STDIN with data (text format). */
int db_conn_copy(struct conn *c, const char *sql, const uint8_t *data, size_t len, char *err)
{
  uint64_t deadline = conn_deadline(c);
  PGresult *r = NULL;
  int rc;
  if (!PQsendQuery(c->pg, sql))
    return conn_broken(c, err);
  if ((rc = conn_collect(c, deadline, &r, err)) < 0)
    return rc;
  bool copy_in = r && PQresultStatus(r) == PGRES_COPY_IN;
  PQclear(r);
  if (!copy_in) {
    db_err_set(err, "COPY did not start");
    db_conn_drop(c);
    return DB_E_DOWN;
  }
  while (len) {
    size_t chunk = len < (1u << 20) ? len : (1u << 20);
    int w = PQputCopyData(c->pg, (const char *)data, (int)chunk);
    if (w < 0)
      return conn_broken(c, err);
    if (w == 0) {
      if ((rc = conn_wait(c, true, deadline, err)) < 0)
        return rc;
      if (!PQconsumeInput(c->pg))
        return conn_broken(c, err);
      continue;
    }
    data += chunk;
    len -= chunk;
  }
  int e;
  while ((e = PQputCopyEnd(c->pg, NULL)) == 0)
    if ((rc = conn_wait(c, true, deadline, err)) < 0)
      return rc;
  if (e < 0)
    return conn_broken(c, err);
  return conn_collect(c, deadline, NULL, err);
}

/* Connects within the time-out, sets the session up and checks the schema. */
int db_conn_connect(struct conn *c, char *err)
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
    db_err_set(err, "out of memory");
    return DB_E_NOMEM;
  }
  if (PQstatus(c->pg) == CONNECTION_BAD) {
    rc = conn_broken(c, err);
    goto out;
  }
  PostgresPollingStatusType st = PGRES_POLLING_WRITING;
  while (st != PGRES_POLLING_OK) {
    if (st == PGRES_POLLING_FAILED) {
      db_err_set(err, "cannot connect to the database: %s", PQerrorMessage(c->pg));
      db_conn_drop(c);
      rc = DB_E_DOWN;
      goto out;
    }
    if ((rc = conn_wait(c, st == PGRES_POLLING_WRITING, deadline, err)) < 0)
      goto out;
    st = PQconnectPoll(c->pg);
  }
  if (PQsetnonblocking(c->pg, 1) != 0) {
    rc = conn_broken(c, err);
    goto out;
  }
  const char *const timeout_param[] = { statement_ms };
  if ((rc = db_conn_exec(c, "SELECT set_config('statement_timeout', $1, false)", 1, timeout_param, NULL, err)) < 0)
    goto out;
  if (c->check_schema) {
    rc = db_conn_exec(c, "SELECT coalesce(max(version), 0) FROM schema_migrations", 0, NULL, &r, err);
    if (rc == DB_E_SCHEMA || (rc == 0 && atoi(PQgetvalue(r, 0, 0)) < DB_SCHEMA_VERSION)) {
      db_err_set(err, "the database has %s schema version %d: run emgd --init-db",
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
int db_conn_ensure(struct conn *c, char *err)
{
  if (c->pg && PQstatus(c->pg) == CONNECTION_OK)
    return 0;
  db_conn_drop(c);
  uint64_t now = clock_now_ms();
  if (now < c->retry_at_ms) {
    db_err_set(err, "database down, next attempt in %" PRIu64 " ms (%s)", c->retry_at_ms - now, c->last_error);
    return DB_E_DOWN;
  }
  char why[DB_ERR_LEN] = "";
  int rc = db_conn_connect(c, why);
  if (rc < 0) {
    str_copy(c->last_error, sizeof c->last_error, why);
    db_err_set(err, "%s", why);
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

/* ---- records: the events in memory and in the spill file ----
 *
 *   magic u32 | checksum u32 | payload length u32 | payload
 *
 * payload: kind u8, msg_id u64, time_ms i64, src ton, src npi, dst ton,
 * dst npi, dlr_mask, segment_seq, segment_count, state (u8 each),
 * segment_ref u16, attempt u16, error u16, done_time i64, then seven strings
 * (u8 length + bytes): origin connector, origin user, origin ref, source,
 * destination, target connector, SMSC id. The checksum (over the length and
 * the payload) is filled when a record goes to the spill file. */

#define REC_MAGIC 0x4c424445u              /* "EDBL" */
#define REC_HDR 12
#define REC_FIXED 39
#define REC_STRINGS 7
#define REC_MAX (REC_HDR + REC_FIXED + REC_STRINGS * 256)

enum { S_ORIGIN_CONN, S_ORIGIN_USER, S_ORIGIN_REF, S_SRC, S_DST, S_TARGET, S_SMSC };

struct strv {
  const char *p;
  uint8_t n;
};

/* A record decoded in place: strings point into the buffer. */
struct rec {
  uint8_t kind;
  uint64_t id;
  int64_t time_ms;
  uint8_t src_ton, src_npi, dst_ton, dst_npi, dlr_mask, segment_seq, segment_count, state;
  uint16_t segment_ref, attempt, error;
  int64_t done_time;
  struct strv s[REC_STRINGS];
};


static uint8_t *put_str(uint8_t *p, const char *s)
{
  size_t n = s ? strnlen(s, 255) : 0;
  *p++ = (uint8_t)n;
  if (n)
    memcpy(p, s, n);
  return p + n;
}

/* Encodes ev into out (REC_MAX bytes); returns the record's length. */
static size_t rec_encode(uint8_t *out, const struct db_log_event *ev, int64_t time_ms)
{
  uint8_t *p = out + REC_HDR;
  uint16_t attempt = ev->kind == DB_LOG_SENT && ev->attempt == 0 ? 1 : ev->attempt;
  if (ev->kind == DB_LOG_ACCEPTED)
    attempt = 0;
  *p++ = (uint8_t)ev->kind;
  memcpy(p, &ev->msg_id, 8);
  memcpy(p + 8, &time_ms, 8);
  p += 16;
  const uint8_t small[8] = { ev->src.ton, ev->src.npi, ev->dst.ton, ev->dst.npi,
                             ev->dlr_mask, ev->segment_seq, ev->segment_count, ev->state };
  memcpy(p, small, sizeof small);
  p += sizeof small;
  memcpy(p, &ev->segment_ref, 2);
  memcpy(p + 2, &attempt, 2);
  memcpy(p + 4, &ev->error, 2);
  memcpy(p + 6, &ev->done_time, 8);
  p += 14;
  p = put_str(p, ev->origin_connector);
  p = put_str(p, ev->origin_user);
  p = put_str(p, ev->origin_ref);
  p = put_str(p, ev->src.addr);
  p = put_str(p, ev->dst.addr);
  p = put_str(p, ev->target_connector);
  p = put_str(p, ev->smsc_id);
  uint32_t magic = REC_MAGIC, sum = 0, len = (uint32_t)(p - out - REC_HDR);
  memcpy(out, &magic, 4);
  memcpy(out + 4, &sum, 4);
  memcpy(out + 8, &len, 4);
  return (size_t)(p - out);
}

/* Decodes the payload of a framed record; false when it does not parse. */
static bool rec_decode(const uint8_t *p, size_t len, struct rec *r)
{
  if (len < REC_FIXED)
    return false;
  const uint8_t *end = p + len;
  r->kind = p[0];
  memcpy(&r->id, p + 1, 8);
  memcpy(&r->time_ms, p + 9, 8);
  r->src_ton = p[17];
  r->src_npi = p[18];
  r->dst_ton = p[19];
  r->dst_npi = p[20];
  r->dlr_mask = p[21];
  r->segment_seq = p[22];
  r->segment_count = p[23];
  r->state = p[24];
  memcpy(&r->segment_ref, p + 25, 2);
  memcpy(&r->attempt, p + 27, 2);
  memcpy(&r->error, p + 29, 2);
  memcpy(&r->done_time, p + 31, 8);
  p += REC_FIXED;
  for (int i = 0; i < REC_STRINGS; i++) {
    if (p >= end || (size_t)(end - p) < 1u + *p)
      return false;
    r->s[i].n = *p;
    r->s[i].p = (const char *)p + 1;
    p += 1 + *p;
  }
  return p == end && r->kind >= DB_LOG_ACCEPTED && r->kind <= DB_LOG_FAILED && r->state <= MSG_STATE_REJECTED;
}

/* Frames the record at p: 1 with its length, 0 when more bytes are needed,
 * -1 when p is not the start of a good record. verify: check the sum. */
static int rec_frame(const uint8_t *p, size_t avail, bool verify, size_t *len)
{
  if (avail < REC_HDR)
    return 0;
  uint32_t magic, sum, plen;
  memcpy(&magic, p, 4);
  memcpy(&sum, p + 4, 4);
  memcpy(&plen, p + 8, 4);
  if (magic != REC_MAGIC || plen < REC_FIXED || plen > REC_MAX - REC_HDR)
    return -1;
  if (avail < REC_HDR + plen)
    return 0;
  if (verify && crc32c(0, p + 8, 4 + plen) != sum)
    return -1;
  *len = REC_HDR + plen;
  return 1;
}

/* rec_frame, and the payload must decode too. */
static int rec_check(const uint8_t *p, size_t avail, bool verify, size_t *len, struct rec *r)
{
  struct rec scratch;
  int f = rec_frame(p, avail, verify, len);
  if (f <= 0)
    return f;
  return rec_decode(p + REC_HDR, *len - REC_HDR, r ? r : &scratch) ? 1 : -1;
}

/* The offset of the next possible record start after a bad one. */
static size_t rec_resync(const uint8_t *p, size_t avail)
{
  uint32_t magic = REC_MAGIC;
  const uint8_t *m = avail > 1 ? memmem(p + 1, avail - 1, &magic, 4) : NULL;
  return m ? (size_t)(m - p) : avail;
}

static int64_t rec_time(const uint8_t *p)
{
  int64_t t;
  memcpy(&t, p + REC_HDR + 9, 8);
  return t;
}

/* ---- the fold: one row per message for a batch ---- */

/* A message's row in a batch: the record that gives each group of columns
 * (-1 = none yet). */
struct fold_row {
  uint64_t id;
  int32_t accepted, route, state, receipt;
};

struct fold {
  struct rec *recs;
  struct fold_row *rows;
  unsigned n_recs, n_rows, cap;
  uint32_t *slot_row, *slot_gen;   /* id -> row: open addressing, cleared by bumping gen */
  uint32_t mask, gen;
};

static int fold_init(struct fold *f, unsigned cap)
{
  uint32_t slots = 16;
  while (slots < 2 * cap)
    slots *= 2;
  f->cap = cap;
  f->mask = slots - 1;
  f->gen = 1;
  f->recs = calloc(cap, sizeof *f->recs);
  f->rows = calloc(cap, sizeof *f->rows);
  f->slot_row = calloc(slots, sizeof *f->slot_row);
  f->slot_gen = calloc(slots, sizeof *f->slot_gen);
  return f->recs && f->rows && f->slot_row && f->slot_gen ? 0 : -1;
}

static void fold_free(struct fold *f)
{
  free(f->recs);
  free(f->rows);
  free(f->slot_row);
  free(f->slot_gen);
  memset(f, 0, sizeof *f);
}

static void fold_reset(struct fold *f)
{
  f->n_recs = f->n_rows = 0;
  if (++f->gen == 0) {
    memset(f->slot_gen, 0, ((size_t)f->mask + 1) * sizeof *f->slot_gen);
    f->gen = 1;
  }
}

static struct fold_row *fold_row(struct fold *f, uint64_t id)
{
  uint32_t h = (uint32_t)((id * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & f->mask;
  while (f->slot_gen[h] == f->gen) {
    if (f->rows[f->slot_row[h]].id == id)
      return &f->rows[f->slot_row[h]];
    h = (h + 1) & f->mask;
  }
  f->slot_gen[h] = f->gen;
  f->slot_row[h] = f->n_rows;
  struct fold_row *row = &f->rows[f->n_rows++];
  *row = (struct fold_row){ .id = id, .accepted = -1, .route = -1, .state = -1, .receipt = -1 };
  return row;
}

static int cmp_i64(int64_t a, int64_t b)
{
  return (a > b) - (a < b);
}

/* The state a record sets: QUEUED when accepted, ENROUTE when sent. */
static uint8_t rec_state(const struct rec *r)
{
  return r->kind == DB_LOG_ACCEPTED ? 0 : r->kind == DB_LOG_SENT ? MSG_STATE_ENROUTE : r->state;
}

static uint16_t rec_error(const struct rec *r)
{
  return r->kind == DB_LOG_ACCEPTED || r->kind == DB_LOG_SENT ? 0 : r->error;
}

/* The merge order of sql/001_init.sql: (final, time, state, error) for the
 * state, (final, time, state, done) for the receipt. > 0 when a wins. */
static int state_cmp(const struct rec *a, const struct rec *b)
{
  uint8_t sa = rec_state(a), sb = rec_state(b);
  int c = ((sa >= 2) - (sb >= 2));
  if (!c)
    c = cmp_i64(a->time_ms, b->time_ms);
  if (!c)
    c = (sa > sb) - (sa < sb);
  if (!c)
    c = (rec_error(a) > rec_error(b)) - (rec_error(a) < rec_error(b));
  return c;
}

static int receipt_cmp(const struct rec *a, const struct rec *b)
{
  int c = ((a->state >= 2) - (b->state >= 2));
  if (!c)
    c = cmp_i64(a->time_ms, b->time_ms);
  if (!c)
    c = (a->state > b->state) - (a->state < b->state);
  if (!c)
    c = cmp_i64(a->done_time, b->done_time);
  return c;
}

/* Adds recs[i] to its message's row. */
static void fold_add(struct fold *f, unsigned i)
{
  const struct rec *r = &f->recs[i];
  struct fold_row *row = fold_row(f, r->id);
  if (r->kind == DB_LOG_ACCEPTED && row->accepted < 0)
    row->accepted = (int32_t)i;
  if ((r->kind == DB_LOG_ACCEPTED || r->kind == DB_LOG_SENT) &&
      (row->route < 0 || r->attempt > f->recs[row->route].attempt))
    row->route = (int32_t)i;
  if (r->kind == DB_LOG_RECEIPT && (row->receipt < 0 || receipt_cmp(r, &f->recs[row->receipt]) > 0))
    row->receipt = (int32_t)i;
  if (row->state < 0 || state_cmp(r, &f->recs[row->state]) > 0)
    row->state = (int32_t)i;
}

/* ---- COPY text ---- */

static void out_byte(struct bytebuf *b, uint8_t c)
{
  b->p[b->len++] = c;
}

static void out_null(struct bytebuf *b)
{
  out_byte(b, '\\');
  out_byte(b, 'N');
  out_byte(b, '\t');
}

static void out_i64(struct bytebuf *b, int64_t v)
{
  char digits[24];
  int n = 0;
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  do {
    digits[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0)
    out_byte(b, '-');
  while (n)
    out_byte(b, (uint8_t)digits[--n]);
  out_byte(b, '\t');
}

/* The length of the valid UTF-8 sequence at p (as PostgreSQL accepts it:
 * no overlong forms, no surrogates, nothing above U+10FFFF), 0 if none. */
static size_t utf8_len(const uint8_t *p, size_t n)
{
  uint8_t c = p[0], lo = 0x80, hi = 0xBF;
  size_t len;
  if (c >= 0xC2 && c <= 0xDF)
    len = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0)
      lo = 0xA0;
    else if (c == 0xED)
      hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0)
      lo = 0x90;
    else if (c == 0xF4)
      hi = 0x8F;
  } else
    return 0;
  if (n < len || p[1] < lo || p[1] > hi)
    return 0;
  for (size_t k = 2; k < len; k++)
    if ((p[k] & 0xC0) != 0x80)
      return 0;
  return len;
}

/* A text column: NULL when empty, COPY's escapes, '?' for each byte that is
 * not valid UTF-8 (the server would refuse the whole batch for one). */
static void out_text(struct bytebuf *b, struct strv s)
{
  if (s.n == 0) {
    out_null(b);
    return;
  }
  const uint8_t *p = (const uint8_t *)s.p;
  size_t i = 0;
  while (i < s.n) {
    uint8_t c = p[i];
    if (c < 0x80) {
      switch (c) {
      case '\\': out_byte(b, '\\'); out_byte(b, '\\'); break;
      case '\t': out_byte(b, '\\'); out_byte(b, 't'); break;
      case '\n': out_byte(b, '\\'); out_byte(b, 'n'); break;
      case '\r': out_byte(b, '\\'); out_byte(b, 'r'); break;
      default: out_byte(b, c);
      }
      i++;
      continue;
    }
    size_t len = utf8_len(p + i, s.n - i);
    if (len == 0) {
      out_byte(b, '?');
      i++;
      continue;
    }
    memcpy(b->p + b->len, p + i, len);
    b->len += len;
    i += len;
  }
  out_byte(b, '\t');
}

/* Bytes one row can take: seven strings escaped to at most twice their
 * length, and 20 numbers of up to 21 characters. */
#define COPY_ROW_MAX (REC_STRINGS * (2 * 255 + 3) + 20 * 22 + 8)

static void out_row(struct bytebuf *b, const struct fold *f, const struct fold_row *row)
{
  static const struct strv none = { NULL, 0 };
  const struct rec *a = row->accepted >= 0 ? &f->recs[row->accepted] : NULL;
  const struct rec *rt = row->route >= 0 ? &f->recs[row->route] : NULL;
  const struct rec *st = &f->recs[row->state];
  const struct rec *rc = row->receipt >= 0 ? &f->recs[row->receipt] : NULL;
  bool sent = rt && rt->kind == DB_LOG_SENT;
  bool segments = a && a->segment_count > 0;

  out_i64(b, (int64_t)row->id);
  if (a) {
    out_i64(b, a->time_ms);
    out_text(b, a->s[S_ORIGIN_CONN]);
    out_text(b, a->s[S_ORIGIN_USER]);
    out_text(b, a->s[S_ORIGIN_REF]);
    out_text(b, a->s[S_SRC]);
    out_i64(b, a->src_ton);
    out_i64(b, a->src_npi);
    out_text(b, a->s[S_DST]);
    out_i64(b, a->dst_ton);
    out_i64(b, a->dst_npi);
    out_i64(b, a->dlr_mask);
  } else {
    for (int i = 0; i < 11; i++)
      out_null(b);
  }
  if (segments) {
    out_i64(b, a->segment_ref);
    out_i64(b, a->segment_seq);
    out_i64(b, a->segment_count);
  } else {
    out_null(b);
    out_null(b);
    out_null(b);
  }
  out_i64(b, rt ? rt->attempt : 0);
  out_text(b, rt ? rt->s[S_TARGET] : none);
  out_text(b, sent ? rt->s[S_SMSC] : none);
  if (sent)
    out_i64(b, rt->time_ms);
  else
    out_null(b);
  out_i64(b, rec_state(st));
  out_i64(b, st->time_ms);
  out_i64(b, rec_error(st));
  if (rc) {
    out_i64(b, rc->state);
    out_i64(b, rc->time_ms);
    if (rc->done_time)
      out_i64(b, rc->done_time);
    else
      out_null(b);
  } else {
    out_null(b);
    out_null(b);
    out_null(b);
  }
  b->p[b->len - 1] = '\n';       /* the last column's tab ends the row */
}

/* The writer's statements. The staging table lives as long as the
 * connection; ON COMMIT DELETE ROWS empties it after each batch. */
static const char stage_create[] =
  "CREATE TEMP TABLE IF NOT EXISTS emg_log_stage ("
  " id bigint, received_ms bigint, origin_connector text, origin_user text, origin_ref text,"
  " src_addr text, src_ton smallint, src_npi smallint, dst_addr text, dst_ton smallint,"
  " dst_npi smallint, dlr_mask smallint, segment_ref integer, segment_seq smallint,"
  " segment_count smallint, attempts smallint, target_connector text, smsc_id text,"
  " sent_ms bigint, state smallint, state_ms bigint, error_code integer,"
  " receipt_state smallint, receipt_ms bigint, done_s bigint) ON COMMIT DELETE ROWS";

static const char stage_copy[] = "COPY emg_log_stage FROM STDIN";

#define TS(ms) "(timestamptz 'epoch' + (" ms ") * interval '1 millisecond')"
/* The state group wins: (final, state_at, state, error) is higher. */
#define STATE_WINS                                                                                   \
  "(EXCLUDED.state >= 2, EXCLUDED.state_at, EXCLUDED.state, coalesce(EXCLUDED.error_code, 0))"      \
  " > (m.state >= 2, m.state_at, m.state, coalesce(m.error_code, 0))"
#define RECEIPT_WINS                                                                                 \
  "EXCLUDED.receipt_state IS NOT NULL AND (m.receipt_state IS NULL OR"                               \
  " (EXCLUDED.receipt_state >= 2, EXCLUDED.receipt_at, EXCLUDED.receipt_state,"                      \
  " coalesce(EXCLUDED.done_at, '-infinity')) > (m.receipt_state >= 2, m.receipt_at,"                 \
  " m.receipt_state, coalesce(m.done_at, '-infinity')))"
#define ONCE(col) col " = coalesce(m." col ", EXCLUDED." col "), "
#define ROUTE(col)                                                                                   \
  col " = CASE WHEN EXCLUDED.attempts > m.attempts THEN coalesce(EXCLUDED." col ", m." col ")"       \
  " ELSE coalesce(m." col ", EXCLUDED." col ") END, "
#define BY(cond, col) col " = CASE WHEN " cond " THEN EXCLUDED." col " ELSE m." col " END"

static const char stage_merge[] =
  "INSERT INTO message_log AS m (id, node_id, received_at, origin_connector, origin_user,"
  " origin_ref, src_addr, src_ton, src_npi, dst_addr, dst_ton, dst_npi, dlr_mask, segment_ref,"
  " segment_seq, segment_count, attempts, target_connector, smsc_id, sent_at, state, state_at,"
  " error_code, final_at, receipt_state, receipt_at, done_at)"
  " SELECT id, ((id >> 48) & 65535)::integer, " TS("received_ms") ", origin_connector, origin_user,"
  " origin_ref, src_addr, src_ton, src_npi, dst_addr, dst_ton, dst_npi, dlr_mask, segment_ref,"
  " segment_seq, segment_count, attempts, target_connector, smsc_id, " TS("sent_ms") ", state, "
  TS("state_ms") ", error_code, CASE WHEN state >= 2 THEN " TS("state_ms") " END, receipt_state, "
  TS("receipt_ms") ", " TS("done_s * 1000") " FROM emg_log_stage ORDER BY id"
  " ON CONFLICT (id) DO UPDATE SET "
  ONCE("received_at") ONCE("origin_connector") ONCE("origin_user") ONCE("origin_ref")
  ONCE("src_addr") ONCE("src_ton") ONCE("src_npi") ONCE("dst_addr") ONCE("dst_ton")
  ONCE("dst_npi") ONCE("dlr_mask") ONCE("segment_ref") ONCE("segment_seq") ONCE("segment_count")
  ROUTE("target_connector") ROUTE("smsc_id") ROUTE("sent_at")
  "attempts = greatest(m.attempts, EXCLUDED.attempts), "
  BY(STATE_WINS, "state") ", " BY(STATE_WINS, "state_at") ", " BY(STATE_WINS, "error_code") ", "
  BY(STATE_WINS, "final_at") ", "
  BY(RECEIPT_WINS, "receipt_state") ", " BY(RECEIPT_WINS, "receipt_at") ", " BY(RECEIPT_WINS, "done_at");

/* ---- the message log ---- */

enum work_source { WORK_NONE, WORK_PENDING, WORK_SPILL };

struct lane {
  struct conn conn;                /* the writer's */
  struct db_log *parent;
  const struct db_log_limits *lim; /* the parent's, memory_bytes being this lane's share */
  char spill_path[4096];
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t wake;             /* the writer waits here */
  pthread_cond_t settled;          /* db_log_sync waits here */

  /* Under lock. */
  struct bytebuf pending;          /* records not yet taken by the writer */
  uint64_t pending_events;
  int64_t pending_oldest_ms;
  uint64_t pending_since_ms;       /* monotonic: when pending stopped being empty */
  int spill_fd;
  uint64_t spill_size;             /* bytes of records in the file */
  uint64_t spill_unread;           /* offset the writer has read up to */
  uint64_t spill_events;           /* events in [spill_unread, spill_size) */
  int64_t spill_oldest_ms;         /* the oldest of those */
  uint64_t work_events;            /* events in the writer's work not yet written */
  int64_t work_oldest_ms;
  size_t work_bytes;               /* unwritten bytes of work */
  bool stop;
  uint64_t close_deadline_ms;
  unsigned sync_waiters;
  int link;                        /* -1 not tried yet, 0 down, 1 up */
  uint64_t events_logged, events_written, events_spilled, events_lost, events_dropped, batches;
  uint64_t spill_corrupt_bytes;
  char last_error[DB_ERR_LEN];

  /* The writer's own. */
  struct bytebuf work;             /* records being written, from pending or the spill file */
  size_t work_pos;                 /* records before it are written */
  enum work_source work_source;
  bool batch_ready;                /* fold holds the batch [work_pos, batch_end) */
  size_t batch_end;
  size_t isolate_end;              /* write one event per batch until here (after bad data) */
  uint64_t stage_generation;       /* the connection the staging table was made on */
  struct fold fold;
  struct bytebuf copy;
};

static size_t spill_event_len(const uint8_t *p)
{
  uint32_t plen;
  memcpy(&plen, p + 8, 4);
  return REC_HDR + plen;
}

/* Appends records (from pending or work: well formed, sums not yet set)
 * to the spill file, under lock. On failure the file is cut back to where
 * it was, so it never holds half a record. */
static int spill_append(struct lane *log, uint8_t *p, size_t len, uint64_t events, int64_t oldest)
{
  for (size_t off = 0; off < len; off += spill_event_len(p + off)) {
    uint32_t plen;
    memcpy(&plen, p + off + 8, 4);
    uint32_t sum = crc32c(0, p + off + 8, 4 + plen);
    memcpy(p + off + 4, &sum, 4);
  }
  size_t done = 0;
  while (done < len) {
    ssize_t w = pwrite(log->spill_fd, p + done, len - done, (off_t)(log->spill_size + done));
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      db_err_set(log->last_error, "spill file %s: %s", log->spill_path, w < 0 ? strerror(errno) : "short write");
      /* Best effort: the next append overwrites from spill_size anyway,
       * and the next open cuts a torn tail. */
      int cut = ftruncate(log->spill_fd, (off_t)log->spill_size);
      (void)cut;
      return DB_E_IO;
    }
    done += (size_t)w;
  }
  if (log->spill_unread == log->spill_size || oldest < log->spill_oldest_ms)
    log->spill_oldest_ms = oldest;
  log->spill_size += len;
  log->spill_events += events;
  log->events_spilled += events;
  return 0;
}

/* Moves pending to the spill file, under lock. */
static int spill_pending(struct lane *log)
{
  if (log->pending.len == 0)
    return 0;
  int rc = spill_append(log, log->pending.p, log->pending.len, log->pending_events, log->pending_oldest_ms);
  if (rc == 0) {
    log->pending.len = 0;
    log->pending_events = 0;
  }
  return rc;
}

/* Moves what the writer holds from pending, and pending itself, to the
 * spill file, under lock: the database is away, the disk keeps them. */
static void spill_memory(struct lane *log)
{
  if (log->work_source == WORK_PENDING && log->work_pos < log->work.len) {
    if (spill_append(log, log->work.p + log->work_pos, log->work.len - log->work_pos, log->work_events,
                     log->work_oldest_ms) < 0)
      return;
    log->work.len = log->work_pos = 0;
    log->work_events = 0;
    log->work_bytes = 0;
    log->work_source = WORK_NONE;
    log->batch_ready = false;
    log->isolate_end = 0;
  }
  spill_pending(log);
}

static int lane_event(struct lane *log, const struct db_log_event *ev)
{
  if (ev->kind < DB_LOG_ACCEPTED || ev->kind > DB_LOG_FAILED || ev->state > MSG_STATE_REJECTED ||
      ((ev->kind == DB_LOG_RECEIPT || ev->kind == DB_LOG_FAILED) && ev->state == 0))
    return DB_E_ARG;
  uint8_t rec[REC_MAX];
  int64_t time_ms = ev->time_ms ? ev->time_ms : wall_ms();
  size_t n = rec_encode(rec, ev, time_ms);
  bool wake;

  pthread_mutex_lock(&log->lock);
  if (log->pending.len + n > log->pending.cap && spill_pending(log) < 0) {
    log->events_lost++;
    pthread_mutex_unlock(&log->lock);
    return DB_E_IO;
  }
  if (log->pending.len == 0) {
    log->pending_oldest_ms = time_ms;
    log->pending_since_ms = clock_now_ms();
  }
  memcpy(log->pending.p + log->pending.len, rec, n);
  log->pending.len += n;
  log->pending_events++;
  log->events_logged++;
  wake = log->pending_events == log->lim->batch_events;
  pthread_mutex_unlock(&log->lock);
  if (wake)
    pthread_cond_signal(&log->wake);
  return 0;
}

void db_log_event_from_msg(struct db_log_event *ev, enum db_log_kind kind, const struct msg *m)
{
  memset(ev, 0, sizeof *ev);
  ev->kind = kind;
  ev->msg_id = m->id;
  ev->time_ms = kind == DB_LOG_ACCEPTED ? m->received_ms : 0;
  ev->origin_user = m->origin.user;
  ev->origin_ref = m->origin.ref;
  ev->src = m->src;
  ev->dst = m->dst;
  ev->dlr_mask = m->dlr_mask;
}

static void parent_link_changed(struct db_log *parent, const char *why);

static void log_set_connected(struct lane *log, bool connected, const char *why)
{
  pthread_mutex_lock(&log->lock);
  bool changed = log->link != connected;
  log->link = connected;
  if (why)
    str_copy(log->last_error, sizeof log->last_error, why);
  pthread_mutex_unlock(&log->lock);
  if (changed)
    parent_link_changed(log->parent, why);
}

/* A connection with the staging table, or false (down, backing off). */
static bool writer_connect(struct lane *log)
{
  char why[DB_ERR_LEN];
  if (db_conn_ensure(&log->conn, why) < 0) {
    log_set_connected(log, false, log->conn.last_error);
    return false;
  }
  if (log->stage_generation != log->conn.generation) {
    if (db_conn_exec(&log->conn, stage_create, 0, NULL, NULL, why) < 0) {
      db_conn_backoff(&log->conn, why);
      log_set_connected(log, false, why);
      return false;
    }
    log->stage_generation = log->conn.generation;
    log_set_connected(log, true, NULL);
  }
  return true;
}

/* Sleeps until the next connect attempt (or flush_ms, to keep spilling
 * what comes in), or until woken. */
static void writer_sleep(struct lane *log)
{
  uint64_t now = clock_now_ms(), until = now + log->lim->flush_ms;
  if (log->conn.retry_at_ms > now && log->conn.retry_at_ms < until)
    until = log->conn.retry_at_ms;
  struct timespec ts = monotonic_in(until - now);
  pthread_mutex_lock(&log->lock);
  if (!log->stop)
    pthread_cond_timedwait(&log->wake, &log->lock, &ts);
  pthread_mutex_unlock(&log->lock);
}

/* Reads the next part of the spill file into work; false when it cannot. */
static bool writer_read_spill(struct lane *log, uint64_t from, uint64_t to)
{
  size_t want = to - from > log->work.cap ? log->work.cap : (size_t)(to - from);
  size_t got = 0, cut = 0;
  uint64_t events = 0;
  while (got < want) {
    ssize_t r = pread(log->spill_fd, log->work.p + got, want - got, (off_t)(from + got));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      if (got == 0) {
        pthread_mutex_lock(&log->lock);
        db_err_set(log->last_error, "spill file %s: %s", log->spill_path, r < 0 ? strerror(errno) : "short read");
        pthread_mutex_unlock(&log->lock);
        return false;
      }
      break;
    }
    got += (size_t)r;
  }
  /* Whole records only: one cut at the end is read again next time. */
  while (cut < got) {
    size_t len;
    int f = rec_check(log->work.p + cut, got - cut, true, &len, NULL);
    if (f == 0 && from + got < to)
      break;
    if (f <= 0) {
      cut += rec_resync(log->work.p + cut, got - cut);
      continue;
    }
    events++;
    cut += len;
  }
  int64_t next_oldest = 0;
  if (from + cut < to) {
    uint8_t head[REC_HDR + 17];
    if (pread(log->spill_fd, head, sizeof head, (off_t)(from + cut)) == (ssize_t)sizeof head)
      next_oldest = rec_time(head);
  }
  log->work.len = cut;
  log->work_pos = 0;
  log->work_source = WORK_SPILL;
  log->batch_ready = false;
  log->isolate_end = 0;
  pthread_mutex_lock(&log->lock);
  log->spill_unread = from + cut;
  log->spill_events = log->spill_events > events ? log->spill_events - events : 0;
  if (log->spill_unread < log->spill_size && next_oldest)
    log->spill_oldest_ms = next_oldest;
  log->work_events = events;
  log->work_bytes = cut;
  log->work_oldest_ms = cut ? rec_time(log->work.p) : 0;
  pthread_mutex_unlock(&log->lock);
  return true;
}

/* Gives the writer something to write: the spill file first, then memory
 * once it is due. 1: work filled; 0: nothing yet (it waited); -1: stopping
 * and everything is written. */
static int writer_refill(struct lane *log)
{
  pthread_mutex_lock(&log->lock);
  if (log->spill_unread < log->spill_size) {
    uint64_t from = log->spill_unread, to = log->spill_size;
    pthread_mutex_unlock(&log->lock);
    if (!writer_read_spill(log, from, to)) {
      writer_sleep(log);
      return 0;
    }
    return 1;
  }
  uint64_t now = clock_now_ms();
  bool due = log->pending_events >= log->lim->batch_events || log->stop || log->sync_waiters ||
             now >= log->pending_since_ms + log->lim->flush_ms;
  if (log->pending.len && due) {
    struct bytebuf taken = log->pending;
    log->pending = log->work;
    log->pending.len = 0;
    log->work = taken;
    log->work_pos = 0;
    log->work_source = WORK_PENDING;
    log->batch_ready = false;
    log->isolate_end = 0;
    log->work_events = log->pending_events;
    log->work_oldest_ms = log->pending_oldest_ms;
    log->work_bytes = taken.len;
    log->pending_events = 0;
    pthread_mutex_unlock(&log->lock);
    return 1;
  }
  if (log->stop && !log->pending.len) {
    pthread_mutex_unlock(&log->lock);
    return -1;
  }
  uint64_t until = log->pending.len ? log->pending_since_ms + log->lim->flush_ms : now + 1000;
  if (log->stop && until > log->close_deadline_ms)
    until = log->close_deadline_ms;
  struct timespec ts = monotonic_in(until > now ? until - now : 0);
  pthread_cond_timedwait(&log->wake, &log->lock, &ts);
  pthread_mutex_unlock(&log->lock);
  return 0;
}

/* Folds the next batch of work: from work_pos, up to batch_events events
 * (one while isolating bad data). Damaged spill records are skipped. */
static void writer_fold(struct lane *log)
{
  struct fold *f = &log->fold;
  unsigned limit = log->work_pos < log->isolate_end ? 1 : log->lim->batch_events;
  size_t pos = log->work_pos;
  uint64_t corrupt = 0;
  fold_reset(f);
  while (pos < log->work.len && f->n_recs < limit) {
    size_t len = 0;
    if (rec_check(log->work.p + pos, log->work.len - pos, log->work_source == WORK_SPILL, &len,
                  &f->recs[f->n_recs]) <= 0) {
      size_t skip = rec_resync(log->work.p + pos, log->work.len - pos);
      corrupt += skip;
      pos += skip;
      continue;
    }
    fold_add(f, f->n_recs++);
    pos += len;
  }
  log->batch_end = pos;
  log->batch_ready = true;
  if (corrupt) {
    pthread_mutex_lock(&log->lock);
    log->spill_corrupt_bytes += corrupt;
    db_err_set(log->last_error, "spill file %s: %" PRIu64 " damaged bytes skipped", log->spill_path, corrupt);
    pthread_mutex_unlock(&log->lock);
  }
}

/* Writes the folded batch in one transaction. */
static int writer_write(struct lane *log, char *err)
{
  struct fold *f = &log->fold;
  struct conn *c = &log->conn;
  int rc;
  log->copy.len = 0;
  for (unsigned i = 0; i < f->n_rows; i++) {
    if (db_buf_reserve(&log->copy, COPY_ROW_MAX) < 0) {
      db_err_set(err, "out of memory for a batch of %u rows", f->n_rows);
      return DB_E_NOMEM;
    }
    out_row(&log->copy, f, &f->rows[i]);
  }
  if ((rc = db_conn_exec(c, "BEGIN", 0, NULL, NULL, err)) < 0 ||
      (rc = db_conn_copy(c, stage_copy, log->copy.p, log->copy.len, err)) < 0 ||
      (rc = db_conn_exec(c, stage_merge, 0, NULL, NULL, err)) < 0 ||
      (rc = db_conn_exec(c, "COMMIT", 0, NULL, NULL, err)) < 0) {
    db_conn_rollback(c);
    return rc;
  }
  return 0;
}

/* The batch [work_pos, batch_end) is done (written, or dropped): account. */
static void writer_done(struct lane *log, unsigned events, bool written)
{
  log->work_pos = log->batch_end;
  log->batch_ready = false;
  pthread_mutex_lock(&log->lock);
  if (written) {
    log->events_written += events;
    log->batches += events > 0;
  } else {
    log->events_dropped += events;
  }
  log->work_events = log->work_events > events ? log->work_events - events : 0;
  log->work_bytes = log->work.len - log->work_pos;
  log->work_oldest_ms = log->work_pos < log->work.len ? rec_time(log->work.p + log->work_pos) : 0;
  /* The whole spill file written: start it again empty. */
  if (log->work_pos == log->work.len && log->work_source == WORK_SPILL &&
      log->spill_unread == log->spill_size && log->spill_size > 0) {
    if (ftruncate(log->spill_fd, 0) == 0)
      log->spill_size = log->spill_unread = 0;
  }
  pthread_mutex_unlock(&log->lock);
  pthread_cond_broadcast(&log->settled);
}

static void writer_batch(struct lane *log)
{
  char why[DB_ERR_LEN];
  if (!log->batch_ready)
    writer_fold(log);
  unsigned events = log->fold.n_recs;
  if (events == 0) {
    writer_done(log, 0, true);
    return;
  }
  int rc = writer_write(log, why);
  if (rc == 0) {
    writer_done(log, events, true);
    return;
  }
  /* Bad data (SQLSTATE class 22 or 23) fails the same way every time: find
   * the event by writing one at a time, drop it, go on. Anything else is
   * the database's trouble: keep the batch and retry after the back-off. */
  if (rc == DB_E_SQL && (strncmp(log->conn.sqlstate, "22", 2) == 0 || strncmp(log->conn.sqlstate, "23", 2) == 0)) {
    pthread_mutex_lock(&log->lock);
    str_copy(log->last_error, sizeof log->last_error, why);
    pthread_mutex_unlock(&log->lock);
    if (events > 1) {
      log->isolate_end = log->batch_end;
      log->batch_ready = false;
    } else {
      writer_done(log, events, false);
    }
    return;
  }
  db_conn_backoff(&log->conn, why);
  log_set_connected(log, false, why);
}

static void *writer_main(void *arg)
{
  struct lane *log = arg;
  for (;;) {
    pthread_mutex_lock(&log->lock);
    bool stopping = log->stop;
    bool late = stopping && clock_now_ms() >= log->close_deadline_ms;
    pthread_mutex_unlock(&log->lock);
    if (late)
      break;
    if (!writer_connect(log)) {
      pthread_mutex_lock(&log->lock);
      spill_memory(log);
      pthread_mutex_unlock(&log->lock);
      if (stopping)
        break;
      writer_sleep(log);
      continue;
    }
    if (log->work_pos == log->work.len) {
      if (writer_refill(log) < 0)
        break;
      continue;
    }
    writer_batch(log);
  }
  /* What is left goes to disk for the next run. */
  pthread_mutex_lock(&log->lock);
  spill_memory(log);
  if (log->spill_size > 0 && fdatasync(log->spill_fd) != 0)
    db_err_set(log->last_error, "spill file %s: %s", log->spill_path, strerror(errno));
  if (log->spill_size == 0)
    unlink(log->spill_path);
  pthread_mutex_unlock(&log->lock);
  db_conn_drop(&log->conn);
  return NULL;
}

/* Takes stock of a spill file a previous run left: counts its events, finds
 * the oldest, cuts a torn tail. */
static int spill_scan(struct lane *log, char *err)
{
  struct stat st;
  if (fstat(log->spill_fd, &st) != 0) {
    db_err_set(err, "%s: %s", log->spill_path, strerror(errno));
    return DB_E_IO;
  }
  uint64_t size = (uint64_t)st.st_size, off = 0, good_end = 0;
  uint8_t *chunk = log->work.p;
  while (off < size) {
    size_t want = size - off > log->work.cap ? log->work.cap : (size_t)(size - off);
    ssize_t got = pread(log->spill_fd, chunk, want, (off_t)off);
    if (got <= 0) {
      db_err_set(err, "%s: %s", log->spill_path, got < 0 ? strerror(errno) : "short read");
      return DB_E_IO;
    }
    size_t pos = 0;
    while (pos < (size_t)got) {
      size_t len;
      int f = rec_check(chunk + pos, (size_t)got - pos, true, &len, NULL);
      if (f == 0)
        break;
      if (f < 0) {
        pos += rec_resync(chunk + pos, (size_t)got - pos);
        continue;
      }
      if (log->spill_events++ == 0)
        log->spill_oldest_ms = rec_time(chunk + pos);
      pos += len;
      good_end = off + pos;
    }
    if (pos == 0)
      break;                       /* a record cut by the end of the file */
    off += pos;
  }
  if (good_end < size && ftruncate(log->spill_fd, (off_t)good_end) != 0) {
    db_err_set(err, "%s: %s", log->spill_path, strerror(errno));
    return DB_E_IO;
  }
  log->spill_size = good_end;
  log->events_logged = log->spill_events;
  return 0;
}

/* Takes over a spill file that a run with more writers left (its lane
 * number is beyond ours): its good records are appended to this lane's
 * file, then it goes. */
static int spill_adopt(struct lane *log, const char *path, char *err)
{
  int rc = 0, fd = open(path, O_RDONLY | O_CLOEXEC);
  uint64_t off = 0;
  if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
    db_err_set(err, "%s: %s", path, fd >= 0 && errno == EWOULDBLOCK ? "in use by another process" : strerror(errno));
    rc = DB_E_IO;
    goto out;
  }
  for (;;) {
    ssize_t got = pread(fd, log->work.p, log->work.cap, (off_t)off);
    if (got < 0) {
      db_err_set(err, "%s: %s", path, strerror(errno));
      rc = DB_E_IO;
      goto out;
    }
    size_t pos = 0;
    while (pos < (size_t)got) {
      size_t len;
      int f = rec_check(log->work.p + pos, (size_t)got - pos, true, &len, NULL);
      if (f == 0)
        break;
      if (f < 0) {
        pos += rec_resync(log->work.p + pos, (size_t)got - pos);
        continue;
      }
      /* Whole records, sums already set: written as they are. */
      if (pwrite(log->spill_fd, log->work.p + pos, len, (off_t)log->spill_size) != (ssize_t)len) {
        db_err_set(err, "%s: %s", log->spill_path, strerror(errno));
        rc = DB_E_IO;
        goto out;
      }
      if (log->spill_events++ == 0 || rec_time(log->work.p + pos) < log->spill_oldest_ms)
        log->spill_oldest_ms = rec_time(log->work.p + pos);
      log->events_logged++;
      log->spill_size += len;
      pos += len;
    }
    if (pos == 0)
      break;                       /* the end, or a record cut by it */
    off += pos;
  }
  if (fdatasync(log->spill_fd) != 0 || unlink(path) != 0) {
    db_err_set(err, "%s: %s", path, strerror(errno));
    rc = DB_E_IO;
  }
out:
  if (fd >= 0)
    close(fd);
  return rc;
}

/* Spill files of lanes beyond n that belong to lane `index` (K % n). */
static int spill_adopt_all(struct lane *log, const char *spill_dir, unsigned index, unsigned n, char *err)
{
  DIR *d = opendir(spill_dir);
  struct dirent *e;
  int rc = 0;
  if (!d) {
    db_err_set(err, "%s: %s", spill_dir, strerror(errno));
    return DB_E_IO;
  }
  while (rc == 0 && (e = readdir(d))) {
    unsigned k;
    char tail, path[4200];
    if (sscanf(e->d_name, "dblog-%u.spil%c", &k, &tail) != 2 || tail != 'l' || k < n || k % n != index)
      continue;
    snprintf(path, sizeof path, "%s/%s", spill_dir, e->d_name);
    rc = spill_adopt(log, path, err);
  }
  closedir(d);
  return rc;
}

static void lane_free(struct lane *log)
{
  if (log->spill_fd >= 0)
    close(log->spill_fd);
  log->spill_fd = -1;
  db_conn_free(&log->conn);
  fold_free(&log->fold);
  bytebuf_free(&log->pending);
  bytebuf_free(&log->work);
  bytebuf_free(&log->copy);
}

/* Sets up lane `index` of n in place, up to (not including) its thread. */
static int lane_init(struct lane *log, struct db_log *parent, unsigned index, unsigned n, const char *conninfo,
                     const char *spill_dir, const struct db_log_limits *lim, char *err)
{
  log->parent = parent;
  log->lim = lim;
  log->spill_fd = -1;
  log->link = -1;
  if (db_conn_init(&log->conn, conninfo, lim->timeout_ms, lim->timeout_ms, true, lim->retry_min_ms,
                   lim->retry_max_ms, err) < 0)
    return -1;
  if (snprintf(log->spill_path, sizeof log->spill_path, "%s/dblog-%u.spill", spill_dir, index) >=
      (int)sizeof log->spill_path) {
    db_err_set(err, "spill directory name too long");
    return -1;
  }
  log->pending.p = malloc(lim->memory_bytes);
  log->work.p = malloc(lim->memory_bytes);
  if (!log->pending.p || !log->work.p || fold_init(&log->fold, lim->batch_events) < 0) {
    db_err_set(err, "out of memory");
    return -1;
  }
  log->pending.cap = log->work.cap = lim->memory_bytes;
  log->spill_fd = open(log->spill_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (log->spill_fd < 0) {
    db_err_set(err, "%s: %s", log->spill_path, strerror(errno));
    return -1;
  }
  /* Two processes on one spill file would interleave their records. */
  if (flock(log->spill_fd, LOCK_EX | LOCK_NB) != 0) {
    db_err_set(err, "%s: %s", log->spill_path,
               errno == EWOULDBLOCK ? "in use by another process" : strerror(errno));
    return -1;
  }
  if (spill_scan(log, err) < 0 || spill_adopt_all(log, spill_dir, index, n, err) < 0)
    return -1;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&log->lock, NULL);
  pthread_cond_init(&log->wake, &ca);
  pthread_cond_init(&log->settled, &ca);
  pthread_condattr_destroy(&ca);
  return 0;
}

/* Asks the lane's writer to stop by the deadline (it spills the rest). */
static void lane_stop(struct lane *log, uint64_t deadline_ms)
{
  pthread_mutex_lock(&log->lock);
  log->stop = true;
  log->close_deadline_ms = deadline_ms;
  atomic_store(&log->conn.cap_ms, deadline_ms);
  pthread_mutex_unlock(&log->lock);
  pthread_cond_signal(&log->wake);
}

static int lane_sync(struct lane *log, const struct timespec *deadline)
{
  int rc = 0;
  pthread_mutex_lock(&log->lock);
  uint64_t target = log->events_logged;
  log->sync_waiters++;
  pthread_cond_signal(&log->wake);
  while (log->events_written + log->events_dropped < target)
    if (pthread_cond_timedwait(&log->settled, &log->lock, deadline) == ETIMEDOUT) {
      rc = log->events_written + log->events_dropped < target ? DB_E_TIMEOUT : 0;
      break;
    }
  log->sync_waiters--;
  pthread_mutex_unlock(&log->lock);
  return rc;
}

/* Adds the lane's figures to out; returns the time of its oldest unwritten
 * event (0 = none). */
static int64_t lane_stats(struct lane *log, struct db_log_stats *out)
{
  pthread_mutex_lock(&log->lock);
  out->events_logged += log->events_logged;
  out->events_written += log->events_written;
  out->events_pending += log->pending_events + log->spill_events + log->work_events;
  out->events_spilled += log->events_spilled;
  out->events_lost += log->events_lost;
  out->events_dropped += log->events_dropped;
  out->batches += log->batches;
  out->spill_bytes += log->spill_size;
  out->spill_corrupt_bytes += log->spill_corrupt_bytes;
  out->memory_bytes += log->pending.len + log->work_bytes;
  if (!out->last_error[0] || log->link == 0)
    str_copy(out->last_error, sizeof out->last_error, log->last_error);
  int64_t oldest = 0;
  if (log->work_events && log->work_oldest_ms)
    oldest = log->work_oldest_ms;
  if (log->spill_events && log->spill_oldest_ms && (!oldest || log->spill_oldest_ms < oldest))
    oldest = log->spill_oldest_ms;
  if (log->pending_events && (!oldest || log->pending_oldest_ms < oldest))
    oldest = log->pending_oldest_ms;
  pthread_mutex_unlock(&log->lock);
  return oldest;
}

/* The message log: lanes, each a writer with its own connection, memory
 * and spill file. A message's events all go to one lane (by id), so two
 * lanes never write the same row at once, and the lanes' transactions run
 * in parallel on the server. */
struct db_log {
  struct db_log_limits lim;
  unsigned n_lanes;
  struct lane *lanes;
  pthread_mutex_t link_lock;
  int link;                        /* all lanes: -1 not known yet, 0 one is down, 1 all up */
};

/* A lane's connection came or went: tell on_change when that changes
 * whether the log as a whole is up. */
static void parent_link_changed(struct db_log *parent, const char *why)
{
  /* Under link_lock throughout, so that two lanes changing at once cannot
   * leave a stale verdict or tell on_change in the wrong order. */
  pthread_mutex_lock(&parent->link_lock);
  int up = 1;
  for (unsigned i = 0; i < parent->n_lanes && up == 1; i++) {
    pthread_mutex_lock(&parent->lanes[i].lock);
    int link = parent->lanes[i].link;
    pthread_mutex_unlock(&parent->lanes[i].lock);
    up = link == 0 ? 0 : link < 0 ? -1 : 1;
  }
  if (up >= 0 && up != parent->link) {
    parent->link = up;
    if (parent->lim.on_change)
      parent->lim.on_change(parent->lim.ctx, up == 1, up == 1 ? NULL : why);
  }
  pthread_mutex_unlock(&parent->link_lock);
}

struct db_log *db_log_open(const char *conninfo, const char *spill_dir, const struct db_log_limits *limits,
                           char *err)
{
  struct db_log *log = calloc(1, sizeof *log);
  unsigned ready = 0, started = 0;
  if (!log) {
    db_err_set(err, "out of memory");
    return NULL;
  }
  if (limits)
    log->lim = *limits;
  struct db_log_limits *l = &log->lim;
  if (!l->writers)
    l->writers = 2;
  if (l->writers > 16)
    l->writers = 16;
  if (!l->memory_bytes)
    l->memory_bytes = 4u << 20;
  l->memory_bytes /= l->writers;
  if (l->memory_bytes < (64u << 10))
    l->memory_bytes = 64u << 10;
  if (!l->batch_events)
    l->batch_events = 20000;
  if (!l->flush_ms)
    l->flush_ms = 100;
  if (!l->timeout_ms)
    l->timeout_ms = 10000;
  if (!l->retry_min_ms)
    l->retry_min_ms = 250;
  if (!l->retry_max_ms)
    l->retry_max_ms = 5000;
  log->link = -1;
  pthread_mutex_init(&log->link_lock, NULL);
  log->n_lanes = l->writers;
  log->lanes = calloc(l->writers, sizeof *log->lanes);
  if (!log->lanes) {
    db_err_set(err, "out of memory");
    goto fail;
  }
  for (; ready < log->n_lanes; ready++) {
    if (lane_init(&log->lanes[ready], log, ready, log->n_lanes, conninfo, spill_dir, l, err) < 0) {
      lane_free(&log->lanes[ready]);
      goto fail;
    }
  }
  for (; started < log->n_lanes; started++) {
    int e = pthread_create(&log->lanes[started].thread, NULL, writer_main, &log->lanes[started]);
    if (e != 0) {
      db_err_set(err, "cannot start the log writer: %s", strerror(e));
      goto fail;
    }
  }
  return log;
fail:
  for (unsigned i = 0; i < started; i++)
    lane_stop(&log->lanes[i], clock_now_ms());
  for (unsigned i = 0; i < ready; i++) {
    if (i < started)
      pthread_join(log->lanes[i].thread, NULL);
    pthread_mutex_destroy(&log->lanes[i].lock);
    pthread_cond_destroy(&log->lanes[i].wake);
    pthread_cond_destroy(&log->lanes[i].settled);
    lane_free(&log->lanes[i]);
  }
  pthread_mutex_destroy(&log->link_lock);
  free(log->lanes);
  free(log);
  return NULL;
}

void db_log_close(struct db_log *log, unsigned timeout_ms)
{
  if (!log)
    return;
  uint64_t deadline = clock_now_ms() + (timeout_ms ? timeout_ms : 5000);
  for (unsigned i = 0; i < log->n_lanes; i++)
    lane_stop(&log->lanes[i], deadline);
  for (unsigned i = 0; i < log->n_lanes; i++) {
    struct lane *lane = &log->lanes[i];
    pthread_join(lane->thread, NULL);
    pthread_mutex_destroy(&lane->lock);
    pthread_cond_destroy(&lane->wake);
    pthread_cond_destroy(&lane->settled);
    lane_free(lane);
  }
  pthread_mutex_destroy(&log->link_lock);
  free(log->lanes);
  free(log);
}

int db_log_event(struct db_log *log, const struct db_log_event *ev)
{
  uint64_t h = ev->msg_id * UINT64_C(0x9E3779B97F4A7C15);
  return lane_event(&log->lanes[(h >> 32) % log->n_lanes], ev);
}

int db_log_sync(struct db_log *log, unsigned timeout_ms)
{
  struct timespec ts = monotonic_in(timeout_ms);
  int rc = 0;
  for (unsigned i = 0; i < log->n_lanes && rc == 0; i++)
    rc = lane_sync(&log->lanes[i], &ts);
  return rc;
}

void db_log_stats(struct db_log *log, struct db_log_stats *out)
{
  memset(out, 0, sizeof *out);
  int64_t oldest = 0;
  for (unsigned i = 0; i < log->n_lanes; i++) {
    int64_t t = lane_stats(&log->lanes[i], out);
    if (t && (!oldest || t < oldest))
      oldest = t;
  }
  pthread_mutex_lock(&log->link_lock);
  out->connected = log->link == 1;
  pthread_mutex_unlock(&log->link_lock);
  if (oldest) {
    int64_t age = wall_ms() - oldest;
    out->lag_s = age > 0 ? (double)age / 1000.0 : 0;
  }
}

/* ---- the synchronous handle ---- */

struct db *db_open(const char *conninfo, unsigned timeout_ms, char *err)
{
  struct db *db = calloc(1, sizeof *db);
  if (!db) {
    db_err_set(err, "out of memory");
    return NULL;
  }
  timeout_ms = timeout_ms ? timeout_ms : 5000;
  if (db_conn_init(&db->conn, conninfo, timeout_ms, timeout_ms, true, 500, 5000, err) < 0) {
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
int db_query(struct db *db, const char *sql, int n, const char *const *values, PGresult **out, char *err)
{
  char why[DB_ERR_LEN] = "";
  int rc = db_conn_ensure(&db->conn, why);
  if (rc < 0)
    goto out;
  rc = db_conn_exec(&db->conn, sql, n, values, out, why);
  if (rc < 0 && rc != DB_E_SQL && rc != DB_E_SCHEMA)
    db_conn_backoff(&db->conn, why);
out:
  if (rc < 0)
    db_err_set(err, "%s", why);
  return rc;
}
