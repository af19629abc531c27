/* ucp_proto.c - the UCP/EMI adapter: frames of ucp_codec <-> the neutral PDUs
 * of proto.h, the EC <-> status mapping, and the SCTS allocator.
 *
 * The conventions (OT in raw_status, addresses, text, DCS, op 53) are stated
 * once, in ucp_proto.h. Pure code: no clock, no log, no allocation per PDU.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bigmem.h"
#include "charset.h"
#include "hexutil.h"
#include "sms_text.h"
#include "ucp_codec.h"
#include "ucp_proto.h"

/* ---- small helpers ---- */

static struct ucp_slice cstr(const char *s)
{
  return (struct ucp_slice){ s, strlen(s) };
}

/* s as a NUL-terminated string in dst[0..cap), cut to fit. */
static void copy_slice(char *dst, size_t cap, struct ucp_slice s)
{
  size_t n = s.len < cap - 1 ? s.len : cap - 1;
  if (n)
    memcpy(dst, s.p, n);
  dst[n] = '\0';
}

/* Digits, '+' allowed before them: an address UCP carries as a number. */
static bool digits_only(const char *s)
{
  if (*s == '+')
    s++;
  for (; *s; s++)
    if (*s < '0' || *s > '9')
      return false;
  return true;
}

/* A one-character field holding digit d (0-9). */
static struct ucp_slice digit(unsigned d)
{
  static const char digits[] = "0123456789";
  return (struct ucp_slice){ digits + d, 1 };
}

/* v as width zero-padded digits in dst (v < 10^width). */
static struct ucp_slice put_number(char *dst, unsigned v, unsigned width)
{
  for (unsigned i = width; i-- > 0; v /= 10)
    dst[i] = (char)('0' + v % 10);
  return (struct ucp_slice){ dst, width };
}

/* A time stamp field of digits (10 or 12) for Unix time t. */
static int put_time(char *dst, size_t digits, int64_t t, struct ucp_slice *field)
{
  if (ucp_time_format(dst, digits, (time_t)t) < 0)
    return UCP_E_INVALID;
  *field = (struct ucp_slice){ dst, digits };
  return 0;
}

/* A time stamp field as Unix seconds; an empty field leaves *t alone. */
static int get_time(struct ucp_slice s, int64_t *t)
{
  time_t v;
  if (!s.len)
    return 0;
  if (ucp_time_parse(s, &v) < 0)
    return UCP_E_SYNTAX;
  *t = (int64_t)v;
  return 0;
}

/* ---- EC <-> status ---- */

int ucp_proto_ec(enum proto_status s)
{
  switch (s) {
  case PROTO_E_CHECKSUM: return 1;
  case PROTO_E_SYNTAX: return 2;
  case PROTO_E_CMD_LEN: return 2;
  case PROTO_E_WINDOW: return 2;   /* UCP's login asks for no window */
  case PROTO_E_UNSUPPORTED: return 3;
  case PROTO_E_BIND_STATE: return 4;
  case PROTO_E_ALREADY_BOUND: return 4;
  case PROTO_E_SOURCE: return 4;   /* "operation not allowed": UCP has no code for the originator */
  case PROTO_E_CREDIT: return 4;   /* likewise for credit used up */
  case PROTO_E_ADDRESS: return 6;
  case PROTO_E_AUTH:
  case PROTO_E_AUTH_ACCOUNT:
  case PROTO_E_AUTH_PASSWORD: return 7;
  case PROTO_E_TOO_LONG: return 24;
  case PROTO_E_TEMPORARY: return UCP_EC_SYSTEM;
  case PROTO_E_THROTTLED: return UCP_EC_THROTTLED;
  case PROTO_E_QUEUE_FULL: return UCP_EC_QUEUE_FULL;
  case PROTO_OK: /* not an error: no EC of its own */
  case PROTO_E_NO_MESSAGE:   /* UCP has no query or cancel of a submit */
  case PROTO_E_MESSAGE_STATE:
  case PROTO_E_PERMANENT: return UCP_EC_FAILED;
  }
  return UCP_EC_FAILED;
}

enum proto_status ucp_proto_status(int ec)
{
  switch (ec) {
  case 1: return PROTO_E_CHECKSUM;
  case 2: return PROTO_E_SYNTAX;
  case 3: case 23: return PROTO_E_UNSUPPORTED;
  case 4: return PROTO_E_BIND_STATE;
  case 6: return PROTO_E_ADDRESS;
  case 7: return PROTO_E_AUTH;
  case 24: return PROTO_E_TOO_LONG;
  case 50: case UCP_EC_SYSTEM: return PROTO_E_TEMPORARY;
  case UCP_EC_THROTTLED: return PROTO_E_THROTTLED;
  case UCP_EC_QUEUE_FULL: return PROTO_E_QUEUE_FULL;
  default: return PROTO_E_PERMANENT;
  }
}

/* The SM of a NACK with this EC when the pdu brings no text of its own. */
static const char *ec_text(int ec)
{
  switch (ec) {
  case UCP_EC_THROTTLED: return "Throttling error";
  case UCP_EC_QUEUE_FULL: return "Message queue full";
  case UCP_EC_FAILED: return "Operation not successful";
  case UCP_EC_SYSTEM: return "System error";
  default: return ucp_ec_text(ec);
  }
}

/* ---- split ---- */

static int ucp_proto_split(const uint8_t *buf, size_t len, const struct proto_options *opt,
                           size_t *skip)
{
  size_t n = 0;
  int r = ucp_split(buf, len, opt->max_frame ? opt->max_frame : UCP_PROTO_MAX_FRAME, &n);
  if (r == UCP_SPLIT_FRAME)
    return (int)n;
  if (r < 0)
    *skip = n; /* always >0: the splitter drops up to the next STX */
  return r;
}

/* ---- decode ---- */

/* Where a decode puts octets in the caller's scratch buffer. A UDH comes
 * from one XSer block (at most 255 octets); the staging area holds what
 * still needs a conversion (TMsg packed septets: 701 octets; Latin-1 AMsg
 * as UTF-8: 640 bytes); the payload follows (at most 801 septets). */
enum {
  SCRATCH_UDH = 0,
  SCRATCH_STAGE = 256,
  SCRATCH_DATA = SCRATCH_STAGE + 1024,
  SCRATCH_DATA_LEN = 1024
};
_Static_assert(SCRATCH_DATA + SCRATCH_DATA_LEN <= PROTO_SCRATCH_LEN, "scratch layout");

/* An AdC or OAdC of digits ('+' before them: international), cut to fit. */
static void numeric_addr(struct msg_addr *a, struct ucp_slice s, uint8_t ton)
{
  msg_addr_set(a, s.p ? s.p : "", s.len < sizeof a->addr - 1 ? s.len : sizeof a->addr - 1, ton, 1);
}

static int decode_oadc(struct msg_addr *a, struct ucp_slice oadc, int otoa)
{
  int n;
  if (otoa != 5039) {
    numeric_addr(a, oadc, otoa == 1139 ? MSG_TON_INTERNATIONAL : MSG_TON_UNKNOWN);
    return 0;
  }
  n = ucp_oadc_alnum_decode(a->addr, sizeof a->addr - 1, oadc);
  if (n < 0)
    return UCP_E_SYNTAX;
  a->addr[n] = '\0';
  a->ton = MSG_TON_ALPHANUMERIC;
  a->npi = 0;
  return 0;
}

/* AMsg octets read as Latin-1, converted in place at data: GSM-7 when
 * every character has a septet, else UCS2. Returns the length. */
static int latin1_payload(uint8_t *data, size_t len, uint8_t *stage, uint8_t *coding)
{
  char *utf8 = (char *)stage;
  int u = charset_latin1_to_utf8(utf8, SCRATCH_DATA - SCRATCH_STAGE, data, len), n;
  if (u < 0)
    return UCP_E_SYNTAX;
  n = charset_utf8_to_gsm(data, SCRATCH_DATA_LEN, utf8, (size_t)u, 0);
  *coding = SMS_TEXT_GSM7;
  if (n == CHARSET_E_UNREPRESENTABLE) {
    n = charset_utf8_to_ucs2(data, SCRATCH_DATA_LEN, utf8, (size_t)u);
    *coding = SMS_TEXT_UCS2;
  }
  return n < 0 ? UCP_E_SYNTAX : n;
}

/* The message text (MT, NB, Msg), the UDH (XSer 01 hex) and the DCS (XSer
 * 02, else the class in MCLs) into msg, its octets into scratch. */
static int decode_payload(struct msg *msg, int mt, int nb, struct ucp_slice text,
                          struct ucp_slice udh_hex, int xdcs, int mcls, uint8_t *scratch,
                          const struct proto_options *opt)
{
  uint8_t *udh = scratch + SCRATCH_UDH, *stage = scratch + SCRATCH_STAGE;
  uint8_t *data = scratch + SCRATCH_DATA, coding = SMS_TEXT_GSM7;
  int n = 0, dcs;

  if (udh_hex.len) {
    n = ucp_hex_decode(udh, SCRATCH_STAGE, udh_hex);
    if (n < 1 || udh[0] != n - 1) /* UDHL counts the rest */
      return UCP_E_SYNTAX;
    msg->udh = udh;
    msg->udh_len = (uint16_t)n;
  }

  switch (mt) {
  case 2: /* NMsg: digits, the same in GSM-7 and IRA */
    n = (int)text.len;
    memcpy(data, text.p, text.len);
    break;
  case 3:
    n = ucp_hex_decode(data, SCRATCH_DATA_LEN, text);
    if (n < 0)
      return UCP_E_SYNTAX;
    if (opt->latin1_text) {
      n = latin1_payload(data, (size_t)n, stage, &coding);
    } else {
      for (int i = 0; i < n; i++)
        if (data[i] > 0x7F) /* not a septet: Latin-1 text from a peer set up as GSM */
          return UCP_E_SYNTAX;
    }
    break;
  case 4:
    coding = sms_dcs_coding(xdcs >= 0 ? (uint8_t)xdcs : SMS_TEXT_8BIT);
    if (coding != SMS_TEXT_GSM7) {
      n = ucp_hex_decode(data, SCRATCH_DATA_LEN, text);
    } else {
      /* Packed septets; NB (else every bit of the octets) says how many. */
      n = ucp_hex_decode(stage, SCRATCH_DATA - SCRATCH_STAGE, text);
      if (n >= 0)
        n = charset_gsm_unpack(data, SCRATCH_DATA_LEN, stage, (size_t)n,
                               (size_t)(nb >= 0 ? nb : 8 * n) / 7, 0);
    }
    break;
  default: /* no MT: no text */
    break;
  }
  if (n < 0)
    return UCP_E_SYNTAX;
  msg->data = data;
  msg->data_len = (uint32_t)n;
  msg->coding = coding;
  if (xdcs >= 0)
    dcs = xdcs;
  else if (mcls >= 0 && mcls <= 3)
    dcs = 0x10 | coding | mcls;
  else
    dcs = coding;
  msg->dcs = sms_dcs_agree(coding, (uint8_t)dcs);
  return 0;
}

static int decode_01(struct proto_pdu *pdu, const struct ucp_op01 *o, uint8_t *scratch,
                     const struct proto_options *opt)
{
  pdu->op = PROTO_OP_SUBMIT;
  numeric_addr(&pdu->msg.dst, o->adc, MSG_TON_UNKNOWN);
  numeric_addr(&pdu->msg.src, o->oadc, MSG_TON_UNKNOWN);
  return decode_payload(&pdu->msg, o->v.mt, -1, o->msg, (struct ucp_slice){ NULL, 0 }, -1, -1,
                        scratch, opt);
}

static int decode_receipt(struct proto_pdu *pdu, const struct ucp_op5x *o, int64_t scts)
{
  static const uint8_t state_of_dst[3] = {
    MSG_STATE_DELIVERED, MSG_STATE_ENROUTE, MSG_STATE_UNDELIVERABLE,
  };
  struct msg_receipt *rc = &pdu->receipt;
  int n;

  /* Without SCTS or a known Dst the notification matches nothing. */
  if (!o->scts.len || o->v.dst < 0 || o->v.dst > 2)
    return UCP_E_SYNTAX;
  n = ucp_sm_adc_scts(rc->id, sizeof rc->id - 1, o->oadc, o->scts);
  if (n < 0)
    return UCP_E_SYNTAX;
  rc->id[n] = '\0';
  pdu->is_receipt = true;
  rc->state = state_of_dst[o->v.dst];
  rc->err = (uint16_t)(o->v.rsn < 0 ? 0 : o->v.rsn);
  rc->src = pdu->msg.dst; /* AdC: the sender of the original message */
  rc->dst = pdu->msg.src; /* OAdC: its recipient */
  rc->submit_time = scts;
  return get_time(o->dscts, &rc->done_time);
}

static int decode_5x(struct proto_pdu *pdu, int ot, const struct ucp_op5x *o, uint8_t *scratch,
                     const struct proto_options *opt)
{
  struct msg *msg = &pdu->msg;
  int64_t scts = 0;
  int r;

  pdu->op = ot == 51 ? PROTO_OP_SUBMIT : PROTO_OP_DELIVER;
  numeric_addr(&msg->dst, o->adc, MSG_TON_UNKNOWN);
  r = decode_oadc(&msg->src, o->oadc, o->v.otoa);
  if (r)
    return r;
  r = decode_payload(msg, o->v.mt, o->v.nb, o->msg, o->v.udh, o->v.xdcs, o->v.mcls, scratch, opt);
  if (r)
    return r;

  if (ucp_notify_wanted(o->v.nrq, o->v.nt, 0))
    msg->dlr_mask |= MSG_DLR_DELIVERED;
  if (ucp_notify_wanted(o->v.nrq, o->v.nt, 1))
    msg->dlr_mask |= MSG_DLR_BUFFERED;
  if (ucp_notify_wanted(o->v.nrq, o->v.nt, 2))
    msg->dlr_mask |= MSG_DLR_FAILED;
  if (o->v.rpid > 255)
    return UCP_E_SYNTAX;
  msg->pid = (uint8_t)(o->v.rpid < 0 ? 0 : o->v.rpid);
  msg->priority = o->v.pr > 0;
  msg->mms = o->v.mms > 0;
  if (get_time(o->vp, &msg->validity) || get_time(o->scts, &scts))
    return UCP_E_SYNTAX;
  if (o->v.dd != 0 && get_time(o->ddt, &msg->deferred))
    return UCP_E_SYNTAX;
  msg->received_ms = scts * 1000;
  return ot == 53 ? decode_receipt(pdu, o, scts) : 0;
}

static int decode_60(struct proto_pdu *pdu, const struct ucp_op60 *o)
{
  int n;
  if (o->v.styp != 1) { /* change password, provisioning: not a login */
    pdu->op = PROTO_OP_OTHER;
    return 0;
  }
  pdu->op = PROTO_OP_BIND;
  pdu->bind_mode = PROTO_BIND_TRX;
  copy_slice(pdu->user, sizeof pdu->user, o->oadc);
  n = ucp_hex_decode((uint8_t *)pdu->password, sizeof pdu->password - 1, o->pwd);
  /* A NUL would cut the password short when it is compared as a string. */
  if (n < 0 || memchr(pdu->password, '\0', (size_t)n))
    return UCP_E_SYNTAX;
  pdu->password[n] = '\0';
  return 0;
}

static int decode_result(struct proto_pdu *pdu, int ot, const struct ucp_result *res)
{
  switch (ot) {
  case 1: case 51: pdu->op = PROTO_OP_SUBMIT_RESP; break;
  case 52: case 53: pdu->op = PROTO_OP_DELIVER_RESP; pdu->is_receipt = ot == 53; break;
  case 60: pdu->op = PROTO_OP_BIND_RESP; pdu->bind_mode = PROTO_BIND_TRX; break;
  case 31: pdu->op = PROTO_OP_KEEPALIVE_RESP; break;
  default: return UCP_E_OT; /* an answer to an operation we never send */
  }
  pdu->raw_status = res->ack ? 0 : (uint32_t)res->ec;
  pdu->status = res->ack ? PROTO_OK : ucp_proto_status(res->ec);
  copy_slice(pdu->text, sizeof pdu->text, res->sm);
  if (pdu->op == PROTO_OP_SUBMIT_RESP && res->ack)
    copy_slice(pdu->msgid, sizeof pdu->msgid, res->sm);
  return 0;
}

/* The response that answers a request of type ot. */
static enum proto_op answer_op(int ot)
{
  switch (ot) {
  case 1: case 51: return PROTO_OP_SUBMIT_RESP;
  case 52: case 53: return PROTO_OP_DELIVER_RESP;
  case 60: return PROTO_OP_BIND_RESP;
  case 31: return PROTO_OP_KEEPALIVE_RESP;
  default: return PROTO_OP_NACK;
  }
}

static int ucp_proto_decode(struct proto_pdu *pdu, const uint8_t *frame, size_t len,
                            uint8_t *scratch, const struct proto_options *opt)
{
  struct ucp_msg m;
  int r = ucp_decode(frame, len, &m);

  memset(pdu, 0, sizeof *pdu);
  if (m.trn < 0 || m.ot < 0 || !m.o_r)
    return r; /* PROTO_OP_NONE: nobody to answer (ucp_decode failed early) */
  pdu->ref = (uint32_t)m.trn;
  if (m.o_r == 'R') {
    r = r ? r : decode_result(pdu, m.ot, &m.r);
    if (r)
      pdu->op = PROTO_OP_NONE; /* results are never answered */
    return r;
  }

  pdu->raw_status = (uint32_t)m.ot;
  if (!r) {
    switch (m.ot) {
    case 1: r = decode_01(pdu, &m.o01, scratch, opt); break;
    case 31:
      pdu->op = PROTO_OP_KEEPALIVE;
      copy_slice(pdu->user, sizeof pdu->user, m.o31.adc);
      break;
    case 51: case 52: case 53: r = decode_5x(pdu, m.ot, &m.o5x, scratch, opt); break;
    case 60: r = decode_60(pdu, &m.o60); break;
    default: pdu->op = PROTO_OP_OTHER; break; /* 61 */
    }
  }
  if (r) {
    pdu->op = answer_op(m.ot);
    pdu->status = ucp_proto_status(ucp_error_ec(r));
  }
  return r;
}

/* ---- encode ---- */

/* The longest frame ucp_encode can write: a 5x operation with every field
 * at its limit (results and the other operations are shorter). */
#define FIELD_ROOM(ID, m, name, kind, min, max) + (max) + 1
#define UCP_F5X FIELD_ROOM
enum {
  FRAME_ROOM = 1 + 14 + 2 + 1
#include "ucp_fields.def"
};

enum {
  TMSG_OCTETS = 701,  /* TMsg holds 1403 hex digits */
  AMSG_OCTETS = 320,  /* AMsg holds 640 */
  XSER_CHARS = 1024
};

/* Storage for the fields an encode builds; the ucp_msg slices point here. */
struct enc_buf {
  char msg[2 * TMSG_OCTETS];       /* AMsg / TMsg hex */
  char xser[XSER_CHARS];
  uint8_t octets[2 * AMSG_OCTETS]; /* GSM-7 text as Latin-1 or UCS2 */
  char utf8[3 * AMSG_OCTETS];
  char oadc[22];
  char nb[4], vp[10], ddt[10], scts[12], dscts[12], rsn[3], rpid[4];
  char pwd[2 * MSG_USER_LEN];
  char sm[PROTO_TEXT_LEN];
};

/* GSM-7 text for a peer that reads AMsg as Latin-1: Latin-1 octets when
 * every character has one, else UCS2 (and *coding says so). */
static int gsm_as_latin1(const struct msg *msg, struct enc_buf *b, uint8_t *coding)
{
  int u = charset_gsm_to_utf8(b->utf8, sizeof b->utf8, msg->data, msg->data_len), n;
  if (u < 0)
    return UCP_E_INVALID;
  n = charset_utf8_to_latin1(b->octets, sizeof b->octets, b->utf8, (size_t)u, 0);
  if (n == CHARSET_E_UNREPRESENTABLE) {
    n = charset_utf8_to_ucs2(b->octets, sizeof b->octets, b->utf8, (size_t)u);
    *coding = SMS_TEXT_UCS2;
  }
  return n < 0 ? UCP_E_INVALID : n;
}

/* MT, NB, Msg, MCLs and XSer (UDH, DCS) of a 51 or 52. */
static int encode_payload(struct ucp_op5x *o, const struct msg *msg, struct enc_buf *b,
                          const struct proto_options *opt)
{
  const uint8_t *data = msg->data;
  size_t len = msg->data_len, pos = 0;
  uint8_t coding = msg->coding, dcs;
  bool xser_dcs;
  int n;

  if (coding != SMS_TEXT_GSM7 && coding != SMS_TEXT_8BIT && coding != SMS_TEXT_UCS2)
    return UCP_E_INVALID;
  if (coding == SMS_TEXT_GSM7 && opt->latin1_text) {
    n = gsm_as_latin1(msg, b, &coding);
    if (n < 0)
      return n;
    data = b->octets;
    len = (size_t)n;
  }
  dcs = sms_dcs_agree(coding, msg->dcs);
  xser_dcs = dcs != 0x00 && dcs != 0x04; /* as Kannel, which omits the two plain ones */

  if (coding == SMS_TEXT_GSM7) { /* septets, or their Latin-1 */
    o->mt = digit(3);
    n = ucp_hex_encode(b->msg, 2 * AMSG_OCTETS, data, len);
  } else {
    o->mt = digit(4);
    n = ucp_tmsg_encode(b->msg, sizeof b->msg, b->nb, data, len);
    o->nb = (struct ucp_slice){ b->nb, 4 };
  }
  if (n < 0)
    return UCP_E_INVALID;
  o->msg = (struct ucp_slice){ b->msg, (size_t)n };

  if (msg->udh_len) {
    n = ucp_xser_put(b->xser, sizeof b->xser, 0x01, msg->udh, msg->udh_len);
    if (n < 0)
      return UCP_E_INVALID;
    pos = (size_t)n;
  }
  if (xser_dcs) {
    n = ucp_xser_put(b->xser + pos, sizeof b->xser - pos, 0x02, &dcs, 1);
    if (n < 0)
      return UCP_E_INVALID;
    pos += (size_t)n;
  }
  o->xser = (struct ucp_slice){ b->xser, pos };
  /* Kannel sends MCLs 1 with every MT 4. Beside an XSer 02, which readers
   * take first, it changes nothing; alone it would be read as class 1. */
  if (coding != SMS_TEXT_GSM7 && xser_dcs)
    o->mcls = digit(1);
  return 0;
}

static int encode_oadc(struct ucp_op5x *o, const struct msg_addr *a, struct enc_buf *b)
{
  int n;
  if (a->addr[0] && (a->ton == MSG_TON_ALPHANUMERIC || !digits_only(a->addr))) {
    n = ucp_oadc_alnum_encode(b->oadc, sizeof b->oadc, a->addr, strlen(a->addr));
    if (n < 0)
      return UCP_E_INVALID;
    o->oadc = (struct ucp_slice){ b->oadc, (size_t)n };
    o->otoa = UCP_STR("5039");
    return 0;
  }
  o->oadc = cstr(a->addr);
  if (a->ton == MSG_TON_INTERNATIONAL)
    o->otoa = UCP_STR("1139");
  return 0;
}

/* Op 51 (SUBMIT) or 52 (DELIVER of an MO). */
static int encode_message(struct ucp_msg *m, int ot, const struct msg *msg, struct enc_buf *b,
                          const struct proto_options *opt)
{
  struct ucp_op5x *o = &m->o5x;
  int r;

  o->adc = cstr(msg->dst.addr);
  r = encode_oadc(o, &msg->src, b);
  if (!r)
    r = encode_payload(o, msg, b, opt);
  if (r)
    return r;
  if (msg->pid)
    o->rpid = put_number(b->rpid, msg->pid, 4);
  if (msg->mms)
    o->mms = digit(1);
  if (ot == 52)
    return msg->received_ms ? put_time(b->scts, 12, msg->received_ms / 1000, &o->scts) : 0;

  if (msg->dlr_mask & MSG_DLR_FROM_SMSC) {
    o->nrq = digit(1);
    /* Buffered asks for the final notifications too: only a final one
     * frees the message's DLR entry (the unwanted are dropped). */
    o->nt = digit(msg->dlr_mask & MSG_DLR_BUFFERED ? MSG_DLR_FROM_SMSC : msg->dlr_mask & MSG_DLR_FROM_SMSC);
  }
  if (msg->priority)
    o->pr = digit(1);
  if (msg->validity && put_time(b->vp, 10, msg->validity, &o->vp))
    return UCP_E_INVALID;
  if (msg->deferred) {
    o->dd = digit(1);
    if (put_time(b->ddt, 10, msg->deferred, &o->ddt))
      return UCP_E_INVALID;
  }
  return 0;
}

/* Op 53 from a receipt (the rules are in ucp_proto.h). */
static int encode_receipt(struct ucp_msg *m, const struct msg_receipt *rc, struct enc_buf *b)
{
  struct ucp_op5x *o = &m->o5x;
  unsigned dst;
  int n;

  if (ucp_sm_adc_scts_parse(cstr(rc->id), &o->oadc, &o->scts))
    return UCP_E_INVALID;
  if (digits_only(rc->src.addr))
    o->adc = cstr(rc->src.addr);
  switch (rc->state) {
  case MSG_STATE_DELIVERED: dst = 0; break;
  case MSG_STATE_ENROUTE: case MSG_STATE_ACCEPTED: dst = 1; break;
  default: dst = 2; break;
  }
  o->dst = digit(dst);
  if (dst != 0 && rc->err > 999)
    return UCP_E_INVALID;
  o->rsn = put_number(b->rsn, dst == 0 ? 0 : rc->err, 3);
  if (rc->done_time && put_time(b->dscts, 12, rc->done_time, &o->dscts))
    return UCP_E_INVALID;
  o->mt = digit(3);
  n = ucp_53_text(b->utf8, sizeof b->utf8, o->oadc, o->scts, (int)dst);
  if (n >= 0)
    n = ucp_amsg_from_utf8(b->msg, 2 * AMSG_OCTETS, b->utf8, (size_t)n, 0);
  if (n < 0)
    return UCP_E_INVALID;
  o->msg = (struct ucp_slice){ b->msg, (size_t)n };
  return 0;
}

static int encode_bind(struct ucp_msg *m, const struct proto_pdu *pdu, struct enc_buf *b)
{
  struct ucp_op60 *o = &m->o60;
  int n;
  /* Exactly Kannel's login: abbreviated number, private numbering plan. */
  o->oadc = cstr(pdu->user);
  o->oton = digit(6);
  o->onpi = digit(5);
  o->styp = digit(1);
  n = ucp_hex_encode(b->pwd, sizeof b->pwd, (const uint8_t *)pdu->password,
                     strnlen(pdu->password, sizeof pdu->password));
  if (n < 0)
    return UCP_E_INVALID;
  o->pwd = (struct ucp_slice){ b->pwd, (size_t)n };
  o->vers = UCP_STR("0100");
  return 0;
}

/* NACK m with this EC; SM is pdu->text, else the EC's text ('/' and
 * control characters, which SM cannot hold, become spaces). */
static void set_nack(struct ucp_msg *m, const struct proto_pdu *pdu, int ec, struct enc_buf *b)
{
  size_t n = strnlen(pdu->text, sizeof pdu->text);
  m->r.ack = 0;
  m->r.ec = ec;
  if (!n) {
    m->r.sm = cstr(ec_text(ec));
    return;
  }
  for (size_t i = 0; i < n; i++) {
    uint8_t c = (uint8_t)pdu->text[i];
    b->sm[i] = c < 0x20 || c == '/' ? ' ' : (char)c;
  }
  m->r.sm = (struct ucp_slice){ b->sm, n };
}

/* A result of pdu->status: ACK with sm, or NACK with the status's EC. */
static void set_result(struct ucp_msg *m, const struct proto_pdu *pdu, struct ucp_slice sm,
                       struct enc_buf *b)
{
  if (pdu->status == PROTO_OK)
    m->r.sm = sm;
  else
    set_nack(m, pdu, ucp_proto_ec(pdu->status), b);
}

/* Writes m at the end of out. */
static int put_frame(const struct ucp_msg *m, struct iobuf *out)
{
  uint8_t *p = iobuf_reserve(out, FRAME_ROOM);
  int n;
  if (!p)
    return UCP_E_SPACE;
  n = ucp_encode(m, p, FRAME_ROOM);
  if (n > 0)
    iobuf_commit(out, (size_t)n);
  return n;
}

/* R/<ot> NACK. ucp_encode writes results only for the OTs it has layouts
 * for, yet N/EC/SM reads the same for every OT: for another OT, encode it as
 * a 31 and then put the real OT in, moving the checksum (the byte sum of
 * everything before it) by the difference of the digits. */
static int put_nack(struct ucp_msg *m, const struct proto_pdu *pdu, int ec, struct enc_buf *b,
                    struct iobuf *out)
{
  uint32_t ot = pdu->raw_status;
  bool known = ucp_field_count((int)ot) > 0;
  uint8_t *f, sum;
  int n;

  if (ot > 99)
    return UCP_E_INVALID;
  ucp_msg_init(m, (int)pdu->ref, 'R', known ? (int)ot : 31);
  set_nack(m, pdu, ec, b);
  n = put_frame(m, out);
  if (n <= 0 || known)
    return n;
  f = iobuf_head(out) + iobuf_len(out) - n; /* STX, "TT/LLLLL/R/", OT at 12 */
  sum = (uint8_t)(hex_digit(f[n - 3]) << 4 | hex_digit(f[n - 2]));
  sum = (uint8_t)(sum - f[12] - f[13]);
  f[12] = (uint8_t)('0' + ot / 10);
  f[13] = (uint8_t)('0' + ot % 10);
  sum = (uint8_t)(sum + f[12] + f[13]);
  hex_encode((char *)f + n - 3, &sum, 1);
  return n;
}

static int ucp_proto_encode(const struct proto_pdu *pdu, struct iobuf *out,
                            const struct proto_options *opt)
{
  struct ucp_msg m;
  struct enc_buf b;
  int trn = (int)pdu->ref, ot, r;

  if (pdu->ref > 99)
    return UCP_E_INVALID;
  switch (pdu->op) {
  case PROTO_OP_BIND:
    ucp_msg_init(&m, trn, 'O', 60);
    r = encode_bind(&m, pdu, &b);
    break;
  case PROTO_OP_SUBMIT:
    ucp_msg_init(&m, trn, 'O', 51);
    r = encode_message(&m, 51, &pdu->msg, &b, opt);
    break;
  case PROTO_OP_DELIVER:
    ot = pdu->is_receipt ? 53 : 52;
    ucp_msg_init(&m, trn, 'O', ot);
    r = pdu->is_receipt ? encode_receipt(&m, &pdu->receipt, &b)
                        : encode_message(&m, 52, &pdu->msg, &b, opt);
    break;
  case PROTO_OP_KEEPALIVE:
    /* As Kannel: the account in AdC, PID 0539 (PC over TCP/IP). */
    ucp_msg_init(&m, trn, 'O', 31);
    m.o31.adc = cstr(pdu->user);
    m.o31.pid = UCP_STR("0539");
    r = 0;
    break;
  case PROTO_OP_BIND_RESP:
    ucp_msg_init(&m, trn, 'R', 60);
    set_result(&m, pdu, (struct ucp_slice){ NULL, 0 }, &b);
    r = 0;
    break;
  case PROTO_OP_SUBMIT_RESP:
    ucp_msg_init(&m, trn, 'R', pdu->raw_status == 1 ? 1 : 51);
    set_result(&m, pdu, cstr(pdu->msgid), &b);
    r = 0;
    break;
  case PROTO_OP_DELIVER_RESP:
    ot = pdu->raw_status == 52 || pdu->raw_status == 53 ? (int)pdu->raw_status
         : pdu->is_receipt                              ? 53
                                                        : 52;
    ucp_msg_init(&m, trn, 'R', ot);
    set_result(&m, pdu, (struct ucp_slice){ NULL, 0 }, &b);
    r = 0;
    break;
  case PROTO_OP_KEEPALIVE_RESP:
    ucp_msg_init(&m, trn, 'R', 31);
    set_result(&m, pdu, (struct ucp_slice){ NULL, 0 }, &b);
    r = 0;
    break;
  case PROTO_OP_OTHER: /* a request we do not handle */
    return put_nack(&m, pdu, ucp_proto_ec(PROTO_E_UNSUPPORTED), &b, out);
  case PROTO_OP_NACK: /* a request we could not read */
    return put_nack(&m, pdu, ucp_proto_ec(pdu->status), &b, out);
  default: /* UCP has no unbind: the connection just closes */
    return UCP_E_INVALID;
  }
  return r ? r : put_frame(&m, out);
}

/* A NACK's EC and its meaning; an ACK (raw 0 with status OK) as such. */
static void ucp_proto_describe(enum proto_op op, enum proto_status status, uint32_t raw_status, char *buf,
                               size_t cap)
{
  (void)op;
  if (!raw_status && status == PROTO_OK) {
    snprintf(buf, cap, "ACK");
    return;
  }
  int ec = raw_status && raw_status < 100 ? (int)raw_status : ucp_proto_ec(status);
  const char *text = ec_text(ec);
  snprintf(buf, cap, "EC %02d %s", ec, text ? text : "(unknown)");
}

const struct proto_ops ucp_proto_ops = {
  .name = "ucp",
  .ref_first = 0,
  .ref_count = 100,
  .window_max = 100,
  .has_unbind = false,
  .passes_about = false,
  .msgid_scts = SCTS_DDMMYY,
  .split = ucp_proto_split,
  .decode = ucp_proto_decode,
  .encode = ucp_proto_encode,
  .describe = ucp_proto_describe,
};
