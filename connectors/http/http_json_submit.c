/* http_json_submit.c - the body of POST /api/v1/messages, read as a stream.
 *
 * yajl calls back once per key and value; no tree is built and nothing is
 * allocated per value (a batch of 100 messages cost more in jansson's tree
 * and its allocations than everything else the gateway did with it). The
 * fields of a message are kept until its object ends, then checked and
 * turned into submits. See http_codec.h for the format.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <yajl/yajl_parse.h>
#include "hexutil.h"
#include "http_codec_internal.h"

#define DEFAULT_JSON_DLR_MASK (HTTP_CODEC_DLR_DELIVERED | HTTP_CODEC_DLR_FAILED)
#define JSON_DEPTH_MAX 64      /* a message is two levels deep; more is not a message */

enum field {
  F_FROM, F_TO, F_TEXT, F_HEX, F_UDH, F_CODING, F_DLR_URL, F_CALLBACK,
  F_DLR_MASK, F_VALIDITY, F_DEFERRED, F_SEND_AT, F_MCLASS, F_PID, F_PRIORITY,
  F_COUNT,
  F_UNKNOWN = F_COUNT,
  F_NONE
};

static const char *const field_names[F_COUNT] = {
  "from", "to", "text", "hex", "udh", "coding", "dlr_url", "callback",
  "dlr_mask", "validity", "deferred", "send_at", "mclass", "pid", "priority",
};

/* A value as it was given: its kind and, for strings, where its text is. */
enum kind { K_NONE, K_STRING, K_INTEGER, K_NUL_STRING, K_OTHER };
struct value {
  enum kind kind;
  const char *s;
  size_t len;
  long long i;
};

enum root { ROOT_NONE, ROOT_LIST, ROOT_OBJECT, ROOT_WRAPPER, ROOT_SINGLE, ROOT_OTHER };

struct reader {
  struct http_codec_batch *b;
  const struct http_codec_limits *lim;
  const char *body;              /* yajl's strings point into it unless escaped */
  size_t body_len;
  enum root root;
  int depth;                     /* containers open */
  int skip_from;                 /* > 0: inside a value ignored, opened at this depth */
  int list_depth;                /* the message list's depth; 0 before it opens */
  bool list_given;               /* the wrapper's "messages" key was seen */
  enum field key;                /* what the next value is for (F_NONE: not in a message) */
  bool wrapper_key;              /* the next value is the wrapper's "messages" */
  bool in_to;                    /* inside the array of "to" */
  bool too_large, too_deep, nomem;
  size_t messages, recipients;
  /* the message being read */
  int message_depth;             /* 0: none open */
  struct value field[F_COUNT];
  struct value *to;
  size_t to_count, to_cap;
  char *scratch;                 /* escaped strings and integer recipients, per message */
  size_t scratch_len, scratch_cap;
};

static int message_index(const struct reader *r)
{
  return (int)r->messages - 1;
}

/* A key or reason cut to a fault's field, NUL-terminated. */
static void key_text(char *dst, size_t cap, const unsigned char *key, size_t len)
{
  size_t n = len < cap - 1 ? len : cap - 1;
  memcpy(dst, key, n);
  dst[n] = 0;
}

/* ---- one message ---- */

static enum coding_choice coding_of(const struct value *v)
{
  if (v->kind == K_NONE)
    return CODING_AUTO;
  if (v->kind == K_INTEGER)
    return v->i == 0 ? CODING_GSM : v->i == 1 ? CODING_8BIT : v->i == 2 ? CODING_UCS2 : CODING_INVALID;
  if (v->kind != K_STRING)
    return CODING_INVALID;
  static const struct {
    const char *name;
    enum coding_choice coding;
  } names[] = { { "auto", CODING_AUTO }, { "gsm", CODING_GSM },     { "gsm7", CODING_GSM },
                { "ucs2", CODING_UCS2 }, { "binary", CODING_8BIT }, { "8bit", CODING_8BIT } };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (v->len == strlen(names[i].name) && strncasecmp(v->s, names[i].name, v->len) == 0)
      return names[i].coding;
  return CODING_INVALID;
}

/* An integer field within [min, max] into *out (unchanged when absent);
 * a fault otherwise. */
static void int_field(struct reader *r, enum field f, long long min, long long max, long long *out)
{
  const struct value *v = &r->field[f];
  if (v->kind == K_NONE)
    return;
  if (v->kind != K_INTEGER || v->i < min || v->i > max)
    http_codec_fault_add(r->b, message_index(r), field_names[f], "an integer from %lld to %lld", min,
                         max);
  else
    *out = v->i;
}

/* send_at: Unix seconds, or UTC as "YYYY-MM-DDTHH:MM:SSZ", within a year
 * from now; a time passed means at once. Sets *out (absolute), or a fault. */
static void send_at_field(struct reader *r, long long *out)
{
  const struct value *v = &r->field[F_SEND_AT];
  time_t now = time(NULL);
  long long t = -1;
  if (v->kind == K_NONE)
    return;
  if (v->kind == K_INTEGER) {
    t = v->i;
  } else if (v->kind == K_STRING && v->len == 20) {
    struct tm tm = { 0 };
    char text[21];
    memcpy(text, v->s, 20);
    text[20] = 0;
    const char *end = strptime(text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (end && !*end)
      t = (long long)timegm(&tm);
  }
  if (t < 0 || t > (long long)now + SECONDS_MAX) {
    http_codec_fault_add(r->b, message_index(r), "send_at",
                         "Unix seconds or UTC as YYYY-MM-DDTHH:MM:SSZ, within a year");
    return;
  }
  if (r->field[F_DEFERRED].kind != K_NONE) {
    http_codec_fault_add(r->b, message_index(r), "send_at", "give deferred or send_at, not both");
    return;
  }
  *out = t > (long long)now ? t : 0;
}

/* Whether a string field is absent or a string; a fault when it is not. */
static bool string_field(struct reader *r, enum field f)
{
  if (r->field[f].kind == K_NONE || r->field[f].kind == K_STRING)
    return true;
  http_codec_fault_add(r->b, message_index(r), field_names[f],
                       r->field[f].kind == K_NUL_STRING ? "a string without \\u0000" : "a string");
  return false;
}

static bool given(const struct reader *r, enum field f)
{
  return r->field[f].kind == K_STRING;
}

/* Hex text into the arena; its length, or -1 when it is not hex or does not fit. */
static int hex_into_arena(struct http_codec_batch *b, const struct value *v, uint8_t **dst)
{
  size_t room;
  *dst = http_codec_arena_room(b, &room);
  return v->len / 2 <= room ? hex_decode(*dst, v->s, v->len) : -1;
}

/* Payload and UDH into m. */
static void message_payload(struct reader *r, enum coding_choice coding, struct msg *m)
{
  struct http_codec_batch *b = r->b;
  const struct value *text = &r->field[F_TEXT], *hex = &r->field[F_HEX], *udh = &r->field[F_UDH];
  const char *why, *field = given(r, F_TEXT) ? "text" : "hex";
  uint8_t *dst;
  int n;
  if (given(r, F_TEXT)) {
    why = http_codec_utf8_payload(b, m, text->s, text->len, coding, 0);
  } else {
    n = hex_into_arena(b, hex, &dst);
    why = n < 0 ? "not an even number of hex digits" : http_codec_octet_payload(b, m, dst, (size_t)n, coding);
  }
  if (why) {
    http_codec_fault_add(b, message_index(r), field, "%s", why);
    return;
  }
  if (given(r, F_UDH)) {
    n = hex_into_arena(b, udh, &dst);
    if (n < 0 || !http_codec_udh_valid(dst, (size_t)n)) {
      http_codec_fault_add(b, message_index(r), "udh", "hex of a UDH whose first octet is its length");
      return;
    }
    m->udh = http_codec_arena_commit(b, (size_t)n);
    m->udh_len = (uint16_t)n;
  }
}

/* Where the receipts go; *url NULL when nowhere. False after a fault. */
static bool message_dlr(struct reader *r, long long mask, struct msg *m,
                        enum http_codec_dlr_method *method, const char **url)
{
  enum field f = given(r, F_DLR_URL) ? F_DLR_URL : F_CALLBACK;
  const struct value *v = &r->field[f];
  *method = HTTP_CODEC_DLR_NONE;
  *url = NULL;
  m->dlr_mask = (uint8_t)(mask >= 0 ? mask : 0);
  if (!given(r, f))
    return true;
  if (given(r, F_DLR_URL) && given(r, F_CALLBACK)) {
    http_codec_fault_add(r->b, message_index(r), "callback", "give dlr_url or callback, not both");
    return false;
  }
  if (!http_codec_is_http_url(v->s, v->len)) {
    http_codec_fault_add(r->b, message_index(r), field_names[f], "an http:// or https:// URL");
    return false;
  }
  if (!(*url = http_codec_arena_string(r->b, v->s, v->len))) {
    http_codec_fault_add(r->b, message_index(r), field_names[f], "too long");
    return false;
  }
  *method = f == F_DLR_URL ? HTTP_CODEC_DLR_GET : HTTP_CODEC_DLR_POST;
  if (mask < 0)
    m->dlr_mask = DEFAULT_JSON_DLR_MASK;
  return true;
}

static void message_recipients(struct reader *r, const struct msg *m, enum http_codec_dlr_method method,
                               const char *url)
{
  struct msg one = *m;
  const char *why;
  if (r->to_count == 0)
    http_codec_fault_add(r->b, message_index(r), "to", "no recipients");
  for (size_t i = 0; i < r->to_count; i++) {
    const struct value *v = &r->to[i];
    if (v->kind != K_STRING) {
      http_codec_fault_add(r->b, message_index(r), "to", "recipient %zu: a string of digits", i);
      continue;
    }
    if ((why = http_codec_parse_recipient(&one.dst, v->s, v->len))) {
      http_codec_fault_add(r->b, message_index(r), "to", "recipient %zu: %s", i, why);
      continue;
    }
    if (!http_codec_add_submit(r->b, &one, (unsigned)message_index(r), method, url))
      r->nomem = true;
  }
}

/* The message's object has ended: check its fields, add its submits. */
static void message_end(struct reader *r)
{
  struct http_codec_batch *b = r->b;
  struct msg m;
  size_t faults = b->fault_count;
  int index = message_index(r);
  long long dlr_mask = -1, validity = 0, deferred = 0, send_at = 0, mclass = -1, pid = 0, priority = 0;
  enum coding_choice coding;
  enum http_codec_dlr_method method;
  const char *url, *why, *field;
  char reason[HTTP_CODEC_REASON_LEN];

  memset(&m, 0, sizeof m);
  r->message_depth = 0;
  if (r->field[F_FROM].kind == K_NONE)
    http_codec_fault_add(b, index, "from", "missing");
  else if (string_field(r, F_FROM) &&
           (why = http_codec_parse_sender(&m.src, r->field[F_FROM].s, r->field[F_FROM].len)))
    http_codec_fault_add(b, index, "from", "%s", why);
  if (r->field[F_TO].kind == K_NONE)
    http_codec_fault_add(b, index, "to", "missing");
  for (enum field f = F_TEXT; f <= F_CALLBACK; f++)
    if (f != F_CODING)
      string_field(r, f);
  int_field(r, F_DLR_MASK, 0, DLR_MASK_MAX, &dlr_mask);
  int_field(r, F_VALIDITY, 1, SECONDS_MAX, &validity);
  int_field(r, F_DEFERRED, 1, SECONDS_MAX, &deferred);
  send_at_field(r, &send_at);
  int_field(r, F_MCLASS, 0, 3, &mclass);
  int_field(r, F_PID, 0, 255, &pid);
  int_field(r, F_PRIORITY, 0, 3, &priority);
  if (given(r, F_TEXT) && given(r, F_HEX))
    http_codec_fault_add(b, index, "hex", "give text or hex, not both");
  else if (r->field[F_TEXT].kind == K_NONE && r->field[F_HEX].kind == K_NONE)
    http_codec_fault_add(b, index, "text", "missing (text or hex)");
  if ((coding = coding_of(&r->field[F_CODING])) == CODING_INVALID)
    http_codec_fault_add(b, index, "coding", "auto, gsm, ucs2, binary, or 0, 1, 2");
  if (b->fault_count != faults)
    return;
  message_payload(r, coding, &m);
  if (b->fault_count != faults || !message_dlr(r, dlr_mask, &m, &method, &url))
    return;
  m.dcs = http_codec_dcs_for(m.coding, (int)mclass);
  if ((why = http_codec_payload_check(&m, r->lim->max_parts, &field, reason, sizeof reason))) {
    http_codec_fault_add(b, index, field, "%s", why);
    return;
  }
  m.validity = -validity;
  m.deferred = send_at ? send_at : -deferred;
  m.pid = (uint8_t)pid;
  m.priority = (uint8_t)priority;
  message_recipients(r, &m, method, url);
}

/* A new message (its object opened, or a value that should have been one). */
static bool message_start(struct reader *r)
{
  if (++r->messages > r->lim->max_messages) {
    r->too_large = true;
    return false;
  }
  memset(r->field, 0, sizeof r->field);
  r->to_count = 0;
  r->scratch_len = 0;
  r->key = F_NONE;
  return true;
}

/* ---- values ---- */

/* A recipient of "to" (a string, or anything else to be refused). */
static bool add_recipient(struct reader *r, struct value v)
{
  if (++r->recipients > r->lim->max_recipients) {
    r->too_large = true;
    return false;
  }
  if (r->to_count == r->to_cap) {
    size_t cap = r->to_cap ? 2 * r->to_cap : 16;
    struct value *to = realloc(r->to, cap * sizeof *to);
    if (!to) {
      r->nomem = true;
      return false;
    }
    r->to = to;
    r->to_cap = cap;
  }
  r->to[r->to_count++] = v;
  return true;
}

/* A value in the container open at depth at: a scalar, or a container
 * (kind K_OTHER) whose content is skipped. Returns 0 to stop the parse. */
static int on_value(struct reader *r, struct value v, int at)
{
  if (r->in_to && at == r->message_depth + 1)
    return add_recipient(r, v);
  if (r->message_depth && r->key != F_NONE) {
    enum field f = r->key;
    r->key = F_NONE;
    if (f == F_UNKNOWN)
      return 1;
    if (f == F_TO) {
      r->field[F_TO].kind = v.kind;
      return add_recipient(r, v);
    }
    r->field[f] = v;
    return 1;
  }
  if (r->wrapper_key) {           /* "messages": not an array */
    r->wrapper_key = false;
    http_codec_fault_add(r->b, -1, "",
                         "expected a message object, an array of them, or {\"messages\": [...]}");
    return 1;
  }
  if (r->list_depth && at == r->list_depth) {
    if (!message_start(r))
      return 0;
    http_codec_fault_add(r->b, message_index(r), "", "a message is a JSON object");
    return 1;
  }
  if (r->root == ROOT_NONE) {
    r->root = ROOT_OTHER;
    http_codec_fault_add(r->b, -1, "",
                         "expected a message object, an array of them, or {\"messages\": [...]}");
  }
  return 1;
}

/* A string's text where it stays valid until the parse ends: in the body
 * when it had no escapes, else copied to the scratch. */
static const char *stable_text(struct reader *r, const char *s, size_t len)
{
  if (s >= r->body && s + len <= r->body + r->body_len)
    return s;
  if (len > r->scratch_cap - r->scratch_len)   /* cannot happen: unescaped is shorter */
    return NULL;
  char *dst = r->scratch + r->scratch_len;
  memcpy(dst, s, len);
  r->scratch_len += len;
  return dst;
}

static int on_string(void *ctx, const unsigned char *s, size_t len)
{
  struct reader *r = ctx;
  struct value v = { .kind = K_STRING, .len = len };
  if (r->skip_from)
    return 1;
  if (memchr(s, 0, len))          /* no field of a message has room for a NUL */
    v.kind = K_NUL_STRING;
  else if (!(v.s = stable_text(r, (const char *)s, len)))
    return 0;
  return on_value(r, v, r->depth);
}

static int on_integer(void *ctx, long long i)
{
  struct reader *r = ctx;
  struct value v = { .kind = K_INTEGER, .i = i };
  if (r->skip_from)
    return 1;
  /* A recipient given as a number is its digits. */
  if ((r->in_to || r->key == F_TO) && r->message_depth && i >= 0) {
    char digits[24];
    int n = snprintf(digits, sizeof digits, "%lld", i);
    v.kind = K_STRING;
    v.len = (size_t)n;
    if (!(v.s = stable_text(r, digits, v.len)))
      return 0;
  }
  return on_value(r, v, r->depth);
}

static int on_other(void *ctx)
{
  struct reader *r = ctx;
  return r->skip_from ? 1 : on_value(r, (struct value){ .kind = K_OTHER }, r->depth);
}

static int on_boolean(void *ctx, int b)
{
  (void)b;
  return on_other(ctx);
}

static int on_double(void *ctx, double d)
{
  (void)d;
  return on_other(ctx);
}

static int on_key(void *ctx, const unsigned char *key, size_t len)
{
  struct reader *r = ctx;
  char text[HTTP_CODEC_FIELD_LEN];
  if (r->skip_from)
    return 1;
  if (r->root == ROOT_OBJECT) {   /* the first key says what the object is */
    if (len == 8 && memcmp(key, "messages", 8) == 0) {
      r->root = ROOT_WRAPPER;
    } else {
      r->root = ROOT_SINGLE;
      if (!message_start(r))
        return 0;
      r->message_depth = 1;
    }
  }
  if (r->message_depth == r->depth) {
    enum field f = F_UNKNOWN;
    for (int i = 0; i < F_COUNT && f == F_UNKNOWN; i++)
      if (len && key[0] == (unsigned char)field_names[i][0] && strlen(field_names[i]) == len &&
          memcmp(key, field_names[i], len) == 0)
        f = (enum field)i;
    if (f != F_UNKNOWN && r->field[f].kind != K_NONE) {
      http_codec_fault_add(r->b, message_index(r), field_names[f], "given twice");
      f = F_UNKNOWN;
    } else if (f == F_UNKNOWN) {
      key_text(text, sizeof text, key, len);
      http_codec_fault_add(r->b, message_index(r), text, "unknown field");
    }
    r->key = f;
    return 1;
  }
  if (r->root == ROOT_WRAPPER && r->depth == 1) {
    if (len == 8 && memcmp(key, "messages", 8) == 0 && !r->list_given) {
      r->list_given = r->wrapper_key = true;
    } else {
      key_text(text, sizeof text, key, len);
      http_codec_fault_add(r->b, -1, text, r->list_given && strcmp(text, "messages") == 0
                                               ? "given twice" : "unknown field next to messages");
    }
  }
  return 1;
}

static int on_start(struct reader *r, bool is_array)
{
  if (++r->depth > JSON_DEPTH_MAX) {
    r->too_deep = true;
    return 0;
  }
  if (r->skip_from)
    return 1;
  if (r->root == ROOT_NONE) {
    r->root = is_array ? ROOT_LIST : ROOT_OBJECT;
    if (is_array)
      r->list_depth = 1;
    return 1;
  }
  if (r->wrapper_key && is_array) {
    r->wrapper_key = false;
    r->list_depth = r->depth;
    return 1;
  }
  if (r->list_depth && r->depth == r->list_depth + 1 && !is_array && r->key == F_NONE && !r->in_to &&
      !r->message_depth) {
    if (!message_start(r))
      return 0;
    r->message_depth = r->depth;
    return 1;
  }
  if (r->message_depth && r->depth == r->message_depth + 1 && r->key == F_TO && is_array) {
    r->key = F_NONE;
    r->field[F_TO].kind = K_OTHER;
    r->in_to = true;
    return 1;
  }
  /* Anything else is a value of the wrong kind: noted, its content skipped. */
  r->skip_from = r->depth;
  return on_value(r, (struct value){ .kind = K_OTHER }, r->depth - 1);
}

static int on_end(struct reader *r)
{
  if (r->skip_from) {
    if (r->depth-- == r->skip_from)
      r->skip_from = 0;
    return 1;
  }
  if (r->in_to && r->depth == r->message_depth + 1)
    r->in_to = false;
  else if (r->message_depth && r->depth == r->message_depth)
    message_end(r);
  else if (r->root == ROOT_OBJECT && r->depth == 1) {   /* {} : a message without fields */
    r->root = ROOT_SINGLE;
    if (!message_start(r))
      return 0;
    message_end(r);
  }
  r->depth--;
  return !r->nomem;
}

static int on_start_map(void *ctx)
{
  return on_start(ctx, false);
}

static int on_start_array(void *ctx)
{
  return on_start(ctx, true);
}

static int on_end_container(void *ctx)
{
  return on_end(ctx);
}

static const yajl_callbacks reader_callbacks = {
  .yajl_null = on_other,
  .yajl_boolean = on_boolean,
  .yajl_integer = on_integer,
  .yajl_double = on_double,
  .yajl_string = on_string,
  .yajl_start_map = on_start_map,
  .yajl_map_key = on_key,
  .yajl_end_map = on_end_container,
  .yajl_start_array = on_start_array,
  .yajl_end_array = on_end_container,
};

/* ---- the request ---- */

/* Forgets the faults and submits found so far: one fault says it all. */
static void batch_restart(struct http_codec_batch *b)
{
  b->fault_count = 0;
  b->count = 0;
}

/* Line and column (from 1) of offset at in body. */
static void position(const char *body, size_t len, size_t at, size_t *line, size_t *column)
{
  *line = 1;
  *column = 1;
  for (size_t i = 0; i < at && i < len; i++, (*column)++)
    if (body[i] == '\n') {
      (*line)++;
      *column = 0;
    }
}

/* yajl's reason for refusing the body, and where, as "not JSON: ...". */
static void syntax_fault(struct reader *r, yajl_handle h, bool at_end)
{
  size_t at = at_end ? r->body_len : yajl_get_bytes_consumed(h), line, column;
  unsigned char *text = yajl_get_error(h, 0, NULL, 0);
  const char *why = text ? (const char *)text : "parse error";
  char reason[HTTP_CODEC_REASON_LEN];
  if (strncmp(why, "parse error: ", 13) == 0)
    why += 13;
  snprintf(reason, sizeof reason, "%s", why);
  reason[strcspn(reason, "\r\n")] = 0;
  position(r->body, r->body_len, at, &line, &column);
  batch_restart(r->b);
  http_codec_fault_add(r->b, -1, "", "not JSON: %s (line %zu, column %zu)", reason, line, column);
  if (text)
    yajl_free_error(h, text);
}

static int hex4(const char *s)
{
  int v = 0;
  for (int i = 0; i < 4; i++) {
    int c = s[i], d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0)
      return -1;
    v = v << 4 | d;
  }
  return v;
}

/* Where the first lone UTF-16 surrogate escape of body starts (a high one
 * not followed at once by a low one, or a low one alone), or len when there
 * is none; *code gets it. yajl puts '?' in their place, which would go out
 * in the message: such a string is no Unicode text, and is refused as
 * invalid UTF-8 is. For a body yajl accepted: every backslash is in a
 * string and starts a valid escape. Costs a memchr when there is no escape. */
static size_t lone_surrogate(const char *body, size_t len, int *code)
{
  const char *p = body, *end = body + len;
  while ((p = memchr(p, '\\', (size_t)(end - p))) && end - p >= 2) {
    if (p[1] != 'u' || end - p < 6) {
      p += 2;
      continue;
    }
    int cp = hex4(p + 2);
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      int low = end - p >= 12 && p[6] == '\\' && p[7] == 'u' ? hex4(p + 8) : -1;
      if (low < 0xDC00 || low > 0xDFFF) {
        *code = cp;
        return (size_t)(p - body);
      }
      p += 12;
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
      *code = cp;
      return (size_t)(p - body);
    } else {
      p += 6;
    }
  }
  return len;
}

int http_codec_json_parse(struct http_codec_batch **out, const char *body, size_t len,
                          const struct http_codec_limits *lim_in)
{
  struct http_codec_limits lim;
  struct reader r = { .body = body, .body_len = len, .key = F_NONE, .lim = &lim };
  yajl_handle h = NULL;
  int rc = HTTP_CODEC_E_NOMEM, code = 0;
  size_t lone;

  http_codec_limits_resolve(lim_in, &lim);
  *out = NULL;
  /* Every payload is at most twice its text in the body (UCS2 of ASCII,
   * GSM escapes); a URL is copied with a NUL, which its key pays for. */
  r.b = http_codec_batch_create(len / 128 + 1, 2 * len + 64);
  r.scratch_cap = len + 32;
  r.scratch = malloc(r.scratch_cap);
  if (!r.b || !r.scratch || !(h = yajl_alloc(&reader_callbacks, NULL, &r)))
    goto fail;
  yajl_status st = yajl_parse(h, (const unsigned char *)body, len);
  bool at_end = st == yajl_status_ok;
  if (at_end)
    st = yajl_complete_parse(h);
  if (r.nomem)
    goto fail;
  if (r.too_large) {
    batch_restart(r.b);
    http_codec_fault_add(r.b, -1, "messages", "at most %u messages and %u recipients in one request",
                         lim.max_messages, lim.max_recipients);
    rc = HTTP_CODEC_E_TOO_LARGE;
  } else if (r.too_deep) {
    batch_restart(r.b);
    http_codec_fault_add(r.b, -1, "", "nested deeper than %d levels", JSON_DEPTH_MAX);
    rc = HTTP_CODEC_E_INVALID;
  } else if (st != yajl_status_ok) {
    syntax_fault(&r, h, at_end);
    rc = HTTP_CODEC_E_INVALID;
  } else if ((lone = lone_surrogate(body, len, &code)) < len) {
    size_t line, column;
    position(body, len, lone, &line, &column);
    batch_restart(r.b);
    http_codec_fault_add(r.b, -1, "", "not valid Unicode: a lone UTF-16 surrogate \\u%04x (line %zu, column %zu)",
                         (unsigned)code, line, column);
    rc = HTTP_CODEC_E_INVALID;
  } else {
    if (r.messages == 0 && r.root != ROOT_OTHER && (r.root != ROOT_WRAPPER || r.list_depth))
      http_codec_fault_add(r.b, -1, "messages", "no messages");
    rc = r.b->fault_count ? HTTP_CODEC_E_INVALID : 0;
  }
  if (rc != 0)
    r.b->count = 0;
  *out = r.b;
  r.b = NULL;
fail:
  if (h)
    yajl_free(h);
  http_codec_batch_free(r.b);
  free(r.scratch);
  free(r.to);
  return rc;
}
