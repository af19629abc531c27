/* cimd2_text.h - the text of CIMD2's user data (parameter 033): GSM 03.38
 * characters written in printable ASCII, most as themselves, the others as
 * "_" and two characters ("_Oa" is @, "_XX" the escape to the extension
 * table), as doc/cimd2.md section 6 sets out.
 *
 * Pure code, like the codec. Text on emg's side is GSM 03.38 as unpacked
 * septets, escapes as 0x1B and the code (lib/msg.h).
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_CIMD2_TEXT_H
#define EMG_CIMD2_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Writes n septets as CIMD2 text into dst[0..cap) (not NUL-terminated).
 * Returns its length, CIMD2_E_SPACE, or CIMD2_E_INVALID for a septet above
 * 0x7F. At most 3 bytes a septet. */
int cimd2_text_encode(char *dst, size_t cap, const uint8_t *septets, size_t n);

/* Reads CIMD2 text into septets (dst[0..cap)). Besides the combinations it
 * takes what peers send: "@", "$", "]" and "}" as @, $, Å and å, any other
 * byte below 0x80 as the GSM character of that code, Wireshark's "_n\"" for
 * ü, a "_" that starts no combination as the character _, and ISO-8859-1
 * bytes for the characters GSM has. Returns the septets written,
 * CIMD2_E_SPACE, or CIMD2_E_INVALID for a Latin-1 character GSM lacks (the
 * caller may then take the text as Latin-1 into UCS2). */
int cimd2_text_decode(uint8_t *dst, size_t cap, const char *text, size_t len);

#endif
