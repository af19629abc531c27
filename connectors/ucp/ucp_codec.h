/* ucp_codec.h - UCP/EMI frames: splitting a byte stream, decoding and encoding
 * operations 01, 31, 51, 52, 53, 60, 61 and their results, and the field
 * encodings inside them (IRA-hex, packed alphanumeric OAdC, XSer, time stamps).
 *
 * Pure code: no I/O, no allocation, no logging, no mutable state. Every
 * function is safe to call from any thread on distinct arguments.
 *
 * Ownership: decoded fields are slices (pointer + length) into the frame
 * buffer given to ucp_decode(); they are valid only while that buffer is
 * unchanged and alive. Nothing is NUL-terminated. To encode, point the slices
 * at any memory that lives until ucp_encode() returns.
 *
 * Errors are the negative UCP_E_* codes below; ucp_error_ec() maps them to the
 * EC the NACK must carry (doc/ucp.md 4).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_UCP_CODEC_H
#define EMG_UCP_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define UCP_STX 0x02
#define UCP_ETX 0x03
/* Smallest possible frame: STX, "TT/LLLLL/O/OT/", two checksum digits, ETX. */
#define UCP_FRAME_MIN 18
/* LEN has 5 digits, so a frame is at most 99999 + 2 bytes. */
#define UCP_FRAME_MAX (99999 + 2)

enum ucp_error {
  /* splitter: cannot be answered, skip and resynchronise */
  UCP_E_GARBAGE = -1,   /* bytes before an STX */
  UCP_E_TRUNCATED = -2, /* an STX came before this frame's ETX */
  UCP_E_TOO_LONG = -3,  /* no ETX within the maximum frame length */
  UCP_E_HEADER = -4,    /* the frame does not start "TT/LLLLL/O|R/OT/" */
  /* decoder: answered with a NACK */
  UCP_E_CHECKSUM = -5,  /* EC 01 */
  UCP_E_SYNTAX = -6,    /* EC 02: field count, a bad character, length, LEN */
  UCP_E_OT = -7,        /* EC 03: operation type not supported */
  UCP_E_MT = -8,        /* EC 23: message type not supported */
  /* encoder and helpers */
  UCP_E_SPACE = -9,     /* destination too small */
  UCP_E_INVALID = -10   /* a value the protocol cannot carry */
};

/* Bytes of text, not NUL-terminated. */
struct ucp_slice {
  const char *p;
  size_t len;
};

/* A slice of a string literal, for building messages. */
#define UCP_STR(lit) ((struct ucp_slice){ (lit), sizeof(lit) - 1 })

/* ---- field lists (generated from ucp_fields.def) ---- */

#define UCP_FIELD_ENUM_01(ID, m, name, kind, min, max) UCP_01_##ID,
#define UCP_FIELD_ENUM_31(ID, m, name, kind, min, max) UCP_31_##ID,
#define UCP_FIELD_ENUM_5X(ID, m, name, kind, min, max) UCP_5X_##ID,
#define UCP_FIELD_ENUM_60(ID, m, name, kind, min, max) UCP_60_##ID,
#define UCP_FIELD_ENUM_61(ID, m, name, kind, min, max) UCP_61_##ID,

/* Field indices in wire order; UCP_xx_NFIELDS is the count the spec fixes. */
#define UCP_F01 UCP_FIELD_ENUM_01
enum ucp_field_01 {
#include "ucp_fields.def"
  UCP_01_NFIELDS
};
#define UCP_F31 UCP_FIELD_ENUM_31
enum ucp_field_31 {
#include "ucp_fields.def"
  UCP_31_NFIELDS
};
#define UCP_F5X UCP_FIELD_ENUM_5X
enum ucp_field_5x {
#include "ucp_fields.def"
  UCP_5X_NFIELDS
};
#define UCP_F60 UCP_FIELD_ENUM_60
enum ucp_field_60 {
#include "ucp_fields.def"
  UCP_60_NFIELDS
};
#define UCP_F61 UCP_FIELD_ENUM_61
enum ucp_field_61 {
#include "ucp_fields.def"
  UCP_61_NFIELDS
};

/* Members: one slice per field; INT fields also as an int in `v`. */
#define UCP_FIELD_SLICE(ID, m, name, kind, min, max) struct ucp_slice m;
#define UCP_FIELD_VAL(ID, m, name, kind, min, max) UCP_VAL_##kind(m)
#define UCP_VAL_INT(m) int m;
#define UCP_VAL_NUM(m)
#define UCP_VAL_ADDR(m)
#define UCP_VAL_XADDR(m)
#define UCP_VAL_TEXT(m)
#define UCP_VAL_HEX(m)
#define UCP_VAL_XDIG(m)

/* The ops' structs: f[UCP_xx_FIELD] and the named member are the same slice.
 * v holds the INT fields parsed (-1 when the field is empty); decode fills
 * it, encode ignores it (the slices are what is written). */
#define UCP_F01 UCP_FIELD_VAL
struct ucp_vals_01 {
#include "ucp_fields.def"
};
#define UCP_F01 UCP_FIELD_SLICE
struct ucp_op01 {
  union {
    struct ucp_slice f[UCP_01_NFIELDS];
    struct {
#include "ucp_fields.def"
    };
  };
  struct ucp_vals_01 v;
};

#define UCP_F31 UCP_FIELD_VAL
struct ucp_vals_31 {
#include "ucp_fields.def"
};
#define UCP_F31 UCP_FIELD_SLICE
struct ucp_op31 {
  union {
    struct ucp_slice f[UCP_31_NFIELDS];
    struct {
#include "ucp_fields.def"
    };
  };
  struct ucp_vals_31 v;
};

#define UCP_F5X UCP_FIELD_VAL
struct ucp_vals_5x {
#include "ucp_fields.def"
  struct ucp_slice udh; /* XSer type 01 data (hex, UDHL first); empty if none */
  int xdcs;             /* XSer type 02 DCS octet, -1 if none */
};
#define UCP_F5X UCP_FIELD_SLICE
struct ucp_op5x {
  union {
    struct ucp_slice f[UCP_5X_NFIELDS];
    struct {
#include "ucp_fields.def"
    };
  };
  struct ucp_vals_5x v;
};

#define UCP_F60 UCP_FIELD_VAL
struct ucp_vals_60 {
#include "ucp_fields.def"
};
#define UCP_F60 UCP_FIELD_SLICE
struct ucp_op60 {
  union {
    struct ucp_slice f[UCP_60_NFIELDS];
    struct {
#include "ucp_fields.def"
    };
  };
  struct ucp_vals_60 v;
};

#define UCP_F61 UCP_FIELD_VAL
struct ucp_vals_61 {
#include "ucp_fields.def"
};
#define UCP_F61 UCP_FIELD_SLICE
struct ucp_op61 {
  union {
    struct ucp_slice f[UCP_61_NFIELDS];
    struct {
#include "ucp_fields.def"
    };
  };
  struct ucp_vals_61 v;
};

#undef UCP_FIELD_ENUM_01
#undef UCP_FIELD_ENUM_31
#undef UCP_FIELD_ENUM_5X
#undef UCP_FIELD_ENUM_60
#undef UCP_FIELD_ENUM_61
#undef UCP_FIELD_SLICE
#undef UCP_FIELD_VAL
#undef UCP_VAL_INT
#undef UCP_VAL_NUM
#undef UCP_VAL_ADDR
#undef UCP_VAL_XADDR
#undef UCP_VAL_TEXT
#undef UCP_VAL_HEX
#undef UCP_VAL_XDIG

/* A result: A/SM (01, 31, 60, 61), A/MVP/SM (51, 52, 53) or N/EC/SM (all). */
struct ucp_result {
  int ack;              /* 1 positive (A), 0 negative (N) */
  int ec;               /* NACK: error code 0-99; ACK: -1 */
  struct ucp_slice mvp; /* ACK of 5x: modified validity period; else empty */
  struct ucp_slice sm;  /* system message, may be empty */
};

struct ucp_msg {
  int trn;        /* 0-99 */
  char o_r;       /* 'O' operation, 'R' result */
  int ot;         /* 1, 31, 51, 52, 53, 60, 61 */
  unsigned extra; /* decode: trailing fields beyond the spec's count, ignored */
  union {         /* by o_r and ot */
    struct ucp_op01 o01;
    struct ucp_op31 o31;
    struct ucp_op5x o5x; /* 51, 52, 53 */
    struct ucp_op60 o60;
    struct ucp_op61 o61;
    struct ucp_result r; /* any result */
  };
};

/* ---- frames ---- */

enum ucp_split_status {
  UCP_SPLIT_MORE = 0, /* no complete frame yet: read more and call again */
  UCP_SPLIT_FRAME = 1 /* buf[0 .. *n) is one frame, STX to ETX */
};

/* Looks for one frame at the start of buf[0..len). max_frame bounds a frame
 * in bytes, STX and ETX included (taken as at least UCP_FRAME_MIN and at most
 * UCP_FRAME_MAX). Returns UCP_SPLIT_MORE; UCP_SPLIT_FRAME with its length in
 * *n; or a negative UCP_E_GARBAGE / TRUNCATED / TOO_LONG / HEADER with the
 * number of bytes to drop in *n: up to the next STX, or all of buf if it
 * holds none. A frame always starts at buf[0] (its STX is at offset 0):
 * anything before an STX is first reported as UCP_E_GARBAGE, so the caller
 * can count it. Checks only the fixed header "TT/LLLLL/O|R/OT/" (as soon as
 * its bytes arrive), because without TRN and OT a frame cannot be answered;
 * everything else, LEN included, is decode's and gets a NACK. */
int ucp_split(const uint8_t *buf, size_t len, size_t max_frame, size_t *n);

/* Decodes one whole frame (STX to ETX, e.g. from ucp_split) into *m, whose
 * slices then point into frame. Returns 0, or UCP_E_SYNTAX / CHECKSUM / OT /
 * MT. Even on error, m->trn, m->o_r and m->ot hold the header's values when
 * they were readable (else -1, 0, -1), so the caller can NACK an operation.
 * Extra trailing fields are ignored and counted in m->extra. */
int ucp_decode(const uint8_t *frame, size_t len, struct ucp_msg *m);

/* Sets m up for building an operation (o_r 'O') or result ('R') of type ot:
 * every slice empty, every value -1, for results ack 1. */
void ucp_msg_init(struct ucp_msg *m, int trn, char o_r, int ot);

/* Writes m as a frame (STX to ETX, right LEN, uppercase checksum) into
 * dst[0..cap). Applies the same rules as ucp_decode, so what it writes decodes
 * back to the same fields. Returns the frame length, UCP_E_SPACE, or
 * UCP_E_INVALID (bad TRN/OT/o_r, a field breaking its syntax). */
int ucp_encode(const struct ucp_msg *m, uint8_t *dst, size_t cap);

/* The EC a NACK carries for a decode error (1, 2, 3, 23), or -1 for errors
 * that get no NACK (splitter, encoder). */
int ucp_error_ec(int err);
/* A short English description of a UCP_E_* code, for logs. Static storage. */
const char *ucp_strerror(int err);
/* The text of error code ec (doc/ucp.md 4.1), e.g. "Checksum error";
 * "Unknown error" for codes the table lacks. Static storage. */
const char *ucp_ec_text(int ec);
/* Spec name of field i of operation ot ("AdC", "OAdC", ...), or NULL. */
const char *ucp_field_name(int ot, unsigned i);
/* Number of fields of operation ot, or 0 if ot is not supported. */
unsigned ucp_field_count(int ot);

/* ---- field encodings ---- */

/* IRA-hex to octets: at most cap octets into dst. Returns the octet count,
 * UCP_E_INVALID for odd length / bad digit, UCP_E_SPACE. Used for AMsg (the
 * octets are unpacked GSM septets), TMsg, PWD, UDH. */
int ucp_hex_decode(uint8_t *dst, size_t cap, struct ucp_slice hex);
/* Octets to uppercase IRA-hex: 2*len chars into dst[0..cap). Returns the
 * char count or UCP_E_SPACE. */
int ucp_hex_encode(char *dst, size_t cap, const uint8_t *src, size_t len);

/* UTF-8 text -> AMsg hex (GSM 03.38, one septet per octet, escapes as 1B xx).
 * replace as charset_utf8_to_gsm: 0 fails on an unrepresentable character
 * (UCP_E_INVALID), else it becomes '?'. Returns chars written, UCP_E_SPACE,
 * UCP_E_INVALID (also for malformed UTF-8 or more than 320 septets). */
int ucp_amsg_from_utf8(char *dst, size_t cap, const char *utf8, size_t len, int replace);
/* AMsg hex -> UTF-8. Returns bytes written, UCP_E_INVALID, UCP_E_SPACE. */
int ucp_amsg_to_utf8(char *dst, size_t cap, struct ucp_slice amsg);

/* Alphanumeric OAdC (OTOA 5039): UTF-8 text (at most 11 GSM septets) -> the
 * length prefix (useful semi-octets) and the GSM-7 packed text, in hex.
 * "Gateway" -> "0DC730BD7C0FE701". Returns chars written, UCP_E_SPACE,
 * UCP_E_INVALID (not GSM, too long). */
int ucp_oadc_alnum_encode(char *dst, size_t cap, const char *utf8, size_t len);
/* The reverse, to UTF-8. Returns bytes written, UCP_E_INVALID, UCP_E_SPACE. */
int ucp_oadc_alnum_decode(char *dst, size_t cap, struct ucp_slice oadc);

/* TMsg (MT 4) from octets: writes the hex into tmsg[0..cap) and NB (the bit
 * count, 4 digits) into nb[0..4). Returns the hex char count, UCP_E_SPACE,
 * UCP_E_INVALID (more octets than NB can count). */
int ucp_tmsg_encode(char *tmsg, size_t cap, char nb[4], const uint8_t *src, size_t len);

/* XSer: a run of blocks TT LL DD.. (type, octet count, data; all hex). */
struct ucp_xser_block {
  unsigned type;         /* TT */
  struct ucp_slice data; /* 2*LL hex digits */
};
/* Takes the next block off the front of *xser. Returns 1 and the block, 0 at
 * the end, UCP_E_SYNTAX for a truncated block or a non-hex digit. Unknown
 * types are returned like any other; skip them by calling again. */
int ucp_xser_next(struct ucp_slice *xser, struct ucp_xser_block *b);
/* Appends block (type, data[0..len)) to dst[0..cap). Returns chars written
 * (4 + 2*len), UCP_E_SPACE, UCP_E_INVALID (type or len > 255). */
int ucp_xser_put(char *dst, size_t cap, unsigned type, const uint8_t *data, size_t len);

/* Which notifications (op 53) the submitter of a 51 asked for: 1 if a Dst of
 * dst (0 delivered, 1 buffered, 2 not delivered) is to be sent, given the
 * 51's NRq and NT values (-1 = empty). NT bits: 1 DN, 2 ND, 4 BN; NRq 1 with
 * NT empty or 0 means DN+ND; without NRq 1 nothing is sent. */
int ucp_notify_wanted(int nrq, int nt, int dst);

/* Op 53 AMsg text: "Message for <adc>, with identification <YYMMDDhhmmss>
 * has been delivered" (dst 0) / "has been buffered" (1) / "could not be
 * delivered" (2), adc being the original recipient and scts (12 digits,
 * DDMMYYhhmmss) the SCTS of the 51 ACK. Returns bytes written (ASCII),
 * UCP_E_SPACE, UCP_E_INVALID. Turn it into AMsg with ucp_amsg_from_utf8(). */
int ucp_53_text(char *dst, size_t cap, struct ucp_slice adc, struct ucp_slice scts, int dst_status);

/* SM of a 51 / 01 ACK: "<AdC>:<SCTS>". Returns chars written or UCP_E_SPACE. */
int ucp_sm_adc_scts(char *dst, size_t cap, struct ucp_slice adc, struct ucp_slice scts);
/* Splits such an SM at its last ':'; scts must be 12 digits. Returns 0 or
 * UCP_E_SYNTAX. The slices point into sm. */
int ucp_sm_adc_scts_parse(struct ucp_slice sm, struct ucp_slice *adc, struct ucp_slice *scts);

/* UCP time stamps in UTC: DDMMYYhhmm (DDT, VP, MVP; 10 digits) or
 * DDMMYYhhmmss (SCTS, DSCTS; 12 digits). YY 70-99 is 19YY, else 20YY.
 * ucp_time_parse returns 0 and *t, or UCP_E_SYNTAX (length, digits, a date
 * that does not exist). ucp_time_format writes 10 or 12 digits (digits says
 * which) and returns that count, or UCP_E_INVALID. */
int ucp_time_parse(struct ucp_slice s, time_t *t);
int ucp_time_format(char *dst, size_t digits, time_t t);

#endif
