/*
 * INTEL_SKYLAKE GEMM: AVX-512 F. A 6×64 register tile: 24 zmm accumulators, four zmm of B and
 * one broadcast of A per row, so 24 FMAs per K step against 10 loads (1–2% faster here than a
 * 14×32 tile, which needs 16 loads per 28 FMAs). Tails use masked loads and stores. BF16
 * weights are widened to F32 while packing (exact), so every product is F32. The same family
 * serves ICELAKE (whose VNNI helps only integer products) and the F32 products of GENOA.
 */
#include "kernels/gemm_avx512.h"

#define SKYLAKE_TARGET GEMM_AVX512_TARGET

enum { SKYLAKE_MR = 6, SKYLAKE_NR = 64 };

/*
 * C[rows, cols] (+)= A[ROWS][kc] · B[kc][64] for a constant ROWS ≤ 6: per K step four zmm of B,
 * one broadcast per row, 4·ROWS FMAs into as many accumulators; then, with `bias` or `gelu` (the
 * last K slice only), the bias and GELU on the registers before the one store
 * (gemm_finish_f32x16); the sigmoid activations run over the stored tile (gemm_gelu_folds says
 * why). A tail of fewer than 6 rows runs only its rows: a 35-row product is 5 tiles of 6 and one
 * of 5, an 8-row one 6 + 2, where the 2-row tile used to cost a whole 6-row one (the rows are
 * independent, so every element's operations are the same whichever variant computes it).
 * `ahead`: `ahead_bytes` of the next B panel prefetched into L2, at most four lines a K step
 * (uform__gemm_tile_ahead_fn says why).
 */
SKYLAKE_TARGET static inline __attribute__((always_inline)) void
tile_f32_skylake_body(const int rows, size_t kc, const void *a_block, size_t lda, const void *b_panel, float *c,
                      size_t ldc, size_t cols, int accumulate, const float *bias, int gelu, const char *ahead,
                      size_t ahead_bytes) {
    const float *a = a_block, *b = b_panel;
    __m512 sum_f32x16[SKYLAKE_MR][4];
#pragma GCC unroll 6
    for (int r = 0; r < rows; ++r)
        for (int v = 0; v < 4; ++v) sum_f32x16[r][v] = _mm512_setzero_ps();
    /* The C tile is read (or written) after the K loop: start fetching its lines now. */
    for (int r = 0; r < rows; ++r)
        for (int v = 0; v < 4; ++v) _mm_prefetch((const char *)(c + r * ldc + 16 * v), _MM_HINT_T0);
    /* Lines of the next panel per K step: ⌈lines / kc⌉, 1 for a share of up to kc lines. */
    size_t ahead_step = ahead_bytes ? ((ahead_bytes + 63) / 64 + kc - 1) / kc * 64 : 0, ahead_done = 0;
    for (size_t p = 0; p < kc; ++p) {
        for (size_t offset = ahead_done; offset < ahead_done + ahead_step && offset < ahead_bytes; offset += 64)
            _mm_prefetch(ahead + offset, _MM_HINT_T1);
        ahead_done += ahead_step;
        __m512 b_f32x16[4];
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) b_f32x16[v] = _mm512_loadu_ps(b + p * SKYLAKE_NR + 16 * v);
#pragma GCC unroll 6
        for (int r = 0; r < rows; ++r) {
            __m512 a_f32x16 = _mm512_set1_ps(a[r * lda + p]);
#pragma GCC unroll 4
            for (int v = 0; v < 4; ++v) sum_f32x16[r][v] = _mm512_fmadd_ps(a_f32x16, b_f32x16[v], sum_f32x16[r][v]);
        }
    }
    __mmask16 mask[4];
    for (int v = 0; v < 4; ++v) mask[v] = cols > (size_t)(16 * v) ? gemm_columns_mask(cols - 16 * v) : 0;
    int folded = gemm_gelu_folds(gelu) ? gelu : 0; /* the sigmoid forms: after the store (gemm_avx512.h) */
#pragma GCC unroll 6
    for (int r = 0; r < rows; ++r) {
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v)
            gemm_finish_f32x16(c + r * ldc + 16 * v, mask[v], sum_f32x16[r][v], accumulate, bias ? bias + 16 * v : NULL,
                               folded);
    }
    if (gelu != folded) uform__gemm_epilogue_skylake(c, ldc, (size_t)rows, cols, NULL, gelu);
}

/* Every tile of this class: the body specialised for the tile's row count. */
SKYLAKE_TARGET static void tile_ahead_f32_skylake(size_t kc, const void *a_block, size_t lda, const void *b_panel,
                                                  float *c, size_t ldc, size_t rows, size_t cols, int accumulate,
                                                  const float *bias, int gelu, const void *ahead, size_t ahead_bytes) {
    switch (rows) {
#define SKYLAKE_ROWS_CASE(count)                                                                                       \
    case count:                                                                                                        \
        tile_f32_skylake_body(count, kc, a_block, lda, b_panel, c, ldc, cols, accumulate, bias, gelu, ahead, ahead_bytes); \
        return;
        SKYLAKE_ROWS_CASE(1)
        SKYLAKE_ROWS_CASE(2)
        SKYLAKE_ROWS_CASE(3)
        SKYLAKE_ROWS_CASE(4)
        SKYLAKE_ROWS_CASE(5)
#undef SKYLAKE_ROWS_CASE
    default:
        tile_f32_skylake_body(SKYLAKE_MR, kc, a_block, lda, b_panel, c, ldc, cols, accumulate, bias, gelu, ahead,
                              ahead_bytes);
    }
}

SKYLAKE_TARGET static void tile_f32_skylake(size_t kc, const void *a_block, size_t lda, const void *b_panel, float *c,
                                            size_t ldc, size_t rows, size_t cols, int accumulate) {
    tile_ahead_f32_skylake(kc, a_block, lda, b_panel, c, ldc, rows, cols, accumulate, NULL, 0, NULL, 0);
}

SKYLAKE_TARGET static void tile_epilogue_f32_skylake(size_t kc, const void *a_block, size_t lda, const void *b_panel,
                                                     float *c, size_t ldc, size_t rows, size_t cols, int accumulate,
                                                     const float *bias, int gelu) {
    tile_ahead_f32_skylake(kc, a_block, lda, b_panel, c, ldc, rows, cols, accumulate, bias, gelu, NULL, 0);
}

/* The separate bias + activation pass (an empty K, classes whose tile has no folded form, and the
 * sigmoid forms after the folded tiles stored their sums). */
SKYLAKE_TARGET void uform__gemm_epilogue_skylake(float *c, size_t ldc, size_t rows, size_t cols, const float *bias, int gelu) {
    for (size_t r = 0; r < rows; ++r) {
        float *row = c + r * ldc;
        for (size_t j = 0; j < cols; j += 16) {
            __mmask16 mask = gemm_columns_mask(cols - j);
            __m512 value_f32x16 = _mm512_maskz_loadu_ps(mask, row + j);
            if (gemm_gelu_folds(gelu)) {
                gemm_finish_f32x16(row + j, mask, value_f32x16, 0, bias ? bias + j : NULL, gelu);
                continue;
            }
            if (bias) value_f32x16 = _mm512_add_ps(value_f32x16, _mm512_maskz_loadu_ps(mask, bias + j));
            _mm512_mask_storeu_ps(row + j, mask, gemm_gelu_f32x16(value_f32x16, gelu));
        }
    }
}

/*
 * backward_w's A block from dY (gemm.h's uform__gemm_pack_transposed_fn): 16×16 tiles, 16 tokens
 * (source rows) by 16 block rows (source columns), each loaded as 16 vectors, transposed in
 * registers (nn_transpose_16x16_f32x16) and stored as 16 contiguous 64-byte runs of block rows,
 * instead of the portable loop's one strided store per value. Tokens run outermost, so the
 * source is read row by row. The rows, while in registers, are added into `sums` in token order
 * (the bias gradient). Measured in gemm.h ("backward_w").
 */
SKYLAKE_TARGET static void pack_transposed_f32_skylake(const float *source, size_t ld, size_t rows, size_t kc,
                                                       void *block_out, size_t lda, float *sums) {
    float *block = block_out;
    for (size_t p = 0; p < kc; p += 16) {
        size_t steps = kc - p < 16 ? kc - p : 16;
        __mmask16 step_mask = gemm_columns_mask(steps);
        const float *tokens = source + p * ld;
        for (size_t r = 0; r < rows; r += 16) {
            size_t lanes = rows - r < 16 ? rows - r : 16;
            __mmask16 lane_mask = gemm_columns_mask(lanes);
            __m512 rows_f32x16[16], columns_f32x16[16];
#pragma GCC unroll 16
            for (size_t s = 0; s < 16; ++s)
                rows_f32x16[s] = s < steps ? _mm512_maskz_loadu_ps(lane_mask, tokens + s * ld + r) : _mm512_setzero_ps();
            if (sums) {
                __m512 sum_f32x16 = _mm512_maskz_loadu_ps(lane_mask, sums + r);
#pragma GCC unroll 16
                for (size_t s = 0; s < 16; ++s)
                    if (s < steps) sum_f32x16 = _mm512_add_ps(sum_f32x16, rows_f32x16[s]);
                _mm512_mask_storeu_ps(sums + r, lane_mask, sum_f32x16);
            }
            nn_transpose_16x16_f32x16(rows_f32x16, columns_f32x16);
#pragma GCC unroll 16
            for (size_t c = 0; c < 16; ++c)
                if (c < lanes) _mm512_mask_storeu_ps(block + (r + c) * lda + p, step_mask, columns_f32x16[c]);
        }
    }
}

const uform__gemm_micro_t uform__gemm_micro_f32_skylake = {
    .panel_dtype = UFORM__GEMM_F32, .mr = SKYLAKE_MR, .nr = SKYLAKE_NR, .kc = 768, .mc = 168, .nc = 1536,
    .layout = 6, .tile = tile_f32_skylake, .tile_epilogue = tile_epilogue_f32_skylake,
    .epilogue = uform__gemm_epilogue_skylake, .pack_transposed = pack_transposed_f32_skylake,
    .tile_ahead = tile_ahead_f32_skylake};

static uform_status_t gemm_f32_skylake(const uform__gemm_forward_t *args, const uform__parallel_t *parallel,
                                       uform_outcome_t *outcome) {
    return uform__gemm_forward_drive(&uform__gemm_micro_f32_skylake, args, parallel, outcome);
}

static uform_status_t gemm_backward_x_f32_skylake(const uform__gemm_backward_x_t *args,
                                                  const uform__parallel_t *parallel, uform_outcome_t *outcome) {
    return uform__gemm_backward_x_drive(&uform__gemm_micro_f32_skylake, args, parallel, outcome);
}

static uform_status_t gemm_backward_w_f32_skylake(const uform__gemm_backward_w_t *args,
                                                  const uform__parallel_t *parallel, uform_outcome_t *outcome) {
    return uform__gemm_backward_w_drive(&uform__gemm_micro_f32_skylake, args, parallel, outcome);
}

static size_t packed_size_skylake(size_t n, size_t k, uform__gemm_dtype_t w_dtype) {
    return uform__gemm_packed_size_for(&uform__gemm_micro_f32_skylake, n, k);
}

static uform_status_t pack_skylake(const void *w, size_t ldw, uform__gemm_dtype_t w_dtype, size_t n, size_t k,
                                   void *memory, size_t capacity, uform__gemm_packed_t *packed, uform_outcome_t *outcome) {
    return uform__gemm_pack_for(&uform__gemm_micro_f32_skylake, w, ldw, w_dtype, n, k, memory, capacity, packed,
                                outcome);
}

static size_t scratch_bytes_skylake(size_t threads) { return uform__gemm_scratch_bytes_for(&uform__gemm_micro_f32_skylake, threads); }

const uform__gemm_kernels_t uform__gemm_kernels_skylake = {
    .cpu_class = UFORM_CPU_CLASS_INTEL_SKYLAKE,
    .forward_f32 = gemm_f32_skylake,
    .forward_bf16 = gemm_f32_skylake, /* BF16 widened to F32 while packing */
    .backward_x_f32 = gemm_backward_x_f32_skylake,
    .backward_x_bf16 = gemm_backward_x_f32_skylake,
    .backward_w = gemm_backward_w_f32_skylake,
    .backward_w_bf16 = gemm_backward_w_f32_skylake,
    .backward_b = uform__gemm_backward_b_serial,
    .packed_size_f32 = packed_size_skylake,
    .packed_size_bf16 = packed_size_skylake,
    .pack_f32 = pack_skylake,
    .pack_bf16 = pack_skylake,
    .scratch_bytes = scratch_bytes_skylake,
    .epilogue = uform__gemm_epilogue_skylake,
};

/* ICELAKE: the same kernels. Its additions (VNNI, VBMI2, VPOPCNTDQ) accelerate integer and bit
 * work, not F32 or BF16 products, so Skylake's tile is the best it runs. */
const uform__gemm_kernels_t uform__gemm_kernels_icelake = {
    .cpu_class = UFORM_CPU_CLASS_INTEL_ICELAKE,
    .forward_f32 = gemm_f32_skylake,
    .forward_bf16 = gemm_f32_skylake,
    .backward_x_f32 = gemm_backward_x_f32_skylake,
    .backward_x_bf16 = gemm_backward_x_f32_skylake,
    .backward_w = gemm_backward_w_f32_skylake,
    .backward_w_bf16 = gemm_backward_w_f32_skylake,
    .backward_b = uform__gemm_backward_b_serial,
    .packed_size_f32 = packed_size_skylake,
    .packed_size_bf16 = packed_size_skylake,
    .pack_f32 = pack_skylake,
    .pack_bf16 = pack_skylake,
    .scratch_bytes = scratch_bytes_skylake,
    .epilogue = uform__gemm_epilogue_skylake,
};
