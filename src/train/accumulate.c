/*
 * A step whose batch runs in chunks (uform.h, uform_trainer_step_t.accumulate): the same step as the
 * whole batch at once, with the activations' memory of one chunk. The contrastive loss needs every
 * candidate of the batch, so the chunks cannot each run their own loss; instead (the gradient cache
 * of Gao et al., "Scaling Deep Contrastive Learning Batch Size under Memory Limited Setup", 2021):
 *
 *   1. every chunk's forward, keeping only its embeddings and choice logits (its activations are
 *      overwritten by the next chunk's);
 *   2. the losses over the whole batch — over a mesh, the global batch's, exchanged as in a step at
 *      once — and their gradients with respect to every embedding and logit;
 *   3. every chunk's forward again, now keeping its activations, and its backward from those
 *      gradients, every chunk adding into the parameters' gradients;
 *   4. the exchange of the gradients (over a mesh: with overlap during the last chunk's backward)
 *      and the update, as in a step at once.
 *
 * A sequence's forward does not depend on the other sequences of its batch (attention stays within
 * a sequence, every other pass works row by row), so steps 1 and 3 compute the same embeddings, bit
 * for bit, as the whole batch's forward; only the parameters' gradients are summed in another order
 * (chunk by chunk), which is float rounding. Media are decoded in both forwards.
 *
 * A chunk is a contiguous range of contents, run as a batch of its own (its own plan, bags of one
 * content each and no relations, for the forward and backward only); the rows of its embeddings and
 * logits are mapped to the whole batch's by content.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/outcome.h"
#include "train/mesh_step.h"
#include "train/work.h"

static double now_seconds(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + (double)time.tv_nsec * 1e-9;
}

typedef struct chunk_t {
    size_t first, count;             /* contents [first, first + count) */
    size_t *bags;                    /* [in_bags + 1]: one content a bag */
    uform_trainer_step_t request;    /* the chunk as a batch of its own (the plan borrows from it) */
    uform__batch_plan_t plan;
} chunk_t;

typedef struct chunked_t {
    uform_trainer_step_t *request;
    uform__call_context_t *context;
    uform_trainer_t trainer;
    uform__batch_plan_t plan;        /* the whole batch's */
    uform__train_work_t work;        /* the whole batch's losses (no activations) */
    void *loss_memory;
    size_t *embedding_of, *choice_of; /* [n]: a content's embedding row and choice row, or SIZE_MAX */
    chunk_t *chunks;
    size_t chunk_count;
    uform__block_saved_t *blocks;    /* [depth], shared by the chunks' works */
    size_t gemm_bytes;
    uform_trainer_stats_t stats;
} chunked_t;

static size_t aligned(size_t bytes) { return (bytes + 63) / 64 * 64; }

/* The whole batch's loss arrays, in one allocation. */
static uform_status_t loss_arrays(chunked_t *run) {
    const uform__model_config_t *config = &run->trainer->config;
    const uform__batch_plan_t *plan = &run->plan;
    size_t E = config->embedding, f = sizeof(float);
    size_t sizes[7] = {plan->embeddings * E * f, plan->embeddings * E * f, plan->choices * 256 * f,
                       plan->choices * 256 * f, config->temperature_groups * f, plan->bags * E * f,
                       uform__train_contrastive_doubles(plan->embeddings, plan->bags, E, config->temperature_groups) *
                           sizeof(double)};
    size_t total = 64;
    for (int i = 0; i < 7; ++i) total += aligned(sizes[i]);
    run->loss_memory = malloc(total);
    if (!run->loss_memory)
        return uform__fail(run->context->outcome, UFORM_OUT_OF_MEMORY, run->context->function,
                           "cannot allocate %zu MiB for the batch's embeddings and losses", total >> 20);
    unsigned char *cursor = (unsigned char *)(((uintptr_t)run->loss_memory + 63) & ~(uintptr_t)63);
    void **pieces[7] = {(void **)&run->work.embeddings,     (void **)&run->work.d_embeddings,
                        (void **)&run->work.logits,         (void **)&run->work.d_logits,
                        (void **)&run->work.d_temperatures, (void **)&run->work.bag_embeddings,
                        (void **)&run->work.contrastive_scratch};
    for (int i = 0; i < 7; ++i) *pieces[i] = cursor, cursor += aligned(sizes[i]);
    return UFORM_OK;
}

/* K chunks of the contents, their counts differing by at most one, each planned as a batch. */
static uform_status_t plan_chunks(chunked_t *run, size_t K) {
    const uform_trainer_step_t *request = run->request;
    uform__call_context_t *context = run->context;
    size_t n = request->contents.count;
    size_t in_bags = run->plan.embeddings; /* the contents in bags are the first ones (batch.c) */
    run->chunks = calloc(K, sizeof *run->chunks);
    if (!run->chunks) return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function, "cannot plan %zu chunks", K);
    run->chunk_count = K;
    for (size_t k = 0; k < K; ++k) {
        chunk_t *chunk = &run->chunks[k];
        chunk->first = n * k / K, chunk->count = n * (k + 1) / K - chunk->first;
        size_t bagged = chunk->first >= in_bags ? 0 : (in_bags - chunk->first < chunk->count ? in_bags - chunk->first : chunk->count);
        chunk->bags = malloc((bagged + 1) * sizeof *chunk->bags);
        if (!chunk->bags)
            return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function, "cannot plan chunk %zu", k);
        for (size_t j = 0; j <= bagged; ++j) chunk->bags[j] = j;
        uform_trainer_step_t *part = &chunk->request;
        memset(part, 0, sizeof *part);
        part->trainer = run->trainer, part->arena = request->arena;
        part->modalities = request->modalities + chunk->first;
        part->contents = (uform_tape_t){request->contents.data, request->contents.offsets + chunk->first, chunk->count};
        part->bags = chunk->bags, part->bag_count = bagged;
        if (request->choices.count) {
            part->choices = (uform_tape_t){request->choices.data, request->choices.offsets + chunk->first, chunk->count};
            part->choice_targets = request->choice_targets + chunk->first;
        }
        uform_status_t status = uform__train_batch_plan(run->trainer, part, &chunk->plan, context->outcome, context->function);
        if (status != UFORM_OK) return status;
    }
    return UFORM_OK;
}

/* Which row of the whole batch's embeddings and logits each content has. */
static uform_status_t map_rows(chunked_t *run) {
    size_t n = run->request->contents.count;
    run->embedding_of = malloc(n * sizeof *run->embedding_of);
    run->choice_of = malloc(n * sizeof *run->choice_of);
    if (!run->embedding_of || !run->choice_of)
        return uform__fail(run->context->outcome, UFORM_OUT_OF_MEMORY, run->context->function, "cannot map %zu contents", n);
    for (size_t i = 0; i < n; ++i) run->embedding_of[i] = run->choice_of[i] = SIZE_MAX;
    const uform__batch_plan_t *plan = &run->plan;
    for (size_t s = 0; s < plan->sequences; ++s) {
        const uform__sequence_t *sequence = &plan->sequence[s];
        if (sequence->choose) run->choice_of[sequence->content] = s - plan->embeddings;
        else run->embedding_of[sequence->content] = s;
    }
    return UFORM_OK;
}

/* The whole batch's row of chunk sequence s (an embedding or a choice). */
static size_t row_of(const chunked_t *run, const chunk_t *chunk, size_t s) {
    const uform__sequence_t *sequence = &chunk->plan.sequence[s];
    size_t content = chunk->first + sequence->content;
    return sequence->choose ? run->choice_of[content] : run->embedding_of[content];
}

/* Chunk k's work over the step memory, its progress counter continuing the run's. */
static void chunk_work(chunked_t *run, size_t k, uform__train_work_t *work) {
    uform__train_work_begin(work, run->trainer, &run->chunks[k].plan, &run->chunks[k].request, run->context);
    work->blocks = run->blocks;
    uform__train_work_carve(work, run->trainer->memory.base);
    work->compute.gemm_scratch_bytes = run->gemm_bytes;
    work->done = run->work.done;
    work->content_base = run->chunks[k].first; /* a failing content is named by the request's index */
    work->whole = run->request;                /* and prepared inputs are found by it */
}

/* Decoding, the stems, the blocks and the heads of chunk k. */
static uform_status_t chunk_forward(chunked_t *run, uform__train_work_t *work) {
    double start = now_seconds();
    uform_status_t status = uform__train_stems_decode(work);
    run->stats.decode_seconds += now_seconds() - start;
    if (status == UFORM_OK && uform__progress_advance(&run->context->progress, ++work->done) == UFORM_CANCEL)
        status = uform__train_cancelled(run->context, "after decoding a chunk");
    if (status == UFORM_OK) status = uform__train_stems_forward(work, work->blocks[0].x);
    if (status == UFORM_OK) status = uform__train_blocks_forward(work);
    if (status == UFORM_OK) status = uform__train_heads_forward(work);
    return status;
}

/* Step 1: every chunk's embeddings and logits into the whole batch's. */
static uform_status_t embed_all(chunked_t *run) {
    size_t E = run->trainer->config.embedding;
    uform_status_t status = UFORM_OK;
    for (size_t k = 0; k < run->chunk_count && status == UFORM_OK; ++k) {
        uform__train_work_t work;
        chunk_work(run, k, &work);
        status = chunk_forward(run, &work);
        run->work.done = work.done, run->stats.flops += work.compute.flops;
        if (status != UFORM_OK) {
            run->work.failed_content = work.failed_content;
            break;
        }
        const uform__batch_plan_t *plan = &run->chunks[k].plan;
        for (size_t s = 0; s < plan->sequences; ++s) {
            size_t row = row_of(run, &run->chunks[k], s);
            if (s < plan->embeddings) memcpy(run->work.embeddings + row * E, work.embeddings + s * E, E * sizeof(float));
            else memcpy(run->work.logits + row * 256, work.logits + (s - plan->embeddings) * 256, 256 * sizeof(float));
        }
    }
    return status;
}

/* Step 3: every chunk again, and its backward from the whole batch's gradients. */
static uform_status_t backward_all(chunked_t *run, uform__train_mesh_step_t *mesh_step) {
    size_t E = run->trainer->config.embedding;
    uform_status_t status = UFORM_OK;
    memset(run->trainer->grads, 0, run->trainer->total * sizeof(float));
    for (size_t k = 0; k < run->chunk_count && status == UFORM_OK; ++k) {
        uform__train_work_t work;
        chunk_work(run, k, &work);
        status = chunk_forward(run, &work);
        const uform__batch_plan_t *plan = &run->chunks[k].plan;
        for (size_t s = 0; status == UFORM_OK && s < plan->sequences; ++s) {
            size_t row = row_of(run, &run->chunks[k], s);
            if (s < plan->embeddings) memcpy(work.d_embeddings + s * E, run->work.d_embeddings + row * E, E * sizeof(float));
            else memcpy(work.d_logits + (s - plan->embeddings) * 256, run->work.d_logits + row * 256, 256 * sizeof(float));
        }
        /* Only the last chunk's backward finishes a block's gradients: its buckets may go then. */
        if (mesh_step && mesh_step->overlap && k + 1 == run->chunk_count)
            work.block_done = uform__train_mesh_block_done, work.block_done_state = mesh_step;
        if (status == UFORM_OK) status = uform__train_heads_backward(&work);
        if (status == UFORM_OK) status = uform__train_blocks_backward(&work);
        if (status == UFORM_OK) status = uform__train_stems_backward(&work, work.dx);
        run->work.done = work.done, run->stats.flops += work.compute.flops;
        if (work.failed_content != SIZE_MAX) run->work.failed_content = work.failed_content;
    }
    if (status == UFORM_OK) {
        float *d_temperatures = (float *)run->trainer->grad_view.temperatures;
        for (size_t g = 0; g < run->trainer->config.temperature_groups; ++g) d_temperatures[g] += run->work.d_temperatures[g];
    }
    return status;
}

static void chunked_free(chunked_t *run) {
    for (size_t k = 0; run->chunks && k < run->chunk_count; ++k) {
        uform__train_batch_free(&run->chunks[k].plan);
        free(run->chunks[k].bags);
    }
    free(run->chunks), free(run->embedding_of), free(run->choice_of), free(run->blocks), free(run->loss_memory);
    uform__train_batch_free(&run->plan);
}

uform_status_t uform__train_step_chunked(uform_trainer_step_t *request, uform__call_context_t *context) {
    chunked_t run;
    memset(&run, 0, sizeof run);
    run.request = request, run.context = context, run.trainer = request->trainer;
    uform_trainer_t trainer = run.trainer;
    const uform__model_config_t *config = &trainer->config;
    run.stats.items = request->contents.count;
    /* Over a mesh the batch is checked here, so a refused batch still meets the other members. */
    uform_status_t status = trainer->mesh ? uform__train_batch_check(trainer, request, context->outcome, context->function)
                                          : UFORM_OK;
    if (status == UFORM_OK) status = uform__train_batch_plan(trainer, request, &run.plan, context->outcome, context->function);
    if (status != UFORM_OK && !trainer->mesh) return status;
    run.stats.sequences = run.plan.sequences, run.stats.tokens = run.plan.tokens;
    uform__train_work_begin(&run.work, trainer, &run.plan, request, context);
    size_t K = request->accumulate < request->contents.count ? request->accumulate : request->contents.count;
    run.stats.chunks = K;
    if (status == UFORM_OK) status = loss_arrays(&run);
    if (status == UFORM_OK) status = map_rows(&run);
    if (status == UFORM_OK) status = plan_chunks(&run, K);
    if (status == UFORM_OK) {
        run.blocks = calloc(config->depth, sizeof *run.blocks);
        if (!run.blocks)
            status = uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function, "cannot allocate %zu block records",
                                 config->depth);
    }
    if (status == UFORM_OK) {
        size_t threads = uform__parallel_threads(context->parallel), most = 0;
        for (size_t k = 0; k < K; ++k) {
            size_t bytes = uform__train_work_bytes(trainer, &run.chunks[k].plan, threads, &run.gemm_bytes);
            if (bytes > most) most = bytes;
        }
        status = uform__train_step_memory(trainer, most, context);
    }
    if (status == UFORM_OK) status = uform__train_output_views(trainer, request, run.plan.bags, context);
    /* Progress: each chunk's decoding and blocks forward, then again with the blocks backward, then
     * the update. */
    if (status == UFORM_OK) uform__progress_begin(&context->progress, &request->progress, K * (2 + 3 * config->depth) + 1);
    double forward_start = now_seconds();
    if (status == UFORM_OK) status = embed_all(&run);
    uform__train_mesh_step_t mesh_step;
    memset(&mesh_step, 0, sizeof mesh_step);
    if (trainer->mesh) status = uform__train_mesh_begin(&mesh_step, &run.work, status);
    if (trainer->mesh) {
        status = uform__train_mesh_losses(&mesh_step, &run.work, status);
    } else if (status == UFORM_OK) {
        memset(run.work.d_temperatures, 0, config->temperature_groups * sizeof(float));
        run.work.contrastive = uform__train_contrastive(&run.work, trainer->optimizer.contrastive_weight);
        run.work.choice = uform__train_choice_loss(&run.work, trainer->optimizer.choice_weight);
    }
    if (status == UFORM_OK) run.stats.forward_seconds = now_seconds() - forward_start;
    double backward_start = now_seconds();
    if (status == UFORM_OK) status = backward_all(&run, trainer->mesh ? &mesh_step : NULL);
    if (status == UFORM_OK) run.stats.backward_seconds = now_seconds() - backward_start;
    if (status == UFORM_OK && uform__progress_advance(&context->progress, run.work.done) == UFORM_CANCEL)
        status = uform__train_cancelled(context, "before the update");
    if (trainer->mesh) status = uform__train_mesh_reduce(&mesh_step, &run.work, status);
    if (status == UFORM_OK)
        uform__train_step_update(&run.work, request,
                                 trainer->mesh ? mesh_step.learning_rate_override : request->learning_rate_override,
                                 &run.stats);
    run.stats.exchange_wait_seconds = mesh_step.exchange_wait, run.stats.exchange_seconds = mesh_step.exchange_ran;
    if (request->stats) *request->stats = run.stats;
    uform__train_report_failed(&run.work, request);
    if (trainer->mesh) uform__train_mesh_end(&mesh_step);
    chunked_free(&run);
    return status;
}
