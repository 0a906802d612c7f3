/*
 * AMD_GENOA GEMM: AVX-512 BF16. Products with BF16 weights run on vdpbf16ps, which multiplies
 * pairs of BF16 values and adds both products into an F32 lane: a 6×64 register tile (24 zmm
 * accumulators) consumes two K steps per instruction, twice the F32 FMA rate. Weight panels hold
 * K pairs, [K/2][64][2] BF16; the A block is row-major BF16, each row's pair broadcast as one
 * 32-bit word. F32 activations (and F32 upstream gradients of backward_x) are rounded
 * to BF16 (nearest even, vcvtne2ps2bf16) once while their block is packed: see gemm.h for why.
 * F32 × F32 products and backward_w (F32) use Skylake's AVX-512 F tile. Also used by SAPPHIRE,
 * GRANITE and DIAMOND until they get AMX kernels.
 */
#include "kernels/gemm_avx512.h"

#define GENOA_TARGET __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx512bf16,fma")))

enum { GENOA_MR = 6, GENOA_NR = 64 };

/*
 * C[rows, cols] (+)= A[6][kc] · B[kc][64], A row-major BF16, B as K pairs [kc/2][64][2]. Per K
 * pair: four zmm of B, one 32-bit broadcast per row, 24 dot products into 24 accumulators. This
 * 6×64 shape measured 1.5–2% faster here than 14×32 (fewer loads per dot product: 10 per 24
 * against 16 per 28). With `bias` or `gelu` (the driver passes them on the last K slice only)
 * the bias and GELU are applied to the registers before the one store, instead of a separate
 * pass that reloads the tile (gemm_finish_f32x16: the same operations in the same order).
 */
GENOA_TARGET static inline __attribute__((always_inline)) void
tile_bf16_genoa_body(size_t kc, const void *a_block, size_t lda, const void *b_panel, float *c, uform__bf16_t *c16,
                     size_t ldc, size_t rows, size_t cols, int accumulate, const float *bias, int gelu) {
    const uform__bf16_t *a = a_block, *b = b_panel;
    __m512 sum_f32x16[GENOA_MR][4];
#pragma GCC unroll 6
    for (int r = 0; r < GENOA_MR; ++r)
        for (int v = 0; v < 4; ++v) sum_f32x16[r][v] = _mm512_setzero_ps();
    /* The C tile is read (or written) after the K loop: start fetching its lines now. */
    for (size_t r = 0; r < rows && c; ++r)
        for (int v = 0; v < 4; ++v) _mm_prefetch((const char *)(c + r * ldc + 16 * v), _MM_HINT_T0);
    for (size_t p = 0; p < kc; p += 2) {
        __m512i b_bf16x32[4];
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) b_bf16x32[v] = _mm512_loadu_si512(b + p * GENOA_NR + 32 * v);
#pragma GCC unroll 6
        for (int r = 0; r < GENOA_MR; ++r) {
            int pair;
            __builtin_memcpy(&pair, a + r * lda + p, sizeof pair);
            __m512i a_bf16x32 = _mm512_set1_epi32(pair);
#pragma GCC unroll 4
            for (int v = 0; v < 4; ++v)
                sum_f32x16[r][v] = _mm512_dpbf16_ps(sum_f32x16[r][v], (__m512bh)a_bf16x32, (__m512bh)b_bf16x32[v]);
        }
    }
    __mmask16 mask[4];
    for (int v = 0; v < 4; ++v) mask[v] = cols > (size_t)(16 * v) ? gemm_columns_mask(cols - 16 * v) : 0;
    int folded = gemm_gelu_folds(gelu) ? gelu : 0; /* the sigmoid forms: after a store (gemm_avx512.h) */
    if (c16) {
        /* BF16 C: bias and GELU on the registers, then two zmm rounded into 32 BF16 lanes
         * (vcvtne2ps2bf16, nearest even) and stored under the columns' mask. The sigmoid forms
         * go through an F32 staging tile and the separate pass first. */
        __mmask32 mask_pair[2] = {(__mmask32)mask[0] | (__mmask32)mask[1] << 16,
                                  (__mmask32)mask[2] | (__mmask32)mask[3] << 16};
        _Alignas(64) float staged[GENOA_MR][GENOA_NR];
        if (gelu != folded) {
#pragma GCC unroll 6
            for (int r = 0; r < GENOA_MR; ++r)
#pragma GCC unroll 4
                for (int v = 0; v < 4; ++v) {
                    __m512 value_f32x16 = sum_f32x16[r][v];
                    if (bias) value_f32x16 = _mm512_add_ps(value_f32x16, _mm512_maskz_loadu_ps(mask[v], bias + 16 * v));
                    _mm512_store_ps(staged[r] + 16 * v, value_f32x16);
                }
            uform__gemm_epilogue_skylake(staged[0], GENOA_NR, rows, cols, NULL, gelu);
        }
#pragma GCC unroll 6
        for (int r = 0; r < GENOA_MR; ++r) {
            if ((size_t)r >= rows) break;
            __m512 value_f32x16[4];
#pragma GCC unroll 4
            for (int v = 0; v < 4; ++v) {
                if (gelu != folded) {
                    value_f32x16[v] = _mm512_load_ps(staged[r] + 16 * v);
                    continue;
                }
                value_f32x16[v] = sum_f32x16[r][v];
                if (bias) value_f32x16[v] = _mm512_add_ps(value_f32x16[v], _mm512_maskz_loadu_ps(mask[v], bias + 16 * v));
                if (gelu) value_f32x16[v] = gemm_gelu_erf_f32x16(value_f32x16[v], gelu);
            }
#pragma GCC unroll 2
            for (int half = 0; half < 2; ++half)
                _mm512_mask_storeu_epi16(c16 + r * ldc + 32 * half, mask_pair[half],
                                         (__m512i)_mm512_cvtne2ps_pbh(value_f32x16[2 * half + 1], value_f32x16[2 * half]));
        }
        return;
    }
#pragma GCC unroll 6
    for (int r = 0; r < GENOA_MR; ++r) {
        if ((size_t)r >= rows) break;
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v)
            gemm_finish_f32x16(c + r * ldc + 16 * v, mask[v], sum_f32x16[r][v], accumulate, bias ? bias + 16 * v : NULL,
                               folded);
    }
    if (gelu != folded) uform__gemm_epilogue_skylake(c, ldc, rows, cols, NULL, gelu);
}

GENOA_TARGET static void tile_bf16_genoa(size_t kc, const void *a_block, size_t lda, const void *b_panel, float *c,
                                         size_t ldc, size_t rows, size_t cols, int accumulate) {
    tile_bf16_genoa_body(kc, a_block, lda, b_panel, c, NULL, ldc, rows, cols, accumulate, NULL, 0);
}

GENOA_TARGET static void tile_epilogue_bf16_genoa(size_t kc, const void *a_block, size_t lda, const void *b_panel,
                                                  float *c, size_t ldc, size_t rows, size_t cols, int accumulate,
                                                  const float *bias, int gelu) {
    tile_bf16_genoa_body(kc, a_block, lda, b_panel, c, NULL, ldc, rows, cols, accumulate, bias, gelu);
}

/* One K slice into a BF16 C: the sums, bias and GELU rounded to BF16 in registers. */
GENOA_TARGET static void tile_bf16_out_genoa(size_t kc, const void *a_block, size_t lda, const void *b_panel,
                                             uform__bf16_t *c, size_t ldc, size_t rows, size_t cols, const float *bias,
                                             int gelu) {
    tile_bf16_genoa_body(kc, a_block, lda, b_panel, NULL, c, ldc, rows, cols, 0, bias, gelu);
}

/* F32 → BF16 with round-to-nearest-even, 32 at a time (vcvtne2ps2bf16 rounds that way and keeps
 * NaN a NaN). */
GENOA_TARGET static void convert_bf16_genoa(const float *source, uform__bf16_t *target, size_t count) {
    size_t i = 0;
    for (; i + 32 <= count; i += 32) {
        __m512bh packed_bf16x32 = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(source + i + 16), _mm512_loadu_ps(source + i));
        _mm512_storeu_si512(target + i, (__m512i)packed_bf16x32);
    }
    for (; i < count; ++i) target[i] = uform__gemm_bf16_from_f32(source[i]);
}

/* Two F32 vectors as 16 BF16 pairs: dword r = {bf16(even[r]), bf16(odd[r])} (low half first),
 * rounded by vcvtne2ps2bf16, whose 32 lanes (even's 16, then odd's) vpermw interleaves. */
GENOA_TARGET static inline __m512i pairs_bf16x32(__m512 even_f32x16, __m512 odd_f32x16) {
    static const uint16_t interleave[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                            8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    __m512i halves_bf16x32 = (__m512i)_mm512_cvtne2ps_pbh(odd_f32x16, even_f32x16);
    return _mm512_permutexvar_epi16(_mm512_loadu_si512(interleave), halves_bf16x32);
}

/*
 * backward_w's A block from dY rounded to BF16 pairs (gemm.h's uform__gemm_pack_transposed_fn):
 * 32 tokens (source rows) by 16 block rows (source columns) at a time. Token pair t's two rows
 * become one vector of 16 pairs (pairs_bf16x32: dword r holds block row r's pair t), and the 16
 * such vectors, transposed as 32-bit words in registers (nn_transpose_16x16_f32x16), are block
 * rows: 16 contiguous 64-byte stores instead of the portable loop's 512 scalar roundings and 256
 * strided 32-bit stores. Tokens run outermost, so the source is read row by row. The F32 rows,
 * while in registers, are added into `sums` in token order (the bias gradient, from the
 * unrounded dY). A source subnormal rounds to ±0 here, to a BF16 subnormal in the portable loop:
 * vdpbf16ps reads both as ±0 (gemm_driver.c's pack_a).
 */
GENOA_TARGET static void pack_transposed_bf16_genoa(const float *source, size_t ld, size_t rows, size_t kc,
                                                    void *block_out, size_t lda, float *sums) {
    uform__bf16_t *block = block_out;
    for (size_t p = 0; p < kc; p += 32) {
        size_t steps = kc - p < 32 ? kc - p : 32;
        __mmask16 pair_mask = gemm_columns_mask((steps + 1) / 2);
        const float *tokens = source + p * ld;
        for (size_t r = 0; r < rows; r += 16) {
            size_t lanes = rows - r < 16 ? rows - r : 16;
            __mmask16 lane_mask = gemm_columns_mask(lanes);
            __m512 sum_f32x16 = sums ? _mm512_maskz_loadu_ps(lane_mask, sums + r) : _mm512_setzero_ps();
            __m512 pairs_f32x16[16], columns_f32x16[16];
#pragma GCC unroll 16
            for (size_t t = 0; t < 16; ++t) {
                __m512 even_f32x16 = _mm512_setzero_ps(), odd_f32x16 = _mm512_setzero_ps();
                if (2 * t < steps) even_f32x16 = _mm512_maskz_loadu_ps(lane_mask, tokens + 2 * t * ld + r);
                if (2 * t + 1 < steps) odd_f32x16 = _mm512_maskz_loadu_ps(lane_mask, tokens + (2 * t + 1) * ld + r);
                if (sums) {
                    if (2 * t < steps) sum_f32x16 = _mm512_add_ps(sum_f32x16, even_f32x16);
                    if (2 * t + 1 < steps) sum_f32x16 = _mm512_add_ps(sum_f32x16, odd_f32x16);
                }
                pairs_f32x16[t] = _mm512_castsi512_ps(pairs_bf16x32(even_f32x16, odd_f32x16));
            }
            if (sums) _mm512_mask_storeu_ps(sums + r, lane_mask, sum_f32x16);
            nn_transpose_16x16_f32x16(pairs_f32x16, columns_f32x16);
#pragma GCC unroll 16
            for (size_t c = 0; c < 16; ++c)
                if (c < lanes)
                    _mm512_mask_storeu_epi32(block + (r + c) * lda + p, pair_mask, _mm512_castps_si512(columns_f32x16[c]));
        }
    }
}

/* One panel of 64 columns as BF16 K pairs from F32 rows (gemm.h's uform__gemm_pack_pairs_fn):
 * per token pair, four vectors of 16 pairs (pairs_bf16x32), masked loads zero the columns past
 * `cols`. */
GENOA_TARGET static void pack_pairs_bf16_genoa(const float *source, size_t ld, size_t kc, size_t cols,
                                               uform__bf16_t *panel) {
    __mmask16 mask[4];
    for (int v = 0; v < 4; ++v) mask[v] = cols > (size_t)(16 * v) ? gemm_columns_mask(cols - 16 * v) : 0;
    for (size_t t = 0; t < (kc + 1) / 2; ++t) {
        const float *even = source + 2 * t * ld, *odd = even + ld;
        int second = 2 * t + 1 < kc;
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) {
            __m512 even_f32x16 = _mm512_maskz_loadu_ps(mask[v], even + 16 * v);
            __m512 odd_f32x16 = second ? _mm512_maskz_loadu_ps(mask[v], odd + 16 * v) : _mm512_setzero_ps();
            _mm512_storeu_si512(panel + t * 2 * GENOA_NR + 32 * v, pairs_bf16x32(even_f32x16, odd_f32x16));
        }
    }
}

/* One panel of 64 columns as K pairs from BF16 rows (gemm.h's uform__gemm_pack_pairs16_fn): per
 * token pair and 32 columns, two 16-bit interleaves of the rows (vpermt2w); masked loads zero the
 * columns past `cols`, and the missing second row of an odd kc is zero. Measured in the trainer's
 * backward_w with BF16 X: the portable loop this replaces interleaves one value at a time. */
GENOA_TARGET static void pack_pairs16_genoa(const uform__bf16_t *source, size_t ld, size_t kc, size_t cols,
                                            uform__bf16_t *panel) {
    uint16_t low[32], high[32];
    for (int lane = 0; lane < 32; ++lane) {
        low[lane] = (uint16_t)(lane / 2 + (lane % 2 ? 32 : 0));       /* pairs of columns 0..15 */
        high[lane] = (uint16_t)(16 + lane / 2 + (lane % 2 ? 32 : 0)); /* pairs of columns 16..31 */
    }
    __m512i low_i16x32 = _mm512_loadu_si512(low), high_i16x32 = _mm512_loadu_si512(high);
    __mmask32 mask[2];
    for (int v = 0; v < 2; ++v) {
        size_t lanes = cols > (size_t)(32 * v) ? cols - 32 * v : 0;
        mask[v] = lanes >= 32 ? (__mmask32)0xFFFFFFFFu : (__mmask32)((1u << lanes) - 1u);
    }
    for (size_t t = 0; t < (kc + 1) / 2; ++t) {
        const uform__bf16_t *even = source + 2 * t * ld, *odd = even + ld;
        int second = 2 * t + 1 < kc;
#pragma GCC unroll 2
        for (int v = 0; v < 2; ++v) {
            __m512i even_bf16x32 = _mm512_maskz_loadu_epi16(mask[v], even + 32 * v);
            __m512i odd_bf16x32 = second ? _mm512_maskz_loadu_epi16(mask[v], odd + 32 * v) : _mm512_setzero_si512();
            uform__bf16_t *target = panel + t * 2 * GENOA_NR + 64 * v;
            _mm512_storeu_si512(target, _mm512_permutex2var_epi16(even_bf16x32, low_i16x32, odd_bf16x32));
            _mm512_storeu_si512(target + 32, _mm512_permutex2var_epi16(even_bf16x32, high_i16x32, odd_bf16x32));
        }
    }
}

const uform__gemm_micro_t uform__gemm_micro_bf16_genoa = {
    .panel_dtype = UFORM__GEMM_BF16, .mr = GENOA_MR, .nr = GENOA_NR, .kc = 1536, .mc = 168, .nc = 1536,
    .layout = 5, .tile = tile_bf16_genoa, .tile_epilogue = tile_epilogue_bf16_genoa, .tile_bf16_out = tile_bf16_out_genoa,
    .epilogue = uform__gemm_epilogue_skylake, .convert = convert_bf16_genoa,
    .pack_transposed = pack_transposed_bf16_genoa, .pack_pairs = pack_pairs_bf16_genoa,
    .pack_pairs16 = pack_pairs16_genoa};

static uform_status_t gemm_bf16_genoa(const uform__gemm_forward_t *args, const uform__parallel_t *parallel,
                                      uform_outcome_t *outcome) {
    return uform__gemm_forward_drive(&uform__gemm_micro_bf16_genoa, args, parallel, outcome);
}

static uform_status_t gemm_backward_x_bf16_genoa(const uform__gemm_backward_x_t *args, const uform__parallel_t *parallel,
                                                 uform_outcome_t *outcome) {
    return uform__gemm_backward_x_drive(&uform__gemm_micro_bf16_genoa, args, parallel, outcome);
}

static uform_status_t gemm_f32_genoa(const uform__gemm_forward_t *args, const uform__parallel_t *parallel,
                                     uform_outcome_t *outcome) {
    return uform__gemm_forward_drive(&uform__gemm_micro_f32_skylake, args, parallel, outcome);
}

static uform_status_t gemm_backward_x_f32_genoa(const uform__gemm_backward_x_t *args, const uform__parallel_t *parallel,
                                                uform_outcome_t *outcome) {
    return uform__gemm_backward_x_drive(&uform__gemm_micro_f32_skylake, args, parallel, outcome);
}

static uform_status_t gemm_backward_w_f32_genoa(const uform__gemm_backward_w_t *args, const uform__parallel_t *parallel,
                                                uform_outcome_t *outcome) {
    return uform__gemm_backward_w_drive(&uform__gemm_micro_f32_skylake, args, parallel, outcome);
}

/* dW += dYᵀ·X with dY and X rounded to BF16 (BF16 compute), accumulated in F32. */
static uform_status_t gemm_backward_w_bf16_genoa(const uform__gemm_backward_w_t *args, const uform__parallel_t *parallel,
                                                 uform_outcome_t *outcome) {
    return uform__gemm_backward_w_drive(&uform__gemm_micro_bf16_genoa, args, parallel, outcome);
}

static size_t packed_size_f32_genoa(size_t n, size_t k, uform__gemm_dtype_t w_dtype) {
    return uform__gemm_packed_size_for(&uform__gemm_micro_f32_skylake, n, k);
}

static uform_status_t pack_f32_genoa(const void *w, size_t ldw, uform__gemm_dtype_t w_dtype, size_t n, size_t k,
                                     void *memory, size_t capacity, uform__gemm_packed_t *packed,
                                     uform_outcome_t *outcome) {
    return uform__gemm_pack_for(&uform__gemm_micro_f32_skylake, w, ldw, w_dtype, n, k, memory, capacity, packed,
                                outcome);
}

static size_t packed_size_bf16_genoa(size_t n, size_t k, uform__gemm_dtype_t w_dtype) {
    return uform__gemm_packed_size_for(&uform__gemm_micro_bf16_genoa, n, k);
}

static uform_status_t pack_bf16_genoa(const void *w, size_t ldw, uform__gemm_dtype_t w_dtype, size_t n, size_t k,
                                      void *memory, size_t capacity, uform__gemm_packed_t *packed,
                                      uform_outcome_t *outcome) {
    return uform__gemm_pack_for(&uform__gemm_micro_bf16_genoa, w, ldw, w_dtype, n, k, memory, capacity, packed, outcome);
}

static size_t scratch_bytes_genoa(size_t threads) {
    size_t bytes = 0, candidate;
    if ((candidate = uform__gemm_scratch_bytes_for(&uform__gemm_micro_f32_skylake, threads)) > bytes) bytes = candidate;
    if ((candidate = uform__gemm_scratch_bytes_for(&uform__gemm_micro_bf16_genoa, threads)) > bytes) bytes = candidate;
    return bytes;
}

const uform__gemm_kernels_t uform__gemm_kernels_genoa = {
    .cpu_class = UFORM_CPU_CLASS_AMD_GENOA,
    .forward_f32 = gemm_f32_genoa,
    .forward_bf16 = gemm_bf16_genoa,
    .backward_x_f32 = gemm_backward_x_f32_genoa,
    .backward_x_bf16 = gemm_backward_x_bf16_genoa,
    .backward_w = gemm_backward_w_f32_genoa,
    .backward_w_bf16 = gemm_backward_w_bf16_genoa,
    .backward_b = uform__gemm_backward_b_serial,
    .packed_size_f32 = packed_size_f32_genoa,
    .packed_size_bf16 = packed_size_bf16_genoa,
    .pack_f32 = pack_f32_genoa,
    .pack_bf16 = pack_bf16_genoa,
    .scratch_bytes = scratch_bytes_genoa,
    .epilogue = uform__gemm_epilogue_skylake,
};
