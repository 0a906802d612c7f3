/*
 * SERIAL GEMM: portable C, the reference every other class is tested against (and which is
 * itself tested against double precision). A 4×16 register tile in plain C through the shared
 * driver; BF16 weights and activations are widened to F32 (exactly) while packing, so every
 * product is an F32 product. The activations are computed in double through libm (GELU's erfc,
 * the sigmoid forms' exp) and rounded once, the most accurate forms.
 */
#include <math.h>

#include "core/outcome.h"
#include "kernels/gemm.h"

/* GELU(x) = 0.5·x·(1 + erf(x/√2)) = 0.5·x·erfc(−x/√2), in double, rounded once to F32. */
float uform__gemm_gelu_f32(float x) {
    double value = (double)x;
    return (float)(0.5 * value * erfc(-value * 0.70710678118654752440));
}

/* x·σ(z) in double: x / (1 + e^(−z)) for z ≥ 0, x·e^z / (1 + e^z) below (e^(−z) would overflow
 * where the result is still a subnormal float); −∞ gives −∞·0 = NaN, as the formula and PyTorch do. */
static float x_sigmoid(double x, double z) {
    if (z >= 0) return (float)(x / (1.0 + exp(-z)));
    double e = exp(z);
    return (float)(x * e / (1.0 + e));
}

/* The activations of gemm.h in double, rounded once. TANH: 0.5·x·(1 + tanh(u)) = x·σ(2u) with
 * 2u = 2·√(2/π)·(x + 0.044715·x³), the form without 1 + tanh's cancellation for negative x. */
float uform__gemm_activation_f32(int kind, float x) {
    double value = (double)x;
    switch (kind) {
    case UFORM__GEMM_GELU_NONE: return x;
    case UFORM__GEMM_GELU_EXACT:
    case UFORM__GEMM_GELU_FAST: return uform__gemm_gelu_f32(x);
    case UFORM__GEMM_GELU_QUICK: return x_sigmoid(value, 1.702 * value);
    case UFORM__GEMM_GELU_TANH:
        return x_sigmoid(value, 1.5957691216057307117 * (value + 0.044715 * value * value * value));
    default: return NAN;
    }
}

enum { SERIAL_MR = 4, SERIAL_NR = 16 };

/* C[rows, cols] (+)= A[4][kc] · B[kc][16], plain multiply-add in K order. */
static void tile_f32_serial(size_t kc, const void *a_block, size_t lda, const void *b_panel, float *c, size_t ldc,
                            size_t rows, size_t cols, int accumulate) {
    const float *a = a_block, *b = b_panel;
    float sum[SERIAL_MR][SERIAL_NR] = {{0}};
    for (size_t p = 0; p < kc; ++p)
        for (size_t r = 0; r < SERIAL_MR; ++r) {
            float a_value = a[r * lda + p];
            for (size_t j = 0; j < SERIAL_NR; ++j) sum[r][j] += a_value * b[p * SERIAL_NR + j];
        }
    for (size_t r = 0; r < rows; ++r)
        for (size_t j = 0; j < cols; ++j) c[r * ldc + j] = accumulate ? c[r * ldc + j] + sum[r][j] : sum[r][j];
}

/* Every activation in double (uform__gemm_activation_f32): exact and fast GELU alike go through
 * libm's double erfc here (fast may be exact). */
static void epilogue_serial(float *c, size_t ldc, size_t rows, size_t cols, const float *bias, int gelu) {
    for (size_t r = 0; r < rows; ++r)
        for (size_t j = 0; j < cols; ++j) {
            float value = c[r * ldc + j] + (bias ? bias[j] : 0.0f);
            c[r * ldc + j] = gelu ? uform__gemm_activation_f32(gelu, value) : value;
        }
}

static const uform__gemm_micro_t micro_f32_serial = {
    .panel_dtype = UFORM__GEMM_F32, .mr = SERIAL_MR, .nr = SERIAL_NR, .kc = 256, .mc = 128, .nc = 1024,
    .layout = 1, .tile = tile_f32_serial, .epilogue = epilogue_serial};

static uform_status_t gemm_f32_serial(const uform__gemm_forward_t *args, const uform__parallel_t *parallel,
                                      uform_outcome_t *outcome) {
    return uform__gemm_forward_drive(&micro_f32_serial, args, parallel, outcome);
}

static uform_status_t gemm_backward_x_f32_serial(const uform__gemm_backward_x_t *args, const uform__parallel_t *parallel,
                                                 uform_outcome_t *outcome) {
    return uform__gemm_backward_x_drive(&micro_f32_serial, args, parallel, outcome);
}

static uform_status_t gemm_backward_w_f32_serial(const uform__gemm_backward_w_t *args, const uform__parallel_t *parallel,
                                                 uform_outcome_t *outcome) {
    return uform__gemm_backward_w_drive(&micro_f32_serial, args, parallel, outcome);
}

/* db[N] += Σ_m dY[m, :]: prongs own column ranges and add rows in order, so the sum of every
 * column is the same whatever the thread count. */
typedef struct backward_b_job_t {
    const uform__gemm_backward_b_t *args;
    size_t prongs;
} backward_b_job_t;

static void backward_b_prong(void *context, size_t thread, size_t prong) {
    const backward_b_job_t *job = context;
    const uform__gemm_backward_b_t *args = job->args;
    size_t begin, end;
    uform__split_range(args->n, job->prongs, prong, &begin, &end);
    /* 64 columns at a time in a local accumulator (which cannot alias dY, so the compiler
     * vectorises the row loop); each column still adds its rows in order. */
    for (size_t j0 = begin; j0 < end; j0 += 64) {
        size_t width = end - j0 < 64 ? end - j0 : 64;
        float sum[64];
        for (size_t t = 0; t < width; ++t) sum[t] = args->db[j0 + t];
        for (size_t m = 0; m < args->m; ++m) {
            const float *row = args->dy + m * args->lddy + j0;
            if (width == 64)
                for (size_t t = 0; t < 64; ++t) sum[t] += row[t];
            else
                for (size_t t = 0; t < width; ++t) sum[t] += row[t];
        }
        for (size_t t = 0; t < width; ++t) args->db[j0 + t] = sum[t];
    }
}

uform_status_t uform__gemm_backward_b_serial(const uform__gemm_backward_b_t *args, const uform__parallel_t *parallel,
                                             uform_outcome_t *outcome) {
    static const char function[] = "uform__gemm_backward_b";
    if (!args) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "the arguments are NULL");
    if (args->m == 0 || args->n == 0) return UFORM_OK;
    if (!args->dy || !args->db)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "'%s' is NULL", args->dy ? "db" : "dy");
    if (args->m > 1 && args->lddy < args->n)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "matrix 'dy' [%zu, %zu]: leading dimension %zu is smaller than its %zu columns", args->m,
                           args->n, args->lddy, args->n);
    /* Column ranges of at least 64 floats (a few cache lines) per prong. */
    size_t threads = uform__parallel_threads(parallel), prongs = (args->n + 63) / 64;
    if (prongs > 4 * threads) prongs = 4 * threads;
    backward_b_job_t job = {.args = args, .prongs = prongs};
    uform__parallel_for(parallel, prongs, backward_b_prong, &job);
    return UFORM_OK;
}

static size_t packed_size_serial(size_t n, size_t k, uform__gemm_dtype_t w_dtype) {
    return uform__gemm_packed_size_for(&micro_f32_serial, n, k);
}

static uform_status_t pack_serial(const void *w, size_t ldw, uform__gemm_dtype_t w_dtype, size_t n, size_t k,
                                  void *memory, size_t capacity, uform__gemm_packed_t *packed, uform_outcome_t *outcome) {
    return uform__gemm_pack_for(&micro_f32_serial, w, ldw, w_dtype, n, k, memory, capacity, packed, outcome);
}

static size_t scratch_bytes_serial(size_t threads) { return uform__gemm_scratch_bytes_for(&micro_f32_serial, threads); }

const uform__gemm_kernels_t uform__gemm_kernels_serial = {
    .cpu_class = UFORM_CPU_CLASS_SERIAL,
    .forward_f32 = gemm_f32_serial,
    .forward_bf16 = gemm_f32_serial, /* BF16 widened to F32 while packing */
    .backward_x_f32 = gemm_backward_x_f32_serial,
    .backward_x_bf16 = gemm_backward_x_f32_serial,
    .backward_w = gemm_backward_w_f32_serial,
    .backward_w_bf16 = gemm_backward_w_f32_serial,
    .backward_b = uform__gemm_backward_b_serial,
    .packed_size_f32 = packed_size_serial,
    .packed_size_bf16 = packed_size_serial,
    .pack_f32 = pack_serial,
    .pack_bf16 = pack_serial,
    .scratch_bytes = scratch_bytes_serial,
    .epilogue = epilogue_serial,
};
