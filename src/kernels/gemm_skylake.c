/*
 * INTEL_SKYLAKE GEMM: AVX-512 F. A 6×64 register tile: 24 zmm accumulators, four zmm of B and
 * one broadcast of A per row, so 24 FMAs per K step against 10 loads (1–2% faster here than a
 * 14×32 tile, which needs 16 loads per 28 FMAs). Tails use masked loads and stores. BF16
 * weights are widened to F32 while packing (exact), so every product is F32. The same family
 * serves ICELAKE (whose VNNI helps only integer products) and the F32 products of GENOA.
 */
#include <immintrin.h>

#include "kernels/gemm.h"

#define SKYLAKE_TARGET __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma")))

enum { SKYLAKE_MR = 6, SKYLAKE_NR = 64 };

static inline __mmask16 columns_mask(size_t cols) { return cols >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cols) - 1u); }

/*
 * C[rows, cols] (+)= A[6][kc] · B[kc][64]: per K step four zmm of B, one broadcast per row, 24
 * FMAs into 24 accumulators.
 */
SKYLAKE_TARGET static void tile_f32_skylake(size_t kc, const void *a_block, size_t lda, const void *b_panel, float *c,
                                            size_t ldc, size_t rows, size_t cols, int accumulate) {
    const float *a = a_block, *b = b_panel;
    __m512 sum_f32x16[SKYLAKE_MR][4];
#pragma GCC unroll 6
    for (int r = 0; r < SKYLAKE_MR; ++r)
        for (int v = 0; v < 4; ++v) sum_f32x16[r][v] = _mm512_setzero_ps();
    /* The C tile is read (or written) after the K loop: start fetching its lines now. */
    for (size_t r = 0; r < rows; ++r)
        for (int v = 0; v < 4; ++v) _mm_prefetch((const char *)(c + r * ldc + 16 * v), _MM_HINT_T0);
    for (size_t p = 0; p < kc; ++p) {
        __m512 b_f32x16[4];
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) b_f32x16[v] = _mm512_loadu_ps(b + p * SKYLAKE_NR + 16 * v);
#pragma GCC unroll 6
        for (int r = 0; r < SKYLAKE_MR; ++r) {
            __m512 a_f32x16 = _mm512_set1_ps(a[r * lda + p]);
#pragma GCC unroll 4
            for (int v = 0; v < 4; ++v) sum_f32x16[r][v] = _mm512_fmadd_ps(a_f32x16, b_f32x16[v], sum_f32x16[r][v]);
        }
    }
    __mmask16 mask[4];
    for (int v = 0; v < 4; ++v) mask[v] = cols > (size_t)(16 * v) ? columns_mask(cols - 16 * v) : 0;
#pragma GCC unroll 6
    for (int r = 0; r < SKYLAKE_MR; ++r) {
        if ((size_t)r >= rows) break;
        float *row = c + r * ldc;
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) {
            __m512 value_f32x16 = sum_f32x16[r][v];
            if (accumulate) value_f32x16 = _mm512_add_ps(_mm512_maskz_loadu_ps(mask[v], row + 16 * v), value_f32x16);
            _mm512_mask_storeu_ps(row + 16 * v, mask[v], value_f32x16);
        }
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
    .layout = 6, .tile = tile_f32_skylake, .epilogue = uform__gemm_epilogue_skylake};

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
