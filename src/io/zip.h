/*
 * A validating reader of ZIP archives of the kind torch.save writes (docs/pytorch-files.md).
 * Private to libuform.
 *
 * The reader works on bytes it borrows (a mapped file or a buffer) and never copies an entry's
 * data: it checks the structure once and answers where each entry's bytes lie. What it checks,
 * each failure UFORM_FORMAT naming the entry and the byte offset unless said otherwise:
 *
 *   - the end-of-central-directory record (found backwards from the end, behind a comment of up
 *     to 65,535 bytes) and, when its locator precedes it, the zip64 end record, whose counts and
 *     offsets then replace the 16- and 32-bit ones (as miniz, PyTorch's writer and reader, does);
 *     an archive split over several disks is UFORM_UNSUPPORTED;
 *   - every central directory header: its signature, that it lies inside the directory, its
 *     zip64 extra field whenever a size or offset field is saturated (0xFFFFFFFF), a name that is
 *     not empty and holds no NUL byte, and no encryption (UFORM_UNSUPPORTED);
 *   - every local header: its signature, the same name and method as the central directory says,
 *     and the entry's data lying between the header and the central directory;
 *   - a stored entry (method 0) stores exactly its size; names are unique; no two entries' bytes
 *     overlap.
 *
 * A compressed entry is listed like any other (its `method` is not 0): whoever needs its bytes
 * refuses it, so an archive with an extra compressed file is still readable. CRC-32 is not
 * checked here: `uform__zip_crc32` lets a caller check the entries it reads in full.
 *
 * Thread contract: an open archive is immutable; any number of threads may read it.
 */
#ifndef UFORM_IO_ZIP_H
#define UFORM_IO_ZIP_H

#include <stddef.h>
#include <stdint.h>

#include "uform/uform.h"

/* One entry of an open archive; `name` lives as long as the archive. */
typedef struct uform__zip_entry_t {
    const char *name;        /* NUL-terminated, the bytes the central directory spells */
    uint16_t method;         /* 0 stored; anything else is compressed (8 deflate, ...) */
    uint16_t flags;          /* the general-purpose bit flags of the central directory */
    uint32_t crc32;          /* as recorded by the writer */
    uint64_t size;           /* uncompressed size */
    uint64_t stored_size;    /* bytes at `data_offset` (== size for a stored entry) */
    uint64_t header_offset;  /* the local header's first byte */
    uint64_t data_offset;    /* the entry's first data byte, from the start of the bytes */
} uform__zip_entry_t;

typedef struct uform__zip_t uform__zip_t;

/*
 * Validates `size` bytes at `bytes` (borrowed: they must outlive the archive) as a ZIP archive.
 * On success `*zip` holds it (close it with uform__zip_close); on failure `*zip` is NULL.
 * Statuses: UFORM_OK; UFORM_FORMAT (malformed: the message names the record or entry and the
 * byte offset); UFORM_UNSUPPORTED (several disks, an encrypted entry); UFORM_OUT_OF_MEMORY;
 * UFORM_INVALID_ARGUMENT (NULL `zip`, or NULL `bytes` with a non-zero size).
 */
uform_status_t uform__zip_open(const uint8_t *bytes, size_t size, uform__zip_t **zip, uform_outcome_t *outcome);

/* Frees the archive's tables (not the borrowed bytes); NULL is a no-op. */
void uform__zip_close(uform__zip_t *zip);

/* The number of entries. */
size_t uform__zip_count(const uform__zip_t *zip);

/* Entry `index` in central directory order; NULL when out of range. */
const uform__zip_entry_t *uform__zip_at(const uform__zip_t *zip, size_t index);

/* The entry called exactly `name` (binary search); NULL when there is none. */
const uform__zip_entry_t *uform__zip_find(const uform__zip_t *zip, const char *name);

/* Continues the CRC-32 (ISO-HDLC, the polynomial ZIP uses) `crc` over `size` bytes; start with 0. */
uint32_t uform__zip_crc32(uint32_t crc, const void *bytes, size_t size);

#endif
