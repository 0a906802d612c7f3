/*
 * Captions for indexed files from a manifest (captions.h), read through the library's dataset
 * reader (uform_dataset_open / uform_dataset_read, docs/data.md): the manifest format, relative
 * paths and malformed lines are the library's business, so `--captions` reads exactly what
 * `uform train` and `uform index` read.
 */
#include "captions.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry_t {
    char *path;     /* resolved (realpath) */
    size_t text;    /* offset of its caption in the texts */
} entry_t;

static int by_path(const void *a, const void *b) { return strcmp(((const entry_t *)a)->path, ((const entry_t *)b)->path); }

/* The growing list of (resolved path, caption) pairs read so far. */
typedef struct pairs_t {
    entry_t *entries;
    size_t count, allocated;
    char *texts;
    size_t texts_used, texts_capacity;
} pairs_t;

static void pairs_free(pairs_t *pairs) {
    for (size_t i = 0; i < pairs->count; ++i) free(pairs->entries[i].path);
    free(pairs->entries);
    free(pairs->texts);
}

/* Adds one pair (the caption NUL-terminated); answers 0, or -1 when memory ran out. */
static int pairs_add(pairs_t *pairs, const char *resolved, const char *text, size_t length) {
    if (pairs->count == pairs->allocated) {
        size_t wanted = pairs->allocated ? 2 * pairs->allocated : 64;
        entry_t *grown = realloc(pairs->entries, wanted * sizeof *grown);
        if (!grown) return -1;
        pairs->entries = grown, pairs->allocated = wanted;
    }
    if (pairs->texts_used + length + 1 > pairs->texts_capacity) {
        size_t wanted = pairs->texts_capacity ? pairs->texts_capacity : 4096;
        while (wanted < pairs->texts_used + length + 1) wanted *= 2;
        char *grown = realloc(pairs->texts, wanted);
        if (!grown) return -1;
        pairs->texts = grown, pairs->texts_capacity = wanted;
    }
    char *path = strdup(resolved);
    if (!path) return -1;
    memcpy(pairs->texts + pairs->texts_used, text, length);
    pairs->texts[pairs->texts_used + length] = 0;
    pairs->entries[pairs->count++] = (entry_t){path, pairs->texts_used};
    pairs->texts_used += length + 1;
    return 0;
}

/* Reads every pair of the manifest: a medium with its caption. Items that are not pairs (texts,
 * files without a caption) and items that cannot be read (a file that is not there) carry no
 * caption and are passed over. Answers 0, or -1 with the reason in `error`. */
static int read_pairs(const char *manifest, pairs_t *pairs, size_t *left_out, char *error, size_t capacity) {
    uform_dataset_options_t options = {0};
    options.source = UFORM_DATASET_MANIFEST, options.path = manifest;
    /* A line that is not a pair (no caption, not JSON) names no caption: leave it out, counted. */
    options.skip_bad = 1;
    uform_dataset_t dataset = NULL;
    uform_outcome_t outcome = {0};
    char line[600];
    if (uform_dataset_open(&options, &dataset, NULL, &outcome) != UFORM_OK) {
        uform_outcome_format(&outcome, line, sizeof line);
        snprintf(error, capacity, "cannot read --captions '%s': %s", manifest, line);
        return -1;
    }
    uform_dataset_read_t read = {0};
    read.dataset = dataset;
    int status = 0;
    for (;;) {
        uform_status_t got = uform_dataset_read(&read);
        if (got == UFORM_OUT_OF_MEMORY || got == UFORM_INVALID_ARGUMENT) {
            uform_outcome_format(&read.outcome, line, sizeof line);
            snprintf(error, capacity, "cannot read --captions '%s': %s", manifest, line);
            status = -1;
            break;
        }
        if (read.done) break;
        char resolved[PATH_MAX], key[PATH_MAX];
        const uform_dataset_item_t *item = &read.item;
        if (got != UFORM_OK || !item->text || item->modality == UFORM_MODALITY_TEXT || item->key_length >= sizeof key) continue;
        memcpy(key, item->key, item->key_length);
        key[item->key_length] = 0;
        if (!realpath(key, resolved)) continue;
        if (pairs_add(pairs, resolved, item->text, item->text_length)) {
            snprintf(error, capacity, "out of memory reading --captions '%s'", manifest);
            status = -1;
            break;
        }
    }
    uform_dataset_description_t description;
    uform_dataset_describe(dataset, &description);
    *left_out = description.bad;
    uform_dataset_free(dataset);
    return status;
}

int serve_captions_load(const char *manifest, uform_index_t index, serve_captions_t *captions, char *error, size_t capacity) {
    memset(captions, 0, sizeof *captions);
    pairs_t pairs = {0};
    if (read_pairs(manifest, &pairs, &captions->left_out, error, capacity)) {
        pairs_free(&pairs);
        return -1;
    }
    uform_index_description_t description;
    uform_index_describe(index, &description);
    if (!(captions->by_item = calloc(description.count ? description.count : 1, sizeof *captions->by_item))) {
        pairs_free(&pairs);
        snprintf(error, capacity, "out of memory for the captions");
        return -1;
    }
    qsort(pairs.entries, pairs.count, sizeof *pairs.entries, by_path);
    captions->count = description.count;
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
        const entry_t *found = bsearch(&key, pairs.entries, pairs.count, sizeof *pairs.entries, by_path);
        if (found) captions->by_item[item] = pairs.texts + found->text, captions->matched += 1;
    }
    /* The captions keep the texts; the paths were only for matching. */
    captions->texts = pairs.texts;
    pairs.texts = NULL;
    pairs_free(&pairs);
    return 0;
}

void serve_captions_free(serve_captions_t *captions) {
    free(captions->by_item);
    free(captions->texts);
    memset(captions, 0, sizeof *captions);
}
