/*
 * Batch-1 text encodes of two or more libuform builds in one process, taking turns: for A/B
 * comparisons of a change on a shared host, where two separate runs minutes apart meet different
 * loads and say little about a few percent.
 *
 *   ab_text FOLDER TEXTS SECONDS THREADS LIBRARY [LIBRARY...]
 *
 * Each LIBRARY (a path to a libuform.so.4) is opened with dlmopen into a namespace of its own, so
 * the builds' identical symbol names do not collide, and gets its own executor of THREADS threads,
 * its own arena and its own copy of the published text folder FOLDER, loaded under I8 compute
 * (AB_COMPUTE=0/1/2 picks F32, BF16 or I8) and the detected CPU class. The first 32 lines of the
 * file TEXTS are the inputs. One pass encodes every text once, one call per text; the passes
 * cycle through the builds (pass p starts with build p mod n) until SECONDS have passed. The
 * first pass is a warm-up whose embeddings are kept; the first call of every pass is not counted
 * either (the other build's helper threads may still be polling then).
 *
 * Printed per build: "best", the texts per second that the fastest call of each text adds up to
 * (the undisturbed speed, which another process on the cores can only slow down, so the figure
 * the builds are compared by), "mean" (every counted call: what the load left), and whether its
 * embeddings are byte-identical to the first build's.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "uform/uform.h"

enum { max_builds = 4, max_texts = 32, max_width = 4096 };

typedef uform_status_t (*encode_fn)(uform_text_encode_t *);

typedef struct build_t {
    const char *path;
    encode_fn encode;
    uform_executor_t executor;
    uform_model_t model;
    uform_arena_t arena;
    double best[max_texts], total;
    size_t calls, width;
    float *embeddings; /* [max_texts, width] from the warm-up pass */
} build_t;

static double seconds_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

/* Opens `build->path` in a namespace of its own and loads the folder there. 0 on success. */
static int open_build(build_t *build, const char *folder, size_t threads, uform_compute_t compute) {
    void *library = dlmopen(LM_ID_NEWLM, build->path, RTLD_NOW | RTLD_LOCAL);
    if (!library) return fprintf(stderr, "ab_text: %s\n", dlerror()), -1;
    uform_cpu_class_t (*detect)(void) = (uform_cpu_class_t (*)(void))dlsym(library, "uform_cpu_class_detect");
    uform_status_t (*executor_for_ram)(const uform_ram_options_t *, size_t, size_t, uform_executor_t *, uform_outcome_t *) =
        (uform_status_t (*)(const uform_ram_options_t *, size_t, size_t, uform_executor_t *, uform_outcome_t *))dlsym(
            library, "uform_executor_for_ram");
    uform_status_t (*load)(uform_executor_t, const char *, const uform_ram_options_t *, uform_model_t *, uform_outcome_t *) =
        (uform_status_t (*)(uform_executor_t, const char *, const uform_ram_options_t *, uform_model_t *,
                            uform_outcome_t *))dlsym(library, "uform_model_load_ram");
    uform_status_t (*arena_for)(uform_executor_t, uform_arena_t *, uform_outcome_t *) =
        (uform_status_t (*)(uform_executor_t, uform_arena_t *, uform_outcome_t *))dlsym(library, "uform_arena_for_executor");
    build->encode = (encode_fn)dlsym(library, "uform_text_encode");
    if (!detect || !executor_for_ram || !load || !arena_for || !build->encode)
        return fprintf(stderr, "ab_text: %s lacks a symbol of the public API\n", build->path), -1;
    uform_ram_options_t ram;
    memset(&ram, 0, sizeof ram);
    ram.cpu_class = detect(), ram.compute = compute;
    uform_outcome_t outcome;
    memset(&outcome, 0, sizeof outcome);
    if (executor_for_ram(&ram, threads, 0, &build->executor, &outcome) != UFORM_OK ||
        load(build->executor, folder, &ram, &build->model, &outcome) != UFORM_OK ||
        arena_for(build->executor, &build->arena, &outcome) != UFORM_OK)
        return fprintf(stderr, "ab_text: %s: %s\n", build->path, outcome.message), -1;
    for (size_t i = 0; i < max_texts; ++i) build->best[i] = 1e30;
    build->embeddings = calloc((size_t)max_texts * max_width, sizeof(float));
    return build->embeddings ? 0 : -1;
}

/* One call on text `i`; its wall time into *seconds. On the warm-up pass the embedding is kept. */
static int encode_one(build_t *build, const char *data, const size_t *offsets, size_t i, int warm_up, double *seconds) {
    static uform_text_encode_t request;
    memset(&request, 0, sizeof request);
    request.model = build->model, request.executor = build->executor, request.arena = build->arena;
    request.texts = (uform_tape_t){data, offsets + i, 1};
    request.outputs = UFORM_OUTPUTS_EMBEDDINGS;
    double start = seconds_now();
    uform_status_t status = build->encode(&request);
    *seconds = seconds_now() - start;
    if (status != UFORM_OK) return fprintf(stderr, "ab_text: %s: %s\n", build->path, request.outcome.message), -1;
    if (warm_up) {
        const uform_matrix_t *rows = &request.encoded.embeddings;
        build->width = rows->columns < max_width ? rows->columns : max_width;
        memcpy(build->embeddings + i * max_width, rows->data, build->width * sizeof(float));
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 6 || argc - 5 > max_builds)
        return fprintf(stderr, "usage: ab_text FOLDER TEXTS SECONDS THREADS LIBRARY [LIBRARY...] (up to %d)\n", max_builds), 2;
    double seconds = atof(argv[3]);
    size_t threads = (size_t)atol(argv[4]), count = (size_t)(argc - 5), texts = 0, length = 0;
    static char data[1 << 16], line[4096];
    static size_t offsets[max_texts + 1];
    FILE *file = fopen(argv[2], "r");
    if (!file) return fprintf(stderr, "ab_text: cannot open %s\n", argv[2]), 1;
    while (texts < max_texts && fgets(line, sizeof line, file)) {
        size_t bytes = strcspn(line, "\n");
        if (bytes == 0 || length + bytes > sizeof data) continue;
        offsets[texts] = length, memcpy(data + length, line, bytes), length += bytes, offsets[++texts] = length;
    }
    fclose(file);
    if (texts < 2) return fprintf(stderr, "ab_text: %s holds fewer than 2 texts\n", argv[2]), 1;
    const char *compute = getenv("AB_COMPUTE");
    static build_t builds[max_builds];
    for (size_t b = 0; b < count; ++b) {
        builds[b].path = argv[5 + b];
        if (open_build(&builds[b], argv[1], threads, compute ? (uform_compute_t)atoi(compute) : UFORM_COMPUTE_I8) != 0) return 1;
    }
    double start = seconds_now();
    for (size_t pass = 0;; ++pass) {
        for (size_t turn = 0; turn < count; ++turn) {
            build_t *build = &builds[(turn + pass) % count];
            for (size_t i = 0; i < texts; ++i) {
                double took;
                if (encode_one(build, data, offsets, i, pass == 0, &took) != 0) return 1;
                if (pass == 0 || i == 0) continue;
                if (took < build->best[i]) build->best[i] = took;
                build->total += took, build->calls += 1;
            }
        }
        if (pass > 0 && seconds_now() - start > seconds) break;
    }
    for (size_t b = 0; b < count; ++b) {
        double best = 0;
        for (size_t i = 1; i < texts; ++i) best += builds[b].best[i];
        int same = builds[b].width == builds[0].width &&
                   memcmp(builds[b].embeddings, builds[0].embeddings, (size_t)max_texts * max_width * sizeof(float)) == 0;
        printf("%-48s best %7.1f texts/s  mean %7.1f texts/s  (%zu calls)  embeddings %s the first build's\n",
               builds[b].path, (double)(texts - 1) / best, (double)builds[b].calls / builds[b].total, builds[b].calls,
               same ? "identical to" : "DIFFER from");
    }
    return 0;
}
