/*
 * Base64 of RFC 4648 §4 (the standard alphabet, '=' padding): what `data:` URIs carry and what
 * OpenAI's `encoding_format: "base64"` answers. Two small functions, tested against the RFC's
 * vectors, refusals and random round trips (tests/serve/test_serve_text.c), and end to end by
 * Python's `base64` module and the `openai` npm client.
 */
#ifndef UFORM_TOOLS_SERVE_BASE64_H
#define UFORM_TOOLS_SERVE_BASE64_H

#include <stddef.h>

/* Characters `serve_base64_encode` writes for `length` bytes (padding included, no NUL). */
static inline size_t serve_base64_encoded_length(size_t length) { return (length + 2) / 3 * 4; }

/* Writes the base64 of `length` bytes into `out` (serve_base64_encoded_length(length) characters,
 * not NUL-terminated); answers that length. */
size_t serve_base64_encode(const unsigned char *bytes, size_t length, char *out);

/*
 * Decodes `length` characters of base64 into `out`, which must hold length / 4 * 3 + 3 bytes.
 * Padding may be given ("QQ==") or left out ("QQ"); nothing else is accepted: no white space, no
 * URL-safe alphabet, no characters after the padding, no unused bits set in the last character
 * (so every byte string has exactly one encoding). Answers 0 with `*decoded` bytes written, or -1
 * with `*bad_at` the offset of the first character that cannot be part of a valid encoding (the
 * length itself when the text ends mid-quantum).
 */
int serve_base64_decode(const char *text, size_t length, unsigned char *out, size_t *decoded, size_t *bad_at);

#endif
