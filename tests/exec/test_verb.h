/*
 * A verb that exists only in the test binaries: it drives executors, arenas and progress the way
 * real verbs do (a request struct, uform__executor_call), without a model. Never part of libuform.
 *
 * It runs `units` units of work; each unit runs a parallel loop of `prongs` prongs that count how
 * often each prong ran, writes the unit's index into row `unit` of its output, and reports progress.
 * With `gate` set it first waits until *gate becomes non-zero, so a test can hold the executor.
 */
#ifndef UFORM_TESTS_TEST_VERB_H
#define UFORM_TESTS_TEST_VERB_H

#include <sched.h>
#include <string.h>

#include "core/arena.h"
#include "core/outcome.h"
#include "exec/call.h"
#include "uform/uform.h"

typedef struct test_verb_t {
    uform_executor_t executor;     /* in */
    uform_completion_t completion; /* in */
    uform_arena_t arena;           /* in: may be NULL (then no output) */
    uform_progress_t progress;     /* in */
    size_t units;                  /* in */
    size_t prongs;                 /* in: parallel prongs per unit */
    volatile uint32_t *gate;       /* in: wait until non-zero before working */
    volatile uint32_t *started;    /* in: set to 1 once the call runs */
    uint64_t sequence;             /* in: appended to `log` when the call runs */
    uint64_t *log;                 /* in: shared log of sequences, `log_count` advanced atomically */
    size_t *log_count;
    uint32_t *prong_hits;          /* in: prongs counters (may be NULL) */
    size_t threads_seen;           /* out: uform__parallel_threads of the call */
    uform_outcome_t outcome;       /* out */
    uform_matrix_t output;         /* out: units x 1 F32, row u holds u */
} test_verb_t;

typedef struct test_prong_context_t {
    uint32_t *hits;
} test_prong_context_t;

static void test_verb_prong(void *context, size_t thread, size_t prong) {
    test_prong_context_t *prong_context = context;
    if (prong_context->hits) __atomic_add_fetch(&prong_context->hits[prong], 1, __ATOMIC_RELAXED);
}

static uform_status_t test_verb_run(void *pointer, uform__call_context_t *context) {
    test_verb_t *request = pointer;
    if (request->started) __atomic_store_n(request->started, 1, __ATOMIC_RELEASE);
    if (request->gate)
        while (!__atomic_load_n(request->gate, __ATOMIC_ACQUIRE)) sched_yield();
    if (request->log) {
        size_t slot = __atomic_fetch_add(request->log_count, 1, __ATOMIC_ACQ_REL);
        request->log[slot] = request->sequence;
    }
    request->threads_seen = uform__parallel_threads(context->parallel);
    uform__progress_begin(&context->progress, context->progress_options, request->units);
    float *rows = NULL;
    if (context->arena) {
        uform_status_t status = uform__arena_matrix(context->arena, request->units, 1, UFORM_SCALAR_F32,
                                                    &request->output, context->outcome, context->function);
        if (status != UFORM_OK) return status;
        rows = request->output.data;
    }
    test_prong_context_t prong_context = {request->prong_hits};
    for (size_t unit = 0; unit < request->units; ++unit) {
        uform__parallel_for(context->parallel, request->prongs, test_verb_prong, &prong_context);
        if (rows) *(float *)((char *)rows + unit * request->output.stride_bytes) = (float)unit;
        if (uform__progress_advance(&context->progress, unit + 1) == UFORM_CANCEL)
            return uform__fail(context->outcome, UFORM_CANCELLED, context->function, "cancelled after unit %zu of %zu",
                               unit + 1, request->units);
    }
    if (request->units == 0) uform__progress_advance(&context->progress, 0);
    return UFORM_OK;
}

static uform_status_t test_verb(test_verb_t *request) {
    uform__call_t call;
    memset(&call, 0, sizeof call);
    call.run = test_verb_run;
    call.request = request;
    call.outcome = &request->outcome;
    call.completion = request->completion;
    call.arena = request->arena;
    call.progress = &request->progress;
    call.function = "test_verb";
    return uform__executor_call(request->executor, &call);
}

#endif
