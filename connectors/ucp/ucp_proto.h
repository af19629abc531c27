/* ucp_proto.h - the UCP/EMI protocol adapter (ucp_proto_ops, declared in
 * proto.h): its conventions and its error-code mapping. (The SCTS an op
 * 51's ACK carries comes from the allocator in scts.h.)
 *
 * Conventions of ucp_proto_ops (doc/ucp.md; proto.h for the rest):
 *
 * - raw_status carries the OT. A decoded request (op 01, 31, 51, 52, 53, 60,
 *   61, or any other OT) has raw_status = its OT. A response to encode takes
 *   its OT from raw_status, so whoever answers copies ref and raw_status from
 *   the request; the EC of a negative response follows from status alone
 *   (ucp_proto_ec). Where the op leaves no choice raw_status is not read
 *   (BIND_RESP is R/60, KEEPALIVE_RESP R/31); SUBMIT_RESP is R/01 when
 *   raw_status is 1, else R/51; DELIVER_RESP is R/52 or R/53 as raw_status
 *   says, else R/53 if is_receipt, else R/52. A decoded response has
 *   raw_status = its EC (0 for an ACK) and text = its SM.
 * - A frame that cannot be used decodes to the answer it needs: op the
 *   response (SUBMIT_RESP for a 51 or 01, DELIVER_RESP for a 52 or 53,
 *   BIND_RESP, KEEPALIVE_RESP, NACK for 61 and unknown OTs), ref = TRN,
 *   raw_status = OT, status the error; encoding that pdu gives the NACK.
 *   PROTO_OP_NONE when nothing can be answered (unreadable TRN or OT, a
 *   result).
 * - OTHER as a response (the runtime answering a request it does not handle)
 *   is R/<OT> NACK 03; NACK is R/<OT> NACK with the EC of status.
 * - Addresses. OTOA 5039: alphanumeric, ton 5, npi 0 (packed GSM on the
 *   wire, UTF-8 in struct msg_addr); OTOA 1139: ton 1, npi 1; no OTOA:
 *   ton 0 (unknown), npi 1 (E.164, the UCP default). Encoding: ton 5 or
 *   anything but digits goes out as 5039, ton 1 as 1139, every other ton as
 *   plain digits (UCP has no national or abbreviated TON in 5x ops).
 * - Text. MT 3 AMsg octets are GSM 03.38 septets, unpacked (or Latin-1 with
 *   proto_options.latin1_text: decoded to GSM-7 when every character fits,
 *   else UCS2; encoded to Latin-1 when the text fits, else sent as UCS2).
 *   MT 2 NMsg digits are GSM-7. MT 4 TMsg holds the octets of the alphabet
 *   its DCS (XSer 02, else 8-bit) names: 8-bit and UCS2 as they are, GSM-7
 *   packed from the first bit, NB / 7 septets (the UDH travels in XSer 01,
 *   so no fill bits). GSM-7 is always sent as MT 3 (with XSer 01 for a UDH,
 *   as Kannel does), 8-bit and UCS2 as MT 4.
 * - DCS. XSer 02 when the DCS is neither 0x00 nor 0x04, and MCLs 1 beside
 *   it on MT 4 (both as Kannel). Decoding takes XSer 02 first, else MCLs as
 *   the class of the MT's alphabet (general group 0x10 | alphabet | class:
 *   Kannel's 8-bit MT 4 without XSer 02 but with MCLs 1 reads as 0x15), and
 *   keeps the DCS in step with the payload's coding.
 * - RPID is the TP-PID in decimal (0065 = 0x41); PR 1 = priority 1 (UCP has
 *   only "priority requested", so priority 2-3 go out as PR 1); VP and DDT
 *   are UTC; NRq/NT are the dlr_mask bits (ucp_notify_wanted: NRq 1 with NT
 *   empty or 0 asks for DELIVERED and FAILED).
 * - Op 53. Decoding: receipt.id = "<OAdC>:<SCTS>" (the SM of the 51 ACK),
 *   state from Dst (0 DELIVERED, 1 ENROUTE, 2 UNDELIVERABLE; no Rsn means
 *   "expired", so EXPIRED is never produced), err = Rsn, submit_time = SCTS,
 *   done_time = DSCTS, receipt.src = AdC (original sender), receipt.dst =
 *   OAdC (original recipient). Encoding: OAdC and SCTS come from receipt.id,
 *   which must be "<AdC>:<SCTS>" as the 51 ACK gave it (the client matches on
 *   exactly that string, so receipt.dst is not read); AdC = receipt.src
 *   when it is digits, and empty when the original sender was alphanumeric
 *   (op 53 AdC must be digits; Kannel matches on SCTS and OAdC only, so it
 *   still finds its message); Dst from state (DELIVERED 0, ENROUTE and
 *   ACCEPTED 1, others 2); Rsn = err (000 when delivered; err above 999
 *   cannot be sent); DSCTS = done_time, empty when unknown; MT 3 with
 *   ucp_53_text.
 * - Encode errors are the negative UCP_E_* codes (ucp_strerror names them):
 *   UCP_E_INVALID for a pdu the protocol cannot carry, UCP_E_SPACE when the
 *   output buffer cannot grow.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_UCP_PROTO_H
#define EMG_UCP_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include "proto.h"

/* proto_options.max_frame 0 means this: the longest well-formed frame (a 5x
 * op with TMsg and XSer at their limits) is under 2.8 KB, so 4 KB leaves room
 * for trailing fields peers may add while bounding what a peer that never
 * sends ETX makes us buffer before resynchronising. */
#define UCP_PROTO_MAX_FRAME 4096

/* ECs that EMI does not define, for outcomes it has no code for
 * (doc/ucp.md 4.2: 90-99 are the proprietary range; 54 and 55 are the
 * ERMES codes Wireshark names "Operation not successful", "System error"). */
enum ucp_proto_ec {
  UCP_EC_THROTTLED = 90,  /* too fast: back off and retry */
  UCP_EC_QUEUE_FULL = 91, /* queue full: retry later */
  UCP_EC_FAILED = 54,     /* PROTO_E_PERMANENT */
  UCP_EC_SYSTEM = 55      /* PROTO_E_TEMPORARY */
};

/* The EC a NACK carries for status s (not PROTO_OK):
 *   CHECKSUM 01, SYNTAX and CMD_LEN 02, UNSUPPORTED 03, BIND_STATE and
 *   ALREADY_BOUND 04, ADDRESS 06, AUTH 07, TOO_LONG 24, PERMANENT 54,
 *   TEMPORARY 55, THROTTLED 90, QUEUE_FULL 91. */
int ucp_proto_ec(enum proto_status s);

/* The status of a NACK's EC: 01 CHECKSUM, 02 SYNTAX, 03 and 23 (message type
 * not supported) UNSUPPORTED, 04 BIND_STATE, 06 ADDRESS, 07 AUTH, 24
 * TOO_LONG, 50 (ERMES "low network status") and 55 TEMPORARY, 90 THROTTLED,
 * 91 QUEUE_FULL, every other code PERMANENT. */
enum proto_status ucp_proto_status(int ec);

#endif
