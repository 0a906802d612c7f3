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

/* The 6-bit value of each byte, or 0xFF for a byte outside the alphabet. */
static const unsigned char values[256] = {
#define X 0xFF
     X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,
     X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,
     X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X, 62,  X,  X,  X, 63,
    52, 53, 54, 55, 56, 57, 58, 59, 60, 61,  X,  X,  X,  X,  X,  X,
     X,  0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14,
    15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,  X,  X,  X,  X,  X,
     X, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
    41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51,  X,  X,  X,  X,  X,
     X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,
     X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,
     X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,
     X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,
     X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,
     X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,
     X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,
     X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,  X,
#undef X
};

static int value_of(unsigned char c) { return values[c] == 0xFF ? -1 : values[c]; }

int serve_base64_decode(const char *text, size_t length, unsigned char *out, size_t *decoded, size_t *bad_at) {
    const unsigned char *in = (const unsigned char *)text;
    size_t data = length; /* characters before the padding */
    if (length % 4 == 0 && length >= 2 && in[length - 1] == '=') data = in[length - 2] == '=' ? length - 2 : length - 1;
    size_t written = 0, i = 0;
    for (; i + 4 <= data; i += 4) {
        /* A byte outside the alphabet is 0xFF in the table: OR-ing the four finds it at once. */
        uint32_t a = values[in[i]], b = values[in[i + 1]], c = values[in[i + 2]], d = values[in[i + 3]];
        if ((a | b | c | d) & 0x80) {
            *bad_at = i + (a & 0x80 ? 0 : b & 0x80 ? 1 : c & 0x80 ? 2 : 3);
            return -1;
        }
        uint32_t quad = a << 18 | b << 12 | c << 6 | d;
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
        int last[3] = {0, 0, 0};
        for (size_t k = 0; k < tail; ++k)
            if ((last[k] = value_of(in[i + k])) < 0) {
                *bad_at = i + k;
                return -1;
            }
        /* The bits past the last whole byte must be zero (canonical encoding). */
        if ((tail == 2 && (last[1] & 15)) || (tail == 3 && (last[2] & 3))) {
            *bad_at = i + tail - 1;
            return -1;
        }
        uint32_t quad = (uint32_t)last[0] << 18 | (uint32_t)last[1] << 12 | (uint32_t)last[2] << 6;
        out[written++] = (unsigned char)(quad >> 16);
        if (tail == 3) out[written++] = (unsigned char)(quad >> 8);
    }
    /* Padding, when present, must complete the quantum exactly (checked by the length rule above);
     * an '=' anywhere else was refused as a character. */
    *decoded = written;
    return 0;
}
