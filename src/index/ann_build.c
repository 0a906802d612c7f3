/*
 * Building an approximate structure over an open index (uform.h, uform_index_ann_build): choose
 * the recipe, let FAISS make the structure, train its quantisers on a fixed sample of the rows,
 * add every row in item order (so FAISS's vector k is item k), write FAISS's bytes and the
 * pairing record (ann_write.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "core/random.h"
#include "index/ann.h"
#include "index/ann_ondisk.h"
#include "index/ann_write.h"

/* Rows widened to F32 per call to FAISS's add: bounds the widened copy at 65,536 · dims · 4 bytes. */
#define ADD_ROWS 65536
/* Below this many items the default recipe is a graph (docs/indexes.md, "Approximate search"). */
#define GRAPH_BELOW 100000
/* From GRAPH_BELOW up to this many items it is inverted lists of full F32 rows; above, of PQ codes. */
#define FLAT_LIMIT 1000000
/* FAISS's k-means uses at most this many rows per centroid (ClusteringParameters' default). */
#define ROWS_PER_CENTROID 256
/* Training sample when the recipe trains but names no centroids (PCA, scalar quantisers …). */
#define PLAIN_SAMPLE 65536

/* The default rule: HNSW32 below GRAPH_BELOW items; IVF<n>,Flat from there up to FLAT_LIMIT; then
 * IVF<n>,PQ<m>np. n is the power of two nearest 4·√count, m the largest divisor of dims at most dims/4
 * sub-quantisers (8 bits each).
 *
 * Why flat lists from 100,000 items: on bench_ann's clustered mixture (bench/ann_vs_exact.py, exact
 * and approximate search alternating in one worker) HNSW32 was 0.7–1.5 times exact search's rate at
 * recall@10 0.95 at 100,000, 300,000 and 1,000,000 × 64 rows (its recall flattens: ef 512 for 0.960 at
 * 1 M), while IVF<n>,Flat was 10–17 times it (nprobe 1–4), in half the memory (4·dims + 8 bytes a
 * vector against 4·dims + 272) and a quarter of the build time. Below 100,000 items exact search
 * answers thousands of queries a second anyway, and a graph needs no training. Above FLAT_LIMIT the
 * F32 lists stop fitting beside the rows, and PQ codes take dims/4 bytes a vector.
 *
 * "np" skips FAISS's polysemous training, which index_factory otherwise asks for with IVF-PQ: it
 * reorders the codes for Hamming filtering that the search does not use, and costs minutes (20,000 ×
 * 64 rows: 147 s against 5.6 s for IVF64,PQ16 on this machine). */
void uform__ann_default_recipe(size_t count, size_t dims, char recipe[UFORM__ANN_RECIPE_CAPACITY]) {
    if (count < GRAPH_BELOW) {
        snprintf(recipe, UFORM__ANN_RECIPE_CAPACITY, "HNSW32");
        return;
    }
    double target = 4.0 * sqrt((double)count);
    size_t lists = 1;
    while ((double)(lists * 2) <= target) lists *= 2;
    if (target - (double)lists > (double)(lists * 2) - target) lists *= 2;
    if (count <= FLAT_LIMIT) {
        snprintf(recipe, UFORM__ANN_RECIPE_CAPACITY, "IVF%zu,Flat", lists);
        return;
    }
    size_t subquantizers = dims / 4 ? dims / 4 : 1;
    while (dims % subquantizers) --subquantizers;
    snprintf(recipe, UFORM__ANN_RECIPE_CAPACITY, "IVF%zu,PQ%zu" "np", lists, subquantizers);
}

void uform__ann_sampler_start(uform__ann_sampler_t *sampler, size_t count, size_t wanted) {
    sampler->state = 0x75666F726D414E4Eull; /* "uformANN" */
    sampler->count = count, sampler->wanted = wanted < count ? wanted : count;
    sampler->item = 0, sampler->taken = 0;
}

size_t uform__ann_sampler_next(uform__ann_sampler_t *sampler) {
    while (sampler->item < sampler->count && sampler->taken < sampler->wanted) {
        size_t item = sampler->item++;
        /* take item with probability (wanted − taken) / (count − item) */
        double draw = (double)(uform__splitmix64(&sampler->state) >> 11) * (1.0 / 9007199254740992.0);
        if ((double)(sampler->count - item) * draw < (double)(sampler->wanted - sampler->taken)) {
            sampler->taken += 1;
            return item;
        }
    }
    return SIZE_MAX;
}

/* `wanted` items of the sampler's choice, ascending, widened into `rows` [wanted, dims]. */
static void sample_rows(uform_index_t index, size_t wanted, float *rows) {
    uform__ann_sampler_t sampler;
    uform__ann_sampler_start(&sampler, index->count, wanted);
    size_t taken = 0;
    for (size_t item; (item = uform__ann_sampler_next(&sampler)) != SIZE_MAX; ++taken)
        uform__ann_widen_row(index, item, rows + taken * index->dims);
}

uform_status_t uform__ann_prepare(const uform__faiss_api_t *api, size_t count, size_t dims,
                                  const uform_index_ann_options_t *options, char recipe[UFORM__ANN_RECIPE_CAPACITY],
                                  uform__faiss_t **made, size_t *train_rows, uform_outcome_t *outcome,
                                  const char *function) {
    *made = NULL, *train_rows = 0;
    if (options->recipe && options->recipe[0]) {
        if (strlen(options->recipe) >= UFORM__ANN_RECIPE_CAPACITY)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "the recipe has %zu bytes; at most %d",
                               strlen(options->recipe), UFORM__ANN_RECIPE_CAPACITY - 1);
        strcpy(recipe, options->recipe);
    } else {
        uform__ann_default_recipe(count, dims, recipe);
    }
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY - 96];
    uform__faiss_t *faiss = NULL;
    uform_status_t status = api->create(recipe, dims, &faiss, message, sizeof message);
    if (status != UFORM_OK)
        return uform__fail(outcome, status, function, "FAISS refused the recipe '%s' for %zu dims: %s", recipe, dims, message);
    uform__faiss_facts_t facts;
    api->describe(faiss, &facts);
    if (options->ondisk && !facts.mergeable) {
        api->free(faiss);
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "'%s' has no inverted lists to keep on disk: on-disk lists are for IVF recipes with FAISS's "
                           "array lists (IVF…,Flat, IVF…,PQ…, IVF…,SQ8, under OPQ or PCA too; not HNSW, refined or fast-scan)",
                           recipe);
    }
    if (!facts.trained) {
        uint64_t centroids = api->centroids(faiss);
        size_t wanted = options->train_rows ? options->train_rows
                        : centroids         ? (centroids > SIZE_MAX / ROWS_PER_CENTROID ? SIZE_MAX : (size_t)centroids * ROWS_PER_CENTROID)
                                            : PLAIN_SAMPLE;
        *train_rows = wanted < count ? wanted : count;
        if (strstr(recipe, "OPQ") && *train_rows < 39 * 256) {
            /* OPQ trains a PQ of its own inside FAISS, out of reach, which would print a warning. */
            api->free(faiss);
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "'%s' trains an OPQ rotation, which needs at least 9,984 training rows; %zu available",
                               recipe, *train_rows);
        }
    }
    *made = faiss;
    return UFORM_OK;
}

UFORM_API uform_status_t uform_index_ann_build(uform_index_t index, const char *path,
                                               const uform_index_ann_options_t *options, uform_outcome_t *outcome) {
    const char *function = __func__;
    uform_index_ann_options_t defaults = {0};
    if (!options) options = &defaults;
    if (!index || !path) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s is NULL", index ? "path" : "index");
    if (index->scalar == UFORM_SCALAR_B1)
        return uform__fail(outcome, UFORM_UNSUPPORTED, function,
                           "the index holds b1 rows: approximate structures are built over f32, f16, bf16 or i8 "
                           "indexes (b1 search is already a Hamming pass and an exact rescoring)");
    if (index->count == 0) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "the index holds no items");
    const uform__faiss_api_t *api = NULL;
    uform_status_t status = uform__faiss_load(&api, outcome, function);
    if (status != UFORM_OK) return status;

    char recipe[UFORM__ANN_RECIPE_CAPACITY];
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY - 96];
    uform__faiss_t *faiss = NULL;
    float *rows = NULL;
    size_t train_rows = 0;
    uform__ann_ondisk_t ondisk = {0};
    uform__ann_record_t record;
    memset(&record, 0, sizeof record);
    status = uform__ann_prepare(api, index->count, index->dims, options, recipe, &faiss, &train_rows, outcome, function);
    if (status != UFORM_OK) return status;
    if (train_rows) {
        if (train_rows > SIZE_MAX / sizeof(float) / index->dims || !(rows = malloc(train_rows * index->dims * sizeof(float)))) {
            status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a training sample of %zu rows × %zu dims",
                                 train_rows, index->dims);
            goto done;
        }
        sample_rows(index, train_rows, rows);
        status = api->train(faiss, train_rows, rows, options->threads, message, sizeof message);
        if (status != UFORM_OK) {
            status = uform__fail(outcome, status, function, "FAISS could not train '%s' on %zu rows: %s", recipe, train_rows,
                                 message);
            goto done;
        }
        free(rows);
        rows = NULL;
    }
    if (options->ondisk && (status = uform__ann_ondisk_start(&ondisk, api, faiss, path, outcome, function)) != UFORM_OK)
        goto done;
    size_t chunk = index->count < ADD_ROWS ? index->count : ADD_ROWS;
    if (!(rows = malloc(chunk * index->dims * sizeof(float)))) {
        status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate %zu rows widened to f32", chunk);
        goto done;
    }
    for (size_t first = 0; first < index->count; first += chunk) {
        size_t count = index->count - first < chunk ? index->count - first : chunk;
        for (size_t k = 0; k < count; ++k) uform__ann_widen_row(index, first + k, rows + k * index->dims);
        status = api->add(faiss, count, rows, options->threads, message, sizeof message);
        if (status != UFORM_OK) {
            status = uform__fail(outcome, status, function, "FAISS could not add rows %zu..%zu to '%s': %s", first,
                                 first + count - 1, recipe, message);
            goto done;
        }
        /* On disk: each batch's lists leave memory as soon as they are made. */
        if (options->ondisk && (status = uform__ann_ondisk_take(&ondisk, faiss, faiss, (uint64_t)first, outcome, function)) != UFORM_OK)
            goto done;
    }
    free(rows);
    rows = NULL;
    uform__ann_identity_of(index, &record.identity);
    record.train_rows = train_rows;
    memcpy(record.recipe, recipe, sizeof recipe);
    if (options->ondisk && (status = uform__ann_ondisk_finish(&ondisk, faiss, &record, outcome, function)) != UFORM_OK)
        goto done;
    uform__ann_before_rename_t lists_first = {uform__ann_ondisk_commit, &ondisk};
    status = uform__ann_write(api, faiss, path, &record, options->ondisk ? &lists_first : NULL, outcome, function);
    if (status == UFORM_OK) status = uform__succeed(outcome, function);
done:
    uform__ann_ondisk_end(&ondisk);
    free(rows);
    if (faiss) api->free(faiss);
    return status;
}
