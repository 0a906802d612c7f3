/*
 * I8 compute's weights (uform.h, UFORM_COMPUTE_I8; docs/int8.md): which layers run in int8, their
 * quantization per output channel at load and their packing for the model's class, in parallel
 * over layers. The scheme itself (quantizer, products) is kernels/gemm_i8.h's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/huge_pages.h"
#include "core/outcome.h"
#include "kernels/nn.h"
#include "model/model.h"

static int ends_with(const char *text, const char *suffix) {
    size_t length = strlen(text), suffix_length = strlen(suffix);
    return length >= suffix_length && strcmp(text + length - suffix_length, suffix) == 0;
}

/*
 * The trunk's four products run in int8; the stems' patch projections, the heads' projections and
 * text_choose's head stay float (docs/int8.md, "Which layers, and why"). The trunk holds 94% of
 * `small`'s multiply-adds per image, the patch projection 3%, the heads' projections under 0.1%.
 * Measured on the demo's trained model (300 held-out items per medium), the worst cosine of I8 to
 * F32 embeddings: trunk only, image 0.99997 and audio 0.99994; with the patch projections too,
 * 0.99989 and 0.99980 (three to four times as far from F32) for at most 3% of the work; with the
 * heads' projections as well, the text embeddings' mean fell from 0.999991 to 0.999987.
 */
int uform__i8_quantizes(const char *name) {
    if (strncmp(name, "trunk.", 6) != 0) return 0;
    return ends_with(name, ".attn.qkv.weight") || ends_with(name, ".attn.out.weight") ||
           ends_with(name, ".mlp.up.weight") || ends_with(name, ".mlp.down.weight");
}

void uform__i8_scale_name(const char *name, char *buffer, size_t capacity) {
    snprintf(buffer, capacity, "%s_scale", name);
}

/* One layer's work: its rows quantized (or taken from the checkpoint) and packed. `parts` (NULL when
 * the layer is its own source) are a published tower's queries, keys and values stored apart, whose
 * rows are quantized in turn into one matrix and packed as the block's one qkv product (see
 * each_layer). */
typedef struct prepare_layer_t {
    uform__linear_t *layer;
    const uform__linear_t *parts[3];
    int joined; /* parts[] are the sources */
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
    if (!q || work->joined) {
        ldq = uform__gemm_i8_k_padded(columns);
        quantized = malloc(rows * ldq + rows * sizeof(float));
        if (!quantized) {
            work->status = UFORM_OUT_OF_MEMORY;
            return;
        }
        float *scales = (float *)(quantized + rows * ldq);
        const uform__linear_t *const alone[1] = {layer}, *const *sources = work->joined ? work->parts : alone;
        for (size_t s = 0, row = 0; s < (work->joined ? 3u : 1u); row += sources[s]->rows, ++s) {
            const uform__linear_t *source = sources[s];
            if (source->q) { /* rows quantized in the checkpoint */
                for (size_t r = 0; r < source->rows; ++r) memcpy(quantized + (row + r) * ldq, source->q + r * columns, columns);
                memcpy(scales + row, source->q_scale, source->rows * sizeof(float));
            } else { /* each row of W quantized exactly as activation rows are (gemm_i8.h) */
                job->i8->quantize(source->rows, columns, source->weight, columns, source->dtype, quantized + row * ldq, ldq,
                                  scales + row, NULL, NULL);
            }
        }
        q = quantized, scale = scales;
    }
    work->status = job->i8->pack(q, ldq, scale, rows, columns, work->memory, work->bytes, &layer->i8, NULL);
    free(quantized);
}

/* Every linear layer of the model with its checkpoint name, for `visit`; `parts` (NULL, or three) as
 * in prepare_layer_t. */
typedef void (*layer_visit_fn)(void *state, uform__linear_t *layer, const char *name, const uform__linear_t *const *parts);

static int has_rows(const uform__linear_t *layer) { return layer->weight || layer->q; }

/* Whether block `block`'s queries, keys and values, stored apart, can run as one qkv product: all
 * three present with the same columns, and a bias on all or none (a missing one is not made 0). */
static int qkv_joins(const uform__block_t *block) {
    const uform__linear_t *q = &block->q, *k = &block->k, *v = &block->v;
    if (has_rows(&block->qkv) || !has_rows(q) || !has_rows(k) || !has_rows(v)) return 0;
    if (k->columns != q->columns || v->columns != q->columns) return 0;
    return (q->bias && k->bias && v->bias) || (!q->bias && !k->bias && !v->bias);
}

static void each_layer(uform_model_t model, layer_visit_fn visit, void *state) {
    static const char *const modalities[4] = {"text", "image", "video", "audio"};
    static const char *const products[4] = {"attn.qkv.weight", "attn.out.weight", "mlp.up.weight", "mlp.down.weight"};
    char name[96];
    for (size_t i = 0; i < model->config.depth; ++i) {
        uform__block_t *block = &model->blocks[i];
        uform__linear_t *four[4] = {&block->qkv, &block->out, &block->up, &block->down};
        for (int j = 0; j < 4; ++j) {
            snprintf(name, sizeof name, "trunk.%zu.%s", i, products[j]);
            visit(state, four[j], name, NULL);
        }
        /* A published tower's queries, keys and values stored apart are the attn.qkv product too,
         * and run as one: the block's qkv layer, packed from the three (rows [q; k; v]). Its
         * input is quantized once instead of three times, and one product instead of three
         * splits its 3d columns over the threads; each output column is computed as before, so
         * the results are the same bits (trunk.c's qkv_forward takes the qkv layer when it has
         * int8 panels). */
        uform__linear_t *parts[3] = {&block->q, &block->k, &block->v};
        snprintf(name, sizeof name, "trunk.%zu.%s", i, products[0]);
        if (qkv_joins(block)) visit(state, &block->qkv, name, (const uform__linear_t *const *)parts);
        else
            for (int j = 0; j < 3; ++j) visit(state, parts[j], name, NULL);
    }
    for (int m = 0; m < 4; ++m) {
        if (!model->stems[m].present) continue;
        if (m != UFORM_MODALITY_TEXT) {
            snprintf(name, sizeof name, "%s.patch.weight", modalities[m]);
            visit(state, &model->stems[m].patch, name, NULL);
        }
        snprintf(name, sizeof name, "%s.projection", modalities[m]);
        visit(state, &model->stems[m].projection, name, NULL);
    }
    if (model->stems[UFORM_MODALITY_TEXT].present && !model->arch.published)
        visit(state, &model->choose_head, "choose.head.weight", NULL);
}

typedef struct plan_t {
    prepare_layer_t *layers;
    size_t count, capacity;
} plan_t;

static void plan_layer(void *state, uform__linear_t *layer, const char *name, const uform__linear_t *const *parts) {
    plan_t *plan = state;
    if (!uform__i8_quantizes(name) || (!parts && !has_rows(layer))) return;
    if (plan->count < plan->capacity) {
        prepare_layer_t *work = &plan->layers[plan->count];
        work->layer = layer;
        if (parts) work->joined = 1, memcpy(work->parts, parts, sizeof work->parts);
    }
    plan->count += 1;
}

uform_status_t uform__i8_prepare(uform_model_t model, const uform__parallel_t *parallel, uform__i8_allocate_fn allocate,
                                 void *state, uform_outcome_t *outcome, const char *function) {
    const uform__gemm_i8_kernels_t *i8 = uform__gemm_i8_kernels(model->cpu_class);
    plan_t plan = {NULL, 0, 0};
    each_layer(model, plan_layer, &plan); /* count */
    plan.layers = calloc(plan.count + 1, sizeof *plan.layers);
    if (!plan.layers) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the quantization plan");
    plan.capacity = plan.count, plan.count = 0;
    each_layer(model, plan_layer, &plan);
    for (size_t i = 0; i < plan.count; ++i) {
        uform__linear_t *layer = plan.layers[i].layer;
        if (plan.layers[i].joined) { /* the qkv layer takes the three parts' rows and biases, in order */
            const uform__linear_t *const *parts = plan.layers[i].parts;
            layer->rows = parts[0]->rows + parts[1]->rows + parts[2]->rows, layer->columns = parts[0]->columns;
            layer->dtype = UFORM__GEMM_F32;
            float *bias = parts[0]->bias ? allocate(state, layer->rows * sizeof(float)) : NULL;
            if (parts[0]->bias && !bias) {
                free(plan.layers);
                return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a qkv bias of %zu floats",
                                   layer->rows);
            }
            for (size_t p = 0, row = 0; bias && p < 3; row += parts[p]->rows, ++p)
                memcpy(bias + row, parts[p]->bias, parts[p]->rows * sizeof(float));
            layer->bias = bias;
        }
        plan.layers[i].bytes = (i8->packed_size(layer->rows, layer->columns) + 63) / 64 * 64;
    }
    /* All layers' panels in one block, on 2 MiB pages where the system gives them (advice): at
     * batch 1 the panels stream from memory once a call, and on 4 KiB pages every 16 quads of a
     * panel cost a TLB miss and restart the hardware prefetcher's stream (bench/README.md,
     * "Batch-1 texts: INT8 panels on 2 MiB pages"). */
    size_t total = 0, huge = UFORM__HUGE_PAGE;
    for (size_t i = 0; i < plan.count; ++i) total += plan.layers[i].bytes;
    size_t slack = total >= huge ? huge : 0;
    unsigned char *block = total ? allocate(state, total + slack) : NULL;
    if (total && !block) {
        free(plan.layers);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate %zu bytes for int8 weights", total + slack);
    }
    if (slack) {
        block += (huge - (uintptr_t)block % huge) % huge;
        uform__advise_huge_pages(block, total / huge * huge);
    }
    for (size_t i = 0, offset = 0; i < plan.count; offset += plan.layers[i].bytes, ++i) plan.layers[i].memory = block + offset;
    prepare_job_t job = {i8, plan.layers, plan.count};
    uform__parallel_for(parallel, plan.count, prepare_prong, &job);
    uform_status_t status = UFORM_OK;
    for (size_t i = 0; i < plan.count && status == UFORM_OK; ++i)
        if (plan.layers[i].status != UFORM_OK)
            status = uform__fail(outcome, plan.layers[i].status, function, "cannot quantize a %zu × %zu weight (%s)",
                                 plan.layers[i].layer->rows, plan.layers[i].layer->columns,
                                 uform_status_name(plan.layers[i].status));
    free(plan.layers);
    return status;
}

/* ---- Quantized checkpoints (uform_model_quantize) ---- */

/* One output tensor: copied from the source, or quantized rows / scales made here. */
typedef struct quantized_file_t {
    uform__safetensors_source_t *sources;
    uint64_t *shapes;      /* [2 per source] */
    char (*names)[112];    /* scale names */
    void **owned;          /* buffers to free */
    size_t count, owned_count;
} quantized_file_t;

static void quantized_file_free(quantized_file_t *file) {
    for (size_t i = 0; file->owned && i < file->owned_count; ++i) free(file->owned[i]);
    free(file->owned), free(file->sources), free(file->shapes), free(file->names);
}

UFORM_API uform_status_t uform_model_quantize(const char *path, const char *output, uform_outcome_t *outcome) {
    static const char function[] = "uform_model_quantize";
    if (!path || !output)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s is NULL", !path ? "path" : "output");
    if (strcmp(path, output) == 0)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "the output '%s' is the checkpoint itself; write the quantized copy elsewhere", output);
    /* Loading validates the config and every tensor (and keeps the mapping open for us). */
    uform_ram_options_t options = {0};
    options.cpu_class = UFORM_CPU_CLASS_SERIAL;
    uform_model_t model = NULL;
    uform_status_t status = uform_model_load_ram(NULL, path, &options, &model, outcome);
    if (status != UFORM_OK) {
        if (outcome) snprintf(outcome->function, sizeof outcome->function, "%s", function);
        return status;
    }
    if (model->published) {
        uform_model_free(model);
        return uform__fail(outcome, UFORM_UNSUPPORTED, function,
                           "'%s' is a published model folder: load it with I8 compute instead (ram_options.compute, "
                           "uform --int8), which quantizes the same layers at load", path);
    }
    const uform__safetensors_t *source = model->file;
    size_t tensors = uform__safetensors_count(source);
    quantized_file_t file = {0};
    file.sources = calloc(2 * tensors + 1, sizeof *file.sources);
    file.shapes = calloc(4 * tensors + 2, sizeof *file.shapes);
    file.names = calloc(tensors + 1, sizeof *file.names);
    file.owned = calloc(2 * tensors + 1, sizeof *file.owned);
    if (!file.sources || !file.shapes || !file.names || !file.owned)
        status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the tensor list");
    const uform__gemm_i8_kernels_t *serial = uform__gemm_i8_kernels(UFORM_CPU_CLASS_SERIAL);
    for (size_t i = 0; i < tensors && status == UFORM_OK; ++i) {
        const uform__safetensors_tensor_t *tensor = uform__safetensors_at(source, i);
        if (strncmp(tensor->name, "optimizer.", 10) == 0) continue;
        uform__safetensors_source_t *target = &file.sources[file.count];
        uint64_t *shape = &file.shapes[2 * file.count];
        int quantize = uform__i8_quantizes(tensor->name) && tensor->rank == 2 &&
                       (tensor->dtype == UFORM__SAFETENSORS_BF16 || tensor->dtype == UFORM__SAFETENSORS_F32 ||
                        tensor->dtype == UFORM__SAFETENSORS_F16);
        if (!quantize) { /* copied as it is (an I8 matrix and its scale included) */
            for (uint32_t d = 0; d < tensor->rank && d < 2; ++d) shape[d] = tensor->shape[d];
            *target = (uform__safetensors_source_t){tensor->name, tensor->dtype, tensor->rank, tensor->rank ? shape : NULL,
                                                    tensor->data};
            file.count += 1;
            continue;
        }
        size_t rows = (size_t)tensor->shape[0], columns = (size_t)tensor->shape[1];
        /* The weights as the loader reads them: F32 and BF16 in place, F16 widened (load.c). */
        const void *weights = tensor->data;
        uform__gemm_dtype_t dtype = tensor->dtype == UFORM__SAFETENSORS_BF16 ? UFORM__GEMM_BF16 : UFORM__GEMM_F32;
        float *widened = NULL;
        if (tensor->dtype == UFORM__SAFETENSORS_F16 || (uintptr_t)tensor->data % (dtype == UFORM__GEMM_BF16 ? 2 : 4)) {
            widened = malloc(rows * columns * sizeof(float));
            if (!widened) {
                status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a copy of '%s'", tensor->name);
                break;
            }
            for (size_t e = 0; e < rows * columns; ++e) {
                uint16_t half;
                const unsigned char *bytes = tensor->data;
                if (tensor->dtype == UFORM__SAFETENSORS_F32) memcpy(&widened[e], bytes + 4 * e, 4);
                else {
                    memcpy(&half, bytes + 2 * e, 2);
                    widened[e] = tensor->dtype == UFORM__SAFETENSORS_BF16 ? uform__nn_bf16_to_f32_one(half)
                                                                           : uform__nn_f16_to_f32_one(half);
                }
            }
            weights = widened, dtype = UFORM__GEMM_F32;
        }
        int8_t *q = malloc(rows * columns + 1);
        float *scale = malloc(rows * sizeof(float) + 1);
        if (!q || !scale) {
            free(widened), free(q), free(scale);
            status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the quantized '%s'", tensor->name);
            break;
        }
        file.owned[file.owned_count++] = q, file.owned[file.owned_count++] = scale;
        /* Row by row with K unpadded (ldq = columns), the quantizer the loads use (gemm_i8.h). */
        int8_t *padded = malloc(uform__gemm_i8_k_padded(columns));
        if (!padded) {
            free(widened);
            status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a row of '%s'", tensor->name);
            break;
        }
        size_t element = dtype == UFORM__GEMM_BF16 ? 2 : 4;
        for (size_t r = 0; r < rows; ++r) {
            serial->quantize(1, columns, (const unsigned char *)weights + r * columns * element, columns, dtype, padded,
                             uform__gemm_i8_k_padded(columns), &scale[r], NULL, NULL);
            memcpy(q + r * columns, padded, columns);
        }
        free(padded), free(widened);
        shape[0] = rows, shape[1] = columns;
        *target = (uform__safetensors_source_t){tensor->name, UFORM__SAFETENSORS_I8, 2, shape, q};
        uform__i8_scale_name(tensor->name, file.names[i], sizeof file.names[i]);
        uint64_t *scale_shape = &file.shapes[2 * (file.count + 1)];
        scale_shape[0] = rows;
        file.sources[file.count + 1] = (uform__safetensors_source_t){file.names[i], UFORM__SAFETENSORS_F32, 1, scale_shape, scale};
        file.count += 2;
    }
    /* The metadata, unchanged, with the quantization named. */
    size_t metadata_count = uform__safetensors_metadata_count(source);
    uform__safetensors_pair_t *metadata = calloc(metadata_count + 1, sizeof *metadata);
    if (status == UFORM_OK && !metadata) status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate metadata");
    size_t pairs = 0;
    for (size_t i = 0; status == UFORM_OK && i < metadata_count; ++i) {
        const char *key, *value;
        if (uform__safetensors_metadata_at(source, i, &key, &value) && strcmp(key, "uform.quantization") != 0)
            metadata[pairs++] = (uform__safetensors_pair_t){key, value};
    }
    if (status == UFORM_OK) {
        metadata[pairs++] = (uform__safetensors_pair_t){"uform.quantization", "int8-per-channel"};
        uform__safetensors_write_t request = {file.sources, file.count, metadata, pairs, NULL, NULL};
        status = uform__safetensors_write(output, &request, outcome);
        if (status != UFORM_OK && outcome) snprintf(outcome->function, sizeof outcome->function, "%s", function);
    }
    free(metadata);
    quantized_file_free(&file);
    uform_model_free(model);
    return status == UFORM_OK ? uform__succeed(outcome, function) : status;
}
