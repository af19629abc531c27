/* admin_queues.c - the admin API's JSON of the queues: GET /api/queues
 * (each connector's queue and its accounts' queues, their counts and the
 * age of their oldest message) and GET /api/queues/NAME/messages (what
 * waits in a connector's queues, then what the gateway holds for it until
 * its time, a page at a time).
 *
 * A listing copies what it shows of each item under the queue's lock, for
 * at most QUEUE_WALK_CHUNK items at a time (queue_walk), and builds the
 * JSON after the lock is released: it never blocks the message path.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "account.h"
#include "admin_internal.h"
#include "admin_json.h"
#include "proto.h"

/* ---- values as a listing shows them ---- */

static int64_t now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "throttled" for PROTO_E_THROTTLED: what a retry was for. */
static void status_text(uint8_t status, char *out, size_t cap)
{
  static const char prefix[] = "PROTO_E_";
  const char *name = proto_status_name((enum proto_status)status);
  if (strncmp(name, prefix, sizeof prefix - 1) == 0)
    name += sizeof prefix - 1;
  size_t i = 0;
  for (; name[i] && i + 1 < cap; i++)
    out[i] = (char)tolower((unsigned char)name[i]);
  out[i] = '\0';
}

/* ---- a listing ---- */

/* What a listing shows of one item, copied under the queue's lock (the
 * JSON is built after it is released). */
struct listed {
  enum qitem_kind kind;
  uint64_t id;                 /* the message's (a receipt's: the message it reports on) */
  char from[MSG_ADDR_LEN], to[MSG_ADDR_LEN];
  int64_t received_ms;         /* messages */
  uint16_t attempts;
  uint8_t last_status;
  uint8_t level;               /* the priority lane it waits in */
  bool scheduled;              /* held by the gateway until send_at */
  int64_t send_at;             /* its deferred time (Unix s); 0 = none */
  uint8_t state;               /* receipts */
  int64_t next_attempt_ms;
  uint16_t origin_connector;   /* messages */
  char origin_user[MSG_USER_LEN];
  char origin_ref[MSG_ID_LEN];
};

struct listing {
  struct listed *items;
  size_t count, cap;
};

static void list_item(const struct qitem *it, void *arg)
{
  struct listing *l = arg;
  if (l->count == l->cap)
    return;
  struct listed *d = &l->items[l->count++];
  d->kind = it->kind;
  d->level = (uint8_t)qitem_level(it);
  d->scheduled = false;
  d->send_at = it->kind == QITEM_MSG ? it->msg->deferred : 0;
  d->attempts = it->attempts;
  d->last_status = it->last_status;
  d->next_attempt_ms = it->next_attempt_ms;
  if (it->kind == QITEM_MSG) {
    const struct msg *m = it->msg;
    d->id = m->id;
    memcpy(d->from, m->src.addr, sizeof d->from);
    memcpy(d->to, m->dst.addr, sizeof d->to);
    d->received_ms = m->received_ms;
    d->origin_connector = m->origin.connector;
    memcpy(d->origin_user, m->origin.user, sizeof d->origin_user);
    memcpy(d->origin_ref, m->origin.ref, sizeof d->origin_ref);
    d->state = 0;
  } else {
    d->id = it->msg_id;
    memcpy(d->from, it->receipt.src.addr, sizeof d->from);
    memcpy(d->to, it->receipt.dst.addr, sizeof d->to);
    d->received_ms = 0;
    d->origin_user[0] = '\0';
    memcpy(d->origin_ref, it->receipt.id, sizeof d->origin_ref);
    d->state = it->receipt.state;
  }
}

/* A held message: listed as any, and marked. */
static void list_scheduled(const struct qitem *it, void *arg)
{
  struct listing *l = arg;
  size_t before = l->count;
  list_item(it, arg);
  if (l->count > before)
    l->items[before].scheduled = true;
}

static json_t *listed_json(const struct core *c, const struct listed *d, int64_t now)
{
  char error[32] = "";
  if (d->last_status)
    status_text(d->last_status, error, sizeof error);
  json_t *j = json_pack("{s:s, s:o, s:o, s:o, s:i, s:i, s:o, s:o, s:o}", "kind",
                        d->kind == QITEM_MSG ? "message" : "receipt", "id", json_id(d->id), "from",
                        json_text(d->from), "to", json_text(d->to), "priority", (int)d->level,
                        "attempts", (int)d->attempts,
                        "next_attempt", json_time_ms(d->next_attempt_ms), "last_error",
                        json_text_or_null(error), "origin_ref", json_text(d->origin_ref));
  if (!j)
    return NULL;
  json_object_set_new(j, "scheduled", json_boolean(d->scheduled));
  json_object_set_new(j, "send_at", d->send_at > 0 ? json_time_ms(d->send_at * 1000) : json_null());
  if (d->kind == QITEM_MSG) {
    json_object_set_new(j, "age_s", json_real((double)(now - d->received_ms) / 1000.0));
    json_object_set_new(j, "origin", json_pack("{s:s, s:o}", "connector",
                                               connector_name(c, d->origin_connector), "user",
                                               json_text(d->origin_user)));
  } else {
    json_object_set_new(j, "age_s", json_null());
    json_object_set_new(j, "state", json_text_or_null(state_name(d->state)));
  }
  return j;
}

/* The first item of q, when there is one. */
static bool queue_first(struct queue *q, struct listed *first)
{
  struct listing l = { first, 0, 1 };
  queue_walk(q, 0, 1, list_item, &l);
  return l.count == 1;
}

static json_t *oldest_age(struct queue *q, int64_t now)
{
  struct listed first;
  return queue_first(q, &first) && first.kind == QITEM_MSG
           ? json_real((double)(now - first.received_ms) / 1000.0) : json_null();
}

json_t *admin_queues_json(struct core *c)
{
  json_t *list = json_array();
  json_int_t total = 0;
  int64_t now = now_ms();
  for (unsigned i = 0; i < c->n_connectors; i++) {
    struct connector *conn = core_connector(c, i);
    const struct config_connector *cfg = connector_config(conn);
    size_t n = connector_queued(conn);
    total += (json_int_t)n;
    /* Queue 0 is the out queue; a server connector has one per account after it. */
    json_t *accounts = json_array();
    for (unsigned q = 1; q < connector_queue_count(conn); q++) {
      struct account_view v;
      struct queue *aq = connector_queue(conn, q);
      /* An account that may use the connector, or a queue that still holds
       * something (an account since changed, or one waiting to be removed). */
      if (!(accounts_view(c->accounts, q - 1, &v) && accounts_uses(c->accounts, (int)q - 1, i)) && !queue_count(aq))
        continue;
      json_array_append_new(accounts, json_pack("{s:o, s:I, s:o}", "user", json_text(v.exists ? v.cfg.name : NULL),
                                                "queued", (json_int_t)queue_count(aq),
                                                "oldest_age_s", oldest_age(aq, now)));
    }
    json_array_append_new(list, json_pack("{s:s, s:I, s:I, s:I, s:b, s:o, s:o}", "connector", cfg->name,
                                          "queued", (json_int_t)n, "scheduled",
                                          (json_int_t)schedule_count(c->schedule, (int)i),
                                          "max_queue", (json_int_t)cfg->max_queue,
                                          "paused", connector_paused(conn), "oldest_age_s",
                                          oldest_age(connector_queue(conn, 0), now), "accounts",
                                          accounts));
  }
  return json_pack("{s:o, s:I, s:I, s:I, s:I, s:I}", "queues", list, "total", total, "scheduled",
                   (json_int_t)schedule_count(c->schedule, -1), "in_flight",
                   (json_int_t)atomic_load(&c->in_flight), "soft_limit",
                   (json_int_t)c->cfg->max_total_queue_soft, "hard_limit",
                   (json_int_t)c->cfg->max_total_queue);
}

json_t *admin_queue_messages_json(struct core *core, struct connector *conn, size_t offset, size_t limit)
{
  struct listing l = { calloc(limit ? limit : 1, sizeof *l.items), 0, limit };
  if (!l.items)
    return NULL;
  size_t total = 0, skip = offset;
  for (unsigned i = 0; i < connector_queue_count(conn); i++) {
    struct queue *q = connector_queue(conn, i);
    /* A queue wholly before the offset, or after the limit, is only counted. */
    size_t n = queue_count(q);
    if (skip < n && l.count < l.cap)
      n = queue_walk(q, skip, l.cap - l.count, list_item, &l);
    skip = skip > n ? skip - n : 0;
    total += n;
  }
  size_t scheduled = schedule_walk(core->schedule, connector_index(conn), skip, l.cap - l.count, list_scheduled, &l);
  int64_t now = now_ms();
  json_t *list = json_array();
  for (size_t i = 0; i < l.count; i++)
    json_array_append_new(list, listed_json(core, &l.items[i], now));
  free(l.items);
  return json_pack("{s:s, s:I, s:I, s:I, s:I, s:b, s:o}", "connector", connector_config(conn)->name,
                   "queued", (json_int_t)total, "scheduled", (json_int_t)scheduled, "offset", (json_int_t)offset, "limit",
                   (json_int_t)limit, "paused", connector_paused(conn), "messages", list);
}
