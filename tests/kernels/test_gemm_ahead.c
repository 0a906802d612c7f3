/*
 * The forward product's caller-named prefetch (uform__gemm_forward_t's `ahead`, gemm.h): on every
 * class this CPU runs, F32 and BF16 weights, packed and not, 1, 2 and 3 threads, the result with a
 * region to prefetch has the bits of the result without one. Regions: a few bytes, one share per
 * tile and more (3 MiB, past every share), unaligned starts; shapes ragged against the tiles, more
 * columns than NC (several column chunks) and more K than KC (several K slices, where only the
 * first prefetches). A region of 0 bytes or a NULL region is ignored.
 */
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/skip.h"
#include "kernels/gemm.h"
#include "kernels/test_gemm_pool.h"

static const uform_cpu_class_t classes[] = {UFORM_CPU_CLASS_SERIAL, UFORM_CPU_CLASS_INTEL_HASWELL, UFORM_CPU_CLASS_INTEL_SKYLAKE,
                                            UFORM_CPU_CLASS_INTEL_ICELAKE, UFORM_CPU_CLASS_AMD_GENOA};
static const size_t shapes[][3] = {{1, 1, 1}, {32, 1024, 256}, {7, 1600, 33}, {13, 70, 1601}, {300, 129, 64}};
#define REGION_BYTES (3u << 20)

static void check_shape(uform_cpu_class_t cpu_class, const size_t shape[3], int bf16, int packed_weights,
                        const unsigned char *region, test_pool_t pools[2], uint64_t *seed) {
    const uform__gemm_kernels_t *gemm = uform__gemm_kernels(cpu_class);
    const size_t m = shape[0], n = shape[1], k = shape[2];
    float *x = malloc(m * k * sizeof(float)), *w = malloc(n * k * sizeof(float));
    float *plain = malloc(m * n * sizeof(float)), *y = malloc(m * n * sizeof(float));
    uint16_t *w16 = malloc(n * k * sizeof(uint16_t));
    for (size_t i = 0; i < m * k; ++i) x[i] = check_random_float(seed);
    for (size_t i = 0; i < n * k; ++i) w[i] = check_random_float(seed), w16[i] = uform__gemm_bf16_from_f32(w[i]);
    uform__gemm_forward_t args;
    memset(&args, 0, sizeof args);
    args.m = m, args.n = n, args.k = k, args.x = x, args.ldx = k, args.x_dtype = UFORM__GEMM_F32;
    args.w = bf16 ? (const void *)w16 : (const void *)w, args.ldw = k, args.w_dtype = bf16 ? UFORM__GEMM_BF16 : UFORM__GEMM_F32;
    args.y = plain, args.ldy = n;
    uform__gemm_packed_t packed;
    void *memory = NULL;
    if (packed_weights) {
        size_t bytes = bf16 ? gemm->packed_size_bf16(n, k, args.w_dtype) : gemm->packed_size_f32(n, k, args.w_dtype);
        memory = aligned_alloc(64, (bytes + 63) / 64 * 64);
        uform__gemm_pack_fn pack = bf16 ? gemm->pack_bf16 : gemm->pack_f32;
        CHECK_STATUS(pack(args.w, k, args.w_dtype, n, k, memory, bytes, &packed, NULL), UFORM_OK);
        args.packed = &packed;
    }
    uform__gemm_forward_fn forward = bf16 ? gemm->forward_bf16 : gemm->forward_f32;
    CHECK_STATUS(forward(&args, NULL, NULL), UFORM_OK);
    static const size_t lengths[4] = {0, 5, 64 * 1024 + 3, REGION_BYTES - 1};
    for (int l = 0; l < 4; ++l)
        for (int threads = 1; threads <= 3; ++threads) {
            args.y = y, args.ahead = l ? region + l : NULL, args.ahead_bytes = lengths[l];
            for (size_t i = 0; i < m * n; ++i) y[i] = -1.0f;
            CHECK_STATUS(forward(&args, threads == 1 ? NULL : &pools[threads - 2].parallel, NULL), UFORM_OK);
            CHECK_MSG(memcmp(plain, y, m * n * sizeof(float)) == 0,
                      "%s %zux%zux%zu bf16=%d packed=%d, %d threads, %zu bytes ahead: the product's bits changed",
                      uform_cpu_class_name(cpu_class), m, n, k, bf16, packed_weights, threads, lengths[l]);
        }
    free(x), free(w), free(plain), free(y), free(w16), free(memory);
}

int main(void) {
    uint64_t seed = 4242;
    printf("seed %llu\n", (unsigned long long)seed);
    unsigned char *region = malloc(REGION_BYTES + 64);
    test_pool_t pools[2];
    CHECK(region != NULL);
    CHECK(test_pool_start(&pools[0], 2) == 0 && test_pool_start(&pools[1], 3) == 0);
    memset(region, 0x5A, REGION_BYTES + 64);
    for (size_t c = 0; c < sizeof classes / sizeof classes[0]; ++c) {
        if (!check_class_runs(classes[c])) continue;
        printf("exercised: %s\n", uform_cpu_class_name(classes[c]));
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
            for (int bf16 = 0; bf16 <= 1; ++bf16)
                for (int packed = 0; packed <= 1; ++packed) check_shape(classes[c], shapes[s], bf16, packed, region, pools, &seed);
    }
    test_pool_stop(&pools[0]), test_pool_stop(&pools[1]);
    free(region);
    return check_finish();
}
