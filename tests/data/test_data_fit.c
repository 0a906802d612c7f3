/*
 * uform_trainer_fit (uform.h, "The training loop") against a loop written by hand from
 * uform_loader_next and uform_trainer_step alone, on the manifest of the corpus make_shards.py wrote
 * (48 pictures with unique captions), with a small trainer (1 block, 32-pixel images):
 *   - the steps' losses are bit-identical to the hand loop's, and fit's evaluations at steps 3 and 6
 *     equal uform_evaluate called by hand on a snapshot at the same step, field for field (recall at
 *     8 cut-offs: with only {1, 5} a snapshot in BF16 instead of F32 went unnoticed);
 *   - the checkpoint fit saves at step 3 (save_every) resumes to the hand loop's steps 4..6, bit for bit;
 *   - a cancel from the callback at step 2 stops there, saves, answers UFORM_CANCELLED, and a resume
 *     finishes with the uncancelled run's losses;
 *   - a time budget alone stops the loop once it is spent;
 *   - the data order of a checkpoint whose metadata is no cursor, or a cursor of another batch size,
 *     is replaced by a new one and said so;
 *   - bad requests each answer their documented status and name the field.
 * Usage: test_data_fit CORPUS WORK
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "uform/uform.h"

#define STEPS 6
#define BATCH 8

static char manifest[4096], work[4096 + 16];

static uform_dataset_t open_manifest(int sequential) {
    uform_dataset_options_t options = {0};
    options.source = UFORM_DATASET_MANIFEST, options.path = manifest, options.seed = 1, options.sequential = sequential;
    uform_dataset_t dataset = NULL;
    uform_data_error_t error;
    uform_outcome_t outcome = {0};
    CHECK_MSG(uform_dataset_open(&options, &dataset, &error, &outcome) == UFORM_OK, "open: %s", outcome.message);
    return dataset;
}

/* A fresh trainer (the same seed every time), or one resumed from `resume`. */
static uform_trainer_t make_trainer(const char *resume) {
    uform_trainer_config_t config = {0};
    config.hidden = 64, config.depth = 1, config.heads = 2, config.mlp = 128, config.embedding = 32;
    config.image_size = 32, config.image_patch = 8, config.modalities = 1u << UFORM_MODALITY_TEXT | 1u << UFORM_MODALITY_IMAGE;
    config.seed = 7, config.warmup_steps = 2, config.total_steps = STEPS, config.resume = resume;
    uform_trainer_t trainer = NULL;
    uform_outcome_t outcome = {0};
    CHECK_MSG(uform_trainer_init_ram(NULL, &config, &trainer, &outcome) == UFORM_OK, "trainer: %s", outcome.message);
    return trainer;
}

/* Recall at 8 cut-offs, so that a small change of the embeddings shows in some of them. */
static const size_t ks[8] = {1, 2, 3, 4, 5, 8, 12, 20};

/* uform_evaluate by hand on a snapshot of the trainer now. */
static void evaluate_now(uform_trainer_t trainer, uform_dataset_t heldout, uform_evaluation_t results[4]) {
    uform_ram_options_t options = {0};
    uform_model_t model = NULL;
    uform_arena_t arena = NULL;
    uform_outcome_t outcome = {0};
    CHECK(uform_trainer_snapshot(trainer, &options, &model, &outcome) == UFORM_OK);
    CHECK(uform_arena_for_executor(NULL, &arena, &outcome) == UFORM_OK);
    uform_evaluate_t evaluate = {0};
    evaluate.model = model, evaluate.dataset = heldout, evaluate.arena = arena, evaluate.ks = ks, evaluate.ks_count = 8;
    CHECK_MSG(uform_evaluate(&evaluate) == UFORM_OK, "evaluate: %s", evaluate.outcome.message);
    memcpy(results, evaluate.results, sizeof evaluate.results);
    uform_arena_free(arena);
    uform_model_free(model);
}

/* The reference: STEPS steps by hand, with the evaluations after steps 3 and 6. */
static double hand_losses[STEPS];
static uform_evaluation_t hand_evaluations[2][4];

static void hand_loop(uform_dataset_t heldout) {
    uform_trainer_t trainer = make_trainer(NULL);
    uform_dataset_t dataset = open_manifest(0);
    uform_loader_options_t options = {0};
    options.dataset = dataset, options.trainer = trainer, options.batch = BATCH;
    uform_loader_t loader = NULL;
    uform_outcome_t outcome = {0};
    CHECK(uform_loader_open(&options, &loader, &outcome) == UFORM_OK);
    uform_arena_t arena = NULL;
    CHECK(uform_arena_for_executor(NULL, &arena, &outcome) == UFORM_OK);
    for (int s = 0; s < STEPS; ++s) {
        uform_trainer_step_t step = {0};
        step.trainer = trainer, step.arena = arena;
        uform_loader_next_t next = {0};
        next.loader = loader, next.step = &step;
        CHECK(uform_loader_next(&next) == UFORM_OK && !next.done);
        CHECK_MSG(uform_trainer_step(&step) == UFORM_OK, "step: %s", step.outcome.message);
        hand_losses[s] = step.loss;
        if (s == 2 || s == 5) evaluate_now(trainer, heldout, hand_evaluations[s == 5]);
    }
    uform_arena_free(arena);
    uform_loader_free(loader);
    uform_dataset_free(dataset);
    uform_trainer_free(trainer);
}

/* What a fit's callback saw. */
typedef struct seen_t {
    double losses[64];
    uint64_t step_numbers[64];
    size_t steps, evaluations, started, ended, events, saves;
    double elapsed[2];        /* the loop's seconds after the step before the last, and after the last */
    uform_fit_event_t first, last;
    uint64_t evaluation_steps[8];
    uform_evaluation_t evaluated[8][4];
    uint64_t cancel_at;       /* answer UFORM_CANCEL after this many steps (0: never) */
    const char *copy_step3;   /* copy save_path here when the save after step 3 is told */
} seen_t;

static void copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    CHECK(in && out);
    char buffer[65536];
    size_t got;
    while (in && out && (got = fread(buffer, 1, sizeof buffer, in)) > 0) CHECK(fwrite(buffer, 1, got, out) == got);
    if (in) fclose(in);
    if (out) fclose(out);
}

static uform_continuation_t listen(const uform_trainer_fit_t *fit, uform_fit_event_t event, void *state) {
    seen_t *seen = state;
    if (seen->events++ == 0) seen->first = event;
    seen->last = event;
    if (event == UFORM_FIT_STARTED) {
        seen->started += 1;
        CHECK(fit->loader != NULL);
    }
    if (event == UFORM_FIT_ENDED) seen->ended += 1;
    if (event == UFORM_FIT_STEPPED && seen->steps < 64)
        seen->losses[seen->steps] = fit->step.loss, seen->step_numbers[seen->steps] = fit->step.step;
    if (event == UFORM_FIT_STEPPED) seen->steps += 1, seen->elapsed[0] = seen->elapsed[1], seen->elapsed[1] = fit->elapsed_seconds;
    if (event == UFORM_FIT_EVALUATED && seen->evaluations < 8) {
        seen->evaluation_steps[seen->evaluations] = fit->evaluation_step;
        memcpy(seen->evaluated[seen->evaluations++], fit->evaluation, sizeof fit->evaluation);
    }
    if (event == UFORM_FIT_SAVED) {
        seen->saves += 1;
        if (seen->copy_step3 && fit->steps_done == 3 && !fit->saved_final) copy_file(fit->save_path, seen->copy_step3);
    }
    return seen->cancel_at && event == UFORM_FIT_STEPPED && fit->steps_done == seen->cancel_at ? UFORM_CANCEL : UFORM_CONTINUE;
}

static void path_in_work(char *path, size_t capacity, const char *name) { snprintf(path, capacity, "%s/%s", work, name); }

/* Resumes `checkpoint` (its weights and its data order) for the hand loop's steps after `done`:
 * the losses and step numbers must be the hand loop's, bit for bit. */
static void check_resumed(const char *checkpoint, size_t done, const char *what) {
    uform_trainer_t trainer = make_trainer(checkpoint);
    uform_dataset_t dataset = open_manifest(0);
    seen_t rest = {0};
    uform_trainer_fit_t resumed = {0};
    resumed.trainer = trainer, resumed.dataset = dataset, resumed.batch = BATCH, resumed.steps = STEPS - done, resumed.resume = 1;
    resumed.callback = listen, resumed.state = &rest;
    CHECK_MSG(uform_trainer_fit(&resumed) == UFORM_OK, "%s: %s", what, resumed.outcome.message);
    CHECK(resumed.order == UFORM_FIT_ORDER_RESUMED);
    CHECK_EQ_INT(rest.steps, STEPS - done);
    for (size_t s = 0; s < rest.steps && s < STEPS - done; ++s) {
        CHECK_MSG(rest.losses[s] == hand_losses[done + s], "%s, step %zu: %.17g, by hand %.17g", what, done + s + 1, rest.losses[s],
                  hand_losses[done + s]);
        CHECK_EQ_INT(rest.step_numbers[s], done + s + 1);
    }
    CHECK_MSG(resumed.loss == hand_losses[STEPS - 1], "%s: final loss %.17g, by hand %.17g", what, resumed.loss, hand_losses[STEPS - 1]);
    uform_trainer_free(trainer);
    uform_dataset_free(dataset);
}

/* fit's steps and evaluations against the hand loop's; its step-3 checkpoint resumes to the rest. */
static void test_fit_equals_hand_loop(uform_dataset_t heldout) {
    char out[4200], at3[4200];
    path_in_work(out, sizeof out, "fit.safetensors"), path_in_work(at3, sizeof at3, "fit_step3.safetensors");
    uform_trainer_t trainer = make_trainer(NULL);
    uform_dataset_t dataset = open_manifest(0);
    seen_t seen = {0};
    seen.copy_step3 = at3;
    uform_trainer_fit_t fit = {0};
    fit.trainer = trainer, fit.dataset = dataset, fit.batch = BATCH, fit.steps = STEPS;
    fit.eval_datasets = &heldout, fit.eval_count = 1, fit.eval_every = 3, fit.eval_ks = ks, fit.eval_ks_count = 8;
    fit.save_path = out, fit.save_every = 3, fit.callback = listen, fit.state = &seen;
    CHECK_MSG(uform_trainer_fit(&fit) == UFORM_OK, "fit: %s", fit.outcome.message);
    CHECK_EQ_INT(fit.steps_done, STEPS);
    CHECK_EQ_INT(seen.steps, STEPS);
    for (size_t s = 0; s < seen.steps && s < STEPS; ++s) {
        CHECK_MSG(seen.losses[s] == hand_losses[s], "step %zu: fit %.17g, by hand %.17g", s + 1, seen.losses[s], hand_losses[s]);
        CHECK_EQ_INT(seen.step_numbers[s], s + 1);
    }
    CHECK(fit.loss == hand_losses[STEPS - 1]);
    CHECK_EQ_INT(fit.samples, STEPS * BATCH);
    /* The control: the hand loop's evaluations at steps 3 and 6 differ, so an evaluation made at
     * another step than asked could not pass the comparison below. */
    CHECK(memcmp(hand_evaluations[0], hand_evaluations[1], sizeof hand_evaluations[0]) != 0);
    /* The periodic evaluation at step 6 is also the final one: two, not three. */
    CHECK_EQ_INT(seen.evaluations, 2);
    for (size_t e = 0; e < seen.evaluations && e < 2; ++e) {
        CHECK_EQ_INT(seen.evaluation_steps[e], 3 * (e + 1));
        CHECK(seen.evaluated[e][UFORM_MODALITY_IMAGE].pairs == 48);
        CHECK_MSG(memcmp(seen.evaluated[e], hand_evaluations[e], sizeof hand_evaluations[e]) == 0,
                  "evaluation at step %zu differs: fit R@1 %.6f, by hand %.6f", 3 * (e + 1),
                  seen.evaluated[e][UFORM_MODALITY_IMAGE].text_to_media[0], hand_evaluations[e][UFORM_MODALITY_IMAGE].text_to_media[0]);
    }
    CHECK(memcmp(fit.evaluation, hand_evaluations[1], sizeof fit.evaluation) == 0);
    CHECK_EQ_INT(seen.saves, 3); /* steps 3 and 6, and the end */
    CHECK(fit.saved_final == 1 && fit.saved_step == STEPS && fit.loader == NULL);
    CHECK(seen.started == 1 && seen.ended == 1 && seen.first == UFORM_FIT_STARTED && seen.last == UFORM_FIT_ENDED);
    CHECK(fit.order == UFORM_FIT_ORDER_NEW && fit.loader_stats.batches == STEPS);
    uform_trainer_free(trainer);
    uform_dataset_free(dataset);

    /* The step-3 checkpoint and its cursor: the hand loop's steps 4..6, bit for bit. */
    check_resumed(at3, 3, "resumed from the step-3 save");

    /* Another batch size: the stored cursor does not fit, a new order starts and the reason is given. */
    trainer = make_trainer(at3);
    dataset = open_manifest(0);
    uform_trainer_fit_t other = {0};
    other.trainer = trainer, other.dataset = dataset, other.batch = BATCH / 2, other.steps = 1, other.resume = 1;
    CHECK_MSG(uform_trainer_fit(&other) == UFORM_OK, "other batch: %s", other.outcome.message);
    CHECK(other.order == UFORM_FIT_ORDER_MISMATCH && other.order_reason[0] != 0 && other.steps_done == 1);
    uform_trainer_free(trainer);
    uform_dataset_free(dataset);
}

/* A cancel at step 2 stops there and saves; a resume ends where the uncancelled run ends. */
static void test_cancel_and_resume(void) {
    char out[4200];
    path_in_work(out, sizeof out, "cancelled.safetensors");
    uform_trainer_t trainer = make_trainer(NULL);
    uform_dataset_t dataset = open_manifest(0);
    seen_t seen = {0};
    seen.cancel_at = 2;
    uform_trainer_fit_t fit = {0};
    fit.trainer = trainer, fit.dataset = dataset, fit.batch = BATCH, fit.steps = STEPS, fit.save_path = out;
    fit.callback = listen, fit.state = &seen;
    CHECK_STATUS(uform_trainer_fit(&fit), UFORM_CANCELLED);
    CHECK_EQ_INT(fit.steps_done, 2);
    CHECK(fit.saved_final == 1 && fit.saved_step == 2 && seen.ended == 1);
    CHECK_CONTAINS(fit.outcome.message, "cancelled after 2 steps");
    uform_trainer_description_t description;
    uform_trainer_describe(trainer, &description);
    CHECK_EQ_INT(description.steps, 2);
    uform_trainer_free(trainer);
    uform_dataset_free(dataset);

    check_resumed(out, 2, "resumed after the cancel");
}

/* A budget alone: the loop stops once it is spent, having started no step after it. */
static void test_budget(void) {
    uform_trainer_t trainer = make_trainer(NULL);
    uform_dataset_t dataset = open_manifest(0);
    seen_t seen = {0};
    uform_trainer_fit_t fit = {0};
    fit.trainer = trainer, fit.dataset = dataset, fit.batch = BATCH, fit.budget_seconds = 0.4;
    fit.callback = listen, fit.state = &seen;
    CHECK_MSG(uform_trainer_fit(&fit) == UFORM_OK, "budget: %s", fit.outcome.message);
    CHECK(fit.steps_done >= 1 && seen.steps == fit.steps_done);
    CHECK_MSG(fit.elapsed_seconds >= 0.4, "stopped after %.3f s", fit.elapsed_seconds);
    /* The budget is checked before each step: the step before the last ended before it was spent
     * (else the last would not have started), and the last one ended after. */
    CHECK_MSG(seen.steps < 2 || seen.elapsed[0] < 0.4, "a step started after %.3f s", seen.elapsed[0]);
    CHECK_MSG(seen.elapsed[1] >= 0.4, "the last step ended at %.3f s", seen.elapsed[1]);
    CHECK(fit.saved_step == 0 && seen.saves == 0);
    uform_trainer_free(trainer);
    uform_dataset_free(dataset);
}

/* Metadata that is no cursor: a new order, said so, and the run goes on. */
static void test_not_a_cursor(void) {
    char path[4200];
    path_in_work(path, sizeof path, "foreign.safetensors");
    uform_trainer_t trainer = make_trainer(NULL);
    uform_trainer_save_t save = {0};
    save.trainer = trainer, save.path = path, save.user_metadata = "{\"epoch\": 3}";
    CHECK(uform_trainer_save(&save) == UFORM_OK);
    uform_trainer_free(trainer);
    trainer = make_trainer(path);
    uform_dataset_t dataset = open_manifest(0);
    uform_trainer_fit_t fit = {0};
    fit.trainer = trainer, fit.dataset = dataset, fit.batch = BATCH, fit.steps = 1, fit.resume = 1;
    CHECK_MSG(uform_trainer_fit(&fit) == UFORM_OK, "foreign metadata: %s", fit.outcome.message);
    CHECK(fit.order == UFORM_FIT_ORDER_NOT_A_CURSOR && fit.steps_done == 1);
    uform_trainer_free(trainer);
    uform_dataset_free(dataset);
}

/* Bad requests: each its status, naming the field, before any step. */
static void test_bad_requests(uform_dataset_t heldout) {
    CHECK_STATUS(uform_trainer_fit(NULL), UFORM_INVALID_ARGUMENT);
    uform_trainer_t trainer = make_trainer(NULL);
    uform_dataset_t dataset = open_manifest(0);
    uform_trainer_fit_t fit = {0};
    fit.dataset = dataset, fit.batch = BATCH, fit.steps = 1;
    CHECK_STATUS(uform_trainer_fit(&fit), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(fit.outcome.message, "trainer is NULL");
    fit.trainer = trainer, fit.steps = 0;
    CHECK_STATUS(uform_trainer_fit(&fit), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(fit.outcome.message, "steps and budget_seconds are both 0");
    fit.steps = 1, fit.eval_every = 2;
    CHECK_STATUS(uform_trainer_fit(&fit), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(fit.outcome.message, "eval_every 2 without eval_datasets");
    fit.eval_every = 0, fit.save_every = 2;
    CHECK_STATUS(uform_trainer_fit(&fit), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(fit.outcome.message, "save_every 2 without save_path");
    fit.save_every = 0, fit.budget_seconds = -1;
    CHECK_STATUS(uform_trainer_fit(&fit), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(fit.outcome.message, "budget_seconds");
    fit.budget_seconds = 0, fit.save_path = "/nonexistent-folder-of-uform-tests/model.safetensors";
    CHECK_STATUS(uform_trainer_fit(&fit), UFORM_IO);
    CHECK_CONTAINS(fit.outcome.message, "/nonexistent-folder-of-uform-tests/model.safetensors");
    fit.save_path = NULL, fit.batch = 0;
    CHECK_STATUS(uform_trainer_fit(&fit), UFORM_INVALID_ARGUMENT); /* the loader's rule */
    uform_trainer_description_t description;
    uform_trainer_describe(trainer, &description);
    CHECK_EQ_INT(description.steps, 0);
    (void)heldout;
    uform_trainer_free(trainer);
    uform_dataset_free(dataset);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_data_fit CORPUS WORK\n");
        return 2;
    }
    snprintf(manifest, sizeof manifest, "%s/manifest.jsonl", argv[1]);
    snprintf(work, sizeof work, "%s/fit_work", argv[2]);
    char command[8400];
    snprintf(command, sizeof command, "rm -rf '%s' && mkdir -p '%s'", work, work);
    CHECK(system(command) == 0);
    uform_dataset_t heldout = open_manifest(1);
    hand_loop(heldout);
    test_fit_equals_hand_loop(heldout);
    test_cancel_and_resume();
    test_budget();
    test_not_a_cursor();
    test_bad_requests(heldout);
    uform_dataset_free(heldout);
    return check_finish();
}
