/* Helpers the safetensors reader and writer share: dtype names, UTF-8 checks, quoting names
 * for messages. Private to src/io/. */
#ifndef UFORM_IO_SAFETENSORS_TEXT_H
#define UFORM_IO_SAFETENSORS_TEXT_H

#include <stddef.h>

/* Room for a quoted name in a message: at most 80 bytes of the name, escapes and an ellipsis. */
#define UFORM__SAFETENSORS_QUOTE_CAPACITY 128

/* Answers 1 when `bytes[0..length)` is well-formed UTF-8 (no overlong forms, no surrogates,
 * nothing above U+10FFFF), else 0 and the offset of the first bad byte in `*bad_at` (may be NULL). */
int uform__safetensors_utf8_valid(const char *bytes, size_t length, size_t *bad_at);

/* Writes `text` between single quotes into `buffer` for a message: bytes below 0x20 and 0x7F
 * become \xNN, a backslash or quote is escaped, and a text longer than 80 bytes is cut at a
 * character boundary and ends in "...". Answers `buffer`. NULL `text` reads (null). */
const char *uform__safetensors_quote(char buffer[UFORM__SAFETENSORS_QUOTE_CAPACITY], const char *text);

/* Room for a quoted path: its last 180 bytes, escapes and an ellipsis. */
#define UFORM__SAFETENSORS_PATH_CAPACITY 256

/* The same for a path, which keeps its end (the file name) and starts with "..." when cut. */
const char *uform__safetensors_quote_path(char buffer[UFORM__SAFETENSORS_PATH_CAPACITY], const char *path);

#endif
