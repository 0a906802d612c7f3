/*
 * The step verb (docs/training.md): decode → stems → blocks → heads → losses → backward → clip → AdamW.
 *
 * Nothing the trainer keeps changes before the update, and the update cannot fail: a bad batch,
 * an undecodable content, a cancel or a failed allocation leaves weights, moments and the step
 * count exactly as they were. The outputs (temperatures and bag embeddings, computed with the
 * weights the losses used) are placed in the arena before the update for the same reason.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "core/arena.h"
#include "core/outcome.h"
#include "model/heads.h"
#include "model/stems.h"
#include "train/mesh_step.h"
#include "train/work.h"

static double now_seconds(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + (double)time.tv_nsec * 1e-9;
}

static size_t aligned(size_t bytes) { return (bytes + 63) / 64 * 64; }

/* The pieces of a step's memory in carving order (sizes in bytes). */
typedef struct layout_t {
    size_t block, final, patches[4], projected, heads, embeddings, logits, temperatures, backward, bags, contrastive;
    size_t gemm;
} layout_t;

static layout_t layout_of(uform_trainer_t trainer, const uform__batch_plan_t *plan, size_t threads) {
    const uform__model_config_t *config = &trainer->config;
    size_t T = plan->tokens, d = config->hidden, F = config->mlp, H = config->heads, E = config->embedding;
    size_t S = plan->sequences, f = sizeof(float);
    layout_t layout;
    memset(&layout, 0, sizeof layout);
    /* Per block: x, a1, att, h, a2 [T, d]; qkv [T, 3d]; lse [H, T]; u, g [T, F]; four [T] statistics. */
    layout.block = 5 * aligned(T * d * f) + aligned(T * 3 * d * f) + aligned(H * T * f) + 2 * aligned(T * F * f) +
                   4 * aligned(T * f);
    layout.final = aligned(S * d * f) + aligned(H * S * f);
    size_t most_patches = 0;
    for (int m = 1; m < 4; ++m) {
        layout.patches[m] = aligned(plan->patch_rows[m] * uform__stem_patch_width(config, (uform_modality_t)m) * f);
        if (plan->patch_rows[m] > most_patches) most_patches = plan->patch_rows[m];
    }
    layout.projected = aligned(most_patches * d * f);
    layout.heads = 2 * aligned(S * d * f) + 2 * aligned(S * f);
    layout.embeddings = 2 * aligned(plan->embeddings * E * f);
    layout.logits = 2 * aligned(plan->choices * 256 * f);
    layout.temperatures = aligned(config->temperature_groups * f);
    size_t widest = 3 * d > F ? 3 * d : F;
    if (E > widest) widest = E;
    layout.backward = 4 * aligned(T * d * f) + aligned(T * 3 * d * f) + aligned(T * F * f) + aligned(H * T * f) +
                      aligned(T * widest * f); /* the rounded upstream gradients */
    layout.bags = aligned(plan->bags * E * f);
    layout.contrastive =
        aligned(uform__train_contrastive_doubles(plan->embeddings, plan->bags, E, config->temperature_groups) *
                sizeof(double));
    layout.gemm = aligned(uform__gemm_kernels(trainer->cpu_class)->scratch_bytes(threads));
    return layout;
}

static size_t layout_total(const layout_t *layout, size_t depth) {
    return depth * layout->block + layout->final + layout->patches[1] + layout->patches[2] + layout->patches[3] +
           layout->projected + layout->heads + layout->embeddings + layout->logits + layout->temperatures +
           layout->backward + layout->bags + layout->contrastive + layout->gemm + 64;
}

size_t uform__train_work_bytes(uform_trainer_t trainer, const uform__batch_plan_t *plan, size_t threads,
                               size_t *gemm_bytes) {
    layout_t layout = layout_of(trainer, plan, threads);
    *gemm_bytes = layout.gemm;
    return layout_total(&layout, trainer->config.depth);
}

void uform__train_work_begin(uform__train_work_t *work, uform_trainer_t trainer, const uform__batch_plan_t *plan,
                             const uform_trainer_step_t *request, uform__call_context_t *context) {
    memset(work, 0, sizeof *work);
    work->trainer = trainer, work->plan = plan, work->request = request, work->context = context;
    work->compute.gemm = uform__gemm_kernels(trainer->cpu_class);
    work->compute.nn = uform__nn_kernels(trainer->cpu_class);
    work->compute.signal = uform__signal_kernels(trainer->cpu_class);
    work->compute.parallel = context->parallel;
    work->compute.compute = trainer->compute;
    work->round_inputs = trainer->compute == UFORM_COMPUTE_BF16 && !uform__gemm_rounds_to_bf16(work->compute.gemm);
    work->whole = request;
    work->failed_content = work->failed_member = SIZE_MAX;
}

void uform__train_work_carve(uform__train_work_t *work, void *memory) {
    const uform__model_config_t *config = &work->trainer->config;
    const uform__batch_plan_t *plan = work->plan;
    size_t T = plan->tokens, d = config->hidden, F = config->mlp, H = config->heads, E = config->embedding;
    size_t S = plan->sequences, f = sizeof(float);
    unsigned char *cursor = (unsigned char *)(((uintptr_t)memory + 63) & ~(uintptr_t)63);
#define TAKE(pointer, bytes) (pointer) = (void *)cursor, cursor += aligned(bytes)
    for (size_t i = 0; i < config->depth; ++i) {
        uform__block_saved_t *saved = &work->blocks[i];
        TAKE(saved->x, T * d * f);
        TAKE(saved->a1, T * d * f);
        TAKE(saved->qkv, T * 3 * d * f);
        TAKE(saved->att, T * d * f);
        TAKE(saved->lse, H * T * f);
        TAKE(saved->h, T * d * f);
        TAKE(saved->a2, T * d * f);
        TAKE(saved->u, T * F * f);
        TAKE(saved->g, T * F * f);
        TAKE(saved->mean1, T * f);
        TAKE(saved->rstd1, T * f);
        TAKE(saved->mean2, T * f);
        TAKE(saved->rstd2, T * f);
    }
    TAKE(work->final, S * d * f);
    TAKE(work->lse_kept, H * S * f);
    for (int m = 1; m < 4; ++m)
        TAKE(work->patches[m], plan->patch_rows[m] * uform__stem_patch_width(config, (uform_modality_t)m) * f);
    size_t most_patches = 0;
    for (int m = 1; m < 4; ++m)
        if (plan->patch_rows[m] > most_patches) most_patches = plan->patch_rows[m];
    TAKE(work->projected, most_patches * d * f);
    TAKE(work->head_in, S * d * f);
    TAKE(work->head_normed, S * d * f);
    TAKE(work->head_mean, S * f);
    TAKE(work->head_rstd, S * f);
    TAKE(work->embeddings, plan->embeddings * E * f);
    TAKE(work->d_embeddings, plan->embeddings * E * f);
    TAKE(work->logits, plan->choices * 256 * f);
    TAKE(work->d_logits, plan->choices * 256 * f);
    TAKE(work->d_temperatures, config->temperature_groups * f);
    TAKE(work->dx, T * d * f);
    TAKE(work->dh, T * d * f);
    TAKE(work->dt, T * d * f);
    TAKE(work->datt, T * d * f);
    TAKE(work->dqkv, T * 3 * d * f);
    TAKE(work->dg, T * F * f);
    TAKE(work->deltas, H * T * f);
    size_t widest = 3 * d > F ? 3 * d : F;
    if (E > widest) widest = E;
    TAKE(work->dy_rounded, T * widest * f);
    TAKE(work->bag_embeddings, plan->bags * E * f);
    TAKE(work->contrastive_scratch,
         uform__train_contrastive_doubles(plan->embeddings, plan->bags, E, config->temperature_groups) * sizeof(double));
    work->compute.gemm_scratch = cursor;
#undef TAKE
}

/* Makes the trainer's kept memory hold `bytes` (it only grows). It is 2 MiB-aligned and advised
 * into transparent huge pages where the kernel offers them on request (the arena does the same):
 * the activations are walked column-wise by the products' transposing packs and the norm
 * backward, which on 4 KiB pages miss the TLB once per row. */
uform_status_t uform__train_step_memory(uform_trainer_t trainer, size_t bytes, uform__call_context_t *context) {
    if (trainer->memory.bytes >= bytes) return UFORM_OK;
    free(trainer->memory.base);
    const size_t huge = (size_t)2 << 20;
    size_t rounded = (bytes + huge - 1) / huge * huge;
    trainer->memory.base = aligned_alloc(huge, rounded);
#if defined(MADV_HUGEPAGE)
    if (trainer->memory.base) (void)madvise(trainer->memory.base, rounded, MADV_HUGEPAGE); /* advice only */
#endif
    trainer->memory.bytes = trainer->memory.base ? bytes : 0;
    if (!trainer->memory.base)
        return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function,
                           "cannot allocate %zu MiB for the step's activations", bytes >> 20);
    return UFORM_OK;
}

uform_status_t uform__train_cancelled(uform__call_context_t *context, const char *where) {
    return uform__fail(context->outcome, UFORM_CANCELLED, context->function,
                       "cancelled by the progress handler %s; the trainer is unchanged", where);
}

/* The outputs' views, in the arena, before anything changes. */
uform_status_t uform__train_output_views(uform_trainer_t trainer, uform_trainer_step_t *request, size_t bags,
                                         uform__call_context_t *context) {
    const uform__model_config_t *config = &trainer->config;
    uform_status_t status = uform__arena_matrix(context->arena, 1, config->temperature_groups, UFORM_SCALAR_F32,
                                                &request->temperatures, context->outcome, context->function);
    if (status != UFORM_OK) return status;
    memcpy(request->temperatures.data, trainer->view.temperatures, config->temperature_groups * sizeof(float));
    return uform__arena_matrix(context->arena, bags, config->embedding, request->outputs_scalar,
                               &request->bag_embeddings, context->outcome, context->function);
}

void uform__train_step_update(uform__train_work_t *work, uform_trainer_step_t *request, double override,
                              uform_trainer_stats_t *stats) {
    uform_trainer_t trainer = work->trainer;
    const uform__model_config_t *config = &trainer->config;
    double update_start = now_seconds();
    double norm = uform__train_grad_norm(trainer, work->compute.nn, work->compute.parallel);
    uint64_t step = trainer->steps + 1;
    double rate = override > 0 ? override : uform__train_learning_rate(&trainer->optimizer, step);
    uform__convert_rows(work->compute.nn, work->bag_embeddings, config->embedding, work->plan->bags, config->embedding,
                        &request->bag_embeddings, 0);
    uform__train_update(trainer, norm, step, rate, work->compute.nn, work->compute.parallel);
    trainer->steps = step;
    request->step = step, request->learning_rate = rate, request->grad_norm = norm;
    request->contrastive = work->contrastive, request->choice = work->choice;
    request->loss = trainer->optimizer.contrastive_weight * work->contrastive +
                    trainer->optimizer.choice_weight * work->choice;
    stats->optimizer_seconds = now_seconds() - update_start;
    uform__progress_advance(&work->context->progress, ++work->done);
}

void uform__train_report_failed(const uform__train_work_t *work, uform_trainer_step_t *request) {
    uform_mesh_t mesh = work->trainer->mesh;
    request->failed_content = work->failed_content;
    request->failed_member = work->failed_content != SIZE_MAX && mesh && work->failed_member == SIZE_MAX
                                 ? mesh->index : work->failed_member;
}

static uform_status_t step_run(void *pointer, uform__call_context_t *context) {
    uform_trainer_step_t *request = pointer;
    if (request->accumulate > 1 && request->contents.count > 1) return uform__train_step_chunked(request, context);
    uform_trainer_t trainer = request->trainer;
    const uform__model_config_t *config = &trainer->config;
    uform_trainer_stats_t stats;
    memset(&stats, 0, sizeof stats);
    stats.items = request->contents.count;

    uform__batch_plan_t plan;
    memset(&plan, 0, sizeof plan);
    /* Over a mesh the batch is checked here, so a refused batch still meets the other members. */
    uform_status_t status = trainer->mesh ? uform__train_batch_check(trainer, request, context->outcome, context->function)
                                          : UFORM_OK;
    if (status == UFORM_OK) status = uform__train_batch_plan(trainer, request, &plan, context->outcome, context->function);
    if (status != UFORM_OK && !trainer->mesh) return status;
    stats.sequences = plan.sequences, stats.tokens = plan.tokens;

    uform__train_work_t work;
    uform__train_work_begin(&work, trainer, &plan, request, context);
    size_t threads = uform__parallel_threads(context->parallel);
    layout_t layout = layout_of(trainer, &plan, threads);
    uform__block_saved_t *blocks = calloc(config->depth, sizeof *blocks);
    uform__train_mesh_step_t mesh_step;
    memset(&mesh_step, 0, sizeof mesh_step);
    if (status == UFORM_OK && !blocks) status = uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function, "cannot allocate %zu block records", config->depth);
    if (status == UFORM_OK) status = uform__train_step_memory(trainer, layout_total(&layout, config->depth), context);
    if (status == UFORM_OK) status = uform__train_output_views(trainer, request, plan.bags, context);
    if (status == UFORM_OK) {
        work.blocks = blocks;
        uform__train_work_carve(&work, trainer->memory.base);
        work.compute.gemm_scratch_bytes = layout.gemm;
        uform__progress_begin(&context->progress, &request->progress, 2 + 2 * config->depth);
        double decode_start = now_seconds();
        status = uform__train_stems_decode(&work);
        stats.decode_seconds = now_seconds() - decode_start;
    }
    if (status == UFORM_OK && uform__progress_advance(&context->progress, ++work.done) == UFORM_CANCEL)
        status = uform__train_cancelled(context, "after decoding");
    if (trainer->mesh) status = uform__train_mesh_begin(&mesh_step, &work, status);
    if (trainer->mesh && mesh_step.overlap) work.block_done = uform__train_mesh_block_done, work.block_done_state = &mesh_step;
    /* Forward. */
    double forward_start = now_seconds();
    if (status == UFORM_OK) status = uform__train_stems_forward(&work, work.blocks[0].x);
    if (status == UFORM_OK) status = uform__train_blocks_forward(&work);
    if (status == UFORM_OK) status = uform__train_heads_forward(&work);
    if (trainer->mesh) {
        status = uform__train_mesh_losses(&mesh_step, &work, status);
    } else if (status == UFORM_OK) {
        memset(work.d_temperatures, 0, config->temperature_groups * sizeof(float));
        work.contrastive = uform__train_contrastive(&work, trainer->optimizer.contrastive_weight);
        work.choice = uform__train_choice_loss(&work, trainer->optimizer.choice_weight);
    }
    if (status == UFORM_OK) stats.forward_seconds = now_seconds() - forward_start;
    /* Backward into zeroed gradients. */
    double backward_start = now_seconds();
    if (status == UFORM_OK) {
        memset(trainer->grads, 0, trainer->total * sizeof(float));
        status = uform__train_heads_backward(&work);
    }
    if (status == UFORM_OK) status = uform__train_blocks_backward(&work);
    if (status == UFORM_OK) status = uform__train_stems_backward(&work, work.dx);
    if (status == UFORM_OK) {
        float *d_temperatures = (float *)trainer->grad_view.temperatures;
        for (size_t g = 0; g < config->temperature_groups; ++g) d_temperatures[g] += work.d_temperatures[g];
        stats.backward_seconds = now_seconds() - backward_start;
    }
    /* The last chance to cancel: after this the step completes. */
    if (status == UFORM_OK && uform__progress_advance(&context->progress, work.done) == UFORM_CANCEL)
        status = uform__train_cancelled(context, "before the update");
    if (trainer->mesh) status = uform__train_mesh_reduce(&mesh_step, &work, status);
    if (status == UFORM_OK)
        uform__train_step_update(&work, request, trainer->mesh ? mesh_step.learning_rate_override
                                                                : request->learning_rate_override, &stats);
    stats.flops = work.compute.flops;
    stats.exchange_wait_seconds = mesh_step.exchange_wait, stats.exchange_seconds = mesh_step.exchange_ran;
    stats.chunks = 1;
    if (request->stats) *request->stats = stats;
    uform__train_report_failed(&work, request);
    if (trainer->mesh) uform__train_mesh_end(&mesh_step);
    free(blocks);
    uform__train_batch_free(&plan);
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
    /* A mesh step checks its batch inside the call, so that a refused batch still meets the others. */
    if (!request->trainer->mesh) {
        uform_status_t status = uform__train_batch_check(request->trainer, request, &request->outcome, function);
        if (status != UFORM_OK) return status;
    }
    uform__call_t call = {step_run, request, &request->outcome, request->completion, request->arena,
                          &request->progress, function};
    return uform__executor_call(request->trainer->executor, &call);
}
