/*
 * `make demo` until the perception model lands: a tour of the runtime every verb runs on.
 *
 * The model (issue 4) is not in the library yet, so this program says so and exercises what is:
 * an executor with its own threads, a blocking call, deferred calls queued in order, progress
 * reports with a bar, cancellation, arenas whose views go stale, and contention. Its "verb" fills a
 * matrix of sine features (rows of sin(k·x) for a Fourier-feature embedding of a number) in
 * parallel prongs; it is compiled into this program only, never into libuform.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/arena.h"
#include "core/outcome.h"
#include "exec/call.h"
#include "uform/uform.h"

typedef struct features_request_t {
    uform_executor_t executor;
    uform_completion_t completion;
    uform_arena_t arena;
    uform_progress_t progress;
    size_t rows, columns;
    uform_outcome_t outcome;
    uform_matrix_t features; /* out: rows x columns F32 */
} features_request_t;

typedef struct features_block_t {
    uform_matrix_t *features;
    size_t first_row, rows;
} features_block_t;

static void features_prong(void *context, size_t thread, size_t prong) {
    features_block_t *block = context;
    size_t row = block->first_row + prong;
    if (prong >= block->rows) return;
    float *out = (float *)((char *)block->features->data + row * block->features->stride_bytes);
    double x = (double)row / 100.0;
    for (size_t k = 0; k < block->features->columns; ++k) out[k] = (float)sin((double)(k + 1) * x);
}

static uform_status_t features_run(void *pointer, uform__call_context_t *context) {
    features_request_t *request = pointer;
    uform__progress_begin(&context->progress, context->progress_options, request->rows);
    uform_status_t status = uform__arena_matrix(context->arena, request->rows, request->columns, UFORM_SCALAR_F32,
                                                &request->features, context->outcome, context->function);
    if (status != UFORM_OK) return status;
    enum { rows_per_unit = 256 };
    for (size_t first = 0; first < request->rows; first += rows_per_unit) {
        size_t rows = request->rows - first < rows_per_unit ? request->rows - first : rows_per_unit;
        features_block_t block = {&request->features, first, rows};
        uform__parallel_for(context->parallel, rows, features_prong, &block);
        if (uform__progress_advance(&context->progress, first + rows) == UFORM_CANCEL)
            return uform__fail(context->outcome, UFORM_CANCELLED, context->function, "cancelled after %zu of %zu rows",
                               first + rows, request->rows);
    }
    return UFORM_OK;
}

static uform_status_t features_compute(features_request_t *request) {
    uform__call_t call = {features_run, request, &request->outcome, request->completion,
                          request->arena, &request->progress, "demo_features"};
    return uform__executor_call(request->executor, &call);
}

static uform_continuation_t progress_bar(size_t completed, size_t total, void *state) {
    int width = 40, filled = total ? (int)(completed * (size_t)width / total) : width;
    fprintf(stderr, "\r  [%.*s%*s] %zu/%zu", filled, "########################################", width - filled, "",
            completed, total);
    if (completed == total) fputc('\n', stderr);
    return UFORM_CONTINUE;
}

static uform_continuation_t cancel_halfway(size_t completed, size_t total, void *state) {
    return completed * 2 >= total ? UFORM_CANCEL : UFORM_CONTINUE;
}

static double now_seconds(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + (double)time.tv_nsec * 1e-9;
}

static int report(const char *what, const uform_outcome_t *outcome) {
    char line[512];
    uform_outcome_format(outcome, line, sizeof line);
    printf("  %-34s %s\n", what, line);
    return uform_outcome_status(outcome) == UFORM_OK;
}

int main(void) {
    int major, minor, patch;
    uform_version(&major, &minor, &patch);
    printf("UForm %d.%d.%d runtime demo on %s.\n", major, minor, patch, uform_cpu_class_name(uform_cpu_class_detect()));
    printf("The perception model is not in the library yet (issue 4): this demo exercises the runtime\n"
           "it will run on — executors, blocking and deferred calls, progress, cancellation, arenas.\n\n");

    uform_outcome_t outcome = {0};
    uform_executor_t executor = NULL;
    if (uform_executor_for_ram(NULL, 0, 16, &executor, &outcome) != UFORM_OK) return !report("executor", &outcome);
    printf("Executor: %zu compute thread(s), kernels for %s.\n", uform_executor_threads(executor),
           uform_cpu_class_name(uform_executor_cpu_class(executor)));

    uform_arena_t arena = NULL;
    if (uform_arena_for_executor(executor, &arena, &outcome) != UFORM_OK) return !report("arena", &outcome);

    printf("\n1. A blocking call with a progress bar (20000 rows x 64 Fourier features):\n");
    fflush(stdout);
    features_request_t blocking = {executor, UFORM_COMPLETION_BLOCKING, arena, {progress_bar, NULL, 20}, 20000, 64};
    double start = now_seconds();
    features_compute(&blocking);
    double seconds = now_seconds() - start;
    if (!report("status:", &blocking.outcome)) return 1;
    const void *row = NULL;
    uform_matrix_row(&blocking.features, 314, &row);
    printf("  row 314, feature 1 = %.6f (sin(3.14) = %.6f), %.1f ms\n", ((const float *)row)[0], sin(3.14), seconds * 1e3);

    printf("\n2. Eight deferred calls, each with its own arena, queued in order:\n");
    features_request_t deferred[8];
    uform_arena_t arenas[8] = {0};
    for (int i = 0; i < 8; ++i) {
        uform_arena_for_executor(executor, &arenas[i], NULL);
        features_request_t request = {executor, UFORM_COMPLETION_DEFERRED, arenas[i], {0}, 5000 + 1000 * (size_t)i, 32};
        deferred[i] = request;
        features_compute(&deferred[i]);
    }
    printf("  right after submission the last one reads: %s\n",
           uform_status_name(uform_outcome_status(&deferred[7].outcome)));
    uform_executor_drain(executor, UFORM_MOOD_PARKED, NULL);
    for (int i = 0; i < 8; ++i) {
        char what[64];
        snprintf(what, sizeof what, "deferred call %d (%zu rows):", i, deferred[i].rows);
        report(what, &deferred[i].outcome);
    }

    printf("\n3. Contention: a deferred call holds the arena; another call on it is refused:\n");
    features_request_t holder = {executor, UFORM_COMPLETION_DEFERRED, arena, {0}, 200000, 16};
    features_request_t intruder = {NULL, UFORM_COMPLETION_BLOCKING, arena, {0}, 10, 16};
    features_compute(&holder);
    features_compute(&intruder);
    report("second call on the held arena:", &intruder.outcome);
    uform_outcome_wait(&holder.outcome);
    report("the holder, once final:", &holder.outcome);

    printf("\n4. Views go stale when the arena is reused:\n");
    uform_status_t stale = uform_matrix_row(&blocking.features, 314, &row);
    printf("  reading the first call's view now: %s\n", uform_status_name(stale));

    printf("\n5. Cancelling from the progress handler halfway:\n");
    features_request_t cancelled = {executor, UFORM_COMPLETION_BLOCKING, arena, {cancel_halfway, NULL, 10}, 100000, 16};
    features_compute(&cancelled);
    report("status:", &cancelled.outcome);
    features_request_t after = {executor, UFORM_COMPLETION_BLOCKING, arena, {0}, 1000, 16};
    features_compute(&after);
    report("the same executor and arena after:", &after.outcome);

    for (int i = 0; i < 8; ++i) uform_arena_free(arenas[i]);
    uform_arena_free(arena);
    uform_executor_free(executor);
    printf("\nDone.\n");
    return 0;
}
