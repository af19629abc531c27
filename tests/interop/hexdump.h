/* hexdump.h - a frame as text2pcap reads it: offset, then 16 bytes a line
 * in hex. For the encoder tools of the tshark cross-checks.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_INTEROP_HEXDUMP_H
#define EMG_INTEROP_HEXDUMP_H

#include <stdint.h>
#include <stdio.h>

static inline void hexdump_frame(const uint8_t *b, int n)
{
  for (int off = 0; off < n; off += 16) {
    printf("%06x", off);
    for (int j = off; j < n && j < off + 16; j++)
      printf(" %02x", b[j]);
    printf("\n");
  }
}

#endif
