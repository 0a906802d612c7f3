/*
 * The exact search of /v1/search as a follow-up of the batch that encoded its queries (serve.h,
 * batcher.h): on the compute thread, right after the batch, every query of the batch in one
 * uform_index_search on the compute executor, so one scan of the index serves many requests. The
 * search is the search route's; the batcher only runs the follow-up it was handed.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

/* The call a batch item belongs to: its job is the call's. */
static serve_call_t *call_of(const serve_item_t *item) { return (serve_call_t *)((char *)item->job - offsetof(serve_call_t, job)); }

static void run(serve_followup_t *followup, serve_item_t **items, size_t count, uform_executor_t compute) {
    serve_exact_search_t *search = (serve_exact_search_t *)followup;
    const size_t dims = search->dims;
    /* One call for the whole batch when the queries agree on their modality filter (K is the
     * largest asked: a shorter top-K is a prefix of a longer one, ties being ordered by item);
     * otherwise one call per query. */
    int same = 1;
    size_t top = 0;
    for (size_t j = 0; j < count; ++j) {
        const serve_call_t *call = call_of(items[j]);
        same &= call->modalities == call_of(items[0])->modalities;
        if (call->top > top) top = call->top;
        /* The query the index scores: the embedding's prefix of the index's width (the whole
         * width untouched: bit for bit the query `uform search` scores). */
        uform_embedding_truncate(items[j]->output, search->width, dims, search->queries + j * dims, NULL);
    }
    size_t calls = same ? 1 : count, per_call = same ? count : 1;
    for (size_t c = 0; c < calls; ++c) {
        const serve_call_t *first = call_of(items[c * per_call]);
        uform_index_search_t request = {0};
        request.index = search->index, request.executor = compute;
        request.queries = search->queries + c * per_call * dims;
        request.queries_count = per_call, request.queries_columns = dims;
        request.top = same ? top : first->top, request.modalities = first->modalities;
        request.arena = search->arena;
        uform_status_t status = uform_index_search(&request);
        for (size_t j = c * per_call; j < (c + 1) * per_call; ++j) {
            serve_call_t *call = call_of(items[j]);
            if (status != UFORM_OK) {
                char line[600];
                uform_outcome_format(&request.outcome, line, sizeof line);
                serve_job_fail(&call->job, status, "search: %s", line);
                continue;
            }
            size_t n = request.hits_per_query < call->top ? request.hits_per_query : call->top;
            memcpy(call->hits, request.hits + (j - c * per_call) * request.hits_per_query, n * sizeof *call->hits);
            call->hits_count = n;
        }
    }
}

int serve_exact_search_open(serve_exact_search_t *search, const serve_model_t *model, size_t max_batch, char *error,
                            size_t capacity) {
    memset(search, 0, sizeof *search);
    if (!model->index) return 0;
    search->followup.run = run;
    search->index = model->index, search->width = model->description.embedding;
    search->dims = model->index_description.dimensions;
    uform_outcome_t outcome = {0};
    if (!(search->queries = calloc(max_batch * search->dims, sizeof(float))) ||
        uform_arena_for_executor(model->compute, &search->arena, &outcome) != UFORM_OK) {
        snprintf(error, capacity, "out of memory for the search's buffers");
        serve_exact_search_close(search);
        return -1;
    }
    return 0;
}

void serve_exact_search_close(serve_exact_search_t *search) {
    free(search->queries);
    uform_arena_free(search->arena);
    memset(search, 0, sizeof *search);
}
