/*
 * The trunk under training (docs/model.md, "The trunk"), every block keeping what its backward needs:
 *
 *   a1 = norm1(x);  qkv = a1·Wqkvᵀ + b;  att = attention(qkv);  h = x + att·Woutᵀ + b
 *   a2 = norm2(h);  u = a2·Wupᵀ + b;     g = gelu(u);           y = h + g·Wdownᵀ + b
 *
 * and its backward right below (dy → dx, accumulating the block's parameter gradients):
 *
 *   dg = dy·Wdown; dWdown += dyᵀ·g; du = gelu'(u)·dg; da2 = du·Wup; dWup += duᵀ·a2
 *   dh = dy + norm2ᵀ(da2); datt = dh·Wout; dWout += dhᵀ·att; dqkv = attentionᵀ(datt)
 *   da1 = dqkv·Wqkv; dWqkv += dqkvᵀ·a1; dx = dh + norm1ᵀ(da1)
 *
 * BF16 compute (docs/training.md: BF16 operands, F32 accumulation) multiplies BF16 copies of the weights
 * with BF16-rounded inputs — forward y = bf16(x)·bf16(W)ᵀ + b, backward dx = bf16(dy)·bf16(W) and
 * dW = bf16(dy)ᵀ·bf16(x), db = Σ dy — where Genoa's products round their inputs themselves and
 * the other classes get them rounded here (work->round_inputs; the saved activations are rounded
 * in place, which their own backward then reads, consistently). On Genoa (uform__train_native_bf16)
 * norm1(x), norm2(h) and gelu(u) are kept as BF16 rows, written rounded by the norm and GELU passes,
 * and the products read them in place forward (X) and backward (dW's X): the same values the
 * products rounded before, without their conversion passes, at half the bytes. The attention forward
 * is BF16 (nn.h's attention_forward_bf16), and so is its backward (attention_backward_bf16): the
 * scores recomputed from BF16 Q and K, dP and dV as BF16 products, dS in F32 and dK, dQ as F32
 * products of it with the unrounded Q and K (~5% of the `small` image step against the F32 backward;
 * the all-BF16 backward, dS rounded too, saved ~7% but failed the BF16 step parity on tests/train's
 * draw: trunk.1.mlp.up.weight's gradient 1.21e-2 against 1e-2). Norms, GELU, residuals stay F32.
 */
#include <string.h>

#include "core/outcome.h"
#include "train/work.h"

typedef struct add_loop_t {
    const float *x;
    float *y;
} add_loop_t;

static void add_range(void *context, size_t begin, size_t end) {
    const add_loop_t *loop = context;
    for (size_t i = begin; i < end; ++i) loop->y[i] += loop->x[i];
}

void uform__train_add(size_t n, const float *x, float *y, const uform__parallel_t *parallel) {
    add_loop_t loop = {x, y};
    uform__nn_parallel_ranges(parallel, n, 1 << 14, add_range, &loop);
}

uform_status_t uform__train_linear_backward(uform__train_work_t *work, const uform__linear_t *layer,
                                            const uform__linear_t *grad, size_t rows, const float *x, size_t ldx,
                                            const float *dy, size_t lddy, float *dx, size_t lddx) {
    return uform__train_linear_backward_typed(work, layer, grad, rows, x, UFORM__GEMM_F32, ldx, dy, lddy, dx, lddx);
}

uform_status_t uform__train_linear_backward_typed(uform__train_work_t *work, const uform__linear_t *layer,
                                                  const uform__linear_t *grad, size_t rows, const void *x,
                                                  uform__gemm_dtype_t x_dtype, size_t ldx, const float *dy,
                                                  size_t lddy, float *dx, size_t lddx) {
    uform__compute_t *compute = &work->compute;
    uform_outcome_t *outcome = work->context->outcome;
    if (rows == 0) return UFORM_OK;
    size_t n = layer->rows, k = layer->columns;
    int bf16 = compute->compute == UFORM_COMPUTE_BF16 && layer->dtype == UFORM__GEMM_BF16;
    const float *dy_bias = dy;
    if (bf16 && work->round_inputs) {
        /* dy [rows, n] (stride lddy) rounded into scratch; the bias sums the unrounded values. */
        for (size_t r = 0; r < rows; ++r) memcpy(work->dy_rounded + r * n, dy + r * lddy, n * sizeof(float));
        uform__round_to_bf16(work->dy_rounded, rows * n);
        dy = work->dy_rounded, lddy = n;
    }
    uform__gemm_backward_w_t w = {rows, n, k, dy, lddy, x, ldx, x_dtype, (float *)grad->weight, k,
                                  compute->gemm_scratch, compute->gemm_scratch_bytes};
    /* db sums dY while backward_w packs it (backward_b's bits, one read of dY less), unless dY was
     * replaced by its rounded copy: the bias sums the unrounded values. */
    if (grad->bias && dy_bias == dy) w.db = (float *)grad->bias;
    uform_status_t status = (bf16 ? compute->gemm->backward_w_bf16 : compute->gemm->backward_w)(&w, compute->parallel,
                                                                                              outcome);
    compute->flops += 2.0 * (double)rows * (double)n * (double)k;
    if (status != UFORM_OK) return status;
    if (grad->bias && !w.db) {
        uform__gemm_backward_b_t b = {rows, n, dy_bias, dy_bias == dy ? lddy : n, (float *)grad->bias};
        status = compute->gemm->backward_b(&b, compute->parallel, outcome);
        if (status != UFORM_OK) return status;
    }
    if (!dx) return UFORM_OK;
    uform__gemm_backward_x_t args = {rows, n, k, dy, lddy, layer->weight, k, layer->dtype, dx, lddx,
                                     compute->gemm_scratch, compute->gemm_scratch_bytes};
    compute->flops += 2.0 * (double)rows * (double)n * (double)k;
    return (layer->dtype == UFORM__GEMM_BF16 ? compute->gemm->backward_x_bf16 : compute->gemm->backward_x_f32)(
        &args, compute->parallel, outcome);
}

static uform__attention_shape_t attention_shape(const uform__train_work_t *work) {
    const uform__model_config_t *config = &work->trainer->config;
    uform__attention_shape_t shape = {work->plan->tokens, config->heads, config->hidden / config->heads,
                                      work->plan->token_offsets, work->plan->sequences, NULL};
    return shape;
}

/* Attention's flops (4·queries·keys·d per item): every row, or one query row per item. */
static double attention_flops(const uform__train_work_t *work, int one_query) {
    double flops = 0;
    for (size_t s = 0; s < work->plan->sequences; ++s) {
        double length = (double)work->plan->sequence[s].tokens;
        flops += 4.0 * (one_query ? 1.0 : length) * length * (double)work->trainer->config.hidden;
    }
    return flops;
}

static uform_status_t cancelled(uform__train_work_t *work, const char *where, size_t block) {
    return uform__fail(work->context->outcome, UFORM_CANCELLED, work->context->function,
                       "cancelled by the progress handler after the %s of block %zu; the trainer is unchanged", where,
                       block);
}

/* g = bf16(gelu(u)) over n values, for native BF16 compute: the exact-erf GELU of the products'
 * epilogue kernel (gemm.h, EXACT), rounded to nearest even. Elementwise, so the split cannot
 * matter. The fast form (inference's, |error| ≤ 2e-7·max(1, |u|), 24 instead of ≈47 vector
 * instructions per 16 values) was tried and left out: no step-time difference showed on the loaded
 * machine, and it moved test_train_parity_bf16's dump (a third tensor past 1e-2, step 2's
 * trunk.0.norm1.weight at 1.03e-2), while the exact form keeps main's failures. */
typedef struct gelu_loop_t {
    const uform__gemm_kernels_t *gemm;
    const uform__nn_kernels_t *nn;
    const float *u;
    uint16_t *g;
} gelu_loop_t;

static void gelu_bf16_range(void *context, size_t begin, size_t end) {
    const gelu_loop_t *loop = context;
    enum { chunk = 1024 };
    _Alignas(64) float staging[chunk];
    for (size_t i = begin; i < end; i += chunk) {
        size_t count = end - i < chunk ? end - i : chunk;
        memcpy(staging, loop->u + i, count * sizeof(float));
        loop->gemm->epilogue(staging, count, 1, count, NULL, UFORM__GEMM_GELU_EXACT);
        loop->nn->f32_to_bf16(count, staging, loop->g + i);
    }
}

static void gelu_forward_bf16(const uform__compute_t *compute, size_t n, const float *u, uint16_t *g) {
    gelu_loop_t loop = {compute->gemm, compute->nn, u, g};
    uform__nn_parallel_ranges(compute->parallel, n, 1 << 14, gelu_bf16_range, &loop);
}

/* The block's second half over `rows` rows (every token, or the last block's read rows):
 * h = x + att·Woutᵀ + b; a2 = norm2(h); u = a2·Wupᵀ + b; g = gelu(u); y = h + g·Wdownᵀ + b.
 * x, att, h, a2, u, g, y have `rows` rows; the statistics land in saved->mean2/rstd2. */
static uform_status_t tail_forward(uform__train_work_t *work, const uform__block_t *block,
                                   const uform__block_saved_t *saved, size_t rows, const float *x, float *y) {
    const uform__model_config_t *config = &work->trainer->config;
    uform__compute_t *compute = &work->compute;
    uform_outcome_t *outcome = work->context->outcome;
    size_t d = config->hidden, F = config->mlp;
    if (work->round_inputs) uform__round_to_bf16(saved->att, rows * d);
    /* h = x + attn.out(att): the product accumulates onto a copy of x. */
    memcpy(saved->h, x, rows * d * sizeof(float));
    uform_status_t status =
        uform__linear_forward(compute, &block->out, rows, saved->att, d, saved->h, d, d, UFORM__LINEAR_ACCUMULATE, outcome);
    if (status != UFORM_OK) return status;
    int native = uform__train_native_bf16(work), x_bf16 = native ? UFORM__LINEAR_X_BF16 : 0;
    if (native) {
        compute->nn->layernorm_forward_bf16(rows, d, saved->h, d, block->norm2.weight, block->norm2.bias, 1e-6f,
                                            (uint16_t *)saved->a2, d, saved->mean2, saved->rstd2, compute->parallel);
    } else {
        compute->nn->layernorm_forward(rows, d, saved->h, d, block->norm2.weight, block->norm2.bias, 1e-6f, saved->a2,
                                       d, saved->mean2, saved->rstd2, compute->parallel);
        if (work->round_inputs) uform__round_to_bf16(saved->a2, rows * d);
    }
    status = uform__linear_forward(compute, &block->up, rows, saved->a2, d, saved->u, F, F, x_bf16, outcome);
    if (status != UFORM_OK) return status;
    if (native) {
        gelu_forward_bf16(compute, rows * F, saved->u, (uint16_t *)saved->g);
    } else {
        compute->nn->gelu_forward(rows * F, saved->u, saved->g, compute->parallel);
        if (work->round_inputs) uform__round_to_bf16(saved->g, rows * F);
    }
    memcpy(y, saved->h, rows * d * sizeof(float));
    return uform__linear_forward(compute, &block->down, rows, saved->g, F, y, d, d, UFORM__LINEAR_ACCUMULATE | x_bf16,
                                 outcome);
}

uform_status_t uform__train_blocks_forward(uform__train_work_t *work) {
    const uform_trainer_t trainer = work->trainer;
    const uform__model_config_t *config = &trainer->config;
    const uform__batch_plan_t *plan = work->plan;
    uform__compute_t *compute = &work->compute;
    const uform__nn_kernels_t *nn = compute->nn;
    const uform__parallel_t *parallel = compute->parallel;
    uform_outcome_t *outcome = work->context->outcome;
    size_t T = plan->tokens, S = plan->sequences, d = config->hidden;
    const float eps = 1e-6f; /* docs/model.md fixes the trunk's norms at 1e-6 */
    uform__attention_shape_t shape = attention_shape(work);
    void (*attention)(const uform__attention_shape_t *, const float *, float *, float *, const uform__parallel_t *) =
        compute->compute == UFORM_COMPUTE_BF16 ? nn->attention_forward_bf16 : nn->attention_forward;
    for (size_t i = 0; i < config->depth; ++i) {
        const uform__block_t *block = &trainer->view.blocks[i];
        const uform__block_saved_t *saved = &work->blocks[i];
        int last = i + 1 == config->depth;
        int native = uform__train_native_bf16(work);
        if (native) {
            nn->layernorm_forward_bf16(T, d, saved->x, d, block->norm1.weight, block->norm1.bias, eps,
                                       (uint16_t *)saved->a1, d, saved->mean1, saved->rstd1, parallel);
        } else {
            nn->layernorm_forward(T, d, saved->x, d, block->norm1.weight, block->norm1.bias, eps, saved->a1, d,
                                  saved->mean1, saved->rstd1, parallel);
            if (work->round_inputs) uform__round_to_bf16(saved->a1, T * d);
        }
        uform_status_t status = uform__linear_forward(compute, &block->qkv, T, saved->a1, d, saved->qkv, 3 * d, 3 * d,
                                                      native ? UFORM__LINEAR_X_BF16 : 0, outcome);
        if (status != UFORM_OK) return status;
        if (!last) {
            attention(&shape, saved->qkv, saved->att, saved->lse, parallel);
            compute->flops += attention_flops(work, 0);
            status = tail_forward(work, block, saved, T, saved->x, work->blocks[i + 1].x);
        } else {
            /* Only the read rows: their queries against all keys, then the rest on S rows. */
            shape.queries = plan->keep;
            attention(&shape, saved->qkv, saved->att, work->lse_kept, parallel);
            compute->flops += attention_flops(work, 1);
            for (size_t q = 0; q < S; ++q) memcpy(work->dt + q * d, saved->x + plan->keep[q] * d, d * sizeof(float));
            status = tail_forward(work, block, saved, S, work->dt, work->final);
        }
        if (status != UFORM_OK) return status;
        work->done += 1;
        if (uform__progress_advance(&work->context->progress, work->done) == UFORM_CANCEL)
            return cancelled(work, "forward", i);
    }
    return UFORM_OK;
}

/* The backward of tail_forward over `rows` rows: dy [rows, d] → dh [rows, d] = dy + norm2ᵀ(...),
 * datt [rows, d]; accumulates the out, norm2, up and down gradients. Scratch: work->dg, work->dt. */
static uform_status_t tail_backward(uform__train_work_t *work, const uform__block_t *block, uform__block_t *grad,
                                    const uform__block_saved_t *saved, size_t rows, const float *dy, float *dh,
                                    float *datt) {
    const uform__model_config_t *config = &work->trainer->config;
    const uform__nn_kernels_t *nn = work->compute.nn;
    const uform__parallel_t *parallel = work->compute.parallel;
    size_t d = config->hidden, F = config->mlp;
    uform__gemm_dtype_t x_dtype = uform__train_native_bf16(work) ? UFORM__GEMM_BF16 : UFORM__GEMM_F32;
    /* MLP: dg = dy·Wdown (and dWdown, db), du = gelu'(u)·dg, da2 = du·Wup (and dWup, db). */
    uform_status_t status = uform__train_linear_backward_typed(work, &block->down, &grad->down, rows, saved->g,
                                                               x_dtype, F, dy, d, work->dg, F);
    if (status != UFORM_OK) return status;
    nn->gelu_backward(rows * F, saved->u, work->dg, work->dg, parallel);
    status = uform__train_linear_backward_typed(work, &block->up, &grad->up, rows, saved->a2, x_dtype, d, work->dg, F,
                                                work->dt, d);
    if (status != UFORM_OK) return status;
    /* dh = dy + norm2ᵀ(da2) */
    nn->layernorm_backward(rows, d, saved->h, d, block->norm2.weight, saved->mean2, saved->rstd2, work->dt, d, dh, d,
                           (float *)grad->norm2.weight, (float *)grad->norm2.bias, parallel);
    uform__train_add(rows * d, dy, dh, parallel);
    /* datt = dh·Wout (and dWout, db) */
    return uform__train_linear_backward(work, &block->out, &grad->out, rows, saved->att, d, dh, d, datt, d);
}

uform_status_t uform__train_blocks_backward(uform__train_work_t *work) {
    const uform_trainer_t trainer = work->trainer;
    const uform__model_config_t *config = &trainer->config;
    const uform__batch_plan_t *plan = work->plan;
    uform__compute_t *compute = &work->compute;
    const uform__nn_kernels_t *nn = compute->nn;
    const uform__parallel_t *parallel = compute->parallel;
    size_t T = plan->tokens, S = plan->sequences, d = config->hidden, H = config->heads;
    uform__attention_shape_t shape = attention_shape(work);
    for (size_t i = config->depth; i-- > 0;) {
        const uform__block_t *block = &trainer->view.blocks[i];
        uform__block_t *grad = &trainer->grad_view.blocks[i];
        const uform__block_saved_t *saved = &work->blocks[i];
        float *dy = work->dx; /* d of the block's output; becomes d of its input */
        const float *out = saved->att, *lse = saved->lse;
        uform_status_t status;
        if (i + 1 < config->depth) {
            status = tail_backward(work, block, grad, saved, T, dy, work->dh, work->datt);
        } else {
            /* The last block ran its tail on the S read rows: dy is [S, d]. Its attention backward
             * runs on the whole shape with d out, out and lse of the other rows at 0, 0 and 1e30
             * (not +inf: the vector exps split the shift into high and low parts, and inf − inf is
             * NaN): their probabilities underflow to 0 or the smallest normal, and with d out and
             * out at 0, dP and D are 0, so dS = P∘(dP − D) is exactly 0 and they add nothing to dQ,
             * dK or dV; the read rows get what the full block would give them. */
            float *dh_kept = work->dh, *datt_kept = work->dqkv; /* [S, d] each; dqkv is free until below */
            status = tail_backward(work, block, grad, saved, S, dy, dh_kept, datt_kept);
            if (status != UFORM_OK) return status;
            float *dout = work->datt, *full_out = work->dt, *full_lse = work->dg; /* dg holds ≥ H·T floats */
            memset(dout, 0, T * d * sizeof(float));
            memset(full_out, 0, T * d * sizeof(float));
            for (size_t e = 0; e < H * T; ++e) full_lse[e] = 1e30f;
            for (size_t q = 0; q < S; ++q) {
                size_t row = plan->keep[q];
                memcpy(dout + row * d, datt_kept + q * d, d * sizeof(float));
                memcpy(full_out + row * d, saved->att + q * d, d * sizeof(float));
                for (size_t h = 0; h < H; ++h) full_lse[h * T + row] = work->lse_kept[h * S + q];
            }
            /* dh over all rows: zero but the read rows (kept compact in dh_kept until the end). */
            out = full_out, lse = full_lse;
        }
        if (status != UFORM_OK) return status;
        /* dqkv = attentionᵀ(datt), da1 = dqkv·Wqkv (and dWqkv, db). */
        (compute->compute == UFORM_COMPUTE_BF16 ? nn->attention_backward_bf16 : nn->attention_backward)(
            &shape, saved->qkv, out, lse, work->datt, work->deltas, work->dqkv, parallel);
        compute->flops += 2.0 * attention_flops(work, 0);
        status = uform__train_linear_backward_typed(
            work, &block->qkv, &grad->qkv, T, saved->a1,
            uform__train_native_bf16(work) ? UFORM__GEMM_BF16 : UFORM__GEMM_F32, d, work->dqkv, 3 * d, work->dt, d);
        if (status != UFORM_OK) return status;
        /* dx = dh + norm1ᵀ(da1), written over dy (no longer needed). */
        nn->layernorm_backward(T, d, saved->x, d, block->norm1.weight, saved->mean1, saved->rstd1, work->dt, d, dy, d,
                               (float *)grad->norm1.weight, (float *)grad->norm1.bias, parallel);
        if (i + 1 < config->depth) {
            uform__train_add(T * d, work->dh, dy, parallel);
        } else {
            for (size_t q = 0; q < S; ++q) {
                float *row = dy + plan->keep[q] * d;
                const float *add = work->dh + q * d;
                for (size_t c = 0; c < d; ++c) row[c] += add[c];
            }
        }
        /* Block i's gradients are final: over a mesh they may go now. */
        if (work->block_done) work->block_done(work->block_done_state, i);
        work->done += 1;
        if (uform__progress_advance(&work->context->progress, work->done) == UFORM_CANCEL)
            return cancelled(work, "backward", i);
    }
    return UFORM_OK;
}
