/* db_log.c - the message log (db_log_* in db.h): its lanes and their writer
 * threads.
 *
 * The log is split into lanes by message id, each with its own writer
 * thread, connection, memory and spill file (db_spill.c), so that batches
 * are written in parallel and two lanes never touch one row. A producer
 * encodes its event into a record (the spill file's format, db_rec.h) on its
 * stack and copies it into its lane's `pending` under the lane's lock.
 * The writer swaps `pending` for its own `work` buffer, folds up to
 * batch_events records into one row per message, and writes the rows in one
 * transaction: COPY into a temporary staging table, then one INSERT ...
 * SELECT ... ON CONFLICT (id) DO UPDATE. Folding first is required, not an
 * optimisation: ON CONFLICT DO UPDATE refuses to touch a row twice in one
 * statement. The fold applies the same merge rules as the SQL (a lattice:
 * see sql/001_init.sql), so the order events reach the database in, and
 * replays, do not matter.
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
#include <sys/file.h>
#include <time.h>
#include <unistd.h>
#include "bytebuf.h"
#include "clock.h"
#include "db_internal.h"
#include "db_lane.h"
#include "db_rec.h"
#include "strutil.h"

/* ---- small utilities ---- */

static int64_t wall_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The CLOCK_MONOTONIC time ms from now, for the condition variables. */
static struct timespec monotonic_in(uint64_t ms)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += (time_t)(ms / 1000);
  ts.tv_nsec += (long)(ms % 1000) * 1000000;
  if (ts.tv_nsec >= 1000000000) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000;
  }
  return ts;
}

/* ---- lanes ---- */

static int lane_event(struct lane *log, const struct db_log_event *ev)
{
  if (ev->kind < DB_LOG_ACCEPTED || ev->kind > DB_LOG_FAILED || ev->state > MSG_STATE_REJECTED ||
      ((ev->kind == DB_LOG_RECEIPT || ev->kind == DB_LOG_FAILED) && ev->state == 0))
    return DB_E_ARG;
  uint8_t rec[REC_MAX];
  int64_t time_ms = ev->time_ms ? ev->time_ms : wall_ms();
  size_t n = db_rec_encode(rec, ev, time_ms);
  bool wake;

  pthread_mutex_lock(&log->lock);
  if (log->pending.len + n > log->pending.cap && db_spill_pending(log) < 0) {
    log->events_lost++;
    pthread_mutex_unlock(&log->lock);
    return DB_E_IO;
  }
  if (log->pending.len == 0) {
    log->pending_oldest_ms = time_ms;
    log->pending_since_ms = clock_now_ms();
  }
  memcpy(log->pending.p + log->pending.len, rec, n);
  log->pending.len += n;
  log->pending_events++;
  log->events_logged++;
  wake = log->pending_events == log->lim->batch_events;
  pthread_mutex_unlock(&log->lock);
  if (wake)
    pthread_cond_signal(&log->wake);
  return 0;
}

void db_log_event_from_msg(struct db_log_event *ev, enum db_log_kind kind, const struct msg *m)
{
  memset(ev, 0, sizeof *ev);
  ev->kind = kind;
  ev->msg_id = m->id;
  ev->time_ms = kind == DB_LOG_ACCEPTED ? m->received_ms : 0;
  ev->origin_user = m->origin.user;
  ev->origin_ref = m->origin.ref;
  ev->src = m->src;
  ev->dst = m->dst;
  ev->dlr_mask = m->dlr_mask;
}

static void parent_link_changed(struct db_log *parent, const char *why);

static void log_set_connected(struct lane *log, bool connected, const char *why)
{
  pthread_mutex_lock(&log->lock);
  bool changed = log->link != connected;
  log->link = connected;
  if (why)
    str_copy(log->last_error, sizeof log->last_error, why);
  pthread_mutex_unlock(&log->lock);
  if (changed)
    parent_link_changed(log->parent, why);
}

/* A connection with the staging table, or false (down, backing off). */
static bool writer_connect(struct lane *log)
{
  char why[DB_ERR_LEN];
  if (db_conn_ensure(&log->conn, why, sizeof why) < 0) {
    log_set_connected(log, false, log->conn.last_error);
    return false;
  }
  if (log->stage_generation != log->conn.generation) {
    if (db_conn_exec(&log->conn, db_stage_create, 0, NULL, NULL, why, sizeof why) < 0) {
      db_conn_backoff(&log->conn, why);
      log_set_connected(log, false, why);
      return false;
    }
    log->stage_generation = log->conn.generation;
    log_set_connected(log, true, NULL);
  }
  return true;
}

/* Sleeps until the next connect attempt (or flush_ms, to keep spilling
 * what comes in), or until woken. */
static void writer_sleep(struct lane *log)
{
  uint64_t now = clock_now_ms(), until = now + log->lim->flush_ms;
  if (log->conn.retry_at_ms > now && log->conn.retry_at_ms < until)
    until = log->conn.retry_at_ms;
  struct timespec ts = monotonic_in(until - now);
  pthread_mutex_lock(&log->lock);
  if (!log->stop)
    pthread_cond_timedwait(&log->wake, &log->lock, &ts);
  pthread_mutex_unlock(&log->lock);
}

/* Gives the writer something to write: the spill file first, then memory
 * once it is due. 1: work filled; 0: nothing yet (it waited); -1: stopping
 * and everything is written. */
static int writer_refill(struct lane *log)
{
  pthread_mutex_lock(&log->lock);
  if (log->spill_unread < log->spill_size) {
    uint64_t from = log->spill_unread, to = log->spill_size;
    pthread_mutex_unlock(&log->lock);
    if (!db_spill_read(log, from, to)) {
      writer_sleep(log);
      return 0;
    }
    return 1;
  }
  uint64_t now = clock_now_ms();
  bool due = log->pending_events >= log->lim->batch_events || log->stop || log->sync_waiters ||
             now >= log->pending_since_ms + log->lim->flush_ms;
  if (log->pending.len && due) {
    struct bytebuf taken = log->pending;
    log->pending = log->work;
    log->pending.len = 0;
    log->work = taken;
    log->work_pos = 0;
    log->work_source = WORK_PENDING;
    log->batch_ready = false;
    log->isolate_end = 0;
    log->work_events = log->pending_events;
    log->work_oldest_ms = log->pending_oldest_ms;
    log->work_bytes = taken.len;
    log->pending_events = 0;
    pthread_mutex_unlock(&log->lock);
    return 1;
  }
  if (log->stop && !log->pending.len) {
    pthread_mutex_unlock(&log->lock);
    return -1;
  }
  uint64_t until = log->pending.len ? log->pending_since_ms + log->lim->flush_ms : now + 1000;
  if (log->stop && until > log->close_deadline_ms)
    until = log->close_deadline_ms;
  struct timespec ts = monotonic_in(until > now ? until - now : 0);
  pthread_cond_timedwait(&log->wake, &log->lock, &ts);
  pthread_mutex_unlock(&log->lock);
  return 0;
}

/* Folds the next batch of work: from work_pos, up to batch_events events
 * (one while isolating bad data). Damaged spill records are skipped. */
static void writer_fold(struct lane *log)
{
  struct fold *f = &log->fold;
  unsigned limit = log->work_pos < log->isolate_end ? 1 : log->lim->batch_events;
  size_t pos = log->work_pos;
  uint64_t corrupt = 0;
  db_fold_reset(f);
  while (pos < log->work.len && f->n_recs < limit) {
    size_t len = 0;
    if (db_rec_check(log->work.p + pos, log->work.len - pos, log->work_source == WORK_SPILL, &len,
                     &f->recs[f->n_recs]) <= 0) {
      size_t skip = db_rec_resync(log->work.p + pos, log->work.len - pos);
      corrupt += skip;
      pos += skip;
      continue;
    }
    db_fold_add(f, f->n_recs++);
    pos += len;
  }
  log->batch_end = pos;
  log->batch_ready = true;
  if (corrupt) {
    pthread_mutex_lock(&log->lock);
    log->spill_corrupt_bytes += corrupt;
    db_err_set(log->last_error, sizeof log->last_error, "spill file %s: %" PRIu64 " damaged bytes skipped",
               log->spill_path, corrupt);
    pthread_mutex_unlock(&log->lock);
  }
}

/* Writes the folded batch in one transaction. */
static int writer_write(struct lane *log, char *err, size_t err_len)
{
  struct fold *f = &log->fold;
  struct conn *c = &log->conn;
  int rc;
  log->copy.len = 0;
  for (unsigned i = 0; i < f->n_rows; i++) {
    if (db_buf_reserve(&log->copy, COPY_ROW_MAX) < 0) {
      db_err_set(err, err_len, "out of memory for a batch of %u rows", f->n_rows);
      return DB_E_NOMEM;
    }
    db_copy_row(&log->copy, f, &f->rows[i]);
  }
  if ((rc = db_conn_exec(c, "BEGIN", 0, NULL, NULL, err, err_len)) < 0 ||
      (rc = db_conn_copy(c, db_stage_copy, log->copy.p, log->copy.len, err, err_len)) < 0 ||
      (rc = db_conn_exec(c, db_stage_merge, 0, NULL, NULL, err, err_len)) < 0 ||
      (rc = db_conn_exec(c, "COMMIT", 0, NULL, NULL, err, err_len)) < 0) {
    db_conn_rollback(c);
    return rc;
  }
  return 0;
}

/* The batch [work_pos, batch_end) is done (written, or dropped): account. */
static void writer_done(struct lane *log, unsigned events, bool written)
{
  log->work_pos = log->batch_end;
  log->batch_ready = false;
  pthread_mutex_lock(&log->lock);
  if (written) {
    log->events_written += events;
    log->batches += events > 0;
  } else {
    log->events_dropped += events;
  }
  log->work_events = log->work_events > events ? log->work_events - events : 0;
  log->work_bytes = log->work.len - log->work_pos;
  log->work_oldest_ms = log->work_pos < log->work.len ? db_rec_time(log->work.p + log->work_pos) : 0;
  /* The whole spill file written: start it again empty. */
  if (log->work_pos == log->work.len && log->work_source == WORK_SPILL &&
      log->spill_unread == log->spill_size && log->spill_size > 0) {
    if (ftruncate(log->spill_fd, 0) == 0)
      log->spill_size = log->spill_unread = 0;
  }
  pthread_mutex_unlock(&log->lock);
  pthread_cond_broadcast(&log->settled);
}

static void writer_batch(struct lane *log)
{
  char why[DB_ERR_LEN];
  if (!log->batch_ready)
    writer_fold(log);
  unsigned events = log->fold.n_recs;
  if (events == 0) {
    writer_done(log, 0, true);
    return;
  }
  int rc = writer_write(log, why, sizeof why);
  if (rc == 0) {
    writer_done(log, events, true);
    return;
  }
  /* Bad data (SQLSTATE class 22 or 23) fails the same way every time: find
   * the event by writing one at a time, drop it, go on. Anything else is
   * the database's trouble: keep the batch and retry after the back-off. */
  if (rc == DB_E_SQL && (strncmp(log->conn.sqlstate, "22", 2) == 0 || strncmp(log->conn.sqlstate, "23", 2) == 0)) {
    pthread_mutex_lock(&log->lock);
    str_copy(log->last_error, sizeof log->last_error, why);
    pthread_mutex_unlock(&log->lock);
    if (events > 1) {
      log->isolate_end = log->batch_end;
      log->batch_ready = false;
    } else {
      writer_done(log, events, false);
    }
    return;
  }
  db_conn_backoff(&log->conn, why);
  log_set_connected(log, false, why);
}

static void *writer_main(void *arg)
{
  struct lane *log = arg;
  for (;;) {
    pthread_mutex_lock(&log->lock);
    bool stopping = log->stop;
    bool late = stopping && clock_now_ms() >= log->close_deadline_ms;
    pthread_mutex_unlock(&log->lock);
    if (late)
      break;
    if (!writer_connect(log)) {
      pthread_mutex_lock(&log->lock);
      db_spill_memory(log);
      pthread_mutex_unlock(&log->lock);
      if (stopping)
        break;
      writer_sleep(log);
      continue;
    }
    if (log->work_pos == log->work.len) {
      if (writer_refill(log) < 0)
        break;
      continue;
    }
    writer_batch(log);
  }
  /* What is left goes to disk for the next run. */
  pthread_mutex_lock(&log->lock);
  db_spill_memory(log);
  if (log->spill_size > 0 && fdatasync(log->spill_fd) != 0)
    db_err_set(log->last_error, sizeof log->last_error, "spill file %s: %s", log->spill_path, strerror(errno));
  if (log->spill_size == 0)
    unlink(log->spill_path);
  pthread_mutex_unlock(&log->lock);
  db_conn_drop(&log->conn);
  return NULL;
}

static void lane_free(struct lane *log)
{
  if (log->spill_fd >= 0)
    close(log->spill_fd);
  log->spill_fd = -1;
  db_conn_free(&log->conn);
  db_fold_free(&log->fold);
  bytebuf_free(&log->pending);
  bytebuf_free(&log->work);
  bytebuf_free(&log->copy);
}

/* Sets up lane `index` of n in place, up to (not including) its thread. */
static int lane_init(struct lane *log, struct db_log *parent, unsigned index, unsigned n, const char *conninfo,
                     const char *spill_dir, const struct db_log_limits *lim, char *err, size_t err_len)
{
  log->parent = parent;
  log->lim = lim;
  log->spill_fd = -1;
  log->link = -1;
  if (db_conn_init(&log->conn, conninfo, lim->timeout_ms, lim->timeout_ms, true, lim->retry_min_ms,
                   lim->retry_max_ms, err, err_len) < 0)
    return -1;
  if (snprintf(log->spill_path, sizeof log->spill_path, "%s/dblog-%u.spill", spill_dir, index) >=
      (int)sizeof log->spill_path) {
    db_err_set(err, err_len, "spill directory name too long");
    return -1;
  }
  log->pending.p = malloc(lim->memory_bytes);
  log->work.p = malloc(lim->memory_bytes);
  if (!log->pending.p || !log->work.p || db_fold_init(&log->fold, lim->batch_events) < 0) {
    db_err_set(err, err_len, "out of memory");
    return -1;
  }
  log->pending.cap = log->work.cap = lim->memory_bytes;
  log->spill_fd = open(log->spill_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (log->spill_fd < 0) {
    db_err_set(err, err_len, "%s: %s", log->spill_path, strerror(errno));
    return -1;
  }
  /* Two processes on one spill file would interleave their records. */
  if (flock(log->spill_fd, LOCK_EX | LOCK_NB) != 0) {
    db_err_set(err, err_len, "%s: %s", log->spill_path,
               errno == EWOULDBLOCK ? "in use by another process" : strerror(errno));
    return -1;
  }
  if (db_spill_scan(log, err, err_len) < 0 || db_spill_adopt_all(log, spill_dir, index, n, err, err_len) < 0)
    return -1;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&log->lock, NULL);
  pthread_cond_init(&log->wake, &ca);
  pthread_cond_init(&log->settled, &ca);
  pthread_condattr_destroy(&ca);
  return 0;
}

/* Asks the lane's writer to stop by the deadline (it spills the rest). */
static void lane_stop(struct lane *log, uint64_t deadline_ms)
{
  pthread_mutex_lock(&log->lock);
  log->stop = true;
  log->close_deadline_ms = deadline_ms;
  atomic_store(&log->conn.cap_ms, deadline_ms);
  pthread_mutex_unlock(&log->lock);
  pthread_cond_signal(&log->wake);
}

static int lane_sync(struct lane *log, const struct timespec *deadline)
{
  int rc = 0;
  pthread_mutex_lock(&log->lock);
  uint64_t target = log->events_logged;
  log->sync_waiters++;
  pthread_cond_signal(&log->wake);
  while (log->events_written + log->events_dropped < target)
    if (pthread_cond_timedwait(&log->settled, &log->lock, deadline) == ETIMEDOUT) {
      rc = log->events_written + log->events_dropped < target ? DB_E_TIMEOUT : 0;
      break;
    }
  log->sync_waiters--;
  pthread_mutex_unlock(&log->lock);
  return rc;
}

/* Adds the lane's figures to out; returns the time of its oldest unwritten
 * event (0 = none). */
static int64_t lane_stats(struct lane *log, struct db_log_stats *out)
{
  pthread_mutex_lock(&log->lock);
  out->events_logged += log->events_logged;
  out->events_written += log->events_written;
  out->events_pending += log->pending_events + log->spill_events + log->work_events;
  out->events_spilled += log->events_spilled;
  out->events_lost += log->events_lost;
  out->events_dropped += log->events_dropped;
  out->batches += log->batches;
  out->spill_bytes += log->spill_size;
  out->spill_corrupt_bytes += log->spill_corrupt_bytes;
  out->memory_bytes += log->pending.len + log->work_bytes;
  if (!out->last_error[0] || log->link == 0)
    str_copy(out->last_error, sizeof out->last_error, log->last_error);
  int64_t oldest = 0;
  if (log->work_events && log->work_oldest_ms)
    oldest = log->work_oldest_ms;
  if (log->spill_events && log->spill_oldest_ms && (!oldest || log->spill_oldest_ms < oldest))
    oldest = log->spill_oldest_ms;
  if (log->pending_events && (!oldest || log->pending_oldest_ms < oldest))
    oldest = log->pending_oldest_ms;
  pthread_mutex_unlock(&log->lock);
  return oldest;
}

/* The message log: lanes, each a writer with its own connection, memory
 * and spill file. A message's events all go to one lane (by id), so two
 * lanes never write the same row at once, and the lanes' transactions run
 * in parallel on the server. */
struct db_log {
  struct db_log_limits lim;
  unsigned n_lanes;
  struct lane *lanes;
  pthread_mutex_t link_lock;
  int link;                        /* all lanes: -1 not known yet, 0 one is down, 1 all up */
};

/* A lane's connection came or went: tell on_change when that changes
 * whether the log as a whole is up. */
static void parent_link_changed(struct db_log *parent, const char *why)
{
  /* Under link_lock throughout, so that two lanes changing at once cannot
   * leave a stale verdict or tell on_change in the wrong order. */
  pthread_mutex_lock(&parent->link_lock);
  int up = 1;
  for (unsigned i = 0; i < parent->n_lanes && up == 1; i++) {
    pthread_mutex_lock(&parent->lanes[i].lock);
    int link = parent->lanes[i].link;
    pthread_mutex_unlock(&parent->lanes[i].lock);
    up = link == 0 ? 0 : link < 0 ? -1 : 1;
  }
  if (up >= 0 && up != parent->link) {
    parent->link = up;
    if (parent->lim.on_change)
      parent->lim.on_change(parent->lim.ctx, up == 1, up == 1 ? NULL : why);
  }
  pthread_mutex_unlock(&parent->link_lock);
}

struct db_log *db_log_open(const char *conninfo, const char *spill_dir, const struct db_log_limits *limits,
                           char *err, size_t err_len)
{
  struct db_log *log = calloc(1, sizeof *log);
  unsigned ready = 0, started = 0;
  if (!log) {
    db_err_set(err, err_len, "out of memory");
    return NULL;
  }
  if (limits)
    log->lim = *limits;
  struct db_log_limits *l = &log->lim;
  if (!l->writers)
    l->writers = 2;
  if (l->writers > 16)
    l->writers = 16;
  if (!l->memory_bytes)
    l->memory_bytes = 4u << 20;
  l->memory_bytes /= l->writers;
  if (l->memory_bytes < (64u << 10))
    l->memory_bytes = 64u << 10;
  if (!l->batch_events)
    l->batch_events = 20000;
  if (!l->flush_ms)
    l->flush_ms = 100;
  if (!l->timeout_ms)
    l->timeout_ms = 10000;
  if (!l->retry_min_ms)
    l->retry_min_ms = 250;
  if (!l->retry_max_ms)
    l->retry_max_ms = 5000;
  log->link = -1;
  pthread_mutex_init(&log->link_lock, NULL);
  log->n_lanes = l->writers;
  log->lanes = calloc(l->writers, sizeof *log->lanes);
  if (!log->lanes) {
    db_err_set(err, err_len, "out of memory");
    goto fail;
  }
  for (; ready < log->n_lanes; ready++) {
    if (lane_init(&log->lanes[ready], log, ready, log->n_lanes, conninfo, spill_dir, l, err, err_len) < 0) {
      lane_free(&log->lanes[ready]);
      goto fail;
    }
  }
  for (; started < log->n_lanes; started++) {
    int e = pthread_create(&log->lanes[started].thread, NULL, writer_main, &log->lanes[started]);
    if (e != 0) {
      db_err_set(err, err_len, "cannot start the log writer: %s", strerror(e));
      goto fail;
    }
  }
  return log;
fail:
  for (unsigned i = 0; i < started; i++)
    lane_stop(&log->lanes[i], clock_now_ms());
  for (unsigned i = 0; i < ready; i++) {
    if (i < started)
      pthread_join(log->lanes[i].thread, NULL);
    pthread_mutex_destroy(&log->lanes[i].lock);
    pthread_cond_destroy(&log->lanes[i].wake);
    pthread_cond_destroy(&log->lanes[i].settled);
    lane_free(&log->lanes[i]);
  }
  pthread_mutex_destroy(&log->link_lock);
  free(log->lanes);
  free(log);
  return NULL;
}

void db_log_close(struct db_log *log, unsigned timeout_ms)
{
  if (!log)
    return;
  uint64_t deadline = clock_now_ms() + (timeout_ms ? timeout_ms : 5000);
  for (unsigned i = 0; i < log->n_lanes; i++)
    lane_stop(&log->lanes[i], deadline);
  for (unsigned i = 0; i < log->n_lanes; i++) {
    struct lane *lane = &log->lanes[i];
    pthread_join(lane->thread, NULL);
    pthread_mutex_destroy(&lane->lock);
    pthread_cond_destroy(&lane->wake);
    pthread_cond_destroy(&lane->settled);
    lane_free(lane);
  }
  pthread_mutex_destroy(&log->link_lock);
  free(log->lanes);
  free(log);
}

int db_log_event(struct db_log *log, const struct db_log_event *ev)
{
  uint64_t h = ev->msg_id * UINT64_C(0x9E3779B97F4A7C15);
  return lane_event(&log->lanes[(h >> 32) % log->n_lanes], ev);
}

int db_log_sync(struct db_log *log, unsigned timeout_ms)
{
  struct timespec ts = monotonic_in(timeout_ms);
  int rc = 0;
  for (unsigned i = 0; i < log->n_lanes && rc == 0; i++)
    rc = lane_sync(&log->lanes[i], &ts);
  return rc;
}

void db_log_stats(struct db_log *log, struct db_log_stats *out)
{
  memset(out, 0, sizeof *out);
  int64_t oldest = 0;
  for (unsigned i = 0; i < log->n_lanes; i++) {
    int64_t t = lane_stats(&log->lanes[i], out);
    if (t && (!oldest || t < oldest))
      oldest = t;
  }
  pthread_mutex_lock(&log->link_lock);
  out->connected = log->link == 1;
  pthread_mutex_unlock(&log->link_lock);
  if (oldest) {
    int64_t age = wall_ms() - oldest;
    out->lag_s = age > 0 ? (double)age / 1000.0 : 0;
  }
}
