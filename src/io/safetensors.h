/*
 * safetensors: the checkpoint container (docs/model.md). Private to libuform.
 *
 * A file is an 8-byte little-endian header length N, N bytes of JSON, then the data section:
 *
 *     {"__metadata__": {"uform.format": "4"},
 *      "blocks.0.weight": {"dtype": "BF16", "shape": [768, 768], "data_offsets": [0, 1179648]}}
 *
 * `data_offsets` are [begin, end) byte offsets into the data section (which starts at 8 + N).
 * The reader maps the file read-only and validates every byte of the header at open, so that
 * once `uform__safetensors_open` answers UFORM_OK every tensor's range lies inside the file,
 * matches its shape and dtype, and overlaps no other; nothing is re-checked later. The writer
 * replaces its target atomically (temporary file, fsync, rename, fsync of the directory).
 *
 * Usage:
 *
 *     uform__safetensors_t *file = NULL;
 *     if (uform__safetensors_open("model.safetensors", &file, outcome) != UFORM_OK) return ...;
 *     const uform__safetensors_tensor_t *weight = uform__safetensors_find(file, "blocks.0.weight");
 *     const char *format = uform__safetensors_metadata_find(file, "uform.format");
 *     ...
 *     uform__safetensors_close(file); // the tensors' data pointers die with the file
 *
 * Thread contract: an open file is immutable; any number of threads may read it concurrently.
 * Failures write the internal function's name into the outcome; a public caller that wants its
 * own name in the one-line form overwrites `outcome->function` after a failure.
 */
#ifndef UFORM_IO_SAFETENSORS_H
#define UFORM_IO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "uform/uform.h"

/* The most dimensions a tensor may have; a header with more is UFORM_FORMAT. */
#define UFORM__SAFETENSORS_MAX_RANK 8

/* The largest JSON header the reader accepts (and the writer produces): 100 MiB. */
#define UFORM__SAFETENSORS_MAX_HEADER ((uint64_t)100 << 20)

/* Offsets and dimensions travel through JSON as doubles, so both stay below 2^53. */
#define UFORM__SAFETENSORS_MAX_INTEGER ((uint64_t)1 << 53)

/* The element types, spelled in the header exactly as their names here ("BF16", "BOOL" ...). */
typedef enum uform__safetensors_dtype_t {
    UFORM__SAFETENSORS_BF16 = 0,
    UFORM__SAFETENSORS_F16 = 1,
    UFORM__SAFETENSORS_F32 = 2,
    UFORM__SAFETENSORS_F64 = 3,
    UFORM__SAFETENSORS_I8 = 4,
    UFORM__SAFETENSORS_U8 = 5,
    UFORM__SAFETENSORS_I32 = 6,
    UFORM__SAFETENSORS_I64 = 7,
    UFORM__SAFETENSORS_BOOL = 8,
    UFORM__SAFETENSORS_DTYPE_COUNT = 9
} uform__safetensors_dtype_t;

/* "BF16" ... "BOOL"; NULL for a value outside the enum. */
const char *uform__safetensors_dtype_name(uform__safetensors_dtype_t dtype);

/* Bytes per element (BOOL is one byte); 0 for a value outside the enum. */
size_t uform__safetensors_dtype_size(uform__safetensors_dtype_t dtype);

/* Finds the dtype spelled exactly `name` (case-sensitive). Answers 1 and sets `*dtype`, or 0. */
int uform__safetensors_dtype_parse(const char *name, uform__safetensors_dtype_t *dtype);

/* ------------------------------------------------------------------------------------------ */
/* Reading                                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* One tensor of an open file. Every pointer lives as long as the file. */
typedef struct uform__safetensors_tensor_t {
    const char *name;                /* NUL-terminated, valid UTF-8 */
    uform__safetensors_dtype_t dtype;
    uint32_t rank;                   /* 0 (a scalar) to UFORM__SAFETENSORS_MAX_RANK */
    uint64_t shape[UFORM__SAFETENSORS_MAX_RANK]; /* shape[rank..] are 0 */
    uint64_t element_count;          /* product of the shape; 1 for a scalar */
    uint64_t offset;                 /* begin of data_offsets: bytes from the data section's start */
    uint64_t length;                 /* end - begin == element_count * dtype size */
    const void *data;                /* into the mapping (or the borrowed buffer); aligned only as
                                        the file happens to align it: check before vector loads */
} uform__safetensors_tensor_t;

typedef struct uform__safetensors_t uform__safetensors_t;

/*
 * Maps `path` read-only and validates it; on success `*file` holds the open file (close it with
 * uform__safetensors_close), on failure `*file` is NULL.
 * Statuses: UFORM_OK; UFORM_IO when the file cannot be opened, examined or mapped (the message
 * has the path and strerror); UFORM_FORMAT for anything malformed (the message names the tensor
 * or metadata key, what was expected and what was found); UFORM_OUT_OF_MEMORY (also when the
 * mapping fails for lack of memory or address space, ENOMEM);
 * UFORM_INVALID_ARGUMENT for NULL `path` or `file`. The file must not be truncated by anyone while
 * it is open (a mapping of vanished pages faults).
 */
uform_status_t uform__safetensors_open(const char *path, uform__safetensors_t **file, uform_outcome_t *outcome);

/*
 * The same on `size` bytes at `bytes`, borrowed: they must stay unchanged and alive until the
 * file is closed (the tensors' data pointers point into them). Used by the model loader for a
 * checkpoint in RAM and by the fuzz target. Statuses as uform__safetensors_open, without UFORM_IO.
 */
uform_status_t uform__safetensors_open_memory(const void *bytes, size_t size, uform__safetensors_t **file,
                                             uform_outcome_t *outcome);

/* Unmaps (when opened by path) and frees everything; NULL is a no-op. */
void uform__safetensors_close(uform__safetensors_t *file);

/* The number of tensors (the `__metadata__` entry is not one). */
size_t uform__safetensors_count(const uform__safetensors_t *file);

/* Tensor `index` in ascending byte order of the names (strcmp); NULL when out of range. */
const uform__safetensors_tensor_t *uform__safetensors_at(const uform__safetensors_t *file, size_t index);

/* The tensor called `name` (binary search, O(log n)); NULL when there is none. */
const uform__safetensors_tensor_t *uform__safetensors_find(const uform__safetensors_t *file, const char *name);
/* The tensor called `name` among `tensors` [count] sorted by name (strcmp), or NULL: the lookup of
 * every reader that lists its tensors this way (safetensors, PyTorch zips). */
const uform__safetensors_tensor_t *uform__tensors_find_sorted(const uform__safetensors_tensor_t *tensors, size_t count,
                                                              const char *name);

/* The number of `__metadata__` entries (0 when the header has none). */
size_t uform__safetensors_metadata_count(const uform__safetensors_t *file);

/* Entry `index` in ascending byte order of the keys: answers 1 and sets `*key` and `*value`
 * (NUL-terminated, living as long as the file), or 0 when out of range. */
int uform__safetensors_metadata_at(const uform__safetensors_t *file, size_t index, const char **key,
                                   const char **value);

/* The value of metadata `key`, or NULL when there is none. */
const char *uform__safetensors_metadata_find(const uform__safetensors_t *file, const char *key);

/* The whole file (or borrowed buffer), and where its data section starts within it. */
const uint8_t *uform__safetensors_bytes(const uform__safetensors_t *file, size_t *size, size_t *data_start);

/* ------------------------------------------------------------------------------------------ */
/* Writing                                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* One tensor to write; everything is borrowed for the duration of the call. */
typedef struct uform__safetensors_source_t {
    const char *name;                /* NUL-terminated UTF-8, unique, not "__metadata__" */
    uform__safetensors_dtype_t dtype;
    uint32_t rank;                   /* 0 to UFORM__SAFETENSORS_MAX_RANK */
    const uint64_t *shape;           /* `rank` dimensions; may be NULL when rank is 0 */
    const void *data;                /* element_count * dtype size bytes; may be NULL when that is 0 */
} uform__safetensors_source_t;

/* One `__metadata__` entry; both strings NUL-terminated UTF-8, keys unique. */
typedef struct uform__safetensors_pair_t {
    const char *key;
    const char *value;
} uform__safetensors_pair_t;

/*
 * Progress of a write: `written` of `total` bytes (header included) have gone to the temporary
 * file. Called after the header and after each chunk of data (at most 8 MiB apart), from the
 * writing thread, the last time with written == total. Answering non-zero cancels the write:
 * the temporary file is removed, the target keeps its old contents and the writer answers
 * UFORM_CANCELLED. `state` is the caller's, passed through.
 */
typedef int (*uform__safetensors_progress_t)(void *state, uint64_t written, uint64_t total);

/*
 * Data that is not in memory: a tensor whose `data` is NULL (and whose length is not 0) is filled
 * through this hook, which copies the tensor's bytes [offset, offset + bytes) into `buffer`. It is
 * called from the writing thread in data order (uform__safetensors_data_order), chunk after chunk
 * of at most 8 MiB, each tensor from its first byte to its last; `tensor` is the tensor's position
 * in the request. Answering non-zero stops the write as the progress hook's cancel does
 * (UFORM_CANCELLED, nothing left behind); the hook keeps its own reason. `state` is the caller's.
 */
typedef int (*uform__safetensors_fill_t)(void *state, size_t tensor, uint64_t offset, void *buffer, size_t bytes);

typedef struct uform__safetensors_write_t {
    const uform__safetensors_source_t *tensors;
    size_t tensor_count;
    const uform__safetensors_pair_t *metadata;
    size_t metadata_count;           /* 0 writes no `__metadata__` entry */
    uform__safetensors_progress_t progress; /* may be NULL */
    void *progress_state;
    uform__safetensors_fill_t fill;         /* may be NULL: then every tensor with bytes has data */
    void *fill_state;
} uform__safetensors_write_t;

/* The order the writer lays tensors' data out in: `order[i]` is the position in `tensors` of the
 * i-th tensor written (element size descending, then name, as the writer sorts them). Names are
 * not checked here; a request the writer accepts has them unique. */
void uform__safetensors_data_order(const uform__safetensors_source_t *tensors, size_t count, size_t *order);

/*
 * Writes the file to `path` atomically: a temporary file `.<name>.XXXXXX` in the same directory
 * receives everything, is fsynced and renamed over `path`, then the directory is fsynced. A new
 * file gets mode 0644, a replaced one keeps its mode. The layout is deterministic: the header
 * lists `__metadata__` (keys sorted) and then the tensors in data order; the data are ordered by
 * dtype size (largest first) and then by name, so with the header padded with spaces to a
 * multiple of 8 every tensor starts at a multiple of its element size from an 8-aligned data
 * section. Identical requests produce identical bytes.
 * Statuses: UFORM_OK; UFORM_INVALID_ARGUMENT for a malformed request (NULL or duplicate names,
 * invalid UTF-8, rank over 8, a dimension of 2^53 or more, missing data and no fill hook, an unknown dtype; the
 * message names the tensor or key); UFORM_IO with the path and strerror when the system refuses
 * (nothing is left behind and `path` is untouched, except that a failing fsync of the directory
 * after the rename is reported while the new file is in place); UFORM_CANCELLED from the
 * progress hook; UFORM_OUT_OF_MEMORY.
 */
uform_status_t uform__safetensors_write(const char *path, const uform__safetensors_write_t *request,
                                       uform_outcome_t *outcome);

/*
 * The same bytes `uform__safetensors_write` would write, in one allocation: `*bytes` must be
 * released with free(). Used by tests and fuzz seeds. Statuses: UFORM_OK, UFORM_INVALID_ARGUMENT,
 * UFORM_OUT_OF_MEMORY (also when the size does not fit in memory).
 */
uform_status_t uform__safetensors_encode(const uform__safetensors_write_t *request, uint8_t **bytes, size_t *size,
                                        uform_outcome_t *outcome);

#endif
