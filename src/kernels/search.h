/*
 * Similarity kernels for exact search over an index (src/index/): the rows of one modality's
 * embeddings, [rows, columns] row-major, against a few query rows. Private to libuform.
 *
 *   dot_f32     scores[q][r] = Σ_c query_q[c] · row_r[c]                    F32 rows, F32 queries
 *   dot_bf16    scores[q][r] = Σ_c query_q[c] · row_r[c]                    BF16 rows, BF16 queries
 *   dot_i8      scores[q][r] = Σ_c query_q[c] · row_r[c]  (exact, in int32)  I8 rows, I8 queries
 *   hamming_b1  distances[q][r] = popcount(query_q XOR row_r)  (exact)       packed sign bits
 *   hamming_b1_within  near[q] bit r = (distances[q][r] ≤ limits[q])          packed sign bits
 *
 * Why not the GEMM for every query count: a matrix product packs its weight side per call and runs
 * register tiles of 6 rows by 64 columns, which a batch of one query fills to 1/6 (queries as X)
 * or 1/64 (queries as W). Scoring one query is a matrix-vector product that streams the index once
 * at memory bandwidth, so these kernels take one row (or a few, for I8 on AVX2 and short B1 rows)
 * and every query against it while it sits in L1; the index driver (src/index/index_search.c)
 * uses the GEMM for batches of 8 queries or more over float rows, where arithmetic starts to matter.
 *
 * Sums. dot_f32 and dot_bf16 accumulate in F32 lanes in a fixed order that depends only on
 * `columns` (never on the row's position, the block or the thread), so two equal rows score
 * exactly the same (search orders ties by item). dot_bf16 multiplies BF16 values exactly (GENOA's
 * VDPBF16PS, or widened to F32 elsewhere) and sums in F32; classes differ only by the order of
 * the F32 sums. dot_i8 and hamming_b1 are exact integers, identical on every class.
 *
 * I8 values must lie in [-127, 127] (uform_scalar_kind_t's I8); the products of -128 are
 * unspecified (the kernels neither trap nor read out of bounds on it).
 *
 * hamming_b1_within is B1 search's scan once its heaps are full: almost every row lies farther than
 * the heap's worst entry, so the kernel keeps the distances in registers, compares 16 at a time
 * with the limit and returns one bit per row; the driver recomputes the few marked rows' distances.
 *
 * Strides count elements (bytes for I8 and B1). `queries` ≤ UFORM__SEARCH_MAX_QUERIES per call.
 * Kernels never allocate, print or fail; `parallel` splitting is the driver's job.
 */
#ifndef UFORM_KERNELS_SEARCH_H
#define UFORM_KERNELS_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "uform/uform.h"

/* The most queries one kernel call scores (the drivers split larger batches). */
#define UFORM__SEARCH_MAX_QUERIES 64

typedef struct uform__search_kernels_t {
    uform_cpu_class_t cpu_class; /* the class whose instructions these kernels use */
    void (*dot_f32)(size_t rows, size_t columns, const float *x, size_t x_stride, size_t queries, const float *q,
                    size_t q_stride, float *scores, size_t scores_stride);
    void (*dot_bf16)(size_t rows, size_t columns, const uint16_t *x, size_t x_stride, size_t queries,
                     const uint16_t *q, size_t q_stride, float *scores, size_t scores_stride);
    void (*dot_i8)(size_t rows, size_t columns, const int8_t *x, size_t x_stride, size_t queries, const int8_t *q,
                   size_t q_stride, int32_t *scores, size_t scores_stride);
    /* `bytes` per row: ceil(dimensions / 8); unused low bits of the last byte must be equal in
     * rows and queries (the B1 format makes them 0). */
    void (*hamming_b1)(size_t rows, size_t bytes, const uint8_t *x, size_t x_stride, size_t queries,
                       const uint8_t *q, size_t q_stride, uint32_t *distances, size_t distances_stride);
    /* The rows within `limits[j]` of query j: bit r % 64 of near[j * near_stride + r / 64] is set
     * when popcount(query_j XOR row_r) ≤ limits[j] and clear otherwise, the bits past `rows` in the
     * last word included. near_stride ≥ ceil(rows / 64) words; `bytes` as hamming_b1. */
    void (*hamming_b1_within)(size_t rows, size_t bytes, const uint8_t *x, size_t x_stride, size_t queries,
                              const uint8_t *q, size_t q_stride, const uint32_t *limits, uint64_t *near,
                              size_t near_stride);
} uform__search_kernels_t;

/* The table for `cpu_class`, never NULL: SERIAL; HASWELL (AVX2, POPCNT; also SIERRA and
 * SKYLAKE, whose AVX-512 F adds nothing the memory-bound loops need beyond ICELAKE's forms);
 * ICELAKE (AVX-512 with VNNI and VPOPCNTDQ); GENOA and later (ICELAKE's with VDPBF16PS for BF16
 * rows); everything else SERIAL. The caller checks the machine runs the class. */
const uform__search_kernels_t *uform__search_kernels(uform_cpu_class_t cpu_class);

extern const uform__search_kernels_t uform__search_kernels_serial, uform__search_kernels_haswell,
    uform__search_kernels_icelake, uform__search_kernels_genoa;

#endif
