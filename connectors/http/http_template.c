/* http_template.c - Kannel's %-escapes: in dlr-url templates (filled in when
 * the receipt comes), in the outgoing connector's URL and body templates
 * (filled in from the message), and the escapes only a sendsms request
 * knows (filled in when it is taken). See http_codec.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "charset.h"
#include "hexutil.h"
#include "http_codec_internal.h"
#include "sms_text.h"

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

/* Appends a value, %-encoded or JSON-string-escaped; with double_percent
 * each '%' of the encoding is written twice (for a second expansion). */
static void put_encoded(struct writer *w, const void *v, size_t n, enum http_codec_escape esc, bool double_percent)
{
  static const char hexd[] = "0123456789ABCDEF";
  const uint8_t *p = v;
  for (size_t i = 0; i < n && !w->full; i++) {
    uint8_t c = p[i];
    char e[6];
    if (esc == HTTP_CODEC_ESC_URL ? url_unreserved(c) : (c >= 0x20 && c != '"' && c != '\\')) {
      put_raw(w, &c, 1);
    } else if (esc == HTTP_CODEC_ESC_URL) {
      if (double_percent)
        put_raw(w, "%", 1);
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

static void put_value(struct writer *w, const void *v, size_t n, enum http_codec_escape esc)
{
  put_encoded(w, v, n, esc, false);
}

/* Upper-case hex, as Kannel's %e and %U. */
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
 * a surrogate pair. Each piece goes to emit. Returns false when the payload
 * does not convert. */
static bool text_pieces(const struct msg *m, void (*emit)(void *ctx, const char *s, size_t n), void *ctx)
{
  char utf8[1024];
  size_t i = 0;
  if (m->coding == SMS_TEXT_8BIT) {   /* octets, as they are */
    emit(ctx, (const char *)m->data, m->data_len);
    return true;
  }
  while (i < m->data_len) {
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
    emit(ctx, utf8, (size_t)n);
    i = end;
  }
  return true;
}

struct value_sink {
  struct writer *w;
  enum http_codec_escape esc;
};

static void emit_value(void *ctx, const char *s, size_t n)
{
  struct value_sink *v = ctx;
  put_value(v->w, s, n, v->esc);
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

/* The message class a DCS carries, or -1 (Kannel's "undefined"). */
static int dcs_class(uint8_t dcs)
{
  if ((dcs & 0xF0) == 0xF0 || (dcs & 0xD0) == 0x10)
    return dcs & 0x03;
  return -1;
}

/* Kannel's mwi of a DCS: the indication 0-3 set, 4-7 cleared; -1 for none. */
static int dcs_mwi(uint8_t dcs)
{
  uint8_t group = dcs & 0xF0;
  if (group != 0xC0 && group != 0xD0 && group != 0xE0)
    return -1;
  return (dcs & 0x03) + ((dcs & 0x08) ? 0 : 4);
}

/* Minutes from now to an absolute time (or a relative one, -seconds); -1 for none. */
static int64_t minutes_until(int64_t when, int64_t now)
{
  if (!when)
    return -1;
  int64_t s = when < 0 ? -when : when - now;
  return s > 0 ? s / 60 : 0;
}

/* Where escapes take their values: a message or a receipt. */
struct escapes {
  const struct msg *m;
  const struct http_codec_dlr *d;
  const char *smsc, *user;
  int64_t time;
  enum http_codec_escape esc;
  bool mo;            /* a message from a handset: %p is its sender */
  /* %k %s %S %r %a: the text's words (a receipt's: its answer). */
  const char *text;
  size_t text_len;
  size_t next_word;   /* %s and %S take the words from the second on */
};

static void put_addr(struct writer *w, const struct msg_addr *a, bool plus_for_00, enum http_codec_escape esc)
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

/* Word k (from 0) of the text: its start and length; false past the last. */
static bool word_at(const struct escapes *e, size_t k, const char **start, size_t *len)
{
  const char *p = e->text, *end = e->text ? e->text + e->text_len : NULL;
  for (size_t i = 0; p && p < end; i++) {
    while (p < end && isspace((unsigned char)*p))
      p++;
    if (p == end)
      break;
    const char *q = p;
    while (q < end && !isspace((unsigned char)*q))
      q++;
    if (i == k) {
      *start = p;
      *len = (size_t)(q - p);
      return true;
    }
    p = q;
  }
  return false;
}

/* Words from k on, joined by '+' (a space in JSON), each encoded. */
static void put_words(struct writer *w, const struct escapes *e, size_t k)
{
  const char *s;
  size_t n;
  for (size_t i = k; word_at(e, i, &s, &n); i++) {
    if (i > k)
      put_raw(w, e->esc == HTTP_CODEC_ESC_URL ? "+" : " ", 1);
    put_value(w, s, n, e->esc);
  }
}

/* One escape (the letter after '%'). Returns false for one this code does
 * not know (the caller writes it out as text), or when the payload does not
 * convert (*converted false). */
static bool put_escape(struct writer *w, char letter, struct escapes *e, const char *answer, bool *converted)
{
  const struct msg *m = e->m;
  const struct msg_receipt *r = e->d ? e->d->receipt : NULL;
  char text[32];
  const char *s;
  size_t n;
  int v;
  switch (letter) {
  case 'p':
  case 'q':
    put_addr(w, r ? &r->dst : e->mo ? &m->src : &m->dst, letter == 'q', e->esc);
    return true;
  case 'P':
  case 'Q':
    put_addr(w, r ? &r->src : e->mo ? &m->dst : &m->src, letter == 'Q', e->esc);
    return true;
  case 'b':
    if (r)
      put_string(w, answer, e->esc);
    else if (m->coding == SMS_TEXT_8BIT && e->esc == HTTP_CODEC_ESC_JSON)
      put_hex(w, m->data, m->data_len);
    else
      *converted = text_pieces(m, emit_value, &(struct value_sink){ w, e->esc });
    return true;
  case 'e':
    if (r)
      put_hex(w, (const uint8_t *)answer, strlen(answer));
    else
      put_hex(w, m->data, m->data_len);
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
  case 'U':
    if (m)
      put_hex(w, m->udh, m->udh_len);
    return true;
  case 'c':
    if (m)
      put_number(w, kannel_coding(m->coding));
    return true;
  case 'C':
    if (m)
      put_string(w, m->coding == SMS_TEXT_8BIT ? "8-BIT" : "UTF-8", e->esc);   /* what %b gives */
    return true;
  case 'm':
  case 'M':
    if (m)
      put_number(w, letter == 'm' ? dcs_class(m->dcs) : dcs_mwi(m->dcs));
    return true;
  case 'O':
    if (m)
      put_raw(w, text, (size_t)snprintf(text, sizeof text, "%02d", m->dcs));
    return true;
  case 'y':
    if (m)
      put_number(w, m->priority);
    return true;
  case 'v':
  case 'V':
    if (m && (v = (int)minutes_until(letter == 'v' ? m->validity : m->deferred, e->time)) >= 0)
      put_number(w, v);
    return true;
  case 'd':
    put_number(w, r ? http_codec_dlr_type(r->state) : m->dlr_mask);
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
    /* Kannel writes the space of a URL's time as '+' and the colons as they are. */
    http_codec_time_text(text, sizeof text, e->time,
                         e->esc == HTTP_CODEC_ESC_URL ? "%Y-%m-%d+%H:%M:%S" : "%Y-%m-%d %H:%M:%S");
    put_raw(w, text, strlen(text));
    return true;
  case 'T':
    put_number(w, e->time);
    return true;
  case 'k':
    if (word_at(e, 0, &s, &n))
      put_value(w, s, n, e->esc);
    return true;
  case 's':
  case 'S':
    if (word_at(e, e->next_word, &s, &n)) {
      e->next_word++;
      for (size_t i = 0; i < n; i++)
        put_value(w, letter == 'S' && s[i] == '*' ? "~" : s + i, 1, e->esc);
    }
    return true;
  case 'r':
    put_words(w, e, e->next_word);
    return true;
  case 'a':
    put_words(w, e, 0);
    return true;
  case 'f': /* the SMSC's number: an MO's, which no adapter passes on */
  case 'x': /* the smsbox a message came through: there are none here */
  case 'o': /* account, billing info, meta-data and the dlr-url itself: */
  case 'B': /* filled in when the sendsms request was taken */
  case 'D':
  case 'R':
    return true;
  case '%':
    put_raw(w, "%", 1);
    return true;
  default:
    return false;
  }
}

/* A '%' whose escape is unknown: Kannel keeps it as text. A URL gets it
 * %-encoded, unless it already starts a %XX encoding the template wrote. */
static size_t put_unknown(struct writer *w, const char *t, enum http_codec_escape esc)
{
  if (esc == HTTP_CODEC_ESC_URL && hex_digit(t[1]) >= 0 && hex_digit(t[2]) >= 0) {
    put_raw(w, t, 3);
    return 3;
  }
  put_raw(w, esc == HTTP_CODEC_ESC_URL ? "%25" : "%", esc == HTTP_CODEC_ESC_URL ? 3 : 1);
  return 1;
}

/* The text's words come from: a receipt's answer, or a message's text. */
struct text_buf {
  char *p;
  size_t len, cap;
  bool failed;
};

static void emit_text(void *ctx, const char *s, size_t n)
{
  struct text_buf *b = ctx;
  if (b->failed)
    return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 1024;
    while (cap < b->len + n + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->failed = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
}

/* Copies the template's text from t up to its next '%'; returns that '%',
 * or NULL at the template's end. */
static const char *copy_to_escape(struct writer *w, const char *t)
{
  const char *next = strchr(t, '%');
  put_raw(w, t, next ? (size_t)(next - t) : strlen(t));
  return next;
}

/* Whether the template uses one of the word escapes. */
static bool wants_words(const char *tmpl)
{
  for (const char *t = strchr(tmpl, '%'); t && t[1]; t = strchr(t + 2, '%'))
    if (strchr("ksSra", t[1]))
      return true;
  return false;
}

static int expand(char *dst, size_t cap, const char *tmpl, struct escapes *e)
{
  struct writer w = { dst, cap, 0, false };
  char answer[256] = "";
  bool converted = true;
  struct text_buf words = { NULL, 0, 0, false };
  if (cap == 0)
    return HTTP_CODEC_E_SPACE;
  bool words_wanted = wants_words(tmpl);
  /* The receipt's text only when the template asks for it (%A, or its words). */
  if (e->d && (words_wanted || strstr(tmpl, "%A"))) {
    if (e->d->answer)
      snprintf(answer, sizeof answer, "%s", e->d->answer);
    else
      http_codec_receipt_answer(answer, sizeof answer, e->d, http_codec_dlr_type(e->d->receipt->state));
  }
  if (words_wanted) {
    if (e->d) {
      e->text = answer;
      e->text_len = strlen(answer);
    } else if (!text_pieces(e->m, emit_text, &words) || words.failed) {
      free(words.p);
      return words.failed ? HTTP_CODEC_E_NOMEM : HTTP_CODEC_E_INVALID;
    } else {
      e->text = words.p;
      e->text_len = words.len;
    }
    e->next_word = 1;
  }
  for (const char *t = tmpl; converted && !w.full && (t = copy_to_escape(&w, t));) {
    if (t[1] && put_escape(&w, t[1], e, answer, &converted))
      t += 2;
    else
      t += put_unknown(&w, t, e->esc);
  }
  free(words.p);
  dst[w.len] = 0;
  if (w.full)
    return HTTP_CODEC_E_SPACE;
  return converted ? (int)w.len : HTTP_CODEC_E_INVALID;
}

int http_codec_dlr_url(char *dst, size_t cap, const char *tmpl, const struct http_codec_dlr *d)
{
  if (!d || !d->receipt)
    return HTTP_CODEC_E_INVALID;
  struct escapes e = { NULL, d, d->smsc, d->user, d->time, HTTP_CODEC_ESC_URL, false, NULL, 0, 0 };
  return expand(dst, cap, tmpl, &e);
}

int http_codec_out_expand(char *dst, size_t cap, const char *tmpl, const struct msg *m,
                          const struct http_codec_out *o, enum http_codec_escape esc)
{
  struct escapes e = { m, NULL, o ? o->smsc : NULL, o ? o->user : NULL, o ? o->time : 0, esc, o && o->mo,
                       NULL, 0, 0 };
  return expand(dst, cap, tmpl, &e);
}

/* ---- what only the sendsms request knows ---- */

/* Kannel's meta-data: "?group?key=value&key=value?group?...", values
 * %-encoded. The value of key in group, decoded into out; false if absent. */
static bool meta_value(const char *meta, const char *group, size_t group_len, const char *key, size_t key_len,
                       char *out, size_t cap)
{
  const char *p = meta;
  while (p && (p = strchr(p, '?'))) {
    const char *name = p + 1, *end = strchr(name, '?');
    if (!end)
      return false;
    const char *pairs = end + 1, *stop = strchr(pairs, '?');
    if (!stop)
      stop = pairs + strlen(pairs);
    if ((size_t)(end - name) == group_len && strncmp(name, group, group_len) == 0) {
      for (const char *q = pairs; q < stop;) {
        const char *amp = memchr(q, '&', (size_t)(stop - q)), *eq = memchr(q, '=', (size_t)(stop - q));
        if (!amp)
          amp = stop;
        if (eq && eq < amp && (size_t)(eq - q) == key_len && strncmp(q, key, key_len) == 0) {
          out[http_codec_form_decode(out, cap, eq + 1, (size_t)(amp - eq - 1))] = 0;
          return true;
        }
        q = amp + 1;
      }
    }
    p = stop;
  }
  return false;
}

static void put_submit_value(struct writer *w, const char *s)
{
  if (s)
    put_encoded(w, s, strlen(s), HTTP_CODEC_ESC_URL, true);
}

int http_codec_dlr_url_prepare(char *dst, size_t cap, const char *tmpl, const struct http_codec_submit_info *s)
{
  struct writer w = { dst, cap, 0, false };
  char value[256];
  if (cap == 0)
    return HTTP_CODEC_E_SPACE;
  for (const char *t = tmpl; !w.full && (t = copy_to_escape(&w, t));) {
    const char *g, *ge, *k, *ke;
    switch (t[1]) {
    case 'n':
      put_submit_value(&w, s->user);
      break;
    case 'o':
      put_submit_value(&w, s->account);
      break;
    case 'B':
      put_submit_value(&w, s->binfo);
      break;
    case 'D':
      put_submit_value(&w, s->meta_data);
      break;
    case 'R':
      put_submit_value(&w, tmpl);
      break;
    case '#':
      /* %#group#key#: one value of the meta-data; without its closing '#'s
       * the '%' is text, as Kannel has it. */
      g = t + 2;
      ge = strchr(g, '#');
      k = ge ? ge + 1 : NULL;
      ke = k ? strchr(k, '#') : NULL;
      if (!ke) {
        put_raw(&w, "%", 1);
        t += 1;
        continue;
      }
      if (s->meta_data && meta_value(s->meta_data, g, (size_t)(ge - g), k, (size_t)(ke - k), value, sizeof value))
        put_submit_value(&w, value);
      t = ke + 1;
      continue;
    case 0:
      put_raw(&w, "%", 1);
      t += 1;
      continue;
    default:
      /* The receipt's escapes, "%%" among them, stay for http_codec_dlr_url. */
      put_raw(&w, t, 2);
      break;
    }
    t += 2;
  }
  dst[w.len] = 0;
  return w.full ? HTTP_CODEC_E_SPACE : (int)w.len;
}
