/* test_cimd2_proto.c - the CIMD2 adapter: packet numbers on both sides,
 * packets written as the protocol spells them (checked byte for byte, the
 * checksum worked out here), the neutral PDUs read back, receipts, error
 * codes both ways, and what bad packets are answered with.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <string.h>
#include "cimd2_codec.h"
#include "cimd2_proto.h"
#include "iobuf.h"
#include "proto.h"
#include "testutil.h"

static const struct proto_options client = { .window = 1 };
static const struct proto_options smsc = { .smsc_side = true, .window = 1 };
static uint8_t scratch[PROTO_SCRATCH_LEN];

/* The packet STX body checksum ETX, the checksum worked out here. */
static size_t packet(char *out, size_t cap, const char *body)
{
  int n = snprintf(out, cap, "\x02%s", body);
  unsigned sum = 0;
  for (int i = 0; i < n; i++)
    sum += (uint8_t)out[i];
  n += snprintf(out + n, cap - (size_t)n, "%02X\x03", sum & 0xff);
  return (size_t)n;
}

/* pdu encoded with opt must be exactly the packet of body. */
static bool encodes_as(const struct proto_pdu *pdu, const struct proto_options *opt, const char *body)
{
  struct iobuf out;
  char want[4096];
  iobuf_init(&out);
  int n = cimd2_proto_ops.encode(pdu, &out, opt);
  size_t len = packet(want, sizeof want, body);
  bool same = n > 0 && (size_t)n == len && memcmp(iobuf_head(&out), want, len) == 0;
  if (!same)
    fprintf(stderr, "\n  encoded (%d): %.*s\n  expected:     %s\n", n, (int)iobuf_len(&out),
            (const char *)iobuf_head(&out), body);
  iobuf_destroy(&out);
  return same;
}

static int decode(const char *body, struct proto_pdu *pdu, const struct proto_options *opt)
{
  char frame[4096];
  size_t len = packet(frame, sizeof frame, body);
  return cimd2_proto_ops.decode(pdu, (const uint8_t *)frame, len, scratch, opt);
}

static void test_session(void)
{
  struct proto_pdu pdu = { .op = PROTO_OP_BIND, .ref = 0 };
  strcpy(pdu.user, "emg");
  strcpy(pdu.password, "secret");
  CU_ASSERT(encodes_as(&pdu, &client, "01:001\t010:emg\t011:secret\t"));
  struct proto_options windowed = { .window = 64 };
  CU_ASSERT(encodes_as(&pdu, &windowed, "01:001\t010:emg\t011:secret\t019:64\t"));

  /* The SMSC reads the login with the client's number as its ref. */
  CU_ASSERT_EQUAL_FATAL(decode("01:001\t010:emg\t011:secret\t019:64\t", &pdu, &smsc), 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_BIND);
  CU_ASSERT_EQUAL(pdu.ref, 1);
  CU_ASSERT_EQUAL(pdu.raw_status, CIMD2_LOGIN);
  CU_ASSERT_EQUAL(pdu.bind_mode, PROTO_BIND_TRX);
  CU_ASSERT_STRING_EQUAL(pdu.user, "emg");
  CU_ASSERT_STRING_EQUAL(pdu.password, "secret");

  /* Its answers echo the number: accepted, refused. */
  struct proto_pdu resp = { .op = PROTO_OP_BIND_RESP, .ref = 1, .raw_status = CIMD2_LOGIN };
  CU_ASSERT(encodes_as(&resp, &smsc, "51:001\t"));
  resp.status = PROTO_E_AUTH_PASSWORD;
  CU_ASSERT(encodes_as(&resp, &smsc, "51:001\t900:100\t"));
  resp.status = PROTO_E_ALREADY_BOUND;
  CU_ASSERT(encodes_as(&resp, &smsc, "51:001\t900:102\t"));

  /* The client reads them as answers to its ref 0. */
  CU_ASSERT_EQUAL_FATAL(decode("51:001\t", &pdu, &client), 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_BIND_RESP);
  CU_ASSERT_EQUAL(pdu.ref, 0);
  CU_ASSERT_EQUAL(pdu.status, PROTO_OK);
  CU_ASSERT_EQUAL_FATAL(decode("51:001\t900:100\t901:Invalid login\t", &pdu, &client), 0);
  CU_ASSERT_EQUAL(pdu.status, PROTO_E_AUTH);
  CU_ASSERT_EQUAL(pdu.raw_status, 100);
  CU_ASSERT_STRING_EQUAL(pdu.text, "Invalid login");
  /* An answer with the SMSC's own parity answers nothing of the client's. */
  CU_ASSERT_EQUAL_FATAL(decode("51:002\t", &pdu, &client), 0);
  CU_ASSERT_EQUAL(pdu.ref, UINT32_MAX);

  /* Alive and logout from either side: the client's odd, the SMSC's even. */
  struct proto_pdu alive = { .op = PROTO_OP_KEEPALIVE, .ref = 5 };
  CU_ASSERT(encodes_as(&alive, &client, "40:011\t"));
  CU_ASSERT(encodes_as(&alive, &smsc, "40:010\t"));
  alive.ref = 127;
  CU_ASSERT(encodes_as(&alive, &client, "40:255\t"));
  CU_ASSERT(encodes_as(&alive, &smsc, "40:254\t"));
  alive.ref = 128;   /* beyond the packet numbers */
  struct iobuf out;
  iobuf_init(&out);
  CU_ASSERT(cimd2_proto_ops.encode(&alive, &out, &client) < 0);
  iobuf_destroy(&out);
  CU_ASSERT_EQUAL_FATAL(decode("40:010\t", &pdu, &client), 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_KEEPALIVE);
  CU_ASSERT_EQUAL(pdu.ref, 10);
  struct proto_pdu alive_resp = { .op = PROTO_OP_KEEPALIVE_RESP, .ref = 10, .raw_status = CIMD2_ALIVE };
  CU_ASSERT(encodes_as(&alive_resp, &client, "90:010\t"));
  CU_ASSERT_EQUAL_FATAL(decode("90:010\t", &pdu, &smsc), 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_KEEPALIVE_RESP);
  CU_ASSERT_EQUAL(pdu.ref, 5);
  struct proto_pdu logout = { .op = PROTO_OP_UNBIND, .ref = 3 };
  CU_ASSERT(encodes_as(&logout, &client, "02:007\t"));
  CU_ASSERT_EQUAL_FATAL(decode("02:007\t", &pdu, &smsc), 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_UNBIND);
  CU_ASSERT_EQUAL_FATAL(decode("52:007\t", &pdu, &client), 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_UNBIND_RESP);
  CU_ASSERT_EQUAL(pdu.ref, 3);
  CU_ASSERT(cimd2_proto_ops.has_unbind);
  CU_ASSERT_EQUAL(cimd2_proto_ops.ref_count, 128);
  CU_ASSERT_PTR_EQUAL(proto_find("cimd2"), &cimd2_proto_ops);
}

static void test_submit(void)
{
  /* GSM text with characters CIMD2 writes as combinations, a receipt
   * asked for, validity, an international sender. */
  static const uint8_t text[] = { 'H', 'i', ' ', 0x00, ' ', 0x1B, 0x65, ' ', 0x1C };   /* "Hi @ € Æ" */
  struct proto_pdu pdu = { .op = PROTO_OP_SUBMIT, .ref = 1 };
  struct msg *m = &pdu.msg;
  strcpy(m->dst.addr, "4917012345");
  strcpy(m->src.addr, "4917099999");
  m->src.ton = MSG_TON_INTERNATIONAL;
  m->data = text;
  m->data_len = sizeof text;
  m->dlr_mask = MSG_DLR_DELIVERED | MSG_DLR_FAILED;
  m->validity = 1796222400;   /* 2026-12-02 14:40:00 UTC */
  m->pid = 64;
  CU_ASSERT(encodes_as(&pdu, &client,
                       "03:003\t021:4917012345\t023:+4917099999\t033:Hi _Oa _XXe _AE\t052:64\t"
                       "051:261202144000\t056:62\t"));

  /* The SMSC reads it back. */
  char body[512];
  snprintf(body, sizeof body, "%s", "03:003\t021:4917012345\t023:+4917099999\t033:Hi _Oa _XXe _AE\t052:64\t"
                                    "051:261202144000\t056:14\t");
  CU_ASSERT_EQUAL_FATAL(decode(body, &pdu, &smsc), 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_SUBMIT);
  CU_ASSERT_EQUAL(pdu.ref, 3);
  CU_ASSERT_EQUAL(pdu.raw_status, CIMD2_SUBMIT);
  CU_ASSERT_STRING_EQUAL(m->dst.addr, "4917012345");
  CU_ASSERT_STRING_EQUAL(m->src.addr, "4917099999");
  CU_ASSERT_EQUAL(m->src.ton, MSG_TON_INTERNATIONAL);
  CU_ASSERT_EQUAL(m->coding, SMS_TEXT_GSM7);
  CU_ASSERT_EQUAL_FATAL(m->data_len, sizeof text);
  CU_ASSERT_EQUAL(memcmp(m->data, text, sizeof text), 0);
  CU_ASSERT_EQUAL(m->dlr_mask, MSG_DLR_DELIVERED | MSG_DLR_FAILED);   /* Kannel's 14 */
  CU_ASSERT_EQUAL(m->validity, 1796222400);
  CU_ASSERT_EQUAL(m->pid, 64);

  /* Accepted at a known time: validity and first delivery go out relative
   * to it, rounded up (the SMSC reads absolute times in its own zone). The
   * message is the one just read back, sent on again. */
  pdu.op = PROTO_OP_SUBMIT;
  pdu.ref = 1;
  m->received_ms = 1796222400000 - 3600000;   /* an hour before its validity ends */
  m->deferred = 1796222400 - 3600 + 600;       /* 10 minutes after */
  CU_ASSERT(encodes_as(&pdu, &client,
                       "03:003\t021:4917012345\t023:+4917099999\t033:Hi _Oa _XXe _AE\t052:64\t"
                       "050:11\t053:1\t056:62\t"));
  m->validity = 1796222400 - 3600 + 25 * 3600;   /* 25 h: two days is the next step */
  m->deferred = 1796222400 - 3600 + 61;          /* a minute and a second: 5 minutes, the least */
  CU_ASSERT(encodes_as(&pdu, &client,
                       "03:003\t021:4917012345\t023:+4917099999\t033:Hi _Oa _XXe _AE\t052:64\t"
                       "050:168\t053:0\t056:62\t"));
  m->validity = 1796222400 - 3600 + 13 * 3600;   /* 13 h: 12 h 30 min steps */
  m->deferred = 0;
  CU_ASSERT(encodes_as(&pdu, &client,
                       "03:003\t021:4917012345\t023:+4917099999\t033:Hi _Oa _XXe _AE\t052:64\t"
                       "050:145\t056:62\t"));
  /* A second past a step is the next step: a message never expires before
   * its time (nor goes out before its first delivery). */
  m->validity = 1796222400 - 3600 + 3601;   /* an hour and a second: 65 minutes */
  m->deferred = 1796222400 - 3600 + 301;    /* 5 minutes and a second: 10 minutes */
  CU_ASSERT(encodes_as(&pdu, &client,
                       "03:003\t021:4917012345\t023:+4917099999\t033:Hi _Oa _XXe _AE\t052:64\t"
                       "050:12\t053:1\t056:62\t"));
  m->deferred = 0;
  m->validity = 1796222400 - 3600 + 100 * 7 * 86400;   /* beyond 63 weeks: the longest */
  CU_ASSERT(encodes_as(&pdu, &client,
                       "03:003\t021:4917012345\t023:+4917099999\t033:Hi _Oa _XXe _AE\t052:64\t"
                       "050:255\t056:62\t"));

  /* Relative validity: TP-VP 167 is 24 h, kept relative (negative). */
  CU_ASSERT_EQUAL_FATAL(decode("03:005\t021:1\t033:x\t050:167\t053:0\t", &pdu, &smsc), 0);
  CU_ASSERT_EQUAL(m->validity, -24 * 3600);
  CU_ASSERT_EQUAL(m->deferred, -5 * 60);

  /* Binary with a UDH and an alphanumeric sender; UCS2 by its DCS. */
  static const uint8_t udh[] = { 5, 0, 3, 0xA7, 2, 1 }, octets[] = { 1, 2, 0xFF };
  struct proto_pdu bin = { .op = PROTO_OP_SUBMIT, .ref = 2 };
  strcpy(bin.msg.dst.addr, "4917012345");
  strcpy(bin.msg.src.addr, "emgShop");
  bin.msg.src.ton = MSG_TON_ALPHANUMERIC;
  bin.msg.coding = SMS_TEXT_8BIT;
  bin.msg.dcs = 4;
  bin.msg.udh = udh;
  bin.msg.udh_len = sizeof udh;
  bin.msg.data = octets;
  bin.msg.data_len = sizeof octets;
  CU_ASSERT(encodes_as(&bin, &client, "03:005\t021:4917012345\t027:emgShop\t030:4\t032:050003A70201\t034:0102FF\t056:0\t"));
  CU_ASSERT_EQUAL_FATAL(decode("03:005\t021:4917012345\t027:emgShop\t030:4\t032:050003A70201\t034:0102FF\t", &pdu,
                               &smsc), 0);
  CU_ASSERT_EQUAL(m->src.ton, MSG_TON_ALPHANUMERIC);
  CU_ASSERT_STRING_EQUAL(m->src.addr, "emgShop");
  CU_ASSERT_EQUAL(m->coding, SMS_TEXT_8BIT);
  CU_ASSERT_EQUAL_FATAL(m->udh_len, sizeof udh);
  CU_ASSERT_EQUAL(memcmp(m->udh, udh, sizeof udh), 0);
  CU_ASSERT_EQUAL_FATAL(m->data_len, sizeof octets);
  CU_ASSERT_EQUAL(memcmp(m->data, octets, sizeof octets), 0);
  CU_ASSERT_EQUAL(m->dlr_mask, 0);
  CU_ASSERT_EQUAL_FATAL(decode("03:007\t021:1\t030:8\t034:041F0440\t", &pdu, &smsc), 0);
  CU_ASSERT_EQUAL(m->coding, SMS_TEXT_UCS2);
  CU_ASSERT_EQUAL(m->dcs, 8);
  CU_ASSERT_EQUAL(m->data_len, 4);
  /* Latin-1 where GSM lacks the character: read as UCS2. */
  CU_ASSERT_EQUAL_FATAL(decode("03:009\t021:1\t033:\xbe\t", &pdu, &smsc), 0);
  CU_ASSERT_EQUAL(m->coding, SMS_TEXT_UCS2);
  CU_ASSERT_EQUAL(m->data_len, 2);

  /* The answer names the message by recipient and stamp, both ways. */
  struct proto_pdu resp = { .op = PROTO_OP_SUBMIT_RESP, .ref = 3, .raw_status = CIMD2_SUBMIT };
  strcpy(resp.msgid, "4917012345:261202144001");
  CU_ASSERT(encodes_as(&resp, &smsc, "53:003\t021:4917012345\t060:261202144001\t"));
  CU_ASSERT_EQUAL_FATAL(decode("53:003\t021:4917012345\t060:261202144001\t", &pdu, &client), 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_SUBMIT_RESP);
  CU_ASSERT_EQUAL(pdu.ref, 1);
  CU_ASSERT_STRING_EQUAL(pdu.msgid, "4917012345:261202144001");
  CU_ASSERT_EQUAL_FATAL(decode("53:003\t021:+4917012345\t060:261202144001\t", &pdu, &client), 0);
  CU_ASSERT_STRING_EQUAL(pdu.msgid, "4917012345:261202144001");   /* the report may leave the '+' out */
  CU_ASSERT_EQUAL_FATAL(decode("53:003\t060:261202144001\t", &pdu, &client), 0);
  CU_ASSERT_STRING_EQUAL(pdu.msgid, "261202144001");   /* no 021: the stamp alone */
  resp.status = PROTO_E_THROTTLED;
  CU_ASSERT(encodes_as(&resp, &smsc, "53:003\t900:10\t"));
  CU_ASSERT_EQUAL_FATAL(decode("53:003\t900:10\t", &pdu, &client), 0);
  CU_ASSERT_EQUAL(pdu.status, PROTO_E_THROTTLED);
  CU_ASSERT(proto_status_temporary(pdu.status));
  CU_ASSERT_EQUAL_FATAL(decode("53:003\t900:300\t", &pdu, &client), 0);
  CU_ASSERT_EQUAL(pdu.status, PROTO_E_ADDRESS);
  CU_ASSERT_EQUAL_FATAL(decode("53:003\t900:6\t", &pdu, &client), 0);
  CU_ASSERT_EQUAL(pdu.status, PROTO_E_TEMPORARY);
  CU_ASSERT_EQUAL_FATAL(decode("53:003\t900:777\t", &pdu, &client), 0);
  CU_ASSERT_EQUAL(pdu.status, PROTO_E_PERMANENT);
  CU_ASSERT_EQUAL(pdu.raw_status, 777);
}

/* 056, the status report request, bit by bit both ways (doc/cimd2.md
 * 8.4): read into dlr_mask (1 and 64 intermediate, 8 delivered, 2 4 16 32
 * failures), and written from it (buffered alone asks for the final
 * reports too: only a final one frees the DLR entry). */
static void test_report_request(void)
{
  static const struct {
    unsigned request;
    uint8_t mask;
  } read[] = {
    { 0, 0 }, { 1, MSG_DLR_BUFFERED }, { 2, MSG_DLR_FAILED }, { 4, MSG_DLR_FAILED },
    { 8, MSG_DLR_DELIVERED }, { 16, MSG_DLR_FAILED }, { 32, MSG_DLR_FAILED }, { 64, MSG_DLR_BUFFERED },
  };
  for (size_t i = 0; i < sizeof read / sizeof read[0]; i++) {
    char body[128];
    struct proto_pdu pdu;
    snprintf(body, sizeof body, "03:003\t021:4917012345\t033:hi\t056:%u\t", read[i].request);
    CU_ASSERT_EQUAL_FATAL(decode(body, &pdu, &smsc), 0);
    if (pdu.msg.dlr_mask != read[i].mask) {
      CU_FAIL("056 read as another dlr_mask");
      fprintf(stderr, "\n  056:%u read as %u, want %u\n", read[i].request, pdu.msg.dlr_mask, read[i].mask);
    }
  }
  static const struct {
    uint8_t mask;
    const char *request;
  } written[] = {
    { MSG_DLR_DELIVERED, "8" }, { MSG_DLR_FAILED, "54" }, { MSG_DLR_BUFFERED, "63" },
    { MSG_DLR_DELIVERED | MSG_DLR_FAILED, "62" }, { 0, "0" },
  };
  for (size_t i = 0; i < sizeof written / sizeof written[0]; i++) {
    struct proto_pdu pdu = { .op = PROTO_OP_SUBMIT, .ref = 1 };
    static const uint8_t text[] = { 'h', 'i' };
    strcpy(pdu.msg.dst.addr, "4917012345");
    pdu.msg.data = text;
    pdu.msg.data_len = sizeof text;
    pdu.msg.dlr_mask = written[i].mask;
    char body[128];
    snprintf(body, sizeof body, "03:003\t021:4917012345\t033:hi\t056:%s\t", written[i].request);
    CU_ASSERT(encodes_as(&pdu, &client, body));
  }
}

static void test_deliveries(void)
{
  /* An MO from the SMSC, with its time stamp. */
  struct proto_pdu pdu;
  CU_ASSERT_EQUAL_FATAL(decode("20:002\t021:12345\t023:4917012345\t060:261202115501\t033:STOP\t", &pdu, &client), 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_DELIVER);
  CU_ASSERT_FALSE(pdu.is_receipt);
  CU_ASSERT_EQUAL(pdu.ref, 2);
  CU_ASSERT_EQUAL(pdu.raw_status, CIMD2_DELIVER);
  CU_ASSERT_STRING_EQUAL(pdu.msg.dst.addr, "12345");
  CU_ASSERT_EQUAL(pdu.msg.data_len, 4);
  CU_ASSERT_EQUAL(pdu.msg.received_ms, 1796212501000);
  struct proto_pdu resp = { .op = PROTO_OP_DELIVER_RESP, .ref = 2, .raw_status = CIMD2_DELIVER };
  CU_ASSERT(encodes_as(&resp, &client, "70:002\t"));
  resp.raw_status = CIMD2_STATUS_REPORT;
  CU_ASSERT(encodes_as(&resp, &client, "73:002\t"));
  resp.status = PROTO_E_TEMPORARY;
  CU_ASSERT(encodes_as(&resp, &client, "73:002\t900:6\t"));

  /* Status reports: each code as its state; the id rebuilt from 021 and 060. */
  static const struct {
    const char *code;
    uint8_t state;
  } codes[] = {
    { "1", MSG_STATE_ENROUTE }, { "2", MSG_STATE_EXPIRED }, { "3", MSG_STATE_UNDELIVERABLE },
    { "4", MSG_STATE_DELIVERED }, { "5", MSG_STATE_ENROUTE }, { "6", MSG_STATE_UNDELIVERABLE },
    { "7", MSG_STATE_DELETED }, { "8", MSG_STATE_DELETED }, { "9", MSG_STATE_DELETED },
    { "0", MSG_STATE_UNKNOWN },
  };
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
    char body[256];
    snprintf(body, sizeof body, "23:004\t021:4917012345\t060:261202115500\t061:%s\t062:29\t063:261202115510\t",
             codes[i].code);
    CU_ASSERT_EQUAL_FATAL(decode(body, &pdu, &client), 0);
    CU_ASSERT_EQUAL(pdu.op, PROTO_OP_DELIVER);
    CU_ASSERT(pdu.is_receipt);
    CU_ASSERT_EQUAL(pdu.receipt.state, codes[i].state);
  }
  CU_ASSERT_STRING_EQUAL(pdu.receipt.id, "4917012345:261202115500");
  CU_ASSERT_EQUAL(pdu.receipt.err, 29);
  CU_ASSERT_EQUAL(pdu.receipt.submit_time, 1796212500);
  CU_ASSERT_EQUAL(pdu.receipt.done_time, 1796212510);
  CU_ASSERT_STRING_EQUAL(pdu.receipt.dst.addr, "4917012345");
  /* Without its stamp a report matches nothing: refused as a syntax error. */
  CU_ASSERT(decode("23:004\t021:4917012345\t061:4\t", &pdu, &client) < 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_DELIVER_RESP);
  CU_ASSERT_EQUAL(pdu.status, PROTO_E_SYNTAX);

  /* The SMSC's side writes a receipt as a status report. */
  struct proto_pdu rep = { .op = PROTO_OP_DELIVER, .ref = 2, .is_receipt = true };
  strcpy(rep.receipt.id, "4917012345:261202115500");
  rep.receipt.state = MSG_STATE_UNDELIVERABLE;
  rep.receipt.err = 1;
  rep.receipt.done_time = 1796212510;
  strcpy(rep.receipt.src.addr, "4917099999");
  CU_ASSERT(encodes_as(&rep, &smsc, "23:004\t021:4917012345\t023:4917099999\t060:261202115500\t061:3\t062:1\t"
                                    "063:261202115510\t"));
  rep.receipt.state = MSG_STATE_DELIVERED;
  rep.receipt.src.addr[0] = '\0';
  rep.receipt.done_time = 0;
  CU_ASSERT(encodes_as(&rep, &smsc, "23:004\t021:4917012345\t060:261202115500\t061:4\t"));
  strcpy(rep.receipt.id, "12345");   /* not an id CIMD2 can carry */
  struct iobuf out;
  iobuf_init(&out);
  CU_ASSERT(cimd2_proto_ops.encode(&rep, &out, &smsc) < 0);
  iobuf_destroy(&out);
}

static void test_errors(void)
{
  struct proto_pdu pdu;
  char frame[256];
  /* A bad checksum: a NACK naming the packet. */
  size_t len = packet(frame, sizeof frame, "03:007\t021:1\t");
  frame[len - 2] = frame[len - 2] == '0' ? '1' : '0';
  CU_ASSERT(cimd2_proto_ops.decode(&pdu, (const uint8_t *)frame, len, scratch, &smsc) < 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_NACK);
  CU_ASSERT_EQUAL(pdu.ref, 7);
  CU_ASSERT(encodes_as(&pdu, &smsc, "99:007\t"));
  /* A NACK or a general error answering ours. */
  CU_ASSERT_EQUAL_FATAL(decode("99:007\t", &pdu, &client), 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_NACK);
  CU_ASSERT_EQUAL(pdu.ref, 3);
  CU_ASSERT_EQUAL(pdu.status, PROTO_E_CHECKSUM);
  CU_ASSERT_EQUAL_FATAL(decode("98:007\t900:1\t", &pdu, &client), 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_NACK);
  CU_ASSERT_EQUAL(pdu.status, PROTO_E_UNSUPPORTED);

  /* A request it does not handle (enquire message status): its own
   * response with "unexpected operation"; an unknown one: a general error. */
  CU_ASSERT_EQUAL_FATAL(decode("04:009\t021:1\t060:261202115500\t", &pdu, &smsc), 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_OTHER);
  pdu.status = PROTO_E_UNSUPPORTED;
  CU_ASSERT(encodes_as(&pdu, &smsc, "54:009\t900:1\t"));
  CU_ASSERT_EQUAL_FATAL(decode("17:011\t", &pdu, &smsc), 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_OTHER);
  CU_ASSERT(encodes_as(&pdu, &smsc, "98:011\t900:1\t"));

  /* Bad values in a submit: its response with a syntax error. */
  CU_ASSERT(decode("03:013\t021:1\t033:x\t056:x\t", &pdu, &smsc) < 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_SUBMIT_RESP);
  CU_ASSERT_EQUAL(pdu.ref, 13);
  CU_ASSERT(encodes_as(&pdu, &smsc, "53:013\t900:2\t"));
  CU_ASSERT(decode("03:015\t021:1\t032:0500\t", &pdu, &smsc) < 0);   /* UDHL says 5 */
  CU_ASSERT(decode("03:017\t021:1\t034:ABC\t", &pdu, &smsc) < 0);    /* odd hex */
  CU_ASSERT(decode("03:019\t021:1\t051:261302000000\t", &pdu, &smsc) < 0);   /* month 13 */
  CU_ASSERT(decode("01:001\t010:emg\t", &pdu, &smsc) < 0);           /* no password */
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_BIND_RESP);
  /* A response we cannot read is not answered. */
  CU_ASSERT(decode("53:003\t900:x\t", &pdu, &client) < 0);
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_NONE);
  CU_ASSERT(decode("58:003\t", &pdu, &client) < 0);   /* an answer to nothing we send */
  CU_ASSERT_EQUAL(pdu.op, PROTO_OP_NONE);

  /* Error codes both ways, and their words in logs. */
  CU_ASSERT_EQUAL(cimd2_proto_error(PROTO_E_QUEUE_FULL), 10);
  CU_ASSERT_EQUAL(cimd2_proto_error(PROTO_E_SOURCE), 306);
  CU_ASSERT_EQUAL(cimd2_proto_error(PROTO_E_CREDIT), 9);
  CU_ASSERT_EQUAL(cimd2_proto_status(102), PROTO_E_ALREADY_BOUND);
  CU_ASSERT_EQUAL(cimd2_proto_status(324), PROTO_E_THROTTLED);
  CU_ASSERT_EQUAL(cimd2_proto_status(104), PROTO_E_WINDOW);   /* the session logs in again without 019 */
  CU_ASSERT_EQUAL(cimd2_proto_status(105), PROTO_E_WINDOW);
  CU_ASSERT_EQUAL(cimd2_proto_status(0), PROTO_OK);
  char words[PROTO_DESCRIBE_LEN];
  CU_ASSERT_STRING_EQUAL(proto_describe(&cimd2_proto_ops, PROTO_OP_SUBMIT_RESP, PROTO_E_THROTTLED, 10, words,
                                        sizeof words), "error 10 Temporary congestion error");
  CU_ASSERT_STRING_EQUAL(proto_describe(&cimd2_proto_ops, PROTO_OP_SUBMIT_RESP, PROTO_E_ADDRESS, 0, words,
                                        sizeof words), "error 300 Incorrect destination address");
  CU_ASSERT_STRING_EQUAL(proto_describe(&cimd2_proto_ops, PROTO_OP_NACK, PROTO_E_CHECKSUM, 0, words,
                                        sizeof words), "NACK (checksum or packet number)");
}

void suite_cimd2_proto(void);
void suite_cimd2_proto(void)
{
  static const struct test_case cases[] = {
    { "login, alive, logout: packet numbers on both sides", test_session },
    { "submits written and read, and their answers", test_submit },
    { "MOs and status reports, both ways", test_deliveries },
    { "the status report request (056) both ways", test_report_request },
    { "bad packets, NACKs, general errors, error codes", test_errors },
    { NULL, NULL },
  };
  test_add_suite("cimd2_proto", cases);
}
