/*
 * Training checkpoints (docs/training.md): what uform_model_load_ram loads — BF16 matrices, tables and
 * biases, F32 norms and temperatures, the config in "uform.config" — plus the optimizer's state:
 * `optimizer.weights.{name}` (F32 master weights), `optimizer.m.{name}`, `optimizer.v.{name}` (F32)
 * and `optimizer.step` (I64 [1]), the optimizer settings in "uform.optimizer" and the caller's
 * "uform.user". Written through the atomic safetensors writer; read back by resume.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/outcome.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "train/trainer.h"

/* The settings' JSON, or NULL when memory runs out (a key that failed to be added would make a
 * checkpoint whose resume refuses it, so no text is better than a text with holes). */
char *uform__train_optimizer_json(const uform__optimizer_t *optimizer, uint64_t seed) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    const struct { const char *key; double value; } fields[] = {
        {"learning_rate", optimizer->learning_rate}, {"beta1", optimizer->beta1}, {"beta2", optimizer->beta2},
        {"epsilon", optimizer->epsilon}, {"weight_decay", optimizer->weight_decay}, {"clip_norm", optimizer->clip_norm},
        {"warmup_steps", (double)optimizer->warmup_steps}, {"total_steps", (double)optimizer->total_steps},
        {"contrastive_weight", optimizer->contrastive_weight}, {"choice_weight", optimizer->choice_weight},
        {"seed", (double)seed}};
    int added = 1;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; ++i)
        added &= cJSON_AddNumberToObject(root, fields[i].key, fields[i].value) != NULL;
    char *json = added ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return json;
}

/* The stored settings, exactly as resolved then (a value of 0 was stored as 0, e.g. no decay).
 * Every key of docs/training.md must be there: a resume that silently ran on defaults would not
 * continue the run it claims to. UFORM_FORMAT names the key; UFORM_OUT_OF_MEMORY when the text
 * could not be parsed for lack of memory. */
static uform_status_t optimizer_parse(const char *json, const char *path, uform__optimizer_t *optimizer, uint64_t *seed,
                                      uform_outcome_t *outcome, const char *function) {
    cJSON *root = NULL;
    uform_status_t status = uform__json_parse(json, strlen(json) + 1, &root, NULL, NULL);
    if (status == UFORM_OUT_OF_MEMORY)
        return uform__fail(outcome, status, function, "cannot allocate the parsed uform.optimizer of '%s' (%zu bytes of JSON)",
                           path, strlen(json));
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return uform__fail(outcome, UFORM_FORMAT, function, "checkpoint '%s': uform.optimizer is not a JSON object", path);
    }
    struct { const char *key; double *real; uint64_t *count; } fields[] = {
        {"learning_rate", &optimizer->learning_rate, NULL}, {"beta1", &optimizer->beta1, NULL},
        {"beta2", &optimizer->beta2, NULL}, {"epsilon", &optimizer->epsilon, NULL},
        {"weight_decay", &optimizer->weight_decay, NULL}, {"clip_norm", &optimizer->clip_norm, NULL},
        {"warmup_steps", NULL, &optimizer->warmup_steps}, {"total_steps", NULL, &optimizer->total_steps},
        {"contrastive_weight", &optimizer->contrastive_weight, NULL}, {"choice_weight", &optimizer->choice_weight, NULL},
        {"seed", NULL, seed}};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0] && status == UFORM_OK; ++i) {
        const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, fields[i].key);
        double value = cJSON_IsNumber(item) ? item->valuedouble : NAN;
        if (!item)
            status = uform__fail(outcome, UFORM_FORMAT, function, "checkpoint '%s': uform.optimizer lacks '%s'", path,
                                 fields[i].key);
        else if (fields[i].real && !isfinite(value))
            status = uform__fail(outcome, UFORM_FORMAT, function, "checkpoint '%s': uform.optimizer '%s' is not a number",
                                 path, fields[i].key);
        else if (fields[i].count && !(value >= 0 && value <= 9007199254740991.0 && value == floor(value)))
            status = uform__fail(outcome, UFORM_FORMAT, function,
                                 "checkpoint '%s': uform.optimizer '%s' is not an integer in 0 ... 2^53 - 1", path,
                                 fields[i].key);
        else if (fields[i].real) *fields[i].real = value;
        else *fields[i].count = (uint64_t)value;
    }
    cJSON_Delete(root);
    return status;
}

/* ---- writing ---- */

typedef struct tensor_list_t {
    uform__safetensors_source_t *sources;
    uint64_t *shapes;   /* 2 per source */
    char *names;        /* 96 bytes per source */
    size_t count;
} tensor_list_t;

static void add(tensor_list_t *list, const char *prefix, const uform__param_t *param, uform__safetensors_dtype_t dtype,
                const void *data) {
    size_t i = list->count++;
    char *name = list->names + i * 96;
    snprintf(name, 96, "%s%s", prefix, param->spec.name);
    list->shapes[2 * i] = param->spec.rows, list->shapes[2 * i + 1] = param->spec.columns;
    uform__safetensors_source_t *source = &list->sources[i];
    source->name = name, source->dtype = dtype;
    source->rank = param->spec.columns ? 2 : 1;
    source->shape = &list->shapes[2 * i];
    source->data = data;
}

typedef struct save_progress_t {
    uform__call_context_t *context;
    const uform_progress_t *options;
    int begun;
} save_progress_t;

static int on_bytes(void *state, uint64_t written, uint64_t total) {
    save_progress_t *progress = state;
    if (!progress->begun) {
        uform__progress_begin(&progress->context->progress, progress->options, (size_t)total);
        progress->begun = 1;
    }
    return uform__progress_advance(&progress->context->progress, (size_t)written) == UFORM_CANCEL;
}

/* Builds the tensors and metadata of a checkpoint, then either writes `path` or encodes to memory. */
static uform_status_t emit(uform_trainer_t trainer, int with_optimizer, const char *user, const char *path,
                           uform__call_context_t *context, const uform_progress_t *progress_options, uint8_t **bytes,
                           size_t *size, uform_outcome_t *outcome, const char *function) {
    size_t n = trainer->param_count, capacity = n * (with_optimizer ? 4 : 1) + 1;
    tensor_list_t list = {calloc(capacity, sizeof *list.sources), calloc(2 * capacity, sizeof *list.shapes),
                          calloc(capacity, 96), 0};
    size_t narrow = 0;
    for (size_t i = 0; i < n; ++i)
        if (!trainer->params[i].wide) narrow += trainer->params[i].count;
    uint16_t *stored = malloc((narrow + 1) * sizeof *stored);
    char *config_json = uform__model_config_print(&trainer->config);
    char *optimizer_json = uform__train_optimizer_json(&trainer->optimizer, trainer->seed);
    uform_status_t status = UFORM_OK;
    if (!list.sources || !list.shapes || !list.names || !stored || !config_json || !optimizer_json) {
        status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the checkpoint's %zu tensors (%zu MiB)",
                             capacity, (narrow * 2) >> 20);
    } else {
        size_t cursor = 0;
        for (size_t i = 0; i < n; ++i) {
            const uform__param_t *param = &trainer->params[i];
            const float *weights = trainer->weights + param->offset;
            if (param->wide) {
                add(&list, "", param, UFORM__SAFETENSORS_F32, weights);
            } else {
                for (size_t e = 0; e < param->count; ++e) stored[cursor + e] = uform__nn_f32_to_bf16_one(weights[e]);
                add(&list, "", param, UFORM__SAFETENSORS_BF16, stored + cursor);
                cursor += param->count;
            }
            if (with_optimizer) {
                add(&list, "optimizer.weights.", param, UFORM__SAFETENSORS_F32, weights);
                add(&list, "optimizer.m.", param, UFORM__SAFETENSORS_F32, trainer->m + param->offset);
                add(&list, "optimizer.v.", param, UFORM__SAFETENSORS_F32, trainer->v + param->offset);
            }
        }
        int64_t step = (int64_t)trainer->steps;
        uint64_t one = 1;
        if (with_optimizer) {
            uform__safetensors_source_t *source = &list.sources[list.count++];
            source->name = "optimizer.step", source->dtype = UFORM__SAFETENSORS_I64, source->rank = 1;
            source->shape = &one, source->data = &step;
        }
        uform__safetensors_pair_t metadata[4] = {{"uform.format", "4"},
                                                 {"uform.config", config_json},
                                                 {"uform.optimizer", optimizer_json},
                                                 {"uform.user", user ? user : ""}};
        save_progress_t progress = {context, progress_options, 0};
        uform__safetensors_write_t request = {list.sources, list.count, metadata, user ? 4u : 3u,
                                              path && progress_options ? on_bytes : NULL, &progress};
        status = path ? uform__safetensors_write(path, &request, outcome)
                      : uform__safetensors_encode(&request, bytes, size, outcome);
        if (status != UFORM_OK && outcome) snprintf(outcome->function, sizeof outcome->function, "%s", function);
    }
    free(list.sources), free(list.shapes), free(list.names), free(stored), free(config_json), free(optimizer_json);
    return status;
}

uform_status_t uform__train_save(uform_trainer_t trainer, const uform__save_job_t *job, uform__call_context_t *context) {
    uform_status_t status = emit(trainer, job->with_optimizer, job->user_metadata, job->path, context, job->progress, NULL,
                                 NULL, context->outcome, context->function);
    if (status == UFORM_CANCELLED)
        return uform__fail(context->outcome, UFORM_CANCELLED, context->function,
                           "cancelled by the progress handler; '%s' keeps its previous contents", job->path);
    return status;
}

uform_status_t uform__train_encode_weights(uform_trainer_t trainer, uint8_t **bytes, size_t *size,
                                           uform_outcome_t *outcome, const char *function) {
    return emit(trainer, 0, NULL, NULL, NULL, NULL, bytes, size, outcome, function);
}

/* ---- resuming ---- */

/* Reads a tensor of `shape` (rank 1 or 2) as F32 into `target`; 0 when missing or misshapen. */
static int read_floats(const uform__safetensors_t *file, const char *name, const uform__param_t *param, float *target,
                       int f32_only) {
    const uform__safetensors_tensor_t *tensor = uform__safetensors_find(file, name);
    if (!tensor) return 0;
    uint32_t rank = param->spec.columns ? 2 : 1;
    if (tensor->rank != rank || tensor->shape[0] != param->spec.rows || (rank == 2 && tensor->shape[1] != param->spec.columns))
        return -1;
    if (tensor->dtype != UFORM__SAFETENSORS_F32 &&
        (f32_only || (tensor->dtype != UFORM__SAFETENSORS_BF16 && tensor->dtype != UFORM__SAFETENSORS_F16)))
        return -1;
    uform__model_widen(tensor->dtype, tensor->data, param->count, target);
    return 1;
}

/* A non-zero requested architecture field must equal the checkpoint's. */
static uform_status_t compare(const uform__model_config_t *stored, const uform_trainer_config_t *requested,
                              const char *path, uform_outcome_t *outcome, const char *function) {
    struct { const char *name; size_t want, have; } fields[] = {
        {"hidden", requested->hidden, stored->hidden},
        {"depth", requested->depth, stored->depth},
        {"heads", requested->heads, stored->heads},
        {"mlp", requested->mlp, stored->mlp},
        {"embedding", requested->embedding, stored->embedding},
        {"temperature_groups", requested->temperature_groups, stored->temperature_groups},
        {"modalities", requested->modalities, stored->modalities},
        {"text_bytes", requested->text_bytes, stored->text_bytes},
        {"image_size", requested->image_size, stored->image_size},
        {"image_patch", requested->image_patch, stored->image_patch},
        {"video_size", requested->video_size, stored->video_size},
        {"video_patch", requested->video_patch, stored->video_patch},
        {"video_frames", requested->video_frames, stored->video_frames},
        {"video_tubelet", requested->video_tubelet, stored->video_tubelet},
        {"audio_seconds", requested->audio_seconds, stored->audio_seconds},
        {"audio_mels", requested->audio_mels, stored->audio_mels},
        {"matryoshka_count", requested->matryoshka_count, stored->matryoshka_count},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; ++i)
        if (fields[i].want && fields[i].want != fields[i].have)
            return uform__fail(outcome, UFORM_CONFIG_MISMATCH, function,
                               "config.%s is %zu, but the checkpoint '%s' has %zu", fields[i].name, fields[i].want, path,
                               fields[i].have);
    for (size_t i = 0; i < requested->matryoshka_count && i < 8; ++i)
        if (requested->matryoshka[i] != stored->matryoshka[i])
            return uform__fail(outcome, UFORM_CONFIG_MISMATCH, function,
                               "config.matryoshka[%zu] is %zu, but the checkpoint '%s' has %zu", i,
                               requested->matryoshka[i], path, stored->matryoshka[i]);
    if (requested->size[0] && strcmp(requested->size, stored->size) != 0)
        return uform__fail(outcome, UFORM_CONFIG_MISMATCH, function, "config.size is '%s', but the checkpoint '%s' has '%s'",
                           requested->size, path, stored->size);
    return UFORM_OK;
}

uform_status_t uform__train_resume(uform_trainer_t trainer, const char *path, const uform_trainer_config_t *requested,
                                   uform__optimizer_t *stored, int *has_stored, uform_outcome_t *outcome,
                                   const char *function) {
    *has_stored = 0;
    struct stat info;
    if (path && stat(path, &info) == 0 && S_ISDIR(info.st_mode))
        return uform__fail(outcome, UFORM_UNSUPPORTED, function,
                           "'%s' is a folder: training resumes from a UForm checkpoint file; published model folders "
                           "(docs/checkpoints.md) are loaded for inference only",
                           path);
    uform__safetensors_t *file = NULL;
    uform_status_t status = uform__safetensors_open(path, &file, outcome);
    if (status != UFORM_OK) {
        if (outcome) snprintf(outcome->function, sizeof outcome->function, "%s", function);
        return status;
    }
    const char *format = uform__safetensors_metadata_find(file, "uform.format");
    const char *config_json = uform__safetensors_metadata_find(file, "uform.config");
    if (!format || strcmp(format, "4") != 0 || !config_json) {
        uform__safetensors_close(file);
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "'%s' is not a UForm 4 checkpoint (its metadata lacks uform.format \"4\" or uform.config)", path);
    }
    status = uform__model_config_parse(config_json, &trainer->config, outcome, function);
    if (status == UFORM_OK) status = compare(&trainer->config, requested, path, outcome, function);
    if (status == UFORM_OK) status = uform__train_params_create(trainer, outcome, function);
    for (size_t i = 0; status == UFORM_OK && i < trainer->param_count; ++i) {
        const uform__param_t *param = &trainer->params[i];
        char name[128];
        snprintf(name, sizeof name, "optimizer.weights.%s", param->spec.name);
        int found = read_floats(file, name, param, trainer->weights + param->offset, 1);
        if (found == 0) found = read_floats(file, param->spec.name, param, trainer->weights + param->offset, 0);
        if (found != 1) {
            status = uform__fail(outcome, UFORM_FORMAT, function, "checkpoint '%s': tensor '%s' is %s (expected %s [%zu%s%.0zu])",
                                 path, found == 0 ? param->spec.name : name, found == 0 ? "missing" : "misshapen",
                                 param->wide ? "F32" : "BF16, F16 or F32", param->spec.rows,
                                 param->spec.columns ? ", ..." : "", (size_t)0);
            break;
        }
        const char *moments[2] = {"optimizer.m.", "optimizer.v."};
        float *targets[2] = {trainer->m + param->offset, trainer->v + param->offset};
        for (int k = 0; k < 2 && status == UFORM_OK; ++k) {
            snprintf(name, sizeof name, "%s%s", moments[k], param->spec.name);
            if (read_floats(file, name, param, targets[k], 1) < 0)
                status = uform__fail(outcome, UFORM_FORMAT, function, "checkpoint '%s': tensor '%s' is not F32 of '%s''s shape",
                                     path, name, param->spec.name);
        }
    }
    if (status == UFORM_OK) {
        const uform__safetensors_tensor_t *step = uform__safetensors_find(file, "optimizer.step");
        if (step) {
            if (step->dtype != UFORM__SAFETENSORS_I64 || step->element_count != 1) {
                status = uform__fail(outcome, UFORM_FORMAT, function, "checkpoint '%s': optimizer.step is not I64 [1]", path);
            } else {
                int64_t value;
                memcpy(&value, step->data, sizeof value);
                trainer->steps = value > 0 ? (uint64_t)value : 0;
            }
        }
        const char *optimizer_json = uform__safetensors_metadata_find(file, "uform.optimizer");
        if (status == UFORM_OK && optimizer_json) {
            memset(stored, 0, sizeof *stored);
            status = optimizer_parse(optimizer_json, path, stored, &trainer->seed, outcome, function);
            *has_stored = status == UFORM_OK;
        }
        const char *user = uform__safetensors_metadata_find(file, "uform.user");
        if (status == UFORM_OK && user) {
            trainer->user_metadata = strdup(user);
            if (!trainer->user_metadata)
                status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a copy of the checkpoint's uform.user");
        }
    }
    uform__safetensors_close(file);
    return status;
}
