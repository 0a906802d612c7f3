/*
 * The order in which a loader hands out a dataset's samples, for test_data_order.py to compare with
 * its own computation of the documented epoch orders (docs/data.md, "The epoch orders, exactly").
 *
 * usage: data_order manifest|shards PATH SEED BATCH BATCHES [SHUFFLE_BUFFER]
 * Prints each batch's captions, one a line, and "--" after each batch. Exits 1 on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uform/uform.h"

static int fail(const char *what, const uform_outcome_t *outcome) {
    fprintf(stderr, "data_order: %s: %s\n", what, outcome->message);
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: data_order manifest|shards PATH SEED BATCH BATCHES [SHUFFLE_BUFFER]\n");
        return 1;
    }
    uform_dataset_options_t options = {0};
    options.source = strcmp(argv[1], "shards") == 0 ? UFORM_DATASET_SHARDS : UFORM_DATASET_MANIFEST;
    options.path = argv[2], options.seed = strtoull(argv[3], NULL, 10);
    options.shuffle_buffer = argc > 6 ? strtoull(argv[6], NULL, 10) : 0;
    size_t batch = strtoull(argv[4], NULL, 10), batches = strtoull(argv[5], NULL, 10);
    uform_outcome_t outcome = {0};
    uform_data_error_t error;
    uform_dataset_t dataset = NULL;
    if (uform_dataset_open(&options, &dataset, &error, &outcome) != UFORM_OK) return fail("open", &outcome);

    /* The smallest trainer that takes text-image pairs: the loader prepares batches for it. */
    uform_trainer_config_t config = {0};
    config.hidden = 64, config.depth = 1, config.heads = 2, config.mlp = 128, config.embedding = 32;
    config.image_size = 32, config.image_patch = 8;
    config.modalities = 1u << UFORM_MODALITY_TEXT | 1u << UFORM_MODALITY_IMAGE;
    config.seed = 1, config.warmup_steps = 1;
    uform_trainer_t trainer = NULL;
    if (uform_trainer_init_ram(NULL, &config, &trainer, &outcome) != UFORM_OK) return fail("trainer", &outcome);

    uform_loader_options_t loader_options = {0};
    loader_options.dataset = dataset, loader_options.trainer = trainer, loader_options.batch = batch;
    loader_options.members = 1, loader_options.ahead = 1;
    uform_loader_t loader = NULL;
    if (uform_loader_open(&loader_options, &loader, &outcome) != UFORM_OK) return fail("loader", &outcome);

    int status = 0;
    for (size_t b = 0; b < batches && status == 0; ++b) {
        uform_trainer_step_t step = {0};
        uform_loader_next_t next = {0};
        next.loader = loader, next.step = &step;
        if (uform_loader_next(&next) != UFORM_OK) status = fail("next", &next.outcome);
        else if (next.done) status = fail("next: the loader ended", &next.outcome);
        for (size_t c = 0; status == 0 && c < step.contents.count; ++c)
            if (step.modalities[c] == UFORM_MODALITY_TEXT)
                printf("%.*s\n", (int)(step.contents.offsets[c + 1] - step.contents.offsets[c]),
                       (const char *)step.contents.data + step.contents.offsets[c]);
        if (status == 0) printf("--\n");
    }
    uform_loader_free(loader);
    uform_trainer_free(trainer);
    uform_dataset_free(dataset);
    return status;
}
