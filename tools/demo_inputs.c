/* Reads back what a `make demo` run wrote (demo_report.h lists the files). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo_report.h"

const char *const demo_modality_names[4] = {"text", "image", "video", "audio"};

static FILE *open_in(const char *dir, const char *name, int required) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *file = fopen(path, "r");
    if (!file && required) fprintf(stderr, "uform_demo_report: cannot read '%s': %s\n", path, strerror(errno));
    return file;
}

static char *copy(const char *text) {
    char *result = malloc(strlen(text) + 1);
    if (result) strcpy(result, text);
    return result;
}

static int modality_index(const char *name) {
    for (int m = 0; m < 4; ++m)
        if (strcmp(name, demo_modality_names[m]) == 0) return m;
    return -1;
}

static int read_log(const char *dir, demo_log_t *log) {
    FILE *file = open_in(dir, "train.csv", 1);
    if (!file) return -1;
    char line[512];
    size_t capacity = 0;
    while (fgets(line, sizeof line, file)) {
        double step, seconds, loss, contrastive, choice, rate, norm;
        if (sscanf(line, "%lf,%lf,%lf,%lf,%lf,%lf,%lf", &step, &seconds, &loss, &contrastive, &choice, &rate, &norm) != 7) continue;
        if (log->count == capacity) {
            capacity = capacity ? 2 * capacity : 1024;
            log->steps = realloc(log->steps, capacity * sizeof(double));
            log->seconds = realloc(log->seconds, capacity * sizeof(double));
            log->loss = realloc(log->loss, capacity * sizeof(double));
            log->learning_rate = realloc(log->learning_rate, capacity * sizeof(double));
            if (!log->steps || !log->seconds || !log->loss || !log->learning_rate) break;
        }
        log->steps[log->count] = step, log->seconds[log->count] = seconds, log->loss[log->count] = loss;
        log->learning_rate[log->count] = rate;
        log->count += 1;
    }
    fclose(file);
    if (log->count == 0) fprintf(stderr, "uform_demo_report: %s/train.csv has no steps\n", dir);
    return log->count ? 0 : -1;
}

/* `uform train --eval-log` lines: {"step": 400, "set": "novel.jsonl", "modality": "image", "pairs": 300,
 * "text_to_media": {"1": 0.953, "5": 0.997}, "media_to_text": {"1": 0.950, "5": 0.993}}. */
static int read_evals(const char *dir, demo_evals_t *evals) {
    FILE *file = open_in(dir, "eval.jsonl", 1);
    if (!file) return -1;
    char *line = NULL;
    size_t length = 0, capacity = 0;
    while (getline(&line, &length, file) > 0) {
        cJSON *root = cJSON_Parse(line);
        const cJSON *step = cJSON_GetObjectItemCaseSensitive(root, "step");
        const cJSON *set = cJSON_GetObjectItemCaseSensitive(root, "set");
        const cJSON *modality = cJSON_GetObjectItemCaseSensitive(root, "modality");
        const cJSON *pairs = cJSON_GetObjectItemCaseSensitive(root, "pairs");
        const cJSON *forward = cJSON_GetObjectItemCaseSensitive(root, "text_to_media");
        const cJSON *backward = cJSON_GetObjectItemCaseSensitive(root, "media_to_text");
        const cJSON *numbers[4] = {cJSON_GetObjectItemCaseSensitive(forward, "1"), cJSON_GetObjectItemCaseSensitive(forward, "5"),
                                   cJSON_GetObjectItemCaseSensitive(backward, "1"), cJSON_GetObjectItemCaseSensitive(backward, "5")};
        int ok = cJSON_IsNumber(step) && cJSON_IsString(set) && cJSON_IsString(modality) && cJSON_IsNumber(pairs);
        for (int k = 0; k < 4; ++k) ok = ok && cJSON_IsNumber(numbers[k]);
        demo_eval_t eval = {0};
        if (ok) {
            eval.step = step->valuedouble, eval.modality = modality_index(modality->valuestring);
            eval.novel = strstr(set->valuestring, "novel") != NULL, eval.pairs = (size_t)pairs->valuedouble;
            eval.text_r1 = numbers[0]->valuedouble, eval.text_r5 = numbers[1]->valuedouble;
            eval.media_r1 = numbers[2]->valuedouble, eval.media_r5 = numbers[3]->valuedouble;
        }
        cJSON_Delete(root);
        if (!ok || eval.modality < 1) continue;
        if (evals->count == capacity) {
            capacity = capacity ? 2 * capacity : 64;
            demo_eval_t *grown = realloc(evals->items, capacity * sizeof *grown);
            if (!grown) break;
            evals->items = grown;
        }
        evals->items[evals->count++] = eval;
    }
    free(line);
    fclose(file);
    if (evals->count == 0) fprintf(stderr, "uform_demo_report: %s/eval.jsonl has no evaluations\n", dir);
    return evals->count ? 0 : -1;
}

static void read_manifest(const char *dir, const char *name, demo_items_t *items) {
    FILE *file = open_in(dir, name, 0);
    if (!file) return;
    char *line = NULL;
    size_t length = 0;
    static const char *const keys[4] = {NULL, "image", "video", "audio"};
    while (getline(&line, &length, file) > 0) {
        cJSON *root = cJSON_Parse(line);
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(root, "text");
        for (int m = 1; m < 4 && cJSON_IsString(text); ++m) {
            const cJSON *path = cJSON_GetObjectItemCaseSensitive(root, keys[m]);
            if (!cJSON_IsString(path)) continue;
            demo_item_t *grown = realloc(items->items, (items->count + 1) * sizeof *grown);
            if (!grown) break;
            items->items = grown;
            items->items[items->count++] = (demo_item_t){copy(text->valuestring), copy(path->valuestring), m};
        }
        cJSON_Delete(root);
    }
    free(line);
    fclose(file);
}

static void read_search(const char *dir, const char *results, demo_search_t *search) {
    FILE *file = open_in(dir, results, 1);
    if (!file) return;
    char *line = NULL;
    size_t length = 0;
    while (getline(&line, &length, file) > 0) {
        cJSON *root = cJSON_Parse(line);
        const cJSON *rank = cJSON_GetObjectItemCaseSensitive(root, "rank");
        const cJSON *score = cJSON_GetObjectItemCaseSensitive(root, "score");
        const cJSON *modality = cJSON_GetObjectItemCaseSensitive(root, "modality");
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(root, "path");
        if (cJSON_IsNumber(rank) && cJSON_IsNumber(score) && cJSON_IsString(modality) && cJSON_IsString(path)) {
            demo_hit_t *grown = realloc(search->hits, (search->count + 1) * sizeof *grown);
            if (grown) {
                search->hits = grown;
                search->hits[search->count++] = (demo_hit_t){(size_t)rank->valuedouble, score->valuedouble,
                                                             modality_index(modality->valuestring), copy(path->valuestring)};
            }
        }
        cJSON_Delete(root);
    }
    free(line);
    fclose(file);
}

static void read_searches(const char *dir, demo_run_t *run) {
    FILE *file = open_in(dir, "searches.tsv", 0);
    if (!file) return;
    run->searched = 1;
    char line[4096];
    while (run->search_count < sizeof run->searches / sizeof run->searches[0] && fgets(line, sizeof line, file)) {
        line[strcspn(line, "\n")] = 0;
        char *query = strchr(line, '\t'), *results = query ? strchr(query + 1, '\t') : NULL;
        if (!results) continue;
        *query++ = 0, *results++ = 0;
        demo_search_t *search = &run->searches[run->search_count++];
        snprintf(search->kind, sizeof search->kind, "%.15s", line);
        search->query = copy(query);
        read_search(dir, results, search);
    }
    fclose(file);
}

static void read_times(const char *dir, demo_run_t *run) {
    FILE *file = open_in(dir, "times.tsv", 0);
    if (!file) return;
    char line[256];
    while (run->stage_count < sizeof run->stages / sizeof run->stages[0] && fgets(line, sizeof line, file)) {
        demo_stage_t *stage = &run->stages[run->stage_count];
        if (sscanf(line, "%31s %lf %lf", stage->name, &stage->wall, &stage->cpu) == 3) run->stage_count += 1;
    }
    fclose(file);
}

int demo_run_read(const char *dir, demo_run_t *run) {
    memset(run, 0, sizeof *run);
    run->dir = dir;
    if (read_log(dir, &run->log) || read_evals(dir, &run->evals)) return -1;
    read_manifest(dir, "data/heldout.jsonl", &run->items);
    read_manifest(dir, "data/novel.jsonl", &run->items);
    read_manifest(dir, "data/train.jsonl", &run->items);
    read_searches(dir, run);
    read_times(dir, run);
    return 0;
}

void demo_run_free(demo_run_t *run) {
    free(run->log.steps), free(run->log.seconds), free(run->log.loss), free(run->log.learning_rate);
    free(run->evals.items);
    for (size_t i = 0; i < run->items.count; ++i) free(run->items.items[i].text), free(run->items.items[i].path);
    free(run->items.items);
    for (size_t s = 0; s < run->search_count; ++s) {
        for (size_t h = 0; h < run->searches[s].count; ++h) free(run->searches[s].hits[h].path);
        free(run->searches[s].hits), free(run->searches[s].query);
    }
    memset(run, 0, sizeof *run);
}

const demo_item_t *demo_run_find(const demo_run_t *run, const char *path) {
    /* Manifest paths are relative to data/ ("heldout/image-00012.png"); the index may hold
     * "build/demo/data/heldout/image-00012.png": compare the tail. */
    size_t length = strlen(path);
    for (size_t i = 0; i < run->items.count; ++i) {
        const char *relative = run->items.items[i].path;
        size_t tail = strlen(relative);
        if (tail <= length && strcmp(path + length - tail, relative) == 0 && (tail == length || path[length - tail - 1] == '/'))
            return &run->items.items[i];
    }
    return NULL;
}

const demo_eval_t *demo_run_final(const demo_run_t *run, int modality, int novel) {
    const demo_eval_t *last = NULL;
    for (size_t i = 0; i < run->evals.count; ++i) {
        const demo_eval_t *eval = &run->evals.items[i];
        if (eval->modality == modality && eval->novel == novel && (!last || eval->step >= last->step)) last = eval;
    }
    return last;
}
