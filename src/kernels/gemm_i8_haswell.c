/*
 * INTEL_HASWELL INT8 GEMM: AVX2. vpmaddubsw multiplies 32 unsigned by 32 signed bytes and adds
 * adjacent pairs into s16 lanes with saturation; vpmaddwd against ones adds those pairs into s32
 * lanes, so each 32-bit lane sums four consecutive K of one column (the layout VNNI uses too).
 * Saturation never happens (gemm_i8.h, ggml's q8_0 trick): the unsigned operand is |qx| (≤ 127,
 * vpabsb of the broadcast) and the signed one is qw with qx's sign (vpsignb, which also zeroes
 * it where qx = 0), so a pair is at most 2·127·127 = 32,258 < 32,767; −128 never occurs. A 4×16
 * tile: 8 ymm accumulators, two weight vectors, the broadcast, its magnitude and a temporary.
 * Also used by INTEL_SIERRA.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/gemm_i8.h"

#define HASWELL_TARGET __attribute__((target("avx2,fma")))

enum { HASWELL_MR = 4, HASWELL_NR = 16 };

HASWELL_TARGET static void tile_i8_haswell(size_t quads, const int8_t *const *a_rows, const int8_t *b_panel,
                                           const uform__gemm_i8_tile_out_t *out) {
    __m256i sum_i32x8[HASWELL_MR][2];
#pragma GCC unroll 4
    for (int r = 0; r < HASWELL_MR; ++r) sum_i32x8[r][0] = sum_i32x8[r][1] = _mm256_setzero_si256();
    const int8_t *a[HASWELL_MR];
    for (int r = 0; r < HASWELL_MR; ++r) a[r] = a_rows[r];
    const __m256i ones_i16x16 = _mm256_set1_epi16(1);
    for (size_t t = 0; t < quads; ++t) {
        const int8_t *b = b_panel + t * HASWELL_NR * 4;
        __m256i w0_i8x32 = _mm256_loadu_si256((const __m256i *)b), w1_i8x32 = _mm256_loadu_si256((const __m256i *)(b + 32));
#pragma GCC unroll 4
        for (int r = 0; r < HASWELL_MR; ++r) {
            int32_t quad;
            __builtin_memcpy(&quad, a[r] + 4 * t, sizeof quad);
            __m256i x_i8x32 = _mm256_set1_epi32(quad), magnitude_u8x32 = _mm256_abs_epi8(x_i8x32);
            __m256i pairs0_i16x16 = _mm256_maddubs_epi16(magnitude_u8x32, _mm256_sign_epi8(w0_i8x32, x_i8x32));
            __m256i pairs1_i16x16 = _mm256_maddubs_epi16(magnitude_u8x32, _mm256_sign_epi8(w1_i8x32, x_i8x32));
            sum_i32x8[r][0] = _mm256_add_epi32(sum_i32x8[r][0], _mm256_madd_epi16(pairs0_i16x16, ones_i16x16));
            sum_i32x8[r][1] = _mm256_add_epi32(sum_i32x8[r][1], _mm256_madd_epi16(pairs1_i16x16, ones_i16x16));
        }
    }
    if (out->output == UFORM__GEMM_I8_F32 && !out->gelu && out->cols == HASWELL_NR) {
        /* A full-width F32 tile from the registers: fma(float(acc), sx·sw, bias) (+ old Y). */
        __m256 w_scale0_f32x8 = _mm256_loadu_ps(out->w_scale), w_scale1_f32x8 = _mm256_loadu_ps(out->w_scale + 8);
        __m256 bias0_f32x8 = out->bias ? _mm256_loadu_ps(out->bias) : _mm256_setzero_ps();
        __m256 bias1_f32x8 = out->bias ? _mm256_loadu_ps(out->bias + 8) : _mm256_setzero_ps();
        for (size_t r = 0; r < out->rows; ++r) {
            __m256 x_scale_f32x8 = _mm256_set1_ps(out->x_scale[r]);
            __m256 y0_f32x8 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum_i32x8[r][0]), _mm256_mul_ps(x_scale_f32x8, w_scale0_f32x8), bias0_f32x8);
            __m256 y1_f32x8 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum_i32x8[r][1]), _mm256_mul_ps(x_scale_f32x8, w_scale1_f32x8), bias1_f32x8);
            float *target = (float *)out->y + r * out->ldy;
            if (out->accumulate) {
                y0_f32x8 = _mm256_add_ps(_mm256_loadu_ps(target), y0_f32x8);
                y1_f32x8 = _mm256_add_ps(_mm256_loadu_ps(target + 8), y1_f32x8);
            }
            _mm256_storeu_ps(target, y0_f32x8);
            _mm256_storeu_ps(target + 8, y1_f32x8);
        }
        return;
    }
    int32_t sums[HASWELL_MR * HASWELL_NR];
    for (int r = 0; r < HASWELL_MR; ++r) {
        _mm256_storeu_si256((__m256i *)(sums + r * HASWELL_NR), sum_i32x8[r][0]);
        _mm256_storeu_si256((__m256i *)(sums + r * HASWELL_NR + 8), sum_i32x8[r][1]);
    }
    uform__gemm_i8_tile_store(sums, HASWELL_NR, out, uform__gemm_kernels(UFORM_CPU_CLASS_INTEL_HASWELL));
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

static const uform__gemm_i8_micro_t micro_i8_haswell = {
    .mr = HASWELL_MR, .nr = HASWELL_NR, .mc = 192, .layout = 102, .biased = 0, .tile = tile_i8_haswell,
    .quantize_row = quantize_row_haswell};

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

const uform__gemm_i8_kernels_t uform__gemm_i8_kernels_haswell = {
    .cpu_class = UFORM_CPU_CLASS_INTEL_HASWELL,
    .quantize = quantize_haswell,
    .packed_size = packed_size_haswell,
    .pack = pack_haswell,
    .forward = forward_haswell,
};
