/*
 * The stems under training (docs/model.md, "The stems"), forward and backward:
 *
 *   text   x[k] = text.bytes[id_k] + text.positions[k] + modality.text
 *   media  x[0] = cls + positions[0] + modality;  x[k] = patch_k·Wᵀ + b + positions[k] (+ time) + modality
 *
 * Preprocessing (decode, resize, log-mel) is the inference code's and is not differentiated.
 * Backward: the tables accumulate their rows' gradients through the embedding kernels (each prong
 * owns table rows, so repeated ids never race), the patch projections through the GEMM backward.
 */
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "model/stems.h"
#include "train/work.h"

static uform__source_t source_of(uform_modality_t modality) {
    switch (modality) {
    case UFORM_MODALITY_IMAGE: return UFORM__SOURCE_IMAGE_FILES;
    case UFORM_MODALITY_VIDEO: return UFORM__SOURCE_VIDEO_FILES;
    default: return UFORM__SOURCE_AUDIO_FILES;
    }
}

typedef struct decode_loop_t {
    uform__train_work_t *work;
    size_t first;             /* the first media sequence */
    uform_outcome_t *outcomes; /* [media sequences] */
    uform_status_t *statuses;
    size_t *media_ordinal;     /* [the whole request's contents]: a content's index among its modality's,
                                * where prepared inputs are given (NULL otherwise) */
} decode_loop_t;

static void decode_prong(void *context, size_t thread, size_t prong) {
    decode_loop_t *loop = context;
    uform__train_work_t *work = loop->work;
    const uform__sequence_t *sequence = &work->plan->sequence[loop->first + prong];
    const uform__model_config_t *config = &work->trainer->config;
    uform__encode_job_t job;
    memset(&job, 0, sizeof job);
    job.model = &work->trainer->view;
    job.modality = sequence->modality;
    job.source = source_of(sequence->modality);
    job.inputs = &work->request->contents;
    size_t width = uform__stem_patch_width(config, sequence->modality);
    float *target = work->patches[sequence->modality] + sequence->first_patch * width;
    const uform_prepared_t *prepared = work->whole->prepared[sequence->modality];
    if (prepared) {
        /* Decoded ahead (uform_media_prepare): the same rows, copied. */
        size_t per_item = prepared->rows_per_item;
        const float *rows = (const float *)prepared->rows.data + loop->media_ordinal[work->content_base + sequence->content] * per_item * width;
        memcpy(target, rows, per_item * width * sizeof(float));
        loop->statuses[prong] = UFORM_OK;
        return;
    }
    loop->statuses[prong] =
        uform__stem_decode_item(&job, sequence->content, target, work->compute.signal, &loop->outcomes[prong]);
}

uform_status_t uform__train_stems_decode(uform__train_work_t *work) {
    const uform__batch_plan_t *plan = work->plan;
    uform__call_context_t *context = work->context;
    /* Media embedding sequences are the ones after the text range, up to the choices. */
    size_t first = plan->modality_first[UFORM_MODALITY_IMAGE], last = plan->embeddings;
    size_t count = last - first;
    if (count == 0) return UFORM_OK;
    uform_outcome_t *outcomes = calloc(count, sizeof *outcomes);
    uform_status_t *statuses = calloc(count, sizeof *statuses);
    size_t n = work->whole->contents.count; /* a chunk's contents are indexed in the whole request's */
    int any_prepared = 0;
    for (int m = 0; m < 4; ++m) any_prepared |= work->whole->prepared[m] != NULL;
    size_t *media_ordinal = any_prepared ? calloc(n + 1, sizeof *media_ordinal) : NULL;
    if (media_ordinal) {
        size_t seen[4] = {0};
        for (size_t i = 0; i < n; ++i) media_ordinal[i] = seen[work->whole->modalities[i]]++;
    }
    if (!outcomes || !statuses || (any_prepared && !media_ordinal)) {
        free(outcomes), free(statuses), free(media_ordinal);
        return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function,
                           "cannot allocate the records of %zu media contents", count);
    }
    decode_loop_t loop = {work, first, outcomes, statuses, media_ordinal};
    uform__parallel_for(work->compute.parallel, count, decode_prong, &loop);
    /* Report the failing content with the smallest index, whatever the order prongs ran in. */
    size_t worst = SIZE_MAX, at = 0;
    for (size_t i = 0; i < count; ++i)
        if (statuses[i] != UFORM_OK && plan->sequence[first + i].content < worst)
            worst = plan->sequence[first + i].content, at = i;
    uform_status_t status = UFORM_OK;
    for (int m = UFORM_MODALITY_IMAGE; work->round_inputs && m <= UFORM_MODALITY_AUDIO; ++m)
        uform__round_to_bf16(work->patches[m], plan->patch_rows[m] *
                                                   uform__stem_patch_width(&work->trainer->config, (uform_modality_t)m));
    if (worst != SIZE_MAX) {
        status = uform__fail(context->outcome, statuses[at], context->function, "contents[%zu] (%s): %s",
                             work->content_base + worst,
                             uform__modality_name(plan->sequence[first + at].modality), outcomes[at].message);
        work->failed_content = work->content_base + worst;
    }
    free(outcomes), free(statuses), free(media_ordinal);
    return status;
}

uform_status_t uform__train_stems_forward(uform__train_work_t *work, float *x) {
    const uform__batch_plan_t *plan = work->plan;
    const struct uform_model_s *view = &work->trainer->view;
    const uform__model_config_t *config = &view->config;
    size_t d = config->hidden;
    uform__call_context_t *context = work->context;
    for (size_t s = 0; s < plan->sequences; ++s) {
        const uform__sequence_t *sequence = &plan->sequence[s];
        const uform__stem_t *stem = &view->stems[sequence->modality];
        float *rows = x + sequence->first_token * d;
        if (sequence->modality == UFORM_MODALITY_TEXT) {
            for (size_t k = 0; k < sequence->tokens; ++k) {
                size_t token = sequence->first_token + k;
                const float *embedding = stem->table + plan->text_ids[token] * d;
                const float *position = stem->positions + plan->position_ids[token] * d;
                float *row = rows + k * d;
                for (size_t c = 0; c < d; ++c) row[c] = embedding[c] + position[c] + stem->modality[c];
            }
        }
    }
    for (int m = UFORM_MODALITY_IMAGE; m <= UFORM_MODALITY_AUDIO; ++m) {
        size_t patch_rows = plan->patch_rows[m];
        if (patch_rows == 0) continue;
        const uform__stem_t *stem = &view->stems[m];
        size_t width = uform__stem_patch_width(config, (uform_modality_t)m);
        /* One product for every patch of the modality: projected [P_m, d]. */
        uform_status_t status = uform__linear_forward(&work->compute, &stem->patch, patch_rows, work->patches[m], width,
                                                      work->projected, d, d, 0, context->outcome);
        if (status != UFORM_OK) return status;
        for (size_t s = plan->modality_first[m]; s < plan->modality_first[m] + plan->modality_count[m]; ++s) {
            const uform__sequence_t *sequence = &plan->sequence[s];
            float *rows = x + sequence->first_token * d;
            for (size_t c = 0; c < d; ++c) rows[c] = stem->cls[c] + stem->positions[c] + stem->modality[c];
            for (size_t k = 1; k < sequence->tokens; ++k) {
                size_t patch = sequence->first_patch + k - 1;
                const float *source = work->projected + patch * d;
                const float *position = stem->positions + plan->position_ids[sequence->first_token + k] * d;
                const float *time = m == UFORM_MODALITY_VIDEO ? stem->time + plan->time_ids[patch] * d : NULL;
                float *row = rows + k * d;
                for (size_t c = 0; c < d; ++c)
                    row[c] = source[c] + position[c] + stem->modality[c] + (time ? time[c] : 0.0f);
            }
        }
    }
    return UFORM_OK;
}

/* db[c] += Σ over `rows` rows of dy (row stride d): a modality vector's or CLS row's gradient. */
static void sum_rows(uform__train_work_t *work, size_t rows, const float *dy, size_t stride, size_t d, float *db) {
    uform__gemm_backward_b_t args = {rows, d, dy, stride, db};
    work->compute.gemm->backward_b(&args, work->compute.parallel, NULL);
}

uform_status_t uform__train_stems_backward(uform__train_work_t *work, float *dx) {
    const uform__batch_plan_t *plan = work->plan;
    const struct uform_model_s *view = &work->trainer->view;
    struct uform_model_s *grads = &work->trainer->grad_view;
    const uform__model_config_t *config = &view->config;
    const uform__nn_kernels_t *nn = work->compute.nn;
    const uform__parallel_t *parallel = work->compute.parallel;
    size_t d = config->hidden;
    /* Text: the embedding sequences' range, then the choice sequences' (both contiguous). */
    if (view->stems[UFORM_MODALITY_TEXT].present) {
        uform__stem_t *stem = &grads->stems[UFORM_MODALITY_TEXT];
        size_t ranges[2][2] = {{plan->token_offsets[plan->modality_first[0]],
                                plan->token_offsets[plan->modality_first[0] + plan->modality_count[0]]},
                               {plan->token_offsets[plan->embeddings], plan->tokens}};
        for (int r = 0; r < 2; ++r) {
            size_t first = ranges[r][0], count = ranges[r][1] - ranges[r][0];
            if (count == 0) continue;
            const float *rows = dx + first * d;
            nn->embedding_backward(count, plan->text_ids + first, d, rows, d, UFORM__TEXT_VOCABULARY,
                                   (float *)stem->table, d, parallel);
            nn->embedding_backward(count, plan->position_ids + first, d, rows, d, stem->position_rows,
                                   (float *)stem->positions, d, parallel);
            sum_rows(work, count, rows, d, d, (float *)stem->modality);
        }
    }
    for (int m = UFORM_MODALITY_IMAGE; m <= UFORM_MODALITY_AUDIO; ++m) {
        size_t patch_rows = plan->patch_rows[m];
        if (patch_rows == 0) continue;
        const uform__stem_t *weights = &view->stems[m];
        uform__stem_t *stem = &grads->stems[m];
        size_t first_sequence = plan->modality_first[m], count = plan->modality_count[m];
        size_t first = plan->token_offsets[first_sequence];
        size_t tokens = plan->token_offsets[first_sequence + count] - first;
        const float *rows = dx + first * d;
        nn->embedding_backward(tokens, plan->position_ids + first, d, rows, d, stem->position_rows,
                               (float *)stem->positions, d, parallel);
        sum_rows(work, tokens, rows, d, d, (float *)stem->modality);
        /* CLS rows, and the patch rows gathered [P_m, d] for the projection's backward. */
        for (size_t s = first_sequence; s < first_sequence + count; ++s) {
            const uform__sequence_t *sequence = &plan->sequence[s];
            const float *cls = dx + sequence->first_token * d;
            float *dcls = (float *)stem->cls;
            for (size_t c = 0; c < d; ++c) dcls[c] += cls[c];
            memcpy(work->projected + sequence->first_patch * d, cls + d, (sequence->tokens - 1) * d * sizeof(float));
        }
        if (m == UFORM_MODALITY_VIDEO)
            nn->embedding_backward(patch_rows, plan->time_ids, d, work->projected, d,
                                   config->video_frames / config->video_tubelet, (float *)stem->time, d, parallel);
        size_t width = uform__stem_patch_width(config, (uform_modality_t)m);
        uform_status_t status = uform__train_linear_backward(work, &weights->patch, &stem->patch, patch_rows,
                                                             work->patches[m], width, work->projected, d, NULL, 0);
        if (status != UFORM_OK) return status;
    }
    return UFORM_OK;
}
