/*
 * Mapping a whole file read-only, for the readers that parse files in place (safetensors, PyTorch
 * zips, FAISS structures): open, check that it is a regular file whose size fits the address space,
 * map it privately, close the descriptor. An empty file maps to NULL with size 0 (mmap refuses a
 * length of 0; each parser refuses the empty file in its own words).
 *
 * Errors, each naming `shown` (the path as the caller quotes it in its messages): UFORM_IO when the
 * file cannot be opened or examined, is not a regular file (a folder, a FIFO: "not a regular file"),
 * or is larger than the address space; UFORM_OUT_OF_MEMORY when mmap runs out of memory or address
 * space (ENOMEM), which is no fault of the file. Never prints. Private to libuform.
 */
#ifndef UFORM_CORE_MAP_FILE_H
#define UFORM_CORE_MAP_FILE_H

#include <stddef.h>

#include "uform/uform.h"

/* Maps `path` into `*bytes` (NULL when empty) and `*size`; on failure both are NULL / 0. */
uform_status_t uform__map_file(const char *path, const char *shown, const void **bytes, size_t *size,
                               uform_outcome_t *outcome, const char *function);

/* Unmaps what uform__map_file mapped (nothing for NULL or an empty file). */
void uform__unmap_file(const void *bytes, size_t size);

#endif
