/* smpp_proto.c - the SMPP 3.4 adapter: the PDUs of smpp_pdu.c to and from
 * the runtime's neutral struct proto_pdu (proto.h).
 *
 * Pure like the codec: no allocation, no clock, no log. The conventions the
 * runtime and the handlers rely on:
 *
 * Framing. A command_length below 16 or above the maximum loses the PDU
 * boundaries for good, so split returns <0 with *skip 0 (close). Before it
 * closes, the runtime hands decode the bytes it holds (the 16-octet header
 * when it has one): decode answers any frame that is not exactly one PDU of
 * an acceptable length with <0, op NACK, status CMD_LEN (ESME_RINVCMDLEN) and
 * ref = its sequence_number (0 without a header), the generic_nack SMPP asks
 * for before the close.
 *
 * raw_status. In a response it is the command_status. A decoded request
 * has none, so there it is the command_id of the response SMPP expects (the
 * request's | 0x80000000). A handler that copies it into its response, as it
 * does for UCP's OT, gets data_sm answered with data_sm_resp although both
 * are PROTO_OP_SUBMIT; a SUBMIT_RESP without it is a submit_sm_resp. A
 * raw_status with bit 31 set is never sent as a command_status.
 *
 * QUERY, CANCEL, REPLACE. query_sm, cancel_sm and replace_sm decode as
 * these ops and their responses as *_RESP, the message named by msgid.
 *
 * OTHER. outbind, alert_notification and the command ids the adapter does
 * not map decode as OTHER (raw_status as above). The runtime
 * answers by encoding op OTHER with the same ref and raw_status: that makes
 * the command's own response where the codec knows one,
 * generic_nack ESME_RINVCMDID for an unknown command, and nothing (encode
 * returns 0) for outbind and alert_notification, which SMPP never answers.
 * The error is the status given, or UNSUPPORTED (ESME_RINVCMDID) while that
 * is still OK, since these are never carried out.
 *
 * Decode failures return <0 with op the response that answers: the
 * request's own (BIND_RESP, SUBMIT_RESP, DELIVER_RESP, KEEPALIVE_RESP,
 * UNBIND_RESP), NACK where the neutral model has none (data_sm, OTHER
 * commands), NONE for a response, which is never answered. status and
 * raw_status carry the error, text says what it was for the log.
 *
 * Text. data_coding 0 is taken as GSM septets as they came (not checked);
 * IA5 and Latin-1 become GSM, or UCS2 when a character has no septet; codings
 * the neutral model lacks (JIS, Cyrillic, ...) pass as 8-bit octets with the
 * data_coding in dcs, which encode sends back. sar_* TLVs become a
 * concatenation IE in the UDH; encode always sends concatenation in the UDH.
 *
 * Receipts. A deliver_sm with esm_class 0x04, 0x08 or 0x20 is a receipt
 * (is_receipt), read from its TLVs first and its text for the rest. data_sm
 * is always a SUBMIT.
 *
 * Times. validity and deferred are Unix seconds for an absolute SMPP time
 * and minus the seconds of a relative one: the adapter has no clock, so
 * whoever accepts the message adds a relative time to its acceptance time.
 * Encode writes a negative time back as relative. Receipt dates carry no
 * zone and are read and written as UTC.
 *
 * Views. A decoded message's udh and data point into the frame when the
 * text needs no conversion, else into scratch (converted text, a UDH built
 * from sar_* TLVs): both are valid during the callback that gets the pdu,
 * and must be copied (msg_clone) to outlive it.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdio.h>
#include <string.h>
#include "charset.h"
#include "sms_text.h"
#include "smpp_pdu.h"
#include "smpp_proto.h"
#include "smpp_receipt.h"

/* SMPP has no window limit of its own; this bounds the runtime's tables. */
#define SMPP_WINDOW_MAX 1000

/* Longest short_message SMPP 3.4 allows; longer payloads go in message_payload. */
#define SMPP_SM_MAX 254

/* Room for a PDU besides its payload: the header, the largest mandatory
 * body the adapter writes (submit_sm, 93 octets) and the TLVs it adds. */
#define ENCODE_OVERHEAD 512

/* scratch: a UDH built from sar_* TLVs, then converted text. */
#define SCRATCH_UDH_CAP 256

/* SMPP 3.4 names GSM's network type 3 in network_error_code. */
#define NETWORK_TYPE_GSM 3

_Static_assert((int)SMPP_STATE_ENROUTE == (int)MSG_STATE_ENROUTE &&
               (int)SMPP_STATE_REJECTED == (int)MSG_STATE_REJECTED,
               "enum msg_state takes the values of message_state");
_Static_assert(SMS_TEXT_GSM7 == 0 && SMS_TEXT_8BIT == 4 && SMS_TEXT_UCS2 == 8,
               "the neutral codings are SMPP's plain data_coding values");

static size_t max_pdu(const struct proto_options *opt)
{
  return opt && opt->max_frame ? opt->max_frame : SMPP_MAX_PDU_DEFAULT;
}

static void set_text(struct proto_pdu *pdu, const char *text)
{
  size_t n = strnlen(text, sizeof pdu->text - 1);
  memcpy(pdu->text, text, n);
  pdu->text[n] = '\0';
}

/* ---- status ---- */

enum proto_status smpp_proto_status(uint32_t command_status)
{
  switch (command_status) {
  case SMPP_ESME_ROK: return PROTO_OK;
  case SMPP_ESME_RTHROTTLED: return PROTO_E_THROTTLED;
  case SMPP_ESME_RMSGQFUL: return PROTO_E_QUEUE_FULL;
  case SMPP_ESME_RSYSERR:
  case SMPP_ESME_RX_T_APPN: return PROTO_E_TEMPORARY;
  case SMPP_ESME_RINVPASWD: return PROTO_E_AUTH_PASSWORD;
  case SMPP_ESME_RINVSYSID: return PROTO_E_AUTH_ACCOUNT;
  case SMPP_ESME_RBINDFAIL: return PROTO_E_AUTH;
  case SMPP_ESME_RINVBNDSTS: return PROTO_E_BIND_STATE;
  case SMPP_ESME_RALYBND: return PROTO_E_ALREADY_BOUND;
  case SMPP_ESME_RINVSRCADR: return PROTO_E_SOURCE;
  case SMPP_ESME_RINVDSTADR: return PROTO_E_ADDRESS;
  case SMPP_ESME_RINVMSGLEN: return PROTO_E_TOO_LONG;
  case SMPP_ESME_RINVCMDID: return PROTO_E_UNSUPPORTED;
  case SMPP_ESME_RINVCMDLEN: return PROTO_E_CMD_LEN;
  case SMPP_ESME_RINVMSGID: return PROTO_E_NO_MESSAGE;
  case SMPP_ESME_RQUERYFAIL:
  case SMPP_ESME_RCANCELFAIL:
  case SMPP_ESME_RREPLACEFAIL: return PROTO_E_MESSAGE_STATE;
  default: return PROTO_E_PERMANENT;
  }
}

uint32_t smpp_proto_command_status(enum proto_op op, enum proto_status status,
                                   uint32_t raw_status)
{
  if (raw_status && !(raw_status & SMPP_RESP_BIT) && smpp_proto_status(raw_status) == status)
    return raw_status;
  switch (status) {
  case PROTO_OK: return SMPP_ESME_ROK;
  case PROTO_E_THROTTLED: return SMPP_ESME_RTHROTTLED;
  case PROTO_E_QUEUE_FULL: return SMPP_ESME_RMSGQFUL;
  case PROTO_E_TEMPORARY:
    return op == PROTO_OP_DELIVER_RESP ? SMPP_ESME_RX_T_APPN : SMPP_ESME_RSYSERR;
  case PROTO_E_AUTH: return SMPP_ESME_RBINDFAIL;
  case PROTO_E_AUTH_ACCOUNT: return SMPP_ESME_RINVSYSID;
  case PROTO_E_AUTH_PASSWORD: return SMPP_ESME_RINVPASWD;
  case PROTO_E_SOURCE: return SMPP_ESME_RINVSRCADR;
  case PROTO_E_BIND_STATE: return SMPP_ESME_RINVBNDSTS;
  case PROTO_E_ALREADY_BOUND: return SMPP_ESME_RALYBND;
  case PROTO_E_UNSUPPORTED: return SMPP_ESME_RINVCMDID;
  case PROTO_E_ADDRESS: return SMPP_ESME_RINVDSTADR;
  case PROTO_E_TOO_LONG: return SMPP_ESME_RINVMSGLEN;
  case PROTO_E_CMD_LEN: return SMPP_ESME_RINVCMDLEN;
  case PROTO_E_NO_MESSAGE: return SMPP_ESME_RINVMSGID;
  case PROTO_E_MESSAGE_STATE:
    return op == PROTO_OP_CANCEL_RESP ? SMPP_ESME_RCANCELFAIL
           : op == PROTO_OP_REPLACE_RESP ? SMPP_ESME_RREPLACEFAIL
                                         : SMPP_ESME_RQUERYFAIL;
  default:
    return op == PROTO_OP_DELIVER_RESP  ? SMPP_ESME_RX_P_APPN
           : op == PROTO_OP_SUBMIT_RESP ? SMPP_ESME_RSUBMITFAIL
                                        : SMPP_ESME_RUNKNOWNERR;
  }
}

/* ---- times ----
 * Civil dates to Unix days and back by H. Hinnant's arithmetic (public
 * domain, "chrono-Compatible Low-Level Date Algorithms"): exact, and no
 * timegm/gmtime_r, which take glibc's time zone lock on every receipt. */

#define DAY 86400
#define REL_MONTH (30 * DAY)
#define REL_YEAR (365 * DAY)

struct civil {
  int year, mon, day, hour, min, sec;
};

static bool all_digits(const char *s, int n)
{
  for (int i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9')
      return false;
  return true;
}

/* The number in n (at most 4) decimal digits at s, or -1 when one is not a digit. */
static int digits(const char *s, int n)
{
  int v = 0;
  if (!all_digits(s, n))
    return -1;
  for (int i = 0; i < n; i++)
    v = v * 10 + (s[i] - '0');
  return v;
}

/* SMPP and receipt years have two digits. */
static int full_year(int yy)
{
  return yy < 70 ? 2000 + yy : 1900 + yy;
}

static bool civil_to_unix(const struct civil *c, int64_t *t)
{
  static const uint8_t month_days[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
  if (c->year < 1970 || c->mon < 1 || c->mon > 12 || c->day < 1 || c->hour < 0 ||
      c->hour > 23 || c->min < 0 || c->min > 59 || c->sec < 0 || c->sec > 59)
    return false;
  bool leap = c->year % 4 == 0 && (c->year % 100 != 0 || c->year % 400 == 0);
  if (c->day > month_days[c->mon - 1] + (c->mon == 2 && leap))
    return false;
  int y = c->year - (c->mon <= 2);
  int era = y / 400;
  int yoe = y - era * 400;
  int doy = (153 * (c->mon > 2 ? c->mon - 3 : c->mon + 9) + 2) / 5 + c->day - 1;
  int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  int64_t days = (int64_t)era * 146097 + doe - 719468;
  *t = days * DAY + c->hour * 3600 + c->min * 60 + c->sec;
  return true;
}

/* t >= 0 */
static void civil_from_unix(int64_t t, struct civil *c)
{
  int64_t z = t / DAY + 719468;
  int secs = (int)(t % DAY);
  int era = (int)(z / 146097);
  int doe = (int)(z - (int64_t)era * 146097);
  int yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int mp = (5 * doy + 2) / 153;
  c->day = doy - (153 * mp + 2) / 5 + 1;
  c->mon = mp < 10 ? mp + 3 : mp - 9;
  c->year = yoe + era * 400 + (c->mon <= 2);
  c->hour = secs / 3600;
  c->min = secs / 60 % 60;
  c->sec = secs % 60;
}

static char *put_digits(char *dst, int v, int n)
{
  for (int i = n - 1; i >= 0; i--, v /= 10)
    dst[i] = (char)('0' + v % 10);
  return dst + n;
}

/* YYMMDDhhmmss of c (or of the parts of a relative time). */
static char *put_yymmddhhmmss(char *p, const struct civil *c)
{
  p = put_digits(p, c->year % 100, 2);
  p = put_digits(p, c->mon, 2);
  p = put_digits(p, c->day, 2);
  p = put_digits(p, c->hour, 2);
  p = put_digits(p, c->min, 2);
  return put_digits(p, c->sec, 2);
}

int smpp_time_parse(const char *s, int64_t *t)
{
  if (!s[0]) {
    *t = 0;
    return 0;
  }
  if (strnlen(s, SMPP_TIME_LEN + 1) != SMPP_TIME_LEN || !all_digits(s, 13))
    return -1;
  struct civil c = { digits(s, 2), digits(s + 2, 2), digits(s + 4, 2),
                     digits(s + 6, 2), digits(s + 8, 2), digits(s + 10, 2) };
  if (s[15] == 'R') {
    /* Relative fields may run over their calendar range ("48 hours"). */
    int64_t secs = (int64_t)c.year * REL_YEAR + (int64_t)c.mon * REL_MONTH + (int64_t)c.day * DAY +
                   c.hour * 3600 + c.min * 60 + c.sec;
    *t = -secs;
    return 0;
  }
  int quarters = digits(s + 13, 2);
  if ((s[15] != '+' && s[15] != '-') || quarters < 0 || quarters > 48)
    return -1;
  int64_t local;
  c.year = full_year(c.year);
  if (!civil_to_unix(&c, &local))
    return -1;
  /* "+": local time is ahead of UTC by the offset */
  int64_t offset = (int64_t)quarters * 900;
  *t = s[15] == '+' ? local - offset : local + offset;
  return 0;
}

int smpp_time_format(char *dst, size_t cap, int64_t t)
{
  if (cap < SMPP_TIME_LEN + 1)
    return -1;
  if (t == 0) {
    dst[0] = '\0';
    return 0;
  }
  struct civil c;
  if (t > 0) {
    civil_from_unix(t, &c);
    if (c.year > 2069)
      return -1;
  } else {
    int64_t s = -t;
    if (s / REL_YEAR > 99)
      return -1;
    c.year = (int)(s / REL_YEAR);
    s %= REL_YEAR;
    c.mon = (int)(s / REL_MONTH);
    s %= REL_MONTH;
    c.day = (int)(s / DAY);
    s %= DAY;
    c.hour = (int)(s / 3600);
    c.min = (int)(s / 60 % 60);
    c.sec = (int)(s % 60);
  }
  char *p = put_yymmddhhmmss(dst, &c);
  memcpy(p, t > 0 ? "000+" : "000R", 5);
  return SMPP_TIME_LEN;
}

/* A receipt date: YYMMDDhhmm, YYMMDDhhmmss or YYYYMMDDhhmmss; 0 when it is
 * none of these or no real date. */
static int64_t receipt_date_parse(const char *s)
{
  size_t n = strlen(s);
  int year_digits = n == 14 ? 4 : 2;
  if (n != 10 && n != 12 && n != 14)
    return 0;
  const char *p = s + year_digits;
  int year = digits(s, year_digits);
  struct civil c = { year_digits == 2 ? full_year(year) : year, digits(p, 2), digits(p + 2, 2),
                     digits(p + 4, 2), digits(p + 6, 2), n == 10 ? 0 : digits(p + 8, 2) };
  int64_t t;
  return civil_to_unix(&c, &t) ? t : 0;
}

/* YYMMDDhhmm of t, or zeros for an unknown time (which parse back as 0). */
static void receipt_date_format(char dst[15], int64_t t)
{
  struct civil c;
  if (t <= 0) {
    memcpy(dst, "0000000000", 11);
    return;
  }
  civil_from_unix(t, &c);
  put_yymmddhhmmss(dst, &c);
  dst[10] = '\0';
}

/* ---- data_coding ---- */

/* Marks Latin-1 text (data_coding 3, and IA5/ASCII, its 7-bit subset),
 * which the neutral message has no coding for. */
#define CODING_LATIN1 0xFF

/* The neutral coding of a data_coding, and the TP-DCS that goes with it. */
static uint8_t coding_from_smpp(uint8_t dc, uint8_t *dcs)
{
  switch (dc) {
  case 0x00:
    *dcs = 0;
    return SMS_TEXT_GSM7;
  case 0x01:
  case 0x03:
    return CODING_LATIN1;
  case 0x02:
  case 0x04:
    *dcs = SMS_TEXT_8BIT;
    return SMS_TEXT_8BIT;
  case 0x08:
    *dcs = SMS_TEXT_UCS2;
    return SMS_TEXT_UCS2;
  }
  /* GSM groups keep the whole TP-DCS, class and all. */
  *dcs = dc;
  if (dc >= 0xF0) /* message class: bit 2 says 8-bit */
    return dc & 0x04 ? SMS_TEXT_8BIT : SMS_TEXT_GSM7;
  if (dc >= 0x10 && dc <= 0x1F) { /* general group with a class: SMPP-reserved, Kannel sends it */
    static const uint8_t alphabet[4] = { SMS_TEXT_GSM7, SMS_TEXT_8BIT, SMS_TEXT_UCS2, SMS_TEXT_8BIT };
    return alphabet[dc >> 2 & 3];
  }
  if (dc >= 0xC0 && dc <= 0xDF) /* message waiting, GSM text */
    return SMS_TEXT_GSM7;
  if (dc >= 0xE0) /* message waiting, UCS2 text */
    return SMS_TEXT_UCS2;
  /* JIS, Cyrillic, Hebrew, pictograms, Kanji, reserved values: octets we
   * cannot convert, passed on with the data_coding that says what they are */
  return SMS_TEXT_8BIT;
}

/* The data_coding that sends coding with the TP-DCS dcs: a message class
 * in the GSM form SMPP has for it (UCS2 has none in 0xF0-0xFF, so it goes
 * in the general group, as Kannel sends it); dcs itself when SMPP reads it
 * as this coding (message waiting groups, JIS, ...); else the plain value. */
static uint8_t coding_to_smpp(uint8_t coding, uint8_t dcs)
{
  if (coding != SMS_TEXT_GSM7 && coding != SMS_TEXT_UCS2)
    coding = SMS_TEXT_8BIT;
  if (dcs >= 0xF0 || (dcs >= 0x10 && dcs <= 0x1F)) {
    uint8_t cls = dcs & 0x03;
    return coding == SMS_TEXT_UCS2 ? 0x18 | cls : coding == SMS_TEXT_8BIT ? 0xF4 | cls : 0xF0 | cls;
  }
  uint8_t unused;
  return coding_from_smpp(dcs, &unused) == coding ? dcs : coding;
}

/* ---- registered_delivery ---- */

static uint8_t dlr_mask_from_smpp(uint8_t regdlv)
{
  /* 3 is reserved in 3.4 and "success only" in 5.0 */
  static const uint8_t receipt[4] = { 0, MSG_DLR_DELIVERED | MSG_DLR_FAILED, MSG_DLR_FAILED,
                                      MSG_DLR_DELIVERED };
  uint8_t mask = receipt[regdlv & 0x03];
  return regdlv & SMPP_REGDLV_INTERMEDIATE ? mask | MSG_DLR_BUFFERED : mask;
}

/* 3.4 cannot ask for success alone: DELIVERED asks for both final receipts
 * and the gateway drops the failures no one wanted (msg_receipt_wanted).
 * BUFFERED asks for the final ones too: only a final receipt frees the
 * message's DLR entry. */
static uint8_t dlr_mask_to_smpp(uint8_t mask)
{
  uint8_t regdlv = mask & (MSG_DLR_DELIVERED | MSG_DLR_BUFFERED) ? SMPP_REGDLV_RECEIPT_FINAL
                   : mask & MSG_DLR_FAILED  ? SMPP_REGDLV_RECEIPT_FAILURE
                                            : 0;
  return mask & MSG_DLR_BUFFERED ? regdlv | SMPP_REGDLV_INTERMEDIATE : regdlv;
}

/* ---- decode ---- */

/* What submit_sm, deliver_sm and data_sm share, whichever layout held it. */
struct sm_fields {
  const char *src, *dst;
  uint8_t src_ton, src_npi, dst_ton, dst_npi;
  uint8_t esm_class, protocol_id, priority, registered_delivery, data_coding;
  const char *schedule, *validity;
  const uint8_t *short_message;
  uint8_t sm_length;
};

static void fields_of(struct sm_fields *f, const struct smpp_pdu *p)
{
  if (p->command_id == SMPP_DATA_SM) {
    const struct smpp_data_sm *d = &p->body.data_sm;
    *f = (struct sm_fields){ d->source_addr, d->destination_addr, d->source_addr_ton,
                             d->source_addr_npi, d->dest_addr_ton, d->dest_addr_npi,
                             d->esm_class, 0, 0, d->registered_delivery, d->data_coding,
                             "", "", NULL, 0 };
    return;
  }
  const struct smpp_sm *b = &p->body.sm;
  *f = (struct sm_fields){ b->source_addr, b->destination_addr, b->source_addr_ton,
                           b->source_addr_npi, b->dest_addr_ton, b->dest_addr_npi,
                           b->esm_class, b->protocol_id, b->priority_flag,
                           b->registered_delivery, b->data_coding, b->schedule_delivery_time,
                           b->validity_period, b->short_message, b->sm_length };
  if (p->command_id == SMPP_DELIVER_SM) /* its times must be NULL: ignored, not refused */
    f->schedule = f->validity = "";
}

/* The user data: short_message, or message_payload when that is empty. */
static void user_data(const struct sm_fields *f, const struct smpp_tlvs *t, const uint8_t **ud,
                      size_t *len)
{
  if (f->sm_length || !(t->present & SMPP_TLV_BIT(message_payload))) {
    *ud = f->short_message;
    *len = f->sm_length;
  } else {
    *ud = t->message_payload.data;
    *len = t->message_payload.len;
  }
}

static bool set_addr(struct msg_addr *a, const char *addr, uint8_t ton, uint8_t npi)
{
  return msg_addr_set(a, addr, strlen(addr), ton, npi) == 0;
}

/* sar_* TLVs become a concatenation IE in front of the message's own UDH,
 * so the neutral message carries concatenation one way only. A UDH with a
 * concatenation IE of its own wins. Returns 0 or the command_status. */
static uint32_t sar_to_udh(struct msg *m, const struct smpp_tlvs *t, uint8_t *scratch)
{
  const uint32_t sar = SMPP_TLV_BIT(sar_msg_ref_num) | SMPP_TLV_BIT(sar_total_segments) |
                       SMPP_TLV_BIT(sar_segment_seqnum);
  if (!(t->present & sar))
    return 0;
  if ((t->present & sar) != sar)
    return SMPP_ESME_RMISSINGOPTPARAM;
  struct sms_text_concat own = { .total = 0 };
  if (m->udh_len && sms_text_udh_parse(m->udh, m->udh_len, &own) >= 0 && own.total)
    return 0;
  struct sms_text_concat c = { t->sar_msg_ref_num <= 0xFF ? SMS_TEXT_REF8 : SMS_TEXT_REF16,
                               t->sar_msg_ref_num, t->sar_total_segments, t->sar_segment_seqnum };
  int n = sms_text_udh_build(scratch, SCRATCH_UDH_CAP, &c, m->udh_len ? m->udh + 1 : NULL,
                             m->udh_len ? m->udh_len - 1u : 0);
  if (n < 0)
    return SMPP_ESME_RINVOPTPARAMVAL;
  m->udh = scratch;
  m->udh_len = (uint16_t)n;
  return 0;
}

/* Latin-1 text as GSM 7-bit when every character has a septet, else UCS2:
 * by way of UTF-8 in the upper half of out, the result in the lower half. */
static uint32_t latin1_to_msg(struct msg *m, const uint8_t *text, size_t len, uint8_t *out,
                              size_t cap)
{
  size_t half = cap / 2;
  char *utf8 = (char *)out + half;
  int n = charset_latin1_to_utf8(utf8, half, text, len);
  if (n < 0)
    return SMPP_ESME_RINVMSGLEN;
  int k = charset_utf8_to_gsm(out, half, utf8, (size_t)n, 0);
  m->coding = SMS_TEXT_GSM7;
  if (k == CHARSET_E_UNREPRESENTABLE) {
    k = charset_utf8_to_ucs2(out, half, utf8, (size_t)n);
    m->coding = SMS_TEXT_UCS2;
  }
  if (k < 0)
    return SMPP_ESME_RINVMSGLEN;
  m->dcs = m->coding;
  m->data = out;
  m->data_len = (uint32_t)k;
  return 0;
}

/* submit_sm, data_sm or an MO deliver_sm into pdu->msg. Returns 0 or the
 * command_status that refuses it, with pdu->text set. */
static uint32_t decode_message(struct proto_pdu *pdu, const struct smpp_pdu *p,
                               const struct sm_fields *f, uint8_t *scratch)
{
  struct msg *m = &pdu->msg;
  const uint8_t *ud;
  size_t len;
  if (!set_addr(&m->src, f->src, f->src_ton, f->src_npi)) {
    set_text(pdu, "source_addr too long");
    return SMPP_ESME_RINVSRCADR;
  }
  if (!set_addr(&m->dst, f->dst, f->dst_ton, f->dst_npi)) {
    set_text(pdu, "destination_addr too long");
    return SMPP_ESME_RINVDSTADR;
  }
  if (smpp_time_parse(f->validity, &m->validity) < 0) {
    set_text(pdu, "bad validity_period");
    return SMPP_ESME_RINVEXPIRY;
  }
  if (smpp_time_parse(f->schedule, &m->deferred) < 0) {
    set_text(pdu, "bad schedule_delivery_time");
    return SMPP_ESME_RINVSCHED;
  }
  m->pid = f->protocol_id;
  m->priority = f->priority > 3 ? 3 : f->priority; /* GSM has four levels; be lenient */
  m->dlr_mask = dlr_mask_from_smpp(f->registered_delivery);
  if (p->tlv.present & SMPP_TLV_BIT(more_messages_to_send))
    m->mms = p->tlv.more_messages_to_send;

  user_data(f, &p->tlv, &ud, &len);
  if (f->esm_class & SMPP_ESM_UDHI) {
    if (len == 0 || 1u + ud[0] > len) {
      set_text(pdu, "UDHI set but the UDH overruns the message");
      return SMPP_ESME_RINVESMCLASS;
    }
    m->udh = ud;
    m->udh_len = (uint16_t)(1 + ud[0]);
    ud += m->udh_len;
    len -= m->udh_len;
  }
  uint32_t status = sar_to_udh(m, &p->tlv, scratch);
  if (status) {
    set_text(pdu, "sar_* TLVs incomplete or invalid");
    return status;
  }

  m->coding = coding_from_smpp(f->data_coding, &m->dcs);
  if (m->coding == CODING_LATIN1) {
    status = latin1_to_msg(m, ud, len, scratch + SCRATCH_UDH_CAP,
                           PROTO_SCRATCH_LEN - SCRATCH_UDH_CAP);
    if (status)
      set_text(pdu, "Latin-1 text too long to convert");
    return status;
  }
  m->data = ud;
  m->data_len = (uint32_t)len;
  return 0;
}

/* A deliver_sm receipt into pdu->receipt: the TLVs first, as Kannel reads
 * them, the text for what they lack (and for the dates, which only it has).
 * Returns 0 or the command_status that refuses it. */
static uint32_t decode_receipt(struct proto_pdu *pdu, const struct smpp_pdu *p,
                               const struct sm_fields *f)
{
  const struct smpp_tlvs *t = &p->tlv;
  struct msg_receipt *r = &pdu->receipt;
  struct smpp_receipt text;
  const uint8_t *ud;
  size_t len;
  user_data(f, t, &ud, &len);
  if (smpp_receipt_parse(&text, (const char *)ud, len) < 0)
    text.present = 0;

  if (t->present & SMPP_TLV_BIT(receipted_message_id))
    SMPP_CSTR_SET(r->id, t->receipted_message_id);
  else if (text.present & SMPP_RCPT_ID)
    SMPP_CSTR_SET(r->id, text.id);
  if (!r->id[0]) {
    /* nothing to match it to: the SMSC should not send it again */
    set_text(pdu, "receipt without a message id");
    return SMPP_ESME_RX_P_APPN;
  }
  if (t->present & SMPP_TLV_BIT(message_state) && smpp_state_stat(t->message_state))
    r->state = t->message_state;
  else if (text.present & SMPP_RCPT_STAT)
    r->state = text.state;
  else
    r->state = MSG_STATE_UNKNOWN;
  if (t->present & SMPP_TLV_BIT(network_error_code))
    r->err = (uint16_t)t->network_error_code;
  else if (text.present & SMPP_RCPT_ERR)
    r->err = (uint16_t)text.err;
  if (text.present & SMPP_RCPT_SUBMIT_DATE)
    r->submit_time = receipt_date_parse(text.submit_date);
  if (text.present & SMPP_RCPT_DONE_DATE)
    r->done_time = receipt_date_parse(text.done_date);
  /* the receipt travels back: its source is the message's recipient */
  set_addr(&r->src, f->dst, f->dst_ton, f->dst_npi);
  set_addr(&r->dst, f->src, f->src_ton, f->src_npi);
  pdu->is_receipt = true;
  return 0;
}

/* query_sm, cancel_sm and replace_sm: the message they are about. Returns
 * 0 or the command_status that refuses the request, with pdu->text set. */
static uint32_t decode_about(struct proto_pdu *pdu, const struct smpp_pdu *p)
{
  struct msg *m = &pdu->msg;
  const char *id, *src;
  uint8_t ton, npi;
  switch (p->command_id) {
  case SMPP_QUERY_SM:
    id = p->body.query_sm.message_id;
    src = p->body.query_sm.source_addr;
    ton = p->body.query_sm.source_addr_ton;
    npi = p->body.query_sm.source_addr_npi;
    break;
  case SMPP_CANCEL_SM: {
    const struct smpp_cancel_sm *b = &p->body.cancel_sm;
    id = b->message_id;
    src = b->source_addr;
    ton = b->source_addr_ton;
    npi = b->source_addr_npi;
    if (!set_addr(&m->dst, b->destination_addr, b->dest_addr_ton, b->dest_addr_npi)) {
      set_text(pdu, "destination_addr too long");
      return SMPP_ESME_RINVDSTADR;
    }
    break;
  }
  default: {
    const struct smpp_replace_sm *b = &p->body.replace_sm;
    id = b->message_id;
    src = b->source_addr;
    ton = b->source_addr_ton;
    npi = b->source_addr_npi;
    if (smpp_time_parse(b->validity_period, &m->validity) < 0) {
      set_text(pdu, "bad validity_period");
      return SMPP_ESME_RINVEXPIRY;
    }
    if (smpp_time_parse(b->schedule_delivery_time, &m->deferred) < 0) {
      set_text(pdu, "bad schedule_delivery_time");
      return SMPP_ESME_RINVSCHED;
    }
    m->dlr_mask = dlr_mask_from_smpp(b->registered_delivery);
    m->data = b->short_message;
    m->data_len = b->sm_length;
    break;
  }
  }
  /* Only a bulk cancel (by service_type and addresses) goes without an
   * id, and the gateway does not offer it. */
  if (!id[0]) {
    set_text(pdu, "no message_id");
    return p->command_id == SMPP_CANCEL_SM ? SMPP_ESME_RCANCELFAIL : SMPP_ESME_RINVMSGID;
  }
  SMPP_CSTR_SET(pdu->msgid, id);
  if (!set_addr(&m->src, src, ton, npi)) {
    set_text(pdu, "source_addr too long");
    return SMPP_ESME_RINVSRCADR;
  }
  return 0;
}

static enum proto_bind_mode bind_mode_of(uint32_t command_id)
{
  switch (command_id & ~SMPP_RESP_BIT) {
  case SMPP_BIND_TRANSMITTER: return PROTO_BIND_TX;
  case SMPP_BIND_RECEIVER: return PROTO_BIND_RX;
  default: return PROTO_BIND_TRX;
  }
}

/* The neutral op that answers a request of this command, NACK where the
 * model has none, NONE for a response (never answered). */
static enum proto_op answer_op(uint32_t command_id)
{
  switch (command_id) {
  case SMPP_BIND_TRANSMITTER:
  case SMPP_BIND_RECEIVER:
  case SMPP_BIND_TRANSCEIVER: return PROTO_OP_BIND_RESP;
  case SMPP_SUBMIT_SM: return PROTO_OP_SUBMIT_RESP;
  case SMPP_DELIVER_SM: return PROTO_OP_DELIVER_RESP;
  case SMPP_ENQUIRE_LINK: return PROTO_OP_KEEPALIVE_RESP;
  case SMPP_UNBIND: return PROTO_OP_UNBIND_RESP;
  case SMPP_QUERY_SM: return PROTO_OP_QUERY_RESP;
  case SMPP_CANCEL_SM: return PROTO_OP_CANCEL_RESP;
  case SMPP_REPLACE_SM: return PROTO_OP_REPLACE_RESP;
  default: return command_id & SMPP_RESP_BIT ? PROTO_OP_NONE : PROTO_OP_NACK;
  }
}

/* Answers with op and command_status; returns <0 for decode. */
static int refuse(struct proto_pdu *pdu, enum proto_op op, uint32_t status)
{
  pdu->op = op;
  pdu->status = smpp_proto_status(status);
  pdu->raw_status = status;
  return -1;
}

/* A request of command_id refused with command_status. */
static int refuse_request(struct proto_pdu *pdu, uint32_t command_id, uint32_t status)
{
  enum proto_op op = answer_op(command_id);
  if (op == PROTO_OP_BIND_RESP)
    pdu->bind_mode = bind_mode_of(command_id);
  return refuse(pdu, op, status);
}

static uint32_t get_be32(const uint8_t *p)
{
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int smpp_proto_decode(struct proto_pdu *pdu, const uint8_t *frame, size_t len,
                             uint8_t *scratch, const struct proto_options *opt)
{
  struct smpp_pdu p;
  memset(pdu, 0, sizeof *pdu);
  int n = smpp_split(frame, len, max_pdu(opt));
  if (n <= 0 || (size_t)n != len) {
    pdu->ref = len >= SMPP_HEADER_LEN ? get_be32(frame + 12) : 0;
    set_text(pdu, smpp_strerror(SMPP_ERR_CMD_LEN));
    return refuse(pdu, PROTO_OP_NACK, SMPP_ESME_RINVCMDLEN);
  }
  int rc = smpp_pdu_decode(&p, frame, len);
  uint32_t id = p.command_id;
  bool response = id & SMPP_RESP_BIT;
  pdu->ref = p.sequence_number;
  if (rc == SMPP_ERR_CMD_ID && !response) {
    pdu->op = PROTO_OP_OTHER;
    pdu->raw_status = id | SMPP_RESP_BIT;
    set_text(pdu, smpp_strerror(rc));
    return 0;
  }
  if (rc != SMPP_OK) {
    set_text(pdu, smpp_strerror(rc));
    return refuse_request(pdu, id, smpp_error_status(rc));
  }

  pdu->raw_status = response ? p.command_status : id | SMPP_RESP_BIT;
  pdu->status = response ? smpp_proto_status(p.command_status) : PROTO_OK;
  struct sm_fields f;
  uint32_t refused;
  switch (id) {
  case SMPP_BIND_TRANSMITTER:
  case SMPP_BIND_RECEIVER:
  case SMPP_BIND_TRANSCEIVER:
    pdu->op = PROTO_OP_BIND;
    pdu->bind_mode = bind_mode_of(id);
    SMPP_CSTR_SET(pdu->user, p.body.bind.system_id);
    SMPP_CSTR_SET(pdu->password, p.body.bind.password);
    return 0;
  case SMPP_BIND_TRANSMITTER_RESP:
  case SMPP_BIND_RECEIVER_RESP:
  case SMPP_BIND_TRANSCEIVER_RESP:
    pdu->op = PROTO_OP_BIND_RESP;
    pdu->bind_mode = bind_mode_of(id);
    SMPP_CSTR_SET(pdu->user, p.body.bind_resp.system_id);
    return 0;
  case SMPP_SUBMIT_SM:
  case SMPP_DATA_SM:
  case SMPP_DELIVER_SM:
    pdu->op = id == SMPP_DELIVER_SM ? PROTO_OP_DELIVER : PROTO_OP_SUBMIT;
    fields_of(&f, &p);
    refused = id == SMPP_DELIVER_SM && (f.esm_class & SMPP_ESM_RECEIPT_MASK)
                ? decode_receipt(pdu, &p, &f)
                : decode_message(pdu, &p, &f, scratch);
    return refused ? refuse_request(pdu, id, refused) : 0;
  case SMPP_SUBMIT_SM_RESP:
  case SMPP_DATA_SM_RESP:
    pdu->op = PROTO_OP_SUBMIT_RESP;
    SMPP_CSTR_SET(pdu->msgid, p.body.sm_resp.message_id);
    return 0;
  case SMPP_DELIVER_SM_RESP: pdu->op = PROTO_OP_DELIVER_RESP; return 0;
  case SMPP_QUERY_SM:
  case SMPP_CANCEL_SM:
  case SMPP_REPLACE_SM:
    pdu->op = id == SMPP_QUERY_SM ? PROTO_OP_QUERY : id == SMPP_CANCEL_SM ? PROTO_OP_CANCEL : PROTO_OP_REPLACE;
    refused = decode_about(pdu, &p);
    return refused ? refuse_request(pdu, id, refused) : 0;
  case SMPP_QUERY_SM_RESP:
    pdu->op = PROTO_OP_QUERY_RESP;
    SMPP_CSTR_SET(pdu->msgid, p.body.query_sm_resp.message_id);
    pdu->receipt.state = p.body.query_sm_resp.message_state;
    pdu->receipt.err = p.body.query_sm_resp.error_code;
    if (smpp_time_parse(p.body.query_sm_resp.final_date, &pdu->receipt.done_time) < 0 ||
        pdu->receipt.done_time < 0)
      pdu->receipt.done_time = 0;   /* a bad date does not hide the state */
    return 0;
  case SMPP_CANCEL_SM_RESP: pdu->op = PROTO_OP_CANCEL_RESP; return 0;
  case SMPP_REPLACE_SM_RESP: pdu->op = PROTO_OP_REPLACE_RESP; return 0;
  case SMPP_ENQUIRE_LINK: pdu->op = PROTO_OP_KEEPALIVE; return 0;
  case SMPP_ENQUIRE_LINK_RESP: pdu->op = PROTO_OP_KEEPALIVE_RESP; return 0;
  case SMPP_UNBIND: pdu->op = PROTO_OP_UNBIND; return 0;
  case SMPP_UNBIND_RESP: pdu->op = PROTO_OP_UNBIND_RESP; return 0;
  case SMPP_GENERIC_NACK: pdu->op = PROTO_OP_NACK; return 0;
  default:
    set_text(pdu, smpp_command_name(id));
    if (response) /* outbind_resp and the like: we never ask */
      return -1;
    pdu->op = PROTO_OP_OTHER;
    return 0;
  }
}

/* ---- encode ---- */

/* Encodes p into out, with a payload (udh then data) only when p is a
 * submit_sm or deliver_sm. The wire wants the two as one octet string: when there is a UDH they are staged just
 * past the room the PDU itself may take, in the same reservation, so it
 * costs one copy and no buffer of our own. Returns the length or <0. */
static int emit(struct iobuf *out, struct smpp_pdu *p, const uint8_t *udh, size_t udh_len,
                const uint8_t *data, size_t data_len)
{
  size_t payload = udh_len + data_len;
  size_t room = ENCODE_OVERHEAD + payload;
  if (payload > UINT16_MAX)
    return SMPP_ERR_SM_LENGTH;
  uint8_t *buf = iobuf_reserve(out, room + (udh_len ? payload : 0));
  if (!buf)
    return SMPP_ERR_NO_SPACE;
  const uint8_t *ud = data;
  if (udh_len) {
    uint8_t *stage = buf + room;
    memcpy(stage, udh, udh_len);
    if (data_len)
      memcpy(stage + udh_len, data, data_len);
    ud = stage;
  }
  if (payload > SMPP_SM_MAX) {
    p->tlv.message_payload = (struct smpp_octets){ ud, (uint16_t)payload };
    p->tlv.present |= SMPP_TLV_BIT(message_payload);
  } else if (payload) {
    p->body.sm.short_message = ud;
    p->body.sm.sm_length = (uint8_t)payload;
  }
  int n = smpp_pdu_encode(p, buf, room);
  if (n > 0)
    iobuf_commit(out, (size_t)n);
  return n;
}

static int encode_addrs(struct smpp_sm *b, const struct msg_addr *src, const struct msg_addr *dst)
{
  if (!SMPP_CSTR_SET(b->source_addr, src->addr))
    return SMPP_ERR_SOURCE_ADDR;
  if (!SMPP_CSTR_SET(b->destination_addr, dst->addr))
    return SMPP_ERR_DEST_ADDR;
  b->source_addr_ton = src->ton;
  b->source_addr_npi = src->npi;
  b->dest_addr_ton = dst->ton;
  b->dest_addr_npi = dst->npi;
  return SMPP_OK;
}

/* A message as submit_sm or (MO) deliver_sm, where times must stay empty. */
static int encode_message(struct iobuf *out, struct smpp_pdu *p, const struct msg *m)
{
  struct smpp_sm *b = &p->body.sm;
  int rc = encode_addrs(b, &m->src, &m->dst);
  if (rc != SMPP_OK)
    return rc;
  if (p->command_id == SMPP_SUBMIT_SM) {
    if (smpp_time_format(b->validity_period, sizeof b->validity_period, m->validity) < 0)
      return SMPP_ERR_VALIDITY;
    if (smpp_time_format(b->schedule_delivery_time, sizeof b->schedule_delivery_time,
                         m->deferred) < 0)
      return SMPP_ERR_SCHEDULE;
  }
  b->esm_class = m->udh_len ? SMPP_ESM_UDHI : 0;
  b->protocol_id = m->pid;
  b->priority_flag = m->priority;
  b->registered_delivery = dlr_mask_to_smpp(m->dlr_mask);
  b->data_coding = coding_to_smpp(m->coding, m->dcs);
  if (m->mms) {
    p->tlv.more_messages_to_send = m->mms;
    p->tlv.present |= SMPP_TLV_BIT(more_messages_to_send);
  }
  return emit(out, p, m->udh, m->udh_len, m->data, m->data_len);
}

/* A receipt as deliver_sm: the text every ESME parses plus the TLVs that
 * SMPP 3.4 defines for it. */
static int encode_receipt(struct iobuf *out, struct smpp_pdu *p, const struct msg_receipt *r)
{
  struct smpp_sm *b = &p->body.sm;
  struct smpp_receipt fields = { .sub = 1, .dlvrd = r->state == MSG_STATE_DELIVERED,
                                 .state = r->state, .err = r->err };
  char text[SMPP_SM_MAX + 1];
  /* it travels back: from the message's recipient to its sender */
  int rc = encode_addrs(b, &r->dst, &r->src);
  if (rc != SMPP_OK)
    return rc;
  if (!SMPP_CSTR_SET(fields.id, r->id) || !SMPP_CSTR_SET(p->tlv.receipted_message_id, r->id))
    return SMPP_ERR_MESSAGE_ID;
  receipt_date_format(fields.submit_date, r->submit_time);
  receipt_date_format(fields.done_date, r->done_time);
  int n = smpp_receipt_format(text, sizeof text, &fields);
  if (n < 0)
    return SMPP_ERR_TLV_VALUE; /* a state message_state cannot carry */
  b->esm_class = msg_state_final(r->state) ? SMPP_ESM_SMSC_RECEIPT : SMPP_ESM_INTERMEDIATE;
  p->tlv.message_state = r->state;
  p->tlv.present |= SMPP_TLV_BIT(receipted_message_id) | SMPP_TLV_BIT(message_state);
  if (r->err) {
    p->tlv.network_error_code = (uint32_t)NETWORK_TYPE_GSM << 16 | r->err;
    p->tlv.present |= SMPP_TLV_BIT(network_error_code);
  }
  return emit(out, p, NULL, 0, (const uint8_t *)text, (size_t)n);
}

static uint32_t bind_command(enum proto_bind_mode mode)
{
  switch (mode) {
  case PROTO_BIND_TX: return SMPP_BIND_TRANSMITTER;
  case PROTO_BIND_RX: return SMPP_BIND_RECEIVER;
  case PROTO_BIND_TRX: return SMPP_BIND_TRANSCEIVER;
  default: return 0;
  }
}

/* A PDU with an empty body: the command and, for a response, its status. */
static int emit_empty(struct iobuf *out, struct smpp_pdu *p, uint32_t command_id, uint32_t ref,
                      uint32_t status)
{
  smpp_pdu_init(p, command_id, ref);
  if (command_id & SMPP_RESP_BIT)
    p->command_status = status;
  return emit(out, p, NULL, 0, NULL, 0);
}

/* The ops whose PDU has an empty body, and their commands. */
static const uint32_t empty_commands[] = {
  [PROTO_OP_DELIVER_RESP] = SMPP_DELIVER_SM_RESP,
  [PROTO_OP_KEEPALIVE] = SMPP_ENQUIRE_LINK,
  [PROTO_OP_KEEPALIVE_RESP] = SMPP_ENQUIRE_LINK_RESP,
  [PROTO_OP_UNBIND] = SMPP_UNBIND,
  [PROTO_OP_UNBIND_RESP] = SMPP_UNBIND_RESP,
  [PROTO_OP_NACK] = SMPP_GENERIC_NACK,
  [PROTO_OP_CANCEL_RESP] = SMPP_CANCEL_SM_RESP,
  [PROTO_OP_REPLACE_RESP] = SMPP_REPLACE_SM_RESP,
};

/* The answer to an OTHER request, see the top of this file. */
static int encode_other(struct iobuf *out, struct smpp_pdu *p, const struct proto_pdu *pdu)
{
  uint32_t resp = pdu->raw_status;
  if (resp == (SMPP_OUTBIND | SMPP_RESP_BIT) || resp == (SMPP_ALERT_NOTIFICATION | SMPP_RESP_BIT))
    return 0;
  if (!(resp & SMPP_RESP_BIT) || !smpp_command_name(resp))
    return emit_empty(out, p, SMPP_GENERIC_NACK, pdu->ref, SMPP_ESME_RINVCMDID);
  enum proto_status status = pdu->status == PROTO_OK ? PROTO_E_UNSUPPORTED : pdu->status;
  return emit_empty(out, p, resp, pdu->ref, smpp_proto_command_status(PROTO_OP_OTHER, status, 0));
}

/* query_sm, cancel_sm and replace_sm, about the message pdu->msgid. */
static int encode_about(struct iobuf *out, struct smpp_pdu *p, const struct proto_pdu *pdu)
{
  static const uint32_t commands[] = { [PROTO_OP_QUERY] = SMPP_QUERY_SM, [PROTO_OP_CANCEL] = SMPP_CANCEL_SM,
                                       [PROTO_OP_REPLACE] = SMPP_REPLACE_SM };
  const struct msg *m = &pdu->msg;
  smpp_pdu_init(p, commands[pdu->op], pdu->ref);
  char *id, *src;
  uint8_t *ton, *npi;
  if (pdu->op == PROTO_OP_QUERY) {
    id = p->body.query_sm.message_id;
    src = p->body.query_sm.source_addr;
    ton = &p->body.query_sm.source_addr_ton;
    npi = &p->body.query_sm.source_addr_npi;
  } else if (pdu->op == PROTO_OP_CANCEL) {
    struct smpp_cancel_sm *b = &p->body.cancel_sm;
    id = b->message_id;
    src = b->source_addr;
    ton = &b->source_addr_ton;
    npi = &b->source_addr_npi;
    if (!SMPP_CSTR_SET(b->destination_addr, m->dst.addr))
      return SMPP_ERR_DEST_ADDR;
    b->dest_addr_ton = m->dst.ton;
    b->dest_addr_npi = m->dst.npi;
  } else {
    struct smpp_replace_sm *b = &p->body.replace_sm;
    id = b->message_id;
    src = b->source_addr;
    ton = &b->source_addr_ton;
    npi = &b->source_addr_npi;
    if (smpp_time_format(b->validity_period, sizeof b->validity_period, m->validity) < 0)
      return SMPP_ERR_VALIDITY;
    if (smpp_time_format(b->schedule_delivery_time, sizeof b->schedule_delivery_time, m->deferred) < 0)
      return SMPP_ERR_SCHEDULE;
    b->registered_delivery = dlr_mask_to_smpp(m->dlr_mask);
    if (m->data_len > SMPP_SM_MAX)
      return SMPP_ERR_SM_LENGTH;
    b->short_message = m->data;
    b->sm_length = (uint8_t)m->data_len;
  }
  /* All three bodies size the id and the source as query_sm does. */
  if (!smpp_cstr_set(id, sizeof p->body.query_sm.message_id, pdu->msgid))
    return SMPP_ERR_MESSAGE_ID;
  if (!smpp_cstr_set(src, sizeof p->body.query_sm.source_addr, m->src.addr))
    return SMPP_ERR_SOURCE_ADDR;
  *ton = m->src.ton;
  *npi = m->src.npi;
  return emit(out, p, NULL, 0, NULL, 0);
}

static int encode_query_resp(struct iobuf *out, struct smpp_pdu *p, const struct proto_pdu *pdu, uint32_t status)
{
  smpp_pdu_init(p, SMPP_QUERY_SM_RESP, pdu->ref);
  p->command_status = status; /* an error goes out as the header alone */
  if (!SMPP_CSTR_SET(p->body.query_sm_resp.message_id, pdu->msgid))
    return SMPP_ERR_MESSAGE_ID;
  if (pdu->receipt.done_time > 0 &&
      smpp_time_format(p->body.query_sm_resp.final_date, sizeof p->body.query_sm_resp.final_date,
                       pdu->receipt.done_time) < 0)
    return SMPP_ERR_FINAL_DATE;
  p->body.query_sm_resp.message_state = pdu->receipt.state;
  p->body.query_sm_resp.error_code = (uint8_t)(pdu->receipt.err > 255 ? 255 : pdu->receipt.err);
  return emit(out, p, NULL, 0, NULL, 0);
}

static int smpp_proto_encode(const struct proto_pdu *pdu, struct iobuf *out,
                             const struct proto_options *opt)
{
  struct smpp_pdu p;
  uint32_t status = smpp_proto_command_status(pdu->op, pdu->status, pdu->raw_status);
  uint32_t id;
  switch (pdu->op) {
  case PROTO_OP_BIND:
    if (!(id = bind_command(pdu->bind_mode)))
      return SMPP_ERR_CMD_ID;
    smpp_pdu_init(&p, id, pdu->ref);
    if (!SMPP_CSTR_SET(p.body.bind.system_id, pdu->user))
      return SMPP_ERR_SYSTEM_ID;
    if (!SMPP_CSTR_SET(p.body.bind.password, pdu->password))
      return SMPP_ERR_PASSWORD;
    p.body.bind.interface_version = SMPP_VERSION_34;
    return emit(out, &p, NULL, 0, NULL, 0);
  case PROTO_OP_BIND_RESP:
    if (!(id = bind_command(pdu->bind_mode)))
      return SMPP_ERR_CMD_ID;
    smpp_pdu_init(&p, id | SMPP_RESP_BIT, pdu->ref);
    p.command_status = status; /* an error goes out as the header alone */
    if (!SMPP_CSTR_SET(p.body.bind_resp.system_id, pdu->user))
      return SMPP_ERR_SYSTEM_ID;
    if (status == SMPP_ESME_ROK) { /* tells the ESME we take TLVs */
      p.tlv.sc_interface_version = SMPP_VERSION_34;
      p.tlv.present |= SMPP_TLV_BIT(sc_interface_version);
    }
    return emit(out, &p, NULL, 0, NULL, 0);
  case PROTO_OP_SUBMIT:
    smpp_pdu_init(&p, SMPP_SUBMIT_SM, pdu->ref);
    return encode_message(out, &p, &pdu->msg);
  case PROTO_OP_SUBMIT_RESP:
    id = pdu->raw_status == SMPP_DATA_SM_RESP ? SMPP_DATA_SM_RESP : SMPP_SUBMIT_SM_RESP;
    smpp_pdu_init(&p, id, pdu->ref);
    p.command_status = status; /* an error goes out as the header alone */
    if (!SMPP_CSTR_SET(p.body.sm_resp.message_id, pdu->msgid))
      return SMPP_ERR_MESSAGE_ID;
    return emit(out, &p, NULL, 0, NULL, 0);
  case PROTO_OP_DELIVER:
    smpp_pdu_init(&p, SMPP_DELIVER_SM, pdu->ref);
    return pdu->is_receipt ? encode_receipt(out, &p, &pdu->receipt)
                           : encode_message(out, &p, &pdu->msg);
  case PROTO_OP_OTHER:
    return encode_other(out, &p, pdu);
  case PROTO_OP_QUERY:
  case PROTO_OP_CANCEL:
  case PROTO_OP_REPLACE:
    return encode_about(out, &p, pdu);
  case PROTO_OP_QUERY_RESP:
    return encode_query_resp(out, &p, pdu, status);
  default:
    if (pdu->op >= sizeof empty_commands / sizeof empty_commands[0] || !empty_commands[pdu->op])
      return SMPP_ERR_CMD_ID;
    return emit_empty(out, &p, empty_commands[pdu->op], pdu->ref, status);
  }
}

static int smpp_proto_split(const uint8_t *buf, size_t len, const struct proto_options *opt,
                            size_t *skip)
{
  *skip = 0; /* see "Framing" at the top */
  return smpp_split(buf, len, max_pdu(opt));
}

static void smpp_proto_describe(enum proto_op op, enum proto_status status, uint32_t raw_status, char *buf,
                                size_t cap)
{
  uint32_t code = raw_status && !(raw_status & SMPP_RESP_BIT) ? raw_status
                                                              : smpp_proto_command_status(op, status, 0);
  const char *name = smpp_status_name(code);
  if (name)
    snprintf(buf, cap, "%s (0x%02x)", name, code);
  else
    snprintf(buf, cap, "command_status 0x%08x", code);
}

const struct proto_ops smpp_proto_ops = {
  .name = "smpp",
  .ref_first = 1,
  .ref_count = 0x7FFFFFFF, /* sequence_number 0x00000001..0x7FFFFFFF */
  .window_max = SMPP_WINDOW_MAX,
  .has_unbind = true,
  .passes_about = true,
  .split = smpp_proto_split,
  .decode = smpp_proto_decode,
  .encode = smpp_proto_encode,
  .describe = smpp_proto_describe,
};
