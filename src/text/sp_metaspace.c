/*
 * The Metaspace pre-tokenizer of a tokenizer.json, as tokenizers' pre_tokenizers/metaspace.rs does
 * it: ' ' becomes the replacement character (U+2581 "▁" in every published file), the replacement
 * is prepended to a split that does not already start with it (all splits, only the one at offset
 * 0 of the original text, or none), and with `split` the text is cut before every replacement
 * character (SplitDelimiterBehavior::MergedWithNext), empty pieces dropped.
 */
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "text/sp_internal.h"

int uform__sp_spans_append(uform__sp_spans_t *spans, size_t start, size_t end) {
    if (spans->count == spans->capacity) {
        size_t capacity = spans->capacity ? spans->capacity * 2 : 16;
        if (capacity > (size_t)-1 / sizeof *spans->data) return -1;
        uform__sp_span_t *grown = realloc(spans->data, capacity * sizeof *grown);
        if (!grown) return -1;
        spans->data = grown, spans->capacity = capacity;
    }
    spans->data[spans->count].start = start, spans->data[spans->count].end = end;
    ++spans->count;
    return 0;
}

void uform__sp_spans_free(uform__sp_spans_t *spans) {
    free(spans->data);
    memset(spans, 0, sizeof *spans);
}

void uform__sp_metaspace_default(uform__sp_metaspace_t *metaspace) {
    memset(metaspace, 0, sizeof *metaspace);
    memcpy(metaspace->replacement, "\xE2\x96\x81", 4);
    metaspace->replacement_length = 3;
    metaspace->prepend = UFORM__SP_PREPEND_ALWAYS;
    metaspace->split = 1;
}

uform_status_t uform__sp_metaspace_from_json(const cJSON *pre_tokenizer, uform__sp_metaspace_t *metaspace,
                                             uform_outcome_t *outcome) {
    static const char function[] = "uform__sp_metaspace_from_json";
    if (!pre_tokenizer || !metaspace)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "NULL pre-tokenizer or result");
    uform__sp_metaspace_default(metaspace);
    if (!cJSON_IsObject(pre_tokenizer))
        return uform__fail(outcome, UFORM_FORMAT, function, "the pre_tokenizer entry is not a JSON object");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(pre_tokenizer, "type");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "Metaspace") != 0)
        return uform__fail(outcome, UFORM_FORMAT, function, "the pre_tokenizer's \"type\" is not \"Metaspace\"");
    const cJSON *replacement = cJSON_GetObjectItemCaseSensitive(pre_tokenizer, "replacement");
    if (!cJSON_IsString(replacement))
        return uform__fail(outcome, UFORM_FORMAT, function, "Metaspace \"replacement\" is missing or not a string");
    size_t length = strlen(replacement->valuestring), bytes = 0;
    if (length == 0 || uform__sp_decode_utf8(replacement->valuestring, length, &bytes) < 0 || bytes != length)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "Metaspace \"replacement\" must be exactly one UTF-8 character (%zu bytes given)", length);
    memcpy(metaspace->replacement, replacement->valuestring, length + 1);
    metaspace->replacement_length = length;

    const cJSON *scheme = cJSON_GetObjectItemCaseSensitive(pre_tokenizer, "prepend_scheme");
    const cJSON *add_prefix = cJSON_GetObjectItemCaseSensitive(pre_tokenizer, "add_prefix_space");
    if (scheme && !cJSON_IsNull(scheme)) {
        if (!cJSON_IsString(scheme))
            return uform__fail(outcome, UFORM_FORMAT, function, "Metaspace \"prepend_scheme\" is not a string");
        if (strcmp(scheme->valuestring, "always") == 0) metaspace->prepend = UFORM__SP_PREPEND_ALWAYS;
        else if (strcmp(scheme->valuestring, "first") == 0) metaspace->prepend = UFORM__SP_PREPEND_FIRST;
        else if (strcmp(scheme->valuestring, "never") == 0) metaspace->prepend = UFORM__SP_PREPEND_NEVER;
        else
            return uform__fail(outcome, UFORM_FORMAT, function,
                               "Metaspace \"prepend_scheme\" is \"%.40s\", not always, first or never",
                               scheme->valuestring);
    }
    if (add_prefix && !cJSON_IsNull(add_prefix)) {
        if (!cJSON_IsBool(add_prefix))
            return uform__fail(outcome, UFORM_FORMAT, function, "Metaspace \"add_prefix_space\" is not a boolean");
        /* tokenizers refuses add_prefix_space false beside a scheme that prepends. Without a scheme
         * (files from before prepend_scheme existed) false means never. */
        if (cJSON_IsFalse(add_prefix)) {
            if (scheme && !cJSON_IsNull(scheme) && metaspace->prepend != UFORM__SP_PREPEND_NEVER)
                return uform__fail(outcome, UFORM_FORMAT, function,
                                   "Metaspace \"add_prefix_space\": false contradicts \"prepend_scheme\": \"%s\"",
                                   scheme->valuestring);
            metaspace->prepend = UFORM__SP_PREPEND_NEVER;
        }
    }
    const cJSON *split = cJSON_GetObjectItemCaseSensitive(pre_tokenizer, "split");
    if (split && !cJSON_IsNull(split)) {
        if (!cJSON_IsBool(split)) return uform__fail(outcome, UFORM_FORMAT, function, "Metaspace \"split\" is not a boolean");
        metaspace->split = cJSON_IsTrue(split);
    }
    return UFORM_OK;
}

uform_status_t uform__sp_metaspace_apply(const uform__sp_metaspace_t *metaspace, const char *text, size_t length,
                                         int at_text_start, uform__text_string_t *out, uform__sp_spans_t *words,
                                         uform_outcome_t *outcome) {
    static const char function[] = "uform__sp_metaspace_apply";
    if (!metaspace || (length && !text) || !out || !words)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "NULL metaspace, text or outputs");
    if (length == 0) return UFORM_OK;
    const char *mark = metaspace->replacement;
    size_t mark_length = metaspace->replacement_length;
    size_t begin = out->length, kept_words = words->count;
    int failed = 0;
    /* The prefix is judged on the text after the spaces were replaced, so a leading ' ' counts. */
    int starts_with_mark = text[0] == ' ' || (length >= mark_length && memcmp(text, mark, mark_length) == 0);
    int prepend = !starts_with_mark && (metaspace->prepend == UFORM__SP_PREPEND_ALWAYS ||
                                        (metaspace->prepend == UFORM__SP_PREPEND_FIRST && at_text_start));
    if (prepend) failed |= uform__text_string_append(out, mark, mark_length) != 0;
    for (size_t at = 0; at < length && !failed;) {
        size_t run = at;
        while (run < length && text[run] != ' ') ++run;
        failed |= uform__text_string_append(out, text + at, run - at) != 0;
        if (run < length) {
            failed |= uform__text_string_append(out, mark, mark_length) != 0;
            ++run;
        }
        at = run;
    }
    if (!failed) {
        if (!metaspace->split) {
            failed |= uform__sp_spans_append(words, begin, out->length) != 0;
        } else {
            /* Cut before every replacement character that is not at the start. */
            size_t word = begin;
            for (size_t at = begin + 1; at + mark_length <= out->length && !failed; ++at) {
                if (memcmp(out->data + at, mark, mark_length) != 0) continue;
                failed |= uform__sp_spans_append(words, word, at) != 0;
                word = at;
                at += mark_length - 1;
            }
            if (!failed && word < out->length) failed |= uform__sp_spans_append(words, word, out->length) != 0;
        }
    }
    if (failed) {
        out->length = begin;
        if (out->data) out->data[begin] = 0;
        words->count = kept_words;
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "no memory to pre-tokenize %zu bytes", length);
    }
    return UFORM_OK;
}
