/* sms_text.c - SMS payload codings, segment counts, concatenation with a UDH,
 * UDH parsing and reassembly of concatenated messages (3GPP 23.040 9.2.3.24).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "charset.h"
#include "sms_text.h"

#define IEI_CONCAT8 0x00
#define IEI_CONCAT16 0x08
#define GSM_ESC 0x1B

int sms_text_choose_coding(const char *utf8, size_t len)
{
  int n = charset_gsm_septets(utf8, len);
  if (n >= 0)
    return SMS_TEXT_GSM7;
  return n == CHARSET_E_UNREPRESENTABLE ? SMS_TEXT_UCS2 : SMS_TEXT_E_INVALID;
}

unsigned sms_text_fill_bits(size_t udh_len)
{
  return (unsigned)((7 - udh_len * 8 % 7) % 7);
}

/* Octets of a concatenation IE (IEI, IEDL, data) for each reference size. */
static size_t concat_ie_len(enum sms_text_ref ref_size)
{
  return ref_size == SMS_TEXT_REF8 ? 5 : 6;
}

/* Walks the IEs of the UDH at ud. Returns the UDH length or SMS_TEXT_E_INVALID;
 * *concat gets the last usable concatenation IE and *concat_ies how many
 * concatenation IEs there are, usable or not. */
static int udh_scan(const uint8_t *ud, size_t len, struct sms_text_concat *concat, int *concat_ies)
{
  size_t end, i = 1;

  memset(concat, 0, sizeof *concat);
  *concat_ies = 0;
  if (len < 1 || (size_t)ud[0] + 1 > len)
    return SMS_TEXT_E_INVALID;
  end = (size_t)ud[0] + 1;
  while (i < end) {
    const uint8_t *ie;
    size_t iedl;
    if (end - i < 2 || end - i - 2 < ud[i + 1])
      return SMS_TEXT_E_INVALID;
    ie = ud + i + 2;
    iedl = ud[i + 1];
    if (ud[i] == IEI_CONCAT8 || ud[i] == IEI_CONCAT16) {
      bool ref16 = ud[i] == IEI_CONCAT16;
      if (iedl != (ref16 ? 4u : 3u))
        return SMS_TEXT_E_INVALID;
      (*concat_ies)++;
      /* 23.040: a total of 0, or a part number of 0 or above the total, voids the IE. */
      uint8_t total = ie[iedl - 2], seq = ie[iedl - 1];
      if (total != 0 && seq != 0 && seq <= total) {
        concat->ref_size = ref16 ? SMS_TEXT_REF16 : SMS_TEXT_REF8;
        concat->ref = ref16 ? (uint16_t)(ie[0] << 8 | ie[1]) : ie[0];
        concat->total = total;
        concat->seq = seq;
      }
    }
    i += 2 + iedl;
  }
  return (int)end;
}

int sms_text_udh_parse(const uint8_t *ud, size_t len, struct sms_text_concat *concat)
{
  int concat_ies;
  return udh_scan(ud, len, concat, &concat_ies);
}

static bool concat_valid(const struct sms_text_concat *c)
{
  if (c->ref_size != SMS_TEXT_REF8 && c->ref_size != SMS_TEXT_REF16)
    return false;
  if (c->ref_size == SMS_TEXT_REF8 && c->ref > 0xFF)
    return false;
  return c->total != 0 && c->seq != 0 && c->seq <= c->total;
}

int sms_text_udh_build(uint8_t *dst, size_t dst_cap, const struct sms_text_concat *concat,
                       const uint8_t *ies, size_t ies_len)
{
  size_t ie_len, n;

  if (!concat_valid(concat))
    return SMS_TEXT_E_INVALID;
  ie_len = concat_ie_len(concat->ref_size);
  if (ies_len > SMS_TEXT_UD_MAX - 1 - ie_len)
    return SMS_TEXT_E_INVALID;
  n = 1 + ie_len + ies_len;
  if (n > dst_cap)
    return SMS_TEXT_E_SPACE;
  dst[0] = (uint8_t)(n - 1);
  if (concat->ref_size == SMS_TEXT_REF8) {
    dst[1] = IEI_CONCAT8;
    dst[2] = 3;
    dst[3] = (uint8_t)concat->ref;
  } else {
    dst[1] = IEI_CONCAT16;
    dst[2] = 4;
    dst[3] = (uint8_t)(concat->ref >> 8);
    dst[4] = (uint8_t)concat->ref;
  }
  dst[ie_len - 1] = concat->total;
  dst[ie_len] = concat->seq;
  if (ies_len)
    memcpy(dst + 1 + ie_len, ies, ies_len);
  return (int)n;
}

/* Payload units (septets or octets) that fit beside a UDH of udh_len octets.
 * GSM-7 text starts on a septet boundary after the UDH, hence the rounding. */
static size_t segment_room(enum sms_text_coding coding, size_t udh_len)
{
  size_t octets = udh_len < SMS_TEXT_UD_MAX ? SMS_TEXT_UD_MAX - udh_len : 0;
  if (coding == SMS_TEXT_GSM7)
    return octets * 8 / 7;
  return coding == SMS_TEXT_UCS2 ? octets & ~(size_t)1 : octets;
}

/* The smallest room a segment needs: an escape pair, a surrogate pair, an octet. */
static size_t segment_min(enum sms_text_coding coding)
{
  return coding == SMS_TEXT_GSM7 ? 2 : coding == SMS_TEXT_UCS2 ? 4 : 1;
}

/* Length of the segment starting at d (len units left, len > room): the
 * longest prefix of at most room units not ending inside an escape pair
 * (0x1B pairs with whatever follows it, 0x1B included) or a surrogate pair. */
static size_t segment_cut(enum sms_text_coding coding, const uint8_t *d, size_t len, size_t room)
{
  size_t i = 0;

  switch (coding) {
  case SMS_TEXT_GSM7:
    while (i < room) {
      size_t step = d[i] == GSM_ESC && i + 1 < len ? 2 : 1;
      if (i + step > room)
        break;
      i += step;
    }
    return i;
  case SMS_TEXT_UCS2:
    /* room and len are even, so the unit after the cut exists. Only a real
     * pair moves; a lone surrogate in malformed UTF-16 is cut like any unit. */
    return d[room - 2] >= 0xD8 && d[room - 2] <= 0xDB && d[room] >= 0xDC && d[room] <= 0xDF ? room - 2 : room;
  default:
    return room;
  }
}

/* The one splitting loop: with out NULL it only counts the segments, which
 * is sms_text_segment_count. */
int sms_text_split(struct sms_text_segment *out, size_t out_cap, const struct sms_text_payload *p,
                   enum sms_text_ref ref_size, uint16_t ref)
{
  size_t own = 0, room, off = 0;
  int n = 0;

  if (p->coding != SMS_TEXT_GSM7 && p->coding != SMS_TEXT_8BIT && p->coding != SMS_TEXT_UCS2)
    return SMS_TEXT_E_INVALID;
  if ((ref_size != SMS_TEXT_REF8 && ref_size != SMS_TEXT_REF16) || (ref_size == SMS_TEXT_REF8 && ref > 0xFF))
    return SMS_TEXT_E_INVALID;
  if (p->coding == SMS_TEXT_UCS2 && p->len % 2)
    return SMS_TEXT_E_INVALID;
  if (p->udh_len) {
    struct sms_text_concat c;
    int concat_ies;
    if (p->udh_len > SMS_TEXT_UD_MAX || udh_scan(p->udh, p->udh_len, &c, &concat_ies) != (int)p->udh_len
        || concat_ies)
      return SMS_TEXT_E_INVALID;
    own = p->udh_len;
  }

  room = segment_room(p->coding, own);
  if (room < segment_min(p->coding))
    return SMS_TEXT_E_INVALID;
  if (p->len <= room) {
    if (out) {
      if (out_cap < 1)
        return SMS_TEXT_E_SPACE;
      if (own)
        memcpy(out[0].udh, p->udh, own);
      out[0].udh_len = own;
      if (p->len)
        memcpy(out[0].data, p->data, p->len);
      out[0].len = p->len;
    }
    return 1;
  }

  /* The caller's UDHL octet, if any, is shared with the concatenation IE. */
  room = segment_room(p->coding, (own ? own : 1) + concat_ie_len(ref_size));
  if (room < segment_min(p->coding))
    return SMS_TEXT_E_INVALID;
  while (off < p->len) {
    size_t left = p->len - off, cut = left <= room ? left : segment_cut(p->coding, p->data + off, left, room);
    if (n == SMS_TEXT_SEGMENTS_MAX)
      return SMS_TEXT_E_TOO_LONG;
    if (out) {
      if ((size_t)n == out_cap)
        return SMS_TEXT_E_SPACE;
      memcpy(out[n].data, p->data + off, cut);
      out[n].len = cut;
    }
    off += cut;
    n++;
  }
  /* The UDHs carry the total, known only now. */
  for (int k = 0; out && k < n; k++) {
    struct sms_text_concat c = { .ref_size = ref_size, .ref = ref, .total = (uint8_t)n,
                                 .seq = (uint8_t)(k + 1) };
    int udh_len = sms_text_udh_build(out[k].udh, sizeof out[k].udh, &c, own ? p->udh + 1 : NULL,
                                     own ? own - 1 : 0);
    if (udh_len < 0)
      return udh_len;
    out[k].udh_len = (size_t)udh_len;
  }
  return n;
}

int sms_text_segment_count(const struct sms_text_payload *p, enum sms_text_ref ref_size)
{
  return sms_text_split(NULL, 0, p, ref_size, 0);
}

/* ---- reassembly ----
 * Parts and messages live in two arrays allocated at create, linked by index.
 * A message waiting for parts keeps at least one of them, so there are never
 * more messages than parts and the part pool alone decides when it is full.
 * The last part of a message is never stored: it is copied straight to the
 * caller's buffer with the others. */

#define NIL UINT32_MAX

struct reasm_part {
  uint32_t next; /* next part of the message by seq, or next free part */
  uint8_t seq;
  uint8_t len;
  uint8_t data[SMS_TEXT_SEPTETS_MAX];
};

struct reasm_msg {
  char originator[SMS_TEXT_ADDR_MAX + 1];
  struct sms_text_concat key; /* seq unused */
  uint64_t first_seen;
  size_t bytes;   /* sum of the stored parts' lengths */
  uint32_t parts; /* stored parts, by ascending seq */
  uint32_t chain; /* next message in the hash bucket, or next free message */
  size_t bucket;
  uint8_t have;   /* stored parts */
  bool used;
};

struct sms_text_reasm {
  uint64_t timeout;
  size_t capacity;
  struct reasm_msg *msgs;
  struct reasm_part *parts;
  uint32_t *buckets;
  size_t mask; /* bucket count - 1, a power of two */
  uint32_t free_msg, free_part;
};

struct sms_text_reasm *sms_text_reasm_create(size_t capacity, uint64_t timeout)
{
  struct sms_text_reasm *r = NULL;
  size_t nb = 1;

  /* Indexes are 32-bit, and the bucket count must not overflow a 32-bit size_t. */
  if (capacity == 0 || capacity > NIL / 2)
    return NULL;
  while (nb < capacity)
    nb <<= 1;
  r = calloc(1, sizeof *r);
  if (!r)
    goto fail;
  r->timeout = timeout;
  r->capacity = capacity;
  r->mask = nb - 1;
  r->msgs = calloc(capacity, sizeof *r->msgs);
  r->parts = calloc(capacity, sizeof *r->parts);
  r->buckets = calloc(nb, sizeof *r->buckets);
  if (!r->msgs || !r->parts || !r->buckets)
    goto fail;
  for (size_t b = 0; b < nb; b++)
    r->buckets[b] = NIL;
  for (size_t k = 0; k < capacity; k++) {
    r->msgs[k].chain = k + 1 < capacity ? (uint32_t)(k + 1) : NIL;
    r->parts[k].next = k + 1 < capacity ? (uint32_t)(k + 1) : NIL;
  }
  r->free_msg = 0;
  r->free_part = 0;
  return r;

fail:
  sms_text_reasm_destroy(r);
  return NULL;
}

void sms_text_reasm_destroy(struct sms_text_reasm *r)
{
  if (!r)
    return;
  free(r->msgs);
  free(r->parts);
  free(r->buckets);
  free(r);
}

/* FNV-1a over the whole key. */
static size_t reasm_bucket(const struct sms_text_reasm *r, const char *originator, size_t olen,
                           const struct sms_text_concat *c)
{
  const uint8_t tail[4] = { (uint8_t)c->ref_size, (uint8_t)(c->ref >> 8), (uint8_t)c->ref, c->total };
  uint32_t h = 2166136261u;
  for (size_t k = 0; k < olen; k++)
    h = (h ^ (uint8_t)originator[k]) * 16777619u;
  for (size_t k = 0; k < sizeof tail; k++)
    h = (h ^ tail[k]) * 16777619u;
  return h & r->mask;
}

/* Unlinks message m from its bucket and returns it and its parts to the free lists. */
static void reasm_release(struct sms_text_reasm *r, uint32_t m)
{
  struct reasm_msg *msg = &r->msgs[m];
  uint32_t *link = &r->buckets[msg->bucket];

  while (*link != m)
    link = &r->msgs[*link].chain;
  *link = msg->chain;
  for (uint32_t p = msg->parts, next; p != NIL; p = next) {
    next = r->parts[p].next;
    r->parts[p].next = r->free_part;
    r->free_part = p;
  }
  msg->used = false;
  msg->chain = r->free_msg;
  r->free_msg = m;
}

/* Appends the parts from p up to (not including) until to out at o; returns the new o. */
static size_t copy_parts(const struct sms_text_reasm *r, uint32_t p, uint32_t until, uint8_t *out, size_t o)
{
  for (; p != until; p = r->parts[p].next) {
    memcpy(out + o, r->parts[p].data, r->parts[p].len);
    o += r->parts[p].len;
  }
  return o;
}

/* The message with the key of originator and *c in bucket b, or NIL. */
static uint32_t reasm_find(const struct sms_text_reasm *r, size_t b, const char *originator,
                           const struct sms_text_concat *c)
{
  uint32_t m = r->buckets[b];

  for (; m != NIL; m = r->msgs[m].chain) {
    const struct reasm_msg *x = &r->msgs[m];
    if (x->key.ref == c->ref && x->key.total == c->total && x->key.ref_size == c->ref_size
        && strcmp(x->originator, originator) == 0)
      break;
  }
  return m;
}

int sms_text_reasm_add(struct sms_text_reasm *r, const char *originator,
                       const struct sms_text_concat *concat, const uint8_t *data, size_t len,
                       uint64_t now, uint8_t *out, size_t out_cap, size_t *out_len)
{
  size_t olen = strnlen(originator, SMS_TEXT_ADDR_MAX + 1), b;
  struct reasm_msg *msg = NULL;
  uint32_t m, p, *link = NULL; /* link: where the part goes to keep seq order */

  if (olen > SMS_TEXT_ADDR_MAX || len > SMS_TEXT_SEPTETS_MAX || !concat_valid(concat))
    return SMS_TEXT_E_INVALID;
  b = reasm_bucket(r, originator, olen, concat);
  m = reasm_find(r, b, originator, concat);
  if (m != NIL) {
    msg = &r->msgs[m];
    for (link = &msg->parts; *link != NIL && r->parts[*link].seq < concat->seq;)
      link = &r->parts[*link].next;
    if (*link != NIL && r->parts[*link].seq == concat->seq)
      return 0; /* duplicate */
  }

  if ((msg ? msg->have : 0) + 1 == concat->total) {
    size_t need = (msg ? msg->bytes : 0) + len, o;
    uint32_t after = link ? *link : NIL; /* the stored parts that follow this one */
    if (need > out_cap)
      return SMS_TEXT_E_SPACE;
    o = copy_parts(r, msg ? msg->parts : NIL, after, out, 0);
    if (len)
      memcpy(out + o, data, len);
    copy_parts(r, after, NIL, out, o + len);
    if (msg)
      reasm_release(r, m);
    *out_len = need;
    return 1;
  }

  if (r->free_part == NIL)
    return SMS_TEXT_E_FULL;
  if (!msg) {
    /* Never NIL while a part is free: see the note opening this section. */
    m = r->free_msg;
    msg = &r->msgs[m];
    r->free_msg = msg->chain;
    memcpy(msg->originator, originator, olen + 1);
    msg->key = *concat;
    msg->first_seen = now;
    msg->bytes = 0;
    msg->parts = NIL;
    msg->have = 0;
    msg->used = true;
    msg->bucket = b;
    msg->chain = r->buckets[b];
    r->buckets[b] = m;
    link = &msg->parts;
  }
  p = r->free_part;
  r->free_part = r->parts[p].next;
  r->parts[p].seq = concat->seq;
  r->parts[p].len = (uint8_t)len;
  if (len)
    memcpy(r->parts[p].data, data, len);
  r->parts[p].next = *link;
  *link = p;
  msg->have++;
  msg->bytes += len;
  return 0;
}

size_t sms_text_reasm_expire(struct sms_text_reasm *r, uint64_t now)
{
  size_t dropped = 0;

  for (size_t k = 0; k < r->capacity; k++) {
    struct reasm_msg *msg = &r->msgs[k];
    if (msg->used && now > msg->first_seen && now - msg->first_seen > r->timeout) {
      reasm_release(r, (uint32_t)k);
      dropped++;
    }
  }
  return dropped;
}

/* ---- TP-DCS (3GPP 23.038 section 4) ---- */

/* The alphabet a TP-DCS names, as enum sms_text_coding. Compressed text and
 * the reserved alphabet and groups cannot be read as characters: octets. */
uint8_t sms_dcs_coding(uint8_t dcs)
{
  switch (dcs >> 4) {
  case 0x0: case 0x1: case 0x4: case 0x5: /* general data coding, automatic deletion */
    return (dcs & 0x0C) == 0x0C ? SMS_TEXT_8BIT : dcs & 0x0C;
  case 0xC: case 0xD: /* message waiting, discard / store */
    return SMS_TEXT_GSM7;
  case 0xE: /* message waiting, store, UCS2 */
    return SMS_TEXT_UCS2;
  case 0xF: /* data coding / message class */
    return dcs & 0x04 ? SMS_TEXT_8BIT : SMS_TEXT_GSM7;
  default: /* compressed (0x2-, 0x3-, 0x6-, 0x7-), reserved (0x8- to 0xB-) */
    return SMS_TEXT_8BIT;
  }
}

/* The message class a TP-DCS gives, or -1. */
int sms_dcs_class(uint8_t dcs)
{
  if ((dcs & 0x80) == 0)
    return dcs & 0x10 ? dcs & 0x03 : -1;
  return (dcs & 0xF0) == 0xF0 ? dcs & 0x03 : -1;
}

/* dcs made to name coding (the payload's real alphabet), keeping its class:
 * a DCS that disagrees with its payload would garble the message. */
uint8_t sms_dcs_agree(uint8_t coding, uint8_t dcs)
{
  int cls;
  if (sms_dcs_coding(dcs) == coding)
    return dcs;
  cls = sms_dcs_class(dcs);
  return (uint8_t)(cls < 0 ? coding : 0x10 | coding | cls);
}
