/*
 * Loading a checkpoint: map it, check every tensor against the config (docs/model.md), widen the small
 * tables to F32 and pack the large matrices once for the kernels of the load's CPU class.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/cpu.h"
#include "core/outcome.h"
#include "exec/call.h"
#include "exec/executor.h"
#include "kernels/nn.h"
#include "model/encode.h"
#include "model/model.h"
#include "published/published.h"

static const char *const modality_names[4] = {"text", "image", "video", "audio"};

const char *uform__modality_name(uform_modality_t modality) {
    return (unsigned)modality < 4 ? modality_names[modality] : "unknown";
}

/* ---- owned allocations ---- */

static void *own(uform_model_t model, size_t bytes) {
    if (model->owned_count == model->owned_capacity) {
        size_t capacity = model->owned_capacity ? model->owned_capacity * 2 : 64;
        void **grown = realloc(model->owned, capacity * sizeof *grown);
        if (!grown) return NULL;
        model->owned = grown, model->owned_capacity = capacity;
    }
    void *memory = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (memory) model->owned[model->owned_count++] = memory;
    return memory;
}

static void *own_for_i8(void *state, size_t bytes) { return own(state, bytes); }

void *uform__model_own(uform_model_t model, size_t bytes) { return own(model, bytes); }

/* Frees the panels published towers' layers packed on first use (lazy.c). */
static void release_lazy(uform_model_t model) {
    for (size_t i = 0; model->blocks && i < model->config.depth; ++i) {
        uform__block_t *block = &model->blocks[i];
        uform__linear_t *layers[7] = {&block->qkv, &block->out, &block->up, &block->down, &block->q, &block->k, &block->v};
        for (int j = 0; j < 7; ++j) uform__linear_lazy_release(layers[j]);
    }
    for (int m = 0; m < 4; ++m) {
        uform__stem_t *stem = &model->stems[m];
        uform__linear_t *layers[6] = {&stem->patch, &stem->projection, &stem->pool.keys, &stem->pool.out, &stem->pool.up,
                                      &stem->pool.down};
        for (int j = 0; j < 6; ++j) uform__linear_lazy_release(layers[j]);
        for (size_t j = 0; j < stem->dense_count; ++j) uform__linear_lazy_release(&stem->dense[j]);
    }
}

UFORM_API void uform_model_free(uform_model_t model) {
    if (!model) return;
    if (model->release) model->release(model);
    release_lazy(model);
    uform__safetensors_close(model->file); /* before the owned memory: a checkpoint in RAM is owned */
    for (size_t i = 0; i < model->owned_count; ++i) free(model->owned[i]);
    free(model->owned);
    free(model->blocks);
    if (model->mel_ready) uform__signal_mel_plan_free(&model->mel);
    free(model);
}

/* ---- the tensor checks ---- */

typedef struct loader_t {
    uform_model_t model;
    const char *function;
    uform_outcome_t *outcome;
    uform_status_t status;
    size_t expected;      /* tensors the config asks for */
    unsigned char *seen;  /* [tensor count] by the file's (name-sorted) index */
} loader_t;

/* The index of a tensor the file answered (tensors are one name-sorted array). */
static void mark_seen(loader_t *loader, const uform__safetensors_tensor_t *tensor) {
    size_t count = uform__safetensors_count(loader->model->file);
    const uform__safetensors_tensor_t *first = count ? uform__safetensors_at(loader->model->file, 0) : NULL;
    if (first && tensor >= first && tensor < first + count && uform__safetensors_at(loader->model->file, (size_t)(tensor - first)) == tensor)
        loader->seen[tensor - first] = 1;
}

static const char *shape_text(const uint64_t *shape, uint32_t rank, char *buffer, size_t capacity) {
    size_t used = (size_t)snprintf(buffer, capacity, "[");
    for (uint32_t i = 0; i < rank && used < capacity; ++i)
        used += (size_t)snprintf(buffer + used, capacity - used, "%s%llu", i ? ", " : "", (unsigned long long)shape[i]);
    if (used < capacity) snprintf(buffer + used, capacity - used, "]");
    return buffer;
}

/* Finds `name` with exactly `rank` dimensions `rows` (and `columns` when rank is 2) in a float dtype. */
static const uform__safetensors_tensor_t *expect(loader_t *loader, const char *name, uint32_t rank, size_t rows,
                                                 size_t columns) {
    if (loader->status != UFORM_OK) return NULL;
    loader->expected += 1;
    const uform__safetensors_tensor_t *tensor = uform__safetensors_find(loader->model->file, name);
    uint64_t wanted[2] = {rows, columns};
    char want[64], got[128];
    shape_text(wanted, rank, want, sizeof want);
    if (!tensor) {
        loader->status = uform__fail(loader->outcome, UFORM_FORMAT, loader->function,
                                     "tensor '%s' %s is missing from the checkpoint", name, want);
        return NULL;
    }
    int shape_ok = tensor->rank == rank && tensor->shape[0] == rows && (rank < 2 || tensor->shape[1] == columns);
    if (!shape_ok) {
        loader->status = uform__fail(loader->outcome, UFORM_FORMAT, loader->function,
                                     "tensor '%s' has shape %s, expected %s", name,
                                     shape_text(tensor->shape, tensor->rank, got, sizeof got), want);
        return NULL;
    }
    if (tensor->dtype != UFORM__SAFETENSORS_BF16 && tensor->dtype != UFORM__SAFETENSORS_F32 &&
        tensor->dtype != UFORM__SAFETENSORS_F16) {
        loader->status = uform__fail(loader->outcome, UFORM_FORMAT, loader->function,
                                     "tensor '%s' is %s, expected BF16, F16 or F32", name,
                                     uform__safetensors_dtype_name(tensor->dtype));
        return NULL;
    }
    loader->model->parameters += tensor->element_count;
    loader->model->weight_bytes += tensor->length;
    mark_seen(loader, tensor);
    return tensor;
}

/* A vector or table, widened to F32 in memory the model owns. */
static const float *widen(loader_t *loader, const char *name, uint32_t rank, size_t rows, size_t columns) {
    const uform__safetensors_tensor_t *tensor = expect(loader, name, rank, rows, columns);
    if (!tensor) return NULL;
    size_t count = (size_t)tensor->element_count;
    float *values = own(loader->model, count * sizeof(float));
    if (!values) {
        loader->status = uform__fail(loader->outcome, UFORM_OUT_OF_MEMORY, loader->function,
                                     "cannot allocate %zu floats for '%s'", count, name);
        return NULL;
    }
    uform__model_widen(tensor->dtype, tensor->data, count, values);
    return values;
}

/*
 * A quantized matrix (docs/int8.md, "Quantized checkpoints"): `name` as I8 [rows, columns] and
 * `name`_scale as F32 [rows]. I8 compute packs them as they are for the layers it runs in int8
 * (bit-identical to quantizing the float weights at load); otherwise they are dequantized once,
 * w = q·scale in F32, and the layer runs in float.
 */
static void quantized_linear(loader_t *loader, uform__linear_t *layer, const uform__safetensors_tensor_t *tensor,
                             const char *name, size_t rows, size_t columns) {
    uint64_t wanted[2] = {rows, columns};
    char want[64], got[128], scale_name[112];
    if (tensor->rank != 2 || tensor->shape[0] != rows || tensor->shape[1] != columns) {
        loader->status = uform__fail(loader->outcome, UFORM_FORMAT, loader->function, "tensor '%s' has shape %s, expected %s",
                                     name, shape_text(tensor->shape, tensor->rank, got, sizeof got),
                                     shape_text(wanted, 2, want, sizeof want));
        return;
    }
    loader->expected += 1;
    loader->model->parameters += tensor->element_count;
    loader->model->weight_bytes += tensor->length;
    mark_seen(loader, tensor);
    uform__i8_scale_name(name, scale_name, sizeof scale_name);
    const uform__safetensors_tensor_t *scale = expect(loader, scale_name, 1, rows, 0);
    if (!scale) return;
    loader->model->parameters -= scale->element_count; /* a scale is part of its matrix, not a parameter */
    if (scale->dtype != UFORM__SAFETENSORS_F32 || (uintptr_t)scale->data % 4) {
        loader->status = uform__fail(loader->outcome, UFORM_FORMAT, loader->function, "tensor '%s' is %s, expected F32",
                                     scale_name, uform__safetensors_dtype_name(scale->dtype));
        return;
    }
    layer->rows = rows, layer->columns = columns;
    layer->q = tensor->data, layer->q_scale = scale->data;
    if (loader->model->compute == UFORM_COMPUTE_I8 && uform__i8_quantizes(name)) return; /* packed by uform__i8_prepare */
    float *weight = own(loader->model, rows * columns * sizeof(float));
    if (!weight) {
        loader->status = uform__fail(loader->outcome, UFORM_OUT_OF_MEMORY, loader->function,
                                     "cannot allocate %zu floats to dequantize '%s'", rows * columns, name);
        return;
    }
    for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < columns; ++c) weight[r * columns + c] = (float)layer->q[r * columns + c] * layer->q_scale[r];
    layer->weight = weight, layer->dtype = UFORM__GEMM_F32;
    layer->q = NULL, layer->q_scale = NULL;
}

/* A matrix [rows, columns], used in place when its dtype and alignment allow (F16 is widened). */
static void linear(loader_t *loader, uform__linear_t *layer, const char *name, size_t rows, size_t columns,
                   const char *bias_name) {
    memset(layer, 0, sizeof *layer);
    if (loader->status != UFORM_OK) return;
    const uform__safetensors_tensor_t *found = uform__safetensors_find(loader->model->file, name);
    if (found && found->dtype == UFORM__SAFETENSORS_I8) {
        quantized_linear(loader, layer, found, name, rows, columns);
        if (bias_name) layer->bias = widen(loader, bias_name, 1, rows, 0);
        return;
    }
    const uform__safetensors_tensor_t *tensor = expect(loader, name, 2, rows, columns);
    if (!tensor) return;
    layer->rows = rows, layer->columns = columns;
    size_t element = tensor->dtype == UFORM__SAFETENSORS_F32 ? 4 : 2;
    if (tensor->dtype == UFORM__SAFETENSORS_F16 || ((uintptr_t)tensor->data % element) != 0) {
        /* Widen F16 (no kernel takes it) and copy misaligned data into owned memory. */
        loader->expected -= 1, loader->model->parameters -= tensor->element_count;
        loader->model->weight_bytes -= tensor->length;
        layer->weight = widen(loader, name, 2, rows, columns);
        layer->dtype = UFORM__GEMM_F32;
    } else {
        layer->weight = tensor->data;
        layer->dtype = tensor->dtype == UFORM__SAFETENSORS_F32 ? UFORM__GEMM_F32 : UFORM__GEMM_BF16;
    }
    if (bias_name) layer->bias = widen(loader, bias_name, 1, rows, 0);
}

static void norm(loader_t *loader, uform__norm_t *target, const char *prefix, size_t width) {
    char name[96];
    snprintf(name, sizeof name, "%s.weight", prefix);
    target->weight = widen(loader, name, 1, width, 0);
    snprintf(name, sizeof name, "%s.bias", prefix);
    target->bias = widen(loader, name, 1, width, 0);
}

static void load_stem(loader_t *loader, uform_modality_t modality) {
    uform_model_t model = loader->model;
    const uform__model_config_t *config = &model->config;
    uform__stem_t *stem = &model->stems[modality];
    const char *m = modality_names[modality];
    size_t d = config->hidden;
    char name[96], bias[96];
    stem->present = 1;
    snprintf(name, sizeof name, "modality.%s", m);
    stem->modality = widen(loader, name, 1, d, 0);
    snprintf(name, sizeof name, "%s.norm", m);
    norm(loader, &stem->norm, name, d);
    snprintf(name, sizeof name, "%s.projection", m);
    linear(loader, &stem->projection, name, config->embedding, d, NULL);
    size_t patch_width = 0;
    switch (modality) {
    case UFORM_MODALITY_TEXT:
        stem->table = widen(loader, "text.bytes", 2, UFORM__TEXT_VOCABULARY, d);
        stem->position_rows = config->text_bytes + 2;
        stem->positions = widen(loader, "text.positions", 2, stem->position_rows, d);
        norm(loader, &model->choose_norm, "choose.norm", d);
        linear(loader, &model->choose_head, "choose.head.weight", 256, d, "choose.head.bias");
        return;
    case UFORM_MODALITY_IMAGE:
        patch_width = 3 * config->image_patch * config->image_patch;
        stem->position_rows = uform__model_image_tokens(config);
        stem->positions = widen(loader, "image.positions", 2, stem->position_rows, d);
        break;
    case UFORM_MODALITY_VIDEO:
        patch_width = 3 * config->video_tubelet * config->video_patch * config->video_patch;
        stem->position_rows = (config->video_size / config->video_patch) * (config->video_size / config->video_patch) + 1;
        stem->positions = widen(loader, "video.space", 2, stem->position_rows, d);
        stem->time = widen(loader, "video.time", 2, config->video_frames / config->video_tubelet, d);
        break;
    case UFORM_MODALITY_AUDIO:
        patch_width = UFORM__AUDIO_FRAMES_PER_TOKEN * config->audio_mels;
        stem->position_rows = uform__model_audio_tokens(config);
        stem->positions = widen(loader, "audio.positions", 2, stem->position_rows, d);
        break;
    }
    snprintf(name, sizeof name, "%s.cls", m);
    stem->cls = widen(loader, name, 1, d, 0);
    snprintf(name, sizeof name, "%s.patch.weight", m);
    snprintf(bias, sizeof bias, "%s.patch.bias", m);
    linear(loader, &stem->patch, name, d, patch_width, bias);
}

uform_status_t uform__model_pack(uform_model_t model, uform__linear_t *layer, const char *name, uform_outcome_t *outcome,
                                 const char *function) {
    if (!layer->weight) return UFORM_OK;
    const uform__gemm_kernels_t *gemm = uform__gemm_kernels(model->cpu_class);
    uform_compute_t compute = model->compute;
    if (compute == UFORM_COMPUTE_I8) {
        if (uform__i8_quantizes(name)) return UFORM_OK; /* int8 panels instead (uform__i8_prepare) */
        /* The layers I8 compute keeps float run in the class's best float compute (uform.h). */
        compute = uform__gemm_rounds_to_bf16(gemm) ? UFORM_COMPUTE_BF16 : UFORM_COMPUTE_F32;
    }
    /* The panel format follows the compute: F32 panels (BF16 widened) for F32 compute. */
    int bf16 = layer->dtype == UFORM__GEMM_BF16 && compute == UFORM_COMPUTE_BF16;
    size_t bytes = bf16 ? gemm->packed_size_bf16(layer->rows, layer->columns, layer->dtype)
                        : gemm->packed_size_f32(layer->rows, layer->columns, layer->dtype);
    void *memory = own(model, bytes);
    if (!memory) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate %zu bytes to pack '%s'", bytes, name);
    uform_status_t status = (bf16 ? gemm->pack_bf16 : gemm->pack_f32)(
        layer->weight, layer->columns, layer->dtype, layer->rows, layer->columns, memory, bytes, &layer->packed, outcome);
    if (status != UFORM_OK) snprintf(outcome->function, sizeof outcome->function, "%s", function);
    return status;
}

/* Packs a layer for the model's class (once, at load), so forward products skip packing W. */
static void pack(loader_t *loader, const uform__gemm_kernels_t *gemm, uform__linear_t *layer, const char *name) {
    (void)gemm;
    if (loader->status != UFORM_OK) return;
    loader->status = uform__model_pack(loader->model, layer, name, loader->outcome, loader->function);
}

typedef struct load_request_t {
    const char *path;
    void *bytes;                 /* or a checkpoint in RAM (malloc'ed), which the model then owns */
    size_t size;
    uform_cpu_class_t cpu_class; /* UNKNOWN: the executor's */
    uform_compute_t compute;
    uform_model_t model;         /* out */
    uform_outcome_t outcome;
} load_request_t;

static uform_status_t load_run(void *pointer, uform__call_context_t *context) {
    load_request_t *request = pointer;
    const char *function = context->function;
    uform_outcome_t *outcome = context->outcome;
    uform_cpu_class_t cpu_class = request->cpu_class ? request->cpu_class : context->cpu_class;
    struct stat info;
    if (!request->bytes && stat(request->path, &info) == 0 && S_ISDIR(info.st_mode)) /* a published folder */
        return uform__published_load(request->path, cpu_class, request->compute, &request->model, context);
    uform_model_t model = calloc(1, sizeof *model);
    if (!model) {
        free(request->bytes);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a model");
    }
    model->cpu_class = cpu_class;
    model->compute = request->compute;
    uform_status_t status;
    if (request->bytes) {
        void **owned = malloc(sizeof *owned);
        if (!owned) {
            free(request->bytes), free(model);
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a model");
        }
        model->owned = owned, model->owned_capacity = 1, model->owned_count = 1;
        owned[0] = request->bytes;
        status = uform__safetensors_open_memory(request->bytes, request->size, &model->file, outcome);
    } else {
        status = uform__safetensors_open(request->path, &model->file, outcome);
    }
    if (status != UFORM_OK) {
        /* The reader names its own function; the caller's name is the public one. */
        snprintf(outcome->function, sizeof outcome->function, "%s", function);
        uform_model_free(model);
        return status;
    }
    const char *format = uform__safetensors_metadata_find(model->file, "uform.format");
    const char *config_json = uform__safetensors_metadata_find(model->file, "uform.config");
    if (!format || !config_json) {
        uform_model_free(model);
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "'%s' is a safetensors file but not a UForm checkpoint: __metadata__ lacks '%s'",
                           request->path, !format ? "uform.format" : "uform.config");
    }
    if (strcmp(format, "4") != 0) {
        int newer = atoi(format) > 4;
        char found[17];
        snprintf(found, sizeof found, "%s", format); /* the metadata dies with the file */
        uform_model_free(model);
        return uform__fail(outcome, newer ? UFORM_UNSUPPORTED : UFORM_FORMAT, function,
                           "'%s' has uform.format '%s'; this library reads format 4", request->path, found);
    }
    status = uform__model_config_parse(config_json, &model->config, outcome, function);
    if (status != UFORM_OK) {
        uform_model_free(model);
        return status;
    }
    const uform__model_config_t *config = &model->config; /* the parser checked the head width too */
    /* The fingerprint hashes the config as printed, so re-serialising the same config keeps it. */
    char *printed = uform__model_config_print(config);
    size_t printed_length = printed ? strlen(printed) + 1 : 0;
    model->config_text = printed ? own(model, printed_length) : NULL;
    if (model->config_text) memcpy(model->config_text, printed, printed_length);
    free(printed);
    if (!model->config_text) {
        uform_model_free(model);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the text of the model's config");
    }
    loader_t loader = {model, function, outcome, UFORM_OK, 0, NULL};
    loader.seen = calloc(uform__safetensors_count(model->file) + 1, 1);
    if (!loader.seen) {
        uform_model_free(model);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the tensor checklist");
    }
    size_t d = config->hidden;
    model->blocks = calloc(config->depth, sizeof *model->blocks);
    if (!model->blocks) loader.status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate blocks");
    for (size_t i = 0; i < config->depth && loader.status == UFORM_OK; ++i) {
        uform__block_t *block = &model->blocks[i];
        char name[96], bias[96];
        snprintf(name, sizeof name, "trunk.%zu.norm1", i);
        norm(&loader, &block->norm1, name, d);
        snprintf(name, sizeof name, "trunk.%zu.norm2", i);
        norm(&loader, &block->norm2, name, d);
        snprintf(name, sizeof name, "trunk.%zu.attn.qkv.weight", i), snprintf(bias, sizeof bias, "trunk.%zu.attn.qkv.bias", i);
        linear(&loader, &block->qkv, name, 3 * d, d, bias);
        snprintf(name, sizeof name, "trunk.%zu.attn.out.weight", i), snprintf(bias, sizeof bias, "trunk.%zu.attn.out.bias", i);
        linear(&loader, &block->out, name, d, d, bias);
        snprintf(name, sizeof name, "trunk.%zu.mlp.up.weight", i), snprintf(bias, sizeof bias, "trunk.%zu.mlp.up.bias", i);
        linear(&loader, &block->up, name, config->mlp, d, bias);
        snprintf(name, sizeof name, "trunk.%zu.mlp.down.weight", i), snprintf(bias, sizeof bias, "trunk.%zu.mlp.down.bias", i);
        linear(&loader, &block->down, name, d, config->mlp, bias);
    }
    model->temperatures = widen(&loader, "temperatures", 1, config->temperature_groups, 0);
    for (int m = 0; m < 4; ++m)
        if (config->modalities & (1u << m)) load_stem(&loader, (uform_modality_t)m);
    /* Everything else must be an optimizer tensor (docs/training.md), which inference ignores. */
    for (size_t i = 0; loader.status == UFORM_OK && i < uform__safetensors_count(model->file); ++i) {
        const char *name = uform__safetensors_at(model->file, i)->name;
        if (!loader.seen[i] && strncmp(name, "optimizer.", 10) != 0)
            loader.status = uform__fail(outcome, UFORM_FORMAT, function,
                                        "tensor '%s' is not part of the model its config describes", name);
    }
    const uform__gemm_kernels_t *gemm = uform__gemm_kernels(cpu_class);
    for (size_t i = 0; i < config->depth && loader.status == UFORM_OK; ++i) {
        static const char *const products[4] = {"attn.qkv.weight", "attn.out.weight", "mlp.up.weight", "mlp.down.weight"};
        uform__linear_t *layers[4] = {&model->blocks[i].qkv, &model->blocks[i].out, &model->blocks[i].up,
                                      &model->blocks[i].down};
        for (int j = 0; j < 4; ++j) {
            char name[96];
            snprintf(name, sizeof name, "trunk.%zu.%s", i, products[j]);
            pack(&loader, gemm, layers[j], name);
        }
    }
    for (int m = 1; m < 4 && loader.status == UFORM_OK; ++m)
        if (model->stems[m].present) {
            char name[96];
            snprintf(name, sizeof name, "%s.patch.weight", modality_names[m]);
            pack(&loader, gemm, &model->stems[m].patch, name);
        }
    if (loader.status == UFORM_OK && model->compute == UFORM_COMPUTE_I8)
        loader.status = uform__i8_prepare(model, context->parallel, own_for_i8, model, outcome, function);
    if (loader.status == UFORM_OK && model->stems[UFORM_MODALITY_AUDIO].present) {
        loader.status = uform__signal_mel_plan_init(&model->mel, config->audio_rate, UFORM__AUDIO_N_FFT,
                                                    UFORM__AUDIO_HOP, config->audio_mels, 0.0, 0.0, outcome);
        model->mel_ready = loader.status == UFORM_OK;
    }
    free(loader.seen);
    if (loader.status != UFORM_OK) {
        uform_model_free(model);
        return loader.status;
    }
    request->model = model;
    return UFORM_OK;
}

uform_status_t uform__model_load_bytes(void *bytes, size_t size, uform_cpu_class_t cpu_class, uform_compute_t compute,
                                      uform_model_t *model, uform__call_context_t *context) {
    load_request_t request;
    memset(&request, 0, sizeof request);
    request.path = "(checkpoint in memory)";
    request.bytes = bytes, request.size = size;
    request.cpu_class = cpu_class, request.compute = compute;
    uform_status_t status = load_run(&request, context);
    *model = status == UFORM_OK ? request.model : NULL;
    return status;
}

UFORM_API uform_status_t uform_model_load_ram(uform_executor_t executor, const char *path,
                                              const uform_ram_options_t *ram_options, uform_model_t *model,
                                              uform_outcome_t *outcome) {
    const char *function = __func__;
    if (model) *model = NULL;
    if (!model || !path)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s is NULL", !model ? "model" : "path");
    load_request_t request;
    memset(&request, 0, sizeof request);
    request.path = path;
    request.compute = ram_options ? ram_options->compute : UFORM_COMPUTE_F32;
    if (request.compute != UFORM_COMPUTE_F32 && request.compute != UFORM_COMPUTE_BF16 && request.compute != UFORM_COMPUTE_I8)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "ram_options.compute %d is none of F32 (0), BF16 (1) and I8 (2)", (int)request.compute);
    if (ram_options && ram_options->cpu_class) {
        uform_status_t status = uform__cpu_class_resolve(ram_options->cpu_class, &request.cpu_class, outcome, function);
        if (status != UFORM_OK) return status;
    }
    uform_outcome_t local;
    memset(&local, 0, sizeof local);
    uform__call_t call = {load_run, &request, outcome ? outcome : &local, UFORM_COMPLETION_BLOCKING, NULL, NULL, function};
    uform_status_t status = uform__executor_call(executor, &call);
    if (status == UFORM_OK) *model = request.model;
    return status;
}

UFORM_API uform_status_t uform_model_describe(uform_model_describe_t *request) {
    const char *function = __func__;
    if (!request) return UFORM_INVALID_ARGUMENT;
    memset(&request->description, 0, sizeof request->description);
    if (!request->model) return uform__fail(&request->outcome, UFORM_INVALID_ARGUMENT, function, "model is NULL");
    const uform_model_t model = request->model;
    uform_model_description_t *description = &request->description;
    uform__model_config_describe(&model->config, description);
    for (int m = 0; m < 4; ++m) {
        if (!(model->config.modalities & (1u << m))) continue;
        const uform__model_config_t *tower = &uform__model_tower(model, (uform_modality_t)m)->config;
        description->towers[m] = (uform_tower_description_t){tower->hidden, tower->depth, tower->heads, tower->mlp};
    }
    if (model->published) {
        uform__published_describe(model, description);
    } else {
        snprintf(description->family, sizeof description->family, "uform4");
        if (model->config.modalities & 1) {
            snprintf(description->tokenizer, sizeof description->tokenizer, "bytes");
            description->text_tokens = model->config.text_bytes + 1; /* [CLS] and the first T bytes */
        }
    }
    description->parameters = model->parameters;
    description->weight_bytes = model->weight_bytes;
    description->residency = UFORM_RESIDENCY_RAM;
    description->cpu_class = model->cpu_class;
    description->compute = model->compute;
    return uform__succeed(&request->outcome, function);
}
