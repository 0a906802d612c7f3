/*
 * Encoding with a SentencePiece .model as python3-sentencepiece 0.1.97 does: sentencepiece's
 * Normalizer::Normalize (normalizer.cc) and then the Unigram model (sp_unigram.c, SENTENCEPIECE
 * arithmetic). Also the accessors of a model and XLM-R's fairseq id mapping.
 *
 * The normaliser works prefix by prefix: a user-defined piece is kept verbatim; else the longest
 * charsmap rule gives the replacement; else one UTF-8 character is kept (a malformed byte becomes
 * U+FFFD). With remove_extra_whitespaces, prefixes that normalise to exactly " " are dropped at the
 * start, spaces at the start of a replacement that follows one ending in a space are dropped, and
 * trailing spaces (U+2581 once escaped) are removed at the end; the dummy prefix is added once the
 * text is known not to be all whitespace; with escape_whitespaces every ' ' becomes U+2581.
 */
#include <string.h>

#include "core/outcome.h"
#include "text/sp_model.h"

static const char space_symbol[] = "\xE2\x96\x81";

/* One prefix: answers the bytes consumed, `*replacement` / `*replacement_length` what they become. */
static size_t normalize_prefix(const uform__sp_model_t *model, const char *input, size_t length,
                               const char **replacement, size_t *replacement_length) {
    if (model->user_defined_count) {
        size_t matched = 0;
        if (uform__sp_trie_longest(&model->user_defined, input, length, &matched) >= 0 && matched > 0) {
            *replacement = input, *replacement_length = matched;
            return matched;
        }
    }
    if (model->charsmap.unit_count) {
        const char *found = NULL;
        size_t matched = uform__sp_charsmap_match(&model->charsmap, input, length, 1, &found);
        if (matched > 0) {
            *replacement = found, *replacement_length = strlen(found);
            return matched;
        }
    }
    size_t bytes;
    if (uform__sp_decode_utf8(input, length, &bytes) < 0) {
        *replacement = "\xEF\xBF\xBD", *replacement_length = 3;
        return 1;
    }
    *replacement = input, *replacement_length = bytes;
    return bytes;
}

/* Appends the whitespace mark; 0 or -1 (no memory). */
static int add_whitespace(const uform__sp_model_t *model, uform__text_string_t *out) {
    return model->escape_whitespaces ? uform__text_string_append(out, space_symbol, 3)
                                     : uform__text_string_append(out, " ", 1);
}

static uform_status_t normalize(const uform__sp_model_t *model, const char *input, size_t length,
                                uform__text_string_t *out, const char *function, uform_outcome_t *outcome) {
    size_t base = out->length;
    int failed = 0;
    if (model->remove_extra_whitespaces) {
        while (length > 0) {
            const char *replacement;
            size_t replacement_length, consumed = normalize_prefix(model, input, length, &replacement, &replacement_length);
            if (replacement_length != 1 || replacement[0] != ' ') break;
            input += consumed, length -= consumed;
        }
    }
    if (length == 0) return UFORM_OK;
    if (!model->treat_whitespace_as_suffix && model->add_dummy_prefix) failed |= add_whitespace(model, out) != 0;
    int previous_space = model->remove_extra_whitespaces;
    while (length > 0 && !failed) {
        const char *replacement;
        size_t replacement_length, consumed = normalize_prefix(model, input, length, &replacement, &replacement_length);
        while (previous_space && replacement_length > 0 && replacement[0] == ' ') ++replacement, --replacement_length;
        if (replacement_length > 0) {
            for (size_t i = 0; i < replacement_length && !failed; ++i) {
                if (model->escape_whitespaces && replacement[i] == ' ') failed |= add_whitespace(model, out) != 0;
                else failed |= uform__text_string_append(out, replacement + i, 1) != 0;
            }
            previous_space = replacement[replacement_length - 1] == ' ';
        }
        input += consumed, length -= consumed;
        if (!model->remove_extra_whitespaces) previous_space = 0;
    }
    if (!failed && model->remove_extra_whitespaces) {
        const char *space = model->escape_whitespaces ? space_symbol : " ";
        size_t space_length = model->escape_whitespaces ? 3 : 1;
        while (out->length - base >= space_length && memcmp(out->data + out->length - space_length, space, space_length) == 0)
            out->length -= space_length;
        if (out->data) out->data[out->length] = 0;
    }
    if (!failed && model->treat_whitespace_as_suffix && model->add_dummy_prefix) failed |= add_whitespace(model, out) != 0;
    if (failed) {
        out->length = base;
        if (out->data) out->data[base] = 0;
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "no memory for the normalised text");
    }
    return UFORM_OK;
}

uform_status_t uform__sp_model_normalize(const uform__sp_model_t *model, const char *text, size_t length,
                                         uform__text_string_t *out, uform_outcome_t *outcome) {
    static const char function[] = "uform__sp_model_normalize";
    if (!model || (length && !text) || !out)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "NULL model, text or output");
    return normalize(model, text, length, out, function, outcome);
}

uform_status_t uform__sp_model_encode(const uform__sp_model_t *model, const char *text, size_t length,
                                      uform__text_ids_t *ids, uform_outcome_t *outcome) {
    static const char function[] = "uform__sp_model_encode";
    if (!model || (length && !text) || !ids)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "NULL model, text or ids");
    uform__text_string_t normalized = {0};
    uform_status_t status = normalize(model, text, length, &normalized, function, outcome);
    if (status == UFORM_OK)
        status = uform__sp_unigram_segment(model->unigram, normalized.data, normalized.length, ids, function, outcome);
    uform__text_string_free(&normalized);
    return status;
}

size_t uform__sp_model_size(const uform__sp_model_t *model) { return model ? model->unigram->size : 0; }

const char *uform__sp_model_id_to_piece(const uform__sp_model_t *model, uint32_t id, size_t *length,
                                        uform__sp_piece_type_t *type) {
    if (!model || id >= model->unigram->size) return NULL;
    if (length) *length = model->unigram->lengths[id];
    if (type) *type = (uform__sp_piece_type_t)model->unigram->kinds[id];
    return model->unigram->pieces[id];
}

uint32_t uform__sp_model_piece_to_id(const uform__sp_model_t *model, const char *piece, size_t length) {
    if (!model) return 0;
    if (!piece) length = 0;
    size_t matched = 0;
    int32_t reserved = length ? uform__sp_trie_longest(&model->reserved, piece, length, &matched) : -1;
    if (reserved >= 0 && matched == length) return (uint32_t)reserved;
    uint32_t id;
    if (uform__sp_unigram_piece_to_id(model->unigram, piece, length, &id)) return id;
    return (uint32_t)model->unigram->unk_id;
}

void uform__sp_model_special_ids(const uform__sp_model_t *model, uform__sp_special_ids_t *ids) {
    if (!ids) return;
    if (model) *ids = model->special;
    else ids->unk = ids->bos = ids->eos = ids->pad = -1;
}

void uform__sp_xlmr_map_ids(uform__text_ids_t *ids, size_t from) {
    /* XLMRobertaTokenizer._convert_token_to_id: spm id + fairseq offset 1, but spm's 0 (<unk>) is 3. */
    for (size_t i = from; i < ids->count; ++i) ids->data[i] = ids->data[i] == 0 ? 3 : ids->data[i] + 1;
}
