/* Dtype names and sizes, UTF-8 validation and message quoting for the safetensors reader and
 * writer. The names are those of the reference implementation (huggingface/safetensors, Dtype). */
#include "io/safetensors.h"
#include "io/safetensors_text.h"

#include <stdint.h>
#include <string.h>

#include "core/utf8.h"

static const struct {
    const char *name;
    size_t size;
} dtype_table[UFORM__SAFETENSORS_DTYPE_COUNT] = {
    [UFORM__SAFETENSORS_BF16] = {"BF16", 2}, [UFORM__SAFETENSORS_F16] = {"F16", 2},
    [UFORM__SAFETENSORS_F32] = {"F32", 4},   [UFORM__SAFETENSORS_F64] = {"F64", 8},
    [UFORM__SAFETENSORS_I8] = {"I8", 1},     [UFORM__SAFETENSORS_U8] = {"U8", 1},
    [UFORM__SAFETENSORS_I32] = {"I32", 4},   [UFORM__SAFETENSORS_I64] = {"I64", 8},
    [UFORM__SAFETENSORS_BOOL] = {"BOOL", 1},
};

const char *uform__safetensors_dtype_name(uform__safetensors_dtype_t dtype) {
    if ((unsigned)dtype >= UFORM__SAFETENSORS_DTYPE_COUNT) return NULL;
    return dtype_table[dtype].name;
}

size_t uform__safetensors_dtype_size(uform__safetensors_dtype_t dtype) {
    if ((unsigned)dtype >= UFORM__SAFETENSORS_DTYPE_COUNT) return 0;
    return dtype_table[dtype].size;
}

int uform__safetensors_dtype_parse(const char *name, uform__safetensors_dtype_t *dtype) {
    if (!name) return 0;
    for (unsigned index = 0; index < UFORM__SAFETENSORS_DTYPE_COUNT; ++index) {
        if (strcmp(name, dtype_table[index].name) == 0) {
            if (dtype) *dtype = (uform__safetensors_dtype_t)index;
            return 1;
        }
    }
    return 0;
}

/* core/utf8.h's reading of well-formed UTF-8. */
int uform__safetensors_utf8_valid(const char *text, size_t length, size_t *bad_at) {
    size_t at = uform__utf8_invalid_at(text, length);
    if (at < length && bad_at) *bad_at = at;
    return at == length;
}

/*
 * Quotes at most `limit` bytes of `text` into `buffer[capacity]`: the head (a name) or, with
 * `keep_tail`, the end (a path, whose file name matters most), with "..." where it was cut.
 */
static const char *quote(char *buffer, size_t capacity, const char *text, size_t limit, int keep_tail) {
    static const char hex[] = "0123456789abcdef";
    if (!text) {
        memcpy(buffer, "(null)", 7);
        return buffer;
    }
    size_t length = strlen(text), out = 0, begin = 0, end = length;
    int cut_head = 0, cut_tail = 0;
    if (length > limit) {
        /* Move the cut to the start of a character so the message stays valid UTF-8. */
        if (keep_tail) {
            begin = length - limit;
            while (begin < length && ((unsigned char)text[begin] & 0xC0) == 0x80) ++begin;
            cut_head = 1;
        } else {
            end = limit;
            while (end > 0 && ((unsigned char)text[end] & 0xC0) == 0x80) --end;
            cut_tail = 1;
        }
    }
    buffer[out++] = '\'';
    if (cut_head) {
        memcpy(buffer + out, "...", 3);
        out += 3;
    }
    for (size_t at = begin; at < end; ++at) {
        unsigned char byte = (unsigned char)text[at];
        /* A character takes at most 4 output bytes; keep room for the quote, "..." and NUL, and
         * stop at the start of a character so valid UTF-8 stays valid. The second test bounds
         * stray continuation bytes of invalid text (the writer quotes names it refuses). */
        int starts_character = (byte & 0xC0) != 0x80;
        if ((starts_character && out + 4 + 5 > capacity) || out + 1 + 5 > capacity) {
            cut_tail = 1;
            break;
        }
        if (byte < 0x20 || byte == 0x7F) {
            buffer[out++] = '\\';
            buffer[out++] = 'x';
            buffer[out++] = hex[byte >> 4];
            buffer[out++] = hex[byte & 15];
        } else if (byte == '\'' || byte == '\\') {
            buffer[out++] = '\\';
            buffer[out++] = (char)byte;
        } else {
            buffer[out++] = (char)byte;
        }
    }
    buffer[out++] = '\'';
    if (cut_tail) {
        memcpy(buffer + out, "...", 3);
        out += 3;
    }
    buffer[out] = 0;
    return buffer;
}

const char *uform__safetensors_quote(char buffer[UFORM__SAFETENSORS_QUOTE_CAPACITY], const char *text) {
    return quote(buffer, UFORM__SAFETENSORS_QUOTE_CAPACITY, text, 80, 0);
}

const char *uform__safetensors_quote_path(char buffer[UFORM__SAFETENSORS_PATH_CAPACITY], const char *path) {
    return quote(buffer, UFORM__SAFETENSORS_PATH_CAPACITY, path, 180, 1);
}
