/* test_smpp_proto.c - the SMPP adapter: captured vectors to neutral PDUs,
 * doc/smpp.md 8 examples built from neutral PDUs, round trips of every
 * op, the status, registered_delivery, data_coding and time mappings, sar_*
 * TLVs, and what malformed or unknown PDUs are answered with.
 *
 * Frames are decoded from a malloc'ed copy of exactly their size, so the
 * sanitizer build catches a read past one.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "iobuf.h"
#include "proto.h"
#include "smpp_pdu.h"
#include "smpp_proto.h"
#include "smpp_receipt.h"
#include "sms_text.h"
#include "testutil.h"

static const struct proto_ops *ops = &smpp_proto_ops;
static uint8_t scratch[PROTO_SCRATCH_LEN];
static struct iobuf out;    /* what encode wrote; emptied by each encode() */
static uint8_t *frame;      /* the last decoded frame: the pdu's views point into it */
static size_t frame_len;

/* 2026-11-30 06:35:30 and 05:35:00 UTC: the times in the captured vectors */
#define T_KANNEL_VALIDITY INT64_C(1796020530)
#define T_SINK_RECEIPT INT64_C(1796016900)

static int decode(struct proto_pdu *pdu, const uint8_t *bytes, size_t len)
{
  free(frame);
  frame = malloc(len ? len : 1);
  CU_ASSERT_FATAL(frame != NULL);
  if (len)
    memcpy(frame, bytes, len);
  frame_len = len;
  return ops->decode(pdu, frame, len, scratch, NULL);
}

static int decode_hex(struct proto_pdu *pdu, const char *hex)
{
  uint8_t *bytes;
  int len = test_unhex(hex, &bytes);
  CU_ASSERT_FATAL(len >= 0);
  int rc = decode(pdu, bytes, (size_t)len);
  free(bytes);
  return rc;
}

/* Encodes pdu into out (emptied first); returns what encode returned, and
 * asserts that it is all that was appended. */
static int encode(const struct proto_pdu *pdu)
{
  iobuf_consume(&out, iobuf_len(&out));
  int n = ops->encode(pdu, &out, NULL);
  CU_ASSERT_EQUAL(iobuf_len(&out), n > 0 ? (size_t)n : 0);
  return n;
}

static bool out_is(const char *hex)
{
  uint8_t *want;
  int len = test_unhex(hex, &want);
  CU_ASSERT_FATAL(len > 0);
  bool same = iobuf_len(&out) == (size_t)len && memcmp(iobuf_head(&out), want, (size_t)len) == 0;
  free(want);
  return same;
}

/* Encodes in, checks the splitter finds one whole PDU, decodes it into back. */
static void roundtrip(const struct proto_pdu *in, struct proto_pdu *back)
{
  size_t skip = 1;
  int n = encode(in);
  CU_ASSERT_FATAL(n >= SMPP_HEADER_LEN);
  CU_ASSERT_EQUAL(ops->split(iobuf_head(&out), (size_t)n, NULL, &skip), n);
  CU_ASSERT_EQUAL_FATAL(decode(back, iobuf_head(&out), (size_t)n), 0);
}

/* The codec's view of what encode wrote (its pointers into out). */
static void out_pdu(struct smpp_pdu *p)
{
  CU_ASSERT_EQUAL_FATAL(smpp_pdu_decode(p, iobuf_head(&out), iobuf_len(&out)), SMPP_OK);
}

static bool data_is(const uint8_t *data, size_t len, const void *want, size_t want_len)
{
  return len == want_len && (len == 0 || memcmp(data, want, len) == 0);
}
#define DATA_IS(m, s) data_is((m)->data, (m)->data_len, s, sizeof(s) - 1)
#define UDH_IS(m, s) data_is((m)->udh, (m)->udh_len, s, sizeof(s) - 1)

static bool in_frame(const uint8_t *p)
{
  return p >= frame && p < frame + frame_len;
}

static void set_addr(struct msg_addr *a, const char *addr, uint8_t ton, uint8_t npi)
{
  snprintf(a->addr, sizeof a->addr, "%s", addr);
  a->ton = ton;
  a->npi = npi;
}

static void pdu_init(struct proto_pdu *pdu, enum proto_op op, uint32_t ref)
{
  memset(pdu, 0, sizeof *pdu);
  pdu->op = op;
  pdu->ref = ref;
}

/* The doc/smpp.md 8 submit: "Gateway" (alphanumeric) to 31612345678. */
static void submit_init(struct proto_pdu *pdu, uint32_t ref, const char *text)
{
  pdu_init(pdu, PROTO_OP_SUBMIT, ref);
  set_addr(&pdu->msg.src, "Gateway", MSG_TON_ALPHANUMERIC, 0);
  set_addr(&pdu->msg.dst, "31612345678", MSG_TON_INTERNATIONAL, 1);
  pdu->msg.data = (const uint8_t *)text;
  pdu->msg.data_len = (uint32_t)strlen(text);
}

/* A PDU made with the codec, for input no neutral PDU encodes to. */
static uint8_t wire[SMPP_MAX_PDU_DEFAULT];

static size_t build(const struct smpp_pdu *p)
{
  int n = smpp_pdu_encode(p, wire, sizeof wire);
  CU_ASSERT_FATAL(n >= SMPP_HEADER_LEN);
  return (size_t)n;
}

static void raw_submit(struct smpp_pdu *p, uint32_t command_id, uint32_t seq, const char *text)
{
  smpp_pdu_init(p, command_id, seq);
  SMPP_CSTR_SET(p->body.sm.source_addr, "12345");
  SMPP_CSTR_SET(p->body.sm.destination_addr, "4790000101");
  p->body.sm.short_message = (const uint8_t *)text;
  p->body.sm.sm_length = (uint8_t)strlen(text);
}

/* ---- the adapter ---- */

static void test_ops(void)
{
  CU_ASSERT_STRING_EQUAL(ops->name, "smpp");
  CU_ASSERT_EQUAL(ops->ref_first, 1);
  CU_ASSERT_EQUAL(ops->ref_count, 0x7FFFFFFF);
  CU_ASSERT(ops->window_max >= 100);
  CU_ASSERT_TRUE(ops->has_unbind);
}

/* ---- captured vectors ---- */

static void test_vectors_kannel(void)
{
  struct test_vector *v;
  struct proto_pdu pdu;
  int n = test_vectors_load("smpp-kannel-smpp-client.hex", &v);
  CU_ASSERT_FATAL(n == 16);
  unsigned submits = 0;
  for (int i = 0; i < n; i++) {
    CU_ASSERT_EQUAL_FATAL(decode(&pdu, v[i].bytes, v[i].len), 0);
    const struct msg *m = &pdu.msg;
    if (strcmp(v[i].label, "deliver_sm_resp/0x0") == 0) {
      CU_ASSERT_EQUAL(pdu.op, PROTO_OP_DELIVER_RESP);
      CU_ASSERT_EQUAL(pdu.status, PROTO_OK);
      continue;
    }
    if (strcmp(v[i].label, "submit_sm") != 0)
      continue;
    submits++;
    CU_ASSERT_EQUAL(pdu.op, PROTO_OP_SUBMIT);
    CU_ASSERT_EQUAL(pdu.raw_status, SMPP_SUBMIT_SM_RESP);
    CU_ASSERT_EQUAL(m->dlr_mask, MSG_DLR_DELIVERED | MSG_DLR_FAILED);
    CU_ASSERT_EQUAL(m->dst.ton, 2);
    CU_ASSERT_EQUAL(m->dst.npi, 1);
    switch (pdu.ref) {
    case 2:
      CU_ASSERT_STRING_EQUAL(m->src.addr, "12345");
      CU_ASSERT_STRING_EQUAL(m->dst.addr, "4790000101");
      CU_ASSERT_EQUAL(m->coding, SMS_TEXT_GSM7);
      CU_ASSERT(DATA_IS(m, "Hello world"));
      CU_ASSERT_EQUAL(m->udh_len, 0);
      CU_ASSERT_EQUAL(m->validity, 0);
      break;
    case 3:
      CU_ASSERT_STRING_EQUAL(m->src.addr, "Harness");
      CU_ASSERT_EQUAL(m->src.ton, MSG_TON_ALPHANUMERIC);
      CU_ASSERT_EQUAL(m->src.npi, 0);
      CU_ASSERT(DATA_IS(m, "Alphanumeric sender"));
      break;
    case 4:
      CU_ASSERT_STRING_EQUAL(m->src.addr, "4712345678");
      CU_ASSERT_EQUAL(m->src.ton, MSG_TON_INTERNATIONAL);
      CU_ASSERT_EQUAL(m->src.npi, 1);
      break;
    case 5: /* "Привет €" */
      CU_ASSERT_EQUAL(m->coding, SMS_TEXT_UCS2);
      CU_ASSERT_EQUAL(m->dcs, 0x08);
      CU_ASSERT(DATA_IS(m, "\x04\x1f\x04\x40\x04\x38\x04\x32\x04\x35\x04\x42\x00\x20\x20\xac"));
      break;
    case 6: /* WAP push ports in the UDH, 8-bit data */
      CU_ASSERT_EQUAL(m->coding, SMS_TEXT_8BIT);
      CU_ASSERT(UDH_IS(m, "\x06\x05\x04\x0b\x84\x23\xf0"));
      CU_ASSERT(DATA_IS(m, "\xc0\xff\x00\x01"));
      CU_ASSERT(in_frame(m->udh) && in_frame(m->data));
      break;
    case 7: /* flash: class 0 */
      CU_ASSERT_EQUAL(m->coding, SMS_TEXT_GSM7);
      CU_ASSERT_EQUAL(m->dcs, 0xF0);
      CU_ASSERT(DATA_IS(m, "Flash message"));
      break;
    case 8:
      CU_ASSERT_EQUAL(m->validity, T_KANNEL_VALIDITY);
      CU_ASSERT_EQUAL(m->pid, 0x41);
      CU_ASSERT(DATA_IS(m, "Validity and PID"));
      break;
    default:
      CU_FAIL("unexpected sequence_number");
    }
    /* text that needs no conversion is not copied */
    CU_ASSERT(m->data_len == 0 || in_frame(m->data));
  }
  CU_ASSERT_EQUAL(submits, 7);
  CU_ASSERT_EQUAL(decode(&pdu, v[0].bytes, v[0].len), 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_BIND);
  CU_ASSERT_EQUAL(pdu.bind_mode, PROTO_BIND_TRX);
  CU_ASSERT_STRING_EQUAL(pdu.user, "kannel");
  CU_ASSERT_STRING_EQUAL(pdu.password, "kannel");
  CU_ASSERT_EQUAL(decode(&pdu, v[n - 1].bytes, v[n - 1].len), 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_UNBIND);
  CU_ASSERT_EQUAL(pdu.ref, 9);
  test_vectors_free(v, n);
}

/* What Net::SMPP and node-smpp send uses no option the neutral model
 * drops, so it encodes back byte for byte. */
static void test_vectors_esmes(void)
{
  static const char *const files[] = { "smpp-perl-net-smpp-client.hex",
                                       "smpp-node-smpp-client.hex" };
  for (size_t f = 0; f < 2; f++) {
    struct test_vector *v;
    struct proto_pdu pdu;
    int n = test_vectors_load(files[f], &v);
    CU_ASSERT_FATAL(n == 7);
    for (int i = 0; i < n; i++) {
      CU_ASSERT_EQUAL_FATAL(decode(&pdu, v[i].bytes, v[i].len), 0);
      CU_ASSERT_EQUAL(encode(&pdu), (int)v[i].len);
      CU_ASSERT(iobuf_len(&out) == v[i].len && memcmp(iobuf_head(&out), v[i].bytes, v[i].len) == 0);
    }
    CU_ASSERT_EQUAL(decode(&pdu, v[2].bytes, v[2].len), 0);
    CU_ASSERT_EQUAL(pdu.op, PROTO_OP_SUBMIT);
    CU_ASSERT_STRING_EQUAL(pdu.msg.dst.addr, "4790000000");
    CU_ASSERT_EQUAL(pdu.msg.dlr_mask, MSG_DLR_DELIVERED | MSG_DLR_FAILED);
    CU_ASSERT_EQUAL(pdu.msg.data_len, 25);
    CU_ASSERT_EQUAL(decode(&pdu, v[1].bytes, v[1].len), 0);
    CU_ASSERT_EQUAL(pdu.op, PROTO_OP_KEEPALIVE);
    CU_ASSERT_EQUAL(pdu.ref, 2);
    test_vectors_free(v, n);
  }
}

static void test_vectors_sink(void)
{
  struct test_vector *v;
  struct proto_pdu pdu;
  int n = test_vectors_load("smpp-node-smpp-sink.hex", &v);
  CU_ASSERT_FATAL(n >= 8);
  unsigned receipts = 0;
  for (int i = 0; i < n; i++) {
    CU_ASSERT_EQUAL_FATAL(decode(&pdu, v[i].bytes, v[i].len), 0);
    CU_ASSERT_EQUAL(pdu.status, PROTO_OK);
    if (strcmp(v[i].label, "bind_transceiver_resp/0x0") == 0) {
      CU_ASSERT_EQUAL(pdu.op, PROTO_OP_BIND_RESP);
      CU_ASSERT_EQUAL(pdu.bind_mode, PROTO_BIND_TRX);
      CU_ASSERT_STRING_EQUAL(pdu.user, "SINK");
    } else if (strcmp(v[i].label, "enquire_link_resp/0x0") == 0) {
      CU_ASSERT_EQUAL(pdu.op, PROTO_OP_KEEPALIVE_RESP);
    } else if (strcmp(v[i].label, "unbind_resp/0x0") == 0) {
      CU_ASSERT_EQUAL(pdu.op, PROTO_OP_UNBIND_RESP);
    } else if (strcmp(v[i].label, "submit_sm_resp/0x0") == 0) {
      CU_ASSERT_EQUAL(pdu.op, PROTO_OP_SUBMIT_RESP);
      CU_ASSERT_EQUAL(strlen(pdu.msgid), 10);
      CU_ASSERT_EQUAL(strncmp(pdu.msgid, "10", 2), 0);
    } else {
      CU_ASSERT_STRING_EQUAL(v[i].label, "deliver_sm");
      CU_ASSERT_EQUAL(pdu.op, PROTO_OP_DELIVER);
      CU_ASSERT_TRUE(pdu.is_receipt);
      CU_ASSERT_EQUAL(pdu.receipt.state, MSG_STATE_DELIVERED);
      CU_ASSERT_EQUAL(pdu.receipt.err, 0);
      /* the original message went from 12345 to 479000000x */
      CU_ASSERT_STRING_EQUAL(pdu.receipt.src.addr, "12345");
      CU_ASSERT_EQUAL(strncmp(pdu.receipt.dst.addr, "479000000", 9), 0);
      CU_ASSERT_EQUAL(pdu.receipt.dst.ton, 1);
      CU_ASSERT_EQUAL(pdu.receipt.submit_time, T_SINK_RECEIPT);
      CU_ASSERT_EQUAL(pdu.receipt.done_time, T_SINK_RECEIPT);
      receipts++;
    }
  }
  CU_ASSERT_EQUAL(receipts, 3);
  CU_ASSERT_EQUAL(decode(&pdu, v[4].bytes, v[4].len), 0);
  CU_ASSERT_STRING_EQUAL(pdu.receipt.id, "1087269844");
  CU_ASSERT_EQUAL(pdu.ref, 1);
  test_vectors_free(v, n);
}

/* ---- doc/smpp.md 8, built from neutral PDUs ---- */

static void test_bind(void)
{
  struct proto_pdu pdu, back;
  pdu_init(&pdu, PROTO_OP_BIND, 1);
  pdu.bind_mode = PROTO_BIND_TRX;
  strcpy(pdu.user, "smppclient1");
  strcpy(pdu.password, "password");
  CU_ASSERT_EQUAL(encode(&pdu), 42);
  CU_ASSERT(out_is("0000002a000000090000000000000001736d7070636c69656e74310070617373776f7264"
                   "000034000000"));

  static const struct {
    enum proto_bind_mode mode;
    uint32_t command_id;
  } modes[] = { { PROTO_BIND_TX, SMPP_BIND_TRANSMITTER },
                { PROTO_BIND_RX, SMPP_BIND_RECEIVER },
                { PROTO_BIND_TRX, SMPP_BIND_TRANSCEIVER } };
  for (size_t i = 0; i < 3; i++) {
    struct smpp_pdu p;
    pdu.bind_mode = modes[i].mode;
    pdu.ref = 100 + (uint32_t)i;
    roundtrip(&pdu, &back);
    out_pdu(&p);
    CU_ASSERT_EQUAL(p.command_id, modes[i].command_id);
    CU_ASSERT_EQUAL(back.op, PROTO_OP_BIND);
    CU_ASSERT_EQUAL(back.bind_mode, modes[i].mode);
    CU_ASSERT_EQUAL(back.ref, 100 + i);
    CU_ASSERT_STRING_EQUAL(back.user, "smppclient1");
    CU_ASSERT_STRING_EQUAL(back.password, "password");
    CU_ASSERT_EQUAL(back.raw_status, modes[i].command_id | SMPP_RESP_BIT);
  }

  /* SMPP's limits: 15 characters of system_id, 8 of password */
  strcpy(pdu.user, "sixteen-chars-xx");
  CU_ASSERT(encode(&pdu) < 0);
  strcpy(pdu.user, "user");
  strcpy(pdu.password, "ninechars");
  CU_ASSERT(encode(&pdu) < 0);
  strcpy(pdu.password, "pw");
  pdu.bind_mode = 0;
  CU_ASSERT(encode(&pdu) < 0);
}

static void test_bind_resp(void)
{
  struct proto_pdu pdu, back;
  pdu_init(&pdu, PROTO_OP_BIND_RESP, 1);
  pdu.bind_mode = PROTO_BIND_TRX;
  strcpy(pdu.user, "SMSC");
  CU_ASSERT_EQUAL(encode(&pdu), 26);
  CU_ASSERT(out_is("0000001a 80000009 00000000 00000001 534d534300 0210 0001 34"));
  roundtrip(&pdu, &back);
  CU_ASSERT_EQUAL(back.op, PROTO_OP_BIND_RESP);
  CU_ASSERT_EQUAL(back.status, PROTO_OK);
  CU_ASSERT_STRING_EQUAL(back.user, "SMSC");

  /* refused: the header alone; a wrong password and an unknown account
   * each with its own code, any other refusal RBINDFAIL */
  pdu.bind_mode = PROTO_BIND_TX;
  pdu.status = PROTO_E_AUTH_PASSWORD;
  CU_ASSERT_EQUAL(encode(&pdu), 16);
  CU_ASSERT(out_is("00000010 80000002 0000000e 00000001"));
  pdu.status = PROTO_E_AUTH_ACCOUNT;
  CU_ASSERT_EQUAL(encode(&pdu), 16);
  CU_ASSERT(out_is("00000010 80000002 0000000f 00000001"));
  pdu.status = PROTO_E_AUTH;
  pdu.raw_status = 0;
  roundtrip(&pdu, &back);
  CU_ASSERT(out_is("00000010 80000002 0000000d 00000001"));
  CU_ASSERT_EQUAL(back.op, PROTO_OP_BIND_RESP);
  CU_ASSERT_EQUAL(back.bind_mode, PROTO_BIND_TX);
  CU_ASSERT_EQUAL(back.status, PROTO_E_AUTH);
  CU_ASSERT_EQUAL(back.raw_status, SMPP_ESME_RBINDFAIL);
  /* the bind's own command id echoed in raw_status is not a status */
  pdu.status = PROTO_E_ALREADY_BOUND;
  pdu.raw_status = SMPP_BIND_TRANSMITTER_RESP;
  CU_ASSERT_EQUAL(encode(&pdu), 16);
  CU_ASSERT(out_is("00000010 80000002 00000005 00000001"));
}

static void test_submit_gsm(void)
{
  struct proto_pdu pdu, back;
  submit_init(&pdu, 2, "Hello world");
  pdu.msg.dlr_mask = MSG_DLR_DELIVERED | MSG_DLR_FAILED;
  CU_ASSERT_EQUAL(encode(&pdu), 62);
  CU_ASSERT(out_is("0000003e000000040000000000000002000500476174657761790001013331363132333435363738"
                   "000000000000010000000b48656c6c6f20776f726c64"));
  pdu.msg.pid = 0x41;
  pdu.msg.priority = 2;
  pdu.msg.mms = 1;
  pdu.msg.validity = T_KANNEL_VALIDITY;
  pdu.msg.deferred = -3600;
  roundtrip(&pdu, &back);
  const struct msg *m = &back.msg;
  CU_ASSERT_EQUAL(back.op, PROTO_OP_SUBMIT);
  CU_ASSERT_EQUAL(back.ref, 2);
  CU_ASSERT_STRING_EQUAL(m->src.addr, "Gateway");
  CU_ASSERT_EQUAL(m->src.ton, MSG_TON_ALPHANUMERIC);
  CU_ASSERT_STRING_EQUAL(m->dst.addr, "31612345678");
  CU_ASSERT_EQUAL(m->dst.ton, MSG_TON_INTERNATIONAL);
  CU_ASSERT_EQUAL(m->dst.npi, 1);
  CU_ASSERT_EQUAL(m->coding, SMS_TEXT_GSM7);
  CU_ASSERT_EQUAL(m->dcs, 0);
  CU_ASSERT(DATA_IS(m, "Hello world"));
  CU_ASSERT_EQUAL(m->pid, 0x41);
  CU_ASSERT_EQUAL(m->priority, 2);
  CU_ASSERT_EQUAL(m->mms, 1);
  CU_ASSERT_EQUAL(m->validity, T_KANNEL_VALIDITY);
  CU_ASSERT_EQUAL(m->deferred, -3600);
  CU_ASSERT_EQUAL(m->dlr_mask, MSG_DLR_DELIVERED | MSG_DLR_FAILED);

  /* A '+' before the digits (TON unknown as some clients send it) is not
   * part of the number: the gateway routes and matches on the digits. */
  set_addr(&pdu.msg.dst, "+31612345678", 0, 0);
  roundtrip(&pdu, &back);
  CU_ASSERT_STRING_EQUAL(back.msg.dst.addr, "31612345678");
  CU_ASSERT_EQUAL(back.msg.dst.ton, MSG_TON_INTERNATIONAL);
  CU_ASSERT_EQUAL(back.msg.dst.npi, 1);
  set_addr(&pdu.msg.dst, "+", 0, 0); /* not a number: kept as it came */
  roundtrip(&pdu, &back);
  CU_ASSERT_STRING_EQUAL(back.msg.dst.addr, "+");
  CU_ASSERT_EQUAL(back.msg.dst.ton, 0);

  /* what SMPP cannot carry is refused, not cut */
  set_addr(&pdu.msg.dst, "123456789012345678901", 1, 1);
  CU_ASSERT(encode(&pdu) < 0);
  set_addr(&pdu.msg.dst, "31612345678", 1, 1);
  pdu.msg.validity = INT64_C(3200000000); /* 2071 */
  CU_ASSERT(encode(&pdu) < 0);
}

static void test_submit_ucs2(void)
{
  static const uint8_t privet[] = { 0x04, 0x1f, 0x04, 0x40, 0x04, 0x38,
                                    0x04, 0x32, 0x04, 0x35, 0x04, 0x42 };
  struct proto_pdu pdu, back;
  submit_init(&pdu, 6, "");
  pdu.msg.coding = SMS_TEXT_UCS2;
  pdu.msg.dcs = SMS_TEXT_UCS2;
  pdu.msg.data = privet;
  pdu.msg.data_len = sizeof privet;
  CU_ASSERT_EQUAL(encode(&pdu), 63);
  CU_ASSERT(out_is("0000003f 00000004 00000000 00000006 00 05 00 4761746577617900 01 01"
                   "333136313233343536373800 00 00 00 00 00 00 00 08 00 0c"
                   "041f04400438043204350442"));
  roundtrip(&pdu, &back);
  CU_ASSERT_EQUAL(back.msg.coding, SMS_TEXT_UCS2);
  CU_ASSERT(data_is(back.msg.data, back.msg.data_len, privet, sizeof privet));
  CU_ASSERT_EQUAL(back.msg.dlr_mask, 0);
}

static void test_submit_udh(void)
{
  struct proto_pdu pdu, back;
  static const uint8_t concat[] = { 0x05, 0x00, 0x03, 0x2a, 0x02, 0x01 };
  submit_init(&pdu, 5, "Part one text");
  pdu.msg.udh = concat;
  pdu.msg.udh_len = sizeof concat;
  pdu.msg.dlr_mask = MSG_DLR_DELIVERED | MSG_DLR_FAILED;
  CU_ASSERT_EQUAL(encode(&pdu), 70);
  CU_ASSERT(out_is("00000046 00000004 00000000 00000005 00 05 00 4761746577617900 01 01"
                   "333136313233343536373800 40 00 00 00 00 01 00 00 00 13 0500032a0201"
                   "50617274206f6e652074657874"));
  roundtrip(&pdu, &back);
  CU_ASSERT(UDH_IS(&back.msg, "\x05\x00\x03\x2a\x02\x01"));
  CU_ASSERT(DATA_IS(&back.msg, "Part one text"));

  /* 8-bit with application ports */
  static const uint8_t ports[] = { 0x06, 0x05, 0x04, 0x0b, 0x84, 0x23, 0xf0 };
  static const uint8_t wbxml[] = { 0xc0, 0xff, 0x00, 0x01 };
  pdu.msg.coding = SMS_TEXT_8BIT;
  pdu.msg.dcs = SMS_TEXT_8BIT;
  pdu.msg.udh = ports;
  pdu.msg.udh_len = sizeof ports;
  pdu.msg.data = wbxml;
  pdu.msg.data_len = sizeof wbxml;
  roundtrip(&pdu, &back);
  struct smpp_pdu p;
  out_pdu(&p);
  CU_ASSERT_EQUAL(p.body.sm.data_coding, 4);
  CU_ASSERT_EQUAL(p.body.sm.esm_class, SMPP_ESM_UDHI);
  CU_ASSERT_EQUAL(back.msg.coding, SMS_TEXT_8BIT);
  CU_ASSERT(data_is(back.msg.udh, back.msg.udh_len, ports, sizeof ports));
  CU_ASSERT(data_is(back.msg.data, back.msg.data_len, wbxml, sizeof wbxml));
}

static void test_submit_long(void)
{
  static uint8_t text[1000];
  static const uint8_t udh[] = { 0x04, 0x04, 0x02, 0x10, 0x20 };
  struct proto_pdu pdu, back;
  struct smpp_pdu p;
  for (size_t i = 0; i < sizeof text; i++)
    text[i] = (uint8_t)('a' + i % 26);
  submit_init(&pdu, 7, "");
  pdu.msg.data = text;

  /* 254 octets still fit short_message; 255 go in message_payload */
  pdu.msg.data_len = 254;
  roundtrip(&pdu, &back);
  out_pdu(&p);
  CU_ASSERT_EQUAL(p.body.sm.sm_length, 254);
  CU_ASSERT_FALSE(p.tlv.present & SMPP_TLV_BIT(message_payload));
  pdu.msg.data_len = 255;
  roundtrip(&pdu, &back);
  out_pdu(&p);
  CU_ASSERT_EQUAL(p.body.sm.sm_length, 0);
  CU_ASSERT_EQUAL(p.tlv.message_payload.len, 255);
  CU_ASSERT(data_is(back.msg.data, back.msg.data_len, text, 255));

  /* the UDH goes in front of the text in message_payload too */
  pdu.msg.data_len = sizeof text;
  pdu.msg.udh = udh;
  pdu.msg.udh_len = sizeof udh;
  roundtrip(&pdu, &back);
  out_pdu(&p);
  CU_ASSERT_EQUAL(p.tlv.message_payload.len, sizeof udh + sizeof text);
  CU_ASSERT(data_is(back.msg.udh, back.msg.udh_len, udh, sizeof udh));
  CU_ASSERT(data_is(back.msg.data, back.msg.data_len, text, sizeof text));

  /* message_payload has 16 bits of length */
  static uint8_t huge[65536];
  pdu.msg.udh_len = 0;
  pdu.msg.data = huge;
  pdu.msg.data_len = sizeof huge;
  CU_ASSERT(encode(&pdu) < 0);
}

static void test_submit_resp(void)
{
  struct proto_pdu pdu, back;
  pdu_init(&pdu, PROTO_OP_SUBMIT_RESP, 2);
  strcpy(pdu.msgid, "5f3a9c01");
  CU_ASSERT_EQUAL(encode(&pdu), 25);
  CU_ASSERT(out_is("00000019 80000004 00000000 00000002 3566336139633031 00"));
  roundtrip(&pdu, &back);
  CU_ASSERT_EQUAL(back.op, PROTO_OP_SUBMIT_RESP);
  CU_ASSERT_EQUAL(back.status, PROTO_OK);
  CU_ASSERT_STRING_EQUAL(back.msgid, "5f3a9c01");

  /* throttled: header only; the submit's echoed raw_status is no status */
  pdu.ref = 4;
  pdu.status = PROTO_E_THROTTLED;
  pdu.raw_status = SMPP_SUBMIT_SM_RESP;
  CU_ASSERT_EQUAL(encode(&pdu), 16);
  CU_ASSERT(out_is("00000010 80000004 00000058 00000004"));
  roundtrip(&pdu, &back);
  CU_ASSERT_EQUAL(back.status, PROTO_E_THROTTLED);
  CU_ASSERT_EQUAL(back.raw_status, SMPP_ESME_RTHROTTLED);
  CU_ASSERT_STRING_EQUAL(back.msgid, "");
}

static void test_data_sm(void)
{
  struct smpp_pdu p;
  struct proto_pdu pdu, resp;
  smpp_pdu_init(&p, SMPP_DATA_SM, 77);
  SMPP_CSTR_SET(p.body.data_sm.source_addr, "12345");
  SMPP_CSTR_SET(p.body.data_sm.destination_addr, "4790000101");
  p.body.data_sm.registered_delivery = SMPP_REGDLV_RECEIPT_FAILURE;
  p.tlv.message_payload = (struct smpp_octets){ (const uint8_t *)"payload", 7 };
  p.tlv.present = SMPP_TLV_BIT(message_payload);
  CU_ASSERT_EQUAL_FATAL(decode(&pdu, wire, build(&p)), 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_SUBMIT);
  CU_ASSERT_EQUAL(pdu.ref, 77);
  CU_ASSERT(DATA_IS(&pdu.msg, "payload"));
  CU_ASSERT_EQUAL(pdu.msg.dlr_mask, MSG_DLR_FAILED);

  /* a handler that echoes raw_status gets data_sm_resp */
  pdu_init(&resp, PROTO_OP_SUBMIT_RESP, pdu.ref);
  resp.raw_status = pdu.raw_status;
  strcpy(resp.msgid, "42");
  CU_ASSERT_EQUAL(encode(&resp), 19);
  CU_ASSERT(out_is("00000013 80000103 00000000 0000004d 343200"));
  resp.status = PROTO_E_QUEUE_FULL;
  CU_ASSERT_EQUAL(encode(&resp), 16);
  CU_ASSERT(out_is("00000010 80000103 00000014 0000004d"));

  /* an address beyond the neutral model's room: refused with generic_nack */
  memset(p.body.data_sm.source_addr, '1', 60);
  p.body.data_sm.source_addr[60] = '\0';
  CU_ASSERT(decode(&pdu, wire, build(&p)) < 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_NACK);
  CU_ASSERT_EQUAL(pdu.raw_status, SMPP_ESME_RINVSRCADR);
  CU_ASSERT_EQUAL(pdu.status, PROTO_E_SOURCE);
}

static void test_deliver_mo(void)
{
  struct proto_pdu pdu, back;
  struct smpp_pdu p;
  static const uint8_t udh[] = { 0x05, 0x00, 0x03, 0x07, 0x02, 0x02 };
  submit_init(&pdu, 12, "Reply text");
  pdu.op = PROTO_OP_DELIVER;
  pdu.msg.udh = udh;
  pdu.msg.udh_len = sizeof udh;
  pdu.msg.validity = T_KANNEL_VALIDITY; /* deliver_sm has no times */
  roundtrip(&pdu, &back);
  out_pdu(&p);
  CU_ASSERT_EQUAL(p.command_id, SMPP_DELIVER_SM);
  CU_ASSERT_STRING_EQUAL(p.body.sm.validity_period, "");
  CU_ASSERT_EQUAL(p.body.sm.esm_class, SMPP_ESM_UDHI);
  CU_ASSERT_EQUAL(back.op, PROTO_OP_DELIVER);
  CU_ASSERT_FALSE(back.is_receipt);
  CU_ASSERT_EQUAL(back.ref, 12);
  CU_ASSERT_EQUAL(back.raw_status, SMPP_DELIVER_SM_RESP);
  CU_ASSERT_STRING_EQUAL(back.msg.src.addr, "Gateway");
  CU_ASSERT_STRING_EQUAL(back.msg.dst.addr, "31612345678");
  CU_ASSERT(UDH_IS(&back.msg, "\x05\x00\x03\x07\x02\x02"));
  CU_ASSERT(DATA_IS(&back.msg, "Reply text"));
  CU_ASSERT_EQUAL(back.msg.validity, 0);
  /* times a deliver_sm should not have are ignored, even malformed */
  raw_submit(&p, SMPP_DELIVER_SM, 13, "MO");
  SMPP_CSTR_SET(p.body.sm.validity_period, "99");
  CU_ASSERT_EQUAL_FATAL(decode(&back, wire, build(&p)), 0);
  CU_ASSERT_EQUAL(back.op, PROTO_OP_DELIVER);
  CU_ASSERT_EQUAL(back.msg.validity, 0);

  pdu_init(&pdu, PROTO_OP_DELIVER_RESP, 7);
  CU_ASSERT_EQUAL(encode(&pdu), 17);
  CU_ASSERT(out_is("00000011 80000005 00000000 00000007 00"));
  pdu.status = PROTO_E_TEMPORARY;
  roundtrip(&pdu, &back);
  CU_ASSERT_EQUAL(back.op, PROTO_OP_DELIVER_RESP);
  CU_ASSERT_EQUAL(back.raw_status, SMPP_ESME_RX_T_APPN);
  CU_ASSERT_EQUAL(back.status, PROTO_E_TEMPORARY);
}

static void test_deliver_receipt(void)
{
  struct proto_pdu pdu, back;
  struct smpp_pdu p;
  struct smpp_receipt text;
  pdu_init(&pdu, PROTO_OP_DELIVER, 7);
  pdu.is_receipt = true;
  struct msg_receipt *r = &pdu.receipt;
  strcpy(r->id, "5f3a9c01");
  r->state = MSG_STATE_UNDELIVERABLE;
  r->err = 34;
  r->submit_time = T_SINK_RECEIPT;
  r->done_time = T_SINK_RECEIPT + 60;
  set_addr(&r->src, "Gateway", MSG_TON_ALPHANUMERIC, 0);
  set_addr(&r->dst, "31612345678", MSG_TON_INTERNATIONAL, 1);
  roundtrip(&pdu, &back);

  out_pdu(&p);
  const struct smpp_sm *b = &p.body.sm;
  CU_ASSERT_EQUAL(b->esm_class, SMPP_ESM_SMSC_RECEIPT);
  CU_ASSERT_STRING_EQUAL(b->source_addr, "31612345678");
  CU_ASSERT_EQUAL(b->source_addr_ton, MSG_TON_INTERNATIONAL);
  CU_ASSERT_STRING_EQUAL(b->destination_addr, "Gateway");
  CU_ASSERT_EQUAL(b->data_coding, 0);
  CU_ASSERT_STRING_EQUAL(p.tlv.receipted_message_id, "5f3a9c01");
  CU_ASSERT_EQUAL(p.tlv.message_state, MSG_STATE_UNDELIVERABLE);
  CU_ASSERT_EQUAL(p.tlv.network_error_code, 3u << 16 | 34);
  CU_ASSERT_EQUAL_FATAL(smpp_receipt_parse(&text, (const char *)b->short_message, b->sm_length), 0);
  CU_ASSERT_STRING_EQUAL(text.id, "5f3a9c01");
  CU_ASSERT_EQUAL(text.sub, 1);
  CU_ASSERT_EQUAL(text.dlvrd, 0);
  CU_ASSERT_EQUAL(text.state, MSG_STATE_UNDELIVERABLE);
  CU_ASSERT_EQUAL(text.err, 34);
  CU_ASSERT_STRING_EQUAL(text.submit_date, "2611300535");
  CU_ASSERT_STRING_EQUAL(text.done_date, "2611300536");
  CU_ASSERT(text.present & SMPP_RCPT_TEXT);
  CU_ASSERT_EQUAL(text.text_len, 0);

  CU_ASSERT_EQUAL(back.op, PROTO_OP_DELIVER);
  CU_ASSERT_TRUE(back.is_receipt);
  CU_ASSERT_STRING_EQUAL(back.receipt.id, r->id);
  CU_ASSERT_EQUAL(back.receipt.state, r->state);
  CU_ASSERT_EQUAL(back.receipt.err, r->err);
  CU_ASSERT_EQUAL(back.receipt.submit_time, r->submit_time);
  CU_ASSERT_EQUAL(back.receipt.done_time, r->done_time);
  CU_ASSERT_STRING_EQUAL(back.receipt.src.addr, "Gateway");
  CU_ASSERT_EQUAL(back.receipt.src.ton, MSG_TON_ALPHANUMERIC);
  CU_ASSERT_STRING_EQUAL(back.receipt.dst.addr, "31612345678");
  CU_ASSERT_EQUAL(back.receipt.dst.npi, 1);

  /* delivered, no error, no times: no network_error_code, zero dates */
  r->state = MSG_STATE_DELIVERED;
  r->err = 0;
  r->submit_time = r->done_time = 0;
  roundtrip(&pdu, &back);
  out_pdu(&p);
  CU_ASSERT_FALSE(p.tlv.present & SMPP_TLV_BIT(network_error_code));
  CU_ASSERT_EQUAL_FATAL(smpp_receipt_parse(&text, (const char *)b->short_message, b->sm_length), 0);
  CU_ASSERT_EQUAL(text.dlvrd, 1);
  CU_ASSERT_EQUAL(back.receipt.state, MSG_STATE_DELIVERED);
  CU_ASSERT_EQUAL(back.receipt.submit_time, 0);

  /* not final: an intermediate notification */
  r->state = MSG_STATE_ENROUTE;
  roundtrip(&pdu, &back);
  out_pdu(&p);
  CU_ASSERT_EQUAL(b->esm_class, SMPP_ESM_INTERMEDIATE);
  CU_ASSERT_TRUE(back.is_receipt);
  CU_ASSERT_EQUAL(back.receipt.state, MSG_STATE_ENROUTE);

  r->state = 0;
  CU_ASSERT(encode(&pdu) < 0);
}

/* Receipts read the TLVs first, the text for the rest. */
static void test_receipt_sources(void)
{
  struct smpp_pdu p;
  struct proto_pdu pdu;
  const char *text = "id:0000ABC sub:001 dlvrd:000 submit date:2408061430 done date:240806143107 "
                     "stat:EXPIRED err:012 text:Hello";
  raw_submit(&p, SMPP_DELIVER_SM, 3, text);
  p.body.sm.esm_class = SMPP_ESM_SMSC_RECEIPT;
  CU_ASSERT_EQUAL_FATAL(decode(&pdu, wire, build(&p)), 0);
  CU_ASSERT_TRUE(pdu.is_receipt);
  CU_ASSERT_STRING_EQUAL(pdu.receipt.id, "0000ABC");
  CU_ASSERT_EQUAL(pdu.receipt.state, MSG_STATE_EXPIRED);
  CU_ASSERT_EQUAL(pdu.receipt.err, 12);
  CU_ASSERT_EQUAL(pdu.receipt.submit_time, INT64_C(1722954600));
  CU_ASSERT_EQUAL(pdu.receipt.done_time, INT64_C(1722954667));

  SMPP_CSTR_SET(p.tlv.receipted_message_id, "abc");
  p.tlv.message_state = MSG_STATE_DELIVERED;
  p.tlv.network_error_code = 3u << 16 | 500;
  p.tlv.present = SMPP_TLV_BIT(receipted_message_id) | SMPP_TLV_BIT(message_state) |
                  SMPP_TLV_BIT(network_error_code);
  CU_ASSERT_EQUAL_FATAL(decode(&pdu, wire, build(&p)), 0);
  CU_ASSERT_STRING_EQUAL(pdu.receipt.id, "abc");
  CU_ASSERT_EQUAL(pdu.receipt.state, MSG_STATE_DELIVERED);
  CU_ASSERT_EQUAL(pdu.receipt.err, 500);
  CU_ASSERT_EQUAL(pdu.receipt.submit_time, INT64_C(1722954600));

  /* the id in message_payload when short_message is empty; any receipt bit */
  p.tlv.message_payload = (struct smpp_octets){ (const uint8_t *)"id:77 stat:ACCEPTD", 18 };
  p.tlv.present = SMPP_TLV_BIT(message_payload);
  p.body.sm.sm_length = 0;
  p.body.sm.esm_class = SMPP_ESM_SME_ACK;
  CU_ASSERT_EQUAL_FATAL(decode(&pdu, wire, build(&p)), 0);
  CU_ASSERT_TRUE(pdu.is_receipt);
  CU_ASSERT_STRING_EQUAL(pdu.receipt.id, "77");
  CU_ASSERT_EQUAL(pdu.receipt.state, MSG_STATE_ACCEPTED);

  /* nothing to match it by: refused for good */
  raw_submit(&p, SMPP_DELIVER_SM, 4, "stat:DELIVRD");
  p.body.sm.esm_class = SMPP_ESM_SMSC_RECEIPT;
  CU_ASSERT(decode(&pdu, wire, build(&p)) < 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_DELIVER_RESP);
  CU_ASSERT_EQUAL(pdu.ref, 4);
  CU_ASSERT_EQUAL(pdu.raw_status, SMPP_ESME_RX_P_APPN);
  CU_ASSERT_EQUAL(pdu.status, PROTO_E_PERMANENT);
  CU_ASSERT(pdu.text[0] != '\0');
}

static void test_header_only_ops(void)
{
  static const struct {
    enum proto_op op;
    uint32_t ref;
    enum proto_status status;
    const char *hex;
  } cases[] = {
    { PROTO_OP_KEEPALIVE, 3, PROTO_OK, "00000010 00000015 00000000 00000003" },
    { PROTO_OP_KEEPALIVE_RESP, 3, PROTO_OK, "00000010 80000015 00000000 00000003" },
    { PROTO_OP_UNBIND, 10, PROTO_OK, "00000010 00000006 00000000 0000000a" },
    { PROTO_OP_UNBIND_RESP, 10, PROTO_OK, "00000010 80000006 00000000 0000000a" },
    { PROTO_OP_NACK, 9, PROTO_E_UNSUPPORTED, "00000010 80000000 00000003 00000009" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct proto_pdu pdu, back;
    pdu_init(&pdu, cases[i].op, cases[i].ref);
    pdu.status = cases[i].status;
    roundtrip(&pdu, &back);
    CU_ASSERT(out_is(cases[i].hex));
    CU_ASSERT_EQUAL(back.op, cases[i].op);
    CU_ASSERT_EQUAL(back.ref, cases[i].ref);
    CU_ASSERT_EQUAL(back.status, cases[i].status);
  }
  struct proto_pdu pdu;
  pdu_init(&pdu, PROTO_OP_NONE, 1);
  CU_ASSERT(encode(&pdu) < 0);
  pdu.op = (enum proto_op)(PROTO_OP_REPLACE_RESP + 1);
  CU_ASSERT(encode(&pdu) < 0);
}

/* ---- mappings ---- */

static void test_status_mapping(void)
{
  static const struct {
    uint32_t code;
    enum proto_status status;
  } in[] = {
    { SMPP_ESME_ROK, PROTO_OK },
    { SMPP_ESME_RTHROTTLED, PROTO_E_THROTTLED },
    { SMPP_ESME_RMSGQFUL, PROTO_E_QUEUE_FULL },
    { SMPP_ESME_RSYSERR, PROTO_E_TEMPORARY },
    { SMPP_ESME_RX_T_APPN, PROTO_E_TEMPORARY },
    { SMPP_ESME_RINVPASWD, PROTO_E_AUTH_PASSWORD },
    { SMPP_ESME_RINVSYSID, PROTO_E_AUTH_ACCOUNT },
    { SMPP_ESME_RBINDFAIL, PROTO_E_AUTH },
    { SMPP_ESME_RINVBNDSTS, PROTO_E_BIND_STATE },
    { SMPP_ESME_RALYBND, PROTO_E_ALREADY_BOUND },
    { SMPP_ESME_RINVSRCADR, PROTO_E_SOURCE },
    { SMPP_ESME_RINVDSTADR, PROTO_E_ADDRESS },
    { SMPP_ESME_RINVMSGLEN, PROTO_E_TOO_LONG },
    { SMPP_ESME_RINVCMDID, PROTO_E_UNSUPPORTED },
    { SMPP_ESME_RINVCMDLEN, PROTO_E_CMD_LEN },
    { SMPP_ESME_RX_P_APPN, PROTO_E_PERMANENT },
    { SMPP_ESME_RSUBMITFAIL, PROTO_E_PERMANENT },
    { SMPP_ESME_RINVEXPIRY, PROTO_E_PERMANENT },
    { 0x401, PROTO_E_PERMANENT },
  };
  for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
    CU_ASSERT_EQUAL(smpp_proto_status(in[i].code), in[i].status);

  /* every status SMPP can say comes back as itself, in every response */
  static const enum proto_op resp_ops[] = { PROTO_OP_BIND_RESP, PROTO_OP_SUBMIT_RESP,
                                            PROTO_OP_DELIVER_RESP, PROTO_OP_NACK };
  for (enum proto_status s = PROTO_OK; s <= PROTO_E_SOURCE; s++) {
    if (s == PROTO_E_SYNTAX || s == PROTO_E_CHECKSUM)
      continue;
    for (size_t o = 0; o < 4; o++)
      CU_ASSERT_EQUAL(smpp_proto_status(smpp_proto_command_status(resp_ops[o], s, 0)), s);
  }
  CU_ASSERT_EQUAL(smpp_proto_command_status(PROTO_OP_SUBMIT_RESP, PROTO_E_TEMPORARY, 0),
                  SMPP_ESME_RSYSERR);
  CU_ASSERT_EQUAL(smpp_proto_command_status(PROTO_OP_DELIVER_RESP, PROTO_E_TEMPORARY, 0),
                  SMPP_ESME_RX_T_APPN);
  CU_ASSERT_EQUAL(smpp_proto_command_status(PROTO_OP_SUBMIT_RESP, PROTO_E_PERMANENT, 0),
                  SMPP_ESME_RSUBMITFAIL);
  CU_ASSERT_EQUAL(smpp_proto_command_status(PROTO_OP_DELIVER_RESP, PROTO_E_SYNTAX, 0),
                  SMPP_ESME_RX_P_APPN);
  CU_ASSERT_EQUAL(smpp_proto_command_status(PROTO_OP_BIND_RESP, PROTO_E_PERMANENT, 0),
                  SMPP_ESME_RUNKNOWNERR);
  CU_ASSERT_EQUAL(smpp_proto_command_status(PROTO_OP_BIND_RESP, PROTO_E_AUTH, 0),
                  SMPP_ESME_RBINDFAIL);
  /* raw_status wins when it says the same: specific and vendor codes pass */
  CU_ASSERT_EQUAL(smpp_proto_command_status(PROTO_OP_SUBMIT_RESP, PROTO_E_TEMPORARY,
                                            SMPP_ESME_RX_T_APPN), SMPP_ESME_RX_T_APPN);
  CU_ASSERT_EQUAL(smpp_proto_command_status(PROTO_OP_SUBMIT_RESP, PROTO_E_PERMANENT, 0x401), 0x401);
  CU_ASSERT_EQUAL(smpp_proto_command_status(PROTO_OP_SUBMIT_RESP, PROTO_E_THROTTLED,
                                            SMPP_ESME_RINVSRCADR), SMPP_ESME_RTHROTTLED);
  CU_ASSERT_EQUAL(smpp_proto_command_status(PROTO_OP_SUBMIT_RESP, PROTO_OK, SMPP_ESME_RINVSRCADR),
                  SMPP_ESME_ROK);
  CU_ASSERT_EQUAL(smpp_proto_command_status(PROTO_OP_SUBMIT_RESP, PROTO_E_PERMANENT,
                                            SMPP_SUBMIT_SM_RESP), SMPP_ESME_RSUBMITFAIL);
}

static void test_registered_delivery(void)
{
  static const struct {
    uint8_t regdlv;
    uint8_t mask;
  } in[] = {
    { 0x00, 0 },
    { 0x01, MSG_DLR_DELIVERED | MSG_DLR_FAILED },
    { 0x02, MSG_DLR_FAILED },
    { 0x03, MSG_DLR_DELIVERED },
    { 0x10, MSG_DLR_BUFFERED },
    { 0x11, MSG_DLR_DELIVERED | MSG_DLR_FAILED | MSG_DLR_BUFFERED },
    { 0x04, 0 }, /* an SME acknowledgement is no receipt */
  };
  static const struct {
    uint8_t mask;
    uint8_t regdlv;
  } outs[] = {
    { 0, 0x00 },
    { MSG_DLR_DELIVERED | MSG_DLR_FAILED, 0x01 },
    { MSG_DLR_FAILED, 0x02 },
    { MSG_DLR_DELIVERED, 0x01 },
    { MSG_DLR_BUFFERED, 0x11 },   /* the final ones too: they free the DLR entry */
    { MSG_DLR_FAILED | MSG_DLR_BUFFERED, 0x11 },
    { MSG_DLR_SMSC_ACCEPTED | MSG_DLR_SMSC_REJECTED, 0x00 },   /* the gateway's own events */
  };
  struct smpp_pdu p;
  struct proto_pdu pdu;
  for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
    raw_submit(&p, SMPP_SUBMIT_SM, 1, "x");
    p.body.sm.registered_delivery = in[i].regdlv;
    CU_ASSERT_EQUAL_FATAL(decode(&pdu, wire, build(&p)), 0);
    CU_ASSERT_EQUAL(pdu.msg.dlr_mask, in[i].mask);
  }
  for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
    submit_init(&pdu, 1, "x");
    pdu.msg.dlr_mask = outs[i].mask;
    CU_ASSERT_FATAL(encode(&pdu) > 0);
    out_pdu(&p);
    CU_ASSERT_EQUAL(p.body.sm.registered_delivery, outs[i].regdlv);
  }
}

static void test_data_coding(void)
{
#define SM(s) s, sizeof(s) - 1
  static const struct {
    uint8_t data_coding;
    const char *sm;
    size_t sm_len;
    uint8_t coding, dcs;
    const char *data; /* NULL: sm as it came, not copied */
    size_t data_len;
  } in[] = {
    { 0x00, SM("Hi"), SMS_TEXT_GSM7, 0x00, NULL, 0 },
    { 0x01, SM("a@b_$"), SMS_TEXT_GSM7, 0x00, SM("a\x00" "b\x11\x02") },
    { 0x03, SM("Gr\xfc\xdf"), SMS_TEXT_GSM7, 0x00, SM("Gr\x7e\x1e") },
    { 0x03, SM("[\xea]"), SMS_TEXT_UCS2, 0x08, SM("\x00[\x00\xea\x00]") }, /* no e-circumflex in GSM */
    { 0x03, SM("{x}"), SMS_TEXT_GSM7, 0x00, SM("\x1b\x28x\x1b\x29") },
    { 0x02, SM("\x01\x02"), SMS_TEXT_8BIT, 0x04, NULL, 0 },
    { 0x04, SM("\x01\x02"), SMS_TEXT_8BIT, 0x04, NULL, 0 },
    { 0x08, SM("\x00\x41"), SMS_TEXT_UCS2, 0x08, NULL, 0 },
    { 0xF1, SM("Hi"), SMS_TEXT_GSM7, 0xF1, NULL, 0 },
    { 0xF5, SM("\x01"), SMS_TEXT_8BIT, 0xF5, NULL, 0 },
    { 0x18, SM("\x00\x41"), SMS_TEXT_UCS2, 0x18, NULL, 0 },
    { 0x11, SM("Hi"), SMS_TEXT_GSM7, 0x11, NULL, 0 },
    { 0xC8, SM("Hi"), SMS_TEXT_GSM7, 0xC8, NULL, 0 },
    { 0xE0, SM("\x00\x41"), SMS_TEXT_UCS2, 0xE0, NULL, 0 },
    { 0x05, SM("\x82\xa0"), SMS_TEXT_8BIT, 0x05, NULL, 0 }, /* JIS: octets as they came */
  };
#undef SM
  struct smpp_pdu p;
  struct proto_pdu pdu, back;
  for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
    raw_submit(&p, SMPP_SUBMIT_SM, 1, "");
    p.body.sm.data_coding = in[i].data_coding;
    p.body.sm.short_message = (const uint8_t *)in[i].sm;
    p.body.sm.sm_length = (uint8_t)in[i].sm_len;
    CU_ASSERT_EQUAL_FATAL(decode(&pdu, wire, build(&p)), 0);
    CU_ASSERT_EQUAL(pdu.msg.coding, in[i].coding);
    CU_ASSERT_EQUAL(pdu.msg.dcs, in[i].dcs);
    if (in[i].data) {
      CU_ASSERT(data_is(pdu.msg.data, pdu.msg.data_len, in[i].data, in[i].data_len));
      CU_ASSERT(pdu.msg.data >= scratch && pdu.msg.data < scratch + sizeof scratch);
    } else {
      CU_ASSERT(data_is(pdu.msg.data, pdu.msg.data_len, in[i].sm, in[i].sm_len));
      CU_ASSERT(in_frame(pdu.msg.data));
    }
    /* and back: the same coding and TP-DCS, but that a class in the
     * general group comes back in SMPP's class form */
    roundtrip(&pdu, &back);
    CU_ASSERT_EQUAL(back.msg.coding, in[i].coding);
    CU_ASSERT_EQUAL(back.msg.dcs, in[i].dcs == 0x11 ? 0xF1 : in[i].dcs);
  }

  static const struct {
    uint8_t coding, dcs, data_coding;
  } outs[] = {
    { SMS_TEXT_GSM7, 0x00, 0x00 },
    { SMS_TEXT_GSM7, 0xF0, 0xF0 },
    { SMS_TEXT_GSM7, 0x11, 0xF1 }, /* a class in the general group: SMPP's class form */
    { SMS_TEXT_GSM7, 0x01, 0x00 },
    { SMS_TEXT_GSM7, 0xC8, 0xC8 },
    { SMS_TEXT_UCS2, 0x08, 0x08 },
    { SMS_TEXT_UCS2, 0x10, 0x18 },
    { SMS_TEXT_UCS2, 0xF1, 0x19 },
    { SMS_TEXT_8BIT, 0x04, 0x04 },
    { SMS_TEXT_8BIT, 0x00, 0x04 },
    { SMS_TEXT_8BIT, 0x15, 0xF5 },
    { SMS_TEXT_8BIT, 0x05, 0x05 },
    { SMS_TEXT_8BIT, 0x08, 0x04 },
  };
  for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
    submit_init(&pdu, 1, "x");
    pdu.msg.coding = outs[i].coding;
    pdu.msg.dcs = outs[i].dcs;
    CU_ASSERT_FATAL(encode(&pdu) > 0);
    out_pdu(&p);
    CU_ASSERT_EQUAL(p.body.sm.data_coding, outs[i].data_coding);
  }
}

static void test_times(void)
{
  int64_t t = 1;
  char s[SMPP_TIME_LEN + 1];
  CU_ASSERT_EQUAL(smpp_time_parse("", &t), 0);
  CU_ASSERT_EQUAL(t, 0);
  CU_ASSERT_EQUAL(smpp_time_parse("261130063530000+", &t), 0);
  CU_ASSERT_EQUAL(t, T_KANNEL_VALIDITY);
  /* the same instant in UTC+1 and UTC-1, tenths dropped */
  CU_ASSERT_EQUAL(smpp_time_parse("261130073530504+", &t), 0);
  CU_ASSERT_EQUAL(t, T_KANNEL_VALIDITY);
  CU_ASSERT_EQUAL(smpp_time_parse("261130053530004-", &t), 0);
  CU_ASSERT_EQUAL(t, T_KANNEL_VALIDITY);
  CU_ASSERT_EQUAL(smpp_time_parse("000229000000000+", &t), 0); /* 2000 was a leap year */
  CU_ASSERT_EQUAL(t, INT64_C(951782400));
  CU_ASSERT_EQUAL(smpp_time_parse("000001000000000R", &t), 0);
  CU_ASSERT_EQUAL(t, -86400);
  CU_ASSERT_EQUAL(smpp_time_parse("010203040506000R", &t), 0);
  CU_ASSERT_EQUAL(t, -(INT64_C(365) * 86400 + 2 * 30 * 86400 + 3 * 86400 + 4 * 3600 + 5 * 60 + 6));
  CU_ASSERT_EQUAL(smpp_time_parse("000000480000000R", &t), 0);
  CU_ASSERT_EQUAL(t, -48 * 3600);

  static const char *const bad[] = {
    "26113006353000+",   "2611300635300000+", "261130063530049+", "261130063530000X",
    "260230000000000+",  "261330000000000+",  "261130243530000+", "26113006353 000+",
    "261100063530000+",  "2611300635300+0+",  "A00001000000000R", "210229000000000+",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    t = 7;
    CU_ASSERT_EQUAL(smpp_time_parse(bad[i], &t), -1);
    CU_ASSERT_EQUAL(t, 7);
  }

  CU_ASSERT_EQUAL(smpp_time_format(s, sizeof s, T_KANNEL_VALIDITY), SMPP_TIME_LEN);
  CU_ASSERT_STRING_EQUAL(s, "261130063530000+");
  CU_ASSERT_EQUAL(smpp_time_format(s, sizeof s, 0), 0);
  CU_ASSERT_STRING_EQUAL(s, "");
  CU_ASSERT_EQUAL(smpp_time_format(s, sizeof s, -86400), SMPP_TIME_LEN);
  CU_ASSERT_STRING_EQUAL(s, "000001000000000R");
  CU_ASSERT_EQUAL(smpp_time_format(s, sizeof s, INT64_C(3155760000)), -1); /* 2070 */
  CU_ASSERT_EQUAL(smpp_time_format(s, sizeof s, -INT64_C(100) * 365 * 86400), -1);
  CU_ASSERT_EQUAL(smpp_time_format(s, SMPP_TIME_LEN, T_KANNEL_VALIDITY), -1);
  static const int64_t round[] = { 1, 951782400, 1796020530, 3155759999, -1, -59, -86399,
                                   -(INT64_C(99) * 365 * 86400 + 364 * 86400 + 86399) };
  for (size_t i = 0; i < sizeof round / sizeof round[0]; i++) {
    CU_ASSERT_EQUAL(smpp_time_format(s, sizeof s, round[i]), SMPP_TIME_LEN);
    CU_ASSERT_EQUAL(smpp_time_parse(s, &t), 0);
    CU_ASSERT_EQUAL(t, round[i]);
  }

  /* relative validity through the adapter, and a bad one refused */
  struct smpp_pdu p;
  struct proto_pdu pdu;
  raw_submit(&p, SMPP_SUBMIT_SM, 5, "x");
  SMPP_CSTR_SET(p.body.sm.validity_period, "000001000000000R");
  CU_ASSERT_EQUAL_FATAL(decode(&pdu, wire, build(&p)), 0);
  CU_ASSERT_EQUAL(pdu.msg.validity, -86400);
  CU_ASSERT(encode(&pdu) > 0);
  out_pdu(&p);
  CU_ASSERT_STRING_EQUAL(p.body.sm.validity_period, "000001000000000R");
  raw_submit(&p, SMPP_SUBMIT_SM, 5, "x");
  SMPP_CSTR_SET(p.body.sm.validity_period, "261332000000000+");
  CU_ASSERT(decode(&pdu, wire, build(&p)) < 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_SUBMIT_RESP);
  CU_ASSERT_EQUAL(pdu.raw_status, SMPP_ESME_RINVEXPIRY);
  SMPP_CSTR_SET(p.body.sm.validity_period, "");
  SMPP_CSTR_SET(p.body.sm.schedule_delivery_time, "2611");
  CU_ASSERT(decode(&pdu, wire, build(&p)) < 0);
  CU_ASSERT_EQUAL(pdu.raw_status, SMPP_ESME_RINVSCHED);
}

static void test_sar(void)
{
  struct smpp_pdu p;
  struct proto_pdu pdu;
  raw_submit(&p, SMPP_SUBMIT_SM, 1, "part two");
  p.tlv.sar_msg_ref_num = 0x2A;
  p.tlv.sar_total_segments = 3;
  p.tlv.sar_segment_seqnum = 2;
  p.tlv.present = SMPP_TLV_BIT(sar_msg_ref_num) | SMPP_TLV_BIT(sar_total_segments) |
                  SMPP_TLV_BIT(sar_segment_seqnum);
  CU_ASSERT_EQUAL_FATAL(decode(&pdu, wire, build(&p)), 0);
  CU_ASSERT(UDH_IS(&pdu.msg, "\x05\x00\x03\x2a\x03\x02"));
  CU_ASSERT(DATA_IS(&pdu.msg, "part two"));

  /* a reference above 255 needs the 16-bit IE */
  p.tlv.sar_msg_ref_num = 0x1234;
  CU_ASSERT_EQUAL_FATAL(decode(&pdu, wire, build(&p)), 0);
  CU_ASSERT(UDH_IS(&pdu.msg, "\x06\x08\x04\x12\x34\x03\x02"));

  /* in front of the message's own IEs */
  p.tlv.sar_msg_ref_num = 0x2A;
  p.body.sm.esm_class = SMPP_ESM_UDHI;
  p.body.sm.short_message = (const uint8_t *)"\x06\x05\x04\x0b\x84\x23\xf0" "data";
  p.body.sm.sm_length = 11;
  CU_ASSERT_EQUAL_FATAL(decode(&pdu, wire, build(&p)), 0);
  CU_ASSERT(UDH_IS(&pdu.msg, "\x0b\x00\x03\x2a\x03\x02\x05\x04\x0b\x84\x23\xf0"));
  CU_ASSERT(DATA_IS(&pdu.msg, "data"));

  /* a UDH that has its concatenation already wins */
  p.body.sm.short_message = (const uint8_t *)"\x05\x00\x03\x07\x02\x01" "data";
  p.body.sm.sm_length = 10;
  CU_ASSERT_EQUAL_FATAL(decode(&pdu, wire, build(&p)), 0);
  CU_ASSERT(UDH_IS(&pdu.msg, "\x05\x00\x03\x07\x02\x01"));

  /* a part number beyond the total; a set that is not complete */
  p.body.sm.esm_class = 0;
  p.tlv.sar_segment_seqnum = 4;
  CU_ASSERT(decode(&pdu, wire, build(&p)) < 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_SUBMIT_RESP);
  CU_ASSERT_EQUAL(pdu.raw_status, SMPP_ESME_RINVOPTPARAMVAL);
  p.tlv.present &= ~SMPP_TLV_BIT(sar_segment_seqnum);
  CU_ASSERT(decode(&pdu, wire, build(&p)) < 0);
  CU_ASSERT_EQUAL(pdu.raw_status, SMPP_ESME_RMISSINGOPTPARAM);
  CU_ASSERT_EQUAL(pdu.status, PROTO_E_PERMANENT);
}

/* ---- what cannot be used ---- */

static void test_framing(void)
{
  struct proto_pdu pdu;
  size_t skip = 9;
  uint8_t *bytes;
  int len = test_unhex("00000008 00000004 00000000 0000002a", &bytes);
  CU_ASSERT_FATAL(len == 16);
  CU_ASSERT(ops->split(bytes, (size_t)len, NULL, &skip) < 0);
  CU_ASSERT_EQUAL(skip, 0);
  CU_ASSERT(decode(&pdu, bytes, (size_t)len) < 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_NACK);
  CU_ASSERT_EQUAL(pdu.ref, 0x2a);
  CU_ASSERT_EQUAL(pdu.status, PROTO_E_CMD_LEN);
  CU_ASSERT_EQUAL(pdu.raw_status, SMPP_ESME_RINVCMDLEN);
  CU_ASSERT(encode(&pdu) == 16 && out_is("00000010 80000000 00000002 0000002a"));
  /* a header without the rest, and bytes without a header */
  CU_ASSERT(decode(&pdu, bytes, 12) < 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_NACK);
  CU_ASSERT_EQUAL(pdu.ref, 0);
  free(bytes);

  /* more bytes than the PDU says it has: not one whole PDU */
  len = test_unhex("00000010 00000015 00000000 00000005 00000000", &bytes);
  CU_ASSERT(decode(&pdu, bytes, (size_t)len) < 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_NACK);
  CU_ASSERT_EQUAL(pdu.ref, 5);
  CU_ASSERT_EQUAL(pdu.raw_status, SMPP_ESME_RINVCMDLEN);
  free(bytes);

  /* beyond the configured maximum */
  struct proto_options small = { .max_frame = 100 };
  len = test_unhex("00000065 00000004 00000000 00000001", &bytes);
  CU_ASSERT(ops->split(bytes, (size_t)len, &small, &skip) < 0);
  CU_ASSERT(ops->split(bytes, (size_t)len, NULL, &skip) == 0); /* need more */
  free(bytes);
  CU_ASSERT_EQUAL(ops->split(wire, 3, NULL, &skip), 0);
}

static void test_malformed(void)
{
  static const struct {
    const char *hex;
    enum proto_op op;
    uint32_t raw_status;
  } cases[] = {
    /* submit_sm whose source_addr runs to the end */
    { "00000018 00000004 00000000 00000011 00 01 01 3132333435", PROTO_OP_SUBMIT_RESP,
      SMPP_ESME_RINVSRCADR },
    /* enquire_link with two octets of a TLV */
    { "00000012 00000015 00000000 00000011 0001", PROTO_OP_KEEPALIVE_RESP,
      SMPP_ESME_RINVOPTPARSTREAM },
    /* bind_transmitter with a 16-character system_id */
    { "00000027 00000002 00000000 00000011 31323334353637383930313233343536 00 00 00 34 00 00 00",
      PROTO_OP_BIND_RESP, SMPP_ESME_RINVSYSID },
    /* unbind cut inside a TLV value */
    { "00000015 00000006 00000000 00000011 0427 0002 02", PROTO_OP_UNBIND_RESP,
      SMPP_ESME_RINVPARLEN },
    /* deliver_sm with UDHI whose UDH claims more than there is */
    { "00000026 00000005 00000000 00000011 00 00 00 3100 00 00 3200 40 00 00 00 00 00 00 00 00"
      "03 0a0000",
      PROTO_OP_DELIVER_RESP, SMPP_ESME_RINVESMCLASS },
    /* query_sm cut short: its own response says what is wrong */
    { "00000017 00000003 00000000 00000011 313200 00 00 3132", PROTO_OP_QUERY_RESP, SMPP_ESME_RINVSRCADR },
    /* a submit_sm_resp with an unterminated id is never answered */
    { "00000014 80000004 00000000 00000011 31323334", PROTO_OP_NONE, SMPP_ESME_RINVMSGID },
    /* nor a response we never ask for */
    { "00000010 80000021 00000000 00000011", PROTO_OP_NONE, SMPP_ESME_RINVCMDID },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct proto_pdu pdu;
    CU_ASSERT(decode_hex(&pdu, cases[i].hex) < 0);
    CU_ASSERT_EQUAL(pdu.op, cases[i].op);
    CU_ASSERT_EQUAL(pdu.ref, 0x11);
    CU_ASSERT_EQUAL(pdu.raw_status, cases[i].raw_status);
    CU_ASSERT_EQUAL(pdu.status, smpp_proto_status(cases[i].raw_status));
    CU_ASSERT(pdu.text[0] != '\0');
    if (cases[i].op == PROTO_OP_NONE)
      continue;
    /* and the answer carries the error */
    struct smpp_pdu p;
    CU_ASSERT_FATAL(encode(&pdu) >= SMPP_HEADER_LEN);
    out_pdu(&p);
    CU_ASSERT_EQUAL(p.command_status, cases[i].raw_status);
    CU_ASSERT_EQUAL(p.sequence_number, 0x11);
  }
  struct proto_pdu pdu;
  CU_ASSERT(decode_hex(&pdu, "00000027 00000002 00000000 00000011 31323334353637383930313233343536"
                             "00 00 00 34 00 00 00") < 0);
  CU_ASSERT(encode(&pdu) == 16 && out_is("00000010 80000002 0000000f 00000011"));
}

static void test_other(void)
{
  struct proto_pdu pdu;
  /* submit_multi is not supported: an unknown command, answered generic_nack */
  CU_ASSERT_EQUAL(decode_hex(&pdu, "00000010 00000021 00000000 00000033"), 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_OTHER);
  CU_ASSERT_EQUAL(pdu.ref, 0x33);
  CU_ASSERT_EQUAL(pdu.status, PROTO_OK);
  CU_ASSERT_EQUAL(pdu.raw_status, 0x80000021);
  CU_ASSERT_EQUAL(encode(&pdu), 16);
  CU_ASSERT(out_is("00000010 80000000 00000003 00000033"));
  pdu.status = PROTO_E_TEMPORARY; /* still the answer SMPP wants */
  CU_ASSERT(encode(&pdu) == 16 && out_is("00000010 80000000 00000003 00000033"));

  /* alert_notification gets no answer at all */
  CU_ASSERT_EQUAL(decode_hex(&pdu, "00000018 00000102 00000000 00000036 00 00 3100 00 00 3200"), 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_OTHER);
  CU_ASSERT_EQUAL(encode(&pdu), 0);

  /* without the echo, generic_nack is still a valid answer */
  pdu.raw_status = 0;
  CU_ASSERT(encode(&pdu) == 16 && out_is("00000010 80000000 00000003 00000036"));
}

/* query_sm, cancel_sm and replace_sm: requests about a message, both
 * ways, and their answers. */
static void test_about(void)
{
  struct proto_pdu pdu, back;
  /* query_sm "12" from 4917: QUERY with the id and the sender */
  CU_ASSERT_EQUAL(decode_hex(&pdu, "0000001a 00000003 00000000 00000034 313200 01 01 3439313700"), 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_QUERY);
  CU_ASSERT_STRING_EQUAL(pdu.msgid, "12");
  CU_ASSERT_STRING_EQUAL(pdu.msg.src.addr, "4917");
  CU_ASSERT_EQUAL(pdu.raw_status, SMPP_QUERY_SM_RESP);
  /* its answer: DELIVERED on a date, error 3 */
  struct proto_pdu resp;
  pdu_init(&resp, PROTO_OP_QUERY_RESP, 0x34);
  strcpy(resp.msgid, "12");
  resp.receipt.state = MSG_STATE_DELIVERED;
  resp.receipt.err = 3;
  resp.receipt.done_time = T_SINK_RECEIPT;
  roundtrip(&resp, &back);
  CU_ASSERT_EQUAL(back.op, PROTO_OP_QUERY_RESP);
  CU_ASSERT_STRING_EQUAL(back.msgid, "12");
  CU_ASSERT_EQUAL(back.receipt.state, MSG_STATE_DELIVERED);
  CU_ASSERT_EQUAL(back.receipt.err, 3);
  CU_ASSERT_EQUAL(back.receipt.done_time, T_SINK_RECEIPT);
  /* a refusal: the bare header, with the status the op has for it */
  resp.status = PROTO_E_NO_MESSAGE;
  CU_ASSERT(encode(&resp) == 16 && out_is("00000010 80000003 0000000c 00000034"));
  resp.status = PROTO_E_MESSAGE_STATE;
  CU_ASSERT(encode(&resp) == 16 && out_is("00000010 80000003 00000067 00000034"));
  CU_ASSERT_EQUAL(decode(&back, iobuf_head(&out), iobuf_len(&out)), 0);
  CU_ASSERT_EQUAL(back.op, PROTO_OP_QUERY_RESP);
  CU_ASSERT_EQUAL(back.status, PROTO_E_MESSAGE_STATE);

  /* cancel_sm "12", from 4917 to 4711 */
  CU_ASSERT_EQUAL(decode_hex(&pdu, "00000022 00000008 00000000 00000035 00 313200 01 01 3439313700 01 01 3437313100"),
                  0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_CANCEL);
  CU_ASSERT_STRING_EQUAL(pdu.msgid, "12");
  CU_ASSERT_STRING_EQUAL(pdu.msg.dst.addr, "4711");
  pdu_init(&resp, PROTO_OP_CANCEL_RESP, 0x35);
  resp.status = PROTO_E_MESSAGE_STATE;
  CU_ASSERT(encode(&resp) == 16 && out_is("00000010 80000008 00000011 00000035"));
  resp.status = PROTO_OK;
  CU_ASSERT(encode(&resp) == 16 && out_is("00000010 80000008 00000000 00000035"));
  /* a bulk cancel (no id) is not offered */
  CU_ASSERT(decode_hex(&pdu, "00000020 00000008 00000000 00000036 00 00 01 01 3439313700 01 01 3437313100") < 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_CANCEL_RESP);
  CU_ASSERT_EQUAL(pdu.raw_status, SMPP_ESME_RCANCELFAIL);

  /* replace_sm, ours out and back: the id, times, receipt and text */
  pdu_init(&pdu, PROTO_OP_REPLACE, 0x37);
  strcpy(pdu.msgid, "5f3a");
  set_addr(&pdu.msg.src, "4917", 1, 1);
  pdu.msg.validity = -3600;
  pdu.msg.dlr_mask = MSG_DLR_DELIVERED | MSG_DLR_FAILED;
  pdu.msg.data = (const uint8_t *)"new";
  pdu.msg.data_len = 3;
  roundtrip(&pdu, &back);
  CU_ASSERT_EQUAL(back.op, PROTO_OP_REPLACE);
  CU_ASSERT_STRING_EQUAL(back.msgid, "5f3a");
  CU_ASSERT_STRING_EQUAL(back.msg.src.addr, "4917");
  CU_ASSERT_EQUAL(back.msg.validity, -3600);
  CU_ASSERT_EQUAL(back.msg.deferred, 0);
  CU_ASSERT_EQUAL(back.msg.dlr_mask, MSG_DLR_DELIVERED | MSG_DLR_FAILED);
  CU_ASSERT(DATA_IS(&back.msg, "new"));
  pdu_init(&resp, PROTO_OP_REPLACE_RESP, 0x37);
  resp.status = PROTO_E_MESSAGE_STATE;
  CU_ASSERT(encode(&resp) == 16 && out_is("00000010 80000007 00000013 00000037"));
  /* query and cancel out and back */
  pdu.op = PROTO_OP_QUERY;
  roundtrip(&pdu, &back);
  CU_ASSERT(back.op == PROTO_OP_QUERY && strcmp(back.msgid, "5f3a") == 0);
  pdu.op = PROTO_OP_CANCEL;
  set_addr(&pdu.msg.dst, "4711", 1, 1);
  roundtrip(&pdu, &back);
  CU_ASSERT(back.op == PROTO_OP_CANCEL && strcmp(back.msg.dst.addr, "4711") == 0);
  /* an id too long for SMPP does not go out */
  memset(pdu.msgid, '7', sizeof pdu.msgid - 1);
  pdu.msgid[sizeof pdu.msgid - 1] = 0;
  CU_ASSERT(sizeof pdu.msgid <= 65 || encode(&pdu) < 0);
}

void suite_smpp_proto(void);
void suite_smpp_proto(void)
{
  static const struct test_case cases[] = {
    { "ops", test_ops },
    { "vectors: Kannel", test_vectors_kannel },
    { "vectors: Net::SMPP and node-smpp ESMEs", test_vectors_esmes },
    { "vectors: node-smpp SMSC", test_vectors_sink },
    { "bind", test_bind },
    { "bind_resp", test_bind_resp },
    { "submit GSM", test_submit_gsm },
    { "submit UCS2", test_submit_ucs2 },
    { "submit UDH", test_submit_udh },
    { "submit message_payload", test_submit_long },
    { "submit_resp", test_submit_resp },
    { "data_sm", test_data_sm },
    { "deliver MO", test_deliver_mo },
    { "deliver receipt", test_deliver_receipt },
    { "receipt TLVs and text", test_receipt_sources },
    { "header-only ops", test_header_only_ops },
    { "status mapping", test_status_mapping },
    { "registered_delivery", test_registered_delivery },
    { "data_coding", test_data_coding },
    { "times", test_times },
    { "sar_* TLVs", test_sar },
    { "framing", test_framing },
    { "malformed", test_malformed },
    { "unknown and unsupported commands", test_other },
    { "query_sm, cancel_sm, replace_sm", test_about },
    { NULL, NULL },
  };
  test_add_suite("smpp_proto", cases);
}
