/*
 * Tiled attention over packed variable-length items, forward and backward, shared by every CPU
 * class: the loops over items, heads and blocks live here (baseline code), the block products
 * and exponentials come from the class's `uform__nn_attention_ops_t`.
 *
 * Forward: FlashAttention-2's online softmax (Dao, "FlashAttention-2", 2023, algorithm 1). A
 * unit of work is one (item, query block, head); it streams the item's key blocks through a
 * [B, B] score tile, keeps a running max m, running sum l and an unnormalised [B, dh]
 * accumulator, and writes out = acc / l and lse = m + ln l at the end.
 *
 * Backward (algorithm 2 of the same paper, scheduled so nothing is reduced across prongs): with
 * P = exp(S − lse), D_i = ⟨dO_i, O_i⟩, dP = dO·Vᵀ, dS = P ⊙ (dP − D),
 *   dQ = scale · dS · K,   dV = Pᵀ · dO,   dK = scale · dSᵀ · Q.
 * Fused schedule (the default): a unit is one (item, head); it stores the item's D in the
 * caller's `deltas` [H, T], then walks key blocks outermost and, per query block, computes the
 * transposed tiles Sᵀ and dPᵀ once and feeds all three gradients (dQ in place in dqkv): 5 tile
 * products per (query block, key block) pair against the forward's 2. Two-pass schedule (when
 * there are fewer (item, head) units than threads):
 *   pass 1, units (item, query block, head):  dQ = scale · dS · K
 *   pass 2, units (item, key block, head):    dV = Pᵀ · dO,  dK = scale · dSᵀ · Q
 * recomputing S and dP in each pass (7 products per pair); pass 2 starts after pass 1 stored D.
 * Each unit owns its output rows and sums over the other side's blocks in increasing order, and
 * the two schedules give the same bits (backward_fused_unit_with says why), so the result never
 * depends on the thread count. Measured with bench_attention (d = 384, 6 heads of 64, GFLOP per
 * CPU-second counting 8·L²·d, a loaded 2-core Zen 4 VM, 2026-12-01), the two passes → fused, 1 / 2
 * threads: GENOA at 197 tokens 37.9 / 38.0 → 59.3 / 59.3, at 1,568 45.2 / 44.6 → 60.0 / 58.8;
 * SKYLAKE at 197 38.4 / 37.3 → 60.1 / 60.2; HASWELL at 197 27.3 / 27.9 → 50.0 / 43.1 (1.4–1.8×:
 * 7 → 5 products, and each item's tiles stay in cache between the two sides). In the trainer's
 * step (bench_train --quick --only image --mode bf16, perf samples) the attention backward fell
 * from ~1.25 to ~0.83 CPU-seconds per step.
 *
 * BF16 backward (attention_backward_bf16): the fused unit with Q, K, V, dO, P and dS rounded at
 * the points nn.h documents, for classes without BF16 dot products; GENOA replaces the whole unit
 * (nn_attention_genoa.c) through uform__nn_attention_backward_units: ~100 GFLOP per CPU-second
 * at 197 tokens (1.7× its F32 backward; the emulation elsewhere is slower than F32).
 *
 * BF16 forward (attention_forward_bf16): the same F32 unit with Q, K, P and V rounded to
 * BF16 values at the points nn.h documents, for classes without BF16 dot products; GENOA
 * replaces the whole unit (nn_attention_genoa.c) through uform__nn_attention_forward_units.
 *
 * Causal attention (the shape's `causal`; nn.h): a forward unit of query rows at item positions
 * p .. p + rows − 1 reads only the key blocks up to the one holding p + rows − 1 (its `keys`), so
 * the blocks past the diagonal are never loaded, multiplied or exponentiated; the block that
 * crosses the diagonal (the last, since query and key blocks share the 64-token grid from the
 * item's first token) runs its products in slabs of 16 rows, each slab reading the keys up to its
 * last row, and each row's max, exp and sum over the keys it sees, the rest of its P set to 0.
 * Every row sees at least one key of every block it visits, so the online softmax never meets an
 * empty block. The backward skips the same pairs from the other side: pass 1 (and GENOA's unit)
 * stops at the diagonal key block, pass 2 and the fused unit start at the diagonal query block;
 * in the diagonal pair the queries before a key get P = dS = 0 (transposed_ds_row). The fused and
 * two-pass schedules still sum every gradient over the same blocks in the same order, so they
 * still agree bit for bit. The bidirectional path executes the same operations as before (every
 * causal branch reduces to them), so its results did not change. Measured with
 * bench_attention_causal (thread CPU time, best of 9 rounds, one thread, this shared Zen 4 VM;
 * causal / bidirectional, F32 and BF16; bench/README.md has the times): CLIP's text tower, 32
 * items of 77 tokens, 8 heads of 64 — SERIAL 0.61 / 0.65, HASWELL 0.71 / 0.80, SKYLAKE 0.82 /
 * 0.82, GENOA 0.83 / 0.70 (77 tokens are a whole key block and a 13-token one: a causal item
 * skips one (query block, key block) pair of four and does 5/8 of the first unit's diagonal
 * block, ≈0.60 of the products, while the transposes, exponentials and output shrink less);
 * 8 items of 300 tokens — 0.52 to 0.69. Before the diagonal slabs, CLIP's shape gave 0.87–0.96
 * (GENOA's BF16 0.89).
 *
 * Stack: a forward unit keeps ~145 KiB of tiles on the stack, an F32 backward unit up to ~161
 * KiB, a BF16 one ~290 KiB (with UFORM__NN_ATTENTION_BLOCK 64 and head width 128; GENOA's ~200
 * KiB), so threads running prongs need a few hundred KiB of stack (glibc's default 8 MiB is plenty).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/nn.h"

enum { block = UFORM__NN_ATTENTION_BLOCK, max_width = UFORM__NN_ATTENTION_MAX_HEAD_WIDTH };

/* Units are ordered by item, then head, then block, so consecutive units of a prong reuse one
 * head's keys and values from cache; a prong takes a contiguous range. */
typedef struct unit_cursor_t {
    size_t item, block, head;
} unit_cursor_t;

static size_t blocks_of(const uform__attention_shape_t *shape, size_t item) {
    size_t length = shape->offsets[item + 1] - shape->offsets[item];
    if (shape->queries) return length ? 1 : 0; /* one query row: one unit per head */
    return (length + block - 1) / block;
}

static size_t units_total(const uform__attention_shape_t *shape) {
    size_t units = 0;
    for (size_t item = 0; item < shape->count; ++item) units += blocks_of(shape, item) * shape->heads;
    return units;
}

static unit_cursor_t unit_locate(const uform__attention_shape_t *shape, size_t unit) {
    unit_cursor_t cursor = {0, 0, 0};
    for (; cursor.item < shape->count; ++cursor.item) {
        size_t units = blocks_of(shape, cursor.item) * shape->heads;
        if (unit < units) break;
        unit -= units;
    }
    size_t blocks = cursor.item < shape->count ? blocks_of(shape, cursor.item) : 1;
    cursor.head = unit / blocks;
    cursor.block = unit % blocks;
    return cursor;
}

static void unit_advance(const uform__attention_shape_t *shape, unit_cursor_t *cursor) {
    if (++cursor->block < blocks_of(shape, cursor->item)) return;
    cursor->block = 0;
    if (++cursor->head < shape->heads) return;
    cursor->head = 0;
    do ++cursor->item;
    while (cursor->item < shape->count && blocks_of(shape, cursor->item) == 0);
}

static size_t prongs_for(const uform__parallel_t *parallel, size_t units) {
    size_t threads = uform__parallel_threads(parallel);
    if (threads <= 1) return units ? 1 : 0;
    size_t prongs = threads * 8;
    return prongs < units ? prongs : units;
}

typedef struct attention_context_t {
    const uform__nn_attention_ops_t *ops;
    const uform__attention_shape_t *shape;
    const float *qkv, *out, *lse, *dout;
    float *out_mutable, *lse_mutable, *dqkv, *deltas;
    size_t units, prongs;
    uform__nn_attention_unit_fn unit_fn; /* the forward's unit body */
    uform__nn_attention_backward_unit_fn backward_unit_fn; /* the fused backward's */
    const void *unit_context;
} attention_context_t;

/* The forward unit at `cursor`: query rows q0 .. q0+rows of `item`, head `head` (with
 * shape->queries, the item's one query row), written to output rows o0 .. o0+rows. */
static uform__attention_unit_t unit_geometry(const attention_context_t *context, unit_cursor_t cursor) {
    const uform__attention_shape_t *shape = context->shape;
    size_t dh = shape->head_width, d = shape->heads * dh, qkv_stride = 3 * d;
    size_t begin = shape->offsets[cursor.item], length = shape->offsets[cursor.item + 1] - begin;
    size_t q0 = begin + cursor.block * block;
    size_t rows = length - cursor.block * block < block ? length - cursor.block * block : block;
    size_t o0 = q0, out_rows = shape->tokens; /* output row of q0; rows of out and lse */
    if (shape->queries) q0 = shape->queries[cursor.item], rows = 1, o0 = cursor.item, out_rows = shape->count;
    size_t position = shape->causal ? q0 - begin : 0; /* of the unit's first query row, in its item */
    uform__attention_unit_t unit = {
        .q = context->qkv + q0 * qkv_stride + cursor.head * dh,
        .k = context->qkv + begin * qkv_stride + d + cursor.head * dh,
        .v = context->qkv + begin * qkv_stride + 2 * d + cursor.head * dh,
        .out = context->out_mutable + o0 * d + cursor.head * dh,
        .lse = context->lse_mutable + cursor.head * out_rows + o0,
        .rows = rows,
        .length = length,
        .head_width = dh,
        .qkv_stride = qkv_stride,
        .out_stride = d,
        .scale = 1.0f / sqrtf((float)dh),
        .causal = shape->causal != 0,
        .position = position,
        .keys = shape->causal ? position + rows : length,
        .resident = shape->tokens * qkv_stride * sizeof(float) <= UFORM__NN_ATTENTION_RESIDENT_BYTES,
    };
    return unit;
}

/* The bits of x rounded to the nearest BF16 value (ties to even), kept as F32 bits; NaN stays a
 * (quiet) NaN and values past the largest BF16 become ±inf. The same rounding as
 * uform__nn_f32_to_bf16_one, branch-free so that the loops below vectorise (baseline SSE2 here). */
static inline uint32_t round_bf16_bits(uint32_t bits) {
    uint32_t nan = (bits & 0x7FFFFFFFu) > 0x7F800000u;
    uint32_t rounded = bits + 0x7FFFu + ((bits >> 16) & 1u);
    return (nan ? bits | 0x00400000u : rounded) & 0xFFFF0000u;
}

/* dst [rows, width] (stride dst_stride) = the BF16 rounding of src [rows, width] (stride
 * src_stride); dst may be src. GCC's -O2 cost model ("very cheap") leaves this loop scalar, at
 * ~half the F32 attention's speed for the whole BF16 fallback, hence the cheap model here. */
__attribute__((optimize("tree-vectorize", "vect-cost-model=cheap"))) static void
round_bf16_rows(const float *src, size_t src_stride, size_t rows, size_t width, float *dst, size_t dst_stride) {
    for (size_t r = 0; r < rows; ++r) {
        const float *from = src + r * src_stride;
        float *to = dst + r * dst_stride;
        for (size_t e = 0; e < width; ++e) {
            uint32_t bits;
            memcpy(&bits, from + e, sizeof bits);
            bits = round_bf16_bits(bits);
            memcpy(to + e, &bits, sizeof bits);
        }
    }
}

/* How many of a key block's `cols` keys (from the item's key k0) query row r of `unit` sees: all
 * of them unless causal, else those up to the row's position (0 when the block lies wholly past
 * it, which the aligned blocks never produce: the driver's units end at the diagonal block). */
static size_t visible_keys(const uform__attention_unit_t *unit, size_t r, size_t k0, size_t cols) {
    if (!unit->causal) return cols;
    size_t last = unit->position + r; /* the last key the row sees */
    if (last < k0) return 0;
    return last - k0 + 1 < cols ? last - k0 + 1 : cols;
}

/* Rows per slab of a causal unit's diagonal block (16: one vector of the widest class's lanes). */
enum { causal_slab = 16 };

/* How many of a key block's `cols` keys (from k0) the rows r0 .. r0 + slab − 1 of `unit` read:
 * up to the last row's position when causal (every row of a slab that the loops visit sees at
 * least its block's first key), else all. */
static size_t slab_keys(const uform__attention_unit_t *unit, size_t r0, size_t slab, size_t k0, size_t cols) {
    size_t last = r0 + slab < unit->rows ? r0 + slab - 1 : unit->rows - 1;
    return visible_keys(unit, last, k0, cols);
}

/* One forward unit on a class's F32 primitives. `bf16` (attention_forward_bf16) rounds Q, K,
 * P (after the normaliser took its F32 sum) and V to BF16 values, so every F32 product is the
 * exact BF16 product. Causal units read only their first `keys` keys, and in the block that
 * crosses the diagonal each row's max, exp and sum run over the keys it sees (the others' P is
 * 0), its products in row slabs that stop at their last row's keys. */
static void forward_unit_with(const uform__nn_attention_ops_t *ops, const uform__attention_unit_t *unit, int bf16) {
    size_t dh = unit->head_width, rows = unit->rows, keys = unit->keys, qkv_stride = unit->qkv_stride;
    const float *q = unit->q, *k = unit->k, *v = unit->v;
    size_t q_stride = qkv_stride;

    float running_max[block], running_sum[block];
    float accumulator[block * max_width];     /* [rows, dh] */
    float scores[block * block];              /* [rows, cols] with stride block */
    float keys_transposed[max_width * block]; /* [dh, cols] with stride block */
    float queries_bf16[block * max_width], values_bf16[block * max_width]; /* BF16 only: [rows or cols, dh] */
    void (*round_rows)(const float *, size_t, size_t, size_t, float *, size_t) =
        ops->round_bf16 ? ops->round_bf16 : round_bf16_rows;
    if (bf16) round_rows(q, qkv_stride, rows, dh, queries_bf16, dh), q = queries_bf16, q_stride = dh;
    for (size_t r = 0; r < rows; ++r) running_max[r] = -INFINITY, running_sum[r] = 0.0f;
    memset(accumulator, 0, rows * dh * sizeof(float));

    for (size_t k0 = 0; k0 < keys; k0 += block) {
        size_t cols = keys - k0 < block ? keys - k0 : block;
        /* A causal block that crosses the rows' positions goes in slabs of `slab` rows, each
         * reading only the keys up to its last row (about 5/8 of a whole diagonal block's work). */
        size_t slab = unit->causal && k0 + cols > unit->position + 1 ? causal_slab : rows;
        ops->transpose(k + k0 * qkv_stride, qkv_stride, cols, dh, keys_transposed, block);
        if (bf16) round_rows(keys_transposed, block, dh, cols, keys_transposed, block);
        for (size_t r0 = 0; r0 < rows; r0 += slab)
            ops->scores(q + r0 * q_stride, q_stride, keys_transposed, block, rows - r0 < slab ? rows - r0 : slab,
                        slab_keys(unit, r0, slab, k0, cols), dh, unit->scale, scores + r0 * block, block);
        for (size_t r = 0; r < rows; ++r) {
            float *row = scores + r * block;
            size_t visible = visible_keys(unit, r, k0, cols);
            if (visible < cols) memset(row + visible, 0, (cols - visible) * sizeof(float));
            if (visible == 0) continue; /* nothing seen here: the running state stands */
            float tile_max = ops->row_max(row, visible);
            float new_max = tile_max > running_max[r] ? tile_max : running_max[r];
            float tile_sum = ops->exp_shift_sum(row, visible, new_max);
            if (k0 == 0)
                running_sum[r] = tile_sum; /* the first tile: nothing to rescale yet */
            else {
                float rescale = expf(running_max[r] - new_max);
                running_sum[r] = running_sum[r] * rescale + tile_sum;
                if (rescale != 1.0f) {
                    float *acc = accumulator + r * dh;
                    for (size_t e = 0; e < dh; ++e) acc[e] *= rescale;
                }
            }
            running_max[r] = new_max;
        }
        if (bf16) round_rows(scores, block, rows, cols, scores, block); /* P, after l took its sum */
        const float *values = v + k0 * qkv_stride;
        size_t values_stride = qkv_stride;
        if (bf16)
            round_rows(values, qkv_stride, cols, dh, values_bf16, dh), values = values_bf16, values_stride = dh;
        for (size_t r0 = 0; r0 < rows; r0 += slab)
            ops->accumulate(accumulator + r0 * dh, dh, scores + r0 * block, block, values, values_stride,
                            rows - r0 < slab ? rows - r0 : slab, slab_keys(unit, r0, slab, k0, cols), dh);
    }

    for (size_t r = 0; r < rows; ++r) {
        float inverse = 1.0f / running_sum[r];
        float *o = unit->out + r * unit->out_stride;
        for (size_t e = 0; e < dh; ++e) o[e] = accumulator[r * dh + e] * inverse;
        unit->lse[r] = running_max[r] + logf(running_sum[r]);
    }
}

static void forward_unit_f32(const void *ops, const uform__attention_unit_t *unit) {
    forward_unit_with(ops, unit, 0);
}

static void forward_unit_bf16(const void *ops, const uform__attention_unit_t *unit) {
    forward_unit_with(ops, unit, 1);
}

static void forward_units_of_prong(const attention_context_t *context, size_t prong, void *scratch) {
    size_t begin, end;
    uform__split_range(context->units, context->prongs, prong, &begin, &end);
    if (begin == end) return;
    unit_cursor_t cursor = unit_locate(context->shape, begin);
    uform__attention_unit_t geometry = unit_geometry(context, cursor), next = geometry;
    for (size_t unit = begin; unit < end; ++unit, geometry = next) {
        if (unit + 1 < end) {
            unit_advance(context->shape, &cursor);
            next = unit_geometry(context, cursor);
            geometry.q_next = next.q, geometry.q_next_rows = next.rows;
            if (next.k != geometry.k) geometry.k_next = next.k, geometry.k_next_rows = next.length < block ? next.length : block;
        }
        geometry.scratch = scratch;
        context->unit_fn(context->unit_context, &geometry);
    }
}

static void forward_prong(void *opaque, size_t thread, size_t prong) {
    forward_units_of_prong(opaque, prong, NULL);
}

static void forward_prong_scratch(void *opaque, size_t thread, size_t prong) {
    _Alignas(64) unsigned char scratch[UFORM__NN_ATTENTION_UNIT_SCRATCH];
    memset(scratch, 0, 64);
    forward_units_of_prong(opaque, prong, scratch);
}

/* The tiles are sized for head widths up to max_width; a caller that skipped
 * uform__nn_check_attention gets NaN outputs rather than a smashed stack. */
static int head_width_unsupported(const uform__attention_shape_t *shape) {
    return shape->head_width == 0 || shape->head_width > max_width;
}

static void fill_nan(float *x, size_t n) {
    for (size_t i = 0; i < n; ++i) x[i] = NAN;
}

void uform__nn_attention_forward_units(uform__nn_attention_unit_fn unit_fn, const void *unit_context, int scratch,
                                       const uform__attention_shape_t *shape, const float *qkv, float *out, float *lse,
                                       const uform__parallel_t *parallel) {
    if (head_width_unsupported(shape)) {
        size_t rows = shape->queries ? shape->count : shape->tokens;
        fill_nan(out, rows * shape->heads * shape->head_width);
        fill_nan(lse, shape->heads * rows);
        return;
    }
    attention_context_t context = {.shape = shape, .qkv = qkv, .out_mutable = out, .lse_mutable = lse,
                                   .unit_fn = unit_fn, .unit_context = unit_context};
    context.units = units_total(shape);
    context.prongs = prongs_for(parallel, context.units);
    uform__parallel_for(parallel, context.prongs, scratch ? forward_prong_scratch : forward_prong, &context);
}

void uform__nn_attention_forward_with(const uform__nn_attention_ops_t *ops, const uform__attention_shape_t *shape,
                                      const float *qkv, float *out, float *lse, const uform__parallel_t *parallel) {
    uform__nn_attention_forward_units(forward_unit_f32, ops, 0, shape, qkv, out, lse, parallel);
}

void uform__nn_attention_forward_bf16_with(const uform__nn_attention_ops_t *ops, const uform__attention_shape_t *shape,
                                           const float *qkv, float *out, float *lse,
                                           const uform__parallel_t *parallel) {
    uform__nn_attention_forward_units(forward_unit_bf16, ops, 0, shape, qkv, out, lse, parallel);
}

/* Causal masks of the backward, by item positions. How many of a block's `cols` keys from k0 the
 * query at `position` sees (at least one in every block the loops visit); and how many of a
 * transposed tile's `rows` queries from q0 (its lanes) come before the key at `key`, and so do
 * not see it. */
static size_t causal_visible(size_t position, size_t k0, size_t cols) {
    return position < k0 ? 0 : position - k0 + 1 < cols ? position - k0 + 1 : cols;
}

static size_t causal_hidden(size_t key, size_t q0, size_t rows) {
    return key <= q0 ? 0 : key - q0 < rows ? key - q0 : rows;
}

/* One key's row of the transposed tiles: Pᵀ = exp(Sᵀ − lse) and dSᵀ = Pᵀ·(dPᵀ − D) over the
 * query lanes from `hidden` on; the first `hidden` lanes (queries before the key, causal) are 0.
 * With hidden 0, exactly the operations of the bidirectional backward. */
static void transposed_ds_row(const uform__nn_attention_ops_t *ops, float *p, float *ds, const float *lse,
                              const float *deltas, size_t rows, size_t hidden) {
    for (size_t r = 0; r < hidden; ++r) p[r] = ds[r] = 0.0f;
    ops->exp_sub(p + hidden, lse + hidden, rows - hidden);
    for (size_t r = hidden; r < rows; ++r) ds[r] = p[r] * (ds[r] - deltas[r]);
}

/* D_r = ⟨dO_r, O_r⟩ for rows q0 .. q0+rows of head `head`: four interleaved partial sums (to
 * break the add latency chain) combined in a fixed order. */
static void row_deltas(const attention_context_t *context, size_t q0, size_t rows, size_t head, float *deltas) {
    size_t dh = context->shape->head_width, d = context->shape->heads * dh;
    for (size_t r = 0; r < rows; ++r) {
        const float *o = context->out + (q0 + r) * d + head * dh, *g = context->dout + (q0 + r) * d + head * dh;
        if (r + 8 < rows) /* rows 1.5 KB apart cross pages, where the hardware prefetchers stop */
            for (size_t b = 0; b < dh * sizeof(float); b += 64)
                __builtin_prefetch((const char *)(o + 8 * d) + b), __builtin_prefetch((const char *)(g + 8 * d) + b);
        float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        size_t e = 0;
        for (; e + 4 <= dh; e += 4)
            for (size_t lane = 0; lane < 4; ++lane) sum[lane] += o[e + lane] * g[e + lane];
        for (; e < dh; ++e) sum[0] += o[e] * g[e];
        deltas[r] = (sum[0] + sum[1]) + (sum[2] + sum[3]);
    }
}

/* Pass 1: dQ for query rows of one unit. */
static void backward_query_unit(const attention_context_t *context, unit_cursor_t cursor) {
    const uform__attention_shape_t *shape = context->shape;
    const uform__nn_attention_ops_t *ops = context->ops;
    size_t dh = shape->head_width, d = shape->heads * dh, qkv_stride = 3 * d, tokens = shape->tokens;
    size_t begin = shape->offsets[cursor.item], length = shape->offsets[cursor.item + 1] - begin;
    size_t q0 = begin + cursor.block * block;
    size_t rows = length - cursor.block * block < block ? length - cursor.block * block : block;
    float scale = 1.0f / sqrtf((float)dh);

    const float *q = context->qkv + q0 * qkv_stride + cursor.head * dh;
    const float *k = context->qkv + begin * qkv_stride + d + cursor.head * dh;
    const float *v = context->qkv + begin * qkv_stride + 2 * d + cursor.head * dh;
    const float *g = context->dout + q0 * d + cursor.head * dh; /* [rows, dh] with stride d */
    const float *lse = context->lse + cursor.head * tokens + q0;

    float *deltas = context->deltas + cursor.head * tokens + q0; /* written here, read again by pass 2 */
    float probabilities[block * block], dprobabilities[block * block];
    float keys_transposed[max_width * block], values_transposed[max_width * block];
    float dq[block * max_width];
    row_deltas(context, q0, rows, cursor.head, deltas);
    memset(dq, 0, rows * dh * sizeof(float));

    /* Causal: the key blocks up to the diagonal one, and in it each row's keys up to itself. */
    size_t q_position = cursor.block * block, keys_read = shape->causal ? q_position + rows : length;
    for (size_t k0 = 0; k0 < keys_read; k0 += block) {
        size_t cols = keys_read - k0 < block ? keys_read - k0 : block;
        ops->transpose(k + k0 * qkv_stride, qkv_stride, cols, dh, keys_transposed, block);
        ops->transpose(v + k0 * qkv_stride, qkv_stride, cols, dh, values_transposed, block);
        ops->scores(q, qkv_stride, keys_transposed, block, rows, cols, dh, scale, probabilities, block);
        ops->scores(g, d, values_transposed, block, rows, cols, dh, 1.0f, dprobabilities, block);
        for (size_t r = 0; r < rows; ++r) {
            float *p = probabilities + r * block, *dp = dprobabilities + r * block;
            size_t visible = shape->causal ? causal_visible(q_position + r, k0, cols) : cols;
            ops->exp_shift_sum(p, visible, lse[r]);
            for (size_t c = 0; c < visible; ++c) dp[c] = p[c] * (dp[c] - deltas[r]); /* dS */
            for (size_t c = visible; c < cols; ++c) dp[c] = 0.0f;                  /* unseen keys */
        }
        ops->accumulate(dq, dh, dprobabilities, block, k + k0 * qkv_stride, qkv_stride, rows, cols, dh);
    }
    for (size_t r = 0; r < rows; ++r) {
        float *target = context->dqkv + (q0 + r) * qkv_stride + cursor.head * dh;
        for (size_t e = 0; e < dh; ++e) target[e] = dq[r * dh + e] * scale;
    }
}

/* Pass 2: dK and dV for key rows of one unit, on transposed tiles: rows are keys, columns queries. */
static void backward_key_unit(const attention_context_t *context, unit_cursor_t cursor) {
    const uform__attention_shape_t *shape = context->shape;
    const uform__nn_attention_ops_t *ops = context->ops;
    size_t dh = shape->head_width, d = shape->heads * dh, qkv_stride = 3 * d, tokens = shape->tokens;
    size_t begin = shape->offsets[cursor.item], length = shape->offsets[cursor.item + 1] - begin;
    size_t k0 = begin + cursor.block * block;
    size_t keys = length - cursor.block * block < block ? length - cursor.block * block : block;
    float scale = 1.0f / sqrtf((float)dh);

    const float *q = context->qkv + begin * qkv_stride + cursor.head * dh;      /* [length, dh] */
    const float *k = context->qkv + k0 * qkv_stride + d + cursor.head * dh;     /* [keys, dh] */
    const float *v = context->qkv + k0 * qkv_stride + 2 * d + cursor.head * dh; /* [keys, dh] */
    const float *g = context->dout + begin * d + cursor.head * dh;              /* [length, dh] */
    const float *lse = context->lse + cursor.head * tokens + begin;

    const float *deltas_item = context->deltas + cursor.head * tokens + begin; /* from pass 1 */
    float probabilities_t[block * block], dscores_t[block * block];            /* [keys, queries] */
    float queries_transposed[max_width * block], dout_transposed[max_width * block];
    float dk[block * max_width], dv[block * max_width];
    memset(dk, 0, keys * dh * sizeof(float));
    memset(dv, 0, keys * dh * sizeof(float));

    /* Causal: the query blocks from the diagonal one on (the earlier ones see none of these keys). */
    size_t k_position = cursor.block * block;
    for (size_t q0 = shape->causal ? k_position : 0; q0 < length; q0 += block) {
        size_t rows = length - q0 < block ? length - q0 : block;
        const float *deltas = deltas_item + q0;
        ops->transpose(q + q0 * qkv_stride, qkv_stride, rows, dh, queries_transposed, block);
        ops->transpose(g + q0 * d, d, rows, dh, dout_transposed, block);
        ops->scores(k, qkv_stride, queries_transposed, block, keys, rows, dh, scale, probabilities_t, block);
        ops->scores(v, qkv_stride, dout_transposed, block, keys, rows, dh, 1.0f, dscores_t, block);
        for (size_t c = 0; c < keys; ++c)
            transposed_ds_row(ops, probabilities_t + c * block, dscores_t + c * block, lse + q0, deltas, rows,
                              shape->causal ? causal_hidden(k_position + c, q0, rows) : 0);
        ops->accumulate(dv, dh, probabilities_t, block, g + q0 * d, d, keys, rows, dh);
        ops->accumulate(dk, dh, dscores_t, block, q + q0 * qkv_stride, qkv_stride, keys, rows, dh);
    }
    for (size_t c = 0; c < keys; ++c) {
        float *target_k = context->dqkv + (k0 + c) * qkv_stride + d + cursor.head * dh;
        float *target_v = target_k + d;
        for (size_t e = 0; e < dh; ++e) target_k[e] = dk[c * dh + e] * scale, target_v[e] = dv[c * dh + e];
    }
}

/* The fused backward's unit: every (query block, key block) pair of one item and head, key
 * blocks outermost, on pass 2's transposed tiles. Each pair runs 5 products instead of the two
 * passes' 7: Sᵀ and dPᵀ once, then dV += Pᵀ·dO and dK += dSᵀ·Q as pass 2 does, and
 * dQ += dS·K as pass 1 does, dS being dSᵀ transposed back. In F32, bit-identical to the two passes:
 *   - Sᵀ[c][r] = scale·Σ_e k[c][e]·q[r][e] and dPᵀ likewise are the same F32 operations as
 *     pass 1's S[r][c] and dP[r][c] (every class's block product sums over e in increasing order
 *     from zero, multiplications commute, and the scale is applied last), and exp_sub with the
 *     row's lse gives what exp_shift_sum gives, so P and dS are pass 1's values, transposed;
 *   - dK and dV of key block k0 sum over the query blocks in increasing order, as pass 2 does;
 *   - dQ of query block q0 sums over the key blocks in increasing order, as pass 1 does, in
 *     place in dqkv (zeroed first, scaled last: the same values as pass 1's stack tile);
 *   - D (the driver's, before the unit) is the same per-row sum as pass 1's.
 * `bf16` (attention_backward_bf16 on F32 primitives) rounds Q, K, V and dO to BF16 values before
 * the products Sᵀ, dPᵀ and dV that read them, and P after dS took it (nn.h), so each of those F32
 * products is the exact BF16 product; dK and dQ stay F32 products of the unrounded dS, Q and K. */
static void backward_fused_unit_with(const uform__nn_attention_ops_t *ops, const uform__attention_backward_unit_t *unit,
                                     float *bf16_tiles) {
    int bf16 = bf16_tiles != NULL;
    size_t dh = unit->head_width, length = unit->length, qkv_stride = unit->qkv_stride, out_stride = unit->out_stride;
    const float *q = unit->q, *k = unit->k, *v = unit->v, *g = unit->dout, *lse = unit->lse, *deltas = unit->deltas;
    float *dq = unit->dq, scale = unit->scale;

    /* Pᵀ, then dS (after dV consumed Pᵀ); dSᵀ. [keys, queries] or [queries, keys], stride block. */
    float probabilities_t[block * block], dscores_t[block * block];
    float queries_transposed[max_width * block], dout_transposed[max_width * block]; /* [dh, rows] */
    float dk[block * max_width], dv[block * max_width];                              /* [keys, dh] */
    /* BF16 only: the rounded key and value block [keys, dh], query and dO tile [rows, dh]. */
    float *keys_bf16 = bf16_tiles, *values_bf16 = bf16 ? bf16_tiles + block * max_width : NULL;
    float *queries_bf16 = bf16 ? bf16_tiles + 2 * block * max_width : NULL;
    float *dout_bf16 = bf16 ? bf16_tiles + 3 * block * max_width : NULL;
    void (*round_rows)(const float *, size_t, size_t, size_t, float *, size_t) =
        ops->round_bf16 ? ops->round_bf16 : round_bf16_rows;
    for (size_t r = 0; r < length; ++r) memset(dq + r * qkv_stride, 0, dh * sizeof(float));

    for (size_t k0 = 0; k0 < length; k0 += block) {
        size_t keys = length - k0 < block ? length - k0 : block;
        const float *k_block = k + k0 * qkv_stride, *v_block = v + k0 * qkv_stride;
        const float *k_exact = k_block; /* dQ's operand, never rounded */
        size_t kv_stride = qkv_stride;
        if (bf16) {
            round_rows(k_block, qkv_stride, keys, dh, keys_bf16, dh);
            round_rows(v_block, qkv_stride, keys, dh, values_bf16, dh);
            k_block = keys_bf16, v_block = values_bf16, kv_stride = dh;
        }
        memset(dk, 0, keys * dh * sizeof(float));
        memset(dv, 0, keys * dh * sizeof(float));
        /* Causal: the query blocks from the diagonal one on, as pass 2. */
        for (size_t q0 = unit->causal ? k0 : 0; q0 < length; q0 += block) {
            size_t rows = length - q0 < block ? length - q0 : block;
            const float *q_tile = q + q0 * qkv_stride, *g_tile = g + q0 * out_stride;
            const float *q_exact = q_tile; /* dK's operand, never rounded */
            size_t q_stride = qkv_stride, g_stride = out_stride;
            if (bf16) {
                round_rows(q_tile, qkv_stride, rows, dh, queries_bf16, dh);
                round_rows(g_tile, out_stride, rows, dh, dout_bf16, dh);
                q_tile = queries_bf16, g_tile = dout_bf16, q_stride = g_stride = dh;
            }
            ops->transpose(q_tile, q_stride, rows, dh, queries_transposed, block);
            ops->transpose(g_tile, g_stride, rows, dh, dout_transposed, block);
            ops->scores(k_block, kv_stride, queries_transposed, block, keys, rows, dh, scale, probabilities_t, block);
            ops->scores(v_block, kv_stride, dout_transposed, block, keys, rows, dh, 1.0f, dscores_t, block);
            for (size_t c = 0; c < keys; ++c)
                transposed_ds_row(ops, probabilities_t + c * block, dscores_t + c * block, lse + q0, deltas + q0, rows,
                                  unit->causal ? causal_hidden(k0 + c, q0, rows) : 0);
            if (bf16) round_rows(probabilities_t, block, keys, rows, probabilities_t, block);
            ops->accumulate(dv, dh, probabilities_t, block, g_tile, g_stride, keys, rows, dh);
            ops->accumulate(dk, dh, dscores_t, block, q_exact, qkv_stride, keys, rows, dh);
            float *dscores = probabilities_t; /* [rows, keys]: Pᵀ is spent */
            ops->transpose(dscores_t, block, keys, rows, dscores, block);
            ops->accumulate(dq + q0 * qkv_stride, qkv_stride, dscores, block, k_exact, qkv_stride, rows, keys, dh);
        }
        for (size_t c = 0; c < keys; ++c) {
            float *target_k = unit->dk + (k0 + c) * qkv_stride, *target_v = unit->dv + (k0 + c) * qkv_stride;
            for (size_t e = 0; e < dh; ++e) target_k[e] = dk[c * dh + e] * scale, target_v[e] = dv[c * dh + e];
        }
    }
    for (size_t r = 0; r < length; ++r)
        for (size_t e = 0; e < dh; ++e) dq[r * qkv_stride + e] *= scale;
}

static void backward_fused_unit_f32(const void *ops, const uform__attention_backward_unit_t *unit) {
    backward_fused_unit_with(ops, unit, NULL);
}

static void backward_fused_unit_bf16(const void *ops, const uform__attention_backward_unit_t *unit) {
    float bf16_tiles[4 * block * max_width];
    backward_fused_unit_with(ops, unit, bf16_tiles);
}

static void backward_query_prong(void *opaque, size_t thread, size_t prong) {
    const attention_context_t *context = opaque;
    size_t begin, end;
    uform__split_range(context->units, context->prongs, prong, &begin, &end);
    if (begin == end) return;
    unit_cursor_t cursor = unit_locate(context->shape, begin);
    for (size_t unit = begin; unit < end; ++unit, unit_advance(context->shape, &cursor))
        backward_query_unit(context, cursor);
}

static void backward_key_prong(void *opaque, size_t thread, size_t prong) {
    const attention_context_t *context = opaque;
    size_t begin, end;
    uform__split_range(context->units, context->prongs, prong, &begin, &end);
    if (begin == end) return;
    unit_cursor_t cursor = unit_locate(context->shape, begin);
    for (size_t unit = begin; unit < end; ++unit, unit_advance(context->shape, &cursor))
        backward_key_unit(context, cursor);
}

/* The fused units are (item, head) over the non-empty items, ordered by item, then head. */
static size_t fused_units_total(const uform__attention_shape_t *shape) {
    size_t items = 0;
    for (size_t item = 0; item < shape->count; ++item) items += shape->offsets[item + 1] > shape->offsets[item];
    return items * shape->heads;
}

static void backward_fused_prong(void *opaque, size_t thread, size_t prong) {
    const attention_context_t *context = opaque;
    const uform__attention_shape_t *shape = context->shape;
    size_t begin, end;
    uform__split_range(context->units, context->prongs, prong, &begin, &end);
    size_t dh = shape->head_width, d = shape->heads * dh, qkv_stride = 3 * d, tokens = shape->tokens, unit = 0;
    for (size_t item = 0; item < shape->count && unit < end; ++item) {
        size_t first = shape->offsets[item], length = shape->offsets[item + 1] - first;
        if (!length) continue;
        for (size_t head = 0; head < shape->heads && unit < end; ++head, ++unit) {
            if (unit < begin) continue;
            float *deltas = context->deltas + head * tokens + first;
            row_deltas(context, first, length, head, deltas);
            const float *q = context->qkv + first * qkv_stride + head * dh;
            float *dq = context->dqkv + first * qkv_stride + head * dh;
            uform__attention_backward_unit_t geometry = {
                .q = q,
                .k = q + d,
                .v = q + 2 * d,
                .dout = context->dout + first * d + head * dh,
                .lse = context->lse + head * tokens + first,
                .deltas = deltas,
                .dq = dq,
                .dk = dq + d,
                .dv = dq + 2 * d,
                .length = length,
                .head_width = dh,
                .qkv_stride = qkv_stride,
                .out_stride = d,
                .scale = 1.0f / sqrtf((float)dh),
                .causal = shape->causal != 0,
            };
            context->backward_unit_fn(context->unit_context, &geometry);
        }
    }
}

void uform__nn_attention_backward_units(uform__nn_attention_backward_unit_fn unit_fn, const void *unit_context,
                                        const uform__attention_shape_t *shape, const float *qkv, const float *out,
                                        const float *lse, const float *dout, float *deltas, float *dqkv,
                                        const uform__parallel_t *parallel) {
    if (head_width_unsupported(shape) || shape->queries) { /* queries: forward only */
        fill_nan(dqkv, shape->tokens * 3 * shape->heads * shape->head_width);
        return;
    }
    attention_context_t context = {.shape = shape, .qkv = qkv, .out = out, .lse = lse, .dout = dout, .dqkv = dqkv,
                                   .deltas = deltas, .backward_unit_fn = unit_fn, .unit_context = unit_context};
    context.units = fused_units_total(shape);
    context.prongs = prongs_for(parallel, context.units);
    uform__parallel_for(parallel, context.prongs, backward_fused_prong, &context);
}

void uform__nn_attention_backward_schedule_with(const uform__nn_attention_ops_t *ops,
                                                uform__nn_attention_schedule_t schedule,
                                                const uform__attention_shape_t *shape, const float *qkv,
                                                const float *out, const float *lse, const float *dout, float *deltas,
                                                float *dqkv, const uform__parallel_t *parallel) {
    if (head_width_unsupported(shape) || shape->queries) { /* queries: forward only */
        fill_nan(dqkv, shape->tokens * 3 * shape->heads * shape->head_width);
        return;
    }
    attention_context_t context = {
        .ops = ops, .shape = shape, .qkv = qkv, .out = out, .lse = lse, .dout = dout, .dqkv = dqkv, .deltas = deltas};
    if (schedule == UFORM__NN_ATTENTION_BACKWARD_AUTO)
        schedule = fused_units_total(shape) >= uform__parallel_threads(parallel) ? UFORM__NN_ATTENTION_BACKWARD_FUSED
                                                                                : UFORM__NN_ATTENTION_BACKWARD_TWO_PASS;
    if (schedule == UFORM__NN_ATTENTION_BACKWARD_FUSED) {
        uform__nn_attention_backward_units(backward_fused_unit_f32, ops, shape, qkv, out, lse, dout, deltas, dqkv,
                                           parallel);
        return;
    }
    context.units = units_total(shape);
    context.prongs = prongs_for(parallel, context.units);
    uform__parallel_for(parallel, context.prongs, backward_query_prong, &context);
    uform__parallel_for(parallel, context.prongs, backward_key_prong, &context);
}

void uform__nn_attention_backward_with(const uform__nn_attention_ops_t *ops, const uform__attention_shape_t *shape,
                                       const float *qkv, const float *out, const float *lse, const float *dout,
                                       float *deltas, float *dqkv, const uform__parallel_t *parallel) {
    uform__nn_attention_backward_schedule_with(ops, UFORM__NN_ATTENTION_BACKWARD_AUTO, shape, qkv, out, lse, dout,
                                               deltas, dqkv, parallel);
}

void uform__nn_attention_backward_bf16_with(const uform__nn_attention_ops_t *ops, const uform__attention_shape_t *shape,
                                            const float *qkv, const float *out, const float *lse, const float *dout,
                                            float *deltas, float *dqkv, const uform__parallel_t *parallel) {
    uform__nn_attention_backward_units(backward_fused_unit_bf16, ops, shape, qkv, out, lse, dout, deltas, dqkv,
                                       parallel);
}
