/*
 * The replay driver every fuzz target shares (replay_main.c): a target supplies its valid seeds and
 * a check that the parser accepts an input; the driver mutates the seeds with any compiler, as a
 * normal test, or writes them out as a libFuzzer corpus. A target whose format has a part most
 * worth editing (a length-prefixed header, a mode byte to keep) says so through replay_hooks.
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

/* What a target may tell the driver about its format. Defining replay_hooks is optional (the
 * declaration is weak): a target without it gets the driver's JSON-flavoured bytes, no kept
 * prefix and edits spread evenly over the input. */
typedef struct replay_hooks_t {
    /* Bytes worth writing into an input (the format's punctuation or opcodes); NULL: the default set. */
    const uint8_t *interesting;
    size_t interesting_count;
    /* Bytes before this offset are never edited (e.g. a mode byte that picks how the rest is read). */
    size_t kept_prefix;
    /* Where the part most worth editing ends (e.g. a length-prefixed JSON header), clamped to the
     * size; NULL: nowhere in particular. When set, three edits in four land before it. */
    size_t (*focus_end)(const uint8_t *bytes, size_t size);
} replay_hooks_t;

extern const replay_hooks_t replay_hooks __attribute__((weak));

#endif
