/*
 * A step's batch in chunks (uform.h, uform_trainer_step_t.accumulate): the chunks' plans, their
 * works and the rows they share with the whole batch. step.c runs every step over chunks; the batch
 * at once is one chunk.
 *
 * The contrastive loss needs every candidate of the batch, so the chunks cannot each run their own
 * loss; instead (the gradient cache of Gao et al., "Scaling Deep Contrastive Learning Batch Size
 * under Memory Limited Setup", 2021):
 *
 *   1. every chunk's forward, keeping only its embeddings and choice logits (its activations are
 *      overwritten by the next chunk's);
 *   2. the losses over the whole batch — over a mesh, the global batch's — and their gradients with
 *      respect to every embedding and logit;
 *   3. every chunk's forward again, now keeping its activations, and its backward from those
 *      gradients, every chunk adding into the parameters' gradients;
 *   4. the exchange of the gradients (over a mesh: with overlap during the last chunk's backward)
 *      and the update.
 *
 * A sequence's forward does not depend on the other sequences of its batch (attention stays within
 * a sequence, every other pass works row by row), so steps 1 and 3 compute the same embeddings, bit
 * for bit, as the whole batch's forward; only the parameters' gradients are summed in another order
 * (chunk by chunk), which is float rounding. Media are decoded in both forwards.
 *
 * A chunk of several is a contiguous range of contents, run as a batch of its own (its own plan,
 * bags of one content each and no relations, for the forward and backward only); the rows of its
 * embeddings and logits are mapped to the whole batch's by content. One chunk is the batch itself:
 * its work is the batch's, its rows are the batch's rows, and its activations are still in memory
 * for the backward, so it runs its forward once.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "train/work.h"

struct uform__train_chunk_t {
    size_t first, count;             /* contents [first, first + count) */
    size_t *bags;                    /* [in_bags + 1]: one content a bag */
    uform_trainer_step_t request;    /* the chunk as a batch of its own (the plan borrows from it) */
    uform__batch_plan_t plan;
};

size_t uform__train_chunk_count(const uform_trainer_step_t *request) {
    size_t n = request->contents.count;
    return request->accumulate > 1 && n > 1 ? (request->accumulate < n ? request->accumulate : n) : 1;
}

/* K chunks of the contents, their counts differing by at most one, each planned as a batch. */
static uform_status_t plan_chunks(uform__train_chunks_t *chunks, const uform__train_work_t *whole) {
    const uform_trainer_step_t *request = whole->request;
    uform__call_context_t *context = whole->context;
    size_t n = request->contents.count, K = chunks->count;
    size_t in_bags = whole->plan->embeddings; /* the contents in bags are the first ones (batch.c) */
    chunks->chunk = calloc(K, sizeof *chunks->chunk);
    if (!chunks->chunk) return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function, "cannot plan %zu chunks", K);
    for (size_t k = 0; k < K; ++k) {
        uform__train_chunk_t *chunk = &chunks->chunk[k];
        chunk->first = n * k / K, chunk->count = n * (k + 1) / K - chunk->first;
        size_t bagged = chunk->first >= in_bags ? 0 : (in_bags - chunk->first < chunk->count ? in_bags - chunk->first : chunk->count);
        chunk->bags = malloc((bagged + 1) * sizeof *chunk->bags);
        if (!chunk->bags)
            return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function, "cannot plan chunk %zu", k);
        for (size_t j = 0; j <= bagged; ++j) chunk->bags[j] = j;
        uform_trainer_step_t *part = &chunk->request;
        memset(part, 0, sizeof *part);
        part->trainer = whole->trainer, part->arena = request->arena;
        part->modalities = request->modalities + chunk->first;
        part->contents = (uform_tape_t){request->contents.data, request->contents.offsets + chunk->first, chunk->count};
        part->bags = chunk->bags, part->bag_count = bagged;
        if (request->choices.count) {
            part->choices = (uform_tape_t){request->choices.data, request->choices.offsets + chunk->first, chunk->count};
            part->choice_targets = request->choice_targets + chunk->first;
        }
        uform_status_t status = uform__train_batch_plan(whole->trainer, part, &chunk->plan, context->outcome, context->function);
        if (status != UFORM_OK) return status;
    }
    return UFORM_OK;
}

/* Which row of the whole batch's embeddings and logits each content has. */
static uform_status_t map_rows(uform__train_chunks_t *chunks, const uform__train_work_t *whole) {
    size_t n = whole->request->contents.count;
    chunks->embedding_of = malloc(n * sizeof *chunks->embedding_of);
    chunks->choice_of = malloc(n * sizeof *chunks->choice_of);
    if (!chunks->embedding_of || !chunks->choice_of)
        return uform__fail(whole->context->outcome, UFORM_OUT_OF_MEMORY, whole->context->function,
                           "cannot map %zu contents", n);
    for (size_t i = 0; i < n; ++i) chunks->embedding_of[i] = chunks->choice_of[i] = SIZE_MAX;
    const uform__batch_plan_t *plan = whole->plan;
    for (size_t s = 0; s < plan->sequences; ++s) {
        const uform__sequence_t *sequence = &plan->sequence[s];
        if (sequence->choose) chunks->choice_of[sequence->content] = s - plan->embeddings;
        else chunks->embedding_of[sequence->content] = s;
    }
    return UFORM_OK;
}

/* The whole batch's losses' pieces in memory of their own (the chunks' works share the step memory). */
static uform_status_t loss_memory(uform__train_chunks_t *chunks, uform__train_work_t *whole) {
    size_t bytes = uform__train_work_bytes(whole, UFORM__TRAIN_PIECES_LOSSES);
    chunks->loss_memory = malloc(bytes);
    if (!chunks->loss_memory)
        return uform__fail(whole->context->outcome, UFORM_OUT_OF_MEMORY, whole->context->function,
                           "cannot allocate %zu MiB for the batch's embeddings and losses", bytes >> 20);
    uform__train_work_carve(whole, UFORM__TRAIN_PIECES_LOSSES, chunks->loss_memory);
    return UFORM_OK;
}

uform_status_t uform__train_chunks_plan(uform__train_chunks_t *chunks, uform__train_work_t *whole, size_t count,
                                        size_t *bytes) {
    memset(chunks, 0, sizeof *chunks);
    chunks->count = count;
    size_t depth = whole->trainer->config.depth;
    uform_status_t status = UFORM_OK;
    if (count > 1) {
        status = loss_memory(chunks, whole);
        if (status == UFORM_OK) status = map_rows(chunks, whole);
        if (status == UFORM_OK) status = plan_chunks(chunks, whole);
    }
    if (status == UFORM_OK) {
        chunks->blocks = calloc(depth, sizeof *chunks->blocks);
        if (!chunks->blocks)
            status = uform__fail(whole->context->outcome, UFORM_OUT_OF_MEMORY, whole->context->function,
                                 "cannot allocate %zu block records", depth);
    }
    if (status != UFORM_OK) return status;
    *bytes = 0;
    for (size_t k = 0; k < count; ++k) {
        uform__train_work_t *work = uform__train_chunk_work(chunks, whole, k, NULL);
        size_t chunk_bytes = uform__train_work_bytes(work, UFORM__TRAIN_PIECES_ALL);
        if (chunk_bytes > *bytes) *bytes = chunk_bytes;
    }
    return UFORM_OK;
}

uform__train_work_t *uform__train_chunk_work(uform__train_chunks_t *chunks, uform__train_work_t *whole, size_t k,
                                             void *memory) {
    uform__train_work_t *work = whole;
    if (chunks->count > 1) {
        const uform__train_chunk_t *chunk = &chunks->chunk[k];
        work = &chunks->work;
        uform__train_work_begin(work, whole->trainer, &chunk->plan, &chunk->request, whole->context);
        work->done = whole->done;
        work->content_base = chunk->first; /* a failing content is named by the request's index */
        work->whole = whole->request;      /* and prepared inputs are found by it */
    }
    work->blocks = chunks->blocks;
    if (memory) uform__train_work_carve(work, UFORM__TRAIN_PIECES_ALL, memory);
    return work;
}

/* The whole batch's row of chunk sequence s (an embedding or a choice). */
static size_t row_of(const uform__train_chunks_t *chunks, size_t k, size_t s) {
    const uform__sequence_t *sequence = &chunks->chunk[k].plan.sequence[s];
    size_t content = chunks->chunk[k].first + sequence->content;
    return sequence->choose ? chunks->choice_of[content] : chunks->embedding_of[content];
}

/* Copies chunk k's rows of embeddings [N_k, E] and logits [C_k, 256] to the whole batch's rows
 * (`to_whole`), or the whole batch's back into the chunk's. */
static void copy_rows(const uform__train_chunks_t *chunks, size_t k, size_t E, float *chunk_embeddings,
                      float *chunk_logits, float *whole_embeddings, float *whole_logits, int to_whole) {
    const uform__batch_plan_t *plan = &chunks->chunk[k].plan;
    for (size_t s = 0; s < plan->sequences; ++s) {
        size_t row = row_of(chunks, k, s), width = s < plan->embeddings ? E : 256;
        float *mine = s < plan->embeddings ? chunk_embeddings + s * E : chunk_logits + (s - plan->embeddings) * 256;
        float *theirs = s < plan->embeddings ? whole_embeddings + row * E : whole_logits + row * 256;
        memcpy(to_whole ? theirs : mine, to_whole ? mine : theirs, width * sizeof(float));
    }
}

void uform__train_chunk_gather(const uform__train_chunks_t *chunks, size_t k, const uform__train_work_t *work,
                               uform__train_work_t *whole) {
    if (work == whole) return;
    copy_rows(chunks, k, whole->trainer->config.embedding, work->embeddings, work->logits, whole->embeddings,
              whole->logits, 1);
}

void uform__train_chunk_scatter(const uform__train_chunks_t *chunks, size_t k, const uform__train_work_t *whole,
                                uform__train_work_t *work) {
    if (work == whole) return;
    copy_rows(chunks, k, whole->trainer->config.embedding, work->d_embeddings, work->d_logits, whole->d_embeddings,
              whole->d_logits, 0);
}

void uform__train_chunks_free(uform__train_chunks_t *chunks) {
    for (size_t k = 0; chunks->chunk && k < chunks->count; ++k) {
        uform__train_batch_free(&chunks->chunk[k].plan);
        free(chunks->chunk[k].bags);
    }
    free(chunks->chunk), free(chunks->embedding_of), free(chunks->choice_of), free(chunks->blocks);
    free(chunks->loss_memory);
    memset(chunks, 0, sizeof *chunks);
}
