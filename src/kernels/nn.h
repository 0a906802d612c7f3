/*
 * Neural-network kernels other than GEMM: packed variable-length attention (bidirectional or
 * causal), LayerNorm, GELU, the GEMM epilogue's MLP activations element-wise, softmax +
 * cross-entropy, L2 normalisation, mean pooling, embedding gather / scatter-add, scalar
 * conversions, AdamW and the sum of squares — each forward with its backward below it.
 *
 * Dispatch: one `uform__nn_kernels_t` table per CPU class, chosen once (by the executor) with
 * `uform__nn_kernels(cpu_class)`. Every slot of every table is filled: a class without a
 * specialised kernel points at the best lower class's kernel, down to SERIAL. SERIAL is the
 * portable reference; HASWELL (AVX2, FMA, F16C) and SKYLAKE (AVX-512 F/BW/DQ/VL) specialise the
 * hot loops. ICELAKE uses SKYLAKE's table. GENOA, SAPPHIRE, GRANITE and DIAMOND use GENOA's,
 * which is SKYLAKE's but for attention_forward_bf16 and attention_backward_bf16 (VDPBF16PS);
 * every other kernel computes in F32, so VNNI and the BF16 dot products have nothing to add to
 * them (and VCVTNEPS2BF16 flushes subnormals, so the conversions stay integer). SIERRA uses
 * HASWELL's; every other class (Arm, RISC-V, WebAssembly, MONOVERSIONED, UNKNOWN) gets SERIAL.
 *
 * Accuracy: SERIAL accumulates row statistics in double; the SIMD classes accumulate in F32 lanes,
 * use a Cephes-style vector exp (~2 ulp; SKYLAKE's and GENOA's attention and softmax a base-2 one,
 * within 3e-7 + 2^-23·|argument| relative) and Numerical Recipes' erfc (< 1.2e-7 relative) for
 * GELU. The tests bound every class against double references: ~1e-5 relative for forwards,
 * ~1e-4 for gradients (see tests/kernels/test_nn_*.c).
 *
 * Conventions shared by every kernel:
 *   - F32 storage and compute unless a signature says otherwise; matrices are row-major with a
 *     row stride counted in elements (not bytes); shapes are written [rows, columns].
 *   - Kernels trust their arguments (the checks below, `uform__nn_check_*`, validate what a
 *     caller got from outside) and never allocate, print or abort.
 *   - `parallel` may be NULL (serial). Work splits depend only on the shapes and, where no
 *     reduction crosses prongs, on the thread count; every reduction uses a split that depends on
 *     the shapes alone and combines in a fixed order, so every output is bit-identical whatever
 *     the thread count and timing.
 *   - Backward kernels overwrite the input gradients they produce (dx, dqkv, dlogits ...) unless
 *     the slot says "accumulates" (parameter gradients: dweight, dbias, dtable).
 */
#ifndef UFORM_KERNELS_NN_H
#define UFORM_KERNELS_NN_H

#include <stddef.h>
#include <stdint.h>

#include "core/parallel.h"
#include "uform/uform.h"

/* Attention tiles are UFORM__NN_ATTENTION_BLOCK queries by UFORM__NN_ATTENTION_BLOCK keys; the
 * tile buffers live on the stack, so a head width above UFORM__NN_ATTENTION_MAX_HEAD_WIDTH is
 * refused by `uform__nn_check_attention` (a prong uses up to ~300 KiB of stack). Called anyway,
 * the attention kernels write NaN to every output instead of computing. */
#define UFORM__NN_ATTENTION_BLOCK 64
#define UFORM__NN_ATTENTION_MAX_HEAD_WIDTH 128

/*
 * Packed variable-length attention geometry. Item i owns tokens offsets[i] .. offsets[i+1] of
 * the packed batch and attends only within itself (bidirectional, no mask, no padding).
 * d = heads · head_width; the score scale is 1/sqrt(head_width).
 *
 * `queries` (forward only) asks for one query row per item instead of all of them: item i's
 * token queries[i] (an absolute index inside the item) attends to all of item i's keys, and
 * the forward writes out [count, d] (row i for item i) and lse [H, count]. An encoder's last
 * block needs no more when only the [CLS] (or [NEXT]) state is kept (llama.cpp prunes its last
 * layer's rows the same way). Every item must then be non-empty. The backward needs NULL.
 *
 * `causal` (the last field, so positional initialisers leave it 0): within each item, the query
 * at position p (counted from the item's first token) attends to the item's keys 0 .. p only
 * (CLIP's text transformer; torch.nn.functional.scaled_dot_product_attention(q, k, v,
 * is_causal=True) per item). With `queries`, item i's one query row at position
 * queries[i] − offsets[i] sees the item's keys up to and including itself. The kernels skip whole
 * key blocks past the diagonal (every forward and backward slot of every class reads no key
 * block that lies wholly after a unit's last query row: about half the work for long items) and
 * mask only inside the diagonal block, where the probabilities of the keys a row may not see are
 * exactly 0 (never computed through exp). Every slot honours it; the results never depend on the
 * thread count.
 */
typedef struct uform__attention_shape_t {
    size_t tokens;         /* T = offsets[count] */
    size_t heads;          /* H */
    size_t head_width;     /* dh, 1 ..= UFORM__NN_ATTENTION_MAX_HEAD_WIDTH */
    const size_t *offsets; /* [count + 1], offsets[0] = 0, non-decreasing */
    size_t count;          /* items */
    const size_t *queries; /* NULL (every row queries), or [count] absolute token indices */
    int causal;            /* 1: a query at position i of its item sees the item's keys 0..i only */
} uform__attention_shape_t;

typedef struct uform__nn_kernels_t {
    /*
     * Attention forward, tiled with an online softmax (FlashAttention-2, Dao 2023) so no item
     * ever materialises its [len, len] score matrix.
     *   qkv  [T, 3d]  per token: q of all heads, then k, then v; head h uses columns
     *                 h·dh .. (h+1)·dh of each third (the layout of the QKV projection).
     *   out  [T, d]   softmax(q·kᵀ/√dh)·v per head, heads side by side.
     *   lse  [H, T]   saved for the backward: the natural log of Σ_j exp(q·k_j/√dh) per row.
     * Matches torch.nn.functional.scaled_dot_product_attention per item (is_causal = the shape's
     * `causal`).
     */
    void (*attention_forward)(const uform__attention_shape_t *shape, const float *qkv, float *out, float *lse,
                              const uform__parallel_t *parallel);
    /*
     * Attention forward with BF16 products (what FlashAttention-2 computes in BF16), same
     * arguments, layouts and `queries` mode as attention_forward; F32 in, F32 out. Per item,
     * head and query row, over the item's keys in blocks of UFORM__NN_ATTENTION_BLOCK (from the
     * item's first token):
     *   s_j = scale · Σ_e bf16(q_e)·bf16(k_je), the products exact and summed in F32;
     *   m   = the running max of s over the key blocks so far (this block included), in F32;
     *   p_j = exp(s_j − m) in F32; the running normaliser l (rescaled by exp(m_old − m) at each
     *         block) sums the F32 p_j, unrounded;
     *   acc = acc·exp(m_old − m) + Σ_j bf16(p_j)·bf16(v_j), products exact, summed in F32;
     *   out = acc / l;  lse = m + ln l.
     * bf16() rounds an F32 to nearest even (NaN stays NaN). Every class applies these roundings
     * at these points, so classes differ only by F32 summation order (and where a p_j that close
     * to a BF16 rounding boundary rounds the other way). GENOA and later (VDPBF16PS) count BF16
     * operands and products below 2^-126 in magnitude as zero; the others keep them. Error
     * against exact attention: ~2^-8 relative per rounded operand, ~1e-2 of max|out| typically.
     */
    void (*attention_forward_bf16)(const uform__attention_shape_t *shape, const float *qkv, float *out, float *lse,
                                   const uform__parallel_t *parallel);
    /*
     * Attention backward. dout [T, d] → dqkv [T, 3d] (overwritten), recomputing the
     * probabilities from qkv, out and lse of the forward. deltas [H, T] is caller scratch (it
     * receives D = rowsum(dout ⊙ out) per head). Deterministic without atomics: each (item,
     * head) is one unit of work that writes its dq, dk and dv rows, each summing in a fixed
     * order (5 block products per query block × key block pair); with fewer (item, head) units
     * than threads, two passes (one over query blocks writes dq, one over key blocks writes dk
     * and dv; 7 products per pair) keep the threads busy. Both give the same bits
     * (uform__nn_attention_backward_schedule_with), so the result never depends on the threads.
     */
    void (*attention_backward)(const uform__attention_shape_t *shape, const float *qkv, const float *out,
                               const float *lse, const float *dout, float *deltas, float *dqkv,
                               const uform__parallel_t *parallel);
    /*
     * Attention backward with BF16 products where they cost the least accuracy, same arguments
     * and layouts as attention_backward; F32 in, F32 out. Per item and head, for query rows r and
     * keys c of the item, with bf16() rounding an F32 to nearest even (NaN stays NaN) and every Σ
     * over exact BF16 products summed in F32:
     *   s_rc  = scale · Σ_e bf16(q_re)·bf16(k_ce);   p_rc = exp(s_rc − lse_r) in F32;
     *   dp_rc = Σ_e bf16(dout_re)·bf16(v_ce);
     *   D_r   = Σ_e dout_re·out_re in F32 from the unrounded values (stored in deltas);
     *   ds_rc = p_rc·(dp_rc − D_r) in F32, from the unrounded p;
     *   dv_c  = Σ_r bf16(p_rc)·bf16(dout_r);
     *   dk_c  = scale · Σ_r ds_rc·q_r;   dq_r = scale · Σ_c ds_rc·k_c   (F32 products, nothing rounded).
     * The scores are the BF16 forward's (so P matches its lse), and dS, which a difference of two
     * near-equal sums makes the least accurate value of the backward, is never rounded: rounding
     * it too (FlashAttention-2's all-BF16 backward) was ~1.2× faster still, but moved the trainer's
     * BF16 step past its parity tolerance (src/train/blocks.c). Classes differ only by F32
     * summation order, their exp (nn.h's accuracy paragraph), and where a p that close to a BF16
     * rounding boundary rounds the other way. GENOA and later (VDPBF16PS) count BF16 operands and
     * products below 2^-126 in magnitude as zero in s, dp and dv, and flush those F32 sums there;
     * the others keep them. Pair it with attention_forward_bf16's out and lse.
     * Error against exact gradients: ~2^-8 relative per rounded operand; tests/kernels/
     * test_nn_attention_backward_bf16.c bounds it at 2e-2 of each gradient's max magnitude for
     * inputs of unit scale, 1e-1 for a sharply peaked softmax (scores ~±20) or head width 1.
     * Each (item, head) is one unit of work (no two-pass fallback): deterministic, and the bits
     * do not depend on the thread count.
     */
    void (*attention_backward_bf16)(const uform__attention_shape_t *shape, const float *qkv, const float *out,
                                    const float *lse, const float *dout, float *deltas, float *dqkv,
                                    const uform__parallel_t *parallel);

    /*
     * LayerNorm over each row of x [rows, width] (torch.nn.functional.layer_norm: biased
     * variance, y = (x − mean)·rstd·weight + bias, rstd = 1/√(var + eps)).
     * weight, bias [width]; y [rows, width]; mean, rstd [rows] saved for the backward.
     */
    void (*layernorm_forward)(size_t rows, size_t width, const float *x, size_t x_stride, const float *weight,
                              const float *bias, float eps, float *y, size_t y_stride, float *mean, float *rstd,
                              const uform__parallel_t *parallel);
    /* layernorm_forward with y [rows, width] written as BF16: the class's F32 result rounded to
     * nearest even (NaN stays NaN), for a BF16 product that reads the rows in place. SERIAL,
     * SKYLAKE and GENOA+ give exactly their layernorm_forward's values rounded; HASWELL uses
     * SERIAL's (statistics in double). */
    void (*layernorm_forward_bf16)(size_t rows, size_t width, const float *x, size_t x_stride, const float *weight,
                                   const float *bias, float eps, uint16_t *y, size_t y_stride, float *mean,
                                   float *rstd, const uform__parallel_t *parallel);
    /* dy [rows, width] → dx [rows, width] (overwritten; may not alias dy); dweight and dbias
     * [width] accumulate Σ_rows dy·x̂ and Σ_rows dy, each column summed over rows in row order
     * by the one prong that owns the column (so no partials and no thread-count dependence). */
    void (*layernorm_backward)(size_t rows, size_t width, const float *x, size_t x_stride, const float *weight,
                               const float *mean, const float *rstd, const float *dy, size_t dy_stride, float *dx,
                               size_t dx_stride, float *dweight, float *dbias, const uform__parallel_t *parallel);

    /* GELU, exact erf form: y = ½·x·(1 + erf(x/√2)) over n contiguous values (torch's
     * approximate='none'). y may alias x. */
    void (*gelu_forward)(size_t n, const float *x, float *y, const uform__parallel_t *parallel);
    /* dx = dy·(Φ(x) + x·φ(x)) over n values; dx may alias dy. */
    void (*gelu_backward)(size_t n, const float *x, const float *dy, float *dx, const uform__parallel_t *parallel);
    /*
     * An MLP activation over n contiguous values, y = f(x), for code outside a product: `kind` is
     * a uform__gemm_gelu_t (kernels/gemm.h: NONE copies, EXACT and FAST the erf GELU, QUICK
     * QuickGELU x·σ(1.702·x), TANH the tanh GELU), with the forms and error bounds gemm.h
     * documents. Each class gives exactly the bits its GEMM epilogue gives (it runs that epilogue;
     * the GENOA and ICELAKE tables SKYLAKE's), so an activation applied here or folded into a
     * product agree. y may alias x (exactly; no partial overlap). An unknown kind writes NaN.
     */
    void (*activation_forward)(int kind, size_t n, const float *x, float *y, const uform__parallel_t *parallel);

    /* Softmax of each row (torch.softmax(x, dim=-1)): y[r] = exp(x[r] − max x[r]) / Σ exp(...),
     * x, y [rows, width]; y may alias x. A row holding NaN, or +inf, gives NaN, as torch does.
     * (Its backward is the softmax + cross-entropy pair below, or the attention backward.) */
    void (*softmax_forward)(size_t rows, size_t width, const float *x, size_t x_stride, float *y, size_t y_stride,
                            const uform__parallel_t *parallel);

    /*
     * Softmax + cross-entropy per row of logits [rows, width]: z = scale[r]·logits[r] (scale
     * NULL means 1), probs[r] = softmax(z) [rows, width] (stride width, saved for the backward),
     * loss[r] = logsumexp(z) − z[target[r]]. A negative target marks a row without a loss:
     * its loss is 0 and its gradients are 0 (torch's ignore_index); its probs are still written.
     */
    void (*softmax_xent_forward)(size_t rows, size_t width, const float *logits, size_t logits_stride,
                                 const int32_t *targets, const float *scale, float *probs, float *loss,
                                 const uform__parallel_t *parallel);
    /* dloss [rows] → dlogits [rows, width] = dloss·scale·(probs − onehot) (overwritten) and, when
     * scale is not NULL, dscale [rows] = dloss·Σ_c (probs_c − onehot_c)·logits_c (overwritten). */
    void (*softmax_xent_backward)(size_t rows, size_t width, const float *logits, size_t logits_stride,
                                  const int32_t *targets, const float *scale, const float *probs, const float *dloss,
                                  float *dlogits, size_t dlogits_stride, float *dscale,
                                  const uform__parallel_t *parallel);

    /* y[r] = x[r] / max(‖x[r]‖₂, eps) (torch.nn.functional.normalize); x, y [rows, width];
     * norm [rows] saves the clamped norm for the backward. y may alias x. */
    void (*l2norm_forward)(size_t rows, size_t width, const float *x, size_t x_stride, float eps, float *y,
                           size_t y_stride, float *norm, const uform__parallel_t *parallel);
    /* dx = (dy − y·⟨y, dy⟩) / norm (the gradient where the norm is not clamped; where it is,
     * dx = dy / eps as torch computes it). dx may alias dy. */
    void (*l2norm_backward)(size_t rows, size_t width, const float *y, size_t y_stride, const float *norm, float eps,
                            const float *dy, size_t dy_stride, float *dx, size_t dx_stride,
                            const uform__parallel_t *parallel);

    /* Mean of ragged groups of rows: y[g] = mean of x rows offsets[g] .. offsets[g+1] (an empty
     * group gives a zero row). x [offsets[groups], width]; y [groups, width]. */
    void (*mean_pool_forward)(size_t groups, const size_t *offsets, size_t width, const float *x, size_t x_stride,
                              float *y, size_t y_stride, const uform__parallel_t *parallel);
    /* dx[r] = dy[g] / len(g) for every row r of group g (overwritten). */
    void (*mean_pool_backward)(size_t groups, const size_t *offsets, size_t width, const float *dy, size_t dy_stride,
                               float *dx, size_t dx_stride, const uform__parallel_t *parallel);

    /* out[i] += table[ids[i]] for n ids; table [vocabulary, width], out [n, width]. */
    void (*embedding_forward)(size_t n, const uint32_t *ids, size_t width, const float *table, size_t table_stride,
                              float *out, size_t out_stride, const uform__parallel_t *parallel);
    /* dtable[ids[i]] accumulates dout[i] for every i, in increasing i: each prong owns a range of
     * table rows and scans all ids, so repeated ids never race. dtable [vocabulary, width]. */
    void (*embedding_backward)(size_t n, const uint32_t *ids, size_t width, const float *dout, size_t dout_stride,
                               size_t vocabulary, float *dtable, size_t dtable_stride,
                               const uform__parallel_t *parallel);

    /* Conversions of n contiguous values (uform_scalar_kind_t defines them): F32→BF16 and
     * F32→F16 round to nearest even, keep NaN a NaN (quiet), keep subnormals exact where
     * representable; F16 overflows to ±inf. BF16/F16→F32 are exact. */
    void (*f32_to_bf16)(size_t n, const float *x, uint16_t *y);
    void (*bf16_to_f32)(size_t n, const uint16_t *x, float *y);
    void (*f32_to_f16)(size_t n, const float *x, uint16_t *y);
    void (*f16_to_f32)(size_t n, const uint16_t *x, float *y);
    /* y = clamp(round_half_even(x·127), −127, 127), the product taken exactly (one rounding); NaN gives 0. */
    void (*f32_to_i8)(size_t n, const float *x, int8_t *y);
    /* Sign bits of n values into ceil(n/8) bytes, most significant bit first (bit 7 of byte 0 is
     * x[0]); a bit is 1 where x > 0; unused low bits of the last byte are 0. */
    void (*f32_to_b1)(size_t n, const float *x, uint8_t *y);

    /*
     * AdamW step (torch.optim.AdamW, decoupled decay), elementwise over n parameters:
     *   p −= lr·weight_decay·p;  m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²;
     *   p −= (lr / (1 − β1^step)) · m / (√v / √(1 − β2^step) + eps).
     * step counts from 1. Pass weight_decay 0 for biases, norms, positions and temperatures.
     */
    void (*adamw)(size_t n, float *params, const float *grads, float *m, float *v, float lr, float beta1, float beta2,
                  float eps, float weight_decay, uint64_t step, const uform__parallel_t *parallel);

    /* Σ x² over n values, for the gradient norm. Accumulated in double within fixed blocks of
     * UFORM__NN_SUM_BLOCK values (prongs own whole blocks; the number of prongs depends on n only)
     * and the block sums added in block order, so the result depends on n and x only. */
    double (*sum_squares)(size_t n, const float *x, const uform__parallel_t *parallel);
} uform__nn_kernels_t;

#define UFORM__NN_SUM_BLOCK 4096

/* The table of a class (never NULL; unknown values give SERIAL's). */
const uform__nn_kernels_t *uform__nn_kernels(uform_cpu_class_t cpu_class);

/* Validation for callers that got shapes from outside. Each answers UFORM_OK or writes a
 * specific message (which item, which field, what was expected) into `outcome` (may be NULL). */
uform_status_t uform__nn_check_attention(const uform__attention_shape_t *shape, uform_outcome_t *outcome);
uform_status_t uform__nn_check_targets(size_t rows, size_t width, const int32_t *targets, uform_outcome_t *outcome);
uform_status_t uform__nn_check_ids(size_t n, const uint32_t *ids, size_t vocabulary, uform_outcome_t *outcome);
uform_status_t uform__nn_check_offsets(size_t groups, const size_t *offsets, size_t rows, uform_outcome_t *outcome);

/*
 * The tiled attention drivers are shared by every class; a class supplies these block
 * primitives (all F32, all small: rows, cols ≤ UFORM__NN_ATTENTION_BLOCK, width ≤ max head width).
 */
typedef struct uform__nn_attention_ops_t {
    /* dst[c·dst_stride + r] = src[r·src_stride + c] for r < rows, c < cols. */
    void (*transpose)(const float *src, size_t src_stride, size_t rows, size_t cols, float *dst, size_t dst_stride);
    /* s[r·s_stride + c] = scale · Σ_e a[r·a_stride + e] · bt[e·bt_stride + c]  (a [rows, width],
     * bt [width, cols]: the second operand already transposed). */
    void (*scores)(const float *a, size_t a_stride, const float *bt, size_t bt_stride, size_t rows, size_t cols,
                   size_t width, float scale, float *s, size_t s_stride);
    /* acc[r·acc_stride + e] += Σ_c p[r·p_stride + c] · x[c·x_stride + e]  (p [rows, cols], x [cols, width]). */
    void (*accumulate)(float *acc, size_t acc_stride, const float *p, size_t p_stride, const float *x, size_t x_stride,
                       size_t rows, size_t cols, size_t width);
    /* x[i] = exp(x[i] − shift) for i < n; answers Σ x[i] (after) summed in float in a fixed order. */
    float (*exp_shift_sum)(float *x, size_t n, float shift);
    /* x[i] = exp(x[i] − shift[i]) for i < n. */
    void (*exp_sub)(float *x, const float *shift, size_t n);
    /* max_i x[i] over n ≥ 1 values (a NaN may or may not win: it reaches the output through exp anyway). */
    float (*row_max)(const float *x, size_t n);
    /* Optional (NULL: a portable loop in the driver), for attention_forward_bf16: dst [rows, cols]
     * = src [rows, cols] rounded to BF16 values (nearest even, NaN kept quiet), as F32; dst may be src. */
    void (*round_bf16)(const float *src, size_t src_stride, size_t rows, size_t cols, float *dst, size_t dst_stride);
} uform__nn_attention_ops_t;

void uform__nn_attention_forward_with(const uform__nn_attention_ops_t *ops, const uform__attention_shape_t *shape,
                                      const float *qkv, float *out, float *lse, const uform__parallel_t *parallel);
/* attention_forward_bf16 on a class's F32 primitives: the driver rounds Q, K, P and V to
 * BF16-valued F32 at the documented points, so the F32 products are the BF16 products exactly. */
void uform__nn_attention_forward_bf16_with(const uform__nn_attention_ops_t *ops, const uform__attention_shape_t *shape,
                                           const float *qkv, float *out, float *lse,
                                           const uform__parallel_t *parallel);

/* One forward unit of work, for a class that replaces the whole unit (not just the block
 * primitives): `rows` query rows (≤ UFORM__NN_ATTENTION_BLOCK) against all `length` keys of
 * one item and head. The unit writes out and lse and reads nothing else. */
typedef struct uform__attention_unit_t {
    const float *q;      /* [rows, dh], row stride qkv_stride */
    const float *k, *v;  /* [length, dh] each, row stride qkv_stride */
    float *out;          /* [rows, dh], row stride out_stride */
    float *lse;          /* [rows], contiguous */
    size_t rows, length, head_width, qkv_stride, out_stride;
    float scale;         /* 1/√dh */
    /* Prefetch hints (never read as data): the Q rows and the first key block (its values
     * follow at out_stride) of the prong's next unit; NULL for the prong's last unit, k_next
     * also when the next unit has this unit's keys. */
    const float *q_next, *k_next;
    size_t q_next_rows, k_next_rows;
    /* With `scratch` asked of uform__nn_attention_forward_units: UFORM__NN_ATTENTION_UNIT_SCRATCH
     * bytes, 64-byte aligned, private to the prong and kept between its units (consecutive
     * calls), so a unit may keep what the prong's next unit (often the same item and head) can
     * reuse; its first 64 bytes are zero before the prong's first unit. NULL otherwise. */
    void *scratch;
    /* The keys the unit reads: its item's first `keys` (of `length`). Causal shapes: query row r
     * is the item's token `position + r` and sees keys 0 .. position + r only, so keys =
     * position + rows and a unit masks keys past a row's position inside the key block that
     * holds them; otherwise causal is 0, position 0 and keys = length. */
    int causal;
    size_t position, keys;
    /* Set when all of the shape's Q, K and V rows together are at most
     * UFORM__NN_ATTENTION_RESIDENT_BYTES (a batch-1 text): the product that wrote them just now
     * left them in L2, so a unit may skip its prefetch hints, which then only cost instructions. */
    int resident;
} uform__attention_unit_t;
#define UFORM__NN_ATTENTION_RESIDENT_BYTES (512 * 1024)
#define UFORM__NN_ATTENTION_UNIT_SCRATCH (128 * 1024)
typedef void (*uform__nn_attention_unit_fn)(const void *context, const uform__attention_unit_t *unit);
/* Runs `unit_fn` over the forward's units (item, head, query block; or item, head with
 * `queries`), split over prongs as the F32 forward splits them (each unit owns its output, so
 * the result never depends on the thread count; a unit's use of `scratch` must not change its
 * result either). Head widths the tiles cannot hold give NaN. */
void uform__nn_attention_forward_units(uform__nn_attention_unit_fn unit_fn, const void *context, int scratch,
                                       const uform__attention_shape_t *shape, const float *qkv, float *out, float *lse,
                                       const uform__parallel_t *parallel);
/* GENOA's attention_forward_bf16 (VDPBF16PS), in nn_attention_genoa.c. */
void uform__nn_attention_forward_bf16_genoa(const uform__attention_shape_t *shape, const float *qkv, float *out,
                                            float *lse, const uform__parallel_t *parallel);
void uform__nn_attention_backward_with(const uform__nn_attention_ops_t *ops, const uform__attention_shape_t *shape,
                                       const float *qkv, const float *out, const float *lse, const float *dout,
                                       float *deltas, float *dqkv, const uform__parallel_t *parallel);
/* The F32 backward's two schedules, bit-identical on every class (the block primitives' products
 * sum over the shared dimension in increasing order from zero, so a transposed tile holds the
 * same values; tests/kernels/test_nn_attention.c compares them):
 *   FUSED     units (item, head): key blocks outermost, each pair computes Sᵀ and dPᵀ once and
 *             feeds dV, dK and (through dS transposed back) dQ; 5 products per pair.
 *   TWO_PASS  units (item, head, query block) then (item, head, key block): S and dP computed in
 *             both passes; 7 products per pair, but 4× the units (blocks of 64) for few items.
 *   AUTO      FUSED when the (item, head) units are at least the threads, else TWO_PASS (what
 *             uform__nn_attention_backward_with and every table's attention_backward run). */
typedef enum uform__nn_attention_schedule_t {
    UFORM__NN_ATTENTION_BACKWARD_AUTO,
    UFORM__NN_ATTENTION_BACKWARD_FUSED,
    UFORM__NN_ATTENTION_BACKWARD_TWO_PASS,
} uform__nn_attention_schedule_t;
void uform__nn_attention_backward_schedule_with(const uform__nn_attention_ops_t *ops,
                                                uform__nn_attention_schedule_t schedule,
                                                const uform__attention_shape_t *shape, const float *qkv,
                                                const float *out, const float *lse, const float *dout, float *deltas,
                                                float *dqkv, const uform__parallel_t *parallel);
/* attention_backward_bf16 on a class's F32 primitives: the fused schedule's unit with Q, K, V, dO,
 * P and dS rounded to BF16-valued F32 at the documented points. */
void uform__nn_attention_backward_bf16_with(const uform__nn_attention_ops_t *ops, const uform__attention_shape_t *shape,
                                            const float *qkv, const float *out, const float *lse, const float *dout,
                                            float *deltas, float *dqkv, const uform__parallel_t *parallel);
/* One fused backward unit of work, for a class that replaces the whole unit: all `length` rows of
 * one item and head. D is in `deltas` before the unit runs; the unit overwrites dq, dk and dv. */
typedef struct uform__attention_backward_unit_t {
    const float *q, *k, *v;       /* [length, dh] each, row stride qkv_stride */
    const float *dout;            /* [length, dh], row stride out_stride */
    const float *lse, *deltas;    /* [length] each, contiguous */
    float *dq, *dk, *dv;          /* [length, dh] each, row stride qkv_stride */
    size_t length, head_width, qkv_stride, out_stride;
    float scale; /* 1/√dh */
    int causal;  /* 1: row r sees keys 0 .. r only (the shape's `causal`) */
} uform__attention_backward_unit_t;
typedef void (*uform__nn_attention_backward_unit_fn)(const void *context, const uform__attention_backward_unit_t *unit);
/* Runs `unit_fn` over the (item, head) units of the non-empty items, ordered by item then head and
 * split over prongs in contiguous ranges; stores each unit's D (rowsum(dout ⊙ out), F32, four
 * interleaved partial sums) first. Head widths the tiles cannot hold, and `queries`, give NaN. */
void uform__nn_attention_backward_units(uform__nn_attention_backward_unit_fn unit_fn, const void *unit_context,
                                        const uform__attention_shape_t *shape, const float *qkv, const float *out,
                                        const float *lse, const float *dout, float *deltas, float *dqkv,
                                        const uform__parallel_t *parallel);
/* GENOA's attention_backward_bf16 (VDPBF16PS), in nn_attention_genoa.c. */
void uform__nn_attention_backward_bf16_genoa(const uform__attention_shape_t *shape, const float *qkv,
                                             const float *out, const float *lse, const float *dout, float *deltas,
                                             float *dqkv, const uform__parallel_t *parallel);
/* The attention block primitives of a class's table (SERIAL's for classes without their own),
 * for tests and benchmarks that drive the shared attention code directly. */
const uform__nn_attention_ops_t *uform__nn_attention_ops(uform_cpu_class_t cpu_class);

/* Runs fn(context, begin, end) over contiguous ranges that cover [0, n): one range per prong, as
 * many prongs as threads (at most ceil(n / grain)). Only for work whose result does not depend
 * on where the ranges split (no reduction across ranges). */
typedef void (*uform__nn_range_fn)(void *context, size_t begin, size_t end);
void uform__nn_parallel_ranges(const uform__parallel_t *parallel, size_t n, size_t grain, uform__nn_range_fn fn,
                               void *context);

/* Row softmax through a class's attention primitives (row_max, exp_shift_sum), shared by every class. */
void uform__nn_softmax_with(const uform__nn_attention_ops_t *ops, size_t rows, size_t width, const float *x,
                            size_t x_stride, float *y, size_t y_stride, const uform__parallel_t *parallel);
void uform__nn_softmax_forward_f32_serial(size_t rows, size_t width, const float *x, size_t x_stride, float *y,
                                          size_t y_stride, const uform__parallel_t *parallel);

/* AdamW's per-call constants (torch.optim.AdamW 1.13, single-tensor path), shared by every class:
 * a class supplies only the elementwise range kernel, which reads this struct. */
typedef struct uform__nn_adamw_t {
    float *params, *m, *v;
    const float *grads;
    float beta1, beta2, eps;
    float decay_factor;     /* 1 − lr·weight_decay */
    float step_size;        /* lr / (1 − β1^step) */
    float correction2_sqrt; /* √(1 − β2^step) */
} uform__nn_adamw_t;
void uform__nn_adamw_with(uform__nn_range_fn range, size_t n, float *params, const float *grads, float *m, float *v,
                          float lr, float beta1, float beta2, float eps, float weight_decay, uint64_t step,
                          const uform__parallel_t *parallel);

/* The sum of squares' fixed blocking, shared by every class: a class supplies the double-precision
 * sum of x² over one block [begin, end); blocks are summed in order within a prong and the prongs'
 * partials in prong order, so the result depends on n and x only. */
typedef double (*uform__nn_block_sum_fn)(const float *x, size_t begin, size_t end);
double uform__nn_sum_squares_with(uform__nn_block_sum_fn block_sum, size_t n, const float *x,
                                  const uform__parallel_t *parallel);

/* The per-class tables (defined in nn_serial.c, nn_haswell.c, nn_skylake.c). */
extern const uform__nn_kernels_t uform__nn_kernels_serial;
extern const uform__nn_kernels_t uform__nn_kernels_haswell;
extern const uform__nn_kernels_t uform__nn_kernels_skylake;
extern const uform__nn_kernels_t uform__nn_kernels_genoa; /* SKYLAKE's, with the VDPBF16PS attention */
extern const uform__nn_attention_ops_t uform__nn_attention_ops_serial;
extern const uform__nn_attention_ops_t uform__nn_attention_ops_haswell;
extern const uform__nn_attention_ops_t uform__nn_attention_ops_skylake; /* also GENOA's F32 attention */

/* The SERIAL kernels by name, so the other classes' tables can reuse the ones they do not specialise. */
void uform__nn_attention_forward_f32_serial(const uform__attention_shape_t *shape, const float *qkv, float *out,
                                            float *lse, const uform__parallel_t *parallel);
void uform__nn_attention_backward_f32_serial(const uform__attention_shape_t *shape, const float *qkv, const float *out,
                                             const float *lse, const float *dout, float *deltas, float *dqkv,
                                             const uform__parallel_t *parallel);
void uform__nn_layernorm_forward_bf16_serial(size_t rows, size_t width, const float *x, size_t x_stride,
                                             const float *weight, const float *bias, float eps, uint16_t *y,
                                             size_t y_stride, float *mean, float *rstd,
                                             const uform__parallel_t *parallel);
void uform__nn_layernorm_forward_f32_serial(size_t rows, size_t width, const float *x, size_t x_stride,
                                            const float *weight, const float *bias, float eps, float *y,
                                            size_t y_stride, float *mean, float *rstd,
                                            const uform__parallel_t *parallel);
void uform__nn_layernorm_backward_f32_serial(size_t rows, size_t width, const float *x, size_t x_stride,
                                             const float *weight, const float *mean, const float *rstd, const float *dy,
                                             size_t dy_stride, float *dx, size_t dx_stride, float *dweight,
                                             float *dbias, const uform__parallel_t *parallel);
void uform__nn_gelu_forward_f32_serial(size_t n, const float *x, float *y, const uform__parallel_t *parallel);
void uform__nn_gelu_backward_f32_serial(size_t n, const float *x, const float *dy, float *dx,
                                        const uform__parallel_t *parallel);
/* activation_forward of each class's table (nn_activation.c): through that class's GEMM epilogue. */
void uform__nn_activation_forward_serial(int kind, size_t n, const float *x, float *y,
                                         const uform__parallel_t *parallel);
void uform__nn_activation_forward_haswell(int kind, size_t n, const float *x, float *y,
                                          const uform__parallel_t *parallel);
void uform__nn_activation_forward_skylake(int kind, size_t n, const float *x, float *y,
                                          const uform__parallel_t *parallel);
void uform__nn_softmax_xent_forward_f32_serial(size_t rows, size_t width, const float *logits, size_t logits_stride,
                                               const int32_t *targets, const float *scale, float *probs, float *loss,
                                               const uform__parallel_t *parallel);
void uform__nn_softmax_xent_backward_f32_serial(size_t rows, size_t width, const float *logits, size_t logits_stride,
                                                const int32_t *targets, const float *scale, const float *probs,
                                                const float *dloss, float *dlogits, size_t dlogits_stride,
                                                float *dscale, const uform__parallel_t *parallel);
void uform__nn_l2norm_forward_f32_serial(size_t rows, size_t width, const float *x, size_t x_stride, float eps,
                                         float *y, size_t y_stride, float *norm, const uform__parallel_t *parallel);
void uform__nn_l2norm_backward_f32_serial(size_t rows, size_t width, const float *y, size_t y_stride, const float *norm,
                                          float eps, const float *dy, size_t dy_stride, float *dx, size_t dx_stride,
                                          const uform__parallel_t *parallel);
void uform__nn_mean_pool_forward_f32_serial(size_t groups, const size_t *offsets, size_t width, const float *x,
                                            size_t x_stride, float *y, size_t y_stride,
                                            const uform__parallel_t *parallel);
void uform__nn_mean_pool_backward_f32_serial(size_t groups, const size_t *offsets, size_t width, const float *dy,
                                             size_t dy_stride, float *dx, size_t dx_stride,
                                             const uform__parallel_t *parallel);
void uform__nn_embedding_forward_f32_serial(size_t n, const uint32_t *ids, size_t width, const float *table,
                                            size_t table_stride, float *out, size_t out_stride,
                                            const uform__parallel_t *parallel);
void uform__nn_embedding_backward_f32_serial(size_t n, const uint32_t *ids, size_t width, const float *dout,
                                             size_t dout_stride, size_t vocabulary, float *dtable, size_t dtable_stride,
                                             const uform__parallel_t *parallel);
void uform__nn_f32_to_bf16_serial(size_t n, const float *x, uint16_t *y);
void uform__nn_bf16_to_f32_serial(size_t n, const uint16_t *x, float *y);
void uform__nn_f32_to_f16_serial(size_t n, const float *x, uint16_t *y);
void uform__nn_f16_to_f32_serial(size_t n, const uint16_t *x, float *y);
void uform__nn_f32_to_i8_serial(size_t n, const float *x, int8_t *y);
void uform__nn_f32_to_b1_serial(size_t n, const float *x, uint8_t *y);
void uform__nn_adamw_f32_serial(size_t n, float *params, const float *grads, float *m, float *v, float lr, float beta1,
                                float beta2, float eps, float weight_decay, uint64_t step,
                                const uform__parallel_t *parallel);
double uform__nn_sum_squares_f32_serial(size_t n, const float *x, const uform__parallel_t *parallel);

/* Portable scalar conversions, shared by the serial table and the SIMD kernels' tails. */
uint16_t uform__nn_f32_to_bf16_one(float x);
float uform__nn_bf16_to_f32_one(uint16_t x);
uint16_t uform__nn_f32_to_f16_one(float x);
float uform__nn_f16_to_f32_one(uint16_t x);

#endif
