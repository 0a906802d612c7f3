/*
 * INTEL_ICELAKE INT8 GEMM: AVX-512 VNNI. vpdpbusd multiplies 64 unsigned bytes by 64 signed
 * bytes and adds each four adjacent products into an s32 lane, without saturation: a 6×64
 * register tile (24 zmm accumulators) takes one K quad per instruction and row, 64 products,
 * twice vdpbf16ps's 32. The weight panels hold qw + 128 as unsigned bytes (biased once, at
 * packing); the activations are the quantizer's signed rows, four bytes broadcast per row, so
 * acc = Σ qw·qx + 128·Σ_k qx and the tile subtracts 128·(the row's Σ q) (gemm_i8.h). Also used
 * by AMD_GENOA, SAPPHIRE, GRANITE and DIAMOND.
 */
#include "kernels/gemm_i8_avx512.h"

#define ICELAKE_TARGET __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx512vnni,fma")))

enum { ICELAKE_MR = 6, ICELAKE_NR = 64 };

/* sums [ROWS][64] = Σ_t (qw + 128)·qx over the quads, for a constant ROWS ≤ 6: per quad four
 * panel vectors, one broadcast per row, 4·ROWS vpdpbusd; the accumulators stay in registers
 * (stored once at the end). A tail of fewer than 6 rows runs only its rows (gemm_skylake.c says
 * why). `ahead`: `ahead_bytes` of the next panel prefetched into L2, at most four lines a quad. */
ICELAKE_TARGET static inline __attribute__((always_inline)) void
sums_i8_icelake(const int rows, size_t quads, const int8_t *a_block, size_t lda, const int8_t *b_panel, int32_t *sums,
                const char *ahead, size_t ahead_bytes) {
    __m512i sum_i32x16[ICELAKE_MR][4];
#pragma GCC unroll 6
    for (int r = 0; r < rows; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) sum_i32x16[r][v] = _mm512_setzero_si512();
    const int8_t *a[ICELAKE_MR];
    for (int r = 0; r < rows; ++r) a[r] = a_block + (size_t)r * lda;
    size_t ahead_step = ahead_bytes ? ((ahead_bytes + 63) / 64 + quads - 1) / quads * 64 : 0, ahead_done = 0;
    for (size_t t = 0; t < quads; ++t) {
        for (size_t offset = ahead_done; offset < ahead_done + ahead_step && offset < ahead_bytes; offset += 64)
            _mm_prefetch(ahead + offset, _MM_HINT_T1);
        ahead_done += ahead_step;
        const int8_t *b = b_panel + t * ICELAKE_NR * 4;
        __m512i b_u8x64[4];
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) b_u8x64[v] = _mm512_loadu_si512(b + 64 * v);
#pragma GCC unroll 6
        for (int r = 0; r < rows; ++r) {
            int32_t quad;
            __builtin_memcpy(&quad, a[r] + 4 * t, sizeof quad);
            __m512i a_i8x64 = _mm512_set1_epi32(quad);
#pragma GCC unroll 4
            for (int v = 0; v < 4; ++v) sum_i32x16[r][v] = _mm512_dpbusd_epi32(sum_i32x16[r][v], b_u8x64[v], a_i8x64);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < rows; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) _mm512_store_si512(sums + r * 64 + 16 * v, sum_i32x16[r][v]);
}

ICELAKE_TARGET static void tile_i8_icelake(size_t quads, const int8_t *a_block, size_t lda, const int8_t *b_panel,
                                           const uform__gemm_i8_tile_out_t *out) {
    int32_t sums[ICELAKE_MR * 64] __attribute__((aligned(64)));
    uform__gemm_i8_prefetch_y(out);
    const char *ahead = out->ahead;
    switch (out->rows) {
#define ICELAKE_ROWS_CASE(count)                                                                       \
    case count: sums_i8_icelake(count, quads, a_block, lda, b_panel, sums, ahead, out->ahead_bytes); break;
        ICELAKE_ROWS_CASE(1)
        ICELAKE_ROWS_CASE(2)
        ICELAKE_ROWS_CASE(3)
        ICELAKE_ROWS_CASE(4)
        ICELAKE_ROWS_CASE(5)
#undef ICELAKE_ROWS_CASE
    default: sums_i8_icelake(ICELAKE_MR, quads, a_block, lda, b_panel, sums, ahead, out->ahead_bytes);
    }
    gemm_i8_finish_tile_avx512(sums, ICELAKE_MR, 1, out, UFORM_CPU_CLASS_INTEL_ICELAKE);
}

ICELAKE_TARGET static void quantize_row_icelake(size_t k, const void *x, uform__gemm_dtype_t x_dtype, int8_t *q,
                                                size_t k_padded, float *scale, int32_t *sum) {
    gemm_i8_quantize_row_avx512(k, x, x_dtype, q, k_padded, scale, sum);
}

static const uform__gemm_i8_micro_t micro_i8_icelake = {
    .mr = ICELAKE_MR, .nr = ICELAKE_NR, .mc = 192, .layout = 104, .biased = 1, .tile = tile_i8_icelake,
    .quantize_row = quantize_row_icelake};

static void quantize_icelake(size_t rows, size_t k, const void *x, size_t ldx, uform__gemm_dtype_t x_dtype, int8_t *q,
                             size_t ldq, float *scale, int32_t *sums, const uform__parallel_t *parallel) {
    uform__gemm_i8_quantize_drive(&micro_i8_icelake, rows, k, x, ldx, x_dtype, q, ldq, scale, sums, parallel);
}

static size_t packed_size_icelake(size_t n, size_t k) { return uform__gemm_i8_packed_size_for(&micro_i8_icelake, n, k); }

static uform_status_t pack_icelake(const int8_t *q, size_t ldq, const float *scale, size_t n, size_t k, void *memory,
                                   size_t capacity, uform__gemm_i8_packed_t *packed, uform_outcome_t *outcome) {
    return uform__gemm_i8_pack_for(&micro_i8_icelake, q, ldq, scale, n, k, memory, capacity, packed, outcome);
}

static uform_status_t forward_icelake(const uform__gemm_i8_forward_t *args, const uform__parallel_t *parallel,
                                      uform_outcome_t *outcome) {
    return uform__gemm_i8_forward_drive(&micro_i8_icelake, args, parallel, outcome);
}

static size_t scratch_bytes_none(size_t threads) { return 0; }

const uform__gemm_i8_kernels_t uform__gemm_i8_kernels_icelake = {
    .cpu_class = UFORM_CPU_CLASS_INTEL_ICELAKE,
    .quantize = quantize_icelake,
    .packed_size = packed_size_icelake,
    .pack = pack_icelake,
    .forward = forward_icelake,
    .scratch_bytes = scratch_bytes_none,
};
