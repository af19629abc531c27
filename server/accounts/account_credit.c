/* account_credit.c - credit kept across crashes.
 *
 * With persist on, credit lives in the journal. Each message part taken
 * from an account's credit is tagged with the account's credit epoch, and
 * its journal record carries the tag. A snapshot records what is left and
 * the epoch, then moves the epoch on, both under the account's credit lock:
 * so the parts tagged with the snapshot's epoch or an earlier one are in
 * what it says is left, and later ones are not. The journal appends a
 * snapshot of every limited account before it removes any record (the
 * spool's credit_snapshot hook), and emgd appends one when the operator
 * changes credit and each second after credit was given back.
 *
 * At start-up, what is left is the latest snapshot's figure less the parts
 * tagged after it: a crash costs no credit and gives none back, but for
 * parts whose ack it cut off, and credit given back in its last second.
 * A snapshot counts only while the configuration still says the credit it
 * was set to: credit set anew in the accounts file (by hand, emgd stopped)
 * starts from the file's figure.
 *
 * An account of the database keeps its credit there, shared by the nodes.
 * Each node takes parts locally and pushes what it took every fifth of a
 * second, moving the epoch on; the database records the last epoch each
 * node pushed. Its snapshots say how many parts were not yet pushed
 * (CREDIT_SHARED in place of the figure set). After a crash, the parts not
 * pushed are those tagged after the last pushed epoch, or, when the
 * journal's snapshot is newer than that push, the snapshot's unpushed parts
 * and those tagged after it.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdlib.h>
#include <string.h>
#include "account_internal.h"

/* A snapshot's figures for one account, under its lock; moves the epoch on. */
static bool snapshot_one(struct account_rt *rt, bool dirty_only, int64_t *set, int64_t *left, uint32_t *epoch)
{
  bool taken = false;
  pthread_mutex_lock(&rt->credit_lock);
  if (rt->limited && (!dirty_only || rt->credit_dirty)) {
    *set = rt->shared ? CREDIT_SHARED : rt->credit_set;
    *left = rt->shared ? rt->unpushed : rt->credit_left;
    *epoch = rt->credit_epoch++;
    rt->credit_dirty = false;
    taken = true;
  }
  pthread_mutex_unlock(&rt->credit_lock);
  return taken;
}

unsigned accounts_credit_snapshot(struct accounts *a, bool dirty_only,
                                  void (*emit)(void *ctx, const struct spool_record *rec), void *ctx)
{
  unsigned n = 0, used = accounts_used(a);
  for (unsigned s = 0; s < used; s++) {
    struct account_rt *rt = &a->slots[s];
    struct spool_record rec = { .type = SPOOL_REC_CREDIT };
    char name[MSG_USER_LEN];
    /* The name is copied in the section: emit (a journal append) runs
     * outside it and may take its time. */
    grace_enter(a->grace);
    const struct account_def *d = atomic_load_explicit(&rt->def, memory_order_acquire);
    bool taken = d && snapshot_one(rt, dirty_only, &rec.credit_set, &rec.credit_left, &rec.credit_epoch);
    if (taken)
      memcpy(name, d->cfg.name, sizeof name);
    grace_leave(a->grace);
    if (!taken)
      continue;
    rec.user = name;
    emit(ctx, &rec);
    n++;
  }
  return n;
}

/* ---- shared through the database ---- */

bool accounts_credit_push(struct accounts *a, unsigned slot, char name[MSG_USER_LEN], int64_t *parts,
                          uint32_t *epoch)
{
  struct account_rt *rt = &a->slots[slot];
  grace_enter(a->grace);
  const struct account_def *d = atomic_load_explicit(&rt->def, memory_order_acquire);
  bool found = d != NULL, any = false;
  if (found)
    memcpy(name, d->cfg.name, MSG_USER_LEN);
  grace_leave(a->grace);
  if (!found)
    return false;
  pthread_mutex_lock(&rt->credit_lock);
  if (rt->shared && rt->limited && rt->unpushed) {
    *parts = rt->unpushed;
    *epoch = rt->credit_epoch++;
    rt->credit_set -= rt->unpushed;   /* what the database will say once pushed */
    rt->unpushed = 0;
    rt->credit_dirty = true;
    any = true;
  }
  pthread_mutex_unlock(&rt->credit_lock);
  return any;
}

void accounts_on_push_due(struct accounts *a, void (*push_due)(void *ctx), void *ctx)
{
  a->push_due_ctx = ctx;
  a->push_due = push_due;
}

void accounts_credit_unpush(struct accounts *a, unsigned slot, int64_t parts)
{
  struct account_rt *rt = &a->slots[slot];
  pthread_mutex_lock(&rt->credit_lock);
  if (rt->shared) {
    rt->unpushed += parts;
    rt->credit_set += parts;
  }
  pthread_mutex_unlock(&rt->credit_lock);
}

void accounts_credit_shared(struct accounts *a, unsigned slot, bool limited, int64_t credit, uint32_t pushed_epoch)
{
  struct account_rt *rt = &a->slots[slot];
  pthread_mutex_lock(&rt->credit_lock);
  if (rt->shared) {
    if (limited != rt->limited || credit != rt->credit_set)
      rt->credit_dirty = true;
    rt->limited = limited;
    rt->credit_set = limited ? credit : 0;
    rt->credit_left = rt->credit_set - rt->unpushed;
    if (pushed_epoch)
      rt->pushed_epoch = pushed_epoch;
    if (!rt->credit_epoch)
      rt->credit_epoch = 1;
    atomic_store(&rt->limited_flag, limited);
  }
  pthread_mutex_unlock(&rt->credit_lock);
}

uint64_t accounts_credit_moves(const struct accounts *a)
{
  return atomic_load_explicit(&a->credit_moves, memory_order_relaxed);
}

/* ---- replay ---- */

static struct credit_replay *replay_of(struct accounts *a, const char *name)
{
  int s = accounts_find(a, name);
  if (s < 0)
    return NULL;
  if (!a->replay && !(a->replay = calloc(a->capacity, sizeof *a->replay)))
    return NULL;
  return &a->replay[s];
}

void accounts_credit_replay_snapshot(struct accounts *a, const char *name, int64_t set, int64_t left,
                                     uint32_t epoch)
{
  struct credit_replay *r = replay_of(a, name);
  if (!r)
    return;
  if (!r->has_snapshot || epoch >= r->epoch) {
    r->has_snapshot = true;
    r->set = set;
    r->left = left;
    r->epoch = epoch;
  }
  if (epoch > r->max_epoch)
    r->max_epoch = epoch;
}

void accounts_credit_replay_part(struct accounts *a, const char *name, uint32_t epoch)
{
  struct credit_replay *r = replay_of(a, name);
  if (!r || !epoch)
    return;
  if (epoch > r->max_epoch)
    r->max_epoch = epoch;
  /* Parts come mostly in epoch order: the last entry is nearly always it. */
  for (size_t i = r->n_tags; i-- > 0;)
    if (r->tags[i].epoch == epoch) {
      r->tags[i].parts++;
      return;
    }
  if (r->n_tags == r->cap_tags) {
    size_t cap = r->cap_tags ? 2 * r->cap_tags : 8;
    struct credit_tag *more = realloc(r->tags, cap * sizeof *more);
    if (!more)
      return;
    r->tags = more;
    r->cap_tags = cap;
  }
  r->tags[r->n_tags++] = (struct credit_tag){ epoch, 1 };
}

unsigned accounts_credit_replay_done(struct accounts *a)
{
  unsigned restored = 0;
  for (unsigned s = 0; a->replay && s < a->capacity; s++) {
    struct credit_replay *r = &a->replay[s];
    struct account_rt *rt = &a->slots[s];
    pthread_mutex_lock(&rt->credit_lock);
    if (rt->shared && rt->limited && (r->has_snapshot || r->n_tags)) {
      /* A file-mode snapshot tells nothing of pushes: the tags do. */
      bool newer = r->has_snapshot && r->set == CREDIT_SHARED && r->epoch > rt->pushed_epoch;
      int64_t unpushed = newer ? r->left : 0;
      uint32_t after = newer ? r->epoch : rt->pushed_epoch;
      for (size_t i = 0; i < r->n_tags; i++)
        if (r->tags[i].epoch > after)
          unpushed += (int64_t)r->tags[i].parts;
      rt->unpushed += unpushed;
      rt->credit_left = rt->credit_set - rt->unpushed;
      restored++;
    } else if (rt->limited && (r->has_snapshot || r->n_tags)) {
      /* No snapshot: parts taken since the figure the file holds. */
      bool same = !r->has_snapshot || r->set == rt->credit_set;
      if (same) {
        int64_t left = r->has_snapshot ? r->left : rt->credit_set;
        for (size_t i = 0; i < r->n_tags; i++)
          if (!r->has_snapshot || r->tags[i].epoch > r->epoch)
            left -= (int64_t)r->tags[i].parts;
        rt->credit_left = left < 0 ? 0 : left;
        restored++;
      }
    }
    if (r->max_epoch >= rt->credit_epoch)
      rt->credit_epoch = r->max_epoch + 1;
    if (rt->pushed_epoch >= rt->credit_epoch)
      rt->credit_epoch = rt->pushed_epoch + 1;
    rt->credit_dirty = true;
    pthread_mutex_unlock(&rt->credit_lock);
    free(r->tags);
  }
  free(a->replay);
  a->replay = NULL;
  a->credit_restored += restored;
  return a->credit_restored;
}
