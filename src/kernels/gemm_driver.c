/*
 * The GEMM driver every class shares: argument checks, packing into the class's panel format,
 * the deterministic parallel split and the blocked loops around the class's register tile.
 * Compiled for the baseline CPU; only the tile and epilogue functions it calls use wider
 * instructions (they live in gemm_<class>.c).
 *
 * Canonical form: C[M,N] (+)= A[M,K] · B[K,N], where A(i, p) = a.data[i·a.row + p·a.col] and
 * B(p, j) = b.data[p·b.row + j·b.col]. The three products map onto it as
 *   forward     A = X (row ldx, col 1)      B = Wᵀ (row 1, col ldw)     C = Y
 *   backward_x  A = dY (row lddy, col 1)    B = W (row ldw, col 1)      C = dX, M=m N=k K=n
 *   backward_w  A = dYᵀ (row 1, col lddy)   B = X (row ldx, col 1)      C = dW, M=n N=k K=m
 *
 * Loops: for each NC-column chunk, for each KC slice of K (in order): pack the B slice into
 * NR-column panels (in parallel over panels, unless W came pre-packed), then run prongs over
 * (MC-row block × group of panels); a prong packs its A block into MR-row panels and runs the
 * tile over every (panel, row panel) pair, B micro-panel outer so it stays in L1 while the A
 * block streams from L2. The first slice overwrites C (unless accumulating), later slices add,
 * and the last one applies the epilogue, so every element of C sees the same sequence of
 * operations whichever prong computes it: results do not depend on the thread count.
 */
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "kernels/gemm.h"

typedef struct gemm_operand_t {
    const void *data;
    uform__gemm_dtype_t dtype;
    size_t row, col; /* strides in elements */
} gemm_operand_t;

typedef struct gemm_problem_t {
    const uform__gemm_micro_t *micro;
    size_t m, n, k;
    gemm_operand_t a, b;
    const uform__gemm_packed_t *packed; /* B pre-packed (whole K), or NULL */
    float *c;           /* F32 C, or NULL when C is BF16 */
    uform__bf16_t *c16; /* BF16 C (single K slice, no accumulate): tiles go through a staging tile */
    size_t ldc;
    int accumulate;
    const float *bias;
    int gelu;
    float *column_sums; /* backward_w's db: each row of A (a column of dY) summed over all of K, or NULL */
    void *scratch; /* caller's, or NULL */
    size_t scratch_capacity;
    const unsigned char *ahead; /* forward's caller-named prefetch (gemm.h), or NULL */
    size_t ahead_bytes;
} gemm_problem_t;

/* Fitted for this project with /usr/bin/python3 + numpy: P(t) = log(erfc(z)/t) + z² on
 * t ∈ [1/6, 1] (z ∈ [0, 10]), 4,000 Chebyshev nodes, Lawson-reweighted least squares towards
 * minimax; max |error| 4.5e-8 in double, erfc relative error ≤ 2.7e-7 with F32 Horner. */
const float uform__gemm_erfc_coefficients[10] = {-1.265441418e+00f, 9.984925389e-01f,  3.878994286e-01f,
                                                 2.835856192e-02f,  2.019153535e-02f,  -1.167788729e-01f,
                                                 -6.512591839e-01f, 1.122409225e+00f,  -6.660666466e-01f,
                                                 1.421949118e-01f};

/* The fast GELU, fitted for this project with /usr/bin/python3 + numpy (gemm.h has the bound):
 * p and Q minimise max |0.5·x·(erfc − t·Q(t)·e^(−x²/2))| / max(1, |x|) over |x| ≤ 10√2 (62,000
 * points, Lawson-reweighted least squares towards minimax, p searched on a grid of F32 values):
 * 2.9e-8 with these F32 coefficients. E is the relative minimax fit of 2^f on [−1/2, 1/2]:
 * relative error 1.5e-7 with F32 coefficients. */
const float uform__gemm_gelu_fast_p = 0.336f;
const float uform__gemm_gelu_fast_coefficients[5] = {1.262251139e-01f, 1.939579844e-01f, -6.228089333e-02f,
                                                     3.505154252e-01f, -1.084187999e-01f};
const float uform__gemm_exp2_coefficients[6] = {1.0000001192092896f,  0.6931469440460205f,   0.24022120237350464f,
                                                0.05550713464617729f, 0.009675541892647743f, 0.0013276460813358426f};

static size_t round_up(size_t value, size_t step) { return (value + step - 1) / step * step; }
static size_t dtype_bytes(uform__gemm_dtype_t dtype) { return dtype == UFORM__GEMM_BF16 ? 2 : 4; }

static inline float operand_load(const gemm_operand_t *operand, size_t index) {
    if (operand->dtype == UFORM__GEMM_BF16) return uform__gemm_f32_from_bf16(((const uform__bf16_t *)operand->data)[index]);
    return ((const float *)operand->data)[index];
}

/* BF16 → F32 is a 16-bit shift; written on integers so the compiler vectorises it. */
/* The A block's row stride, in elements: at least `kc_padded`, a whole number of cache lines,
 * and an odd one, so the MR rows a tile streams at once fall into MR different L1 sets (a
 * stride of 2 or 4 KiB, K = 1024 or 2048, would pile them into one or two sets). */
static size_t a_block_stride(size_t kc_padded, size_t elem) {
    size_t lines = (kc_padded * elem + 63) / 64;
    if (lines % 2 == 0) ++lines;
    return lines * 64 / elem;
}

static void widen_bf16_row(const uform__bf16_t *source, float *target, size_t count) {
    uint32_t *bits = (uint32_t *)target;
    for (size_t i = 0; i < count; ++i) bits[i] = (uint32_t)source[i] << 16;
}

/* sums[r] += A(i0 + r, p0 + p) for p in order (the bias gradient of backward_w, whose A rows are
 * dY columns): backward_b's additions, here over the source the block was just packed from. */
static void add_row_sums(const gemm_operand_t *a, size_t i0, size_t rows, size_t p0, size_t kc, float *restrict sums) {
    const float *source = (const float *)a->data + p0 * a->col + i0 * a->row;
    for (size_t p = 0; p < kc; ++p)
        for (size_t r = 0; r < rows; ++r) sums[r] += source[p * a->col + r * a->row];
}

/* Zeros the block's padding: columns [kc, kc_padded) of the `rows` rows, and whole rows up to
 * `rows_padded`. */
static void zero_padding(uform__gemm_dtype_t panel_dtype, void *out, size_t lda, size_t rows, size_t rows_padded,
                         size_t kc, size_t kc_padded) {
    for (size_t r = 0; r < rows_padded; ++r) {
        size_t p = r < rows ? kc : 0;
        if (panel_dtype == UFORM__GEMM_F32) memset((float *)out + r * lda + p, 0, (kc_padded - p) * sizeof(float));
        else memset((uform__bf16_t *)out + r * lda + p, 0, (kc_padded - p) * sizeof(uform__bf16_t));
    }
}

/*
 * Copies rows [i0, i0 + rows) × K [p0, p0 + kc) of A into a row-major block with row stride
 * `lda` (see a_block_stride), zero-filling columns up to `kc_padded` (K rounded up to even for
 * BF16 pairs) and the rows up to a multiple of MR, converting to the panel type on the way
 * (F32 → BF16 rounds to nearest even). Row copies are contiguous in every product but
 * backward_w, whose A is dYᵀ: that one goes through the class's pack_transposed when it has one
 * (16×16 tiles through registers), which also sums the rows into `sums` (backward_w's db, or
 * NULL) while they are in registers; the portable loops sum them afterwards (add_row_sums).
 * The class hooks write the values the portable loops write, with one exception: GENOA's rounds
 * with vcvtne2ps2bf16, which gives ±0 for an F32 subnormal where the scalar rounding gives a BF16
 * subnormal; vdpbf16ps reads BF16 subnormals as ±0 (the same sign), so the products are the same
 * bits (test_gemm_pack checks it with subnormal inputs).
 */
static void pack_a(const gemm_problem_t *problem, size_t i0, size_t rows, size_t p0, size_t kc, size_t kc_padded,
                   size_t lda, void *out, float *sums) {
    const uform__gemm_micro_t *micro = problem->micro;
    const gemm_operand_t *a = &problem->a;
    size_t rows_padded = round_up(rows, micro->mr);
    if (micro->pack_transposed && a->row == 1 && a->col != 1 && a->dtype == UFORM__GEMM_F32) {
        micro->pack_transposed((const float *)a->data + p0 * a->col + i0, a->col, rows, kc, out, lda, sums);
        zero_padding(micro->panel_dtype, out, lda, rows, rows_padded, kc, kc_padded);
        return;
    }
    if (sums) add_row_sums(a, i0, rows, p0, kc, sums);
    if (micro->panel_dtype == UFORM__GEMM_F32) {
        float *block = out;
        if (a->col == 1) {
            for (size_t r = 0; r < rows; ++r) {
                size_t base = (i0 + r) * a->row + p0;
                if (a->dtype == UFORM__GEMM_F32) memcpy(block + r * lda, (const float *)a->data + base, kc * sizeof(float));
                else
                    widen_bf16_row((const uform__bf16_t *)a->data + base, block + r * lda, kc);
            }
        } else if (a->row == 1 && a->dtype == UFORM__GEMM_F32) {
            /* Transposed source (backward_w's dYᵀ): 16 source rows at a time, so each source line
             * is reused for 16 consecutive r while its block row is written contiguously. */
            const float *source = (const float *)a->data + i0;
            for (size_t p_begin = 0; p_begin < kc; p_begin += 16) {
                size_t p_end = kc - p_begin < 16 ? kc : p_begin + 16;
                for (size_t r = 0; r < rows; ++r)
                    for (size_t p = p_begin; p < p_end; ++p) block[r * lda + p] = source[(p0 + p) * a->col + r];
            }
        } else {
            for (size_t p = 0; p < kc; ++p) {
                size_t base = (p0 + p) * a->col + i0 * a->row;
                for (size_t r = 0; r < rows; ++r) block[r * lda + p] = operand_load(a, base + r * a->row);
            }
        }
        for (size_t r = 0; r < rows_padded; ++r)
            for (size_t p = r < rows ? kc : 0; p < kc_padded; ++p) block[r * lda + p] = 0.0f;
        return;
    }
    uform__bf16_t *block = out;
    if (a->row == 1 && a->col != 1 && a->dtype == UFORM__GEMM_F32) {
        /* backward_w's dYᵀ rounded to BF16: a K pair of block row r is column r of two consecutive
         * dY rows, so read those two rows contiguously and write one 32-bit word per r. */
        const float *source = (const float *)a->data + i0;
        for (size_t t = 0; t < (kc + 1) / 2; ++t) {
            const float *row0 = source + (p0 + 2 * t) * a->col, *row1 = row0 + a->col;
            int second = 2 * t + 1 < kc;
            for (size_t r = 0; r < rows; ++r) {
                uint32_t word = uform__gemm_bf16_from_f32(row0[r]);
                if (second) word |= (uint32_t)uform__gemm_bf16_from_f32(row1[r]) << 16;
                memcpy(block + r * lda + 2 * t, &word, sizeof word);
            }
        }
        for (size_t r = 0; r < rows_padded; ++r)
            for (size_t p = r < rows ? kc : 0; p < kc_padded; ++p) block[r * lda + p] = 0;
        return;
    }
    for (size_t r = 0; r < rows_padded; ++r) {
        uform__bf16_t *target = block + r * lda;
        size_t done = 0;
        if (r < rows) {
            size_t base = (i0 + r) * a->row + p0 * a->col;
            if (a->col == 1 && a->dtype == UFORM__GEMM_BF16) {
                memcpy(target, (const uform__bf16_t *)a->data + base, kc * sizeof(uform__bf16_t));
            } else if (a->col == 1 && micro->convert) {
                micro->convert((const float *)a->data + base, target, kc);
            } else {
                for (size_t p = 0; p < kc; ++p)
                    target[p] = a->dtype == UFORM__GEMM_BF16 ? ((const uform__bf16_t *)a->data)[base + p * a->col]
                                                             : uform__gemm_bf16_from_f32(((const float *)a->data)[base + p * a->col]);
            }
            done = kc;
        }
        for (size_t p = done; p < kc_padded; ++p) target[p] = 0;
    }
}

/*
 * Writes K [p0, p0 + kc) × columns [j0, j0 + cols) of B (cols ≤ NR) as one NR-column panel,
 * zero-padding columns to NR and, for BF16 pairs, K to even. F32: out[p][j]; BF16: out[p/2][j][p%2].
 */
static void pack_b_panel(const uform__gemm_micro_t *micro, const gemm_operand_t *b, size_t p0, size_t kc, size_t j0,
                         size_t cols, void *out) {
    size_t nr = micro->nr;
    if (micro->panel_dtype == UFORM__GEMM_F32) {
        float *panel_out = out;
        if (b->col == 1) { /* columns contiguous (backward products): row copies */
            for (size_t p = 0; p < kc; ++p) {
                size_t index = (p0 + p) * b->row + j0;
                if (b->dtype == UFORM__GEMM_F32) memcpy(panel_out + p * nr, (const float *)b->data + index, cols * sizeof(float));
                else widen_bf16_row((const uform__bf16_t *)b->data + index, panel_out + p * nr, cols);
                for (size_t j = cols; j < nr; ++j) panel_out[p * nr + j] = 0.0f;
            }
            return;
        }
        if (micro->pack_transposed && b->row == 1 && b->dtype == UFORM__GEMM_F32) {
            /* K-contiguous F32 rows (a forward's W): the panel is their transpose, which the class's
             * pack_transposed does in register tiles (panel[p][j] = source[j·col + p]) instead of
             * one strided store per value; exact copies either way. Exact search packs every
             * block of index rows this way, once per block (index_search.c). */
            micro->pack_transposed((const float *)b->data + p0 + j0 * b->col, b->col, kc, cols, panel_out, nr, NULL);
            for (size_t p = 0; cols < nr && p < kc; ++p)
                memset(panel_out + p * nr + cols, 0, (nr - cols) * sizeof(float));
            return;
        }
        for (size_t j = 0; j < nr; ++j) {
            if (j >= cols) {
                for (size_t p = 0; p < kc; ++p) panel_out[p * nr + j] = 0.0f;
                continue;
            }
            size_t base = p0 * b->row + (j0 + j) * b->col;
            if (b->row == 1 && b->dtype == UFORM__GEMM_F32) {
                const float *source = (const float *)b->data + base;
                for (size_t p = 0; p < kc; ++p) panel_out[p * nr + j] = source[p];
            } else {
                for (size_t p = 0; p < kc; ++p) panel_out[p * nr + j] = operand_load(b, base + p * b->row);
            }
        }
        return;
    }
    size_t kc_pairs = (kc + 1) / 2;
    uform__bf16_t *panel_out = out;
    if (b->row == 1 && b->dtype == UFORM__GEMM_BF16 && kc % 2 == 0) {
        /* The forward's W rows: each K pair is one 32-bit word of the source row. */
        for (size_t j = 0; j < nr; ++j) {
            const uform__bf16_t *source = (const uform__bf16_t *)b->data + p0 + (j0 + j) * b->col;
            for (size_t t = 0; t < kc_pairs; ++t) {
                uint32_t pair = 0;
                if (j < cols) memcpy(&pair, source + 2 * t, sizeof pair);
                memcpy(panel_out + t * nr * 2 + j * 2, &pair, sizeof pair);
            }
        }
        return;
    }
    if (b->col == 1 && b->dtype == UFORM__GEMM_F32 && micro->pack_pairs) {
        micro->pack_pairs((const float *)b->data + p0 * b->row + j0, b->row, kc, cols, panel_out);
        return;
    }
    if (b->col == 1 && b->dtype == UFORM__GEMM_BF16 && micro->pack_pairs16) {
        micro->pack_pairs16((const uform__bf16_t *)b->data + p0 * b->row + j0, b->row, kc, cols, panel_out);
        return;
    }
    if (b->col == 1) {
        /* Rows of W (backward_x) or X (backward_w): a K pair is two consecutive rows, interleaved
         * column by column (F32 rows rounded to BF16 on the way). */
        for (size_t t = 0; t < kc_pairs; ++t) {
            size_t index0 = (p0 + 2 * t) * b->row + j0;
            int second = 2 * t + 1 < kc;
            uform__bf16_t *target = panel_out + t * nr * 2;
            if (b->dtype == UFORM__GEMM_BF16) {
                const uform__bf16_t *row0 = (const uform__bf16_t *)b->data + index0, *row1 = row0 + b->row;
                for (size_t j = 0; j < cols; ++j) {
                    target[2 * j] = row0[j];
                    target[2 * j + 1] = second ? row1[j] : 0;
                }
            } else {
                const float *row0 = (const float *)b->data + index0, *row1 = row0 + b->row;
                for (size_t j = 0; j < cols; ++j) {
                    target[2 * j] = uform__gemm_bf16_from_f32(row0[j]);
                    target[2 * j + 1] = second ? uform__gemm_bf16_from_f32(row1[j]) : 0;
                }
            }
            for (size_t j = cols; j < nr; ++j) target[2 * j] = target[2 * j + 1] = 0;
        }
        return;
    }
    for (size_t j = 0; j < nr; ++j) {
        for (size_t p = 0; p < kc_pairs * 2; ++p) {
            uform__bf16_t value = 0;
            if (j < cols && p < kc) {
                size_t index = (p0 + p) * b->row + (j0 + j) * b->col;
                value = b->dtype == UFORM__GEMM_BF16 ? ((const uform__bf16_t *)b->data)[index]
                                                     : uform__gemm_bf16_from_f32(((const float *)b->data)[index]);
            }
            panel_out[(p / 2) * nr * 2 + j * 2 + (p & 1)] = value;
        }
    }
}

/* ---- The parallel phases of one (chunk, slice) step ---- */

typedef struct gemm_step_t {
    const gemm_problem_t *problem;
    size_t j0, chunk_cols, panels; /* the chunk */
    size_t p0, kc, kc_padded;      /* the slice */
    size_t a_lda;                  /* row stride of the packed A blocks */
    const unsigned char *b_panels; /* first panel of this chunk at this slice */
    size_t b_panel_stride;         /* bytes between consecutive panels */
    unsigned char *b_scratch;      /* where pack_b writes (plain weights) */
    unsigned char *a_scratch;      /* per-thread A blocks */
    size_t a_scratch_stride;
    size_t row_panels, row_blocks; /* MR-row panels of C, and the blocks they are split into */
    size_t groups;                 /* panel groups per row block */
    size_t pack_prongs;
} gemm_step_t;

static void pack_b_prong(void *context, size_t thread, size_t prong) {
    const gemm_step_t *step = context;
    const gemm_problem_t *problem = step->problem;
    size_t begin, end, nr = problem->micro->nr;
    uform__split_range(step->panels, step->pack_prongs, prong, &begin, &end);
    for (size_t q = begin; q < end; ++q) {
        size_t j = q * nr, cols = step->chunk_cols - j < nr ? step->chunk_cols - j : nr;
        pack_b_panel(problem->micro, &problem->b, step->p0, step->kc, step->j0 + j, cols,
                     step->b_scratch + q * step->b_panel_stride);
    }
}

/* The largest MR×NR of any class (6×64), for the staging tile of a BF16 C. */
enum { STAGING_FLOATS = 6 * 64 };

static void convert_row(const uform__gemm_micro_t *micro, const float *source, uform__bf16_t *target, size_t count) {
    if (micro->convert) micro->convert(source, target, count);
    else
        for (size_t i = 0; i < count; ++i) target[i] = uform__gemm_bf16_from_f32(source[i]);
}

static void compute_prong(void *context, size_t thread, size_t prong) {
    const gemm_step_t *step = context;
    const gemm_problem_t *problem = step->problem;
    const uform__gemm_micro_t *micro = problem->micro;
    size_t mr = micro->mr, nr = micro->nr, elem = dtype_bytes(micro->panel_dtype);
    size_t block = prong / step->groups, group = prong % step->groups;
    size_t panel_begin, panel_end; /* row blocks are near-equal runs of MR-row panels */
    uform__split_range(step->row_panels, step->row_blocks, block, &panel_begin, &panel_end);
    size_t i0 = panel_begin * mr, rows = (panel_end * mr < problem->m ? panel_end * mr : problem->m) - i0;
    size_t q_begin, q_end;
    uform__split_range(step->panels, step->groups, group, &q_begin, &q_end);
    if (q_begin == q_end) return;
    /* Rows already in the panel type, contiguous along K, are read in place (no copy) when the
     * tile's reads stay inside the matrix: whole MR-row panels, and no K padding (BF16 pairs need
     * an even slice). A row stride of a multiple of 4 KiB would pile the rows into one L1 set, so
     * such matrices are copied. Only the trailing partial panel, if any, is packed. */
    const gemm_operand_t *a = &problem->a;
    /* backward_w's db: the first column chunk's first panel group sums its rows while packing
     * them (every row of A belongs to exactly one such prong per K slice, and the slices run in
     * order, so each sum adds its values in K order); those rows are never read in place. */
    float *sums = problem->column_sums && step->j0 == 0 && group == 0 ? problem->column_sums + i0 : NULL;
    int in_place = !sums && a->col == 1 && a->dtype == micro->panel_dtype && step->kc == step->kc_padded &&
                   (a->row * elem) % 4096 != 0;
    size_t in_place_rows = in_place ? rows / mr * mr : 0;
    unsigned char *a_block = step->a_scratch + thread * step->a_scratch_stride;
    if (in_place_rows < rows)
        pack_a(problem, i0 + in_place_rows, rows - in_place_rows, step->p0, step->kc, step->kc_padded, step->a_lda,
               a_block, sums);
    size_t a_panel_bytes = step->a_lda * mr * elem; /* MR rows of the block */
    const unsigned char *a_rows = (const unsigned char *)a->data + ((i0 * a->row) + step->p0) * elem;
    int accumulate = problem->accumulate || step->p0 > 0;
    int last = step->p0 + step->kc == problem->k;
    int epilogue = last && (problem->bias || problem->gelu);
    const float *bias_chunk = problem->bias ? problem->bias + step->j0 : NULL;
    _Alignas(64) float staging[STAGING_FLOATS]; /* one MR×NR tile, row stride NR (BF16 C only) */
    /* The next panel of this prong, prefetched in equal shares by the tiles of the current one
     * (classes with tile_ahead, F32 C): at a few dozen rows a panel has only a few tiles. */
    size_t tiles = (rows + mr - 1) / mr, ahead_panel_bytes = step->kc_padded * nr * elem;
    size_t ahead_share = round_up((ahead_panel_bytes + tiles - 1) / tiles, 64);
    /* With the caller's prefetch: every (panel, row tile) pair of the product takes one share. */
    size_t row_tiles = (problem->m + mr - 1) / mr, caller_tiles = row_tiles * ((problem->n + nr - 1) / nr);
    for (size_t q = q_begin; q < q_end; ++q) {
        size_t j = q * nr, cols = step->chunk_cols - j < nr ? step->chunk_cols - j : nr;
        const unsigned char *b_panel = step->b_panels + q * step->b_panel_stride;
        for (size_t r = 0; r < rows; r += mr) {
            size_t tile_rows = rows - r < mr ? rows - r : mr;
            const void *a_tile = r < in_place_rows ? (const void *)(a_rows + r * a->row * elem)
                                                   : (const void *)(a_block + ((r - in_place_rows) / mr) * a_panel_bytes);
            size_t lda = r < in_place_rows ? a->row : step->a_lda;
            if (problem->c16 && micro->tile_bf16_out) {
                micro->tile_bf16_out(step->kc_padded, a_tile, lda, b_panel, problem->c16 + (i0 + r) * problem->ldc + step->j0 + j,
                                     problem->ldc, tile_rows, cols, bias_chunk ? bias_chunk + j : NULL, problem->gelu);
                continue;
            }
            /* A BF16 C otherwise: the tile (and epilogue) write F32 into the staging tile, which
             * is rounded into C once (nearest even, as pack_a would round it for the next product). */
            float *c = problem->c16 ? staging : problem->c + (i0 + r) * problem->ldc + step->j0 + j;
            size_t ldc = problem->c16 ? nr : problem->ldc;
            if (!problem->c16 && micro->tile_ahead) {
                size_t begin = (r / mr) * ahead_share, bytes = 0;
                const unsigned char *ahead = NULL;
                if (problem->ahead) { /* the caller's next data: this (panel, row tile)'s share, first K slice only */
                    size_t share = round_up((problem->ahead_bytes + caller_tiles - 1) / caller_tiles, 64);
                    size_t at = (((step->j0 / nr + q) * row_tiles) + (i0 + r) / mr) * share;
                    if (step->p0 == 0 && at < problem->ahead_bytes) {
                        ahead = problem->ahead + at;
                        bytes = problem->ahead_bytes - at < share ? problem->ahead_bytes - at : share;
                    }
                } else if (q + 1 < q_end && begin < ahead_panel_bytes) {
                    ahead = b_panel + step->b_panel_stride + begin;
                    bytes = ahead_panel_bytes - begin < ahead_share ? ahead_panel_bytes - begin : ahead_share;
                }
                micro->tile_ahead(step->kc_padded, a_tile, lda, b_panel, c, ldc, tile_rows, cols, accumulate,
                                  epilogue && bias_chunk ? bias_chunk + j : NULL, epilogue ? problem->gelu : 0, ahead,
                                  bytes);
                continue;
            }
            if (epilogue && micro->tile_epilogue) {
                micro->tile_epilogue(step->kc_padded, a_tile, lda, b_panel, c, ldc, tile_rows, cols, accumulate,
                                     bias_chunk ? bias_chunk + j : NULL, problem->gelu);
            } else {
                micro->tile(step->kc_padded, a_tile, lda, b_panel, c, ldc, tile_rows, cols, accumulate);
                if (epilogue) micro->epilogue(c, ldc, tile_rows, cols, bias_chunk ? bias_chunk + j : NULL, problem->gelu);
            }
            if (problem->c16)
                for (size_t t = 0; t < tile_rows; ++t)
                    convert_row(micro, staging + t * nr, problem->c16 + (i0 + r + t) * problem->ldc + step->j0 + j, cols);
        }
    }
}

static void *aligned_scratch(size_t bytes) {
    if (bytes == 0) bytes = 64;
    return aligned_alloc(64, round_up(bytes, 64));
}

static uform_status_t gemm_run(const gemm_problem_t *problem, const uform__parallel_t *parallel,
                               uform_outcome_t *outcome, const char *function) {
    const uform__gemm_micro_t *micro = problem->micro;
    size_t m = problem->m, n = problem->n, k = problem->k;
    if (m == 0 || n == 0) return UFORM_OK;
    if (k == 0 && problem->c16) { /* An empty sum into BF16: 0, then the epilogue, 64 columns at a time. */
        _Alignas(64) float staging[64];
        for (size_t i = 0; i < m; ++i)
            for (size_t j = 0; j < n; j += 64) {
                size_t width = n - j < 64 ? n - j : 64;
                memset(staging, 0, sizeof staging);
                if (problem->bias || problem->gelu)
                    micro->epilogue(staging, width, 1, width, problem->bias ? problem->bias + j : NULL, problem->gelu);
                convert_row(micro, staging, problem->c16 + i * problem->ldc + j, width);
            }
        return UFORM_OK;
    }
    if (k == 0) { /* An empty sum: C is 0 (or unchanged), then the epilogue. */
        for (size_t i = 0; i < m; ++i) {
            float *row = problem->c + i * problem->ldc;
            if (!problem->accumulate) memset(row, 0, n * sizeof(float));
            if (problem->bias || problem->gelu) micro->epilogue(row, problem->ldc, 1, n, problem->bias, problem->gelu);
        }
        return UFORM_OK;
    }
    size_t threads = uform__parallel_threads(parallel);
    size_t mr = micro->mr, nr = micro->nr, elem = dtype_bytes(micro->panel_dtype);
    size_t pair = micro->panel_dtype == UFORM__GEMM_BF16 ? 2 : 1;
    /* K slices of near-equal length (at most KC): 1536 with KC 1024 is two slices of 768, not
     * 1024 + 512. They depend on K and the class only, so the order of every sum stays fixed. */
    size_t slices = (k + micro->kc - 1) / micro->kc;
    size_t kc_max = round_up((k + slices - 1) / slices, pair);
    if (problem->c16 && slices > 1) {
        /* A BF16 C cannot hold the F32 partial sums between K slices: compute into an F32
         * buffer, then round it once. Slower (a call-owned M×N buffer), but the same bits. */
        float *buffer = malloc(m * n * sizeof(float));
        if (!buffer)
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function,
                               "cannot allocate %zu bytes for the F32 sums of a BF16 'y' (K = %zu spans %zu slices)",
                               m * n * sizeof(float), k, slices);
        gemm_problem_t f32 = *problem;
        f32.c = buffer, f32.c16 = NULL, f32.ldc = n;
        uform_status_t status = gemm_run(&f32, parallel, outcome, function);
        if (status == UFORM_OK)
            for (size_t i = 0; i < m; ++i) convert_row(micro, buffer + i * n, problem->c16 + i * problem->ldc, n);
        free(buffer);
        return status;
    }
    /* Column chunks of near-equal width (at most NC, a multiple of NR): 2048 is 2 × 1024. */
    size_t chunks = (n + micro->nc - 1) / micro->nc;
    size_t nc = round_up((n + chunks - 1) / chunks, nr);
    size_t a_stride = round_up(micro->mc / mr * mr * a_block_stride(kc_max, elem) * elem, 64);
    size_t chunk_panels_max = (nc < n ? nc : round_up(n, nr)) / nr;
    size_t b_panel_stride_plain = kc_max * nr * elem;
    size_t a_bytes = a_stride * threads, b_bytes = problem->packed ? 0 : round_up(b_panel_stride_plain * chunk_panels_max, 64);
    unsigned char *owned = NULL, *scratch = problem->scratch;
    if (!scratch || problem->scratch_capacity < a_bytes + b_bytes || (uintptr_t)scratch % 64) {
        scratch = owned = aligned_scratch(a_bytes + b_bytes);
        if (!owned)
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate %zu bytes of packing scratch",
                               a_bytes + b_bytes);
    }
    unsigned char *a_scratch = scratch, *b_scratch = scratch + a_bytes;
    /* Row blocks of at most MC rows, as many as a multiple of the thread count, so threads get
     * equal work; how rows are grouped never changes the arithmetic of an element. */
    size_t row_panels = (m + mr - 1) / mr, mc_panels = micro->mc / mr;
    size_t row_blocks = (row_panels + mc_panels - 1) / mc_panels;
    /* Rows that fit one block (a text or an image at batch 1) stay one block when there are
     * columns enough to share: every B panel is then read by one prong, where two row blocks
     * would stream the same weights from memory twice, which is what bounds such a product. */
    int one_block = row_blocks == 1 && round_up(n, nr) / nr >= 2 * threads;
    if (!one_block) row_blocks = round_up(row_blocks, threads) < row_panels ? round_up(row_blocks, threads) : row_panels;
    for (size_t j0 = 0; j0 < n; j0 += nc) {
        gemm_step_t step = {.problem = problem, .j0 = j0, .a_scratch = a_scratch, .a_scratch_stride = a_stride,
                            .row_panels = row_panels, .row_blocks = row_blocks};
        step.chunk_cols = n - j0 < nc ? n - j0 : nc;
        step.panels = (step.chunk_cols + nr - 1) / nr;
        /* Enough prongs to keep every thread busy: split columns too when rows are few. */
        step.groups = 1;
        if (threads > 1 && row_blocks < 4 * threads) {
            step.groups = (4 * threads + row_blocks - 1) / row_blocks;
            /* One block of rows (batch 1): one run of consecutive panels a thread, so each prong
             * has panels enough for its tiles to prefetch the next one (tile_ahead) and the
             * prefetchers stream it unbroken. Two runs a thread (which let a thread that finds its
             * partner late take over half of the partner's share) measured 4-8% slower for batch-1
             * texts under F32 and BF16, builds taking turns in one process (bench/README.md,
             * "Batch-1 texts: INT8 panels on 2 MiB pages"). */
            if (one_block) step.groups = threads;
            if (step.groups > step.panels) step.groups = step.panels;
        }
        step.pack_prongs = step.panels < 4 * threads ? step.panels : 4 * threads;
        for (size_t p0 = 0; p0 < k; p0 += kc_max) {
            step.p0 = p0;
            step.kc = k - p0 < kc_max ? k - p0 : kc_max;
            step.kc_padded = round_up(step.kc, pair);
            step.a_lda = a_block_stride(step.kc_padded, elem);
            if (problem->packed) {
                size_t stride = problem->packed->k_padded * nr * elem;
                step.b_panels = (const unsigned char *)problem->packed->data + (j0 / nr) * stride + p0 * nr * elem;
                step.b_panel_stride = stride;
            } else {
                step.b_scratch = b_scratch;
                step.b_panels = b_scratch;
                step.b_panel_stride = step.kc_padded * nr * elem;
                uform__parallel_for(parallel, step.pack_prongs, pack_b_prong, &step);
            }
            uform__parallel_for(parallel, row_blocks * step.groups, compute_prong, &step);
        }
    }
    free(owned);
    return UFORM_OK;
}

/* ---- Argument checks and the three products ---- */

static uform_status_t check_matrix(uform_outcome_t *outcome, const char *function, const char *name, const void *data,
                                   size_t rows, size_t cols, size_t stride) {
    if (rows && cols && !data)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "matrix '%s' [%zu, %zu] is NULL", name, rows, cols);
    if (rows > 1 && stride < cols)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "matrix '%s' [%zu, %zu]: leading dimension %zu is smaller than its %zu columns", name, rows,
                           cols, stride, cols);
    return UFORM_OK;
}

static uform_status_t check_dtype(uform_outcome_t *outcome, const char *function, const char *name,
                                  uform__gemm_dtype_t dtype) {
    if (dtype != UFORM__GEMM_F32 && dtype != UFORM__GEMM_BF16)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "matrix '%s': element type %d is neither F32 (0) nor BF16 (1)",
                           name, (int)dtype);
    return UFORM_OK;
}

#define GEMM_TRY(expression)                       \
    do {                                           \
        uform_status_t gemm_status_ = (expression); \
        if (gemm_status_ != UFORM_OK) return gemm_status_; \
    } while (0)

uform_status_t uform__gemm_forward_drive(const uform__gemm_micro_t *micro, const uform__gemm_forward_t *args,
                                         const uform__parallel_t *parallel, uform_outcome_t *outcome) {
    static const char function[] = "uform__gemm_forward";
    if (!args) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "the arguments are NULL");
    GEMM_TRY(check_dtype(outcome, function, "x", args->x_dtype));
    GEMM_TRY(check_matrix(outcome, function, "x", args->x, args->m, args->k, args->ldx));
    GEMM_TRY(check_matrix(outcome, function, "y", args->y, args->m, args->n, args->ldy));
    GEMM_TRY(check_dtype(outcome, function, "y", args->y_dtype));
    if (args->y_dtype == UFORM__GEMM_BF16 && args->accumulate)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "'accumulate' needs an F32 'y' (a BF16 'y' would round the running sum); 'y' is BF16");
    int y_bf16 = args->y_dtype == UFORM__GEMM_BF16;
    gemm_problem_t problem = {.micro = micro, .m = args->m, .n = args->n, .k = args->k,
                              .c = y_bf16 ? NULL : args->y, .c16 = y_bf16 ? args->y : NULL, .ldc = args->ldy,
                              .bias = args->bias, .gelu = args->gelu, .scratch = args->scratch,
                              .scratch_capacity = args->scratch_capacity, .accumulate = args->accumulate != 0,
                              .ahead = args->ahead_bytes ? args->ahead : NULL, .ahead_bytes = args->ahead ? args->ahead_bytes : 0};
    if (!uform__gemm_gelu_known(args->gelu))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "'gelu' is %d; expected " UFORM__GEMM_GELU_CHOICES,
                           args->gelu);
    if (args->accumulate && args->gelu)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "'accumulate' with 'gelu' is ambiguous (GELU of the sum or sum of the GELU); not supported");
    problem.a = (gemm_operand_t){.data = args->x, .dtype = args->x_dtype, .row = args->ldx, .col = 1};
    if (args->packed) {
        const uform__gemm_packed_t *packed = args->packed;
        if (packed->layout != micro->layout || packed->nr != micro->nr || packed->panel_dtype != micro->panel_dtype)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "packed weight has layout %u (NR %zu), but this class's kernel expects layout %u (NR %zu)",
                               packed->layout, packed->nr, micro->layout, micro->nr);
        if (packed->n != args->n || packed->k != args->k)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "packed weight is [%zu, %zu], but the product needs W[%zu, %zu]", packed->n, packed->k,
                               args->n, args->k);
        if (packed->w_dtype != args->w_dtype)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "packed weight was packed from element type %d, but the call says %d", (int)packed->w_dtype,
                               (int)args->w_dtype);
        if (args->n && args->k && !packed->data)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "packed weight has no data");
        problem.packed = packed;
    } else {
        GEMM_TRY(check_dtype(outcome, function, "w", args->w_dtype));
        GEMM_TRY(check_matrix(outcome, function, "w", args->w, args->n, args->k, args->ldw));
        problem.b = (gemm_operand_t){.data = args->w, .dtype = args->w_dtype, .row = 1, .col = args->ldw};
    }
    if (args->x_dtype == UFORM__GEMM_BF16 && args->w_dtype != UFORM__GEMM_BF16)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "BF16 activations 'x' need BF16 weights; 'w' is F32");
    return gemm_run(&problem, parallel, outcome, function);
}

uform_status_t uform__gemm_backward_x_drive(const uform__gemm_micro_t *micro, const uform__gemm_backward_x_t *args,
                                            const uform__parallel_t *parallel, uform_outcome_t *outcome) {
    static const char function[] = "uform__gemm_backward_x";
    if (!args) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "the arguments are NULL");
    GEMM_TRY(check_dtype(outcome, function, "w", args->w_dtype));
    GEMM_TRY(check_matrix(outcome, function, "dy", args->dy, args->m, args->n, args->lddy));
    GEMM_TRY(check_matrix(outcome, function, "w", args->w, args->n, args->k, args->ldw));
    GEMM_TRY(check_matrix(outcome, function, "dx", args->dx, args->m, args->k, args->lddx));
    gemm_problem_t problem = {.micro = micro, .m = args->m, .n = args->k, .k = args->n, .c = args->dx, .ldc = args->lddx,
                              .scratch = args->scratch, .scratch_capacity = args->scratch_capacity};
    problem.a = (gemm_operand_t){.data = args->dy, .dtype = UFORM__GEMM_F32, .row = args->lddy, .col = 1};
    problem.b = (gemm_operand_t){.data = args->w, .dtype = args->w_dtype, .row = args->ldw, .col = 1};
    return gemm_run(&problem, parallel, outcome, function);
}

uform_status_t uform__gemm_backward_w_drive(const uform__gemm_micro_t *micro, const uform__gemm_backward_w_t *args,
                                            const uform__parallel_t *parallel, uform_outcome_t *outcome) {
    static const char function[] = "uform__gemm_backward_w";
    if (!args) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "the arguments are NULL");
    GEMM_TRY(check_dtype(outcome, function, "x", args->x_dtype));
    GEMM_TRY(check_matrix(outcome, function, "dy", args->dy, args->m, args->n, args->lddy));
    GEMM_TRY(check_matrix(outcome, function, "x", args->x, args->m, args->k, args->ldx));
    GEMM_TRY(check_matrix(outcome, function, "dw", args->dw, args->n, args->k, args->lddw));
    gemm_problem_t problem = {.micro = micro, .m = args->n, .n = args->k, .k = args->m, .c = args->dw, .ldc = args->lddw,
                              .accumulate = 1, .column_sums = args->db, .scratch = args->scratch,
                              .scratch_capacity = args->scratch_capacity};
    problem.a = (gemm_operand_t){.data = args->dy, .dtype = UFORM__GEMM_F32, .row = 1, .col = args->lddy};
    problem.b = (gemm_operand_t){.data = args->x, .dtype = args->x_dtype, .row = args->ldx, .col = 1};
    /* X without columns: nothing is packed, but db still sums dY's rows (in order). */
    if (args->db && args->k == 0 && args->n) add_row_sums(&problem.a, 0, args->n, 0, args->m, args->db);
    return gemm_run(&problem, parallel, outcome, function);
}

size_t uform__gemm_scratch_bytes_for(const uform__gemm_micro_t *micro, size_t threads) {
    size_t elem = dtype_bytes(micro->panel_dtype), threads_at_least_one = threads ? threads : 1;
    size_t a_stride = round_up(micro->mc / micro->mr * micro->mr * a_block_stride(micro->kc, elem) * elem, 64);
    return a_stride * threads_at_least_one + round_up(micro->kc * micro->nc * elem, 64);
}

/* ---- Packed weights ---- */

size_t uform__gemm_packed_size_for(const uform__gemm_micro_t *micro, size_t n, size_t k) {
    size_t pair = micro->panel_dtype == UFORM__GEMM_BF16 ? 2 : 1;
    return round_up(n, micro->nr) * round_up(k, pair) * dtype_bytes(micro->panel_dtype);
}

uform_status_t uform__gemm_pack_for(const uform__gemm_micro_t *micro, const void *w, size_t ldw,
                                    uform__gemm_dtype_t w_dtype, size_t n, size_t k, void *memory, size_t capacity,
                                    uform__gemm_packed_t *packed, uform_outcome_t *outcome) {
    static const char function[] = "uform__gemm_pack";
    if (!packed) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "'packed' is NULL");
    memset(packed, 0, sizeof *packed);
    GEMM_TRY(check_dtype(outcome, function, "w", w_dtype));
    GEMM_TRY(check_matrix(outcome, function, "w", w, n, k, ldw));
    size_t size = uform__gemm_packed_size_for(micro, n, k);
    if (capacity < size || (size && !memory))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "packing W[%zu, %zu] needs %zu bytes, the buffer has %zu", n, k, size, memory ? capacity : 0);
    if ((uintptr_t)memory % 64)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "the packing buffer %p is not 64-byte aligned",
                           memory);
    size_t pair = micro->panel_dtype == UFORM__GEMM_BF16 ? 2 : 1;
    size_t k_padded = round_up(k, pair), panel_bytes = k_padded * micro->nr * dtype_bytes(micro->panel_dtype);
    gemm_operand_t b = {.data = w, .dtype = w_dtype, .row = 1, .col = ldw}; /* B(p, j) = W[j, p] */
    for (size_t j = 0, q = 0; j < n; j += micro->nr, ++q) {
        size_t cols = n - j < micro->nr ? n - j : micro->nr;
        pack_b_panel(micro, &b, 0, k, j, cols, (unsigned char *)memory + q * panel_bytes);
    }
    *packed = (uform__gemm_packed_t){.data = memory, .n = n, .k = k, .w_dtype = w_dtype,
                                     .panel_dtype = micro->panel_dtype, .nr = micro->nr, .k_padded = k_padded,
                                     .layout = micro->layout};
    return UFORM_OK;
}
