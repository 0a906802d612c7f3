/*
 * Reading tokenizer.json values with messages that name where the value is ("model.merges[12]",
 * "normalizer.normalizers[1].type"), so a user can find the bad key in a 10 MB file.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/outcome.h"
#include "text/tokenizer_internal.h"

const char uform__text_function[] = "uform__tokenizer_from_json";

void uform__text_path(char path[UFORM__TEXT_PATH], const char *parent, const char *key) {
    if (!parent || !*parent) snprintf(path, UFORM__TEXT_PATH, "%s", key);
    else snprintf(path, UFORM__TEXT_PATH, "%s.%s", parent, key);
}

void uform__text_path_index(char path[UFORM__TEXT_PATH], const char *parent, size_t index) {
    snprintf(path, UFORM__TEXT_PATH, "%s[%zu]", parent, index);
}

const cJSON *uform__text_json_member(const cJSON *object, const char *key) {
    if (!cJSON_IsObject(object)) return NULL;
    for (const cJSON *child = object->child; child; child = child->next)
        if (child->string && strcmp(child->string, key) == 0) return child;
    return NULL;
}

uform_status_t uform__text_json_array(const cJSON *object, const char *path, const char *key, char where[UFORM__TEXT_PATH],
                                      const cJSON **list, uform_outcome_t *outcome) {
    uform__text_path(where, path, key);
    *list = uform__text_json_member(object, key);
    if (!cJSON_IsArray(*list))
        return uform__fail(outcome, UFORM_FORMAT, uform__text_function, "%s is %s, expected an array", where,
                           uform__json_kind(*list));
    return UFORM_OK;
}

uform_status_t uform__text_json_each(const cJSON *list, const char *where, uform__text_item_fn item, void *context,
                                     uform_outcome_t *outcome) {
    size_t index = 0;
    for (const cJSON *child = list->child; child; child = child->next, ++index) {
        char child_path[UFORM__TEXT_PATH];
        uform__text_path_index(child_path, where, index);
        uform_status_t status = item(context, index, child, child_path, outcome);
        if (status != UFORM_OK) return status;
    }
    return UFORM_OK;
}

uform_status_t uform__text_json_bool(const cJSON *object, const char *key, const char *path, int fallback, int *value,
                                     uform_outcome_t *outcome) {
    const cJSON *item = uform__text_json_member(object, key);
    if (!item || cJSON_IsNull(item)) {
        if (fallback < 0) {
            char where[UFORM__TEXT_PATH];
            uform__text_path(where, path, key);
            return uform__fail(outcome, UFORM_FORMAT, uform__text_function, "%s is missing (expected true or false)",
                               where);
        }
        *value = fallback;
        return UFORM_OK;
    }
    if (!cJSON_IsBool(item)) {
        char where[UFORM__TEXT_PATH];
        uform__text_path(where, path, key);
        return uform__fail(outcome, UFORM_FORMAT, uform__text_function, "%s is %s, expected true or false", where,
                           uform__json_kind(item));
    }
    *value = cJSON_IsTrue(item);
    return UFORM_OK;
}

uform_status_t uform__text_json_string(const cJSON *object, const char *key, const char *path, int required,
                                       const char **value, uform_outcome_t *outcome) {
    const cJSON *item = uform__text_json_member(object, key);
    char where[UFORM__TEXT_PATH];
    if (!item || cJSON_IsNull(item)) {
        if (required) {
            uform__text_path(where, path, key);
            return uform__fail(outcome, UFORM_FORMAT, uform__text_function, "%s is %s, expected a string", where,
                               item ? "null" : "missing");
        }
        *value = NULL;
        return UFORM_OK;
    }
    if (!cJSON_IsString(item) || !item->valuestring) {
        uform__text_path(where, path, key);
        return uform__fail(outcome, UFORM_FORMAT, uform__text_function, "%s is %s, expected a string", where,
                           uform__json_kind(item));
    }
    *value = item->valuestring;
    return UFORM_OK;
}

uform_status_t uform__text_json_uint_value(const cJSON *item, const char *path, uint64_t largest, uint64_t *value,
                                           uform_outcome_t *outcome) {
    if (!cJSON_IsNumber(item))
        return uform__fail(outcome, UFORM_FORMAT, uform__text_function, "%s is %s, expected a non-negative integer",
                           path, uform__json_kind(item));
    double number = item->valuedouble;
    if (!isfinite(number) || number < 0 || number != floor(number) || number > (double)largest)
        return uform__fail(outcome, UFORM_FORMAT, uform__text_function,
                           "%s is %.17g, expected an integer from 0 to %llu", path, number,
                           (unsigned long long)largest);
    *value = (uint64_t)number;
    return UFORM_OK;
}

uform_status_t uform__text_json_uint(const cJSON *object, const char *key, const char *path, int required,
                                     uint64_t fallback, uint64_t largest, uint64_t *value, uform_outcome_t *outcome) {
    const cJSON *item = uform__text_json_member(object, key);
    char where[UFORM__TEXT_PATH];
    uform__text_path(where, path, key);
    if (!item || cJSON_IsNull(item)) {
        if (required)
            return uform__fail(outcome, UFORM_FORMAT, uform__text_function, "%s is %s, expected an integer", where,
                               item ? "null" : "missing");
        *value = fallback;
        return UFORM_OK;
    }
    return uform__text_json_uint_value(item, where, largest, value, outcome);
}

uform_status_t uform__text_json_type(const cJSON *object, const char *path, const char **type,
                                     uform_outcome_t *outcome) {
    if (!cJSON_IsObject(object))
        return uform__fail(outcome, UFORM_FORMAT, uform__text_function, "%s is %s, expected an object with a \"type\"",
                           path, uform__json_kind(object));
    return uform__text_json_string(object, "type", path, 1, type, outcome);
}

uform_status_t uform__text_json_behavior(const cJSON *object, const char *key, const char *path,
                                         uform__text_behavior_t fallback, uform__text_behavior_t *value,
                                         uform_outcome_t *outcome) {
    static const char *const names[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"};
    const char *name;
    uform_status_t status = uform__text_json_string(object, key, path, 0, &name, outcome);
    if (status != UFORM_OK) return status;
    if (!name) {
        *value = fallback;
        return UFORM_OK;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
        if (strcmp(name, names[i]) == 0) {
            *value = (uform__text_behavior_t)i;
            return UFORM_OK;
        }
    char where[UFORM__TEXT_PATH];
    uform__text_path(where, path, key);
    return uform__fail(outcome, UFORM_FORMAT, uform__text_function,
                       "%s is \"%.64s\", expected Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous",
                       where, name);
}

int uform__text_strdup(const char *text, char **copy) {
    *copy = NULL;
    if (!text) return 0;
    size_t length = strlen(text);
    *copy = malloc(length + 1);
    if (!*copy) return -1;
    memcpy(*copy, text, length + 1);
    return 0;
}
