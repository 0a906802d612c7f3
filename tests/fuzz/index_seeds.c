/*
 * The index target's part of the replay driver (replay.h): small valid indexes of every scalar
 * kind (items of all four modalities, odd widths, an empty one) encoded in memory, the reader's
 * verdict on an input, and a focus on the JSON header, where the index's promises live.
 */
#include <stdio.h>
#include <stdlib.h>

#include "index/index.h"
#include "replay.h"

#define SEED_COUNT 6

const char *const replay_extension = ".index";

/* An index of `count` items (modality i % 4, or all text when `one_modality`) of `dims` columns. */
static int make_seed(replay_seed_t *seed, uform_scalar_kind_t scalar, size_t dims, size_t count, int one_modality) {
    size_t row_bytes = uform_scalar_row_bytes(scalar, dims), rows[4] = {0};
    uint8_t modality[16];
    int64_t offsets[17] = {0};
    char paths[16 * 8];
    size_t used = 0;
    for (size_t i = 0; i < count; ++i) {
        modality[i] = one_modality ? 0 : (uint8_t)(i % 4);
        rows[modality[i]] += 1;
        used += (size_t)sprintf(paths + used, "p%zu.x", i);
        offsets[i + 1] = (int64_t)used;
    }
    uint8_t *data[4];
    uint64_t shapes[7][2];
    uform__safetensors_source_t tensors[7];
    for (int m = 0; m < 4; ++m) {
        data[m] = malloc(rows[m] * row_bytes + 1);
        for (size_t b = 0; b < rows[m] * row_bytes; ++b) data[m][b] = (uint8_t)(0x3C + 7 * b + m); /* finite in every float kind */
        shapes[m][0] = rows[m], shapes[m][1] = scalar == UFORM_SCALAR_B1 ? row_bytes : dims;
        tensors[m] = (uform__safetensors_source_t){uform__index_tensor_name((uform_modality_t)m),
                                                   uform__index_scalar_dtype(scalar), 2, shapes[m], data[m]};
    }
    shapes[4][0] = count, shapes[5][0] = count + 1, shapes[6][0] = used;
    tensors[4] = (uform__safetensors_source_t){"items.modality", UFORM__SAFETENSORS_U8, 1, shapes[4], modality};
    tensors[5] = (uform__safetensors_source_t){"items.path_offsets", UFORM__SAFETENSORS_I64, 1, shapes[5], offsets};
    tensors[6] = (uform__safetensors_source_t){"items.paths", UFORM__SAFETENSORS_U8, 1, shapes[6], paths};
    char dims_text[16], count_text[16];
    snprintf(dims_text, sizeof dims_text, "%zu", dims);
    snprintf(count_text, sizeof count_text, "%zu", count);
    uform__safetensors_pair_t metadata[] = {{"uform.index.format", "1"},
                                            {"uform.index.fingerprint", "00112233445566778899aabbccddeeff"},
                                            {"uform.index.dims", dims_text},
                                            {"uform.index.scalar", uform__index_scalar_name(scalar)},
                                            {"uform.index.count", count_text},
                                            {"uform.cli.consumed", count_text}};
    uform__safetensors_write_t request = {tensors, 7, metadata, 6, NULL, NULL};
    uform_outcome_t outcome = {0};
    uform_status_t status = uform__safetensors_encode(&request, &seed->bytes, &seed->size, &outcome);
    for (int m = 0; m < 4; ++m) free(data[m]);
    if (status != UFORM_OK) fprintf(stderr, "seed: %s\n", outcome.message);
    return status == UFORM_OK;
}

size_t replay_seeds(replay_seed_t *seeds, size_t capacity) {
    if (capacity < SEED_COUNT) return 0;
    int ok = make_seed(&seeds[0], UFORM_SCALAR_F32, 5, 9, 0) && make_seed(&seeds[1], UFORM_SCALAR_BF16, 8, 6, 0) &&
             make_seed(&seeds[2], UFORM_SCALAR_I8, 13, 7, 0) && make_seed(&seeds[3], UFORM_SCALAR_B1, 11, 8, 0) &&
             make_seed(&seeds[4], UFORM_SCALAR_F16, 3, 4, 1) && make_seed(&seeds[5], UFORM_SCALAR_F32, 4, 0, 0);
    return ok ? SEED_COUNT : 0; /* the driver frees whatever was made */
}

int replay_accepts(const uint8_t *data, size_t size) {
    uform_index_t index = NULL;
    int ok = uform__index_open_memory(data, size, NULL, &index, NULL) == UFORM_OK;
    uform_index_free(index);
    return ok;
}

/* The length prefix and the JSON header after it (indexes here are small: two bytes of length). */
static size_t header_end(const uint8_t *bytes, size_t size) {
    if (size < 8) return size;
    size_t end = 8 + (size_t)(bytes[0] | bytes[1] << 8);
    return end < size ? end : size;
}

static const uint8_t interesting[] = {'"', '{', '}', '[', ']', ',', ':', '0', '1', '9', '-', ' ', 'a', 0x00, 0xFF};

const replay_hooks_t replay_hooks = {interesting, sizeof interesting, 0, header_end};
