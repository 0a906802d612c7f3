/*
 * Approximate search (uform.h, uform_index_ann_search): FAISS proposes `fetch` candidates per
 * query — top, or max(rerank, top) when reranking — through per-call SearchParameters (nprobe, ef,
 * and an IDSelector over the items' modality bytes when a filter excludes some), in batches so
 * progress can be reported and a cancel honoured — and in one call when the request has no progress
 * handler (nothing to report, nothing can cancel it), as Python's FAISS is called. Every FAISS call
 * is one or more OpenMP regions whose threads meet at a barrier, and on two loaded cores each costs
 * a wake-up and a scheduling delay: 1,000 IVF-PQ queries at 1 M rows took 3–6 times the wall time
 * of one call when sent as 64-query calls (bench_ann, bench/README.md). With a handler, the first
 * batch is FIRST_BATCH queries and each next one is as many as the last call's rate answers in
 * BATCH_SECONDS (FIRST_BATCH to MOST_BATCH), a tail under half a batch joining it: two or three
 * calls for 1,000 queries where doubling from 64 while under 50 ms made five to sixteen (a slow
 * first call stopped the doubling), while a cancel waits for one batch of about BATCH_SECONDS.
 * Rescoring (uform__ann_rerank): asked for by the request's rerank, or by default where the
 * structure's codes approximate its rows (DEFAULT_RERANK below).
 * With rerank, each candidate is rescored from the index's stored row by the exact search's own
 * kernels (kernels/search.h): the same code path and the same sums as uform_index_search's matrix-vector kernel, so scores equal
 * exact search's bit for bit when it runs that path (fewer than 8 queries). The best `top` of the
 * candidates are then kept in the order exact search answers in: score descending, item ascending.
 *
 * Memory (the call's arena): dense queries [q, dims], FAISS's distances and labels [chunk, fetch],
 * the hits [q, hits_per_query], and for rerank the query in the scalar's form and a widened row. The
 * candidates of at most `chunk` queries are held at once (CANDIDATE_BYTES): each FAISS call's
 * candidates are rescored and reduced to the hits before the next call, so a batch of many queries
 * with many candidates each needs no more scratch than one chunk.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/arena.h"
#include "core/outcome.h"
#include "exec/call.h"
#include "index/ann.h"
#include "kernels/nn.h"
#include "kernels/search.h"

/* Queries per call into FAISS (and per progress report): the first call's, the most, and the
 * time each later call is sized to take at the rate the call before it measured. */
#define FIRST_BATCH 64
#define MOST_BATCH 8192
#define BATCH_SECONDS 0.2
/* The most bytes of FAISS candidates (a float distance and an int64 label each) held at once. */
#define CANDIDATE_BYTES ((size_t)64 << 20)

/* The default rescoring, for structures whose codes approximate the rows (code_bytes < 4·dims:
 * PQ, SQ, a PCA in front …): R = max(RERANK_PER_TOP · top, min(DEFAULT_RERANK, visited / 4))
 * candidates, `visited` the codes a query scans (count · nprobe / lists for an IVF, count for
 * others). Full-row structures (flat lists, an HNSW over F32 rows) score exactly already and are
 * not rescored.
 *
 * Measured (docs/indexes.md, "Rescoring by default"; bench/ann_rerank_curve.py): the default recipe
 * above 1 M items, IVF<n>,PQ<dims/4>np at the default nprobe, answers recall@10 0.54 at 1 M × 64 and
 * 0.42 at 10 M × 64 on FAISS's scores alone; with R rescored, 0.992 / 0.925 at R = 100, 0.999 / 0.980
 * at 200, 1.000 / 0.997 at 400 and 1.000 / 1.000 at 1,000: the needed R grows with the corpus, and
 * DEFAULT_RERANK keeps a margin past 10 M rows. A query cannot gain from more candidates than it
 * scans, while each costs a row read, a dot product and FAISS's heap: at 1 M × 64 and nprobe 4 (977
 * codes scanned) R = 1,000 took 0.39 s for 1,000 queries and R = 200 0.18 s in the same run, for
 * recall 0.943 both (0.936 at R = 100). */
#define DEFAULT_RERANK 1000
#define RERANK_PER_TOP 10

size_t uform__ann_rerank(const uform__faiss_facts_t *facts, size_t rerank, size_t top, size_t nprobe) {
    if (rerank == UFORM_INDEX_ANN_RERANK_NONE) return 0;
    if (rerank == 0) {
        if (facts->code_bytes >= 4 * facts->dimensions) return 0;
        double visited = facts->lists ? (double)facts->count * (double)nprobe / (double)facts->lists : (double)facts->count;
        double wanted = visited / 4 < DEFAULT_RERANK ? visited / 4 : DEFAULT_RERANK;
        if ((double)top * RERANK_PER_TOP > wanted) wanted = (double)top * RERANK_PER_TOP;
        rerank = wanted < (double)(SIZE_MAX / 2) ? (size_t)wanted : SIZE_MAX / 2; /* FAISS gets at most the items */
    }
    return rerank > top ? rerank : top;
}

static double seconds_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/* Rescoring one query against stored rows, exactly as exact search scores them. */
typedef struct rescorer_t {
    uform_index_t index;
    const uform__search_kernels_t *kernels;
    const uform__nn_kernels_t *nn;
    uint16_t *query_bf16; /* [dims] for BF16 rows */
    int8_t *query_i8;     /* [dims] for I8 rows */
    float *widened;       /* [dims] for F16 rows */
} rescorer_t;

static void rescorer_query(rescorer_t *rescorer, const float *query) {
    size_t dims = rescorer->index->dims;
    if (rescorer->index->scalar == UFORM_SCALAR_BF16) rescorer->nn->f32_to_bf16(dims, query, rescorer->query_bf16);
    if (rescorer->index->scalar == UFORM_SCALAR_I8) rescorer->nn->f32_to_i8(dims, query, rescorer->query_i8);
}

static float rescore(const rescorer_t *rescorer, const float *query, uint64_t item) {
    uform_index_t index = rescorer->index;
    size_t dims = index->dims;
    const unsigned char *row = index->parts[index->modality[item]].data + index->rows_of[item] * index->row_bytes;
    float score = 0;
    switch (index->scalar) {
    case UFORM_SCALAR_F32:
        rescorer->kernels->dot_f32(1, dims, (const float *)(const void *)row, dims, 1, query, dims, &score, 1);
        return score;
    case UFORM_SCALAR_F16:
        rescorer->nn->f16_to_f32(dims, (const uint16_t *)(const void *)row, rescorer->widened);
        rescorer->kernels->dot_f32(1, dims, rescorer->widened, dims, 1, query, dims, &score, 1);
        return score;
    case UFORM_SCALAR_BF16:
        rescorer->kernels->dot_bf16(1, dims, (const uint16_t *)(const void *)row, dims, 1, rescorer->query_bf16, dims,
                                    &score, 1);
        return score;
    case UFORM_SCALAR_I8: {
        int32_t dot = 0;
        rescorer->kernels->dot_i8(1, dims, (const int8_t *)row, dims, 1, rescorer->query_i8, dims, &dot, 1);
        return (float)((double)dot / (127.0 * 127.0));
    }
    default: return -INFINITY;
    }
}

/* Keeps the best `top` hits seen so far in best[0, kept), in the order exact search answers in
 * (uform__index_compare_hits: score descending, item ascending, a total order), and returns the new
 * count. Only the top of the candidates is wanted, so a hit below the bar costs one comparison: with
 * rerank 100 and top 10, sorting all 100 rescored candidates with qsort took a fifth of uform's
 * instructions in the search call (callgrind, bench/README.md), more than the rescoring itself. */
static size_t keep_best(uform_index_hit_t *best, size_t kept, size_t top, uform_index_hit_t hit) {
    if (kept == top && uform__index_compare_hits(&hit, &best[top - 1]) >= 0) return kept;
    size_t at = kept < top ? kept : top - 1;
    for (; at > 0 && uform__index_compare_hits(&hit, &best[at - 1]) < 0; --at) best[at] = best[at - 1];
    best[at] = hit;
    return kept < top ? kept + 1 : kept;
}

/* One FAISS call's candidates reduced to the hits: queries [first, first + count) of the call, their
 * candidates [count, fetch] in `labels` / `distances`, split into prongs of contiguous queries over
 * the executor's threads (each thread rescoring with its own scratch, rescorers[thread]). Queries
 * are independent, so the hits do not depend on the split. */
typedef struct reduce_t {
    uform_index_t index;
    rescorer_t *rescorers; /* [threads] */
    const float *queries;  /* [q, dims] */
    const float *distances;
    const int64_t *labels;
    uform_index_hit_t *hits; /* [q, top] */
    size_t first, count, fetch, top, prongs;
    int rerank;
} reduce_t;

static void reduce_prong(void *context, size_t thread, size_t prong) {
    const reduce_t *reduce = context;
    uform_index_t index = reduce->index;
    rescorer_t *rescorer = &reduce->rescorers[thread];
    const size_t fetch = reduce->fetch, top = reduce->top;
    size_t begin, end;
    uform__split_range(reduce->count, reduce->prongs, prong, &begin, &end);
    for (size_t j = begin; j < end; ++j) {
        const float *query = reduce->queries + (reduce->first + j) * index->dims;
        if (reduce->rerank) rescorer_query(rescorer, query);
        uform_index_hit_t *best = reduce->hits + (reduce->first + j) * top;
        size_t kept = 0;
        for (size_t k = 0; k < fetch && top; ++k) {
            int64_t label = reduce->labels[j * fetch + k];
            if (label < 0 || (uint64_t)label >= index->count) continue; /* FAISS found fewer */
            uint64_t item = (uint64_t)label;
            float score = reduce->rerank ? rescore(rescorer, query, item) : reduce->distances[j * fetch + k];
            uform_index_hit_t hit = {item, isnan(score) ? -INFINITY : score, (uform_modality_t)index->modality[item]};
            kept = keep_best(best, kept, top, hit);
        }
        for (size_t k = kept; k < top; ++k) best[k] = (uform_index_hit_t){UINT64_MAX, -INFINITY, UFORM_MODALITY_TEXT};
    }
}

static uform_status_t search_run(void *pointer, uform__call_context_t *context) {
    uform_index_ann_search_t *request = pointer;
    uform_index_ann_t ann = request->ann;
    uform_index_t index = ann->index;
    uform_arena_t arena = context->arena;
    const size_t q = request->queries_count, dims = index->dims;
    unsigned modalities = request->modalities ? request->modalities : 0xFu, present = 0;
    size_t eligible = 0;
    for (int m = 0; m < 4; ++m)
        if (index->parts[m].rows) {
            present |= 1u << m;
            if (modalities & (1u << m)) eligible += index->parts[m].rows;
        }
    const size_t top = request->top < eligible ? request->top : eligible;
    const size_t nprobe = request->nprobe ? request->nprobe : (ann->facts.lists / 32 ? (size_t)ann->facts.lists / 32 : 1);
    const size_t rerank = uform__ann_rerank(&ann->facts, request->rerank, request->top, nprobe);
    size_t fetch = rerank ? rerank : request->top; /* a rerank is at least top */
    if (fetch > eligible) fetch = eligible;
    size_t chunk = CANDIDATE_BYTES / ((fetch ? fetch : 1) * (sizeof(float) + sizeof(int64_t)));
    if (chunk < 1) chunk = 1;
    if (chunk > q) chunk = q;

    int failed = 0;
    float *queries = uform__arena_take(arena, q * dims * sizeof(float), &failed);
    float *distances = uform__arena_take(arena, chunk * fetch * sizeof(float), &failed);
    int64_t *labels = uform__arena_take(arena, chunk * fetch * sizeof(int64_t), &failed);
    uform_index_hit_t *hits = uform__arena_take(arena, q * top * sizeof *hits, &failed);
    const size_t threads = uform__parallel_threads(context->parallel);
    rescorer_t *rescorers = uform__arena_take(arena, threads * sizeof *rescorers, &failed);
    for (size_t t = 0; rescorers && t < threads; ++t) {
        rescorer_t *rescorer = &rescorers[t];
        *rescorer = (rescorer_t){index, uform__search_kernels(context->cpu_class), uform__nn_kernels(context->cpu_class),
                                 NULL, NULL, NULL};
        if (rerank) {
            rescorer->query_bf16 = uform__arena_take(arena, dims * sizeof(uint16_t), &failed);
            rescorer->query_i8 = uform__arena_take(arena, dims, &failed);
            rescorer->widened = uform__arena_take(arena, dims * sizeof(float), &failed);
        }
    }
    if (failed)
        return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function,
                           "cannot allocate %zu queries × %zu candidates", chunk, fetch);
    const size_t stride = request->queries_stride ? request->queries_stride : dims * sizeof(float);
    for (size_t j = 0; j < q; ++j)
        memcpy(queries + j * dims, (const unsigned char *)request->queries + j * stride, dims * sizeof(float));

    uform__faiss_search_t search = {0};
    search.k = fetch;
    search.nprobe = nprobe;
    search.ef = request->ef ? request->ef : (fetch > 64 ? fetch : 64);
    search.allowed = (modalities & present) != present ? index->modality : NULL;
    search.mask = modalities;
    search.threads = threads;
    /* Progress counts queries: the batches' sizes depend on their times. */
    uform__progress_begin(&context->progress, context->progress_options, q);
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY - 96];
    size_t batch = context->progress.callback ? FIRST_BATCH : q;
    for (size_t first = 0; first < q && fetch;) {
        size_t count = q - first < batch ? q - first : batch;
        if (count > chunk) count = chunk;
        double started = seconds_now();
        search.queries = count, search.vectors = queries + first * dims;
        search.distances = distances, search.labels = labels;
        uform_status_t status = ann->api->search(ann->faiss, &search, message, sizeof message);
        if (status != UFORM_OK)
            return uform__fail(context->outcome, status, context->function, "FAISS's search (nprobe %zu, ef %zu): %s",
                               search.nprobe, search.ef, message);
        reduce_t reduce = {index, rescorers, queries, distances, labels, hits, first, count, fetch, top, 0, rerank != 0};
        /* Rescoring is worth the threads; FAISS's own scores only need sorting into place. */
        reduce.prongs = rerank ? (count < threads ? count : threads) : 1;
        uform__parallel_for(rerank ? context->parallel : NULL, reduce.prongs, reduce_prong, &reduce);
        /* The next batch: what this call's rate answers in BATCH_SECONDS, and the whole tail when
         * what would be left after it is under half a batch (no short last call). */
        double took = seconds_now() - started, rate = (double)count / (took > 1e-6 ? took : 1e-6);
        double wanted = rate * BATCH_SECONDS;
        if (context->progress.callback)
            batch = wanted < FIRST_BATCH ? FIRST_BATCH : wanted > MOST_BATCH ? MOST_BATCH : (size_t)wanted;
        first += count;
        if (q - first > batch && q - first - batch < batch / 2) batch = q - first;
        if (uform__progress_advance(&context->progress, first) == UFORM_CANCEL && first < q)
            return uform__fail(context->outcome, UFORM_CANCELLED, context->function,
                               "cancelled by the progress handler after %zu of %zu queries", first, q);
    }
    if (!fetch) uform__progress_advance(&context->progress, q);
    request->hits = hits;
    request->hits_per_query = top;
    return UFORM_OK;
}

UFORM_API uform_status_t uform_index_ann_search(uform_index_ann_search_t *request) {
    if (!request) return UFORM_INVALID_ARGUMENT;
    request->hits = NULL;
    request->hits_per_query = 0;
    uform_outcome_t *outcome = &request->outcome;
    const char *function = __func__;
    uform_index_ann_t ann = request->ann;
    if (!ann) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "ann is NULL");
    uform_status_t status = uform__index_check_queries(request->arena, request->queries, request->queries_count,
                                                       request->queries_columns, request->queries_stride, request->top,
                                                       request->modalities, ann->index->dims, outcome, function);
    if (status != UFORM_OK) return status;
    if (request->ef > (size_t)1 << 30 || request->nprobe > ((size_t)1 << 40))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s %zu is out of range",
                           request->ef > (size_t)1 << 30 ? "ef" : "nprobe",
                           request->ef > (size_t)1 << 30 ? request->ef : request->nprobe);
    uform__call_t call = {search_run, request, outcome, request->completion, request->arena, &request->progress, function};
    return uform__executor_call(request->executor, &call);
}
