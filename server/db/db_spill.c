/* db_spill.c - the message log's spill files: records appended when memory
 * is full or the database is away, read back by the writer, and taken
 * stock of (and taken over from a run with more writers) at open.
 *
 * When a lane's `pending` is full (the writer is slow or stuck in a
 * statement), the producer that finds it full appends all of it to the
 * spill file and starts again empty; while the database is away, the writer
 * does the same every flush_ms, including what it holds of a failed batch.
 * The writer reads the spill file before memory (its events are the older
 * ones), and once it has read and committed the whole file it truncates it.
 * Records are checksummed; on open, a torn tail is cut, and damaged records
 * are skipped (and counted) when read. The file is in native byte order: it
 * never leaves the machine that wrote it.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "crc32c.h"
#include "db_internal.h"
#include "db_lane.h"
#include "db_rec.h"

static size_t spill_event_len(const uint8_t *p)
{
  uint32_t plen;
  memcpy(&plen, p + 8, 4);
  return REC_HDR + plen;
}

/* Appends records (from pending or work: well formed, sums not yet set)
 * to the spill file, under lock. On failure the file is cut back to where
 * it was, so it never holds half a record. */
static int spill_append(struct lane *log, uint8_t *p, size_t len, uint64_t events, int64_t oldest)
{
  for (size_t off = 0; off < len; off += spill_event_len(p + off)) {
    uint32_t plen;
    memcpy(&plen, p + off + 8, 4);
    uint32_t sum = crc32c(0, p + off + 8, 4 + plen);
    memcpy(p + off + 4, &sum, 4);
  }
  size_t done = 0;
  while (done < len) {
    ssize_t w = pwrite(log->spill_fd, p + done, len - done, (off_t)(log->spill_size + done));
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      db_err_set(log->last_error, sizeof log->last_error, "spill file %s: %s", log->spill_path,
                 w < 0 ? strerror(errno) : "short write");
      /* Best effort: the next append overwrites from spill_size anyway,
       * and the next open cuts a torn tail. */
      int cut = ftruncate(log->spill_fd, (off_t)log->spill_size);
      (void)cut;
      return DB_E_IO;
    }
    done += (size_t)w;
  }
  if (log->spill_unread == log->spill_size || oldest < log->spill_oldest_ms)
    log->spill_oldest_ms = oldest;
  log->spill_size += len;
  log->spill_events += events;
  log->events_spilled += events;
  return 0;
}

/* Moves pending to the spill file, under lock. */
int db_spill_pending(struct lane *log)
{
  if (log->pending.len == 0)
    return 0;
  int rc = spill_append(log, log->pending.p, log->pending.len, log->pending_events, log->pending_oldest_ms);
  if (rc == 0) {
    log->pending.len = 0;
    log->pending_events = 0;
  }
  return rc;
}

/* Moves what the writer holds from pending, and pending itself, to the
 * spill file, under lock: the database is away, the disk keeps them. */
void db_spill_memory(struct lane *log)
{
  if (log->work_source == WORK_PENDING && log->work_pos < log->work.len) {
    if (spill_append(log, log->work.p + log->work_pos, log->work.len - log->work_pos, log->work_events,
                     log->work_oldest_ms) < 0)
      return;
    log->work.len = log->work_pos = 0;
    log->work_events = 0;
    log->work_bytes = 0;
    log->work_source = WORK_NONE;
    log->batch_ready = false;
    log->isolate_end = 0;
  }
  db_spill_pending(log);
}

/* Reads the next part of the spill file into work; false when it cannot. */
bool db_spill_read(struct lane *log, uint64_t from, uint64_t to)
{
  size_t want = to - from > log->work.cap ? log->work.cap : (size_t)(to - from);
  size_t got = 0, cut = 0;
  uint64_t events = 0;
  while (got < want) {
    ssize_t r = pread(log->spill_fd, log->work.p + got, want - got, (off_t)(from + got));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      if (got == 0) {
        pthread_mutex_lock(&log->lock);
        db_err_set(log->last_error, sizeof log->last_error, "spill file %s: %s", log->spill_path,
                   r < 0 ? strerror(errno) : "short read");
        pthread_mutex_unlock(&log->lock);
        return false;
      }
      break;
    }
    got += (size_t)r;
  }
  /* Whole records only: one cut at the end is read again next time. */
  while (cut < got) {
    size_t len;
    int f = db_rec_check(log->work.p + cut, got - cut, true, &len, NULL);
    if (f == 0 && from + got < to)
      break;
    if (f <= 0) {
      cut += db_rec_resync(log->work.p + cut, got - cut);
      continue;
    }
    events++;
    cut += len;
  }
  int64_t next_oldest = 0;
  if (from + cut < to) {
    uint8_t head[REC_HDR + 17];
    if (pread(log->spill_fd, head, sizeof head, (off_t)(from + cut)) == (ssize_t)sizeof head)
      next_oldest = db_rec_time(head);
  }
  log->work.len = cut;
  log->work_pos = 0;
  log->work_source = WORK_SPILL;
  log->batch_ready = false;
  log->isolate_end = 0;
  pthread_mutex_lock(&log->lock);
  log->spill_unread = from + cut;
  log->spill_events = log->spill_events > events ? log->spill_events - events : 0;
  if (log->spill_unread < log->spill_size && next_oldest)
    log->spill_oldest_ms = next_oldest;
  log->work_events = events;
  log->work_bytes = cut;
  log->work_oldest_ms = cut ? db_rec_time(log->work.p) : 0;
  pthread_mutex_unlock(&log->lock);
  return true;
}

/* Takes stock of a spill file a previous run left: counts its events, finds
 * the oldest, cuts a torn tail. */
int db_spill_scan(struct lane *log, char *err, size_t err_len)
{
  struct stat st;
  if (fstat(log->spill_fd, &st) != 0) {
    db_err_set(err, err_len, "%s: %s", log->spill_path, strerror(errno));
    return DB_E_IO;
  }
  uint64_t size = (uint64_t)st.st_size, off = 0, good_end = 0;
  uint8_t *chunk = log->work.p;
  while (off < size) {
    size_t want = size - off > log->work.cap ? log->work.cap : (size_t)(size - off);
    ssize_t got = pread(log->spill_fd, chunk, want, (off_t)off);
    if (got <= 0) {
      db_err_set(err, err_len, "%s: %s", log->spill_path, got < 0 ? strerror(errno) : "short read");
      return DB_E_IO;
    }
    size_t pos = 0;
    while (pos < (size_t)got) {
      size_t len;
      int f = db_rec_check(chunk + pos, (size_t)got - pos, true, &len, NULL);
      if (f == 0)
        break;
      if (f < 0) {
        pos += db_rec_resync(chunk + pos, (size_t)got - pos);
        continue;
      }
      if (log->spill_events++ == 0)
        log->spill_oldest_ms = db_rec_time(chunk + pos);
      pos += len;
      good_end = off + pos;
    }
    if (pos == 0)
      break;                       /* a record cut by the end of the file */
    off += pos;
  }
  if (good_end < size && ftruncate(log->spill_fd, (off_t)good_end) != 0) {
    db_err_set(err, err_len, "%s: %s", log->spill_path, strerror(errno));
    return DB_E_IO;
  }
  log->spill_size = good_end;
  log->events_logged = log->spill_events;
  return 0;
}

/* Takes over a spill file that a run with more writers left (its lane
 * number is beyond ours): its good records are appended to this lane's
 * file, then it goes. */
static int spill_adopt(struct lane *log, const char *path, char *err, size_t err_len)
{
  int rc = 0, fd = open(path, O_RDONLY | O_CLOEXEC);
  uint64_t off = 0;
  if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
    db_err_set(err, err_len, "%s: %s", path,
               fd >= 0 && errno == EWOULDBLOCK ? "in use by another process" : strerror(errno));
    rc = DB_E_IO;
    goto out;
  }
  for (;;) {
    ssize_t got = pread(fd, log->work.p, log->work.cap, (off_t)off);
    if (got < 0) {
      db_err_set(err, err_len, "%s: %s", path, strerror(errno));
      rc = DB_E_IO;
      goto out;
    }
    size_t pos = 0;
    while (pos < (size_t)got) {
      size_t len;
      int f = db_rec_check(log->work.p + pos, (size_t)got - pos, true, &len, NULL);
      if (f == 0)
        break;
      if (f < 0) {
        pos += db_rec_resync(log->work.p + pos, (size_t)got - pos);
        continue;
      }
      /* Whole records, sums already set: written as they are. */
      if (pwrite(log->spill_fd, log->work.p + pos, len, (off_t)log->spill_size) != (ssize_t)len) {
        db_err_set(err, err_len, "%s: %s", log->spill_path, strerror(errno));
        rc = DB_E_IO;
        goto out;
      }
      if (log->spill_events++ == 0 || db_rec_time(log->work.p + pos) < log->spill_oldest_ms)
        log->spill_oldest_ms = db_rec_time(log->work.p + pos);
      log->events_logged++;
      log->spill_size += len;
      pos += len;
    }
    if (pos == 0)
      break;                       /* the end, or a record cut by it */
    off += pos;
  }
  if (fdatasync(log->spill_fd) != 0 || unlink(path) != 0) {
    db_err_set(err, err_len, "%s: %s", path, strerror(errno));
    rc = DB_E_IO;
  }
out:
  if (fd >= 0)
    close(fd);
  return rc;
}

/* Spill files of lanes beyond n that belong to lane `index` (K % n). */
int db_spill_adopt_all(struct lane *log, const char *spill_dir, unsigned index, unsigned n, char *err, size_t err_len)
{
  DIR *d = opendir(spill_dir);
  struct dirent *e;
  int rc = 0;
  if (!d) {
    db_err_set(err, err_len, "%s: %s", spill_dir, strerror(errno));
    return DB_E_IO;
  }
  while (rc == 0 && (e = readdir(d))) {
    unsigned k;
    char tail, path[4200];
    if (sscanf(e->d_name, "dblog-%u.spil%c", &k, &tail) != 2 || tail != 'l' || k < n || k % n != index)
      continue;
    snprintf(path, sizeof path, "%s/%s", spill_dir, e->d_name);
    rc = spill_adopt(log, path, err, err_len);
  }
  closedir(d);
  return rc;
}
