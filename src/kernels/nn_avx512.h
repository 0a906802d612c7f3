/*
 * The AVX-512 F register pieces the SKYLAKE NN kernels (nn_skylake.c), GENOA's BF16 attention
 * (nn_attention_genoa.c) and the AVX-512 GEMM packing (gemm_avx512.h: the 16×16 transpose) share.
 * Included only by those files: static inline functions with a target attribute that is a subset
 * of every caller's target (SKYLAKE's adds F16C, GENOA's AVX512-BF16, which these pieces do not
 * use), so they inline into any of them.
 */
#ifndef UFORM_KERNELS_NN_AVX512_H
#define UFORM_KERNELS_NN_AVX512_H

#include <immintrin.h>
#include <stddef.h>

#define NN_AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma")))

/* The mask of the first min(count, 16) lanes. */
NN_AVX512_TARGET static inline __mmask16 nn_tail_mask16(size_t count) {
    return count >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << count) - 1u);
}

/* 2^t for the attention and softmax exponentials (exp(x) as 2^(x·log2 e), the log2 e folded
 * into the caller's scale or shift): t = n + f with n = round(t), |f| ≤ 1/2; 2^f by a degree-5
 * polynomial fitted for relative error on that interval (7.5e-8; 1.5e-7 with the coefficients
 * in F32), then times 2^n exactly with VSCALEFPS, which gives 0 below the subnormals. t is
 * clamped at −150 so that −inf gives 0 rather than NaN; a NaN stays NaN (VMAXPS returns its
 * second operand when one is NaN). Ten operations against nn_skylake.c's exp_f32x16's sixteen;
 * GELU keeps exp_f32x16. Tested against libm in test_nn_exp.c. */
NN_AVX512_TARGET static inline __m512 nn_exp2_f32x16(__m512 t_f32x16) {
    t_f32x16 = _mm512_max_ps(_mm512_set1_ps(-150.0f), t_f32x16);
    __m512 n_f32x16 = _mm512_roundscale_ps(t_f32x16, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 f_f32x16 = _mm512_sub_ps(t_f32x16, n_f32x16);
    __m512 p_f32x16 = _mm512_set1_ps(1.327644451521337e-3f);
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, f_f32x16, _mm512_set1_ps(9.67553723603487e-3f));
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, f_f32x16, _mm512_set1_ps(5.550713464617729e-2f));
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, f_f32x16, _mm512_set1_ps(2.4022120237350464e-1f));
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, f_f32x16, _mm512_set1_ps(6.931469440460205e-1f));
    p_f32x16 = _mm512_fmadd_ps(p_f32x16, f_f32x16, _mm512_set1_ps(1.0000001192092896f));
    return _mm512_scalef_ps(p_f32x16, n_f32x16);
}

/* rows[16] holds a 16×16 block of 32-bit values, rows[r] lane c = block[r][c]; writes
 * columns[c] lane r = block[r][c]. Three shuffle stages through registers: pairs of rows
 * interleaved, then quads, then 128-bit lanes across four vectors. It only moves bits, so it
 * serves F32 values and BF16 pairs alike. The loops are fully unrolled so that, once inlined,
 * both arrays live in registers; the result has its own array because writing it over the input
 * made the SKYLAKE transpose ~1.5% slower in a benchmark. */
NN_AVX512_TARGET static inline void nn_transpose_16x16_f32x16(const __m512 rows[16], __m512 columns[16]) {
    __m512 t_f32x16[16], u_f32x16[16];
    /* t[2i], t[2i+1]: rows 2i and 2i+1 interleaved, low and high halves of each 128-bit lane. */
#pragma GCC unroll 8
    for (size_t i = 0; i < 8; ++i) {
        t_f32x16[2 * i] = _mm512_unpacklo_ps(rows[2 * i], rows[2 * i + 1]);
        t_f32x16[2 * i + 1] = _mm512_unpackhi_ps(rows[2 * i], rows[2 * i + 1]);
    }
    /* u[4g + j], 128-bit lane L: rows 4g .. 4g+3 of column 4L + j. */
#pragma GCC unroll 4
    for (size_t g = 0; g < 4; ++g) {
        u_f32x16[4 * g + 0] = _mm512_shuffle_ps(t_f32x16[4 * g], t_f32x16[4 * g + 2], 0x44);
        u_f32x16[4 * g + 1] = _mm512_shuffle_ps(t_f32x16[4 * g], t_f32x16[4 * g + 2], 0xEE);
        u_f32x16[4 * g + 2] = _mm512_shuffle_ps(t_f32x16[4 * g + 1], t_f32x16[4 * g + 3], 0x44);
        u_f32x16[4 * g + 3] = _mm512_shuffle_ps(t_f32x16[4 * g + 1], t_f32x16[4 * g + 3], 0xEE);
    }
    /* Column 4L + j: lane L of u[j], u[4 + j], u[8 + j], u[12 + j], in that order. */
#pragma GCC unroll 4
    for (size_t j = 0; j < 4; ++j) {
        __m512 low01_f32x16 = _mm512_shuffle_f32x4(u_f32x16[j], u_f32x16[4 + j], 0x44);
        __m512 high01_f32x16 = _mm512_shuffle_f32x4(u_f32x16[j], u_f32x16[4 + j], 0xEE);
        __m512 low23_f32x16 = _mm512_shuffle_f32x4(u_f32x16[8 + j], u_f32x16[12 + j], 0x44);
        __m512 high23_f32x16 = _mm512_shuffle_f32x4(u_f32x16[8 + j], u_f32x16[12 + j], 0xEE);
        columns[j] = _mm512_shuffle_f32x4(low01_f32x16, low23_f32x16, 0x88);
        columns[4 + j] = _mm512_shuffle_f32x4(low01_f32x16, low23_f32x16, 0xDD);
        columns[8 + j] = _mm512_shuffle_f32x4(high01_f32x16, high23_f32x16, 0x88);
        columns[12 + j] = _mm512_shuffle_f32x4(high01_f32x16, high23_f32x16, 0xDD);
    }
}

#endif
