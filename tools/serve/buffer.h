/*
 * A growing byte buffer that responses are written into, with the JSON pieces the routes need:
 * escaped strings, integers and float32 values that read back to the same float. A failed
 * allocation sets `failed` and later writes do nothing, so a route writes its whole answer and
 * checks once at the end.
 */
#ifndef UFORM_TOOLS_SERVE_BUFFER_H
#define UFORM_TOOLS_SERVE_BUFFER_H

#include <stddef.h>
#include <stdint.h>

typedef struct serve_buffer_t {
    char *data;      /* malloc'ed; NUL-terminated after every write (the NUL is not in `length`) */
    size_t length;
    size_t capacity;
    int failed;      /* an allocation failed: the contents are incomplete */
} serve_buffer_t;

/* Makes room for `more` bytes (and the NUL); answers 0, or -1 (and sets `failed`). */
int serve_buffer_reserve(serve_buffer_t *buffer, size_t more);
void serve_buffer_append(serve_buffer_t *buffer, const void *bytes, size_t length);
void serve_buffer_text(serve_buffer_t *buffer, const char *text);
void serve_buffer_printf(serve_buffer_t *buffer, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* A JSON string with quotes: ", \ and control bytes escaped; bytes that are not valid UTF-8 are
 * written as U+FFFD, so the output is always valid JSON. */
void serve_buffer_json_string(serve_buffer_t *buffer, const char *bytes, size_t length);
void serve_buffer_size(serve_buffer_t *buffer, size_t value);
/* A float32 as a JSON number with 9 significant digits (enough to read back the same float) and
 * no trailing zeros; NaN and infinities, which JSON cannot hold, are written as 0. */
void serve_buffer_float(serve_buffer_t *buffer, float value);
/* A JSON array of `count` float32 values written like serve_buffer_float. */
void serve_buffer_floats(serve_buffer_t *buffer, const float *values, size_t count);
/* Hands the bytes over (the caller frees them) and empties the buffer. */
char *serve_buffer_take(serve_buffer_t *buffer, size_t *length);
void serve_buffer_free(serve_buffer_t *buffer);

/* The longest text serve_format_float writes ("-0.0000123456789"). */
enum { SERVE_FLOAT_TEXT_MAX = 16 };
/* Writes a float32 like serve_buffer_float into `out` (at least SERVE_FLOAT_TEXT_MAX bytes, no NUL);
 * answers the length. */
size_t serve_format_float(float value, char *out);

/* The length of the valid UTF-8 sequence at `bytes` (1..4; overlong forms, surrogates and values
 * above U+10FFFF are invalid), or 0 when none starts there. */
size_t serve_utf8_sequence(const unsigned char *bytes, size_t available);
/* Whether `length` bytes are valid UTF-8; when not, `*bad_at` is the offset of the first bad byte. */
int serve_utf8_valid(const unsigned char *bytes, size_t length, size_t *bad_at);

#endif
