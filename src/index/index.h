/*
 * Indexes (uform.h, "Indexes"): a corpus's embeddings in one safetensors file. This header holds
 * the layout shared by the reader (index_open.c), the builder (index_build.c) and the search
 * (index_search.c). Private to libuform.
 *
 * File layout (format 1):
 *   embeddings.{text,image,video,audio}  [n_m, dims] F32/F16/BF16/I8, or U8 [n_m, ceil(dims/8)] for B1
 *   items.modality                      U8  [count]
 *   items.path_offsets                  I64 [count + 1], from 0, non-decreasing, last = bytes
 *   items.paths                         U8  [bytes]
 *   __metadata__: uform.index.format "1", .fingerprint (32 hex), .dims, .scalar, .count
 * Item i is row k of its modality's tensor, k = the number of earlier items of that modality.
 */
#ifndef UFORM_INDEX_INDEX_H
#define UFORM_INDEX_INDEX_H

#include "io/safetensors.h"
#include "uform/uform.h"

#define UFORM__INDEX_FORMAT "1"
#define UFORM__INDEX_KEY_PREFIX "uform.index."
#define UFORM__INDEX_KEY_FORMAT "uform.index.format"
#define UFORM__INDEX_KEY_FINGERPRINT "uform.index.fingerprint"
#define UFORM__INDEX_KEY_DIMS "uform.index.dims"
#define UFORM__INDEX_KEY_SCALAR "uform.index.scalar"
#define UFORM__INDEX_KEY_COUNT "uform.index.count"
/* The widest embedding an index holds (a sanity bound on the metadata, far above any model's E). */
#define UFORM__INDEX_MAX_DIMS 65536

/* One modality's rows inside an open index. */
typedef struct uform__index_part_t {
    const unsigned char *data; /* [rows, row_bytes], rows packed */
    size_t rows;
    uint64_t *items;           /* [rows] the item number of each row (owned) */
} uform__index_part_t;

struct uform_index_s {
    uform__safetensors_t *file;
    size_t count, dims, row_bytes;
    uform_scalar_kind_t scalar;
    char fingerprint[UFORM_FINGERPRINT_CAPACITY];
    const uint8_t *modality;           /* [count] */
    const unsigned char *path_offsets; /* [count + 1] little-endian I64, possibly unaligned: read with memcpy */
    const char *paths;                 /* [paths_bytes] */
    uint64_t paths_bytes;
    uform__index_part_t parts[4];
    uint64_t *rows_of;                 /* [count] each item's row within its modality (owned) */
};

/* Lower-case scalar names as the metadata spells them; NULL outside the enum. */
const char *uform__index_scalar_name(uform_scalar_kind_t scalar);
/* Answers 1 and sets `*scalar` for a known name, else 0. */
int uform__index_scalar_parse(const char *name, uform_scalar_kind_t *scalar);
/* The safetensors dtype that stores a scalar kind (B1 as U8). */
uform__safetensors_dtype_t uform__index_scalar_dtype(uform_scalar_kind_t scalar);
/* Tensor names per modality: "embeddings.text" ... */
const char *uform__index_tensor_name(uform_modality_t modality);

/* Opens an index held in memory (`bytes` borrowed until the index is freed): the fuzz target's
 * entry. Every check of uform_index_open, without UFORM_IO; `model` may be NULL. */
uform_status_t uform__index_open_memory(const void *bytes, size_t size, uform_model_t model, uform_index_t *index,
                                        uform_outcome_t *outcome);

/* The builder's pieces that uform_index_builder_add and the vectors' entry (index_vectors.c) share
 * (index_build.c). `make` copies a fingerprint of UFORM_FINGERPRINT_CAPACITY bytes. `reserve`
 * makes room for `count` rows of `modality` and `path_bytes` of paths, answering 0 when out of
 * memory (the builder unchanged); `append` then copies paths->count rows (each row_bytes of the
 * builder's scalar, `row_stride` bytes apart) and their paths, and cannot fail. */
uform_status_t uform__index_builder_make(size_t dims, uform_scalar_kind_t scalar, const char *fingerprint,
                                        uform_index_builder_t *builder, uform_outcome_t *outcome, const char *function);
int uform__index_builder_reserve(uform_index_builder_t builder, uform_modality_t modality, size_t count, size_t path_bytes);
void uform__index_builder_append(uform_index_builder_t builder, uform_modality_t modality, const void *rows,
                                 size_t row_stride, const uform_tape_t *paths);

/* An index file's contents for the writer (index_build.c): the shapes of index.h's seven tensors and
 * their bytes, data[m] for embeddings of modality m, then the items' three tensors; a NULL entry
 * with bytes is filled through the writer's hook (uform__index_write's `fill`). */
enum { UFORM__INDEX_MODALITY = 4, UFORM__INDEX_OFFSETS = 5, UFORM__INDEX_PATHS = 6, UFORM__INDEX_TENSORS = 7 };
typedef struct uform__index_layout_t {
    size_t dims, row_bytes;
    uform_scalar_kind_t scalar;
    const char *fingerprint;
    uint64_t rows[4];     /* rows per modality */
    uint64_t count, paths_bytes;
    const void *data[UFORM__INDEX_TENSORS];
} uform__index_layout_t;
/* Writes an index file atomically (uform_index_builder_write's checks of `metadata` and its
 * statuses; failures name `function`); `fill` may be NULL when every tensor's data is there. */
uform_status_t uform__index_write(const char *path, const uform__index_layout_t *layout, const char *const *metadata,
                                  size_t metadata_count, uform__safetensors_fill_t fill, void *fill_state, uform_outcome_t *outcome,
                                  const char *function);
/* The positions (0-6, as in the layout's `data`) of an index's tensors in the order the file lays
 * their data out, which depends on the scalar alone. */
void uform__index_data_order(uform_scalar_kind_t scalar, size_t order[7]);

/* A builder's arrays as they stand (index_build.c), for the gather (index_gather.c): borrowed until
 * the builder's next add or free. */
typedef struct uform__index_builder_view_t {
    size_t dims, row_bytes, count;
    uform_scalar_kind_t scalar;
    const char *fingerprint;
    const unsigned char *rows[4];  /* per modality: [rows_bytes[m] / row_bytes, row_bytes] */
    size_t rows_bytes[4];
    const unsigned char *modality; /* [count] */
    const unsigned char *offsets;  /* [count + 1] uint64, possibly unaligned: read with memcpy */
    const unsigned char *paths;    /* [paths_bytes] */
    size_t paths_bytes;
} uform__index_builder_view_t;
void uform__index_builder_view(uform_index_builder_t builder, uform__index_builder_view_t *view);

/* The path offset of item `item` (0 ..= count). */
uint64_t uform__index_path_offset(const struct uform_index_s *index, size_t item);

/* Hits by score descending, then item ascending: the order of every answer (qsort comparator). */
int uform__index_compare_hits(const void *left, const void *right);

/* The checks exact and approximate search share on a request's queries, against an index of
 * `dims` columns: arena, queries, top, columns, stride and modality bits, each refused as
 * UFORM_INVALID_ARGUMENT naming it. */
uform_status_t uform__index_check_queries(uform_arena_t arena, const float *queries, size_t count, size_t columns,
                                          size_t stride, size_t top, unsigned modalities, size_t dims,
                                          uform_outcome_t *outcome, const char *function);

#endif
