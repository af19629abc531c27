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
 * Every packet comes from one table entry of plain values; the expectation
 * is printed from the same values. --spoil changes a byte of the first
 * packet's first value after encoding, for the script to prove that it
 * notices.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cimd2_codec.h"
#include "hexdump.h"

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
  return 0;
}

static int cmd_expect(void)
{
  for (size_t i = 0; i < sizeof frames / sizeof frames[0]; i++) {
    const struct frame *f = &frames[i];
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
