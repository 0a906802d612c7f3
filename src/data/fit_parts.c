/*
 * uform_trainer_fit's saves, evaluations and callback (fit.h): what the loop does between steps.
 * Each is the sequence `uform train` ran by hand before the loop moved into the library, so a
 * checkpoint written here is the file the command wrote (the same trainer save, the same cursor as
 * its user metadata).
 */
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "data/fit.h"

void uform__fit_tell(uform__fit_run_t *run, uform_fit_event_t event) {
    uform_trainer_fit_t *request = run->request;
    if (!request->callback) return;
    if (request->callback(request, event, request->state) == UFORM_CANCEL && event != UFORM_FIT_ENDED) run->cancelled = 1;
}

uform_status_t uform__fit_fail_as(uform__fit_run_t *run, const uform_outcome_t *failed) {
    /* The failed call's own name and words, so a message reads as it did when callers made the
     * call themselves ("uform_loader_next: ... line 6 of ..."). */
    uform_status_t status = uform_outcome_status(failed);
    if (status == UFORM_OK || status == UFORM_DEFERRED) status = UFORM_INTERNAL;
    return uform__fail(&run->request->outcome, status, failed->function[0] ? failed->function : "uform_trainer_fit", "%s",
                       failed->message);
}

char *uform__fit_cursor(uform__fit_run_t *run) {
    uform_trainer_fit_t *request = run->request;
    uform_outcome_t outcome = {0};
    size_t length = 0;
    if (uform_loader_cursor(request->loader, NULL, 0, &length, &outcome) != UFORM_OK) {
        uform__fit_fail_as(run, &outcome);
        return NULL;
    }
    char *cursor = malloc(length + 1);
    if (!cursor) {
        uform__fail(&request->outcome, UFORM_OUT_OF_MEMORY, "uform_trainer_fit", "cannot allocate the data cursor of %zu bytes", length);
        return NULL;
    }
    /* The second call answers the text the first one measured, without a collective. */
    if (uform_loader_cursor(request->loader, cursor, length + 1, &length, &outcome) != UFORM_OK) {
        free(cursor);
        uform__fit_fail_as(run, &outcome);
        return NULL;
    }
    return cursor;
}

uform_status_t uform__fit_save_with(uform__fit_run_t *run, const char *cursor) {
    uform_trainer_fit_t *request = run->request;
    /* Every member holds the same weights after a step, so member 0 alone writes (uform_trainer_save). */
    if (!run->leads) return UFORM_OK;
    uform_trainer_save_t save = {0};
    save.trainer = request->trainer, save.path = request->save_path, save.user_metadata = cursor;
    if (uform_trainer_save(&save) != UFORM_OK) return uform__fit_fail_as(run, &save.outcome);
    uform_trainer_description_t description;
    uform_trainer_describe(request->trainer, &description);
    request->saved_step = description.steps;
    return UFORM_OK;
}

uform_status_t uform__fit_save(uform__fit_run_t *run, int final) {
    uform_trainer_fit_t *request = run->request;
    /* Every member takes the cursor: over shards it gathers every partition's stream. */
    char *cursor = uform__fit_cursor(run);
    if (!cursor) return uform_outcome_status(&request->outcome);
    uform_status_t status = uform__fit_save_with(run, cursor);
    free(cursor);
    if (status != UFORM_OK) return status;
    request->saved_final = final;
    uform__fit_tell(run, UFORM_FIT_SAVED);
    return UFORM_OK;
}

/* One held-out set on `model` into the request's evaluation. */
static uform_status_t evaluate_set(uform__fit_run_t *run, uform_model_t model, size_t set, uint64_t step) {
    uform_trainer_fit_t *request = run->request;
    static const size_t default_ks[2] = {1, 5};
    uform_evaluate_t evaluate = {0};
    evaluate.model = model, evaluate.executor = run->executor, evaluate.dataset = request->eval_datasets[set];
    evaluate.arena = run->arena;
    evaluate.ks = request->eval_ks_count ? request->eval_ks : default_ks;
    evaluate.ks_count = request->eval_ks_count ? request->eval_ks_count : 2;
    if (uform_evaluate(&evaluate) != UFORM_OK) {
        request->error = evaluate.error;
        return uform__fit_fail_as(run, &evaluate.outcome);
    }
    request->evaluation_step = step, request->evaluation_set = set;
    memcpy(request->evaluation, evaluate.results, sizeof request->evaluation);
    return UFORM_OK;
}

uform_status_t uform__fit_evaluate(uform__fit_run_t *run, uint64_t step) {
    uform_trainer_fit_t *request = run->request;
    if (!run->leads || request->eval_count == 0) return UFORM_OK;
    /* One snapshot serves every set: the weights do not change between them. */
    uform_ram_options_t options = {0};
    options.compute = request->eval_compute;
    uform_model_t model = NULL;
    uform_outcome_t outcome = {0};
    if (uform_trainer_snapshot(request->trainer, &options, &model, &outcome) != UFORM_OK) return uform__fit_fail_as(run, &outcome);
    uform_status_t status = UFORM_OK;
    for (size_t set = 0; status == UFORM_OK && set < request->eval_count; ++set) {
        status = evaluate_set(run, model, set, step);
        if (status != UFORM_OK) break;
        uform__fit_tell(run, UFORM_FIT_EVALUATED);
        if (run->cancelled) break;
    }
    uform_model_free(model);
    return status;
}
