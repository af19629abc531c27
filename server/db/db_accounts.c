/* db_accounts.c - the accounts every node of one database shares
 * (sql/003_accounts.sql): their settings, changed through any node's admin
 * API, and their credit, which each node takes locally and pushes in one
 * statement for all accounts.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libpq-fe.h>
#include "bytebuf.h"
#include "db_internal.h"
#include "strutil.h"

/* Appends text to an array literal being built in b ("{" written first),
 * quoted: a name may hold any character. */
static int array_append(struct bytebuf *b, const char *text, bool first)
{
  if (db_buf_reserve(b, 2 * strlen(text) + 4) < 0)
    return -1;
  if (!first)
    b->p[b->len++] = ',';
  b->p[b->len++] = '"';
  for (const char *c = text; *c; c++) {
    if (*c == '"' || *c == '\\')
      b->p[b->len++] = '\\';
    b->p[b->len++] = (uint8_t)*c;
  }
  b->p[b->len++] = '"';
  return 0;
}

static int array_append_number(struct bytebuf *b, int64_t v, bool first)
{
  char text[24];
  snprintf(text, sizeof text, "%" PRId64, v);
  return array_append(b, text, first);
}

static int array_close(struct bytebuf *b)
{
  if (db_buf_reserve(b, 2) < 0)
    return -1;
  b->p[b->len++] = '}';
  b->p[b->len] = 0;
  return 0;
}

/* The three arrays of a push: names, parts and epochs. */
static int push_arrays(const struct db_credit_push *push, size_t n, struct bytebuf arrays[3])
{
  for (int k = 0; k < 3; k++)
    if (db_buf_reserve(&arrays[k], 2) < 0)
      return -1;
    else
      arrays[k].p[arrays[k].len++] = '{';
  for (size_t i = 0; i < n; i++)
    if (array_append(&arrays[0], push[i].name, i == 0) < 0 ||
        array_append_number(&arrays[1], push[i].parts, i == 0) < 0 ||
        array_append_number(&arrays[2], push[i].epoch, i == 0) < 0)
      return -1;
  for (int k = 0; k < 3; k++)
    if (array_close(&arrays[k]) < 0)
      return -1;
  return 0;
}

static int list_rows(PGresult *r, struct db_account_row **rows, char *err, size_t err_len)
{
  int n = PQntuples(r);
  *rows = calloc(n ? (size_t)n : 1, sizeof **rows);
  if (!*rows) {
    db_err_set(err, err_len, "out of memory");
    return DB_E_NOMEM;
  }
  for (int i = 0; i < n; i++) {
    struct db_account_row *row = &(*rows)[i];
    str_copy(row->name, sizeof row->name, PQgetvalue(r, i, 0));
    row->version = strtoll(PQgetvalue(r, i, 1), NULL, 10);
    row->limited = !PQgetisnull(r, i, 2);
    row->credit = row->limited ? strtoll(PQgetvalue(r, i, 2), NULL, 10) : 0;
    row->pushed_epoch = (uint32_t)strtoull(PQgetvalue(r, i, 3), NULL, 10);
  }
  return n;
}

int db_accounts_sync(struct db *db, unsigned node_id, const struct db_credit_push *push, size_t n_push, bool list,
                     struct db_account_row **rows, char *err, size_t err_len)
{
  char node[16];
  snprintf(node, sizeof node, "%u", node_id);
  struct bytebuf arrays[3] = { { 0 } };
  *rows = NULL;
  if (n_push && push_arrays(push, n_push, arrays) < 0) {
    for (int k = 0; k < 3; k++)
      bytebuf_free(&arrays[k]);
    db_err_set(err, err_len, "out of memory");
    return DB_E_NOMEM;
  }
  PGresult *r = NULL;
  int rc = 0;
  pthread_mutex_lock(&db->lock);
  db_conn_rollback(&db->conn);
  if ((rc = db_query(db, "BEGIN", 0, NULL, NULL, err, err_len)) < 0)
    goto out;
  if (n_push) {
    /* The pushed accounts' credit after, unless the listing follows. */
    const char *const params[] = { (const char *)arrays[0].p, (const char *)arrays[1].p,
                                   (const char *)arrays[2].p, node };
    rc = db_query(db,
                  "WITH p AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS p (name, parts, epoch)),"
                  " taken AS (UPDATE accounts a SET credit = a.credit - p.parts FROM p"
                  "           WHERE a.name = p.name AND a.credit IS NOT NULL RETURNING a.name, a.credit),"
                  " marked AS (INSERT INTO account_credit_pushed (name, node_id, epoch)"
                  "            SELECT p.name, $4, p.epoch FROM p JOIN accounts a ON a.name = p.name"
                  "            ON CONFLICT (name, node_id) DO UPDATE"
                  "            SET epoch = GREATEST(account_credit_pushed.epoch, EXCLUDED.epoch)"
                  "            RETURNING name, epoch)"
                  " SELECT t.name, 0, t.credit, m.epoch FROM taken t JOIN marked m ON m.name = t.name",
                  4, params, list ? NULL : &r, err, err_len);
    if (rc < 0)
      goto out;
  }
  if (list) {
    const char *const params[] = { node };
    rc = db_query(db,
                  "SELECT a.name, a.version, a.credit, COALESCE(p.epoch, 0) FROM accounts a"
                  " LEFT JOIN account_credit_pushed p ON p.name = a.name AND p.node_id = $1 ORDER BY a.name",
                  1, params, &r, err, err_len);
    if (rc < 0)
      goto out;
  }
  if ((rc = db_query(db, "COMMIT", 0, NULL, NULL, err, err_len)) < 0)
    goto out;
  rc = r ? list_rows(r, rows, err, err_len) : 0;
out:
  if (rc < 0 && rc != DB_E_NOMEM)
    db_conn_rollback(&db->conn);
  pthread_mutex_unlock(&db->lock);
  PQclear(r);
  for (int k = 0; k < 3; k++)
    bytebuf_free(&arrays[k]);
  return rc;
}

/* One statement with params, under the lock; the first row's first value,
 * when there is a row, into value (NULL: not wanted). 1 (a row), 0 (none),
 * or DB_E_*. */
static int one_row(struct db *db, const char *sql, int n, const char *const *params, char **value, char *err,
                   size_t err_len)
{
  PGresult *r = NULL;
  pthread_mutex_lock(&db->lock);
  int rc = db_query(db, sql, n, params, &r, err, err_len);
  pthread_mutex_unlock(&db->lock);
  if (rc == 0) {
    rc = PQntuples(r) > 0;
    if (rc && value && !(*value = strdup(PQgetisnull(r, 0, 0) ? "" : PQgetvalue(r, 0, 0)))) {
      db_err_set(err, err_len, "out of memory");
      rc = DB_E_NOMEM;
    }
  }
  PQclear(r);
  return rc;
}

int db_account_settings(struct db *db, const char *name, char **settings, int64_t *version, char *err, size_t err_len)
{
  const char *const params[] = { name };
  char *row = NULL;
  int rc = one_row(db, "SELECT version || ' ' || settings::text FROM accounts WHERE name = $1", 1, params, &row,
                   err, err_len);
  if (rc == 1) {
    char *space = strchr(row, ' ');
    *version = strtoll(row, NULL, 10);
    memmove(row, space ? space + 1 : row + strlen(row), strlen(space ? space + 1 : "") + 1);
    *settings = row;
  }
  return rc;
}

int db_account_put(struct db *db, const char *name, const char *settings, bool create, int64_t credit,
                   int64_t *version, char *err, size_t err_len)
{
  char credit_text[24];
  snprintf(credit_text, sizeof credit_text, "%" PRId64, credit);
  bool keep = credit == DB_CREDIT_KEEP;
  const char *const params[] = { name, settings, credit == DB_CREDIT_UNLIMITED || keep ? NULL : credit_text,
                                 keep ? "f" : "t" };
  char *row = NULL;
  int rc = create ? one_row(db,
                            "INSERT INTO accounts (name, settings, credit) VALUES ($1, $2::jsonb, $3::bigint)"
                            " ON CONFLICT (name) DO NOTHING RETURNING version",
                            3, params, &row, err, err_len)
                  : one_row(db,
                            "UPDATE accounts SET settings = $2::jsonb, version = nextval('account_version_seq'),"
                            " credit = CASE WHEN $4::boolean THEN $3::bigint ELSE credit END, updated_at = now()"
                            " WHERE name = $1 RETURNING version",
                            4, params, &row, err, err_len);
  if (rc == 1)
    *version = strtoll(row, NULL, 10);
  free(row);
  return rc;
}

int db_account_delete(struct db *db, const char *name, char *err, size_t err_len)
{
  const char *const params[] = { name };
  return one_row(db, "DELETE FROM accounts WHERE name = $1 RETURNING 1", 1, params, NULL, err, err_len);
}

int db_account_credit(struct db *db, const char *name, bool add, int64_t value, int64_t *left, char *err,
                      size_t err_len)
{
  char value_text[24];
  snprintf(value_text, sizeof value_text, "%" PRId64, value);
  const char *const params[] = { name, add ? "t" : "f", value_text };
  char *row = NULL;
  int rc = one_row(db,
                   "UPDATE accounts SET credit = CASE WHEN $2::boolean"
                   " THEN GREATEST(COALESCE(credit, 0) + $3::bigint, LEAST(COALESCE(credit, 0), 0))"
                   " ELSE $3::bigint END WHERE name = $1 RETURNING credit",
                   3, params, &row, err, err_len);
  if (rc == 1)
    *left = strtoll(row, NULL, 10);
  free(row);
  return rc;
}
