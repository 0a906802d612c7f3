/*
 * Pre-tokenizers of tokenizer.json, each as `tokenizers` (Rust) splits one piece of text:
 *   BertPreTokenizer  whitespace removed, then every punctuation character isolated
 *   Whitespace        the runs of \w+ and of [^\w\s]+ kept (the regex crate's Unicode \w)
 *   WhitespaceSplit   whitespace removed
 *   Punctuation       punctuation characters split off with a behaviour (default Isolated)
 *   Digits            numeric characters split off one by one or in runs
 *   ByteLevel         a prefix space (add_prefix_space), GPT-2's regex (use_regex), then every
 *                     byte written as its bytes_to_unicode character
 *   Split             a string or Oniguruma regex with a behaviour, optionally inverted
 *   CharDelimiterSplit  one character removed as the delimiter
 *   Sequence          each in turn
 *   Metaspace         the SentencePiece engineer's (sentencepiece.h)
 * "Whitespace" means Rust's char::is_whitespace; "punctuation" the unicode_categories crate's
 * P* of Unicode 8.0 plus ASCII punctuation. Character patterns produce one match per character,
 * gaps between them joined, as `tokenizers`' Pattern for Fn(char) -> bool does.
 */
#include <string.h>

#include "core/outcome.h"
#include "text/sentencepiece.h"
#include "text/tokenizer_internal.h"

/* GPT-2's pattern, as `tokenizers`' ByteLevel compiles it. */
static const char gpt2_pattern[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* One element of a Sequence's list, parsed into its slot; the count covers it once it parsed. */
static uform_status_t parse_child(void *context, size_t index, const cJSON *item, const char *path, uform_outcome_t *outcome) {
    uform__text_pretokenizer_t *pretokenizer = context;
    uform_status_t status = uform__text_pretokenizer_parse(item, path, &pretokenizer->children[index], outcome);
    if (status == UFORM_OK) pretokenizer->child_count = index + 1;
    return status;
}

uform_status_t uform__text_pretokenizer_parse(const cJSON *json, const char *path,
                                              uform__text_pretokenizer_t *pretokenizer, uform_outcome_t *outcome) {
    memset(pretokenizer, 0, sizeof *pretokenizer);
    const char *type;
    uform_status_t status = uform__text_json_type(json, path, &type, outcome);
    if (status != UFORM_OK) return status;
    int flag;
    if (strcmp(type, "BertPreTokenizer") == 0) pretokenizer->kind = UFORM__TEXT_PRE_BERT;
    else if (strcmp(type, "Whitespace") == 0) pretokenizer->kind = UFORM__TEXT_PRE_WHITESPACE;
    else if (strcmp(type, "WhitespaceSplit") == 0) pretokenizer->kind = UFORM__TEXT_PRE_WHITESPACE_SPLIT;
    else if (strcmp(type, "Punctuation") == 0) {
        pretokenizer->kind = UFORM__TEXT_PRE_PUNCTUATION;
        status = uform__text_json_behavior(json, "behavior", path, UFORM__TEXT_ISOLATED, &pretokenizer->behavior,
                                           outcome);
    } else if (strcmp(type, "Digits") == 0) {
        pretokenizer->kind = UFORM__TEXT_PRE_DIGITS;
        status = uform__text_json_bool(json, "individual_digits", path, 0, &flag, outcome);
        pretokenizer->individual_digits = (uint8_t)(status == UFORM_OK && flag);
    } else if (strcmp(type, "ByteLevel") == 0) {
        pretokenizer->kind = UFORM__TEXT_PRE_BYTE_LEVEL;
        if ((status = uform__text_json_bool(json, "add_prefix_space", path, 1, &flag, outcome)) != UFORM_OK)
            return status;
        pretokenizer->add_prefix_space = (uint8_t)flag;
        if ((status = uform__text_json_bool(json, "use_regex", path, 1, &flag, outcome)) != UFORM_OK) return status;
        pretokenizer->use_regex = (uint8_t)flag;
        if (flag) status = uform__text_regex_compile(&pretokenizer->regex, gpt2_pattern, 0, path, outcome);
    } else if (strcmp(type, "Split") == 0) {
        pretokenizer->kind = UFORM__TEXT_PRE_SPLIT;
        if ((status = uform__text_json_bool(json, "invert", path, 0, &flag, outcome)) != UFORM_OK) return status;
        pretokenizer->invert = (uint8_t)flag;
        status = uform__text_json_behavior(json, "behavior", path, UFORM__TEXT_REMOVED, &pretokenizer->behavior,
                                           outcome);
        if (status != UFORM_OK) return status;
        char where[UFORM__TEXT_PATH];
        uform__text_path(where, path, "pattern");
        const cJSON *pattern = uform__text_json_member(json, "pattern");
        const char *text;
        if (!cJSON_IsObject(pattern))
            return uform__fail(outcome, UFORM_FORMAT, uform__text_function,
                               "%s is %s, expected {\"String\": ...} or {\"Regex\": ...}", where,
                               uform__json_kind(pattern));
        if ((status = uform__text_json_string(pattern, "Regex", where, 0, &text, outcome)) != UFORM_OK) return status;
        if (text) return uform__text_regex_compile(&pretokenizer->regex, text, 0, where, outcome);
        if ((status = uform__text_json_string(pattern, "String", where, 0, &text, outcome)) != UFORM_OK) return status;
        if (text) return uform__text_regex_compile(&pretokenizer->regex, text, 1, where, outcome);
        return uform__fail(outcome, UFORM_FORMAT, uform__text_function, "%s has neither \"String\" nor \"Regex\"",
                           where);
    } else if (strcmp(type, "CharDelimiterSplit") == 0) {
        const char *delimiter;
        pretokenizer->kind = UFORM__TEXT_PRE_DELIMITER;
        if ((status = uform__text_json_string(json, "delimiter", path, 1, &delimiter, outcome)) != UFORM_OK)
            return status;
        size_t at = 0, length = strlen(delimiter);
        uform__text_string_t repaired = {0};
        if (uform__text_utf8_repair(delimiter, length, &repaired) != 0)
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, uform__text_function, "out of memory reading %s", path);
        uint32_t c = repaired.length ? uform__text_utf8_next(repaired.data, &at) : 0;
        int single = repaired.length > 0 && at == repaired.length && repaired.length == length;
        uform__text_string_free(&repaired);
        if (!single)
            return uform__fail(outcome, UFORM_FORMAT, uform__text_function,
                               "%s.delimiter must be one character, found \"%.32s\"", path, delimiter);
        pretokenizer->delimiter = c;
    } else if (strcmp(type, "Sequence") == 0) {
        char where[UFORM__TEXT_PATH];
        const cJSON *list = NULL;
        if ((status = uform__text_json_array(json, path, "pretokenizers", where, &list, outcome)) != UFORM_OK) return status;
        size_t count = (size_t)cJSON_GetArraySize(list);
        pretokenizer->kind = UFORM__TEXT_PRE_SEQUENCE;
        pretokenizer->children = calloc(count ? count : 1, sizeof *pretokenizer->children);
        if (!pretokenizer->children)
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, uform__text_function, "out of memory reading %s", where);
        if ((status = uform__text_json_each(list, where, parse_child, pretokenizer, outcome)) != UFORM_OK) {
            uform__text_pretokenizer_free(pretokenizer);
            return status;
        }
    } else if (strcmp(type, "Metaspace") == 0) {
        pretokenizer->kind = UFORM__TEXT_PRE_EXTERNAL;
        uform__sp_metaspace_t *metaspace = malloc(sizeof *metaspace);
        if (!metaspace)
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, uform__text_function, "out of memory reading %s", path);
        pretokenizer->external = metaspace;
        status = uform__sp_metaspace_from_json(json, metaspace, outcome);
    } else {
        return uform__fail(outcome, UFORM_UNSUPPORTED, uform__text_function,
                           "%s: pre-tokenizer type \"%.64s\" is not supported (BertPreTokenizer, Whitespace, "
                           "WhitespaceSplit, Punctuation, Digits, ByteLevel, Split, CharDelimiterSplit, Metaspace, "
                           "Sequence)",
                           path, type);
    }
    if (status != UFORM_OK) uform__text_pretokenizer_free(pretokenizer);
    return status;
}

void uform__text_pretokenizer_free(uform__text_pretokenizer_t *pretokenizer) {
    if (!pretokenizer) return;
    for (size_t i = 0; i < pretokenizer->child_count; ++i) uform__text_pretokenizer_free(&pretokenizer->children[i]);
    free(pretokenizer->children);
    uform__text_regex_free(&pretokenizer->regex);
    free(pretokenizer->external);
    memset(pretokenizer, 0, sizeof *pretokenizer);
}

typedef int (*char_class_t)(uint32_t c, uint32_t parameter);

static int whitespace_class(uint32_t c, uint32_t parameter) { return (void)parameter, uform__text_is_whitespace(c); }
static int punctuation_class(uint32_t c, uint32_t parameter) { return (void)parameter, uform__text_is_punctuation(c); }
static int numeric_class(uint32_t c, uint32_t parameter) { return (void)parameter, uform__text_is_numeric(c); }
static int delimiter_class(uint32_t c, uint32_t parameter) { return c == parameter; }

/* One match per character of the class, the characters between them joined into gaps. */
static int class_spans(const char *text, size_t length, char_class_t member, uint32_t parameter,
                       uform__text_spans_t *spans) {
    spans->count = 0;
    if (length == 0) return uform__text_spans_add(spans, 0, 0, 0);
    size_t gap_start = 0;
    for (size_t at = 0; at < length;) {
        size_t start = at;
        uint32_t c = uform__text_utf8_next(text, &at);
        if (!member(c, parameter)) continue;
        if (gap_start < start && uform__text_spans_add(spans, gap_start, start, 0) != 0) return -1;
        if (uform__text_spans_add(spans, start, at, 1) != 0) return -1;
        gap_start = at;
    }
    if (gap_start < length && uform__text_spans_add(spans, gap_start, length, 0) != 0) return -1;
    return 0;
}

/* Whitespace: runs of word characters and runs of other non-space characters are the matches
 * (\w+|[^\w\s]+, leftmost-first, so each run is maximal); the spaces between are gaps. */
static int whitespace_spans(const char *text, size_t length, uform__text_spans_t *spans) {
    spans->count = 0;
    if (length == 0) return uform__text_spans_add(spans, 0, 0, 0);
    size_t previous = 0, at = 0;
    while (at < length) {
        size_t start = at;
        uint32_t c = uform__text_utf8_next(text, &at);
        int kind = uform__text_is_word(c) ? 1 : uform__text_is_whitespace(c) ? 0 : 2;
        if (kind == 0) continue;
        size_t end = at;
        while (end < length) {
            size_t next = end;
            uint32_t d = uform__text_utf8_next(text, &next);
            int other = uform__text_is_word(d) ? 1 : uform__text_is_whitespace(d) ? 0 : 2;
            if (other != kind) break;
            end = next;
        }
        if (previous < start && uform__text_spans_add(spans, previous, start, 0) != 0) return -1;
        if (uform__text_spans_add(spans, start, end, 1) != 0) return -1;
        previous = at = end;
    }
    if (previous < length && uform__text_spans_add(spans, previous, length, 0) != 0) return -1;
    return 0;
}

static uform_status_t out_of_memory(uform_outcome_t *outcome) {
    return uform__fail(outcome, UFORM_OUT_OF_MEMORY, "uform__tokenizer_encode", "out of memory pre-tokenizing the text");
}

static uform_status_t regex_failed(int result, size_t length, uform_outcome_t *outcome) {
    if (result == -1) return out_of_memory(outcome);
    return uform__fail(outcome, UFORM_UNSUPPORTED, "uform__tokenizer_encode",
                       "a pre-tokenizer's regular expression exceeded PCRE2's match limits on a %zu-byte piece",
                       length);
}

/* ByteLevel on one piece: prefix space, GPT-2 regex (Isolated), then bytes to characters. */
static uform_status_t byte_level(const uform__text_pretokenizer_t *pretokenizer, const uform__text_piece_t *piece,
                                 const char *bytes, uform__text_pieces_t *out, uform__text_scratch_t *scratch,
                                 uform_outcome_t *outcome) {
    uform__text_string_t prefixed = {0}, mapped = {0};
    uform_status_t status = UFORM_OK;
    const char *text = bytes;
    size_t length = piece->length;
    if (pretokenizer->add_prefix_space && text[0] != ' ') {
        if (uform__text_string_append(&prefixed, " ", 1) != 0 ||
            uform__text_string_append(&prefixed, text, length) != 0) {
            status = out_of_memory(outcome);
            goto done;
        }
        text = prefixed.data, length = prefixed.length;
    }
    uform__text_spans_t *spans = &scratch->spans;
    if (pretokenizer->use_regex) {
        int result = uform__text_regex_spans(&pretokenizer->regex, text, length, scratch, spans);
        if (result != 0) {
            status = regex_failed(result, length, outcome);
            goto done;
        }
    } else {
        spans->count = 0;
        if (uform__text_spans_add(spans, 0, length, 0) != 0) {
            status = out_of_memory(outcome);
            goto done;
        }
    }
    for (size_t i = 0; i < spans->count; ++i) {
        const uform__text_span_t *span = &spans->data[i];
        if (span->end == span->start) continue;
        uform__text_string_clear(&mapped);
        for (size_t at = span->start; at < span->end; ++at)
            if (uform__text_utf8_put(&mapped, uform__text_byte_char((unsigned char)text[at])) != 0) {
                status = out_of_memory(outcome);
                goto done;
            }
        if (uform__text_pieces_add(out, mapped.data, mapped.length, UFORM__TEXT_NO_TOKEN,
                                   piece->first && span->start == 0) != 0) {
            status = out_of_memory(outcome);
            goto done;
        }
    }
done:
    uform__text_string_free(&prefixed);
    uform__text_string_free(&mapped);
    return status;
}

static uform_status_t metaspace(const uform__text_pretokenizer_t *pretokenizer, const uform__text_piece_t *piece,
                                const char *bytes, uform__text_pieces_t *out, uform_outcome_t *outcome) {
    uform__text_string_t text = {0};
    uform__sp_spans_t words = {0};
    uform_status_t status = uform__sp_metaspace_apply((const uform__sp_metaspace_t *)pretokenizer->external, bytes,
                                                      piece->length, piece->first, &text, &words, outcome);
    for (size_t i = 0; status == UFORM_OK && i < words.count; ++i)
        if (uform__text_pieces_add(out, text.data + words.data[i].start, words.data[i].end - words.data[i].start,
                                   UFORM__TEXT_NO_TOKEN, piece->first && words.data[i].start == 0) != 0)
            status = out_of_memory(outcome);
    uform__text_string_free(&text);
    uform__sp_spans_free(&words);
    return status;
}

/* One pre-tokenizer that is not a Sequence, on one text piece. */
static uform_status_t split_piece(const uform__text_pretokenizer_t *pretokenizer, const uform__text_piece_t *piece,
                                  const char *bytes, uform__text_pieces_t *out, uform__text_scratch_t *scratch,
                                  uform_outcome_t *outcome) {
    uform__text_spans_t *spans = &scratch->spans;
    size_t length = piece->length;
    int result = 0;
    switch (pretokenizer->kind) {
    case UFORM__TEXT_PRE_BERT: {
        /* Whitespace removed, then punctuation isolated within each word. */
        if (class_spans(bytes, length, whitespace_class, 0, spans) != 0) return out_of_memory(outcome);
        uform__text_pieces_t words = {0};
        result = uform__text_split_spans(bytes, piece, spans, 0, UFORM__TEXT_REMOVED, &words);
        for (size_t i = 0; result == 0 && i < words.count; ++i) {
            const uform__text_piece_t *word = &words.data[i];
            const char *word_bytes = words.text.data + word->offset;
            result = class_spans(word_bytes, word->length, punctuation_class, 0, spans);
            if (result == 0) result = uform__text_split_spans(word_bytes, word, spans, 0, UFORM__TEXT_ISOLATED, out);
        }
        uform__text_pieces_free(&words);
        return result == 0 ? UFORM_OK : out_of_memory(outcome);
    }
    case UFORM__TEXT_PRE_WHITESPACE:
        if (whitespace_spans(bytes, length, spans) != 0) return out_of_memory(outcome);
        result = uform__text_split_spans(bytes, piece, spans, 1, UFORM__TEXT_REMOVED, out);
        break;
    case UFORM__TEXT_PRE_WHITESPACE_SPLIT:
        if (class_spans(bytes, length, whitespace_class, 0, spans) != 0) return out_of_memory(outcome);
        result = uform__text_split_spans(bytes, piece, spans, 0, UFORM__TEXT_REMOVED, out);
        break;
    case UFORM__TEXT_PRE_PUNCTUATION:
        if (class_spans(bytes, length, punctuation_class, 0, spans) != 0) return out_of_memory(outcome);
        result = uform__text_split_spans(bytes, piece, spans, 0, pretokenizer->behavior, out);
        break;
    case UFORM__TEXT_PRE_DIGITS:
        if (class_spans(bytes, length, numeric_class, 0, spans) != 0) return out_of_memory(outcome);
        result = uform__text_split_spans(bytes, piece, spans, 0,
                                         pretokenizer->individual_digits ? UFORM__TEXT_ISOLATED : UFORM__TEXT_CONTIGUOUS,
                                         out);
        break;
    case UFORM__TEXT_PRE_DELIMITER:
        if (class_spans(bytes, length, delimiter_class, pretokenizer->delimiter, spans) != 0)
            return out_of_memory(outcome);
        result = uform__text_split_spans(bytes, piece, spans, 0, UFORM__TEXT_REMOVED, out);
        break;
    case UFORM__TEXT_PRE_SPLIT:
        result = uform__text_regex_spans(&pretokenizer->regex, bytes, length, scratch, spans);
        if (result != 0) return regex_failed(result, length, outcome);
        result = uform__text_split_spans(bytes, piece, spans, pretokenizer->invert, pretokenizer->behavior, out);
        break;
    case UFORM__TEXT_PRE_BYTE_LEVEL: return byte_level(pretokenizer, piece, bytes, out, scratch, outcome);
    case UFORM__TEXT_PRE_EXTERNAL: return metaspace(pretokenizer, piece, bytes, out, outcome);
    case UFORM__TEXT_PRE_SEQUENCE: break; /* handled by the caller */
    }
    return result == 0 ? UFORM_OK : out_of_memory(outcome);
}

uform_status_t uform__text_pretokenize(const uform__text_pretokenizer_t *pretokenizer, const uform__text_pieces_t *in,
                                       uform__text_pieces_t *out, uform__text_scratch_t *scratch,
                                       uform_outcome_t *outcome) {
    if (pretokenizer->kind == UFORM__TEXT_PRE_SEQUENCE) {
        uform__text_pieces_t buffers[2] = {{{0}}, {{0}}};
        const uform__text_pieces_t *current = in;
        uform_status_t status = UFORM_OK;
        for (size_t i = 0; i < pretokenizer->child_count && status == UFORM_OK; ++i) {
            uform__text_pieces_t *next = i + 1 == pretokenizer->child_count ? out : &buffers[i & 1];
            if (next != out) uform__text_pieces_clear(next);
            status = uform__text_pretokenize(&pretokenizer->children[i], current, next, scratch, outcome);
            current = next;
        }
        if (status == UFORM_OK && pretokenizer->child_count == 0)
            for (size_t i = 0; i < in->count && status == UFORM_OK; ++i)
                if (uform__text_pieces_add(out, in->text.data + in->data[i].offset, in->data[i].length,
                                           in->data[i].token, in->data[i].first) != 0)
                    status = out_of_memory(outcome);
        uform__text_pieces_free(&buffers[0]);
        uform__text_pieces_free(&buffers[1]);
        return status;
    }
    for (size_t i = 0; i < in->count; ++i) {
        const uform__text_piece_t *piece = &in->data[i];
        const char *bytes = in->text.data + piece->offset;
        uform_status_t status;
        if (piece->token != UFORM__TEXT_NO_TOKEN) {
            if (uform__text_pieces_add(out, bytes, piece->length, piece->token, piece->first) != 0)
                return out_of_memory(outcome);
            continue;
        }
        if ((status = split_piece(pretokenizer, piece, bytes, out, scratch, outcome)) != UFORM_OK) return status;
    }
    return UFORM_OK;
}
