/* spool_append.c - appends to the journal: records copied into pending
 * for the writer thread (spool.c), their tickets, the ticket made durable,
 * and whether appends are refused (the spool failing). Below the writer
 * and compaction, which queue records of their own here.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "spool.h"
#include "spool_internal.h"
#include "spool_record.h"

#define PENDING_MAX (64u << 20)          /* appenders wait above this: the writer is behind */

/* Copies n bytes of records (nrec of them) into pending; returns the last
 * one's ticket, 0 when refused. The writer's own records (compaction copies,
 * fresh kills) pass while the spool is failing or waits for space. */
uint64_t spool_pending_add(struct spool *s, const uint8_t *recs, size_t n, unsigned nrec, bool from_app)
{
  uint64_t ticket = 0;
  pthread_mutex_lock(&s->lock);
  while (from_app && !s->failing && !s->stopping && s->pending.len >= PENDING_MAX)
    pthread_cond_wait(&s->space, &s->lock);
  if ((from_app && s->failing) || buf_reserve(&s->pending, n) < 0)
    goto out;
  memcpy(s->pending.p + s->pending.len, recs, n);
  s->pending.len += n;
  s->next_ticket += nrec;
  ticket = s->next_ticket;
  if (s->writer_idle || (s->writer_pacing && s->pending.len >= COMMIT_FULL_BYTES))
    pthread_cond_signal(&s->wake);
out:
  pthread_mutex_unlock(&s->lock);
  return ticket;
}

uint64_t spool_append(struct spool *s, const struct spool_record *rec)
{
  /* Room for any record but a MSG with a long body or callback: the common
   * ones are encoded without an allocation. */
  uint8_t stack[4096];
  size_t bound = record_bound(rec);
  uint8_t *buf = bound <= sizeof stack ? stack : malloc(bound);
  if (!buf)
    return 0;
  size_t n = record_encode(buf, rec);
  uint64_t ticket = spool_pending_add(s, buf, n, 1, true);
  if (buf != stack)
    free(buf);
  return ticket;
}

int spool_batch_add(struct spool *s, struct spool_batch *b, const struct spool_record *rec)
{
  if (spool_failing(s, NULL, 0))
    return -1;
  if (bytebuf_reserve(&b->records, record_bound(rec), 1u << 14) < 0)
    return -1;
  b->records.len += record_encode(b->records.p + b->records.len, rec);
  b->count++;
  return 0;
}

uint64_t spool_batch_append(struct spool *s, struct spool_batch *b)
{
  uint64_t ticket = b->count ? spool_pending_add(s, b->records.p, b->records.len, b->count, true) : 0;
  b->records.len = 0;
  b->count = 0;
  return ticket;
}

void spool_batch_free(struct spool_batch *b)
{
  bytebuf_free(&b->records);
  b->count = 0;
}

uint64_t spool_durable(const struct spool *s)
{
  /* Sequentially consistent, with the store in batch_commit (spool.c): a
   * waiter that publishes what it waits for and then reads this, and the
   * writer that stores this and then calls the listeners (which read what
   * waiters publish), cannot both miss the other. */
  return atomic_load(&s->durable);
}

uint64_t spool_appended(struct spool *s)
{
  pthread_mutex_lock(&s->lock);
  uint64_t t = s->next_ticket;
  pthread_mutex_unlock(&s->lock);
  return t;
}

bool spool_failing(const struct spool *s, char *why, size_t why_len)
{
  if (!why || !why_len)
    return atomic_load_explicit(&s->failing, memory_order_relaxed);
  struct spool *m = (struct spool *)s;   /* the lock, not the state, changes */
  pthread_mutex_lock(&m->lock);
  bool failing = m->failing;
  snprintf(why, why_len, "%s", failing ? m->why : "");
  pthread_mutex_unlock(&m->lock);
  return failing;
}
