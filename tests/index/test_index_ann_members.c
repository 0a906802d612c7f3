/*
 * uform_index_ann_build_members over a mesh of one, on an index whose items alternate between
 * modalities in runs (text, image, text, audio …), so a member's block is not one modality's rows
 * in order: FAISS's vector k must be item k, widened from the right modality's row.
 *
 * Checked against properties that hold whatever the engine does, not against the engine: with
 * IVF16,Flat searched over every list (nprobe 16) each item's own row, as a query, finds that item
 * first with the score its squared norm computes in double (the rows are distinct unit vectors, so
 * no other row scores as high), and a modality filter finds the best item of that modality only.
 * The calls' refusals: a NULL mesh; member 0 without its index (then no file).
 * usage: test_index_ann_members SCRATCH
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/check.h"
#include "uform/uform.h"

enum { DIMS = 24, RUNS = 12, RUN = 37, ITEMS = RUNS * RUN, LISTS = 16 };

/* Run r's modality: text, image, text, audio, video, image … (never the same twice in a row). */
static uform_modality_t modality_of_run(size_t run) {
    static const uform_modality_t order[] = {UFORM_MODALITY_TEXT, UFORM_MODALITY_IMAGE, UFORM_MODALITY_TEXT,
                                             UFORM_MODALITY_AUDIO, UFORM_MODALITY_VIDEO, UFORM_MODALITY_IMAGE};
    return order[run % 6];
}

/* Unit rows from a fixed xorshift stream around a few directions (clustered, so IVF lists differ). */
static void make_rows(float *rows) {
    uint64_t state = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < ITEMS; ++i) {
        double norm = 0;
        for (size_t c = 0; c < DIMS; ++c) {
            state ^= state << 13, state ^= state >> 7, state ^= state << 17;
            double noise = (double)(state >> 11) / 9007199254740992.0 - 0.5;
            double value = (c == i % 5 ? 2.0 : 0.0) + noise;
            rows[i * DIMS + c] = (float)value, norm += value * value;
        }
        for (size_t c = 0; c < DIMS; ++c) rows[i * DIMS + c] = (float)(rows[i * DIMS + c] / sqrt(norm));
    }
}

int main(int argc, char **argv) {
    if (argc != 2) return fprintf(stderr, "usage: test_index_ann_members SCRATCH\n"), 2;
    mkdir(argv[1], 0755);
    char index_path[512], ann_path[512];
    snprintf(index_path, sizeof index_path, "%s/mixed.index", argv[1]);
    snprintf(ann_path, sizeof ann_path, "%s/mixed.faiss", argv[1]);
    unlink(ann_path);
    static float rows[ITEMS * DIMS];
    make_rows(rows);
    uform_outcome_t outcome = {0};
    uform_index_builder_t builder = NULL, own = NULL;
    CHECK_STATUS(uform_index_builder_create_vectors(DIMS, UFORM_SCALAR_F32, NULL, &builder, &outcome), UFORM_OK);
    for (size_t run = 0; run < RUNS; ++run)
        CHECK_STATUS(uform_index_builder_add_vectors(builder, modality_of_run(run), rows + run * RUN * DIMS, UFORM_SCALAR_F32,
                                                     RUN, DIMS, 0, NULL, 0, &outcome),
                     UFORM_OK);
    CHECK_STATUS(uform_index_builder_write(builder, index_path, NULL, 0, &outcome), UFORM_OK);
    uform_index_t index = NULL;
    CHECK_STATUS(uform_index_open(index_path, NULL, &index, &outcome), UFORM_OK);
    CHECK_STATUS(uform_index_builder_from(index, &own, &outcome), UFORM_OK);
    uform_mesh_t mesh = NULL;
    uform_mesh_options_t mesh_options;
    memset(&mesh_options, 0, sizeof mesh_options);
    mesh_options.host_domain_count = 1;
    CHECK_STATUS(uform_mesh_bootstrap(NULL, &mesh_options, &mesh, &outcome), UFORM_OK);

    /* Refusals first: nothing is written. */
    uform_index_ann_options_t options = {"IVF16,Flat", 0, 1};
    CHECK_STATUS(uform_index_ann_build_members(index, own, NULL, ann_path, &options, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(uform_index_ann_build_members(NULL, own, mesh, ann_path, &options, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_MSG(strstr(outcome.message, "index is NULL on member 0") != NULL, "%s", outcome.message);
    CHECK(access(ann_path, F_OK) != 0);

    CHECK_STATUS(uform_index_ann_build_members(index, own, mesh, ann_path, &options, &outcome), UFORM_OK);
    uform_index_ann_t ann = NULL;
    CHECK_STATUS(uform_index_ann_open(index, ann_path, &ann, &outcome), UFORM_OK);
    uform_arena_t arena = NULL;
    CHECK_STATUS(uform_arena_for_executor(NULL, &arena, &outcome), UFORM_OK);
    size_t found_self = 0, filtered_right = 0;
    for (size_t item = 0; ann && arena && item < ITEMS; ++item) {
        uform_index_ann_search_t search;
        memset(&search, 0, sizeof search);
        search.ann = ann, search.arena = arena, search.queries = rows + item * DIMS, search.queries_count = 1;
        search.queries_columns = DIMS, search.top = 2, search.nprobe = LISTS;
        if (uform_index_ann_search(&search) != UFORM_OK || search.hits_per_query != 2) break;
        double norm = 0;
        for (size_t c = 0; c < DIMS; ++c) norm += (double)rows[item * DIMS + c] * rows[item * DIMS + c];
        found_self += search.hits[0].item == item && fabs(search.hits[0].score - norm) < 1e-5 &&
                      search.hits[1].score < search.hits[0].score;
        /* The same query restricted to another modality: never this item, always that modality. */
        uform_modality_t own_kind = modality_of_run(item / RUN), other = own_kind == UFORM_MODALITY_TEXT ? UFORM_MODALITY_AUDIO
                                                                                                            : UFORM_MODALITY_TEXT;
        search.modalities = 1u << other;
        if (uform_index_ann_search(&search) != UFORM_OK) break;
        filtered_right += search.hits[0].item != item && search.hits[0].modality == other &&
                          modality_of_run(search.hits[0].item / RUN) == other;
    }
    CHECK_EQ_INT(found_self, ITEMS);
    CHECK_EQ_INT(filtered_right, ITEMS);

    uform_arena_free(arena);
    uform_index_ann_free(ann);
    uform_mesh_free(mesh);
    uform_index_builder_free(own);
    uform_index_builder_free(builder);
    uform_index_free(index);
    unlink(ann_path);
    unlink(index_path);
    return check_finish();
}
