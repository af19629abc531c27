/* sms_text.h - SMS payload codings, segment counts, concatenation with a UDH,
 * UDH parsing and reassembly of concatenated messages.
 *
 * A payload is the user data without its UDH, in coding units as SMPP
 * short_message and UCP AMsg/TMsg carry them: GSM-7 as unpacked septets (one
 * per octet, extension characters as 0x1B + code, as lib/charset.h produces),
 * 8-bit as octets, UCS2 as UTF-16BE octets. A UDH is given and returned whole:
 * the UDHL octet followed by the information elements.
 *
 * Everything but the reassembly table is a pure function writing into storage
 * the caller owns; nothing keeps a pointer to its arguments. The reassembly
 * table allocates once, in sms_text_reasm_create, bounded by its capacity.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_SMS_TEXT_H
#define EMG_SMS_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Values are the GSM TP-DCS (and SMPP data_coding) of each coding. */
enum sms_text_coding {
  SMS_TEXT_GSM7 = 0x00,
  SMS_TEXT_8BIT = 0x04,
  SMS_TEXT_UCS2 = 0x08
};

enum sms_text_error {
  SMS_TEXT_E_SPACE = -1,    /* the caller's storage is too small */
  SMS_TEXT_E_INVALID = -2,  /* malformed input or argument */
  SMS_TEXT_E_TOO_LONG = -3, /* would need more than SMS_TEXT_SEGMENTS_MAX segments */
  SMS_TEXT_E_FULL = -4      /* the reassembly table holds capacity parts already */
};

/* Size of the reference in the concatenation IE: 0x00 (8-bit) or 0x08 (16-bit). */
enum sms_text_ref {
  SMS_TEXT_REF8 = 8,
  SMS_TEXT_REF16 = 16
};

#define SMS_TEXT_UD_MAX 140       /* octets of user data (UDH included) in one SMS */
#define SMS_TEXT_SEPTETS_MAX 160  /* GSM-7 septets in 140 octets */
#define SMS_TEXT_SEGMENTS_MAX 255 /* the IE counts parts in one octet */
#define SMS_TEXT_ADDR_MAX 64      /* longest originator key of the reassembly table */

/* A payload to count or split. udh is the caller's own UDH (e.g. port
 * addressing), copied into every segment; NULL/0 for none. It must not hold a
 * concatenation IE already. */
struct sms_text_payload {
  enum sms_text_coding coding;
  const uint8_t *data;
  size_t len;
  const uint8_t *udh;
  size_t udh_len;
};

/* One segment: udh (udh_len 0 when none) then data, each ready to go out. */
struct sms_text_segment {
  uint8_t udh[SMS_TEXT_UD_MAX];
  size_t udh_len;
  uint8_t data[SMS_TEXT_SEPTETS_MAX];
  size_t len;
};

/* The content of a concatenation IE. seq counts from 1; total 0 means none. */
struct sms_text_concat {
  enum sms_text_ref ref_size;
  uint16_t ref;
  uint8_t total;
  uint8_t seq;
};

/* SMS_TEXT_GSM7 if every character of the UTF-8 text is in the GSM basic or
 * extension table, else SMS_TEXT_UCS2; SMS_TEXT_E_INVALID for malformed UTF-8. */
int sms_text_choose_coding(const char *utf8, size_t len);

/* How many segments sms_text_split makes of p (1 when it fits one SMS with the
 * caller's UDH alone): per segment at most 160/140/70 GSM septets/octets/UCS2
 * characters alone, 153/134/67 with an 8-bit reference, 152/133/66 with a
 * 16-bit one, less the caller's UDH; an escape pair or surrogate pair is never
 * cut, so a segment may hold one unit less. Returns the count, or
 * SMS_TEXT_E_INVALID (bad coding or UDH, odd UCS2 length, UDH leaving no room
 * for text) or SMS_TEXT_E_TOO_LONG. */
int sms_text_segment_count(const struct sms_text_payload *p, enum sms_text_ref ref_size);

/* Splits p into out[0..n-1], n as sms_text_segment_count says. With n > 1
 * each UDH is the concatenation IE (ref_size, ref, n, part number) followed by
 * the caller's IEs; with n == 1 it is the caller's UDH as given. Returns n, or
 * SMS_TEXT_E_SPACE when out_cap < n, or an error as sms_text_segment_count;
 * SMS_TEXT_E_INVALID also when ref does not fit ref_size. */
int sms_text_split(struct sms_text_segment *out, size_t out_cap, const struct sms_text_payload *p,
                   enum sms_text_ref ref_size, uint16_t ref);

/* Parses the UDH at the start of ud (len octets, which may run on into the
 * text). Returns the UDH length (1 + UDHL), with *concat set from the last
 * concatenation IE (total 0 when there is none, or when its part number is 0
 * or above the total, which 23.040 says to ignore); or SMS_TEXT_E_INVALID when
 * the UDH or an IE overruns, or a concatenation IE has the wrong length. */
int sms_text_udh_parse(const uint8_t *ud, size_t len, struct sms_text_concat *concat);

/* Writes a UDH: UDHL, the concatenation IE of *concat, then ies (further IEs,
 * copied as given). Returns its length, SMS_TEXT_E_SPACE, or
 * SMS_TEXT_E_INVALID for an impossible *concat or a UDH above SMS_TEXT_UD_MAX. */
int sms_text_udh_build(uint8_t *dst, size_t dst_cap, const struct sms_text_concat *concat,
                       const uint8_t *ies, size_t ies_len);

/* Zero bits between a UDH of udh_len octets and the first GSM septet, which
 * starts on a septet boundary: the fill_bits argument of charset_gsm_pack. */
unsigned sms_text_fill_bits(size_t udh_len);

/* Reassembly of concatenated messages, keyed by originator, reference size,
 * reference and total. The caller owns the table and serialises access. */
struct sms_text_reasm;

/* A table holding at most capacity parts (and so messages) at a time, whose
 * messages sms_text_reasm_expire drops timeout (in the caller's unit of time)
 * after their first part came.
 * Returns NULL when capacity is 0 or too large, or memory runs out. */
struct sms_text_reasm *sms_text_reasm_create(size_t capacity, uint64_t timeout);

/* Frees the table and the parts it still holds; r may be NULL. */
void sms_text_reasm_destroy(struct sms_text_reasm *r);

/* Adds part concat->seq (data, len <= SMS_TEXT_SEPTETS_MAX units) of a
 * message from originator (a NUL-terminated key of at most SMS_TEXT_ADDR_MAX
 * bytes; the caller may fold the destination into it) at time now. Returns 1
 * when the message is complete: its payload, parts in order, is in out and its
 * length in *out_len, and the table forgets it. Returns 0 when the part is
 * kept, or ignored as a duplicate. Errors: SMS_TEXT_E_INVALID (bad arguments
 * or concat->total 0), SMS_TEXT_E_FULL, SMS_TEXT_E_SPACE (out_cap below the
 * complete payload; nothing changes, so the part can be added again). A part
 * arriving after its message completed or expired starts a new one. */
int sms_text_reasm_add(struct sms_text_reasm *r, const char *originator,
                       const struct sms_text_concat *concat, const uint8_t *data, size_t len,
                       uint64_t now, uint8_t *out, size_t out_cap, size_t *out_len);

/* Drops the messages whose first part came more than timeout before now.
 * Returns how many it dropped. */
size_t sms_text_reasm_expire(struct sms_text_reasm *r, uint64_t now);

/* ---- TP-DCS (3GPP 23.038 section 4) ---- */

/* The alphabet a TP-DCS names, as enum sms_text_coding. Compressed text and
 * the reserved alphabet and groups cannot be read as characters: octets. */
uint8_t sms_dcs_coding(uint8_t dcs);

/* The message class a TP-DCS gives, or -1. */
int sms_dcs_class(uint8_t dcs);

/* dcs made to name coding (the payload's real alphabet), keeping its class:
 * a DCS that disagrees with its payload would garble the message. */
uint8_t sms_dcs_agree(uint8_t coding, uint8_t dcs);

#endif
