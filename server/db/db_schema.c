/* db_schema.c - the database schema: the migrations compiled in from
 * sql/NNN_*.sql and db_init_schema, which applies those a database lacks.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <libpq-fe.h>
#include "db_internal.h"

/* ---- migrations: sql/NNN_*.sql, compiled in by CMakeLists.txt ---- */

extern const unsigned char db_sql_001_init[];
extern const unsigned char db_sql_002_handoff_dlr_mask[];
extern const unsigned char db_sql_003_accounts[];
extern const unsigned char db_sql_004_message_log_recipient[];

static const struct migration {
  int version;
  const char *name;
  const unsigned char *sql;
} migrations[] = {
  { 1, "001_init", db_sql_001_init },
  { 2, "002_handoff_dlr_mask", db_sql_002_handoff_dlr_mask },
  { 3, "003_accounts", db_sql_003_accounts },
  { 4, "004_message_log_recipient", db_sql_004_message_log_recipient },
};

_Static_assert(sizeof migrations / sizeof migrations[0] == DB_SCHEMA_VERSION,
               "one migration per schema version, numbered from 1");

/* pg_advisory_xact_lock(LOCK_CLASS, n): 1 = migrations (2 = ids, in SQL). */
#define LOCK_CLASS "6647143"
#define LOCK_MIGRATIONS "1"

/* ---- schema ---- */

int db_init_schema(const char *conninfo, unsigned timeout_ms, int *applied, char *err, size_t err_len)
{
  struct conn c;
  PGresult *r = NULL;
  int done = 0;
  bool have[sizeof migrations / sizeof migrations[0]] = { false };
  int rc = db_conn_init(&c, conninfo, timeout_ms ? timeout_ms : 30000, 0, false, 0, 0, err, err_len);
  if (rc < 0)
    return rc;
  if ((rc = db_conn_connect(&c, err, err_len)) < 0)
    goto out;
  if ((rc = db_conn_exec(&c, "BEGIN", 0, NULL, NULL, err, err_len)) < 0)
    goto out;
  /* Two nodes running --init-db at once: the second waits here, then sees
   * what the first applied. */
  if ((rc = db_conn_exec(&c, "SELECT pg_advisory_xact_lock(" LOCK_CLASS ", " LOCK_MIGRATIONS ")", 0, NULL, NULL,
                         err, err_len)) < 0)
    goto out;
  if ((rc = db_conn_exec(&c, "SELECT to_regclass('schema_migrations') IS NOT NULL", 0, NULL, &r, err, err_len)) < 0)
    goto out;
  bool table = PQgetvalue(r, 0, 0)[0] == 't';
  PQclear(r);
  r = NULL;
  if (table) {
    if ((rc = db_conn_exec(&c, "SELECT version FROM schema_migrations", 0, NULL, &r, err, err_len)) < 0)
      goto out;
    for (int i = 0; i < PQntuples(r); i++) {
      int v = atoi(PQgetvalue(r, i, 0));
      if (v >= 1 && v <= DB_SCHEMA_VERSION)
        have[v - 1] = true;
    }
    PQclear(r);
    r = NULL;
  }
  for (size_t i = 0; i < sizeof migrations / sizeof migrations[0]; i++) {
    if (have[i])
      continue;
    char why[DB_ERR_LEN];
    if ((rc = db_conn_script(&c, (const char *)migrations[i].sql, why, sizeof why)) < 0) {
      db_err_set(err, err_len, "migration %s: %s", migrations[i].name, why);
      goto out;
    }
    char version[16];
    snprintf(version, sizeof version, "%d", migrations[i].version);
    const char *const params[] = { version, migrations[i].name };
    if ((rc = db_conn_exec(&c, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", 2, params, NULL,
                           err, err_len)) < 0)
      goto out;
    done++;
  }
  rc = db_conn_exec(&c, "COMMIT", 0, NULL, NULL, err, err_len);
out:
  PQclear(r);
  db_conn_free(&c);
  if (applied)
    *applied = rc == 0 ? done : 0;
  return rc;
}
