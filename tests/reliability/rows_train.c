/*
 * The trainer's rows of the sweep: init, a step (contrastive pairs and a choice example) and a
 * save that must load back. A model smaller than tiny keeps thousands of runs cheap; every run
 * makes its own trainer on the calling thread, so all of the trainer's allocations are swept.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rows.h"

/* hidden 32, one block, text only: the smallest trainer with every kind of tensor text has. */
static uform_status_t small_trainer(uform_trainer_t *trainer, uform_outcome_t *outcome) {
    uform_trainer_config_t config;
    memset(&config, 0, sizeof config);
    config.hidden = 32, config.depth = 1, config.heads = 2, config.mlp = 64, config.embedding = 16;
    config.text_bytes = 16, config.modalities = 1u << UFORM_MODALITY_TEXT, config.seed = 3;
    /* Settings away from the defaults, so a resume that lost the stored ones would show. */
    config.learning_rate = 2e-3, config.warmup_steps = 5, config.total_steps = 50, config.choice_weight = 0.5;
    return uform_trainer_init_ram(NULL, &config, trainer, outcome);
}

/* Two pairs of texts (bags 0-1 and 2-3 on opposite sides) and a choice example after the bags. */
static uform_status_t one_step(uform_trainer_t trainer, uform_arena_t arena, sweep_answer_t *answer) {
    static const char texts[] = "a red dota round red thinga blue squarea square of blueis it red? ";
    size_t offsets[6] = {0, 9, 26, 39, 55, 66};
    uform_modality_t modalities[5] = {0};
    size_t bags[5] = {0, 1, 2, 3, 4}, lefts[2] = {0, 2}, rights[2] = {1, 3};
    uint8_t sides[4] = {0, 1, 0, 1}, targets[5] = {0, 0, 0, 0, 'y'};
    static const char choices[] = "yn";
    size_t choice_offsets[6] = {0, 0, 0, 0, 0, 2};
    uform_trainer_step_t step;
    memset(&step, 0, sizeof step);
    step.trainer = trainer, step.arena = arena, step.modalities = modalities;
    step.contents = (uform_tape_t){texts, offsets, 5};
    step.bags = bags, step.bag_count = 4, step.sides = sides;
    step.relations = (uform_relations_t){lefts, rights, NULL, 2};
    step.choices = (uform_tape_t){choices, choice_offsets, 5};
    step.choice_targets = targets;
    uform_status_t status = uform_trainer_step(&step);
    sweep_answer_status(answer, status, &step.outcome);
    if (status == UFORM_OK) {
        answer->digest = sweep_digest(answer->digest, &step.loss, sizeof step.loss);
        answer->digest = sweep_digest(answer->digest, &step.grad_norm, sizeof step.grad_norm);
        answer->digest = sweep_digest_matrix(answer->digest, &step.bag_embeddings);
    }
    return status;
}

void sweep_run_trainer_init(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    (void)fixture;
    uform_trainer_t trainer = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = small_trainer(&trainer, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) {
        uform_trainer_description_t description;
        uform_trainer_describe(trainer, &description);
        answer->digest = sweep_digest(0, &description.model.parameters, sizeof description.model.parameters);
    }
    uform_trainer_free(trainer);
}

void sweep_run_trainer_step(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform_trainer_t trainer = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = small_trainer(&trainer, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) {
        answer->digest = 0;
        /* Two steps: the second reuses the trainer's step memory and moves the moments. */
        if (one_step(trainer, fixture->arena, answer) == UFORM_OK) one_step(trainer, fixture->arena, answer);
    }
    uform_trainer_free(trainer);
}

void sweep_run_trainer_save(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    char path[300];
    snprintf(path, sizeof path, "%s/trainer.safetensors", fixture->scratch);
    unlink(path);
    uform_trainer_t trainer = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = small_trainer(&trainer, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) status = one_step(trainer, fixture->arena, answer);
    if (status == UFORM_OK) {
        uform_trainer_save_t save;
        memset(&save, 0, sizeof save);
        save.trainer = trainer, save.path = path, save.user_metadata = "{\"position\": 1}";
        status = uform_trainer_save(&save);
        sweep_answer_status(answer, status, &save.outcome);
    }
    if (status == UFORM_OK) {
        /* What was saved must be a whole checkpoint: inference loads it, a trainer resumes it. */
        uform_model_t model = NULL;
        status = uform_model_load_ram(NULL, path, NULL, &model, &outcome);
        sweep_answer_status(answer, status, &outcome);
        uform_model_free(model);
    }
    if (status == UFORM_OK) {
        uform_trainer_config_t config;
        memset(&config, 0, sizeof config);
        config.resume = path;
        uform_trainer_t resumed = NULL;
        status = uform_trainer_init_ram(NULL, &config, &resumed, &outcome);
        sweep_answer_status(answer, status, &outcome);
        if (status == UFORM_OK) {
            uform_trainer_description_t description;
            uform_trainer_describe(resumed, &description);
            answer->digest = sweep_digest(answer->digest, &description.steps, sizeof description.steps);
            /* The stored optimizer settings and seed, which the resume must take from uform.optimizer. */
            const double reals[8] = {description.learning_rate, description.beta1, description.beta2,
                                     description.epsilon, description.weight_decay, description.clip_norm,
                                     description.contrastive_weight, description.choice_weight};
            const uint64_t counts[3] = {description.warmup_steps, description.total_steps, description.seed};
            answer->digest = sweep_digest(answer->digest, reals, sizeof reals);
            answer->digest = sweep_digest(answer->digest, counts, sizeof counts);
            const char *metadata = uform_trainer_user_metadata(resumed);
            if (metadata) answer->digest = sweep_digest(answer->digest, metadata, strlen(metadata));
        }
        uform_trainer_free(resumed);
    }
    uform_trainer_free(trainer);
}

/* An inference model from the trainer's weights after a step, and an encode with it. */
void sweep_run_trainer_snapshot(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform_trainer_t trainer = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = small_trainer(&trainer, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) status = one_step(trainer, fixture->arena, answer);
    uform_model_t model = NULL;
    if (status == UFORM_OK) {
        status = uform_trainer_snapshot(trainer, NULL, &model, &outcome);
        sweep_answer_status(answer, status, &outcome);
    }
    if (status == UFORM_OK) {
        static const char text[] = "a red dot";
        size_t offsets[2] = {0, 9};
        uform_text_encode_t request;
        memset(&request, 0, sizeof request);
        request.model = model, request.texts = (uform_tape_t){text, offsets, 1};
        request.outputs = UFORM_OUTPUTS_EMBEDDINGS, request.arena = fixture->arena;
        status = uform_text_encode(&request);
        sweep_answer_status(answer, status, &request.outcome);
        if (status == UFORM_OK) answer->digest = sweep_digest_matrix(answer->digest, &request.encoded.embeddings);
    }
    uform_model_free(model);
    uform_trainer_free(trainer);
}
