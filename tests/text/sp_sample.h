/*
 * Small SentencePiece inputs built by hand for the hostile-input test and the fuzz target: a
 * protobuf writer, a nine-piece ModelProto, and a darts-clone charsmap with the single rule
 * "A" -> "a". Header-only (static functions), shared by tests/text/test_sp_hostile.c and
 * tests/fuzz/sp_model_fuzz.c.
 *
 * The charsmap's double array, unit by unit: the root (unit 0) has offset 1, so its children live at
 * 1 ^ byte; "A" (0x41) is unit 64, labelled 0x41 with has_leaf and offset 1, so its value unit is
 * 64 ^ 1 = 65, a leaf (bit 31) holding offset 0 into the blob "a\0". Every other unit is 0 (label 0
 * matches no byte).
 */
#ifndef UFORM_TESTS_SP_SAMPLE_H
#define UFORM_TESTS_SP_SAMPLE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct sp_buffer_t {
    unsigned char *data;
    size_t size, capacity;
} sp_buffer_t;

static inline void sp_put(sp_buffer_t *b, const void *bytes, size_t length) {
    if (b->size + length > b->capacity) {
        size_t capacity = b->capacity ? b->capacity * 2 : 256;
        while (capacity < b->size + length) capacity *= 2;
        unsigned char *grown = realloc(b->data, capacity);
        if (!grown) abort();
        b->data = grown, b->capacity = capacity;
    }
    memcpy(b->data + b->size, bytes, length);
    b->size += length;
}

static inline void sp_varint(sp_buffer_t *b, uint64_t value) {
    do {
        unsigned char byte = (unsigned char)(value & 0x7F);
        value >>= 7;
        if (value) byte |= 0x80;
        sp_put(b, &byte, 1);
    } while (value);
}

static inline void sp_key(sp_buffer_t *b, uint32_t field, uint32_t wire) { sp_varint(b, (uint64_t)field << 3 | wire); }

static inline void sp_field_bytes(sp_buffer_t *b, uint32_t field, const void *bytes, size_t length) {
    sp_key(b, field, 2);
    sp_varint(b, length);
    sp_put(b, bytes, length);
}

static inline void sp_field_varint(sp_buffer_t *b, uint32_t field, uint64_t value) {
    sp_key(b, field, 0);
    sp_varint(b, value);
}

static inline void sp_field_float(sp_buffer_t *b, uint32_t field, float value) {
    uint32_t bits;
    memcpy(&bits, &value, 4);
    unsigned char le[4] = {(unsigned char)bits, (unsigned char)(bits >> 8), (unsigned char)(bits >> 16),
                           (unsigned char)(bits >> 24)};
    sp_key(b, field, 5);
    sp_put(b, le, 4);
}

/* The charsmap described above ("A" -> "a"); `value` and `leaf_offset_unit` let tests break it. */
static inline sp_buffer_t sp_sample_charsmap_with(uint32_t value, uint32_t leaf_unit) {
    uint32_t units[66] = {0};
    units[0] = 1u << 10;
    units[64] = leaf_unit;
    units[65] = (1u << 31) | value;
    sp_buffer_t b = {0};
    unsigned char size[4] = {(unsigned char)sizeof units, (unsigned char)(sizeof units >> 8), 0, 0};
    sp_put(&b, size, 4);
    for (int i = 0; i < 66; ++i) {
        unsigned char le[4] = {(unsigned char)units[i], (unsigned char)(units[i] >> 8), (unsigned char)(units[i] >> 16),
                               (unsigned char)(units[i] >> 24)};
        sp_put(&b, le, 4);
    }
    sp_put(&b, "a", 2);
    return b;
}

static inline sp_buffer_t sp_sample_charsmap(void) { return sp_sample_charsmap_with(0, (1u << 10) | (1u << 8) | 0x41); }

/* One piece message. */
static inline void sp_piece(sp_buffer_t *model, const char *text, float score, int type) {
    sp_buffer_t piece = {0};
    sp_field_bytes(&piece, 1, text, strlen(text));
    sp_field_float(&piece, 2, score);
    if (type != 1) sp_field_varint(&piece, 3, (uint64_t)type);
    sp_field_bytes(model, 1, piece.data, piece.size);
    free(piece.data);
}

/*
 * The sample model: 0 <unk> (UNKNOWN), 1 <s>, 2 </s> (CONTROL), 3 "▁" -1, 4 "a" -2, 5 "b" -2,
 * 6 "▁a" -1.5, 7 "ab" -1, 8 "c" -4; trainer_spec UNIGRAM, normalizer_spec with the charsmap above and
 * the default flags. `model_type` 1 normally; the hostile test passes others.
 */
static inline sp_buffer_t sp_sample_model_with(int model_type, int with_charsmap) {
    sp_buffer_t model = {0}, trainer = {0}, normalizer = {0};
    sp_piece(&model, "<unk>", 0, 2);
    sp_piece(&model, "<s>", 0, 3);
    sp_piece(&model, "</s>", 0, 3);
    sp_piece(&model, "\xE2\x96\x81", -1.0f, 1);
    sp_piece(&model, "a", -2.0f, 1);
    sp_piece(&model, "b", -2.0f, 1);
    sp_piece(&model, "\xE2\x96\x81" "a", -1.5f, 1);
    sp_piece(&model, "ab", -1.0f, 1);
    sp_piece(&model, "c", -4.0f, 1);
    sp_field_varint(&trainer, 3, (uint64_t)model_type);
    sp_field_varint(&trainer, 40, 0);
    sp_field_varint(&trainer, 41, 1);
    sp_field_varint(&trainer, 42, 2);
    sp_field_varint(&trainer, 43, (uint64_t)-1); /* pad_id -1 travels as ten bytes */
    sp_field_bytes(&model, 2, trainer.data, trainer.size);
    sp_field_bytes(&normalizer, 1, "test", 4);
    if (with_charsmap) {
        sp_buffer_t charsmap = sp_sample_charsmap();
        sp_field_bytes(&normalizer, 2, charsmap.data, charsmap.size);
        free(charsmap.data);
    }
    sp_field_bytes(&model, 3, normalizer.data, normalizer.size);
    free(trainer.data);
    free(normalizer.data);
    return model;
}

static inline sp_buffer_t sp_sample_model(void) { return sp_sample_model_with(1, 1); }

#endif
