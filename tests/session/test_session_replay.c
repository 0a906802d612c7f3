/*
 * Replays the fuzz target's entry point (tests/fuzz/session_compile_fuzz.c) on several thousand
 * deterministic mutations of valid builder-made programs, so builds without libFuzzer (gcc CI)
 * exercise the same paths: truncation at every byte, bit flips, special bytes, rewritten u32
 * fields, inserted and deleted bytes, and splices of two programs. A crash, sanitizer report or
 * trap fails the test. With `--corpus DIR` it writes the valid programs into DIR instead (the
 * fuzzer's seed corpus).
 */
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "session/programs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SEEDS 36

typedef struct seed_t {
    unsigned char *bytes;
    size_t length;
} seed_t;

int main(int argc, char **argv) {
    uint64_t rng = 0x5E55104ull;
    seed_t seeds[SEEDS];
    for (int i = 0; i < SEEDS; ++i) {
        uform_program_builder_t builder = NULL;
        CHECK_STATUS(uform_program_builder_init(&builder), UFORM_SESSION_OK);
        CHECK(program_template(builder, (unsigned)i, &rng));
        const void *bytes = NULL;
        size_t length = 0;
        CHECK_STATUS(uform_program_builder_finish(builder, &bytes, &length), UFORM_SESSION_OK);
        seeds[i].bytes = (unsigned char *)malloc(length);
        memcpy(seeds[i].bytes, bytes, length);
        seeds[i].length = length;
        uform_program_builder_free(builder);
    }
    if (argc > 2 && strcmp(argv[1], "--corpus") == 0) {
        mkdir(argv[2], 0755);
        for (int i = 0; i < SEEDS; ++i) {
            char path[4096];
            snprintf(path, sizeof path, "%s/seed_%02d", argv[2], i);
            FILE *file = fopen(path, "wb");
            CHECK(file != NULL);
            if (file) {
                CHECK(fwrite(seeds[i].bytes, 1, seeds[i].length, file) == seeds[i].length);
                fclose(file);
            }
        }
        return check_finish();
    }
    printf("test_session_replay: seed 0x5E55104, %d valid programs\n", SEEDS);
    size_t runs = 0;
    unsigned char *work = (unsigned char *)malloc(1 << 16);
    for (int i = 0; i < SEEDS; ++i) {
        const seed_t *s = &seeds[i];
        LLVMFuzzerTestOneInput(s->bytes, s->length), ++runs;
        for (size_t cut = 0; cut < s->length; ++cut) LLVMFuzzerTestOneInput(s->bytes, cut), ++runs; // every truncation
        for (int mutation = 0; mutation < 150; ++mutation) {
            size_t length = s->length;
            memcpy(work, s->bytes, length);
            uint64_t r = check_random_next(&rng);
            size_t at = (size_t)(r >> 8) % length;
            switch (r % 6) {
            case 0: work[at] ^= (unsigned char)(1u << ((r >> 40) % 8)); break;
            case 1: {
                static const unsigned char special[] = {0, 1, 2, 7, 8, 9, 0x7F, 0x80, 0xFE, 0xFF};
                work[at] = special[(r >> 40) % 10];
                break;
            }
            case 2: { // a u32 field rewritten with a small, boundary or huge number
                static const uint32_t values[] = {0, 1, 2, 3, 8, 9, 64, 255, 256, 65535, 0x7FFFFFFFu, 0xFFFFFFFFu};
                uint32_t v = values[(r >> 40) % 12];
                if (at + 4 <= length) memcpy(work + at, &v, 4);
                break;
            }
            case 3: // delete a run of bytes
                if (length > 1) {
                    size_t run = 1 + (r >> 40) % 8;
                    if (at + run > length) run = length - at;
                    memmove(work + at, work + at + run, length - at - run);
                    length -= run;
                }
                break;
            case 4: { // insert random bytes
                size_t run = 1 + (r >> 40) % 8;
                memmove(work + at + run, work + at, length - at);
                for (size_t j = 0; j < run; ++j) work[at + j] = (unsigned char)check_random_next(&rng);
                length += run;
                break;
            }
            default: { // splice: this program's head, another's tail
                const seed_t *o = &seeds[(r >> 40) % SEEDS];
                size_t tail = (size_t)(r >> 20) % o->length;
                memcpy(work + at, o->bytes + tail, o->length - tail);
                length = at + o->length - tail;
                break;
            }
            }
            LLVMFuzzerTestOneInput(work, length), ++runs;
        }
    }
    printf("%zu inputs replayed without a crash or a broken invariant\n", runs);
    CHECK(runs > 3000);
    free(work);
    for (int i = 0; i < SEEDS; ++i) free(seeds[i].bytes);
    return check_finish();
}
