/*
 * The tokenizer's contract beyond its ids (which tests/text/compare_tokenizers.mjs checks against
 * the Rust `tokenizers` and transformers.js): the queries (token ids, vocabulary size, kind,
 * special tokens), truncation keeping the special tokens, encoding from several threads at once
 * giving what one thread gives, and the time of pathological words (a BPE word of 10,000
 * characters in milliseconds, not seconds; WordPiece words bounded by the longest entry).
 */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "common/check.h"
#include "text/tokenizer.h"

/* A small WordPiece file in the shape of bert-base-uncased's (ids chosen by hand). */
static const char bert_json[] =
    "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null,"
    " \"added_tokens\": [{\"id\": 0, \"content\": \"[PAD]\", \"special\": true, \"normalized\": false},"
    "  {\"id\": 1, \"content\": \"[UNK]\", \"special\": true, \"normalized\": false},"
    "  {\"id\": 2, \"content\": \"[CLS]\", \"special\": true, \"normalized\": false},"
    "  {\"id\": 3, \"content\": \"[SEP]\", \"special\": true, \"normalized\": false},"
    "  {\"id\": 99, \"content\": \"[NEW]\", \"special\": true, \"normalized\": false}],"
    " \"normalizer\": {\"type\": \"BertNormalizer\", \"clean_text\": true, \"handle_chinese_chars\": true,"
    "  \"strip_accents\": null, \"lowercase\": true},"
    " \"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"},"
    " \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"[CLS]\", "
    "\"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}, {\"SpecialToken\": {\"id\": \"[SEP]\", "
    "\"type_id\": 0}}], \"pair\": [], \"special_tokens\": {\"[CLS]\": {\"id\": \"[CLS]\", \"ids\": [2], \"tokens\": "
    "[\"[CLS]\"]}, \"[SEP]\": {\"id\": \"[SEP]\", \"ids\": [3], \"tokens\": [\"[SEP]\"]}}},"
    " \"decoder\": {\"type\": \"WordPiece\", \"prefix\": \"##\", \"cleanup\": true},"
    " \"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", \"continuing_subword_prefix\": \"##\","
    "  \"max_input_chars_per_word\": 100, \"vocab\": {\"[PAD]\": 0, \"[UNK]\": 1, \"[CLS]\": 2, \"[SEP]\": 3,"
    "  \"hello\": 4, \"world\": 5, \"##s\": 6, \"!\": 7, \"a\": 8, \"##a\": 9, \"cafe\": 10}}}";

static uform__tokenizer_t *load(const char *json) {
    uform_outcome_t outcome;
    memset(&outcome, 0, sizeof outcome);
    uform__tokenizer_t *tokenizer = NULL;
    uform_status_t status = uform__tokenizer_from_json(json, strlen(json), &tokenizer, &outcome);
    CHECK_MSG(status == UFORM_OK, "load: %s", outcome.message);
    return tokenizer;
}

static int encode_equals(const uform__tokenizer_t *tokenizer, const char *text, size_t max_length,
                         const uint32_t *expected, size_t count) {
    uform_outcome_t outcome;
    memset(&outcome, 0, sizeof outcome);
    uform__text_ids_t ids = {0};
    uform_status_t status = uform__tokenizer_encode(tokenizer, text, strlen(text), max_length, &ids, &outcome);
    int same = status == UFORM_OK && ids.count == count && (count == 0 || memcmp(ids.data, expected, count * 4) == 0);
    if (!same) {
        fprintf(stderr, "encode \"%s\" (max_length %zu): status %s %s; got", text, max_length,
                uform_status_name(status), outcome.message);
        for (size_t i = 0; i < ids.count; ++i) fprintf(stderr, " %u", ids.data[i]);
        fprintf(stderr, ", expected");
        for (size_t i = 0; i < count; ++i) fprintf(stderr, " %u", expected[i]);
        fprintf(stderr, "\n");
    }
    uform__text_ids_free(&ids);
    return same;
}

static void queries(void) {
    uform__tokenizer_t *tokenizer = load(bert_json);
    if (!tokenizer) return;
    CHECK(strcmp(uform__tokenizer_kind(tokenizer), "wordpiece") == 0);
    /* [NEW] is not in the model's vocabulary: `tokenizers` gives it the next id after the 11 entries,
     * not the file's 99. */
    uint32_t id = 12345;
    CHECK(uform__tokenizer_token_id(tokenizer, "[NEW]", &id) && id == 11);
    CHECK(uform__tokenizer_token_id(tokenizer, "##s", &id) && id == 6);
    CHECK(!uform__tokenizer_token_id(tokenizer, "missing", &id));
    CHECK_EQ_INT(uform__tokenizer_vocabulary_size(tokenizer), 12);
    size_t before = 9, after = 9;
    uform__tokenizer_specials(tokenizer, &before, &after);
    CHECK_EQ_INT(before, 1);
    CHECK_EQ_INT(after, 1);
    const uint32_t *specials = uform__tokenizer_special_ids(tokenizer);
    CHECK(specials && specials[0] == 2 && specials[1] == 3);

    /* Lowercase, accents stripped, punctuation isolated, ## continuation, unknown word, added token. */
    const uint32_t hello[] = {2, 4, 5, 6, 7, 1, 11, 10, 3};
    CHECK(encode_equals(tokenizer, "Hello WORLDS! xyz[NEW]Café", 0, hello, 9));
    /* Truncation keeps [CLS] and [SEP] and cuts the content from the right, as Python does. */
    const uint32_t cut[] = {2, 4, 5, 3};
    CHECK(encode_equals(tokenizer, "Hello WORLDS! xyz[NEW]Café", 4, cut, 4));
    const uint32_t only_specials[] = {2, 3};
    CHECK(encode_equals(tokenizer, "Hello", 2, only_specials, 2));
    CHECK(encode_equals(tokenizer, "", 0, only_specials, 2));
    /* A limit the sequence fits in changes nothing. */
    CHECK(encode_equals(tokenizer, "Hello WORLDS! xyz[NEW]Café", 9, hello, 9));
    CHECK(encode_equals(tokenizer, "Hello WORLDS! xyz[NEW]Café", 500, hello, 9));
    /* Ill-formed UTF-8 becomes U+FFFD, which BertNormalizer's clean_text removes: "a\xff" is "a". */
    const uint32_t repaired[] = {2, 8, 9, 3};
    CHECK(encode_equals(tokenizer, "a\xff\xc3" "a", 0, repaired, 4));
    uform__tokenizer_free(tokenizer);

    /* The template's string form ("<x> [CLS] $A:0 [SEP]:0", what Python's constructor takes; Rust's
     * deserializer refuses it in a file): read as the list form, for which the Rust tokenizers
     * answers 7 8 2 4 1 3 (checked with the Rust bindings on the same file in the list form). */
    static const char string_template[] =
        "{\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": \"<x> [CLS] $A:0 [SEP]:0\","
        " \"special_tokens\": {\"[CLS]\": {\"id\": \"[CLS]\", \"ids\": [2], \"tokens\": [\"[CLS]\"]},"
        " \"<x>\": {\"id\": \"<x>\", \"ids\": [7, 8], \"tokens\": [\"!\", \"a\"]},"
        " \"[SEP]\": {\"id\": \"[SEP]\", \"ids\": [3], \"tokens\": [\"[SEP]\"]}}},"
        " \"pre_tokenizer\": {\"type\": \"WhitespaceSplit\"},"
        " \"model\": {\"type\": \"WordLevel\", \"unk_token\": \"[UNK]\", \"vocab\": {\"[UNK]\": 1, \"hello\": 4}}}";
    tokenizer = load(string_template);
    if (!tokenizer) return;
    const uint32_t wrapped[] = {7, 8, 2, 4, 1, 3};
    CHECK(encode_equals(tokenizer, "hello there", 0, wrapped, 6));
    uform__tokenizer_specials(tokenizer, &before, &after);
    CHECK(before == 3 && after == 1);
    uform__tokenizer_free(tokenizer);
}

typedef struct worker_t {
    const uform__tokenizer_t *tokenizer;
    const char *const *texts;
    size_t count;
    uform__text_ids_t *results;
    int failures;
} worker_t;

static void *work(void *argument) {
    worker_t *worker = argument;
    uform__text_ids_t ids = {0};
    for (int round = 0; round < 50; ++round)
        for (size_t i = 0; i < worker->count; ++i) {
            uform_outcome_t outcome;
            memset(&outcome, 0, sizeof outcome);
            const char *text = worker->texts[i];
            if (uform__tokenizer_encode(worker->tokenizer, text, strlen(text), 0, &ids, &outcome) != UFORM_OK ||
                ids.count != worker->results[i].count ||
                memcmp(ids.data, worker->results[i].data, ids.count * sizeof(uint32_t)) != 0)
                ++worker->failures;
        }
    uform__text_ids_free(&ids);
    return NULL;
}

/* Four threads encode the same texts as the main thread did before, at the same time. */
static void threads(void) {
    uform__tokenizer_t *tokenizer = load(bert_json);
    if (!tokenizer) return;
    const char *const texts[] = {"Hello world!", "cafés a aaaa [NEW] hello", "xyz \xe4\xb8\xad\xe6\x96\x87 !!",
                                 "HELLO\tWORLD\n[CLS]"};
    enum { count = sizeof texts / sizeof texts[0], thread_count = 4 };
    uform__text_ids_t results[count];
    memset(results, 0, sizeof results);
    for (size_t i = 0; i < count; ++i) {
        uform_outcome_t outcome;
        memset(&outcome, 0, sizeof outcome);
        CHECK_STATUS(uform__tokenizer_encode(tokenizer, texts[i], strlen(texts[i]), 0, &results[i], &outcome), UFORM_OK);
    }
    pthread_t handles[thread_count];
    worker_t workers[thread_count];
    for (int t = 0; t < thread_count; ++t) {
        workers[t] = (worker_t){tokenizer, texts, count, results, 0};
        CHECK_EQ_INT(pthread_create(&handles[t], NULL, work, &workers[t]), 0);
    }
    for (int t = 0; t < thread_count; ++t) {
        pthread_join(handles[t], NULL);
        CHECK_EQ_INT(workers[t].failures, 0);
    }
    for (size_t i = 0; i < count; ++i) uform__text_ids_free(&results[i]);
    uform__tokenizer_free(tokenizer);
}

static double seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

/* A BPE word of 10,000 characters whose merges build "aa", "aaaa", ... up to 512 a's: a rescan
 * per merge would cost ~10^8 steps; the heap does it in milliseconds. */
/* Appends `count` copies of 'a' at `at`, answering the new end. */
static char *put_as(char *at, int count) {
    memset(at, 'a', (size_t)count);
    return at + count;
}

static void long_words(void) {
    /* vocab: "?" 0, "b" 1, then a^1 .. a^512 (powers of two) as ids 2 .. 11; merges a^k a^k in order. */
    char *json = malloc(16384), *at = json;
    at += sprintf(at, "{\"pre_tokenizer\": {\"type\": \"WhitespaceSplit\"}, \"model\": {\"type\": \"BPE\", "
                      "\"unk_token\": \"?\", \"vocab\": {\"?\": 0, \"b\": 1");
    for (int unit = 1, id = 2; unit <= 512; unit *= 2, ++id) {
        at += sprintf(at, ", \"");
        at = put_as(at, unit);
        at += sprintf(at, "\": %d", id);
    }
    at += sprintf(at, "}, \"merges\": [");
    for (int unit = 1; unit < 512; unit *= 2) {
        at += sprintf(at, "%s\"", unit > 1 ? ", " : "");
        at = put_as(at, unit);
        *at++ = ' ';
        at = put_as(at, unit);
        *at++ = '"';
    }
    sprintf(at, "]}}");
    uform__tokenizer_t *tokenizer = load(json);
    free(json);
    if (!tokenizer) return;
    enum { characters = 10000 };
    char *word = malloc(characters + 1);
    memset(word, 'a', characters);
    word[characters] = 0;
    uform_outcome_t outcome;
    memset(&outcome, 0, sizeof outcome);
    uform__text_ids_t ids = {0};
    double start = seconds();
    CHECK_STATUS(uform__tokenizer_encode(tokenizer, word, characters, 0, &ids, &outcome), UFORM_OK);
    double elapsed = seconds() - start;
    /* 10,000 = 19 x 512 + 256 + 16: nineteen 512-a tokens (id 11), then 256 (id 10), then 16 (id 6). */
    CHECK_EQ_INT(ids.count, 21);
    CHECK(ids.count == 21 && ids.data[0] == 11 && ids.data[18] == 11 && ids.data[19] == 10 && ids.data[20] == 6);
    CHECK_MSG(elapsed < 0.25, "a 10,000-character BPE word took %.3f s", elapsed);
    printf("BPE word of %d characters: %.2f ms\n", characters, elapsed * 1e3);
    uform__text_ids_free(&ids);
    uform__tokenizer_free(tokenizer);

    /* WordPiece: a 10,000-character word is the unknown token at once (over 100 characters), and a
     * 100-character word whose pieces are single characters costs 100 x longest-entry lookups. */
    tokenizer = load(bert_json);
    if (!tokenizer) return;
    memset(word, 'a', characters);
    start = seconds();
    CHECK_STATUS(uform__tokenizer_encode(tokenizer, word, characters, 0, &ids, &outcome), UFORM_OK);
    CHECK(ids.count == 3 && ids.data[1] == 1);
    word[100] = 0;
    CHECK_STATUS(uform__tokenizer_encode(tokenizer, word, 100, 0, &ids, &outcome), UFORM_OK);
    CHECK(ids.count == 102 && ids.data[1] == 8 && ids.data[100] == 9);
    elapsed = seconds() - start;
    CHECK_MSG(elapsed < 0.05, "two WordPiece words took %.3f s", elapsed);
    uform__text_ids_free(&ids);
    uform__tokenizer_free(tokenizer);
    free(word);
}

int main(void) {
    queries();
    threads();
    long_words();
    return check_finish();
}
