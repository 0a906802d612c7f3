/*
 * A trunk block under I8 compute, fused per block of rows (trunk.c runs the unfused form).
 *
 * Unfused, every int8 product quantizes its whole input first: the norms write their F32 rows
 * [T, d] and the quantizer reads them back; mlp.up writes its GELU'd rows [T, mlp] as F32 and the
 * quantizer reads those back. Those round trips go through memory, and with the products at
 * twice the BF16 speed they were a fifth of an I8 block's time after attention. Here a thread
 * takes ROWS rows at a time and carries them through the whole sequence in its own scratch, which
 * stays in its L2 (at d = 384, mlp = 1,536: 48 rows of hidden F32 are 288 KiB):
 *
 *   head:  a = norm1(x) → quantize → qkv = a·Wqkvᵀ + b                  (qkv goes on to attention)
 *   tail:  quantize(att) → x += att·Woutᵀ + b → a = norm2(x) → quantize
 *          → h = gelu(a·Wupᵀ + b) → quantize → x += h·Wdownᵀ + b
 *
 * Each step is the same kernel the unfused form calls (the class's norm, quantizer and int8
 * product, here on one thread over the block's rows), and every one of them computes a row
 * independently of the others and of the thread count (kernels/gemm_i8.h, nn.h), so the fused
 * block's outputs are bit-identical to the unfused one's (tests/model/test_trunk_i8.c).
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

typedef struct fused_job_t {
    uform__compute_t *compute;
    const uform__model_config_t *config;
    const uform__block_t *block;
    size_t rows;
    const float *att; /* tail: the attention's rows [rows, d] */
    float *x;         /* [rows, d] the residual rows */
    float *qkv;       /* head: [rows, 3d] */
    float eps;
    int failed;               /* set (atomically) by the first prong that fails; the rest stop */
    uform_status_t status;    /* that prong's status and outcome */
    uform_outcome_t *outcome;
} fused_job_t;

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

/* The prong's rows and its thread's pieces; 0 when an earlier prong failed (nothing to do). */
static int begin(const fused_job_t *job, size_t thread, size_t prong, pieces_t *pieces, size_t *r0, size_t *rows) {
    if (__atomic_load_n(&job->failed, __ATOMIC_ACQUIRE)) return 0;
    const uform__i8_scratch_t *scratch = &job->compute->i8_scratch;
    carve(job->config, job->compute->i8, scratch->width, scratch->fused + thread * scratch->fused_stride, pieces);
    *r0 = prong * ROWS;
    *rows = job->rows - *r0 < ROWS ? job->rows - *r0 : ROWS;
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

static void head_prong(void *context, size_t thread, size_t prong) {
    fused_job_t *job = context;
    pieces_t pieces;
    size_t r0, rows, d = job->config->hidden;
    if (!begin(job, thread, prong, &pieces, &r0, &rows)) return;
    const uform__block_t *block = job->block;
    job->compute->nn->layernorm_forward(rows, d, job->x + r0 * d, d, block->norm1.weight, block->norm1.bias, job->eps,
                                        pieces.a, d, pieces.mean, pieces.rstd, NULL);
    uform_outcome_t outcome = {0};
    finish(job, product(job, &pieces, &block->qkv, rows, pieces.a, d, job->qkv + r0 * 3 * d, 3 * d, 0, &outcome),
           &outcome);
}

static void tail_prong(void *context, size_t thread, size_t prong) {
    fused_job_t *job = context;
    pieces_t pieces;
    size_t r0, rows, d = job->config->hidden, mlp = job->config->mlp;
    if (!begin(job, thread, prong, &pieces, &r0, &rows)) return;
    const uform__block_t *block = job->block;
    float *x = job->x + r0 * d;
    uform_outcome_t outcome = {0};
    uform_status_t status =
        product(job, &pieces, &block->out, rows, job->att + r0 * d, d, x, d, UFORM__LINEAR_ACCUMULATE, &outcome);
    if (status == UFORM_OK) {
        job->compute->nn->layernorm_forward(rows, d, x, d, block->norm2.weight, block->norm2.bias, job->eps, pieces.a, d,
                                            pieces.mean, pieces.rstd, NULL);
        status = product(job, &pieces, &block->up, rows, pieces.a, d, pieces.hidden, mlp, UFORM__LINEAR_GELU, &outcome);
    }
    if (status == UFORM_OK)
        status = product(job, &pieces, &block->down, rows, pieces.hidden, mlp, x, d, UFORM__LINEAR_ACCUMULATE, &outcome);
    finish(job, status, &outcome);
}

static uform_status_t run(fused_job_t *job, uform__prong_fn prong) {
    uform__parallel_for(job->compute->parallel, (job->rows + ROWS - 1) / ROWS, prong, job);
    return job->failed ? job->status : UFORM_OK;
}

uform_status_t uform__trunk_i8_head(uform__compute_t *compute, const uform__model_config_t *config,
                                    const uform__block_t *block, size_t rows, const float *x, float *qkv, float eps,
                                    uform_outcome_t *outcome) {
    fused_job_t job = {compute, config, block, rows, NULL, (float *)x, qkv, eps, 0, UFORM_OK, outcome};
    double d = (double)config->hidden;
    compute->flops += 2.0 * (double)rows * 3.0 * d * d;
    return run(&job, head_prong);
}

uform_status_t uform__trunk_i8_tail(uform__compute_t *compute, const uform__model_config_t *config,
                                    const uform__block_t *block, size_t rows, const float *att, float *x, float eps,
                                    uform_outcome_t *outcome) {
    fused_job_t job = {compute, config, block, rows, att, x, NULL, eps, 0, UFORM_OK, outcome};
    double d = (double)config->hidden, mlp = (double)config->mlp;
    compute->flops += 2.0 * (double)rows * (d * d + 2.0 * d * mlp);
    return run(&job, tail_prong);
}
