/* smpp_receipt.h - delivery receipt text (SMPP 3.4 Appendix B, the de facto
 * "id:... sub:... dlvrd:... submit date:... done date:... stat:... err:...
 * text:..." format): a tolerant parser, an exact formatter, the stat name <->
 * message_state mapping, and message id normalisation for matching receipts
 * to the submit_sm_resp ids they refer to.
 *
 * Pure code: no I/O, no allocation, no global that changes.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_SMPP_RECEIPT_H
#define EMG_SMPP_RECEIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* message_state values (TLV 0x0427, query_sm_resp) and their receipt stat. */
enum smpp_message_state {
  SMPP_STATE_ENROUTE = 1,       /* ENROUTE */
  SMPP_STATE_DELIVERED = 2,     /* DELIVRD */
  SMPP_STATE_EXPIRED = 3,       /* EXPIRED */
  SMPP_STATE_DELETED = 4,       /* DELETED */
  SMPP_STATE_UNDELIVERABLE = 5, /* UNDELIV */
  SMPP_STATE_ACCEPTED = 6,      /* ACCEPTD */
  SMPP_STATE_UNKNOWN = 7,       /* UNKNOWN */
  SMPP_STATE_REJECTED = 8       /* REJECTD */
};

enum smpp_receipt_error {
  SMPP_RECEIPT_ERR_FORMAT = -1, /* parse: neither an id nor a known stat found */
  SMPP_RECEIPT_ERR_STATE = -2,  /* format: state is not one of SMPP_STATE_* */
  SMPP_RECEIPT_ERR_SPACE = -3   /* format/canonical: the output does not fit */
};

/* Bits of smpp_receipt.present: which fields the text had (and were valid). */
enum smpp_receipt_field {
  SMPP_RCPT_ID = 1u << 0,
  SMPP_RCPT_SUB = 1u << 1,
  SMPP_RCPT_DLVRD = 1u << 2,
  SMPP_RCPT_SUBMIT_DATE = 1u << 3,
  SMPP_RCPT_DONE_DATE = 1u << 4,
  SMPP_RCPT_STAT = 1u << 5,
  SMPP_RCPT_ERR = 1u << 6,
  SMPP_RCPT_TEXT = 1u << 7
};

/* Longest text the formatter writes: the first 20 octets of the message. */
#define SMPP_RECEIPT_TEXT_MAX 20

/* A receipt's fields. The strings are copies; text points into the parsed
 * input (valid while it is) or, for formatting, to the caller's octets. */
struct smpp_receipt {
  unsigned present;        /* SMPP_RCPT_* */
  char id[65];             /* message id, as written (up to 64 characters) */
  unsigned sub;            /* messages submitted (usually 1) */
  unsigned dlvrd;          /* messages delivered (1 or 0) */
  char submit_date[15];    /* YYMMDDhhmm, some SMSCs add ss (10-14 digits) */
  char done_date[15];
  uint8_t state;           /* SMPP_STATE_* from stat */
  unsigned err;            /* network/SMSC error code (decimal) */
  const char *text;        /* start of the original message, not NUL-terminated */
  size_t text_len;
};

/* Parses receipt text (short_message or message_payload; a NUL ends it).
 * Tolerates keys in any case, '_' or no space in "submit date"/"done date",
 * spaces around ':' and between fields, missing fields, any field order
 * (except that text: takes the rest of the input, as it may hold anything),
 * dates of 10 to 14 digits, stat names long or short ("DELIVRD",
 * "DELIVERED"). A field whose value is malformed is left out of present.
 * Returns 0, or SMPP_RECEIPT_ERR_FORMAT when neither id nor stat was found. */
int smpp_receipt_parse(struct smpp_receipt *r, const char *s, size_t len);

/* Writes the canonical text ("id:%s sub:%03u dlvrd:%03u submit date:%s done
 * date:%s stat:%s err:%03u text:%s", text cut to SMPP_RECEIPT_TEXT_MAX
 * octets) from every field, whatever present says, NUL-terminated into dst.
 * Returns its length without the NUL, SMPP_RECEIPT_ERR_STATE for an unknown
 * state, or SMPP_RECEIPT_ERR_SPACE when cap is too small. */
int smpp_receipt_format(char *dst, size_t cap, const struct smpp_receipt *r);

/* "DELIVRD" for SMPP_STATE_DELIVERED, ...; NULL for a value that is none. */
const char *smpp_state_stat(uint8_t state);

/* The state a stat names (case-insensitive, seven-letter or full names such
 * as "UNDELIVERABLE"); 0 when it names none. */
uint8_t smpp_stat_state(const char *stat, size_t len);

/* True for the states after which nothing more happens to the message
 * (all but ENROUTE; ACCEPTD counts as final, as in doc/smpp.md 3.5). */
bool smpp_state_final(uint8_t state);

/* Canonical form of a message id for storing and looking up receipts. With
 * hex the id is read as hexadecimal, else as decimal; if it is such a
 * number below 2^64 the form is its decimal value (so leading zeros and case
 * vanish), otherwise the id lowercased without leading zeros. Surrounding
 * spaces are ignored. Use the SMSC's known bases (Kannel's msg-id-type) for
 * its submit_sm_resp ids and its receipt ids. Writes a NUL-terminated string;
 * returns its length or SMPP_RECEIPT_ERR_SPACE (65 octets always suffice for
 * ids of up to 64 characters). */
int smpp_msgid_canonical(char *dst, size_t cap, const char *id, size_t len, bool hex);

/* True when two ids name the same message under any reading: equal as
 * canonical decimal or hexadecimal, or one read as hexadecimal equal to the
 * other read as decimal. For when the SMSC's bases are not configured; it
 * can match ids that differ (hex "10" = decimal "16"), so prefer
 * smpp_msgid_canonical when the bases are known. An empty id, or one longer
 * than the 64 characters SMPP allows, matches nothing. */
bool smpp_msgid_match(const char *a, const char *b);

#endif
