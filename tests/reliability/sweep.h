/*
 * The allocation-failure sweep: every public entry point, run once with every allocation failing
 * in turn (failing_alloc.h), must answer OUT_OF_MEMORY or succeed — never FORMAT, IO, INTERNAL or
 * any other status — with a message that says what could not be allocated, must leak nothing, and
 * must leave the objects it was given (model, executor, arena) working: the same call repeated
 * once memory is back gives the same outputs, bit for bit, as before the sweep.
 *
 * A row is one entry point (or one entry point on one media kind). To add one — the trainer's
 * step and save, an index search — write a `sweep_run_fn` next to its kin in rows_*.c that makes
 * what the call itself makes, calls it, digests its outputs and frees what it made, then add one
 * line to the table in rows.c. Objects that must outlive the call (the loaded model, the
 * executor, the arena, media bytes) come from the fixture, made once before any failure.
 */
#ifndef UFORM_TESTS_RELIABILITY_SWEEP_H
#define UFORM_TESTS_RELIABILITY_SWEEP_H

#include <stddef.h>
#include <stdint.h>

#include "uform/uform.h"

/* Media bytes read once from the fixtures folder. */
typedef struct sweep_bytes_t {
    unsigned char *data;
    size_t size;
} sweep_bytes_t;

/* What the rows share: made before the sweep, outside counting, and checked to still work after. */
typedef struct sweep_fixture_t {
    const char *checkpoint;   /* the tiny checkpoint's path */
    const char *fixtures;     /* the media fixtures folder (tests/media) */
    const char *published;    /* a published model folder (--published; NULL: its rows answer OK untried) */
    char scratch[256];        /* a private temporary folder for files the rows write */
    uform_model_t model;      /* loaded on the calling thread */
    uform_executor_t executor; /* two threads of its own, made on first use: use sweep_executor() */
    uform_arena_t arena;      /* a host arena the encode rows share */
    int ffmpeg;               /* FFmpeg could be loaded: rows that need it run */
} sweep_fixture_t;

/* How a run ended. */
typedef struct sweep_answer_t {
    int ok;                   /* the call succeeded */
    int out_of_memory;        /* it answered the out-of-memory status of its API */
    char status[40];          /* the status's name, for messages */
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY + 64];
    uint64_t digest;          /* a hash of the outputs (0 when the call has none) */
} sweep_answer_t;

/* Makes what the call makes, calls it, fills `answer`, frees what it made. Must not assert:
 * every verdict is the driver's. */
typedef void (*sweep_run_fn)(sweep_fixture_t *fixture, sweep_answer_t *answer);

enum {
    SWEEP_FFMPEG = 1,   /* needs FFmpeg at run time: skipped (and said so) without it */
    SWEEP_THREADS = 2,  /* starts or uses threads: its live-block count may differ by glibc's caches */
    SWEEP_ISOLATE = 4,  /* each failing run happens in a child process, because a library the row goes
                           through (FFmpeg, libwebp's lossless decoder) crashes on some allocation
                           failures: a crash whose faulting frame is outside UForm is counted and
                           reported as a third-party crash, one inside UForm fails the sweep. Such a
                           row must not use the fixture's executor (a child has no threads). */
    SWEEP_COLD = 8,     /* with SWEEP_ISOLATE: every run, the first one too, in its own child of a parent
                           that never ran the row, so what the call sets up once (loading FFmpeg) is
                           set up under failing allocations each time. The row must come before any
                           row that would set the same thing up in the parent. */
    SWEEP_LOADS = 16,   /* loads shared libraries that stay loaded by design (the collectives module and
                           Gloo's tree): the blocks their constructors allocate stay live, which is
                           not a leak of the call's */
    SWEEP_LONG = 32,    /* thousands of allocations, most in a library beneath UForm (Gloo's C++):
                           --long-stride K fails every K-th one after the first 32, as for FFmpeg's rows */
    SWEEP_REPEATS = 64, /* most allocations repeat one pattern thousands of times inside one parse (a
                           tokenizer.json's vocabulary as cJSON nodes): with --long-stride K, every
                           one of the first and last 1,024 and every 16K-th between them */
};

typedef struct sweep_row_t {
    const char *name;
    sweep_run_fn run;
    unsigned flags;
} sweep_row_t;

extern const sweep_row_t sweep_rows[];
extern const size_t sweep_row_count;

/* ---- helpers for the run functions (sweep_support.c) ---- */

/* Fills `answer` from a UForm status and outcome (NULL outcome: status only). */
void sweep_answer_status(sweep_answer_t *answer, uform_status_t status, const uform_outcome_t *outcome);

/* The same for a session status and the session's last cause (may be NULL). */
void sweep_answer_session(sweep_answer_t *answer, uform_session_status_t status, const char *cause);

/* FNV-1a over `size` bytes, continuing from `digest` (start at 0). */
uint64_t sweep_digest(uint64_t digest, const void *bytes, size_t size);

/* The digest of every row of a current view (only the row bytes, not the padding between rows). */
uint64_t sweep_digest_matrix(uint64_t digest, const uform_matrix_t *view);
uint64_t sweep_digest_rows(uint64_t digest, const uform_rows_t *view);

/* The whole file `name` of the media fixtures folder, read once and kept; NULL when missing. */
const sweep_bytes_t *sweep_media(const sweep_fixture_t *fixture, const char *name);

/* The fixture's executor, made when first asked for (by a row's unarmed first run). The driver
 * frees it before an isolated row, whose children would inherit threads that do not exist in them
 * (LeakSanitizer then cannot stop them and warns of false leaks). */
uform_executor_t sweep_executor(sweep_fixture_t *fixture);

/* A one-item tape over `bytes`. `offsets` must hold 2 entries and live as long as the tape. */
uform_tape_t sweep_tape(const void *bytes, size_t size, size_t offsets[2]);

#endif
