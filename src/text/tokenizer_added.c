/*
 * Added tokens ("added_tokens" of tokenizer.json): read and given ids as `tokenizers`' Tokenizer
 * deserializer does (AddedVocabulary::add_tokens: a content already in the model's vocabulary
 * takes that id, any other the next id from the vocabulary's size on; an empty content is
 * ignored), and split out of a text as AddedVocabulary::find_matches does: leftmost-longest,
 * non-overlapping matches; a single_word token only where no word character touches it (the regex
 * crate's \w); lstrip/rstrip widening the match over the whitespace beside it (never back over
 * an earlier match). Tokens with normalized=false are matched in the raw text, the others in the
 * normalized text against their own normalized content.
 *
 * Matching: at each position whose byte can start a token, the token lengths are tried longest
 * first in a hash table of the contents. Added tokens are few and short, so this costs a few
 * lookups at the rare positions that start with '<' or '[', and nothing elsewhere.
 */
#include <string.h>

#include "core/outcome.h"
#include "text/sentencepiece.h"
#include "text/tokenizer_internal.h"

static int set_add(uform__text_added_set_t *set, const char *pattern, size_t length, uint32_t index) {
    if (length == 0) return 0;
    if (uform__text_vocab_put(&set->strings, pattern, length, index) != 0) return -1;
    set->first_bytes[(unsigned char)pattern[0] >> 3] |= (uint8_t)(1u << ((unsigned char)pattern[0] & 7));
    for (size_t i = 0; i < set->length_count; ++i)
        if (set->lengths[i] == length) return 0;
    size_t *grown = realloc(set->lengths, (set->length_count + 1) * sizeof *grown);
    if (!grown) return -1;
    set->lengths = grown;
    size_t at = set->length_count++;
    while (at > 0 && set->lengths[at - 1] < length) set->lengths[at] = set->lengths[at - 1], --at;
    set->lengths[at] = length;
    return 0;
}

static void set_free(uform__text_added_set_t *set) {
    uform__text_vocab_free(&set->strings);
    free(set->lengths);
    memset(set, 0, sizeof *set);
}

void uform__text_added_free(uform__text_added_t *added) {
    for (size_t i = 0; i < added->count; ++i) {
        free(added->tokens[i].content);
        free(added->tokens[i].normalized);
    }
    free(added->tokens);
    uform__text_vocab_free(&added->by_content);
    set_free(&added->raw);
    set_free(&added->normalized);
    memset(added, 0, sizeof *added);
}

static int model_token_id(const uform__text_model_t *model, const char *token, size_t length, uint32_t *id) {
    if (model->kind == UFORM__TEXT_MODEL_UNIGRAM)
        return uform__sp_unigram_piece_to_id((const uform__sp_unigram_t *)model->external, token, length, id);
    return uform__text_vocab_get(&model->vocab, token, length, id);
}

static size_t model_size(const uform__text_model_t *model) {
    if (model->kind == UFORM__TEXT_MODEL_UNIGRAM)
        return uform__sp_unigram_size((const uform__sp_unigram_t *)model->external);
    return model->vocab.count;
}

uform_status_t uform__text_added_parse(const cJSON *json, const uform__text_model_t *model,
                                       const uform__text_normalizer_t *normalizer, uform__text_added_t *added,
                                       uform_outcome_t *outcome) {
    memset(added, 0, sizeof *added);
    if (!json || cJSON_IsNull(json)) return UFORM_OK;
    if (!cJSON_IsArray(json))
        return uform__fail(outcome, UFORM_FORMAT, uform__text_function, "added_tokens is %s, expected an array",
                           uform__json_kind(json));
    size_t count = (size_t)cJSON_GetArraySize(json);
    added->tokens = calloc(count ? count : 1, sizeof *added->tokens);
    if (!added->tokens) goto out_of_memory;
    uint32_t next_id = (uint32_t)model_size(model);
    size_t index = 0;
    uform__text_scratch_t scratch = {0};
    uform__text_string_t normalized = {0};
    uform_status_t status = UFORM_OK;
    for (const cJSON *entry = json->child; entry; entry = entry->next, ++index) {
        char path[UFORM__TEXT_PATH];
        uform__text_path_index(path, "added_tokens", index);
        if (!cJSON_IsObject(entry)) {
            status = uform__fail(outcome, UFORM_FORMAT, uform__text_function, "%s is %s, expected an object", path,
                                 uform__json_kind(entry));
            break;
        }
        const char *content;
        int special, single_word, lstrip, rstrip, is_normalized;
        uint64_t file_id;
        if ((status = uform__text_json_string(entry, "content", path, 1, &content, outcome)) != UFORM_OK ||
            (status = uform__text_json_uint(entry, "id", path, 1, 0, UINT32_MAX - 1, &file_id, outcome)) != UFORM_OK ||
            (status = uform__text_json_bool(entry, "special", path, 0, &special, outcome)) != UFORM_OK ||
            (status = uform__text_json_bool(entry, "single_word", path, 0, &single_word, outcome)) != UFORM_OK ||
            (status = uform__text_json_bool(entry, "lstrip", path, 0, &lstrip, outcome)) != UFORM_OK ||
            (status = uform__text_json_bool(entry, "rstrip", path, 0, &rstrip, outcome)) != UFORM_OK ||
            (status = uform__text_json_bool(entry, "normalized", path, !special, &is_normalized, outcome)) !=
                UFORM_OK)
            break;
        size_t length = strlen(content);
        if (length == 0) continue;
        uint32_t id;
        /* The id: an earlier added token with this content, the model's token, or the next free id
         * (the file's "id" is only a hint `tokenizers` warns about; it normally agrees). */
        if (!uform__text_vocab_get(&added->by_content, content, length, &id) &&
            !model_token_id(model, content, length, &id))
            id = next_id++;
        uform__text_added_token_t *token = NULL;
        for (size_t i = 0; i < added->count; ++i)
            if (added->tokens[i].id == id) token = &added->tokens[i]; /* a later token replaces it */
        if (!token) token = &added->tokens[added->count++];
        free(token->content);
        free(token->normalized);
        memset(token, 0, sizeof *token);
        token->id = id, token->length = length;
        token->special = (uint8_t)special, token->single_word = (uint8_t)single_word;
        token->lstrip = (uint8_t)lstrip, token->rstrip = (uint8_t)rstrip, token->is_normalized = (uint8_t)is_normalized;
        if (uform__text_strdup(content, &token->content) != 0 ||
            uform__text_vocab_put(&added->by_content, content, length, id) != 0) {
            status = UFORM_OUT_OF_MEMORY;
            break;
        }
        if (is_normalized && normalizer) {
            uform__text_string_clear(&normalized);
            if ((status = uform__text_normalize(normalizer, content, length, &normalized, NULL, &scratch, outcome)) !=
                UFORM_OK)
                break;
            token->normalized = malloc(normalized.length + 1);
            if (!token->normalized) {
                status = UFORM_OUT_OF_MEMORY;
                break;
            }
            if (normalized.length) memcpy(token->normalized, normalized.data, normalized.length);
            token->normalized[normalized.length] = 0;
            token->normalized_length = normalized.length;
        }
    }
    uform__text_scratch_free(&scratch);
    uform__text_string_free(&normalized);
    if (status == UFORM_OUT_OF_MEMORY) goto out_of_memory;
    if (status != UFORM_OK) {
        uform__text_added_free(added);
        return status;
    }
    for (size_t i = 0; i < added->count; ++i) {
        const uform__text_added_token_t *token = &added->tokens[i];
        int failed = token->is_normalized
                         ? set_add(&added->normalized, token->normalized ? token->normalized : token->content,
                                   token->normalized ? token->normalized_length : token->length, (uint32_t)i)
                         : set_add(&added->raw, token->content, token->length, (uint32_t)i);
        if (failed) goto out_of_memory;
    }
    return UFORM_OK;
out_of_memory:
    uform__text_added_free(added);
    return uform__fail(outcome, UFORM_OUT_OF_MEMORY, uform__text_function, "out of memory reading added_tokens");
}

/* The code point that ends before `end`, decoded backwards. */
static uint32_t previous_char(const char *text, size_t end, size_t *start) {
    size_t at = end - 1;
    while (at > 0 && ((unsigned char)text[at] & 0xC0) == 0x80) --at;
    *start = at;
    size_t cursor = at;
    return uform__text_utf8_next(text, &cursor);
}

/* The longest token of `set` starting at `at`: 1 with its index and length, or 0. */
static int match_at(const uform__text_added_set_t *set, const char *text, size_t length, size_t at, uint32_t *index,
                    size_t *match_length) {
    unsigned char byte = (unsigned char)text[at];
    if (!(set->first_bytes[byte >> 3] & (1u << (byte & 7)))) return 0;
    for (size_t i = 0; i < set->length_count; ++i) {
        size_t candidate = set->lengths[i];
        if (candidate > length - at) continue;
        if (uform__text_vocab_get(&set->strings, text + at, candidate, index)) {
            *match_length = candidate;
            return 1;
        }
    }
    return 0;
}

int uform__text_added_split(const uform__text_added_t *added, int normalized, const char *text, size_t length,
                            int first, uform__text_pieces_t *out) {
    const uform__text_added_set_t *set = normalized ? &added->normalized : &added->raw;
    size_t start_offset = 0;
    if (set->length_count > 0) {
        for (size_t at = 0; at < length;) {
            uint32_t index;
            size_t match_length;
            if (!match_at(set, text, length, at, &index, &match_length)) {
                ++at;
                continue;
            }
            const uform__text_added_token_t *token = &added->tokens[index];
            size_t start = at, stop = at + match_length, cursor;
            at = stop;
            if (token->single_word) {
                int word_before = start > 0 && uform__text_is_word(previous_char(text, start, &cursor));
                cursor = stop;
                int word_after = stop < length && uform__text_is_word(uform__text_utf8_next(text, &cursor));
                if (word_before || word_after) continue;
            }
            if (token->lstrip) {
                size_t new_start = start;
                while (new_start > 0) {
                    size_t previous;
                    if (!uform__text_is_whitespace(previous_char(text, new_start, &previous))) break;
                    new_start = previous;
                }
                start = new_start > start_offset ? new_start : start_offset;
            }
            if (token->rstrip)
                for (cursor = stop; cursor < length;) {
                    size_t next = cursor;
                    if (!uform__text_is_whitespace(uform__text_utf8_next(text, &next))) break;
                    stop = cursor = next;
                }
            if (start_offset < start &&
                uform__text_pieces_add(out, text + start_offset, start - start_offset, UFORM__TEXT_NO_TOKEN,
                                       first && start_offset == 0) != 0)
                return -1;
            if (uform__text_pieces_add(out, "", 0, token->id, first && start == 0) != 0) return -1;
            start_offset = stop;
        }
    }
    if (start_offset < length &&
        uform__text_pieces_add(out, text + start_offset, length - start_offset, UFORM__TEXT_NO_TOKEN,
                               first && start_offset == 0) != 0)
        return -1;
    return 0;
}
