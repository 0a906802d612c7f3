/*
 * INTEL_SKYLAKE INT8 GEMM: AVX-512 BW, before VNNI. vpmaddubsw multiplies unsigned by signed
 * bytes and adds adjacent pairs into s16 with saturation, vpmaddwd against ones adds those
 * pairs into s32: four K per lane, as vpdpbusd does in one instruction. So that the s16 step
 * never saturates, its unsigned operand is |qx| (≤ 127) and qx's sign is moved onto the weight
 * (AVX-512 has no vpsignb: a byte-masked 0 − qw where qx < 0, the mask from vpmovb2m), which
 * keeps every pair within 2·127·127 = 32,258 (gemm_i8.h). A 4×64 tile: 16 zmm accumulators,
 * four weight vectors, and the broadcast, its magnitude and a temporary per row.
 */
#include "kernels/gemm_i8_avx512.h"

#define SKYLAKE_TARGET __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma")))

enum { SKYLAKE_MR = 4, SKYLAKE_NR = 64 };

/* sums [4][64] = Σ_t qw·qx over the quads, the accumulators in registers (stored once at the end). */
SKYLAKE_TARGET static inline __attribute__((always_inline)) void
sums_i8_skylake(size_t quads, const int8_t *a_block, size_t lda, size_t rows, const int8_t *b_panel, int32_t *sums) {
    __m512i sum_i32x16[SKYLAKE_MR][4];
#pragma GCC unroll 4
    for (int r = 0; r < SKYLAKE_MR; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) sum_i32x16[r][v] = _mm512_setzero_si512();
    const int8_t *a[SKYLAKE_MR];
    for (int r = 0; r < SKYLAKE_MR; ++r) a[r] = uform__gemm_i8_row(a_block, lda, rows, (size_t)r);
    const __m512i ones_i16x32 = _mm512_set1_epi16(1), zero = _mm512_setzero_si512();
    for (size_t t = 0; t < quads; ++t) {
        const int8_t *b = b_panel + t * SKYLAKE_NR * 4;
        __m512i w_i8x64[4];
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) w_i8x64[v] = _mm512_loadu_si512(b + 64 * v);
#pragma GCC unroll 4
        for (int r = 0; r < SKYLAKE_MR; ++r) {
            int32_t quad;
            __builtin_memcpy(&quad, a[r] + 4 * t, sizeof quad);
            __m512i x_i8x64 = _mm512_set1_epi32(quad);
            __m512i magnitude_u8x64 = _mm512_abs_epi8(x_i8x64);
            __mmask64 negative = _mm512_movepi8_mask(x_i8x64);
#pragma GCC unroll 4
            for (int v = 0; v < 4; ++v) {
                __m512i signed_i8x64 = _mm512_mask_sub_epi8(w_i8x64[v], negative, zero, w_i8x64[v]);
                __m512i pairs_i16x32 = _mm512_maddubs_epi16(magnitude_u8x64, signed_i8x64);
                sum_i32x16[r][v] = _mm512_add_epi32(sum_i32x16[r][v], _mm512_madd_epi16(pairs_i16x32, ones_i16x32));
            }
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < SKYLAKE_MR; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) _mm512_store_si512(sums + r * 64 + 16 * v, sum_i32x16[r][v]);
}

SKYLAKE_TARGET static void tile_i8_skylake(size_t quads, const int8_t *a_block, size_t lda, const int8_t *b_panel,
                                           const uform__gemm_i8_tile_out_t *out) {
    int32_t sums[SKYLAKE_MR * 64] __attribute__((aligned(64)));
    uform__gemm_i8_prefetch_y(out);
    sums_i8_skylake(quads, a_block, lda, out->rows, b_panel, sums);
    gemm_i8_finish_tile_avx512(sums, SKYLAKE_MR, 0, out, UFORM_CPU_CLASS_INTEL_SKYLAKE);
}

SKYLAKE_TARGET static void quantize_row_skylake(size_t k, const void *x, uform__gemm_dtype_t x_dtype, int8_t *q,
                                                size_t k_padded, float *scale, int32_t *sum) {
    gemm_i8_quantize_row_avx512(k, x, x_dtype, q, k_padded, scale, sum);
}

static const uform__gemm_i8_micro_t micro_i8_skylake = {
    .mr = SKYLAKE_MR, .nr = SKYLAKE_NR, .mc = 192, .layout = 103, .biased = 0, .tile = tile_i8_skylake,
    .quantize_row = quantize_row_skylake};

static void quantize_skylake(size_t rows, size_t k, const void *x, size_t ldx, uform__gemm_dtype_t x_dtype, int8_t *q,
                             size_t ldq, float *scale, int32_t *sums, const uform__parallel_t *parallel) {
    uform__gemm_i8_quantize_drive(&micro_i8_skylake, rows, k, x, ldx, x_dtype, q, ldq, scale, sums, parallel);
}

static size_t packed_size_skylake(size_t n, size_t k) { return uform__gemm_i8_packed_size_for(&micro_i8_skylake, n, k); }

static uform_status_t pack_skylake(const int8_t *q, size_t ldq, const float *scale, size_t n, size_t k, void *memory,
                                   size_t capacity, uform__gemm_i8_packed_t *packed, uform_outcome_t *outcome) {
    return uform__gemm_i8_pack_for(&micro_i8_skylake, q, ldq, scale, n, k, memory, capacity, packed, outcome);
}

static uform_status_t forward_skylake(const uform__gemm_i8_forward_t *args, const uform__parallel_t *parallel,
                                      uform_outcome_t *outcome) {
    return uform__gemm_i8_forward_drive(&micro_i8_skylake, args, parallel, outcome);
}

static size_t scratch_bytes_none(size_t threads) { return 0; }

const uform__gemm_i8_kernels_t uform__gemm_i8_kernels_skylake = {
    .cpu_class = UFORM_CPU_CLASS_INTEL_SKYLAKE,
    .quantize = quantize_skylake,
    .packed_size = packed_size_skylake,
    .pack = pack_skylake,
    .forward = forward_skylake,
    .scratch_bytes = scratch_bytes_none,
};
