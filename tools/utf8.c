#include "utf8.h"

#include <stdio.h>

size_t cli_utf8_length(const unsigned char *bytes, size_t available) {
    unsigned char lead = bytes[0];
    size_t length = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0;
    if (length == 0 || lead > 0xF4 || length > available) return 0;
    for (size_t i = 1; i < length; ++i)
        if ((bytes[i] & 0xC0) != 0x80) return 0;
    /* E0 needs A0..BF next (no overlong), ED 80..9F (no surrogates); F0 90..BF, F4 80..8F. */
    if (length == 3 && ((lead == 0xE0 && bytes[1] < 0xA0) || (lead == 0xED && bytes[1] >= 0xA0))) return 0;
    if (length == 4 && ((lead == 0xF0 && bytes[1] < 0x90) || (lead == 0xF4 && bytes[1] >= 0x90))) return 0;
    return length;
}

size_t cli_json_piece(const unsigned char *at, const unsigned char *end, const char **piece, size_t *piece_length,
                      char scratch[8]) {
    const unsigned char *start = at;
    while (at < end) { /* the longest run that needs no escaping */
        unsigned char byte = *at;
        if (byte < 0x80) {
            if (byte < 0x20 || byte == 0x7F || byte == '"' || byte == '\\') break;
            ++at;
        } else {
            size_t run = cli_utf8_length(at, (size_t)(end - at));
            if (!run) break;
            at += run;
        }
    }
    if (at > start) {
        *piece = (const char *)start, *piece_length = (size_t)(at - start);
        return *piece_length;
    }
    unsigned char byte = *at;
    const char *escape = byte == '"' ? "\\\"" : byte == '\\' ? "\\\\" : byte == '\n' ? "\\n" : byte == '\t' ? "\\t"
                       : byte == '\r' ? "\\r" : byte >= 0x80 ? "\\ufffd" : NULL;
    if (escape) snprintf(scratch, 8, "%s", escape);
    else snprintf(scratch, 8, "\\u%04x", byte);
    *piece = scratch;
    for (*piece_length = 0; scratch[*piece_length];) ++*piece_length;
    return 1;
}
