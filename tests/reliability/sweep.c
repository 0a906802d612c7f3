/*
 * The allocation-failure sweep's driver (sweep.h): for every row of rows.c, a first run with memory
 * (its outputs' digest is the reference), a counting run (how many allocations the call makes),
 * then one run per allocation number N with allocation N failing, each followed by a run with
 * memory that must give the reference digest again.
 *
 * usage: reliability_sweep CHECKPOINT FIXTURES [--quick] [--mode transient|persistent|both] [--only a,b] [--skip a,b] [--at N]
 *                          [--ffmpeg-stride K] [--long-stride K] [--long-persistent] [--no-cold]
 *                          [--ffmpeg-rows only|skip]
 *   --quick  N = 1..8, then about 24 numbers spread over the rest, then the last few (make test);
 *            without it every N (make asan, make sweep).
 *   --mode   transient: only allocation N fails; persistent: N and every later one fail (the
 *            error paths themselves run without memory); both (the default).
 *   --skip   every row but these (`make asan` runs the longest rows as a test of their own, so that
 *            the two cores share the sweep: --only there, --skip here).
 *   --at     only allocation N (to debug one failure).
 *   --long-stride K  the same for the SWEEP_LONG rows (Gloo's bootstrap) and for every row whose call
 *            makes more than 512 allocations (a model load, a checkpoint save); default every one.
 *            SWEEP_REPEATS rows (a published folder's load: 17,815 allocations, nearly all of them
 *            cJSON's nodes while it parses tokenizer.json) take every one of their first and last
 *            1,024 and every 16K-th between.
 *   --long-persistent  also the persistent mode of SWEEP_LONG rows: under persistent exhaustion
 *            Gloo's store polls until the bootstrap's timeout (5 s a run), so only `make sweep` asks.
 *   --ffmpeg-stride K  in rows through FFmpeg (thousands of allocations each), fail allocations
 *            1..32, every K-th after that and the last 8 (CI's time budget); default every one.
 *   --ffmpeg-rows only|skip  only the SWEEP_FFMPEG rows, or all but them: `make asan` runs the two
 *            halves as two tests, the FFmpeg half with LeakSanitizer's DWARF unwinding so its
 *            suppression can name FFmpeg's call site (lsan_ffmpeg.supp says why).
 *   --no-cold  skip the SWEEP_COLD rows (loading FFmpeg afresh in a child per run: under
 *            AddressSanitizer each costs seconds and dies in GLib's constructors, not in UForm).
 * Exit status 0 when every verdict holds; each violation prints the row, N, which function was
 * failed, the status and message answered, and the stack of the failed allocation.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "failing_alloc.h"
#include "rows.h"
#include "sweep_child.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
/* Rows with threads cannot count live blocks around a call (sweep_one); under AddressSanitizer,
 * LeakSanitizer's check after each of their armed runs names the allocation number whose error
 * path leaked, where its check at exit could only say that some run of the process had. */
static int leaks_now(void) { return __lsan_do_recoverable_leak_check(); }
#else
static int leaks_now(void) { return 0; }
#endif

/* Where the sweep is, for the exit and signal handlers: a library that exits or aborts under
 * memory exhaustion is the bug the sweep exists to find, so say where it happened. */
static const char *current_row = "";
static size_t current_n;
static volatile sig_atomic_t in_call;
static int in_child;             /* an isolated row's child (sweep_child.h): runs under a watchdog */
static char executable[512];     /* this program, to tell UForm's code from the libraries' */
static size_t third_party_total; /* runs that died inside a library, all rows */

static void report_exit(void) {
    if (!in_call || in_child) return; /* a child's exit status goes to its parent as it is */
    failing_alloc_disarm();
    fprintf(stderr, "FAIL %s: the process exited from inside the call with allocation %zu failing (%s); the library must "
                    "never exit\n", current_row, current_n, failing_alloc_failed_function());
    failing_alloc_print_failure_stack();
    _exit(3);
}

static void report_signal(int signal_number) {
    if (in_call) {
        failing_alloc_disarm();
        char line[256];
        int length = snprintf(line, sizeof line, "FAIL %s: signal %d inside the call with allocation %zu failing (%s)\n",
                              current_row, signal_number, current_n, failing_alloc_failed_function());
        if (length > 0) (void)!write(STDERR_FILENO, line, (size_t)length);
        failing_alloc_print_failure_stack();
    }
    signal(signal_number, SIG_DFL);
    raise(signal_number);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Does the message say what could not be had? */
static int names_allocation(const char *message) {
    static const char *const words[] = {"allocat", "memory", "cannot map", "mmap"};
    char lower[sizeof ((sweep_answer_t *)0)->message];
    size_t i = 0;
    for (; message[i] && i + 1 < sizeof lower; ++i) lower[i] = (char)(message[i] >= 'A' && message[i] <= 'Z' ? message[i] + 32 : message[i]);
    lower[i] = 0;
    for (size_t w = 0; w < sizeof words / sizeof words[0]; ++w)
        if (strstr(lower, words[w])) return 1;
    return 0;
}

/* Files a failed call left in the scratch folder (a writer must remove its temporary file). */
static int leftovers(const char *folder, char *found, size_t capacity) {
    DIR *directory = opendir(folder);
    if (!directory) return 0;
    int count = 0;
    found[0] = 0;
    for (struct dirent *entry; (entry = readdir(directory));) {
        if (entry->d_name[0] != '.' || !strcmp(entry->d_name, ".") || !strcmp(entry->d_name, "..")) continue;
        if (!count++) snprintf(found, capacity, "%s", entry->d_name);
        char path[600];
        snprintf(path, sizeof path, "%s/%s", folder, entry->d_name);
        unlink(path);
    }
    closedir(directory);
    return count;
}

/* After an isolated child died (or a library exited it) in the middle of a run: removes the
 * temporary files it left in the scratch folder, and says how many on stderr. A writer removes its
 * temporary file on every path that returns (leftovers() above holds returning runs to that); a
 * process killed inside a library's write — libgomp's exit, glibc's abort on thread-local data —
 * never reaches that path, and no code can clean up after its own death. Those files are the dead
 * run's, which is already counted as a third-party finding; left there, the next child's first
 * run would report them as its own. */
static void clear_after_death(const char *folder) {
    char found[300];
    int left = leftovers(folder, found, sizeof found);
    if (left) fprintf(stderr, "note: removed %d temporary files ('%s') a dead child left in the scratch folder\n", left, found);
}

/* Removes a folder and everything below it (the scratch folder: written files, index files kept
 * for the reading rows, the mesh rows' job folders). */
static void remove_tree(const char *folder) {
    DIR *directory = opendir(folder);
    if (directory) {
        for (struct dirent *entry; (entry = readdir(directory));) {
            if (!strcmp(entry->d_name, ".") || !strcmp(entry->d_name, "..")) continue;
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", folder, entry->d_name);
            if (unlink(path) != 0) remove_tree(path);
        }
        closedir(directory);
    }
    rmdir(folder);
}

static void violation(sweep_tally_t *tally, const sweep_row_t *row, size_t n, failing_alloc_mode_t mode, const char *what,
                      const sweep_answer_t *answer) {
    tally->violations += 1;
    if (tally->violations > 6) return; /* the first few say enough */
    fprintf(stderr, "FAIL %s, allocation %zu failing (%s, %s): %s; got %s: %s\n", row->name, n,
            mode == FAILING_ALLOC_PERSISTENT ? "persistent" : "transient", failing_alloc_failed_function(), what,
            answer->status, answer->message[0] ? answer->message : "(no message)");
    failing_alloc_print_failure_stack();
}

/* One armed run and the run with memory after it. Answers 0 when allocation `n` was never reached
 * (the call completed with fewer allocations). */
static int sweep_one(sweep_fixture_t *fixture, const sweep_row_t *row, size_t n, failing_alloc_mode_t mode,
                     uint64_t reference, sweep_tally_t *tally) {
    sweep_answer_t answer;
    memset(&answer, 0, sizeof answer);
    long live_before = failing_alloc_live();
    current_n = n;
    in_call = 1;
    if (in_child) sweep_child_watchdog(60); /* an endless loop in a library ends the child, reported */
    failing_alloc_arm(n, mode);
    row->run(fixture, &answer);
    size_t injected = failing_alloc_disarm();
    in_call = 0;
    long live_after = failing_alloc_live();
    tally->runs += 1;
    if (injected == 0) {
        if (!answer.ok) violation(tally, row, n, mode, "failed with no allocation failing", &answer);
        else if (answer.digest != reference) violation(tally, row, n, mode, "different outputs with no allocation failing", &answer);
        return 0;
    }
    tally->injected_runs += 1;
    if (answer.ok) {
        tally->absorbed += 1; /* a library fell back or retried: fine if the outputs are right */
        if (answer.digest != reference) {
            /* FFmpeg drops a packet or frame whose buffer it could not allocate and carries on; with no
             * allocator hook (and posix_memalign leaving errno alone) UForm cannot see it. Under
             * persistent exhaustion a later allocation fails visibly, so that mode stays strict. */
            if ((row->flags & SWEEP_FFMPEG) && mode == FAILING_ALLOC_TRANSIENT) {
                if (++tally->third_party_degraded <= 2)
                    fprintf(stderr, "THIRD-PARTY DEGRADED %s, allocation %zu failing (transient, %s): FFmpeg swallowed the failure and "
                                    "decoded different outputs\n", row->name, n, failing_alloc_failed_function());
            } else {
                violation(tally, row, n, mode, "succeeded with different outputs", &answer);
            }
        }
    } else if (answer.out_of_memory) {
        tally->out_of_memory += 1;
        if (!names_allocation(answer.message)) violation(tally, row, n, mode, "the message does not say what could not be allocated", &answer);
    } else {
        violation(tally, row, n, mode, "expected out_of_memory or ok", &answer);
    }
    char found[300];
    int left = leftovers(fixture->scratch, found, sizeof found);
    if (left) {
        snprintf(answer.message, sizeof answer.message, "%d temporary files, such as '%s'", left, found);
        violation(tally, row, n, mode, "files left behind", &answer);
    }
    /* TurboJPEG 2.1 leaks libjpeg's memory manager when an allocation fails inside tjInitDecompress
     * (UForm gets NULL, answers "cannot allocate a TurboJPEG decompressor" and has nothing to free);
     * lsan.supp says the same to LeakSanitizer. */
    int turbojpeg_leak = strstr(answer.message, "cannot allocate a TurboJPEG decompressor") != NULL;
    /* Only growth is a leak: the count is process-wide, and a block another thread frees during the
     * call (seen about once in five quick sweeps, in arena_growth) lowers it without any fault here. */
    if (!(row->flags & (SWEEP_THREADS | SWEEP_FFMPEG | SWEEP_LOADS)) && live_after > live_before && !turbojpeg_leak) {
        snprintf(answer.message, sizeof answer.message, "%ld blocks live before the call, %ld after", live_before, live_after);
        violation(tally, row, n, mode, "blocks leaked", &answer);
    } else if ((row->flags & SWEEP_THREADS) && !(row->flags & SWEEP_LOADS) && leaks_now()) {
        /* Not the mesh rows (SWEEP_LOADS): Gloo's threads may still be exiting after the call, and
         * LeakSanitizer cannot read an exiting thread's registers ("Unable to get registers from
         * thread", seen once in a full sweep), so blocks only they hold could read as leaked.
         * Their 2 rows passed the check when tried; LeakSanitizer's exit check still covers them. */
        snprintf(answer.message, sizeof answer.message, "LeakSanitizer's report above");
        violation(tally, row, n, mode, "blocks leaked", &answer);
    }
    /* Memory is back: the same call on the same objects gives the reference outputs. */
    sweep_answer_t again;
    memset(&again, 0, sizeof again);
    row->run(fixture, &again);
    if (!again.ok && (row->flags & SWEEP_COLD) && strstr(again.message, "undefined symbol")) {
        /* glibc's dlopen, failing half-way for lack of memory, can leave a dependency mapped but not
         * relocated (libstdc++'s typeinfo, Xlib's hooks): every later dlopen that needs it fails
         * with "undefined symbol" in this process. The dynamic loader's state, not UForm's. */
        if (++tally->third_party_degraded <= 2)
            fprintf(stderr, "THIRD-PARTY DAMAGE %s, allocation %zu failing (%s, %s): after the failed load, %s\n", row->name, n,
                    mode == FAILING_ALLOC_PERSISTENT ? "persistent" : "transient", failing_alloc_failed_function(), again.message);
    } else if (!again.ok) violation(tally, row, n, mode, "the call fails once memory is back", &again);
    else if (again.digest != reference) violation(tally, row, n, mode, "different outputs once memory is back", &again);
    if (in_child) sweep_child_watchdog(0);
    return 1;
}

/* The allocation numbers of a quick run: 1..8, about 24 spread over the rest, the last 4. */
static int quick_includes(size_t n, size_t total) {
    if (n <= 8 || n + 4 > total) return 1;
    size_t step = total / 24 > 1 ? total / 24 : 1;
    return (n - 8) % step == 0;
}

/* With a stride: 1..ends, every stride-th after that, the last 8 (the last `ends` for the
 * SWEEP_REPEATS rows, whose `ends` is 1,024 rather than 32). */
static int stride_includes(size_t n, size_t total, size_t stride, size_t ends) {
    size_t tail = ends > 32 ? ends : 8;
    return stride <= 1 || n <= ends || n + tail > total || (n - ends) % stride == 0;
}

/* One row in one mode: which allocation numbers to fail, and the reference outputs. */
typedef struct sweep_range_t {
    sweep_fixture_t *fixture;
    const sweep_row_t *row;
    failing_alloc_mode_t mode;
    int quick;
    size_t stride; /* FFmpeg rows: fail every stride-th allocation only (see --ffmpeg-stride) */
    size_t at, total;
    uint64_t reference;
} sweep_range_t;

/* The next allocation number of the range from `n` on (inclusive), or 0 when there is none. */
static size_t next_number(const sweep_range_t *range, size_t n) {
    for (;; ++n) {
        if (range->at) return n <= range->at ? range->at : 0;
        if (range->quick && !quick_includes(n, range->total)) continue;
        if (!stride_includes(n, range->total, range->stride, range->row->flags & SWEEP_REPEATS ? 1024 : 32)) continue;
        return n;
    }
}

/* Fails allocation n for the range's numbers from `from` on, until a run no longer reaches n.
 * With `report` (a child's pipe), says which run starts and how each ended. */
static void sweep_from(const sweep_range_t *range, size_t from, sweep_tally_t *tally, int report) {
    for (size_t n = next_number(range, from); n; n = next_number(range, n + 1)) {
        sweep_record_t record = {'S', 0, n, 0, *tally};
        if (report >= 0) sweep_child_send(report, &record);
        int reached = sweep_one(range->fixture, range->row, n, range->mode, range->reference, tally);
        record = (sweep_record_t){'T', reached, n, 0, *tally};
        if (report >= 0) sweep_child_send(report, &record);
        if (!reached || range->at) return;
        if (n > 4 * range->total + 1000) { /* the count keeps growing: something allocates without end */
            fprintf(stderr, "FAIL %s: still allocating at allocation %zu (a first run made %zu)\n", range->row->name, n, range->total);
            tally->violations += 1;
            return;
        }
    }
}

/* A child that died during run `n`: a crash or endless loop outside UForm's code is a third-party
 * finding, counted and shown; one inside it (or nowhere known) is a violation. */
static void classify_death(const sweep_range_t *range, size_t n, const sweep_child_result_t *result, sweep_tally_t *tally) {
    tally->runs += 1;
    tally->injected_runs += 1;
    const sweep_death_t *death = &result->death;
    const char *how = death->signal_number == SIGALRM ? "looped for a minute" : "crashed";
    if (death->ours || !strcmp(death->library, "?")) {
        sweep_answer_t answer;
        memset(&answer, 0, sizeof answer);
        snprintf(answer.status, sizeof answer.status, "signal %d", death->signal_number);
        snprintf(answer.message, sizeof answer.message, "%s in %s (%s)", how, death->library, death->symbol);
        violation(tally, range->row, n, range->mode, "the process died inside UForm's code (or somewhere unknown)", &answer);
        return;
    }
    if (++tally->third_party_crashes <= 3)
        fprintf(stderr, "THIRD-PARTY CRASH %s, allocation %zu failing (%s, %s): %s with signal %d in %s (%s)\n", range->row->name, n,
                range->mode == FAILING_ALLOC_PERSISTENT ? "persistent" : "transient", death->failed, how, death->signal_number,
                death->library, death->symbol);
}

/* A child that exited with a non-zero status. During a run, a library called exit: libuform
 * imports no exit function (needed_libraries.sh checks), so not UForm. After its runs,
 * LeakSanitizer found leaks (status 23). */
static void classify_exit(const sweep_range_t *range, const sweep_child_result_t *result, sweep_tally_t *tally) {
    if (result->have_progress && result->progress.tag == 'S') {
        tally->runs += 1;
        tally->injected_runs += 1;
        if (++tally->third_party_crashes <= 3)
            fprintf(stderr, "THIRD-PARTY EXIT %s, allocation %zu failing (%s): a library called exit(%d)\n", range->row->name,
                    result->progress.n, range->mode == FAILING_ALLOC_PERSISTENT ? "persistent" : "transient", result->exit_status);
        return;
    }
    sweep_answer_t answer;
    memset(&answer, 0, sizeof answer);
    snprintf(answer.status, sizeof answer.status, "exit status %d", result->exit_status);
    snprintf(answer.message, sizeof answer.message, "see LeakSanitizer's report above, if any");
    violation(tally, range->row, 0, range->mode, "a child process ended badly", &answer);
}

typedef struct isolated_work_t {
    const sweep_range_t *range;
    size_t from;
    sweep_tally_t tally;
} isolated_work_t;

static void isolated_child(void *context, int descriptor) {
    isolated_work_t *work = context;
    in_child = 1;
    sweep_from(work->range, work->from, &work->tally, descriptor);
    sweep_record_t end = {'E', 0, 0, 0, work->tally};
    sweep_child_send(descriptor, &end);
}

/* sweep_from in child processes: a child runs allocation numbers one after another, as the parent
 * would, until it finishes or dies; the next child resumes past the number it died at. */
static void sweep_isolated(const sweep_range_t *range, sweep_tally_t *tally) {
    isolated_work_t work = {range, 1, *tally};
    for (;;) {
        sweep_child_result_t result;
        sweep_child_run(isolated_child, &work, executable, &result);
        if (result.have_progress) *tally = result.progress.tally;
        if (result.finished && result.have_progress && result.progress.tag == 'E') return;
        clear_after_death(range->fixture->scratch);
        if (!result.died) {
            classify_exit(range, &result, tally);
            if (!result.have_progress || result.progress.tag != 'S' || range->at) return;
            work.from = result.progress.n + 1; /* a library's exit during that run: resume past it */
            work.tally = *tally;
            continue;
        }
        if (!result.have_progress || result.progress.tag != 'S') { /* died between runs */
            classify_death(range, 0, &result, tally);
            return;
        }
        classify_death(range, result.progress.n, &result, tally);
        if (range->at) return;
        work.from = result.progress.n + 1;
        work.tally = *tally;
    }
}

/* ---- cold rows (SWEEP_COLD): a child per run, every run the first of its process ---- */

typedef struct cold_work_t {
    const sweep_range_t *range;
    size_t n; /* 0: the reference run */
    sweep_tally_t tally;
} cold_work_t;

static void cold_child(void *context, int descriptor) {
    cold_work_t *work = context;
    in_child = 1;
    if (!work->n) { /* the reference: every allocation served, counted */
        sweep_answer_t answer;
        memset(&answer, 0, sizeof answer);
        failing_alloc_arm((size_t)-1, FAILING_ALLOC_TRANSIENT);
        work->range->row->run(work->range->fixture, &answer);
        failing_alloc_disarm();
        if (!answer.ok)
            fprintf(stderr, "FAIL %s: fails with all the memory it wants: %s: %s\n", work->range->row->name, answer.status, answer.message);
        sweep_record_t record = {'R', answer.ok, failing_alloc_counted(), answer.digest, work->tally};
        sweep_child_send(descriptor, &record);
        return;
    }
    sweep_record_t record = {'S', 0, work->n, 0, work->tally};
    sweep_child_send(descriptor, &record);
    int reached = sweep_one(work->range->fixture, work->range->row, work->n, work->range->mode, work->range->reference, &work->tally);
    record = (sweep_record_t){'T', reached, work->n, 0, work->tally};
    sweep_child_send(descriptor, &record);
}

static size_t sweep_cold(sweep_range_t *range, sweep_tally_t *tally) {
    cold_work_t work = {range, 0, {0}};
    sweep_child_result_t result;
    sweep_child_run(cold_child, &work, executable, &result);
    if (!result.finished || !result.have_progress || result.progress.tag != 'R' || !result.progress.reached) {
        tally->violations += 1;
        return 0;
    }
    range->total = result.progress.n;
    range->reference = result.progress.digest;
    for (size_t n = next_number(range, 1); n; n = next_number(range, n + 1)) {
        work = (cold_work_t){range, n, *tally};
        sweep_child_run(cold_child, &work, executable, &result);
        if (result.have_progress) *tally = result.progress.tally;
        if (result.died || !result.finished) clear_after_death(range->fixture->scratch);
        if (result.died) {
            classify_death(range, n, &result, tally);
        } else if (!result.finished) {
            classify_exit(range, &result, tally);
        } else if (result.have_progress && result.progress.tag == 'T' && !result.progress.reached) {
            break;
        }
        if (range->at || n > 4 * range->total + 1000) break;
    }
    return range->total;
}

static size_t ffmpeg_stride = 1, long_stride = 1;
static int long_persistent;

/* The stride of a row's allocation numbers (see --ffmpeg-stride and --long-stride); `total` is what
 * the row's counting run made (0 when not known yet). */
static size_t row_stride(const sweep_row_t *row, size_t total) {
    if (row->flags & SWEEP_FFMPEG) return ffmpeg_stride;
    if ((row->flags & SWEEP_REPEATS) && long_stride > 1) return 16 * long_stride;
    return (row->flags & SWEEP_LONG) || total > 512 ? long_stride : 1;
}

/* Prints a row's line; answers 1 when it has violations. */
static int report_row(const sweep_row_t *row, size_t total, const sweep_tally_t *tally, double start) {
    printf("%-26s %6zu allocations, %6zu runs, %6zu failed: %6zu out_of_memory, %5zu absorbed, %zu violations", row->name, total,
           tally->runs, tally->injected_runs, tally->out_of_memory, tally->absorbed, tally->violations);
    if (tally->third_party_crashes) printf(", %zu third-party crashes", tally->third_party_crashes);
    if (tally->third_party_degraded) printf(", %zu degraded by third-party code", tally->third_party_degraded);
    printf(" (%.1f s)\n", now() - start);
    third_party_total += tally->third_party_crashes;
    fflush(stdout);
    return tally->violations != 0;
}

static int sweep_row(sweep_fixture_t *fixture, const sweep_row_t *row, int quick, int modes, size_t at) {
    current_row = row->name;
    double start = now();
    sweep_tally_t tally = {0};
    if (row->flags & SWEEP_COLD) { /* the parent never runs it: every run is a child's first */
        size_t total = 0;
        for (int mode = 0; mode < 2; ++mode) {
            if (!(modes & (1 << mode))) continue;
            sweep_range_t range = {fixture, row, (failing_alloc_mode_t)mode, quick, row_stride(row, 0), at, 0, 0};
            total = sweep_cold(&range, &tally);
        }
        return report_row(row, total, &tally, start);
    }
    sweep_answer_t first;
    memset(&first, 0, sizeof first);
    row->run(fixture, &first); /* fills caches: media bytes, FFmpeg's tables, the session program */
    if (!first.ok) {
        fprintf(stderr, "FAIL %s: fails with all the memory it wants: %s: %s\n", row->name, first.status, first.message);
        return 1;
    }
    sweep_answer_t counting;
    memset(&counting, 0, sizeof counting);
    failing_alloc_arm((size_t)-1, FAILING_ALLOC_TRANSIENT);
    row->run(fixture, &counting);
    failing_alloc_disarm();
    size_t total = failing_alloc_counted();
    if (!counting.ok || counting.digest != first.digest) {
        fprintf(stderr, "FAIL %s: a second run with memory %s\n", row->name, counting.ok ? "gives other outputs" : "fails");
        return 1;
    }
    for (int mode = 0; mode < 2; ++mode) {
        if (!(modes & (1 << mode))) continue;
        if ((row->flags & SWEEP_LONG) && mode == FAILING_ALLOC_PERSISTENT && !long_persistent && !at) {
            printf("%-26s persistent mode left to --long-persistent (make sweep)\n", row->name);
            continue;
        }
        sweep_range_t range = {fixture, row, (failing_alloc_mode_t)mode, quick, row_stride(row, total),
                               at, total, first.digest};
        if (row->flags & SWEEP_ISOLATE) sweep_isolated(&range, &tally);
        else sweep_from(&range, 1, &tally, -1);
    }
    return report_row(row, total, &tally, start);
}

static int listed(const char *list, const char *name) {
    if (!list) return 1;
    size_t length = strlen(name);
    for (const char *at = list; (at = strstr(at, name)); at += length)
        if ((at == list || at[-1] == ',') && (at[length] == 0 || at[length] == ',')) return 1;
    return 0;
}

static int usage(void) {
    fprintf(stderr, "usage: reliability_sweep CHECKPOINT FIXTURES [--quick] [--mode transient|persistent|both] [--only a,b] [--skip a,b] [--at N] [--ffmpeg-stride K] [--long-stride K] [--long-persistent] [--no-cold] [--ffmpeg-rows only|skip] [--published FOLDER]\n");
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 3) return usage();
    sweep_fixture_t fixture;
    memset(&fixture, 0, sizeof fixture);
    fixture.checkpoint = argv[1];
    fixture.fixtures = argv[2];
    int quick = 0, modes = 3;
    const char *only = NULL, *skip = NULL;
    size_t at = 0;
    int no_cold = 0;
    int ffmpeg_rows = 0; /* 0 all rows; 1 only the SWEEP_FFMPEG rows; 2 all but them */
    for (int i = 3; i < argc; ++i) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
            const char *mode = argv[++i];
            modes = !strcmp(mode, "transient") ? 1 : !strcmp(mode, "persistent") ? 2 : !strcmp(mode, "both") ? 3 : 0;
            if (!modes) return usage();
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--skip") && i + 1 < argc) skip = argv[++i];
        else if (!strcmp(argv[i], "--at") && i + 1 < argc) at = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--ffmpeg-stride") && i + 1 < argc) ffmpeg_stride = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--long-stride") && i + 1 < argc) long_stride = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--long-persistent")) long_persistent = 1;
        else if (!strcmp(argv[i], "--no-cold")) no_cold = 1;
        else if (!strcmp(argv[i], "--ffmpeg-rows") && i + 1 < argc) {
            const char *which = argv[++i];
            ffmpeg_rows = !strcmp(which, "only") ? 1 : !strcmp(which, "skip") ? 2 : -1;
            if (ffmpeg_rows < 0) return usage();
        }
        else if (!strcmp(argv[i], "--published") && i + 1 < argc) fixture.published = argv[++i];
        else return usage();
    }
#if UFORM_WITH_FFMPEG
    fixture.ffmpeg = 1;
#endif
    ssize_t length = readlink("/proc/self/exe", executable, sizeof executable - 1);
    executable[length > 0 ? length : 0] = 0;
    /* Writers fsync: on tmpfs that costs nothing, on a disk it would dominate the sweep. */
    snprintf(fixture.scratch, sizeof fixture.scratch, "%s/uform_sweep_XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(fixture.scratch)) {
        perror("mkdtemp");
        return 1;
    }
    uform_outcome_t outcome = {0};
    if (uform_model_load_ram(NULL, fixture.checkpoint, NULL, &fixture.model, &outcome) != UFORM_OK ||
        uform_arena_for_host(&fixture.arena, &outcome) != UFORM_OK) {
        char line[600];
        uform_outcome_format(&outcome, line, sizeof line);
        fprintf(stderr, "setup: %s\n", line);
        return 1;
    }
    atexit(report_exit);
    signal(SIGABRT, report_signal);
    signal(SIGSEGV, report_signal);
    signal(SIGBUS, report_signal);

    int failed = 0;
    size_t ran = 0;
    double start = now();
    for (size_t r = 0; r < sweep_row_count; ++r) {
        const sweep_row_t *row = &sweep_rows[r];
        if (!listed(only, row->name) || (skip && listed(skip, row->name))) continue;
        if ((ffmpeg_rows == 1 && !(row->flags & SWEEP_FFMPEG)) || (ffmpeg_rows == 2 && (row->flags & SWEEP_FFMPEG)))
            continue; /* the other half of --ffmpeg-rows */
        if ((row->flags & SWEEP_COLD) && no_cold) {
            printf("%-26s skipped (--no-cold)\n", row->name);
            continue;
        }
        if ((row->flags & SWEEP_FFMPEG) && !fixture.ffmpeg) {
            printf("%-26s skipped: this build has no FFmpeg headers\n", row->name);
            continue;
        }
        if ((row->flags & SWEEP_ISOLATE) && fixture.executor) { /* children must not inherit its threads */
            uform_executor_free(fixture.executor);
            fixture.executor = NULL;
        }
        failed |= sweep_row(&fixture, row, quick, modes, at);
        ran += 1;
    }
    remove_tree(fixture.scratch);
    uform_arena_free(fixture.arena);
    uform_executor_free(fixture.executor);
    uform_model_free(fixture.model);
    printf("%zu rows in %.1f s: %s", ran, now() - start, failed ? "FAILED" : "every verdict holds");
    if (third_party_total) printf(" (%zu runs crashed inside third-party libraries: see THIRD-PARTY CRASH above)", third_party_total);
    printf("\n");
    if (ran == 0) {
        fprintf(stderr, "no row matched --only %s\n", only ? only : "");
        return 1;
    }
    return failed;
}
