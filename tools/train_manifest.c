#include "train_manifest.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t fnv1a(const char *bytes, size_t length) {
    uint64_t hash = 1469598103934665603ull;
    for (size_t i = 0; i < length; ++i) hash = (hash ^ (unsigned char)bytes[i]) * 1099511628211ull;
    return hash;
}

static char *copy(const char *text, size_t length) {
    char *result = malloc(length + 1);
    if (result) memcpy(result, text, length), result[length] = 0;
    return result;
}

/* `relative` joined with the manifest's folder unless it is absolute. */
static char *join(const char *manifest_path, const char *relative) {
    if (relative[0] == '/') return copy(relative, strlen(relative));
    const char *slash = strrchr(manifest_path, '/');
    size_t folder = slash ? (size_t)(slash - manifest_path) + 1 : 0;
    char *result = malloc(folder + strlen(relative) + 1);
    if (!result) return NULL;
    memcpy(result, manifest_path, folder);
    strcpy(result + folder, relative);
    return result;
}

static int parse_line(const char *path, const char *json, size_t number, manifest_line_t *line, char *error,
                      size_t capacity) {
    memset(line, 0, sizeof *line);
    line->number = number;
    cJSON *root = cJSON_Parse(json);
    if (!cJSON_IsObject(root)) {
        snprintf(error, capacity, "%s:%zu: not a JSON object", path, number);
        cJSON_Delete(root);
        return -1;
    }
    int result = -1;
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(root, "text");
    const cJSON *choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
    const cJSON *target = cJSON_GetObjectItemCaseSensitive(root, "target");
    static const char *const media[4] = {NULL, "image", "video", "audio"};
    int found = 0;
    const cJSON *file = NULL;
    for (int m = 1; m < 4; ++m) {
        const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, media[m]);
        if (!item) continue;
        if (found) {
            snprintf(error, capacity, "%s:%zu: '%s' and '%s' in one line (a pair has one media file)", path, number,
                     media[found], media[m]);
            goto done;
        }
        found = m, file = item;
    }
    if (!cJSON_IsString(text)) {
        snprintf(error, capacity, "%s:%zu: 'text' is %s (every line needs a string)", path, number,
                 text ? "not a string" : "missing");
        goto done;
    }
    line->text_length = strlen(text->valuestring);
    line->text = copy(text->valuestring, line->text_length);
    line->text_hash = fnv1a(line->text, line->text_length);
    if (found) {
        if (choices) {
            snprintf(error, capacity, "%s:%zu: 'choices' with '%s' (a line is a pair or a choice example)", path,
                     number, media[found]);
            goto done;
        }
        if (!cJSON_IsString(file) || !file->valuestring[0]) {
            snprintf(error, capacity, "%s:%zu: '%s' must be a non-empty string (a file path)", path, number,
                     media[found]);
            goto done;
        }
        line->modality = found;
        line->path = join(path, file->valuestring);
    } else if (choices) {
        if (!cJSON_IsString(choices) || !choices->valuestring[0]) {
            snprintf(error, capacity, "%s:%zu: 'choices' must be a non-empty string of the legal next bytes", path,
                     number);
            goto done;
        }
        line->choices_length = strlen(choices->valuestring);
        line->choices = copy(choices->valuestring, line->choices_length);
        unsigned char seen[256] = {0};
        for (size_t i = 0; i < line->choices_length; ++i) {
            unsigned char byte = (unsigned char)line->choices[i];
            if (seen[byte]) {
                snprintf(error, capacity, "%s:%zu: 'choices' lists byte '%c' twice", path, number, byte);
                goto done;
            }
            seen[byte] = 1;
        }
        if (!cJSON_IsString(target) || strlen(target->valuestring) != 1) {
            snprintf(error, capacity, "%s:%zu: 'target' is %s (one byte among 'choices')", path, number,
                     !target ? "missing" : "not a one-byte string");
            goto done;
        }
        line->target = (unsigned char)target->valuestring[0];
        if (!seen[line->target]) {
            snprintf(error, capacity, "%s:%zu: 'target' '%c' is not among 'choices' \"%s\"", path, number, line->target,
                     line->choices);
            goto done;
        }
    } else {
        snprintf(error, capacity, "%s:%zu: the line has no 'image', 'video', 'audio' or 'choices'", path, number);
        goto done;
    }
    if (!line->text || (found && !line->path) || (choices && !line->choices)) {
        snprintf(error, capacity, "%s:%zu: out of memory", path, number);
        goto done;
    }
    result = 0;
done:
    cJSON_Delete(root);
    return result;
}

static void line_free(manifest_line_t *line) { free(line->text), free(line->path), free(line->choices); }

int manifest_read(const char *path, manifest_t *manifest, char *error, size_t capacity) {
    memset(manifest, 0, sizeof *manifest);
    FILE *file = fopen(path, "rb");
    if (!file) {
        snprintf(error, capacity, "cannot open '%s': %s", path, strerror(errno));
        return -1;
    }
    manifest->path = copy(path, strlen(path));
    char *buffer = NULL;
    size_t buffer_capacity = 0, number = 0, lines_capacity = 0;
    ssize_t length;
    int status = manifest->path ? 0 : -1;
    while (status == 0 && (length = getline(&buffer, &buffer_capacity, file)) >= 0) {
        number += 1;
        size_t used = (size_t)length;
        while (used && (buffer[used - 1] == '\n' || buffer[used - 1] == '\r' || buffer[used - 1] == ' ')) --used;
        buffer[used] = 0;
        if (used == 0) continue;
        if (manifest->count == lines_capacity) {
            lines_capacity = lines_capacity ? 2 * lines_capacity : 256;
            manifest_line_t *grown = realloc(manifest->lines, lines_capacity * sizeof *grown);
            if (!grown) {
                snprintf(error, capacity, "%s: out of memory at line %zu", path, number);
                status = -1;
                break;
            }
            manifest->lines = grown;
        }
        status = parse_line(path, buffer, number, &manifest->lines[manifest->count], error, capacity);
        if (status == 0) manifest->count += 1;
        else line_free(&manifest->lines[manifest->count]);
    }
    free(buffer);
    fclose(file);
    if (status == 0 && manifest->count == 0) {
        snprintf(error, capacity, "%s: no lines", path);
        status = -1;
    }
    if (status != 0) manifest_free(manifest);
    return status;
}

void manifest_free(manifest_t *manifest) {
    for (size_t i = 0; i < manifest->count; ++i) line_free(&manifest->lines[i]);
    free(manifest->lines), free(manifest->path);
    memset(manifest, 0, sizeof *manifest);
}

/* ---- the sampler ---- */

static uint64_t splitmix(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Epoch e's order: a Fisher–Yates shuffle from (seed, e). */
static void shuffle(sampler_t *sampler) {
    size_t n = sampler->manifest->count;
    uint64_t state = sampler->seed ^ (0xD1B54A32D192ED03ull * (sampler->epoch + 1));
    for (size_t i = 0; i < n; ++i) sampler->order[i] = i;
    for (size_t i = n; i > 1; --i) {
        size_t j = (size_t)(splitmix(&state) % i);
        size_t swap = sampler->order[i - 1];
        sampler->order[i - 1] = sampler->order[j], sampler->order[j] = swap;
    }
    sampler->position = 0;
}

int sampler_init(sampler_t *sampler, const manifest_t *manifest, uint64_t seed) {
    memset(sampler, 0, sizeof *sampler);
    sampler->manifest = manifest, sampler->seed = seed;
    sampler->order = malloc(manifest->count * sizeof *sampler->order);
    sampler->bad = calloc(manifest->count, 1);
    if (!sampler->order || !sampler->bad) {
        sampler_free(sampler);
        return -1;
    }
    shuffle(sampler);
    return 0;
}

void sampler_free(sampler_t *sampler) {
    free(sampler->order), free(sampler->bad);
    sampler->order = NULL, sampler->bad = NULL;
}

static int same_text(const manifest_line_t *a, const manifest_line_t *b) {
    return a->text_hash == b->text_hash && a->text_length == b->text_length && memcmp(a->text, b->text, a->text_length) == 0;
}

/* 0 usable; 1 holds the line itself; 2 only its text twin. */
static int conflict(const sampler_t *sampler, const size_t *lines, size_t taken, size_t candidate) {
    const manifest_line_t *all = sampler->manifest->lines;
    int result = 0;
    for (size_t i = 0; i < taken; ++i) {
        if (lines[i] == candidate) return 1;
        if (same_text(&all[lines[i]], &all[candidate])) result = 2;
    }
    return result;
}

size_t sampler_next(sampler_t *sampler, size_t batch, size_t *lines) {
    size_t n = sampler->manifest->count, usable = 0;
    for (size_t i = 0; i < n; ++i) usable += !sampler->bad[i];
    sampler->batches += 1;
    if (batch >= usable) {
        size_t taken = 0;
        for (size_t i = 0; i < n; ++i)
            if (!sampler->bad[i]) {
                if (conflict(sampler, lines, taken, i) == 2) sampler->twins_unavoidable = 1;
                lines[taken++] = i;
            }
        return taken;
    }
    size_t taken = 0;
    while (taken < batch) {
        if (sampler->position == n) {
            sampler->epoch += 1;
            shuffle(sampler);
        }
        /* The first line of the rest of this epoch that fits; a text twin only when nothing else does. */
        size_t pick = SIZE_MAX, twin = SIZE_MAX;
        for (size_t j = sampler->position; j < n && pick == SIZE_MAX; ++j) {
            size_t line = sampler->order[j];
            if (sampler->bad[line]) continue;
            int kind = conflict(sampler, lines, taken, line);
            if (kind == 0) pick = j;
            else if (kind == 2 && twin == SIZE_MAX) twin = j;
        }
        if (pick == SIZE_MAX && twin != SIZE_MAX) {
            pick = twin;
            sampler->twins_unavoidable = 1;
        }
        if (pick == SIZE_MAX) {
            /* Nothing left in this epoch fits (bad lines, or lines already in the batch): the next epoch. */
            sampler->position = n;
            continue;
        }
        size_t swap = sampler->order[sampler->position];
        sampler->order[sampler->position] = sampler->order[pick], sampler->order[pick] = swap;
        lines[taken++] = sampler->order[sampler->position++];
    }
    return taken;
}
