/* spool_compact.c - giving the disk back: deleting the oldest segments
 * once they hold nothing live (their files kept as spares to reuse), and
 * compacting the oldest when little of it is live.
 *
 * Segments are deleted oldest first, only once empty: a FINISHED record must
 * outlive every older segment, since it is what kills the MSG there. The
 * oldest segment is compacted (its live records re-appended with the COPY
 * flag) when little of it, or of the whole spool, is live; when the copies
 * are durable the old segment holds nothing live and goes.
 *
 * Credit: nothing leaves the disk but by deleting a segment (compaction
 * only copies; what it leaves behind goes with its segment), so the credit
 * snapshot is taken here, before deletion: the segments go once a durable
 * snapshot covers them. One taken when the next commit goes to segment N
 * covers every segment below N, whose records were all appended before
 * the hook ran, so their credit is counted in it. CREDIT records are never
 * live: compaction leaves them, and they go with their segment once a
 * newer snapshot covers it.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "clock.h"
#include "spool_internal.h"
#include "spool_record.h"

#define COMPACT_IDLE_BYTES (1u << 20)    /* compact only while less than this waits */
#define COMPACT_CHUNK (1u << 20)          /* bytes of a segment compaction reads at a time */

struct credit_emission {
  struct bytebuf records;
  unsigned count;
  bool failed;
};

/* The hook's emit: into a buffer of the writer's, since the hook runs on
 * the writer, which nothing here may wait for. */
static void credit_emit(void *ctx, const struct spool_record *rec)
{
  struct credit_emission *e = ctx;
  struct spool_record r = *rec;
  r.type = SPOOL_REC_CREDIT;
  r.id = 0;   /* replay consumers take ids for message ids */
  if (buf_reserve(&e->records, record_bound(&r)) < 0) {
    e->failed = true;
    return;
  }
  e->records.len += record_encode(e->records.p + e->records.len, &r);
  e->count++;
}

/* How many of the n oldest segments (all finished) a durable credit
 * snapshot covers. When some are left and no snapshot is on its way, asks
 * for one: they go once it is durable. */
static size_t credit_covered(struct spool *s, size_t n)
{
  if (s->credit_ticket && spool_durable(s) >= s->credit_ticket) {
    s->credit_below = s->credit_next;
    s->credit_ticket = 0;
  }
  size_t covered = 0;
  while (covered < n && s->segs[covered].seq < s->credit_below)
    covered++;
  if (covered == n || s->credit_ticket)
    return covered;
  uint32_t next = spool_segment_next_seq(s);
  struct credit_emission e = { { NULL, 0, 0 }, 0, false };
  s->opt.credit_snapshot(s->opt.credit_ctx, credit_emit, &e);
  /* Out of memory, a snapshot would lack some account, whose last record
   * could then go: none, and another try at the next occasion. */
  if (!e.failed && !e.count) {
    s->credit_below = next;   /* no account has credit: nothing to keep */
    covered = n;
  } else if (!e.failed) {
    s->credit_ticket = spool_pending_add(s, e.records.p, e.records.len, e.count, false);
    s->credit_next = next;
  }
  free(e.records.p);
  return covered;
}

/* Deletes the oldest segments while they hold nothing live; with credit,
 * those a durable snapshot covers. */
void spool_segments_delete(struct spool *s)
{
  size_t n = 0, dead = 0;
  if (spool_durable(s) < s->hold_ticket)
    return;
  while (dead + 1 < s->nsegs && s->segs[dead].live == 0)
    dead++;
  if (dead && s->opt.credit_snapshot)
    dead = credit_covered(s, dead);
  while (n < dead) {
    const struct segment *g = &s->segs[n];
    char path[4096], spare[4096];
    spool_seg_path(s, g->seq, path, sizeof path);
    spool_spare_path(s, g->seq, spare, sizeof spare);
    /* Seedless segments (written before seeds) are not reused: their old
     * records would validate in a new life. */
    if (g->seed && s->nspares < SPARES_MAX && !s->failing && rename(path, spare) == 0) {
      s->spares[s->nspares++] = (struct spare){ g->seq, g->bytes };
    } else if (unlink(path) < 0 && errno != ENOENT) {
      break;
    }
    n++;
  }
  if (!n)
    return;
  fsync(s->dirfd);   /* best effort: a deleted segment that comes back (as .seg) holds only dead records */
  memmove(s->segs, s->segs + n, (s->nsegs - n) * sizeof *s->segs);
  s->nsegs -= n;
  s->segments_deleted += n;
}

struct compaction {
  struct spool *s;
  uint32_t seq;
  struct bytebuf copies;
  unsigned count;
};

static void compact_record(void *ctx, const uint8_t *rec)
{
  struct compaction *c = ctx;
  uint64_t id = record_id(rec);
  const struct idmap_entry *e = NULL;
  bool live = false;
  switch (rec[12]) {
  case SPOOL_REC_MSG:
    live = (e = idmap_find(&c->s->msgs, id)) && e->a == c->seq;
    break;
  case SPOOL_REC_SENT:
    live = (e = idmap_find(&c->s->msgs, id)) && e->b == c->seq;
    break;
  case SPOOL_REC_RECEIPT:
  case SPOOL_REC_UNRESOLVED:
    live = (e = idmap_find(&c->s->receipts, id)) && e->a == c->seq;
    break;
  }
  size_t len = record_len(rec);
  /* CREDIT records are never live: a newer snapshot stands for them. */
  if (!live || buf_reserve(&c->copies, len) < 0)
    return;
  uint8_t *copy = c->copies.p + c->copies.len;
  memcpy(copy, rec, len);
  copy[13] |= COPY_FLAG;   /* sealed again, with its new segment's seed, when written */
  c->copies.len += len;
  c->count++;
}

/* Re-appends the live records of the oldest segment when little of it, or
 * of the whole spool, is live, and the spool has a moment. Under load only
 * once the segment has been full for compact_after_ms: until then most of
 * its live records finish by themselves (receipts come within seconds), and
 * reading a whole segment to copy them would cost more than waiting. */
void spool_compact_maybe(struct spool *s, bool idle)
{
  if (spool_durable(s) < s->compact_ticket)
    return;
  /* Idle, a current segment past half its size that holds little live is
   * closed, to be compacted like the older ones: else what a burst left
   * there would stay on disk until the next burst. */
  const struct segment *last = s->nsegs ? &s->segs[s->nsegs - 1] : NULL;
  if (idle && s->fd >= 0 && last && s->file_off >= s->opt.segment_size / 2 &&
      last->live * 10ull < last->records) {
    spool_segment_close(s);
    s->cur_seq++;
  }
  /* Only closed segments are compacted: the current one is being written. */
  if (s->nsegs < (s->fd >= 0 ? 2u : 1u))
    return;
  if (!idle && (s->nsegs < 2 || (int64_t)clock_now_ms() - s->segs[1].started_ms < (int64_t)s->opt.compact_after_ms))
    return;
  const struct segment *old = &s->segs[0];
  uint64_t live = 0, records = 0;
  for (size_t i = 0; i < s->nsegs; i++) {
    live += s->segs[i].live;
    records += s->segs[i].records;
  }
  if (old->live == 0 || !(old->live * 10ull < old->records || live * 4 < records))
    return;
  pthread_mutex_lock(&s->lock);
  bool busy = s->pending.len >= COMPACT_IDLE_BYTES || s->stopping;
  pthread_mutex_unlock(&s->lock);
  if (busy)
    return;
  char path[4096];
  spool_seg_path(s, old->seq, path, sizeof path);
  struct compaction c = { s, old->seq, { NULL, 0, 0 }, 0 };
  /* Read a part at a time: a whole segment in memory would add its size
   * (64 MiB) to the process at every compaction. */
  size_t cap = COMPACT_CHUNK + HDR_LEN + RECORD_MAX;
  uint8_t *chunk = malloc(cap);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  bool whole = chunk && fd >= 0;
  for (size_t have = 0, at = 0; whole && (at < old->bytes || have);) {
    size_t want = old->bytes - at < cap - have ? old->bytes - at : cap - have;
    if (want && pread(fd, chunk + have, want, (off_t)at) != (ssize_t)want) {
      whole = false;
      break;
    }
    have += want;
    at += want;
    size_t used = spool_segment_scan(chunk, have, old->seed, at < old->bytes, path, NULL, NULL, compact_record, &c);
    if (at >= old->bytes)
      break;
    /* Nothing valid in a full buffer (damage): no record can start in its
     * first COMPACT_CHUNK bytes, since one would end inside it. */
    if (!used && have == cap)
      used = COMPACT_CHUNK;
    memmove(chunk, chunk + used, have - used);
    have -= used;
  }
  if (whole && c.count) {
    s->compact_ticket = spool_pending_add(s, c.copies.p, c.copies.len, c.count, false);
    s->compacted += s->compact_ticket ? c.count : 0;
  }
  if (fd >= 0)
    close(fd);
  free(chunk);
  free(c.copies.p);
}
