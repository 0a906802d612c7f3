/*
 * The trunk (model.md): L pre-norm blocks over every token of a chunk, packed end to end.
 *
 *   h = x + attn.out( attention( norm1(x) ) )         attention per item, bidirectional
 *   y = h + mlp.down( gelu( mlp.up( norm2(h) ) ) )    GELU in the exact erf form
 *
 * x [T, d] is updated in place; the products go through the GEMM kernels (with the GELU fused into
 * mlp.up's epilogue) and attention through the tiled packed-sequence kernel.
 */
#include <string.h>

#include "core/outcome.h"
#include "model/encode.h"

size_t uform__trunk_scratch_floats(const uform__model_config_t *config, size_t tokens) {
    size_t d = config->hidden;
    return tokens * (d + 3 * d + d + config->mlp + config->heads + 2) + 6 * 16;
}

void uform__trunk_scratch_carve(const uform__model_config_t *config, size_t tokens, float *memory,
                                uform__trunk_scratch_t *scratch) {
    size_t d = config->hidden;
    /* Every piece starts 64-byte aligned: 16 floats of slack each. */
#define CARVE(field, floats)                                                        \
    scratch->field = memory;                                                        \
    memory += ((floats) + 15) / 16 * 16;
    CARVE(a, tokens * d)
    CARVE(qkv, tokens * 3 * d)
    CARVE(att, tokens * d)
    CARVE(hidden, tokens * config->mlp)
    CARVE(lse, tokens * config->heads)
    CARVE(mean, tokens)
    CARVE(rstd, tokens)
#undef CARVE
}

/* BF16 compute: round the activations entering a product to BF16 (nearest even), in place. The
 * GEMM then sees exactly BF16 operands on every class (GENOA's would round them anyway). */
static void round_to_bf16(float *values, size_t count) {
    for (size_t i = 0; i < count; ++i) {
        union { float f; uint32_t u; } bits = {.f = values[i]};
        if ((bits.u & 0x7FFFFFFFu) > 0x7F800000u) continue; /* NaN stays */
        bits.u += 0x7FFFu + ((bits.u >> 16) & 1u);
        bits.u &= 0xFFFF0000u;
        values[i] = bits.f;
    }
}

uform_status_t uform__linear_forward(uform__compute_t *compute, const uform__linear_t *layer, size_t rows,
                                     const float *x, size_t ldx, float *y, size_t ldy, size_t out_rows, int epilogue,
                                     uform_outcome_t *outcome) {
    if (rows == 0 || out_rows == 0) return UFORM_OK;
    uform__gemm_forward_t args;
    memset(&args, 0, sizeof args);
    args.m = rows;
    args.n = out_rows;
    args.k = layer->columns;
    args.x = x, args.ldx = ldx, args.x_dtype = UFORM__GEMM_F32;
    args.w = layer->weight, args.ldw = layer->columns, args.w_dtype = layer->dtype;
    /* Packed weights cover all rows; a Matryoshka prefix (out_rows < rows) reads the plain rows. */
    if (compute->packed && layer->packed.data && out_rows == layer->rows) args.packed = &layer->packed;
    args.bias = layer->bias;
    args.gelu = epilogue == UFORM__LINEAR_GELU;
    args.accumulate = epilogue == UFORM__LINEAR_ACCUMULATE;
    args.y = y, args.ldy = ldy;
    args.scratch = compute->gemm_scratch, args.scratch_capacity = compute->gemm_scratch_bytes;
    compute->flops += 2.0 * (double)rows * (double)out_rows * (double)layer->columns;
    /* F32 compute keeps F32 activations: the F32 kernels widen BF16 weights exactly while packing.
     * BF16 compute takes the BF16 kernels (vdpbf16ps on Genoa), which round activations to BF16. */
    if (layer->dtype == UFORM__GEMM_BF16 && compute->compute == UFORM_COMPUTE_BF16)
        return compute->gemm->forward_bf16(&args, compute->parallel, outcome);
    return compute->gemm->forward_f32(&args, compute->parallel, outcome);
}

uform_status_t uform__trunk_forward(const uform_model_t model, uform__compute_t *compute, float *x, size_t tokens,
                                    const size_t *offsets, size_t items, const uform__trunk_scratch_t *scratch,
                                    uform__call_context_t *context, size_t *done) {
    const uform__model_config_t *config = &model->config;
    const uform__nn_kernels_t *nn = compute->nn;
    const uform__parallel_t *parallel = compute->parallel;
    size_t d = config->hidden, mlp = config->mlp;
    /* model.md fixes the trunk's norms at eps 1e-6; the config's norm_eps is the heads'. */
    const float eps = 1e-6f;
    /* BF16 compute rounds the activations entering each product — unless the kernels' BF16 dot
     * products round them on the way in anyway (Genoa and later), where the pass would be redundant. */
    uform_cpu_class_t kernels_class = compute->gemm->cpu_class;
    int native_bf16 = kernels_class == UFORM_CPU_CLASS_AMD_GENOA || kernels_class == UFORM_CPU_CLASS_INTEL_SAPPHIRE ||
                      kernels_class == UFORM_CPU_CLASS_INTEL_GRANITE || kernels_class == UFORM_CPU_CLASS_INTEL_DIAMOND;
    int bf16 = compute->compute == UFORM_COMPUTE_BF16 && !native_bf16;
    uform__attention_shape_t shape = {tokens, config->heads, d / config->heads, offsets, items};
    for (size_t i = 0; i < config->depth; ++i) {
        const uform__block_t *block = &model->blocks[i];
        uform_status_t status;
        /* h = x + attn.out(attention(norm1(x))) */
        nn->layernorm_forward(tokens, d, x, d, block->norm1.weight, block->norm1.bias, eps, scratch->a, d,
                              scratch->mean, scratch->rstd, parallel);
        if (bf16) round_to_bf16(scratch->a, tokens * d);
        status = uform__linear_forward(compute, &block->qkv, tokens, scratch->a, d, scratch->qkv, 3 * d, 3 * d, 0,
                                       context->outcome);
        if (status != UFORM_OK) return status;
        nn->attention_forward(&shape, scratch->qkv, scratch->att, scratch->lse, parallel);
        for (size_t item = 0; item < items; ++item) {
            double length = (double)(offsets[item + 1] - offsets[item]);
            compute->flops += 4.0 * length * length * (double)d;
        }
        if (bf16) round_to_bf16(scratch->att, tokens * d);
        /* x += attn.out(...): the residual is accumulated by the product itself. */
        status = uform__linear_forward(compute, &block->out, tokens, scratch->att, d, x, d, d, UFORM__LINEAR_ACCUMULATE,
                                       context->outcome);
        if (status != UFORM_OK) return status;
        /* y = h + mlp.down(gelu(mlp.up(norm2(h)))) */
        nn->layernorm_forward(tokens, d, x, d, block->norm2.weight, block->norm2.bias, eps, scratch->a, d,
                              scratch->mean, scratch->rstd, parallel);
        if (bf16) round_to_bf16(scratch->a, tokens * d);
        status = uform__linear_forward(compute, &block->up, tokens, scratch->a, d, scratch->hidden, mlp, mlp,
                                       UFORM__LINEAR_GELU, context->outcome);
        if (status != UFORM_OK) return status;
        if (bf16) round_to_bf16(scratch->hidden, tokens * mlp);
        status = uform__linear_forward(compute, &block->down, tokens, scratch->hidden, mlp, x, d, d,
                                       UFORM__LINEAR_ACCUMULATE, context->outcome);
        if (status != UFORM_OK) return status;
        *done += 1;
        if (uform__progress_advance(&context->progress, *done) == UFORM_CANCEL)
            return uform__fail(context->outcome, UFORM_CANCELLED, context->function,
                               "cancelled by the progress handler in trunk block %zu of %zu", i + 1, config->depth);
    }
    return UFORM_OK;
}
