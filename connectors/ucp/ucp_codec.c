/* ucp_codec.c - UCP/EMI frame splitter, decoder and encoder, and the field encodings.
 *
 * Layouts and per-field syntax come from ucp_fields.def; decode and encode
 * run the same checks (field_finish, the per-op check_* functions), so
 * whatever one accepts the other writes back unchanged.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include "ucp_codec.h"
#include "charset.h"
#include "hexutil.h"
#include "scts.h"

/* ---- character classes ---- */

enum { C_DIGIT = 1, C_HEX = 2, C_TEXT = 4 };

/* TEXT excludes '/' (the separator) and control characters (STX and ETX
 * among them, which would break framing). */
#define CLS(c) ((((c) >= '0' && (c) <= '9') ? C_DIGIT | C_HEX : 0) |                             \
                ((((c) >= 'A' && (c) <= 'F') || ((c) >= 'a' && (c) <= 'f')) ? C_HEX : 0) |      \
                (((c) >= 0x20 && (c) != '/') ? C_TEXT : 0))
#define CLS4(c) CLS(c), CLS((c) + 1), CLS((c) + 2), CLS((c) + 3)
#define CLS16(c) CLS4(c), CLS4((c) + 4), CLS4((c) + 8), CLS4((c) + 12)
#define CLS64(c) CLS16(c), CLS16((c) + 16), CLS16((c) + 32), CLS16((c) + 48)
static const uint8_t cls[256] = { CLS64(0), CLS64(64), CLS64(128), CLS64(192) };

static inline int is_digit(uint8_t c)
{
  return cls[c] & C_DIGIT;
}

/* Skips hex digits at q, eight at a time, as long as eight bytes remain
 * before lim; the caller's byte loop finds the exact end. (The long fields -
 * AMsg, TMsg - are hex; this is most of a 51's decode time.) */
static inline const char *skip_hex8(const char *q, const char *lim)
{
  const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
  while (lim - q >= 8) {
    uint64_t x, y, dig, let;
    memcpy(&x, q, 8);
    y = x | 0x20 * ones; /* folds A-F onto a-f */
    /* Per byte b below 0x80 (these sums never carry into the next byte): the
     * high bit of b + (0x80 - lo) says b >= lo, that of b + (0x7F - hi) says
     * b > hi. A byte of 0x80 or more fails whatever carry it gets: its first
     * sum keeps the high bit only where its second one does too. */
    dig = (x + (0x80 - '0') * ones) & ~(x + (0x7F - '9') * ones);
    let = (y + (0x80 - 'a') * ones) & ~(y + (0x7F - 'f') * ones);
    if (((dig | let) & high) != high)
      break;
    q += 8;
  }
  return q;
}

/* Value of the two hex digits at p, or -1. */
static int hex_octet(const char *p)
{
  int hi = hex_digit((uint8_t)p[0]), lo = hex_digit((uint8_t)p[1]);
  return hi < 0 || lo < 0 ? -1 : hi << 4 | lo;
}

static int all_digits(struct ucp_slice s)
{
  for (size_t i = 0; i < s.len; i++)
    if (!is_digit((uint8_t)s.p[i]))
      return 0;
  return 1;
}

/* ---- field tables ---- */

/* ADDR and XADDR: an address of digits (XADDR: or hex, see OTOA), which may
 * start with '+' (international). */
enum kind { K_TEXT, K_NUM, K_ADDR, K_INT, K_HEX, K_XDIG, K_XADDR };
#define MASK_TEXT C_TEXT
#define MASK_NUM C_DIGIT
#define MASK_ADDR C_DIGIT
#define MASK_XADDR C_HEX
#define MASK_INT C_DIGIT
#define MASK_HEX C_HEX
#define MASK_XDIG C_HEX

struct field_desc {
  uint8_t kind;
  uint8_t mask;  /* class every character must have */
  uint16_t min, max;
  int16_t voff;  /* INT fields: offset of the int in the op's vals struct; else -1 */
};

#define VOFF_INT(S, m) (int16_t)offsetof(S, m)
#define VOFF_NUM(S, m) -1
#define VOFF_ADDR(S, m) -1
#define VOFF_XADDR(S, m) -1
#define VOFF_TEXT(S, m) -1
#define VOFF_HEX(S, m) -1
#define VOFF_XDIG(S, m) -1
#define DESC(S, m, kind, min, max) { K_##kind, MASK_##kind, min, max, VOFF_##kind(S, m) },
#define NAME(ID, m, name, kind, min, max) name,

#define D01(ID, m, name, kind, min, max) DESC(struct ucp_vals_01, m, kind, min, max)
#define D31(ID, m, name, kind, min, max) DESC(struct ucp_vals_31, m, kind, min, max)
#define D5X(ID, m, name, kind, min, max) DESC(struct ucp_vals_5x, m, kind, min, max)
#define D60(ID, m, name, kind, min, max) DESC(struct ucp_vals_60, m, kind, min, max)
#define D61(ID, m, name, kind, min, max) DESC(struct ucp_vals_61, m, kind, min, max)
#define DR(ID, m, name, kind, min, max) DESC(struct ucp_result, m, kind, min, max)

#define UCP_F01 D01
static const struct field_desc desc_01[] = {
#include "ucp_fields.def"
};
#define UCP_F31 D31
static const struct field_desc desc_31[] = {
#include "ucp_fields.def"
};
#define UCP_F5X D5X
static const struct field_desc desc_5x[] = {
#include "ucp_fields.def"
};
#define UCP_F60 D60
static const struct field_desc desc_60[] = {
#include "ucp_fields.def"
};
#define UCP_F61 D61
static const struct field_desc desc_61[] = {
#include "ucp_fields.def"
};
#define UCP_FRA DR
static const struct field_desc desc_ra[] = {
#include "ucp_fields.def"
};
#define UCP_FR5A DR
static const struct field_desc desc_r5a[] = {
#include "ucp_fields.def"
};
#define UCP_FRN DR
static const struct field_desc desc_rn[] = {
#include "ucp_fields.def"
};

#define UCP_F01 NAME
static const char *const names_01[] = {
#include "ucp_fields.def"
};
#define UCP_F31 NAME
static const char *const names_31[] = {
#include "ucp_fields.def"
};
#define UCP_F5X NAME
static const char *const names_5x[] = {
#include "ucp_fields.def"
};
#define UCP_F60 NAME
static const char *const names_60[] = {
#include "ucp_fields.def"
};
#define UCP_F61 NAME
static const char *const names_61[] = {
#include "ucp_fields.def"
};

/* Result field indices. */
#define ENUM_RA(ID, m, name, kind, min, max) RA_##ID,
#define ENUM_R5A(ID, m, name, kind, min, max) R5A_##ID,
#define ENUM_RN(ID, m, name, kind, min, max) RN_##ID,
#define UCP_FRA ENUM_RA
enum {
#include "ucp_fields.def"
  RA_N
};
#define UCP_FR5A ENUM_R5A
enum {
#include "ucp_fields.def"
  R5A_N
};
#define UCP_FRN ENUM_RN
enum {
#include "ucp_fields.def"
  RN_N
};
#define R_MAXFIELDS 3
_Static_assert(RA_N <= R_MAXFIELDS && R5A_N <= R_MAXFIELDS && RN_N <= R_MAXFIELDS, "R_MAXFIELDS");

/* The header's union trick: f[i] and the i-th named member must coincide. */
#define ALIAS(S, P, ID, m)                                                                        \
  _Static_assert(offsetof(S, m) == offsetof(S, f) + P##ID * sizeof(struct ucp_slice), #S " " #m);
#define A01(ID, m, name, kind, min, max) ALIAS(struct ucp_op01, UCP_01_, ID, m)
#define A31(ID, m, name, kind, min, max) ALIAS(struct ucp_op31, UCP_31_, ID, m)
#define A5X(ID, m, name, kind, min, max) ALIAS(struct ucp_op5x, UCP_5X_, ID, m)
#define A60(ID, m, name, kind, min, max) ALIAS(struct ucp_op60, UCP_60_, ID, m)
#define A61(ID, m, name, kind, min, max) ALIAS(struct ucp_op61, UCP_61_, ID, m)
#define UCP_F01 A01
#define UCP_F31 A31
#define UCP_F5X A5X
#define UCP_F60 A60
#define UCP_F61 A61
#include "ucp_fields.def"

/* The field limits keep LEN within its five digits: the 5x list is the
 * longest, so the encoder need not check. */
#define MAXLEN(ID, m, name, kind, min, max) + (max) + 1
#define UCP_F5X MAXLEN
_Static_assert(14 + 2
#include "ucp_fields.def"
               <= 99999, "a 5x frame's LEN could exceed 5 digits");

/* ---- per-operation rules, shared by decode and encode ---- */

/* Msg after MT (and NB for MT 4). tmsg_ok: MT 4 exists for this op. */
static int check_msg(int mt, int nb, struct ucp_slice msg, int tmsg_ok)
{
  if (mt < 0)
    return msg.len ? UCP_E_SYNTAX : 0;
  switch (mt) {
  case 2: /* NMsg */
    return msg.len <= 160 && all_digits(msg) ? 0 : UCP_E_SYNTAX;
  case 3: /* AMsg */
    return msg.len <= 640 && msg.len % 2 == 0 ? 0 : UCP_E_SYNTAX;
  case 4: /* TMsg: NB, when given, counts the bits of exactly these octets */
    if (!tmsg_ok)
      return UCP_E_MT;
    if (msg.len % 2)
      return UCP_E_SYNTAX;
    if (nb >= 0 && (size_t)(nb + 7) / 8 != msg.len / 2)
      return UCP_E_SYNTAX;
    return 0;
  default:
    return UCP_E_MT;
  }
}

static int check_01(const struct ucp_slice *f, void *vals)
{
  const struct ucp_vals_01 *v = vals;
  return check_msg(v->mt, -1, f[UCP_01_MSG], 0);
}

static int check_5x(const struct ucp_slice *f, void *vals)
{
  struct ucp_vals_5x *v = vals;
  struct ucp_slice oadc = f[UCP_5X_OADC], xser = f[UCP_5X_XSER];
  struct ucp_xser_block b;
  int r;

  if (v->otoa == 5039) {
    if (oadc.len % 2 || (oadc.len && oadc.p[0] == '+'))
      return UCP_E_SYNTAX;
  } else if (oadc.len && oadc.p[0] == '+') {
    if (oadc.len > 17 || !all_digits((struct ucp_slice){ oadc.p + 1, oadc.len - 1 }))
      return UCP_E_SYNTAX;
  } else if (oadc.len > 16 || !all_digits(oadc)) {
    return UCP_E_SYNTAX;
  }
  r = check_msg(v->mt, v->nb, f[UCP_5X_MSG], 1);
  if (r)
    return r;
  v->udh = (struct ucp_slice){ NULL, 0 };
  v->xdcs = -1;
  while ((r = ucp_xser_next(&xser, &b)) > 0) {
    if (b.type == 0x01 && !v->udh.len) {
      v->udh = b.data;
    } else if (b.type == 0x02 && v->xdcs < 0) {
      if (b.data.len != 2)
        return UCP_E_SYNTAX;
      v->xdcs = hex_octet(b.data.p);
    }
  }
  return r;
}

struct layout {
  const struct field_desc *desc;
  const char *const *names;
  unsigned n;
  int (*check)(const struct ucp_slice *f, void *vals); /* NULL: fields are independent */
};

static const struct layout lay_01 = { desc_01, names_01, UCP_01_NFIELDS, check_01 };
static const struct layout lay_31 = { desc_31, names_31, UCP_31_NFIELDS, NULL };
static const struct layout lay_5x = { desc_5x, names_5x, UCP_5X_NFIELDS, check_5x };
static const struct layout lay_60 = { desc_60, names_60, UCP_60_NFIELDS, NULL };
static const struct layout lay_61 = { desc_61, names_61, UCP_61_NFIELDS, NULL };
static const struct layout lay_ra = { desc_ra, NULL, RA_N, NULL };
static const struct layout lay_r5a = { desc_r5a, NULL, R5A_N, NULL };
static const struct layout lay_rn = { desc_rn, NULL, RN_N, NULL };

static int is_5x(int ot)
{
  return ot == 51 || ot == 52 || ot == 53;
}

static const struct layout *op_layout(int ot)
{
  switch (ot) {
  case 1: return &lay_01;
  case 31: return &lay_31;
  case 51: case 52: case 53: return &lay_5x;
  case 60: return &lay_60;
  case 61: return &lay_61;
  default: return NULL;
  }
}

/* The slices and values of operation m (m->ot supported). */
static void op_bind(struct ucp_msg *m, struct ucp_slice **f, void **vals)
{
  switch (m->ot) {
  case 1: *f = m->o01.f; *vals = &m->o01.v; break;
  case 31: *f = m->o31.f; *vals = &m->o31.v; break;
  case 60: *f = m->o60.f; *vals = &m->o60.v; break;
  case 61: *f = m->o61.f; *vals = &m->o61.v; break;
  default: *f = m->o5x.f; *vals = &m->o5x.v; break;
  }
}

static inline bool plus_allowed(const struct field_desc *d)
{
  return d->kind == K_ADDR || d->kind == K_XADDR;
}

/* Length bounds, hex evenness and the INT value of field s, once its
 * characters are known to be of the field's class. */
static inline int field_finish(const struct field_desc *d, struct ucp_slice s, char *vals)
{
  if (plus_allowed(d) && s.len && s.p[0] == '+') {
    if (s.len == 1)
      return UCP_E_SYNTAX;
    s.p++;
    s.len--;
  }
  if (s.len && (s.len < d->min || s.len > d->max || (d->kind == K_HEX && s.len % 2)))
    return UCP_E_SYNTAX;
  if (d->voff >= 0) {
    int v = s.len ? 0 : -1;
    for (size_t i = 0; i < s.len; i++)
      v = v * 10 + (s.p[i] - '0');
    memcpy(vals + d->voff, &v, sizeof v);
  }
  return 0;
}

/* Splits n fields off the body at *pp. The body's last byte, end[-1], is a
 * '/', which no class contains: it stops every scan, so no bound check is
 * needed inside a field. end[0..3) are the checksum and ETX, so reads up to
 * end + 3 stay inside the frame. */
static int decode_fields(const char **pp, const char *end, const struct layout *l,
                         struct ucp_slice *f, char *vals)
{
  const char *p = *pp, *lim = end + 3; /* the checksum and ETX follow end */
  for (unsigned i = 0; i < l->n; i++) {
    const struct field_desc *d = &l->desc[i];
    const char *q = p;
    int r;
    if (p >= end)
      return UCP_E_SYNTAX; /* too few fields */
    if (plus_allowed(d) && *q == '+')
      q++;
    if (d->mask == C_HEX)
      q = skip_hex8(q, lim);
    while (cls[(uint8_t)*q] & d->mask)
      q++;
    if (*q != '/')
      return UCP_E_SYNTAX;
    f[i] = (struct ucp_slice){ p, (size_t)(q - p) };
    r = field_finish(d, f[i], vals);
    if (r)
      return r;
    p = q + 1;
  }
  *pp = p;
  return 0;
}

/* ---- checksum ---- */

/* Sum of the bytes mod 256. Eight bytes at a time into four 16-bit lanes,
 * flushed before a lane can overflow (128 words x 2 x 255 < 65536). */
static unsigned checksum(const uint8_t *p, size_t n)
{
  const uint64_t lo = 0x00FF00FF00FF00FFull;
  unsigned sum = 0;
  while (n >= 8) {
    size_t words = n / 8 < 128 ? n / 8 : 128;
    uint64_t acc = 0;
    for (size_t i = 0; i < words; i++, p += 8) {
      uint64_t w;
      memcpy(&w, p, 8);
      acc += (w & lo) + ((w >> 8) & lo);
    }
    sum += (unsigned)(acc & 0xFFFF) + (unsigned)(acc >> 16 & 0xFFFF) +
           (unsigned)(acc >> 32 & 0xFFFF) + (unsigned)(acc >> 48);
    n -= words * 8;
  }
  while (n--)
    sum += *p++;
  return sum & 0xFF;
}

/* ---- splitting ---- */

/* Whether h[0..n) (n <= 14, the bytes after STX) is a prefix of "TT/LLLLL/X/OT/". */
static int header_ok(const uint8_t *h, size_t n)
{
  static const char pat[14] = "99/99999/X/99/";
  for (size_t i = 0; i < n; i++) {
    uint8_t c = h[i];
    switch (pat[i]) {
    case '9': if (!is_digit(c)) return 0; break;
    case 'X': if (c != 'O' && c != 'R') return 0; break;
    default: if (c != '/') return 0; break;
    }
  }
  return 1;
}

/* Offset of the first STX in buf[from..len), or len. */
static size_t next_stx(const uint8_t *buf, size_t from, size_t len)
{
  const uint8_t *s = from < len ? memchr(buf + from, UCP_STX, len - from) : NULL;
  return s ? (size_t)(s - buf) : len;
}

int ucp_split(const uint8_t *buf, size_t len, size_t max_frame, size_t *n)
{
  const uint8_t *etx, *stx;
  size_t lim;

  if (max_frame < UCP_FRAME_MIN)
    max_frame = UCP_FRAME_MIN;
  if (max_frame > UCP_FRAME_MAX)
    max_frame = UCP_FRAME_MAX;
  lim = len < max_frame ? len : max_frame;

  if (len == 0)
    return UCP_SPLIT_MORE;
  if (buf[0] != UCP_STX) {
    *n = next_stx(buf, 0, len);
    return UCP_E_GARBAGE;
  }
  /* A bad header is caught as soon as its bytes arrive (an early ETX too,
   * which is no digit or '/'), not after max_frame bytes. */
  if (!header_ok(buf + 1, len - 1 < 14 ? len - 1 : 14)) {
    *n = next_stx(buf, 1, len);
    return UCP_E_HEADER;
  }
  etx = memchr(buf + 1, UCP_ETX, lim - 1);
  stx = memchr(buf + 1, UCP_STX, (etx ? (size_t)(etx - buf) : lim) - 1);
  if (stx) {
    *n = (size_t)(stx - buf);
    return UCP_E_TRUNCATED;
  }
  if (etx) {
    *n = (size_t)(etx - buf) + 1;
    return UCP_SPLIT_FRAME;
  }
  if (len >= max_frame) {
    *n = next_stx(buf, lim, len);
    return UCP_E_TOO_LONG;
  }
  return UCP_SPLIT_MORE;
}

/* ---- decoding ---- */

static int decode_result(const char *p, const char *end, struct ucp_msg *m)
{
  const struct layout *l;
  struct ucp_slice f[R_MAXFIELDS];
  struct ucp_result *r = &m->r;
  int err;

  if (*p == 'A')
    l = is_5x(m->ot) ? &lay_r5a : &lay_ra;
  else if (*p == 'N')
    l = &lay_rn;
  else
    return UCP_E_SYNTAX;
  err = decode_fields(&p, end, l, f, (char *)r);
  if (err)
    return err;
  r->ack = l != &lay_rn;
  if (r->ack)
    r->ec = -1;
  else if (r->ec < 0)
    return UCP_E_SYNTAX; /* a NACK without its EC */
  r->mvp = l == &lay_r5a ? f[R5A_MVP] : (struct ucp_slice){ NULL, 0 };
  r->sm = f[l->n - 1];
  for (; p < end; p++)
    m->extra += *p == '/';
  return 0;
}

int ucp_decode(const uint8_t *frame, size_t len, struct ucp_msg *m)
{
  const char *body, *end;
  const struct layout *l;
  struct ucp_slice *f;
  void *vals;
  int err, ck_hi, ck_lo;
  size_t flen = 0;

  /* Header pieces one by one, each at its fixed place, so that a NACK can
   * echo TRN and OT even when another piece is broken. */
  m->trn = -1;
  m->o_r = 0;
  m->ot = -1;
  m->extra = 0;
  if (len >= 4 && is_digit(frame[1]) && is_digit(frame[2]) && frame[3] == '/')
    m->trn = (frame[1] - '0') * 10 + (frame[2] - '0');
  if (len >= 12 && frame[9] == '/' && (frame[10] == 'O' || frame[10] == 'R') && frame[11] == '/')
    m->o_r = (char)frame[10];
  if (len >= 15 && is_digit(frame[12]) && is_digit(frame[13]) && frame[14] == '/')
    m->ot = (frame[12] - '0') * 10 + (frame[13] - '0');
  if (len < UCP_FRAME_MIN || frame[0] != UCP_STX || frame[len - 1] != UCP_ETX ||
      !header_ok(frame + 1, 14))
    return UCP_E_SYNTAX;
  for (size_t i = 4; i < 9; i++)
    flen = flen * 10 + (frame[i] - '0');
  if (flen != len - 2)
    return UCP_E_SYNTAX;

  ck_hi = hex_digit(frame[len - 3]);
  ck_lo = hex_digit(frame[len - 2]);
  if (ck_hi < 0 || ck_lo < 0)
    return UCP_E_SYNTAX;
  if (checksum(frame + 1, len - 4) != (unsigned)(ck_hi << 4 | ck_lo))
    return UCP_E_CHECKSUM;

  l = op_layout(m->ot);
  if (!l)
    return UCP_E_OT;
  /* Every field ends with '/', so the byte before the checksum is one. */
  body = (const char *)frame + 15;
  end = (const char *)frame + len - 3;
  if (body >= end || end[-1] != '/')
    return UCP_E_SYNTAX;
  if (m->o_r == 'R')
    return decode_result(body, end, m);

  op_bind(m, &f, &vals);
  err = decode_fields(&body, end, l, f, vals);
  if (err)
    return err;
  for (; body < end; body++)
    m->extra += *body == '/';
  return l->check ? l->check(f, vals) : 0;
}

/* ---- encoding ---- */

void ucp_msg_init(struct ucp_msg *m, int trn, char o_r, int ot)
{
  const struct layout *l = op_layout(ot);
  struct ucp_slice *f;
  void *vals;

  m->trn = trn;
  m->o_r = o_r;
  m->ot = ot;
  m->extra = 0;
  if (o_r == 'R') {
    m->r = (struct ucp_result){ 1, -1, { NULL, 0 }, { NULL, 0 } };
    return;
  }
  if (!l)
    return;
  op_bind(m, &f, &vals);
  /* field_finish on empty slices clears the slices and sets each value to -1. */
  for (unsigned i = 0; i < l->n; i++) {
    f[i] = (struct ucp_slice){ NULL, 0 };
    field_finish(&l->desc[i], f[i], vals);
  }
  if (l == &lay_5x) {
    m->o5x.v.udh = (struct ucp_slice){ NULL, 0 };
    m->o5x.v.xdcs = -1;
  }
}

static char *put_digits(char *p, unsigned v, unsigned width)
{
  for (unsigned i = width; i-- > 0; v /= 10)
    p[i] = (char)('0' + v % 10);
  return p + width;
}

int ucp_encode(const struct ucp_msg *m, uint8_t *dst, size_t cap)
{
  const struct layout *l = op_layout(m->ot);
  const struct ucp_slice *f;
  struct ucp_slice rf[R_MAXFIELDS];
  union {
    struct ucp_vals_01 v01;
    struct ucp_vals_31 v31;
    struct ucp_vals_5x v5x;
    struct ucp_vals_60 v60;
    struct ucp_vals_61 v61;
    struct ucp_result r;
  } vals; /* values the rules need; the caller's m->...v are not trusted */
  char ec[2];
  size_t flen = 14 + 2;
  char *p = (char *)dst;

  if (!l || m->trn < 0 || m->trn > 99 || (m->o_r != 'O' && m->o_r != 'R'))
    return UCP_E_INVALID;
  if (m->o_r == 'O') {
    struct ucp_slice *fw;
    void *unused;
    op_bind((struct ucp_msg *)m, &fw, &unused); /* only read through fw */
    f = fw;
  } else {
    const struct ucp_result *r = &m->r;
    rf[0] = r->ack ? UCP_STR("A") : UCP_STR("N");
    if (!r->ack) {
      if (r->ec < 0 || r->ec > 99)
        return UCP_E_INVALID;
      put_digits(ec, (unsigned)r->ec, 2);
      rf[1] = (struct ucp_slice){ ec, 2 };
      l = &lay_rn;
    } else if (is_5x(m->ot)) {
      rf[1] = r->mvp;
      l = &lay_r5a;
    } else {
      l = &lay_ra;
    }
    rf[l->n - 1] = r->sm;
    f = rf;
  }

  for (unsigned i = 0; i < l->n; i++) {
    const struct field_desc *d = &l->desc[i];
    if (f[i].len) { /* an empty slice may have a NULL p */
      const char *q = f[i].p, *lim = f[i].p + f[i].len;
      if (plus_allowed(d) && *q == '+')
        q++;
      if (d->mask == C_HEX)
        q = skip_hex8(q, lim);
      for (; q < lim; q++)
        if (!(cls[(uint8_t)*q] & d->mask))
          return UCP_E_INVALID;
    }
    if (field_finish(d, f[i], (char *)&vals))
      return UCP_E_INVALID;
    flen += f[i].len + 1;
  }
  if (l->check && l->check(f, &vals))
    return UCP_E_INVALID;
  if (flen + 2 > cap)
    return UCP_E_SPACE;

  *p++ = UCP_STX;
  p = put_digits(p, (unsigned)m->trn, 2);
  *p++ = '/';
  p = put_digits(p, (unsigned)flen, 5);
  *p++ = '/';
  *p++ = m->o_r;
  *p++ = '/';
  p = put_digits(p, (unsigned)m->ot, 2);
  *p++ = '/';
  for (unsigned i = 0; i < l->n; i++) {
    if (f[i].len)
      memcpy(p, f[i].p, f[i].len);
    p += f[i].len;
    *p++ = '/';
  }
  uint8_t ck = (uint8_t)checksum(dst + 1, (size_t)(p - (char *)dst) - 1);
  p += hex_encode(p, &ck, 1);
  *p = UCP_ETX;
  return (int)(flen + 2);
}

/* ---- errors and names ---- */

int ucp_error_ec(int err)
{
  switch (err) {
  case UCP_E_CHECKSUM: return 1;
  case UCP_E_SYNTAX: return 2;
  case UCP_E_OT: return 3;
  case UCP_E_MT: return 23;
  default: return -1;
  }
}

const char *ucp_strerror(int err)
{
  switch (err) {
  case 0: return "no error";
  case UCP_E_GARBAGE: return "bytes before STX";
  case UCP_E_TRUNCATED: return "frame cut short by a new STX";
  case UCP_E_TOO_LONG: return "no ETX within the maximum frame length";
  case UCP_E_HEADER: return "malformed frame header";
  case UCP_E_CHECKSUM: return "checksum mismatch";
  case UCP_E_SYNTAX: return "syntax error";
  case UCP_E_OT: return "operation type not supported";
  case UCP_E_MT: return "message type not supported";
  case UCP_E_SPACE: return "destination buffer too small";
  case UCP_E_INVALID: return "value not representable in UCP";
  default: return "unknown error";
  }
}

const char *ucp_ec_text(int ec)
{
  static const char *const text[] = {
    [1] = "Checksum error",
    [2] = "Syntax error",
    [3] = "Operation not supported by system",
    [4] = "Operation not allowed",
    [5] = "Call barring active",
    [6] = "AdC invalid",
    [7] = "Authentication failure",
    [8] = "Legitimisation code for all calls, failure",
    [9] = "GA not valid",
    [10] = "Repetition not allowed",
    [11] = "Legitimisation code for repetition, failure",
    [12] = "Priority call not allowed",
    [13] = "Legitimisation code for priority call, failure",
    [14] = "Urgent message not allowed",
    [15] = "Legitimisation code for urgent message, failure",
    [16] = "Reverse charging not allowed",
    [17] = "Legitimisation code for reverse charging, failure",
    [18] = "Deferred delivery not allowed",
    [19] = "New AC not valid",
    [20] = "New legitimisation code not valid",
    [21] = "Standard text not valid",
    [22] = "Time period not valid",
    [23] = "Message type not supported by system",
    [24] = "Message too long",
    [25] = "Requested standard text not valid",
    [26] = "Message type not valid for the pager type",
    [27] = "Message not found in SMSC",
    [30] = "Subscriber hang-up",
    [31] = "Fax group not supported",
    [32] = "Fax message type not supported",
    [33] = "Address already in list (60-series)",
    [34] = "Address not in list (60-series)",
    [35] = "List full, cannot add address (60-series)",
    [36] = "RPID already in use",
    [37] = "Delivery in progress",
    [38] = "Message forwarded",
  };
  if (ec < 0 || (size_t)ec >= sizeof text / sizeof text[0] || !text[ec])
    return "Unknown error";
  return text[ec];
}

const char *ucp_field_name(int ot, unsigned i)
{
  const struct layout *l = op_layout(ot);
  return l && i < l->n ? l->names[i] : NULL;
}

unsigned ucp_field_count(int ot)
{
  const struct layout *l = op_layout(ot);
  return l ? l->n : 0;
}

/* ---- IRA-hex and text ---- */

int ucp_hex_decode(uint8_t *dst, size_t cap, struct ucp_slice hex)
{
  if (hex.len % 2)
    return UCP_E_INVALID;
  if (hex.len / 2 > cap)
    return UCP_E_SPACE;
  return hex_decode(dst, hex.p, hex.len) < 0 ? UCP_E_INVALID : (int)(hex.len / 2);
}

int ucp_hex_encode(char *dst, size_t cap, const uint8_t *src, size_t len)
{
  if (len > cap / 2)
    return UCP_E_SPACE;
  return (int)hex_encode(dst, src, len);
}

/* AMsg holds at most 640 hex digits. */
enum { AMSG_MAX_OCTETS = 320 };

int ucp_amsg_from_utf8(char *dst, size_t cap, const char *utf8, size_t len, int replace)
{
  uint8_t gsm[AMSG_MAX_OCTETS];
  int n = charset_utf8_to_gsm(gsm, sizeof gsm, utf8, len, replace);
  if (n < 0)
    return UCP_E_INVALID;
  return ucp_hex_encode(dst, cap, gsm, (size_t)n);
}

/* A charset_* result as a UCP result. */
static int from_charset(int r)
{
  return r >= 0 ? r : r == CHARSET_E_SPACE ? UCP_E_SPACE : UCP_E_INVALID;
}

int ucp_amsg_to_utf8(char *dst, size_t cap, struct ucp_slice amsg)
{
  uint8_t gsm[AMSG_MAX_OCTETS];
  int n = ucp_hex_decode(gsm, sizeof gsm, amsg);
  if (n < 0)
    return UCP_E_INVALID;
  return from_charset(charset_gsm_to_utf8(dst, cap, gsm, (size_t)n));
}

/* Alphanumeric OAdC: 11 septets at most, packed into 10 octets. */
enum { OADC_MAX_SEPTETS = 11, OADC_MAX_PACKED = 10 };

int ucp_oadc_alnum_encode(char *dst, size_t cap, const char *utf8, size_t len)
{
  uint8_t gsm[OADC_MAX_SEPTETS], packed[1 + OADC_MAX_PACKED];
  int n = charset_utf8_to_gsm(gsm, sizeof gsm, utf8, len, 0), np;
  if (n <= 0)
    return UCP_E_INVALID;
  np = charset_gsm_pack(packed + 1, OADC_MAX_PACKED, gsm, (size_t)n, 0);
  if (np < 0)
    return UCP_E_INVALID;
  packed[0] = (uint8_t)((n * 7 + 3) / 4); /* useful semi-octets */
  return ucp_hex_encode(dst, cap, packed, (size_t)np + 1);
}

int ucp_oadc_alnum_decode(char *dst, size_t cap, struct ucp_slice oadc)
{
  uint8_t packed[1 + OADC_MAX_PACKED], gsm[OADC_MAX_SEPTETS];
  int n = ucp_hex_decode(packed, sizeof packed, oadc);
  size_t septets;
  if (n < 1)
    return UCP_E_INVALID;
  septets = (size_t)packed[0] * 4 / 7;
  if (septets > OADC_MAX_SEPTETS)
    return UCP_E_INVALID;
  n = charset_gsm_unpack(gsm, sizeof gsm, packed + 1, (size_t)n - 1, septets, 0);
  if (n < 0)
    return UCP_E_INVALID;
  return from_charset(charset_gsm_to_utf8(dst, cap, gsm, (size_t)n));
}

/* TMsg holds at most 1403 hex digits, so 701 octets. */
enum { TMSG_MAX_OCTETS = 701 };

int ucp_tmsg_encode(char *tmsg, size_t cap, char nb[4], const uint8_t *src, size_t len)
{
  int n;
  if (len > TMSG_MAX_OCTETS)
    return UCP_E_INVALID;
  n = ucp_hex_encode(tmsg, cap, src, len);
  if (n >= 0)
    put_digits(nb, (unsigned)len * 8, 4);
  return n;
}

/* ---- XSer ---- */

int ucp_xser_next(struct ucp_slice *xser, struct ucp_xser_block *b)
{
  int tt, ll;
  size_t n;
  if (!xser->len)
    return 0;
  if (xser->len < 4)
    return UCP_E_SYNTAX;
  tt = hex_octet(xser->p);
  ll = hex_octet(xser->p + 2);
  if (tt < 0 || ll < 0)
    return UCP_E_SYNTAX;
  n = 4 + 2 * (size_t)ll;
  if (n > xser->len)
    return UCP_E_SYNTAX;
  for (size_t i = 4; i < n; i++)
    if (!(cls[(uint8_t)xser->p[i]] & C_HEX))
      return UCP_E_SYNTAX;
  b->type = (unsigned)tt;
  b->data = (struct ucp_slice){ xser->p + 4, n - 4 };
  xser->p += n;
  xser->len -= n;
  return 1;
}

int ucp_xser_put(char *dst, size_t cap, unsigned type, const uint8_t *data, size_t len)
{
  uint8_t tl[2] = { (uint8_t)type, (uint8_t)len };
  if (type > 255 || len > 255)
    return UCP_E_INVALID;
  if (cap < 4 || ucp_hex_encode(dst + 4, cap - 4, data, len) < 0)
    return UCP_E_SPACE;
  hex_encode(dst, tl, 2);
  return 4 + 2 * (int)len;
}

/* ---- notifications ---- */

int ucp_notify_wanted(int nrq, int nt, int dst)
{
  static const int bit[3] = { 1, 4, 2 }; /* by Dst: delivered DN, buffered BN, not delivered ND */
  if (nrq != 1 || dst < 0 || dst > 2)
    return 0;
  return ((nt > 0 ? nt : 3) & bit[dst]) != 0;
}

/* Appends s[0..n) at *pos if it fits. */
static int append(char *dst, size_t cap, size_t *pos, const char *s, size_t n)
{
  if (n > cap - *pos)
    return UCP_E_SPACE;
  if (n)
    memcpy(dst + *pos, s, n);
  *pos += n;
  return 0;
}

static int scts_ok(struct ucp_slice scts)
{
  return scts.len == 12 && all_digits(scts);
}

int ucp_53_text(char *dst, size_t cap, struct ucp_slice adc, struct ucp_slice scts, int dst_status)
{
  static const char *const outcome[3] = {
    " has been delivered", " has been buffered", " could not be delivered",
  };
  char id[12];
  size_t pos = 0;
  if (dst_status < 0 || dst_status > 2 || !scts_ok(scts))
    return UCP_E_INVALID;
  /* The identification is the SCTS reordered to YYMMDDhhmmss. */
  memcpy(id, scts.p + 4, 2);
  memcpy(id + 2, scts.p + 2, 2);
  memcpy(id + 4, scts.p, 2);
  memcpy(id + 6, scts.p + 6, 6);
  if (append(dst, cap, &pos, "Message for ", 12) ||
      append(dst, cap, &pos, adc.p, adc.len) ||
      append(dst, cap, &pos, ", with identification ", 22) ||
      append(dst, cap, &pos, id, 12) ||
      append(dst, cap, &pos, outcome[dst_status], strlen(outcome[dst_status])))
    return UCP_E_SPACE;
  return (int)pos;
}

int ucp_sm_adc_scts(char *dst, size_t cap, struct ucp_slice adc, struct ucp_slice scts)
{
  size_t pos = 0;
  if (append(dst, cap, &pos, adc.p, adc.len) || append(dst, cap, &pos, ":", 1) ||
      append(dst, cap, &pos, scts.p, scts.len))
    return UCP_E_SPACE;
  return (int)pos;
}

int ucp_sm_adc_scts_parse(struct ucp_slice sm, struct ucp_slice *adc, struct ucp_slice *scts)
{
  size_t i = sm.len;
  while (i > 0 && sm.p[i - 1] != ':')
    i--;
  if (i == 0)
    return UCP_E_SYNTAX;
  *adc = (struct ucp_slice){ sm.p, i - 1 };
  *scts = (struct ucp_slice){ sm.p + i, sm.len - i };
  return scts_ok(*scts) ? 0 : UCP_E_SYNTAX;
}

/* ---- time stamps ---- */

int ucp_time_parse(struct ucp_slice s, time_t *t)
{
  return scts_parse(s.p, s.len, SCTS_DDMMYY, t) == 0 ? 0 : UCP_E_SYNTAX;
}

int ucp_time_format(char *dst, size_t digits, time_t t)
{
  return scts_format(dst, digits, SCTS_DDMMYY, t) < 0 ? UCP_E_INVALID : (int)digits;
}
