/* ucp_cli.c - our UCP encoder as a command-line tool, for the tshark cross-check.
 *
 *   emg_ucp_cli frames [--bad-checksum]   hex dump (text2pcap input) of one frame
 *                                         per packet, built with ucp_encode()
 *   emg_ucp_cli expect                    per frame, the fields tshark must
 *                                         decode, tab-separated, in tshark's
 *                                         -T fields rendering
 *   emg_ucp_cli fields                    the names of those tshark fields
 *
 * Every frame comes from one table entry: the builder turns the entry's plain
 * values (texts, numbers) into wire fields through the codec's helpers, and
 * the expectation is printed from the same plain values, so Wireshark's
 * decoding of what we wrote is checked against what we meant.
 * --bad-checksum spoils the first frame's checksum, for the script to prove
 * that it notices.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "charset.h"
#include "hexdump.h"
#include "ucp_codec.h"

/* The tshark fields `expect` renders, in its order; tshark_check.sh asks for
 * them with `emg_ucp_cli fields`. */
#define FIELDS                                                                                    \
  "ucp.hdr.TRN ucp.hdr.O_R ucp.hdr.OT ucp.parm.ACK ucp.parm.EC ucp.parm.SM ucp.parm.AdC "         \
  "ucp.parm.OAdC ucp.parm.PID ucp.parm.NRq ucp.parm.NT ucp.parm.SCTS ucp.parm.Dst ucp.parm.Rsn "   \
  "ucp.parm.MT ucp.parm.NB ucp.parm.AMsg ucp.parm.OTOA ucp.xser.service ucp.xser.data "            \
  "ucp.parm.PWD ucp.parm.OTON"

/* One frame, in plain values; NULL = field empty. Numeric fields are kept as
 * the digits written on the wire. */
struct frame {
  int trn;
  char o_r;
  int ot;
  /* results */
  char ack;          /* 'A' or 'N' */
  int ec;            /* NACK only */
  const char *sm;
  /* operations */
  const char *adc;   /* AdC (31, 01, 5x) */
  const char *oadc;  /* OAdC: digits, or the account (60/61) */
  const char *alnum; /* alphanumeric originator (51, OTOA 5039) ... */
  const char *alnum_hex; /* ... and its verified encoding, which tshark shows */
  const char *pid;   /* 31 */
  const char *nrq, *nt;  /* 51 */
  const char *scts;  /* 52, 53 */
  const char *dst, *rsn, *dscts; /* 53 */
  const char *text;  /* message text: AMsg (MT 3), or UCS2 TMsg (MT 4) if ucs2 */
  int ucs2;
  const char *nb;    /* the NB that UCS2 text must get */
  const char *udh;   /* hex, UDHL first: XSer 01 */
  const char *pwd;   /* 60/61 password, plain */
  const char *oton, *onpi, *styp; /* 60/61 */
  const char *ladc;  /* 61 */
};

#define OP(trn_, ot_, ...) { .trn = trn_, .o_r = 'O', .ot = ot_, __VA_ARGS__ }
#define ACK(trn_, ot_, ...) { .trn = trn_, .o_r = 'R', .ot = ot_, .ack = 'A', __VA_ARGS__ }
#define NACK(trn_, ot_, ec_, ...) { .trn = trn_, .o_r = 'R', .ot = ot_, .ack = 'N', .ec = ec_, __VA_ARGS__ }

#define RCPT "31612345678"
#define SCTS "060824143015"

static const struct frame frames[] = {
  OP(0, 60, .oadc = "emg", .oton = "6", .onpi = "5", .styp = "1", .pwd = "secret"),
  ACK(0, 60, .sm = NULL),
  NACK(0, 60, 7, .sm = "Authentication failure"),
  OP(1, 31, .adc = "emg", .pid = "0539"),
  ACK(1, 31, .sm = NULL),
  /* Texts stay within the characters GSM 03.38 and ASCII share: Wireshark 4.0
   * shows AMsg octets as ASCII (and stops at 00, the GSM '@'). */
  OP(2, 51, .adc = RCPT, .oadc = "4455", .nrq = "1", .nt = "3", .text = "Hello world, 100 EUR at home!"),
  ACK(2, 51, .sm = RCPT ":" SCTS),
  NACK(3, 51, 2, .sm = "Syntax error"),
  OP(4, 51, .adc = RCPT, .alnum = "Gateway", .alnum_hex = "0DC730BD7C0FE701", .text = "Hi"),
  OP(5, 51, .adc = RCPT, .oadc = "4455", .text = "Привет", .ucs2 = 1, .nb = "0096"),
  OP(6, 51, .adc = RCPT, .oadc = "4455", .text = "Part one text", .udh = "0500032A0201"),
  ACK(6, 51, .sm = RCPT ":060824143016"),
  OP(7, 52, .adc = "4455", .oadc = RCPT, .scts = "060824150102", .text = "STOP"),
  ACK(7, 52, .sm = NULL),
  OP(8, 53, .adc = "4455", .oadc = RCPT, .scts = SCTS, .dst = "0", .rsn = "000", .dscts = "060824143122"),
  OP(9, 53, .adc = "4455", .oadc = RCPT, .scts = SCTS, .dst = "1", .rsn = "107", .dscts = "060824143200"),
  OP(10, 53, .adc = "4455", .oadc = RCPT, .scts = SCTS, .dst = "2", .rsn = "108", .dscts = "070824143015"),
  ACK(10, 53, .sm = NULL),
  OP(11, 1, .adc = RCPT, .oadc = "4455", .text = "Call input"),
  ACK(11, 1, .sm = RCPT ":060824143017"),
  OP(12, 61, .oadc = "emg", .oton = "6", .onpi = "5", .styp = "1", .pwd = "secret", .ladc = RCPT),
  ACK(12, 61, .sm = NULL),
  NACK(13, 61, 33, .sm = "Address already in list"),
};

/* Scratch space for one frame's wire fields; they must outlive ucp_encode(). */
struct scratch {
  char amsg[700], text53[160], tmsg[300], nb[4], xser[300], oadc[32], pwd[64];
};

static void die(const char *what, int err)
{
  fprintf(stderr, "emg_ucp_cli: %s: %s\n", what, ucp_strerror(err));
  exit(1);
}

static struct ucp_slice str(const char *s)
{
  return (struct ucp_slice){ s, s ? strlen(s) : 0 };
}

/* The 53 text of a notification frame. */
static const char *text_of(const struct frame *f, struct scratch *s)
{
  int n;
  if (f->ot != 53)
    return f->text;
  n = ucp_53_text(s->text53, sizeof s->text53 - 1, str(f->oadc), str(f->scts), atoi(f->dst));
  if (n < 0)
    die("53 text", n);
  s->text53[n] = 0;
  return s->text53;
}

/* Msg, MT, NB and XSer of a message frame. */
static void message(const struct frame *f, struct scratch *s, struct ucp_slice *mt,
                    struct ucp_slice *nb, struct ucp_slice *msg, struct ucp_slice *xser)
{
  const char *text = text_of(f, s);
  int n, x = 0;
  if (f->ucs2) {
    uint8_t ucs2[140];
    int k = charset_utf8_to_ucs2(ucs2, sizeof ucs2, text, strlen(text));
    if (k < 0)
      die("UCS2", UCP_E_INVALID);
    n = ucp_tmsg_encode(s->tmsg, sizeof s->tmsg, s->nb, ucs2, (size_t)k);
    if (n < 0)
      die("TMsg", n);
    *mt = UCP_STR("4");
    *nb = (struct ucp_slice){ s->nb, 4 };
    *msg = (struct ucp_slice){ s->tmsg, (size_t)n };
    x = ucp_xser_put(s->xser, sizeof s->xser, 0x02, (const uint8_t *)"\x08", 1);
  } else {
    n = ucp_amsg_from_utf8(s->amsg, sizeof s->amsg, text, strlen(text), 0);
    if (n < 0)
      die("AMsg", n);
    *mt = UCP_STR("3");
    *msg = (struct ucp_slice){ s->amsg, (size_t)n };
  }
  if (f->udh) {
    uint8_t udh[140];
    int k = ucp_hex_decode(udh, sizeof udh, str(f->udh));
    if (k < 0)
      die("UDH", k);
    x = ucp_xser_put(s->xser, sizeof s->xser, 0x01, udh, (size_t)k);
  }
  if (x < 0)
    die("XSer", x);
  *xser = (struct ucp_slice){ s->xser, (size_t)x };
}

static struct ucp_slice password(const struct frame *f, struct scratch *s)
{
  int n = ucp_hex_encode(s->pwd, sizeof s->pwd, (const uint8_t *)f->pwd, strlen(f->pwd));
  if (n < 0)
    die("PWD", n);
  return (struct ucp_slice){ s->pwd, (size_t)n };
}

static int build(const struct frame *f, uint8_t *out, size_t cap)
{
  struct scratch s;
  struct ucp_msg m;
  int n;

  ucp_msg_init(&m, f->trn, f->o_r, f->ot);
  if (f->o_r == 'R') {
    m.r.ack = f->ack == 'A';
    m.r.ec = f->ec;
    m.r.sm = str(f->sm);
  } else if (f->ot == 31) {
    m.o31.adc = str(f->adc);
    m.o31.pid = str(f->pid);
  } else if (f->ot == 1) {
    m.o01.adc = str(f->adc);
    m.o01.oadc = str(f->oadc);
    message(f, &s, &m.o01.mt, &(struct ucp_slice){ 0 }, &m.o01.msg, &(struct ucp_slice){ 0 });
  } else if (f->ot == 60) {
    m.o60.oadc = str(f->oadc);
    m.o60.oton = str(f->oton);
    m.o60.onpi = str(f->onpi);
    m.o60.styp = str(f->styp);
    m.o60.pwd = password(f, &s);
    m.o60.vers = UCP_STR("0100");
  } else if (f->ot == 61) {
    m.o61.oadc = str(f->oadc);
    m.o61.oton = str(f->oton);
    m.o61.onpi = str(f->onpi);
    m.o61.styp = str(f->styp);
    m.o61.pwd = password(f, &s);
    m.o61.vers = UCP_STR("0100");
    m.o61.ladc = str(f->ladc);
  } else {
    struct ucp_op5x *o = &m.o5x;
    o->adc = str(f->adc);
    o->oadc = str(f->oadc);
    if (f->alnum) {
      n = ucp_oadc_alnum_encode(s.oadc, sizeof s.oadc, f->alnum, strlen(f->alnum));
      if (n < 0)
        die("alphanumeric OAdC", n);
      o->oadc = (struct ucp_slice){ s.oadc, (size_t)n };
      o->otoa = UCP_STR("5039");
    }
    o->nrq = str(f->nrq);
    o->nt = str(f->nt);
    o->scts = str(f->scts);
    o->dst = str(f->dst);
    o->rsn = str(f->rsn);
    o->dscts = str(f->dscts);
    message(f, &s, &o->mt, &o->nb, &o->msg, &o->xser);
  }
  n = ucp_encode(&m, out, cap);
  if (n < 0)
    die("encode", n);
  return n;
}

static int cmd_frames(int bad_checksum)
{
  for (size_t i = 0; i < sizeof frames / sizeof frames[0]; i++) {
    uint8_t b[1024];
    int n = build(&frames[i], b, sizeof b);
    if (bad_checksum && i == 0)
      b[n - 2] = b[n - 2] == '0' ? '1' : '0';
    hexdump_frame(b, n);
  }
  return 0;
}

/* tshark renders FT_CHAR fields as 'c', integers without leading zeros,
 * absolute times as "Aug  6, 2024 14:30:15.000000000 UTC". */
static void put_char(const char *v)
{
  printf(v ? "'%s'\t" : "\t", v);
}

static void put_int(const char *v)
{
  printf(v ? "%d\t" : "\t", v ? atoi(v) : 0);
}

static void put_str(const char *v)
{
  printf("%s\t", v ? v : "");
}

static void put_time(const char *scts)
{
  char b[64] = "";
  time_t t;
  struct tm tm;
  if (scts && ucp_time_parse(str(scts), &t) == 0 && gmtime_r(&t, &tm))
    strftime(b, sizeof b, "%b %e, %Y %H:%M:%S.000000000 UTC", &tm);
  put_str(b);
}

static int cmd_expect(void)
{
  for (size_t i = 0; i < sizeof frames / sizeof frames[0]; i++) {
    const struct frame *f = &frames[i];
    struct scratch s;
    char trn[4], ot[4], o_r[2] = { f->o_r, 0 }, ack[2] = { f->ack, 0 }, ec[4];
    int msg = f->o_r == 'O' && f->ot != 31 && f->ot < 60;
    snprintf(trn, sizeof trn, "%d", f->trn);
    snprintf(ot, sizeof ot, "%d", f->ot);
    snprintf(ec, sizeof ec, "%d", f->ec);
    put_int(trn);
    put_char(o_r);
    put_int(ot);
    put_char(f->ack ? ack : NULL);
    put_int(f->ack == 'N' ? ec : NULL);
    put_str(f->sm);
    put_str(f->adc);
    put_str(f->alnum ? f->alnum_hex : f->oadc);
    put_int(f->pid);
    put_char(f->nrq);
    put_char(f->nt);
    put_time(f->scts);
    put_char(f->dst);
    put_int(f->rsn);
    put_char(msg ? (f->ucs2 ? "4" : "3") : NULL);
    put_str(f->nb);
    put_str(msg && !f->ucs2 ? text_of(f, &s) : NULL);
    put_str(f->alnum ? "5039" : NULL);
    put_str(f->ucs2 ? "0x02" : f->udh ? "0x01" : NULL);
    put_str(f->ucs2 ? "08" : f->udh);
    put_str(f->pwd);
    printf(f->oton ? "'%s'\n" : "\n", f->oton);
  }
  return 0;
}

int main(int argc, char **argv)
{
  if (argc >= 2 && strcmp(argv[1], "frames") == 0)
    return cmd_frames(argc > 2 && strcmp(argv[2], "--bad-checksum") == 0);
  if (argc == 2 && strcmp(argv[1], "expect") == 0)
    return cmd_expect();
  if (argc == 2 && strcmp(argv[1], "fields") == 0)
    return puts(FIELDS) < 0;
  fprintf(stderr, "usage: emg_ucp_cli frames [--bad-checksum] | expect | fields\n");
  return 2;
}
