/*
 * Files → index, side by side in one run, on a folder of 224×224 JPEG photos (textured, quality
 * 90: tests/media/media_fixtures --photos), `small` with BF16 compute, batch 32:
 *   - in memory: every file's bytes already in RAM, uform_image_encode batch after batch (decode
 *     included), on an executor of `threads` threads: the engine's own speed on these files;
 *   - `uform index` (the command, as a user runs it) with the decode stage on the compute
 *     threads (--decode-threads 0) and on its own thread (1); items/s of the pipeline (from its
 *     JSON summary: reading, probing, decoding, encoding, checkpoint-free writing; the model load
 *     is excluded on both sides), with its minor page faults and system time;
 *   - `uform encode` on the same files (the command before `index` existed): faults and system time;
 *   - PyTorch (bench/index_torch.py): PIL + torchvision transforms, DataLoader with 0, 1 and 2
 *     workers, BF16 autocast; its best configuration.
 * Reports the ratios the issue asks for: index / in memory (≥ 0.9) and index / best PyTorch (≥ 2).
 * Rounds interleave the engine's measurements; the best round counts. Prints a table, writes JSON.
 *
 *   bench_index [--checkpoint build/bench/small.safetensors] [--photos N] [--batch B] [--threads T]
 *               [--rounds R] [--no-torch] [--work DIR] [--json bench/results/index.json]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"
#include "model/config.h"
#include "model/layout.h"
#include "uform/uform.h"

#ifndef BENCH_MEDIA_FIXTURES
#define BENCH_MEDIA_FIXTURES "build/tests/media/media_fixtures"
#endif
#ifndef BENCH_UFORM
#define BENCH_UFORM "build/tools/uform"
#endif

/* What one child process did: its stdout, and its resource usage. */
typedef struct child_t {
    char output[8192];
    double wall, user, system;
    long minor_faults;
    int status;
} child_t;

static int run_child(char *const argv[], child_t *child) {
    memset(child, 0, sizeof *child);
    int pipe_ends[2];
    if (pipe(pipe_ends) != 0) return -1;
    double start = bench_seconds();
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pipe_ends[1], 1);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) dup2(null, 2);
        close(pipe_ends[0]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(pipe_ends[1]);
    size_t used = 0;
    ssize_t got;
    while ((got = read(pipe_ends[0], child->output + used, sizeof child->output - 1 - used)) > 0) used += (size_t)got;
    close(pipe_ends[0]);
    struct rusage usage;
    int status = 0;
    wait4(pid, &status, 0, &usage);
    child->wall = bench_seconds() - start;
    child->user = (double)usage.ru_utime.tv_sec + usage.ru_utime.tv_usec * 1e-6;
    child->system = (double)usage.ru_stime.tv_sec + usage.ru_stime.tv_usec * 1e-6;
    child->minor_faults = usage.ru_minflt;
    child->status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return 0;
}

static double json_number(const char *text, const char *key) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *at = strstr(text, pattern);
    return at ? atof(at + strlen(pattern)) : 0;
}

/* The photos' bytes end to end. */
typedef struct corpus_t {
    unsigned char *data;
    size_t *offsets;
    size_t count;
    char **paths;
} corpus_t;

static int compare_strings(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int load_corpus(const char *folder, size_t count, corpus_t *corpus) {
    memset(corpus, 0, sizeof *corpus);
    corpus->paths = calloc(count, sizeof(char *));
    corpus->offsets = calloc(count + 1, sizeof(size_t));
    size_t capacity = 0;
    for (size_t i = 0; i < count; ++i) {
        char path[4200];
        snprintf(path, sizeof path, "%s/photo_%06zu.jpg", folder, i);
        FILE *file = fopen(path, "rb");
        if (!file) return -1;
        fseek(file, 0, SEEK_END);
        size_t size = (size_t)ftell(file);
        fseek(file, 0, SEEK_SET);
        if (corpus->offsets[i] + size > capacity) {
            capacity = (corpus->offsets[i] + size) * 2;
            corpus->data = realloc(corpus->data, capacity);
        }
        if (fread(corpus->data + corpus->offsets[i], 1, size, file) != size) return -1;
        fclose(file);
        corpus->offsets[i + 1] = corpus->offsets[i] + size;
        corpus->paths[i] = strdup(path);
    }
    corpus->count = count;
    qsort(corpus->paths, count, sizeof(char *), compare_strings);
    return 0;
}

static double cpu_seconds_self(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (double)usage.ru_utime.tv_sec + usage.ru_utime.tv_usec * 1e-6 + (double)usage.ru_stime.tv_sec +
           usage.ru_stime.tv_usec * 1e-6;
}

static double last_cpu_seconds;      /* of the latest in-memory pass, every thread of the process */
static double last_decode_fraction;  /* decoding's share of that pass (the encode's own stats) */

/* Items per second of uform_image_encode over the whole corpus in batches, the bytes in RAM. */
static double in_memory_rate(uform_model_t model, uform_executor_t executor, uform_arena_t arena, const corpus_t *corpus,
                             size_t batch) {
    double start = bench_seconds(), cpu_start = cpu_seconds_self(), decode = 0, compute = 0;
    for (size_t first = 0; first < corpus->count; first += batch) {
        size_t count = corpus->count - first < batch ? corpus->count - first : batch;
        uform_encode_stats_t stats = {0};
        uform_image_encode_t request = {0};
        request.model = model, request.executor = executor, request.arena = arena, request.config.stats = &stats;
        request.images = (uform_tape_t){corpus->data, corpus->offsets + first, count};
        if (uform_image_encode(&request) != UFORM_OK) {
            fprintf(stderr, "bench_index: %s\n", request.outcome.message);
            return 0;
        }
        decode += stats.decode_seconds, compute += stats.compute_seconds;
    }
    last_decode_fraction = decode + compute > 0 ? decode / (decode + compute) : 0;
    last_cpu_seconds = cpu_seconds_self() - cpu_start;
    return (double)corpus->count / (bench_seconds() - start);
}

int main(int argc, char **argv) {
    const char *checkpoint = "build/bench/small.safetensors", *work = "/tmp/uform_bench_index",
               *json_path = "bench/results/index.json";
    size_t photos = 256, batch = 32, threads = 2;
    int rounds = 3, with_torch = 1;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--checkpoint") == 0 && i + 1 < argc) checkpoint = argv[++i];
        else if (strcmp(argv[i], "--photos") == 0 && i + 1 < argc) photos = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc) batch = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--work") == 0 && i + 1 < argc) work = argv[++i];
        else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) json_path = argv[++i];
        else if (strcmp(argv[i], "--no-torch") == 0) with_torch = 0;
        else {
            fprintf(stderr, "usage: bench_index [--checkpoint PATH] [--photos N] [--batch B] [--threads T] [--rounds R] "
                            "[--no-torch] [--work DIR] [--json PATH]\n");
            return 2;
        }
    }
    if (access(checkpoint, R_OK) != 0) {
        uform__model_config_t config;
        uform__model_config_named("small", &config, NULL, "bench");
        if (uform__model_write_random(checkpoint, &config, 11, NULL, "bench") != UFORM_OK) {
            fprintf(stderr, "bench_index: cannot write %s\n", checkpoint);
            return 1;
        }
    }
    mkdir(work, 0755);
    char folder[2048], index_path[2048], count_text[32], batch_text[32], threads_text[32];
    snprintf(folder, sizeof folder, "%.1900s/photos_%zu", work, photos);
    snprintf(index_path, sizeof index_path, "%.1900s/bench.index", work);
    snprintf(count_text, sizeof count_text, "%zu", photos);
    snprintf(batch_text, sizeof batch_text, "%zu", batch);
    snprintf(threads_text, sizeof threads_text, "%zu", threads);
    child_t child;
    char last[4200];
    snprintf(last, sizeof last, "%s/photo_%06zu.jpg", folder, photos - 1);
    if (access(last, R_OK) != 0) {
        char *generate[] = {BENCH_MEDIA_FIXTURES, "--photos", count_text, folder, "224", "224", "90", "1", NULL};
        if (run_child(generate, &child) != 0 || child.status != 0) {
            fprintf(stderr, "bench_index: %s could not write the photos\n", BENCH_MEDIA_FIXTURES);
            return 1;
        }
    }
    /* The same photos as 4 WebDataset shards (plain tar: KEY.jpg per sample), for `uform index --shards`. */
    char shards[2048];
    snprintf(shards, sizeof shards, "%.1900s/shards_%zu", work, photos);
    mkdir(shards, 0755);
    for (size_t s = 0; s < 4; ++s) {
        char shard[2100], *tar[16 + 4096];
        snprintf(shard, sizeof shard, "%s/photos-%04zu.tar", shards, s);
        if (access(shard, R_OK) == 0) continue;
        int n = 0;
        tar[n++] = "/usr/bin/tar", tar[n++] = "-cf", tar[n++] = shard, tar[n++] = "-C", tar[n++] = folder;
        static char names[4096][32];
        for (size_t i = s * photos / 4; i < (s + 1) * photos / 4 && n < 4096; ++i) {
            snprintf(names[n], sizeof names[n], "photo_%06zu.jpg", i);
            tar[n] = names[n], n++;
        }
        tar[n] = NULL;
        if (run_child(tar, &child) != 0 || child.status != 0) {
            fprintf(stderr, "bench_index: tar could not write %s\n", shard);
            return 1;
        }
    }
    char shard_list[2200];
    snprintf(shard_list, sizeof shard_list, "%s/photos-{0000..0003}.tar", shards);
    corpus_t corpus;
    if (load_corpus(folder, photos, &corpus) != 0) {
        fprintf(stderr, "bench_index: cannot read the photos in %s\n", folder);
        return 1;
    }

    uform_executor_t executor = NULL;
    uform_model_t model = NULL;
    uform_arena_t arena = NULL;
    uform_ram_options_t options = {0};
    options.compute = UFORM_COMPUTE_BF16;
    uform_outcome_t outcome = {0};
    if (uform_executor_for_ram(NULL, threads, 0, &executor, &outcome) != UFORM_OK ||
        uform_model_load_ram(executor, checkpoint, &options, &model, &outcome) != UFORM_OK ||
        uform_arena_for_executor(executor, &arena, &outcome) != UFORM_OK) {
        fprintf(stderr, "bench_index: %s\n", outcome.message);
        return 1;
    }
    in_memory_rate(model, executor, arena, &corpus, batch); /* warm-up */

    /* Variants: decode-threads 0 and 1 over the folder, then the same over the shards. */
    enum { VARIANTS = 4 };
    char *index_command[VARIANTS][20];
    for (int v = 0; v < VARIANTS; ++v) {
        char **a = index_command[v];
        int n = 0, d = v % 2;
        a[n++] = BENCH_UFORM, a[n++] = "index", a[n++] = (char *)checkpoint;
        if (v < 2) a[n++] = folder;
        else a[n++] = "--shards", a[n++] = shard_list;
        a[n++] = "--out";
        a[n++] = index_path, a[n++] = "--batch", a[n++] = batch_text, a[n++] = "--threads", a[n++] = threads_text;
        a[n++] = "--bf16", a[n++] = "--quiet", a[n++] = "--json", a[n++] = "--checkpoint", a[n++] = "0";
        a[n++] = "--decode-threads", a[n++] = d ? "1" : "0", a[n] = NULL;
    }
    char *encode_command[16 + 4096];
    {
        int n = 0;
        encode_command[n++] = BENCH_UFORM, encode_command[n++] = "encode", encode_command[n++] = (char *)checkpoint;
        encode_command[n++] = "--batch", encode_command[n++] = batch_text, encode_command[n++] = "--threads";
        encode_command[n++] = threads_text, encode_command[n++] = "--bf16", encode_command[n++] = "--out";
        static char encode_out[4096];
        snprintf(encode_out, sizeof encode_out, "%s/encode.npy", work);
        encode_command[n++] = encode_out, encode_command[n++] = "--image";
        for (size_t i = 0; i < corpus.count && i < 4096; ++i) encode_command[n++] = corpus.paths[i];
        encode_command[n] = NULL;
    }
    double memory = 0, memory_cpu = 0, indexed[VARIANTS] = {0}, index_wall[VARIANTS] = {0};
    child_t index_child[VARIANTS], encode_child;
    memset(index_child, 0, sizeof index_child);
    for (int round = 0; round < rounds; ++round) {
        double rate = in_memory_rate(model, executor, arena, &corpus, batch);
        if (rate > memory) memory = rate;
        if (memory_cpu == 0 || last_cpu_seconds < memory_cpu) memory_cpu = last_cpu_seconds;
        for (int d = 0; d < VARIANTS; ++d) {
            if (run_child(index_command[d], &child) != 0 || (child.status != 0 && child.status != 3)) {
                fprintf(stderr, "bench_index: uform index failed (status %d)\n", child.status);
                return 1;
            }
            rate = json_number(child.output, "items_per_second");
            if (rate > indexed[d]) indexed[d] = rate, index_wall[d] = child.wall, index_child[d] = child;
        }
    }
    run_child(encode_command, &encode_child);
    /* The engine's side is done: free its threads before PyTorch's run. */
    uform_arena_free(arena);
    uform_model_free(model);
    uform_executor_free(executor);

    double torch[3] = {0, 0, 0}, torch_cpu[3] = {0, 0, 0}, best_torch = 0, best_torch_cpu = 0;
    for (int workers = 0; with_torch && workers < 3; ++workers) {
        char command[8192];
        snprintf(command, sizeof command,
                 "OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/index_torch.py %s %s %zu %zu %d --bf16 2>/dev/null",
                 checkpoint, folder, batch, threads, workers);
        FILE *pipe = popen(command, "r");
        char line[4096] = {0};
        while (pipe && fgets(line, sizeof line, pipe))
            if (strstr(line, "items_per_second")) {
                torch[workers] = json_number(line, "items_per_second");
                torch_cpu[workers] = json_number(line, "items_per_cpu_second");
            }
        if (pipe) pclose(pipe);
        if (torch[workers] > best_torch) best_torch = torch[workers];
        if (torch_cpu[workers] > best_torch_cpu) best_torch_cpu = torch_cpu[workers];
    }
    double best_index = indexed[0] > indexed[1] ? indexed[0] : indexed[1];
    double best_shards = indexed[2] > indexed[3] ? indexed[2] : indexed[3];
    printf("%zu photos 224x224 JPEG q90, small, BF16, batch %zu, %zu threads, %s; best of %d rounds\n", photos, batch,
           threads, uform_cpu_class_name(uform_cpu_class_detect()), rounds);
    double memory_per_cpu = memory_cpu > 0 ? (double)photos / memory_cpu : 0, index_per_cpu[VARIANTS];
    printf("  in memory (uform_image_encode)       %8.1f items/s, %.1f items per CPU-second, decoding %.1f%% of it\n",
           memory, memory_per_cpu, 100 * last_decode_fraction);
    for (int d = 0; d < VARIANTS; ++d) {
        double cpu = index_child[d].user + index_child[d].system;
        index_per_cpu[d] = cpu > 0 ? (double)photos / cpu : 0; /* the whole process: load and walk included */
        printf("  uform index %s, decode-threads %d  %8.1f items/s  (%.2fx in memory; process %.2f s, %ld minor faults, "
               "%.2f s system of %.2f s CPU: %.1f items per CPU-second)\n",
               d < 2 ? "(folder)" : "--shards", d % 2, indexed[d], memory > 0 ? indexed[d] / memory : 0, index_wall[d], index_child[d].minor_faults,
               index_child[d].system, cpu, index_per_cpu[d]);
    }
    printf("  uform index --shards / in memory: %.2fx (asked: >= 0.95x); / uform index of the folder: %.2fx\n",
           memory > 0 ? best_shards / memory : 0, best_index > 0 ? best_shards / best_index : 0);
    printf("  uform encode (all files in memory)    process %.2f s, %ld minor faults, %.2f s system of %.2f s CPU\n",
           encode_child.wall, encode_child.minor_faults, encode_child.system, encode_child.user + encode_child.system);
    for (int workers = 0; with_torch && workers < 3; ++workers)
        printf("  PyTorch, DataLoader %d workers, BF16   %8.1f items/s, %.1f items per CPU-second\n", workers, torch[workers],
               torch_cpu[workers]);
    double best_index_per_cpu = index_per_cpu[0] > index_per_cpu[1] ? index_per_cpu[0] : index_per_cpu[1];
    if (with_torch)
        printf("  uform index / best PyTorch: %.2fx items/s, %.2fx items per CPU-second\n",
               best_torch > 0 ? best_index / best_torch : 0, best_torch_cpu > 0 ? best_index_per_cpu / best_torch_cpu : 0);
    FILE *json = fopen(json_path, "w");
    if (json) {
        fprintf(json,
                "{\"photos\": %zu, \"batch\": %zu, \"threads\": %zu, \"cpu_class\": \"%s\", \"in_memory_items_per_second\": %.3f, "
                "\"index_items_per_second\": [%.3f, %.3f], \"index_minor_faults\": [%ld, %ld], \"index_system_seconds\": [%.3f, %.3f], "
                "\"encode_minor_faults\": %ld, \"encode_system_seconds\": %.3f, \"encode_cpu_seconds\": %.3f, "
                "\"torch_items_per_second\": [%.3f, %.3f, %.3f], \"torch_items_per_cpu_second\": [%.3f, %.3f, %.3f], "
                "\"in_memory_items_per_cpu_second\": %.3f, \"index_items_per_cpu_second\": [%.3f, %.3f], "
                "\"index_vs_in_memory\": %.3f, \"index_vs_best_torch\": %.3f, \"index_vs_best_torch_per_cpu\": %.3f, "
                "\"shards_index_items_per_second\": [%.3f, %.3f], \"shards_vs_in_memory\": %.3f}\n",
                photos, batch, threads, uform_cpu_class_name(uform_cpu_class_detect()), memory, indexed[0], indexed[1],
                index_child[0].minor_faults, index_child[1].minor_faults, index_child[0].system, index_child[1].system,
                encode_child.minor_faults, encode_child.system, encode_child.user + encode_child.system, torch[0], torch[1],
                torch[2], torch_cpu[0], torch_cpu[1], torch_cpu[2], memory_per_cpu, index_per_cpu[0], index_per_cpu[1],
                memory > 0 ? best_index / memory : 0, best_torch > 0 ? best_index / best_torch : 0,
                best_torch_cpu > 0 ? best_index_per_cpu / best_torch_cpu : 0, indexed[2], indexed[3],
                memory > 0 ? best_shards / memory : 0);
        fclose(json);
    }
    return 0;
}
