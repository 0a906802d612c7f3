/*
 * Shared pieces of the tokenizers (src/text/): a growable UTF-8 string and a growable list of token
 * ids. Every stage of a tokenizer (normalizer, pre-tokenizer, model, post-processor) reads and
 * writes these, so the stages written in different files agree on one representation.
 * Private to libuform.
 *
 * Ownership: a buffer owns its `data` (malloc'ed); release it with uform__text_string_free or
 * uform__text_ids_free. A zeroed buffer is empty and valid. Appending answers 0 on success and -1
 * when memory runs out (the buffer is then unchanged); callers turn -1 into UFORM_OUT_OF_MEMORY.
 */
#ifndef UFORM_TEXT_TEXT_H
#define UFORM_TEXT_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* UTF-8 bytes, always followed by a NUL inside the allocation (not counted in `length`). */
typedef struct uform__text_string_t {
    char *data;
    size_t length, capacity;
} uform__text_string_t;

/* Token ids of one sequence. */
typedef struct uform__text_ids_t {
    uint32_t *data;
    size_t count, capacity;
} uform__text_ids_t;

static inline int uform__text_string_reserve(uform__text_string_t *string, size_t extra) {
    if (extra > (size_t)-1 / 2 - string->length) return -1;
    size_t needed = string->length + extra + 1;
    if (needed <= string->capacity) return 0;
    size_t capacity = string->capacity ? string->capacity : 32;
    while (capacity < needed) capacity *= 2;
    char *grown = realloc(string->data, capacity);
    if (!grown) return -1;
    string->data = grown, string->capacity = capacity;
    return 0;
}

static inline int uform__text_string_append(uform__text_string_t *string, const char *bytes, size_t length) {
    if (uform__text_string_reserve(string, length) != 0) return -1;
    if (length) memcpy(string->data + string->length, bytes, length);
    string->length += length;
    string->data[string->length] = '\0';
    return 0;
}

static inline void uform__text_string_clear(uform__text_string_t *string) {
    string->length = 0;
    if (string->data) string->data[0] = '\0';
}

static inline void uform__text_string_free(uform__text_string_t *string) {
    free(string->data);
    memset(string, 0, sizeof *string);
}

static inline int uform__text_ids_append(uform__text_ids_t *ids, uint32_t id) {
    if (ids->count == ids->capacity) {
        size_t capacity = ids->capacity ? ids->capacity * 2 : 64;
        if (capacity > (size_t)-1 / sizeof(uint32_t)) return -1;
        uint32_t *grown = realloc(ids->data, capacity * sizeof(uint32_t));
        if (!grown) return -1;
        ids->data = grown, ids->capacity = capacity;
    }
    ids->data[ids->count++] = id;
    return 0;
}

static inline void uform__text_ids_free(uform__text_ids_t *ids) {
    free(ids->data);
    memset(ids, 0, sizeof *ids);
}

#endif
