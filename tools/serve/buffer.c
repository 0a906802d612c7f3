/* The response buffer and its JSON writers (buffer.h). */
#include "buffer.h"
#include "utf8.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int serve_buffer_reserve(serve_buffer_t *buffer, size_t more) {
    if (buffer->failed) return -1;
    if (buffer->length + more + 1 <= buffer->capacity) return 0;
    size_t wanted = buffer->capacity ? buffer->capacity : 1024;
    while (wanted < buffer->length + more + 1) wanted *= 2;
    char *grown = realloc(buffer->data, wanted);
    if (!grown) {
        buffer->failed = 1;
        return -1;
    }
    buffer->data = grown, buffer->capacity = wanted;
    return 0;
}

void serve_buffer_append(serve_buffer_t *buffer, const void *bytes, size_t length) {
    if (serve_buffer_reserve(buffer, length)) return;
    if (length) memcpy(buffer->data + buffer->length, bytes, length);
    buffer->length += length;
    buffer->data[buffer->length] = 0;
}

void serve_buffer_text(serve_buffer_t *buffer, const char *text) { serve_buffer_append(buffer, text, strlen(text)); }

void serve_buffer_printf(serve_buffer_t *buffer, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    char small[256];
    int needed = vsnprintf(small, sizeof small, format, arguments);
    va_end(arguments);
    if (needed < 0) return;
    if ((size_t)needed < sizeof small) {
        serve_buffer_append(buffer, small, (size_t)needed);
        return;
    }
    if (serve_buffer_reserve(buffer, (size_t)needed)) return;
    va_start(arguments, format);
    vsnprintf(buffer->data + buffer->length, (size_t)needed + 1, format, arguments);
    va_end(arguments);
    buffer->length += (size_t)needed;
}

size_t serve_utf8_sequence(const unsigned char *bytes, size_t available) { return cli_utf8_length(bytes, available); }

int serve_utf8_valid(const unsigned char *bytes, size_t length, size_t *bad_at) {
    size_t at = 0;
    while (at < length) {
        /* ASCII runs are most of every body (base64 is all ASCII): eight bytes at a time. */
        while (at + 8 <= length) {
            uint64_t word;
            memcpy(&word, bytes + at, 8);
            if (word & 0x8080808080808080ull) break;
            at += 8;
        }
        if (at < length && bytes[at] < 0x80) {
            ++at;
            continue;
        }
        if (at == length) break;
        size_t run = serve_utf8_sequence(bytes + at, length - at);
        if (!run) {
            if (bad_at) *bad_at = at;
            return 0;
        }
        at += run;
    }
    return 1;
}

void serve_buffer_json_string(serve_buffer_t *buffer, const char *bytes, size_t length) {
    if (serve_buffer_reserve(buffer, length + 2)) return;
    const unsigned char *at = (const unsigned char *)bytes, *end = at + length;
    serve_buffer_append(buffer, "\"", 1);
    while (at < end) {
        const char *piece;
        size_t piece_length;
        char scratch[8];
        at += cli_json_piece(at, end, &piece, &piece_length, scratch);
        serve_buffer_append(buffer, piece, piece_length);
    }
    serve_buffer_append(buffer, "\"", 1);
}

void serve_buffer_size(serve_buffer_t *buffer, size_t value) {
    char digits[24];
    size_t length = 0;
    do digits[sizeof digits - 1 - length++] = (char)('0' + value % 10), value /= 10;
    while (value);
    serve_buffer_append(buffer, digits + sizeof digits - length, length);
}

/* round(magnitude · 10^shift) for shift in [-30, 53]: a float's 9-digit scale spans 10^-30
 * (3.4e38) to 10^53 (1.4e-45). */
static uint64_t scaled_digits(double magnitude, int shift) {
    static const double powers[] = {
        1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17,
        1e18, 1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31, 1e32, 1e33, 1e34, 1e35,
        1e36, 1e37, 1e38, 1e39, 1e40, 1e41, 1e42, 1e43, 1e44, 1e45, 1e46, 1e47, 1e48, 1e49, 1e50, 1e51, 1e52, 1e53};
    return (uint64_t)((shift >= 0 ? magnitude * powers[shift] : magnitude / powers[-shift]) + 0.5);
}

/* "00" "01" … "99": two digits a lookup. */
static const char digit_pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                     "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                     "8081828384858687888990919293949596979899";

/*
 * 9 significant digits read back to the same float32: the decimal is within half a unit of its
 * 9th digit (≤ 5e-9 relative) of the value, while neighbouring floats are ≥ 6e-8 relative apart,
 * so the float nearest to the decimal is the value itself. The binary exponent comes from the
 * float's bits (frexp's for subnormals), the decimal one from it as floor(e2 · log10 2) with
 * log10 2 ≈ 78913 / 2^18 (one too low at most, corrected after scaling), and the digits from one
 * product with a power of ten in double (≤ 2 roundings of 1.1e-16 each, far inside that bound),
 * written two at a time: no log10, floor or printf. A row of 64 took ~3 µs before (~10% of a
 * saturated server's HTTP thread), ~1 µs with this.
 */
size_t serve_format_float(float value, char *out) {
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    unsigned biased = (bits >> 23) & 0xffu;
    if (biased == 0xffu || (bits & 0x7fffffffu) == 0) { /* NaN, ±∞ (JSON has neither) and ±0 */
        out[0] = '0';
        return 1;
    }
    size_t length = 0;
    if (bits >> 31) out[length++] = '-';
    double magnitude = fabs((double)value);
    int binary = (int)biased - 126;                        /* magnitude in [2^(binary-1), 2^binary) */
    if (!biased) (void)frexp(magnitude, &binary);          /* subnormal */
    int exponent = ((binary - 1) * 78913) >> 18;           /* arithmetic shift: a floor for negatives too */
    int shift = 8 - exponent; /* digits = magnitude · 10^shift: 9 of them, or 10 when exponent is low */
    uint64_t digits = scaled_digits(magnitude, shift);
    if (digits >= 1000000000u) { /* one low (or 9.999999995… rounded up): one digit fewer */
        ++exponent, --shift;
        digits = scaled_digits(magnitude, shift);
    }
    char text[9];
    text[0] = (char)('0' + digits / 100000000u);
    uint32_t rest = (uint32_t)(digits % 100000000u);
    for (int i = 7; i >= 1; i -= 2) {
        memcpy(text + i, digit_pairs + 2 * (rest % 100u), 2);
        rest /= 100u;
    }
    int significant = 9;
    while (significant > 1 && text[significant - 1] == '0') --significant;
    if (exponent >= 0 && exponent < 9) {
        for (int i = 0; i <= exponent; ++i) out[length++] = i < significant ? text[i] : '0';
        if (significant > exponent + 1) {
            out[length++] = '.';
            memcpy(out + length, text + exponent + 1, (size_t)(significant - exponent - 1));
            length += (size_t)(significant - exponent - 1);
        }
    } else if (exponent < 0 && exponent >= -5) {
        memcpy(out + length, "0.00000", (size_t)(1 - exponent));
        length += (size_t)(1 - exponent);
        memcpy(out + length, text, (size_t)significant);
        length += (size_t)significant;
    } else {
        out[length++] = text[0];
        if (significant > 1) {
            out[length++] = '.';
            memcpy(out + length, text + 1, (size_t)(significant - 1));
            length += (size_t)(significant - 1);
        }
        out[length++] = 'e';
        unsigned power = (unsigned)(exponent < 0 ? -exponent : exponent);
        if (exponent < 0) out[length++] = '-';
        if (power >= 10) out[length++] = (char)('0' + power / 10);
        out[length++] = (char)('0' + power % 10);
    }
    return length;
}

void serve_buffer_float(serve_buffer_t *buffer, float value) {
    if (serve_buffer_reserve(buffer, SERVE_FLOAT_TEXT_MAX)) return;
    buffer->length += serve_format_float(value, buffer->data + buffer->length);
    buffer->data[buffer->length] = 0;
}

void serve_buffer_floats(serve_buffer_t *buffer, const float *values, size_t count) {
    /* '[', then each value and its comma, then ']'. */
    if (serve_buffer_reserve(buffer, (SERVE_FLOAT_TEXT_MAX + 1) * count + 2)) return;
    char *at = buffer->data + buffer->length;
    *at++ = '[';
    for (size_t i = 0; i < count; ++i) {
        if (i) *at++ = ',';
        at += serve_format_float(values[i], at);
    }
    *at++ = ']';
    *at = 0;
    buffer->length = (size_t)(at - buffer->data);
}

char *serve_buffer_take(serve_buffer_t *buffer, size_t *length) {
    char *data = buffer->data;
    *length = buffer->length;
    memset(buffer, 0, sizeof *buffer);
    return data;
}

void serve_buffer_free(serve_buffer_t *buffer) {
    free(buffer->data);
    memset(buffer, 0, sizeof *buffer);
}
