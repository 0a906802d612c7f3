/*
 * The heads (docs/model.md): {modality}.norm over the final token states gives the STATES; the CLS
 * state projected by {modality}.projection and L2-normalised is the EMBEDDING; every token's
 * state projected and normalised is its TOKEN VECTOR. A Matryoshka prefix of `dimensions`
 * columns is taken before normalising, and `outputs_scalar` converts at the very end.
 */
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

    /* The states: straight into the output when it is kept, else into scratch. */
    float *states = scratch->states;
    size_t states_stride = d;
    if (outputs & UFORM_OUTPUTS_STATES) {
        states = (float *)((char *)encoded->states.matrix.data + first_token * encoded->states.matrix.stride_bytes);
        states_stride = encoded->states.matrix.stride_bytes / sizeof(float);
    }
    nn->layernorm_forward(tokens, d, x, d, stem->norm.weight, stem->norm.bias, eps, states, states_stride,
                          scratch->mean, scratch->rstd, compute->parallel);
    uform_status_t status;
    if (outputs & UFORM_OUTPUTS_TOKEN_VECTORS) {
        status = uform__linear_forward(compute, &stem->projection, tokens, states, states_stride, scratch->projected,
                                       dimensions, dimensions, 0, context->outcome);
        if (status != UFORM_OK) return status;
        nn->l2norm_forward(tokens, dimensions, scratch->projected, dimensions, UFORM__L2_EPS, scratch->projected,
                           dimensions, scratch->norms, compute->parallel);
        uform__convert_rows(nn, scratch->projected, dimensions, tokens, dimensions, &encoded->token_vectors.matrix,
                            first_token);
    }
    if (outputs & UFORM_OUTPUTS_EMBEDDINGS) {
        for (size_t i = 0; i < count; ++i)
            memcpy(scratch->cls + i * d, states + offsets[i] * states_stride, d * sizeof(float));
        status = uform__linear_forward(compute, &stem->projection, count, scratch->cls, d, scratch->projected,
                                       dimensions, dimensions, 0, context->outcome);
        if (status != UFORM_OK) return status;
        nn->l2norm_forward(count, dimensions, scratch->projected, dimensions, UFORM__L2_EPS, scratch->projected,
                           dimensions, scratch->norms, compute->parallel);
        uform__convert_rows(nn, scratch->projected, dimensions, count, dimensions, &encoded->embeddings, first);
    }
    return UFORM_OK;
}
