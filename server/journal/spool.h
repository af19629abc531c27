/* spool.h - the journal that makes an acked message survive any crash.
 *
 * Every accepted message, every SMSC id learnt, every receipt received and
 * every receipt delivered is appended as a record to segment files in
 * spool_dir. One writer thread writes what all threads appended meanwhile
 * and makes it durable with one fsync (group commit); a caller that must
 * not ack before its record is durable waits for its ticket.
 *
 * Records carry a checksum: at start-up a torn record at the tail of the
 * last segment (a crash mid-write) is cut off; a bad record elsewhere is
 * reported with its file and offset, skipped, and the rest is recovered.
 * Segments whose records are all finished are deleted (the files of the
 * last two are kept and overwritten by the next ones); compaction copies
 * the few live records out of old segments so that disk use follows what
 * is live, not what has passed through.
 *
 * Credit: a MSG record may carry the credit epoch of its account when its
 * credit was taken, and CREDIT records hold snapshots of the accounts'
 * credit. Before it deletes anything, the writer has a snapshot written
 * and made durable (spool_options.credit_snapshot), so that the MSG
 * records a snapshot does not cover are all still in the journal.
 *
 * Thread-safe: any thread may append; one writer thread owns the files.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_SPOOL_H
#define EMG_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "bytebuf.h"
#include "msg.h"

/* What a record says. Message ids tie the records of one message together. */
enum spool_record_type {
  SPOOL_REC_MSG = 1,        /* a message accepted: the whole struct msg and its payload; queued for `target` */
  SPOOL_REC_SENT = 2,       /* msg_id accepted by an SMSC on connector `target` as smsc_id (its DLR entry) */
  SPOOL_REC_FINISHED = 3,   /* msg_id needs nothing more (sent without receipt wanted, failed, final receipt passed on) */
  SPOOL_REC_RECEIPT = 4,    /* a receipt for an origin, queued (receipt_id ties it to its RECEIPT_DONE) */
  SPOOL_REC_RECEIPT_DONE = 5, /* receipt_id delivered to its origin */
  SPOOL_REC_IDS = 6,        /* ids up to `id` may have been handed out: never reuse them */
  SPOOL_REC_UNRESOLVED = 7, /* a receipt from an SMSC on connector `target` that no DLR entry here
                               matched (smsc_id: its key), being resolved through the database;
                               receipt_id ties it to its RECEIPT_DONE */
  SPOOL_REC_CREDIT = 8,     /* a snapshot of account `user`'s credit: never live, never copied by
                               compaction; every one is replayed */
  SPOOL_REC_CREDIT_PART = 9 /* replayed only, never written: a part that took credit (`user` its
                               account, credit_epoch its tag), for every first MSG record of it
                               still on disk, finished or live. A compaction copy is never one:
                               its original went, so a snapshot covers it */
};

/* One record, as appended and as replayed. Pointers are the caller's on
 * append (copied before spool_append returns) and the spool's on replay
 * (valid during the callback). */
struct spool_record {
  enum spool_record_type type;
  uint64_t id;              /* msg id (MSG, SENT, FINISHED), receipt id (RECEIPT, RECEIPT_DONE,
                               UNRESOLVED), high-water mark (IDS); CREDIT: 0 */
  uint16_t target;          /* MSG: the connector it is queued for; SENT: the connector that sent it;
                               RECEIPT: the origin connector; UNRESOLVED: the connector it came on */
  const struct msg *msg;    /* MSG */
  bool moved;               /* MSG: the same message again, now queued for `target` (drained or
                               rerouted); written as a copy, so that replay takes the later
                               record and counts its credit once */
  const char *smsc_id;      /* SENT, UNRESOLVED: normalised, as the DLR table keys it;
                               RECEIPT: the SMSC's id as it sent it (HTTP origins); NULL = none */
  const struct msg_receipt *receipt; /* RECEIPT, UNRESOLVED */
  const char *user;         /* RECEIPT: the origin account; CREDIT: the account */
  const char *callback;     /* RECEIPT: the origin's receipt callback URL (HTTP); NULL = none */
  uint8_t callback_method;  /* RECEIPT: enum msg_callback_method */
  uint16_t via;             /* RECEIPT: 1 + the connector the receipt came through; 0 = unknown */
  /* CREDIT: the credit last set, what was left of it, and the epoch the
   * snapshot closed: parts tagged with it or an earlier one are counted in
   * credit_left, parts tagged later are not. */
  int64_t credit_set, credit_left;
  uint32_t credit_epoch;
};

struct spool_options {
  size_t segment_size;      /* bytes per segment file before a new one starts; 0 = 64 MiB */
  unsigned commit_interval_us; /* least time from one commit's start to the next unless a
                               batch fills up: fewer, larger commits; 0 = 500 */
  unsigned compact_after_ms; /* under load, a segment is compacted only this long after it filled
                               (most of what it holds finishes by itself meanwhile); idle, at
                               once. 0 = 30000 */
  bool sync;                /* false: write but never fsync (tests, benchmarks of the rest) */
  /* Credit snapshots: called on the writer thread before it deletes a
   * segment or compacts records away; it appends, through emit, one CREDIT
   * record per account that has credit. The writer makes those records
   * durable before it removes anything, so a MSG record whose credit no
   * durable snapshot covers is never lost. NULL = no credit.
   * The first call can come from spool_open itself, on its caller's
   * thread, once every record has been replayed (before it deletes what
   * replay found finished); the last, from spool_close. emit may be called
   * only during the call; the hook must call no other spool function. No
   * thread may hold a lock the hook takes while it appends: an append may
   * wait for the writer. */
  void (*credit_snapshot)(void *ctx, void (*emit)(void *emit_ctx, const struct spool_record *rec),
                          void *emit_ctx);
  void *credit_ctx;
};

struct spool_stats {
  uint64_t records, bytes, fsyncs, segments, segments_deleted, compacted;
  uint64_t segments_reused;  /* segments written into the file of a deleted one */
  uint64_t durable_ticket;
  uint64_t live_messages, live_receipts;
  uint64_t disk_bytes;      /* on disk now, spare files included */
  uint64_t spare_bytes;     /* deleted segments' files kept to be reused (at most two) */
  bool failed;              /* the last write or fsync failed (disk full, I/O error) */
  char last_error[256];
};

struct spool;

/* Opens (creating if needed) the spool in dir and replays it: for every
 * record still live, in order, replay(ctx, record) is called, so the caller
 * rebuilds its queues, DLR table and id allocator; every CREDIT record is
 * passed too, in journal order (keep the highest epoch per account).
 * Corruption is reported through warn(ctx, text) ("FILE at offset N: ...")
 * and skipped. Then the writer thread starts. NULL with a reason in err when
 * dir cannot be used. */
struct spool *spool_open(const char *dir, const struct spool_options *opt,
                         void (*replay)(void *ctx, const struct spool_record *rec),
                         void (*warn)(void *ctx, const char *text), void *ctx, char *err, size_t err_len);

/* Writes what is pending, stops the writer, closes the files. */
void spool_close(struct spool *s);

/* Appends one record. Returns its ticket (> 0): it is durable once
 * spool_durable() reaches it. Returns 0 when the spool is failing (disk
 * full, I/O error): the caller must refuse what the record was for. */
uint64_t spool_append(struct spool *s, const struct spool_record *rec);

/* Records one thread gathers and appends at once: one lock and one copy
 * into the journal for all of them instead of one per record. */
struct spool_batch {
  struct bytebuf records;
  unsigned count;
};

/* Encodes rec at the end of b. Returns 0, or -1 when the spool is failing
 * (the caller refuses what the record was for) or memory is short. */
int spool_batch_add(struct spool *s, struct spool_batch *b, const struct spool_record *rec);

/* Appends b's records, in order, and empties b. Returns the last one's
 * ticket (all are durable once spool_durable() reaches it), or 0 when the
 * spool is failing and refused them all; also 0 for an empty batch. */
uint64_t spool_batch_append(struct spool *s, struct spool_batch *b);

void spool_batch_free(struct spool_batch *b);

/* The highest ticket that is durable now. */
uint64_t spool_durable(const struct spool *s);

/* The ticket of the last record appended so far (by any thread): once it
 * is durable, so is everything appended before this call. */
uint64_t spool_appended(struct spool *s);

/* Asks for fn(arg) to be called from the writer thread each time the
 * durable ticket advances (e.g. evloop_wake of a waiting instance). At most
 * a few dozen listeners; returns 0 or -1. */
int spool_on_durable(struct spool *s, void (*fn)(void *arg), void *arg);

/* Drops every listener; once it returns, none is being called or will be
 * (their owners may free what they were given). */
void spool_forget_listeners(struct spool *s);

/* Whether appends are being refused now (a write failed: disk full or an
 * I/O error), and why when why is given (the spool retries by itself and
 * resumes when it can write again). Without why, lock-free: for the
 * message path. */
bool spool_failing(const struct spool *s, char *why, size_t why_len);

void spool_stats(const struct spool *s, struct spool_stats *out);

/* When the previous process last wrote to the spool (the newest
 * modification time of its segments when it was opened), Unix seconds; 0
 * for a new spool. */
int64_t spool_previous_write(const struct spool *s);
/* The floor a process of an earlier version noted (the time it stamped UCP
 * SCTS from), Unix seconds; 0 when none. */
int64_t spool_previous_floor(const struct spool *s);
/* The SCTS ceiling the previous process noted with spool_note_scts_ceiling,
 * Unix seconds; 0 when none. */
int64_t spool_previous_scts_ceiling(const struct spool *s);
/* Notes durably (in spool_dir) that this process hands out no UCP SCTS
 * past second, for the next one. 0, or -1 with a reason in err. */
int spool_note_scts_ceiling(struct spool *s, int64_t second, char *err, size_t err_len);

/* Takes dir's lock (dir/emgd.lock, created with dir when missing) for the
 * life of the process and writes our PID into it: one emgd per spool.
 * Returns the lock's descriptor (kept open: closing it lets go), or -1
 * with the reason in err, naming the PID that holds it. */
int spool_lock(const char *dir, char *err, size_t err_len);
/* Whether another process holds dir's lock, touching nothing: 1 with the
 * holder named in err, else 0. */
int spool_lock_check(const char *dir, char *err, size_t err_len);

#endif
