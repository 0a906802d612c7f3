/*
 * Opening a file that a reader parses in place, by path or from borrowed bytes: the safetensors
 * reader (safetensors_read.c) and the PyTorch checkpoint reader (torch_file.c) open their files
 * the same way, so the argument checks, the mapping, the record's allocation and the clean-up
 * after a failed parse are written here once and each reader says only how it parses, closes and
 * words a failure.
 *
 * By path: maps the file read-only (core/map_file.h; an empty file maps to no bytes and each
 * parser refuses it in its own words). From memory: borrows the caller's bytes, which must outlive
 * the record. Either way the record is allocated zeroed with the reader's size, its `source` is
 * filled in, and the reader's parse runs; a failed parse closes the record (which unmaps) and its
 * message is told again under the reader's `function`, after the quoted path when there is one.
 *
 * Statuses: UFORM_INVALID_ARGUMENT ("`file` is NULL", "`path` is NULL", "`bytes` is NULL but
 * `size` is N"), the mapping's UFORM_IO / UFORM_OUT_OF_MEMORY, UFORM_OUT_OF_MEMORY "cannot
 * allocate a file record", and whatever the parse answers. Never prints. Private to libuform.
 */
#ifndef UFORM_IO_OPEN_MAPPED_H
#define UFORM_IO_OPEN_MAPPED_H

#include <stddef.h>
#include <stdint.h>

#include "uform/uform.h"

/* What a record was parsed from; the first member of every record opened here. */
typedef struct uform__io_source_t {
    const uint8_t *bytes; /* the whole file or borrowed buffer */
    size_t size;
    void *mapping;        /* non-NULL when opened by path: unmapped by the reader's close */
} uform__io_source_t;

/* How one reader turns a source into its record. */
typedef struct uform__io_reader_t {
    size_t record_size; /* sizeof the record, which starts with a uform__io_source_t */
    /* Validates the record's source and fills the rest; on failure the caller closes it. */
    uform_status_t (*parse)(void *record, uform_outcome_t *outcome);
    /* Frees the record and what it holds, and unmaps its source's mapping. */
    void (*close)(void *record);
    /* The function a failed parse's message is told under ("uform__torch_open"), whichever layer
     * wrote it, and whether the file was opened by path or from memory. */
    const char *function;
} uform__io_reader_t;

/* Maps `path` and parses it into `*record` (NULL on failure); errors on behalf of `function`. */
uform_status_t uform__io_open_path(const uform__io_reader_t *reader, const char *path, void **record,
                                   uform_outcome_t *outcome, const char *function);

/* The same on `size` borrowed bytes at `bytes`. */
uform_status_t uform__io_open_bytes(const uform__io_reader_t *reader, const void *bytes, size_t size, void **record,
                                    uform_outcome_t *outcome, const char *function);

#endif
