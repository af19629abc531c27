/* spool.c - the journal that makes an acked message survive any crash:
 * opening and closing it, its listeners and figures, and the writer thread
 * that commits what is appended (spool_append.c) and keeps the live state.
 *
 * Group commit: appenders encode outside the lock, then copy into `pending`
 * and take a ticket (the count of records appended so far). The writer swaps
 * `pending` for its own `batch`, seals its records (their CRCs, now that it
 * knows their segment), writes it with one pwritev and one fdatasync,
 * publishes the batch's last ticket as durable, and only then walks the
 * batch to update what is live. Everything about segments and liveness is
 * therefore owned by the writer thread alone and needs no lock.
 *
 * Liveness: a map id -> (segment of its MSG, segment of its SENT) and one
 * id -> segment of its RECEIPT; each segment counts the live records it holds.
 * A copy of a message that finished meanwhile (see spool_compact.c) is
 * killed again by a fresh FINISHED, so that deleting the first FINISHED
 * cannot bring it back.
 *
 * The rest of the journal: spool_append.c (appends into pending, their
 * tickets, the durable one), spool_record.h (the record format and its
 * encoding), spool_segment.c (the segment files: opening, zeros ahead,
 * writing a commit), spool_compact.c (deleting and compacting segments,
 * and the credit snapshots taken before anything is deleted),
 * spool_replay.c (reading them back at start), spool_internal.h (what
 * they share).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "spool.h"
#include "spool_internal.h"
#include "spool_record.h"

#define RETRY_MS 500
/* Records arriving at this rate or faster (bytes per ms: about 140,000
 * messages a second of the reference test) double the pacing interval,
 * to COMMIT_BUSY_MIN_US at least. */
#define COMMIT_BUSY_BYTES_PER_MS (64u << 10)
#define COMMIT_BUSY_MIN_US 2000
#define PREFETCH_RECORDS 8

int spool_on_durable(struct spool *s, void (*fn)(void *arg), void *arg)
{
  int rc = -1;
  pthread_mutex_lock(&s->listeners_lock);
  unsigned n = atomic_load(&s->nlisteners);
  if (n < MAX_LISTENERS) {
    s->listeners[n] = (struct listener){ fn, arg };
    atomic_store_explicit(&s->nlisteners, n + 1, memory_order_release);
    rc = 0;
  }
  pthread_mutex_unlock(&s->listeners_lock);
  return rc;
}

void spool_forget_listeners(struct spool *s)
{
  pthread_mutex_lock(&s->listeners_lock);
  atomic_store(&s->nlisteners, 0);
  pthread_mutex_unlock(&s->listeners_lock);
}

void spool_stats(const struct spool *s, struct spool_stats *out)
{
  struct spool *m = (struct spool *)s;
  pthread_mutex_lock(&m->lock);
  *out = m->stats;
  out->failed = m->failing;
  snprintf(out->last_error, sizeof out->last_error, "%s", m->why);
  pthread_mutex_unlock(&m->lock);
  out->durable_ticket = spool_durable(s);
}

/* ---- the writer ---- */

/* Kill records the writer owes (a copy of something that died meanwhile). */
static void kill_add(struct bytebuf *kills, enum spool_record_type type, uint64_t id)
{
  if (buf_reserve(kills, HDR_LEN + 8) == 0)
    kills->len += record_encode(kills->p + kills->len, &(struct spool_record){ .type = type, .id = id });
}

/* Moves a live record's segment from *seg to seq. */
static void live_move(struct spool *s, uint32_t *seg, uint32_t seq)
{
  if (*seg != SEG_NONE)
    seg_live_add(s, *seg, -1);
  *seg = seq;
  seg_live_add(s, seq, 1);
}

/* Applies one durable record, written to segment seq, to the live state. */
static void live_apply(struct spool *s, const uint8_t *rec, uint32_t seq, struct bytebuf *kills)
{
  uint64_t id = record_id(rec);
  bool copy = rec[13] & COPY_FLAG;
  struct idmap_entry *e;
  switch (rec[12]) {
  case SPOOL_REC_MSG:
    if (id > s->ids_mark)
      s->ids_mark = id;
    e = idmap_find(&s->msgs, id);
    if (e)
      live_move(s, &e->a, seq);
    else if (copy)
      kill_add(kills, SPOOL_REC_FINISHED, id);
    else if ((e = idmap_insert(&s->msgs, id)))
      live_move(s, &e->a, seq);
    break;
  case SPOOL_REC_SENT:
    if ((e = idmap_find(&s->msgs, id)))
      live_move(s, &e->b, seq);
    break;
  case SPOOL_REC_FINISHED:
    if ((e = idmap_find(&s->msgs, id))) {
      seg_live_add(s, e->a, -1);
      if (e->b != SEG_NONE)
        seg_live_add(s, e->b, -1);
      idmap_remove(&s->msgs, e);
    }
    break;
  case SPOOL_REC_RECEIPT:
  case SPOOL_REC_UNRESOLVED:
    e = idmap_find(&s->receipts, id);
    if (e)
      live_move(s, &e->a, seq);
    else if (copy)
      kill_add(kills, SPOOL_REC_RECEIPT_DONE, id);
    else if ((e = idmap_insert(&s->receipts, id)))
      live_move(s, &e->a, seq);
    break;
  case SPOOL_REC_RECEIPT_DONE:
    if ((e = idmap_find(&s->receipts, id))) {
      seg_live_add(s, e->a, -1);
      idmap_remove(&s->receipts, e);
    }
    break;
  case SPOOL_REC_IDS:
    if (id > s->ids_mark)
      s->ids_mark = id;
    break;
  }
}

/* Starts loading the id map entry of the record at off; returns the next
 * record's offset. */
static size_t live_prefetch(const struct spool *s, const uint8_t *batch, size_t off)
{
  const uint8_t *rec = batch + off;
  const struct idmap *m = in_receipts_map(rec[12]) ? &s->receipts : &s->msgs;
  __builtin_prefetch(&m->slots[idmap_home(m, record_id(rec))], 1);
  return off + record_len(rec);
}

static void stats_publish(struct spool *s)
{
  uint64_t disk = 0, spare = 0;
  for (size_t i = 0; i < s->nsegs; i++)
    disk += s->segs[i].bytes;
  for (size_t i = 0; i < s->nspares; i++)
    spare += s->spares[i].bytes;
  pthread_mutex_lock(&s->lock);
  s->stats.records = s->records_written;
  s->stats.bytes = s->bytes_written;
  s->stats.fsyncs = s->fsyncs;
  s->stats.segments = s->nsegs;
  s->stats.segments_deleted = s->segments_deleted;
  s->stats.segments_reused = s->segments_reused;
  s->stats.compacted = s->compacted;
  s->stats.live_messages = s->msgs.count;
  s->stats.live_receipts = s->receipts.count;
  s->stats.disk_bytes = disk + spare;
  s->stats.spare_bytes = spare;
  pthread_mutex_unlock(&s->lock);
}

/* Deletes what is dead, compacts when due, and shows the result. */
static void segments_maintain(struct spool *s, bool idle)
{
  spool_segments_delete(s);
  spool_compact_maybe(s, idle);
  stats_publish(s);
}

/* Writes the batch; on success publishes it, then maintains the segments.
 * On failure the batch is kept for the retry and the spool is failing. */
static void batch_commit(struct spool *s)
{
  char why[256];
  if (spool_segment_write(s, s->batch.p, s->batch.len, why, sizeof why) < 0) {
    spool_spares_drop(s);   /* their space is ours to give back: the disk may be full */
    pthread_mutex_lock(&s->lock);
    s->failing = true;
    snprintf(s->why, sizeof s->why, "%s", why);
    pthread_mutex_unlock(&s->lock);
    return;
  }
  pthread_mutex_lock(&s->lock);
  s->failing = false;
  pthread_mutex_unlock(&s->lock);
  atomic_store(&s->durable, s->batch_last);
  pthread_mutex_lock(&s->listeners_lock);
  unsigned n = atomic_load_explicit(&s->nlisteners, memory_order_acquire);
  for (unsigned i = 0; i < n; i++)
    s->listeners[i].fn(s->listeners[i].arg);
  pthread_mutex_unlock(&s->listeners_lock);

  struct bytebuf kills = { NULL, 0, 0 };
  uint64_t records = 0;
  /* The id maps hold every live message: far bigger than the caches, so
   * each record's entry is fetched a few records ahead of its turn. */
  size_t ahead = 0;
  for (unsigned i = 0; i < PREFETCH_RECORDS && ahead < s->batch.len; i++)
    ahead = live_prefetch(s, s->batch.p, ahead);
  for (size_t off = 0; off < s->batch.len; off += record_len(s->batch.p + off), records++) {
    if (ahead < s->batch.len)
      ahead = live_prefetch(s, s->batch.p, ahead);
    live_apply(s, s->batch.p + off, s->cur_seq, &kills);
  }
  s->segs[s->nsegs - 1].records += records;
  s->records_written += records;
  s->batch.len = 0;
  if (kills.len)
    s->hold_ticket = spool_pending_add(s, kills.p, kills.len, (unsigned)(kills.len / (HDR_LEN + 8)), false);
  free(kills.p);
  spool_segment_prepare(s);
  segments_maintain(s, false);
}

/* Waits on wake (the lock held) for at most us; returns as
 * pthread_cond_timedwait. */
static int cond_wait_us(struct spool *s, long us)
{
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_nsec += us * 1000L;
  until.tv_sec += until.tv_nsec / 1000000000L;
  until.tv_nsec %= 1000000000L;
  return pthread_cond_timedwait(&s->wake, &s->lock, &until);
}

/* How long until the pacing interval has passed since the last commit
 * began: commit_interval_us; while records come fast, twice that and
 * COMMIT_BUSY_MIN_US at least. A commit costs the same CPU (a write, an
 * fdatasync, wake-ups) however much it carries, and under full load the
 * CPU is what limits; when records come slower, the short interval keeps
 * acks quick. */
static int64_t pacing_left_us(const struct spool *s)
{
  int64_t interval = (int64_t)s->opt.commit_interval_us;
  if (s->busy)
    interval = 2 * interval > COMMIT_BUSY_MIN_US ? 2 * interval : COMMIT_BUSY_MIN_US;
  return interval - ((int64_t)clock_now_ns() / 1000 - s->commit_started_us);
}

static void *writer_main(void *arg)
{
  struct spool *s = arg;
  pthread_mutex_lock(&s->lock);
  for (;;) {
    if (s->failing) {
      bool last = s->stopping;
      if (!last)
        cond_wait_us(s, RETRY_MS * 1000L);
      pthread_mutex_unlock(&s->lock);
      batch_commit(s);
      pthread_mutex_lock(&s->lock);
      if (last && s->failing)
        break;
      continue;
    }
    if (s->pending.len == 0) {
      if (s->stopping)
        break;
      /* Within the pacing interval of the last commit nothing could be
       * committed yet anyway: sleep it out without asking appenders to
       * wake us (a wake-up and a futex call per commit under load). */
      int64_t pace_us = pacing_left_us(s);
      if (pace_us > 0) {
        s->writer_pacing = true;
        cond_wait_us(s, (long)pace_us);
        s->writer_pacing = false;
        continue;
      }
      s->writer_idle = true;
      int rc = cond_wait_us(s, RETRY_MS * 1000L);
      s->writer_idle = false;
      if (rc == ETIMEDOUT && s->pending.len == 0 && !s->stopping) {
        /* Idle: the moment to compact, which nothing else would trigger. */
        pthread_mutex_unlock(&s->lock);
        segments_maintain(s, true);
        pthread_mutex_lock(&s->lock);
      }
      continue;
    }
    /* Pacing: a small batch waits out the rest of commit_interval_us since
     * the last commit began, so that a commit (a write, an fsync, and the
     * wake-ups of every thread waiting for it) carries many records. A
     * batch of COMMIT_FULL_BYTES goes at once. */
    int64_t wait_us = pacing_left_us(s);
    if (wait_us > 0 && s->pending.len < COMMIT_FULL_BYTES && !s->stopping) {
      s->writer_pacing = true;
      cond_wait_us(s, (long)wait_us);
      s->writer_pacing = false;
      continue;
    }
    int64_t now_us = (int64_t)clock_now_ns() / 1000;
    s->busy = (uint64_t)s->pending.len * 1000 >= (uint64_t)COMMIT_BUSY_BYTES_PER_MS * (uint64_t)(now_us - s->commit_started_us);
    s->commit_started_us = now_us;
    struct bytebuf full = s->pending;
    s->pending = s->batch;
    s->batch = full;
    s->batch_last = s->next_ticket;
    pthread_cond_broadcast(&s->space);
    pthread_mutex_unlock(&s->lock);
    batch_commit(s);
    pthread_mutex_lock(&s->lock);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

/* ---- opening and closing ---- */

#define CEILING_FILE "scts_ceiling"       /* spool_note_scts_ceiling's file in the spool's directory */
#define FLOOR_FILE "scts_floor"           /* what versions before it noted: the floor they stamped from */

/* The second noted in the spool's directory as name, 0 when none (or unreadable). */
static int64_t second_read(const char *dir, const char *name)
{
  char path[4096], text[32] = "";
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  text[n > 0 ? n : 0] = '\0';
  return strtoll(text, NULL, 10);
}

static void spool_free(struct spool *s)
{
  if (s->direct_fd >= 0)
    close(s->direct_fd);
  if (s->fd >= 0)
    close(s->fd);
  if (s->dirfd >= 0)
    close(s->dirfd);
  idmap_free(&s->msgs);
  idmap_free(&s->receipts);
  free(s->segs);
  free(s->pending.p);
  free(s->batch.p);
  free(s->dir);
  pthread_mutex_destroy(&s->lock);
  pthread_mutex_destroy(&s->listeners_lock);
  pthread_cond_destroy(&s->wake);
  pthread_cond_destroy(&s->space);
  free(s);
}

struct spool *spool_open(const char *dir, const struct spool_options *opt,
                         void (*replay)(void *ctx, const struct spool_record *rec),
                         void (*warn)(void *ctx, const char *text), void *ctx, char *err, size_t err_len)
{
  struct spool *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, err_len, "out of memory");
    return NULL;
  }
  s->fd = s->dirfd = s->direct_fd = -1;
  s->opt = *opt;
  if (!s->opt.segment_size)
    s->opt.segment_size = 64u << 20;
  if (!s->opt.commit_interval_us)
    s->opt.commit_interval_us = 500;
  if (!s->opt.compact_after_ms)
    s->opt.compact_after_ms = 30000;
  pthread_mutex_init(&s->lock, NULL);
  pthread_mutex_init(&s->listeners_lock, NULL);
  pthread_cond_init(&s->wake, NULL);
  pthread_cond_init(&s->space, NULL);
  char why[256];
  if (!(s->dir = strdup(dir)) || idmap_init(&s->msgs, 1024) < 0 || idmap_init(&s->receipts, 1024) < 0) {
    snprintf(err, err_len, "out of memory");
    goto fail;
  }
  if ((mkdir(dir, 0755) < 0 && errno != EEXIST) ||
      (s->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
    snprintf(err, err_len, "%s: %s", dir, strerror(errno));
    goto fail;
  }
  if (spool_replay_all(s, replay, warn, ctx, err, err_len) < 0)
    goto fail;
  s->previous_floor_s = second_read(dir, FLOOR_FILE);
  s->previous_ceiling_s = second_read(dir, CEILING_FILE);
  /* A fresh segment for this run, its IDS record durable before anything. */
  if (spool_segment_write(s, NULL, 0, why, sizeof why) < 0) {
    snprintf(err, err_len, "%s", why);
    goto fail;
  }
  /* With credit this calls the hook, here on the caller's thread, and
   * leaves the deletion to the writer once the snapshot is durable. */
  spool_segments_delete(s);
  stats_publish(s);
  if (pthread_create(&s->writer, NULL, writer_main, s) == 0) {
    pthread_setname_np(s->writer, "emg-journal");
  } else {
    snprintf(err, err_len, "cannot start the spool writer");
    goto fail;
  }
  return s;
fail:
  spool_free(s);
  return NULL;
}

void spool_close(struct spool *s)
{
  if (!s)
    return;
  pthread_mutex_lock(&s->lock);
  s->stopping = true;
  pthread_cond_broadcast(&s->wake);
  pthread_cond_broadcast(&s->space);
  pthread_mutex_unlock(&s->lock);
  pthread_join(s->writer, NULL);
  spool_segment_close(s);
  spool_free(s);
}

int64_t spool_previous_write(const struct spool *s)
{
  return s->previous_write_s;
}

int64_t spool_previous_floor(const struct spool *s)
{
  return s->previous_floor_s;
}

int64_t spool_previous_scts_ceiling(const struct spool *s)
{
  return s->previous_ceiling_s;
}

/* Written to a temporary file, synced, renamed over the old one, and the
 * directory synced: after a crash the file holds this ceiling or the last.
 * The first note makes an earlier version's floor file useless: it goes. */
int spool_note_scts_ceiling(struct spool *s, int64_t second, char *err, size_t err_len)
{
  char path[4096], tmp[4096], text[32];
  snprintf(path, sizeof path, "%s/" CEILING_FILE, s->dir);
  snprintf(tmp, sizeof tmp, "%s/" CEILING_FILE ".new", s->dir);
  int n = snprintf(text, sizeof text, "%" PRId64 "\n", second);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok = fd >= 0 && write(fd, text, (size_t)n) == n && fsync(fd) == 0;
  if (fd >= 0)
    close(fd);
  ok = ok && rename(tmp, path) == 0 && fsync(s->dirfd) == 0;
  if (!ok) {
    snprintf(err, err_len, "%.200s: %s", path, strerror(errno));
    return -1;
  }
  if (s->previous_floor_s) {
    unlinkat(s->dirfd, FLOOR_FILE, 0);
    s->previous_floor_s = 0;
  }
  return 0;
}
