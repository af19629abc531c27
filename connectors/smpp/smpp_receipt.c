/* smpp_receipt.c - delivery receipt text: tolerant parse, exact format, stat
 * <-> message_state mapping, message id normalisation.
 *
 * Character classes are ASCII by hand rather than <ctype.h>, whose answers
 * depend on the locale: receipt text is protocol data, not user text.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <string.h>
#include "hexutil.h"
#include "smpp_receipt.h"
#include "strutil.h"

/* Longest canonical id smpp_msgid_match compares (64 characters + NUL). */
#define MSGID_MAX 65

static inline char ascii_lower(char c)
{
  return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static inline bool ascii_space(char c)
{
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static inline bool ascii_digit(char c)
{
  return c >= '0' && c <= '9';
}

/* ---- stat <-> message_state ---- */

/* The seven-letter stat of the receipt text and the state's full name,
 * which some SMSCs write instead. */
static const struct {
  const char *stat;
  const char *full;
} states[] = {
  [SMPP_STATE_ENROUTE] = { "ENROUTE", "ENROUTE" },
  [SMPP_STATE_DELIVERED] = { "DELIVRD", "DELIVERED" },
  [SMPP_STATE_EXPIRED] = { "EXPIRED", "EXPIRED" },
  [SMPP_STATE_DELETED] = { "DELETED", "DELETED" },
  [SMPP_STATE_UNDELIVERABLE] = { "UNDELIV", "UNDELIVERABLE" },
  [SMPP_STATE_ACCEPTED] = { "ACCEPTD", "ACCEPTED" },
  [SMPP_STATE_UNKNOWN] = { "UNKNOWN", "UNKNOWN" },
  [SMPP_STATE_REJECTED] = { "REJECTD", "REJECTED" },
};
#define STATE_COUNT (sizeof states / sizeof states[0])

/* s[0..len) equals the NUL-terminated upper/lower-case word, ignoring case. */
static bool equal_nocase(const char *s, size_t len, const char *word)
{
  size_t i = 0;
  for (; i < len && word[i]; i++)
    if (ascii_lower(s[i]) != ascii_lower(word[i]))
      return false;
  return i == len && !word[i];
}

const char *smpp_state_stat(uint8_t state)
{
  return state < STATE_COUNT ? states[state].stat : NULL;
}

uint8_t smpp_stat_state(const char *stat, size_t len)
{
  for (uint8_t i = SMPP_STATE_ENROUTE; i < STATE_COUNT; i++)
    if (equal_nocase(stat, len, states[i].stat) || equal_nocase(stat, len, states[i].full))
      return i;
  return 0;
}

bool smpp_state_final(uint8_t state)
{
  return state > SMPP_STATE_ENROUTE && state < STATE_COUNT;
}

/* ---- parsing ---- */

static const struct {
  const char *name; /* lower case; a space stands for any run of ' ' or '_', or none */
  unsigned field;
} keys[] = {
  { "id", SMPP_RCPT_ID },
  { "sub", SMPP_RCPT_SUB },
  { "dlvrd", SMPP_RCPT_DLVRD },
  { "submit date", SMPP_RCPT_SUBMIT_DATE },
  { "done date", SMPP_RCPT_DONE_DATE },
  { "stat", SMPP_RCPT_STAT },
  { "err", SMPP_RCPT_ERR },
  { "text", SMPP_RCPT_TEXT },
};

/* If a key and its ':' (spaces allowed before it) start at p, returns the
 * key's field and sets *value to just past the ':'; otherwise 0. */
static unsigned match_key(const char *p, const char *end, const char **value)
{
  if (p >= end)
    return 0;
  char first = ascii_lower(*p);
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    if (keys[i].name[0] != first)   /* most words and values are no key at all */
      continue;
    const char *q = p, *k = keys[i].name;
    for (; *k; k++) {
      if (*k == ' ') {
        while (q < end && (*q == ' ' || *q == '_'))
          q++;
      } else if (q < end && ascii_lower(*q) == *k) {
        q++;
      } else {
        break;
      }
    }
    if (*k)
      continue;
    while (q < end && *q == ' ')
      q++;
    if (q < end && *q == ':') {
      *value = q + 1;
      return keys[i].field;
    }
  }
  return 0;
}

/* 1 to 9 decimal digits (so any value fits an unsigned). */
static bool get_count(unsigned *dst, const char *v, size_t n)
{
  if (n < 1 || n > 9)
    return false;
  unsigned x = 0;
  for (size_t i = 0; i < n; i++) {
    if (!ascii_digit(v[i]))
      return false;
    x = x * 10 + (unsigned)(v[i] - '0');
  }
  *dst = x;
  return true;
}

/* YYMMDDhhmm with up to four more digits (seconds and beyond). */
static bool get_date(char dst[15], const char *v, size_t n)
{
  if (n < 10 || n > 14)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!ascii_digit(v[i]))
      return false;
  memcpy(dst, v, n);
  dst[n] = '\0';
  return true;
}

/* Stores a valid value only, so a malformed repeat keeps the earlier one. */
static bool get_field(struct smpp_receipt *r, unsigned field, const char *v, size_t n)
{
  switch (field) {
  case SMPP_RCPT_ID:
    if (n < 1 || n >= sizeof r->id)
      return false;
    memcpy(r->id, v, n);
    r->id[n] = '\0';
    return true;
  case SMPP_RCPT_SUB:
    return get_count(&r->sub, v, n);
  case SMPP_RCPT_DLVRD:
    return get_count(&r->dlvrd, v, n);
  case SMPP_RCPT_SUBMIT_DATE:
    return get_date(r->submit_date, v, n);
  case SMPP_RCPT_DONE_DATE:
    return get_date(r->done_date, v, n);
  case SMPP_RCPT_STAT: {
    uint8_t state = smpp_stat_state(v, n);
    if (!state)
      return false;
    r->state = state;
    return true;
  }
  case SMPP_RCPT_ERR:
    return get_count(&r->err, v, n);
  default:
    return false;
  }
}

int smpp_receipt_parse(struct smpp_receipt *r, const char *s, size_t len)
{
  const char *end = memchr(s, '\0', len);
  if (!end)
    end = s + len;
  memset(r, 0, sizeof *r);

  const char *p = s;
  while (p < end) {
    if (ascii_space(*p)) {
      p++;
      continue;
    }
    const char *v, *next;
    unsigned field = match_key(p, end, &v);
    if (!field) { /* a word that is no field: skip it */
      while (p < end && !ascii_space(*p))
        p++;
      continue;
    }
    if (field == SMPP_RCPT_TEXT) { /* the message itself: anything, to the end */
      r->text = v;
      r->text_len = (size_t)(end - v);
      r->present |= SMPP_RCPT_TEXT;
      break;
    }
    while (v < end && *v == ' ')
      v++;
    /* "sub: dlvrd:001" has an empty sub, not a sub of "dlvrd:001" */
    const char *ve = v;
    if (!match_key(v, end, &next))
      while (ve < end && !ascii_space(*ve))
        ve++;
    if (get_field(r, field, v, (size_t)(ve - v)))
      r->present |= field;
    p = ve;
  }
  return r->present & (SMPP_RCPT_ID | SMPP_RCPT_STAT) ? 0 : SMPP_RECEIPT_ERR_FORMAT;
}

/* ---- formatting ---- */

/* Written once a receipt (a sink sends tens of thousands a second), so
 * piece by piece rather than through snprintf. */
int smpp_receipt_format(char *dst, size_t cap, const struct smpp_receipt *r)
{
  const char *stat = smpp_state_stat(r->state);
  if (!stat)
    return SMPP_RECEIPT_ERR_STATE;
  size_t text_len = r->text_len < SMPP_RECEIPT_TEXT_MAX ? r->text_len : SMPP_RECEIPT_TEXT_MAX;
  struct str_out o = str_out(dst, cap);
  str_put(&o, "id:", 3);
  str_put(&o, r->id, strnlen(r->id, 64));
  str_put(&o, " sub:", 5);
  str_put_dec(&o, r->sub, 3);
  str_put(&o, " dlvrd:", 7);
  str_put_dec(&o, r->dlvrd, 3);
  str_put(&o, " submit date:", 13);
  str_put(&o, r->submit_date, strnlen(r->submit_date, 14));
  str_put(&o, " done date:", 11);
  str_put(&o, r->done_date, strnlen(r->done_date, 14));
  str_put(&o, " stat:", 6);
  str_puts(&o, stat);
  str_put(&o, " err:", 5);
  str_put_dec(&o, r->err, 3);
  str_put(&o, " text:", 6);
  if (text_len)
    str_put(&o, r->text, text_len);
  if (o.cut)
    return SMPP_RECEIPT_ERR_SPACE;
  return (int)o.len;
}

/* ---- message ids ---- */

/* The whole of s[0..n) as a number in base 10 or 16 below 2^64. */
static bool parse_u64(uint64_t *dst, const char *s, size_t n, unsigned base)
{
  uint64_t x = 0;
  if (n == 0)
    return false;
  for (size_t i = 0; i < n; i++) {
    int d = hex_digit((unsigned char)s[i]);
    if (d < 0 || (unsigned)d >= base || x > (UINT64_MAX - (unsigned)d) / base)
      return false;
    x = x * base + (unsigned)d;
  }
  *dst = x;
  return true;
}

int smpp_msgid_canonical(char *dst, size_t cap, const char *id, size_t len, bool hex)
{
  while (len && ascii_space(*id)) {
    id++;
    len--;
  }
  while (len && ascii_space(id[len - 1]))
    len--;

  char digits[21]; /* 2^64 - 1 has 20, and the NUL */
  uint64_t value;
  if (parse_u64(&value, id, len, hex ? 16 : 10)) {
    struct str_out o = str_out(digits, sizeof digits);
    str_put_dec(&o, value, 1);
    id = digits;
    len = o.len;
  } else {
    /* not a number we can read: compare as text; a leading zero run cannot
     * be all of it (that would have read as 0) */
    while (len && *id == '0') {
      id++;
      len--;
    }
  }
  if (len >= cap)
    return SMPP_RECEIPT_ERR_SPACE;
  for (size_t i = 0; i < len; i++)
    dst[i] = ascii_lower(id[i]);
  dst[len] = '\0';
  return (int)len;
}

bool smpp_msgid_match(const char *a, const char *b)
{
  char ca[2][MSGID_MAX], cb[2][MSGID_MAX];
  int na[2], nb[2];
  size_t la = strlen(a), lb = strlen(b);
  for (int hex = 0; hex < 2; hex++) {
    na[hex] = smpp_msgid_canonical(ca[hex], sizeof ca[hex], a, la, hex);
    nb[hex] = smpp_msgid_canonical(cb[hex], sizeof cb[hex], b, lb, hex);
  }
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      if (na[i] > 0 && nb[j] > 0 && strcmp(ca[i], cb[j]) == 0)
        return true;
  return false;
}
