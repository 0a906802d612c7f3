/*
 * How a test says it did not run, so that CTest and `make test`'s summary (scripts/test_summary.py)
 * tell the reasons apart:
 *
 *   - a dependency the install script installs (torch, NumPy, Chromium, iproute2, ...) is missing:
 *     `check_skip_missing(...)` prints "skipped: ..." and answers 77 (CTest's SKIP_RETURN_CODE),
 *     except under CI=true, where it answers 1: CI runs on a machine the script set up, so a skip
 *     there hides a broken install step;
 *   - the CPU lacks a class the test is about: `check_skip_class(...)` prints "not exercised on this
 *     CPU: NAME" and answers 77 everywhere, because no script can install an instruction set.
 *
 * A test answers what these return from main(). Header-only, like check.h.
 */
#ifndef UFORM_TESTS_SKIP_H
#define UFORM_TESTS_SKIP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uform/uform.h>

/* 1 when the CI variable says this is a CI run ("true" or "1", as GitHub, GitLab and .ci/run set). */
static inline int check_under_ci(void) {
    const char *ci = getenv("CI");
    return ci && (strcmp(ci, "true") == 0 || strcmp(ci, "1") == 0);
}

/* The exit code for "cannot run: a dependency the install script installs is missing". */
static inline int check_skip_missing(const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    printf("skipped: ");
    vprintf(format, arguments);
    va_end(arguments);
    printf(" (scripts/install-deps.sh installs it)\n");
    if (check_under_ci()) {
        printf("CI=true: a missing dependency fails the test instead of skipping it\n");
        fflush(stdout);
        return 1;
    }
    fflush(stdout);
    return 77;
}

/* The line `make test` collects for a class this CPU does not run. */
static inline void check_note_class(uform_cpu_class_t cpu_class) {
    printf("not exercised on this CPU: %s\n", uform_cpu_class_name(cpu_class));
}

/* The exit code for a test that is only about `cpu_class`, when this CPU cannot run it. */
static inline int check_skip_class(uform_cpu_class_t cpu_class) {
    check_note_class(cpu_class);
    fflush(stdout);
    return 77;
}

/* The classes with kernels of their own (src/kernels), in table order; the others share these
 * tables (Sierra Haswell's, Sapphire and Granite Genoa's). */
static const uform_cpu_class_t check_kernel_classes[] = {UFORM_CPU_CLASS_SERIAL, UFORM_CPU_CLASS_INTEL_HASWELL,
                                                         UFORM_CPU_CLASS_INTEL_SKYLAKE, UFORM_CPU_CLASS_INTEL_ICELAKE,
                                                         UFORM_CPU_CLASS_AMD_GENOA};
#define CHECK_KERNEL_CLASSES (sizeof(check_kernel_classes) / sizeof(check_kernel_classes[0]))

/* 1 when this CPU runs `cpu_class`; otherwise notes it (once per class per process) and answers 0.
 * Tests that walk classes ask this before touching a class's table. */
static inline int check_class_runs(uform_cpu_class_t cpu_class) {
    if (uform_cpu_class_supported(cpu_class)) return 1;
    static unsigned noted = 0;
    unsigned bit = 1u << ((unsigned)cpu_class & 31u);
    if (!(noted & bit)) check_note_class(cpu_class), noted |= bit;
    return 0;
}

/* 1 under `make test-avx2` (scripts/test-avx2.sh sets UFORM_TEST_EMULATED: QEMU runs the test). */
static inline int check_emulated(void) { return getenv("UFORM_TEST_EMULATED") != NULL; }

/* 1 in a build under ThreadSanitizer (gcc defines __SANITIZE_THREAD__, clang answers __has_feature). */
#if defined(__SANITIZE_THREAD__)
#define CHECK_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CHECK_UNDER_TSAN 1
#endif
#endif
#ifndef CHECK_UNDER_TSAN
#define CHECK_UNDER_TSAN 0
#endif

/* 1 where a run of SERIAL would only repeat what `make test` checked natively, and the test may
 * leave it out: under the emulator, where SERIAL's instructions are the same as on the host; and
 * under ThreadSanitizer, where what is checked is the threading, and the attention kernels thread
 * every class through one driver (src/kernels/nn_attention.c, uform__parallel_for over the same
 * units), which the SIMD classes run there. SERIAL's scalar loops made most of those runs' memory
 * accesses, each one instrumented. Under ThreadSanitizer only where another class runs, so the
 * driver still runs. */
static inline int check_serial_left_to_native(void) {
    if (check_emulated()) return 1;
    return CHECK_UNDER_TSAN && uform_cpu_class_supported(UFORM_CPU_CLASS_INTEL_HASWELL);
}

/* check_class_runs, except that SERIAL answers 0 where check_serial_left_to_native says so, noted
 * once as "serial: left to the native run". Only loops whose classes are each checked against an
 * independent reference use this; a test that keeps SERIAL's result as the other classes'
 * reference must not. */
static inline int check_class_runs_unless_serial_left_to_native(uform_cpu_class_t cpu_class) {
    if (cpu_class == UFORM_CPU_CLASS_SERIAL && check_serial_left_to_native()) {
        static int noted = 0;
        if (!noted)
            printf("serial: left to the native run (make test ran it; %s)\n",
                   check_emulated() ? "UFORM_TEST_EMULATED" : "ThreadSanitizer checks the shared threading"),
                noted = 1;
        return 0;
    }
    return check_class_runs(cpu_class);
}

#endif
