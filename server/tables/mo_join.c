/* mo_join.c - joining the parts of long MOs. See mo_join.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "mo_join.h"
#include "sms_text.h"

struct group {
  unsigned target;
  uint16_t origin;               /* the connector the parts came on */
  struct msg_addr src, dst;
  struct sms_text_concat concat; /* ref_size, ref, total (seq unused) */
  uint8_t coding;
  int64_t first_s;               /* when its first part came */
  unsigned have;
  struct qitem *parts[256];      /* by part number; [0] unused */
};

struct mo_join {
  pthread_mutex_t lock;
  struct group **groups;
  size_t count, max;
  unsigned timeout_s;
  size_t held;
};

struct mo_join *mo_join_create(size_t max_groups, unsigned timeout_s)
{
  struct mo_join *j = calloc(1, sizeof *j);
  if (!j || !(j->groups = calloc(max_groups ? max_groups : 1, sizeof *j->groups))) {
    free(j);
    return NULL;
  }
  pthread_mutex_init(&j->lock, NULL);
  j->max = max_groups;
  j->timeout_s = timeout_s;
  return j;
}

static void group_free(struct group *g)
{
  for (unsigned i = 1; i <= g->concat.total; i++)
    qitem_free(g->parts[i]);
  free(g);
}

void mo_join_destroy(struct mo_join *j)
{
  if (!j)
    return;
  for (size_t i = 0; i < j->count; i++)
    group_free(j->groups[i]);
  free(j->groups);
  pthread_mutex_destroy(&j->lock);
  free(j);
}

static bool same_addr(const struct msg_addr *a, const struct msg_addr *b)
{
  return a->ton == b->ton && strcmp(a->addr, b->addr) == 0;
}

/* Under the lock: the group of a part, or NULL. */
static struct group *group_find(struct mo_join *j, const struct msg *m, const struct sms_text_concat *c)
{
  for (size_t i = 0; i < j->count; i++) {
    struct group *g = j->groups[i];
    if (g->origin == m->origin.connector && g->concat.ref_size == c->ref_size && g->concat.ref == c->ref &&
        g->concat.total == c->total && same_addr(&g->src, &m->src) && same_addr(&g->dst, &m->dst))
      return g;
  }
  return NULL;
}

/* Under the lock: takes group i out of the table. */
static struct group *group_take(struct mo_join *j, size_t i)
{
  struct group *g = j->groups[i];
  j->groups[i] = j->groups[--j->count];
  j->held -= g->have;
  return g;
}

/* The UDH of m without its concatenation IEs, into out; its length (0 when
 * nothing else was in it). */
static size_t udh_without_concat(const struct msg *m, uint8_t *out)
{
  size_t n = 1;
  for (size_t i = 1; i + 1 < m->udh_len;) {
    uint8_t iei = m->udh[i], len = m->udh[i + 1];
    if (i + 2 + len > m->udh_len)
      break;
    if (iei != 0x00 && iei != 0x08) {
      memcpy(out + n, m->udh + i, 2u + len);
      n += 2u + len;
    }
    i += 2u + len;
  }
  if (n == 1)
    return 0;
  out[0] = (uint8_t)(n - 1);
  return n;
}

/* The joined message of a complete group: the first part's fields and id,
 * the payloads in order. NULL when out of memory. */
static struct qitem *joined(const struct group *g)
{
  size_t len = 0;
  for (unsigned i = 1; i <= g->concat.total; i++)
    len += g->parts[i]->msg->data_len;
  uint8_t *data = malloc(len ? len : 1), udh[256];
  struct qitem *it = data ? qitem_new(QITEM_MSG) : NULL;
  if (!it) {
    free(data);
    return NULL;
  }
  size_t at = 0;
  for (unsigned i = 1; i <= g->concat.total; i++) {
    memcpy(data + at, g->parts[i]->msg->data, g->parts[i]->msg->data_len);
    at += g->parts[i]->msg->data_len;
  }
  struct msg m = *g->parts[1]->msg;
  m.data = data;
  m.data_len = (uint32_t)len;
  m.udh_len = (uint16_t)udh_without_concat(g->parts[1]->msg, udh);
  m.udh = m.udh_len ? udh : NULL;
  it->msg = msg_clone(&m);
  it->target = (uint16_t)g->target;
  free(data);
  if (!it->msg) {
    qitem_free(it);
    return NULL;
  }
  return it;
}

enum mo_join_result mo_join_add(struct mo_join *j, struct qitem *it, unsigned target, struct qitem **whole,
                                struct qlist *done)
{
  const struct msg *m = it->msg;
  struct sms_text_concat c;
  *whole = NULL;
  if (it->kind != QITEM_MSG || !msg_concat(m, &c) || c.total < 2)
    return MO_JOIN_PASS;
  pthread_mutex_lock(&j->lock);
  struct group *g = group_find(j, m, &c);
  if (!g) {
    if (j->count == j->max || !(g = calloc(1, sizeof *g))) {
      pthread_mutex_unlock(&j->lock);
      return MO_JOIN_PASS;
    }
    g->target = target;
    g->origin = m->origin.connector;
    g->src = m->src;
    g->dst = m->dst;
    g->concat = c;
    g->coding = m->coding;
    g->first_s = time(NULL);
    j->groups[j->count++] = g;
  }
  if (g->parts[c.seq] || g->coding != m->coding) {
    /* A part number seen already: the SMSC sent it again (its ack lost in
     * a crash). Parts whose codings disagree go on as they are. */
    pthread_mutex_unlock(&j->lock);
    return g->parts[c.seq] ? MO_JOIN_DUPLICATE : MO_JOIN_PASS;
  }
  g->parts[c.seq] = it;
  g->have++;
  j->held++;
  if (g->have < c.total) {
    pthread_mutex_unlock(&j->lock);
    return MO_JOIN_HELD;
  }
  for (size_t i = 0; i < j->count; i++)
    if (j->groups[i] == g) {
      group_take(j, i);
      break;
    }
  pthread_mutex_unlock(&j->lock);
  *whole = joined(g);
  memset(done, 0, sizeof *done);
  for (unsigned i = 1; i <= c.total; i++)
    qlist_append(done, g->parts[i]);
  free(g);
  return MO_JOIN_WHOLE;
}

size_t mo_join_expire(struct mo_join *j, int64_t now, void (*fn)(void *ctx, unsigned target, struct qitem *it),
                      void *ctx)
{
  size_t n = 0;
  for (;;) {
    struct group *g = NULL;
    pthread_mutex_lock(&j->lock);
    for (size_t i = 0; i < j->count && !g; i++)
      if (now - j->groups[i]->first_s >= (int64_t)j->timeout_s)
        g = group_take(j, i);
    pthread_mutex_unlock(&j->lock);
    if (!g)
      return n;
    for (unsigned i = 1; i <= g->concat.total; i++)
      if (g->parts[i]) {
        struct qitem *it = g->parts[i];
        g->parts[i] = NULL;
        fn(ctx, g->target, it);
        n++;
      }
    free(g);
  }
}

size_t mo_join_held(struct mo_join *j)
{
  pthread_mutex_lock(&j->lock);
  size_t n = j->held;
  pthread_mutex_unlock(&j->lock);
  return n;
}
