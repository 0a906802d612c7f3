/*
 * The trainer's life: init (a fresh model drawn from the seed, or a resumed checkpoint), describe,
 * save, snapshot, free. The verbs run on the executor the trainer was made over.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "core/outcome.h"
#include "exec/executor.h"
#include "mesh/mesh.h"
#include "train/trainer.h"

/* The architecture a fresh trainer builds: the named size, then every non-zero field. Checked by
 * printing it as the checkpoint's config and parsing that back (the loader's own rules). */
static uform_status_t architecture(const uform_trainer_config_t *given, uform__model_config_t *config,
                                   uform_outcome_t *outcome, const char *function) {
    const char *size = given->size[0] ? given->size : "tiny";
    char name[17];
    snprintf(name, sizeof name, "%s", size);
    uform_status_t status = uform__model_config_named(name, config, outcome, function);
    if (status != UFORM_OK)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "config.size '%s' is not tiny, small or base", name);
#define TAKE(field) \
    if (given->field) config->field = given->field;
    TAKE(hidden) TAKE(depth) TAKE(heads) TAKE(mlp) TAKE(temperature_groups) TAKE(modalities) TAKE(text_bytes)
    TAKE(image_size) TAKE(image_patch) TAKE(video_size) TAKE(video_patch) TAKE(video_frames) TAKE(video_tubelet)
    TAKE(audio_seconds) TAKE(audio_mels)
#undef TAKE
    if (given->modalities & ~0xFu)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "config.modalities 0x%x has bits beyond the four modalities",
                           given->modalities);
    if (given->embedding) {
        config->embedding = given->embedding;
        size_t e = given->embedding, defaults[3] = {e / 4, e / 2, e};
        config->matryoshka_count = 0;
        for (size_t i = 0; i < 3; ++i)
            if (defaults[i] && (config->matryoshka_count == 0 || defaults[i] != config->matryoshka[config->matryoshka_count - 1]))
                config->matryoshka[config->matryoshka_count++] = defaults[i];
    }
    if (given->matryoshka_count) {
        if (given->matryoshka_count > UFORM__MODEL_MAX_MATRYOSHKA)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "config.matryoshka_count %zu exceeds %d",
                               given->matryoshka_count, UFORM__MODEL_MAX_MATRYOSHKA);
        memcpy(config->matryoshka, given->matryoshka, given->matryoshka_count * sizeof(size_t));
        config->matryoshka_count = given->matryoshka_count;
    }
    char *json = uform__model_config_print(config);
    if (!json) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the text of the model's config");
    uform__model_config_t parsed;
    status = uform__model_config_parse(json, &parsed, outcome, function);
    free(json);
    if (status == UFORM_FORMAT || status == UFORM_UNSUPPORTED) {
        /* The loader's words ("uform.config: image.size 30 is not a multiple of image.patch 8") name the
         * field; for a trainer they are the caller's mistake, or (a head width past the attention
         * kernels') what this build cannot run. */
        char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
        snprintf(message, sizeof message, "%s", outcome ? outcome->message : "");
        return uform__fail(outcome, status == UFORM_FORMAT ? UFORM_INVALID_ARGUMENT : status, function, "config: %s",
                           strncmp(message, "uform.config: ", 14) == 0 ? message + 14 : message);
    }
    if (status != UFORM_OK) return status; /* out of memory, not the caller's mistake */
    for (size_t i = 0; i < config->matryoshka_count; ++i)
        if (i && config->matryoshka[i] <= config->matryoshka[i - 1])
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "config.matryoshka[%zu] = %zu does not grow from the prefix before it (%zu)", i,
                               config->matryoshka[i], config->matryoshka[i - 1]);
    return UFORM_OK;
}

static void optimizer_of(const uform_trainer_config_t *config, uform__optimizer_t *optimizer) {
    memset(optimizer, 0, sizeof *optimizer);
    optimizer->learning_rate = config->learning_rate, optimizer->beta1 = config->beta1;
    optimizer->beta2 = config->beta2, optimizer->epsilon = config->epsilon;
    optimizer->weight_decay = config->weight_decay, optimizer->clip_norm = config->clip_norm;
    optimizer->warmup_steps = config->warmup_steps, optimizer->total_steps = config->total_steps;
    optimizer->contrastive_weight = config->contrastive_weight, optimizer->choice_weight = config->choice_weight;
}

/* Resolved settings, where a field the caller left at zero takes the checkpoint's stored value. */
static void merge_stored(const uform__optimizer_t *given, const uform__optimizer_t *stored, uform__optimizer_t *resolved) {
#define KEEP(field) \
    if (given->field == 0) resolved->field = stored->field;
    KEEP(learning_rate) KEEP(beta1) KEEP(beta2) KEEP(epsilon) KEEP(weight_decay) KEEP(clip_norm)
    KEEP(warmup_steps) KEEP(total_steps) KEEP(contrastive_weight) KEEP(choice_weight)
#undef KEEP
}

typedef struct init_request_t {
    uform_trainer_config_t config;
    uform_trainer_t trainer;
} init_request_t;

static uform_status_t init_run(void *pointer, uform__call_context_t *context) {
    init_request_t *request = pointer;
    uform_trainer_t trainer = request->trainer;
    const uform_trainer_config_t *config = &request->config;
    const char *function = context->function;
    uform_outcome_t *outcome = context->outcome;
    if (!trainer->cpu_class) trainer->cpu_class = context->cpu_class;
    uform__optimizer_t given;
    optimizer_of(config, &given);
    uform_status_t status = uform__train_optimizer_resolve(&given, &trainer->optimizer, outcome, function);
    if (status != UFORM_OK) return status;
    if (config->resume) {
        uform__optimizer_t stored;
        int has_stored = 0;
        status = uform__train_resume(trainer, config->resume, config, &stored, &has_stored, outcome, function);
        if (status != UFORM_OK) return status;
        if (has_stored) merge_stored(&given, &stored, &trainer->optimizer);
    } else {
        status = architecture(config, &trainer->config, outcome, function);
        if (status == UFORM_OK) status = uform__train_params_create(trainer, outcome, function);
        if (status != UFORM_OK) return status;
        uform__train_params_initialise(trainer);
    }
    const uform__model_config_t *model = &trainer->config; /* its parse checked the head width */
    trainer->view.blocks = calloc(model->depth, sizeof *trainer->view.blocks);
    trainer->grad_view.blocks = calloc(model->depth, sizeof *trainer->grad_view.blocks);
    if (!trainer->view.blocks || !trainer->grad_view.blocks)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate %zu blocks", model->depth);
    uform__train_views_build(trainer);
    if (model->modalities & (1u << UFORM_MODALITY_AUDIO)) {
        status = uform__signal_mel_plan_init(&trainer->view.mel, model->audio_rate, UFORM__AUDIO_N_FFT, UFORM__AUDIO_HOP,
                                             model->audio_mels, 0.0, 0.0, outcome);
        if (status != UFORM_OK) return status;
        trainer->view.mel_ready = 1;
    }
    uform__train_bf16_refresh(trainer, uform__nn_kernels(trainer->cpu_class));
    return UFORM_OK;
}

static void trainer_destroy(uform_trainer_t trainer) {
    if (trainer->view.mel_ready) uform__signal_mel_plan_free(&trainer->view.mel);
    uform__train_params_free(trainer);
    free(trainer->memory.base);
    free(trainer->user_metadata);
    free(trainer->buckets);
    if (trainer->executor) uform__executor_release(trainer->executor);
    free(trainer);
}

/* The trainer of this process; over a mesh, uform_trainer_init_ram then joins the others. */
static uform_status_t init_local(uform_executor_t executor, const uform_trainer_config_t *config,
                                 uform_trainer_t *trainer, uform_outcome_t *outcome, const char *function) {
    if (!trainer) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "trainer is NULL");
    init_request_t request;
    memset(&request, 0, sizeof request);
    if (config) request.config = *config;
    if (request.config.compute != UFORM_COMPUTE_F32 && request.config.compute != UFORM_COMPUTE_BF16)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "config.compute %d is neither F32 (0) nor BF16 (1)",
                           (int)request.config.compute);
    uform_trainer_t made = calloc(1, sizeof *made);
    if (!made) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a trainer");
    made->compute = request.config.compute;
    made->seed = request.config.seed;
    if (request.config.cpu_class) {
        uform_status_t status = uform__cpu_class_resolve(request.config.cpu_class, &made->cpu_class, outcome, function);
        if (status != UFORM_OK) {
            free(made);
            return status;
        }
    }
    request.trainer = made;
    uform_outcome_t local;
    memset(&local, 0, sizeof local);
    uform__call_t call = {init_run, &request, outcome ? outcome : &local, UFORM_COMPLETION_BLOCKING, NULL, NULL, function};
    uform_status_t status = uform__executor_call(executor, &call);
    if (status != UFORM_OK) {
        trainer_destroy(made);
        return status;
    }
    if (executor) uform__executor_retain(executor);
    made->executor = executor;
    *trainer = made;
    return UFORM_OK;
}

UFORM_API uform_status_t uform_trainer_init_ram(uform_executor_t executor, const uform_trainer_config_t *config,
                                                uform_trainer_t *trainer, uform_outcome_t *outcome) {
    const char *function = __func__;
    if (trainer) *trainer = NULL;
    uform_trainer_t made = NULL;
    uform_status_t status = init_local(executor, config, trainer ? &made : NULL, outcome, function);
    /* The gradients' buckets: the same plan on every member, made before they meet so that a member
     * without the memory for it fails the init on every member. */
    if (status == UFORM_OK && config && config->mesh && config->mesh->count > 1) {
        made->buckets = uform__train_buckets_plan(made, &made->bucket_count);
        if (!made->buckets) status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot plan the gradients' buckets");
    }
    /* Over a mesh every member meets the others even after a failure, so none of them waits. */
    if (config && config->mesh) status = uform__train_mesh_join(made, config->mesh, status, outcome, function);
    if (status != UFORM_OK) {
        if (made) trainer_destroy(made);
        return status;
    }
    *trainer = made;
    return UFORM_OK;
}

UFORM_API uform_status_t uform_trainer_init_vram(uform_executor_t executor, const uform_trainer_config_t *config,
                                                 uform_trainer_t *trainer, uform_outcome_t *outcome) {
    (void)executor, (void)config;
    if (trainer) *trainer = NULL;
    return uform__fail(outcome, UFORM_UNSUPPORTED, __func__,
                       "this build of UForm has no GPU support: train in host memory with uform_trainer_init_ram");
}

UFORM_API void uform_trainer_free(uform_trainer_t trainer) {
    if (!trainer) return;
    if (trainer->executor)
        uform_executor_drain(trainer->executor, (uform_mood_t)__atomic_load_n(&trainer->executor->mood, __ATOMIC_ACQUIRE),
                             NULL);
    trainer_destroy(trainer);
}

UFORM_API uform_status_t uform_trainer_describe(uform_trainer_t trainer, uform_trainer_description_t *description) {
    if (!description) return UFORM_INVALID_ARGUMENT;
    memset(description, 0, sizeof *description);
    if (!trainer) return UFORM_INVALID_ARGUMENT;
    uform_model_description_t *model = &description->model;
    uform__model_config_describe(&trainer->config, model);
    for (size_t i = 0; i < trainer->param_count; ++i) {
        model->parameters += trainer->params[i].count;
        model->weight_bytes += trainer->params[i].count * (trainer->params[i].wide ? 4 : 2);
    }
    model->residency = UFORM_RESIDENCY_RAM;
    model->cpu_class = trainer->cpu_class;
    model->compute = trainer->compute;
    const uform__optimizer_t *optimizer = &trainer->optimizer;
    description->steps = trainer->steps;
    description->learning_rate = optimizer->learning_rate, description->beta1 = optimizer->beta1;
    description->beta2 = optimizer->beta2, description->epsilon = optimizer->epsilon;
    description->weight_decay = optimizer->weight_decay, description->clip_norm = optimizer->clip_norm;
    description->warmup_steps = optimizer->warmup_steps, description->total_steps = optimizer->total_steps;
    description->contrastive_weight = optimizer->contrastive_weight;
    description->choice_weight = optimizer->choice_weight;
    description->seed = trainer->seed;
    return UFORM_OK;
}

UFORM_API const char *uform_trainer_user_metadata(uform_trainer_t trainer) {
    return trainer ? trainer->user_metadata : NULL;
}

/* ---- save ---- */

static uform_status_t save_run(void *pointer, uform__call_context_t *context) {
    uform_trainer_save_t *request = pointer;
    uform__save_job_t job = {request->path, request->optimizer == UFORM_TRAINER_SAVE_WITH_OPTIMIZER,
                             request->user_metadata, &request->progress};
    return uform__train_save(request->trainer, &job, context);
}

UFORM_API uform_status_t uform_trainer_save(uform_trainer_save_t *request) {
    const char *function = __func__;
    if (!request) return UFORM_INVALID_ARGUMENT;
    if (!request->trainer || !request->path)
        return uform__fail(&request->outcome, UFORM_INVALID_ARGUMENT, function, "%s is NULL",
                           !request->trainer ? "trainer" : "path");
    if (request->optimizer != UFORM_TRAINER_SAVE_WITH_OPTIMIZER && request->optimizer != UFORM_TRAINER_SAVE_WEIGHTS_ONLY)
        return uform__fail(&request->outcome, UFORM_INVALID_ARGUMENT, function,
                           "optimizer %d is neither WITH_OPTIMIZER (0) nor WEIGHTS_ONLY (1)", (int)request->optimizer);
    uform__call_t call = {save_run, request, &request->outcome, request->completion, NULL, &request->progress, function};
    return uform__executor_call(request->trainer->executor, &call);
}

/* ---- snapshot ---- */

typedef struct snapshot_request_t {
    uform_trainer_t trainer;
    uform_cpu_class_t cpu_class;
    uform_compute_t compute;
    uform_model_t model;
} snapshot_request_t;

static uform_status_t snapshot_run(void *pointer, uform__call_context_t *context) {
    snapshot_request_t *request = pointer;
    uint8_t *bytes = NULL;
    size_t size = 0;
    uform_status_t status =
        uform__train_encode_weights(request->trainer, &bytes, &size, context->outcome, context->function);
    if (status != UFORM_OK) return status;
    return uform__model_load_bytes(bytes, size, request->cpu_class, request->compute, &request->model, context);
}

UFORM_API uform_status_t uform_trainer_snapshot(uform_trainer_t trainer, const uform_ram_options_t *ram_options,
                                                uform_model_t *model, uform_outcome_t *outcome) {
    const char *function = __func__;
    if (model) *model = NULL;
    if (!trainer || !model)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s is NULL", !trainer ? "trainer" : "model");
    snapshot_request_t request;
    memset(&request, 0, sizeof request);
    request.trainer = trainer;
    request.compute = ram_options ? ram_options->compute : UFORM_COMPUTE_F32;
    if (request.compute != UFORM_COMPUTE_F32 && request.compute != UFORM_COMPUTE_BF16)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "ram_options.compute %d is neither F32 (0) nor BF16 (1)", (int)request.compute);
    if (ram_options && ram_options->cpu_class) {
        uform_status_t status = uform__cpu_class_resolve(ram_options->cpu_class, &request.cpu_class, outcome, function);
        if (status != UFORM_OK) return status;
    }
    uform_outcome_t local;
    memset(&local, 0, sizeof local);
    uform__call_t call = {snapshot_run, &request, outcome ? outcome : &local, UFORM_COMPLETION_BLOCKING, NULL, NULL,
                          function};
    uform_status_t status = uform__executor_call(trainer->executor, &call);
    if (status == UFORM_OK) *model = request.model;
    return status;
}
