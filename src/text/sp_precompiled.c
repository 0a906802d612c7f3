/*
 * The "Precompiled" normalizer of a tokenizer.json, as Hugging Face `tokenizers` applies it
 * (its normalizers/precompiled.rs over the spm_precompiled crate), which is not sentencepiece's own
 * rule: the text is cut into extended grapheme clusters; a cluster of fewer than 6 bytes whose
 * bytes begin with a charsmap key is replaced as a whole by the SHORTEST such key's string
 * (dropping the rest of the cluster: "weird", as its authors say, but what every published
 * XLM-R / T5 tokenizer.json is tokenised with); any other cluster goes character by character,
 * each replaced by the shortest key starting it or kept. Grapheme clusters come from utf8proc
 * (Unicode 15 on Debian 12) where tokenizers uses the unicode-segmentation crate; the two agree
 * on everything but scripts whose clustering rules changed since (documented).
 */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "core/outcome.h"
#include "text/sp_internal.h"

struct uform__sp_precompiled_t {
    uform__sp_charsmap_t charsmap;
};

uform_status_t uform__sp_precompiled_from_bytes(const void *charsmap, size_t size, uform__sp_precompiled_t **precompiled,
                                                uform_outcome_t *outcome) {
    static const char function[] = "uform__sp_precompiled_from_bytes";
    if (!precompiled || (size && !charsmap))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "NULL charsmap or result");
    *precompiled = NULL;
    uform__sp_precompiled_t *made = calloc(1, sizeof *made);
    if (!made) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "no memory for a normalizer");
    uform_status_t status = uform__sp_charsmap_init(&made->charsmap, charsmap, size, 1, function, outcome);
    if (status != UFORM_OK) {
        free(made);
        return status;
    }
    *precompiled = made;
    return UFORM_OK;
}

uform_status_t uform__sp_precompiled_from_json(const cJSON *normalizer, uform__sp_precompiled_t **precompiled,
                                               uform_outcome_t *outcome) {
    static const char function[] = "uform__sp_precompiled_from_json";
    if (!normalizer || !precompiled)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "NULL normalizer or result");
    *precompiled = NULL;
    if (!cJSON_IsObject(normalizer))
        return uform__fail(outcome, UFORM_FORMAT, function, "the normalizer entry is not a JSON object");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(normalizer, "type");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "Precompiled") != 0)
        return uform__fail(outcome, UFORM_FORMAT, function, "the normalizer's \"type\" is not \"Precompiled\"");
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(normalizer, "precompiled_charsmap");
    if (!map || cJSON_IsNull(map)) return uform__sp_precompiled_from_bytes(NULL, 0, precompiled, outcome);
    if (!cJSON_IsString(map))
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "\"precompiled_charsmap\" is neither a base64 string nor null");
    unsigned char *bytes;
    size_t size;
    uform_status_t status = uform__sp_base64_decode(map->valuestring, strlen(map->valuestring), &bytes, &size, function,
                                                    "\"precompiled_charsmap\"", outcome);
    if (status != UFORM_OK) return status;
    status = uform__sp_precompiled_from_bytes(bytes, size, precompiled, outcome);
    free(bytes);
    return status;
}

void uform__sp_precompiled_free(uform__sp_precompiled_t *precompiled) {
    if (!precompiled) return;
    uform__sp_charsmap_release(&precompiled->charsmap);
    free(precompiled);
}

/* Appends `length` bytes at `chunk` through the shortest rule starting it: 1 when a rule applied. */
static int transform(const uform__sp_charsmap_t *charsmap, const char *chunk, size_t length, uform__text_string_t *out,
                     int *failed) {
    const char *replacement = NULL;
    if (uform__sp_charsmap_match(charsmap, chunk, length, 0, &replacement) == 0) return 0;
    if (uform__text_string_append(out, replacement, strlen(replacement)) != 0) *failed = 1;
    return 1;
}

uform_status_t uform__sp_precompiled_normalize(const uform__sp_precompiled_t *precompiled, const char *text,
                                               size_t length, uform__text_string_t *out, uform_outcome_t *outcome) {
    static const char function[] = "uform__sp_precompiled_normalize";
    if (!precompiled || (length && !text) || !out)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "NULL normalizer, text or output");
    size_t bad = uform__sp_utf8_invalid_at(text, length);
    if (bad < length)
        return uform__fail(outcome, UFORM_FORMAT, function, "the text is not UTF-8 at byte %zu (0x%02x)", bad,
                           (unsigned char)text[bad]);
    const uform__sp_charsmap_t *charsmap = &precompiled->charsmap;
    size_t kept = out->length;
    int failed = 0;
    if (charsmap->unit_count == 0) {
        if (uform__text_string_append(out, text, length) != 0) failed = 1;
    }
    utf8proc_int32_t state = 0;
    size_t at = 0;
    while (charsmap->unit_count && at < length && !failed) {
        /* One extended grapheme cluster: [at, end). */
        size_t end = at, bytes;
        int32_t previous = uform__sp_decode_utf8(text + end, length - end, &bytes);
        end += bytes;
        while (end < length) {
            int32_t next = uform__sp_decode_utf8(text + end, length - end, &bytes);
            if (utf8proc_grapheme_break_stateful(previous, next, &state)) break;
            previous = next;
            end += bytes;
        }
        /* `state` runs on across clusters: it counts regional indicators and emoji sequences. */
        if (end - at < 6 && transform(charsmap, text + at, end - at, out, &failed)) {
            at = end;
            continue;
        }
        while (at < end && !failed) {
            uform__sp_decode_utf8(text + at, end - at, &bytes);
            if (!transform(charsmap, text + at, bytes, out, &failed) &&
                uform__text_string_append(out, text + at, bytes) != 0)
                failed = 1;
            at += bytes;
        }
    }
    if (failed) {
        out->length = kept;
        if (out->data) out->data[kept] = 0;
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "no memory for the normalised text (%zu bytes in)",
                           length);
    }
    return UFORM_OK;
}
