/*
 * bench_gemm: GFLOP/s of the forward product Y[M,N] = X[M,K]·W[N,K]ᵀ per CPU class, side by side
 * in the same run with OpenBLAS's sgemm (F32) and oneDNN's BF16 matmul (BF16 × BF16 → F32, with
 * plain [N,K] weights and with weights in oneDNN's own blocked layout, reordered once), printed
 * as a table with ratios and written as JSON.
 *
 * Shapes: M = 4096 tokens with (K, N) ∈ {(384, 1152), (384, 1536), (1536, 384), (768, 2304),
 * (768, 3072), (3072, 768)}, and square 1024 and 2048; 1 and 2 threads.
 * Ours, per class: "f32" (F32 X and W, W plain), "f32 packed", "bf16" (BF16 X and W, W plain),
 * "bf16 packed"; packing scratch is passed in (allocated once, as an arena would). Ratios: F32
 * against OpenBLAS, BF16 against oneDNN blocked. Where oneDNN has no BF16 matmul for the CPU (no
 * AVX-512: status dnnl_unimplemented), its F32 matmul runs in its place, labelled "f32*", and says so.
 *
 * Usage: bench_gemm [--json PATH] [--threads 1,2] [--classes serial,haswell,skylake,icelake,genoa]
 *                   [--rounds R] [--quick] [--shape M,K,N[;M,K,N...]] [--no-peaks]
 *                   [--epilogue bias|gelu|gelu-fast|quick|gelu-tanh] [--y-bf16] [--backward | --int8]
 * --shape replaces the shape list with one shape, or with several separated by ';' (at most 64:
 * batch-1 products, M = 8–50, run in one process). --no-peaks skips the instruction peaks
 * (≈10 s a thread count; the rows then print no fraction of peak). --epilogue measures the cost of the bias (and GELU,
 * exact or fast, QuickGELU or the tanh GELU) folded into our products: each class then runs its
 * packed variants twice, without and with the epilogue ("+bias", "+gelu", "+gelu-fast", "+quick",
 * "+gelu-tanh"), with F32 activations as the model passes
 * them (GENOA's BF16 slot rounds them while packing); OpenBLAS and oneDNN run the bare product.
 * --y-bf16: those epilogue variants write Y as BF16 (y_dtype), as the trunk's mlp.up can.
 * --backward measures the training products instead, at the trainer's shapes (the `small` model,
 * batch 32 images: M = 7392 tokens, (N, K) = (1152, 384) qkv, (384, 384) out, (1536, 384) up,
 * (384, 1536) down; --shape M,K,N picks one): per class backward_x (dX[M,K] = dY[M,N]·W[N,K]) with
 * F32 and BF16 W, backward_w (dW[N,K] += dY[M,N]ᵀ·X[M,K], F32 X as the trainer passes it) through
 * the F32 and the BF16 slot, each also with the bias gradient folded in ("+db": backward_w's `db`),
 * and backward_b (db[N] += Σ_m dY[m,:]) alone, against OpenBLAS's
 * sgemm of the same products (NoTrans·NoTrans and Trans·NoTrans).
 * --int8 measures the INT8 products (kernels/gemm_i8.h) at the trunk's shapes (M = 6,304 tokens, a
 * batch of 32 images of `small`: qkv, out, up, down; `base`'s up and down; 2048³): per class the
 * F32 and BF16 packed products, "i8" (rows already quantized) and "i8+q" (F32 rows quantized in
 * every call, as the model runs it), each INT8 row's ratio to the same class's faster float
 * product and to oneDNN's s8 matmul (blocked weights, one output scale per column; its F32 matmul
 * where s8 is unimplemented), and its difference from OpenBLAS's F32 product (the quantization's).
 * The JSON path defaults to bench/results/gemm.json (relative to the working directory).
 *
 * This machine is shared (2 cores, other builds running). With 1 thread every engine is timed by
 * the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID: all three compute on that thread),
 * which other processes cannot inflate; with 2 threads by wall-clock time. The engines are measured
 * interleaved: each round calls every engine once, in the same order, and each keeps its fastest
 * call over R rounds (default 5; one warm-up call first). SERIAL is timed in the first round only.
 * The instruction peaks of every kind this CPU has (bench_probe.h: F32 FMA on ymm and zmm,
 * vdpbf16ps, and the integer dot products the INT8 kernels use) are measured the same way and
 * printed, and every row is read as a fraction of the peak of the instructions its class runs
 * (a SERIAL row has none; a peer's is the widest of its kind the CPU has). On an AVX2-only CPU
 * the AVX-512 kinds print "not on this CPU".
 *
 * OpenBLAS: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE may be set in this environment and would pin
 * OpenBLAS to another core's kernels; OpenBLAS reads them when it loads, so the benchmark re-runs
 * itself once without them (the same as `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE`).
 * OpenBLAS threads are set with openblas_set_num_threads, oneDNN's (Debian builds it with
 * OpenMP) with omp_set_num_threads; ours use the pool in bench_gemm_pool.h. Idle OpenBLAS
 * threads spin for up to ≈0.1 s after a call and OpenMP's for a few ms, so each round sleeps
 * after them before the next engine runs.
 */
#include <cblas.h>
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"
#include "bench_gemm_pool.h"
#include "bench_probe.h"
#include "kernels/gemm.h"
#include "kernels/gemm_i8.h"

typedef struct bench_shape_t {
    size_t m, k, n;
} bench_shape_t;

static const bench_shape_t bench_shapes[] = {
    {4096, 384, 1152}, {4096, 384, 1536}, {4096, 1536, 384}, {4096, 768, 2304},
    {4096, 768, 3072}, {4096, 3072, 768}, {1024, 1024, 1024}, {2048, 2048, 2048},
};

/* --int8: the trunk's four products of `small` (qkv, out, up, down) and of `base`'s up and down,
 * at M = 6,304 tokens (a batch of 32 images), and the square 2048. */
static const bench_shape_t bench_int8_shapes[] = {
    {6304, 384, 1152}, {6304, 384, 384}, {6304, 384, 1536}, {6304, 1536, 384}, {6304, 768, 3072}, {6304, 3072, 768},
    {2048, 2048, 2048},
};

/* With one thread every engine computes on the calling thread (OpenBLAS and oneDNN's OpenMP
 * run a one-thread team inline), so its CPU time is the measure: it does not count the time other
 * processes of this shared machine hold the core. With more threads: wall-clock time. */
static clockid_t bench_clock = CLOCK_MONOTONIC;

typedef void (*bench_call_fn)(void *state);

static double time_call(bench_call_fn call, void *state) {
    double begin = bench_clock_seconds(bench_clock);
    call(state);
    return bench_clock_seconds(bench_clock) - begin;
}

/* ---- Ours ---- */

typedef struct ours_state_t {
    const uform__gemm_kernels_t *table;
    uform__gemm_forward_t args;
    const uform__parallel_t *parallel;
    int bf16;
    int failed;
    /* --int8: the INT8 product, and with `quantize` the F32 rows quantized first in every call */
    const uform__gemm_i8_kernels_t *i8;
    uform__gemm_i8_forward_t i8_args;
    const float *x32;
    int quantize;
} ours_state_t;

static void ours_call(void *state_pointer) {
    ours_state_t *state = state_pointer;
    uform_outcome_t outcome = {0};
    uform_status_t status;
    if (state->i8) {
        const uform__gemm_i8_forward_t *args = &state->i8_args;
        if (state->quantize)
            state->i8->quantize(args->m, args->k, state->x32, args->k, UFORM__GEMM_F32, (int8_t *)args->x.q, args->x.ld,
                                (float *)args->x.scale, (int32_t *)args->x.sums, state->parallel);
        status = state->i8->forward(args, state->parallel, &outcome);
    } else {
        uform__gemm_forward_fn forward = state->bf16 ? state->table->forward_bf16 : state->table->forward_f32;
        status = forward(&state->args, state->parallel, &outcome);
    }
    if (status != UFORM_OK) {
        if (!state->failed) fprintf(stderr, "ours failed: %s\n", outcome.message);
        state->failed = 1;
    }
}

/* ---- OpenBLAS ---- */

typedef struct openblas_state_t {
    size_t m, n, k;
    const float *x, *w;
    float *y;
} openblas_state_t;

static void openblas_call(void *state_pointer) {
    openblas_state_t *state = state_pointer;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)state->m, (int)state->n, (int)state->k, 1.0f, state->x,
                (int)state->k, state->w, (int)state->k, 0.0f, state->y, (int)state->n);
}

/* ---- oneDNN ---- */

typedef struct onednn_state_t {
    dnnl_primitive_desc_t matmul_pd;
    dnnl_memory_t weights_plain;
    dnnl_primitive_t matmul;
    dnnl_stream_t stream;
    dnnl_memory_t src, weights, dst;
    int failed;
} onednn_state_t;

static void onednn_call(void *state_pointer) {
    onednn_state_t *state = state_pointer;
    dnnl_exec_arg_t arguments[3] = {
        {DNNL_ARG_SRC, state->src}, {DNNL_ARG_WEIGHTS, state->weights}, {DNNL_ARG_DST, state->dst}};
    if (dnnl_primitive_execute(state->matmul, state->stream, 3, arguments) != dnnl_success ||
        dnnl_stream_wait(state->stream) != dnnl_success)
        state->failed = 1;
}

#define DNNL_TRY(expression)                                                               \
    do {                                                                                   \
        dnnl_status_t dnnl_status_ = (expression);                                         \
        if (dnnl_status_ != dnnl_success) {                                                \
            fprintf(stderr, "oneDNN: %s failed with status %d\n", #expression, (int)dnnl_status_); \
            return (int)dnnl_status_;                                                      \
        }                                                                                  \
    } while (0)

/* oneDNN's matmul of `type` (bf16, f32 or s8): src [M,K], weights [K,N] given as our [N,K] rows
 * (tag "ba"), dst [M,N] f32 (s8: with one output scale per column, `scales` [N], as a per-channel
 * dynamic quantization applies its weight scales); `blocked` lets oneDNN choose the weight layout
 * (format_tag_any) and reorders the weights into it once, before any timing. Answers 0 on success,
 * else oneDNN's status (dnnl_unimplemented where this CPU lacks the ISA oneDNN needs for it). */
static int onednn_prepare(onednn_state_t *state, dnnl_engine_t engine, dnnl_stream_t stream, size_t m, size_t n,
                          size_t k, dnnl_data_type_t type, const void *x, const void *w, float *y, int blocked,
                          const float *scales) {
    *state = (onednn_state_t){.stream = stream};
    dnnl_memory_desc_t src_md, weights_plain_md, weights_md, dst_md;
    dnnl_dims_t src_dims = {(dnnl_dim_t)m, (dnnl_dim_t)k}, weights_dims = {(dnnl_dim_t)k, (dnnl_dim_t)n},
                dst_dims = {(dnnl_dim_t)m, (dnnl_dim_t)n};
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&src_md, 2, src_dims, type, dnnl_ab));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&weights_plain_md, 2, weights_dims, type, dnnl_ba));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&weights_md, 2, weights_dims, type, blocked ? dnnl_format_tag_any : dnnl_ba));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&dst_md, 2, dst_dims, dnnl_f32, dnnl_ab));
    dnnl_matmul_desc_t matmul_desc;
    DNNL_TRY(dnnl_matmul_desc_init(&matmul_desc, &src_md, &weights_md, NULL, &dst_md));
    dnnl_primitive_attr_t attr = NULL;
    if (scales) {
        DNNL_TRY(dnnl_primitive_attr_create(&attr));
        DNNL_TRY(dnnl_primitive_attr_set_output_scales(attr, (dnnl_dim_t)n, 1 << 1, scales));
    }
    dnnl_status_t created = dnnl_primitive_desc_create(&state->matmul_pd, &matmul_desc, attr, engine, NULL);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (created != dnnl_success) return (int)created;
    const dnnl_memory_desc_t *chosen_md = dnnl_primitive_desc_query_md(state->matmul_pd, dnnl_query_weights_md, 0);
    DNNL_TRY(dnnl_primitive_create(&state->matmul, state->matmul_pd));
    DNNL_TRY(dnnl_memory_create(&state->src, &src_md, engine, (void *)x));
    DNNL_TRY(dnnl_memory_create(&state->dst, &dst_md, engine, y));
    DNNL_TRY(dnnl_memory_create(&state->weights_plain, &weights_plain_md, engine, (void *)w));
    if (blocked) {
        DNNL_TRY(dnnl_memory_create(&state->weights, chosen_md, engine, DNNL_MEMORY_ALLOCATE));
        dnnl_primitive_desc_t reorder_pd;
        DNNL_TRY(dnnl_reorder_primitive_desc_create(&reorder_pd, &weights_plain_md, engine, chosen_md, engine, NULL));
        dnnl_primitive_t reorder;
        DNNL_TRY(dnnl_primitive_create(&reorder, reorder_pd));
        dnnl_exec_arg_t arguments[2] = {{DNNL_ARG_FROM, state->weights_plain}, {DNNL_ARG_TO, state->weights}};
        DNNL_TRY(dnnl_primitive_execute(reorder, stream, 2, arguments));
        DNNL_TRY(dnnl_stream_wait(stream));
        dnnl_primitive_destroy(reorder);
        dnnl_primitive_desc_destroy(reorder_pd);
    } else {
        state->weights = state->weights_plain;
    }
    return 0;
}

static void onednn_release(onednn_state_t *state) {
    if (state->weights && state->weights != state->weights_plain) dnnl_memory_destroy(state->weights);
    if (state->weights_plain) dnnl_memory_destroy(state->weights_plain);
    if (state->src) dnnl_memory_destroy(state->src);
    if (state->dst) dnnl_memory_destroy(state->dst);
    if (state->matmul) dnnl_primitive_destroy(state->matmul);
    if (state->matmul_pd) dnnl_primitive_desc_destroy(state->matmul_pd);
}

/* ---- The run ---- */

typedef struct bench_class_t {
    const char *name;
    uform_cpu_class_t cpu_class;
} bench_class_t;

static const bench_class_t bench_classes[] = {
    {"serial", UFORM_CPU_CLASS_SERIAL},   {"haswell", UFORM_CPU_CLASS_INTEL_HASWELL},
    {"skylake", UFORM_CPU_CLASS_INTEL_SKYLAKE}, {"icelake", UFORM_CPU_CLASS_INTEL_ICELAKE},
    {"genoa", UFORM_CPU_CLASS_AMD_GENOA},
};

static double relative_difference(const float *a, const float *b, size_t count) {
    double worst = 0, scale = 0;
    for (size_t i = 0; i < count; ++i) scale = fmax(scale, fabs(b[i]));
    for (size_t i = 0; i < count; ++i) worst = fmax(worst, fabs((double)a[i] - b[i]));
    return scale > 0 ? worst / scale : worst;
}

/* One engine and variant measured on one shape: its call, its fastest time, where it goes. */
typedef struct candidate_t {
    char label[48];
    const char *engine, *class_name;
    char variant[24];
    bench_call_fn call;
    void *state;
    int bf16, serial;
    unsigned sleep_after_us;
    double best;
    int failed;
    double difference;
} candidate_t;

/* Warm-up (page faults, oneDNN's JIT, thread start), then `rounds` interleaved rounds: each calls
 * every candidate once, in order, and each keeps its fastest call. SERIAL runs in the first only. */
static void measure(candidate_t *candidates, size_t count, int rounds) {
    for (size_t i = 0; i < count; ++i) {
        if (!candidates[i].serial) candidates[i].call(candidates[i].state);
        if (candidates[i].sleep_after_us) usleep(candidates[i].sleep_after_us);
    }
    for (int round = 0; round < rounds; ++round)
        for (size_t i = 0; i < count; ++i) {
            if (candidates[i].serial && round > 0) continue;
            candidates[i].best = fmin(candidates[i].best, time_call(candidates[i].call, candidates[i].state));
            if (candidates[i].sleep_after_us) usleep(candidates[i].sleep_after_us);
        }
}

enum { MAX_CANDIDATES = 48 };

/* The instruction peak a row is read against (bench_probe.h): the one `class_name`'s kernels use
 * for `product` ("f32", "bf16", "i8"); a peer's (class_name NULL) is the widest F32 FMA this CPU
 * has, or for "bf16" and "i8" the peak of that product's instructions when the CPU has them. 0
 * when there is none (SERIAL's plain C). */
static double row_peak(const double probes[BENCH_PROBE_KINDS], const char *class_name, const char *product) {
    if (!class_name) {
        if (product[0] == 'b' && probes[BENCH_PROBE_BF16_ZMM] > 0) return probes[BENCH_PROBE_BF16_ZMM];
        if (product[0] == 'i') /* the widest integer dot product the CPU has */
            return probes[BENCH_PROBE_I8_VNNI] > 0   ? probes[BENCH_PROBE_I8_VNNI]
                   : probes[BENCH_PROBE_I8_ZMM] > 0 ? probes[BENCH_PROBE_I8_ZMM]
                                                    : probes[BENCH_PROBE_I8_YMM];
        return probes[BENCH_PROBE_F32_ZMM] > 0 ? probes[BENCH_PROBE_F32_ZMM] : probes[BENCH_PROBE_F32_YMM];
    }
    for (size_t c = 0; c < sizeof bench_classes / sizeof bench_classes[0]; ++c)
        if (!strcmp(bench_classes[c].name, class_name)) {
            bench_probe_kind_t kind = bench_probe_kind_for(bench_classes[c].cpu_class, product);
            return (int)kind >= 0 ? probes[kind] : 0;
        }
    return 0;
}

/* ---- --backward: the trainer's products ---- */

/* M = 7392 tokens (batch 32 of the `small` image tower), stored as (m, k, n) with K the layer's
 * input and N its output width: qkv, out, up, down. */
static const bench_shape_t bench_backward_shapes[] = {
    {7392, 384, 1152}, {7392, 384, 384}, {7392, 384, 1536}, {7392, 1536, 384}};

typedef enum backward_kind_t { BACKWARD_X, BACKWARD_W, BACKWARD_B } backward_kind_t;

typedef struct backward_state_t {
    const uform__gemm_kernels_t *table;
    backward_kind_t kind;
    int bf16;
    uform__gemm_backward_x_t x;
    uform__gemm_backward_w_t w;
    uform__gemm_backward_b_t b;
    const uform__parallel_t *parallel;
    int failed;
} backward_state_t;

static void backward_call(void *state_pointer) {
    backward_state_t *state = state_pointer;
    uform_outcome_t outcome = {0};
    uform_status_t status;
    if (state->kind == BACKWARD_X)
        status = (state->bf16 ? state->table->backward_x_bf16 : state->table->backward_x_f32)(&state->x, state->parallel,
                                                                                              &outcome);
    else if (state->kind == BACKWARD_W)
        status = (state->bf16 ? state->table->backward_w_bf16 : state->table->backward_w)(&state->w, state->parallel,
                                                                                          &outcome);
    else
        status = state->table->backward_b(&state->b, state->parallel, &outcome);
    if (status != UFORM_OK) {
        if (!state->failed) fprintf(stderr, "ours failed: %s\n", outcome.message);
        state->failed = 1;
    }
}

typedef struct openblas_backward_state_t {
    backward_kind_t kind;
    size_t m, n, k;
    const float *dy, *w, *x;
    float *dx, *dw;
} openblas_backward_state_t;

static void openblas_backward_call(void *state_pointer) {
    openblas_backward_state_t *state = state_pointer;
    int m = (int)state->m, n = (int)state->n, k = (int)state->k;
    if (state->kind == BACKWARD_X) /* dX[M,K] = dY[M,N]·W[N,K] */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, k, n, 1.0f, state->dy, n, state->w, k, 0.0f, state->dx, k);
    else /* dW[N,K] += dY[M,N]ᵀ·X[M,K] */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, k, m, 1.0f, state->dy, n, state->x, k, 1.0f, state->dw, k);
}

static float bench_random(uint64_t *state) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*state >> 40) / 16777216.0 - 0.5);
}

/* One shape of --backward with `threads` threads: every variant of every class and OpenBLAS's two
 * products, interleaved over the rounds; prints the table and appends the JSON records. */
static void run_backward_shape(const bench_shape_t *shape, size_t threads, const uform__parallel_t *parallel,
                               const char *classes_list, int rounds, void *scratch, size_t scratch_size,
                               const double probes[BENCH_PROBE_KINDS], FILE *json) {
    size_t m = shape->m, k = shape->k, n = shape->n;
    double flops = 2.0 * (double)m * (double)n * (double)k;
    float *dy = aligned_alloc(64, (m * n * sizeof(float) + 63) / 64 * 64);
    float *x = aligned_alloc(64, (m * k * sizeof(float) + 63) / 64 * 64), *w = aligned_alloc(64, (n * k * sizeof(float) + 63) / 64 * 64);
    uform__bf16_t *w16 = aligned_alloc(64, (n * k * 2 + 63) / 64 * 64);
    float *dx = aligned_alloc(64, (m * k * sizeof(float) + 63) / 64 * 64), *dx_reference = malloc(m * k * sizeof(float));
    float *dw = aligned_alloc(64, (n * k * sizeof(float) + 63) / 64 * 64), *dw_reference = malloc(n * k * sizeof(float));
    float *db = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    uint64_t state = 777 + m + 3 * n + 7 * k;
    for (size_t i = 0; i < m * n; ++i) dy[i] = bench_random(&state);
    for (size_t i = 0; i < m * k; ++i) x[i] = bench_random(&state);
    for (size_t i = 0; i < n * k; ++i) w16[i] = uform__gemm_bf16_from_f32(w[i] = bench_random(&state));
    memset(dw, 0, n * k * sizeof(float)), memset(db, 0, n * sizeof(float));

    enum { variants = 7 };
    static const char *const names[variants] = {"bx f32", "bx bf16", "bw f32", "bw bf16", "bw f32+db", "bw bf16+db", "db"};
    candidate_t candidates[MAX_CANDIDATES];
    backward_state_t ours[MAX_CANDIDATES];
    size_t count = 0;
    for (size_t c = 0; c < sizeof bench_classes / sizeof bench_classes[0]; ++c) {
        if (!strstr(classes_list, bench_classes[c].name) || !uform_cpu_class_supported(bench_classes[c].cpu_class)) continue;
        const uform__gemm_kernels_t *table = uform__gemm_kernels(bench_classes[c].cpu_class);
        int serial = bench_classes[c].cpu_class == UFORM_CPU_CLASS_SERIAL;
        for (int variant = 0; variant < variants && count + 2 < MAX_CANDIDATES; ++variant) {
            backward_state_t *o = &ours[count];
            int bf16 = variant % 2 == 1 && variant < 6, with_db = variant == 4 || variant == 5;
            *o = (backward_state_t){.table = table, .bf16 = bf16, .parallel = parallel,
                                    .kind = variant < 2 ? BACKWARD_X : variant < 6 ? BACKWARD_W : BACKWARD_B};
            o->x = (uform__gemm_backward_x_t){.m = m, .n = n, .k = k, .dy = dy, .lddy = n, .w = bf16 ? (void *)w16 : (void *)w,
                                              .ldw = k, .w_dtype = bf16 ? UFORM__GEMM_BF16 : UFORM__GEMM_F32, .dx = dx,
                                              .lddx = k, .scratch = scratch, .scratch_capacity = scratch_size};
            o->w = (uform__gemm_backward_w_t){.m = m, .n = n, .k = k, .dy = dy, .lddy = n, .x = x, .ldx = k,
                                              .x_dtype = UFORM__GEMM_F32, .dw = dw, .lddw = k, .scratch = scratch,
                                              .scratch_capacity = scratch_size, .db = with_db ? db : NULL};
            o->b = (uform__gemm_backward_b_t){.m = m, .n = n, .dy = dy, .lddy = n, .db = db};
            candidate_t *candidate = &candidates[count++];
            *candidate = (candidate_t){.engine = "uform", .class_name = bench_classes[c].name, .call = backward_call,
                                       .state = o, .bf16 = bf16, .serial = serial, .best = 1e30};
            snprintf(candidate->variant, sizeof candidate->variant, "%s", names[variant]);
            snprintf(candidate->label, sizeof candidate->label, "%s %s", bench_classes[c].name, names[variant]);
        }
    }
    size_t peers = count;
    openblas_backward_state_t openblas[2];
    for (int kind = 0; kind < 2; ++kind) {
        openblas[kind] = (openblas_backward_state_t){.kind = kind ? BACKWARD_W : BACKWARD_X, .m = m, .n = n, .k = k,
                                                     .dy = dy, .w = w, .x = x, .dx = dx_reference, .dw = dw_reference};
        candidates[count++] = (candidate_t){.engine = "openblas", .call = openblas_backward_call, .state = &openblas[kind],
                                            .sleep_after_us = 150000, .best = 1e30};
        snprintf(candidates[count - 1].variant, sizeof candidates[count - 1].variant, "%s", kind ? "bw f32" : "bx f32");
        snprintf(candidates[count - 1].label, sizeof candidates[count - 1].label, "openblas %s", kind ? "bw f32" : "bx f32");
    }
    measure(candidates, count, rounds);
    /* Results against OpenBLAS's, once more each from a zero dW, untimed. */
    memset(dw_reference, 0, n * k * sizeof(float));
    openblas_backward_call(&openblas[0]);
    openblas_backward_call(&openblas[1]);
    for (size_t i = 0; i < peers; ++i) {
        backward_state_t *o = candidates[i].state;
        if (o->kind == BACKWARD_B) continue;
        memset(dw, 0, n * k * sizeof(float));
        backward_call(o);
        candidates[i].failed = o->failed;
        candidates[i].difference = o->kind == BACKWARD_X ? relative_difference(dx, dx_reference, m * k)
                                                         : relative_difference(dw, dw_reference, n * k);
    }
    double openblas_gflops[2] = {flops / candidates[peers].best * 1e-9, flops / candidates[peers + 1].best * 1e-9};
    printf("\nbackward M=%zu K=%zu N=%zu, %zu thread%s (%.2f GFLOP per product)\n", m, k, n, threads,
           threads > 1 ? "s" : "", flops * 1e-9);
    for (size_t i = 0; i < count; ++i) {
        candidate_t *candidate = &candidates[i];
        int ours_row = i < peers;
        backward_kind_t kind = ours_row ? ((backward_state_t *)candidate->state)->kind
                                        : ((openblas_backward_state_t *)candidate->state)->kind;
        double gflops = candidate->failed || kind == BACKWARD_B ? 0 : flops / candidate->best * 1e-9;
        double peak = row_peak(probes, ours_row ? candidate->class_name : NULL, candidate->bf16 ? "bf16" : "f32");
        printf("  %-22s %8.2f ms", candidate->label, 1e3 * candidate->best);
        if (kind != BACKWARD_B) printf("  %8.1f GFLOP/s  %5.1f%% of peak", gflops, peak > 0 ? 100.0 * gflops / peak : 0);
        if (ours_row && kind != BACKWARD_B)
            printf("  %5.2fx openblas  max|diff| %.1e", gflops / openblas_gflops[kind == BACKWARD_W],
                   candidate->difference);
        printf("\n");
        fprintf(json, ",\n    {\"product\": \"backward\", \"m\": %zu, \"k\": %zu, \"n\": %zu, \"threads\": %zu, \"engine\": \"%s\", ",
                m, k, n, threads, candidate->engine);
        if (ours_row) fprintf(json, "\"class\": \"%s\", ", candidate->class_name);
        fprintf(json, "\"variant\": \"%s\", \"ms\": %.3f", candidate->variant, 1e3 * candidate->best);
        if (kind != BACKWARD_B) fprintf(json, ", \"gflops\": %.1f", gflops);
        if (ours_row && kind != BACKWARD_B)
            fprintf(json, ", \"ratio_to_openblas\": %.3f, \"max_relative_difference_to_openblas\": %.2e",
                    gflops / openblas_gflops[kind == BACKWARD_W], candidate->difference);
        fprintf(json, "}");
    }
    fflush(stdout);
    free(dy), free(x), free(w), free(w16), free(dx), free(dx_reference), free(dw), free(dw_reference), free(db);
}

/* --epilogue: 0 none, 1 bias, 2 bias + exact GELU, 3 bias + fast GELU, 4 bias + QuickGELU, 5 bias +
 * the tanh GELU; the activation each asks of the product. */
static const char *const epilogue_names[6] = {"", "+bias", "+gelu", "+gelu-fast", "+quick", "+gelu-tanh"};
static const int epilogue_activations[6] = {UFORM__GEMM_GELU_NONE,  UFORM__GEMM_GELU_NONE,  UFORM__GEMM_GELU_EXACT,
                                            UFORM__GEMM_GELU_FAST,  UFORM__GEMM_GELU_QUICK, UFORM__GEMM_GELU_TANH};

/* What one run measures, from the command line. */
typedef struct run_options_t {
    const char *classes_list;
    int rounds, epilogue, y_bf16;
    dnnl_engine_t engine;
    dnnl_stream_t stream;
} run_options_t;

static void fill_random(uint64_t *state, float *values, uform__bf16_t *values16, size_t count) {
    for (size_t i = 0; i < count; ++i) {
        values[i] = bench_random(state);
        if (values16) values16[i] = uform__gemm_bf16_from_f32(values[i]);
    }
}

/* oneDNN's two variants (plain and blocked weights) of `type`, appended to `candidates`; when
 * this CPU has no kernel for `type` (dnnl_unimplemented: BF16 without AVX-512, s8 without VNNI or
 * AVX2), its F32 matmul of the same shape instead, labelled so. Answers how many were added. */
static size_t add_onednn(candidate_t *candidates, onednn_state_t *states, const run_options_t *options, size_t m,
                         size_t n, size_t k, dnnl_data_type_t type, const void *x, const void *w, const float *x32,
                         const float *w32, float *y, const float *scales) {
    size_t added = 0;
    const char *name = type == dnnl_bf16 ? "bf16" : type == dnnl_s8 ? "s8" : "f32";
    for (int blocked = 0; blocked < 2; ++blocked) {
        const char *variant_type = name, *note = "";
        int status = onednn_prepare(&states[added], options->engine, options->stream, m, n, k, type, x, w, y, blocked,
                                    scales);
        if (status == dnnl_unimplemented && type != dnnl_f32) {
            onednn_release(&states[added]);
            if (blocked == 0) printf("  (oneDNN has no %s matmul for this CPU: its F32 matmul runs in its place)\n", name);
            status = onednn_prepare(&states[added], options->engine, options->stream, m, n, k, dnnl_f32, x32, w32, y,
                                    blocked, NULL);
            variant_type = "f32", note = "*";
        }
        if (status != 0) {
            onednn_release(&states[added]);
            continue;
        }
        candidate_t *candidate = &candidates[added];
        *candidate = (candidate_t){.engine = "onednn", .call = onednn_call, .state = &states[added],
                                   .bf16 = !strcmp(variant_type, "bf16"), .sleep_after_us = 10000, .best = 1e30};
        snprintf(candidate->variant, sizeof candidate->variant, "%s%s %s", variant_type, note, blocked ? "blocked" : "plain");
        snprintf(candidate->label, sizeof candidate->label, "onednn %s", candidate->variant);
        added += 1;
    }
    return added;
}

/* One shape of the forward products with `threads` threads: per class f32, f32 packed, bf16,
 * bf16 packed (or, with --epilogue, the packed ones without and with it), against OpenBLAS's
 * sgemm and oneDNN's BF16 matmul (its F32 one where BF16 is unimplemented). */
static void run_forward_shape(const bench_shape_t *shape, size_t index, size_t threads, const uform__parallel_t *parallel,
                              const run_options_t *options, void *scratch, size_t scratch_size,
                              const double probes[BENCH_PROBE_KINDS], FILE *json) {
    size_t m = shape->m, k = shape->k, n = shape->n;
    int epilogue = options->epilogue, y_bf16 = options->y_bf16;
    double flops = 2.0 * (double)m * (double)n * (double)k;
    float *x = aligned_alloc(64, m * k * sizeof(float)), *w = aligned_alloc(64, n * k * sizeof(float));
    uform__bf16_t *x16 = aligned_alloc(64, m * k * 2), *w16 = aligned_alloc(64, n * k * 2);
    float *y = aligned_alloc(64, m * n * sizeof(float)), *y_reference = aligned_alloc(64, m * n * sizeof(float));
    float *bias = aligned_alloc(64, (n + 15) / 16 * 64);
    uform__bf16_t *y16 = aligned_alloc(64, (m * n * 2 + 63) / 64 * 64);
    uint64_t state = 12345 + index;
    fill_random(&state, x, x16, m * k);
    fill_random(&state, w, w16, n * k);
    for (size_t i = 0; i < n; ++i) bias[i] = (float)((double)(i % 17) / 17.0 - 0.5);

    candidate_t candidates[MAX_CANDIDATES];
    size_t count = 0;
    openblas_state_t openblas = {.m = m, .n = n, .k = k, .x = x, .w = w, .y = y_reference};
    onednn_state_t onednn[2];
    ours_state_t ours[MAX_CANDIDATES];
    uform__gemm_packed_t packed_weights[MAX_CANDIDATES];
    void *packed_memory[MAX_CANDIDATES] = {0};
    for (size_t c = 0; c < sizeof bench_classes / sizeof bench_classes[0]; ++c) {
        if (!strstr(options->classes_list, bench_classes[c].name) || !uform_cpu_class_supported(bench_classes[c].cpu_class))
            continue;
        const uform__gemm_kernels_t *table = uform__gemm_kernels(bench_classes[c].cpu_class);
        int serial = bench_classes[c].cpu_class == UFORM_CPU_CLASS_SERIAL;
        for (int variant = 0; variant < 4; ++variant) {
            int bf16 = variant >= 2, packed = variant & 1, with_epilogue = 0;
            if (epilogue) { /* packed only, each without and with the epilogue */
                if (serial) continue;
                with_epilogue = packed, packed = 1;
            }
            if (serial && packed) continue; /* SERIAL is slow: its plain variants only */
            ours_state_t *o = &ours[count];
            *o = (ours_state_t){.table = table, .parallel = parallel, .bf16 = bf16};
            int x_bf16 = bf16 && !epilogue; /* with --epilogue: F32 activations, as the model's */
            o->args = (uform__gemm_forward_t){.m = m, .n = n, .k = k, .x = x_bf16 ? (void *)x16 : (void *)x, .ldx = k,
                                              .x_dtype = x_bf16 ? UFORM__GEMM_BF16 : UFORM__GEMM_F32,
                                              .w = bf16 ? (void *)w16 : (void *)w, .ldw = k,
                                              .w_dtype = bf16 ? UFORM__GEMM_BF16 : UFORM__GEMM_F32, .y = y, .ldy = n,
                                              .scratch = scratch, .scratch_capacity = scratch_size};
            if (with_epilogue) {
                o->args.bias = bias;
                o->args.gelu = epilogue_activations[epilogue];
                if (y_bf16) o->args.y_dtype = UFORM__GEMM_BF16, o->args.y = y16;
            }
            if (packed) {
                size_t size = bf16 ? table->packed_size_bf16(n, k, UFORM__GEMM_BF16) : table->packed_size_f32(n, k, UFORM__GEMM_F32);
                packed_memory[count] = aligned_alloc(64, (size + 63) / 64 * 64);
                uform__gemm_pack_fn pack = bf16 ? table->pack_bf16 : table->pack_f32;
                if (!packed_memory[count] ||
                    pack(o->args.w, k, o->args.w_dtype, n, k, packed_memory[count], size, &packed_weights[count], NULL) != UFORM_OK) {
                    fprintf(stderr, "packing failed\n");
                    exit(1);
                }
                o->args.packed = &packed_weights[count];
            }
            candidate_t *candidate = &candidates[count++];
            *candidate = (candidate_t){.engine = "uform", .class_name = bench_classes[c].name, .call = ours_call, .state = o,
                                       .bf16 = bf16, .serial = serial, .best = 1e30};
            char suffix[24] = "";
            if (with_epilogue) snprintf(suffix, sizeof suffix, "%s%s", epilogue_names[epilogue], y_bf16 ? " y16" : "");
            snprintf(candidate->variant, sizeof candidate->variant, "%s%s%s", bf16 ? "bf16" : "f32", packed ? " packed" : "", suffix);
            snprintf(candidate->label, sizeof candidate->label, "%s %s%s%s", bench_classes[c].name, bf16 ? "bf16" : "f32",
                     packed ? " packed" : "", suffix);
        }
    }
    size_t peers = count;
    printf("\nM=%zu K=%zu N=%zu, %zu thread%s (%.2f GFLOP per call)\n", m, k, n, threads, threads > 1 ? "s" : "", flops * 1e-9);
    count += add_onednn(candidates + count, onednn, options, m, n, k, dnnl_bf16, x16, w16, x, w, y, NULL);
    candidates[count++] = (candidate_t){.engine = "openblas", .variant = "f32", .label = "openblas f32", .call = openblas_call,
                                        .state = &openblas, .sleep_after_us = 150000, .best = 1e30};
    measure(candidates, count, options->rounds);
    /* Our results against OpenBLAS's (y_reference), once more each, untimed. */
    for (size_t i = 0; i < peers; ++i) {
        ours_state_t *o = candidates[i].state;
        int y16_out = o->args.y_dtype == UFORM__GEMM_BF16;
        o->args.y = y16_out ? (void *)y16 : (void *)y;
        candidates[i].call(o);
        if (y16_out)
            for (size_t e = 0; e < m * n; ++e) y[e] = uform__gemm_f32_from_bf16(y16[e]);
        candidates[i].failed = o->failed;
        candidates[i].difference = relative_difference(y, y_reference, m * n);
    }
    double openblas_gflops = flops / candidates[count - 1].best * 1e-9, blocked_gflops = 0;
    const char *blocked_name = "onednn";
    for (size_t i = peers; i + 1 < count; ++i)
        if (strstr(candidates[i].variant, "blocked")) blocked_gflops = flops / candidates[i].best * 1e-9, blocked_name = candidates[i].label;
    for (size_t order = 0; order < count; ++order) {
        size_t i = order < count - peers ? peers + order : order - (count - peers); /* peers first */
        candidate_t *candidate = &candidates[i];
        double gflops = candidate->failed ? 0 : flops / candidate->best * 1e-9;
        int ours_row = !strcmp(candidate->engine, "uform");
        double peak = row_peak(probes, ours_row ? candidate->class_name : NULL, candidate->bf16 ? "bf16" : "f32");
        double ratio = candidate->bf16 ? (blocked_gflops > 0 ? gflops / blocked_gflops : 0) : gflops / openblas_gflops;
        printf("  %-24s %8.1f GFLOP/s  ", candidate->label, gflops);
        if (peak > 0) printf("%5.1f%% of peak", 100.0 * gflops / peak);
        else printf("  (no peak)   ");
        if (ours_row)
            printf("  %5.2fx %-22s  max|diff| %.1e", ratio, candidate->bf16 ? blocked_name : "openblas", candidate->difference);
        printf("\n");
        fprintf(json, ",\n    {\"m\": %zu, \"k\": %zu, \"n\": %zu, \"threads\": %zu, \"engine\": \"%s\", ", m, k, n, threads,
                candidate->engine);
        if (ours_row) fprintf(json, "\"class\": \"%s\", ", candidate->class_name);
        fprintf(json, "\"variant\": \"%s\", \"gflops\": %.1f, \"fraction_of_peak\": %.3f", candidate->variant, gflops,
                peak > 0 ? gflops / peak : 0);
        if (ours_row)
            fprintf(json, ", \"ratio\": %.3f, \"ratio_to\": \"%s\", \"max_relative_difference_to_openblas\": %.2e", ratio,
                    candidate->bf16 ? blocked_name : "openblas f32", candidate->difference);
        fprintf(json, "}");
    }
    fflush(stdout);
    for (size_t i = 0; i < peers; ++i) free(packed_memory[i]);
    for (size_t i = peers; i + 1 < count; ++i) onednn_release(candidates[i].state);
    free(x), free(w), free(x16), free(w16), free(y), free(y_reference), free(bias), free(y16);
}

/* One shape of --int8 with `threads` threads: per class the F32 and BF16 packed products, the
 * INT8 product from quantized rows ("i8") and the same with the F32 rows quantized in every call
 * ("i8+q", what the model pays), against oneDNN's s8 matmul (per-column output scales; its F32
 * matmul where s8 is unimplemented) and OpenBLAS's sgemm. Each INT8 row's ratio is to the same
 * class's faster float product and to oneDNN's blocked s8. */
static void run_int8_shape(const bench_shape_t *shape, size_t index, size_t threads, const uform__parallel_t *parallel,
                           const run_options_t *options, void *scratch, size_t scratch_size,
                           const double probes[BENCH_PROBE_KINDS], FILE *json) {
    size_t m = shape->m, k = shape->k, n = shape->n, kp = uform__gemm_i8_k_padded(k);
    double flops = 2.0 * (double)m * (double)n * (double)k;
    float *x = aligned_alloc(64, m * k * sizeof(float)), *w = aligned_alloc(64, n * k * sizeof(float));
    uform__bf16_t *x16 = aligned_alloc(64, m * k * 2), *w16 = aligned_alloc(64, n * k * 2);
    float *y = aligned_alloc(64, m * n * sizeof(float)), *y_reference = aligned_alloc(64, m * n * sizeof(float));
    float *bias = aligned_alloc(64, (n + 15) / 16 * 64), *sx = malloc(m * sizeof(float)), *sw = malloc(n * sizeof(float));
    int8_t *qx = aligned_alloc(64, (m * kp + 63) / 64 * 64), *qw = aligned_alloc(64, (n * kp + 63) / 64 * 64);
    int8_t *qx_plain = malloc(m * k), *qw_plain = malloc(n * k);
    int32_t *sums = malloc(m * sizeof(int32_t));
    uint64_t state = 54321 + index;
    fill_random(&state, x, x16, m * k);
    fill_random(&state, w, w16, n * k);
    for (size_t i = 0; i < n; ++i) bias[i] = 0.0f; /* OpenBLAS and oneDNN add none */
    const uform__gemm_i8_kernels_t *serial = uform__gemm_i8_kernels(UFORM_CPU_CLASS_SERIAL);
    serial->quantize(m, k, x, k, UFORM__GEMM_F32, qx, kp, sx, sums, NULL);
    serial->quantize(n, k, w, k, UFORM__GEMM_F32, qw, kp, sw, NULL, NULL);
    for (size_t i = 0; i < m; ++i) memcpy(qx_plain + i * k, qx + i * kp, k);
    for (size_t j = 0; j < n; ++j) memcpy(qw_plain + j * k, qw + j * kp, k);

    candidate_t candidates[MAX_CANDIDATES];
    ours_state_t ours[MAX_CANDIDATES];
    void *packed_memory[MAX_CANDIDATES] = {0};
    uform__gemm_packed_t packed_weights[MAX_CANDIDATES];
    uform__gemm_i8_packed_t packed_i8[MAX_CANDIDATES];
    size_t count = 0;
    static const char *const variants[4] = {"f32 packed", "bf16 packed", "i8", "i8+q"};
    for (size_t c = 0; c < sizeof bench_classes / sizeof bench_classes[0]; ++c) {
        if (!strstr(options->classes_list, bench_classes[c].name) || !uform_cpu_class_supported(bench_classes[c].cpu_class))
            continue;
        const uform__gemm_kernels_t *table = uform__gemm_kernels(bench_classes[c].cpu_class);
        const uform__gemm_i8_kernels_t *i8 = uform__gemm_i8_kernels(bench_classes[c].cpu_class);
        int serial_class = bench_classes[c].cpu_class == UFORM_CPU_CLASS_SERIAL;
        for (int variant = 0; variant < 4; ++variant) {
            ours_state_t *o = &ours[count];
            *o = (ours_state_t){.table = table, .parallel = parallel, .bf16 = variant == 1};
            size_t size;
            if (variant < 2) {
                int bf16 = variant == 1;
                o->args = (uform__gemm_forward_t){.m = m, .n = n, .k = k, .x = bf16 ? (void *)x16 : (void *)x, .ldx = k,
                                                  .x_dtype = bf16 ? UFORM__GEMM_BF16 : UFORM__GEMM_F32,
                                                  .w = bf16 ? (void *)w16 : (void *)w, .ldw = k,
                                                  .w_dtype = bf16 ? UFORM__GEMM_BF16 : UFORM__GEMM_F32, .bias = bias,
                                                  .y = y, .ldy = n, .scratch = scratch, .scratch_capacity = scratch_size};
                size = bf16 ? table->packed_size_bf16(n, k, UFORM__GEMM_BF16) : table->packed_size_f32(n, k, UFORM__GEMM_F32);
                packed_memory[count] = aligned_alloc(64, (size + 63) / 64 * 64);
                if ((bf16 ? table->pack_bf16 : table->pack_f32)(o->args.w, k, o->args.w_dtype, n, k, packed_memory[count],
                                                                 size, &packed_weights[count], NULL) != UFORM_OK)
                    exit(1);
                o->args.packed = &packed_weights[count];
            } else {
                size = i8->packed_size(n, k);
                packed_memory[count] = aligned_alloc(64, (size + 63) / 64 * 64);
                if (i8->pack(qw, kp, sw, n, k, packed_memory[count], size, &packed_i8[count], NULL) != UFORM_OK) exit(1);
                o->i8 = i8, o->x32 = x, o->quantize = variant == 3;
                o->i8_args = (uform__gemm_i8_forward_t){.m = m, .n = n, .k = k, .x = {qx, kp, sx, sums}, .packed = &packed_i8[count],
                                                        .bias = bias, .y = y, .ldy = n, .output = UFORM__GEMM_I8_F32};
            }
            candidate_t *candidate = &candidates[count++];
            *candidate = (candidate_t){.engine = "uform", .class_name = bench_classes[c].name, .call = ours_call, .state = o,
                                       .bf16 = variant == 1, .serial = serial_class, .best = 1e30};
            snprintf(candidate->variant, sizeof candidate->variant, "%s", variants[variant]);
            snprintf(candidate->label, sizeof candidate->label, "%s %s", bench_classes[c].name, variants[variant]);
        }
    }
    size_t peers = count;
    printf("\nint8 M=%zu K=%zu N=%zu, %zu thread%s (%.2f G operations per call)\n", m, k, n, threads, threads > 1 ? "s" : "",
           flops * 1e-9);
    onednn_state_t onednn[2];
    count += add_onednn(candidates + count, onednn, options, m, n, k, dnnl_s8, qx_plain, qw_plain, x, w, y, sw);
    openblas_state_t openblas = {.m = m, .n = n, .k = k, .x = x, .w = w, .y = y_reference};
    candidates[count++] = (candidate_t){.engine = "openblas", .variant = "f32", .label = "openblas f32", .call = openblas_call,
                                        .state = &openblas, .sleep_after_us = 150000, .best = 1e30};
    measure(candidates, count, options->rounds);
    for (size_t i = 0; i < peers; ++i) { /* against OpenBLAS's F32 product: the INT8 rows show the quantization error */
        ours_state_t *o = candidates[i].state;
        candidates[i].call(o);
        candidates[i].failed = o->failed;
        candidates[i].difference = relative_difference(y, y_reference, m * n);
    }
    double onednn_s8 = 0;
    const char *onednn_name = "onednn";
    for (size_t i = peers; i + 1 < count; ++i)
        if (strstr(candidates[i].variant, "blocked")) onednn_s8 = flops / candidates[i].best * 1e-9, onednn_name = candidates[i].label;
    for (size_t order = 0; order < count; ++order) {
        size_t i = order < count - peers ? peers + order : order - (count - peers); /* peers first */
        candidate_t *candidate = &candidates[i];
        int ours_row = !strcmp(candidate->engine, "uform"), i8_row = ours_row && ((ours_state_t *)candidate->state)->i8;
        double rate = candidate->failed ? 0 : flops / candidate->best * 1e-9;
        const char *product = i8_row || (!ours_row && !strncmp(candidate->variant, "s8", 2) && !strchr(candidate->variant, '*'))
                                  ? "i8" : candidate->bf16 ? "bf16" : "f32";
        if (!ours_row && strchr(candidate->variant, '*')) product = "f32";
        double peak = row_peak(probes, ours_row ? candidate->class_name : NULL, product);
        printf("  %-24s %8.1f G op/s  ", candidate->label, rate);
        if (peak > 0) printf("%5.1f%% of %-18s", 100.0 * rate / peak, product[0] == 'i' ? "the int8 peak" : product[0] == 'b' ? "the bf16 peak" : "the f32 peak");
        else printf("  (no peak)                ");
        double float_rate = 0, ratio_onednn = 0;
        if (i8_row) {
            for (size_t j = 0; j < peers; ++j) /* this class's faster float product */
                if (!strcmp(candidates[j].class_name, candidate->class_name) && !((ours_state_t *)candidates[j].state)->i8)
                    float_rate = fmax(float_rate, flops / candidates[j].best * 1e-9);
            ratio_onednn = onednn_s8 > 0 ? rate / onednn_s8 : 0;
            printf("  %5.2fx its float  %5.2fx %s", rate / float_rate, ratio_onednn, onednn_name);
        }
        if (ours_row) printf("  max|diff| %.1e", candidate->difference);
        printf("\n");
        fprintf(json, ",\n    {\"product\": \"int8\", \"m\": %zu, \"k\": %zu, \"n\": %zu, \"threads\": %zu, \"engine\": \"%s\", ", m, k,
                n, threads, candidate->engine);
        if (ours_row) fprintf(json, "\"class\": \"%s\", ", candidate->class_name);
        fprintf(json, "\"variant\": \"%s\", \"gops\": %.1f, \"fraction_of_peak\": %.3f", candidate->variant, rate,
                peak > 0 ? rate / peak : 0);
        if (i8_row)
            fprintf(json, ", \"ratio_to_float\": %.3f, \"ratio_to_onednn\": %.3f", rate / float_rate, ratio_onednn);
        if (ours_row) fprintf(json, ", \"max_relative_difference_to_openblas\": %.2e", candidate->difference);
        fprintf(json, "}");
    }
    fflush(stdout);
    for (size_t i = 0; i < peers; ++i) free(packed_memory[i]);
    for (size_t i = peers; i + 1 < count; ++i) onednn_release(candidates[i].state);
    free(x), free(w), free(x16), free(w16), free(y), free(y_reference), free(bias), free(sx), free(sw), free(qx), free(qw);
    free(qx_plain), free(qw_plain), free(sums);
}

enum { BENCH_SHAPES_MAX = 64 };

/* --shape's list, "M,K,N" or "M,K,N;M,K,N;...": answers how many, or 0 when malformed. */
static size_t parse_shapes(const char *text, bench_shape_t *shapes) {
    size_t count = 0;
    for (const char *at = text; *at; ++count) {
        int used = 0;
        if (count == BENCH_SHAPES_MAX ||
            sscanf(at, "%zu,%zu,%zu%n", &shapes[count].m, &shapes[count].k, &shapes[count].n, &used) != 3 ||
            !shapes[count].m || !shapes[count].k || !shapes[count].n)
            return 0;
        at += used;
        if (*at == ';') ++at;
        else if (*at) return 0;
    }
    return count;
}

static int parse_arguments(int argc, char **argv, const char **json_path, char *threads_list, size_t threads_capacity,
                           char *classes_list, size_t classes_capacity, int *rounds, int *quick, bench_shape_t *shape,
                           size_t *shape_count, int *no_peaks, int *epilogue, int *y_bf16, int *backward, int *int8) {
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc) *json_path = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) snprintf(threads_list, threads_capacity, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--classes") && i + 1 < argc) snprintf(classes_list, classes_capacity, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) *rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--quick")) *quick = 1;
        else if (!strcmp(argv[i], "--y-bf16")) *y_bf16 = 1;
        else if (!strcmp(argv[i], "--backward")) *backward = 1;
        else if (!strcmp(argv[i], "--int8")) *int8 = 1;
        else if (!strcmp(argv[i], "--no-peaks")) *no_peaks = 1;
        else if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
            if ((*shape_count = parse_shapes(argv[++i], shape)) == 0) return -1;
        } else if (!strcmp(argv[i], "--epilogue") && i + 1 < argc) {
            ++i;
            *epilogue = -1;
            for (int e = 1; e < 6; ++e)
                if (!strcmp(argv[i], epilogue_names[e] + 1)) *epilogue = e;
            if (*epilogue < 0) return -1;
        } else return -1;
    }
    if (*rounds < 1) *rounds = 1;
    return 0;
}

int main(int argc, char **argv) {
    /* OpenBLAS reads these when it loads, before main: run again without them. */
    if (getenv("OPENBLAS_CORETYPE") || getenv("OPENBLAS_L2_SIZE")) {
        unsetenv("OPENBLAS_CORETYPE");
        unsetenv("OPENBLAS_L2_SIZE");
        execv("/proc/self/exe", argv);
        fprintf(stderr, "warning: could not re-run without OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE\n");
    }
    const char *json_path = "bench/results/gemm.json";
    char threads_list[64] = "1,2", classes_list[256] = "serial,haswell,skylake,icelake,genoa";
    int rounds = 5, quick = 0, epilogue = 0, y_bf16 = 0, backward = 0, int8 = 0;
    bench_shape_t given_shapes[BENCH_SHAPES_MAX];
    size_t given_count = 0;
    int no_peaks = 0;
    if (parse_arguments(argc, argv, &json_path, threads_list, sizeof threads_list, classes_list, sizeof classes_list,
                        &rounds, &quick, given_shapes, &given_count, &no_peaks, &epilogue, &y_bf16, &backward, &int8) != 0 ||
        (y_bf16 && !epilogue) ||
        (backward + (epilogue != 0) + int8 > 1)) {
        fprintf(stderr,
                "usage: %s [--json PATH] [--threads 1,2] [--classes serial,...,genoa] [--rounds R] [--quick]\n"
                "          [--shape M,K,N[;M,K,N...]] [--no-peaks]\n"
                "          [--epilogue bias|gelu|gelu-fast|quick|gelu-tanh] [--y-bf16 (with --epilogue)]\n"
                "          [--backward | --int8]\n",
                argv[0]);
        return 2;
    }
    FILE *json = fopen(json_path, "w");
    if (!json) {
        fprintf(stderr, "cannot write %s\n", json_path);
        return 1;
    }
    run_options_t options = {.classes_list = classes_list, .rounds = rounds, .epilogue = epilogue, .y_bf16 = y_bf16};
    if (dnnl_engine_create(&options.engine, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&options.stream, options.engine, dnnl_stream_default_flags) != dnnl_success) {
        fprintf(stderr, "oneDNN: no CPU engine\n");
        return 1;
    }
    fprintf(json,
            "{\n  \"benchmark\": \"gemm\",\n  \"cpu_class_detected\": \"%s\",\n  \"rounds\": %d,\n"
            "  \"timing\": \"1 thread: thread CPU time; more threads: wall-clock; fastest call of the rounds\",\n"
            "  \"results\": [",
            uform_cpu_class_name(uform_cpu_class_detect()), rounds);
    int first_record = 1;
    size_t shape_count = given_count ? given_count : quick ? 2 : backward ? sizeof bench_backward_shapes / sizeof bench_backward_shapes[0]
                                                      : int8 ? sizeof bench_int8_shapes / sizeof bench_int8_shapes[0]
                                                             : sizeof bench_shapes / sizeof bench_shapes[0];
    const bench_shape_t *shapes = given_count ? given_shapes : backward ? bench_backward_shapes : int8 ? bench_int8_shapes : bench_shapes;
    for (const char *threads_text = threads_list; *threads_text;) {
        size_t threads = strtoul(threads_text, NULL, 10);
        const char *comma = strchr(threads_text, ',');
        threads_text = comma ? comma + 1 : threads_text + strlen(threads_text);
        if (threads == 0) continue;
        bench_pool_t pool;
        if (bench_pool_start(&pool, threads) != 0) return 1;
        const uform__parallel_t *parallel = threads > 1 ? &pool.parallel : NULL;
        /* One scratch buffer for our calls (one runs at a time), as an arena would hold it. */
        size_t scratch_size = 0;
        for (size_t c = 0; c < sizeof bench_classes / sizeof bench_classes[0]; ++c) {
            size_t size = uform__gemm_kernels(bench_classes[c].cpu_class)->scratch_bytes(threads);
            if (size > scratch_size) scratch_size = size;
        }
        void *scratch = aligned_alloc(64, (scratch_size + 63) / 64 * 64);
        bench_clock = threads > 1 ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID;
        openblas_set_num_threads((int)threads);
        omp_set_num_threads((int)threads);

        /* The instruction peaks this CPU has, best of `rounds` runs of ≈0.1 s per loop. */
        double probes[BENCH_PROBE_KINDS] = {0}, loops[BENCH_PROBE_KINDS][BENCH_PROBE_LOOPS] = {{0}};
        printf("\n%zu thread%s (%s time): instruction peaks, G operations/s (an FMA lane is 2)\n", threads,
               threads > 1 ? "s" : "", threads > 1 ? "wall-clock" : "thread CPU");
        for (int kind = 0; kind < BENCH_PROBE_KINDS && !no_peaks; ++kind) {
            probes[kind] = bench_probe_peak((bench_probe_kind_t)kind, parallel, threads, rounds, bench_clock, loops[kind]);
            if (probes[kind] <= 0) {
                printf("  %-20s not on this CPU (needs %s)\n", bench_probe_names[kind], uform_cpu_class_name(bench_probe_class[kind]));
                continue;
            }
            printf("  %-20s %8.1f   loops:", bench_probe_names[kind], probes[kind]);
            for (int loop = 0; loop < BENCH_PROBE_LOOPS; ++loop) printf("  %s %.1f", bench_probe_loop_names[loop], loops[kind][loop]);
            printf("\n");
            fprintf(json, "%s\n    {\"threads\": %zu, \"engine\": \"peak\", \"variant\": \"%s\", \"gops\": %.1f}",
                    first_record ? "" : ",", threads, bench_probe_names[kind], probes[kind]);
            first_record = 0;
        }
        if (first_record) fprintf(json, "\n    {\"threads\": %zu, \"engine\": \"peak\", \"variant\": \"none\"}", threads);
        first_record = 0;
        for (size_t s = 0; s < shape_count; ++s) {
            if (backward) run_backward_shape(&shapes[s], threads, parallel, classes_list, rounds, scratch, scratch_size, probes, json);
            else if (int8) run_int8_shape(&shapes[s], s, threads, parallel, &options, scratch, scratch_size, probes, json);
            else run_forward_shape(&shapes[s], s, threads, parallel, &options, scratch, scratch_size, probes, json);
        }
        bench_pool_stop(&pool);
        free(scratch);
    }
    fprintf(json, "\n  ]\n}\n");
    fclose(json);
    dnnl_stream_destroy(options.stream);
    dnnl_engine_destroy(options.engine);
    printf("\nwrote %s\n", json_path);
    return 0;
}
