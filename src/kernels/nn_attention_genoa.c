/*
 * GENOA's attention_forward_bf16 and attention_backward_bf16 (AVX-512 BF16: VDPBF16PS), also
 * SAPPHIRE's, GRANITE's and DIAMOND's: the semantics nn.h documents for the slots, at twice the
 * F32 product rate. The forward first; the backward's own comment is further down.
 *
 * The unit of work is the shared driver's (item, head, query block of ≤ 64 rows; see
 * uform__nn_attention_forward_units in nn_attention.c). Inside a unit the score tile is kept
 * transposed, keys as rows and the unit's query rows across the lanes, so that
 *   - S^T[c][r] = Σ_e2 dot2(Q2[e2][r], K2[c][e2]): the unit's Q is converted once into BF16
 *     pairs (q[2·e2], q[2·e2+1]) laid out [dh/2][rows], and each key row into its natural BF16
 *     row (which already is its pairs, [cols][dh/2]), broadcast one pair at a time;
 *   - the online softmax runs elementwise across 16 query rows per vector: the max, exp and
 *     sums need no horizontal reductions;
 *   - P·V: acc[r][e] += Σ_c2 dot2(P2[c2][r], V2[c2][e]) with P^T's rows 2·c2 and 2·c2+1
 *     interleaved into pairs [cols/2][rows] (broadcast), and V's rows likewise [cols/2][dh].
 *     An odd key count pads the last pair with zeros on both sides.
 * dot2 is one VDPBF16PS lane: acc += a.lo·b.lo + a.hi·b.hi, products exact, summed in F32.
 * VCVTNE2PS2BF16 rounds to nearest even and keeps NaN; it and VDPBF16PS count subnormals as zero
 * (the slot documents this).
 *
 * A unit keeps ~108 KiB of tiles on the stack, and each prong a 128 KiB scratch where its units
 * keep one item's converted keys and values (item_cache_t below) for the next query blocks.
 *
 * Causal units (nn.h; nn_attention.c says how the key blocks are chosen) read their first `keys`
 * keys only. In the block that crosses the diagonal the scores go in groups of 16 keys, each for
 * the row vectors from the first that sees one of them; each row vector's max, exp and sum run
 * over the keys up to its last lane's, with the lanes before a key masked out (seen_lanes: p = 0,
 * never an exp of a masked score); and P·V stops, per group of 4 rows, at the group's last key.
 * Off the diagonal the masks are all ones and the counts whole: the bidirectional unit's
 * operations. The backward unit stops its key blocks at the query block's diagonal and masks the
 * lanes before each key there (P = dS = 0); a key block's dK and dV are written by the first
 * query block that sees it (the diagonal one) and added to by the later ones.
 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/nn.h"
#include "kernels/nn_avx512.h"

#define UFORM_GENOA __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma")))

enum {
    block = UFORM__NN_ATTENTION_BLOCK,             /* query rows and key columns of a tile */
    max_width = UFORM__NN_ATTENTION_MAX_HEAD_WIDTH,
    max_pairs = (UFORM__NN_ATTENTION_MAX_HEAD_WIDTH + 1) / 2,
};

/* 16 BF16 pairs (low_i, high_i) from two F32 vectors, each rounded to nearest even. */
UFORM_GENOA static inline __m512i pairs_bf16x32(__m512 low_f32x16, __m512 high_f32x16) {
    /* cvtne2ps gives [low_0 .. low_15, high_0 .. high_15]; interleave the halves. */
    const __m512i interleave_i16x32 =
        _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19,
                         3, 18, 2, 17, 1, 16, 0);
    __m512i halves_bf16x32 = (__m512i)_mm512_cvtne2ps_pbh(high_f32x16, low_f32x16);
    return _mm512_permutexvar_epi16(interleave_i16x32, halves_bf16x32);
}

/* One row of `width` F32 values → its ceil(width/2) BF16 pairs (consecutive values), an odd
 * width's last pair padded with a zero. */
UFORM_GENOA static inline void row_pairs(const float *x, size_t width, uint32_t *pairs) {
    size_t e = 0;
    for (; e + 32 <= width; e += 32) /* whole 32s without masks; the pairs are consecutive values */
        _mm512_storeu_si512(pairs + e / 2,
                            (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + e + 16), _mm512_loadu_ps(x + e)));
    for (; e < width; e += 32) {
        __m512 low_f32x16 = _mm512_maskz_loadu_ps(nn_tail_mask16(width - e), x + e);
        __m512 high_f32x16 = _mm512_maskz_loadu_ps(nn_tail_mask16(width > e + 16 ? width - e - 16 : 0), x + e + 16);
        /* Natural order: the first 16 values then the next 16, which pair up as consecutive values. */
        __m512i row_bf16x32 = (__m512i)_mm512_cvtne2ps_pbh(high_f32x16, low_f32x16);
        size_t pairs_here = (width - e + 1) / 2;
        _mm512_mask_storeu_epi32(pairs + e / 2, nn_tail_mask16(pairs_here), row_bf16x32);
    }
}

/* Asks for `rows` rows of `width` floats (row stride `stride`) in L1 ahead of their use: the
 * rows of one head are 256-byte pieces 4.6 KB apart (d = 384), which the hardware prefetchers
 * do not fetch ahead on their own. `locality` 3 asks for L1, 2 for L2. A macro: as a function
 * GCC finds it pure (prefetches have no effect it models) and drops the calls. */
#define prefetch_rows(x, rows, width, stride, locality)                                            \
    do {                                                                                           \
        for (size_t prefetch_r_ = 0; prefetch_r_ < (rows); ++prefetch_r_) {                        \
            const char *prefetch_row_ = (const char *)((x) + prefetch_r_ * (stride));              \
            for (size_t prefetch_b_ = 0; prefetch_b_ < (width) * sizeof(float); prefetch_b_ += 64) \
                __builtin_prefetch(prefetch_row_ + prefetch_b_, 0, locality);                      \
            __builtin_prefetch(prefetch_row_ + (width) * sizeof(float) - 1, 0, locality);          \
        }                                                                                          \
    } while (0)

/* dst[c·dst_stride + r] = src[r·src_stride + c] for a 16×16 block of 32-bit values (BF16
 * pairs): rows past `rows` read as zeros, columns past `cols` are neither read nor written, and
 * all 16 lanes of each written row are stored. The transpose itself is nn_avx512.h's. */
UFORM_GENOA static void transpose_16x16_u32(const uint32_t *src, size_t src_stride, size_t rows, size_t cols,
                                            uint32_t *dst, size_t dst_stride) {
    __m512 row_f32x16[16];
    __mmask16 load_mask = nn_tail_mask16(cols);
#pragma GCC unroll 16
    for (size_t i = 0; i < 16; ++i)
        row_f32x16[i] = i < rows ? _mm512_castsi512_ps(_mm512_maskz_loadu_epi32(load_mask, src + i * src_stride))
                                   : _mm512_setzero_ps();
    __m512 column_f32x16[16];
    nn_transpose_16x16_f32x16(row_f32x16, column_f32x16);
#pragma GCC unroll 16
    for (size_t c = 0; c < 16; ++c)
        if (c < cols) _mm512_storeu_si512(dst + c * dst_stride, _mm512_castps_si512(column_f32x16[c]));
}

/* st [cols, 64]: st[c][r] = Σ_e2 dot2(q2[e2][r], k2[c][e2]) for `row_vectors` (1..4, compile-time)
 * vectors of 16 rows and `columns` (1..6, compile-time) keys from c0. */
UFORM_GENOA static inline __attribute__((always_inline)) void
scores_block_genoa(const uint32_t *q2, const uint32_t *k2, size_t pairs, size_t c0, float *st, const size_t row_vectors,
                   const size_t columns) {
    __m512 acc_f32x16[6][4];
#pragma GCC unroll 6
    for (size_t c = 0; c < 6; ++c)
#pragma GCC unroll 4
        for (size_t v = 0; v < 4; ++v) acc_f32x16[c][v] = _mm512_setzero_ps();
    for (size_t e2 = 0; e2 < pairs; ++e2) {
        __m512i q_bf16x32[4];
#pragma GCC unroll 4
        for (size_t v = 0; v < row_vectors; ++v) q_bf16x32[v] = _mm512_load_si512(q2 + e2 * block + v * 16);
#pragma GCC unroll 6
        for (size_t c = 0; c < columns; ++c) {
            __m512i k_bf16x32 = _mm512_set1_epi32((int)k2[(c0 + c) * pairs + e2]);
#pragma GCC unroll 4
            for (size_t v = 0; v < row_vectors; ++v)
                acc_f32x16[c][v] = _mm512_dpbf16_ps(acc_f32x16[c][v], (__m512bh)q_bf16x32[v], (__m512bh)k_bf16x32);
        }
    }
#pragma GCC unroll 6
    for (size_t c = 0; c < columns; ++c)
#pragma GCC unroll 4
        for (size_t v = 0; v < row_vectors; ++v) _mm512_store_ps(st + (c0 + c) * block + v * 16, acc_f32x16[c][v]);
}

UFORM_GENOA static inline __attribute__((always_inline)) void
scores_columns_genoa(const uint32_t *q2, const uint32_t *k2, size_t pairs, size_t cols, float *st,
                  const size_t row_vectors) {
    size_t c = 0;
    for (; c + 6 <= cols; c += 6) scores_block_genoa(q2, k2, pairs, c, st, row_vectors, 6);
    for (; c < cols; ++c) scores_block_genoa(q2, k2, pairs, c, st, row_vectors, 1);
}

/* st [cols, 64] for the unit's 1..4 vectors of query rows. Not inlined, so that its registers
 * are allocated apart from the unit's (inlined, one accumulator spilled to the stack). */
UFORM_GENOA __attribute__((noinline)) static void scores_tile_genoa(const uint32_t *q2, const uint32_t *k2, size_t pairs,
                                                                    size_t cols, float *st, size_t row_vectors) {
    switch (row_vectors) {
    case 1: scores_columns_genoa(q2, k2, pairs, cols, st, 1); break;
    case 2: scores_columns_genoa(q2, k2, pairs, cols, st, 2); break;
    case 3: scores_columns_genoa(q2, k2, pairs, cols, st, 3); break;
    default: scores_columns_genoa(q2, k2, pairs, cols, st, 4); break;
    }
}

/* acc [rows, stride] (rows r0 .. r0+`rows` (1..4, compile-time), `vectors` (1..4, compile-time)
 * 16-wide column vectors from e0) = acc·rescale[r] (or 0 when `first`) + Σ_c2 dot2(p2[c2][r], v2[c2][e]). */
UFORM_GENOA static inline __attribute__((always_inline)) void
values_block_genoa(float *acc, size_t stride, const uint32_t *p2, const uint32_t *v2, size_t column_pairs,
                   const float *rescale, int first, size_t r0, size_t e0, const size_t rows, const size_t vectors) {
    __m512 acc_f32x16[4][4];
#pragma GCC unroll 4
    for (size_t r = 0; r < rows; ++r) {
        __m512 rescale_f32x16 = _mm512_set1_ps(rescale[r0 + r]);
#pragma GCC unroll 4
        for (size_t v = 0; v < vectors; ++v)
            acc_f32x16[r][v] = first ? _mm512_setzero_ps()
                                     : _mm512_mul_ps(_mm512_load_ps(acc + (r0 + r) * stride + e0 + v * 16), rescale_f32x16);
    }
    for (size_t c2 = 0; c2 < column_pairs; ++c2) {
        __m512i v_bf16x32[4];
#pragma GCC unroll 4
        for (size_t v = 0; v < vectors; ++v) v_bf16x32[v] = _mm512_load_si512(v2 + c2 * stride + e0 + v * 16);
#pragma GCC unroll 4
        for (size_t r = 0; r < rows; ++r) {
            __m512i p_bf16x32 = _mm512_set1_epi32((int)p2[c2 * block + r0 + r]);
#pragma GCC unroll 4
            for (size_t v = 0; v < vectors; ++v)
                acc_f32x16[r][v] = _mm512_dpbf16_ps(acc_f32x16[r][v], (__m512bh)p_bf16x32, (__m512bh)v_bf16x32[v]);
        }
    }
#pragma GCC unroll 4
    for (size_t r = 0; r < rows; ++r)
#pragma GCC unroll 4
        for (size_t v = 0; v < vectors; ++v) _mm512_store_ps(acc + (r0 + r) * stride + e0 + v * 16, acc_f32x16[r][v]);
}

/* The key pairs rows r0 .. r0 + n − 1 read: all `column_pairs`, or in a causal diagonal block
 * those up to the last row's key, row 0 seeing `row0_keys` of the block's keys (`cols` when the
 * block is not diagonal: then all pairs). */
static inline size_t group_pairs(size_t column_pairs, size_t row0_keys, size_t r0, size_t n) {
    size_t pairs = (row0_keys + r0 + n) / 2;
    return pairs < column_pairs ? pairs : column_pairs;
}

UFORM_GENOA static inline __attribute__((always_inline)) void
values_columns_genoa(float *acc, size_t stride, const uint32_t *p2, const uint32_t *v2, size_t column_pairs,
                     size_t row0_keys, const float *rescale, int first, size_t rows, size_t e0, const size_t vectors) {
    size_t r = 0;
    for (; r + 4 <= rows; r += 4)
        values_block_genoa(acc, stride, p2, v2, group_pairs(column_pairs, row0_keys, r, 4), rescale, first, r, e0, 4,
                           vectors);
    size_t pairs = group_pairs(column_pairs, row0_keys, r, rows - r);
    switch (rows - r) {
    case 3: values_block_genoa(acc, stride, p2, v2, pairs, rescale, first, r, e0, 3, vectors); break;
    case 2: values_block_genoa(acc, stride, p2, v2, pairs, rescale, first, r, e0, 2, vectors); break;
    case 1: values_block_genoa(acc, stride, p2, v2, pairs, rescale, first, r, e0, 1, vectors); break;
    default: break;
    }
}

/* acc [rows, stride] = acc·rescale (or 0 when `first`) + P·V over the block's `column_pairs` key
 * pairs; row r reads only the pairs up to its key row0_keys + r (the causal diagonal block; pass
 * the block's key count otherwise). */
UFORM_GENOA __attribute__((noinline)) static void values_tile_genoa(float *acc, size_t stride, const uint32_t *p2, const uint32_t *v2,
                                          size_t column_pairs, size_t row0_keys, const float *rescale, int first,
                                          size_t rows) {
    for (size_t e0 = 0; e0 < stride; e0 += 64) {
        switch ((stride - e0) / 16 < 4 ? (stride - e0) / 16 : 4) {
        case 1: values_columns_genoa(acc, stride, p2, v2, column_pairs, row0_keys, rescale, first, rows, e0, 1); break;
        case 2: values_columns_genoa(acc, stride, p2, v2, column_pairs, row0_keys, rescale, first, rows, e0, 2); break;
        case 3: values_columns_genoa(acc, stride, p2, v2, column_pairs, row0_keys, rescale, first, rows, e0, 3); break;
        default: values_columns_genoa(acc, stride, p2, v2, column_pairs, row0_keys, rescale, first, rows, e0, 4); break;
        }
    }
}

/* The converted keys and values of one item and head, kept in the prong's scratch (after this
 * 64-byte header) for the prong's next units: an item of 197 tokens has 4 query blocks, each a
 * unit that would otherwise convert (and load) all the item's keys and values again. All zero:
 * nothing kept. */
typedef struct item_cache_t {
    const float *k; /* the item's first key row of this head */
    size_t length, head_width, qkv_stride;
    size_t blocks_done; /* key blocks converted so far (units walk them in order) */
} item_cache_t;

/* The lanes of query vector v (rows 16v .. 16v + 15 of the unit) that see the item's key `key`:
 * all unless `diagonal` (a causal unit's block that crosses its rows' positions), else the rows
 * whose position, unit->position + r, is at least `key`. */
static inline __mmask16 seen_lanes(const uform__attention_unit_t *unit, int diagonal, size_t key, size_t v) {
    if (!diagonal || key <= unit->position + 16 * v) return (__mmask16)0xFFFF;
    size_t hidden = key - unit->position - 16 * v; /* the vector's first lanes that may not see it */
    return hidden >= 16 ? (__mmask16)0 : (__mmask16)(0xFFFFu << hidden);
}

/* One unit: see the file comment. Buffers are 64-byte aligned for the full-vector loads. */
UFORM_GENOA static void forward_unit_bf16_genoa(const void *unused, const uform__attention_unit_t *unit) {
    (void)unused;
    size_t dh = unit->head_width, rows = unit->rows, length = unit->length, qkv_stride = unit->qkv_stride;
    size_t keys = unit->keys; /* the keys read: all `length`, or up to a causal unit's last row */
    size_t pairs = (dh + 1) / 2, stride = (dh + 15) / 16 * 16, row_vectors = (rows + 15) / 16;
    const float log2e = 1.44269504088896341f, scale = unit->scale, scale_log2 = scale * log2e;

    _Alignas(64) uint32_t q2[max_pairs * block];      /* [pairs, 64]: Q's BF16 pairs, query rows across */
    _Alignas(64) uint32_t k2[block * max_pairs];      /* [cols, pairs]: one key block's BF16 rows */
    _Alignas(64) uint32_t v2[block / 2 * max_width];  /* [cols/2, stride]: V's rows paired */
    _Alignas(64) uint32_t p2[block / 2 * block];      /* [cols/2, 64]: P^T's rows paired */
    _Alignas(64) float st[block * block];             /* [cols, 64]: Q·Kᵀ transposed, unscaled */
    _Alignas(64) float acc[block * max_width];        /* [rows, stride]: unnormalised output */
    _Alignas(64) float running_max[block], running_sum[block], rescale[block];

    /* The output rows are written last; ask for them (for writing) now. Here and below, no hints
     * when the rows are resident (nn.h): skipping them made a 35-token MiniLM-L6 text ~0.7% faster
     * at one thread (bench/README.md). */
    int hints = !unit->resident;
    for (size_t r = 0; hints && r < rows; ++r) {
        const char *row = (const char *)(unit->out + r * unit->out_stride);
        for (size_t b = 0; b < dh * sizeof(float); b += 64) __builtin_prefetch(row + b, 1, 3);
        __builtin_prefetch(row + dh * sizeof(float) - 1, 1, 3);
    }
    /* The item's converted keys [length, pairs] and values [length/2, stride] in the prong's
     * scratch when they fit (up to 512 tokens at head width 64), else one block at a time here. */
    item_cache_t *cache = NULL;
    uint32_t *k2_item = NULL, *v2_item = NULL;
    size_t k2_words = (length * pairs + 15) / 16 * 16, v2_words = (length + 1) / 2 * stride;
    if (unit->scratch && 64 + (k2_words + v2_words) * sizeof(uint32_t) <= UFORM__NN_ATTENTION_UNIT_SCRATCH) {
        cache = unit->scratch;
        k2_item = (uint32_t *)((char *)unit->scratch + 64), v2_item = k2_item + k2_words;
        if (cache->k != unit->k || cache->length != length || cache->head_width != dh || cache->qkv_stride != qkv_stride)
            *cache = (item_cache_t){unit->k, length, dh, qkv_stride, 0};
    }
    if (hints && (!cache || cache->blocks_done == 0)) {
        prefetch_rows(unit->k, keys < block ? keys : block, dh, qkv_stride, 3);
        prefetch_rows(unit->v, keys < block ? keys : block, dh, qkv_stride, 3);
    }
    /* Q: each row to its pairs (through k2 as scratch), then transposed; padding rows are zero. */
    for (size_t r = 0; r < rows; ++r) row_pairs(unit->q + r * qkv_stride, dh, k2 + r * pairs);
    for (size_t r0 = 0; r0 < rows; r0 += 16)
        for (size_t e0 = 0; e0 < pairs; e0 += 16)
            transpose_16x16_u32(k2 + r0 * pairs + e0, pairs, rows - r0, pairs - e0 < 16 ? pairs - e0 : 16,
                                q2 + e0 * block + r0, block);
    for (size_t r = 0; r < block; ++r) running_max[r] = -INFINITY, running_sum[r] = 0.0f;

    for (size_t k0 = 0; k0 < keys; k0 += block) {
        size_t cols = keys - k0 < block ? keys - k0 : block, column_pairs = (cols + 1) / 2;
        int first = k0 == 0;
        size_t tile = k0 / block;
        int convert = !cache || tile >= cache->blocks_done;
        /* Causal: the lanes (query rows) that see key c of this block are those from
         * k0 + c − position on; `diagonal` when some key here lies past the first row. */
        int diagonal = unit->causal && k0 + cols > unit->position + 1;
        uint32_t *k2_tile = cache ? k2_item + k0 * pairs : k2, *v2_tile = cache ? v2_item + k0 / 2 * stride : v2;
        if (convert)
            for (size_t c = 0; c < cols; ++c) row_pairs(unit->k + (k0 + c) * qkv_stride, dh, k2_tile + c * pairs);
        /* The next block's keys and values load while this block's products run (when they are
         * not kept yet); during the last block, the next unit's query rows. */
        if (hints && k0 + block < keys) {
            if (!cache || tile + 1 >= cache->blocks_done) {
                size_t next = keys - k0 - block < block ? keys - k0 - block : block;
                prefetch_rows(unit->k + (k0 + block) * qkv_stride, next, dh, qkv_stride, 3);
                prefetch_rows(unit->v + (k0 + block) * qkv_stride, next, dh, qkv_stride, 3);
            }
        } else if (hints) {
            if (unit->q_next) prefetch_rows(unit->q_next, unit->q_next_rows, dh, qkv_stride, 2);
            if (unit->k_next) {
                prefetch_rows(unit->k_next, unit->k_next_rows, dh, qkv_stride, 2);
                prefetch_rows(unit->k_next + unit->out_stride, unit->k_next_rows, dh, qkv_stride, 2);
            }
        }
        /* Keys seen by the unit's first row here (all `cols` off the causal diagonal); a diagonal
         * block's scores go in groups of 16 keys, each for the row vectors that see one of them. */
        size_t row0_keys = diagonal ? unit->position - k0 + 1 : cols;
        if (!diagonal) scores_tile_genoa(q2, k2_tile, pairs, cols, st, row_vectors);
        for (size_t c0 = 0; diagonal && c0 < cols; c0 += 16) {
            /* The first row that sees key c0 is c0 + 1 − row0_keys: its vector is the first one here. */
            size_t v0 = c0 + 1 > row0_keys ? (c0 + 1 - row0_keys) / 16 : 0;
            if (v0 < row_vectors)
                scores_tile_genoa(q2 + 16 * v0, k2_tile + c0 * pairs, pairs, cols - c0 < 16 ? cols - c0 : 16,
                                  st + c0 * block + 16 * v0, row_vectors - v0);
        }

        /* Online softmax, 16 query rows per vector; p summed unrounded in key order. A causal
         * diagonal block leaves the lanes that may not see a key out of its max, and zeroes
         * their p before the sum (all-ones masks elsewhere: the same operations as before). */
        for (size_t v = 0; v < row_vectors; ++v) {
            /* The keys this vector's lanes read: up to its last lane's key in a diagonal block. */
            size_t vector_keys = row0_keys + 16 * v + 15 < cols ? row0_keys + 16 * v + 15 : cols;
            size_t vector_pairs = (vector_keys + 1) / 2;
            __m512 tile_max_f32x16 = _mm512_set1_ps(-INFINITY);
            for (size_t c = 0; c < vector_keys; ++c)
                tile_max_f32x16 = _mm512_mask_max_ps(tile_max_f32x16, seen_lanes(unit, diagonal, k0 + c, v),
                                                     tile_max_f32x16, _mm512_load_ps(st + c * block + v * 16));
            __m512 old_max_f32x16 = _mm512_load_ps(running_max + v * 16);
            /* fl(scale·x) is monotone in x (scale > 0), so this is the max of the scaled scores. */
            __m512 new_max_f32x16 = _mm512_max_ps(_mm512_mul_ps(tile_max_f32x16, _mm512_set1_ps(scale)), old_max_f32x16);
            /* p = exp(scale·S − m) = 2^(S·scale·log2 e − m·log2 e). */
            __m512 scale_f32x16 = _mm512_set1_ps(scale_log2), sum_f32x16 = _mm512_setzero_ps();
            __m512 shift_f32x16 = _mm512_mul_ps(new_max_f32x16, _mm512_set1_ps(log2e));
            for (size_t c2 = 0; c2 < vector_pairs; ++c2) {
                __m512 low_f32x16 = _mm512_maskz_mov_ps(
                    seen_lanes(unit, diagonal, k0 + 2 * c2, v),
                    nn_exp2_f32x16(_mm512_fmsub_ps(_mm512_load_ps(st + 2 * c2 * block + v * 16), scale_f32x16, shift_f32x16)));
                sum_f32x16 = _mm512_add_ps(sum_f32x16, low_f32x16);
                __m512 high_f32x16 = _mm512_setzero_ps();
                if (2 * c2 + 1 < cols) {
                    high_f32x16 = _mm512_maskz_mov_ps(
                        seen_lanes(unit, diagonal, k0 + 2 * c2 + 1, v),
                        nn_exp2_f32x16(
                            _mm512_fmsub_ps(_mm512_load_ps(st + (2 * c2 + 1) * block + v * 16), scale_f32x16, shift_f32x16)));
                    sum_f32x16 = _mm512_add_ps(sum_f32x16, high_f32x16);
                }
                _mm512_store_si512(p2 + c2 * block + v * 16, pairs_bf16x32(low_f32x16, high_f32x16));
            }
            if (first)
                _mm512_store_ps(running_sum + v * 16, sum_f32x16);
            else {
                __m512 rescale_f32x16 =
                    nn_exp2_f32x16(_mm512_mul_ps(_mm512_sub_ps(old_max_f32x16, new_max_f32x16), _mm512_set1_ps(log2e)));
                _mm512_store_ps(rescale + v * 16, rescale_f32x16);
                _mm512_store_ps(running_sum + v * 16,
                                _mm512_fmadd_ps(_mm512_load_ps(running_sum + v * 16), rescale_f32x16, sum_f32x16));
            }
            _mm512_store_ps(running_max + v * 16, new_max_f32x16);
        }

        /* V: rows 2·c2 and 2·c2+1 paired; a missing odd row and the columns past dh are zero. */
        for (size_t c2 = 0; convert && c2 < column_pairs; ++c2) {
            const float *low = unit->v + (k0 + 2 * c2) * qkv_stride, *high = low + qkv_stride;
            int has_high = 2 * c2 + 1 < cols;
            for (size_t e = 0; e < stride; e += 16) {
                __mmask16 mask = nn_tail_mask16(dh - e);
                __m512 low_f32x16 = _mm512_maskz_loadu_ps(mask, low + e);
                __m512 high_f32x16 = has_high ? _mm512_maskz_loadu_ps(mask, high + e) : _mm512_setzero_ps();
                _mm512_store_si512(v2_tile + c2 * stride + e, pairs_bf16x32(low_f32x16, high_f32x16));
            }
        }
        /* A block counts as kept only when whole (a `queries` unit may stop inside one). */
        if (convert && cache && cols == (length - k0 < block ? length - k0 : block)) cache->blocks_done = tile + 1;
        values_tile_genoa(acc, stride, p2, v2_tile, column_pairs, row0_keys, rescale, first, rows);
    }

    for (size_t r = 0; r < rows; ++r) {
        __m512 inverse_f32x16 = _mm512_set1_ps(1.0f / running_sum[r]);
        float *o = unit->out + r * unit->out_stride;
        size_t e = 0;
        for (; e + 16 <= dh; e += 16) /* unmasked where whole: masked stores are slow on Zen */
            _mm512_storeu_ps(o + e, _mm512_mul_ps(_mm512_load_ps(acc + r * stride + e), inverse_f32x16));
        if (e < dh)
            _mm512_mask_storeu_ps(o + e, nn_tail_mask16(dh - e), _mm512_mul_ps(_mm512_load_ps(acc + r * stride + e), inverse_f32x16));
        unit->lse[r] = running_max[r] + logf(running_sum[r]);
    }
}

void uform__nn_attention_forward_bf16_genoa(const uform__attention_shape_t *shape, const float *qkv, float *out,
                                            float *lse, const uform__parallel_t *parallel) {
    uform__nn_attention_forward_units(forward_unit_bf16_genoa, NULL, 1, shape, qkv, out, lse, parallel);
}

/* ---------------------------------------------------------------------------------------------
 * attention_backward_bf16 (nn.h), one unit of uform__nn_attention_backward_units per (item,
 * head). Query blocks outermost; per (query block, key block) pair, three VDPBF16PS products and
 * two F32 ones on transposed tiles (keys as rows, the block's query rows across the lanes):
 *   Sᵀ[c][r]  = Σ_e2 dot2(K2[c][e2], Q2ᵀ[e2][r])      K's natural pairs broadcast, Q's transposed
 *   dPᵀ[c][r] = Σ_e2 dot2(V2[c][e2], dO2ᵀ[e2][r])
 *   Pᵀ = exp(scale·Sᵀ − lse), dSᵀ = Pᵀ ⊙ (dPᵀ − D), elementwise with lse and D across lanes;
 *   dV[c][e] += Σ_r2 dot2(P2ᵀ[c][r2], dO2[r2][e])     Pᵀ's rows to natural pairs, dO's rows paired
 *   dK[c][e] += Σ_r dSᵀ[c][r]·Q[r][e]                 F32: dSᵀ broadcast, Q's rows as they lie
 *   dQ[r][e] += Σ_c dSᵀ[c][r]·K[c][e]                 F32: dSᵀ's column broadcast, K's rows
 * dK and dV accumulate in place in dqkv (the unit owns those rows; the first query block writes
 * them, dK is scaled last),
 * dQ on the stack for the query block. A unit keeps ~170 KiB of tiles on the stack. Per (item,
 * head), D comes from the shared driver. Measured (bench_attention, GENOA, 1 thread, GFLOP per
 * CPU-second counting 8·L²·d): 67 / 88 / 94 / 101 at 64 / 197 / 256 / 1,568 tokens, 1.36–1.56×
 * the F32 backward; with dK and dQ as BF16 products of a rounded dS too it was 77 / 103 / 116 /
 * 128 in the same run (nn.h says why it is not).
 */

/* out[r][e] (=, or += when `accumulate`) Σ_k A(r, k)·b[k·b_stride + e] with A(r, k) = a[r·a_row + k·a_step],
 * for `rows` (1..6) rows and `vectors` (1..4) 16-wide column vectors, `count` ≤ 16·vectors columns
 * (the rest neither read nor written in `out`). Two kinds: BF16 pairs (`f32` 0: a and b hold pairs,
 * dot2 products; b is 64-byte aligned with b_stride a multiple of 16) or F32 (`f32` 1: a and b hold
 * floats, FMAs: dK and dQ, whose dS stays F32). Both elements are 4 bytes, so one set of offsets
 * serves both; `f32` is a constant at every call, so each kind compiles to its own code. */
_Static_assert(sizeof(float) == sizeof(uint32_t), "F32 and BF16-pair elements share offsets");

UFORM_GENOA static inline __attribute__((always_inline)) void
product_block_genoa(int f32, const uint32_t *a, size_t a_row, size_t a_step, const uint32_t *b, size_t b_stride,
                    size_t depth, float *out, size_t out_stride, size_t count, int accumulate, const size_t rows,
                    const size_t vectors) {
    __m512 acc_f32x16[6][4];
    __mmask16 mask[4];
#pragma GCC unroll 4
    for (size_t v = 0; v < 4; ++v) mask[v] = nn_tail_mask16(count > v * 16 ? count - v * 16 : 0);
#pragma GCC unroll 6
    for (size_t r = 0; r < rows; ++r)
#pragma GCC unroll 4
        for (size_t v = 0; v < vectors; ++v)
            acc_f32x16[r][v] = accumulate ? _mm512_maskz_loadu_ps(mask[v], out + r * out_stride + v * 16)
                                          : _mm512_setzero_ps();
    for (size_t k = 0; k < depth; ++k) {
        __m512 b_x16[4]; /* 32 BF16 (as 16 pairs) or 16 F32 */
#pragma GCC unroll 4
        for (size_t v = 0; v < vectors; ++v)
            b_x16[v] = f32 ? _mm512_maskz_loadu_ps(mask[v], (const float *)b + k * b_stride + v * 16)
                           : _mm512_castsi512_ps(_mm512_load_si512(b + k * b_stride + v * 16));
#pragma GCC unroll 6
        for (size_t r = 0; r < rows; ++r) {
            const uint32_t *a_element = a + r * a_row + k * a_step;
            if (f32) {
                __m512 a_f32x16 = _mm512_set1_ps(*(const float *)a_element);
#pragma GCC unroll 4
                for (size_t v = 0; v < vectors; ++v)
                    acc_f32x16[r][v] = _mm512_fmadd_ps(a_f32x16, b_x16[v], acc_f32x16[r][v]);
            } else {
                __m512i a_bf16x32 = _mm512_set1_epi32((int)*a_element);
#pragma GCC unroll 4
                for (size_t v = 0; v < vectors; ++v)
                    acc_f32x16[r][v] = _mm512_dpbf16_ps(acc_f32x16[r][v], (__m512bh)a_bf16x32,
                                                        (__m512bh)_mm512_castps_si512(b_x16[v]));
            }
        }
    }
#pragma GCC unroll 6
    for (size_t r = 0; r < rows; ++r)
#pragma GCC unroll 4
        for (size_t v = 0; v < vectors; ++v) {
            float *o = out + r * out_stride + v * 16;
            if (mask[v] == 0xFFFF) _mm512_storeu_ps(o, acc_f32x16[r][v]);
            else _mm512_mask_storeu_ps(o, mask[v], acc_f32x16[r][v]);
        }
}

/* m rows: blocks of 6, then the rest in one smaller block. */
UFORM_GENOA static inline __attribute__((always_inline)) void
product_rows_genoa(int f32, const uint32_t *a, size_t a_row, size_t a_step, const uint32_t *b, size_t b_stride,
                   size_t depth, size_t m, float *out, size_t out_stride, size_t count, int accumulate,
                   const size_t vectors) {
    size_t r = 0;
    for (; r + 6 <= m; r += 6)
        product_block_genoa(f32, a + r * a_row, a_row, a_step, b, b_stride, depth, out + r * out_stride, out_stride,
                            count, accumulate, 6, vectors);
    const uint32_t *a_rest = a + r * a_row;
    float *out_rest = out + r * out_stride;
    switch (m - r) {
    case 5:
        product_block_genoa(f32, a_rest, a_row, a_step, b, b_stride, depth, out_rest, out_stride, count, accumulate,
                            5, vectors);
        break;
    case 4:
        product_block_genoa(f32, a_rest, a_row, a_step, b, b_stride, depth, out_rest, out_stride, count, accumulate,
                            4, vectors);
        break;
    case 3:
        product_block_genoa(f32, a_rest, a_row, a_step, b, b_stride, depth, out_rest, out_stride, count, accumulate,
                            3, vectors);
        break;
    case 2:
        product_block_genoa(f32, a_rest, a_row, a_step, b, b_stride, depth, out_rest, out_stride, count, accumulate,
                            2, vectors);
        break;
    case 1:
        product_block_genoa(f32, a_rest, a_row, a_step, b, b_stride, depth, out_rest, out_stride, count, accumulate,
                            1, vectors);
        break;
    default: break;
    }
}

/* out [m, n] in column panels of up to 64 (4 vectors of 16). */
UFORM_GENOA static inline __attribute__((always_inline)) void
product_columns_genoa(int f32, const uint32_t *a, size_t a_row, size_t a_step, const uint32_t *b, size_t b_stride,
                      size_t depth, size_t m, size_t n, float *out, size_t out_stride, int accumulate) {
    for (size_t e0 = 0; e0 < n; e0 += 64) {
        size_t count = n - e0 < 64 ? n - e0 : 64;
        switch ((count + 15) / 16) {
        case 1:
            product_rows_genoa(f32, a, a_row, a_step, b + e0, b_stride, depth, m, out + e0, out_stride, count,
                               accumulate, 1);
            break;
        case 2:
            product_rows_genoa(f32, a, a_row, a_step, b + e0, b_stride, depth, m, out + e0, out_stride, count,
                               accumulate, 2);
            break;
        case 3:
            product_rows_genoa(f32, a, a_row, a_step, b + e0, b_stride, depth, m, out + e0, out_stride, count,
                               accumulate, 3);
            break;
        default:
            product_rows_genoa(f32, a, a_row, a_step, b + e0, b_stride, depth, m, out + e0, out_stride, count,
                               accumulate, 4);
            break;
        }
    }
}

/* out [m, n] (=, or +=) Σ_k2 dot2(A(r, k2), b[k2][:]) with A(r, k2) = a[r·a_row + k2·a_pair]: the
 * backward's BF16 products, whichever operand is transposed. Not inlined (its registers apart). */
UFORM_GENOA __attribute__((noinline)) static void product_genoa(const uint32_t *a, size_t a_row, size_t a_pair,
                                                                const uint32_t *b, size_t b_stride, size_t depth,
                                                                size_t m, size_t n, float *out, size_t out_stride,
                                                                int accumulate) {
    product_columns_genoa(0, a, a_row, a_pair, b, b_stride, depth, m, n, out, out_stride, accumulate);
}

/* out [m, n] (=, or +=) Σ_k A(r, k)·b[k][:] with A(r, k) = a[r·a_row + k·a_step], in F32: dK and dQ. */
UFORM_GENOA __attribute__((noinline)) static void product_f32_genoa(const float *a, size_t a_row, size_t a_step,
                                                                    const float *b, size_t b_stride, size_t depth,
                                                                    size_t m, size_t n, float *out,
                                                                    size_t out_stride, int accumulate) {
    product_columns_genoa(1, (const uint32_t *)a, a_row, a_step, (const uint32_t *)b, b_stride, depth, m, n, out,
                          out_stride, accumulate);
}

/* pairs [ceil(rows/2), stride]: rows 2·r2 and 2·r2+1 of x [rows, width] (row stride x_stride)
 * paired column by column; a missing odd row and the columns past width are zero. */
UFORM_GENOA static void rows_paired(const float *x, size_t x_stride, size_t rows, size_t width, size_t stride,
                                    uint32_t *pairs) {
    for (size_t r2 = 0; 2 * r2 < rows; ++r2) {
        int has_high = 2 * r2 + 1 < rows;
        const float *low = x + 2 * r2 * x_stride, *high = has_high ? low + x_stride : low;
        for (size_t e = 0; e < stride; e += 16) {
            __mmask16 mask = nn_tail_mask16(width > e ? width - e : 0);
            __m512 low_f32x16 = _mm512_maskz_loadu_ps(mask, low + e);
            __m512 high_f32x16 = has_high ? _mm512_maskz_loadu_ps(mask, high + e) : _mm512_setzero_ps();
            _mm512_store_si512(pairs + r2 * stride + e, pairs_bf16x32(low_f32x16, high_f32x16));
        }
    }
}

/* transposed [pairs, 64]: the BF16 pairs of x's `rows` rows (≤ 64, row stride x_stride, `width`
 * values) with the rows across; natural [rows, pairs] is scratch. Lanes past `rows` are zero up to
 * the next multiple of 16. */
UFORM_GENOA static void rows_transposed_pairs(const float *x, size_t x_stride, size_t rows, size_t width,
                                              uint32_t *natural, uint32_t *transposed) {
    size_t pairs = (width + 1) / 2;
    for (size_t r = 0; r < rows; ++r) row_pairs(x + r * x_stride, width, natural + r * pairs);
    for (size_t r0 = 0; r0 < rows; r0 += 16)
        for (size_t e0 = 0; e0 < pairs; e0 += 16)
            transpose_16x16_u32(natural + r0 * pairs + e0, pairs, rows - r0, pairs - e0 < 16 ? pairs - e0 : 16,
                                transposed + e0 * block + r0, block);
}

/* One vector of 16 query lanes of Pᵀ and dSᵀ row c: p = 2^(s·scale·log2 e − lse·log2 e), ds = p·(dp − D),
 * both zero past the block's rows. */
UFORM_GENOA static inline void probabilities_f32x16(const float *st, const float *dpt, const float *lse_log2,
                                                    const float *deltas, float scale_log2, __mmask16 rows_mask,
                                                    __m512 *p_f32x16, __m512 *ds_f32x16) {
    __m512 s_f32x16 = _mm512_load_ps(st);
    __m512 p = nn_exp2_f32x16(_mm512_fmsub_ps(s_f32x16, _mm512_set1_ps(scale_log2), _mm512_load_ps(lse_log2)));
    p = _mm512_maskz_mov_ps(rows_mask, p);
    *p_f32x16 = p;
    *ds_f32x16 = _mm512_mul_ps(p, _mm512_sub_ps(_mm512_load_ps(dpt), _mm512_load_ps(deltas)));
}

UFORM_GENOA static void backward_unit_bf16_genoa(const void *unused, const uform__attention_backward_unit_t *unit) {
    (void)unused;
    size_t dh = unit->head_width, length = unit->length, qkv_stride = unit->qkv_stride, out_stride = unit->out_stride;
    size_t pairs = (dh + 1) / 2, stride = (dh + 15) / 16 * 16;
    const float log2e = 1.44269504088896341f, scale = unit->scale, scale_log2 = scale * log2e;

    _Alignas(64) uint32_t q2t[max_pairs * block], g2t[max_pairs * block];       /* [pairs, 64] */
    _Alignas(64) uint32_t g2[block / 2 * max_width];                            /* [rows/2, stride] */
    _Alignas(64) uint32_t k2n[block * max_pairs], v2n[block * max_pairs];       /* [keys, pairs] */
    _Alignas(64) float st[block * block], dpt[block * block];                   /* [keys, 64] */
    _Alignas(64) uint32_t p2t[block * block / 2];                               /* [keys, 32]: rows' pairs */
    _Alignas(64) float dst[block * block];                                      /* [keys, 64]: dSᵀ in F32 */
    _Alignas(64) float dq[block * max_width];                                   /* [rows, stride] */
    _Alignas(64) float lse_log2[block], deltas[block];

    /* Rows of one head are 256-byte pieces 1.5 KB apart (d = 384): across 4 KiB pages, which the
     * hardware prefetchers do not cross, so the unit asks for them ahead (the forward's reason). */
    prefetch_rows(unit->k, length < block ? length : block, dh, qkv_stride, 3);
    prefetch_rows(unit->v, length < block ? length : block, dh, qkv_stride, 3);
    for (size_t q0 = 0; q0 < length; q0 += block) {
        size_t rows = length - q0 < block ? length - q0 : block, row_vectors = (rows + 15) / 16;
        size_t row_pairs_count = (rows + 1) / 2;
        for (size_t r = 0; r < rows; ++r) /* written at the end of this query block */
            for (size_t b = 0; b < dh * sizeof(float); b += 64)
                __builtin_prefetch((char *)(unit->dq + (q0 + r) * qkv_stride) + b, 1, 2);
        rows_transposed_pairs(unit->q + q0 * qkv_stride, qkv_stride, rows, dh, k2n, q2t);
        rows_transposed_pairs(unit->dout + q0 * out_stride, out_stride, rows, dh, k2n, g2t);
        rows_paired(unit->dout + q0 * out_stride, out_stride, rows, dh, stride, g2);
        for (size_t r = 0; r < block; ++r) {
            lse_log2[r] = r < rows ? unit->lse[q0 + r] * log2e : 0.0f;
            deltas[r] = r < rows ? unit->deltas[q0 + r] : 0.0f;
        }
        memset(dq, 0, rows * stride * sizeof(float));

        /* Causal: the key blocks up to the diagonal one (later keys are seen by no row here). */
        size_t keys_read = unit->causal ? q0 + rows : length;
        for (size_t k0 = 0; k0 < keys_read; k0 += block) {
            size_t keys = keys_read - k0 < block ? keys_read - k0 : block;
            const float *k = unit->k + k0 * qkv_stride, *v = unit->v + k0 * qkv_stride;
            /* The first query block that sees key block k0 writes its dK and dV, the later add. */
            int later = q0 > (unit->causal ? k0 : 0);
            if (k0 + block < keys_read) { /* the next key block; dK and dV rows are first written now */
                size_t next = keys_read - k0 - block < block ? keys_read - k0 - block : block;
                prefetch_rows(k + block * qkv_stride, next, dh, qkv_stride, 3);
                prefetch_rows(v + block * qkv_stride, next, dh, qkv_stride, 3);
                if (q0 == 0)
                    for (size_t c = 0; c < next; ++c)
                        for (size_t b = 0; b < dh * sizeof(float); b += 64) {
                            __builtin_prefetch((char *)(unit->dk + (k0 + block + c) * qkv_stride) + b, 1, 2);
                            __builtin_prefetch((char *)(unit->dv + (k0 + block + c) * qkv_stride) + b, 1, 2);
                        }
            } else if (q0 + block < length) { /* the next query block's rows, then its first keys */
                size_t next = length - q0 - block < block ? length - q0 - block : block;
                prefetch_rows(unit->q + (q0 + block) * qkv_stride, next, dh, qkv_stride, 3);
                prefetch_rows(unit->dout + (q0 + block) * out_stride, next, dh, out_stride, 3);
                prefetch_rows(unit->k, length < block ? length : block, dh, qkv_stride, 2);
                prefetch_rows(unit->v, length < block ? length : block, dh, qkv_stride, 2);
            }
            if (q0 == 0 && k0 == 0)
                for (size_t c = 0; c < keys; ++c)
                    for (size_t b = 0; b < dh * sizeof(float); b += 64) {
                        __builtin_prefetch((char *)(unit->dk + c * qkv_stride) + b, 1, 2);
                        __builtin_prefetch((char *)(unit->dv + c * qkv_stride) + b, 1, 2);
                    }
            for (size_t c = 0; c < keys; ++c) {
                row_pairs(k + c * qkv_stride, dh, k2n + c * pairs);
                row_pairs(v + c * qkv_stride, dh, v2n + c * pairs);
            }
            product_genoa(k2n, pairs, 1, q2t, block, pairs, keys, row_vectors * 16, st, block, 0);
            product_genoa(v2n, pairs, 1, g2t, block, pairs, keys, row_vectors * 16, dpt, block, 0);

            /* Pᵀ to its natural BF16 pairs (for dV); dSᵀ stays F32 (for dK and dQ). */
            for (size_t c = 0; c < keys; ++c) {
                __m512 p_f32x16[4], ds_f32x16[4];
#pragma GCC unroll 4
                for (size_t w = 0; w < 4; ++w) p_f32x16[w] = ds_f32x16[w] = _mm512_setzero_ps();
                /* Causal: the query lanes before key k0 + c neither see it nor get gradient from it. */
                size_t hidden = unit->causal && k0 + c > q0 ? k0 + c - q0 : 0;
                for (size_t w = 0; w < row_vectors; ++w) {
                    __mmask16 lanes = nn_tail_mask16(rows > w * 16 ? rows - w * 16 : 0);
                    if (hidden > w * 16) lanes &= hidden >= w * 16 + 16 ? 0 : (__mmask16)(0xFFFFu << (hidden - w * 16));
                    probabilities_f32x16(st + c * block + w * 16, dpt + c * block + w * 16, lse_log2 + w * 16,
                                         deltas + w * 16, scale_log2, lanes, &p_f32x16[w], &ds_f32x16[w]);
                }
                /* Natural pairs: lanes 0..15 of the pair vector are queries 0..31. */
                _mm512_store_si512(p2t + c * (block / 2), (__m512i)_mm512_cvtne2ps_pbh(p_f32x16[1], p_f32x16[0]));
                _mm512_store_si512(p2t + c * (block / 2) + 16, (__m512i)_mm512_cvtne2ps_pbh(p_f32x16[3], p_f32x16[2]));
                for (size_t w = 0; w < row_vectors; ++w) _mm512_store_ps(dst + c * block + w * 16, ds_f32x16[w]);
            }
            /* The first query block that sees the key block writes its dK and dV (`later` 0), the
             * others add to them. */
            product_genoa(p2t, block / 2, 1, g2, stride, row_pairs_count, keys, dh, unit->dv + k0 * qkv_stride,
                          qkv_stride, later);
            product_f32_genoa(dst, block, 1, unit->q + q0 * qkv_stride, qkv_stride, rows, keys, dh,
                              unit->dk + k0 * qkv_stride, qkv_stride, later);
            product_f32_genoa(dst, 1, block, k, qkv_stride, keys, rows, dh, dq, stride, 1);
        }
        __m512 scale_f32x16 = _mm512_set1_ps(scale);
        for (size_t r = 0; r < rows; ++r) {
            float *target = unit->dq + (q0 + r) * qkv_stride;
            for (size_t e = 0; e < dh; e += 16) {
                __mmask16 mask = nn_tail_mask16(dh - e);
                __m512 value_f32x16 = _mm512_mul_ps(_mm512_load_ps(dq + r * stride + e), scale_f32x16);
                if (mask == 0xFFFF) _mm512_storeu_ps(target + e, value_f32x16);
                else _mm512_mask_storeu_ps(target + e, mask, value_f32x16);
            }
        }
    }
    __m512 scale_f32x16 = _mm512_set1_ps(scale);
    for (size_t c = 0; c < length; ++c) {
        float *target = unit->dk + c * qkv_stride;
        for (size_t e = 0; e < dh; e += 16) {
            __mmask16 mask = nn_tail_mask16(dh - e);
            __m512 value_f32x16 = _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, target + e), scale_f32x16);
            if (mask == 0xFFFF) _mm512_storeu_ps(target + e, value_f32x16);
            else _mm512_mask_storeu_ps(target + e, mask, value_f32x16);
        }
    }
}

void uform__nn_attention_backward_bf16_genoa(const uform__attention_shape_t *shape, const float *qkv,
                                             const float *out, const float *lse, const float *dout, float *deltas,
                                             float *dqkv, const uform__parallel_t *parallel) {
    uform__nn_attention_backward_units(backward_unit_bf16_genoa, NULL, shape, qkv, out, lse, dout, deltas, dqkv,
                                       parallel);
}
