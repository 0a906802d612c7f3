/*
 * A pre-norm transformer block, F32, expressed twice and timed side by side in one run:
 *   1. as a tensor program (built with uform_program_builder_*, compiled and invoked by the session);
 *   2. written directly in C over the very kernels the session binds (uform__session_kernels_bind:
 *      the same matmul with its bias/GELU epilogue, layer norm and softmax), with strided views
 *      instead of copies where C allows it (q, k and v read in place from the qkv rows).
 * Block (T tokens, width D, H heads of width D/H, MLP 4D), weights in torch.nn.Linear layout [out, in]:
 *   h = layer_norm(x); qkv = h·Wqkvᵀ + bqkv; per head p = softmax(q·kᵀ/√(D/H)); o = p·v;
 *   x1 = x + o·Woᵀ + bo; y = x1 + gelu(layer_norm(x1)·W1ᵀ + b1)·W2ᵀ + b2.
 * Prints the median and fastest wall time and the median thread CPU time of each, the ratios (direct / program: 1.0 means the program runs as fast
 * as hand-written C; the target is >= 0.8), the compile time, and writes bench/results/session.json.
 * Usage: bench_session [T] [D] [H] [repeats] [json path]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"
#include "session/session.h"
#include "uform/uform.h"

/* The direct C loops get the same vectoriser the session's elementwise file asks for, so the
 * comparison is kernel for kernel and loop for loop. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

/* CPU time of this thread: on a shared machine it leaves out the time other processes held the
 * core, so it is the steadier figure for a single-threaded comparison. */
static double thread_cpu_seconds(void) { return bench_clock_seconds(CLOCK_THREAD_CPUTIME_ID); }

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct block_t {
    size_t T, D, H, F;
    float *x, *ln1_w, *ln1_b, *w_qkv, *b_qkv, *w_o, *b_o, *ln2_w, *ln2_b, *w_1, *b_1, *w_2, *b_2;
} block_t;

static float *random_floats(size_t n, float scale, uint64_t *state) {
    float *p = (float *)aligned_alloc(64, (n * sizeof(float) + 63) & ~(size_t)63);
    for (size_t i = 0; i < n; ++i) {
        *state = *state * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = scale * ((float)(*state >> 40) / 8388608.0f - 1.0f);
    }
    return p;
}

/* ---- the program ---------------------------------------------------------------------- */

#define OP(opcode, operands, count, attributes, attribute_count, result)                                    \
    uform_program_builder_operation(builder, opcode, operands, count, attributes, attribute_count, 0,      \
                                     UFORM_SESSION_INFER, NULL, result)

static int build_program(const block_t *b, uform_program_builder_t builder) {
    size_t T = b->T, D = b->D, H = b->H, F = b->F, hd = D / H;
    const uform_session_dtype_t f = UFORM_SESSION_DTYPE_F32;
    uint32_t x, ln1_w, ln1_b, w_qkv, b_qkv, w_o, b_o, ln2_w, ln2_b, w_1, b_1, w_2, b_2, scale;
    size_t td[2] = {T, D}, d[1] = {D}, qkv_w[2] = {3 * D, D}, qkv_b[1] = {3 * D}, dd[2] = {D, D}, fd[2] = {F, D},
           fb[1] = {F}, df[2] = {D, F};
    uform_program_builder_parameter(builder, "x", f, 2, td, &x);
    uform_program_builder_parameter(builder, "ln1.weight", f, 1, d, &ln1_w);
    uform_program_builder_parameter(builder, "ln1.bias", f, 1, d, &ln1_b);
    uform_program_builder_parameter(builder, "qkv.weight", f, 2, qkv_w, &w_qkv);
    uform_program_builder_parameter(builder, "qkv.bias", f, 1, qkv_b, &b_qkv);
    uform_program_builder_parameter(builder, "proj.weight", f, 2, dd, &w_o);
    uform_program_builder_parameter(builder, "proj.bias", f, 1, d, &b_o);
    uform_program_builder_parameter(builder, "ln2.weight", f, 1, d, &ln2_w);
    uform_program_builder_parameter(builder, "ln2.bias", f, 1, d, &ln2_b);
    uform_program_builder_parameter(builder, "fc1.weight", f, 2, fd, &w_1);
    uform_program_builder_parameter(builder, "fc1.bias", f, 1, fb, &b_1);
    uform_program_builder_parameter(builder, "fc2.weight", f, 2, df, &w_2);
    uform_program_builder_parameter(builder, "fc2.bias", f, 1, d, &b_2);
    float inverse_sqrt = 1.0f / sqrtf((float)hd);
    uform_program_builder_constant(builder, f, 0, NULL, &inverse_sqrt, 4, &scale);

    double eps = 1e-5;
    int64_t norm[2] = {1, 0}, linear[2] = {0, 1}, plain[2] = {0, 0}, heads_first[3] = {1, 0, 2}, last = 2;
    memcpy(&norm[1], &eps, 8);
    uint32_t h, qkv, parts[3], s, p, o, v2, ops[3];
    ops[0] = x, ops[1] = ln1_w, ops[2] = ln1_b;
    OP(UFORM_SESSION_OP_LAYER_NORM, ops, 3, norm, 2, &h);
    ops[0] = h, ops[1] = w_qkv;
    OP(UFORM_SESSION_OP_MATMUL, ops, 2, linear, 2, &qkv);
    ops[0] = qkv, ops[1] = b_qkv;
    OP(UFORM_SESSION_OP_ADD, ops, 2, NULL, 0, &qkv);
    for (int part = 0; part < 3; ++part) { // q, k, v: [T, D] slices -> [T, H, hd] -> [H, T, hd]
        int64_t slice[6] = {0, (int64_t)T, 1, (int64_t)(part * D), (int64_t)((part + 1) * D), 1};
        size_t thd[3] = {T, H, hd};
        OP(UFORM_SESSION_OP_SLICE, &qkv, 1, slice, 6, &v2);
        uform_program_builder_operation(builder, UFORM_SESSION_OP_RESHAPE, &v2, 1, NULL, 0, f, 3, thd, &v2);
        OP(UFORM_SESSION_OP_TRANSPOSE, &v2, 1, heads_first, 3, &parts[part]);
    }
    ops[0] = parts[0], ops[1] = parts[1];
    OP(UFORM_SESSION_OP_MATMUL, ops, 2, linear, 2, &s); // [H, T, T]
    ops[0] = s, ops[1] = scale;
    OP(UFORM_SESSION_OP_MUL, ops, 2, NULL, 0, &s);
    OP(UFORM_SESSION_OP_SOFTMAX, &s, 1, &last, 1, &p);
    ops[0] = p, ops[1] = parts[2];
    OP(UFORM_SESSION_OP_MATMUL, ops, 2, plain, 2, &o); // [H, T, hd]
    OP(UFORM_SESSION_OP_TRANSPOSE, &o, 1, heads_first, 3, &o); // [T, H, hd]
    uform_program_builder_operation(builder, UFORM_SESSION_OP_RESHAPE, &o, 1, NULL, 0, f, 2, td, &o);
    ops[0] = o, ops[1] = w_o;
    OP(UFORM_SESSION_OP_MATMUL, ops, 2, linear, 2, &o);
    ops[0] = o, ops[1] = b_o;
    OP(UFORM_SESSION_OP_ADD, ops, 2, NULL, 0, &o);
    uint32_t x1, m, y;
    ops[0] = x, ops[1] = o;
    OP(UFORM_SESSION_OP_ADD, ops, 2, NULL, 0, &x1);
    ops[0] = x1, ops[1] = ln2_w, ops[2] = ln2_b;
    OP(UFORM_SESSION_OP_LAYER_NORM, ops, 3, norm, 2, &h);
    ops[0] = h, ops[1] = w_1;
    OP(UFORM_SESSION_OP_MATMUL, ops, 2, linear, 2, &m);
    ops[0] = m, ops[1] = b_1;
    OP(UFORM_SESSION_OP_ADD, ops, 2, NULL, 0, &m);
    OP(UFORM_SESSION_OP_GELU, &m, 1, NULL, 0, &m);
    ops[0] = m, ops[1] = w_2;
    OP(UFORM_SESSION_OP_MATMUL, ops, 2, linear, 2, &y);
    ops[0] = y, ops[1] = b_2;
    OP(UFORM_SESSION_OP_ADD, ops, 2, NULL, 0, &y);
    ops[0] = x1, ops[1] = y;
    uform_session_status_t status = OP(UFORM_SESSION_OP_ADD, ops, 2, NULL, 0, &y);
    uform_program_builder_output(builder, "y", y);
    if (status != UFORM_SESSION_OK) fprintf(stderr, "builder: %s\n", uform_program_builder_cause(builder));
    return status == UFORM_SESSION_OK;
}

/* ---- the same block in C -------------------------------------------------------------- */

typedef struct direct_t {
    float *h, *qkv, *q, *k, *vt, *s, *o, *attn, *x1, *m, *mean, *rstd;
} direct_t;

static void direct_block(const uform__session_kernels_t *kr, const block_t *b, direct_t *w, float *y) {
    size_t T = b->T, D = b->D, H = b->H, F = b->F, hd = D / H;
    kr->layer_norm_f32(kr, T, D, b->x, b->ln1_w, b->ln1_b, 1e-5f, w->h, w->mean, w->rstd);
    kr->matmul_f32(kr, T, 3 * D, D, w->h, D, b->w_qkv, D, w->qkv, 3 * D, b->b_qkv, 0);
    float scale = 1.0f / sqrtf((float)hd);
    for (size_t head = 0; head < H; ++head) {
        const float *q = w->qkv + head * hd, *k = w->qkv + D + head * hd, *v = w->qkv + 2 * D + head * hd;
        kr->matmul_f32(kr, T, T, hd, q, 3 * D, k, 3 * D, w->s, T, NULL, 0); // q·kᵀ straight from the qkv rows
        for (size_t i = 0; i < T * T; ++i) w->s[i] *= scale;
        kr->softmax_f32(kr, T, T, w->s, w->s);
        for (size_t t = 0; t < T; ++t) // vᵀ [hd, T]: the kernel takes its second operand as [n, k]
            for (size_t e = 0; e < hd; ++e) w->vt[e * T + t] = v[t * 3 * D + e];
        kr->matmul_f32(kr, T, hd, T, w->s, T, w->vt, T, w->o + head * hd, D, NULL, 0);
    }
    kr->matmul_f32(kr, T, D, D, w->o, D, b->w_o, D, w->attn, D, b->b_o, 0);
    for (size_t i = 0; i < T * D; ++i) w->x1[i] = b->x[i] + w->attn[i];
    kr->layer_norm_f32(kr, T, D, w->x1, b->ln2_w, b->ln2_b, 1e-5f, w->h, w->mean, w->rstd);
    kr->matmul_f32(kr, T, F, D, w->h, D, b->w_1, D, w->m, F, b->b_1, 1); // bias and GELU in the GEMM epilogue
    kr->matmul_f32(kr, T, D, F, w->m, F, b->w_2, F, y, D, b->b_2, 0);
    for (size_t i = 0; i < T * D; ++i) y[i] += w->x1[i];
}

/*
 * A second, memory-bound figure: y = gelu(x · a + b) − x over x [R, C] with a, b [C] broadcast,
 * as a program (one fused pass, blocks of 256 in registers) and as C (per row: the affine loop,
 * then the same GELU kernel, then the subtraction). Answers medians, fastest calls and CPU-time
 * medians, in seconds.
 */
static void elementwise_figure(const uform__session_kernels_t *kr, int repeats, double *program_s, double *direct_s,
                               double *difference) {
    const size_t R = 1024, C = 1024;
    uint64_t state = 7;
    float *x = random_floats(R * C, 2.0f, &state), *a = random_floats(C, 1.0f, &state), *bb = random_floats(C, 1.0f, &state);
    float *y = (float *)aligned_alloc(64, R * C * 4), *z = (float *)aligned_alloc(64, R * C * 4), *row = (float *)malloc(C * 4);
    uform_program_builder_t builder = NULL;
    uform_program_builder_init(&builder);
    uint32_t vx, va, vb, v, ops[2];
    size_t dims[2] = {R, C}, row_dims[1] = {C};
    uform_program_builder_parameter(builder, "x", UFORM_SESSION_DTYPE_F32, 2, dims, &vx);
    uform_program_builder_parameter(builder, "a", UFORM_SESSION_DTYPE_F32, 1, row_dims, &va);
    uform_program_builder_parameter(builder, "b", UFORM_SESSION_DTYPE_F32, 1, row_dims, &vb);
    ops[0] = vx, ops[1] = va;
    OP(UFORM_SESSION_OP_MUL, ops, 2, NULL, 0, &v);
    ops[0] = v, ops[1] = vb;
    OP(UFORM_SESSION_OP_ADD, ops, 2, NULL, 0, &v);
    OP(UFORM_SESSION_OP_GELU, &v, 1, NULL, 0, &v);
    ops[0] = v, ops[1] = vx;
    OP(UFORM_SESSION_OP_SUB, ops, 2, NULL, 0, &v);
    uform_program_builder_output(builder, "y", v);
    const void *bytes;
    size_t length;
    uform_program_builder_finish(builder, &bytes, &length);
    uform_session_t session = NULL;
    uform_session_init(&session);
    uform_program_t program;
    uform_session_compile(session, bytes, length, &program);
    const void *inputs[3] = {x, a, bb};
    size_t input_sizes[3] = {R * C * 4, C * 4, C * 4}, output_sizes[1] = {R * C * 4};
    void *outputs[1] = {y};
    double *tp = (double *)malloc(sizeof(double) * (size_t)repeats), *td = (double *)malloc(sizeof(double) * (size_t)repeats);
    double *cp = (double *)malloc(sizeof(double) * (size_t)repeats), *cd = (double *)malloc(sizeof(double) * (size_t)repeats);
    for (int r = -1; r < repeats; ++r) {
        double start = bench_seconds(), cpu_start = thread_cpu_seconds();
        uform_session_invoke(session, program, inputs, input_sizes, 3, outputs, output_sizes, 1, NULL, 0);
        double middle = bench_seconds(), cpu_middle = thread_cpu_seconds();
        for (size_t i = 0; i < R; ++i) {
            const float *xi = x + i * C;
            for (size_t j = 0; j < C; ++j) row[j] = xi[j] * a[j] + bb[j];
            kr->gelu_f32(kr, C, row, row);
            for (size_t j = 0; j < C; ++j) z[i * C + j] = row[j] - xi[j];
        }
        double end = bench_seconds(), cpu_end = thread_cpu_seconds();
        if (r >= 0) tp[r] = middle - start, td[r] = end - middle, cp[r] = cpu_middle - cpu_start, cd[r] = cpu_end - cpu_middle;
    }
    qsort(cp, (size_t)repeats, sizeof(double), compare_doubles);
    qsort(cd, (size_t)repeats, sizeof(double), compare_doubles);
    program_s[2] = cp[repeats / 2], direct_s[2] = cd[repeats / 2]; // thread CPU time
    free(cp), free(cd);
    qsort(tp, (size_t)repeats, sizeof(double), compare_doubles);
    qsort(td, (size_t)repeats, sizeof(double), compare_doubles);
    program_s[0] = tp[repeats / 2], direct_s[0] = td[repeats / 2], *difference = 0.0;
    program_s[1] = tp[0], direct_s[1] = td[0]; // the fastest calls
    for (size_t i = 0; i < R * C; ++i) {
        double d = fabs((double)y[i] - (double)z[i]);
        *difference = d > *difference ? d : *difference;
    }
    uform_session_free(session);
    uform_program_builder_free(builder);
    free(x), free(a), free(bb), free(y), free(z), free(row), free(tp), free(td);
}

int main(int argc, char **argv) {
    block_t b;
    memset(&b, 0, sizeof b);
    b.T = argc > 1 ? (size_t)atoi(argv[1]) : 128;
    b.D = argc > 2 ? (size_t)atoi(argv[2]) : 384;
    b.H = argc > 3 ? (size_t)atoi(argv[3]) : 6;
    int repeats = argc > 4 ? atoi(argv[4]) : 31;
    const char *json_path = argc > 5 ? argv[5] : "bench/results/session.json";
    b.F = 4 * b.D;
    size_t T = b.T, D = b.D, F = b.F;
    uint64_t state = 42;
    float ws = 1.0f / sqrtf((float)D);
    b.x = random_floats(T * D, 1.0f, &state);
    b.ln1_w = random_floats(D, 0.1f, &state), b.ln1_b = random_floats(D, 0.1f, &state);
    for (size_t i = 0; i < D; ++i) b.ln1_w[i] += 1.0f;
    b.w_qkv = random_floats(3 * D * D, ws, &state), b.b_qkv = random_floats(3 * D, 0.1f, &state);
    b.w_o = random_floats(D * D, ws, &state), b.b_o = random_floats(D, 0.1f, &state);
    b.ln2_w = random_floats(D, 0.1f, &state), b.ln2_b = random_floats(D, 0.1f, &state);
    for (size_t i = 0; i < D; ++i) b.ln2_w[i] += 1.0f;
    b.w_1 = random_floats(F * D, ws, &state), b.b_1 = random_floats(F, 0.1f, &state);
    b.w_2 = random_floats(D * F, 1.0f / sqrtf((float)F), &state), b.b_2 = random_floats(D, 0.1f, &state);

    // Compile (timed over several compiles of the same bytes).
    uform_program_builder_t builder = NULL;
    uform_program_builder_init(&builder);
    if (!build_program(&b, builder)) return 1;
    const void *bytes;
    size_t length;
    uform_program_builder_finish(builder, &bytes, &length);
    uform_session_t session = NULL;
    uform_session_init(&session);
    uform_program_t program;
    double compile_best = 1e9;
    for (int i = 0; i < 20; ++i) {
        double start = bench_seconds();
        uform_session_status_t status = uform_session_compile(session, bytes, length, &program);
        double took = bench_seconds() - start;
        if (status != UFORM_SESSION_OK) {
            fprintf(stderr, "compile: %s: %s\n", uform_session_status_name(status), uform_session_last_cause(session));
            return 1;
        }
        compile_best = took < compile_best ? took : compile_best;
        if (i < 19) uform_session_release(session, program);
    }
    size_t scratch_size = uform_session_scratch_size(session, program);
    unsigned char *scratch = (unsigned char *)malloc(scratch_size);
    const void *inputs[13] = {b.x, b.ln1_w, b.ln1_b, b.w_qkv, b.b_qkv, b.w_o, b.b_o, b.ln2_w, b.ln2_b, b.w_1, b.b_1, b.w_2, b.b_2};
    size_t input_sizes[13] = {T * D * 4, D * 4, D * 4, 3 * D * D * 4, 3 * D * 4, D * D * 4, D * 4,
                              D * 4, D * 4, F * D * 4, F * 4, D * F * 4, D * 4};
    float *y_program = (float *)aligned_alloc(64, T * D * 4), *y_direct = (float *)aligned_alloc(64, T * D * 4);
    void *outputs[1] = {y_program};
    size_t output_sizes[1] = {T * D * 4};

    uform__session_kernels_t kernels;
    uform__session_kernels_bind(&kernels, uform_cpu_class_detect(), 0);
    direct_t w;
    w.h = (float *)malloc(T * D * 4), w.qkv = (float *)malloc(T * 3 * D * 4), w.s = (float *)malloc(T * T * 4);
    w.vt = (float *)malloc(T * D * 4), w.o = (float *)malloc(T * D * 4), w.attn = (float *)malloc(T * D * 4);
    w.x1 = (float *)malloc(T * D * 4), w.m = (float *)malloc(T * F * 4), w.mean = (float *)malloc(T * 4);
    w.rstd = (float *)malloc(T * 4), w.q = w.k = NULL;

    double *t_program = (double *)malloc(sizeof(double) * (size_t)repeats);
    double *t_direct = (double *)malloc(sizeof(double) * (size_t)repeats);
    double *c_program = (double *)malloc(sizeof(double) * (size_t)repeats);
    double *c_direct = (double *)malloc(sizeof(double) * (size_t)repeats);
    for (int r = -1; r < repeats; ++r) { // r = -1 warms both up; then they alternate
        double start = bench_seconds(), cpu_start = thread_cpu_seconds();
        uform_session_status_t status =
            uform_session_invoke(session, program, inputs, input_sizes, 13, outputs, output_sizes, 1, scratch, scratch_size);
        double middle = bench_seconds(), cpu_middle = thread_cpu_seconds();
        direct_block(&kernels, &b, &w, y_direct);
        double end = bench_seconds(), cpu_end = thread_cpu_seconds();
        if (status != UFORM_SESSION_OK) {
            fprintf(stderr, "invoke: %s\n", uform_session_status_name(status));
            return 1;
        }
        if (r >= 0) {
            t_program[r] = middle - start, t_direct[r] = end - middle;
            c_program[r] = cpu_middle - cpu_start, c_direct[r] = cpu_end - cpu_middle;
        }
    }
    qsort(c_program, (size_t)repeats, sizeof(double), compare_doubles);
    qsort(c_direct, (size_t)repeats, sizeof(double), compare_doubles);
    double program_cpu = c_program[repeats / 2], direct_cpu = c_direct[repeats / 2];
    qsort(t_program, (size_t)repeats, sizeof(double), compare_doubles);
    qsort(t_direct, (size_t)repeats, sizeof(double), compare_doubles);
    // Medians describe a typical call; minimums are the least disturbed by other load on a shared
    // machine, so the ratio is reported for both.
    double program_median = t_program[repeats / 2], direct_median = t_direct[repeats / 2];
    double program_best = t_program[0], direct_best = t_direct[0];
    double max_difference = 0.0;
    for (size_t i = 0; i < T * D; ++i) {
        double d = fabs((double)y_program[i] - (double)y_direct[i]);
        max_difference = d > max_difference ? d : max_difference;
    }
    double flops = 2.0 * (double)T * (double)D * (3.0 * D + D + 2.0 * F) + 4.0 * (double)T * (double)T * (double)D;
    printf("bench_session: pre-norm transformer block, F32, T=%zu D=%zu heads=%zu MLP=%zu, 1 thread, CPU class %s\n", T, D,
           b.H, F, uform_cpu_class_name(uform_cpu_class_detect()));
    printf("kernels bound: matmul %s, norms %s; %d repeats, medians\n", kernels.matmul_name, kernels.norm_name, repeats);
    printf("%-28s %12s %12s\n", "", "ms", "GFLOP/s");
    printf("%-28s %12.3f %12.2f\n", "program (session invoke)", program_median * 1e3, flops / program_median * 1e-9);
    printf("%-28s %12.3f %12.2f\n", "direct C, same kernels", direct_median * 1e3, flops / direct_median * 1e-9);
    printf("%-28s %12.3f %12.2f\n", "program, fastest call", program_best * 1e3, flops / program_best * 1e-9);
    printf("%-28s %12.3f %12.2f\n", "direct C, fastest call", direct_best * 1e3, flops / direct_best * 1e-9);
    printf("%-28s %12.3f %12.2f\n", "program, thread CPU time", program_cpu * 1e3, flops / program_cpu * 1e-9);
    printf("%-28s %12.3f %12.2f\n", "direct C, thread CPU time", direct_cpu * 1e3, flops / direct_cpu * 1e-9);
    printf("ratio direct/program: %.3f of medians, %.3f of fastest calls, %.3f of CPU-time medians (target >= 0.8)\n",
           direct_median / program_median, direct_best / program_best, direct_cpu / program_cpu);
    printf("compile: %.1f us for %zu wire bytes; scratch %zu bytes; max |program - direct| = %.3g\n", compile_best * 1e6,
           length, scratch_size, max_difference);
    double chain_programs[3], chain_directs[3], chain_difference;
    elementwise_figure(&kernels, 3 * repeats, chain_programs, chain_directs, &chain_difference);
    double chain_program = chain_programs[0], chain_direct = chain_directs[0];
    printf("elementwise chain gelu(x*a+b)-x over [1024,1024] f32: program %.3f ms, direct C %.3f ms (medians), "
           "ratio %.3f of medians, %.3f of fastest calls, %.3f of CPU-time medians; max difference %.3g\n",
           chain_program * 1e3, chain_direct * 1e3, chain_direct / chain_program, chain_directs[1] / chain_programs[1],
           chain_directs[2] / chain_programs[2], chain_difference);
    FILE *json = fopen(json_path, "w");
    if (json) {
        fprintf(json,
                "{\"benchmark\": \"session_transformer_block\", \"dtype\": \"f32\", \"T\": %zu, \"D\": %zu, \"heads\": %zu, "
                "\"mlp\": %zu, \"threads\": 1, \"cpu_class\": \"%s\", \"matmul_kernel\": \"%s\", \"repeats\": %d, "
                "\"program_ms\": %.4f, \"direct_ms\": %.4f, \"ratio\": %.4f, \"program_best_ms\": %.4f, \"direct_best_ms\": %.4f, \"ratio_best\": %.4f, \"ratio_cpu_time\": %.4f, \"compile_us\": %.2f, \"wire_bytes\": %zu, "
                "\"scratch_bytes\": %zu, \"max_abs_difference\": %.3g, \"chain_program_ms\": %.4f, \"chain_direct_ms\": %.4f, "
                "\"chain_ratio\": %.4f, \"chain_ratio_best\": %.4f, \"chain_ratio_cpu_time\": %.4f}\n",
                T, D, b.H, F, uform_cpu_class_name(uform_cpu_class_detect()), kernels.matmul_name, repeats,
                program_median * 1e3, direct_median * 1e3, direct_median / program_median, program_best * 1e3, direct_best * 1e3,
                direct_best / program_best, direct_cpu / program_cpu, compile_best * 1e6, length,
                scratch_size, max_difference, chain_program * 1e3, chain_direct * 1e3, chain_direct / chain_program,
                chain_directs[1] / chain_programs[1], chain_directs[2] / chain_programs[2]);
        fclose(json);
    }
    uform_session_release(session, program);
    uform_session_free(session);
    uform_program_builder_free(builder);
    return 0;
}
