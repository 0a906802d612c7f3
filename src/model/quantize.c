/*
 * I8 compute's weights (uform.h, UFORM_COMPUTE_I8; docs/int8.md): which layers run in int8, their
 * quantization per output channel at load and their packing for the model's class, in parallel
 * over layers. The scheme itself (quantizer, products) is kernels/gemm_i8.h's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "model/model.h"

static int ends_with(const char *text, const char *suffix) {
    size_t length = strlen(text), suffix_length = strlen(suffix);
    return length >= suffix_length && strcmp(text + length - suffix_length, suffix) == 0;
}

/*
 * The trunk's four products run in int8; the stems' patch projections, the heads' projections and
 * text_choose's head stay float. Measured (docs/int8.md, "Which layers"): the trunk holds 94% of
 * `small`'s multiply-adds per image, the patch projection 3% and the heads' projections under
 * 0.1%, so quantizing the rest buys ≤ 3% of speed while the patch projection alone, quantized,
 * moved the image embeddings' cosine to F32 the most of any layer.
 */
int uform__i8_quantizes(const char *name) {
    if (strncmp(name, "trunk.", 6) != 0) return 0;
    return ends_with(name, ".attn.qkv.weight") || ends_with(name, ".attn.out.weight") ||
           ends_with(name, ".mlp.up.weight") || ends_with(name, ".mlp.down.weight");
}

void uform__i8_scale_name(const char *name, char *buffer, size_t capacity) {
    snprintf(buffer, capacity, "%s_scale", name);
}

/* One layer's work: its rows quantized (or taken from the checkpoint) and packed. */
typedef struct prepare_layer_t {
    uform__linear_t *layer;
    void *memory;
    size_t bytes;
    uform_status_t status;
} prepare_layer_t;

typedef struct prepare_job_t {
    const uform__gemm_i8_kernels_t *i8;
    prepare_layer_t *layers;
    size_t count;
} prepare_job_t;

static void prepare_prong(void *context, size_t thread, size_t prong) {
    (void)thread;
    const prepare_job_t *job = context;
    prepare_layer_t *work = &job->layers[prong];
    uform__linear_t *layer = work->layer;
    size_t rows = layer->rows, columns = layer->columns;
    const int8_t *q = layer->q;
    const float *scale = layer->q_scale;
    int8_t *quantized = NULL;
    size_t ldq = columns;
    if (!q) {
        ldq = uform__gemm_i8_k_padded(columns);
        quantized = malloc(rows * ldq + rows * sizeof(float));
        if (!quantized) {
            work->status = UFORM_OUT_OF_MEMORY;
            return;
        }
        float *scales = (float *)(quantized + rows * ldq);
        /* Each row of W is quantized exactly as activation rows are (gemm_i8.h). */
        job->i8->quantize(rows, columns, layer->weight, columns, layer->dtype, quantized, ldq, scales, NULL, NULL);
        q = quantized, scale = scales;
    }
    work->status = job->i8->pack(q, ldq, scale, rows, columns, work->memory, work->bytes, &layer->i8, NULL);
    free(quantized);
}

uform_status_t uform__i8_prepare(uform_model_t model, const uform__parallel_t *parallel, uform__i8_allocate_fn allocate,
                                 void *state, uform_outcome_t *outcome, const char *function) {
    const uform__model_config_t *config = &model->config;
    const uform__gemm_i8_kernels_t *i8 = uform__gemm_i8_kernels(model->cpu_class);
    size_t count = 4 * config->depth;
    prepare_layer_t *layers = calloc(count, sizeof *layers);
    if (!layers) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the quantization plan");
    for (size_t i = 0; i < config->depth; ++i) {
        uform__block_t *block = &model->blocks[i];
        uform__linear_t *four[4] = {&block->qkv, &block->out, &block->up, &block->down};
        for (int j = 0; j < 4; ++j) layers[4 * i + j].layer = four[j];
    }
    for (size_t i = 0; i < count; ++i) {
        uform__linear_t *layer = layers[i].layer;
        layers[i].bytes = i8->packed_size(layer->rows, layer->columns);
        layers[i].memory = allocate(state, layers[i].bytes);
        if (!layers[i].memory) {
            free(layers);
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate %zu bytes for int8 weights",
                               layers[i].bytes);
        }
    }
    prepare_job_t job = {i8, layers, count};
    uform__parallel_for(parallel, count, prepare_prong, &job);
    uform_status_t status = UFORM_OK;
    for (size_t i = 0; i < count && status == UFORM_OK; ++i)
        if (layers[i].status != UFORM_OK)
            status = uform__fail(outcome, layers[i].status, function, "cannot quantize trunk block %zu's weights (%s)",
                                 i / 4, uform_status_name(layers[i].status));
    free(layers);
    return status;
}
