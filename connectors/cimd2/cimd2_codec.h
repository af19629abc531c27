/* cimd2_codec.h - CIMD2 packets: splitting a byte stream, decoding a packet
 * into its operation, packet number and parameters, and encoding one
 * (doc/cimd2.md).
 *
 * A packet is STX, "OO:NNN" (operation code, packet number), TAB, then
 * parameters "PPP:value" each ended by TAB, an optional checksum of two hex
 * digits, ETX. The codec knows the framing and the parameter syntax; what
 * an operation means is the adapter's (cimd2_proto.c).
 *
 * Pure code: no I/O, no allocation, no logging, no mutable state. Decoded
 * values are slices into the frame given to cimd2_decode(): valid while it
 * is, and not NUL-terminated.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_CIMD2_CODEC_H
#define EMG_CIMD2_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CIMD2_STX 0x02
#define CIMD2_ETX 0x03
#define CIMD2_TAB 0x09
/* The smallest packet: STX "OO:NNN" TAB ETX. */
#define CIMD2_FRAME_MIN 9
/* The largest this codec takes: a submit's longest text (160 characters,
 * each up to 3 in CIMD2's escapes), a user data header and every other
 * parameter fit several times over. */
#define CIMD2_FRAME_MAX 4096
/* Parameters one packet may carry. */
#define CIMD2_PARAMS_MAX 64

/* Operation codes; a response is its request's code + 50. */
enum cimd2_op {
  CIMD2_LOGIN = 1,
  CIMD2_LOGOUT = 2,
  CIMD2_SUBMIT = 3,
  CIMD2_ENQUIRE_STATUS = 4,
  CIMD2_DELIVERY_REQUEST = 5,
  CIMD2_CANCEL = 6,
  CIMD2_SET = 8,
  CIMD2_GET = 9,
  CIMD2_DELIVER = 20,
  CIMD2_STATUS_REPORT = 23,
  CIMD2_ALIVE = 40,
  CIMD2_RESPONSE = 50,           /* added to a request's code */
  CIMD2_GENERAL_ERROR = 98,      /* a response to a request the SMSC could not take */
  CIMD2_NACK = 99                /* a packet with a bad checksum or packet number */
};

/* Parameter codes (three digits on the wire). */
enum cimd2_param_code {
  CIMD2_P_USER = 10,
  CIMD2_P_PASSWORD = 11,
  CIMD2_P_SUBADDRESS = 12,
  CIMD2_P_WINDOW = 19,
  CIMD2_P_DESTINATION = 21,
  CIMD2_P_ORIGINATOR = 23,
  CIMD2_P_ORIGINATOR_IMSI = 26,
  CIMD2_P_ORIGINATOR_ALPHA = 27,
  CIMD2_P_ORIGINATOR_MSC = 28,
  CIMD2_P_DCS = 30,
  CIMD2_P_UDH = 32,
  CIMD2_P_TEXT = 33,
  CIMD2_P_BINARY = 34,
  CIMD2_P_MORE = 44,
  CIMD2_P_VALIDITY_RELATIVE = 50,
  CIMD2_P_VALIDITY_ABSOLUTE = 51,
  CIMD2_P_PID = 52,
  CIMD2_P_FIRST_DELIVERY_RELATIVE = 53,
  CIMD2_P_FIRST_DELIVERY_ABSOLUTE = 54,
  CIMD2_P_REPLY_PATH = 55,
  CIMD2_P_STATUS_REPORT_REQUEST = 56,
  CIMD2_P_CANCEL_ENABLED = 58,
  CIMD2_P_CANCEL_MODE = 59,
  CIMD2_P_SC_TIMESTAMP = 60,
  CIMD2_P_STATUS_CODE = 61,
  CIMD2_P_STATUS_ERROR = 62,
  CIMD2_P_DISCHARGE_TIME = 63,
  CIMD2_P_TARIFF_CLASS = 64,
  CIMD2_P_SERVICE_DESCRIPTION = 65,
  CIMD2_P_MESSAGE_COUNT = 66,
  CIMD2_P_PRIORITY = 67,
  CIMD2_P_DELIVERY_REQUEST_MODE = 68,
  CIMD2_P_SC_ADDRESS = 69,
  CIMD2_P_GET_PARAMETER = 500,
  CIMD2_P_SC_TIME = 501,
  CIMD2_P_ERROR_CODE = 900,
  CIMD2_P_ERROR_TEXT = 901
};

enum cimd2_error {
  /* splitter: cannot be answered; drop the bytes and go on */
  CIMD2_E_GARBAGE = -1,          /* bytes before an STX */
  CIMD2_E_TRUNCATED = -2,        /* an STX came before this packet's ETX */
  CIMD2_E_TOO_LONG = -3,         /* no ETX within the largest packet */
  CIMD2_E_HEADER = -4,           /* it does not start "OO:NNN" TAB */
  /* decoder: answered with a NACK or a response carrying an error code */
  CIMD2_E_CHECKSUM = -5,         /* the checksum does not match */
  CIMD2_E_SYNTAX = -6,           /* a parameter is not "PPP:value" TAB, or too many */
  /* encoder */
  CIMD2_E_SPACE = -7,            /* the destination is too small */
  CIMD2_E_INVALID = -8           /* a value the protocol cannot carry (TAB, STX, ETX in it; a bad code) */
};

/* Bytes of a value, not NUL-terminated. */
struct cimd2_slice {
  const char *p;
  size_t len;
};

struct cimd2_param {
  uint16_t code;                 /* 0..999 */
  struct cimd2_slice value;
};

struct cimd2_packet {
  uint8_t op;                    /* 0..99 */
  uint16_t number;               /* packet number 0..999 (CIMD2 uses 0..255) */
  bool checksum;                 /* decoded: it carried one (and it matched); encode: write one */
  unsigned n_params;
  struct cimd2_param params[CIMD2_PARAMS_MAX];
};

/* What a split found, as proto_split_fn wants it: > 0 a packet of that
 * many bytes at buf (STX to ETX); 0 more bytes are needed; < 0 a
 * CIMD2_E_GARBAGE / TRUNCATED / TOO_LONG / HEADER, with the bytes to drop
 * in *skip: up to the next STX, or all of buf when it holds none. A packet
 * always starts at buf[0]. max_frame bounds a packet (CIMD2_FRAME_MIN ..
 * CIMD2_FRAME_MAX). The header is checked as soon as its bytes arrive:
 * without its operation and number a packet cannot be answered. */
int cimd2_split(const uint8_t *buf, size_t len, size_t max_frame, size_t *skip);

/* Decodes one whole packet (STX to ETX) into *p, whose values then point
 * into frame. Returns 0, CIMD2_E_HEADER, CIMD2_E_CHECKSUM or
 * CIMD2_E_SYNTAX; on a checksum or syntax error p->op and p->number still
 * hold the header's (for the NACK or the error response). A packet may
 * carry no checksum: p->checksum says whether it did. */
int cimd2_decode(const uint8_t *frame, size_t len, struct cimd2_packet *p);

/* Writes p (STX to ETX, with its checksum when p->checksum) into
 * out[0..cap). Returns the length, CIMD2_E_SPACE or CIMD2_E_INVALID. */
int cimd2_encode(const struct cimd2_packet *p, uint8_t *out, size_t cap);

/* Sets p up for building: no parameters, a checksum written. */
void cimd2_packet_init(struct cimd2_packet *p, uint8_t op, uint16_t number);
/* Adds a parameter; its value points at memory that lives until
 * cimd2_encode() returns. CIMD2_E_SPACE when the packet is full. */
int cimd2_put(struct cimd2_packet *p, uint16_t code, const char *value, size_t len);
/* The same for a number, written in decimal into buf (which must live as
 * long: at least 21 bytes). */
int cimd2_put_uint(struct cimd2_packet *p, uint16_t code, uint64_t value, char *buf, size_t cap);

/* The first value of parameter code, or NULL. */
const struct cimd2_slice *cimd2_get(const struct cimd2_packet *p, uint16_t code);
/* The value of code as a decimal number up to max: 0, -1 when missing,
 * CIMD2_E_SYNTAX when it is not such a number. */
int cimd2_get_uint(const struct cimd2_packet *p, uint16_t code, uint64_t max, uint64_t *value);

/* The checksum of frame[0..len): the sum of its bytes, modulo 256. */
uint8_t cimd2_checksum(const uint8_t *frame, size_t len);

/* A short English description of a CIMD2_E_* code, for logs. Static. */
const char *cimd2_strerror(int err);

#endif
