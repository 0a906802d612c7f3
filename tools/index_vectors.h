/*
 * `uform index --vectors` (index_vectors.c): the flags tools/index.c parses for it and the run.
 */
#ifndef UFORM_TOOLS_INDEX_VECTORS_H
#define UFORM_TOOLS_INDEX_VECTORS_H

#include "cli.h"
#include "train_mesh.h"

typedef struct index_vectors_options_t {
    const char *vectors, *ids, *paths, *model, *modality, *out;
    uform_scalar_kind_t scalar;
    int normalize, json, quiet;
    size_t threads;        /* --threads, for the mesh's executor */
    train_mesh_t *mesh;    /* a member of a mesh (--mesh / a launcher) when mesh->where is set, else NULL */
    /* With --ann over a mesh: the structure's options and path (INDEX's .faiss), built by the members
     * together (uform_index_ann_build_members) after member 0 wrote INDEX; NULL otherwise. */
    const uform_index_ann_options_t *ann;
    const char *ann_path;
} index_vectors_options_t;

/* Builds options->out from options->vectors; answers the exit status (docs/cli.md). As a member of
 * a mesh, it indexes its contiguous block of the rows, and the blocks stream to member 0 in member
 * order, which writes the index (uform_index_builder_write_members); with options->ann every member then
 * takes part in building its approximate structure (member 0 writes it, the caller reports it). */
int index_vectors_run(const index_vectors_options_t *options, const cli_command_t *command);

#endif
