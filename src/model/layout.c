#include "model/layout.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "core/random.h"
#include "io/safetensors.h"
#include "kernels/nn.h"

typedef struct spec_list_t {
    uform__tensor_spec_t *specs;
    size_t capacity, count;
} spec_list_t;

static void add(spec_list_t *list, uform__tensor_kind_t kind, size_t rows, size_t columns, const char *format, ...)
    __attribute__((format(printf, 5, 6)));

static void add(spec_list_t *list, uform__tensor_kind_t kind, size_t rows, size_t columns, const char *format, ...) {
    if (list->count < list->capacity) {
        uform__tensor_spec_t *spec = &list->specs[list->count];
        va_list arguments;
        va_start(arguments, format);
        vsnprintf(spec->name, sizeof spec->name, format, arguments);
        va_end(arguments);
        spec->rows = rows, spec->columns = columns, spec->kind = kind;
    }
    list->count += 1;
}

size_t uform__model_tensor_specs(const uform__model_config_t *config, uform__tensor_spec_t *specs, size_t capacity) {
    spec_list_t list = {specs, capacity, 0};
    size_t d = config->hidden;
    static const char *const names[4] = {"text", "image", "video", "audio"};
    for (size_t i = 0; i < config->depth; ++i) {
        add(&list, UFORM__TENSOR_NORM_WEIGHT, d, 0, "trunk.%zu.norm1.weight", i);
        add(&list, UFORM__TENSOR_NORM_BIAS, d, 0, "trunk.%zu.norm1.bias", i);
        add(&list, UFORM__TENSOR_MATRIX, 3 * d, d, "trunk.%zu.attn.qkv.weight", i);
        add(&list, UFORM__TENSOR_BIAS, 3 * d, 0, "trunk.%zu.attn.qkv.bias", i);
        add(&list, UFORM__TENSOR_MATRIX, d, d, "trunk.%zu.attn.out.weight", i);
        add(&list, UFORM__TENSOR_BIAS, d, 0, "trunk.%zu.attn.out.bias", i);
        add(&list, UFORM__TENSOR_NORM_WEIGHT, d, 0, "trunk.%zu.norm2.weight", i);
        add(&list, UFORM__TENSOR_NORM_BIAS, d, 0, "trunk.%zu.norm2.bias", i);
        add(&list, UFORM__TENSOR_MATRIX, config->mlp, d, "trunk.%zu.mlp.up.weight", i);
        add(&list, UFORM__TENSOR_BIAS, config->mlp, 0, "trunk.%zu.mlp.up.bias", i);
        add(&list, UFORM__TENSOR_MATRIX, d, config->mlp, "trunk.%zu.mlp.down.weight", i);
        add(&list, UFORM__TENSOR_BIAS, d, 0, "trunk.%zu.mlp.down.bias", i);
    }
    add(&list, UFORM__TENSOR_TEMPERATURES, config->temperature_groups, 0, "temperatures");
    for (int m = 0; m < 4; ++m) {
        if (!(config->modalities & (1u << m))) continue;
        const char *name = names[m];
        add(&list, UFORM__TENSOR_TABLE, d, 0, "modality.%s", name);
        add(&list, UFORM__TENSOR_NORM_WEIGHT, d, 0, "%s.norm.weight", name);
        add(&list, UFORM__TENSOR_NORM_BIAS, d, 0, "%s.norm.bias", name);
        add(&list, UFORM__TENSOR_MATRIX, config->embedding, d, "%s.projection", name);
        size_t side;
        switch (m) {
        case UFORM_MODALITY_TEXT:
            add(&list, UFORM__TENSOR_TABLE, 260, d, "text.bytes");
            add(&list, UFORM__TENSOR_POSITIONS, config->text_bytes + 2, d, "text.positions");
            add(&list, UFORM__TENSOR_NORM_WEIGHT, d, 0, "choose.norm.weight");
            add(&list, UFORM__TENSOR_NORM_BIAS, d, 0, "choose.norm.bias");
            add(&list, UFORM__TENSOR_MATRIX, 256, d, "choose.head.weight");
            add(&list, UFORM__TENSOR_BIAS, 256, 0, "choose.head.bias");
            break;
        case UFORM_MODALITY_IMAGE:
            side = config->image_size / config->image_patch;
            add(&list, UFORM__TENSOR_MATRIX, d, 3 * config->image_patch * config->image_patch, "image.patch.weight");
            add(&list, UFORM__TENSOR_BIAS, d, 0, "image.patch.bias");
            add(&list, UFORM__TENSOR_TABLE, d, 0, "image.cls");
            add(&list, UFORM__TENSOR_POSITIONS, side * side + 1, d, "image.positions");
            break;
        case UFORM_MODALITY_VIDEO:
            side = config->video_size / config->video_patch;
            add(&list, UFORM__TENSOR_MATRIX, d, 3 * config->video_tubelet * config->video_patch * config->video_patch,
                "video.patch.weight");
            add(&list, UFORM__TENSOR_BIAS, d, 0, "video.patch.bias");
            add(&list, UFORM__TENSOR_TABLE, d, 0, "video.cls");
            add(&list, UFORM__TENSOR_POSITIONS, side * side + 1, d, "video.space");
            add(&list, UFORM__TENSOR_POSITIONS, config->video_frames / config->video_tubelet, d, "video.time");
            break;
        case UFORM_MODALITY_AUDIO:
            add(&list, UFORM__TENSOR_MATRIX, d, UFORM__AUDIO_FRAMES_PER_TOKEN * config->audio_mels, "audio.patch.weight");
            add(&list, UFORM__TENSOR_BIAS, d, 0, "audio.patch.bias");
            add(&list, UFORM__TENSOR_TABLE, d, 0, "audio.cls");
            add(&list, UFORM__TENSOR_POSITIONS, uform__model_audio_tokens(config), d, "audio.positions");
            break;
        }
    }
    return list.count;
}

/* SplitMix64 (core/random.h), then Box–Muller: a normal draw that is the same on every machine. */
double uform__random_normal(uint64_t *state) {
    double u1 = ((double)(uform__splitmix64(state) >> 11) + 1.0) / 9007199254740993.0; /* (0, 1] */
    double u2 = (double)(uform__splitmix64(state) >> 11) / 9007199254740992.0;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

uform_status_t uform__model_write_random(const char *path, const uform__model_config_t *config, uint64_t seed,
                                         uform_outcome_t *outcome, const char *function) {
    size_t count = uform__model_tensor_specs(config, NULL, 0);
    uform__tensor_spec_t *specs = calloc(count, sizeof *specs);
    uform__safetensors_source_t *sources = calloc(count, sizeof *sources);
    uint64_t *shapes = calloc(2 * count, sizeof *shapes);
    void **buffers = calloc(count, sizeof *buffers);
    char *config_json = uform__model_config_print(config);
    uform_status_t status = UFORM_OK;
    if (!specs || !sources || !shapes || !buffers || !config_json)
        status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the checkpoint's tensors");
    if (status == UFORM_OK) uform__model_tensor_specs(config, specs, count);
    uint64_t state = seed;
    for (size_t i = 0; i < count && status == UFORM_OK; ++i) {
        const uform__tensor_spec_t *spec = &specs[i];
        size_t elements = spec->rows * (spec->columns ? spec->columns : 1);
        int wide = spec->kind == UFORM__TENSOR_NORM_WEIGHT || spec->kind == UFORM__TENSOR_NORM_BIAS ||
                   spec->kind == UFORM__TENSOR_TEMPERATURES;
        buffers[i] = malloc(elements * (wide ? 4 : 2) + 1);
        if (!buffers[i]) {
            status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate '%s'", spec->name);
            break;
        }
        for (size_t e = 0; e < elements; ++e) {
            if (wide) {
                float value = spec->kind == UFORM__TENSOR_NORM_WEIGHT ? 1.0f
                              : spec->kind == UFORM__TENSOR_NORM_BIAS ? 0.0f
                                                                      : (float)log(1.0 / 0.07);
                ((float *)buffers[i])[e] = value;
            } else {
                ((uint16_t *)buffers[i])[e] = uform__nn_f32_to_bf16_one((float)(0.02 * uform__random_normal(&state)));
            }
        }
        shapes[2 * i] = spec->rows, shapes[2 * i + 1] = spec->columns;
        sources[i].name = spec->name;
        sources[i].dtype = wide ? UFORM__SAFETENSORS_F32 : UFORM__SAFETENSORS_BF16;
        sources[i].rank = spec->columns ? 2 : 1;
        sources[i].shape = &shapes[2 * i];
        sources[i].data = buffers[i];
    }
    if (status == UFORM_OK) {
        uform__safetensors_pair_t metadata[2] = {{"uform.format", "4"}, {"uform.config", config_json}};
        uform__safetensors_write_t request = {sources, count, metadata, 2, NULL, NULL};
        status = uform__safetensors_write(path, &request, outcome);
        if (status != UFORM_OK && outcome) snprintf(outcome->function, sizeof outcome->function, "%s", function);
    }
    for (size_t i = 0; buffers && i < count; ++i) free(buffers[i]);
    free(buffers), free(shapes), free(sources), free(specs), free(config_json);
    return status;
}
