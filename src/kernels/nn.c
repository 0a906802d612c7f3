/*
 * Dispatch of the NN kernel tables by CPU class, the range-splitting helper the kernels share,
 * and the argument checks for shapes that come from outside. Compiled for the baseline CPU.
 */
#include <math.h>
#include <string.h>

#include "kernels/nn.h"

#include "core/outcome.h"

const uform__nn_kernels_t *uform__nn_kernels(uform_cpu_class_t cpu_class) {
    switch (cpu_class) {
    case UFORM_CPU_CLASS_INTEL_HASWELL:
    case UFORM_CPU_CLASS_INTEL_SIERRA:
        return &uform__nn_kernels_haswell;
    case UFORM_CPU_CLASS_INTEL_SKYLAKE:
    case UFORM_CPU_CLASS_INTEL_ICELAKE:
        return &uform__nn_kernels_skylake;
    case UFORM_CPU_CLASS_AMD_GENOA: /* SKYLAKE's table but for the BF16 attention (VDPBF16PS) */
    case UFORM_CPU_CLASS_INTEL_SAPPHIRE:
    case UFORM_CPU_CLASS_INTEL_GRANITE:
    case UFORM_CPU_CLASS_INTEL_DIAMOND:
        return &uform__nn_kernels_genoa;
    default:
        return &uform__nn_kernels_serial;
    }
}

const uform__nn_attention_ops_t *uform__nn_attention_ops(uform_cpu_class_t cpu_class) {
    switch (cpu_class) {
    case UFORM_CPU_CLASS_INTEL_HASWELL:
    case UFORM_CPU_CLASS_INTEL_SIERRA:
        return &uform__nn_attention_ops_haswell;
    case UFORM_CPU_CLASS_INTEL_SKYLAKE:
    case UFORM_CPU_CLASS_INTEL_ICELAKE:
    case UFORM_CPU_CLASS_AMD_GENOA:
    case UFORM_CPU_CLASS_INTEL_SAPPHIRE:
    case UFORM_CPU_CLASS_INTEL_GRANITE:
    case UFORM_CPU_CLASS_INTEL_DIAMOND:
        return &uform__nn_attention_ops_skylake;
    default:
        return &uform__nn_attention_ops_serial;
    }
}

typedef struct ranges_context_t {
    uform__nn_range_fn fn;
    void *context;
    size_t n, prongs;
} ranges_context_t;

static void ranges_prong(void *opaque, size_t thread, size_t prong) {
    const ranges_context_t *ranges = opaque;
    size_t begin, end;
    uform__split_range(ranges->n, ranges->prongs, prong, &begin, &end);
    if (begin < end) ranges->fn(ranges->context, begin, end);
}

void uform__nn_parallel_ranges(const uform__parallel_t *parallel, size_t n, size_t grain, uform__nn_range_fn fn,
                               void *context) {
    if (n == 0) return;
    if (grain == 0) grain = 1;
    size_t threads = uform__parallel_threads(parallel), most = (n + grain - 1) / grain;
    size_t prongs = threads < most ? threads : most;
    if (prongs <= 1) {
        fn(context, 0, n);
        return;
    }
    ranges_context_t ranges = {fn, context, n, prongs};
    uform__parallel_for(parallel, prongs, ranges_prong, &ranges);
}

uform_status_t uform__nn_check_attention(const uform__attention_shape_t *shape, uform_outcome_t *outcome) {
    if (!shape || !shape->offsets)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "attention shape or its offsets is NULL");
    if (shape->heads == 0 || shape->head_width == 0)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                           "attention needs heads >= 1 and head width >= 1, found heads %zu, head width %zu",
                           shape->heads, shape->head_width);
    if (shape->head_width > UFORM__NN_ATTENTION_MAX_HEAD_WIDTH)
        return uform__fail(outcome, UFORM_UNSUPPORTED, __func__,
                           "attention head width %zu exceeds the kernels' limit of %d", shape->head_width,
                           UFORM__NN_ATTENTION_MAX_HEAD_WIDTH);
    if (shape->offsets[0] != 0)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "attention offsets[0] is %zu, expected 0",
                           shape->offsets[0]);
    for (size_t i = 0; i < shape->count; ++i)
        if (shape->offsets[i + 1] < shape->offsets[i])
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                               "attention offsets[%zu] < offsets[%zu] (%zu < %zu)", i + 1, i, shape->offsets[i + 1],
                               shape->offsets[i]);
    if (shape->offsets[shape->count] != shape->tokens)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                           "attention offsets[%zu] is %zu but the batch has %zu tokens", shape->count,
                           shape->offsets[shape->count], shape->tokens);
    if (shape->queries)
        for (size_t i = 0; i < shape->count; ++i)
            if (shape->queries[i] < shape->offsets[i] || shape->queries[i] >= shape->offsets[i + 1])
                return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                                   "attention queries[%zu] is token %zu, outside item %zu's tokens %zu..%zu", i,
                                   shape->queries[i], i, shape->offsets[i], shape->offsets[i + 1]);
    return UFORM_OK;
}

uform_status_t uform__nn_check_targets(size_t rows, size_t width, const int32_t *targets, uform_outcome_t *outcome) {
    for (size_t r = 0; r < rows; ++r)
        if (targets[r] >= 0 && (size_t)targets[r] >= width)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                               "targets[%zu] is %d, expected below the row width %zu (or negative to skip the row)", r,
                               (int)targets[r], width);
    return UFORM_OK;
}

uform_status_t uform__nn_check_ids(size_t n, const uint32_t *ids, size_t vocabulary, uform_outcome_t *outcome) {
    for (size_t i = 0; i < n; ++i)
        if (ids[i] >= vocabulary)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                               "ids[%zu] is %u, expected below the table's %zu rows", i, (unsigned)ids[i], vocabulary);
    return UFORM_OK;
}

uform_status_t uform__nn_check_offsets(size_t groups, const size_t *offsets, size_t rows, uform_outcome_t *outcome) {
    if (offsets[0] != 0)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "offsets[0] is %zu, expected 0", offsets[0]);
    for (size_t g = 0; g < groups; ++g)
        if (offsets[g + 1] < offsets[g])
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "offsets[%zu] < offsets[%zu] (%zu < %zu)",
                               g + 1, g, offsets[g + 1], offsets[g]);
    if (offsets[groups] != rows)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "offsets[%zu] is %zu, expected %zu rows", groups,
                           offsets[groups], rows);
    return UFORM_OK;
}

void uform__nn_adamw_with(uform__nn_range_fn range, size_t n, float *params, const float *grads, float *m, float *v,
                          float lr, float beta1, float beta2, float eps, float weight_decay, uint64_t step,
                          const uform__parallel_t *parallel) {
    double correction1 = 1.0 - pow((double)beta1, (double)step), correction2 = 1.0 - pow((double)beta2, (double)step);
    uform__nn_adamw_t constants = {params, m, v, grads, beta1, beta2, eps, 1.0f - lr * weight_decay,
                                   (float)(lr / correction1), (float)sqrt(correction2)};
    uform__nn_parallel_ranges(parallel, n, 4096, range, &constants);
}

enum { sum_prongs_most = 64 };

typedef struct sum_context_t {
    uform__nn_block_sum_fn block_sum;
    const float *x;
    size_t n, blocks, prongs;
    double partial[sum_prongs_most];
} sum_context_t;

static void sum_squares_prong(void *opaque, size_t thread, size_t prong) {
    sum_context_t *c = opaque;
    size_t first, last;
    uform__split_range(c->blocks, c->prongs, prong, &first, &last);
    double total = 0.0;
    for (size_t b = first; b < last; ++b) {
        size_t begin = b * UFORM__NN_SUM_BLOCK;
        size_t end = begin + UFORM__NN_SUM_BLOCK < c->n ? begin + UFORM__NN_SUM_BLOCK : c->n;
        total += c->block_sum(c->x, begin, end);
    }
    c->partial[prong] = total;
}

double uform__nn_sum_squares_with(uform__nn_block_sum_fn block_sum, size_t n, const float *x,
                                  const uform__parallel_t *parallel) {
    sum_context_t context = {.block_sum = block_sum, .x = x, .n = n,
                             .blocks = (n + UFORM__NN_SUM_BLOCK - 1) / UFORM__NN_SUM_BLOCK};
    if (context.blocks == 0) return 0.0;
    context.prongs = context.blocks < sum_prongs_most ? context.blocks : sum_prongs_most;
    uform__parallel_for(parallel, context.prongs, sum_squares_prong, &context);
    double total = 0.0;
    for (size_t p = 0; p < context.prongs; ++p) total += context.partial[p];
    return total;
}

typedef struct softmax_context_t {
    const uform__nn_attention_ops_t *ops;
    size_t width, x_stride, y_stride;
    const float *x;
    float *y;
} softmax_context_t;

static void softmax_rows(void *opaque, size_t begin, size_t end) {
    const softmax_context_t *c = opaque;
    for (size_t r = begin; r < end; ++r) {
        float *row = c->y + r * c->y_stride;
        const float *source = c->x + r * c->x_stride;
        if (row != source) memmove(row, source, c->width * sizeof(float));
        float high = c->ops->row_max(row, c->width);
        float sum = c->ops->exp_shift_sum(row, c->width, high);
        float scale = 1.0f / sum;
        for (size_t j = 0; j < c->width; ++j) row[j] *= scale;
    }
}

void uform__nn_softmax_with(const uform__nn_attention_ops_t *ops, size_t rows, size_t width, const float *x,
                            size_t x_stride, float *y, size_t y_stride, const uform__parallel_t *parallel) {
    if (width == 0) return;
    softmax_context_t context = {ops, width, x_stride, y_stride, x, y};
    uform__nn_parallel_ranges(parallel, rows, 16, softmax_rows, &context);
}
