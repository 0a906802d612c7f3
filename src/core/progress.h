/*
 * Progress reporting for one call. Only the thread that runs the call (never a prong of a parallel
 * loop) advances it, so the handler is never invoked concurrently; the executor finishes the call
 * only after the run function returns, so it is never invoked after the call is final.
 */
#ifndef UFORM_CORE_PROGRESS_H
#define UFORM_CORE_PROGRESS_H

#include "uform/uform.h"

typedef struct uform__progress_t {
    uform_progress_callback_t callback;
    void *state;
    size_t steps;     /* at most this many reports */
    size_t total;     /* units of work in the call */
    size_t reported;  /* reports made so far */
    int cancelled;    /* the handler answered UFORM_CANCEL */
} uform__progress_t;

/* Starts reporting `total` units with the caller's handler (NULL: no reports). */
void uform__progress_begin(uform__progress_t *progress, const uform_progress_t *options, size_t total);

/*
 * Notes that `completed` units are done (monotonic, at most `total`). Reports when `completed`
 * reaches the next of `steps` evenly spaced thresholds — several crossed at once make one report —
 * and the last threshold is `total`, so the final report comes at completion. Answers
 * UFORM_CANCEL once the handler has asked to cancel (and from then on without calling it again).
 */
uform_continuation_t uform__progress_advance(uform__progress_t *progress, size_t completed);

#endif
