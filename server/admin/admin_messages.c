/* admin_messages.c - the admin API's messages. See admin_messages.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "admin_json.h"
#include "admin_messages.h"
#include "cluster.h"
#include "endpoint.h"
#include "tables.h"

/* Most events one message can have in the history that a lookup shows:
 * a message retried this often has more to say than a screen holds. */
#define ADMIN_EVENTS_MAX 256

static unsigned answer_json(json_t **answer, unsigned status, json_t *j)
{
  *answer = j;
  return status;
}

static unsigned answer_error(json_t **answer, unsigned status, const char *what)
{
  return answer_json(answer, status, json_pack("{s:s}", "error", what));
}

/* Where a message stands, from its events (oldest first). */
struct message_view {
  const char *state;           /* "received", "queued", "sent", "failed", or a final receipt state */
  char summary[200];
  uint8_t smsc_receipt;        /* state of the last receipt from an SMSC; 0 = none */
  const char *to_origin;       /* the receipt for the origin: "queued", "delivered", NULL */
  int origin_connector;        /* -1 until known */
  char to[HISTORY_DETAIL_LEN]; /* its recipient, "" when the history lost it */
  int64_t received_ms;         /* 0 when the history lost it */
};

static void message_view(const struct core *c, const struct history_entry *e, size_t n,
                         struct message_view *v)
{
  v->state = "received";
  snprintf(v->summary, sizeof v->summary, "received");
  v->smsc_receipt = 0;
  v->to_origin = NULL;
  v->origin_connector = -1;
  v->to[0] = '\0';
  v->received_ms = 0;
  for (size_t i = 0; i < n; i++) {
    const char *where = connector_name(c, e[i].connector), *state = state_name(e[i].state);
    switch (e[i].event) {
    case HISTORY_RECEIVED:
      v->origin_connector = e[i].connector;
      v->received_ms = e[i].time_ms;
      break;
    case HISTORY_ADDRESSED:
      memcpy(v->to, e[i].detail, sizeof v->to);
      break;
    case HISTORY_QUEUED:
      v->state = "queued";
      snprintf(v->summary, sizeof v->summary, "queued on %s%s%s", where, e[i].detail[0] ? " for " : "",
               e[i].detail);
      break;
    case HISTORY_JOINED:
      /* The whole ("N parts") is queued; a part ("into ID") is done. */
      if (strncmp(e[i].detail, "into ", 5) == 0 || strcmp(e[i].detail, "a part had already") == 0)
        v->state = "joined";
      snprintf(v->summary, sizeof v->summary, "long MO joined for %s: %s", where, e[i].detail);
      break;
    case HISTORY_SCHEDULED:
      v->state = "scheduled";
      snprintf(v->summary, sizeof v->summary, "held for %s until %s UTC", where, e[i].detail);
      break;
    case HISTORY_REROUTED:
      v->state = "queued";
      snprintf(v->summary, sizeof v->summary, "queued on %s, moved from %s", where, e[i].detail);
      break;
    case HISTORY_RETRY:
      v->state = "queued";
      snprintf(v->summary, sizeof v->summary, "queued on %s for another attempt (%s)", where,
               e[i].detail[0] ? e[i].detail : "retry");
      break;
    case HISTORY_SENT:
      v->state = "sent";
      snprintf(v->summary, sizeof v->summary, "sent on %s as %s, awaiting its receipt", where,
               e[i].detail[0] ? e[i].detail : "?");
      break;
    case HISTORY_FAILED:
      v->state = "failed";
      snprintf(v->summary, sizeof v->summary, "failed on %s: %s%s%s", where, state ? state : "refused",
               e[i].detail[0] ? ", " : "", e[i].detail);
      break;
    case HISTORY_RECEIPT:
      v->smsc_receipt = e[i].state;
      if (msg_state_final(e[i].state)) {
        v->state = state ? state : "unknown";
        snprintf(v->summary, sizeof v->summary, "%s (receipt from %s)", v->state, where);
      } else {
        snprintf(v->summary, sizeof v->summary, "sent on %s, receipt says %s", where,
                 state ? state : "unknown");
      }
      break;
    case HISTORY_RECEIPT_GIVEN_UP:
      /* The gateway's own receipt in state UNKNOWN, as the message log
       * has it: the answer is the same from either source. */
      v->smsc_receipt = e[i].state;
      v->state = "unknown";
      snprintf(v->summary, sizeof v->summary, "sent on %s, no receipt awaited any more (%s)", where,
               e[i].detail);
      break;
    case HISTORY_RECEIPT_QUEUED:
    case HISTORY_RECEIPT_DELIVERED:
      /* A message to a server connector, or one that failed, has no SMSC
       * receipt: the receipt to its origin carries its outcome. */
      if (!v->smsc_receipt && e[i].state && msg_state_final(e[i].state) && strcmp(v->state, "failed") != 0)
        v->state = state;
      v->to_origin = e[i].event == HISTORY_RECEIPT_QUEUED ? "queued" : "delivered";
      v->origin_connector = e[i].connector;
      break;
    case HISTORY_REPLACED: {
      size_t len = strlen(v->summary);
      snprintf(v->summary + len, sizeof v->summary - len, "; replaced by %s", e[i].detail);
      break;
    }
    case HISTORY_RECEIPT_HELD: {
      size_t len = strlen(v->summary);
      snprintf(v->summary + len, sizeof v->summary - len, "; a part: its origin hears of the whole message");
      break;
    }
    default:
      break;
    }
  }
  if (v->to_origin) {
    size_t len = strlen(v->summary);
    snprintf(v->summary + len, sizeof v->summary - len, "; its receipt %s to %s", v->to_origin,
             connector_name(c, (unsigned)v->origin_connector));
  }
}

static json_t *event_json(const struct core *c, const struct history_entry *e)
{
  return json_pack("{s:o, s:I, s:s, s:s, s:o, s:I, s:o}", "time", json_time_ms(e->time_ms), "time_ms",
                   (json_int_t)e->time_ms, "event", history_event_name(e->event), "connector",
                   connector_name(c, e->connector), "state", json_text_or_null(state_name(e->state)),
                   "code", (json_int_t)e->code, "detail", json_text_or_null(e->detail));
}

/* A message as the message log has it: its row's states and times as events. */
static json_t *logged_message_json(const struct db_message *row)
{
  json_t *events = json_array();
  struct { int64_t ms; const char *event; const char *connector; const char *state; const char *detail; } e[] = {
    { row->received_ms, "received", row->origin_connector, NULL, row->origin_user },
    { row->sent_ms, "sent", row->target_connector, NULL, row->smsc_id },
    { row->receipt_ms, "receipt", row->target_connector,
      row->has_receipt ? state_name(row->receipt_state) : NULL, NULL },
    { row->final_ms, "final", row->target_connector, row->state ? state_name(row->state) : NULL, NULL },
  };
  for (size_t i = 0; i < sizeof e / sizeof e[0]; i++)
    if (e[i].ms)
      json_array_append_new(events, json_pack("{s:o, s:I, s:s, s:s, s:o, s:o}", "time", json_time_ms(e[i].ms),
                                              "time_ms", (json_int_t)e[i].ms, "event", e[i].event,
                                              "connector", e[i].connector, "state", json_text_or_null(e[i].state),
                                              "detail", json_text_or_null(e[i].detail)));
  char hex[24], summary[160];
  snprintf(hex, sizeof hex, "0x%" PRIx64, row->id);
  const char *state = row->state ? state_name(row->state) : "queued";
  snprintf(summary, sizeof summary, "%s (from the message log of node %u)", state, row->node_id);
  return json_pack("{s:o, s:s, s:s, s:s, s:{s:o, s:o, s:s}, s:s, s:o}", "id", json_id(row->id), "id_hex", hex,
                   "state", state, "summary", summary, "receipt", "from_smsc",
                   json_text_or_null(row->has_receipt ? state_name(row->receipt_state) : NULL), "to_origin",
                   json_null(), "origin", row->origin_connector, "source", "database", "events", events);
}

/* GET /api/messages/ID: the message's events and where it stands; 404 with
 * a reason when the history holds nothing of it. */
unsigned admin_message_get(struct core *c, uint64_t id, json_t **answer)
{
  struct history_entry *events = calloc(ADMIN_EVENTS_MAX, sizeof *events);
  if (!events)
    return answer_error(answer, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
  size_t n = history_find(c->history, id, events, ADMIN_EVENTS_MAX);
  /* With a database, a message the ring no longer holds is looked up in
   * the message log (in this thread: it may block up to its time-out, which
   * only delays this answer). Without one, or when it is not there either: 404. */
  if (!n && c->cluster) {
    free(events);
    struct db_message row;
    char err[256];
    int found = cluster_message(c->cluster, id, &row, err, sizeof err);
    if (found < 0)
      return answer_json(answer, MHD_HTTP_SERVICE_UNAVAILABLE, json_pack("{s:s, s:s, s:o}", "error", "the message log cannot answer now", "reason",
                                  err, "id", json_id(id)));
    if (found)
      return answer_json(answer, MHD_HTTP_OK, logged_message_json(&row));
    events = NULL;
  }
  if (!n) {
    free(events);
    char why[200];
    snprintf(why, sizeof why,
             "message %" PRIu64 " is not in the recent history (it keeps the last %zu events)", id,
             history_capacity(c->history));
    return answer_json(answer, MHD_HTTP_NOT_FOUND, json_pack("{s:s, s:o}", "error", why, "id", json_id(id)));
  }
  struct message_view v;
  message_view(c, events, n, &v);
  json_t *list = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(list, event_json(c, &events[i]));
  free(events);
  char hex[24];
  snprintf(hex, sizeof hex, "0x%" PRIx64, id);
  return answer_json(answer, MHD_HTTP_OK, json_pack("{s:o, s:s, s:s, s:o, s:{s:o, s:o, s:o}, s:s, s:o}", "id", json_id(id), "id_hex", hex,
              "state", v.state, "summary", json_text(v.summary), "receipt", "from_smsc",
              json_text_or_null(state_name(v.smsc_receipt)), "to_origin",
              json_text_or_null(v.to_origin), "origin",
              v.origin_connector < 0 ? json_null() : json_string(connector_name(c, (unsigned)v.origin_connector)),
              "source", "history", "events", list));
}

/* ---- search ---- */

/* Most messages a search shows: an operator narrows a search that finds more. */
#define SEARCH_MAX 16

struct search {
  struct core *c;
  struct { uint64_t id; json_t *row; } found[SEARCH_MAX * 3];
  size_t n;
  struct history_entry *events;
};

static bool search_has(const struct search *s, uint64_t id)
{
  for (size_t i = 0; i < s->n; i++)
    if (s->found[i].id == id)
      return true;
  return false;
}

static void search_add(struct search *s, uint64_t id, json_t *row)
{
  if (!row)
    return;
  if (s->n < sizeof s->found / sizeof s->found[0] && !search_has(s, id)) {
    s->found[s->n].id = id;
    s->found[s->n++].row = row;
  } else {
    json_decref(row);
  }
}

/* A message the history holds, as a search lists it. */
static void search_add_recent(struct search *s, uint64_t id, const char *matched)
{
  if (search_has(s, id))
    return;
  struct message_view v;
  size_t k = history_find(s->c->history, id, s->events, ADMIN_EVENTS_MAX);
  message_view(s->c, s->events, k, &v);
  search_add(s, id, json_pack("{s:o, s:s, s:s, s:s, s:o, s:o, s:s}", "id", json_id(id), "matched", matched, "state",
                              v.state, "summary", v.summary, "to", json_text_or_null(v.to), "received",
                              json_time_ms(v.received_ms), "source", "history"));
}

static void search_add_logged(struct search *s, const struct db_message *row, const char *matched)
{
  const char *state = row->state ? state_name(row->state) : "queued";
  char summary[200];
  snprintf(summary, sizeof summary, "%s on %s%s%s (from the message log of node %u)", state,
           row->target_connector[0] ? row->target_connector : "no connector yet", row->smsc_id[0] ? " as " : "",
           row->smsc_id, row->node_id);
  search_add(s, row->id, json_pack("{s:o, s:s, s:s, s:s, s:o, s:o, s:s}", "id", json_id(row->id), "matched", matched,
                                   "state", state, "summary", summary, "to", json_text_or_null(row->dst.addr),
                                   "received", json_time_ms(row->received_ms), "source", "database"));
}

/* The message log's messages an SMSC knows by smsc_id (normalised for each
 * client connector as its DLR table keys it), or sent to a recipient. */
static int search_logged(struct search *s, enum db_message_key key, const char *value, char *err, size_t err_len)
{
  struct db *db = cluster_admin_db(s->c->cluster);
  struct db_message rows[SEARCH_MAX];
  const char *matched = key == DB_MESSAGE_BY_RECIPIENT ? "to" : "smsc_id";
  if (key == DB_MESSAGE_BY_RECIPIENT) {
    int n = db_message_search(db, key, value, NULL, rows, SEARCH_MAX, err, err_len);
    for (int i = 0; i < n; i++)
      search_add_logged(s, &rows[i], matched);
    return n < 0 ? n : 0;
  }
  for (unsigned i = 0; i < s->c->n_connectors; i++) {
    const struct config_connector *cfg = connector_config(core_connector(s->c, i));
    char normal[DLR_ID_LEN];
    if (cfg->mode != CONFIG_CONN_CLIENT ||
        dlr_id_normalize(normal, sizeof normal, value, (enum dlr_id_type)cfg->msgid_submit) < 0)
      continue;
    int n = db_message_search(db, key, normal, cfg->name, rows, SEARCH_MAX, err, err_len);
    if (n < 0)
      return n;
    for (int k = 0; k < n; k++)
      search_add_logged(s, &rows[k], matched);
  }
  return 0;
}

static int newest_first(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

unsigned admin_message_search(struct core *c, const char *smsc_id, const char *to, const char *any, json_t **answer)
{
  const char *value = any ? any : smsc_id ? smsc_id : to;
  if ((!!smsc_id + !!to + !!any) != 1 || !*value || strlen(value) >= HISTORY_DETAIL_LEN)
    return answer_error(answer, MHD_HTTP_BAD_REQUEST,
                        "give one of smsc_id (the SMSC's message id), to (a recipient) or q (either, or our "
                        "message id), up to 39 characters");
  struct search *s = calloc(1, sizeof *s);
  if (!s || !(s->events = calloc(ADMIN_EVENTS_MAX, sizeof *s->events))) {
    free(s);
    return answer_error(answer, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
  }
  s->c = c;
  bool by_smsc = !to, by_recipient = !smsc_id;
  /* A recipient as the gateway keeps addresses: "+4917..." and "4917..."
   * are one number (value fits: it is shorter than HISTORY_DETAIL_LEN). */
  struct msg_addr recipient;
  msg_addr_set(&recipient, value, strlen(value), 0, 0);
  uint64_t id, ids[SEARCH_MAX];
  char err[DB_ERR_LEN] = "";
  int db_rc = 0;
  if (any && parse_msg_id(any, &id) == 0) {
    if (history_find(c->history, id, s->events, 1))
      search_add_recent(s, id, "id");
    else if (c->cluster) {
      struct db_message row;
      db_rc = cluster_message(c->cluster, id, &row, err, sizeof err);
      if (db_rc > 0)
        search_add_logged(s, &row, "id");
    }
  }
  size_t n = by_smsc ? history_search(c->history, HISTORY_SENT, value, ids, SEARCH_MAX) : 0;
  for (size_t i = 0; i < n; i++)
    search_add_recent(s, ids[i], "smsc_id");
  n = by_recipient ? history_search(c->history, HISTORY_ADDRESSED, recipient.addr, ids, SEARCH_MAX) : 0;
  for (size_t i = 0; i < n; i++)
    search_add_recent(s, ids[i], "to");
  /* Older messages from the message log, when there is one: on this
   * thread, as for one message (it may wait up to the database's time-out). */
  if (c->cluster && db_rc >= 0 && by_smsc)
    db_rc = search_logged(s, DB_MESSAGE_BY_SMSC_ID, value, err, sizeof err);
  if (c->cluster && db_rc >= 0 && by_recipient)
    db_rc = search_logged(s, DB_MESSAGE_BY_RECIPIENT, recipient.addr, err, sizeof err);
  qsort(s->found, s->n, sizeof s->found[0], newest_first);
  json_t *list = json_array();
  for (size_t i = 0; i < s->n; i++)
    if (i < SEARCH_MAX)
      json_array_append_new(list, s->found[i].row);
    else
      json_decref(s->found[i].row);
  json_t *j = json_pack("{s:s, s:o, s:I, s:b}", smsc_id ? "smsc_id" : to ? "to" : "q", value, "messages", list,
                        "history_capacity", (json_int_t)history_capacity(c->history), "more", s->n > SEARCH_MAX);
  if (j && db_rc < 0)
    json_object_set_new(j, "database_error", json_text(err));
  free(s->events);
  free(s);
  return answer_json(answer, MHD_HTTP_OK, j);
}

unsigned admin_message_drop(struct core *c, uint64_t id, json_t **answer)
{
  for (unsigned i = 0; i < c->n_connectors; i++)
    if (connector_drop_message(core_connector(c, i), NULL, id, "dropped by the operator"))
      return answer_json(answer, MHD_HTTP_OK, json_pack("{s:o, s:b}", "id", json_id(id), "dropped", 1));
  if (connector_cancel_scheduled(c, NULL, id, "cancelled by the operator before its time"))
    return answer_json(answer, MHD_HTTP_OK, json_pack("{s:o, s:b, s:b}", "id", json_id(id), "dropped", 1,
                                                   "scheduled", 1));
  return answer_error(answer, MHD_HTTP_NOT_FOUND, "not in any queue (in a window, sent, or unknown)");
}

