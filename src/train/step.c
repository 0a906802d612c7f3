/*
 * The step verb (docs/training.md): decode → stems → blocks → heads → losses → backward → clip → AdamW,
 * written once: over the batch's chunks (accumulate.c; the batch at once is one chunk) and through
 * the run's exchange (exchange.h; alone or over a mesh), so neither appears here as a branch.
 *
 * Nothing the trainer keeps changes before the update, and the update cannot fail: a bad batch,
 * an undecodable content, a cancel or a failed allocation leaves weights, moments and the step
 * count exactly as they were. The outputs (temperatures and bag embeddings, computed with the
 * weights the losses used) are placed in the arena before the update for the same reason.
 *
 * The status flows through the whole sequence: a pass runs only while it is UFORM_OK, and every
 * exchange is made whatever it is, so that over a mesh a member whose batch was refused, whose
 * content could not be decoded or whose handler cancelled still meets the others.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/arena.h"
#include "core/clock.h"
#include "core/outcome.h"
#include "model/heads.h"
#include "train/exchange.h"

typedef struct step_t {
    uform_trainer_step_t *request;
    uform__call_context_t *context;
    uform_trainer_t trainer;
    uform__batch_plan_t plan;          /* the whole batch's */
    uform__train_work_t whole;         /* its losses, and with one chunk its activations too */
    uform__train_chunks_t chunks;
    uform__train_exchange_t exchange;
    uform_trainer_stats_t stats;
} step_t;

static uform_status_t cancelled(uform__call_context_t *context, const char *where) {
    return uform__fail(context->outcome, UFORM_CANCELLED, context->function,
                       "cancelled by the progress handler %s; the trainer is unchanged", where);
}

/* The outputs' views, in the arena, before anything changes. */
static uform_status_t output_views(step_t *step) {
    const uform__model_config_t *config = &step->trainer->config;
    uform__call_context_t *context = step->context;
    uform_status_t status = uform__arena_matrix(context->arena, 1, config->temperature_groups, UFORM_SCALAR_F32,
                                                &step->request->temperatures, context->outcome, context->function);
    if (status != UFORM_OK) return status;
    memcpy(step->request->temperatures.data, step->trainer->view.temperatures,
           config->temperature_groups * sizeof(float));
    return uform__arena_matrix(context->arena, step->plan.bags, config->embedding, step->request->outputs_scalar,
                               &step->request->bag_embeddings, context->outcome, context->function);
}

/* The batch checked and planned, its chunks, their memory and the outputs' views; the progress. */
static uform_status_t prepare(step_t *step) {
    uform_trainer_t trainer = step->trainer;
    uform__call_context_t *context = step->context;
    uform_status_t status = uform__train_batch_check(trainer, step->request, context->outcome, context->function);
    if (status == UFORM_OK)
        status = uform__train_batch_plan(trainer, step->request, &step->plan, context->outcome, context->function);
    step->stats.sequences = step->plan.sequences, step->stats.tokens = step->plan.tokens;
    uform__train_work_begin(&step->whole, trainer, &step->plan, step->request, context);
    size_t count = status == UFORM_OK ? uform__train_chunk_count(step->request) : 1, bytes = 0;
    if (status == UFORM_OK) status = uform__train_chunks_plan(&step->chunks, &step->whole, count, &bytes);
    step->chunks.count = step->stats.chunks = count;
    if (status == UFORM_OK) status = uform__train_step_memory(trainer, bytes, context);
    if (status == UFORM_OK) status = output_views(step);
    /* Progress: each chunk's decoding and blocks forward (with several chunks twice), its blocks
     * backward, then the update. */
    size_t depth = trainer->config.depth, forwards = count > 1 ? 2 : 1;
    if (status == UFORM_OK)
        uform__progress_begin(&context->progress, &step->request->progress,
                              count * (forwards * (1 + depth) + depth) + 1);
    return status;
}

/* A chunk's decoding, and the chance to cancel after it. */
static uform_status_t decode(step_t *step, uform__train_work_t *work) {
    double start = uform__seconds_now();
    uform_status_t status = uform__train_stems_decode(work);
    step->stats.decode_seconds += uform__seconds_now() - start;
    if (status == UFORM_OK && uform__progress_advance(&step->context->progress, ++work->done) == UFORM_CANCEL)
        status = cancelled(step->context, step->chunks.count > 1 ? "after decoding a chunk" : "after decoding");
    return status;
}

/* A chunk's stems, blocks and heads. */
static uform_status_t forward(uform__train_work_t *work) {
    uform_status_t status = uform__train_stems_forward(work, work->blocks[0].x);
    if (status == UFORM_OK) status = uform__train_blocks_forward(work);
    if (status == UFORM_OK) status = uform__train_heads_forward(work);
    return status;
}

/* What a chunk's work leaves to the batch's once a pass over it is done. */
static void collect(step_t *step, uform__train_work_t *work) {
    step->whole.done = work->done, step->stats.flops += work->compute.flops;
    work->compute.flops = 0;
    if (work->failed_content != SIZE_MAX) step->whole.failed_content = work->failed_content;
}

/* Step 1: every chunk's forward, its embeddings and logits into the batch's. The exchange begins
 * once the batch is decoded (before the last chunk's forward), with whatever status it has then. */
static uform_status_t forward_all(step_t *step, uform_status_t status) {
    size_t K = step->chunks.count;
    for (size_t k = 0; k < K; ++k) {
        uform__train_work_t *work = NULL;
        if (status == UFORM_OK) {
            work = uform__train_chunk_work(&step->chunks, &step->whole, k, step->trainer->memory.base);
            status = decode(step, work);
            collect(step, work); /* a content that failed to decode is named to the run */
        }
        if (k + 1 == K) status = step->exchange.begin(&step->exchange, &step->whole, status);
        if (status == UFORM_OK) {
            status = forward(work);
            if (status == UFORM_OK) uform__train_chunk_gather(&step->chunks, k, work, &step->whole);
            collect(step, work);
        }
    }
    return status;
}

/* Step 3: each chunk's backward from the batch's gradients, into zeroed parameter gradients (with
 * several chunks, after its forward again). */
static uform_status_t backward_all(step_t *step) {
    uform_trainer_t trainer = step->trainer;
    size_t K = step->chunks.count;
    uform_status_t status = UFORM_OK;
    memset(trainer->grads, 0, trainer->total * sizeof(float));
    for (size_t k = 0; k < K && status == UFORM_OK; ++k) {
        uform__train_work_t *work = uform__train_chunk_work(&step->chunks, &step->whole, k, trainer->memory.base);
        if (K > 1) { /* the activations in memory are the last chunk's: each chunk runs its forward again */
            status = decode(step, work);
            if (status == UFORM_OK) status = forward(work);
        }
        if (status == UFORM_OK) uform__train_chunk_scatter(&step->chunks, k, &step->whole, work);
        /* Only the last chunk's backward finishes a block's gradients: the exchange may take them then. */
        if (k + 1 == K)
            work->block_done = step->exchange.block_done, work->block_done_state = step->exchange.block_done_state;
        if (status == UFORM_OK) status = uform__train_heads_backward(work);
        if (status == UFORM_OK) status = uform__train_blocks_backward(work);
        if (status == UFORM_OK) status = uform__train_stems_backward(work, work->dx);
        collect(step, work);
    }
    if (status == UFORM_OK) {
        float *d_temperatures = (float *)trainer->grad_view.temperatures;
        for (size_t g = 0; g < trainer->config.temperature_groups; ++g)
            d_temperatures[g] += step->whole.d_temperatures[g];
    }
    return status;
}

/* The update once every gradient is in: norm, clipping, AdamW with the rate of the schedule (or the
 * run's override when positive), the outputs; a progress unit. Cannot fail. */
static void update(step_t *step) {
    uform__train_work_t *work = &step->whole;
    uform_trainer_t trainer = step->trainer;
    uform_trainer_step_t *request = step->request;
    const uform__model_config_t *config = &trainer->config;
    double update_start = uform__seconds_now();
    double norm = uform__train_grad_norm(trainer, work->compute.nn, work->compute.parallel);
    uint64_t number = trainer->steps + 1;
    double override = step->exchange.learning_rate_override;
    double rate = override > 0 ? override : uform__train_learning_rate(&trainer->optimizer, number);
    uform__convert_rows(work->compute.nn, work->bag_embeddings, config->embedding, work->plan->bags, config->embedding,
                        &request->bag_embeddings, 0);
    uform__train_update(trainer, norm, number, rate, work->compute.nn, work->compute.parallel);
    trainer->steps = number;
    request->step = number, request->learning_rate = rate, request->grad_norm = norm;
    request->contrastive = work->contrastive, request->choice = work->choice;
    request->loss = trainer->optimizer.contrastive_weight * work->contrastive +
                    trainer->optimizer.choice_weight * work->choice;
    step->stats.optimizer_seconds = uform__seconds_now() - update_start;
    uform__progress_advance(&step->context->progress, ++work->done);
}

/* request->failed_content and failed_member: over a mesh, a content of this member's own that
 * failed names this member. */
static void report_failed(const step_t *step) {
    const uform__train_work_t *work = &step->whole;
    step->request->failed_content = work->failed_content;
    step->request->failed_member = work->failed_content != SIZE_MAX && work->failed_member == SIZE_MAX
                                       ? step->exchange.member
                                       : work->failed_member;
}

static uform_status_t step_run(void *pointer, uform__call_context_t *context) {
    step_t step;
    memset(&step, 0, sizeof step);
    step.request = pointer, step.context = context, step.trainer = step.request->trainer;
    step.stats.items = step.request->contents.count;
    uform__train_exchange_open(&step.exchange, step.trainer);

    uform_status_t status = prepare(&step);
    double forward_start = uform__seconds_now();
    status = forward_all(&step, status);
    double decoded = step.stats.decode_seconds;
    status = step.exchange.losses(&step.exchange, &step.whole, status);
    if (status == UFORM_OK) step.stats.forward_seconds = uform__seconds_now() - forward_start - decoded;
    double backward_start = uform__seconds_now();
    if (status == UFORM_OK) status = backward_all(&step);
    if (status == UFORM_OK) step.stats.backward_seconds = uform__seconds_now() - backward_start;
    /* The last chance to cancel: after this the step completes. */
    if (status == UFORM_OK && uform__progress_advance(&context->progress, step.whole.done) == UFORM_CANCEL)
        status = cancelled(context, "before the update");
    status = step.exchange.reduce(&step.exchange, &step.whole, status);
    if (status == UFORM_OK) update(&step);

    step.stats.exchange_wait_seconds = step.exchange.wait_seconds;
    step.stats.exchange_seconds = step.exchange.ran_seconds;
    if (step.request->stats) *step.request->stats = step.stats;
    report_failed(&step);
    step.exchange.end(&step.exchange);
    uform__train_chunks_free(&step.chunks);
    uform__train_batch_free(&step.plan);
    return status;
}

UFORM_API uform_status_t uform_trainer_step(uform_trainer_step_t *request) {
    const char *function = __func__;
    if (!request) return UFORM_INVALID_ARGUMENT;
    request->loss = request->contrastive = request->choice = 0;
    request->learning_rate = request->grad_norm = 0;
    request->step = 0;
    request->failed_content = request->failed_member = SIZE_MAX;
    memset(&request->temperatures, 0, sizeof request->temperatures);
    memset(&request->bag_embeddings, 0, sizeof request->bag_embeddings);
    if (!request->trainer) return uform__fail(&request->outcome, UFORM_INVALID_ARGUMENT, function, "trainer is NULL");
    /* Alone, a bad batch is refused before it is queued, as every verb refuses a bad request; over a
     * mesh it is checked inside the call only (prepare), so that a refused batch still meets the
     * other members' exchanges. One check, uform__train_batch_check, either way. */
    if (!request->trainer->mesh) {
        uform_status_t status = uform__train_batch_check(request->trainer, request, &request->outcome, function);
        if (status != UFORM_OK) return status;
    }
    uform__call_t call = {step_run, request, &request->outcome, request->completion, request->arena,
                          &request->progress, function};
    return uform__executor_call(request->trainer->executor, &call);
}
