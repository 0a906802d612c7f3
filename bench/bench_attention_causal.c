/*
 * bench_attention_causal [rounds]: the causal attention forward (nn.h, uform__attention_shape_t's
 * `causal`) against the bidirectional one on the same packed items, per CPU class this machine
 * runs, F32 (attention_forward) and BF16 (attention_forward_bf16), one thread. Shapes: CLIP's text
 * tower (32 items of 77 tokens, 8 heads of 64) and longer items (8 of 300 tokens, the same heads),
 * where skipping the key blocks past the diagonal matters more (77 tokens are two key blocks of
 * 64, of which a causal unit of the first query block reads one).
 *
 * Timing: thread CPU time (other processes on the shared cores do not count), calls in rounds
 * that alternate bidirectional and causal, the best round of each; prints µs per call and the
 * ratio causal / bidirectional.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_clock.h"
#include "common/check.h"
#include "kernels/nn.h"
#include "uform/uform.h"

typedef struct bench_shape_t {
    const char *name;
    size_t items, length, heads, head_width;
} bench_shape_t;

static const bench_shape_t shapes[] = {{"clip-text 32x77", 32, 77, 8, 64}, {"8x300", 8, 300, 8, 64}};

typedef void (*forward_fn)(const uform__attention_shape_t *, const float *, float *, float *,
                           const uform__parallel_t *);

/* Seconds of thread CPU time per call: `calls` calls, the best of `rounds` rounds for each of the
 * two shapes, alternating. */
static void time_pair(forward_fn forward, const uform__attention_shape_t *plain, const uform__attention_shape_t *causal,
                      const float *qkv, float *out, float *lse, size_t calls, size_t rounds, double best[2]) {
    best[0] = best[1] = 1e30;
    for (size_t round = 0; round < rounds; ++round)
        for (int which = 0; which < 2; ++which) {
            const uform__attention_shape_t *shape = which ? causal : plain;
            double start = bench_clock_seconds(CLOCK_THREAD_CPUTIME_ID);
            for (size_t call = 0; call < calls; ++call) forward(shape, qkv, out, lse, NULL);
            double seconds = (bench_clock_seconds(CLOCK_THREAD_CPUTIME_ID) - start) / (double)calls;
            if (seconds < best[which]) best[which] = seconds;
        }
}

int main(int argc, char **argv) {
    size_t rounds = argc > 1 ? strtoul(argv[1], NULL, 10) : 9;
    const uform_cpu_class_t classes[] = {UFORM_CPU_CLASS_SERIAL, UFORM_CPU_CLASS_INTEL_HASWELL,
                                         UFORM_CPU_CLASS_INTEL_SKYLAKE, UFORM_CPU_CLASS_AMD_GENOA};
    printf("%-16s %-14s %-5s %12s %12s %8s\n", "shape", "class", "kind", "bidir us", "causal us", "ratio");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
        const bench_shape_t *b = &shapes[s];
        size_t tokens = b->items * b->length, d = b->heads * b->head_width;
        size_t *offsets = malloc((b->items + 1) * sizeof(size_t));
        for (size_t i = 0; i <= b->items; ++i) offsets[i] = i * b->length;
        float *qkv = malloc(tokens * 3 * d * sizeof(float)), *out = malloc(tokens * d * sizeof(float));
        float *lse = malloc(b->heads * tokens * sizeof(float));
        uint64_t state = 20261207u;
        for (size_t i = 0; i < tokens * 3 * d; ++i) qkv[i] = 2.0f * check_random_float(&state);
        uform__attention_shape_t plain = {tokens, b->heads, b->head_width, offsets, b->items, NULL, 0};
        uform__attention_shape_t causal = plain;
        causal.causal = 1;
        for (size_t c = 0; c < sizeof classes / sizeof classes[0]; ++c) {
            if (!uform_cpu_class_supported(classes[c])) continue;
            const uform__nn_kernels_t *kernels = uform__nn_kernels(classes[c]);
            for (int bf16 = 0; bf16 <= 1; ++bf16) {
                forward_fn forward = bf16 ? kernels->attention_forward_bf16 : kernels->attention_forward;
                /* Rounds of about 50 ms (one call, timed once, sets the count). */
                double start = bench_clock_seconds(CLOCK_THREAD_CPUTIME_ID), best[2];
                forward(&plain, qkv, out, lse, NULL);
                double once = bench_clock_seconds(CLOCK_THREAD_CPUTIME_ID) - start;
                size_t calls = (size_t)(0.05 / (once > 1e-6 ? once : 1e-6)) + 1;
                time_pair(forward, &plain, &causal, qkv, out, lse, calls, rounds, best);
                printf("%-16s %-14s %-5s %12.1f %12.1f %8.3f\n", b->name, uform_cpu_class_name(classes[c]),
                       bf16 ? "bf16" : "f32", best[0] * 1e6, best[1] * 1e6, best[1] / best[0]);
                fflush(stdout);
            }
        }
        free(offsets), free(qkv), free(out), free(lse);
    }
    return 0;
}
