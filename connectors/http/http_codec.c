/* http_codec.c - what the HTTP codec's two dialects share: limits, the
 * batch with its arena and faults, addresses, form decoding, payloads and
 * their codings, outcomes, and the texts of receipts. The JSON API is in
 * http_json_submit.c and http_json.c, Kannel's sendsms in http_kannel.c,
 * the %-escapes of the templates in http_template.c. See http_codec.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "charset.h"
#include "hexutil.h"
#include "http_codec_internal.h"
#include "sms_text.h"
#include "smpp_receipt.h"

#define DEFAULT_MAX_MESSAGES 1000
#define DEFAULT_MAX_RECIPIENTS 1000
#define ADDR_DIGITS_MAX 20
#define ALNUM_SENDER_MAX 11

void http_codec_limits_resolve(const struct http_codec_limits *in, struct http_codec_limits *out)
{
  static const struct http_codec_limits none;
  *out = in ? *in : none;
  if (!out->max_messages)
    out->max_messages = DEFAULT_MAX_MESSAGES;
  if (!out->max_recipients)
    out->max_recipients = DEFAULT_MAX_RECIPIENTS;
  if (!out->max_parts || out->max_parts > SMS_TEXT_SEGMENTS_MAX)
    out->max_parts = SMS_TEXT_SEGMENTS_MAX;
}

/* ---- the batch ---- */

struct http_codec_batch *http_codec_batch_create(size_t items_cap, size_t arena_cap)
{
  struct http_codec_batch *b = calloc(1, sizeof *b);
  if (!b)
    return NULL;
  b->items = calloc(items_cap ? items_cap : 1, sizeof *b->items);
  b->items_cap = items_cap;
  b->arena = malloc(arena_cap ? arena_cap : 1);
  b->arena_cap = arena_cap;
  if (!b->items || !b->arena) {
    http_codec_batch_free(b);
    return NULL;
  }
  return b;
}

void http_codec_batch_free(struct http_codec_batch *b)
{
  if (!b)
    return;
  free(b->items);
  free(b->arena);
  free(b);
}

/* Faults quote the request (a key, the parser's view of the text) and are
 * cut to fit: printable ASCII only, so that what goes back in a JSON answer
 * or a log line is never broken UTF-8 or a control character. */
static void printable(char *s)
{
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7E)
      *s = '?';
}

void http_codec_fault_add(struct http_codec_batch *b, int message, const char *field,
                          const char *fmt, ...)
{
  if (b->fault_count++ >= HTTP_CODEC_FAULTS_MAX)
    return;
  struct http_codec_fault *f = &b->faults[b->fault_count - 1];
  va_list ap;
  f->message = message;
  snprintf(f->field, sizeof f->field, "%s", field);
  va_start(ap, fmt);
  vsnprintf(f->reason, sizeof f->reason, fmt, ap);
  va_end(ap);
  printable(f->field);
  printable(f->reason);
}

/* The free end of the arena: converters write there, then commit. */
uint8_t *http_codec_arena_room(const struct http_codec_batch *b, size_t *room)
{
  *room = b->arena_cap - b->arena_len;
  return b->arena + b->arena_len;
}

const uint8_t *http_codec_arena_commit(struct http_codec_batch *b, size_t n)
{
  const uint8_t *p = b->arena + b->arena_len;
  b->arena_len += n;
  return p;
}

/* A NUL-terminated copy in the arena, or NULL when it does not fit. */
const char *http_codec_arena_string(struct http_codec_batch *b, const char *s, size_t n)
{
  size_t room;
  uint8_t *dst = http_codec_arena_room(b, &room);
  if (n + 1 > room)
    return NULL;
  memcpy(dst, s, n);
  dst[n] = 0;
  return (const char *)http_codec_arena_commit(b, n + 1);
}

/* ---- addresses ---- */

/* A recipient: digits, or '+' and digits (international). Returns NULL or why not. */
const char *http_codec_parse_recipient(struct msg_addr *a, const char *s, size_t len)
{
  bool plus = len && s[0] == '+';
  if (len == 0 || (plus && len == 1))
    return "empty";
  if (!msg_addr_is_number(s, len))
    return "not a number (digits, or + and digits)";
  if (plus) {
    s++;
    len--;
  }
  if (len > ADDR_DIGITS_MAX)
    return "longer than 20 digits";
  memcpy(a->addr, s, len);
  a->addr[len] = 0;
  a->ton = plus ? MSG_TON_INTERNATIONAL : MSG_TON_UNKNOWN;
  a->npi = 1;
  return NULL;
}

/* A sender: a number as a recipient, or up to 11 GSM characters. */
const char *http_codec_parse_sender(struct msg_addr *a, const char *s, size_t len)
{
  if (len == 0)
    return "empty";
  if (msg_addr_is_number(s, len))
    return http_codec_parse_recipient(a, s, len);
  if (memchr(s, 0, len))
    return "holds a NUL";
  int septets = charset_gsm_septets(s, len);
  if (septets == CHARSET_E_INVALID)
    return "not valid UTF-8";
  if (septets < 0)
    return "an alphanumeric sender must be in the GSM 03.38 alphabet";
  if (septets > ALNUM_SENDER_MAX || len >= MSG_ADDR_LEN)
    return "an alphanumeric sender has at most 11 characters";
  memcpy(a->addr, s, len);
  a->addr[len] = 0;
  a->ton = MSG_TON_ALPHANUMERIC;
  a->npi = 0;
  return NULL;
}

/* The address as a client writes it: '+' before an international number
 * (once: a load tool's address may come with its own). */
size_t http_codec_addr_text(char *dst, size_t cap, const struct msg_addr *a)
{
  bool plus = a->ton == MSG_TON_INTERNATIONAL && a->addr[0] != '+';
  int n = snprintf(dst, cap, "%s%s", plus ? "+" : "", a->addr);
  return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

bool http_codec_is_http_url(const char *s, size_t len)
{
  return (len > 7 && strncasecmp(s, "http://", 7) == 0) ||
         (len > 8 && strncasecmp(s, "https://", 8) == 0);
}

/* Here, not in http_kannel.c: the templates (http_template.c) decode form
 * values too, and the sendsms reader uses them. */
size_t http_codec_form_decode(char *out, size_t cap, const char *s, size_t n)
{
  size_t o = 0;
  for (size_t i = 0; i < n && o + 1 < cap; i++) {
    char c = s[i];
    if (c == '+') {
      c = ' ';
    } else if (c == '%' && i + 2 < n && hex_digit(s[i + 1]) >= 0 && hex_digit(s[i + 2]) >= 0) {
      c = (char)(hex_digit(s[i + 1]) << 4 | hex_digit(s[i + 2]));
      i += 2;
    }
    out[o++] = c;
  }
  return o;
}

/* ---- payloads ---- */

/* TP-DCS for a coding and a message class (-1: none), in the forms the SMPP
 * and UCP adapters read back. */
uint8_t http_codec_dcs_for(uint8_t coding, int mclass)
{
  if (mclass < 0)
    return coding;
  uint8_t group = coding == SMS_TEXT_UCS2 ? 0x18 : coding == SMS_TEXT_8BIT ? 0xF4 : 0xF0;
  return (uint8_t)(group | mclass);
}

/* Converts UTF-8 text into the arena in the chosen coding (GSM with replace:
 * '?' for characters GSM lacks). Sets m's coding and data. Returns NULL or
 * why not. */
const char *http_codec_utf8_payload(struct http_codec_batch *b, struct msg *m, const char *utf8,
                                    size_t len, enum coding_choice coding, int replace)
{
  size_t room;
  uint8_t *dst = http_codec_arena_room(b, &room);
  int n;
  if (coding == CODING_AUTO) {
    n = sms_text_choose_coding(utf8, len);
    if (n < 0)
      return "not valid UTF-8";
    coding = (enum coding_choice)n;
  }
  switch (coding) {
  case CODING_GSM:
    n = charset_utf8_to_gsm(dst, room, utf8, len, replace);
    break;
  case CODING_UCS2:
    n = charset_utf8_to_ucs2(dst, room, utf8, len);
    break;
  default:
    n = len <= room ? (int)len : CHARSET_E_SPACE;
    if (n >= 0)
      memcpy(dst, utf8, len);
  }
  if (n == CHARSET_E_UNREPRESENTABLE)
    return "has characters outside the GSM 03.38 alphabet (use coding ucs2 or auto)";
  if (n == CHARSET_E_INVALID)
    return "not valid UTF-8";
  if (n < 0)
    return "too long";
  m->coding = (uint8_t)coding;
  m->data = http_codec_arena_commit(b, (size_t)n);
  m->data_len = (uint32_t)n;
  return NULL;
}

/* Octets as the payload in the chosen coding (AUTO: 8-bit). */
const char *http_codec_octet_payload(struct http_codec_batch *b, struct msg *m, const uint8_t *data,
                                     size_t len, enum coding_choice coding)
{
  size_t room;
  uint8_t *dst = http_codec_arena_room(b, &room);
  if (coding == CODING_AUTO)
    coding = CODING_8BIT;
  if (coding == CODING_UCS2 && len % 2)
    return "UCS2 data has an odd number of octets";
  if (coding == CODING_GSM)
    for (size_t i = 0; i < len; i++)
      if (data[i] > 0x7F)
        return "GSM data holds a value above 0x7F (septets are 00-7F)";
  if (len > room)
    return "too long";
  memmove(dst, data, len);
  m->coding = (uint8_t)coding;
  m->data = http_codec_arena_commit(b, len);
  m->data_len = (uint32_t)len;
  return NULL;
}

/* A UDH (UDHL first) whose length agrees with itself. */
bool http_codec_udh_valid(const uint8_t *udh, size_t len)
{
  struct sms_text_concat concat;
  return len >= 1 && len <= SMS_TEXT_UD_MAX && (size_t)udh[0] + 1 == len &&
         sms_text_udh_parse(udh, len, &concat) == (int)len;
}

/* Whether the payload can go out: its UDH leaves room, and it needs at most
 * max_parts SMS (one when the client's UDH numbers the parts itself).
 * Returns NULL, or the reason with *field set. */
const char *http_codec_payload_check(const struct msg *m, unsigned max_parts, const char **field,
                                     char *why, size_t why_cap)
{
  struct sms_text_payload p = { (enum sms_text_coding)m->coding, m->data, m->data_len, m->udh,
                                m->udh_len };
  struct sms_text_concat concat = { 0 };
  int parts;
  *field = "udh";
  if (m->udh_len && sms_text_udh_parse(m->udh, m->udh_len, &concat) != (int)m->udh_len)
    return "malformed UDH";
  *field = "text";
  parts = sms_text_segment_count(&p, SMS_TEXT_REF8);
  if (parts == SMS_TEXT_E_INVALID)
    return m->udh_len ? "the UDH leaves no room for the text" : "malformed payload";
  if (parts < 0 || (unsigned)parts > max_parts) {
    snprintf(why, why_cap, "too long: at most %u SMS", max_parts);
    return why;
  }
  if (concat.total && parts > 1)
    return "too long for one SMS with the UDH's concatenation";
  return NULL;
}

/* Adds m (its recipient set) as the next submit; the caller sized items. */
bool http_codec_add_submit(struct http_codec_batch *b, const struct msg *m, unsigned message,
                           enum http_codec_dlr_method method, const char *dlr_url)
{
  struct http_codec_submit *s;
  if (b->count == b->items_cap) {
    /* Items point into the arena, never into each other: they may move. */
    size_t cap = b->items_cap ? 2 * b->items_cap : 16;
    struct http_codec_submit *items = realloc(b->items, cap * sizeof *items);
    if (!items)
      return false;
    b->items = items;
    b->items_cap = cap;
  }
  s = &b->items[b->count++];
  s->msg = *m;
  s->message = message;
  s->dlr_method = method;
  s->dlr_url = dlr_url;
  return true;
}

/* ---- outcomes ---- */

const char *http_codec_outcome_text(enum http_codec_outcome o)
{
  switch (o) {
  case HTTP_CODEC_ACCEPTED: return "accepted";
  case HTTP_CODEC_QUEUED: return "queued: no route is up now";
  case HTTP_CODEC_THROTTLED: return "too fast, retry later";
  case HTTP_CODEC_TEMPORARY: return "temporary failure (queue full), retry later";
  case HTTP_CODEC_NO_ROUTE: return "no route";
  case HTTP_CODEC_NO_CREDIT: return "credit used up";
  case HTTP_CODEC_REJECTED: return "rejected";
  }
  return "unknown";
}

bool http_codec_outcome_taken(enum http_codec_outcome o)
{
  return o == HTTP_CODEC_ACCEPTED || o == HTTP_CODEC_QUEUED;
}

bool http_codec_outcome_retry(enum http_codec_outcome o)
{
  return o == HTTP_CODEC_THROTTLED || o == HTTP_CODEC_TEMPORARY;
}

/* How many submits were taken; *first_refused the first that was not (or count). */
size_t http_codec_results_taken(const struct http_codec_batch *b, const struct http_codec_result *r,
                                size_t *first_refused, bool *queued)
{
  size_t taken = 0;
  *first_refused = b->count;
  *queued = false;
  for (size_t i = 0; i < b->count; i++) {
    if (http_codec_outcome_taken(r[i].outcome)) {
      taken++;
      *queued |= r[i].outcome == HTTP_CODEC_QUEUED;
    } else if (*first_refused == b->count) {
      *first_refused = i;
    }
  }
  return taken;
}

/* ---- receipts ---- */

unsigned http_codec_dlr_type(uint8_t state)
{
  switch (state) {
  case MSG_STATE_DELIVERED:
    return HTTP_CODEC_DLR_DELIVERED;
  case MSG_STATE_ENROUTE:
  case MSG_STATE_ACCEPTED:
    return HTTP_CODEC_DLR_BUFFERED;
  case MSG_STATE_EXPIRED:
  case MSG_STATE_DELETED:
  case MSG_STATE_UNDELIVERABLE:
  case MSG_STATE_UNKNOWN:
  case MSG_STATE_REJECTED:
    return HTTP_CODEC_DLR_FAILED;
  case MSG_STATE_SMSC_ACCEPTED:
    return HTTP_CODEC_DLR_SMSC_ACK;
  case MSG_STATE_SMSC_REJECTED:
    return HTTP_CODEC_DLR_SMSC_NACK;
  default:
    return 0;
  }
}

void http_codec_time_text(char *dst, size_t cap, int64_t t, const char *fmt)
{
  struct tm tm;
  time_t tt = (time_t)t;
  if (!gmtime_r(&tt, &tm) || strftime(dst, cap, fmt, &tm) == 0)
    dst[0] = 0;
}

/* %A when the caller has none: the receipt text SMPP SMSCs send (an SMSC
 * ack or nack as Kannel reports them). */
void http_codec_receipt_answer(char *dst, size_t cap, const struct http_codec_dlr *d, unsigned type)
{
  struct smpp_receipt r;
  const struct msg_receipt *mr = d->receipt;
  if (type == HTTP_CODEC_DLR_SMSC_ACK || type == HTTP_CODEC_DLR_SMSC_NACK) {
    snprintf(dst, cap, "%s/%u/", type == HTTP_CODEC_DLR_SMSC_ACK ? "ACK" : "NACK", mr->err);
    return;
  }
  memset(&r, 0, sizeof r);
  snprintf(r.id, sizeof r.id, "%s", d->smsc_msgid ? d->smsc_msgid : mr->id);
  r.sub = 1;
  r.dlvrd = mr->state == MSG_STATE_DELIVERED;
  http_codec_time_text(r.submit_date, sizeof r.submit_date, mr->submit_time, "%y%m%d%H%M");
  http_codec_time_text(r.done_date, sizeof r.done_date, mr->done_time, "%y%m%d%H%M");
  r.state = mr->state;
  r.err = mr->err;
  if (smpp_receipt_format(dst, cap, &r) < 0)
    dst[0] = 0;
}
