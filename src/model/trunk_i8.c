/*
 * A trunk block under I8 compute, fused per block of rows or per item (trunk.c runs the unfused form).
 *
 * Unfused, every int8 product quantizes its whole input first: the norms write their F32 rows
 * [T, d] and the quantizer reads them back; mlp.up writes its GELU'd rows [T, mlp] as F32 and the
 * quantizer reads those back; qkv [T, 3d] goes to attention and attention's rows [T, d] to attn.out
 * through memory too. Here a thread takes ROWS rows at a time and carries them through the whole
 * sequence in its own scratch, which stays in its L2 (at d = 384, mlp = 1,536: 48 rows of hidden
 * F32 are 288 KiB):
 *
 *   head:  a = norm1(x) → quantize → qkv = a·Wqkvᵀ + b                  (qkv goes on to attention)
 *   tail:  quantize(att) → x += att·Woutᵀ + b → a = norm2(x) → quantize
 *          → h = gelu(a·Wupᵀ + b) → quantize → x += h·Wdownᵀ + b
 *
 * Per item (uform__trunk_i8_items), one thread runs an item's whole block: its head in blocks of
 * ROWS rows, its attention over every head, its tail in blocks of ROWS rows, so that the item's qkv
 * and attention rows (under 1 MiB for 197 tokens of `small`) stay in that thread's caches too.
 * Per rows (uform__trunk_i8_head / _tail, with attention between them over every thread) when the
 * items do not split evenly over the threads.
 *
 * Each step is the same kernel the unfused form calls (the class's norm, quantizer, int8 product
 * and attention, here on one thread), and every one of them computes a row (attention: an item,
 * head and query block) independently of the others and of the thread count (kernels/gemm_i8.h,
 * nn.h), so the fused block's outputs are bit-identical to the unfused one's (parity_dump's
 * blocks_fused_i8 case checks it).
 *
 * Few rows (one picture, a short text) would leave threads idle with blocks this size; the
 * unfused form splits the products' columns too, so it runs there (uform__trunk_i8_fuses).
 */
#include <string.h>

#include "core/outcome.h"
#include "model/encode.h"

/* Rows per block: a multiple of every class's tile height (4 and 6). */
enum { ROWS = 48 };

static size_t aligned(size_t bytes) { return (bytes + 63) / 64 * 64; }

/* One thread's pieces, carved from its stride of the scratch. */
typedef struct pieces_t {
    int8_t *q;          /* [ROWS, width] quantized rows */
    float *scales;      /* [ROWS] */
    int32_t *sums;      /* [ROWS] */
    float *a;           /* [ROWS, d] a norm's rows */
    float *hidden;      /* [ROWS, mlp] mlp.up's GELU'd rows */
    float *mean, *rstd; /* [ROWS] the norm's statistics (not used after) */
    void *gemm;         /* the int8 product's own scratch for one thread */
    size_t gemm_bytes;
} pieces_t;

static size_t carve(const uform__model_config_t *config, const uform__gemm_i8_kernels_t *i8, size_t width,
                    unsigned char *memory, pieces_t *pieces) {
    size_t offset = 0;
#define PIECE(field, type, bytes)                                          \
    if (pieces) pieces->field = (type)(void *)(memory + offset);          \
    offset += aligned(bytes);
    PIECE(q, int8_t *, ROWS * width)
    PIECE(scales, float *, ROWS * sizeof(float))
    PIECE(sums, int32_t *, ROWS * sizeof(int32_t))
    PIECE(a, float *, ROWS * config->hidden * sizeof(float))
    PIECE(hidden, float *, ROWS * config->mlp * sizeof(float))
    PIECE(mean, float *, ROWS * sizeof(float))
    PIECE(rstd, float *, ROWS * sizeof(float))
    size_t gemm_bytes = i8->scratch_bytes(1);
    PIECE(gemm, void *, gemm_bytes)
#undef PIECE
    if (pieces) pieces->gemm_bytes = gemm_bytes;
    return offset;
}

size_t uform__trunk_i8_fused_stride(const uform__model_config_t *config, const uform__gemm_i8_kernels_t *i8,
                                    size_t width) {
    return carve(config, i8, width, NULL, NULL);
}

int uform__trunk_i8_fuses(const uform__compute_t *compute, const uform__block_t *block, size_t rows) {
    const uform__i8_scratch_t *scratch = &compute->i8_scratch;
    size_t threads = uform__parallel_threads(compute->parallel);
    if (!scratch->fused || scratch->fused_threads < threads || !compute->packed) return 0;
    if (!uform__linear_is_i8(compute, &block->qkv) || !uform__linear_is_i8(compute, &block->out) ||
        !uform__linear_is_i8(compute, &block->up) || !uform__linear_is_i8(compute, &block->down))
        return 0;
    /* At least four blocks a thread, so that the last ones to finish leave little idle. */
    return rows >= 4 * threads * ROWS;
}

typedef struct fused_job_t fused_job_t;

/* A part of a block over rows [r0, r0 + rows) on this thread (head_rows or tail_rows below). */
typedef uform_status_t (*rows_part_fn)(const fused_job_t *job, const pieces_t *pieces, size_t r0, size_t rows,
                                       uform_outcome_t *outcome);

struct fused_job_t {
    rows_part_fn part; /* per rows: the part each prong runs */
    uform__compute_t *compute;
    const uform__model_config_t *config;
    const uform__block_t *block;
    size_t rows;
    float *att;       /* tail: the attention's rows [rows, d] (items: written here) */
    float *x;         /* [rows, d] the residual rows */
    float *qkv;       /* head: [rows, 3d] */
    float eps;
    const size_t *offsets;            /* items: token offsets [items + 1] */
    uform__trunk_attention_fn attention; /* items: the compute's attention */
    float *lse;                       /* items: the trunk's lse scratch [T · H] */
    int failed;               /* set (atomically) by the first prong that fails; the rest stop */
    uform_status_t status;    /* that prong's status and outcome */
    uform_outcome_t *outcome;
};

/* y (+)= quantize(x) · Wᵀ + b (then GELU) over `rows` ≤ ROWS rows, on this thread. */
static uform_status_t product(const fused_job_t *job, const pieces_t *pieces, const uform__linear_t *layer, size_t rows,
                              const float *x, size_t ldx, float *y, size_t ldy, int epilogue, uform_outcome_t *outcome) {
    const uform__gemm_i8_kernels_t *i8 = job->compute->i8;
    size_t k = layer->columns, k_padded = uform__gemm_i8_k_padded(k);
    i8->quantize(rows, k, x, ldx, UFORM__GEMM_F32, pieces->q, k_padded, pieces->scales, pieces->sums, NULL);
    uform__gemm_i8_forward_t args = {
        .m = rows, .n = layer->rows, .k = k, .x = {pieces->q, k_padded, pieces->scales, pieces->sums},
        .packed = &layer->i8, .bias = layer->bias, .gelu = (epilogue & UFORM__LINEAR_GELU) ? UFORM__GEMM_GELU_FAST : 0,
        .y = y, .ldy = ldy, .output = UFORM__GEMM_I8_F32, .accumulate = (epilogue & UFORM__LINEAR_ACCUMULATE) != 0,
        .scratch = pieces->gemm, .scratch_capacity = pieces->gemm_bytes};
    return i8->forward(&args, NULL, outcome);
}

/* This thread's pieces; 0 when an earlier prong failed (nothing to do). */
static int thread_pieces(const fused_job_t *job, size_t thread, pieces_t *pieces) {
    if (__atomic_load_n(&job->failed, __ATOMIC_ACQUIRE)) return 0;
    const uform__i8_scratch_t *scratch = &job->compute->i8_scratch;
    carve(job->config, job->compute->i8, scratch->width, scratch->fused + thread * scratch->fused_stride, pieces);
    return 1;
}

static void finish(fused_job_t *job, uform_status_t status, const uform_outcome_t *outcome) {
    if (status == UFORM_OK) return;
    int expected = 0;
    if (__atomic_compare_exchange_n(&job->failed, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        job->status = status;
        *job->outcome = *outcome;
    }
}

/* The head over rows [r0, r0 + rows): qkv = quantize(norm1(x))·Wqkvᵀ + b. */
static uform_status_t head_rows(const fused_job_t *job, const pieces_t *pieces, size_t r0, size_t rows,
                                uform_outcome_t *outcome) {
    const uform__block_t *block = job->block;
    size_t d = job->config->hidden;
    job->compute->nn->layernorm_forward(rows, d, job->x + r0 * d, d, block->norm1.weight, block->norm1.bias, job->eps,
                                        pieces->a, d, pieces->mean, pieces->rstd, NULL);
    return product(job, pieces, &block->qkv, rows, pieces->a, d, job->qkv + r0 * 3 * d, 3 * d, 0, outcome);
}

/* The tail over rows [r0, r0 + rows): x += attn.out(att), then x += mlp(norm2(x)). */
static uform_status_t tail_rows(const fused_job_t *job, const pieces_t *pieces, size_t r0, size_t rows,
                                uform_outcome_t *outcome) {
    const uform__block_t *block = job->block;
    size_t d = job->config->hidden, mlp = job->config->mlp;
    float *x = job->x + r0 * d;
    uform_status_t status =
        product(job, pieces, &block->out, rows, job->att + r0 * d, d, x, d, UFORM__LINEAR_ACCUMULATE, outcome);
    if (status != UFORM_OK) return status;
    job->compute->nn->layernorm_forward(rows, d, x, d, block->norm2.weight, block->norm2.bias, job->eps, pieces->a, d,
                                        pieces->mean, pieces->rstd, NULL);
    status = product(job, pieces, &block->up, rows, pieces->a, d, pieces->hidden, mlp, UFORM__LINEAR_GELU, outcome);
    if (status != UFORM_OK) return status;
    return product(job, pieces, &block->down, rows, pieces->hidden, mlp, x, d, UFORM__LINEAR_ACCUMULATE, outcome);
}

/* `part` over rows [first, end) in blocks of ROWS rows, on this thread. */
static uform_status_t part_over(const fused_job_t *job, const pieces_t *pieces, rows_part_fn part, size_t first,
                                size_t end, uform_outcome_t *outcome) {
    uform_status_t status = UFORM_OK;
    for (size_t r0 = first; status == UFORM_OK && r0 < end; r0 += ROWS)
        status = part(job, pieces, r0, end - r0 < ROWS ? end - r0 : ROWS, outcome);
    return status;
}

/* A prong of the per-rows form: the job's part over its ROWS rows. */
static void rows_prong(void *context, size_t thread, size_t prong) {
    fused_job_t *job = context;
    pieces_t pieces;
    if (!thread_pieces(job, thread, &pieces)) return;
    size_t r0 = prong * ROWS, end = job->rows - r0 < ROWS ? job->rows : r0 + ROWS;
    uform_outcome_t outcome = {0};
    finish(job, part_over(job, &pieces, job->part, r0, end, &outcome), &outcome);
}

/* One item's whole block on one thread: its head in blocks of ROWS rows, its attention (all heads),
 * its tail in blocks of ROWS rows; its qkv and attention rows stay in the thread's caches. */
static void item_prong(void *context, size_t thread, size_t item) {
    fused_job_t *job = context;
    pieces_t pieces;
    if (!thread_pieces(job, thread, &pieces)) return;
    size_t first = job->offsets[item], end = job->offsets[item + 1], length = end - first, d = job->config->hidden;
    uform_outcome_t outcome = {0};
    uform_status_t status = part_over(job, &pieces, head_rows, first, end, &outcome);
    if (status == UFORM_OK && length) {
        size_t heads = job->config->heads, offsets[2] = {0, length};
        uform__attention_shape_t shape = {length, heads, d / heads, offsets, 1, NULL};
        /* lse [H, length] of this item alone, in the trunk's lse rows of its tokens (unused after). */
        job->attention(&shape, job->qkv + first * 3 * d, job->att + first * d, job->lse + first * heads, NULL);
    }
    if (status == UFORM_OK) status = part_over(job, &pieces, tail_rows, first, end, &outcome);
    finish(job, status, &outcome);
}

static uform_status_t run(fused_job_t *job, uform__prong_fn prong, size_t prongs) {
    uform__parallel_for(job->compute->parallel, prongs, prong, job);
    return job->failed ? job->status : UFORM_OK;
}

uform_status_t uform__trunk_i8_head(uform__compute_t *compute, const uform__model_config_t *config,
                                    const uform__block_t *block, size_t rows, const float *x, float *qkv, float eps,
                                    uform_outcome_t *outcome) {
    fused_job_t job = {.part = head_rows, .compute = compute, .config = config, .block = block, .rows = rows,
                       .x = (float *)x, .qkv = qkv, .eps = eps, .outcome = outcome};
    double d = (double)config->hidden;
    compute->flops += 2.0 * (double)rows * 3.0 * d * d;
    return run(&job, rows_prong, (rows + ROWS - 1) / ROWS);
}

uform_status_t uform__trunk_i8_tail(uform__compute_t *compute, const uform__model_config_t *config,
                                    const uform__block_t *block, size_t rows, const float *att, float *x, float eps,
                                    uform_outcome_t *outcome) {
    fused_job_t job = {.part = tail_rows, .compute = compute, .config = config, .block = block, .rows = rows,
                       .att = (float *)att, .x = x, .eps = eps, .outcome = outcome};
    double d = (double)config->hidden, mlp = (double)config->mlp;
    compute->flops += 2.0 * (double)rows * (d * d + 2.0 * d * mlp);
    return run(&job, rows_prong, (rows + ROWS - 1) / ROWS);
}

int uform__trunk_i8_fuses_items(const uform__compute_t *compute, size_t items) {
    size_t threads = uform__parallel_threads(compute->parallel);
    /* Every thread as many items as the others (items of one modality have one length, mostly),
     * at least two each. */
    return items >= 2 * threads && items % threads == 0;
}

uform_status_t uform__trunk_i8_items(uform__compute_t *compute, const uform__model_config_t *config,
                                     const uform__block_t *block, float *x, const size_t *offsets, size_t items,
                                     uform__trunk_attention_fn attention, float *qkv, float *att, float *lse, float eps,
                                     uform_outcome_t *outcome) {
    size_t rows = offsets[items];
    fused_job_t job = {.compute = compute, .config = config, .block = block, .rows = rows, .att = att, .x = x,
                       .qkv = qkv, .eps = eps, .offsets = offsets, .attention = attention, .lse = lse,
                       .outcome = outcome};
    double d = (double)config->hidden, mlp = (double)config->mlp;
    compute->flops += 2.0 * (double)rows * (4.0 * d * d + 2.0 * d * mlp);
    return run(&job, item_prong, items);
}
