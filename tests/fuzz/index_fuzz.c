/*
 * libFuzzer target for the index reader (src/index/index_open.c): any bytes go to the from-memory
 * open, which must answer UFORM_OK or UFORM_FORMAT/UFORM_UNSUPPORTED with a message, never read
 * outside the input. An accepted index is walked completely — every item's path and modality,
 * the metadata — and searched on the calling thread with a query of its width, top 3, all
 * modalities, so the search kernels run over every row the reader promised. A broken promise
 * traps, which the fuzzer (or the replay driver, replay_main.c) reports as a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "index/index.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(uform_index_t index) {
    uform_index_description_t description;
    uform_index_describe(index, &description);
    size_t total = 0;
    for (int m = 0; m < 4; ++m) total += description.counts[m];
    if (total != description.count || description.dimensions == 0) __builtin_trap();
    volatile uint8_t sink = 0;
    for (size_t item = 0; item < description.count; ++item) {
        const char *path = NULL;
        size_t length = 0;
        uform_modality_t modality;
        if (uform_index_item(index, item, &modality, &path, &length) != UFORM_OK || (unsigned)modality > 3) __builtin_trap();
        if (length) sink ^= (uint8_t)(path[0] ^ path[length - 1]);
    }
    if (uform_index_item(index, description.count, NULL, &(const char *){NULL}, &(size_t){0}) != UFORM_INVALID_ARGUMENT)
        __builtin_trap();
    (void)sink;

    /* A search over every row: the query is a fixed pattern of the index's width. */
    float *query = malloc(description.dimensions * sizeof(float));
    uform_arena_t arena = NULL;
    if (!query || uform_arena_for_host(&arena, NULL) != UFORM_OK) __builtin_trap();
    for (size_t c = 0; c < description.dimensions; ++c) query[c] = (c % 3 == 0 ? 0.5f : -0.25f) / (float)(1 + c % 7);
    uform_index_search_t search;
    memset(&search, 0, sizeof search);
    search.index = index, search.arena = arena, search.queries = query, search.queries_count = 1;
    search.queries_columns = description.dimensions, search.top = 3;
    if (uform_index_search(&search) != UFORM_OK) __builtin_trap();
    if (search.hits_per_query > 3 || search.hits_per_query > description.count) __builtin_trap();
    for (size_t i = 0; i < search.hits_per_query; ++i)
        if (search.hits[i].item >= description.count) __builtin_trap();
    uform_arena_free(arena);
    free(query);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uform_outcome_t outcome;
    memset(&outcome, 0, sizeof outcome);
    uform_index_t index = NULL;
    uform_status_t status = uform__index_open_memory(data, size, NULL, &index, &outcome);
    if (status == UFORM_OK) {
        if (!index) __builtin_trap();
        walk(index);
    } else if ((status != UFORM_FORMAT && status != UFORM_UNSUPPORTED) || index || !outcome.message[0]) {
        __builtin_trap();
    }
    uform_index_free(index);
    return 0;
}
