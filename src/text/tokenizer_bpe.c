/*
 * BPE as `tokenizers` (Rust) runs it (models/bpe/model.rs and word.rs): a word becomes one symbol
 * per character, looked up with the continuing_subword_prefix on every character but the first
 * and the end_of_word_suffix on the last (CLIP's "</w>"); a character missing from the vocabulary
 * becomes its <0xNN> byte tokens (byte_fallback, when all exist) or the unknown token (adjacent
 * unknowns fused into one with fuse_unk; dropped when no unk_token is set). Then the pair of
 * neighbours with the lowest merge rank is merged, leftmost first on equal ranks, until no pair
 * has a merge. ignore_merges answers a word found whole in the vocabulary directly.
 *
 * The merges live in a hash table keyed by the pair of ids, and the candidate merges in a binary
 * heap ordered by (rank, position), stale entries skipped when popped, as Rust's
 * Word::merge_all does: O(n log n) in the characters of a word, so a 10,000-character word takes
 * milliseconds, not the seconds a rescan per merge would.
 */
#include <string.h>

#include "core/outcome.h"
#include "text/tokenizer_internal.h"

typedef struct symbol_t {
    uint32_t id, length; /* length 0: merged into the symbol on its left */
    int64_t previous, next;
} symbol_t;

typedef struct candidate_t {
    uint32_t rank, id;
    size_t position;
} candidate_t;

/* A full 64-bit mix (both ids reach every bit): a plain multiply keeps the left id out of the low
 * bits, and every pair with the same right id would share a probe chain. */
static size_t pair_slot(uint64_t pair, size_t mask) {
    pair ^= pair >> 33;
    pair *= 0xFF51AFD7ED558CCDull;
    pair ^= pair >> 33;
    return (size_t)pair & mask;
}

static int merge_find(const uform__text_model_t *model, uint32_t left, uint32_t right, uint32_t *rank, uint32_t *id) {
    if (!model->merges) return 0;
    uint64_t pair = (uint64_t)left << 32 | right;
    for (size_t index = pair_slot(pair, model->merge_mask);; index = (index + 1) & model->merge_mask) {
        const uform__text_merge_slot_t *slot = &model->merges[index];
        if (slot->pair == UINT64_MAX) return 0;
        if (slot->pair == pair) {
            *rank = slot->rank, *id = slot->id;
            return 1;
        }
    }
}

/* Adds a merge; an equal pair later in the list replaces the earlier one, as the Rust HashMap
 * collected from the list does. */
static void merge_put(uform__text_model_t *model, uint32_t left, uint32_t right, uint32_t rank, uint32_t id) {
    uint64_t pair = (uint64_t)left << 32 | right;
    size_t index = pair_slot(pair, model->merge_mask);
    while (model->merges[index].pair != UINT64_MAX && model->merges[index].pair != pair)
        index = (index + 1) & model->merge_mask;
    if (model->merges[index].pair == UINT64_MAX) model->merge_count++;
    model->merges[index].pair = pair, model->merges[index].rank = rank, model->merges[index].id = id;
}

/* Splits a merges entry: "a b" (exactly one space; "#version" lines are skipped by the caller) or
 * ["a", "b"]. Answers 0 with the two strings, or -1 when the entry has neither form. */
static int merge_parts(const cJSON *entry, uform__text_string_t *left, uform__text_string_t *right) {
    uform__text_string_clear(left);
    uform__text_string_clear(right);
    if (cJSON_IsString(entry)) {
        const char *text = entry->valuestring, *space = strchr(text, ' ');
        if (!space || strchr(space + 1, ' ')) return -1;
        if (uform__text_string_append(left, text, (size_t)(space - text)) != 0 ||
            uform__text_string_append(right, space + 1, strlen(space + 1)) != 0)
            return -2;
        return 0;
    }
    if (!cJSON_IsArray(entry) || cJSON_GetArraySize(entry) != 2) return -1;
    const cJSON *a = entry->child, *b = a->next;
    if (!cJSON_IsString(a) || !cJSON_IsString(b)) return -1;
    if (uform__text_string_append(left, a->valuestring, strlen(a->valuestring)) != 0 ||
        uform__text_string_append(right, b->valuestring, strlen(b->valuestring)) != 0)
        return -2;
    return 0;
}

static uform_status_t parse_merges(const cJSON *merges, const char *path, uform__text_model_t *model,
                                   uform_outcome_t *outcome) {
    if (!cJSON_IsArray(merges))
        return uform__fail(outcome, UFORM_FORMAT, uform__text_function, "%s is %s, expected an array", path,
                           uform__json_kind(merges));
    size_t count = (size_t)cJSON_GetArraySize(merges), capacity = 16;
    while (capacity < count * 2) capacity *= 2;
    model->merges = malloc(capacity * sizeof *model->merges);
    if (!model->merges)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, uform__text_function, "out of memory reading %s", path);
    for (size_t i = 0; i < capacity; ++i) model->merges[i].pair = UINT64_MAX;
    model->merge_mask = capacity - 1;
    uform__text_string_t left = {0}, right = {0};
    uform_status_t status = UFORM_OK;
    size_t index = 0, prefix_length = strlen(model->prefix);
    uint32_t rank = 0;
    for (const cJSON *entry = merges->child; entry && status == UFORM_OK; entry = entry->next, ++index) {
        if (cJSON_IsString(entry) && strncmp(entry->valuestring, "#version", 8) == 0) continue;
        /* The entry's path, written only for a message (not for each of 50,000 merges). */
        char where[UFORM__TEXT_PATH];
#define WHERE (uform__text_path_index(where, path, index), where)
        int parts = merge_parts(entry, &left, &right);
        if (parts == -2) {
            status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, uform__text_function, "out of memory reading %s", path);
            break;
        }
        if (parts != 0) {
            status = uform__fail(outcome, UFORM_FORMAT, uform__text_function,
                                 "%s is %s, expected \"left right\" (one space) or [\"left\", \"right\"]", WHERE,
                                 cJSON_IsString(entry) ? "a string without exactly one space"
                                                       : uform__json_kind(entry));
            break;
        }
        uint32_t left_id, right_id, merged_id;
        const char *missing = NULL;
        if (!uform__text_vocab_get(&model->vocab, left.data, left.length, &left_id)) missing = left.data;
        else if (!uform__text_vocab_get(&model->vocab, right.data, right.length, &right_id)) missing = right.data;
        if (missing) {
            status = uform__fail(outcome, UFORM_FORMAT, uform__text_function,
                                 "%s merges \"%.64s\", which is not in the vocabulary", WHERE, missing);
            break;
        }
        /* The merged token: the left token, then the right one without the continuing prefix. */
        if (right.length < prefix_length) {
            status = uform__fail(outcome, UFORM_FORMAT, uform__text_function,
                                 "%s: the right token \"%.64s\" is shorter than continuing_subword_prefix", WHERE,
                                 right.data);
            break;
        }
        if (uform__text_string_append(&left, right.data + prefix_length, right.length - prefix_length) != 0) {
            status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, uform__text_function, "out of memory reading %s", path);
            break;
        }
        if (!uform__text_vocab_get(&model->vocab, left.data, left.length, &merged_id)) {
            status = uform__fail(outcome, UFORM_FORMAT, uform__text_function,
                                 "%s: the merged token \"%.64s\" is not in the vocabulary", WHERE, left.data);
            break;
        }
        merge_put(model, left_id, right_id, rank++, merged_id);
#undef WHERE
    }
    uform__text_string_free(&left);
    uform__text_string_free(&right);
    return status;
}

uform_status_t uform__text_bpe_parse(const cJSON *json, const char *path, uform__text_model_t *model,
                                     uform_outcome_t *outcome) {
    model->kind = UFORM__TEXT_MODEL_BPE;
    char where[UFORM__TEXT_PATH];
    uform_status_t status;
    const char *unk, *prefix, *suffix;
    int flag;
    const cJSON *dropout = uform__text_json_member(json, "dropout");
    if (dropout && !cJSON_IsNull(dropout)) {
        uform__text_path(where, path, "dropout");
        if (!cJSON_IsNumber(dropout) || !(dropout->valuedouble >= 0.0 && dropout->valuedouble <= 1.0))
            return uform__fail(outcome, UFORM_FORMAT, uform__text_function,
                               "%s must be null or a number from 0 to 1", where);
        if (dropout->valuedouble > 0.0)
            return uform__fail(outcome, UFORM_UNSUPPORTED, uform__text_function,
                               "%s is %g: BPE dropout (random merges, for training) is not supported", where,
                               dropout->valuedouble);
    }
    if ((status = uform__text_json_string(json, "unk_token", path, 0, &unk, outcome)) != UFORM_OK ||
        (status = uform__text_json_string(json, "continuing_subword_prefix", path, 0, &prefix, outcome)) !=
            UFORM_OK ||
        (status = uform__text_json_string(json, "end_of_word_suffix", path, 0, &suffix, outcome)) != UFORM_OK)
        goto failed;
    if (uform__text_strdup(unk, &model->unk_token) != 0 || uform__text_strdup(prefix ? prefix : "", &model->prefix) ||
        uform__text_strdup(suffix ? suffix : "", &model->suffix) != 0) {
        status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, uform__text_function, "out of memory reading %s", path);
        goto failed;
    }
    if ((status = uform__text_json_bool(json, "fuse_unk", path, 0, &flag, outcome)) != UFORM_OK) goto failed;
    model->fuse_unk = (uint8_t)flag;
    if ((status = uform__text_json_bool(json, "byte_fallback", path, 0, &flag, outcome)) != UFORM_OK) goto failed;
    model->byte_fallback = (uint8_t)flag;
    if ((status = uform__text_json_bool(json, "ignore_merges", path, 0, &flag, outcome)) != UFORM_OK) goto failed;
    model->ignore_merges = (uint8_t)flag;
    uform__text_path(where, path, "vocab");
    if ((status = uform__text_vocab_parse(uform__text_json_member(json, "vocab"), where, &model->vocab, outcome)) !=
        UFORM_OK)
        goto failed;
    uform__text_path(where, path, "merges");
    if ((status = parse_merges(uform__text_json_member(json, "merges"), where, model, outcome)) != UFORM_OK)
        goto failed;
    return UFORM_OK;
failed:
    uform__text_model_free(model);
    return status;
}

/* The binary heap of candidate merges: the smallest (rank, position) on top. */
static int candidate_less(const candidate_t *a, const candidate_t *b) {
    return a->rank != b->rank ? a->rank < b->rank : a->position < b->position;
}

static void heap_push(candidate_t *heap, size_t *count, candidate_t candidate) {
    size_t at = (*count)++;
    while (at > 0) {
        size_t parent = (at - 1) / 2;
        if (!candidate_less(&candidate, &heap[parent])) break;
        heap[at] = heap[parent];
        at = parent;
    }
    heap[at] = candidate;
}

static candidate_t heap_pop(candidate_t *heap, size_t *count) {
    candidate_t top = heap[0], last = heap[--*count];
    size_t at = 0, size = *count;
    for (;;) {
        size_t child = 2 * at + 1;
        if (child >= size) break;
        if (child + 1 < size && candidate_less(&heap[child + 1], &heap[child])) ++child;
        if (!candidate_less(&heap[child], &last)) break;
        heap[at] = heap[child];
        at = child;
    }
    if (size) heap[at] = last;
    return top;
}

static int reserve(void **buffer, size_t *capacity, size_t count, size_t size) {
    if (count <= *capacity) return 0;
    size_t grown = *capacity ? *capacity : 64;
    while (grown < count) grown *= 2;
    if (grown > SIZE_MAX / size) return -1;
    void *data = realloc(*buffer, grown * size);
    if (!data) return -1;
    *buffer = data, *capacity = grown;
    return 0;
}

static void add_symbol(symbol_t *symbols, size_t *count, uint32_t id, size_t length) {
    size_t at = (*count)++;
    symbols[at].id = id, symbols[at].length = (uint32_t)length;
    symbols[at].previous = (int64_t)at - 1, symbols[at].next = (int64_t)at + 1;
}

uform_status_t uform__text_bpe_encode(const uform__text_model_t *model, const char *word, size_t length,
                                      uform__text_ids_t *ids, uform__text_scratch_t *scratch,
                                      uform_outcome_t *outcome) {
    static const char function[] = "uform__tokenizer_encode";
    uint32_t id;
    if (model->ignore_merges && uform__text_vocab_get(&model->vocab, word, length, &id)) {
        if (uform__text_ids_append(ids, id) != 0)
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "out of memory appending ids");
        return UFORM_OK;
    }
    size_t prefix_length = strlen(model->prefix), suffix_length = strlen(model->suffix);
    /* At most one symbol per byte, plus byte fallback's up to (prefix + 4 + suffix) per character. */
    size_t most = length * (1 + (model->byte_fallback ? prefix_length + suffix_length + 4 : 0)) + 1;
    if (reserve(&scratch->symbols, &scratch->symbols_capacity, most, sizeof(symbol_t)) != 0 ||
        reserve(&scratch->heap, &scratch->heap_capacity, most, sizeof(candidate_t)) != 0)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "out of memory for a %zu-byte word", length);
    symbol_t *symbols = scratch->symbols;
    candidate_t *heap = scratch->heap;
    size_t count = 0, heap_count = 0;
    uform__text_string_t *buffer = &scratch->word;
    uint32_t unk_id = 0;
    size_t unk_length = 0; /* a pending unknown symbol, 0 when none */
    for (size_t at = 0; at < length;) {
        size_t start = at;
        at += uform__text_utf8_width((unsigned char)word[at]);
        uform__text_string_clear(buffer);
        if ((start > 0 && uform__text_string_append(buffer, model->prefix, prefix_length) != 0) ||
            uform__text_string_append(buffer, word + start, at - start) != 0 ||
            (at == length && uform__text_string_append(buffer, model->suffix, suffix_length) != 0))
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "out of memory");
        if (uform__text_vocab_get(&model->vocab, buffer->data, buffer->length, &id)) {
            if (unk_length) add_symbol(symbols, &count, unk_id, unk_length), unk_length = 0;
            add_symbol(symbols, &count, id, at - start);
            continue;
        }
        if (model->byte_fallback) {
            uint32_t byte_ids[64];
            size_t found = 0;
            for (; found < buffer->length && found < 64; ++found) {
                char name[7];
                static const char hex[] = "0123456789ABCDEF";
                unsigned char byte = (unsigned char)buffer->data[found];
                memcpy(name, "<0x", 3);
                name[3] = hex[byte >> 4], name[4] = hex[byte & 15], name[5] = '>', name[6] = 0;
                if (!uform__text_vocab_get(&model->vocab, name, 6, &byte_ids[found])) break;
            }
            if (found == buffer->length) {
                /* `tokenizers` adds byte symbols without flushing a pending unknown first. */
                for (size_t i = 0; i < found; ++i) add_symbol(symbols, &count, byte_ids[i], 1);
                continue;
            }
        }
        if (!model->unk_token) continue;
        uint32_t unknown = 0;
        if (!(model->fuse_unk && unk_length) &&
            !uform__text_vocab_get(&model->vocab, model->unk_token, strlen(model->unk_token), &unknown))
            return uform__fail(outcome, UFORM_FORMAT, function,
                               "the model needs its unknown token \"%.64s\", which is not in its vocabulary",
                               model->unk_token);
        if (unk_length && model->fuse_unk) unk_length += at - start;
        else {
            if (unk_length) add_symbol(symbols, &count, unk_id, unk_length);
            unk_id = unknown, unk_length = at - start;
        }
    }
    if (unk_length) add_symbol(symbols, &count, unk_id, unk_length);
    if (count == 0) return UFORM_OK;
    symbols[count - 1].next = -1;

    uint32_t rank, merged;
    for (size_t i = 0; i + 1 < count; ++i)
        if (merge_find(model, symbols[i].id, symbols[i + 1].id, &rank, &merged))
            heap_push(heap, &heap_count, (candidate_t){rank, merged, i});
    while (heap_count > 0) {
        candidate_t top = heap_pop(heap, &heap_count);
        symbol_t *current = &symbols[top.position];
        if (current->length == 0 || current->next < 0) continue;
        symbol_t right = symbols[current->next];
        /* A stale candidate: the pair at this position changed since it was pushed. */
        if (!merge_find(model, current->id, right.id, &rank, &merged) || merged != top.id) continue;
        symbols[current->next].length = 0;
        current->id = top.id, current->length += right.length, current->next = right.next;
        if (right.next >= 0) symbols[right.next].previous = (int64_t)top.position;
        /* Heap room: every push follows a merge, which removes a symbol, so pushes never exceed
         * the initial pairs plus twice the merges, below 3 x count. */
        if (heap_count + 2 > scratch->heap_capacity) {
            if (reserve(&scratch->heap, &scratch->heap_capacity, heap_count + 2, sizeof(candidate_t)) != 0)
                return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "out of memory for a %zu-byte word",
                                   length);
            heap = scratch->heap;
        }
        if (current->previous >= 0) {
            const symbol_t *left = &symbols[current->previous];
            if (merge_find(model, left->id, current->id, &rank, &merged))
                heap_push(heap, &heap_count, (candidate_t){rank, merged, (size_t)current->previous});
        }
        if (current->next >= 0 && merge_find(model, current->id, symbols[current->next].id, &rank, &merged))
            heap_push(heap, &heap_count, (candidate_t){rank, merged, top.position});
    }
    for (int64_t at = 0; at >= 0; at = symbols[at].next)
        if (uform__text_ids_append(ids, symbols[at].id) != 0)
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "out of memory appending ids");
    return UFORM_OK;
}
