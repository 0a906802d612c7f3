/*
 * The engine's side of the SentencePiece parity tests: reads a JSON array of strings and prints, as
 * one JSON array, what src/text/sentencepiece.h makes of each. The references (python3-sentencepiece,
 * the `tokenizers` npm package) run in sp_parity.py and sp_tokenizers_parity.mjs.
 *
 *   sp_tool model FILE.model STRINGS.json [--no-dummy-prefix] [--xlmr] [--normalize]
 *       ids of uform__sp_model_encode (fairseq ids with --xlmr; the normalised text with --normalize)
 *   sp_tool siglip FILE.model STRINGS.json [--max-length N] [--no-pad] [--no-truncate] [--no-lowercase]
 *       ids of uform__sp_siglip_encode (the model opened with add_dummy_prefix off)
 *   sp_tool json TOKENIZER.json STRINGS.json
 *       ids of the converted pipeline: Precompiled, then (test-side) Strip(right) and Replace(" {2,}",
 *       "▁") as SpmConverter writes them, then Metaspace and Unigram per word; no added tokens
 *   sp_tool precompiled TOKENIZER.json STRINGS.json
 *       the Precompiled normalizer's output alone
 * A failure prints the status and message instead of that string's result: {"error": "..."}.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "io/json.h"
#include "text/sentencepiece.h"

static char *read_file(const char *path, size_t *size) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    fseek(file, 0, SEEK_END);
    long length = ftell(file);
    fseek(file, 0, SEEK_SET);
    char *bytes = malloc((size_t)length + 1);
    if (bytes && fread(bytes, 1, (size_t)length, file) != (size_t)length) free(bytes), bytes = NULL;
    fclose(file);
    if (bytes) bytes[length] = 0, *size = (size_t)length;
    return bytes;
}

static cJSON *read_json(const char *path) {
    size_t size;
    char *text = read_file(path, &size);
    if (!text) return NULL;
    cJSON *root = NULL;
    if (uform__json_parse(text, size, &root, NULL, NULL) != UFORM_OK) root = NULL;
    free(text);
    return root;
}

static cJSON *error_item(const uform_outcome_t *outcome, uform_status_t status) {
    char text[600];
    snprintf(text, sizeof text, "%s: %s", uform_status_name(status), outcome->message);
    cJSON *item = cJSON_CreateObject();
    cJSON_AddStringToObject(item, "error", text);
    return item;
}

static cJSON *ids_item(const uform__text_ids_t *ids) {
    cJSON *array = cJSON_CreateArray();
    for (size_t i = 0; i < ids->count; ++i) cJSON_AddItemToArray(array, cJSON_CreateNumber(ids->data[i]));
    return array;
}

/* Finds the normalizer of `type` in a tokenizer.json's normalizer (itself or inside a Sequence). */
static const cJSON *find_normalizer(const cJSON *normalizer, const char *type) {
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(normalizer, "type");
    if (cJSON_IsString(kind) && strcmp(kind->valuestring, type) == 0) return normalizer;
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(normalizer, "normalizers");
    for (const cJSON *item = list ? list->child : NULL; item; item = item->next)
        if (find_normalizer(item, type)) return item;
    return NULL;
}

/* The test-side Strip(right) and Replace(" {2,}", "▁") of SpmConverter's normalizer sequence. */
static void strip_and_replace(uform__text_string_t *text) {
    /* Rust's trim_end: Unicode White_Space. The test strings' trailing whitespace stays in ASCII,
     * U+0085, U+00A0, U+3000 and U+2000-U+200A, which is handled here. */
    for (;;) {
        size_t n = text->length;
        const unsigned char *s = (const unsigned char *)text->data;
        if (n >= 1 && (s[n - 1] == ' ' || (s[n - 1] >= 0x09 && s[n - 1] <= 0x0D))) text->length -= 1;
        else if (n >= 2 && s[n - 2] == 0xC2 && (s[n - 1] == 0x85 || s[n - 1] == 0xA0)) text->length -= 2;
        else if (n >= 3 && s[n - 3] == 0xE3 && s[n - 2] == 0x80 && s[n - 1] == 0x80) text->length -= 3;
        else if (n >= 3 && s[n - 3] == 0xE2 && s[n - 2] == 0x80 && (s[n - 1] <= 0x8A || s[n - 1] == 0xA8 || s[n - 1] == 0xA9 || s[n - 1] == 0xAF)) text->length -= 3;
        else if (n >= 3 && s[n - 3] == 0xE2 && s[n - 2] == 0x81 && s[n - 1] == 0x9F) text->length -= 3;
        else if (n >= 3 && s[n - 3] == 0xE1 && s[n - 2] == 0x9A && s[n - 1] == 0x80) text->length -= 3;
        else break;
    }
    uform__text_string_t out = {0};
    for (size_t at = 0; at < text->length;) {
        size_t run = at;
        while (run < text->length && text->data[run] == ' ') ++run;
        if (run - at >= 2) uform__text_string_append(&out, "\xE2\x96\x81", 3), at = run;
        else if (run > at) uform__text_string_append(&out, " ", 1), at = run;
        else uform__text_string_append(&out, text->data + at, 1), ++at;
    }
    uform__text_string_clear(text);
    uform__text_string_append(text, out.data ? out.data : "", out.length);
    uform__text_string_free(&out);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: sp_tool model|siglip|json|precompiled FILE STRINGS.json [options]\n");
        return 2;
    }
    const char *mode = argv[1], *path = argv[2];
    cJSON *strings = read_json(argv[3]);
    if (!cJSON_IsArray(strings)) {
        fprintf(stderr, "cannot read a JSON array of strings from %s\n", argv[3]);
        return 2;
    }
    int no_dummy = 0, xlmr = 0, normalize = 0, pad = 1, truncate = 1, lowercase = 1;
    size_t max_length = 64;
    for (int i = 4; i < argc; ++i) {
        if (strcmp(argv[i], "--no-dummy-prefix") == 0) no_dummy = 1;
        else if (strcmp(argv[i], "--xlmr") == 0) xlmr = 1;
        else if (strcmp(argv[i], "--normalize") == 0) normalize = 1;
        else if (strcmp(argv[i], "--no-pad") == 0) pad = 0;
        else if (strcmp(argv[i], "--no-truncate") == 0) truncate = 0;
        else if (strcmp(argv[i], "--no-lowercase") == 0) lowercase = 0;
        else if (strcmp(argv[i], "--max-length") == 0 && i + 1 < argc) max_length = (size_t)atol(argv[++i]);
    }
    uform_outcome_t outcome = {0};
    uform__sp_model_t *model = NULL;
    uform__sp_unigram_t *unigram = NULL;
    uform__sp_precompiled_t *precompiled = NULL;
    uform__sp_metaspace_t metaspace;
    cJSON *tokenizer = NULL;
    uform_status_t status = UFORM_OK;
    if (strcmp(mode, "model") == 0 || strcmp(mode, "siglip") == 0) {
        uform__sp_model_options_t options = {0};
        if (no_dummy || strcmp(mode, "siglip") == 0) options.add_dummy_prefix = -1;
        status = uform__sp_model_open(path, &options, &model, &outcome);
    } else {
        tokenizer = read_json(path);
        if (!tokenizer) {
            fprintf(stderr, "cannot read %s\n", path);
            return 2;
        }
        const cJSON *normalizer = cJSON_GetObjectItemCaseSensitive(tokenizer, "normalizer");
        const cJSON *entry = normalizer ? find_normalizer(normalizer, "Precompiled") : NULL;
        if (entry) status = uform__sp_precompiled_from_json(entry, &precompiled, &outcome);
        if (status == UFORM_OK)
            status = uform__sp_metaspace_from_json(cJSON_GetObjectItemCaseSensitive(tokenizer, "pre_tokenizer"),
                                                   &metaspace, &outcome);
        if (status == UFORM_OK)
            status = uform__sp_unigram_from_json(cJSON_GetObjectItemCaseSensitive(tokenizer, "model"), &unigram, &outcome);
    }
    if (status != UFORM_OK) {
        fprintf(stderr, "loading %s: %s: %s\n", path, uform_status_name(status), outcome.message);
        return 1;
    }
    cJSON *results = cJSON_CreateArray();
    for (const cJSON *item = strings->child; item; item = item->next) {
        const char *text = cJSON_IsString(item) ? item->valuestring : "";
        size_t length = strlen(text);
        uform__text_ids_t ids = {0};
        uform__text_string_t string = {0}, words_text = {0};
        uform__sp_spans_t words = {0};
        cJSON *result = NULL;
        if (strcmp(mode, "model") == 0 && normalize) {
            status = uform__sp_model_normalize(model, text, length, &string, &outcome);
            if (status == UFORM_OK) result = cJSON_CreateString(string.data ? string.data : "");
        } else if (strcmp(mode, "model") == 0) {
            status = uform__sp_model_encode(model, text, length, &ids, &outcome);
            if (status == UFORM_OK && xlmr) uform__sp_xlmr_map_ids(&ids, 0);
        } else if (strcmp(mode, "siglip") == 0) {
            uform__sp_siglip_options_t options = {max_length, pad, truncate, lowercase};
            status = uform__sp_siglip_encode(model, text, length, &options, &ids, &outcome);
        } else if (strcmp(mode, "precompiled") == 0) {
            status = precompiled ? uform__sp_precompiled_normalize(precompiled, text, length, &string, &outcome)
                                 : (uform__text_string_append(&string, text, length), UFORM_OK);
            if (status == UFORM_OK) result = cJSON_CreateString(string.data ? string.data : "");
        } else {
            status = precompiled ? uform__sp_precompiled_normalize(precompiled, text, length, &string, &outcome)
                                 : (uform__text_string_append(&string, text, length), UFORM_OK);
            if (status == UFORM_OK) {
                strip_and_replace(&string);
                status = uform__sp_metaspace_apply(&metaspace, string.data ? string.data : "", string.length, 1,
                                                   &words_text, &words, &outcome);
            }
            for (size_t w = 0; status == UFORM_OK && w < words.count; ++w)
                status = uform__sp_unigram_encode(unigram, words_text.data + words.data[w].start,
                                                  words.data[w].end - words.data[w].start, &ids, &outcome);
        }
        if (status != UFORM_OK) result = error_item(&outcome, status);
        else if (!result) result = ids_item(&ids);
        cJSON_AddItemToArray(results, result);
        uform__text_ids_free(&ids);
        uform__text_string_free(&string);
        uform__text_string_free(&words_text);
        uform__sp_spans_free(&words);
    }
    char *printed = cJSON_PrintUnformatted(results);
    fputs(printed, stdout);
    fputc('\n', stdout);
    free(printed);
    cJSON_Delete(results);
    cJSON_Delete(strings);
    cJSON_Delete(tokenizer);
    uform__sp_model_free(model);
    uform__sp_unigram_free(unigram);
    uform__sp_precompiled_free(precompiled);
    return 0;
}
