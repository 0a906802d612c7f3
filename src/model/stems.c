/*
 * The stems (docs/model.md; the preprocessing in docs/preprocessing.md): every modality turns its
 * items into rows of width d, starting with a [CLS] row, with `modality.{name}` added to every row.
 *
 *   text   row k = text.bytes[id_k] + text.positions[k]; ids [CLS] bytes… ([NEXT] for text_choose)
 *   image  decode → shorter side to S (antialiased) → centre crop → /255 → mean/std → p×p patches
 *          (c, y, x) → image.patch; CLS = image.cls + positions[0], patch k + positions[k+1]
 *   video  F frames at segment centres, each preprocessed like an image → tubelets of t frames
 *          (c, frame, y, x) → video.patch; tubelet (τ, k) + space[k+1] + time[τ]; CLS + space[0]
 *   audio  decode → mono → resample to R → crop or pad to the model's seconds → Whisper log-mel
 *          → 4 frames a token (frame-major) → audio.patch; CLS + positions[0], token a + positions[a+1]
 *
 * Media items decode in parallel, one item per prong; an item's failure is recorded and the first
 * failing item (in item order, whatever the timing) is reported.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/outcome.h"
#include "core/clock.h"
#include "core/tape.h"
#include "media/media.h"
#include "model/processor.h"
#include "model/stems.h"

size_t uform__stem_patch_width(const uform__model_config_t *config, uform_modality_t modality) {
    switch (modality) {
    case UFORM_MODALITY_IMAGE: return 3 * config->image_patch * config->image_patch;
    case UFORM_MODALITY_VIDEO: return 3 * config->video_tubelet * config->video_patch * config->video_patch;
    case UFORM_MODALITY_AUDIO: return UFORM__AUDIO_FRAMES_PER_TOKEN * config->audio_mels;
    default: return 0;
    }
}

size_t uform__stem_extra_rows(const uform_model_t model, uform_modality_t modality) {
    if (!model->arch.published) return 1;
    const uform__stem_t *stem = &model->stems[modality];
    return (stem->cls ? 1 : 0) + stem->register_count;
}

size_t uform__stem_patch_rows(const uform_model_t model, uform_modality_t modality) {
    const uform__model_config_t *config = &model->config;
    switch (modality) {
    case UFORM_MODALITY_IMAGE: return uform__model_image_tokens(config) - 1;
    case UFORM_MODALITY_VIDEO: return uform__model_video_tokens(config) - 1;
    case UFORM_MODALITY_AUDIO: return uform__model_audio_tokens(config) - 1;
    default: return 0;
    }
}

size_t uform__stem_media_tokens(const uform_model_t model, uform_modality_t modality) {
    return uform__stem_patch_rows(model, modality) + uform__stem_extra_rows(model, modality);
}

size_t uform__stem_item_tokens(const uform__encode_job_t *job, size_t item) {
    const uform__model_config_t *config = &job->model->config;
    switch (job->source) {
    case UFORM__SOURCE_TEXT:
    case UFORM__SOURCE_CHOOSE: {
        if (job->ids) return job->id_offsets[item + 1] - job->id_offsets[item];
        size_t length = job->inputs->offsets[item + 1] - job->inputs->offsets[item];
        if (length > config->text_bytes) length = config->text_bytes;
        return 1 + length + (job->source == UFORM__SOURCE_CHOOSE);
    }
    default: return uform__stem_media_tokens(job->model, job->modality);
    }
}

/* ---- text ---- */

static void text_rows(const uform__encode_job_t *job, size_t item, float *x) {
    const uform_model_t model = job->model;
    const uform__stem_t *stem = &model->stems[UFORM_MODALITY_TEXT];
    size_t d = model->config.hidden, tokens = uform__stem_item_tokens(job, item);
    size_t length;
    const unsigned char *bytes = uform__tape_item(job->inputs, item, &length);
    /* text_choose keeps the last T bytes of a long prefix (the ones next to the byte it chooses);
     * encoding keeps the first T. */
    size_t kept = tokens - 1 - (job->source == UFORM__SOURCE_CHOOSE);
    if (job->source == UFORM__SOURCE_CHOOSE && length > kept) bytes += length - kept;
    for (size_t k = 0; k < tokens; ++k) {
        size_t id = k == 0 ? UFORM__TEXT_CLS
                    : (job->source == UFORM__SOURCE_CHOOSE && k == tokens - 1) ? UFORM__TEXT_NEXT
                                                                               : bytes[k - 1];
        const float *embedding = stem->table + id * d, *position = stem->positions + k * d;
        float *row = x + k * d;
        for (size_t c = 0; c < d; ++c) row[c] = embedding[c] + position[c] + stem->modality[c];
    }
}

/* A published text tower's rows (src/published/): row k = tokens[id_k] + positions[offset + k]
 * (token type 0 folded into the positions at load), before the stem's LayerNorm. */
static void token_rows(const uform__encode_job_t *job, size_t item, float *x) {
    const uform__stem_t *stem = &job->model->stems[UFORM_MODALITY_TEXT];
    size_t d = job->model->config.hidden;
    const uint32_t *ids = job->ids + job->id_offsets[item];
    size_t tokens = job->id_offsets[item + 1] - job->id_offsets[item];
    size_t counted = 0; /* non-padding ids so far (RoBERTa's cumulative positions) */
    for (size_t k = 0; k < tokens; ++k) {
        float *row = x + k * d;
        size_t slot = stem->position_offset + k;
        if (stem->positions_from_ids) {
            size_t padding = stem->position_offset - 1;
            counted += ids[k] != padding;
            slot = ids[k] == padding ? padding : padding + counted;
        }
        const float *position = stem->positions + slot * d;
        if (stem->tokens_dtype == UFORM__GEMM_F32) {
            const float *embedding = (const float *)stem->tokens + (size_t)ids[k] * d;
            for (size_t c = 0; c < d; ++c) row[c] = embedding[c] + position[c];
        } else {
            const uint16_t *embedding = (const uint16_t *)stem->tokens + (size_t)ids[k] * d;
            for (size_t c = 0; c < d; ++c) row[c] = uform__nn_bf16_to_f32_one(embedding[c]) + position[c];
        }
    }
}

/* ---- media, one item per prong ---- */

typedef struct media_loop_t {
    const uform__encode_job_t *job;
    size_t first;                 /* the chunk's first item */
    const size_t *offsets;        /* chunk-relative token offsets [count + 1] */
    float *patches;               /* [Σ (tokens − 1), patch_width] */
    const uform__signal_kernels_t *signal;
    uform_outcome_t *outcomes;    /* [count] per item */
    uform_status_t *statuses;     /* [count] */
} media_loop_t;

/* Resizes one RGB8 picture through `plan` into patch rows [P, 3, t, p, p] (frame slot `frame` of
 * `frames`). */
static uform_status_t patches_through(const media_loop_t *loop, uform__signal_resize_plan_t *plan, const uint8_t *pixels,
                                      size_t width, size_t patch, const float *mean, const float *std, size_t frames,
                                      size_t frame, float *rows, uform_outcome_t *outcome) {
    uform__signal_image_target_t target = {UFORM__SIGNAL_PIXELS_F32_PATCHES_NORMALISED, rows, mean, std, patch,
                                           frames, frame};
    return uform__signal_resize_rgb8(plan, pixels, 3 * width, &target, loop->signal, NULL, outcome);
}

/* The resize plan of a height × width picture to `size`. */
static uform_status_t plan_for(uform__signal_resize_plan_t *plan, size_t height, size_t width, size_t size,
                               uform_outcome_t *outcome) {
    memset(plan, 0, sizeof *plan);
    if (height == 0 || width == 0) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, "", "the picture is empty");
    return uform__signal_resize_plan_init_shorter_side(plan, height, width, size, outcome);
}

/* Resizes one RGB8 picture into patch rows [P, 3, 1, p, p]. */
static uform_status_t image_patches(const media_loop_t *loop, const uint8_t *pixels, size_t height, size_t width,
                                    size_t size, size_t patch, const float *mean, const float *std, float *rows,
                                    uform_outcome_t *outcome) {
    uform__signal_resize_plan_t plan;
    uform_status_t status = plan_for(&plan, height, width, size, outcome);
    if (status == UFORM_OK) status = patches_through(loop, &plan, pixels, width, patch, mean, std, 1, 0, rows, outcome);
    uform__signal_resize_plan_free(&plan);
    return status;
}

/* F frames into tubelets: frame f fills slot f mod t of tubelet f / t, whose P patch rows are
 * flattened (c, frame, y, x); tubelets are ordered time-major. The frames share one size, so one
 * plan (its weight tables) serves them all. */
static uform_status_t video_patches(const media_loop_t *loop, const uform__media_video_t *video, float *target,
                                    uform_outcome_t *outcome) {
    const uform__model_config_t *config = &loop->job->model->config;
    size_t p = config->video_patch, t = config->video_tubelet, side = config->video_size / p;
    size_t width = 3 * t * p * p, frame_bytes = (size_t)video->width * video->height * 3;
    uform__signal_resize_plan_t plan;
    uform_status_t status = plan_for(&plan, video->height, video->width, config->video_size, outcome);
    for (size_t f = 0; f < config->video_frames && status == UFORM_OK; ++f)
        status = patches_through(loop, &plan, video->pixels + f * frame_bytes, video->width, p, config->video_mean,
                                 config->video_std, t, f % t, target + (f / t) * side * side * width, outcome);
    uform__signal_resize_plan_free(&plan);
    return status;
}

static uform_status_t audio_patches(const media_loop_t *loop, const float *samples, size_t count, size_t rate,
                                    float *target, uform_outcome_t *outcome) {
    const uform_model_t model = loop->job->model;
    const uform__model_config_t *config = &model->config;
    size_t wanted = uform__model_audio_samples(config);
    float *resampled = NULL;
    uform__signal_resample_plan_t plan;
    memset(&plan, 0, sizeof plan);
    uform_status_t status = uform__signal_resample_plan_init(&plan, rate, config->audio_rate, outcome);
    /* Resample only the source the kept samples depend on (identical results, less work). */
    if (status == UFORM_OK) {
        size_t needed = uform__signal_resample_source_needed(&plan, wanted);
        if (needed < count) count = needed;
    }
    size_t length = status == UFORM_OK ? uform__signal_resample_length(&plan, count) : 0;
    float *padded = calloc(wanted, sizeof(float));
    if (status == UFORM_OK && (!padded || !(resampled = malloc((length ? length : 1) * sizeof(float)))))
        status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, "", "cannot allocate %zu audio samples", length);
    if (status == UFORM_OK) {
        uform__signal_resample_f32(&plan, samples, count, resampled, loop->signal, NULL);
        memcpy(padded, resampled, (length < wanted ? length : wanted) * sizeof(float)); /* crop or zero-pad */
        size_t frames = uform__signal_stft_frames(&model->mel, wanted) - 1;
        float *mel = malloc(frames * config->audio_mels * sizeof(float));
        if (!mel) status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, "", "cannot allocate the log-mel spectrogram");
        else status = uform__signal_log_mel_f32(&model->mel, padded, wanted, mel, NULL, outcome);
        /* Token a is frames 4a .. 4a+3, contiguous in the frame-major spectrogram. */
        size_t tokens = uform__model_audio_tokens(config) - 1;
        if (status == UFORM_OK) memcpy(target, mel, tokens * UFORM__AUDIO_FRAMES_PER_TOKEN * config->audio_mels * sizeof(float));
        free(mel);
    }
    free(padded);
    free(resampled);
    uform__signal_resample_plan_free(&plan);
    return status;
}

uform_status_t uform__stem_decode_item(const uform__encode_job_t *job, size_t item, float *target,
                                      const uform__signal_kernels_t *signal, uform_outcome_t *outcome) {
    const uform__model_config_t *config = &job->model->config;
    media_loop_t loop;
    memset(&loop, 0, sizeof loop);
    loop.job = job, loop.signal = signal;
    size_t length;
    const unsigned char *bytes = uform__tape_item(job->inputs, item, &length);
    uform_status_t status = UFORM_OK;
    switch (job->source) {
    case UFORM__SOURCE_IMAGE_PIXELS:
        if (job->model->processor)
            status = uform__image_processor_patches(job->model->processor, bytes, job->heights[item], job->widths[item],
                                                    config->image_patch, target, signal ? signal->cpu_class : UFORM_CPU_CLASS_SERIAL,
                                                    outcome);
        else
            status = image_patches(&loop, bytes, job->heights[item], job->widths[item], config->image_size,
                                   config->image_patch, config->image_mean, config->image_std, target, outcome);
        break;
    case UFORM__SOURCE_IMAGE_FILES: {
        uform__media_image_t image = {0};
        status = uform__media_image_decode(bytes, length, NULL, &image, outcome);
        if (status == UFORM_OK && job->model->processor)
            status = uform__image_processor_patches(job->model->processor, image.pixels, image.height, image.width,
                                                    config->image_patch, target, signal ? signal->cpu_class : UFORM_CPU_CLASS_SERIAL,
                                                    outcome);
        else if (status == UFORM_OK)
            status = image_patches(&loop, image.pixels, image.height, image.width, config->image_size,
                                   config->image_patch, config->image_mean, config->image_std, target, outcome);
        uform__media_image_free(&image);
        break;
    }
    case UFORM__SOURCE_VIDEO_FILES: {
        uform__media_video_t video = {0};
        status = uform__media_video_decode(bytes, length, (uint32_t)config->video_frames, NULL, &video, outcome);
        if (status == UFORM_OK) status = video_patches(&loop, &video, target, outcome);
        uform__media_video_free(&video);
        break;
    }
    case UFORM__SOURCE_VIDEO_FRAMES: {
        uform__media_video_t video = {0};
        video.width = (uint32_t)job->widths[item], video.height = (uint32_t)job->heights[item];
        video.frames = (uint32_t)config->video_frames;
        video.pixels = (uint8_t *)bytes;
        status = video_patches(&loop, &video, target, outcome);
        break;
    }
    case UFORM__SOURCE_AUDIO_FILES: {
        uform__media_audio_t audio = {0};
        /* A little more than the model keeps, so the resampler's window sees real samples at the end. */
        double crop = (double)config->audio_seconds + 0.25;
        status = uform__media_audio_decode(bytes, length, crop, NULL, &audio, outcome);
        if (status == UFORM_OK) status = audio_patches(&loop, audio.samples, audio.count, audio.rate, target, outcome);
        uform__media_audio_free(&audio);
        break;
    }
    case UFORM__SOURCE_AUDIO_SAMPLES: {
        /* The tape holds float32 samples; copy them to honour alignment. */
        size_t count = length / sizeof(float);
        float *samples = malloc((count ? count : 1) * sizeof(float));
        if (!samples) {
            status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, "", "cannot allocate a copy of %zu samples", count);
            break;
        }
        memcpy(samples, bytes, count * sizeof(float));
        status = audio_patches(&loop, samples, count, job->sample_rate, target, outcome);
        free(samples);
        break;
    }
    default: break;
    }
    return status;
}

/* Decodes item `prong` of the chunk into its rows of `patches`. */
static void media_prong(void *context, size_t thread, size_t prong) {
    media_loop_t *loop = context;
    const uform__encode_job_t *job = loop->job;
    const uform__model_config_t *config = &job->model->config;
    size_t width = uform__stem_patch_width(config, job->modality);
    /* Class and register rows have no patch. */
    float *target = loop->patches + (loop->offsets[prong] - prong * uform__stem_extra_rows(job->model, job->modality)) * width;
    loop->statuses[prong] =
        uform__stem_decode_item(job, loop->first + prong, target, loop->signal, &loop->outcomes[prong]);
}

static uform_status_t decode_chunk(const uform__encode_job_t *job, uform__compute_t *compute, size_t first, size_t count,
                                   const size_t *offsets, float *patches, uform__call_context_t *context,
                                   double *decode_seconds);
static uform_status_t embed_patches(const uform__encode_job_t *job, float *x, const float *projected, size_t count,
                                    const size_t *offsets);
static uform_status_t published_patches(const uform__encode_job_t *job, float *x, const float *projected, size_t count,
                                        const size_t *offsets);

/* A published stem's LayerNorm over its rows x [rows, d] in place (BERT's embeddings.LayerNorm,
 * CLIP's pre_layrnorm); `scratch` holds 2·rows floats for the statistics. */
static void embed_norm(uform__compute_t *compute, const uform__stem_t *stem, size_t d, float *x, size_t rows,
                       float *scratch) {
    if (!stem->embed_norm.weight || rows == 0) return;
    compute->nn->layernorm_forward(rows, d, x, d, stem->embed_norm.weight, stem->embed_norm.bias, stem->embed_eps, x, d,
                                   scratch, scratch + rows, compute->parallel);
}

uform_status_t uform__stems_forward(const uform__encode_job_t *job, uform__compute_t *compute, size_t first,
                                    size_t count, const size_t *offsets, float *x, float *patches, float *projected,
                                    uform__call_context_t *context, double *decode_seconds) {
    const uform_model_t model = job->model;
    const uform__model_config_t *config = &model->config;
    size_t d = config->hidden;
    const uform__stem_t *stem = &model->stems[job->modality];
    if (job->source == UFORM__SOURCE_TEXT || job->source == UFORM__SOURCE_CHOOSE) {
        for (size_t i = 0; i < count; ++i)
            (job->ids ? token_rows : text_rows)(job, first + i, x + offsets[i] * d);
        embed_norm(compute, stem, d, x, offsets[count], projected);
        return UFORM_OK;
    }
    size_t patch_rows = offsets[count] - count * uform__stem_extra_rows(model, job->modality);
    size_t width = uform__stem_patch_width(config, job->modality);
    const float *rows_in = patches;
    uform_status_t status = UFORM_OK;
    if (job->source == UFORM__SOURCE_PREPARED) {
        /* Decoded ahead (uform_media_prepare): read in place when the chunk's items lie one after
         * another there (no item between them failed), else gathered into `patches`. */
        size_t item_floats = job->prepared_rows_per_item * width;
        const size_t *items = job->prepared_items + first;
        int consecutive = 1;
        for (size_t i = 1; i < count; ++i) consecutive &= items[i] == items[0] + i;
        if (consecutive) rows_in = job->prepared_rows + items[0] * item_floats;
        else
            for (size_t i = 0; i < count; ++i)
                memcpy(patches + i * item_floats, job->prepared_rows + items[i] * item_floats, item_floats * sizeof(float));
    } else {
        status = decode_chunk(job, compute, first, count, offsets, patches, context, decode_seconds);
        if (status != UFORM_OK) return status;
    }
    status = uform__linear_forward(compute, &stem->patch, patch_rows, rows_in, width, projected, d, d, 0,
                                   context->outcome);
    if (status != UFORM_OK) return status;
    status = (model->arch.published ? published_patches : embed_patches)(job, x, projected, count, offsets);
    embed_norm(compute, stem, d, x, offsets[count], projected);
    return status;
}

/* Media: decode and preprocess the chunk's items in parallel into `patches`. */
static uform_status_t decode_chunk(const uform__encode_job_t *job, uform__compute_t *compute, size_t first, size_t count,
                                   const size_t *offsets, float *patches, uform__call_context_t *context,
                                   double *decode_seconds) {
    uform_outcome_t *outcomes = calloc(count, sizeof *outcomes);
    uform_status_t *statuses = calloc(count, sizeof *statuses);
    if (!outcomes || !statuses) {
        free(outcomes), free(statuses);
        return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function, "cannot allocate item records");
    }
    media_loop_t loop = {job, first, offsets, patches, compute->signal, outcomes, statuses};
    double start = uform__seconds_now();
    uform__parallel_for(compute->parallel, count, media_prong, &loop);
    *decode_seconds += uform__seconds_now() - start;
    uform_status_t status = UFORM_OK;
    for (size_t i = 0; i < count; ++i) {
        if (statuses[i] == UFORM_OK) continue;
        status = uform__fail(context->outcome, statuses[i], context->function, "%s[%zu]: %s", job->inputs_name,
                             first + i, outcomes[i].message);
        break;
    }
    free(outcomes), free(statuses);
    return status;
}

/* x rows of the chunk: CLS, then each projected patch plus its positions and the modality vector. */
static uform_status_t embed_patches(const uform__encode_job_t *job, float *x, const float *projected, size_t count,
                                    const size_t *offsets) {
    const uform__model_config_t *config = &job->model->config;
    const uform__stem_t *stem = &job->model->stems[job->modality];
    size_t d = config->hidden;
    /* Patches per video frame slot (only for video: a model without video has no video geometry). */
    size_t side = job->modality == UFORM_MODALITY_VIDEO ? config->video_size / config->video_patch : 1;
    size_t per_time = side * side;
    for (size_t i = 0; i < count; ++i) {
        float *rows = x + offsets[i] * d;
        const float *source = projected + (offsets[i] - i) * d;
        size_t tokens = offsets[i + 1] - offsets[i];
        for (size_t c = 0; c < d; ++c) rows[c] = stem->cls[c] + stem->positions[c] + stem->modality[c];
        for (size_t k = 1; k < tokens; ++k) {
            float *row = rows + k * d;
            const float *patch = source + (k - 1) * d;
            /* Video positions: space[k'+1] + time[τ] for tubelet k − 1 = τ·P + k'. */
            size_t space = job->modality == UFORM_MODALITY_VIDEO ? (k - 1) % per_time + 1 : k;
            const float *position = stem->positions + space * d;
            const float *time = job->modality == UFORM_MODALITY_VIDEO ? stem->time + ((k - 1) / per_time) * d : NULL;
            for (size_t c = 0; c < d; ++c) row[c] = patch[c] + position[c] + stem->modality[c] + (time ? time[c] : 0.0f);
        }
    }
    return UFORM_OK;
}

/* A published image tower's rows (docs/checkpoints.md): with `cls_positioned` (CLIP) the class row
 * is cls + positions[0] and patch k gets positions[k + 1]; otherwise (UForm 3, SigLIP) patch k gets
 * positions[k] and the class row (if any) and the register rows come first without positions. */
static uform_status_t published_patches(const uform__encode_job_t *job, float *x, const float *projected, size_t count,
                                        const size_t *offsets) {
    const uform__stem_t *stem = &job->model->stems[job->modality];
    size_t d = job->model->config.hidden, extra = uform__stem_extra_rows(job->model, job->modality);
    for (size_t i = 0; i < count; ++i) {
        float *rows = x + offsets[i] * d;
        const float *source = projected + (offsets[i] - i * extra) * d;
        size_t patches = offsets[i + 1] - offsets[i] - extra;
        size_t first_position = 0;
        if (stem->cls) {
            const float *position = stem->cls_positioned ? stem->positions : NULL;
            for (size_t c = 0; c < d; ++c) rows[c] = stem->cls[c] + (position ? position[c] : 0.0f);
            rows += d;
            first_position = stem->cls_positioned ? 1 : 0;
        }
        if (stem->register_count) {
            memcpy(rows, stem->registers, stem->register_count * d * sizeof(float));
            rows += stem->register_count * d;
        }
        for (size_t k = 0; k < patches; ++k) {
            const float *patch = source + k * d, *position = stem->positions + (first_position + k) * d;
            float *row = rows + k * d;
            for (size_t c = 0; c < d; ++c) row[c] = patch[c] + position[c];
        }
    }
    return UFORM_OK;
}
