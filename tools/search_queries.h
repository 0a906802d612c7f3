/*
 * `uform search --queries` (search_queries.c): what tools/search.c parsed, and the run.
 */
#ifndef UFORM_TOOLS_SEARCH_QUERIES_H
#define UFORM_TOOLS_SEARCH_QUERIES_H

#include <stddef.h>

typedef struct search_queries_options_t {
    const char *index, *checkpoint; /* checkpoint: NULL for none (no fingerprint check) */
    const char *queries;            /* the .npy matrix */
    size_t top, threads, candidates;
    unsigned modalities;
    int json, compute, normalize;
} search_queries_options_t;

/* Searches and prints; answers the exit status (docs/cli.md). */
int search_queries_run(const search_queries_options_t *options);

#endif
