/* Writes bytes as a quoted base64 JSON string (the dumps' text encoding). Header-only, for tests. */
#ifndef UFORM_TESTS_BASE64_H
#define UFORM_TESTS_BASE64_H

#include <stddef.h>
#include <stdio.h>

static inline void json_base64(FILE *file, const unsigned char *bytes, size_t length) {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    fputc('"', file);
    for (size_t i = 0; i < length; i += 3) {
        unsigned value = (unsigned)bytes[i] << 16 | (i + 1 < length ? (unsigned)bytes[i + 1] << 8 : 0) |
                         (i + 2 < length ? bytes[i + 2] : 0);
        fputc(alphabet[(value >> 18) & 63], file);
        fputc(alphabet[(value >> 12) & 63], file);
        fputc(i + 1 < length ? alphabet[(value >> 6) & 63] : '=', file);
        fputc(i + 2 < length ? alphabet[value & 63] : '=', file);
    }
    fputc('"', file);
}

#endif
