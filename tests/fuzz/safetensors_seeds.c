/*
 * The safetensors target's part of the replay driver (replay.h): valid files to mutate, the
 * reader's verdict on an input, and a focus on the JSON header, where the file's promises live.
 */
#include <stdio.h>
#include <stdlib.h>

#include "io/safetensors.h"
#include "io/safetensors_sample.h"
#include "replay.h"

#define SEED_COUNT 4

const char *const replay_extension = ".safetensors";

/* Valid files to mutate: the full sample, one without metadata, a single scalar, and "{}". */
size_t replay_seeds(replay_seed_t *seeds, size_t capacity) {
    sample_t sample;
    if (capacity < SEED_COUNT || !sample_make(&sample, 1, 1)) return 0;
    uform__safetensors_write_t requests[SEED_COUNT] = {sample.request, sample.request, sample.request, {0}};
    requests[1].metadata_count = 0;
    requests[2].tensor_count = 1;
    requests[2].tensors = &sample.sources[3]; /* logit_scale, an F64 scalar */
    requests[2].metadata_count = 1;
    size_t made = 0;
    for (; made < SEED_COUNT; ++made) {
        uform_outcome_t outcome = {0};
        if (uform__safetensors_encode(&requests[made], &seeds[made].bytes, &seeds[made].size, &outcome) != UFORM_OK) {
            fprintf(stderr, "seed %zu: %s\n", made, outcome.message);
            break;
        }
    }
    sample_free(&sample);
    if (made == SEED_COUNT) return made;
    while (made) free(seeds[--made].bytes);
    return 0;
}

int replay_accepts(const uint8_t *data, size_t size) {
    uform__safetensors_t *file = NULL;
    int ok = uform__safetensors_open_memory(data, size, &file, NULL) == UFORM_OK;
    uform__safetensors_close(file);
    return ok;
}

/* The 8-byte little-endian length prefix and the header after it; edits there reach the parser. */
static size_t header_end(const uint8_t *bytes, size_t size) {
    if (size < 8) return size;
    size_t end = 8 + (size_t)(bytes[0] | bytes[1] << 8 | bytes[2] << 16);
    return end < size ? end : size;
}

static const uint8_t interesting[] = {'"', '{', '}', '[', ']', ',', ':', '0', '9', '-', '.', 'e',
                                      ' ', '\\', 'u', 0x00, 0x7F, 0x80, 0xC3, 0xFF};

const replay_hooks_t replay_hooks = {interesting, sizeof interesting, 0, header_end};
