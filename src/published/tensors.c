/*
 * The tensor set of a tower (published.h): its weight files searched together by name. A folder
 * holds one safetensors file, or shards listed by an index (model.safetensors.index.json maps
 * every tensor name to its shard), or PyTorch files read through the whitelisted unpickler
 * (io/torch_file.h); the tensors of all of them point into their mappings.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "io/json.h"
#include "io/torch_file.h"
#include "published/published.h"

static int ends_with(const char *text, const char *suffix) {
    size_t length = strlen(text), suffix_length = strlen(suffix);
    return length >= suffix_length && strcmp(text + length - suffix_length, suffix) == 0;
}

static void describe(uform__tensor_set_t *set, const char *name) {
    size_t used = strlen(set->description);
    if (used + 1 < sizeof set->description)
        snprintf(set->description + used, sizeof set->description - used, "%s%s", used ? ", " : "", name);
}

uform_status_t uform__tensor_set_open(uform__tensor_set_t *set, const char *folder, const char *name,
                                      uform_outcome_t *outcome, const char *function) {
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", folder, name) >= sizeof path)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "the path '%s/%s' is too long", folder, name);
    uform_status_t status;
    if (ends_with(name, ".safetensors")) {
        if (set->safetensors_count == UFORM__TENSOR_FILES_MAX)
            return uform__fail(outcome, UFORM_UNSUPPORTED, function, "more than %d weight files", UFORM__TENSOR_FILES_MAX);
        status = uform__safetensors_open(path, &set->safetensors[set->safetensors_count], outcome);
        if (status == UFORM_OK) set->safetensors_count += 1;
    } else {
        if (set->torch_count == UFORM__TENSOR_FILES_MAX)
            return uform__fail(outcome, UFORM_UNSUPPORTED, function, "more than %d weight files", UFORM__TENSOR_FILES_MAX);
        status = uform__torch_open(path, &set->torch[set->torch_count], outcome);
        if (status == UFORM_OK) set->torch_count += 1;
    }
    if (status != UFORM_OK) {
        /* The reader names its own function; the load's is the public one. */
        snprintf(outcome->function, sizeof outcome->function, "%s", function);
        return status;
    }
    describe(set, name);
    return UFORM_OK;
}

uform_status_t uform__tensor_set_open_index(uform__tensor_set_t *set, const char *folder, const char *index_name,
                                            uform_outcome_t *outcome, const char *function) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", folder, index_name);
    FILE *file = fopen(path, "rb");
    if (!file) /* fopen allocates: its ENOMEM is memory, not the file */
        return uform__fail(outcome, errno == ENOMEM ? UFORM_OUT_OF_MEMORY : UFORM_IO, function, "cannot open '%s': %s",
                           path, strerror(errno));
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    if (size < 0 || size > (64l << 20)) {
        fclose(file);
        return uform__fail(outcome, UFORM_FORMAT, function, "'%s' is not an index of at most 64 MiB", path);
    }
    char *text = malloc((size_t)size + 1);
    if (!text) {
        fclose(file);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate %lld bytes to read '%s'", (long long)size + 1, path);
    }
    size_t got = fread(text, 1, (size_t)size, file);
    fclose(file);
    text[got] = '\0';
    cJSON *root = NULL;
    size_t error_at = 0;
    uform_status_t status = uform__json_parse(text, got, &root, NULL, &error_at);
    free(text);
    if (status != UFORM_OK)
        return uform__fail(outcome, status, function, status == UFORM_FORMAT ? "'%s' is not JSON (byte %zu)" : "cannot parse '%s'",
                           index_name, error_at);
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!cJSON_IsObject(map)) {
        cJSON_Delete(root);
        return uform__fail(outcome, UFORM_FORMAT, function, "'%s' has no \"weight_map\" object", index_name);
    }
    /* Each distinct shard once, in the order the map first names it. */
    char opened[UFORM__TENSOR_FILES_MAX][256];
    size_t count = 0;
    const cJSON *entry;
    cJSON_ArrayForEach(entry, map) {
        if (!cJSON_IsString(entry) || !entry->valuestring[0] || strchr(entry->valuestring, '/') ||
            strlen(entry->valuestring) >= sizeof opened[0]) {
            status = uform__fail(outcome, UFORM_FORMAT, function,
                                 "'%s': weight_map[\"%s\"] is not the name of a file in the folder", index_name,
                                 entry->string ? entry->string : "");
            break;
        }
        size_t seen = 0;
        while (seen < count && strcmp(opened[seen], entry->valuestring) != 0) ++seen;
        if (seen < count) continue;
        if (count == UFORM__TENSOR_FILES_MAX) {
            status = uform__fail(outcome, UFORM_UNSUPPORTED, function, "'%s' names more than %d shards", index_name,
                                 UFORM__TENSOR_FILES_MAX);
            break;
        }
        snprintf(opened[count++], sizeof opened[0], "%s", entry->valuestring);
        status = uform__tensor_set_open(set, folder, entry->valuestring, outcome, function);
        if (status != UFORM_OK) break;
    }
    cJSON_Delete(root);
    if (status == UFORM_OK && count == 0)
        status = uform__fail(outcome, UFORM_FORMAT, function, "'%s' names no shard", index_name);
    return status;
}

static const uform__safetensors_tensor_t *find_exact(const uform__tensor_set_t *set, const char *name) {
    for (size_t i = 0; i < set->safetensors_count; ++i) {
        const uform__safetensors_tensor_t *tensor = uform__safetensors_find(set->safetensors[i], name);
        if (tensor) return tensor;
    }
    for (size_t i = 0; i < set->torch_count; ++i) {
        const uform__safetensors_tensor_t *tensor = uform__torch_find(set->torch[i], name);
        if (tensor) return tensor;
    }
    return NULL;
}

const uform__safetensors_tensor_t *uform__tensor_set_find(const uform__tensor_set_t *set, const char *name) {
    const uform__safetensors_tensor_t *tensor = find_exact(set, name);
    if (tensor || !set->prefix[0]) return tensor;
    char prefixed[512];
    if ((size_t)snprintf(prefixed, sizeof prefixed, "%s%s", set->prefix, name) >= sizeof prefixed) return NULL;
    return find_exact(set, prefixed);
}

void uform__tensor_set_each(const uform__tensor_set_t *set, void (*visit)(void *state, const uform__safetensors_tensor_t *),
                            void *state) {
    for (size_t i = 0; i < set->safetensors_count; ++i)
        for (size_t t = 0; t < uform__safetensors_count(set->safetensors[i]); ++t)
            visit(state, uform__safetensors_at(set->safetensors[i], t));
    for (size_t i = 0; i < set->torch_count; ++i)
        for (size_t t = 0; t < uform__torch_count(set->torch[i]); ++t) visit(state, uform__torch_at(set->torch[i], t));
}

void uform__tensor_set_close(uform__tensor_set_t *set) {
    for (size_t i = 0; i < set->safetensors_count; ++i) uform__safetensors_close(set->safetensors[i]);
    for (size_t i = 0; i < set->torch_count; ++i) uform__torch_close(set->torch[i]);
    memset(set, 0, sizeof *set);
}

static int exists(const char *folder, const char *subfolder, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s%s", subfolder, name);
    return uform__published_file_exists(folder, path);
}

uform_status_t uform__tensor_set_open_transformers(uform__tensor_set_t *set, const char *folder, const char *subfolder,
                                                   uform_outcome_t *outcome, const char *function) {
    static const char *const singles[2] = {"model.safetensors", "pytorch_model.bin"};
    static const char *const indexes[2] = {"model.safetensors.index.json", "pytorch_model.bin.index.json"};
    char name[512];
    for (int i = 0; i < 2; ++i) {
        if (exists(folder, subfolder, singles[i])) {
            snprintf(name, sizeof name, "%s%s", subfolder, singles[i]);
            return uform__tensor_set_open(set, folder, name, outcome, function);
        }
        if (exists(folder, subfolder, indexes[i])) {
            char base[4096];
            snprintf(base, sizeof base, "%s/%s", folder, subfolder);
            size_t length = strlen(base);
            if (length > 1 && base[length - 1] == '/') base[length - 1] = '\0';
            return uform__tensor_set_open_index(set, base, indexes[i], outcome, function);
        }
    }
    return uform__fail(outcome, UFORM_FORMAT, function,
                       "'%s/%s' holds no weights: none of model.safetensors, model.safetensors.index.json, "
                       "pytorch_model.bin, pytorch_model.bin.index.json",
                       folder, subfolder);
}
