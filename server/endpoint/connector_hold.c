/* connector_hold.c - messages the gateway holds before they are queued:
 * those with a deferred delivery time ahead (server/tables/schedule.c), and the
 * parts of long MOs until they are joined (server/tables/mo_join.c); what goes in,
 * what comes out, and what the journal and the history say of it.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <stdio.h>
#include <time.h>
#include "connector_internal.h"

/* ---- deferred delivery ---- */

/* Whether a message routed to connector target waits in the gateway until
 * its deferred time (ahead of now, Unix s): always for a server connector,
 * for a client one unless its deferred_delivery is "pass". */
static bool holds_until_due(struct core *core, unsigned target, const struct msg *m, int64_t now)
{
  if (m->deferred <= now || target >= core->n_connectors)
    return false;
  const struct connector *c = core_connector(core, target);
  /* A client of ours has no way to be told a time: its deliveries wait here. */
  return c->ops->account_queues || c->cfg->deferred == CONFIG_DEFERRED_HOLD;
}

/* Holds it for connector target until its deferred time (in its history).
 * False when out of memory: it stays the caller's. */
static bool schedule(struct core *core, unsigned target, struct qitem *it)
{
  char when[32];
  struct tm tm;
  time_t t = (time_t)it->msg->deferred;
  if (schedule_add(core->schedule, it, target) == -1)
    return false;
  strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", gmtime_r(&t, &tm));
  history_add(core->history, it->msg->id, HISTORY_SCHEDULED, (uint16_t)target, 0, 0, when);
  return true;
}


void connector_release_due(void *ctx, unsigned target, struct qitem *it)
{
  struct core *core = ctx;
  /* Due: it goes out now, without a time for the SMSC to hold it to. */
  it->msg->deferred = 0;
  history_add(core->history, it->msg->id, HISTORY_QUEUED, (uint16_t)target, 0, 0, "its time came");
  connector_release_held(core, NULL, target, it);
}

/* ---- long MOs joined ---- */

/* A message that will not be sent (a part joined into another, or one its
 * message had already): its journal record ends and it leaves in_flight. */
static void let_go(struct core *core, struct instance *in, struct qitem *it)
{
  connector_journal_msg_event(core, in, SPOOL_REC_FINISHED, it->msg->id, 0, NULL);
  atomic_fetch_sub(&core->in_flight, 1);
  qitem_free(it);
}

/* Back to its connector's queue, or let go when the connector takes it no
 * more. in: the instance whose thread this is, or NULL. */
void connector_release_held(struct core *core, struct instance *in, unsigned target, struct qitem *it)
{
  if (connector_restore(core, target, it, "") == 0)
    return;
  LOGW(core->log, "message %" PRIu64 ": connector %u takes it no more: dropped", it->msg->id, target);
  let_go(core, in, it);
}

/* Whether message it, routed to connector target, is an MO from an SMSC for
 * an application (a client of ours, or an HTTP push), whose parts are
 * joined. */
static bool joins(struct core *core, const struct qitem *it, unsigned target)
{
  if (!core->mo_join || it->kind != QITEM_MSG || target >= core->n_connectors ||
      it->msg->origin.connector >= core->n_connectors)
    return false;
  const struct connector *from = core_connector(core, it->msg->origin.connector);
  const struct connector *to = core_connector(core, target);
  return from->ops->smsc_session && to->ops->to_application;
}

/* The parts of a joined message are done with: each but the one whose id
 * the whole took ends in the journal and says where it went; the whole is
 * journaled as a later copy of that part, for its connector. */
static void join_finish(struct core *core, struct instance *in, struct qitem *whole, struct qlist *done,
                        unsigned target)
{
  char detail[HISTORY_DETAIL_LEN];
  snprintf(detail, sizeof detail, "into %" PRIu64, whole->msg->id);
  for (struct qitem *p = done->head, *next; p; p = next) {
    next = p->next;
    if (p->msg->id != whole->msg->id) {
      connector_journal_msg_event(core, in, SPOOL_REC_FINISHED, p->msg->id, 0, NULL);
      history_add(core->history, p->msg->id, HISTORY_JOINED, (uint16_t)target, 0, 0, detail);
    }
    qitem_free(p);
  }
  atomic_fetch_sub(&core->in_flight, done->count - 1);
  struct spool_record rec = { .type = SPOOL_REC_MSG, .id = whole->msg->id, .target = (uint16_t)target,
                              .msg = whole->msg, .moved = true };
  if (core->spool)
    connector_journal(core, in, &rec);
  snprintf(detail, sizeof detail, "%zu parts", done->count);
  history_add(core->history, whole->msg->id, HISTORY_JOINED, (uint16_t)target, 0, 0, detail);
}

/* Offers it for joining when it is a part of a long MO for an application:
 * returns it when it goes on as it is, NULL when it is held for its
 * siblings (or went on with them, or was a part its message had already),
 * or the joined message when it was the last part. */
static struct qitem *join_part(struct core *core, struct instance *in, struct qitem *it, unsigned target)
{
  struct qitem *whole;
  struct qlist done;
  if (!joins(core, it, target))
    return it;
  switch (mo_join_add(core->mo_join, it, target, &whole, &done)) {
  case MO_JOIN_PASS:
    return it;
  case MO_JOIN_HELD:
    return NULL;
  case MO_JOIN_DUPLICATE:
    history_add(core->history, it->msg->id, HISTORY_JOINED, (uint16_t)target, 0, 0, "a part had already");
    let_go(core, in, it);
    return NULL;
  case MO_JOIN_WHOLE:
    break;
  }
  if (whole) {
    join_finish(core, in, whole, &done, target);
    return whole;
  }
  /* No memory to join them: they go on as they came. */
  for (struct qitem *p = done.head, *next; p; p = next) {
    next = p->next;
    connector_release_held(core, in, target, p);
  }
  return NULL;
}

void connector_release_part(void *ctx, unsigned target, struct qitem *it)
{
  connector_release_held(ctx, NULL, target, it);
}

/* ---- before a queue ---- */

enum connector_held connector_hold(struct core *core, struct instance *in, struct qitem **it, unsigned target,
                                   int64_t now)
{
  if (!(*it = join_part(core, in, *it, target)))
    return CONNECTOR_HELD_JOINING;
  if (holds_until_due(core, target, (*it)->msg, now) && schedule(core, target, *it))
    return CONNECTOR_HELD_SCHEDULED;
  return CONNECTOR_NOT_HELD;
}
