/*
 * uform train MANIFEST.jsonl --out CKPT [options] — the trainer of libuform (uform_trainer_*) on a
 * manifest of text↔media pairs and choice examples. `uform train --help` documents every flag.
 *
 * A manifest line is one JSON object:
 *   {"text": "a red star", "image": "img/1.png"}     a pair (or "video", or "audio"), paths relative
 *                                                    to the manifest's folder
 *   {"text": "is it red? ", "choices": "yn", "target": "y"}   a choice example
 * A pair is two bags (text on side 0, media on side 1) and one relation in temperature group
 * modality − 1 (image 0, video 1, audio 2); a choice example is a text content in no bag, with its
 * legal next bytes and target. Each step takes `--batch` lines in an order reshuffled each epoch from
 * `--seed`, never a line twice, avoiding two lines with the same text.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "commands.h"
#include "train_eval.h"
#include "train_manifest.h"
#include "train_mesh.h"
#include "uform/uform.h"

static const char usage_text[] =
    "usage: uform train MANIFEST.jsonl --out CKPT [--resume CKPT] [--size tiny|small|base]\n"
    "                   [--steps N] [--minutes M] [--batch B] [--lr X] [--warmup N] [--total-steps N]\n"
    "                   [--weight-decay X] [--clip X] [--seed N] [--threads N] [--bf16]\n"
    "                   [--eval HELDOUT.jsonl] [--eval-every N] [--save-every N] [--log FILE.csv]\n"
    "                   [--skip-bad] [--quiet] [--hidden N --depth N ... (the architecture)]\n";

static const char help_text[] =
    "\n"
    "Trains a model on MANIFEST.jsonl (one JSON object a line):\n"
    "  {\"text\": \"a red star\", \"image\": \"img/1.png\"}   a pair; also \"video\" or \"audio\" (paths relative\n"
    "                                                 to the manifest's folder)\n"
    "  {\"text\": \"is it red? \", \"choices\": \"yn\", \"target\": \"y\"}   a choice example (text_choose)\n"
    "\n"
    "  --out CKPT          the checkpoint written at the end (with optimizer state; required)\n"
    "  --resume CKPT       continue from a checkpoint: weights, moments, schedule and, for a checkpoint\n"
    "                      of this command, the data order (the flags below override the stored values)\n"
    "  --size S            tiny, small or base for a fresh model (default tiny)\n"
    "  --hidden N, --depth N, --heads N, --mlp N, --embedding N, --text-bytes N, --image-size N,\n"
    "  --image-patch N, --video-size N, --video-patch N, --video-frames N, --video-tubelet N,\n"
    "  --audio-seconds N, --audio-mels N\n"
    "                      one field of a fresh model's architecture (docs/model.md's config keys; default:\n"
    "                      --size's value); the checkpoint's config records them\n"
    "  --steps N           optimisation steps in this run (default 1000, or unbounded with --minutes)\n"
    "  --minutes M         stop the training loop after M minutes (the final save is not counted)\n"
    "  --batch B           manifest lines per step (default 32; above the line count: all lines)\n"
    "  --lr X              peak learning rate (default 1e-3)\n"
    "  --warmup N          linear warmup steps (default 0)\n"
    "  --total-steps N     the cosine reaches 0.1 x lr at step N (default --steps; 0 keeps lr);\n"
    "                      with --minutes alone the cosine runs on elapsed time instead\n"
    "  --weight-decay X    decoupled weight decay (default 0.1)\n"
    "  --clip X            gradient-norm clipping (default 1.0; 0 disables)\n"
    "  --seed N            initial weights and data order (default 0)\n"
    "  --threads N         compute threads (default 0: the library's choice)\n"
    "  --bf16              BF16 matrix products (F32 master weights)\n"
    "  --eval HELDOUT      print recall@1 and @5 per modality pair, text->media and media->text, on the\n"
    "                      held-out pairs (a hit is an item with the query's caption); up to 4 --eval,\n"
    "                      each line then ending with its manifest's name\n"
    "  --eval-every N      evaluate every N steps as well as at the end\n"
    "  --save-every N      also write --out every N steps\n"
    "  --log FILE.csv      one row per step: step,seconds,loss,contrastive,choice,learning_rate,grad_norm\n"
    "  --skip-bad          drop (and count) lines whose media cannot be decoded instead of stopping\n"
    "  --quiet             no progress and no summary\n"
    "\n"
    "Exit status: 0 done; 1 failed (the library's message is printed); 2 usage; 3 done, but lines were\n"
    "skipped (--skip-bad); 130 interrupted (Ctrl-C: --out holds the steps completed so far).\n";

static volatile sig_atomic_t interrupted = 0;
static void on_interrupt(int signal_number) { (void)signal_number, interrupted = 1; }

static double now_seconds(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + (double)time.tv_nsec * 1e-9;
}

static int fail_outcome(const uform_outcome_t *outcome, const char *what) {
    char line[640];
    uform_outcome_format(outcome, line, sizeof line);
    if (what) fprintf(stderr, "uform: %s (%s)\n", line, what);
    else fprintf(stderr, "uform: %s\n", line);
    return 1;
}

static int usage_error(const char *why) {
    fprintf(stderr, "%s%suform train: %s\n", usage_text, train_mesh_usage, why);
    return 2;
}

/* The architecture flags: each sets one size_t field of the trainer config (zero keeps --size's). */
typedef struct architecture_flag_t {
    const char *flag;
    size_t offset;
} architecture_flag_t;

static const architecture_flag_t architecture_flags[] = {
    {"--hidden", offsetof(uform_trainer_config_t, hidden)},
    {"--depth", offsetof(uform_trainer_config_t, depth)},
    {"--heads", offsetof(uform_trainer_config_t, heads)},
    {"--mlp", offsetof(uform_trainer_config_t, mlp)},
    {"--embedding", offsetof(uform_trainer_config_t, embedding)},
    {"--text-bytes", offsetof(uform_trainer_config_t, text_bytes)},
    {"--image-size", offsetof(uform_trainer_config_t, image_size)},
    {"--image-patch", offsetof(uform_trainer_config_t, image_patch)},
    {"--video-size", offsetof(uform_trainer_config_t, video_size)},
    {"--video-patch", offsetof(uform_trainer_config_t, video_patch)},
    {"--video-frames", offsetof(uform_trainer_config_t, video_frames)},
    {"--video-tubelet", offsetof(uform_trainer_config_t, video_tubelet)},
    {"--audio-seconds", offsetof(uform_trainer_config_t, audio_seconds)},
    {"--audio-mels", offsetof(uform_trainer_config_t, audio_mels)},
};
#define ARCHITECTURE_FLAGS (sizeof architecture_flags / sizeof architecture_flags[0])

#define EVAL_SETS 4

typedef struct options_t {
    const char *manifest, *out, *resume, *size, *log;
    const char *eval[EVAL_SETS];
    size_t eval_count;
    size_t architecture[ARCHITECTURE_FLAGS]; /* 0: --size's value */
    size_t steps, batch, warmup, total_steps, threads, eval_every, save_every;
    double minutes, lr, weight_decay, clip;
    uint64_t seed;
    int bf16, skip_bad, quiet, have_steps, have_total, have_warmup, have_lr, have_decay, have_clip, have_seed;
    train_mesh_t mesh;      /* --mesh ... or --processes (train_mesh.h) */
} options_t;

static int parse_number(const char *text, double *value) {
    char *end = NULL;
    errno = 0;
    *value = strtod(text, &end);
    return (!end || *end || end == text || errno || !isfinite(*value)) ? -1 : 0;
}

static int parse_count(const char *text, size_t *value) {
    double number;
    if (parse_number(text, &number) || number < 0 || number != floor(number) || number > 1e15) return -1;
    *value = (size_t)number;
    return 0;
}

static int parse_options(int argc, char **argv, options_t *options) {
    memset(options, 0, sizeof *options);
    options->batch = 32, options->steps = 1000;
    for (int i = 1; i < argc; ++i) {
        const char *flag = argv[i];
        if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
            printf("%s%s%s%s", usage_text, train_mesh_usage, help_text, train_mesh_help);
            exit(0);
        }
        if (flag[0] != '-') {
            if (options->manifest) return usage_error("more than one manifest");
            options->manifest = flag;
            continue;
        }
        int boolean = strcmp(flag, "--bf16") == 0 || strcmp(flag, "--skip-bad") == 0 || strcmp(flag, "--quiet") == 0;
        if (boolean) {
            if (strcmp(flag, "--bf16") == 0) options->bf16 = 1;
            else if (strcmp(flag, "--skip-bad") == 0) options->skip_bad = 1;
            else options->quiet = 1;
            continue;
        }
        static const char *const valued[] = {"--out", "--resume", "--size", "--eval", "--log", "--steps", "--batch",
                                             "--warmup", "--total-steps", "--threads", "--eval-every", "--save-every",
                                             "--seed", "--minutes", "--lr", "--weight-decay", "--clip"};
        int known = 0, architecture = -1;
        for (size_t k = 0; k < sizeof valued / sizeof valued[0]; ++k) known |= strcmp(flag, valued[k]) == 0;
        for (size_t k = 0; k < ARCHITECTURE_FLAGS; ++k)
            if (strcmp(flag, architecture_flags[k].flag) == 0) known = 1, architecture = (int)k;
        known |= train_mesh_is_flag(flag);
        if (!known || i + 1 >= argc) {
            char why[128];
            snprintf(why, sizeof why, known ? "%s needs a value" : "unknown flag %s", flag);
            return usage_error(why);
        }
        const char *value = argv[++i];
        double number = 0;
        int bad = 0;
        if (architecture >= 0) bad = parse_count(value, &options->architecture[architecture]) || !options->architecture[architecture];
        else if (strcmp(flag, "--out") == 0) options->out = value;
        else if (strcmp(flag, "--resume") == 0) options->resume = value;
        else if (strcmp(flag, "--size") == 0) options->size = value;
        else if (strcmp(flag, "--eval") == 0) {
            if (options->eval_count == EVAL_SETS) return usage_error("more than 4 --eval");
            options->eval[options->eval_count++] = value;
        }
        else if (strcmp(flag, "--log") == 0) options->log = value;
        else if (strcmp(flag, "--steps") == 0) bad = parse_count(value, &options->steps), options->have_steps = 1;
        else if (strcmp(flag, "--batch") == 0) bad = parse_count(value, &options->batch) || options->batch == 0;
        else if (strcmp(flag, "--warmup") == 0) bad = parse_count(value, &options->warmup), options->have_warmup = 1;
        else if (strcmp(flag, "--total-steps") == 0) bad = parse_count(value, &options->total_steps), options->have_total = 1;
        else if (strcmp(flag, "--threads") == 0) bad = parse_count(value, &options->threads);
        else if (strcmp(flag, "--eval-every") == 0) bad = parse_count(value, &options->eval_every);
        else if (strcmp(flag, "--save-every") == 0) bad = parse_count(value, &options->save_every);
        else if (strcmp(flag, "--seed") == 0) {
            size_t seed;
            bad = parse_count(value, &seed), options->seed = seed, options->have_seed = 1;
        } else if (strcmp(flag, "--minutes") == 0) bad = parse_number(value, &options->minutes) || options->minutes <= 0;
        else if (strcmp(flag, "--lr") == 0) bad = parse_number(value, &options->lr) || options->lr <= 0, options->have_lr = 1;
        else if (strcmp(flag, "--weight-decay") == 0)
            bad = parse_number(value, &options->weight_decay) || options->weight_decay < 0, options->have_decay = 1;
        else if (strcmp(flag, "--clip") == 0) bad = parse_number(value, &options->clip) || options->clip < 0, options->have_clip = 1;
        else bad = train_mesh_flag(&options->mesh, flag, value) != 0;
        (void)number;
        if (bad) {
            char why[160];
            snprintf(why, sizeof why, "%s %s is not a valid value", flag, value);
            return usage_error(why);
        }
    }
    char why[200];
    if (train_mesh_check(&options->mesh, options->skip_bad, why, sizeof why)) return usage_error(why);
    if (options->mesh.processes) return 0; /* the members check the rest */
    if (!options->manifest) return usage_error("the manifest is missing");
    if (!options->out) return usage_error("--out is missing");
    if (options->minutes > 0 && !options->have_steps) options->steps = SIZE_MAX;
    return 0;
}

/* ---- the batch of one step ---- */

typedef struct step_batch_t {
    unsigned char *data;
    size_t used, capacity;
    size_t *offsets;           /* [contents + 1] */
    uform_modality_t *modalities;
    size_t *content_line;      /* which line each content came from */
    size_t *bags, *lefts, *rights, *groups;
    uint8_t *sides, *targets;
    char *choices;
    size_t *choice_offsets;
    size_t contents, pairs, choice_count;
} step_batch_t;

static int append(step_batch_t *batch, const void *bytes, size_t length) {
    if (batch->used + length > batch->capacity) {
        size_t capacity = (batch->used + length) * 2 + 4096;
        unsigned char *grown = realloc(batch->data, capacity);
        if (!grown) return -1;
        batch->data = grown, batch->capacity = capacity;
    }
    memcpy(batch->data + batch->used, bytes, length);
    batch->used += length;
    return 0;
}

static int append_file(step_batch_t *batch, const char *path, char *error, size_t capacity) {
    FILE *file = fopen(path, "rb");
    if (!file) {
        snprintf(error, capacity, "cannot open '%s': %s", path, strerror(errno));
        return -1;
    }
    unsigned char chunk[65536];
    size_t got;
    int status = 0;
    while (status == 0 && (got = fread(chunk, 1, sizeof chunk, file)) > 0) status = append(batch, chunk, got);
    if (ferror(file)) {
        snprintf(error, capacity, "cannot read '%s': %s", path, strerror(errno));
        status = -1;
    } else if (status) {
        snprintf(error, capacity, "out of memory reading '%s'", path);
    }
    fclose(file);
    return status;
}

static int batch_reserve(step_batch_t *batch, size_t lines) {
    size_t contents = 2 * lines + 1;
    batch->offsets = realloc(batch->offsets, (contents + 1) * sizeof *batch->offsets);
    batch->modalities = realloc(batch->modalities, contents * sizeof *batch->modalities);
    batch->content_line = realloc(batch->content_line, contents * sizeof *batch->content_line);
    batch->bags = realloc(batch->bags, (contents + 1) * sizeof *batch->bags);
    batch->lefts = realloc(batch->lefts, (lines + 1) * sizeof *batch->lefts);
    batch->rights = realloc(batch->rights, (lines + 1) * sizeof *batch->rights);
    batch->groups = realloc(batch->groups, (lines + 1) * sizeof *batch->groups);
    batch->sides = realloc(batch->sides, contents);
    batch->targets = realloc(batch->targets, contents);
    batch->choice_offsets = realloc(batch->choice_offsets, (contents + 1) * sizeof *batch->choice_offsets);
    return batch->offsets && batch->modalities && batch->content_line && batch->bags && batch->lefts &&
                   batch->rights && batch->groups && batch->sides && batch->targets && batch->choice_offsets
               ? 0
               : -1;
}

static void batch_free(step_batch_t *batch) {
    free(batch->data), free(batch->offsets), free(batch->modalities), free(batch->content_line), free(batch->bags);
    free(batch->lefts), free(batch->rights), free(batch->groups), free(batch->sides), free(batch->targets);
    free(batch->choices), free(batch->choice_offsets);
}

/* Pairs first (text then media, each its own bag), then the choice examples after the bags. On a
 * file that cannot be read, answers -1 and sets *bad_line. */
static int batch_build(step_batch_t *batch, const manifest_t *manifest, const size_t *lines, size_t count,
                       size_t *bad_line, char *error, size_t capacity) {
    if (batch_reserve(batch, count)) {
        snprintf(error, capacity, "out of memory for a batch of %zu lines", count);
        return -1;
    }
    batch->used = 0, batch->contents = 0, batch->pairs = 0, batch->choice_count = 0;
    batch->offsets[0] = 0;
    size_t choice_bytes = 0;
    for (size_t i = 0; i < count; ++i) choice_bytes += manifest->lines[lines[i]].choices_length;
    free(batch->choices);
    batch->choices = malloc(choice_bytes + 1);
    if (!batch->choices) {
        snprintf(error, capacity, "out of memory for a batch of %zu lines", count);
        return -1;
    }
    for (int pass = 0; pass < 2; ++pass) {
        for (size_t i = 0; i < count; ++i) {
            const manifest_line_t *line = &manifest->lines[lines[i]];
            if ((line->modality != 0) != (pass == 0)) continue;
            size_t c = batch->contents;
            if (append(batch, line->text, line->text_length)) goto memory;
            batch->modalities[c] = UFORM_MODALITY_TEXT, batch->content_line[c] = lines[i];
            batch->offsets[c + 1] = batch->used;
            batch->contents += 1;
            if (pass == 1) continue;
            if (append_file(batch, line->path, error, capacity)) {
                *bad_line = lines[i];
                return -1;
            }
            batch->modalities[c + 1] = (uform_modality_t)line->modality, batch->content_line[c + 1] = lines[i];
            batch->offsets[c + 2] = batch->used;
            batch->contents += 1;
            size_t p = batch->pairs++;
            batch->lefts[p] = c, batch->rights[p] = c + 1, batch->groups[p] = (size_t)line->modality - 1;
        }
    }
    /* Bags: one per pair content; choice contents (after them) are in none. */
    for (size_t j = 0; j <= 2 * batch->pairs; ++j) batch->bags[j] = j;
    for (size_t j = 0; j < 2 * batch->pairs; ++j) batch->sides[j] = (uint8_t)(j % 2);
    batch->choice_offsets[0] = 0;
    size_t cursor = 0;
    for (size_t c = 0; c < batch->contents; ++c) {
        const manifest_line_t *line = &manifest->lines[batch->content_line[c]];
        int choice = line->modality == 0;
        if (choice) {
            memcpy(batch->choices + cursor, line->choices, line->choices_length);
            cursor += line->choices_length;
            batch->targets[c] = line->target;
            batch->choice_count += 1;
        } else {
            batch->targets[c] = 0;
        }
        batch->choice_offsets[c + 1] = cursor;
    }
    return 0;
memory:
    snprintf(error, capacity, "out of memory for a batch of %zu lines", count);
    return -1;
}

/* ---- progress, interrupts, logging ---- */

/* Over a mesh the members stop together: an interrupt or the --minutes deadline cancels the step
 * in progress, and a cancel on one member cancels it on all. */
static double deadline = 0;

static uform_continuation_t step_progress(size_t completed, size_t total, void *state) {
    (void)completed, (void)total, (void)state;
    return interrupted || (deadline > 0 && now_seconds() >= deadline) ? UFORM_CANCEL : UFORM_CONTINUE;
}

/* What every member of a mesh must agree on beyond the trainer's config (train_mesh_join). */
static void agreement_of(const options_t *options, const manifest_t *manifest, char *text, size_t capacity) {
    uint64_t hash = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < manifest->count; ++i) {
        const manifest_line_t *line = &manifest->lines[i];
        for (size_t k = 0; k < line->text_length; ++k) hash = (hash ^ (unsigned char)line->text[k]) * 0x100000001b3ull;
        for (size_t k = 0; k < line->choices_length; ++k) hash = (hash ^ (unsigned char)line->choices[k]) * 0x100000001b3ull;
        hash = (hash ^ (unsigned)line->modality ^ ((unsigned)line->target << 8)) * 0x100000001b3ull;
    }
    snprintf(text, capacity, "batch=%zu\nsteps=%zu\nminutes=%g\nlines=%zu\nmanifest=%016llx\n", options->batch,
             options->steps, options->minutes, manifest->count, (unsigned long long)hash);
}

static void draw_bar(const options_t *options, uint64_t step, uint64_t first, double loss, double elapsed) {
    double rate = elapsed > 0 ? (double)(step - first) / elapsed : 0;
    char eta[32] = "";
    if (options->steps != SIZE_MAX && rate > 0) {
        double left = (double)(first + options->steps - step) / rate;
        snprintf(eta, sizeof eta, "  ETA %d:%02d", (int)(left / 60), (int)fmod(left, 60));
    } else if (options->minutes > 0) {
        double left = options->minutes * 60 - elapsed;
        snprintf(eta, sizeof eta, "  %d:%02d left", (int)(left > 0 ? left / 60 : 0), (int)(left > 0 ? fmod(left, 60) : 0));
    }
    if (options->steps != SIZE_MAX)
        fprintf(stderr, "\rtrain  step %llu/%llu  loss %.4f  %.2f steps/s%s   ", (unsigned long long)step,
                (unsigned long long)(first + options->steps), loss, rate, eta);
    else
        fprintf(stderr, "\rtrain  step %llu  loss %.4f  %.2f steps/s%s   ", (unsigned long long)step, loss, rate, eta);
    fflush(stderr);
}

/* The sampler's state, kept in the checkpoint's "uform.user" so a resume continues the data order. */
static char *sampler_state(const sampler_t *sampler, size_t batch, const manifest_t *manifest) {
    cJSON *root = cJSON_CreateObject();
    cJSON *state = cJSON_AddObjectToObject(root, "uform_train");
    cJSON_AddNumberToObject(state, "seed", (double)sampler->seed);
    cJSON_AddNumberToObject(state, "batches", (double)sampler->batches);
    cJSON_AddNumberToObject(state, "batch", (double)batch);
    cJSON_AddNumberToObject(state, "lines", (double)manifest->count);
    cJSON *bad = cJSON_AddArrayToObject(state, "bad_lines");
    for (size_t i = 0; i < manifest->count; ++i)
        if (sampler->bad[i]) cJSON_AddItemToArray(bad, cJSON_CreateNumber((double)manifest->lines[i].number));
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return json;
}

/* Restores the data order of a resumed run by replaying its batches. Answers 0, or -1 when the
 * stored state does not fit this manifest (then the order starts afresh, with a warning). */
static int sampler_restore(sampler_t *sampler, const char *json, const manifest_t *manifest, size_t *lines) {
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    const cJSON *state = root ? cJSON_GetObjectItemCaseSensitive(root, "uform_train") : NULL;
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(state, "seed");
    const cJSON *batches = cJSON_GetObjectItemCaseSensitive(state, "batches");
    const cJSON *batch = cJSON_GetObjectItemCaseSensitive(state, "batch");
    const cJSON *count = cJSON_GetObjectItemCaseSensitive(state, "lines");
    const cJSON *bad = cJSON_GetObjectItemCaseSensitive(state, "bad_lines");
    int ok = cJSON_IsNumber(seed) && cJSON_IsNumber(batches) && cJSON_IsNumber(batch) && cJSON_IsNumber(count) &&
             (size_t)count->valuedouble == manifest->count;
    if (ok) {
        sampler_free(sampler);
        ok = sampler_init(sampler, manifest, (uint64_t)seed->valuedouble) == 0;
    }
    if (ok && cJSON_IsArray(bad)) {
        const cJSON *item;
        cJSON_ArrayForEach(item, bad) {
            for (size_t i = 0; i < manifest->count; ++i)
                if (cJSON_IsNumber(item) && manifest->lines[i].number == (size_t)item->valuedouble) sampler->bad[i] = 1;
        }
    }
    for (uint64_t b = 0; ok && b < (uint64_t)batches->valuedouble; ++b) sampler_next(sampler, (size_t)batch->valuedouble, lines);
    cJSON_Delete(root);
    return ok ? 0 : -1;
}

static int save_checkpoint(uform_trainer_t trainer, const char *path, const sampler_t *sampler, size_t batch,
                           const manifest_t *manifest) {
    char *state = sampler_state(sampler, batch, manifest);
    uform_trainer_save_t save = {0};
    save.trainer = trainer, save.path = path, save.user_metadata = state;
    int status = uform_trainer_save(&save) == UFORM_OK ? 0 : fail_outcome(&save.outcome, path);
    free(state);
    return status;
}

/* The lr of a --minutes run without --steps: the warmup by steps, then the cosine on elapsed time. */
static double time_schedule(const options_t *options, const uform_trainer_description_t *description, uint64_t step,
                            double elapsed) {
    double lr = description->learning_rate;
    if (step <= description->warmup_steps) return lr * (double)step / (double)description->warmup_steps;
    double fraction = elapsed / (options->minutes * 60.0);
    if (fraction > 1) fraction = 1;
    return lr * (0.1 + 0.45 * (1.0 + cos(3.14159265358979323846 * fraction)));
}

/* Reads "contents[7]" from a step's failure message: the content that failed to decode. */
static int failed_content(const uform_outcome_t *outcome, size_t *content) {
    const char *at = strstr(outcome->message, "contents[");
    return at && sscanf(at, "contents[%zu]", content) == 1 ? 0 : -1;
}

/* Every --eval set; with more than one, each line names its manifest. Answers 0 or 1. */
static int evaluate_all(const options_t *options, uform_trainer_t trainer, uform_executor_t executor,
                        const manifest_t *heldout, uint64_t step) {
    for (size_t e = 0; e < options->eval_count; ++e) {
        const char *slash = strrchr(options->eval[e], '/');
        const char *label = options->eval_count > 1 ? (slash ? slash + 1 : options->eval[e]) : NULL;
        if (train_evaluate(trainer, executor, &heldout[e], options->bf16, step, options->skip_bad, label)) return 1;
    }
    return 0;
}

int uform_command_train(int argc, char **argv) {
    options_t options;
    if (parse_options(argc, argv, &options)) return 2;
    if (options.mesh.processes) return train_mesh_launch(&options.mesh, argc, argv);
    /* Over a mesh, member 0 alone writes --out and --log and evaluates. */
    int follower = options.mesh.directory && options.mesh.index != 0;
    if (follower) options.log = NULL, options.eval_count = 0, options.save_every = 0;
    char error[512];
    manifest_t manifest, heldout[EVAL_SETS];
    memset(heldout, 0, sizeof heldout);
    if (manifest_read(options.manifest, &manifest, error, sizeof error)) {
        fprintf(stderr, "uform: %s\n", error);
        return 1;
    }
    for (size_t e = 0; e < options.eval_count; ++e)
        if (manifest_read(options.eval[e], &heldout[e], error, sizeof error)) {
            fprintf(stderr, "uform: %s\n", error);
            manifest_free(&manifest);
            for (size_t k = 0; k < e; ++k) manifest_free(&heldout[k]);
            return 1;
        }
    int status = 0;
    uform_outcome_t outcome = {0};
    uform_executor_t executor = NULL;
    uform_trainer_t trainer = NULL;
    uform_arena_t arena = NULL;
    sampler_t sampler;
    memset(&sampler, 0, sizeof sampler);
    step_batch_t batch;
    memset(&batch, 0, sizeof batch);
    size_t *lines = malloc((manifest.count + 1) * sizeof *lines);
    FILE *log = NULL;
    if (!lines || sampler_init(&sampler, &manifest, options.seed)) {
        fprintf(stderr, "uform: out of memory for %zu manifest lines\n", manifest.count);
        status = 1;
        goto done;
    }
    if (uform_executor_for_ram(NULL, options.threads, 0, &executor, &outcome) != UFORM_OK) {
        status = fail_outcome(&outcome, NULL);
        goto done;
    }
    uform_trainer_config_t config = {0};
    if (options.size) snprintf(config.size, sizeof config.size, "%s", options.size);
    for (size_t k = 0; k < ARCHITECTURE_FLAGS; ++k)
        if (options.architecture[k]) *(size_t *)((char *)&config + architecture_flags[k].offset) = options.architecture[k];
    config.seed = options.seed;
    config.compute = options.bf16 ? UFORM_COMPUTE_BF16 : UFORM_COMPUTE_F32;
    config.resume = options.resume;
    if (options.have_lr) config.learning_rate = options.lr;
    if (options.have_warmup) config.warmup_steps = options.warmup;
    if (options.have_decay) config.weight_decay = options.weight_decay > 0 ? options.weight_decay : -1;
    if (options.have_clip) config.clip_norm = options.clip > 0 ? options.clip : -1;
    /* --total-steps defaults to --steps for a fresh run (a resumed one keeps its stored schedule). */
    if (options.have_total) config.total_steps = options.total_steps;
    else if (!options.resume && options.steps != SIZE_MAX) config.total_steps = options.steps;
    if (options.mesh.directory) {
        char agreement[512];
        agreement_of(&options, &manifest, agreement, sizeof agreement);
        if (manifest.count < options.mesh.count || options.batch < options.mesh.count) {
            fprintf(stderr, "uform: %zu members need at least one line each per step: --batch %zu and %zu lines\n",
                    options.mesh.count, options.batch, manifest.count);
            status = 1;
            goto done;
        }
        if (train_mesh_join(&options.mesh, executor, &config, agreement, options.quiet)) {
            status = 1;
            goto done;
        }
        config.mesh = options.mesh.mesh;
        if (options.minutes > 0) deadline = now_seconds() + options.minutes * 60.0;
    }
    if (uform_trainer_init_ram(executor, &config, &trainer, &outcome) != UFORM_OK) {
        status = fail_outcome(&outcome, options.resume);
        goto done;
    }
    if (options.resume) {
        const char *state = uform_trainer_user_metadata(trainer);
        if (state && sampler_restore(&sampler, state, &manifest, lines) != 0 && !options.quiet)
            fprintf(stderr, "uform: the checkpoint's data order does not fit %s (another manifest?): starting a new order\n",
                    options.manifest);
    }
    uform_trainer_description_t description;
    uform_trainer_describe(trainer, &description);
    if (uform_arena_for_executor(executor, &arena, &outcome) != UFORM_OK) {
        status = fail_outcome(&outcome, NULL);
        goto done;
    }
    if (options.log) {
        log = fopen(options.log, "w");
        if (!log) {
            fprintf(stderr, "uform: cannot write '%s': %s\n", options.log, strerror(errno));
            status = 1;
            goto done;
        }
        fprintf(log, "step,seconds,loss,contrastive,choice,learning_rate,grad_norm\n");
    }
    signal(SIGINT, on_interrupt);
    int bar = !options.quiet && isatty(2);
    if (!options.quiet)
        fprintf(stderr, "uform: training %s (%zu parameters, %s) on %zu lines, batch %zu, %zu threads%s\n",
                description.model.size[0] ? description.model.size : "model", (size_t)description.model.parameters,
                options.bf16 ? "bf16" : "f32", manifest.count, options.batch, uform_executor_threads(executor),
                options.resume ? ", resumed" : "");
    double start = now_seconds(), last_loss = 0;
    uint64_t first_step = description.steps, skipped = 0, done_steps = 0;
    int warned_twins = 0;
    while (done_steps < options.steps && (config.mesh || !interrupted)) {
        double elapsed = now_seconds() - start;
        if (!config.mesh && options.minutes > 0 && elapsed >= options.minutes * 60.0) break;
        size_t count = sampler_next(&sampler, options.batch, lines), bad_line = SIZE_MAX, first, end;
        train_mesh_share(&options.mesh, count, &first, &end);
        if (sampler.twins_unavoidable && !warned_twins && !options.quiet) {
            fprintf(stderr, "%suform: the manifest repeats a text so often that some batch holds two lines with the same "
                            "text (the contrastive loss counts the twin as a wrong match)\n", bar ? "\n" : "");
            warned_twins = 1;
        }
        if (batch_build(&batch, &manifest, lines + first, end - first, &bad_line, error, sizeof error)) {
            if (bad_line != SIZE_MAX && options.skip_bad) {
                sampler.bad[bad_line] = 1, skipped += 1;
                if (!options.quiet) fprintf(stderr, "%suform: skipped line %zu: %s\n", bar ? "\n" : "", manifest.lines[bad_line].number, error);
                continue;
            }
            fprintf(stderr, "%suform: %s%s%zu\n", bar ? "\n" : "", error, bad_line != SIZE_MAX ? " at line " : "",
                    bad_line != SIZE_MAX ? manifest.lines[bad_line].number : 0);
            status = 1;
            break;
        }
        uform_trainer_step_t step = {0};
        step.trainer = trainer, step.arena = arena;
        step.modalities = batch.modalities;
        step.contents = (uform_tape_t){batch.data, batch.offsets, batch.contents};
        step.bags = batch.bags, step.bag_count = 2 * batch.pairs, step.sides = batch.sides;
        step.relations = (uform_relations_t){batch.lefts, batch.rights, batch.groups, batch.pairs};
        if (batch.choice_count) {
            step.choices = (uform_tape_t){batch.choices, batch.choice_offsets, batch.contents};
            step.choice_targets = batch.targets;
        }
        step.progress.callback = step_progress;
        if (options.minutes > 0 && options.steps == SIZE_MAX)
            step.learning_rate_override = time_schedule(&options, &description, description.steps + done_steps + 1, elapsed);
        if (uform_trainer_step(&step) != UFORM_OK) {
            size_t content;
            uform_status_t code = uform_outcome_status(&step.outcome);
            if (code == UFORM_CANCELLED) break;
            int peers = strncmp(step.outcome.message, "member ", 7) == 0; /* another member's content */
            if ((code == UFORM_FORMAT || code == UFORM_UNSUPPORTED) && !peers && failed_content(&step.outcome, &content) == 0 &&
                content < batch.contents) {
                size_t line = batch.content_line[content];
                if (options.skip_bad) {
                    sampler.bad[line] = 1, skipped += 1;
                    if (!options.quiet)
                        fprintf(stderr, "%suform: skipped line %zu ('%s'): %s\n", bar ? "\n" : "", manifest.lines[line].number,
                                manifest.lines[line].path ? manifest.lines[line].path : "", step.outcome.message);
                    continue;
                }
                char where[1200];
                snprintf(where, sizeof where, "%s, line %zu of %s", manifest.lines[line].path ? manifest.lines[line].path : "",
                         manifest.lines[line].number, options.manifest);
                status = fail_outcome(&step.outcome, where);
            } else {
                status = fail_outcome(&step.outcome, NULL);
            }
            break;
        }
        done_steps += 1;
        last_loss = step.loss;
        double seconds = now_seconds() - start;
        if (log)
            fprintf(log, "%llu,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n", (unsigned long long)step.step, seconds, step.loss,
                    step.contrastive, step.choice, step.learning_rate, step.grad_norm);
        if (bar) draw_bar(&options, step.step, first_step, step.loss, seconds);
        if (options.save_every && done_steps % options.save_every == 0 &&
            save_checkpoint(trainer, options.out, &sampler, options.batch, &manifest)) {
            status = 1;
            break;
        }
        if (options.eval_count && options.eval_every && done_steps % options.eval_every == 0) {
            if (bar) fputc('\n', stderr);
            if (evaluate_all(&options, trainer, executor, heldout, step.step)) {
                status = 1;
                break;
            }
        }
    }
    if (bar) fputc('\n', stderr);
    if (log) fclose(log), log = NULL;
    if (status == 0 && follower) {
        status = interrupted ? 130 : 0;
    } else if (status == 0) {
        double seconds = now_seconds() - start;
        if (save_checkpoint(trainer, options.out, &sampler, options.batch, &manifest)) status = 1;
        else if (interrupted) {
            fprintf(stderr, "uform: interrupted after step %llu; %s holds it: continue with --resume %s\n",
                    (unsigned long long)(first_step + done_steps), options.out, options.out);
            status = 130;
        } else {
            if (!options.quiet)
                fprintf(stderr, "uform: %llu steps in %.1f s (%.2f steps/s), final loss %.4f, %llu skipped, saved %s\n",
                        (unsigned long long)done_steps, seconds, seconds > 0 ? (double)done_steps / seconds : 0.0,
                        last_loss, (unsigned long long)skipped, options.out);
            /* The final evaluation, unless --eval-every has just made it. */
            int evaluated = options.eval_every && done_steps > 0 && done_steps % options.eval_every == 0;
            if (options.eval_count && !evaluated && evaluate_all(&options, trainer, executor, heldout, first_step + done_steps))
                status = 1;
            if (status == 0 && skipped) status = 3;
        }
    }
done:
    if (log) fclose(log);
    batch_free(&batch);
    sampler_free(&sampler);
    free(lines);
    uform_arena_free(arena);
    uform_trainer_free(trainer);
    train_mesh_free(&options.mesh);
    uform_executor_free(executor);
    manifest_free(&manifest);
    for (size_t e = 0; e < options.eval_count; ++e) manifest_free(&heldout[e]);
    return status;
}
