/* http_kannel.c - Kannel's sendsms: form parameters, submits and their
 * answers; and Kannel's %-escapes, in dlr-url templates and in the outgoing
 * connector's URL and body templates. See http_codec.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "charset.h"
#include "hexutil.h"
#include "http_codec_internal.h"
#include "sms_text.h"

/* ---- Kannel sendsms ---- */

static size_t form_decode(char *s, size_t n)
{
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '+') {
      c = ' ';
    } else if (c == '%' && i + 2 < n && hex_digit(s[i + 1]) >= 0 && hex_digit(s[i + 2]) >= 0) {
      c = (char)(hex_digit(s[i + 1]) << 4 | hex_digit(s[i + 2]));
      i += 2;
    }
    s[o++] = c;
  }
  return o;
}

int http_codec_form_parse(char *text, size_t len, struct http_codec_param *params, size_t cap)
{
  size_t n = 0, i = 0;
  while (i < len) {
    size_t end = i, eq;
    while (end < len && text[end] != '&')
      end++;
    for (eq = i; eq < end && text[eq] != '='; eq++)
      ;
    if (end > i) {
      if (n == cap)
        return HTTP_CODEC_E_SPACE;
      /* Decoding only shrinks, and each NUL lands on the '=' or '&' (or
       * text[len]) that ended what it terminates. */
      size_t name_len = form_decode(text + i, eq - i);
      size_t value_len = eq < end ? form_decode(text + eq + 1, end - eq - 1) : 0;
      text[i + name_len] = 0;
      char *value = eq < end ? text + eq + 1 : text + i + name_len;
      value[value_len] = 0;
      params[n++] = (struct http_codec_param){ text + i, value, value_len };
    }
    i = end + 1;
  }
  return (int)n;
}

const char *http_codec_kannel_header_param(const char *header)
{
  static const char *const map[][2] = {
    { "Username", "username" }, { "Password", "password" }, { "From", "from" },
    { "To", "to" },             { "UDH", "udh" },           { "SMSC", "smsc" },
    { "MClass", "mclass" },     { "MWI", "mwi" },           { "Coding", "coding" },
    { "Compress", "compress" }, { "Validity", "validity" }, { "Deferred", "deferred" },
    { "DLR-Mask", "dlr-mask" }, { "DLR-Url", "dlr-url" },   { "Account", "account" },
    { "PID", "pid" },           { "Alt-DCS", "alt-dcs" },   { "BInfo", "binfo" },
    { "RPI", "rpi" },           { "Priority", "priority" },
  };
  if (strncasecmp(header, "X-Kannel-", 9) != 0)
    return NULL;
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strcasecmp(header + 9, map[i][0]) == 0)
      return map[i][1];
  return NULL;
}

/* The first parameter called name, else the first called alt. */
static const struct http_codec_param *param_find(const struct http_codec_param *p, size_t n,
                                                 const char *name, const char *alt)
{
  for (size_t i = 0; i < n; i++)
    if (strcmp(p[i].name, name) == 0)
      return &p[i];
  for (size_t i = 0; alt && i < n; i++)
    if (strcmp(p[i].name, alt) == 0)
      return &p[i];
  return NULL;
}

static bool copy_credential(char dst[MSG_USER_LEN], const struct http_codec_param *p)
{
  if (!p || p->len >= MSG_USER_LEN || memchr(p->value, 0, p->len))
    return false;
  memcpy(dst, p->value, p->len + 1);
  return true;
}

int http_codec_kannel_credentials(const struct http_codec_param *params, size_t n,
                                  char user[MSG_USER_LEN], char password[MSG_USER_LEN])
{
  if (copy_credential(user, param_find(params, n, "username", "user")) &&
      copy_credential(password, param_find(params, n, "password", "pass")))
    return 0;
  return -1;
}

/* Kannel's integers: absent (or its "undefined", -1) is -1; otherwise
 * decimal digits within [min, max]. Returns false when misformed. */
static bool kannel_int(const struct http_codec_param *p, long min, long max, long *out)
{
  long v = 0;
  *out = -1;
  if (!p || (p->len == 2 && memcmp(p->value, "-1", 2) == 0))
    return true;
  if (p->len == 0 || p->len > 9)
    return false;
  for (size_t i = 0; i < p->len; i++) {
    if (p->value[i] < '0' || p->value[i] > '9')
      return false;
    v = v * 10 + (p->value[i] - '0');
  }
  *out = v;
  return v >= min && v <= max;
}

static int kannel_refuse(struct http_codec_batch *b, const char *field, const char *answer, int rc)
{
  b->kannel_status = 400;
  b->kannel_answer = answer;
  b->count = 0;
  http_codec_fault_add(b, -1, field, "%s", answer);
  return rc;
}

/* Splits "to" into recipients (spaces between them, as Kannel does). Returns
 * how many there are; with out, parses them (false on the first bad one). */
static size_t kannel_words(const struct http_codec_param *to, struct msg_addr *out, bool *ok)
{
  size_t n = 0, i = 0;
  *ok = true;
  while (i < to->len) {
    while (i < to->len && (to->value[i] == ' ' || to->value[i] == '\t'))
      i++;
    size_t start = i;
    while (i < to->len && to->value[i] != ' ' && to->value[i] != '\t')
      i++;
    if (i == start)
      break;
    if (out && http_codec_parse_recipient(&out[n], to->value + start, i - start))
      *ok = false;
    n++;
  }
  return n;
}

/* The UDH as raw octets (sendsms GET) or as hex (X-Kannel-UDH). */
static bool kannel_udh(struct http_codec_batch *b, const struct http_codec_param *p, struct msg *m)
{
  size_t room;
  uint8_t *dst = http_codec_arena_room(b, &room);
  int n = -1;
  if (http_codec_udh_valid((const uint8_t *)p->value, p->len) && p->len <= room) {
    memcpy(dst, p->value, p->len);
    n = (int)p->len;
  } else if (p->len / 2 <= room) {
    n = hex_decode(dst, p->value, p->len);
  }
  if (n < 0 || !http_codec_udh_valid(dst, (size_t)n))
    return false;
  m->udh = http_codec_arena_commit(b, (size_t)n);
  m->udh_len = (uint16_t)n;
  return true;
}

enum kannel_charset { CHARSET_DEFAULT, CHARSET_UTF8, CHARSET_LATIN1, CHARSET_UTF16BE, CHARSET_OTHER };

static enum kannel_charset kannel_charset(const struct http_codec_param *p)
{
  static const struct {
    const char *name;
    enum kannel_charset cs;
  } names[] = {
    { "UTF-8", CHARSET_UTF8 },        { "UTF8", CHARSET_UTF8 },           { "US-ASCII", CHARSET_UTF8 },
    { "ASCII", CHARSET_UTF8 },        { "ISO-8859-1", CHARSET_LATIN1 },   { "ISO8859-1", CHARSET_LATIN1 },
    { "LATIN1", CHARSET_LATIN1 },     { "UTF-16BE", CHARSET_UTF16BE },    { "UCS-2", CHARSET_UTF16BE },
    { "UCS2", CHARSET_UTF16BE },      { "UCS-2BE", CHARSET_UTF16BE },
  };
  if (!p || p->len == 0)
    return CHARSET_DEFAULT;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcasecmp(p->value, names[i].name) == 0)
      return names[i].cs;
  return CHARSET_OTHER;
}

/* The text into the payload: first into UTF-8 from its charset (UTF-16BE
 * with coding 2 goes as it is), then into the coding. Returns false when
 * the charset or the text is not usable. */
static bool kannel_text(struct http_codec_batch *b, const struct http_codec_param *text,
                        const struct http_codec_param *charset_param, long coding, struct msg *m)
{
  enum kannel_charset cs = kannel_charset(charset_param);
  const char *value = text ? text->value : "";
  size_t len = text ? text->len : 0;
  char *utf8 = NULL;
  int n;
  bool ok = false;

  if (cs == CHARSET_OTHER)
    return false;
  if (coding == 1 || (coding == -1 && m->udh_len))
    return http_codec_octet_payload(b, m, (const uint8_t *)value, len, CODING_8BIT) == NULL;
  if (coding == 2 && (cs == CHARSET_DEFAULT || cs == CHARSET_UTF16BE))
    cs = CHARSET_UTF16BE;
  else if (cs == CHARSET_DEFAULT)
    cs = CHARSET_UTF8;
  /* UTF-8 of Latin-1 or UCS2 is at most twice as long. */
  if (cs != CHARSET_UTF8 && !(utf8 = malloc(2 * len + 1)))
    return false;
  switch (cs) {
  case CHARSET_LATIN1:
    n = charset_latin1_to_utf8(utf8, 2 * len + 1, (const uint8_t *)value, len);
    break;
  case CHARSET_UTF16BE:
    n = charset_ucs2_to_utf8(utf8, 2 * len + 1, (const uint8_t *)value, len);
    break;
  default:
    n = (int)len;
  }
  if (n < 0)
    goto out;
  if (coding == 2 && cs == CHARSET_UTF16BE)
    ok = http_codec_octet_payload(b, m, (const uint8_t *)value, len, CODING_UCS2) == NULL;
  else
    ok = http_codec_utf8_payload(b, m, utf8 ? utf8 : value, (size_t)n,
                                 coding == 0 ? CODING_GSM : coding == 2 ? CODING_UCS2 : CODING_AUTO,
                                 1) == NULL;
out:
  free(utf8);
  return ok;
}

/* A hint copied into dst; false when too long or holding what Kannel
 * refuses in an account ('[', ']', CR, LF, NUL). */
static bool kannel_hint(char dst[HTTP_CODEC_NAME_LEN], const struct http_codec_param *p)
{
  if (!p)
    return true;
  if (p->len >= HTTP_CODEC_NAME_LEN || strcspn(p->value, "[]\r\n") != p->len)
    return false;
  memcpy(dst, p->value, p->len + 1);
  return true;
}

int http_codec_kannel_parse(struct http_codec_batch **out, const struct http_codec_param *params,
                            size_t n, const struct http_codec_limits *lim_in)
{
  struct http_codec_limits lim;
  const struct http_codec_param *to = param_find(params, n, "to", NULL);
  const struct http_codec_param *from = param_find(params, n, "from", NULL);
  const struct http_codec_param *udh = param_find(params, n, "udh", NULL);
  const struct http_codec_param *dlr_url = param_find(params, n, "dlr-url", "dlrurl");
  struct http_codec_batch *b;
  struct msg_addr *rcpt = NULL;
  struct msg m;
  size_t total = 0, count;
  long dlr_mask, mclass, pid, coding, validity, deferred, priority;
  const char *url = NULL, *field, *why;
  char reason[HTTP_CODEC_REASON_LEN];
  bool ok;
  int rc = HTTP_CODEC_E_INVALID;

  http_codec_limits_resolve(lim_in, &lim);
  for (size_t i = 0; i < n; i++)
    total += params[i].len;
  count = to ? kannel_words(to, NULL, &ok) : 0;
  *out = b = http_codec_batch_create(count <= lim.max_recipients ? count : 0, 2 * total + 64);
  if (!b)
    return HTTP_CODEC_E_NOMEM;
  memset(&m, 0, sizeof m);
  if (!to)
    return kannel_refuse(b, "to", "Missing receiver number, rejected", rc);
  if (count == 0)
    return kannel_refuse(b, "to", "Empty receiver number not allowed, rejected", rc);
  if (count > lim.max_recipients)
    return kannel_refuse(b, "to", "Too many receivers, rejected", HTTP_CODEC_E_TOO_LARGE);
  if (udh && udh->len && !kannel_udh(b, udh, &m))
    return kannel_refuse(b, "udh", "UDH field misformed, rejected", rc);
  if (!(rcpt = malloc(count * sizeof *rcpt))) {
    *out = NULL;
    http_codec_batch_free(b);
    return HTTP_CODEC_E_NOMEM;
  }
  kannel_words(to, rcpt, &ok);
  if (!ok) {
    rc = kannel_refuse(b, "to", "Receiver number misformed, rejected", rc);
  } else if (!from || from->len == 0) {
    rc = kannel_refuse(b, "from", "Sender missing and no global set, rejected", rc);
  } else if (http_codec_parse_sender(&m.src, from->value, from->len)) {
    rc = kannel_refuse(b, "from", "Sender misformed, rejected", rc);
  } else if (!kannel_hint(b->account, param_find(params, n, "account", NULL))) {
    rc = kannel_refuse(b, "account", "Account field misformed or too long, rejected", rc);
  } else if (!kannel_hint(b->smsc, param_find(params, n, "smsc", NULL)) ||
             !kannel_hint(b->binfo, param_find(params, n, "binfo", NULL))) {
    rc = kannel_refuse(b, "smsc", "SMSC or BInfo field misformed or too long, rejected", rc);
  } else if (dlr_url && dlr_url->len &&
             (!http_codec_is_http_url(dlr_url->value, dlr_url->len) ||
              memchr(dlr_url->value, 0, dlr_url->len) ||
              !(url = http_codec_arena_string(b, dlr_url->value, dlr_url->len)))) {
    rc = kannel_refuse(b, "dlr-url", "DLR-URL field misformed, rejected", rc);
  } else if (!kannel_int(param_find(params, n, "dlr-mask", "dlrmask"), 0, DLR_MASK_MAX, &dlr_mask)) {
    rc = kannel_refuse(b, "dlr-mask", "DLR-Mask field misformed, rejected", rc);
  } else if (!kannel_int(param_find(params, n, "mclass", NULL), 0, 3, &mclass)) {
    rc = kannel_refuse(b, "mclass", "MClass field misformed, rejected", rc);
  } else if (!kannel_int(param_find(params, n, "pid", NULL), 0, 255, &pid)) {
    rc = kannel_refuse(b, "pid", "PID field misformed, rejected", rc);
  } else if (!kannel_int(param_find(params, n, "coding", NULL), 0, 2, &coding)) {
    rc = kannel_refuse(b, "coding", "Coding field misformed, rejected", rc);
  } else if (!kannel_int(param_find(params, n, "validity", NULL), 0, SECONDS_MAX / 60, &validity)) {
    rc = kannel_refuse(b, "validity", "Validity field misformed, rejected", rc);
  } else if (!kannel_int(param_find(params, n, "deferred", NULL), 0, SECONDS_MAX / 60, &deferred)) {
    rc = kannel_refuse(b, "deferred", "Deferred field misformed, rejected", rc);
  } else if (!kannel_int(param_find(params, n, "priority", NULL), 0, 3, &priority)) {
    rc = kannel_refuse(b, "priority", "Priority field misformed, rejected", rc);
  } else if (!kannel_text(b, param_find(params, n, "text", NULL), param_find(params, n, "charset", NULL),
                          coding, &m)) {
    rc = kannel_refuse(b, "text", "Charset or body misformed, rejected", rc);
  } else {
    m.dcs = http_codec_dcs_for(m.coding, (int)mclass);
    m.dlr_mask = (uint8_t)(dlr_mask > 0 ? dlr_mask : 0);
    m.pid = (uint8_t)(pid > 0 ? pid : 0);
    m.priority = (uint8_t)(priority > 0 ? priority : 0);
    m.validity = validity > 0 ? -validity * 60 : 0;
    m.deferred = deferred > 0 ? -deferred * 60 : 0;
    if ((why = http_codec_payload_check(&m, lim.max_parts, &field, reason, sizeof reason))) {
      rc = kannel_refuse(b, field, strcmp(field, "udh") == 0 ? "UDH field misformed, rejected"
                                                               : "Message too long, rejected", rc);
    } else {
      for (size_t i = 0; i < count; i++) {
        m.dst = rcpt[i];
        http_codec_add_submit(b, &m, 0, url ? HTTP_CODEC_DLR_GET : HTTP_CODEC_DLR_NONE, url);
      }
      rc = 0;
    }
  }
  free(rcpt);
  return rc;
}

const char *http_codec_kannel_answer(const struct http_codec_batch *b,
                                     const struct http_codec_result *results, unsigned *status,
                                     char *buf, size_t cap)
{
  size_t first_refused, len;
  bool queued;
  size_t taken = http_codec_results_taken(b, results, &first_refused, &queued);
  char to[MSG_ADDR_LEN + 2];

  if (taken == b->count) {
    *status = 202;
    return queued ? "3: Queued for later delivery" : "0: Accepted for delivery";
  }
  if (taken == 0 && results[first_refused].outcome == HTTP_CODEC_NO_CREDIT) {
    *status = 402;
    return "Credit used up. Do not try again before it is topped up.";
  }
  if (taken == 0) {
    bool retry = http_codec_outcome_retry(results[first_refused].outcome);
    *status = retry ? 503 : 403;
    return retry ? "Temporal failure, try again later." : "Not routable. Do not try again.";
  }
  *status = 500;
  len = (size_t)snprintf(buf, cap, "Sending failed. Failed receivers are:");
  for (size_t i = first_refused; i < b->count && len < cap; i++) {
    if (http_codec_outcome_taken(results[i].outcome))
      continue;
    http_codec_addr_text(to, sizeof to, &b->items[i].msg.dst);
    len += (size_t)snprintf(buf + len, cap - len, " %s", to);
  }
  return buf;
}

/* ---- templates ---- */

struct writer {
  char *dst;
  size_t cap;
  size_t len;
  bool full;
};

/* Appends as it stands; always leaves room for the NUL. */
static void put_raw(struct writer *w, const void *s, size_t n)
{
  if (w->full || n >= w->cap - w->len) {
    w->full = true;
    return;
  }
  memcpy(w->dst + w->len, s, n);
  w->len += n;
}

static bool url_unreserved(uint8_t c)
{
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == '~';
}

/* Appends a value, %-encoded or JSON-string-escaped. */
static void put_value(struct writer *w, const void *v, size_t n, enum http_codec_escape esc)
{
  static const char hexd[] = "0123456789ABCDEF";
  const uint8_t *p = v;
  for (size_t i = 0; i < n && !w->full; i++) {
    uint8_t c = p[i];
    char e[6];
    if (esc == HTTP_CODEC_ESC_URL ? url_unreserved(c) : (c >= 0x20 && c != '"' && c != '\\')) {
      put_raw(w, &c, 1);
    } else if (esc == HTTP_CODEC_ESC_URL) {
      put_raw(w, (char[]){ '%', hexd[c >> 4], hexd[c & 15] }, 3);
    } else if (c == '"' || c == '\\') {
      put_raw(w, (char[]){ '\\', (char)c }, 2);
    } else {
      memcpy(e, "\\u00", 4);
      e[4] = hexd[c >> 4];
      e[5] = hexd[c & 15];
      put_raw(w, e, 6);
    }
  }
}

static void put_hex(struct writer *w, const uint8_t *p, size_t n)
{
  char chunk[256];
  for (size_t i = 0; i < n; i += sizeof chunk / 2) {
    size_t k = n - i < sizeof chunk / 2 ? n - i : sizeof chunk / 2;
    put_raw(w, chunk, hex_encode(chunk, p + i, k));
  }
}

/* The payload as UTF-8 text, converted a piece at a time so that no buffer
 * has to hold a 64 KiB payload; a piece never ends inside an escape pair or
 * a surrogate pair. Returns false when the payload does not convert. */
static bool put_text(struct writer *w, const struct msg *m, enum http_codec_escape esc)
{
  char utf8[1024];
  size_t i = 0;
  while (i < m->data_len && !w->full) {
    size_t end = i;
    int n;
    if (m->coding == SMS_TEXT_GSM7) {
      while (end < m->data_len && end - i < 300)
        end += m->data[end] == 0x1B && end + 1 < m->data_len ? 2 : 1;
      n = charset_gsm_to_utf8(utf8, sizeof utf8, m->data + i, end - i);
    } else {
      while (end + 1 < m->data_len && end - i < 300)
        end += m->data[end] >= 0xD8 && m->data[end] <= 0xDB && end + 3 < m->data_len ? 4 : 2;
      if (end == i)
        return false;
      n = charset_ucs2_to_utf8(utf8, sizeof utf8, m->data + i, end - i);
    }
    if (n < 0)
      return false;
    put_value(w, utf8, (size_t)n, esc);
    i = end;
  }
  return true;
}

static void put_number(struct writer *w, int64_t v)
{
  char num[24];
  put_raw(w, num, (size_t)snprintf(num, sizeof num, "%" PRId64, v));
}

/* Kannel's coding numbers: 0 GSM, 1 8-bit, 2 UCS2. */
static int kannel_coding(uint8_t coding)
{
  return coding == SMS_TEXT_UCS2 ? 2 : coding == SMS_TEXT_8BIT ? 1 : 0;
}

/* The message class a DCS carries, or -1. */
static int dcs_class(uint8_t dcs)
{
  if ((dcs & 0xF0) == 0xF0 || (dcs & 0xD0) == 0x10)
    return dcs & 0x03;
  return -1;
}

/* Where escapes take their values: a message or a receipt. */
struct escapes {
  const struct msg *m;
  const struct http_codec_dlr *d;
  const char *smsc, *user;
  int64_t time;
  enum http_codec_escape esc;
};

static void put_addr(struct writer *w, const struct msg_addr *a, bool plus_for_00,
                     enum http_codec_escape esc)
{
  char text[MSG_ADDR_LEN + 2];
  size_t len = http_codec_addr_text(text, sizeof text, a);
  if (plus_for_00 && strncmp(text, "00", 2) == 0) {
    text[1] = '+';
    put_value(w, text + 1, len - 1, esc);
  } else {
    put_value(w, text, len, esc);
  }
}

static void put_string(struct writer *w, const char *s, enum http_codec_escape esc)
{
  if (s)
    put_value(w, s, strlen(s), esc);
}

/* One escape (the letter after '%'). Returns false when the payload does not convert. */
static bool put_escape(struct writer *w, char letter, const struct escapes *e, const char *answer)
{
  const struct msg *m = e->m;
  const struct msg_receipt *r = e->d ? e->d->receipt : NULL;
  char text[32];
  int mclass;
  switch (letter) {
  case 'p':
  case 'q':
    put_addr(w, r ? &r->dst : &m->dst, letter == 'q', e->esc);
    return true;
  case 'P':
  case 'Q':
    put_addr(w, r ? &r->src : &m->src, letter == 'Q', e->esc);
    return true;
  case 'b':
    if (r) {
      put_string(w, answer, e->esc);
    } else if (m->coding == SMS_TEXT_8BIT && e->esc == HTTP_CODEC_ESC_JSON) {
      put_hex(w, m->data, m->data_len);
    } else if (m->coding == SMS_TEXT_8BIT) {
      put_value(w, m->data, m->data_len, e->esc);
    } else {
      return put_text(w, m, e->esc);
    }
    return true;
  case 'h':
    if (m)
      put_hex(w, m->data, m->data_len);
    return true;
  case 'u':
    if (m && e->esc == HTTP_CODEC_ESC_JSON)
      put_hex(w, m->udh, m->udh_len);
    else if (m)
      put_value(w, m->udh, m->udh_len, e->esc);
    return true;
  case 'c':
    if (m)
      put_number(w, kannel_coding(m->coding));
    return true;
  case 'C':
    if (m)
      put_string(w, m->coding == SMS_TEXT_8BIT ? "8-BIT" : "UTF-8", e->esc);
    return true;
  case 'm':
    if (m && (mclass = dcs_class(m->dcs)) >= 0)
      put_number(w, mclass);
    return true;
  case 'd':
    put_number(w, r ? (e->d->type ? e->d->type : http_codec_dlr_type(r->state)) : m->dlr_mask);
    return true;
  case 'A':
    put_string(w, r ? answer : NULL, e->esc);
    return true;
  case 'F':
    put_string(w, r ? e->d->smsc_msgid : NULL, e->esc);
    return true;
  case 'I':
    snprintf(text, sizeof text, "%" PRIu64, r ? e->d->id : m->id);
    put_raw(w, text, strlen(text));
    return true;
  case 'i':
    put_string(w, e->smsc, e->esc);
    return true;
  case 'n':
    put_string(w, e->user, e->esc);
    return true;
  case 't':
    http_codec_time_text(text, sizeof text, e->time, "%Y-%m-%d %H:%M:%S");
    put_value(w, text, strlen(text), e->esc);
    return true;
  case 'T':
    put_number(w, e->time);
    return true;
  case '%':
    put_raw(w, "%", 1);
    return true;
  default:
    put_raw(w, (char[]){ '%', letter }, 2);
    return true;
  }
}

static int expand(char *dst, size_t cap, const char *tmpl, const struct escapes *e)
{
  struct writer w = { dst, cap, 0, false };
  char answer[256] = "";
  bool converted = true;
  if (cap == 0)
    return HTTP_CODEC_E_SPACE;
  if (e->d && strpbrk(tmpl, "Ab")) {
    if (e->d->answer)
      snprintf(answer, sizeof answer, "%s", e->d->answer);
    else
      http_codec_receipt_answer(answer, sizeof answer, e->d,
                                e->d->type ? e->d->type : http_codec_dlr_type(e->d->receipt->state));
  }
  for (const char *t = tmpl; *t && converted && !w.full; t++) {
    const char *next = strchr(t, '%');
    if (!next) {
      put_raw(&w, t, strlen(t));
      break;
    }
    put_raw(&w, t, (size_t)(next - t));
    t = next;
    if (!t[1]) {
      put_raw(&w, "%", 1);
      break;
    }
    converted = put_escape(&w, *++t, e, answer);
  }
  dst[w.len] = 0;
  if (w.full)
    return HTTP_CODEC_E_SPACE;
  return converted ? (int)w.len : HTTP_CODEC_E_INVALID;
}

int http_codec_dlr_url(char *dst, size_t cap, const char *tmpl, const struct http_codec_dlr *d)
{
  if (!d || !d->receipt)
    return HTTP_CODEC_E_INVALID;
  struct escapes e = { NULL, d, d->smsc, d->user, d->time, HTTP_CODEC_ESC_URL };
  return expand(dst, cap, tmpl, &e);
}

int http_codec_out_expand(char *dst, size_t cap, const char *tmpl, const struct msg *m,
                          const struct http_codec_out *o, enum http_codec_escape esc)
{
  struct escapes e = { m, NULL, o ? o->smsc : NULL, o ? o->user : NULL, o ? o->time : 0, esc };
  return expand(dst, cap, tmpl, &e);
}
