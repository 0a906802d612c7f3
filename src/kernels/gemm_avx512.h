/*
 * The AVX-512 F bias + GELU pieces Skylake's F32 tile, Genoa's BF16 tile and their shared
 * epilogue all use, so a GELU folded into a tile's registers computes exactly the bits the
 * separate epilogue pass computes. Included only by gemm_skylake.c and gemm_genoa.c (static
 * inline functions with a target attribute: the callers' targets are supersets of this one).
 * The formulas and their error bounds are documented in gemm.h; the coefficients live in
 * gemm_driver.c.
 */
#ifndef UFORM_KERNELS_GEMM_AVX512_H
#define UFORM_KERNELS_GEMM_AVX512_H

#include <immintrin.h>

#include "kernels/gemm.h"
#include "kernels/nn_avx512.h" /* nn_transpose_16x16_f32x16 */

#define GEMM_AVX512_TARGET __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma")))

static inline __mmask16 gemm_columns_mask(size_t cols) {
    return cols >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cols) - 1u);
}

/* Exact GELU on 16 lanes: the same erfc form as gelu_f32x8 in gemm_haswell.c (see there), with
 * vscalefps doing the 2^n scaling, subnormal results included. */
GEMM_AVX512_TARGET static inline __m512 gemm_gelu_exact_f32x16(__m512 x_f32x16) {
    __m512 one_f32x16 = _mm512_set1_ps(1.0f), half_f32x16 = _mm512_set1_ps(0.5f);
    __m512 z_f32x16 = _mm512_min_ps(_mm512_mul_ps(_mm512_abs_ps(x_f32x16), _mm512_set1_ps(0.70710678118654752f)),
                                    _mm512_set1_ps(10.5f));
    /* t = 1/(1 + z/2): vrcp14ps (relative error < 2^-14) and one Newton step (≈2^-28), cheaper
     * than a division. */
    __m512 denominator_f32x16 = _mm512_fmadd_ps(z_f32x16, half_f32x16, one_f32x16);
    __m512 t_f32x16 = _mm512_rcp14_ps(denominator_f32x16);
    t_f32x16 = _mm512_mul_ps(t_f32x16, _mm512_fnmadd_ps(denominator_f32x16, t_f32x16, _mm512_set1_ps(2.0f)));
    __m512 poly_f32x16 = _mm512_set1_ps(uform__gemm_erfc_coefficients[9]);
    for (int i = 8; i >= 0; --i)
        poly_f32x16 = _mm512_fmadd_ps(poly_f32x16, t_f32x16, _mm512_set1_ps(uform__gemm_erfc_coefficients[i]));
    __m512 half_abs_f32x16 = _mm512_min_ps(_mm512_mul_ps(_mm512_abs_ps(x_f32x16), half_f32x16), _mm512_set1_ps(7.5f));
    __m512 clamped_abs_f32x16 = _mm512_add_ps(half_abs_f32x16, half_abs_f32x16);
    __m512 hi_f32x16 = _mm512_mul_ps(half_abs_f32x16, clamped_abs_f32x16);
    __m512 lo_f32x16 = _mm512_fmsub_ps(half_abs_f32x16, clamped_abs_f32x16, hi_f32x16);
    __m512 tail_f32x16 = _mm512_sub_ps(poly_f32x16, lo_f32x16);
    __m512 n_f32x16 = _mm512_roundscale_ps(
        _mm512_mul_ps(_mm512_sub_ps(tail_f32x16, hi_f32x16), _mm512_set1_ps(1.44269504088896341f)),
        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r_f32x16 = _mm512_fnmadd_ps(n_f32x16, _mm512_set1_ps(0.693145751953125f),
                                       _mm512_sub_ps(_mm512_setzero_ps(), hi_f32x16));
    r_f32x16 = _mm512_fnmadd_ps(n_f32x16, _mm512_set1_ps(1.428606765330187e-06f), r_f32x16);
    r_f32x16 = _mm512_add_ps(r_f32x16, tail_f32x16);
    __m512 e_f32x16 = _mm512_set1_ps(1.0f / 5040.0f);
    e_f32x16 = _mm512_fmadd_ps(e_f32x16, r_f32x16, _mm512_set1_ps(1.0f / 720.0f));
    e_f32x16 = _mm512_fmadd_ps(e_f32x16, r_f32x16, _mm512_set1_ps(1.0f / 120.0f));
    e_f32x16 = _mm512_fmadd_ps(e_f32x16, r_f32x16, _mm512_set1_ps(1.0f / 24.0f));
    e_f32x16 = _mm512_fmadd_ps(e_f32x16, r_f32x16, _mm512_set1_ps(1.0f / 6.0f));
    e_f32x16 = _mm512_fmadd_ps(e_f32x16, r_f32x16, half_f32x16);
    e_f32x16 = _mm512_fmadd_ps(e_f32x16, r_f32x16, one_f32x16);
    e_f32x16 = _mm512_fmadd_ps(e_f32x16, r_f32x16, one_f32x16);
    /* 0.5·x·erfc = (0.5·x·t·e)·2^n: scale last so a subnormal result is rounded once. */
    __m512 half_x_erfc_f32x16 = _mm512_scalef_ps(
        _mm512_mul_ps(_mm512_mul_ps(half_f32x16, x_f32x16), _mm512_mul_ps(e_f32x16, t_f32x16)), n_f32x16);
    __mmask16 positive = _mm512_cmp_ps_mask(x_f32x16, _mm512_setzero_ps(), _CMP_GE_OQ);
    __m512 result_f32x16 =
        _mm512_mask_sub_ps(half_x_erfc_f32x16, positive, x_f32x16, half_x_erfc_f32x16);
    __mmask16 large = _mm512_cmp_ps_mask(z_f32x16, _mm512_set1_ps(10.5f), _CMP_GE_OQ);
    __m512 saturated_f32x16 = _mm512_mask_mov_ps(_mm512_mul_ps(x_f32x16, _mm512_setzero_ps()), positive, x_f32x16);
    return _mm512_mask_mov_ps(result_f32x16, large, saturated_f32x16);
}

/*
 * Fast GELU on 16 lanes (UFORM__GEMM_GELU_FAST; form and bound in gemm.h): with a = min(|x|, 20),
 * h = 0.5·erfc(a/√2) ≈ t·Q(t)·2^y, t = 1/(1 + p·a), Q of degree 4, y = −a²·log2(e)/2, and 2^y as
 * 2^n·E(y − n), n = round(y), E of degree 5. Then GELU = max(x, 0) − |x|·h (one rounding): x − x·h
 * for x ≥ 0, x·h for x < 0. Clamping a at 20 makes 2^y exactly 0 there (vscalefps underflows
 * cleanly), so huge finite x give x or −0; ∞·0 makes both infinities NaN, and vfixupimmps puts
 * +∞ back for x = +∞ (−∞ stays NaN, as the formula and PyTorch give); NaN stays NaN (vminps and
 * vmaxps return their second operand when either is NaN). 24 instructions against the exact
 * form's 47 (0.41 against 0.96 ns per value here, one core).
 */
GEMM_AVX512_TARGET static inline __m512 gemm_gelu_fast_f32x16(__m512 x_f32x16) {
    __m512 abs_f32x16 = _mm512_abs_ps(x_f32x16);
    __m512 a_f32x16 = _mm512_min_ps(_mm512_set1_ps(20.0f), abs_f32x16);
    __m512 denominator_f32x16 = _mm512_fmadd_ps(a_f32x16, _mm512_set1_ps(uform__gemm_gelu_fast_p), _mm512_set1_ps(1.0f));
    /* vrcp14ps (relative error < 2^-14) and one Newton step (≈2^-28): cheaper than vdivps here. */
    __m512 t_f32x16 = _mm512_rcp14_ps(denominator_f32x16);
    t_f32x16 = _mm512_mul_ps(t_f32x16, _mm512_fnmadd_ps(denominator_f32x16, t_f32x16, _mm512_set1_ps(2.0f)));
    const float *q = uform__gemm_gelu_fast_coefficients;
    __m512 q_f32x16 = _mm512_fmadd_ps(_mm512_set1_ps(q[4]), t_f32x16, _mm512_set1_ps(q[3]));
    q_f32x16 = _mm512_fmadd_ps(q_f32x16, t_f32x16, _mm512_set1_ps(q[2]));
    q_f32x16 = _mm512_fmadd_ps(q_f32x16, t_f32x16, _mm512_set1_ps(q[1]));
    q_f32x16 = _mm512_fmadd_ps(q_f32x16, t_f32x16, _mm512_set1_ps(q[0]));
    q_f32x16 = _mm512_mul_ps(q_f32x16, t_f32x16);
    __m512 y_f32x16 = _mm512_mul_ps(_mm512_mul_ps(a_f32x16, a_f32x16), _mm512_set1_ps(-0.72134752044448170f));
    __m512 n_f32x16 = _mm512_roundscale_ps(y_f32x16, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 f_f32x16 = _mm512_sub_ps(y_f32x16, n_f32x16); /* exact, |f| ≤ 1/2 */
    const float *e = uform__gemm_exp2_coefficients;
    __m512 e_f32x16 = _mm512_fmadd_ps(_mm512_set1_ps(e[5]), f_f32x16, _mm512_set1_ps(e[4]));
    e_f32x16 = _mm512_fmadd_ps(e_f32x16, f_f32x16, _mm512_set1_ps(e[3]));
    e_f32x16 = _mm512_fmadd_ps(e_f32x16, f_f32x16, _mm512_set1_ps(e[2]));
    e_f32x16 = _mm512_fmadd_ps(e_f32x16, f_f32x16, _mm512_set1_ps(e[1]));
    e_f32x16 = _mm512_fmadd_ps(e_f32x16, f_f32x16, _mm512_set1_ps(e[0]));
    __m512 h_f32x16 = _mm512_scalef_ps(_mm512_mul_ps(q_f32x16, e_f32x16), n_f32x16); /* ≈ 0.5·erfc(|x|/√2) */
    __m512 result_f32x16 = _mm512_fnmadd_ps(abs_f32x16, h_f32x16, _mm512_max_ps(_mm512_setzero_ps(), x_f32x16));
    /* vfixupimmps: the +∞ token (5) of x answers +∞ (response 5); every other token keeps the result. */
    return _mm512_fixupimm_ps(result_f32x16, x_f32x16, _mm512_set1_epi32(0x5 << (4 * 5)), 0);
}

/* `gelu`: UFORM__GEMM_GELU_EXACT or UFORM__GEMM_GELU_FAST (the caller skips NONE). */
GEMM_AVX512_TARGET static inline __m512 gemm_gelu_f32x16(__m512 x_f32x16, int gelu) {
    return gelu == UFORM__GEMM_GELU_FAST ? gemm_gelu_fast_f32x16(x_f32x16) : gemm_gelu_exact_f32x16(x_f32x16);
}

/* The end of a tile's row vector: (C +) sum (+ bias), then GELU, stored under `mask`. Written
 * once here so the folded tiles and the separate epilogue pass do the same operations in the
 * same order (the epilogue adds the bias to the stored sum; so does this). */
GEMM_AVX512_TARGET static inline void gemm_finish_f32x16(float *c, __mmask16 mask, __m512 sum_f32x16, int accumulate,
                                                         const float *bias, int gelu) {
    __m512 value_f32x16 = sum_f32x16;
    if (accumulate) value_f32x16 = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, c), value_f32x16);
    if (bias) value_f32x16 = _mm512_add_ps(value_f32x16, _mm512_maskz_loadu_ps(mask, bias));
    if (gelu) value_f32x16 = gemm_gelu_f32x16(value_f32x16, gelu);
    _mm512_mask_storeu_ps(c, mask, value_f32x16);
}

#endif
