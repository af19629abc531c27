/* test_sms_text.c - codings, segment counts, split with UDH, UDH parsing, reassembly.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>
#include "charset.h"
#include "sms_text.h"
#include "testutil.h"

#define BIG (SMS_TEXT_SEPTETS_MAX * SMS_TEXT_SEGMENTS_MAX + 8)

/* 16-bit application port addressing (WAP push: 2948 -> 9200), a UDH of its own. */
static const uint8_t port_udh[] = { 0x06, 0x05, 0x04, 0x0B, 0x84, 0x23, 0xF0 };

static uint8_t payload[BIG];

/* A payload of len units: a repeating pattern of letters (GSM) or octets. */
static struct sms_text_payload make(enum sms_text_coding coding, size_t len)
{
  struct sms_text_payload p = { .coding = coding, .data = payload, .len = len };
  for (size_t k = 0; k < len; k++)
    payload[k] = coding == SMS_TEXT_UCS2 ? (k % 2 ? (uint8_t)('a' + k / 2 % 26) : 0)
                                         : (uint8_t)('a' + k % 26);
  return p;
}

static int count(enum sms_text_coding coding, size_t len, enum sms_text_ref ref)
{
  struct sms_text_payload p = make(coding, len);
  return sms_text_segment_count(&p, ref);
}

static void test_choose_coding(void)
{
  CU_ASSERT_EQUAL(sms_text_choose_coding("", 0), SMS_TEXT_GSM7);
  CU_ASSERT_EQUAL(sms_text_choose_coding("Price: 5€ {ok}", strlen("Price: 5€ {ok}")), SMS_TEXT_GSM7);
  CU_ASSERT_EQUAL(sms_text_choose_coding("ΔΩ ßü", strlen("ΔΩ ßü")), SMS_TEXT_GSM7);
  CU_ASSERT_EQUAL(sms_text_choose_coding("hi \xF0\x9F\x98\x80", 7), SMS_TEXT_UCS2);
  CU_ASSERT_EQUAL(sms_text_choose_coding("δ", strlen("δ")), SMS_TEXT_UCS2); /* lower-case Greek */
  CU_ASSERT_EQUAL(sms_text_choose_coding("`", 1), SMS_TEXT_UCS2);
  CU_ASSERT_EQUAL(sms_text_choose_coding("a\xC0\x80", 3), SMS_TEXT_E_INVALID);
}

static void test_fill_bits(void)
{
  CU_ASSERT_EQUAL(sms_text_fill_bits(0), 0);
  CU_ASSERT_EQUAL(sms_text_fill_bits(1), 6);
  CU_ASSERT_EQUAL(sms_text_fill_bits(5), 2);
  CU_ASSERT_EQUAL(sms_text_fill_bits(6), 1);
  CU_ASSERT_EQUAL(sms_text_fill_bits(7), 0);
  CU_ASSERT_EQUAL(sms_text_fill_bits(12), 2); /* 96 bits, next septet boundary at 98 */
}

static void test_count_gsm(void)
{
  CU_ASSERT_EQUAL(count(SMS_TEXT_GSM7, 0, SMS_TEXT_REF8), 1);
  CU_ASSERT_EQUAL(count(SMS_TEXT_GSM7, 160, SMS_TEXT_REF8), 1);
  CU_ASSERT_EQUAL(count(SMS_TEXT_GSM7, 161, SMS_TEXT_REF8), 2);
  CU_ASSERT_EQUAL(count(SMS_TEXT_GSM7, 153 * 2, SMS_TEXT_REF8), 2);
  CU_ASSERT_EQUAL(count(SMS_TEXT_GSM7, 153 * 2 + 1, SMS_TEXT_REF8), 3);
  CU_ASSERT_EQUAL(count(SMS_TEXT_GSM7, 160, SMS_TEXT_REF16), 1);
  CU_ASSERT_EQUAL(count(SMS_TEXT_GSM7, 152 * 2, SMS_TEXT_REF16), 2);
  CU_ASSERT_EQUAL(count(SMS_TEXT_GSM7, 152 * 2 + 1, SMS_TEXT_REF16), 3);
  CU_ASSERT_EQUAL(count(SMS_TEXT_GSM7, 153 * 255, SMS_TEXT_REF8), 255);
  CU_ASSERT_EQUAL(count(SMS_TEXT_GSM7, 153 * 255 + 1, SMS_TEXT_REF8), SMS_TEXT_E_TOO_LONG);
}

static void test_count_8bit(void)
{
  CU_ASSERT_EQUAL(count(SMS_TEXT_8BIT, 140, SMS_TEXT_REF8), 1);
  CU_ASSERT_EQUAL(count(SMS_TEXT_8BIT, 141, SMS_TEXT_REF8), 2);
  CU_ASSERT_EQUAL(count(SMS_TEXT_8BIT, 134 * 2, SMS_TEXT_REF8), 2);
  CU_ASSERT_EQUAL(count(SMS_TEXT_8BIT, 134 * 2 + 1, SMS_TEXT_REF8), 3);
  CU_ASSERT_EQUAL(count(SMS_TEXT_8BIT, 133 * 2, SMS_TEXT_REF16), 2);
  CU_ASSERT_EQUAL(count(SMS_TEXT_8BIT, 133 * 2 + 1, SMS_TEXT_REF16), 3);
}

static void test_count_ucs2(void)
{
  CU_ASSERT_EQUAL(count(SMS_TEXT_UCS2, 2 * 70, SMS_TEXT_REF8), 1);
  CU_ASSERT_EQUAL(count(SMS_TEXT_UCS2, 2 * 71, SMS_TEXT_REF8), 2);
  CU_ASSERT_EQUAL(count(SMS_TEXT_UCS2, 2 * 67 * 2, SMS_TEXT_REF8), 2);
  CU_ASSERT_EQUAL(count(SMS_TEXT_UCS2, 2 * (67 * 2 + 1), SMS_TEXT_REF8), 3);
  CU_ASSERT_EQUAL(count(SMS_TEXT_UCS2, 2 * 66 * 2, SMS_TEXT_REF16), 2);
  CU_ASSERT_EQUAL(count(SMS_TEXT_UCS2, 2 * (66 * 2 + 1), SMS_TEXT_REF16), 3);
  CU_ASSERT_EQUAL(count(SMS_TEXT_UCS2, 2 * 70 + 1, SMS_TEXT_REF8), SMS_TEXT_E_INVALID);
}

static void test_count_escape_boundary(void)
{
  struct sms_text_payload p = make(SMS_TEXT_GSM7, 160);
  /* A pair ending on septet 160 still fits one SMS... */
  payload[158] = 0x1B, payload[159] = 0x65;
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, SMS_TEXT_REF8), 1);
  /* ...a pair across 153/154 moves whole into part 2, which then overflows. */
  p = make(SMS_TEXT_GSM7, 153 * 2);
  payload[152] = 0x1B, payload[153] = 0x65;
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, SMS_TEXT_REF8), 3);
  /* 0x1B 0x1B is one pair, so the 0x1B at 152 here ends it and nothing moves. */
  payload[151] = 0x1B, payload[152] = 0x1B, payload[153] = 'x';
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, SMS_TEXT_REF8), 2);
  /* A lone escape at the very end is a unit of its own. */
  p = make(SMS_TEXT_GSM7, 160);
  payload[159] = 0x1B;
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, SMS_TEXT_REF8), 1);
}

static void test_count_surrogate_boundary(void)
{
  struct sms_text_payload p = make(SMS_TEXT_UCS2, 2 * 67 * 2);
  /* U+1F600 as units 66/67: across the first cut, so it moves to part 2. */
  payload[132] = 0xD8, payload[133] = 0x3D, payload[134] = 0xDE, payload[135] = 0x00;
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, SMS_TEXT_REF8), 3);
  /* As units 65/66 it ends part 1 exactly. */
  p = make(SMS_TEXT_UCS2, 2 * 67 * 2);
  payload[130] = 0xD8, payload[131] = 0x3D, payload[132] = 0xDE, payload[133] = 0x00;
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, SMS_TEXT_REF8), 2);
  /* A lone high surrogate (malformed UTF-16) is no pair to keep together. */
  p = make(SMS_TEXT_UCS2, 2 * 67 * 2);
  payload[132] = 0xD8, payload[133] = 0x3D;
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, SMS_TEXT_REF8), 2);
}

static void test_count_with_own_udh(void)
{
  struct sms_text_payload p = make(SMS_TEXT_GSM7, 152);
  p.udh = port_udh;
  p.udh_len = sizeof port_udh;
  /* 7 octets of UDH leave 152 septets; with the 8-bit concat IE, 12 leave 146. */
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, SMS_TEXT_REF8), 1);
  p.len = 153;
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, SMS_TEXT_REF8), 2);
  p.len = 146 * 2;
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, SMS_TEXT_REF8), 2);
  p.len = 146 * 2 + 1;
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, SMS_TEXT_REF8), 3);
  p.coding = SMS_TEXT_8BIT;
  p.len = 133;
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, SMS_TEXT_REF8), 1);
  p.len = 128 * 2;
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, SMS_TEXT_REF8), 2);
  p.len = 128 * 2 + 1;
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, SMS_TEXT_REF8), 3);
}

static void test_count_invalid(void)
{
  static const uint8_t with_concat[] = { 0x05, 0x00, 0x03, 0x01, 0x02, 0x01 };
  static const uint8_t overrun[] = { 0x04, 0x05, 0x04, 0x0B, 0x84 };
  static const uint8_t udhl_short[] = { 0x02, 0x05, 0x04, 0x0B, 0x84 };
  uint8_t huge[SMS_TEXT_UD_MAX + 1] = { 0 };
  struct sms_text_payload p = make(SMS_TEXT_GSM7, 10);

  p.coding = (enum sms_text_coding)3;
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, SMS_TEXT_REF8), SMS_TEXT_E_INVALID);
  p.coding = SMS_TEXT_GSM7;
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, (enum sms_text_ref)7), SMS_TEXT_E_INVALID);
  p.udh = with_concat, p.udh_len = sizeof with_concat;
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, SMS_TEXT_REF8), SMS_TEXT_E_INVALID);
  p.udh = overrun, p.udh_len = sizeof overrun;
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, SMS_TEXT_REF8), SMS_TEXT_E_INVALID);
  p.udh = udhl_short, p.udh_len = sizeof udhl_short; /* UDHL disagrees with udh_len */
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, SMS_TEXT_REF8), SMS_TEXT_E_INVALID);
  /* A UDH of 139 octets (one IE of 136) leaves 1 septet: not even an escape pair. */
  huge[0] = 138, huge[1] = 0x70, huge[2] = 136;
  p.udh = huge, p.udh_len = 139;
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, SMS_TEXT_REF8), SMS_TEXT_E_INVALID);
  p.coding = SMS_TEXT_8BIT, p.len = 1; /* but 1 octet is room enough for 8-bit */
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, SMS_TEXT_REF8), 1);
  p.len = 2; /* and needing concatenation, there is no room left at all */
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, SMS_TEXT_REF8), SMS_TEXT_E_INVALID);
  huge[0] = 139, huge[2] = 137;
  p.udh_len = 140;
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, SMS_TEXT_REF8), SMS_TEXT_E_INVALID);
  huge[0] = 140, huge[2] = 138;
  p.udh_len = 141;
  CU_ASSERT_EQUAL(sms_text_segment_count(&p, SMS_TEXT_REF8), SMS_TEXT_E_INVALID);
}

static void test_split_gsm(void)
{
  static struct sms_text_segment seg[3];
  struct sms_text_payload p = make(SMS_TEXT_GSM7, 161);
  const uint8_t udh1[] = { 0x05, 0x00, 0x03, 0x42, 0x02, 0x01 };
  const uint8_t udh2[] = { 0x06, 0x08, 0x04, 0x12, 0x34, 0x02, 0x02 };

  CU_ASSERT_EQUAL_FATAL(sms_text_split(seg, 3, &p, SMS_TEXT_REF8, 0x42), 2);
  CU_ASSERT_EQUAL(seg[0].udh_len, 6);
  CU_ASSERT_EQUAL(memcmp(seg[0].udh, udh1, 6), 0);
  CU_ASSERT_EQUAL(seg[0].len, 153);
  CU_ASSERT_EQUAL(seg[1].len, 8);
  CU_ASSERT_EQUAL(seg[1].udh[5], 2);
  CU_ASSERT_EQUAL(memcmp(seg[1].data, payload + 153, 8), 0);

  CU_ASSERT_EQUAL_FATAL(sms_text_split(seg, 3, &p, SMS_TEXT_REF16, 0x1234), 2);
  CU_ASSERT_EQUAL(seg[1].udh_len, 7);
  CU_ASSERT_EQUAL(memcmp(seg[1].udh, udh2, 7), 0);
  CU_ASSERT_EQUAL(seg[0].len, 152);
  CU_ASSERT_EQUAL(seg[1].len, 9);

  /* One segment: no UDH at all. */
  p.len = 160;
  CU_ASSERT_EQUAL_FATAL(sms_text_split(seg, 1, &p, SMS_TEXT_REF8, 1), 1);
  CU_ASSERT_EQUAL(seg[0].udh_len, 0);
  CU_ASSERT_EQUAL(seg[0].len, 160);
  CU_ASSERT_EQUAL(memcmp(seg[0].data, payload, 160), 0);
}

static void test_split_boundaries(void)
{
  static struct sms_text_segment seg[3];
  struct sms_text_payload p = make(SMS_TEXT_GSM7, 153 * 2);

  payload[152] = 0x1B, payload[153] = 0x65;
  CU_ASSERT_EQUAL_FATAL(sms_text_split(seg, 3, &p, SMS_TEXT_REF8, 9), 3);
  CU_ASSERT_EQUAL(seg[0].len, 152);
  CU_ASSERT_EQUAL(seg[1].len, 153);
  CU_ASSERT_EQUAL(seg[2].len, 1);
  CU_ASSERT_EQUAL(seg[1].data[0], 0x1B);
  CU_ASSERT_EQUAL(seg[1].data[1], 0x65);
  CU_ASSERT_EQUAL(seg[2].udh[4], 3);

  p = make(SMS_TEXT_UCS2, 2 * 66 * 2);
  payload[130] = 0xDB, payload[131] = 0xFF, payload[132] = 0xDF, payload[133] = 0xFF; /* U+10FFFF */
  CU_ASSERT_EQUAL_FATAL(sms_text_split(seg, 3, &p, SMS_TEXT_REF16, 9), 3);
  CU_ASSERT_EQUAL(seg[0].len, 130);
  CU_ASSERT_EQUAL(seg[1].len, 132);
  CU_ASSERT_EQUAL(seg[2].len, 2);
  CU_ASSERT_EQUAL(seg[1].data[0], 0xDB);
}

static void test_split_own_udh(void)
{
  static struct sms_text_segment seg[2];
  struct sms_text_payload p = make(SMS_TEXT_8BIT, 140);
  const uint8_t want[] = { 0x0B, 0x00, 0x03, 0x07, 0x02, 0x01, 0x05, 0x04, 0x0B, 0x84, 0x23, 0xF0 };

  p.udh = port_udh;
  p.udh_len = sizeof port_udh;
  CU_ASSERT_EQUAL_FATAL(sms_text_split(seg, 2, &p, SMS_TEXT_REF8, 7), 2);
  CU_ASSERT_EQUAL(seg[0].udh_len, sizeof want);
  CU_ASSERT_EQUAL(memcmp(seg[0].udh, want, sizeof want), 0);
  CU_ASSERT_EQUAL(seg[0].len, 128);
  CU_ASSERT_EQUAL(seg[1].len, 12);
  CU_ASSERT_EQUAL(seg[1].udh[5], 2);

  p.len = 133; /* fits with the port UDH alone, which is passed as given */
  CU_ASSERT_EQUAL_FATAL(sms_text_split(seg, 2, &p, SMS_TEXT_REF8, 7), 1);
  CU_ASSERT_EQUAL(seg[0].udh_len, sizeof port_udh);
  CU_ASSERT_EQUAL(memcmp(seg[0].udh, port_udh, sizeof port_udh), 0);
  CU_ASSERT_EQUAL(seg[0].len, 133);
}

static void test_split_errors(void)
{
  static struct sms_text_segment seg[2];
  struct sms_text_payload p = make(SMS_TEXT_GSM7, 161);

  CU_ASSERT_EQUAL(sms_text_split(seg, 1, &p, SMS_TEXT_REF8, 1), SMS_TEXT_E_SPACE);
  CU_ASSERT_EQUAL(sms_text_split(seg, 0, &p, SMS_TEXT_REF8, 1), SMS_TEXT_E_SPACE);
  p.len = 10;
  CU_ASSERT_EQUAL(sms_text_split(seg, 0, &p, SMS_TEXT_REF8, 1), SMS_TEXT_E_SPACE);
  CU_ASSERT_EQUAL(sms_text_split(seg, 1, &p, SMS_TEXT_REF8, 0x100), SMS_TEXT_E_INVALID);
  CU_ASSERT_EQUAL(sms_text_split(seg, 1, &p, SMS_TEXT_REF16, 0xFFFF), 1);
  p.len = 153 * 255 + 1;
  CU_ASSERT_EQUAL(sms_text_split(seg, 2, &p, SMS_TEXT_REF8, 1), SMS_TEXT_E_SPACE);
}

static void test_split_max(void)
{
  static struct sms_text_segment seg[SMS_TEXT_SEGMENTS_MAX + 1];
  struct sms_text_payload p = make(SMS_TEXT_8BIT, 134 * 255);

  CU_ASSERT_EQUAL_FATAL(sms_text_split(seg, SMS_TEXT_SEGMENTS_MAX + 1, &p, SMS_TEXT_REF8, 0xFF), 255);
  CU_ASSERT_EQUAL(seg[254].udh[4], 255);
  CU_ASSERT_EQUAL(seg[254].udh[5], 255);
  CU_ASSERT_EQUAL(seg[254].len, 134);
  p.len++;
  CU_ASSERT_EQUAL(sms_text_split(seg, SMS_TEXT_SEGMENTS_MAX + 1, &p, SMS_TEXT_REF8, 0xFF),
                  SMS_TEXT_E_TOO_LONG);
}

static void test_udh_parse(void)
{
  struct sms_text_concat c;
  const uint8_t ref8[] = { 0x05, 0x00, 0x03, 0x42, 0x03, 0x02, 'h', 'i' };
  const uint8_t ref16[] = { 0x06, 0x08, 0x04, 0x12, 0x34, 0x02, 0x01 };
  /* port IE, then two concat IEs: the last one counts */
  const uint8_t two[] = { 0x11, 0x05, 0x04, 0x0B, 0x84, 0x23, 0xF0, 0x00, 0x03, 0x01, 0x02, 0x01,
                          0x08, 0x04, 0xAB, 0xCD, 0x05, 0x04 };
  const uint8_t empty[] = { 0x00, 'x' };

  CU_ASSERT_EQUAL(sms_text_udh_parse(ref8, sizeof ref8, &c), 6);
  CU_ASSERT_EQUAL(c.ref_size, SMS_TEXT_REF8);
  CU_ASSERT_EQUAL(c.ref, 0x42);
  CU_ASSERT_EQUAL(c.total, 3);
  CU_ASSERT_EQUAL(c.seq, 2);
  CU_ASSERT_EQUAL(sms_text_udh_parse(ref16, sizeof ref16, &c), 7);
  CU_ASSERT_EQUAL(c.ref_size, SMS_TEXT_REF16);
  CU_ASSERT_EQUAL(c.ref, 0x1234);
  CU_ASSERT_EQUAL(c.total, 2);
  CU_ASSERT_EQUAL(c.seq, 1);
  CU_ASSERT_EQUAL(sms_text_udh_parse(two, sizeof two, &c), 18);
  CU_ASSERT_EQUAL(c.ref_size, SMS_TEXT_REF16);
  CU_ASSERT_EQUAL(c.ref, 0xABCD);
  CU_ASSERT_EQUAL(c.total, 5);
  CU_ASSERT_EQUAL(c.seq, 4);
  c.total = 9;
  CU_ASSERT_EQUAL(sms_text_udh_parse(port_udh, sizeof port_udh, &c), 7);
  CU_ASSERT_EQUAL(c.total, 0);
  CU_ASSERT_EQUAL(sms_text_udh_parse(empty, sizeof empty, &c), 1);
  CU_ASSERT_EQUAL(c.total, 0);
}

static void test_udh_parse_ignored_and_bad(void)
{
  struct sms_text_concat c;
  const uint8_t seq0[] = { 0x05, 0x00, 0x03, 0x42, 0x03, 0x00 };
  const uint8_t seq_above[] = { 0x05, 0x00, 0x03, 0x42, 0x03, 0x04 };
  const uint8_t total0[] = { 0x05, 0x00, 0x03, 0x42, 0x00, 0x00 };
  const uint8_t bad_iedl[] = { 0x06, 0x00, 0x04, 0x42, 0x03, 0x01, 0x00 };
  const uint8_t bad_iedl16[] = { 0x05, 0x08, 0x03, 0x42, 0x03, 0x01 };
  const uint8_t ie_overrun[] = { 0x05, 0x00, 0x05, 0x42, 0x03, 0x01 };
  const uint8_t text_follows[] = { 0x05, 0x00, 0x03, 0x42, 0x03, 0x01, 0x70 };
  const uint8_t ie_header_cut[] = { 0x06, 0x00, 0x03, 0x42, 0x03, 0x01, 0x70 };
  const uint8_t one_octet_ie[] = { 0x01, 0x70 };

  CU_ASSERT_EQUAL(sms_text_udh_parse(seq0, sizeof seq0, &c), 6);
  CU_ASSERT_EQUAL(c.total, 0);
  CU_ASSERT_EQUAL(sms_text_udh_parse(seq_above, sizeof seq_above, &c), 6);
  CU_ASSERT_EQUAL(c.total, 0);
  CU_ASSERT_EQUAL(sms_text_udh_parse(total0, sizeof total0, &c), 6);
  CU_ASSERT_EQUAL(c.total, 0);
  CU_ASSERT_EQUAL(sms_text_udh_parse(bad_iedl, sizeof bad_iedl, &c), SMS_TEXT_E_INVALID);
  CU_ASSERT_EQUAL(sms_text_udh_parse(bad_iedl16, sizeof bad_iedl16, &c), SMS_TEXT_E_INVALID);
  CU_ASSERT_EQUAL(sms_text_udh_parse(ie_overrun, sizeof ie_overrun, &c), SMS_TEXT_E_INVALID);
  CU_ASSERT_EQUAL(sms_text_udh_parse(seq0, 5, &c), SMS_TEXT_E_INVALID); /* UDHL beyond len */
  CU_ASSERT_EQUAL(sms_text_udh_parse(seq0, 0, &c), SMS_TEXT_E_INVALID);
  /* UDHL 6 claims the 0x70 octet: an IE without its length octet. UDHL 5 leaves it to the text. */
  CU_ASSERT_EQUAL(sms_text_udh_parse(ie_header_cut, sizeof ie_header_cut, &c), SMS_TEXT_E_INVALID);
  CU_ASSERT_EQUAL(sms_text_udh_parse(text_follows, sizeof text_follows, &c), 6);
  CU_ASSERT_EQUAL(c.seq, 1);
  CU_ASSERT_EQUAL(sms_text_udh_parse(one_octet_ie, sizeof one_octet_ie, &c), SMS_TEXT_E_INVALID);
}

static void test_udh_build(void)
{
  uint8_t udh[16], full[SMS_TEXT_UD_MAX];
  struct sms_text_concat c = { .ref_size = SMS_TEXT_REF16, .ref = 0xBEEF, .total = 4, .seq = 3 }, back;
  const uint8_t want[] = { 0x0C, 0x08, 0x04, 0xBE, 0xEF, 0x04, 0x03, 0x05, 0x04, 0x0B, 0x84, 0x23, 0xF0 };

  CU_ASSERT_EQUAL_FATAL(sms_text_udh_build(udh, sizeof udh, &c, port_udh + 1, sizeof port_udh - 1), 13);
  CU_ASSERT_EQUAL(memcmp(udh, want, sizeof want), 0);
  CU_ASSERT_EQUAL(sms_text_udh_parse(udh, 13, &back), 13);
  CU_ASSERT_EQUAL(back.ref_size, c.ref_size);
  CU_ASSERT_EQUAL(back.ref, c.ref);
  CU_ASSERT_EQUAL(back.total, c.total);
  CU_ASSERT_EQUAL(back.seq, c.seq);
  CU_ASSERT_EQUAL(sms_text_udh_build(udh, 12, &c, port_udh + 1, sizeof port_udh - 1), SMS_TEXT_E_SPACE);
  CU_ASSERT_EQUAL(sms_text_udh_build(udh, 7, &c, NULL, 0), 7);
  CU_ASSERT_EQUAL(sms_text_udh_build(udh, 6, &c, NULL, 0), SMS_TEXT_E_SPACE);
  c.ref_size = SMS_TEXT_REF8;
  CU_ASSERT_EQUAL(sms_text_udh_build(udh, sizeof udh, &c, NULL, 0), SMS_TEXT_E_INVALID); /* ref > 255 */
  c.ref = 0xEF;
  CU_ASSERT_EQUAL(sms_text_udh_build(udh, sizeof udh, &c, NULL, 0), 6);
  CU_ASSERT_EQUAL(sms_text_udh_build(udh, 5, &c, NULL, 0), SMS_TEXT_E_SPACE);
  c.seq = 5;
  CU_ASSERT_EQUAL(sms_text_udh_build(udh, sizeof udh, &c, NULL, 0), SMS_TEXT_E_INVALID);
  c.seq = 0;
  CU_ASSERT_EQUAL(sms_text_udh_build(udh, sizeof udh, &c, NULL, 0), SMS_TEXT_E_INVALID);
  c.seq = 1, c.total = 0;
  CU_ASSERT_EQUAL(sms_text_udh_build(udh, sizeof udh, &c, NULL, 0), SMS_TEXT_E_INVALID);
  c.total = 1, c.ref_size = (enum sms_text_ref)0;
  CU_ASSERT_EQUAL(sms_text_udh_build(udh, sizeof udh, &c, NULL, 0), SMS_TEXT_E_INVALID);
  c.ref_size = SMS_TEXT_REF8;
  /* 1 + 5 + 135 = 141 octets is one too many. */
  CU_ASSERT_EQUAL(sms_text_udh_build(full, sizeof full, &c, payload, 135), SMS_TEXT_E_INVALID);
  CU_ASSERT_EQUAL(sms_text_udh_build(full, sizeof full, &c, payload, 134), 140);
  CU_ASSERT_EQUAL(full[0], 139);
}

/* Adds seg[k] for each k in order[] and checks the message completes on the last only. */
static void reassemble(struct sms_text_reasm *r, const char *from, const struct sms_text_segment *seg,
                       const int *order, int n, uint8_t *out, size_t *out_len)
{
  for (int i = 0; i < n; i++) {
    struct sms_text_concat c;
    int k = order[i], udh_len = sms_text_udh_parse(seg[k].udh, seg[k].udh_len, &c);
    CU_ASSERT_EQUAL_FATAL(udh_len, (int)seg[k].udh_len);
    CU_ASSERT_EQUAL_FATAL(c.seq, k + 1);
    CU_ASSERT_EQUAL(sms_text_reasm_add(r, from, &c, seg[k].data, seg[k].len, 1000, out, BIG, out_len),
                    i == n - 1 ? 1 : 0);
  }
}

static void test_reasm_out_of_order(void)
{
  static struct sms_text_segment seg[5];
  static uint8_t out[BIG];
  static const int order[] = { 3, 0, 4, 2, 1 };
  struct sms_text_payload p = make(SMS_TEXT_GSM7, 153 * 4 + 10);
  struct sms_text_reasm *r = sms_text_reasm_create(8, 60);
  size_t out_len = 0;

  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  payload[151] = 0x1B, payload[152] = 0x3C; /* an escape pair across the first cut */
  CU_ASSERT_EQUAL_FATAL(sms_text_split(seg, 5, &p, SMS_TEXT_REF16, 0x0102), 5);
  reassemble(r, "+48600000001", seg, order, 5, out, &out_len);
  CU_ASSERT_EQUAL(out_len, p.len);
  CU_ASSERT_EQUAL(memcmp(out, payload, p.len), 0);
  /* Everything was given back: the same parts fit again, in order this time. */
  reassemble(r, "+48600000001", seg, (const int[]){ 0, 1, 2, 3, 4 }, 5, out, &out_len);
  CU_ASSERT_EQUAL(out_len, p.len);
  sms_text_reasm_destroy(r);
}

static void test_reasm_duplicates_and_keys(void)
{
  static struct sms_text_segment seg[3];
  static uint8_t out[BIG];
  struct sms_text_payload p = make(SMS_TEXT_8BIT, 300);
  struct sms_text_reasm *r = sms_text_reasm_create(16, 60);
  struct sms_text_concat c;
  size_t out_len = 0;

  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  CU_ASSERT_EQUAL_FATAL(sms_text_split(seg, 3, &p, SMS_TEXT_REF8, 7), 3);
  CU_ASSERT_EQUAL_FATAL(sms_text_udh_parse(seg[0].udh, seg[0].udh_len, &c), 6);

  /* Part 1 twice: the duplicate must not count towards the total. */
  CU_ASSERT_EQUAL(sms_text_reasm_add(r, "A", &c, seg[0].data, seg[0].len, 0, out, BIG, &out_len), 0);
  CU_ASSERT_EQUAL(sms_text_reasm_add(r, "A", &c, seg[0].data, seg[0].len, 0, out, BIG, &out_len), 0);
  /* The same ref from another originator, with another total, or as a 16-bit ref is another message. */
  c.seq = 2;
  CU_ASSERT_EQUAL(sms_text_reasm_add(r, "B", &c, seg[1].data, seg[1].len, 0, out, BIG, &out_len), 0);
  c.ref_size = SMS_TEXT_REF16;
  CU_ASSERT_EQUAL(sms_text_reasm_add(r, "A", &c, seg[1].data, seg[1].len, 0, out, BIG, &out_len), 0);
  c.ref_size = SMS_TEXT_REF8, c.total = 4;
  CU_ASSERT_EQUAL(sms_text_reasm_add(r, "A", &c, seg[1].data, seg[1].len, 0, out, BIG, &out_len), 0);
  c.total = 3;
  CU_ASSERT_EQUAL(sms_text_reasm_add(r, "A", &c, seg[1].data, seg[1].len, 0, out, BIG, &out_len), 0);
  CU_ASSERT_EQUAL(sms_text_reasm_add(r, "A", &c, seg[1].data, seg[1].len, 0, out, BIG, &out_len), 0);
  c.seq = 3;
  CU_ASSERT_EQUAL(sms_text_reasm_add(r, "A", &c, seg[2].data, seg[2].len, 0, out, BIG, &out_len), 1);
  CU_ASSERT_EQUAL(out_len, 300);
  CU_ASSERT_EQUAL(memcmp(out, payload, 300), 0);
  sms_text_reasm_destroy(r);
}

/* Adds a part of text from "A" at time now. Returns the length of the completed
 * message, 0 while it waits for parts, or the error. */
static int add_text(struct sms_text_reasm *r, const struct sms_text_concat *c, const char *text,
                    uint64_t now, uint8_t *out, size_t out_cap)
{
  size_t out_len = 0;
  int rc = sms_text_reasm_add(r, "A", c, (const uint8_t *)text, strlen(text), now, out, out_cap,
                              &out_len);
  return rc == 1 ? (int)out_len : rc;
}

static void test_reasm_timeout(void)
{
  struct sms_text_reasm *r = sms_text_reasm_create(4, 30);
  struct sms_text_concat c = { .ref_size = SMS_TEXT_REF8, .ref = 1, .total = 2, .seq = 1 };
  uint8_t out[8];

  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  CU_ASSERT_EQUAL(add_text(r, &c, "ab", 100, out, sizeof out), 0);
  c.ref = 2;
  CU_ASSERT_EQUAL(add_text(r, &c, "ab", 110, out, sizeof out), 0);
  CU_ASSERT_EQUAL(sms_text_reasm_expire(r, 50), 0); /* a clock stepping back drops nothing */
  CU_ASSERT_EQUAL(sms_text_reasm_expire(r, 130), 0);
  CU_ASSERT_EQUAL(sms_text_reasm_expire(r, 131), 1);
  /* Ref 1 is gone: its part 2 now starts a new message. Ref 2 still completes. */
  c.ref = 1, c.seq = 2;
  CU_ASSERT_EQUAL(add_text(r, &c, "cd", 132, out, sizeof out), 0);
  c.ref = 2;
  CU_ASSERT_EQUAL(add_text(r, &c, "cd", 132, out, sizeof out), 4);
  CU_ASSERT_NSTRING_EQUAL(out, "abcd", 4);
  CU_ASSERT_EQUAL(sms_text_reasm_expire(r, 1000), 1);
  CU_ASSERT_EQUAL(sms_text_reasm_expire(r, 1000), 0);
  sms_text_reasm_destroy(r);
}

static void test_reasm_full(void)
{
  struct sms_text_reasm *r = sms_text_reasm_create(3, 30);
  struct sms_text_concat c = { .ref_size = SMS_TEXT_REF8, .ref = 0, .total = 3, .seq = 1 };
  uint8_t out[8];

  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  /* Two parts of message 0 and one of message 1 fill all three slots. */
  CU_ASSERT_EQUAL(add_text(r, &c, "a", 0, out, sizeof out), 0);
  c.seq = 2;
  CU_ASSERT_EQUAL(add_text(r, &c, "b", 0, out, sizeof out), 0);
  c.ref = 1, c.seq = 1;
  CU_ASSERT_EQUAL(add_text(r, &c, "x", 0, out, sizeof out), 0);
  c.seq = 2;
  CU_ASSERT_EQUAL(add_text(r, &c, "y", 0, out, sizeof out), SMS_TEXT_E_FULL);
  /* A single-part message and a completing part need no slot. */
  c.ref = 2, c.total = 1, c.seq = 1;
  CU_ASSERT_EQUAL(add_text(r, &c, "s", 0, out, sizeof out), 1);
  CU_ASSERT_EQUAL(out[0], 's');
  c.ref = 0, c.total = 3, c.seq = 3;
  /* Too small a buffer changes nothing; the part can come again. */
  CU_ASSERT_EQUAL(add_text(r, &c, "c", 0, out, 2), SMS_TEXT_E_SPACE);
  CU_ASSERT_EQUAL(add_text(r, &c, "c", 0, out, 3), 3);
  CU_ASSERT_NSTRING_EQUAL(out, "abc", 3);
  /* Freed slots take message 1's next part. */
  c.ref = 1, c.seq = 2;
  CU_ASSERT_EQUAL(add_text(r, &c, "y", 0, out, sizeof out), 0);
  sms_text_reasm_destroy(r);
}

static void test_reasm_invalid(void)
{
  struct sms_text_reasm *r = sms_text_reasm_create(2, 30);
  struct sms_text_concat c = { .ref_size = SMS_TEXT_REF8, .ref = 0, .total = 2, .seq = 1 };
  char long_addr[SMS_TEXT_ADDR_MAX + 2];
  uint8_t out[8] = { 0 };
  size_t out_len = 0;

  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  CU_ASSERT_PTR_NULL(sms_text_reasm_create(0, 30));
  memset(long_addr, '1', sizeof long_addr - 1);
  long_addr[sizeof long_addr - 1] = '\0';
  CU_ASSERT_EQUAL(sms_text_reasm_add(r, long_addr, &c, out, 1, 0, out, sizeof out, &out_len),
                  SMS_TEXT_E_INVALID);
  long_addr[SMS_TEXT_ADDR_MAX] = '\0';
  CU_ASSERT_EQUAL(sms_text_reasm_add(r, long_addr, &c, out, 1, 0, out, sizeof out, &out_len), 0);
  CU_ASSERT_EQUAL(sms_text_reasm_add(r, "A", &c, payload, SMS_TEXT_SEPTETS_MAX + 1, 0, out, sizeof out,
                                     &out_len), SMS_TEXT_E_INVALID);
  c.seq = 3;
  CU_ASSERT_EQUAL(sms_text_reasm_add(r, "A", &c, out, 1, 0, out, sizeof out, &out_len), SMS_TEXT_E_INVALID);
  c.seq = 0;
  CU_ASSERT_EQUAL(sms_text_reasm_add(r, "A", &c, out, 1, 0, out, sizeof out, &out_len), SMS_TEXT_E_INVALID);
  c.seq = 1, c.ref = 256;
  CU_ASSERT_EQUAL(sms_text_reasm_add(r, "A", &c, out, 1, 0, out, sizeof out, &out_len), SMS_TEXT_E_INVALID);
  sms_text_reasm_destroy(r);
  sms_text_reasm_destroy(NULL);
}

/* UTF-8 in, UTF-8 out, through coding choice, conversion, split and reassembly. */
static void roundtrip_text(const char *text, enum sms_text_coding want_coding, int want_segments)
{
  static struct sms_text_segment seg[8];
  static uint8_t units[BIG], out[BIG];
  static char back[BIG];
  struct sms_text_reasm *r = sms_text_reasm_create(8, 60);
  struct sms_text_payload p = { .data = units };
  size_t len = strlen(text), out_len = 0;
  int coding = sms_text_choose_coding(text, len), n, u;

  CU_ASSERT_PTR_NOT_NULL_FATAL(r);
  CU_ASSERT_EQUAL_FATAL(coding, (int)want_coding);
  p.coding = (enum sms_text_coding)coding;
  u = coding == SMS_TEXT_GSM7 ? charset_utf8_to_gsm(units, sizeof units, text, len, 0)
                              : charset_utf8_to_ucs2(units, sizeof units, text, len);
  CU_ASSERT_FATAL(u > 0);
  p.len = (size_t)u;
  n = sms_text_split(seg, 8, &p, SMS_TEXT_REF8, 200);
  CU_ASSERT_EQUAL_FATAL(n, want_segments);
  /* Each part converts on its own to the next piece of the text: nothing was cut in half. */
  for (int k = 0, o = 0; k < n; k++, o += u) {
    size_t cap = sizeof back - (size_t)o;
    u = coding == SMS_TEXT_GSM7 ? charset_gsm_to_utf8(back + o, cap, seg[k].data, seg[k].len)
                                : charset_ucs2_to_utf8(back + o, cap, seg[k].data, seg[k].len);
    CU_ASSERT_FATAL(u > 0);
    CU_ASSERT_EQUAL_FATAL(memcmp(back + o, text + o, (size_t)u), 0);
  }
  for (int k = n - 1; k >= 0; k--) {
    struct sms_text_concat c;
    CU_ASSERT_EQUAL_FATAL(sms_text_udh_parse(seg[k].udh, seg[k].udh_len, &c), 6);
    CU_ASSERT_EQUAL(sms_text_reasm_add(r, "447700900123", &c, seg[k].data, seg[k].len, 5, out, sizeof out,
                                       &out_len), k == 0);
  }
  u = coding == SMS_TEXT_GSM7 ? charset_gsm_to_utf8(back, sizeof back, out, out_len)
                              : charset_ucs2_to_utf8(back, sizeof back, out, out_len);
  CU_ASSERT_EQUAL_FATAL(u, (int)len);
  CU_ASSERT_EQUAL(memcmp(back, text, len), 0);
  sms_text_reasm_destroy(r);
}

static void test_text_roundtrip(void)
{
  static char text[1024];
  size_t o = 0;

  /* GSM: 150 letters then euros, two septets each, so one straddles 153. */
  for (int k = 0; k < 150; k++)
    text[o++] = (char)('a' + k % 26);
  for (int k = 0; k < 10; k++, o += 3)
    memcpy(text + o, "€", 3);
  text[o] = '\0';
  roundtrip_text(text, SMS_TEXT_GSM7, 2);

  /* UCS2: 66 characters then emoji, two units each, so the first straddles 67. */
  o = 0;
  for (int k = 0; k < 66; k++, o += 2)
    memcpy(text + o, "ж", 2);
  for (int k = 0; k < 5; k++, o += 4)
    memcpy(text + o, "\xF0\x9F\x98\x80", 4);
  text[o] = '\0';
  roundtrip_text(text, SMS_TEXT_UCS2, 2);
}

void suite_sms_text(void);
void suite_sms_text(void)
{
  static const struct test_case cases[] = {
    { "choose coding", test_choose_coding },
    { "fill bits", test_fill_bits },
    { "count GSM-7", test_count_gsm },
    { "count 8-bit", test_count_8bit },
    { "count UCS2", test_count_ucs2 },
    { "count, escape at a boundary", test_count_escape_boundary },
    { "count, surrogate at a boundary", test_count_surrogate_boundary },
    { "count with own UDH", test_count_with_own_udh },
    { "count invalid", test_count_invalid },
    { "split GSM-7", test_split_gsm },
    { "split at pair boundaries", test_split_boundaries },
    { "split keeps own UDH", test_split_own_udh },
    { "split errors", test_split_errors },
    { "split 255 parts", test_split_max },
    { "UDH parse", test_udh_parse },
    { "UDH parse, ignored and malformed", test_udh_parse_ignored_and_bad },
    { "UDH build", test_udh_build },
    { "reassembly out of order", test_reasm_out_of_order },
    { "reassembly duplicates and keys", test_reasm_duplicates_and_keys },
    { "reassembly timeout", test_reasm_timeout },
    { "reassembly full", test_reasm_full },
    { "reassembly invalid", test_reasm_invalid },
    { "UTF-8 round trip", test_text_roundtrip },
    { NULL, NULL },
  };
  test_add_suite("sms_text", cases);
}
