/*
 * The BF16 GEMM peak a benchmark's MFU is measured against, taken in the same run: the best of 15
 * products M=4096, K=768, N=3072 with packed BF16 weights (the largest transformer product of the
 * `small`/`base` shapes) on the executor's threads. Shared by bench_encode and bench_train.
 */
#ifndef UFORM_BENCH_PEAK_H
#define UFORM_BENCH_PEAK_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "exec/call.h"
#include "kernels/gemm.h"
#include "uform/uform.h"

static inline double bench_peak_seconds(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + (double)time.tv_nsec * 1e-9;
}

/* CPU seconds of the whole process (every thread, user and system): a rate per CPU-second
 * survives other processes sharing the cores, where wall-clock rates do not. */
static inline double bench_process_cpu_seconds(void) {
    struct timespec time;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time);
    return (double)time.tv_sec + (double)time.tv_nsec * 1e-9;
}

static inline uint8_t bench_peak_byte(uint64_t *seed) {
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    return (uint8_t)(*seed >> 56);
}

typedef struct bench_peak_call_t {
    uform__gemm_forward_t *args;
    const uform__gemm_kernels_t *gemm;
    uform_outcome_t outcome;
} bench_peak_call_t;

static inline uform_status_t bench_peak_run(void *pointer, uform__call_context_t *context) {
    bench_peak_call_t *call = pointer;
    return call->gemm->forward_bf16(call->args, context->parallel, context->outcome);
}

/* The BF16 GEMM peak of this class, measured now on the executor's threads: M=4096, K=768, N=3072
 * with packed weights (the largest transformer product of the `small`/`base` shapes). In FLOP per
 * second of wall-clock time, or with `per_cpu_second` per CPU-second of the process. */
static inline double bench_gemm_peak_of(uform_executor_t executor, uform_cpu_class_t cpu_class, int per_cpu_second) {
    size_t m = 4096, k = 768, n = 3072;
    uint64_t seed = 7;
    float *x = malloc(m * k * sizeof(float)), *y = malloc(m * n * sizeof(float));
    uint16_t *w = malloc(n * k * sizeof(uint16_t));
    for (size_t i = 0; i < m * k; ++i) x[i] = (float)(bench_peak_byte(&seed) - 128) / 256.0f;
    for (size_t i = 0; i < n * k; ++i) w[i] = (uint16_t)(0x3C00 | (bench_peak_byte(&seed) & 0x7F));
    const uform__gemm_kernels_t *gemm = uform__gemm_kernels(cpu_class);
    size_t bytes = gemm->packed_size_bf16(n, k, UFORM__GEMM_BF16);
    void *packed_memory = aligned_alloc(64, (bytes + 63) / 64 * 64);
    uform__gemm_packed_t packed;
    gemm->pack_bf16(w, k, UFORM__GEMM_BF16, n, k, packed_memory, bytes, &packed, NULL);
    uform__gemm_forward_t args = {m, n, k, x, k, UFORM__GEMM_F32, w, k, UFORM__GEMM_BF16, &packed, NULL, 0, y, n};
    double best = 0; /* the best of 15: a shared machine's slow moments must not lower the peak */
    for (int repeat = 0; repeat < 15; ++repeat) {
        bench_peak_call_t request = {&args, gemm, {0}};
        uform__call_t call = {bench_peak_run, &request, &request.outcome, UFORM_COMPLETION_BLOCKING, NULL, NULL, "bench_peak"};
        double start = per_cpu_second ? bench_process_cpu_seconds() : bench_peak_seconds();
        if (uform__executor_call(executor, &call) != UFORM_OK) break;
        double elapsed = (per_cpu_second ? bench_process_cpu_seconds() : bench_peak_seconds()) - start;
        double rate = 2.0 * (double)m * (double)n * (double)k / elapsed;
        if (rate > best) best = rate;
    }
    free(x), free(y), free(w), free(packed_memory);
    return best;
}

static inline double bench_gemm_peak(uform_executor_t executor, uform_cpu_class_t cpu_class) {
    return bench_gemm_peak_of(executor, cpu_class, 0);
}

#endif
