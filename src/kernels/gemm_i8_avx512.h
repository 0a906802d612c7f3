/*
 * The AVX-512 pieces the SKYLAKE and ICELAKE int8 kernels share (gemm_i8_skylake.c,
 * gemm_i8_icelake.c): the row quantizer and the end of a tile's row vector. Static inline
 * functions with a target attribute that both files' targets include. The formulas are in
 * gemm_i8.h; each step here is the same F32 or integer operation as the scalar reference's.
 */
#ifndef UFORM_KERNELS_GEMM_I8_AVX512_H
#define UFORM_KERNELS_GEMM_I8_AVX512_H

#include <immintrin.h>
#include <string.h>

#include "kernels/gemm_avx512.h"
#include "kernels/gemm_i8.h"

#define GEMM_I8_AVX512_TARGET __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma")))

/* 16 values of a row as F32 (BF16 widened exactly), lanes past `mask` zero. */
GEMM_I8_AVX512_TARGET static inline __m512 gemm_i8_load_f32x16(const void *x, uform__gemm_dtype_t x_dtype, size_t i,
                                                              __mmask16 mask) {
    if (x_dtype == UFORM__GEMM_BF16) {
        __m256i bf16x16 = _mm256_maskz_loadu_epi16(mask, (const uform__bf16_t *)x + i);
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bf16x16), 16));
    }
    return _mm512_maskz_loadu_ps(mask, (const float *)x + i);
}

/* gemm_i8.h's quantizer for one row: the largest |x| as integer bits (two running maxima), then
 * q = rint(x·inv) (vcvtps2dq rounds to nearest even) clamped to ±127. Whole groups of 64 values
 * narrow four int32 vectors with vpackssdw and vpacksswb (each saturating, so the pair clamps to
 * [-128, 127] whatever the int32), vpmaxsb lifts -128 to -127 (so the group equals the clamp of
 * every value, exactly as the scalar reference's), vpermd restores the order the in-lane packs
 * interleave, and one 64-byte store writes it; Σ q comes from those bytes (vpsadbw of q + 128).
 * Zen 4 runs this at about twice the speed of a vpmovdb store per 16 values. The tail of under 64
 * values goes 16 at a time, clamped in int32 and narrowed with a masked vpmovdb. */
GEMM_I8_AVX512_TARGET static inline void gemm_i8_quantize_row_avx512(size_t k, const void *x,
                                                                     uform__gemm_dtype_t x_dtype, int8_t *q,
                                                                     size_t k_padded, float *scale, int32_t *sum) {
    __m512i magnitude_mask = _mm512_set1_epi32(0x7FFFFFFF);
    __m512i amax_u32x16[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
    size_t i = 0;
    for (; i + 32 <= k; i += 32)
#pragma GCC unroll 2
        for (int v = 0; v < 2; ++v)
            amax_u32x16[v] = _mm512_max_epu32(
                amax_u32x16[v],
                _mm512_and_si512(_mm512_castps_si512(gemm_i8_load_f32x16(x, x_dtype, i + 16 * v, (__mmask16)0xFFFF)), magnitude_mask));
    for (; i < k; i += 16) {
        __mmask16 mask = gemm_columns_mask(k - i);
        __m512i bits_u32x16 = _mm512_and_si512(_mm512_castps_si512(gemm_i8_load_f32x16(x, x_dtype, i, mask)), magnitude_mask);
        amax_u32x16[0] = _mm512_max_epu32(amax_u32x16[0], bits_u32x16);
    }
    float inv;
    uform__gemm_i8_row_factors((uint32_t)_mm512_reduce_max_epu32(_mm512_max_epu32(amax_u32x16[0], amax_u32x16[1])),
                               scale, &inv);
    if (inv == 0.0f) {
        memset(q, 0, k_padded);
        if (sum) *sum = 0;
        return;
    }
    __m512 inv_f32x16 = _mm512_set1_ps(inv);
    __m512i low_i8x64 = _mm512_set1_epi8(-127), flip_u8x64 = _mm512_set1_epi8((char)0x80);
    __m512i order_i32x16 = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    __m512i biased_sums_u64x8 = _mm512_setzero_si512(); /* Σ (q + 128) over whole groups */
    i = 0;
    for (; i + 64 <= k; i += 64) {
        __m512i q_i32x16[4];
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v)
            q_i32x16[v] = _mm512_cvtps_epi32(_mm512_mul_ps(gemm_i8_load_f32x16(x, x_dtype, i + 16 * v, (__mmask16)0xFFFF), inv_f32x16));
        __m512i q_i8x64 = _mm512_packs_epi16(_mm512_packs_epi32(q_i32x16[0], q_i32x16[1]),
                                             _mm512_packs_epi32(q_i32x16[2], q_i32x16[3]));
        q_i8x64 = _mm512_max_epi8(q_i8x64, low_i8x64);
        biased_sums_u64x8 = _mm512_add_epi64(biased_sums_u64x8,
                                             _mm512_sad_epu8(_mm512_xor_si512(q_i8x64, flip_u8x64), _mm512_setzero_si512()));
        _mm512_storeu_si512(q + i, _mm512_permutexvar_epi32(order_i32x16, q_i8x64));
    }
    int32_t total = (int32_t)((int64_t)_mm512_reduce_add_epi64(biased_sums_u64x8) - 128 * (int64_t)i);
    __m512i high_i32x16 = _mm512_set1_epi32(127), low_i32x16 = _mm512_set1_epi32(-127), sum_i32x16 = _mm512_setzero_si512();
    for (; i < k; i += 16) {
        __mmask16 mask = gemm_columns_mask(k - i);
        __m512i q_i32x16 = _mm512_cvtps_epi32(_mm512_mul_ps(gemm_i8_load_f32x16(x, x_dtype, i, mask), inv_f32x16));
        q_i32x16 = _mm512_max_epi32(_mm512_min_epi32(q_i32x16, high_i32x16), low_i32x16);
        sum_i32x16 = _mm512_add_epi32(sum_i32x16, q_i32x16); /* masked-off lanes loaded 0, so add 0 */
        _mm512_mask_cvtepi32_storeu_epi8(q + i, mask, q_i32x16);
    }
    for (size_t j = k; j < k_padded; ++j) q[j] = 0;
    if (sum) *sum = total + _mm512_reduce_add_epi32(sum_i32x16);
}

/* One row vector of a tile's corrected int32 sums to Y (F32 or I32): fma(float(acc), sx·sw,
 * bias), then (old Y +) and GELU, stored under `mask`; `v` is the 16-column vector's index. Full
 * vectors use plain loads and stores: Zen 4 runs a masked zmm store several times slower. */
GEMM_I8_AVX512_TARGET static inline void gemm_i8_finish_f32x16(__m512i acc_i32x16, size_t r, size_t v,
                                                               __mmask16 mask, const uform__gemm_i8_tile_out_t *out) {
    int full = mask == (__mmask16)0xFFFF;
    if (out->output == UFORM__GEMM_I8_I32) {
        int32_t *target = (int32_t *)out->y + r * out->ldy + 16 * v;
        if (full) _mm512_storeu_si512(target, acc_i32x16);
        else _mm512_mask_storeu_epi32(target, mask, acc_i32x16);
        return;
    }
    const float *w_scale = out->w_scale + 16 * v, *bias = out->bias ? out->bias + 16 * v : NULL;
    __m512 w_scale_f32x16 = full ? _mm512_loadu_ps(w_scale) : _mm512_maskz_loadu_ps(mask, w_scale);
    __m512 bias_f32x16 = !bias ? _mm512_setzero_ps() : full ? _mm512_loadu_ps(bias) : _mm512_maskz_loadu_ps(mask, bias);
    __m512 scale_f32x16 = _mm512_mul_ps(_mm512_set1_ps(out->x_scale[r]), w_scale_f32x16);
    __m512 y_f32x16 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc_i32x16), scale_f32x16, bias_f32x16);
    float *target = (float *)out->y + r * out->ldy + 16 * v;
    if (out->accumulate)
        y_f32x16 = _mm512_add_ps(full ? _mm512_loadu_ps(target) : _mm512_maskz_loadu_ps(mask, target), y_f32x16);
    if (out->gelu) y_f32x16 = gemm_gelu_f32x16(y_f32x16, out->gelu);
    if (full) _mm512_storeu_ps(target, y_f32x16);
    else _mm512_mask_storeu_ps(target, mask, y_f32x16);
}

/* The end of an F32 tile of 64 whole columns (the common case: every tile of a product whose N is
 * a multiple of 64, the short last one of its rows included), with no GELU or with a folded erf
 * form (`gelu` NONE, EXACT or FAST, a constant at each call below, so each form is its own
 * unrolled copy with the activation inlined): the columns' scales and biases loaded once, every
 * field of `out` read once into locals (a store through Y could alias them, so the compiler would
 * otherwise reload them after every store). The same operations as gemm_i8_finish_f32x16 in the
 * same order, so the same bits. With GELU this path is worth a quarter of an mlp.up product at
 * K = 384: the general path below, with the form chosen per vector and masks per vector, took
 * ~60% longer than the product without GELU (bench/README.md, batch-1 texts). */
GEMM_I8_AVX512_TARGET static inline __attribute__((always_inline)) void
gemm_i8_finish_whole_avx512(const int32_t *sums, size_t mr, int biased, const uform__gemm_i8_tile_out_t *out,
                            const int gelu) {
    const float *x_scale = out->x_scale, *w_scale = out->w_scale, *bias = out->bias;
    const int32_t *x_sums = out->x_sums;
    float *y = out->y;
    size_t ldy = out->ldy, rows = out->rows;
    int accumulate = out->accumulate;
    __m512 w_scale_f32x16[4], bias_f32x16[4];
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
        w_scale_f32x16[v] = _mm512_loadu_ps(w_scale + 16 * v);
        bias_f32x16[v] = bias ? _mm512_loadu_ps(bias + 16 * v) : _mm512_setzero_ps();
    }
#pragma GCC unroll 6
    for (size_t r = 0; r < mr; ++r) {
        if (r >= rows) break;
        __m512 x_scale_f32x16 = _mm512_set1_ps(x_scale[r]);
        __m512i correction_i32x16 = _mm512_set1_epi32(biased ? (int32_t)((uint32_t)x_sums[r] << 7) : 0);
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) {
            __m512i acc_i32x16 = _mm512_sub_epi32(_mm512_load_si512(sums + r * 64 + 16 * v), correction_i32x16);
            __m512 y_f32x16 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc_i32x16), _mm512_mul_ps(x_scale_f32x16, w_scale_f32x16[v]),
                                              bias_f32x16[v]);
            float *target = y + r * ldy + 16 * v;
            if (accumulate) y_f32x16 = _mm512_add_ps(_mm512_loadu_ps(target), y_f32x16);
            if (gelu) y_f32x16 = gemm_gelu_erf_f32x16(y_f32x16, gelu);
            _mm512_storeu_ps(target, y_f32x16);
        }
    }
}

/* The end of a tile whose int32 sums the K loop stored, row-major [rows][64] (a local array: the
 * K loop keeps its 24 accumulators in registers only when nothing after it indexes them, so the
 * epilogue reads them back from L1). `biased`: subtract VNNI's 128·Σ_k qx per row first. BF16
 * output goes through the portable store; F32 and I32 from registers, 16 columns at a time. */
GEMM_I8_AVX512_TARGET static inline __attribute__((always_inline)) void
gemm_i8_finish_tile_avx512(int32_t *sums, size_t mr, int biased, const uform__gemm_i8_tile_out_t *out,
                           uform_cpu_class_t cpu_class) {
    if (out->output == UFORM__GEMM_I8_F32 && out->cols == 64 && out->rows <= mr) {
        switch (out->gelu) {
        case UFORM__GEMM_GELU_NONE: gemm_i8_finish_whole_avx512(sums, mr, biased, out, UFORM__GEMM_GELU_NONE); return;
        case UFORM__GEMM_GELU_FAST: gemm_i8_finish_whole_avx512(sums, mr, biased, out, UFORM__GEMM_GELU_FAST); return;
        case UFORM__GEMM_GELU_EXACT: gemm_i8_finish_whole_avx512(sums, mr, biased, out, UFORM__GEMM_GELU_EXACT); return;
        default: break; /* the sigmoid forms: the general path */
        }
    }
    __mmask16 mask[4];
    for (int v = 0; v < 4; ++v) mask[v] = out->cols > (size_t)(16 * v) ? gemm_columns_mask(out->cols - 16 * v) : 0;
    for (size_t r = 0; r < out->rows; ++r) {
        __m512i correction_i32x16 = _mm512_set1_epi32(biased ? (int32_t)((uint32_t)out->x_sums[r] << 7) : 0);
        for (int v = 0; v < 4; ++v) {
            if (!mask[v]) break;
            __m512i acc_i32x16 = _mm512_sub_epi32(_mm512_loadu_si512(sums + r * 64 + 16 * v), correction_i32x16);
            if (out->output == UFORM__GEMM_I8_BF16) _mm512_storeu_si512(sums + r * 64 + 16 * v, acc_i32x16);
            else gemm_i8_finish_f32x16(acc_i32x16, r, (size_t)v, mask[v], out);
        }
    }
    if (out->output == UFORM__GEMM_I8_BF16) uform__gemm_i8_tile_store(sums, 64, out, uform__gemm_kernels(cpu_class));
}

#endif
