/*
 * The allocation-failure sweep's driver (sweep.h): for every row of rows.c, a first run with memory
 * (its outputs' digest is the reference), a counting run (how many allocations the call makes),
 * then one run per allocation number N with allocation N failing, each followed by a run with
 * memory that must give the reference digest again.
 *
 * usage: reliability_sweep CHECKPOINT FIXTURES [--quick] [--mode transient|persistent|both] [--only a,b] [--at N]
 *                          [--ffmpeg-stride K]
 *   --quick  N = 1..8, then about 24 numbers spread over the rest, then the last few (make test);
 *            without it every N (make asan, make sweep).
 *   --mode   transient: only allocation N fails; persistent: N and every later one fail (the
 *            error paths themselves run without memory); both (the default).
 *   --at     only allocation N (to debug one failure).
 *   --ffmpeg-stride K  in rows through FFmpeg (thousands of allocations each), fail allocations
 *            1..32, every K-th after that and the last 8 (CI's time budget); default every one.
 * Exit status 0 when every verdict holds; each violation prints the row, N, which function was
 * failed, the status and message answered, and the stack of the failed allocation.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "failing_alloc.h"
#include "rows.h"

/* Where the sweep is, for the exit and signal handlers: a library that exits or aborts under
 * memory exhaustion is the bug the sweep exists to find, so say where it happened. */
static const char *current_row = "";
static size_t current_n;
static volatile sig_atomic_t in_call;
static int in_child; /* an isolated row's child: its crash handler reports instead */

static void report_exit(void) {
    if (!in_call) return;
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

typedef struct tally_t {
    size_t runs, injected_runs, out_of_memory, absorbed, violations;
    size_t third_party_crashes; /* isolated rows only: crashes inside a library UForm calls */
    size_t third_party_degraded; /* FFmpeg rows, transient failures: FFmpeg swallowed the failure and decoded otherwise */
} tally_t;

static void violation(tally_t *tally, const sweep_row_t *row, size_t n, failing_alloc_mode_t mode, const char *what,
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
                     uint64_t reference, tally_t *tally) {
    sweep_answer_t answer;
    memset(&answer, 0, sizeof answer);
    long live_before = failing_alloc_live();
    current_n = n;
    in_call = 1;
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
     * (UForm gets NULL and has nothing to free); lsan.supp says the same to LeakSanitizer. */
    int turbojpeg_leak = failing_alloc_failure_passes_through("tjInitDecompress");
    if (!(row->flags & (SWEEP_THREADS | SWEEP_FFMPEG)) && live_after != live_before && !turbojpeg_leak) {
        snprintf(answer.message, sizeof answer.message, "%ld blocks live before the call, %ld after", live_before, live_after);
        violation(tally, row, n, mode, "blocks leaked", &answer);
    }
    /* Memory is back: the same call on the same objects gives the reference outputs. */
    sweep_answer_t again;
    memset(&again, 0, sizeof again);
    row->run(fixture, &again);
    if (!again.ok) violation(tally, row, n, mode, "the call fails once memory is back", &again);
    else if (again.digest != reference) violation(tally, row, n, mode, "different outputs once memory is back", &again);
    return 1;
}

/* ---- isolation: one child process per failing run (SWEEP_ISOLATE) ---- */

/* What a child's crash handler writes to the parent: where the faulting frame lies. */
typedef struct crash_record_t {
    int ours;              /* the first frame outside libc lies in the test executable (UForm's code) */
    char library[128];     /* the faulting frame's object, e.g. "libwebp.so.7" */
    char symbol[64];       /* its nearest exported symbol, when it has one */
    char failed[24];       /* the allocation function that was failed */
} crash_record_t;

/* A record a child sends its parent: 'S' before run n, 'T' after it (with the tally and whether
 * allocation n was reached), 'C' when it crashes, 'E' at the end. */
typedef struct child_record_t {
    char tag;
    int reached;
    size_t n;
    tally_t tally;
    crash_record_t crash;
} child_record_t;

static void send_record(int descriptor, char tag, size_t n, int reached, const tally_t *tally, const crash_record_t *crash) {
    child_record_t record;
    memset(&record, 0, sizeof record);
    record.tag = tag, record.n = n, record.reached = reached;
    if (tally) record.tally = *tally;
    if (crash) record.crash = *crash;
    (void)!write(descriptor, &record, sizeof record);
}

static int crash_pipe = -1;
static size_t third_party_total;
static char executable[512];

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Inside a dying child: find the faulting frame, skip frames in libc and in the failing allocator's
 * own functions, and say whose code the first remaining frame is. Not async-signal-safe (dladdr,
 * backtrace), acceptable in a child that is about to die anyway. */
static void child_crash(int signal_number, siginfo_t *info, void *context) {
    crash_record_t record;
    memset(&record, 0, sizeof record);
    snprintf(record.failed, sizeof record.failed, "%s", failing_alloc_failed_function());
    void *frames[64];
    int depth = backtrace(frames, 64), start = 0;
    void *fault = (void *)((ucontext_t *)context)->uc_mcontext.gregs[REG_RIP];
    for (int i = 0; i < depth; ++i)
        if (frames[i] == fault) { start = i; break; }
    static const char *const allocator[] = {"malloc", "calloc", "realloc", "free", "posix_memalign", "aligned_alloc",
                                            "memalign", "valloc", "mmap", "mmap64", "pthread_create"};
    for (int i = start; i < depth; ++i) {
        Dl_info where;
        if (!dladdr(frames[i], &where) || !where.dli_fname) continue;
        const char *library = base_name(where.dli_fname);
        if (strncmp(library, "libc.so", 7) == 0) continue;
        int in_allocator = 0;
        for (size_t a = 0; where.dli_sname && a < sizeof allocator / sizeof allocator[0]; ++a)
            in_allocator |= !strcmp(where.dli_sname, allocator[a]);
        if (in_allocator) continue;
        record.ours = !strcmp(where.dli_fname, executable) || !strcmp(library, base_name(executable));
        snprintf(record.library, sizeof record.library, "%s", library);
        snprintf(record.symbol, sizeof record.symbol, "%s", where.dli_sname ? where.dli_sname : "?");
        break;
    }
    if (!record.library[0]) snprintf(record.library, sizeof record.library, "libc"), record.ours = 0;
    send_record(crash_pipe, 'C', 0, 0, NULL, &record);
    signal(signal_number, SIG_DFL);
    raise(signal_number);
}

/* The allocation numbers of a quick run: 1..8, about 24 spread over the rest, the last 4. */
static int quick_includes(size_t n, size_t total) {
    if (n <= 8 || n + 4 > total) return 1;
    size_t step = total / 24 > 1 ? total / 24 : 1;
    return (n - 8) % step == 0;
}

/* With a stride: 1..32, every stride-th after that, the last 8. */
static int stride_includes(size_t n, size_t total, size_t stride) {
    return stride <= 1 || n <= 32 || n + 8 > total || (n - 32) % stride == 0;
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

/* Fails allocation n for n = from, from + 1, ... until a run no longer reaches n. With `report`
 * (a child's pipe), says which run starts and how each ended. Answers 1 when the range finished. */
static int sweep_from(const sweep_range_t *range, size_t from, tally_t *tally, int report) {
    for (size_t n = from;; ++n) {
        if (range->quick && !quick_includes(n, range->total)) continue;
        if (!stride_includes(n, range->total, range->stride)) continue;
        if (range->at && n != range->at) {
            if (n > range->at) return 1;
            continue;
        }
        if (report >= 0) send_record(report, 'S', n, 0, tally, NULL);
        int reached = sweep_one(range->fixture, range->row, n, range->mode, range->reference, tally);
        if (report >= 0) send_record(report, 'T', n, reached, tally, NULL);
        if (!reached) return 1;
        if (n > 4 * range->total + 1000) { /* the count keeps growing: something allocates without end */
            fprintf(stderr, "FAIL %s: still allocating at allocation %zu (a first run made %zu)\n", range->row->name, n, range->total);
            tally->violations += 1;
            return 1;
        }
    }
}

/* sweep_from in child processes: a child runs allocation numbers one after another, as the
 * parent would, until it finishes or crashes; after a crash the next child resumes past the
 * crashing number. A child that finishes exits normally, so LeakSanitizer checks it. */
static void sweep_isolated(const sweep_range_t *range, tally_t *tally) {
    size_t from = 1;
    for (;;) {
        int channel[2];
        if (pipe(channel) != 0) {
            perror("pipe");
            exit(1);
        }
        fflush(stdout);
        fflush(stderr);
        pid_t child = fork();
        if (child < 0) {
            perror("fork");
            exit(1);
        }
        if (child == 0) {
            close(channel[0]);
            crash_pipe = channel[1];
            struct sigaction action;
            memset(&action, 0, sizeof action);
            action.sa_sigaction = child_crash;
            action.sa_flags = SA_SIGINFO;
            int signals[5] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
            for (int i = 0; i < 5; ++i) sigaction(signals[i], &action, NULL);
            in_child = 1;
            sweep_from(range, from, tally, channel[1]);
            send_record(channel[1], 'E', 0, 0, tally, NULL);
            close(channel[1]);
            exit(0); /* not _exit: LeakSanitizer's check runs at exit */
        }
        close(channel[1]);
        child_record_t record;
        size_t running = 0;
        int crashed = 0, ended = 0;
        crash_record_t crash;
        memset(&crash, 0, sizeof crash);
        for (;;) {
            size_t got = 0;
            for (ssize_t r; got < sizeof record && (r = read(channel[0], (char *)&record + got, sizeof record - got)) > 0;) got += (size_t)r;
            if (got < sizeof record) break;
            if (record.tag == 'S') running = record.n, *tally = record.tally;
            else if (record.tag == 'T') running = 0, *tally = record.tally;
            else if (record.tag == 'C') crashed = 1, crash = record.crash;
            else if (record.tag == 'E') ended = 1, *tally = record.tally;
        }
        close(channel[0]);
        int wait_status = 0;
        waitpid(child, &wait_status, 0);
        if (ended) {
            if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0) {
                sweep_answer_t answer;
                memset(&answer, 0, sizeof answer);
                snprintf(answer.status, sizeof answer.status, "exit status %d", WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1);
                snprintf(answer.message, sizeof answer.message, "see LeakSanitizer's report above");
                violation(tally, range->row, 0, range->mode, "a child process ended badly (leaks?)", &answer);
            }
            return;
        }
        if (!running) { /* died between runs: nothing to resume */
            sweep_answer_t answer;
            memset(&answer, 0, sizeof answer);
            snprintf(answer.status, sizeof answer.status, "child status %d", wait_status);
            violation(tally, range->row, 0, range->mode, "a child process died outside any run", &answer);
            return;
        }
        tally->runs += 1;
        tally->injected_runs += 1;
        if (!crashed || crash.ours) {
            sweep_answer_t answer;
            memset(&answer, 0, sizeof answer);
            snprintf(answer.status, sizeof answer.status, "a crash");
            snprintf(answer.message, sizeof answer.message, "signal %d in %s (%s)", WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0,
                     crashed ? crash.library : "?", crashed ? crash.symbol : "?");
            violation(tally, range->row, running, range->mode, "the process died inside UForm's code", &answer);
        } else {
            tally->third_party_crashes += 1;
            if (tally->third_party_crashes <= 3)
                fprintf(stderr, "THIRD-PARTY CRASH %s, allocation %zu failing (%s, %s): signal %d in %s (%s)\n", range->row->name,
                        running, range->mode == FAILING_ALLOC_PERSISTENT ? "persistent" : "transient", crash.failed,
                        WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0, crash.library, crash.symbol);
        }
        if (range->at) return;
        from = running + 1;
    }
}

static size_t ffmpeg_stride = 1;

static int sweep_row(sweep_fixture_t *fixture, const sweep_row_t *row, int quick, int modes, size_t at) {
    current_row = row->name;
    double start = now();
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
    tally_t tally = {0};
    for (int mode = 0; mode < 2; ++mode) {
        if (!(modes & (1 << mode))) continue;
        sweep_range_t range = {fixture, row, (failing_alloc_mode_t)mode, quick, row->flags & SWEEP_FFMPEG ? ffmpeg_stride : 1,
                               at, total, first.digest};
        if (row->flags & SWEEP_ISOLATE) sweep_isolated(&range, &tally);
        else sweep_from(&range, 1, &tally, -1);
    }
    printf("%-26s %6zu allocations, %6zu runs, %6zu failed: %6zu out_of_memory, %5zu absorbed, %zu violations",
           row->name, total, tally.runs, tally.injected_runs, tally.out_of_memory, tally.absorbed, tally.violations);
    if (tally.third_party_crashes) printf(", %zu third-party crashes", tally.third_party_crashes);
    if (tally.third_party_degraded) printf(", %zu degraded by FFmpeg", tally.third_party_degraded);
    printf(" (%.1f s)\n", now() - start);
    third_party_total += tally.third_party_crashes;
    fflush(stdout);
    return tally.violations != 0;
}

static int listed(const char *list, const char *name) {
    if (!list) return 1;
    size_t length = strlen(name);
    for (const char *at = list; (at = strstr(at, name)); at += length)
        if ((at == list || at[-1] == ',') && (at[length] == 0 || at[length] == ',')) return 1;
    return 0;
}

static int usage(void) {
    fprintf(stderr, "usage: reliability_sweep CHECKPOINT FIXTURES [--quick] [--mode transient|persistent|both] [--only a,b] [--at N] [--ffmpeg-stride K]\n");
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 3) return usage();
    sweep_fixture_t fixture;
    memset(&fixture, 0, sizeof fixture);
    fixture.checkpoint = argv[1];
    fixture.fixtures = argv[2];
    int quick = 0, modes = 3;
    const char *only = NULL;
    size_t at = 0;
    for (int i = 3; i < argc; ++i) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
            const char *mode = argv[++i];
            modes = !strcmp(mode, "transient") ? 1 : !strcmp(mode, "persistent") ? 2 : !strcmp(mode, "both") ? 3 : 0;
            if (!modes) return usage();
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--at") && i + 1 < argc) at = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--ffmpeg-stride") && i + 1 < argc) ffmpeg_stride = strtoull(argv[++i], NULL, 10);
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
        uform_executor_for_ram(NULL, 2, 0, &fixture.executor, &outcome) != UFORM_OK ||
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
        if (!listed(only, row->name)) continue;
        if ((row->flags & SWEEP_FFMPEG) && !fixture.ffmpeg) {
            printf("%-26s skipped: this build has no FFmpeg headers\n", row->name);
            continue;
        }
        failed |= sweep_row(&fixture, row, quick, modes, at);
        ran += 1;
    }
    char found[300];
    while (leftovers(fixture.scratch, found, sizeof found)) {}
    char path[300];
    snprintf(path, sizeof path, "%s/sample.safetensors", fixture.scratch);
    unlink(path);
    snprintf(path, sizeof path, "%s/written.safetensors", fixture.scratch);
    unlink(path);
    rmdir(fixture.scratch);
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
