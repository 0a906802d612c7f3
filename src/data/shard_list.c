/*
 * Shard lists as OpenCLIP takes them: several lists joined with "::", each a path that may hold
 * brace groups — numeric ranges "{00000..00099}" (zero padding kept from the wider bound; a range
 * may descend) and alternatives "{train,val}" — expanded left to right, every combination in order.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/outcome.h"
#include "data/source.h"

#define MAX_SHARDS ((size_t)10 << 20)

typedef struct expansion_t {
    char ***paths;
    size_t *count;
    size_t capacity;
    uform_outcome_t *outcome;
    const char *function;
    const char *spec;
} expansion_t;

static uform_status_t emit(expansion_t *expansion, const char *path, size_t length) {
    if (*expansion->count >= MAX_SHARDS)
        return uform__fail(expansion->outcome, UFORM_INVALID_ARGUMENT, expansion->function,
                           "the shard list '%s' expands to more than %zu shards", expansion->spec, MAX_SHARDS);
    if (*expansion->count == expansion->capacity) {
        size_t capacity = expansion->capacity ? 2 * expansion->capacity : 64;
        char **grown = realloc(*expansion->paths, capacity * sizeof *grown);
        if (!grown) return uform__fail(expansion->outcome, UFORM_OUT_OF_MEMORY, expansion->function, "cannot allocate the list of shards");
        *expansion->paths = grown, expansion->capacity = capacity;
    }
    char *copy = strndup(path, length);
    if (!copy) return uform__fail(expansion->outcome, UFORM_OUT_OF_MEMORY, expansion->function, "cannot allocate the list of shards");
    (*expansion->paths)[(*expansion->count)++] = copy;
    return UFORM_OK;
}

static int parse_number(const char *text, size_t length, unsigned long long *value) {
    if (length == 0 || length > 18) return -1;
    unsigned long long number = 0;
    for (size_t i = 0; i < length; ++i) {
        if (text[i] < '0' || text[i] > '9') return -1;
        number = number * 10 + (unsigned long long)(text[i] - '0');
    }
    *value = number;
    return 0;
}

/* Expands `pattern` (`length` bytes) after the already expanded `prefix`. */
static uform_status_t expand(expansion_t *expansion, const char *prefix, size_t prefix_length, const char *pattern,
                             size_t length) {
    const char *open = memchr(pattern, '{', length), *close_any = memchr(pattern, '}', length);
    if (!open) {
        if (close_any)
            return uform__fail(expansion->outcome, UFORM_INVALID_ARGUMENT, expansion->function,
                               "the shard list '%s' has a '}' without its '{'", expansion->spec);
        char *path = malloc(prefix_length + length + 1);
        if (!path) return uform__fail(expansion->outcome, UFORM_OUT_OF_MEMORY, expansion->function, "cannot allocate the list of shards");
        memcpy(path, prefix, prefix_length), memcpy(path + prefix_length, pattern, length);
        uform_status_t status = emit(expansion, path, prefix_length + length);
        free(path);
        return status;
    }
    const char *close = memchr(open, '}', length - (size_t)(open - pattern));
    const char *nested = close ? memchr(open + 1, '{', (size_t)(close - open - 1)) : NULL;
    if (!close || nested || (close_any && close_any < open))
        return uform__fail(expansion->outcome, UFORM_INVALID_ARGUMENT, expansion->function,
                           "the shard list '%s' has an unbalanced or nested '{'", expansion->spec);
    size_t head = (size_t)(open - pattern), inner = (size_t)(close - open - 1);
    const char *rest = close + 1;
    size_t rest_length = length - (size_t)(rest - pattern);
    char *base = malloc(prefix_length + head + 32 + inner);
    if (!base) return uform__fail(expansion->outcome, UFORM_OUT_OF_MEMORY, expansion->function, "cannot allocate the list of shards");
    memcpy(base, prefix, prefix_length), memcpy(base + prefix_length, pattern, head);
    size_t stem = prefix_length + head;
    uform_status_t status = UFORM_OK;
    const char *dots = NULL;
    for (size_t i = 0; i + 1 < inner; ++i)
        if (open[1 + i] == '.' && open[2 + i] == '.') {
            dots = open + 1 + i;
            break;
        }
    if (dots) {
        const char *low_text = open + 1, *high_text = dots + 2;
        size_t low_length = (size_t)(dots - low_text), high_length = (size_t)(close - high_text);
        unsigned long long low, high;
        if (parse_number(low_text, low_length, &low) || parse_number(high_text, high_length, &high)) {
            free(base);
            return uform__fail(expansion->outcome, UFORM_INVALID_ARGUMENT, expansion->function,
                               "the shard list '%s' has a range '{%.*s}' that is not {FIRST..LAST} of decimal numbers",
                               expansion->spec, (int)inner, open + 1);
        }
        int padded = (low_length > 1 && low_text[0] == '0') || (high_length > 1 && high_text[0] == '0');
        int width = padded ? (int)(low_length > high_length ? low_length : high_length) : 0;
        if ((low > high ? low - high : high - low) >= MAX_SHARDS) {
            free(base);
            return uform__fail(expansion->outcome, UFORM_INVALID_ARGUMENT, expansion->function,
                               "the shard list '%s' expands to more than %zu shards", expansion->spec, MAX_SHARDS);
        }
        for (unsigned long long value = low;; value = low <= high ? value + 1 : value - 1) {
            int written = snprintf(base + stem, 32, "%0*llu", width, value);
            status = expand(expansion, base, stem + (size_t)written, rest, rest_length);
            if (status != UFORM_OK || value == high) break;
        }
    } else {
        for (const char *at = open + 1; status == UFORM_OK && at <= close;) {
            const char *comma = memchr(at, ',', (size_t)(close - at));
            const char *end = comma ? comma : close;
            memcpy(base + stem, at, (size_t)(end - at));
            status = expand(expansion, base, stem + (size_t)(end - at), rest, rest_length);
            at = end + 1;
        }
    }
    free(base);
    return status;
}

/* Expands an OpenCLIP shard list ("a/{000..009}.tar::b.tar.gz") into paths, appended to *paths. */
static uform_status_t expand_list(const char *spec, char ***paths, size_t *count, uform_outcome_t *outcome,
                                  const char *function) {
    expansion_t expansion = {paths, count, *count, outcome, function, spec};
    size_t before = *count;
    for (const char *at = spec;;) {
        const char *separator = strstr(at, "::");
        size_t length = separator ? (size_t)(separator - at) : strlen(at);
        if (length) {
            uform_status_t status = expand(&expansion, "", 0, at, length);
            if (status != UFORM_OK) return status;
        }
        if (!separator) break;
        at = separator + 2;
    }
    if (*count == before)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "the shard list '%s' names no shard", spec);
    return UFORM_OK;
}

/* Expands one list; every shard it names must exist now, so that a typo fails at open, not hours
 * into a run (a shard that cannot be read later is the sampler's to report). */
static uform_status_t add(const char *path, const uform_dataset_options_t *options, uform__data_items_t *items,
                          uform_data_error_t *error, uform_outcome_t *outcome, const char *function) {
    (void)options, (void)error;
    size_t before = items->shard_count;
    uform_status_t status = expand_list(path, &items->shards, &items->shard_count, outcome, function);
    for (size_t i = before; status == UFORM_OK && i < items->shard_count; ++i) {
        struct stat info;
        if (stat(items->shards[i], &info) != 0)
            status = uform__fail(outcome, UFORM_IO, function, "shard %zu of '%s': cannot open '%s': %s", i - before, path,
                                 items->shards[i], strerror(errno));
    }
    return status;
}

const uform__data_source_t uform__data_source_shards = {add, NULL};
