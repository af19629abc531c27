/* msg.h - the one protocol-neutral message, and the receipt event.
 *
 * Every connector turns what it decodes into a struct msg (a submit, an MO)
 * or a struct msg_receipt (a delivery report), and builds what it sends from
 * them, so the core never sees a protocol.
 *
 * The payload is protocol-neutral too: GSM 03.38 text as unpacked septets
 * (escapes as 0x1B + code), 8-bit data as octets, UCS2 as UTF-16BE octets;
 * `coding` says which (the TP-DCS alphabet values of sms_text.h) and `dcs`
 * carries the whole TP-DCS (message class, etc.) to send.
 *
 * A struct msg either views its udh/data (pointers into a decoder's scratch
 * buffer, valid until the next decode) or owns them (msg_clone: one
 * allocation holding struct and payload, freed with msg_free).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_MSG_H
#define EMG_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "sms_text.h"

#define MSG_ADDR_LEN 48  /* UTF-8 bytes with NUL: SMPP C21, UCP 16 digits, 11 GSM chars alphanumeric */
#define MSG_ID_LEN 65    /* protocol message ids, NUL included (SMPP C65) */
#define MSG_USER_LEN 33  /* account names and passwords, NUL included */
#define MSG_CALLBACK_LEN 1024 /* a receipt callback URL, NUL included */

/* How an HTTP origin wants its receipts: GET of a URL with Kannel's
 * %-escapes (dlr-url), or a JSON POST to a URL. */
enum msg_callback_method {
  MSG_CALLBACK_NONE = 0,
  MSG_CALLBACK_GET = 1,
  MSG_CALLBACK_POST = 2
};

/* TON values, as SMPP and UCP's OTOA/OTON use them. */
enum msg_ton {
  MSG_TON_UNKNOWN = 0,
  MSG_TON_INTERNATIONAL = 1,
  MSG_TON_NATIONAL = 2,
  MSG_TON_ALPHANUMERIC = 5,
  MSG_TON_ABBREVIATED = 6
};

struct msg_addr {
  char addr[MSG_ADDR_LEN]; /* digits without '+', or alphanumeric text (UTF-8) */
  uint8_t ton;
  uint8_t npi;
};

/* Receipts asked for (the UCP NT bits; SMPP registered_delivery 1 = both
 * final ones, 2 = failure only; Kannel's dlr-mask, whose 8 and 16 ask for
 * the gateway's own events: the SMSC took the submit, or refused it). */
enum msg_dlr_flags {
  MSG_DLR_DELIVERED = 1,
  MSG_DLR_FAILED = 2,
  MSG_DLR_BUFFERED = 4,
  MSG_DLR_SMSC_ACCEPTED = 8,
  MSG_DLR_SMSC_REJECTED = 16
};
/* What an SMSC can be asked to report (the rest the gateway reports itself). */
#define MSG_DLR_FROM_SMSC (MSG_DLR_DELIVERED | MSG_DLR_FAILED | MSG_DLR_BUFFERED)

/* Where a message came from, and what its origin calls it: the id we
 * answered the submit with (SMPP message_id; UCP "AdC:SCTS"), which its
 * receipt must carry back. */
struct msg_origin {
  uint16_t connector;
  uint16_t instance;
  uint32_t session;
  char user[MSG_USER_LEN];
  char ref[MSG_ID_LEN];
};

struct msg {
  uint64_t id;             /* gateway id: node_id prefix + sequence; 0 until assigned */
  struct msg_addr src;
  struct msg_addr dst;
  uint8_t coding;          /* enum sms_text_coding: GSM7, 8BIT or UCS2 */
  uint8_t dcs;             /* TP-DCS to send */
  uint8_t pid;             /* TP-PID */
  uint8_t priority;        /* 0-3 */
  uint8_t dlr_mask;        /* MSG_DLR_*: 0 = no receipt wanted */
  uint8_t mms;             /* more messages to send */
  int64_t validity;        /* expiry, Unix seconds; 0 = none; < 0: relative, -seconds (see msg_resolve_times) */
  int64_t deferred;        /* not before, Unix seconds; 0 = now; < 0: relative as validity */
  int64_t received_ms;     /* when the gateway accepted it, Unix ms */
  struct msg_origin origin;
  uint32_t credit_epoch;   /* the account's credit epoch when this part's credit was taken; 0 = none taken */
  uint8_t callback_method; /* enum msg_callback_method: receipts by HTTP callback */
  const char *callback;    /* its URL (< MSG_CALLBACK_LEN bytes); NULL = none */
  uint16_t udh_len;        /* UDH octets, UDHL included; 0 = none */
  uint32_t data_len;       /* payload octets (septets for GSM7) */
  const uint8_t *udh;
  const uint8_t *data;
};

/* Message states, with the values of SMPP's message_state. */
enum msg_state {
  MSG_STATE_ENROUTE = 1,
  MSG_STATE_DELIVERED = 2,
  MSG_STATE_EXPIRED = 3,
  MSG_STATE_DELETED = 4,
  MSG_STATE_UNDELIVERABLE = 5,
  MSG_STATE_ACCEPTED = 6,
  MSG_STATE_UNKNOWN = 7,
  MSG_STATE_REJECTED = 8,
  /* Not SMPP states: the gateway's events for MSG_DLR_SMSC_*, only in
   * receipts to origins that asked for them (HTTP). Neither is final. */
  MSG_STATE_SMSC_ACCEPTED = 0x40,
  MSG_STATE_SMSC_REJECTED = 0x41
};

/* A delivery report, in either direction: from an SMSC (id = the SMSC's
 * message id; for UCP "AdC:SCTS") or to an origin (id = origin.ref). */
struct msg_receipt {
  char id[MSG_ID_LEN];
  uint8_t state;           /* enum msg_state */
  uint16_t err;            /* network or SMSC error code (UCP Rsn) */
  int64_t submit_time;     /* Unix seconds, 0 = unknown */
  int64_t done_time;
  struct msg_addr src;     /* of the original message: its sender */
  struct msg_addr dst;     /* its recipient */
};

/* The concatenation IE of m's UDH, into *c: true when m is a part of a
 * concatenated message (c->total is its parts, c->seq its number), false
 * when it has none or its UDH is malformed (c->total 0). */
bool msg_concat(const struct msg *m, struct sms_text_concat *c);

/* The name of an enum msg_state ("delivered", "smsc_accepted", ...); NULL
 * for 0 (no state), "unknown" for a value that is none. */
const char *msg_state_name(uint8_t state);

/* A copy of m that owns its payload, in one allocation (free with
 * msg_free). NULL when out of memory. */
/* Sets an address as SMPP or UCP carries it. A leading '+' before digits
 * marks an international number and is not kept: routes, receipts and the
 * other protocols see the same digits however the client wrote them.
 * Returns 0, or -1 when the address does not fit. */
int msg_addr_set(struct msg_addr *a, const char *s, size_t len, uint8_t ton, uint8_t npi);
/* True for a number as clients write one: digits, a '+' allowed first. */
bool msg_addr_is_number(const char *s, size_t len);

struct msg *msg_clone(const struct msg *m);
void msg_free(struct msg *m);

/* Turns relative validity and deferred times (negative: seconds from
 * acceptance, as SMPP's relative time format gives them) into absolute ones,
 * counted from now (Unix seconds). The core calls it when it accepts a
 * message, so that no relative time outlives the submit. */
void msg_resolve_times(struct msg *m, int64_t now);

/* 1 for the final states: every defined state but ENROUTE (ACCEPTED is
 * final, as SMPP 3.4 says). */
int msg_state_final(uint8_t state);

/* Whether a receipt in this state is wanted under dlr_mask: DELIVERED by
 * MSG_DLR_DELIVERED, ENROUTE and ACCEPTED by MSG_DLR_BUFFERED (Kannel reads
 * ACCEPTD as buffered), every failure state by MSG_DLR_FAILED, the SMSC_*
 * events by their MSG_DLR_SMSC_* bits. */
int msg_receipt_wanted(uint8_t dlr_mask, uint8_t state);

#endif
