/*
 * The Unigram model: the best segmentation of a word under the summed log-probability scores of
 * its pieces, found left to right as sentencepiece's EncodeOptimized and tokenizers'
 * encode_optimized do. For every end position it keeps the best path ending there; a candidate
 * replaces the kept one only when strictly better, so ties go to the earliest start, then to the
 * shortest piece (the trie is walked byte by byte). A character that begins no one-character piece
 * gets an unknown node scored min_score - 10.
 *
 * The two references add scores differently, and on exact ties that decides the segmentation:
 *   - tokenizers (DOUBLE): doubles throughout, min_score over every vocabulary entry;
 *   - sentencepiece 0.1.97 (SENTENCEPIECE): the best scores are stored as floats, a piece's
 *     candidate is computed in double (its score expression has type double: the user-defined
 *     branch subtracts the double 0.1) and compared in double with the stored float, the unknown
 *     candidate is a float sum compared in float; min/max over NORMAL pieces only (max starts at
 *     FLT_MIN), user-defined pieces score length_in_bytes * max_score - 0.1, UNUSED pieces are skipped.
 * After the search, tokenizers fuses consecutive unknown nodes into one string and looks it up again
 * (byte fallback applies to the whole string), sentencepiece merges consecutive unknowns into one
 * unk id or, with byte fallback, emits every byte of each unknown piece.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "text/sp_internal.h"

uform__sp_unigram_t *uform__sp_unigram_allocate(size_t size, size_t bytes) {
    uform__sp_unigram_t *unigram = calloc(1, sizeof *unigram);
    if (!unigram) return NULL;
    unigram->size = size;
    unigram->pieces = calloc(size ? size : 1, sizeof *unigram->pieces);
    unigram->lengths = calloc(size ? size : 1, sizeof *unigram->lengths);
    unigram->scores = calloc(size ? size : 1, sizeof *unigram->scores);
    unigram->kinds = calloc(size ? size : 1, 1);
    unigram->piece_bytes = malloc(bytes + size + 1);
    unigram->unk_id = -1;
    if (!unigram->pieces || !unigram->lengths || !unigram->scores || !unigram->kinds || !unigram->piece_bytes) {
        uform__sp_unigram_free(unigram);
        return NULL;
    }
    return unigram;
}

void uform__sp_unigram_free(uform__sp_unigram_t *unigram) {
    if (!unigram) return;
    uform__sp_trie_free(&unigram->trie);
    free(unigram->pieces);
    free(unigram->lengths);
    free(unigram->scores);
    free(unigram->kinds);
    free(unigram->piece_bytes);
    free(unigram);
}

int uform__sp_unigram_finish(uform__sp_unigram_t *unigram) {
    int sentencepiece = unigram->arithmetic == UFORM__SP_SENTENCEPIECE;
    unsigned char *skip = NULL;
    if (sentencepiece) {
        skip = calloc(unigram->size ? unigram->size : 1, 1);
        if (!skip) return -1;
        for (size_t i = 0; i < unigram->size; ++i) {
            unsigned char kind = unigram->kinds[i];
            skip[i] = !(kind == UFORM__SP_NORMAL || kind == UFORM__SP_USER_DEFINED || kind == UFORM__SP_UNUSED);
        }
    }
    int built = uform__sp_trie_build(&unigram->trie, (const char *const *)unigram->pieces, unigram->lengths,
                                     unigram->size, skip, 0);
    free(skip);
    if (built != 0) return -1;
    for (int byte = 0; byte < 256; ++byte) unigram->byte_ids[byte] = -1;
    if (sentencepiece) {
        /* sentencepiece's byte pieces are the BYTE-typed ones named "<0xNN>" (upper-case hex). */
        static const char hex[] = "0123456789ABCDEF";
        for (size_t i = 0; i < unigram->size; ++i) {
            const char *name = unigram->pieces[i];
            if (unigram->kinds[i] != UFORM__SP_BYTE || unigram->lengths[i] != 6 || memcmp(name, "<0x", 3) != 0 ||
                name[5] != '>')
                continue;
            const char *high = memchr(hex, name[3], 16), *low = memchr(hex, name[4], 16);
            if (!high || !low || !name[3] || !name[4]) continue;
            int byte = (int)((high - hex) * 16 + (low - hex));
            if (unigram->byte_ids[byte] < 0) unigram->byte_ids[byte] = (int64_t)i;
        }
    } else {
        for (int byte = 0; byte < 256; ++byte) {
            char name[8];
            uint32_t id;
            snprintf(name, sizeof name, "<0x%02X>", byte);
            if (uform__sp_unigram_piece_to_id(unigram, name, 6, &id)) unigram->byte_ids[byte] = id;
        }
    }
    if (sentencepiece) {
        float min_score = FLT_MAX, max_score = FLT_MIN;
        for (size_t i = 0; i < unigram->size; ++i) {
            if (unigram->kinds[i] != UFORM__SP_NORMAL) continue;
            float score = (float)unigram->scores[i];
            if (score < min_score) min_score = score;
            if (score > max_score) max_score = score;
        }
        float unk_score = min_score - 10.0f;
        unigram->unk_score = unk_score;
        unigram->max_score = max_score;
    } else {
        double min_score = INFINITY;
        for (size_t i = 0; i < unigram->size; ++i)
            if (unigram->scores[i] < min_score) min_score = unigram->scores[i];
        unigram->unk_score = min_score - 10.0;
    }
    return 0;
}

/* The best path ending at one byte position. */
typedef struct best_t {
    double score;  /* a float's value under SENTENCEPIECE */
    int64_t start; /* -1: no path ends here yet */
    int64_t id;
} best_t;

/* Appends the ids of one fused string the way tokenizers' Unigram::tokenize maps it. */
static int tokenizers_emit(const uform__sp_unigram_t *unigram, const char *text, size_t length, uform__text_ids_t *ids) {
    uint32_t id;
    if (uform__sp_unigram_piece_to_id(unigram, text, length, &id)) return uform__text_ids_append(ids, id);
    if (unigram->byte_fallback) {
        size_t at = 0;
        while (at < length && unigram->byte_ids[(unsigned char)text[at]] >= 0) ++at;
        if (at == length) {
            for (at = 0; at < length; ++at)
                if (uform__text_ids_append(ids, (uint32_t)unigram->byte_ids[(unsigned char)text[at]]) != 0) return -1;
            return 0;
        }
    }
    return uform__text_ids_append(ids, (uint32_t)unigram->unk_id);
}

uform_status_t uform__sp_unigram_segment(const uform__sp_unigram_t *unigram, const char *text, size_t length,
                                         uform__text_ids_t *ids, const char *function, uform_outcome_t *outcome) {
    if (length == 0) return UFORM_OK;
    int sentencepiece = unigram->arithmetic == UFORM__SP_SENTENCEPIECE;
    best_t small[128];
    best_t *best = length < 128 ? small : malloc((length + 1) * sizeof *best);
    if (!best) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "no memory to segment %zu bytes", length);
    for (size_t i = 0; i <= length; ++i) best[i].score = 0, best[i].start = -1, best[i].id = -1;
    uform_status_t status = UFORM_OK;
    size_t starts_at = 0;
    while (starts_at < length) {
        double till = best[starts_at].score;
        size_t char_length = uform__sp_one_char_length((unsigned char)text[starts_at]);
        if (char_length > length - starts_at) char_length = length - starts_at;
        int has_single = 0;
        uint32_t node = 0;
        for (size_t key_pos = starts_at; key_pos < length;) {
            int64_t child = uform__sp_trie_child(&unigram->trie, node, (unsigned char)text[key_pos]);
            if (child < 0) break;
            node = (uint32_t)child;
            ++key_pos;
            int32_t id = unigram->trie.values[node];
            if (id < 0) continue;
            size_t piece_length = key_pos - starts_at;
            best_t *target = &best[key_pos];
            if (sentencepiece) {
                if (unigram->kinds[id] == UFORM__SP_UNUSED) continue;
                double score = unigram->kinds[id] == UFORM__SP_USER_DEFINED
                                   ? (double)((float)piece_length * unigram->max_score) - 0.1
                                   : unigram->scores[id];
                double candidate = score + till;
                if (target->start < 0 || candidate > target->score)
                    target->score = (float)candidate, target->start = (int64_t)starts_at, target->id = id;
            } else {
                double candidate = unigram->scores[id] + till;
                if (target->start < 0 || candidate > target->score)
                    target->score = candidate, target->start = (int64_t)starts_at, target->id = id;
            }
            if (piece_length == char_length) has_single = 1;
        }
        if (!has_single) {
            best_t *target = &best[starts_at + char_length];
            double candidate;
            if (sentencepiece) {
                float sum = (float)unigram->unk_score + (float)till;
                candidate = sum;
            } else {
                candidate = unigram->unk_score + till;
            }
            if (target->start < 0 || candidate > target->score) {
                if (unigram->unk_id < 0) {
                    status = uform__fail(outcome, UFORM_UNSUPPORTED, function,
                                         "byte %zu of the word begins a character no piece covers, and the model has "
                                         "no unk_id",
                                         starts_at);
                    break;
                }
                target->score = candidate, target->start = (int64_t)starts_at, target->id = unigram->unk_id;
            }
        }
        starts_at += char_length;
    }
    /* Backtrack: collect the path's end positions, last first, into the start fields' chain. */
    size_t steps = 0;
    for (size_t end = length; status == UFORM_OK && end > 0; end = (size_t)best[end].start, ++steps) {
        if (best[end].start < 0) {
            status = uform__fail(outcome, UFORM_UNSUPPORTED, function, "no segmentation reaches byte %zu of the word", end);
        }
    }
    size_t *ends = NULL;
    if (status == UFORM_OK) {
        ends = malloc(steps * sizeof *ends);
        if (!ends) status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "no memory for a %zu-piece path", steps);
    }
    if (status == UFORM_OK) {
        size_t i = steps;
        for (size_t end = length; end > 0; end = (size_t)best[end].start) ends[--i] = end;
        size_t kept = ids->count;
        int failed = 0, previous_unknown = 0;
        size_t start = 0;
        for (i = 0; i < steps && !failed; ++i) {
            size_t end = ends[i];
            int64_t id = best[end].id;
            int unknown = id == unigram->unk_id;
            if (sentencepiece) {
                if (unknown && unigram->byte_fallback) {
                    for (size_t at = start; at < end && !failed; ++at)
                        failed = uform__text_ids_append(ids, (uint32_t)unigram->byte_ids[(unsigned char)text[at]]) != 0;
                } else if (!(unknown && previous_unknown)) {
                    failed = uform__text_ids_append(ids, (uint32_t)id) != 0;
                }
                previous_unknown = unknown;
                start = end;
            } else if (unknown) {
                /* tokenizers fuses the run of unknown nodes, then maps the whole string. */
                size_t run_end = end;
                while (i + 1 < steps && best[ends[i + 1]].id == unigram->unk_id) run_end = ends[++i];
                failed = tokenizers_emit(unigram, text + start, run_end - start, ids) != 0;
                start = run_end;
            } else {
                failed = tokenizers_emit(unigram, text + start, end - start, ids) != 0;
                start = end;
            }
        }
        if (failed) {
            ids->count = kept;
            status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "no memory for the ids of a %zu-byte word", length);
        }
    }
    free(ends);
    if (best != small) free(best);
    return status;
}

uform_status_t uform__sp_unigram_encode(const uform__sp_unigram_t *unigram, const char *piece, size_t length,
                                        uform__text_ids_t *ids, uform_outcome_t *outcome) {
    static const char function[] = "uform__sp_unigram_encode";
    if (!unigram || (length && !piece) || !ids)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "NULL model, word or ids");
    return uform__sp_unigram_segment(unigram, piece, length, ids, function, outcome);
}

size_t uform__sp_unigram_size(const uform__sp_unigram_t *unigram) { return unigram ? unigram->size : 0; }

int uform__sp_unigram_piece_to_id(const uform__sp_unigram_t *unigram, const char *piece, size_t length, uint32_t *id) {
    if (!unigram || length == 0) return 0;
    uint32_t node = 0;
    for (size_t at = 0; at < length; ++at) {
        int64_t child = uform__sp_trie_child(&unigram->trie, node, (unsigned char)piece[at]);
        if (child < 0) return 0;
        node = (uint32_t)child;
    }
    if (unigram->trie.values[node] < 0) return 0;
    if (id) *id = (uint32_t)unigram->trie.values[node];
    return 1;
}

const char *uform__sp_unigram_id_to_piece(const uform__sp_unigram_t *unigram, uint32_t id, size_t *length) {
    if (!unigram || id >= unigram->size) return NULL;
    if (length) *length = unigram->lengths[id];
    return unigram->pieces[id];
}

int64_t uform__sp_unigram_unk_id(const uform__sp_unigram_t *unigram) { return unigram ? unigram->unk_id : -1; }

/* Reads an exact non-negative integer below 2^53 from a JSON number. */
static int json_index(const cJSON *item, uint64_t *value) {
    if (!cJSON_IsNumber(item)) return 0;
    double number = item->valuedouble;
    if (!(number >= 0) || number >= 9007199254740992.0 || number != floor(number)) return 0;
    *value = (uint64_t)number;
    return 1;
}

uform_status_t uform__sp_unigram_from_json(const cJSON *model, uform__sp_unigram_t **unigram, uform_outcome_t *outcome) {
    static const char function[] = "uform__sp_unigram_from_json";
    if (!model || !unigram) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "NULL model or result");
    *unigram = NULL;
    if (!cJSON_IsObject(model)) return uform__fail(outcome, UFORM_FORMAT, function, "the model entry is not a JSON object");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
    if (type && (!cJSON_IsString(type) || strcmp(type->valuestring, "Unigram") != 0))
        return uform__fail(outcome, UFORM_FORMAT, function, "the model's \"type\" is not \"Unigram\"");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    if (!cJSON_IsArray(vocab)) return uform__fail(outcome, UFORM_FORMAT, function, "the model has no \"vocab\" array");
    size_t size = 0, bytes = 0;
    for (const cJSON *entry = vocab->child; entry; entry = entry->next, ++size) {
        const cJSON *text = cJSON_IsArray(entry) ? entry->child : NULL;
        const cJSON *score = text ? text->next : NULL;
        if (!cJSON_IsString(text) || !cJSON_IsNumber(score) || score->next)
            return uform__fail(outcome, UFORM_FORMAT, function,
                               "vocab entry %zu is not a [piece, score] pair of a string and a number", size);
        bytes += strlen(text->valuestring);
    }
    const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_id");
    uint64_t unk_id = 0;
    int has_unk = unk && !cJSON_IsNull(unk);
    if (has_unk && (!json_index(unk, &unk_id) || unk_id >= size))
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "\"unk_id\" is not null nor an index into the %zu-entry vocabulary", size);
    if (size == 0) return uform__fail(outcome, UFORM_FORMAT, function, "the vocabulary is empty (at least <unk> is needed)");
    const cJSON *fallback = cJSON_GetObjectItemCaseSensitive(model, "byte_fallback");
    if (fallback && !cJSON_IsBool(fallback))
        return uform__fail(outcome, UFORM_FORMAT, function, "\"byte_fallback\" is not a boolean");
    uform__sp_unigram_t *made = uform__sp_unigram_allocate(size, bytes);
    if (!made) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "no memory for a %zu-piece vocabulary", size);
    made->arithmetic = UFORM__SP_DOUBLE;
    made->unk_id = has_unk ? (int64_t)unk_id : -1;
    made->byte_fallback = fallback && cJSON_IsTrue(fallback);
    char *cursor = made->piece_bytes;
    size_t index = 0;
    for (const cJSON *entry = vocab->child; entry; entry = entry->next, ++index) {
        const char *text = entry->child->valuestring;
        size_t piece_length = strlen(text);
        memcpy(cursor, text, piece_length + 1);
        made->pieces[index] = cursor, made->lengths[index] = piece_length;
        made->scores[index] = entry->child->next->valuedouble;
        made->kinds[index] = UFORM__SP_NORMAL;
        cursor += piece_length + 1;
    }
    if (uform__sp_unigram_finish(made) != 0) {
        uform__sp_unigram_free(made);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "no memory for the trie of %zu pieces", size);
    }
    *unigram = made;
    return UFORM_OK;
}
