/*
 * Normalizers of tokenizer.json, each as `tokenizers` (Rust) runs it on one piece of text:
 * BertNormalizer (clean_text, handle_chinese_chars, strip_accents null following lowercase,
 * lowercase), NFC/NFD/NFKC/NFKD, Lowercase (Rust's per-character full lowercase), StripAccents
 * (drops every mark), Strip, Replace (string or Oniguruma regex), Prepend (only to non-empty text),
 * Nmt, ByteLevel and Sequence; "Precompiled" is the SentencePiece engineer's (sentencepiece.h).
 * The offsets `tokenizers` keeps alongside do not change any id, so only the text is computed.
 */
#include <string.h>

#include "core/outcome.h"
#include "text/sentencepiece.h"
#include "text/tokenizer_internal.h"

uint32_t uform__text_byte_char(unsigned char byte) {
    /* GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other 68 bytes
     * take the code points from U+0100 on, in byte order. */
    if ((byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE) return byte;
    if (byte <= 0x20) return 0x100 + byte;   /* ranks 0-32 */
    if (byte <= 0xA0) return 0x121 + (byte - 0x7F); /* 0x7F-0xA0: ranks 33-66 */
    return 0x143;                            /* 0xAD: rank 67 */
}

static uform_status_t parse_pattern(const cJSON *json, const char *path, uform__text_regex_t *regex,
                                    uform_outcome_t *outcome) {
    char where[UFORM__TEXT_PATH];
    uform__text_path(where, path, "pattern");
    const cJSON *pattern = uform__text_json_member(json, "pattern");
    if (!cJSON_IsObject(pattern))
        return uform__fail(outcome, UFORM_FORMAT, uform__text_function,
                           "%s is %s, expected {\"String\": ...} or {\"Regex\": ...}", where,
                           uform__json_kind(pattern));
    const char *text;
    uform_status_t status = uform__text_json_string(pattern, "Regex", where, 0, &text, outcome);
    if (status != UFORM_OK) return status;
    if (text) return uform__text_regex_compile(regex, text, 0, where, outcome);
    status = uform__text_json_string(pattern, "String", where, 0, &text, outcome);
    if (status != UFORM_OK) return status;
    if (text) return uform__text_regex_compile(regex, text, 1, where, outcome);
    return uform__fail(outcome, UFORM_FORMAT, uform__text_function, "%s has neither \"String\" nor \"Regex\"", where);
}

/* One element of a Sequence's list, parsed into its slot; the count covers it once it parsed. */
static uform_status_t parse_child(void *context, size_t index, const cJSON *item, const char *path, uform_outcome_t *outcome) {
    uform__text_normalizer_t *normalizer = context;
    uform_status_t status = uform__text_normalizer_parse(item, path, &normalizer->children[index], outcome);
    if (status == UFORM_OK) normalizer->child_count = index + 1;
    return status;
}

uform_status_t uform__text_normalizer_parse(const cJSON *json, const char *path, uform__text_normalizer_t *normalizer,
                                            uform_outcome_t *outcome) {
    memset(normalizer, 0, sizeof *normalizer);
    const char *type;
    uform_status_t status = uform__text_json_type(json, path, &type, outcome);
    if (status != UFORM_OK) return status;
    if (strcmp(type, "BertNormalizer") == 0) {
        int clean, chinese, lowercase, strip = -1;
        normalizer->kind = UFORM__TEXT_NORMALIZER_BERT;
        if ((status = uform__text_json_bool(json, "clean_text", path, 1, &clean, outcome)) != UFORM_OK) return status;
        if ((status = uform__text_json_bool(json, "handle_chinese_chars", path, 1, &chinese, outcome)) != UFORM_OK)
            return status;
        if ((status = uform__text_json_bool(json, "lowercase", path, 1, &lowercase, outcome)) != UFORM_OK)
            return status;
        /* strip_accents null (or absent) follows lowercase. */
        if ((status = uform__text_json_bool(json, "strip_accents", path, lowercase, &strip, outcome)) != UFORM_OK)
            return status;
        normalizer->clean_text = (uint8_t)clean, normalizer->handle_chinese_chars = (uint8_t)chinese;
        normalizer->lowercase = (uint8_t)lowercase, normalizer->strip_accents = (uint8_t)strip;
    } else if (strcmp(type, "NFC") == 0 || strcmp(type, "NFD") == 0 || strcmp(type, "NFKC") == 0 ||
               strcmp(type, "NFKD") == 0) {
        normalizer->kind = UFORM__TEXT_NORMALIZER_FORM;
        normalizer->form = strcmp(type, "NFC") == 0    ? UFORM__TEXT_NFC
                           : strcmp(type, "NFD") == 0  ? UFORM__TEXT_NFD
                           : strcmp(type, "NFKC") == 0 ? UFORM__TEXT_NFKC
                                                       : UFORM__TEXT_NFKD;
    } else if (strcmp(type, "Lowercase") == 0) normalizer->kind = UFORM__TEXT_NORMALIZER_LOWERCASE;
    else if (strcmp(type, "StripAccents") == 0) normalizer->kind = UFORM__TEXT_NORMALIZER_STRIP_ACCENTS;
    else if (strcmp(type, "Nmt") == 0) normalizer->kind = UFORM__TEXT_NORMALIZER_NMT;
    else if (strcmp(type, "ByteLevel") == 0) normalizer->kind = UFORM__TEXT_NORMALIZER_BYTE_LEVEL;
    else if (strcmp(type, "Strip") == 0) {
        int left, right;
        normalizer->kind = UFORM__TEXT_NORMALIZER_STRIP;
        if ((status = uform__text_json_bool(json, "strip_left", path, 1, &left, outcome)) != UFORM_OK) return status;
        if ((status = uform__text_json_bool(json, "strip_right", path, 1, &right, outcome)) != UFORM_OK) return status;
        normalizer->strip_left = (uint8_t)left, normalizer->strip_right = (uint8_t)right;
    } else if (strcmp(type, "Replace") == 0 || strcmp(type, "Prepend") == 0) {
        int replace = type[0] == 'R';
        const char *content;
        normalizer->kind = replace ? UFORM__TEXT_NORMALIZER_REPLACE : UFORM__TEXT_NORMALIZER_PREPEND;
        status = uform__text_json_string(json, replace ? "content" : "prepend", path, 1, &content, outcome);
        if (status != UFORM_OK) return status;
        if (uform__text_strdup(content, &normalizer->content) != 0)
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, uform__text_function, "out of memory reading %s", path);
        if (replace && (status = parse_pattern(json, path, &normalizer->regex, outcome)) != UFORM_OK) {
            uform__text_normalizer_free(normalizer);
            return status;
        }
    } else if (strcmp(type, "Sequence") == 0) {
        char where[UFORM__TEXT_PATH];
        const cJSON *list = NULL;
        if ((status = uform__text_json_array(json, path, "normalizers", where, &list, outcome)) != UFORM_OK) return status;
        size_t count = (size_t)cJSON_GetArraySize(list);
        normalizer->kind = UFORM__TEXT_NORMALIZER_SEQUENCE;
        normalizer->children = calloc(count ? count : 1, sizeof *normalizer->children);
        if (!normalizer->children)
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, uform__text_function, "out of memory reading %s", where);
        if ((status = uform__text_json_each(list, where, parse_child, normalizer, outcome)) != UFORM_OK) {
            uform__text_normalizer_free(normalizer);
            return status;
        }
    } else if (strcmp(type, "Precompiled") == 0) {
        normalizer->kind = UFORM__TEXT_NORMALIZER_EXTERNAL;
        uform__sp_precompiled_t *precompiled = NULL;
        status = uform__sp_precompiled_from_json(json, &precompiled, outcome);
        if (status != UFORM_OK) return status;
        normalizer->external = precompiled;
    } else {
        return uform__fail(outcome, UFORM_UNSUPPORTED, uform__text_function,
                           "%s: normalizer type \"%.64s\" is not supported (BertNormalizer, NFC, NFD, NFKC, NFKD, "
                           "Lowercase, StripAccents, Strip, Replace, Prepend, Nmt, ByteLevel, Precompiled, Sequence)",
                           path, type);
    }
    return UFORM_OK;
}

void uform__text_normalizer_free(uform__text_normalizer_t *normalizer) {
    if (!normalizer) return;
    for (size_t i = 0; i < normalizer->child_count; ++i) uform__text_normalizer_free(&normalizer->children[i]);
    free(normalizer->children);
    free(normalizer->content);
    uform__text_regex_free(&normalizer->regex);
    if (normalizer->kind == UFORM__TEXT_NORMALIZER_EXTERNAL)
        uform__sp_precompiled_free((uform__sp_precompiled_t *)normalizer->external);
    memset(normalizer, 0, sizeof *normalizer);
}

/* BertNormalizer's first pass: clean_text and handle_chinese_chars, character by character.
 * `*dropped_first`: the first character was removed. */
static int bert_clean(const uform__text_normalizer_t *normalizer, const char *text, size_t length,
                      uform__text_string_t *out, int *dropped_first) {
    *dropped_first = 0;
    for (size_t at = 0; at < length;) {
        int is_first = at == 0;
        uint32_t c = uform__text_utf8_next(text, &at);
        *dropped_first |= is_first;
        if (normalizer->clean_text) {
            /* Controls go first, whitespace or not (U+0085, \v, \f are both); \t \n \r are kept. */
            int kept_control = c == '\t' || c == '\n' || c == '\r';
            if (c == 0 || c == 0xFFFD || (!kept_control && uform__text_is_other(c))) continue;
            if (kept_control || uform__text_is_whitespace(c)) c = ' ';
        }
        if (is_first) *dropped_first = 0;
        int chinese = normalizer->handle_chinese_chars && uform__text_is_chinese(c);
        if (chinese && uform__text_string_append(out, " ", 1) != 0) return -1;
        if (uform__text_utf8_put(out, c) != 0) return -1;
        if (chinese && uform__text_string_append(out, " ", 1) != 0) return -1;
    }
    return 0;
}

/* Keeps the characters for which `drop` answers 0; clears `*first` when the first one goes. */
static int filter(const char *text, size_t length, int (*drop)(uint32_t), uform__text_string_t *out, int *first) {
    for (size_t at = 0; at < length;) {
        size_t start = at;
        uint32_t c = uform__text_utf8_next(text, &at);
        if (drop(c)) {
            if (start == 0) *first = 0;
            continue;
        }
        if (uform__text_string_append(out, text + start, at - start) != 0) return -1;
    }
    return 0;
}

static int lowercase(const char *text, size_t length, uform__text_string_t *out) {
    for (size_t at = 0; at < length;)
        if (uform__text_lowercase_put(out, uform__text_utf8_next(text, &at)) != 0) return -1;
    return 0;
}

static int nmt_drop(uint32_t c) {
    return (c >= 0x01 && c <= 0x08) || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F || c == 0x8F || c == 0x9F;
}

static int nmt(const char *text, size_t length, uform__text_string_t *out, int *first) {
    for (size_t at = 0; at < length;) {
        size_t start = at;
        uint32_t c = uform__text_utf8_next(text, &at);
        if (nmt_drop(c)) {
            if (start == 0) *first = 0;
            continue;
        }
        int space = c == 0x09 || c == 0x0A || c == 0x0C || c == 0x0D || c == 0x1680 || (c >= 0x200B && c <= 0x200F) ||
                    c == 0x2028 || c == 0x2029 || c == 0x2581 || c == 0xFEFF || c == 0xFFFD;
        if (uform__text_string_append(out, space ? " " : text + start, space ? 1 : at - start) != 0) return -1;
    }
    return 0;
}

static int strip(const uform__text_normalizer_t *normalizer, const char *text, size_t length,
                 uform__text_string_t *out, int *first) {
    size_t start = 0, end = length;
    if (normalizer->strip_left)
        while (start < end) {
            size_t at = start;
            if (!uform__text_is_whitespace(uform__text_utf8_next(text, &at))) break;
            start = at;
        }
    if (normalizer->strip_right)
        while (end > start) {
            size_t lead = end - 1;
            while (lead > start && ((unsigned char)text[lead] & 0xC0) == 0x80) --lead;
            size_t at = lead;
            if (!uform__text_is_whitespace(uform__text_utf8_next(text, &at))) break;
            end = lead;
        }
    if (start > 0) *first = 0;
    return uform__text_string_append(out, text + start, end - start);
}

static int byte_level(const char *text, size_t length, uform__text_string_t *out) {
    for (size_t at = 0; at < length; ++at)
        if (uform__text_utf8_put(out, uform__text_byte_char((unsigned char)text[at])) != 0) return -1;
    return 0;
}

static uform_status_t out_of_memory(uform_outcome_t *outcome) {
    return uform__fail(outcome, UFORM_OUT_OF_MEMORY, "uform__tokenizer_encode", "out of memory normalizing the text");
}

uform_status_t uform__text_normalize(const uform__text_normalizer_t *normalizer, const char *text, size_t length,
                                     uform__text_string_t *out, int *first, uform__text_scratch_t *scratch,
                                     uform_outcome_t *outcome) {
    int failed = 0, ignored_first = 0;
    if (!first) first = &ignored_first;
    switch (normalizer->kind) {
    case UFORM__TEXT_NORMALIZER_BERT: {
        uform__text_string_t cleaned = {0}, decomposed = {0};
        const char *current = text;
        size_t current_length = length;
        if (normalizer->clean_text || normalizer->handle_chinese_chars) {
            int dropped_first = 0;
            failed = bert_clean(normalizer, current, current_length, &cleaned, &dropped_first) != 0 ||
                     uform__text_string_append(&cleaned, "", 0) != 0;
            if (dropped_first) *first = 0;
            current = cleaned.data, current_length = cleaned.length;
        }
        if (!failed && normalizer->strip_accents) {
            failed = uform__text_normalize_form(current, current_length, UFORM__TEXT_NFD, &decomposed) != 0 ||
                     uform__text_string_append(&decomposed, "", 0) != 0;
            if (!failed) {
                uform__text_string_clear(&cleaned);
                failed = filter(decomposed.data, decomposed.length, uform__text_is_nonspacing_mark, &cleaned,
                                first) != 0 ||
                         uform__text_string_append(&cleaned, "", 0) != 0;
                current = cleaned.data, current_length = cleaned.length;
            }
        }
        if (!failed) {
            if (normalizer->lowercase) failed = lowercase(current, current_length, out) != 0;
            else failed = uform__text_string_append(out, current, current_length) != 0;
        }
        uform__text_string_free(&cleaned);
        uform__text_string_free(&decomposed);
        break;
    }
    case UFORM__TEXT_NORMALIZER_FORM:
        failed = uform__text_normalize_form(text, length, normalizer->form, out) != 0;
        break;
    case UFORM__TEXT_NORMALIZER_LOWERCASE: failed = lowercase(text, length, out) != 0; break;
    case UFORM__TEXT_NORMALIZER_STRIP_ACCENTS:
        failed = filter(text, length, uform__text_is_combining_mark, out, first) != 0;
        break;
    case UFORM__TEXT_NORMALIZER_NMT: failed = nmt(text, length, out, first) != 0; break;
    case UFORM__TEXT_NORMALIZER_BYTE_LEVEL: failed = byte_level(text, length, out) != 0; break;
    case UFORM__TEXT_NORMALIZER_STRIP: failed = strip(normalizer, text, length, out, first) != 0; break;
    case UFORM__TEXT_NORMALIZER_PREPEND:
        if (length) failed = uform__text_string_append(out, normalizer->content, strlen(normalizer->content)) != 0;
        failed = failed || uform__text_string_append(out, text, length) != 0;
        break;
    case UFORM__TEXT_NORMALIZER_REPLACE: {
        int result = uform__text_regex_replace(&normalizer->regex, text, length, normalizer->content, scratch, out);
        /* A match at the start: `tokenizers` aligns the replacement with the match's last character
         * (or, when the replacement is empty, the text continues after the match), so the text
         * starts where the input does only when the match was a single character replaced. */
        const uform__text_spans_t *spans = &scratch->spans;
        if (result == 0 && spans->count && spans->data[0].is_match && spans->data[0].end > 0) {
            size_t after_first = 0;
            (void)uform__text_utf8_next(text, &after_first);
            if (!normalizer->content[0] || spans->data[0].end > after_first) *first = 0;
        }
        if (result == -2)
            return uform__fail(outcome, UFORM_UNSUPPORTED, "uform__tokenizer_encode",
                               "a Replace normalizer's regular expression exceeded PCRE2's match limits on a "
                               "%zu-byte text",
                               length);
        failed = result != 0;
        break;
    }
    case UFORM__TEXT_NORMALIZER_EXTERNAL:
        return uform__sp_precompiled_normalize((const uform__sp_precompiled_t *)normalizer->external, text, length,
                                               out, outcome);
    case UFORM__TEXT_NORMALIZER_SEQUENCE: {
        uform__text_string_t buffers[2] = {{0}, {0}};
        const char *current = text;
        size_t current_length = length;
        uform_status_t status = UFORM_OK;
        for (size_t i = 0; i < normalizer->child_count && status == UFORM_OK; ++i) {
            uform__text_string_t *next = &buffers[i & 1];
            uform__text_string_clear(next);
            status =
                uform__text_normalize(&normalizer->children[i], current, current_length, next, first, scratch, outcome);
            if (status == UFORM_OK && uform__text_string_append(next, "", 0) != 0) status = out_of_memory(outcome);
            current = next->data, current_length = next->length;
        }
        if (status == UFORM_OK && uform__text_string_append(out, current, current_length) != 0)
            status = out_of_memory(outcome);
        uform__text_string_free(&buffers[0]);
        uform__text_string_free(&buffers[1]);
        return status;
    }
    }
    return failed ? out_of_memory(outcome) : UFORM_OK;
}
