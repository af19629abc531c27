/* crc32c.h - CRC-32C (Castagnoli), the checksum of journal records.
 *
 * On x86-64 with SSE4.2 the CPU's crc32 instruction computes it; elsewhere
 * a slicing-by-8 table does. Both give the same values, so a journal written
 * on one machine reads on another.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_CRC32C_H
#define EMG_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The CRC-32C of n bytes at p, continuing from crc (0 to start).
 * crc32c(0, "123456789", 9) == 0xe3069283. Thread-safe. */
uint32_t crc32c(uint32_t crc, const void *p, size_t n);

/* The table implementation alone, whatever the CPU has (for tests). */
uint32_t crc32c_portable(uint32_t crc, const void *p, size_t n);

#endif
