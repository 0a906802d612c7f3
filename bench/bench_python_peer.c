/*
 * The C side of bench/bench_python.py: the same calls the Python benchmark makes, made from C
 * through the public API, timed here so process start and model load stay out of the figures.
 *
 *   bench_python_peer CKPT text CALLS THREADS TEXT       batch-1 text encodes, blocking
 *   bench_python_peer CKPT deferred CALLS THREADS TEXT   batch-1 text encodes, submitted deferred and waited
 *   bench_python_peer CKPT images REPEATS THREADS FILE…  one batch of whole image files, REPEATS times
 *
 * THREADS -1 runs on the calling thread (the NULL executor). Prints one JSON object: the best (lowest)
 * seconds per call over five rounds, or the best items per second over the repeats.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"
#include "uform/uform.h"

static int fail(const uform_outcome_t *outcome) {
    char line[640];
    uform_outcome_format(outcome, line, sizeof line);
    fprintf(stderr, "bench_python_peer: %s\n", line);
    return 1;
}

/* Reads whole files end to end into one tape. */
static int read_files(char **paths, size_t count, unsigned char **data, size_t **offsets) {
    *offsets = calloc(count + 1, sizeof **offsets);
    *data = NULL;
    size_t used = 0;
    for (size_t i = 0; i < count; ++i) {
        FILE *file = fopen(paths[i], "rb");
        if (!file) return -1;
        fseek(file, 0, SEEK_END);
        long size = ftell(file);
        fseek(file, 0, SEEK_SET);
        unsigned char *grown = realloc(*data, used + (size_t)size + 1);
        if (!grown || fread(grown + used, 1, (size_t)size, file) != (size_t)size) {
            fclose(file);
            free(grown);
            return -1;
        }
        fclose(file);
        *data = grown, used += (size_t)size, (*offsets)[i + 1] = used;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: bench_python_peer CKPT (text|deferred) CALLS THREADS TEXT | CKPT images REPEATS THREADS FILE...\n");
        return 2;
    }
    const char *mode = argv[2];
    long count = strtol(argv[3], NULL, 10), threads = strtol(argv[4], NULL, 10);
    uform_outcome_t outcome = {0};
    uform_executor_t executor = NULL;
    if (threads >= 0 && uform_executor_for_ram(NULL, (size_t)threads, 0, &executor, &outcome) != UFORM_OK) return fail(&outcome);
    uform_model_t model = NULL;
    if (uform_model_load_ram(executor, argv[1], NULL, &model, &outcome) != UFORM_OK) return fail(&outcome);
    uform_arena_t arena = NULL;
    if (uform_arena_for_executor(executor, &arena, &outcome) != UFORM_OK) return fail(&outcome);

    if (strcmp(mode, "text") == 0 || strcmp(mode, "deferred") == 0) {
        int deferred = strcmp(mode, "deferred") == 0;
        size_t offsets[2] = {0, strlen(argv[5])};
        double best = 1e30;
        for (int round = 0; round < 5; ++round) {
            double start = bench_seconds();
            for (long call = 0; call < count; ++call) {
                uform_text_encode_t request = {0};
                request.model = model, request.executor = executor, request.arena = arena;
                request.completion = deferred ? UFORM_COMPLETION_DEFERRED : UFORM_COMPLETION_BLOCKING;
                request.texts = (uform_tape_t){argv[5], offsets, 1};
                request.outputs = UFORM_OUTPUTS_EMBEDDINGS;
                uform_status_t status = uform_text_encode(&request);
                if (deferred && status == UFORM_DEFERRED) status = uform_outcome_wait(&request.outcome);
                if (status != UFORM_OK) return fail(&request.outcome);
                /* Read the embedding as a caller would (the Python side copies it out). */
                const void *row = NULL;
                if (uform_matrix_row(&request.encoded.embeddings, 0, &row) != UFORM_OK) return 1;
            }
            double seconds = (bench_seconds() - start) / (double)count;
            if (seconds < best) best = seconds;
        }
        printf("{\"mode\": \"%s\", \"threads\": %ld, \"calls\": %ld, \"seconds_per_call\": %.9g}\n", mode, threads, count,
               best);
    } else if (strcmp(mode, "images") == 0) {
        size_t items = (size_t)(argc - 5);
        unsigned char *data = NULL;
        size_t *offsets = NULL;
        if (read_files(argv + 5, items, &data, &offsets)) {
            fprintf(stderr, "bench_python_peer: cannot read the images\n");
            return 1;
        }
        double best = 0;
        for (long repeat = 0; repeat < count; ++repeat) {
            uform_image_encode_t request = {0};
            request.model = model, request.executor = executor, request.arena = arena;
            request.images = (uform_tape_t){data, offsets, items};
            request.outputs = UFORM_OUTPUTS_EMBEDDINGS;
            double start = bench_seconds();
            if (uform_image_encode(&request) != UFORM_OK) return fail(&request.outcome);
            double rate = (double)items / (bench_seconds() - start);
            if (rate > best) best = rate;
        }
        printf("{\"mode\": \"images\", \"threads\": %ld, \"items\": %zu, \"items_per_second\": %.6g}\n", threads, items, best);
        free(data), free(offsets);
    } else {
        fprintf(stderr, "bench_python_peer: unknown mode '%s'\n", mode);
        return 2;
    }
    uform_arena_free(arena);
    uform_model_free(model);
    uform_executor_free(executor);
    return 0;
}
