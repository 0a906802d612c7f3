/*
 * uform search INDEX [CKPT] --queries Q.npy [--top K] [--normalize] [--json] ...
 *
 * Batched exact search with query vectors (docs/indexes.md, "Batched queries"): the rows of a
 * float32 or float16 .npy matrix, searched a chunk of CHUNK_QUERIES at a time (one
 * uform_index_search each, which runs a batch as a matrix product). With CKPT, the index must be
 * that checkpoint's (its fingerprint is checked); without, any index is searched, one built from
 * vectors included. tools/search.c hands over here when --queries is given.
 *
 * Output: --json writes one line per query, {"query": i, "hits": [{rank, item, score, modality,
 * path}, ...]} with the query's row number; without it, one line per hit led by the query's row.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "npy_read.h"
#include "search_queries.h"

/* Queries per library call: bounds the hits and scratch held at once, and is far past the size
 * where a batch runs at the matrix product's speed. */
#define CHUNK_QUERIES 1024

/* IEEE binary16 → binary32, exact (subnormals, infinities and NaN included). */
static float half_to_float(uint16_t half) {
    uint32_t sign = (uint32_t)(half >> 15) << 31, exponent = (half >> 10) & 0x1F, mantissa = half & 0x3FF, bits;
    if (exponent == 0x1F) bits = sign | 0x7F800000u | mantissa << 13;
    else if (exponent) bits = sign | (exponent + 112) << 23 | mantissa << 13;
    else if (!mantissa) bits = sign;
    else {
        float value = (float)mantissa * (1.0f / 16777216.0f); /* 2^-24 · mantissa, exact */
        memcpy(&bits, &value, sizeof bits);
        bits |= sign;
    }
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

/* Row `r` of the matrix as F32 in `row`, normalised when asked (in double; zero rows stay zero). */
static void query_row(const npy_matrix_t *matrix, size_t r, int normalize, float *row) {
    const size_t columns = matrix->columns;
    if (matrix->scalar == UFORM_SCALAR_F32) memcpy(row, (const float *)matrix->data + r * columns, columns * sizeof(float));
    else
        for (size_t c = 0; c < columns; ++c) {
            uint16_t half;
            memcpy(&half, (const uint16_t *)matrix->data + r * columns + c, sizeof half);
            row[c] = half_to_float(half);
        }
    if (!normalize) return;
    double sum = 0;
    for (size_t c = 0; c < columns; ++c) sum += (double)row[c] * row[c];
    if (sum > 0)
        for (size_t c = 0; c < columns; ++c) row[c] = (float)(row[c] / sqrt(sum));
}

static void print_hits(uform_index_t index, const uform_index_search_t *search, size_t first_query, int json) {
    for (size_t j = 0; j < search->queries_count; ++j) {
        const uform_index_hit_t *hits = search->hits + j * search->hits_per_query;
        if (json) printf("{\"query\": %zu, \"hits\": [", first_query + j);
        for (size_t i = 0; i < search->hits_per_query; ++i) {
            const char *path = NULL;
            size_t length = 0;
            uform_index_item(index, (size_t)hits[i].item, NULL, &path, &length);
            if (json) {
                printf("%s{\"rank\": %zu, \"item\": %llu, \"score\": %.9g, \"modality\": \"%s\", \"path\": ", i ? ", " : "",
                       i + 1, (unsigned long long)hits[i].item, hits[i].score, cli_modality_name(hits[i].modality));
                cli_json_string(stdout, path, length);
                putchar('}');
            } else {
                printf("%6zu %3zu  %8.5f  %-5s  %.*s\n", first_query + j, i + 1, hits[i].score,
                       cli_modality_name(hits[i].modality), (int)length, path);
            }
        }
        if (json) printf("]}\n");
    }
}

int search_queries_run(const search_queries_options_t *options) {
    npy_matrix_t matrix;
    char error[256];
    if (npy_matrix_open(options->queries, &matrix, error, sizeof error) != 0) {
        fprintf(stderr, "uform: %s (%s)\n", error, options->queries);
        return 1;
    }
    uform_outcome_t outcome = {0};
    uform_executor_t executor = NULL;
    uform_model_t model = NULL;
    uform_index_t index = NULL;
    uform_arena_t arena = NULL;
    float *rows = NULL;
    int status = cli_executor(options->threads, &executor);
    if (status == 0 && options->checkpoint && !(model = cli_load(options->checkpoint, executor, cli_compute(options->compute))))
        status = 1;
    if (status == 0 && uform_index_open(options->index, model, &index, &outcome) != UFORM_OK)
        status = cli_fail(&outcome, options->index);
    uform_index_description_t description;
    uform_index_describe(index, &description);
    if (status == 0 && matrix.columns != description.dimensions) {
        fprintf(stderr, "uform: %s has %zu columns, the index holds %zu (%s)\n", options->queries, matrix.columns,
                description.dimensions, options->index);
        status = 1;
    }
    if (status == 0 && uform_arena_for_executor(executor, &arena, &outcome) != UFORM_OK) status = cli_fail(&outcome, NULL);
    size_t chunk = matrix.rows < CHUNK_QUERIES ? matrix.rows : CHUNK_QUERIES;
    if (status == 0 && chunk && !(rows = malloc(chunk * matrix.columns * sizeof(float))))
        status = cli_fail_errno(ENOMEM, "cannot hold %zu queries", chunk);
    for (size_t first = 0; status == 0 && first < matrix.rows; first += chunk) {
        const size_t count = matrix.rows - first < chunk ? matrix.rows - first : chunk;
        for (size_t j = 0; j < count; ++j) query_row(&matrix, first + j, options->normalize, rows + j * matrix.columns);
        uform_index_search_t search = {0};
        search.index = index, search.executor = executor, search.arena = arena;
        search.queries = rows, search.queries_count = count, search.queries_columns = matrix.columns;
        search.top = options->top, search.modalities = options->modalities, search.candidates = options->candidates;
        if (uform_index_search(&search) != UFORM_OK) status = cli_fail(&search.outcome, options->queries);
        else print_hits(index, &search, first, options->json);
    }
    free(rows);
    uform_arena_free(arena);
    uform_index_free(index);
    uform_model_free(model);
    uform_executor_free(executor);
    npy_matrix_close(&matrix);
    return status;
}
