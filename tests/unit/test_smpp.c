/* test_smpp.c - SMPP 3.4 PDU codec: doc/smpp.md 8 examples, captured
 * vectors from Kannel, Net::SMPP and node-smpp, building PDUs, TLVs, and
 * malformed input.
 *
 * Input is always decoded from a malloc'ed buffer of exactly the PDU's size,
 * so the sanitizer build catches any read past it.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "smpp_pdu.h"
#include "testutil.h"

/* Large enough for every PDU here, including a 64 KiB message_payload. */
#define OUT_CAP (SMPP_MAX_PDU_DEFAULT)
static uint8_t out[OUT_CAP];

/* Decodes bytes[0..len) and asserts that it decodes, that the splitter finds
 * the same length, and that it re-encodes byte for byte. */
static void roundtrip_bytes(struct smpp_pdu *pdu, const uint8_t *bytes, size_t len)
{
  CU_ASSERT_EQUAL(smpp_split(bytes, len, SMPP_MAX_PDU_DEFAULT), (int)len);
  int rc = smpp_pdu_decode(pdu, bytes, len);
  CU_ASSERT_EQUAL_FATAL(rc, SMPP_OK);
  int n = smpp_pdu_encode(pdu, out, sizeof out);
  CU_ASSERT_EQUAL(n, (int)len);
  CU_ASSERT(n == (int)len && memcmp(out, bytes, len) == 0);
}

/* The same from hex; returns the exact-size buffer the PDU's pointers refer
 * to (the caller frees it after its asserts). */
static uint8_t *roundtrip_hex(struct smpp_pdu *pdu, const char *hex)
{
  uint8_t *buf;
  int len = test_unhex(hex, &buf);
  CU_ASSERT_FATAL(len >= SMPP_HEADER_LEN);
  roundtrip_bytes(pdu, buf, (size_t)len);
  return buf;
}

/* Hex of a hand-made PDU into an exact-size buffer, command_length set to
 * its size (so a test of a field need not count octets). Returns the size. */
static int unhex_pdu(const char *hex, uint8_t **buf)
{
  int len = test_unhex(hex, buf);
  CU_ASSERT_FATAL(len >= 4);
  (*buf)[0] = (uint8_t)(len >> 24);
  (*buf)[1] = (uint8_t)(len >> 16);
  (*buf)[2] = (uint8_t)(len >> 8);
  (*buf)[3] = (uint8_t)len;
  return len;
}

/* Decodes a hand-made PDU that must fail; returns the error (the header
 * stays in *pdu). */
static int decode_bad(struct smpp_pdu *pdu, const char *hex, bool fix_length)
{
  uint8_t *buf;
  int len = fix_length ? unhex_pdu(hex, &buf) : test_unhex(hex, &buf);
  CU_ASSERT_FATAL(len >= 0);
  int rc = smpp_pdu_decode(pdu, buf, (size_t)len);
  free(buf);
  return rc;
}

/* Encodes *pdu and asserts the result is exactly hex. */
static void assert_encodes_to(const struct smpp_pdu *pdu, const char *hex)
{
  uint8_t *want;
  int len = test_unhex(hex, &want);
  CU_ASSERT_FATAL(len > 0);
  int n = smpp_pdu_encode(pdu, out, sizeof out);
  CU_ASSERT_EQUAL(n, len);
  CU_ASSERT(n == len && memcmp(out, want, (size_t)len) == 0);
  free(want);
}

static bool octets_are(const uint8_t *data, size_t len, const char *s)
{
  return len == strlen(s) && memcmp(data, s, len) == 0;
}

/* ---- doc/smpp.md 8 ---- */

#define EX1_BIND_TRX \
  "0000002a000000090000000000000001736d7070636c69656e74310070617373776f7264000034000000"
#define EX3_SUBMIT_SM \
  "0000003e000000040000000000000002000500476174657761790001013331363132333435363738" \
  "000000000000010000000b48656c6c6f20776f726c64"
#define EX5_RECEIPT_TEXT \
  "id:5f3a9c01 sub:001 dlvrd:001 submit date:2408061430 done date:2408061431 " \
  "stat:DELIVRD err:000 text:Hello world"
#define EX5_DELIVER_SM \
  "000000b4000000050000000000000007000101333136313233343536373800050047617465776179" \
  "000400000000000000006f69643a3566336139633031207375623a30303120646c7672643a303031" \
  "207375626d697420646174653a3234303830363134333020646f6e6520646174653a323430383036" \
  "3134333120737461743a44454c49565244206572723a30303020746578743a48656c6c6f20776f72" \
  "6c64001e00093566336139633031000427000102"

static void test_example_bind(void)
{
  struct smpp_pdu p;
  uint8_t *buf = roundtrip_hex(&p, EX1_BIND_TRX);
  CU_ASSERT_EQUAL(p.command_id, SMPP_BIND_TRANSCEIVER);
  CU_ASSERT_EQUAL(p.sequence_number, 1);
  CU_ASSERT_STRING_EQUAL(p.body.bind.system_id, "smppclient1");
  CU_ASSERT_STRING_EQUAL(p.body.bind.password, "password");
  CU_ASSERT_STRING_EQUAL(p.body.bind.system_type, "");
  CU_ASSERT_EQUAL(p.body.bind.interface_version, SMPP_VERSION_34);
  CU_ASSERT_EQUAL(p.body.bind.addr_ton, 0);
  CU_ASSERT_EQUAL(p.body.bind.addr_npi, 0);
  CU_ASSERT_STRING_EQUAL(p.body.bind.address_range, "");
  CU_ASSERT_EQUAL(p.tlv.count, 0);
  free(buf);

  /* example 2: OK with sc_interface_version; the failure with a NUL system_id */
  buf = roundtrip_hex(&p, "0000001a 80000009 00000000 00000001 534d534300 0210 0001 34");
  CU_ASSERT_EQUAL(p.command_id, SMPP_BIND_TRANSCEIVER_RESP);
  CU_ASSERT_STRING_EQUAL(p.body.bind_resp.system_id, "SMSC");
  CU_ASSERT_EQUAL(p.tlv.present, SMPP_TLV_BIT(sc_interface_version));
  CU_ASSERT_EQUAL(p.tlv.sc_interface_version, 0x34);
  CU_ASSERT_EQUAL(p.tlv.count, 1);
  CU_ASSERT_EQUAL(p.tlv.list[0].tag, SMPP_TAG_sc_interface_version);
  free(buf);
  buf = roundtrip_hex(&p, "00000011 80000009 0000000e 00000001 00");
  CU_ASSERT_EQUAL(p.command_status, SMPP_ESME_RINVPASWD);
  CU_ASSERT_FALSE(p.omit_body);
  CU_ASSERT_STRING_EQUAL(p.body.bind_resp.system_id, "");
  free(buf);

  /* cloudhopper's bind_transceiver */
  buf = roundtrip_hex(&p, "00000023000000090000000000039951414c4c5f545700414c4c5f5457000034010200");
  CU_ASSERT_EQUAL(p.sequence_number, 0x39951);
  CU_ASSERT_STRING_EQUAL(p.body.bind.system_id, "ALL_TW");
  CU_ASSERT_STRING_EQUAL(p.body.bind.password, "ALL_TW");
  CU_ASSERT_EQUAL(p.body.bind.interface_version, 0x34);
  CU_ASSERT_EQUAL(p.body.bind.addr_ton, 1);
  CU_ASSERT_EQUAL(p.body.bind.addr_npi, 2);
  free(buf);
}

static void test_example_submit(void)
{
  struct smpp_pdu p;
  uint8_t *buf = roundtrip_hex(&p, EX3_SUBMIT_SM);
  const struct smpp_sm *sm = &p.body.sm;
  CU_ASSERT_EQUAL(p.command_id, SMPP_SUBMIT_SM);
  CU_ASSERT_EQUAL(p.sequence_number, 2);
  CU_ASSERT_STRING_EQUAL(sm->service_type, "");
  CU_ASSERT_EQUAL(sm->source_addr_ton, 5);
  CU_ASSERT_EQUAL(sm->source_addr_npi, 0);
  CU_ASSERT_STRING_EQUAL(sm->source_addr, "Gateway");
  CU_ASSERT_EQUAL(sm->dest_addr_ton, 1);
  CU_ASSERT_EQUAL(sm->dest_addr_npi, 1);
  CU_ASSERT_STRING_EQUAL(sm->destination_addr, "31612345678");
  CU_ASSERT_EQUAL(sm->esm_class, 0);
  CU_ASSERT_EQUAL(sm->registered_delivery, SMPP_REGDLV_RECEIPT_FINAL);
  CU_ASSERT_EQUAL(sm->data_coding, 0);
  CU_ASSERT(octets_are(sm->short_message, sm->sm_length, "Hello world"));
  /* short_message points into the input, not into a copy */
  CU_ASSERT_PTR_EQUAL(sm->short_message, buf + 0x33);
  free(buf);

  /* example 4: the response, and the throttled header-only one */
  buf = roundtrip_hex(&p, "00000019 80000004 00000000 00000002 3566336139633031 00");
  CU_ASSERT_STRING_EQUAL(p.body.sm_resp.message_id, "5f3a9c01");
  free(buf);
  buf = roundtrip_hex(&p, "00000010 80000004 00000058 00000004");
  CU_ASSERT_EQUAL(p.command_status, SMPP_ESME_RTHROTTLED);
  CU_ASSERT_EQUAL(p.sequence_number, 4);
  CU_ASSERT_TRUE(p.omit_body);
  CU_ASSERT_STRING_EQUAL(p.body.sm_resp.message_id, "");
  CU_ASSERT_EQUAL(p.tlv.count, 0);
  free(buf);

  /* example 8: part 1/2 with a UDH */
  buf = roundtrip_hex(&p, "00000046 00000004 00000000 00000005 00 05 00 4761746577617900 01 01"
                          "333136313233343536373800 40 00 00 00 00 01 00 00 00 13 0500032a0201"
                          "50617274206f6e652074657874");
  CU_ASSERT_EQUAL(sm->esm_class, SMPP_ESM_UDHI);
  CU_ASSERT_EQUAL(sm->sm_length, 19);
  CU_ASSERT_EQUAL(memcmp(sm->short_message, "\x05\x00\x03\x2a\x02\x01Part one text", 19), 0);
  free(buf);

  /* example 9: UCS2 */
  buf = roundtrip_hex(&p, "0000003f 00000004 00000000 00000006 00 05 00 4761746577617900 01 01"
                          "333136313233343536373800 00 00 00 00 00 00 00 08 00 0c"
                          "041f04400438043204350442");
  CU_ASSERT_EQUAL(sm->data_coding, 8);
  CU_ASSERT_EQUAL(sm->sm_length, 12);
  CU_ASSERT_EQUAL(memcmp(sm->short_message, "\x04\x1f\x04\x40\x04\x38\x04\x32\x04\x35\x04\x42", 12), 0);
  free(buf);

  /* cloudhopper's submit_sm */
  buf = roundtrip_hex(&p, "00000039000000040000000000004FE8000101343034303400010134343935313336313932"
                          "3000000000000001000000084024232125262F3A");
  CU_ASSERT_EQUAL(p.sequence_number, 0x4FE8);
  CU_ASSERT_STRING_EQUAL(sm->source_addr, "40404");
  CU_ASSERT_STRING_EQUAL(sm->destination_addr, "44951361920");
  CU_ASSERT_EQUAL(sm->source_addr_ton, 1);
  CU_ASSERT_EQUAL(sm->dest_addr_npi, 1);
  CU_ASSERT(octets_are(sm->short_message, sm->sm_length, "@$#!%&/:"));
  free(buf);
}

static void test_example_receipt(void)
{
  struct smpp_pdu p;
  uint8_t *buf = roundtrip_hex(&p, EX5_DELIVER_SM);
  const struct smpp_sm *sm = &p.body.sm;
  CU_ASSERT_EQUAL(p.command_id, SMPP_DELIVER_SM);
  CU_ASSERT_EQUAL(p.sequence_number, 7);
  CU_ASSERT_STRING_EQUAL(sm->source_addr, "31612345678");
  CU_ASSERT_STRING_EQUAL(sm->destination_addr, "Gateway");
  CU_ASSERT_EQUAL(sm->dest_addr_ton, 5);
  CU_ASSERT_EQUAL(sm->esm_class, SMPP_ESM_SMSC_RECEIPT);
  CU_ASSERT_EQUAL(sm->sm_length, 111);
  CU_ASSERT(octets_are(sm->short_message, sm->sm_length, EX5_RECEIPT_TEXT));
  CU_ASSERT_EQUAL(p.tlv.present, SMPP_TLV_BIT(receipted_message_id) | SMPP_TLV_BIT(message_state));
  CU_ASSERT_STRING_EQUAL(p.tlv.receipted_message_id, "5f3a9c01");
  CU_ASSERT_EQUAL(p.tlv.message_state, 2);
  CU_ASSERT_EQUAL(p.tlv.count, 2);
  CU_ASSERT_EQUAL(p.tlv.list[0].typed, SMPP_TLVI_receipted_message_id + 1);
  CU_ASSERT_EQUAL(p.tlv.list[1].tag, SMPP_TAG_message_state);
  CU_ASSERT_EQUAL(p.tlv.list[1].len, 1);
  CU_ASSERT_PTR_EQUAL(p.tlv.list[1].value, buf + 0xb3);
  free(buf);

  /* example 6: its response */
  buf = roundtrip_hex(&p, "00000011 80000005 00000000 00000007 00");
  CU_ASSERT_EQUAL(p.command_id, SMPP_DELIVER_SM_RESP);
  CU_ASSERT_STRING_EQUAL(p.body.sm_resp.message_id, "");
  free(buf);
}

static void test_example_header_only(void)
{
  static const struct {
    const char *hex;
    uint32_t id, status, seq;
  } ex7[] = {
    { "00000010 00000015 00000000 00000003", SMPP_ENQUIRE_LINK, 0, 3 },
    { "00000010 80000015 00000000 00000003", SMPP_ENQUIRE_LINK_RESP, 0, 3 },
    { "00000010 00000006 00000000 0000000a", SMPP_UNBIND, 0, 10 },
    { "00000010 80000000 00000003 00000009", SMPP_GENERIC_NACK, SMPP_ESME_RINVCMDID, 9 },
  };
  for (size_t i = 0; i < sizeof ex7 / sizeof ex7[0]; i++) {
    struct smpp_pdu p;
    uint8_t *buf = roundtrip_hex(&p, ex7[i].hex);
    CU_ASSERT_EQUAL(p.command_id, ex7[i].id);
    CU_ASSERT_EQUAL(p.command_status, ex7[i].status);
    CU_ASSERT_EQUAL(p.sequence_number, ex7[i].seq);
    CU_ASSERT_EQUAL(p.tlv.count, 0);
    free(buf);
  }
}

/* ---- captured vectors ---- */

/* Decodes every vector of a file, checks its label ("name" or
 * "name/0x<status>") and the round trip, and hands each to check(). */
static void for_each_vector(const char *file, void (*check)(const struct test_vector *, const struct smpp_pdu *))
{
  struct test_vector *v;
  int n = test_vectors_load(file, &v);
  CU_ASSERT_FATAL(n > 0);
  for (int i = 0; i < n; i++) {
    struct smpp_pdu p;
    roundtrip_bytes(&p, v[i].bytes, v[i].len);
    char name[64];
    unsigned status = 0;
    snprintf(name, sizeof name, "%s", v[i].label);
    char *slash = strchr(name, '/');
    if (slash) {
      *slash = '\0';
      CU_ASSERT_EQUAL(sscanf(slash + 1, "0x%x", &status), 1);
    }
    const char *got = smpp_command_name(p.command_id);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    CU_ASSERT_STRING_EQUAL(got, name);
    CU_ASSERT_EQUAL(p.command_status, status);
    check(&v[i], &p);
  }
  test_vectors_free(v, n);
}

/* The seven message variants Kannel sent (tests/data/vectors/README.md). */
static const struct {
  const char *dst;
  uint8_t src_ton, src_npi;
  const char *src;
  uint8_t esm_class, data_coding, protocol_id;
  const char *validity;
  const char *text; /* NULL: binary, checked by the test */
} kannel_variants[] = {
  { "4790000101", 2, 1, "12345", 0x03, 0x00, 0x00, "", "Hello world" },
  { "4790000102", 5, 0, "Harness", 0x03, 0x00, 0x00, "", "Alphanumeric sender" },
  { "4790000103", 1, 1, "4712345678", 0x03, 0x00, 0x00, "", "International sender" },
  { "4790000104", 2, 1, "12345", 0x03, 0x08, 0x00, "", NULL },
  { "4790000105", 2, 1, "12345", 0x43, 0x04, 0x00, "", NULL },
  { "4790000106", 2, 1, "12345", 0x03, 0xF0, 0x00, "", "Flash message" },
  { "4790000107", 2, 1, "12345", 0x03, 0x00, 0x41, "261130063530000+", "Validity and PID" },
};
static unsigned kannel_seen;

static void check_kannel(const struct test_vector *v, const struct smpp_pdu *p)
{
  if (p->command_id == SMPP_BIND_TRANSCEIVER) {
    CU_ASSERT_STRING_EQUAL(p->body.bind.system_id, "kannel");
    CU_ASSERT_STRING_EQUAL(p->body.bind.password, "kannel");
    CU_ASSERT_EQUAL(p->body.bind.interface_version, 0x34);
  } else if (p->command_id == SMPP_DELIVER_SM_RESP) {
    CU_ASSERT_STRING_EQUAL(p->body.sm_resp.message_id, "");
  } else if (p->command_id == SMPP_SUBMIT_SM) {
    const struct smpp_sm *sm = &p->body.sm;
    size_t i = 0;
    while (i < sizeof kannel_variants / sizeof kannel_variants[0] &&
           strcmp(kannel_variants[i].dst, sm->destination_addr) != 0)
      i++;
    CU_ASSERT_FATAL(i < sizeof kannel_variants / sizeof kannel_variants[0]);
    kannel_seen |= 1u << i;
    CU_ASSERT_EQUAL(sm->source_addr_ton, kannel_variants[i].src_ton);
    CU_ASSERT_EQUAL(sm->source_addr_npi, kannel_variants[i].src_npi);
    CU_ASSERT_STRING_EQUAL(sm->source_addr, kannel_variants[i].src);
    CU_ASSERT_EQUAL(sm->dest_addr_ton, 2);
    CU_ASSERT_EQUAL(sm->dest_addr_npi, 1);
    CU_ASSERT_EQUAL(sm->esm_class, kannel_variants[i].esm_class);
    CU_ASSERT_EQUAL(sm->data_coding, kannel_variants[i].data_coding);
    CU_ASSERT_EQUAL(sm->protocol_id, kannel_variants[i].protocol_id);
    CU_ASSERT_STRING_EQUAL(sm->validity_period, kannel_variants[i].validity);
    CU_ASSERT_STRING_EQUAL(sm->schedule_delivery_time, "");
    CU_ASSERT_EQUAL(sm->registered_delivery, 1);
    CU_ASSERT_EQUAL(p->tlv.count, 0);
    if (kannel_variants[i].text) {
      CU_ASSERT(octets_are(sm->short_message, sm->sm_length, kannel_variants[i].text));
    } else if (sm->esm_class & SMPP_ESM_UDHI) {
      /* UDH: UDHL 6, IE 05 (16-bit ports) 0B84 <- 23F0 (WAP push), then data */
      CU_ASSERT_EQUAL(sm->sm_length, 11);
      CU_ASSERT_EQUAL(memcmp(sm->short_message, "\x06\x05\x04\x0b\x84\x23\xf0\xc0\xff\x00\x01", 11), 0);
    } else {
      /* UCS2 "Привет €" */
      CU_ASSERT_EQUAL(sm->sm_length, 16);
      CU_ASSERT_EQUAL(memcmp(sm->short_message, "\x04\x1f\x04\x40\x04\x38\x04\x32\x04\x35\x04\x42\x00\x20\x20\xac", 16), 0);
    }
  } else {
    CU_ASSERT_EQUAL(p->command_id, SMPP_UNBIND);
  }
  CU_ASSERT_EQUAL(p->sequence_number, v->bytes[15]);
}

static void test_vectors_kannel(void)
{
  kannel_seen = 0;
  for_each_vector("smpp-kannel-smpp-client.hex", check_kannel);
  CU_ASSERT_EQUAL(kannel_seen, 0x7F);
}

/* Net::SMPP and node-smpp as ESMEs send the same set of PDUs. */
static void check_esme(const struct test_vector *v, const struct smpp_pdu *p, const char *sys_id, const char *text)
{
  if (p->command_id == SMPP_BIND_TRANSCEIVER) {
    CU_ASSERT_STRING_EQUAL(p->body.bind.system_id, sys_id);
    CU_ASSERT_STRING_EQUAL(p->body.bind.password, "pw");
    CU_ASSERT_EQUAL(p->body.bind.interface_version, 0x34);
  } else if (p->command_id == SMPP_SUBMIT_SM) {
    const struct smpp_sm *sm = &p->body.sm;
    char want[64];
    snprintf(want, sizeof want, "%s #%c", text, sm->destination_addr[9]);
    CU_ASSERT_STRING_EQUAL(sm->source_addr, "12345");
    CU_ASSERT_EQUAL(sm->source_addr_ton, 0);
    CU_ASSERT_EQUAL(sm->source_addr_npi, 1);
    CU_ASSERT_NSTRING_EQUAL(sm->destination_addr, "479000000", 9);
    CU_ASSERT_EQUAL(sm->dest_addr_ton, 1);
    CU_ASSERT_EQUAL(sm->registered_delivery, 1);
    CU_ASSERT_EQUAL(sm->data_coding, 0);
    CU_ASSERT(octets_are(sm->short_message, sm->sm_length, want));
  } else if (p->command_id == SMPP_DELIVER_SM_RESP) {
    CU_ASSERT_STRING_EQUAL(p->body.sm_resp.message_id, "");
  } else {
    CU_ASSERT(p->command_id == SMPP_ENQUIRE_LINK || p->command_id == SMPP_UNBIND);
  }
  CU_ASSERT_EQUAL(p->tlv.count, 0);
  CU_ASSERT_EQUAL(p->sequence_number, v->bytes[15]);
}

static void check_perl(const struct test_vector *v, const struct smpp_pdu *p)
{
  check_esme(v, p, "perl", "Net::SMPP test message");
}

static void check_node(const struct test_vector *v, const struct smpp_pdu *p)
{
  check_esme(v, p, "node", "node-smpp test message");
}

static void test_vectors_esmes(void)
{
  for_each_vector("smpp-perl-net-smpp-client.hex", check_perl);
  for_each_vector("smpp-node-smpp-client.hex", check_node);
}

/* node-smpp's SMSC: responses and receipts whose TLV id matches the text. */
static void check_sink(const struct test_vector *v, const struct smpp_pdu *p)
{
  if (p->command_id == SMPP_BIND_TRANSCEIVER_RESP) {
    CU_ASSERT_STRING_EQUAL(p->body.bind_resp.system_id, "SINK");
  } else if (p->command_id == SMPP_SUBMIT_SM_RESP) {
    CU_ASSERT_EQUAL(strlen(p->body.sm_resp.message_id), 10);
    CU_ASSERT_NSTRING_EQUAL(p->body.sm_resp.message_id, "10", 2);
  } else if (p->command_id == SMPP_DELIVER_SM) {
    const struct smpp_sm *sm = &p->body.sm;
    char want[80];
    CU_ASSERT_EQUAL(sm->esm_class, SMPP_ESM_SMSC_RECEIPT);
    CU_ASSERT_STRING_EQUAL(sm->destination_addr, "12345");
    CU_ASSERT_EQUAL(sm->sm_length, 0x7a);
    CU_ASSERT_EQUAL(p->tlv.present, SMPP_TLV_BIT(receipted_message_id) | SMPP_TLV_BIT(message_state));
    CU_ASSERT_EQUAL(p->tlv.message_state, 2);
    snprintf(want, sizeof want, "id:%s ", p->tlv.receipted_message_id);
    CU_ASSERT_EQUAL(memcmp(sm->short_message, want, strlen(want)), 0);
  } else {
    CU_ASSERT(p->command_id == SMPP_ENQUIRE_LINK_RESP || p->command_id == SMPP_UNBIND_RESP);
  }
  CU_ASSERT_EQUAL(p->sequence_number, v->bytes[15]);
}

static void test_vectors_sink(void)
{
  for_each_vector("smpp-node-smpp-sink.hex", check_sink);
}

/* ---- building PDUs ---- */

static void test_build_examples(void)
{
  struct smpp_pdu p;

  smpp_pdu_init(&p, SMPP_BIND_TRANSCEIVER, 1);
  CU_ASSERT_TRUE(SMPP_CSTR_SET(p.body.bind.system_id, "smppclient1"));
  CU_ASSERT_TRUE(SMPP_CSTR_SET(p.body.bind.password, "password"));
  p.body.bind.interface_version = SMPP_VERSION_34;
  assert_encodes_to(&p, EX1_BIND_TRX);

  smpp_pdu_init(&p, SMPP_BIND_TRANSCEIVER_RESP, 1);
  SMPP_CSTR_SET(p.body.bind_resp.system_id, "SMSC");
  p.tlv.sc_interface_version = 0x34;
  p.tlv.present |= SMPP_TLV_BIT(sc_interface_version);
  assert_encodes_to(&p, "0000001a 80000009 00000000 00000001 534d534300 0210 0001 34");
  /* an error goes out as a bare header, body and TLVs left out */
  p.command_status = SMPP_ESME_RINVPASWD;
  assert_encodes_to(&p, "00000010 80000009 0000000e 00000001");
  /* unless asked for the body (example 2's failure form) */
  p.omit_body = false;
  p.tlv.present = 0;
  SMPP_CSTR_SET(p.body.bind_resp.system_id, "");
  assert_encodes_to(&p, "00000011 80000009 0000000e 00000001 00");

  smpp_pdu_init(&p, SMPP_SUBMIT_SM, 2);
  SMPP_CSTR_SET(p.body.sm.source_addr, "Gateway");
  p.body.sm.source_addr_ton = 5;
  SMPP_CSTR_SET(p.body.sm.destination_addr, "31612345678");
  p.body.sm.dest_addr_ton = 1;
  p.body.sm.dest_addr_npi = 1;
  p.body.sm.registered_delivery = 1;
  p.body.sm.short_message = (const uint8_t *)"Hello world";
  p.body.sm.sm_length = 11;
  assert_encodes_to(&p, EX3_SUBMIT_SM);

  smpp_pdu_init(&p, SMPP_SUBMIT_SM_RESP, 2);
  SMPP_CSTR_SET(p.body.sm_resp.message_id, "5f3a9c01");
  assert_encodes_to(&p, "00000019 80000004 00000000 00000002 3566336139633031 00");
  smpp_pdu_init(&p, SMPP_SUBMIT_SM_RESP, 4);
  p.command_status = SMPP_ESME_RTHROTTLED;
  assert_encodes_to(&p, "00000010 80000004 00000058 00000004");

  /* deliver_sm_resp keeps its (NULL) body on error: SMPP 3.4 does not drop it */
  smpp_pdu_init(&p, SMPP_DELIVER_SM_RESP, 7);
  assert_encodes_to(&p, "00000011 80000005 00000000 00000007 00");
  p.command_status = SMPP_ESME_RX_T_APPN;
  assert_encodes_to(&p, "00000011 80000005 00000064 00000007 00");

  smpp_pdu_init(&p, SMPP_DELIVER_SM, 7);
  SMPP_CSTR_SET(p.body.sm.source_addr, "31612345678");
  p.body.sm.source_addr_ton = 1;
  p.body.sm.source_addr_npi = 1;
  SMPP_CSTR_SET(p.body.sm.destination_addr, "Gateway");
  p.body.sm.dest_addr_ton = 5;
  p.body.sm.esm_class = SMPP_ESM_SMSC_RECEIPT;
  p.body.sm.short_message = (const uint8_t *)EX5_RECEIPT_TEXT;
  p.body.sm.sm_length = (uint8_t)strlen(EX5_RECEIPT_TEXT);
  SMPP_CSTR_SET(p.tlv.receipted_message_id, "5f3a9c01");
  p.tlv.message_state = 2;
  p.tlv.present |= SMPP_TLV_BIT(receipted_message_id) | SMPP_TLV_BIT(message_state);
  assert_encodes_to(&p, EX5_DELIVER_SM);

  smpp_pdu_init(&p, SMPP_GENERIC_NACK, 9);
  p.command_status = SMPP_ESME_RINVCMDID;
  assert_encodes_to(&p, "00000010 80000000 00000003 00000009");
}

/* The other commands: built, encoded, decoded back with the same fields. */
static void test_build_other_commands(void)
{
  struct smpp_pdu p, d;
  int n;

  smpp_pdu_init(&p, SMPP_QUERY_SM, 11);
  SMPP_CSTR_SET(p.body.query_sm.message_id, "abc123");
  p.body.query_sm.source_addr_ton = 1;
  SMPP_CSTR_SET(p.body.query_sm.source_addr, "4712345");
  assert_encodes_to(&p, "0000002100000003000000000000000b 61626331323300 01 00 3437313233343500");

  smpp_pdu_init(&p, SMPP_QUERY_SM_RESP, 11);
  SMPP_CSTR_SET(p.body.query_sm_resp.message_id, "abc123");
  SMPP_CSTR_SET(p.body.query_sm_resp.final_date, "240806143100004+");
  p.body.query_sm_resp.message_state = 2;
  p.body.query_sm_resp.error_code = 7;
  n = smpp_pdu_encode(&p, out, sizeof out);
  CU_ASSERT_EQUAL(n, 16 + 7 + 17 + 2);
  CU_ASSERT_EQUAL(smpp_pdu_decode(&d, out, (size_t)n), SMPP_OK);
  CU_ASSERT_STRING_EQUAL(d.body.query_sm_resp.final_date, "240806143100004+");
  CU_ASSERT_EQUAL(d.body.query_sm_resp.message_state, 2);
  CU_ASSERT_EQUAL(d.body.query_sm_resp.error_code, 7);
  p.command_status = SMPP_ESME_RQUERYFAIL; /* bare on error */
  CU_ASSERT_EQUAL(smpp_pdu_encode(&p, out, sizeof out), 16);

  smpp_pdu_init(&p, SMPP_DATA_SM, 12);
  SMPP_CSTR_SET(p.body.data_sm.source_addr, "1234567890123456789012345678901234567890"); /* > C21, fine in C65 */
  SMPP_CSTR_SET(p.body.data_sm.destination_addr, "4790000001");
  p.body.data_sm.data_coding = 4;
  p.tlv.message_payload = (struct smpp_octets){ (const uint8_t *)"\x01\x02\x03", 3 };
  p.tlv.source_port = 0x23F0;
  p.tlv.destination_port = 0x0B84;
  p.tlv.present |= SMPP_TLV_BIT(message_payload) | SMPP_TLV_BIT(source_port) | SMPP_TLV_BIT(destination_port);
  n = smpp_pdu_encode(&p, out, sizeof out);
  CU_ASSERT_EQUAL(n, 16 + 1 + 2 + 41 + 2 + 11 + 3 + (4 + 2) * 2 + 4 + 3);
  CU_ASSERT_EQUAL(smpp_pdu_decode(&d, out, (size_t)n), SMPP_OK);
  CU_ASSERT_STRING_EQUAL(d.body.data_sm.source_addr, p.body.data_sm.source_addr);
  CU_ASSERT_EQUAL(d.body.data_sm.data_coding, 4);
  CU_ASSERT_EQUAL(d.tlv.present, p.tlv.present);
  CU_ASSERT_EQUAL(d.tlv.source_port, 0x23F0);
  CU_ASSERT_EQUAL(d.tlv.destination_port, 0x0B84);
  CU_ASSERT_EQUAL(d.tlv.message_payload.len, 3);
  CU_ASSERT_EQUAL(memcmp(d.tlv.message_payload.data, "\x01\x02\x03", 3), 0);
  /* typed fields not in a list go out in smpp_pdu.def order */
  CU_ASSERT_EQUAL(d.tlv.list[0].tag, SMPP_TAG_source_port);
  CU_ASSERT_EQUAL(d.tlv.list[1].tag, SMPP_TAG_destination_port);
  CU_ASSERT_EQUAL(d.tlv.list[2].tag, SMPP_TAG_message_payload);

  smpp_pdu_init(&p, SMPP_DATA_SM_RESP, 12);
  SMPP_CSTR_SET(p.body.sm_resp.message_id, "m1");
  p.tlv.delivery_failure_reason = 1;
  p.tlv.present |= SMPP_TLV_BIT(delivery_failure_reason);
  assert_encodes_to(&p, "0000001880000103000000000000000c 6d3100 0425 0001 01");

  smpp_pdu_init(&p, SMPP_OUTBIND, 13);
  SMPP_CSTR_SET(p.body.outbind.system_id, "smsc");
  SMPP_CSTR_SET(p.body.outbind.password, "secret");
  assert_encodes_to(&p, "0000001c0000000b000000000000000d 736d736300 73656372657400");

  smpp_pdu_init(&p, SMPP_ALERT_NOTIFICATION, 14);
  p.body.alert_notification.source_addr_ton = 1;
  SMPP_CSTR_SET(p.body.alert_notification.source_addr, "4711");
  SMPP_CSTR_SET(p.body.alert_notification.esme_addr, "esme");
  p.tlv.ms_availability_status = 0;
  p.tlv.present |= SMPP_TLV_BIT(ms_availability_status);
  assert_encodes_to(&p, "0000002300000102000000000000000e 0100 3437313100 0000 65736d6500 0422 0001 00");

  smpp_pdu_init(&p, SMPP_CANCEL_SM, 15);
  SMPP_CSTR_SET(p.body.cancel_sm.message_id, "42");
  SMPP_CSTR_SET(p.body.cancel_sm.source_addr, "1");
  SMPP_CSTR_SET(p.body.cancel_sm.destination_addr, "2");
  assert_encodes_to(&p, "0000001c00000008000000000000000f 00 343200 0000 3100 0000 3200");

  smpp_pdu_init(&p, SMPP_REPLACE_SM, 16);
  SMPP_CSTR_SET(p.body.replace_sm.message_id, "42");
  SMPP_CSTR_SET(p.body.replace_sm.source_addr, "1");
  p.body.replace_sm.short_message = (const uint8_t *)"hi";
  p.body.replace_sm.sm_length = 2;
  assert_encodes_to(&p, "0000001e000000070000000000000010 343200 0000 3100 00 00 00 00 02 6869");

  static const uint32_t header_only[] = {
    SMPP_UNBIND_RESP, SMPP_CANCEL_SM_RESP, SMPP_REPLACE_SM_RESP,
  };
  for (size_t i = 0; i < sizeof header_only / sizeof header_only[0]; i++) {
    smpp_pdu_init(&p, header_only[i], 17);
    CU_ASSERT_EQUAL(smpp_pdu_encode(&p, out, sizeof out), 16);
    CU_ASSERT_EQUAL(smpp_pdu_decode(&d, out, 16), SMPP_OK);
    CU_ASSERT_EQUAL(d.command_id, header_only[i]);
  }

  static const uint32_t binds[][2] = {
    { SMPP_BIND_RECEIVER, SMPP_BIND_RECEIVER_RESP },
    { SMPP_BIND_TRANSMITTER, SMPP_BIND_TRANSMITTER_RESP },
  };
  for (size_t i = 0; i < 2; i++) {
    smpp_pdu_init(&p, binds[i][0], 1);
    SMPP_CSTR_SET(p.body.bind.system_id, "sys");
    SMPP_CSTR_SET(p.body.bind.address_range, "^47");
    n = smpp_pdu_encode(&p, out, sizeof out);
    CU_ASSERT_EQUAL(n, 16 + 4 + 1 + 1 + 3 + 4);
    CU_ASSERT_EQUAL(smpp_pdu_decode(&d, out, (size_t)n), SMPP_OK);
    CU_ASSERT_EQUAL(d.command_id, binds[i][0]);
    CU_ASSERT_STRING_EQUAL(d.body.bind.address_range, "^47");
    smpp_pdu_init(&p, binds[i][1], 1);
    p.command_status = SMPP_ESME_RBINDFAIL;
    CU_ASSERT_EQUAL(smpp_pdu_encode(&p, out, sizeof out), 16);
    CU_ASSERT_EQUAL(smpp_pdu_decode(&d, out, 16), SMPP_OK);
    CU_ASSERT_TRUE(d.omit_body);
  }
}

/* ---- TLVs ---- */

/* deliver_sm with a mix: vendor TLV 0x1400 between receipted_message_id and
 * message_state, then network_error_code, a message_state of the wrong
 * length and an empty vendor TLV. */
#define TLV_MIX_BODY "00 0000 3100 0000 3200 04 000000000000000000"
#define TLV_MIX_TAIL "1400 0004 deadbeef 0427 0001 05 0423 0003 030102 0427 0002 0001 1401 0000"

static void test_tlvs_decode(void)
{
  struct smpp_pdu p;
  uint8_t *buf = roundtrip_hex(&p, "00000049 00000005 00000000 00000001" TLV_MIX_BODY
                                   "001e 0004 61626300" TLV_MIX_TAIL);
  CU_ASSERT_EQUAL(p.tlv.count, 6);
  CU_ASSERT_EQUAL(p.tlv.present, SMPP_TLV_BIT(receipted_message_id) | SMPP_TLV_BIT(message_state) |
                                 SMPP_TLV_BIT(network_error_code));
  CU_ASSERT_STRING_EQUAL(p.tlv.receipted_message_id, "abc");
  CU_ASSERT_EQUAL(p.tlv.message_state, 5);
  CU_ASSERT_EQUAL(p.tlv.network_error_code, 0x030102);
  CU_ASSERT_EQUAL(p.tlv.list[1].tag, 0x1400);
  CU_ASSERT_EQUAL(p.tlv.list[1].typed, 0);
  CU_ASSERT_EQUAL(p.tlv.list[1].len, 4);
  CU_ASSERT_EQUAL(memcmp(p.tlv.list[1].value, "\xde\xad\xbe\xef", 4), 0);
  /* the 2-octet message_state does not fit its type: kept generic only */
  CU_ASSERT_EQUAL(p.tlv.list[4].tag, SMPP_TAG_message_state);
  CU_ASSERT_EQUAL(p.tlv.list[4].typed, 0);
  CU_ASSERT_EQUAL(p.tlv.list[5].len, 0);
  free(buf);

  /* receipted_message_id without its NUL (seen from real SMSCs) is typed;
   * re-encoding writes the NUL, and the rest verbatim */
  const char *no_nul = "00000048 00000005 00000000 00000001" TLV_MIX_BODY "001e 0003 616263" TLV_MIX_TAIL;
  const char *with_nul = "00000049 00000005 00000000 00000001" TLV_MIX_BODY "001e 0004 61626300" TLV_MIX_TAIL;
  uint8_t *in;
  int len = test_unhex(no_nul, &in);
  CU_ASSERT_EQUAL_FATAL(smpp_pdu_decode(&p, in, (size_t)len), SMPP_OK);
  CU_ASSERT_STRING_EQUAL(p.tlv.receipted_message_id, "abc");
  assert_encodes_to(&p, with_nul);
  free(in);

  /* a repeated typed tag: the first is typed, the repeat stays generic (so
   * it re-encodes as it came, not as a copy of the first) */
  buf = roundtrip_hex(&p, "00000038 00000005 00000000 00000001" TLV_MIX_BODY
                          "0427 0001 05 001d 0001 00 0427 0001 07 001d 0002 4100");
  CU_ASSERT_EQUAL(p.tlv.present, SMPP_TLV_BIT(message_state) | SMPP_TLV_BIT(additional_status_info_text));
  CU_ASSERT_EQUAL(p.tlv.message_state, 5);
  CU_ASSERT_STRING_EQUAL(p.tlv.additional_status_info_text, "");
  CU_ASSERT_NOT_EQUAL(p.tlv.list[0].typed, 0);
  CU_ASSERT_EQUAL(p.tlv.list[2].typed, 0);
  CU_ASSERT_EQUAL(p.tlv.list[3].typed, 0);
  free(buf);

  /* a string TLV longer than its maximum stays generic */
  char hex[400] = "00000068 00000005 00000000 00000001" TLV_MIX_BODY "001e 0041";
  for (int i = 0; i < 65; i++)
    strcat(hex, "41");
  buf = roundtrip_hex(&p, hex);
  CU_ASSERT_EQUAL(p.tlv.count, 1);
  CU_ASSERT_EQUAL(p.tlv.present, 0);
  CU_ASSERT_EQUAL(p.tlv.list[0].len, 65);
  free(buf);

  /* a 64 KiB - 1 message_payload, with sm_length 0 */
  size_t big = 16 + 19 + 4 + 65535;
  uint8_t *pdu = malloc(big);
  CU_ASSERT_PTR_NOT_NULL_FATAL(pdu);
  memset(pdu, 'x', big);
  uint8_t *hdr;
  CU_ASSERT_EQUAL_FATAL(test_unhex("00010026 00000004 00000000 00000001" TLV_MIX_BODY "0424 ffff", &hdr), 39);
  memcpy(pdu, hdr, 39);
  free(hdr);
  roundtrip_bytes(&p, pdu, big);
  CU_ASSERT_EQUAL(p.tlv.present, SMPP_TLV_BIT(message_payload));
  CU_ASSERT_EQUAL(p.tlv.message_payload.len, 65535);
  CU_ASSERT_PTR_EQUAL(p.tlv.message_payload.data, pdu + 39);
  free(pdu);
}

static void test_tlvs_edit(void)
{
  struct smpp_pdu p;
  uint8_t *buf = roundtrip_hex(&p, "00000049 00000005 00000000 00000001" TLV_MIX_BODY
                                   "001e 0004 61626300" TLV_MIX_TAIL);
  /* an edited typed field goes out at its place in the list */
  p.tlv.message_state = 2;
  SMPP_CSTR_SET(p.tlv.receipted_message_id, "x");
  assert_encodes_to(&p, "00000047 00000005 00000000 00000001" TLV_MIX_BODY "001e 0002 7800"
                        "1400 0004 deadbeef 0427 0001 02 0423 0003 030102 0427 0002 0001 1401 0000");
  /* a cleared bit drops it; a new typed field and a generic TLV follow */
  p.tlv.present &= ~(SMPP_TLV_BIT(receipted_message_id) | SMPP_TLV_BIT(network_error_code));
  p.tlv.user_message_reference = 0x1234;
  p.tlv.present |= SMPP_TLV_BIT(user_message_reference);
  CU_ASSERT_EQUAL(smpp_tlv_add(&p, 0x1500, (const uint8_t *)"v", 1), SMPP_OK);
  assert_encodes_to(&p, "00000045 00000005 00000000 00000001" TLV_MIX_BODY
                        "1400 0004 deadbeef 0427 0001 02 0427 0002 0001 1401 0000 1500 0001 76"
                        "0204 0002 1234");
  free(buf);

  /* the list holds SMPP_MAX_TLVS */
  smpp_pdu_init(&p, SMPP_SUBMIT_SM, 1);
  for (int i = 0; i < SMPP_MAX_TLVS; i++)
    CU_ASSERT_EQUAL(smpp_tlv_add(&p, (uint16_t)(0x1400 + i), NULL, 0), SMPP_OK);
  CU_ASSERT_EQUAL(smpp_tlv_add(&p, 0x1500, NULL, 0), SMPP_ERR_TLV_COUNT);
  int n = smpp_pdu_encode(&p, out, sizeof out);
  CU_ASSERT_EQUAL(n, 16 + 17 + 4 * SMPP_MAX_TLVS);
  struct smpp_pdu d;
  CU_ASSERT_EQUAL(smpp_pdu_decode(&d, out, (size_t)n), SMPP_OK);
  CU_ASSERT_EQUAL(d.tlv.count, SMPP_MAX_TLVS);
  CU_ASSERT_EQUAL(d.tlv.list[SMPP_MAX_TLVS - 1].tag, 0x1400 + SMPP_MAX_TLVS - 1);
}

/* ---- malformed input ---- */

static void test_split(void)
{
  uint8_t *two;
  int len = test_unhex("00000010 00000015 00000000 00000003  00000010 80000015", &two);
  CU_ASSERT_EQUAL_FATAL(len, 24);
  for (size_t n = 0; n < 16; n++)
    CU_ASSERT_EQUAL(smpp_split(two, n, SMPP_MAX_PDU_DEFAULT), 0);
  CU_ASSERT_EQUAL(smpp_split(two, 16, SMPP_MAX_PDU_DEFAULT), 16);
  CU_ASSERT_EQUAL(smpp_split(two, 24, SMPP_MAX_PDU_DEFAULT), 16);
  CU_ASSERT_EQUAL(smpp_split(two + 16, 8, SMPP_MAX_PDU_DEFAULT), 0);
  free(two);

  static const uint8_t lens[][4] = {
    { 0, 0, 0, 0 }, { 0, 0, 0, 15 }, { 0x80, 0, 0, 0 }, { 0xff, 0xff, 0xff, 0xff },
  };
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
    CU_ASSERT_EQUAL(smpp_split(lens[i], 4, SMPP_MAX_PDU_DEFAULT), SMPP_ERR_CMD_LEN);
  /* the limit is the caller's: known from 4 bytes on, before the PDU is in */
  const uint8_t at_max[4] = { 0, 0x01, 0x10, 0x00 }; /* 69632 */
  const uint8_t above[4] = { 0, 0x01, 0x10, 0x01 };
  CU_ASSERT_EQUAL(smpp_split(at_max, 4, SMPP_MAX_PDU_DEFAULT), 0);
  CU_ASSERT_EQUAL(smpp_split(above, 4, SMPP_MAX_PDU_DEFAULT), SMPP_ERR_CMD_LEN);
  CU_ASSERT_EQUAL(smpp_split(at_max, 4, 1000), SMPP_ERR_CMD_LEN);
  CU_ASSERT_EQUAL(smpp_error_status(SMPP_ERR_CMD_LEN), SMPP_ESME_RINVCMDLEN);
}

static void test_malformed_header(void)
{
  struct smpp_pdu p;
  /* shorter than a header; command_length not the buffer's size */
  CU_ASSERT_EQUAL(decode_bad(&p, "00000010 00000015 00000000 000000", false), SMPP_ERR_CMD_LEN);
  CU_ASSERT_EQUAL(decode_bad(&p, "0000000f 00000015 00000000 00000003", false), SMPP_ERR_CMD_LEN);
  CU_ASSERT_EQUAL(decode_bad(&p, "00000011 00000015 00000000 00000003", false), SMPP_ERR_CMD_LEN);
  CU_ASSERT_EQUAL(decode_bad(&p, "00000010 00000015 00000000 00000003 00", false), SMPP_ERR_CMD_LEN);
  /* every truncation of a real PDU fails without reading past it */
  uint8_t *full;
  int len = test_unhex(EX5_DELIVER_SM, &full);
  for (int n = 0; n < len; n++) {
    uint8_t *cut = malloc(n ? (size_t)n : 1);
    memcpy(cut, full, (size_t)n);
    CU_ASSERT_EQUAL(smpp_split(cut, (size_t)n, SMPP_MAX_PDU_DEFAULT), 0);
    CU_ASSERT_EQUAL(smpp_pdu_decode(&p, cut, (size_t)n), SMPP_ERR_CMD_LEN);
    free(cut);
  }
  free(full);

  /* unknown command_id (submit_multi is not supported): generic_nack
   * RINVCMDID, with the header available for its sequence_number */
  CU_ASSERT_EQUAL(decode_bad(&p, "00000010 00000022 00000000 00000009", false), SMPP_ERR_CMD_ID);
  CU_ASSERT_EQUAL(p.command_id, 0x22);
  CU_ASSERT_EQUAL(p.sequence_number, 9);
  CU_ASSERT_EQUAL(decode_bad(&p, "00000011 00000021 00000000 0000000a 00", false), SMPP_ERR_CMD_ID);
  CU_ASSERT_EQUAL(p.sequence_number, 10);
  CU_ASSERT_EQUAL(smpp_error_status(SMPP_ERR_CMD_ID), SMPP_ESME_RINVCMDID);
}

/* One bad field per line: the error and the command_status it maps to. */
static void test_malformed_fields(void)
{
  static const struct {
    const char *hex;
    int err;
    uint32_t status;
  } bad[] = { /* command_length 0 is set to the size by decode_bad */
    /* bind: system_id of 16 characters (max is 15 + NUL) */
    { "00000000 00000009 00000000 00000001 31323334353637383930313233343536 00 00 00 34 00 00 00",
      SMPP_ERR_SYSTEM_ID, SMPP_ESME_RINVSYSID },
    /* bind: password of 9 */
    { "00000000 00000009 00000000 00000001 7300 313233343536373839 00 00 34 00 00 00",
      SMPP_ERR_PASSWORD, SMPP_ESME_RINVPASWD },
    /* bind: system_type of 13 */
    { "00000000 00000009 00000000 00000001 7300 7000 31323334353637383930313233 00 34 00 00 00",
      SMPP_ERR_SYSTEM_TYPE, SMPP_ESME_RINVSYSTYP },
    /* bind: address_range without its NUL at the end of the PDU */
    { "00000000 00000009 00000000 00000001 7300 7000 00 34 00 00 3437",
      SMPP_ERR_ADDRESS_RANGE, SMPP_ESME_RBINDFAIL },
    /* bind: ends before interface_version */
    { "00000000 00000009 00000000 00000001 7300 7000 00",
      SMPP_ERR_BODY_SHORT, SMPP_ESME_RINVCMDLEN },
    /* submit_sm: service_type of 6 */
    { "00000000 00000004 00000000 00000001 313233343536 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00",
      SMPP_ERR_SERVICE_TYPE, SMPP_ESME_RINVSERTYP },
    /* submit_sm: source_addr of 21 */
    { "00000000 00000004 00000000 00000001 00 0000 313233343536373839303132333435363738393031 00"
      "0000 00 00 00 00 00 00 00 00 00 00 00",
      SMPP_ERR_SOURCE_ADDR, SMPP_ESME_RINVSRCADR },
    /* submit_sm: destination_addr cut by the end of the PDU */
    { "00000000 00000004 00000000 00000001 00 0000 00 0000 3437",
      SMPP_ERR_DEST_ADDR, SMPP_ESME_RINVDSTADR },
    /* submit_sm: schedule_delivery_time of 17 */
    { "00000000 00000004 00000000 00000001 00 0000 00 0000 00 00 00 00"
      "3234303830363134333030303030342b2b 00 00 00 00 00 00 00",
      SMPP_ERR_SCHEDULE, SMPP_ESME_RINVSCHED },
    /* submit_sm: validity_period of 17 */
    { "00000000 00000004 00000000 00000001 00 0000 00 0000 00 00 00 00 00"
      "3234303830363134333030303030342b2b 00 00 00 00 00 00",
      SMPP_ERR_VALIDITY, SMPP_ESME_RINVEXPIRY },
    /* submit_sm: sm_length 5 with 4 octets left */
    { "00000000 00000004 00000000 00000001 00 0000 00 0000 00 00 00 00 00 00 00 00 00 00 05 41424344",
      SMPP_ERR_SM_LENGTH, SMPP_ESME_RINVMSGLEN },
    /* submit_sm: ends before sm_length */
    { "00000000 00000004 00000000 00000001 00 0000 00 0000 00 00 00 00 00 00 00 00 00 00",
      SMPP_ERR_BODY_SHORT, SMPP_ESME_RINVCMDLEN },
    /* submit_sm: 2 octets after the body, too few for a TLV header */
    { "00000000 00000004 00000000 00000001 00 0000 00 0000 00 00 00 00 00 00 00 00 00 00 00 0204",
      SMPP_ERR_TLV_STREAM, SMPP_ESME_RINVOPTPARSTREAM },
    /* submit_sm: TLV length 3 with 2 octets left */
    { "00000000 00000004 00000000 00000001 00 0000 00 0000 00 00 00 00 00 00 00 00 00 00 00 0204 0003 1234",
      SMPP_ERR_TLV_LENGTH, SMPP_ESME_RINVPARLEN },
    /* submit_sm_resp OK without its message_id */
    { "00000000 80000004 00000000 00000001", SMPP_ERR_MESSAGE_ID, SMPP_ESME_RINVMSGID },
    /* submit_sm_resp: message_id of 65 */
    { "00000000 80000004 00000000 00000001"
      "3031323334353637383930313233343536373839303132333435363738393031323334353637383930313233343536373839"
      "303132333435363738393031323334 00",
      SMPP_ERR_MESSAGE_ID, SMPP_ESME_RINVMSGID },
    /* query_sm_resp: final_date of 17 */
    { "00000000 80000003 00000000 00000001 3100 3234303830363134333030303030342b2b 02 00",
      SMPP_ERR_FINAL_DATE, SMPP_ESME_RQUERYFAIL },
    /* alert_notification: esme_addr unterminated */
    { "00000000 00000102 00000000 00000001 0000 00 0000 65",
      SMPP_ERR_DEST_ADDR, SMPP_ESME_RINVDSTADR },
    /* outbind: password unterminated */
    { "00000000 0000000b 00000000 00000001 7300 70", SMPP_ERR_PASSWORD, SMPP_ESME_RINVPASWD },
    /* enquire_link with a stray octet: not a TLV */
    { "00000000 00000015 00000000 00000001 00", SMPP_ERR_TLV_STREAM, SMPP_ESME_RINVOPTPARSTREAM },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct smpp_pdu p;
    int rc = decode_bad(&p, bad[i].hex, true);
    if (rc != bad[i].err)
      fprintf(stderr, "\nmalformed case %zu: got %d (%s), want %d\n", i, rc, smpp_strerror(rc), bad[i].err);
    CU_ASSERT_EQUAL(rc, bad[i].err);
    CU_ASSERT_EQUAL(smpp_error_status(rc), bad[i].status);
    CU_ASSERT_EQUAL(p.sequence_number, 1);
  }

  /* 33 TLVs: one more than kept */
  char hex[800] = "00000000 00000015 00000000 00000001";
  for (int i = 0; i < SMPP_MAX_TLVS + 1; i++)
    strcat(hex, " 1400 0001 00");
  struct smpp_pdu p;
  CU_ASSERT_EQUAL(decode_bad(&p, hex, true), SMPP_ERR_TLV_COUNT);
  CU_ASSERT_EQUAL(smpp_error_status(SMPP_ERR_TLV_COUNT), SMPP_ESME_RINVOPTPARSTREAM);
}

/* ---- encoder limits ---- */

static void test_encode_errors(void)
{
  struct smpp_pdu p;
  uint8_t *want;
  int len = test_unhex(EX5_DELIVER_SM, &want);
  CU_ASSERT_EQUAL_FATAL(smpp_pdu_decode(&p, want, (size_t)len), SMPP_OK);
  /* every capacity short of the PDU fails, writing only inside it */
  for (int cap = 0; cap < len; cap++) {
    uint8_t *buf = malloc(cap ? (size_t)cap : 1);
    CU_ASSERT_EQUAL(smpp_pdu_encode(&p, buf, (size_t)cap), SMPP_ERR_NO_SPACE);
    free(buf);
  }
  CU_ASSERT_EQUAL(smpp_pdu_encode(&p, out, (size_t)len), len);
  CU_ASSERT_EQUAL(memcmp(out, want, (size_t)len), 0);
  free(want);

  /* a string filling its whole array has no NUL: the field's error */
  smpp_pdu_init(&p, SMPP_SUBMIT_SM, 1);
  memset(p.body.sm.destination_addr, '1', sizeof p.body.sm.destination_addr);
  CU_ASSERT_EQUAL(smpp_pdu_encode(&p, out, sizeof out), SMPP_ERR_DEST_ADDR);
  smpp_pdu_init(&p, SMPP_DELIVER_SM, 1);
  memset(p.tlv.receipted_message_id, 'a', sizeof p.tlv.receipted_message_id);
  p.tlv.present = SMPP_TLV_BIT(receipted_message_id);
  CU_ASSERT_EQUAL(smpp_pdu_encode(&p, out, sizeof out), SMPP_ERR_TLV_VALUE);
  CU_ASSERT_EQUAL(smpp_error_status(SMPP_ERR_TLV_VALUE), SMPP_ESME_RINVOPTPARAMVAL);

  smpp_pdu_init(&p, 0x00000021, 1); /* submit_multi: not ours */
  CU_ASSERT_EQUAL(smpp_pdu_encode(&p, out, sizeof out), SMPP_ERR_CMD_ID);

  char s[6];
  CU_ASSERT_TRUE(SMPP_CSTR_SET(s, "12345"));
  CU_ASSERT_FALSE(SMPP_CSTR_SET(s, "123456"));
  CU_ASSERT_STRING_EQUAL(s, "12345");
}

/* ---- names and classes ---- */

static void test_names(void)
{
  CU_ASSERT_STRING_EQUAL(smpp_command_name(SMPP_SUBMIT_SM), "submit_sm");
  CU_ASSERT_STRING_EQUAL(smpp_command_name(SMPP_GENERIC_NACK), "generic_nack");
  CU_ASSERT_STRING_EQUAL(smpp_command_name(SMPP_BIND_TRANSCEIVER_RESP), "bind_transceiver_resp");
  CU_ASSERT_STRING_EQUAL(smpp_command_name(SMPP_DATA_SM_RESP), "data_sm_resp");
  CU_ASSERT_STRING_EQUAL(smpp_command_name(SMPP_ALERT_NOTIFICATION), "alert_notification");
  CU_ASSERT_PTR_NULL(smpp_command_name(0x80000102));
  CU_ASSERT_PTR_NULL(smpp_command_name(0x00000021));

  CU_ASSERT_STRING_EQUAL(smpp_status_name(SMPP_ESME_ROK), "ESME_ROK");
  CU_ASSERT_STRING_EQUAL(smpp_status_name(0x58), "ESME_RTHROTTLED");
  CU_ASSERT_STRING_EQUAL(smpp_status_name(0x0A), "ESME_RINVSRCADR");
  CU_ASSERT_STRING_EQUAL(smpp_status_name(0xC0), "ESME_RINVOPTPARSTREAM");
  CU_ASSERT_STRING_EQUAL(smpp_status_name(0xFE), "ESME_RDELIVERYFAILURE");
  CU_ASSERT_STRING_EQUAL(smpp_status_name(0xFF), "ESME_RUNKNOWNERR");
  CU_ASSERT_PTR_NULL(smpp_status_name(0x09));
  CU_ASSERT_PTR_NULL(smpp_status_name(0x400));

  CU_ASSERT_STRING_EQUAL(smpp_tlv_name(0x0427), "message_state");
  CU_ASSERT_STRING_EQUAL(smpp_tlv_name(0x0501), "ussd_service_op");
  CU_ASSERT_PTR_NULL(smpp_tlv_name(0x1234));

  CU_ASSERT_STRING_EQUAL(smpp_strerror(SMPP_OK), "no error");
  CU_ASSERT_STRING_EQUAL(smpp_strerror(SMPP_ERR_SM_LENGTH), "sm_length runs past the end of the PDU");
  CU_ASSERT_STRING_EQUAL(smpp_strerror(-1000), "unknown SMPP codec error");
  CU_ASSERT_STRING_EQUAL(smpp_strerror(5), "unknown SMPP codec error");
  CU_ASSERT_EQUAL(smpp_error_status(SMPP_OK), SMPP_ESME_ROK);
  CU_ASSERT_EQUAL(smpp_error_status(SMPP_ERR_NO_SPACE), SMPP_ESME_RSYSERR);
  CU_ASSERT_EQUAL(smpp_error_status(-1000), SMPP_ESME_RUNKNOWNERR);
}

static void test_submit_class(void)
{
  CU_ASSERT_EQUAL(smpp_submit_status_class(SMPP_ESME_ROK), SMPP_SUBMIT_OK);
  CU_ASSERT_EQUAL(smpp_submit_status_class(SMPP_ESME_RMSGQFUL), SMPP_SUBMIT_TEMPORARY);
  CU_ASSERT_EQUAL(smpp_submit_status_class(SMPP_ESME_RTHROTTLED), SMPP_SUBMIT_TEMPORARY);
  CU_ASSERT_EQUAL(smpp_submit_status_class(SMPP_ESME_RX_T_APPN), SMPP_SUBMIT_TEMPORARY);
  CU_ASSERT_EQUAL(smpp_submit_status_class(SMPP_ESME_RSYSERR), SMPP_SUBMIT_TEMPORARY);
  CU_ASSERT_EQUAL(smpp_submit_status_class(SMPP_ESME_RINVDSTADR), SMPP_SUBMIT_PERMANENT);
  CU_ASSERT_EQUAL(smpp_submit_status_class(SMPP_ESME_RX_P_APPN), SMPP_SUBMIT_PERMANENT);
  CU_ASSERT_EQUAL(smpp_submit_status_class(SMPP_ESME_RSUBMITFAIL), SMPP_SUBMIT_PERMANENT);
  CU_ASSERT_EQUAL(smpp_submit_status_class(0x401), SMPP_SUBMIT_PERMANENT);
}

void suite_smpp(void);
void suite_smpp(void)
{
  static const struct test_case cases[] = {
    { "2.11 bind examples", test_example_bind },
    { "2.11 submit examples", test_example_submit },
    { "2.11 receipt example", test_example_receipt },
    { "2.11 header-only examples", test_example_header_only },
    { "vectors: Kannel", test_vectors_kannel },
    { "vectors: Net::SMPP and node-smpp ESMEs", test_vectors_esmes },
    { "vectors: node-smpp SMSC", test_vectors_sink },
    { "build the examples", test_build_examples },
    { "build the other commands", test_build_other_commands },
    { "TLVs decoded", test_tlvs_decode },
    { "TLVs edited", test_tlvs_edit },
    { "splitter", test_split },
    { "malformed header", test_malformed_header },
    { "malformed fields", test_malformed_fields },
    { "encoder limits", test_encode_errors },
    { "names", test_names },
    { "submit_sm_resp classes", test_submit_class },
    { NULL, NULL },
  };
  test_add_suite("smpp", cases);
}
