/* strutil.h - small string helpers for fixed-size fields.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef EMG_STRUTIL_H
#define EMG_STRUTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Copies src (NULL = "") into dst of cap bytes, cut to cap - 1 and always
 * terminated. On hot paths in place of snprintf(dst, cap, "%s", src),
 * which costs a format parse and a FILE set-up per call. */
static inline void str_copy(char *dst, size_t cap, const char *src)
{
  size_t n = src ? strnlen(src, cap - 1) : 0;
  if (n)
    memcpy(dst, src, n);
  dst[n] = '\0';
}

/* Text built piece by piece into a fixed buffer, for the formats written
 * once a message (receipt texts, ids). At most cap - 1 bytes are kept, the
 * text is always terminated, and `cut` says that something did not fit. */
struct str_out {
  char *p;
  size_t cap, len;
  bool cut;
};

static inline struct str_out str_out(char *dst, size_t cap)
{
  if (cap)
    dst[0] = '\0';
  return (struct str_out){ dst, cap, 0, cap == 0 };
}

static inline void str_put(struct str_out *o, const char *s, size_t n)
{
  size_t room = o->cap ? o->cap - 1 - o->len : 0;
  if (n > room) {
    n = room;
    o->cut = true;
  }
  if (n)
    memcpy(o->p + o->len, s, n);
  o->len += n;
  if (o->cap)
    o->p[o->len] = '\0';
}

static inline void str_puts(struct str_out *o, const char *s)
{
  str_put(o, s, strlen(s));
}

/* v in decimal, zero-padded to at least width digits (at most 20). */
static inline void str_put_dec(struct str_out *o, uint64_t v, unsigned width)
{
  char digits[20];
  size_t n = 0;
  do {
    digits[sizeof digits - 1 - n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  while (n < width && n < sizeof digits)
    digits[sizeof digits - 1 - n++] = '0';
  str_put(o, digits + sizeof digits - n, n);
}

#endif
