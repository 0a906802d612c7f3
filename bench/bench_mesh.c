/*
 * The mesh's cost (docs/mesh.md): step time of the tiny and small models with 1, 2 and 3
 * processes on this machine, each process with cores / processes threads, so the processes share the
 * same cores as one process would; the same members stepping their shares with no mesh side by side
 * (what the mesh adds); and, for the small model's gradients, the mesh's all-reduce against raw
 * Gloo's own all-reduce of the same bytes in the same processes, alternated. Then, from the bytes a
 * step hands to the collectives, a paper estimate of a step of `base` on 8 hosts at 25 Gbit/s.
 *
 *   bench_mesh [--quick] [--steps N] [--repeats N] [--sizes tiny,small] [--json bench/results/mesh.json]
 *   bench_mesh --links ...        the mesh on links shaped with tc, and the scaling table (bench_mesh_links.c)
 *   bench_mesh --accumulate ...   peak memory of a global batch of 4,096 pairs by chunks (bench_mesh_memory.c)
 *   bench_mesh --scaling SHARE ALPHA_US   the scaling table alone, from a link model measured before
 *
 * Batches: tiny — 24 pairs of a 32×32 JPEG and a caption; small — 12 pairs of 64-byte texts (text
 * to text, sides 0 and 1). BF16 compute. Members are forked children meeting on 127.0.0.1.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_mesh_batch.h"
#include "bench_mesh_links.h"
#include "bench_mesh_raw.h"
#include "demo_media.h"
#include "mesh/mesh.h"
#include "train/trainer.h"

#define MAX_PROCESSES 3
#define PAIRS BENCH_MESH_PAIRS
#define SMALL_PAIRS BENCH_MESH_SMALL_PAIRS

static char folder[256];

typedef struct plan_t {
    const char *size;
    int images;
    size_t processes, threads, steps, repeats;
    int collective;
} plan_t;

typedef struct result_t {
    int ok;
    double step_median, alone_median;       /* seconds */
    double payload[3], collectives[3];      /* per step */
    uint64_t total;                         /* parameter floats */
    double flops;                           /* per step, this member */
    double mesh_reduce, raw_reduce;         /* medians, seconds */
} result_t;

/* The mesh's all-reduce and raw Gloo's, alternated, on the trainer's gradient count. */
static void time_collectives(const plan_t *plan, size_t index, uform_mesh_t mesh, size_t total, result_t *result) {
    char store[512];
    snprintf(store, sizeof store, "%s/raw-%s-%zu", folder, plan->size, plan->processes);
    bench_raw_t *raw = bench_raw_connect(store, "127.0.0.1", (int)index, (int)plan->processes, 300000);
    float *values = malloc(total * sizeof(float));
    if (!raw || !values) {
        free(values);
        bench_raw_free(raw);
        return;
    }
    for (size_t i = 0; i < total; ++i) values[i] = (float)((i * 2654435761u) % 1000) * 1e-6f;
    double mesh_times[64], raw_times[64];
    size_t repeats = plan->repeats < 64 ? plan->repeats : 64;
    uform_outcome_t outcome = {0};
    /* Round 0 warms both up. Each timed call starts right after a one-float all-reduce, so no call
     * also pays for a member arriving late, and the order alternates from round to round. */
    float token = 0;
    for (size_t r = 0; r <= repeats; ++r) {
        for (int turn = 0; turn < 2; ++turn) {
            int mesh_turn = (int)(r % 2) == turn;
            if (bench_raw_allreduce(raw, &token, 1) != 0) goto done;
            double start = bench_seconds();
            int failed = mesh_turn ? uform__mesh_allreduce_f32(mesh, values, total, "a benchmark", &outcome,
                                                               "bench_mesh") != UFORM_OK
                                   : bench_raw_allreduce(raw, values, total) != 0;
            if (failed) goto done;
            if (r) (mesh_turn ? mesh_times : raw_times)[r - 1] = bench_seconds() - start;
        }
        for (size_t i = 0; i < total; ++i) values[i] *= 1.0f / (float)(plan->processes * plan->processes);
    }
done:
    result->mesh_reduce = bench_median(mesh_times, repeats), result->raw_reduce = bench_median(raw_times, repeats);
    free(values);
    bench_raw_free(raw);
}

static int member(size_t index, void *context, void *answer) {
    const plan_t *plan = context;
    result_t result;
    memset(&result, 0, sizeof result);
    uform_executor_t executor = NULL;
    uform_arena_t arena = NULL;
    uform_mesh_t mesh = NULL;
    uform_outcome_t outcome = {0};
    if (uform_executor_for_ram(NULL, plan->threads, 0, &executor, &outcome) != UFORM_OK ||
        uform_arena_for_executor(executor, &arena, &outcome) != UFORM_OK)
        return 1;
    char job[64];
    snprintf(job, sizeof job, "bench-%s-%zu", plan->size, plan->processes);
    uform_mesh_options_t options = {0};
    options.host_domain_index = index, options.host_domain_count = plan->processes;
    options.directory = folder, options.job = job, options.timeout_seconds = 600, options.address = "127.0.0.1";
    if (uform_mesh_bootstrap(executor, &options, &mesh, &outcome) != UFORM_OK) {
        fprintf(stderr, "bench_mesh: bootstrap: %s\n", outcome.message);
        return 1;
    }
    bench_batch_t batch;
    size_t pairs = plan->images ? PAIRS : SMALL_PAIRS;
    bench_batch_make(&batch, plan->images, pairs * index / plan->processes, pairs * (index + 1) / plan->processes);
    uform_trainer_t trainer = bench_trainer(executor, plan->size, mesh);
    if (trainer) {
        result.total = trainer->total;
        uint64_t payload[3], calls[3];
        memcpy(payload, mesh->payload_bytes, sizeof payload), memcpy(calls, mesh->collectives, sizeof calls);
        bench_steps_t measured;
        result.step_median = bench_batch_steps(trainer, arena, &batch, plan->steps, &measured) ? -1 : measured.seconds;
        result.flops = measured.flops;
        for (int k = 0; k < 3; ++k) {
            result.payload[k] = (double)(mesh->payload_bytes[k] - payload[k]) / (double)(plan->steps + 1);
            result.collectives[k] = (double)(mesh->collectives[k] - calls[k]) / (double)(plan->steps + 1);
        }
        if (plan->collective && plan->processes > 1) time_collectives(plan, index, mesh, trainer->total, &result);
        uform_trainer_free(trainer);
        /* The same share with no mesh, the members side by side as before. */
        uform_trainer_t alone = bench_trainer(executor, plan->size, NULL);
        if (alone) result.alone_median = bench_batch_steps(alone, arena, &batch, plan->steps, &measured) ? -1 : measured.seconds;
        uform_trainer_free(alone);
        result.ok = result.step_median > 0 && result.alone_median > 0;
    }
    free(batch.data);
    memcpy(answer, &result, sizeof result);
    uform_arena_free(arena);
    uform_mesh_free(mesh);
    uform_executor_free(executor);
    return result.ok ? 0 : 1;
}

/* Runs one plan's members; fills results[processes]; 0 when all succeeded. */
static int run_plan(const plan_t *plan, result_t *results) {
    char store[512];
    snprintf(store, sizeof store, "%s/raw-%s-%zu", folder, plan->size, plan->processes);
    mkdir(store, 0755);
    int failed = bench_members_run(folder, plan->processes, sizeof *results, member, (void *)plan, results, 1800);
    char command[600];
    snprintf(command, sizeof command, "rm -rf '%s'", store);
    if (system(command) != 0) fprintf(stderr, "bench_mesh: cannot remove %s\n", store);
    return failed;
}

/* Wire bytes a member sends for a ring all-reduce of n bytes among k members (reduce-scatter, then
 * all-gather: 2 (k − 1) / k · n) and for an all-gather of n bytes in all ((k − 1) / k · n). */
static double ring_allreduce(double n, double k) { return 2.0 * (k - 1.0) / k * n; }
static double ring_allgather(double n, double k) { return (k - 1.0) / k * n; }

int main(int argc, char **argv) {
    const char *json_path = "bench/results/mesh.json", *sizes_text = "tiny,small";
    size_t steps = 5, repeats = 9;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--links")) return bench_mesh_links(argc, argv);
        if (!strcmp(argv[i], "--accumulate")) return bench_mesh_accumulate(argc, argv);
        if (!strcmp(argv[i], "--scaling") && i + 2 < argc) { /* the table alone, from a model measured before */
            cJSON *root = cJSON_CreateObject();
            bench_mesh_scaling(atof(argv[i + 1]), atof(argv[i + 2]) * 1e-6, root);
            cJSON_Delete(root);
            return 0;
        }
    }
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--quick")) steps = 2, repeats = 3;
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) sizes_text = argv[++i];
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
        else {
            fprintf(stderr, "usage: bench_mesh [--quick] [--steps N] [--repeats N] [--sizes tiny,small] [--json PATH]\n"
                            "       bench_mesh --links ... (shaped links: bench_mesh_links.c)\n"
                            "       bench_mesh --accumulate ... (peak memory of large batches: bench_mesh_memory.c)\n"
                            "       bench_mesh --scaling BETA_SHARE ALPHA_US (the scaling table from a link model)\n");
            return 2;
        }
    }
    if (steps < 1) steps = 1;
    if (steps > 60) steps = 60;
    snprintf(folder, sizeof folder, "%s/uform-bench-mesh-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(folder)) return 1;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    cJSON *root = cJSON_CreateObject(), *rows = cJSON_AddArrayToObject(root, "steps");
    cJSON_AddNumberToObject(root, "cores", (double)cores);
    printf("bench_mesh: %ld cores; every process gets cores / processes threads (at least 1), BF16 compute; a step is "
           "%d image pairs (tiny) or %d text pairs (small)\n\n",
           cores, PAIRS, SMALL_PAIRS);
    printf("%-6s %5s %7s %10s %10s %9s %12s %26s\n", "model", "procs", "threads", "step ms", "alone ms", "mesh adds",
           "vs 1 process", "collective MiB/step (calls)");
    double small_gradient_bytes = 0, small_flops = 0, small_alone = 0;
    double collective[MAX_PROCESSES + 1][2] = {{0}};
    char sizes[64];
    snprintf(sizes, sizeof sizes, "%s", sizes_text);
    for (char *size = strtok(sizes, ","); size; size = strtok(NULL, ",")) {
        double single = 0;
        for (size_t k = 1; k <= MAX_PROCESSES; ++k) {
            plan_t plan = {size, strcmp(size, "tiny") == 0, k, cores / (long)k > 0 ? (size_t)(cores / (long)k) : 1, steps,
                           repeats, strcmp(size, "small") == 0};
            result_t results[MAX_PROCESSES];
            if (run_plan(&plan, results)) {
                printf("%-6s %5zu   (failed)\n", size, k);
                continue;
            }
            double step = 0, alone = 0, flops = 0;
            for (size_t i = 0; i < k; ++i) {
                step = fmax(step, results[i].step_median), alone = fmax(alone, results[i].alone_median);
                flops += results[i].flops;
            }
            if (k == 1) single = step;
            double mib = (results[0].payload[0] + results[0].payload[1]) / 1048576.0;
            printf("%-6s %5zu %7zu %10.1f %10.1f %8.1f%% %11.2f× %14.2f (%.0f+%.0f)\n", size, k, plan.threads,
                   step * 1e3, alone * 1e3, 100.0 * (step - alone) / alone, single / step, mib,
                   results[0].collectives[0], results[0].collectives[1]);
            if (!strcmp(size, "small") && k == 1) small_flops = flops, small_alone = alone;
            if (!strcmp(size, "small")) small_gradient_bytes = (double)results[0].total * 4.0;
            if (!strcmp(size, "small") && k > 1) collective[k][0] = results[0].mesh_reduce, collective[k][1] = results[0].raw_reduce;
            for (size_t i = 1; i < k && !strcmp(size, "small"); ++i) {
                collective[k][0] = fmax(collective[k][0], results[i].mesh_reduce);
                collective[k][1] = fmax(collective[k][1], results[i].raw_reduce);
            }
            cJSON *row = cJSON_CreateObject();
            cJSON_AddStringToObject(row, "model", size);
            cJSON_AddNumberToObject(row, "processes", (double)k);
            cJSON_AddNumberToObject(row, "threads", (double)plan.threads);
            cJSON_AddNumberToObject(row, "step_seconds", step);
            cJSON_AddNumberToObject(row, "alone_seconds", alone);
            cJSON_AddNumberToObject(row, "versus_one_process", single / step);
            cJSON_AddNumberToObject(row, "allreduce_bytes_per_step", results[0].payload[0]);
            cJSON_AddNumberToObject(row, "allgather_bytes_per_step", results[0].payload[1]);
            cJSON_AddItemToArray(rows, row);
        }
    }
    if (small_gradient_bytes > 0) {
        printf("\nAll-reduce of the small model's gradients (%.1f MiB), median of %zu, the slowest member:\n",
               small_gradient_bytes / 1048576.0, repeats);
        cJSON *reduces = cJSON_AddArrayToObject(root, "allreduce");
        for (size_t k = 2; k <= MAX_PROCESSES; ++k) {
            if (collective[k][1] <= 0) continue;
            printf("  %zu processes: mesh %.1f ms, raw Gloo %.1f ms: %.3f× (%.2f GB/s of ring traffic a member)\n", k,
                   collective[k][0] * 1e3, collective[k][1] * 1e3, collective[k][0] / collective[k][1],
                   ring_allreduce(small_gradient_bytes, (double)k) / collective[k][0] * 1e-9);
            cJSON *row = cJSON_CreateObject();
            cJSON_AddNumberToObject(row, "processes", (double)k);
            cJSON_AddNumberToObject(row, "mesh_seconds", collective[k][0]);
            cJSON_AddNumberToObject(row, "raw_gloo_seconds", collective[k][1]);
            cJSON_AddNumberToObject(row, "ratio", collective[k][0] / collective[k][1]);
            cJSON_AddItemToArray(reduces, row);
        }
    }
    /* base on 8 hosts at 25 Gbit/s, on paper: what a step hands to the collectives (mesh_step.c). */
    uform_trainer_t base = bench_trainer(NULL, "base", NULL);
    if (base) {
        const uform__model_config_t *config = &base->config;
        double P = (double)base->total, k = 8, link = 25e9 / 8, pairs = 256, B = 2 * pairs, N = B;
        double E = (double)config->embedding, prefixes = 0;
        for (size_t p = 0; p < config->matryoshka_count; ++p) prefixes += (double)config->matryoshka[p];
        double gradients = 4 * P, differentials = 8 * (k + 2 + B * prefixes);
        double embeddings = N * E * 4 + N * 8 + (B + k) * 8 + B + 8 * k, shapes = k * 320;
        double wire = ring_allreduce(gradients, k) + ring_allreduce(differentials, k) + ring_allgather(embeddings, k) +
                      ring_allgather(shapes, k) + ring_allreduce(4 * k, k);
        double latency = 5 * 2 * (k - 1) * 50e-6; /* five collectives, 2 (k − 1) ring hops each, ~50 µs a hop */
        printf("\nbase on 8 hosts at 25 Gbit/s, on paper (global batch of %.0f pairs, 32 a host):\n", pairs);
        printf("  per step and member: gradients %.0f MiB all-reduced, d e %.1f MiB all-reduced, embeddings %.1f MiB "
               "gathered;\n  %.0f MiB on the wire, %.0f ms at %.2f GB/s, + ~%.1f ms of ring latency\n",
               gradients / 1048576, differentials / 1048576, embeddings / 1048576, wire / 1048576, wire / link * 1e3,
               link * 1e-9, latency * 1e3);
        if (small_flops > 0 && small_alone > 0)
            printf("  (for scale: the small model stepped %.0f GFLOP/s here on %ld cores with one process)\n",
                   small_flops / small_alone * 1e-9, cores);
        cJSON *estimate = cJSON_AddObjectToObject(root, "base_8_hosts_25_gbit");
        cJSON_AddNumberToObject(estimate, "parameter_floats", P);
        cJSON_AddNumberToObject(estimate, "wire_bytes_per_member", wire);
        cJSON_AddNumberToObject(estimate, "seconds_at_link_rate", wire / link);
        cJSON_AddNumberToObject(estimate, "latency_seconds", latency);
        uform_trainer_free(base);
    }
    char *json = cJSON_Print(root);
    FILE *file = fopen(json_path, "w");
    if (file) fputs(json, file), fclose(file);
    free(json);
    cJSON_Delete(root);
    rmdir(folder);
    return 0;
}
