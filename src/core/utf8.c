/* UTF-8's well-formed sequences (utf8.h). */
#include "core/utf8.h"

size_t uform__utf8_sequence(const unsigned char *bytes, size_t available, int *valid) {
    unsigned char lead = bytes[0];
    size_t need;
    unsigned char low = 0x80, high = 0xBF; /* the range of the second byte */
    if (lead < 0x80) return *valid = 1, 1;
    if (lead >= 0xC2 && lead <= 0xDF) need = 1;
    else if (lead >= 0xE0 && lead <= 0xEF) {
        need = 2;
        if (lead == 0xE0) low = 0xA0;  /* no overlong three-byte forms */
        if (lead == 0xED) high = 0x9F; /* no UTF-16 surrogates */
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        need = 3;
        if (lead == 0xF0) low = 0x90;  /* no overlong four-byte forms */
        if (lead == 0xF4) high = 0x8F; /* nothing above U+10FFFF */
    } else return *valid = 0, 1;
    size_t at = 1;
    for (; at <= need; ++at) {
        if (at >= available) return *valid = 0, at;
        unsigned char byte = bytes[at];
        if (byte < low || byte > high) return *valid = 0, at;
        low = 0x80, high = 0xBF;
    }
    return *valid = 1, at;
}

size_t uform__utf8_invalid_at(const char *text, size_t length) {
    const unsigned char *bytes = (const unsigned char *)text;
    for (size_t at = 0; at < length;) {
        if (bytes[at] < 0x80) {
            ++at;
            continue;
        }
        int valid;
        size_t width = uform__utf8_sequence(bytes + at, length - at, &valid);
        if (!valid) return at;
        at += width;
    }
    return length;
}
