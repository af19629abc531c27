/* test_smpp_receipt.c - delivery receipt text: parse, format, real-world
 * variants, stat <-> message_state, message id normalisation.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdlib.h>
#include <string.h>
#include "smpp_receipt.h"
#include "testutil.h"

/* doc/smpp.md 8, example 5 */
#define EX5 \
  "id:5f3a9c01 sub:001 dlvrd:001 submit date:2408061430 done date:2408061431 " \
  "stat:DELIVRD err:000 text:Hello world"

#define ALL_FIELDS \
  (SMPP_RCPT_ID | SMPP_RCPT_SUB | SMPP_RCPT_DLVRD | SMPP_RCPT_SUBMIT_DATE | SMPP_RCPT_DONE_DATE | \
   SMPP_RCPT_STAT | SMPP_RCPT_ERR | SMPP_RCPT_TEXT)

/* Parses a C string from an exact-size copy (so over-reads show under ASan). */
static int parse(struct smpp_receipt *r, const char *s)
{
  size_t len = strlen(s);
  char *copy = malloc(len ? len : 1);
  memcpy(copy, s, len);
  int rc = smpp_receipt_parse(r, copy, len);
  /* text points into the copy: keep it only as far as the tests look */
  static char kept[256];
  if (r->text && r->text_len < sizeof kept) {
    memcpy(kept, r->text, r->text_len);
    r->text = kept;
  }
  free(copy);
  return rc;
}

static bool text_is(const struct smpp_receipt *r, const char *s)
{
  return r->text_len == strlen(s) && memcmp(r->text, s, r->text_len) == 0;
}

static void test_parse_example(void)
{
  struct smpp_receipt r;
  CU_ASSERT_EQUAL(parse(&r, EX5), 0);
  CU_ASSERT_EQUAL(r.present, ALL_FIELDS);
  CU_ASSERT_STRING_EQUAL(r.id, "5f3a9c01");
  CU_ASSERT_EQUAL(r.sub, 1);
  CU_ASSERT_EQUAL(r.dlvrd, 1);
  CU_ASSERT_STRING_EQUAL(r.submit_date, "2408061430");
  CU_ASSERT_STRING_EQUAL(r.done_date, "2408061431");
  CU_ASSERT_EQUAL(r.state, SMPP_STATE_DELIVERED);
  CU_ASSERT_EQUAL(r.err, 0);
  CU_ASSERT(text_is(&r, "Hello world"));

  /* node-smpp's SMSC, as captured (text cut at 20 characters) */
  CU_ASSERT_EQUAL(parse(&r, "id:1087269844 sub:001 dlvrd:001 submit date:2611300535 done date:2611300535 "
                            "stat:DELIVRD err:000 text:Net::SMPP test messa"), 0);
  CU_ASSERT_EQUAL(r.present, ALL_FIELDS);
  CU_ASSERT_STRING_EQUAL(r.id, "1087269844");
  CU_ASSERT(text_is(&r, "Net::SMPP test messa"));
}

static void test_format(void)
{
  struct smpp_receipt r = {
    .id = "5f3a9c01", .sub = 1, .dlvrd = 1, .submit_date = "2408061430", .done_date = "2408061431",
    .state = SMPP_STATE_DELIVERED, .err = 0, .text = "Hello world", .text_len = 11,
  };
  char buf[200];
  int n = smpp_receipt_format(buf, sizeof buf, &r);
  CU_ASSERT_EQUAL(n, (int)strlen(EX5));
  CU_ASSERT_STRING_EQUAL(buf, EX5);

  /* what it writes parses back to the same */
  struct smpp_receipt back;
  CU_ASSERT_EQUAL(parse(&back, buf), 0);
  CU_ASSERT_STRING_EQUAL(back.id, r.id);
  CU_ASSERT_EQUAL(back.state, r.state);
  CU_ASSERT_STRING_EQUAL(back.done_date, r.done_date);

  /* text is cut to its first 20 octets; counts and err are zero-padded */
  r.text = "This message is longer than twenty";
  r.text_len = strlen(r.text);
  r.state = SMPP_STATE_UNDELIVERABLE;
  r.dlvrd = 0;
  r.err = 34;
  CU_ASSERT(smpp_receipt_format(buf, sizeof buf, &r) > 0);
  CU_ASSERT_STRING_EQUAL(buf, "id:5f3a9c01 sub:001 dlvrd:000 submit date:2408061430 done date:2408061431 "
                              "stat:UNDELIV err:034 text:This message is long");

  /* counts past three digits are written whole, as %03u did */
  r.sub = 1234;
  r.err = 65535;
  CU_ASSERT(smpp_receipt_format(buf, sizeof buf, &r) > 0);
  CU_ASSERT(strstr(buf, " sub:1234 dlvrd:000 ") != NULL);
  CU_ASSERT(strstr(buf, " err:65535 text:") != NULL);
  r.sub = 1;

  /* no text at all */
  r.text = NULL;
  r.text_len = 0;
  n = smpp_receipt_format(buf, sizeof buf, &r);
  CU_ASSERT(n > 5 && strcmp(buf + n - 5, "text:") == 0);

  /* every capacity short of the text and its NUL fails */
  for (int cap = 0; cap <= n; cap++) {
    char *small = malloc(cap ? (size_t)cap : 1);
    CU_ASSERT_EQUAL(smpp_receipt_format(small, (size_t)cap, &r), SMPP_RECEIPT_ERR_SPACE);
    free(small);
  }
  r.state = 0;
  CU_ASSERT_EQUAL(smpp_receipt_format(buf, sizeof buf, &r), SMPP_RECEIPT_ERR_STATE);
  r.state = 9;
  CU_ASSERT_EQUAL(smpp_receipt_format(buf, sizeof buf, &r), SMPP_RECEIPT_ERR_STATE);
}

static void test_variants(void)
{
  struct smpp_receipt r;

  /* upper-case keys, lower-case stat, the spec's "Text:" */
  CU_ASSERT_EQUAL(parse(&r, "ID:123 SUB:001 DLVRD:001 SUBMIT DATE:2408061430 DONE DATE:2408061431 "
                            "STAT:delivrd ERR:000 Text:abc"), 0);
  CU_ASSERT_EQUAL(r.present, ALL_FIELDS);
  CU_ASSERT_EQUAL(r.state, SMPP_STATE_DELIVERED);
  CU_ASSERT(text_is(&r, "abc"));

  /* missing fields */
  CU_ASSERT_EQUAL(parse(&r, "id:123 stat:UNDELIV err:034"), 0);
  CU_ASSERT_EQUAL(r.present, SMPP_RCPT_ID | SMPP_RCPT_STAT | SMPP_RCPT_ERR);
  CU_ASSERT_EQUAL(r.state, SMPP_STATE_UNDELIVERABLE);
  CU_ASSERT_EQUAL(r.err, 34);
  CU_ASSERT_EQUAL(parse(&r, "stat:EXPIRED"), 0);
  CU_ASSERT_EQUAL(r.present, SMPP_RCPT_STAT);
  CU_ASSERT_EQUAL(parse(&r, "id:77"), 0);
  CU_ASSERT_EQUAL(r.present, SMPP_RCPT_ID);

  /* dates with seconds (12 digits) and beyond (14); 9 or 15 digits are bad */
  CU_ASSERT_EQUAL(parse(&r, "id:1 submit date:240806143059 done date:20240806143100 stat:DELIVRD"), 0);
  CU_ASSERT_STRING_EQUAL(r.submit_date, "240806143059");
  CU_ASSERT_STRING_EQUAL(r.done_date, "20240806143100");
  CU_ASSERT_EQUAL(parse(&r, "id:1 submit date:240806143 done date:202408061431001 stat:DELIVRD"), 0);
  CU_ASSERT_EQUAL(r.present, SMPP_RCPT_ID | SMPP_RCPT_STAT);
  CU_ASSERT_EQUAL(parse(&r, "id:1 submit date:24080614x0 stat:DELIVRD"), 0);
  CU_ASSERT_EQUAL(r.present & SMPP_RCPT_SUBMIT_DATE, 0);

  /* extra spaces, '_' or nothing in the two-word keys, tabs, spaces around ':' */
  CU_ASSERT_EQUAL(parse(&r, "  id:123  sub:001\tdlvrd:001 submit_date:2408061430 donedate:2408061431"
                            "   stat : DELIVRD err: 000 text:x y "), 0);
  CU_ASSERT_EQUAL(r.present, ALL_FIELDS);
  CU_ASSERT_STRING_EQUAL(r.id, "123");
  CU_ASSERT_STRING_EQUAL(r.done_date, "2408061431");
  CU_ASSERT(text_is(&r, "x y "));

  /* unusual order, unknown words, and an empty value before the next key */
  CU_ASSERT_EQUAL(parse(&r, "foo stat:EXPIRED bar:2 err:001 sub: dlvrd:000 id:abc text:hi"), 0);
  CU_ASSERT_EQUAL(r.present, SMPP_RCPT_STAT | SMPP_RCPT_ERR | SMPP_RCPT_DLVRD | SMPP_RCPT_ID | SMPP_RCPT_TEXT);
  CU_ASSERT_EQUAL(r.state, SMPP_STATE_EXPIRED);
  CU_ASSERT_STRING_EQUAL(r.id, "abc");
  CU_ASSERT_EQUAL(r.dlvrd, 0);

  /* text takes the rest, keys and all */
  CU_ASSERT_EQUAL(parse(&r, "id:1 stat:DELIVRD text:stat:UNDELIV id:2"), 0);
  CU_ASSERT_STRING_EQUAL(r.id, "1");
  CU_ASSERT_EQUAL(r.state, SMPP_STATE_DELIVERED);
  CU_ASSERT(text_is(&r, "stat:UNDELIV id:2"));

  /* full state names; an unknown stat is left out */
  CU_ASSERT_EQUAL(parse(&r, "id:1 stat:undeliverable"), 0);
  CU_ASSERT_EQUAL(r.state, SMPP_STATE_UNDELIVERABLE);
  CU_ASSERT_EQUAL(parse(&r, "id:1 stat:DELIVERED"), 0);
  CU_ASSERT_EQUAL(r.state, SMPP_STATE_DELIVERED);
  CU_ASSERT_EQUAL(parse(&r, "id:1 stat:FAILED"), 0);
  CU_ASSERT_EQUAL(r.present, SMPP_RCPT_ID);
  CU_ASSERT_EQUAL(r.state, 0);

  /* a malformed repeat does not undo a good field */
  CU_ASSERT_EQUAL(parse(&r, "id:1 stat:DELIVRD sub:2 stat:DELI)VRD sub:x id:"), 0);
  CU_ASSERT_EQUAL(r.present, SMPP_RCPT_ID | SMPP_RCPT_STAT | SMPP_RCPT_SUB);
  CU_ASSERT_EQUAL(r.state, SMPP_STATE_DELIVERED);
  CU_ASSERT_EQUAL(r.sub, 2);
  CU_ASSERT_STRING_EQUAL(r.id, "1");

  /* counts: decimal only */
  CU_ASSERT_EQUAL(parse(&r, "id:1 sub:1 dlvrd:0x1 err:12a"), 0);
  CU_ASSERT_EQUAL(r.present, SMPP_RCPT_ID | SMPP_RCPT_SUB);
  CU_ASSERT_EQUAL(r.sub, 1);

  /* ids of 64 characters fit, 65 do not */
  char id[100] = "id:";
  memset(id + 3, 'f', 64);
  strcpy(id + 67, " stat:ACCEPTD");
  CU_ASSERT_EQUAL(parse(&r, id), 0);
  CU_ASSERT_EQUAL(strlen(r.id), 64);
  memset(id + 3, 'f', 65);
  strcpy(id + 68, " stat:ACCEPTD");
  CU_ASSERT_EQUAL(parse(&r, id), 0);
  CU_ASSERT_EQUAL(r.present, SMPP_RCPT_STAT);

  /* a NUL ends the text (short_message of SMSCs that add one) */
  const char with_nul[] = "id:9 stat:REJECTD text:ab\0stat:DELIVRD";
  CU_ASSERT_EQUAL(smpp_receipt_parse(&r, with_nul, sizeof with_nul - 1), 0);
  CU_ASSERT_EQUAL(r.state, SMPP_STATE_REJECTED);
  CU_ASSERT_EQUAL(r.text_len, 2);

  /* not a receipt */
  CU_ASSERT_EQUAL(parse(&r, "Hello world"), SMPP_RECEIPT_ERR_FORMAT);
  CU_ASSERT_EQUAL(parse(&r, ""), SMPP_RECEIPT_ERR_FORMAT);
  CU_ASSERT_EQUAL(parse(&r, "sub:001 dlvrd:001 text:id:1"), SMPP_RECEIPT_ERR_FORMAT);
  CU_ASSERT_EQUAL(parse(&r, "id: stat:"), SMPP_RECEIPT_ERR_FORMAT);
  CU_ASSERT_EQUAL(parse(&r, "identity:5 status:DELIVRD"), SMPP_RECEIPT_ERR_FORMAT);
}

static void test_states(void)
{
  static const struct {
    uint8_t state;
    const char *stat;
    bool final;
  } table[] = {
    { 1, "ENROUTE", false }, { 2, "DELIVRD", true }, { 3, "EXPIRED", true },
    { 4, "DELETED", true },  { 5, "UNDELIV", true }, { 6, "ACCEPTD", true },
    { 7, "UNKNOWN", true },  { 8, "REJECTD", true },
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    CU_ASSERT_STRING_EQUAL(smpp_state_stat(table[i].state), table[i].stat);
    CU_ASSERT_EQUAL(smpp_stat_state(table[i].stat, 7), table[i].state);
    CU_ASSERT_EQUAL(smpp_state_final(table[i].state), table[i].final);
  }
  CU_ASSERT_PTR_NULL(smpp_state_stat(0));
  CU_ASSERT_PTR_NULL(smpp_state_stat(9));
  CU_ASSERT_FALSE(smpp_state_final(0));
  CU_ASSERT_FALSE(smpp_state_final(9));
  CU_ASSERT_EQUAL(smpp_stat_state("delivrd", 7), SMPP_STATE_DELIVERED);
  CU_ASSERT_EQUAL(smpp_stat_state("Accepted", 8), SMPP_STATE_ACCEPTED);
  CU_ASSERT_EQUAL(smpp_stat_state("REJECTED", 8), SMPP_STATE_REJECTED);
  CU_ASSERT_EQUAL(smpp_stat_state("DELIVRD", 6), 0);
  CU_ASSERT_EQUAL(smpp_stat_state("DELIVRDX", 8), 0);
  CU_ASSERT_EQUAL(smpp_stat_state("", 0), 0);
}

static void test_msgid(void)
{
  char c[65];
  CU_ASSERT_EQUAL(smpp_msgid_canonical(c, sizeof c, "0000123", 7, false), 3);
  CU_ASSERT_STRING_EQUAL(c, "123");
  CU_ASSERT_EQUAL(smpp_msgid_canonical(c, sizeof c, "7B", 2, true), 3);
  CU_ASSERT_STRING_EQUAL(c, "123");
  smpp_msgid_canonical(c, sizeof c, "007b", 4, true);
  CU_ASSERT_STRING_EQUAL(c, "123");
  smpp_msgid_canonical(c, sizeof c, " 42\t", 4, false);
  CU_ASSERT_STRING_EQUAL(c, "42");
  smpp_msgid_canonical(c, sizeof c, "0", 1, false);
  CU_ASSERT_STRING_EQUAL(c, "0");
  /* not a number in the base: lower case, leading zeros dropped */
  smpp_msgid_canonical(c, sizeof c, "00ABC-def", 9, false);
  CU_ASSERT_STRING_EQUAL(c, "abc-def");
  smpp_msgid_canonical(c, sizeof c, "5F3A9C01", 8, false);
  CU_ASSERT_STRING_EQUAL(c, "5f3a9c01");
  smpp_msgid_canonical(c, sizeof c, "5F3A9C01", 8, true);
  CU_ASSERT_STRING_EQUAL(c, "1597676545");
  /* the edge of 64 bits */
  smpp_msgid_canonical(c, sizeof c, "18446744073709551615", 20, false);
  CU_ASSERT_STRING_EQUAL(c, "18446744073709551615");
  smpp_msgid_canonical(c, sizeof c, "FFFFFFFFFFFFFFFF", 16, true);
  CU_ASSERT_STRING_EQUAL(c, "18446744073709551615");
  smpp_msgid_canonical(c, sizeof c, "018446744073709551616", 21, false);
  CU_ASSERT_STRING_EQUAL(c, "18446744073709551616");
  smpp_msgid_canonical(c, sizeof c, "10000000000000000", 17, true);
  CU_ASSERT_STRING_EQUAL(c, "10000000000000000");
  /* a 64-character id fits 65 octets; the output is bounded */
  char id64[65];
  memset(id64, 'z', 64);
  id64[64] = '\0';
  CU_ASSERT_EQUAL(smpp_msgid_canonical(c, sizeof c, id64, 64, false), 64);
  CU_ASSERT_EQUAL(smpp_msgid_canonical(c, 64, id64, 64, false), SMPP_RECEIPT_ERR_SPACE);
  CU_ASSERT_EQUAL(smpp_msgid_canonical(c, 3, "123", 3, false), SMPP_RECEIPT_ERR_SPACE);
  CU_ASSERT_EQUAL(smpp_msgid_canonical(c, 4, "123", 3, false), 3);

  /* hex in submit_sm_resp, decimal in the receipt, and the other way */
  CU_ASSERT_TRUE(smpp_msgid_match("5f3a9c01", "1597676545"));
  CU_ASSERT_TRUE(smpp_msgid_match("1597676545", "5F3A9C01"));
  CU_ASSERT_TRUE(smpp_msgid_match("40ce6bd4", "1087269844"));
  CU_ASSERT_TRUE(smpp_msgid_match("0001087269844", "1087269844"));
  CU_ASSERT_TRUE(smpp_msgid_match("ABC-1", "abc-1"));
  CU_ASSERT_TRUE(smpp_msgid_match("10", "16")); /* the price of guessing */
  CU_ASSERT_FALSE(smpp_msgid_match("12", "13"));
  CU_ASSERT_FALSE(smpp_msgid_match("abc-1", "abc-2"));
  CU_ASSERT_FALSE(smpp_msgid_match("5f3a9c01", "1597676546"));
  CU_ASSERT_FALSE(smpp_msgid_match("", ""));
  char id65[66];
  memset(id65, 'z', 65);
  id65[65] = '\0';
  CU_ASSERT_FALSE(smpp_msgid_match(id65, id65));
  CU_ASSERT_TRUE(smpp_msgid_match(id64, id64));
}

void suite_smpp_receipt(void);
void suite_smpp_receipt(void)
{
  static const struct test_case cases[] = {
    { "parse the example", test_parse_example },
    { "format", test_format },
    { "real-world variants", test_variants },
    { "stat and message_state", test_states },
    { "message ids", test_msgid },
    { NULL, NULL },
  };
  test_add_suite("smpp_receipt", cases);
}
