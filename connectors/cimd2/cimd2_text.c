/* cimd2_text.c - CIMD2's text. See cimd2_text.h and doc/cimd2.md section 6.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <string.h>
#include "cimd2_codec.h"
#include "cimd2_text.h"

#define GSM_ESCAPE 0x1B
#define GSM_UNDERSCORE 0x11

/* What each GSM code is written as (6.2's "Send" column). */
static const char *const gsm_to_cimd2[128] = {
  "_Oa", "_L-", "$", "_Y-", "_e`", "_e'", "_u`", "_i`",
  "_o`", "_C,", "\n", "_O/", "_o/", "\r", "_A*", "_a*",
  "_gd", "_--", "_gf", "_gg", "_gl", "_go", "_gp", "_gi",
  "_gs", "_gt", "_gx", "_XX", "_AE", "_ae", "_ss", "_E'",
  " ", "!", "_qq", "#", "_ox", "%", "&", "'",
  "(", ")", "*", "+", ",", "-", ".", "/",
  "0", "1", "2", "3", "4", "5", "6", "7",
  "8", "9", ":", ";", "<", "=", ">", "?",
  "_!!", "A", "B", "C", "D", "E", "F", "G",
  "H", "I", "J", "K", "L", "M", "N", "O",
  "P", "Q", "R", "S", "T", "U", "V", "W",
  "X", "Y", "Z", "_A\"", "_O\"", "_N~", "_U\"", "_so",
  "_??", "a", "b", "c", "d", "e", "f", "g",
  "h", "i", "j", "k", "l", "m", "n", "o",
  "p", "q", "r", "s", "t", "u", "v", "w",
  "x", "y", "z", "_a\"", "_o\"", "_n~", "_u\"", "_a`",
};

/* ISO-8859-1 characters GSM has: the Latin-1 byte and the GSM code. */
static const struct { uint8_t latin1, gsm; } latin1_in_gsm[] = {
  { 0xA1, 0x40 }, { 0xA3, 0x01 }, { 0xA4, 0x24 }, { 0xA5, 0x03 }, { 0xA7, 0x5F }, { 0xBF, 0x60 },
  { 0xC4, 0x5B }, { 0xC5, 0x0E }, { 0xC6, 0x1C }, { 0xC7, 0x09 }, { 0xC9, 0x1F }, { 0xD1, 0x5D },
  { 0xD6, 0x5C }, { 0xD8, 0x0B }, { 0xDC, 0x5E }, { 0xDF, 0x1E }, { 0xE0, 0x7F }, { 0xE4, 0x7B },
  { 0xE5, 0x0F }, { 0xE6, 0x1D }, { 0xE8, 0x04 }, { 0xE9, 0x05 }, { 0xEC, 0x07 }, { 0xF1, 0x7D },
  { 0xF2, 0x08 }, { 0xF6, 0x7C }, { 0xF8, 0x0C }, { 0xF9, 0x06 }, { 0xFC, 0x7E },
};

int cimd2_text_encode(char *dst, size_t cap, const uint8_t *septets, size_t n)
{
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    if (septets[i] > 0x7F)
      return CIMD2_E_INVALID;
    const char *s = gsm_to_cimd2[septets[i]];
    size_t len = s[1] ? (s[2] ? 3 : 2) : 1;   /* each is 1 to 3 characters */
    if (cap - at < len)
      return CIMD2_E_SPACE;
    memcpy(dst + at, s, len);
    at += len;
  }
  return (int)at;
}

/* The GSM code of combination "_" c1 c2, or -1. */
static int combination(char c1, char c2)
{
  if (c1 == 'n' && c2 == '"')
    return 0x7E;   /* Wireshark's spelling of ü */
  for (int code = 0; code < 128; code++) {
    const char *s = gsm_to_cimd2[code];
    if (s[0] == '_' && s[1] == c1 && s[2] == c2)
      return code;
  }
  return -1;
}

int cimd2_text_decode(uint8_t *dst, size_t cap, const char *text, size_t len)
{
  size_t at = 0;
  for (size_t i = 0; i < len; i++) {
    uint8_t c = (uint8_t)text[i];
    int code;
    if (c == '_') {
      code = i + 2 < len ? combination(text[i + 1], text[i + 2]) : -1;
      if (code >= 0)
        i += 2;
      else
        code = GSM_UNDERSCORE;   /* a "_" that starts nothing: the character itself */
    } else if (c == '@') {
      code = 0x00;
    } else if (c == '$') {
      code = 0x02;
    } else if (c == ']') {
      code = 0x0E;
    } else if (c == '}') {
      code = 0x0F;
    } else if (c < 0x80) {
      code = c;
    } else {
      code = -1;
      for (size_t k = 0; k < sizeof latin1_in_gsm / sizeof latin1_in_gsm[0]; k++)
        if (latin1_in_gsm[k].latin1 == c)
          code = latin1_in_gsm[k].gsm;
      if (code < 0)
        return CIMD2_E_INVALID;
    }
    if (at == cap)
      return CIMD2_E_SPACE;
    dst[at++] = (uint8_t)code;
  }
  return (int)at;
}
