/* test_ucp_proto.c - the UCP/EMI adapter: Kannel's captured frames and the
 * frames of doc/ucp.md 7 to neutral PDUs and back, round trips of every
 * op, decode errors and the answers they make, EC <-> status, Latin-1 text,
 * and the SCTS allocator.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "charset.h"
#include "iobuf.h"
#include "proto.h"
#include "sms_text.h"
#include "testutil.h"
#include "ucp_codec.h"
#include "scts.h"
#include "ucp_proto.h"

/* ---- helpers ---- */

static uint8_t scratch[PROTO_SCRATCH_LEN];
static const struct proto_options defaults;

/* Decodes inner (STX and ETX added) from a buffer freed before returning,
 * so ASan catches a pdu that still points into the frame. */
static int dec_opt(const char *inner, struct proto_pdu *pdu, const struct proto_options *opt)
{
  size_t n = strlen(inner);
  uint8_t *f = malloc(n + 2);
  int r;
  f[0] = UCP_STX;
  memcpy(f + 1, inner, n);
  f[n + 1] = UCP_ETX;
  r = ucp_proto_ops.decode(pdu, f, n + 2, scratch, opt);
  free(f);
  return r;
}

static int dec(const char *inner, struct proto_pdu *pdu)
{
  return dec_opt(inner, pdu, &defaults);
}

/* Encodes pdu; returns the frame without STX and ETX (static storage), or
 * "" when encoding failed, its code in *rc (may be NULL). */
static const char *enc_opt(const struct proto_pdu *pdu, const struct proto_options *opt, int *rc)
{
  static char text[8192];
  struct iobuf b;
  int r;
  iobuf_init(&b);
  r = ucp_proto_ops.encode(pdu, &b, opt);
  text[0] = '\0';
  if (r > 0) {
    CU_ASSERT_EQUAL((size_t)r, iobuf_len(&b));
    CU_ASSERT_EQUAL(iobuf_head(&b)[0], UCP_STX);
    CU_ASSERT_EQUAL(iobuf_head(&b)[r - 1], UCP_ETX);
    memcpy(text, iobuf_head(&b) + 1, (size_t)r - 2);
    text[r - 2] = '\0';
  }
  if (rc)
    *rc = r;
  iobuf_destroy(&b);
  return text;
}

static const char *enc(const struct proto_pdu *pdu)
{
  return enc_opt(pdu, &defaults, NULL);
}

/* "TT/LLLLL/rest" + checksum, with LEN and checksum computed here. */
static const char *frame(int trn, const char *rest)
{
  static char inner[4096];
  unsigned sum = 0;
  snprintf(inner, sizeof inner, "%02d/%05zu/%s", trn, strlen(rest) + 11, rest);
  for (const char *p = inner; *p; p++)
    sum += (uint8_t)*p;
  snprintf(inner + strlen(inner), sizeof inner - strlen(inner), "%02X", sum & 0xFF);
  return inner;
}

/* A frame built with the codec (a 5x op of many fields is easier to get
 * right this way), without STX and ETX. */
static const char *codec_frame(const struct ucp_msg *m)
{
  static char inner[4096];
  uint8_t buf[4096];
  int n = ucp_encode(m, buf, sizeof buf);
  CU_ASSERT_FATAL(n > 0);
  memcpy(inner, buf + 1, (size_t)n - 2);
  inner[n - 2] = '\0';
  return inner;
}

static int64_t utc(int y, int mon, int d, int h, int min, int s)
{
  struct tm tm = { .tm_year = y - 1900, .tm_mon = mon - 1, .tm_mday = d,
                   .tm_hour = h, .tm_min = min, .tm_sec = s };
  return (int64_t)timegm(&tm);
}

static int data_is(const struct msg *m, const void *want, size_t len)
{
  return m->data_len == len && (len == 0 || memcmp(m->data, want, len) == 0);
}
/* GSM-7 text equal to an ASCII string whose characters GSM shares. */
#define ASSERT_TEXT(m, s) CU_ASSERT(data_is((m), (s), strlen(s)))

static void set_addr(struct msg_addr *a, const char *addr, uint8_t ton, uint8_t npi)
{
  snprintf(a->addr, sizeof a->addr, "%s", addr);
  a->ton = ton;
  a->npi = npi;
}

/* ---- Kannel 1.4.5 emi2 client ---- */

static const char *inner_of(const struct test_vector *v)
{
  static char inner[4096];
  memcpy(inner, v->bytes + 1, v->len - 2);
  inner[v->len - 2] = '\0';
  return inner;
}

static void check_kannel_51(const char *inner, const struct proto_pdu *p)
{
  const struct msg *m = &p->msg;
  const char *to = m->dst.addr;
  int same_frame = 1; /* does re-encoding give Kannel's bytes back? */

  CU_ASSERT_EQUAL(p->raw_status, 51);
  CU_ASSERT_EQUAL(p->status, PROTO_OK);
  /* Kannel asks for DN + ND: NRq 1, NT 3 */
  CU_ASSERT_EQUAL(m->dlr_mask, MSG_DLR_DELIVERED | MSG_DLR_FAILED);
  if (strcmp(to, "4790000101") == 0) {
    CU_ASSERT_STRING_EQUAL(m->src.addr, "12345");
    CU_ASSERT_EQUAL(m->src.ton, MSG_TON_UNKNOWN);
    CU_ASSERT_EQUAL(m->src.npi, 1);
    CU_ASSERT_EQUAL(m->coding, SMS_TEXT_GSM7);
    CU_ASSERT_EQUAL(m->dcs, 0x00);
    CU_ASSERT_EQUAL(m->udh_len, 0);
    ASSERT_TEXT(m, "Hello world");
  } else if (strcmp(to, "4790000102") == 0) {
    CU_ASSERT_STRING_EQUAL(m->src.addr, "Harness");
    CU_ASSERT_EQUAL(m->src.ton, MSG_TON_ALPHANUMERIC);
    ASSERT_TEXT(m, "Alphanumeric sender");
  } else if (strcmp(to, "4790000103") == 0) {
    CU_ASSERT_STRING_EQUAL(m->src.addr, "4712345678");
    CU_ASSERT_EQUAL(m->src.ton, MSG_TON_INTERNATIONAL);
    CU_ASSERT_EQUAL(m->src.npi, 1);
    ASSERT_TEXT(m, "International sender");
  } else if (strcmp(to, "4790000104") == 0) {
    static const uint8_t ucs2[] = { 0x04, 0x1F, 0x04, 0x40, 0x04, 0x38, 0x04, 0x32,
                                    0x04, 0x35, 0x04, 0x42, 0x00, 0x20, 0x20, 0xAC };
    uint8_t want[64];
    int n = charset_utf8_to_ucs2(want, sizeof want, "Привет €", strlen("Привет €"));
    CU_ASSERT_EQUAL(m->coding, SMS_TEXT_UCS2);
    CU_ASSERT_EQUAL(m->dcs, 0x08);
    CU_ASSERT(data_is(m, ucs2, sizeof ucs2));
    CU_ASSERT(n == (int)sizeof ucs2 && data_is(m, want, (size_t)n));
  } else if (strcmp(to, "4790000105") == 0) {
    static const uint8_t udh[] = { 0x06, 0x05, 0x04, 0x0B, 0x84, 0x23, 0xF0 };
    static const uint8_t bin[] = { 0xC0, 0xFF, 0x00, 0x01 };
    CU_ASSERT_EQUAL(m->coding, SMS_TEXT_8BIT);
    /* no XSer 02, but MCLs 1: 8-bit data, class 1 */
    CU_ASSERT_EQUAL(m->dcs, 0x15);
    CU_ASSERT(m->udh_len == sizeof udh && memcmp(m->udh, udh, sizeof udh) == 0);
    CU_ASSERT(data_is(m, bin, sizeof bin));
    same_frame = 0; /* the class now travels in XSer 02 */
  } else if (strcmp(to, "4790000106") == 0) {
    CU_ASSERT_EQUAL(m->coding, SMS_TEXT_GSM7);
    CU_ASSERT_EQUAL(m->dcs, 0x10); /* class 0: flash */
    ASSERT_TEXT(m, "Flash message");
  } else if (strcmp(to, "4790000107") == 0) {
    CU_ASSERT_EQUAL(m->validity, utc(2026, 11, 30, 6, 35, 0));
    CU_ASSERT_EQUAL(m->pid, 0x41);
    ASSERT_TEXT(m, "Validity and PID");
  } else {
    CU_FAIL("unexpected recipient");
  }
  if (same_frame) {
    CU_ASSERT_STRING_EQUAL(enc(p), inner);
  } else {
    /* the same message, though not the same bytes */
    struct proto_pdu back;
    uint8_t data[16], udh[16];
    uint8_t dcs = m->dcs;
    size_t len = m->data_len, udh_len = m->udh_len;
    memcpy(data, m->data, len);
    memcpy(udh, m->udh, udh_len);
    CU_ASSERT_EQUAL(dec(enc(p), &back), 0);
    CU_ASSERT_EQUAL(back.msg.dcs, dcs);
    CU_ASSERT(data_is(&back.msg, data, len));
    CU_ASSERT(back.msg.udh_len == udh_len && memcmp(back.msg.udh, udh, udh_len) == 0);
  }
}

static void test_kannel_vectors(void)
{
  struct test_vector *v;
  int n = test_vectors_load("ucp-kannel-emi2-client.hex", &v), o51 = 0, r53 = 0;
  CU_ASSERT_FATAL(n > 0);
  for (int i = 0; i < n; i++) {
    const char *inner = inner_of(&v[i]);
    struct proto_pdu p;
    CU_ASSERT_EQUAL_FATAL(dec(inner, &p), 0);
    if (strcmp(v[i].label, "O60") == 0) {
      CU_ASSERT_EQUAL(p.op, PROTO_OP_BIND);
      CU_ASSERT_EQUAL(p.ref, 0);
      CU_ASSERT_EQUAL(p.bind_mode, PROTO_BIND_TRX);
      CU_ASSERT_STRING_EQUAL(p.user, "harness");
      CU_ASSERT_STRING_EQUAL(p.password, "secret");
      CU_ASSERT_EQUAL(p.raw_status, 60);
      CU_ASSERT_STRING_EQUAL(enc(&p), inner);
    } else if (strcmp(v[i].label, "O31") == 0) {
      CU_ASSERT_EQUAL(p.op, PROTO_OP_KEEPALIVE);
      CU_ASSERT_STRING_EQUAL(p.user, "harness");
      CU_ASSERT_EQUAL(p.raw_status, 31);
      CU_ASSERT_STRING_EQUAL(enc(&p), inner);
    } else if (strcmp(v[i].label, "O51") == 0) {
      CU_ASSERT_EQUAL(p.op, PROTO_OP_SUBMIT);
      check_kannel_51(inner, &p);
      o51++;
    } else if (strcmp(v[i].label, "R53/A") == 0) {
      CU_ASSERT_EQUAL(p.op, PROTO_OP_DELIVER_RESP);
      CU_ASSERT_EQUAL(p.status, PROTO_OK);
      CU_ASSERT(p.is_receipt);
      CU_ASSERT_EQUAL(p.ref, (uint32_t)r53);
      r53++;
    } else {
      CU_FAIL("unexpected label");
    }
  }
  CU_ASSERT_EQUAL(o51, 7);
  CU_ASSERT_EQUAL(r53, 7);
  test_vectors_free(v, n);
}

/* ---- doc/ucp.md 7 ---- */

static void test_spec_session(void)
{
  struct proto_pdu p = { 0 };

  /* 1: login; OTON 6 / ONPI 5 as Kannel sends them */
  p.op = PROTO_OP_BIND;
  p.ref = 1;
  snprintf(p.user, sizeof p.user, "12345");
  snprintf(p.password, sizeof p.password, "secret");
  CU_ASSERT_STRING_EQUAL(enc(&p), "01/00052/O/60/12345/6/5/1/736563726574//0100//////D6");
  /* 2, 3: its ACK and NACK */
  memset(&p, 0, sizeof p);
  p.op = PROTO_OP_BIND_RESP;
  p.ref = 1;
  CU_ASSERT_STRING_EQUAL(enc(&p), "01/00019/R/60/A//6E");
  CU_ASSERT_EQUAL(dec("01/00019/R/60/A//6E", &p), 0);
  CU_ASSERT_EQUAL(p.op, PROTO_OP_BIND_RESP);
  CU_ASSERT_EQUAL(p.status, PROTO_OK);
  p.status = PROTO_E_AUTH;
  CU_ASSERT_STRING_EQUAL(enc(&p), "01/00044/R/60/N/07/Authentication failure/D7");
  CU_ASSERT_EQUAL(dec("01/00044/R/60/N/07/Authentication failure/D7", &p), 0);
  CU_ASSERT_EQUAL(p.op, PROTO_OP_BIND_RESP);
  CU_ASSERT_EQUAL(p.status, PROTO_E_AUTH);
  CU_ASSERT_EQUAL(p.raw_status, 7);
  CU_ASSERT_STRING_EQUAL(p.text, "Authentication failure");

  /* spec example login: national number, password "Password" */
  CU_ASSERT_EQUAL(dec("02/00059/O/60/07656765/2/1/1/50617373776F7264//0100//////61", &p), 0);
  CU_ASSERT_EQUAL(p.op, PROTO_OP_BIND);
  CU_ASSERT_EQUAL(p.ref, 2);
  CU_ASSERT_STRING_EQUAL(p.user, "07656765");
  CU_ASSERT_STRING_EQUAL(p.password, "Password");

  /* 10: keep-alive and its ACK */
  memset(&p, 0, sizeof p);
  p.op = PROTO_OP_KEEPALIVE;
  p.ref = 7;
  snprintf(p.user, sizeof p.user, "12345");
  CU_ASSERT_STRING_EQUAL(enc(&p), "07/00027/O/31/12345/0539/FD");
  p.op = PROTO_OP_KEEPALIVE_RESP;
  p.raw_status = 31;
  CU_ASSERT_STRING_EQUAL(enc(&p), "07/00019/R/31/A//72");
  CU_ASSERT_EQUAL(dec("07/00019/R/31/A//72", &p), 0);
  CU_ASSERT_EQUAL(p.op, PROTO_OP_KEEPALIVE_RESP);
  CU_ASSERT_EQUAL(p.ref, 7);
  CU_ASSERT_EQUAL(dec("02/00035/O/31/0234765439845/0139/A0", &p), 0);
  CU_ASSERT_EQUAL(p.op, PROTO_OP_KEEPALIVE);
  CU_ASSERT_STRING_EQUAL(p.user, "0234765439845");
}

static void test_spec_submit(void)
{
  static const char ex4[] =
    "02/00357/O/51/31612345678/4455//1//3/////////////3//4465617220637573746F6D65722C20796F7572"
    "2070617263656C203437313120686173206265656E206469737061746368656420616E642077696C6C206172"
    "7269766520746F6D6F72726F77206265747765656E2030383A303020616E642031323A30302E205265706C79"
    "2053544F5020746F206F7074206F75742E205468616E6B7320666F72206F72646572696E6721////////////"
    "/79";
  struct proto_pdu p;

  /* 4: a 145-character submit with DN + ND */
  CU_ASSERT_EQUAL(dec(ex4, &p), 0);
  CU_ASSERT_EQUAL(p.op, PROTO_OP_SUBMIT);
  CU_ASSERT_EQUAL(p.ref, 2);
  CU_ASSERT_STRING_EQUAL(p.msg.dst.addr, "31612345678");
  CU_ASSERT_STRING_EQUAL(p.msg.src.addr, "4455");
  CU_ASSERT_EQUAL(p.msg.dlr_mask, MSG_DLR_DELIVERED | MSG_DLR_FAILED);
  CU_ASSERT_EQUAL(p.msg.data_len, 145);
  CU_ASSERT(memcmp(p.msg.data, "Dear customer,", 14) == 0);
  CU_ASSERT_STRING_EQUAL(enc(&p), ex4);

  /* 5, 6: its ACK (SM = AdC:SCTS) and a NACK */
  memset(&p, 0, sizeof p);
  p.op = PROTO_OP_SUBMIT_RESP;
  p.ref = 2;
  p.raw_status = 51;
  snprintf(p.msgid, sizeof p.msgid, "31612345678:060824143015");
  CU_ASSERT_STRING_EQUAL(enc(&p), "02/00044/R/51/A//31612345678:060824143015/76");
  CU_ASSERT_EQUAL(dec("02/00044/R/51/A//31612345678:060824143015/76", &p), 0);
  CU_ASSERT_EQUAL(p.op, PROTO_OP_SUBMIT_RESP);
  CU_ASSERT_EQUAL(p.status, PROTO_OK);
  CU_ASSERT_EQUAL(p.raw_status, 0);
  CU_ASSERT_STRING_EQUAL(p.msgid, "31612345678:060824143015");
  memset(&p, 0, sizeof p);
  p.op = PROTO_OP_SUBMIT_RESP;
  p.ref = 3;
  p.status = PROTO_E_SYNTAX;
  CU_ASSERT_STRING_EQUAL(enc(&p), "03/00034/R/51/N/02/Syntax error/DC");
  CU_ASSERT_EQUAL(dec("03/00034/R/51/N/02/Syntax error/DC", &p), 0);
  CU_ASSERT_EQUAL(p.status, PROTO_E_SYNTAX);
  CU_ASSERT_STRING_EQUAL(p.msgid, "");

  /* the spec's own results */
  CU_ASSERT_EQUAL(dec("00/00039/R/51/A//012234:090996101010/68", &p), 0);
  CU_ASSERT_STRING_EQUAL(p.msgid, "012234:090996101010");
  CU_ASSERT_EQUAL(dec("00/00022/R/51/N/31//07", &p), 0);
  CU_ASSERT_EQUAL(p.status, PROTO_E_PERMANENT);
  CU_ASSERT_EQUAL(p.raw_status, 31);
  CU_ASSERT_STRING_EQUAL(p.text, "");

  /* the spec's submit: NAdC, NT 4 (buffered only), VP */
  CU_ASSERT_EQUAL(dec("18/00113/O/51/012345/09876//1/1920870340125000/4/0539//////3012961212"
                      "//////3//4D657373616765203531/////////////CD", &p), 0);
  CU_ASSERT_EQUAL(p.ref, 18);
  CU_ASSERT_EQUAL(p.msg.dlr_mask, MSG_DLR_BUFFERED);
  CU_ASSERT_EQUAL(p.msg.validity, utc(1996, 12, 30, 12, 12, 0));
  ASSERT_TEXT(&p.msg, "Message 51");

  /* 12: alphanumeric sender */
  CU_ASSERT_EQUAL(dec("04/00085/O/51/31612345678/0DC730BD7C0FE701/////////////////3//4869///"
                      "/////5039/////A2", &p), 0);
  CU_ASSERT_STRING_EQUAL(p.msg.src.addr, "Gateway");
  CU_ASSERT_EQUAL(p.msg.src.ton, MSG_TON_ALPHANUMERIC);
  CU_ASSERT_EQUAL(p.msg.src.npi, 0);
  CU_ASSERT_EQUAL(p.msg.dlr_mask, 0);
  CU_ASSERT_STRING_EQUAL(enc(&p), "04/00085/O/51/31612345678/0DC730BD7C0FE701/////////////////3/"
                                  "/4869////////5039/////A2");

  /* 13: UCS2 without MCLs (we add MCLs 1, as Kannel) */
  CU_ASSERT_EQUAL(dec("05/00099/O/51/31612345678/4455/////////////////4/0096/041F0440043804320"
                      "4350442//////////020108///F6", &p), 0);
  CU_ASSERT_EQUAL(p.msg.coding, SMS_TEXT_UCS2);
  CU_ASSERT_EQUAL(p.msg.dcs, 0x08);
  CU_ASSERT_EQUAL(p.msg.data_len, 12);
  CU_ASSERT_STRING_EQUAL(enc(&p), frame(5, "O/51/31612345678/4455/////////////////4/0096/041F04"
                                           "400438043204350442////1//////020108///"));

  /* 14: GSM-7 with a UDH stays MT 3, UDH in XSer 01 */
  CU_ASSERT_EQUAL(dec("06/00107/O/51/31612345678/4455/////////////////3//50617274206F6E652074"
                      "657874//////////01060500032A0201///BC", &p), 0);
  CU_ASSERT_EQUAL(p.msg.coding, SMS_TEXT_GSM7);
  CU_ASSERT_EQUAL(p.msg.udh_len, 6);
  CU_ASSERT(memcmp(p.msg.udh, "\x05\x00\x03\x2A\x02\x01", 6) == 0);
  ASSERT_TEXT(&p.msg, "Part one text");
  CU_ASSERT_STRING_EQUAL(enc(&p), "06/00107/O/51/31612345678/4455/////////////////3//50617274206F"
                                  "6E652074657874//////////01060500032A0201///BC");
}

static const char ex7[] =
  "00/00245/O/53/4455/31612345678/////////////060824143015/0/000/060824143122/3//4D657373616765"
  "20666F722033313631323334353637382C2077697468206964656E74696669636174696F6E2032343038303631"
  "343330313520686173206265656E2064656C697665726564/////////////3A";
static const char ex9[] =
  "01/00243/O/53/4455/31612345678/////////////060824143015/1/107/060824143200/3//4D657373616765"
  "20666F722033313631323334353637382C2077697468206964656E74696669636174696F6E2032343038303631"
  "343330313520686173206265656E206275666665726564/////////////C1";

static void test_spec_receipts(void)
{
  struct proto_pdu p = { 0 };

  /* 7: built from a receipt, byte for byte */
  p.op = PROTO_OP_DELIVER;
  p.is_receipt = true;
  snprintf(p.receipt.id, sizeof p.receipt.id, "31612345678:060824143015");
  set_addr(&p.receipt.src, "4455", MSG_TON_UNKNOWN, 1);
  set_addr(&p.receipt.dst, "31612345678", MSG_TON_UNKNOWN, 1);
  p.receipt.state = MSG_STATE_DELIVERED;
  p.receipt.done_time = utc(2024, 8, 6, 14, 31, 22);
  CU_ASSERT_STRING_EQUAL(enc(&p), ex7);
  /* 9: buffered, Rsn 107 */
  p.ref = 1;
  p.receipt.state = MSG_STATE_ENROUTE;
  p.receipt.err = 107;
  p.receipt.done_time = utc(2024, 8, 6, 14, 32, 0);
  CU_ASSERT_STRING_EQUAL(enc(&p), ex9);

  CU_ASSERT_EQUAL(dec(ex7, &p), 0);
  CU_ASSERT_EQUAL(p.op, PROTO_OP_DELIVER);
  CU_ASSERT(p.is_receipt);
  CU_ASSERT_EQUAL(p.raw_status, 53);
  CU_ASSERT_STRING_EQUAL(p.receipt.id, "31612345678:060824143015");
  CU_ASSERT_EQUAL(p.receipt.state, MSG_STATE_DELIVERED);
  CU_ASSERT_EQUAL(p.receipt.err, 0);
  CU_ASSERT_EQUAL(p.receipt.submit_time, utc(2024, 8, 6, 14, 30, 15));
  CU_ASSERT_EQUAL(p.receipt.done_time, utc(2024, 8, 6, 14, 31, 22));
  CU_ASSERT_STRING_EQUAL(p.receipt.src.addr, "4455");
  CU_ASSERT_STRING_EQUAL(p.receipt.dst.addr, "31612345678");
  ASSERT_TEXT(&p.msg, "Message for 31612345678, with identification 240806143015 has been "
                      "delivered");
  CU_ASSERT_EQUAL(dec(ex9, &p), 0);
  CU_ASSERT_EQUAL(p.receipt.state, MSG_STATE_ENROUTE);
  CU_ASSERT_EQUAL(p.receipt.err, 107);
  CU_ASSERT_EQUAL(dec("00/00234/O/53/1299998/3155555/////////////090196161057/1/108/0901961611"
                      "05/3//4D65737361676520666F7220333135353535352C2077697468206964656E7469"
                      "6669636174696F6E2039363031303931363130353720686173206265656E20627566666"
                      "5726564/////////////1F", &p), 0);
  CU_ASSERT_STRING_EQUAL(p.receipt.id, "3155555:090196161057");
  CU_ASSERT_EQUAL(p.receipt.state, MSG_STATE_ENROUTE);
  CU_ASSERT_EQUAL(p.receipt.err, 108);

  /* 8: the client's ACK, Kannel style */
  memset(&p, 0, sizeof p);
  p.op = PROTO_OP_DELIVER_RESP;
  p.raw_status = 53;
  CU_ASSERT_STRING_EQUAL(enc(&p), "00/00020/R/53/A///96");
}

static void test_spec_mo(void)
{
  static const char mo[] =
    "08/00085/O/52/4455/31612345678/////////////060824150102////3//53544F50/////////////36";
  struct proto_pdu p;

  CU_ASSERT_EQUAL(dec(mo, &p), 0);
  CU_ASSERT_EQUAL(p.op, PROTO_OP_DELIVER);
  CU_ASSERT(!p.is_receipt);
  CU_ASSERT_EQUAL(p.raw_status, 52);
  CU_ASSERT_STRING_EQUAL(p.msg.src.addr, "31612345678");
  CU_ASSERT_STRING_EQUAL(p.msg.dst.addr, "4455");
  CU_ASSERT_EQUAL(p.msg.received_ms, utc(2024, 8, 6, 15, 1, 2) * 1000);
  ASSERT_TEXT(&p.msg, "STOP");
  CU_ASSERT_STRING_EQUAL(enc(&p), mo);
  /* the answer copies ref and raw_status */
  p.op = PROTO_OP_DELIVER_RESP;
  CU_ASSERT_STRING_EQUAL(enc(&p), "08/00020/R/52/A///9D");
  CU_ASSERT_EQUAL(dec("08/00020/R/52/A///9D", &p), 0);
  CU_ASSERT_EQUAL(p.op, PROTO_OP_DELIVER_RESP);
  CU_ASSERT(!p.is_receipt);
}

/* ---- round trips ---- */

/* Encodes p and decodes the result into back. */
static void round_trip(const struct proto_pdu *p, struct proto_pdu *back)
{
  int rc;
  const char *inner = enc_opt(p, &defaults, &rc);
  CU_ASSERT(rc > 0);
  CU_ASSERT_EQUAL(dec(inner, back), 0);
  CU_ASSERT_EQUAL(back->ref, p->ref);
}

static void test_round_trip_session(void)
{
  struct proto_pdu p = { 0 }, b;

  p.op = PROTO_OP_BIND;
  p.ref = 99;
  snprintf(p.user, sizeof p.user, "account16chars__");
  snprintf(p.password, sizeof p.password, "pass word+16char");
  round_trip(&p, &b);
  CU_ASSERT_EQUAL(b.op, PROTO_OP_BIND);
  CU_ASSERT_STRING_EQUAL(b.user, p.user);
  CU_ASSERT_STRING_EQUAL(b.password, p.password);

  memset(&p, 0, sizeof p);
  p.op = PROTO_OP_BIND_RESP;
  p.status = PROTO_E_BIND_STATE;
  round_trip(&p, &b);
  CU_ASSERT_EQUAL(b.op, PROTO_OP_BIND_RESP);
  CU_ASSERT_EQUAL(b.status, PROTO_E_BIND_STATE);
  CU_ASSERT_EQUAL(b.raw_status, 4);
  CU_ASSERT_STRING_EQUAL(b.text, "Operation not allowed");

  memset(&p, 0, sizeof p);
  p.op = PROTO_OP_KEEPALIVE;
  p.ref = 42;
  round_trip(&p, &b); /* no account: empty AdC */
  CU_ASSERT_EQUAL(b.op, PROTO_OP_KEEPALIVE);
  CU_ASSERT_STRING_EQUAL(b.user, "");
  p.op = PROTO_OP_KEEPALIVE_RESP;
  p.status = PROTO_E_ADDRESS; /* the spec's NACK of a 31: AdC invalid */
  round_trip(&p, &b);
  CU_ASSERT_EQUAL(b.op, PROTO_OP_KEEPALIVE_RESP);
  CU_ASSERT_EQUAL(b.status, PROTO_E_ADDRESS);
  CU_ASSERT_EQUAL(b.raw_status, 6);
}

/* The receipts a submit asks for (NRq, NT) from each dlr_mask, read back:
 * buffered alone asks for the final notifications too (only a final one
 * frees the message's DLR entry), the others ask for what they name. */
static void test_submit_notifications(void)
{
  static const struct {
    uint8_t mask, asked;
  } cases[] = {
    { MSG_DLR_DELIVERED, MSG_DLR_DELIVERED },
    { MSG_DLR_FAILED, MSG_DLR_FAILED },
    { MSG_DLR_DELIVERED | MSG_DLR_FAILED, MSG_DLR_DELIVERED | MSG_DLR_FAILED },
    { MSG_DLR_BUFFERED, MSG_DLR_FROM_SMSC },
    { MSG_DLR_FAILED | MSG_DLR_BUFFERED, MSG_DLR_FROM_SMSC },
    { 0, 0 },
  };
  static const uint8_t gsm[] = { 'h', 'i' };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct proto_pdu p = { 0 }, b;
    p.op = PROTO_OP_SUBMIT;
    p.ref = 3;
    set_addr(&p.msg.dst, "4790000101", MSG_TON_INTERNATIONAL, 1);
    set_addr(&p.msg.src, "4790000202", MSG_TON_INTERNATIONAL, 1);
    p.msg.coding = SMS_TEXT_GSM7;
    p.msg.data = gsm;
    p.msg.data_len = sizeof gsm;
    p.msg.dlr_mask = cases[i].mask;
    round_trip(&p, &b);
    if (b.msg.dlr_mask != cases[i].asked) {
      CU_FAIL("a submit asks for other notifications than its dlr_mask says");
      fprintf(stderr, "\n  dlr_mask %u: asked %u, want %u\n", cases[i].mask, b.msg.dlr_mask, cases[i].asked);
    }
  }
}

static void test_round_trip_submit(void)
{
  /* "€[é]": GSM escapes for the brackets and the euro */
  static const uint8_t gsm[] = { 0x1B, 0x65, 0x1B, 0x3C, 0x05, 0x1B, 0x3E };
  static const uint8_t udh[] = { 0x05, 0x00, 0x03, 0x01, 0x02, 0x02 };
  static const uint8_t ucs2[] = { 0x04, 0x1F, 0xD8, 0x3D, 0xDE, 0x00 };
  struct proto_pdu p = { 0 }, b;
  struct msg *m = &p.msg;

  p.op = PROTO_OP_SUBMIT;
  p.ref = 17;
  set_addr(&m->dst, "4790000101", MSG_TON_INTERNATIONAL, 1);
  set_addr(&m->src, "ÄÖÜ-Café", MSG_TON_ALPHANUMERIC, 0);
  m->coding = SMS_TEXT_GSM7;
  m->data = gsm;
  m->data_len = sizeof gsm;
  m->udh = udh;
  m->udh_len = sizeof udh;
  m->dlr_mask = MSG_DLR_DELIVERED | MSG_DLR_FAILED | MSG_DLR_BUFFERED;
  m->validity = utc(2030, 1, 2, 3, 4, 0);
  m->deferred = utc(2030, 1, 1, 23, 59, 0);
  m->pid = 0x7F;
  m->priority = 1;
  m->mms = 1;
  round_trip(&p, &b);
  CU_ASSERT_EQUAL(b.op, PROTO_OP_SUBMIT);
  CU_ASSERT_EQUAL(b.raw_status, 51);
  CU_ASSERT_STRING_EQUAL(b.msg.dst.addr, "4790000101");
  CU_ASSERT_EQUAL(b.msg.dst.ton, MSG_TON_UNKNOWN);
  CU_ASSERT_STRING_EQUAL(b.msg.src.addr, "ÄÖÜ-Café");
  CU_ASSERT_EQUAL(b.msg.src.ton, MSG_TON_ALPHANUMERIC);
  CU_ASSERT_EQUAL(b.msg.coding, SMS_TEXT_GSM7);
  CU_ASSERT_EQUAL(b.msg.dcs, 0x00);
  CU_ASSERT(data_is(&b.msg, gsm, sizeof gsm));
  CU_ASSERT(b.msg.udh_len == sizeof udh && memcmp(b.msg.udh, udh, sizeof udh) == 0);
  CU_ASSERT_EQUAL(b.msg.dlr_mask, 7);
  CU_ASSERT_EQUAL(b.msg.validity, m->validity);
  CU_ASSERT_EQUAL(b.msg.deferred, m->deferred);
  CU_ASSERT_EQUAL(b.msg.pid, 0x7F);
  CU_ASSERT_EQUAL(b.msg.priority, 1);
  CU_ASSERT_EQUAL(b.msg.mms, 1);

  /* UCS2 (a surrogate pair too) with class 2, international sender, failures only */
  memset(&p, 0, sizeof p);
  p.op = PROTO_OP_SUBMIT;
  set_addr(&m->dst, "4790000102", MSG_TON_UNKNOWN, 1);
  set_addr(&m->src, "4712345678", MSG_TON_INTERNATIONAL, 1);
  m->coding = SMS_TEXT_UCS2;
  m->dcs = 0x1A;
  m->data = ucs2;
  m->data_len = sizeof ucs2;
  m->dlr_mask = MSG_DLR_FAILED;
  round_trip(&p, &b);
  CU_ASSERT_STRING_EQUAL(b.msg.src.addr, "4712345678");
  CU_ASSERT_EQUAL(b.msg.src.ton, MSG_TON_INTERNATIONAL);
  CU_ASSERT_EQUAL(b.msg.src.npi, 1);
  CU_ASSERT_EQUAL(b.msg.coding, SMS_TEXT_UCS2);
  CU_ASSERT_EQUAL(b.msg.dcs, 0x1A);
  CU_ASSERT(data_is(&b.msg, ucs2, sizeof ucs2));
  CU_ASSERT_EQUAL(b.msg.dlr_mask, MSG_DLR_FAILED);
  CU_ASSERT_EQUAL(b.msg.validity, 0);
  CU_ASSERT_EQUAL(b.msg.deferred, 0);

  /* 8-bit without class: no XSer 02, no MCLs; a DCS that does not match the
   * payload is made to */
  m->coding = SMS_TEXT_8BIT;
  m->dcs = 0x00;
  m->dlr_mask = MSG_DLR_DELIVERED;
  round_trip(&p, &b);
  CU_ASSERT_EQUAL(b.msg.coding, SMS_TEXT_8BIT);
  CU_ASSERT_EQUAL(b.msg.dcs, 0x04);
  CU_ASSERT_EQUAL(b.msg.dlr_mask, MSG_DLR_DELIVERED);
  CU_ASSERT(strstr(enc(&p), "/4/0048/041FD83DDE00////////1139/////") != NULL); /* no MCLs */
  /* 8-bit class 1 in group 1111 keeps its value, MCLs 1 beside XSer 02 */
  m->dcs = 0xF5;
  round_trip(&p, &b);
  CU_ASSERT_EQUAL(b.msg.dcs, 0xF5);
  CU_ASSERT(strstr(enc(&p), "/041FD83DDE00////1////1139//0201F5///") != NULL);

  /* AdC and OAdC as some clients write them, '+' first: the digits, international */
  set_addr(&m->dst, "+4790000103", MSG_TON_UNKNOWN, 1);
  set_addr(&m->src, "+4712345679", MSG_TON_UNKNOWN, 1);
  CU_ASSERT(strstr(enc(&p), "/+4790000103/+4712345679/") != NULL);
  round_trip(&p, &b);
  CU_ASSERT_STRING_EQUAL(b.msg.dst.addr, "4790000103");
  CU_ASSERT_EQUAL(b.msg.dst.ton, MSG_TON_INTERNATIONAL);
  CU_ASSERT_STRING_EQUAL(b.msg.src.addr, "4712345679");
  CU_ASSERT_EQUAL(b.msg.src.ton, MSG_TON_INTERNATIONAL);

  /* op 01 answered: R/01, ACK without MVP */
  memset(&p, 0, sizeof p);
  p.op = PROTO_OP_SUBMIT_RESP;
  p.raw_status = 1;
  snprintf(p.msgid, sizeof p.msgid, "0612345678:010125000000");
  CU_ASSERT_STRING_EQUAL(enc(&p), frame(0, "R/01/A/0612345678:010125000000/"));
  round_trip(&p, &b);
  CU_ASSERT_EQUAL(b.op, PROTO_OP_SUBMIT_RESP);
  CU_ASSERT_STRING_EQUAL(b.msgid, p.msgid);
}

static void test_round_trip_deliver(void)
{
  static const uint8_t bin[] = { 0x00, 0x01, 0xFE, 0xFF };
  struct proto_pdu p = { 0 }, b;
  static const uint8_t states[] = {
    MSG_STATE_DELIVERED, MSG_STATE_ENROUTE, MSG_STATE_ACCEPTED, MSG_STATE_EXPIRED,
    MSG_STATE_DELETED, MSG_STATE_UNDELIVERABLE, MSG_STATE_UNKNOWN, MSG_STATE_REJECTED,
  };
  static const uint8_t decoded[] = {
    MSG_STATE_DELIVERED, MSG_STATE_ENROUTE, MSG_STATE_ENROUTE, MSG_STATE_UNDELIVERABLE,
    MSG_STATE_UNDELIVERABLE, MSG_STATE_UNDELIVERABLE, MSG_STATE_UNDELIVERABLE,
    MSG_STATE_UNDELIVERABLE,
  };

  /* MO, 8-bit, with SCTS from received_ms */
  p.op = PROTO_OP_DELIVER;
  p.ref = 5;
  set_addr(&p.msg.dst, "4455", MSG_TON_UNKNOWN, 1);
  set_addr(&p.msg.src, "31612345678", MSG_TON_INTERNATIONAL, 1);
  p.msg.coding = SMS_TEXT_8BIT;
  p.msg.dcs = 0x04;
  p.msg.data = bin;
  p.msg.data_len = sizeof bin;
  p.msg.received_ms = utc(2024, 2, 29, 23, 59, 59) * 1000 + 999;
  round_trip(&p, &b);
  CU_ASSERT_EQUAL(b.op, PROTO_OP_DELIVER);
  CU_ASSERT(!b.is_receipt);
  CU_ASSERT_EQUAL(b.raw_status, 52);
  CU_ASSERT_STRING_EQUAL(b.msg.src.addr, "31612345678");
  CU_ASSERT_EQUAL(b.msg.src.ton, MSG_TON_INTERNATIONAL);
  CU_ASSERT_STRING_EQUAL(b.msg.dst.addr, "4455");
  CU_ASSERT(data_is(&b.msg, bin, sizeof bin));
  CU_ASSERT_EQUAL(b.msg.received_ms, utc(2024, 2, 29, 23, 59, 59) * 1000);

  /* receipts in every state */
  memset(&p, 0, sizeof p);
  p.op = PROTO_OP_DELIVER;
  p.is_receipt = true;
  p.ref = 63;
  snprintf(p.receipt.id, sizeof p.receipt.id, "4790000101:311224235959");
  set_addr(&p.receipt.src, "12345", MSG_TON_UNKNOWN, 1);
  set_addr(&p.receipt.dst, "4790000101", MSG_TON_UNKNOWN, 1);
  p.receipt.err = 34;
  for (size_t i = 0; i < sizeof states; i++) {
    p.receipt.state = states[i];
    p.receipt.done_time = utc(2025, 1, 1, 0, 0, (int)i);
    round_trip(&p, &b);
    CU_ASSERT_EQUAL(b.op, PROTO_OP_DELIVER);
    CU_ASSERT(b.is_receipt);
    CU_ASSERT_STRING_EQUAL(b.receipt.id, p.receipt.id);
    CU_ASSERT_EQUAL(b.receipt.state, decoded[i]);
    CU_ASSERT_EQUAL(b.receipt.err, states[i] == MSG_STATE_DELIVERED ? 0 : 34);
    CU_ASSERT_EQUAL(b.receipt.done_time, p.receipt.done_time);
    CU_ASSERT_EQUAL(b.receipt.submit_time, utc(2024, 12, 31, 23, 59, 59));
    CU_ASSERT_STRING_EQUAL(b.receipt.src.addr, "12345");
    CU_ASSERT_STRING_EQUAL(b.receipt.dst.addr, "4790000101");
  }

  /* an alphanumeric original sender cannot be AdC: it goes empty, and the
   * receipt still carries the id the client matches on; no done_time, no DSCTS */
  set_addr(&p.receipt.src, "Harness", MSG_TON_ALPHANUMERIC, 0);
  p.receipt.state = MSG_STATE_DELIVERED;
  p.receipt.done_time = 0;
  CU_ASSERT(strstr(enc(&p), "/O/53//4790000101/////////////311224235959/0/000//3//") != NULL);
  round_trip(&p, &b);
  CU_ASSERT_STRING_EQUAL(b.receipt.src.addr, "");
  CU_ASSERT_STRING_EQUAL(b.receipt.id, "4790000101:311224235959");
  CU_ASSERT_EQUAL(b.receipt.done_time, 0);

  /* the answers: R/53 by raw_status, by is_receipt, R/52 else; NACK */
  memset(&p, 0, sizeof p);
  p.op = PROTO_OP_DELIVER_RESP;
  p.raw_status = 53;
  CU_ASSERT_STRING_EQUAL(enc(&p), "00/00020/R/53/A///96");
  p.raw_status = 0;
  p.is_receipt = true;
  CU_ASSERT_STRING_EQUAL(enc(&p), "00/00020/R/53/A///96");
  p.is_receipt = false;
  CU_ASSERT_STRING_EQUAL(enc(&p), "00/00020/R/52/A///95");
  p.raw_status = 53;
  p.status = PROTO_E_TEMPORARY;
  round_trip(&p, &b);
  CU_ASSERT_EQUAL(b.op, PROTO_OP_DELIVER_RESP);
  CU_ASSERT(b.is_receipt);
  CU_ASSERT_EQUAL(b.status, PROTO_E_TEMPORARY);
  CU_ASSERT_EQUAL(b.raw_status, UCP_EC_SYSTEM);
}

static void test_round_trip_refusals(void)
{
  struct proto_pdu p = { 0 }, b;
  int rc;

  /* OTHER: R/<OT> NACK 03, whatever its status */
  p.op = PROTO_OP_OTHER;
  p.ref = 9;
  p.raw_status = 61;
  CU_ASSERT_STRING_EQUAL(enc(&p), frame(9, "R/61/N/03/Operation not supported by system/"));
  /* NACK: the EC of its status; text as SM, '/' made a space */
  p.op = PROTO_OP_NACK;
  p.raw_status = 51;
  p.status = PROTO_E_CHECKSUM;
  snprintf(p.text, sizeof p.text, "bad/sum");
  CU_ASSERT_STRING_EQUAL(enc(&p), frame(9, "R/51/N/01/bad sum/"));
  round_trip(&p, &b);
  CU_ASSERT_EQUAL(b.op, PROTO_OP_SUBMIT_RESP);
  CU_ASSERT_EQUAL(b.status, PROTO_E_CHECKSUM);
  CU_ASSERT_STRING_EQUAL(b.text, "bad sum");
  /* an OT the codec has no layout for: still R/<OT>, with a right checksum */
  p.raw_status = 30;
  p.status = PROTO_E_UNSUPPORTED;
  p.text[0] = '\0';
  CU_ASSERT_STRING_EQUAL(enc(&p), frame(9, "R/30/N/03/Operation not supported by system/"));
  p.raw_status = 99;
  p.op = PROTO_OP_OTHER;
  CU_ASSERT_STRING_EQUAL(enc(&p), frame(9, "R/99/N/03/Operation not supported by system/"));
  /* and decoding it says "unsupported OT", not "checksum" */
  CU_ASSERT_EQUAL(dec(enc(&p), &b), UCP_E_OT);
  CU_ASSERT_EQUAL(b.op, PROTO_OP_NONE);
  p.raw_status = 100;
  enc_opt(&p, &defaults, &rc);
  CU_ASSERT_EQUAL(rc, UCP_E_INVALID);
}

/* ---- decode errors and the answers they make ---- */

static void test_decode_errors(void)
{
  struct proto_pdu p;
  char bad[512];

  /* checksum: SUBMIT_RESP NACK 01 for a 51 */
  snprintf(bad, sizeof bad, "%s", frame(12, "O/51/4790000101/12345/////////////////3//4869//////"
                                            "///////"));
  bad[strlen(bad) - 1] = bad[strlen(bad) - 1] == '0' ? '1' : '0';
  CU_ASSERT(dec(bad, &p) < 0);
  CU_ASSERT_EQUAL(p.op, PROTO_OP_SUBMIT_RESP);
  CU_ASSERT_EQUAL(p.ref, 12);
  CU_ASSERT_EQUAL(p.raw_status, 51);
  CU_ASSERT_EQUAL(p.status, PROTO_E_CHECKSUM);
  CU_ASSERT_STRING_EQUAL(enc(&p), frame(12, "R/51/N/01/Checksum error/"));

  /* syntax: a 52 with 32 fields */
  CU_ASSERT(dec(frame(3, "O/52/4455/316/////////////060824150102////3//53544F50////////////"), &p)
            < 0);
  CU_ASSERT_EQUAL(p.op, PROTO_OP_DELIVER_RESP);
  CU_ASSERT_EQUAL(p.status, PROTO_E_SYNTAX);
  CU_ASSERT_STRING_EQUAL(enc(&p), frame(3, "R/52/N/02/Syntax error/"));

  /* an OT nobody knows: NACK 03 */
  CU_ASSERT(dec(frame(4, "O/30/66677789///1//////68656C6C6F/"), &p) < 0);
  CU_ASSERT_EQUAL(p.op, PROTO_OP_NACK);
  CU_ASSERT_EQUAL(p.raw_status, 30);
  CU_ASSERT_EQUAL(p.status, PROTO_E_UNSUPPORTED);
  CU_ASSERT_STRING_EQUAL(enc(&p), frame(4, "R/30/N/03/Operation not supported by system/"));

  /* 61 and 60 other than login are decoded as OTHER, for the runtime to refuse */
  CU_ASSERT_EQUAL(dec(frame(5, "O/61/12345/6/5/1/736563726574//0100//////"), &p), 0);
  CU_ASSERT_EQUAL(p.op, PROTO_OP_OTHER);
  CU_ASSERT_EQUAL(p.raw_status, 61);
  CU_ASSERT_EQUAL(dec(frame(6, "O/60/12345/6/5/3/736563726574/6E6577/0100//////"), &p), 0);
  CU_ASSERT_EQUAL(p.op, PROTO_OP_OTHER);
  CU_ASSERT_EQUAL(p.raw_status, 60);
  CU_ASSERT_STRING_EQUAL(enc(&p), frame(6, "R/60/N/03/Operation not supported by system/"));

  /* a password with a NUL would compare as a shorter one */
  CU_ASSERT(dec(frame(0, "O/60/harness/6/5/1/73006563726574//0100//////"), &p) < 0);
  CU_ASSERT_EQUAL(p.op, PROTO_OP_BIND_RESP);
  CU_ASSERT_EQUAL(p.status, PROTO_E_SYNTAX);

  /* MT 4 in an op 01: message type not supported (EC 23 reads as UNSUPPORTED) */
  CU_ASSERT(dec(frame(7, "O/01/0612345678/0612345679//4/C0FF/"), &p) < 0);
  CU_ASSERT_EQUAL(p.op, PROTO_OP_SUBMIT_RESP);
  CU_ASSERT_EQUAL(p.raw_status, 1);
  CU_ASSERT_EQUAL(p.status, PROTO_E_UNSUPPORTED);
  CU_ASSERT_STRING_EQUAL(enc(&p), frame(7, "R/01/N/03/Operation not supported by system/"));
  /* the op 01 that works */
  CU_ASSERT_EQUAL(dec(frame(7, "O/01/0612345678/0612345679//3/4869/"), &p), 0);
  CU_ASSERT_EQUAL(p.op, PROTO_OP_SUBMIT);
  CU_ASSERT_EQUAL(p.raw_status, 1);
  CU_ASSERT_STRING_EQUAL(p.msg.dst.addr, "0612345678");
  CU_ASSERT_STRING_EQUAL(p.msg.src.addr, "0612345679");
  ASSERT_TEXT(&p.msg, "Hi");
  CU_ASSERT_EQUAL(dec(frame(7, "O/01/0612345678/0612345679//2/0123/"), &p), 0);
  ASSERT_TEXT(&p.msg, "0123");

  /* AMsg octets above 0x7F are no GSM septets */
  CU_ASSERT(dec(frame(8, "O/51/4790000101/12345/////////////////3//48E9/////////////"), &p) < 0);
  CU_ASSERT_EQUAL(p.status, PROTO_E_SYNTAX);
  /* RPID beyond a TP-PID; a UDH whose UDHL is wrong; a 53 without SCTS; a bad VP date */
  CU_ASSERT(dec(frame(8, "O/51/4790000101/12345////////////0300/////3//4869/////////////"), &p)
            < 0);
  CU_ASSERT(dec(frame(8, "O/51/4790000101/12345/////////////////3//4869//////////01060400032A"
                         "0201///"), &p) < 0);
  CU_ASSERT(dec(frame(8, "O/53/4455/31612345678//////////////0/000//3//4869/////////////"), &p)
            < 0);
  CU_ASSERT_EQUAL(p.op, PROTO_OP_DELIVER_RESP);
  CU_ASSERT(dec(frame(8, "O/51/4790000101/12345///////////3102250000//////3//4869/////////////"),
                &p) < 0);
  CU_ASSERT_EQUAL(p.status, PROTO_E_SYNTAX);

  /* DDT counts unless DD says 0 */
  CU_ASSERT_EQUAL(dec(frame(8, "O/51/4790000101/12345//////////0101251200///////3//4869//////////"
                               "///"), &p), 0);
  CU_ASSERT_EQUAL(p.msg.deferred, utc(2025, 1, 1, 12, 0, 0));
  CU_ASSERT_EQUAL(dec(frame(8, "O/51/4790000101/12345/////////0/0101251200///////3//4869/////////"
                               "////"), &p), 0);
  CU_ASSERT_EQUAL(p.msg.deferred, 0);

  /* results are never answered: malformed, or for an OT we never send */
  CU_ASSERT(dec(frame(1, "R/51/X//"), &p) < 0);
  CU_ASSERT_EQUAL(p.op, PROTO_OP_NONE);
  CU_ASSERT(dec(frame(1, "R/61/A//"), &p) < 0);
  CU_ASSERT_EQUAL(p.op, PROTO_OP_NONE);
  /* no readable TRN */
  CU_ASSERT(dec("x", &p) < 0);
  CU_ASSERT_EQUAL(p.op, PROTO_OP_NONE);
}

static void test_mt4_septets(void)
{
  struct ucp_msg m;
  struct proto_pdu p;

  /* TMsg with a GSM-7 DCS: packed septets, NB of them */
  ucp_msg_init(&m, 1, 'O', 51);
  m.o5x.adc = UCP_STR("4790000101");
  m.o5x.oadc = UCP_STR("12345");
  m.o5x.mt = UCP_STR("4");
  m.o5x.nb = UCP_STR("0070");
  m.o5x.msg = UCP_STR("E8329BFD4697D9EC37");
  m.o5x.xser = UCP_STR("020110");
  CU_ASSERT_EQUAL(dec(codec_frame(&m), &p), 0);
  CU_ASSERT_EQUAL(p.msg.coding, SMS_TEXT_GSM7);
  CU_ASSERT_EQUAL(p.msg.dcs, 0x10);
  ASSERT_TEXT(&p.msg, "hellohello");
  /* without NB every bit counts: 72 bits, 10 septets */
  m.o5x.nb = UCP_STR("");
  CU_ASSERT_EQUAL(dec(codec_frame(&m), &p), 0);
  ASSERT_TEXT(&p.msg, "hellohello");
  /* NB 65: the last septet is padding */
  m.o5x.nb = UCP_STR("0065");
  CU_ASSERT_EQUAL(dec(codec_frame(&m), &p), 0);
  ASSERT_TEXT(&p.msg, "hellohell");
  /* MCLs gives the class when there is no XSer 02; DCs is not read */
  m.o5x.nb = UCP_STR("0072");
  m.o5x.xser = UCP_STR("");
  m.o5x.mcls = UCP_STR("2");
  CU_ASSERT_EQUAL(dec(codec_frame(&m), &p), 0);
  CU_ASSERT_EQUAL(p.msg.coding, SMS_TEXT_8BIT);
  CU_ASSERT_EQUAL(p.msg.dcs, 0x16);
  CU_ASSERT_EQUAL(p.msg.data_len, 9);
  m.o5x.mt = UCP_STR("3");
  m.o5x.nb = UCP_STR("");
  m.o5x.msg = UCP_STR("4869");
  CU_ASSERT_EQUAL(dec(codec_frame(&m), &p), 0);
  CU_ASSERT_EQUAL(p.msg.dcs, 0x12);
  /* a UCS2 DCS with MT 3 is made to say GSM-7, keeping the class */
  m.o5x.mcls = UCP_STR("");
  m.o5x.xser = UCP_STR("020119");
  CU_ASSERT_EQUAL(dec(codec_frame(&m), &p), 0);
  CU_ASSERT_EQUAL(p.msg.coding, SMS_TEXT_GSM7);
  CU_ASSERT_EQUAL(p.msg.dcs, 0x11);
}

static void test_latin1(void)
{
  struct proto_options latin1 = { .latin1_text = true };
  struct proto_pdu p;
  static const uint8_t cafe[] = { 'C', 'a', 'f', 0x05 }; /* é is GSM 0x05 */
  static const uint8_t delta[] = { 0x10, '1' };          /* Δ has no Latin-1 */
  int rc;

  CU_ASSERT_EQUAL(dec_opt(frame(8, "O/51/4790000101/12345/////////////////3//436166E9//////////"
                                   "///"), &p, &latin1), 0);
  CU_ASSERT_EQUAL(p.msg.coding, SMS_TEXT_GSM7);
  CU_ASSERT(data_is(&p.msg, cafe, sizeof cafe));
  /* À has no septet: UCS2 */
  CU_ASSERT_EQUAL(dec_opt(frame(8, "O/52/4455/12345/////////////010101000000////3//C0/////////"
                                   "////"), &p, &latin1), 0);
  CU_ASSERT_EQUAL(p.msg.coding, SMS_TEXT_UCS2);
  CU_ASSERT_EQUAL(p.msg.dcs, 0x08);
  CU_ASSERT(data_is(&p.msg, "\x00\xC0", 2));

  memset(&p, 0, sizeof p);
  p.op = PROTO_OP_DELIVER;
  set_addr(&p.msg.dst, "4455", MSG_TON_UNKNOWN, 1);
  set_addr(&p.msg.src, "12345", MSG_TON_UNKNOWN, 1);
  p.msg.coding = SMS_TEXT_GSM7;
  p.msg.data = cafe;
  p.msg.data_len = sizeof cafe;
  CU_ASSERT_STRING_EQUAL(enc_opt(&p, &latin1, &rc),
                         frame(0, "O/52/4455/12345/////////////////3//436166E9/////////////"));
  /* without the option the septets go as they are */
  CU_ASSERT_STRING_EQUAL(enc(&p), frame(0, "O/52/4455/12345/////////////////3//43616605//////"
                                           "///////"));
  p.msg.data = delta;
  p.msg.data_len = sizeof delta;
  CU_ASSERT_STRING_EQUAL(enc_opt(&p, &latin1, &rc),
                         frame(0, "O/52/4455/12345/////////////////4/0032/03940031////1//////0201"
                                  "08///"));
}

static void test_encode_failures(void)
{
  struct proto_pdu p = { 0 };
  int rc;

  p.op = PROTO_OP_SUBMIT;
  set_addr(&p.msg.dst, "4790000101", MSG_TON_UNKNOWN, 1);
  set_addr(&p.msg.src, "TwelveLetter", MSG_TON_ALPHANUMERIC, 0); /* 11 at most */
  enc_opt(&p, &defaults, &rc);
  CU_ASSERT_EQUAL(rc, UCP_E_INVALID);
  set_addr(&p.msg.src, "12345", MSG_TON_UNKNOWN, 1);
  enc_opt(&p, &defaults, &rc);
  CU_ASSERT(rc > 0);
  set_addr(&p.msg.dst, "+4790000101", MSG_TON_INTERNATIONAL, 1); /* '+' leads an international AdC */
  enc_opt(&p, &defaults, &rc);
  CU_ASSERT(rc > 0);
  set_addr(&p.msg.dst, "4790+000101", MSG_TON_INTERNATIONAL, 1); /* but only leads */
  enc_opt(&p, &defaults, &rc);
  CU_ASSERT_EQUAL(rc, UCP_E_INVALID);
  set_addr(&p.msg.dst, "+", MSG_TON_INTERNATIONAL, 1);
  enc_opt(&p, &defaults, &rc);
  CU_ASSERT_EQUAL(rc, UCP_E_INVALID);
  set_addr(&p.msg.dst, "4790000101", MSG_TON_UNKNOWN, 1);
  p.msg.coding = 0x03;
  enc_opt(&p, &defaults, &rc);
  CU_ASSERT_EQUAL(rc, UCP_E_INVALID);
  p.msg.coding = SMS_TEXT_GSM7;
  p.ref = 100;
  enc_opt(&p, &defaults, &rc);
  CU_ASSERT_EQUAL(rc, UCP_E_INVALID);
  p.ref = 0;
  p.msg.validity = utc(2070, 1, 1, 0, 0, 0); /* VP has two year digits */
  enc_opt(&p, &defaults, &rc);
  CU_ASSERT_EQUAL(rc, UCP_E_INVALID);

  memset(&p, 0, sizeof p);
  p.op = PROTO_OP_DELIVER;
  p.is_receipt = true;
  snprintf(p.receipt.id, sizeof p.receipt.id, "1234567890"); /* not AdC:SCTS */
  enc_opt(&p, &defaults, &rc);
  CU_ASSERT_EQUAL(rc, UCP_E_INVALID);
  snprintf(p.receipt.id, sizeof p.receipt.id, "4790000101:010125000000");
  p.receipt.state = MSG_STATE_UNDELIVERABLE;
  p.receipt.err = 1000; /* Rsn has three digits */
  enc_opt(&p, &defaults, &rc);
  CU_ASSERT_EQUAL(rc, UCP_E_INVALID);
  p.receipt.err = 999;
  enc_opt(&p, &defaults, &rc);
  CU_ASSERT(rc > 0);

  memset(&p, 0, sizeof p);
  p.op = PROTO_OP_BIND;
  snprintf(p.user, sizeof p.user, "seventeen-chars-x");
  enc_opt(&p, &defaults, &rc);
  CU_ASSERT_EQUAL(rc, UCP_E_INVALID);
  p.op = PROTO_OP_UNBIND;
  enc_opt(&p, &defaults, &rc);
  CU_ASSERT_EQUAL(rc, UCP_E_INVALID);
  p.op = PROTO_OP_SUBMIT_RESP;
  snprintf(p.msgid, sizeof p.msgid, "a/b"); /* SM cannot hold '/' */
  enc_opt(&p, &defaults, &rc);
  CU_ASSERT_EQUAL(rc, UCP_E_INVALID);
}

/* ---- EC <-> status ---- */

static void test_ec_mapping(void)
{
  static const struct {
    enum proto_status s;
    int ec;
    enum proto_status back;
  } map[] = {
    { PROTO_E_CHECKSUM, 1, PROTO_E_CHECKSUM },
    { PROTO_E_SYNTAX, 2, PROTO_E_SYNTAX },
    { PROTO_E_CMD_LEN, 2, PROTO_E_SYNTAX },
    { PROTO_E_UNSUPPORTED, 3, PROTO_E_UNSUPPORTED },
    { PROTO_E_BIND_STATE, 4, PROTO_E_BIND_STATE },
    { PROTO_E_ALREADY_BOUND, 4, PROTO_E_BIND_STATE },
    { PROTO_E_ADDRESS, 6, PROTO_E_ADDRESS },
    { PROTO_E_AUTH, 7, PROTO_E_AUTH },
    { PROTO_E_AUTH_ACCOUNT, 7, PROTO_E_AUTH },
    { PROTO_E_AUTH_PASSWORD, 7, PROTO_E_AUTH },
    { PROTO_E_SOURCE, 4, PROTO_E_BIND_STATE },
    { PROTO_E_TOO_LONG, 24, PROTO_E_TOO_LONG },
    { PROTO_E_PERMANENT, 54, PROTO_E_PERMANENT },
    { PROTO_E_TEMPORARY, 55, PROTO_E_TEMPORARY },
    { PROTO_E_THROTTLED, 90, PROTO_E_THROTTLED },
    { PROTO_E_QUEUE_FULL, 91, PROTO_E_QUEUE_FULL },
  };
  struct proto_pdu p = { 0 }, b;

  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
    CU_ASSERT_EQUAL(ucp_proto_ec(map[i].s), map[i].ec);
    CU_ASSERT_EQUAL(ucp_proto_status(map[i].ec), map[i].back);
    /* and over the wire */
    p.op = PROTO_OP_SUBMIT_RESP;
    p.status = map[i].s;
    round_trip(&p, &b);
    CU_ASSERT_EQUAL(b.status, map[i].back);
    CU_ASSERT_EQUAL(b.raw_status, (uint32_t)map[i].ec);
    CU_ASSERT_STRING_NOT_EQUAL(b.text, "Unknown error");
  }
  CU_ASSERT_EQUAL(ucp_proto_status(23), PROTO_E_UNSUPPORTED);
  CU_ASSERT_EQUAL(ucp_proto_status(50), PROTO_E_TEMPORARY);
  CU_ASSERT_EQUAL(ucp_proto_status(5), PROTO_E_PERMANENT);
  CU_ASSERT_EQUAL(ucp_proto_status(22), PROTO_E_PERMANENT);
  CU_ASSERT_EQUAL(ucp_proto_status(99), PROTO_E_PERMANENT);
  CU_ASSERT(proto_status_temporary(ucp_proto_status(UCP_EC_THROTTLED)));
  CU_ASSERT(!proto_status_temporary(ucp_proto_status(4)));
  p.status = PROTO_E_THROTTLED;
  CU_ASSERT_STRING_EQUAL(enc(&p), frame(0, "R/51/N/90/Throttling error/"));
  p.status = PROTO_E_QUEUE_FULL;
  CU_ASSERT_STRING_EQUAL(enc(&p), frame(0, "R/51/N/91/Message queue full/"));
}

/* ---- split, the ops table ---- */

static void test_split_and_ops(void)
{
  static const char two[] = "\x02" "07/00019/R/31/A//72" "\x03"
                            "\x02" "00/00020/R/53/A///96" "\x03";
  struct proto_options small = { .max_frame = 100 };
  uint8_t buf[6000];
  size_t skip = 0;

  CU_ASSERT_STRING_EQUAL(ucp_proto_ops.name, "ucp");
  CU_ASSERT_EQUAL(ucp_proto_ops.ref_first, 0);
  CU_ASSERT_EQUAL(ucp_proto_ops.ref_count, 100);
  CU_ASSERT_EQUAL(ucp_proto_ops.window_max, 100);
  CU_ASSERT(!ucp_proto_ops.has_unbind);

  CU_ASSERT_EQUAL(ucp_proto_ops.split((const uint8_t *)two, sizeof two - 1, &defaults, &skip), 21);
  CU_ASSERT_EQUAL(ucp_proto_ops.split((const uint8_t *)two, 10, &defaults, &skip), 0);
  CU_ASSERT(ucp_proto_ops.split((const uint8_t *)"xy" "\x02", 3, &defaults, &skip) < 0);
  CU_ASSERT_EQUAL(skip, 2);
  /* no ETX: resynchronised after max_frame bytes, 4096 by default */
  memset(buf, '0', sizeof buf);
  memcpy(buf, "\x02" "00/05000/O/51/", 15);
  skip = 0;
  CU_ASSERT_EQUAL(ucp_proto_ops.split(buf, 4095, &defaults, &skip), 0);
  CU_ASSERT(ucp_proto_ops.split(buf, 4096, &defaults, &skip) < 0);
  CU_ASSERT_EQUAL(skip, 4096);
  CU_ASSERT(ucp_proto_ops.split(buf, 100, &small, &skip) < 0);
  CU_ASSERT_EQUAL(skip, 100);

  /* encode appends: two frames in one buffer split back apart */
  struct iobuf out;
  struct proto_pdu p = { .op = PROTO_OP_KEEPALIVE_RESP, .ref = 7 };
  iobuf_init(&out);
  CU_ASSERT_EQUAL(ucp_proto_ops.encode(&p, &out, &defaults), 21);
  p = (struct proto_pdu){ .op = PROTO_OP_DELIVER_RESP, .raw_status = 53 };
  CU_ASSERT_EQUAL(ucp_proto_ops.encode(&p, &out, &defaults), 22);
  CU_ASSERT(iobuf_len(&out) == sizeof two - 1);
  CU_ASSERT(memcmp(iobuf_head(&out), two, sizeof two - 1) == 0);
  iobuf_destroy(&out);
}

/* ---- SCTS allocator ---- */

static void test_scts(void)
{
  const int64_t t0 = utc(2024, 8, 6, 14, 30, 15);
  struct scts_alloc *a = scts_alloc_create(1024, SCTS_DDMMYY);
  char s[8][13];

  CU_ASSERT_PTR_NULL(scts_alloc_create(0, SCTS_DDMMYY));
  CU_ASSERT_PTR_NOT_NULL_FATAL(a);
  /* the same recipient five times in one second: five seconds */
  for (int i = 0; i < 5; i++)
    CU_ASSERT_EQUAL(scts_next(a, "31612345678", t0, s[i]), 0);
  CU_ASSERT_STRING_EQUAL(s[0], "060824143015");
  CU_ASSERT_STRING_EQUAL(s[1], "060824143016");
  CU_ASSERT_STRING_EQUAL(s[4], "060824143019");
  /* other recipients share the second */
  CU_ASSERT_EQUAL(scts_next(a, "31612345679", t0, s[5]), 0);
  CU_ASSERT_STRING_EQUAL(s[5], "060824143015");
  CU_ASSERT_EQUAL(scts_next(a, "4790000101", t0, s[5]), 0);
  CU_ASSERT_STRING_EQUAL(s[5], "060824143015");
  /* a second later the first is still ahead; a clock that steps back is not followed */
  CU_ASSERT_EQUAL(scts_next(a, "31612345678", t0 + 1, s[6]), 0);
  CU_ASSERT_STRING_EQUAL(s[6], "060824143020");
  CU_ASSERT_EQUAL(scts_next(a, "31612345679", t0 - 60, s[6]), 0);
  CU_ASSERT_STRING_EQUAL(s[6], "060824143016");
  /* a new recipient after the clock stepped back: the latest second seen */
  CU_ASSERT_EQUAL(scts_next(a, "31612345670", t0 - 60, s[6]), 0);
  CU_ASSERT_STRING_EQUAL(s[6], "060824143016");
  /* once its seconds have passed it is back on the clock */
  CU_ASSERT_EQUAL(scts_next(a, "31612345678", t0 + 100, s[7]), 0);
  CU_ASSERT_STRING_EQUAL(s[7], "060824143155");
  CU_ASSERT_EQUAL(scts_last(a), t0 + 100);   /* the second of the stamp just written */
  /* SCTS has two year digits */
  CU_ASSERT_EQUAL(scts_next(a, "1", utc(2070, 1, 1, 0, 0, 0), s[7]), -1);
  scts_alloc_destroy(a);
}

/* More recipients in a second than slots: still unique per recipient, and
 * once the seconds pass, back on the clock. */
static void test_scts_eviction(void)
{
  enum { RECIPIENTS = 200, ROUNDS = 6 };
  const int64_t t0 = utc(2025, 3, 1, 12, 0, 0);
  struct scts_alloc *a = scts_alloc_create(4, SCTS_DDMMYY);
  static char seen[RECIPIENTS][ROUNDS][13];
  char who[16], s[13];
  int dups = 0, ahead = 0;

  CU_ASSERT_PTR_NOT_NULL_FATAL(a);
  for (int round = 0; round < ROUNDS; round++) {
    for (int r = 0; r < RECIPIENTS; r++) {
      snprintf(who, sizeof who, "4790%06d", r);
      CU_ASSERT_EQUAL(scts_next(a, who, t0 + round / 2, seen[r][round]), 0);
      for (int k = 0; k < round; k++)
        dups += strcmp(seen[r][k], seen[r][round]) == 0;
    }
  }
  CU_ASSERT_EQUAL(dups, 0);
  /* the table was overrun, so seconds ran ahead of the clock ... */
  CU_ASSERT_STRING_NOT_EQUAL(seen[RECIPIENTS - 1][0], "010325120000");
  /* ... but after they pass, new recipients start on the clock again */
  for (int r = 0; r < 4; r++) {
    snprintf(who, sizeof who, "5550%06d", r);
    CU_ASSERT_EQUAL(scts_next(a, who, t0 + 100000, s), 0);
    ahead += strcmp(s, "020325154640") != 0;
  }
  CU_ASSERT_EQUAL(ahead, 0);
  scts_alloc_destroy(a);
}

/* Full of seconds not yet passed: the newcomer takes the slot nearest to
 * now, so the newcomers after it (who may be the one dropped) run ahead as
 * little as can be. Several tries, so that some probe the far-ahead slot
 * first. */
static void test_scts_victim(void)
{
  const int64_t t0 = utc(2025, 3, 1, 12, 0, 0);
  char s[13], who[16];

  for (int i = 0; i < 8; i++) {
    struct scts_alloc *a = scts_alloc_create(2, SCTS_DDMMYY);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    for (int k = 0; k < 5; k++)
      scts_next(a, "4790000001", t0, s); /* ahead to t0 + 4 */
    scts_next(a, "4790000002", t0, s);
    snprintf(who, sizeof who, "55500000%02d", i);
    CU_ASSERT_EQUAL(scts_next(a, who, t0, s), 0);
    CU_ASSERT_STRING_EQUAL(s, "010325120000"); /* it never had a slot: any second is its own */
    snprintf(who, sizeof who, "66600000%02d", i);
    CU_ASSERT_EQUAL(scts_next(a, who, t0, s), 0);
    CU_ASSERT_STRING_EQUAL(s, "010325120001");
    scts_alloc_destroy(a);
  }
}

void suite_ucp_proto(void);
void suite_ucp_proto(void)
{
  static const struct test_case cases[] = {
    { "Kannel emi2 vectors", test_kannel_vectors },
    { "spec login, alert", test_spec_session },
    { "spec submit and results", test_spec_submit },
    { "spec notifications 53", test_spec_receipts },
    { "spec MO 52", test_spec_mo },
    { "round trip: bind, keep-alive", test_round_trip_session },
    { "round trip: submit", test_round_trip_submit },
    { "a submit's notifications (NRq, NT) from its dlr_mask", test_submit_notifications },
    { "round trip: deliver, receipts", test_round_trip_deliver },
    { "round trip: OTHER, NACK", test_round_trip_refusals },
    { "decode errors", test_decode_errors },
    { "MT 4 septets, MCLs, DCS", test_mt4_septets },
    { "Latin-1 text", test_latin1 },
    { "encode failures", test_encode_failures },
    { "EC <-> status", test_ec_mapping },
    { "split, ops table", test_split_and_ops },
    { "SCTS allocator", test_scts },
    { "SCTS allocator overrun", test_scts_eviction },
    { "SCTS allocator eviction choice", test_scts_victim },
    { NULL, NULL },
  };
  test_add_suite("ucp_proto", cases);
}
