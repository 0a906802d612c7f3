/*
 * The replay driver shared by the data and server targets (replay_main.c): a target supplies its
 * valid seeds and a check that the parser accepts an input; the driver mutates the seeds with any
 * compiler, as a normal test, or writes them out as a libFuzzer corpus.
 *
 *     TARGET [--rounds N] [--seed S]   checks that every seed is accepted, then replays N mutations
 *     TARGET --seeds DIR               writes the seeds into DIR (the libFuzzer run's corpus)
 *     TARGET FILE...                   replays files (a libFuzzer crash, a corpus)
 */
#ifndef UFORM_TESTS_FUZZ_REPLAY_H
#define UFORM_TESTS_FUZZ_REPLAY_H

#include <stddef.h>
#include <stdint.h>

typedef struct replay_seed_t {
    uint8_t *bytes; /* malloc'ed; the driver frees it */
    size_t size;
} replay_seed_t;

/* The target's libFuzzer entry point: never crashes, leaks or hangs, whatever the bytes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Makes the target's valid seeds into `seeds` (at most `capacity`); answers how many, 0 on failure. */
size_t replay_seeds(replay_seed_t *seeds, size_t capacity);

/* 1 when the parser accepts `data` whole (a seed must be), 0 when it refuses it with a status. */
int replay_accepts(const uint8_t *data, size_t size);

/* The name seed files get ("seed-3.tar"): the target's extension. */
extern const char *const replay_extension;

#endif
