/* test_charset.c - GSM 03.38, UCS2 and Latin-1 conversions, packing.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>
#include "charset.h"
#include "testutil.h"

/* The 03.38 basic table spelled out in UTF-8, one entry per septet, written
 * independently of lib/charset.c (0x1B, the escape, is "" and skipped). */
static const char *const basic_utf8[128] = {
  "@", "£", "$", "¥", "è", "é", "ù", "ì", "ò", "Ç", "\n", "Ø", "ø", "\r", "Å", "å",
  "Δ", "_", "Φ", "Γ", "Λ", "Ω", "Π", "Ψ", "Σ", "Θ", "Ξ", "", "Æ", "æ", "ß", "É",
  " ", "!", "\"", "#", "¤", "%", "&", "'", "(", ")", "*", "+", ",", "-", ".", "/",
  "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", ":", ";", "<", "=", ">", "?",
  "¡", "A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "N", "O",
  "P", "Q", "R", "S", "T", "U", "V", "W", "X", "Y", "Z", "Ä", "Ö", "Ñ", "Ü", "§",
  "¿", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o",
  "p", "q", "r", "s", "t", "u", "v", "w", "x", "y", "z", "ä", "ö", "ñ", "ü", "à",
};

static const struct {
  uint8_t code;
  const char *utf8;
} ext_table[] = {
  { 0x0A, "\f" }, { 0x14, "^" }, { 0x28, "{" }, { 0x29, "}" }, { 0x2F, "\\" },
  { 0x3C, "[" }, { 0x3D, "~" }, { 0x3E, "]" }, { 0x40, "|" }, { 0x65, "€" },
};

/* Malformed UTF-8 that every decoding function must refuse. */
static const struct {
  const char *what;
  const char *bytes;
} bad_utf8[] = {
  { "overlong 2-byte NUL", "\xC0\x80" },
  { "overlong 2-byte, C1 lead", "\xC1\xBF" },
  { "overlong 3-byte", "\xE0\x80\xAF" },
  { "overlong 4-byte", "\xF0\x8F\xBF\xBF" },
  { "high surrogate in UTF-8", "\xED\xA0\x80" },
  { "low surrogate in UTF-8", "\xED\xBF\xBF" },
  { "above U+10FFFF", "\xF4\x90\x80\x80" },
  { "F5 lead", "\xF5\x80\x80\x80" },
  { "FF byte", "a\xFF" },
  { "lone continuation", "\x80" },
  { "truncated 2-byte", "a\xC3" },
  { "truncated 3-byte", "\xE2\x82" },
  { "truncated 4-byte", "\xF0\x9F\x98" },
  { "continuation replaced by ASCII", "\xE2\x82" "A" },
};

static int gsm_of(const char *utf8, uint8_t *out, size_t cap)
{
  return charset_utf8_to_gsm(out, cap, utf8, strlen(utf8), 0);
}

static void test_basic_table_roundtrip(void)
{
  for (unsigned g = 0; g < 128; g++) {
    const uint8_t septet = (uint8_t)g;
    char utf8[8];
    uint8_t back[4];
    int n;
    if (g == 0x1B)
      continue;
    n = charset_gsm_to_utf8(utf8, sizeof utf8, &septet, 1);
    CU_ASSERT_EQUAL_FATAL(n, (int)strlen(basic_utf8[g]));
    CU_ASSERT_EQUAL(memcmp(utf8, basic_utf8[g], (size_t)n), 0);
    CU_ASSERT_EQUAL(charset_utf8_to_gsm(back, sizeof back, utf8, (size_t)n, 0), 1);
    CU_ASSERT_EQUAL(back[0], septet);
    CU_ASSERT_EQUAL(charset_gsm_septets(utf8, (size_t)n), 1);
  }
}

static void test_ext_table_roundtrip(void)
{
  for (size_t k = 0; k < sizeof ext_table / sizeof ext_table[0]; k++) {
    const uint8_t pair[2] = { 0x1B, ext_table[k].code };
    size_t len = strlen(ext_table[k].utf8);
    char utf8[8];
    uint8_t back[4];
    CU_ASSERT_EQUAL_FATAL(charset_gsm_to_utf8(utf8, sizeof utf8, pair, 2), (int)len);
    CU_ASSERT_EQUAL(memcmp(utf8, ext_table[k].utf8, len), 0);
    CU_ASSERT_EQUAL(gsm_of(ext_table[k].utf8, back, sizeof back), 2);
    CU_ASSERT_EQUAL(memcmp(back, pair, 2), 0);
    CU_ASSERT_EQUAL(charset_gsm_septets(ext_table[k].utf8, len), 2);
  }
}

static void test_gsm_mixed_text(void)
{
  const char *text = "Hi {name}, 5€ @ café ^_^ Ω";
  const uint8_t want[] = { 'H', 'i', ' ', 0x1B, 0x28, 'n', 'a', 'm', 'e', 0x1B, 0x29, ',', ' ', '5',
                           0x1B, 0x65, ' ', 0x00, ' ', 'c', 'a', 'f', 0x05, ' ', 0x1B, 0x14, 0x11,
                           0x1B, 0x14, ' ', 0x15 };
  uint8_t gsm[64];
  char back[64];
  CU_ASSERT_EQUAL_FATAL(gsm_of(text, gsm, sizeof gsm), (int)sizeof want);
  CU_ASSERT_EQUAL(memcmp(gsm, want, sizeof want), 0);
  CU_ASSERT_EQUAL(charset_gsm_septets(text, strlen(text)), (int)sizeof want);
  CU_ASSERT_EQUAL_FATAL(charset_gsm_to_utf8(back, sizeof back, gsm, sizeof want), (int)strlen(text));
  CU_ASSERT_EQUAL(memcmp(back, text, strlen(text)), 0);
}

static void test_gsm_escape_oddities(void)
{
  char out[16];
  /* An escape before a code without an extension character shows the basic one. */
  const uint8_t unknown[] = { 0x1B, 'A', 0x1B, 0x00 };
  const uint8_t esc_esc[] = { 0x1B, 0x1B, 'x' };
  const uint8_t trailing[] = { 'a', 0x1B };
  const uint8_t high[] = { 'a', 0x80 };
  const uint8_t esc_high[] = { 0x1B, 0x80 };
  CU_ASSERT_EQUAL(charset_gsm_to_utf8(out, sizeof out, unknown, sizeof unknown), 2);
  CU_ASSERT_NSTRING_EQUAL(out, "A@", 2);
  CU_ASSERT_EQUAL(charset_gsm_to_utf8(out, sizeof out, esc_esc, sizeof esc_esc), 2);
  CU_ASSERT_NSTRING_EQUAL(out, " x", 2);
  CU_ASSERT_EQUAL(charset_gsm_to_utf8(out, sizeof out, trailing, sizeof trailing), 2);
  CU_ASSERT_NSTRING_EQUAL(out, "a ", 2);
  CU_ASSERT_EQUAL(charset_gsm_to_utf8(out, sizeof out, high, sizeof high), CHARSET_E_INVALID);
  CU_ASSERT_EQUAL(charset_gsm_to_utf8(out, sizeof out, esc_high, sizeof esc_high), CHARSET_E_INVALID);
  CU_ASSERT_EQUAL(charset_gsm_to_utf8(out, sizeof out, unknown, 0), 0);
}

static void test_strict_and_replace(void)
{
  uint8_t out[16];
  /* Backtick has no GSM form; U+4E2D and U+1F600 are one character each. */
  const char *text = "a`b\xE4\xB8\xAD\xF0\x9F\x98\x80";
  size_t len = strlen(text);
  CU_ASSERT_EQUAL(charset_utf8_to_gsm(out, sizeof out, text, len, 0), CHARSET_E_UNREPRESENTABLE);
  CU_ASSERT_EQUAL(charset_gsm_septets(text, len), CHARSET_E_UNREPRESENTABLE);
  CU_ASSERT_EQUAL_FATAL(charset_utf8_to_gsm(out, sizeof out, text, len, 1), 5);
  CU_ASSERT_EQUAL(memcmp(out, "a?b??", 5), 0);

  CU_ASSERT_EQUAL(charset_utf8_to_latin1(out, sizeof out, "5€", 4, 0), CHARSET_E_UNREPRESENTABLE);
  CU_ASSERT_EQUAL_FATAL(charset_utf8_to_latin1(out, sizeof out, "5€é", 6, 1), 3);
  CU_ASSERT_EQUAL(memcmp(out, "5?\xE9", 3), 0);

  /* Replacement does not excuse malformed input. */
  CU_ASSERT_EQUAL(charset_utf8_to_gsm(out, sizeof out, "a\xC3", 2, 1), CHARSET_E_INVALID);
  CU_ASSERT_EQUAL(charset_utf8_to_latin1(out, sizeof out, "a\xC3", 2, 1), CHARSET_E_INVALID);
}

static void test_invalid_utf8(void)
{
  uint8_t out[16];
  for (size_t k = 0; k < sizeof bad_utf8 / sizeof bad_utf8[0]; k++) {
    const char *s = bad_utf8[k].bytes;
    size_t len = strlen(s);
    CU_ASSERT_EQUAL(charset_utf8_to_gsm(out, sizeof out, s, len, 1), CHARSET_E_INVALID);
    CU_ASSERT_EQUAL(charset_gsm_septets(s, len), CHARSET_E_INVALID);
    CU_ASSERT_EQUAL(charset_utf8_to_ucs2(out, sizeof out, s, len), CHARSET_E_INVALID);
    CU_ASSERT_EQUAL(charset_utf8_to_latin1(out, sizeof out, s, len, 1), CHARSET_E_INVALID);
  }
}

static void test_utf8_boundaries(void)
{
  /* The extremes of each sequence length are accepted. */
  const char *text = "\x7F" "\xC2\x80" "\xDF\xBF" "\xE0\xA0\x80" "\xED\x9F\xBF" "\xEE\x80\x80"
                     "\xEF\xBF\xBF" "\xF0\x90\x80\x80" "\xF4\x8F\xBF\xBF";
  const uint8_t want[] = { 0x00, 0x7F, 0x00, 0x80, 0x07, 0xFF, 0x08, 0x00, 0xD7, 0xFF, 0xE0, 0x00,
                           0xFF, 0xFF, 0xD8, 0x00, 0xDC, 0x00, 0xDB, 0xFF, 0xDF, 0xFF };
  uint8_t ucs2[32];
  char back[64];
  CU_ASSERT_EQUAL_FATAL(charset_utf8_to_ucs2(ucs2, sizeof ucs2, text, strlen(text)), (int)sizeof want);
  CU_ASSERT_EQUAL(memcmp(ucs2, want, sizeof want), 0);
  CU_ASSERT_EQUAL_FATAL(charset_ucs2_to_utf8(back, sizeof back, ucs2, sizeof want), (int)strlen(text));
  CU_ASSERT_EQUAL(memcmp(back, text, strlen(text)), 0);
}

static void test_ucs2(void)
{
  const char *text = "Aé€\xF0\x9F\x98\x80"; /* U+1F600 needs a surrogate pair */
  const uint8_t want[] = { 0x00, 0x41, 0x00, 0xE9, 0x20, 0xAC, 0xD8, 0x3D, 0xDE, 0x00 };
  uint8_t ucs2[16];
  char back[16];
  CU_ASSERT_EQUAL_FATAL(charset_utf8_to_ucs2(ucs2, sizeof ucs2, text, strlen(text)), 10);
  CU_ASSERT_EQUAL(memcmp(ucs2, want, sizeof want), 0);
  CU_ASSERT_EQUAL_FATAL(charset_ucs2_to_utf8(back, sizeof back, want, sizeof want), (int)strlen(text));
  CU_ASSERT_EQUAL(memcmp(back, text, strlen(text)), 0);
}

static void test_ucs2_invalid(void)
{
  char out[16];
  const uint8_t odd[] = { 0x00, 0x41, 0x00 };
  const uint8_t lone_high_end[] = { 0x00, 0x41, 0xD8, 0x3D };
  const uint8_t high_then_char[] = { 0xD8, 0x3D, 0x00, 0x41 };
  const uint8_t high_then_high[] = { 0xD8, 0x3D, 0xD8, 0x3D };
  const uint8_t lone_low[] = { 0xDE, 0x00, 0x00, 0x41 };
  CU_ASSERT_EQUAL(charset_ucs2_to_utf8(out, sizeof out, odd, sizeof odd), CHARSET_E_INVALID);
  CU_ASSERT_EQUAL(charset_ucs2_to_utf8(out, sizeof out, lone_high_end, 4), CHARSET_E_INVALID);
  CU_ASSERT_EQUAL(charset_ucs2_to_utf8(out, sizeof out, high_then_char, 4), CHARSET_E_INVALID);
  CU_ASSERT_EQUAL(charset_ucs2_to_utf8(out, sizeof out, high_then_high, 4), CHARSET_E_INVALID);
  CU_ASSERT_EQUAL(charset_ucs2_to_utf8(out, sizeof out, lone_low, 4), CHARSET_E_INVALID);
}

static void test_latin1(void)
{
  uint8_t all[256], back[256];
  char utf8[512];
  int n;
  for (unsigned b = 0; b < 256; b++)
    all[b] = (uint8_t)b;
  /* 128 one-byte and 128 two-byte sequences. */
  n = charset_latin1_to_utf8(utf8, sizeof utf8, all, sizeof all);
  CU_ASSERT_EQUAL_FATAL(n, 384);
  CU_ASSERT_EQUAL(memcmp(utf8 + 128 + 2 * (0xE9 - 0x80), "é", 2), 0);
  CU_ASSERT_EQUAL(charset_utf8_to_latin1(back, sizeof back, utf8, (size_t)n, 0), 256);
  CU_ASSERT_EQUAL(memcmp(back, all, sizeof all), 0);
}

static void test_pack_vectors(void)
{
  static const struct {
    const char *text;
    const char *hex;
    unsigned fill;
  } v[] = {
    { "hellohello", "E8329BFD4697D9EC37", 0 },
    { "orange.pl", "6F79D87D2EBBE06C", 0 }, /* UCP alphanumeric OAdC */
    { "Gateway", "C730BD7C0FE701", 0 },
    { "hellohello", "D06536FB8D2EB3D96F", 1 }, /* after a 6-octet UDH */
  };
  for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
    uint8_t septets[16], packed[16], unpacked[16], *want;
    int n = gsm_of(v[k].text, septets, sizeof septets);
    int want_len = test_unhex(v[k].hex, &want);
    CU_ASSERT_EQUAL_FATAL(n, (int)strlen(v[k].text));
    CU_ASSERT_FATAL(want_len > 0);
    CU_ASSERT_EQUAL(charset_gsm_pack(packed, sizeof packed, septets, (size_t)n, v[k].fill), want_len);
    CU_ASSERT_EQUAL(memcmp(packed, want, (size_t)want_len), 0);
    CU_ASSERT_EQUAL(charset_gsm_unpack(unpacked, sizeof unpacked, want, (size_t)want_len, (size_t)n,
                                       v[k].fill), n);
    CU_ASSERT_EQUAL(memcmp(unpacked, septets, (size_t)n), 0);
    free(want);
  }
}

static void test_pack_every_fill(void)
{
  uint8_t septets[160], packed[141], back[160];
  for (unsigned k = 0; k < 160; k++)
    septets[k] = (uint8_t)((k * 37 + 11) & 0x7F);
  for (unsigned fill = 0; fill <= 6; fill++) {
    int want = (int)((160 * 7 + fill + 7) / 8);
    CU_ASSERT_EQUAL(charset_gsm_pack(packed, sizeof packed, septets, 160, fill), want);
    CU_ASSERT_EQUAL(packed[0] & ((1u << fill) - 1), 0); /* the fill bits are zero */
    CU_ASSERT_EQUAL(charset_gsm_unpack(back, sizeof back, packed, (size_t)want, 160, fill), 160);
    CU_ASSERT_EQUAL(memcmp(back, septets, sizeof septets), 0);
  }
  CU_ASSERT_EQUAL(charset_gsm_pack(packed, sizeof packed, septets, 160, 0), 140);
  CU_ASSERT_EQUAL(charset_gsm_pack(packed, sizeof packed, septets, 0, 3), 0);
  CU_ASSERT_EQUAL(charset_gsm_unpack(back, sizeof back, packed, 0, 0, 3), 0);
}

static void test_pack_invalid(void)
{
  const uint8_t bad[] = { 'a', 0x80 };
  uint8_t out[8];
  CU_ASSERT_EQUAL(charset_gsm_pack(out, sizeof out, bad, 2, 0), CHARSET_E_INVALID);
  CU_ASSERT_EQUAL(charset_gsm_pack(out, sizeof out, bad, 1, 7), CHARSET_E_INVALID);
  CU_ASSERT_EQUAL(charset_gsm_unpack(out, sizeof out, bad, 2, 1, 7), CHARSET_E_INVALID);
  /* 3 septets need 3 octets (21 bits), 2 septets after 3 fill bits need 3 too. */
  CU_ASSERT_EQUAL(charset_gsm_unpack(out, sizeof out, bad, 2, 3, 0), CHARSET_E_INVALID);
  CU_ASSERT_EQUAL(charset_gsm_unpack(out, sizeof out, bad, 2, 2, 3), CHARSET_E_INVALID);
  CU_ASSERT_EQUAL(charset_gsm_unpack(out, sizeof out, bad, 2, 2, 2), 2);
}

static void test_space(void)
{
  uint8_t o8[8];
  char oc[8];
  const uint8_t septets[] = { 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i' };
  const uint8_t euro_gsm[] = { 0x1B, 0x65 };
  const uint8_t ucs2_pair[] = { 0xD8, 0x3D, 0xDE, 0x00 };
  const uint8_t latin1[] = { 'a', 0xE9 };

  /* An escape pair never half-fits; exact fits succeed. */
  CU_ASSERT_EQUAL(charset_utf8_to_gsm(o8, 2, "a€", 4, 0), CHARSET_E_SPACE);
  CU_ASSERT_EQUAL(charset_utf8_to_gsm(o8, 3, "a€", 4, 0), 3);
  CU_ASSERT_EQUAL(charset_utf8_to_gsm(o8, 1, "ab", 2, 0), CHARSET_E_SPACE);
  CU_ASSERT_EQUAL(charset_utf8_to_gsm(o8, 0, "", 0, 0), 0);

  CU_ASSERT_EQUAL(charset_gsm_to_utf8(oc, 2, euro_gsm, 2), CHARSET_E_SPACE);
  CU_ASSERT_EQUAL(charset_gsm_to_utf8(oc, 3, euro_gsm, 2), 3);
  CU_ASSERT_EQUAL(charset_gsm_to_utf8(oc, 1, septets, 2), CHARSET_E_SPACE);

  /* 9 septets = 63 bits = 8 octets; 8 septets after 1 fill bit = 57 bits = 8 octets too. */
  CU_ASSERT_EQUAL(charset_gsm_pack(o8, 7, septets, 9, 0), CHARSET_E_SPACE);
  CU_ASSERT_EQUAL(charset_gsm_pack(o8, 8, septets, 9, 0), 8);
  CU_ASSERT_EQUAL(charset_gsm_pack(o8, 7, septets, 8, 1), CHARSET_E_SPACE);
  CU_ASSERT_EQUAL(charset_gsm_unpack(o8, 2, septets, sizeof septets, 3, 0), CHARSET_E_SPACE);
  CU_ASSERT_EQUAL(charset_gsm_unpack(o8, 3, septets, sizeof septets, 3, 0), 3);

  CU_ASSERT_EQUAL(charset_utf8_to_ucs2(o8, 3, "\xF0\x9F\x98\x80", 4), CHARSET_E_SPACE);
  CU_ASSERT_EQUAL(charset_utf8_to_ucs2(o8, 4, "\xF0\x9F\x98\x80", 4), 4);
  CU_ASSERT_EQUAL(charset_utf8_to_ucs2(o8, 1, "a", 1), CHARSET_E_SPACE);

  CU_ASSERT_EQUAL(charset_ucs2_to_utf8(oc, 3, ucs2_pair, 4), CHARSET_E_SPACE);
  CU_ASSERT_EQUAL(charset_ucs2_to_utf8(oc, 4, ucs2_pair, 4), 4);
  CU_ASSERT_EQUAL(charset_ucs2_to_utf8(oc, 0, (const uint8_t *)"\0a", 2), CHARSET_E_SPACE);

  CU_ASSERT_EQUAL(charset_utf8_to_latin1(o8, 1, "ab", 2, 0), CHARSET_E_SPACE);
  CU_ASSERT_EQUAL(charset_utf8_to_latin1(o8, 2, "ab", 2, 0), 2);

  CU_ASSERT_EQUAL(charset_latin1_to_utf8(oc, 2, latin1, 2), CHARSET_E_SPACE);
  CU_ASSERT_EQUAL(charset_latin1_to_utf8(oc, 3, latin1, 2), 3);
}

void suite_charset(void);
void suite_charset(void)
{
  static const struct test_case cases[] = {
    { "basic table round trip", test_basic_table_roundtrip },
    { "extension table round trip", test_ext_table_roundtrip },
    { "mixed GSM text", test_gsm_mixed_text },
    { "escape oddities", test_gsm_escape_oddities },
    { "strict and replace", test_strict_and_replace },
    { "invalid UTF-8", test_invalid_utf8 },
    { "UTF-8 length boundaries", test_utf8_boundaries },
    { "UCS2", test_ucs2 },
    { "UCS2 invalid", test_ucs2_invalid },
    { "Latin-1", test_latin1 },
    { "pack vectors", test_pack_vectors },
    { "pack every fill", test_pack_every_fill },
    { "pack invalid", test_pack_invalid },
    { "buffer too small", test_space },
    { NULL, NULL },
  };
  test_add_suite("charset", cases);
}
