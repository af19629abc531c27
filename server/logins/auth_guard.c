/* auth_guard.c - failed logins counted per source address in a bounded,
 * locked table; see auth_guard.h. Called at logins only, never per message.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "auth_guard.h"
#include "netutil.h"
#include "strutil.h"

#define SLOTS 4096        /* addresses remembered; a power of two */
#define PROBE 8           /* slots looked at for an address */
#define ADDR_LEN 48
#define BLOCK_MAX_S 86400

struct entry {
  char addr[ADDR_LEN];    /* "" = free */
  int64_t window_start;   /* monotonic s: the failures counted from here */
  unsigned failures;
  int64_t blocked_until;  /* monotonic s; 0 = not blocked */
  unsigned block_s;       /* the last block's length, doubled on the next */
  uint64_t refused;       /* refused while blocked, for the next line */
  int64_t last_seen;
};

struct auth_guard {
  pthread_mutex_t lock;
  unsigned limit, window_s, block_s;
  struct log_category *log;
  struct auth_guard_stats stats;
  struct entry slots[SLOTS];
};

static int64_t now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec;
}

/* The host part of a peer, cut to fit. */
static void address_of(const char *peer, char *out)
{
  const char *host;
  size_t len = net_peer_host(peer, &host);
  if (len >= ADDR_LEN)
    len = ADDR_LEN - 1;
  memcpy(out, host, len);
  out[len] = '\0';
}

static uint32_t hash(const char *s)
{
  uint32_t h = 2166136261u;
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

/* The entry of addr, or a new one in place of a free or the least recently
 * seen slot of its probe run (create), or NULL. */
static struct entry *find(struct auth_guard *g, const char *addr, bool create, int64_t now)
{
  uint32_t h = hash(addr);
  struct entry *victim = NULL;
  for (unsigned i = 0; i < PROBE; i++) {
    struct entry *e = &g->slots[(h + i) & (SLOTS - 1)];
    if (strcmp(e->addr, addr) == 0)
      return e;
    if (!victim || !e->addr[0] || (victim->addr[0] && e->last_seen < victim->last_seen))
      victim = e;
  }
  if (!create)
    return NULL;
  memset(victim, 0, sizeof *victim);
  str_copy(victim->addr, sizeof victim->addr, addr);
  victim->window_start = now;
  victim->last_seen = now;
  return victim;
}

struct auth_guard *auth_guard_create(unsigned limit, unsigned window_s, unsigned block_s,
                                     struct log_category *log)
{
  struct auth_guard *g = calloc(1, sizeof *g);
  if (!g)
    return NULL;
  pthread_mutex_init(&g->lock, NULL);
  g->limit = limit;
  g->window_s = window_s ? window_s : 1;
  g->block_s = block_s ? block_s : 1;
  g->log = log;
  return g;
}

void auth_guard_destroy(struct auth_guard *g)
{
  if (!g)
    return;
  pthread_mutex_destroy(&g->lock);
  free(g);
}

bool auth_guard_blocked(struct auth_guard *g, const char *peer)
{
  if (!g || !g->limit)
    return false;
  char addr[ADDR_LEN];
  address_of(peer, addr);
  int64_t now = now_s();
  bool blocked = false;
  pthread_mutex_lock(&g->lock);
  struct entry *e = find(g, addr, false, now);
  if (e && e->blocked_until > now) {
    blocked = true;
    e->refused++;
    e->last_seen = now;
    g->stats.blocked++;
  } else if (e && e->blocked_until && e->refused) {
    LOGW(g->log, "logins from %s allowed again: %" PRIu64 " refused while it was blocked", addr, e->refused);
    e->refused = 0;
  }
  pthread_mutex_unlock(&g->lock);
  return blocked;
}

void auth_guard_failed(struct auth_guard *g, const char *peer, const char *what)
{
  if (!g)
    return;
  char addr[ADDR_LEN];
  address_of(peer, addr);
  int64_t now = now_s();
  pthread_mutex_lock(&g->lock);
  g->stats.failures++;
  struct entry *e = g->limit ? find(g, addr, true, now) : NULL;
  if (e) {
    if (now - e->window_start >= g->window_s) {
      e->window_start = now;
      e->failures = 0;
    }
    e->last_seen = now;
    if (++e->failures >= g->limit) {
      /* Blocked again within a day of the last block: twice as long. */
      bool again = e->blocked_until && now - e->blocked_until < BLOCK_MAX_S;
      e->block_s = again ? (e->block_s * 2 > BLOCK_MAX_S ? BLOCK_MAX_S : e->block_s * 2) : g->block_s;
      e->blocked_until = now + e->block_s;
      e->failures = 0;
      e->window_start = now;
      g->stats.blocks++;
      LOGW(g->log, "%u failed logins from %s within %u s (the last %s): its logins are refused for %u s",
           g->limit, addr, g->window_s, what, e->block_s);
    }
  }
  pthread_mutex_unlock(&g->lock);
}

bool auth_guard_suspect(struct auth_guard *g, const char *peer)
{
  if (!g || !g->limit)
    return false;
  char addr[ADDR_LEN];
  address_of(peer, addr);
  int64_t now = now_s();
  pthread_mutex_lock(&g->lock);
  struct entry *e = find(g, addr, false, now);
  bool suspect = e && (e->blocked_until > now || (e->failures && now - e->window_start < g->window_s));
  pthread_mutex_unlock(&g->lock);
  return suspect;
}

void auth_guard_stats(struct auth_guard *g, struct auth_guard_stats *out)
{
  memset(out, 0, sizeof *out);
  if (!g)
    return;
  pthread_mutex_lock(&g->lock);
  *out = g->stats;
  pthread_mutex_unlock(&g->lock);
}
