/*
 * Speed of published checkpoints (issue 34): the engine on Hugging Face folders as people download
 * them, against PyTorch (bench/published_torch.py) and ONNX Runtime (bench/published_ort.mjs) on the
 * same folders, the same random weights and the same input files, in one run; items per second with
 * decoding and preprocessing (images) or tokenization (texts) inside every call on every side.
 *
 *   bench_published --data DIR [--ort NODE_PREFIX]... [--json PATH] [--seconds S] [--rounds R]
 *                   [--only image|minilm|bert] [--batches 1,32] [--classes genoa,intel_haswell] [--computes f32,bf16,i8]
 *                   [--threads 2] [--no-torch] [--no-load | --load-only] [--loads 7] [--python PATH]
 *
 * DIR is what bench/published_data.py wrote (folders/, images/, texts.txt) plus the ONNX graphs of
 * bench/published_export.py under DIR/onnx/<folder>/; each --ort names a folder whose node_modules
 * holds one pinned onnxruntime-node and @huggingface/transformers (bench/published_npm_install.sh).
 * `make bench_published_run` (bench/published.cmake) prepares all of it and runs this.
 *
 * Cases: ViT-B/32 images (CLIP's vision tower, JPEG files of 640 x 480 decoded inside the call),
 * MiniLM-L6 and BERT-base texts (English sentences of 11-37 words, tokenised inside the call), batch
 * 1 (the 32 inputs one at a time, in turn) and 32 (all of them), --threads threads everywhere. The
 * engine runs F32, BF16 and I8 computes under each CPU class of --classes (default: the detected
 * class and intel_haswell, the AVX2 code, when the machine runs it). The peers run every mode they
 * offer. Within a round every configuration runs once for --seconds (at least one call, after
 * untimed warm-up calls): engine configurations first, then PyTorch's modes, then each ONNX Runtime's,
 * so a slow spell of a shared host falls on all of them; a configuration's figure is its median
 * over rounds. Each round prints the load average seen when it started.
 *
 * Before timing, every configuration's embeddings of the 32 inputs are compared (cosine) with the
 * engine's F32 ones under the first class, and for texts each side's token count per text with the
 * engine's (stats.tokens of one-text calls): the peers must run the same model on the same ids.
 * "prep" is the share of a call spent before the model: the engine's decode_seconds (decoding and
 * preprocessing media; 0 for texts, whose tokenization the engine counts as compute), the peers'
 * own clocks. "cpu/item" is CPU seconds per item of the process (engine: this process; peers:
 * /proc/PID/stat), which spinning threads inflate and a busy host does not.
 *
 * Load: the ViT-B/32 folder (and the two text folders) loaded again and again from a warm page
 * cache under the first class, median wall time per compute, and what the load adds to the
 * process: anonymous memory (copies, repacked weights) and file-backed resident memory (the mapped
 * safetensors), from /proc/self/smaps_rollup after the load and after one encode.
 *
 * Writes a table to stdout and JSON to --json (default bench/results/published.json).
 */
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_clock.h"
#include "uform/uform.h"

#ifndef UFORM_BENCH_SOURCE_DIR
#define UFORM_BENCH_SOURCE_DIR "bench"
#endif

enum { max_items = 64, max_rounds = 9, max_configs = 32, max_peers = 4, max_classes = 4, answer_capacity = 1 << 16 };

/* ------------------------------------------------------------------------------------------ */
/* Peers: child processes speaking the line protocol of bench/published_torch.py.             */

typedef struct peer_t {
    char name[32];
    pid_t pid;
    FILE *to, *from;
    char modes[8][24];
    int mode_count;
} peer_t;

/* The number after "key": in a JSON line (Python writes ": ", node ":"), or NAN. */
static double json_number(const char *line, const char *key) {
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\"", key);
    const char *at = strstr(line, quoted);
    if (!at) return NAN;
    at = strchr(at + strlen(quoted), ':');
    return at ? strtod(at + 1, NULL) : NAN;
}

/* Sends one request line and reads one answer line; 0 on success. */
static int peer_ask(peer_t *peer, const char *request, char *answer, size_t capacity) {
    if (!peer->to || fprintf(peer->to, "%s\n", request) < 0 || fflush(peer->to) != 0) return -1;
    if (!fgets(answer, (int)capacity, peer->from)) return -1;
    if (strstr(answer, "\"error\"")) {
        fprintf(stderr, "bench_published: %s answered %s to '%s'", peer->name, answer, request);
        return -1;
    }
    return 0;
}

/* Starts `command` under /bin/sh with pipes to its stdin and from its stdout, waits for its
 * "ready" line and asks its modes; 0 on success. */
static int peer_start(peer_t *peer, const char *name, const char *command) {
    memset(peer, 0, sizeof *peer);
    snprintf(peer->name, sizeof peer->name, "%s", name);
    int down[2], up[2];
    if (pipe(down) != 0) return -1;
    if (pipe(up) != 0) return close(down[0]), close(down[1]), -1;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        dup2(down[0], 0), dup2(up[1], 1);
        close(down[0]), close(down[1]), close(up[0]), close(up[1]);
        execl("/bin/sh", "sh", "-c", command, (char *)NULL);
        _exit(127);
    }
    close(down[0]), close(up[1]);
    peer->pid = pid;
    peer->to = fdopen(down[1], "w"), peer->from = fdopen(up[0], "r");
    static char line[answer_capacity];
    if (!peer->from || !fgets(line, sizeof line, peer->from) || !strstr(line, "\"ready\"")) {
        fprintf(stderr, "bench_published: %s did not start (%s)\n", name, command);
        return -1;
    }
    printf("  peer %-10s %s", name, line);
    if (peer_ask(peer, "modes", line, sizeof line) != 0) return -1;
    const char *at = strchr(line, '[');
    while (at && peer->mode_count < 8) {
        const char *open = strchr(at, '"');
        if (!open) break;
        const char *close_quote = strchr(open + 1, '"');
        if (!close_quote) break;
        snprintf(peer->modes[peer->mode_count++], sizeof peer->modes[0], "%.*s", (int)(close_quote - open - 1), open + 1);
        at = close_quote + 1;
    }
    return 0;
}

static void peer_stop(peer_t *peer) {
    if (peer->to) fputs("quit\n", peer->to), fclose(peer->to);
    if (peer->from) fclose(peer->from);
    if (peer->pid > 0) waitpid(peer->pid, NULL, 0);
    memset(peer, 0, sizeof *peer);
}

/* User + system CPU seconds of process `pid` (every thread), from /proc/PID/stat. */
static double process_cpu_seconds(pid_t pid) {
    char path[64], text[2048];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *file = fopen(path, "r");
    if (!file) return NAN;
    size_t length = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    text[length] = 0;
    const char *at = strrchr(text, ')'); /* the command name may hold spaces */
    unsigned long long utime = 0, stime = 0;
    if (!at || sscanf(at + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2) return NAN;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

/* ------------------------------------------------------------------------------------------ */
/* Inputs and the engine.                                                                       */

typedef struct inputs_t {
    unsigned char *data;
    size_t offsets[max_items + 1];
    size_t count;
} inputs_t;

static int append(inputs_t *inputs, const void *bytes, size_t size) {
    if (inputs->count == max_items) return -1;
    size_t at = inputs->offsets[inputs->count];
    unsigned char *grown = realloc(inputs->data, at + size + 1);
    if (!grown) return -1;
    inputs->data = grown;
    memcpy(grown + at, bytes, size);
    inputs->offsets[++inputs->count] = at + size;
    return 0;
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The .jpg files of `directory` in name order, whole. */
static int read_images(const char *directory, inputs_t *inputs) {
    DIR *dir = opendir(directory);
    if (!dir) return -1;
    char *names[max_items];
    size_t count = 0;
    for (struct dirent *entry; (entry = readdir(dir)) && count < max_items;) {
        size_t length = strlen(entry->d_name);
        if (length > 4 && strcmp(entry->d_name + length - 4, ".jpg") == 0) names[count++] = strdup(entry->d_name);
    }
    closedir(dir);
    qsort(names, count, sizeof *names, compare_names);
    int failed = 0;
    for (size_t i = 0; i < count; ++i) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", directory, names[i]);
        FILE *file = fopen(path, "rb");
        free(names[i]);
        if (!file) {
            failed = -1;
            continue;
        }
        fseek(file, 0, SEEK_END);
        long size = ftell(file);
        fseek(file, 0, SEEK_SET);
        unsigned char *bytes = malloc((size_t)size);
        if (!bytes || fread(bytes, 1, (size_t)size, file) != (size_t)size || append(inputs, bytes, (size_t)size) != 0) failed = -1;
        free(bytes);
        fclose(file);
    }
    return failed || inputs->count == 0 ? -1 : 0;
}

static int read_texts(const char *path, inputs_t *inputs) {
    FILE *file = fopen(path, "r");
    if (!file) return -1;
    char line[8192];
    while (fgets(line, sizeof line, file)) {
        size_t length = strcspn(line, "\n");
        if (length && append(inputs, line, length) != 0) break;
    }
    fclose(file);
    return inputs->count ? 0 : -1;
}

typedef struct engine_t {
    uform_executor_t executor;
    uform_arena_t arena;
    uform_model_t model;
    uform_cpu_class_t cpu_class;
    uform_compute_t compute;
} engine_t;

static const char *const compute_names[3] = {"f32", "bf16", "i8"};

/* One call on items first .. first + count - 1. With `embeddings`, their rows are copied there
 * (width columns); stats accumulate into *sums. 0 on success. */
static int engine_call(engine_t *engine, int image, const inputs_t *inputs, size_t first, size_t count,
                       uform_encode_stats_t *sums, float *embeddings, size_t *width) {
    uform_encode_stats_t stats;
    memset(&stats, 0, sizeof stats);
    uform_tape_t tape = {inputs->data, inputs->offsets + first, count};
    uform_status_t status;
    const uform_outcome_t *outcome;
    const uform_matrix_t *view;
    static uform_image_encode_t image_request;
    static uform_text_encode_t text_request;
    if (image) {
        memset(&image_request, 0, sizeof image_request);
        image_request.model = engine->model, image_request.executor = engine->executor, image_request.images = tape;
        image_request.arena = engine->arena, image_request.outputs = UFORM_OUTPUTS_EMBEDDINGS;
        image_request.config.stats = &stats;
        status = uform_image_encode(&image_request);
        outcome = &image_request.outcome, view = &image_request.encoded.embeddings;
    } else {
        memset(&text_request, 0, sizeof text_request);
        text_request.model = engine->model, text_request.executor = engine->executor, text_request.texts = tape;
        text_request.arena = engine->arena, text_request.outputs = UFORM_OUTPUTS_EMBEDDINGS;
        text_request.config.stats = &stats;
        status = uform_text_encode(&text_request);
        outcome = &text_request.outcome, view = &text_request.encoded.embeddings;
    }
    if (status != UFORM_OK) {
        char line[800];
        uform_outcome_format(outcome, line, sizeof line);
        fprintf(stderr, "bench_published: %s\n", line);
        return -1;
    }
    if (sums) {
        sums->items += stats.items, sums->tokens += stats.tokens;
        sums->decode_seconds += stats.decode_seconds, sums->compute_seconds += stats.compute_seconds;
        sums->flops += stats.flops;
    }
    if (embeddings) {
        *width = view->columns;
        for (size_t i = 0; i < count; ++i) {
            const void *row = NULL;
            if (uform_matrix_row(view, i, &row) != UFORM_OK) return -1;
            memcpy(embeddings + i * view->columns, row, view->columns * sizeof(float));
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Configurations and their measurements.                                                       */

typedef struct config_t {
    char label[64];
    engine_t *engine;   /* an engine configuration, or */
    peer_t *peer;       /* a peer's mode */
    char mode[24];
    double rates[max_rounds], prep[max_rounds], cpu[max_rounds];
    int measured;
    double cosine_min, cosine_mean;
    int token_mismatches;
    uform_encode_stats_t sums; /* the engine's stats over every timed call */
} config_t;

/* One measurement of `config` on batch `batch`: items per second into rates[round], the prep share
 * and CPU seconds per item beside it. 0 on success. */
static int measure(config_t *config, int image, const inputs_t *inputs, size_t batch, double seconds, int round) {
    if (config->engine) {
        size_t chunks = (inputs->count + batch - 1) / batch;
        if (config->measured == 0 && round == 0)
            for (size_t c = 0; c < chunks && c < 2; ++c) /* warm-up: arena growth, first touch of the weights */
                if (engine_call(config->engine, image, inputs, c * batch, batch < inputs->count ? batch : inputs->count,
                                NULL, NULL, NULL) != 0)
                    return -1;
        uform_encode_stats_t sums;
        memset(&sums, 0, sizeof sums);
        double start = bench_seconds(), cpu_start = bench_cpu_seconds(), elapsed = 0;
        size_t calls = 0, items = 0;
        while (calls == 0 || elapsed < seconds) {
            size_t first = (calls % chunks) * batch, count = first + batch <= inputs->count ? batch : inputs->count - first;
            if (engine_call(config->engine, image, inputs, first, count, &sums, NULL, NULL) != 0) return -1;
            calls += 1, items += count;
            elapsed = bench_seconds() - start;
        }
        config->rates[round] = (double)items / elapsed;
        config->prep[round] = sums.decode_seconds / elapsed;
        config->cpu[round] = (bench_cpu_seconds() - cpu_start) / (double)items;
        config->sums.items += sums.items, config->sums.tokens += sums.tokens;
        config->sums.decode_seconds += sums.decode_seconds, config->sums.compute_seconds += sums.compute_seconds;
        config->sums.flops += sums.flops;
    } else {
        char request[128];
        static char answer[answer_capacity];
        snprintf(request, sizeof request, "run %s %zu %.3f", config->mode, batch, seconds);
        double cpu_start = process_cpu_seconds(config->peer->pid);
        if (peer_ask(config->peer, request, answer, sizeof answer) != 0) return -1;
        double rate = json_number(answer, "items_per_second"), elapsed = json_number(answer, "seconds");
        config->rates[round] = rate;
        config->prep[round] = json_number(answer, "prep_seconds") / elapsed;
        config->cpu[round] = (process_cpu_seconds(config->peer->pid) - cpu_start) / (rate * elapsed);
    }
    config->measured += 1;
    return 0;
}

static double median(const double *values, int count) {
    double sorted[max_rounds];
    int n = 0;
    for (int i = 0; i < count; ++i)
        if (values[i] > 0 || values[i] < 0) sorted[n++] = values[i];
    if (n == 0) return 0;
    for (int i = 1; i < n; ++i)
        for (int j = i; j > 0 && sorted[j - 1] > sorted[j]; --j) {
            double swap = sorted[j];
            sorted[j] = sorted[j - 1], sorted[j - 1] = swap;
        }
    return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

static void cosines(const float *a, const float *b, size_t rows, size_t width, double *worst, double *mean) {
    *worst = 1, *mean = 0;
    for (size_t i = 0; i < rows; ++i) {
        double dot = 0, na = 0, nb = 0;
        for (size_t j = 0; j < width; ++j) {
            dot += (double)a[i * width + j] * b[i * width + j];
            na += (double)a[i * width + j] * a[i * width + j], nb += (double)b[i * width + j] * b[i * width + j];
        }
        double cosine = dot / sqrt(na * nb + 1e-30);
        *mean += cosine / (double)rows;
        if (cosine < *worst) *worst = cosine;
    }
}

/* Token counts per text from a peer's "tokens" answer. */
static size_t parse_counts(const char *answer, size_t *counts, size_t capacity) {
    const char *at = strchr(answer, '[');
    size_t n = 0;
    while (at && *at && *at != ']' && n < capacity) {
        ++at;
        while (*at && !isdigit((unsigned char)*at) && *at != ']') ++at;
        if (!isdigit((unsigned char)*at)) break;
        counts[n++] = (size_t)strtoul(at, (char **)&at, 10);
    }
    return n;
}

/* ------------------------------------------------------------------------------------------ */
/* Load time and memory.                                                                        */

/* Resident anonymous and file-backed memory of this process in MiB (/proc/self/smaps_rollup). */
static void resident(double *anonymous, double *file_backed) {
    FILE *file = fopen("/proc/self/smaps_rollup", "r");
    double rss = 0, anon = 0;
    char line[256];
    while (file && fgets(line, sizeof line, file)) {
        if (strncmp(line, "Rss:", 4) == 0) rss = atof(line + 4) / 1024.0;
        else if (strncmp(line, "Anonymous:", 10) == 0) anon = atof(line + 10) / 1024.0;
    }
    if (file) fclose(file);
    *anonymous = anon, *file_backed = rss - anon;
}

typedef struct load_result_t {
    double seconds, first_call_seconds, anonymous_loaded, file_loaded, anonymous_encoded, file_encoded;
} load_result_t;

/* One load of `folder` in a child process of its own, so that the memory it adds is not hidden by
 * what earlier loads left in the allocator: the wall time of uform_model_load_ram, the anonymous and
 * file-backed resident memory it added, and the same after the first encode (item 0 alone), with
 * that call's wall time (weights packed on first use are packed there). The executor is made
 * before the first reading. Must run while this process has no other threads (fork copies only the
 * caller). 0 on success. */
static int load_once(uform_cpu_class_t cpu_class, uform_compute_t compute, size_t threads, const char *folder, int image,
                     const inputs_t *inputs, load_result_t *result) {
    int channel[2];
    if (pipe(channel) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) return close(channel[0]), close(channel[1]), -1;
    if (pid == 0) {
        close(channel[0]);
        load_result_t child;
        memset(&child, 0, sizeof child);
        uform_ram_options_t options;
        memset(&options, 0, sizeof options);
        options.cpu_class = cpu_class, options.compute = compute;
        uform_outcome_t outcome;
        memset(&outcome, 0, sizeof outcome);
        uform_executor_t executor = NULL;
        uform_model_t model = NULL;
        if (uform_executor_for_ram(&options, threads, 0, &executor, &outcome) != UFORM_OK) _exit(1);
        double anonymous_before, file_before, anonymous, file_backed;
        resident(&anonymous_before, &file_before);
        double start = bench_seconds();
        if (uform_model_load_ram(executor, folder, &options, &model, &outcome) != UFORM_OK) {
            char line[800];
            uform_outcome_format(&outcome, line, sizeof line);
            fprintf(stderr, "bench_published: load %s: %s\n", folder, line);
            _exit(1);
        }
        child.seconds = bench_seconds() - start;
        resident(&anonymous, &file_backed);
        child.anonymous_loaded = anonymous - anonymous_before, child.file_loaded = file_backed - file_before;
        engine_t engine = {executor, NULL, model, cpu_class, compute};
        uform_arena_for_executor(executor, &engine.arena, NULL);
        start = bench_seconds();
        if (engine_call(&engine, image, inputs, 0, 1, NULL, NULL, NULL) != 0) _exit(1);
        child.first_call_seconds = bench_seconds() - start;
        resident(&anonymous, &file_backed);
        child.anonymous_encoded = anonymous - anonymous_before, child.file_encoded = file_backed - file_before;
        _exit(write(channel[1], &child, sizeof child) == (ssize_t)sizeof child ? 0 : 1);
    }
    close(channel[1]);
    ssize_t got = read(channel[0], result, sizeof *result);
    close(channel[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return got == (ssize_t)sizeof *result && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* `loads` loads (after one that warms the page cache), each in a fresh process: the median wall
 * time and the memory figures of the median load. */
static int load_bench(uform_cpu_class_t cpu_class, uform_compute_t compute, size_t threads, const char *folder, int image,
                      const inputs_t *inputs, int loads, load_result_t *result) {
    load_result_t results[max_rounds];
    double times[max_rounds];
    if (loads > max_rounds) loads = max_rounds;
    if (load_once(cpu_class, compute, threads, folder, image, inputs, &results[0]) != 0) return -1;
    for (int i = 0; i < loads; ++i) {
        if (load_once(cpu_class, compute, threads, folder, image, inputs, &results[i]) != 0) return -1;
        times[i] = results[i].seconds;
    }
    double middle = median(times, loads);
    *result = results[0];
    for (int i = 0; i < loads; ++i)
        if (fabs(results[i].seconds - middle) < fabs(result->seconds - middle)) *result = results[i];
    result->seconds = middle;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* One model: its configurations, checks, rounds and table.                                     */

typedef struct options_t {
    const char *data, *json_path, *python, *ort[max_peers];
    int ort_count, rounds, with_torch, with_load, loads;
    int computes[3]; /* which engine computes run: F32, BF16, I8 */
    double seconds;
    size_t threads, batches[4], batch_count;
    uform_cpu_class_t classes[max_classes];
    int class_count;
} options_t;

typedef struct model_case_t {
    const char *name, *folder, *kind; /* kind: image or text */
} model_case_t;

static const char *class_label(uform_cpu_class_t cpu_class) {
    const char *name = uform_cpu_class_name(cpu_class);
    return strncmp(name, "intel_", 6) == 0 ? name + 6 : strncmp(name, "amd_", 4) == 0 ? name + 4 : name;
}

static double best_of(const config_t *configs, int count, const char *prefix, const char *exclude, double *const medians) {
    double best = 0;
    for (int i = 0; i < count; ++i)
        if (strncmp(configs[i].label, prefix, strlen(prefix)) == 0 && (!exclude || !strstr(configs[i].label, exclude)))
            if (medians[i] > best) best = medians[i];
    return best;
}

static void run_model(const options_t *options, const model_case_t *which, uform_executor_t executors[max_classes], FILE *json,
                      int *json_cases) {
    int image = strcmp(which->kind, "image") == 0;
    char folder[4096], onnx[4096], path[4096];
    snprintf(folder, sizeof folder, "%s/folders/%s", options->data, which->folder);
    snprintf(onnx, sizeof onnx, "%s/onnx/%s", options->data, which->folder);
    inputs_t inputs;
    memset(&inputs, 0, sizeof inputs);
    snprintf(path, sizeof path, image ? "%s/images" : "%s/texts.txt", options->data);
    if ((image ? read_images(path, &inputs) : read_texts(path, &inputs)) != 0) {
        fprintf(stderr, "bench_published: cannot read the inputs %s (run bench/published_data.py)\n", path);
        return;
    }
    printf("\n== %s (%s), %zu inputs, %zu threads\n", which->name, folder, inputs.count, options->threads);

    static engine_t engines[max_classes * 3];
    static peer_t peers[max_peers + 1];
    static config_t configs[max_configs];
    int engine_count = 0, peer_count = 0, count = 0;
    memset(configs, 0, sizeof configs);
    for (int c = 0; c < options->class_count; ++c)
        for (int m = 0; m < 3; ++m) {
            if (!options->computes[m]) continue;
            engine_t *engine = &engines[engine_count];
            memset(engine, 0, sizeof *engine);
            uform_ram_options_t ram;
            memset(&ram, 0, sizeof ram);
            ram.cpu_class = options->classes[c], ram.compute = (uform_compute_t)m;
            uform_outcome_t outcome;
            memset(&outcome, 0, sizeof outcome);
            engine->executor = executors[c], engine->cpu_class = options->classes[c], engine->compute = (uform_compute_t)m;
            if (uform_model_load_ram(executors[c], folder, &ram, &engine->model, &outcome) != UFORM_OK ||
                uform_arena_for_executor(executors[c], &engine->arena, &outcome) != UFORM_OK) {
                fprintf(stderr, "bench_published: %s: %s\n", folder, outcome.message);
                continue;
            }
            config_t *config = &configs[count++];
            snprintf(config->label, sizeof config->label, "uform %s %s", class_label(options->classes[c]), compute_names[m]);
            config->engine = &engines[engine_count++];
        }
    static char command[32768]; /* four paths of up to 4096 bytes and the rest */
    if (options->with_torch) {
        snprintf(command, sizeof command,
                 "export OMP_WAIT_POLICY=PASSIVE; exec %s %s/published_torch.py %s '%s' '%s' --threads %zu 2>>'%s/peers.log'",
                 options->python, UFORM_BENCH_SOURCE_DIR, which->kind, folder, path, options->threads, options->data);
        if (peer_start(&peers[peer_count], "torch", command) == 0) ++peer_count;
        else peer_stop(&peers[peer_count]);
    }
    for (int o = 0; o < options->ort_count; ++o) {
        char name[32];
        snprintf(name, sizeof name, "ort%d", o);
        snprintf(command, sizeof command,
                 "exec node %s/published_ort.mjs %s '%s' '%s' '%s' --modules '%s' --threads %zu 2>>'%s/peers.log'",
                 UFORM_BENCH_SOURCE_DIR, which->kind, folder, path, onnx, options->ort[o], options->threads, options->data);
        if (peer_start(&peers[peer_count], name, command) != 0) {
            peer_stop(&peers[peer_count]);
            continue;
        }
        /* The peer's label names its ONNX Runtime version: read it from the modules' package.json. */
        char package[4096], version[32] = "?";
        snprintf(package, sizeof package, "%s/node_modules/onnxruntime-node/package.json", options->ort[o]);
        FILE *file = fopen(package, "r");
        char line[512];
        while (file && fgets(line, sizeof line, file))
            if (sscanf(line, " \"version\": \"%31[^\"]\"", version) == 1) break;
        if (file) fclose(file);
        snprintf(peers[peer_count].name, sizeof peers[0].name, "ort%s", version);
        ++peer_count;
    }
    for (int p = 0; p < peer_count; ++p)
        for (int m = 0; m < peers[p].mode_count && count < max_configs; ++m) {
            config_t *config = &configs[count++];
            config->peer = &peers[p];
            snprintf(config->mode, sizeof config->mode, "%s", peers[p].modes[m]);
            snprintf(config->label, sizeof config->label, "%.31s %.23s", peers[p].name, peers[p].modes[m]);
        }

    /* Checks: embeddings against the first engine configuration's (F32 under the first class), and
     * token counts against the engine's. */
    size_t width = 0, engine_tokens[max_items] = {0};
    float *reference = malloc(inputs.count * 4096 * sizeof(float)), *other = malloc(inputs.count * 4096 * sizeof(float));
    int have_reference = count > 0 && configs[0].engine &&
                         engine_call(configs[0].engine, image, &inputs, 0, inputs.count, NULL, reference, &width) == 0;
    for (size_t i = 0; !image && have_reference && i < inputs.count; ++i) {
        uform_encode_stats_t stats;
        memset(&stats, 0, sizeof stats);
        if (engine_call(configs[0].engine, 0, &inputs, i, 1, &stats, NULL, NULL) == 0) engine_tokens[i] = stats.tokens;
    }
    static char answer[answer_capacity];
    for (int p = 0; !image && p < peer_count; ++p) {
        size_t counts[max_items] = {0}, n = 0;
        int mismatches = -1;
        if (peer_ask(&peers[p], "tokens", answer, sizeof answer) == 0) {
            n = parse_counts(answer, counts, max_items);
            mismatches = n == inputs.count ? 0 : (int)inputs.count;
            for (size_t i = 0; i < n && i < inputs.count; ++i) mismatches += counts[i] != engine_tokens[i];
        }
        for (int i = 0; i < count; ++i)
            if (configs[i].peer == &peers[p]) configs[i].token_mismatches = mismatches;
    }
    size_t total_tokens = 0;
    for (size_t i = 0; i < inputs.count; ++i) total_tokens += engine_tokens[i];
    if (!image) printf("  tokens per text (engine): %.1f mean over %zu texts\n", (double)total_tokens / (double)inputs.count, inputs.count);
    for (int i = 0; have_reference && i < count; ++i) {
        configs[i].cosine_min = NAN, configs[i].cosine_mean = NAN;
        size_t columns = 0;
        if (configs[i].engine) {
            if (engine_call(configs[i].engine, image, &inputs, 0, inputs.count, NULL, other, &columns) != 0) continue;
        } else {
            char request[4200], file_path[4096];
            snprintf(file_path, sizeof file_path, "%s/embeddings.bin", options->data);
            snprintf(request, sizeof request, "embed %s %s", configs[i].mode, file_path);
            if (peer_ask(configs[i].peer, request, answer, sizeof answer) != 0) continue;
            columns = (size_t)json_number(answer, "columns");
            FILE *file = fopen(file_path, "rb");
            size_t got = file && columns == width ? fread(other, sizeof(float), inputs.count * columns, file) : 0;
            if (file) fclose(file);
            if (got != inputs.count * columns) continue;
        }
        if (columns == width) cosines(reference, other, inputs.count, width, &configs[i].cosine_min, &configs[i].cosine_mean);
    }
    free(reference), free(other);

    for (size_t b = 0; b < options->batch_count; ++b) {
        size_t batch = options->batches[b];
        for (int i = 0; i < count; ++i) {
            memset(configs[i].rates, 0, sizeof configs[i].rates), memset(configs[i].prep, 0, sizeof configs[i].prep);
            memset(configs[i].cpu, 0, sizeof configs[i].cpu), memset(&configs[i].sums, 0, sizeof configs[i].sums);
            configs[i].measured = 0;
        }
        double loads[max_rounds];
        for (int round = 0; round < options->rounds; ++round) {
            getloadavg(&loads[round], 1);
            printf("  batch %zu round %d (load average %.2f):", batch, round + 1, loads[round]);
            for (int i = 0; i < count; ++i) {
                if (round > 0 && configs[i].measured == 0) continue; /* failed in the first round */
                if (measure(&configs[i], image, &inputs, batch, options->seconds, round) == 0) printf(" %.1f", configs[i].rates[round]);
                else printf(" -");
                fflush(stdout);
            }
            printf("\n");
        }
        double medians[max_configs];
        printf("\n  %-22s %5s | %9s %9s %9s | %5s %8s | %8s %8s | %s\n", which->name, "batch", "items/s", "min", "max", "prep",
               "cpu/item", "cos min", "cos mean", "notes");
        for (int i = 0; i < count; ++i) {
            config_t *config = &configs[i];
            medians[i] = median(config->rates, options->rounds);
            double low = 0, high = 0;
            for (int r = 0; r < options->rounds; ++r) {
                if (config->rates[r] > high) high = config->rates[r];
                if (config->rates[r] > 0 && (low == 0 || config->rates[r] < low)) low = config->rates[r];
            }
            char notes[160] = "";
            if (config->engine && config->sums.compute_seconds > 0)
                snprintf(notes, sizeof notes, "compute %.0f GFLOP/s, decode %.0f%% of engine time",
                         config->sums.flops / config->sums.compute_seconds * 1e-9,
                         100 * config->sums.decode_seconds / (config->sums.decode_seconds + config->sums.compute_seconds));
            if (config->peer && !image)
                snprintf(notes, sizeof notes, "token counts differing from the engine's: %d", config->token_mismatches);
            printf("  %-22s %5zu | %9.2f %9.2f %9.2f | %4.0f%% %8.4f | %8.5f %8.5f | %s\n", config->label, batch, medians[i], low,
                   high, 100 * median(config->prep, options->rounds), median(config->cpu, options->rounds), config->cosine_min,
                   config->cosine_mean, notes);
        }
        double torch_best = best_of(configs, count, "torch", NULL, medians);
        double torch_float = best_of(configs, count, "torch", "qdynamic", medians);
        double ort_best = best_of(configs, count, "ort", NULL, medians);
        double ort_f32 = best_of(configs, count, "ort", "int8", medians);
        printf("  peers' best: torch %.2f (float modes %.2f), ONNX Runtime %.2f (F32 %.2f) items/s\n", torch_best, torch_float,
               ort_best, ort_f32);
        if (json)
            fprintf(json, "%s\n  {\"model\": \"%s\", \"folder\": \"%s\", \"batch\": %zu, \"threads\": %zu, \"inputs\": %zu, "
                          "\"load_averages\": [",
                    (*json_cases)++ ? "," : "", which->name, which->folder, batch, options->threads, inputs.count);
        for (int r = 0; json && r < options->rounds; ++r) fprintf(json, "%s%.2f", r ? ", " : "", loads[r]);
        if (json) fprintf(json, "], \"configs\": [");
        for (int i = 0; json && i < count; ++i) {
            fprintf(json, "%s\n    {\"label\": \"%s\", \"median_items_per_second\": %.3f, \"rounds\": [", i ? "," : "", configs[i].label,
                    medians[i]);
            for (int r = 0; r < options->rounds; ++r) fprintf(json, "%s%.3f", r ? ", " : "", configs[i].rates[r]);
            fprintf(json, "], \"prep_share\": %.4f, \"cpu_seconds_per_item\": %.5f, \"cosine_to_engine_f32\": [%.6f, %.6f]",
                    median(configs[i].prep, options->rounds), median(configs[i].cpu, options->rounds),
                    isnan(configs[i].cosine_min) ? -1.0 : configs[i].cosine_min,
                    isnan(configs[i].cosine_mean) ? -1.0 : configs[i].cosine_mean);
            if (configs[i].engine)
                fprintf(json, ", \"decode_seconds\": %.4f, \"compute_seconds\": %.4f, \"flops\": %.4g", configs[i].sums.decode_seconds,
                        configs[i].sums.compute_seconds, configs[i].sums.flops);
            if (configs[i].peer && !image) fprintf(json, ", \"token_count_mismatches\": %d", configs[i].token_mismatches);
            fprintf(json, "}");
        }
        if (json) fprintf(json, "],\n   \"ratios\": [");
        for (int c = 0; c < options->class_count; ++c) {
            char prefix[64];
            snprintf(prefix, sizeof prefix, "uform %s ", class_label(options->classes[c]));
            double ours = best_of(configs, count, prefix, NULL, medians);
            char f32_label[64];
            snprintf(f32_label, sizeof f32_label, "uform %s f32", class_label(options->classes[c]));
            double ours_f32 = best_of(configs, count, f32_label, NULL, medians);
            double vs_torch = torch_best > 0 ? ours / torch_best : 0, vs_ort = ort_best > 0 ? ours / ort_best : 0;
            double f32_vs_ort = ort_f32 > 0 ? ours_f32 / ort_f32 : 0;
            printf("  %-8s best %.2f items/s: %.2fx torch's best (target 1.5: %s), %.2fx ORT's best (target 2: %s); "
                   "F32 %.2f: %.2fx ORT F32 (target 1: %s)\n",
                   class_label(options->classes[c]), ours, vs_torch, vs_torch >= 1.5 ? "met" : "MISSED", vs_ort,
                   vs_ort >= 2 ? "met" : "MISSED", ours_f32, f32_vs_ort, f32_vs_ort >= 1 ? "met" : "MISSED");
            if (json)
                fprintf(json, "%s\n    {\"class\": \"%s\", \"uform_best\": %.3f, \"uform_f32\": %.3f, \"vs_torch_best\": %.3f, "
                              "\"vs_ort_best\": %.3f, \"f32_vs_ort_f32\": %.3f}",
                        c ? "," : "", uform_cpu_class_name(options->classes[c]), ours, ours_f32, vs_torch, vs_ort, f32_vs_ort);
        }
        if (json) fprintf(json, "],\n   \"torch_best\": %.3f, \"torch_best_float\": %.3f, \"ort_best\": %.3f, \"ort_f32\": %.3f}",
                          torch_best, torch_float, ort_best, ort_f32);
        fflush(stdout);
    }
    for (int p = 0; p < peer_count; ++p) peer_stop(&peers[p]);
    for (int e = 0; e < engine_count; ++e) uform_model_free(engines[e].model), uform_arena_free(engines[e].arena);
    free(inputs.data);
}

/* ------------------------------------------------------------------------------------------ */

static int parse_classes(const char *list, options_t *options) {
    options->class_count = 0;
    char copy[256];
    snprintf(copy, sizeof copy, "%s", list);
    for (char *name = strtok(copy, ","); name && options->class_count < max_classes; name = strtok(NULL, ",")) {
        int found = 0;
        for (int c = 1; c <= UFORM_CPU_CLASS_MONOVERSIONED; ++c)
            if (strcmp(uform_cpu_class_name((uform_cpu_class_t)c), name) == 0 ||
                strcmp(class_label((uform_cpu_class_t)c), name) == 0) {
                if (!uform_cpu_class_supported((uform_cpu_class_t)c)) {
                    fprintf(stderr, "bench_published: this machine cannot run class %s; left out\n", name);
                } else options->classes[options->class_count++] = (uform_cpu_class_t)c;
                found = 1;
                break;
            }
        if (!found) return fprintf(stderr, "bench_published: unknown CPU class %s\n", name), -1;
    }
    return options->class_count ? 0 : -1;
}

int main(int argc, char **argv) {
    options_t options;
    memset(&options, 0, sizeof options);
    options.data = "bench-data", options.json_path = "bench/results/published.json", options.python = "/usr/bin/python3";
    options.rounds = 3, options.with_torch = 1, options.with_load = 1, options.loads = 7, options.seconds = 2.0;
    options.computes[0] = options.computes[1] = options.computes[2] = 1;
    options.threads = 2, options.batches[0] = 1, options.batches[1] = 32, options.batch_count = 2;
    const char *only = NULL, *classes = NULL;
    int load_only = 0;
    for (int i = 1; i < argc; ++i) {
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--data") == 0 && next) options.data = argv[++i];
        else if (strcmp(argv[i], "--json") == 0 && next) options.json_path = argv[++i];
        else if (strcmp(argv[i], "--python") == 0 && next) options.python = argv[++i];
        else if (strcmp(argv[i], "--ort") == 0 && next && options.ort_count < max_peers) options.ort[options.ort_count++] = argv[++i];
        else if (strcmp(argv[i], "--seconds") == 0 && next) options.seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--rounds") == 0 && next) options.rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--loads") == 0 && next) options.loads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--threads") == 0 && next) options.threads = (size_t)atoi(argv[++i]);
        else if (strcmp(argv[i], "--only") == 0 && next) only = argv[++i];
        else if (strcmp(argv[i], "--classes") == 0 && next) classes = argv[++i];
        else if (strcmp(argv[i], "--computes") == 0 && next) {
            const char *list = argv[++i];
            for (int m = 0; m < 3; ++m) options.computes[m] = strstr(list, compute_names[m]) != NULL;
        }
        else if (strcmp(argv[i], "--no-torch") == 0) options.with_torch = 0;
        else if (strcmp(argv[i], "--no-load") == 0) options.with_load = 0;
        else if (strcmp(argv[i], "--load-only") == 0) load_only = 1;
        else if (strcmp(argv[i], "--batches") == 0 && next) {
            options.batch_count = 0;
            for (char *end = argv[++i]; *end && options.batch_count < 4;) {
                options.batches[options.batch_count++] = (size_t)strtoul(end, &end, 10);
                if (*end == ',') ++end;
            }
        } else {
            fprintf(stderr, "bench_published: unknown or incomplete argument %s (see the comment at the top of bench_published.c)\n",
                    argv[i]);
            return 2;
        }
    }
    if (options.rounds < 1) options.rounds = 1;
    if (options.rounds > max_rounds) options.rounds = max_rounds;
    signal(SIGPIPE, SIG_IGN);            /* a peer that dies answers an error, not a signal */
    setvbuf(stdout, NULL, _IOLBF, 0);    /* lines as they come, also into a file or a pipe */
    uform_cpu_class_t detected = uform_cpu_class_detect();
    char default_classes[128];
    snprintf(default_classes, sizeof default_classes, "%s%s", uform_cpu_class_name(detected),
             detected != UFORM_CPU_CLASS_INTEL_HASWELL && uform_cpu_class_supported(UFORM_CPU_CLASS_INTEL_HASWELL) ? ",intel_haswell" : "");
    if (parse_classes(classes ? classes : default_classes, &options) != 0) return 2;
    double load_average[3] = {0};
    getloadavg(load_average, 3);
    printf("bench_published: detected class %s; classes run:", uform_cpu_class_name(detected));
    for (int c = 0; c < options.class_count; ++c) printf(" %s", uform_cpu_class_name(options.classes[c]));
    printf("; %zu threads; %d rounds of %.1f s; load average %.2f %.2f %.2f at the start\n", options.threads, options.rounds,
           options.seconds, load_average[0], load_average[1], load_average[2]);

    FILE *json = fopen(options.json_path, "w");
    if (json)
        fprintf(json, "{\"detected_class\": \"%s\", \"threads\": %zu, \"rounds\": %d, \"seconds\": %.2f, "
                      "\"load_average_start\": [%.2f, %.2f, %.2f],\n \"loads\": [",
                uform_cpu_class_name(detected), options.threads, options.rounds, options.seconds, load_average[0], load_average[1],
                load_average[2]);
    static const model_case_t cases[] = {{"ViT-B/32 images", "clip-vit-b32", "image"},
                                         {"MiniLM-L6 texts", "minilm-l6", "text"},
                                         {"BERT-base texts", "bert-base", "text"}};
    static const char *const only_names[] = {"image", "minilm", "bert"};
    if (options.with_load) {
        printf("\nload from a warm page cache (class %s, median of %d loads; memory added by the last load, MiB)\n",
               uform_cpu_class_name(options.classes[0]), options.loads);
        printf("  %-16s %5s | %9s %14s | %10s %10s | %18s %18s\n", "folder", "comp", "load ms", "first call ms", "anon load",
               "file load", "anon after encode", "file after encode");
        int written = 0;
        for (size_t k = 0; k < sizeof cases / sizeof *cases; ++k) {
            if (only && strcmp(only, only_names[k]) != 0) continue;
            inputs_t inputs;
            memset(&inputs, 0, sizeof inputs);
            char folder[4096], path[4096];
            int image = strcmp(cases[k].kind, "image") == 0;
            snprintf(path, sizeof path, image ? "%s/images" : "%s/texts.txt", options.data);
            snprintf(folder, sizeof folder, "%s/folders/%s", options.data, cases[k].folder);
            if ((image ? read_images(path, &inputs) : read_texts(path, &inputs)) != 0) continue;
            for (int m = 0; m < 3; ++m) {
                if (!options.computes[m]) continue;
                load_result_t result;
                memset(&result, 0, sizeof result);
                if (load_bench(options.classes[0], (uform_compute_t)m, options.threads, folder, image, &inputs, options.loads, &result) != 0)
                    continue;
                printf("  %-16s %5s | %9.1f %14.1f | %10.1f %10.1f | %18.1f %18.1f\n", cases[k].folder, compute_names[m],
                       result.seconds * 1e3, result.first_call_seconds * 1e3, result.anonymous_loaded, result.file_loaded,
                       result.anonymous_encoded, result.file_encoded);
                if (json)
                    fprintf(json, "%s\n  {\"folder\": \"%s\", \"compute\": \"%s\", \"load_ms\": %.2f, \"first_call_ms\": %.2f, \"anonymous_mib\": %.1f, "
                                  "\"file_mib\": %.1f, \"anonymous_after_encode_mib\": %.1f, \"file_after_encode_mib\": %.1f}",
                            written++ ? "," : "", cases[k].folder, compute_names[m], result.seconds * 1e3,
                            result.first_call_seconds * 1e3, result.anonymous_loaded,
                            result.file_loaded, result.anonymous_encoded, result.file_encoded);
            }
            free(inputs.data);
        }
    }
    /* The executors come after the loads: those fork, and a fork copies only the calling thread. */
    uform_executor_t executors[max_classes] = {NULL};
    for (int c = 0; c < options.class_count; ++c) {
        uform_ram_options_t ram;
        memset(&ram, 0, sizeof ram);
        ram.cpu_class = options.classes[c];
        uform_outcome_t outcome;
        memset(&outcome, 0, sizeof outcome);
        if (uform_executor_for_ram(&ram, options.threads, 0, &executors[c], &outcome) != UFORM_OK)
            return fprintf(stderr, "bench_published: executor: %s\n", outcome.message), 1;
    }
    if (json) fprintf(json, "],\n \"cases\": [");
    int json_cases = 0;
    for (size_t k = 0; k < sizeof cases / sizeof *cases; ++k)
        if (!load_only && (!only || strcmp(only, only_names[k]) == 0)) run_model(&options, &cases[k], executors, json, &json_cases);
    if (json) {
        getloadavg(load_average, 3);
        fprintf(json, "],\n \"load_average_end\": [%.2f, %.2f, %.2f]}\n", load_average[0], load_average[1], load_average[2]);
        fclose(json);
    }
    for (int c = 0; c < options.class_count; ++c) uform_executor_free(executors[c]);
    return 0;
}
