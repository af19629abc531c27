/* cimd2_proto.c - the CIMD2 adapter: packets of cimd2_codec <-> the neutral
 * PDUs of proto.h, error codes <-> status (doc/cimd2.md section 8).
 *
 * Conventions of cimd2_proto_ops:
 *
 * - Packet numbers. The client numbers its requests odd (1, 3 .. 255), the
 *   SMSC even (0, 2 .. 254), and a response carries its request's number. A
 *   request we send with ref r (0-127) goes out as 2r + 1 from the client's
 *   side, 2r from the SMSC's (proto_options.smsc_side), and a response to it
 *   reads back as ref r. A peer's request keeps its number as ref, which its
 *   response echoes.
 * - raw_status: a decoded request's operation code (a response is that code
 *   + 50); a decoded response's error code (900), 0 when it carries none.
 * - Login is BIND (always TRX); 019 asks for the window when it is above 1.
 *   Logout is UNBIND, alive (40) KEEPALIVE, submit (03) SUBMIT, deliver
 *   message (20) DELIVER, deliver status report (23) DELIVER with is_receipt.
 *   A NACK (99) or a general error (98) answering one of ours is NACK.
 * - A submitted message is named "021:060" (its recipient and the time
 *   stamp the SMSC gave it, msgid_scts), which the status report carries too.
 * - Times are yyMMddhhmmss in UTC, as the UCP adapter writes its own. A
 *   CIMD2 SMSC reads them in its local time, so validity and first delivery
 *   go out relative (050, 053) when the message says when it was accepted,
 *   counted from then and rounded up to what GSM 03.40's TP-VP can say, as
 *   Kannel sends them; absolute (051, 054) only when it does not. Both are
 *   read (relative values stay negative, as struct msg keeps them until
 *   they are resolved).
 *
 * Pure code: no clock, no log, no allocation per PDU.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "charset.h"
#include "cimd2_codec.h"
#include "cimd2_text.h"
#include "hexutil.h"
#include "iobuf.h"
#include "cimd2_proto.h"
#include "scts.h"
#include "sms_text.h"

#define REF_COUNT 128
/* Where the receipt's id splits: "recipient:stamp" with a 12-digit stamp. */
#define STAMP_LEN 12

/* ---- error codes ---- */

static const struct {
  uint16_t code;
  uint8_t status;          /* enum proto_status */
  const char *text;
} error_codes[] = {
  { 1, PROTO_E_UNSUPPORTED, "Unexpected operation" },
  { 2, PROTO_E_SYNTAX, "Syntax error" },
  { 3, PROTO_E_SYNTAX, "Unsupported parameter error" },
  { 4, PROTO_E_TEMPORARY, "Connection to SMS Center lost" },
  { 5, PROTO_E_TEMPORARY, "No response from SMS Center" },
  { 6, PROTO_E_TEMPORARY, "General system error" },
  { 7, PROTO_E_NO_MESSAGE, "Cannot find information" },
  { 8, PROTO_E_SYNTAX, "Parameter formatting error" },
  { 9, PROTO_E_PERMANENT, "Requested operation failed" },
  { 10, PROTO_E_THROTTLED, "Temporary congestion error" },
  { 100, PROTO_E_AUTH, "Invalid login" },
  { 101, PROTO_E_AUTH, "Incorrect access type" },
  { 102, PROTO_E_ALREADY_BOUND, "Too many users with this login ID" },
  { 103, PROTO_E_AUTH, "Login refused by SMS Center" },
  { 104, PROTO_E_WINDOW, "Invalid window size" },
  { 105, PROTO_E_WINDOW, "Windowing disabled" },
  { 106, PROTO_E_AUTH, "Virtual SMS Center-based barring" },
  { 107, PROTO_E_AUTH, "Invalid subaddr" },
  { 108, PROTO_E_AUTH, "Alias account, login refused" },
  { 300, PROTO_E_ADDRESS, "Incorrect destination address" },
  { 301, PROTO_E_ADDRESS, "Incorrect number of destination addresses" },
  { 302, PROTO_E_SYNTAX, "Syntax error in user data parameter" },
  { 303, PROTO_E_SYNTAX, "Incorrect bin/head/normal user data parameter combination" },
  { 304, PROTO_E_PERMANENT, "Incorrect DCS parameter usage" },
  { 305, PROTO_E_PERMANENT, "Incorrect validity period parameters usage" },
  { 306, PROTO_E_SOURCE, "Incorrect originator address usage" },
  { 307, PROTO_E_PERMANENT, "Incorrect PID parameter usage" },
  { 308, PROTO_E_PERMANENT, "Incorrect first delivery parameter usage" },
  { 309, PROTO_E_PERMANENT, "Incorrect reply path usage" },
  { 310, PROTO_E_PERMANENT, "Incorrect status report request parameter usage" },
  { 311, PROTO_E_PERMANENT, "Incorrect cancel enabled parameter usage" },
  { 312, PROTO_E_PERMANENT, "Incorrect priority parameter usage" },
  { 313, PROTO_E_PERMANENT, "Incorrect tariff class parameter usage" },
  { 314, PROTO_E_PERMANENT, "Incorrect service description parameter usage" },
  { 315, PROTO_E_PERMANENT, "Incorrect transport type parameter usage" },
  { 316, PROTO_E_PERMANENT, "Incorrect message type parameter usage" },
  { 318, PROTO_E_PERMANENT, "Incorrect MMS parameter usage" },
  { 319, PROTO_E_PERMANENT, "Incorrect operation timer parameter usage" },
  { 320, PROTO_E_PERMANENT, "Incorrect dialogue ID parameter usage" },
  { 321, PROTO_E_SOURCE, "Incorrect alpha originator address usage" },
  { 322, PROTO_E_SOURCE, "Invalid data for alphanumeric originator" },
  { 323, PROTO_E_PERMANENT, "Online closed user group rejection" },
  { 324, PROTO_E_THROTTLED, "License exceeded" },
  { 400, PROTO_E_NO_MESSAGE, "Incorrect address parameter usage" },
  { 401, PROTO_E_NO_MESSAGE, "Incorrect SCTS parameter usage" },
  { 500, PROTO_E_SYNTAX, "Incorrect SCTS parameter usage" },
  { 501, PROTO_E_SYNTAX, "Incorrect mode parameter usage" },
  { 502, PROTO_E_SYNTAX, "Incorrect parameter combination" },
  { 600, PROTO_E_NO_MESSAGE, "Incorrect SCTS parameter usage" },
  { 601, PROTO_E_NO_MESSAGE, "Incorrect address parameter usage" },
  { 602, PROTO_E_MESSAGE_STATE, "Incorrect mode parameter usage" },
  { 603, PROTO_E_MESSAGE_STATE, "Incorrect parameter combination" },
  { 800, PROTO_E_PERMANENT, "Changing password failed" },
  { 801, PROTO_E_PERMANENT, "Changing password not allowed" },
  { 900, PROTO_E_UNSUPPORTED, "Unsupported item requested" },
};

static int error_index(unsigned code)
{
  for (size_t i = 0; i < sizeof error_codes / sizeof error_codes[0]; i++)
    if (error_codes[i].code == code)
      return (int)i;
  return -1;
}

enum proto_status cimd2_proto_status(unsigned code)
{
  if (code == 0)
    return PROTO_OK;
  int i = error_index(code);
  return i < 0 ? PROTO_E_PERMANENT : (enum proto_status)error_codes[i].status;
}

unsigned cimd2_proto_error(enum proto_status s)
{
  switch (s) {
  case PROTO_E_THROTTLED:
  case PROTO_E_QUEUE_FULL: return 10;   /* CIMD2's only "retry later" */
  case PROTO_E_TEMPORARY: return 6;
  case PROTO_E_AUTH:
  case PROTO_E_AUTH_ACCOUNT:
  case PROTO_E_AUTH_PASSWORD: return 100;
  case PROTO_E_ALREADY_BOUND: return 102;
  case PROTO_E_WINDOW: return 104;
  case PROTO_E_BIND_STATE:
  case PROTO_E_UNSUPPORTED: return 1;
  case PROTO_E_SYNTAX:
  case PROTO_E_CMD_LEN:
  case PROTO_E_CHECKSUM: return 2;
  case PROTO_E_ADDRESS: return 300;
  case PROTO_E_SOURCE: return 306;
  case PROTO_E_TOO_LONG: return 302;
  case PROTO_E_NO_MESSAGE: return 7;
  case PROTO_OK:
  case PROTO_E_PERMANENT:
  case PROTO_E_CREDIT:
  case PROTO_E_MESSAGE_STATE: return 9;
  }
  return 9;
}

/* ---- numbers and times ---- */

static bool all_digits(const char *p, size_t len)
{
  for (size_t i = 0; i < len; i++)
    if (p[i] < '0' || p[i] > '9')
      return false;
  return len > 0;
}

/* A time parameter as Unix seconds; absent leaves *t alone. */
static int get_time(const struct cimd2_packet *p, uint16_t code, int64_t *t)
{
  const struct cimd2_slice *v = cimd2_get(p, code);
  time_t parsed;
  if (!v)
    return 0;
  if (scts_parse(v->p, v->len, SCTS_YYMMDD, &parsed) < 0)
    return CIMD2_E_SYNTAX;
  *t = (int64_t)parsed;
  return 0;
}

/* A relative period (050, 053): one octet of GSM 03.40 TP-VP, as -seconds;
 * absent leaves *t alone. */
static int get_relative(const struct cimd2_packet *p, uint16_t code, int64_t *t)
{
  uint64_t n;
  int r = cimd2_get_uint(p, code, 255, &n);
  if (r < 0)
    return r == -1 ? 0 : CIMD2_E_SYNTAX;
  int64_t minutes = n <= 143 ? ((int64_t)n + 1) * 5
                  : n <= 167 ? 720 + ((int64_t)n - 143) * 30
                  : n <= 196 ? ((int64_t)n - 166) * 1440
                             : ((int64_t)n - 192) * 10080;
  *t = -minutes * 60;
  return 0;
}

/* A period of seconds as a relative TP-VP octet (050, 053), rounded up:
 * 5-minute steps to 12 h, 30-minute steps to 24 h, days to 30, then weeks
 * (at most 63). */
static unsigned relative_octet(int64_t seconds)
{
  int64_t minutes = (seconds + 59) / 60;
  if (minutes <= 5)
    return 0;
  if (minutes <= 720)
    return (unsigned)((minutes + 4) / 5 - 1);
  if (minutes <= 1440)
    return (unsigned)(143 + (minutes - 720 + 29) / 30);
  if (minutes <= 30 * 1440)
    return (unsigned)(166 + (minutes + 1439) / 1440);
  int64_t weeks = (minutes + 10079) / 10080;
  return weeks >= 63 ? 255u : (unsigned)(192 + weeks);
}

/* ---- decode ---- */

/* Where a decode puts octets in the caller's scratch buffer: the UDH (032:
 * at most 255 octets), text staged for a conversion, then the payload. */
enum {
  SCRATCH_UDH = 0,
  SCRATCH_STAGE = 256,
  SCRATCH_DATA = SCRATCH_STAGE + 3 * CIMD2_FRAME_MAX,
  SCRATCH_DATA_LEN = 2 * CIMD2_FRAME_MAX
};
_Static_assert(SCRATCH_DATA + SCRATCH_DATA_LEN <= PROTO_SCRATCH_LEN, "scratch layout");

/* An address (021, 023: digits, '+' before them for an international
 * number) or an alphanumeric originator (027: printable ASCII) into a. */
static int set_addr(struct msg_addr *a, const struct cimd2_slice *v, uint8_t ton)
{
  size_t len = v ? v->len : 0;
  const char *p = v ? v->p : "";
  for (size_t i = 0; i < len; i++) {
    bool ok = ton == MSG_TON_ALPHANUMERIC ? p[i] >= 0x20 && p[i] < 0x7F
                                          : (p[i] >= '0' && p[i] <= '9') || (p[i] == '+' && i == 0);
    if (!ok)
      return CIMD2_E_SYNTAX;
  }
  return msg_addr_set(a, p, len, ton, ton == MSG_TON_ALPHANUMERIC ? 0 : 1) < 0 ? CIMD2_E_SYNTAX : 0;
}

/* Text a peer wrote in Latin-1 where GSM lacks a character: as UCS2. */
static int latin1_as_ucs2(uint8_t *data, const struct cimd2_slice *text, uint8_t *stage)
{
  char *utf8 = (char *)stage;
  int u = charset_latin1_to_utf8(utf8, SCRATCH_DATA - SCRATCH_STAGE, (const uint8_t *)text->p, text->len);
  return u < 0 ? CIMD2_E_SYNTAX : charset_utf8_to_ucs2(data, SCRATCH_DATA_LEN, utf8, (size_t)u);
}

/* 030, 032, 033 or 034 into msg, its octets into scratch. */
static int decode_payload(struct msg *msg, const struct cimd2_packet *p, uint8_t *scratch)
{
  uint8_t *udh = scratch + SCRATCH_UDH, *data = scratch + SCRATCH_DATA;
  const struct cimd2_slice *v;
  uint64_t dcs = 0;
  uint8_t coding = SMS_TEXT_GSM7;
  int n = 0;

  if (cimd2_get_uint(p, CIMD2_P_DCS, 255, &dcs) == CIMD2_E_SYNTAX)
    return CIMD2_E_SYNTAX;
  if ((v = cimd2_get(p, CIMD2_P_UDH))) {
    n = v->len / 2 > SCRATCH_STAGE ? -1 : hex_decode(udh, v->p, v->len);
    if (n < 1 || udh[0] != n - 1)   /* UDHL counts the rest */
      return CIMD2_E_SYNTAX;
    msg->udh = udh;
    msg->udh_len = (uint16_t)n;
  }
  if ((v = cimd2_get(p, CIMD2_P_BINARY))) {
    coding = sms_dcs_coding((uint8_t)dcs);
    if (coding == SMS_TEXT_GSM7)   /* octets under a 7-bit DCS: taken as octets */
      coding = SMS_TEXT_8BIT;
    n = v->len / 2 > SCRATCH_DATA_LEN ? -1 : hex_decode(data, v->p, v->len);
  } else if ((v = cimd2_get(p, CIMD2_P_TEXT))) {
    n = cimd2_text_decode(data, SCRATCH_DATA_LEN, v->p, v->len);
    if (n == CIMD2_E_INVALID) {
      n = latin1_as_ucs2(data, v, scratch + SCRATCH_STAGE);
      coding = SMS_TEXT_UCS2;
    }
  } else {
    n = 0;
  }
  if (n < 0)
    return CIMD2_E_SYNTAX;
  msg->data = data;
  msg->data_len = (uint32_t)n;
  msg->coding = coding;
  msg->dcs = sms_dcs_agree(coding, (uint8_t)dcs);
  return 0;
}

/* 056 as dlr_mask (doc/cimd2.md 8.4). */
static uint8_t dlr_mask_of(uint64_t request)
{
  uint8_t mask = 0;
  if (request & 8)
    mask |= MSG_DLR_DELIVERED;
  if (request & (2 | 4 | 16 | 32))
    mask |= MSG_DLR_FAILED;
  if (request & (1 | 64))
    mask |= MSG_DLR_BUFFERED;
  return mask;
}

/* The id of a message its recipient and stamp name: "021:060", the
 * recipient without a '+' (an SMSC may write it in one and not the other). */
static int stamp_id(char *out, size_t cap, const struct cimd2_slice *dst, const struct cimd2_slice *stamp)
{
  if (!dst || !stamp || stamp->len != STAMP_LEN || !all_digits(stamp->p, stamp->len))
    return CIMD2_E_SYNTAX;
  size_t plus = dst->len && dst->p[0] == '+', len = dst->len - plus;
  if (len + 1 + STAMP_LEN >= cap)
    return CIMD2_E_SYNTAX;
  memcpy(out, dst->p + plus, len);
  out[len] = ':';
  memcpy(out + len + 1, stamp->p, STAMP_LEN);
  out[len + 1 + STAMP_LEN] = '\0';
  return 0;
}

/* A status report (23) into a receipt (doc/cimd2.md 8.3). */
static int decode_receipt(struct proto_pdu *pdu, const struct cimd2_packet *p)
{
  static const uint8_t state_of_code[10] = {
    MSG_STATE_UNKNOWN,       MSG_STATE_ENROUTE,       MSG_STATE_EXPIRED, MSG_STATE_UNDELIVERABLE,
    MSG_STATE_DELIVERED,     MSG_STATE_ENROUTE,       MSG_STATE_UNDELIVERABLE,
    MSG_STATE_DELETED,       MSG_STATE_DELETED,       MSG_STATE_DELETED,
  };
  struct msg_receipt *rc = &pdu->receipt;
  uint64_t code = 0, err = 0;
  int r = cimd2_get_uint(p, CIMD2_P_STATUS_CODE, 99, &code);
  if (r == CIMD2_E_SYNTAX || cimd2_get_uint(p, CIMD2_P_STATUS_ERROR, 999, &err) == CIMD2_E_SYNTAX ||
      stamp_id(rc->id, sizeof rc->id, cimd2_get(p, CIMD2_P_DESTINATION), cimd2_get(p, CIMD2_P_SC_TIMESTAMP)))
    return CIMD2_E_SYNTAX;
  pdu->is_receipt = true;
  rc->state = code < 10 ? state_of_code[code] : MSG_STATE_UNKNOWN;
  rc->err = (uint16_t)err;
  rc->dst = pdu->msg.dst;   /* 021: the original message's recipient */
  rc->src = pdu->msg.src;   /* 023: its sender, when the SMSC says */
  if (get_time(p, CIMD2_P_SC_TIMESTAMP, &rc->submit_time) || get_time(p, CIMD2_P_DISCHARGE_TIME, &rc->done_time))
    return CIMD2_E_SYNTAX;
  return 0;
}

/* A submit (03), a deliver message (20) or a status report (23). */
static int decode_message(struct proto_pdu *pdu, const struct cimd2_packet *p, uint8_t *scratch)
{
  struct msg *msg = &pdu->msg;
  const struct cimd2_slice *alpha = cimd2_get(p, CIMD2_P_ORIGINATOR_ALPHA);
  uint64_t v;
  int64_t scts = 0;
  int r;

  pdu->op = p->op == CIMD2_SUBMIT ? PROTO_OP_SUBMIT : PROTO_OP_DELIVER;
  r = set_addr(&msg->dst, cimd2_get(p, CIMD2_P_DESTINATION), MSG_TON_UNKNOWN);
  if (!r)
    r = alpha ? set_addr(&msg->src, alpha, MSG_TON_ALPHANUMERIC)
              : set_addr(&msg->src, cimd2_get(p, CIMD2_P_ORIGINATOR), MSG_TON_UNKNOWN);
  if (r)
    return r;
  if (p->op == CIMD2_STATUS_REPORT)
    return decode_receipt(pdu, p);

  r = decode_payload(msg, p, scratch);
  if (r)
    return r;
  if ((r = cimd2_get_uint(p, CIMD2_P_STATUS_REPORT_REQUEST, 127, &v)) == CIMD2_E_SYNTAX)
    return r;
  if (r == 0)
    msg->dlr_mask = dlr_mask_of(v);
  if ((r = cimd2_get_uint(p, CIMD2_P_PID, 255, &v)) == CIMD2_E_SYNTAX)
    return r;
  msg->pid = r == 0 ? (uint8_t)v : 0;
  if ((r = cimd2_get_uint(p, CIMD2_P_MORE, 1, &v)) == CIMD2_E_SYNTAX)
    return r;
  msg->mms = r == 0 && v;
  if (get_relative(p, CIMD2_P_VALIDITY_RELATIVE, &msg->validity) ||
      get_time(p, CIMD2_P_VALIDITY_ABSOLUTE, &msg->validity) ||
      get_relative(p, CIMD2_P_FIRST_DELIVERY_RELATIVE, &msg->deferred) ||
      get_time(p, CIMD2_P_FIRST_DELIVERY_ABSOLUTE, &msg->deferred) ||
      get_time(p, CIMD2_P_SC_TIMESTAMP, &scts))
    return CIMD2_E_SYNTAX;
  msg->received_ms = scts * 1000;
  return 0;
}

static int decode_login(struct proto_pdu *pdu, const struct cimd2_packet *p)
{
  const struct cimd2_slice *user = cimd2_get(p, CIMD2_P_USER), *pwd = cimd2_get(p, CIMD2_P_PASSWORD);
  pdu->op = PROTO_OP_BIND;
  pdu->bind_mode = PROTO_BIND_TRX;
  if (!user || !pwd || user->len >= sizeof pdu->user || pwd->len >= sizeof pdu->password ||
      memchr(pwd->p, '\0', pwd->len) || memchr(user->p, '\0', user->len))
    return CIMD2_E_SYNTAX;
  memcpy(pdu->user, user->p, user->len);
  pdu->user[user->len] = '\0';
  memcpy(pdu->password, pwd->p, pwd->len);
  pdu->password[pwd->len] = '\0';
  return 0;
}

/* The response op a request's code is answered with. */
static enum proto_op answer_op(unsigned op)
{
  switch (op) {
  case CIMD2_LOGIN: return PROTO_OP_BIND_RESP;
  case CIMD2_LOGOUT: return PROTO_OP_UNBIND_RESP;
  case CIMD2_SUBMIT: return PROTO_OP_SUBMIT_RESP;
  case CIMD2_DELIVER:
  case CIMD2_STATUS_REPORT: return PROTO_OP_DELIVER_RESP;
  case CIMD2_ALIVE: return PROTO_OP_KEEPALIVE_RESP;
  default: return PROTO_OP_OTHER;
  }
}

/* A response (50 and up): its request's op, its error code and text. */
static int decode_response(struct proto_pdu *pdu, const struct cimd2_packet *p)
{
  uint64_t code = 0;
  const struct cimd2_slice *text = cimd2_get(p, CIMD2_P_ERROR_TEXT);

  switch (p->op) {
  case CIMD2_NACK:
    pdu->op = PROTO_OP_NACK;
    pdu->status = PROTO_E_CHECKSUM;
    return 0;
  case CIMD2_GENERAL_ERROR: pdu->op = PROTO_OP_NACK; break;
  default:
    pdu->op = answer_op(p->op - CIMD2_RESPONSE);
    if (pdu->op == PROTO_OP_OTHER)
      return CIMD2_E_SYNTAX;   /* an answer to an operation we never send */
    pdu->is_receipt = p->op == CIMD2_STATUS_REPORT + CIMD2_RESPONSE;
    break;
  }
  if (cimd2_get_uint(p, CIMD2_P_ERROR_CODE, 999, &code) == CIMD2_E_SYNTAX)
    return CIMD2_E_SYNTAX;
  pdu->raw_status = (uint32_t)code;
  pdu->status = cimd2_proto_status((unsigned)code);
  if (pdu->op == PROTO_OP_NACK && pdu->status == PROTO_OK)
    pdu->status = PROTO_E_PERMANENT;   /* a general error without its code */
  if (text) {
    size_t n = text->len < sizeof pdu->text - 1 ? text->len : sizeof pdu->text - 1;
    memcpy(pdu->text, text->p, n);
    pdu->text[n] = '\0';
  }
  if (pdu->op == PROTO_OP_BIND_RESP)
    pdu->bind_mode = PROTO_BIND_TRX;
  /* Without 021 the id is the stamp alone: a status report cannot match it. */
  if (pdu->op == PROTO_OP_SUBMIT_RESP && pdu->status == PROTO_OK) {
    const struct cimd2_slice *dst = cimd2_get(p, CIMD2_P_DESTINATION), none = { "", 0 };
    if (stamp_id(pdu->msgid, sizeof pdu->msgid, dst ? dst : &none, cimd2_get(p, CIMD2_P_SC_TIMESTAMP)))
      return CIMD2_E_SYNTAX;
    if (!dst)
      memmove(pdu->msgid, pdu->msgid + 1, STAMP_LEN + 1);
  }
  return 0;
}

static int cimd2_proto_decode(struct proto_pdu *pdu, const uint8_t *frame, size_t len, uint8_t *scratch,
                              const struct proto_options *opt)
{
  struct cimd2_packet p;
  int r = cimd2_decode(frame, len, &p);

  memset(pdu, 0, sizeof *pdu);
  if (r == CIMD2_E_HEADER || len < CIMD2_FRAME_MIN)
    return r ? r : CIMD2_E_HEADER;   /* no number: nobody to answer */
  bool response = p.op >= CIMD2_RESPONSE;
  if (r == CIMD2_E_CHECKSUM) {
    /* Answered with a NACK naming its number, request or response. */
    pdu->op = PROTO_OP_NACK;
    pdu->ref = p.number;
    pdu->status = PROTO_E_CHECKSUM;
    return r;
  }
  if (response) {
    /* One of ours: our parity, or no request of ours it can answer. */
    bool ours = (p.number & 1u) == (opt->smsc_side ? 0u : 1u);
    pdu->ref = ours ? p.number / 2u : UINT32_MAX;
    r = r ? r : decode_response(pdu, &p);
    if (r)
      pdu->op = PROTO_OP_NONE;   /* responses are never answered */
    return r;
  }

  pdu->ref = p.number;
  pdu->raw_status = p.op;
  if (!r) {
    switch (p.op) {
    case CIMD2_LOGIN: r = decode_login(pdu, &p); break;
    case CIMD2_LOGOUT: pdu->op = PROTO_OP_UNBIND; break;
    case CIMD2_ALIVE: pdu->op = PROTO_OP_KEEPALIVE; break;
    case CIMD2_SUBMIT:
    case CIMD2_DELIVER:
    case CIMD2_STATUS_REPORT: r = decode_message(pdu, &p, scratch); break;
    default: pdu->op = PROTO_OP_OTHER; break;
    }
  }
  if (r) {
    pdu->op = answer_op(p.op);
    if (pdu->op == PROTO_OP_OTHER)
      pdu->op = PROTO_OP_NACK;
    pdu->status = PROTO_E_SYNTAX;
  }
  return r;
}

/* ---- encode ---- */

/* Storage for the values an encode builds; the packet's slices point here. */
struct enc_buf {
  char text[3 * SCRATCH_DATA_LEN / 2];   /* 033: up to 3 characters a septet */
  char hex[2 * 1024];                     /* 034 */
  char udh[2 * 256];                      /* 032 */
  char nums[8][21];
  char dst[MSG_ADDR_LEN + 1], src[MSG_ADDR_LEN + 1];
  char times[3][STAMP_LEN];
};

static int put_time(struct cimd2_packet *p, uint16_t code, int64_t t, char *buf)
{
  if (scts_format(buf, STAMP_LEN, SCTS_YYMMDD, (time_t)t) < 0)
    return CIMD2_E_INVALID;
  return cimd2_put(p, code, buf, STAMP_LEN);
}

static int put_hex(struct cimd2_packet *p, uint16_t code, const uint8_t *data, size_t len, char *buf, size_t cap)
{
  if (2 * len > cap)
    return CIMD2_E_INVALID;
  hex_encode(buf, data, len);
  return cimd2_put(p, code, buf, 2 * len);
}

/* An address as a value: digits written with '+' when international. */
static int put_addr(struct cimd2_packet *p, uint16_t code, const struct msg_addr *a, char *buf)
{
  size_t n = strnlen(a->addr, sizeof a->addr);
  size_t plus = a->ton == MSG_TON_INTERNATIONAL && n && all_digits(a->addr, n);
  if (plus)
    buf[0] = '+';
  memcpy(buf + plus, a->addr, n);
  return cimd2_put(p, code, buf, n + plus);
}

/* 030, 032, 033 / 034 of a message. */
static int encode_payload(struct cimd2_packet *p, const struct msg *msg, struct enc_buf *b)
{
  uint8_t coding = msg->coding, dcs = sms_dcs_agree(msg->coding, msg->dcs);
  int r = 0, n;
  if (coding != SMS_TEXT_GSM7 && coding != SMS_TEXT_8BIT && coding != SMS_TEXT_UCS2)
    return CIMD2_E_INVALID;
  if (dcs != 0)   /* as Kannel, which leaves out the default */
    r = cimd2_put_uint(p, CIMD2_P_DCS, dcs, b->nums[0], sizeof b->nums[0]);
  if (!r && msg->udh_len)
    r = put_hex(p, CIMD2_P_UDH, msg->udh, msg->udh_len, b->udh, sizeof b->udh);
  if (r)
    return r;
  if (coding != SMS_TEXT_GSM7)
    return put_hex(p, CIMD2_P_BINARY, msg->data, msg->data_len, b->hex, sizeof b->hex);
  n = cimd2_text_encode(b->text, sizeof b->text, msg->data, msg->data_len);
  return n < 0 ? CIMD2_E_INVALID : cimd2_put(p, CIMD2_P_TEXT, b->text, (size_t)n);
}

static int encode_originator(struct cimd2_packet *p, const struct msg_addr *a, struct enc_buf *b)
{
  size_t n = strnlen(a->addr, sizeof a->addr);
  if (!n)
    return 0;
  if (a->ton == MSG_TON_ALPHANUMERIC || !all_digits(a->addr, n))
    return cimd2_put(p, CIMD2_P_ORIGINATOR_ALPHA, a->addr, n);
  return put_addr(p, CIMD2_P_ORIGINATOR, a, b->src);
}

/* A submit (03) or a deliver message (20). */
static int encode_message(struct cimd2_packet *p, const struct msg *msg, struct enc_buf *b)
{
  int r = put_addr(p, CIMD2_P_DESTINATION, &msg->dst, b->dst);
  if (!r)
    r = encode_originator(p, &msg->src, b);
  if (!r)
    r = encode_payload(p, msg, b);
  if (!r && msg->pid)
    r = cimd2_put_uint(p, CIMD2_P_PID, msg->pid, b->nums[1], sizeof b->nums[1]);
  if (!r && msg->mms)
    r = cimd2_put(p, CIMD2_P_MORE, "1", 1);
  if (r || p->op == CIMD2_DELIVER)
    return r || !msg->received_ms ? r : put_time(p, CIMD2_P_SC_TIMESTAMP, msg->received_ms / 1000, b->times[0]);

  int64_t accepted = msg->received_ms / 1000;
  if (msg->validity > 0)
    r = accepted ? cimd2_put_uint(p, CIMD2_P_VALIDITY_RELATIVE, relative_octet(msg->validity - accepted),
                                  b->nums[3], sizeof b->nums[3])
                 : put_time(p, CIMD2_P_VALIDITY_ABSOLUTE, msg->validity, b->times[1]);
  if (!r && msg->deferred > 0)
    r = accepted ? cimd2_put_uint(p, CIMD2_P_FIRST_DELIVERY_RELATIVE, relative_octet(msg->deferred - accepted),
                                  b->nums[4], sizeof b->nums[4])
                 : put_time(p, CIMD2_P_FIRST_DELIVERY_ABSOLUTE, msg->deferred, b->times[2]);
  /* Always sent, as Kannel: without it the SMSC's profile decides. Buffered
   * asks for the final reports too: only a final one frees the DLR entry. */
  unsigned request = 0;
  if (msg->dlr_mask & MSG_DLR_DELIVERED)
    request |= 8;
  if (msg->dlr_mask & MSG_DLR_FAILED)
    request |= 2 | 4 | 16 | 32;
  if (msg->dlr_mask & MSG_DLR_BUFFERED)
    request |= 1 | 8 | 2 | 4 | 16 | 32;
  return r ? r : cimd2_put_uint(p, CIMD2_P_STATUS_REPORT_REQUEST, request, b->nums[2], sizeof b->nums[2]);
}

/* Where an id "recipient:stamp" (of cap bytes at most) splits: its ':',
 * the recipient before it and the 12-digit stamp after; NULL for an id of
 * another shape. */
static const char *stamp_colon(const char *id, size_t cap)
{
  size_t len = strnlen(id, cap);
  const char *colon = len > STAMP_LEN ? id + len - STAMP_LEN - 1 : NULL;
  return colon && *colon == ':' && all_digits(colon + 1, STAMP_LEN) ? colon : NULL;
}

/* A status report (23) from a receipt whose id is "recipient:stamp". */
static int encode_receipt(struct cimd2_packet *p, const struct msg_receipt *rc, struct enc_buf *b)
{
  const char *colon = stamp_colon(rc->id, sizeof rc->id);
  unsigned code;
  int r;
  if (!colon)
    return CIMD2_E_INVALID;
  switch (rc->state) {
  case MSG_STATE_DELIVERED: code = 4; break;
  case MSG_STATE_EXPIRED: code = 2; break;
  case MSG_STATE_DELETED: code = 8; break;
  case MSG_STATE_ENROUTE:
  case MSG_STATE_ACCEPTED: code = 1; break;
  default: code = 3; break;   /* undeliverable, rejected, unknown */
  }
  r = cimd2_put(p, CIMD2_P_DESTINATION, rc->id, (size_t)(colon - rc->id));
  if (!r && rc->src.addr[0] && all_digits(rc->src.addr, strnlen(rc->src.addr, sizeof rc->src.addr)))
    r = put_addr(p, CIMD2_P_ORIGINATOR, &rc->src, b->src);
  if (!r)
    r = cimd2_put(p, CIMD2_P_SC_TIMESTAMP, colon + 1, STAMP_LEN);
  if (!r)
    r = cimd2_put_uint(p, CIMD2_P_STATUS_CODE, code, b->nums[0], sizeof b->nums[0]);
  if (!r && code != 4 && rc->err)
    r = cimd2_put_uint(p, CIMD2_P_STATUS_ERROR, rc->err % 1000, b->nums[1], sizeof b->nums[1]);
  if (!r && rc->done_time)
    r = put_time(p, CIMD2_P_DISCHARGE_TIME, rc->done_time, b->times[0]);
  return r;
}

/* A response's error code, when its status is one. */
static int put_error(struct cimd2_packet *p, enum proto_status status, struct enc_buf *b)
{
  if (status == PROTO_OK)
    return 0;
  return cimd2_put_uint(p, CIMD2_P_ERROR_CODE, cimd2_proto_error(status), b->nums[7], sizeof b->nums[7]);
}

/* The response to a submit: 021 and 060 of its id "recipient:stamp". */
static int encode_submit_resp(struct cimd2_packet *p, const struct proto_pdu *pdu, struct enc_buf *b)
{
  if (pdu->status != PROTO_OK)
    return put_error(p, pdu->status, b);
  const char *colon = stamp_colon(pdu->msgid, sizeof pdu->msgid);
  if (!colon)
    return CIMD2_E_INVALID;
  int r = cimd2_put(p, CIMD2_P_DESTINATION, pdu->msgid, (size_t)(colon - pdu->msgid));
  return r ? r : cimd2_put(p, CIMD2_P_SC_TIMESTAMP, colon + 1, STAMP_LEN);
}

/* The operation a response to request code op takes: op + 50 for the
 * operations CIMD2 has, a general error (98) for any other. */
static uint8_t response_code(uint32_t op)
{
  switch (op) {
  case CIMD2_LOGIN: case CIMD2_LOGOUT: case CIMD2_SUBMIT: case CIMD2_ENQUIRE_STATUS:
  case CIMD2_DELIVERY_REQUEST: case CIMD2_CANCEL: case CIMD2_SET: case CIMD2_GET:
  case CIMD2_DELIVER: case CIMD2_STATUS_REPORT: case CIMD2_ALIVE:
    return (uint8_t)(op + CIMD2_RESPONSE);
  default:
    return CIMD2_GENERAL_ERROR;
  }
}

static int cimd2_proto_encode(const struct proto_pdu *pdu, struct iobuf *out, const struct proto_options *opt)
{
  struct cimd2_packet p;
  struct enc_buf b;
  uint32_t number = pdu->ref;   /* a response echoes its request's number */
  int r = 0;

  if (proto_response_op(pdu->op) != PROTO_OP_NONE) {   /* a request of ours */
    if (pdu->ref >= REF_COUNT)
      return CIMD2_E_INVALID;
    number = 2 * pdu->ref + (opt->smsc_side ? 0 : 1);
  }
  if (number > 999)   /* a peer's number above 255 is echoed all the same */
    return CIMD2_E_INVALID;

  switch (pdu->op) {
  case PROTO_OP_BIND:
    cimd2_packet_init(&p, CIMD2_LOGIN, (uint16_t)number);
    r = cimd2_put(&p, CIMD2_P_USER, pdu->user, strnlen(pdu->user, sizeof pdu->user));
    if (!r)
      r = cimd2_put(&p, CIMD2_P_PASSWORD, pdu->password, strnlen(pdu->password, sizeof pdu->password));
    if (!r && opt->window > 1)
      r = cimd2_put_uint(&p, CIMD2_P_WINDOW, opt->window, b.nums[0], sizeof b.nums[0]);
    break;
  case PROTO_OP_UNBIND:
    cimd2_packet_init(&p, CIMD2_LOGOUT, (uint16_t)number);
    break;
  case PROTO_OP_KEEPALIVE:
    cimd2_packet_init(&p, CIMD2_ALIVE, (uint16_t)number);
    break;
  case PROTO_OP_SUBMIT:
    cimd2_packet_init(&p, CIMD2_SUBMIT, (uint16_t)number);
    r = encode_message(&p, &pdu->msg, &b);
    break;
  case PROTO_OP_DELIVER:
    cimd2_packet_init(&p, pdu->is_receipt ? CIMD2_STATUS_REPORT : CIMD2_DELIVER, (uint16_t)number);
    r = pdu->is_receipt ? encode_receipt(&p, &pdu->receipt, &b) : encode_message(&p, &pdu->msg, &b);
    break;
  case PROTO_OP_SUBMIT_RESP:
    cimd2_packet_init(&p, CIMD2_SUBMIT + CIMD2_RESPONSE, (uint16_t)number);
    r = encode_submit_resp(&p, pdu, &b);
    break;
  case PROTO_OP_BIND_RESP:
  case PROTO_OP_UNBIND_RESP:
  case PROTO_OP_KEEPALIVE_RESP:
  case PROTO_OP_DELIVER_RESP: {
    static const uint8_t code[] = { [PROTO_OP_BIND_RESP] = CIMD2_LOGIN, [PROTO_OP_UNBIND_RESP] = CIMD2_LOGOUT,
                                    [PROTO_OP_KEEPALIVE_RESP] = CIMD2_ALIVE };
    uint32_t op = pdu->op != PROTO_OP_DELIVER_RESP ? code[pdu->op]
                  : pdu->raw_status == CIMD2_DELIVER || pdu->raw_status == CIMD2_STATUS_REPORT ? pdu->raw_status
                  : pdu->is_receipt ? CIMD2_STATUS_REPORT
                                    : CIMD2_DELIVER;
    cimd2_packet_init(&p, (uint8_t)(op + CIMD2_RESPONSE), (uint16_t)number);
    r = put_error(&p, pdu->status, &b);
    break;
  }
  case PROTO_OP_OTHER:   /* a request we do not handle */
    cimd2_packet_init(&p, response_code(pdu->raw_status), (uint16_t)number);
    r = put_error(&p, PROTO_E_UNSUPPORTED, &b);
    break;
  case PROTO_OP_NACK:    /* a packet we could not read */
    if (pdu->status == PROTO_E_CHECKSUM) {
      cimd2_packet_init(&p, CIMD2_NACK, (uint16_t)number);
    } else {
      cimd2_packet_init(&p, CIMD2_GENERAL_ERROR, (uint16_t)number);
      r = put_error(&p, pdu->status, &b);
    }
    break;
  default:   /* CIMD2 has no query, cancel or replace of emg's kind */
    return CIMD2_E_INVALID;
  }
  if (r)
    return r;
  uint8_t *dst = iobuf_reserve(out, CIMD2_FRAME_MAX);
  if (!dst)
    return CIMD2_E_SPACE;
  int n = cimd2_encode(&p, dst, CIMD2_FRAME_MAX);
  if (n > 0)
    iobuf_commit(out, (size_t)n);
  return n;
}

/* ---- split and describe ---- */

static int cimd2_proto_split(const uint8_t *buf, size_t len, const struct proto_options *opt, size_t *skip)
{
  return cimd2_split(buf, len, opt->max_frame ? opt->max_frame : CIMD2_FRAME_MAX, skip);
}

/* An error code and its meaning ("error 10 Temporary congestion error"). */
static void cimd2_proto_describe(enum proto_op op, enum proto_status status, uint32_t raw_status, char *buf,
                                 size_t cap)
{
  if (!raw_status && status == PROTO_OK) {
    snprintf(buf, cap, "OK");
    return;
  }
  if (!raw_status && op == PROTO_OP_NACK && status == PROTO_E_CHECKSUM) {
    snprintf(buf, cap, "NACK (checksum or packet number)");
    return;
  }
  unsigned code = raw_status ? raw_status : cimd2_proto_error(status);
  int i = error_index(code);
  snprintf(buf, cap, "error %u %s", code, i < 0 ? "(unknown)" : error_codes[i].text);
}

const struct proto_ops cimd2_proto_ops = {
  .name = "cimd2",
  .ref_first = 0,
  .ref_count = REF_COUNT,
  .window_max = REF_COUNT,
  .has_unbind = true,
  .passes_about = false,
  .msgid_scts = SCTS_YYMMDD,
  .split = cimd2_proto_split,
  .decode = cimd2_proto_decode,
  .encode = cimd2_proto_encode,
  .describe = cimd2_proto_describe,
};
