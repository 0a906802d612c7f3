/*
 * Screening F32 rows by a cheaper product (index_search.c, many queries): per block of rows, an
 * approximate score s' for every (query, row) pair and a bound δ with s_f32 − s' ≤ δ, where s_f32
 * is the score the heaps hold (the search kernels' dot_f32: F32 products and sums). A row whose
 * s' + δ falls below a query's bar cannot enter that query's heap; the others are scored exactly.
 * Private to libuform.
 *
 * Which screen, by the class's instructions (uform__screen_choose), from UFORM__SCREEN_QUERIES
 * queries over F32 rows:
 *   BF16  GENOA's GEMM table (GENOA, SAPPHIRE, GRANITE, DIAMOND: native BF16 dot products, twice
 *         F32's rate): the block rounded to BF16 and packed, the queries too, products summed in F32.
 *   I8    the other classes with INT8 kernels of their own (HASWELL and SIERRA: AVX2 vpmaddubsw;
 *         SKYLAKE: AVX-512 BW; ICELAKE: VNNI): the block quantized per row to int8 and packed
 *         (kernels/gemm_i8.h), the queries quantized once, products summed exactly in int32 and
 *         scaled to F32. 1,024 queries over 1 M × 256 F32, 2 threads of a Zen 5 under each class
 *         (bench_search_batch --no-faiss): HASWELL 2,911 → 1,956 ms, SKYLAKE 1,753 → 1,329,
 *         ICELAKE 1,849 → 786; at 256 queries 781 → 663, 482 → 418, 467 → 276. (GENOA keeps
 *         BF16: its VNNI screen was slower at 256 queries, 426–432 ms against 322–348.)
 *   SERIAL none: it has nothing faster than its F32 loop.
 *
 * Per row the screen keeps ‖x‖ (summed in F32 over 16 lanes, rounded up) and s_x (I8: the row's
 * int8 scale; BF16: 0); per query three terms, so that
 *
 *   δ = ‖x‖·reach + s_x·spread + slack.
 *
 * Notation: q a query, n = ‖q‖, d = dims, γ = (d + 2)·2^-24 (d F32 additions, at most two more in
 * the GEMM's K slices), so |s_f32 − q·x| ≤ γ·Σ|q||x| ≤ γ·n·‖x‖ (Cauchy–Schwarz).
 *
 * BF16, with u = 2^-8 (BF16's unit roundoff):
 *   |q̂ x̂ − q x|  ≤ (2u + u²)·|q||x|     per term (BF16 products are exact in F32)
 *   |s' − Σ q̂ x̂| ≤ γ·(1 + u)²·Σ|q||x|  (the screen's F32 sums)
 * so s_f32 − s' ≤ C·n·‖x‖ with C = 2u + u² + 2.2γ, and reach = 1.01·C·(1 + 2γ)·n + 2^-110,
 * spread = 0, slack = 2^-60·n + 2^-100. VDPBF16PS flushes values below 2^-126 to zero (inputs
 * and sums): at most 2^-126·(√d·(n + ‖x‖) + d) more, inside the slack for d ≤ 2^16.
 *
 * I8, with the quantizer of kernels/gemm_i8.h (s = fl(amax/127), X = rint(fl(x·fl(127/amax)))):
 *   per element |x − s·X| ≤ s/2 + g·|x|, g = 3.01·2^-24 (the two divisions' and the product's
 *   roundings; the clamp to ±127 never acts, as |fl(x·inv)| < 127.5), so ‖x − x̂‖ ≤ √d·s/2 + g‖x‖;
 *   a row whose amax is below 2^-96 quantizes to 0 with s = 0: its error ‖x‖ ≤ √d·2^-96;
 *   the query likewise, q̂ = s_q·Q, with its error e = ‖q − q̂‖ taken exactly (in double);
 *   s' = fl(fl(acc)·fl(s_q·s)) with acc = Σ Q·X exact in int32: s' = q̂·x̂·(1 + ε), |ε| ≤ η = 3.01·2^-24
 *   (plus at most 2^-120 where the scales' product underflows);
 *   q·x − q̂·x̂ = (q − q̂)·x + q̂·(x − x̂), ‖q̂‖ ≤ n + e, ‖x̂‖ ≤ ‖x‖ + ‖x − x̂‖, hence
 *   s_f32 − s' ≤ ‖x‖·[γn + e + (n + e)(g + η + gη)] + s·(√d/2)(n + e)(1 + η) + (n + e)(1 + η)·√d·2^-96 + 2^-120.
 * reach and spread are those brackets, each with 2^-21·(n + e) (times √d/2 in spread) added: the
 * three F32 roundings of s' + ‖x‖·reach + s·spread + slack each err by at most 2^-24 of a partial
 * sum below 2.1·(n + e)·(‖x‖ + √d·s/2); then times 1.01 (the terms' own roundings) and reach by
 * 1 + 2γ (the norm, below). slack = 2^-53·(n + e) + 2^-100.
 *
 * Both: the stored norm is at least (1 − γ)·‖x‖ less √d·2^-63 (squares below 2^-126 flushed or
 * lost), which the factor 1 + 2γ in reach and the slack cover for d ≤ 2^16. The 1% also covers the
 * F32 rounding of each term of δ. Norms are rounded up to F32; a norm at or past 2^60 counts as
 * infinite (its products could overflow F32 and leave s' meaningless), as do NaN norms, and a row
 * holding an infinity or a NaN gets the scale NaN: δ is then infinite or NaN, and the test
 * `!(s' + δ < bar)` sends the row to the exact score, as it does for a NaN s'.
 */
#ifndef UFORM_INDEX_SCREEN_H
#define UFORM_INDEX_SCREEN_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/gemm.h"
#include "kernels/gemm_i8.h"
#include "kernels/nn.h"
#include "uform/uform.h"

/* F32 rows are screened from this many queries on: there the product, not the rows' stream,
 * bounds the search, and the block's rounding or quantizing is shared by every query. */
#define UFORM__SCREEN_QUERIES 256

typedef enum uform__screen_kind_t { UFORM__SCREEN_NONE = 0, UFORM__SCREEN_BF16 = 1, UFORM__SCREEN_I8 = 2 } uform__screen_kind_t;

/* The screen a search of `queries` queries over `scalar` rows of `dims` takes on `cpu_class`. */
uform__screen_kind_t uform__screen_choose(uform_cpu_class_t cpu_class, uform_scalar_kind_t scalar, size_t queries,
                                          size_t dims);

/* A screen's state: the queries in the screen's form and their terms (shared), and per thread the
 * block being screened. Filled by uform__screen_setup; all memory from the search's arena. */
typedef struct uform__screen_t {
    uform__screen_kind_t kind;
    size_t dims, queries;
    const uform__gemm_kernels_t *gemm;       /* BF16 */
    const uform__gemm_i8_kernels_t *i8;      /* I8 */
    const uform__nn_kernels_t *nn;
    const uint16_t *queries_bf16;            /* BF16: [queries, dims] */
    uform__gemm_i8_rows_t queries_i8;        /* I8: [queries] quantized rows */
    const float *reach, *spread, *slack;     /* [queries] each: δ = ‖x‖·reach + s_x·spread + slack */
    /* Per thread: */
    float **norms;                           /* [BLOCK] ‖x‖ of the block's rows, rounded up (0 past them) */
    float **spreads;                         /* [BLOCK] s_x (I8: the row's scale; BF16: 0) */
    void **rows;                             /* the block in the screen's form: BF16 [rows, dims], I8 [rows, k_padded] */
    void **packed_memory;
    size_t packed_bytes;
    uform__gemm_packed_t *packed;            /* BF16 */
    uform__gemm_i8_packed_t *packed_i8;      /* I8 */
    void **scratch;
    size_t scratch_bytes;
} uform__screen_t;

/* Sets up `screen` of `kind` (not NONE) for the dense queries [queries, dims] on `cpu_class`, with
 * per-thread state for blocks of up to `block_rows` rows (`block` ≥ block_rows, a multiple of 16:
 * the length of the per-row arrays). UFORM_OUT_OF_MEMORY when the arena runs out. */
uform_status_t uform__screen_setup(uform__screen_t *screen, uform__screen_kind_t kind, uform_cpu_class_t cpu_class,
                                   uform_arena_t arena, const float *queries, size_t count, size_t dims, size_t threads,
                                   size_t block_rows, size_t block);

/* Takes `rows` F32 rows [rows, dims] into thread `thread`'s state: rounded or quantized, packed,
 * their norms and scales. A status other than UFORM_OK is the GEMM's refusal (never expected). */
uform_status_t uform__screen_block(const uform__screen_t *screen, size_t thread, size_t rows, const float *f32_rows);

/* approx [group, rows] (row stride `ld`) = the screen's products of queries group_first.. with the
 * thread's block. */
uform_status_t uform__screen_product(const uform__screen_t *screen, size_t thread, size_t rows, size_t group_first,
                                     size_t group, float *approx, size_t ld);

#endif
