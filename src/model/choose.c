/*
 * text_choose (docs/model.md): the [NEXT] row's final state through choose.norm and choose.head gives
 * 256 byte logits; those of the legal bytes, scaled by exp(temperatures[g]), are soft-maxed over
 * the legal bytes only, in the order the choices list them.
 */
#include <math.h>
#include <string.h>

#include "core/outcome.h"
#include "core/tape.h"
#include "model/heads.h"

uform_status_t uform__choose_forward(const uform__encode_job_t *job, uform__compute_t *compute, const float *x,
                                     size_t first, size_t count, const size_t *offsets,
                                     const uform__heads_scratch_t *scratch, uform__call_context_t *context) {
    const uform_model_t model = job->model;
    size_t d = model->config.hidden;
    /* Gather the [NEXT] rows (each text's last token), normalise, project to 256 logits. */
    for (size_t i = 0; i < count; ++i) memcpy(scratch->cls + i * d, x + (offsets[i + 1] - 1) * d, d * sizeof(float));
    compute->nn->layernorm_forward(count, d, scratch->cls, d, model->choose_norm.weight, model->choose_norm.bias,
                                   (float)model->config.norm_eps, scratch->states, d, scratch->mean, scratch->rstd,
                                   compute->parallel);
    /* The head runs in F32 even under BF16 compute: one row per text, so it costs nothing, and its
     * logits are then exponentiated (and scaled by the temperature), which magnifies rounding. */
    uform_status_t status = uform__linear_forward(compute, &model->choose_head, count, scratch->states, d,
                                                  scratch->projected, 256, 256, UFORM__LINEAR_F32, context->outcome);
    if (status != UFORM_OK) return status;
    uform_rows_t *probabilities = job->probabilities;
    float *out = probabilities->matrix.data;
    for (size_t i = 0; i < count; ++i) {
        size_t text = first + i, length;
        const unsigned char *legal = uform__tape_item(job->choices, text, &length);
        const float *logits = scratch->projected + i * 256;
        size_t group = job->groups ? job->groups[text] : 0;
        double scale = exp((double)model->temperatures[group]);
        float *target = out + probabilities->offsets[text];
        double largest = -INFINITY, sum = 0;
        for (size_t c = 0; c < length; ++c) largest = fmax(largest, scale * logits[legal[c]]);
        for (size_t c = 0; c < length; ++c) sum += exp(scale * logits[legal[c]] - largest);
        for (size_t c = 0; c < length; ++c) target[c] = (float)(exp(scale * logits[legal[c]] - largest) / sum);
    }
    return UFORM_OK;
}
