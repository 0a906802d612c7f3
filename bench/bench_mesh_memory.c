/*
 * bench_mesh --accumulate: what exact large batches cost (uform_trainer_step_t.accumulate). A global
 * batch of 4,096 tiny pairs (a caption and a 32×32 JPEG each, sides 0 and 1) on 2 members meeting
 * on loopback, each member's 2,048 pairs in K chunks: every member's peak resident memory (getrusage)
 * and step time, for each K. F32 compute, one thread a member, one step after the trainer is made.
 *
 *   bench_mesh --accumulate [--pairs 4096] [--chunks 1,4,16,64] [--members 2]
 *                           [--json bench/results/mesh_accumulate.json]
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"
#include "bench_mesh_batch.h"
#include "bench_mesh_links.h"
#include "demo_media.h"
#include "uform/uform.h"

static char folder[256];

typedef struct result_t {
    int ok;
    double seconds, loss;
    long peak_kib, before_kib;    /* peak RSS after the step, and after making the batch and trainer */
} result_t;

static long peak_kib(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

typedef struct run_t {
    size_t members, pairs, chunks;
} run_t;

static int member(size_t index, void *context, void *answer) {
    const run_t *run = context;
    size_t members = run->members, pairs = run->pairs, chunks = run->chunks;
    result_t result;
    memset(&result, 0, sizeof result);
    size_t first = pairs * index / members, end = pairs * (index + 1) / members, n = 2 * (end - first);
    unsigned char *data = NULL;
    size_t used = 0, *offsets = calloc(n + 1, sizeof *offsets), *bags = calloc(n + 1, sizeof *bags);
    size_t *lefts = calloc(n / 2 + 1, sizeof *lefts), *rights = calloc(n / 2 + 1, sizeof *rights);
    uform_modality_t *modalities = calloc(n + 1, sizeof *modalities);
    uint8_t *sides = calloc(n + 1, 1);
    for (size_t p = first, c = 0; p < end; ++p) {
        char text[32];
        int length = snprintf(text, sizeof text, "pair %zu of %zu", p, pairs);
        uint8_t pixels[32 * 32 * 3], rgb[3] = {(uint8_t)(37 * p), (uint8_t)(255 - 11 * p), (uint8_t)(p >> 4)};
        demo_draw(pixels, 32, 32, (int)(p % 2), rgb, 8 + (double)(p % 16), 8 + (double)((p / 16) % 16), 6);
        size_t size = 0;
        unsigned char *jpeg = demo_jpeg(pixels, 32, 32, &size);
        data = realloc(data, used + (size_t)length + size);
        memcpy(data + used, text, (size_t)length), used += (size_t)length, offsets[c + 1] = used;
        modalities[c] = UFORM_MODALITY_TEXT, sides[c] = 0, ++c;
        memcpy(data + used, jpeg, size), used += size, offsets[c + 1] = used;
        modalities[c] = UFORM_MODALITY_IMAGE, sides[c] = 1, ++c;
        free(jpeg);
        lefts[p - first] = c - 2, rights[p - first] = c - 1;
    }
    for (size_t j = 0; j <= n; ++j) bags[j] = j;
    uform_executor_t executor = NULL;
    uform_arena_t arena = NULL;
    uform_mesh_t mesh = NULL;
    uform_trainer_t trainer = NULL;
    uform_outcome_t outcome = {0};
    char job[64];
    snprintf(job, sizeof job, "accumulate-%zu", chunks);
    uform_mesh_options_t options = {0};
    options.host_domain_index = index, options.host_domain_count = members;
    options.directory = folder, options.job = job, options.timeout_seconds = 900, options.address = "127.0.0.1";
    uform_trainer_config_t config = {0};
    config.compute = UFORM_COMPUTE_F32, config.seed = 1;
    if (uform_executor_for_ram(NULL, 1, 0, &executor, &outcome) == UFORM_OK &&
        uform_arena_for_executor(executor, &arena, &outcome) == UFORM_OK &&
        uform_mesh_bootstrap(executor, &options, &mesh, &outcome) == UFORM_OK) {
        config.mesh = mesh;
        if (uform_trainer_init_ram(executor, &config, &trainer, &outcome) == UFORM_OK) {
            result.before_kib = peak_kib();
            uform_trainer_step_t step;
            memset(&step, 0, sizeof step);
            step.trainer = trainer, step.arena = arena, step.modalities = modalities;
            step.contents = (uform_tape_t){data, offsets, n};
            step.bags = bags, step.bag_count = n, step.sides = sides;
            step.relations = (uform_relations_t){lefts, rights, NULL, n / 2};
            step.accumulate = chunks;
            double start = bench_seconds();
            result.ok = uform_trainer_step(&step) == UFORM_OK;
            result.seconds = bench_seconds() - start, result.loss = step.loss;
            result.peak_kib = peak_kib();
            if (!result.ok) fprintf(stderr, "bench_mesh --accumulate: step: %s\n", step.outcome.message);
        }
    }
    if (!result.ok && outcome.message[0]) fprintf(stderr, "bench_mesh --accumulate: %s\n", outcome.message);
    memcpy(answer, &result, sizeof result);
    uform_trainer_free(trainer);
    uform_mesh_free(mesh);
    uform_arena_free(arena);
    uform_executor_free(executor);
    free(data), free(offsets), free(bags), free(lefts), free(rights), free(modalities), free(sides);
    return result.ok ? 0 : 1;
}

int bench_mesh_accumulate(int argc, char **argv) {
    size_t pairs = 4096, members = 2;
    double chunk_list[16] = {1, 4, 16, 64};
    int chunk_count = 4;
    const char *json_path = "bench/results/mesh_accumulate.json";
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--accumulate")) continue;
        if (!strcmp(argv[i], "--pairs") && i + 1 < argc) pairs = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--members") && i + 1 < argc) members = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
        else if (!strcmp(argv[i], "--chunks") && i + 1 < argc) {
            char copy[128];
            snprintf(copy, sizeof copy, "%s", argv[++i]);
            chunk_count = 0;
            for (char *item = strtok(copy, ","); item && chunk_count < 16; item = strtok(NULL, ","))
                chunk_list[chunk_count++] = atof(item);
        } else {
            fprintf(stderr, "usage: bench_mesh --accumulate [--pairs N] [--chunks 1,4,16,64] [--members N] [--json PATH]\n");
            return 2;
        }
    }
    if (members < 1 || members > 8) members = 2;
    snprintf(folder, sizeof folder, "%s/uform-bench-accumulate-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(folder)) return 1;
    printf("bench_mesh --accumulate: a global batch of %zu tiny pairs (caption + 32x32 JPEG) on %zu members, F32, "
           "1 thread a member, one step\n\n",
           pairs, members);
    printf("%8s %18s %20s %10s %10s\n", "chunks", "peak RSS (MiB)", "before step (MiB)", "step s", "loss");
    cJSON *root = cJSON_CreateObject(), *rows = cJSON_AddArrayToObject(root, "accumulate");
    cJSON_AddNumberToObject(root, "pairs", (double)pairs);
    cJSON_AddNumberToObject(root, "members", (double)members);
    for (int c = 0; c < chunk_count; ++c) {
        size_t chunks = (size_t)chunk_list[c];
        run_t run = {members, pairs, chunks};
        result_t results[8], worst;
        memset(&worst, 0, sizeof worst);
        int failed = bench_members_run(folder, members, sizeof results[0], member, &run, results, 3600);
        for (size_t i = 0; i < members && !failed; ++i) {
            const result_t *result = &results[i];
            worst.peak_kib = result->peak_kib > worst.peak_kib ? result->peak_kib : worst.peak_kib;
            worst.before_kib = result->before_kib > worst.before_kib ? result->before_kib : worst.before_kib;
            worst.seconds = fmax(worst.seconds, result->seconds), worst.loss = result->loss;
        }
        if (failed) {
            printf("%8zu (failed)\n", chunks);
            continue;
        }
        printf("%8zu %18.0f %20.0f %10.2f %10.6f\n", chunks, worst.peak_kib / 1024.0, worst.before_kib / 1024.0,
               worst.seconds, worst.loss);
        cJSON *row = cJSON_CreateObject();
        cJSON_AddNumberToObject(row, "chunks", (double)chunks);
        cJSON_AddNumberToObject(row, "peak_rss_bytes", worst.peak_kib * 1024.0);
        cJSON_AddNumberToObject(row, "rss_before_step_bytes", worst.before_kib * 1024.0);
        cJSON_AddNumberToObject(row, "step_seconds", worst.seconds);
        cJSON_AddNumberToObject(row, "loss", worst.loss);
        cJSON_AddItemToArray(rows, row);
    }
    char *json = cJSON_Print(root);
    FILE *file = fopen(json_path, "w");
    if (file) fputs(json, file), fclose(file);
    free(json);
    cJSON_Delete(root);
    rmdir(folder);
    return 0;
}
