/* cimd2_cli.c - our CIMD2 encoder as a command-line tool, for the tshark
 * cross-check (tshark_check.sh cimd ...).
 *
 *   emg_cimd2_cli frames [--spoil]   hex dump (text2pcap input) of one packet
 *                                    per frame, built with cimd2_encode()
 *   emg_cimd2_cli expect             per packet, the fields tshark must
 *                                    decode, tab-separated, as tshark -T
 *                                    fields renders them
 *   emg_cimd2_cli fields             the names of those tshark fields
 *
 * The first packets come from one table entry of plain values each, built
 * with the codec; the expectation is printed from the same values. The
 * others are what the adapter (cimd2_proto_ops) writes for neutral PDUs a
 * gateway sends, each beside the packet it must be, written out by hand.
 * --spoil changes a byte of the first packet's first value after encoding,
 * for the script to prove that it notices.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cimd2_codec.h"
#include "hexdump.h"
#include "iobuf.h"
#include "proto.h"

/* The parameters the check compares, in the order of FIELDS after the
 * operation code and packet number. */
static const struct {
  uint16_t code;
  const char *field;
  int number;                      /* tshark shows it as an integer: 1 decimal, 2 hex (0x04) */
} checked[] = {
  { CIMD2_P_USER, "cimd.ui", 0 },
  { CIMD2_P_PASSWORD, "cimd.passwd", 0 },
  { CIMD2_P_WINDOW, "cimd.ws", 0 },
  { CIMD2_P_DESTINATION, "cimd.da", 0 },
  { CIMD2_P_ORIGINATOR, "cimd.oa", 0 },
  { CIMD2_P_ORIGINATOR_ALPHA, "cimd.aoi", 0 },
  { CIMD2_P_DCS, "cimd.dcs", 2 },
  { CIMD2_P_UDH, "cimd.udh", 0 },
  { CIMD2_P_TEXT, "cimd.ud", 0 },
  { CIMD2_P_BINARY, "cimd.udb", 0 },
  { CIMD2_P_VALIDITY_RELATIVE, "cimd.vpr", 0 },
  { CIMD2_P_STATUS_REPORT_REQUEST, "cimd.srr", 0 },
  { CIMD2_P_SC_TIMESTAMP, "cimd.scts", 0 },
  { CIMD2_P_STATUS_CODE, "cimd.stcode", 1 },
  { CIMD2_P_STATUS_ERROR, "cimd.sterrcode", 1 },
  { CIMD2_P_DISCHARGE_TIME, "cimd.dt", 0 },
  { CIMD2_P_ERROR_CODE, "cimd.errcode", 1 },
  { CIMD2_P_ERROR_TEXT, "cimd.errtext", 0 },
};
#define NCHECKED (sizeof checked / sizeof checked[0])

struct param {
  uint16_t code;
  const char *value;
};

struct frame {
  uint8_t op;
  uint16_t number;
  struct param params[12];         /* ended by code 0 */
};

/* What a gateway sends and gets: login, submits (text, binary with a UDH,
 * alphanumeric sender), a deliver, a status report, alive, errors, and the
 * responses; client numbers odd, the SMSC's even. */
static const struct frame frames[] = {
  { CIMD2_LOGIN, 1, { { CIMD2_P_USER, "emg" }, { CIMD2_P_PASSWORD, "secret" }, { CIMD2_P_WINDOW, "64" } } },
  { CIMD2_LOGIN + CIMD2_RESPONSE, 1, { { 0, NULL } } },
  { CIMD2_SUBMIT, 3, { { CIMD2_P_DESTINATION, "4917012345" }, { CIMD2_P_ORIGINATOR, "4917099999" },
                       { CIMD2_P_TEXT, "Hello from emg, 42 times" }, { CIMD2_P_STATUS_REPORT_REQUEST, "12" },
                       { CIMD2_P_VALIDITY_RELATIVE, "167" } } },
  { CIMD2_SUBMIT + CIMD2_RESPONSE, 3, { { CIMD2_P_DESTINATION, "4917012345" },
                                        { CIMD2_P_SC_TIMESTAMP, "261202115500" } } },
  { CIMD2_SUBMIT, 5, { { CIMD2_P_DESTINATION, "4917012345" }, { CIMD2_P_ORIGINATOR_ALPHA, "emgShop" },
                       { CIMD2_P_DCS, "4" }, { CIMD2_P_UDH, "050003A70201" },
                       { CIMD2_P_BINARY, "0102030405FF" } } },
  { CIMD2_DELIVER, 2, { { CIMD2_P_DESTINATION, "12345" }, { CIMD2_P_ORIGINATOR, "4917012345" },
                        { CIMD2_P_SC_TIMESTAMP, "261202115501" }, { CIMD2_P_TEXT, "STOP" } } },
  { CIMD2_DELIVER + CIMD2_RESPONSE, 2, { { 0, NULL } } },
  { CIMD2_STATUS_REPORT, 4, { { CIMD2_P_DESTINATION, "4917012345" }, { CIMD2_P_SC_TIMESTAMP, "261202115500" },
                              { CIMD2_P_STATUS_CODE, "4" }, { CIMD2_P_DISCHARGE_TIME, "261202115510" } } },
  { CIMD2_STATUS_REPORT, 6, { { CIMD2_P_DESTINATION, "4917012345" }, { CIMD2_P_SC_TIMESTAMP, "261202115500" },
                              { CIMD2_P_STATUS_CODE, "3" }, { CIMD2_P_STATUS_ERROR, "9" },
                              { CIMD2_P_DISCHARGE_TIME, "261202115512" } } },
  { CIMD2_STATUS_REPORT + CIMD2_RESPONSE, 4, { { 0, NULL } } },
  { CIMD2_ALIVE, 7, { { 0, NULL } } },
  { CIMD2_ALIVE + CIMD2_RESPONSE, 7, { { 0, NULL } } },
  { CIMD2_SUBMIT + CIMD2_RESPONSE, 9, { { CIMD2_P_ERROR_CODE, "300" },
                                        { CIMD2_P_ERROR_TEXT, "Incorrect destination address" } } },
  { CIMD2_GENERAL_ERROR, 11, { { CIMD2_P_ERROR_CODE, "2" }, { CIMD2_P_ERROR_TEXT, "Syntax error" } } },
  { CIMD2_NACK, 13, { { 0, NULL } } },
  { CIMD2_LOGOUT, 15, { { 0, NULL } } },
};

/* What the adapter must write for the PDUs of adapter_pdu(), in order. */
static const struct frame adapter_frames[] = {
  { CIMD2_LOGIN, 1, { { CIMD2_P_USER, "emg" }, { CIMD2_P_PASSWORD, "secret" }, { CIMD2_P_WINDOW, "64" } } },
  { CIMD2_SUBMIT, 3, { { CIMD2_P_DESTINATION, "4917012345" }, { CIMD2_P_ORIGINATOR, "+4917099999" },
                       { CIMD2_P_TEXT, "Hi, 42% off: see you!" }, { CIMD2_P_VALIDITY_RELATIVE, "11" },
                       { CIMD2_P_STATUS_REPORT_REQUEST, "62" } } },
  { CIMD2_SUBMIT, 5, { { CIMD2_P_DESTINATION, "4917012345" }, { CIMD2_P_ORIGINATOR_ALPHA, "emgShop" },
                       { CIMD2_P_DCS, "4" }, { CIMD2_P_UDH, "050003A70201" }, { CIMD2_P_BINARY, "0102FF" },
                       { CIMD2_P_STATUS_REPORT_REQUEST, "0" } } },
  { CIMD2_SUBMIT + CIMD2_RESPONSE, 5, { { CIMD2_P_DESTINATION, "4917012345" },
                                        { CIMD2_P_SC_TIMESTAMP, "261202144001" } } },
  { CIMD2_DELIVER, 2, { { CIMD2_P_DESTINATION, "12345" }, { CIMD2_P_ORIGINATOR, "4917012345" },
                        { CIMD2_P_TEXT, "STOP" }, { CIMD2_P_SC_TIMESTAMP, "261202115501" } } },
  { CIMD2_STATUS_REPORT, 4, { { CIMD2_P_DESTINATION, "4917012345" }, { CIMD2_P_SC_TIMESTAMP, "261202115500" },
                              { CIMD2_P_STATUS_CODE, "3" }, { CIMD2_P_STATUS_ERROR, "1" },
                              { CIMD2_P_DISCHARGE_TIME, "261202115510" } } },
  { CIMD2_STATUS_REPORT + CIMD2_RESPONSE, 4, { { 0, NULL } } },
  { CIMD2_ALIVE, 6, { { 0, NULL } } },
  { CIMD2_SUBMIT + CIMD2_RESPONSE, 7, { { CIMD2_P_ERROR_CODE, "10" } } },
  { CIMD2_LOGIN + CIMD2_RESPONSE, 1, { { CIMD2_P_ERROR_CODE, "100" } } },
  { CIMD2_GENERAL_ERROR, 11, { { CIMD2_P_ERROR_CODE, "1" } } },
  { CIMD2_NACK, 9, { { 0, NULL } } },
  { CIMD2_LOGOUT, 17, { { 0, NULL } } },
};
#define NADAPTER (sizeof adapter_frames / sizeof adapter_frames[0])

/* The i-th neutral PDU, and the side that sends it. */
static void adapter_pdu(size_t i, struct proto_pdu *pdu, struct proto_options *opt)
{
  /* ASCII only: tshark 4.0 reads CIMD2's combinations wrongly (doc/cimd2.md
   * 6.5); the unit tests check them byte for byte. */
  static const char text[] = "Hi, 42% off: see you!";
  static const uint8_t udh[] = { 5, 0, 3, 0xA7, 2, 1 }, octets[] = { 1, 2, 0xFF };
  static const uint8_t stop[] = { 'S', 'T', 'O', 'P' };
  memset(pdu, 0, sizeof *pdu);
  *opt = (struct proto_options){ .window = 1 };
  struct msg *m = &pdu->msg;
  switch (i) {
  case 0:
    *pdu = (struct proto_pdu){ .op = PROTO_OP_BIND, .ref = 0 };
    strcpy(pdu->user, "emg");
    strcpy(pdu->password, "secret");
    opt->window = 64;
    break;
  case 1:
  case 2:
    pdu->op = PROTO_OP_SUBMIT;
    pdu->ref = (uint32_t)i;
    strcpy(m->dst.addr, "4917012345");
    if (i == 1) {
      strcpy(m->src.addr, "4917099999");
      m->src.ton = MSG_TON_INTERNATIONAL;
      m->data = (const uint8_t *)text;
      m->data_len = sizeof text - 1;
      m->dlr_mask = MSG_DLR_DELIVERED | MSG_DLR_FAILED;
      m->received_ms = 1796212501000;
      m->validity = 1796212501 + 3600;   /* an hour: TP-VP 11 */
    } else {
      strcpy(m->src.addr, "emgShop");
      m->src.ton = MSG_TON_ALPHANUMERIC;
      m->coding = SMS_TEXT_8BIT;
      m->dcs = 4;
      m->udh = udh;
      m->udh_len = sizeof udh;
      m->data = octets;
      m->data_len = sizeof octets;
    }
    break;
  case 3:
    *pdu = (struct proto_pdu){ .op = PROTO_OP_SUBMIT_RESP, .ref = 5, .raw_status = CIMD2_SUBMIT };
    strcpy(pdu->msgid, "4917012345:261202144001");
    opt->smsc_side = true;
    break;
  case 4:
    pdu->op = PROTO_OP_DELIVER;
    pdu->ref = 1;
    strcpy(m->dst.addr, "12345");
    strcpy(m->src.addr, "4917012345");
    m->data = stop;
    m->data_len = sizeof stop;
    m->received_ms = 1796212501000;   /* 2026-12-02 11:55:01 UTC */
    opt->smsc_side = true;
    break;
  case 5:
    *pdu = (struct proto_pdu){ .op = PROTO_OP_DELIVER, .ref = 2, .is_receipt = true };
    strcpy(pdu->receipt.id, "4917012345:261202115500");
    pdu->receipt.state = MSG_STATE_UNDELIVERABLE;
    pdu->receipt.err = 1;
    pdu->receipt.done_time = 1796212510;
    opt->smsc_side = true;
    break;
  case 6:
    *pdu = (struct proto_pdu){ .op = PROTO_OP_DELIVER_RESP, .ref = 4, .raw_status = CIMD2_STATUS_REPORT };
    break;
  case 7:
    *pdu = (struct proto_pdu){ .op = PROTO_OP_KEEPALIVE, .ref = 3 };
    opt->smsc_side = true;
    break;
  case 8:
    *pdu = (struct proto_pdu){ .op = PROTO_OP_SUBMIT_RESP, .ref = 7, .raw_status = CIMD2_SUBMIT,
                               .status = PROTO_E_THROTTLED };
    opt->smsc_side = true;
    break;
  case 9:
    *pdu = (struct proto_pdu){ .op = PROTO_OP_BIND_RESP, .ref = 1, .raw_status = CIMD2_LOGIN,
                               .status = PROTO_E_AUTH_PASSWORD };
    opt->smsc_side = true;
    break;
  case 10:
    *pdu = (struct proto_pdu){ .op = PROTO_OP_OTHER, .ref = 11, .raw_status = 17, .status = PROTO_E_UNSUPPORTED };
    opt->smsc_side = true;
    break;
  case 11:
    *pdu = (struct proto_pdu){ .op = PROTO_OP_NACK, .ref = 9, .status = PROTO_E_CHECKSUM };
    opt->smsc_side = true;
    break;
  default:
    *pdu = (struct proto_pdu){ .op = PROTO_OP_UNBIND, .ref = 8 };
    break;
  }
}

static int build(const struct frame *f, uint8_t *out, size_t cap)
{
  struct cimd2_packet p;
  cimd2_packet_init(&p, f->op, f->number);
  for (const struct param *q = f->params; q->code; q++)
    if (cimd2_put(&p, q->code, q->value, strlen(q->value)) < 0)
      return -1;
  return cimd2_encode(&p, out, cap);
}

static int cmd_frames(int spoil)
{
  for (size_t i = 0; i < sizeof frames / sizeof frames[0]; i++) {
    uint8_t b[1024];
    int n = build(&frames[i], b, sizeof b);
    if (n < 0) {
      fprintf(stderr, "emg_cimd2_cli: packet %zu: %s\n", i + 1, cimd2_strerror(n));
      return 1;
    }
    if (spoil && i == 0)
      b[12] = 'x';   /* "\x02" "01:001\t010:" then the user's first letter */
    hexdump_frame(b, n);
  }
  for (size_t i = 0; i < NADAPTER; i++) {
    struct proto_pdu pdu;
    struct proto_options opt;
    struct iobuf out;
    adapter_pdu(i, &pdu, &opt);
    iobuf_init(&out);
    int n = cimd2_proto_ops.encode(&pdu, &out, &opt);
    if (n <= 0) {
      fprintf(stderr, "emg_cimd2_cli: adapter packet %zu: %s\n", i + 1, cimd2_strerror(n));
      iobuf_destroy(&out);
      return 1;
    }
    hexdump_frame(iobuf_head(&out), n);
    iobuf_destroy(&out);
  }
  return 0;
}

static int cmd_expect(void)
{
  for (size_t i = 0; i < sizeof frames / sizeof frames[0] + NADAPTER; i++) {
    const struct frame *f = i < sizeof frames / sizeof frames[0] ? &frames[i]
                                                                 : &adapter_frames[i - sizeof frames / sizeof frames[0]];
    printf("%u\t%u", (unsigned)f->op, (unsigned)f->number);
    for (size_t k = 0; k < NCHECKED; k++) {
      const char *v = "";
      for (const struct param *q = f->params; q->code; q++)
        if (q->code == checked[k].code)
          v = q->value;
      if (checked[k].number == 2 && *v)
        printf("\t0x%02lx", strtol(v, NULL, 10));
      else if (checked[k].number && *v)
        printf("\t%ld", strtol(v, NULL, 10));
      else
        printf("\t%s", v);
    }
    printf("\n");
  }
  return 0;
}

static int cmd_fields(void)
{
  printf("cimd.opcode cimd.pnumber");
  for (size_t k = 0; k < NCHECKED; k++)
    printf(" %s", checked[k].field);
  printf("\n");
  return 0;
}

int main(int argc, char **argv)
{
  if (argc >= 2 && strcmp(argv[1], "frames") == 0)
    return cmd_frames(argc > 2 && strcmp(argv[2], "--spoil") == 0);
  if (argc == 2 && strcmp(argv[1], "expect") == 0)
    return cmd_expect();
  if (argc == 2 && strcmp(argv[1], "fields") == 0)
    return cmd_fields();
  fprintf(stderr, "usage: emg_cimd2_cli frames [--spoil] | expect | fields\n");
  return 2;
}
