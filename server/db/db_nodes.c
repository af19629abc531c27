/* db_nodes.c - what nodes share through the database: blocks of message ids
 * from one sequence, and the nodes table (registration, heartbeats, the
 * list).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <libpq-fe.h>
#include "db_internal.h"
#include "tables.h"
#include "strutil.h"

int db_id_block(struct db *db, uint64_t count, uint64_t at_least, uint64_t *first, char *err, size_t err_len)
{
  if (count == 0 || count > IDS_SEQ_MASK || at_least > IDS_SEQ_MASK) {
    db_err_set(err, err_len, "id block of %" PRIu64 " from %" PRIu64 ": out of range", count, at_least);
    return DB_E_ARG;
  }
  char want[24], floor[24];
  snprintf(want, sizeof want, "%" PRIu64, count);
  snprintf(floor, sizeof floor, "%" PRIu64, at_least ? at_least : 1);
  const char *const params[] = { want, floor };
  PGresult *r = NULL;
  pthread_mutex_lock(&db->lock);
  int rc = db_query(db, "SELECT emg_id_block($1, $2)", 2, params, &r, err, err_len);
  if (rc == 0)
    *first = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
  pthread_mutex_unlock(&db->lock);
  PQclear(r);
  return rc;
}

/* Registers or refreshes a node's row; sql says what an existing row gets. */
static int node_upsert(struct db *db, unsigned node_id, const char *name, const char *sql, char *err, size_t err_len)
{
  char node[16];
  snprintf(node, sizeof node, "%u", node_id);
  const char *const params[] = { node, name ? name : "" };
  pthread_mutex_lock(&db->lock);
  int rc = db_query(db, sql, 2, params, NULL, err, err_len);
  pthread_mutex_unlock(&db->lock);
  return rc;
}

int db_node_register(struct db *db, unsigned node_id, const char *name, char *err, size_t err_len)
{
  return node_upsert(db, node_id, name,
                     "INSERT INTO nodes (node_id, name) VALUES ($1, $2) ON CONFLICT (node_id) DO UPDATE"
                     " SET name = EXCLUDED.name, started_at = now(), last_seen = now()",
                     err, err_len);
}

int db_node_heartbeat(struct db *db, unsigned node_id, const char *name, char *err, size_t err_len)
{
  return node_upsert(db, node_id, name,
                     "INSERT INTO nodes (node_id, name) VALUES ($1, $2) ON CONFLICT (node_id) DO UPDATE"
                     " SET last_seen = now()",
                     err, err_len);
}

int db_node_list(struct db *db, struct db_node *out, unsigned max, char *err, size_t err_len)
{
  char limit[16];
  snprintf(limit, sizeof limit, "%u", max);
  const char *const params[] = { limit };
  PGresult *r = NULL;
  pthread_mutex_lock(&db->lock);
  int rc = db_query(db,
                    "SELECT node_id, name, (extract(epoch FROM started_at) * 1000)::bigint,"
                    " extract(epoch FROM now() - last_seen)::float8 FROM nodes ORDER BY node_id LIMIT $1",
                    1, params, &r, err, err_len);
  pthread_mutex_unlock(&db->lock);
  if (rc < 0)
    return rc;
  int n = PQntuples(r);
  for (int i = 0; i < n; i++) {
    out[i].node_id = (unsigned)strtoul(PQgetvalue(r, i, 0), NULL, 10);
    str_copy(out[i].name, sizeof out[i].name, PQgetvalue(r, i, 1));
    out[i].started_ms = strtoll(PQgetvalue(r, i, 2), NULL, 10);
    out[i].seen_ago_s = strtod(PQgetvalue(r, i, 3), NULL);
  }
  PQclear(r);
  return n;
}
