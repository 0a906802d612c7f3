/*
 * Decoding ahead of encoding (uform.h, "Media"): uform_media_prepare decodes and preprocesses files
 * into patch rows in its arena, recording each item's own outcome instead of failing the call;
 * uform_prepared_encode runs the patch projection, trunk and heads on the items that prepared,
 * reading their rows in place. Together they let a pipeline decode batch n+1 (on one executor)
 * while batch n computes (on another), or read the next files while both run.
 */
#include <string.h>

#include "core/arena.h"
#include "core/outcome.h"
#include "core/tape.h"
#include "model/encode.h"
#include "model/stems.h"

/* Items a thread decodes per progress unit: progress and cancellation every few items, while a
 * slow item (a long video) cannot leave the other threads idle for long. */
#define PREPARE_ITEMS_PER_THREAD 2

static uform__source_t source_of(uform_modality_t modality) {
    return modality == UFORM_MODALITY_IMAGE   ? UFORM__SOURCE_IMAGE_FILES
           : modality == UFORM_MODALITY_VIDEO ? UFORM__SOURCE_VIDEO_FILES
                                              : UFORM__SOURCE_AUDIO_FILES;
}

typedef struct prepare_loop_t {
    uform__encode_job_t job;
    const uform__signal_kernels_t *signal;
    size_t first;            /* the group's first item */
    size_t item_floats;      /* rows_per_item · patch width */
    float *rows;
    uform_outcome_t *outcomes;
} prepare_loop_t;

static void prepare_prong(void *context, size_t thread, size_t prong) {
    prepare_loop_t *loop = context;
    size_t item = loop->first + prong;
    uform_outcome_t *outcome = &loop->outcomes[item];
    uform_status_t status =
        uform__stem_decode_item(&loop->job, item, loop->rows + item * loop->item_floats, loop->signal, outcome);
    if (status == UFORM_OK) uform__succeed(outcome, "uform_media_prepare");
    else {
        /* Decoders name their internal function; the item's record names the verb. */
        memset(outcome->function, 0, sizeof outcome->function);
        strcpy(outcome->function, "uform_media_prepare");
    }
}

static uform_status_t prepare_run(void *pointer, uform__call_context_t *context) {
    uform_media_prepare_t *request = pointer;
    const uform_model_t tower = uform__model_tower(request->model, request->modality);
    const uform__model_config_t *config = &tower->config;
    uform_prepared_t *prepared = &request->prepared;
    size_t count = request->files.count, per_item = uform__stem_patch_rows(tower, request->modality);
    size_t width = uform__stem_patch_width(config, request->modality);
    prepare_loop_t loop;
    memset(&loop, 0, sizeof loop);
    loop.job.model = uform__model_tower(request->model, request->modality), loop.job.modality = request->modality;
    loop.job.source = source_of(request->modality), loop.job.inputs = &request->files, loop.job.inputs_name = "files";
    loop.signal = uform__signal_kernels(context->cpu_class);
    loop.item_floats = per_item * width;
    if (count && loop.item_floats > SIZE_MAX / sizeof(float) / count)
        return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function, "%zu items overflow size_t", count);
    /* The whole footprint up front: a steady loop of same-sized batches then maps (and faults) once. */
    size_t rows_bytes = count * loop.item_floats * sizeof(float) + 64, outcomes_bytes = (count + 1) * sizeof(uform_outcome_t) + 64;
    uform_status_t reserved = uform__arena_reserve(context->arena, rows_bytes + outcomes_bytes, context->outcome, context->function);
    if (reserved != UFORM_OK) return reserved;
    loop.rows = uform__arena_alloc(context->arena, count * loop.item_floats * sizeof(float) + 1, 64);
    loop.outcomes = uform__arena_alloc(context->arena, (count + 1) * sizeof(uform_outcome_t), 64);
    if (!loop.rows || !loop.outcomes)
        return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function,
                           "cannot allocate %zu MiB of patch rows for %zu items", count * loop.item_floats * 4 >> 20, count);
    memset(loop.outcomes, 0, count * sizeof(uform_outcome_t));

    size_t group = uform__parallel_threads(context->parallel) * PREPARE_ITEMS_PER_THREAD;
    uform__progress_begin(&context->progress, context->progress_options, count);
    for (loop.first = 0; loop.first < count; loop.first += group) {
        size_t items = count - loop.first < group ? count - loop.first : group;
        uform__parallel_for(context->parallel, items, prepare_prong, &loop);
        if (uform__progress_advance(&context->progress, loop.first + items) == UFORM_CANCEL && loop.first + items < count)
            return uform__fail(context->outcome, UFORM_CANCELLED, context->function,
                               "cancelled by the progress handler after %zu of %zu items", loop.first + items, count);
    }
    if (count == 0) uform__progress_advance(&context->progress, 0);
    prepared->modality = request->modality;
    prepared->count = count;
    prepared->rows_per_item = per_item;
    prepared->item_outcomes = loop.outcomes;
    prepared->failed = 0;
    for (size_t i = 0; i < count; ++i) prepared->failed += loop.outcomes[i].status != UFORM_OK;
    uform_matrix_t *rows = &prepared->rows;
    rows->data = loop.rows;
    rows->rows = count * per_item;
    rows->columns = width;
    rows->stride_bytes = width * sizeof(float);
    rows->scalar = UFORM_SCALAR_F32;
    rows->arena = context->arena;
    rows->generation = uform_arena_generation(context->arena);
    return UFORM_OK;
}

UFORM_API uform_status_t uform_media_prepare(uform_media_prepare_t *request) {
    if (!request) return UFORM_INVALID_ARGUMENT;
    memset(&request->prepared, 0, sizeof request->prepared);
    uform_outcome_t *outcome = &request->outcome;
    const char *function = __func__;
    if (!request->model) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "model is NULL");
    if (!request->arena)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "arena is NULL: the prepared rows land in an arena (uform_arena_for_executor)");
    uform_modality_t modality = request->modality;
    if (modality != UFORM_MODALITY_IMAGE && modality != UFORM_MODALITY_VIDEO && modality != UFORM_MODALITY_AUDIO)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "modality %d is not IMAGE, VIDEO or AUDIO (text needs no preparing)", (int)modality);
#if !defined(UFORM_WITH_FFMPEG)
    if (modality == UFORM_MODALITY_VIDEO)
        return uform__fail(outcome, UFORM_UNSUPPORTED, function,
                           "this build has no FFmpeg (configured with UFORM_WITH_FFMPEG=OFF), so it decodes no video");
#endif
    uform__encode_job_t job;
    memset(&job, 0, sizeof job);
    uform_encode_config_t defaults = {0};
    job.model = uform__model_tower(request->model, modality), job.modality = modality, job.source = source_of(modality);
    job.inputs = &request->files, job.inputs_name = "files", job.config = &defaults;
    uform_status_t status = uform__encode_validate(&job, outcome, function);
    if (status != UFORM_OK) return status;
    uform__call_t call = {prepare_run, request, outcome, request->completion, request->arena, &request->progress, function};
    return uform__executor_call(request->executor, &call);
}

/* ---- encoding prepared items ---- */

static uform_status_t prepared_run(void *pointer, uform__call_context_t *context) {
    uform_prepared_encode_t *request = pointer;
    const uform_prepared_t *prepared = request->prepared;
    size_t good = prepared->count - prepared->failed;
    /* The job's items are the prepared items that succeeded; its tape only carries their count. */
    size_t *offsets = uform__arena_alloc(context->arena, (good + 1) * sizeof(size_t), 64);
    size_t *items = uform__arena_alloc(context->arena, (good + 1) * sizeof(size_t), 64);
    if (!offsets || !items)
        return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function, "cannot allocate %zu item records", good);
    size_t k = 0;
    for (size_t i = 0; i < prepared->count && k < good; ++i)
        if (prepared->item_outcomes[i].status == UFORM_OK) items[k++] = i;
    if (k != good)
        return uform__fail(context->outcome, UFORM_INVALID_ARGUMENT, context->function,
                           "prepared->failed says %zu items failed, but %zu of %zu succeeded", prepared->failed, k,
                           prepared->count);
    memset(offsets, 0, (good + 1) * sizeof(size_t));
    uform_tape_t tape = {offsets, offsets, good};
    uform__encode_job_t job;
    memset(&job, 0, sizeof job);
    job.model = uform__model_tower(request->model, prepared->modality), job.modality = prepared->modality, job.source = UFORM__SOURCE_PREPARED;
    job.inputs = &tape, job.outputs = request->outputs, job.config = &request->config, job.encoded = &request->encoded;
    job.inputs_name = "prepared";
    job.prepared_rows = prepared->rows.data;
    job.prepared_rows_per_item = prepared->rows_per_item;
    job.prepared_items = items;
    return uform__encode_run(&job, context);
}

UFORM_API uform_status_t uform_prepared_encode(uform_prepared_encode_t *request) {
    if (!request) return UFORM_INVALID_ARGUMENT;
    memset(&request->encoded, 0, sizeof request->encoded);
    uform_outcome_t *outcome = &request->outcome;
    const char *function = __func__;
    const uform_prepared_t *prepared = request->prepared;
    if (!request->model) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "model is NULL");
    if (!request->arena)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "arena is NULL: outputs land in an arena (uform_arena_for_executor)");
    if (!prepared) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "prepared is NULL");
    if (prepared->count && (uform_matrix_check(&prepared->rows) != UFORM_OK || !prepared->item_outcomes))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "prepared is stale: its arena has been written since uform_media_prepare filled it");
    if (prepared->count && prepared->rows.arena == request->arena)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "arena is the prepared rows' own arena: the encode would overwrite them; give it another");
    uform_modality_t modality = prepared->modality;
    if (modality != UFORM_MODALITY_IMAGE && modality != UFORM_MODALITY_VIDEO && modality != UFORM_MODALITY_AUDIO)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "prepared->modality %d is not a media modality",
                           (int)modality);
    const uform_model_t tower = uform__model_tower(request->model, modality);
    const uform__model_config_t *config = &tower->config;
    if (request->model->stems[modality].present && prepared->count &&
        (prepared->rows_per_item != uform__stem_patch_rows(tower, modality) ||
         prepared->rows.columns != uform__stem_patch_width(config, modality) ||
         prepared->rows.rows != prepared->count * prepared->rows_per_item || prepared->failed > prepared->count))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "prepared holds %zu rows of %zu per item, but this model's %s stem takes %zu rows of %zu: "
                           "it was prepared for another model",
                           prepared->rows_per_item, prepared->rows.columns, uform__modality_name(modality),
                           uform__stem_patch_rows(tower, modality), uform__stem_patch_width(config, modality));
    size_t zero = 0;
    uform_tape_t empty = {NULL, &zero, 0};
    uform__encode_job_t job;
    memset(&job, 0, sizeof job);
    job.model = uform__model_tower(request->model, modality), job.modality = modality, job.source = UFORM__SOURCE_PREPARED, job.inputs = &empty;
    job.outputs = request->outputs, job.config = &request->config, job.inputs_name = "prepared";
    uform_status_t status = uform__encode_validate(&job, outcome, function);
    if (status != UFORM_OK) return status;
    uform__call_t call = {prepared_run,     request, outcome, request->completion, request->arena, &request->config.progress,
                          function};
    return uform__executor_call(request->executor, &call);
}
