/*
 * The byte trie over pieces (sp_internal.h), and the small UTF-8 and base64 helpers the
 * SentencePiece files share.
 *
 * The trie keeps its edges in one open-addressing hash keyed by (parent node, byte): building is a
 * single pass over the pieces' bytes, and a lookup costs one probe per byte, so the Viterbi search
 * is O(text bytes x longest piece) as in sentencepiece's double array, without its builder.
 */
#include "text/sp_internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"

static size_t slot_of(uint64_t key, size_t mask) { return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & mask; }

int uform__sp_trie_build(uform__sp_trie_t *trie, const char *const *keys, const size_t *lengths, size_t count,
                         const unsigned char *skip, int first_wins) {
    memset(trie, 0, sizeof *trie);
    size_t edges = 0;
    for (size_t i = 0; i < count; ++i) {
        if (skip && skip[i]) continue;
        if (lengths[i] > (size_t)UINT32_MAX - 1 - edges) return -1; /* node numbers are 32-bit */
        edges += lengths[i];
    }
    size_t slots = 16;
    while (slots < 2 * edges + 2) slots *= 2;
    trie->keys = calloc(slots, sizeof *trie->keys);
    trie->children = malloc(slots * sizeof *trie->children);
    trie->values = malloc((edges + 1) * sizeof *trie->values);
    if (!trie->keys || !trie->children || !trie->values) {
        uform__sp_trie_free(trie);
        return -1;
    }
    trie->mask = slots - 1;
    trie->node_count = 1;
    trie->values[0] = -1;
    for (size_t i = 0; i < count; ++i) {
        if ((skip && skip[i]) || lengths[i] == 0) continue;
        uint32_t node = 0;
        for (size_t at = 0; at < lengths[i]; ++at) {
            uint64_t key = (((uint64_t)node << 8) | (unsigned char)keys[i][at]) + 1;
            size_t slot = slot_of(key, trie->mask);
            while (trie->keys[slot] != 0 && trie->keys[slot] != key) slot = (slot + 1) & trie->mask;
            if (trie->keys[slot] == 0) {
                trie->keys[slot] = key;
                trie->children[slot] = (uint32_t)trie->node_count;
                trie->values[trie->node_count] = -1;
                ++trie->node_count;
            }
            node = trie->children[slot];
        }
        if (!first_wins || trie->values[node] < 0) trie->values[node] = (int32_t)i;
    }
    return 0;
}

void uform__sp_trie_free(uform__sp_trie_t *trie) {
    free(trie->keys);
    free(trie->children);
    free(trie->values);
    memset(trie, 0, sizeof *trie);
}

int32_t uform__sp_trie_longest(const uform__sp_trie_t *trie, const char *text, size_t length, size_t *matched) {
    int32_t best = -1;
    *matched = 0;
    uint32_t node = 0;
    for (size_t at = 0; at < length; ++at) {
        int64_t child = uform__sp_trie_child(trie, node, (unsigned char)text[at]);
        if (child < 0) break;
        node = (uint32_t)child;
        if (trie->values[node] >= 0) best = trie->values[node], *matched = at + 1;
    }
    return best;
}

/* Trail bytes are 10xxxxxx. */
static int is_trail(unsigned char byte) { return (byte & 0xC0) == 0x80; }

int32_t uform__sp_decode_utf8(const char *text, size_t length, size_t *bytes) {
    const unsigned char *s = (const unsigned char *)text;
    *bytes = 1;
    if (s[0] < 0x80) return s[0];
    /* The same acceptance as sentencepiece's DecodeUTF8: shortest form, no surrogates, <= U+10FFFF. */
    if (length >= 2 && (s[0] & 0xE0) == 0xC0 && is_trail(s[1])) {
        int32_t cp = ((s[0] & 0x1F) << 6) | (s[1] & 0x3F);
        if (cp >= 0x80) return *bytes = 2, cp;
    } else if (length >= 3 && (s[0] & 0xF0) == 0xE0 && is_trail(s[1]) && is_trail(s[2])) {
        int32_t cp = ((s[0] & 0x0F) << 12) | ((s[1] & 0x3F) << 6) | (s[2] & 0x3F);
        if (cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF)) return *bytes = 3, cp;
    } else if (length >= 4 && (s[0] & 0xF8) == 0xF0 && is_trail(s[1]) && is_trail(s[2]) && is_trail(s[3])) {
        int32_t cp = ((s[0] & 0x07) << 18) | ((s[1] & 0x3F) << 12) | ((s[2] & 0x3F) << 6) | (s[3] & 0x3F);
        if (cp >= 0x10000 && cp <= 0x10FFFF) return *bytes = 4, cp;
    }
    return -1;
}

size_t uform__sp_utf8_invalid_at(const char *text, size_t length) {
    size_t at = 0;
    while (at < length) {
        size_t bytes;
        if (uform__sp_decode_utf8(text + at, length - at, &bytes) < 0) return at;
        at += bytes;
    }
    return length;
}

/* The 6-bit value of a base64 character, or -1. */
static int base64_value(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

uform_status_t uform__sp_base64_decode(const char *text, size_t length, unsigned char **bytes, size_t *size,
                                       const char *function, const char *what, uform_outcome_t *outcome) {
    *bytes = NULL, *size = 0;
    size_t data = length;
    /* Up to two '=' close the text; anything after the first '=' must be '='. */
    while (data > 0 && text[data - 1] == '=' && length - data < 2) --data;
    if (data % 4 == 1)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "%s: %zu base64 characters before the padding cannot encode whole bytes", what, data);
    if (length % 4 != 0 && length != data)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "%s: base64 padding leaves a length of %zu characters, not a multiple of 4", what, length);
    unsigned char *out = malloc(data / 4 * 3 + 3);
    if (!out) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "%s: no memory for %zu decoded bytes", what, data);
    size_t written = 0;
    uint32_t accumulator = 0;
    int bits = 0;
    for (size_t at = 0; at < data; ++at) {
        int value = base64_value((unsigned char)text[at]);
        if (value < 0) {
            free(out);
            return uform__fail(outcome, UFORM_FORMAT, function,
                               "%s: character %zu (0x%02x) is not base64", what, at, (unsigned char)text[at]);
        }
        accumulator = (accumulator << 6) | (uint32_t)value;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[written++] = (unsigned char)(accumulator >> bits);
            accumulator &= (1u << bits) - 1;
        }
    }
    if (accumulator != 0) {
        /* Leftover bits must be zero in canonical base64 (Rust's base64 crate refuses them too). */
        free(out);
        return uform__fail(outcome, UFORM_FORMAT, function, "%s: the last base64 character has nonzero unused bits", what);
    }
    *bytes = out, *size = written;
    return UFORM_OK;
}
