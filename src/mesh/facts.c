/*
 * Fact records (facts.h): building, printing, parsing and comparing "key=value" lines.
 */
#include "mesh/facts.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fnv.h"

void uform__facts_free(uform__facts_t *facts) {
    free(facts->items);
    memset(facts, 0, sizeof *facts);
}

int uform__facts_plain_name(const char *text) {
    for (const char *at = text; *at; ++at) {
        char c = *at;
        int fine = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                   c == '_' || c == '-';
        if (!fine) return 0;
    }
    return 1;
}

static int key_valid(const char *key) {
    size_t length = strlen(key);
    return length > 0 && length < UFORM__FACT_KEY_CAPACITY && uform__facts_plain_name(key);
}

static uform_status_t set_value(uform__facts_t *facts, const char *key, const char *value) {
    if (!key_valid(key) || strlen(value) >= UFORM__FACT_VALUE_CAPACITY || strchr(value, '\n'))
        return UFORM_INVALID_ARGUMENT;
    uform__fact_t *slot = NULL;
    for (size_t i = 0; i < facts->count; ++i)
        if (strcmp(facts->items[i].key, key) == 0) slot = &facts->items[i];
    if (!slot) {
        if (facts->count == facts->capacity) {
            size_t capacity = facts->capacity ? 2 * facts->capacity : 32;
            uform__fact_t *grown = realloc(facts->items, capacity * sizeof *grown);
            if (!grown) return UFORM_OUT_OF_MEMORY;
            facts->items = grown, facts->capacity = capacity;
        }
        slot = &facts->items[facts->count++];
        memset(slot, 0, sizeof *slot);
        snprintf(slot->key, sizeof slot->key, "%s", key);
    }
    snprintf(slot->value, sizeof slot->value, "%s", value);
    return UFORM_OK;
}

uform_status_t uform__facts_set(uform__facts_t *facts, const char *key, const char *format, ...) {
    char value[UFORM__FACT_VALUE_CAPACITY + 1];
    va_list arguments;
    va_start(arguments, format);
    int written = vsnprintf(value, sizeof value, format, arguments);
    va_end(arguments);
    if (written < 0 || (size_t)written >= UFORM__FACT_VALUE_CAPACITY) return UFORM_INVALID_ARGUMENT;
    return set_value(facts, key, value);
}

const char *uform__facts_get(const uform__facts_t *facts, const char *key) {
    for (size_t i = 0; i < facts->count; ++i)
        if (strcmp(facts->items[i].key, key) == 0) return facts->items[i].value;
    return NULL;
}

int uform__fact_agreed(const char *key) {
    static const char *const agreed[] = {"protocol", "version", "count",  "gpus_per_multimem_domain",
                                         "timeout_ms", "memory",  "cpu_class", "overlap"};
    for (size_t i = 0; i < sizeof agreed / sizeof agreed[0]; ++i)
        if (strcmp(key, agreed[i]) == 0) return 1;
    return strncmp(key, "trainer.", 8) == 0 || strncmp(key, "agreement.", 10) == 0;
}

uform_status_t uform__facts_add_trainer(uform__facts_t *facts, const uform_trainer_config_t *config) {
    char matryoshka[128] = "";
    size_t used = 0;
    for (size_t i = 0; i < config->matryoshka_count && i < 8; ++i)
        used += (size_t)snprintf(matryoshka + used, sizeof matryoshka - used, "%s%zu", i ? "," : "",
                                 config->matryoshka[i]);
    char size[sizeof config->size + 1];
    memcpy(size, config->size, sizeof config->size);
    size[sizeof config->size] = 0;
    for (char *c = size; *c; ++c)
        if (*c == '\n') *c = ' ';
    uform_status_t status = uform__facts_set(facts, "trainer.size", "%s", size);
#define COUNT(field) \
    if (status == UFORM_OK) status = uform__facts_set(facts, "trainer." #field, "%zu", (size_t)config->field);
#define REAL(field) \
    if (status == UFORM_OK) status = uform__facts_set(facts, "trainer." #field, "%.17g", (double)config->field);
    COUNT(hidden) COUNT(depth) COUNT(heads) COUNT(mlp) COUNT(embedding) COUNT(matryoshka_count)
    COUNT(temperature_groups) COUNT(modalities) COUNT(text_bytes) COUNT(image_size) COUNT(image_patch)
    COUNT(video_size) COUNT(video_patch) COUNT(video_frames) COUNT(video_tubelet) COUNT(audio_seconds)
    COUNT(audio_mels)
    REAL(learning_rate) REAL(beta1) REAL(beta2) REAL(epsilon) REAL(weight_decay) REAL(clip_norm)
    COUNT(warmup_steps) COUNT(total_steps) REAL(contrastive_weight) REAL(choice_weight)
    COUNT(seed) COUNT(compute) COUNT(cpu_class)
#undef COUNT
#undef REAL
    if (status == UFORM_OK) status = uform__facts_set(facts, "trainer.matryoshka", "%s", matryoshka);
    if (status == UFORM_OK) status = uform__facts_set(facts, "trainer.resumes", "%s", config->resume ? "yes" : "no");
    return status;
}

uform_status_t uform__facts_add_agreement(uform__facts_t *facts, const char *text, uform_outcome_t *outcome,
                                          const char *function) {
    size_t total = strlen(text);
    if (total > 4096)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "options.agreement holds %zu bytes; at most 4096 are allowed", total);
    size_t line = 0;
    for (const char *cursor = text; *cursor;) {
        const char *end = strchr(cursor, '\n');
        size_t length = end ? (size_t)(end - cursor) : strlen(cursor);
        line += 1;
        if (length) {
            char entry[UFORM__FACT_KEY_CAPACITY + UFORM__FACT_VALUE_CAPACITY + 16];
            if (length >= sizeof entry)
                return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                                   "options.agreement line %zu is %zu bytes long (at most %zu)", line, length,
                                   sizeof entry - 1);
            memcpy(entry, cursor, length);
            entry[length] = 0;
            char *equals = strchr(entry, '=');
            if (equals) *equals = 0;
            char key[sizeof entry + 16];
            snprintf(key, sizeof key, "agreement.%s", entry);
            uform_status_t status = equals && key_valid(entry) ? uform__facts_set(facts, key, "%s", equals + 1)
                                                               : UFORM_INVALID_ARGUMENT;
            if (status == UFORM_OUT_OF_MEMORY)
                return uform__fail(outcome, status, function, "cannot hold the agreement's lines");
            if (status != UFORM_OK)
                return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                                   "options.agreement line %zu is not key=value (a key of letters, digits, '.', "
                                   "'_' and '-' up to %d bytes, a value up to %d bytes)",
                                   line, UFORM__FACT_KEY_CAPACITY - 12, UFORM__FACT_VALUE_CAPACITY - 1);
        }
        cursor += length + (end != NULL);
    }
    return UFORM_OK;
}

uform_status_t uform__facts_add_fingerprint(uform__facts_t *facts) {
    uint64_t hash = UFORM__FNV1A64_OFFSET;
    for (size_t i = 0; i < facts->count; ++i) {
        const uform__fact_t *fact = &facts->items[i];
        if (!uform__fact_agreed(fact->key)) continue;
        const char *parts[4] = {fact->key, "=", fact->value, "\n"};
        for (int p = 0; p < 4; ++p) hash = uform__fnv1a64_text(parts[p], hash);
    }
    return uform__facts_set(facts, "fingerprint", "%016llx", (unsigned long long)hash);
}

char *uform__facts_print(const uform__facts_t *facts) {
    size_t bytes = 1;
    for (size_t i = 0; i < facts->count; ++i)
        bytes += strlen(facts->items[i].key) + strlen(facts->items[i].value) + 2;
    char *text = malloc(bytes);
    if (!text) return NULL;
    size_t used = 0;
    text[0] = 0;
    for (size_t i = 0; i < facts->count; ++i)
        used += (size_t)snprintf(text + used, bytes - used, "%s=%s\n", facts->items[i].key, facts->items[i].value);
    return text;
}

uform_status_t uform__facts_parse(const char *text, size_t length, uform__facts_t *facts) {
    memset(facts, 0, sizeof *facts);
    size_t begin = 0;
    while (begin < length) {
        size_t end = begin;
        while (end < length && text[end] != '\n') ++end;
        char line[UFORM__FACT_KEY_CAPACITY + UFORM__FACT_VALUE_CAPACITY + 2];
        size_t size = end - begin;
        if (size < sizeof line) {
            memcpy(line, text + begin, size);
            line[size] = 0;
            char *equals = strchr(line, '=');
            if (equals) {
                *equals = 0;
                uform_status_t status = set_value(facts, line, equals + 1);
                if (status == UFORM_OUT_OF_MEMORY) {
                    uform__facts_free(facts);
                    return status;
                }
            }
        }
        begin = end + 1;
    }
    return UFORM_OK;
}

static int differ(const char *key, const char *mine, const char *theirs, size_t my_index, size_t their_index,
                  char *message, size_t capacity) {
    if (mine && theirs && strcmp(mine, theirs) == 0) return 0;
    snprintf(message, capacity, "%s: member %zu has %s%s%s, member %zu (this process) has %s%s%s", key, their_index,
             theirs ? "'" : "", theirs ? theirs : "none", theirs ? "'" : "", my_index, mine ? "'" : "",
             mine ? mine : "none", mine ? "'" : "");
    return -1;
}

int uform__facts_compare(const uform__facts_t *mine, size_t my_index, const uform__facts_t *theirs,
                         size_t their_index, char *message, size_t capacity) {
    for (size_t i = 0; i < mine->count; ++i) {
        const uform__fact_t *fact = &mine->items[i];
        if (!uform__fact_agreed(fact->key)) continue;
        if (differ(fact->key, fact->value, uform__facts_get(theirs, fact->key), my_index, their_index, message,
                   capacity))
            return -1;
    }
    for (size_t i = 0; i < theirs->count; ++i) {
        const uform__fact_t *fact = &theirs->items[i];
        if (!uform__fact_agreed(fact->key) || uform__facts_get(mine, fact->key)) continue;
        return differ(fact->key, NULL, fact->value, my_index, their_index, message, capacity);
    }
    return 0;
}
