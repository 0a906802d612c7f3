/*
 * INTEL_SKYLAKE GEMM: AVX-512 F. A 14×32 register tile: 28 zmm accumulators, two zmm of B and
 * the A broadcasts folded into the FMAs ({1to16}), so 14 rows × 2 vectors of FMAs per K step
 * against 16 loads. Tails use masked loads and stores. BF16 weights are widened to F32 while
 * packing (exact), so every product is F32. The same family serves ICELAKE (whose VNNI helps
 * only integer products) and the F32 products of GENOA.
 */
#include <immintrin.h>

#include "kernels/gemm.h"

#define SKYLAKE_TARGET __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma")))

enum { SKYLAKE_MR = 14, SKYLAKE_NR = 32 };

static inline __mmask16 columns_mask(size_t cols) { return cols >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cols) - 1u); }

/* C[rows, cols] (+)= A[14][kc] · B[kc][32]. */
SKYLAKE_TARGET static void tile_f32_skylake(size_t kc, const void *a_block, size_t lda, const void *b_panel, float *c,
                                            size_t ldc, size_t rows, size_t cols, int accumulate) {
    const float *a_top = a_block, *a_bottom = a_top + 7 * lda, *b = b_panel;
    __asm__("" : "+r"(a_bottom)); /* a second opaque base: rows 7..13 reuse rows 0..6's offsets */
    __m512 sum_f32x16[SKYLAKE_MR][2];
#pragma GCC unroll 14
    for (int r = 0; r < SKYLAKE_MR; ++r) sum_f32x16[r][0] = sum_f32x16[r][1] = _mm512_setzero_ps();
    /* The C tile is read (or written) after the K loop: start fetching its lines now. */
    for (size_t r = 0; r < rows; ++r) {
        _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + r * ldc + 31), _MM_HINT_T0);
    }
    for (size_t p = 0; p < kc; ++p) {
        __m512 b0_f32x16 = _mm512_loadu_ps(b + p * SKYLAKE_NR), b1_f32x16 = _mm512_loadu_ps(b + p * SKYLAKE_NR + 16);
#pragma GCC unroll 14
        for (int r = 0; r < SKYLAKE_MR; ++r) {
            const float *row = r < 7 ? a_top + r * lda : a_bottom + (r - 7) * lda;
            __m512 a_f32x16 = _mm512_set1_ps(row[p]);
            sum_f32x16[r][0] = _mm512_fmadd_ps(a_f32x16, b0_f32x16, sum_f32x16[r][0]);
            sum_f32x16[r][1] = _mm512_fmadd_ps(a_f32x16, b1_f32x16, sum_f32x16[r][1]);
        }
    }
    __mmask16 mask0 = columns_mask(cols), mask1 = cols > 16 ? columns_mask(cols - 16) : 0;
#pragma GCC unroll 14
    for (int r = 0; r < SKYLAKE_MR; ++r) {
        if ((size_t)r >= rows) break;
        float *row = c + r * ldc;
        __m512 c0_f32x16 = sum_f32x16[r][0], c1_f32x16 = sum_f32x16[r][1];
        if (accumulate) {
            c0_f32x16 = _mm512_add_ps(_mm512_maskz_loadu_ps(mask0, row), c0_f32x16);
            c1_f32x16 = _mm512_add_ps(_mm512_maskz_loadu_ps(mask1, row + 16), c1_f32x16);
        }
        _mm512_mask_storeu_ps(row, mask0, c0_f32x16);
        _mm512_mask_storeu_ps(row + 16, mask1, c1_f32x16);
    }
}

/* GELU on 16 lanes: the same erfc form as gelu_f32x8 in gemm_haswell.c (see there), with
 * vscalefps doing the 2^n scaling, subnormal results included. */
SKYLAKE_TARGET static inline __m512 gelu_f32x16(__m512 x_f32x16) {
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

SKYLAKE_TARGET void uform__gemm_epilogue_skylake(float *c, size_t ldc, size_t rows, size_t cols, const float *bias, int gelu) {
    for (size_t r = 0; r < rows; ++r) {
        float *row = c + r * ldc;
        for (size_t j = 0; j < cols; j += 16) {
            __mmask16 mask = columns_mask(cols - j);
            __m512 value_f32x16 = _mm512_maskz_loadu_ps(mask, row + j);
            if (bias) value_f32x16 = _mm512_add_ps(value_f32x16, _mm512_maskz_loadu_ps(mask, bias + j));
            if (gelu) value_f32x16 = gelu_f32x16(value_f32x16);
            _mm512_mask_storeu_ps(row + j, mask, value_f32x16);
        }
    }
}

const uform__gemm_micro_t uform__gemm_micro_f32_skylake = {
    .panel_dtype = UFORM__GEMM_F32, .mr = SKYLAKE_MR, .nr = SKYLAKE_NR, .kc = 768, .mc = 168, .nc = 1536,
    .layout = 3, .tile = tile_f32_skylake, .epilogue = uform__gemm_epilogue_skylake};

static uform_status_t gemm_f32_skylake(const uform__gemm_forward_t *args, const uform__parallel_t *parallel,
                                       uform_outcome_t *outcome) {
    return uform__gemm_forward_drive(&uform__gemm_micro_f32_skylake, args, parallel, outcome);
}

static uform_status_t gemm_backward_x_f32_skylake(const uform__gemm_backward_x_t *args,
                                                  const uform__parallel_t *parallel, uform_outcome_t *outcome) {
    return uform__gemm_backward_x_drive(&uform__gemm_micro_f32_skylake, args, parallel, outcome);
}

static uform_status_t gemm_backward_w_f32_skylake(const uform__gemm_backward_w_t *args,
                                                  const uform__parallel_t *parallel, uform_outcome_t *outcome) {
    return uform__gemm_backward_w_drive(&uform__gemm_micro_f32_skylake, args, parallel, outcome);
}

static size_t packed_size_skylake(size_t n, size_t k, uform__gemm_dtype_t w_dtype) {
    return uform__gemm_packed_size_for(&uform__gemm_micro_f32_skylake, n, k);
}

static uform_status_t pack_skylake(const void *w, size_t ldw, uform__gemm_dtype_t w_dtype, size_t n, size_t k,
                                   void *memory, size_t capacity, uform__gemm_packed_t *packed, uform_outcome_t *outcome) {
    return uform__gemm_pack_for(&uform__gemm_micro_f32_skylake, w, ldw, w_dtype, n, k, memory, capacity, packed,
                                outcome);
}

static size_t scratch_bytes_skylake(size_t threads) { return uform__gemm_scratch_bytes_for(&uform__gemm_micro_f32_skylake, threads); }

const uform__gemm_kernels_t uform__gemm_kernels_skylake = {
    .cpu_class = UFORM_CPU_CLASS_INTEL_SKYLAKE,
    .forward_f32 = gemm_f32_skylake,
    .forward_bf16 = gemm_f32_skylake, /* BF16 widened to F32 while packing */
    .backward_x_f32 = gemm_backward_x_f32_skylake,
    .backward_x_bf16 = gemm_backward_x_f32_skylake,
    .backward_w = gemm_backward_w_f32_skylake,
    .backward_w_bf16 = gemm_backward_w_f32_skylake,
    .backward_b = uform__gemm_backward_b_serial,
    .packed_size_f32 = packed_size_skylake,
    .packed_size_bf16 = packed_size_skylake,
    .pack_f32 = pack_skylake,
    .pack_bf16 = pack_skylake,
    .scratch_bytes = scratch_bytes_skylake,
};

/* ICELAKE: the same kernels. Its additions (VNNI, VBMI2, VPOPCNTDQ) accelerate integer and bit
 * work, not F32 or BF16 products, so Skylake's tile is the best it runs. */
const uform__gemm_kernels_t uform__gemm_kernels_icelake = {
    .cpu_class = UFORM_CPU_CLASS_INTEL_ICELAKE,
    .forward_f32 = gemm_f32_skylake,
    .forward_bf16 = gemm_f32_skylake,
    .backward_x_f32 = gemm_backward_x_f32_skylake,
    .backward_x_bf16 = gemm_backward_x_f32_skylake,
    .backward_w = gemm_backward_w_f32_skylake,
    .backward_w_bf16 = gemm_backward_w_f32_skylake,
    .backward_b = uform__gemm_backward_b_serial,
    .packed_size_f32 = packed_size_skylake,
    .packed_size_bf16 = packed_size_skylake,
    .pack_f32 = pack_skylake,
    .pack_bf16 = pack_skylake,
    .scratch_bytes = scratch_bytes_skylake,
};
