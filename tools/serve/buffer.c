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
        const unsigned char *start = at; /* a run that needs no escaping */
        while (at < end && *at >= 0x20 && *at < 0x80 && *at != '"' && *at != '\\') ++at;
        if (at > start) serve_buffer_append(buffer, start, (size_t)(at - start));
        if (at == end) break;
        unsigned char byte = *at;
        if (byte == '"' || byte == '\\') {
            char escaped[2] = {'\\', (char)byte};
            serve_buffer_append(buffer, escaped, 2), at += 1;
        } else if (byte == '\n') serve_buffer_append(buffer, "\\n", 2), at += 1;
        else if (byte == '\t') serve_buffer_append(buffer, "\\t", 2), at += 1;
        else if (byte == '\r') serve_buffer_append(buffer, "\\r", 2), at += 1;
        else if (byte < 0x20) serve_buffer_printf(buffer, "\\u%04x", byte), at += 1;
        else {
            size_t run = serve_utf8_sequence(at, (size_t)(end - at));
            if (run) serve_buffer_append(buffer, at, run), at += run;
            else serve_buffer_append(buffer, "\\ufffd", 6), at += 1;
        }
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

/*
 * 9 significant digits read back to the same float32: the decimal is within half a unit of its
 * 9th digit (≤ 5e-9 relative) of the value, while neighbouring floats are ≥ 6e-8 relative apart,
 * so the float nearest to the decimal is the value itself. The decimal exponent comes from the
 * binary one (floor(e2 · log10 2), one too low at most, corrected after scaling) and the digits
 * from one product with a power of ten in double (≤ 2 roundings of 1.1e-16 each, far inside that
 * bound): no log10 and no printf, which had made this ~2% of a saturated server's CPU.
 */
size_t serve_format_float(float value, char *out) {
    size_t length = 0;
    if (!isfinite(value) || value == 0) {
        out[0] = '0';
        return 1;
    }
    double magnitude = fabs((double)value);
    if (value < 0) out[length++] = '-';
    int binary = 0;
    (void)frexp(magnitude, &binary); /* magnitude in [2^(binary-1), 2^binary) */
    /* 10^exponent ≤ magnitude, exponent at most one below the true floor(log10(magnitude)). */
    int exponent = (int)floor((binary - 1) * 0.30102999566398119521);
    int shift = 8 - exponent; /* digits = magnitude · 10^shift: 9 of them, or 10 when exponent is low */
    uint64_t digits = scaled_digits(magnitude, shift);
    if (digits >= 1000000000u) { /* one low (or 9.999999995… rounded up): one digit fewer */
        ++exponent, --shift;
        digits = scaled_digits(magnitude, shift);
    }
    char text[9];
    for (int i = 8; i >= 0; --i) text[i] = (char)('0' + digits % 10), digits /= 10;
    int significant = 9;
    while (significant > 1 && text[significant - 1] == '0') --significant;
    if (exponent >= -5 && exponent < 9) {
        if (exponent < 0) {
            out[length++] = '0', out[length++] = '.';
            for (int i = -1; i > exponent; --i) out[length++] = '0';
            for (int i = 0; i < significant; ++i) out[length++] = text[i];
        } else {
            for (int i = 0; i <= exponent; ++i) out[length++] = i < significant ? text[i] : '0';
            if (significant > exponent + 1) {
                out[length++] = '.';
                for (int i = exponent + 1; i < significant; ++i) out[length++] = text[i];
            }
        }
    } else {
        out[length++] = text[0];
        if (significant > 1) {
            out[length++] = '.';
            for (int i = 1; i < significant; ++i) out[length++] = text[i];
        }
        length += (size_t)snprintf(out + length, 8, "e%d", exponent);
    }
    return length;
}

void serve_buffer_float(serve_buffer_t *buffer, float value) {
    char text[32];
    serve_buffer_append(buffer, text, serve_format_float(value, text));
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
