/* test_cimd2.c - CIMD2 packets: splitting a stream, decoding, encoding and
 * back, checksums, and what bad input gets.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <string.h>
#include "cimd2_codec.h"
#include "cimd2_text.h"
#include "testutil.h"

/* A packet as text, its checksum worked out here (the sum of every byte
 * before it, as two uppercase hex digits) unless with is false. */
static size_t packet(char *out, size_t cap, const char *body, bool with)
{
  int n = snprintf(out, cap, "\x02%s", body);
  unsigned sum = 0;
  for (int i = 0; i < n; i++)
    sum += (uint8_t)out[i];
  if (with)
    n += snprintf(out + n, cap - (size_t)n, "%02X", sum & 0xff);
  n += snprintf(out + n, cap - (size_t)n, "\x03");
  return (size_t)n;
}

static void test_decode_login(void)
{
  char buf[256];
  size_t len = packet(buf, sizeof buf, "01:001\t010:emg\t011:secret\t", true);
  struct cimd2_packet p;
  CU_ASSERT_EQUAL_FATAL(cimd2_decode((const uint8_t *)buf, len, &p), 0);
  CU_ASSERT_EQUAL(p.op, CIMD2_LOGIN);
  CU_ASSERT_EQUAL(p.number, 1);
  CU_ASSERT_TRUE(p.checksum);
  CU_ASSERT_EQUAL_FATAL(p.n_params, 2);
  const struct cimd2_slice *user = cimd2_get(&p, CIMD2_P_USER);
  CU_ASSERT_PTR_NOT_NULL_FATAL(user);
  CU_ASSERT_EQUAL(user->len, 3);
  CU_ASSERT_EQUAL(memcmp(user->p, "emg", 3), 0);
  CU_ASSERT_PTR_NULL(cimd2_get(&p, CIMD2_P_WINDOW));
  /* The same without a checksum: taken, and said so. */
  len = packet(buf, sizeof buf, "01:001\t010:emg\t011:secret\t", false);
  CU_ASSERT_EQUAL(cimd2_decode((const uint8_t *)buf, len, &p), 0);
  CU_ASSERT_FALSE(p.checksum);
  CU_ASSERT_EQUAL(p.n_params, 2);
}

static void test_checksum_and_syntax(void)
{
  char buf[256];
  size_t len = packet(buf, sizeof buf, "03:003\t021:4917012345\t033:hello\t", true);
  struct cimd2_packet p;
  CU_ASSERT_EQUAL(cimd2_decode((const uint8_t *)buf, len, &p), 0);
  buf[len - 2] = buf[len - 2] == '0' ? '1' : '0';   /* a wrong checksum: the header still read */
  CU_ASSERT_EQUAL(cimd2_decode((const uint8_t *)buf, len, &p), CIMD2_E_CHECKSUM);
  CU_ASSERT_EQUAL(p.op, CIMD2_SUBMIT);
  CU_ASSERT_EQUAL(p.number, 3);
  /* Lowercase hex is taken too. */
  len = packet(buf, sizeof buf, "40:005\t", true);
  for (size_t i = len - 3; i < len - 1; i++)
    if (buf[i] >= 'A' && buf[i] <= 'F')
      buf[i] = (char)(buf[i] - 'A' + 'a');
  CU_ASSERT_EQUAL(cimd2_decode((const uint8_t *)buf, len, &p), 0);
  CU_ASSERT_EQUAL(p.op, CIMD2_ALIVE);
  static const char *const bad[] = {
    "\x02" "03:003\t21:49\t\x03",           /* a two-digit parameter code */
    "\x02" "03:003\t021 49\t\x03",          /* no ':' */
    "\x02" "03:003\t021:49\tZZ\x03",        /* a checksum that is no hex */
    "\x02" "03:003\t021:49\t123\x03",       /* three characters after the last TAB */
    "\x02" "03:003\t021:49\x03",            /* a parameter without its TAB */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CU_ASSERT_EQUAL(cimd2_decode((const uint8_t *)bad[i], strlen(bad[i]), &p), CIMD2_E_SYNTAX);
  static const char *const headers[] = { "\x02" "3:003\t\x03", "\x02" "03-003\t\x03", "\x02" "03:03\t\t\x03",
                                         "\x02" "03:003\x03" };
  for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++)
    CU_ASSERT_EQUAL(cimd2_decode((const uint8_t *)headers[i], strlen(headers[i]), &p), CIMD2_E_HEADER);
}

static void test_encode_round_trip(void)
{
  struct cimd2_packet p, back;
  char num[24];
  cimd2_packet_init(&p, CIMD2_SUBMIT, 7);
  CU_ASSERT_EQUAL(cimd2_put(&p, CIMD2_P_DESTINATION, "4917012345", 10), 0);
  CU_ASSERT_EQUAL(cimd2_put(&p, CIMD2_P_TEXT, "a:b c", 5), 0);
  CU_ASSERT_EQUAL(cimd2_put_uint(&p, CIMD2_P_STATUS_REPORT_REQUEST, 12, num, sizeof num), 0);
  uint8_t out[256];
  int n = cimd2_encode(&p, out, sizeof out);
  CU_ASSERT_FATAL(n > 0);
  char want[256];
  size_t len = packet(want, sizeof want, "03:007\t021:4917012345\t033:a:b c\t056:12\t", true);
  CU_ASSERT_EQUAL_FATAL((size_t)n, len);
  CU_ASSERT_EQUAL(memcmp(out, want, len), 0);
  CU_ASSERT_EQUAL_FATAL(cimd2_decode(out, (size_t)n, &back), 0);
  CU_ASSERT_EQUAL(back.n_params, 3);
  uint64_t v = 0;
  CU_ASSERT_EQUAL(cimd2_get_uint(&back, CIMD2_P_STATUS_REPORT_REQUEST, 127, &v), 0);
  CU_ASSERT_EQUAL(v, 12);
  CU_ASSERT_EQUAL(cimd2_get_uint(&back, CIMD2_P_STATUS_REPORT_REQUEST, 11, &v), CIMD2_E_SYNTAX);   /* over max */
  CU_ASSERT_EQUAL(cimd2_get_uint(&back, CIMD2_P_TEXT, 1000, &v), CIMD2_E_SYNTAX);
  CU_ASSERT_EQUAL(cimd2_get_uint(&back, CIMD2_P_PID, 1000, &v), -1);
  const struct cimd2_slice *text = cimd2_get(&back, CIMD2_P_TEXT);
  CU_ASSERT_TRUE(text && text->len == 5 && memcmp(text->p, "a:b c", 5) == 0);
  /* Without a checksum; a value with a TAB cannot go; no room. */
  p.checksum = false;
  CU_ASSERT_EQUAL(cimd2_encode(&p, out, sizeof out), (int)len - 2);
  CU_ASSERT_EQUAL(cimd2_encode(&p, out, 10), CIMD2_E_SPACE);
  CU_ASSERT_EQUAL(cimd2_put(&p, CIMD2_P_TEXT, "a\tb", 3), 0);
  CU_ASSERT_EQUAL(cimd2_encode(&p, out, sizeof out), CIMD2_E_INVALID);
  cimd2_packet_init(&p, 100, 1);
  CU_ASSERT_EQUAL(cimd2_encode(&p, out, sizeof out), CIMD2_E_INVALID);
}

static void test_split(void)
{
  char a[128], b[128], stream[512];
  size_t la = packet(a, sizeof a, "40:001\t", true), lb = packet(b, sizeof b, "90:001\t", true);
  size_t skip;
  /* Garbage, then two packets; each byte at a time needs more. */
  size_t n = (size_t)snprintf(stream, sizeof stream, "xy\r\n%s%s", a, b);
  CU_ASSERT_EQUAL(cimd2_split((const uint8_t *)stream, n, CIMD2_FRAME_MAX, &skip), CIMD2_E_GARBAGE);
  CU_ASSERT_EQUAL(skip, 4);
  CU_ASSERT_EQUAL(cimd2_split((const uint8_t *)stream + 4, n - 4, CIMD2_FRAME_MAX, &skip), (int)la);
  CU_ASSERT_EQUAL(cimd2_split((const uint8_t *)stream + 4 + la, n - 4 - la, CIMD2_FRAME_MAX, &skip), (int)lb);
  for (size_t k = 1; k < la; k++)
    CU_ASSERT_EQUAL(cimd2_split((const uint8_t *)a, k, CIMD2_FRAME_MAX, &skip), 0);
  /* A header that cannot be one is known at its first wrong byte. */
  CU_ASSERT_EQUAL(cimd2_split((const uint8_t *)"\x02" "3x", 3, CIMD2_FRAME_MAX, &skip), CIMD2_E_HEADER);
  CU_ASSERT_EQUAL(skip, 3);
  /* A packet cut short by the next one's STX: dropped up to it. */
  n = (size_t)snprintf(stream, sizeof stream, "\x02" "03:003\t021:49%s", a);
  CU_ASSERT_EQUAL(cimd2_split((const uint8_t *)stream, n, CIMD2_FRAME_MAX, &skip), CIMD2_E_TRUNCATED);
  CU_ASSERT_EQUAL(skip, 14);
  /* No ETX within the bound. */
  memset(stream, 'A', sizeof stream);
  memcpy(stream, "\x02" "03:003\t033:", 12);
  CU_ASSERT_EQUAL(cimd2_split((const uint8_t *)stream, sizeof stream, 100, &skip), CIMD2_E_TOO_LONG);
  CU_ASSERT_EQUAL(skip, sizeof stream);
  CU_ASSERT_EQUAL(cimd2_split((const uint8_t *)stream, 99, 100, &skip), 0);
}

/* Every GSM character and the extension table, written and read back; the
 * spellings of doc/cimd2.md 6.2-6.4. */
static void test_text(void)
{
  uint8_t all[128 + 20], back[256];
  char text[512];
  size_t n = 0;
  for (unsigned c = 0; c < 128; c++)
    if (c != 0x1B)
      all[n++] = (uint8_t)c;
  static const uint8_t extension[] = { 0x0A, 0x14, 0x28, 0x29, 0x2F, 0x3C, 0x3D, 0x3E, 0x40, 0x65 };
  for (size_t i = 0; i < sizeof extension; i++) {
    all[n++] = 0x1B;
    all[n++] = extension[i];
  }
  int len = cimd2_text_encode(text, sizeof text, all, n);
  CU_ASSERT_FATAL(len > 0);
  for (int i = 0; i < len; i++)   /* printable ASCII, LF and CR only: nothing a packet cannot carry */
    CU_ASSERT((text[i] >= 0x20 && text[i] < 0x7F) || text[i] == '\n' || text[i] == '\r');
  CU_ASSERT_EQUAL_FATAL(cimd2_text_decode(back, sizeof back, text, (size_t)len), (int)n);
  CU_ASSERT_EQUAL(memcmp(back, all, n), 0);
  static const struct { const char *text; const char *septets; size_t n; } cases[] = {
    { "_Oa@$", "\x00\x00\x02", 3 },                  /* @ both ways; $ itself */
    { "Hello _XXe5", "Hello \x1b\x65" "5", 9 },          /* the euro */
    { "]}[~", "\x0e\x0f\x5b\x7e", 4 },               /* Scandinavian 7-bit bytes */
    { "_n\"_u\"", "\x7e\x7e", 2 },                     /* ü in Wireshark's and Kannel's spelling */
    { "a_zz_", "a\x11zz\x11", 5 },                     /* a "_" that starts nothing */
    { "_--_qq", "\x11\x22", 2 },                       /* the underscore and the quote */
    { "caf\xe9 \xa3", "caf\x05 \x01", 6 },             /* Latin-1 bytes GSM has */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int got = cimd2_text_decode(back, sizeof back, cases[i].text, strlen(cases[i].text));
    CU_ASSERT_EQUAL(got, (int)cases[i].n);
    CU_ASSERT(got == (int)cases[i].n && memcmp(back, cases[i].septets, cases[i].n) == 0);
  }
  CU_ASSERT_EQUAL(cimd2_text_decode(back, sizeof back, "\xe1", 1), CIMD2_E_INVALID);   /* á: not in GSM */
  CU_ASSERT_EQUAL(cimd2_text_decode(back, 2, "abc", 3), CIMD2_E_SPACE);
  CU_ASSERT_EQUAL(cimd2_text_encode(text, sizeof text, (const uint8_t *)"\x80", 1), CIMD2_E_INVALID);
  CU_ASSERT_EQUAL(cimd2_text_encode(text, 2, (const uint8_t *)"\x00", 1), CIMD2_E_SPACE);
  CU_ASSERT_EQUAL(cimd2_text_encode(text, sizeof text, (const uint8_t *)"\x1b\x65", 2), 4);
  CU_ASSERT_EQUAL(memcmp(text, "_XXe", 4), 0);
}

void suite_cimd2(void);
void suite_cimd2(void)
{
  static const struct test_case cases[] = {
    { "a login decoded, with and without its checksum", test_decode_login },
    { "checksums and syntax errors", test_checksum_and_syntax },
    { "encoded, and decoded back", test_encode_round_trip },
    { "a stream split into packets", test_split },
    { "text: every GSM character, written and read", test_text },
    { NULL, NULL },
  };
  test_add_suite("cimd2", cases);
}
