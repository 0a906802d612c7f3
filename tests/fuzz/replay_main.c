/*
 * The replay driver of replay.h: mutations of the kinds libFuzzer makes (bit flips, interesting
 * bytes, truncation, deleted and inserted runs, a block copied elsewhere) from a fixed seed, each
 * input in an allocation of exactly its size so that AddressSanitizer sees any over-read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "replay.h"

#define SEED_CAPACITY 16

static uint64_t next(uint64_t *state) { /* splitmix64 */
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
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

/* One to four edits of the kinds a fuzzer makes, at or after the target's kept prefix, three in four
 * inside its focus when it names one. */
static size_t mutate(uint8_t *buffer, size_t size, size_t capacity, uint64_t *state) {
    static const uint8_t fallback[] = {'"', '{', '}', '[', ']', ',', ':', '0', '9', '-', '.', 'e', ' ', '\\',
                                       '\n', 'u', '/', 0x00, 0x7F, 0x80, 0xC3, 0xFF, 'x', 'L', '5'};
    const replay_hooks_t *hooks = &replay_hooks; /* NULL where the target defines none */
    const uint8_t *interesting = hooks && hooks->interesting ? hooks->interesting : fallback;
    size_t interesting_count = hooks && hooks->interesting ? hooks->interesting_count : sizeof fallback;
    size_t kept = hooks ? hooks->kept_prefix : 0;
    size_t focus = hooks && hooks->focus_end ? hooks->focus_end(buffer, size) : size;
    int edits = 1 + (int)(next(state) % 4);
    for (int edit = 0; edit < edits && size > kept; ++edit) {
        uint64_t draw = next(state);
        if (focus > size) focus = size;
        size_t end = (draw & 3) && focus > kept ? focus : size; /* the focus is the whole input by default */
        size_t at = kept + (size_t)((draw >> 8) % (end - kept));
        uint8_t value = interesting[(draw >> 40) % interesting_count];
        switch ((draw >> 4) % 7) {
        case 0: buffer[at] ^= (uint8_t)(1u << ((draw >> 40) % 8)); break;
        case 1: buffer[at] = value; break;
        case 2: size = at; break;
        case 3: {
            size_t length = 1 + (size_t)((draw >> 40) % 16);
            if (length > size - at) length = size - at;
            memmove(buffer + at, buffer + at + length, size - at - length);
            size -= length;
            break;
        }
        case 4:
            if (size < capacity) {
                memmove(buffer + at + 1, buffer + at, size - at);
                buffer[at] = value;
                ++size;
            }
            break;
        case 5: buffer[at] = (uint8_t)(draw >> 48); break;
        default: { /* copy a block over another place */
            size_t from = kept + (size_t)((draw >> 24) % (size - kept)), length = 1 + (size_t)((draw >> 40) % 32);
            if (length > size - from) length = size - from;
            if (length > size - at) length = size - at;
            memmove(buffer + at, buffer + from, length);
            break;
        }
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
    size_t got = bytes && length > 0 ? fread(bytes, 1, (size_t)length, stream) : 0;
    fclose(stream);
    if (!bytes || got != (size_t)(length > 0 ? length : 0)) {
        fprintf(stderr, "cannot read %s\n", path);
        free(bytes);
        return 1;
    }
    run_one(bytes, got);
    free(bytes);
    printf("replayed %s (%zu bytes)\n", path, got);
    return 0;
}

static int write_seeds(const char *directory, const replay_seed_t *seeds, size_t count) {
    mkdir(directory, 0755);
    for (size_t index = 0; index < count; ++index) {
        char path[4096];
        snprintf(path, sizeof path, "%s/seed-%zu%s", directory, index, replay_extension);
        FILE *stream = fopen(path, "wb");
        int ok = stream && fwrite(seeds[index].bytes, 1, seeds[index].size, stream) == seeds[index].size;
        if (stream) ok &= fclose(stream) == 0;
        if (!ok) {
            fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
            return 1;
        }
    }
    printf("wrote %zu seeds into %s\n", count, directory);
    return 0;
}

int main(int argc, char **argv) {
    long rounds = 5000;
    uint64_t seed = 20261206;
    const char *seed_directory = NULL;
    int files = 0, failures = 0;
    for (int index = 1; index < argc; ++index) {
        if (!strcmp(argv[index], "--rounds") && index + 1 < argc) rounds = strtol(argv[++index], NULL, 0);
        else if (!strcmp(argv[index], "--seed") && index + 1 < argc) seed = strtoull(argv[++index], NULL, 0);
        else if (!strcmp(argv[index], "--seeds") && index + 1 < argc) seed_directory = argv[++index];
        else ++files, failures += replay_file(argv[index]);
    }
    if (files) return failures ? 1 : 0;

    replay_seed_t seeds[SEED_CAPACITY] = {{0}};
    size_t count = replay_seeds(seeds, SEED_CAPACITY);
    int status = 0;
    if (!count) fprintf(stderr, "cannot make the seeds\n"), status = 1;
    /* The seeds themselves must be accepted, or the mutations test nothing. */
    for (size_t index = 0; index < count && !status; ++index)
        if (!replay_accepts(seeds[index].bytes, seeds[index].size))
            fprintf(stderr, "seed %zu (%zu bytes) is refused\n", index, seeds[index].size), status = 1;
        else run_one(seeds[index].bytes, seeds[index].size); /* the target's checks of an accepted input */
    if (!status && seed_directory) status = write_seeds(seed_directory, seeds, count);
    if (!status && !seed_directory) {
        printf("seed %llu, %ld rounds over %zu seeds\n", (unsigned long long)seed, rounds, count);
        size_t capacity = 0;
        for (size_t index = 0; index < count; ++index)
            if (seeds[index].size > capacity) capacity = seeds[index].size;
        capacity += 64;
        uint8_t *buffer = malloc(capacity);
        uint64_t state = seed;
        size_t accepted = 0;
        for (long round = 0; buffer && round < rounds; ++round) {
            const replay_seed_t *base = &seeds[next(&state) % count];
            memcpy(buffer, base->bytes, base->size);
            size_t size = mutate(buffer, base->size, capacity, &state);
            run_one(buffer, size);
            if (round % 8 == 0) accepted += (size_t)replay_accepts(buffer, size);
        }
        if (!buffer) status = 1;
        free(buffer);
        printf("%ld inputs replayed, %zu of every 8th accepted, no crash\n", rounds, accepted);
    }
    for (size_t index = 0; index < SEED_CAPACITY; ++index) free(seeds[index].bytes); /* those made, even on failure */
    return status;
}
