/*
 * INTEL_HASWELL INT8 GEMM: AVX2. Each prong sign-extends its block of quantized activation rows to
 * int16 once (gemm_i8.c), the weight panels are int16 pairs from packing ([K/2][16][2]), and
 * vpmaddwd multiplies 16 int16 pairs and adds each pair into an s32 lane: |pair| ≤ 2·127·127 =
 * 32,258, so nothing can saturate (vpmaddwd saturates only (−32768)² + (−32768)², and −128 never
 * occurs), and the int32 sums are exact. A 6×16 tile: 12 ymm accumulators, two weight vectors and
 * one broadcast pair per row.
 *
 * Why not vpmaddubsw. Its u8×s8 pairs saturate in s16 at 2·255·127 with the offset trick; the
 * sign trick that avoids it (|qx| against qw·sign(qx), gemm_i8.h, SKYLAKE's form) costs a
 * vpsignb per product vector and a vpabsb per row, and measured here (Zen 4 running the AVX2
 * code, K = 384, in L1, GFLOP-equivalent/s): sign trick 4×16 134, 6×16 129; vpmaddwd 6×16 183;
 * F32 FMA 6×16 112. vpmaddwd on int16 does the same multiplies with fewer instructions. Also used
 * by INTEL_SIERRA.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/gemm_i8.h"

#define HASWELL_TARGET __attribute__((target("avx2,fma")))

enum { HASWELL_MR = 6, HASWELL_NR = 16 };

/* sums [6][16] = Σ qw·qx over K pairs (a: int16 rows, row stride `lda` elements; b: a panel of
 * [pairs][16][2] int16), the accumulators in registers (stored once at the end: with anything
 * after the loop indexing them, GCC keeps copies on the stack inside it). */
HASWELL_TARGET static inline __attribute__((always_inline)) void
sums_i8_haswell(size_t pairs, const int16_t *a_block, size_t lda, size_t rows, const int16_t *b_panel, int32_t *sums) {
    __m256i sum_i32x8[HASWELL_MR][2];
#pragma GCC unroll 6
    for (int r = 0; r < HASWELL_MR; ++r) sum_i32x8[r][0] = sum_i32x8[r][1] = _mm256_setzero_si256();
    const int16_t *a[HASWELL_MR];
    for (int r = 0; r < HASWELL_MR; ++r) a[r] = a_block + ((size_t)r < rows ? (size_t)r : rows - 1) * lda;
    for (size_t t = 0; t < pairs; ++t) {
        const int16_t *b = b_panel + t * HASWELL_NR * 2;
        __m256i w0_i16x16 = _mm256_loadu_si256((const __m256i *)b), w1_i16x16 = _mm256_loadu_si256((const __m256i *)(b + 16));
#pragma GCC unroll 6
        for (int r = 0; r < HASWELL_MR; ++r) {
            int32_t pair;
            __builtin_memcpy(&pair, a[r] + 2 * t, sizeof pair);
            __m256i x_i16x16 = _mm256_set1_epi32(pair);
            sum_i32x8[r][0] = _mm256_add_epi32(sum_i32x8[r][0], _mm256_madd_epi16(x_i16x16, w0_i16x16));
            sum_i32x8[r][1] = _mm256_add_epi32(sum_i32x8[r][1], _mm256_madd_epi16(x_i16x16, w1_i16x16));
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < HASWELL_MR; ++r) {
        _mm256_store_si256((__m256i *)(sums + r * HASWELL_NR), sum_i32x8[r][0]);
        _mm256_store_si256((__m256i *)(sums + r * HASWELL_NR + 8), sum_i32x8[r][1]);
    }
}

/* `a_block` holds int16 rows here (the driver widened them; `lda` counts int16). */
HASWELL_TARGET static void tile_i8_haswell(size_t quads, const int8_t *a_block, size_t lda, const int8_t *b_panel,
                                           const uform__gemm_i8_tile_out_t *out) {
    int32_t sums[HASWELL_MR * HASWELL_NR] __attribute__((aligned(32)));
    uform__gemm_i8_prefetch_y(out);
    sums_i8_haswell(2 * quads, (const int16_t *)a_block, lda, out->rows, (const int16_t *)b_panel, sums);
    if (out->output != UFORM__GEMM_I8_F32 || out->cols != HASWELL_NR) {
        uform__gemm_i8_tile_store(sums, HASWELL_NR, out, uform__gemm_kernels(UFORM_CPU_CLASS_INTEL_HASWELL));
        return;
    }
    /* A full-width F32 tile: fma(float(acc), sx·sw, bias) (+ old Y), 8 columns at a time; every
     * field of `out` read once (a store through Y could alias them). With GELU (never with
     * `accumulate`), the values are staged and GELU'd there by the class's F32 epilogue, as
     * uform__gemm_i8_tile_store does it, so the same bits; that path, scalar, with a libm fmaf
     * per value, was 5% of a batch-1 BERT-base text in this class. */
    const float *x_scale = out->x_scale, *bias = out->bias;
    float *y = out->y;
    size_t ldy = out->ldy, rows = out->rows;
    int accumulate = out->accumulate, gelu = out->gelu;
    float staged[HASWELL_MR * HASWELL_NR] __attribute__((aligned(32)));
    __m256 w_scale0_f32x8 = _mm256_loadu_ps(out->w_scale), w_scale1_f32x8 = _mm256_loadu_ps(out->w_scale + 8);
    __m256 bias0_f32x8 = bias ? _mm256_loadu_ps(bias) : _mm256_setzero_ps();
    __m256 bias1_f32x8 = bias ? _mm256_loadu_ps(bias + 8) : _mm256_setzero_ps();
    for (size_t r = 0; r < rows; ++r) {
        __m256 x_scale_f32x8 = _mm256_set1_ps(x_scale[r]);
        __m256i acc0_i32x8 = _mm256_load_si256((const __m256i *)(sums + r * HASWELL_NR));
        __m256i acc1_i32x8 = _mm256_load_si256((const __m256i *)(sums + r * HASWELL_NR + 8));
        __m256 y0_f32x8 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc0_i32x8), _mm256_mul_ps(x_scale_f32x8, w_scale0_f32x8), bias0_f32x8);
        __m256 y1_f32x8 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc1_i32x8), _mm256_mul_ps(x_scale_f32x8, w_scale1_f32x8), bias1_f32x8);
        float *target = gelu ? staged + r * HASWELL_NR : y + r * ldy;
        if (accumulate) {
            y0_f32x8 = _mm256_add_ps(_mm256_loadu_ps(target), y0_f32x8);
            y1_f32x8 = _mm256_add_ps(_mm256_loadu_ps(target + 8), y1_f32x8);
        }
        _mm256_storeu_ps(target, y0_f32x8);
        _mm256_storeu_ps(target + 8, y1_f32x8);
    }
    if (!gelu) return;
    uform__gemm_kernels(UFORM_CPU_CLASS_INTEL_HASWELL)->epilogue(staged, HASWELL_NR, rows, HASWELL_NR, NULL, gelu);
    for (size_t r = 0; r < rows; ++r) memcpy(y + r * ldy, staged + r * HASWELL_NR, HASWELL_NR * sizeof(float));
}

/* 8 values of a row as F32 (BF16 widened exactly). */
HASWELL_TARGET static inline __m256 load_f32x8(const void *x, uform__gemm_dtype_t x_dtype, size_t i) {
    if (x_dtype == UFORM__GEMM_BF16) {
        __m128i bf16x8 = _mm_loadu_si128((const __m128i *)((const uform__bf16_t *)x + i));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bf16x8), 16));
    }
    return _mm256_loadu_ps((const float *)x + i);
}

/* gemm_i8.h's quantizer for one row: 32 values per step (four vectors narrowed by vpackssdw and
 * vpacksswb, whose in-lane order vpermd restores), the tail as the scalar reference does it. */
HASWELL_TARGET static void quantize_row_haswell(size_t k, const void *x, uform__gemm_dtype_t x_dtype, int8_t *q,
                                                size_t k_padded, float *scale, int32_t *sum) {
    const float *x32 = x;
    const uform__bf16_t *x16 = x;
    __m256i magnitude_mask = _mm256_set1_epi32(0x7FFFFFFF), amax_u32x8 = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 8 <= k; i += 8)
        amax_u32x8 = _mm256_max_epu32(amax_u32x8, _mm256_and_si256(_mm256_castps_si256(load_f32x8(x, x_dtype, i)), magnitude_mask));
    uint32_t lanes[8], amax_bits = 0;
    _mm256_storeu_si256((__m256i *)lanes, amax_u32x8);
    for (int lane = 0; lane < 8; ++lane) amax_bits = lanes[lane] > amax_bits ? lanes[lane] : amax_bits;
    for (; i < k; ++i) {
        float element = x_dtype == UFORM__GEMM_BF16 ? uform__gemm_f32_from_bf16(x16[i]) : x32[i];
        uint32_t bits;
        memcpy(&bits, &element, sizeof bits);
        bits &= 0x7FFFFFFFu;
        amax_bits = bits > amax_bits ? bits : amax_bits;
    }
    float inv;
    uform__gemm_i8_row_factors(amax_bits, scale, &inv);
    if (inv == 0.0f) {
        memset(q, 0, k_padded);
        if (sum) *sum = 0;
        return;
    }
    __m256 inv_f32x8 = _mm256_set1_ps(inv);
    __m256i sum_i32x8 = _mm256_setzero_si256(), order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    i = 0;
    for (; i + 32 <= k; i += 32) {
        __m256i q_i32x8[4];
        for (int v = 0; v < 4; ++v) {
            /* |x·inv| ≤ 127·(1 + 2^-23)², so the rounded value is within ±127 and the saturating
             * packs below never clamp. */
            q_i32x8[v] = _mm256_cvtps_epi32(_mm256_mul_ps(load_f32x8(x, x_dtype, i + 8 * v), inv_f32x8));
            sum_i32x8 = _mm256_add_epi32(sum_i32x8, q_i32x8[v]);
        }
        __m256i words01 = _mm256_packs_epi32(q_i32x8[0], q_i32x8[1]), words23 = _mm256_packs_epi32(q_i32x8[2], q_i32x8[3]);
        __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(words01, words23), order);
        _mm256_storeu_si256((__m256i *)(q + i), bytes);
    }
    int32_t partial[8], total = 0;
    _mm256_storeu_si256((__m256i *)partial, sum_i32x8);
    for (int lane = 0; lane < 8; ++lane) total += partial[lane];
    for (; i < k; ++i) {
        float element = x_dtype == UFORM__GEMM_BF16 ? uform__gemm_f32_from_bf16(x16[i]) : x32[i];
        float rounded = rintf(element * inv);
        int value = rounded > 127.0f ? 127 : rounded < -127.0f ? -127 : (int)rounded;
        q[i] = (int8_t)value;
        total += value;
    }
    for (i = k; i < k_padded; ++i) q[i] = 0;
    if (sum) *sum = total;
}

/* target = q sign-extended to int16, 16 values a vpmovsxbw (the driver's scalar loop was 6% of a
 * batch-1 BERT-base text in this class). */
HASWELL_TARGET static void widen_row_haswell(size_t count, const int8_t *q, int16_t *target) {
    size_t i = 0;
    for (; i + 16 <= count; i += 16)
        _mm256_storeu_si256((__m256i *)(target + i), _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(q + i))));
    for (; i < count; ++i) target[i] = q[i];
}

static const uform__gemm_i8_micro_t micro_i8_haswell = {
    .mr = HASWELL_MR, .nr = HASWELL_NR, .mc = 192, .layout = 102, .biased = 0, .wide = 1,
    .widen_row = widen_row_haswell, .tile = tile_i8_haswell, .quantize_row = quantize_row_haswell};

static void quantize_haswell(size_t rows, size_t k, const void *x, size_t ldx, uform__gemm_dtype_t x_dtype, int8_t *q,
                             size_t ldq, float *scale, int32_t *sums, const uform__parallel_t *parallel) {
    uform__gemm_i8_quantize_drive(&micro_i8_haswell, rows, k, x, ldx, x_dtype, q, ldq, scale, sums, parallel);
}

static size_t packed_size_haswell(size_t n, size_t k) { return uform__gemm_i8_packed_size_for(&micro_i8_haswell, n, k); }

static uform_status_t pack_haswell(const int8_t *q, size_t ldq, const float *scale, size_t n, size_t k, void *memory,
                                   size_t capacity, uform__gemm_i8_packed_t *packed, uform_outcome_t *outcome) {
    return uform__gemm_i8_pack_for(&micro_i8_haswell, q, ldq, scale, n, k, memory, capacity, packed, outcome);
}

static uform_status_t forward_haswell(const uform__gemm_i8_forward_t *args, const uform__parallel_t *parallel,
                                      uform_outcome_t *outcome) {
    return uform__gemm_i8_forward_drive(&micro_i8_haswell, args, parallel, outcome);
}

static size_t scratch_bytes_haswell(size_t threads) { return uform__gemm_i8_scratch_bytes_for(&micro_i8_haswell, threads); }

const uform__gemm_i8_kernels_t uform__gemm_i8_kernels_haswell = {
    .cpu_class = UFORM_CPU_CLASS_INTEL_HASWELL,
    .quantize = quantize_haswell,
    .packed_size = packed_size_haswell,
    .pack = pack_haswell,
    .forward = forward_haswell,
    .scratch_bytes = scratch_bytes_haswell,
};
