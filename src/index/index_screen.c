/* The screens of F32 rows by BF16 or INT8 products, and their bounds (index_screen.h has the derivation). */
#include "index/index_screen.h"

#include <math.h>
#include <string.h>

#include "core/arena.h"

/* 2^60: norms at or past it count as infinite (their products could overflow F32). */
#define SCREEN_NORM_LIMIT 1152921504606846976.0
#define SCREEN_LANES 16

uform__screen_kind_t uform__screen_choose(uform_cpu_class_t cpu_class, uform_scalar_kind_t scalar, size_t queries,
                                          size_t dims) {
    if (scalar != UFORM_SCALAR_F32 || queries < UFORM__SCREEN_QUERIES) return UFORM__SCREEN_NONE;
    if (uform__gemm_kernels(cpu_class)->cpu_class == UFORM_CPU_CLASS_AMD_GENOA) return UFORM__SCREEN_BF16;
    if (uform__gemm_i8_kernels(cpu_class)->cpu_class != UFORM_CPU_CLASS_SERIAL && dims <= UFORM__GEMM_I8_MAX_K)
        return UFORM__SCREEN_I8;
    return UFORM__SCREEN_NONE;
}

/* `value` (≥ 0 or NaN) as the smallest F32 not below it; INFINITY past the limit or for NaN. */
static float round_up(double value) {
    if (!(value < SCREEN_NORM_LIMIT)) return INFINITY;
    float rounded = (float)value;
    return (double)rounded < value ? nextafterf(rounded, INFINITY) : rounded;
}

/* norms[r] = ‖x_r‖ of rows [rows, dims] (row stride `dims`), rounded up to F32 (index_screen.h). */
static void row_norms(size_t rows, size_t dims, const float *x, float *norms) {
    for (size_t r = 0; r < rows; ++r, x += dims) {
        float lanes[SCREEN_LANES] = {0}; /* independent sums the compiler keeps in vector registers */
        size_t c = 0;
        for (; c + SCREEN_LANES <= dims; c += SCREEN_LANES)
            for (size_t l = 0; l < SCREEN_LANES; ++l) lanes[l] += x[c + l] * x[c + l];
        for (size_t l = 0; c < dims; ++c, ++l) lanes[l] += x[c] * x[c];
        double sum = 0.0;
        for (size_t l = 0; l < SCREEN_LANES; ++l) sum += lanes[l];
        norms[r] = round_up(sqrt(sum));
    }
}

/* The BF16 screen's terms of query q [dims] (index_screen.h). */
static void bf16_terms(size_t dims, const float *q, float *reach, float *spread, float *slack) {
    double sum = 0.0;
    for (size_t c = 0; c < dims; ++c) sum += (double)q[c] * (double)q[c];
    const double u = ldexp(1.0, -8), gamma = (double)(dims + 2) * ldexp(1.0, -24), length = sqrt(sum);
    const double bound = 2.0 * u + u * u + 2.2 * gamma;
    *spread = 0.0f;
    if (!(length < SCREEN_NORM_LIMIT)) {
        *reach = *slack = INFINITY;
        return;
    }
    *reach = round_up(1.01 * bound * (1.0 + 2.0 * gamma) * length + ldexp(1.0, -110));
    *slack = round_up(ldexp(1.0, -60) * length + ldexp(1.0, -100));
}

/* The INT8 screen's terms of query q [dims], quantized to `quantized` [dims] with `scale`
 * (index_screen.h). n and e are summed in double (relative errors below 2^-35 for dims ≤ 2^16,
 * which the factor 1 + 2^-30 covers). */
static void i8_terms(size_t dims, const float *q, const int8_t *quantized, float scale, float *reach, float *spread,
                     float *slack) {
    double squares = 0.0, errors = 0.0;
    for (size_t c = 0; c < dims; ++c) {
        const double error = (double)q[c] - (double)scale * (double)quantized[c]; /* the product is exact */
        squares += (double)q[c] * (double)q[c], errors += error * error;
    }
    const double grow = 1.0 + ldexp(1.0, -30), n = sqrt(squares) * grow, e = sqrt(errors) * grow;
    const double gamma = (double)(dims + 2) * ldexp(1.0, -24), g = 3.01 * ldexp(1.0, -24), eta = g;
    const double margin = ldexp(1.0, -21), half_root = 0.5 * sqrt((double)dims), both = n + e;
    if (!(both < SCREEN_NORM_LIMIT)) { /* huge, infinite or NaN: every row goes to the exact score */
        *reach = *spread = *slack = INFINITY;
        return;
    }
    *reach = round_up(1.01 * (1.0 + 2.0 * gamma) * (gamma * n + e + both * (g + eta + g * eta) + margin * both) +
                      ldexp(1.0, -110));
    *spread = round_up(1.01 * half_root * both * (1.0 + eta + margin));
    *slack = round_up(ldexp(1.0, -53) * both + ldexp(1.0, -100));
}

uform_status_t uform__screen_setup(uform__screen_t *screen, uform__screen_kind_t kind, uform_cpu_class_t cpu_class,
                                   uform_arena_t arena, const float *queries, size_t count, size_t dims, size_t threads,
                                   size_t block_rows, size_t block) {
    memset(screen, 0, sizeof *screen);
    screen->kind = kind, screen->dims = dims, screen->queries = count;
    screen->gemm = uform__gemm_kernels(cpu_class);
    screen->i8 = uform__gemm_i8_kernels(cpu_class);
    screen->nn = uform__nn_kernels(cpu_class);
    const int i8 = kind == UFORM__SCREEN_I8;
    const size_t k_padded = uform__gemm_i8_k_padded(dims);
    int failed = 0;
    float *terms = uform__arena_take(arena, 3 * count * sizeof(float), &failed);
    if (i8) {
        int8_t *q = uform__arena_take(arena, count * k_padded, &failed);
        float *scale = uform__arena_take(arena, count * sizeof(float), &failed);
        int32_t *sums = uform__arena_take(arena, count * sizeof(int32_t), &failed);
        if (failed) return UFORM_OUT_OF_MEMORY;
        screen->i8->quantize(count, dims, queries, dims, UFORM__GEMM_F32, q, k_padded, scale, sums, NULL);
        screen->queries_i8 = (uform__gemm_i8_rows_t){q, k_padded, scale, sums};
        for (size_t j = 0; j < count; ++j)
            i8_terms(dims, queries + j * dims, q + j * k_padded, scale[j], &terms[j], &terms[count + j], &terms[2 * count + j]);
    } else {
        uint16_t *converted = uform__arena_take(arena, count * dims * sizeof(uint16_t), &failed);
        if (failed) return UFORM_OUT_OF_MEMORY;
        screen->nn->f32_to_bf16(count * dims, queries, converted);
        screen->queries_bf16 = converted;
        for (size_t j = 0; j < count; ++j)
            bf16_terms(dims, queries + j * dims, &terms[j], &terms[count + j], &terms[2 * count + j]);
    }
    screen->reach = terms, screen->spread = terms + count, screen->slack = terms + 2 * count;

    screen->packed_bytes = i8 ? screen->i8->packed_size(block_rows, dims)
                              : screen->gemm->packed_size_bf16(block_rows, dims, UFORM__GEMM_BF16);
    screen->scratch_bytes = i8 ? screen->i8->scratch_bytes(1) : screen->gemm->scratch_bytes(1);
    const size_t row_bytes = i8 ? k_padded : dims * sizeof(uint16_t);
    screen->norms = uform__arena_take(arena, threads * sizeof(float *), &failed);
    screen->spreads = uform__arena_take(arena, threads * sizeof(float *), &failed);
    screen->rows = uform__arena_take(arena, threads * sizeof(void *), &failed);
    screen->packed_memory = uform__arena_take(arena, threads * sizeof(void *), &failed);
    screen->scratch = uform__arena_take(arena, threads * sizeof(void *), &failed);
    screen->packed = uform__arena_take(arena, threads * sizeof *screen->packed, &failed);
    screen->packed_i8 = uform__arena_take(arena, threads * sizeof *screen->packed_i8, &failed);
    for (size_t t = 0; t < threads && !failed; ++t) {
        screen->norms[t] = uform__arena_take(arena, block * sizeof(float), &failed);
        screen->spreads[t] = uform__arena_take(arena, block * sizeof(float), &failed);
        screen->rows[t] = uform__arena_take(arena, block_rows * row_bytes, &failed);
        screen->packed_memory[t] = uform__arena_take(arena, screen->packed_bytes, &failed);
        screen->scratch[t] = screen->scratch_bytes ? uform__arena_take(arena, screen->scratch_bytes, &failed) : NULL;
        if (!failed) memset(screen->spreads[t], 0, block * sizeof(float)); /* BF16's s_x, and past the rows */
    }
    return failed ? UFORM_OUT_OF_MEMORY : UFORM_OK;
}

uform_status_t uform__screen_block(const uform__screen_t *screen, size_t thread, size_t rows, const float *f32_rows) {
    const size_t dims = screen->dims;
    float *norms = screen->norms[thread];
    row_norms(rows, dims, f32_rows, norms);
    for (size_t r = rows; r % 16; ++r) norms[r] = 0.0f; /* the 16-row test reads to a multiple of 16 */
    if (screen->kind == UFORM__SCREEN_I8) {
        const size_t k_padded = uform__gemm_i8_k_padded(dims);
        int8_t *quantized = screen->rows[thread];
        float *scale = screen->spreads[thread];
        screen->i8->quantize(rows, dims, f32_rows, dims, UFORM__GEMM_F32, quantized, k_padded, scale, NULL, NULL);
        for (size_t r = rows; r % 16; ++r) scale[r] = 0.0f;
        return screen->i8->pack(quantized, k_padded, scale, rows, dims, screen->packed_memory[thread], screen->packed_bytes,
                                &screen->packed_i8[thread], NULL);
    }
    /* Rounded to BF16 by the vector converter first: the GEMM's pack from F32 rows is a scalar loop. */
    uint16_t *rounded = screen->rows[thread];
    screen->nn->f32_to_bf16(rows * dims, f32_rows, rounded);
    return screen->gemm->pack_bf16(rounded, dims, UFORM__GEMM_BF16, rows, dims, screen->packed_memory[thread],
                                   screen->packed_bytes, &screen->packed[thread], NULL);
}

uform_status_t uform__screen_product(const uform__screen_t *screen, size_t thread, size_t rows, size_t group_first,
                                     size_t group, float *approx, size_t ld) {
    const size_t dims = screen->dims;
    if (screen->kind == UFORM__SCREEN_I8) {
        /* approx [group, rows] = fl(fl(Σ Q·X)·fl(s_q·s_x)): the int32 sums exact */
        const uform__gemm_i8_rows_t *all = &screen->queries_i8;
        uform__gemm_i8_forward_t args;
        memset(&args, 0, sizeof args);
        args.m = group, args.n = rows, args.k = dims;
        args.x = (uform__gemm_i8_rows_t){all->q + group_first * all->ld, all->ld, all->scale + group_first, all->sums + group_first};
        args.packed = &screen->packed_i8[thread];
        args.y = approx, args.ldy = ld, args.output = UFORM__GEMM_I8_F32;
        args.scratch = screen->scratch[thread], args.scratch_capacity = screen->scratch_bytes;
        return screen->i8->forward(&args, NULL, NULL);
    }
    /* approx [group, rows] = queries [group, dims] · blockᵀ, both rounded to BF16, summed in F32 */
    uform__gemm_forward_t args;
    memset(&args, 0, sizeof args);
    args.m = group, args.n = rows, args.k = dims;
    args.x_dtype = UFORM__GEMM_BF16, args.x = screen->queries_bf16 + group_first * dims, args.ldx = dims;
    args.w_dtype = UFORM__GEMM_BF16, args.ldw = dims, args.packed = &screen->packed[thread];
    args.y = approx, args.ldy = ld;
    args.scratch = screen->scratch[thread], args.scratch_capacity = screen->scratch_bytes;
    return screen->gemm->forward_bf16(&args, NULL, NULL);
}
