/*
 * Lists of text pieces, lists of matches, and splitting a piece along matches with one of the
 * five delimiter behaviours of `tokenizers` (NormalizedString::split): every pre-tokenizer is a
 * pattern (a regular expression or a character class) plus one of these behaviours.
 */
#include <string.h>

#include "text/tokenizer_internal.h"

int uform__text_pieces_add(uform__text_pieces_t *pieces, const char *bytes, size_t length, uint32_t token, int first) {
    if (length == 0 && token == UFORM__TEXT_NO_TOKEN) return 0;
    if (pieces->count == pieces->capacity) {
        size_t capacity = pieces->capacity ? pieces->capacity * 2 : 32;
        if (capacity > (size_t)-1 / sizeof(uform__text_piece_t)) return -1;
        uform__text_piece_t *grown = realloc(pieces->data, capacity * sizeof *grown);
        if (!grown) return -1;
        pieces->data = grown, pieces->capacity = capacity;
    }
    size_t offset = pieces->text.length;
    if (uform__text_string_append(&pieces->text, bytes, length) != 0) return -1;
    uform__text_piece_t *piece = &pieces->data[pieces->count++];
    piece->offset = offset, piece->length = length, piece->token = token, piece->first = (uint8_t)(first != 0);
    return 0;
}

void uform__text_pieces_clear(uform__text_pieces_t *pieces) {
    uform__text_string_clear(&pieces->text);
    pieces->count = 0;
}

void uform__text_pieces_free(uform__text_pieces_t *pieces) {
    uform__text_string_free(&pieces->text);
    free(pieces->data);
    memset(pieces, 0, sizeof *pieces);
}

int uform__text_spans_add(uform__text_spans_t *spans, size_t start, size_t end, int is_match) {
    if (spans->count == spans->capacity) {
        size_t capacity = spans->capacity ? spans->capacity * 2 : 64;
        if (capacity > (size_t)-1 / sizeof(uform__text_span_t)) return -1;
        uform__text_span_t *grown = realloc(spans->data, capacity * sizeof *grown);
        if (!grown) return -1;
        spans->data = grown, spans->capacity = capacity;
    }
    uform__text_span_t *span = &spans->data[spans->count++];
    span->start = start, span->end = end, span->is_match = is_match;
    return 0;
}

/*
 * The behaviours, rewriting `spans` in place into the spans to keep (is_match then means
 * "remove"), as `tokenizers` folds its matches:
 * Removed keeps the gaps; Isolated keeps everything, each match on its own; Contiguous joins
 * neighbours of the same kind; MergedWithPrevious appends a match to the piece before it (unless
 * that was a match too); MergedWithNext prepends it to the piece after it (scanning backwards).
 */
static void apply_behavior(uform__text_spans_t *spans, uform__text_behavior_t behavior) {
    size_t count = spans->count, kept = 0;
    uform__text_span_t *data = spans->data;
    switch (behavior) {
    case UFORM__TEXT_REMOVED:
        return;
    case UFORM__TEXT_ISOLATED:
        for (size_t i = 0; i < count; ++i) data[i].is_match = 0;
        return;
    case UFORM__TEXT_CONTIGUOUS: {
        int previous = 0;
        for (size_t i = 0; i < count; ++i) {
            int match = data[i].is_match;
            if (kept > 0 && match == previous) data[kept - 1].end = data[i].end;
            else data[kept] = data[i], data[kept].is_match = 0, ++kept;
            previous = match;
        }
        break;
    }
    case UFORM__TEXT_MERGED_WITH_PREVIOUS: {
        int previous = 0;
        for (size_t i = 0; i < count; ++i) {
            int match = data[i].is_match;
            if (match && !previous && kept > 0) data[kept - 1].end = data[i].end;
            else data[kept] = data[i], data[kept].is_match = 0, ++kept;
            previous = match;
        }
        break;
    }
    case UFORM__TEXT_MERGED_WITH_NEXT: {
        /* Built backwards from the end of the array, then moved to the front. */
        int previous = 0;
        size_t top = count; /* kept spans live in data[top .. count) in forward order */
        for (size_t i = count; i-- > 0;) {
            uform__text_span_t span = data[i];
            int match = span.is_match;
            if (match && !previous && top < count) data[top].start = span.start;
            else span.is_match = 0, data[--top] = span;
            previous = match;
        }
        kept = count - top;
        memmove(data, data + top, kept * sizeof *data);
        break;
    }
    }
    spans->count = kept;
}

int uform__text_split_spans(const char *bytes, const uform__text_piece_t *piece, uform__text_spans_t *spans,
                            int invert, uform__text_behavior_t behavior, uform__text_pieces_t *out) {
    if (invert)
        for (size_t i = 0; i < spans->count; ++i) spans->data[i].is_match = !spans->data[i].is_match;
    apply_behavior(spans, behavior);
    for (size_t i = 0; i < spans->count; ++i) {
        const uform__text_span_t *span = &spans->data[i];
        if (span->is_match) continue;
        if (uform__text_pieces_add(out, bytes + span->start, span->end - span->start, UFORM__TEXT_NO_TOKEN,
                                   piece->first && span->start == 0) != 0)
            return -1;
    }
    return 0;
}
