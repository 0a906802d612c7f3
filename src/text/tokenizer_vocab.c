/*
 * Token strings to ids: an open-addressing hash table with linear probing, its strings in one
 * arena. Vocabularies hold 30k (BERT) to 250k (XLM-R) entries and every word of every text is
 * looked up several times (WordPiece tries each prefix), so lookups compare a 64-bit hash before
 * any bytes and the table stays at most half full.
 */
#include <string.h>

#include "text/tokenizer_internal.h"

/* A multiply-and-rotate hash over 8-byte words (the tokens are short, mostly under 16 bytes). */
uint64_t uform__text_hash(const char *bytes, size_t length) {
    const uint64_t multiplier = 0x9E3779B97F4A7C15ull;
    uint64_t hash = 0x243F6A8885A308D3ull ^ (length * multiplier);
    size_t at = 0;
    for (; at + 8 <= length; at += 8) {
        uint64_t word;
        memcpy(&word, bytes + at, 8);
        hash = (hash ^ word) * multiplier;
        hash ^= hash >> 29;
    }
    if (at < length) {
        uint64_t word = 0;
        memcpy(&word, bytes + at, length - at);
        hash = (hash ^ word) * multiplier;
        hash ^= hash >> 29;
    }
    /* A full 64-bit finaliser (MurmurHash3's fmix64): the tables index by the low bits, which the
     * multiply-xorshift rounds alone leave clustered for short tokens. */
    hash ^= hash >> 33, hash *= 0xFF51AFD7ED558CCDull;
    hash ^= hash >> 33, hash *= 0xC4CEB9FE1A85EC53ull;
    hash ^= hash >> 33;
    hash *= 0xBF58476D1CE4E5B9ull;
    return hash ^ (hash >> 32);
}

static uform__text_vocab_slot_t *find_slot(const uform__text_vocab_t *vocab, const char *token, size_t length,
                                           uint64_t hash) {
    size_t index = (size_t)hash & vocab->mask;
    for (;;) {
        uform__text_vocab_slot_t *slot = &vocab->slots[index];
        if (slot->length == UINT32_MAX) return slot;
        if (slot->hash == hash && slot->length == length && memcmp(vocab->strings + slot->offset, token, length) == 0)
            return slot;
        index = (index + 1) & vocab->mask;
    }
}

static int grow_slots(uform__text_vocab_t *vocab) {
    size_t capacity = vocab->slots ? (vocab->mask + 1) * 2 : 64;
    if (capacity > (size_t)-1 / sizeof(uform__text_vocab_slot_t)) return -1;
    uform__text_vocab_slot_t *slots = malloc(capacity * sizeof *slots);
    if (!slots) return -1;
    for (size_t i = 0; i < capacity; ++i) slots[i].length = UINT32_MAX;
    uform__text_vocab_slot_t *old = vocab->slots;
    size_t old_capacity = old ? vocab->mask + 1 : 0;
    vocab->slots = slots, vocab->mask = capacity - 1;
    for (size_t i = 0; i < old_capacity; ++i) {
        if (old[i].length == UINT32_MAX) continue;
        size_t index = (size_t)old[i].hash & vocab->mask;
        while (slots[index].length != UINT32_MAX) index = (index + 1) & vocab->mask;
        slots[index] = old[i];
    }
    free(old);
    return 0;
}

int uform__text_vocab_put(uform__text_vocab_t *vocab, const char *token, size_t length, uint32_t id) {
    if (length >= UINT32_MAX) return -1;
    if (!vocab->slots || (vocab->count + 1) * 2 > vocab->mask + 1)
        if (grow_slots(vocab) != 0) return -1;
    uint64_t hash = uform__text_hash(token, length);
    uform__text_vocab_slot_t *slot = find_slot(vocab, token, length, hash);
    if (slot->length == UINT32_MAX) {
        if (length + 1 > (size_t)-1 / 2 - vocab->strings_length) return -1;
        size_t needed = vocab->strings_length + length + 1;
        if (needed > vocab->strings_capacity) {
            size_t capacity = vocab->strings_capacity ? vocab->strings_capacity : 4096;
            while (capacity < needed) capacity *= 2;
            char *grown = realloc(vocab->strings, capacity);
            if (!grown) return -1;
            vocab->strings = grown, vocab->strings_capacity = capacity;
        }
        if (length) memcpy(vocab->strings + vocab->strings_length, token, length);
        vocab->strings[vocab->strings_length + length] = '\0';
        slot->hash = hash, slot->offset = vocab->strings_length, slot->length = (uint32_t)length;
        vocab->strings_length = needed;
        vocab->count++;
        if (length > vocab->longest) vocab->longest = length;
    }
    slot->id = id;
    if (vocab->count == 1 || id > vocab->largest_id) vocab->largest_id = id;
    return 0;
}

int uform__text_vocab_get(const uform__text_vocab_t *vocab, const char *token, size_t length, uint32_t *id) {
    if (!vocab->slots || length > vocab->longest) return 0;
    const uform__text_vocab_slot_t *slot = find_slot(vocab, token, length, uform__text_hash(token, length));
    if (slot->length == UINT32_MAX) return 0;
    *id = slot->id;
    return 1;
}

void uform__text_vocab_free(uform__text_vocab_t *vocab) {
    free(vocab->slots);
    free(vocab->strings);
    memset(vocab, 0, sizeof *vocab);
}
