/*
 * Attention throughput per CPU class: packed items of 64, 197, 256 and 1,568 tokens (d = 384,
 * 6 heads of 64), forward, BF16 forward (attention_forward_bf16, its speed-up over the F32
 * forward in the "bf16/f32" column), backward and BF16 backward (attention_backward_bf16, its
 * speed-up over the F32 backward in the last column), with 1 and 2 threads; optionally PyTorch
 * (float32 and bfloat16, the same packed items, eager matmul + softmax) in the same run. Prints a
 * table and writes JSON.
 *
 * Usage: bench_attention [output.json] [--no-torch] [--no-serial] (SERIAL at 1,568 tokens takes
 * minutes on a loaded machine). FLOPs counted: forward 4·L²·d per item
 * (Q·Kᵀ and P·V), backward 8·L²·d (dO·Vᵀ, dV, dK and dQ; the recomputed Q·Kᵀ is not counted: the
 * fused backward executes 5 products of 2·L²·d, so 10·L²·d; 8·L²·d is the usual convention and
 * what the GFLOP/s columns use).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bench_clock.h"
#include "common/check.h"
#include "core/parallel.h"
#include "kernels/nn.h"
#include "uform/uform.h"

#ifndef BENCH_RESULTS_DIRECTORY
#define BENCH_RESULTS_DIRECTORY "bench/results"
#endif
#ifndef BENCH_TORCH_PYTHON
#define BENCH_TORCH_PYTHON "/usr/bin/python3"
#endif

/* A pool that starts its workers per call; prongs are handed out through a locked counter. */
typedef struct pool_t {
    size_t threads, n, next;
    uform__prong_fn fn;
    void *context;
    pthread_mutex_t lock;
} pool_t;

typedef struct worker_t {
    pool_t *pool;
    size_t thread;
} worker_t;

static void *pool_work(void *opaque) {
    worker_t *worker = opaque;
    pool_t *pool = worker->pool;
    for (;;) {
        pthread_mutex_lock(&pool->lock);
        size_t prong = pool->next < pool->n ? pool->next++ : pool->n;
        pthread_mutex_unlock(&pool->lock);
        if (prong >= pool->n) return NULL;
        pool->fn(pool->context, worker->thread, prong);
    }
}

static void pool_for_n(void *self, size_t n, uform__prong_fn fn, void *context) {
    pool_t *pool = self;
    pool->n = n, pool->next = 0, pool->fn = fn, pool->context = context;
    pthread_t handles[8];
    worker_t workers[8];
    for (size_t t = 1; t < pool->threads; ++t) {
        workers[t] = (worker_t){pool, t};
        pthread_create(&handles[t], NULL, pool_work, &workers[t]);
    }
    worker_t self_worker = {pool, 0};
    pool_work(&self_worker);
    for (size_t t = 1; t < pool->threads; ++t) pthread_join(handles[t], NULL);
}

static float *aligned_floats(size_t n) {
    return aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
}

typedef struct row_t {
    const char *cpu_class;
    size_t length, items, threads;
    double forward_seconds, backward_seconds, forward_cpu_seconds, backward_cpu_seconds;
    double bf16_seconds, bf16_cpu_seconds; /* attention_forward_bf16 */
    double bf16_backward_seconds, bf16_backward_cpu_seconds; /* attention_backward_bf16 */
} row_t;

int main(int argc, char **argv) {
    const char *output = BENCH_RESULTS_DIRECTORY "/attention.json";
    int torch = 1, serial = 1;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--no-torch")) torch = 0;
        else if (!strcmp(argv[i], "--no-serial")) serial = 0;
        else output = argv[i];
    }
    const size_t heads = 6, head_width = 64, d = heads * head_width;
    const size_t lengths[] = {64, 197, 256, 1568};
    const uform_cpu_class_t classes[] = {UFORM_CPU_CLASS_SERIAL, UFORM_CPU_CLASS_INTEL_HASWELL,
                                         UFORM_CPU_CLASS_INTEL_SKYLAKE, UFORM_CPU_CLASS_AMD_GENOA};
    row_t rows[64];
    size_t row_count = 0;

    printf("%-14s %6s %5s %3s %12s %9s %11s %12s %9s %11s %9s %11s %7s %9s %11s %7s\n", "class", "length", "items",
           "thr", "fwd tok/s", "fwd GF/s", "fwd GF/cpu-s", "bwd tok/s", "bwd GF/s", "bwd GF/cpu-s", "bf16 GF/s",
           "bf16 GF/cpu", "bf16/f32", "bwd16 GF/s", "bwd16 GF/cpu", "b16/f32");
    for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; ++l) {
        size_t length = lengths[l];
        size_t items = (8192 + length - 1) / length; /* about 8k tokens a batch */
        size_t tokens = items * length;
        size_t *offsets = malloc((items + 1) * sizeof(size_t));
        for (size_t i = 0; i <= items; ++i) offsets[i] = i * length;
        /* 64-byte aligned, as the engine's arena hands them out (unaligned rows cost ~5%). */
        float *qkv = aligned_floats(tokens * 3 * d), *out = aligned_floats(tokens * d);
        float *lse = aligned_floats(heads * tokens), *dout = aligned_floats(tokens * d);
        float *dqkv = aligned_floats(tokens * 3 * d), *deltas = aligned_floats(heads * tokens);
        uint64_t state = 42;
        for (size_t i = 0; i < tokens * 3 * d; ++i) qkv[i] = check_random_float(&state);
        for (size_t i = 0; i < tokens * d; ++i) dout[i] = check_random_float(&state);
        uform__attention_shape_t shape = {tokens, heads, head_width, offsets, items};
        double flops_forward = 4.0 * (double)length * (double)length * (double)d * (double)items;

        for (size_t k = 0; k < sizeof classes / sizeof classes[0]; ++k) {
            if (!uform_cpu_class_supported(classes[k])) continue;
            if (!serial && classes[k] == UFORM_CPU_CLASS_SERIAL) continue;
            const uform__nn_kernels_t *kernels = uform__nn_kernels(classes[k]);
            for (size_t threads = 1; threads <= 2; ++threads) {
                pool_t pool = {.threads = threads};
                pthread_mutex_init(&pool.lock, NULL);
                uform__parallel_t parallel = {threads, pool_for_n, &pool};
                const uform__parallel_t *used = threads > 1 ? &parallel : NULL;
                /* Warm up once, then repeat for at least 0.4 s (serial at 1,568 tokens: once). */
                double best_forward = 1e30, best_backward = 1e30, start = bench_seconds();
                double best_forward_cpu = 1e30, best_backward_cpu = 1e30, best_bf16 = 1e30, best_bf16_cpu = 1e30;
                double best_bf16_backward = 1e30, best_bf16_backward_cpu = 1e30;
                kernels->attention_forward(&shape, qkv, out, lse, used);
                kernels->attention_forward_bf16(&shape, qkv, out, lse, used);
                int reps = 0;
                do {
                    double t0 = bench_seconds(), c0 = bench_cpu_seconds();
                    kernels->attention_forward_bf16(&shape, qkv, out, lse, used);
                    double t1 = bench_seconds(), c1 = bench_cpu_seconds();
                    if (t1 - t0 < best_bf16) best_bf16 = t1 - t0;
                    if (c1 - c0 < best_bf16_cpu) best_bf16_cpu = c1 - c0;
                    t0 = bench_seconds(), c0 = bench_cpu_seconds();
                    kernels->attention_backward_bf16(&shape, qkv, out, lse, dout, deltas, dqkv, used);
                    t1 = bench_seconds(), c1 = bench_cpu_seconds();
                    if (t1 - t0 < best_bf16_backward) best_bf16_backward = t1 - t0;
                    if (c1 - c0 < best_bf16_backward_cpu) best_bf16_backward_cpu = c1 - c0;
                    t0 = bench_seconds(), c0 = bench_cpu_seconds();
                    kernels->attention_forward(&shape, qkv, out, lse, used);
                    t1 = bench_seconds(), c1 = bench_cpu_seconds();
                    kernels->attention_backward(&shape, qkv, out, lse, dout, deltas, dqkv, used);
                    double t2 = bench_seconds(), c2 = bench_cpu_seconds();
                    if (t1 - t0 < best_forward) best_forward = t1 - t0;
                    if (t2 - t1 < best_backward) best_backward = t2 - t1;
                    if (c1 - c0 < best_forward_cpu) best_forward_cpu = c1 - c0;
                    if (c2 - c1 < best_backward_cpu) best_backward_cpu = c2 - c1;
                    ++reps;
                } while (bench_seconds() - start < 0.4 && reps < 50);
                pthread_mutex_destroy(&pool.lock);
                rows[row_count++] = (row_t){uform_cpu_class_name(classes[k]),
                                            length,
                                            items,
                                            threads,
                                            best_forward,
                                            best_backward,
                                            best_forward_cpu,
                                            best_backward_cpu,
                                            best_bf16,
                                            best_bf16_cpu,
                                            best_bf16_backward,
                                            best_bf16_backward_cpu};
                printf("%-14s %6zu %5zu %3zu %12.0f %9.1f %11.1f %12.0f %9.1f %11.1f %9.1f %11.1f %6.2fx %9.1f %11.1f "
                       "%6.2fx\n",
                       uform_cpu_class_name(classes[k]), length, items, threads, (double)tokens / best_forward,
                       flops_forward / best_forward * 1e-9, flops_forward / best_forward_cpu * 1e-9,
                       (double)tokens / best_backward, 2.0 * flops_forward / best_backward * 1e-9,
                       2.0 * flops_forward / best_backward_cpu * 1e-9, flops_forward / best_bf16 * 1e-9,
                       flops_forward / best_bf16_cpu * 1e-9, best_forward / best_bf16,
                       2.0 * flops_forward / best_bf16_backward * 1e-9,
                       2.0 * flops_forward / best_bf16_backward_cpu * 1e-9, best_backward / best_bf16_backward);
                fflush(stdout);
            }
        }
        free(offsets), free(qkv), free(out), free(lse), free(dout), free(dqkv), free(deltas);
    }

    /* PyTorch in the same run: the same packed shapes, float32, eager ops, 1 and 2 threads. */
    char torch_lines[8192] = "";
    if (torch) {
        char command[2048];
        snprintf(command, sizeof command,
                 "'%s' - <<'PY' 2>/dev/null\n"
                 "import time, torch\n"
                 "torch.manual_seed(0)\n"
                 "H, dh = 6, 64\n"
                 "for L in (64, 197, 256, 1568):\n"
                 "  items = (8192 + L - 1) // L\n"
                 "  for name, dtype in (('torch-f32', torch.float32), ('torch-bf16', torch.bfloat16)):\n"
                 "    q, k, v = (torch.randn(items, H, L, dh).to(dtype) for _ in range(3))\n"
                 "    for threads in (1, 2):\n"
                 "      torch.set_num_threads(threads)\n"
                 "      def run():\n"
                 "        w = torch.softmax(q @ k.transpose(-1, -2) / dh ** 0.5, -1)\n"
                 "        return w @ v\n"
                 "      run(); best = cpu = 1e30; start = time.perf_counter(); reps = 0\n"
                 "      while time.perf_counter() - start < 0.4 and reps < 50:\n"
                 "        t0 = time.perf_counter(); c0 = time.process_time(); run()\n"
                 "        best = min(best, time.perf_counter() - t0); cpu = min(cpu, time.process_time() - c0)\n"
                 "        reps += 1\n"
                 "      print(name, L, items, threads, best, cpu)\n"
                 "PY",
                 BENCH_TORCH_PYTHON);
        FILE *pipe = popen(command, "r");
        if (pipe) {
            size_t used = fread(torch_lines, 1, sizeof torch_lines - 1, pipe);
            torch_lines[used] = 0;
            pclose(pipe);
        }
    }
    struct {
        char name[16];
        size_t length, items, threads;
        double seconds, cpu_seconds;
    } torch_rows[32];
    size_t torch_count = 0;
    for (char *line = strtok(torch_lines, "\n"); line && torch_count < 32; line = strtok(NULL, "\n"))
        if (sscanf(line, "%15s %zu %zu %zu %lf %lf", torch_rows[torch_count].name, &torch_rows[torch_count].length,
                   &torch_rows[torch_count].items, &torch_rows[torch_count].threads, &torch_rows[torch_count].seconds,
                   &torch_rows[torch_count].cpu_seconds) == 6)
            ++torch_count;
    for (size_t t = 0; t < torch_count; ++t) {
        double tokens = (double)(torch_rows[t].length * torch_rows[t].items);
        double flops =
            4.0 * (double)torch_rows[t].length * (double)torch_rows[t].length * (double)d * (double)torch_rows[t].items;
        printf("%-14s %6zu %5zu %3zu %12.0f %9.1f %11.1f %12s %9s %11s\n", torch_rows[t].name, torch_rows[t].length,
               torch_rows[t].items, torch_rows[t].threads, tokens / torch_rows[t].seconds,
               flops / torch_rows[t].seconds * 1e-9, flops / torch_rows[t].cpu_seconds * 1e-9, "-", "-", "-");
    }

    mkdir(BENCH_RESULTS_DIRECTORY, 0755);
    FILE *json = fopen(output, "w");
    if (!json) {
        fprintf(stderr, "cannot write %s: %s\n", output, strerror(errno));
        return 0;
    }
    fprintf(
        json,
        "{\n  \"benchmark\": \"attention\",\n  \"d\": %zu,\n  \"heads\": %zu,\n  \"tokens_per_batch_about\": 8192,\n",
        d, heads);
    fprintf(json,
            "  \"flops_forward\": \"4*L^2*d per item\",\n  \"flops_backward\": \"8*L^2*d per item\",\n  \"rows\": [\n");
    for (size_t r = 0; r < row_count; ++r) {
        double tokens = (double)(rows[r].length * rows[r].items);
        double flops = 4.0 * (double)rows[r].length * (double)rows[r].length * (double)d * (double)rows[r].items;
        fprintf(
            json,
            "    {\"class\": \"%s\", \"length\": %zu, \"items\": %zu, \"threads\": %zu, \"forward_seconds\": %.6g, "
            "\"forward_tokens_per_second\": %.6g, \"forward_gflops\": %.4g, \"backward_seconds\": %.6g, "
            "\"backward_tokens_per_second\": %.6g, \"backward_gflops\": %.4g, \"forward_gflops_per_cpu_second\": %.4g, "
            "\"backward_gflops_per_cpu_second\": %.4g, \"forward_bf16_seconds\": %.6g, \"forward_bf16_gflops\": %.4g, "
            "\"forward_bf16_gflops_per_cpu_second\": %.4g, \"backward_bf16_seconds\": %.6g, "
            "\"backward_bf16_gflops\": %.4g, \"backward_bf16_gflops_per_cpu_second\": %.4g}%s\n",
            rows[r].cpu_class, rows[r].length, rows[r].items, rows[r].threads, rows[r].forward_seconds,
            tokens / rows[r].forward_seconds, flops / rows[r].forward_seconds * 1e-9, rows[r].backward_seconds,
            tokens / rows[r].backward_seconds, 2 * flops / rows[r].backward_seconds * 1e-9,
            flops / rows[r].forward_cpu_seconds * 1e-9, 2 * flops / rows[r].backward_cpu_seconds * 1e-9,
            rows[r].bf16_seconds, flops / rows[r].bf16_seconds * 1e-9, flops / rows[r].bf16_cpu_seconds * 1e-9,
            rows[r].bf16_backward_seconds, 2 * flops / rows[r].bf16_backward_seconds * 1e-9,
            2 * flops / rows[r].bf16_backward_cpu_seconds * 1e-9, r + 1 < row_count || torch_count ? "," : "");
    }
    for (size_t t = 0; t < torch_count; ++t) {
        double tokens = (double)(torch_rows[t].length * torch_rows[t].items);
        double flops =
            4.0 * (double)torch_rows[t].length * (double)torch_rows[t].length * (double)d * (double)torch_rows[t].items;
        fprintf(
            json,
            "    {\"class\": \"%s\", \"length\": %zu, \"items\": %zu, \"threads\": %zu, \"forward_seconds\": "
            "%.6g, \"forward_tokens_per_second\": %.6g, \"forward_gflops\": %.4g, \"forward_gflops_per_cpu_second\": "
            "%.4g}%s\n",
            torch_rows[t].name, torch_rows[t].length, torch_rows[t].items, torch_rows[t].threads,
            torch_rows[t].seconds, tokens / torch_rows[t].seconds, flops / torch_rows[t].seconds * 1e-9,
            flops / torch_rows[t].cpu_seconds * 1e-9, t + 1 < torch_count ? "," : "");
    }
    fprintf(json, "  ]\n}\n");
    fclose(json);
    printf("wrote %s\n", output);
    return 0;
}
