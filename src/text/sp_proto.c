/*
 * Reading a SentencePiece .model: a protobuf (proto2) ModelProto, read with our own wire-format
 * reader instead of libprotobuf, validated field by field, then checked as sentencepiece 0.1.97's
 * ModelInterface::InitializePieces and Normalizer::Init check it.
 *
 * The fields read (sentencepiece_model.proto): ModelProto.pieces = 1 {piece = 1, score = 2 (float),
 * type = 3}, trainer_spec = 2 {model_type = 3, treat_whitespace_as_suffix = 24, byte_fallback = 35,
 * unk_id = 40, bos_id = 41, eos_id = 42, pad_id = 43, unk_piece = 45, bos_piece = 46,
 * eos_piece = 47, pad_piece = 48}, normalizer_spec = 3 {precompiled_charsmap = 2,
 * add_dummy_prefix = 3, remove_extra_whitespaces = 4, escape_whitespaces = 5}. Every other field is
 * skipped after its wire format is checked, as protobuf keeps unknown fields; a known field with
 * the wrong wire type is refused (protobuf would keep it as unknown, no sentencepiece writes one).
 * A message given twice is merged (later scalars win), as protobuf merges. self_test_data is not
 * run.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "text/sp_model.h"

static const char function_name[] = "uform__sp_model_from_bytes";

/* A cursor over one message: [at, end) of the file's bytes. */
typedef struct reader_t {
    const unsigned char *bytes;
    size_t at, end;
    const char *where; /* "ModelProto", "trainer_spec" ... for messages */
} reader_t;

/* One field: number, wire type, and its varint, fixed value or byte range. */
typedef struct field_t {
    uint32_t number, wire;
    uint64_t value;
    size_t offset, start, length; /* offset of the key; payload range for wire type 2 */
} field_t;

static uform_status_t read_varint(reader_t *r, uint64_t *value, const char *what, uform_outcome_t *outcome) {
    uint64_t result = 0;
    size_t begin = r->at;
    for (int i = 0; i < 10; ++i) {
        if (r->at >= r->end)
            return uform__fail(outcome, UFORM_FORMAT, function_name, "%s: the varint %s at byte %zu is cut off at byte %zu",
                               r->where, what, begin, r->at);
        unsigned char byte = r->bytes[r->at++];
        if (i == 9 && byte > 1)
            return uform__fail(outcome, UFORM_FORMAT, function_name,
                               "%s: the varint %s at byte %zu overflows 64 bits", r->where, what, begin);
        result |= (uint64_t)(byte & 0x7F) << (7 * i);
        if (!(byte & 0x80)) {
            *value = result;
            return UFORM_OK;
        }
    }
    return uform__fail(outcome, UFORM_FORMAT, function_name, "%s: the varint %s at byte %zu is longer than 10 bytes",
                       r->where, what, begin);
}

static uform_status_t next_field(reader_t *r, field_t *field, uform_outcome_t *outcome) {
    field->offset = r->at;
    uint64_t key;
    uform_status_t status = read_varint(r, &key, "key", outcome);
    if (status != UFORM_OK) return status;
    field->number = (uint32_t)(key >> 3), field->wire = (uint32_t)(key & 7);
    if ((key >> 3) == 0 || (key >> 3) > 536870911u)
        return uform__fail(outcome, UFORM_FORMAT, function_name, "%s: field number %llu at byte %zu is out of range",
                           r->where, (unsigned long long)(key >> 3), field->offset);
    switch (field->wire) {
    case 0: return read_varint(r, &field->value, "value", outcome);
    case 1:
    case 5: {
        size_t width = field->wire == 1 ? 8 : 4;
        if (r->end - r->at < width)
            return uform__fail(outcome, UFORM_FORMAT, function_name,
                               "%s: field %u at byte %zu needs %zu bytes, %zu are left", r->where, field->number,
                               field->offset, width, r->end - r->at);
        uint64_t value = 0;
        for (size_t i = 0; i < width; ++i) value |= (uint64_t)r->bytes[r->at + i] << (8 * i);
        field->value = value;
        r->at += width;
        return UFORM_OK;
    }
    case 2: {
        uint64_t length;
        status = read_varint(r, &length, "length", outcome);
        if (status != UFORM_OK) return status;
        if (length > r->end - r->at)
            return uform__fail(outcome, UFORM_FORMAT, function_name,
                               "%s: field %u at byte %zu claims %llu bytes, %zu are left in the message", r->where,
                               field->number, field->offset, (unsigned long long)length, r->end - r->at);
        field->start = r->at, field->length = (size_t)length;
        r->at += (size_t)length;
        return UFORM_OK;
    }
    default:
        return uform__fail(outcome, UFORM_FORMAT, function_name,
                           "%s: field %u at byte %zu has wire type %u (groups and types 6-7 are not read)", r->where,
                           field->number, field->offset, field->wire);
    }
}

static uform_status_t expect_wire(const reader_t *r, const field_t *field, uint32_t wire, const char *name,
                                  uform_outcome_t *outcome) {
    if (field->wire == wire) return UFORM_OK;
    return uform__fail(outcome, UFORM_FORMAT, function_name, "%s.%s (field %u) at byte %zu has wire type %u, expected %u",
                       r->where, name, field->number, field->offset, field->wire, wire);
}

/* The parsed values, before they become a model. */
typedef struct piece_t {
    size_t start, length; /* the piece's bytes in the file */
    float score;
    uint32_t type;
} piece_t;

typedef struct parsed_t {
    piece_t *pieces;
    size_t count, capacity;
    int64_t model_type, treat_whitespace_as_suffix, byte_fallback;
    int64_t unk_id, bos_id, eos_id, pad_id;
    size_t piece_names[4][2]; /* unk, bos, eos, pad: start and length, length (size_t)-1 when absent */
    size_t charsmap_start, charsmap_length;
    int add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces;
} parsed_t;

static uform_status_t read_piece(const unsigned char *bytes, const field_t *outer, parsed_t *parsed,
                                 uform_outcome_t *outcome) {
    char where[48];
    snprintf(where, sizeof where, "pieces[%zu]", parsed->count);
    reader_t r = {bytes, outer->start, outer->start + outer->length, where};
    piece_t piece = {0, 0, 0.0f, UFORM__SP_NORMAL};
    int has_piece = 0;
    while (r.at < r.end) {
        field_t field;
        uform_status_t status = next_field(&r, &field, outcome);
        if (status != UFORM_OK) return status;
        if (field.number == 1) {
            if ((status = expect_wire(&r, &field, 2, "piece", outcome)) != UFORM_OK) return status;
            piece.start = field.start, piece.length = field.length, has_piece = 1;
        } else if (field.number == 2) {
            if ((status = expect_wire(&r, &field, 5, "score", outcome)) != UFORM_OK) return status;
            uint32_t bits = (uint32_t)field.value;
            memcpy(&piece.score, &bits, sizeof bits);
        } else if (field.number == 3) {
            if ((status = expect_wire(&r, &field, 0, "type", outcome)) != UFORM_OK) return status;
            if (field.value < 1 || field.value > 6)
                return uform__fail(outcome, UFORM_FORMAT, function_name, "%s.type at byte %zu is %llu, not a piece type 1-6",
                                   where, field.offset, (unsigned long long)field.value);
            piece.type = (uint32_t)field.value;
        }
    }
    if (!has_piece || piece.length == 0)
        return uform__fail(outcome, UFORM_FORMAT, function_name, "%s (at byte %zu) has an empty piece", where, outer->offset);
    if (memchr(bytes + piece.start, 0, piece.length))
        return uform__fail(outcome, UFORM_FORMAT, function_name, "%s (at byte %zu) holds a NUL byte", where, outer->offset);
    if (parsed->count == parsed->capacity) {
        size_t capacity = parsed->capacity ? parsed->capacity * 2 : 1024;
        piece_t *grown = realloc(parsed->pieces, capacity * sizeof *grown);
        if (!grown) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function_name, "no memory for %zu pieces", capacity);
        parsed->pieces = grown, parsed->capacity = capacity;
    }
    parsed->pieces[parsed->count++] = piece;
    return UFORM_OK;
}

/* int32 fields travel as varints of their 64-bit sign extension; protobuf keeps the low 32 bits. */
static int64_t as_int32(uint64_t value) { return (int64_t)(int32_t)(uint32_t)value; }

static uform_status_t read_trainer(const unsigned char *bytes, const field_t *outer, parsed_t *parsed,
                                   uform_outcome_t *outcome) {
    reader_t r = {bytes, outer->start, outer->start + outer->length, "trainer_spec"};
    while (r.at < r.end) {
        field_t field;
        uform_status_t status = next_field(&r, &field, outcome);
        if (status != UFORM_OK) return status;
        int64_t *target = NULL;
        const char *name = NULL;
        switch (field.number) {
        case 3: target = &parsed->model_type, name = "model_type"; break;
        case 24: target = &parsed->treat_whitespace_as_suffix, name = "treat_whitespace_as_suffix"; break;
        case 35: target = &parsed->byte_fallback, name = "byte_fallback"; break;
        case 40: target = &parsed->unk_id, name = "unk_id"; break;
        case 41: target = &parsed->bos_id, name = "bos_id"; break;
        case 42: target = &parsed->eos_id, name = "eos_id"; break;
        case 43: target = &parsed->pad_id, name = "pad_id"; break;
        case 45: case 46: case 47: case 48: {
            if ((status = expect_wire(&r, &field, 2, "*_piece", outcome)) != UFORM_OK) return status;
            parsed->piece_names[field.number - 45][0] = field.start;
            parsed->piece_names[field.number - 45][1] = field.length;
            continue;
        }
        default: continue;
        }
        if ((status = expect_wire(&r, &field, 0, name, outcome)) != UFORM_OK) return status;
        *target = field.number == 24 || field.number == 35 ? field.value != 0 : as_int32(field.value);
    }
    return UFORM_OK;
}

static uform_status_t read_normalizer(const unsigned char *bytes, const field_t *outer, parsed_t *parsed,
                                      uform_outcome_t *outcome) {
    reader_t r = {bytes, outer->start, outer->start + outer->length, "normalizer_spec"};
    while (r.at < r.end) {
        field_t field;
        uform_status_t status = next_field(&r, &field, outcome);
        if (status != UFORM_OK) return status;
        int *flag = NULL;
        if (field.number == 2) {
            if ((status = expect_wire(&r, &field, 2, "precompiled_charsmap", outcome)) != UFORM_OK) return status;
            parsed->charsmap_start = field.start, parsed->charsmap_length = field.length;
            continue;
        }
        if (field.number == 3) flag = &parsed->add_dummy_prefix;
        else if (field.number == 4) flag = &parsed->remove_extra_whitespaces;
        else if (field.number == 5) flag = &parsed->escape_whitespaces;
        else continue;
        if ((status = expect_wire(&r, &field, 0, "flag", outcome)) != UFORM_OK) return status;
        *flag = field.value != 0;
    }
    return UFORM_OK;
}

static uform_status_t parse(const unsigned char *bytes, size_t size, parsed_t *parsed, uform_outcome_t *outcome) {
    reader_t r = {bytes, 0, size, "ModelProto"};
    while (r.at < r.end) {
        field_t field;
        uform_status_t status = next_field(&r, &field, outcome);
        if (status != UFORM_OK) return status;
        if (field.number < 1 || field.number > 3) continue;
        static const char *const names[] = {"", "pieces", "trainer_spec", "normalizer_spec"};
        if ((status = expect_wire(&r, &field, 2, names[field.number], outcome)) != UFORM_OK) return status;
        if (field.number == 1) status = read_piece(bytes, &field, parsed, outcome);
        else if (field.number == 2) status = read_trainer(bytes, &field, parsed, outcome);
        else status = read_normalizer(bytes, &field, parsed, outcome);
        if (status != UFORM_OK) return status;
    }
    return UFORM_OK;
}

/* Finds a piece by name among those `wanted` says (1: reserved kinds, 0: normal kinds); -1 if none. */
static int64_t find_piece(const uform__sp_model_t *model, const char *name, size_t length) {
    size_t matched;
    int32_t id = uform__sp_trie_longest(&model->reserved, name, length, &matched);
    if (id >= 0 && matched == length) return id;
    uint32_t normal;
    if (uform__sp_unigram_piece_to_id(model->unigram, name, length, &normal)) return normal;
    return -1;
}

static uform_status_t build(const unsigned char *bytes, const parsed_t *parsed, const uform__sp_model_options_t *options,
                            uform__sp_model_t *model, uform_outcome_t *outcome) {
    if (parsed->model_type != 1)
        return uform__fail(outcome, UFORM_UNSUPPORTED, function_name,
                           "trainer_spec.model_type is %lld (%s); only UNIGRAM (1) models are read", (long long)parsed->model_type,
                           parsed->model_type == 2 ? "BPE" : parsed->model_type == 3 ? "WORD" : parsed->model_type == 4 ? "CHAR" : "unknown");
    if (parsed->count == 0) return uform__fail(outcome, UFORM_FORMAT, function_name, "the model has no pieces");
    size_t total = 0;
    for (size_t i = 0; i < parsed->count; ++i) total += parsed->pieces[i].length;
    uform__sp_unigram_t *unigram = uform__sp_unigram_allocate(parsed->count, total);
    if (!unigram)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function_name, "no memory for %zu pieces", parsed->count);
    model->unigram = unigram;
    unigram->arithmetic = UFORM__SP_SENTENCEPIECE;
    unigram->byte_fallback = parsed->byte_fallback != 0;
    char *cursor = unigram->piece_bytes;
    int64_t unk = -1;
    for (size_t i = 0; i < parsed->count; ++i) {
        const piece_t *piece = &parsed->pieces[i];
        memcpy(cursor, bytes + piece->start, piece->length);
        cursor[piece->length] = 0;
        unigram->pieces[i] = cursor, unigram->lengths[i] = piece->length;
        unigram->scores[i] = piece->score;
        unigram->kinds[i] = (unsigned char)piece->type;
        cursor += piece->length + 1;
        if (piece->type == UFORM__SP_UNKNOWN) {
            if (unk >= 0)
                return uform__fail(outcome, UFORM_FORMAT, function_name,
                                   "pieces %lld and %zu are both of type UNKNOWN (one unk is allowed)", (long long)unk, i);
            unk = (int64_t)i;
        }
        if (piece->type == UFORM__SP_BYTE && !unigram->byte_fallback)
            return uform__fail(outcome, UFORM_FORMAT, function_name,
                               "piece %zu is a BYTE piece although trainer_spec.byte_fallback is false", i);
    }
    if (unk < 0) return uform__fail(outcome, UFORM_FORMAT, function_name, "no piece is of type UNKNOWN (unk is not defined)");
    unigram->unk_id = unk;
    if (uform__sp_unigram_finish(unigram) != 0)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function_name, "no memory for the trie of %zu pieces", parsed->count);
    /* The reserved pieces and the user-defined ones get tries of their own. */
    unsigned char *skip = malloc(parsed->count);
    if (!skip) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function_name, "no memory for %zu flags", parsed->count);
    for (size_t i = 0; i < parsed->count; ++i) {
        unsigned char kind = unigram->kinds[i];
        skip[i] = kind == UFORM__SP_NORMAL || kind == UFORM__SP_USER_DEFINED || kind == UFORM__SP_UNUSED;
    }
    int failed = uform__sp_trie_build(&model->reserved, (const char *const *)unigram->pieces, unigram->lengths,
                                      parsed->count, skip, 1) != 0;
    for (size_t i = 0; i < parsed->count; ++i) {
        skip[i] = unigram->kinds[i] != UFORM__SP_USER_DEFINED;
        model->user_defined_count += !skip[i];
    }
    if (!failed && model->user_defined_count)
        failed = uform__sp_trie_build(&model->user_defined, (const char *const *)unigram->pieces, unigram->lengths,
                                      parsed->count, skip, 1) != 0;
    free(skip);
    if (failed) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function_name, "no memory for the piece tries");
    /* Duplicates: each piece must be found again under its own id in its group. */
    for (size_t i = 0; i < parsed->count; ++i) {
        unsigned char kind = unigram->kinds[i];
        int normal = kind == UFORM__SP_NORMAL || kind == UFORM__SP_USER_DEFINED || kind == UFORM__SP_UNUSED;
        uint32_t found = 0;
        size_t matched = 0;
        if (normal) uform__sp_unigram_piece_to_id(unigram, unigram->pieces[i], unigram->lengths[i], &found);
        else found = (uint32_t)uform__sp_trie_longest(&model->reserved, unigram->pieces[i], unigram->lengths[i], &matched);
        if (found != i)
            return uform__fail(outcome, UFORM_FORMAT, function_name, "piece %zu (\"%.40s\") is already defined as piece %u", i,
                               unigram->pieces[i], found);
    }
    if (unigram->byte_fallback)
        for (int byte = 0; byte < 256; ++byte)
            if (unigram->byte_ids[byte] < 0)
                return uform__fail(outcome, UFORM_FORMAT, function_name,
                                   "byte_fallback is true but there is no BYTE piece <0x%02X> (256 are needed)", byte);
    for (size_t i = 0; i < parsed->count; ++i)
        if (unigram->kinds[i] == UFORM__SP_BYTE) {
            int known = 0;
            for (int byte = 0; byte < 256; ++byte) known |= unigram->byte_ids[byte] == (int64_t)i;
            if (!known)
                return uform__fail(outcome, UFORM_FORMAT, function_name,
                                   "BYTE piece %zu (\"%.40s\") is not named <0xNN>", i, unigram->pieces[i]);
        }
    uform_status_t status = uform__sp_charsmap_init(&model->charsmap, bytes + parsed->charsmap_start,
                                                    parsed->charsmap_length, 0, function_name, outcome);
    if (status != UFORM_OK) return status;
    model->add_dummy_prefix = parsed->add_dummy_prefix;
    if (options && options->add_dummy_prefix) model->add_dummy_prefix = options->add_dummy_prefix > 0;
    model->remove_extra_whitespaces = parsed->remove_extra_whitespaces;
    model->escape_whitespaces = parsed->escape_whitespaces;
    model->treat_whitespace_as_suffix = parsed->treat_whitespace_as_suffix != 0;
    /* sentencepiece's unk_id() ... pad_id(): the named piece when it has the right type, else -1. */
    static const char *const defaults[4] = {"<unk>", "<s>", "</s>", "<pad>"};
    int64_t *targets[4] = {&model->special.unk, &model->special.bos, &model->special.eos, &model->special.pad};
    for (int k = 0; k < 4; ++k) {
        const char *name = defaults[k];
        size_t length = strlen(name);
        if (parsed->piece_names[k][1] != (size_t)-1 && parsed->piece_names[k][1] > 0)
            name = (const char *)bytes + parsed->piece_names[k][0], length = parsed->piece_names[k][1];
        int64_t id = find_piece(model, name, length);
        unsigned char want = k == 0 ? UFORM__SP_UNKNOWN : UFORM__SP_CONTROL;
        *targets[k] = id >= 0 && unigram->kinds[id] == want ? id : -1;
    }
    return UFORM_OK;
}

uform_status_t uform__sp_model_from_bytes(const void *bytes, size_t size, const uform__sp_model_options_t *options,
                                          uform__sp_model_t **model, uform_outcome_t *outcome) {
    if (!model || (size && !bytes))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function_name, "NULL bytes or result");
    *model = NULL;
    parsed_t parsed;
    memset(&parsed, 0, sizeof parsed);
    parsed.model_type = 1, parsed.unk_id = 0, parsed.bos_id = 1, parsed.eos_id = 2, parsed.pad_id = -1;
    parsed.add_dummy_prefix = parsed.remove_extra_whitespaces = parsed.escape_whitespaces = 1;
    for (int k = 0; k < 4; ++k) parsed.piece_names[k][1] = (size_t)-1;
    uform_status_t status = parse(bytes, size, &parsed, outcome);
    uform__sp_model_t *made = NULL;
    if (status == UFORM_OK) {
        made = calloc(1, sizeof *made);
        if (!made) status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function_name, "no memory for a model");
    }
    if (status == UFORM_OK) status = build(bytes, &parsed, options, made, outcome);
    free(parsed.pieces);
    if (status != UFORM_OK) {
        uform__sp_model_free(made);
        return status;
    }
    *model = made;
    return UFORM_OK;
}

uform_status_t uform__sp_model_open(const char *path, const uform__sp_model_options_t *options,
                                    uform__sp_model_t **model, uform_outcome_t *outcome) {
    static const char function[] = "uform__sp_model_open";
    if (!path || !model) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "NULL path or result");
    *model = NULL;
    FILE *file = fopen(path, "rb");
    if (!file) /* fopen allocates: its ENOMEM is memory, not the file */
        return uform__fail(outcome, errno == ENOMEM ? UFORM_OUT_OF_MEMORY : UFORM_IO, function, "cannot open %s: %s", path,
                           strerror(errno));
    unsigned char *bytes = NULL;
    size_t size = 0, capacity = 0;
    for (;;) {
        if (size == capacity) {
            capacity = capacity ? capacity * 2 : 1 << 20;
            unsigned char *grown = realloc(bytes, capacity);
            if (!grown) {
                free(bytes), fclose(file);
                return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "no memory to read %s", path);
            }
            bytes = grown;
        }
        size_t got = fread(bytes + size, 1, capacity - size, file);
        size += got;
        if (got == 0) break;
    }
    int read_error = ferror(file);
    fclose(file);
    if (read_error) {
        free(bytes);
        return uform__fail(outcome, UFORM_IO, function, "cannot read %s", path);
    }
    uform_status_t status = uform__sp_model_from_bytes(bytes, size, options, model, outcome);
    free(bytes);
    return status;
}

void uform__sp_model_free(uform__sp_model_t *model) {
    if (!model) return;
    uform__sp_unigram_free(model->unigram);
    uform__sp_trie_free(&model->reserved);
    uform__sp_trie_free(&model->user_defined);
    uform__sp_charsmap_release(&model->charsmap);
    free(model);
}
