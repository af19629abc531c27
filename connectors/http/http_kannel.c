/* http_kannel.c - Kannel's sendsms: form parameters, submits and their
 * answers. Kannel's %-escapes (dlr-url and the outgoing connector's
 * templates) are in http_template.c. See http_codec.h.
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

/* In place: decoding only shrinks. */
static size_t form_decode(char *s, size_t n)
{
  return http_codec_form_decode(s, n + 1, s, n);
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
    { "RPI", "rpi" },           { "Priority", "priority" }, { "Meta-Data", "meta-data" },
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
  /* Two dozen names are looked up in each request: the first letter
   * settles most comparisons without a call. */
  for (size_t i = 0; i < n; i++)
    if (p[i].name[0] == name[0] && strcmp(p[i].name, name) == 0)
      return &p[i];
  for (size_t i = 0; alt && i < n; i++)
    if (p[i].name[0] == alt[0] && strcmp(p[i].name, alt) == 0)
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

/* The DCS Kannel sets: a message waiting indication (mwi 0-3 set, 4-7
 * cleared; its group stores the message unless it is empty), else the
 * class in the form alt_dcs asks for (1: 0xFX; 0: 0x1X; -1: ours,
 * http_codec_dcs_for). */
static uint8_t kannel_dcs(uint8_t coding, int mclass, int mwi, int alt_dcs)
{
  if (mwi >= 0)
    return (uint8_t)((coding == SMS_TEXT_UCS2 ? 0xE0 : 0xD0) | (mwi < 4 ? 0x08 : 0) | (mwi & 3));
  if (mclass >= 0 && alt_dcs == 0)
    return (uint8_t)(0x10 | (coding == SMS_TEXT_UCS2 ? 0x08 : coding == SMS_TEXT_8BIT ? 0x04 : 0) | mclass);
  return http_codec_dcs_for(coding, mclass);
}

/* The dlr-url into the arena, what only the request knows filled in; NULL
 * when it does not fit (MSG_CALLBACK_LEN) or memory is short. */
static const char *kannel_dlr_url(struct http_codec_batch *b, const struct http_codec_param *dlr_url,
                                  const struct http_codec_param *params, size_t n,
                                  const struct http_codec_param *meta)
{
  const struct http_codec_param *user = param_find(params, n, "username", "user");
  struct http_codec_submit_info info = { user ? user->value : NULL, b->account[0] ? b->account : NULL,
                                         b->binfo[0] ? b->binfo : NULL, meta && meta->len ? meta->value : NULL };
  char url[MSG_CALLBACK_LEN];
  int len = http_codec_dlr_url_prepare(url, sizeof url, dlr_url->value, &info);
  return len < 0 ? NULL : http_codec_arena_string(b, url, (size_t)len);
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
  const struct http_codec_param *meta = param_find(params, n, "meta-data", NULL);
  long dlr_mask, mclass, pid, coding, validity, deferred, priority, mwi, alt_dcs, compress, rpi;
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
  } else if (meta && meta->len && (meta->value[0] != '?' || memchr(meta->value, 0, meta->len))) {
    rc = kannel_refuse(b, "meta-data", "Meta-Data field misformed, rejected", rc);
  } else if (dlr_url && dlr_url->len &&
             (!http_codec_is_http_url(dlr_url->value, dlr_url->len) ||
              memchr(dlr_url->value, 0, dlr_url->len) ||
              !(url = kannel_dlr_url(b, dlr_url, params, n, meta)))) {
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
  } else if (!kannel_int(param_find(params, n, "mwi", NULL), 0, 7, &mwi)) {
    rc = kannel_refuse(b, "mwi", "MWI field misformed, rejected", rc);
  } else if (!kannel_int(param_find(params, n, "alt-dcs", NULL), 0, 1, &alt_dcs)) {
    rc = kannel_refuse(b, "alt-dcs", "Alt-DCS field misformed, rejected", rc);
  } else if (!kannel_int(param_find(params, n, "compress", NULL), 0, 1, &compress)) {
    rc = kannel_refuse(b, "compress", "Compress field misformed, rejected", rc);
  } else if (compress == 1) {
    rc = kannel_refuse(b, "compress", "Compression not supported, rejected", rc);
  } else if (!kannel_int(param_find(params, n, "rpi", NULL), 0, 2, &rpi)) {
    rc = kannel_refuse(b, "rpi", "RPI field misformed, rejected", rc);
  } else if (rpi == 1) {
    rc = kannel_refuse(b, "rpi", "Reply path not supported, rejected", rc);
  } else if (!kannel_text(b, param_find(params, n, "text", NULL), param_find(params, n, "charset", NULL),
                          coding, &m)) {
    rc = kannel_refuse(b, "text", "Charset or body misformed, rejected", rc);
  } else {
    m.dcs = kannel_dcs(m.coding, (int)mclass, (int)mwi, (int)alt_dcs);
    if (mwi >= 0 && m.coding == SMS_TEXT_8BIT) {
      free(rcpt);   /* an indication group carries text only */
      return kannel_refuse(b, "mwi", "MWI field misformed, rejected", rc);
    }
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

