/*
 * Advice that a range of anonymous memory be backed by 2 MiB pages (transparent huge pages):
 * fewer TLB misses for memory read in long streams, and a fault per 2 MiB instead of per 4 KiB.
 * Advice only: where transparent huge pages are off, or the range holds no whole aligned 2 MiB,
 * nothing changes. `memory` must be page-aligned.
 */
#ifndef UFORM_CORE_HUGE_PAGES_H
#define UFORM_CORE_HUGE_PAGES_H

#include <stddef.h>
#include <sys/mman.h>

/* The bytes of one such page: the alignment and the multiple that advice pays off for. */
#define UFORM__HUGE_PAGE ((size_t)2 << 20)

static inline void uform__advise_huge_pages(void *memory, size_t bytes) {
#if defined(MADV_HUGEPAGE)
    if (memory && bytes) (void)madvise(memory, bytes, MADV_HUGEPAGE);
#else
    (void)memory, (void)bytes;
#endif
}

#endif
