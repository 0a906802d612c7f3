/*
 * Streaming shards keeps memory bounded: a loader draws one epoch of SAMPLES samples of ~1 MiB each
 * (make_big_shards.py: 2,000 of them, 2 GB in 20 shards) with a shuffle buffer of 64 and batches of
 * 16, and the process's peak resident set must stay under the bound docs/data.md states —
 * shuffle_buffer × sample + (ahead + 1) × batch × (sample + decoded rows), here 64 MiB + 2 × 16 MiB,
 * plus the process's own ~100 MiB: 256 MiB — not grow with the data (it would need 2 GB to hold it).
 * Usage: test_data_stream_memory SHARD_LIST SAMPLES
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "common/check.h"
#include "uform/uform.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_data_stream_memory SHARD_LIST SAMPLES\n");
        return 2;
    }
    size_t samples = strtoull(argv[2], NULL, 10);
    uform_dataset_options_t options = {0};
    options.source = UFORM_DATASET_SHARDS, options.path = argv[1], options.shuffle_buffer = 64, options.seed = 1;
    uform_dataset_t dataset = NULL;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform_dataset_open(&options, &dataset, NULL, &outcome), UFORM_OK);
    uform_trainer_config_t config = {0};
    config.hidden = 32, config.depth = 1, config.heads = 2, config.mlp = 64, config.embedding = 16, config.text_bytes = 16;
    config.image_size = 32, config.image_patch = 16, config.modalities = 1u << UFORM_MODALITY_TEXT | 1u << UFORM_MODALITY_IMAGE;
    uform_trainer_t trainer = NULL;
    CHECK_STATUS(uform_trainer_init_ram(NULL, &config, &trainer, &outcome), UFORM_OK);
    uform_loader_options_t loader_options = {0};
    loader_options.dataset = dataset, loader_options.trainer = trainer, loader_options.batch = 16, loader_options.ahead = 1;
    uform_loader_t loader = NULL;
    CHECK_STATUS(uform_loader_open(&loader_options, &loader, &outcome), UFORM_OK);
    size_t drawn = 0;
    while (loader && drawn < samples) {
        uform_trainer_step_t step = {0};
        uform_loader_next_t next = {0};
        next.loader = loader, next.step = &step;
        if (uform_loader_next(&next) != UFORM_OK) {
            CHECK_MSG(0, "batch after %zu samples: %s", drawn, next.outcome.message);
            break;
        }
        drawn += next.samples;
    }
    uform_loader_stats_t stats;
    uform_loader_stats(loader, &stats, NULL, 0, NULL);
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    double peak = (double)usage.ru_maxrss / 1024.0, read = (double)stats.bytes_read / (1024.0 * 1024.0);
    printf("%zu samples, %.0f MiB of members read in %.1f s, %.1f s decoding; peak RSS %.0f MiB\n", drawn, read,
           stats.read_seconds, stats.decode_seconds, peak);
    CHECK_EQ_INT(drawn, samples);
    CHECK_MSG(read > 0.9 * (double)samples, "%.0f MiB read for %zu samples of ~1 MiB", read, samples);
    CHECK_MSG(peak < 256.0, "peak RSS %.0f MiB, above the 256 MiB bound", peak);
    uform_loader_free(loader);
    uform_trainer_free(trainer);
    uform_dataset_free(dataset);
    return check_finish();
}
