#include "utf8.h"

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
