/*
 * The C side of the Python trainer's parity test: makes a trainer through the public C API, runs
 * a few steps on one batch the test wrote to files, and writes what each step answered and the
 * saved checkpoint, for the test to compare with the binding's answers byte for byte.
 *
 * Usage: train_reference DIR
 * DIR/request.txt: "threads N" (-1: the calling thread), "seed N", "steps N", "scalar N".
 * Batch files (little-endian): data.bin + offsets.bin (u64) the contents; modalities.bin (i32 per
 * content); optional bags.bin (u64), sides.bin (u8), lefts.bin / rights.bin / groups.bin (u64),
 * choices.bin + choice_offsets.bin (u64) with targets.bin (u8).
 * Writes stepK.txt ("loss contrastive choice learning_rate grad_norm" as %a, then the step number),
 * bagsK.bin and temperaturesK.bin (rows packed) for K = 1 .. steps, and trained.safetensors.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/read_file.h"
#include "uform/uform.h"

typedef struct buffer_t {
    void *data;
    size_t size;
} buffer_t;

static const char *directory;

static int read_file(const char *name, buffer_t *buffer, int required) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", directory, name);
    buffer->size = 0;
    if (access(path, F_OK) != 0) {
        buffer->data = NULL;
        if (required) fprintf(stderr, "train_reference: cannot open %s\n", path);
        return required ? -1 : 0;
    }
    buffer->data = test_read_file(path, &buffer->size);
    return buffer->data ? 0 : -1;
}

static int write_rows(const char *name, const uform_matrix_t *view) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", directory, name);
    FILE *file = fopen(path, "wb");
    if (!file) return -1;
    size_t row_bytes = uform_scalar_row_bytes(view->scalar, view->columns);
    for (size_t r = 0; r < view->rows; ++r) {
        const void *row = NULL;
        if (uform_matrix_row(view, r, &row) != UFORM_OK || fwrite(row, 1, row_bytes, file) != row_bytes) {
            fclose(file);
            return -1;
        }
    }
    return fclose(file) == 0 ? 0 : -1;
}

static int report(const uform_outcome_t *outcome) {
    char line[640];
    uform_outcome_format(outcome, line, sizeof line);
    fprintf(stderr, "%s\n", line);
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: train_reference DIR\n");
        return 2;
    }
    directory = argv[1];
    long threads = -1, steps = 1, scalar = 0;
    unsigned long long seed = 0;
    char path[4096], key[64], value[64];
    snprintf(path, sizeof path, "%s/request.txt", directory);
    FILE *settings = fopen(path, "r");
    if (!settings) return 2;
    while (fscanf(settings, "%63s %63s", key, value) == 2) {
        if (strcmp(key, "threads") == 0) threads = strtol(value, NULL, 10);
        else if (strcmp(key, "seed") == 0) seed = strtoull(value, NULL, 10);
        else if (strcmp(key, "steps") == 0) steps = strtol(value, NULL, 10);
        else if (strcmp(key, "scalar") == 0) scalar = strtol(value, NULL, 10);
    }
    fclose(settings);
    buffer_t data, offsets, modalities, bags, sides, lefts, rights, groups, choices, choice_offsets, targets;
    if (read_file("data.bin", &data, 1) || read_file("offsets.bin", &offsets, 1) ||
        read_file("modalities.bin", &modalities, 1) || read_file("bags.bin", &bags, 0) ||
        read_file("sides.bin", &sides, 0) || read_file("lefts.bin", &lefts, 0) || read_file("rights.bin", &rights, 0) ||
        read_file("groups.bin", &groups, 0) || read_file("choices.bin", &choices, 0) ||
        read_file("choice_offsets.bin", &choice_offsets, 0) || read_file("targets.bin", &targets, 0))
        return 2;

    uform_outcome_t outcome = {0};
    uform_executor_t executor = NULL;
    if (threads >= 0 && uform_executor_for_ram(NULL, (size_t)threads, 0, &executor, &outcome) != UFORM_OK)
        return report(&outcome);
    uform_trainer_config_t config = {0};
    config.seed = seed;
    uform_trainer_t trainer = NULL;
    if (uform_trainer_init_ram(executor, &config, &trainer, &outcome) != UFORM_OK) return report(&outcome);
    uform_arena_t arena = NULL;
    if (uform_arena_for_executor(executor, &arena, &outcome) != UFORM_OK) return report(&outcome);

    size_t count = offsets.size / 8 - 1;
    for (long k = 1; k <= steps; ++k) {
        uform_trainer_step_t step = {0};
        step.trainer = trainer, step.arena = arena, step.outputs_scalar = (uform_scalar_kind_t)scalar;
        step.modalities = modalities.data;
        step.contents = (uform_tape_t){data.data, offsets.data, count};
        if (bags.data) step.bags = bags.data, step.bag_count = bags.size / 8 - 1;
        step.sides = sides.data;
        step.relations = (uform_relations_t){lefts.data, rights.data, groups.data, lefts.size / 8};
        if (choices.data) {
            step.choices = (uform_tape_t){choices.data, choice_offsets.data, choice_offsets.size / 8 - 1};
            step.choice_targets = targets.data;
        }
        if (uform_trainer_step(&step) != UFORM_OK) return report(&step.outcome);
        char name[64];
        snprintf(path, sizeof path, "%s/step%ld.txt", directory, k);
        FILE *answer = fopen(path, "w");
        if (!answer) return 2;
        fprintf(answer, "%a %a %a %a %a %llu\n", step.loss, step.contrastive, step.choice, step.learning_rate,
                step.grad_norm, (unsigned long long)step.step);
        fclose(answer);
        snprintf(name, sizeof name, "bags%ld.bin", k);
        if (write_rows(name, &step.bag_embeddings)) return 2;
        snprintf(name, sizeof name, "temperatures%ld.bin", k);
        if (write_rows(name, &step.temperatures)) return 2;
    }
    uform_trainer_save_t save = {0};
    snprintf(path, sizeof path, "%s/trained.safetensors", directory);
    save.trainer = trainer, save.path = path;
    if (uform_trainer_save(&save) != UFORM_OK) return report(&save.outcome);
    uform_arena_free(arena);
    uform_trainer_free(trainer);
    uform_executor_free(executor);
    free(data.data), free(offsets.data), free(modalities.data), free(bags.data), free(sides.data);
    free(lefts.data), free(rights.data), free(groups.data), free(choices.data), free(choice_offsets.data);
    free(targets.data);
    return 0;
}
