/* bigmem.c - large zeroed blocks on huge pages where the kernel gives them.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdint.h>
#include <sys/mman.h>
#include "bigmem.h"

#define HUGE_PAGE ((size_t)2 << 20)
#define SMALL_PAGE ((size_t)4096)

/* Whole small pages. A block is not rounded up to whole huge pages: the
 * kernel backs its aligned 2 MiB stretches with huge pages and the rest with
 * small ones, and a table of rings (one per DLR shard, each a few MiB) would
 * otherwise hold up to a huge page too much per ring. */
static size_t rounded(size_t size)
{
  return (size + SMALL_PAGE - 1) & ~(SMALL_PAGE - 1);
}

void *bigmem_alloc(size_t size)
{
  if (!size)
    size = 1;
  size_t want = rounded(size);
  if (want < HUGE_PAGE) {
    void *p = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
  }
  /* Map one huge page more and trim, for the alignment huge pages need. */
  uint8_t *raw = mmap(NULL, want + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED)
    return NULL;
  uint8_t *p = (uint8_t *)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
  if (p > raw)
    munmap(raw, (size_t)(p - raw));
  size_t tail = (size_t)(raw + want + HUGE_PAGE - (p + want));
  if (tail)
    munmap(p + want, tail);
  madvise(p, want, MADV_HUGEPAGE);   /* a hint: without it the block still works */
  return p;
}

void bigmem_free(void *p, size_t size)
{
  if (p)
    munmap(p, rounded(size ? size : 1));
}
