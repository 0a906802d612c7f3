/*
 * The trainer's parameters: the tensors docs/model.md names for the config (model/layout.c lists them),
 * laid out in four parallel F32 blocks (weights, gradients, first and second moments) at the same
 * offsets, each tensor 64-byte aligned, plus BF16 copies of the matrices the products read under
 * BF16 compute. Two model views point into the blocks, so the forward reuses the inference
 * wrappers (uform__linear_forward) and the backward finds each gradient at the same place.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "train/trainer.h"

static size_t round16(size_t floats) { return (floats + 15) / 16 * 16; }

/* The tensors whose products read BF16 copies under BF16 compute: the trunk's four matrices, the
 * patch projections and the embedding projections (the choose head stays F32, as at inference). */
static int product_weight(const uform__tensor_spec_t *spec) {
    if (spec->kind != UFORM__TENSOR_MATRIX) return 0;
    return strcmp(spec->name, "choose.head.weight") != 0;
}

uform_status_t uform__train_params_create(uform_trainer_t trainer, uform_outcome_t *outcome, const char *function) {
    const uform__model_config_t *config = &trainer->config;
    size_t count = uform__model_tensor_specs(config, NULL, 0);
    uform__tensor_spec_t *specs = calloc(count, sizeof *specs);
    trainer->params = calloc(count, sizeof *trainer->params);
    if (!specs || !trainer->params) {
        free(specs);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the table of %zu parameters", count);
    }
    uform__model_tensor_specs(config, specs, count);
    trainer->param_count = count;
    size_t total = 0, bf16_total = 0;
    for (size_t i = 0; i < count; ++i) {
        uform__param_t *param = &trainer->params[i];
        param->spec = specs[i];
        param->count = specs[i].rows * (specs[i].columns ? specs[i].columns : 1);
        param->offset = total;
        total += round16(param->count);
        param->decay = specs[i].columns != 0 && specs[i].kind != UFORM__TENSOR_POSITIONS;
        param->wide = specs[i].kind == UFORM__TENSOR_NORM_WEIGHT || specs[i].kind == UFORM__TENSOR_NORM_BIAS ||
                      specs[i].kind == UFORM__TENSOR_TEMPERATURES;
        param->bf16_offset = SIZE_MAX;
        if (trainer->compute == UFORM_COMPUTE_BF16 && product_weight(&specs[i])) {
            param->bf16_offset = bf16_total;
            bf16_total += (param->count + 31) / 32 * 32; /* 64 bytes */
        }
    }
    free(specs);
    trainer->total = total;
    trainer->bf16_total = bf16_total;
    size_t bytes = total * sizeof(float);
    trainer->weights = aligned_alloc(64, bytes);
    trainer->grads = aligned_alloc(64, bytes);
    trainer->m = aligned_alloc(64, bytes);
    trainer->v = aligned_alloc(64, bytes);
    if (bf16_total) trainer->bf16 = aligned_alloc(64, bf16_total * sizeof(uint16_t));
    if (!trainer->weights || !trainer->grads || !trainer->m || !trainer->v || (bf16_total && !trainer->bf16))
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function,
                           "cannot allocate 4 x %zu MiB for the weights, gradients and moments", bytes >> 20);
    memset(trainer->weights, 0, bytes);
    memset(trainer->grads, 0, bytes);
    memset(trainer->m, 0, bytes);
    memset(trainer->v, 0, bytes);
    if (bf16_total) memset(trainer->bf16, 0, bf16_total * sizeof(uint16_t));
    return UFORM_OK;
}

void uform__train_params_free(uform_trainer_t trainer) {
    free(trainer->weights), free(trainer->grads), free(trainer->m), free(trainer->v), free(trainer->bf16);
    free(trainer->params);
    free(trainer->view.blocks), free(trainer->grad_view.blocks);
    trainer->weights = trainer->grads = trainer->m = trainer->v = NULL;
    trainer->bf16 = NULL, trainer->params = NULL;
    trainer->view.blocks = trainer->grad_view.blocks = NULL;
}

uform__param_t *uform__train_param(uform_trainer_t trainer, const char *name) {
    for (size_t i = 0; i < trainer->param_count; ++i)
        if (strcmp(trainer->params[i].spec.name, name) == 0) return &trainer->params[i];
    return NULL;
}

static int has_suffix(const char *name, const char *suffix) {
    size_t n = strlen(name), s = strlen(suffix);
    return n >= s && strcmp(name + n - s, suffix) == 0;
}

void uform__train_params_initialise(uform_trainer_t trainer) {
    uint64_t state = trainer->seed;
    for (size_t i = 0; i < trainer->param_count; ++i) {
        const uform__param_t *param = &trainer->params[i];
        float *values = trainer->weights + param->offset;
        double std = 0.0, constant = 0.0;
        switch (param->spec.kind) {
        case UFORM__TENSOR_MATRIX: std = 0.02; break;
        case UFORM__TENSOR_POSITIONS:
            /* Media position tables at 0.2 learn where a shape is several times faster; the text table at
             * 0.02, like the byte table, so a caption's bytes are heard after the first norm (docs/training.md,
             * "Initialisation": the demo met its targets in about half the steps). */
            std = strcmp(param->spec.name, "text.positions") == 0 ? 0.02 : 0.2;
            break;
        case UFORM__TENSOR_TABLE:
            /* text.bytes and the modality vectors are drawn; CLS rows start at 0 (docs/training.md). */
            std = has_suffix(param->spec.name, ".cls") ? 0.0 : 0.02;
            break;
        case UFORM__TENSOR_NORM_WEIGHT: constant = 1.0; break;
        case UFORM__TENSOR_TEMPERATURES: constant = log(1.0 / 0.07); break;
        default: break; /* biases and norm biases: 0 */
        }
        for (size_t e = 0; e < param->count; ++e)
            values[e] = std > 0 ? (float)(std * uform__random_normal(&state)) : (float)constant;
    }
}

/* ---- the model views ---- */

typedef struct view_builder_t {
    uform_trainer_t trainer;
    float *base;     /* weights or grads */
    int bf16;        /* product weights from the BF16 copies */
} view_builder_t;

static float *at(const view_builder_t *builder, const char *name) {
    uform__param_t *param = uform__train_param(builder->trainer, name);
    return param ? builder->base + param->offset : NULL;
}

static void linear(const view_builder_t *builder, uform__linear_t *layer, const char *weight, const char *bias) {
    uform__param_t *param = uform__train_param(builder->trainer, weight);
    memset(layer, 0, sizeof *layer);
    if (!param) return;
    layer->rows = param->spec.rows, layer->columns = param->spec.columns;
    if (builder->bf16 && param->bf16_offset != SIZE_MAX) {
        layer->weight = builder->trainer->bf16 + param->bf16_offset;
        layer->dtype = UFORM__GEMM_BF16;
    } else {
        layer->weight = builder->base + param->offset;
        layer->dtype = UFORM__GEMM_F32;
    }
    layer->bias = bias ? at(builder, bias) : NULL;
}

static void norm(const view_builder_t *builder, uform__norm_t *target, const char *prefix) {
    char name[96];
    snprintf(name, sizeof name, "%s.weight", prefix);
    target->weight = at(builder, name);
    snprintf(name, sizeof name, "%s.bias", prefix);
    target->bias = at(builder, name);
}

static void build(const view_builder_t *builder, struct uform_model_s *model) {
    uform_trainer_t trainer = builder->trainer;
    const uform__model_config_t *config = &trainer->config;
    model->config = *config;
    model->cpu_class = trainer->cpu_class;
    model->compute = trainer->compute;
    char name[96], bias[96];
    for (size_t i = 0; i < config->depth; ++i) {
        uform__block_t *block = &model->blocks[i];
        snprintf(name, sizeof name, "trunk.%zu.norm1", i), norm(builder, &block->norm1, name);
        snprintf(name, sizeof name, "trunk.%zu.norm2", i), norm(builder, &block->norm2, name);
        snprintf(name, sizeof name, "trunk.%zu.attn.qkv.weight", i), snprintf(bias, sizeof bias, "trunk.%zu.attn.qkv.bias", i);
        linear(builder, &block->qkv, name, bias);
        snprintf(name, sizeof name, "trunk.%zu.attn.out.weight", i), snprintf(bias, sizeof bias, "trunk.%zu.attn.out.bias", i);
        linear(builder, &block->out, name, bias);
        snprintf(name, sizeof name, "trunk.%zu.mlp.up.weight", i), snprintf(bias, sizeof bias, "trunk.%zu.mlp.up.bias", i);
        linear(builder, &block->up, name, bias);
        snprintf(name, sizeof name, "trunk.%zu.mlp.down.weight", i), snprintf(bias, sizeof bias, "trunk.%zu.mlp.down.bias", i);
        linear(builder, &block->down, name, bias);
    }
    model->temperatures = at(builder, "temperatures");
    static const char *const names[4] = {"text", "image", "video", "audio"};
    for (int m = 0; m < 4; ++m) {
        uform__stem_t *stem = &model->stems[m];
        memset(stem, 0, sizeof *stem);
        if (!(config->modalities & (1u << m))) continue;
        const char *n = names[m];
        stem->present = 1;
        snprintf(name, sizeof name, "modality.%s", n), stem->modality = at(builder, name);
        snprintf(name, sizeof name, "%s.norm", n), norm(builder, &stem->norm, name);
        snprintf(name, sizeof name, "%s.projection", n), linear(builder, &stem->projection, name, NULL);
        if (m == UFORM_MODALITY_TEXT) {
            stem->table = at(builder, "text.bytes");
            stem->positions = at(builder, "text.positions");
            stem->position_rows = config->text_bytes + 2;
            norm(builder, &model->choose_norm, "choose.norm");
            /* The choose head multiplies in F32 even under BF16 compute (as text_choose does). */
            view_builder_t wide = *builder;
            wide.bf16 = 0;
            linear(&wide, &model->choose_head, "choose.head.weight", "choose.head.bias");
            continue;
        }
        snprintf(name, sizeof name, "%s.cls", n), stem->cls = at(builder, name);
        snprintf(name, sizeof name, "%s.patch.weight", n), snprintf(bias, sizeof bias, "%s.patch.bias", n);
        linear(builder, &stem->patch, name, bias);
        if (m == UFORM_MODALITY_VIDEO) {
            stem->positions = at(builder, "video.space");
            stem->position_rows = (config->video_size / config->video_patch) * (config->video_size / config->video_patch) + 1;
            stem->time = at(builder, "video.time");
        } else {
            snprintf(name, sizeof name, "%s.positions", n), stem->positions = at(builder, name);
            stem->position_rows = m == UFORM_MODALITY_IMAGE ? uform__model_image_tokens(config)
                                                            : uform__model_audio_tokens(config);
        }
    }
}

void uform__train_views_build(uform_trainer_t trainer) {
    view_builder_t weights = {trainer, trainer->weights, trainer->compute == UFORM_COMPUTE_BF16};
    view_builder_t grads = {trainer, trainer->grads, 0};
    build(&weights, &trainer->view);
    build(&grads, &trainer->grad_view);
}

void uform__train_bf16_refresh(uform_trainer_t trainer, const uform__nn_kernels_t *nn) {
    if (!trainer->bf16) return;
    for (size_t i = 0; i < trainer->param_count; ++i) {
        const uform__param_t *param = &trainer->params[i];
        if (param->bf16_offset == SIZE_MAX) continue;
        nn->f32_to_bf16(param->count, trainer->weights + param->offset, trainer->bf16 + param->bf16_offset);
    }
}
