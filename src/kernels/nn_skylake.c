/*
 * SKYLAKE NN kernels (AVX-512 F, BW, DQ, VL), also the table of ICELAKE and, but for the BF16
 * attention forward and backward (VDPBF16PS, nn_attention_genoa.c), of GENOA, SAPPHIRE, GRANITE
 * and DIAMOND.
 * Every other NN kernel computes in F32, so the later classes' extensions (VNNI, BF16 dot
 * products) have nothing to add here; and VCVTNEPS2BF16 treats subnormal inputs as zero, so the
 * F32→BF16 conversion keeps the exact integer rounding.
 *
 * Specialised: the attention block primitives (a 4×64 register-blocked micro-product with
 * masked tails, a 16×16 in-register transpose, vectorised exp), GELU, LayerNorm, softmax +
 * cross-entropy, L2 normalisation, AdamW, the sum of squares and the F32↔BF16/F16 conversions.
 * Row sums accumulate in F32 lanes (the serial reference uses double); the sum of squares keeps
 * double lanes. Mean pooling, embeddings and the I8/B1 packings are memory-bound or tiny and use
 * the serial kernels. The vector exp and erfc are the Haswell ones widened to 16 lanes
 * (Cephes expf, Numerical Recipes erfcc); see nn_haswell.c. The attention and softmax
 * exponentials use a shorter base-2 exp (nn_exp2_f32x16 in nn_avx512.h), tested against libm in
 * test_nn_exp.c.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/nn.h"
#include "kernels/nn_avx512.h"

#define UFORM_SKYLAKE __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma,f16c")))

UFORM_SKYLAKE static inline __m512 exp_f32x16(__m512 x_f32x16) {
    const __m512 low_f32x16 = _mm512_set1_ps(-87.33654f), high_f32x16 = _mm512_set1_ps(88.72283f);
    __mmask16 underflow = _mm512_cmp_ps_mask(x_f32x16, low_f32x16, _CMP_LT_OQ);
    __m512 clamped_f32x16 = _mm512_min_ps(high_f32x16, _mm512_max_ps(low_f32x16, x_f32x16));
    __m512 n_f32x16 = _mm512_roundscale_ps(_mm512_mul_ps(clamped_f32x16, _mm512_set1_ps(1.44269504088896341f)),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r_f32x16 = _mm512_fnmadd_ps(n_f32x16, _mm512_set1_ps(0.693359375f), clamped_f32x16);
    r_f32x16 = _mm512_fnmadd_ps(n_f32x16, _mm512_set1_ps(-2.12194440e-4f), r_f32x16);
    __m512 p_f32x16 = _mm512_set1_ps(1.9875691500e-4f);
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, r_f32x16, _mm512_set1_ps(1.3981999507e-3f));
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, r_f32x16, _mm512_set1_ps(8.3334519073e-3f));
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, r_f32x16, _mm512_set1_ps(4.1665795894e-2f));
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, r_f32x16, _mm512_set1_ps(1.6666665459e-1f));
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, r_f32x16, _mm512_set1_ps(5.0000001201e-1f));
    __m512 r2_f32x16 = _mm512_mul_ps(r_f32x16, r_f32x16);
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, r2_f32x16, _mm512_add_ps(r_f32x16, _mm512_set1_ps(1.0f)));
    /* p · 2^n exactly, whatever n (scalef handles the exponent range); NaN stays NaN. */
    __m512 result_f32x16 = _mm512_scalef_ps(p_f32x16, n_f32x16);
    return _mm512_maskz_mov_ps((__mmask16)~underflow, result_f32x16);
}

UFORM_SKYLAKE static inline __m512 erfc_nonnegative_f32x16(__m512 z_f32x16) {
    __m512 t_f32x16 =
        _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(_mm512_set1_ps(0.5f), z_f32x16, _mm512_set1_ps(1.0f)));
    __m512 p_f32x16 = _mm512_set1_ps(0.17087277f);
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, t_f32x16, _mm512_set1_ps(-0.82215223f));
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, t_f32x16, _mm512_set1_ps(1.48851587f));
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, t_f32x16, _mm512_set1_ps(-1.13520398f));
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, t_f32x16, _mm512_set1_ps(0.27886807f));
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, t_f32x16, _mm512_set1_ps(-0.18628806f));
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, t_f32x16, _mm512_set1_ps(0.09678418f));
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, t_f32x16, _mm512_set1_ps(0.37409196f));
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, t_f32x16, _mm512_set1_ps(1.00002368f));
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, t_f32x16, _mm512_set1_ps(-1.26551223f));
    return _mm512_mul_ps(t_f32x16, exp_f32x16(_mm512_fnmadd_ps(z_f32x16, z_f32x16, p_f32x16)));
}

/* Φ(x) = ½·erfc(−x/√2). */
UFORM_SKYLAKE static inline __m512 normal_cdf_f32x16(__m512 x_f32x16) {
    __m512 z_f32x16 = _mm512_mul_ps(x_f32x16, _mm512_set1_ps(0.70710678118654752f));
    __m512 half_tail_f32x16 = _mm512_mul_ps(_mm512_set1_ps(0.5f), erfc_nonnegative_f32x16(_mm512_abs_ps(z_f32x16)));
    __mmask16 negative = _mm512_cmp_ps_mask(x_f32x16, _mm512_setzero_ps(), _CMP_LT_OQ);
    return _mm512_mask_mov_ps(_mm512_sub_ps(_mm512_set1_ps(1.0f), half_tail_f32x16), negative, half_tail_f32x16);
}

/* ---------------------------------------------------------------------------------------------
 * Attention block primitives.
 */

/* out[r, j] (=, or += when `add`) scale · Σ_k a[r, k]·b[k, j] for r < rows and j < count, in
 * `vectors` 16-wide column vectors (rows and vectors compile-time constants 1..4, count ≤
 * 16·vectors). Every loop has a constant trip count and is unrolled, so the accumulators stay in
 * registers; the last vector's absent columns load as zeros and are never stored. */
UFORM_SKYLAKE static inline __attribute__((always_inline)) void
product_rows_f32_skylake(const float *a, size_t a_stride, const float *b, size_t b_stride, size_t depth, float scale,
                         float *out, size_t out_stride, size_t count, int add, const size_t rows,
                         const size_t vectors) {
    __m512 acc_f32x16[4][4];
#pragma GCC unroll 4
    for (size_t r = 0; r < 4; ++r)
#pragma GCC unroll 4
        for (size_t v = 0; v < 4; ++v) acc_f32x16[r][v] = _mm512_setzero_ps();
    __mmask16 mask[4];
#pragma GCC unroll 4
    for (size_t v = 0; v < 4; ++v) mask[v] = nn_tail_mask16(count > v * 16 ? count - v * 16 : 0);
    for (size_t k = 0; k < depth; ++k) {
        const float *row = b + k * b_stride;
        __m512 b_f32x16[4];
#pragma GCC unroll 4
        for (size_t v = 0; v < vectors; ++v) b_f32x16[v] = _mm512_maskz_loadu_ps(mask[v], row + v * 16);
#pragma GCC unroll 4
        for (size_t r = 0; r < rows; ++r) {
            __m512 a_f32x16 = _mm512_set1_ps(a[r * a_stride + k]);
#pragma GCC unroll 4
            for (size_t v = 0; v < vectors; ++v)
                acc_f32x16[r][v] = _mm512_fmadd_ps(a_f32x16, b_f32x16[v], acc_f32x16[r][v]);
        }
    }
    __m512 scale_f32x16 = _mm512_set1_ps(scale);
#pragma GCC unroll 4
    for (size_t r = 0; r < rows; ++r) {
        float *o = out + r * out_stride;
#pragma GCC unroll 4
        for (size_t v = 0; v < vectors; ++v) {
            __m512 value_f32x16 = _mm512_mul_ps(acc_f32x16[r][v], scale_f32x16);
            if (add) value_f32x16 = _mm512_add_ps(value_f32x16, _mm512_maskz_loadu_ps(mask[v], o + v * 16));
            _mm512_mask_storeu_ps(o + v * 16, mask[v], value_f32x16);
        }
    }
}

/* All rows of one column chunk of up to 64 columns with `vectors` (a compile-time constant) vectors. */
UFORM_SKYLAKE static inline __attribute__((always_inline)) void
product_chunk_f32_skylake(const float *a, size_t a_stride, const float *b, size_t b_stride, size_t m, size_t k,
                          float scale, float *out, size_t out_stride, size_t count, int add, const size_t vectors) {
    size_t r = 0;
    for (; r + 4 <= m; r += 4)
        product_rows_f32_skylake(a + r * a_stride, a_stride, b, b_stride, k, scale, out + r * out_stride, out_stride,
                                 count, add, 4, vectors);
    const float *a_rest = a + r * a_stride;
    float *out_rest = out + r * out_stride;
    switch (m - r) {
    case 3:
        product_rows_f32_skylake(a_rest, a_stride, b, b_stride, k, scale, out_rest, out_stride, count, add, 3, vectors);
        break;
    case 2:
        product_rows_f32_skylake(a_rest, a_stride, b, b_stride, k, scale, out_rest, out_stride, count, add, 2, vectors);
        break;
    case 1:
        product_rows_f32_skylake(a_rest, a_stride, b, b_stride, k, scale, out_rest, out_stride, count, add, 1, vectors);
        break;
    default:
        break;
    }
}

/* out [m, n] (=, or +=) scale · a [m, k] · b [k, n]; all row-major with strides. A ragged last
 * column chunk (a short key tile, an odd head width) runs with only the vectors it needs. */
UFORM_SKYLAKE static void product_f32_skylake(const float *a, size_t a_stride, const float *b, size_t b_stride,
                                              size_t m, size_t n, size_t k, float scale, float *out, size_t out_stride,
                                              int add) {
    for (size_t j = 0; j < n; j += 64) {
        size_t count = n - j < 64 ? n - j : 64;
        switch ((count + 15) / 16) {
        case 1:
            product_chunk_f32_skylake(a, a_stride, b + j, b_stride, m, k, scale, out + j, out_stride, count, add, 1);
            break;
        case 2:
            product_chunk_f32_skylake(a, a_stride, b + j, b_stride, m, k, scale, out + j, out_stride, count, add, 2);
            break;
        case 3:
            product_chunk_f32_skylake(a, a_stride, b + j, b_stride, m, k, scale, out + j, out_stride, count, add, 3);
            break;
        default:
            product_chunk_f32_skylake(a, a_stride, b + j, b_stride, m, k, scale, out + j, out_stride, count, add, 4);
            break;
        }
    }
}

UFORM_SKYLAKE static void scores_f32_skylake(const float *a, size_t a_stride, const float *bt, size_t bt_stride,
                                             size_t rows, size_t cols, size_t width, float scale, float *s,
                                             size_t s_stride) {
    product_f32_skylake(a, a_stride, bt, bt_stride, rows, cols, width, scale, s, s_stride, 0);
}

UFORM_SKYLAKE static void accumulate_f32_skylake(float *acc, size_t acc_stride, const float *p, size_t p_stride,
                                                 const float *x, size_t x_stride, size_t rows, size_t cols,
                                                 size_t width) {
    product_f32_skylake(p, p_stride, x, x_stride, rows, width, cols, 1.0f, acc, acc_stride, 1);
}

/* 16×16 blocks through registers (nn_avx512.h). Rows past `rows` load as zeros; columns past
 * `cols` are masked off the loads, and the stores are masked to the valid rows. */
UFORM_SKYLAKE static void transpose_f32_skylake(const float *src, size_t src_stride, size_t rows, size_t cols,
                                                float *dst, size_t dst_stride) {
    for (size_t r0 = 0; r0 < rows; r0 += 16) {
        size_t block_rows = rows - r0 < 16 ? rows - r0 : 16;
        __mmask16 store_mask = nn_tail_mask16(block_rows);
        for (size_t c0 = 0; c0 < cols; c0 += 16) {
            size_t block_cols = cols - c0 < 16 ? cols - c0 : 16;
            __mmask16 load_mask = nn_tail_mask16(block_cols);
            __m512 row_f32x16[16];
#pragma GCC unroll 16
            for (size_t i = 0; i < 16; ++i)
                row_f32x16[i] = i < block_rows ? _mm512_maskz_loadu_ps(load_mask, src + (r0 + i) * src_stride + c0)
                                                 : _mm512_setzero_ps();
            __m512 column_f32x16[16];
            nn_transpose_16x16_f32x16(row_f32x16, column_f32x16);
#pragma GCC unroll 16
            for (size_t c = 0; c < 16; ++c)
                if (c < block_cols)
                    _mm512_mask_storeu_ps(dst + (c0 + c) * dst_stride + r0, store_mask, column_f32x16[c]);
        }
    }
}

UFORM_SKYLAKE static float row_max_f32_skylake(const float *x, size_t n) {
    __m512 max_f32x16 = _mm512_set1_ps(-INFINITY);
    for (size_t i = 0; i < n; i += 16)
        max_f32x16 =
            _mm512_max_ps(max_f32x16, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), nn_tail_mask16(n - i), x + i));
    return _mm512_reduce_max_ps(max_f32x16);
}

/* exp(x − shift) = 2^(x·log2 e − shift·log2 e), the product x·log2 e fused into the subtraction
 * and shift·log2 e split in two (high + low, the low part exact by FMA), so the argument is
 * right to two roundings even when x and shift are large and close: relative error below
 * 3e-7 + 2^-23·|x − shift| against libm (tests/kernels/test_nn_exp.c). */
UFORM_SKYLAKE static inline __m512 exp_shifted_f32x16(__m512 x_f32x16, __m512 shift_high_f32x16,
                                                      __m512 shift_low_f32x16) {
    const __m512 log2e_f32x16 = _mm512_set1_ps(1.44269504088896341f);
    return nn_exp2_f32x16(_mm512_sub_ps(_mm512_fmsub_ps(x_f32x16, log2e_f32x16, shift_high_f32x16), shift_low_f32x16));
}

/* Whole vectors load and store unmasked (masked stores are slow on Zen); the tail is masked. */
UFORM_SKYLAKE static float exp_shift_sum_f32_skylake(float *x, size_t n, float shift) {
    const float log2e = 1.44269504088896341f;
    float high = shift * log2e, low = fmaf(shift, log2e, -high);
    __m512 high_f32x16 = _mm512_set1_ps(high), low_f32x16 = _mm512_set1_ps(low), sum_f32x16 = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 value_f32x16 = exp_shifted_f32x16(_mm512_loadu_ps(x + i), high_f32x16, low_f32x16);
        _mm512_storeu_ps(x + i, value_f32x16);
        sum_f32x16 = _mm512_add_ps(sum_f32x16, value_f32x16);
    }
    if (i < n) {
        __mmask16 mask = nn_tail_mask16(n - i);
        __m512 value_f32x16 = exp_shifted_f32x16(_mm512_maskz_loadu_ps(mask, x + i), high_f32x16, low_f32x16);
        value_f32x16 = _mm512_maskz_mov_ps(mask, value_f32x16);
        _mm512_mask_storeu_ps(x + i, mask, value_f32x16);
        sum_f32x16 = _mm512_add_ps(sum_f32x16, value_f32x16);
    }
    return _mm512_reduce_add_ps(sum_f32x16);
}

UFORM_SKYLAKE static void exp_sub_f32_skylake(float *x, const float *shift, size_t n) {
    const __m512 log2e_f32x16 = _mm512_set1_ps(1.44269504088896341f);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 mask = nn_tail_mask16(n - i);
        __m512 shift_f32x16 = _mm512_maskz_loadu_ps(mask, shift + i);
        __m512 high_f32x16 = _mm512_mul_ps(shift_f32x16, log2e_f32x16);
        __m512 low_f32x16 = _mm512_fmsub_ps(shift_f32x16, log2e_f32x16, high_f32x16);
        __m512 value_f32x16 = exp_shifted_f32x16(_mm512_maskz_loadu_ps(mask, x + i), high_f32x16, low_f32x16);
        if (mask == 0xFFFF) _mm512_storeu_ps(x + i, value_f32x16);
        else _mm512_mask_storeu_ps(x + i, mask, value_f32x16);
    }
}

/* The BF16 attention's roundings (nn.h): add 0x7FFF plus the kept part's lowest bit, then drop
 * the low 16 bits (nearest, ties to even; past the largest BF16 gives ±inf); NaN only quieted. */
UFORM_SKYLAKE static void round_bf16_f32_skylake(const float *src, size_t src_stride, size_t rows, size_t cols,
                                                 float *dst, size_t dst_stride) {
    const __m512i magnitude_i32x16 = _mm512_set1_epi32(0x7FFFFFFF), infinity_i32x16 = _mm512_set1_epi32(0x7F800000);
    const __m512i half_i32x16 = _mm512_set1_epi32(0x7FFF), one_i32x16 = _mm512_set1_epi32(1);
    const __m512i quiet_i32x16 = _mm512_set1_epi32(0x00400000), kept_i32x16 = _mm512_set1_epi32((int)0xFFFF0000u);
    for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; c += 16) {
            __mmask16 mask = nn_tail_mask16(cols - c);
            __m512i bits_i32x16 = _mm512_maskz_loadu_epi32(mask, src + r * src_stride + c);
            __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(bits_i32x16, magnitude_i32x16), infinity_i32x16);
            __m512i lowest_i32x16 = _mm512_and_si512(_mm512_srli_epi32(bits_i32x16, 16), one_i32x16);
            __m512i rounded_i32x16 = _mm512_add_epi32(bits_i32x16, _mm512_add_epi32(half_i32x16, lowest_i32x16));
            rounded_i32x16 = _mm512_mask_or_epi32(rounded_i32x16, nan, bits_i32x16, quiet_i32x16);
            rounded_i32x16 = _mm512_and_si512(rounded_i32x16, kept_i32x16);
            if (mask == 0xFFFF) _mm512_storeu_si512(dst + r * dst_stride + c, rounded_i32x16);
            else _mm512_mask_storeu_epi32(dst + r * dst_stride + c, mask, rounded_i32x16);
        }
}

const uform__nn_attention_ops_t uform__nn_attention_ops_skylake = {
    transpose_f32_skylake,     scores_f32_skylake,  accumulate_f32_skylake,
    exp_shift_sum_f32_skylake, exp_sub_f32_skylake, row_max_f32_skylake,
    round_bf16_f32_skylake,
};

static void attention_forward_f32_skylake(const uform__attention_shape_t *shape, const float *qkv, float *out,
                                          float *lse, const uform__parallel_t *parallel) {
    uform__nn_attention_forward_with(&uform__nn_attention_ops_skylake, shape, qkv, out, lse, parallel);
}

static void attention_forward_bf16_skylake(const uform__attention_shape_t *shape, const float *qkv, float *out,
                                           float *lse, const uform__parallel_t *parallel) {
    uform__nn_attention_forward_bf16_with(&uform__nn_attention_ops_skylake, shape, qkv, out, lse, parallel);
}

static void attention_backward_bf16_skylake(const uform__attention_shape_t *shape, const float *qkv, const float *out,
                                            const float *lse, const float *dout, float *deltas, float *dqkv,
                                            const uform__parallel_t *parallel) {
    uform__nn_attention_backward_bf16_with(&uform__nn_attention_ops_skylake, shape, qkv, out, lse, dout, deltas, dqkv,
                                           parallel);
}

static void attention_backward_f32_skylake(const uform__attention_shape_t *shape, const float *qkv, const float *out,
                                           const float *lse, const float *dout, float *deltas, float *dqkv,
                                           const uform__parallel_t *parallel) {
    uform__nn_attention_backward_with(&uform__nn_attention_ops_skylake, shape, qkv, out, lse, dout, deltas, dqkv,
                                      parallel);
}

/* ---------------------------------------------------------------------------------------------
 * GELU.
 */

typedef struct elementwise_context_t {
    const float *x, *dy;
    float *y;
} elementwise_context_t;

UFORM_SKYLAKE static void gelu_forward_range_skylake(void *opaque, size_t begin, size_t end) {
    const elementwise_context_t *c = opaque;
    for (size_t i = begin; i < end; i += 16) {
        __mmask16 mask = nn_tail_mask16(end - i);
        __m512 x_f32x16 = _mm512_maskz_loadu_ps(mask, c->x + i);
        _mm512_mask_storeu_ps(c->y + i, mask, _mm512_mul_ps(x_f32x16, normal_cdf_f32x16(x_f32x16)));
    }
}

static void gelu_forward_f32_skylake(size_t n, const float *x, float *y, const uform__parallel_t *parallel) {
    elementwise_context_t context = {.x = x, .y = y};
    uform__nn_parallel_ranges(parallel, n, 4096, gelu_forward_range_skylake, &context);
}

UFORM_SKYLAKE static void gelu_backward_range_skylake(void *opaque, size_t begin, size_t end) {
    const elementwise_context_t *c = opaque;
    for (size_t i = begin; i < end; i += 16) {
        __mmask16 mask = nn_tail_mask16(end - i);
        __m512 x_f32x16 = _mm512_maskz_loadu_ps(mask, c->x + i);
        __m512 pdf_f32x16 =
            _mm512_mul_ps(exp_f32x16(_mm512_mul_ps(_mm512_set1_ps(-0.5f), _mm512_mul_ps(x_f32x16, x_f32x16))),
                          _mm512_set1_ps(0.39894228040143268f));
        __m512 derivative_f32x16 = _mm512_fmadd_ps(x_f32x16, pdf_f32x16, normal_cdf_f32x16(x_f32x16));
        _mm512_mask_storeu_ps(c->y + i, mask, _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, c->dy + i), derivative_f32x16));
    }
}

static void gelu_backward_f32_skylake(size_t n, const float *x, const float *dy, float *dx,
                                      const uform__parallel_t *parallel) {
    elementwise_context_t context = {.x = x, .dy = dy, .y = dx};
    uform__nn_parallel_ranges(parallel, n, 4096, gelu_backward_range_skylake, &context);
}

/* ---------------------------------------------------------------------------------------------
 * LayerNorm forward: two passes over the row in F32 lanes (sum, then squared deviations), so the
 * variance never suffers the cancellation of E[x²] − E[x]².
 */

typedef struct layernorm_context_t {
    size_t width, x_stride, y_stride;
    const float *x, *weight, *bias;
    float eps;
    float *y, *mean, *rstd;
    uint16_t *y16; /* BF16 output instead of y, when set */
} layernorm_context_t;

/* F32 → BF16 bits, nearest even, NaN kept (quietened): integer rounding, exact for subnormals
 * (unlike VCVTNEPS2BF16). */
UFORM_SKYLAKE static inline __m256i bf16_from_f32x16(__m512 x_f32x16) {
    __m512i bits_i32x16 = _mm512_castps_si512(x_f32x16);
    __m512i odd_i32x16 = _mm512_and_si512(_mm512_srli_epi32(bits_i32x16, 16), _mm512_set1_epi32(1));
    __m512i rounded_i32x16 = _mm512_add_epi32(bits_i32x16, _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), odd_i32x16));
    __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(bits_i32x16, _mm512_set1_epi32(0x7FFFFFFF)),
                                            _mm512_set1_epi32(0x7F800000));
    rounded_i32x16 = _mm512_mask_or_epi32(rounded_i32x16, nan, bits_i32x16, _mm512_set1_epi32(0x00400000));
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(rounded_i32x16, 16));
}

UFORM_SKYLAKE static void layernorm_forward_rows_skylake(void *opaque, size_t begin, size_t end) {
    const layernorm_context_t *c = opaque;
    size_t width = c->width;
    for (size_t r = begin; r < end; ++r) {
        const float *x = c->x + r * c->x_stride;
        __m512 sum_f32x16 = _mm512_setzero_ps();
        for (size_t i = 0; i < width; i += 16)
            sum_f32x16 = _mm512_add_ps(sum_f32x16, _mm512_maskz_loadu_ps(nn_tail_mask16(width - i), x + i));
        float mean = _mm512_reduce_add_ps(sum_f32x16) / (float)width;
        __m512 mean_f32x16 = _mm512_set1_ps(mean), squares_f32x16 = _mm512_setzero_ps();
        for (size_t i = 0; i < width; i += 16) {
            __mmask16 mask = nn_tail_mask16(width - i);
            __m512 deviation_f32x16 = _mm512_maskz_sub_ps(mask, _mm512_maskz_loadu_ps(mask, x + i), mean_f32x16);
            squares_f32x16 = _mm512_fmadd_ps(deviation_f32x16, deviation_f32x16, squares_f32x16);
        }
        float rstd = 1.0f / sqrtf(_mm512_reduce_add_ps(squares_f32x16) / (float)width + c->eps);
        __m512 rstd_f32x16 = _mm512_set1_ps(rstd);
        for (size_t i = 0; i < width; i += 16) {
            __mmask16 mask = nn_tail_mask16(width - i);
            __m512 xhat_f32x16 =
                _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, x + i), mean_f32x16), rstd_f32x16);
            __m512 value_f32x16 = _mm512_fmadd_ps(xhat_f32x16, _mm512_maskz_loadu_ps(mask, c->weight + i),
                                                  _mm512_maskz_loadu_ps(mask, c->bias + i));
            if (c->y16)
                _mm256_mask_storeu_epi16(c->y16 + r * c->y_stride + i, mask, bf16_from_f32x16(value_f32x16));
            else
                _mm512_mask_storeu_ps(c->y + r * c->y_stride + i, mask, value_f32x16);
        }
        c->mean[r] = mean;
        c->rstd[r] = rstd;
    }
}

static void layernorm_forward_f32_skylake(size_t rows, size_t width, const float *x, size_t x_stride,
                                          const float *weight, const float *bias, float eps, float *y, size_t y_stride,
                                          float *mean, float *rstd, const uform__parallel_t *parallel) {
    layernorm_context_t context = {width, x_stride, y_stride, x, weight, bias, eps, y, mean, rstd};
    uform__nn_parallel_ranges(parallel, rows, 16, layernorm_forward_rows_skylake, &context);
}

static void layernorm_forward_bf16_skylake(size_t rows, size_t width, const float *x, size_t x_stride,
                                           const float *weight, const float *bias, float eps, uint16_t *y,
                                           size_t y_stride, float *mean, float *rstd,
                                           const uform__parallel_t *parallel) {
    layernorm_context_t context = {width, x_stride, y_stride, x, weight, bias, eps, NULL, mean, rstd, y};
    uform__nn_parallel_ranges(parallel, rows, 16, layernorm_forward_rows_skylake, &context);
}

/* ---------------------------------------------------------------------------------------------
 * Conversions: F16 through the AVX-512 form of F16C; BF16 with the serial kernel's integer
 * rounding (exact for subnormals, unlike VCVTNEPS2BF16).
 */

UFORM_SKYLAKE static void f32_to_f16_skylake(size_t n, const float *x, uint16_t *y) {
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 mask = nn_tail_mask16(n - i);
        __m256i half_i16x16 = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(mask, x + i), _MM_FROUND_TO_NEAREST_INT);
        _mm256_mask_storeu_epi16(y + i, mask, half_i16x16);
    }
}

UFORM_SKYLAKE static void f16_to_f32_skylake(size_t n, const uint16_t *x, float *y) {
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 mask = nn_tail_mask16(n - i);
        _mm512_mask_storeu_ps(y + i, mask, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, x + i)));
    }
}

UFORM_SKYLAKE static void f32_to_bf16_skylake(size_t n, const float *x, uint16_t *y) {
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 mask = nn_tail_mask16(n - i);
        _mm256_mask_storeu_epi16(y + i, mask, bf16_from_f32x16(_mm512_maskz_loadu_ps(mask, x + i)));
    }
}

UFORM_SKYLAKE static void bf16_to_f32_skylake(size_t n, const uint16_t *x, float *y) {
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 mask = nn_tail_mask16(n - i);
        __m512i wide_i32x16 = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, x + i));
        _mm512_mask_storeu_ps(y + i, mask, _mm512_castsi512_ps(_mm512_slli_epi32(wide_i32x16, 16)));
    }
}

/* ---------------------------------------------------------------------------------------------
 * LayerNorm backward: rows (dx) with F32-lane sums, then columns (dweight, dbias) each summed
 * over rows in row order inside one lane, so the split of columns between prongs cannot change
 * a bit.
 */

typedef struct layernorm_backward_context_t {
    size_t rows, width, x_stride, dy_stride, dx_stride;
    const float *x, *weight, *mean, *rstd, *dy;
    float *dx, *dweight, *dbias;
} layernorm_backward_context_t;

UFORM_SKYLAKE static void layernorm_backward_rows_skylake(void *opaque, size_t begin, size_t end) {
    const layernorm_backward_context_t *c = opaque;
    size_t width = c->width;
    for (size_t r = begin; r < end; ++r) {
        const float *x = c->x + r * c->x_stride, *dy = c->dy + r * c->dy_stride;
        float *dx = c->dx + r * c->dx_stride;
        __m512 mean_f32x16 = _mm512_set1_ps(c->mean[r]), rstd_f32x16 = _mm512_set1_ps(c->rstd[r]);
        __m512 sum_g_f32x16 = _mm512_setzero_ps(), sum_gx_f32x16 = _mm512_setzero_ps();
        for (size_t i = 0; i < width; i += 16) {
            __mmask16 mask = nn_tail_mask16(width - i);
            __m512 xhat_f32x16 =
                _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, x + i), mean_f32x16), rstd_f32x16);
            __m512 g_f32x16 =
                _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, dy + i), _mm512_maskz_loadu_ps(mask, c->weight + i));
            sum_g_f32x16 = _mm512_add_ps(sum_g_f32x16, g_f32x16);
            sum_gx_f32x16 = _mm512_fmadd_ps(g_f32x16, xhat_f32x16, sum_gx_f32x16);
        }
        __m512 mean_g_f32x16 = _mm512_set1_ps(_mm512_reduce_add_ps(sum_g_f32x16) / (float)width);
        __m512 mean_gx_f32x16 = _mm512_set1_ps(_mm512_reduce_add_ps(sum_gx_f32x16) / (float)width);
        for (size_t i = 0; i < width; i += 16) {
            __mmask16 mask = nn_tail_mask16(width - i);
            __m512 xhat_f32x16 =
                _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, x + i), mean_f32x16), rstd_f32x16);
            __m512 g_f32x16 =
                _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, dy + i), _mm512_maskz_loadu_ps(mask, c->weight + i));
            __m512 value_f32x16 = _mm512_fnmadd_ps(xhat_f32x16, mean_gx_f32x16, _mm512_sub_ps(g_f32x16, mean_g_f32x16));
            _mm512_mask_storeu_ps(dx + i, mask, _mm512_mul_ps(value_f32x16, rstd_f32x16));
        }
    }
}

UFORM_SKYLAKE static void layernorm_backward_columns_skylake(void *opaque, size_t begin, size_t end) {
    const layernorm_backward_context_t *c = opaque;
    for (size_t i = begin; i < end; i += 16) {
        __mmask16 mask = nn_tail_mask16(end - i);
        __m512 dweight_f32x16 = _mm512_maskz_loadu_ps(mask, c->dweight + i);
        __m512 dbias_f32x16 = _mm512_maskz_loadu_ps(mask, c->dbias + i);
        for (size_t r = 0; r < c->rows; ++r) {
            const float *x = c->x + r * c->x_stride, *dy = c->dy + r * c->dy_stride;
            __m512 dy_f32x16 = _mm512_maskz_loadu_ps(mask, dy + i);
            __m512 xhat_f32x16 =
                _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, x + i), _mm512_set1_ps(c->mean[r])),
                              _mm512_set1_ps(c->rstd[r]));
            dweight_f32x16 = _mm512_fmadd_ps(dy_f32x16, xhat_f32x16, dweight_f32x16);
            dbias_f32x16 = _mm512_add_ps(dbias_f32x16, dy_f32x16);
        }
        _mm512_mask_storeu_ps(c->dweight + i, mask, dweight_f32x16);
        _mm512_mask_storeu_ps(c->dbias + i, mask, dbias_f32x16);
    }
}

static void layernorm_backward_f32_skylake(size_t rows, size_t width, const float *x, size_t x_stride,
                                           const float *weight, const float *mean, const float *rstd, const float *dy,
                                           size_t dy_stride, float *dx, size_t dx_stride, float *dweight, float *dbias,
                                           const uform__parallel_t *parallel) {
    layernorm_backward_context_t context = {rows, width, x_stride, dy_stride, dx_stride, x,    weight,
                                            mean, rstd,  dy,       dx,        dweight,   dbias};
    uform__nn_parallel_ranges(parallel, rows, 16, layernorm_backward_rows_skylake, &context);
    uform__nn_parallel_ranges(parallel, width, 64, layernorm_backward_columns_skylake, &context);
}

/* ---------------------------------------------------------------------------------------------
 * Softmax + cross-entropy (sums in F32 lanes; the serial kernel sums in double).
 */

typedef struct xent_context_t {
    size_t width, logits_stride, dlogits_stride;
    const float *logits, *scale, *probs_in, *dloss;
    const int32_t *targets;
    float *probs, *loss, *dlogits, *dscale;
} xent_context_t;

UFORM_SKYLAKE static void xent_forward_rows_skylake(void *opaque, size_t begin, size_t end) {
    const xent_context_t *c = opaque;
    size_t width = c->width;
    for (size_t r = begin; r < end; ++r) {
        const float *z = c->logits + r * c->logits_stride;
        float *p = c->probs + r * width;
        float scale = c->scale ? c->scale[r] : 1.0f;
        __m512 scale_f32x16 = _mm512_set1_ps(scale), max_f32x16 = _mm512_set1_ps(-INFINITY);
        for (size_t i = 0; i < width; i += 16) {
            __mmask16 mask = nn_tail_mask16(width - i);
            __m512 value_f32x16 = _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, z + i), scale_f32x16);
            max_f32x16 = _mm512_mask_max_ps(max_f32x16, mask, max_f32x16, value_f32x16);
        }
        float max = _mm512_reduce_max_ps(max_f32x16);
        __m512 shift_f32x16 = _mm512_set1_ps(max), sum_f32x16 = _mm512_setzero_ps();
        for (size_t i = 0; i < width; i += 16) {
            __mmask16 mask = nn_tail_mask16(width - i);
            __m512 value_f32x16 =
                exp_f32x16(_mm512_fmsub_ps(_mm512_maskz_loadu_ps(mask, z + i), scale_f32x16, shift_f32x16));
            value_f32x16 = _mm512_maskz_mov_ps(mask, value_f32x16);
            _mm512_mask_storeu_ps(p + i, mask, value_f32x16);
            sum_f32x16 = _mm512_add_ps(sum_f32x16, value_f32x16);
        }
        float sum = _mm512_reduce_add_ps(sum_f32x16);
        __m512 inverse_f32x16 = _mm512_set1_ps(1.0f / sum);
        for (size_t i = 0; i < width; i += 16) {
            __mmask16 mask = nn_tail_mask16(width - i);
            _mm512_mask_storeu_ps(p + i, mask, _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, p + i), inverse_f32x16));
        }
        int32_t target = c->targets[r];
        c->loss[r] = target < 0 ? 0.0f : logf(sum) + max - scale * z[target];
    }
}

static void softmax_xent_forward_f32_skylake(size_t rows, size_t width, const float *logits, size_t logits_stride,
                                             const int32_t *targets, const float *scale, float *probs, float *loss,
                                             const uform__parallel_t *parallel) {
    xent_context_t context = {.width = width,
                              .logits_stride = logits_stride,
                              .logits = logits,
                              .scale = scale,
                              .targets = targets,
                              .probs = probs,
                              .loss = loss};
    uform__nn_parallel_ranges(parallel, rows, 8, xent_forward_rows_skylake, &context);
}

UFORM_SKYLAKE static void xent_backward_rows_skylake(void *opaque, size_t begin, size_t end) {
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
        __m512 factor_f32x16 = _mm512_set1_ps(g * scale), dscale_f32x16 = _mm512_setzero_ps();
        __m512i target_i32x16 = _mm512_set1_epi32(target);
        for (size_t i = 0; i < width; i += 16) {
            __mmask16 mask = nn_tail_mask16(width - i);
            __mmask16 hit = _mm512_cmpeq_epi32_mask(
                _mm512_add_epi32(_mm512_set1_epi32((int)i),
                                 _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)),
                target_i32x16);
            __m512 delta_f32x16 = _mm512_mask_sub_ps(_mm512_maskz_loadu_ps(mask, p + i), hit,
                                                     _mm512_maskz_loadu_ps(mask, p + i), _mm512_set1_ps(1.0f));
            _mm512_mask_storeu_ps(dz + i, mask, _mm512_mul_ps(delta_f32x16, factor_f32x16));
            dscale_f32x16 = _mm512_fmadd_ps(delta_f32x16, _mm512_maskz_loadu_ps(mask, z + i), dscale_f32x16);
        }
        if (c->dscale) c->dscale[r] = g * _mm512_reduce_add_ps(dscale_f32x16);
    }
}

static void softmax_xent_backward_f32_skylake(size_t rows, size_t width, const float *logits, size_t logits_stride,
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
    uform__nn_parallel_ranges(parallel, rows, 8, xent_backward_rows_skylake, &context);
}

/* ---------------------------------------------------------------------------------------------
 * L2 normalisation (sums of squares in F32 lanes).
 */

typedef struct l2_context_t {
    size_t width, x_stride, y_stride, dy_stride, dx_stride;
    float eps;
    const float *x, *norm_in, *dy;
    float *y, *norm, *dx;
} l2_context_t;

UFORM_SKYLAKE static void l2norm_forward_rows_skylake(void *opaque, size_t begin, size_t end) {
    const l2_context_t *c = opaque;
    for (size_t r = begin; r < end; ++r) {
        const float *x = c->x + r * c->x_stride;
        float *y = c->y + r * c->y_stride;
        __m512 squares_f32x16 = _mm512_setzero_ps();
        for (size_t i = 0; i < c->width; i += 16) {
            __m512 value_f32x16 = _mm512_maskz_loadu_ps(nn_tail_mask16(c->width - i), x + i);
            squares_f32x16 = _mm512_fmadd_ps(value_f32x16, value_f32x16, squares_f32x16);
        }
        float norm = sqrtf(_mm512_reduce_add_ps(squares_f32x16));
        norm = norm > c->eps ? norm : c->eps; /* a NaN norm stays NaN */
        __m512 norm_f32x16 = _mm512_set1_ps(norm);
        for (size_t i = 0; i < c->width; i += 16) {
            __mmask16 mask = nn_tail_mask16(c->width - i);
            _mm512_mask_storeu_ps(y + i, mask, _mm512_div_ps(_mm512_maskz_loadu_ps(mask, x + i), norm_f32x16));
        }
        c->norm[r] = norm;
    }
}

static void l2norm_forward_f32_skylake(size_t rows, size_t width, const float *x, size_t x_stride, float eps, float *y,
                                       size_t y_stride, float *norm, const uform__parallel_t *parallel) {
    l2_context_t context = {
        .width = width, .x_stride = x_stride, .y_stride = y_stride, .eps = eps, .x = x, .y = y, .norm = norm};
    uform__nn_parallel_ranges(parallel, rows, 16, l2norm_forward_rows_skylake, &context);
}

UFORM_SKYLAKE static void l2norm_backward_rows_skylake(void *opaque, size_t begin, size_t end) {
    const l2_context_t *c = opaque;
    for (size_t r = begin; r < end; ++r) {
        const float *y = c->x + r * c->y_stride, *dy = c->dy + r * c->dy_stride;
        float *dx = c->dx + r * c->dx_stride;
        float norm = c->norm_in[r];
        if (norm <= c->eps) {
            for (size_t i = 0; i < c->width; ++i) dx[i] = dy[i] / c->eps;
            continue;
        }
        __m512 dot_f32x16 = _mm512_setzero_ps();
        for (size_t i = 0; i < c->width; i += 16) {
            __mmask16 mask = nn_tail_mask16(c->width - i);
            dot_f32x16 =
                _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, y + i), _mm512_maskz_loadu_ps(mask, dy + i), dot_f32x16);
        }
        __m512 dot_all_f32x16 = _mm512_set1_ps(_mm512_reduce_add_ps(dot_f32x16)), norm_f32x16 = _mm512_set1_ps(norm);
        for (size_t i = 0; i < c->width; i += 16) {
            __mmask16 mask = nn_tail_mask16(c->width - i);
            __m512 value_f32x16 = _mm512_fnmadd_ps(_mm512_maskz_loadu_ps(mask, y + i), dot_all_f32x16,
                                                   _mm512_maskz_loadu_ps(mask, dy + i));
            _mm512_mask_storeu_ps(dx + i, mask, _mm512_div_ps(value_f32x16, norm_f32x16));
        }
    }
}

static void l2norm_backward_f32_skylake(size_t rows, size_t width, const float *y, size_t y_stride, const float *norm,
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
    uform__nn_parallel_ranges(parallel, rows, 16, l2norm_backward_rows_skylake, &context);
}

/* ---------------------------------------------------------------------------------------------
 * AdamW (the serial kernel's formula, sixteen lanes at a time) and the sum of squares (double
 * lanes inside the same fixed blocks as the serial kernel).
 */

UFORM_SKYLAKE static void adamw_range_skylake(void *opaque, size_t begin, size_t end) {
    const uform__nn_adamw_t *c = opaque;
    __m512 beta1_f32x16 = _mm512_set1_ps(c->beta1), beta2_f32x16 = _mm512_set1_ps(c->beta2);
    __m512 one_minus_beta1_f32x16 = _mm512_set1_ps(1.0f - c->beta1),
           one_minus_beta2_f32x16 = _mm512_set1_ps(1.0f - c->beta2);
    __m512 eps_f32x16 = _mm512_set1_ps(c->eps), decay_f32x16 = _mm512_set1_ps(c->decay_factor);
    __m512 step_f32x16 = _mm512_set1_ps(c->step_size), correction_f32x16 = _mm512_set1_ps(c->correction2_sqrt);
    for (size_t i = begin; i < end; i += 16) {
        __mmask16 mask = nn_tail_mask16(end - i);
        __m512 g_f32x16 = _mm512_maskz_loadu_ps(mask, c->grads + i);
        __m512 p_f32x16 = _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, c->params + i), decay_f32x16);
        __m512 m_f32x16 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, c->m + i), beta1_f32x16,
                                          _mm512_mul_ps(one_minus_beta1_f32x16, g_f32x16));
        __m512 v_f32x16 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, c->v + i), beta2_f32x16,
                                          _mm512_mul_ps(_mm512_mul_ps(one_minus_beta2_f32x16, g_f32x16), g_f32x16));
        __m512 denominator_f32x16 =
            _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(v_f32x16), correction_f32x16), eps_f32x16);
        p_f32x16 = _mm512_fnmadd_ps(step_f32x16, _mm512_div_ps(m_f32x16, denominator_f32x16), p_f32x16);
        _mm512_mask_storeu_ps(c->params + i, mask, p_f32x16);
        _mm512_mask_storeu_ps(c->m + i, mask, m_f32x16);
        _mm512_mask_storeu_ps(c->v + i, mask, v_f32x16);
    }
}

static void adamw_f32_skylake(size_t n, float *params, const float *grads, float *m, float *v, float lr, float beta1,
                              float beta2, float eps, float weight_decay, uint64_t step,
                              const uform__parallel_t *parallel) {
    uform__nn_adamw_with(adamw_range_skylake, n, params, grads, m, v, lr, beta1, beta2, eps, weight_decay, step,
                         parallel);
}

UFORM_SKYLAKE static double block_sum_squares_skylake(const float *x, size_t begin, size_t end) {
    __m512d low_f64x8 = _mm512_setzero_pd(), high_f64x8 = _mm512_setzero_pd();
    for (size_t i = begin; i < end; i += 16) {
        __m512 value_f32x16 = _mm512_maskz_loadu_ps(nn_tail_mask16(end - i), x + i);
        __m512d low_value_f64x8 = _mm512_cvtps_pd(_mm512_castps512_ps256(value_f32x16));
        __m512d high_value_f64x8 =
            _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(value_f32x16), 1)));
        low_f64x8 = _mm512_fmadd_pd(low_value_f64x8, low_value_f64x8, low_f64x8);
        high_f64x8 = _mm512_fmadd_pd(high_value_f64x8, high_value_f64x8, high_f64x8);
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(low_f64x8, high_f64x8));
}

static double sum_squares_f32_skylake(size_t n, const float *x, const uform__parallel_t *parallel) {
    return uform__nn_sum_squares_with(block_sum_squares_skylake, n, x, parallel);
}

static void softmax_forward_f32_skylake(size_t rows, size_t width, const float *x, size_t x_stride, float *y,
                                   size_t y_stride, const uform__parallel_t *parallel) {
    uform__nn_softmax_with(&uform__nn_attention_ops_skylake, rows, width, x, x_stride, y, y_stride, parallel);
}

/* The entries SKYLAKE and GENOA share: GENOA differs only in the BF16 attention. */
#define SKYLAKE_ENTRIES \
    .attention_forward = attention_forward_f32_skylake, \
    .attention_backward = attention_backward_f32_skylake, \
    .layernorm_forward = layernorm_forward_f32_skylake, \
    .layernorm_forward_bf16 = layernorm_forward_bf16_skylake, \
    .layernorm_backward = layernorm_backward_f32_skylake, \
    .gelu_forward = gelu_forward_f32_skylake, \
    .gelu_backward = gelu_backward_f32_skylake, \
    .activation_forward = uform__nn_activation_forward_skylake, \
    .softmax_forward = softmax_forward_f32_skylake, \
    .softmax_xent_forward = softmax_xent_forward_f32_skylake, \
    .softmax_xent_backward = softmax_xent_backward_f32_skylake, \
    .l2norm_forward = l2norm_forward_f32_skylake, \
    .l2norm_backward = l2norm_backward_f32_skylake, \
    .mean_pool_forward = uform__nn_mean_pool_forward_f32_serial, \
    .mean_pool_backward = uform__nn_mean_pool_backward_f32_serial, \
    .embedding_forward = uform__nn_embedding_forward_f32_serial, \
    .embedding_backward = uform__nn_embedding_backward_f32_serial, \
    .f32_to_bf16 = f32_to_bf16_skylake, \
    .bf16_to_f32 = bf16_to_f32_skylake, \
    .f32_to_f16 = f32_to_f16_skylake, \
    .f16_to_f32 = f16_to_f32_skylake, \
    .f32_to_i8 = uform__nn_f32_to_i8_serial, \
    .f32_to_b1 = uform__nn_f32_to_b1_serial, \
    .adamw = adamw_f32_skylake, \
    .sum_squares = sum_squares_f32_skylake

const uform__nn_kernels_t uform__nn_kernels_skylake = {
    SKYLAKE_ENTRIES,
    .attention_forward_bf16 = attention_forward_bf16_skylake,
    .attention_backward_bf16 = attention_backward_bf16_skylake,
};

/* GENOA, SAPPHIRE, GRANITE and DIAMOND: VDPBF16PS for the BF16 attention (nn_attention_genoa.c). */
const uform__nn_kernels_t uform__nn_kernels_genoa = {
    SKYLAKE_ENTRIES,
    .attention_forward_bf16 = uform__nn_attention_forward_bf16_genoa,
    .attention_backward_bf16 = uform__nn_attention_backward_bf16_genoa,
};
