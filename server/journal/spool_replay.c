/* spool_replay.c - reading the journal back at start: validating and
 * decoding records, finding and mapping the segments (and the spare files
 * left), and replaying what is live.
 *
 * Replay reads the segments twice: the first pass validates and computes the
 * final state (a FINISHED anywhere kills its id; the last copy of a record is
 * the one replayed), the second calls replay() in file order. CREDIT records
 * are not live records: pass 1 passes over them, pass 2 replays them all.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "spool_internal.h"
#include "spool_record.h"

/* Replay's second pass flags entries in the top bit of a segment number:
 * on a MSG's segment, that it was replayed; on a SENT's, that it waits for
 * its MSG (a compaction copy of the MSG came after it). */
#define SEG_FLAG 0x80000000u

/* ---- decoding (replay): bounds-checked, a short payload sets `bad` ---- */

struct reader {
  const uint8_t *p, *end;
  bool bad;
};

static const uint8_t *take(struct reader *r, size_t n)
{
  if (r->bad || (size_t)(r->end - r->p) < n) {
    r->bad = true;
    return NULL;
  }
  const uint8_t *at = r->p;
  r->p += n;
  return at;
}

static uint64_t get_n(struct reader *r, size_t n)
{
  const uint8_t *p = take(r, n);
  uint64_t v = 0;
  for (size_t i = 0; p && i < n; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static void get_str(struct reader *r, char *out, size_t cap)
{
  size_t n = (size_t)get_n(r, 1);
  const uint8_t *p = take(r, n);
  if (!p || n >= cap) {
    r->bad = true;
    out[0] = '\0';
    return;
  }
  memcpy(out, p, n);
  out[n] = '\0';
}

static void get_addr(struct reader *r, struct msg_addr *a)
{
  get_str(r, a->addr, sizeof a->addr);
  a->ton = (uint8_t)get_n(r, 1);
  a->npi = (uint8_t)get_n(r, 1);
}

static void get_receipt(struct reader *r, struct msg_receipt *rc)
{
  memset(rc, 0, sizeof *rc);
  get_str(r, rc->id, sizeof rc->id);
  rc->state = (uint8_t)get_n(r, 1);
  rc->err = (uint16_t)get_n(r, 2);
  rc->submit_time = (int64_t)get_n(r, 8);
  rc->done_time = (int64_t)get_n(r, 8);
  get_addr(r, &rc->src);
  get_addr(r, &rc->dst);
}

/* Everything a decoded record points to. */
struct decoded {
  struct spool_record rec;
  struct msg msg;
  struct msg_receipt receipt;
  char text[STR_MAX];             /* SENT, UNRESOLVED: smsc_id; RECEIPT, CREDIT: user */
  char smsc_id[STR_MAX];          /* RECEIPT: the SMSC's id */
  char callback[MSG_CALLBACK_LEN];
};

/* The callback at the end of a payload, if the record has one. */
static bool get_callback(struct reader *r, uint8_t *method, char *out)
{
  if (r->bad || r->p >= r->end)
    return false;
  *method = (uint8_t)get_n(r, 1);
  size_t n = get_n(r, 2);
  const uint8_t *url = n < MSG_CALLBACK_LEN ? take(r, n) : NULL;
  if (!url) {
    r->bad = true;
    return false;
  }
  memcpy(out, url, n);
  out[n] = '\0';
  return true;
}

/* Decodes a validated record; -1 when its payload does not parse. */
static int record_decode(const uint8_t *rec, struct decoded *d)
{
  struct reader r = { rec + HDR_LEN, rec + HDR_LEN + get_u32(rec + 8), false };
  memset(&d->rec, 0, sizeof d->rec);
  d->rec.type = rec[12];
  d->rec.id = get_n(&r, 8);
  switch (d->rec.type) {
  case SPOOL_REC_MSG: {
    struct msg *m = &d->msg;
    memset(m, 0, sizeof *m);
    d->rec.target = (uint16_t)get_n(&r, 2);
    m->id = get_n(&r, 8);
    get_addr(&r, &m->src);
    get_addr(&r, &m->dst);
    m->coding = (uint8_t)get_n(&r, 1);
    m->dcs = (uint8_t)get_n(&r, 1);
    m->pid = (uint8_t)get_n(&r, 1);
    m->priority = (uint8_t)get_n(&r, 1);
    m->dlr_mask = (uint8_t)get_n(&r, 1);
    m->mms = (uint8_t)get_n(&r, 1);
    m->validity = (int64_t)get_n(&r, 8);
    m->deferred = (int64_t)get_n(&r, 8);
    m->received_ms = (int64_t)get_n(&r, 8);
    m->origin.connector = (uint16_t)get_n(&r, 2);
    m->origin.instance = (uint16_t)get_n(&r, 2);
    m->origin.session = (uint32_t)get_n(&r, 4);
    get_str(&r, m->origin.user, sizeof m->origin.user);
    get_str(&r, m->origin.ref, sizeof m->origin.ref);
    m->udh_len = (uint16_t)get_n(&r, 2);
    m->data_len = (uint32_t)get_n(&r, 4);
    m->udh = m->udh_len ? take(&r, m->udh_len) : NULL;
    m->data = take(&r, m->data_len);
    if (rec[13] & CREDIT_FLAG)
      m->credit_epoch = (uint32_t)get_n(&r, 4);
    if (get_callback(&r, &m->callback_method, d->callback))
      m->callback = d->callback;
    d->rec.msg = m;
    break;
  }
  case SPOOL_REC_SENT:
    d->rec.target = (uint16_t)get_n(&r, 2);
    get_str(&r, d->text, sizeof d->text);
    d->rec.smsc_id = d->text;
    break;
  case SPOOL_REC_RECEIPT:
    d->rec.target = (uint16_t)get_n(&r, 2);
    get_str(&r, d->text, sizeof d->text);
    get_receipt(&r, &d->receipt);
    if (rec[13] & VIA_FLAG)
      d->rec.via = (uint16_t)get_n(&r, 2);
    if (rec[13] & SMSC_ID_FLAG) {
      get_str(&r, d->smsc_id, sizeof d->smsc_id);
      d->rec.smsc_id = d->smsc_id;
    }
    if (get_callback(&r, &d->rec.callback_method, d->callback))
      d->rec.callback = d->callback;
    d->rec.user = d->text;
    d->rec.receipt = &d->receipt;
    break;
  case SPOOL_REC_UNRESOLVED:
    d->rec.target = (uint16_t)get_n(&r, 2);
    get_str(&r, d->text, sizeof d->text);
    get_receipt(&r, &d->receipt);
    d->rec.smsc_id = d->text;
    d->rec.receipt = &d->receipt;
    break;
  case SPOOL_REC_CREDIT:
    get_str(&r, d->text, sizeof d->text);
    d->rec.credit_set = (int64_t)get_n(&r, 8);
    d->rec.credit_left = (int64_t)get_n(&r, 8);
    d->rec.credit_epoch = (uint32_t)get_n(&r, 4);
    d->rec.user = d->text;
    break;
  default:
    break;
  }
  return r.bad ? -1 : 0;
}

/* ---- validation, and the scan of a segment ---- */

/* Whether a valid record of a segment with this seed starts at p (size
 * bytes left in the file). */
static bool record_valid(const uint8_t *p, size_t size, uint32_t seed)
{
  if (size < HDR_LEN + 8 || get_u32(p) != SPOOL_MAGIC)
    return false;
  uint32_t len = get_u32(p + 8);
  if (p[12] < SPOOL_REC_MSG || p[12] > SPOOL_REC_CREDIT || len < 8 || len > RECORD_MAX ||
      len > size - HDR_LEN)
    return false;
  return crc32c(seed, p + 8, HDR_LEN - 8 + len) == get_u32(p + 4);
}

/* Whether the bytes at p (size of them) begin a record that continues past
 * them: a well-formed header whose payload is not all there yet. */
static bool record_cut(const uint8_t *p, size_t size)
{
  if (size < HDR_LEN + 8)
    return true;
  uint32_t len = get_u32(p + 8);
  return get_u32(p) == SPOOL_MAGIC && len <= RECORD_MAX && len > size - HDR_LEN;
}

/* Calls fn for each valid record of base[0, size) and returns the offset
 * it got to. With more set, the bytes are a part of the segment with more
 * to come: a record cut at their end stops the scan there (its offset is
 * returned) instead of counting as damage. */
size_t spool_segment_scan(const uint8_t *base, size_t size, uint32_t seed, bool more, const char *path,
                          void (*warn)(void *, const char *), void *warn_ctx, record_fn fn, void *ctx)
{
  size_t off = 0;
  while (off < size) {
    if (more && record_cut(base + off, size - off))
      return off;
    if (record_valid(base + off, size - off, seed)) {
      fn(ctx, base + off);
      off += record_len(base + off);
      continue;
    }
    size_t next = off + 1;
    static const uint32_t magic = SPOOL_MAGIC;
    for (;;) {
      const uint8_t *m = next < size ? memmem(base + next, size - next, &magic, sizeof magic) : NULL;
      if (!m)
        return off;
      next = (size_t)(m - base);
      if (record_valid(m, size - next, seed))
        break;
      next++;
    }
    if (warn) {
      char text[512];
      snprintf(text, sizeof text, "%.400s at offset %zu: bad record, %zu bytes skipped", path, off, next - off);
      warn(warn_ctx, text);
    }
    off = next;
  }
  return off;
}

/* ---- replay ---- */

struct image {
  uint8_t *base;                  /* the segment mapped read-only; NULL when empty */
  size_t size;                    /* valid records end here */
};

struct replay {
  struct spool *s;
  struct image *images;
  size_t index;                   /* segment being read: images[index], s->segs[index] */
  struct idmap deferred;          /* pass 2: id -> (image, offset) of a SENT waiting for its MSG */
  uint64_t ids_max;
  bool oom;
  void (*replay)(void *, const struct spool_record *);
  void *ctx;
};

/* Pass 1: the final state, dead ids kept as SEG_DEAD so that a later copy
 * of a finished record stays dead. */
static void replay_scan(void *arg, const uint8_t *rec)
{
  struct replay *r = arg;
  struct segment *g = &r->s->segs[r->index];
  uint64_t id = record_id(rec);
  uint8_t type = rec[12];
  g->records++;
  if (type == SPOOL_REC_CREDIT)
    return;   /* no id, never live: replayed as it comes in pass 2 */
  if (type == SPOOL_REC_IDS || (type == SPOOL_REC_MSG && !(rec[13] & COPY_FLAG))) {
    if (id > r->ids_max)
      r->ids_max = id;
    if (type == SPOOL_REC_IDS)
      return;
  }
  bool receipt = in_receipts_map(type);
  struct idmap_entry *e = idmap_insert(receipt ? &r->s->receipts : &r->s->msgs, id);
  if (!e) {
    r->oom = true;
    return;
  }
  if (type == SPOOL_REC_FINISHED || type == SPOOL_REC_RECEIPT_DONE)
    e->a = SEG_DEAD;
  else if (e->a != SEG_DEAD && type == SPOOL_REC_SENT)
    e->b = g->seq;
  else if (e->a != SEG_DEAD)
    e->a = g->seq;
}

/* Keeps the live entries of a map built by pass 1 and counts them in their
 * segments. */
static int replay_keep_live(struct spool *s, struct idmap *m, bool messages)
{
  struct idmap live;
  size_t cap = 1024;
  while (cap * 3 < m->count * 4)
    cap *= 2;
  if (idmap_init(&live, cap) < 0)
    return -1;
  for (size_t i = 0; i <= m->mask; i++) {
    const struct idmap_entry *e = &m->slots[i];
    if (!e->id || e->a == SEG_DEAD || e->a == SEG_NONE)
      continue;
    struct idmap_entry *k = idmap_insert(&live, e->id);
    if (!k) {
      idmap_free(&live);
      return -1;
    }
    k->a = e->a;
    seg_live_add(s, e->a, 1);
    if (messages && e->b != SEG_NONE) {
      k->b = e->b;
      seg_live_add(s, e->b, 1);
    }
  }
  idmap_free(m);
  *m = live;
  return 0;
}

static void replay_emit(struct replay *r, const uint8_t *rec)
{
  struct decoded d;
  if (record_decode(rec, &d) == 0 && r->replay)
    r->replay(r->ctx, &d.rec);
}

/* A MSG record, decoded once: the credit its part took when tagged (an
 * original with a credit epoch, finished or not: counted against the
 * snapshots; a compaction copy's original went, so a snapshot covers it),
 * then the message itself when live. */
static void replay_msg(struct replay *r, const uint8_t *rec, bool tagged, bool live)
{
  struct decoded d;
  if (record_decode(rec, &d) != 0 || !r->replay)
    return;
  if (tagged) {
    struct spool_record part = { .type = SPOOL_REC_CREDIT_PART, .id = 0, .user = d.msg.origin.user,
                                 .credit_epoch = d.msg.credit_epoch };
    r->replay(r->ctx, &part);
  }
  if (live)
    r->replay(r->ctx, &d.rec);
}

/* Pass 2: each live record at its last copy, in file order, a SENT after
 * its MSG. */
static void replay_call(void *arg, const uint8_t *rec)
{
  struct replay *r = arg;
  uint32_t seq = r->s->segs[r->index].seq;
  uint64_t id = record_id(rec);
  struct idmap_entry *e;
  switch (rec[12]) {
  case SPOOL_REC_MSG: {
    /* A message moved to another connector (a drain) has a later copy in
     * the same segment: each is replayed, and the later one stands. */
    bool live = (e = idmap_find(&r->s->msgs, id)) && (e->a & ~SEG_FLAG) == seq;
    bool tagged = (rec[13] & CREDIT_FLAG) && !(rec[13] & COPY_FLAG);
    if (live || tagged)
      replay_msg(r, rec, tagged, live);
    if (!live)
      return;
    e->a |= SEG_FLAG;
    if (e->b & SEG_FLAG) {
      struct idmap_entry *w = idmap_find(&r->deferred, id);
      e->b &= ~SEG_FLAG;
      replay_emit(r, r->images[w->a].base + w->b);
    }
    return;
  }
  case SPOOL_REC_SENT:
    if (!(e = idmap_find(&r->s->msgs, id)) || (e->b & ~SEG_FLAG) != seq)
      return;
    if (e->a & SEG_FLAG) {
      replay_emit(r, rec);
    } else {
      struct idmap_entry *w = idmap_insert(&r->deferred, id);
      if (!w) {
        r->oom = true;
        return;
      }
      w->a = (uint32_t)r->index;
      w->b = (uint32_t)(rec - r->images[r->index].base);
      e->b |= SEG_FLAG;
    }
    return;
  case SPOOL_REC_RECEIPT:
  case SPOOL_REC_UNRESOLVED:
    if ((e = idmap_find(&r->s->receipts, id)) && e->a == seq)
      replay_emit(r, rec);
    return;
  case SPOOL_REC_CREDIT:
    replay_emit(r, rec);
    return;
  }
}

static int seq_cmp(const void *a, const void *b)
{
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* The numbers of dir's files named NNNNNNNNNNNN<suffix> (segments: ".seg",
 * spares: ".free"), sorted, in *out (malloc'ed); count or -1. */
static long segments_list(const char *dir, const char *suffix, uint32_t **out, char *err, size_t err_len)
{
  DIR *d = opendir(dir);
  if (!d) {
    snprintf(err, err_len, "%s: %s", dir, strerror(errno));
    return -1;
  }
  uint32_t *seqs = NULL;
  size_t n = 0, cap = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    char *end;
    unsigned long seq = strtoul(de->d_name, &end, 10);
    if (strlen(de->d_name) != 12 + strlen(suffix) || end != de->d_name + 12 || strcmp(end, suffix) != 0)
      continue;
    if (seq == 0 || seq > SEQ_MAX) {
      snprintf(err, err_len, "%.200s/%.20s: segment number out of range", dir, de->d_name);
      goto fail;
    }
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      uint32_t *grown = realloc(seqs, cap * sizeof *grown);
      if (!grown) {
        snprintf(err, err_len, "out of memory");
        goto fail;
      }
      seqs = grown;
    }
    seqs[n++] = (uint32_t)seq;
  }
  closedir(d);
  if (n)
    qsort(seqs, n, sizeof *seqs, seq_cmp);
  *out = seqs;
  return (long)n;
fail:
  closedir(d);
  free(seqs);
  return -1;
}

/* Maps segment index i and cuts a torn tail of the last one. */
static int replay_map(struct replay *r, size_t i, bool last, void (*warn)(void *, const char *), char *err,
                      size_t err_len)
{
  struct spool *s = r->s;
  char path[4096];
  spool_seg_path(s, s->segs[i].seq, path, sizeof path);
  int fd = open(path, (last ? O_RDWR : O_RDONLY) | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0) {
    snprintf(err, err_len, "%.200s: %s", path, strerror(errno));
    if (fd >= 0)
      close(fd);
    return -1;
  }
  struct image *im = &r->images[i];
  im->size = (size_t)st.st_size;
  /* When the previous process last wrote: the newest modification time of
   * any segment (a reused file taken just before a crash keeps the time of
   * its old life, so the newest segment alone can be too old). */
  if ((int64_t)st.st_mtime > s->previous_write_s)
    s->previous_write_s = (int64_t)st.st_mtime;
  if (im->size) {
    im->base = mmap(NULL, im->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (im->base == MAP_FAILED) {
      im->base = NULL;
      snprintf(err, err_len, "%.200s: mmap: %s", path, strerror(errno));
      close(fd);
      return -1;
    }
    madvise(im->base, im->size, MADV_SEQUENTIAL);
  }
  r->index = i;
  /* A segment whose first record validates only without a seed was
   * written before seeds. */
  struct segment *g = &s->segs[i];
  if (im->base && !record_valid(im->base, im->size, g->seed) && record_valid(im->base, im->size, 0))
    g->seed = 0;
  size_t good = im->base ? spool_segment_scan(im->base, im->size, g->seed, false, path, warn, r->ctx, replay_scan, r) : 0;
  if (good < im->size) {
    /* Zeros after the records are space made ready for them (or the
     * padding of the last page), not damage: cut without a word. */
    bool zeros = true;
    for (size_t k = good; k < im->size && zeros; k += PAGE) {
      size_t n = im->size - k < PAGE ? im->size - k : PAGE;
      zeros = memcmp(im->base + k, spool_zero_page, n) == 0;
    }
    char text[512];
    if (last && ftruncate(fd, (off_t)good) == 0) {
      snprintf(text, sizeof text,
               "%.300s at offset %zu: torn record at the tail (a write cut short, or a reused file's old "
               "records), %zu bytes cut off", path, good, im->size - good);
      im->size = good;
    } else {
      snprintf(text, sizeof text, "%.400s at offset %zu: bad record, the %zu bytes to the end skipped", path,
               good, im->size - good);
      if (zeros)
        im->size = good;
    }
    if (warn && !zeros)
      warn(r->ctx, text);
  }
  s->segs[i].bytes = im->size;
  close(fd);
  return 0;
}

/* Keeps the spare files a previous process left, up to SPARES_MAX of
 * them, numbered below the segments to come. */
static int spares_find(struct spool *s, char *err, size_t err_len)
{
  uint32_t *seqs = NULL;
  long n = segments_list(s->dir, ".free", &seqs, err, err_len);
  if (n < 0)
    return -1;
  for (long i = n - 1; i >= 0; i--) {
    char path[4096];
    struct stat st;
    spool_spare_path(s, seqs[i], path, sizeof path);
    if (seqs[i] < s->cur_seq && s->nspares < SPARES_MAX && stat(path, &st) == 0)
      s->spares[s->nspares++] = (struct spare){ seqs[i], (uint64_t)st.st_size };
    else
      unlink(path);
  }
  free(seqs);
  return 0;
}

/* Reads the spool's segments and replays what is live. */
int spool_replay_all(struct spool *s, void (*replay)(void *, const struct spool_record *),
                     void (*warn)(void *, const char *), void *ctx, char *err, size_t err_len)
{
  uint32_t *seqs = NULL;
  long n = segments_list(s->dir, ".seg", &seqs, err, err_len);
  if (n < 0)
    return -1;
  struct replay r = { s, calloc((size_t)n + 1, sizeof *r.images), 0, { 0 }, 0, false, replay, ctx };
  int rc = -1;
  if (!r.images || idmap_init(&r.deferred, 1024) < 0) {
    snprintf(err, err_len, "out of memory");
    goto out;
  }
  for (long i = 0; i < n; i++)
    if (!spool_seg_push(s, seqs[i])) {
      snprintf(err, err_len, "out of memory");
      goto out;
    }
  for (long i = 0; i < n; i++)
    if (replay_map(&r, (size_t)i, i == n - 1, warn, err, err_len) < 0)
      goto out;
  if (r.oom || replay_keep_live(s, &s->msgs, true) < 0 || replay_keep_live(s, &s->receipts, false) < 0) {
    snprintf(err, err_len, "out of memory replaying %s", s->dir);
    goto out;
  }
  for (long i = 0; i < n; i++) {
    r.index = (size_t)i;
    if (r.images[i].base)
      spool_segment_scan(r.images[i].base, r.images[i].size, s->segs[i].seed, false, "", NULL, NULL, replay_call, &r);
  }
  for (size_t i = 0; i <= s->msgs.mask; i++) {
    s->msgs.slots[i].a &= ~SEG_FLAG;
    s->msgs.slots[i].b &= ~SEG_FLAG;
  }
  if (r.oom) {
    snprintf(err, err_len, "out of memory replaying %s", s->dir);
    goto out;
  }
  s->ids_mark = r.ids_max;
  if (r.ids_max && replay)
    replay(ctx, &(struct spool_record){ .type = SPOOL_REC_IDS, .id = r.ids_max });
  s->cur_seq = n ? seqs[n - 1] + 1 : 1;
  if (spares_find(s, err, err_len) < 0)
    goto out;
  rc = 0;
out:
  for (long i = 0; r.images && i < n; i++)
    if (r.images[i].base)
      munmap(r.images[i].base, r.images[i].size ? r.images[i].size : 1);
  free(r.images);
  idmap_free(&r.deferred);
  free(seqs);
  return rc;
}
