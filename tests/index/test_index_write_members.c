/*
 * uform_index_builder_write_members on a mesh of one (the stream to member 0's writer thread, its
 * two buffers and fill hook; what crosses the mesh between members is test_index_members.py's):
 *   - 300,001 rows x 4 F32 with names of 12-16 bytes, so each of the file's tensors but the modality
 *     bytes takes several 1-MiB pieces and the writer several 8-MiB chunks: the file equals
 *     uform_index_builder_write's byte for byte, and its path offsets read back as the names;
 *   - refusals on member 0: a NULL path and a reserved metadata key (UFORM_INVALID_ARGUMENT), a
 *     folder that does not exist (UFORM_IO naming it, nothing written), a NULL builder
 *     (UFORM_PEER_LOST naming member 0), a NULL mesh.
 * Labelled tsan: `make tsan` runs the hand-over between the calling thread and the writer's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/read_file.h"
#include "uform/uform.h"

enum { rows = 300001, dims = 4 };

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_index_write_members SCRATCH_FOLDER\n");
        return 2;
    }
    char direct[512], streamed[512], missing[512];
    snprintf(direct, sizeof direct, "%s/direct.index", argv[1]);
    snprintf(streamed, sizeof streamed, "%s/streamed.index", argv[1]);
    snprintf(missing, sizeof missing, "%s/no-such-folder/x.index", argv[1]);
    float *values = malloc((size_t)rows * dims * sizeof *values);
    char *names = malloc((size_t)rows * 17);
    size_t *offsets = malloc((rows + 1) * sizeof *offsets);
    CHECK(values && names && offsets);
    if (!values || !names || !offsets) return check_finish();
    size_t used = 0;
    for (size_t i = 0; i < (size_t)rows * dims; ++i) values[i] = (float)((int)(i * 7919 % 2001) - 1000) / 1000.0f;
    for (size_t i = 0; i < rows; ++i) {
        offsets[i] = used;
        used += (size_t)sprintf(names + used, "row-%07zu-%.*s", i, (int)(i % 5), "aaaaa");
    }
    offsets[rows] = used;
    uform_tape_t tape = {names, offsets, rows};
    uform_index_builder_t builder = NULL;
    uform_mesh_t mesh = NULL;
    uform_outcome_t outcome = {0};
    uform_mesh_options_t options;
    memset(&options, 0, sizeof options);
    options.host_domain_count = 1;
    CHECK_STATUS(uform_index_builder_create_vectors(dims, UFORM_SCALAR_F32, NULL, &builder, &outcome), UFORM_OK);
    CHECK_STATUS(uform_index_builder_add_vectors(builder, UFORM_MODALITY_TEXT, values, UFORM_SCALAR_F32, rows, dims, 0, &tape,
                                                 0, &outcome),
                 UFORM_OK);
    CHECK_STATUS(uform_mesh_bootstrap(NULL, &options, &mesh, &outcome), UFORM_OK);
    const char *metadata[] = {"test.key", "a value"};
    CHECK_STATUS(uform_index_builder_write(builder, direct, metadata, 1, &outcome), UFORM_OK);
    CHECK_STATUS(uform_index_builder_write_members(builder, mesh, streamed, metadata, 1, &outcome), UFORM_OK);
    size_t direct_size = 0, streamed_size = 0;
    unsigned char *direct_bytes = test_read_file(direct, &direct_size), *streamed_bytes = test_read_file(streamed, &streamed_size);
    CHECK(direct_bytes && streamed_bytes && direct_size > ((size_t)8 << 20));
    CHECK_MSG(direct_bytes && streamed_bytes && direct_size == streamed_size &&
                  memcmp(direct_bytes, streamed_bytes, direct_size) == 0,
              "the streamed file (%zu bytes) differs from the direct one (%zu bytes)", streamed_size, direct_size);
    free(direct_bytes), free(streamed_bytes);
    uform_index_t index = NULL;
    CHECK_STATUS(uform_index_open(streamed, NULL, &index, &outcome), UFORM_OK);
    const size_t probes[] = {0, 1, 65536, 131071, 131072, 262143, rows - 1};
    for (size_t p = 0; index && p < sizeof probes / sizeof *probes; ++p) {
        const char *path = NULL;
        size_t length = 0;
        CHECK_STATUS(uform_index_item(index, probes[p], NULL, &path, &length), UFORM_OK);
        CHECK_MSG(path && length == offsets[probes[p] + 1] - offsets[probes[p]] &&
                      memcmp(path, names + offsets[probes[p]], length) == 0,
                  "item %zu's name", probes[p]);
    }
    uform_index_free(index);

    /* Refusals on member 0; the mesh stays usable after each (only a failed exchange breaks it). */
    CHECK_STATUS(uform_index_builder_write_members(builder, mesh, NULL, NULL, 0, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "path is NULL");
    const char *reserved[] = {"uform.index.count", "7"};
    CHECK_STATUS(uform_index_builder_write_members(builder, mesh, streamed, reserved, 1, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "reserved");
    CHECK_STATUS(uform_index_builder_write_members(builder, mesh, missing, NULL, 0, &outcome), UFORM_IO);
    CHECK_CONTAINS(outcome.message, "no-such-folder");
    CHECK(access(missing, F_OK) != 0);
    CHECK_STATUS(uform_index_builder_write_members(NULL, mesh, streamed, NULL, 0, &outcome), UFORM_PEER_LOST);
    CHECK_CONTAINS(outcome.message, "member 0 of 1 failed before the gather");
    CHECK_STATUS(uform_index_builder_write_members(builder, NULL, streamed, NULL, 0, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "mesh is NULL");
    /* After the refusals, a write still succeeds with the same bytes. */
    CHECK_STATUS(uform_index_builder_write_members(builder, mesh, streamed, metadata, 1, &outcome), UFORM_OK);
    streamed_bytes = test_read_file(streamed, &streamed_size);
    CHECK(streamed_bytes && streamed_size == direct_size);
    free(streamed_bytes);
    unlink(direct), unlink(streamed);
    uform_mesh_free(mesh);
    uform_index_builder_free(builder);
    free(values), free(names), free(offsets);
    return check_finish();
}
