/*
 * `uform index --vectors` (index_vectors.c): the flags tools/index.c parses for it and the run.
 */
#ifndef UFORM_TOOLS_INDEX_VECTORS_H
#define UFORM_TOOLS_INDEX_VECTORS_H

#include "cli.h"

typedef struct index_vectors_options_t {
    const char *vectors, *ids, *paths, *model, *modality, *out;
    uform_scalar_kind_t scalar;
    int normalize, json, quiet;
} index_vectors_options_t;

/* Builds options->out from options->vectors; answers the exit status (docs/cli.md). */
int index_vectors_run(const index_vectors_options_t *options, const cli_command_t *command);

#endif
