/* charset.c - GSM 03.38, UCS2 (UTF-16BE) and Latin-1, each to and from UTF-8.
 *
 * Everything is table driven so a conversion costs a lookup per character:
 * gsm_basic / gsm_ext give the code point of each septet, uni_gsm gives the
 * septet of each code point below U+0100, and the eleven characters above
 * (ten Greek capitals and the euro sign) go through one switch. ASCII never
 * reaches the UTF-8 decoder or encoder. dst_cap is clamped to INT_MAX so that
 * every count fits the int return value.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <limits.h>
#include "charset.h"

#define GSM_ESC 0x1B
#define GSM_QUESTION 0x3F
/* uni_gsm entries: a basic septet (< 0x80), GSM_EXT | extension code, or GSM_NONE.
 * No extension code is 0x7F, so GSM_NONE cannot collide with one. */
#define GSM_EXT 0x80
#define GSM_NONE 0xFF

/* Code point of each basic septet. 0x1B is the escape and never decoded as a
 * character on its own; the space stored for it is what 23.038 asks a receiver
 * to show for the reserved pair 1B 1B and what a trailing lone escape becomes. */
static const uint16_t gsm_basic[128] = {
  /* 0x00 @ £ $ ¥ è é ù ì ò Ç LF Ø ø CR Å å */
  0x0040, 0x00A3, 0x0024, 0x00A5, 0x00E8, 0x00E9, 0x00F9, 0x00EC,
  0x00F2, 0x00C7, 0x000A, 0x00D8, 0x00F8, 0x000D, 0x00C5, 0x00E5,
  /* 0x10 Δ _ Φ Γ Λ Ω Π Ψ Σ Θ Ξ ESC Æ æ ß É */
  0x0394, 0x005F, 0x03A6, 0x0393, 0x039B, 0x03A9, 0x03A0, 0x03A8,
  0x03A3, 0x0398, 0x039E, 0x0020, 0x00C6, 0x00E6, 0x00DF, 0x00C9,
  /* 0x20 SP ! " # ¤ % & ' ( ) * + , - . / */
  0x0020, 0x0021, 0x0022, 0x0023, 0x00A4, 0x0025, 0x0026, 0x0027,
  0x0028, 0x0029, 0x002A, 0x002B, 0x002C, 0x002D, 0x002E, 0x002F,
  /* 0x30 0-9 : ; < = > ? */
  0x0030, 0x0031, 0x0032, 0x0033, 0x0034, 0x0035, 0x0036, 0x0037,
  0x0038, 0x0039, 0x003A, 0x003B, 0x003C, 0x003D, 0x003E, 0x003F,
  /* 0x40 ¡ A-O */
  0x00A1, 0x0041, 0x0042, 0x0043, 0x0044, 0x0045, 0x0046, 0x0047,
  0x0048, 0x0049, 0x004A, 0x004B, 0x004C, 0x004D, 0x004E, 0x004F,
  /* 0x50 P-Z Ä Ö Ñ Ü § */
  0x0050, 0x0051, 0x0052, 0x0053, 0x0054, 0x0055, 0x0056, 0x0057,
  0x0058, 0x0059, 0x005A, 0x00C4, 0x00D6, 0x00D1, 0x00DC, 0x00A7,
  /* 0x60 ¿ a-o */
  0x00BF, 0x0061, 0x0062, 0x0063, 0x0064, 0x0065, 0x0066, 0x0067,
  0x0068, 0x0069, 0x006A, 0x006B, 0x006C, 0x006D, 0x006E, 0x006F,
  /* 0x70 p-z ä ö ñ ü à */
  0x0070, 0x0071, 0x0072, 0x0073, 0x0074, 0x0075, 0x0076, 0x0077,
  0x0078, 0x0079, 0x007A, 0x00E4, 0x00F6, 0x00F1, 0x00FC, 0x00E0,
};

/* Code point of each extension code after an escape; 0 where none is defined. */
static const uint16_t gsm_ext[128] = {
  [0x0A] = 0x000C, /* form feed */
  [0x14] = 0x005E, /* ^ */
  [0x28] = 0x007B, /* { */
  [0x29] = 0x007D, /* } */
  [0x2F] = 0x005C, /* \ */
  [0x3C] = 0x005B, /* [ */
  [0x3D] = 0x007E, /* ~ */
  [0x3E] = 0x005D, /* ] */
  [0x40] = 0x007C, /* | */
  [0x65] = 0x20AC, /* € */
};

/* Septet of each code point below U+0100: the exact inverse of the two tables
 * above (so UTF-8 -> GSM -> UTF-8 is the identity), without look-alikes. */
static const uint8_t uni_gsm[256] = {
  0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x0A, 0xFF, 0x8A, 0x0D, 0xFF, 0xFF, /* U+00 */
  0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, /* U+10 */
  0x20, 0x21, 0x22, 0x23, 0x02, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x2D, 0x2E, 0x2F, /* U+20 */
  0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3A, 0x3B, 0x3C, 0x3D, 0x3E, 0x3F, /* U+30 */
  0x00, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4A, 0x4B, 0x4C, 0x4D, 0x4E, 0x4F, /* U+40 */
  0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5A, 0xBC, 0xAF, 0xBE, 0x94, 0x11, /* U+50 */
  0xFF, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6A, 0x6B, 0x6C, 0x6D, 0x6E, 0x6F, /* U+60 */
  0x70, 0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7A, 0xA8, 0xC0, 0xA9, 0xBD, 0xFF, /* U+70 */
  0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, /* U+80 */
  0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, /* U+90 */
  0xFF, 0x40, 0xFF, 0x01, 0x24, 0x03, 0xFF, 0x5F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, /* U+A0 */
  0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x60, /* U+B0 */
  0xFF, 0xFF, 0xFF, 0xFF, 0x5B, 0x0E, 0x1C, 0x09, 0xFF, 0x1F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, /* U+C0 */
  0xFF, 0x5D, 0xFF, 0xFF, 0xFF, 0xFF, 0x5C, 0xFF, 0x0B, 0xFF, 0xFF, 0xFF, 0x5E, 0xFF, 0xFF, 0x1E, /* U+D0 */
  0x7F, 0xFF, 0xFF, 0xFF, 0x7B, 0x0F, 0x1D, 0xFF, 0x04, 0x05, 0xFF, 0xFF, 0x07, 0xFF, 0xFF, 0xFF, /* U+E0 */
  0xFF, 0x7D, 0x08, 0xFF, 0xFF, 0xFF, 0x7C, 0xFF, 0x0C, 0x06, 0xFF, 0xFF, 0x7E, 0xFF, 0xFF, 0xFF, /* U+F0 */
};

/* uni_gsm entry of any code point. */
static inline uint8_t gsm_lookup(uint32_t cp)
{
  if (cp < 0x100)
    return uni_gsm[cp];
  switch (cp) {
  case 0x0393: return 0x13; /* Γ */
  case 0x0394: return 0x10; /* Δ */
  case 0x0398: return 0x19; /* Θ */
  case 0x039B: return 0x14; /* Λ */
  case 0x039E: return 0x1A; /* Ξ */
  case 0x03A0: return 0x16; /* Π */
  case 0x03A3: return 0x18; /* Σ */
  case 0x03A6: return 0x12; /* Φ */
  case 0x03A8: return 0x17; /* Ψ */
  case 0x03A9: return 0x15; /* Ω */
  case 0x20AC: return GSM_EXT | 0x65; /* € */
  default: return GSM_NONE;
  }
}

static inline size_t clamp_cap(size_t cap)
{
  return cap > INT_MAX ? INT_MAX : cap;
}

/* Decodes the sequence at s[*i] (*i < len) strictly: no overlong forms, no
 * UTF-16 surrogates, nothing above U+10FFFF, no truncation. Returns the code
 * point and advances *i, or returns -1 and leaves *i alone. */
static inline int32_t utf8_next(const uint8_t *s, size_t len, size_t *i)
{
  uint32_t b = s[*i], cp, min;
  size_t n;

  if (b < 0x80) {
    (*i)++;
    return (int32_t)b;
  }
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2, cp = b & 0x1F, min = 0x80;
  } else if ((b & 0xF0) == 0xE0) {
    n = 3, cp = b & 0x0F, min = 0x800;
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4, cp = b & 0x07, min = 0x10000;
  } else {
    return -1; /* continuation byte, C0/C1 (always overlong) or F5-FF */
  }
  if (len - *i < n)
    return -1;
  for (size_t k = 1; k < n; k++) {
    uint32_t c = s[*i + k];
    if ((c & 0xC0) != 0x80)
      return -1;
    cp = cp << 6 | (c & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return -1;
  *i += n;
  return (int32_t)cp;
}

/* Appends cp as UTF-8 at dst[*o]. Returns 0 or CHARSET_E_SPACE. */
static inline int utf8_put(char *dst, size_t cap, size_t *o, uint32_t cp)
{
  unsigned char *d = (unsigned char *)dst + *o;
  size_t room = cap - *o;

  if (cp < 0x80) {
    if (room < 1)
      return CHARSET_E_SPACE;
    d[0] = (unsigned char)cp;
    *o += 1;
  } else if (cp < 0x800) {
    if (room < 2)
      return CHARSET_E_SPACE;
    d[0] = (unsigned char)(0xC0 | cp >> 6);
    d[1] = (unsigned char)(0x80 | (cp & 0x3F));
    *o += 2;
  } else if (cp < 0x10000) {
    if (room < 3)
      return CHARSET_E_SPACE;
    d[0] = (unsigned char)(0xE0 | cp >> 12);
    d[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    d[2] = (unsigned char)(0x80 | (cp & 0x3F));
    *o += 3;
  } else {
    if (room < 4)
      return CHARSET_E_SPACE;
    d[0] = (unsigned char)(0xF0 | cp >> 18);
    d[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    d[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    d[3] = (unsigned char)(0x80 | (cp & 0x3F));
    *o += 4;
  }
  return 0;
}

/* The one UTF-8 -> GSM loop, shared by the conversion and the septet count:
 * with dst NULL it only counts. The dst test is a well-predicted branch, far
 * cheaper than a second copy of the loop drifting out of step. */
static int utf8_to_gsm(uint8_t *dst, size_t cap, const char *utf8, size_t len, int replace)
{
  const uint8_t *s = (const uint8_t *)utf8;
  size_t i = 0, o = 0;

  while (i < len) {
    uint8_t g;
    if (s[i] < 0x80) {
      g = uni_gsm[s[i++]];
    } else {
      int32_t cp = utf8_next(s, len, &i);
      if (cp < 0)
        return CHARSET_E_INVALID;
      g = gsm_lookup((uint32_t)cp);
    }
    if (g == GSM_NONE) {
      if (!replace)
        return CHARSET_E_UNREPRESENTABLE;
      g = GSM_QUESTION;
    }
    if (g & GSM_EXT) {
      if (cap - o < 2)
        return CHARSET_E_SPACE;
      if (dst) {
        dst[o] = GSM_ESC;
        dst[o + 1] = g & 0x7F;
      }
      o += 2;
    } else {
      if (o == cap)
        return CHARSET_E_SPACE;
      if (dst)
        dst[o] = g;
      o++;
    }
  }
  return (int)o;
}

int charset_utf8_to_gsm(uint8_t *dst, size_t dst_cap, const char *utf8, size_t len, int replace)
{
  return utf8_to_gsm(dst, clamp_cap(dst_cap), utf8, len, replace);
}

int charset_gsm_septets(const char *utf8, size_t len)
{
  /* A text of more than INT_MAX septets reports CHARSET_E_SPACE. */
  return utf8_to_gsm(NULL, INT_MAX, utf8, len, 0);
}

int charset_gsm_to_utf8(char *dst, size_t dst_cap, const uint8_t *gsm, size_t len)
{
  size_t cap = clamp_cap(dst_cap), o = 0;

  for (size_t i = 0; i < len; i++) {
    uint32_t cp;
    if (gsm[i] > 0x7F)
      return CHARSET_E_INVALID;
    if (gsm[i] != GSM_ESC) {
      cp = gsm_basic[gsm[i]];
    } else if (i + 1 == len) {
      cp = gsm_basic[GSM_ESC];
    } else {
      uint8_t code = gsm[++i];
      if (code > 0x7F)
        return CHARSET_E_INVALID;
      cp = gsm_ext[code] ? gsm_ext[code] : gsm_basic[code];
    }
    if (cp < 0x80 && o < cap) {
      dst[o++] = (char)cp;
      continue;
    }
    int rc = utf8_put(dst, cap, &o, cp);
    if (rc < 0)
      return rc;
  }
  return (int)o;
}

int charset_gsm_pack(uint8_t *dst, size_t dst_cap, const uint8_t *septets, size_t count, unsigned fill_bits)
{
  size_t cap = clamp_cap(dst_cap), o = 0;
  uint32_t acc = 0;
  unsigned bits = fill_bits;

  if (fill_bits > 6)
    return CHARSET_E_INVALID;
  if (count == 0)
    return 0; /* fill bits only align a first septet; with none there is nothing */
  if (count > INT_MAX || (count * 7 + fill_bits + 7) / 8 > cap)
    return CHARSET_E_SPACE;
  for (size_t i = 0; i < count; i++) {
    if (septets[i] > 0x7F)
      return CHARSET_E_INVALID;
    acc |= (uint32_t)septets[i] << bits;
    bits += 7;
    if (bits >= 8) {
      dst[o++] = (uint8_t)acc;
      acc >>= 8;
      bits -= 8;
    }
  }
  if (bits > 0)
    dst[o++] = (uint8_t)acc;
  return (int)o;
}

int charset_gsm_unpack(uint8_t *dst, size_t dst_cap, const uint8_t *packed, size_t packed_len,
                       size_t count, unsigned fill_bits)
{
  if (fill_bits > 6)
    return CHARSET_E_INVALID;
  if (count > clamp_cap(dst_cap))
    return CHARSET_E_SPACE;
  if (count > 0 && (count * 7 + fill_bits + 7) / 8 > packed_len)
    return CHARSET_E_INVALID;
  for (size_t k = 0; k < count; k++) {
    size_t bit = fill_bits + 7 * k, at = bit / 8;
    unsigned shift = bit % 8;
    unsigned v = packed[at] >> shift;
    if (shift > 1) /* the septet runs into the next octet */
      v |= (unsigned)packed[at + 1] << (8 - shift);
    dst[k] = (uint8_t)(v & 0x7F);
  }
  return (int)count;
}

int charset_utf8_to_ucs2(uint8_t *dst, size_t dst_cap, const char *utf8, size_t len)
{
  const uint8_t *s = (const uint8_t *)utf8;
  size_t cap = clamp_cap(dst_cap), i = 0, o = 0;

  while (i < len) {
    int32_t cp = s[i] < 0x80 ? s[i++] : utf8_next(s, len, &i);
    if (cp < 0)
      return CHARSET_E_INVALID;
    if (cp < 0x10000) {
      if (cap - o < 2)
        return CHARSET_E_SPACE;
      dst[o++] = (uint8_t)(cp >> 8);
      dst[o++] = (uint8_t)cp;
    } else {
      uint32_t v = (uint32_t)cp - 0x10000;
      uint32_t hi = 0xD800 | v >> 10, lo = 0xDC00 | (v & 0x3FF);
      if (cap - o < 4)
        return CHARSET_E_SPACE;
      dst[o++] = (uint8_t)(hi >> 8);
      dst[o++] = (uint8_t)hi;
      dst[o++] = (uint8_t)(lo >> 8);
      dst[o++] = (uint8_t)lo;
    }
  }
  return (int)o;
}

int charset_ucs2_to_utf8(char *dst, size_t dst_cap, const uint8_t *ucs2, size_t len)
{
  size_t cap = clamp_cap(dst_cap), o = 0;

  if (len % 2)
    return CHARSET_E_INVALID;
  for (size_t i = 0; i < len; i += 2) {
    uint32_t cp = (uint32_t)ucs2[i] << 8 | ucs2[i + 1];
    if (cp < 0x80 && o < cap) {
      dst[o++] = (char)cp;
      continue;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) {
      /* Only a high surrogate followed by a low one is a character; a lone
       * half has no UTF-8 form. */
      uint32_t lo;
      if (cp > 0xDBFF || len - i < 4)
        return CHARSET_E_INVALID;
      lo = (uint32_t)ucs2[i + 2] << 8 | ucs2[i + 3];
      if (lo < 0xDC00 || lo > 0xDFFF)
        return CHARSET_E_INVALID;
      cp = 0x10000 + ((cp - 0xD800) << 10 | (lo - 0xDC00));
      i += 2;
    }
    int rc = utf8_put(dst, cap, &o, cp);
    if (rc < 0)
      return rc;
  }
  return (int)o;
}

int charset_utf8_to_latin1(uint8_t *dst, size_t dst_cap, const char *utf8, size_t len, int replace)
{
  const uint8_t *s = (const uint8_t *)utf8;
  size_t cap = clamp_cap(dst_cap), i = 0, o = 0;

  while (i < len) {
    int32_t cp = s[i] < 0x80 ? s[i++] : utf8_next(s, len, &i);
    if (cp < 0)
      return CHARSET_E_INVALID;
    if (cp > 0xFF) {
      if (!replace)
        return CHARSET_E_UNREPRESENTABLE;
      cp = '?';
    }
    if (o == cap)
      return CHARSET_E_SPACE;
    dst[o++] = (uint8_t)cp;
  }
  return (int)o;
}

int charset_latin1_to_utf8(char *dst, size_t dst_cap, const uint8_t *latin1, size_t len)
{
  size_t cap = clamp_cap(dst_cap), o = 0;

  for (size_t i = 0; i < len; i++) {
    int rc = utf8_put(dst, cap, &o, latin1[i]);
    if (rc < 0)
      return rc;
  }
  return (int)o;
}
