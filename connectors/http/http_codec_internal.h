/* http_codec_internal.h - what the HTTP codec's files share (http_codec.c
 * defines it; the JSON, Kannel and template files use it). Not an
 * interface: the codec's users include http_codec.h.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_HTTP_CODEC_INTERNAL_H
#define EMG_HTTP_CODEC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "http_codec.h"
#include "msg.h"
#include "sms_text.h"

#define SECONDS_MAX (366 * 86400)      /* validity and deferred: a year is plenty */
#define DLR_MASK_MAX 31

/* A coding asked for; AUTO picks GSM 7-bit or UCS2 by the text. */
enum coding_choice {
  CODING_INVALID = -2,
  CODING_AUTO = -1,
  CODING_GSM = SMS_TEXT_GSM7,
  CODING_8BIT = SMS_TEXT_8BIT,
  CODING_UCS2 = SMS_TEXT_UCS2
};

/* ---- the batch ---- */

/* *out: *in (NULL: all zero) with the defaults for its zero fields. */
void http_codec_limits_resolve(const struct http_codec_limits *in, struct http_codec_limits *out);

/* A batch with room for items_cap submits (more are added as they come)
 * and arena_cap octets of payload;
 * NULL when out of memory. */
struct http_codec_batch *http_codec_batch_create(size_t items_cap, size_t arena_cap);

/* Counts a fault and keeps it while there is room, cut to printable ASCII. */
void http_codec_fault_add(struct http_codec_batch *b, int message, const char *field,
                          const char *fmt, ...);

/* The free end of the arena (*room octets): write there, then commit. */
uint8_t *http_codec_arena_room(const struct http_codec_batch *b, size_t *room);

/* Takes n octets written at the free end; returns where they start. */
const uint8_t *http_codec_arena_commit(struct http_codec_batch *b, size_t n);

/* A NUL-terminated copy in the arena, or NULL when it does not fit. */
const char *http_codec_arena_string(struct http_codec_batch *b, const char *s, size_t n);

/* ---- addresses ---- */

/* A recipient: digits, or '+' and digits. Returns NULL or why not. */
const char *http_codec_parse_recipient(struct msg_addr *a, const char *s, size_t len);

/* A sender: a number as a recipient, or up to 11 GSM characters. Returns
 * NULL or why not. */
const char *http_codec_parse_sender(struct msg_addr *a, const char *s, size_t len);

/* The address as a client writes it ('+' before an international number)
 * into dst; returns its length. */
size_t http_codec_addr_text(char *dst, size_t cap, const struct msg_addr *a);

/* Decodes form text s (n bytes: '+' a space, %XX an octet; a '%' without
 * two hex digits stays) into out, at most cap - 1 bytes; returns the length
 * (no NUL written). out may be s. */
size_t http_codec_form_decode(char *out, size_t cap, const char *s, size_t n);

/* Whether s starts with http:// or https:// (and has more). */
bool http_codec_is_http_url(const char *s, size_t len);

/* ---- payloads ---- */

/* TP-DCS for a coding and a message class (-1: none). */
uint8_t http_codec_dcs_for(uint8_t coding, int mclass);

/* UTF-8 text into the arena in the coding (replace: '?' for what GSM
 * lacks); sets m's coding and data. Returns NULL or why not. */
const char *http_codec_utf8_payload(struct http_codec_batch *b, struct msg *m, const char *utf8,
                                    size_t len, enum coding_choice coding, int replace);

/* Octets into the arena as the payload in the coding (AUTO: 8-bit); sets
 * m's coding and data. Returns NULL or why not. */
const char *http_codec_octet_payload(struct http_codec_batch *b, struct msg *m, const uint8_t *data,
                                     size_t len, enum coding_choice coding);

/* A UDH (UDHL first) whose length agrees with itself. */
bool http_codec_udh_valid(const uint8_t *udh, size_t len);

/* Whether m can go out in at most max_parts SMS. Returns NULL, or the reason
 * (a constant or why) with *field set. */
const char *http_codec_payload_check(const struct msg *m, unsigned max_parts, const char **field,
                                     char *why, size_t why_cap);

/* Adds m as the next submit of b (the items grow past the room b was
 * created with). False when out of memory. */
bool http_codec_add_submit(struct http_codec_batch *b, const struct msg *m, unsigned message,
                           enum http_codec_dlr_method method, const char *dlr_url);

/* ---- outcomes ---- */

/* Whether the gateway took the submit (accepted or queued). */
bool http_codec_outcome_taken(enum http_codec_outcome o);

/* Whether the client should try again later. */
bool http_codec_outcome_retry(enum http_codec_outcome o);

/* How many submits were taken; *first_refused the first that was not (or
 * b->count), *queued whether any taken one was queued. */
size_t http_codec_results_taken(const struct http_codec_batch *b, const struct http_codec_result *r,
                                size_t *first_refused, bool *queued);

/* ---- receipts ---- */

/* Unix time t in UTC, strftime's fmt, into dst ("" when it does not fit). */
void http_codec_time_text(char *dst, size_t cap, int64_t t, const char *fmt);

/* %A when the caller gave none: an SMPP receipt text, or Kannel's ACK/NACK
 * for the SMSC_ACK and SMSC_NACK types. */
void http_codec_receipt_answer(char *dst, size_t cap, const struct http_codec_dlr *d, unsigned type);

#endif
