/* db_rec.h - the message log's records and batches (db_rec.c), as the
 * writer in db_log.c uses them. Only those two files include it.
 *
 * A record is one event, the same in memory and in the spill file:
 *
 *   magic u32 | checksum u32 | payload length u32 | payload
 *
 * payload: kind u8, msg_id u64, time_ms i64, src ton, src npi, dst ton,
 * dst npi, dlr_mask, segment_seq, segment_count, state (u8 each),
 * segment_ref u16, attempt u16, error u16, done_time i64, then seven strings
 * (u8 length + bytes): origin connector, origin user, origin ref, source,
 * destination, target connector, SMSC id. The checksum (over the length and
 * the payload) is filled when a record goes to the spill file.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_DB_REC_H
#define EMG_DB_REC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "bytebuf.h"
#include "db.h"

#define REC_MAGIC 0x4c424445u              /* "EDBL" */
#define REC_HDR 12
#define REC_FIXED 39
#define REC_STRINGS 7
#define REC_MAX (REC_HDR + REC_FIXED + REC_STRINGS * 256)

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

/* Encodes ev into out (REC_MAX bytes), its time being time_ms; returns the
 * record's length. The checksum is left 0. */
size_t db_rec_encode(uint8_t *out, const struct db_log_event *ev, int64_t time_ms);

/* Checks the record at p: 1 with its length in *len (and, when r is not
 * NULL, decoded into *r), 0 when more bytes are needed, -1 when p is not the
 * start of a good record. verify: check the sum too. */
int db_rec_check(const uint8_t *p, size_t avail, bool verify, size_t *len, struct rec *r);

/* The offset of the next possible record start after a bad one at p. */
size_t db_rec_resync(const uint8_t *p, size_t avail);

/* The time of the (framed) record at p. */
int64_t db_rec_time(const uint8_t *p);

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

/* Sets f up for batches of up to cap records: 0, or -1 when memory is
 * short (db_fold_free it all the same). */
int db_fold_init(struct fold *f, unsigned cap);
void db_fold_free(struct fold *f);

/* Empties f for the next batch. */
void db_fold_reset(struct fold *f);

/* Adds recs[i] to its message's row, by the merge rules of the SQL. */
void db_fold_add(struct fold *f, unsigned i);

/* ---- the batch as the database takes it ---- */

/* Bytes one row can take: seven strings escaped to at most twice their
 * length, and 20 numbers of up to 21 characters. */
#define COPY_ROW_MAX (REC_STRINGS * (2 * 255 + 3) + 20 * 22 + 8)

/* Appends row as a line of COPY text to b, which has COPY_ROW_MAX bytes of
 * room. */
void db_copy_row(struct bytebuf *b, const struct fold *f, const struct fold_row *row);

/* The writer's statements: the staging table (for each new connection),
 * the COPY into it, and the merge into message_log (in the transaction). */
extern const char db_stage_create[];
extern const char db_stage_copy[];
extern const char db_stage_merge[];

#endif
