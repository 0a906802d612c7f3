/*
 * The trainer's API (uform_trainer_*): determinism across runs and thread counts, exact resume,
 * checkpoints that inference loads, snapshots, every documented bad input (with the trainer left
 * bit-identical; a deferred step's bad batch is refused before it is queued), an undecodable content,
 * cancellation, deferred steps and CONTENDED, and the init errors. Plain C with the project's
 * check.h; prints "N passed, N failed".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "train/trainer.h"
#include "train_test_batch.h"

static char scratch_dir[256];

static void path_in(char *path, size_t capacity, const char *name) { snprintf(path, capacity, "%s/%s", scratch_dir, name); }

static void print_outcome(const char *what, const uform_outcome_t *outcome) {
    char line[640];
    uform_outcome_format(outcome, line, sizeof line);
    fprintf(stderr, "%s: %s\n", what, line);
}

/* A batch of every kind of content: pairs of text with image, audio and (with FFmpeg) video, a bag
 * of two media contents, two temperature groups, sides, and choice examples in and after the bags. */
static void make_batch(test_batch_t *batch) {
    memset(batch, 0, sizeof *batch);
    static const uint8_t red[3] = {220, 30, 30}, blue[3] = {30, 40, 210};
    size_t size;
    test_batch_text(batch, "a red disc", NULL, 0);
    test_batch_media(batch, UFORM_MODALITY_IMAGE, test_picture(0, red, 14, &size), &size);
    test_batch_text(batch, "a blue square", "yn", 'n');
    test_batch_media(batch, UFORM_MODALITY_IMAGE, test_picture(1, blue, 30, &size), &size);
    test_batch_text(batch, "a hum", NULL, 0);
    test_batch_media(batch, UFORM_MODALITY_AUDIO, demo_wav(220.0, 16000, 1, 1.0, &size), &size);
#if defined(UFORM_WITH_FFMPEG)
    static const uint8_t green[3] = {40, 200, 60};
    test_batch_text(batch, "a moving green disc", NULL, 0);
    test_batch_media(batch, UFORM_MODALITY_VIDEO, demo_mp4(green, 64, 48, 8, &size), &size);
#endif
    test_batch_pairs(batch, batch->count, 2);
    test_batch_text(batch, "is the sky blue? ", "yn", 'y');
}

/* The trainer's whole state: weights, moments and the step count. */
typedef struct state_t {
    float *weights, *m, *v;
    uint64_t steps;
    size_t total;
} state_t;

static state_t state_of(uform_trainer_t trainer) {
    state_t state = {malloc(trainer->total * 4), malloc(trainer->total * 4), malloc(trainer->total * 4), trainer->steps,
                     trainer->total};
    memcpy(state.weights, trainer->weights, trainer->total * 4);
    memcpy(state.m, trainer->m, trainer->total * 4);
    memcpy(state.v, trainer->v, trainer->total * 4);
    return state;
}

static int state_equal(const state_t *a, const state_t *b) {
    return a->total == b->total && a->steps == b->steps && memcmp(a->weights, b->weights, a->total * 4) == 0 &&
           memcmp(a->m, b->m, a->total * 4) == 0 && memcmp(a->v, b->v, a->total * 4) == 0;
}

static void state_free(state_t *state) { free(state->weights), free(state->m), free(state->v); }

static uform_trainer_t make_trainer(uform_executor_t executor, uint64_t seed, uform_compute_t compute) {
    uform_trainer_config_t config = {0};
    config.seed = seed, config.compute = compute, config.warmup_steps = 2, config.total_steps = 8;
    uform_trainer_t trainer = NULL;
    uform_outcome_t outcome = {0};
    if (uform_trainer_init_ram(executor, &config, &trainer, &outcome) != UFORM_OK) print_outcome("init", &outcome);
    return trainer;
}

static int run_steps(uform_trainer_t trainer, uform_arena_t arena, const test_batch_t *batch, int steps) {
    for (int s = 0; s < steps; ++s) {
        uform_trainer_step_t step;
        test_batch_request(batch, trainer, arena, &step);
        if (uform_trainer_step(&step) != UFORM_OK) {
            print_outcome("step", &step.outcome);
            return -1;
        }
    }
    return 0;
}

/* Same seed, batch and threads: bit-identical; the kernels do not depend on the thread count, so
 * neither do the weights across 1, 2 and 3 threads. */
static void test_determinism(const test_batch_t *batch, uform_compute_t compute) {
    state_t first = {0};
    for (size_t threads = 1; threads <= 3; ++threads) {
        for (int run = 0; run < 2; ++run) {
            uform_executor_t executor = NULL;
            uform_executor_for_ram(NULL, threads, 0, &executor, NULL);
            uform_arena_t arena = NULL;
            uform_arena_for_executor(executor, &arena, NULL);
            uform_trainer_t trainer = make_trainer(executor, 3, compute);
            CHECK(trainer != NULL);
            if (!trainer) return;
            CHECK(run_steps(trainer, arena, batch, 3) == 0);
            state_t state = state_of(trainer);
            if (!first.weights) first = state;
            else {
                CHECK_MSG(state_equal(&state, &first), "%s compute, %zu threads, run %d differs from 1 thread's first run",
                          compute == UFORM_COMPUTE_BF16 ? "bf16" : "f32", threads, run);
                state_free(&state);
            }
            uform_trainer_free(trainer);
            uform_arena_free(arena);
            uform_executor_free(executor);
        }
    }
    state_free(&first);
}

/* 6 steps == 3 steps, save, resume, 3 steps: bit for bit. */
static void test_resume(uform_executor_t executor, uform_arena_t arena, const test_batch_t *batch) {
    uform_trainer_t straight = make_trainer(executor, 11, UFORM_COMPUTE_F32);
    uform_trainer_t split = make_trainer(executor, 11, UFORM_COMPUTE_F32);
    CHECK(straight && split);
    if (!straight || !split) return;
    CHECK(run_steps(straight, arena, batch, 6) == 0);
    CHECK(run_steps(split, arena, batch, 3) == 0);
    char path[512];
    path_in(path, sizeof path, "resume.safetensors");
    uform_trainer_save_t save = {0};
    save.trainer = split, save.path = path, save.user_metadata = "{\"mine\": 1}";
    CHECK_STATUS(uform_trainer_save(&save), UFORM_OK);
    uform_trainer_free(split);
    uform_trainer_config_t config = {0};
    config.resume = path;
    uform_trainer_t resumed = NULL;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform_trainer_init_ram(executor, &config, &resumed, &outcome), UFORM_OK);
    if (!resumed) return;
    CHECK(uform_trainer_user_metadata(resumed) && strcmp(uform_trainer_user_metadata(resumed), "{\"mine\": 1}") == 0);
    uform_trainer_description_t description;
    CHECK_STATUS(uform_trainer_describe(resumed, &description), UFORM_OK);
    CHECK_EQ_INT(description.steps, 3);
    CHECK_EQ_INT(description.total_steps, 8); /* the schedule came back from the checkpoint */
    CHECK_EQ_INT(description.warmup_steps, 2);
    CHECK(run_steps(resumed, arena, batch, 3) == 0);
    state_t a = state_of(straight), b = state_of(resumed);
    CHECK_MSG(state_equal(&a, &b), "6 steps differ from 3 + resume + 3");
    state_free(&a), state_free(&b);

    /* A weights-only checkpoint resumes from its BF16 weights, with fresh moments and step 0. */
    save.trainer = straight, save.optimizer = UFORM_TRAINER_SAVE_WEIGHTS_ONLY, save.user_metadata = NULL;
    path_in(path, sizeof path, "weights.safetensors");
    CHECK_STATUS(uform_trainer_save(&save), UFORM_OK);
    uform_trainer_t from_weights = NULL;
    CHECK_STATUS(uform_trainer_init_ram(executor, &config, &from_weights, &outcome), UFORM_OK);
    if (from_weights) {
        CHECK_EQ_INT(from_weights->steps, 0);
        int rounded = 1;
        for (size_t i = 0; i < from_weights->param_count && rounded; ++i) {
            const uform__param_t *param = &from_weights->params[i];
            for (size_t e = 0; e < param->count && rounded; ++e) {
                float master = straight->weights[param->offset + e], loaded = from_weights->weights[param->offset + e];
                float expected = param->wide ? master : uform__nn_bf16_to_f32_one(uform__nn_f32_to_bf16_one(master));
                rounded = loaded == expected;
            }
        }
        CHECK_MSG(rounded, "weights-only resume does not hold the BF16-rounded master weights");
        uform_trainer_free(from_weights);
    }
    /* A conflicting architecture is CONFIG_MISMATCH naming the field. */
    config.hidden = 256;
    uform_trainer_t mismatched = NULL;
    CHECK_STATUS(uform_trainer_init_ram(executor, &config, &mismatched, &outcome), UFORM_CONFIG_MISMATCH);
    CHECK_CONTAINS(outcome.message, "config.hidden is 256");
    CHECK(mismatched == NULL);
    uform_trainer_free(straight), uform_trainer_free(resumed);
}

/* Copies checkpoint `from` to `to` with its uform.optimizer replaced by `optimizer`. */
static void with_optimizer_json(const char *from, const char *to, const char *optimizer) {
    uform__safetensors_t *file = NULL;
    CHECK_STATUS(uform__safetensors_open(from, &file, NULL), UFORM_OK);
    if (!file) return;
    size_t count = uform__safetensors_count(file), pairs = uform__safetensors_metadata_count(file);
    uform__safetensors_source_t *sources = calloc(count, sizeof *sources);
    uform__safetensors_pair_t *metadata = calloc(pairs, sizeof *metadata);
    for (size_t i = 0; i < count; ++i) {
        const uform__safetensors_tensor_t *tensor = uform__safetensors_at(file, i);
        sources[i] = (uform__safetensors_source_t){tensor->name, tensor->dtype, tensor->rank, tensor->shape, tensor->data};
    }
    for (size_t i = 0; i < pairs; ++i) {
        uform__safetensors_metadata_at(file, i, &metadata[i].key, &metadata[i].value);
        if (strcmp(metadata[i].key, "uform.optimizer") == 0) metadata[i].value = optimizer;
    }
    uform__safetensors_write_t request = {sources, count, metadata, pairs, NULL, NULL};
    CHECK_STATUS(uform__safetensors_write(to, &request, NULL), UFORM_OK);
    free(sources), free(metadata);
    uform__safetensors_close(file);
}

/* The stored optimizer settings are the resumed run's: a uform.optimizer that cannot be read
 * fails the resume naming the key, never falls back to defaults in silence. */
static void test_stored_optimizer(uform_executor_t executor) {
    uform_trainer_t trainer = make_trainer(executor, 5, UFORM_COMPUTE_F32);
    if (!trainer) return;
    char path[512], edited[512];
    path_in(path, sizeof path, "stored.safetensors");
    path_in(edited, sizeof edited, "stored_edited.safetensors");
    uform_trainer_save_t save = {0};
    save.trainer = trainer, save.path = path;
    CHECK_STATUS(uform_trainer_save(&save), UFORM_OK);
    uform_trainer_free(trainer);
    static const struct { const char *json, *message; } cases[] = {
        {"{\"learning_rate\": 0.001, \"beta1\": 0.9, \"epsilon\": 1e-6, \"weight_decay\": 0.1, \"clip_norm\": 1, "
         "\"warmup_steps\": 2, \"total_steps\": 8, \"contrastive_weight\": 1, \"choice_weight\": 1, \"seed\": 5}",
         "uform.optimizer lacks 'beta2'"},
        {"{\"learning_rate\": 0.001, \"beta1\": 0.9, \"beta2\": 0.98, \"epsilon\": 1e-6, \"weight_decay\": 0.1, "
         "\"clip_norm\": 1, \"warmup_steps\": 2, \"total_steps\": 8, \"contrastive_weight\": 1, \"choice_weight\": 1}",
         "uform.optimizer lacks 'seed'"},
        {"{\"learning_rate\": \"fast\", \"beta1\": 0.9, \"beta2\": 0.98, \"epsilon\": 1e-6, \"weight_decay\": 0.1, "
         "\"clip_norm\": 1, \"warmup_steps\": 2, \"total_steps\": 8, \"contrastive_weight\": 1, \"choice_weight\": 1, "
         "\"seed\": 5}",
         "uform.optimizer 'learning_rate' is not a number"},
        {"{\"learning_rate\": 0.001, \"beta1\": 0.9, \"beta2\": 0.98, \"epsilon\": 1e-6, \"weight_decay\": 0.1, "
         "\"clip_norm\": 1, \"warmup_steps\": -2, \"total_steps\": 8, \"contrastive_weight\": 1, \"choice_weight\": 1, "
         "\"seed\": 5}",
         "uform.optimizer 'warmup_steps' is not an integer"},
        {"{\"learning_rate\": 0.001,", "uform.optimizer is not a JSON object"},
        {"[1, 2]", "uform.optimizer is not a JSON object"}};
    uform_trainer_config_t config = {0};
    config.resume = edited;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        with_optimizer_json(path, edited, cases[i].json);
        uform_outcome_t outcome = {0};
        uform_trainer_t resumed = NULL;
        CHECK_STATUS(uform_trainer_init_ram(executor, &config, &resumed, &outcome), UFORM_FORMAT);
        CHECK_CONTAINS(outcome.message, cases[i].message);
        CHECK(resumed == NULL);
        uform_trainer_free(resumed);
    }
    /* The unedited settings come back exactly. */
    with_optimizer_json(path, edited,
                        "{\"learning_rate\": 0.003, \"beta1\": 0.8, \"beta2\": 0.97, \"epsilon\": 1e-7, \"weight_decay\": 0, "
                        "\"clip_norm\": 0, \"warmup_steps\": 3, \"total_steps\": 9, \"contrastive_weight\": 0.5, "
                        "\"choice_weight\": 2, \"seed\": 17}");
    uform_outcome_t outcome = {0};
    uform_trainer_t resumed = NULL;
    CHECK_STATUS(uform_trainer_init_ram(executor, &config, &resumed, &outcome), UFORM_OK);
    uform_trainer_description_t description;
    if (resumed && uform_trainer_describe(resumed, &description) == UFORM_OK) {
        CHECK(description.learning_rate == 0.003 && description.beta1 == 0.8 && description.beta2 == 0.97);
        CHECK(description.epsilon == 1e-7 && description.weight_decay == 0 && description.clip_norm == 0);
        CHECK(description.warmup_steps == 3 && description.total_steps == 9 && description.seed == 17);
        CHECK(description.contrastive_weight == 0.5 && description.choice_weight == 2);
    }
    uform_trainer_free(resumed);
    unlink(path), unlink(edited);
}

/* The saved checkpoint loads for inference and encodes exactly what the snapshot encodes. */
static void test_checkpoint_and_snapshot(uform_executor_t executor, uform_arena_t arena, const test_batch_t *batch) {
    uform_trainer_t trainer = make_trainer(executor, 5, UFORM_COMPUTE_F32);
    if (!trainer) return;
    CHECK(run_steps(trainer, arena, batch, 2) == 0);
    char path[512];
    path_in(path, sizeof path, "inference.safetensors");
    uform_trainer_save_t save = {0};
    save.trainer = trainer, save.path = path;
    CHECK_STATUS(uform_trainer_save(&save), UFORM_OK);
    uform_outcome_t outcome = {0};
    uform_model_t loaded = NULL, snapshot = NULL;
    CHECK_STATUS(uform_model_load_ram(executor, path, NULL, &loaded, &outcome), UFORM_OK);
    CHECK_STATUS(uform_trainer_snapshot(trainer, NULL, &snapshot, &outcome), UFORM_OK);
    if (loaded && snapshot) {
        const char *texts = "a red disca blue square";
        size_t offsets[3] = {0, 10, 23};
        float values[2][2][64];
        uform_model_t models[2] = {loaded, snapshot};
        for (int k = 0; k < 2; ++k) {
            uform_text_encode_t request = {0};
            request.model = models[k], request.executor = executor, request.arena = arena;
            request.texts = (uform_tape_t){texts, offsets, 2};
            CHECK_STATUS(uform_text_encode(&request), UFORM_OK);
            for (int r = 0; r < 2; ++r) {
                const void *row = NULL;
                uform_matrix_row(&request.encoded.embeddings, (size_t)r, &row);
                if (row) memcpy(values[k][r], row, sizeof values[k][r]);
            }
        }
        CHECK_MSG(memcmp(values[0], values[1], sizeof values[0]) == 0, "the snapshot encodes differently from the saved file");
        uform_model_describe_t describe = {loaded};
        uform_model_describe(&describe);
        uform_trainer_description_t description;
        uform_trainer_describe(trainer, &description);
        CHECK_EQ_INT(describe.description.parameters, description.model.parameters);
    }
    uform_model_free(loaded), uform_model_free(snapshot);
    /* Saving to a folder that does not exist is IO naming the path; the trainer is untouched. */
    save.path = "/nonexistent-folder/x.safetensors";
    CHECK_STATUS(uform_trainer_save(&save), UFORM_IO);
    CHECK_CONTAINS(save.outcome.message, "/nonexistent-folder");
    save.path = path, save.optimizer = (uform_trainer_save_optimizer_t)7;
    CHECK_STATUS(uform_trainer_save(&save), UFORM_INVALID_ARGUMENT);
    uform_trainer_free(trainer);
}

/* A progress handler that cancels at its counter[1]-th report (counter[0] counts them). */
static uform_continuation_t cancel_at(size_t completed, size_t total, void *state) {
    (void)completed, (void)total;
    size_t *counter = state;
    return ++counter[0] >= counter[1] ? UFORM_CANCEL : UFORM_CONTINUE;
}

/* One bad request: INVALID_ARGUMENT with `needle` in the message, and nothing changed. */
static void expect_invalid(uform_trainer_t trainer, uform_trainer_step_t *step, const char *needle) {
    state_t before = state_of(trainer);
    uform_status_t status = uform_trainer_step(step);
    CHECK_STATUS(status, UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(step->outcome.message, needle);
    state_t after = state_of(trainer);
    CHECK_MSG(state_equal(&before, &after), "a refused step changed the trainer (%s)", needle);
    state_free(&before), state_free(&after);
}

static void test_bad_input(uform_executor_t executor, uform_arena_t arena, const test_batch_t *batch) {
    uform_trainer_t trainer = make_trainer(executor, 9, UFORM_COMPUTE_F32);
    if (!trainer) return;
    CHECK(run_steps(trainer, arena, batch, 1) == 0); /* moments are non-zero from here on */
    uform_trainer_step_t step;
    size_t bags[TEST_BATCH_MAX + 1], lefts[TEST_BATCH_MAX], rights[TEST_BATCH_MAX], groups[TEST_BATCH_MAX];
    uint8_t sides[TEST_BATCH_MAX], targets[TEST_BATCH_MAX];
    uform_modality_t modalities[TEST_BATCH_MAX];
    size_t offsets[TEST_BATCH_MAX + 1];
#define FRESH()                                                                                   \
    test_batch_request(batch, trainer, arena, &step);                                             \
    memcpy(bags, batch->bags, sizeof bags), memcpy(lefts, batch->lefts, sizeof lefts);            \
    memcpy(rights, batch->rights, sizeof rights), memcpy(groups, batch->groups, sizeof groups);   \
    memcpy(sides, batch->sides, sizeof sides), memcpy(targets, batch->targets, sizeof targets);   \
    memcpy(modalities, batch->modalities, sizeof modalities);                                     \
    memcpy(offsets, batch->offsets, sizeof offsets);                                              \
    step.bags = bags, step.relations.lefts = lefts, step.relations.rights = rights;               \
    step.relations.groups = groups, step.sides = sides, step.choice_targets = targets;            \
    step.modalities = modalities, step.contents.offsets = offsets;
    size_t last = batch->count - 1, b = batch->bag_count;
    FRESH() lefts[1] = b;
    expect_invalid(trainer, &step, "relations.lefts[1]");
    FRESH() rights[0] = lefts[0];
    expect_invalid(trainer, &step, "relations[0] relates bag 0 with itself");
    FRESH() rights[0] = 2; /* bags 0 and 2 are both on side 0 */
    expect_invalid(trainer, &step, "both on side 0");
    FRESH() groups[1] = 4;
    expect_invalid(trainer, &step, "relations.groups[1] = 4");
    FRESH() targets[last] = 'q';
    expect_invalid(trainer, &step, "choice_targets[");
    FRESH() modalities[last] = UFORM_MODALITY_IMAGE; /* an image content with choices */
    expect_invalid(trainer, &step, "choices need text");
    FRESH() modalities[0] = (uform_modality_t)9;
    expect_invalid(trainer, &step, "modalities[0]");
    FRESH() bags[2] = bags[1];
    expect_invalid(trainer, &step, "bag 1 has no contents");
    FRESH() bags[b] = batch->count + 1;
    expect_invalid(trainer, &step, "beyond the");
    FRESH() sides[3] = 2;
    expect_invalid(trainer, &step, "sides[3]");
    FRESH() offsets[2] = offsets[1] - 1;
    expect_invalid(trainer, &step, "contents");
    FRESH() step.choices.count = batch->count - 1;
    expect_invalid(trainer, &step, "choices lists");
    FRESH() step.arena = NULL;
    expect_invalid(trainer, &step, "arena is NULL");
    /* Alone, a bad batch is refused before it is queued, deferred or not, as every verb refuses a bad
     * request (docs/training.md); over a mesh it is checked inside the call. The trainer unchanged. */
    FRESH() rights[0] = lefts[0];
    step.completion = UFORM_COMPLETION_DEFERRED;
    state_t queued_before = state_of(trainer);
    CHECK_STATUS(uform_trainer_step(&step), UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(uform_outcome_status(&step.outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(step.outcome.message, "relations[0] relates bag 0 with itself");
    state_t queued_after = state_of(trainer);
    CHECK_MSG(state_equal(&queued_before, &queued_after), "a refused deferred step changed the trainer");
    state_free(&queued_before), state_free(&queued_after);
    FRESH() step.learning_rate_override = -1;
    expect_invalid(trainer, &step, "learning_rate_override");
    FRESH() step.relations.lefts = NULL;
    expect_invalid(trainer, &step, "relations.lefts is NULL");

    /* An undecodable image: FORMAT naming the content, and nothing changed. */
    test_batch_t broken = *batch;
    broken.data = malloc(batch->used + 1);
    memcpy(broken.data, batch->data, batch->used);
    memset(broken.data + batch->offsets[1], 0xFF, 8); /* the first image's header */
    state_t before = state_of(trainer);
    test_batch_request(&broken, trainer, arena, &step);
    CHECK_STATUS(uform_trainer_step(&step), UFORM_FORMAT);
    CHECK_CONTAINS(step.outcome.message, "contents[1] (image)");
    state_t after = state_of(trainer);
    CHECK_MSG(state_equal(&before, &after), "an undecodable content changed the trainer");
    state_free(&after);
    free(broken.data);

    /* Cancelled by the progress handler at every unit: CANCELLED, unchanged, and usable after. */
    for (size_t stop = 1; stop <= 6; ++stop) {
        test_batch_request(batch, trainer, arena, &step);
        size_t counter[2] = {0, stop}; /* reports so far, and the report that cancels */
        step.progress.callback = cancel_at, step.progress.state = counter, step.progress.steps = 100;
        uform_status_t status = uform_trainer_step(&step);
        after = state_of(trainer);
        if (status == UFORM_CANCELLED) {
            CHECK_MSG(state_equal(&before, &after), "a step cancelled at report %zu changed the trainer", stop);
        } else {
            /* Only the completion report (after the update) cannot cancel any more. */
            CHECK_MSG(status == UFORM_OK && counter[0] == 2 + 2 * trainer->config.depth, "cancel at report %zu: %s", stop,
                      uform_status_name(status));
            state_free(&before);
            before = state_of(trainer);
        }
        state_free(&after);
    }
    state_free(&before);
    CHECK(run_steps(trainer, arena, batch, 1) == 0);
    uform_trainer_free(trainer);
#undef FRESH
}

/* Deferred steps finish in order; a blocking step on a busy executor is CONTENDED. */
static void test_receivers(uform_executor_t executor, const test_batch_t *batch) {
    uform_trainer_t trainer = make_trainer(executor, 21, UFORM_COMPUTE_F32);
    uform_trainer_t reference = make_trainer(executor, 21, UFORM_COMPUTE_F32);
    if (!trainer || !reference) return;
    uform_arena_t arenas[4] = {NULL}, arena = NULL;
    for (int i = 0; i < 4; ++i) uform_arena_for_executor(executor, &arenas[i], NULL);
    uform_arena_for_executor(executor, &arena, NULL);
    uform_trainer_step_t steps[4];
    for (int i = 0; i < 4; ++i) {
        test_batch_request(batch, trainer, arenas[i], &steps[i]);
        steps[i].completion = UFORM_COMPLETION_DEFERRED;
        uform_status_t status = uform_trainer_step(&steps[i]);
        CHECK(status == UFORM_DEFERRED || status == UFORM_OK);
    }
    /* While deferred steps run, a blocking one is refused (or, if they already finished, runs). */
    uform_trainer_step_t blocking;
    test_batch_request(batch, reference, arena, &blocking);
    uform_status_t status = uform_trainer_step(&blocking);
    CHECK(status == UFORM_CONTENDED || status == UFORM_OK);
    int contended = status == UFORM_CONTENDED;
    for (int i = 0; i < 4; ++i) {
        CHECK_STATUS(uform_outcome_wait(&steps[i].outcome), UFORM_OK);
        CHECK_EQ_INT(steps[i].step, i + 1);
    }
    if (!contended) uform_trainer_free(reference), reference = make_trainer(executor, 21, UFORM_COMPUTE_F32);
    CHECK(run_steps(reference, arena, batch, 4) == 0);
    state_t a = state_of(trainer), b = state_of(reference);
    CHECK_MSG(state_equal(&a, &b), "4 deferred steps differ from 4 blocking ones");
    state_free(&a), state_free(&b);
    uform_trainer_free(trainer), uform_trainer_free(reference);
    for (int i = 0; i < 4; ++i) uform_arena_free(arenas[i]);
    uform_arena_free(arena);
}

static void test_init_errors(uform_executor_t executor) {
    uform_outcome_t outcome = {0};
    uform_trainer_t trainer = (uform_trainer_t)(void *)&outcome;
    uform_trainer_config_t config = {0};
    CHECK_STATUS(uform_trainer_init_vram(executor, &config, &trainer, &outcome), UFORM_UNSUPPORTED);
    CHECK(trainer == NULL);
    CHECK_CONTAINS(outcome.message, "no GPU support");
    /* A mesh of one (no peers) works like no mesh; meshes of several are tests/mesh/'s. */
    uform_mesh_t alone = NULL;
    CHECK_STATUS(uform_mesh_bootstrap(executor, NULL, &alone, &outcome), UFORM_OK);
    config.mesh = alone;
    CHECK_STATUS(uform_trainer_init_ram(executor, &config, &trainer, &outcome), UFORM_OK);
    uform_trainer_free(trainer);
    uform_mesh_free(alone);
    memset(&config, 0, sizeof config);
    snprintf(config.size, sizeof config.size, "huge");
    CHECK_STATUS(uform_trainer_init_ram(executor, &config, &trainer, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "config.size 'huge'");
    memset(&config, 0, sizeof config);
    config.heads = 3; /* 128 is not a multiple of 3 */
    CHECK_STATUS(uform_trainer_init_ram(executor, &config, &trainer, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "heads");
    memset(&config, 0, sizeof config);
    config.hidden = 258, config.heads = 2; /* heads 129 wide: past the attention kernels' 128 */
    CHECK_STATUS(uform_trainer_init_ram(executor, &config, &trainer, &outcome), UFORM_UNSUPPORTED);
    CHECK_CONTAINS(outcome.message, "config: a head width of 129 (hidden 258 / heads 2)");
    memset(&config, 0, sizeof config);
    config.image_size = 30;
    CHECK_STATUS(uform_trainer_init_ram(executor, &config, &trainer, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "image.size 30");
    memset(&config, 0, sizeof config);
    config.beta2 = 1.5;
    CHECK_STATUS(uform_trainer_init_ram(executor, &config, &trainer, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "beta2");
    memset(&config, 0, sizeof config);
    config.resume = "/nonexistent/checkpoint.safetensors";
    CHECK_STATUS(uform_trainer_init_ram(executor, &config, &trainer, &outcome), UFORM_IO);
    CHECK_CONTAINS(outcome.message, "/nonexistent/checkpoint.safetensors");
    CHECK_STATUS(uform_trainer_init_ram(executor, NULL, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    uform_trainer_free(NULL);
    CHECK_STATUS(uform_trainer_step(NULL), UFORM_INVALID_ARGUMENT);
    uform_trainer_step_t step = {0};
    CHECK_STATUS(uform_trainer_step(&step), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(step.outcome.message, "trainer is NULL");
}

/* A fresh trainer's tensors have docs/training.md's spreads: N(0, 0.02) for matrices, tables and
 * text.positions, N(0, 0.2) for the media position tables, norms 1 and 0, biases and CLS rows 0. */
static void test_initialisation(uform_executor_t executor) {
    uform_trainer_t trainer = make_trainer(executor, 42, UFORM_COMPUTE_F32);
    if (!trainer) return;
    struct { const char *name; double std, mean; } expected[] = {
        {"text.positions", 0.02, 0}, {"text.bytes", 0.02, 0}, {"image.positions", 0.2, 0},
        {"audio.positions", 0.2, 0}, {"trunk.0.attn.qkv.weight", 0.02, 0}, {"image.cls", 0, 0},
        {"trunk.0.norm1.weight", 0, 1}, {"trunk.0.mlp.up.bias", 0, 0},
    };
    for (size_t e = 0; e < sizeof expected / sizeof expected[0]; ++e) {
        const uform__param_t *param = NULL;
        for (size_t i = 0; i < trainer->param_count; ++i)
            if (strcmp(trainer->params[i].spec.name, expected[e].name) == 0) param = &trainer->params[i];
        CHECK_MSG(param != NULL, "no tensor %s", expected[e].name);
        if (!param) continue;
        const float *values = trainer->weights + param->offset;
        double sum = 0, squares = 0;
        for (size_t k = 0; k < param->count; ++k) sum += values[k], squares += (double)values[k] * values[k];
        double mean = sum / (double)param->count, std = sqrt(squares / (double)param->count - mean * mean);
        /* A sample of n values from N(0, s): its standard deviation is within 10% for every table here. */
        double tolerance = expected[e].std > 0 ? 0.1 * expected[e].std : 1e-7;
        CHECK_MSG(fabs(std - expected[e].std) <= tolerance && fabs(mean - expected[e].mean) <= 0.1 * (expected[e].std + 1e-6),
                  "%s: mean %.5f std %.5f over %zu values, expected mean %g std %g", expected[e].name, mean, std, param->count,
                  expected[e].mean, expected[e].std);
    }
    uform_trainer_free(trainer);
}

int main(void) {
    snprintf(scratch_dir, sizeof scratch_dir, "/tmp/uform-test-trainer-%d", (int)getpid());
    char command[512];
    snprintf(command, sizeof command, "mkdir -p %s", scratch_dir);
    if (system(command) != 0) return 1;
    test_batch_t batch;
    make_batch(&batch);
    uform_executor_t executor = NULL;
    uform_executor_for_ram(NULL, 2, 0, &executor, NULL);
    uform_arena_t arena = NULL;
    uform_arena_for_executor(executor, &arena, NULL);
    test_init_errors(executor);
    test_initialisation(executor);
    test_determinism(&batch, UFORM_COMPUTE_F32);
    test_determinism(&batch, UFORM_COMPUTE_BF16);
    test_resume(executor, arena, &batch);
    test_stored_optimizer(executor);
    test_checkpoint_and_snapshot(executor, arena, &batch);
    test_bad_input(executor, arena, &batch);
    test_receivers(executor, &batch);
    uform_arena_free(arena);
    uform_executor_free(executor);
    free(batch.data);
    snprintf(command, sizeof command, "rm -rf %s", scratch_dir);
    if (system(command) != 0) fprintf(stderr, "could not remove %s\n", scratch_dir);
    return check_finish();
}
