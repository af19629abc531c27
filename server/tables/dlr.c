/* dlr.c - the DLR table: a hash index over ring arenas, in shards.
 *
 * Memory is the constraint: a million open entries must cost well under 150
 * bytes each, index included. So an entry is one packed record in its
 * shard's ring (the fixed fields, then its five strings back to back without
 * NULs, rounded up to 8 bytes), and the index is an open-addressing array of
 * 32-bit slots: a record's position and a few bits of its hash.
 *
 * Records are appended at the ring's tail in insertion order, which is also
 * the order of age, so eviction and expiry take them from the head, and the
 * usual life of an entry (recorded, then matched or aged out) allocates
 * nothing. A record removed out of order leaves a hole the head steps over
 * when it gets there; when the ring has no room left it is repacked into a
 * new ring sized for its live records, which drops the holes and grows (or
 * shrinks) the ring in one copy.
 *
 * The capacity is the table's, not the shards': one atomic count of the
 * entries, so that a table of a million holds a million however the keys
 * fall into shards. When it is full, an insert evicts the oldest entry of its
 * own shard (no second lock taken). A shard also has a hard limit, at three
 * quarters of its index, that only a freak distribution of keys reaches.
 *
 * Rings are mapped directly rather than malloc'ed: they are large and
 * replaced whole, and malloc would keep a dropped ring's pages resident in
 * its heap, which is exactly the memory the table must not hold.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bigmem.h"
#include "dlr.h"
#include "hexutil.h"
#include "strutil.h"

#define SHARDS_MAX 64
#define SHARD_MIN_ENTRIES 4096   /* below this many per shard, fewer shards */
#define REC_ALIGN 8
#define TAG_BITS 6
#define SLOT_POS_MASK (UINT32_MAX >> TAG_BITS)
/* The largest ring an index slot can point into: 512 MB, over 1.7 million
 * records of the largest size, per shard. */
#define RING_MAX ((size_t)SLOT_POS_MASK * REC_ALIGN)
#define RING_PAGE 4096           /* ring sizes are rounded to pages: they are mapped */

/* The strings of a record, in the order they are stored. */
enum { STR_KEY, STR_USER, STR_REF, STR_SRC, STR_DST, STR_COUNT };

/* One entry in the ring. A hole (removed record, or the pad that fills the
 * end of the ring when a record does not fit there) has live = 0; of a pad
 * only size and live are written. */
struct rec {
  uint16_t size;                 /* bytes, header included, a multiple of REC_ALIGN */
  uint8_t live;
  uint8_t dlr_mask;
  uint32_t hash;                 /* low half of the key hash: home slot, tag, probe filter */
  uint32_t stamp;                /* insert time, Unix seconds mod 2^32: the age for the TTL */
  uint16_t out_connector;
  uint16_t origin_connector;
  uint64_t msg_id;
  int64_t submit_time;
  uint8_t src_ton, src_npi, dst_ton, dst_npi;
  uint8_t len[STR_COUNT];
  uint8_t callback_method;
  uint8_t part_seq, part_total;
  uint16_t callback_len;         /* the callback URL follows the strings (HTTP origins only) */
  char text[];
};

#define REC_ROUND(n) (((n) + REC_ALIGN - 1) / REC_ALIGN * REC_ALIGN)
/* The largest record: every string at its longest. */
#define REC_MAX                                                                           \
  REC_ROUND(offsetof(struct rec, text) + (DLR_ID_LEN - 1) + (MSG_USER_LEN - 1) +          \
            (MSG_ID_LEN - 1) + 2 * (MSG_ADDR_LEN - 1) + (MSG_CALLBACK_LEN - 1))

struct shard {
  _Alignas(64) pthread_mutex_t lock;  /* a cache line of its own: shards do not share */
  uint8_t *ring;
  size_t ring_cap;               /* bytes, a multiple of RING_PAGE */
  size_t head;                   /* the oldest record, always live unless the ring is empty */
  size_t tail;                   /* where the next record goes */
  size_t ring_used;              /* bytes from head to tail: records, holes, pad */
  size_t live_bytes;
  uint32_t *index;               /* slot_value() of live records; 0 = free */
  uint32_t index_mask;
  size_t count;
  size_t share;                  /* its part of the table's size: what its ring is sized for */
  size_t limit;                  /* the most entries it holds: 3/4 of its index */
  uint64_t inserted, matched, unmatched, evicted, expired, replaced;
};

struct dlrtab {
  _Alignas(64) atomic_size_t used;  /* entries in all shards; a cache line of its own */
  _Alignas(64) struct shard *shards;
  /* Every shard's index, one after the other in one block: one block of
   * tens of MiB gets huge pages, where 64 of a few hundred KiB each would
   * not, and a lookup would miss the TLB as well as the cache. */
  uint32_t *indexes;
  size_t indexes_bytes;
  uint32_t shard_mask;
  uint32_t ttl_s;
  size_t size;
  dlrtab_drop_fn *dropped;          /* told of entries gone without their final receipt */
  void *dropped_arg;
};

/* Expiry tells the drop handler of at most this many entries at a time,
 * once the shard's lock is released: the handler journals, and may wait for
 * the journal's room. */
#define DROPS_BATCH 256

/* FNV-1a, then a finaliser (murmur3's fmix64) so that both halves are well
 * mixed: the high half picks the shard, the low half the index slot. */
static uint64_t key_hash(uint16_t out_connector, const char *key, size_t len)
{
  uint64_t h = 0xcbf29ce484222325u ^ out_connector;
  for (size_t i = 0; i < len; i++)
    h = (h ^ (uint8_t)key[i]) * 0x100000001b3u;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdu;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53u;
  h ^= h >> 33;
  return h;
}

static struct rec *rec_at(const struct shard *s, size_t pos)
{
  return (struct rec *)(s->ring + pos);
}

/* An index slot: the record's position / REC_ALIGN + 1 (0 = free slot)
 * under TAG_BITS of its hash. The tag spares a probe the cache miss of
 * reading a record with another key: in a large table nearly every record
 * read is one. It comes from the top of the 32-bit hash, well away from the
 * low bits that pick the home slot. */
static uint32_t slot_value(uint32_t hash, size_t pos)
{
  return (hash & ~SLOT_POS_MASK) | (uint32_t)(pos / REC_ALIGN + 1);
}

static struct rec *rec_of_slot(const struct shard *s, uint32_t value)
{
  return rec_at(s, (size_t)((value & SLOT_POS_MASK) - 1) * REC_ALIGN);
}

/* The index slot holding the key, or -1. */
static long index_find(const struct shard *s, uint32_t hash, uint16_t out_connector,
                       const char *key, size_t len)
{
  for (uint32_t i = hash & s->index_mask; s->index[i]; i = (i + 1) & s->index_mask) {
    if ((s->index[i] ^ hash) & ~SLOT_POS_MASK)
      continue;
    const struct rec *r = rec_of_slot(s, s->index[i]);
    if (r->hash == hash && r->out_connector == out_connector && r->len[STR_KEY] == len &&
        memcmp(r->text, key, len) == 0)
      return (long)i;
  }
  return -1;
}

/* The index slot of a live record, found by its position: no key compare. */
static uint32_t index_slot_of(const struct shard *s, size_t pos)
{
  uint32_t hash = rec_at(s, pos)->hash, want = slot_value(hash, pos);
  uint32_t i = hash & s->index_mask;
  while (s->index[i] != want)
    i = (i + 1) & s->index_mask;
  return i;
}

static void index_add(struct shard *s, size_t pos)
{
  uint32_t hash = rec_at(s, pos)->hash;
  uint32_t i = hash & s->index_mask;
  while (s->index[i])
    i = (i + 1) & s->index_mask;
  s->index[i] = slot_value(hash, pos);
}

/* Linear probing without tombstones: the entries after the freed slot that
 * would no longer be reachable from their home slot move back into it. */
static void index_del(struct shard *s, uint32_t hole)
{
  for (uint32_t j = (hole + 1) & s->index_mask; s->index[j]; j = (j + 1) & s->index_mask) {
    uint32_t home = rec_of_slot(s, s->index[j])->hash & s->index_mask;
    /* the entry stays when its home lies cyclically in (hole, j] */
    bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!stays) {
      s->index[hole] = s->index[j];
      hole = j;
    }
  }
  s->index[hole] = 0;
}

/* Steps the head over holes, so that it rests on a live record (or the ring
 * is empty, and starts again at 0 to have all of it in one piece). */
static void ring_trim_head(struct shard *s)
{
  while (s->ring_used) {
    const struct rec *r = rec_at(s, s->head);
    if (r->live)
      return;
    s->ring_used -= r->size;
    s->head += r->size;
    if (s->head == s->ring_cap)
      s->head = 0;
  }
  s->head = s->tail = 0;
}

/* Removes the live record in index slot `slot` (its place in the table's
 * count is the caller's to release or pass on). */
static void shard_unlink(struct shard *s, uint32_t slot)
{
  struct rec *r = rec_of_slot(s, s->index[slot]);
  index_del(s, slot);
  r->live = 0;
  s->count--;
  s->live_bytes -= r->size;
  ring_trim_head(s);
}

static void shard_unlink_oldest(struct shard *s)
{
  shard_unlink(s, index_slot_of(s, s->head));
}

/* Takes a place in the table's count for a new entry; false when the table
 * is full. */
static bool table_take_place(struct dlrtab *t)
{
  size_t used = atomic_load_explicit(&t->used, memory_order_relaxed);
  do {
    if (used >= t->size)
      return false;
  } while (!atomic_compare_exchange_weak_explicit(&t->used, &used, used + 1, memory_order_relaxed,
                                                  memory_order_relaxed));
  return true;
}

static void table_release_place(struct dlrtab *t)
{
  atomic_fetch_sub_explicit(&t->used, 1, memory_order_relaxed);
}

/* Finds size contiguous bytes at the tail (wrapping to the start, behind a
 * pad, when the end is too short); sets *pos and returns true, or false when
 * the ring has no such room. */
static bool ring_reserve(struct shard *s, size_t size, size_t *pos)
{
  if (s->ring_used == s->ring_cap)
    return false;
  if (s->tail < s->head) {
    if (size > s->head - s->tail)
      return false;
  } else if (size > s->ring_cap - s->tail) {
    if (size > s->head)
      return false;
    struct rec *pad = rec_at(s, s->tail);
    pad->size = (uint16_t)(s->ring_cap - s->tail);
    pad->live = 0;
    s->ring_used += pad->size;
    s->tail = 0;
  }
  *pos = s->tail;
  s->tail += size;
  if (s->tail == s->ring_cap)
    s->tail = 0;
  s->ring_used += size;
  return true;
}

static uint8_t *ring_map(size_t cap)
{
  return bigmem_alloc(cap);
}

static void ring_unmap(uint8_t *ring, size_t cap)
{
  bigmem_free(ring, cap);
}

/* Copies the live records, oldest first, into a new ring with room for
 * `need` more bytes, and rebuilds the index. The new ring has half its live
 * bytes again as room, so repacks are rare next to inserts; but it never
 * needs much more than its share of the table (or what it holds, if more) in
 * records of the current average size, since a full table evicts one for
 * each insert: that keeps a full table at about its live bytes.
 * Returns 0, or -1 when out of memory (nothing changed). */
static int shard_repack(struct shard *s, size_t need)
{
  size_t want = s->live_bytes + need;
  size_t cap = want + want / 2;
  if (s->count) {
    size_t entries = s->count > s->share ? s->count : s->share;
    size_t full = s->live_bytes / s->count * (entries + entries / 16) + 2 * REC_MAX;
    if (cap > full)
      cap = full;
  }
  if (cap < want)
    cap = want;
  cap = (cap + RING_PAGE - 1) / RING_PAGE * RING_PAGE;
  if (cap > RING_MAX)
    return -1;
  uint8_t *ring = ring_map(cap);
  if (!ring)
    return -1;

  size_t used = 0;
  for (size_t pos = s->head, left = s->ring_used; left;) {
    const struct rec *r = rec_at(s, pos);
    if (r->live) {
      memcpy(ring + used, r, r->size);
      used += r->size;
    }
    left -= r->size;
    pos += r->size;
    if (pos == s->ring_cap)
      pos = 0;
  }
  ring_unmap(s->ring, s->ring_cap);
  s->ring = ring;
  s->ring_cap = cap;
  s->head = 0;
  s->tail = used;  /* below cap, which has room for need more */
  s->ring_used = used;
  memset(s->index, 0, ((size_t)s->index_mask + 1) * sizeof *s->index);
  for (size_t pos = 0; pos < used; pos += rec_at(s, pos)->size)
    index_add(s, pos);
  return 0;
}

static void rec_fill(struct rec *r, size_t size, uint32_t hash, uint16_t out_connector,
                     const struct dlr_info *info, int64_t now, const char *const str[STR_COUNT],
                     const size_t len[STR_COUNT])
{
  r->size = (uint16_t)size;
  r->live = 1;
  r->dlr_mask = info->dlr_mask;
  r->hash = hash;
  r->stamp = (uint32_t)now;
  r->out_connector = out_connector;
  r->origin_connector = info->origin_connector;
  r->msg_id = info->msg_id;
  r->submit_time = info->submit_time;
  r->src_ton = info->src.ton;
  r->src_npi = info->src.npi;
  r->dst_ton = info->dst.ton;
  r->dst_npi = info->dst.npi;
  char *text = r->text;
  for (int i = 0; i < STR_COUNT; i++) {
    r->len[i] = (uint8_t)len[i];
    memcpy(text, str[i], len[i]);
    text += len[i];
  }
  r->callback_method = info->callback_method;
  r->part_seq = info->part_seq;
  r->part_total = info->part_total;
  r->callback_len = (uint16_t)strnlen(info->callback, sizeof info->callback - 1);
  memcpy(text, info->callback, r->callback_len);
}

static void rec_read(const struct rec *r, struct dlr_info *info)
{
  info->msg_id = r->msg_id;
  info->origin_connector = r->origin_connector;
  info->dlr_mask = r->dlr_mask;
  info->submit_time = r->submit_time;
  info->src.ton = r->src_ton;
  info->src.npi = r->src_npi;
  info->dst.ton = r->dst_ton;
  info->dst.npi = r->dst_npi;
  char *const out[STR_COUNT] = { NULL, info->origin_user, info->origin_ref, info->src.addr,
                                 info->dst.addr };
  const char *text = r->text + r->len[STR_KEY];
  for (int i = STR_KEY + 1; i < STR_COUNT; i++) {
    memcpy(out[i], text, r->len[i]);
    out[i][r->len[i]] = '\0';
    text += r->len[i];
  }
  info->callback_method = r->callback_method;
  info->part_seq = r->part_seq;
  info->part_total = r->part_total;
  memcpy(info->callback, text, r->callback_len);
  info->callback[r->callback_len] = '\0';
}

static struct shard *shard_of(const struct dlrtab *t, uint64_t hash)
{
  return &t->shards[(uint32_t)(hash >> 32) & t->shard_mask];
}

struct dlrtab *dlrtab_create(size_t size, uint32_t ttl_s)
{
  if (size == 0)
    return NULL;
  uint32_t nshards = 1;
  while (nshards < SHARDS_MAX && size / (2 * nshards) >= SHARD_MIN_ENTRIES)
    nshards *= 2;
  size_t share = (size + nshards - 1) / nshards;
  if (share > UINT32_MAX / 4)
    return NULL;
  /* An index at most half full at the shard's share keeps probe chains short. */
  size_t slots = 8;
  while (slots < 2 * share)
    slots *= 2;

  struct dlrtab *t = aligned_alloc(_Alignof(struct dlrtab), sizeof *t);
  if (!t)
    return NULL;
  memset(t, 0, sizeof *t);
  atomic_init(&t->used, 0);
  t->shards = aligned_alloc(_Alignof(struct shard), nshards * sizeof *t->shards);
  if (!t->shards) {
    free(t);
    return NULL;
  }
  memset(t->shards, 0, nshards * sizeof *t->shards);
  t->shard_mask = nshards - 1;
  t->ttl_s = ttl_s;
  t->size = size;
  t->indexes_bytes = nshards * slots * sizeof *t->indexes;
  if (!(t->indexes = bigmem_alloc(t->indexes_bytes))) {
    dlrtab_destroy(t);
    return NULL;
  }
  for (uint32_t i = 0; i < nshards; i++) {
    struct shard *s = &t->shards[i];
    s->share = share;
    s->limit = slots / 4 * 3;
    s->index_mask = (uint32_t)(slots - 1);
    s->index = t->indexes + (size_t)i * slots;
    if (pthread_mutex_init(&s->lock, NULL) != 0) {
      s->index = NULL;  /* marks the shards set up: destroy stops here */
      dlrtab_destroy(t);
      return NULL;
    }
  }
  return t;
}

void dlrtab_destroy(struct dlrtab *t)
{
  if (!t)
    return;
  for (uint32_t i = 0; t->indexes && i <= t->shard_mask && t->shards[i].index; i++) {
    struct shard *s = &t->shards[i];
    pthread_mutex_destroy(&s->lock);
    ring_unmap(s->ring, s->ring_cap);
  }
  bigmem_free(t->indexes, t->indexes_bytes);
  free(t->shards);
  free(t);
}

void dlrtab_on_drop(struct dlrtab *t, dlrtab_drop_fn *fn, void *arg)
{
  t->dropped = fn;
  t->dropped_arg = arg;
}

int dlrtab_insert(struct dlrtab *t, uint16_t out_connector, const char *smsc_id,
                  const struct dlr_info *info, int64_t now)
{
  const char *const str[STR_COUNT] = { smsc_id, info->origin_user, info->origin_ref,
                                       info->src.addr, info->dst.addr };
  const size_t len[STR_COUNT] = {
    strnlen(smsc_id, DLR_ID_LEN), strnlen(info->origin_user, sizeof info->origin_user - 1),
    strnlen(info->origin_ref, sizeof info->origin_ref - 1),
    strnlen(info->src.addr, sizeof info->src.addr - 1),
    strnlen(info->dst.addr, sizeof info->dst.addr - 1)
  };
  if (len[STR_KEY] == 0 || len[STR_KEY] >= DLR_ID_LEN)
    return -1;
  size_t callback_len = strnlen(info->callback, sizeof info->callback - 1);
  size_t size = offsetof(struct rec, text) + callback_len;
  for (int i = 0; i < STR_COUNT; i++)
    size += len[i];
  size = REC_ROUND(size);

  uint64_t hash = key_hash(out_connector, smsc_id, len[STR_KEY]);
  struct shard *s = shard_of(t, hash);
  int rc = -1;
  pthread_mutex_lock(&s->lock);
  long slot = index_find(s, (uint32_t)hash, out_connector, smsc_id, len[STR_KEY]);
  /* The new entry needs a place in the table's count: a replaced entry passes
   * its place on; else it takes a free one, or the shard's oldest makes way. */
  bool evict;
  struct dlr_dropped dropped = { 0, 0 };   /* the message of an entry replaced or evicted */
  enum dlr_drop why = DLR_DROP_REPLACED;
  if (slot >= 0) {
    /* The same message again (a replayed copy of its record) drops nothing. */
    const struct rec *old = rec_of_slot(s, s->index[slot]);
    if (old->msg_id != info->msg_id)
      dropped = (struct dlr_dropped){ old->msg_id, old->out_connector };
    shard_unlink(s, (uint32_t)slot);
    s->replaced++;
    evict = false;
  } else if (s->count == s->limit) {
    evict = true;
  } else if (table_take_place(t)) {
    evict = false;
  } else if (s->count) {
    evict = true;
  } else {
    /* Full, yet this shard is empty: a freak distribution of keys. Going
     * over by one beats taking a second shard's lock. */
    atomic_fetch_add_explicit(&t->used, 1, memory_order_relaxed);
    evict = false;
  }
  if (evict) {
    dropped = (struct dlr_dropped){ rec_at(s, s->head)->msg_id, rec_at(s, s->head)->out_connector };
    why = DLR_DROP_EVICTED;
    shard_unlink_oldest(s);
    s->evicted++;
  }
  size_t pos;
  bool room = ring_reserve(s, size, &pos) ||
              (shard_repack(s, size) == 0 && ring_reserve(s, size, &pos));
  if (!room) {
    table_release_place(t);
    goto out;
  }
  rec_fill(rec_at(s, pos), size, (uint32_t)hash, out_connector, info, now, str, len);
  index_add(s, pos);
  s->count++;
  s->live_bytes += size;
  s->inserted++;
  rc = 0;
out:
  pthread_mutex_unlock(&s->lock);
  if (dropped.msg_id && t->dropped)
    t->dropped(t->dropped_arg, &dropped, 1, why);
  return rc;
}

int dlrtab_lookup(struct dlrtab *t, uint16_t out_connector, const char *smsc_id, bool remove,
                  struct dlr_info *info)
{
  /* An empty or overlong id has a length no record has: it simply misses. */
  size_t len = strnlen(smsc_id, DLR_ID_LEN);
  uint64_t hash = key_hash(out_connector, smsc_id, len);
  struct shard *s = shard_of(t, hash);
  pthread_mutex_lock(&s->lock);
  long slot = index_find(s, (uint32_t)hash, out_connector, smsc_id, len);
  if (slot < 0) {
    s->unmatched++;
  } else {
    rec_read(rec_of_slot(s, s->index[slot]), info);
    s->matched++;
    if (remove) {
      shard_unlink(s, (uint32_t)slot);
      table_release_place(t);
    }
  }
  pthread_mutex_unlock(&s->lock);
  return slot >= 0;
}

size_t dlrtab_expire(struct dlrtab *t, int64_t now)
{
  if (t->ttl_s == 0)
    return 0;
  size_t removed = 0;
  struct dlr_dropped dropped[DROPS_BATCH];
  size_t n;
  for (uint32_t i = 0; i <= t->shard_mask; i++) {
    struct shard *s = &t->shards[i];
    do {
      n = 0;
      pthread_mutex_lock(&s->lock);
      while (s->count && n < DROPS_BATCH) {
        /* Ages in 32-bit wrapping arithmetic; one that comes out "negative"
         * (the clock stepped back) is young. */
        const struct rec *oldest = rec_at(s, s->head);
        uint32_t age = (uint32_t)now - oldest->stamp;
        if (age <= t->ttl_s || age > INT32_MAX)
          break;
        dropped[n++] = (struct dlr_dropped){ oldest->msg_id, oldest->out_connector };
        shard_unlink_oldest(s);
        table_release_place(t);
        s->expired++;
      }
      pthread_mutex_unlock(&s->lock);
      removed += n;
      if (n && t->dropped)
        t->dropped(t->dropped_arg, dropped, n, DLR_DROP_EXPIRED);
    } while (n == DROPS_BATCH);
  }
  return removed;
}

void dlrtab_stats(struct dlrtab *t, struct dlr_stats *out)
{
  memset(out, 0, sizeof *out);
  out->size = t->size;
  for (uint32_t i = 0; i <= t->shard_mask; i++) {
    struct shard *s = &t->shards[i];
    pthread_mutex_lock(&s->lock);
    out->used += s->count;
    out->inserted += s->inserted;
    out->matched += s->matched;
    out->unmatched += s->unmatched;
    out->evicted += s->evicted;
    out->expired += s->expired;
    out->replaced += s->replaced;
    pthread_mutex_unlock(&s->lock);
  }
}

static char ascii_lower(char c)
{
  return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* The id lowercased, without leading zeros (but "0" for all zeros). */
static int id_text(char *out, size_t cap, const char *id, size_t len)
{
  while (len > 1 && *id == '0') {
    id++;
    len--;
  }
  if (len >= cap)
    return -1;
  for (size_t i = 0; i < len; i++)
    out[i] = ascii_lower(id[i]);
  out[len] = '\0';
  return (int)len;
}

/* The decimal value of len hex digits, exact at any length: base 10^9 limbs,
 * least significant first; 64 hex digits (256 bits) take 9. */
static int id_hex_decimal(char *out, size_t cap, const char *id, size_t len)
{
  enum { LIMB_BASE = 1000000000, LIMB_DIGITS = 9, LIMBS = 9 };
  uint32_t limb[LIMBS] = { 0 };
  int limbs = 1;
  for (size_t i = 0; i < len; i++) {
    int digit = hex_digit((unsigned char)id[i]);
    if (digit < 0)
      return -1;
    uint64_t carry = (uint64_t)digit;
    for (int k = 0; k < limbs; k++) {
      uint64_t v = (uint64_t)limb[k] * 16 + carry;
      limb[k] = (uint32_t)(v % LIMB_BASE);
      carry = v / LIMB_BASE;
    }
    if (carry)
      limb[limbs++] = (uint32_t)carry;
  }
  /* Digits from the least significant end; the top limb without zero fill. */
  char digits[LIMBS * LIMB_DIGITS];
  size_t n = 0;
  for (int k = 0; k < limbs; k++) {
    uint32_t v = limb[k];
    for (int d = 0; d < LIMB_DIGITS && (v || k < limbs - 1 || n == 0); d++) {
      digits[sizeof digits - 1 - n++] = (char)('0' + v % 10);
      v /= 10;
    }
  }
  if (n >= cap)
    return -1;
  memcpy(out, digits + sizeof digits - n, n);
  out[n] = '\0';
  return (int)n;
}

int dlr_id_normalize(char *out, size_t cap, const char *id, enum dlr_id_type type)
{
  size_t len = strnlen(id, MSG_ID_LEN);
  if (len == 0 || len >= MSG_ID_LEN)
    return -1;
  switch (type) {
  case DLR_ID_STRING:
    return id_text(out, cap, id, len);
  case DLR_ID_DECIMAL:
    /* any length: stripping the leading zeros is the canonical decimal */
    for (size_t i = 0; i < len; i++)
      if (id[i] < '0' || id[i] > '9')
        return -1;
    return id_text(out, cap, id, len);
  case DLR_ID_HEX:
    return id_hex_decimal(out, cap, id, len);
  }
  return -1;
}

void dlr_info_from_msg(struct dlr_info *info, const struct msg *m)
{
  /* All but the callback, a kilobyte that is nearly always empty. */
  memset(info, 0, offsetof(struct dlr_info, callback));
  info->callback[0] = '\0';
  info->msg_id = m->id;
  info->origin_connector = m->origin.connector;
  info->dlr_mask = m->dlr_mask;
  info->submit_time = m->received_ms / 1000;
  memcpy(info->origin_user, m->origin.user, sizeof info->origin_user);
  memcpy(info->origin_ref, m->origin.ref, sizeof info->origin_ref);
  info->src = m->src;
  info->dst = m->dst;
  info->callback_method = m->callback_method;
  struct sms_text_concat concat;
  if (msg_concat(m, &concat) && concat.total > 1) {
    info->part_seq = concat.seq;
    info->part_total = concat.total;
  }
  if (m->callback)
    str_copy(info->callback, sizeof info->callback, m->callback);
}
