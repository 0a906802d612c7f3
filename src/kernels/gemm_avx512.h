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

/*
 * The sigmoid-form activations (QUICK and TANH; gemm.h has the forms and their bounds) on 16 lanes:
 * y = x·σ(z) for an odd z(x), given a = |z| as a pair a_hi + a_lo (|a_lo| ≲ 2^-24·a_hi, computed
 * from |x| clamped so that a_hi ≤ 219). With e^(−a) = p·2^n, n = round(−a·log2 e), p = e^r,
 * r = −a − n·ln 2 (−a_hi − n·ln2_hi is exact: ln2_hi has 15 significant bits and |n| ≤ 316):
 *   x ≥ 0 (z ≥ 0):  y = x / (1 + e^(−a))               = x·q,            q = 1/(1 + p·2^n)
 *   x < 0 (z < 0):  y = x·e^(−a) / (1 + e^(−a))         = (x·p·q)·2^n,    the power of two last,
 * so e^(−a) never overflows and the result is rounded once more at most (vscalefps, subnormal). The clamp makes
 * 2^n underflow to exactly 0 where the result is x or ±0 anyway. q is vrcp14ps and one Newton step
 * (≈2^-28), e^r Taylor to degree 7 on |r| ≤ 0.35 (truncation ≈5e-9), as the exact GELU above. x = +∞
 * gives +∞ (q = 1); x = −∞ would give −∞ (2^n scales ∞ to ∞) and vfixupimmps makes it NaN, as the
 * formula (−∞·0) and PyTorch give; NaN stays NaN.
 */
GEMM_AVX512_TARGET static inline __m512 gemm_x_sigmoid_f32x16(__m512 x_f32x16, __m512 a_hi_f32x16, __m512 a_lo_f32x16) {
    __m512 one_f32x16 = _mm512_set1_ps(1.0f);
    __m512 n_f32x16 = _mm512_roundscale_ps(_mm512_mul_ps(a_hi_f32x16, _mm512_set1_ps(-1.44269504088896341f)),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r_f32x16 = _mm512_fnmsub_ps(n_f32x16, _mm512_set1_ps(0.693145751953125f), a_hi_f32x16);
    r_f32x16 = _mm512_fnmadd_ps(n_f32x16, _mm512_set1_ps(1.428606765330187e-06f), r_f32x16);
    r_f32x16 = _mm512_sub_ps(r_f32x16, a_lo_f32x16);
    __m512 p_f32x16 = _mm512_set1_ps(1.0f / 5040.0f);
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, r_f32x16, _mm512_set1_ps(1.0f / 720.0f));
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, r_f32x16, _mm512_set1_ps(1.0f / 120.0f));
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, r_f32x16, _mm512_set1_ps(1.0f / 24.0f));
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, r_f32x16, _mm512_set1_ps(1.0f / 6.0f));
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, r_f32x16, _mm512_set1_ps(0.5f));
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, r_f32x16, one_f32x16);
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, r_f32x16, one_f32x16);
    __m512 denominator_f32x16 = _mm512_add_ps(_mm512_scalef_ps(p_f32x16, n_f32x16), one_f32x16);
    __m512 q_f32x16 = _mm512_rcp14_ps(denominator_f32x16);
    q_f32x16 = _mm512_mul_ps(q_f32x16, _mm512_fnmadd_ps(denominator_f32x16, q_f32x16, _mm512_set1_ps(2.0f)));
    __mmask16 positive = _mm512_cmp_ps_mask(x_f32x16, _mm512_setzero_ps(), _CMP_GE_OQ);
    /* x·p·q would overflow for |x| near FLT_MAX (p·q ≤ √2); below −2^64 the result is −0 anyway (a
     * clamped, 2^n ≤ 2^-289), so x is clamped there (NaN kept: vmaxps answers its second operand). */
    __m512 clamped_f32x16 = _mm512_max_ps(_mm512_set1_ps(-0x1p64f), x_f32x16);
    __m512 negative_f32x16 = _mm512_scalef_ps(_mm512_mul_ps(clamped_f32x16, _mm512_mul_ps(p_f32x16, q_f32x16)), n_f32x16);
    __m512 result_f32x16 = _mm512_mask_mul_ps(negative_f32x16, positive, x_f32x16, q_f32x16);
    /* vfixupimmps: the −∞ token (4) of x answers the default NaN (response 3); others keep the result. */
    return _mm512_fixupimm_ps(result_f32x16, x_f32x16, _mm512_set1_epi32(0x3 << (4 * 4)), 0);
}

/* QuickGELU on 16 lanes (UFORM__GEMM_GELU_QUICK): x·σ(1.702·x), a = 1.702·|x| as hi + lo (1.702
 * itself as an F32 pair), |x| clamped at 117.5 (a ≤ 200). */
GEMM_AVX512_TARGET static inline __m512 gemm_gelu_quick_f32x16(__m512 x_f32x16) {
    __m512 abs_f32x16 = _mm512_min_ps(_mm512_abs_ps(x_f32x16), _mm512_set1_ps(117.5f)); /* NaN gives 117.5 */
    __m512 c_hi_f32x16 = _mm512_set1_ps(UFORM__GEMM_QUICK_C_HI);
    __m512 a_hi_f32x16 = _mm512_mul_ps(abs_f32x16, c_hi_f32x16);
    __m512 a_lo_f32x16 = _mm512_fmadd_ps(abs_f32x16, _mm512_set1_ps(UFORM__GEMM_QUICK_C_LO),
                                         _mm512_fmsub_ps(abs_f32x16, c_hi_f32x16, a_hi_f32x16));
    return gemm_x_sigmoid_f32x16(x_f32x16, a_hi_f32x16, a_lo_f32x16);
}

/* The tanh GELU on 16 lanes (UFORM__GEMM_GELU_TANH): 0.5·x·(1 + tanh(u)) = x·σ(2u), so
 * a = 2|u| = k1·|x| + k3·|x|³ (k1 = 2√(2/π), k3 = 0.044715·k1, each an F32 pair), carried as
 * hi + lo: |x|² exactly as s + s_lo, k3·|x|² as p + p_lo, k1 + p by Fast2Sum (both positive: the
 * larger first), then times |x| (one more exact remainder). |x| clamped at 14 (a ≤ 219). */
GEMM_AVX512_TARGET static inline __m512 gemm_gelu_tanh_f32x16(__m512 x_f32x16) {
    __m512 abs_f32x16 = _mm512_min_ps(_mm512_abs_ps(x_f32x16), _mm512_set1_ps(14.0f)); /* NaN gives 14 */
    __m512 k1_hi_f32x16 = _mm512_set1_ps(UFORM__GEMM_TANH_K1_HI), k3_hi_f32x16 = _mm512_set1_ps(UFORM__GEMM_TANH_K3_HI);
    __m512 s_f32x16 = _mm512_mul_ps(abs_f32x16, abs_f32x16);
    __m512 s_lo_f32x16 = _mm512_fmsub_ps(abs_f32x16, abs_f32x16, s_f32x16);
    __m512 p_f32x16 = _mm512_mul_ps(k3_hi_f32x16, s_f32x16);
    __m512 p_lo_f32x16 = _mm512_fmsub_ps(k3_hi_f32x16, s_f32x16, p_f32x16);
    p_lo_f32x16 = _mm512_fmadd_ps(k3_hi_f32x16, s_lo_f32x16, p_lo_f32x16);
    p_lo_f32x16 = _mm512_fmadd_ps(_mm512_set1_ps(UFORM__GEMM_TANH_K3_LO), s_f32x16, p_lo_f32x16);
    __m512 w_f32x16 = _mm512_add_ps(p_f32x16, k1_hi_f32x16);
    __m512 big_f32x16 = _mm512_max_ps(p_f32x16, k1_hi_f32x16), small_f32x16 = _mm512_min_ps(p_f32x16, k1_hi_f32x16);
    __m512 w_lo_f32x16 = _mm512_sub_ps(small_f32x16, _mm512_sub_ps(w_f32x16, big_f32x16));
    w_lo_f32x16 = _mm512_add_ps(w_lo_f32x16, _mm512_add_ps(p_lo_f32x16, _mm512_set1_ps(UFORM__GEMM_TANH_K1_LO)));
    __m512 a_hi_f32x16 = _mm512_mul_ps(abs_f32x16, w_f32x16);
    __m512 a_lo_f32x16 = _mm512_fmadd_ps(abs_f32x16, w_lo_f32x16, _mm512_fmsub_ps(abs_f32x16, w_f32x16, a_hi_f32x16));
    return gemm_x_sigmoid_f32x16(x_f32x16, a_hi_f32x16, a_lo_f32x16);
}

/* The erf forms: `gelu` UFORM__GEMM_GELU_EXACT or UFORM__GEMM_GELU_FAST. */
GEMM_AVX512_TARGET static inline __m512 gemm_gelu_erf_f32x16(__m512 x_f32x16, int gelu) {
    return gelu == UFORM__GEMM_GELU_FAST ? gemm_gelu_fast_f32x16(x_f32x16) : gemm_gelu_exact_f32x16(x_f32x16);
}

/* `gelu`: any uform__gemm_gelu_t but NONE (the callers skip NONE). */
GEMM_AVX512_TARGET static inline __m512 gemm_gelu_f32x16(__m512 x_f32x16, int gelu) {
    switch (gelu) {
    case UFORM__GEMM_GELU_QUICK: return gemm_gelu_quick_f32x16(x_f32x16);
    case UFORM__GEMM_GELU_TANH: return gemm_gelu_tanh_f32x16(x_f32x16);
    default: return gemm_gelu_erf_f32x16(x_f32x16, gelu);
    }
}

/*
 * Which activations the tiles fold into their registers: none and the erf forms. The sigmoid
 * forms (QUICK, TANH) are applied by the separate pass (uform__gemm_epilogue_skylake, bias NULL)
 * over the tile just stored, still in L1: inlined at each of a tile's 24 vectors, four forms made
 * GCC call the activation out of line, which spills the live accumulators around every call (the
 * erf forms' fold would have lost its gain). The pass computes the same bits (the stored sum +
 * bias is the value the registers held).
 */
static inline int gemm_gelu_folds(int gelu) { return gelu <= UFORM__GEMM_GELU_FAST; }

/* The end of a tile's row vector: (C +) sum (+ bias), then GELU (`gelu` NONE, EXACT or FAST: the
 * folded forms), stored under `mask`. Written once here so the folded tiles and the separate
 * epilogue pass do the same operations in the same order (the epilogue adds the bias to the
 * stored sum; so does this). */
GEMM_AVX512_TARGET static inline void gemm_finish_f32x16(float *c, __mmask16 mask, __m512 sum_f32x16, int accumulate,
                                                         const float *bias, int gelu) {
    __m512 value_f32x16 = sum_f32x16;
    if (accumulate) value_f32x16 = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, c), value_f32x16);
    if (bias) value_f32x16 = _mm512_add_ps(value_f32x16, _mm512_maskz_loadu_ps(mask, bias));
    if (gelu) value_f32x16 = gemm_gelu_erf_f32x16(value_f32x16, gelu);
    _mm512_mask_storeu_ps(c, mask, value_f32x16);
}

#endif
