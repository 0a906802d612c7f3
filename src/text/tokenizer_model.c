/*
 * The models of tokenizer.json: which one a "model" object is, its vocabulary, and the two simple
 * ones, WordPiece and WordLevel, as `tokenizers` (Rust) runs them. BPE is in tokenizer_bpe.c;
 * Unigram is the SentencePiece engineer's (sentencepiece.h).
 *
 * WordPiece: a word longer than max_input_chars_per_word characters is the unknown token;
 * otherwise the longest vocabulary entry that starts the word is taken, then the longest entry
 * (written with the continuing_subword_prefix, "##") that starts the rest, and so on; when no
 * entry starts some rest, the whole word is the unknown token. The search for the longest entry
 * starts no further than the longest vocabulary entry allows, so a word costs O(length x longest
 * entry) lookups instead of O(length^2).
 */
#include <string.h>

#include "core/outcome.h"
#include "text/sentencepiece.h"
#include "text/tokenizer_internal.h"

uform_status_t uform__text_vocab_parse(const cJSON *json, const char *path, uform__text_vocab_t *vocab,
                                       uform_outcome_t *outcome) {
    if (!cJSON_IsObject(json))
        return uform__fail(outcome, UFORM_FORMAT, uform__text_function,
                           "%s is %s, expected an object of token strings to ids", path, uform__json_kind(json));
    for (const cJSON *entry = json->child; entry; entry = entry->next) {
        uint64_t id;
        double value = cJSON_IsNumber(entry) ? entry->valuedouble : -1.0;
        if (value >= 0.0 && value <= (double)(UINT32_MAX - 1) && value == (double)(uint64_t)value) {
            id = (uint64_t)value; /* the common case, without a path for a message */
        } else {
            char where[UFORM__TEXT_PATH];
            uform__text_path(where, path, entry->string);
            uform_status_t status = uform__text_json_uint_value(entry, where, UINT32_MAX - 1, &id, outcome);
            if (status != UFORM_OK) return status;
        }
        if (uform__text_vocab_put(vocab, entry->string, strlen(entry->string), (uint32_t)id) != 0)
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, uform__text_function, "out of memory reading %s", path);
    }
    if (vocab->count == 0)
        return uform__fail(outcome, UFORM_FORMAT, uform__text_function, "%s is empty: the model has no tokens", path);
    return UFORM_OK;
}

/* Reads an optional string option into a malloc'ed copy (`fallback` when absent or null). */
static uform_status_t string_option(const cJSON *json, const char *key, const char *path, const char *fallback,
                                    char **value, uform_outcome_t *outcome) {
    const char *text;
    uform_status_t status = uform__text_json_string(json, key, path, 0, &text, outcome);
    if (status != UFORM_OK) return status;
    if (uform__text_strdup(text ? text : fallback, value) != 0)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, uform__text_function, "out of memory reading %s", path);
    return UFORM_OK;
}

uform_status_t uform__text_model_parse(const cJSON *json, const char *path, uform__text_model_t *model,
                                       uform_outcome_t *outcome) {
    memset(model, 0, sizeof *model);
    if (!cJSON_IsObject(json))
        return uform__fail(outcome, UFORM_FORMAT, uform__text_function, "%s is %s, expected an object", path,
                           uform__json_kind(json));
    const char *type;
    uform_status_t status = uform__text_json_string(json, "type", path, 0, &type, outcome);
    if (status != UFORM_OK) return status;
    if (!type) {
        /* Files written before models carried a "type": `tokenizers` tells them apart by their fields. */
        const cJSON *vocab = uform__text_json_member(json, "vocab");
        if (uform__text_json_member(json, "merges")) type = "BPE";
        else if (cJSON_IsArray(vocab)) type = "Unigram";
        else if (uform__text_json_member(json, "continuing_subword_prefix") ||
                 uform__text_json_member(json, "max_input_chars_per_word"))
            type = "WordPiece";
        else type = "WordLevel";
    }
    if (strcmp(type, "BPE") == 0) return uform__text_bpe_parse(json, path, model, outcome);
    if (strcmp(type, "Unigram") == 0) {
        uform__sp_unigram_t *unigram = NULL;
        model->kind = UFORM__TEXT_MODEL_UNIGRAM;
        status = uform__sp_unigram_from_json(json, &unigram, outcome);
        model->external = unigram;
        return status;
    }
    char where[UFORM__TEXT_PATH];
    uform__text_path(where, path, "vocab");
    if (strcmp(type, "WordPiece") == 0) {
        uint64_t limit;
        model->kind = UFORM__TEXT_MODEL_WORDPIECE;
        status = uform__text_json_uint(json, "max_input_chars_per_word", path, 0, 100, SIZE_MAX / 2, &limit, outcome);
        model->max_input_chars_per_word = (size_t)limit;
        if (status == UFORM_OK) status = string_option(json, "unk_token", path, "[UNK]", &model->unk_token, outcome);
        if (status == UFORM_OK)
            status = string_option(json, "continuing_subword_prefix", path, "##", &model->prefix, outcome);
    } else if (strcmp(type, "WordLevel") == 0) {
        model->kind = UFORM__TEXT_MODEL_WORDLEVEL;
        status = string_option(json, "unk_token", path, "<unk>", &model->unk_token, outcome);
    } else {
        return uform__fail(outcome, UFORM_UNSUPPORTED, uform__text_function,
                           "%s: model type \"%.64s\" is not supported (WordPiece, BPE, WordLevel, Unigram)", path, type);
    }
    if (status == UFORM_OK) status = uform__text_vocab_parse(uform__text_json_member(json, "vocab"), where,
                                                             &model->vocab, outcome);
    if (status != UFORM_OK) uform__text_model_free(model);
    return status;
}

void uform__text_model_free(uform__text_model_t *model) {
    if (!model) return;
    uform__text_vocab_free(&model->vocab);
    free(model->unk_token);
    free(model->prefix);
    free(model->suffix);
    free(model->merges);
    if (model->kind == UFORM__TEXT_MODEL_UNIGRAM) uform__sp_unigram_free((uform__sp_unigram_t *)model->external);
    memset(model, 0, sizeof *model);
}

static uform_status_t append_unknown(const uform__text_model_t *model, uform__text_ids_t *ids,
                                     uform_outcome_t *outcome) {
    uint32_t id;
    if (!uform__text_vocab_get(&model->vocab, model->unk_token, strlen(model->unk_token), &id))
        return uform__fail(outcome, UFORM_FORMAT, "uform__tokenizer_encode",
                           "the model needs its unknown token \"%.64s\", which is not in its vocabulary",
                           model->unk_token);
    if (uform__text_ids_append(ids, id) != 0)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, "uform__tokenizer_encode", "out of memory appending ids");
    return UFORM_OK;
}

static uform_status_t wordpiece(const uform__text_model_t *model, const char *word, size_t length,
                                uform__text_ids_t *ids, uform__text_scratch_t *scratch, uform_outcome_t *outcome) {
    size_t characters = 0;
    for (size_t at = 0; at < length; ++at) characters += ((unsigned char)word[at] & 0xC0) != 0x80;
    if (characters > model->max_input_chars_per_word) return append_unknown(model, ids, outcome);
    size_t prefix_length = strlen(model->prefix), longest = model->vocab.longest, rollback = ids->count;
    uform__text_string_t *buffer = &scratch->word;
    for (size_t start = 0; start < length;) {
        size_t before = start > 0 ? prefix_length : 0;
        if (before >= longest) { /* no entry is long enough for the prefix and a character */
            ids->count = rollback;
            return append_unknown(model, ids, outcome);
        }
        size_t end = length - start > longest - before ? start + (longest - before) : length;
        while (end > start && end < length && ((unsigned char)word[end] & 0xC0) == 0x80) --end;
        uform__text_string_clear(buffer);
        if (uform__text_string_append(buffer, model->prefix, before) != 0 ||
            uform__text_string_append(buffer, word + start, end - start) != 0)
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, "uform__tokenizer_encode", "out of memory");
        uint32_t id = 0;
        int found = 0;
        while (end > start) {
            if ((found = uform__text_vocab_get(&model->vocab, buffer->data, before + (end - start), &id))) break;
            do --end;
            while (end > start && ((unsigned char)word[end] & 0xC0) == 0x80);
        }
        if (!found) {
            ids->count = rollback;
            return append_unknown(model, ids, outcome);
        }
        if (uform__text_ids_append(ids, id) != 0)
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, "uform__tokenizer_encode", "out of memory appending ids");
        start = end;
    }
    return UFORM_OK;
}

uform_status_t uform__text_model_encode(const uform__text_model_t *model, const char *word, size_t length,
                                        uform__text_ids_t *ids, uform__text_scratch_t *scratch,
                                        uform_outcome_t *outcome) {
    if (length == 0) return UFORM_OK;
    switch (model->kind) {
    case UFORM__TEXT_MODEL_WORDPIECE: return wordpiece(model, word, length, ids, scratch, outcome);
    case UFORM__TEXT_MODEL_BPE: return uform__text_bpe_encode(model, word, length, ids, scratch, outcome);
    case UFORM__TEXT_MODEL_UNIGRAM:
        return uform__sp_unigram_encode((const uform__sp_unigram_t *)model->external, word, length, ids, outcome);
    case UFORM__TEXT_MODEL_WORDLEVEL: {
        uint32_t id;
        if (!uform__text_vocab_get(&model->vocab, word, length, &id)) return append_unknown(model, ids, outcome);
        if (uform__text_ids_append(ids, id) != 0)
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, "uform__tokenizer_encode", "out of memory appending ids");
        return UFORM_OK;
    }
    }
    return UFORM_OK;
}
