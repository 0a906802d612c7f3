/*
 * A linear layer under I8 compute (uform.h, docs/int8.md): its input rows quantized per row into
 * the call's scratch, then the int8 product of kernels/gemm_i8.h with the bias (and GELU, or the
 * residual add) fused; the output is F32. A call on an executor of another class than the one the
 * model packed its weights for repacks each weight into the call's layout first (slow, exact).
 */
#include <string.h>

#include "core/outcome.h"
#include "model/encode.h"

/* The widest input an int8 layer takes, in bytes of a quantized row. */
static size_t widest_input(const uform__model_config_t *config) {
    size_t width = config->hidden > config->mlp ? config->hidden : config->mlp;
    return (uform__gemm_i8_k_padded(width) + 63) / 64 * 64;
}

static size_t aligned(size_t bytes) { return (bytes + 63) / 64 * 64; }

/* The largest packed weight of the call's class among the int8 layers (for repacking). */
static size_t largest_repack(const uform_model_t model, const uform__gemm_i8_kernels_t *i8, size_t *rows_bytes) {
    const uform__model_config_t *config = &model->config;
    size_t d = config->hidden, shapes[4][2] = {{3 * d, d}, {d, d}, {config->mlp, d}, {d, config->mlp}}, largest = 0;
    *rows_bytes = 0;
    for (int s = 0; s < 4; ++s) {
        size_t size = i8->packed_size(shapes[s][0], shapes[s][1]), rows = shapes[s][0] * uform__gemm_i8_k_padded(shapes[s][1]);
        if (size > largest) largest = size;
        if (rows > *rows_bytes) *rows_bytes = rows;
    }
    return largest;
}

size_t uform__i8_scratch_bytes(const uform_model_t model, const uform__compute_t *compute, size_t tokens) {
    if (!compute->i8) return 0;
    size_t bytes = aligned(tokens * widest_input(&model->config)) + 2 * aligned(tokens * 4);
    bytes += aligned(compute->i8->scratch_bytes(uform__parallel_threads(compute->parallel)));
    if (!compute->packed) {
        size_t rows_bytes, packed = largest_repack(model, compute->i8, &rows_bytes);
        bytes += aligned(rows_bytes) + aligned(packed);
    } else { /* the fused blocks' scratch, one stride a thread (trunk_i8.c) */
        size_t stride = uform__trunk_i8_fused_stride(&model->config, compute->i8, widest_input(&model->config));
        bytes += stride * uform__parallel_threads(compute->parallel);
    }
    return bytes;
}

void uform__i8_scratch_carve(const uform_model_t model, uform__compute_t *compute, size_t tokens, void *memory) {
    uform__i8_scratch_t *scratch = &compute->i8_scratch;
    unsigned char *cursor = memory;
    memset(scratch, 0, sizeof *scratch);
    scratch->capacity = tokens, scratch->width = widest_input(&model->config);
    scratch->rows = (int8_t *)cursor, cursor += aligned(tokens * scratch->width);
    scratch->scales = (float *)cursor, cursor += aligned(tokens * 4);
    scratch->sums = (int32_t *)cursor, cursor += aligned(tokens * 4);
    scratch->gemm_bytes = compute->i8->scratch_bytes(uform__parallel_threads(compute->parallel));
    scratch->gemm = scratch->gemm_bytes ? cursor : NULL, cursor += aligned(scratch->gemm_bytes);
    if (!compute->packed) {
        size_t rows_bytes;
        scratch->repacked_bytes = largest_repack(model, compute->i8, &rows_bytes);
        scratch->unpacked = (int8_t *)cursor, cursor += aligned(rows_bytes);
        scratch->repacked = cursor;
    } else {
        scratch->fused = cursor;
        scratch->fused_stride = uform__trunk_i8_fused_stride(&model->config, compute->i8, scratch->width);
        scratch->fused_threads = uform__parallel_threads(compute->parallel);
    }
}

uform_status_t uform__linear_forward_i8(uform__compute_t *compute, const uform__linear_t *layer, size_t rows,
                                        const void *x, size_t ldx, float *y, size_t ldy, int epilogue,
                                        uform_outcome_t *outcome) {
    static const char function[] = "uform__linear_forward_i8";
    uform__i8_scratch_t *scratch = &compute->i8_scratch;
    size_t k = layer->columns, k_padded = uform__gemm_i8_k_padded(k);
    if (rows > scratch->capacity || k_padded > scratch->width)
        return uform__fail(outcome, UFORM_INTERNAL, function, "I8 scratch holds %zu rows of %zu bytes; %zu of %zu asked",
                           scratch->capacity, scratch->width, rows, k_padded);
    const uform__gemm_i8_packed_t *packed = &layer->i8;
    uform__gemm_i8_packed_t repacked;
    if (!compute->packed) { /* another class's layout: back to rows, then this class's panels */
        uform__gemm_i8_unpack(packed, scratch->unpacked, k_padded);
        uform_status_t status = compute->i8->pack(scratch->unpacked, k_padded, packed->scale, packed->n, k, scratch->repacked,
                                                  scratch->repacked_bytes, &repacked, outcome);
        if (status != UFORM_OK) return status;
        packed = &repacked;
    }
    if (!(epilogue & UFORM__LINEAR_X_QUANTIZED))
        compute->i8->quantize(rows, k, x, ldx, (epilogue & UFORM__LINEAR_X_BF16) ? UFORM__GEMM_BF16 : UFORM__GEMM_F32,
                              scratch->rows, k_padded, scratch->scales, scratch->sums, compute->parallel);
    uform__gemm_i8_forward_t args = {
        .m = rows, .n = layer->rows, .k = k, .x = {scratch->rows, k_padded, scratch->scales, scratch->sums},
        .packed = packed, .bias = layer->bias, .gelu = uform__linear_i8_gelu(epilogue),
        .y = y, .ldy = ldy, .output = UFORM__GEMM_I8_F32, .accumulate = (epilogue & UFORM__LINEAR_ACCUMULATE) != 0,
        .scratch = scratch->gemm, .scratch_capacity = scratch->gemm_bytes};
    compute->flops += 2.0 * (double)rows * (double)layer->rows * (double)k;
    return compute->i8->forward(&args, compute->parallel, outcome);
}

typedef struct norm_quantize_job_t {
    uform__compute_t *compute;
    const uform__norm_t *norm;
    size_t rows, d, prongs;
    float *x, *mean, *rstd;
    float eps;
} norm_quantize_job_t;

static void norm_quantize_prong(void *context, size_t thread, size_t prong) {
    (void)thread;
    const norm_quantize_job_t *job = context;
    size_t begin, end, d = job->d, k_padded = uform__gemm_i8_k_padded(d);
    uform__split_range(job->rows, job->prongs, prong, &begin, &end);
    if (begin == end) return;
    const uform__compute_t *compute = job->compute;
    const uform__i8_scratch_t *scratch = &compute->i8_scratch;
    float *x = job->x + begin * d;
    compute->nn->layernorm_forward(end - begin, d, x, d, job->norm->weight, job->norm->bias, job->eps, x, d,
                                   job->mean + begin, job->rstd + begin, NULL);
    compute->i8->quantize(end - begin, d, x, d, UFORM__GEMM_F32, scratch->rows + begin * k_padded, k_padded,
                          scratch->scales + begin, scratch->sums + begin, NULL);
}

int uform__norm_quantize_i8(uform__compute_t *compute, const uform__norm_t *norm, size_t rows, size_t d, float *x,
                            float *mean, float *rstd, float eps) {
    const uform__i8_scratch_t *scratch = &compute->i8_scratch;
    if (rows > scratch->capacity || uform__gemm_i8_k_padded(d) > scratch->width) {
        compute->nn->layernorm_forward(rows, d, x, d, norm->weight, norm->bias, eps, x, d, mean, rstd, compute->parallel);
        return 0;
    }
    /* A range a thread for a few rows (a batch-1 text); a few ranges a thread for balance beyond. */
    size_t threads = uform__parallel_threads(compute->parallel), prongs = rows < 64 * threads ? threads : 4 * threads;
    if (prongs > rows) prongs = rows;
    norm_quantize_job_t job = {compute, norm, rows, d, prongs, x, mean, rstd, eps};
    uform__parallel_for(compute->parallel, prongs, norm_quantize_prong, &job);
    return 1;
}
