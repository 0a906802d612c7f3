/*
 * The encode pipeline behind every verb (see encode.h): validation, output views, chunking,
 * stems → trunk → heads per chunk, progress, cancellation and stats.
 */
#include "model/encode.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/arena.h"
#include "core/clock.h"
#include "core/outcome.h"
#include "core/tape.h"
#include "model/heads.h"
#include "model/stems.h"

/* A chunk holds at least this many tokens (or one item, when an item is longer): large enough for
 * the products to reach their speed, small enough that its scratch stays far below the weights. */
#define UFORM__CHUNK_TOKENS 4096

/* The end of the chunk that starts at item `first`: as many consecutive items as fit in
 * `chunk_tokens` tokens (at least one). With `even` > 1 (I8 compute's threads), a chunk of more than
 * 2·even items keeps a multiple of `even` of them, so that its blocks can run a whole item per
 * thread with none left over (trunk_i8.c); the items' outputs do not depend on their chunk. */
static size_t chunk_end(const size_t *offsets, size_t count, size_t first, size_t chunk_tokens, size_t even) {
    size_t last = first + 1;
    while (last < count && offsets[last + 1] - offsets[first] <= chunk_tokens) ++last;
    if (even > 1 && last < count && last - first > 2 * even) last -= (last - first) % even;
    return last;
}

uform_status_t uform__encode_validate(const uform__encode_job_t *job, uform_outcome_t *outcome, const char *function) {
    if (!job->model) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "model is NULL");
    const uform__model_config_t *config = &job->model->config;
    if (!job->model->stems[job->modality].present) {
        char present[64] = "";
        for (int m = 0; m < 4; ++m)
            if (config->modalities & (1u << m)) {
                if (present[0]) strcat(present, ", ");
                strcat(present, uform__modality_name((uform_modality_t)m));
            }
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "the model has no %s stem (it has: %s)",
                           uform__modality_name(job->modality), present);
    }
    uform_status_t status = uform__tape_check(job->inputs, job->inputs_name, outcome, function);
    if (status != UFORM_OK) return status;
    const uform_encode_config_t *options = job->config;
    if (job->source != UFORM__SOURCE_CHOOSE) {
        if (job->outputs & ~(UFORM_OUTPUTS_EMBEDDINGS | UFORM_OUTPUTS_TOKEN_VECTORS | UFORM_OUTPUTS_STATES))
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "outputs 0x%x has unknown flags (known: 0x7)",
                               (unsigned)job->outputs);
        if ((unsigned)options->outputs_scalar > UFORM_SCALAR_B1)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "outputs_scalar %d is not a uform_scalar_kind_t",
                               (int)options->outputs_scalar);
        if (options->dimensions > config->embedding)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "dimensions %zu exceeds the model's embedding width %zu", options->dimensions,
                               config->embedding);
    }
    size_t count = job->inputs->count;
    if (job->source == UFORM__SOURCE_IMAGE_PIXELS || job->source == UFORM__SOURCE_VIDEO_FRAMES) {
        if (count && (!job->heights || !job->widths))
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s is NULL", !job->heights ? "heights" : "widths");
        size_t frames = job->source == UFORM__SOURCE_VIDEO_FRAMES ? config->video_frames : 1;
        for (size_t i = 0; i < count; ++i) {
            size_t bytes = job->inputs->offsets[i + 1] - job->inputs->offsets[i];
            size_t height = job->heights[i], width = job->widths[i];
            if (!height || !width || height > (1u << 16) || width > (1u << 16) || frames * height * width * 3 != bytes)
                return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                                   "pixels[%zu] holds %zu bytes, but heights[%zu] x widths[%zu] x 3 = %zu x %zu x 3"
                                   " (each side 1..65536)",
                                   i, bytes, i, i, height, width);
        }
    }
    if (job->source == UFORM__SOURCE_AUDIO_SAMPLES) {
        if (job->sample_rate == 0 || job->sample_rate > 768000)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "sample_rate %zu is not in 1..768000 Hz",
                               job->sample_rate);
        for (size_t i = 0; i < count; ++i) {
            size_t bytes = job->inputs->offsets[i + 1] - job->inputs->offsets[i];
            if (bytes % sizeof(float))
                return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                                   "samples[%zu] holds %zu bytes, not a whole number of float32 samples", i, bytes);
            if (bytes / sizeof(float) > (size_t)3600 * job->sample_rate)
                return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                                   "samples[%zu] lasts more than the one-hour limit", i);
        }
    }
    if (job->source == UFORM__SOURCE_CHOOSE && job->model->arch.published)
        return uform__fail(outcome, UFORM_UNSUPPORTED, function,
                           "text_choose needs a UForm 4 checkpoint's next-byte head; this published model has none");
    if (job->source == UFORM__SOURCE_CHOOSE) {
        status = uform__tape_check(job->choices, "choices", outcome, function);
        if (status != UFORM_OK) return status;
        if (job->choices->count != count)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "choices lists %zu entries for %zu texts",
                               job->choices->count, count);
        for (size_t i = 0; i < count; ++i) {
            size_t length;
            const unsigned char *legal = uform__tape_item(job->choices, i, &length);
            if (length == 0)
                return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "choices[%zu] is empty: text %zu has no legal next byte", i, i);
            unsigned char seen[256] = {0};
            for (size_t c = 0; c < length; ++c) {
                if (seen[legal[c]])
                    return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                                       "choices[%zu] lists byte %u twice (positions %zu and later)", i, legal[c], c);
                seen[legal[c]] = 1;
            }
            if (job->groups && job->groups[i] >= config->temperature_groups)
                return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                                   "groups[%zu] = %zu, but the model has %zu temperature groups", i, job->groups[i],
                                   config->temperature_groups);
        }
    }
    return UFORM_OK;
}

static size_t floats_aligned(size_t floats) { return (floats + 15) / 16 * 16; }

/* A ragged view over `rows` rows of `columns` with the call's item offsets. */
static uform_status_t ragged(uform_arena_t arena, size_t rows, size_t columns, uform_scalar_kind_t scalar,
                             const size_t *offsets, size_t count, uform_rows_t *view, uform__call_context_t *context) {
    view->offsets = offsets;
    view->count = count;
    return uform__arena_matrix(arena, rows, columns, scalar, &view->matrix, context->outcome, context->function);
}

/* A published text tower's token ids for every item of the job, end to end in the arena (the
 * tokenizer's rules: its normaliser, pre-tokeniser, model, specials, then the tower's limit). */
static uform_status_t tokenize(uform__encode_job_t *job, uform__call_context_t *context) {
    const uform_model_t model = job->model;
    size_t count = job->inputs->count;
    size_t *id_offsets = uform__arena_alloc(context->arena, (count + 1) * sizeof(size_t), 64);
    if (!id_offsets) return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function, "cannot allocate id offsets");
    uform__text_ids_t all, one;
    memset(&all, 0, sizeof all), memset(&one, 0, sizeof one);
    uform_status_t status = UFORM_OK;
    id_offsets[0] = 0;
    for (size_t i = 0; i < count && status == UFORM_OK; ++i) {
        size_t length;
        const char *text = (const char *)uform__tape_item(job->inputs, i, &length);
        status = uform__published_text_ids(model, text, length, &one, context->outcome);
        for (size_t k = 0; status == UFORM_OK && k < one.count; ++k)
            if (uform__text_ids_append(&all, one.data[k]) != 0)
                status = uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function, "cannot allocate token ids");
        if (status != UFORM_OK && context->outcome->status != UFORM_OUT_OF_MEMORY) {
            char message[sizeof context->outcome->message];
            snprintf(message, sizeof message, "%s", context->outcome->message);
            status = uform__fail(context->outcome, status, context->function, "%s[%zu]: %s", job->inputs_name, i, message);
        }
        id_offsets[i + 1] = all.count;
    }
    uint32_t *ids = status == UFORM_OK ? uform__arena_alloc(context->arena, (all.count + 1) * sizeof(uint32_t), 64) : NULL;
    if (status == UFORM_OK && !ids)
        status = uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function, "cannot allocate token ids");
    if (status == UFORM_OK) {
        if (all.count) memcpy(ids, all.data, all.count * sizeof(uint32_t));
        job->ids = ids, job->id_offsets = id_offsets;
    }
    uform__text_ids_free(&all), uform__text_ids_free(&one);
    return status;
}

uform_status_t uform__encode_run(const uform__encode_job_t *original, uform__call_context_t *context) {
    double call_start = uform__seconds_now();
    uform__encode_job_t tokenized = *original;
    const uform__encode_job_t *job = &tokenized;
    const uform_model_t model = job->model;
    const uform__model_config_t *config = &model->config;
    const uform_encode_config_t *options = job->config;
    uform_arena_t arena = context->arena;
    size_t count = job->inputs->count, d = config->hidden;
    int choose = job->source == UFORM__SOURCE_CHOOSE;
    uform_outputs_t outputs = job->outputs ? job->outputs : UFORM_OUTPUTS_EMBEDDINGS;
    size_t dimensions = options->dimensions ? options->dimensions : config->embedding;
    uform_encode_stats_t stats;
    memset(&stats, 0, sizeof stats);
    stats.items = count;
    if (count) stats.input_bytes = job->inputs->offsets[count] - job->inputs->offsets[0];

    uform__compute_t compute;
    memset(&compute, 0, sizeof compute);
    compute.gemm = uform__gemm_kernels(context->cpu_class);
    compute.nn = uform__nn_kernels(context->cpu_class);
    compute.signal = uform__signal_kernels(context->cpu_class);
    compute.parallel = context->parallel;
    compute.packed = context->cpu_class == model->cpu_class;
    compute.compute = model->compute;
    if (model->compute == UFORM_COMPUTE_I8) { /* the float layers in the class's best float compute */
        compute.compute = uform__gemm_rounds_to_bf16(compute.gemm) ? UFORM_COMPUTE_BF16 : UFORM_COMPUTE_F32;
        compute.i8 = uform__gemm_i8_kernels(context->cpu_class);
    }

    if ((model->text.tokenizer || model->text.sentencepiece) && job->source == UFORM__SOURCE_TEXT) {
        uform_status_t status = tokenize(&tokenized, context);
        if (status != UFORM_OK) return status;
    }

    /* Token offsets of every item: the ragged outputs' offsets, kept in the arena with them. */
    size_t *offsets = uform__arena_alloc(arena, (count + 1) * sizeof(size_t), 64);
    size_t *choice_offsets = choose ? uform__arena_alloc(arena, (count + 1) * sizeof(size_t), 64) : NULL;
    if (!offsets || (choose && !choice_offsets))
        return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function, "cannot allocate item offsets");
    offsets[0] = 0;
    size_t largest = 0;
    for (size_t i = 0; i < count; ++i) {
        size_t tokens = uform__stem_item_tokens(job, i);
        offsets[i + 1] = offsets[i] + tokens;
        if (tokens > largest) largest = tokens;
    }
    size_t total_tokens = offsets[count];
    stats.tokens = total_tokens;

    /* Output views, zeroed when not kept. */
    uform_status_t status = UFORM_OK;
    if (choose) {
        memset(job->probabilities, 0, sizeof *job->probabilities);
        choice_offsets[0] = 0;
        for (size_t i = 0; i < count; ++i)
            choice_offsets[i + 1] = choice_offsets[i] + (job->choices->offsets[i + 1] - job->choices->offsets[i]);
        float *probabilities = uform__arena_alloc(arena, (choice_offsets[count] + 1) * sizeof(float), 64);
        if (!probabilities)
            return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function, "cannot allocate probabilities");
        uform_matrix_t *matrix = &job->probabilities->matrix;
        matrix->data = probabilities, matrix->rows = choice_offsets[count], matrix->columns = 1;
        matrix->stride_bytes = sizeof(float), matrix->scalar = UFORM_SCALAR_F32, matrix->arena = arena;
        matrix->generation = uform_arena_generation(arena);
        job->probabilities->offsets = choice_offsets, job->probabilities->count = count;
    } else {
        memset(job->encoded, 0, sizeof *job->encoded);
        if (outputs & UFORM_OUTPUTS_EMBEDDINGS)
            status = uform__arena_matrix(arena, count, dimensions, options->outputs_scalar, &job->encoded->embeddings,
                                         context->outcome, context->function);
        if (status == UFORM_OK && (outputs & UFORM_OUTPUTS_TOKEN_VECTORS))
            status = ragged(arena, total_tokens, dimensions, options->outputs_scalar, offsets, count,
                            &job->encoded->token_vectors, context);
        if (status == UFORM_OK && (outputs & UFORM_OUTPUTS_STATES))
            status = ragged(arena, total_tokens, d, UFORM_SCALAR_F32, offsets, count, &job->encoded->states, context);
        if (status != UFORM_OK) return status;
    }

    /* Chunks: consecutive items up to UFORM__CHUNK_TOKENS tokens (at least one item each). */
    size_t chunk_tokens = largest > UFORM__CHUNK_TOKENS ? largest : UFORM__CHUNK_TOKENS;
    if (chunk_tokens > total_tokens) chunk_tokens = total_tokens;
    size_t chunks = 0, chunk_items = 0;
    size_t even = compute.i8 ? uform__parallel_threads(context->parallel) : 1;
    for (size_t first = 0; first < count;) {
        size_t last = chunk_end(offsets, count, first, chunk_tokens, even);
        if (last - first > chunk_items) chunk_items = last - first;
        chunks += 1;
        first = last;
    }
    size_t patch_width = uform__stem_patch_width(config, job->modality);
    size_t projected_width = uform__heads_width(model);
    int spare = model->stems[job->modality].dense_count > 0;
    size_t floats = floats_aligned(chunk_tokens * d)                               /* x */
                    + floats_aligned(uform__trunk_scratch_floats(config, chunk_tokens)) /* trunk */
                    + floats_aligned(chunk_tokens * (patch_width ? patch_width : 1))  /* patches */
                    + floats_aligned(chunk_tokens * d)                               /* states / projected patches */
                    + floats_aligned(chunk_tokens * projected_width) * (1 + spare)    /* projected, spare */
                    + floats_aligned(chunk_items * d)                                /* cls */
                    + 3 * floats_aligned(chunk_tokens);                              /* mean, rstd, norms */
    float *memory = count ? uform__arena_alloc(arena, floats * sizeof(float), 64) : NULL;
    if (count && !memory)
        return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function,
                           "cannot allocate %zu MiB of scratch for chunks of %zu tokens", floats * 4 >> 20, chunk_tokens);
    /* One set of packing buffers for every product of the call, so the products allocate nothing. */
    compute.gemm_scratch_bytes = compute.gemm->scratch_bytes(uform__parallel_threads(context->parallel));
    compute.gemm_scratch = uform__arena_alloc(arena, compute.gemm_scratch_bytes, 64);
    if (!compute.gemm_scratch) compute.gemm_scratch_bytes = 0; /* the products then allocate their own */
    if (compute.i8 && count) { /* quantized rows of a chunk, and the int8 products' scratch */
        size_t bytes = uform__i8_scratch_bytes(model, &compute, chunk_tokens);
        void *i8_memory = uform__arena_alloc(arena, bytes, 64);
        if (!i8_memory)
            return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function,
                               "cannot allocate %zu MiB of I8 scratch", bytes >> 20);
        uform__i8_scratch_carve(model, &compute, chunk_tokens, i8_memory);
    }
    size_t *chunk_offsets = uform__arena_alloc(arena, (chunk_items + 1) * sizeof(size_t), 64);
    /* The rows the heads read when that is one per item (see uform__trunk_forward): [NEXT] for
     * text_choose, [CLS] when embeddings are the only output. */
    uform__pooling_t pooling = model->arch.published ? model->arch.pooling : UFORM__POOLING_FIRST;
    int prune = choose || (outputs == UFORM_OUTPUTS_EMBEDDINGS &&
                           (pooling == UFORM__POOLING_FIRST || pooling == UFORM__POOLING_LAST ||
                            pooling == UFORM__POOLING_TOKEN));
    size_t *keep = prune ? uform__arena_alloc(arena, (chunk_items + 1) * sizeof(size_t), 64) : NULL;
    if (!chunk_offsets || (prune && !keep))
        return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function,
                           "cannot allocate chunk offsets and kept rows");
    float *x = memory;
    float *cursor = memory + floats_aligned(chunk_tokens * d);
    uform__trunk_scratch_t trunk;
    if (count) uform__trunk_scratch_carve(config, chunk_tokens, cursor, &trunk);
    cursor += floats_aligned(uform__trunk_scratch_floats(config, chunk_tokens));
    float *patches = cursor;
    cursor += floats_aligned(chunk_tokens * (patch_width ? patch_width : 1));
    uform__heads_scratch_t heads;
    heads.states = cursor, cursor += floats_aligned(chunk_tokens * d);
    heads.projected = cursor, cursor += floats_aligned(chunk_tokens * projected_width);
    heads.spare = spare ? cursor : NULL;
    if (spare) cursor += floats_aligned(chunk_tokens * projected_width);
    heads.cls = cursor, cursor += floats_aligned(chunk_items * d);
    heads.mean = cursor, cursor += floats_aligned(chunk_tokens);
    heads.rstd = cursor, cursor += floats_aligned(chunk_tokens);
    heads.norms = cursor;

    uform__progress_begin(&context->progress, context->progress_options, chunks * (config->depth + 2));
    size_t done = 0;
    for (size_t first = 0; first < count && status == UFORM_OK;) {
        size_t last = chunk_end(offsets, count, first, chunk_tokens, even);
        size_t items = last - first;
        for (size_t i = 0; i <= items; ++i) chunk_offsets[i] = offsets[first + i] - offsets[first];
        size_t tokens = chunk_offsets[items];
        if (prune)
            for (size_t i = 0; i < items; ++i)
                keep[i] = choose ? chunk_offsets[i + 1] - 1 : uform__heads_pool_row(job, first + i, chunk_offsets, i);
        /* The projected patches share the heads' states buffer: both are [tokens, d] and never live at once. */
        status = uform__stems_forward(job, &compute, first, items, chunk_offsets, x, patches, heads.states, context,
                                      &stats.decode_seconds);
        if (status != UFORM_OK) break;
        if (uform__progress_advance(&context->progress, ++done) == UFORM_CANCEL) {
            status = uform__fail(context->outcome, UFORM_CANCELLED, context->function,
                                 "cancelled by the progress handler after the stems of items %zu..%zu", first, last - 1);
            break;
        }
        status = uform__trunk_forward(model, &compute, x, tokens, chunk_offsets, items, keep, &trunk, context, &done);
        if (status != UFORM_OK) break;
        status = choose ? uform__choose_forward(job, &compute, x, first, items, chunk_offsets, &heads, context)
                        : uform__heads_forward(job, &compute, x, first, items, chunk_offsets, offsets[first], &heads,
                                               context);
        if (status != UFORM_OK) break;
        if (uform__progress_advance(&context->progress, ++done) == UFORM_CANCEL && done < chunks * (config->depth + 2)) {
            status = uform__fail(context->outcome, UFORM_CANCELLED, context->function,
                                 "cancelled by the progress handler after items %zu..%zu", first, last - 1);
            break;
        }
        first = last;
    }
    if (status == UFORM_OK && count == 0) uform__progress_advance(&context->progress, 0);
    stats.flops = compute.flops;
    stats.compute_seconds = uform__seconds_now() - call_start - stats.decode_seconds;
    stats.arena_bytes = uform_arena_capacity(arena);
    if (options->stats) *options->stats = stats;
    return status;
}
