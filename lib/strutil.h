/* strutil.h - small string helpers for fixed-size fields. */
#ifndef EMG_STRUTIL_H
#define EMG_STRUTIL_H

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

#endif
