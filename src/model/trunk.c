/*
 * The trunk (docs/model.md): L pre-norm blocks over every token of a chunk, packed end to end.
 *
 *   h = x + attn.out( attention( norm1(x) ) )         attention per item, bidirectional
 *   y = h + mlp.down( gelu( mlp.up( norm2(h) ) ) )    GELU in the exact erf form
 *
 * x [T, d] is updated in place; the products go through the GEMM kernels (with the GELU fused into
 * mlp.up's epilogue) and attention through the tiled packed-sequence kernel. BF16 compute takes
 * the BF16 forms of both (nn.h's attention_forward_bf16, the GEMM's fast GELU) and, on classes
 * whose products round their inputs to BF16 (Genoa and later), hands the norms' rows and the MLP's
 * hidden rows to their products as BF16, read in place.
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

void uform__round_to_bf16(float *values, size_t count) {
    for (size_t i = 0; i < count; ++i) {
        union { float f; uint32_t u; } bits = {.f = values[i]};
        if ((bits.u & 0x7FFFFFFFu) > 0x7F800000u) continue; /* NaN stays */
        bits.u += 0x7FFFu + ((bits.u >> 16) & 1u);
        bits.u &= 0xFFFF0000u;
        values[i] = bits.f;
    }
}

uform_status_t uform__linear_forward(uform__compute_t *compute, const uform__linear_t *layer, size_t rows,
                                     const void *x, size_t ldx, void *y, size_t ldy, size_t out_rows, int epilogue,
                                     uform_outcome_t *outcome) {
    if (rows == 0 || out_rows == 0) return UFORM_OK;
    int unfused = epilogue & UFORM__LINEAR_UNFUSED_ACTIVATIONS;
    if (unfused) {
        /* The product, then the activation over its F32 rows. */
        if (epilogue & (UFORM__LINEAR_Y_BF16 | UFORM__LINEAR_ACCUMULATE))
            return uform__fail(outcome, UFORM_INTERNAL, "uform__linear_forward",
                               "an unfused activation needs F32 rows that the product writes");
        uform_status_t status = uform__linear_forward(compute, layer, rows, x, ldx, y, ldy, out_rows,
                                                      epilogue & ~UFORM__LINEAR_UNFUSED_ACTIVATIONS, outcome);
        if (status == UFORM_OK) uform__linear_activation_apply(compute, unfused, y, rows, out_rows, ldy);
        return status;
    }
    if (uform__linear_is_i8(compute, layer)) {
        if (out_rows != layer->rows || (epilogue & UFORM__LINEAR_Y_BF16))
            return uform__fail(outcome, UFORM_INTERNAL, "uform__linear_forward",
                               "an int8 layer's product writes all %zu rows as F32", layer->rows);
        return uform__linear_forward_i8(compute, layer, rows, x, ldx, y, ldy, epilogue, outcome);
    }
    uform__gemm_forward_t args;
    memset(&args, 0, sizeof args);
    args.m = rows;
    args.n = out_rows;
    args.k = layer->columns;
    args.x = x, args.ldx = ldx;
    args.x_dtype = (epilogue & UFORM__LINEAR_X_BF16) ? UFORM__GEMM_BF16 : UFORM__GEMM_F32;
    args.w = layer->weight, args.ldw = layer->columns, args.w_dtype = layer->dtype;
    /* A published tower's F32 weights also run the BF16 products under BF16 compute (lazy.c). */
    int bf16 = (layer->dtype == UFORM__GEMM_BF16 || layer->lazy) && compute->compute == UFORM_COMPUTE_BF16 &&
               !(epilogue & UFORM__LINEAR_F32);
    /* Packed weights cover all rows; a Matryoshka prefix (out_rows < rows) reads the plain rows, and
     * so does a product forced to F32 whose weights were packed as BF16 pairs. */
    if (compute->packed && layer->packed.data && out_rows == layer->rows &&
        (layer->packed.panel_dtype == UFORM__GEMM_BF16) == bf16)
        args.packed = &layer->packed;
    else if (compute->packed && layer->lazy && out_rows == layer->rows)
        args.packed = uform__linear_lazy_packed(compute, layer, bf16);
    args.bias = layer->bias;
    if (epilogue & UFORM__LINEAR_GELU) args.gelu = bf16 ? UFORM__GEMM_GELU_FAST : UFORM__GEMM_GELU_EXACT;
    if (epilogue & UFORM__LINEAR_QUICK_GELU) args.gelu = UFORM__GEMM_GELU_QUICK;
    if (epilogue & UFORM__LINEAR_GELU_TANH) args.gelu = UFORM__GEMM_GELU_TANH;
    args.accumulate = (epilogue & UFORM__LINEAR_ACCUMULATE) != 0;
    args.y = y, args.ldy = ldy;
    args.y_dtype = (epilogue & UFORM__LINEAR_Y_BF16) ? UFORM__GEMM_BF16 : UFORM__GEMM_F32;
    args.scratch = compute->gemm_scratch, args.scratch_capacity = compute->gemm_scratch_bytes;
    compute->flops += 2.0 * (double)rows * (double)out_rows * (double)layer->columns;
    /* F32 compute keeps F32 activations: the F32 kernels widen BF16 weights exactly while packing.
     * BF16 compute takes the BF16 kernels (vdpbf16ps on Genoa), which round activations to BF16. */
    if (bf16) return compute->gemm->forward_bf16(&args, compute->parallel, outcome);
    return compute->gemm->forward_f32(&args, compute->parallel, outcome);
}

/* norm(x) [rows, d] into `a` as the input of the product `next`: as BF16 (in a's memory) where
 * that product rounds its input to BF16 anyway (native_bf16), so it reads the rows in place; else
 * as F32, rounded to BF16 values under emulated BF16 compute (bf16). An int8 product quantizes the
 * F32 rows (I8 compute). Answers the product's X flag. */
static int norm_into(uform__compute_t *compute, const uform__norm_t *norm, const uform__linear_t *next, size_t rows,
                     size_t d, const float *x, float *a, float *mean, float *rstd, float eps, int bf16,
                     int native_bf16) {
    if (uform__linear_is_i8(compute, next)) bf16 = native_bf16 = 0;
    if (native_bf16 && next->dtype == UFORM__GEMM_BF16) {
        compute->nn->layernorm_forward_bf16(rows, d, x, d, norm->weight, norm->bias, eps, (uint16_t *)a, d, mean, rstd,
                                            compute->parallel);
        return UFORM__LINEAR_X_BF16;
    }
    compute->nn->layernorm_forward(rows, d, x, d, norm->weight, norm->bias, eps, a, d, mean, rstd, compute->parallel);
    if (bf16) uform__round_to_bf16(a, rows * d);
    return 0;
}

/* The second half of a block over `rows` rows x [rows, d] (any rows: all tokens, or the kept ones):
 * x += attn.out(att); x += mlp.down(gelu(mlp.up(norm2(x)))). `a` [rows, d] and `hidden`
 * [rows, mlp] are scratch. */
static uform_status_t block_tail(uform__compute_t *compute, const uform__block_t *block, size_t d, size_t mlp,
                                 size_t rows, const float *att, float *x, float *a, float *hidden, float *mean,
                                 float *rstd, float eps, int activation, int bf16, int native_bf16,
                                 uform_outcome_t *outcome) {
    /* x += attn.out(...): the residual is accumulated by the product itself. */
    uform_status_t status =
        uform__linear_forward(compute, &block->out, rows, att, d, x, d, d, UFORM__LINEAR_ACCUMULATE, outcome);
    if (status != UFORM_OK) return status;
    int a_read = norm_into(compute, &block->norm2, &block->up, rows, d, x, a, mean, rstd, eps, bf16, native_bf16);
    /* Where the products round to BF16 anyway, mlp.up writes its GELU'd rows as BF16 (in the
     * hidden buffer's memory) and mlp.down reads them in place: no conversion pass. An activation
     * the product does not fuse needs its F32 rows first. */
    native_bf16 = native_bf16 && block->up.dtype == UFORM__GEMM_BF16 && block->down.dtype == UFORM__GEMM_BF16 &&
                  !uform__linear_is_i8(compute, &block->up) && !uform__linear_is_i8(compute, &block->down) &&
                  !(activation & UFORM__LINEAR_UNFUSED_ACTIVATIONS);
    int hidden_bf16 = native_bf16 ? UFORM__LINEAR_Y_BF16 : 0;
    status = uform__linear_forward(compute, &block->up, rows, a, d, hidden, mlp, mlp,
                                   activation | hidden_bf16 | a_read, outcome);
    if (status != UFORM_OK) return status;
    if (bf16 && !uform__linear_is_i8(compute, &block->down)) uform__round_to_bf16(hidden, rows * mlp);
    int hidden_read = native_bf16 ? UFORM__LINEAR_X_BF16 : 0;
    return uform__linear_forward(compute, &block->down, rows, hidden, mlp, x, d, d,
                                 UFORM__LINEAR_ACCUMULATE | hidden_read, outcome);
}

/* qkv [rows, 3d] = x·Wqkvᵀ + b: one product for a fused matrix, or three (queries, keys, values)
 * writing their columns of the same rows for a checkpoint that stores them apart. */
static uform_status_t qkv_forward(uform__compute_t *compute, const uform__block_t *block, size_t rows, size_t d,
                                  const float *a, int a_read, float *qkv, uform_outcome_t *outcome) {
    if (block->qkv.weight || block->qkv.i8.data)
        return uform__linear_forward(compute, &block->qkv, rows, a, d, qkv, 3 * d, 3 * d, a_read, outcome);
    const uform__linear_t *parts[3] = {&block->q, &block->k, &block->v};
    uform_status_t status = UFORM_OK;
    for (int p = 0; p < 3 && status == UFORM_OK; ++p)
        status = uform__linear_forward(compute, parts[p], rows, a, d, qkv + (size_t)p * d, 3 * d, d, a_read, outcome);
    return status;
}

/* A product's input taken straight from the residual rows x [rows, d] (post-norm blocks): under
 * BF16 compute on a class whose products widen instead of rounding, a rounded copy in `a`. */
static const float *residual_input(const float *x, float *a, size_t rows, size_t d, int bf16) {
    if (!bf16) return x;
    memcpy(a, x, rows * d * sizeof(float));
    uform__round_to_bf16(a, rows * d);
    return a;
}

/* A post-norm block's second half over `rows` rows (BERT's order, which the transformer of
 * torch.nn.TransformerEncoderLayer(norm_first=False) also follows):
 *   x = norm1(x + attn.out(att));  x = norm2(x + mlp.down(act(mlp.up(x)))).
 * Under I8 compute a norm whose rows go to an int8 product next is fused with that product's
 * quantizer (uform__norm_quantize_i8): norm1's with mlp.up's, and norm2's with the next block's
 * qkv when `quantize_next` (*quantized then says that x's rows wait in the I8 scratch). */
static uform_status_t post_norm_tail(uform__compute_t *compute, const uform__block_t *block, size_t d, size_t mlp,
                                     size_t rows, const float *att, float *x, float *a, float *hidden, float *mean,
                                     float *rstd, float eps, int activation, int bf16, int quantize_next,
                                     int *quantized, uform_outcome_t *outcome) {
    const uform__nn_kernels_t *nn = compute->nn;
    *quantized = 0;
    uform_status_t status =
        uform__linear_forward(compute, &block->out, rows, att, d, x, d, d, UFORM__LINEAR_ACCUMULATE, outcome);
    if (status != UFORM_OK) return status;
    /* LayerNorm in place: each row's statistics are taken before the row is written. */
    int i8_up = uform__linear_is_i8(compute, &block->up), up_read = 0;
    if (i8_up)
        up_read = uform__norm_quantize_i8(compute, &block->norm1, rows, d, x, mean, rstd, eps)
                      ? UFORM__LINEAR_X_QUANTIZED
                      : 0;
    else
        nn->layernorm_forward(rows, d, x, d, block->norm1.weight, block->norm1.bias, eps, x, d, mean, rstd,
                              compute->parallel);
    const float *input = residual_input(x, a, rows, d, bf16 && !i8_up);
    status = uform__linear_forward(compute, &block->up, rows, input, d, hidden, mlp, mlp, activation | up_read, outcome);
    if (status != UFORM_OK) return status;
    if (bf16 && !uform__linear_is_i8(compute, &block->down)) uform__round_to_bf16(hidden, rows * mlp);
    status = uform__linear_forward(compute, &block->down, rows, hidden, mlp, x, d, d, UFORM__LINEAR_ACCUMULATE, outcome);
    if (status != UFORM_OK) return status;
    if (quantize_next)
        *quantized = uform__norm_quantize_i8(compute, &block->norm2, rows, d, x, mean, rstd, eps);
    else
        nn->layernorm_forward(rows, d, x, d, block->norm2.weight, block->norm2.bias, eps, x, d, mean, rstd,
                              compute->parallel);
    return UFORM_OK;
}

uform_status_t uform__trunk_forward(const uform_model_t model, uform__compute_t *compute, float *x, size_t tokens,
                                    const size_t *offsets, size_t items, const size_t *keep,
                                    const uform__trunk_scratch_t *scratch, uform__call_context_t *context,
                                    size_t *done) {
    const uform__model_config_t *config = &model->config;
    const uform__architecture_t *arch = &model->arch;
    const uform__nn_kernels_t *nn = compute->nn;
    const uform__parallel_t *parallel = compute->parallel;
    size_t d = config->hidden, mlp = config->mlp;
    /* docs/model.md fixes a native trunk's norms at eps 1e-6 (the config's norm_eps is the heads');
     * a published tower's come from its config (docs/checkpoints.md). */
    const float eps = arch->published ? arch->eps : 1e-6f;
    int activation = arch->published ? uform__linear_activation_flag(arch->activation) : UFORM__LINEAR_GELU;
    int post_norm = arch->published && arch->post_norm;
    /* I8 compute fuses whole blocks of the native form only (trunk_i8.c): pre-norm, exact GELU,
     * bidirectional attention. */
    int fusable = !post_norm && !(arch->published && arch->causal) && activation == UFORM__LINEAR_GELU;
    /* BF16 compute rounds the activations entering each product — unless the kernels' BF16 dot
     * products round them on the way in anyway (Genoa and later), where the pass would be redundant. */
    int native_bf16 = uform__gemm_rounds_to_bf16(compute->gemm);
    int bf16 = compute->compute == UFORM_COMPUTE_BF16 && !native_bf16;
    native_bf16 = native_bf16 && compute->compute == UFORM_COMPUTE_BF16;
    /* BF16 compute: attention with BF16 Q, K, P and V and F32 softmax (nn.h). */
    uform__trunk_attention_fn attention =
        compute->compute == UFORM_COMPUTE_BF16 ? nn->attention_forward_bf16 : nn->attention_forward;
    uform__attention_shape_t shape = {tokens, config->heads, d / config->heads, offsets, items, NULL,
                                      arch->published && arch->causal};
    int x_quantized = 0; /* post-norm under I8: the previous block's norm2 left x's rows quantized */
    for (size_t i = 0; i < config->depth; ++i) {
        const uform__block_t *block = &model->blocks[i];
        /* Whether this block's norm2 may also quantize x for the next block's int8 qkv (which
         * takes every token's row, also in the pruned last block). */
        const uform__block_t *next = i + 1 < config->depth ? &model->blocks[i + 1] : NULL;
        int quantize_next = next &&
                            uform__linear_is_i8(compute, next->qkv.weight || next->qkv.i8.data ? &next->qkv : &next->q);
        int x_read = x_quantized ? UFORM__LINEAR_X_QUANTIZED : 0;
        x_quantized = 0;
        /* The last block computes only the kept rows past its K and V (see encode.h). */
        int pruned = keep && i + 1 == config->depth;
        /* h = x + attn.out(attention(norm1(x))) */
        /* Under I8 compute, a block of enough rows runs fused (trunk_i8.c): a whole item per
         * thread when the items split evenly over the threads, else per block of rows. */
        int fused = fusable && uform__trunk_i8_fuses(compute, block, tokens);
        uform_status_t status;
        if (fused && !pruned && uform__trunk_i8_fuses_items(compute, items)) {
            status = uform__trunk_i8_items(compute, config, block, x, offsets, items, attention, scratch->qkv,
                                           scratch->att, scratch->lse, eps, context->outcome);
        } else {
            if (fused) {
                status = uform__trunk_i8_head(compute, config, block, tokens, x, scratch->qkv, eps, context->outcome);
            } else if (post_norm) {
                int i8_qkv = uform__linear_is_i8(compute, block->qkv.weight || block->qkv.i8.data ? &block->qkv : &block->q);
                const float *input = residual_input(x, scratch->a, tokens, d, bf16 && !i8_qkv);
                status = qkv_forward(compute, block, tokens, d, input, i8_qkv ? x_read : 0, scratch->qkv, context->outcome);
            } else {
                const uform__linear_t *first = block->qkv.weight || block->qkv.i8.data ? &block->qkv : &block->q;
                int a_read = norm_into(compute, &block->norm1, first, tokens, d, x, scratch->a, scratch->mean,
                                       scratch->rstd, eps, bf16, native_bf16);
                status = qkv_forward(compute, block, tokens, d, scratch->a, a_read, scratch->qkv, context->outcome);
            }
            if (status != UFORM_OK) return status;
            shape.queries = pruned ? keep : NULL;
            attention(&shape, scratch->qkv, scratch->att, scratch->lse, parallel);
            if (bf16) uform__round_to_bf16(scratch->att, (pruned ? items : tokens) * d);
            if (pruned) {
                /* The kept rows, gathered [items, d] into `a` (free once qkv is made), go through the
                 * rest of the block and back to their places in x. */
                float *kept = scratch->a;
                for (size_t item = 0; item < items; ++item) memcpy(kept + item * d, x + keep[item] * d, d * sizeof(float));
                int quantized_unused;
                status = post_norm ? post_norm_tail(compute, block, d, mlp, items, scratch->att, kept, scratch->qkv,
                                                    scratch->hidden, scratch->mean, scratch->rstd, eps, activation,
                                                    bf16, 0, &quantized_unused, context->outcome)
                                   : block_tail(compute, block, d, mlp, items, scratch->att, kept, scratch->qkv,
                                                scratch->hidden, scratch->mean, scratch->rstd, eps, activation, bf16,
                                                native_bf16, context->outcome);
                for (size_t item = 0; item < items; ++item) memcpy(x + keep[item] * d, kept + item * d, d * sizeof(float));
            } else if (fused) {
                status = uform__trunk_i8_tail(compute, config, block, tokens, scratch->att, x, eps, context->outcome);
            } else if (post_norm) {
                status = post_norm_tail(compute, block, d, mlp, tokens, scratch->att, x, scratch->a, scratch->hidden,
                                        scratch->mean, scratch->rstd, eps, activation, bf16, quantize_next,
                                        &x_quantized, context->outcome);
            } else {
                status = block_tail(compute, block, d, mlp, tokens, scratch->att, x, scratch->a, scratch->hidden,
                                    scratch->mean, scratch->rstd, eps, activation, bf16, native_bf16, context->outcome);
            }
        }
        if (status != UFORM_OK) return status;
        for (size_t item = 0; item < items; ++item) { /* attention's two products */
            double length = (double)(offsets[item + 1] - offsets[item]);
            double work = 4.0 * (pruned ? 1.0 : length) * length * (double)d;
            compute->flops += shape.causal && !pruned ? work / 2 : work;
        }
        *done += 1;
        if (uform__progress_advance(&context->progress, *done) == UFORM_CANCEL)
            return uform__fail(context->outcome, UFORM_CANCELLED, context->function,
                               "cancelled by the progress handler in trunk block %zu of %zu", i + 1, config->depth);
    }
    return UFORM_OK;
}
