/* spool_internal.h - what the journal's files share: struct spool, its
 * segments and id maps, and the functions one of them calls in another.
 * Only server/spool*.c include it; everything else uses spool.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_SPOOL_INTERNAL_H
#define EMG_SPOOL_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "bigmem.h"
#include "bytebuf.h"
#include "spool.h"

#define MAX_LISTENERS 64
#define SPARES_MAX 2                      /* deleted segment files kept for reuse */
#define PAGE 4096u
#define SEG_NONE 0x7fffffffu             /* no SENT yet */
#define SEG_DEAD 0x7ffffffeu             /* replay: the id has finished */
#define SEQ_MAX 0x7ffffff0u              /* segment numbers stay below the markers */

/* Records kept in the receipts' id map: those that open a receipt's life
 * (RECEIPT, UNRESOLVED) and the one that ends it. */
static inline bool in_receipts_map(uint8_t type)
{
  return type == SPOOL_REC_RECEIPT || type == SPOOL_REC_UNRESOLVED || type == SPOOL_REC_RECEIPT_DONE;
}

/* ---- id maps: open addressing, linear probing, backward-shift deletion ---- */

struct idmap_entry {
  uint64_t id;                    /* 0: free */
  uint32_t a, b;                  /* messages: segment of MSG, of SENT; receipts: segment */
};

struct idmap {
  struct idmap_entry *slots;
  size_t mask, count;
  unsigned shift;
};

/* Ids are handed out in runs, and the records of a commit mostly name
 * neighbours (the messages of one burst, their SENT records): blocks of 16
 * consecutive ids keep their order in the map, so those records share cache
 * lines, while the blocks themselves are scattered by a multiplicative hash.
 * Maps start at 1024 slots, so a block always fits. */
#define IDMAP_RUN_BITS 4

static inline size_t idmap_home(const struct idmap *m, uint64_t id)
{
  size_t block = (size_t)(((id >> IDMAP_RUN_BITS) * 0x9e3779b97f4a7c15u) >> (m->shift + IDMAP_RUN_BITS));
  return (block << IDMAP_RUN_BITS) | (size_t)(id & ((1u << IDMAP_RUN_BITS) - 1));
}

static inline int idmap_init(struct idmap *m, size_t cap_pow2)
{
  m->slots = bigmem_alloc(cap_pow2 * sizeof *m->slots);
  m->mask = cap_pow2 - 1;
  m->count = 0;
  m->shift = 64;
  for (size_t c = cap_pow2; c > 1; c >>= 1)
    m->shift--;
  return m->slots ? 0 : -1;
}

static inline void idmap_free(struct idmap *m)
{
  bigmem_free(m->slots, (m->mask + 1) * sizeof *m->slots);
  m->slots = NULL;
}

static inline struct idmap_entry *idmap_find(const struct idmap *m, uint64_t id)
{
  for (size_t i = idmap_home(m, id);; i = (i + 1) & m->mask) {
    if (m->slots[i].id == id)
      return &m->slots[i];
    if (!m->slots[i].id)
      return NULL;
  }
}

static inline int idmap_grow(struct idmap *m);

/* The entry for id, added (a = b = SEG_NONE) when absent; NULL when out of
 * memory. Pointers into the map are invalid after the next insert. */
static inline struct idmap_entry *idmap_insert(struct idmap *m, uint64_t id)
{
  if ((m->count + 1) * 4 > (m->mask + 1) * 3 && idmap_grow(m) < 0)
    return NULL;
  size_t i = idmap_home(m, id);
  for (; m->slots[i].id; i = (i + 1) & m->mask)
    if (m->slots[i].id == id)
      return &m->slots[i];
  m->slots[i] = (struct idmap_entry){ id, SEG_NONE, SEG_NONE };
  m->count++;
  return &m->slots[i];
}

static inline int idmap_grow(struct idmap *m)
{
  struct idmap old = *m;
  if (idmap_init(m, (old.mask + 1) * 2) < 0) {
    *m = old;
    return -1;
  }
  for (size_t i = 0; i <= old.mask; i++)
    if (old.slots[i].id)
      *idmap_insert(m, old.slots[i].id) = old.slots[i];
  idmap_free(&old);
  return 0;
}

static inline void idmap_remove(struct idmap *m, struct idmap_entry *e)
{
  size_t hole = (size_t)(e - m->slots);
  for (size_t i = (hole + 1) & m->mask; m->slots[i].id; i = (i + 1) & m->mask) {
    size_t home = idmap_home(m, m->slots[i].id);
    /* Move the entry into the hole unless its home lies after the hole (cyclically). */
    if (((i - home) & m->mask) >= ((i - hole) & m->mask)) {
      m->slots[hole] = m->slots[i];
      hole = i;
    }
  }
  m->slots[hole].id = 0;
  m->count--;
}

/* ---- the spool ---- */

struct segment {
  uint32_t seq;
  uint32_t live;                  /* records the live state still needs */
  uint64_t records, bytes;
  int64_t started_ms;             /* monotonic: when it was opened (or found, at start-up) */
  uint32_t seed;                  /* its records' CRC seed: seq, or 0 when written before seeds */
};

/* A deleted segment's file, renamed NNNNNNNNNNNN.free (its old number),
 * kept to be the next segment: overwriting blocks that are already written
 * needs no block allocation and no change of the file's size, so each
 * commit's fdatasync writes the data alone (about half the CPU and time of
 * an append on ext4). Its old records carry its old seed and never
 * validate in the new segment. */
struct spare {
  uint32_t seq;
  uint64_t bytes;
};

struct listener {
  void (*fn)(void *);
  void *arg;
};

struct spool {
  char *dir;
  int dirfd;
  struct spool_options opt;

  pthread_mutex_t lock;           /* guards pending, next_ticket, failing, why, stats, stopping */
  pthread_cond_t wake;            /* the writer: something to write, or stop */
  pthread_cond_t space;           /* appenders waiting for pending to drain */
  struct bytebuf pending;
  uint64_t next_ticket;           /* the last ticket handed out */
  bool writer_idle, stopping;
  _Atomic bool failing;           /* written under lock; spool_batch_add reads it without */
  bool writer_pacing;             /* waiting for more records before the next commit */
  int64_t commit_started_us;      /* monotonic */
  bool busy;                      /* the last commit found records coming at COMMIT_BUSY_BYTES_PER_MS */
  char why[256];
  struct spool_stats stats;       /* the writer's figures, published once per batch */
  _Atomic uint64_t durable;

  /* Held while the writer calls the listeners, so that once
   * spool_forget_listeners returns none runs on memory its owner frees. */
  pthread_mutex_t listeners_lock;
  struct listener listeners[MAX_LISTENERS];
  _Atomic unsigned nlisteners;

  pthread_t writer;
  bool writer_started;

  /* The writer's own state. */
  struct bytebuf batch;
  uint64_t batch_last;            /* ticket of batch's last record */
  int fd;                         /* current segment, -1 before it is opened */
  uint32_t cur_seq;
  uint64_t cur_size;              /* the current file's size: records, then zeros or a reused file's old bytes */
  int direct_fd;                  /* the current file again, O_DIRECT, for its zeros; -1 without */
  struct spare spares[SPARES_MAX];
  size_t nspares;
  int64_t previous_write_s;       /* Unix s: the newest mtime of the segments found; 0 = none */
  int64_t previous_floor_s;       /* Unix s: the floor a process of an earlier version noted; 0 = none */
  int64_t previous_ceiling_s;     /* Unix s: the SCTS ceiling the previous process noted; 0 = none */
  uint64_t file_off;              /* end of the last good write */
  bool tail_dirty;                /* a failed write may have left bytes past file_off */
  uint64_t ids_mark;              /* highest id seen: written at the head of each segment */
  struct segment *segs;           /* oldest first; the last is the current one once opened */
  size_t nsegs, segs_cap;
  struct idmap msgs, receipts;
  uint64_t hold_ticket;           /* no deletion before this is durable (fresh FINISHED kills) */
  uint64_t compact_ticket;        /* no new compaction before the last one's copies are durable */
  /* Credit (opt.credit_snapshot): a durable snapshot covers the segments
   * numbered below credit_below; credit_ticket > 0: one is on its way, to
   * cover those below credit_next once durable. */
  uint32_t credit_below, credit_next;
  uint64_t credit_ticket;
  uint64_t fsyncs, compacted, segments_deleted, segments_reused, bytes_written, records_written;
};

static inline struct segment *seg_find(struct spool *s, uint32_t seq)
{
  size_t lo = 0, hi = s->nsegs;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (s->segs[mid].seq < seq)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < s->nsegs && s->segs[lo].seq == seq ? &s->segs[lo] : NULL;
}

static inline void seg_live_add(struct spool *s, uint32_t seq, int delta)
{
  struct segment *g = seg_find(s, seq);
  if (g)
    g->live += (uint32_t)delta;
}

#define BUF_FIRST (1u << 16)            /* the first allocation of the spool's buffers */
#define COMMIT_FULL_BYTES (1u << 20)    /* a batch this big is committed without pacing */

static inline int buf_reserve(struct bytebuf *b, size_t more)
{
  return bytebuf_reserve(b, more, BUF_FIRST);
}

/* ---- across the files ---- */

/* spool_append.c: copies n bytes of records (nrec of them) into pending;
 * returns the last one's ticket, 0 when refused. from_app false: the
 * writer's own. */
uint64_t spool_pending_add(struct spool *s, const uint8_t *recs, size_t n, unsigned nrec, bool from_app);

/* spool_segment.c: a page of zeros (the padding of a commit's last page). */
extern const uint8_t spool_zero_page[PAGE];
/* spool_segment.c: the path of segment seq (.seg) and of a spare file (.free). */
void spool_seg_path(const struct spool *s, uint32_t seq, char *out, size_t cap);
void spool_spare_path(const struct spool *s, uint32_t seq, char *out, size_t cap);
/* spool_segment.c: adds segment seq after the others; NULL when out of memory. */
struct segment *spool_seg_push(struct spool *s, uint32_t seq);
/* spool_segment.c: writes zeros ahead of the records, between commits. */
void spool_segment_prepare(struct spool *s);
/* spool_segment.c: ends the current segment's file, cut to its records. */
void spool_segment_close(struct spool *s);
/* spool_segment.c: writes data (records to seal) at the end of the current
 * segment, a new one first when it is full, and makes it durable; 0, or -1
 * with why. */
int spool_segment_write(struct spool *s, uint8_t *data, size_t len, char *why, size_t why_len);
/* spool_segment.c: the number of the segment the next commit goes to. */
uint32_t spool_segment_next_seq(const struct spool *s);
/* spool_segment.c: gives up the spare files (a write failed). */
void spool_spares_drop(struct spool *s);

/* spool_compact.c: deletes the oldest segments while they hold nothing live
 * (with credit, once a durable snapshot covers them). */
void spool_segments_delete(struct spool *s);
/* spool_compact.c: compacts the oldest segment when it is due. */
void spool_compact_maybe(struct spool *s, bool idle);

typedef void (*record_fn)(void *ctx, const uint8_t *rec);

/* spool_replay.c: calls fn for each valid record of a segment image,
 * resynchronising on the magic after a bad one (reported through warn when
 * it is given). Returns the offset where the valid records end: below size
 * when the file ends in garbage (a torn tail when it is the last segment).
 * Compaction reads segments with it too. */
size_t spool_segment_scan(const uint8_t *base, size_t size, uint32_t seed, bool more, const char *path,
                          void (*warn)(void *, const char *), void *warn_ctx, record_fn fn, void *ctx);
/* spool_replay.c: reads the spool's segments and replays what is live; 0,
 * or -1 with a reason in err. */
int spool_replay_all(struct spool *s, void (*replay)(void *, const struct spool_record *),
                     void (*warn)(void *, const char *), void *ctx, char *err, size_t err_len);

#endif
