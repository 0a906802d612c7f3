/*
 * uform index CKPT (DIR | FILE | --manifest FILE.jsonl)... --out INDEX [options]
 *
 * Embeds every item of a corpus into one index file (uform.h, "Indexes"). The inputs are listed
 * first (folders walked recursively in byte order of names, hidden entries skipped unless
 * --hidden, symbolic links to folders not followed; manifests read line by line; duplicates
 * dropped), then three stages overlap: the reader thread reads and probes files into batches of one
 * modality (uform_index_reader.c), the decode stage prepares media batches (uform_media_prepare),
 * and the compute stage encodes them (uform_prepared_encode, uform_text_encode) and adds the
 * embeddings to a builder. By default decoding runs on the compute executor's threads right before
 * each batch's encode; --decode-threads N gives it its own executor, so batch n+1 decodes while
 * batch n computes (bench/README.md has the measurements behind the default).
 *
 * Bad inputs never stop the run: each goes to INDEX.errors.jsonl with its status and message.
 * Every --checkpoint N inputs, all partial batches are encoded and the index is written atomically
 * with the inputs consumed and the error lines so far in its metadata; --resume reopens it, keeps
 * the first recorded error lines, skips every input already indexed or listed, and cuts the same
 * batches an uninterrupted run cuts, so the final file is the same bytes.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "uform_index.h"
#include "uform_tool.h"

static volatile sig_atomic_t interrupted = 0;
static void on_interrupt(int signal_number) { (void)signal_number, interrupted = 1; }

static const char usage_text[] =
    "usage: uform index CKPT (DIR | FILE | --manifest FILE.jsonl)... --out INDEX [options]\n"
    "\n"
    "Embeds every item found into INDEX (one safetensors file) and lists bad files in INDEX.errors.jsonl.\n"
    "Folders are walked recursively and files recognised by content. A manifest holds one JSON object\n"
    "per line: {\"path\": \"a.jpg\"} (relative to the manifest's folder; \"modality\" optional) or\n"
    "{\"text\": \"a caption\", \"id\": \"name\"}.\n"
    "\n"
    "options:\n"
    "  --out INDEX            the index file to write (required; written atomically)\n"
    "  --modalities LIST      which of text,image,video,audio to index (default: all the checkpoint has);\n"
    "                         items of the others are counted as skipped\n"
    "  --batch N              items per batch (default 32)\n"
    "  --threads N            compute threads (default 0: the library's choice)\n"
    "  --decode-threads N     threads of a separate decode stage that overlaps compute (default 0:\n"
    "                         decode on the compute threads before each batch)\n"
    "  --bf16                 BF16 compute (faster; ~1e-2 relative difference)\n"
    "  --int8                 I8 compute: the trunk's products in int8 (fastest; embeddings within cosine\n"
    "                         ~0.999 of F32's; docs/int8.md). Search the index with the same flag\n"
    "  --dims N               Matryoshka prefix of the embeddings (default: the full width)\n"
    "  --scalar KIND          f32, f16, bf16, i8 or b1 (default f32)\n"
    "  --checkpoint N         write the index every N inputs (default 10000; 0: only at the end)\n"
    "  --resume               continue from INDEX (a checkpoint or a finished index): skip what it holds\n"
    "  --hidden               also walk hidden files and folders\n"
    "  --json                 print the summary as one JSON object on stdout\n"
    "  --progress             without a terminal, print a progress line every ~10%\n"
    "  --quiet                no progress and no summary\n"
    "\n"
    "exit status: 0 every item indexed; 1 the run failed (the reason is printed); 2 usage error;\n"
    "3 finished, but some inputs failed (listed in INDEX.errors.jsonl); 130 interrupted (INDEX keeps\n"
    "the last checkpoint: run the same command with --resume to continue).\n";

static int usage_error(const char *why) {
    fprintf(stderr, "usage: uform index CKPT (DIR | FILE | --manifest FILE.jsonl)... --out INDEX [options]\n"
                    "uform index: %s (see uform index --help)\n", why);
    return 2;
}

typedef struct options_t {
    const char *checkpoint_path, *out;
    unsigned modalities;
    size_t batch, threads, decode_threads, dims, checkpoint;
    uform_scalar_kind_t scalar;
    int resume, hidden, json, progress, quiet, dims_given, scalar_given;
    uform_compute_t compute; /* --bf16, --int8 */
} options_t;

/* ---- inputs ---- */

typedef struct inputs_t {
    index_input_t *items;
    size_t count, capacity;
} inputs_t;

static void add_input(inputs_t *inputs, const char *path, const char *text, int modality, const char *error) {
    if (inputs->count == inputs->capacity) {
        size_t capacity = inputs->capacity ? inputs->capacity * 2 : 256;
        index_input_t *grown = realloc(inputs->items, capacity * sizeof *grown);
        if (!grown) return;
        inputs->items = grown, inputs->capacity = capacity;
    }
    index_input_t *input = &inputs->items[inputs->count++];
    input->path = strdup(path);
    input->text = text ? strdup(text) : NULL;
    input->modality = modality;
    input->error = error ? strdup(error) : NULL;
}

static int compare_names(const void *left, const void *right) {
    return strcmp(*(char *const *)left, *(char *const *)right);
}

static char *join(const char *folder, const char *name) {
    size_t length = strlen(folder);
    char *path = malloc(length + strlen(name) + 2);
    if (path) sprintf(path, "%s%s%s", folder, length && folder[length - 1] == '/' ? "" : "/", name);
    return path;
}

/* Every regular file under `folder`, names sorted byte-wise at each level. */
static void walk(inputs_t *inputs, const char *folder, int hidden) {
    DIR *directory = opendir(folder);
    if (!directory) {
        char message[512];
        snprintf(message, sizeof message, "cannot read the folder '%s': %s", folder, strerror(errno));
        add_input(inputs, folder, NULL, -1, message);
        return;
    }
    char **names = NULL;
    size_t count = 0, capacity = 0;
    for (struct dirent *entry; (entry = readdir(directory));) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
        if (!hidden && entry->d_name[0] == '.') continue;
        if (count == capacity) {
            capacity = capacity ? capacity * 2 : 64;
            char **grown = realloc(names, capacity * sizeof *grown);
            if (!grown) break;
            names = grown;
        }
        names[count++] = strdup(entry->d_name);
    }
    closedir(directory);
    qsort(names, count, sizeof *names, compare_names);
    for (size_t i = 0; i < count; ++i) {
        char *path = join(folder, names[i]);
        struct stat link, target;
        if (path && lstat(path, &link) == 0) {
            if (S_ISDIR(link.st_mode)) walk(inputs, path, hidden);
            else if (!S_ISLNK(link.st_mode) || (stat(path, &target) == 0 && !S_ISDIR(target.st_mode)))
                add_input(inputs, path, NULL, -1, NULL); /* a link to a folder is not followed (no cycles) */
        }
        free(path);
        free(names[i]);
    }
    free(names);
}

/* A manifest: one JSON object per line; paths relative to the manifest's folder. */
static int read_manifest(inputs_t *inputs, const char *manifest) {
    FILE *file = fopen(manifest, "r");
    if (!file) {
        fprintf(stderr, "uform: cannot open the manifest '%s': %s\n", manifest, strerror(errno));
        return 1;
    }
    const char *slash = strrchr(manifest, '/');
    char *folder = slash ? strndup(manifest, (size_t)(slash - manifest + 1)) : strdup("");
    char *line = NULL;
    size_t capacity = 0, number = 0;
    ssize_t length;
    while ((length = getline(&line, &capacity, file)) >= 0) {
        number += 1;
        while (length && (line[length - 1] == '\n' || line[length - 1] == '\r')) line[--length] = 0;
        if (length == 0) continue;
        char label[4096];
        snprintf(label, sizeof label, "%s:%zu", manifest, number);
        cJSON *object = cJSON_ParseWithLength(line, (size_t)length);
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(object, "path");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(object, "text");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(object, "id");
        const cJSON *modality = cJSON_GetObjectItemCaseSensitive(object, "modality");
        unsigned bits = 0;
        int forced = -1;
        if (cJSON_IsString(modality) && uform_tool_parse_modalities(modality->valuestring, &bits) == 0 && (bits & (bits - 1)) == 0)
            forced = __builtin_ctz(bits);
        if (!cJSON_IsObject(object)) {
            add_input(inputs, label, NULL, -1, "manifest line is not a JSON object");
        } else if (cJSON_IsString(text)) {
            add_input(inputs, cJSON_IsString(id) ? id->valuestring : label, text->valuestring, UFORM_MODALITY_TEXT, NULL);
        } else if (cJSON_IsString(path) && path->valuestring[0]) {
            if (modality && forced < 0) {
                add_input(inputs, label, NULL, -1, "\"modality\" should be one of text, image, video, audio");
            } else {
                char *resolved = path->valuestring[0] == '/' ? strdup(path->valuestring) : join(folder[0] ? folder : ".", path->valuestring);
                /* "./x" reads as "x": a manifest in the current folder stores its paths as written. */
                const char *stored = resolved && strncmp(resolved, "./", 2) == 0 && !folder[0] ? resolved + 2 : resolved;
                add_input(inputs, stored, NULL, forced, NULL);
                free(resolved);
            }
        } else {
            add_input(inputs, label, NULL, -1, "manifest line has neither a \"path\" nor a \"text\" string");
        }
        cJSON_Delete(object);
    }
    free(line), free(folder);
    fclose(file);
    return 0;
}

/* ---- a set of byte strings (resume and de-duplication) ---- */

typedef struct string_set_t {
    const char **keys;
    size_t *lengths, capacity, count;
} string_set_t;

static uint64_t hash_bytes(const char *bytes, size_t length) {
    uint64_t hash = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < length; ++i) hash = (hash ^ (unsigned char)bytes[i]) * 1099511628211ull;
    return hash;
}

/* Answers 1 when the key was present, 0 when it was added (borrowed: it must outlive the set). */
static int set_insert(string_set_t *set, const char *key, size_t length) {
    if (2 * (set->count + 1) > set->capacity) {
        string_set_t grown = {0};
        grown.capacity = set->capacity ? set->capacity * 2 : 1024;
        grown.keys = calloc(grown.capacity, sizeof *grown.keys);
        grown.lengths = calloc(grown.capacity, sizeof *grown.lengths);
        if (!grown.keys || !grown.lengths) return 0;
        for (size_t i = 0; i < set->capacity; ++i)
            if (set->keys[i]) set_insert(&grown, set->keys[i], set->lengths[i]);
        free(set->keys), free(set->lengths);
        *set = grown;
    }
    size_t at = (size_t)hash_bytes(key, length) & (set->capacity - 1);
    while (set->keys[at]) {
        if (set->lengths[at] == length && memcmp(set->keys[at], key, length) == 0) return 1;
        at = (at + 1) & (set->capacity - 1);
    }
    set->keys[at] = key, set->lengths[at] = length, set->count += 1;
    return 0;
}

static int set_contains(const string_set_t *set, const char *key, size_t length) {
    if (!set->capacity) return 0;
    size_t at = (size_t)hash_bytes(key, length) & (set->capacity - 1);
    while (set->keys[at]) {
        if (set->lengths[at] == length && memcmp(set->keys[at], key, length) == 0) return 1;
        at = (at + 1) & (set->capacity - 1);
    }
    return 0;
}

static void set_free(string_set_t *set) { free(set->keys), free(set->lengths), memset(set, 0, sizeof *set); }

/* ---- the run ---- */

typedef struct run_t {
    options_t options;
    uform_model_t model;
    uform_executor_t executor, decoder;
    uform_arena_t prepared[2], encoded;
    uform_index_builder_t builder;
    char *errors_path;
    FILE *errors;
    size_t error_lines;          /* lines in the errors file (resumed ones included) */
    size_t failed, indexed;      /* this run */
    size_t total, done, resumed_done;
    double start, last_report;
    int interactive, bar_drawn;
} run_t;

static uform_continuation_t check_interrupt(size_t completed, size_t total, void *state) {
    (void)completed, (void)total, (void)state;
    return interrupted ? UFORM_CANCEL : UFORM_CONTINUE;
}

static void draw_progress(run_t *run, int final) {
    if (run->options.quiet) return;
    double now = uform_tool_now(), elapsed = now - run->start;
    double rate = elapsed > 0 ? (double)(run->done - run->resumed_done) / elapsed : 0;
    char done[32], total[32], eta[32];
    if (run->interactive) {
        double fraction = run->total ? (double)run->done / (double)run->total : 1;
        int filled = (int)(fraction * 24);
        fprintf(stderr, "\r[%.*s%*s] %s/%s  %.1f items/s  ETA %s  %zu failed\033[K", filled, "########################",
                24 - filled, "", uform_tool_thousands(run->done, done, sizeof done),
                uform_tool_thousands(run->total, total, sizeof total), rate,
                uform_tool_duration(rate > 0 ? (double)(run->total - run->done) / rate : 0, eta, sizeof eta), run->failed);
        run->bar_drawn = 1;
    } else if (run->options.progress && !final && run->total &&
               (size_t)(10.0 * run->done / run->total) > (size_t)(10.0 * run->last_report / run->total)) {
        fprintf(stderr, "uform: %s/%s items, %.1f items/s\n", uform_tool_thousands(run->done, done, sizeof done),
                uform_tool_thousands(run->total, total, sizeof total), rate);
        run->last_report = (double)run->done;
    }
    fflush(stderr);
}

static void end_progress_line(run_t *run) {
    if (run->bar_drawn) fputc('\n', stderr), run->bar_drawn = 0;
}

static void write_error(run_t *run, const char *path, size_t path_length, uform_status_t status, const char *message) {
    fputs("{\"path\": ", run->errors);
    uform_tool_json_string(run->errors, path, path_length);
    fprintf(run->errors, ", \"status\": \"%s\", \"message\": ", uform_status_name(status));
    uform_tool_json_string(run->errors, message, strlen(message));
    fputs("}\n", run->errors);
    run->error_lines += 1, run->failed += 1;
}

/* Writes the index (and makes the errors it mentions durable first). Answers 0 or prints and 1. */
static int write_index(run_t *run, size_t consumed) {
    if (fflush(run->errors) != 0 || fsync(fileno(run->errors)) != 0) {
        end_progress_line(run);
        fprintf(stderr, "uform: cannot write '%s': %s\n", run->errors_path, strerror(errno));
        return 1;
    }
    char consumed_text[24], errors_text[24];
    snprintf(consumed_text, sizeof consumed_text, "%zu", consumed);
    snprintf(errors_text, sizeof errors_text, "%zu", run->error_lines);
    const char *metadata[] = {"uform.cli.consumed", consumed_text, "uform.cli.errors", errors_text};
    uform_outcome_t outcome = {0};
    if (uform_index_builder_write(run->builder, run->options.out, metadata, 2, &outcome) != UFORM_OK) {
        end_progress_line(run);
        return uform_tool_fail(&outcome, NULL);
    }
    return 0;
}

/* Starts decoding a media batch: deferred on the decode executor, or blocking on the compute one. */
static uform_status_t prepare_start(run_t *run, index_unit_t *unit, int slot) {
    if (unit->kind != UNIT_BATCH || unit->modality == UFORM_MODALITY_TEXT || unit->preparing) return UFORM_OK;
    uform_media_prepare_t *prepare = &unit->prepare;
    memset(prepare, 0, sizeof *prepare);
    prepare->model = run->model;
    prepare->executor = run->decoder ? run->decoder : run->executor;
    prepare->completion = run->decoder ? UFORM_COMPLETION_DEFERRED : UFORM_COMPLETION_BLOCKING;
    prepare->modality = unit->modality;
    prepare->files = (uform_tape_t){unit->data, unit->offsets, unit->count};
    prepare->arena = run->prepared[slot];
    prepare->progress = (uform_progress_t){check_interrupt, NULL, 0};
    unit->preparing = 1;
    uform_status_t status = uform_media_prepare(prepare);
    return status == UFORM_DEFERRED ? UFORM_OK : status;
}

/* Encodes one batch and adds its good items; answers 0, 1 (failed, printed) or 130 (interrupted). */
static int encode_batch(run_t *run, index_unit_t *unit) {
    const options_t *options = &run->options;
    uform_encode_config_t config = {options->scalar, {check_interrupt, NULL, 0}, NULL, options->dims};
    const uform_matrix_t *embeddings;
    uform_outcome_t *outcome;
    uform_status_t status;
    uform_text_encode_t text = {0};
    uform_prepared_encode_t media = {0};
    const uform_prepared_t *prepared = NULL;
    if (unit->modality == UFORM_MODALITY_TEXT) {
        text.model = run->model, text.executor = run->executor, text.arena = run->encoded, text.config = config;
        text.texts = (uform_tape_t){unit->data, unit->offsets, unit->count};
        status = uform_text_encode(&text), outcome = &text.outcome, embeddings = &text.encoded.embeddings;
    } else {
        status = unit->preparing ? uform_outcome_wait(&unit->prepare.outcome) : prepare_start(run, unit, 0);
        if (status != UFORM_OK) return status == UFORM_CANCELLED ? 130 : (end_progress_line(run), uform_tool_fail(&unit->prepare.outcome, NULL));
        prepared = &unit->prepare.prepared;
        for (size_t i = 0; i < unit->count; ++i)
            if (prepared->item_outcomes[i].status != UFORM_OK)
                write_error(run, unit->paths[i], strlen(unit->paths[i]), prepared->item_outcomes[i].status,
                            prepared->item_outcomes[i].message);
        if (prepared->failed == prepared->count) return 0;
        media.model = run->model, media.executor = run->executor, media.prepared = prepared;
        media.arena = run->encoded, media.config = config;
        status = uform_prepared_encode(&media), outcome = &media.outcome, embeddings = &media.encoded.embeddings;
    }
    if (status == UFORM_CANCELLED) return 130;
    if (status != UFORM_OK) {
        end_progress_line(run);
        return uform_tool_fail(outcome, NULL);
    }
    for (size_t i = 0, row = 0; i < unit->count; ++i) {
        if (prepared && prepared->item_outcomes[i].status != UFORM_OK) continue;
        uform_matrix_t one = *embeddings;
        one.data = (unsigned char *)one.data + row++ * one.stride_bytes, one.rows = 1;
        size_t offsets[2] = {0, strlen(unit->paths[i])};
        uform_tape_t path = {unit->paths[i], offsets, 1};
        uform_outcome_t add = {0};
        if (uform_index_builder_add(run->builder, unit->modality, &one, &path, &add) != UFORM_OK) {
            end_progress_line(run);
            return uform_tool_fail(&add, NULL);
        }
        run->indexed += 1;
    }
    return 0;
}

static int process(run_t *run, index_unit_t *unit) {
    for (size_t i = 0; i < unit->error_count; ++i)
        write_error(run, unit->errors[i].path, strlen(unit->errors[i].path), unit->errors[i].status,
                    unit->errors[i].message);
    int status = unit->kind == UNIT_BATCH ? encode_batch(run, unit) : 0;
    if (status == 0 && unit->kind != UNIT_BATCH) status = write_index(run, unit->consumed);
    if (unit->consumed > run->done) run->done = unit->consumed;
    if (status == 0) draw_progress(run, 0);
    return status;
}

/* The three stages: the reader thread, decoding (one batch ahead with a decode executor) and compute. */
static int pipeline(run_t *run, index_reader_t *reader) {
    int status = 0;
    int slot = 0;
    index_unit_t *current = index_reader_next(reader);
    if (current && run->decoder && prepare_start(run, current, slot) != UFORM_OK) status = 1;
    while (current && status == 0) {
        index_unit_t *next = current->kind == UNIT_END ? NULL : index_reader_next(reader);
        if (next && run->decoder) {
            /* Batch n+1 decodes into the other arena while batch n computes. */
            uform_status_t started = prepare_start(run, next, slot ^ 1);
            if (started != UFORM_OK) status = started == UFORM_CANCELLED ? 130 : uform_tool_fail(&next->prepare.outcome, NULL);
            slot ^= 1;
        }
        if (status == 0) status = interrupted ? 130 : process(run, current);
        int ended = current->kind == UNIT_END;
        index_unit_free(current);
        current = next;
        if (ended) break;
        if (!current && status == 0) status = interrupted ? 130 : 1; /* the reader stopped early */
    }
    if (current) {
        if (current->preparing) uform_outcome_wait(&current->prepare.outcome);
        index_unit_free(current);
    }
    return status;
}

/* ---- resume ---- */

/* Keeps the first `lines` lines of the errors file, adding their paths to `skip`; reopens it for appending. */
static int resume_errors(run_t *run, size_t lines, string_set_t *skip, char ***kept_paths, size_t *kept_count) {
    FILE *file = fopen(run->errors_path, "r");
    size_t kept = 0;
    long keep_bytes = 0;
    if (file) {
        char *line = NULL;
        size_t capacity = 0;
        ssize_t length;
        while (kept < lines && (length = getline(&line, &capacity, file)) > 0) {
            cJSON *object = cJSON_ParseWithLength(line, (size_t)length);
            const cJSON *path = cJSON_GetObjectItemCaseSensitive(object, "path");
            if (cJSON_IsString(path)) {
                *kept_paths = realloc(*kept_paths, (*kept_count + 1) * sizeof(char *));
                (*kept_paths)[*kept_count] = strdup(path->valuestring);
                set_insert(skip, (*kept_paths)[*kept_count], strlen((*kept_paths)[*kept_count]));
                *kept_count += 1;
            }
            cJSON_Delete(object);
            kept += 1;
            keep_bytes = ftell(file);
        }
        free(line);
        fclose(file);
    }
    if (kept < lines)
        fprintf(stderr, "uform: note: '%s' holds %zu of the %zu error lines the checkpoint recorded\n", run->errors_path,
                kept, lines);
    if (truncate(run->errors_path, keep_bytes) != 0 && errno != ENOENT) {
        fprintf(stderr, "uform: cannot truncate '%s': %s\n", run->errors_path, strerror(errno));
        return 1;
    }
    run->errors = fopen(run->errors_path, "a");
    run->error_lines = kept;
    return run->errors ? 0 : (fprintf(stderr, "uform: cannot open '%s': %s\n", run->errors_path, strerror(errno)), 1);
}

/* Opens INDEX for --resume: the builder continues it; `skip` gets its paths and the listed errors'. */
static int resume(run_t *run, string_set_t *skip, char ***kept_paths, size_t *kept_count) {
    options_t *options = &run->options;
    uform_index_t index = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_index_open(options->out, run->model, &index, &outcome);
    if (status == UFORM_IO && access(options->out, F_OK) != 0) {
        if (!options->quiet) fprintf(stderr, "uform: '%s' does not exist yet: starting from the beginning\n", options->out);
        return -1; /* nothing to resume */
    }
    if (status != UFORM_OK) return uform_tool_fail(&outcome, options->out);
    uform_index_description_t description;
    uform_index_describe(index, &description);
    if ((options->dims_given && options->dims != description.dimensions) ||
        (options->scalar_given && options->scalar != description.scalar)) {
        fprintf(stderr, "uform: '%s' holds %zu dims of %s; --resume continues it as it is (drop --dims/--scalar, or start over)\n",
                options->out, description.dimensions, uform_tool_scalar_name(description.scalar));
        uform_index_free(index);
        return 2;
    }
    options->dims = description.dimensions, options->scalar = description.scalar;
    const char *errors = uform_index_metadata(index, "uform.cli.errors");
    size_t lines = 0;
    if (errors) uform_tool_parse_size(errors, &lines);
    if (uform_index_builder_from(index, &run->builder, &outcome) != UFORM_OK) {
        uform_index_free(index);
        return uform_tool_fail(&outcome, NULL);
    }
    uform_index_free(index);
    for (size_t i = 0; i < description.count; ++i) {
        const char *path;
        size_t length;
        uform_index_builder_item(run->builder, i, NULL, &path, &length);
        set_insert(skip, path, length); /* borrowed from the builder until it grows: the set is used before that */
    }
    return resume_errors(run, lines, skip, kept_paths, kept_count);
}

/* ---- the command ---- */

static int parse(int argc, char **argv, options_t *options, inputs_t *inputs, const char ***manifests, size_t *manifest_count) {
    memset(options, 0, sizeof *options);
    options->batch = 32, options->checkpoint = 10000;
    for (int i = 2; i < argc; ++i) {
        const char *flag = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        int used = 0;
        if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
            fputs(usage_text, stdout);
            exit(0);
        } else if (strcmp(flag, "--out") == 0 && value) options->out = argv[++i];
        else if (strcmp(flag, "--manifest") == 0 && value) {
            *manifests = realloc(*manifests, (*manifest_count + 1) * sizeof(char *));
            (*manifests)[(*manifest_count)++] = argv[++i];
        } else if (strcmp(flag, "--modalities") == 0 && value) {
            if (uform_tool_parse_modalities(argv[++i], &options->modalities)) return usage_error("--modalities takes a list of text, image, video, audio");
        } else if (strcmp(flag, "--batch") == 0 && value) {
            if (uform_tool_parse_size(argv[++i], &options->batch) || !options->batch) return usage_error("--batch takes a positive integer");
        } else if (strcmp(flag, "--threads") == 0 && value) {
            if (uform_tool_parse_size(argv[++i], &options->threads)) return usage_error("--threads takes an integer");
        } else if (strcmp(flag, "--decode-threads") == 0 && value) {
            if (uform_tool_parse_size(argv[++i], &options->decode_threads)) return usage_error("--decode-threads takes an integer");
        } else if (strcmp(flag, "--dims") == 0 && value) {
            if (uform_tool_parse_size(argv[++i], &options->dims)) return usage_error("--dims takes an integer");
            options->dims_given = 1;
        } else if (strcmp(flag, "--scalar") == 0 && value) {
            if (uform_tool_parse_scalar(argv[++i], &options->scalar)) return usage_error("--scalar takes f32, f16, bf16, i8 or b1");
            options->scalar_given = 1;
        } else if (strcmp(flag, "--checkpoint") == 0 && value) {
            if (uform_tool_parse_size(argv[++i], &options->checkpoint)) return usage_error("--checkpoint takes an integer");
        } else if ((used = uform_tool_compute_flag(flag, &options->compute)) != 0) {
            if (used < 0) return 2;
        } else if (strcmp(flag, "--resume") == 0) options->resume = 1;
        else if (strcmp(flag, "--hidden") == 0) options->hidden = 1;
        else if (strcmp(flag, "--json") == 0) options->json = 1;
        else if (strcmp(flag, "--progress") == 0) options->progress = 1;
        else if (strcmp(flag, "--quiet") == 0) options->quiet = 1;
        else if (flag[0] == '-' && flag[1] == '-') {
            char why[256];
            snprintf(why, sizeof why, "unknown flag or missing value: %s", flag);
            return usage_error(why);
        } else if (!options->checkpoint_path) options->checkpoint_path = flag;
        else {
            struct stat info;
            if (stat(flag, &info) == 0 && S_ISDIR(info.st_mode)) walk(inputs, flag, options->hidden);
            else add_input(inputs, flag, NULL, -1, NULL); /* a missing file is listed as an error, not fatal */
        }
    }
    if (!options->checkpoint_path) return usage_error("missing the checkpoint");
    if (!options->out) return usage_error("missing --out INDEX");
    return 0;
}

static void free_inputs(inputs_t *inputs) {
    for (size_t i = 0; i < inputs->count; ++i)
        free(inputs->items[i].path), free(inputs->items[i].text), free(inputs->items[i].error);
    free(inputs->items);
}

static int setup(run_t *run) {
    options_t *options = &run->options;
    uform_outcome_t outcome = {0};
    if (uform_executor_for_ram(NULL, options->threads, 0, &run->executor, &outcome) != UFORM_OK)
        return uform_tool_fail(&outcome, NULL);
    if (options->decode_threads &&
        uform_executor_for_ram(NULL, options->decode_threads, 0, &run->decoder, &outcome) != UFORM_OK)
        return uform_tool_fail(&outcome, NULL);
    run->model = uform_tool_load(options->checkpoint_path, run->executor, options->compute);
    if (!run->model) return 1;
    uform_model_describe_t describe = {run->model};
    uform_model_describe(&describe);
    unsigned present = describe.description.modalities;
    if (!options->modalities) options->modalities = present;
    if (options->modalities & ~present) {
        fprintf(stderr, "uform index: --modalities asks for a modality the checkpoint lacks (it has:%s%s%s%s)\n",
                present & 1 ? " text" : "", present & 2 ? " image" : "", present & 4 ? " video" : "", present & 8 ? " audio" : "");
        return 2;
    }
    if (options->dims > describe.description.embedding) {
        fprintf(stderr, "uform index: --dims %zu exceeds the checkpoint's embedding width %zu\n", options->dims,
                describe.description.embedding);
        return 2;
    }
    for (int i = 0; i < 2; ++i)
        if (uform_arena_for_executor(run->decoder ? run->decoder : run->executor, &run->prepared[i], &outcome) != UFORM_OK)
            return uform_tool_fail(&outcome, NULL);
    if (uform_arena_for_executor(run->executor, &run->encoded, &outcome) != UFORM_OK) return uform_tool_fail(&outcome, NULL);
    run->errors_path = malloc(strlen(options->out) + 16);
    sprintf(run->errors_path, "%s.errors.jsonl", options->out);
    return 0;
}

static void teardown(run_t *run) {
    if (run->errors) fclose(run->errors);
    free(run->errors_path);
    uform_index_builder_free(run->builder);
    for (int i = 0; i < 2; ++i) uform_arena_free(run->prepared[i]);
    uform_arena_free(run->encoded);
    uform_model_free(run->model);
    uform_executor_free(run->decoder);
    uform_executor_free(run->executor);
}

static void summary(run_t *run, size_t skipped, size_t duplicates, size_t resumed_items, double seconds) {
    char count[32], duration[32];
    size_t items = run->indexed + run->failed;
    if (run->options.json) {
        printf("{\"indexed\": %zu, \"failed\": %zu, \"skipped\": %zu, \"duplicates\": %zu, \"resumed\": %zu, "
               "\"seconds\": %.3f, \"items_per_second\": %.3f, \"index\": ",
               run->indexed, run->failed, skipped, duplicates, resumed_items, seconds, seconds > 0 ? items / seconds : 0);
        uform_tool_json_string(stdout, run->options.out, strlen(run->options.out));
        printf(", \"errors\": ");
        uform_tool_json_string(stdout, run->errors_path, strlen(run->errors_path));
        struct rusage usage;
        getrusage(RUSAGE_SELF, &usage);
        printf(", \"error_lines\": %zu, \"peak_rss_kib\": %ld, \"minor_faults\": %ld}\n", run->error_lines, usage.ru_maxrss,
               usage.ru_minflt);
    }
    if (run->options.quiet) return;
    fprintf(stderr, "uform: %s items in %s (%.1f items/s)", uform_tool_thousands(items, count, sizeof count),
            uform_tool_duration(seconds, duration, sizeof duration), seconds > 0 ? items / seconds : 0.0);
    if (run->failed) fprintf(stderr, ", %zu failed (listed in %s)", run->failed, run->errors_path);
    if (skipped) fprintf(stderr, ", %zu skipped (other modalities)", skipped);
    if (duplicates) fprintf(stderr, ", %zu duplicate paths dropped", duplicates);
    if (resumed_items) fprintf(stderr, ", %zu already in the index", resumed_items);
    fputc('\n', stderr);
}

int uform_tool_index(int argc, char **argv) {
    run_t run;
    memset(&run, 0, sizeof run);
    inputs_t inputs = {0};
    const char **manifests = NULL;
    size_t manifest_count = 0;
    int status = parse(argc, argv, &run.options, &inputs, &manifests, &manifest_count);
    for (size_t i = 0; status == 0 && i < manifest_count; ++i) status = read_manifest(&inputs, manifests[i]);
    free(manifests);
    if (status == 0 && inputs.count == 0) status = usage_error("no inputs: give folders, files or --manifest");
    if (status == 0) status = setup(&run);
    string_set_t skip = {0}, seen = {0};
    char **kept_paths = NULL;
    size_t kept_count = 0, resumed_items = 0, duplicates = 0;
    if (status == 0 && run.options.resume) {
        status = resume(&run, &skip, &kept_paths, &kept_count);
        if (status == -1) status = 0; /* a fresh start */
    }
    if (status == 0 && !run.builder) {
        uform_outcome_t outcome = {0};
        if (uform_index_builder_create(run.model, run.options.dims, run.options.scalar, &run.builder, &outcome) != UFORM_OK)
            status = uform_tool_fail(&outcome, NULL);
        else if (!(run.errors = fopen(run.errors_path, "w")))
            status = (fprintf(stderr, "uform: cannot write '%s': %s\n", run.errors_path, strerror(errno)), 1);
    }
    unsigned char *skipped_inputs = status == 0 ? calloc(inputs.count + 1, 1) : NULL;
    /* The index and its errors file never index themselves (an --out inside a walked folder). */
    char *own[2] = {status == 0 ? realpath(run.options.out, NULL) : NULL, status == 0 ? realpath(run.errors_path, NULL) : NULL};
    const char *own_names[2] = {strrchr(run.options.out, '/') ? strrchr(run.options.out, '/') + 1 : run.options.out,
                                run.errors_path && strrchr(run.errors_path, '/') ? strrchr(run.errors_path, '/') + 1 : run.errors_path};
    for (size_t i = 0; skipped_inputs && i < inputs.count; ++i) {
        const char *path = inputs.items[i].path;
        size_t length = strlen(path);
        const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        int is_own = 0;
        for (int k = 0; k < 2 && !inputs.items[i].text; ++k)
            if (own[k] && own_names[k] && strcmp(name, own_names[k]) == 0) {
                char *resolved = realpath(path, NULL);
                is_own |= resolved && strcmp(resolved, own[k]) == 0;
                free(resolved);
            }
        if (is_own) skipped_inputs[i] = 1;
        else if (set_insert(&seen, path, length)) skipped_inputs[i] = 1, duplicates += 1;
        else if (set_contains(&skip, path, length)) skipped_inputs[i] = 1, resumed_items += 1;
    }
    set_free(&skip), set_free(&seen);
    free(own[0]), free(own[1]);
    for (size_t i = 0; i < kept_count; ++i) free(kept_paths[i]);
    free(kept_paths);

    index_reader_t reader;
    memset(&reader, 0, sizeof reader);
    if (status == 0) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_handler = on_interrupt;
        sigaction(SIGINT, &action, NULL);
        sigaction(SIGTERM, &action, NULL);
        run.interactive = isatty(2) && !run.options.quiet;
        run.total = inputs.count, run.done = run.resumed_done = 0;
        run.start = uform_tool_now();
        reader.inputs = inputs.items, reader.input_count = inputs.count, reader.skip = skipped_inputs;
        reader.modalities = run.options.modalities, reader.batch = run.options.batch;
        reader.batch_bytes = (size_t)256 << 20, reader.checkpoint = run.options.checkpoint;
        reader.interrupted = &interrupted;
        if (index_reader_start(&reader, 3) != 0) status = (fprintf(stderr, "uform: cannot start the reader thread\n"), 1);
        else {
            status = pipeline(&run, &reader);
            index_reader_stop(&reader);
        }
        end_progress_line(&run);
        double seconds = uform_tool_now() - run.start;
        if (status == 130 && access(run.options.out, F_OK) == 0)
            fprintf(stderr, "uform: interrupted; '%s' keeps the last checkpoint; run the same command with --resume to continue\n",
                    run.options.out);
        else if (status == 130)
            fprintf(stderr, "uform: interrupted before the first checkpoint; nothing was written\n"); else if (status == 0) {
            summary(&run, reader.skipped, duplicates, resumed_items, seconds);
            if (run.error_lines) status = 3;
        }
    }
    free(skipped_inputs);
    free_inputs(&inputs);
    teardown(&run);
    return status;
}
