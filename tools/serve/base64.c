/* Base64 (RFC 4648 §4); see base64.h. */
#include "base64.h"

#include <stdint.h>

static const char alphabet[64] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t serve_base64_encode(const unsigned char *bytes, size_t length, char *out) {
    size_t written = 0, i = 0;
    for (; i + 3 <= length; i += 3) {
        uint32_t triple = (uint32_t)bytes[i] << 16 | (uint32_t)bytes[i + 1] << 8 | bytes[i + 2];
        out[written++] = alphabet[triple >> 18];
        out[written++] = alphabet[(triple >> 12) & 63];
        out[written++] = alphabet[(triple >> 6) & 63];
        out[written++] = alphabet[triple & 63];
    }
    if (i < length) {
        uint32_t triple = (uint32_t)bytes[i] << 16 | (i + 1 < length ? (uint32_t)bytes[i + 1] << 8 : 0);
        out[written++] = alphabet[triple >> 18];
        out[written++] = alphabet[(triple >> 12) & 63];
        out[written++] = i + 1 < length ? alphabet[(triple >> 6) & 63] : '=';
        out[written++] = '=';
    }
    return written;
}

/* The 6-bit value of a base64 character, or -1. */
static int value_of(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

int serve_base64_decode(const char *text, size_t length, unsigned char *out, size_t *decoded, size_t *bad_at) {
    const unsigned char *in = (const unsigned char *)text;
    size_t data = length; /* characters before the padding */
    if (length % 4 == 0 && length >= 2 && in[length - 1] == '=') data = in[length - 2] == '=' ? length - 2 : length - 1;
    size_t written = 0, i = 0;
    for (; i + 4 <= data; i += 4) {
        int a = value_of(in[i]), b = value_of(in[i + 1]), c = value_of(in[i + 2]), d = value_of(in[i + 3]);
        if ((a | b | c | d) < 0) {
            size_t k = a < 0 ? 0 : b < 0 ? 1 : c < 0 ? 2 : 3;
            *bad_at = i + k;
            return -1;
        }
        uint32_t quad = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | (uint32_t)d;
        out[written++] = (unsigned char)(quad >> 16);
        out[written++] = (unsigned char)(quad >> 8);
        out[written++] = (unsigned char)quad;
    }
    size_t tail = data - i; /* 0, 2 or 3 characters of a last partial quantum; 1 is never valid */
    if (tail == 1) {
        *bad_at = value_of(in[i]) < 0 ? i : length;
        return -1;
    }
    if (tail) {
        int values[3] = {0, 0, 0};
        for (size_t k = 0; k < tail; ++k)
            if ((values[k] = value_of(in[i + k])) < 0) {
                *bad_at = i + k;
                return -1;
            }
        /* The bits past the last whole byte must be zero (canonical encoding). */
        if ((tail == 2 && (values[1] & 15)) || (tail == 3 && (values[2] & 3))) {
            *bad_at = i + tail - 1;
            return -1;
        }
        uint32_t quad = (uint32_t)values[0] << 18 | (uint32_t)values[1] << 12 | (uint32_t)values[2] << 6;
        out[written++] = (unsigned char)(quad >> 16);
        if (tail == 3) out[written++] = (unsigned char)(quad >> 8);
    }
    /* Padding, when present, must complete the quantum exactly (checked by the length rule above);
     * an '=' anywhere else was refused as a character. */
    *decoded = written;
    return 0;
}
