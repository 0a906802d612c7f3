/*
 * The element-wise activation slot (uform__nn_kernels_t's activation_forward): the activations of
 * the GEMM epilogue (gemm.h, uform__gemm_gelu_t: the erf GELU exact and fast, QuickGELU, the tanh
 * GELU) over n values, for code that applies one outside a product. Each class runs its own GEMM
 * table's epilogue function on the values (copied into y first, in chunks that stay in L1), so a
 * value gets exactly the bits a product's epilogue of the same class would give it.
 */
#include <math.h>
#include <string.h>

#include "kernels/gemm.h"
#include "kernels/nn.h"

/* Values per epilogue call: 4 KiB, so the copy is still in L1 when the activation reads it. */
enum { activation_chunk = 1024 };

typedef struct activation_job_t {
    void (*epilogue)(float *c, size_t ldc, size_t rows, size_t cols, const float *bias, int gelu);
    int kind;
    const float *x;
    float *y;
} activation_job_t;

static void activation_range(void *opaque, size_t begin, size_t end) {
    const activation_job_t *job = opaque;
    for (size_t i = begin; i < end; i += activation_chunk) {
        size_t count = end - i < activation_chunk ? end - i : activation_chunk;
        if (job->y != job->x) memcpy(job->y + i, job->x + i, count * sizeof(float));
        if (job->kind != UFORM__GEMM_GELU_NONE) job->epilogue(job->y + i, count, 1, count, NULL, job->kind);
    }
}

/* An unknown kind writes NaN (the kernels trust their arguments, but a silent copy would hide
 * the mistake). Ranges of at least 4,096 values per prong; no reduction, so any split gives the
 * same bits. */
static void activation_forward_with(uform_cpu_class_t cpu_class, int kind, size_t n, const float *x, float *y,
                                    const uform__parallel_t *parallel) {
    if (!uform__gemm_gelu_known(kind)) {
        for (size_t i = 0; i < n; ++i) y[i] = NAN;
        return;
    }
    if (kind == UFORM__GEMM_GELU_NONE && x == y) return;
    activation_job_t job = {uform__gemm_kernels(cpu_class)->epilogue, kind, x, y};
    uform__nn_parallel_ranges(parallel, n, 4096, activation_range, &job);
}

void uform__nn_activation_forward_serial(int kind, size_t n, const float *x, float *y,
                                         const uform__parallel_t *parallel) {
    activation_forward_with(UFORM_CPU_CLASS_SERIAL, kind, n, x, y, parallel);
}

void uform__nn_activation_forward_haswell(int kind, size_t n, const float *x, float *y,
                                          const uform__parallel_t *parallel) {
    activation_forward_with(UFORM_CPU_CLASS_INTEL_HASWELL, kind, n, x, y, parallel);
}

/* SKYLAKE's, also ICELAKE's and GENOA's (their GEMM tables share SKYLAKE's epilogue). */
void uform__nn_activation_forward_skylake(int kind, size_t n, const float *x, float *y,
                                          const uform__parallel_t *parallel) {
    activation_forward_with(UFORM_CPU_CLASS_INTEL_SKYLAKE, kind, n, x, y, parallel);
}
