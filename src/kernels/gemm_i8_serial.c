/*
 * SERIAL INT8 GEMM: portable C, the reference every other class's int8 kernels are tested
 * against (itself tested against 64-bit integer sums and a double-precision epilogue). A 4×16
 * tile of int32 sums over unbiased panels; the quantizer is the scalar one of gemm_i8.c.
 */
#include "kernels/gemm_i8.h"

enum { SERIAL_MR = 4, SERIAL_NR = 16 };

/* sums[r][j] = Σ_t Σ_i a_r[4t + i] · panel[t][j][i], in int32. */
static void tile_i8_serial(size_t quads, const int8_t *a_block, size_t lda, const int8_t *b_panel,
                           const uform__gemm_i8_tile_out_t *out) {
    int32_t sums[SERIAL_MR * SERIAL_NR] = {0};
    for (size_t t = 0; t < quads; ++t) {
        const int8_t *b = b_panel + t * SERIAL_NR * 4;
        for (size_t r = 0; r < SERIAL_MR; ++r) {
            const int8_t *a = uform__gemm_i8_row(a_block, lda, out->rows, r) + 4 * t;
            for (size_t j = 0; j < SERIAL_NR; ++j)
                sums[r * SERIAL_NR + j] += a[0] * b[4 * j] + a[1] * b[4 * j + 1] + a[2] * b[4 * j + 2] + a[3] * b[4 * j + 3];
        }
    }
    uform__gemm_i8_tile_store(sums, SERIAL_NR, out, uform__gemm_kernels(UFORM_CPU_CLASS_SERIAL));
}

static const uform__gemm_i8_micro_t micro_i8_serial = {
    .mr = SERIAL_MR, .nr = SERIAL_NR, .mc = 128, .layout = 101, .biased = 0, .tile = tile_i8_serial,
    .quantize_row = uform__gemm_i8_quantize_row_serial};

static void quantize_serial(size_t rows, size_t k, const void *x, size_t ldx, uform__gemm_dtype_t x_dtype, int8_t *q,
                            size_t ldq, float *scale, int32_t *sums, const uform__parallel_t *parallel) {
    uform__gemm_i8_quantize_drive(&micro_i8_serial, rows, k, x, ldx, x_dtype, q, ldq, scale, sums, parallel);
}

static size_t packed_size_serial(size_t n, size_t k) { return uform__gemm_i8_packed_size_for(&micro_i8_serial, n, k); }

static uform_status_t pack_serial(const int8_t *q, size_t ldq, const float *scale, size_t n, size_t k, void *memory,
                                  size_t capacity, uform__gemm_i8_packed_t *packed, uform_outcome_t *outcome) {
    return uform__gemm_i8_pack_for(&micro_i8_serial, q, ldq, scale, n, k, memory, capacity, packed, outcome);
}

static uform_status_t forward_serial(const uform__gemm_i8_forward_t *args, const uform__parallel_t *parallel,
                                     uform_outcome_t *outcome) {
    return uform__gemm_i8_forward_drive(&micro_i8_serial, args, parallel, outcome);
}

static size_t scratch_bytes_none(size_t threads) { return 0; }

const uform__gemm_i8_kernels_t uform__gemm_i8_kernels_serial = {
    .cpu_class = UFORM_CPU_CLASS_SERIAL,
    .quantize = quantize_serial,
    .packed_size = packed_size_serial,
    .pack = pack_serial,
    .forward = forward_serial,
    .scratch_bytes = scratch_bytes_none,
};
