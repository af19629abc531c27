/* db_internal.h - what the files of emgd's PostgreSQL side (server/db*.c)
 * share: the error text helper, the connection (db.c) and the synchronous
 * handle the calls of db_nodes.c and db_receipts.c run on. Only those files
 * include it; the rest of emgd uses db.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_DB_INTERNAL_H
#define EMG_DB_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libpq-fe.h>
#include "bytebuf.h"
#include "db.h"

/* Formats a message into err (err_len bytes; NULL: nothing), on one line. */
void db_err_set(char *err, size_t err_len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Room for more bytes in one of the message log's buffers (4 KiB at first);
 * bytebuf_reserve's result. */
int db_buf_reserve(struct bytebuf *b, size_t more);

/* ---- connections (db.c) ---- */

/* One libpq connection, non-blocking, every wait bounded. Used by one thread
 * at a time (a lane's writer, or a struct db under its lock). */
struct conn {
  char *conninfo;
  unsigned timeout_ms;             /* connect */
  unsigned statement_ms;           /* each statement; 0 = no limit */
  _Atomic uint64_t cap_ms;         /* monotonic: nothing waits past it (0 = no cap); set by a closer */
  bool check_schema;               /* refuse a database without the schema this code needs */
  PGconn *pg;
  uint64_t generation;             /* counts connections made: a new one needs its session set up */
  uint64_t retry_at_ms;            /* monotonic: no connect attempt before */
  unsigned backoff_ms, backoff_min_ms, backoff_max_ms;
  char sqlstate[6];                /* of the last refused statement */
  char last_error[DB_ERR_LEN];
};

/* Checks conninfo and sets c up, not connected yet. 0, or DB_E_ARG /
 * DB_E_NOMEM with the reason in err. */
int db_conn_init(struct conn *c, const char *conninfo, unsigned timeout_ms, unsigned statement_ms,
                 bool check_schema, unsigned backoff_min_ms, unsigned backoff_max_ms, char *err,
                 size_t err_len);

/* Closes the connection, if any; c stays set up. */
void db_conn_drop(struct conn *c);

/* Closes the connection and frees what db_conn_init took. */
void db_conn_free(struct conn *c);

/* Connects now, whatever the back-off says, sets the session up and checks
 * the schema when c asks for it: 0 or DB_E_*. */
int db_conn_connect(struct conn *c, char *err, size_t err_len);

/* A usable connection: 0, or DB_E_* (at once while backing off). */
int db_conn_ensure(struct conn *c, char *err, size_t err_len);

/* After a failed statement: drops the connection and backs off, why being
 * the error to report meanwhile. */
void db_conn_backoff(struct conn *c, const char *why);

/* Runs sql with n text parameters: 0 or DB_E_*; *out (may be NULL) gets
 * the result, the caller's to PQclear. */
int db_conn_exec(struct conn *c, const char *sql, int n, const char *const *values, PGresult **out,
                 char *err, size_t err_len);

/* Runs a script of several statements without parameters: 0 or DB_E_*. */
int db_conn_script(struct conn *c, const char *sql, char *err, size_t err_len);

/* Ends a transaction left open (a failed one); drops the connection when
 * even that fails. */
void db_conn_rollback(struct conn *c);

/* COPY sql FROM STDIN with data (text format): 0 or DB_E_*. */
int db_conn_copy(struct conn *c, const char *sql, const uint8_t *data, size_t len, char *err, size_t err_len);

/* ---- the synchronous handle (db.c) ---- */

struct db {
  pthread_mutex_t lock;
  struct conn conn;
};

/* One statement, connecting first if need be; the caller holds db->lock.
 * 0 or DB_E_*, as db_conn_exec. */
int db_query(struct db *db, const char *sql, int n, const char *const *values, PGresult **out, char *err,
             size_t err_len);

#endif
