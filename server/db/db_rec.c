/* db_rec.c - the message log's records and batches: an event encoded into a
 * record (the spill file's format, see db_rec.h) and checked when read
 * back; the fold of a batch into one row per message, by the same merge
 * rules as sql/001_init.sql; the batch's COPY text and the statements that
 * write it. No I/O, no locks: the writer in db_log.c owns the buffers.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdlib.h>
#include <string.h>
#include "crc32c.h"
#include "db_rec.h"

/* ---- records ---- */

enum { S_ORIGIN_CONN, S_ORIGIN_USER, S_ORIGIN_REF, S_SRC, S_DST, S_TARGET, S_SMSC };

static uint8_t *put_str(uint8_t *p, const char *s)
{
  size_t n = s ? strnlen(s, 255) : 0;
  *p++ = (uint8_t)n;
  if (n)
    memcpy(p, s, n);
  return p + n;
}

/* Encodes ev into out (REC_MAX bytes); returns the record's length. */
size_t db_rec_encode(uint8_t *out, const struct db_log_event *ev, int64_t time_ms)
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
int db_rec_check(const uint8_t *p, size_t avail, bool verify, size_t *len, struct rec *r)
{
  struct rec scratch;
  int f = rec_frame(p, avail, verify, len);
  if (f <= 0)
    return f;
  return rec_decode(p + REC_HDR, *len - REC_HDR, r ? r : &scratch) ? 1 : -1;
}

/* The offset of the next possible record start after a bad one. */
size_t db_rec_resync(const uint8_t *p, size_t avail)
{
  uint32_t magic = REC_MAGIC;
  const uint8_t *m = avail > 1 ? memmem(p + 1, avail - 1, &magic, 4) : NULL;
  return m ? (size_t)(m - p) : avail;
}

int64_t db_rec_time(const uint8_t *p)
{
  int64_t t;
  memcpy(&t, p + REC_HDR + 9, 8);
  return t;
}

/* ---- the fold: one row per message for a batch ---- */

int db_fold_init(struct fold *f, unsigned cap)
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

void db_fold_free(struct fold *f)
{
  free(f->recs);
  free(f->rows);
  free(f->slot_row);
  free(f->slot_gen);
  memset(f, 0, sizeof *f);
}

void db_fold_reset(struct fold *f)
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
void db_fold_add(struct fold *f, unsigned i)
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

void db_copy_row(struct bytebuf *b, const struct fold *f, const struct fold_row *row)
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
const char db_stage_create[] =
  "CREATE TEMP TABLE IF NOT EXISTS emg_log_stage ("
  " id bigint, received_ms bigint, origin_connector text, origin_user text, origin_ref text,"
  " src_addr text, src_ton smallint, src_npi smallint, dst_addr text, dst_ton smallint,"
  " dst_npi smallint, dlr_mask smallint, segment_ref integer, segment_seq smallint,"
  " segment_count smallint, attempts smallint, target_connector text, smsc_id text,"
  " sent_ms bigint, state smallint, state_ms bigint, error_code integer,"
  " receipt_state smallint, receipt_ms bigint, done_s bigint) ON COMMIT DELETE ROWS";

const char db_stage_copy[] = "COPY emg_log_stage FROM STDIN";

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

const char db_stage_merge[] =
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
