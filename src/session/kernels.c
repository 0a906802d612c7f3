/*
 * The kernels a plan binds. `uform__session_kernels_bind` is the one place that chooses them:
 * the engine's per-class GEMM (src/kernels/gemm.h, forward_f32: Y = X·Wᵀ) for matmul, its NN
 * kernels (src/kernels/nn.h) for LayerNorm, GELU and softmax, so programs run on the kernels the
 * model uses.
 * The portable loops below back every slot when asked (`portable`, for tests and comparisons).
 * The session is single-threaded: every kernel gets a NULL (serial) parallel contract.
 */
#include <math.h>
#include <string.h>

#include "kernels/gemm.h"
#include "kernels/nn.h"
#include "session/session.h"

/* Y[m, n] = X[m, k] · W[n, k]ᵀ: four rows of W at a time so each X row is read once per four
 * outputs; sums in F32 in k order (torch.nn.functional.linear without bias). */
static int matmul_f32_portable(const uform__session_kernels_t *self, size_t m, size_t n, size_t k, const float *x,
                               size_t ldx, const float *w, size_t ldw, float *y, size_t ldy, const float *bias, int gelu) {
    for (size_t i = 0; i < m; ++i) {
        const float *xi = x + i * ldx;
        float *yi = y + i * ldy;
        size_t j = 0;
        for (; j + 4 <= n; j += 4) {
            const float *w0 = w + j * ldw, *w1 = w0 + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
            float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
            for (size_t p = 0; p < k; ++p) {
                float xv = xi[p];
                s0 += xv * w0[p];
                s1 += xv * w1[p];
                s2 += xv * w2[p];
                s3 += xv * w3[p];
            }
            yi[j] = s0, yi[j + 1] = s1, yi[j + 2] = s2, yi[j + 3] = s3;
        }
        for (; j < n; ++j) {
            const float *wj = w + j * ldw;
            float s = 0.0f;
            for (size_t p = 0; p < k; ++p) s += xi[p] * wj[p];
            yi[j] = s;
        }
        if (bias)
            for (j = 0; j < n; ++j) yi[j] += bias[j];
        if (gelu)
            for (j = 0; j < n; ++j) yi[j] = 0.5f * yi[j] * (1.0f + erff(yi[j] * 0.70710678118654752440f));
    }
    return 0;
}

static int matmul_f32_engine(const uform__session_kernels_t *self, size_t m, size_t n, size_t k, const float *x,
                             size_t ldx, const float *w, size_t ldw, float *y, size_t ldy, const float *bias, int gelu) {
    const uform__gemm_kernels_t *gemm = (const uform__gemm_kernels_t *)self->gemm;
    uform__gemm_forward_t args;
    memset(&args, 0, sizeof args);
    args.m = m, args.n = n, args.k = k;
    args.x = x, args.ldx = ldx, args.x_dtype = UFORM__GEMM_F32;
    args.w = w, args.ldw = ldw, args.w_dtype = UFORM__GEMM_F32;
    args.y = y, args.ldy = ldy;
    args.bias = bias, args.gelu = gelu;
    uform_status_t status = gemm->forward_f32(&args, NULL, NULL);
    return status == UFORM_OK ? 0 : status == UFORM_OUT_OF_MEMORY ? UFORM__SESSION_KERNEL_OUT_OF_MEMORY : -1;
}

/* torch.softmax along rows: exponentials of x − max, divided by their sum (accumulated in F64). */
static void softmax_f32_portable(const uform__session_kernels_t *self, size_t rows, size_t n, const float *x, float *y) {
    for (size_t r = 0; r < rows; ++r) {
        const float *xr = x + r * n;
        float *yr = y + r * n, high = -INFINITY;
        for (size_t j = 0; j < n; ++j)
            if (xr[j] > high || xr[j] != xr[j]) high = xr[j];
        double sum = 0.0;
        for (size_t j = 0; j < n; ++j) sum += yr[j] = expf(xr[j] - high);
        float scale = (float)(1.0 / sum);
        for (size_t j = 0; j < n; ++j) yr[j] *= scale;
    }
}

/* torch.nn.functional.layer_norm over rows: biased variance, statistics in F64. */
static void layer_norm_f32_portable(const uform__session_kernels_t *self, size_t rows, size_t n, const float *x,
                                    const float *weight, const float *bias, float eps, float *y, float *mean,
                                    float *rstd) {
    for (size_t r = 0; r < rows; ++r) {
        const float *xr = x + r * n;
        float *yr = y + r * n;
        double sum = 0.0, squares = 0.0;
        for (size_t j = 0; j < n; ++j) sum += xr[j];
        double mu = sum / (double)n;
        for (size_t j = 0; j < n; ++j) squares += ((double)xr[j] - mu) * ((double)xr[j] - mu);
        float m = (float)mu, s = (float)(1.0 / sqrt(squares / (double)n + (double)eps));
        mean[r] = m, rstd[r] = s;
        for (size_t j = 0; j < n; ++j) yr[j] = (xr[j] - m) * s * weight[j] + bias[j];
    }
}

static void layer_norm_f32_engine(const uform__session_kernels_t *self, size_t rows, size_t n, const float *x,
                                  const float *weight, const float *bias, float eps, float *y, float *mean, float *rstd) {
    const uform__nn_kernels_t *nn = (const uform__nn_kernels_t *)self->nn;
    nn->layernorm_forward(rows, n, x, n, weight, bias, eps, y, n, mean, rstd, NULL);
}

/* Exact GELU, 0.5·x·(1 + erf(x/√2)) (torch.nn.functional.gelu, approximate='none'). */
static void gelu_f32_portable(const uform__session_kernels_t *self, size_t n, const float *x, float *y) {
    for (size_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752440f));
}

static void gelu_f32_engine(const uform__session_kernels_t *self, size_t n, const float *x, float *y) {
    ((const uform__nn_kernels_t *)self->nn)->gelu_forward(n, x, y, NULL);
}

static void softmax_f32_engine(const uform__session_kernels_t *self, size_t rows, size_t n, const float *x, float *y) {
    ((const uform__nn_kernels_t *)self->nn)->softmax_forward(rows, n, x, n, y, n, NULL);
}

void uform__session_kernels_bind(uform__session_kernels_t *kernels, uform_cpu_class_t cpu_class, int portable) {
    memset(kernels, 0, sizeof *kernels);
    kernels->cpu_class = cpu_class;
    kernels->softmax_f32 = softmax_f32_portable;
    if (portable || !uform_cpu_class_supported(cpu_class)) {
        kernels->matmul_f32 = matmul_f32_portable;
        kernels->layer_norm_f32 = layer_norm_f32_portable;
        kernels->gelu_f32 = gelu_f32_portable;
        kernels->matmul_name = kernels->norm_name = "session portable";
        return;
    }
    kernels->gemm = uform__gemm_kernels(cpu_class);
    kernels->nn = uform__nn_kernels(cpu_class);
    kernels->matmul_f32 = matmul_f32_engine;
    kernels->layer_norm_f32 = layer_norm_f32_engine;
    kernels->gelu_f32 = gelu_f32_engine;
    kernels->softmax_f32 = softmax_f32_engine;
    kernels->matmul_name = uform_cpu_class_name(((const uform__gemm_kernels_t *)kernels->gemm)->cpu_class);
    kernels->norm_name = uform_cpu_class_name(cpu_class); /* the NN table of this class (it falls back internally) */
}
