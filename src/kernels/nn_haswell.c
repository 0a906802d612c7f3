/*
 * HASWELL NN kernels (AVX2, FMA, F16C), also used by SIERRA. Specialised: the attention block
 * primitives (a register-blocked 4×16 micro-product, an 8×8 in-register transpose, a vectorised
 * exp), GELU, LayerNorm, softmax + cross-entropy, L2 normalisation, AdamW, the sum of squares and
 * the F32↔BF16/F16 conversions. Mean pooling, embeddings and the I8/B1 packings are
 * memory-bound or tiny and reuse the SERIAL kernels.
 *
 * Vector exp: Cephes' expf (range reduction by ln 2 split in two constants, a degree-6
 * polynomial), ~2 ulp; arguments below −87.3 give exactly 0 and NaN stays NaN.
 * Vector erfc for GELU: Numerical Recipes' erfcc (Chebyshev fit, fractional error < 1.2e-7 for
 * every argument), so 1 + erf(x/√2) keeps ~1e-7 relative accuracy even deep in the negative tail.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/nn.h"

#define UFORM_HASWELL __attribute__((target("avx2,fma,f16c")))

/* Lane i of the answer is all ones for i < count (count ≤ 8). */
UFORM_HASWELL static inline __m256i tail_mask_i32x8(size_t count) {
    const __m256i lanes_i32x8 = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)count), lanes_i32x8);
}

/* Stores the lanes of `mask` (a prefix): a whole vector with a plain store, only tails through
 * VMASKMOVPS, whose stores are microcoded and slow on AMD cores. */
UFORM_HASWELL static inline void store_f32x8(float *x, __m256i mask_i32x8, __m256 value_f32x8) {
    if (_mm256_movemask_ps(_mm256_castsi256_ps(mask_i32x8)) == 0xFF)
        _mm256_storeu_ps(x, value_f32x8);
    else
        _mm256_maskstore_ps(x, mask_i32x8, value_f32x8);
}

UFORM_HASWELL static inline __m256 exp_f32x8(__m256 x_f32x8) {
    const __m256 low_f32x8 = _mm256_set1_ps(-87.33654f), high_f32x8 = _mm256_set1_ps(88.72283f);
    __m256 underflow_f32x8 = _mm256_cmp_ps(x_f32x8, low_f32x8, _CMP_LT_OQ);
    /* max/min answer their second operand when one is NaN, so NaN flows through. */
    __m256 clamped_f32x8 = _mm256_min_ps(high_f32x8, _mm256_max_ps(low_f32x8, x_f32x8));
    __m256 n_f32x8 = _mm256_round_ps(_mm256_mul_ps(clamped_f32x8, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r_f32x8 = _mm256_fnmadd_ps(n_f32x8, _mm256_set1_ps(0.693359375f), clamped_f32x8);
    r_f32x8 = _mm256_fnmadd_ps(n_f32x8, _mm256_set1_ps(-2.12194440e-4f), r_f32x8);
    __m256 p_f32x8 = _mm256_set1_ps(1.9875691500e-4f);
    p_f32x8 = _mm256_fmadd_ps(p_f32x8, r_f32x8, _mm256_set1_ps(1.3981999507e-3f));
    p_f32x8 = _mm256_fmadd_ps(p_f32x8, r_f32x8, _mm256_set1_ps(8.3334519073e-3f));
    p_f32x8 = _mm256_fmadd_ps(p_f32x8, r_f32x8, _mm256_set1_ps(4.1665795894e-2f));
    p_f32x8 = _mm256_fmadd_ps(p_f32x8, r_f32x8, _mm256_set1_ps(1.6666665459e-1f));
    p_f32x8 = _mm256_fmadd_ps(p_f32x8, r_f32x8, _mm256_set1_ps(5.0000001201e-1f));
    __m256 r2_f32x8 = _mm256_mul_ps(r_f32x8, r_f32x8);
    p_f32x8 = _mm256_fmadd_ps(p_f32x8, r2_f32x8, _mm256_add_ps(r_f32x8, _mm256_set1_ps(1.0f)));
    /* 2^n built in the exponent field; n ∈ [−126, 128] after the clamp (128 only at the top, where
     * the polynomial is < 1, handled by splitting 2^n into 2^(n−1)·2). */
    __m256i n_i32x8 = _mm256_cvtps_epi32(n_f32x8);
    __m256 scale_f32x8 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n_i32x8, _mm256_set1_epi32(126)), 23));
    __m256 result_f32x8 = _mm256_mul_ps(_mm256_mul_ps(p_f32x8, scale_f32x8), _mm256_set1_ps(2.0f));
    return _mm256_andnot_ps(underflow_f32x8, result_f32x8);
}

/* erfc(z) for z ≥ 0 (Numerical Recipes erfcc). */
UFORM_HASWELL static inline __m256 erfc_nonnegative_f32x8(__m256 z_f32x8) {
    __m256 t_f32x8 =
        _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(_mm256_set1_ps(0.5f), z_f32x8, _mm256_set1_ps(1.0f)));
    __m256 p_f32x8 = _mm256_set1_ps(0.17087277f);
    p_f32x8 = _mm256_fmadd_ps(p_f32x8, t_f32x8, _mm256_set1_ps(-0.82215223f));
    p_f32x8 = _mm256_fmadd_ps(p_f32x8, t_f32x8, _mm256_set1_ps(1.48851587f));
    p_f32x8 = _mm256_fmadd_ps(p_f32x8, t_f32x8, _mm256_set1_ps(-1.13520398f));
    p_f32x8 = _mm256_fmadd_ps(p_f32x8, t_f32x8, _mm256_set1_ps(0.27886807f));
    p_f32x8 = _mm256_fmadd_ps(p_f32x8, t_f32x8, _mm256_set1_ps(-0.18628806f));
    p_f32x8 = _mm256_fmadd_ps(p_f32x8, t_f32x8, _mm256_set1_ps(0.09678418f));
    p_f32x8 = _mm256_fmadd_ps(p_f32x8, t_f32x8, _mm256_set1_ps(0.37409196f));
    p_f32x8 = _mm256_fmadd_ps(p_f32x8, t_f32x8, _mm256_set1_ps(1.00002368f));
    p_f32x8 = _mm256_fmadd_ps(p_f32x8, t_f32x8, _mm256_set1_ps(-1.26551223f));
    __m256 exponent_f32x8 = _mm256_fnmadd_ps(z_f32x8, z_f32x8, p_f32x8);
    return _mm256_mul_ps(t_f32x8, exp_f32x8(exponent_f32x8));
}

/* Φ(x) = ½·(1 + erf(x/√2)) = ½·erfc(−x/√2): ½·erfc(|z|) for x < 0, 1 − ½·erfc(|z|) otherwise. */
UFORM_HASWELL static inline __m256 normal_cdf_f32x8(__m256 x_f32x8) {
    __m256 z_f32x8 = _mm256_mul_ps(x_f32x8, _mm256_set1_ps(0.70710678118654752f));
    __m256 magnitude_f32x8 = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), z_f32x8);
    __m256 half_tail_f32x8 = _mm256_mul_ps(_mm256_set1_ps(0.5f), erfc_nonnegative_f32x8(magnitude_f32x8));
    __m256 negative_f32x8 = _mm256_cmp_ps(x_f32x8, _mm256_setzero_ps(), _CMP_LT_OQ);
    return _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(1.0f), half_tail_f32x8), half_tail_f32x8, negative_f32x8);
}

/* ---------------------------------------------------------------------------------------------
 * Attention block primitives.
 */

/* out[r, j] (=, or += when `add`) scale · Σ_k a[r, k]·b[k, j] for r < ROWS (a compile-time 1..4)
 * and j in one 16-wide column chunk (`count` ≤ 16 valid). */
UFORM_HASWELL static inline __attribute__((always_inline)) void
product_rows_f32_haswell(const float *a, size_t a_stride, const float *b, size_t b_stride, size_t depth, float scale,
                         float *out, size_t out_stride, size_t count, int add, const size_t rows) {
    __m256 acc_f32x8[4][2];
#pragma GCC unroll 4
    for (size_t r = 0; r < rows; ++r) acc_f32x8[r][0] = acc_f32x8[r][1] = _mm256_setzero_ps();
    __m256i mask0_i32x8 = tail_mask_i32x8(count < 8 ? count : 8);
    __m256i mask1_i32x8 = tail_mask_i32x8(count > 8 ? count - 8 : 0);
    if (count == 16) {
        for (size_t k = 0; k < depth; ++k) {
            __m256 b0_f32x8 = _mm256_loadu_ps(b + k * b_stride), b1_f32x8 = _mm256_loadu_ps(b + k * b_stride + 8);
#pragma GCC unroll 4
            for (size_t r = 0; r < rows; ++r) {
                __m256 a_f32x8 = _mm256_broadcast_ss(a + r * a_stride + k);
                acc_f32x8[r][0] = _mm256_fmadd_ps(a_f32x8, b0_f32x8, acc_f32x8[r][0]);
                acc_f32x8[r][1] = _mm256_fmadd_ps(a_f32x8, b1_f32x8, acc_f32x8[r][1]);
            }
        }
    } else {
        for (size_t k = 0; k < depth; ++k) {
            __m256 b0_f32x8 = _mm256_maskload_ps(b + k * b_stride, mask0_i32x8);
            __m256 b1_f32x8 = _mm256_maskload_ps(b + k * b_stride + 8, mask1_i32x8);
#pragma GCC unroll 4
            for (size_t r = 0; r < rows; ++r) {
                __m256 a_f32x8 = _mm256_broadcast_ss(a + r * a_stride + k);
                acc_f32x8[r][0] = _mm256_fmadd_ps(a_f32x8, b0_f32x8, acc_f32x8[r][0]);
                acc_f32x8[r][1] = _mm256_fmadd_ps(a_f32x8, b1_f32x8, acc_f32x8[r][1]);
            }
        }
    }
    __m256 scale_f32x8 = _mm256_set1_ps(scale);
#pragma GCC unroll 4
    for (size_t r = 0; r < rows; ++r) {
        float *o = out + r * out_stride;
        __m256 v0_f32x8 = _mm256_mul_ps(acc_f32x8[r][0], scale_f32x8);
        __m256 v1_f32x8 = _mm256_mul_ps(acc_f32x8[r][1], scale_f32x8);
        if (count == 16) { /* VMASKMOVPS stores are slow on several cores: only tails use them */
            if (add) {
                v0_f32x8 = _mm256_add_ps(v0_f32x8, _mm256_loadu_ps(o));
                v1_f32x8 = _mm256_add_ps(v1_f32x8, _mm256_loadu_ps(o + 8));
            }
            _mm256_storeu_ps(o, v0_f32x8);
            _mm256_storeu_ps(o + 8, v1_f32x8);
            continue;
        }
        if (add) {
            v0_f32x8 = _mm256_add_ps(v0_f32x8, _mm256_maskload_ps(o, mask0_i32x8));
            v1_f32x8 = _mm256_add_ps(v1_f32x8, _mm256_maskload_ps(o + 8, mask1_i32x8));
        }
        _mm256_maskstore_ps(o, mask0_i32x8, v0_f32x8);
        _mm256_maskstore_ps(o + 8, mask1_i32x8, v1_f32x8);
    }
}

/* out [m, n] (=, or +=) scale · a [m, k] · b [k, n]; all row-major with strides. */
UFORM_HASWELL static void product_f32_haswell(const float *a, size_t a_stride, const float *b, size_t b_stride,
                                              size_t m, size_t n, size_t k, float scale, float *out, size_t out_stride,
                                              int add) {
    for (size_t j = 0; j < n; j += 16) {
        size_t count = n - j < 16 ? n - j : 16;
        size_t r = 0;
        for (; r + 4 <= m; r += 4)
            product_rows_f32_haswell(a + r * a_stride, a_stride, b + j, b_stride, k, scale, out + r * out_stride + j,
                                     out_stride, count, add, 4);
        switch (m - r) {
        case 3:
            product_rows_f32_haswell(a + r * a_stride, a_stride, b + j, b_stride, k, scale, out + r * out_stride + j,
                                     out_stride, count, add, 3);
            break;
        case 2:
            product_rows_f32_haswell(a + r * a_stride, a_stride, b + j, b_stride, k, scale, out + r * out_stride + j,
                                     out_stride, count, add, 2);
            break;
        case 1:
            product_rows_f32_haswell(a + r * a_stride, a_stride, b + j, b_stride, k, scale, out + r * out_stride + j,
                                     out_stride, count, add, 1);
            break;
        default:
            break;
        }
    }
}

UFORM_HASWELL static void scores_f32_haswell(const float *a, size_t a_stride, const float *bt, size_t bt_stride,
                                             size_t rows, size_t cols, size_t width, float scale, float *s,
                                             size_t s_stride) {
    product_f32_haswell(a, a_stride, bt, bt_stride, rows, cols, width, scale, s, s_stride, 0);
}

UFORM_HASWELL static void accumulate_f32_haswell(float *acc, size_t acc_stride, const float *p, size_t p_stride,
                                                 const float *x, size_t x_stride, size_t rows, size_t cols,
                                                 size_t width) {
    product_f32_haswell(p, p_stride, x, x_stride, rows, width, cols, 1.0f, acc, acc_stride, 1);
}

/* 8×8 blocks through registers (unpack, shuffle, permute), scalar edges. */
UFORM_HASWELL static void transpose_f32_haswell(const float *src, size_t src_stride, size_t rows, size_t cols,
                                                float *dst, size_t dst_stride) {
    size_t r = 0;
    for (; r + 8 <= rows; r += 8) {
        size_t c = 0;
        for (; c + 8 <= cols; c += 8) {
            __m256 row_f32x8[8];
            for (size_t i = 0; i < 8; ++i) row_f32x8[i] = _mm256_loadu_ps(src + (r + i) * src_stride + c);
            __m256 t0 = _mm256_unpacklo_ps(row_f32x8[0], row_f32x8[1]),
                   t1 = _mm256_unpackhi_ps(row_f32x8[0], row_f32x8[1]);
            __m256 t2 = _mm256_unpacklo_ps(row_f32x8[2], row_f32x8[3]),
                   t3 = _mm256_unpackhi_ps(row_f32x8[2], row_f32x8[3]);
            __m256 t4 = _mm256_unpacklo_ps(row_f32x8[4], row_f32x8[5]),
                   t5 = _mm256_unpackhi_ps(row_f32x8[4], row_f32x8[5]);
            __m256 t6 = _mm256_unpacklo_ps(row_f32x8[6], row_f32x8[7]),
                   t7 = _mm256_unpackhi_ps(row_f32x8[6], row_f32x8[7]);
            __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
            __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
            __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
            __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
            float *d = dst + c * dst_stride + r;
            _mm256_storeu_ps(d + 0 * dst_stride, _mm256_permute2f128_ps(u0, u4, 0x20));
            _mm256_storeu_ps(d + 1 * dst_stride, _mm256_permute2f128_ps(u1, u5, 0x20));
            _mm256_storeu_ps(d + 2 * dst_stride, _mm256_permute2f128_ps(u2, u6, 0x20));
            _mm256_storeu_ps(d + 3 * dst_stride, _mm256_permute2f128_ps(u3, u7, 0x20));
            _mm256_storeu_ps(d + 4 * dst_stride, _mm256_permute2f128_ps(u0, u4, 0x31));
            _mm256_storeu_ps(d + 5 * dst_stride, _mm256_permute2f128_ps(u1, u5, 0x31));
            _mm256_storeu_ps(d + 6 * dst_stride, _mm256_permute2f128_ps(u2, u6, 0x31));
            _mm256_storeu_ps(d + 7 * dst_stride, _mm256_permute2f128_ps(u3, u7, 0x31));
        }
        for (; c < cols; ++c)
            for (size_t i = 0; i < 8; ++i) dst[c * dst_stride + r + i] = src[(r + i) * src_stride + c];
    }
    for (; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) dst[c * dst_stride + r] = src[r * src_stride + c];
}

UFORM_HASWELL static float exp_shift_sum_f32_haswell(float *x, size_t n, float shift) {
    __m256 shift_f32x8 = _mm256_set1_ps(shift), sum_f32x8 = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 value_f32x8 = exp_f32x8(_mm256_sub_ps(_mm256_loadu_ps(x + i), shift_f32x8));
        _mm256_storeu_ps(x + i, value_f32x8);
        sum_f32x8 = _mm256_add_ps(sum_f32x8, value_f32x8);
    }
    for (; i < n; i += 8) {
        __m256i mask_i32x8 = tail_mask_i32x8(n - i < 8 ? n - i : 8);
        __m256 value_f32x8 = exp_f32x8(_mm256_sub_ps(_mm256_maskload_ps(x + i, mask_i32x8), shift_f32x8));
        value_f32x8 = _mm256_and_ps(value_f32x8, _mm256_castsi256_ps(mask_i32x8));
        store_f32x8(x + i, mask_i32x8, value_f32x8);
        sum_f32x8 = _mm256_add_ps(sum_f32x8, value_f32x8);
    }
    __m128 half_f32x4 = _mm_add_ps(_mm256_castps256_ps128(sum_f32x8), _mm256_extractf128_ps(sum_f32x8, 1));
    half_f32x4 = _mm_add_ps(half_f32x4, _mm_movehl_ps(half_f32x4, half_f32x4));
    half_f32x4 = _mm_add_ss(half_f32x4, _mm_movehdup_ps(half_f32x4));
    return _mm_cvtss_f32(half_f32x4);
}

UFORM_HASWELL static void exp_sub_f32_haswell(float *x, const float *shift, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(x + i, exp_f32x8(_mm256_sub_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(shift + i))));
    for (; i < n; i += 8) {
        __m256i mask_i32x8 = tail_mask_i32x8(n - i < 8 ? n - i : 8);
        __m256 value_f32x8 =
            _mm256_sub_ps(_mm256_maskload_ps(x + i, mask_i32x8), _mm256_maskload_ps(shift + i, mask_i32x8));
        store_f32x8(x + i, mask_i32x8, exp_f32x8(value_f32x8));
    }
}

UFORM_HASWELL static float row_max_f32_haswell(const float *x, size_t n) {
    __m256 max_f32x8 = _mm256_set1_ps(-INFINITY);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) max_f32x8 = _mm256_max_ps(max_f32x8, _mm256_loadu_ps(x + i));
    __m128 max_f32x4 = _mm_max_ps(_mm256_castps256_ps128(max_f32x8), _mm256_extractf128_ps(max_f32x8, 1));
    max_f32x4 = _mm_max_ps(max_f32x4, _mm_movehl_ps(max_f32x4, max_f32x4));
    max_f32x4 = _mm_max_ss(max_f32x4, _mm_movehdup_ps(max_f32x4));
    float max = _mm_cvtss_f32(max_f32x4);
    for (; i < n; ++i) max = x[i] > max ? x[i] : max;
    return max;
}

/* The BF16 attention's roundings (nn.h): add 0x7FFF plus the kept part's lowest bit, then drop
 * the low 16 bits (nearest, ties to even; past the largest BF16 gives ±inf); NaN only quieted. */
UFORM_HASWELL static void round_bf16_f32_haswell(const float *src, size_t src_stride, size_t rows, size_t cols,
                                                 float *dst, size_t dst_stride) {
    const __m256i magnitude_i32x8 = _mm256_set1_epi32(0x7FFFFFFF), infinity_i32x8 = _mm256_set1_epi32(0x7F800000);
    const __m256i half_i32x8 = _mm256_set1_epi32(0x7FFF), one_i32x8 = _mm256_set1_epi32(1);
    const __m256i quiet_i32x8 = _mm256_set1_epi32(0x00400000), kept_i32x8 = _mm256_set1_epi32((int)0xFFFF0000u);
    for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; c += 8) {
            const float *from = src + r * src_stride + c;
            float *to = dst + r * dst_stride + c;
            __m256i mask_i32x8 = tail_mask_i32x8(cols - c < 8 ? cols - c : 8);
            int whole = cols - c >= 8;
            __m256i bits_i32x8 = whole ? _mm256_loadu_si256((const __m256i *)from)
                                       : _mm256_maskload_epi32((const int *)from, mask_i32x8);
            __m256i nan_i32x8 = _mm256_cmpgt_epi32(_mm256_and_si256(bits_i32x8, magnitude_i32x8), infinity_i32x8);
            __m256i lowest_i32x8 = _mm256_and_si256(_mm256_srli_epi32(bits_i32x8, 16), one_i32x8);
            __m256i rounded_i32x8 = _mm256_add_epi32(bits_i32x8, _mm256_add_epi32(half_i32x8, lowest_i32x8));
            rounded_i32x8 = _mm256_blendv_epi8(rounded_i32x8, _mm256_or_si256(bits_i32x8, quiet_i32x8), nan_i32x8);
            store_f32x8(to, mask_i32x8, _mm256_castsi256_ps(_mm256_and_si256(rounded_i32x8, kept_i32x8)));
        }
}

const uform__nn_attention_ops_t uform__nn_attention_ops_haswell = {
    transpose_f32_haswell,     scores_f32_haswell,  accumulate_f32_haswell,
    exp_shift_sum_f32_haswell, exp_sub_f32_haswell, row_max_f32_haswell,
    round_bf16_f32_haswell,
};

static void attention_forward_bf16_haswell(const uform__attention_shape_t *shape, const float *qkv, float *out,
                                           float *lse, const uform__parallel_t *parallel) {
    uform__nn_attention_forward_bf16_with(&uform__nn_attention_ops_haswell, shape, qkv, out, lse, parallel);
}

static void attention_forward_f32_haswell(const uform__attention_shape_t *shape, const float *qkv, float *out,
                                          float *lse, const uform__parallel_t *parallel) {
    uform__nn_attention_forward_with(&uform__nn_attention_ops_haswell, shape, qkv, out, lse, parallel);
}

static void attention_backward_bf16_haswell(const uform__attention_shape_t *shape, const float *qkv, const float *out,
                                            const float *lse, const float *dout, float *deltas, float *dqkv,
                                            const uform__parallel_t *parallel) {
    uform__nn_attention_backward_bf16_with(&uform__nn_attention_ops_haswell, shape, qkv, out, lse, dout, deltas, dqkv,
                                           parallel);
}

static void attention_backward_f32_haswell(const uform__attention_shape_t *shape, const float *qkv, const float *out,
                                           const float *lse, const float *dout, float *deltas, float *dqkv,
                                           const uform__parallel_t *parallel) {
    uform__nn_attention_backward_with(&uform__nn_attention_ops_haswell, shape, qkv, out, lse, dout, deltas, dqkv,
                                      parallel);
}

/* ---------------------------------------------------------------------------------------------
 * GELU.
 */

typedef struct elementwise_context_t {
    const float *x, *dy;
    float *y;
} elementwise_context_t;

UFORM_HASWELL static void gelu_forward_range_haswell(void *opaque, size_t begin, size_t end) {
    const elementwise_context_t *c = opaque;
    for (size_t i = begin; i < end; i += 8) {
        __m256i mask_i32x8 = tail_mask_i32x8(end - i < 8 ? end - i : 8);
        __m256 x_f32x8 = _mm256_maskload_ps(c->x + i, mask_i32x8);
        store_f32x8(c->y + i, mask_i32x8, _mm256_mul_ps(x_f32x8, normal_cdf_f32x8(x_f32x8)));
    }
}

static void gelu_forward_f32_haswell(size_t n, const float *x, float *y, const uform__parallel_t *parallel) {
    elementwise_context_t context = {.x = x, .y = y};
    uform__nn_parallel_ranges(parallel, n, 4096, gelu_forward_range_haswell, &context);
}

UFORM_HASWELL static void gelu_backward_range_haswell(void *opaque, size_t begin, size_t end) {
    const elementwise_context_t *c = opaque;
    for (size_t i = begin; i < end; i += 8) {
        __m256i mask_i32x8 = tail_mask_i32x8(end - i < 8 ? end - i : 8);
        __m256 x_f32x8 = _mm256_maskload_ps(c->x + i, mask_i32x8);
        __m256 pdf_f32x8 =
            _mm256_mul_ps(exp_f32x8(_mm256_mul_ps(_mm256_set1_ps(-0.5f), _mm256_mul_ps(x_f32x8, x_f32x8))),
                          _mm256_set1_ps(0.39894228040143268f));
        __m256 derivative_f32x8 = _mm256_fmadd_ps(x_f32x8, pdf_f32x8, normal_cdf_f32x8(x_f32x8));
        store_f32x8(c->y + i, mask_i32x8, _mm256_mul_ps(_mm256_maskload_ps(c->dy + i, mask_i32x8), derivative_f32x8));
    }
}

static void gelu_backward_f32_haswell(size_t n, const float *x, const float *dy, float *dx,
                                      const uform__parallel_t *parallel) {
    elementwise_context_t context = {.x = x, .dy = dy, .y = dx};
    uform__nn_parallel_ranges(parallel, n, 4096, gelu_backward_range_haswell, &context);
}

/* ---------------------------------------------------------------------------------------------
 * Conversions: F16 through F16C (IEEE round to nearest even, subnormals and overflow handled by
 * the hardware); BF16 with the integer rounding of the serial kernel, eight lanes at a time.
 */

UFORM_HASWELL static void f32_to_f16_haswell(size_t n, const float *x, uint16_t *y) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; ++i) y[i] = uform__nn_f32_to_f16_one(x[i]);
}

UFORM_HASWELL static void f16_to_f32_haswell(size_t n, const uint16_t *x, float *y) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
    for (; i < n; ++i) y[i] = uform__nn_f16_to_f32_one(x[i]);
}

UFORM_HASWELL static void f32_to_bf16_haswell(size_t n, const float *x, uint16_t *y) {
    size_t i = 0;
    const __m256i abs_mask_i32x8 = _mm256_set1_epi32(0x7FFFFFFF), infinity_i32x8 = _mm256_set1_epi32(0x7F800000);
    for (; i + 8 <= n; i += 8) {
        __m256i bits_i32x8 = _mm256_castps_si256(_mm256_loadu_ps(x + i));
        __m256i odd_i32x8 = _mm256_and_si256(_mm256_srli_epi32(bits_i32x8, 16), _mm256_set1_epi32(1));
        __m256i rounded_i32x8 = _mm256_add_epi32(bits_i32x8, _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), odd_i32x8));
        __m256i quiet_i32x8 = _mm256_or_si256(bits_i32x8, _mm256_set1_epi32(0x00400000));
        __m256i nan_i32x8 = _mm256_cmpgt_epi32(_mm256_and_si256(bits_i32x8, abs_mask_i32x8), infinity_i32x8);
        __m256i result_i32x8 = _mm256_srli_epi32(_mm256_blendv_epi8(rounded_i32x8, quiet_i32x8, nan_i32x8), 16);
        /* Pack the low halves of the 32-bit lanes (values < 2^16, so unsigned saturation is exact). */
        __m256i packed_i16x16 = _mm256_packus_epi32(result_i32x8, result_i32x8);
        packed_i16x16 = _mm256_permute4x64_epi64(packed_i16x16, 0x08);
        _mm_storeu_si128((__m128i *)(y + i), _mm256_castsi256_si128(packed_i16x16));
    }
    for (; i < n; ++i) y[i] = uform__nn_f32_to_bf16_one(x[i]);
}

UFORM_HASWELL static void bf16_to_f32_haswell(size_t n, const uint16_t *x, float *y) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i wide_i32x8 = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(x + i)));
        _mm256_storeu_ps(y + i, _mm256_castsi256_ps(_mm256_slli_epi32(wide_i32x8, 16)));
    }
    for (; i < n; ++i) y[i] = uform__nn_bf16_to_f32_one(x[i]);
}

/* ---------------------------------------------------------------------------------------------
 * Row kernels: LayerNorm, softmax + cross-entropy, L2 normalisation, AdamW and the sum of
 * squares, eight lanes at a time with masked tails. Row sums accumulate in F32 lanes (the
 * serial reference uses double); the sum of squares keeps double lanes inside the serial
 * kernel's fixed blocks. Column sums of the LayerNorm backward run down each column in row
 * order inside one lane, so the split of columns between prongs cannot change a bit.
 */

UFORM_HASWELL static inline float reduce_add_f32x8(__m256 x_f32x8) {
    __m128 half_f32x4 = _mm_add_ps(_mm256_castps256_ps128(x_f32x8), _mm256_extractf128_ps(x_f32x8, 1));
    half_f32x4 = _mm_add_ps(half_f32x4, _mm_movehl_ps(half_f32x4, half_f32x4));
    half_f32x4 = _mm_add_ss(half_f32x4, _mm_movehdup_ps(half_f32x4));
    return _mm_cvtss_f32(half_f32x4);
}

UFORM_HASWELL static inline __m256 load_f32x8(const float *x, __m256i mask_i32x8) {
    return _mm256_maskload_ps(x, mask_i32x8);
}

typedef struct layernorm_context_t {
    size_t rows, width, x_stride, y_stride, dy_stride, dx_stride;
    const float *x, *weight, *bias, *mean_in, *rstd_in, *dy;
    float eps;
    float *y, *mean, *rstd, *dx, *dweight, *dbias;
} layernorm_context_t;

UFORM_HASWELL static void layernorm_forward_rows_haswell(void *opaque, size_t begin, size_t end) {
    const layernorm_context_t *c = opaque;
    size_t width = c->width;
    for (size_t r = begin; r < end; ++r) {
        const float *x = c->x + r * c->x_stride;
        float *y = c->y + r * c->y_stride;
        __m256 sum_f32x8 = _mm256_setzero_ps();
        for (size_t i = 0; i < width; i += 8)
            sum_f32x8 = _mm256_add_ps(sum_f32x8, load_f32x8(x + i, tail_mask_i32x8(width - i < 8 ? width - i : 8)));
        float mean = reduce_add_f32x8(sum_f32x8) / (float)width;
        __m256 mean_f32x8 = _mm256_set1_ps(mean), squares_f32x8 = _mm256_setzero_ps();
        for (size_t i = 0; i < width; i += 8) {
            __m256i mask_i32x8 = tail_mask_i32x8(width - i < 8 ? width - i : 8);
            __m256 deviation_f32x8 = _mm256_and_ps(_mm256_sub_ps(load_f32x8(x + i, mask_i32x8), mean_f32x8),
                                                   _mm256_castsi256_ps(mask_i32x8));
            squares_f32x8 = _mm256_fmadd_ps(deviation_f32x8, deviation_f32x8, squares_f32x8);
        }
        float rstd = 1.0f / sqrtf(reduce_add_f32x8(squares_f32x8) / (float)width + c->eps);
        __m256 rstd_f32x8 = _mm256_set1_ps(rstd);
        for (size_t i = 0; i < width; i += 8) {
            __m256i mask_i32x8 = tail_mask_i32x8(width - i < 8 ? width - i : 8);
            __m256 xhat_f32x8 = _mm256_mul_ps(_mm256_sub_ps(load_f32x8(x + i, mask_i32x8), mean_f32x8), rstd_f32x8);
            store_f32x8(y + i, mask_i32x8,
                        _mm256_fmadd_ps(xhat_f32x8, load_f32x8(c->weight + i, mask_i32x8),
                                        load_f32x8(c->bias + i, mask_i32x8)));
        }
        c->mean[r] = mean;
        c->rstd[r] = rstd;
    }
}

static void layernorm_forward_f32_haswell(size_t rows, size_t width, const float *x, size_t x_stride,
                                          const float *weight, const float *bias, float eps, float *y, size_t y_stride,
                                          float *mean, float *rstd, const uform__parallel_t *parallel) {
    layernorm_context_t context = {.rows = rows,
                                   .width = width,
                                   .x_stride = x_stride,
                                   .y_stride = y_stride,
                                   .x = x,
                                   .weight = weight,
                                   .bias = bias,
                                   .eps = eps,
                                   .y = y,
                                   .mean = mean,
                                   .rstd = rstd};
    uform__nn_parallel_ranges(parallel, rows, 16, layernorm_forward_rows_haswell, &context);
}

UFORM_HASWELL static void layernorm_backward_rows_haswell(void *opaque, size_t begin, size_t end) {
    const layernorm_context_t *c = opaque;
    size_t width = c->width;
    for (size_t r = begin; r < end; ++r) {
        const float *x = c->x + r * c->x_stride, *dy = c->dy + r * c->dy_stride;
        float *dx = c->dx + r * c->dx_stride;
        __m256 mean_f32x8 = _mm256_set1_ps(c->mean_in[r]), rstd_f32x8 = _mm256_set1_ps(c->rstd_in[r]);
        __m256 sum_g_f32x8 = _mm256_setzero_ps(), sum_gx_f32x8 = _mm256_setzero_ps();
        for (size_t i = 0; i < width; i += 8) {
            __m256i mask_i32x8 = tail_mask_i32x8(width - i < 8 ? width - i : 8);
            __m256 xhat_f32x8 = _mm256_mul_ps(_mm256_sub_ps(load_f32x8(x + i, mask_i32x8), mean_f32x8), rstd_f32x8);
            __m256 g_f32x8 = _mm256_mul_ps(load_f32x8(dy + i, mask_i32x8), load_f32x8(c->weight + i, mask_i32x8));
            sum_g_f32x8 = _mm256_add_ps(sum_g_f32x8, g_f32x8);
            sum_gx_f32x8 = _mm256_fmadd_ps(g_f32x8, xhat_f32x8, sum_gx_f32x8);
        }
        __m256 mean_g_f32x8 = _mm256_set1_ps(reduce_add_f32x8(sum_g_f32x8) / (float)width);
        __m256 mean_gx_f32x8 = _mm256_set1_ps(reduce_add_f32x8(sum_gx_f32x8) / (float)width);
        for (size_t i = 0; i < width; i += 8) {
            __m256i mask_i32x8 = tail_mask_i32x8(width - i < 8 ? width - i : 8);
            __m256 xhat_f32x8 = _mm256_mul_ps(_mm256_sub_ps(load_f32x8(x + i, mask_i32x8), mean_f32x8), rstd_f32x8);
            __m256 g_f32x8 = _mm256_mul_ps(load_f32x8(dy + i, mask_i32x8), load_f32x8(c->weight + i, mask_i32x8));
            __m256 value_f32x8 = _mm256_fnmadd_ps(xhat_f32x8, mean_gx_f32x8, _mm256_sub_ps(g_f32x8, mean_g_f32x8));
            store_f32x8(dx + i, mask_i32x8, _mm256_mul_ps(value_f32x8, rstd_f32x8));
        }
    }
}

UFORM_HASWELL static void layernorm_backward_columns_haswell(void *opaque, size_t begin, size_t end) {
    const layernorm_context_t *c = opaque;
    for (size_t i = begin; i < end; i += 8) {
        __m256i mask_i32x8 = tail_mask_i32x8(end - i < 8 ? end - i : 8);
        __m256 dweight_f32x8 = load_f32x8(c->dweight + i, mask_i32x8),
               dbias_f32x8 = load_f32x8(c->dbias + i, mask_i32x8);
        for (size_t r = 0; r < c->rows; ++r) {
            __m256 dy_f32x8 = load_f32x8(c->dy + r * c->dy_stride + i, mask_i32x8);
            __m256 xhat_f32x8 = _mm256_mul_ps(
                _mm256_sub_ps(load_f32x8(c->x + r * c->x_stride + i, mask_i32x8), _mm256_set1_ps(c->mean_in[r])),
                _mm256_set1_ps(c->rstd_in[r]));
            dweight_f32x8 = _mm256_fmadd_ps(dy_f32x8, xhat_f32x8, dweight_f32x8);
            dbias_f32x8 = _mm256_add_ps(dbias_f32x8, dy_f32x8);
        }
        store_f32x8(c->dweight + i, mask_i32x8, dweight_f32x8);
        store_f32x8(c->dbias + i, mask_i32x8, dbias_f32x8);
    }
}

static void layernorm_backward_f32_haswell(size_t rows, size_t width, const float *x, size_t x_stride,
                                           const float *weight, const float *mean, const float *rstd, const float *dy,
                                           size_t dy_stride, float *dx, size_t dx_stride, float *dweight, float *dbias,
                                           const uform__parallel_t *parallel) {
    layernorm_context_t context = {.rows = rows,
                                   .width = width,
                                   .x_stride = x_stride,
                                   .dy_stride = dy_stride,
                                   .dx_stride = dx_stride,
                                   .x = x,
                                   .weight = weight,
                                   .mean_in = mean,
                                   .rstd_in = rstd,
                                   .dy = dy,
                                   .dx = dx,
                                   .dweight = dweight,
                                   .dbias = dbias};
    uform__nn_parallel_ranges(parallel, rows, 16, layernorm_backward_rows_haswell, &context);
    uform__nn_parallel_ranges(parallel, width, 64, layernorm_backward_columns_haswell, &context);
}

typedef struct xent_context_t {
    size_t width, logits_stride, dlogits_stride;
    const float *logits, *scale, *probs_in, *dloss;
    const int32_t *targets;
    float *probs, *loss, *dlogits, *dscale;
} xent_context_t;

UFORM_HASWELL static void xent_forward_rows_haswell(void *opaque, size_t begin, size_t end) {
    const xent_context_t *c = opaque;
    size_t width = c->width;
    for (size_t r = begin; r < end; ++r) {
        const float *z = c->logits + r * c->logits_stride;
        float *p = c->probs + r * width;
        float scale = c->scale ? c->scale[r] : 1.0f, max = -INFINITY;
        __m256 scale_f32x8 = _mm256_set1_ps(scale), max_f32x8 = _mm256_set1_ps(-INFINITY);
        size_t i = 0;
        for (; i + 8 <= width; i += 8)
            max_f32x8 = _mm256_max_ps(max_f32x8, _mm256_mul_ps(_mm256_loadu_ps(z + i), scale_f32x8));
        __m128 max_f32x4 = _mm_max_ps(_mm256_castps256_ps128(max_f32x8), _mm256_extractf128_ps(max_f32x8, 1));
        max_f32x4 = _mm_max_ps(max_f32x4, _mm_movehl_ps(max_f32x4, max_f32x4));
        max = _mm_cvtss_f32(_mm_max_ss(max_f32x4, _mm_movehdup_ps(max_f32x4)));
        for (; i < width; ++i) max = scale * z[i] > max ? scale * z[i] : max;
        __m256 shift_f32x8 = _mm256_set1_ps(max), sum_f32x8 = _mm256_setzero_ps();
        for (i = 0; i < width; i += 8) {
            __m256i mask_i32x8 = tail_mask_i32x8(width - i < 8 ? width - i : 8);
            __m256 value_f32x8 = exp_f32x8(_mm256_fmsub_ps(load_f32x8(z + i, mask_i32x8), scale_f32x8, shift_f32x8));
            value_f32x8 = _mm256_and_ps(value_f32x8, _mm256_castsi256_ps(mask_i32x8));
            store_f32x8(p + i, mask_i32x8, value_f32x8);
            sum_f32x8 = _mm256_add_ps(sum_f32x8, value_f32x8);
        }
        float sum = reduce_add_f32x8(sum_f32x8);
        __m256 inverse_f32x8 = _mm256_set1_ps(1.0f / sum);
        for (i = 0; i < width; i += 8) {
            __m256i mask_i32x8 = tail_mask_i32x8(width - i < 8 ? width - i : 8);
            store_f32x8(p + i, mask_i32x8, _mm256_mul_ps(load_f32x8(p + i, mask_i32x8), inverse_f32x8));
        }
        int32_t target = c->targets[r];
        c->loss[r] = target < 0 ? 0.0f : logf(sum) + max - scale * z[target];
    }
}

static void softmax_xent_forward_f32_haswell(size_t rows, size_t width, const float *logits, size_t logits_stride,
                                             const int32_t *targets, const float *scale, float *probs, float *loss,
                                             const uform__parallel_t *parallel) {
    xent_context_t context = {.width = width,
                              .logits_stride = logits_stride,
                              .logits = logits,
                              .scale = scale,
                              .targets = targets,
                              .probs = probs,
                              .loss = loss};
    uform__nn_parallel_ranges(parallel, rows, 8, xent_forward_rows_haswell, &context);
}

UFORM_HASWELL static void xent_backward_rows_haswell(void *opaque, size_t begin, size_t end) {
    const xent_context_t *c = opaque;
    size_t width = c->width;
    for (size_t r = begin; r < end; ++r) {
        const float *z = c->logits + r * c->logits_stride, *p = c->probs_in + r * width;
        float *dz = c->dlogits + r * c->dlogits_stride;
        int32_t target = c->targets[r];
        if (target < 0) {
            memset(dz, 0, width * sizeof(float));
            if (c->dscale) c->dscale[r] = 0.0f;
            continue;
        }
        float scale = c->scale ? c->scale[r] : 1.0f, g = c->dloss[r];
        __m256 factor_f32x8 = _mm256_set1_ps(g * scale), dscale_f32x8 = _mm256_setzero_ps();
        const __m256i lanes_i32x8 = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        for (size_t i = 0; i < width; i += 8) {
            __m256i mask_i32x8 = tail_mask_i32x8(width - i < 8 ? width - i : 8);
            __m256 hit_f32x8 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(
                _mm256_add_epi32(_mm256_set1_epi32((int)i), lanes_i32x8), _mm256_set1_epi32(target)));
            __m256 delta_f32x8 =
                _mm256_sub_ps(load_f32x8(p + i, mask_i32x8), _mm256_and_ps(hit_f32x8, _mm256_set1_ps(1.0f)));
            store_f32x8(dz + i, mask_i32x8, _mm256_mul_ps(delta_f32x8, factor_f32x8));
            dscale_f32x8 = _mm256_fmadd_ps(_mm256_and_ps(delta_f32x8, _mm256_castsi256_ps(mask_i32x8)),
                                           load_f32x8(z + i, mask_i32x8), dscale_f32x8);
        }
        if (c->dscale) c->dscale[r] = g * reduce_add_f32x8(dscale_f32x8);
    }
}

static void softmax_xent_backward_f32_haswell(size_t rows, size_t width, const float *logits, size_t logits_stride,
                                              const int32_t *targets, const float *scale, const float *probs,
                                              const float *dloss, float *dlogits, size_t dlogits_stride, float *dscale,
                                              const uform__parallel_t *parallel) {
    xent_context_t context = {.width = width,
                              .logits_stride = logits_stride,
                              .dlogits_stride = dlogits_stride,
                              .logits = logits,
                              .scale = scale,
                              .probs_in = probs,
                              .dloss = dloss,
                              .targets = targets,
                              .dlogits = dlogits,
                              .dscale = scale ? dscale : NULL};
    uform__nn_parallel_ranges(parallel, rows, 8, xent_backward_rows_haswell, &context);
}

typedef struct l2_context_t {
    size_t width, x_stride, y_stride, dy_stride, dx_stride;
    float eps;
    const float *x, *norm_in, *dy;
    float *y, *norm, *dx;
} l2_context_t;

UFORM_HASWELL static void l2norm_forward_rows_haswell(void *opaque, size_t begin, size_t end) {
    const l2_context_t *c = opaque;
    for (size_t r = begin; r < end; ++r) {
        const float *x = c->x + r * c->x_stride;
        float *y = c->y + r * c->y_stride;
        __m256 squares_f32x8 = _mm256_setzero_ps();
        for (size_t i = 0; i < c->width; i += 8) {
            __m256 value_f32x8 = load_f32x8(x + i, tail_mask_i32x8(c->width - i < 8 ? c->width - i : 8));
            squares_f32x8 = _mm256_fmadd_ps(value_f32x8, value_f32x8, squares_f32x8);
        }
        float norm = sqrtf(reduce_add_f32x8(squares_f32x8));
        norm = norm > c->eps ? norm : c->eps;
        __m256 norm_f32x8 = _mm256_set1_ps(norm);
        for (size_t i = 0; i < c->width; i += 8) {
            __m256i mask_i32x8 = tail_mask_i32x8(c->width - i < 8 ? c->width - i : 8);
            store_f32x8(y + i, mask_i32x8, _mm256_div_ps(load_f32x8(x + i, mask_i32x8), norm_f32x8));
        }
        c->norm[r] = norm;
    }
}

static void l2norm_forward_f32_haswell(size_t rows, size_t width, const float *x, size_t x_stride, float eps, float *y,
                                       size_t y_stride, float *norm, const uform__parallel_t *parallel) {
    l2_context_t context = {
        .width = width, .x_stride = x_stride, .y_stride = y_stride, .eps = eps, .x = x, .y = y, .norm = norm};
    uform__nn_parallel_ranges(parallel, rows, 16, l2norm_forward_rows_haswell, &context);
}

UFORM_HASWELL static void l2norm_backward_rows_haswell(void *opaque, size_t begin, size_t end) {
    const l2_context_t *c = opaque;
    for (size_t r = begin; r < end; ++r) {
        const float *y = c->x + r * c->y_stride, *dy = c->dy + r * c->dy_stride;
        float *dx = c->dx + r * c->dx_stride;
        float norm = c->norm_in[r];
        if (norm <= c->eps) {
            for (size_t i = 0; i < c->width; ++i) dx[i] = dy[i] / c->eps;
            continue;
        }
        __m256 dot_f32x8 = _mm256_setzero_ps();
        for (size_t i = 0; i < c->width; i += 8) {
            __m256i mask_i32x8 = tail_mask_i32x8(c->width - i < 8 ? c->width - i : 8);
            dot_f32x8 = _mm256_fmadd_ps(load_f32x8(y + i, mask_i32x8), load_f32x8(dy + i, mask_i32x8), dot_f32x8);
        }
        __m256 dot_all_f32x8 = _mm256_set1_ps(reduce_add_f32x8(dot_f32x8)), norm_f32x8 = _mm256_set1_ps(norm);
        for (size_t i = 0; i < c->width; i += 8) {
            __m256i mask_i32x8 = tail_mask_i32x8(c->width - i < 8 ? c->width - i : 8);
            __m256 value_f32x8 =
                _mm256_fnmadd_ps(load_f32x8(y + i, mask_i32x8), dot_all_f32x8, load_f32x8(dy + i, mask_i32x8));
            store_f32x8(dx + i, mask_i32x8, _mm256_div_ps(value_f32x8, norm_f32x8));
        }
    }
}

static void l2norm_backward_f32_haswell(size_t rows, size_t width, const float *y, size_t y_stride, const float *norm,
                                        float eps, const float *dy, size_t dy_stride, float *dx, size_t dx_stride,
                                        const uform__parallel_t *parallel) {
    l2_context_t context = {.width = width,
                            .y_stride = y_stride,
                            .dy_stride = dy_stride,
                            .dx_stride = dx_stride,
                            .eps = eps,
                            .x = y,
                            .norm_in = norm,
                            .dy = dy,
                            .dx = dx};
    uform__nn_parallel_ranges(parallel, rows, 16, l2norm_backward_rows_haswell, &context);
}

UFORM_HASWELL static void adamw_range_haswell(void *opaque, size_t begin, size_t end) {
    const uform__nn_adamw_t *c = opaque;
    __m256 beta1_f32x8 = _mm256_set1_ps(c->beta1), beta2_f32x8 = _mm256_set1_ps(c->beta2);
    __m256 one_minus_beta1_f32x8 = _mm256_set1_ps(1.0f - c->beta1),
           one_minus_beta2_f32x8 = _mm256_set1_ps(1.0f - c->beta2);
    __m256 eps_f32x8 = _mm256_set1_ps(c->eps), decay_f32x8 = _mm256_set1_ps(c->decay_factor);
    __m256 step_f32x8 = _mm256_set1_ps(c->step_size), correction_f32x8 = _mm256_set1_ps(c->correction2_sqrt);
    for (size_t i = begin; i < end; i += 8) {
        __m256i mask_i32x8 = tail_mask_i32x8(end - i < 8 ? end - i : 8);
        __m256 g_f32x8 = load_f32x8(c->grads + i, mask_i32x8);
        __m256 p_f32x8 = _mm256_mul_ps(load_f32x8(c->params + i, mask_i32x8), decay_f32x8);
        __m256 m_f32x8 = _mm256_fmadd_ps(load_f32x8(c->m + i, mask_i32x8), beta1_f32x8,
                                         _mm256_mul_ps(one_minus_beta1_f32x8, g_f32x8));
        __m256 v_f32x8 = _mm256_fmadd_ps(load_f32x8(c->v + i, mask_i32x8), beta2_f32x8,
                                         _mm256_mul_ps(_mm256_mul_ps(one_minus_beta2_f32x8, g_f32x8), g_f32x8));
        __m256 denominator_f32x8 = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(v_f32x8), correction_f32x8), eps_f32x8);
        p_f32x8 = _mm256_fnmadd_ps(step_f32x8, _mm256_div_ps(m_f32x8, denominator_f32x8), p_f32x8);
        store_f32x8(c->params + i, mask_i32x8, p_f32x8);
        store_f32x8(c->m + i, mask_i32x8, m_f32x8);
        store_f32x8(c->v + i, mask_i32x8, v_f32x8);
    }
}

static void adamw_f32_haswell(size_t n, float *params, const float *grads, float *m, float *v, float lr, float beta1,
                              float beta2, float eps, float weight_decay, uint64_t step,
                              const uform__parallel_t *parallel) {
    uform__nn_adamw_with(adamw_range_haswell, n, params, grads, m, v, lr, beta1, beta2, eps, weight_decay, step,
                         parallel);
}

UFORM_HASWELL static double block_sum_squares_haswell(const float *x, size_t begin, size_t end) {
    __m256d low_f64x4 = _mm256_setzero_pd(), high_f64x4 = _mm256_setzero_pd();
    for (size_t i = begin; i < end; i += 8) {
        __m256 value_f32x8 = load_f32x8(x + i, tail_mask_i32x8(end - i < 8 ? end - i : 8));
        __m256d low_value_f64x4 = _mm256_cvtps_pd(_mm256_castps256_ps128(value_f32x8));
        __m256d high_value_f64x4 = _mm256_cvtps_pd(_mm256_extractf128_ps(value_f32x8, 1));
        low_f64x4 = _mm256_fmadd_pd(low_value_f64x4, low_value_f64x4, low_f64x4);
        high_f64x4 = _mm256_fmadd_pd(high_value_f64x4, high_value_f64x4, high_f64x4);
    }
    __m256d sum_f64x4 = _mm256_add_pd(low_f64x4, high_f64x4);
    __m128d half_f64x2 = _mm_add_pd(_mm256_castpd256_pd128(sum_f64x4), _mm256_extractf128_pd(sum_f64x4, 1));
    return _mm_cvtsd_f64(_mm_add_sd(half_f64x2, _mm_unpackhi_pd(half_f64x2, half_f64x2)));
}

static double sum_squares_f32_haswell(size_t n, const float *x, const uform__parallel_t *parallel) {
    return uform__nn_sum_squares_with(block_sum_squares_haswell, n, x, parallel);
}

static void softmax_forward_f32_haswell(size_t rows, size_t width, const float *x, size_t x_stride, float *y,
                                   size_t y_stride, const uform__parallel_t *parallel) {
    uform__nn_softmax_with(&uform__nn_attention_ops_haswell, rows, width, x, x_stride, y, y_stride, parallel);
}

const uform__nn_kernels_t uform__nn_kernels_haswell = {
    .attention_forward = attention_forward_f32_haswell,
    .attention_forward_bf16 = attention_forward_bf16_haswell,
    .attention_backward = attention_backward_f32_haswell,
    .attention_backward_bf16 = attention_backward_bf16_haswell,
    .layernorm_forward = layernorm_forward_f32_haswell,
    .layernorm_forward_bf16 = uform__nn_layernorm_forward_bf16_serial,
    .layernorm_backward = layernorm_backward_f32_haswell,
    .gelu_forward = gelu_forward_f32_haswell,
    .gelu_backward = gelu_backward_f32_haswell,
    .activation_forward = uform__nn_activation_forward_haswell,
    .softmax_forward = softmax_forward_f32_haswell,
    .softmax_xent_forward = softmax_xent_forward_f32_haswell,
    .softmax_xent_backward = softmax_xent_backward_f32_haswell,
    .l2norm_forward = l2norm_forward_f32_haswell,
    .l2norm_backward = l2norm_backward_f32_haswell,
    .mean_pool_forward = uform__nn_mean_pool_forward_f32_serial,
    .mean_pool_backward = uform__nn_mean_pool_backward_f32_serial,
    .embedding_forward = uform__nn_embedding_forward_f32_serial,
    .embedding_backward = uform__nn_embedding_backward_f32_serial,
    .f32_to_bf16 = f32_to_bf16_haswell,
    .bf16_to_f32 = bf16_to_f32_haswell,
    .f32_to_f16 = f32_to_f16_haswell,
    .f16_to_f32 = f16_to_f32_haswell,
    .f32_to_i8 = uform__nn_f32_to_i8_serial,
    .f32_to_b1 = uform__nn_f32_to_b1_serial,
    .adamw = adamw_f32_haswell,
    .sum_squares = sum_squares_f32_haswell,
};
