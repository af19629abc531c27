/* fuzz_ucp_decode.c - libFuzzer target for ucp_decode() and ucp_encode(). Each
 * frame the splitter finds (and the raw input itself) is decoded; whatever
 * decodes must re-encode, and the re-encoding must decode to the same fields.
 * The field helpers then run on what was decoded. To get past the checksum
 * and LEN gates often enough to reach the field rules, the input is also
 * tried as a frame body with LEN and checksum set right (fixed_up).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdlib.h>
#include <string.h>
#include "ucp_codec.h"

#define CHECK(cond)                                                                                     \
  do {                                                                                                  \
    if (!(cond))                                                                                        \
      abort();                                                                                          \
  } while (0)

static uint8_t out[UCP_FRAME_MAX], fixed[UCP_FRAME_MAX];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same(struct ucp_slice a, struct ucp_slice b)
{
  return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

static int is_5x(int ot)
{
  return ot >= 51 && ot <= 53;
}

static const struct ucp_slice *fields(const struct ucp_msg *m)
{
  switch (m->ot) {
  case 1: return m->o01.f;
  case 31: return m->o31.f;
  case 60: return m->o60.f;
  case 61: return m->o61.f;
  default: return m->o5x.f;
  }
}

/* A time stamp that parses formats back to the same digits. */
static void time_roundtrip(struct ucp_slice s)
{
  char back[12];
  time_t t;
  if (ucp_time_parse(s, &t) == 0)
    CHECK(ucp_time_format(back, s.len, t) == (int)s.len && memcmp(back, s.p, s.len) == 0);
}

/* The decoders of the field encodings must stay in bounds on anything the
 * frame decoder let through. */
static void helpers(const struct ucp_msg *m)
{
  char text[2048];
  uint8_t oct[1024];
  struct ucp_slice x, adc, scts;
  struct ucp_xser_block b;
  if (m->o_r == 'R') {
    if (ucp_sm_adc_scts_parse(m->r.sm, &adc, &scts) == 0)
      time_roundtrip(scts);
    return;
  }
  if (!is_5x(m->ot))
    return;
  if (m->o5x.v.mt == 3)
    CHECK(ucp_amsg_to_utf8(text, sizeof text, m->o5x.msg) != UCP_E_SPACE);
  if (m->o5x.v.mt == 4)
    CHECK(ucp_hex_decode(oct, sizeof oct, m->o5x.msg) == (int)m->o5x.msg.len / 2);
  if (m->o5x.v.otoa == 5039)
    CHECK(ucp_oadc_alnum_decode(text, sizeof text, m->o5x.oadc) != UCP_E_SPACE);
  x = m->o5x.xser;
  while (ucp_xser_next(&x, &b) > 0)
    CHECK(b.data.len % 2 == 0);
  CHECK(x.len == 0);
  time_roundtrip(m->o5x.vp);
  time_roundtrip(m->o5x.scts);
  if (ucp_53_text(text, sizeof text, m->o5x.adc, m->o5x.scts, 0) > 0)
    CHECK(memcmp(text, "Message for ", 12) == 0);
}

static void roundtrip(const uint8_t *frame, size_t len)
{
  struct ucp_msg m, m2;
  int n;
  if (ucp_decode(frame, len, &m) != 0)
    return;
  n = ucp_encode(&m, out, sizeof out);
  CHECK(n > 0 && (size_t)n <= len);
  /* without extra fields the re-encoding is the frame, up to the checksum's case */
  CHECK(m.extra || (size_t)n == len);
  CHECK(ucp_decode(out, (size_t)n, &m2) == 0);
  CHECK(m2.trn == m.trn && m2.o_r == m.o_r && m2.ot == m.ot && m2.extra == 0);
  if (m.o_r == 'R') {
    CHECK(m2.r.ack == m.r.ack && m2.r.ec == m.r.ec);
    CHECK(same(m2.r.mvp, m.r.mvp) && same(m2.r.sm, m.r.sm));
  } else {
    const struct ucp_slice *a = fields(&m), *b = fields(&m2);
    for (unsigned i = 0; i < ucp_field_count(m.ot); i++)
      CHECK(same(a[i], b[i]));
    if (is_5x(m.ot))
      CHECK(m2.o5x.v.mt == m.o5x.v.mt && m2.o5x.v.xdcs == m.o5x.v.xdcs &&
            same(m2.o5x.v.udh, m.o5x.v.udh));
  }
  helpers(&m);
}

/* STX, data with LEN (when it has room for one) and the two checksum digits
 * made right, ETX. */
static size_t fixed_up(const uint8_t *data, size_t size)
{
  static const char hexd[] = "0123456789ABCDEF";
  unsigned sum = 0;
  size_t len = size + 2;
  if (size < 2 || len > sizeof fixed)
    return 0;
  fixed[0] = UCP_STX;
  memcpy(fixed + 1, data, size);
  fixed[len - 1] = UCP_ETX;
  if (size >= 8)
    for (size_t i = 8, v = size; i >= 4; i--, v /= 10)
      fixed[i] = (uint8_t)('0' + v % 10);
  for (size_t i = 1; i < len - 3; i++)
    sum += fixed[i];
  fixed[len - 3] = (uint8_t)hexd[sum >> 4 & 15];
  fixed[len - 2] = (uint8_t)hexd[sum & 15];
  return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  size_t pos = 0, n = fixed_up(data, size);
  if (n)
    roundtrip(fixed, n);
  roundtrip(data, size);
  while (pos < size) {
    int r = ucp_split(data + pos, size - pos, UCP_FRAME_MAX, &n);
    if (r == UCP_SPLIT_MORE)
      break;
    if (r == UCP_SPLIT_FRAME)
      roundtrip(data + pos, n);
    pos += n;
  }
  return 0;
}
