/*
 * The SentencePiece readers on hand-built and broken inputs: a nine-piece .model encodes to ids
 * worked out by hand (tests/text/sp_sample.h); every truncation of it, bad varints, lengths past
 * the end, groups, unknown piece types, duplicate or missing unk pieces, byte pieces without
 * byte_fallback, BPE models, and charsmaps whose trie or offsets point outside are refused with
 * UFORM_FORMAT (UFORM_UNSUPPORTED for BPE) and a message, never a crash; tokenizer.json entries
 * with wrong types, base64 garbage and contradictory Metaspace options likewise; Metaspace's
 * splitting against tokenizers' documented examples.
 */
#include <stdio.h>
#include <string.h>

#include "common/check.h"
#include "io/json.h"
#include "text/sentencepiece.h"
#include "text/sp_sample.h"

static uform_status_t load(const sp_buffer_t *bytes, uform_outcome_t *outcome) {
    uform__sp_model_t *model = NULL;
    uform_status_t status = uform__sp_model_from_bytes(bytes->data, bytes->size, NULL, &model, outcome);
    uform__sp_model_free(model);
    return status;
}

static void check_ids(const uform__sp_model_t *model, const char *text, const uint32_t *expected, size_t count) {
    uform__text_ids_t ids = {0};
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__sp_model_encode(model, text, strlen(text), &ids, &outcome), UFORM_OK);
    int same = ids.count == count && (count == 0 || memcmp(ids.data, expected, count * sizeof *expected) == 0);
    CHECK_MSG(same, "\"%s\": %zu ids (first %u), expected %zu (first %u)", text, ids.count, ids.count ? ids.data[0] : 0,
              count, count ? expected[0] : 0);
    uform__text_ids_free(&ids);
}

static void test_sample_model(void) {
    sp_buffer_t bytes = sp_sample_model();
    uform__sp_model_t *model = NULL;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__sp_model_from_bytes(bytes.data, bytes.size, NULL, &model, &outcome), UFORM_OK);
    if (!model) return;
    /* "▁ab": ▁ + ab = -2 beats ▁a + b = -3.5. */
    check_ids(model, "ab", (const uint32_t[]){3, 7}, 2);
    /* The charsmap maps A to a; B has no piece: unk at min score -4 - 10; ▁a + unk = -15.5. */
    check_ids(model, "AB", (const uint32_t[]){6, 0}, 2);
    /* Extra whitespace removed: "▁a▁b" = ▁a + ▁ + b (-4.5). */
    check_ids(model, "  a    b  ", (const uint32_t[]){6, 3, 5}, 3);
    /* A tab is no space to sentencepiece (only the charsmap could make it one): "▁a▁\t▁b". */
    check_ids(model, "a \t  b", (const uint32_t[]){6, 3, 0, 3, 5}, 5);
    /* Two unknown characters merge into one unk id. */
    check_ids(model, "xy", (const uint32_t[]){3, 0}, 2);
    check_ids(model, "   ", NULL, 0);
    uform__sp_special_ids_t special;
    uform__sp_model_special_ids(model, &special);
    CHECK_EQ_INT(special.unk, 0);
    CHECK_EQ_INT(special.bos, 1);
    CHECK_EQ_INT(special.eos, 2);
    CHECK_EQ_INT(special.pad, -1);
    CHECK_EQ_INT(uform__sp_model_piece_to_id(model, "</s>", 4), 2);
    CHECK_EQ_INT(uform__sp_model_piece_to_id(model, "zz", 2), 0);
    uform__sp_model_free(model);

    /* Every truncation: a clean refusal or, at a field boundary, a smaller valid message. */
    size_t refused = 0;
    for (size_t size = 0; size < bytes.size; ++size) {
        sp_buffer_t cut = {bytes.data, size, size};
        uform_status_t status = load(&cut, &outcome);
        CHECK(status == UFORM_OK || status == UFORM_FORMAT || status == UFORM_UNSUPPORTED);
        refused += status == UFORM_FORMAT;
    }
    CHECK(refused > bytes.size / 2);
    free(bytes.data);
}

static void expect_refusal(const char *label, const sp_buffer_t *bytes, uform_status_t expected, const char *words) {
    uform_outcome_t outcome = {0};
    uform_status_t status = load(bytes, &outcome);
    CHECK_MSG(status == expected, "%s: status %s (%s)", label, uform_status_name(status), outcome.message);
    CHECK_CONTAINS(outcome.message, words);
}

static void test_broken_models(void) {
    sp_buffer_t b = {0};
    unsigned char long_varint[] = {0x8A, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    sp_put(&b, long_varint, sizeof long_varint);
    expect_refusal("eleven-byte varint", &b, UFORM_FORMAT, "overflows 64 bits");
    free(b.data), b = (sp_buffer_t){0};

    sp_key(&b, 1, 2);
    sp_varint(&b, 1000);
    sp_put(&b, "abc", 3);
    expect_refusal("length past the end", &b, UFORM_FORMAT, "claims 1000 bytes");
    free(b.data), b = (sp_buffer_t){0};

    sp_key(&b, 7, 3);
    expect_refusal("group", &b, UFORM_FORMAT, "wire type 3");
    free(b.data), b = (sp_buffer_t){0};

    sp_key(&b, 1, 0);
    sp_varint(&b, 5);
    expect_refusal("pieces as a varint", &b, UFORM_FORMAT, "wire type 0, expected 2");
    free(b.data), b = (sp_buffer_t){0};

    sp_piece(&b, "<unk>", 0, 2);
    sp_piece(&b, "x", -1, 9);
    expect_refusal("piece type 9", &b, UFORM_FORMAT, "not a piece type");
    free(b.data), b = (sp_buffer_t){0};

    sp_piece(&b, "<unk>", 0, 2);
    sp_piece(&b, "x", -1, 1);
    sp_piece(&b, "x", -2, 1);
    expect_refusal("duplicate piece", &b, UFORM_FORMAT, "already defined");
    free(b.data), b = (sp_buffer_t){0};

    sp_piece(&b, "x", -1, 1);
    expect_refusal("no unk", &b, UFORM_FORMAT, "UNKNOWN");
    free(b.data), b = (sp_buffer_t){0};

    sp_piece(&b, "<unk>", 0, 2);
    sp_piece(&b, "<unk2>", 0, 2);
    expect_refusal("two unks", &b, UFORM_FORMAT, "both of type UNKNOWN");
    free(b.data), b = (sp_buffer_t){0};

    sp_piece(&b, "<unk>", 0, 2);
    sp_piece(&b, "<0x41>", 0, 6);
    expect_refusal("byte piece without byte_fallback", &b, UFORM_FORMAT, "byte_fallback is false");
    free(b.data), b = (sp_buffer_t){0};

    sp_buffer_t trainer = {0};
    sp_field_varint(&trainer, 35, 1);
    sp_piece(&b, "<unk>", 0, 2);
    sp_piece(&b, "<0x41>", 0, 6);
    sp_field_bytes(&b, 2, trainer.data, trainer.size);
    expect_refusal("byte_fallback with one byte piece", &b, UFORM_FORMAT, "256 are needed");
    free(b.data), free(trainer.data), b = (sp_buffer_t){0};

    sp_piece(&b, "<unk>", 0, 2);
    sp_piece(&b, "", -1, 1);
    expect_refusal("empty piece", &b, UFORM_FORMAT, "empty piece");
    free(b.data), b = (sp_buffer_t){0};

    b = sp_sample_model_with(2, 1);
    expect_refusal("BPE model", &b, UFORM_UNSUPPORTED, "BPE");
    free(b.data);
    b = sp_sample_model_with(1, 0);
    expect_refusal("no charsmap: identity", &b, UFORM_OK, "");
    free(b.data);
}

static void expect_charsmap(const char *label, const sp_buffer_t *bytes, uform_status_t expected, const char *words) {
    uform__sp_precompiled_t *precompiled = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform__sp_precompiled_from_bytes(bytes->data, bytes->size, &precompiled, &outcome);
    CHECK_MSG(status == expected, "%s: status %s (%s)", label, uform_status_name(status), outcome.message);
    if (words) CHECK_CONTAINS(outcome.message, words);
    if (precompiled) {
        uform__text_string_t out = {0};
        CHECK_STATUS(uform__sp_precompiled_normalize(precompiled, "AbA", 3, &out, &outcome), UFORM_OK);
        CHECK(out.data && strcmp(out.data, "aba") == 0);
        uform__text_string_free(&out);
        CHECK_STATUS(uform__sp_precompiled_normalize(precompiled, "A\xFF", 2, &out, &outcome), UFORM_FORMAT);
        CHECK_CONTAINS(outcome.message, "byte 1");
        uform__text_string_free(&out);
    }
    uform__sp_precompiled_free(precompiled);
}

static void test_broken_charsmaps(void) {
    sp_buffer_t good = sp_sample_charsmap();
    expect_charsmap("the sample", &good, UFORM_OK, NULL);
    sp_buffer_t cut = {good.data, good.size - 1, good.size};
    expect_charsmap("blob without its NUL", &cut, UFORM_FORMAT, "does not end with a NUL");
    cut.size = 100;
    expect_charsmap("trie past the end", &cut, UFORM_FORMAT, "runs past");
    cut.size = 3;
    expect_charsmap("three bytes", &cut, UFORM_FORMAT, "shorter than");
    good.data[0] = 7;
    expect_charsmap("trie size not a multiple of 4", &good, UFORM_FORMAT, "multiple of 4");
    free(good.data);
    sp_buffer_t value = sp_sample_charsmap_with(5, (1u << 10) | (1u << 8) | 0x41);
    expect_charsmap("value past the blob", &value, UFORM_FORMAT, "past the 2-byte string blob");
    free(value.data);
    sp_buffer_t leaf = sp_sample_charsmap_with(0, (1000u << 10) | (1u << 8) | 0x41);
    expect_charsmap("value unit past the array", &leaf, UFORM_FORMAT, "past the 66 units");
    free(leaf.data);
}

static cJSON *parse(const char *text) {
    cJSON *root = NULL;
    if (uform__json_parse(text, strlen(text), &root, NULL, NULL) != UFORM_OK) return NULL;
    return root;
}

static void test_json_entries(void) {
    static const struct {
        const char *json, *words;
        uform_status_t status;
        int kind; /* 0 unigram, 1 precompiled, 2 metaspace */
    } cases[] = {
        {"{\"type\":\"Unigram\",\"vocab\":{}}", "no \"vocab\" array", UFORM_FORMAT, 0},
        {"{\"type\":\"Unigram\",\"vocab\":[[\"a\"]]}", "vocab entry 0", UFORM_FORMAT, 0},
        {"{\"type\":\"Unigram\",\"vocab\":[[\"a\",1],[2,1]]}", "vocab entry 1", UFORM_FORMAT, 0},
        {"{\"type\":\"Unigram\",\"unk_id\":2,\"vocab\":[[\"a\",1]]}", "unk_id", UFORM_FORMAT, 0},
        {"{\"type\":\"Unigram\",\"unk_id\":0.5,\"vocab\":[[\"a\",1]]}", "unk_id", UFORM_FORMAT, 0},
        {"{\"type\":\"Unigram\",\"vocab\":[]}", "empty", UFORM_FORMAT, 0},
        {"{\"type\":\"Unigram\",\"vocab\":[[\"a\",1]],\"byte_fallback\":1}", "byte_fallback", UFORM_FORMAT, 0},
        {"{\"type\":\"BPE\",\"vocab\":[[\"a\",1]]}", "Unigram", UFORM_FORMAT, 0},
        {"{\"type\":\"Precompiled\",\"precompiled_charsmap\":\"@@@@\"}", "not base64", UFORM_FORMAT, 1},
        {"{\"type\":\"Precompiled\",\"precompiled_charsmap\":\"QUJD=\"}", "padding", UFORM_FORMAT, 1},
        {"{\"type\":\"Precompiled\",\"precompiled_charsmap\":\"QUJD\"}", "shorter than", UFORM_FORMAT, 1},
        {"{\"type\":\"Precompiled\",\"precompiled_charsmap\":7}", "neither", UFORM_FORMAT, 1},
        {"{\"type\":\"Precompiled\",\"precompiled_charsmap\":null}", "", UFORM_OK, 1},
        {"{\"type\":\"Metaspace\",\"replacement\":\"ab\"}", "exactly one", UFORM_FORMAT, 2},
        {"{\"type\":\"Metaspace\",\"replacement\":\"_\",\"prepend_scheme\":\"sometimes\"}", "sometimes", UFORM_FORMAT, 2},
        {"{\"type\":\"Metaspace\",\"replacement\":\"_\",\"add_prefix_space\":false,\"prepend_scheme\":\"always\"}",
         "contradicts", UFORM_FORMAT, 2},
        {"{\"type\":\"Metaspace\",\"replacement\":\"_\",\"split\":\"yes\"}", "split", UFORM_FORMAT, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        cJSON *json = parse(cases[i].json);
        CHECK(json != NULL);
        if (!json) continue;
        uform_outcome_t outcome = {0};
        uform_status_t status;
        if (cases[i].kind == 0) {
            uform__sp_unigram_t *unigram = NULL;
            status = uform__sp_unigram_from_json(json, &unigram, &outcome);
            uform__sp_unigram_free(unigram);
        } else if (cases[i].kind == 1) {
            uform__sp_precompiled_t *precompiled = NULL;
            status = uform__sp_precompiled_from_json(json, &precompiled, &outcome);
            uform__sp_precompiled_free(precompiled);
        } else {
            uform__sp_metaspace_t metaspace;
            status = uform__sp_metaspace_from_json(json, &metaspace, &outcome);
        }
        CHECK_MSG(status == cases[i].status, "%s: %s (%s)", cases[i].json, uform_status_name(status), outcome.message);
        CHECK_CONTAINS(outcome.message, cases[i].words);
        cJSON_Delete(json);
    }
    /* No unk_id and a character no piece covers: tokenizers' MissingUnkId. */
    cJSON *json = parse("{\"type\":\"Unigram\",\"unk_id\":null,\"vocab\":[[\"a\",-1],[\"b\",-1]]}");
    uform__sp_unigram_t *unigram = NULL;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__sp_unigram_from_json(json, &unigram, &outcome), UFORM_OK);
    uform__text_ids_t ids = {0};
    CHECK_STATUS(uform__sp_unigram_encode(unigram, "abab", 4, &ids, &outcome), UFORM_OK);
    CHECK_EQ_INT(ids.count, 4);
    CHECK_STATUS(uform__sp_unigram_encode(unigram, "abxb", 4, &ids, &outcome), UFORM_UNSUPPORTED);
    CHECK_CONTAINS(outcome.message, "byte 2");
    uform__text_ids_free(&ids);
    uform__sp_unigram_free(unigram);
    cJSON_Delete(json);
}

/* Metaspace on tokenizers' own examples (pre_tokenizers/metaspace.rs tests). */
static void check_words(const uform__sp_metaspace_t *metaspace, const char *text, int at_start, const char *expected) {
    uform__text_string_t out = {0};
    uform__sp_spans_t words = {0};
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__sp_metaspace_apply(metaspace, text, strlen(text), at_start, &out, &words, &outcome), UFORM_OK);
    char joined[256] = "";
    for (size_t i = 0; i < words.count; ++i) {
        strcat(joined, "[");
        strncat(joined, out.data + words.data[i].start, words.data[i].end - words.data[i].start);
        strcat(joined, "]");
    }
    CHECK_MSG(strcmp(joined, expected) == 0, "\"%s\": %s, expected %s", text, joined, expected);
    uform__text_string_free(&out);
    uform__sp_spans_free(&words);
}

static void test_metaspace(void) {
    uform__sp_metaspace_t m;
    uform__sp_metaspace_default(&m);
    check_words(&m, "Hey friend!", 1, "[▁Hey][▁friend!]");
    check_words(&m, "Hey   friend!", 1, "[▁Hey][▁][▁][▁friend!]");
    check_words(&m, " Hey", 1, "[▁Hey]");
    check_words(&m, "", 1, "");
    m.prepend = UFORM__SP_PREPEND_FIRST;
    check_words(&m, "Hey", 0, "[Hey]");
    check_words(&m, "Hey", 1, "[▁Hey]");
    m.prepend = UFORM__SP_PREPEND_NEVER;
    check_words(&m, "Hey friend", 1, "[Hey][▁friend]");
    m.split = 0;
    check_words(&m, "Hey friend ", 1, "[Hey▁friend▁]");
    cJSON *json = parse("{\"type\":\"Metaspace\",\"replacement\":\"_\",\"add_prefix_space\":true,\"str_rep\":\"_\"}");
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__sp_metaspace_from_json(json, &m, &outcome), UFORM_OK);
    CHECK_EQ_INT(m.prepend, UFORM__SP_PREPEND_ALWAYS);
    CHECK_EQ_INT(m.split, 1);
    check_words(&m, "a b", 1, "[_a][_b]");
    cJSON_Delete(json);
}

int main(void) {
    test_sample_model();
    test_broken_models();
    test_broken_charsmaps();
    test_json_entries();
    test_metaspace();
    return check_finish();
}
