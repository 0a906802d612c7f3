/*
 * SentencePiece's precompiled_charsmap: <uint32 little-endian trie size in bytes><darts-clone double
 * array><NUL-terminated replacement strings>, as sentencepiece's normalizer.cc writes and reads it.
 *
 * A darts-clone unit is 32 bits: bits 0-7 the label, bit 8 "has a leaf child", bit 9 "offset is
 * shifted by 8", bits 10-30 the offset to the children, bit 31 "this unit is a leaf" (then bits
 * 0-30 are the value; a leaf's label reads with bit 31 set, so no byte matches it). From a node at
 * unit p, the child by byte c is unit (p ^ offset(p)) ^ c when that unit's label is c, and a node
 * with has_leaf keeps its value in unit p ^ offset(p). The trie is a minimised automaton (shared
 * suffixes), so nodes may be reached along several paths.
 *
 * Validation walks every unit reachable from the root once (a bitmap of visited units) and checks
 * that every value unit is inside the array and every value an offset inside the replacement blob,
 * which must end with a NUL. Lookups check the array bounds again, so even a charsmap that slipped
 * through could not make them read outside it.
 */
#include "text/sp_internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"

static uint32_t unit_offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }
static int unit_has_leaf(uint32_t unit) { return (unit >> 8) & 1; }
static uint32_t unit_label(uint32_t unit) { return unit & ((1u << 31) | 0xFF); }
static uint32_t unit_value(uint32_t unit) { return unit & ((1u << 31) - 1); }

static uform_status_t validate(const uform__sp_charsmap_t *charsmap, const char *function, uform_outcome_t *outcome) {
    size_t count = charsmap->unit_count;
    unsigned char *visited = calloc((count + 7) / 8, 1);
    uint32_t *stack = malloc(count * sizeof *stack);
    if (!visited || !stack) {
        free(visited), free(stack);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "no memory to validate a %zu-unit charsmap trie", count);
    }
    uform_status_t status = UFORM_OK;
    size_t depth = 0;
    stack[depth++] = 0;
    visited[0] = 1;
    while (depth > 0 && status == UFORM_OK) {
        uint32_t node = stack[--depth];
        uint32_t base = node ^ unit_offset(charsmap->units[node]);
        if (node != 0 && unit_has_leaf(charsmap->units[node])) {
            if (base >= count) {
                status = uform__fail(outcome, UFORM_FORMAT, function,
                                     "charsmap trie unit %u points its value at unit %u, past the %zu units", node, base,
                                     count);
                break;
            }
            uint32_t value = unit_value(charsmap->units[base]);
            if (value >= charsmap->strings_size) {
                status = uform__fail(outcome, UFORM_FORMAT, function,
                                     "charsmap trie unit %u holds replacement offset %u, past the %zu-byte string blob",
                                     base, value, charsmap->strings_size);
                break;
            }
        }
        for (uint32_t byte = 1; byte < 256; ++byte) {
            uint32_t child = base ^ byte;
            if (child >= count || unit_label(charsmap->units[child]) != byte) continue;
            if (visited[child / 8] & (1u << (child % 8))) continue;
            visited[child / 8] |= (unsigned char)(1u << (child % 8));
            stack[depth++] = child;
        }
    }
    free(visited), free(stack);
    return status;
}

uform_status_t uform__sp_charsmap_init(uform__sp_charsmap_t *charsmap, const void *bytes, size_t size, int require_utf8,
                                       const char *function, uform_outcome_t *outcome) {
    memset(charsmap, 0, sizeof *charsmap);
    if (size == 0) return UFORM_OK;
    const unsigned char *data = bytes;
    if (size < 4)
        return uform__fail(outcome, UFORM_FORMAT, function, "the %zu-byte charsmap is shorter than its 4-byte trie size",
                           size);
    uint32_t trie_size = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24;
    if (trie_size == 0 || trie_size % 4 != 0)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "the charsmap's trie size %u is not a positive multiple of 4 (32-bit units)", trie_size);
    if (trie_size > size - 4)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "the charsmap's trie size %u runs past the %zu bytes after the size field", trie_size,
                           size - 4);
    size_t strings_size = size - 4 - trie_size;
    if (strings_size > 0 && data[size - 1] != 0)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "the charsmap's %zu-byte replacement blob does not end with a NUL", strings_size);
    if (require_utf8) {
        size_t bad = uform__sp_utf8_invalid_at((const char *)data + 4 + trie_size, strings_size);
        if (bad < strings_size)
            return uform__fail(outcome, UFORM_FORMAT, function,
                               "the charsmap's replacement blob is not UTF-8 at its byte %zu", bad);
    }
    charsmap->unit_count = trie_size / 4;
    charsmap->units = malloc(trie_size);
    charsmap->strings = malloc(strings_size + 1);
    if (!charsmap->units || !charsmap->strings) {
        uform__sp_charsmap_release(charsmap);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "no memory for a %zu-byte charsmap", size);
    }
    for (size_t i = 0; i < charsmap->unit_count; ++i) {
        const unsigned char *u = data + 4 + 4 * i;
        charsmap->units[i] = (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
    }
    if (strings_size) memcpy(charsmap->strings, data + 4 + trie_size, strings_size);
    charsmap->strings[strings_size] = 0;
    charsmap->strings_size = strings_size;
    uform_status_t status = validate(charsmap, function, outcome);
    if (status != UFORM_OK) uform__sp_charsmap_release(charsmap);
    return status;
}

void uform__sp_charsmap_release(uform__sp_charsmap_t *charsmap) {
    free(charsmap->units);
    free(charsmap->strings);
    memset(charsmap, 0, sizeof *charsmap);
}

size_t uform__sp_charsmap_match(const uform__sp_charsmap_t *charsmap, const char *key, size_t length, int longest,
                                const char **replacement) {
    if (charsmap->unit_count == 0) return 0;
    const uint32_t *units = charsmap->units;
    size_t count = charsmap->unit_count, matched = 0;
    uint32_t node = 0 ^ unit_offset(units[0]);
    for (size_t at = 0; at < length; ++at) {
        unsigned char byte = (unsigned char)key[at];
        if (byte == 0) break;
        node ^= byte;
        if (node >= count || unit_label(units[node]) != byte) break;
        uint32_t unit = units[node];
        node ^= unit_offset(unit);
        if (unit_has_leaf(unit) && node < count) {
            uint32_t value = unit_value(units[node]);
            if (value < charsmap->strings_size) {
                *replacement = charsmap->strings + value;
                matched = at + 1;
                if (!longest) return matched;
            }
        }
    }
    return matched;
}
