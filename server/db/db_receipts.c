/* db_receipts.c - the message log read back, and receipts between nodes: a
 * message's row for its history, the message a receipt from an SMSC is
 * about, and receipts handed over to the node whose client sent the
 * message.
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

#define MS(col) "(extract(epoch FROM " col ") * 1000)::bigint"
#define MESSAGE_COLUMNS                                                                              \
  "SELECT id, node_id, " MS("received_at") ", origin_connector, origin_user, origin_ref, src_addr,"  \
  " src_ton, src_npi, dst_addr, dst_ton, dst_npi, dlr_mask, segment_ref, segment_seq,"               \
  " segment_count, attempts, target_connector, smsc_id, " MS("sent_at") ", state, " MS("state_at")    \
  ", error_code, " MS("final_at") ", receipt_state, " MS("receipt_at") ", " MS("done_at")            \
  " FROM message_log"

static int64_t col_i64(const PGresult *r, int row, int col)
{
  return PQgetisnull(r, row, col) ? 0 : strtoll(PQgetvalue(r, row, col), NULL, 10);
}

static void message_parse(const PGresult *r, int row, struct db_message *m)
{
  memset(m, 0, sizeof *m);
  m->id = (uint64_t)strtoll(PQgetvalue(r, row, 0), NULL, 10);
  m->node_id = (unsigned)col_i64(r, row, 1);
  m->received_ms = col_i64(r, row, 2);
  str_copy(m->origin_connector, sizeof m->origin_connector, PQgetvalue(r, row, 3));
  str_copy(m->origin_user, sizeof m->origin_user, PQgetvalue(r, row, 4));
  str_copy(m->origin_ref, sizeof m->origin_ref, PQgetvalue(r, row, 5));
  str_copy(m->src.addr, sizeof m->src.addr, PQgetvalue(r, row, 6));
  m->src.ton = (uint8_t)col_i64(r, row, 7);
  m->src.npi = (uint8_t)col_i64(r, row, 8);
  str_copy(m->dst.addr, sizeof m->dst.addr, PQgetvalue(r, row, 9));
  m->dst.ton = (uint8_t)col_i64(r, row, 10);
  m->dst.npi = (uint8_t)col_i64(r, row, 11);
  m->dlr_mask = (uint8_t)col_i64(r, row, 12);
  m->segment_ref = (uint16_t)col_i64(r, row, 13);
  m->segment_seq = (uint8_t)col_i64(r, row, 14);
  m->segment_count = (uint8_t)col_i64(r, row, 15);
  m->attempts = (unsigned)col_i64(r, row, 16);
  str_copy(m->target_connector, sizeof m->target_connector, PQgetvalue(r, row, 17));
  str_copy(m->smsc_id, sizeof m->smsc_id, PQgetvalue(r, row, 18));
  m->sent_ms = col_i64(r, row, 19);
  m->state = (uint8_t)col_i64(r, row, 20);
  m->state_ms = col_i64(r, row, 21);
  m->error_code = (int)col_i64(r, row, 22);
  m->final_ms = col_i64(r, row, 23);
  m->has_receipt = !PQgetisnull(r, row, 24);
  m->receipt_state = (uint8_t)col_i64(r, row, 24);
  m->receipt_ms = col_i64(r, row, 25);
  m->done_ms = col_i64(r, row, 26);
}

/* Runs a message query: its rows (at most max) into out; how many, or
 * DB_E_*. */
static int message_rows(struct db *db, const char *sql, int n, const char *const *params, struct db_message *out,
                        size_t max, char *err, size_t err_len)
{
  PGresult *r = NULL;
  pthread_mutex_lock(&db->lock);
  int rc = db_query(db, sql, n, params, &r, err, err_len);
  pthread_mutex_unlock(&db->lock);
  if (rc == 0) {
    int rows = PQntuples(r);
    for (int i = 0; i < rows && (size_t)i < max; i++)
      message_parse(r, i, &out[i]);
    rc = rows < (int)max ? rows : (int)max;
  }
  PQclear(r);
  return rc;
}

int db_message_get(struct db *db, uint64_t id, struct db_message *out, char *err, size_t err_len)
{
  char key[24];
  snprintf(key, sizeof key, "%" PRId64, (int64_t)id);
  const char *const params[] = { key };
  return message_rows(db, MESSAGE_COLUMNS " WHERE id = $1", 1, params, out, 1, err, err_len);
}

int db_message_search(struct db *db, enum db_message_key key, const char *value, const char *target_connector,
                      struct db_message *out, size_t max, char *err, size_t err_len)
{
  char limit[16];
  snprintf(limit, sizeof limit, "%zu", max);
  if (key == DB_MESSAGE_BY_RECIPIENT) {
    const char *const params[] = { value, limit };
    return message_rows(db, MESSAGE_COLUMNS " WHERE dst_addr = $1 ORDER BY id DESC LIMIT $2", 2, params, out, max,
                        err, err_len);
  }
  const char *const params[] = { target_connector, value, limit };
  return message_rows(db, MESSAGE_COLUMNS " WHERE target_connector = $1 AND smsc_id = $2 ORDER BY id DESC LIMIT $3",
                      3, params, out, max, err, err_len);
}

int db_receipt_lookup(struct db *db, const char *target_connector, const char *smsc_id, struct db_message *out,
                      char *err, size_t err_len)
{
  return db_message_search(db, DB_MESSAGE_BY_SMSC_ID, smsc_id, target_connector, out, 1, err, err_len);
}

int db_receipt_handoff(struct db *db, unsigned from_node, unsigned to_node, const struct db_handoff *h, char *err,
                       size_t err_len)
{
  char from[16], to[16], id[24], state[8], error[8], submit[24], done[24], st[4], sn[4], dt[4], dn[4], mask[4];
  snprintf(from, sizeof from, "%u", from_node);
  snprintf(to, sizeof to, "%u", to_node);
  snprintf(id, sizeof id, "%" PRId64, (int64_t)h->msg_id);
  snprintf(state, sizeof state, "%u", h->receipt.state);
  snprintf(error, sizeof error, "%u", h->receipt.err);
  snprintf(submit, sizeof submit, "%" PRId64, h->receipt.submit_time);
  snprintf(done, sizeof done, "%" PRId64, h->receipt.done_time);
  snprintf(st, sizeof st, "%u", h->receipt.src.ton);
  snprintf(sn, sizeof sn, "%u", h->receipt.src.npi);
  snprintf(dt, sizeof dt, "%u", h->receipt.dst.ton);
  snprintf(dn, sizeof dn, "%u", h->receipt.dst.npi);
  snprintf(mask, sizeof mask, "%u", h->dlr_mask);
  const char *const params[] = { to, from, id, h->origin_connector, h->origin_user, h->target_connector,
                                 h->smsc_id, h->receipt.id, state, error, submit, done,
                                 h->receipt.src.addr, st, sn, h->receipt.dst.addr, dt, dn, mask };
  pthread_mutex_lock(&db->lock);
  int rc = db_query(db,
                    "INSERT INTO receipt_handoff (to_node, from_node, msg_id, origin_connector, origin_user,"
                    " target_connector, smsc_id, receipt_id, state, error_code, submit_time, done_time,"
                    " src_addr, src_ton, src_npi, dst_addr, dst_ton, dst_npi, dlr_mask)"
                    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)",
                    19, params, NULL, err, err_len);
  pthread_mutex_unlock(&db->lock);
  return rc;
}

static void handoff_parse(const PGresult *r, int i, struct db_handoff *h)
{
  memset(h, 0, sizeof *h);
  h->from_node = (unsigned)col_i64(r, i, 1);
  h->msg_id = (uint64_t)strtoll(PQgetvalue(r, i, 2), NULL, 10);
  str_copy(h->origin_connector, sizeof h->origin_connector, PQgetvalue(r, i, 3));
  str_copy(h->origin_user, sizeof h->origin_user, PQgetvalue(r, i, 4));
  str_copy(h->target_connector, sizeof h->target_connector, PQgetvalue(r, i, 5));
  str_copy(h->smsc_id, sizeof h->smsc_id, PQgetvalue(r, i, 6));
  str_copy(h->receipt.id, sizeof h->receipt.id, PQgetvalue(r, i, 7));
  h->receipt.state = (uint8_t)col_i64(r, i, 8);
  h->receipt.err = (uint16_t)col_i64(r, i, 9);
  h->receipt.submit_time = col_i64(r, i, 10);
  h->receipt.done_time = col_i64(r, i, 11);
  str_copy(h->receipt.src.addr, sizeof h->receipt.src.addr, PQgetvalue(r, i, 12));
  h->receipt.src.ton = (uint8_t)col_i64(r, i, 13);
  h->receipt.src.npi = (uint8_t)col_i64(r, i, 14);
  str_copy(h->receipt.dst.addr, sizeof h->receipt.dst.addr, PQgetvalue(r, i, 15));
  h->receipt.dst.ton = (uint8_t)col_i64(r, i, 16);
  h->receipt.dst.npi = (uint8_t)col_i64(r, i, 17);
  h->dlr_mask = (uint8_t)col_i64(r, i, 18);
}

int db_receipt_claim(struct db *db, unsigned node_id, unsigned max,
                     int (*take)(void *ctx, const struct db_handoff *h), int (*settle)(void *ctx),
                     void *ctx, char *err, size_t err_len)
{
  char node[16], limit[16];
  snprintf(node, sizeof node, "%u", node_id);
  snprintf(limit, sizeof limit, "%u", max);
  const char *const params[] = { node, limit };
  PGresult *r = NULL;
  struct bytebuf taken = { 0 };
  int n = 0, rc;
  pthread_mutex_lock(&db->lock);
  db_conn_rollback(&db->conn);
  if ((rc = db_query(db, "BEGIN", 0, NULL, NULL, err, err_len)) < 0)
    goto out;
  rc = db_query(db,
                "SELECT seq, from_node, msg_id, origin_connector, origin_user, target_connector, smsc_id,"
                " receipt_id, state, error_code, submit_time, done_time, src_addr, src_ton, src_npi,"
                " dst_addr, dst_ton, dst_npi, dlr_mask FROM receipt_handoff WHERE to_node = $1 ORDER BY seq"
                " LIMIT $2 FOR UPDATE SKIP LOCKED",
                2, params, &r, err, err_len);
  if (rc < 0)
    goto out;
  /* The sequence numbers of the receipts taken, as an array literal for
   * the DELETE's one parameter. */
  if (db_buf_reserve(&taken, (size_t)PQntuples(r) * 21 + 3) < 0) {
    db_err_set(err, err_len, "out of memory");
    rc = DB_E_NOMEM;
    goto out;
  }
  taken.p[taken.len++] = '{';
  for (int i = 0; i < PQntuples(r); i++) {
    struct db_handoff h;
    handoff_parse(r, i, &h);
    if (take(ctx, &h) != 0)
      break;
    const char *seq = PQgetvalue(r, i, 0);
    size_t len = strlen(seq);
    if (n)
      taken.p[taken.len++] = ',';
    memcpy(taken.p + taken.len, seq, len);
    taken.len += len;
    n++;
  }
  taken.p[taken.len++] = '}';
  taken.p[taken.len] = '\0';
  if (n && settle && settle(ctx) != 0) {
    db_err_set(err, err_len, "the receipts taken could not be made durable here");
    rc = DB_E_IO;
    goto out;
  }
  if (n) {
    const char *const seqs[] = { (const char *)taken.p };
    if ((rc = db_query(db, "DELETE FROM receipt_handoff WHERE seq = ANY ($1::bigint[])", 1, seqs, NULL, err,
                       err_len)) < 0)
      goto out;
  }
  rc = db_query(db, "COMMIT", 0, NULL, NULL, err, err_len);
out:
  if (rc < 0)
    db_conn_rollback(&db->conn);
  pthread_mutex_unlock(&db->lock);
  PQclear(r);
  bytebuf_free(&taken);
  return rc < 0 ? rc : n;
}
