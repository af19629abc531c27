/* test_ucp.c - UCP/EMI codec: the frames of doc/ucp.md 7, Kannel's captured frames,
 * malformed input, the splitter and the field helpers.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "charset.h"
#include "testutil.h"
#include "ucp_codec.h"

/* ---- helpers ---- */

static int slice_is(struct ucp_slice s, const char *want)
{
  return s.len == strlen(want) && (s.len == 0 || memcmp(s.p, want, s.len) == 0);
}
#define ASSERT_SLICE(s, lit) CU_ASSERT(slice_is((s), (lit)))

static struct ucp_slice sl(const char *s)
{
  return (struct ucp_slice){ s, strlen(s) };
}

/* The frame STX inner ETX in a buffer of exactly its size, so that ASan
 * catches any read past the end. Caller frees. */
static uint8_t *wrap(const char *inner, size_t *len)
{
  size_t n = strlen(inner);
  uint8_t *b = malloc(n + 2);
  b[0] = UCP_STX;
  memcpy(b + 1, inner, n);
  b[n + 1] = UCP_ETX;
  *len = n + 2;
  return b;
}

/* Builds "<trn>/<LEN>/<rest><CK>" with a correct checksum; LEN is the right
 * one, or len_override when >= 0. Checksum computed here independently of
 * the codec. Returns a wrap()ed frame. */
static uint8_t *mk(const char *trn, long len_override, const char *rest, size_t *len)
{
  char inner[4096];
  unsigned sum = 0;
  size_t n = strlen(trn) + 1 + 5 + 1 + strlen(rest) + 2;
  snprintf(inner, sizeof inner, "%s/%05ld/%s", trn, len_override >= 0 ? len_override : (long)n, rest);
  for (const char *p = inner; *p; p++)
    sum += (uint8_t)*p;
  snprintf(inner + strlen(inner), sizeof inner - strlen(inner), "%02X", sum & 0xFF);
  return wrap(inner, len);
}

/* Decodes inner (STX/ETX added), expects success and a byte-for-byte
 * re-encoding. The frame is returned (caller frees) so that m's slices stay valid. */
static uint8_t *decode_ok(const char *inner, struct ucp_msg *m)
{
  size_t len;
  uint8_t *f = wrap(inner, &len), out[2048];
  int r;
  memset(m, 0, sizeof *m); /* if decoding fails, the field asserts read empty slices */
  r = ucp_decode(f, len, m);
  CU_ASSERT_EQUAL(r, 0);
  if (r == 0) {
    int n = ucp_encode(m, out, sizeof out);
    CU_ASSERT_EQUAL(n, (int)len);
    CU_ASSERT(n == (int)len && memcmp(out, f, len) == 0);
  }
  return f;
}

static int decode_err(const char *inner)
{
  size_t len;
  struct ucp_msg m;
  uint8_t *f = wrap(inner, &len);
  int r = ucp_decode(f, len, &m);
  free(f);
  return r;
}

/* AMsg slice as UTF-8 text equals want. */
static int amsg_is(struct ucp_slice amsg, const char *want)
{
  char text[1024];
  int n = ucp_amsg_to_utf8(text, sizeof text, amsg);
  return n == (int)strlen(want) && memcmp(text, want, (size_t)n) == 0;
}

#define PARCEL_TEXT                                                                               \
  "Dear customer, your parcel 4711 has been dispatched and will arrive tomorrow between 08:00 " \
  "and 12:00. Reply STOP to opt out. Thanks for ordering!"

#define FRAME4                                                                                    \
  "02/00357/O/51/31612345678/4455//1//3/////////////3//"                                         \
  "4465617220637573746F6D65722C20796F75722070617263656C203437313120686173206265656E20646973706174" \
  "6368656420616E642077696C6C2061727269766520746F6D6F72726F77206265747765656E2030383A303020616E64" \
  "2031323A30302E205265706C792053544F5020746F206F7074206F75742E205468616E6B7320666F72206F72646572" \
  "696E6721/////////////79"

#define FRAME7                                                                                    \
  "00/00245/O/53/4455/31612345678/////////////060824143015/0/000/060824143122/3//"               \
  "4D65737361676520666F722033313631323334353637382C2077697468206964656E74696669636174696F6E2032" \
  "343038303631343330313520686173206265656E2064656C697665726564/////////////3A"

#define FRAME9                                                                                    \
  "01/00243/O/53/4455/31612345678/////////////060824143015/1/107/060824143200/3//"               \
  "4D65737361676520666F722033313631323334353637382C2077697468206964656E74696669636174696F6E2032" \
  "343038303631343330313520686173206265656E206275666665726564/////////////C1"

#define SPEC_51                                                                                   \
  "18/00113/O/51/012345/09876//1/1920870340125000/4/0539//////3012961212//////3//"               \
  "4D657373616765203531/////////////CD"

#define SPEC_53                                                                                   \
  "00/00234/O/53/1299998/3155555/////////////090196161057/1/108/090196161105/3//"                \
  "4D65737361676520666F7220333135353535352C2077697468206964656E74696669636174696F6E203936303130" \
  "3931363130353720686173206265656E206275666665726564/////////////1F"

/* Every frame of doc/ucp.md 7 (items 1-14 and the seven spec examples). */
static const char *const spec_frames[] = {
  "01/00052/O/60/12345/6/5/1/736563726574//0100//////D6",
  "01/00019/R/60/A//6E",
  "01/00044/R/60/N/07/Authentication failure/D7",
  FRAME4,
  "02/00044/R/51/A//31612345678:060824143015/76",
  "03/00034/R/51/N/02/Syntax error/DC",
  FRAME7,
  "00/00020/R/53/A///96",
  FRAME9,
  "07/00027/O/31/12345/0539/FD",
  "07/00019/R/31/A//72",
  "08/00085/O/52/4455/31612345678/////////////060824150102////3//53544F50/////////////36",
  "08/00020/R/52/A///9D",
  "04/00085/O/51/31612345678/0DC730BD7C0FE701/////////////////3//4869////////5039/////A2",
  "05/00099/O/51/31612345678/4455/////////////////4/0096/041F04400438043204350442//////////020108///F6",
  "06/00107/O/51/31612345678/4455/////////////////3//50617274206F6E652074657874//////////01060500032A0201///BC",
  "00/00039/R/51/A//012234:090996101010/68",
  "00/00022/R/51/N/31//07",
  "02/00059/O/60/07656765/2/1/1/50617373776F7264//0100//////61",
  "00/00019/R/60/A//6D",
  "02/00035/O/31/0234765439845/0139/A0",
  SPEC_51,
  SPEC_53,
};

/* ---- doc/ucp.md 7 ---- */

static void test_spec_frames_roundtrip(void)
{
  for (size_t i = 0; i < sizeof spec_frames / sizeof spec_frames[0]; i++) {
    struct ucp_msg m;
    const char *s = spec_frames[i];
    free(decode_ok(s, &m));
    CU_ASSERT_EQUAL(m.trn, (s[0] - '0') * 10 + s[1] - '0');
    CU_ASSERT_EQUAL(m.o_r, s[9]);
    CU_ASSERT_EQUAL(m.ot, (s[11] - '0') * 10 + s[12] - '0');
    CU_ASSERT_EQUAL(m.extra, 0);
  }
}

static void test_spec_login(void)
{
  struct ucp_msg m;
  uint8_t pwd[16];
  uint8_t *f = decode_ok(spec_frames[0], &m);
  CU_ASSERT_EQUAL(m.o_r, 'O');
  ASSERT_SLICE(m.o60.oadc, "12345");
  CU_ASSERT_EQUAL(m.o60.v.oton, 6);
  CU_ASSERT_EQUAL(m.o60.v.onpi, 5);
  CU_ASSERT_EQUAL(m.o60.v.styp, 1);
  CU_ASSERT_EQUAL(ucp_hex_decode(pwd, sizeof pwd, m.o60.pwd), 6);
  CU_ASSERT_NSTRING_EQUAL(pwd, "secret", 6);
  ASSERT_SLICE(m.o60.npwd, "");
  ASSERT_SLICE(m.o60.vers, "0100");
  CU_ASSERT_EQUAL(m.o60.v.opid, -1);
  CU_ASSERT_EQUAL(m.o60.v.lton, -1);
  free(f);

  f = decode_ok(spec_frames[1], &m);
  CU_ASSERT_EQUAL(m.r.ack, 1);
  CU_ASSERT_EQUAL(m.r.ec, -1);
  ASSERT_SLICE(m.r.sm, "");
  free(f);

  f = decode_ok(spec_frames[2], &m);
  CU_ASSERT_EQUAL(m.r.ack, 0);
  CU_ASSERT_EQUAL(m.r.ec, 7);
  ASSERT_SLICE(m.r.sm, "Authentication failure");
  CU_ASSERT_STRING_EQUAL(ucp_ec_text(m.r.ec), "Authentication failure");
  free(f);

  /* op 61 (not among the examples): add 31612345678 to the MO list */
  {
    size_t len;
    uint8_t *g = mk("04", -1, "O/61/emg/6/5/1/736563726574//0100/31612345678/1/1///", &len);
    CU_ASSERT_EQUAL(ucp_decode(g, len, &m), 0);
    CU_ASSERT_EQUAL(m.ot, 61);
    ASSERT_SLICE(m.o61.oadc, "emg");
    CU_ASSERT_EQUAL(m.o61.v.styp, 1);
    ASSERT_SLICE(m.o61.ladc, "31612345678");
    CU_ASSERT_EQUAL(m.o61.v.lton, 1);
    CU_ASSERT_EQUAL(m.o61.v.lnpi, 1);
    ASSERT_SLICE(m.o61.res2, "");
    free(g);
  }

  /* spec example: OTON 2, ONPI 1, password "Password" */
  f = decode_ok(spec_frames[18], &m);
  ASSERT_SLICE(m.o60.oadc, "07656765");
  CU_ASSERT_EQUAL(m.o60.v.oton, 2);
  CU_ASSERT_EQUAL(m.o60.v.onpi, 1);
  CU_ASSERT_EQUAL(ucp_hex_decode(pwd, sizeof pwd, m.o60.pwd), 8);
  CU_ASSERT_NSTRING_EQUAL(pwd, "Password", 8);
  free(f);
}

static void test_spec_submit(void)
{
  struct ucp_msg m;
  struct ucp_slice adc, scts;
  uint8_t *f = decode_ok(FRAME4, &m);
  CU_ASSERT_EQUAL(strlen(PARCEL_TEXT), 145);
  CU_ASSERT_EQUAL(m.trn, 2);
  CU_ASSERT_EQUAL(m.ot, 51);
  ASSERT_SLICE(m.o5x.adc, "31612345678");
  ASSERT_SLICE(m.o5x.oadc, "4455");
  CU_ASSERT_EQUAL(m.o5x.v.nrq, 1);
  CU_ASSERT_EQUAL(m.o5x.v.nt, 3);
  CU_ASSERT_EQUAL(m.o5x.v.mt, 3);
  CU_ASSERT_EQUAL(m.o5x.v.nb, -1);
  CU_ASSERT_EQUAL(m.o5x.v.otoa, -1);
  CU_ASSERT_EQUAL(m.o5x.v.xdcs, -1);
  CU_ASSERT_EQUAL(m.o5x.v.udh.len, 0);
  CU_ASSERT_EQUAL(m.o5x.msg.len, 290);
  CU_ASSERT(amsg_is(m.o5x.msg, PARCEL_TEXT));
  free(f);

  /* its ACK: SM = AdC:SCTS */
  f = decode_ok(spec_frames[4], &m);
  CU_ASSERT_EQUAL(m.r.ack, 1);
  ASSERT_SLICE(m.r.mvp, "");
  CU_ASSERT_EQUAL(ucp_sm_adc_scts_parse(m.r.sm, &adc, &scts), 0);
  ASSERT_SLICE(adc, "31612345678");
  ASSERT_SLICE(scts, "060824143015");
  free(f);

  f = decode_ok(spec_frames[5], &m);
  CU_ASSERT_EQUAL(m.r.ack, 0);
  CU_ASSERT_EQUAL(m.r.ec, 2);
  ASSERT_SLICE(m.r.sm, "Syntax error");
  free(f);

  /* spec: NAdC with NPID 0539, VP, AMsg "Message 51" */
  f = decode_ok(SPEC_51, &m);
  CU_ASSERT_EQUAL(m.trn, 18);
  ASSERT_SLICE(m.o5x.adc, "012345");
  ASSERT_SLICE(m.o5x.oadc, "09876");
  CU_ASSERT_EQUAL(m.o5x.v.nrq, 1);
  ASSERT_SLICE(m.o5x.nadc, "1920870340125000");
  CU_ASSERT_EQUAL(m.o5x.v.nt, 4);
  CU_ASSERT_EQUAL(m.o5x.v.npid, 539);
  ASSERT_SLICE(m.o5x.vp, "3012961212");
  CU_ASSERT(amsg_is(m.o5x.msg, "Message 51"));
  free(f);

  /* spec 51 ACK and NACK (EC 31, empty SM) */
  f = decode_ok(spec_frames[16], &m);
  CU_ASSERT_EQUAL(ucp_sm_adc_scts_parse(m.r.sm, &adc, &scts), 0);
  ASSERT_SLICE(adc, "012234");
  ASSERT_SLICE(scts, "090996101010");
  free(f);
  f = decode_ok(spec_frames[17], &m);
  CU_ASSERT_EQUAL(m.r.ack, 0);
  CU_ASSERT_EQUAL(m.r.ec, 31);
  ASSERT_SLICE(m.r.sm, "");
  free(f);
}

static void test_spec_notifications(void)
{
  struct ucp_msg m;
  char text[128];
  uint8_t *f = decode_ok(FRAME7, &m);
  int n;
  CU_ASSERT_EQUAL(m.ot, 53);
  ASSERT_SLICE(m.o5x.adc, "4455");
  ASSERT_SLICE(m.o5x.oadc, "31612345678");
  ASSERT_SLICE(m.o5x.scts, "060824143015");
  CU_ASSERT_EQUAL(m.o5x.v.dst, 0);
  CU_ASSERT_EQUAL(m.o5x.v.rsn, 0);
  ASSERT_SLICE(m.o5x.rsn, "000");
  ASSERT_SLICE(m.o5x.dscts, "060824143122");
  CU_ASSERT_EQUAL(m.o5x.v.mt, 3);
  n = ucp_53_text(text, sizeof text, m.o5x.oadc, m.o5x.scts, m.o5x.v.dst);
  CU_ASSERT(n > 0 && amsg_is(m.o5x.msg, "Message for 31612345678, with identification 240806143015 has been delivered"));
  CU_ASSERT(n > 0 && amsg_is(m.o5x.msg, (text[n] = 0, text)));
  free(f);

  f = decode_ok(FRAME9, &m);
  CU_ASSERT_EQUAL(m.o5x.v.dst, 1);
  CU_ASSERT_EQUAL(m.o5x.v.rsn, 107);
  n = ucp_53_text(text, sizeof text, m.o5x.oadc, m.o5x.scts, m.o5x.v.dst);
  CU_ASSERT(n > 0 && amsg_is(m.o5x.msg, (text[n] = 0, text)));
  free(f);

  /* the spec's own example: "... 960109161057 has been buffered" */
  f = decode_ok(SPEC_53, &m);
  CU_ASSERT_EQUAL(m.o5x.v.rsn, 108);
  n = ucp_53_text(text, sizeof text, m.o5x.oadc, m.o5x.scts, m.o5x.v.dst);
  CU_ASSERT_EQUAL(n, (int)strlen("Message for 3155555, with identification 960109161057 has been buffered"));
  CU_ASSERT(n > 0 && amsg_is(m.o5x.msg, (text[n] = 0, text)));
  free(f);

  f = decode_ok(spec_frames[7], &m);
  CU_ASSERT_EQUAL(m.ot, 53);
  CU_ASSERT_EQUAL(m.r.ack, 1);
  ASSERT_SLICE(m.r.mvp, "");
  ASSERT_SLICE(m.r.sm, "");
  free(f);

  CU_ASSERT_EQUAL(ucp_53_text(text, sizeof text, sl("123"), sl("060824143015"), 2),
                  (int)strlen("Message for 123, with identification 240806143015 could not be delivered"));
  CU_ASSERT_NSTRING_EQUAL(text, "Message for 123, with identification 240806143015 could not be delivered", 72);
  CU_ASSERT_EQUAL(ucp_53_text(text, sizeof text, sl("123"), sl("0608241430"), 0), UCP_E_INVALID);
  CU_ASSERT_EQUAL(ucp_53_text(text, sizeof text, sl("123"), sl("060824143015"), 3), UCP_E_INVALID);
  CU_ASSERT_EQUAL(ucp_53_text(text, 20, sl("123"), sl("060824143015"), 0), UCP_E_SPACE);
}

static void test_spec_alert_mo(void)
{
  struct ucp_msg m;
  uint8_t *f = decode_ok(spec_frames[9], &m);
  ASSERT_SLICE(m.o31.adc, "12345");
  CU_ASSERT_EQUAL(m.o31.v.pid, 539);
  free(f);
  f = decode_ok(spec_frames[10], &m);
  CU_ASSERT_EQUAL(m.ot, 31);
  CU_ASSERT_EQUAL(m.r.ack, 1);
  free(f);
  f = decode_ok(spec_frames[20], &m);
  ASSERT_SLICE(m.o31.adc, "0234765439845");
  CU_ASSERT_EQUAL(m.o31.v.pid, 139);
  free(f);

  f = decode_ok(spec_frames[11], &m);
  CU_ASSERT_EQUAL(m.ot, 52);
  ASSERT_SLICE(m.o5x.adc, "4455");
  ASSERT_SLICE(m.o5x.oadc, "31612345678");
  ASSERT_SLICE(m.o5x.scts, "060824150102");
  CU_ASSERT(amsg_is(m.o5x.msg, "STOP"));
  free(f);
  f = decode_ok(spec_frames[12], &m);
  CU_ASSERT_EQUAL(m.ot, 52);
  CU_ASSERT_EQUAL(m.r.ack, 1);
  ASSERT_SLICE(m.r.mvp, "");
  ASSERT_SLICE(m.r.sm, "");
  free(f);
  f = decode_ok(spec_frames[19], &m);
  CU_ASSERT_EQUAL(m.ot, 60);
  CU_ASSERT_EQUAL(m.r.ack, 1);
  CU_ASSERT_EQUAL(m.r.ec, -1);
  free(f);
}

static void test_spec_alnum_ucs2_udh(void)
{
  struct ucp_msg m;
  char text[64];
  uint8_t oct[64];
  int n;
  uint8_t *f = decode_ok(spec_frames[13], &m);
  CU_ASSERT_EQUAL(m.o5x.v.otoa, 5039);
  n = ucp_oadc_alnum_decode(text, sizeof text, m.o5x.oadc);
  CU_ASSERT_EQUAL(n, 7);
  CU_ASSERT_NSTRING_EQUAL(text, "Gateway", 7);
  CU_ASSERT(amsg_is(m.o5x.msg, "Hi"));
  free(f);

  f = decode_ok(spec_frames[14], &m);
  CU_ASSERT_EQUAL(m.o5x.v.mt, 4);
  CU_ASSERT_EQUAL(m.o5x.v.nb, 96);
  CU_ASSERT_EQUAL(m.o5x.v.xdcs, 0x08);
  CU_ASSERT_EQUAL(m.o5x.v.udh.len, 0);
  n = ucp_hex_decode(oct, sizeof oct, m.o5x.msg);
  CU_ASSERT_EQUAL(n, 12);
  n = charset_ucs2_to_utf8(text, sizeof text, oct, (size_t)n);
  CU_ASSERT(n == (int)strlen("Привет") && memcmp(text, "Привет", (size_t)n) == 0);
  free(f);

  f = decode_ok(spec_frames[15], &m);
  ASSERT_SLICE(m.o5x.v.udh, "0500032A0201");
  CU_ASSERT_EQUAL(m.o5x.v.xdcs, -1);
  CU_ASSERT(amsg_is(m.o5x.msg, "Part one text"));
  free(f);
}

/* ---- Kannel 1.4.5 emi2 client ---- */

static void test_kannel_vectors(void)
{
  struct test_vector *v;
  int n = test_vectors_load("ucp-kannel-emi2-client.hex", &v), o51 = 0, r53 = 0;
  char text[256];
  uint8_t oct[64];
  CU_ASSERT_FATAL(n > 0);
  for (int i = 0; i < n; i++) {
    struct ucp_msg m;
    uint8_t out[1024];
    int r = ucp_decode(v[i].bytes, v[i].len, &m);
    CU_ASSERT_EQUAL(r, 0);
    if (r)
      continue;
    CU_ASSERT_EQUAL(ucp_encode(&m, out, sizeof out), (int)v[i].len);
    CU_ASSERT_EQUAL(memcmp(out, v[i].bytes, v[i].len), 0);
    CU_ASSERT_EQUAL(m.extra, 0);

    if (strcmp(v[i].label, "O60") == 0) {
      ASSERT_SLICE(m.o60.oadc, "harness");
      CU_ASSERT_EQUAL(m.trn, 0);
      CU_ASSERT_EQUAL(m.o60.v.oton, 6);
      CU_ASSERT_EQUAL(m.o60.v.onpi, 5);
      CU_ASSERT_EQUAL(m.o60.v.styp, 1);
      ASSERT_SLICE(m.o60.pwd, "736563726574");
      ASSERT_SLICE(m.o60.vers, "0100");
    } else if (strcmp(v[i].label, "O31") == 0) {
      ASSERT_SLICE(m.o31.adc, "harness");
      CU_ASSERT_EQUAL(m.o31.v.pid, 539);
    } else if (strcmp(v[i].label, "R53/A") == 0) {
      CU_ASSERT_EQUAL(m.ot, 53);
      CU_ASSERT_EQUAL(m.trn, r53++);
      CU_ASSERT_EQUAL(m.r.ack, 1);
      ASSERT_SLICE(m.r.sm, "");
    } else {
      const struct ucp_op5x *o = &m.o5x;
      CU_ASSERT_STRING_EQUAL(v[i].label, "O51");
      o51++;
      /* Kannel always asks for DN + ND */
      CU_ASSERT_EQUAL(o->v.nrq, 1);
      CU_ASSERT_EQUAL(o->v.nt, 3);
      CU_ASSERT(ucp_notify_wanted(o->v.nrq, o->v.nt, 0));
      CU_ASSERT(!ucp_notify_wanted(o->v.nrq, o->v.nt, 1));
      CU_ASSERT(ucp_notify_wanted(o->v.nrq, o->v.nt, 2));
      CU_ASSERT_EQUAL(o->adc.len, 10);
      switch (o->adc.p[9]) {
      case '1':
        ASSERT_SLICE(o->oadc, "12345");
        CU_ASSERT_EQUAL(o->v.otoa, -1);
        CU_ASSERT_EQUAL(o->v.mt, 3);
        CU_ASSERT(amsg_is(o->msg, "Hello world"));
        break;
      case '2':
        CU_ASSERT_EQUAL(o->v.otoa, 5039);
        ASSERT_SLICE(o->oadc, "0DC8B0DC5D9ECF01");
        CU_ASSERT_EQUAL(ucp_oadc_alnum_decode(text, sizeof text, o->oadc), 7);
        CU_ASSERT_NSTRING_EQUAL(text, "Harness", 7);
        CU_ASSERT(amsg_is(o->msg, "Alphanumeric sender"));
        break;
      case '3':
        ASSERT_SLICE(o->oadc, "4712345678");
        CU_ASSERT_EQUAL(o->v.otoa, 1139);
        CU_ASSERT(amsg_is(o->msg, "International sender"));
        break;
      case '4': {
        int k;
        CU_ASSERT_EQUAL(o->v.mt, 4);
        CU_ASSERT_EQUAL(o->v.nb, 128);
        CU_ASSERT_EQUAL(o->v.mcls, 1);
        CU_ASSERT_EQUAL(o->v.xdcs, 0x08);
        CU_ASSERT_EQUAL(o->v.udh.len, 0);
        k = ucp_hex_decode(oct, sizeof oct, o->msg);
        CU_ASSERT_EQUAL(k, 16);
        k = charset_ucs2_to_utf8(text, sizeof text, oct, (size_t)k);
        CU_ASSERT(k == (int)strlen("Привет €") && memcmp(text, "Привет €", (size_t)k) == 0);
        break;
      }
      case '5':
        CU_ASSERT_EQUAL(o->v.mt, 4);
        CU_ASSERT_EQUAL(o->v.nb, 32);
        CU_ASSERT_EQUAL(o->v.mcls, 1);
        ASSERT_SLICE(o->msg, "C0FF0001");
        ASSERT_SLICE(o->v.udh, "0605040B8423F0");
        CU_ASSERT_EQUAL(o->v.xdcs, -1);
        break;
      case '6':
        CU_ASSERT_EQUAL(o->v.mt, 3);
        CU_ASSERT_EQUAL(o->v.xdcs, 0x10);
        CU_ASSERT_EQUAL(o->v.mcls, -1);
        CU_ASSERT(amsg_is(o->msg, "Flash message"));
        break;
      case '7': {
        time_t t;
        ASSERT_SLICE(o->vp, "3011260635");
        CU_ASSERT_EQUAL(ucp_time_parse(o->vp, &t), 0);
        CU_ASSERT_EQUAL(t, (time_t)1796020500); /* 2026-11-30 06:35 UTC */
        CU_ASSERT_EQUAL(o->v.rpid, 65);
        ASSERT_SLICE(o->rpid, "0065");
        CU_ASSERT(amsg_is(o->msg, "Validity and PID"));
        break;
      }
      default:
        CU_FAIL("unexpected recipient");
      }
    }
  }
  CU_ASSERT_EQUAL(o51, 7);
  CU_ASSERT_EQUAL(r53, 7);
  test_vectors_free(v, n);
}

/* ---- malformed input ---- */

static void test_bad_checksum(void)
{
  struct ucp_msg m;
  size_t len;
  uint8_t *f = wrap("01/00019/R/60/A//6F", &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_CHECKSUM);
  CU_ASSERT_EQUAL(ucp_error_ec(UCP_E_CHECKSUM), 1);
  CU_ASSERT_EQUAL(m.trn, 1);
  CU_ASSERT_EQUAL(m.ot, 60);
  CU_ASSERT_EQUAL(m.o_r, 'R');
  free(f);
  /* a flipped byte inside the body */
  CU_ASSERT_EQUAL(decode_err("07/00027/O/31/12346/0539/FD"), UCP_E_CHECKSUM);
  /* lowercase checksum digits are accepted */
  f = wrap("07/00027/O/31/12345/0539/fd", &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), 0);
  free(f);
  /* non-hex checksum digits are a syntax error */
  CU_ASSERT_EQUAL(decode_err("07/00027/O/31/12345/0539/FG"), UCP_E_SYNTAX);
}

static void test_bad_header(void)
{
  struct ucp_msg m;
  size_t len;
  uint8_t *f;

  /* LEN one too many, one too few (checksums right) */
  f = mk("07", 28, "O/31/12345/0539/", &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  CU_ASSERT_EQUAL(ucp_error_ec(UCP_E_SYNTAX), 2);
  CU_ASSERT_EQUAL(m.trn, 7);
  CU_ASSERT_EQUAL(m.ot, 31);
  free(f);
  f = mk("07", 26, "O/31/12345/0539/", &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);

  /* non-digit TRN: unanswerable, but OT is still reported */
  f = mk("0A", -1, "O/31/12345/0539/", &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  CU_ASSERT_EQUAL(m.trn, -1);
  CU_ASSERT_EQUAL(m.ot, 31);
  free(f);

  /* non-digit OT, wrong O/R, non-digit LEN */
  f = mk("07", -1, "O/3X/12345/0539/", &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  CU_ASSERT_EQUAL(m.trn, 7);
  CU_ASSERT_EQUAL(m.ot, -1);
  free(f);
  f = mk("07", -1, "X/31/12345/0539/", &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  CU_ASSERT_EQUAL(m.o_r, 0);
  CU_ASSERT_EQUAL(m.ot, 31);
  free(f);
  CU_ASSERT_EQUAL(decode_err("07/000A7/O/31/12345/0539/FD"), UCP_E_SYNTAX);

  /* no STX / no ETX / too short to hold a checksum */
  f = wrap("07/00027/O/31/12345/0539/FD", &len);
  CU_ASSERT_EQUAL(ucp_decode(f + 1, len - 1, &m), UCP_E_SYNTAX);
  CU_ASSERT_EQUAL(ucp_decode(f, len - 1, &m), UCP_E_SYNTAX);
  free(f);
  f = wrap("07/00016/O/31/", &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  CU_ASSERT_EQUAL(m.trn, 7);
  CU_ASSERT_EQUAL(m.ot, 31);
  free(f);
  CU_ASSERT_EQUAL(ucp_decode(NULL, 0, &m), UCP_E_SYNTAX);
}

static void test_truncated(void)
{
  /* every proper prefix of a valid frame, in a buffer of exactly that size */
  size_t len;
  uint8_t *full = wrap(FRAME4, &len);
  for (size_t n = 0; n < len; n++) {
    struct ucp_msg m;
    size_t skip = 12345;
    uint8_t *p = malloc(n ? n : 1);
    memcpy(p, full, n);
    CU_ASSERT_EQUAL(ucp_decode(p, n, &m), UCP_E_SYNTAX);
    CU_ASSERT_EQUAL(ucp_split(p, n, 1000, &skip), UCP_SPLIT_MORE);
    free(p);
  }
  free(full);
}

static void test_bad_fields(void)
{
  struct ucp_msg m;
  size_t len;
  uint8_t *f;
  /* 33 fields of a 51 with one value changed */
#define F51(adc, oadc, nt, mt, nb, msg, otoa, xser)                                                \
  "O/51/" adc "/" oadc "//1//" nt "/////////////" mt "/" nb "/" msg "////////" otoa "//" xser "///"

  f = mk("01", -1, F51("12345", "4455", "3", "3", "", "4869", "", ""), &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), 0);
  free(f);

  /* AdC of 17 digits, letters in AdC, OAdC of 17 digits */
  f = mk("01", -1, F51("12345678901234567", "4455", "3", "3", "", "4869", "", ""), &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  CU_ASSERT_EQUAL(m.trn, 1);
  CU_ASSERT_EQUAL(m.ot, 51);
  CU_ASSERT_EQUAL(m.o_r, 'O');
  free(f);
  f = mk("01", -1, F51("1234A", "4455", "3", "3", "", "4869", "", ""), &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  f = mk("01", -1, F51("12345", "12345678901234567", "3", "3", "", "4869", "", ""), &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  /* hex OAdC without OTOA 5039, odd hex with it */
  f = mk("01", -1, F51("12345", "0DC730BD7C0FE701", "3", "3", "", "4869", "", ""), &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  f = mk("01", -1, F51("12345", "0DC730BD7C0FE70", "3", "3", "", "4869", "5039", ""), &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  /* non-digit NT, two-digit NT */
  f = mk("01", -1, F51("12345", "4455", "x", "3", "", "4869", "", ""), &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  f = mk("01", -1, F51("12345", "4455", "33", "3", "", "4869", "", ""), &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  /* odd AMsg, non-hex AMsg, AMsg of 640 (fine) and 642 hex digits */
  f = mk("01", -1, F51("12345", "4455", "3", "3", "", "486", "", ""), &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  f = mk("01", -1, F51("12345", "4455", "3", "3", "", "48G9", "", ""), &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  {
    char big[700], rest[1200];
    memset(big, 'A', 640);
    big[640] = 0;
    snprintf(rest, sizeof rest, F51("12345", "4455", "3", "3", "", "%s", "", ""), big);
    f = mk("01", -1, rest, &len);
    CU_ASSERT_EQUAL(ucp_decode(f, len, &m), 0);
    CU_ASSERT_EQUAL(m.o5x.msg.len, 640);
    free(f);
    strcpy(big + 640, "AA");
    snprintf(rest, sizeof rest, F51("12345", "4455", "3", "3", "", "%s", "", ""), big);
    f = mk("01", -1, rest, &len);
    CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
    free(f);
  }
  /* bytes above 0x7F among hex digits (a whole 8-byte word of them, too) */
  f = mk("01", -1, F51("12345", "4455", "3", "3", "", "48656C6C6F20\xB0\xB1\xB2\xB3\xB4\xB5\xB6\xB7\xC1\xE6", "", ""), &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  /* each neighbour of the hex ranges, at each place of a 24-digit AMsg (the
   * SWAR fast path covers whole 8-byte words, the byte loop the rest) */
  for (const char *c = ":@G`g \x7F\x80\xB9"; *c; c++) {
    for (size_t i = 0; i < 24; i++) {
      char amsg[25], rest[200];
      struct ucp_msg e;
      memset(amsg, '6', 24);
      amsg[24] = 0;
      amsg[i] = *c;
      snprintf(rest, sizeof rest, F51("12345", "4455", "3", "3", "", "%s", "", ""), amsg);
      f = mk("01", -1, rest, &len);
      CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
      free(f);
      ucp_msg_init(&e, 1, 'O', 51);
      e.o5x.mt = UCP_STR("3");
      e.o5x.msg = (struct ucp_slice){ amsg, 24 };
      CU_ASSERT_EQUAL(ucp_encode(&e, (uint8_t *)rest, sizeof rest), UCP_E_INVALID);
    }
  }
  /* Msg without MT; NMsg with a letter; unknown MT -> EC 23 */
  f = mk("01", -1, F51("12345", "4455", "3", "", "", "4869", "", ""), &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  f = mk("01", -1, F51("12345", "4455", "3", "2", "", "12A4", "", ""), &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  f = mk("01", -1, F51("12345", "4455", "3", "2", "", "1234", "", ""), &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), 0);
  free(f);
  f = mk("01", -1, F51("12345", "4455", "3", "5", "", "4869", "", ""), &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_MT);
  CU_ASSERT_EQUAL(ucp_error_ec(UCP_E_MT), 23);
  free(f);
  /* NB that does not count the TMsg octets */
  f = mk("01", -1, F51("12345", "4455", "3", "4", "0024", "C0FF0001", "", ""), &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  f = mk("01", -1, F51("12345", "4455", "3", "4", "0025", "C0FF0001", "", ""), &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), 0);
  free(f);
  f = mk("01", -1, F51("12345", "4455", "3", "4", "", "C0FF000", "", ""), &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  /* XSer: truncated block, odd, bad DCS length; unknown types are skipped */
  f = mk("01", -1, F51("12345", "4455", "3", "3", "", "4869", "", "010605000321"), &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  f = mk("01", -1, F51("12345", "4455", "3", "3", "", "4869", "", "02010"), &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  f = mk("01", -1, F51("12345", "4455", "3", "3", "", "4869", "", "02020808"), &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  f = mk("01", -1, F51("12345", "4455", "3", "3", "", "4869", "", "0C03AABBCC0201F0"), &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), 0);
  CU_ASSERT_EQUAL(m.o5x.v.xdcs, 0xF0);
  free(f);
#undef F51

  /* a control character in a text field */
  f = mk("01", -1, "O/31/123\x01" "5/0539/", &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  /* oversize password: 34 hex digits */
  f = mk("01", -1, "O/60/12345/6/5/1/7365637265747365637265747365637265/////////", &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
}

static void test_field_count(void)
{
  struct ucp_msg m;
  size_t len;
  uint8_t *f, out[128];
  int r;

  /* 31 with one field, and with an extra trailing one (tolerated, as Kannel) */
  f = mk("07", -1, "O/31/12345/", &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  f = mk("07", -1, "O/31/12345/0539/extra/more/", &len);
  r = ucp_decode(f, len, &m);
  CU_ASSERT_EQUAL(r, 0);
  if (r == 0) {
    CU_ASSERT_EQUAL(m.extra, 2);
    ASSERT_SLICE(m.o31.adc, "12345");
    CU_ASSERT_EQUAL(m.o31.v.pid, 539);
    /* re-encoding writes the spec's fields only */
    CU_ASSERT_EQUAL(ucp_encode(&m, out, sizeof out), 29);
    CU_ASSERT_NSTRING_EQUAL(out + 1, "07/00027/O/31/12345/0539/FD", 27);
  }
  free(f);
  /* results: 5x ACK needs three fields, NACK three, 60 ACK two */
  f = mk("00", -1, "R/51/A/x/", &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  f = mk("00", -1, "R/60/N/07/", &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  f = mk("00", -1, "R/60/A/", &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  f = mk("00", -1, "R/60/A//extra/", &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), 0);
  CU_ASSERT_EQUAL(m.extra, 1);
  free(f);
  /* ACK letter other than A/N, EC of one digit, MVP that is not a time */
  f = mk("00", -1, "R/60/X//", &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  f = mk("00", -1, "R/60/AA//", &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  f = mk("00", -1, "R/51/N//Syntax error/", &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  f = mk("00", -1, "R/60/N/7//", &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  f = mk("00", -1, "R/51/A/12//", &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
  /* checksum not preceded by '/' */
  f = mk("07", -1, "O/31/12345/0539", &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_SYNTAX);
  free(f);
}

static void test_unsupported_ot(void)
{
  struct ucp_msg m;
  size_t len;
  uint8_t *f;

  /* answered with EC 03, echoing TRN and OT */
  f = mk("05", -1, "O/30/66677789///1//////", &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_OT);
  CU_ASSERT_EQUAL(ucp_error_ec(UCP_E_OT), 3);
  CU_ASSERT_EQUAL(m.trn, 5);
  CU_ASSERT_EQUAL(m.ot, 30);
  CU_ASSERT_EQUAL(m.o_r, 'O');
  free(f);
  f = mk("05", -1, "R/54/A///", &len);
  CU_ASSERT_EQUAL(ucp_decode(f, len, &m), UCP_E_OT);
  free(f);
}

/* ---- splitter ---- */

static void test_split(void)
{
  static const char two[] = "\x02" "07/00027/O/31/12345/0539/FD\x03" "\x02" "07/00019/R/31/A//72\x03";
  const uint8_t *b = (const uint8_t *)two;
  size_t n = 0, len = sizeof two - 1;
  struct ucp_msg m;

  CU_ASSERT_EQUAL(ucp_split(b, len, 1000, &n), UCP_SPLIT_FRAME);
  CU_ASSERT_EQUAL(n, 29);
  CU_ASSERT_EQUAL(ucp_decode(b, n, &m), 0);
  CU_ASSERT_EQUAL(ucp_split(b + 29, len - 29, 1000, &n), UCP_SPLIT_FRAME);
  CU_ASSERT_EQUAL(n, 21);
  CU_ASSERT_EQUAL(ucp_split(b + 29, 10, 1000, &n), UCP_SPLIT_MORE);
  CU_ASSERT_EQUAL(ucp_split(b, 0, 1000, &n), UCP_SPLIT_MORE);
  /* exactly max_frame long is fine */
  CU_ASSERT_EQUAL(ucp_split(b, len, 29, &n), UCP_SPLIT_FRAME);
  CU_ASSERT_EQUAL(n, 29);
  /* max_frame is taken as at least UCP_FRAME_MIN and at most UCP_FRAME_MAX */
  CU_ASSERT_EQUAL(ucp_split((const uint8_t *)"\x02" "07/00016/O/31/00\x03", 18, 0, &n), UCP_SPLIT_FRAME);
  CU_ASSERT_EQUAL(n, 18);
  CU_ASSERT_EQUAL(ucp_split(b + 29, len - 29, 0, &n), UCP_E_TOO_LONG);
  CU_ASSERT_EQUAL(n, 21);
  CU_ASSERT_EQUAL(ucp_split(b, len, 20, &n), UCP_E_TOO_LONG);
  CU_ASSERT_EQUAL(n, 29);
  CU_ASSERT_EQUAL(ucp_split(b, len, SIZE_MAX, &n), UCP_SPLIT_FRAME);
}

static void test_split_errors(void)
{
  size_t n = 0;
  /* garbage before STX: skip exactly up to it */
  static const char g[] = "xy\r\n\x02" "07/00019/R/31/A//72\x03";
  CU_ASSERT_EQUAL(ucp_split((const uint8_t *)g, sizeof g - 1, 1000, &n), UCP_E_GARBAGE);
  CU_ASSERT_EQUAL(n, 4);
  CU_ASSERT_EQUAL(ucp_split((const uint8_t *)g + 4, sizeof g - 5, 1000, &n), UCP_SPLIT_FRAME);
  /* garbage without any STX: drop it all */
  CU_ASSERT_EQUAL(ucp_split((const uint8_t *)"abc\x03", 4, 1000, &n), UCP_E_GARBAGE);
  CU_ASSERT_EQUAL(n, 4);

  /* no ETX within max_frame: skip to the next STX, or everything */
  {
    uint8_t buf[300];
    memcpy(buf, "\x02" "07/00027/O/31/", 15);
    memset(buf + 15, '1', sizeof buf - 15);
    CU_ASSERT_EQUAL(ucp_split(buf, 99, 100, &n), UCP_SPLIT_MORE);
    CU_ASSERT_EQUAL(ucp_split(buf, 100, 100, &n), UCP_E_TOO_LONG);
    CU_ASSERT_EQUAL(n, 100);
    CU_ASSERT_EQUAL(ucp_split(buf, sizeof buf, 100, &n), UCP_E_TOO_LONG);
    CU_ASSERT_EQUAL(n, sizeof buf);
    buf[250] = UCP_STX;
    CU_ASSERT_EQUAL(ucp_split(buf, sizeof buf, 100, &n), UCP_E_TOO_LONG);
    CU_ASSERT_EQUAL(n, 250);
    /* an ETX past max_frame does not count */
    buf[200] = UCP_ETX;
    CU_ASSERT_EQUAL(ucp_split(buf, sizeof buf, 100, &n), UCP_E_TOO_LONG);
    CU_ASSERT_EQUAL(n, 250);
  }

  /* a new STX before the ETX: the first frame was cut */
  {
    static const char c[] = "\x02" "07/00027/O/31/123" "\x02" "07/00019/R/31/A//72\x03";
    CU_ASSERT_EQUAL(ucp_split((const uint8_t *)c, sizeof c - 1, 1000, &n), UCP_E_TRUNCATED);
    CU_ASSERT_EQUAL(n, 18);
  }

  /* bad headers, caught as soon as the bytes are there */
  {
    static const char h1[] = "\x02" "0A/00019/R/31/A//72\x03" "\x02";
    static const char h2[] = "\x02" "07/00019/X/31/A//72\x03";
    static const char h3[] = "\x02" "07/0019/R/31/A//72\x03";
    static const char h4[] = "\x02" "07/00\x03";
    CU_ASSERT_EQUAL(ucp_split((const uint8_t *)h1, 2, 1000, &n), UCP_SPLIT_MORE);
    CU_ASSERT_EQUAL(ucp_split((const uint8_t *)h1, 3, 1000, &n), UCP_E_HEADER);
    CU_ASSERT_EQUAL(n, 3);
    CU_ASSERT_EQUAL(ucp_split((const uint8_t *)h1, sizeof h1 - 1, 1000, &n), UCP_E_HEADER);
    CU_ASSERT_EQUAL(n, sizeof h1 - 2);
    CU_ASSERT_EQUAL(ucp_split((const uint8_t *)h2, sizeof h2 - 1, 1000, &n), UCP_E_HEADER);
    CU_ASSERT_EQUAL(n, sizeof h2 - 1);
    CU_ASSERT_EQUAL(ucp_split((const uint8_t *)h3, sizeof h3 - 1, 1000, &n), UCP_E_HEADER);
    CU_ASSERT_EQUAL(ucp_split((const uint8_t *)h4, sizeof h4 - 1, 1000, &n), UCP_E_HEADER);
    CU_ASSERT_EQUAL(n, sizeof h4 - 1);
  }
  CU_ASSERT_STRING_EQUAL(ucp_strerror(UCP_E_GARBAGE), "bytes before STX");
  CU_ASSERT_EQUAL(ucp_error_ec(UCP_E_GARBAGE), -1);
  CU_ASSERT_EQUAL(ucp_error_ec(UCP_E_HEADER), -1);
}

/* ---- encoding from scratch ---- */

static void test_encode_build(void)
{
  struct ucp_msg m;
  uint8_t out[512];
  char amsg[400], text[128], sm[40];
  int n;
  size_t len;
  uint8_t *want;

  /* the 53 of doc/ucp.md 7, item 7 */
  ucp_msg_init(&m, 0, 'O', 53);
  CU_ASSERT_EQUAL(m.o5x.v.mt, -1);
  CU_ASSERT_EQUAL(m.o5x.v.xdcs, -1);
  m.o5x.adc = UCP_STR("4455");
  m.o5x.oadc = UCP_STR("31612345678");
  m.o5x.scts = UCP_STR("060824143015");
  m.o5x.dst = UCP_STR("0");
  m.o5x.rsn = UCP_STR("000");
  m.o5x.dscts = UCP_STR("060824143122");
  m.o5x.mt = UCP_STR("3");
  n = ucp_53_text(text, sizeof text, m.o5x.oadc, m.o5x.scts, 0);
  n = ucp_amsg_from_utf8(amsg, sizeof amsg, text, (size_t)n, 0);
  CU_ASSERT(n > 0);
  m.o5x.msg = (struct ucp_slice){ amsg, (size_t)n };
  want = wrap(FRAME7, &len);
  CU_ASSERT_EQUAL(ucp_encode(&m, out, sizeof out), (int)len);
  CU_ASSERT_EQUAL(memcmp(out, want, len), 0);
  /* capacity: one short fails, exact fits */
  CU_ASSERT_EQUAL(ucp_encode(&m, out, len - 1), UCP_E_SPACE);
  CU_ASSERT_EQUAL(ucp_encode(&m, out, len), (int)len);
  free(want);

  /* 51 ACK with AdC:SCTS, and a NACK with the table's text */
  ucp_msg_init(&m, 2, 'R', 51);
  n = ucp_sm_adc_scts(sm, sizeof sm, UCP_STR("31612345678"), UCP_STR("060824143015"));
  CU_ASSERT_EQUAL(n, 24);
  m.r.sm = (struct ucp_slice){ sm, (size_t)n };
  want = wrap(spec_frames[4], &len);
  CU_ASSERT_EQUAL(ucp_encode(&m, out, sizeof out), (int)len);
  CU_ASSERT_EQUAL(memcmp(out, want, len), 0);
  free(want);
  CU_ASSERT_EQUAL(ucp_sm_adc_scts(sm, 10, UCP_STR("31612345678"), UCP_STR("060824143015")), UCP_E_SPACE);

  ucp_msg_init(&m, 3, 'R', 51);
  m.r.ack = 0;
  m.r.ec = ucp_error_ec(UCP_E_SYNTAX);
  m.r.sm = sl(ucp_ec_text(m.r.ec));
  want = wrap(spec_frames[5], &len);
  CU_ASSERT_EQUAL(ucp_encode(&m, out, sizeof out), (int)len);
  CU_ASSERT_EQUAL(memcmp(out, want, len), 0);
  free(want);

  /* login ACK */
  ucp_msg_init(&m, 1, 'R', 60);
  want = wrap(spec_frames[1], &len);
  CU_ASSERT_EQUAL(ucp_encode(&m, out, sizeof out), (int)len);
  CU_ASSERT_EQUAL(memcmp(out, want, len), 0);
  free(want);

  /* the alphanumeric submit of item 12, from text */
  ucp_msg_init(&m, 4, 'O', 51);
  m.o5x.adc = UCP_STR("31612345678");
  n = ucp_oadc_alnum_encode(text, sizeof text, "Gateway", 7);
  m.o5x.oadc = (struct ucp_slice){ text, (size_t)n };
  m.o5x.mt = UCP_STR("3");
  n = ucp_amsg_from_utf8(amsg, sizeof amsg, "Hi", 2, 0);
  m.o5x.msg = (struct ucp_slice){ amsg, (size_t)n };
  m.o5x.otoa = UCP_STR("5039");
  want = wrap(spec_frames[13], &len);
  CU_ASSERT_EQUAL(ucp_encode(&m, out, sizeof out), (int)len);
  CU_ASSERT_EQUAL(memcmp(out, want, len), 0);
  free(want);

  /* UCS2 with TMsg, NB and XSer DCS: item 13 */
  {
    uint8_t ucs2[32];
    char tmsg[64], nb[4], xser[16];
    int k = charset_utf8_to_ucs2(ucs2, sizeof ucs2, "Привет", strlen("Привет"));
    ucp_msg_init(&m, 5, 'O', 51);
    m.o5x.adc = UCP_STR("31612345678");
    m.o5x.oadc = UCP_STR("4455");
    m.o5x.mt = UCP_STR("4");
    n = ucp_tmsg_encode(tmsg, sizeof tmsg, nb, ucs2, (size_t)k);
    CU_ASSERT_EQUAL(n, 24);
    m.o5x.nb = (struct ucp_slice){ nb, 4 };
    m.o5x.msg = (struct ucp_slice){ tmsg, (size_t)n };
    n = ucp_xser_put(xser, sizeof xser, 0x02, (const uint8_t *)"\x08", 1);
    m.o5x.xser = (struct ucp_slice){ xser, (size_t)n };
    want = wrap(spec_frames[14], &len);
    CU_ASSERT_EQUAL(ucp_encode(&m, out, sizeof out), (int)len);
    CU_ASSERT_EQUAL(memcmp(out, want, len), 0);
    free(want);
  }
}

static void test_encode_invalid(void)
{
  struct ucp_msg m;
  uint8_t out[512];
  int n;

  ucp_msg_init(&m, 7, 'O', 31);
  m.o31.adc = UCP_STR("12/45");
  CU_ASSERT_EQUAL(ucp_encode(&m, out, sizeof out), UCP_E_INVALID);
  m.o31.adc = UCP_STR("12\x03" "45");
  CU_ASSERT_EQUAL(ucp_encode(&m, out, sizeof out), UCP_E_INVALID);
  m.o31.adc = UCP_STR("12345");
  m.o31.pid = UCP_STR("05390");
  CU_ASSERT_EQUAL(ucp_encode(&m, out, sizeof out), UCP_E_INVALID);
  m.o31.pid = UCP_STR("0539");
  CU_ASSERT_EQUAL(ucp_encode(&m, out, sizeof out), 29);
  m.trn = 100;
  CU_ASSERT_EQUAL(ucp_encode(&m, out, sizeof out), UCP_E_INVALID);
  m.trn = 7;
  m.o_r = 'X';
  CU_ASSERT_EQUAL(ucp_encode(&m, out, sizeof out), UCP_E_INVALID);

  ucp_msg_init(&m, 7, 'O', 30);
  CU_ASSERT_EQUAL(ucp_encode(&m, out, sizeof out), UCP_E_INVALID);

  /* the per-op rules: MT 4 in an 01, odd AMsg */
  ucp_msg_init(&m, 7, 'O', 1);
  m.o01.mt = UCP_STR("4");
  m.o01.msg = UCP_STR("C0FF");
  CU_ASSERT_EQUAL(ucp_encode(&m, out, sizeof out), UCP_E_INVALID);
  m.o01.mt = UCP_STR("3");
  m.o01.msg = UCP_STR("C0F");
  CU_ASSERT_EQUAL(ucp_encode(&m, out, sizeof out), UCP_E_INVALID);
  m.o01.msg = UCP_STR("48656C6C6F20\xB0\xB1\xB2\xB3\xB4\xB5\xB6\xB7");
  CU_ASSERT_EQUAL(ucp_encode(&m, out, sizeof out), UCP_E_INVALID);
  m.o01.msg = UCP_STR("4869");
  n = ucp_encode(&m, out, sizeof out);
  CU_ASSERT(n > 0);
  if (n > 0) {
    CU_ASSERT_EQUAL(ucp_decode(out, (size_t)n, &m), 0);
    CU_ASSERT_EQUAL(m.o01.v.mt, 3);
  }

  ucp_msg_init(&m, 7, 'R', 51);
  m.r.ack = 0;
  m.r.ec = 100;
  CU_ASSERT_EQUAL(ucp_encode(&m, out, sizeof out), UCP_E_INVALID);
  m.r.ec = 1;
  m.r.sm = UCP_STR("a/b");
  CU_ASSERT_EQUAL(ucp_encode(&m, out, sizeof out), UCP_E_INVALID);
}

/* ---- field helpers ---- */

static void test_hex_amsg(void)
{
  uint8_t oct[8];
  char hex[64], text[64];
  int n;
  CU_ASSERT_EQUAL(ucp_hex_decode(oct, sizeof oct, UCP_STR("48656c6C6F")), 5);
  CU_ASSERT_NSTRING_EQUAL(oct, "Hello", 5);
  CU_ASSERT_EQUAL(ucp_hex_decode(oct, sizeof oct, UCP_STR("486")), UCP_E_INVALID);
  CU_ASSERT_EQUAL(ucp_hex_decode(oct, sizeof oct, UCP_STR("4G")), UCP_E_INVALID);
  CU_ASSERT_EQUAL(ucp_hex_decode(oct, 2, UCP_STR("48656C")), UCP_E_SPACE);
  CU_ASSERT_EQUAL(ucp_hex_encode(hex, 5, (const uint8_t *)"Hel", 3), UCP_E_SPACE);
  CU_ASSERT_EQUAL(ucp_hex_encode(hex, 6, (const uint8_t *)"Hel", 3), 6);

  /* GSM, not ASCII: '@' is 00, '€' is 1B 65, '_' is 11 */
  n = ucp_amsg_from_utf8(hex, sizeof hex, "a@€_", strlen("a@€_"), 0);
  CU_ASSERT_EQUAL(n, 10);
  CU_ASSERT_NSTRING_EQUAL(hex, "61001B6511", 10);
  n = ucp_amsg_to_utf8(text, sizeof text, UCP_STR("61001B6511"));
  CU_ASSERT(n == (int)strlen("a@€_") && memcmp(text, "a@€_", (size_t)n) == 0);
  /* strict mode refuses what GSM lacks; replace mode writes '?' (3F) */
  CU_ASSERT_EQUAL(ucp_amsg_from_utf8(hex, sizeof hex, "ж", strlen("ж"), 0), UCP_E_INVALID);
  CU_ASSERT_EQUAL(ucp_amsg_from_utf8(hex, sizeof hex, "ж", strlen("ж"), 1), 2);
  CU_ASSERT_NSTRING_EQUAL(hex, "3F", 2);
  CU_ASSERT_EQUAL(ucp_amsg_from_utf8(hex, 3, "Hi", 2, 0), UCP_E_SPACE);
  CU_ASSERT_EQUAL(ucp_amsg_to_utf8(text, sizeof text, UCP_STR("80")), UCP_E_INVALID);
  CU_ASSERT_EQUAL(ucp_amsg_to_utf8(text, sizeof text, UCP_STR("616")), UCP_E_INVALID);
  {
    /* TMsg: NB = 8 bits per octet, at most 701 octets */
    static uint8_t big[702];
    static char tmsg[1500];
    char nb[4];
    CU_ASSERT_EQUAL(ucp_tmsg_encode(tmsg, sizeof tmsg, nb, big, 701), 1402);
    CU_ASSERT_NSTRING_EQUAL(nb, "5608", 4);
    CU_ASSERT_EQUAL(ucp_tmsg_encode(tmsg, sizeof tmsg, nb, big, 702), UCP_E_INVALID);
    CU_ASSERT_EQUAL(ucp_tmsg_encode(tmsg, 3, nb, big, 2), UCP_E_SPACE);
  }
  CU_ASSERT_EQUAL(ucp_amsg_to_utf8(text, 2, UCP_STR("616263")), UCP_E_SPACE);
}

static void test_oadc_alnum(void)
{
  static const struct { const char *text, *hex; } v[] = {
    { "orange.pl", "106F79D87D2EBBE06C" },
    { "Gateway", "0DC730BD7C0FE701" },
    { "Harness", "0DC8B0DC5D9ECF01" },
  };
  char hex[32], text[32];
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    size_t tl = strlen(v[i].text), hl = strlen(v[i].hex);
    CU_ASSERT_EQUAL(ucp_oadc_alnum_encode(hex, sizeof hex, v[i].text, tl), (int)hl);
    CU_ASSERT_NSTRING_EQUAL(hex, v[i].hex, hl);
    CU_ASSERT_EQUAL(ucp_oadc_alnum_decode(text, sizeof text, sl(v[i].hex)), (int)tl);
    CU_ASSERT_NSTRING_EQUAL(text, v[i].text, tl);
  }
  /* 11 characters fit (22 hex digits), 12 do not; nor do non-GSM ones */
  CU_ASSERT_EQUAL(ucp_oadc_alnum_encode(hex, sizeof hex, "ABCDEFGHIJK", 11), 22);
  CU_ASSERT_EQUAL(ucp_oadc_alnum_decode(text, sizeof text, (struct ucp_slice){ hex, 22 }), 11);
  CU_ASSERT_NSTRING_EQUAL(text, "ABCDEFGHIJK", 11);
  CU_ASSERT_EQUAL(ucp_oadc_alnum_encode(hex, sizeof hex, "ABCDEFGHIJKL", 12), UCP_E_INVALID);
  CU_ASSERT_EQUAL(ucp_oadc_alnum_encode(hex, sizeof hex, "ж", strlen("ж")), UCP_E_INVALID);
  CU_ASSERT_EQUAL(ucp_oadc_alnum_encode(hex, sizeof hex, "", 0), UCP_E_INVALID);
  CU_ASSERT_EQUAL(ucp_oadc_alnum_encode(hex, 15, "Gateway", 7), UCP_E_SPACE);
  /* length prefix promising more septets than the octets hold */
  CU_ASSERT_EQUAL(ucp_oadc_alnum_decode(text, sizeof text, UCP_STR("10C730")), UCP_E_INVALID);
  CU_ASSERT_EQUAL(ucp_oadc_alnum_decode(text, sizeof text, UCP_STR("")), UCP_E_INVALID);
  CU_ASSERT_EQUAL(ucp_oadc_alnum_decode(text, sizeof text, UCP_STR("FFC730BD7C0FE701")), UCP_E_INVALID);
  CU_ASSERT_EQUAL(ucp_oadc_alnum_decode(text, 3, UCP_STR("0DC730BD7C0FE701")), UCP_E_SPACE);
}

static void test_xser(void)
{
  struct ucp_slice x = UCP_STR("01070605040B8423F00C02AABB020108");
  struct ucp_xser_block b;
  char buf[32];
  int n;
  CU_ASSERT_EQUAL(ucp_xser_next(&x, &b), 1);
  CU_ASSERT_EQUAL(b.type, 0x01);
  ASSERT_SLICE(b.data, "0605040B8423F0");
  CU_ASSERT_EQUAL(ucp_xser_next(&x, &b), 1);
  CU_ASSERT_EQUAL(b.type, 0x0C);
  ASSERT_SLICE(b.data, "AABB");
  CU_ASSERT_EQUAL(ucp_xser_next(&x, &b), 1);
  CU_ASSERT_EQUAL(b.type, 0x02);
  ASSERT_SLICE(b.data, "08");
  CU_ASSERT_EQUAL(ucp_xser_next(&x, &b), 0);
  x = UCP_STR("0203AABB");
  CU_ASSERT_EQUAL(ucp_xser_next(&x, &b), UCP_E_SYNTAX);
  x = UCP_STR("020");
  CU_ASSERT_EQUAL(ucp_xser_next(&x, &b), UCP_E_SYNTAX);
  x = UCP_STR("0Z0108");
  CU_ASSERT_EQUAL(ucp_xser_next(&x, &b), UCP_E_SYNTAX);
  x = UCP_STR("02010Z");
  CU_ASSERT_EQUAL(ucp_xser_next(&x, &b), UCP_E_SYNTAX);

  n = ucp_xser_put(buf, sizeof buf, 0x01, (const uint8_t *)"\x05\x00\x03\x2A\x02\x01", 6);
  CU_ASSERT_EQUAL(n, 16);
  n += ucp_xser_put(buf + n, sizeof buf - (size_t)n, 0x02, (const uint8_t *)"\xF0", 1);
  CU_ASSERT_EQUAL(n, 22);
  CU_ASSERT_NSTRING_EQUAL(buf, "01060500032A02010201F0", 22);
  CU_ASSERT_EQUAL(ucp_xser_put(buf, 5, 0x02, (const uint8_t *)"\xF0", 1), UCP_E_SPACE);
  CU_ASSERT_EQUAL(ucp_xser_put(buf, 3, 0x02, (const uint8_t *)"", 0), UCP_E_SPACE);
  CU_ASSERT_EQUAL(ucp_xser_put(buf, sizeof buf, 0x100, (const uint8_t *)"", 0), UCP_E_INVALID);
}

static void test_notify(void)
{
  /* NT bits 1 DN (Dst 0), 2 ND (Dst 2), 4 BN (Dst 1) */
  static const struct { int nrq, nt, d0, d1, d2; } t[] = {
    { 1, 1, 1, 0, 0 }, { 1, 2, 0, 0, 1 }, { 1, 4, 0, 1, 0 }, { 1, 3, 1, 0, 1 },
    { 1, 7, 1, 1, 1 }, { 1, 0, 1, 0, 1 }, { 1, -1, 1, 0, 1 }, { 0, 7, 0, 0, 0 },
    { -1, 7, 0, 0, 0 }, { 1, 6, 0, 1, 1 },
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    CU_ASSERT_EQUAL(ucp_notify_wanted(t[i].nrq, t[i].nt, 0), t[i].d0);
    CU_ASSERT_EQUAL(ucp_notify_wanted(t[i].nrq, t[i].nt, 1), t[i].d1);
    CU_ASSERT_EQUAL(ucp_notify_wanted(t[i].nrq, t[i].nt, 2), t[i].d2);
  }
  CU_ASSERT_EQUAL(ucp_notify_wanted(1, 7, 3), 0);
}

static void test_sm_and_time(void)
{
  struct ucp_slice adc, scts;
  char buf[16];
  time_t t;
  CU_ASSERT_EQUAL(ucp_sm_adc_scts_parse(UCP_STR("31612345678:060824143015"), &adc, &scts), 0);
  ASSERT_SLICE(adc, "31612345678");
  CU_ASSERT_EQUAL(ucp_sm_adc_scts_parse(UCP_STR("060824143015"), &adc, &scts), UCP_E_SYNTAX);
  CU_ASSERT_EQUAL(ucp_sm_adc_scts_parse(UCP_STR("123:06082414301"), &adc, &scts), UCP_E_SYNTAX);
  CU_ASSERT_EQUAL(ucp_sm_adc_scts_parse(UCP_STR("a:b:060824143015"), &adc, &scts), 0);
  ASSERT_SLICE(adc, "a:b");

  CU_ASSERT_EQUAL(ucp_time_parse(UCP_STR("060824143015"), &t), 0);
  CU_ASSERT_EQUAL(t, (time_t)1722954615); /* 2024-08-06 14:30:15 UTC */
  CU_ASSERT_EQUAL(ucp_time_format(buf, 12, t), 12);
  CU_ASSERT_NSTRING_EQUAL(buf, "060824143015", 12);
  CU_ASSERT_EQUAL(ucp_time_format(buf, 10, t), 10);
  CU_ASSERT_NSTRING_EQUAL(buf, "0608241430", 10);
  CU_ASSERT_EQUAL(ucp_time_parse(UCP_STR("0901961610"), &t), 0);
  CU_ASSERT_EQUAL(t, (time_t)821203800); /* 1996-01-09 16:10 UTC */
  CU_ASSERT_EQUAL(ucp_time_parse(UCP_STR("3002241200"), &t), UCP_E_SYNTAX);
  CU_ASSERT_EQUAL(ucp_time_parse(UCP_STR("2902241200"), &t), 0);
  CU_ASSERT_EQUAL(ucp_time_parse(UCP_STR("0013241200"), &t), UCP_E_SYNTAX);
  CU_ASSERT_EQUAL(ucp_time_parse(UCP_STR("0101242400"), &t), UCP_E_SYNTAX);
  CU_ASSERT_EQUAL(ucp_time_parse(UCP_STR("010124120"), &t), UCP_E_SYNTAX);
  CU_ASSERT_EQUAL(ucp_time_parse(UCP_STR("01012412000A"), &t), UCP_E_SYNTAX);
  CU_ASSERT_EQUAL(ucp_time_format(buf, 11, 0), UCP_E_INVALID);
  CU_ASSERT_EQUAL(ucp_time_format(buf, 12, (time_t)3155760000), UCP_E_INVALID); /* 2070 */
}

static void test_names_and_codes(void)
{
  CU_ASSERT_EQUAL(ucp_field_count(51), 33);
  CU_ASSERT_EQUAL(ucp_field_count(53), 33);
  CU_ASSERT_EQUAL(ucp_field_count(60), 12);
  CU_ASSERT_EQUAL(ucp_field_count(61), 12);
  CU_ASSERT_EQUAL(ucp_field_count(31), 2);
  CU_ASSERT_EQUAL(ucp_field_count(1), 5);
  CU_ASSERT_EQUAL(ucp_field_count(30), 0);
  CU_ASSERT_STRING_EQUAL(ucp_field_name(52, UCP_5X_ADC), "AdC");
  CU_ASSERT_STRING_EQUAL(ucp_field_name(51, UCP_5X_XSER), "XSer");
  CU_ASSERT_STRING_EQUAL(ucp_field_name(51, UCP_5X_RES5), "RES5");
  CU_ASSERT_STRING_EQUAL(ucp_field_name(60, UCP_60_OPID), "OPID");
  CU_ASSERT_STRING_EQUAL(ucp_field_name(61, UCP_61_RES2), "RES2");
  CU_ASSERT_STRING_EQUAL(ucp_field_name(1, UCP_01_MSG), "Msg");
  CU_ASSERT_PTR_NULL(ucp_field_name(31, 2));
  CU_ASSERT_PTR_NULL(ucp_field_name(99, 0));
  CU_ASSERT_EQUAL(UCP_5X_NFIELDS, 33);
  CU_ASSERT_EQUAL(UCP_5X_DST, 15);
  CU_ASSERT_EQUAL(UCP_5X_MSG, 20);
  CU_ASSERT_EQUAL(UCP_5X_OTOA, 28);

  CU_ASSERT_STRING_EQUAL(ucp_ec_text(1), "Checksum error");
  CU_ASSERT_STRING_EQUAL(ucp_ec_text(3), "Operation not supported by system");
  CU_ASSERT_STRING_EQUAL(ucp_ec_text(38), "Message forwarded");
  CU_ASSERT_STRING_EQUAL(ucp_ec_text(28), "Unknown error");
  CU_ASSERT_STRING_EQUAL(ucp_ec_text(-1), "Unknown error");
  CU_ASSERT_STRING_EQUAL(ucp_ec_text(99), "Unknown error");
  CU_ASSERT_EQUAL(ucp_error_ec(UCP_E_SPACE), -1);
  CU_ASSERT_STRING_EQUAL(ucp_strerror(UCP_E_CHECKSUM), "checksum mismatch");
  for (int e = UCP_E_INVALID; e <= 0; e++)
    CU_ASSERT_STRING_NOT_EQUAL(ucp_strerror(e), "unknown error");
  CU_ASSERT_STRING_EQUAL(ucp_strerror(-99), "unknown error");
}

void suite_ucp(void);
void suite_ucp(void)
{
  static const struct test_case cases[] = {
    { "spec frames decode and re-encode", test_spec_frames_roundtrip },
    { "spec login 60", test_spec_login },
    { "spec submit 51 and results", test_spec_submit },
    { "spec notifications 53", test_spec_notifications },
    { "spec alert 31, MO 52", test_spec_alert_mo },
    { "spec alphanumeric, UCS2, UDH", test_spec_alnum_ucs2_udh },
    { "Kannel emi2 vectors", test_kannel_vectors },
    { "bad checksum", test_bad_checksum },
    { "bad header", test_bad_header },
    { "truncated frames", test_truncated },
    { "bad fields", test_bad_fields },
    { "field count", test_field_count },
    { "unsupported OT", test_unsupported_ot },
    { "split", test_split },
    { "split errors", test_split_errors },
    { "encode from scratch", test_encode_build },
    { "encode invalid", test_encode_invalid },
    { "hex and AMsg", test_hex_amsg },
    { "alphanumeric OAdC", test_oadc_alnum },
    { "XSer", test_xser },
    { "notification wanted", test_notify },
    { "SM and time stamps", test_sm_and_time },
    { "names and codes", test_names_and_codes },
    { NULL, NULL },
  };
  test_add_suite("ucp", cases);
}
