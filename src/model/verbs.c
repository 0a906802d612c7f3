/*
 * The public verbs: each gathers its request into a job, checks it before submission, and hands a
 * call to its executor; the call's body gathers the job again from the request (which the caller
 * keeps alive until final) and runs the shared pipeline.
 */
#include <string.h>

#include "core/outcome.h"
#include "model/encode.h"

/* Gathers the fields every encode request shares into a job. */
static uform__encode_job_t job_of(uform_model_t model, uform_modality_t modality, uform__source_t source,
                                  const uform_tape_t *inputs, uform_outputs_t outputs,
                                  const uform_encode_config_t *config, uform_encoded_t *encoded, const char *name) {
    uform__encode_job_t job;
    memset(&job, 0, sizeof job);
    /* A published folder runs each modality on its own tower (model.h). */
    job.model = uform__model_tower(model, modality), job.modality = modality, job.source = source, job.inputs = inputs;
    job.outputs = outputs, job.config = config, job.encoded = encoded, job.inputs_name = name;
    return job;
}

static uform_status_t submit(uform_executor_t executor, uform_completion_t completion, uform_arena_t arena,
                             uform__call_run_fn run, void *request, uform_outcome_t *outcome,
                             const uform_encode_config_t *config, const uform__encode_job_t *job,
                             const char *function) {
    if (!arena)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "arena is NULL: outputs land in an arena (uform_arena_for_executor)");
    uform_status_t status = uform__encode_validate(job, outcome, function);
    if (status != UFORM_OK) return status;
    uform__call_t call = {run, request, outcome, completion, arena, &config->progress, function};
    return uform__executor_call(executor, &call);
}

static uform_status_t text_run(void *pointer, uform__call_context_t *context) {
    uform_text_encode_t *request = pointer;
    uform__encode_job_t job = job_of(request->model, UFORM_MODALITY_TEXT, UFORM__SOURCE_TEXT, &request->texts, request->outputs, &request->config,
                                     &request->encoded, "texts");
    return uform__encode_run(&job, context);
}

UFORM_API uform_status_t uform_text_encode(uform_text_encode_t *request) {
    if (!request) return UFORM_INVALID_ARGUMENT;
    uform__encode_job_t job = job_of(request->model, UFORM_MODALITY_TEXT, UFORM__SOURCE_TEXT, &request->texts, request->outputs, &request->config,
                                     &request->encoded, "texts");
    return submit(request->executor, request->completion, request->arena, text_run, request, &request->outcome,
                  &request->config, &job, __func__);
}

static uform_status_t image_run(void *pointer, uform__call_context_t *context) {
    uform_image_encode_t *request = pointer;
    uform__encode_job_t job = job_of(request->model, UFORM_MODALITY_IMAGE, UFORM__SOURCE_IMAGE_FILES, &request->images, request->outputs, &request->config,
                                     &request->encoded, "images");
    return uform__encode_run(&job, context);
}

UFORM_API uform_status_t uform_image_encode(uform_image_encode_t *request) {
    if (!request) return UFORM_INVALID_ARGUMENT;
    uform__encode_job_t job = job_of(request->model, UFORM_MODALITY_IMAGE, UFORM__SOURCE_IMAGE_FILES, &request->images, request->outputs, &request->config,
                                     &request->encoded, "images");
    return submit(request->executor, request->completion, request->arena, image_run, request, &request->outcome,
                  &request->config, &job, __func__);
}

static uform_status_t pixels_run(void *pointer, uform__call_context_t *context) {
    uform_image_encode_pixels_t *request = pointer;
    uform__encode_job_t job = job_of(request->model, UFORM_MODALITY_IMAGE, UFORM__SOURCE_IMAGE_PIXELS, &request->pixels, request->outputs, &request->config,
                                     &request->encoded, "pixels");
    job.heights = request->heights, job.widths = request->widths;
    return uform__encode_run(&job, context);
}

UFORM_API uform_status_t uform_image_encode_pixels(uform_image_encode_pixels_t *request) {
    if (!request) return UFORM_INVALID_ARGUMENT;
    uform__encode_job_t job = job_of(request->model, UFORM_MODALITY_IMAGE, UFORM__SOURCE_IMAGE_PIXELS, &request->pixels, request->outputs, &request->config,
                                     &request->encoded, "pixels");
    job.heights = request->heights, job.widths = request->widths;
    return submit(request->executor, request->completion, request->arena, pixels_run, request, &request->outcome,
                  &request->config, &job, __func__);
}

static uform_status_t video_run(void *pointer, uform__call_context_t *context) {
    uform_video_encode_t *request = pointer;
    uform__encode_job_t job = job_of(request->model, UFORM_MODALITY_VIDEO, UFORM__SOURCE_VIDEO_FILES, &request->videos, request->outputs, &request->config,
                                     &request->encoded, "videos");
    return uform__encode_run(&job, context);
}

UFORM_API uform_status_t uform_video_encode(uform_video_encode_t *request) {
    if (!request) return UFORM_INVALID_ARGUMENT;
    uform__encode_job_t job = job_of(request->model, UFORM_MODALITY_VIDEO, UFORM__SOURCE_VIDEO_FILES, &request->videos, request->outputs, &request->config,
                                     &request->encoded, "videos");
#if !defined(UFORM_WITH_FFMPEG)
    return uform__fail(&request->outcome, UFORM_UNSUPPORTED, __func__,
                       "this build has no FFmpeg (configured with UFORM_WITH_FFMPEG=OFF), so it decodes no video");
#endif
    return submit(request->executor, request->completion, request->arena, video_run, request, &request->outcome,
                  &request->config, &job, __func__);
}

static uform_status_t audio_run(void *pointer, uform__call_context_t *context) {
    uform_audio_encode_t *request = pointer;
    uform__encode_job_t job = job_of(request->model, UFORM_MODALITY_AUDIO, UFORM__SOURCE_AUDIO_FILES, &request->recordings, request->outputs, &request->config,
                                     &request->encoded, "recordings");
    return uform__encode_run(&job, context);
}

UFORM_API uform_status_t uform_audio_encode(uform_audio_encode_t *request) {
    if (!request) return UFORM_INVALID_ARGUMENT;
    uform__encode_job_t job = job_of(request->model, UFORM_MODALITY_AUDIO, UFORM__SOURCE_AUDIO_FILES, &request->recordings, request->outputs, &request->config,
                                     &request->encoded, "recordings");
    return submit(request->executor, request->completion, request->arena, audio_run, request, &request->outcome,
                  &request->config, &job, __func__);
}

static uform_status_t samples_run(void *pointer, uform__call_context_t *context) {
    uform_audio_encode_samples_t *request = pointer;
    uform__encode_job_t job = job_of(request->model, UFORM_MODALITY_AUDIO, UFORM__SOURCE_AUDIO_SAMPLES, &request->samples, request->outputs, &request->config,
                                     &request->encoded, "samples");
    job.sample_rate = request->sample_rate;
    return uform__encode_run(&job, context);
}

UFORM_API uform_status_t uform_audio_encode_samples(uform_audio_encode_samples_t *request) {
    if (!request) return UFORM_INVALID_ARGUMENT;
    uform__encode_job_t job = job_of(request->model, UFORM_MODALITY_AUDIO, UFORM__SOURCE_AUDIO_SAMPLES, &request->samples, request->outputs, &request->config,
                                     &request->encoded, "samples");
    job.sample_rate = request->sample_rate;
    return submit(request->executor, request->completion, request->arena, samples_run, request, &request->outcome,
                  &request->config, &job, __func__);
}

static void choose_job(uform_text_choose_t *request, uform__encode_job_t *job) {
    memset(job, 0, sizeof *job);
    job->model = uform__model_tower(request->model, UFORM_MODALITY_TEXT);
    job->modality = UFORM_MODALITY_TEXT;
    job->source = UFORM__SOURCE_CHOOSE;
    job->inputs = &request->texts;
    job->config = &request->config;
    job->choices = &request->choices;
    job->groups = request->groups;
    job->probabilities = &request->probabilities;
    job->inputs_name = "texts";
}

static uform_status_t choose_run(void *pointer, uform__call_context_t *context) {
    uform__encode_job_t job;
    choose_job(pointer, &job);
    return uform__encode_run(&job, context);
}

UFORM_API uform_status_t uform_text_choose(uform_text_choose_t *request) {
    if (!request) return UFORM_INVALID_ARGUMENT;
    uform__encode_job_t job;
    choose_job(request, &job);
    return submit(request->executor, request->completion, request->arena, choose_run, request, &request->outcome,
                  &request->config, &job, __func__);
}
