/*
 * Exact top-K search over an open index (uform.h, uform_index_search_t).
 *
 * Work: every eligible modality's rows are cut into blocks of BLOCK_ROWS rows (a split that
 * depends on the index alone); a prong takes a run of consecutive blocks and scores each against
 * every query — through the search kernels (kernels/search.h: dot products for F32/F16/BF16/I8
 * rows, Hamming distances for B1) or, for 8 queries or more over float rows, through the GEMM:
 * the block's rows packed once per block as W (the class's register-tile transpose), each group of
 * queries read in place as X, so the scores land [query][row] — and offers each score to its
 * thread's bounded heap for that query, 16 rows at a time against the heap's bar. Heaps keep the best `keep` entries by (score
 * descending, item ascending), a total order, so merging the threads' heaps gives the same answer
 * whatever ran where.
 *
 * B1 keeps `candidates` entries by Hamming distance (score = −distance) and rescores them after
 * the merge, exactly: Σ q·s / √dims with s = ±1 per bit, summed in double. Once a thread's heaps
 * are full, its blocks go through hamming_b1_within, which marks the few rows that can still
 * enter instead of storing a million distances to compare afterwards.
 *
 * One group of queries that fills the GEMM's panels (32 queries on the AVX2 kernels' 16 columns) goes
 * the other way: the queries packed once per search as W, each block read in place as X, the scores
 * [row][query] (offer_block's strided column). There, packing every block cost about as much as the
 * product it fed: 32 queries over 1 M × 256 F32 on intel_haswell took 0.32-0.33 CPU s a search with
 * the block packed, 0.23-0.27 with the queries packed (bench_search_batch, alternating, this Zen 4
 * loaded). The AVX-512 kernels' 64 columns keep the block packed (32 queries would fill half a
 * tile; on amd_genoa the two ways measured the same here).
 *
 * From 256 queries over F32 rows (index_screen.h: BF16 products on GENOA's table, INT8 products on
 * HASWELL's, SKYLAKE's and ICELAKE's), rows are screened instead (screen_or_score): the block rounded
 * or quantized and packed, its rows' norms (and scales) taken, and each group's cheap product
 * compared with the heaps' bars widened by a proven bound on its error; only rows that could still
 * enter are scored exactly by dot_f32 and offered, so every heap entry's score is dot_f32's and
 * equal rows still tie exactly. A thread's first block (heaps not yet full) is scored by dot_f32
 * outright. There the product, not the rows' stream, bounds the search: 1,024 queries over
 * 1 M × 256 F32 on a Zen 5 took 0.70 CPU s per 200,000 rows unscreened, 0.40 screened by BF16
 * (bench_search_batch; the INT8 screen's figures per class are in index_screen.h). The answer is
 * the same as the unscreened path's up to F32 rounding (dot_f32's sums against the GEMM's).
 *
 * Why this orientation (issue 35). The queries as W and the rows as X (as before) left a 64-column
 * tile half empty at 32 queries and wrote the scores [row][query], which the heaps then read one
 * strided column per query; packing the rows instead fills the 6-row tiles with queries and lets
 * the vectorised bar test skip whole runs of rows. Measured (bench_search_batch, 200,000 × 256 F32,
 * top 10, 2 threads on a shared 2-vCPU Xeon): 32 queries 85 → 22 ms, 1,024 queries 1,380 → 384 ms
 * (with the GEMM's fast pack of K-contiguous rows; its old scalar pack made the block packing cost
 * more than the product).
 *
 * The next block's rows are prefetched into L2 while the current block is multiplied (the GEMM's
 * `ahead`, spread over its tiles, on the classes whose tiles take it: SKYLAKE's, which ICELAKE and
 * GENOA share): with few queries the packing of each block, where its rows first come from memory,
 * otherwise stalled on them. 32 queries over 1 M × 256 F32 on amd_genoa, 2 threads of a Zen 5,
 * alternating runs: 99–111 ms without, 79–80 with (one run 103); 64 queries 148–161 → 134–159.
 *
 * Memory (all from the call's arena): the dense query copies in each form the kernels need, per
 * thread one score block [queries, BLOCK_ROWS], one heap of `keep` entries per query, and for F16
 * rows one widened block; for the GEMM, per thread the packed block and the packing scratch.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/outcome.h"
#include "exec/call.h"
#include "index/index.h"
#include "index/index_screen.h"
#include "kernels/gemm.h"
#include "kernels/nn.h"
#include "kernels/search.h"

#define BLOCK_ROWS 1024
/* Float rows go through the GEMM from this many queries on (its 6×64 tiles fill from there). */
#define GEMM_QUERIES 8
_Static_assert(UFORM__SCREEN_QUERIES > UFORM__SEARCH_MAX_QUERIES, "a screened search has more than one group of queries");
/* Prongs per thread and wave: consecutive blocks go together (see search_prong). */
#define PRONGS_PER_THREAD 16
/* Blocks scored between two progress reports (only when a progress handler is set). */
#define BLOCKS_PER_REPORT 64

/* ---- bounded heaps: the root is the worst entry kept ----
 *
 * Entries name a row of their modality's part, not the item: items ascend with rows within a part,
 * so the order by (score descending, item ascending) needs the item map only when entries of two
 * modalities tie, and the merge looks each kept entry's item up once. Looking up the item of every
 * entry offered cost a cache miss each (the map holds 8 bytes per row, out of cache while the rows
 * stream through): about 5% of a B1 search over 1 M rows. */

typedef struct entry_t {
    uint64_t row;
    float score;
    uint32_t modality;
} entry_t;

typedef struct heap_t {
    entry_t *entries;
    size_t size, capacity;
    const uform__index_part_t *parts; /* [4] the index's parts, for the items of tied entries */
} heap_t;

static uint64_t item_of(const uform__index_part_t *parts, const entry_t *entry) {
    return parts[entry->modality].items[entry->row];
}

/* Scores are never NaN here (heap_offer maps NaN to −inf). */
static int better(const uform__index_part_t *parts, const entry_t *a, const entry_t *b) {
    if (a->score != b->score) return a->score > b->score;
    return a->modality == b->modality ? a->row < b->row : item_of(parts, a) < item_of(parts, b);
}

static void sift_down(heap_t *heap, size_t at) {
    for (;;) {
        size_t worst = at, left = 2 * at + 1, right = left + 1;
        if (left < heap->size && better(heap->parts, &heap->entries[worst], &heap->entries[left])) worst = left;
        if (right < heap->size && better(heap->parts, &heap->entries[worst], &heap->entries[right])) worst = right;
        if (worst == at) return;
        entry_t swap = heap->entries[at];
        heap->entries[at] = heap->entries[worst], heap->entries[worst] = swap;
        at = worst;
    }
}

static void heap_offer(heap_t *heap, float score, uint64_t row, uform_modality_t modality) {
    entry_t entry = {row, isnan(score) ? -INFINITY : score, (uint32_t)modality};
    if (heap->size < heap->capacity) {
        size_t at = heap->size++;
        while (at && better(heap->parts, &heap->entries[(at - 1) / 2], &entry)) {
            heap->entries[at] = heap->entries[(at - 1) / 2];
            at = (at - 1) / 2;
        }
        heap->entries[at] = entry;
    } else if (heap->capacity && better(heap->parts, &entry, &heap->entries[0])) {
        heap->entries[0] = entry;
        sift_down(heap, 0);
    }
}

/* The score an entry must beat to enter (−inf while the heap has room). */
static float heap_bar(const heap_t *heap) { return heap->size < heap->capacity ? -INFINITY : heap->entries[0].score; }

/* Hits by score descending, then item ascending: the order of the answer. */
int uform__index_compare_hits(const void *left, const void *right) {
    const uform_index_hit_t *a = left, *b = right;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return a->item < b->item ? -1 : a->item > b->item ? 1 : 0;
}

/* ---- the call ---- */

typedef struct block_t {
    uint32_t modality;
    size_t first, rows;
} block_t;

typedef struct search_t {
    const uform_index_search_t *request;
    uform_index_t index;
    size_t queries, dims, keep, threads;
    const uform__search_kernels_t *kernels;
    const uform__gemm_kernels_t *gemm;
    const uform__nn_kernels_t *nn;
    /* Queries in each form the scalar needs, dense [queries, dims] (B1: [queries, row bytes]). */
    const float *queries_f32;
    const uint16_t *queries_bf16;
    const int8_t *queries_i8;
    const uint8_t *queries_b1;
    int use_gemm;
    int rows_as_x;                /* one group of F32 queries: the block is the product's X, unpacked */
    uform__gemm_packed_t queries_packed; /* with rows_as_x: every query, packed once as the product's W */
    uform__gemm_packed_t *packed; /* [threads] the block being scored, packed as the GEMM's weights */
    void **packed_memory;         /* [threads] packed_bytes each */
    size_t packed_bytes;
    void **gemm_scratch;          /* [threads] */
    size_t gemm_scratch_bytes;
    const block_t *blocks;
    size_t first_block, wave_end; /* the current wave's blocks */
    size_t blocks_per_prong;
    void **scores;                /* [threads] [queries_in_group, BLOCK_ROWS] float / int32 / uint32 */
    float **widened;              /* [threads] [BLOCK_ROWS, dims] F16 rows as F32 */
    heap_t *heaps;                /* [threads][queries] */
    uform__screen_t screen;       /* F32 rows screened by BF16 or INT8 products (index_screen.h); kind NONE: not */
    uform_status_t *failures;     /* [threads] a GEMM refusal (never expected) */
} search_t;

/* The score of an I8 dot product (uform.h: exact, then rounded once to F32). */
static float i8_score(int64_t dot) { return (float)((double)dot / (127.0 * 127.0)); }

/* The smallest dot product whose score is not below `bar` (scores grow with the dot product). */
static int64_t i8_threshold(float bar) {
    if (bar == -INFINITY) return INT64_MIN;
    int64_t dot = (int64_t)floor((double)bar * 127.0 * 127.0) - 2;
    while (i8_score(dot) < bar) ++dot;
    return dot;
}

/* Offers one group's scores of one block to the thread's heaps. `scores` is [group][BLOCK_ROWS]
 * (kernels: F32 scores, I8 dot products or B1 distances) or [rows][group] (`transposed`: the
 * GEMM's F32 scores). Most rows fall below the heap's bar: they are skipped 16 at a time by a
 * comparison in the score's own integer or float form (a loop the compiler vectorises), and only
 * a group holding a candidate goes row by row. */
static void offer_block(search_t *search, size_t thread, const block_t *block, size_t group_first, size_t group,
                        const void *scores, int transposed) {
    const uint64_t first_row = block->first;
    const uform_modality_t modality = (uform_modality_t)block->modality;
    heap_t *heaps = search->heaps + thread * search->queries;
    const uform_scalar_kind_t scalar = search->index->scalar;
    const size_t rows = block->rows;
    /* The quick test reads 16 entries even past `rows` (stale ones at worst send a group down the
     * exact path): BLOCK_ROWS is a multiple of 16, so it never leaves the query's score row. */
    for (size_t j = 0; j < group; ++j) {
        heap_t *heap = &heaps[group_first + j];
        if (transposed) { /* the GEMM's [rows][group] layout: a strided column */
            const float *column = (const float *)scores + j;
            float bar = heap_bar(heap);
            for (size_t r = 0; r < rows; ++r)
                if (column[r * group] >= bar) heap_offer(heap, column[r * group], first_row + r, modality), bar = heap_bar(heap);
            continue;
        }
        for (size_t first = 0; first < rows; first += 16) {
            size_t count = rows - first < 16 ? rows - first : 16;
            int any = 0;
            if (scalar == UFORM_SCALAR_I8) {
                const int32_t *dots = (const int32_t *)scores + j * BLOCK_ROWS + first;
                const int64_t threshold = i8_threshold(heap_bar(heap));
                for (size_t k = 0; k < 16; ++k) any |= dots[k] >= threshold;
                if (any)
                    for (size_t k = 0; k < count; ++k)
                        if (dots[k] >= i8_threshold(heap_bar(heap)))
                            heap_offer(heap, i8_score(dots[k]), first_row + first + k, modality);
            } else if (scalar == UFORM_SCALAR_B1) {
                /* score = −distance, exact: below the bar means a larger distance than −bar. */
                const uint32_t *distances = (const uint32_t *)scores + j * BLOCK_ROWS + first;
                const float bar = heap_bar(heap);
                const uint32_t limit = bar == -INFINITY ? UINT32_MAX : (uint32_t)(-bar);
                for (size_t k = 0; k < 16; ++k) any |= distances[k] <= limit;
                if (any)
                    for (size_t k = 0; k < count; ++k)
                        if (-(float)distances[k] >= heap_bar(heap))
                            heap_offer(heap, -(float)distances[k], first_row + first + k, modality);
            } else {
                const float *values = (const float *)scores + j * BLOCK_ROWS + first;
                const float bar = heap_bar(heap);
                for (size_t k = 0; k < 16; ++k) any |= values[k] >= bar;
                if (any)
                    for (size_t k = 0; k < count; ++k)
                        if (values[k] >= heap_bar(heap)) heap_offer(heap, values[k], first_row + first + k, modality);
            }
        }
    }
}

/* The queries of the group starting at `group_first`: UFORM__SEARCH_MAX_QUERIES, fewer in the last. */
static size_t group_size(const search_t *search, size_t group_first) {
    const size_t left = search->queries - group_first;
    return left < UFORM__SEARCH_MAX_QUERIES ? left : UFORM__SEARCH_MAX_QUERIES;
}

/* The screen of F32 rows (index_screen.h): `approx` [group][BLOCK_ROWS] holds the block's BF16 or
 * INT8 products. A row goes on only where s' + δ does not fall below the query's bar, 16 rows at a
 * time as offer_block tests; there dot_f32 scores it exactly (the score every heap entry of a
 * screened search comes from, so equal rows tie wherever they are) and it is offered. Needs every
 * heap of the group full (the bar finite): screen_or_score scores a block exactly until then. */
/* s' + δ of row r (index_screen.h): the most the row's exact score can be. */
static inline float screen_reach(const float *values, const float *norms, const float *spreads, size_t r, float reach,
                                 float spread, float slack) {
    return values[r] + norms[r] * reach + spreads[r] * spread + slack;
}

static void screen_block(search_t *search, size_t thread, const block_t *block, size_t group_first, size_t group,
                         const float *approx, const float *f32_rows) {
    heap_t *heaps = search->heaps + thread * search->queries + group_first;
    const uform__screen_t *screen = &search->screen;
    const float *norms = screen->norms[thread], *spreads = screen->spreads[thread];
    const size_t rows = block->rows, dims = search->dims;
    for (size_t j = 0; j < group; ++j) {
        heap_t *heap = &heaps[j];
        const float reach = screen->reach[group_first + j], spread = screen->spread[group_first + j],
                    slack = screen->slack[group_first + j];
        const float *query = search->queries_f32 + (group_first + j) * dims, *values = approx + j * BLOCK_ROWS;
        for (size_t first = 0; first < rows; first += 16) {
            size_t count = rows - first < 16 ? rows - first : 16;
            const float bar = heap_bar(heap);
            int any = 0;
            for (size_t k = 0; k < 16; ++k)
                any |= !(screen_reach(values, norms, spreads, first + k, reach, spread, slack) < bar);
            if (!any) continue;
            for (size_t k = 0; k < count; ++k) {
                const size_t r = first + k;
                if (screen_reach(values, norms, spreads, r, reach, spread, slack) < heap_bar(heap)) continue;
                float exact;
                search->kernels->dot_f32(1, dims, f32_rows + r * dims, dims, 1, query, dims, &exact, 1);
                if (exact >= heap_bar(heap)) heap_offer(heap, exact, block->first + r, (uform_modality_t)block->modality);
            }
        }
    }
}

/* B1 once every heap of the group is full: the kernel marks the rows within each heap's worst
 * distance (the bar only rises while the block is offered, so the marks are a superset of the rows
 * that can enter), and only those get their distance computed and offered. Answers 0, doing
 * nothing, while some heap still has room (then every row enters: the caller scores them all).
 * `scratch` holds [group][BLOCK_ROWS / 64] words of marks. */
static int offer_near_b1(search_t *search, size_t thread, const block_t *block, size_t group_first, size_t group,
                         const unsigned char *rows, void *scratch) {
    heap_t *heaps = search->heaps + thread * search->queries + group_first;
    uint32_t limits[UFORM__SEARCH_MAX_QUERIES];
    for (size_t j = 0; j < group; ++j) {
        const float bar = heap_bar(&heaps[j]);
        if (bar == -INFINITY) return 0;
        limits[j] = (uint32_t)-bar; /* score = −distance, exact in F32 */
    }
    const size_t bytes = search->index->row_bytes, words = (block->rows + 63) / 64;
    const uint8_t *queries = search->queries_b1 + group_first * bytes;
    uint64_t *near = scratch;
    search->kernels->hamming_b1_within(block->rows, bytes, rows, bytes, group, queries, bytes, limits, near, BLOCK_ROWS / 64);
    for (size_t j = 0; j < group; ++j)
        for (size_t word = 0; word < words; ++word)
            for (uint64_t bits = near[j * (BLOCK_ROWS / 64) + word]; bits; bits &= bits - 1) {
                const size_t r = word * 64 + (size_t)__builtin_ctzll(bits);
                uint32_t distance;
                search->kernels->hamming_b1(1, bytes, rows + r * bytes, bytes, 1, queries + j * bytes, bytes, &distance, 1);
                if (-(float)distance >= heap_bar(&heaps[j]))
                    heap_offer(&heaps[j], -(float)distance, block->first + r, (uform_modality_t)block->modality);
            }
    return 1;
}

/* A block of F32 rows under the screen: the block rounded or quantized and packed once, its row norms
 * (and scales) taken, then per group of queries the screen's product and screen_block. Until every
 * heap of this thread is full (its first block or so), the block is scored exactly by dot_f32 instead
 * (a bar of −∞ would let every row through, one exact score at a time). */
static void screen_or_score(search_t *search, size_t thread, const block_t *block, const float *f32_rows) {
    const size_t dims = search->dims, rows = block->rows;
    const heap_t *heaps = search->heaps + thread * search->queries;
    int full = 1;
    for (size_t j = 0; j < search->queries && full; ++j) full = heaps[j].size == heaps[j].capacity;
    float *scores = search->scores[thread];
    for (size_t group_first = 0; !full && group_first < search->queries; group_first += UFORM__SEARCH_MAX_QUERIES) {
        const size_t group = group_size(search, group_first);
        search->kernels->dot_f32(rows, dims, f32_rows, dims, group, search->queries_f32 + group_first * dims, dims, scores,
                                 BLOCK_ROWS);
        offer_block(search, thread, block, group_first, group, scores, 0);
    }
    if (!full) return;
    uform_status_t status = uform__screen_block(&search->screen, thread, rows, f32_rows);
    for (size_t group_first = 0; status == UFORM_OK && group_first < search->queries; group_first += UFORM__SEARCH_MAX_QUERIES) {
        const size_t group = group_size(search, group_first);
        status = uform__screen_product(&search->screen, thread, rows, group_first, group, scores, BLOCK_ROWS);
        if (status == UFORM_OK) screen_block(search, thread, block, group_first, group, scores, f32_rows);
    }
    if (status != UFORM_OK) search->failures[thread] = status;
}

/* Scores `block` against every query; `next` (or NULL) is the block this thread scores after it. */
static void score_block(search_t *search, size_t thread, const block_t *block, const block_t *next) {
    const uform__index_part_t *part = &search->index->parts[block->modality];
    const size_t dims = search->dims, row_bytes = search->index->row_bytes;
    const unsigned char *rows = part->data + block->first * row_bytes;
    void *scores = search->scores[thread];
    uform_scalar_kind_t scalar = search->index->scalar;
    const float *f32_rows = (const float *)rows;
    if (scalar == UFORM_SCALAR_F16) { /* widened once per block, shared by every query group */
        search->nn->f16_to_f32(block->rows * dims, (const uint16_t *)rows, search->widened[thread]);
        f32_rows = search->widened[thread];
    }
    if (search->rows_as_x) {
        /* scores [rows, queries] = block [rows, dims] · queriesᵀ, the queries packed once per search:
         * with a single group of queries, packing the block would cost about as much as the product
         * it feeds (the AVX2 kernels' transposing pack above all), and the rows stream unpacked. */
        uform__gemm_forward_t args;
        memset(&args, 0, sizeof args);
        args.m = block->rows, args.n = search->queries, args.k = dims;
        args.x_dtype = UFORM__GEMM_F32, args.x = f32_rows, args.ldx = dims;
        args.w_dtype = UFORM__GEMM_F32, args.ldw = dims, args.packed = &search->queries_packed;
        args.y = scores, args.ldy = search->queries;
        args.scratch = search->gemm_scratch[thread], args.scratch_capacity = search->gemm_scratch_bytes;
        uform_status_t status = search->gemm->forward_f32(&args, NULL, NULL);
        if (status != UFORM_OK) search->failures[thread] = status;
        else offer_block(search, thread, block, 0, search->queries, scores, 1);
        return;
    }
    if (search->screen.kind != UFORM__SCREEN_NONE) {
        screen_or_score(search, thread, block, f32_rows);
        return;
    }
    if (search->use_gemm) { /* the block as the product's W, packed once for every group of queries */
        const int bf16 = scalar == UFORM_SCALAR_BF16;
        uform_status_t status =
            bf16 ? search->gemm->pack_bf16(rows, dims, UFORM__GEMM_BF16, block->rows, dims, search->packed_memory[thread],
                                           search->packed_bytes, &search->packed[thread], NULL)
                 : search->gemm->pack_f32(f32_rows, dims, UFORM__GEMM_F32, block->rows, dims, search->packed_memory[thread],
                                          search->packed_bytes, &search->packed[thread], NULL);
        if (status != UFORM_OK) {
            search->failures[thread] = status;
            return;
        }
    }
    for (size_t group_first = 0; group_first < search->queries; group_first += UFORM__SEARCH_MAX_QUERIES) {
        const size_t group = group_size(search, group_first);
        if (search->use_gemm) {
            /* scores [group, rows] = queries [group, dims] · blockᵀ, the block packed once above as the
             * product's W: the queries fill the 6-row tiles, the scores land row by query. */
            uform__gemm_forward_t args;
            memset(&args, 0, sizeof args);
            args.m = group, args.n = block->rows, args.k = dims;
            args.x_dtype = scalar == UFORM_SCALAR_BF16 ? UFORM__GEMM_BF16 : UFORM__GEMM_F32;
            args.x = scalar == UFORM_SCALAR_BF16 ? (const void *)(search->queries_bf16 + group_first * dims)
                                                 : (const void *)(search->queries_f32 + group_first * dims);
            args.ldx = dims, args.w_dtype = args.x_dtype, args.ldw = dims;
            args.packed = &search->packed[thread];
            args.y = scores, args.ldy = BLOCK_ROWS;
            args.scratch = search->gemm_scratch[thread], args.scratch_capacity = search->gemm_scratch_bytes;
            if (next && group_first == 0) { /* the next block's rows come in while this one is multiplied */
                args.ahead = search->index->parts[next->modality].data + next->first * row_bytes;
                args.ahead_bytes = next->rows * row_bytes;
            }
            uform__gemm_forward_fn forward = scalar == UFORM_SCALAR_BF16 ? search->gemm->forward_bf16 : search->gemm->forward_f32;
            uform_status_t status = forward(&args, NULL, NULL);
            if (status != UFORM_OK) {
                search->failures[thread] = status;
                return;
            }
            offer_block(search, thread, block, group_first, group, scores, 0);
            continue;
        }
        switch (scalar) {
        case UFORM_SCALAR_F32:
        case UFORM_SCALAR_F16:
            search->kernels->dot_f32(block->rows, dims, f32_rows, dims, group, search->queries_f32 + group_first * dims,
                                     dims, scores, BLOCK_ROWS);
            break;
        case UFORM_SCALAR_BF16:
            search->kernels->dot_bf16(block->rows, dims, (const uint16_t *)rows, dims, group,
                                      search->queries_bf16 + group_first * dims, dims, scores, BLOCK_ROWS);
            break;
        case UFORM_SCALAR_I8:
            search->kernels->dot_i8(block->rows, dims, (const int8_t *)rows, dims, group,
                                    search->queries_i8 + group_first * dims, dims, scores, BLOCK_ROWS);
            break;
        default:
            if (offer_near_b1(search, thread, block, group_first, group, rows, scores)) continue;
            search->kernels->hamming_b1(block->rows, row_bytes, rows, row_bytes, group,
                                        search->queries_b1 + group_first * row_bytes, row_bytes, scores, BLOCK_ROWS);
            break;
        }
        offer_block(search, thread, block, group_first, group, scores, 0);
    }
}

/* A prong scores `blocks_per_prong` consecutive blocks of the wave: each thread then streams a few
 * long runs of rows, which the hardware prefetchers follow, and takes the shared prong counter a
 * few dozen times per call instead of once per 1,024 rows (B1 blocks take ~1 µs, the counter's
 * cache line moving between cores a good part of that). */
static void search_prong(void *context, size_t thread, size_t prong) {
    search_t *search = context;
    const size_t first = search->first_block + prong * search->blocks_per_prong;
    const size_t end = first + search->blocks_per_prong < search->wave_end ? first + search->blocks_per_prong : search->wave_end;
    for (size_t b = first; b < end; ++b) score_block(search, thread, &search->blocks[b], b + 1 < end ? &search->blocks[b + 1] : NULL);
}

/* Every thread's entries for query j, best first, into `merged`; answers how many. */
static size_t merge(const search_t *search, size_t j, uform_index_hit_t *merged) {
    size_t count = 0;
    for (size_t t = 0; t < search->threads; ++t) {
        const heap_t *heap = &search->heaps[t * search->queries + j];
        for (size_t i = 0; i < heap->size; ++i, ++count) {
            const entry_t *entry = &heap->entries[i];
            merged[count] = (uform_index_hit_t){item_of(heap->parts, entry), entry->score, (uform_modality_t)entry->modality};
        }
    }
    qsort(merged, count, sizeof *merged, uform__index_compare_hits);
    return count;
}

/* B1's second stage: hits[i].score = Σ_c q[c]·s[c] / √dims with s = ±1 by the candidate's bits,
 * summed in double in column order. Four candidates go side by side in four accumulators (each
 * adds the same terms in the same order as alone: the same scores), and each term is q[c] times
 * ±1.0 (exact) rather than a choice by the bit, whose branch the random bits mispredicted half of
 * the time (merge and rescoring of 40 candidates of 256 dimensions: 15 → 13 µs). */
static void rescore_b1(const search_t *search, uform_index_hit_t *hits, size_t count, const float *query) {
    uform_index_t index = search->index;
    const double scale = sqrt((double)search->dims);
    for (size_t first = 0; first < count; first += 4) {
        const size_t lanes = count - first < 4 ? count - first : 4;
        const unsigned char *rows[4];
        for (size_t k = 0; k < 4; ++k) { /* unused lanes repeat the first candidate */
            const uform_index_hit_t *hit = &hits[first + (k < lanes ? k : 0)];
            rows[k] = index->parts[hit->modality].data + index->rows_of[hit->item] * index->row_bytes;
        }
        double sum0 = 0, sum1 = 0, sum2 = 0, sum3 = 0;
        for (size_t c = 0; c < search->dims; ++c) {
            const size_t byte = c / 8;
            const unsigned shift = 7 - (unsigned)(c % 8);
            const double value = query[c];
            sum0 += (double)(2 * (rows[0][byte] >> shift & 1) - 1) * value;
            sum1 += (double)(2 * (rows[1][byte] >> shift & 1) - 1) * value;
            sum2 += (double)(2 * (rows[2][byte] >> shift & 1) - 1) * value;
            sum3 += (double)(2 * (rows[3][byte] >> shift & 1) - 1) * value;
        }
        const double sums[4] = {sum0, sum1, sum2, sum3};
        for (size_t k = 0; k < lanes; ++k) hits[first + k].score = (float)(sums[k] / scale);
    }
}

static uform_status_t search_run(void *pointer, uform__call_context_t *context) {
    uform_index_search_t *request = pointer;
    uform_index_t index = request->index;
    uform_arena_t arena = context->arena;
    search_t search;
    memset(&search, 0, sizeof search);
    search.request = request, search.index = index;
    search.queries = request->queries_count, search.dims = index->dims;
    search.threads = uform__parallel_threads(context->parallel);
    search.kernels = uform__search_kernels(context->cpu_class);
    search.gemm = uform__gemm_kernels(context->cpu_class);
    search.nn = uform__nn_kernels(context->cpu_class);
    unsigned modalities = request->modalities ? request->modalities : 0xFu;
    size_t eligible = 0, block_count = 0;
    for (int m = 0; m < 4; ++m)
        if (modalities & (1u << m)) {
            eligible += index->parts[m].rows;
            block_count += (index->parts[m].rows + BLOCK_ROWS - 1) / BLOCK_ROWS;
        }
    size_t top = request->top < eligible ? request->top : eligible;
    int binary = index->scalar == UFORM_SCALAR_B1;
    size_t candidates = request->candidates ? request->candidates : 4 * request->top;
    if (candidates < request->top) candidates = request->top;
    search.keep = binary ? (candidates < eligible ? candidates : eligible) : top;
    search.use_gemm = search.queries >= GEMM_QUERIES && index->scalar != UFORM_SCALAR_I8 && !binary;
    /* The screen: F32 rows, many queries, a class with a faster product than F32's (index_screen.h).
     * So many queries never take rows_as_x (it needs one group of them). */
    const uform__screen_kind_t screen = uform__screen_choose(context->cpu_class, index->scalar, search.queries, index->dims);

    int failed = 0;
    size_t q = search.queries, dims = search.dims;
    float *queries_f32 = uform__arena_take(arena, q * dims * sizeof(float), &failed);
    uform_index_hit_t *hits = uform__arena_take(arena, q * (top ? top : 1) * sizeof *hits, &failed);
    block_t *blocks = uform__arena_take(arena, block_count * sizeof *blocks, &failed);
    search.scores = uform__arena_take(arena, search.threads * sizeof(void *), &failed);
    search.widened = uform__arena_take(arena, search.threads * sizeof(float *), &failed);
    search.heaps = uform__arena_take(arena, search.threads * q * sizeof(heap_t), &failed);
    search.failures = uform__arena_take(arena, search.threads * sizeof(uform_status_t), &failed);
    search.gemm_scratch = uform__arena_take(arena, search.threads * sizeof(void *), &failed);
    uform_index_hit_t *merged =
        uform__arena_take(arena, search.threads * (search.keep ? search.keep : 1) * sizeof *merged, &failed);
    if (failed) return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function, "cannot allocate search state");
    size_t group = q < UFORM__SEARCH_MAX_QUERIES ? q : UFORM__SEARCH_MAX_QUERIES, widest = 0;
    for (int m = 0; m < 4; ++m)
        if ((modalities & (1u << m)) && index->parts[m].rows > widest) widest = index->parts[m].rows;
    if (widest > BLOCK_ROWS) widest = BLOCK_ROWS; /* a block never holds more rows than its part */
    for (size_t t = 0; t < search.threads && !failed; ++t) {
        search.scores[t] = uform__arena_take(arena, group * BLOCK_ROWS * sizeof(float), &failed);
        search.widened[t] =
            index->scalar == UFORM_SCALAR_F16 ? uform__arena_take(arena, widest * dims * sizeof(float), &failed) : NULL;
        search.failures[t] = UFORM_OK;
        for (size_t j = 0; j < q && !failed; ++j) {
            heap_t *heap = &search.heaps[t * q + j];
            heap->size = 0, heap->capacity = search.keep, heap->parts = index->parts;
            heap->entries = uform__arena_take(arena, search.keep * sizeof(entry_t), &failed);
        }
    }
    if (failed)
        return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function,
                           "cannot allocate %zu heaps of %zu entries and score blocks for %zu threads", q, search.keep,
                           search.threads);
    /* Queries: dense F32, then the forms the scalar's kernels read. */
    for (size_t j = 0; j < q; ++j) {
        size_t stride = request->queries_stride ? request->queries_stride : dims * sizeof(float);
        memcpy(queries_f32 + j * dims, (const unsigned char *)request->queries + j * stride, dims * sizeof(float));
    }
    search.queries_f32 = queries_f32;
    if (index->scalar == UFORM_SCALAR_BF16) {
        uint16_t *converted = uform__arena_take(arena, q * dims * sizeof(uint16_t), &failed);
        if (converted) search.nn->f32_to_bf16(q * dims, queries_f32, converted);
        search.queries_bf16 = converted;
    } else if (index->scalar == UFORM_SCALAR_I8) {
        int8_t *converted = uform__arena_take(arena, q * dims, &failed);
        if (converted) search.nn->f32_to_i8(q * dims, queries_f32, converted);
        search.queries_i8 = converted;
    } else if (binary) {
        uint8_t *converted = uform__arena_take(arena, q * index->row_bytes, &failed);
        for (size_t j = 0; converted && j < q; ++j)
            search.nn->f32_to_b1(dims, queries_f32 + j * dims, converted + j * index->row_bytes);
        search.queries_b1 = converted;
    }
    search.rows_as_x = search.use_gemm && q <= UFORM__SEARCH_MAX_QUERIES && index->scalar != UFORM_SCALAR_BF16;
    if (search.rows_as_x) {
        size_t bytes = search.gemm->packed_size_f32(q, dims, UFORM__GEMM_F32);
        void *memory = uform__arena_take(arena, bytes, &failed);
        search.gemm_scratch_bytes = search.gemm->scratch_bytes(1);
        for (size_t t = 0; t < search.threads && !failed; ++t)
            search.gemm_scratch[t] = uform__arena_take(arena, search.gemm_scratch_bytes, &failed);
        if (!failed &&
            search.gemm->pack_f32(queries_f32, dims, UFORM__GEMM_F32, q, dims, memory, bytes, &search.queries_packed, NULL) !=
                UFORM_OK)
            return uform__fail(context->outcome, UFORM_INTERNAL, context->function, "the GEMM refused to pack %zu queries", q);
        /* Only on panels of 16 columns or fewer (the AVX2 and serial kernels: where it was measured)
         * that the queries fill to at least 3/4; the AVX-512 kernels' 64 columns keep the block packed. */
        size_t nr = search.queries_packed.nr ? search.queries_packed.nr : 1, columns = (q + nr - 1) / nr * nr;
        search.rows_as_x = !failed && nr <= 16 && 4 * q >= 3 * columns;
    }
    if (screen != UFORM__SCREEN_NONE && !failed &&
        uform__screen_setup(&search.screen, screen, context->cpu_class, arena, queries_f32, q, dims, search.threads, widest,
                            BLOCK_ROWS) != UFORM_OK)
        failed = 1;
    if (!search.rows_as_x && search.use_gemm && screen == UFORM__SCREEN_NONE) {
        int bf16 = index->scalar == UFORM_SCALAR_BF16;
        search.packed_bytes = bf16 ? search.gemm->packed_size_bf16(widest, dims, UFORM__GEMM_BF16)
                                   : search.gemm->packed_size_f32(widest, dims, UFORM__GEMM_F32);
        search.packed = uform__arena_take(arena, search.threads * sizeof *search.packed, &failed);
        search.packed_memory = uform__arena_take(arena, search.threads * sizeof(void *), &failed);
        search.gemm_scratch_bytes = search.gemm->scratch_bytes(1);
        for (size_t t = 0; t < search.threads && !failed; ++t) {
            search.packed_memory[t] = uform__arena_take(arena, search.packed_bytes, &failed);
            search.gemm_scratch[t] = uform__arena_take(arena, search.gemm_scratch_bytes, &failed);
        }
    }
    if (failed) return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function, "cannot allocate the queries");

    size_t next = 0;
    for (int m = 0; m < 4; ++m) {
        if (!(modalities & (1u << m))) continue;
        for (size_t first = 0; first < index->parts[m].rows; first += BLOCK_ROWS) {
            size_t rows = index->parts[m].rows - first < BLOCK_ROWS ? index->parts[m].rows - first : BLOCK_ROWS;
            blocks[next++] = (block_t){(uint32_t)m, first, rows};
        }
    }
    search.blocks = blocks;
    size_t wave = request->progress.callback ? BLOCKS_PER_REPORT : (block_count ? block_count : 1);
    /* PRONGS_PER_THREAD prongs per thread and wave: enough to balance threads that start late. */
    search.blocks_per_prong = wave / (search.threads * PRONGS_PER_THREAD);
    if (search.blocks_per_prong == 0) search.blocks_per_prong = 1;
    uform__progress_begin(&context->progress, context->progress_options, block_count);
    for (search.first_block = 0; search.first_block < block_count; search.first_block += wave) {
        size_t count = block_count - search.first_block < wave ? block_count - search.first_block : wave;
        search.wave_end = search.first_block + count;
        size_t prongs = (count + search.blocks_per_prong - 1) / search.blocks_per_prong;
        if (search.keep) uform__parallel_for(context->parallel, prongs, search_prong, &search);
        for (size_t t = 0; t < search.threads; ++t)
            if (search.failures[t] != UFORM_OK)
                return uform__fail(context->outcome, UFORM_INTERNAL, context->function,
                                   "the GEMM refused a %d-row score block (status %s)", BLOCK_ROWS,
                                   uform_status_name(search.failures[t]));
        if (uform__progress_advance(&context->progress, search.first_block + count) == UFORM_CANCEL &&
            search.first_block + count < block_count)
            return uform__fail(context->outcome, UFORM_CANCELLED, context->function,
                               "cancelled by the progress handler after %zu of %zu blocks", search.first_block + count,
                               block_count);
    }
    if (block_count == 0) uform__progress_advance(&context->progress, 0);

    for (size_t j = 0; j < q; ++j) {
        size_t count = merge(&search, j, merged);
        if (binary) {
            if (count > search.keep) count = search.keep; /* the candidates: nearest by Hamming distance */
            rescore_b1(&search, merged, count, queries_f32 + j * dims);
            qsort(merged, count, sizeof *merged, uform__index_compare_hits);
        }
        memcpy(hits + j * top, merged, top * sizeof *hits);
    }
    request->hits = hits;
    request->hits_per_query = top;
    return UFORM_OK;
}

uform_status_t uform__index_check_queries(uform_arena_t arena, const float *queries, size_t count, size_t columns,
                                          size_t stride, size_t top, unsigned modalities, size_t dims,
                                          uform_outcome_t *outcome, const char *function) {
    if (!arena)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "arena is NULL: hits land in an arena (uform_arena_for_executor)");
    if (!queries && count) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "queries is NULL");
    if (top == 0) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "top is 0: ask for at least 1 hit");
    if (columns != dims)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "queries have %zu columns, the index holds %zu (encode queries with config.dimensions = %zu)",
                           columns, dims, dims);
    if (stride && stride < dims * sizeof(float))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "queries_stride %zu is shorter than a row (%zu bytes)",
                           stride, dims * sizeof(float));
    if (modalities & ~0xFu)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "modalities 0x%x has unknown bits (known: 0xf)",
                           modalities);
    return UFORM_OK;
}

UFORM_API uform_status_t uform_index_search(uform_index_search_t *request) {
    if (!request) return UFORM_INVALID_ARGUMENT;
    request->hits = NULL;
    request->hits_per_query = 0;
    uform_outcome_t *outcome = &request->outcome;
    const char *function = __func__;
    uform_index_t index = request->index;
    if (!index) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "index is NULL");
    uform_status_t status = uform__index_check_queries(request->arena, request->queries, request->queries_count,
                                                       request->queries_columns, request->queries_stride, request->top,
                                                       request->modalities, index->dims, outcome, function);
    if (status != UFORM_OK) return status;
    uform__call_t call = {search_run, request, outcome, request->completion, request->arena, &request->progress, function};
    return uform__executor_call(request->executor, &call);
}
