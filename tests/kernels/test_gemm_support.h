/*
 * What the GEMM kernel tests (test_gemm.c, test_gemm_gelu.c, test_gemm_output.c) share besides
 * their thread pool (test_gemm_pool.h): the seed, the classes they walk, random operands and the
 * packing of a weight the way the forward entry point of its dtype expects.
 */
#ifndef UFORM_TESTS_KERNELS_TEST_GEMM_SUPPORT_H
#define UFORM_TESTS_KERNELS_TEST_GEMM_SUPPORT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/check.h"
#include "common/skip.h"
#include "kernels/gemm.h"
#include "uform/uform.h"

/* The classes each test walks, in table order; those this CPU does not run are skipped. */
static const uform_cpu_class_t test_gemm_classes[] = {UFORM_CPU_CLASS_SERIAL, UFORM_CPU_CLASS_INTEL_HASWELL,
                                                      UFORM_CPU_CLASS_INTEL_SKYLAKE, UFORM_CPU_CLASS_INTEL_ICELAKE,
                                                      UFORM_CPU_CLASS_AMD_GENOA};
enum { test_gemm_class_count = sizeof test_gemm_classes / sizeof test_gemm_classes[0] };

/* The seed: argv[1] when given, else `fallback`; printed so that a failure can be replayed. */
static inline uint64_t test_gemm_seed(int argc, char **argv, uint64_t fallback) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : fallback;
    printf("seed %llu\n", (unsigned long long)seed);
    return seed;
}

/* The class's GEMM table, or NULL, with a line that says so, when this CPU does not run it or when
 * SERIAL is left to the native run (under the emulator: every test using this checks each class
 * against its own double-precision reference, never against SERIAL's output from this loop). */
static inline const uform__gemm_kernels_t *test_gemm_table(uform_cpu_class_t cpu_class) {
    if (!check_class_runs_unless_serial_left_to_native(cpu_class)) {
        return NULL;
    }
    return uform__gemm_kernels(cpu_class);
}

/* A [rows, cols] matrix (row stride ld, padding zero, one spare element) of `dtype`, values
 * scale·check_random_float(state) in row order; when `as_float` is not NULL its F32 values as
 * the kernels read them (BF16 ones widened back) go there, dense [rows, cols]. */
static inline void *test_gemm_random_matrix(uint64_t *state, size_t rows, size_t cols, size_t ld,
                                            uform__gemm_dtype_t dtype, float scale, float *as_float) {
    void *values = calloc(rows * ld + 1, dtype == UFORM__GEMM_F32 ? sizeof(float) : sizeof(uform__bf16_t));
    for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) {
            float value = scale * check_random_float(state);
            if (dtype == UFORM__GEMM_F32) ((float *)values)[r * ld + c] = value;
            else {
                ((uform__bf16_t *)values)[r * ld + c] = uform__gemm_bf16_from_f32(value);
                value = uform__gemm_f32_from_bf16(((uform__bf16_t *)values)[r * ld + c]);
            }
            if (as_float) as_float[r * cols + c] = value;
        }
    return values;
}

/* Packs args->w [n, k] (row stride args->ldw) with the packer of args->w_dtype's forward entry
 * point into 64-byte-aligned memory, points args->packed at `packed_weight` and answers the
 * memory (the caller frees it after the forward). */
static inline void *test_gemm_pack_weight(const uform__gemm_kernels_t *table, uform__gemm_forward_t *args,
                                          uform__gemm_packed_t *packed_weight, uform_outcome_t *outcome) {
    int f32 = args->w_dtype == UFORM__GEMM_F32;
    size_t size = f32 ? table->packed_size_f32(args->n, args->k, args->w_dtype)
                      : table->packed_size_bf16(args->n, args->k, args->w_dtype);
    void *memory = aligned_alloc(64, (size + 63) / 64 * 64 + 64);
    uform__gemm_pack_fn pack = f32 ? table->pack_f32 : table->pack_bf16;
    CHECK_STATUS(pack(args->w, args->ldw, args->w_dtype, args->n, args->k, memory, size, packed_weight, outcome),
                 UFORM_OK);
    args->packed = packed_weight;
    return memory;
}

#endif
