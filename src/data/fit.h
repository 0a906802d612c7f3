/*
 * uform_trainer_fit's private parts (uform.h, "The training loop"): the loop in fit.c, the saves,
 * evaluations and callback in fit_parts.c. Private to libuform.
 *
 * The loop lives in src/data, not src/train, because it drives a loader and uform_evaluate: the
 * data module may use the trainer (docs/architecture.md, "Which module may use which"), the
 * trainer may not use the data module.
 */
#ifndef UFORM_DATA_FIT_H
#define UFORM_DATA_FIT_H

#include "uform/uform.h"

/* One call's state beside its request. */
typedef struct uform__fit_run_t {
    uform_trainer_fit_t *request;
    uform_executor_t executor; /* the trainer's (NULL: the calling thread) */
    uform_arena_t arena;       /* the steps' and the evaluations' outputs */
    uform_mesh_t mesh;         /* the trainer's, or NULL */
    int leads;                 /* member 0 of the mesh, or alone: writes and evaluates */
    int cancelled;             /* the callback or step_progress answered UFORM_CANCEL */
    int step_cancelled;        /* step_progress (not the budget) cancelled the step in progress */
    double deadline;           /* over a mesh with a budget: when the step in progress is cancelled */
} uform__fit_run_t;

/* Tells the callback of `event` (when there is one) and records a cancel. */
void uform__fit_tell(uform__fit_run_t *run, uform_fit_event_t event);

/* The loader's cursor after the batches handed over, as malloc'ed text (collective over a mesh whose
 * members read their own shards), or NULL with the request's outcome set. */
char *uform__fit_cursor(uform__fit_run_t *run);

/* Writes save_path with `cursor` as its user metadata (member 0 alone) and records the saved step.
 * Answers the save's status (its message in the request's outcome). */
uform_status_t uform__fit_save_with(uform__fit_run_t *run, const char *cursor);

/* The loader's cursor, then save_path with it, then UFORM_FIT_SAVED (`final`: the end's save). */
uform_status_t uform__fit_save(uform__fit_run_t *run, int final);

/* Every held-out set evaluated on a snapshot of the trainer at `step` (member 0 alone), each then
 * told as UFORM_FIT_EVALUATED; a cancel stops after the set it answers. */
uform_status_t uform__fit_evaluate(uform__fit_run_t *run, uint64_t step);

/* Copies a failed call's status and message into the request's outcome; answers the status. */
uform_status_t uform__fit_fail_as(uform__fit_run_t *run, const uform_outcome_t *failed);

#endif
