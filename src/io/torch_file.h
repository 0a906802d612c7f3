/*
 * PyTorch checkpoints as torch.save writes them: pytorch_model.bin, open_clip_pytorch_model.bin,
 * UForm 3's text_encoder.pt ... Private to libuform; the format, the allow-list and what is refused
 * are in docs/pytorch-files.md.
 *
 * Such a file is a ZIP archive of stored entries under one folder, `<archive>/data.pkl` (a pickle
 * of the saved object) and `<archive>/data/<key>` (the raw bytes of each storage). The reader
 * maps the file, validates the archive (zip.h), runs the pickle on a machine that only builds
 * data from an allow-list of globals, as torch.load(weights_only=True) would load it, and
 * presents the tensors of the resulting state dict as the safetensors reader does. The legacy
 * format of PyTorch before 1.6 (pickles and raw storages one after the other) is read too
 * (torch_legacy.c). Usage:
 *
 *     uform__torch_file_t *file = NULL;
 *     if (uform__torch_open("pytorch_model.bin", &file, outcome) != UFORM_OK) return ...;
 *     const uform__safetensors_tensor_t *weight = uform__torch_find(file, "encoder.layer.0.output.dense.weight");
 *     ...
 *     uform__torch_close(file); // the tensors' data pointers die with the file
 *
 * The saved object must be a dict; nested dicts are flattened with '.' ({"state_dict": {"w": T}}
 * gives "state_dict.w"); values that are neither tensors nor dicts (numbers, strings, None, lists
 * and tuples, even of tensors) and the state dict's `_metadata` are skipped (torch_flatten.c).
 *
 * A tensor whose elements are contiguous in row-major order (at any offset into its storage)
 * points into the mapping: weights are mapped, not copied. Any other view (a transposed tensor
 * saved as such, an expanded one) is copied into a contiguous buffer the file owns; the copies
 * together may not exceed the larger of the file's size and 64 MiB (UFORM_UNSUPPORTED past it).
 * Two names may share bytes (tied weights, views of one storage), exactly as in the checkpoint.
 *
 * Thread contract: an open file is immutable; any number of threads may read it concurrently.
 */
#ifndef UFORM_IO_TORCH_FILE_H
#define UFORM_IO_TORCH_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "io/safetensors.h"
#include "uform/uform.h"

typedef struct uform__torch_file_t uform__torch_file_t;

/*
 * Maps `path` read-only, validates it and builds its tensor table; on success `*file` holds the
 * open file (close it with uform__torch_close), on failure `*file` is NULL.
 * Statuses: UFORM_OK; UFORM_IO when the file cannot be opened, examined or mapped (the message
 * has the path and strerror); UFORM_FORMAT for anything malformed or hostile (the message names
 * the archive entry and the byte offset: in the file for ZIP records, in the pickle for its
 * opcodes; a global off the allow-list is named, complex and quantized storages included);
 * UFORM_UNSUPPORTED for valid files this reader does not read (the 1.0 preview and tar formats,
 * TorchScript archives, big-endian files, compressed or encrypted entries, int16
 * tensors, a top-level object that is not a dict, rank above 8, copies of non-contiguous views
 * past their limit); UFORM_OUT_OF_MEMORY (also when the mapping fails
 * with ENOMEM); UFORM_INVALID_ARGUMENT for NULL `path` or `file`. The file must not be truncated
 * while it is open.
 */
uform_status_t uform__torch_open(const char *path, uform__torch_file_t **file, uform_outcome_t *outcome);

/*
 * The same on `size` borrowed bytes at `bytes`, which must stay unchanged and alive until the
 * file is closed (mapped tensors point into them). Used by tests and the fuzz target. Statuses as
 * uform__torch_open, without UFORM_IO.
 */
uform_status_t uform__torch_open_memory(const void *bytes, size_t size, uform__torch_file_t **file,
                                        uform_outcome_t *outcome);

/* Unmaps (when opened by path) and frees everything, copies included; NULL is a no-op. */
void uform__torch_close(uform__torch_file_t *file);

/* The number of named tensors. */
size_t uform__torch_count(const uform__torch_file_t *file);

/*
 * Tensor `index` in ascending byte order of the names (strcmp); NULL when out of range. In each
 * record, `data` points into the mapping or into a copy the file owns; `offset` is the byte
 * offset of the first element from the start of the file for a mapped tensor and UINT64_MAX for
 * a copied one (uform__torch_mapped tells them apart too); `length` is element_count times the
 * element size. An empty tensor has length 0 and a non-NULL `data`.
 */
const uform__safetensors_tensor_t *uform__torch_at(const uform__torch_file_t *file, size_t index);

/* The tensor called `name` (binary search, O(log n)); NULL when there is none. */
const uform__safetensors_tensor_t *uform__torch_find(const uform__torch_file_t *file, const char *name);

/* 1 when `tensor` (a record of `file`) points into the mapped file, 0 when it is a copy. */
int uform__torch_mapped(const uform__torch_file_t *file, const uform__safetensors_tensor_t *tensor);

/* The whole file (or borrowed buffer) and its size. */
const uint8_t *uform__torch_bytes(const uform__torch_file_t *file, size_t *size);

#endif
