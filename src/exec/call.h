/*
 * How a verb runs on an executor.
 *
 * A verb fills a `uform__call_t` (its run function, its request, the request's public outcome, arena
 * and progress options) and hands it to `uform__executor_call`, which decides where and when it runs:
 *
 *   - blocking: on the calling thread now, or UFORM_CONTENDED at once if the executor or the arena is
 *     held; the public outcome is final when it returns;
 *   - deferred: queued (FIFO, up to the executor's deferred limit) and run by the executor's lead
 *     thread; the public outcome reads UFORM_DEFERRED until the lead publishes the final status.
 *
 * The run function fills a private outcome (never the public one, so a deferred call's status is
 * published exactly once, after everything else), uses `context->parallel` for its parallel loops
 * and `context->progress` to report and to learn of cancellation. When it returns, the executor
 * copies the message, releases the arena, and publishes the status with release order.
 */
#ifndef UFORM_EXEC_CALL_H
#define UFORM_EXEC_CALL_H

#include "core/parallel.h"
#include "core/progress.h"
#include "uform/uform.h"

typedef struct uform__call_context_t {
    const uform__parallel_t *parallel; /* the executor's threads; NULL on the calling-thread executor */
    uform_cpu_class_t cpu_class;       /* the class whose kernels this call dispatches to */
    uform_arena_t arena;               /* held for this call and rewound, or NULL */
    uform__progress_t progress;        /* begun with total 0; the run function calls uform__progress_begin */
    const uform_progress_t *progress_options;
    uform_outcome_t *outcome;          /* private: fill it with uform__fail(context->outcome, ...) */
    const char *function;              /* the public verb's name, for messages */
} uform__call_context_t;

typedef uform_status_t (*uform__call_run_fn)(void *request, uform__call_context_t *context);

typedef struct uform__call_t {
    uform__call_run_fn run;
    void *request;                      /* passed to `run`; for a deferred call it must stay alive until final */
    uform_outcome_t *outcome;           /* the request's public outcome */
    uform_completion_t completion;
    uform_arena_t arena;                /* optional: acquired, made stale and rewound for the call */
    const uform_progress_t *progress;   /* optional, lives in the request */
    const char *function;               /* public name of the verb */
} uform__call_t;

/* Runs or queues a call as described above; answers the status the verb should return (the final
 * status for a blocking call, UFORM_DEFERRED for a queued one, or the refusal). */
uform_status_t uform__executor_call(uform_executor_t executor, const uform__call_t *call);

#endif
