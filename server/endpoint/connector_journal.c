/* connector_journal.c - the journal at the edge: the records an instance
 * writes go into its batch, in order with the rest of that thread's
 * records, appended once per loop iteration (or at once from any other
 * thread); and the replay's edge, which puts what the journal kept back
 * into the connectors' queues (path_replay.c says what each record means).
 * SPDX-License-Identifier: Apache-2.0
 */
#include "cluster.h"
#include "connector_internal.h"
#include "path.h"

/* The ticket of a record still in its instance's journal batch: higher
 * than any real one, so that nothing waiting for it goes out before the
 * batch is appended and the real ticket put in its place. */
#define TICKET_IN_BATCH UINT64_MAX

/* ---- an instance's batch ---- */

/* Appends the batch and puts its ticket into the acks held for it (or
 * marks them refused when the journal refused the batch: those clients get
 * an error, as if the journal had refused at once). */
void connector_journal_flush(struct instance *in)
{
  size_t fresh = in->held_new;
  in->held_new = 0;
  if (!in->journal.count)
    return;
  uint64_t ticket = spool_batch_append(in->conn->core->spool, &in->journal);
  struct held_acks *q = &in->held;
  for (size_t i = q->count - (fresh < q->count ? fresh : q->count); i < q->count; i++) {
    struct held_ack *h = &q->slots[(q->head + i) & (q->cap - 1)];
    if (h->ticket == TICKET_IN_BATCH) {
      h->ticket = ticket;
      h->refused = !ticket;
    }
  }
  if (q->count)
    atomic_store(&in->held_ticket, q->slots[q->head].ticket);
}

uint64_t connector_journal(struct core *core, struct instance *in, const struct spool_record *rec)
{
  if (!core->spool || !in)
    return core_journal(core, rec);
  if (spool_batch_add(core->spool, &in->journal, rec) < 0)
    return 0;
  connector_schedule_flush(in);
  return TICKET_IN_BATCH;
}

uint64_t connector_journal_msg_event(struct core *core, struct instance *in, enum spool_record_type type,
                                     uint64_t id, uint16_t target, const char *smsc_id)
{
  struct spool_record rec = { .type = type, .id = id, .target = target, .smsc_id = smsc_id };
  return connector_journal(core, in, &rec);
}

/* ---- the replay's edge ---- */

static int replay_restore(void *ctx, unsigned target, struct qitem *it, const char *user)
{
  return connector_restore(ctx, target, it, user);
}

static enum path_held replay_hold(void *ctx, struct qitem **it, unsigned target, int64_t now)
{
  switch (connector_hold(ctx, NULL, it, target, now)) {
  case CONNECTOR_HELD_JOINING: return PATH_HELD_JOINING;
  case CONNECTOR_HELD_SCHEDULED: return PATH_HELD_SCHEDULED;
  default: return PATH_NOT_HELD;
  }
}

static enum path_unresolved replay_unresolved(void *ctx, unsigned connector, const char *key,
                                              const struct msg_receipt *r, uint64_t journal_id)
{
  struct core *core = ctx;
  if (core->cluster)
    return cluster_resolve_receipt(core->cluster, (uint16_t)connector, key, r, journal_id)
             ? PATH_UNRESOLVED_TO_CLUSTER : PATH_UNRESOLVED_DROPPED;
  return connector_adopt_receipt(core->connectors[connector], key, r, journal_id) == 0 ? PATH_UNRESOLVED_ADOPTED
                                                                                       : PATH_UNRESOLVED_DROPPED;
}

const struct path_replay_edge connector_replay_edge = {
  .restore = replay_restore, .hold = replay_hold, .unresolved = replay_unresolved,
};
