/* admin_json.c - values as the admin API writes them. See admin_json.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "admin_json.h"
#include "endpoint.h"

/* Unix ms as ISO 8601 UTC with milliseconds; null for 0 (never, unknown). */
json_t *json_time_ms(int64_t ms)
{
  if (ms <= 0)
    return json_null();
  time_t secs = (time_t)(ms / 1000);
  struct tm tm;
  char text[40];
  gmtime_r(&secs, &tm);
  size_t n = strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(text + n, sizeof text - n, ".%03dZ", (int)(ms % 1000));
  return json_string(text);
}

/* Message ids are 64 bits: as JSON numbers they would lose their low digits
 * in JavaScript and jq (doubles), so the API writes them as decimal strings. */
json_t *json_id(uint64_t id)
{
  char text[24];
  snprintf(text, sizeof text, "%" PRIu64, id);
  return json_string(text);
}

/* A string a peer gave (address, account, SMSC id, error text). jansson
 * takes UTF-8 only: text that is not (a detail cut mid-character) shows
 * its other bytes as '?' rather than losing the whole answer. */
json_t *json_text(const char *s)
{
  json_t *j = json_string(s);
  if (j)
    return j;
  char copy[256];
  size_t i = 0;
  for (; s[i] && i + 1 < sizeof copy; i++)
    copy[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
  copy[i] = '\0';
  return json_string(copy);
}

json_t *json_text_or_null(const char *s)
{
  return s && *s ? json_text(s) : json_null();
}

/* A message id as an operator writes it: decimal, or hex after "0x".
 * Returns 0, or -1 when text is no such number. */
int parse_msg_id(const char *text, uint64_t *id)
{
  int base = 10;
  if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text += 2;
  }
  if (!isxdigit((unsigned char)text[0]))
    return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(text, &end, base);
  if (*end || errno == ERANGE)
    return -1;
  *id = v;
  return 0;
}

const char *state_name(uint8_t state)
{
  return msg_state_name(state);
}

const char *connector_name(const struct core *c, unsigned index)
{
  return index < c->n_connectors ? connector_config(c->connectors[index])->name : "?";
}

