/*
 * Regular expressions of tokenizer.json (Split and Replace patterns, GPT-2's pre-tokenizer) run
 * by PCRE2 in UTF + UCP mode, JIT-compiled once at load, in place of the Oniguruma (Ruby syntax)
 * that `tokenizers` runs. The two agree on the constructs these files use (alternation, classes
 * with \p{L} and \p{N}, (?i:...), the lookahead \s+(?!\S)) except for the shorthand classes,
 * which PCRE2 10.42 defines a little differently in UCP mode, so they are rewritten before
 * compiling into the classes Oniguruma's documentation gives for Unicode text:
 *   \s  U+0009..U+000D, U+0085 and the separators Z (PCRE2 adds U+180E, which is no longer a space)
 *   \w  letters, marks, numbers and connector punctuation (PCRE2 10.42: letters, numbers, "_")
 *   \d  decimal numbers Nd (the same in both; written out for clarity)
 * The negated forms \S \W \D are rewritten outside brackets; inside a bracket only the positive
 * forms can be expanded, the negated ones keep PCRE2's meaning. Ruby's ^ and $ are line anchors,
 * hence PCRE2_MULTILINE.
 *
 * Matching follows the onig crate's find_iter: matches do not overlap, and an empty match right
 * where the previous match ended is skipped by advancing one character.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <string.h>

#include "core/outcome.h"
#include "text/tokenizer_internal.h"

static const char space_class[] = "\\t-\\r\\x{85}\\p{Z}";
static const char word_class[] = "\\p{L}\\p{M}\\p{N}\\p{Pc}";
static const char digit_class[] = "\\p{Nd}";

/* Rewrites the shorthand classes as above into `out`. -1 out of memory. */
static int translate(const char *pattern, uform__text_string_t *out) {
    int in_class = 0;
    for (size_t at = 0; pattern[at]; ++at) {
        char c = pattern[at];
        if (c == '\\' && pattern[at + 1]) {
            char next = pattern[at + 1];
            const char *body = NULL;
            int negated = 0;
            switch (next) {
            case 's': body = space_class; break;
            case 'S': body = space_class, negated = 1; break;
            case 'w': body = word_class; break;
            case 'W': body = word_class, negated = 1; break;
            case 'd': body = digit_class; break;
            case 'D': body = digit_class, negated = 1; break;
            default: break;
            }
            if (body && !(in_class && negated)) {
                int status = 0;
                if (!in_class) status |= uform__text_string_append(out, negated ? "[^" : "[", negated ? 2 : 1);
                status |= uform__text_string_append(out, body, strlen(body));
                if (!in_class) status |= uform__text_string_append(out, "]", 1);
                if (status) return -1;
            } else if (uform__text_string_append(out, pattern + at, 2) != 0) return -1;
            ++at;
            continue;
        }
        if (!in_class && c == '[') {
            /* A class opens; "[]...]" and "[^]...]" take their first ']' literally. */
            in_class = 1;
            if (uform__text_string_append(out, "[", 1) != 0) return -1;
            if (pattern[at + 1] == '^') {
                if (uform__text_string_append(out, "^", 1) != 0) return -1;
                ++at;
            }
            if (pattern[at + 1] == ']') {
                if (uform__text_string_append(out, "]", 1) != 0) return -1;
                ++at;
            }
            continue;
        }
        if (in_class && c == '[' && pattern[at + 1] == ':') {
            /* A POSIX class such as [:alpha:] inside a bracket: copy through its closing ":]". */
            const char *close = strstr(pattern + at + 2, ":]");
            if (close) {
                size_t length = (size_t)(close + 2 - (pattern + at));
                if (uform__text_string_append(out, pattern + at, length) != 0) return -1;
                at += length - 1;
                continue;
            }
        }
        if (in_class && c == ']') in_class = 0;
        if (uform__text_string_append(out, &c, 1) != 0) return -1;
    }
    return 0;
}

uform_status_t uform__text_regex_compile(uform__text_regex_t *regex, const char *pattern, int literal,
                                         const char *where, uform_outcome_t *outcome) {
    regex->code = NULL;
    uform__text_string_t translated = {0};
    uint32_t options = PCRE2_UTF;
    if (literal) {
        options |= PCRE2_LITERAL;
        if (uform__text_string_append(&translated, pattern, strlen(pattern)) != 0) goto out_of_memory;
    } else {
        options |= PCRE2_UCP | PCRE2_MULTILINE;
        if (uform__text_string_append(&translated, "", 0) != 0 || translate(pattern, &translated) != 0)
            goto out_of_memory;
    }
    int error = 0;
    PCRE2_SIZE error_at = 0;
    pcre2_code *code =
        pcre2_compile((PCRE2_SPTR)translated.data, translated.length, options, &error, &error_at, NULL);
    uform__text_string_free(&translated);
    if (!code) {
        if (error == PCRE2_ERROR_HEAP_FAILED || error == PCRE2_ERROR_HEAPLIMIT || error == PCRE2_ERROR_NOMEMORY)
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, uform__text_function,
                               "out of memory compiling the regular expression of %s", where);
        PCRE2_UCHAR message[160];
        if (pcre2_get_error_message(error, message, sizeof message) < 0) strcpy((char *)message, "unknown error");
        return uform__fail(outcome, UFORM_FORMAT, uform__text_function,
                           "%s: the %s \"%.80s\" does not compile: %s (near pattern byte %zu)", where,
                           literal ? "string" : "regular expression", pattern, (const char *)message,
                           (size_t)error_at);
    }
    /* Without the JIT (a kernel that forbids executable memory) the interpreter matches the same. */
    (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    regex->code = code;
    return UFORM_OK;

out_of_memory:
    uform__text_string_free(&translated);
    return uform__fail(outcome, UFORM_OUT_OF_MEMORY, uform__text_function,
                       "out of memory compiling the regular expression of %s", where);
}

void uform__text_regex_free(uform__text_regex_t *regex) {
    pcre2_code_free((pcre2_code *)regex->code);
    regex->code = NULL;
}

void uform__text_scratch_free(uform__text_scratch_t *scratch) {
    pcre2_match_data_free((pcre2_match_data *)scratch->match_data);
    free(scratch->spans.data);
    uform__text_string_free(&scratch->word);
    free(scratch->symbols);
    free(scratch->heap);
    memset(scratch, 0, sizeof *scratch);
}

int uform__text_regex_spans(const uform__text_regex_t *regex, const char *text, size_t length,
                            uform__text_scratch_t *scratch, uform__text_spans_t *spans) {
    spans->count = 0;
    if (length == 0) return uform__text_spans_add(spans, 0, 0, 0);
    if (!scratch->match_data) {
        scratch->match_data = pcre2_match_data_create(1, NULL);
        if (!scratch->match_data) return -1;
    }
    pcre2_match_data *data = (pcre2_match_data *)scratch->match_data;
    size_t search_from = 0, previous = 0, last_end = 0;
    int have_last = 0;
    while (search_from <= length) {
        int found = pcre2_match((const pcre2_code *)regex->code, (PCRE2_SPTR)text, length, search_from,
                                PCRE2_NO_UTF_CHECK, data, NULL);
        if (found == PCRE2_ERROR_NOMATCH) break;
        if (found == PCRE2_ERROR_NOMEMORY || found == PCRE2_ERROR_HEAPLIMIT) return -1;
        if (found < 0) return -2;
        PCRE2_SIZE *vector = pcre2_get_ovector_pointer(data);
        size_t start = vector[0], end = vector[1];
        if (start == end && have_last && last_end == end) {
            if (search_from >= length) break;
            search_from += uform__text_utf8_width((unsigned char)text[search_from]);
            continue;
        }
        search_from = end, last_end = end, have_last = 1;
        if (previous != start && uform__text_spans_add(spans, previous, start, 0) != 0) return -1;
        if (uform__text_spans_add(spans, start, end, 1) != 0) return -1;
        previous = end;
    }
    if (previous != length && uform__text_spans_add(spans, previous, length, 0) != 0) return -1;
    return 0;
}

int uform__text_regex_replace(const uform__text_regex_t *regex, const char *text, size_t length, const char *content,
                              uform__text_scratch_t *scratch, uform__text_string_t *out) {
    int status = uform__text_regex_spans(regex, text, length, scratch, &scratch->spans);
    if (status != 0) return status;
    size_t content_length = strlen(content);
    for (size_t i = 0; i < scratch->spans.count; ++i) {
        const uform__text_span_t *span = &scratch->spans.data[i];
        if (span->is_match) status = uform__text_string_append(out, content, content_length);
        else status = uform__text_string_append(out, text + span->start, span->end - span->start);
        if (status != 0) return -1;
    }
    return uform__text_string_append(out, "", 0);
}
