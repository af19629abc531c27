/* bigmem.h - zeroed memory for large tables read at random.
 *
 * The DLR table, the journal's id maps and the SCTS table are far bigger
 * than the caches and are read at random: with 4 KiB pages nearly every
 * such read also misses the TLB. These blocks ask the kernel for huge pages
 * (madvise, so it works whether transparent huge pages are "always" or
 * "madvise"), and come back to it whole when freed.
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef EMG_BIGMEM_H
#define EMG_BIGMEM_H

#include <stddef.h>

/* size bytes, zeroed, aligned to a huge page from 2 MiB up; NULL when out
 * of memory. */
void *bigmem_alloc(size_t size);

/* Frees a block of bigmem_alloc; size as allocated. NULL is ignored. */
void bigmem_free(void *p, size_t size);

#endif
