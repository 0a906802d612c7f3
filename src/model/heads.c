/*
 * The heads (docs/model.md): {modality}.norm over the final token states gives the STATES; the CLS
 * state projected by {modality}.projection and L2-normalised is the EMBEDDING; every token's
 * state projected and normalised is its TOKEN VECTOR. A Matryoshka prefix of `dimensions`
 * columns is taken before normalising, and `outputs_scalar` converts at the very end.
 *
 * A published tower (docs/checkpoints.md) varies each step: the norm may be absent (post-norm
 * towers end normalised), the row pooled may be another than the first (the end-of-text token, the
 * last row), or the rows are pooled by mean, maximum or attention (heads_pool.c); after the
 * pooling come its sentence-transformers Dense modules, then the projection (with or without a
 * bias, or none: E = d), then the same prefix and normalisation.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/outcome.h"
#include "model/heads.h"

/* torch.nn.functional.normalize's default eps. */
#define UFORM__L2_EPS 1e-12f

void uform__convert_rows(const uform__nn_kernels_t *nn, const float *source, size_t source_stride, size_t rows,
                         size_t columns, uform_matrix_t *target, size_t first_row) {
    for (size_t r = 0; r < rows; ++r) {
        const float *from = source + r * source_stride;
        void *to = (char *)target->data + (first_row + r) * target->stride_bytes;
        switch (target->scalar) {
        case UFORM_SCALAR_F32: memcpy(to, from, columns * sizeof(float)); break;
        case UFORM_SCALAR_F16: nn->f32_to_f16(columns, from, to); break;
        case UFORM_SCALAR_BF16: nn->f32_to_bf16(columns, from, to); break;
        case UFORM_SCALAR_I8: nn->f32_to_i8(columns, from, to); break;
        case UFORM_SCALAR_B1: nn->f32_to_b1(columns, from, to); break;
        }
    }
}

size_t uform__heads_width(const uform_model_t model) {
    const uform__model_config_t *config = &model->config;
    size_t width = config->embedding > 256 ? config->embedding : 256;
    for (int m = 0; m < 4; ++m) {
        const uform__stem_t *stem = &model->stems[m];
        if (!stem->present) continue;
        if (config->hidden > width) width = config->hidden;
        for (size_t i = 0; i < stem->dense_count; ++i)
            if (stem->dense[i].rows > width) width = stem->dense[i].rows;
        if (model->arch.pooling == UFORM__POOLING_ATTENTION && 2 * config->hidden > width) width = 2 * config->hidden;
    }
    return width;
}

size_t uform__heads_pool_row(const uform__encode_job_t *job, size_t job_item, const size_t *offsets, size_t item) {
    const uform__architecture_t *arch = &job->model->arch;
    size_t begin = offsets[item], end = offsets[item + 1];
    switch (arch->published ? arch->pooling : UFORM__POOLING_FIRST) {
    case UFORM__POOLING_FIRST: return begin;
    case UFORM__POOLING_LAST: return end - 1;
    case UFORM__POOLING_TOKEN: {
        if (!job->ids) return begin;
        const uint32_t *ids = job->ids + job->id_offsets[job_item];
        size_t length = end - begin, best = 0;
        for (size_t k = 0; k < length; ++k) {
            if (arch->pool_argmax ? ids[k] > ids[best] : ids[k] == arch->pool_token) {
                best = k;
                if (!arch->pool_argmax) break;
            }
        }
        /* Without the token (a text that does not hold it), CLIP's own indexing finds position 0. */
        return begin + best;
    }
    default: return SIZE_MAX;
    }
}

/* Mean, maximum or sum/√n of each item's state rows into pooled [count, d]. */
static void reduce_rows(uform__pooling_t pooling, const float *states, size_t stride, size_t d, size_t count,
                        const size_t *offsets, float *pooled) {
    for (size_t i = 0; i < count; ++i) {
        float *out = pooled + i * d;
        size_t rows = offsets[i + 1] - offsets[i];
        const float *first = states + offsets[i] * stride;
        if (pooling == UFORM__POOLING_MAX) {
            memcpy(out, first, d * sizeof(float));
            for (size_t r = 1; r < rows; ++r)
                for (size_t c = 0; c < d; ++c)
                    if (first[r * stride + c] > out[c]) out[c] = first[r * stride + c];
            continue;
        }
        /* sentence-transformers sums in the tower's F32 (torch.sum over the masked rows); the sum
         * here is in double and rounded once, within an ulp of it. */
        for (size_t c = 0; c < d; ++c) {
            double sum = 0.0;
            for (size_t r = 0; r < rows; ++r) sum += first[r * stride + c];
            double divisor = pooling == UFORM__POOLING_MEAN_SQRT ? sqrt((double)rows) : (double)rows;
            out[c] = (float)(sum / divisor);
        }
    }
}

/*
 * rows [n, d] (stride `stride`) through the tower's Dense modules and projection into out [n,
 * dimensions] (stride `dimensions`), L2-normalised. `spare` [n, W] holds the Dense modules'
 * intermediate rows. Only the last linear layer computes just the prefix's `dimensions` columns.
 */
static uform_status_t head_rows(const uform__encode_job_t *job, uform__compute_t *compute, const float *rows,
                                size_t stride, size_t n, size_t dimensions, float *out, float *spare,
                                const uform__heads_scratch_t *scratch, uform__call_context_t *context) {
    const uform__stem_t *stem = &job->model->stems[job->modality];
    size_t d = job->model->config.hidden, width = d;
    const float *input = rows;
    size_t input_stride = stride;
    float *buffers[2] = {spare, out};
    uform_status_t status = UFORM_OK;
    int has_projection = stem->projection.weight || stem->projection.i8.data;
    for (size_t i = 0; i < stem->dense_count && status == UFORM_OK; ++i) {
        const uform__linear_t *layer = &stem->dense[i];
        int last = i + 1 == stem->dense_count && !has_projection;
        size_t columns = last ? dimensions : layer->rows;
        float *target = last ? out : buffers[i % 2];
        size_t target_stride = last ? dimensions : layer->rows;
        status = uform__linear_forward(compute, layer, n, input, input_stride, target, target_stride, columns,
                                       uform__linear_activation_flag(stem->dense_activation[i]) | UFORM__LINEAR_F32,
                                       context->outcome);
        input = target, input_stride = target_stride, width = layer->rows;
    }
    if (status != UFORM_OK) return status;
    if (has_projection) {
        status = uform__linear_forward(compute, &stem->projection, n, input, input_stride, out, dimensions, dimensions,
                                       0, context->outcome);
        if (status != UFORM_OK) return status;
    } else if (input != out) { /* no layer after the pooling: the prefix of the rows themselves */
        for (size_t r = 0; r < n; ++r) memcpy(out + r * dimensions, input + r * input_stride, dimensions * sizeof(float));
    }
    (void)width;
    compute->nn->l2norm_forward(n, dimensions, out, dimensions, UFORM__L2_EPS, out, dimensions, scratch->norms,
                                compute->parallel);
    return UFORM_OK;
}

uform_status_t uform__heads_forward(const uform__encode_job_t *job, uform__compute_t *compute, const float *x,
                                    size_t first, size_t count, const size_t *offsets, size_t first_token,
                                    const uform__heads_scratch_t *scratch, uform__call_context_t *context) {
    const uform_model_t model = job->model;
    const uform__model_config_t *config = &model->config;
    const uform__stem_t *stem = &model->stems[job->modality];
    const uform__nn_kernels_t *nn = compute->nn;
    size_t d = config->hidden, tokens = offsets[count];
    size_t dimensions = job->config->dimensions ? job->config->dimensions : config->embedding;
    uform_outputs_t outputs = job->outputs ? job->outputs : UFORM_OUTPUTS_EMBEDDINGS;
    uform_encoded_t *encoded = job->encoded;
    float eps = (float)config->norm_eps;

    /* The states: straight into the output when it is kept, else into scratch. A tower without a
     * final norm (post-norm towers) keeps its trunk rows as they are. */
    float *states = scratch->states;
    size_t states_stride = d;
    if (outputs & UFORM_OUTPUTS_STATES) {
        states = (float *)((char *)encoded->states.matrix.data + first_token * encoded->states.matrix.stride_bytes);
        states_stride = encoded->states.matrix.stride_bytes / sizeof(float);
    }
    if (stem->norm.weight) {
        nn->layernorm_forward(tokens, d, x, d, stem->norm.weight, stem->norm.bias, eps, states, states_stride,
                              scratch->mean, scratch->rstd, compute->parallel);
    } else if (outputs & UFORM_OUTPUTS_STATES) {
        for (size_t r = 0; r < tokens; ++r) memcpy(states + r * states_stride, x + r * d, d * sizeof(float));
    } else {
        states = (float *)x, states_stride = d;
    }
    uform_status_t status;
    if (outputs & UFORM_OUTPUTS_TOKEN_VECTORS) {
        status = head_rows(job, compute, states, states_stride, tokens, dimensions, scratch->projected, scratch->spare,
                           scratch, context);
        if (status != UFORM_OK) return status;
        uform__convert_rows(nn, scratch->projected, dimensions, tokens, dimensions, &encoded->token_vectors.matrix,
                            first_token);
    }
    if (outputs & UFORM_OUTPUTS_EMBEDDINGS) {
        uform__pooling_t pooling = model->arch.published ? model->arch.pooling : UFORM__POOLING_FIRST;
        if (pooling == UFORM__POOLING_ATTENTION) {
            status = uform__heads_attention_pool(job, compute, states, states_stride, count, offsets, scratch->cls,
                                                 scratch->projected, context);
            if (status != UFORM_OK) return status;
        } else if (pooling == UFORM__POOLING_MEAN || pooling == UFORM__POOLING_MAX ||
                   pooling == UFORM__POOLING_MEAN_SQRT) {
            reduce_rows(pooling, states, states_stride, d, count, offsets, scratch->cls);
        } else {
            for (size_t i = 0; i < count; ++i)
                memcpy(scratch->cls + i * d, states + uform__heads_pool_row(job, first + i, offsets, i) * states_stride,
                       d * sizeof(float));
        }
        status = head_rows(job, compute, scratch->cls, d, count, dimensions, scratch->projected, scratch->spare,
                           scratch, context);
        if (status != UFORM_OK) return status;
        uform__convert_rows(nn, scratch->projected, dimensions, count, dimensions, &encoded->embeddings, first);
    }
    return UFORM_OK;
}
