/* receipt_join.c - one receipt for a long message sent in parts. See
 * receipt_join.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "msg.h"
#include "receipt_join.h"
#include "strutil.h"

struct whole {
  struct whole *chain;              /* next in its bucket */
  struct whole *older, *newer;      /* registration order, for the TTL */
  uint32_t hash;
  int64_t registered_s;
  uint16_t origin_connector;
  uint8_t total, open;              /* parts, and parts without a final receipt */
  bool answered;                    /* the origin has heard (a failure) */
  uint8_t resolved[32];             /* bit per part number */
  char user[MSG_USER_LEN];
  char ref[MSG_ID_LEN];
  uint64_t ids[];                   /* by part number - 1; 0 = unknown */
};

struct receipt_join {
  pthread_mutex_t lock;
  struct whole **buckets;
  size_t mask, count, max;
  struct whole *oldest, *newest;
  uint32_t ttl_s;
};

struct receipt_join *receipt_join_create(size_t max, uint32_t ttl_s)
{
  struct receipt_join *j = calloc(1, sizeof *j);
  size_t n = 16;
  while (n < max && n < ((size_t)1 << 18))
    n <<= 1;
  if (!j || !(j->buckets = calloc(n, sizeof *j->buckets))) {
    free(j);
    return NULL;
  }
  pthread_mutex_init(&j->lock, NULL);
  j->mask = n - 1;
  j->max = max;
  j->ttl_s = ttl_s;
  return j;
}

void receipt_join_destroy(struct receipt_join *j)
{
  if (!j)
    return;
  for (struct whole *w = j->oldest, *next; w; w = next) {
    next = w->newer;
    free(w);
  }
  free(j->buckets);
  pthread_mutex_destroy(&j->lock);
  free(j);
}

static uint32_t key_hash(const struct receipt_join_key *k)
{
  uint32_t h = 2166136261u ^ k->origin_connector;
  for (const char *s = k->origin_ref; *s; s++)
    h = (h ^ (uint8_t)*s) * 16777619u;
  for (const char *s = k->origin_user; *s; s++)
    h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

/* Under the lock: the whole of k, or NULL; *link where it hangs. */
static struct whole *whole_find(struct receipt_join *j, const struct receipt_join_key *k, uint32_t hash,
                                struct whole ***link)
{
  struct whole **l = &j->buckets[hash & j->mask];
  for (; *l; l = &(*l)->chain) {
    struct whole *w = *l;
    if (w->hash == hash && w->origin_connector == k->origin_connector && w->total == k->total &&
        strcmp(w->ref, k->origin_ref) == 0 && strcmp(w->user, k->origin_user) == 0)
      break;
  }
  if (link)
    *link = l;
  return *l;
}

/* Under the lock: takes w out of the table and frees it. */
static void whole_drop(struct receipt_join *j, struct whole *w)
{
  struct whole **l = &j->buckets[w->hash & j->mask];
  while (*l != w)
    l = &(*l)->chain;
  *l = w->chain;
  if (w->older)
    w->older->newer = w->newer;
  else
    j->oldest = w->newer;
  if (w->newer)
    w->newer->older = w->older;
  else
    j->newest = w->older;
  j->count--;
  free(w);
}

static bool resolved(const struct whole *w, unsigned seq)
{
  return w->resolved[seq / 8] & (1u << (seq % 8));
}

static void resolve(struct whole *w, unsigned seq)
{
  if (!resolved(w, seq)) {
    w->resolved[seq / 8] |= (uint8_t)(1u << (seq % 8));
    w->open--;
  }
}

/* Under the lock: the whole of k, made when there is none (open: every
 * part, or none when rebuilt from the journal); NULL when it cannot be. */
static struct whole *whole_get(struct receipt_join *j, const struct receipt_join_key *k, bool replayed, int64_t now)
{
  uint32_t hash = key_hash(k);
  struct whole **link;
  struct whole *w = whole_find(j, k, hash, &link);
  if (w)
    return w;
  if (j->count >= j->max || !(w = calloc(1, sizeof *w + k->total * sizeof *w->ids)))
    return NULL;
  w->hash = hash;
  w->registered_s = now;
  w->origin_connector = k->origin_connector;
  w->total = k->total;
  str_copy(w->user, sizeof w->user, k->origin_user);
  str_copy(w->ref, sizeof w->ref, k->origin_ref);
  /* Rebuilt from the journal, a part not there was resolved before. */
  w->open = replayed ? 0 : k->total;
  if (replayed)
    memset(w->resolved, 0xff, sizeof w->resolved);
  *link = w;
  w->older = j->newest;
  if (j->newest)
    j->newest->newer = w;
  else
    j->oldest = w;
  j->newest = w;
  j->count++;
  return w;
}

bool receipt_join_register(struct receipt_join *j, const struct receipt_join_key *k, uint64_t msg_id,
                           bool replayed, int64_t now)
{
  if (!k->origin_ref[0] || k->total < 2 || k->seq < 1 || k->seq > k->total)
    return false;
  pthread_mutex_lock(&j->lock);
  struct whole *w = whole_get(j, k, replayed, now);
  if (w) {
    if (replayed && resolved(w, k->seq)) {
      w->resolved[k->seq / 8] &= (uint8_t)~(1u << (k->seq % 8));
      w->open++;
    }
    w->ids[k->seq - 1] = msg_id;
  }
  pthread_mutex_unlock(&j->lock);
  return w != NULL;
}

bool receipt_join_register_whole(struct receipt_join *j, const struct receipt_join_key *k, const uint64_t *ids,
                                 int64_t now)
{
  if (!k->origin_ref[0] || k->total < 2)
    return false;
  pthread_mutex_lock(&j->lock);
  struct whole *w = whole_get(j, k, false, now);
  if (w)
    memcpy(w->ids, ids, k->total * sizeof *ids);
  pthread_mutex_unlock(&j->lock);
  return w != NULL;
}

enum receipt_join_verdict receipt_join_offer(struct receipt_join *j, const struct receipt_join_key *k,
                                             uint8_t state, uint64_t *finish, size_t *n_finish)
{
  *n_finish = 0;
  if (!k->origin_ref[0] || k->total < 2 || k->seq < 1 || k->seq > k->total)
    return RECEIPT_JOIN_PASS;
  uint32_t hash = key_hash(k);
  pthread_mutex_lock(&j->lock);
  struct whole *w = whole_find(j, k, hash, NULL);
  enum receipt_join_verdict v = RECEIPT_JOIN_PASS;
  if (!w) {
    /* Not registered (no room, or its parts were not split here). */
  } else if (!msg_state_final(state)) {
    v = k->seq == 1 && !w->answered ? RECEIPT_JOIN_PASS : RECEIPT_JOIN_HOLD;
  } else if (resolved(w, k->seq) || w->answered) {
    /* A part heard of twice, or one of an answered whole. */
    resolve(w, k->seq);
    v = RECEIPT_JOIN_HOLD;
  } else {
    resolve(w, k->seq);
    if (state != MSG_STATE_DELIVERED) {
      w->answered = true;
      for (unsigned seq = 1; seq <= w->total; seq++)
        if (!resolved(w, seq) && w->ids[seq - 1])
          finish[(*n_finish)++] = w->ids[seq - 1];
    } else if (w->open) {
      v = RECEIPT_JOIN_HOLD;
    }
  }
  if (w && !w->open)
    whole_drop(j, w);
  pthread_mutex_unlock(&j->lock);
  return v;
}

size_t receipt_join_expire(struct receipt_join *j, int64_t now)
{
  size_t n = 0;
  pthread_mutex_lock(&j->lock);
  while (j->oldest && now - j->oldest->registered_s > (int64_t)j->ttl_s) {
    whole_drop(j, j->oldest);
    n++;
  }
  pthread_mutex_unlock(&j->lock);
  return n;
}

size_t receipt_join_count(struct receipt_join *j)
{
  pthread_mutex_lock(&j->lock);
  size_t n = j->count;
  pthread_mutex_unlock(&j->lock);
  return n;
}
