/*
 * Shared plumbing of the signal tests: a scratch directory, raw file I/O and one run of
 * tests/kernels/signal_reference.py (by Debian's python3 with torch) over a manifest of cases.
 * Every test executable takes two arguments: the python interpreter and the script's path.
 */
#ifndef UFORM_TESTS_SIGNAL_COMMON_H
#define UFORM_TESTS_SIGNAL_COMMON_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pthread.h>

#include "common/check.h"
#include "core/parallel.h"

static char signal_directory[256];

/* Creates the scratch directory; answers 0 on failure (reported as a failed CHECK). */
static inline int signal_directory_make(void) {
    const char *base = getenv("TMPDIR");
    snprintf(signal_directory, sizeof(signal_directory), "%s/uform-signal-XXXXXX", base && *base ? base : "/tmp");
    int made = mkdtemp(signal_directory) != NULL;
    CHECK_MSG(made, "mkdtemp(%s) failed", signal_directory);
    return made;
}

static inline void signal_path(char *path, size_t capacity, const char *name, const char *suffix) {
    snprintf(path, capacity, "%s/%s.%s", signal_directory, name, suffix);
}

static inline int signal_write(const char *name, const char *suffix, const void *data, size_t bytes) {
    char path[512];
    signal_path(path, sizeof(path), name, suffix);
    FILE *file = fopen(path, "wb");
    int written = file && fwrite(data, 1, bytes, file) == bytes;
    if (file) written = (fclose(file) == 0) && written;
    CHECK_MSG(written, "could not write %s", path);
    return written;
}

/* Reads exactly `bytes` bytes; a missing or differently sized file fails a CHECK and answers 0. */
static inline int signal_read(const char *name, const char *suffix, void *data, size_t bytes) {
    char path[512];
    signal_path(path, sizeof(path), name, suffix);
    FILE *file = fopen(path, "rb");
    size_t got = 0;
    int extra = 0;
    if (file) {
        got = fread(data, 1, bytes, file);
        extra = fgetc(file) != EOF;
        fclose(file);
    }
    int ok = file && got == bytes && !extra;
    CHECK_MSG(ok, "%s: expected %zu bytes, read %zu%s%s", path, bytes, got, extra ? " and more" : "",
              file ? "" : " (missing)");
    return ok;
}

static FILE *signal_manifest;

static inline void signal_case(const char *format, ...) {
    if (!signal_manifest) {
        char path[512];
        snprintf(path, sizeof(path), "%s/manifest.txt", signal_directory);
        signal_manifest = fopen(path, "w");
        if (!signal_manifest) return;
    }
    va_list arguments;
    va_start(arguments, format);
    vfprintf(signal_manifest, format, arguments);
    va_end(arguments);
    fputc('\n', signal_manifest);
}

/* Runs the reference script over the manifest; a non-zero exit fails a CHECK and answers 0. */
static inline int signal_run_reference(const char *python, const char *script) {
    if (signal_manifest) fclose(signal_manifest);
    signal_manifest = NULL;
    char command[2048];
    snprintf(command, sizeof(command), "'%s' '%s' '%s'", python, script, signal_directory);
    int status = system(command);
    CHECK_MSG(status == 0, "reference failed (status %d): %s", status, command);
    return status == 0;
}

static inline void signal_directory_remove(void) {
    char command[512];
    snprintf(command, sizeof(command), "rm -rf '%s'", signal_directory);
    if (strstr(signal_directory, "uform-signal-")) {
        int ignored = system(command);
        (void)ignored;
    }
}

static inline uint64_t signal_seed(int argc, char **argv, int index) {
    uint64_t seed = argc > index ? strtoull(argv[index], NULL, 0) : 20261129u;
    printf("seed %llu\n", (unsigned long long)seed);
    return seed;
}

/* A real thread pool of a few threads for the parallel-for contract: thread t runs prongs t,
 * t + threads, ... so prongs genuinely run concurrently, in an order unrelated to their index. */
typedef struct signal_pool_job_t {
    size_t thread, threads, n;
    uform__prong_fn fn;
    void *context;
} signal_pool_job_t;

static inline void *signal_pool_worker(void *opaque) {
    signal_pool_job_t *job = opaque;
    for (size_t prong = job->n; prong-- > 0;)
        if (prong % job->threads == job->thread) job->fn(job->context, job->thread, prong);
    return NULL;
}

static inline void signal_pool_for_n(void *self, size_t n, uform__prong_fn fn, void *context) {
    const size_t threads = *(const size_t *)self;
    pthread_t handles[16];
    signal_pool_job_t jobs[16];
    for (size_t t = 0; t < threads; ++t) {
        jobs[t] = (signal_pool_job_t){t, threads, n, fn, context};
        if (pthread_create(&handles[t], NULL, signal_pool_worker, &jobs[t]) != 0) {
            signal_pool_worker(&jobs[t]); /* no thread: run this share here */
            handles[t] = pthread_self();
        }
    }
    for (size_t t = 0; t < threads; ++t)
        if (!pthread_equal(handles[t], pthread_self())) pthread_join(handles[t], NULL);
}

static size_t signal_pool_threads = 3;
static const uform__parallel_t signal_pool = {3, signal_pool_for_n, &signal_pool_threads};

#endif
