/* What bench_mesh's modes share (bench_mesh_batch.h). */
#include "bench_mesh_batch.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "demo_media.h"

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *values, size_t count) {
    if (!count) return 0;
    qsort(values, count, sizeof *values, compare_doubles);
    return values[count / 2];
}

static void append(bench_batch_t *batch, const void *bytes, size_t length, uform_modality_t modality) {
    size_t i = batch->count++;
    batch->data = realloc(batch->data, batch->used + length);
    memcpy(batch->data + batch->used, bytes, length);
    batch->used += length;
    batch->offsets[i + 1] = batch->used;
    batch->modalities[i] = modality;
}

void bench_batch_make(bench_batch_t *batch, int images, size_t first, size_t end) {
    memset(batch, 0, sizeof *batch);
    for (size_t p = first; p < end; ++p) {
        char text[65];
        for (size_t i = 0; i < 64; ++i) text[i] = (char)('a' + (p * 7 + i * 13) % 26);
        append(batch, text, images ? 20 : 64, UFORM_MODALITY_TEXT);
        if (images) {
            uint8_t pixels[32 * 32 * 3], rgb[3] = {(uint8_t)(40 * p), (uint8_t)(255 - 9 * p), 120};
            demo_draw(pixels, 32, 32, (int)(p % 2), rgb, 8 + (double)(p % 16), 16, 6);
            size_t size = 0;
            unsigned char *jpeg = demo_jpeg(pixels, 32, 32, &size);
            append(batch, jpeg, size, UFORM_MODALITY_IMAGE);
            free(jpeg);
        } else {
            for (size_t i = 0; i < 64; ++i) text[i] = (char)('A' + (p * 5 + i * 3) % 26);
            append(batch, text, 64, UFORM_MODALITY_TEXT);
        }
        size_t r = batch->pairs++;
        batch->lefts[r] = 2 * r, batch->rights[r] = 2 * r + 1;
    }
    for (size_t j = 0; j <= 2 * batch->pairs; ++j) batch->bags[j] = j;
    for (size_t j = 0; j < 2 * batch->pairs; ++j) batch->sides[j] = (uint8_t)(j % 2);
}

double bench_batch_step(uform_trainer_t trainer, uform_arena_t arena, const bench_batch_t *batch,
                        uform_trainer_stats_t *stats) {
    uform_trainer_step_t step;
    memset(&step, 0, sizeof step);
    memset(stats, 0, sizeof *stats);
    step.trainer = trainer, step.arena = arena, step.modalities = batch->modalities;
    step.contents = (uform_tape_t){batch->data, batch->offsets, 2 * batch->pairs};
    step.bags = batch->bags, step.bag_count = 2 * batch->pairs, step.sides = batch->sides;
    step.relations = (uform_relations_t){batch->lefts, batch->rights, NULL, batch->pairs};
    step.stats = stats;
    double start = bench_seconds();
    if (uform_trainer_step(&step) != UFORM_OK) {
        fprintf(stderr, "bench_mesh: step: %s\n", step.outcome.message);
        return -1;
    }
    return bench_seconds() - start;
}

int bench_batch_steps(uform_trainer_t trainer, uform_arena_t arena, const bench_batch_t *batch, size_t steps,
                      bench_steps_t *measured) {
    double times[64], flops[64], waited[64], exchange[64], backward[64];
    if (steps > 63) steps = 63;
    for (size_t s = 0; s <= steps; ++s) {
        uform_trainer_stats_t stats;
        double seconds = bench_batch_step(trainer, arena, batch, &stats);
        if (seconds < 0) return -1;
        if (!s) continue;
        times[s - 1] = seconds, flops[s - 1] = stats.flops, waited[s - 1] = stats.exchange_wait_seconds;
        exchange[s - 1] = stats.exchange_seconds, backward[s - 1] = stats.backward_seconds;
    }
    measured->seconds = bench_median(times, steps), measured->flops = bench_median(flops, steps);
    measured->waited = bench_median(waited, steps), measured->exchange = bench_median(exchange, steps);
    measured->backward = bench_median(backward, steps);
    return 0;
}

uform_trainer_t bench_trainer(uform_executor_t executor, const char *size, uform_mesh_t mesh) {
    uform_trainer_config_t config = {0};
    snprintf(config.size, sizeof config.size, "%s", size);
    config.compute = UFORM_COMPUTE_BF16, config.seed = 1, config.mesh = mesh;
    uform_trainer_t trainer = NULL;
    uform_outcome_t outcome = {0};
    if (uform_trainer_init_ram(executor, &config, &trainer, &outcome) != UFORM_OK)
        fprintf(stderr, "bench_mesh: init: %s\n", outcome.message);
    return trainer;
}

int bench_members_run(const char *folder, size_t count, size_t bytes, int (*member)(size_t, void *, void *),
                      void *context, void *results, double limit) {
    pid_t pids[64];
    if (count > 64) return -1;
    fflush(stdout), fflush(stderr);
    for (size_t i = 0; i < count; ++i) {
        pids[i] = fork();
        if (pids[i] != 0) continue;
        void *result = calloc(1, bytes);
        int answer = result ? member(i, context, result) : 1;
        char path[512];
        snprintf(path, sizeof path, "%s/result.%zu", folder, i);
        FILE *file = result ? fopen(path, "wb") : NULL;
        if (file) fwrite(result, bytes, 1, file), fclose(file);
        _exit(answer);
    }
    int failed = 0;
    double deadline = bench_seconds() + limit;
    for (size_t i = 0; i < count; ++i) {
        int status = 0;
        while (pids[i] > 0 && waitpid(pids[i], &status, WNOHANG) == 0) {
            if (bench_seconds() > deadline) kill(pids[i], SIGKILL);
            struct timespec pause = {0, 20000000};
            nanosleep(&pause, NULL);
        }
        failed |= pids[i] <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        char path[512];
        snprintf(path, sizeof path, "%s/result.%zu", folder, i);
        unsigned char *result = (unsigned char *)results + i * bytes;
        memset(result, 0, bytes);
        FILE *file = fopen(path, "rb");
        if (!file || fread(result, bytes, 1, file) != 1) failed = 1;
        if (file) fclose(file), unlink(path);
    }
    return failed;
}
