/* cimd2_codec.c - CIMD2 packets. See cimd2_codec.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <string.h>
#include "cimd2_codec.h"
#include "hexutil.h"
#include "strutil.h"

static bool is_digit(uint8_t c)
{
  return c >= '0' && c <= '9';
}

/* n decimal digits at p, as a number; -1 when one is not a digit. */
static int digits(const uint8_t *p, size_t n)
{
  int v = 0;
  for (size_t i = 0; i < n; i++) {
    if (!is_digit(p[i]))
      return -1;
    v = v * 10 + (p[i] - '0');
  }
  return v;
}

/* The header after STX, as far as the bytes go: -1 when what is there
 * cannot start "OO:NNN" TAB, else 0. */
static int header_so_far(const uint8_t *p, size_t len)
{
  static const char shape[] = "99:999\t";
  for (size_t i = 0; i < len && i < sizeof shape - 1; i++)
    if (shape[i] == '9' ? !is_digit(p[i]) : p[i] != (uint8_t)shape[i])
      return -1;
  return 0;
}

/* Bytes to drop from buf[from..len) on: up to the next STX, or all. */
static size_t to_next_stx(const uint8_t *buf, size_t from, size_t len)
{
  const uint8_t *stx = from < len ? memchr(buf + from, CIMD2_STX, len - from) : NULL;
  return stx ? (size_t)(stx - buf) : len;
}

int cimd2_split(const uint8_t *buf, size_t len, size_t max_frame, size_t *skip)
{
  if (max_frame < CIMD2_FRAME_MIN)
    max_frame = CIMD2_FRAME_MIN;
  if (max_frame > CIMD2_FRAME_MAX)
    max_frame = CIMD2_FRAME_MAX;
  *skip = 0;
  if (!len)
    return 0;
  if (buf[0] != CIMD2_STX) {
    *skip = to_next_stx(buf, 0, len);
    return CIMD2_E_GARBAGE;
  }
  /* What the header's bytes say, as soon as they are here. */
  if (header_so_far(buf + 1, len - 1) < 0) {
    *skip = to_next_stx(buf, 1, len);
    return CIMD2_E_HEADER;
  }
  size_t look = len < max_frame ? len : max_frame;
  for (size_t i = 1; i < look; i++) {
    if (buf[i] == CIMD2_ETX)
      return i + 1 < CIMD2_FRAME_MIN ? (*skip = i + 1, CIMD2_E_HEADER) : (int)(i + 1);
    if (buf[i] == CIMD2_STX) {
      *skip = i;
      return CIMD2_E_TRUNCATED;
    }
  }
  if (len >= max_frame) {
    *skip = to_next_stx(buf, 1, len);
    return CIMD2_E_TOO_LONG;
  }
  return 0;
}

uint8_t cimd2_checksum(const uint8_t *frame, size_t len)
{
  unsigned sum = 0;
  for (size_t i = 0; i < len; i++)
    sum += frame[i];
  return (uint8_t)sum;
}

int cimd2_decode(const uint8_t *frame, size_t len, struct cimd2_packet *p)
{
  memset(p, 0, sizeof *p);
  if (len < CIMD2_FRAME_MIN || frame[0] != CIMD2_STX || frame[len - 1] != CIMD2_ETX ||
      header_so_far(frame + 1, 7) < 0)
    return CIMD2_E_HEADER;
  p->op = (uint8_t)digits(frame + 1, 2);
  p->number = (uint16_t)digits(frame + 4, 3);
  size_t at = 8, end = len - 1;   /* after the header's TAB; the ETX */
  /* Parameters "PPP:value" TAB until what is left is the checksum, or nothing. */
  while (at < end) {
    const uint8_t *tab = memchr(frame + at, CIMD2_TAB, end - at);
    if (!tab) {
      /* The rest is the checksum: two hex digits over every byte before it. */
      uint8_t sum;
      if (end - at != 2 || hex_decode(&sum, (const char *)frame + at, 2) != 1)
        return CIMD2_E_SYNTAX;
      if (cimd2_checksum(frame, at) != sum)
        return CIMD2_E_CHECKSUM;
      p->checksum = true;
      return 0;
    }
    size_t n = (size_t)(tab - (frame + at));
    if (n < 4 || frame[at + 3] != ':' || digits(frame + at, 3) < 0 || p->n_params == CIMD2_PARAMS_MAX)
      return CIMD2_E_SYNTAX;
    struct cimd2_param *prm = &p->params[p->n_params++];
    prm->code = (uint16_t)digits(frame + at, 3);
    prm->value.p = (const char *)frame + at + 4;
    prm->value.len = n - 4;
    at += n + 1;
  }
  return 0;
}

void cimd2_packet_init(struct cimd2_packet *p, uint8_t op, uint16_t number)
{
  p->op = op;
  p->number = number;
  p->checksum = true;
  p->n_params = 0;   /* the parameters past it are never read */
}

int cimd2_put(struct cimd2_packet *p, uint16_t code, const char *value, size_t len)
{
  if (p->n_params == CIMD2_PARAMS_MAX)
    return CIMD2_E_SPACE;
  p->params[p->n_params++] = (struct cimd2_param){ code, { value, len } };
  return 0;
}

int cimd2_put_uint(struct cimd2_packet *p, uint16_t code, uint64_t value, char *buf, size_t cap)
{
  struct str_out o = str_out(buf, cap);
  str_put_dec(&o, value, 1);
  return o.cut ? CIMD2_E_SPACE : cimd2_put(p, code, buf, o.len);
}

const struct cimd2_slice *cimd2_get(const struct cimd2_packet *p, uint16_t code)
{
  for (unsigned i = 0; i < p->n_params; i++)
    if (p->params[i].code == code)
      return &p->params[i].value;
  return NULL;
}

int cimd2_get_uint(const struct cimd2_packet *p, uint16_t code, uint64_t max, uint64_t *value)
{
  const struct cimd2_slice *s = cimd2_get(p, code);
  if (!s)
    return -1;
  if (!s->len || s->len > 20)
    return CIMD2_E_SYNTAX;
  uint64_t v = 0;
  for (size_t i = 0; i < s->len; i++) {
    if (!is_digit((uint8_t)s->p[i]) || v > (max - (uint64_t)(s->p[i] - '0')) / 10)
      return CIMD2_E_SYNTAX;
    v = v * 10 + (uint64_t)(s->p[i] - '0');
  }
  *value = v;
  return 0;
}

int cimd2_encode(const struct cimd2_packet *p, uint8_t *out, size_t cap)
{
  if (p->op > 99 || p->number > 999)
    return CIMD2_E_INVALID;
  /* Written without printf: a packet is encoded for every message. */
  char head[16];
  struct str_out o = str_out(head, sizeof head);
  str_put(&o, "\x02", 1);
  str_put_dec(&o, p->op, 2);
  str_put(&o, ":", 1);
  str_put_dec(&o, p->number, 3);
  str_put(&o, "\t", 1);
  size_t at = o.len;
  if (at > cap)
    return CIMD2_E_SPACE;
  memcpy(out, head, at);
  for (unsigned i = 0; i < p->n_params; i++) {
    const struct cimd2_param *prm = &p->params[i];
    if (prm->code > 999)
      return CIMD2_E_INVALID;
    for (size_t k = 0; k < prm->value.len; k++) {
      uint8_t c = (uint8_t)prm->value.p[k];
      if (c == CIMD2_TAB || c == CIMD2_STX || c == CIMD2_ETX)
        return CIMD2_E_INVALID;
    }
    if (cap - at < 5 + prm->value.len)
      return CIMD2_E_SPACE;
    out[at] = (char)('0' + prm->code / 100);
    out[at + 1] = (char)('0' + prm->code / 10 % 10);
    out[at + 2] = (char)('0' + prm->code % 10);
    out[at + 3] = ':';
    memcpy(out + at + 4, prm->value.p, prm->value.len);
    at += 4 + prm->value.len;
    out[at++] = CIMD2_TAB;
  }
  if (cap - at < (p->checksum ? 3u : 1u))
    return CIMD2_E_SPACE;
  if (p->checksum) {
    uint8_t sum = cimd2_checksum(out, at);
    at += hex_encode((char *)out + at, &sum, 1);
  }
  out[at++] = CIMD2_ETX;
  if (at > CIMD2_FRAME_MAX)
    return CIMD2_E_SPACE;
  return (int)at;
}

const char *cimd2_strerror(int err)
{
  switch (err) {
  case CIMD2_E_GARBAGE: return "bytes outside a packet";
  case CIMD2_E_TRUNCATED: return "a packet cut short by the next one's STX";
  case CIMD2_E_TOO_LONG: return "no ETX within the largest packet";
  case CIMD2_E_HEADER: return "a packet that does not start with \"OO:NNN\" and a TAB";
  case CIMD2_E_CHECKSUM: return "a wrong checksum";
  case CIMD2_E_SYNTAX: return "a parameter that is not \"PPP:value\" and a TAB";
  case CIMD2_E_SPACE: return "no room for the packet";
  case CIMD2_E_INVALID: return "a value CIMD2 cannot carry";
  default: return "no error";
  }
}
