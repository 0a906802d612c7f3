/*
 * The tokenizer.json pipeline: loading the file's components and encoding one text through them
 * in the order of `tokenizers`' TokenizerImpl::encode_single_sequence followed by post_process
 * (see tokenizer.h for the contract and docs/tokenizers.md for the stages).
 */
#include <string.h>

#include "core/outcome.h"
#include "core/utf8.h"
#include "io/json.h"
#include "text/sentencepiece.h"
#include "text/tokenizer_internal.h"

struct uform__tokenizer_t {
    uform__text_normalizer_t *normalizer;     /* NULL: none */
    uform__text_pretokenizer_t *pretokenizer; /* NULL: none (each piece is one word) */
    uform__text_model_t model;
    uform__text_added_t added;
    uint32_t *specials; /* `before` then `after` ids */
    size_t before, after;
    size_t vocabulary_size;
};

void uform__tokenizer_free(uform__tokenizer_t *tokenizer) {
    if (!tokenizer) return;
    if (tokenizer->normalizer) uform__text_normalizer_free(tokenizer->normalizer);
    free(tokenizer->normalizer);
    if (tokenizer->pretokenizer) uform__text_pretokenizer_free(tokenizer->pretokenizer);
    free(tokenizer->pretokenizer);
    uform__text_model_free(&tokenizer->model);
    uform__text_added_free(&tokenizer->added);
    free(tokenizer->specials);
    free(tokenizer);
}

static int is_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static uform_status_t load(const cJSON *root, uform__tokenizer_t *tokenizer, uform_outcome_t *outcome) {
    if (!cJSON_IsObject(root))
        return uform__fail(outcome, UFORM_FORMAT, uform__text_function, "the file holds %s, expected an object",
                           uform__json_kind(root));
    const cJSON *version = uform__text_json_member(root, "version");
    if (version && !cJSON_IsNull(version)) {
        if (!cJSON_IsString(version))
            return uform__fail(outcome, UFORM_FORMAT, uform__text_function, "version is %s, expected \"1.0\"",
                               uform__json_kind(version));
        if (strcmp(version->valuestring, "1.0") != 0)
            return uform__fail(outcome, UFORM_UNSUPPORTED, uform__text_function,
                               "tokenizer.json version \"%.32s\" is not supported (only \"1.0\" exists)",
                               version->valuestring);
    }
    uform_status_t status;
    const cJSON *normalizer = uform__text_json_member(root, "normalizer");
    if (normalizer && !cJSON_IsNull(normalizer)) {
        tokenizer->normalizer = malloc(sizeof *tokenizer->normalizer);
        if (!tokenizer->normalizer) goto out_of_memory;
        status = uform__text_normalizer_parse(normalizer, "normalizer", tokenizer->normalizer, outcome);
        if (status != UFORM_OK) {
            free(tokenizer->normalizer);
            tokenizer->normalizer = NULL;
            return status;
        }
    }
    const cJSON *pretokenizer = uform__text_json_member(root, "pre_tokenizer");
    if (pretokenizer && !cJSON_IsNull(pretokenizer)) {
        tokenizer->pretokenizer = malloc(sizeof *tokenizer->pretokenizer);
        if (!tokenizer->pretokenizer) goto out_of_memory;
        status = uform__text_pretokenizer_parse(pretokenizer, "pre_tokenizer", tokenizer->pretokenizer, outcome);
        if (status != UFORM_OK) {
            free(tokenizer->pretokenizer);
            tokenizer->pretokenizer = NULL;
            return status;
        }
    }
    const cJSON *model = uform__text_json_member(root, "model");
    if (!model)
        return uform__fail(outcome, UFORM_FORMAT, uform__text_function, "the file has no \"model\"");
    if ((status = uform__text_model_parse(model, "model", &tokenizer->model, outcome)) != UFORM_OK) return status;
    status = uform__text_added_parse(uform__text_json_member(root, "added_tokens"), &tokenizer->model,
                                     tokenizer->normalizer, &tokenizer->added, outcome);
    if (status != UFORM_OK) return status;
    status = uform__text_post_parse(uform__text_json_member(root, "post_processor"), "post_processor",
                                    &tokenizer->specials, &tokenizer->before, &tokenizer->after, outcome);
    if (status != UFORM_OK) return status;

    size_t size = 0;
    if (tokenizer->model.kind == UFORM__TEXT_MODEL_UNIGRAM)
        size = uform__sp_unigram_size((const uform__sp_unigram_t *)tokenizer->model.external);
    else if (tokenizer->model.vocab.count) size = (size_t)tokenizer->model.vocab.largest_id + 1;
    for (size_t i = 0; i < tokenizer->added.count; ++i)
        if ((size_t)tokenizer->added.tokens[i].id + 1 > size) size = (size_t)tokenizer->added.tokens[i].id + 1;
    tokenizer->vocabulary_size = size;
    return UFORM_OK;
out_of_memory:
    return uform__fail(outcome, UFORM_OUT_OF_MEMORY, uform__text_function, "out of memory reading the tokenizer");
}

uform_status_t uform__tokenizer_from_json(const char *json, size_t length, uform__tokenizer_t **tokenizer,
                                          uform_outcome_t *outcome) {
    if (tokenizer) *tokenizer = NULL;
    if (!json || !tokenizer)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, uform__text_function, "json and tokenizer must not be NULL");
    /* JSON is UTF-8 text (RFC 8259), and the stages decode the file's strings as such: the Rust
     * tokenizers refuse such a file too (serde_json checks the encoding). */
    size_t invalid = uform__utf8_invalid_at(json, length);
    if (invalid < length)
        return uform__fail(outcome, UFORM_FORMAT, uform__text_function,
                           "byte %zu of %zu (0x%02x) is not well-formed UTF-8; a tokenizer.json is UTF-8 text", invalid,
                           length, (unsigned char)json[invalid]);
    cJSON *root = NULL;
    const char *end = NULL;
    size_t error_at = 0;
    uform_status_t status = uform__json_parse(json, length, &root, &end, &error_at);
    if (status == UFORM_OUT_OF_MEMORY)
        return uform__fail(outcome, status, uform__text_function, "out of memory parsing %zu bytes of JSON", length);
    if (status != UFORM_OK)
        return uform__fail(outcome, UFORM_FORMAT, uform__text_function, "malformed JSON at byte %zu of %zu", error_at,
                           length);
    for (const char *at = end; at && at < json + length; ++at)
        if (!is_json_space(*at)) {
            cJSON_Delete(root);
            return uform__fail(outcome, UFORM_FORMAT, uform__text_function,
                               "byte %zu after the JSON value is 0x%02x; only whitespace may follow it",
                               (size_t)(at - json), (unsigned char)*at);
        }
    uform__tokenizer_t *made = calloc(1, sizeof *made);
    if (!made) {
        cJSON_Delete(root);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, uform__text_function, "out of memory");
    }
    status = load(root, made, outcome);
    cJSON_Delete(root);
    if (status != UFORM_OK) {
        uform__tokenizer_free(made);
        return status;
    }
    *tokenizer = made;
    return uform__succeed(outcome, uform__text_function);
}

static uform_status_t encode(const uform__tokenizer_t *tokenizer, const char *text, size_t length, size_t max_length,
                             uform__text_ids_t *ids, uform__text_scratch_t *scratch, uform_outcome_t *outcome) {
    static const char function[] = "uform__tokenizer_encode";
    uform__text_string_t input = {0}, normalized = {0};
    uform__text_pieces_t raw = {{0}}, pieces = {{0}}, words = {{0}};
    uform_status_t status = UFORM_OK;
    int failed = 0;
    if (uform__text_utf8_repair(text ? text : "", length, &input) != 0 ||
        uform__text_added_split(&tokenizer->added, 0, input.data, input.length, 1, &raw) != 0) {
        failed = 1;
        goto done;
    }
    /* Normalize each text piece on its own, then split the normalized tokens out of it. */
    for (size_t i = 0; i < raw.count && status == UFORM_OK; ++i) {
        const uform__text_piece_t *piece = &raw.data[i];
        const char *bytes = raw.text.data + piece->offset;
        if (piece->token != UFORM__TEXT_NO_TOKEN) {
            failed = uform__text_pieces_add(&pieces, "", 0, piece->token, piece->first) != 0;
        } else if (tokenizer->normalizer) {
            int first = piece->first;
            uform__text_string_clear(&normalized);
            status = uform__text_normalize(tokenizer->normalizer, bytes, piece->length, &normalized, &first, scratch,
                                           outcome);
            if (status == UFORM_OK)
                failed = uform__text_string_append(&normalized, "", 0) != 0 ||
                         uform__text_added_split(&tokenizer->added, 1, normalized.data, normalized.length, first,
                                                 &pieces) != 0;
        } else {
            failed = uform__text_added_split(&tokenizer->added, 1, bytes, piece->length, piece->first, &pieces) != 0;
        }
        if (failed) goto done;
    }
    if (status != UFORM_OK) goto done;
    const uform__text_pieces_t *final = &pieces;
    if (tokenizer->pretokenizer) {
        status = uform__text_pretokenize(tokenizer->pretokenizer, &pieces, &words, scratch, outcome);
        if (status != UFORM_OK) goto done;
        final = &words;
    }
    for (size_t i = 0; i < tokenizer->before; ++i)
        if (uform__text_ids_append(ids, tokenizer->specials[i]) != 0) {
            failed = 1;
            goto done;
        }
    for (size_t i = 0; i < final->count && status == UFORM_OK; ++i) {
        const uform__text_piece_t *piece = &final->data[i];
        if (piece->token != UFORM__TEXT_NO_TOKEN) {
            if (uform__text_ids_append(ids, piece->token) != 0) failed = 1;
        } else {
            status = uform__text_model_encode(&tokenizer->model, final->text.data + piece->offset, piece->length, ids,
                                              scratch, outcome);
        }
        if (failed) goto done;
        /* Past the limit nothing more is kept, so the rest of the words need no encoding. */
        if (max_length && ids->count >= max_length) break;
    }
    if (status != UFORM_OK) goto done;
    if (max_length && ids->count > max_length - tokenizer->after) ids->count = max_length - tokenizer->after;
    for (size_t i = 0; i < tokenizer->after; ++i)
        if (uform__text_ids_append(ids, tokenizer->specials[tokenizer->before + i]) != 0) {
            failed = 1;
            goto done;
        }
done:
    uform__text_string_free(&input);
    uform__text_string_free(&normalized);
    uform__text_pieces_free(&raw);
    uform__text_pieces_free(&pieces);
    uform__text_pieces_free(&words);
    if (failed) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "out of memory encoding %zu bytes", length);
    return status;
}

uform_status_t uform__tokenizer_encode(const uform__tokenizer_t *tokenizer, const char *text, size_t length,
                                       size_t max_length, uform__text_ids_t *ids, uform_outcome_t *outcome) {
    static const char function[] = "uform__tokenizer_encode";
    if (!tokenizer || !ids || (!text && length))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "tokenizer, text and ids must not be NULL");
    ids->count = 0;
    if (max_length && max_length < tokenizer->before + tokenizer->after)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "max_length %zu is below the %zu special tokens the post-processor adds", max_length,
                           tokenizer->before + tokenizer->after);
    uform__text_scratch_t scratch = {0};
    uform_status_t status = encode(tokenizer, text, length, max_length, ids, &scratch, outcome);
    uform__text_scratch_free(&scratch);
    if (status != UFORM_OK) {
        ids->count = 0;
        return status;
    }
    return uform__succeed(outcome, function);
}

int uform__tokenizer_token_id(const uform__tokenizer_t *tokenizer, const char *token, uint32_t *id) {
    if (!tokenizer || !token || !id) return 0;
    size_t length = strlen(token);
    if (uform__text_vocab_get(&tokenizer->added.by_content, token, length, id)) return 1;
    if (tokenizer->model.kind == UFORM__TEXT_MODEL_UNIGRAM)
        return uform__sp_unigram_piece_to_id((const uform__sp_unigram_t *)tokenizer->model.external, token, length,
                                             id);
    return uform__text_vocab_get(&tokenizer->model.vocab, token, length, id);
}

size_t uform__tokenizer_vocabulary_size(const uform__tokenizer_t *tokenizer) {
    return tokenizer ? tokenizer->vocabulary_size : 0;
}

const char *uform__tokenizer_kind(const uform__tokenizer_t *tokenizer) {
    if (!tokenizer) return "";
    switch (tokenizer->model.kind) {
    case UFORM__TEXT_MODEL_WORDPIECE: return "wordpiece";
    case UFORM__TEXT_MODEL_BPE: return "bpe";
    case UFORM__TEXT_MODEL_WORDLEVEL: return "wordlevel";
    case UFORM__TEXT_MODEL_UNIGRAM: return "unigram";
    }
    return "";
}

void uform__tokenizer_specials(const uform__tokenizer_t *tokenizer, size_t *before, size_t *after) {
    if (before) *before = tokenizer ? tokenizer->before : 0;
    if (after) *after = tokenizer ? tokenizer->after : 0;
}

const uint32_t *uform__tokenizer_special_ids(const uform__tokenizer_t *tokenizer) {
    return tokenizer ? tokenizer->specials : NULL;
}
