/*
 * The activations published towers use besides the GELUs the GEMM fuses into its epilogue (erf,
 * QuickGELU, tanh): ReLU and tanh (sentence-transformers' Dense). Applied to a product's F32 rows
 * after its bias, tanh in double and rounded once.
 */
#include <math.h>

#include "model/encode.h"

int uform__linear_activation_flag(uform__activation_t activation) {
    switch (activation) {
    case UFORM__ACTIVATION_GELU: return UFORM__LINEAR_GELU;
    case UFORM__ACTIVATION_GELU_TANH: return UFORM__LINEAR_GELU_TANH;
    case UFORM__ACTIVATION_QUICK_GELU: return UFORM__LINEAR_QUICK_GELU;
    case UFORM__ACTIVATION_RELU: return UFORM__LINEAR_RELU;
    case UFORM__ACTIVATION_TANH: return UFORM__LINEAR_TANH;
    default: return 0;
    }
}

typedef struct activation_job_t {
    int flag;
    float *y;
    size_t columns, ldy;
} activation_job_t;

static void activation_rows(void *opaque, size_t begin, size_t end) {
    const activation_job_t *job = opaque;
    for (size_t r = begin; r < end; ++r) {
        float *row = job->y + r * job->ldy;
        for (size_t c = 0; c < job->columns; ++c) {
            float x = row[c];
            switch (job->flag) {
            case UFORM__LINEAR_RELU: row[c] = x > 0.0f ? x : 0.0f; break;
            case UFORM__LINEAR_TANH: row[c] = (float)tanh((double)x); break;
            default: break;
            }
        }
    }
}

/* Applies the one activation flag of `epilogue` (QUICK_GELU, GELU_TANH, RELU or TANH) to y [rows,
 * columns] in place (rows split over the threads). */
void uform__linear_activation_apply(const uform__compute_t *compute, int flag, float *y, size_t rows, size_t columns,
                                    size_t ldy) {
    activation_job_t job = {flag, y, columns, ldy};
    uform__nn_parallel_ranges(compute->parallel, rows, 4, activation_rows, &job);
}
