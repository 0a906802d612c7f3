/*
 * A driver for the index fuzz target without libFuzzer, so a gcc build exercises it too:
 *
 *     fuzz_index_replay [--rounds N] [--seed S]   mutates valid indexes N times (default 5000)
 *     fuzz_index_replay --seeds DIR               writes the valid seed indexes into DIR
 *     fuzz_index_replay FILE...                   replays files (a libFuzzer crash, a corpus)
 *
 * Seeds are small valid indexes of every scalar kind (items of all four modalities, odd widths,
 * an empty one), encoded in memory. Mutations flip, overwrite, insert and delete bytes, mostly in
 * the JSON header where the index's promises live, and truncate. Each input is copied into an
 * allocation of exactly its size, so AddressSanitizer builds catch any over-read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "index/index.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SEED_COUNT 6

typedef struct seed_t {
    uint8_t *bytes;
    size_t size;
} seed_t;

static uint64_t next(uint64_t *state) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return *state >> 11;
}

/* An index of `count` items (modality i % 4, or all text when `one_modality`) of `dims` columns. */
static int make_seed(seed_t *seed, uform_scalar_kind_t scalar, size_t dims, size_t count, int one_modality) {
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

static int make_seeds(seed_t seeds[SEED_COUNT]) {
    return make_seed(&seeds[0], UFORM_SCALAR_F32, 5, 9, 0) && make_seed(&seeds[1], UFORM_SCALAR_BF16, 8, 6, 0) &&
           make_seed(&seeds[2], UFORM_SCALAR_I8, 13, 7, 0) && make_seed(&seeds[3], UFORM_SCALAR_B1, 11, 8, 0) &&
           make_seed(&seeds[4], UFORM_SCALAR_F16, 3, 4, 1) && make_seed(&seeds[5], UFORM_SCALAR_F32, 4, 0, 0);
}

static void run_one(const uint8_t *bytes, size_t size) {
    uint8_t *exact = malloc(size ? size : 1);
    if (!exact) exit(1);
    if (size) memcpy(exact, bytes, size);
    LLVMFuzzerTestOneInput(size ? exact : NULL, size);
    free(exact);
}

/* One to four edits: a bit flip, an interesting byte, an inserted or deleted byte, a truncation,
 * three in four of them inside the JSON header. */
static size_t mutate(uint8_t *buffer, size_t size, size_t capacity, uint64_t *state) {
    static const uint8_t interesting[] = {'"', '{', '}', '[', ']', ',', ':', '0', '1', '9', '-', ' ', 'a', 0x00, 0xFF};
    size_t header_end = size >= 8 ? 8 + (size_t)(buffer[0] | buffer[1] << 8) : size;
    if (header_end > size) header_end = size;
    int edits = 1 + (int)(next(state) % 4);
    for (int edit = 0; edit < edits && size; ++edit) {
        uint64_t draw = next(state);
        if (header_end > size) header_end = size;
        size_t limit = (draw & 3) && header_end > 8 ? header_end : size;
        size_t at = (size_t)((draw >> 4) % limit);
        uint8_t value = interesting[(draw >> 24) % sizeof interesting];
        switch ((draw >> 32) % 5) {
        case 0: buffer[at] ^= (uint8_t)(1u << ((draw >> 40) % 8)); break;
        case 1: buffer[at] = value; break;
        case 2: if (draw >> 50 & 1) size = at; break;
        case 3: memmove(buffer + at, buffer + at + 1, size - at - 1), --size; break;
        default:
            if (size < capacity) memmove(buffer + at + 1, buffer + at, size - at), buffer[at] = value, ++size;
            break;
        }
    }
    return size;
}

int main(int argc, char **argv) {
    long rounds = 5000;
    uint64_t state = 20261130;
    const char *seed_directory = NULL;
    int files = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = strtol(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) state = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--seeds") && i + 1 < argc) seed_directory = argv[++i];
        else {
            FILE *stream = fopen(argv[i], "rb");
            if (!stream) return fprintf(stderr, "cannot open %s: %s\n", argv[i], strerror(errno)), 1;
            static uint8_t bytes[1 << 22];
            size_t got = fread(bytes, 1, sizeof bytes, stream);
            fclose(stream);
            run_one(bytes, got);
            printf("replayed %s (%zu bytes)\n", argv[i], got);
            ++files;
        }
    }
    if (files) return 0;
    seed_t seeds[SEED_COUNT];
    if (!make_seeds(seeds)) return 1;
    if (seed_directory) {
        mkdir(seed_directory, 0755);
        for (int i = 0; i < SEED_COUNT; ++i) {
            char path[4096];
            snprintf(path, sizeof path, "%s/seed-%d.index", seed_directory, i);
            FILE *stream = fopen(path, "wb");
            if (!stream || fwrite(seeds[i].bytes, 1, seeds[i].size, stream) != seeds[i].size) return 1;
            fclose(stream);
        }
        printf("wrote %d seeds into %s\n", SEED_COUNT, seed_directory);
        return 0;
    }
    for (int i = 0; i < SEED_COUNT; ++i) { /* the seeds must be accepted, or mutations test nothing */
        uform_index_t index = NULL;
        uform_outcome_t outcome = {0};
        if (uform__index_open_memory(seeds[i].bytes, seeds[i].size, NULL, &index, &outcome) != UFORM_OK)
            return fprintf(stderr, "seed %d is refused: %s\n", i, outcome.message), 1;
        uform_index_free(index);
        run_one(seeds[i].bytes, seeds[i].size);
    }
    size_t capacity = 0, accepted = 0;
    for (int i = 0; i < SEED_COUNT; ++i)
        if (seeds[i].size > capacity) capacity = seeds[i].size;
    capacity += 64;
    uint8_t *buffer = malloc(capacity);
    for (long round = 0; round < rounds; ++round) {
        const seed_t *base = &seeds[next(&state) % SEED_COUNT];
        memcpy(buffer, base->bytes, base->size);
        size_t size = mutate(buffer, base->size, capacity, &state);
        run_one(buffer, size);
        uform_index_t index = NULL;
        if (uform__index_open_memory(buffer, size, NULL, &index, NULL) == UFORM_OK) ++accepted;
        uform_index_free(index);
    }
    printf("%ld mutated indexes replayed, %zu accepted, no crash\n", rounds, accepted);
    free(buffer);
    for (int i = 0; i < SEED_COUNT; ++i) free(seeds[i].bytes);
    return 0;
}
