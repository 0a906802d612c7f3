/*
 * The optimizer (docs/training.md, "Optimizer"): the warmup-then-cosine schedule, the global gradient
 * norm and clipping, and AdamW with torch.optim.AdamW's semantics, dense — every tensor is stepped
 * every step, so a tensor the batch never reached still decays and its moments shrink.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/outcome.h"
#include "train/trainer.h"

/* The one schedule: `step` and `total` may be fractional (uform_trainer_schedule maps other clocks
 * onto steps); at whole steps this is exactly what the optimizer has always used. */
static double schedule(double lr, double warmup, double total, double step) {
    if (step <= warmup) return lr * step / warmup;
    if (total == 0) return lr;
    if (step > total || total <= warmup) return 0.1 * lr;
    double progress = (step - warmup) / (total - warmup);
    return lr * (0.1 + 0.45 * (1.0 + cos(3.14159265358979323846 * progress)));
}

double uform__train_learning_rate(const uform__optimizer_t *optimizer, uint64_t step) {
    return schedule(optimizer->learning_rate, (double)optimizer->warmup_steps, (double)optimizer->total_steps, (double)step);
}

UFORM_API double uform_trainer_schedule(uform_trainer_t trainer, double step, double total_steps) {
    if (!trainer || !(step >= 0)) return 0;
    const uform__optimizer_t *optimizer = &trainer->optimizer;
    double total = total_steps > 0 ? total_steps : (double)optimizer->total_steps;
    return schedule(optimizer->learning_rate, (double)optimizer->warmup_steps, total, step);
}

uform_status_t uform__train_optimizer_resolve(const uform__optimizer_t *given, uform__optimizer_t *resolved,
                                              uform_outcome_t *outcome, const char *function) {
    *resolved = *given;
    /* Zero takes docs/training.md's default; a negative weight decay, clip norm or loss weight means 0. */
    if (resolved->learning_rate == 0) resolved->learning_rate = 1e-3;
    if (resolved->beta1 == 0) resolved->beta1 = 0.9;
    if (resolved->beta2 == 0) resolved->beta2 = 0.98;
    if (resolved->epsilon == 0) resolved->epsilon = 1e-6;
    if (resolved->weight_decay == 0) resolved->weight_decay = 0.1;
    else if (resolved->weight_decay < 0) resolved->weight_decay = 0;
    if (resolved->clip_norm == 0) resolved->clip_norm = 1.0;
    else if (resolved->clip_norm < 0) resolved->clip_norm = 0;
    if (resolved->contrastive_weight == 0) resolved->contrastive_weight = 1.0;
    else if (resolved->contrastive_weight < 0) resolved->contrastive_weight = 0;
    if (resolved->choice_weight == 0) resolved->choice_weight = 1.0;
    else if (resolved->choice_weight < 0) resolved->choice_weight = 0;
    struct { const char *name; double value, low, high; } checks[] = {
        {"learning_rate", resolved->learning_rate, 0, 10},
        {"beta1", resolved->beta1, 0, 1},
        {"beta2", resolved->beta2, 0, 1},
        {"epsilon", resolved->epsilon, 0, 1},
        {"weight_decay", resolved->weight_decay, 0, 1e3},
        {"clip_norm", resolved->clip_norm, 0, 1e30},
        {"contrastive_weight", resolved->contrastive_weight, 0, 1e30},
        {"choice_weight", resolved->choice_weight, 0, 1e30},
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; ++i) {
        double value = checks[i].value;
        int open_high = i >= 1 && i <= 2; /* the betas must stay below 1 */
        int bad = !isfinite(value) || value < checks[i].low || (open_high ? value >= checks[i].high : value > checks[i].high);
        if (i == 0 || i == 3) bad = bad || value <= 0;
        if (bad)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "config.%s = %g is out of range (learning_rate in (0, 10], beta1 and beta2 in [0, 1), "
                               "epsilon in (0, 1], weight_decay in [0, 1000])",
                               checks[i].name, value);
    }
    return UFORM_OK;
}

double uform__train_grad_norm(uform_trainer_t trainer, const uform__nn_kernels_t *nn, const uform__parallel_t *parallel) {
    double sum = 0;
    for (size_t i = 0; i < trainer->param_count; ++i) {
        const uform__param_t *param = &trainer->params[i];
        sum += nn->sum_squares(param->count, trainer->grads + param->offset, parallel);
    }
    return sqrt(sum);
}

typedef struct scale_loop_t {
    float *values;
    float factor;
} scale_loop_t;

static void scale_range(void *context, size_t begin, size_t end) {
    const scale_loop_t *loop = context;
    for (size_t i = begin; i < end; ++i) loop->values[i] *= loop->factor;
}

void uform__train_update(uform_trainer_t trainer, double grad_norm, uint64_t step, double learning_rate,
                         const uform__nn_kernels_t *nn, const uform__parallel_t *parallel) {
    const uform__optimizer_t *optimizer = &trainer->optimizer;
    /* Global clipping: every gradient times clip / norm when the norm exceeds clip (docs/training.md). */
    if (optimizer->clip_norm > 0 && grad_norm > optimizer->clip_norm) {
        scale_loop_t loop = {trainer->grads, (float)(optimizer->clip_norm / grad_norm)};
        uform__nn_parallel_ranges(parallel, trainer->total, 1 << 14, scale_range, &loop);
    }
    for (size_t i = 0; i < trainer->param_count; ++i) {
        const uform__param_t *param = &trainer->params[i];
        size_t offset = param->offset;
        nn->adamw(param->count, trainer->weights + offset, trainer->grads + offset, trainer->m + offset,
                  trainer->v + offset, (float)learning_rate, (float)optimizer->beta1, (float)optimizer->beta2,
                  (float)optimizer->epsilon, param->decay ? (float)optimizer->weight_decay : 0.0f, step, parallel);
    }
    uform__train_bf16_refresh(trainer, nn);
}
