/*
 * INTEL_HASWELL GEMM: AVX2 + FMA. A 6×16 register tile (12 ymm accumulators, two ymm of B and
 * one broadcast of A per K step: 15 of the 16 registers), the shape that keeps both FMA ports
 * busy on Haswell-class cores. BF16 weights are widened to F32 while packing (a 16-bit shift,
 * exact), so every product is F32. Also used by INTEL_SIERRA.
 */
#include <immintrin.h>
#include <string.h>

#include "kernels/gemm.h"

#define HASWELL_TARGET __attribute__((target("avx2,fma,f16c")))

enum { HASWELL_MR = 6, HASWELL_NR = 16 };

/* C[rows, cols] (+)= A[6][kc] · B[kc][16]. */
HASWELL_TARGET static void tile_f32_haswell(size_t kc, const void *a_block, size_t lda, const void *b_panel, float *c,
                                            size_t ldc, size_t rows, size_t cols, int accumulate) {
    const float *a = a_block, *b = b_panel;
    __m256 sum_f32x8[HASWELL_MR][2];
#pragma GCC unroll 6
    for (int r = 0; r < HASWELL_MR; ++r) sum_f32x8[r][0] = sum_f32x8[r][1] = _mm256_setzero_ps();
    /* The C tile is read (or written) after the K loop: start fetching its lines now. */
    for (size_t r = 0; r < rows; ++r) {
        _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + r * ldc + 15), _MM_HINT_T0);
    }
    for (size_t p = 0; p < kc; ++p) {
        __m256 b0_f32x8 = _mm256_loadu_ps(b + p * HASWELL_NR), b1_f32x8 = _mm256_loadu_ps(b + p * HASWELL_NR + 8);
#pragma GCC unroll 6
        for (int r = 0; r < HASWELL_MR; ++r) {
            __m256 a_f32x8 = _mm256_broadcast_ss(a + r * lda + p);
            sum_f32x8[r][0] = _mm256_fmadd_ps(a_f32x8, b0_f32x8, sum_f32x8[r][0]);
            sum_f32x8[r][1] = _mm256_fmadd_ps(a_f32x8, b1_f32x8, sum_f32x8[r][1]);
        }
    }
    if (rows == HASWELL_MR && cols == HASWELL_NR) {
#pragma GCC unroll 6
        for (int r = 0; r < HASWELL_MR; ++r) {
            float *row = c + r * ldc;
            __m256 c0_f32x8 = sum_f32x8[r][0], c1_f32x8 = sum_f32x8[r][1];
            if (accumulate) {
                c0_f32x8 = _mm256_add_ps(_mm256_loadu_ps(row), c0_f32x8);
                c1_f32x8 = _mm256_add_ps(_mm256_loadu_ps(row + 8), c1_f32x8);
            }
            _mm256_storeu_ps(row, c0_f32x8);
            _mm256_storeu_ps(row + 8, c1_f32x8);
        }
        return;
    }
    float partial[HASWELL_MR][HASWELL_NR];
#pragma GCC unroll 6
    for (int r = 0; r < HASWELL_MR; ++r) {
        _mm256_storeu_ps(partial[r], sum_f32x8[r][0]);
        _mm256_storeu_ps(partial[r] + 8, sum_f32x8[r][1]);
    }
    for (size_t r = 0; r < rows; ++r)
        for (size_t j = 0; j < cols; ++j) c[r * ldc + j] = accumulate ? c[r * ldc + j] + partial[r][j] : partial[r][j];
}

/*
 * GELU on 8 lanes, 0.5·x·(1 + erf(x/√2)), through erfc(z) = t·exp(−z² + P(t)), t = 1/(1 + z/2),
 * z = |x|/√2 clamped to 10.5 (0.5·x·erfc(z) underflows F32 beyond). P is a degree-9 polynomial fitted for this
 * project (weighted least squares towards minimax on t ∈ [1/6, 1]); erfc's relative error stays
 * below ≈3e-7 in F32. z² is split into hi + lo (FMA) and exp takes the pair, so the large
 * exponents lose nothing to rounding. x ≥ 0: x − 0.5·x·erfc(z); x < 0: 0.5·x·erfc(z).
 * The coefficients are in gemm_driver.c.
 */
HASWELL_TARGET static inline __m256 gelu_f32x8(__m256 x_f32x8) {
    __m256 one_f32x8 = _mm256_set1_ps(1.0f), half_f32x8 = _mm256_set1_ps(0.5f);
    __m256 abs_f32x8 = _mm256_and_ps(x_f32x8, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)));
    __m256 z_f32x8 = _mm256_min_ps(_mm256_mul_ps(abs_f32x8, _mm256_set1_ps(0.70710678118654752f)), _mm256_set1_ps(10.5f));
    __m256 t_f32x8 = _mm256_div_ps(one_f32x8, _mm256_fmadd_ps(z_f32x8, half_f32x8, one_f32x8));
    __m256 poly_f32x8 = _mm256_set1_ps(uform__gemm_erfc_coefficients[9]);
    for (int i = 8; i >= 0; --i) poly_f32x8 = _mm256_fmadd_ps(poly_f32x8, t_f32x8, _mm256_set1_ps(uform__gemm_erfc_coefficients[i]));
    /* z² = x²/2 from x itself (0.5·x is exact), so the rounding of z does not reach the exponent. */
    __m256 half_abs_f32x8 = _mm256_min_ps(_mm256_mul_ps(abs_f32x8, half_f32x8), _mm256_set1_ps(7.5f));
    __m256 clamped_abs_f32x8 = _mm256_add_ps(half_abs_f32x8, half_abs_f32x8);
    __m256 hi_f32x8 = _mm256_mul_ps(half_abs_f32x8, clamped_abs_f32x8);
    __m256 lo_f32x8 = _mm256_fmsub_ps(half_abs_f32x8, clamped_abs_f32x8, hi_f32x8);
    __m256 tail_f32x8 = _mm256_sub_ps(poly_f32x8, lo_f32x8); /* exp(−hi + tail) */
    __m256 n_f32x8 = _mm256_round_ps(_mm256_mul_ps(_mm256_sub_ps(tail_f32x8, hi_f32x8), _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    /* −hi − n·ln2_hi is exact (ln2_hi has 15 significant bits); the rest is small. */
    __m256 r_f32x8 = _mm256_fnmadd_ps(n_f32x8, _mm256_set1_ps(0.693145751953125f), _mm256_sub_ps(_mm256_setzero_ps(), hi_f32x8));
    r_f32x8 = _mm256_fnmadd_ps(n_f32x8, _mm256_set1_ps(1.428606765330187e-06f), r_f32x8);
    r_f32x8 = _mm256_add_ps(r_f32x8, tail_f32x8);
    /* e^r on |r| ≤ ≈0.35: Taylor to degree 7 (truncation ≈5e-9). */
    __m256 e_f32x8 = _mm256_set1_ps(1.0f / 5040.0f);
    e_f32x8 = _mm256_fmadd_ps(e_f32x8, r_f32x8, _mm256_set1_ps(1.0f / 720.0f));
    e_f32x8 = _mm256_fmadd_ps(e_f32x8, r_f32x8, _mm256_set1_ps(1.0f / 120.0f));
    e_f32x8 = _mm256_fmadd_ps(e_f32x8, r_f32x8, _mm256_set1_ps(1.0f / 24.0f));
    e_f32x8 = _mm256_fmadd_ps(e_f32x8, r_f32x8, _mm256_set1_ps(1.0f / 6.0f));
    e_f32x8 = _mm256_fmadd_ps(e_f32x8, r_f32x8, half_f32x8);
    e_f32x8 = _mm256_fmadd_ps(e_f32x8, r_f32x8, one_f32x8);
    e_f32x8 = _mm256_fmadd_ps(e_f32x8, r_f32x8, one_f32x8);
    /* Scale by 2^n, n ∈ [−147, 1], in two normal steps so subnormal results stay right. */
    __m256i n_i32x8 = _mm256_cvtps_epi32(n_f32x8);
    __m256i n1_i32x8 = _mm256_max_epi32(n_i32x8, _mm256_set1_epi32(-100));
    __m256i n2_i32x8 = _mm256_sub_epi32(n_i32x8, n1_i32x8);
    __m256 scale1_f32x8 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1_i32x8, _mm256_set1_epi32(127)), 23));
    __m256 scale2_f32x8 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2_i32x8, _mm256_set1_epi32(127)), 23));
    /* 0.5·x·t·e first, the power of two last: a subnormal result is rounded once. */
    __m256 half_x_erfc_f32x8 = _mm256_mul_ps(_mm256_mul_ps(half_f32x8, x_f32x8), _mm256_mul_ps(e_f32x8, t_f32x8));
    half_x_erfc_f32x8 = _mm256_mul_ps(_mm256_mul_ps(half_x_erfc_f32x8, scale1_f32x8), scale2_f32x8);
    __m256 positive_f32x8 = _mm256_cmp_ps(x_f32x8, _mm256_setzero_ps(), _CMP_GE_OQ);
    __m256 result_f32x8 = _mm256_blendv_ps(half_x_erfc_f32x8, _mm256_sub_ps(x_f32x8, half_x_erfc_f32x8), positive_f32x8);
    /* |x| ≥ 10.5·√2: GELU is x (x > 0) or ±0 (x < 0; NaN for −∞, as the formula gives). */
    __m256 large_f32x8 = _mm256_cmp_ps(z_f32x8, _mm256_set1_ps(10.5f), _CMP_GE_OQ);
    __m256 saturated_f32x8 = _mm256_blendv_ps(_mm256_mul_ps(x_f32x8, _mm256_setzero_ps()), x_f32x8, positive_f32x8);
    return _mm256_blendv_ps(result_f32x8, saturated_f32x8, large_f32x8);
}

/*
 * Fast GELU on 8 lanes (UFORM__GEMM_GELU_FAST; the same form as gemm_gelu_fast_f32x16 in
 * gemm_avx512.h, bound in gemm.h): 0.5·erfc(|x|/√2) ≈ t·Q(t)·2^n·E(y − n), y = −x²·log2(e)/2.
 * t is a true division here (vrcpps has only 12 bits). 2^n is built in the exponent field with
 * n + 127 clamped at 0, so beyond |x| ≈ 13.2 (where 0.5·erfc < 2^-127) the factor is exactly 0:
 * +∞ gives +∞ and −∞ gives NaN, as the formula does.
 */
HASWELL_TARGET static inline __m256 gelu_fast_f32x8(__m256 x_f32x8) {
    __m256 abs_f32x8 = _mm256_and_ps(x_f32x8, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)));
    __m256 a_f32x8 = _mm256_min_ps(_mm256_set1_ps(20.0f), abs_f32x8); /* NaN stays NaN */
    __m256 t_f32x8 = _mm256_div_ps(_mm256_set1_ps(1.0f),
                                   _mm256_fmadd_ps(a_f32x8, _mm256_set1_ps(uform__gemm_gelu_fast_p), _mm256_set1_ps(1.0f)));
    const float *q = uform__gemm_gelu_fast_coefficients;
    __m256 q_f32x8 = _mm256_fmadd_ps(_mm256_set1_ps(q[4]), t_f32x8, _mm256_set1_ps(q[3]));
    q_f32x8 = _mm256_fmadd_ps(q_f32x8, t_f32x8, _mm256_set1_ps(q[2]));
    q_f32x8 = _mm256_fmadd_ps(q_f32x8, t_f32x8, _mm256_set1_ps(q[1]));
    q_f32x8 = _mm256_fmadd_ps(q_f32x8, t_f32x8, _mm256_set1_ps(q[0]));
    q_f32x8 = _mm256_mul_ps(q_f32x8, t_f32x8);
    __m256 y_f32x8 = _mm256_mul_ps(_mm256_mul_ps(a_f32x8, a_f32x8), _mm256_set1_ps(-0.72134752044448170f));
    __m256 n_f32x8 = _mm256_round_ps(y_f32x8, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 f_f32x8 = _mm256_sub_ps(y_f32x8, n_f32x8);
    const float *e = uform__gemm_exp2_coefficients;
    __m256 e_f32x8 = _mm256_fmadd_ps(_mm256_set1_ps(e[5]), f_f32x8, _mm256_set1_ps(e[4]));
    e_f32x8 = _mm256_fmadd_ps(e_f32x8, f_f32x8, _mm256_set1_ps(e[3]));
    e_f32x8 = _mm256_fmadd_ps(e_f32x8, f_f32x8, _mm256_set1_ps(e[2]));
    e_f32x8 = _mm256_fmadd_ps(e_f32x8, f_f32x8, _mm256_set1_ps(e[1]));
    e_f32x8 = _mm256_fmadd_ps(e_f32x8, f_f32x8, _mm256_set1_ps(e[0]));
    __m256i biased_i32x8 = _mm256_max_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n_f32x8), _mm256_set1_epi32(127)),
                                            _mm256_setzero_si256());
    __m256 scale_f32x8 = _mm256_castsi256_ps(_mm256_slli_epi32(biased_i32x8, 23));
    __m256 h_f32x8 = _mm256_mul_ps(_mm256_mul_ps(q_f32x8, e_f32x8), scale_f32x8); /* ≈ 0.5·erfc(|x|/√2) */
    __m256 clamped_x_f32x8 = _mm256_min_ps(_mm256_set1_ps(20.0f), x_f32x8);
    __m256 positive_f32x8 = _mm256_cmp_ps(x_f32x8, _mm256_setzero_ps(), _CMP_GE_OQ);
    return _mm256_blendv_ps(_mm256_mul_ps(x_f32x8, h_f32x8), _mm256_fnmadd_ps(clamped_x_f32x8, h_f32x8, x_f32x8),
                            positive_f32x8);
}

/*
 * The sigmoid-form activations on 8 lanes (QUICK and TANH): y = x·σ(z), a = |z| = a_hi + a_lo,
 * the same steps as gemm_x_sigmoid_f32x16 in gemm_avx512.h (see there), but for q = 1/(1 + p·2^n),
 * a true division (vrcpps has only 12 bits), and 2^n, n ∈ [−316, 0], built in the exponent field
 * as 2^n1·2^n2 with n1 = max(n, −100): x·2^n1 is exact (it stays normal wherever the result is not
 * 0, and it cannot overflow), then ·p·q rounds, and a subnormal result rounds once more, by 2^n2. 2^n2 is exactly 0 for n2 ≤ −127 (the
 * biased exponent clamped at 0), where the result is ±0 anyway (n ≤ −227 needs |x| ≥ 12.5); then
 * x = −∞ gives −∞·0 = NaN and x = +∞ gives +∞ (q = 1), as the formula and PyTorch give.
 */
HASWELL_TARGET static inline __m256 x_sigmoid_f32x8(__m256 x_f32x8, __m256 a_hi_f32x8, __m256 a_lo_f32x8) {
    __m256 one_f32x8 = _mm256_set1_ps(1.0f);
    __m256 n_f32x8 = _mm256_round_ps(_mm256_mul_ps(a_hi_f32x8, _mm256_set1_ps(-1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r_f32x8 = _mm256_fnmsub_ps(n_f32x8, _mm256_set1_ps(0.693145751953125f), a_hi_f32x8);
    r_f32x8 = _mm256_fnmadd_ps(n_f32x8, _mm256_set1_ps(1.428606765330187e-06f), r_f32x8);
    r_f32x8 = _mm256_sub_ps(r_f32x8, a_lo_f32x8);
    __m256 p_f32x8 = _mm256_set1_ps(1.0f / 5040.0f);
    p_f32x8 = _mm256_fmadd_ps(p_f32x8, r_f32x8, _mm256_set1_ps(1.0f / 720.0f));
    p_f32x8 = _mm256_fmadd_ps(p_f32x8, r_f32x8, _mm256_set1_ps(1.0f / 120.0f));
    p_f32x8 = _mm256_fmadd_ps(p_f32x8, r_f32x8, _mm256_set1_ps(1.0f / 24.0f));
    p_f32x8 = _mm256_fmadd_ps(p_f32x8, r_f32x8, _mm256_set1_ps(1.0f / 6.0f));
    p_f32x8 = _mm256_fmadd_ps(p_f32x8, r_f32x8, _mm256_set1_ps(0.5f));
    p_f32x8 = _mm256_fmadd_ps(p_f32x8, r_f32x8, one_f32x8);
    p_f32x8 = _mm256_fmadd_ps(p_f32x8, r_f32x8, one_f32x8);
    __m256i n_i32x8 = _mm256_cvtps_epi32(n_f32x8);
    __m256i n1_i32x8 = _mm256_max_epi32(n_i32x8, _mm256_set1_epi32(-100));
    __m256i n2_i32x8 = _mm256_sub_epi32(n_i32x8, n1_i32x8);
    __m256 scale1_f32x8 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1_i32x8, _mm256_set1_epi32(127)), 23));
    __m256 scale2_f32x8 = _mm256_castsi256_ps(_mm256_slli_epi32(
        _mm256_max_epi32(_mm256_add_epi32(n2_i32x8, _mm256_set1_epi32(127)), _mm256_setzero_si256()), 23));
    __m256 t_f32x8 = _mm256_mul_ps(_mm256_mul_ps(p_f32x8, scale1_f32x8), scale2_f32x8);
    __m256 q_f32x8 = _mm256_div_ps(one_f32x8, _mm256_add_ps(t_f32x8, one_f32x8));
    /* x·2^n1 first (exact: it stays normal, and never overflows as x·p·q would near FLT_MAX). */
    __m256 negative_f32x8 = _mm256_mul_ps(_mm256_mul_ps(x_f32x8, scale1_f32x8), _mm256_mul_ps(p_f32x8, q_f32x8));
    negative_f32x8 = _mm256_mul_ps(negative_f32x8, scale2_f32x8);
    __m256 positive_f32x8 = _mm256_cmp_ps(x_f32x8, _mm256_setzero_ps(), _CMP_GE_OQ);
    return _mm256_blendv_ps(negative_f32x8, _mm256_mul_ps(x_f32x8, q_f32x8), positive_f32x8);
}

/* QuickGELU on 8 lanes: gemm_gelu_quick_f32x16's steps (gemm_avx512.h). */
HASWELL_TARGET static inline __m256 gelu_quick_f32x8(__m256 x_f32x8) {
    __m256 abs_f32x8 = _mm256_and_ps(x_f32x8, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)));
    abs_f32x8 = _mm256_min_ps(abs_f32x8, _mm256_set1_ps(117.5f)); /* NaN gives 117.5 */
    __m256 c_hi_f32x8 = _mm256_set1_ps(UFORM__GEMM_QUICK_C_HI);
    __m256 a_hi_f32x8 = _mm256_mul_ps(abs_f32x8, c_hi_f32x8);
    __m256 a_lo_f32x8 = _mm256_fmadd_ps(abs_f32x8, _mm256_set1_ps(UFORM__GEMM_QUICK_C_LO),
                                        _mm256_fmsub_ps(abs_f32x8, c_hi_f32x8, a_hi_f32x8));
    return x_sigmoid_f32x8(x_f32x8, a_hi_f32x8, a_lo_f32x8);
}

/* The tanh GELU on 8 lanes: gemm_gelu_tanh_f32x16's steps (gemm_avx512.h). */
HASWELL_TARGET static inline __m256 gelu_tanh_f32x8(__m256 x_f32x8) {
    __m256 abs_f32x8 = _mm256_and_ps(x_f32x8, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)));
    abs_f32x8 = _mm256_min_ps(abs_f32x8, _mm256_set1_ps(14.0f)); /* NaN gives 14 */
    __m256 k1_hi_f32x8 = _mm256_set1_ps(UFORM__GEMM_TANH_K1_HI), k3_hi_f32x8 = _mm256_set1_ps(UFORM__GEMM_TANH_K3_HI);
    __m256 s_f32x8 = _mm256_mul_ps(abs_f32x8, abs_f32x8);
    __m256 s_lo_f32x8 = _mm256_fmsub_ps(abs_f32x8, abs_f32x8, s_f32x8);
    __m256 p_f32x8 = _mm256_mul_ps(k3_hi_f32x8, s_f32x8);
    __m256 p_lo_f32x8 = _mm256_fmsub_ps(k3_hi_f32x8, s_f32x8, p_f32x8);
    p_lo_f32x8 = _mm256_fmadd_ps(k3_hi_f32x8, s_lo_f32x8, p_lo_f32x8);
    p_lo_f32x8 = _mm256_fmadd_ps(_mm256_set1_ps(UFORM__GEMM_TANH_K3_LO), s_f32x8, p_lo_f32x8);
    __m256 w_f32x8 = _mm256_add_ps(p_f32x8, k1_hi_f32x8);
    __m256 big_f32x8 = _mm256_max_ps(p_f32x8, k1_hi_f32x8), small_f32x8 = _mm256_min_ps(p_f32x8, k1_hi_f32x8);
    __m256 w_lo_f32x8 = _mm256_sub_ps(small_f32x8, _mm256_sub_ps(w_f32x8, big_f32x8));
    w_lo_f32x8 = _mm256_add_ps(w_lo_f32x8, _mm256_add_ps(p_lo_f32x8, _mm256_set1_ps(UFORM__GEMM_TANH_K1_LO)));
    __m256 a_hi_f32x8 = _mm256_mul_ps(abs_f32x8, w_f32x8);
    __m256 a_lo_f32x8 = _mm256_fmadd_ps(abs_f32x8, w_lo_f32x8, _mm256_fmsub_ps(abs_f32x8, w_f32x8, a_hi_f32x8));
    return x_sigmoid_f32x8(x_f32x8, a_hi_f32x8, a_lo_f32x8);
}

/* `gelu`: any uform__gemm_gelu_t but NONE (the callers skip NONE). */
HASWELL_TARGET static inline __m256 gelu_f32x8_mode(__m256 x_f32x8, int gelu) {
    switch (gelu) {
    case UFORM__GEMM_GELU_FAST: return gelu_fast_f32x8(x_f32x8);
    case UFORM__GEMM_GELU_QUICK: return gelu_quick_f32x8(x_f32x8);
    case UFORM__GEMM_GELU_TANH: return gelu_tanh_f32x8(x_f32x8);
    default: return gelu_f32x8(x_f32x8);
    }
}

HASWELL_TARGET static void epilogue_haswell(float *c, size_t ldc, size_t rows, size_t cols, const float *bias, int gelu) {
    for (size_t r = 0; r < rows; ++r) {
        float *row = c + r * ldc;
        size_t j = 0;
        for (; j + 8 <= cols; j += 8) {
            __m256 value_f32x8 = _mm256_loadu_ps(row + j);
            if (bias) value_f32x8 = _mm256_add_ps(value_f32x8, _mm256_loadu_ps(bias + j));
            if (gelu) value_f32x8 = gelu_f32x8_mode(value_f32x8, gelu);
            _mm256_storeu_ps(row + j, value_f32x8);
        }
        if (j < cols) { /* the tail, through a lane buffer */
            size_t count = cols - j;
            float lanes[8] = {0}, bias_lanes[8] = {0};
            memcpy(lanes, row + j, count * sizeof(float));
            if (bias) memcpy(bias_lanes, bias + j, count * sizeof(float));
            __m256 value_f32x8 = _mm256_add_ps(_mm256_loadu_ps(lanes), _mm256_loadu_ps(bias_lanes));
            if (gelu) value_f32x8 = gelu_f32x8_mode(value_f32x8, gelu);
            _mm256_storeu_ps(lanes, value_f32x8);
            memcpy(row + j, lanes, count * sizeof(float));
        }
    }
}

/* The first `count` lanes (count ≤ 8) as a vmaskmovps mask. */
HASWELL_TARGET static inline __m256i lanes_mask_x8(size_t count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* rows[8] an 8×8 block of F32 (rows[r] lane c = block[r][c]); writes columns[c] lane r. Pairs of
 * rows interleaved, then quads, then 128-bit halves exchanged. */
HASWELL_TARGET static inline void transpose_8x8_f32x8(const __m256 rows[8], __m256 columns[8]) {
    __m256 t_f32x8[8], u_f32x8[8];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
        t_f32x8[2 * i] = _mm256_unpacklo_ps(rows[2 * i], rows[2 * i + 1]);
        t_f32x8[2 * i + 1] = _mm256_unpackhi_ps(rows[2 * i], rows[2 * i + 1]);
    }
    /* u[4g + j], 128-bit half H: rows 4g .. 4g+3 of column 4H + j. */
#pragma GCC unroll 2
    for (int g = 0; g < 2; ++g) {
        u_f32x8[4 * g + 0] = _mm256_shuffle_ps(t_f32x8[4 * g], t_f32x8[4 * g + 2], 0x44);
        u_f32x8[4 * g + 1] = _mm256_shuffle_ps(t_f32x8[4 * g], t_f32x8[4 * g + 2], 0xEE);
        u_f32x8[4 * g + 2] = _mm256_shuffle_ps(t_f32x8[4 * g + 1], t_f32x8[4 * g + 3], 0x44);
        u_f32x8[4 * g + 3] = _mm256_shuffle_ps(t_f32x8[4 * g + 1], t_f32x8[4 * g + 3], 0xEE);
    }
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
        columns[j] = _mm256_permute2f128_ps(u_f32x8[j], u_f32x8[4 + j], 0x20);
        columns[4 + j] = _mm256_permute2f128_ps(u_f32x8[j], u_f32x8[4 + j], 0x31);
    }
}

/*
 * backward_w's A block from dY (gemm.h's uform__gemm_pack_transposed_fn): 8×8 tiles, 8 tokens
 * (source rows) by 8 block rows (source columns), transposed in registers and stored as 32-byte
 * runs of block rows instead of one strided store per value; tokens outermost. The rows, while in
 * registers, are added into `sums` in token order (the bias gradient). Tails go through
 * vmaskmovps, which reads and writes nothing outside its mask.
 */
HASWELL_TARGET static void pack_transposed_f32_haswell(const float *source, size_t ld, size_t rows, size_t kc,
                                                       void *block_out, size_t lda, float *sums) {
    float *block = block_out;
    for (size_t p = 0; p < kc; p += 8) {
        size_t steps = kc - p < 8 ? kc - p : 8;
        __m256i step_mask = lanes_mask_x8(steps);
        const float *tokens = source + p * ld;
        for (size_t r = 0; r < rows; r += 8) {
            size_t lanes = rows - r < 8 ? rows - r : 8;
            __m256i lane_mask = lanes_mask_x8(lanes);
            __m256 rows_f32x8[8], columns_f32x8[8];
#pragma GCC unroll 8
            for (size_t s = 0; s < 8; ++s)
                rows_f32x8[s] = s >= steps ? _mm256_setzero_ps()
                                : lanes == 8 ? _mm256_loadu_ps(tokens + s * ld + r)
                                             : _mm256_maskload_ps(tokens + s * ld + r, lane_mask);
            if (sums) {
                __m256 sum_f32x8 = _mm256_maskload_ps(sums + r, lane_mask);
#pragma GCC unroll 8
                for (size_t s = 0; s < 8; ++s)
                    if (s < steps) sum_f32x8 = _mm256_add_ps(sum_f32x8, rows_f32x8[s]);
                _mm256_maskstore_ps(sums + r, lane_mask, sum_f32x8);
            }
            transpose_8x8_f32x8(rows_f32x8, columns_f32x8);
#pragma GCC unroll 8
            for (size_t c = 0; c < 8; ++c) {
                if (c >= lanes) break;
                if (steps == 8) _mm256_storeu_ps(block + (r + c) * lda + p, columns_f32x8[c]);
                else _mm256_maskstore_ps(block + (r + c) * lda + p, step_mask, columns_f32x8[c]);
            }
        }
    }
}

const uform__gemm_micro_t uform__gemm_micro_f32_haswell = {
    .panel_dtype = UFORM__GEMM_F32, .mr = HASWELL_MR, .nr = HASWELL_NR, .kc = 512, .mc = 144, .nc = 1536,
    .layout = 2, .tile = tile_f32_haswell, .epilogue = epilogue_haswell,
    .pack_transposed = pack_transposed_f32_haswell};

static uform_status_t gemm_f32_haswell(const uform__gemm_forward_t *args, const uform__parallel_t *parallel,
                                       uform_outcome_t *outcome) {
    return uform__gemm_forward_drive(&uform__gemm_micro_f32_haswell, args, parallel, outcome);
}

static uform_status_t gemm_backward_x_f32_haswell(const uform__gemm_backward_x_t *args,
                                                  const uform__parallel_t *parallel, uform_outcome_t *outcome) {
    return uform__gemm_backward_x_drive(&uform__gemm_micro_f32_haswell, args, parallel, outcome);
}

static uform_status_t gemm_backward_w_f32_haswell(const uform__gemm_backward_w_t *args,
                                                  const uform__parallel_t *parallel, uform_outcome_t *outcome) {
    return uform__gemm_backward_w_drive(&uform__gemm_micro_f32_haswell, args, parallel, outcome);
}

static size_t packed_size_haswell(size_t n, size_t k, uform__gemm_dtype_t w_dtype) {
    return uform__gemm_packed_size_for(&uform__gemm_micro_f32_haswell, n, k);
}

static uform_status_t pack_haswell(const void *w, size_t ldw, uform__gemm_dtype_t w_dtype, size_t n, size_t k,
                                   void *memory, size_t capacity, uform__gemm_packed_t *packed, uform_outcome_t *outcome) {
    return uform__gemm_pack_for(&uform__gemm_micro_f32_haswell, w, ldw, w_dtype, n, k, memory, capacity, packed, outcome);
}

static size_t scratch_bytes_haswell(size_t threads) { return uform__gemm_scratch_bytes_for(&uform__gemm_micro_f32_haswell, threads); }

const uform__gemm_kernels_t uform__gemm_kernels_haswell = {
    .cpu_class = UFORM_CPU_CLASS_INTEL_HASWELL,
    .forward_f32 = gemm_f32_haswell,
    .forward_bf16 = gemm_f32_haswell, /* BF16 widened to F32 while packing */
    .backward_x_f32 = gemm_backward_x_f32_haswell,
    .backward_x_bf16 = gemm_backward_x_f32_haswell,
    .backward_w = gemm_backward_w_f32_haswell,
    .backward_w_bf16 = gemm_backward_w_f32_haswell,
    .backward_b = uform__gemm_backward_b_serial,
    .packed_size_f32 = packed_size_haswell,
    .packed_size_bf16 = packed_size_haswell,
    .pack_f32 = pack_haswell,
    .pack_bf16 = pack_haswell,
    .scratch_bytes = scratch_bytes_haswell,
    .epilogue = epilogue_haswell,
};
