/* spool_segment.c - the segment files as the writer writes them: their
 * names, opening one (a deleted segment's file reused), zeros written ahead,
 * writing a commit, and closing one when it is full.
 *
 * Written blocks: an fdatasync after overwriting blocks that are already
 * written costs about half of one after an append, so commits never append
 * if they can help it. Zeros are written ahead of the records (O_DIRECT),
 * each commit is padded to the end of its last page, and up to two deleted
 * segments' files are kept (NNNNNNNNNNNN.free) and overwritten as the next
 * segments. Replay cuts zeros after the records without a word; a reused
 * file's old records never validate (another seed) and are cut like a torn
 * tail. A segment that fills up is truncated to its records.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include "clock.h"
#include "spool_internal.h"
#include "spool_record.h"

#define ZERO_CHUNK (1u << 20)            /* zeros written ahead of the records at a time */
#define ZERO_AHEAD (2u << 20)            /* ... whenever fewer than this are ready */

const uint8_t spool_zero_page[PAGE];

void spool_seg_path(const struct spool *s, uint32_t seq, char *out, size_t cap)
{
  snprintf(out, cap, "%s/%012" PRIu32 ".seg", s->dir, seq);
}

struct segment *spool_seg_push(struct spool *s, uint32_t seq)
{
  if (s->nsegs == s->segs_cap) {
    size_t cap = s->segs_cap ? s->segs_cap * 2 : 16;
    struct segment *grown = realloc(s->segs, cap * sizeof *grown);
    if (!grown)
      return NULL;
    s->segs = grown;
    s->segs_cap = cap;
  }
  struct segment *g = &s->segs[s->nsegs++];
  *g = (struct segment){ seq, 0, 0, 0, (int64_t)clock_now_ms(), seq };
  return g;
}

void spool_spare_path(const struct spool *s, uint32_t seq, char *out, size_t cap)
{
  snprintf(out, cap, "%s/%012" PRIu32 ".free", s->dir, seq);
}

/* Gives up the spare files: their space is wanted (a write failed). */
void spool_spares_drop(struct spool *s)
{
  char path[4096];
  for (size_t i = 0; i < s->nspares; i++) {
    spool_spare_path(s, s->spares[i].seq, path, sizeof path);
    unlink(path);
  }
  s->nspares = 0;
}

/* Renames the newest spare file to path; true when it now is the segment. */
static bool spare_take(struct spool *s, const char *path)
{
  while (s->nspares) {
    char from[4096];
    struct spare *sp = &s->spares[--s->nspares];
    spool_spare_path(s, sp->seq, from, sizeof from);
    if (sp->seq < s->cur_seq && rename(from, path) == 0) {
      s->segments_reused++;
      return true;
    }
    unlink(from);
  }
  return false;
}

/* Opens the current segment when there is none, a spare file when there is
 * one; -1 with why. */
static int segment_open(struct spool *s, char *why, size_t why_len)
{
  if (s->fd >= 0)
    return 0;
  char path[4096];
  spool_seg_path(s, s->cur_seq, path, sizeof path);
  bool reused = access(path, F_OK) != 0 && spare_take(s, path);
  s->fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  struct stat st;
  if (s->fd < 0 || fsync(s->dirfd) < 0 || fstat(s->fd, &st) < 0) {
    snprintf(why, why_len, "%.200s: %s", path, strerror(errno));
    if (s->fd >= 0)
      close(s->fd);
    s->fd = -1;
    return -1;
  }
  if (!seg_find(s, s->cur_seq) && !spool_seg_push(s, s->cur_seq)) {
    snprintf(why, why_len, "out of memory");
    return -1;
  }
  s->file_off = 0;
  s->cur_size = (uint64_t)st.st_size;
  /* A spare from a segment that one big batch took past its size keeps
   * only the segment's size: the rest would sit on disk as the current
   * segment's tail, counted nowhere. */
  uint64_t size = (s->opt.segment_size + PAGE - 1) / PAGE * PAGE;
  if (reused && s->cur_size > size && ftruncate(s->fd, (off_t)size) == 0)
    s->cur_size = size;
  s->direct_fd = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
  /* A retried open may find bytes of a failed write, to be cut; a reused
   * file's old bytes are left to be overwritten (they never validate). */
  s->tail_dirty = !reused;
  return 0;
}

/* Keeps ZERO_AHEAD bytes written (zeros) past the records of the current
 * segment, a chunk at a time, between commits: the commits then overwrite
 * written blocks, and their fdatasync carries no block allocation and no
 * change of size (about half the CPU and time of one after an append on
 * ext4). O_DIRECT, because zeros need no copy in the page cache; where the
 * file system refuses it (tmpfs), nothing is written ahead. */
void spool_segment_prepare(struct spool *s)
{
  static const uint8_t zeros[ZERO_CHUNK] __attribute__((aligned(PAGE)));
  uint64_t at = (s->cur_size + PAGE - 1) / PAGE * PAGE, end = (s->opt.segment_size + PAGE - 1) / PAGE * PAGE;
  if (s->direct_fd < 0 || s->cur_size >= s->file_off + ZERO_AHEAD || at >= end)
    return;
  size_t n = end - at < sizeof zeros ? (size_t)(end - at) : sizeof zeros;
  if (pwrite(s->direct_fd, zeros, n, (off_t)at) == (ssize_t)n) {
    s->cur_size = at + n;
  } else {
    if (ftruncate(s->fd, (off_t)s->cur_size) < 0) {
      /* the zeros that made it stay, past the records: harmless */
    }
    close(s->direct_fd);   /* no room, or no O_DIRECT: the commits append */
    s->direct_fd = -1;
  }
}

/* Ends the current segment's file: the old bytes of a reused file, or the
 * zeros written ahead, past its records are cut, so that replay never
 * meets them in a segment but the last. */
void spool_segment_close(struct spool *s)
{
  if (s->direct_fd >= 0)
    close(s->direct_fd);
  s->direct_fd = -1;
  if (s->fd < 0)
    return;
  if (s->cur_size > s->file_off && ftruncate(s->fd, (off_t)s->file_off) == 0)
    s->cur_size = s->file_off;
  close(s->fd);
  s->fd = -1;
}

/* As spool_segment_write picks it: the current segment, or the next when
 * the current is full or closed (then cur_seq is already the next). */
uint32_t spool_segment_next_seq(const struct spool *s)
{
  return s->fd >= 0 && s->file_off >= s->opt.segment_size ? s->cur_seq + 1 : s->cur_seq;
}

/* Writes data at the end of the current segment (a new one first when the
 * current is full, starting with an IDS record) and makes it durable.
 * Returns 0, or -1 with why: then nothing past file_off counts. */
int spool_segment_write(struct spool *s, uint8_t *data, size_t len, char *why, size_t why_len)
{
  if (s->fd >= 0 && s->file_off >= s->opt.segment_size) {
    spool_segment_close(s);
    s->cur_seq++;
  }
  if (segment_open(s, why, why_len) < 0)
    return -1;
  for (size_t off = 0; off < len; off += record_len(data + off))
    record_seal(data + off, s->cur_seq);
  if (s->tail_dirty) {
    if (ftruncate(s->fd, (off_t)s->file_off) < 0) {
      snprintf(why, why_len, "truncating after a failed write: %s", strerror(errno));
      return -1;
    }
    s->cur_size = s->file_off;
  }
  uint8_t ids[HDR_LEN + 8];
  struct iovec iov[3];
  int iovcnt = 0;
  if (s->file_off == 0) {
    record_encode(ids, &(struct spool_record){ .type = SPOOL_REC_IDS, .id = s->ids_mark });
    record_seal(ids, s->cur_seq);
    iov[iovcnt++] = (struct iovec){ ids, sizeof ids };
  }
  iov[iovcnt++] = (struct iovec){ (void *)data, len };
  size_t total = len + (iovcnt == 2 ? sizeof ids : 0), done = 0;
  /* Zeros to the end of the last page, which the next commit overwrites:
   * a page written whole needs no read of what it held before. */
  size_t pad = (PAGE - (s->file_off + total) % PAGE) % PAGE;
  iov[iovcnt++] = (struct iovec){ (void *)spool_zero_page, pad };
  s->tail_dirty = true;
  for (int first = 0; done < total + pad;) {
    ssize_t n = pwritev(s->fd, iov + first, iovcnt - first, (off_t)(s->file_off + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      snprintf(why, why_len, "writing segment %" PRIu32 ": %s", s->cur_seq,
               n < 0 ? strerror(errno) : "no progress");
      return -1;
    }
    done += (size_t)n;
    for (size_t k = (size_t)n; k && first < iovcnt;) {   /* skip what was written */
      size_t step = k < iov[first].iov_len ? k : iov[first].iov_len;
      iov[first].iov_base = (uint8_t *)iov[first].iov_base + step;
      iov[first].iov_len -= step;
      k -= step;
      first += !iov[first].iov_len;
    }
  }
  if (s->opt.sync) {
    if (fdatasync(s->fd) < 0) {
      snprintf(why, why_len, "syncing segment %" PRIu32 ": %s", s->cur_seq, strerror(errno));
      return -1;
    }
    s->fsyncs++;
  }
  s->tail_dirty = false;
  s->file_off += total;
  if (s->file_off + pad > s->cur_size)
    s->cur_size = s->file_off + pad;
  struct segment *g = &s->segs[s->nsegs - 1];
  g->bytes = s->file_off;
  g->records += total > len;   /* the IDS record */
  s->bytes_written += total;
  return 0;
}
