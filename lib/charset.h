/* charset.h - GSM 03.38, UCS2 (UTF-16BE) and Latin-1, each to and from UTF-8.
 *
 * GSM text is handled as unpacked septets, one per octet, with extension
 * characters as the pair 0x1B + code: the form SMPP data_coding 0 and UCP
 * AMsg carry. Packing to 7-bit octets (air interface, UCP alphanumeric OAdC)
 * is a separate step. Pure functions: no allocation, no global state.
 *
 * Every conversion writes at most dst_cap units and returns the number
 * written, or a negative CHARSET_E_* code; nothing is NUL-terminated.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_CHARSET_H
#define EMG_CHARSET_H

#include <stddef.h>
#include <stdint.h>

enum charset_error {
  CHARSET_E_SPACE = -1,          /* dst_cap too small */
  CHARSET_E_INVALID = -2,        /* malformed input (bad UTF-8, odd UCS2 length, septet > 0x7F) */
  CHARSET_E_UNREPRESENTABLE = -3 /* a character the target alphabet lacks (strict mode) */
};

/* UTF-8 -> GSM septets. With replace = 0 an unrepresentable character fails
 * with CHARSET_E_UNREPRESENTABLE; otherwise it becomes '?'. Malformed UTF-8
 * is CHARSET_E_INVALID in either mode. No look-alikes are substituted (no
 * c-cedilla for C-cedilla), so UTF-8 -> GSM -> UTF-8 is exact. */
int charset_utf8_to_gsm(uint8_t *dst, size_t dst_cap, const char *utf8, size_t len, int replace);

/* GSM septets -> UTF-8. An escape followed by an unknown code yields the
 * basic-table character of that code (as 03.38 asks); a trailing lone escape
 * yields a space. Returns bytes written. */
int charset_gsm_to_utf8(char *dst, size_t dst_cap, const uint8_t *gsm, size_t len);

/* How many septets the UTF-8 text needs in GSM (escapes count 2), or
 * CHARSET_E_UNREPRESENTABLE / CHARSET_E_INVALID. Lets a caller choose GSM-7 or UCS2. */
int charset_gsm_septets(const char *utf8, size_t len);

/* Packs septets LSB first into octets, after fill_bits (0-6) zero bits of
 * padding (used after a UDH). Returns octets written. */
int charset_gsm_pack(uint8_t *dst, size_t dst_cap, const uint8_t *septets, size_t count, unsigned fill_bits);

/* Unpacks count septets from packed octets (starting after fill_bits bits).
 * Returns septets written, or CHARSET_E_INVALID if the octets are too few. */
int charset_gsm_unpack(uint8_t *dst, size_t dst_cap, const uint8_t *packed, size_t packed_len,
                       size_t count, unsigned fill_bits);

/* UTF-8 <-> UCS2 big-endian. Characters beyond the BMP become surrogate
 * pairs and come back as one character; a lone surrogate half in UCS2 is
 * CHARSET_E_INVALID. Return octets / bytes written. */
int charset_utf8_to_ucs2(uint8_t *dst, size_t dst_cap, const char *utf8, size_t len);
int charset_ucs2_to_utf8(char *dst, size_t dst_cap, const uint8_t *ucs2, size_t len);

/* UTF-8 <-> ISO-8859-1. replace as for GSM. */
int charset_utf8_to_latin1(uint8_t *dst, size_t dst_cap, const char *utf8, size_t len, int replace);
int charset_latin1_to_utf8(char *dst, size_t dst_cap, const uint8_t *latin1, size_t len);

#endif
