/*
 * The GEMM peak a benchmark's MFU is measured against, taken in the same run: the best of 15
 * products M=4096, K=768, N=3072 with packed weights (the largest transformer product of the
 * `small`/`base` shapes) on the executor's threads, through the slot the compute uses — BF16
 * (vdpbf16ps on GENOA; elsewhere BF16 weights widened, the F32 rate), F32, or the INT8 product
 * (rows quantized beforehand, so the peak is the product's). So on every class the MFU of a
 * compute is read against what that compute's products can do here, never against instructions
 * the class does not run. Shared by bench_encode and bench_train; bench_probe.h has the
 * instruction peaks bench_gemm prints.
 */
#ifndef UFORM_BENCH_PEAK_H
#define UFORM_BENCH_PEAK_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "bench_clock.h"
#include "exec/call.h"
#include "kernels/gemm.h"
#include "kernels/gemm_i8.h"
#include "uform/uform.h"

static inline uint8_t bench_peak_byte(uint64_t *seed) {
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    return (uint8_t)(*seed >> 56);
}

typedef struct bench_peak_call_t {
    uform__gemm_forward_t *args;
    uform__gemm_i8_forward_t *i8_args;
    const uform__gemm_kernels_t *gemm;
    const uform__gemm_i8_kernels_t *i8;
    int bf16;
    uform_outcome_t outcome;
} bench_peak_call_t;

static inline uform_status_t bench_peak_run(void *pointer, uform__call_context_t *context) {
    bench_peak_call_t *call = pointer;
    if (call->i8) return call->i8->forward(call->i8_args, context->parallel, context->outcome);
    return (call->bf16 ? call->gemm->forward_bf16 : call->gemm->forward_f32)(call->args, context->parallel, context->outcome);
}

/* The GEMM peak of `compute`'s products on this class, measured now on the executor's threads:
 * M=4096, K=768, N=3072 with packed weights. In operations per second of wall-clock time, or with
 * `per_cpu_second` per CPU-second of the process. */
static inline double bench_gemm_peak_for(uform_executor_t executor, uform_cpu_class_t cpu_class, uform_compute_t compute,
                                         int per_cpu_second) {
    size_t m = 4096, k = 768, n = 3072, kp = uform__gemm_i8_k_padded(k);
    uint64_t seed = 7;
    float *x = malloc(m * k * sizeof(float)), *y = malloc(m * n * sizeof(float)), *scales = malloc((m + n) * sizeof(float));
    uint16_t *w = malloc(n * k * sizeof(uint16_t));
    int8_t *q = malloc((m + n) * kp);
    int32_t *sums = malloc(m * sizeof(int32_t));
    for (size_t i = 0; i < m * k; ++i) x[i] = (float)(bench_peak_byte(&seed) - 128) / 256.0f;
    for (size_t i = 0; i < n * k; ++i) w[i] = (uint16_t)(0x3C00 | (bench_peak_byte(&seed) & 0x7F));
    const uform__gemm_kernels_t *gemm = uform__gemm_kernels(cpu_class);
    const uform__gemm_i8_kernels_t *i8 = uform__gemm_i8_kernels(cpu_class);
    int bf16 = compute == UFORM_COMPUTE_BF16;
    void *packed_memory;
    uform__gemm_packed_t packed;
    uform__gemm_i8_packed_t packed_i8;
    uform__gemm_forward_t args = {m, n, k, x, k, UFORM__GEMM_F32, w, k, UFORM__GEMM_BF16, &packed, NULL, 0, y, n};
    uform__gemm_i8_forward_t i8_args = {0};
    if (compute == UFORM_COMPUTE_I8) {
        i8->quantize(m, k, x, k, UFORM__GEMM_F32, q, kp, scales, sums, NULL);
        i8->quantize(n, k, w, k, UFORM__GEMM_BF16, q + m * kp, kp, scales + m, NULL, NULL);
        size_t bytes = i8->packed_size(n, k);
        packed_memory = aligned_alloc(64, (bytes + 63) / 64 * 64);
        i8->pack(q + m * kp, kp, scales + m, n, k, packed_memory, bytes, &packed_i8, NULL);
        i8_args = (uform__gemm_i8_forward_t){.m = m, .n = n, .k = k, .x = {q, kp, scales, sums}, .packed = &packed_i8,
                                             .y = y, .ldy = n, .output = UFORM__GEMM_I8_F32};
    } else {
        size_t bytes = bf16 ? gemm->packed_size_bf16(n, k, UFORM__GEMM_BF16) : gemm->packed_size_f32(n, k, UFORM__GEMM_BF16);
        packed_memory = aligned_alloc(64, (bytes + 63) / 64 * 64);
        (bf16 ? gemm->pack_bf16 : gemm->pack_f32)(w, k, UFORM__GEMM_BF16, n, k, packed_memory, bytes, &packed, NULL);
    }
    double best = 0; /* the best of 15: a shared machine's slow moments must not lower the peak */
    for (int repeat = 0; repeat < 15; ++repeat) {
        bench_peak_call_t request = {&args, &i8_args, gemm, compute == UFORM_COMPUTE_I8 ? i8 : NULL, bf16, {0}};
        uform__call_t call = {bench_peak_run, &request, &request.outcome, UFORM_COMPLETION_BLOCKING, NULL, NULL, "bench_peak"};
        double start = per_cpu_second ? bench_cpu_seconds() : bench_seconds();
        if (uform__executor_call(executor, &call) != UFORM_OK) break;
        double elapsed = (per_cpu_second ? bench_cpu_seconds() : bench_seconds()) - start;
        double rate = 2.0 * (double)m * (double)n * (double)k / elapsed;
        if (rate > best) best = rate;
    }
    free(x), free(y), free(w), free(q), free(scales), free(sums), free(packed_memory);
    return best;
}

/* The BF16 GEMM peak (bench_train's and bench_encode's default MFU). */
static inline double bench_gemm_peak_of(uform_executor_t executor, uform_cpu_class_t cpu_class, int per_cpu_second) {
    return bench_gemm_peak_for(executor, cpu_class, UFORM_COMPUTE_BF16, per_cpu_second);
}

static inline double bench_gemm_peak(uform_executor_t executor, uform_cpu_class_t cpu_class) {
    return bench_gemm_peak_of(executor, cpu_class, 0);
}

#endif
