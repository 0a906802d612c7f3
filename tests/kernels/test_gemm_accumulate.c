/*
 * The forward product's `accumulate` mode (Y += X·Wᵀ + b, the model's residual connections in one
 * pass) on every class this CPU runs, F32 and BF16 weights, plain and packed, against a double
 * reference; and its refusal together with GELU.
 */
#include <stdlib.h>

#include "common/check.h"
#include "common/skip.h"
#include "kernels/gemm.h"

static void check_class(uform_cpu_class_t cpu_class, size_t m, size_t n, size_t k, int bf16, int packed_weights,
                        uint64_t *seed) {
    const uform__gemm_kernels_t *gemm = uform__gemm_kernels(cpu_class);
    float *x = malloc(m * k * sizeof(float)), *w = malloc(n * k * sizeof(float)), *bias = malloc(n * sizeof(float));
    float *y = malloc(m * n * sizeof(float)), *start = malloc(m * n * sizeof(float));
    uint16_t *w16 = malloc(n * k * sizeof(uint16_t));
    for (size_t i = 0; i < m * k; ++i) x[i] = check_random_float(seed);
    for (size_t i = 0; i < n * k; ++i) {
        w16[i] = uform__gemm_bf16_from_f32(check_random_float(seed));
        w[i] = uform__gemm_f32_from_bf16(w16[i]); /* the same values either way */
    }
    for (size_t i = 0; i < n; ++i) bias[i] = check_random_float(seed);
    for (size_t i = 0; i < m * n; ++i) start[i] = y[i] = 4 * check_random_float(seed);
    uform__gemm_forward_t args = {m, n, k, x, k, UFORM__GEMM_F32, bf16 ? (const void *)w16 : (const void *)w, k,
                                  bf16 ? UFORM__GEMM_BF16 : UFORM__GEMM_F32, NULL, bias, 0, y, n};
    args.accumulate = 1;
    uform__gemm_packed_t packed;
    void *memory = NULL;
    if (packed_weights) {
        size_t bytes = bf16 ? gemm->packed_size_f32(n, k, args.w_dtype) : gemm->packed_size_f32(n, k, args.w_dtype);
        memory = aligned_alloc(64, (bytes + 63) / 64 * 64);
        CHECK_STATUS(gemm->pack_f32(args.w, k, args.w_dtype, n, k, memory, bytes, &packed, NULL), UFORM_OK);
        args.packed = &packed;
    }
    /* F32 kernels (BF16 weights widened exactly): the reference is exact up to F32 summation. */
    CHECK_STATUS(gemm->forward_f32(&args, NULL, NULL), UFORM_OK);
    size_t bad = 0;
    double worst = 0;
    for (size_t i = 0; i < m; ++i)
        for (size_t j = 0; j < n; ++j) {
            double expected = start[i * n + j] + bias[j];
            for (size_t p = 0; p < k; ++p) expected += (double)x[i * k + p] * w[j * k + p];
            double error = fabs(y[i * n + j] - expected);
            if (error > worst) worst = error;
            bad += !(error <= 1e-5 * (double)k + 1e-5);
        }
    CHECK_MSG(bad == 0, "%s m=%zu n=%zu k=%zu bf16=%d packed=%d: %zu wrong, worst %.3g", uform_cpu_class_name(cpu_class), m,
              n, k, bf16, packed_weights, bad, worst);
    free(x), free(w), free(bias), free(y), free(start), free(w16), free(memory);
}

int main(void) {
    uint64_t seed = 12345;
    printf("seed %llu\n", (unsigned long long)seed);
    static const uform_cpu_class_t classes[] = {UFORM_CPU_CLASS_SERIAL, UFORM_CPU_CLASS_INTEL_HASWELL,
                                                UFORM_CPU_CLASS_INTEL_SKYLAKE, UFORM_CPU_CLASS_INTEL_ICELAKE,
                                                UFORM_CPU_CLASS_AMD_GENOA};
    static const size_t shapes[][3] = {{1, 1, 1}, {7, 13, 97}, {65, 384, 128}, {200, 67, 1030}};
    for (size_t c = 0; c < sizeof classes / sizeof classes[0]; ++c) {
        if (!check_class_runs(classes[c])) continue;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
            for (int bf16 = 0; bf16 <= 1; ++bf16)
                for (int packed = 0; packed <= 1; ++packed)
                    check_class(classes[c], shapes[s][0], shapes[s][1], shapes[s][2], bf16, packed, &seed);
    }
    /* Accumulating a GELU is refused, not guessed. */
    float x[4] = {1, 2, 3, 4}, w[4] = {1, 0, 0, 1}, y[4] = {0};
    uform__gemm_forward_t args = {2, 2, 2, x, 2, UFORM__GEMM_F32, w, 2, UFORM__GEMM_F32, NULL, NULL, 1, y, 2};
    args.accumulate = 1;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__gemm_kernels(UFORM_CPU_CLASS_SERIAL)->forward_f32(&args, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "accumulate");
    return check_finish();
}
