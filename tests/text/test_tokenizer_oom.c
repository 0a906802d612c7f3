/*
 * Allocation failures in the tokenizer (tests/reliability/failing_alloc.h fails the N-th
 * allocation of the process: ours, cJSON's, utf8proc's, PCRE2's): loading a tokenizer.json that
 * uses every component and encoding with it must answer UFORM_OK or UFORM_OUT_OF_MEMORY for every
 * N, transient and persistent, leak nothing, and give the same ids as without failures once memory
 * is back.
 */
#include <string.h>

#include "common/check.h"
#include "reliability/failing_alloc.h"
#include "text/tokenizer.h"

/* Every normalizer, pre-tokenizer, model option and post-processor the pipeline runs itself, with
 * regex patterns so that PCRE2 allocates too. */
static const char json[] =
    "{\"version\": \"1.0\", \"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", \"special\": true},"
    " {\"id\": 1, \"content\": \"<s>\", \"special\": true, \"normalized\": false},"
    " {\"id\": 2, \"content\": \"</s>\", \"special\": true, \"normalized\": true, \"rstrip\": true},"
    " {\"id\": 3, \"content\": \"Hello World\", \"single_word\": true, \"lstrip\": true, \"normalized\": true}],"
    " \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"BertNormalizer\", \"lowercase\": false,"
    "  \"strip_accents\": true}, {\"type\": \"NFKC\"}, {\"type\": \"Replace\", \"pattern\": {\"Regex\": \"\\\\s+\"},"
    "  \"content\": \" \"}, {\"type\": \"Lowercase\"}, {\"type\": \"Strip\", \"strip_left\": true, \"strip_right\": true},"
    "  {\"type\": \"Prepend\", \"prepend\": \" \"}, {\"type\": \"StripAccents\"}, {\"type\": \"Nmt\"}]},"
    " \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\":"
    "  \"'s|[\\\\p{L}]+|[\\\\p{N}]|[^\\\\s\\\\p{L}\\\\p{N}]+\"}, \"behavior\": \"Removed\", \"invert\": true},"
    "  {\"type\": \"Punctuation\", \"behavior\": \"MergedWithNext\"}, {\"type\": \"Digits\", \"individual_digits\": false},"
    "  {\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"use_regex\": true}]},"
    " \"post_processor\": {\"type\": \"Sequence\", \"processors\": [{\"type\": \"ByteLevel\"},"
    "  {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}},"
    "  {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}, {\"SpecialToken\": {\"id\": \"</s>\", \"type_id\": 0}}],"
    "  \"special_tokens\": {\"<s>\": {\"id\": \"<s>\", \"ids\": [1], \"tokens\": [\"<s>\"]},"
    "  \"</s>\": {\"id\": \"</s>\", \"ids\": [2], \"tokens\": [\"</s>\"]}}}]},"
    " \"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"fuse_unk\": true, \"byte_fallback\": true,"
    "  \"end_of_word_suffix\": \"\", \"vocab\": {\"<unk>\": 0, \"<s>\": 1, \"</s>\": 2, \"\\u0120\": 4, \"h\": 5,"
    "  \"e\": 6, \"l\": 7, \"o\": 8, \"he\": 9, \"ll\": 10, \"hell\": 11, \"\\u0120h\": 12, \"<0x21>\": 13, \"1\": 14},"
    "  \"merges\": [\"h e\", \"l l\", \"he ll\", \"\\u0120 h\"]}}";

static const char text[] = "  <s>Hello World! h\xc3\xa9llo 123 caf\xc3\xa9\t\xe4\xb8\xad </s>  hello!! \xff x";

/* Loads and encodes; answers 1 when both succeeded (ids filled), 0 when an allocation failed as
 * promised, -1 when a status or message broke the promise. */
static int run(uform__text_ids_t *ids) {
    uform_outcome_t outcome;
    memset(&outcome, 0, sizeof outcome);
    uform__tokenizer_t *tokenizer = NULL;
    uform_status_t status = uform__tokenizer_from_json(json, sizeof json - 1, &tokenizer, &outcome);
    if (status == UFORM_OUT_OF_MEMORY) return tokenizer || !outcome.message[0] ? -1 : 0;
    if (status != UFORM_OK) {
        fprintf(stderr, "load: %s %s\n", uform_status_name(status), outcome.message);
        return -1;
    }
    status = uform__tokenizer_encode(tokenizer, text, sizeof text - 1, 0, ids, &outcome);
    uform__tokenizer_free(tokenizer);
    if (status == UFORM_OUT_OF_MEMORY) return ids->count || !outcome.message[0] ? -1 : 0;
    if (status != UFORM_OK) {
        fprintf(stderr, "encode: %s %s\n", uform_status_name(status), outcome.message);
        return -1;
    }
    return 1;
}

int main(void) {
    uform__text_ids_t expected = {0}, ids = {0};
    CHECK_EQ_INT(run(&expected), 1);
    CHECK(expected.count > 5);
    /* Reserve the ids' room up front, so the ids list's own growth is not a leak to the counter. */
    for (size_t i = 0; i < 256; ++i) uform__text_ids_append(&ids, 0);
    /* One failing run first, outside the leak count: the failure path reads the JSON again with
     * localeconv() and strtod, whose first calls make glibc's locale caches for good. */
    failing_alloc_arm(1, FAILING_ALLOC_TRANSIENT);
    CHECK(run(&ids) >= 0);
    failing_alloc_disarm();
    for (int mode = 0; mode < 2; ++mode) {
        size_t failures_seen = 0;
        for (size_t n = 1;; ++n) {
            long live = failing_alloc_live();
            failing_alloc_arm(n, mode ? FAILING_ALLOC_PERSISTENT : FAILING_ALLOC_TRANSIENT);
            int result = run(&ids);
            size_t failed = failing_alloc_disarm();
            long leaked = failing_alloc_live() - live;
            CHECK_MSG(result >= 0, "allocation %zu (%s) broke the promise", n, mode ? "persistent" : "transient");
            CHECK_MSG(leaked == 0, "allocation %zu (%s) failing leaked %ld blocks", n,
                      mode ? "persistent" : "transient", leaked);
            if (result < 0 || leaked != 0) failing_alloc_print_failure_stack();
            if (failed == 0) {
                /* Past the last allocation: the run succeeded and must give the ids of before. */
                CHECK(result == 1 && ids.count == expected.count &&
                      memcmp(ids.data, expected.data, ids.count * sizeof(uint32_t)) == 0);
                break;
            }
            failures_seen += result == 0;
            if (result < 0 || leaked != 0 || n > 100000) break;
        }
        printf("%s: %zu allocation failures answered UFORM_OUT_OF_MEMORY\n", mode ? "persistent" : "transient",
               failures_seen);
        CHECK(failures_seen > 20);
    }
    uform__text_ids_free(&expected);
    uform__text_ids_free(&ids);
    return check_finish();
}
