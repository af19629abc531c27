/* http_json.c - the JSON API: submits of POST /api/v1/messages and the
 * answers to them, receipt callback bodies, and the message id in a
 * provider's answer. See http_codec.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "hexutil.h"
#include "http_codec_internal.h"
#include "smpp_receipt.h"

#define DEFAULT_JSON_DLR_MASK (HTTP_CODEC_DLR_DELIVERED | HTTP_CODEC_DLR_FAILED)

/* ---- JSON submits ---- */

static enum coding_choice json_coding(json_t *v)
{
  if (!v)
    return CODING_AUTO;
  if (json_is_integer(v)) {
    json_int_t i = json_integer_value(v);
    return i == 0 ? CODING_GSM : i == 1 ? CODING_8BIT : i == 2 ? CODING_UCS2 : CODING_INVALID;
  }
  if (!json_is_string(v))
    return CODING_INVALID;
  const char *s = json_string_value(v);
  if (strcasecmp(s, "auto") == 0)
    return CODING_AUTO;
  if (strcasecmp(s, "gsm") == 0 || strcasecmp(s, "gsm7") == 0)
    return CODING_GSM;
  if (strcasecmp(s, "ucs2") == 0)
    return CODING_UCS2;
  if (strcasecmp(s, "binary") == 0 || strcasecmp(s, "8bit") == 0)
    return CODING_8BIT;
  return CODING_INVALID;
}

/* An integer field within [min, max] into *out; a fault otherwise. */
static void json_int_field(struct http_codec_batch *b, int message, const char *key, json_t *v,
                           json_int_t min, json_int_t max, json_int_t *out)
{
  if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
    http_codec_fault_add(b, message, key, "an integer from %" JSON_INTEGER_FORMAT
                         " to %" JSON_INTEGER_FORMAT, min, max);
  else
    *out = json_integer_value(v);
}

static const char *json_string_field(struct http_codec_batch *b, int message, const char *key,
                                     json_t *v)
{
  if (!json_is_string(v)) {
    http_codec_fault_add(b, message, key, "a string");
    return NULL;
  }
  return json_string_value(v);
}

/* The fields of one message, before its payload and recipients. */
struct json_fields {
  json_t *to, *text, *hex, *udh, *coding, *dlr_url, *callback;
  json_int_t dlr_mask, validity, deferred, mclass, pid, priority;
  bool has_from;
};

static void json_read_fields(struct http_codec_batch *b, int index, json_t *o, struct msg *m,
                             struct json_fields *f)
{
  const char *key, *s, *why;
  json_t *v;
  json_object_foreach(o, key, v) {
    if (strcmp(key, "from") == 0) {
      f->has_from = true;
      if ((s = json_string_field(b, index, key, v)) &&
          (why = http_codec_parse_sender(&m->src, s, json_string_length(v))))
        http_codec_fault_add(b, index, key, "%s", why);
    } else if (strcmp(key, "to") == 0) {
      f->to = v;
    } else if (strcmp(key, "text") == 0) {
      f->text = json_string_field(b, index, key, v) ? v : NULL;
    } else if (strcmp(key, "hex") == 0) {
      f->hex = json_string_field(b, index, key, v) ? v : NULL;
    } else if (strcmp(key, "udh") == 0) {
      f->udh = json_string_field(b, index, key, v) ? v : NULL;
    } else if (strcmp(key, "coding") == 0) {
      f->coding = v;
    } else if (strcmp(key, "dlr_url") == 0) {
      f->dlr_url = json_string_field(b, index, key, v) ? v : NULL;
    } else if (strcmp(key, "callback") == 0) {
      f->callback = json_string_field(b, index, key, v) ? v : NULL;
    } else if (strcmp(key, "dlr_mask") == 0) {
      json_int_field(b, index, key, v, 0, DLR_MASK_MAX, &f->dlr_mask);
    } else if (strcmp(key, "validity") == 0) {
      json_int_field(b, index, key, v, 1, SECONDS_MAX, &f->validity);
    } else if (strcmp(key, "deferred") == 0) {
      json_int_field(b, index, key, v, 1, SECONDS_MAX, &f->deferred);
    } else if (strcmp(key, "mclass") == 0) {
      json_int_field(b, index, key, v, 0, 3, &f->mclass);
    } else if (strcmp(key, "pid") == 0) {
      json_int_field(b, index, key, v, 0, 255, &f->pid);
    } else if (strcmp(key, "priority") == 0) {
      json_int_field(b, index, key, v, 0, 3, &f->priority);
    } else {
      http_codec_fault_add(b, index, key, "unknown field");
    }
  }
}

/* Payload and UDH of one message into m. */
static void json_payload(struct http_codec_batch *b, int index, const struct json_fields *f,
                         enum coding_choice coding, struct msg *m)
{
  const char *why, *field = f->text ? "text" : "hex";
  if (f->text) {
    why = http_codec_utf8_payload(b, m, json_string_value(f->text), json_string_length(f->text),
                                  coding, 0);
  } else {
    size_t room, len = json_string_length(f->hex);
    uint8_t *dst = http_codec_arena_room(b, &room);
    int n = len / 2 <= room ? hex_decode(dst, json_string_value(f->hex), len) : -1;
    why = n < 0 ? "not an even number of hex digits"
                : http_codec_octet_payload(b, m, dst, (size_t)n, coding);
  }
  if (why) {
    http_codec_fault_add(b, index, field, "%s", why);
    return;
  }
  if (f->udh) {
    size_t room, len = json_string_length(f->udh);
    uint8_t *dst = http_codec_arena_room(b, &room);
    int n = len / 2 <= room ? hex_decode(dst, json_string_value(f->udh), len) : -1;
    if (n < 0 || !http_codec_udh_valid(dst, (size_t)n)) {
      http_codec_fault_add(b, index, "udh", "hex of a UDH whose first octet is its length");
      return;
    }
    m->udh = http_codec_arena_commit(b, (size_t)n);
    m->udh_len = (uint16_t)n;
  }
}

/* Where the receipts go; NULL URL when nowhere. Returns false after a fault. */
static bool json_dlr(struct http_codec_batch *b, int index, const struct json_fields *f,
                     struct msg *m, enum http_codec_dlr_method *method, const char **url)
{
  json_t *v = f->dlr_url ? f->dlr_url : f->callback;
  const char *key = f->dlr_url ? "dlr_url" : "callback";
  *method = HTTP_CODEC_DLR_NONE;
  *url = NULL;
  m->dlr_mask = (uint8_t)(f->dlr_mask >= 0 ? f->dlr_mask : 0);
  if (!v)
    return true;
  if (f->dlr_url && f->callback) {
    http_codec_fault_add(b, index, "callback", "give dlr_url or callback, not both");
    return false;
  }
  if (!http_codec_is_http_url(json_string_value(v), json_string_length(v)) ||
      memchr(json_string_value(v), 0, json_string_length(v))) {
    http_codec_fault_add(b, index, key, "an http:// or https:// URL");
    return false;
  }
  if (!(*url = http_codec_arena_string(b, json_string_value(v), json_string_length(v)))) {
    http_codec_fault_add(b, index, key, "too long");
    return false;
  }
  *method = f->dlr_url ? HTTP_CODEC_DLR_GET : HTTP_CODEC_DLR_POST;
  if (f->dlr_mask < 0)
    m->dlr_mask = DEFAULT_JSON_DLR_MASK;
  return true;
}

static void json_recipients(struct http_codec_batch *b, int index, json_t *to, const struct msg *m,
                            enum http_codec_dlr_method method, const char *url)
{
  size_t n = json_is_array(to) ? json_array_size(to) : 1;
  struct msg one = *m;
  char digits[32];
  if (n == 0)
    http_codec_fault_add(b, index, "to", "no recipients");
  for (size_t i = 0; i < n; i++) {
    json_t *v = json_is_array(to) ? json_array_get(to, i) : to;
    const char *s = digits, *why;
    size_t len;
    if (json_is_string(v)) {
      s = json_string_value(v);
      len = json_string_length(v);
    } else if (json_is_integer(v) && json_integer_value(v) >= 0) {
      len = (size_t)snprintf(digits, sizeof digits, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    } else {
      http_codec_fault_add(b, index, "to", "recipient %zu: a string of digits", i);
      continue;
    }
    if ((why = http_codec_parse_recipient(&one.dst, s, len))) {
      http_codec_fault_add(b, index, "to", "recipient %zu: %s", i, why);
      continue;
    }
    http_codec_add_submit(b, &one, (unsigned)index, method, url);
  }
}

static void json_message(struct http_codec_batch *b, int index, json_t *o,
                         const struct http_codec_limits *lim)
{
  struct json_fields f = { .dlr_mask = -1, .mclass = -1 };
  struct msg m;
  size_t faults = b->fault_count;
  enum coding_choice coding;
  enum http_codec_dlr_method method;
  const char *url, *why, *field;
  char reason[HTTP_CODEC_REASON_LEN];

  if (!json_is_object(o)) {
    http_codec_fault_add(b, index, "", "a message is a JSON object");
    return;
  }
  memset(&m, 0, sizeof m);
  json_read_fields(b, index, o, &m, &f);
  if (!f.has_from)
    http_codec_fault_add(b, index, "from", "missing");
  if (!f.to)
    http_codec_fault_add(b, index, "to", "missing");
  if (f.text && f.hex)
    http_codec_fault_add(b, index, "hex", "give text or hex, not both");
  else if (!f.text && !f.hex && !json_object_get(o, "text") && !json_object_get(o, "hex"))
    http_codec_fault_add(b, index, "text", "missing (text or hex)");
  if ((coding = json_coding(f.coding)) == CODING_INVALID)
    http_codec_fault_add(b, index, "coding", "auto, gsm, ucs2, binary, or 0, 1, 2");
  if (b->fault_count != faults)
    return;
  json_payload(b, index, &f, coding, &m);
  if (b->fault_count != faults || !json_dlr(b, index, &f, &m, &method, &url))
    return;
  m.dcs = http_codec_dcs_for(m.coding, (int)f.mclass);
  if ((why = http_codec_payload_check(&m, lim->max_parts, &field, reason, sizeof reason))) {
    http_codec_fault_add(b, index, field, "%s", why);
    return;
  }
  m.validity = -f.validity;
  m.deferred = -f.deferred;
  m.pid = (uint8_t)f.pid;
  m.priority = (uint8_t)f.priority;
  json_recipients(b, index, f.to, &m, method, url);
}

/* The message list of a body: the array, {"messages": array}, or the one object. */
static json_t *json_messages(json_t *root, bool *single)
{
  json_t *list;
  *single = false;
  if (json_is_array(root))
    return root;
  if (!json_is_object(root))
    return NULL;
  list = json_object_get(root, "messages");
  if (list)
    return json_is_array(list) ? list : NULL;
  *single = true;
  return root;
}

int http_codec_json_parse(struct http_codec_batch **out, const char *body, size_t len,
                          const struct http_codec_limits *lim_in)
{
  struct http_codec_limits lim;
  struct http_codec_batch *b = NULL;
  json_error_t jerr;
  json_t *root, *list;
  size_t messages = 0, recipients = 0;
  bool single;
  int rc = HTTP_CODEC_E_INVALID;

  http_codec_limits_resolve(lim_in, &lim);
  *out = NULL;
  root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
  list = root ? json_messages(root, &single) : NULL;
  if (list) {
    messages = single ? 1 : json_array_size(list);
    for (size_t i = 0; i < messages && recipients <= lim.max_recipients; i++) {
      json_t *to = json_object_get(single ? list : json_array_get(list, i), "to");
      recipients += json_is_array(to) ? json_array_size(to) : 1;
    }
  }
  bool too_large = messages > lim.max_messages || recipients > lim.max_recipients;
  /* Every payload is at most twice its text in the body (UCS2 of ASCII);
   * URLs are copied with a NUL. */
  b = http_codec_batch_create(too_large ? 0 : recipients, too_large ? 0 : 2 * len + 2 * messages + 64);
  if (!b) {
    rc = HTTP_CODEC_E_NOMEM;
    goto out;
  }
  if (!root) {
    http_codec_fault_add(b, -1, "", "not JSON: %s (line %d, column %d)", jerr.text, jerr.line,
                         jerr.column);
  } else if (!list) {
    http_codec_fault_add(b, -1, "",
                         "expected a message object, an array of them, or {\"messages\": [...]}");
  } else if (messages == 0) {
    http_codec_fault_add(b, -1, "messages", "no messages");
  } else if (too_large) {
    http_codec_fault_add(b, -1, "messages", "at most %u messages and %u recipients in one request",
                         lim.max_messages, lim.max_recipients);
    rc = HTTP_CODEC_E_TOO_LARGE;
  } else {
    for (size_t i = 0; i < messages; i++)
      json_message(b, (int)i, single ? list : json_array_get(list, i), &lim);
    rc = b->fault_count ? HTTP_CODEC_E_INVALID : 0;
  }
  if (rc != 0)
    b->count = 0;
  *out = b;
out:
  json_decref(root);
  return rc;
}

/* ---- answers ---- */

char *http_codec_json_answer(const struct http_codec_batch *b, const struct http_codec_result *results,
                             unsigned *status)
{
  json_t *root = json_object(), *list = json_array();
  char *text = NULL, to[MSG_ADDR_LEN + 2], id[24];
  size_t first_refused, taken = 0;
  bool queued, ok = root && list;

  if (!ok)
    goto out;
  taken = http_codec_results_taken(b, results, &first_refused, &queued);
  for (size_t i = 0; i < b->count && ok; i++) {
    const struct http_codec_result *r = &results[i];
    http_codec_addr_text(to, sizeof to, &b->items[i].msg.dst);
    json_t *e = json_pack("{s:I, s:s, s:s}", "message", (json_int_t)b->items[i].message, "to", to,
                          "status", http_codec_outcome_taken(r->outcome)
                                        ? (r->outcome == HTTP_CODEC_QUEUED ? "queued" : "accepted")
                                        : "refused");
    if (e && http_codec_outcome_taken(r->outcome)) {
      snprintf(id, sizeof id, "%" PRIu64, r->id);
      ok = json_object_set_new(e, "id", json_string(id)) == 0;
    } else if (e) {
      ok = json_object_set_new(e, "error", json_string(http_codec_outcome_text(r->outcome))) == 0 &&
           json_object_set_new(e, "retry", json_boolean(http_codec_outcome_retry(r->outcome))) == 0;
    }
    ok = ok && json_array_append_new(list, e) == 0;
  }
  ok = ok && json_object_set_new(root, "accepted", json_integer((json_int_t)taken)) == 0 &&
       json_object_set_new(root, "refused", json_integer((json_int_t)(b->count - taken))) == 0 &&
       json_object_set(root, "messages", list) == 0;
  if (ok)
    text = json_dumps(root, JSON_COMPACT);
  if (taken == b->count)
    *status = 202;
  else if (taken)
    *status = 207;
  else if (results[first_refused].outcome == HTTP_CODEC_THROTTLED)
    *status = 429;
  else if (results[first_refused].outcome == HTTP_CODEC_TEMPORARY)
    *status = 503;
  else if (results[first_refused].outcome == HTTP_CODEC_NO_CREDIT)
    *status = 402;
  else
    *status = 400;
out:
  json_decref(list);
  json_decref(root);
  return text;
}

char *http_codec_json_faults(const struct http_codec_batch *b)
{
  json_t *root = json_pack("{s:s, s:I}", "error", "invalid request", "fault_count",
                           (json_int_t)b->fault_count);
  json_t *list = json_array();
  char *text = NULL;
  bool ok = root && list;
  size_t kept = b->fault_count < HTTP_CODEC_FAULTS_MAX ? b->fault_count : HTTP_CODEC_FAULTS_MAX;
  for (size_t i = 0; i < kept && ok; i++) {
    const struct http_codec_fault *f = &b->faults[i];
    ok = json_array_append_new(list, json_pack("{s:i, s:s, s:s}", "message", f->message, "field",
                                               f->field, "reason", f->reason)) == 0;
  }
  if (ok && json_object_set(root, "faults", list) == 0)
    text = json_dumps(root, JSON_COMPACT);
  json_decref(list);
  json_decref(root);
  return text;
}

char *http_codec_json_error(const char *error)
{
  json_t *root = json_pack("{s:s}", "error", error);
  char *text = root ? json_dumps(root, JSON_COMPACT) : NULL;
  json_decref(root);
  return text;
}

/* ---- receipts ---- */

/* Adds key: s when s is given. */
static bool json_set_string(json_t *o, const char *key, const char *s)
{
  return !s || json_object_set_new(o, key, json_string(s)) == 0;
}

int http_codec_dlr_json(char *dst, size_t cap, const struct http_codec_dlr *d)
{
  const struct msg_receipt *r = d ? d->receipt : NULL;
  char id[24], from[MSG_ADDR_LEN + 2], to[MSG_ADDR_LEN + 2], answer[256];
  json_t *j;
  size_t len;
  int rc = HTTP_CODEC_E_NOMEM;

  if (!r)
    return HTTP_CODEC_E_INVALID;
  unsigned type = http_codec_dlr_type(r->state);
  if (d->answer)
    snprintf(answer, sizeof answer, "%s", d->answer);
  else
    http_codec_receipt_answer(answer, sizeof answer, d, type);
  snprintf(id, sizeof id, "%" PRIu64, d->id);
  http_codec_addr_text(from, sizeof from, &r->src);
  http_codec_addr_text(to, sizeof to, &r->dst);
  const char *stat = type == HTTP_CODEC_DLR_SMSC_ACK    ? "ACK"
                     : type == HTTP_CODEC_DLR_SMSC_NACK ? "NACK"
                                                        : smpp_state_stat(r->state);
  j = json_pack("{s:s, s:i, s:s, s:i, s:s, s:s, s:s, s:I, s:I, s:I}", "id", id, "dlr", (int)type,
                "status", stat ? stat : "", "err", (int)r->err, "from", from, "to", to, "answer",
                answer, "submit_time", (json_int_t)r->submit_time, "done_time",
                (json_int_t)r->done_time, "time", (json_int_t)d->time);
  if (!j || !json_set_string(j, "smsc", d->smsc) || !json_set_string(j, "smsc_id", d->smsc_msgid) ||
      !json_set_string(j, "user", d->user))
    goto out;
  len = json_dumpb(j, dst, cap, JSON_COMPACT);
  if (len == 0)
    goto out;
  if (len >= cap) {
    rc = HTTP_CODEC_E_SPACE;
    goto out;
  }
  dst[len] = 0;
  rc = (int)len;
out:
  json_decref(j);
  return rc;
}

/* ---- provider answers ---- */

/* The value at a dotted path ("messages.0.id") in root, or NULL. */
static json_t *json_path(json_t *root, const char *path)
{
  json_t *v = root;
  while (v && *path) {
    size_t n = strcspn(path, ".");
    if (json_is_array(v)) {
      char *end;
      unsigned long i = strtoul(path, &end, 10);
      v = end == path + n ? json_array_get(v, i) : NULL;
    } else {
      v = json_object_getn(v, path, n);
    }
    path += n + (path[n] == '.');
  }
  return v;
}

static void provider_id(const char *body, size_t len, const char *id_field, char *msgid, size_t cap)
{
  if (!id_field || !*id_field) {
    while (len && (*body == ' ' || *body == '\t' || *body == '\r' || *body == '\n')) {
      body++;
      len--;
    }
    while (len && (body[len - 1] == ' ' || body[len - 1] == '\t' || body[len - 1] == '\r' ||
                   body[len - 1] == '\n'))
      len--;
    if (len < cap && !memchr(body, 0, len)) {
      memcpy(msgid, body, len);
      msgid[len] = 0;
    }
    return;
  }
  json_t *root = json_loadb(body, len, 0, NULL);
  json_t *v = root ? json_path(root, id_field) : NULL;
  if (json_is_string(v) && json_string_length(v) < cap && !memchr(json_string_value(v), 0, json_string_length(v)))
    memcpy(msgid, json_string_value(v), json_string_length(v) + 1);
  else if (json_is_integer(v))
    snprintf(msgid, cap, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
  json_decref(root);
}

enum proto_status http_codec_out_classify(long http_status, const char *body, size_t len,
                                          const char *id_field, char *msgid, size_t msgid_cap)
{
  if (msgid_cap)
    msgid[0] = 0;
  if (http_status >= 200 && http_status < 300) {
    if (msgid_cap && body)
      provider_id(body, len, id_field, msgid, msgid_cap);
    return PROTO_OK;
  }
  if (http_status == 429)
    return PROTO_E_THROTTLED;
  if (http_status == 0 || http_status == 408 || (http_status >= 500 && http_status < 600))
    return PROTO_E_TEMPORARY;
  return PROTO_E_PERMANENT;
}
