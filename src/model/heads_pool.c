/*
 * SigLIP's attention pooling head (transformers' SiglipMultiheadAttentionPoolingHead; the MAP head
 * of "Scaling Vision Transformers", Zhai et al. 2022): one learned probe row queries the item's
 * final states through torch.nn.MultiheadAttention (fused in_proj, out_proj), then
 *   pooled = a + mlp(layernorm(a)),  a = out_proj(attention(probe·Wqᵀ + bq, K, V))
 * with the tower's activation in the MLP. The probe's query is the same for every item, so the
 * loader computes it once.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "model/heads.h"

uform_status_t uform__heads_attention_pool(const uform__encode_job_t *job, uform__compute_t *compute,
                                           const float *states, size_t states_stride, size_t count,
                                           const size_t *offsets, float *pooled, float *scratch,
                                           uform__call_context_t *context) {
    const uform_model_t model = job->model;
    const uform__attention_pool_t *pool = &model->stems[job->modality].pool;
    size_t d = model->config.hidden, heads = pool->heads, dh = d / heads, tokens = offsets[count];
    size_t mlp = pool->up.rows;
    /* keys and values [T, 2d]: the rows d..3d of in_proj, one product. */
    float *kv = scratch;
    uform_status_t status = uform__linear_forward(compute, &pool->keys, tokens, states, states_stride, kv, 2 * d, 2 * d,
                                                  UFORM__LINEAR_F32, context->outcome);
    if (status != UFORM_OK) return status;
    float *attended = malloc(count * (2 * d + mlp + 1) * sizeof(float) + tokens * sizeof(float));
    if (!attended)
        return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function,
                           "cannot allocate the attention pooling's rows for %zu items", count);
    float *normed = attended + count * d, *hidden = normed + count * d, *weights = hidden + count * mlp;
    /* softmax(q·kᵀ/√dh)·v per item and head; the scores of one head at a time in `weights`. */
    double scale = 1.0 / sqrt((double)dh);
    for (size_t i = 0; i < count; ++i) {
        size_t begin = offsets[i], rows = offsets[i + 1] - begin;
        for (size_t h = 0; h < heads; ++h) {
            const float *q = pool->query + h * dh;
            double top = -INFINITY;
            for (size_t r = 0; r < rows; ++r) {
                const float *k = kv + (begin + r) * 2 * d + h * dh;
                double dot = 0.0;
                for (size_t e = 0; e < dh; ++e) dot += (double)q[e] * k[e];
                weights[r] = (float)(dot * scale);
                if (weights[r] > top) top = weights[r];
            }
            double total = 0.0;
            for (size_t r = 0; r < rows; ++r) total += exp((double)weights[r] - top);
            float *out = attended + i * d + h * dh;
            for (size_t e = 0; e < dh; ++e) {
                double sum = 0.0;
                for (size_t r = 0; r < rows; ++r)
                    sum += exp((double)weights[r] - top) * kv[(begin + r) * 2 * d + d + h * dh + e];
                out[e] = (float)(sum / total);
            }
        }
    }
    /* a = out_proj(attended), into pooled; then pooled += mlp(norm(a)). */
    status = uform__linear_forward(compute, &pool->out, count, attended, d, pooled, d, d, UFORM__LINEAR_F32,
                                   context->outcome);
    if (status == UFORM_OK) {
        compute->nn->layernorm_forward(count, d, pooled, d, pool->norm.weight, pool->norm.bias, model->arch.eps, normed, d,
                                       weights, weights + count, compute->parallel);
        status = uform__linear_forward(compute, &pool->up, count, normed, d, hidden, mlp, mlp,
                                       uform__linear_activation_flag(model->arch.activation) | UFORM__LINEAR_F32,
                                       context->outcome);
    }
    if (status == UFORM_OK)
        status = uform__linear_forward(compute, &pool->down, count, hidden, mlp, pooled, d, d,
                                       UFORM__LINEAR_ACCUMULATE | UFORM__LINEAR_F32, context->outcome);
    free(attended);
    return status;
}
