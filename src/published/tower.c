/*
 * Building a published tower (published.h): a model of one modality whose vectors and tables are
 * widened to F32 and whose matrices are used in place from the mapped files wherever their dtype
 * (F32, BF16) and alignment allow — the same rules as a native checkpoint's (docs/model.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "kernels/nn.h"
#include "model/heads.h"
#include "published/published.h"

uform_model_t uform__tower_new(uform__tower_builder_t *builder, uform_modality_t modality, size_t hidden, size_t depth,
                               size_t heads, size_t mlp, size_t embedding) {
    uform_model_t tower = calloc(1, sizeof *tower);
    if (!tower) {
        builder->status = uform__fail(builder->outcome, UFORM_OUT_OF_MEMORY, builder->function, "cannot allocate a tower");
        return NULL;
    }
    tower->blocks = calloc(depth ? depth : 1, sizeof *tower->blocks);
    if (!tower->blocks) {
        free(tower);
        builder->status = uform__fail(builder->outcome, UFORM_OUT_OF_MEMORY, builder->function, "cannot allocate %zu blocks", depth);
        return NULL;
    }
    uform__model_config_t *config = &tower->config;
    config->hidden = hidden, config->depth = depth, config->heads = heads, config->mlp = mlp;
    config->embedding = embedding;
    config->matryoshka[0] = embedding, config->matryoshka_count = 1;
    config->temperature_groups = 1;
    config->norm_eps = 1e-5;
    config->modalities = 1u << modality;
    tower->arch.published = 1;
    tower->arch.eps = 1e-5f;
    tower->stems[modality].present = 1;
    builder->tower = tower;
    return tower;
}

void *uform__tower_own(uform__tower_builder_t *builder, size_t bytes) {
    if (builder->status != UFORM_OK) return NULL;
    void *memory = uform__model_own(builder->tower, bytes);
    if (!memory)
        builder->status = uform__fail(builder->outcome, UFORM_OUT_OF_MEMORY, builder->function,
                                      "cannot allocate %zu bytes for the weights", bytes);
    return memory;
}

static const char *dtype_name(const uform__safetensors_tensor_t *tensor) {
    const char *name = uform__safetensors_dtype_name(tensor->dtype);
    return name ? name : "?";
}

static void shape_text(const uform__safetensors_tensor_t *tensor, char *buffer, size_t capacity) {
    size_t used = (size_t)snprintf(buffer, capacity, "[");
    for (uint32_t i = 0; i < tensor->rank && used < capacity; ++i)
        used += (size_t)snprintf(buffer + used, capacity - used, "%s%llu", i ? ", " : "",
                                 (unsigned long long)tensor->shape[i]);
    if (used < capacity) snprintf(buffer + used, capacity - used, "]");
}

/* Whether a stored shape is [rows, columns] (columns 0: a vector [rows]) up to leading 1s
 * (pos_embed's [1, N, d]) and with its trailing dimensions flattened (a Conv2d's [d, 3, p, p] is a
 * [d, 3·p·p] matrix): a transposed matrix of another shape is never taken for the expected one. */
static int shape_matches(const uform__safetensors_tensor_t *tensor, size_t rows, size_t columns) {
    if (tensor->rank == 0) return rows == 1 && columns == 0;
    uint32_t first = 0, needed = columns ? 2 : 1;
    while (tensor->rank - first > needed && tensor->shape[first] == 1) ++first;
    if (!columns) return tensor->rank - first == 1 && tensor->shape[first] == rows;
    if (tensor->rank - first < 2 || tensor->shape[first] != rows) return 0;
    uint64_t rest = 1;
    for (uint32_t i = first + 1; i < tensor->rank; ++i) rest *= tensor->shape[i];
    return rest == columns;
}

const uform__safetensors_tensor_t *uform__tower_tensor(uform__tower_builder_t *builder, const char *name,
                                                       size_t rows, size_t columns, const char *shape) {
    if (builder->status != UFORM_OK) return NULL;
    const uform__safetensors_tensor_t *tensor = uform__tensor_set_find(builder->set, name);
    if (!tensor) {
        builder->status = uform__fail(builder->outcome, UFORM_FORMAT, builder->function,
                                      "tensor '%s%s' %s is missing from %s", builder->set->prefix, name, shape,
                                      builder->set->description);
        return NULL;
    }
    if (!shape_matches(tensor, rows, columns)) {
        char got[128];
        shape_text(tensor, got, sizeof got);
        builder->status = uform__fail(builder->outcome, UFORM_FORMAT, builder->function,
                                      "tensor '%s' has shape %s, expected %s (from the config)", tensor->name, got, shape);
        return NULL;
    }
    if (tensor->dtype != UFORM__SAFETENSORS_F32 && tensor->dtype != UFORM__SAFETENSORS_BF16 &&
        tensor->dtype != UFORM__SAFETENSORS_F16) {
        builder->status = uform__fail(builder->outcome, UFORM_FORMAT, builder->function,
                                      "tensor '%s' is %s, expected F32, BF16 or F16", tensor->name, dtype_name(tensor));
        return NULL;
    }
    builder->tower->parameters += tensor->element_count;
    builder->tower->weight_bytes += tensor->length;
    return tensor;
}

static void shape_of(char *buffer, size_t capacity, size_t rows, size_t columns) {
    if (columns) snprintf(buffer, capacity, "[%zu, %zu]", rows, columns);
    else snprintf(buffer, capacity, "[%zu]", rows);
}

const float *uform__tower_floats(uform__tower_builder_t *builder, const char *name, size_t rows, size_t columns) {
    char shape[64];
    shape_of(shape, sizeof shape, rows, columns);
    const uform__safetensors_tensor_t *tensor = uform__tower_tensor(builder, name, rows, columns, shape);
    if (!tensor) return NULL;
    float *values = uform__tower_own(builder, (size_t)tensor->element_count * sizeof(float));
    if (values) uform__model_widen(tensor->dtype, tensor->data, (size_t)tensor->element_count, values);
    return values;
}

/* A matrix used in place when it is F32 or BF16 and aligned to its element; else widened. */
static void matrix(uform__tower_builder_t *builder, uform__linear_t *layer, const uform__safetensors_tensor_t *tensor,
                   const unsigned char *data, size_t rows, size_t columns) {
    size_t element = tensor->dtype == UFORM__SAFETENSORS_F32 ? 4 : 2;
    layer->rows = rows, layer->columns = columns;
    if (tensor->dtype != UFORM__SAFETENSORS_F16 && (uintptr_t)data % element == 0) {
        layer->weight = data;
        layer->dtype = tensor->dtype == UFORM__SAFETENSORS_F32 ? UFORM__GEMM_F32 : UFORM__GEMM_BF16;
        return;
    }
    float *values = uform__tower_own(builder, rows * columns * sizeof(float));
    if (!values) return;
    uform__model_widen(tensor->dtype, data, rows * columns, values);
    layer->weight = values, layer->dtype = UFORM__GEMM_F32;
}

void uform__tower_linear(uform__tower_builder_t *builder, uform__linear_t *layer, const char *weight, size_t rows,
                         size_t columns, const char *bias, int transposed) {
    memset(layer, 0, sizeof *layer);
    char shape[64];
    shape_of(shape, sizeof shape, transposed ? columns : rows, transposed ? rows : columns);
    const uform__safetensors_tensor_t *tensor = uform__tower_tensor(builder, weight, transposed ? columns : rows, transposed ? rows : columns, shape);
    if (!tensor) return;
    if (!transposed) {
        matrix(builder, layer, tensor, tensor->data, rows, columns);
    } else {
        /* x·P with P [columns, rows] is the linear layer Pᵀ [rows, columns]. */
        float *all = uform__tower_own(builder, rows * columns * sizeof(float));
        float *laid = uform__tower_own(builder, rows * columns * sizeof(float));
        if (!all || !laid) return;
        uform__model_widen(tensor->dtype, tensor->data, (size_t)tensor->element_count, all);
        for (size_t r = 0; r < rows; ++r)
            for (size_t c = 0; c < columns; ++c) laid[r * columns + c] = all[c * rows + r];
        layer->weight = laid, layer->dtype = UFORM__GEMM_F32, layer->rows = rows, layer->columns = columns;
    }
    if (bias) layer->bias = uform__tower_floats(builder, bias, rows, 0);
}

void uform__tower_linear_rows(uform__tower_builder_t *builder, uform__linear_t *layer, const char *weight,
                              size_t total_rows, size_t first, size_t rows, size_t columns, const char *bias) {
    memset(layer, 0, sizeof *layer);
    char shape[64];
    shape_of(shape, sizeof shape, total_rows, columns);
    const uform__safetensors_tensor_t *tensor = uform__tower_tensor(builder, weight, total_rows, columns, shape);
    if (!tensor) return;
    size_t element = tensor->dtype == UFORM__SAFETENSORS_F32 ? 4 : 2;
    matrix(builder, layer, tensor, (const unsigned char *)tensor->data + first * columns * element, rows, columns);
    if (bias) {
        const float *all = uform__tower_floats(builder, bias, total_rows, 0);
        layer->bias = all ? all + first : NULL;
    }
}

/* `name` with its ending `from` replaced by `to` (TensorFlow-era BERT files call a LayerNorm's
 * weight and bias "gamma" and "beta"; transformers renames them as it loads). */
static int renamed(const char *name, const char *from, const char *to, char *buffer, size_t capacity) {
    size_t length = strlen(name), suffix = strlen(from);
    if (length < suffix || strcmp(name + length - suffix, from) != 0) return 0;
    return (size_t)snprintf(buffer, capacity, "%.*s%s", (int)(length - suffix), name, to) < capacity;
}

void uform__tower_norm(uform__tower_builder_t *builder, uform__norm_t *norm, const char *weight, const char *bias,
                       size_t width) {
    char gamma[512], beta[512];
    if (builder->status == UFORM_OK && !uform__tensor_set_find(builder->set, weight) &&
        renamed(weight, ".weight", ".gamma", gamma, sizeof gamma) && renamed(bias, ".bias", ".beta", beta, sizeof beta) &&
        uform__tensor_set_find(builder->set, gamma))
        weight = gamma, bias = beta;
    norm->weight = uform__tower_floats(builder, weight, width, 0);
    norm->bias = uform__tower_floats(builder, bias, width, 0);
}

void uform__tower_token_table(uform__tower_builder_t *builder, const char *name, size_t vocabulary) {
    uform__stem_t *stem = &builder->tower->stems[UFORM_MODALITY_TEXT];
    size_t d = builder->tower->config.hidden;
    uform__linear_t table;
    memset(&table, 0, sizeof table);
    char shape[64];
    shape_of(shape, sizeof shape, vocabulary, d);
    const uform__safetensors_tensor_t *tensor = uform__tower_tensor(builder, name, vocabulary, d, shape);
    if (!tensor) return;
    matrix(builder, &table, tensor, tensor->data, vocabulary, d);
    stem->tokens = table.weight, stem->tokens_dtype = table.dtype, stem->vocabulary = vocabulary;
}

void uform__tower_scale_rows(uform__tower_builder_t *builder, uform__linear_t *layer, const float *scale) {
    if (builder->status != UFORM_OK || !scale) return;
    size_t rows = layer->rows, columns = layer->columns;
    float *weight = uform__tower_own(builder, rows * columns * sizeof(float));
    float *bias = layer->bias ? uform__tower_own(builder, rows * sizeof(float)) : NULL;
    if (!weight || (layer->bias && !bias)) return;
    for (size_t r = 0; r < rows; ++r) {
        for (size_t c = 0; c < columns; ++c) {
            float w;
            if (layer->dtype == UFORM__GEMM_F32) w = ((const float *)layer->weight)[r * columns + c];
            else w = uform__nn_bf16_to_f32_one(((const uint16_t *)layer->weight)[r * columns + c]);
            weight[r * columns + c] = w * scale[r];
        }
        if (bias) bias[r] = layer->bias[r] * scale[r];
    }
    layer->weight = weight, layer->dtype = UFORM__GEMM_F32;
    if (bias) layer->bias = bias;
}

static void *own_for_i8(void *state, size_t bytes) { return uform__model_own(state, bytes); }

uform_status_t uform__tower_finish(uform__tower_builder_t *builder, const uform__parallel_t *parallel) {
    if (builder->status != UFORM_OK) return builder->status;
    uform_model_t tower = builder->tower;
    const uform__model_config_t *config = &tower->config;
    if (config->heads == 0 || config->hidden % config->heads || config->hidden / config->heads > 128)
        return builder->status = uform__fail(builder->outcome, UFORM_UNSUPPORTED, builder->function,
                                             "a head width of %zu / %zu heads: the attention kernels take whole widths up to 128",
                                             config->hidden, config->heads);
    /* Weights stay in the mapping: each layer is packed by the first call that runs it (lazy.c). */
    for (size_t i = 0; i < config->depth; ++i) {
        uform__block_t *block = &tower->blocks[i];
        uform__linear_t *layers[7] = {&block->out, &block->up, &block->down, &block->qkv, &block->q, &block->k, &block->v};
        for (int j = 0; j < 7; ++j) layers[j]->lazy = layers[j]->weight != NULL;
    }
    for (int m = 0; m < 4; ++m) {
        uform__stem_t *stem = &tower->stems[m];
        uform__linear_t *layers[6] = {&stem->patch, &stem->projection, &stem->pool.keys, &stem->pool.out, &stem->pool.up,
                                      &stem->pool.down};
        for (int j = 0; j < 6; ++j) layers[j]->lazy = layers[j]->weight != NULL;
        for (size_t j = 0; j < stem->dense_count; ++j) stem->dense[j].lazy = stem->dense[j].weight != NULL;
    }
    if (builder->status == UFORM_OK && tower->compute == UFORM_COMPUTE_I8)
        builder->status = uform__i8_prepare(tower, parallel, own_for_i8, tower, builder->outcome, builder->function);
    return builder->status;
}

void uform__tower_trunk(uform_model_t tower, uform__activation_t activation, double eps, uform__pooling_t pooling) {
    tower->arch.activation = activation;
    tower->arch.eps = (float)eps;
    tower->arch.pooling = pooling;
    tower->config.norm_eps = eps;
}

uform_model_t uform__tower_begin(uform__tower_builder_t *builder, const uform__family_context_t *context,
                                 const uform__tensor_set_t *set, uform_modality_t modality, size_t hidden, size_t depth,
                                 size_t heads, size_t mlp, size_t embedding) {
    memset(builder, 0, sizeof *builder);
    builder->set = set, builder->status = UFORM_OK;
    builder->outcome = context->outcome, builder->function = context->function;
    uform_model_t tower = uform__tower_new(builder, modality, hidden, depth, heads, mlp, embedding);
    if (!tower) return NULL;
    tower->cpu_class = context->cpu_class;
    tower->compute = context->compute;
    context->model->towers[modality] = tower; /* the model owns it from here, also when building fails */
    return tower;
}

/* The name of block `i`'s tensor from a pattern (NULL stays NULL). */
static const char *block_name(char *buffer, size_t capacity, const char *pattern, size_t i) {
    if (!pattern) return NULL;
    snprintf(buffer, capacity, pattern, i);
    return buffer;
}

void uform__tower_blocks(uform__tower_builder_t *builder, const uform__block_names_t *names) {
    uform_model_t tower = builder->tower;
    size_t d = tower->config.hidden, mlp = tower->config.mlp;
    char a[256], b[256];
#define LINEAR(layer, weight, bias, rows, columns)                                                               \
    uform__tower_linear(builder, layer, block_name(a, sizeof a, names->weight, i), rows, columns,                 \
                        block_name(b, sizeof b, names->bias, i), 0)
    for (size_t index = 0; index < tower->config.depth && builder->status == UFORM_OK; ++index) {
        uform__block_t *block = &tower->blocks[index];
        size_t i = builder->layers ? builder->layers[index] : index; /* the file's layer number */
        uform__tower_norm(builder, &block->norm1, block_name(a, sizeof a, names->norm1, i),
                          block_name(b, sizeof b, names->norm1_bias, i), d);
        uform__tower_norm(builder, &block->norm2, block_name(a, sizeof a, names->norm2, i),
                          block_name(b, sizeof b, names->norm2_bias, i), d);
        if (names->qkv) {
            LINEAR(&block->qkv, qkv, qkv_bias, 3 * d, d);
        } else {
            LINEAR(&block->q, q, q_bias, d, d);
            LINEAR(&block->k, k, k_bias, d, d);
            LINEAR(&block->v, v, v_bias, d, d);
        }
        LINEAR(&block->out, out, out_bias, d, d);
        LINEAR(&block->up, up, up_bias, mlp, d);
        LINEAR(&block->down, down, down_bias, d, mlp);
        if (names->scale1) {
            uform__tower_scale_rows(builder, &block->out, uform__tower_floats(builder, block_name(a, sizeof a, names->scale1, i), d, 0));
            uform__tower_scale_rows(builder, &block->down, uform__tower_floats(builder, block_name(a, sizeof a, names->scale2, i), d, 0));
        }
    }
#undef LINEAR
}
