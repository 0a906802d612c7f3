/* Captions for indexed files from a manifest (captions.h). */
#include "captions.h"

#include <cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry_t {
    char *path;     /* resolved */
    size_t text;    /* offset of its caption in the texts */
} entry_t;

static int by_path(const void *a, const void *b) { return strcmp(((const entry_t *)a)->path, ((const entry_t *)b)->path); }

int serve_captions_load(const char *manifest, uform_index_t index, serve_captions_t *captions, char *error, size_t capacity) {
    memset(captions, 0, sizeof *captions);
    FILE *file = fopen(manifest, "r");
    if (!file) return snprintf(error, capacity, "cannot read --captions '%s': %s", manifest, strerror(errno)), -1;
    char folder[PATH_MAX];
    snprintf(folder, sizeof folder, "%s", manifest);
    char *slash = strrchr(folder, '/');
    if (slash) *slash = 0;
    else snprintf(folder, sizeof folder, ".");
    entry_t *entries = NULL;
    size_t count = 0, allocated = 0, texts_used = 0, texts_capacity = 0, line_number = 0;
    char *texts = NULL, *line = NULL;
    size_t line_capacity = 0;
    int status = 0;
    static const char *const keys[4] = {"image", "video", "audio", "path"};
    while (getline(&line, &line_capacity, file) >= 0 && status == 0) {
        ++line_number;
        if (line[strspn(line, " \t\r\n")] == 0) continue;
        cJSON *json = cJSON_Parse(line);
        if (!json) {
            snprintf(error, capacity, "--captions '%s': line %zu is not JSON", manifest, line_number);
            status = -1;
            break;
        }
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(json, "text"), *path = NULL;
        for (int k = 0; k < 4 && !cJSON_IsString(path); ++k) path = cJSON_GetObjectItemCaseSensitive(json, keys[k]);
        char joined[PATH_MAX], resolved[PATH_MAX];
        if (cJSON_IsString(text) && cJSON_IsString(path) &&
            snprintf(joined, sizeof joined, "%s%s%s", path->valuestring[0] == '/' ? "" : folder,
                     path->valuestring[0] == '/' ? "" : "/", path->valuestring) < (int)sizeof joined &&
            realpath(joined, resolved)) {
            size_t length = strlen(text->valuestring) + 1;
            if (count == allocated) {
                allocated = allocated ? allocated * 2 : 256;
                entry_t *grown = realloc(entries, allocated * sizeof *entries);
                if (!grown) status = -1;
                else entries = grown;
            }
            if (texts_used + length > texts_capacity) {
                texts_capacity = (texts_used + length) * 2;
                char *grown = realloc(texts, texts_capacity);
                if (!grown) status = -1;
                else texts = grown;
            }
            if (status == 0 && (entries[count].path = strdup(resolved))) {
                memcpy(texts + texts_used, text->valuestring, length);
                entries[count++].text = texts_used;
                texts_used += length;
            } else if (status == 0) {
                status = -1;
            }
            if (status) snprintf(error, capacity, "out of memory reading --captions '%s'", manifest);
        }
        cJSON_Delete(json);
    }
    free(line);
    fclose(file);
    uform_index_description_t description;
    uform_index_describe(index, &description);
    if (status == 0 && !(captions->by_item = calloc(description.count ? description.count : 1, sizeof *captions->by_item))) {
        snprintf(error, capacity, "out of memory for the captions");
        status = -1;
    }
    if (status == 0) {
        qsort(entries, count, sizeof *entries, by_path);
        captions->count = description.count, captions->texts = texts;
        for (size_t item = 0; item < description.count; ++item) {
            const char *stored = NULL;
            size_t length = 0;
            char path[PATH_MAX], resolved[PATH_MAX];
            uform_modality_t modality;
            if (uform_index_item(index, item, &modality, &stored, &length) != UFORM_OK || length >= sizeof path) continue;
            memcpy(path, stored, length);
            path[length] = 0;
            if (!realpath(path, resolved)) continue;
            entry_t key = {resolved, 0};
            const entry_t *found = bsearch(&key, entries, count, sizeof *entries, by_path);
            if (found) captions->by_item[item] = texts + found->text, captions->matched += 1;
        }
        texts = NULL;
    }
    for (size_t i = 0; i < count; ++i) free(entries[i].path);
    free(entries);
    free(texts);
    return status;
}

void serve_captions_free(serve_captions_t *captions) {
    free(captions->by_item);
    free(captions->texts);
    memset(captions, 0, sizeof *captions);
}
