/*
 * uform_trainer_fit (uform.h, "The training loop"; docs/training.md, "The loop"): the loop over a
 * loader's batches that `uform train` and Python's Trainer.fit both run — the stop rules, the
 * periodic saves and evaluations (fit_parts.c), the data order resumed from the checkpoint, the
 * cancel. Written once here so that no caller repeats it or reads the cursor's format.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/outcome.h"
#include "core/path.h"
#include "data/data.h"
#include "data/fit.h"
#include "mesh/mesh.h"
#include "train/trainer.h"

static const char function[] = "uform_trainer_fit";

/* The rules a request must keep, checked before anything is opened. */
static uform_status_t check_request(uform_trainer_fit_t *request) {
    uform_outcome_t *outcome = &request->outcome;
    if (!request->trainer) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "trainer is NULL");
    if (!request->dataset) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "dataset is NULL");
    if (!isfinite(request->budget_seconds) || request->budget_seconds < 0)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "budget_seconds %g is not a valid value (a finite number >= 0)",
                           request->budget_seconds);
    if (request->steps == 0 && request->budget_seconds == 0)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "steps and budget_seconds are both 0: the loop would never stop");
    if (request->eval_every && request->eval_count == 0)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "eval_every %llu without eval_datasets",
                           (unsigned long long)request->eval_every);
    if (request->eval_count && !request->eval_datasets)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "eval_datasets is NULL with eval_count %zu", request->eval_count);
    for (size_t e = 0; e < request->eval_count; ++e)
        if (!request->eval_datasets[e]) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "eval_datasets[%zu] is NULL", e);
    if (request->save_every && !request->save_path)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "save_every %llu without save_path",
                           (unsigned long long)request->save_every);
    return UFORM_OK;
}

/* save_path's folder must exist and take new files (the save writes a temporary file beside it and
 * renames it): found now, not after the first steps' work. Member 0 alone writes, so only it asks. */
static uform_status_t check_save_path(uform__fit_run_t *run) {
    const char *path = run->request->save_path;
    if (!path || !run->leads) return UFORM_OK;
    char *folder = uform__path_folder(path);
    if (!folder) return uform__fail(&run->request->outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the name of save_path's folder");
    int writable = access(folder, W_OK | X_OK) == 0, reason = errno;
    uform_status_t status = UFORM_OK;
    if (!writable)
        status = uform__fail(&run->request->outcome, UFORM_IO, function, "cannot write save_path '%s': its folder '%s' cannot take files: %s",
                             path, folder, strerror(reason));
    free(folder);
    return status;
}

/* Opens the loader, resuming the order stored in the trainer's checkpoint when asked and possible. */
static uform_status_t open_loader(uform__fit_run_t *run) {
    uform_trainer_fit_t *request = run->request;
    uform_loader_options_t options = {0};
    options.dataset = request->dataset, options.trainer = request->trainer, options.batch = request->batch;
    options.member = request->member, options.members = request->members;
    if (run->mesh && request->member == 0 && request->members == 0)
        options.member = run->mesh->index, options.members = run->mesh->count;
    options.ahead = request->ahead, options.decode_threads = request->decode_threads;
    const char *stored = request->resume ? uform_trainer_user_metadata(request->trainer) : NULL;
    request->order = UFORM_FIT_ORDER_NEW;
    if (stored && uform__cursor_is(stored)) options.cursor = stored;
    else if (stored) request->order = UFORM_FIT_ORDER_NOT_A_CURSOR;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_loader_open(&options, &request->loader, &outcome);
    if (status == UFORM_OK && options.cursor) request->order = UFORM_FIT_ORDER_RESUMED;
    /* A cursor of other data, seed, batch or partitioning: a new order, as documented, not a failure. */
    if (options.cursor && (status == UFORM_CONFIG_MISMATCH || status == UFORM_INVALID_ARGUMENT)) {
        request->order = UFORM_FIT_ORDER_MISMATCH;
        memcpy(request->order_reason, outcome.message, sizeof request->order_reason);
        request->order_reason[sizeof request->order_reason - 1] = 0;
        options.cursor = NULL;
        status = uform_loader_open(&options, &request->loader, &outcome);
    }
    return status == UFORM_OK ? UFORM_OK : uform__fit_fail_as(run, &outcome);
}

/* Handed to every step: over a mesh the budget's deadline cancels the step in progress (on every
 * member at once), and the caller's step_progress may cancel it too. */
static uform_continuation_t step_progress(size_t completed, size_t total, void *state) {
    uform__fit_run_t *run = state;
    const uform_progress_t *caller = &run->request->step_progress;
    if (caller->callback && caller->callback(completed, total, caller->state) == UFORM_CANCEL) {
        run->step_cancelled = 1;
        return UFORM_CANCEL;
    }
    return run->deadline > 0 && uform__seconds_now() >= run->deadline ? UFORM_CANCEL : UFORM_CONTINUE;
}

/* The learning rate of step `number` on elapsed time (steps 0 with a budget): the warmup by steps,
 * then the cosine at the fraction of the budget gone. */
static double rate_on_time(const uform__fit_run_t *run, uint64_t number, double elapsed, double warmup) {
    double fraction = elapsed / run->request->budget_seconds;
    if (fraction > 1) fraction = 1;
    uform_trainer_t trainer = run->request->trainer;
    return (double)number <= warmup ? uform_trainer_schedule(trainer, (double)number, 0)
                                    : uform_trainer_schedule(trainer, warmup + fraction, warmup + 1);
}

/* Over a mesh, a lost member: member 0 keeps the last completed step with the data order from before
 * the failed one (taken while every member still answered), so a resume draws its batch again. */
static void save_after_loss(uform__fit_run_t *run, const char *before_step, uform_status_t code) {
    if (!run->mesh || !run->leads || !before_step || !run->request->save_path) return;
    if (code != UFORM_PEER_LOST && code != UFORM_TIMEOUT) return;
    uform_outcome_t kept = run->request->outcome; /* the loss is what the call reports, not the save */
    if (uform__fit_save_with(run, before_step) == UFORM_OK) run->request->saved_at_failure = 1;
    run->request->outcome = kept;
}

/* The steps, with their saves and evaluations, until a stop rule. Answers the loop's status. */
static uform_status_t loop(uform__fit_run_t *run, double start) {
    uform_trainer_fit_t *request = run->request;
    uform_trainer_description_t description;
    uform_trainer_describe(request->trainer, &description);
    double warmup = (double)description.warmup_steps;
    char *before_step = NULL;
    uform_status_t status = UFORM_OK;
    while (!run->cancelled && (request->steps == 0 || request->steps_done < request->steps)) {
        double elapsed = uform__seconds_now() - start;
        if (!run->mesh && request->budget_seconds > 0 && elapsed >= request->budget_seconds) break;
        /* A step of its own, copied into the request once it ran: `step` then always holds the last
         * step that ran, also when the loop ends on a pass that drew no batch. */
        uform_trainer_step_t own = {0}, *step = &own;
        step->trainer = request->trainer, step->arena = run->arena, step->accumulate = request->accumulate;
        step->progress.callback = step_progress, step->progress.state = run;
        if (run->mesh) {
            free(before_step);
            if (!(before_step = uform__fit_cursor(run))) {
                status = uform_outcome_status(&request->outcome);
                break;
            }
        }
        uform_loader_next_t next = {0};
        next.loader = request->loader, next.step = step;
        if (uform_loader_next(&next) != UFORM_OK) {
            request->error = next.error;
            status = uform__fit_fail_as(run, &next.outcome);
            break;
        }
        if (next.done) break;
        request->twins = next.twins;
        if (request->steps == 0 && request->budget_seconds > 0)
            step->learning_rate_override = rate_on_time(run, description.steps + request->steps_done + 1, elapsed, warmup);
        double step_start = uform__seconds_now();
        uform_status_t stepped = uform_trainer_step(step);
        request->step = own;
        step = &request->step;
        if (stepped != UFORM_OK) {
            uform_status_t code = uform_outcome_status(&step->outcome);
            if (code == UFORM_CANCELLED && (run->step_cancelled || !run->mesh)) run->cancelled = 1;
            else if (code != UFORM_CANCELLED) {
                status = uform__fit_fail_as(run, &step->outcome);
                save_after_loss(run, before_step, code);
            }
            /* Otherwise the budget's deadline cancelled the step over a mesh: the loop ends normally. */
            break;
        }
        request->stepping_seconds += uform__seconds_now() - step_start;
        request->steps_done += 1, request->samples += next.samples;
        request->loss = step->loss;
        request->elapsed_seconds = uform__seconds_now() - start;
        uform__fit_tell(run, UFORM_FIT_STEPPED);
        if (request->save_every && request->steps_done % request->save_every == 0 && (status = uform__fit_save(run, 0)) != UFORM_OK)
            break;
        if (request->eval_every && request->steps_done % request->eval_every == 0 &&
            (status = uform__fit_evaluate(run, step->step)) != UFORM_OK)
            break;
    }
    free(before_step);
    return status;
}

/* After the loop: the final save, then (not after a cancel) the final evaluation. */
static uform_status_t finish(uform__fit_run_t *run, double start) {
    uform_trainer_fit_t *request = run->request;
    request->elapsed_seconds = uform__seconds_now() - start;
    uform_loader_stats(request->loader, &request->loader_stats, NULL, 0, NULL);
    uform_status_t status = request->save_path ? uform__fit_save(run, 1) : UFORM_OK;
    if (status != UFORM_OK || run->cancelled) return status;
    /* The final evaluation, unless the last step's periodic one has just made it. */
    int evaluated = request->eval_every && request->steps_done > 0 && request->steps_done % request->eval_every == 0;
    if (!evaluated) {
        uform_trainer_description_t description;
        uform_trainer_describe(request->trainer, &description);
        status = uform__fit_evaluate(run, description.steps);
    }
    return status;
}

UFORM_API uform_status_t uform_trainer_fit(uform_trainer_fit_t *request) {
    if (!request) return UFORM_INVALID_ARGUMENT;
    /* Every output starts cleared, so a failure before the loop leaves nothing stale to read. */
    request->order = UFORM_FIT_ORDER_NEW, request->loader = NULL, request->twins = 0;
    memset(request->order_reason, 0, sizeof request->order_reason);
    memset(&request->step, 0, sizeof request->step);
    request->steps_done = 0, request->samples = 0, request->loss = 0;
    request->elapsed_seconds = 0, request->stepping_seconds = 0;
    memset(&request->loader_stats, 0, sizeof request->loader_stats);
    request->evaluation_step = 0, request->evaluation_set = 0;
    memset(request->evaluation, 0, sizeof request->evaluation);
    request->saved_step = 0, request->saved_final = 0, request->saved_at_failure = 0;
    uform__data_error_clear(&request->error);
    uform_status_t status = check_request(request);
    if (status != UFORM_OK) return status;
    uform__fit_run_t run = {0};
    run.request = request, run.executor = request->trainer->executor, run.mesh = request->trainer->mesh;
    run.leads = !run.mesh || run.mesh->index == 0;
    if ((status = check_save_path(&run)) != UFORM_OK) return status;
    uform_outcome_t outcome = {0};
    if (uform_arena_for_executor(run.executor, &run.arena, &outcome) != UFORM_OK) return uform__fit_fail_as(&run, &outcome);
    if ((status = open_loader(&run)) != UFORM_OK) {
        uform_arena_free(run.arena);
        return status;
    }
    double start = uform__seconds_now();
    if (run.mesh && request->budget_seconds > 0) run.deadline = start + request->budget_seconds;
    uform__fit_tell(&run, UFORM_FIT_STARTED);
    status = loop(&run, start);
    if (status == UFORM_OK) status = finish(&run, start);
    else uform_loader_stats(request->loader, &request->loader_stats, NULL, 0, NULL);
    /* The outcome is final before UFORM_FIT_ENDED, so the callback knows how the loop ended. */
    if (status == UFORM_OK && run.cancelled)
        status = uform__fail(&request->outcome, UFORM_CANCELLED, function, "cancelled after %llu steps%s",
                             (unsigned long long)request->steps_done, request->saved_final ? "; save_path holds them" : "");
    else if (status == UFORM_OK) uform__succeed(&request->outcome, function);
    uform__fit_tell(&run, UFORM_FIT_ENDED);
    uform_loader_free(request->loader);
    request->loader = NULL;
    uform_arena_free(run.arena);
    return status;
}
