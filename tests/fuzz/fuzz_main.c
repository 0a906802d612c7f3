/*
 * A driver for the fuzz targets without libFuzzer, so a gcc build exercises them too:
 *
 *     fuzz_safetensors_replay [--rounds N] [--seed S]   mutates valid files N times (default 5000)
 *     fuzz_safetensors_replay --seeds DIR               writes the valid seed files into DIR
 *     fuzz_safetensors_replay FILE...                   replays files (a libFuzzer crash, a corpus)
 *
 * Each input is copied into an allocation of exactly its size, so AddressSanitizer builds catch
 * any over-read. A broken promise traps inside the target, which fails the test.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/safetensors.h"
#include "io/safetensors_sample.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SEED_COUNT 4

typedef struct seed_t {
    uint8_t *bytes;
    size_t size;
} seed_t;

/* Valid files to mutate: the full sample, one without metadata, a single scalar, and "{}". */
static int make_seeds(seed_t seeds[SEED_COUNT]) {
    sample_t sample;
    if (!sample_make(&sample, 1, 1)) return 0;
    uform__safetensors_write_t requests[SEED_COUNT] = {sample.request, sample.request, sample.request, {0}};
    requests[1].metadata_count = 0;
    requests[2].tensor_count = 1;
    requests[2].tensors = &sample.sources[3]; /* logit_scale, an F64 scalar */
    requests[2].metadata_count = 1;
    for (int index = 0; index < SEED_COUNT; ++index) {
        uform_outcome_t outcome = {0};
        if (uform__safetensors_encode(&requests[index], &seeds[index].bytes, &seeds[index].size, &outcome) != UFORM_OK) {
            fprintf(stderr, "seed %d: %s\n", index, outcome.message);
            return 0;
        }
    }
    sample_free(&sample);
    return 1;
}

static void run_one(const uint8_t *bytes, size_t size) {
    uint8_t *exact = malloc(size ? size : 1);
    if (!exact) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    if (size) memcpy(exact, bytes, size);
    LLVMFuzzerTestOneInput(size ? exact : NULL, size);
    free(exact);
}

/* One to four edits of the kinds a fuzzer makes, most of them inside the header. */
static size_t mutate(uint8_t *buffer, size_t size, size_t capacity, uint64_t *state) {
    static const uint8_t interesting[] = {'"', '{', '}', '[', ']', ',', ':', '0', '9', '-', '.', 'e',
                                          ' ', '\\', 'u', 0x00, 0x7F, 0x80, 0xC3, 0xFF};
    size_t header_end = size >= 8 ? 8 + (size_t)(buffer[0] | buffer[1] << 8 | buffer[2] << 16) : size;
    if (header_end > size) header_end = size;
    int edits = 1 + (int)(sample_next(state) % 4);
    for (int edit = 0; edit < edits && size; ++edit) {
        uint64_t draw = sample_next(state);
        size_t limit = draw & 1 || header_end == 0 || header_end > size ? size : header_end;
        size_t at = (size_t)((draw >> 8) % limit);
        switch ((draw >> 4) % 6) {
        case 0: buffer[at] ^= (uint8_t)(1u << ((draw >> 40) % 8)); break;
        case 1: buffer[at] = interesting[(draw >> 40) % sizeof interesting]; break;
        case 2: size = at; break; /* truncate */
        case 3: /* delete a short run */
        {
            size_t length = 1 + (size_t)((draw >> 40) % 8);
            if (length > size - at) length = size - at;
            memmove(buffer + at, buffer + at + length, size - at - length);
            size -= length;
            break;
        }
        case 4: /* insert a byte */
            if (size < capacity) {
                memmove(buffer + at + 1, buffer + at, size - at);
                buffer[at] = interesting[(draw >> 40) % sizeof interesting];
                ++size;
            }
            break;
        default: /* change one byte of the length prefix */
            if (size >= 8) buffer[(draw >> 40) % 8] = (uint8_t)(draw >> 48);
            break;
        }
    }
    return size;
}

static int replay_file(const char *path) {
    FILE *stream = fopen(path, "rb");
    if (!stream) {
        fprintf(stderr, "cannot open %s: %s\n", path, strerror(errno));
        return 1;
    }
    fseek(stream, 0, SEEK_END);
    long length = ftell(stream);
    fseek(stream, 0, SEEK_SET);
    uint8_t *bytes = malloc(length > 0 ? (size_t)length : 1);
    size_t got = bytes ? fread(bytes, 1, (size_t)length, stream) : 0;
    fclose(stream);
    if (!bytes || got != (size_t)length) {
        fprintf(stderr, "cannot read %s\n", path);
        free(bytes);
        return 1;
    }
    run_one(bytes, got);
    free(bytes);
    printf("replayed %s (%zu bytes)\n", path, got);
    return 0;
}

int main(int argc, char **argv) {
    long rounds = 5000;
    uint64_t seed = 20260101;
    const char *seed_directory = NULL;
    int files = 0, failures = 0;
    for (int index = 1; index < argc; ++index) {
        if (!strcmp(argv[index], "--rounds") && index + 1 < argc) rounds = strtol(argv[++index], NULL, 0);
        else if (!strcmp(argv[index], "--seed") && index + 1 < argc) seed = strtoull(argv[++index], NULL, 0);
        else if (!strcmp(argv[index], "--seeds") && index + 1 < argc) seed_directory = argv[++index];
        else {
            ++files;
            failures += replay_file(argv[index]);
        }
    }
    if (files) return failures ? 1 : 0;

    seed_t seeds[SEED_COUNT];
    if (!make_seeds(seeds)) return 1;
    if (seed_directory) {
        mkdir(seed_directory, 0755);
        for (int index = 0; index < SEED_COUNT; ++index) {
            char path[4096];
            snprintf(path, sizeof path, "%s/seed-%d.safetensors", seed_directory, index);
            FILE *stream = fopen(path, "wb");
            if (!stream || fwrite(seeds[index].bytes, 1, seeds[index].size, stream) != seeds[index].size) {
                fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
                return 1;
            }
            fclose(stream);
        }
        printf("wrote %d seeds into %s\n", SEED_COUNT, seed_directory);
        return 0;
    }

    /* The seeds themselves must be accepted, or the mutations test nothing. */
    for (int index = 0; index < SEED_COUNT; ++index) {
        uform__safetensors_t *file = NULL;
        uform_outcome_t outcome = {0};
        if (uform__safetensors_open_memory(seeds[index].bytes, seeds[index].size, &file, &outcome) != UFORM_OK) {
            fprintf(stderr, "seed %d is refused: %s\n", index, outcome.message);
            return 1;
        }
        uform__safetensors_close(file);
    }
    printf("seed %llu, %ld rounds\n", (unsigned long long)seed, rounds);
    uint64_t state = seed;
    size_t capacity = 0;
    for (int index = 0; index < SEED_COUNT; ++index)
        if (seeds[index].size > capacity) capacity = seeds[index].size;
    capacity += 64;
    uint8_t *buffer = malloc(capacity);
    size_t accepted = 0;
    for (long round = 0; round < rounds; ++round) {
        const seed_t *base = &seeds[sample_next(&state) % SEED_COUNT];
        memcpy(buffer, base->bytes, base->size);
        size_t size = mutate(buffer, base->size, capacity, &state);
        run_one(buffer, size);
        uform__safetensors_t *file = NULL;
        if (uform__safetensors_open_memory(buffer, size, &file, NULL) == UFORM_OK) ++accepted;
        uform__safetensors_close(file);
    }
    printf("%ld inputs replayed, %zu accepted, no crash\n", rounds, accepted);
    free(buffer);
    for (int index = 0; index < SEED_COUNT; ++index) free(seeds[index].bytes);
    return 0;
}
