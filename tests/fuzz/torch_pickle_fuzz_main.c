/*
 * A driver for the PyTorch reader's fuzz target without libFuzzer, so a gcc build exercises it:
 *
 *     fuzz_torch_replay [--rounds N] [--seed S]   mutates valid inputs N times (default 5000)
 *     fuzz_torch_replay --seeds DIR               writes the valid seed inputs into DIR
 *     fuzz_torch_replay FILE...                   replays files (a libFuzzer crash, a corpus)
 *
 * Seeds (torch_pickle_fuzz.c's input format: a mode byte, then an archive or a raw pickle) are
 * state-dict pickles in protocols 2 and 4, archives of three layouts and a legacy-format file, built in memory by
 * tests/io/torch_sample.h. Mutations flip, overwrite with opcode bytes, insert, delete, copy runs
 * within the input and truncate. Each input is copied into an allocation of exactly its size, so
 * AddressSanitizer builds catch any over-read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/torch_file.h"
#include "io/torch_sample.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SEED_COUNT 7

static uint64_t next(uint64_t *state) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return *state >> 11;
}

/* A protocol 4 pickle: FRAME, MEMOIZE, STACK_GLOBAL, NEWOBJ, memo reads, a nested dict. */
static void protocol4_pickle(sample_bytes_t *pickle) {
    sample_bytes_t body = {0};
    SAMPLE_LITERAL(&body, "}\x94(\x8c\x01" "a");
    pickle_vector(&body, "0", 24, 0, 3);
    SAMPLE_LITERAL(&body, "\x94\x8c\x01" "b\x68\x01\x8c\x02od\x8c\x0b" "collections\x8c\x0bOrderedDict\x93)\x81(\x8c\x01x");
    pickle_vector(&body, "0", 24, 4, 2);
    SAMPLE_LITERAL(&body, "uu.");
    SAMPLE_LITERAL(pickle, "\x80\x04\x95");
    sample_le(pickle, body.size, 8);
    sample_put(pickle, body.data, body.size);
    free(body.data);
}

static void make_seeds(sample_bytes_t seeds[SEED_COUNT]) {
    sample_bytes_t state = {0}, modern = {0};
    sample_state_pickle(&state);
    protocol4_pickle(&modern);
    const sample_zip_options_t layouts[3] = {{0, 0, NULL}, {1, 0, NULL}, {0, 1, "comment"}};
    for (int index = 0; index < SEED_COUNT; ++index) {
        memset(&seeds[index], 0, sizeof seeds[index]);
        sample_byte(&seeds[index], (uint8_t)(index < 2 ? 1 : 0)); /* odd: a raw pickle */
        if (index < 2) {
            const sample_bytes_t *pickle = index ? &modern : &state;
            sample_put(&seeds[index], pickle->data, pickle->size);
        } else if (index == 6) {
            sample_legacy(&seeds[index], NULL, 0);
        } else {
            sample_archive(&seeds[index], index == 5 ? &modern : &state, layouts[index < 5 ? index - 2 : 0]);
        }
    }
    free(state.data);
    free(modern.data);
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

/* One to four edits of the kinds a fuzzer makes; byte 0 (the mode) is left alone. */
static size_t mutate(uint8_t *buffer, size_t size, size_t capacity, uint64_t *state) {
    static const uint8_t interesting[] = {'(', ')', '}', ']', 't', 'u', 's', 'a', 'e', 'd', 'l', 'R', 'b', 'Q', 'h', 'q',
                                          'j', 'r', '0', '1', '2', 'N', 'K', 'J', 'M', 'X', 'C', 'G', '.', '\n', 0x80,
                                          0x81, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x8c, 0x8d, 0x8f, 0x93, 0x94, 0x95,
                                          0x00, 0x01, 0x7f, 0xff, 'P', 'K', 0x05, 0x06};
    int edits = 1 + (int)(next(state) % 4);
    for (int edit = 0; edit < edits && size > 1; ++edit) {
        uint64_t draw = next(state);
        size_t at = 1 + (size_t)((draw >> 8) % (size - 1));
        switch ((draw >> 4) % 7) {
        case 0: buffer[at] ^= (uint8_t)(1u << ((draw >> 40) % 8)); break;
        case 1: buffer[at] = interesting[(draw >> 40) % sizeof interesting]; break;
        case 2: size = at; break; /* truncate */
        case 3: { /* delete a short run */
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
        case 5: { /* copy a run from elsewhere over this place */
            size_t from = 1 + (size_t)((draw >> 24) % (size - 1)), length = 1 + (size_t)((draw >> 40) % 16);
            if (length > size - at) length = size - at;
            if (length > size - from) length = size - from;
            memmove(buffer + at, buffer + from, length);
            break;
        }
        default: /* a small integer somewhere: sizes, counts, memo slots */
            buffer[at] = (uint8_t)((draw >> 40) % 5);
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

/* 1 when the reader accepts input `bytes` (the mode byte first). */
static int accepted(const uint8_t *bytes, size_t size) {
    sample_bytes_t archive = {0};
    const uint8_t *data = bytes + 1;
    size_t length = size - 1;
    if (bytes[0] & 1) {
        sample_bytes_t pickle = {(uint8_t *)(uintptr_t)(bytes + 1), size - 1, size - 1};
        sample_archive(&archive, &pickle, (sample_zip_options_t){0});
        data = archive.data;
        length = archive.size;
    }
    uform__torch_file_t *file = NULL;
    int ok = uform__torch_open_memory(data, length, &file, NULL) == UFORM_OK;
    uform__torch_close(file);
    free(archive.data);
    return ok;
}

int main(int argc, char **argv) {
    long rounds = 5000;
    uint64_t seed = 20260301;
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

    sample_bytes_t seeds[SEED_COUNT];
    make_seeds(seeds);
    if (seed_directory) {
        mkdir(seed_directory, 0755);
        for (int index = 0; index < SEED_COUNT; ++index) {
            char path[4096];
            snprintf(path, sizeof path, "%s/seed-%d.bin", seed_directory, index);
            FILE *stream = fopen(path, "wb");
            if (!stream || fwrite(seeds[index].data, 1, seeds[index].size, stream) != seeds[index].size) {
                fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
                return 1;
            }
            fclose(stream);
        }
        printf("wrote %d seeds into %s\n", SEED_COUNT, seed_directory);
        for (int index = 0; index < SEED_COUNT; ++index) free(seeds[index].data);
        return 0;
    }
    /* The seeds themselves must be accepted, or the mutations test nothing. */
    for (int index = 0; index < SEED_COUNT; ++index) {
        if (!accepted(seeds[index].data, seeds[index].size)) {
            fprintf(stderr, "seed %d is refused\n", index);
            return 1;
        }
        run_one(seeds[index].data, seeds[index].size);
    }
    printf("seed %llu, %ld rounds\n", (unsigned long long)seed, rounds);
    uint64_t state = seed;
    size_t capacity = 0;
    for (int index = 0; index < SEED_COUNT; ++index)
        if (seeds[index].size > capacity) capacity = seeds[index].size;
    capacity += 64;
    uint8_t *buffer = malloc(capacity);
    size_t accepted_count = 0;
    for (long round = 0; round < rounds; ++round) {
        const sample_bytes_t *base = &seeds[next(&state) % SEED_COUNT];
        memcpy(buffer, base->data, base->size);
        size_t size = mutate(buffer, base->size, capacity, &state);
        run_one(buffer, size);
        accepted_count += (size_t)accepted(buffer, size);
    }
    printf("%ld inputs replayed, %zu accepted, no crash\n", rounds, accepted_count);
    free(buffer);
    for (int index = 0; index < SEED_COUNT; ++index) free(seeds[index].data);
    return 0;
}
