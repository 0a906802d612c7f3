/*
 * bench_gemm: GFLOP/s of the forward product Y[M,N] = X[M,K]·W[N,K]ᵀ per CPU class, side by side
 * in the same run with OpenBLAS's sgemm (F32) and oneDNN's BF16 matmul (BF16 × BF16 → F32, with
 * plain [N,K] weights and with weights in oneDNN's own blocked layout, reordered once), printed
 * as a table with ratios and written as JSON.
 *
 * Shapes: M = 4096 tokens with (K, N) ∈ {(384, 1152), (384, 1536), (1536, 384), (768, 2304),
 * (768, 3072), (3072, 768)}, and square 1024 and 2048; 1 and 2 threads.
 * Ours, per class: "f32" (F32 X and W, W plain), "f32 packed", "bf16" (BF16 X and W, W plain),
 * "bf16 packed". Ratios: F32 against OpenBLAS, BF16 against oneDNN blocked.
 *
 * Usage: bench_gemm [--json PATH] [--threads 1,2] [--classes serial,haswell,skylake,icelake,genoa]
 *                   [--seconds S] [--quick]
 * The JSON path defaults to bench/results/gemm.json (relative to the working directory).
 * Each measurement repeats the call until S seconds (default 0.4) and at least 2 calls have
 * passed and keeps the fastest; one warm-up call precedes it.
 *
 * Run it with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (this environment may set them and
 * they would pin OpenBLAS to another core's kernels):
 *     env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ./bench_gemm --json ../bench/results/gemm.json
 * OpenBLAS threads are set with openblas_set_num_threads, oneDNN's (Debian builds it with
 * OpenMP) with omp_set_num_threads; ours use the pool in bench_gemm_pool.h. Between libraries
 * the benchmark sleeps 50 ms so idle spinning threads of one do not steal cores from the next.
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

#include "bench_gemm_pool.h"
#include "kernels/gemm.h"

typedef struct bench_shape_t {
    size_t m, k, n;
} bench_shape_t;

static const bench_shape_t bench_shapes[] = {
    {4096, 384, 1152}, {4096, 384, 1536}, {4096, 1536, 384}, {4096, 768, 2304},
    {4096, 768, 3072}, {4096, 3072, 768}, {1024, 1024, 1024}, {2048, 2048, 2048},
};

static double now_seconds(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + 1e-9 * (double)time.tv_nsec;
}

static double seconds_per_measurement = 0.4;

typedef void (*bench_call_fn)(void *state);

/* Fastest of repeated calls, in seconds. */
static double best_time(bench_call_fn call, void *state) {
    call(state); /* warm-up: page faults, oneDNN's JIT, thread start */
    double best = 1e30, start = now_seconds();
    int calls = 0;
    while (calls < 2 || now_seconds() - start < seconds_per_measurement) {
        double begin = now_seconds();
        call(state);
        double elapsed = now_seconds() - begin;
        if (elapsed < best) best = elapsed;
        ++calls;
    }
    return best;
}

/* ---- Ours ---- */

typedef struct ours_state_t {
    const uform__gemm_kernels_t *table;
    uform__gemm_forward_t args;
    const uform__parallel_t *parallel;
    int bf16;
    int failed;
} ours_state_t;

static void ours_call(void *state_pointer) {
    ours_state_t *state = state_pointer;
    uform_outcome_t outcome = {0};
    uform__gemm_forward_fn forward = state->bf16 ? state->table->forward_bf16 : state->table->forward_f32;
    if (forward(&state->args, state->parallel, &outcome) != UFORM_OK) {
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
            return -1.0;                                                                   \
        }                                                                                  \
    } while (0)

/* Seconds per call of oneDNN's BF16 matmul: src [M,K] bf16, weights [K,N] bf16 given as our
 * [N,K] rows (tag "ba"), dst [M,N] f32; `blocked` lets oneDNN choose the weight layout
 * (format_tag_any) and reorders once before timing. */
static double onednn_time(dnnl_engine_t engine, dnnl_stream_t stream, size_t m, size_t n, size_t k,
                          const uform__bf16_t *x, const uform__bf16_t *w, float *y, int blocked) {
    dnnl_memory_desc_t src_md, weights_plain_md, weights_md, dst_md;
    dnnl_dims_t src_dims = {(dnnl_dim_t)m, (dnnl_dim_t)k}, weights_dims = {(dnnl_dim_t)k, (dnnl_dim_t)n},
                dst_dims = {(dnnl_dim_t)m, (dnnl_dim_t)n};
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&src_md, 2, src_dims, dnnl_bf16, dnnl_ab));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&weights_plain_md, 2, weights_dims, dnnl_bf16, dnnl_ba));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&weights_md, 2, weights_dims, dnnl_bf16, blocked ? dnnl_format_tag_any : dnnl_ba));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&dst_md, 2, dst_dims, dnnl_f32, dnnl_ab));
    dnnl_matmul_desc_t matmul_desc;
    DNNL_TRY(dnnl_matmul_desc_init(&matmul_desc, &src_md, &weights_md, NULL, &dst_md));
    dnnl_primitive_desc_t matmul_pd;
    DNNL_TRY(dnnl_primitive_desc_create(&matmul_pd, &matmul_desc, NULL, engine, NULL));
    const dnnl_memory_desc_t *chosen_md = dnnl_primitive_desc_query_md(matmul_pd, dnnl_query_weights_md, 0);
    onednn_state_t state = {.stream = stream};
    DNNL_TRY(dnnl_primitive_create(&state.matmul, matmul_pd));
    DNNL_TRY(dnnl_memory_create(&state.src, &src_md, engine, (void *)x));
    DNNL_TRY(dnnl_memory_create(&state.dst, &dst_md, engine, y));
    dnnl_memory_t weights_plain;
    DNNL_TRY(dnnl_memory_create(&weights_plain, &weights_plain_md, engine, (void *)w));
    if (blocked) {
        DNNL_TRY(dnnl_memory_create(&state.weights, chosen_md, engine, DNNL_MEMORY_ALLOCATE));
        dnnl_primitive_desc_t reorder_pd;
        DNNL_TRY(dnnl_reorder_primitive_desc_create(&reorder_pd, &weights_plain_md, engine, chosen_md, engine, NULL));
        dnnl_primitive_t reorder;
        DNNL_TRY(dnnl_primitive_create(&reorder, reorder_pd));
        dnnl_exec_arg_t arguments[2] = {{DNNL_ARG_FROM, weights_plain}, {DNNL_ARG_TO, state.weights}};
        DNNL_TRY(dnnl_primitive_execute(reorder, stream, 2, arguments));
        DNNL_TRY(dnnl_stream_wait(stream));
        dnnl_primitive_destroy(reorder);
        dnnl_primitive_desc_destroy(reorder_pd);
    } else {
        state.weights = weights_plain;
    }
    double seconds = best_time(onednn_call, &state);
    if (state.failed) seconds = -1.0;
    if (blocked) dnnl_memory_destroy(state.weights);
    dnnl_memory_destroy(weights_plain);
    dnnl_memory_destroy(state.src);
    dnnl_memory_destroy(state.dst);
    dnnl_primitive_destroy(state.matmul);
    dnnl_primitive_desc_destroy(matmul_pd);
    return seconds;
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

int main(int argc, char **argv) {
    const char *json_path = "bench/results/gemm.json";
    char threads_list[64] = "1,2", classes_list[256] = "serial,haswell,skylake,icelake,genoa";
    int quick = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) snprintf(threads_list, sizeof threads_list, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--classes") && i + 1 < argc) snprintf(classes_list, sizeof classes_list, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds_per_measurement = atof(argv[++i]);
        else if (!strcmp(argv[i], "--quick")) quick = 1;
        else {
            fprintf(stderr, "usage: %s [--json PATH] [--threads 1,2] [--classes serial,...,genoa] [--seconds S] [--quick]\n", argv[0]);
            return 2;
        }
    }
    if (getenv("OPENBLAS_CORETYPE") || getenv("OPENBLAS_L2_SIZE"))
        fprintf(stderr, "warning: OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are set; run under env -u to measure OpenBLAS as shipped\n");
    FILE *json = fopen(json_path, "w");
    if (!json) {
        fprintf(stderr, "cannot write %s\n", json_path);
        return 1;
    }
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) != dnnl_success) {
        fprintf(stderr, "oneDNN: no CPU engine\n");
        return 1;
    }
    fprintf(json, "{\n  \"benchmark\": \"gemm\",\n  \"cpu_class_detected\": \"%s\",\n  \"results\": [\n",
            uform_cpu_class_name(uform_cpu_class_detect()));
    int first_record = 1;
    size_t shape_count = quick ? 2 : sizeof bench_shapes / sizeof bench_shapes[0];
    for (const char *threads_text = threads_list; *threads_text;) {
        size_t threads = strtoul(threads_text, NULL, 10);
        const char *comma = strchr(threads_text, ',');
        threads_text = comma ? comma + 1 : threads_text + strlen(threads_text);
        if (threads == 0) continue;
        bench_pool_t pool;
        if (bench_pool_start(&pool, threads) != 0) return 1;
        openblas_set_num_threads((int)threads);
        omp_set_num_threads((int)threads);
        for (size_t s = 0; s < shape_count; ++s) {
            size_t m = bench_shapes[s].m, k = bench_shapes[s].k, n = bench_shapes[s].n;
            double flops = 2.0 * (double)m * (double)n * (double)k;
            float *x = aligned_alloc(64, m * k * sizeof(float)), *w = aligned_alloc(64, n * k * sizeof(float));
            uform__bf16_t *x16 = aligned_alloc(64, m * k * 2), *w16 = aligned_alloc(64, n * k * 2);
            float *y = aligned_alloc(64, m * n * sizeof(float)), *y_reference = aligned_alloc(64, m * n * sizeof(float));
            uint64_t state = 12345 + s;
            for (size_t i = 0; i < m * k; ++i) {
                state = state * 6364136223846793005ull + 1442695040888963407ull;
                x[i] = (float)((double)(state >> 40) / 16777216.0 - 0.5);
                x16[i] = uform__gemm_bf16_from_f32(x[i]);
            }
            for (size_t i = 0; i < n * k; ++i) {
                state = state * 6364136223846793005ull + 1442695040888963407ull;
                w[i] = (float)((double)(state >> 40) / 16777216.0 - 0.5);
                w16[i] = uform__gemm_bf16_from_f32(w[i]);
            }
            printf("\nM=%zu K=%zu N=%zu, %zu thread%s (%.2f GFLOP per call)\n", m, k, n, threads, threads > 1 ? "s" : "",
                   flops * 1e-9);
            openblas_state_t openblas = {.m = m, .n = n, .k = k, .x = x, .w = w, .y = y_reference};
            double openblas_seconds = best_time(openblas_call, &openblas);
            usleep(50000);
            double onednn_plain = onednn_time(engine, stream, m, n, k, x16, w16, y, 0);
            double onednn_blocked = onednn_time(engine, stream, m, n, k, x16, w16, y, 1);
            usleep(50000);
            double openblas_gflops = flops / openblas_seconds * 1e-9;
            double blocked_gflops = onednn_blocked > 0 ? flops / onednn_blocked * 1e-9 : 0;
            double plain_gflops = onednn_plain > 0 ? flops / onednn_plain * 1e-9 : 0;
            printf("  %-22s %9.1f GFLOP/s\n", "openblas f32", openblas_gflops);
            printf("  %-22s %9.1f GFLOP/s\n", "onednn bf16 plain", plain_gflops);
            printf("  %-22s %9.1f GFLOP/s\n", "onednn bf16 blocked", blocked_gflops);
            fprintf(json,
                    "%s    {\"m\": %zu, \"k\": %zu, \"n\": %zu, \"threads\": %zu, \"engine\": \"openblas\", \"variant\": "
                    "\"f32\", \"gflops\": %.1f},\n"
                    "    {\"m\": %zu, \"k\": %zu, \"n\": %zu, \"threads\": %zu, \"engine\": \"onednn\", \"variant\": "
                    "\"bf16 plain\", \"gflops\": %.1f},\n"
                    "    {\"m\": %zu, \"k\": %zu, \"n\": %zu, \"threads\": %zu, \"engine\": \"onednn\", \"variant\": "
                    "\"bf16 blocked\", \"gflops\": %.1f}",
                    first_record ? "" : ",\n", m, k, n, threads, openblas_gflops, m, k, n, threads, plain_gflops, m, k,
                    n, threads, blocked_gflops);
            first_record = 0;
            for (size_t c = 0; c < sizeof bench_classes / sizeof bench_classes[0]; ++c) {
                if (!strstr(classes_list, bench_classes[c].name)) continue;
                if (!uform_cpu_class_supported(bench_classes[c].cpu_class)) continue;
                const uform__gemm_kernels_t *table = uform__gemm_kernels(bench_classes[c].cpu_class);
                /* SERIAL is slow: only its plain variants, one timed call each. */
                int serial = bench_classes[c].cpu_class == UFORM_CPU_CLASS_SERIAL;
                for (int variant = 0; variant < 4; ++variant) {
                    int bf16 = variant >= 2, packed = variant & 1;
                    if (serial && packed) continue;
                    ours_state_t ours = {.table = table, .parallel = threads > 1 ? &pool.parallel : NULL, .bf16 = bf16};
                    ours.args = (uform__gemm_forward_t){.m = m, .n = n, .k = k, .x = bf16 ? (void *)x16 : (void *)x,
                                                        .ldx = k, .x_dtype = bf16 ? UFORM__GEMM_BF16 : UFORM__GEMM_F32,
                                                        .w = bf16 ? (void *)w16 : (void *)w, .ldw = k,
                                                        .w_dtype = bf16 ? UFORM__GEMM_BF16 : UFORM__GEMM_F32, .y = y,
                                                        .ldy = n};
                    uform__gemm_packed_t packed_weight;
                    void *memory = NULL;
                    if (packed) {
                        size_t size = bf16 ? table->packed_size_bf16(n, k, UFORM__GEMM_BF16)
                                           : table->packed_size_f32(n, k, UFORM__GEMM_F32);
                        memory = aligned_alloc(64, (size + 63) / 64 * 64);
                        uform__gemm_pack_fn pack = bf16 ? table->pack_bf16 : table->pack_f32;
                        if (!memory || pack(ours.args.w, k, ours.args.w_dtype, n, k, memory, size, &packed_weight, NULL) != UFORM_OK) {
                            fprintf(stderr, "packing failed\n");
                            return 1;
                        }
                        ours.args.packed = &packed_weight;
                    }
                    double saved = seconds_per_measurement;
                    if (serial) seconds_per_measurement = 0;
                    double seconds = best_time(ours_call, &ours);
                    seconds_per_measurement = saved;
                    double gflops = ours.failed ? 0 : flops / seconds * 1e-9;
                    double ratio = bf16 ? (blocked_gflops > 0 ? gflops / blocked_gflops : 0) : gflops / openblas_gflops;
                    double difference = relative_difference(y, y_reference, m * n);
                    char label[64];
                    snprintf(label, sizeof label, "%s %s%s", bench_classes[c].name, bf16 ? "bf16" : "f32", packed ? " packed" : "");
                    printf("  %-22s %9.1f GFLOP/s  %5.2fx %s  (max |diff| vs openblas %.1e of max |y|)\n", label, gflops,
                           ratio, bf16 ? "onednn blocked" : "openblas", difference);
                    fprintf(json,
                            ",\n    {\"m\": %zu, \"k\": %zu, \"n\": %zu, \"threads\": %zu, \"engine\": \"uform\", \"class\": "
                            "\"%s\", \"variant\": \"%s%s\", \"gflops\": %.1f, \"ratio\": %.3f, \"ratio_to\": \"%s\"}",
                            m, k, n, threads, bench_classes[c].name, bf16 ? "bf16" : "f32", packed ? " packed" : "", gflops,
                            ratio, bf16 ? "onednn bf16 blocked" : "openblas f32");
                    free(memory);
                    fflush(stdout);
                }
            }
            usleep(50000);
            free(x), free(w), free(x16), free(w16), free(y), free(y_reference);
        }
        bench_pool_stop(&pool);
    }
    fprintf(json, "\n  ]\n}\n");
    fclose(json);
    dnnl_stream_destroy(stream);
    dnnl_engine_destroy(engine);
    printf("\nwrote %s\n", json_path);
    return 0;
}
