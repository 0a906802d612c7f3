/*
 * The Unicode questions the tokenizer stages ask, answered from utf8proc (Debian's libutf8proc,
 * Unicode 15.0) the way the Rust code of `tokenizers` answers them: Rust's char methods
 * (is_whitespace, is_numeric, is_alphanumeric, to_lowercase), the `regex` crate's \w, and the
 * `unicode_categories` crate, whose tables are of Unicode 8.0, and the normalization crate, of
 * Unicode 9.0 (tokenizer_unicode_tables.c holds the characters they read differently from utf8proc),
 * plus UTF-8 repair and the normalization forms.
 */
#include <utf8proc.h>

#include "core/utf8.h"
#include "text/tokenizer_internal.h"

int uform__text_utf8_repair(const char *text, size_t length, uform__text_string_t *out) {
    const unsigned char *bytes = (const unsigned char *)text;
    size_t at = 0, clean_from = 0;
    while (at < length) {
        if (bytes[at] < 0x80) {
            ++at;
            continue;
        }
        int valid;
        size_t width = uform__utf8_sequence(bytes + at, length - at, &valid);
        if (valid) {
            at += width;
            continue;
        }
        if (uform__text_string_append(out, text + clean_from, at - clean_from) != 0) return -1;
        if (uform__text_string_append(out, "\xEF\xBF\xBD", 3) != 0) return -1;
        at += width;
        clean_from = at;
    }
    return uform__text_string_append(out, text + clean_from, length - clean_from);
}

size_t uform__text_utf8_width(unsigned char lead) {
    if (lead < 0x80) return 1;
    if (lead < 0xE0) return 2;
    if (lead < 0xF0) return 3;
    return 4;
}

uint32_t uform__text_utf8_next(const char *text, size_t *at) {
    const unsigned char *bytes = (const unsigned char *)text + *at;
    uint32_t lead = bytes[0];
    if (lead < 0x80) return *at += 1, lead;
    if (lead < 0xE0) return *at += 2, ((lead & 0x1F) << 6) | (bytes[1] & 0x3F);
    if (lead < 0xF0) return *at += 3, ((lead & 0x0F) << 12) | ((uint32_t)(bytes[1] & 0x3F) << 6) | (bytes[2] & 0x3F);
    *at += 4;
    return ((lead & 0x07) << 18) | ((uint32_t)(bytes[1] & 0x3F) << 12) | ((uint32_t)(bytes[2] & 0x3F) << 6) |
           (bytes[3] & 0x3F);
}

int uform__text_utf8_put(uform__text_string_t *out, uint32_t code_point) {
    char buffer[4];
    size_t length;
    if (code_point < 0x80) buffer[0] = (char)code_point, length = 1;
    else if (code_point < 0x800) {
        buffer[0] = (char)(0xC0 | (code_point >> 6));
        buffer[1] = (char)(0x80 | (code_point & 0x3F));
        length = 2;
    } else if (code_point < 0x10000) {
        buffer[0] = (char)(0xE0 | (code_point >> 12));
        buffer[1] = (char)(0x80 | ((code_point >> 6) & 0x3F));
        buffer[2] = (char)(0x80 | (code_point & 0x3F));
        length = 3;
    } else {
        buffer[0] = (char)(0xF0 | (code_point >> 18));
        buffer[1] = (char)(0x80 | ((code_point >> 12) & 0x3F));
        buffer[2] = (char)(0x80 | ((code_point >> 6) & 0x3F));
        buffer[3] = (char)(0x80 | (code_point & 0x3F));
        length = 4;
    }
    return uform__text_string_append(out, buffer, length);
}

/* The White_Space property: 25 code points, stable since Unicode 6.3 (U+180E left it then). */
int uform__text_is_whitespace(uint32_t c) {
    if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D);
    if (c < 0x85) return 0;
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

static utf8proc_category_t category(uint32_t c) { return utf8proc_category((utf8proc_int32_t)c); }

int uform__text_is_numeric(uint32_t c) {
    if (c < 0x80) return c >= '0' && c <= '9';
    utf8proc_category_t k = category(c);
    return k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO;
}

static int is_letter(utf8proc_category_t k) {
    return k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LL || k == UTF8PROC_CATEGORY_LT ||
           k == UTF8PROC_CATEGORY_LM || k == UTF8PROC_CATEGORY_LO;
}

static int is_mark(utf8proc_category_t k) {
    return k == UTF8PROC_CATEGORY_MN || k == UTF8PROC_CATEGORY_MC || k == UTF8PROC_CATEGORY_ME;
}

int uform__text_is_alphanumeric(uint32_t c) {
    if (c < 0x80) return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
    utf8proc_category_t k = category(c);
    return is_letter(k) || k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO ||
           uform__text_is_other_alphabetic(c);
}

int uform__text_is_word(uint32_t c) {
    if (c < 0x80) return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c == '_';
    if (c == 0x200C || c == 0x200D) return 1; /* Join_Control */
    utf8proc_category_t k = category(c);
    return is_letter(k) || is_mark(k) || k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL ||
           k == UTF8PROC_CATEGORY_PC || uform__text_is_other_alphabetic(c);
}

int uform__text_is_punctuation(uint32_t c) {
    if (c < 0x80) return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
                         (c >= 0x7B && c <= 0x7E);
    utf8proc_category_t k = category(c);
    if (k < UTF8PROC_CATEGORY_PC || k > UTF8PROC_CATEGORY_PO) return 0;
    return !uform__text_newer_than_unicode8(c);
}

int uform__text_is_other(uint32_t c) {
    utf8proc_category_t k = category(c);
    if (k == UTF8PROC_CATEGORY_CC || k == UTF8PROC_CATEGORY_CO) return 1;
    return k == UTF8PROC_CATEGORY_CF && !uform__text_newer_than_unicode8(c);
}

int uform__text_is_nonspacing_mark(uint32_t c) {
    if (c < 0x300) return 0;
    return category(c) == UTF8PROC_CATEGORY_MN && !uform__text_newer_than_unicode8(c);
}

int uform__text_is_combining_mark(uint32_t c) {
    return c >= 0x300 && is_mark(category(c)) && !uform__text_newer_than_unicode9(c);
}

int uform__text_is_chinese(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* Rust lowercases char by char with the full mapping; the only unconditional mapping to more
 * than one character is U+0130 (capital I with dot above) -> "i\u0307"; the rest is utf8proc's
 * simple mapping. */
int uform__text_lowercase_put(uform__text_string_t *out, uint32_t c) {
    if (c < 0x80) {
        char lower = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
        return uform__text_string_append(out, &lower, 1);
    }
    if (c == 0x130) return uform__text_string_append(out, "i\xCC\x87", 3);
    return uform__text_utf8_put(out, (uint32_t)utf8proc_tolower((utf8proc_int32_t)c));
}

/* The canonical combining class as Unicode 9.0 knew it (0 for what came later). */
static int combining_class(uint32_t c) {
    if (c < 0x300 || uform__text_newer_than_unicode9(c)) return 0;
    return utf8proc_get_property((utf8proc_int32_t)c)->combining_class;
}

/*
 * The normalization forms one code point at a time through utf8proc: each character's full
 * decomposition (none for a character newer than Unicode 9.0), canonical reordering of each run
 * of non-starters by combining class (a stable insertion sort, as the algorithm requires), then
 * canonical composition for NFC and NFKC. utf8proc_map would do the same with today's data for
 * every character, which the Rust crate does not have.
 */
int uform__text_normalize_form(const char *text, size_t length, uform__text_form_t form, uform__text_string_t *out) {
    size_t at = 0;
    while (at < length && (unsigned char)text[at] < 0x80) ++at;
    if (at == length) return uform__text_string_append(out, text, length); /* ASCII is in every form */
    int compat = form == UFORM__TEXT_NFKC || form == UFORM__TEXT_NFKD;
    int compose = form == UFORM__TEXT_NFC || form == UFORM__TEXT_NFKC;
    utf8proc_option_t options = UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0);
    /* A decomposition is at most 18 code points (U+FDFA), so 18 per byte covers any text. */
    size_t capacity = length * 18 + 18;
    utf8proc_int32_t *points = malloc(capacity * sizeof *points);
    if (!points) return -1;
    size_t count = 0;
    for (at = 0; at < length;) {
        uint32_t c = uform__text_utf8_next(text, &at);
        if (c < 0xA0 || uform__text_newer_than_unicode9(c)) {
            points[count++] = (utf8proc_int32_t)c;
            continue;
        }
        int boundary = 0;
        utf8proc_ssize_t written =
            utf8proc_decompose_char((utf8proc_int32_t)c, points + count, (utf8proc_ssize_t)(capacity - count), options,
                                    &boundary);
        if (written < 0) {
            free(points);
            return -1;
        }
        count += (size_t)written;
    }
    for (size_t i = 1; i < count; ++i) {
        int klass = combining_class((uint32_t)points[i]);
        if (klass == 0) continue;
        utf8proc_int32_t moving = points[i];
        size_t j = i;
        while (j > 0 && combining_class((uint32_t)points[j - 1]) > klass) points[j] = points[j - 1], --j;
        points[j] = moving;
    }
    if (compose) {
        utf8proc_ssize_t composed =
            utf8proc_normalize_utf32(points, (utf8proc_ssize_t)count, UTF8PROC_COMPOSE | UTF8PROC_STABLE);
        if (composed < 0) {
            free(points);
            return -1;
        }
        count = (size_t)composed;
    }
    int status = 0;
    for (size_t i = 0; i < count && status == 0; ++i) status = uform__text_utf8_put(out, (uint32_t)points[i]);
    free(points);
    return status;
}
