/*
 * SERIAL NN kernels: portable C, the reference every other class is tested against. Row
 * statistics (LayerNorm, L2 norms, softmax sums, the sum of squares) accumulate in double so the
 * reference itself is tight; the SIMD classes accumulate in F32 lanes where that is accurate
 * enough and say so.
 */
#include <math.h>
#include <string.h>

#include "kernels/nn.h"

/* ---------------------------------------------------------------------------------------------
 * Attention block primitives (the drivers are in nn_attention.c).
 */

static void transpose_serial(const float *src, size_t src_stride, size_t rows, size_t cols, float *dst,
                             size_t dst_stride) {
    for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) dst[c * dst_stride + r] = src[r * src_stride + c];
}

static void scores_serial(const float *a, size_t a_stride, const float *bt, size_t bt_stride, size_t rows, size_t cols,
                          size_t width, float scale, float *s, size_t s_stride) {
    for (size_t r = 0; r < rows; ++r) {
        float *out = s + r * s_stride;
        for (size_t c = 0; c < cols; ++c) out[c] = 0.0f;
        for (size_t e = 0; e < width; ++e) {
            float a_value = a[r * a_stride + e];
            const float *b = bt + e * bt_stride;
            for (size_t c = 0; c < cols; ++c) out[c] += a_value * b[c];
        }
        for (size_t c = 0; c < cols; ++c) out[c] *= scale;
    }
}

static void accumulate_serial(float *acc, size_t acc_stride, const float *p, size_t p_stride, const float *x,
                              size_t x_stride, size_t rows, size_t cols, size_t width) {
    for (size_t r = 0; r < rows; ++r) {
        float *out = acc + r * acc_stride;
        for (size_t c = 0; c < cols; ++c) {
            float weight = p[r * p_stride + c];
            const float *row = x + c * x_stride;
            for (size_t e = 0; e < width; ++e) out[e] += weight * row[e];
        }
    }
}

static float exp_shift_sum_serial(float *x, size_t n, float shift) {
    float sum = 0.0f;
    for (size_t i = 0; i < n; ++i) sum += (x[i] = expf(x[i] - shift));
    return sum;
}

static void exp_sub_serial(float *x, const float *shift, size_t n) {
    for (size_t i = 0; i < n; ++i) x[i] = expf(x[i] - shift[i]);
}

static float row_max_serial(const float *x, size_t n) {
    float max = -INFINITY;
    for (size_t i = 0; i < n; ++i) max = x[i] > max ? x[i] : max;
    return max;
}

const uform__nn_attention_ops_t uform__nn_attention_ops_serial = {
    transpose_serial, scores_serial, accumulate_serial, exp_shift_sum_serial, exp_sub_serial, row_max_serial,
};

void uform__nn_attention_forward_f32_serial(const uform__attention_shape_t *shape, const float *qkv, float *out,
                                            float *lse, const uform__parallel_t *parallel) {
    uform__nn_attention_forward_with(&uform__nn_attention_ops_serial, shape, qkv, out, lse, parallel);
}

static void attention_backward_bf16_serial(const uform__attention_shape_t *shape, const float *qkv, const float *out,
                                           const float *lse, const float *dout, float *deltas, float *dqkv,
                                           const uform__parallel_t *parallel) {
    uform__nn_attention_backward_bf16_with(&uform__nn_attention_ops_serial, shape, qkv, out, lse, dout, deltas, dqkv,
                                           parallel);
}

static void attention_forward_bf16_serial(const uform__attention_shape_t *shape, const float *qkv, float *out,
                                          float *lse, const uform__parallel_t *parallel) {
    uform__nn_attention_forward_bf16_with(&uform__nn_attention_ops_serial, shape, qkv, out, lse, parallel);
}

void uform__nn_attention_backward_f32_serial(const uform__attention_shape_t *shape, const float *qkv, const float *out,
                                             const float *lse, const float *dout, float *deltas, float *dqkv,
                                             const uform__parallel_t *parallel) {
    uform__nn_attention_backward_with(&uform__nn_attention_ops_serial, shape, qkv, out, lse, dout, deltas, dqkv,
                                      parallel);
}

/* ---------------------------------------------------------------------------------------------
 * LayerNorm.
 */

typedef struct layernorm_context_t {
    size_t width;
    const float *x, *weight, *bias, *mean, *rstd, *dy;
    size_t x_stride, y_stride, dy_stride, dx_stride;
    float eps;
    float *y, *mean_out, *rstd_out, *dx, *dweight, *dbias;
    uint16_t *y16; /* BF16 output instead of y, when set */
} layernorm_context_t;

static void layernorm_forward_rows(void *opaque, size_t begin, size_t end) {
    const layernorm_context_t *c = opaque;
    for (size_t r = begin; r < end; ++r) {
        const float *x = c->x + r * c->x_stride;
        double sum = 0.0, squares = 0.0;
        for (size_t i = 0; i < c->width; ++i) sum += x[i];
        double mean = sum / (double)c->width;
        for (size_t i = 0; i < c->width; ++i) squares += (x[i] - mean) * (x[i] - mean);
        float rstd = (float)(1.0 / sqrt(squares / (double)c->width + (double)c->eps));
        float mean_f = (float)mean;
        if (c->y16) {
            uint16_t *y = c->y16 + r * c->y_stride;
            for (size_t i = 0; i < c->width; ++i)
                y[i] = uform__nn_f32_to_bf16_one((x[i] - mean_f) * rstd * c->weight[i] + c->bias[i]);
        } else {
            float *y = c->y + r * c->y_stride;
            for (size_t i = 0; i < c->width; ++i) y[i] = (x[i] - mean_f) * rstd * c->weight[i] + c->bias[i];
        }
        c->mean_out[r] = mean_f;
        c->rstd_out[r] = rstd;
    }
}

/* y (F32) or y16 (BF16), whichever is set. */
static void layernorm_forward_serial(size_t rows, size_t width, const float *x, size_t x_stride, const float *weight,
                                     const float *bias, float eps, float *y, uint16_t *y16, size_t y_stride,
                                     float *mean, float *rstd, const uform__parallel_t *parallel) {
    layernorm_context_t context = {.width = width,
                                   .x = x,
                                   .weight = weight,
                                   .bias = bias,
                                   .x_stride = x_stride,
                                   .y_stride = y_stride,
                                   .eps = eps,
                                   .y = y,
                                   .y16 = y16,
                                   .mean_out = mean,
                                   .rstd_out = rstd};
    uform__nn_parallel_ranges(parallel, rows, 16, layernorm_forward_rows, &context);
}

void uform__nn_layernorm_forward_f32_serial(size_t rows, size_t width, const float *x, size_t x_stride,
                                            const float *weight, const float *bias, float eps, float *y,
                                            size_t y_stride, float *mean, float *rstd,
                                            const uform__parallel_t *parallel) {
    layernorm_forward_serial(rows, width, x, x_stride, weight, bias, eps, y, NULL, y_stride, mean, rstd, parallel);
}

void uform__nn_layernorm_forward_bf16_serial(size_t rows, size_t width, const float *x, size_t x_stride,
                                             const float *weight, const float *bias, float eps, uint16_t *y,
                                             size_t y_stride, float *mean, float *rstd,
                                             const uform__parallel_t *parallel) {
    layernorm_forward_serial(rows, width, x, x_stride, weight, bias, eps, NULL, y, y_stride, mean, rstd, parallel);
}

/* dx = rstd · (g − mean(g) − x̂ · mean(g·x̂)) with g = dy·weight (the derivative of
 * torch's layer_norm with respect to its input). */
static void layernorm_backward_rows(void *opaque, size_t begin, size_t end) {
    const layernorm_context_t *c = opaque;
    for (size_t r = begin; r < end; ++r) {
        const float *x = c->x + r * c->x_stride, *dy = c->dy + r * c->dy_stride;
        float *dx = c->dx + r * c->dx_stride;
        float mean = c->mean[r], rstd = c->rstd[r];
        double sum_g = 0.0, sum_gx = 0.0;
        for (size_t i = 0; i < c->width; ++i) {
            float g = dy[i] * c->weight[i], xhat = (x[i] - mean) * rstd;
            sum_g += g;
            sum_gx += (double)g * xhat;
        }
        float mean_g = (float)(sum_g / (double)c->width), mean_gx = (float)(sum_gx / (double)c->width);
        for (size_t i = 0; i < c->width; ++i) {
            float xhat = (x[i] - mean) * rstd;
            dx[i] = rstd * (dy[i] * c->weight[i] - mean_g - xhat * mean_gx);
        }
    }
}

/* Each column's dweight and dbias summed over rows in row order by the prong owning the column. */
static void layernorm_backward_columns(void *opaque, size_t begin, size_t end, size_t rows) {
    const layernorm_context_t *c = opaque;
    for (size_t r = 0; r < rows; ++r) {
        const float *x = c->x + r * c->x_stride, *dy = c->dy + r * c->dy_stride;
        float mean = c->mean[r], rstd = c->rstd[r];
        for (size_t i = begin; i < end; ++i) {
            c->dweight[i] += dy[i] * ((x[i] - mean) * rstd);
            c->dbias[i] += dy[i];
        }
    }
}

typedef struct layernorm_columns_t {
    layernorm_context_t *context;
    size_t rows;
} layernorm_columns_t;

static void layernorm_backward_columns_range(void *opaque, size_t begin, size_t end) {
    const layernorm_columns_t *columns = opaque;
    layernorm_backward_columns(columns->context, begin, end, columns->rows);
}

void uform__nn_layernorm_backward_f32_serial(size_t rows, size_t width, const float *x, size_t x_stride,
                                             const float *weight, const float *mean, const float *rstd, const float *dy,
                                             size_t dy_stride, float *dx, size_t dx_stride, float *dweight,
                                             float *dbias, const uform__parallel_t *parallel) {
    layernorm_context_t context = {.width = width,
                                   .x = x,
                                   .weight = weight,
                                   .mean = mean,
                                   .rstd = rstd,
                                   .dy = dy,
                                   .x_stride = x_stride,
                                   .dy_stride = dy_stride,
                                   .dx_stride = dx_stride,
                                   .dx = dx,
                                   .dweight = dweight,
                                   .dbias = dbias};
    uform__nn_parallel_ranges(parallel, rows, 16, layernorm_backward_rows, &context);
    layernorm_columns_t columns = {&context, rows};
    uform__nn_parallel_ranges(parallel, width, 64, layernorm_backward_columns_range, &columns);
}

/* ---------------------------------------------------------------------------------------------
 * GELU (exact erf form).
 */

typedef struct elementwise_context_t {
    const float *x, *dy;
    float *y;
} elementwise_context_t;

static void gelu_forward_range(void *opaque, size_t begin, size_t end) {
    const elementwise_context_t *c = opaque;
    for (size_t i = begin; i < end; ++i) {
        float x = c->x[i];
        /* Φ(x) through erfc keeps full relative accuracy in the negative tail, where
         * 1 + erf(x/√2) would cancel. */
        c->y[i] = x * (0.5f * erfcf(x * -0.70710678118654752f));
    }
}

void uform__nn_gelu_forward_f32_serial(size_t n, const float *x, float *y, const uform__parallel_t *parallel) {
    elementwise_context_t context = {.x = x, .y = y};
    uform__nn_parallel_ranges(parallel, n, 4096, gelu_forward_range, &context);
}

/* d/dx [x·Φ(x)] = Φ(x) + x·φ(x), φ(x) = exp(−x²/2)/√(2π). */
static void gelu_backward_range(void *opaque, size_t begin, size_t end) {
    const elementwise_context_t *c = opaque;
    for (size_t i = begin; i < end; ++i) {
        float x = c->x[i];
        float cdf = 0.5f * erfcf(x * -0.70710678118654752f);
        float pdf = expf(-0.5f * x * x) * 0.39894228040143268f;
        c->y[i] = c->dy[i] * (cdf + x * pdf);
    }
}

void uform__nn_gelu_backward_f32_serial(size_t n, const float *x, const float *dy, float *dx,
                                        const uform__parallel_t *parallel) {
    elementwise_context_t context = {.x = x, .dy = dy, .y = dx};
    uform__nn_parallel_ranges(parallel, n, 4096, gelu_backward_range, &context);
}

/* ---------------------------------------------------------------------------------------------
 * Softmax + cross-entropy.
 */

typedef struct xent_context_t {
    size_t width, logits_stride, dlogits_stride;
    const float *logits, *scale, *probs_in, *dloss;
    const int32_t *targets;
    float *probs, *loss, *dlogits, *dscale;
} xent_context_t;

static void xent_forward_rows(void *opaque, size_t begin, size_t end) {
    const xent_context_t *c = opaque;
    for (size_t r = begin; r < end; ++r) {
        const float *z = c->logits + r * c->logits_stride;
        float *p = c->probs + r * c->width;
        float scale = c->scale ? c->scale[r] : 1.0f;
        float max = -INFINITY;
        for (size_t i = 0; i < c->width; ++i) max = scale * z[i] > max ? scale * z[i] : max;
        double sum = 0.0;
        for (size_t i = 0; i < c->width; ++i) sum += (p[i] = expf(scale * z[i] - max));
        float inverse = (float)(1.0 / sum);
        for (size_t i = 0; i < c->width; ++i) p[i] *= inverse;
        int32_t target = c->targets[r];
        c->loss[r] = target < 0 ? 0.0f : (float)(log(sum) + (double)max - (double)(scale * z[target]));
    }
}

void uform__nn_softmax_xent_forward_f32_serial(size_t rows, size_t width, const float *logits, size_t logits_stride,
                                               const int32_t *targets, const float *scale, float *probs, float *loss,
                                               const uform__parallel_t *parallel) {
    xent_context_t context = {.width = width,
                              .logits_stride = logits_stride,
                              .logits = logits,
                              .scale = scale,
                              .targets = targets,
                              .probs = probs,
                              .loss = loss};
    uform__nn_parallel_ranges(parallel, rows, 8, xent_forward_rows, &context);
}

static void xent_backward_rows(void *opaque, size_t begin, size_t end) {
    const xent_context_t *c = opaque;
    for (size_t r = begin; r < end; ++r) {
        const float *z = c->logits + r * c->logits_stride, *p = c->probs_in + r * c->width;
        float *dz = c->dlogits + r * c->dlogits_stride;
        int32_t target = c->targets[r];
        if (target < 0) {
            memset(dz, 0, c->width * sizeof(float));
            if (c->dscale) c->dscale[r] = 0.0f;
            continue;
        }
        float scale = c->scale ? c->scale[r] : 1.0f, g = c->dloss[r];
        double dscale = 0.0;
        for (size_t i = 0; i < c->width; ++i) {
            float delta = p[i] - (i == (size_t)target ? 1.0f : 0.0f);
            dz[i] = g * scale * delta;
            dscale += (double)delta * z[i];
        }
        if (c->dscale) c->dscale[r] = (float)(g * dscale);
    }
}

void uform__nn_softmax_xent_backward_f32_serial(size_t rows, size_t width, const float *logits, size_t logits_stride,
                                                const int32_t *targets, const float *scale, const float *probs,
                                                const float *dloss, float *dlogits, size_t dlogits_stride,
                                                float *dscale, const uform__parallel_t *parallel) {
    xent_context_t context = {.width = width,
                              .logits_stride = logits_stride,
                              .dlogits_stride = dlogits_stride,
                              .logits = logits,
                              .scale = scale,
                              .probs_in = probs,
                              .dloss = dloss,
                              .targets = targets,
                              .dlogits = dlogits,
                              .dscale = scale ? dscale : NULL};
    uform__nn_parallel_ranges(parallel, rows, 8, xent_backward_rows, &context);
}

/* ---------------------------------------------------------------------------------------------
 * L2 normalisation.
 */

typedef struct l2_context_t {
    size_t width, x_stride, y_stride, dy_stride, dx_stride;
    float eps;
    const float *x, *norm_in, *dy;
    float *y, *norm, *dx;
} l2_context_t;

static void l2norm_forward_rows(void *opaque, size_t begin, size_t end) {
    const l2_context_t *c = opaque;
    for (size_t r = begin; r < end; ++r) {
        const float *x = c->x + r * c->x_stride;
        float *y = c->y + r * c->y_stride;
        double squares = 0.0;
        for (size_t i = 0; i < c->width; ++i) squares += (double)x[i] * x[i];
        float norm = (float)sqrt(squares);
        norm = norm > c->eps ? norm : c->eps;
        for (size_t i = 0; i < c->width; ++i) y[i] = x[i] / norm;
        c->norm[r] = norm;
    }
}

void uform__nn_l2norm_forward_f32_serial(size_t rows, size_t width, const float *x, size_t x_stride, float eps,
                                         float *y, size_t y_stride, float *norm, const uform__parallel_t *parallel) {
    l2_context_t context = {
        .width = width, .x_stride = x_stride, .y_stride = y_stride, .eps = eps, .x = x, .y = y, .norm = norm};
    uform__nn_parallel_ranges(parallel, rows, 16, l2norm_forward_rows, &context);
}

static void l2norm_backward_rows(void *opaque, size_t begin, size_t end) {
    const l2_context_t *c = opaque;
    for (size_t r = begin; r < end; ++r) {
        const float *y = c->x + r * c->y_stride, *dy = c->dy + r * c->dy_stride;
        float *dx = c->dx + r * c->dx_stride;
        float norm = c->norm_in[r];
        if (norm <= c->eps) {
            for (size_t i = 0; i < c->width; ++i) dx[i] = dy[i] / c->eps;
            continue;
        }
        double dot = 0.0;
        for (size_t i = 0; i < c->width; ++i) dot += (double)y[i] * dy[i];
        float dot_f = (float)dot;
        for (size_t i = 0; i < c->width; ++i) dx[i] = (dy[i] - y[i] * dot_f) / norm;
    }
}

void uform__nn_l2norm_backward_f32_serial(size_t rows, size_t width, const float *y, size_t y_stride, const float *norm,
                                          float eps, const float *dy, size_t dy_stride, float *dx, size_t dx_stride,
                                          const uform__parallel_t *parallel) {
    l2_context_t context = {.width = width,
                            .y_stride = y_stride,
                            .dy_stride = dy_stride,
                            .dx_stride = dx_stride,
                            .eps = eps,
                            .x = y,
                            .norm_in = norm,
                            .dy = dy,
                            .dx = dx};
    uform__nn_parallel_ranges(parallel, rows, 16, l2norm_backward_rows, &context);
}

/* ---------------------------------------------------------------------------------------------
 * Mean pooling over ragged groups.
 */

typedef struct pool_context_t {
    const size_t *offsets;
    size_t width, in_stride, out_stride;
    const float *in;
    float *out;
} pool_context_t;

static void mean_pool_forward_groups(void *opaque, size_t begin, size_t end) {
    const pool_context_t *c = opaque;
    for (size_t g = begin; g < end; ++g) {
        float *y = c->out + g * c->out_stride;
        memset(y, 0, c->width * sizeof(float));
        size_t first = c->offsets[g], last = c->offsets[g + 1];
        if (first == last) continue;
        for (size_t r = first; r < last; ++r) {
            const float *x = c->in + r * c->in_stride;
            for (size_t i = 0; i < c->width; ++i) y[i] += x[i];
        }
        float count = (float)(last - first);
        for (size_t i = 0; i < c->width; ++i) y[i] /= count;
    }
}

void uform__nn_mean_pool_forward_f32_serial(size_t groups, const size_t *offsets, size_t width, const float *x,
                                            size_t x_stride, float *y, size_t y_stride,
                                            const uform__parallel_t *parallel) {
    pool_context_t context = {offsets, width, x_stride, y_stride, x, y};
    uform__nn_parallel_ranges(parallel, groups, 4, mean_pool_forward_groups, &context);
}

static void mean_pool_backward_groups(void *opaque, size_t begin, size_t end) {
    const pool_context_t *c = opaque;
    for (size_t g = begin; g < end; ++g) {
        const float *dy = c->in + g * c->in_stride;
        size_t first = c->offsets[g], last = c->offsets[g + 1];
        float count = (float)(last - first);
        for (size_t r = first; r < last; ++r) {
            float *dx = c->out + r * c->out_stride;
            for (size_t i = 0; i < c->width; ++i) dx[i] = dy[i] / count;
        }
    }
}

void uform__nn_mean_pool_backward_f32_serial(size_t groups, const size_t *offsets, size_t width, const float *dy,
                                             size_t dy_stride, float *dx, size_t dx_stride,
                                             const uform__parallel_t *parallel) {
    pool_context_t context = {offsets, width, dy_stride, dx_stride, dy, dx};
    uform__nn_parallel_ranges(parallel, groups, 4, mean_pool_backward_groups, &context);
}

/* ---------------------------------------------------------------------------------------------
 * Embedding gather and scatter-add.
 */

typedef struct embedding_context_t {
    size_t n, width, in_stride, out_stride;
    const uint32_t *ids;
    const float *in;
    float *out;
} embedding_context_t;

static void embedding_forward_rows(void *opaque, size_t begin, size_t end) {
    const embedding_context_t *c = opaque;
    for (size_t i = begin; i < end; ++i) {
        const float *row = c->in + (size_t)c->ids[i] * c->in_stride;
        float *out = c->out + i * c->out_stride;
        for (size_t e = 0; e < c->width; ++e) out[e] += row[e];
    }
}

void uform__nn_embedding_forward_f32_serial(size_t n, const uint32_t *ids, size_t width, const float *table,
                                            size_t table_stride, float *out, size_t out_stride,
                                            const uform__parallel_t *parallel) {
    embedding_context_t context = {n, width, table_stride, out_stride, ids, table, out};
    uform__nn_parallel_ranges(parallel, n, 16, embedding_forward_rows, &context);
}

/* The prong owning table rows [begin, end) adds every matching dout row, in increasing i. */
static void embedding_backward_table_rows(void *opaque, size_t begin, size_t end) {
    const embedding_context_t *c = opaque;
    for (size_t i = 0; i < c->n; ++i) {
        size_t id = c->ids[i];
        if (id < begin || id >= end) continue;
        const float *g = c->in + i * c->in_stride;
        float *row = c->out + id * c->out_stride;
        for (size_t e = 0; e < c->width; ++e) row[e] += g[e];
    }
}

void uform__nn_embedding_backward_f32_serial(size_t n, const uint32_t *ids, size_t width, const float *dout,
                                             size_t dout_stride, size_t vocabulary, float *dtable, size_t dtable_stride,
                                             const uform__parallel_t *parallel) {
    embedding_context_t context = {n, width, dout_stride, dtable_stride, ids, dout, dtable};
    uform__nn_parallel_ranges(parallel, vocabulary, 64, embedding_backward_table_rows, &context);
}

/* ---------------------------------------------------------------------------------------------
 * Conversions.
 */

void uform__nn_f32_to_bf16_serial(size_t n, const float *x, uint16_t *y) {
    for (size_t i = 0; i < n; ++i) y[i] = uform__nn_f32_to_bf16_one(x[i]);
}

void uform__nn_bf16_to_f32_serial(size_t n, const uint16_t *x, float *y) {
    for (size_t i = 0; i < n; ++i) y[i] = uform__nn_bf16_to_f32_one(x[i]);
}

void uform__nn_f32_to_f16_serial(size_t n, const float *x, uint16_t *y) {
    for (size_t i = 0; i < n; ++i) y[i] = uform__nn_f32_to_f16_one(x[i]);
}

void uform__nn_f16_to_f32_serial(size_t n, const uint16_t *x, float *y) {
    for (size_t i = 0; i < n; ++i) y[i] = uform__nn_f16_to_f32_one(x[i]);
}

void uform__nn_f32_to_i8_serial(size_t n, const float *x, int8_t *y) {
    for (size_t i = 0; i < n; ++i) {
        double scaled = (double)x[i] * 127.0; /* exact in double, so only one rounding happens */
        if (isnan(scaled))
            y[i] = 0;
        else if (scaled >= 127.0)
            y[i] = 127;
        else if (scaled <= -127.0)
            y[i] = -127;
        else
            y[i] = (int8_t)nearbyint(scaled); /* the default rounding mode: nearest, ties to even */
    }
}

void uform__nn_f32_to_b1_serial(size_t n, const float *x, uint8_t *y) {
    for (size_t byte = 0; byte < (n + 7) / 8; ++byte) {
        uint8_t bits = 0;
        for (size_t bit = 0; bit < 8 && byte * 8 + bit < n; ++bit)
            if (x[byte * 8 + bit] > 0.0f) bits |= (uint8_t)(0x80u >> bit);
        y[byte] = bits;
    }
}

/* ---------------------------------------------------------------------------------------------
 * AdamW and the sum of squares.
 */

static void adamw_range(void *opaque, size_t begin, size_t end) {
    const uform__nn_adamw_t *c = opaque;
    for (size_t i = begin; i < end; ++i) {
        float g = c->grads[i], p = c->params[i] * c->decay_factor;
        float m = c->m[i] * c->beta1 + (1.0f - c->beta1) * g;
        float v = c->v[i] * c->beta2 + (1.0f - c->beta2) * g * g;
        float denominator = sqrtf(v) / c->correction2_sqrt + c->eps;
        c->params[i] = p - c->step_size * (m / denominator);
        c->m[i] = m;
        c->v[i] = v;
    }
}

/* torch.optim.AdamW (1.13, single-tensor path): param.mul_(1 − lr·wd); exp_avg, exp_avg_sq;
 * denom = sqrt(exp_avg_sq)/sqrt(bias_correction2) + eps; param −= lr/bias_correction1 · exp_avg/denom. */
void uform__nn_adamw_f32_serial(size_t n, float *params, const float *grads, float *m, float *v, float lr, float beta1,
                                float beta2, float eps, float weight_decay, uint64_t step,
                                const uform__parallel_t *parallel) {
    uform__nn_adamw_with(adamw_range, n, params, grads, m, v, lr, beta1, beta2, eps, weight_decay, step, parallel);
}

static double block_sum_squares(const float *x, size_t begin, size_t end) {
    double sum = 0.0;
    for (size_t i = begin; i < end; ++i) sum += (double)x[i] * x[i];
    return sum;
}

double uform__nn_sum_squares_f32_serial(size_t n, const float *x, const uform__parallel_t *parallel) {
    return uform__nn_sum_squares_with(block_sum_squares, n, x, parallel);
}

void uform__nn_softmax_forward_f32_serial(size_t rows, size_t width, const float *x, size_t x_stride, float *y,
                                          size_t y_stride, const uform__parallel_t *parallel) {
    uform__nn_softmax_with(&uform__nn_attention_ops_serial, rows, width, x, x_stride, y, y_stride, parallel);
}

const uform__nn_kernels_t uform__nn_kernels_serial = {
    .attention_forward = uform__nn_attention_forward_f32_serial,
    .attention_forward_bf16 = attention_forward_bf16_serial,
    .attention_backward = uform__nn_attention_backward_f32_serial,
    .attention_backward_bf16 = attention_backward_bf16_serial,
    .layernorm_forward = uform__nn_layernorm_forward_f32_serial,
    .layernorm_forward_bf16 = uform__nn_layernorm_forward_bf16_serial,
    .layernorm_backward = uform__nn_layernorm_backward_f32_serial,
    .gelu_forward = uform__nn_gelu_forward_f32_serial,
    .gelu_backward = uform__nn_gelu_backward_f32_serial,
    .activation_forward = uform__nn_activation_forward_serial,
    .softmax_forward = uform__nn_softmax_forward_f32_serial,
    .softmax_xent_forward = uform__nn_softmax_xent_forward_f32_serial,
    .softmax_xent_backward = uform__nn_softmax_xent_backward_f32_serial,
    .l2norm_forward = uform__nn_l2norm_forward_f32_serial,
    .l2norm_backward = uform__nn_l2norm_backward_f32_serial,
    .mean_pool_forward = uform__nn_mean_pool_forward_f32_serial,
    .mean_pool_backward = uform__nn_mean_pool_backward_f32_serial,
    .embedding_forward = uform__nn_embedding_forward_f32_serial,
    .embedding_backward = uform__nn_embedding_backward_f32_serial,
    .f32_to_bf16 = uform__nn_f32_to_bf16_serial,
    .bf16_to_f32 = uform__nn_bf16_to_f32_serial,
    .f32_to_f16 = uform__nn_f32_to_f16_serial,
    .f16_to_f32 = uform__nn_f16_to_f32_serial,
    .f32_to_i8 = uform__nn_f32_to_i8_serial,
    .f32_to_b1 = uform__nn_f32_to_b1_serial,
    .adamw = uform__nn_adamw_f32_serial,
    .sum_squares = uform__nn_sum_squares_f32_serial,
};
