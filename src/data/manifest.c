/*
 * JSON-lines manifests (uform.h, "Data"): one object per line, paths relative to the manifest's
 * folder. A pair {"text", "image"|"video"|"audio"}, a choice example {"text", "choices", "target"},
 * an item to index {"path", "modality"?} or a text to index {"text", "id"?}. Blank lines are
 * passed over; line numbers count every line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "data/source.h"
#include "io/json.h"

static char *copy(const char *text, size_t length) {
    char *result = malloc(length + 1);
    if (result) memcpy(result, text, length), result[length] = 0;
    return result;
}

/* `relative` under the manifest's folder unless it is absolute. */
static char *join(const char *manifest_path, const char *relative) {
    const char *slash = strrchr(manifest_path, '/');
    return uform__data_path_join(manifest_path, slash ? (size_t)(slash - manifest_path) + 1 : 0, relative);
}

static const char *const media_keys[4] = {NULL, "image", "video", "audio"};

/* Fills `line` from one parsed object; answers 0, or -1 with the reason in `why` (UFORM_OUT_OF_MEMORY
 * in *status when an allocation failed). */
static int parse_object(const char *manifest, const cJSON *root, uform__line_t *line, char *why, size_t capacity,
                        uform_status_t *status) {
    *status = UFORM_FORMAT;
    if (!cJSON_IsObject(root)) return snprintf(why, capacity, "not a JSON object"), -1;
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(root, "text");
    const cJSON *choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
    const cJSON *target = cJSON_GetObjectItemCaseSensitive(root, "target");
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(root, "path");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(root, "id");
    const cJSON *modality = cJSON_GetObjectItemCaseSensitive(root, "modality");
    int found = 0;
    const cJSON *file = NULL;
    for (int m = 1; m < 4; ++m) {
        const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, media_keys[m]);
        if (!item) continue;
        if (found) return snprintf(why, capacity, "'%s' and '%s' in one line (a pair has one media file)", media_keys[found], media_keys[m]), -1;
        found = m, file = item;
    }
    if (path && !found && !text) {
        /* An item to index. */
        if (!cJSON_IsString(path) || !path->valuestring[0]) return snprintf(why, capacity, "'path' must be a non-empty string"), -1;
        line->kind = UFORM__LINE_FILE;
        if (modality) {
            static const char *const names[4] = {"text", "image", "video", "audio"};
            for (int m = 0; m < 4 && cJSON_IsString(modality); ++m)
                if (strcmp(modality->valuestring, names[m]) == 0) line->modality = m;
            if (line->modality < 0) return snprintf(why, capacity, "\"modality\" should be one of text, image, video, audio"), -1;
        }
        line->path = join(manifest, path->valuestring);
        line->key = line->path ? copy(line->path, strlen(line->path)) : NULL;
        if (!line->path || !line->key) return *status = UFORM_OUT_OF_MEMORY, snprintf(why, capacity, "out of memory"), -1;
        return 0;
    }
    if (!cJSON_IsString(text))
        return snprintf(why, capacity, "'text' is %s (every line needs a string)", text ? "not a string" : "missing"), -1;
    line->text_length = strlen(text->valuestring);
    line->text = copy(text->valuestring, line->text_length);
    if (!line->text) return *status = UFORM_OUT_OF_MEMORY, snprintf(why, capacity, "out of memory"), -1;
    line->text_hash = uform__fnv1a64(line->text, line->text_length, UFORM__DATA_HASH_SEED);
    if (found) {
        if (choices) return snprintf(why, capacity, "'choices' with '%s' (a line is a pair or a choice example)", media_keys[found]), -1;
        if (!cJSON_IsString(file) || !file->valuestring[0])
            return snprintf(why, capacity, "'%s' must be a non-empty string (a file path)", media_keys[found]), -1;
        line->kind = UFORM__LINE_PAIR, line->modality = found;
        line->path = join(manifest, file->valuestring);
        line->key = line->path ? copy(line->path, strlen(line->path)) : NULL;
        if (!line->path || !line->key) return *status = UFORM_OUT_OF_MEMORY, snprintf(why, capacity, "out of memory"), -1;
        return 0;
    }
    if (choices) {
        if (!cJSON_IsString(choices) || !choices->valuestring[0])
            return snprintf(why, capacity, "'choices' must be a non-empty string of the legal next bytes"), -1;
        line->kind = UFORM__LINE_CHOICE;
        line->choices_length = strlen(choices->valuestring);
        line->choices = copy(choices->valuestring, line->choices_length);
        if (!line->choices) return *status = UFORM_OUT_OF_MEMORY, snprintf(why, capacity, "out of memory"), -1;
        unsigned char seen[256] = {0};
        for (size_t i = 0; i < line->choices_length; ++i) {
            unsigned char byte = (unsigned char)line->choices[i];
            if (seen[byte]) return snprintf(why, capacity, "'choices' lists byte '%c' twice", byte), -1;
            seen[byte] = 1;
        }
        if (!cJSON_IsString(target) || strlen(target->valuestring) != 1)
            return snprintf(why, capacity, "'target' is %s (one byte among 'choices')", !target ? "missing" : "not a one-byte string"), -1;
        line->target = (unsigned char)target->valuestring[0];
        if (!seen[line->target])
            return snprintf(why, capacity, "'target' '%c' is not among 'choices' \"%.64s\"", line->target, line->choices), -1;
        return 0;
    }
    /* A text to index, named by its "id". */
    line->kind = UFORM__LINE_TEXT, line->modality = UFORM_MODALITY_TEXT;
    if (id && !cJSON_IsString(id)) return snprintf(why, capacity, "'id' must be a string"), -1;
    if (cJSON_IsString(id)) line->key = copy(id->valuestring, strlen(id->valuestring));
    else {
        char key[4200];
        snprintf(key, sizeof key, "%s:%zu", manifest, line->number);
        line->key = copy(key, strlen(key));
    }
    if (!line->key) return *status = UFORM_OUT_OF_MEMORY, snprintf(why, capacity, "out of memory"), -1;
    return 0;
}

/* Reads the manifest at `path` into `lines`. A malformed line becomes a BAD line (skip_bad) or fails
 * the call with UFORM_FORMAT and `error` filled. */
static uform_status_t read_manifest(const char *path, int skip_bad, uform__lines_t *lines, uform_data_error_t *error,
                                    uform_outcome_t *outcome, const char *function) {
    FILE *file = fopen(path, "rb");
    if (!file) {
        int why = errno;
        uform_status_t status = why == ENOMEM ? UFORM_OUT_OF_MEMORY : UFORM_IO;
        uform__data_error_set(error, status, 0, SIZE_MAX, path, NULL, "cannot open the manifest: %s", strerror(why));
        return uform__fail(outcome, status, function, "cannot open '%s': %s", path, strerror(why));
    }
    const char *source = uform__lines_add_source(lines, path);
    if (!source) {
        fclose(file);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the manifest's name");
    }
    char *buffer = NULL;
    size_t buffer_capacity = 0, number = 0;
    ssize_t length;
    uform_status_t status = UFORM_OK;
    while (status == UFORM_OK && (errno = 0, length = getline(&buffer, &buffer_capacity, file)) >= 0) {
        number += 1;
        size_t used = (size_t)length;
        while (used && (buffer[used - 1] == '\n' || buffer[used - 1] == '\r' || buffer[used - 1] == ' ')) --used;
        buffer[used] = 0;
        if (used == 0) continue;
        uform__line_t *line = uform__lines_add(lines);
        if (!line) {
            status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "%s: out of memory at line %zu", path, number);
            break;
        }
        line->number = number, line->source = source;
        cJSON *root = NULL;
        uform_status_t parsed = uform__json_parse(buffer, used, &root, NULL, NULL);
        char why[UFORM_OUTCOME_MESSAGE_CAPACITY];
        uform_status_t kind = UFORM_FORMAT;
        int bad = 0;
        if (parsed == UFORM_OUT_OF_MEMORY) bad = 1, kind = UFORM_OUT_OF_MEMORY, snprintf(why, sizeof why, "out of memory");
        else if (parsed != UFORM_OK) bad = 1, snprintf(why, sizeof why, "not a JSON object");
        else bad = parse_object(path, root, line, why, sizeof why, &kind) != 0;
        cJSON_Delete(root);
        if (!bad) continue;
        if (kind == UFORM_OUT_OF_MEMORY) {
            status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "%s:%zu: out of memory", path, number);
            break;
        }
        if (!skip_bad) {
            uform__data_error_set(error, UFORM_FORMAT, number, SIZE_MAX, path, NULL, "%s", why);
            status = uform__fail(outcome, UFORM_FORMAT, function, "%s:%zu: %s", path, number, why);
            break;
        }
        uform__line_clear(line);
        line->kind = UFORM__LINE_BAD;
        line->message = copy(why, strlen(why));
        char key[4200];
        snprintf(key, sizeof key, "%s:%zu", path, number);
        line->key = copy(key, strlen(key));
        if (!line->message || !line->key)
            status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "%s:%zu: out of memory", path, number);
    }
    if (status == UFORM_OK && (ferror(file) || errno == ENOMEM))
        status = uform__fail(outcome, errno == ENOMEM ? UFORM_OUT_OF_MEMORY : UFORM_IO, function,
                             errno == ENOMEM ? "cannot allocate a line of '%s': %s" : "cannot read '%s': %s", path, strerror(errno));
    free(buffer);
    fclose(file);
    return status;
}

static uform_status_t add(const char *path, const uform_dataset_options_t *options, uform__data_items_t *items,
                          uform_data_error_t *error, uform_outcome_t *outcome, const char *function) {
    return read_manifest(path, options->skip_bad, &items->lines, error, outcome, function);
}

/* A manifest's lines are its samples as they stand: nothing to finish. */
const uform__data_source_t uform__data_source_manifest = {add, NULL};
