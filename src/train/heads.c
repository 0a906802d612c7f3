/*
 * The heads under training (docs/model.md, "Heads and outputs" and "text_choose"), forward and backward.
 *
 *   embeddings  [CLS] final state → {modality}.norm → {modality}.projection → e [N, E] (F32; the
 *               contrastive loss normalises every Matryoshka prefix itself)
 *   choices     [NEXT] final state → choose.norm → choose.head → 256 logits [C, 256] (F32 products,
 *               as text_choose computes them); the legal bytes' logits × exp(temperatures[0]) are
 *               soft-maxed over the legal bytes and scored against the target (cross-entropy)
 *
 * Only the read rows of the final states matter to the losses: the trunk's last block computes just
 * those (work->final [S, d]), and the heads' backward hands it d final for them alone.
 */
#include <math.h>
#include <string.h>

#include "core/outcome.h"
#include "core/tape.h"
#include "train/work.h"

uform_status_t uform__train_heads_forward(uform__train_work_t *work) {
    const uform__batch_plan_t *plan = work->plan;
    const struct uform_model_s *view = &work->trainer->view;
    const uform__model_config_t *config = &view->config;
    uform__compute_t *compute = &work->compute;
    const uform__nn_kernels_t *nn = compute->nn;
    uform_outcome_t *outcome = work->context->outcome;
    size_t d = config->hidden, E = config->embedding;
    float eps = (float)config->norm_eps;
    memcpy(work->head_in, work->final, plan->sequences * d * sizeof(float));
    for (int m = 0; m < 4; ++m) {
        size_t first = plan->modality_first[m], count = plan->modality_count[m];
        if (count == 0) continue;
        const uform__stem_t *stem = &view->stems[m];
        nn->layernorm_forward(count, d, work->head_in + first * d, d, stem->norm.weight, stem->norm.bias, eps,
                              work->head_normed + first * d, d, work->head_mean + first, work->head_rstd + first,
                              compute->parallel);
        if (work->round_inputs) uform__round_to_bf16(work->head_normed + first * d, count * d);
        uform_status_t status = uform__linear_forward(compute, &stem->projection, count, work->head_normed + first * d,
                                                      d, work->embeddings + first * E, E, E, 0, outcome);
        if (status != UFORM_OK) return status;
    }
    if (plan->choices) {
        size_t first = plan->embeddings;
        nn->layernorm_forward(plan->choices, d, work->head_in + first * d, d, view->choose_norm.weight,
                              view->choose_norm.bias, eps, work->head_normed + first * d, d, work->head_mean + first,
                              work->head_rstd + first, compute->parallel);
        uform_status_t status = uform__linear_forward(compute, &view->choose_head, plan->choices,
                                                      work->head_normed + first * d, d, work->logits, 256, 256,
                                                      UFORM__LINEAR_F32, outcome);
        if (status != UFORM_OK) return status;
    }
    return UFORM_OK;
}

double uform__train_choice_loss(uform__train_work_t *work, double weight) {
    const uform__batch_plan_t *plan = work->plan;
    size_t count = plan->choices;
    if (count == 0) return 0.0;
    /* Over a mesh the mean runs over the global batch's choices: the members' sums add up to it. */
    size_t total_count = work->choice_total ? work->choice_total : count;
    memset(work->d_logits, 0, count * 256 * sizeof(float));
    double scale = exp((double)work->trainer->view.temperatures[0]); /* unclamped, like text_choose */
    double total = 0, d_scale = 0;
    for (size_t j = 0; j < count; ++j) {
        const uform__sequence_t *sequence = &plan->sequence[plan->embeddings + j];
        size_t length;
        const unsigned char *legal = uform__tape_item(plan->choice_tape, sequence->content, &length);
        unsigned target = plan->targets[sequence->content];
        const float *logits = work->logits + j * 256;
        double largest = -INFINITY, sum = 0, z_target = 0;
        for (size_t c = 0; c < length; ++c) largest = fmax(largest, scale * logits[legal[c]]);
        for (size_t c = 0; c < length; ++c) {
            double z = scale * logits[legal[c]];
            sum += exp(z - largest);
            if (legal[c] == target) z_target = z;
        }
        double log_sum = largest + log(sum);
        total += log_sum - z_target;
        /* dz_c = (p_c − [c = target]) · weight / count; dlogit = scale · dz; dscale·scale = Σ dz·z. */
        for (size_t c = 0; c < length; ++c) {
            double z = scale * logits[legal[c]];
            double dz = (exp(z - log_sum) - (legal[c] == target)) * weight / (double)total_count;
            work->d_logits[j * 256 + legal[c]] = (float)(scale * dz);
            d_scale += dz * z;
        }
    }
    work->d_temperatures[0] += (float)d_scale;
    return total / (double)total_count;
}

uform_status_t uform__train_heads_backward(uform__train_work_t *work) {
    const uform__batch_plan_t *plan = work->plan;
    const struct uform_model_s *view = &work->trainer->view;
    struct uform_model_s *grads = &work->trainer->grad_view;
    const uform__model_config_t *config = &view->config;
    const uform__parallel_t *parallel = work->compute.parallel;
    const uform__nn_kernels_t *nn = work->compute.nn;
    size_t d = config->hidden, E = config->embedding;
    float *d_normed = work->dh; /* [S, d] scratch */
    for (int m = 0; m < 4; ++m) {
        size_t first = plan->modality_first[m], count = plan->modality_count[m];
        if (count == 0) continue;
        const uform__stem_t *stem = &view->stems[m];
        uform__stem_t *grad = &grads->stems[m];
        uform_status_t status = uform__train_linear_backward(work, &stem->projection, &grad->projection, count,
                                                             work->head_normed + first * d, d,
                                                             work->d_embeddings + first * E, E, d_normed, d);
        if (status != UFORM_OK) return status;
        nn->layernorm_backward(count, d, work->head_in + first * d, d, stem->norm.weight, work->head_mean + first,
                               work->head_rstd + first, d_normed, d, work->dx + first * d, d,
                               (float *)grad->norm.weight, (float *)grad->norm.bias, parallel);
    }
    if (plan->choices) {
        size_t first = plan->embeddings, count = plan->choices;
        uform_status_t status = uform__train_linear_backward(work, &view->choose_head, &grads->choose_head, count,
                                                             work->head_normed + first * d, d, work->d_logits, 256,
                                                             d_normed, d);
        if (status != UFORM_OK) return status;
        nn->layernorm_backward(count, d, work->head_in + first * d, d, view->choose_norm.weight,
                               work->head_mean + first, work->head_rstd + first, d_normed, d, work->dx + first * d, d,
                               (float *)grads->choose_norm.weight, (float *)grads->choose_norm.bias, parallel);
    }
    return UFORM_OK;
}
