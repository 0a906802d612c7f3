/*
 * Child processes for the sweep's isolated rows (sweep.h, SWEEP_ISOLATE): a library that crashes,
 * aborts or loops forever when an allocation fails (FFmpeg, libwebp, GLib, glibc's loader) takes
 * down a child, not the sweep. A child reports through a pipe: progress records the parent reads,
 * and, when it dies, where — the mapping (shared object) of the faulting or looping instruction,
 * read from /proc/self/maps with plain system calls, since a crash inside malloc or inside the
 * dynamic loader leaves their locks taken.
 */
#ifndef UFORM_TESTS_RELIABILITY_SWEEP_CHILD_H
#define UFORM_TESTS_RELIABILITY_SWEEP_CHILD_H

#include <stddef.h>
#include <stdint.h>

/* How a row went: counts the driver prints. */
typedef struct sweep_tally_t {
    size_t runs, injected_runs, out_of_memory, absorbed, violations;
    size_t third_party_crashes;  /* a child died inside a library UForm calls (crash, abort, endless loop) */
    size_t third_party_degraded; /* FFmpeg swallowed a transient failure and decoded otherwise, or glibc's
                                    dynamic loader was left unable to load FFmpeg again (cold rows) */
} sweep_tally_t;

/* A progress record: 'S' run n starts, 'T' run n ended (`reached`: allocation n was reached),
 * 'E' the child's work ended, 'R' a reference run (`n` allocations, `digest`, `reached` = ok). */
typedef struct sweep_record_t {
    char tag;
    int reached;
    size_t n;
    uint64_t digest;
    sweep_tally_t tally;
} sweep_record_t;

/* Where a child died. */
typedef struct sweep_death_t {
    int signal_number;   /* the signal that ended it (SIGALRM: the watchdog, a run that never ended) */
    int ours;            /* the instruction lies in the test executable, i.e. in UForm's code */
    char library[128];   /* its shared object, e.g. "libwebp.so.7"; "?" when unknown */
    char symbol[64];     /* the nearest exported symbol, when it could be looked up safely */
    char failed[24];     /* the allocation function that was failed */
} sweep_death_t;

typedef struct sweep_child_result_t {
    int finished;             /* exited with status 0 */
    int exit_status;          /* exit status when it exited otherwise (LeakSanitizer: 23) */
    int died;                 /* ended by a signal */
    sweep_death_t death;      /* with what we know of where */
    int have_progress;
    sweep_record_t progress;  /* the last progress record it sent */
} sweep_child_result_t;

/* Runs `work(context, descriptor)` in a child (which exits normally afterwards, so LeakSanitizer
 * checks it) and collects what it sent. `executable` is the test's own path, to tell UForm's
 * code (linked into it) from the libraries'. */
void sweep_child_run(void (*work)(void *context, int descriptor), void *context, const char *executable,
                     sweep_child_result_t *result);

/* Sends a progress record to the parent. */
void sweep_child_send(int descriptor, const sweep_record_t *record);

/* In a child: a run must end within `seconds` (0 disarms); one that does not is killed and
 * reported as dying where it was looping. */
void sweep_child_watchdog(unsigned seconds);

#endif
