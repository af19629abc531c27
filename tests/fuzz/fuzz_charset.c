/* fuzz_charset.c - libFuzzer target for lib/charset.c and the UDH and
 * segment code of lib/sms_text.c. The input is used as UTF-8, GSM septets,
 * UCS2, packed septets, a UDH and a payload in turn; every conversion that
 * succeeds must round-trip, must fit exactly the length it reports (and fail
 * with CHARSET_E_SPACE one octet shorter), and the decoders must agree on
 * what is valid UTF-8.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdlib.h>
#include <string.h>
#include "charset.h"
#include "sms_text.h"

#define MAX_IN 4096

#define CHECK(cond)                                                                                     \
  do {                                                                                                  \
    if (!(cond))                                                                                        \
      abort();                                                                                          \
  } while (0)

static uint8_t buf_a[4 * MAX_IN + 8], buf_b[4 * MAX_IN + 8];
static struct sms_text_segment seg[SMS_TEXT_SEGMENTS_MAX];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Input as UTF-8: all decoders agree on validity; successes round-trip. */
static void fuzz_from_utf8(const uint8_t *data, size_t size)
{
  const char *utf8 = (const char *)data;
  char *back = (char *)buf_b;
  int gsm = charset_utf8_to_gsm(buf_a, sizeof buf_a, utf8, size, 0);
  int septets = charset_gsm_septets(utf8, size);
  int replaced = charset_utf8_to_gsm(buf_a, sizeof buf_a, utf8, size, 1);
  /* Strict conversions stop at the first error, which may be an unrepresentable
   * character before a malformed one; replace mode reads the whole input. */
  int valid = replaced != CHARSET_E_INVALID, ucs2, latin1;

  CHECK(gsm == septets);
  CHECK(gsm != CHARSET_E_SPACE);
  if (gsm >= 0) {
    CHECK(replaced == gsm);
    CHECK(charset_gsm_to_utf8(back, sizeof buf_b, buf_a, (size_t)gsm) == (int)size);
    CHECK(memcmp(back, data, size) == 0);
    if (gsm > 0)
      CHECK(charset_utf8_to_gsm(buf_a, (size_t)gsm - 1, utf8, size, 0) == CHARSET_E_SPACE);
  }
  CHECK(valid ? replaced >= 0 : gsm < 0);

  ucs2 = charset_utf8_to_ucs2(buf_a, sizeof buf_a, utf8, size);
  CHECK(valid ? ucs2 >= 0 : ucs2 == CHARSET_E_INVALID);
  if (ucs2 >= 0) {
    CHECK(ucs2 % 2 == 0);
    CHECK(charset_ucs2_to_utf8(back, sizeof buf_b, buf_a, (size_t)ucs2) == (int)size);
    CHECK(memcmp(back, data, size) == 0);
    if (ucs2 > 0)
      CHECK(charset_utf8_to_ucs2(buf_a, (size_t)ucs2 - 1, utf8, size) == CHARSET_E_SPACE);
  }

  latin1 = charset_utf8_to_latin1(buf_a, sizeof buf_a, utf8, size, 0);
  CHECK(latin1 == CHARSET_E_INVALID || latin1 == CHARSET_E_UNREPRESENTABLE || latin1 >= 0);
  CHECK(valid || latin1 < 0);
  if (latin1 >= 0) {
    CHECK(charset_latin1_to_utf8(back, sizeof buf_b, buf_a, (size_t)latin1) == (int)size);
    CHECK(memcmp(back, data, size) == 0);
  }
  CHECK((charset_utf8_to_latin1(buf_a, sizeof buf_a, utf8, size, 1) >= 0) == valid);
}

/* Input as unpacked septets: back to GSM they come out normalised the way
 * 03.38 reads them (escape + unknown code = that basic character, escape +
 * escape and a trailing escape = space). */
static void fuzz_from_gsm(const uint8_t *data, size_t size)
{
  char *utf8 = (char *)buf_a;
  int n = charset_gsm_to_utf8(utf8, sizeof buf_a, data, size);
  size_t o = 0;

  for (size_t i = 0; i < size; i++)
    if (data[i] > 0x7F) {
      CHECK(n == CHARSET_E_INVALID);
      return;
    }
  CHECK(n >= 0 && (size_t)n <= 3 * size);
  if (n > 0)
    CHECK(charset_gsm_to_utf8(utf8, (size_t)n - 1, data, size) == CHARSET_E_SPACE);
  CHECK(charset_utf8_to_gsm(buf_b, sizeof buf_b, utf8, (size_t)n, 0) >= 0);
  /* Build the normalised form in buf_a after the UTF-8, and compare. */
  uint8_t *want = buf_a + n;
  for (size_t i = 0; i < size; i++) {
    if (data[i] != 0x1B) {
      want[o++] = data[i];
    } else if (i + 1 == size || data[i + 1] == 0x1B) {
      want[o++] = 0x20;
      i++;
    } else {
      uint8_t code = data[++i];
      int ext = code == 0x0A || code == 0x14 || code == 0x28 || code == 0x29 || code == 0x2F
                || code == 0x3C || code == 0x3D || code == 0x3E || code == 0x40 || code == 0x65;
      if (ext)
        want[o++] = 0x1B;
      want[o++] = code;
    }
  }
  CHECK(charset_utf8_to_gsm(buf_b, sizeof buf_b, utf8, (size_t)n, 0) == (int)o);
  CHECK(memcmp(buf_b, want, o) == 0);
}

/* Input as UCS2: valid UTF-16 comes back unchanged. */
static void fuzz_from_ucs2(const uint8_t *data, size_t size)
{
  char *utf8 = (char *)buf_a;
  int n = charset_ucs2_to_utf8(utf8, sizeof buf_a, data, size);

  if (n < 0) {
    CHECK(n == CHARSET_E_INVALID);
    return;
  }
  CHECK(size % 2 == 0);
  if (n > 0)
    CHECK(charset_ucs2_to_utf8(utf8, (size_t)n - 1, data, size) == CHARSET_E_SPACE);
  CHECK(charset_utf8_to_ucs2(buf_b, sizeof buf_b, utf8, (size_t)n) == (int)size);
  CHECK(memcmp(buf_b, data, size) == 0);
}

/* Input as septets to pack, and as packed octets to unpack. */
static void fuzz_pack(const uint8_t *data, size_t size)
{
  unsigned fill = size ? data[0] % 7 : 0;
  size_t count = size ? (size_t)data[0] * 4 : 0;
  int packed, n;

  for (size_t i = 0; i < size; i++)
    buf_b[i] = data[i] & 0x7F;
  packed = charset_gsm_pack(buf_a, sizeof buf_a, buf_b, size, fill);
  CHECK(packed == (size ? (int)((size * 7 + fill + 7) / 8) : 0));
  if (packed > 0)
    CHECK(charset_gsm_pack(buf_a, (size_t)packed - 1, buf_b, size, fill) == CHARSET_E_SPACE);
  n = charset_gsm_unpack(buf_b + size, sizeof buf_b - size, buf_a, (size_t)packed, size, fill);
  CHECK(n == (int)size);
  CHECK(memcmp(buf_b + size, buf_b, size) == 0);

  /* Arbitrary octets: either enough for count septets or CHARSET_E_INVALID. */
  n = charset_gsm_unpack(buf_b, sizeof buf_b, data, size, count, fill);
  if (count == 0 || (count * 7 + fill + 7) / 8 <= size)
    CHECK(n == (int)count);
  else
    CHECK(n == CHARSET_E_INVALID);
}

/* Input as a UDH, then as a payload to split and reassemble. */
static void fuzz_udh_and_split(const uint8_t *data, size_t size)
{
  struct sms_text_concat c, again;
  struct sms_text_payload p;
  struct sms_text_reasm *r;
  int udh_len = sms_text_udh_parse(data, size, &c), n, count;
  size_t out_len = 0, off = 0;

  CHECK(udh_len == SMS_TEXT_E_INVALID || (udh_len >= 1 && (size_t)udh_len <= size));
  if (udh_len > 0 && c.total) {
    CHECK(c.seq >= 1 && c.seq <= c.total);
    n = sms_text_udh_build(buf_a, sizeof buf_a, &c, NULL, 0);
    CHECK(n > 0 && sms_text_udh_parse(buf_a, (size_t)n, &again) == n);
    CHECK(again.ref_size == c.ref_size && again.ref == c.ref && again.total == c.total && again.seq == c.seq);
  }
  if (size < 2)
    return;

  /* data[0] picks the coding, the reference size and whether data[1] starts
   * a UDH of the caller's; the rest is the payload. */
  p.coding = (enum sms_text_coding[]){ SMS_TEXT_GSM7, SMS_TEXT_8BIT, SMS_TEXT_UCS2 }[data[0] % 3];
  udh_len = data[0] & 0x80 ? sms_text_udh_parse(data + 1, size - 1, &again) : 0;
  p.udh = udh_len > 0 ? data + 1 : NULL;
  p.udh_len = udh_len > 0 ? (size_t)udh_len : 0;
  p.data = data + 1 + p.udh_len;
  p.len = size - 1 - p.udh_len;
  enum sms_text_ref ref_size = data[0] & 0x40 ? SMS_TEXT_REF16 : SMS_TEXT_REF8;
  count = sms_text_segment_count(&p, ref_size);
  n = sms_text_split(seg, SMS_TEXT_SEGMENTS_MAX, &p, ref_size, data[1]);
  CHECK(n == count);
  if (n < 0)
    return;
  for (int k = 0; k < n; k++) {
    size_t octets = SMS_TEXT_UD_MAX - seg[k].udh_len;
    size_t room = p.coding == SMS_TEXT_GSM7   ? octets * 8 / 7
                  : p.coding == SMS_TEXT_UCS2 ? octets / 2 * 2
                                              : octets;
    /* Full to the brim, but for a pair that moved on whole. */
    CHECK(seg[k].len <= room);
    if (k < n - 1)
      CHECK(seg[k].len + (p.coding == SMS_TEXT_GSM7 ? 1 : p.coding == SMS_TEXT_UCS2 ? 2 : 0) >= room);
    CHECK(memcmp(seg[k].data, p.data + off, seg[k].len) == 0);
    off += seg[k].len;
    if (n == 1)
      break;
    /* A part never ends on the first half of a pair. */
    if (k < n - 1 && p.coding == SMS_TEXT_UCS2)
      CHECK(!(seg[k].data[seg[k].len - 2] >= 0xD8 && seg[k].data[seg[k].len - 2] <= 0xDB
              && seg[k + 1].data[0] >= 0xDC && seg[k + 1].data[0] <= 0xDF));
    if (k < n - 1 && p.coding == SMS_TEXT_GSM7) {
      size_t i = 0;
      while (i + 1 < seg[k].len)
        i += seg[k].data[i] == 0x1B ? 2 : 1;
      CHECK(i == seg[k].len || seg[k].data[i] != 0x1B);
    }
    CHECK(sms_text_udh_parse(seg[k].udh, seg[k].udh_len, &c) == (int)seg[k].udh_len);
    CHECK(c.total == n && c.seq == k + 1 && c.ref == data[1] && c.ref_size == ref_size);
    /* The caller's IEs follow the concatenation IE unchanged. */
    if (p.udh_len)
      CHECK(memcmp(seg[k].udh + seg[k].udh_len - (p.udh_len - 1), p.udh + 1, p.udh_len - 1) == 0);
  }
  CHECK(off == p.len);
  if (n == 1)
    return;
  r = sms_text_reasm_create(SMS_TEXT_SEGMENTS_MAX, 10);
  CHECK(r != NULL);
  for (int k = n - 1; k >= 0; k--) {
    CHECK(sms_text_udh_parse(seg[k].udh, seg[k].udh_len, &c) > 0);
    CHECK(sms_text_reasm_add(r, "fuzz", &c, seg[k].data, seg[k].len, 0, buf_a, sizeof buf_a, &out_len)
          == (k == 0));
  }
  CHECK(out_len == p.len && memcmp(buf_a, p.data, p.len) == 0);
  sms_text_reasm_destroy(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size > MAX_IN)
    return 0;
  fuzz_from_utf8(data, size);
  fuzz_from_gsm(data, size);
  fuzz_from_ucs2(data, size);
  fuzz_pack(data, size);
  fuzz_udh_and_split(data, size);
  return 0;
}
