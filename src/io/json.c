/* Parsing JSON with cJSON and telling malformed text from a failed allocation (json.h). */
#include "io/json.h"

#include <errno.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>

/* The checker's cursor: a recursive-descent reader of cJSON's grammar that builds nothing. */
typedef struct reader_t {
    const unsigned char *text;
    size_t length, at;
    unsigned depth;
} reader_t;

enum { nesting_limit = 1000, number_limit = 63 };

/* cJSON skips every byte up to 0x20 (NUL included) as whitespace. */
static void skip_space(reader_t *reader) {
    while (reader->at < reader->length && reader->text[reader->at] <= 32) ++reader->at;
}

static int starts_with(const reader_t *reader, const char *word) {
    size_t length = strlen(word);
    return reader->length - reader->at >= length && memcmp(reader->text + reader->at, word, length) == 0;
}

/* Four hex digits; cJSON reads a malformed group as 0 rather than refusing it. */
static unsigned hex4(const unsigned char *p) {
    unsigned value = 0;
    for (int i = 0; i < 4; ++i) {
        unsigned char c = p[i];
        unsigned digit = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                         : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                         : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                                : 16;
        if (digit == 16) return 0;
        value = value << 4 | digit;
    }
    return value;
}

static int read_string(reader_t *reader) {
    if (reader->at >= reader->length || reader->text[reader->at] != '"') return 0;
    size_t close = reader->at + 1;
    while (close < reader->length && reader->text[close] != '"') {
        if (reader->text[close] == '\\') {
            if (close + 1 >= reader->length) return 0;
            ++close;
        }
        ++close;
    }
    if (close >= reader->length) return 0;
    const unsigned char *p = reader->text + reader->at + 1, *end = reader->text + close;
    while (p < end) {
        if (*p != '\\') {
            ++p;
            continue;
        }
        switch (p[1]) {
        case 'b': case 'f': case 'n': case 'r': case 't': case '"': case '\\': case '/': p += 2; break;
        case 'u': {
            if (end - p < 6) return 0;
            unsigned first = hex4(p + 2);
            if (first >= 0xDC00 && first <= 0xDFFF) return 0;
            if (first >= 0xD800 && first <= 0xDBFF) {
                if (end - (p + 6) < 6 || p[6] != '\\' || p[7] != 'u') return 0;
                unsigned second = hex4(p + 8);
                if (second < 0xDC00 || second > 0xDFFF) return 0;
                p += 12;
            } else {
                p += 6;
            }
            break;
        }
        default: return 0;
        }
    }
    reader->at = close + 1;
    return 1;
}

/* What cJSON does: take the run of number characters and let strtod read it. cJSON 1.7.15 copies
 * at most 63 of them into a buffer, later versions (and Debian's patched 1.7.15) the whole run;
 * a run longer than 63 is accepted whole here (the lenient reading, see json.h). */
static int read_number(reader_t *reader) {
    char copy[number_limit + 1];
    char point = localeconv()->decimal_point[0];
    size_t count = 0;
    for (; reader->at + count < reader->length; ++count) {
        unsigned char c = reader->text[reader->at + count];
        int digit = (c >= '0' && c <= '9') || c == '+' || c == '-' || c == 'e' || c == 'E';
        if (!digit && c != '.') break;
        if (count < number_limit) copy[count] = c == '.' ? point : (char)c;
    }
    copy[count < number_limit ? count : number_limit] = 0;
    char *after = NULL;
    (void)strtod(copy, &after);
    if (after == copy) return 0;
    reader->at += count > number_limit ? count : (size_t)(after - copy);
    return 1;
}

static int read_value(reader_t *reader);

/* An array ('[' values ']') or, when `keyed`, an object ('{' "key": value pairs '}'): one reader
 * for both, since they differ only in the key before each value and the closing byte. */
static int read_container(reader_t *reader, char close, int keyed) {
    if (reader->depth >= nesting_limit) return 0;
    ++reader->depth;
    ++reader->at; /* '[' or '{' */
    skip_space(reader);
    if (reader->at >= reader->length || reader->text[reader->at] != close) {
        for (;;) {
            skip_space(reader);
            if (keyed) {
                if (!read_string(reader)) return 0;
                skip_space(reader);
                if (reader->at >= reader->length || reader->text[reader->at] != ':') return 0;
                ++reader->at;
                skip_space(reader);
            }
            if (!read_value(reader)) return 0;
            skip_space(reader);
            if (reader->at < reader->length && reader->text[reader->at] == ',') {
                ++reader->at;
                continue;
            }
            break;
        }
        if (reader->at >= reader->length || reader->text[reader->at] != close) return 0;
    }
    ++reader->at;
    --reader->depth;
    return 1;
}

static int read_value(reader_t *reader) {
    if (starts_with(reader, "null") || starts_with(reader, "true")) return reader->at += 4, 1;
    if (starts_with(reader, "false")) return reader->at += 5, 1;
    if (reader->at >= reader->length) return 0;
    unsigned char c = reader->text[reader->at];
    if (c == '"') return read_string(reader);
    if (c == '-' || (c >= '0' && c <= '9')) return read_number(reader);
    if (c == '[') return read_container(reader, ']', 0);
    if (c == '{') return read_container(reader, '}', 1);
    return 0;
}

int uform__json_check(const char *text, size_t length, size_t *bad_at) {
    reader_t reader = {(const unsigned char *)text, text ? length : 0, 0, 0};
    if (reader.length > 4 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) reader.at = 3; /* as cJSON: only with 2 bytes after it */
    skip_space(&reader);
    int valid = reader.length > 0 && read_value(&reader);
    if (!valid && bad_at) *bad_at = reader.at;
    return valid;
}

uform_status_t uform__json_parse(const char *text, size_t length, cJSON **root, const char **end, size_t *error_at) {
    *root = NULL;
    const char *parse_end = NULL;
    int saved = errno;
    errno = 0;
    *root = cJSON_ParseWithLengthOpts(text, length, &parse_end, 0);
    int error = errno;
    errno = saved;
    if (*root) {
        if (end) *end = parse_end;
        return UFORM_OK;
    }
    size_t bad_at = parse_end && text && parse_end >= text ? (size_t)(parse_end - text) : 0;
    if (error_at) *error_at = bad_at;
    /* Well-formed text that cJSON still refused: an allocation failed (malloc sets ENOMEM). Both
     * conditions must hold, so neither a stale errno nor a difference between this checker and
     * the cJSON of the day can turn a corrupt file into an out-of-memory report. */
    if (error == ENOMEM && uform__json_check(text, length, NULL)) return UFORM_OUT_OF_MEMORY;
    return UFORM_FORMAT;
}

const char *uform__json_kind(const cJSON *item) {
    if (!item) return "missing";
    if (cJSON_IsString(item)) return "a string";
    if (cJSON_IsNumber(item)) return "a number";
    if (cJSON_IsArray(item)) return "an array";
    if (cJSON_IsObject(item)) return "an object";
    if (cJSON_IsBool(item)) return "a boolean";
    if (cJSON_IsNull(item)) return "null";
    return "an invalid value";
}
