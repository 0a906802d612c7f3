/*
 * Every describe of the public header has one shape (docs/abi.md, "Handles: constructors, describe
 * and free"): `uform_status_t uform_<noun>_describe(handle, description)`, UFORM_INVALID_ARGUMENT for
 * a NULL handle or a NULL description, a non-NULL description zeroed before a refusal, and UFORM_OK
 * with the handle's facts otherwise. The facts are checked against what the test itself asked the
 * handles to be (widths, counts, the manifest's lines, the mesh's size), not against another engine
 * answer. The design's uform_model_describe takes a request; its NULL rule is checked here too.
 */
#include "common/check.h"

#include <uform/uform.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { DIMS = 8, ROWS = 3 };

/* Answers non-zero when every byte of `bytes` is zero. */
static int all_zero(const void *bytes, size_t size) {
    const unsigned char *b = (const unsigned char *)bytes;
    for (size_t i = 0; i < size; ++i)
        if (b[i]) return 0;
    return 1;
}

/* The refusals every describe shares: a NULL handle (the description is zeroed, not left stale) and
 * a NULL handle with a NULL description. */
#define CHECK_REFUSES_NULL(describe, description_type)                                     \
    do {                                                                                   \
        description_type d_;                                                               \
        memset(&d_, 0xA5, sizeof d_);                                                      \
        CHECK_STATUS(describe(NULL, &d_), UFORM_INVALID_ARGUMENT);                         \
        CHECK_MSG(all_zero(&d_, sizeof d_), "%s left a refused description unzeroed", #describe); \
        CHECK_STATUS(describe(NULL, NULL), UFORM_INVALID_ARGUMENT);                        \
    } while (0)

static void write_file(const char *path, const char *text) {
    FILE *file = fopen(path, "wb");
    CHECK_MSG(file != NULL, "cannot write %s", path);
    if (!file) return;
    fputs(text, file);
    fclose(file);
}

/* A builder of ROWS rows of DIMS columns made without a model, the index it writes, and an exact
 * ("Flat") approximate structure of that index. */
static void check_indexes(const char *folder) {
    CHECK_REFUSES_NULL(uform_index_builder_describe, uform_index_description_t);
    CHECK_REFUSES_NULL(uform_index_describe, uform_index_description_t);
    CHECK_REFUSES_NULL(uform_index_ann_describe, uform_index_ann_description_t);

    uform_outcome_t outcome = {0};
    uform_index_builder_t builder = NULL;
    CHECK_STATUS(uform_index_builder_create_vectors(DIMS, UFORM_SCALAR_F32, NULL, &builder, &outcome), UFORM_OK);
    float vectors[ROWS * DIMS];
    for (size_t i = 0; i < ROWS * DIMS; ++i) vectors[i] = (float)((i * 7) % 5) - 2.0f;
    const char paths_data[] = "abc";
    const size_t offsets[ROWS + 1] = {0, 1, 2, 3};
    const uform_tape_t paths = {paths_data, offsets, ROWS};
    CHECK_STATUS(uform_index_builder_add_vectors(builder, UFORM_MODALITY_IMAGE, vectors, UFORM_SCALAR_F32, ROWS, DIMS,
                                                 0, &paths, 0, &outcome),
                 UFORM_OK);
    uform_index_description_t description;
    memset(&description, 0xA5, sizeof description);
    CHECK_STATUS(uform_index_builder_describe(builder, &description), UFORM_OK);
    CHECK_EQ_INT(description.count, ROWS);
    CHECK_EQ_INT(description.counts[UFORM_MODALITY_IMAGE], ROWS);
    CHECK_EQ_INT(description.counts[UFORM_MODALITY_TEXT], 0);
    CHECK_EQ_INT(description.dimensions, DIMS);
    CHECK_EQ_INT(description.scalar, UFORM_SCALAR_F32);
    CHECK(strcmp(description.fingerprint, "00000000000000000000000000000000") == 0);
    CHECK_STATUS(uform_index_builder_describe(builder, NULL), UFORM_INVALID_ARGUMENT);

    char path[512], ann_path[512];
    snprintf(path, sizeof path, "%s/index.safetensors", folder);
    snprintf(ann_path, sizeof ann_path, "%s/index.faiss", folder);
    CHECK_STATUS(uform_index_builder_write(builder, path, NULL, 0, &outcome), UFORM_OK);
    uform_index_builder_free(builder);

    uform_index_t index = NULL;
    CHECK_STATUS(uform_index_open(path, NULL, &index, &outcome), UFORM_OK);
    memset(&description, 0xA5, sizeof description);
    CHECK_STATUS(uform_index_describe(index, &description), UFORM_OK);
    CHECK_EQ_INT(description.count, ROWS);
    CHECK_EQ_INT(description.dimensions, DIMS);
    CHECK_STATUS(uform_index_describe(index, NULL), UFORM_INVALID_ARGUMENT);

    uform_index_ann_options_t options = {0};
    options.recipe = "Flat";
    options.threads = 1;
    uform_index_ann_t ann = NULL;
    CHECK_STATUS(uform_index_ann_build(index, ann_path, &options, &outcome), UFORM_OK);
    CHECK_STATUS(uform_index_ann_open(index, ann_path, &ann, &outcome), UFORM_OK);
    if (outcome.status != UFORM_OK) fprintf(stderr, "%s: %s\n", outcome.function, outcome.message);
    uform_index_ann_description_t ann_description;
    memset(&ann_description, 0xA5, sizeof ann_description);
    CHECK_STATUS(uform_index_ann_describe(ann, &ann_description), UFORM_OK);
    CHECK_EQ_INT(ann_description.count, ROWS);
    CHECK_EQ_INT(ann_description.dimensions, DIMS);
    CHECK(strcmp(ann_description.recipe, "Flat") == 0);
    CHECK_STATUS(uform_index_ann_describe(ann, NULL), UFORM_INVALID_ARGUMENT);
    uform_index_ann_free(ann);
    uform_index_free(index);
    unlink(ann_path);
    unlink(path);
}

/* A manifest of two text–image pairs. */
static void check_dataset(const char *folder) {
    CHECK_REFUSES_NULL(uform_dataset_describe, uform_dataset_description_t);

    char path[512], image[512];
    snprintf(path, sizeof path, "%s/manifest.jsonl", folder);
    snprintf(image, sizeof image, "%s/1.png", folder);
    write_file(image, "not decoded by describe");
    write_file(path, "{\"text\": \"a red star\", \"image\": \"1.png\"}\n"
                     "{\"text\": \"the same star\", \"image\": \"1.png\"}\n");
    uform_dataset_options_t options = {0};
    options.source = UFORM_DATASET_MANIFEST;
    options.path = path;
    uform_outcome_t outcome = {0};
    uform_dataset_t dataset = NULL;
    CHECK_STATUS(uform_dataset_open(&options, &dataset, NULL, &outcome), UFORM_OK);
    if (outcome.status != UFORM_OK) fprintf(stderr, "%s: %s\n", outcome.function, outcome.message);
    uform_dataset_description_t description;
    memset(&description, 0xA5, sizeof description);
    CHECK_STATUS(uform_dataset_describe(dataset, &description), UFORM_OK);
    CHECK_EQ_INT(description.source, UFORM_DATASET_MANIFEST);
    CHECK_EQ_INT(description.samples, 2);
    CHECK_EQ_INT(description.pairs[UFORM_MODALITY_IMAGE], 2);
    CHECK_EQ_INT(description.choices, 0);
    CHECK_EQ_INT(strlen(description.fingerprint), 16);
    CHECK_STATUS(uform_dataset_describe(dataset, NULL), UFORM_INVALID_ARGUMENT);
    uform_dataset_free(dataset);
    unlink(path);
    unlink(image);
}

/* A mesh of one member (no rendezvous needed) and a tiny trainer over it. */
static void check_trainer_and_mesh(void) {
    CHECK_REFUSES_NULL(uform_mesh_describe, uform_mesh_description_t);
    CHECK_REFUSES_NULL(uform_trainer_describe, uform_trainer_description_t);

    uform_outcome_t outcome = {0};
    uform_mesh_options_t options = {0};
    uform_mesh_t mesh = NULL;
    CHECK_STATUS(uform_mesh_bootstrap(NULL, &options, &mesh, &outcome), UFORM_OK);
    uform_mesh_description_t mesh_description;
    memset(&mesh_description, 0xA5, sizeof mesh_description);
    CHECK_STATUS(uform_mesh_describe(mesh, &mesh_description), UFORM_OK);
    CHECK_EQ_INT(mesh_description.members_total, 1);
    CHECK_EQ_INT(mesh_description.host_domain_index, 0);
    CHECK_STATUS(uform_mesh_describe(mesh, NULL), UFORM_INVALID_ARGUMENT);

    uform_trainer_config_t config = {0};
    config.seed = 7;
    config.mesh = mesh;
    uform_trainer_t trainer = NULL;
    CHECK_STATUS(uform_trainer_init_ram(NULL, &config, &trainer, &outcome), UFORM_OK);
    uform_trainer_description_t description;
    memset(&description, 0xA5, sizeof description);
    CHECK_STATUS(uform_trainer_describe(trainer, &description), UFORM_OK);
    CHECK_EQ_INT(description.steps, 0);
    CHECK_EQ_INT(description.seed, 7);
    CHECK(description.model.parameters > 0);
    CHECK_STATUS(uform_trainer_describe(trainer, NULL), UFORM_INVALID_ARGUMENT);
    uform_trainer_free(trainer);
    uform_mesh_free(mesh);
}

int main(void) {
    char folder[] = "/tmp/uform_test_describe_XXXXXX";
    if (!mkdtemp(folder)) {
        fprintf(stderr, "cannot make a temporary folder\n");
        return 1;
    }
    check_indexes(folder);
    check_dataset(folder);
    check_trainer_and_mesh();

    /* The design's request-shaped describe: a NULL request, and a request without a model. */
    CHECK_STATUS(uform_model_describe(NULL), UFORM_INVALID_ARGUMENT);
    uform_model_describe_t request;
    memset(&request, 0, sizeof request);
    CHECK_STATUS(uform_model_describe(&request), UFORM_INVALID_ARGUMENT);

    rmdir(folder);
    return check_finish();
}
