/*
 * Bad tokenizer.json files and bad calls: each must answer its status with a message that names
 * where the problem is (the key path, the token, the byte offset), never crash, and leave no
 * tokenizer behind. The statuses follow tokenizer.h: UFORM_FORMAT for malformed or inconsistent
 * files, UFORM_UNSUPPORTED naming a component type this engine does not run, UFORM_INVALID_ARGUMENT
 * for caller misuse.
 */
#include <string.h>

#include "common/check.h"
#include "text/tokenizer.h"

/* A valid WordPiece file with the parts the cases below replace. */
#define WORDPIECE_VOCAB "{\"[UNK]\": 0, \"[CLS]\": 1, \"[SEP]\": 2, \"hello\": 3, \"##s\": 4, \"a\": 5}"
#define WORDPIECE_MODEL "{\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", \"vocab\": " WORDPIECE_VOCAB "}"
#define BPE_VOCAB "{\"a\": 0, \"b\": 1, \"ab\": 2, \"c\": 3}"

static void expect(const char *name, const char *json, uform_status_t status, const char *needle) {
    uform_outcome_t outcome;
    memset(&outcome, 0, sizeof outcome);
    uform__tokenizer_t *tokenizer = (uform__tokenizer_t *)&outcome; /* must be reset to NULL */
    uform_status_t got = uform__tokenizer_from_json(json, strlen(json), &tokenizer, &outcome);
    CHECK_MSG(got == status, "%s: status %s, expected %s (message: %s)", name, uform_status_name(got),
              uform_status_name(status), outcome.message);
    CHECK_MSG(tokenizer == NULL, "%s: a tokenizer came back from a failure", name);
    CHECK_MSG(strstr(outcome.message, needle) != NULL, "%s: message \"%s\" lacks \"%s\"", name, outcome.message,
              needle);
    if (got == UFORM_OK) uform__tokenizer_free(tokenizer);
}

static void file_errors(void) {
    expect("not JSON", "{\"model\": ", UFORM_FORMAT, "malformed JSON at byte");
    /* An added token whose content ends in a cut-short sequence (the fuzzer's find: BertNormalizer
     * then read past the string), and a stray continuation byte in a vocabulary key. */
    expect("not UTF-8 (cut short)",
           "{\"added_tokens\": [{\"id\": 9, \"content\": \"x\xc3\", \"normalized\": true}], \"normalizer\":"
           " {\"type\": \"BertNormalizer\"}, \"model\": " WORDPIECE_MODEL "}",
           UFORM_FORMAT, "(0xc3) is not well-formed UTF-8");
    expect("not UTF-8 (continuation)", "{\"model\": {\"type\": \"WordLevel\", \"vocab\": {\"a\x80\": 0}}}", UFORM_FORMAT,
           "byte 44 of 52 (0x80) is not well-formed UTF-8");
    expect("trailing bytes", "{\"model\": " WORDPIECE_MODEL "} x", UFORM_FORMAT, "after the JSON value");
    expect("not an object", "[1, 2]", UFORM_FORMAT, "expected an object");
    expect("no model", "{\"normalizer\": null}", UFORM_FORMAT, "no \"model\"");
    expect("version", "{\"version\": \"2.0\", \"model\": " WORDPIECE_MODEL "}", UFORM_UNSUPPORTED, "\"2.0\"");
    expect("version type", "{\"version\": 1, \"model\": " WORDPIECE_MODEL "}", UFORM_FORMAT, "version is a number");
    expect("model not object", "{\"model\": []}", UFORM_FORMAT, "model is an array");
    expect("model type", "{\"model\": {\"type\": \"Sentencepiece\", \"vocab\": {}}}", UFORM_UNSUPPORTED,
           "model type \"Sentencepiece\"");
    expect("empty vocab", "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}", UFORM_FORMAT, "model.vocab is empty");
    expect("vocab not object", "{\"model\": {\"type\": \"WordLevel\", \"vocab\": [1]}}", UFORM_FORMAT,
           "model.vocab is an array");
    expect("id negative", "{\"model\": {\"type\": \"WordLevel\", \"vocab\": {\"a\": -1}}}", UFORM_FORMAT,
           "model.vocab.a is -1");
    expect("id fraction", "{\"model\": {\"type\": \"WordLevel\", \"vocab\": {\"a\": 1.5}}}", UFORM_FORMAT,
           "model.vocab.a is 1.5");
    expect("id string", "{\"model\": {\"type\": \"WordLevel\", \"vocab\": {\"a\": \"1\"}}}", UFORM_FORMAT,
           "model.vocab.a is a string");
    expect("unk type", "{\"model\": {\"type\": \"WordPiece\", \"unk_token\": 3, \"vocab\": " WORDPIECE_VOCAB "}}",
           UFORM_FORMAT, "model.unk_token is a number");
    expect("max chars", "{\"model\": {\"type\": \"WordPiece\", \"max_input_chars_per_word\": -2, \"vocab\": "
           WORDPIECE_VOCAB "}}", UFORM_FORMAT, "model.max_input_chars_per_word is -2");

    /* BPE */
    expect("merge unknown", "{\"model\": {\"type\": \"BPE\", \"vocab\": " BPE_VOCAB ", \"merges\": [\"a b\", \"a x\"]}}",
           UFORM_FORMAT, "model.merges[1] merges \"x\", which is not in the vocabulary");
    expect("merge result unknown", "{\"model\": {\"type\": \"BPE\", \"vocab\": " BPE_VOCAB ", \"merges\": [\"b c\"]}}",
           UFORM_FORMAT, "the merged token \"bc\" is not in the vocabulary");
    expect("merge shape", "{\"model\": {\"type\": \"BPE\", \"vocab\": " BPE_VOCAB ", \"merges\": [\"a b c\"]}}",
           UFORM_FORMAT, "model.merges[0] is a string without exactly one space");
    expect("merge pair shape", "{\"model\": {\"type\": \"BPE\", \"vocab\": " BPE_VOCAB ", \"merges\": [[\"a\"]]}}",
           UFORM_FORMAT, "model.merges[0] is an array");
    expect("merges missing", "{\"model\": {\"type\": \"BPE\", \"vocab\": " BPE_VOCAB "}}", UFORM_FORMAT,
           "model.merges is missing");
    expect("dropout", "{\"model\": {\"type\": \"BPE\", \"dropout\": 0.1, \"vocab\": " BPE_VOCAB ", \"merges\": []}}",
           UFORM_UNSUPPORTED, "dropout");
    expect("dropout range", "{\"model\": {\"type\": \"BPE\", \"dropout\": 2, \"vocab\": " BPE_VOCAB ", \"merges\": []}}",
           UFORM_FORMAT, "model.dropout must be null or a number from 0 to 1");
    expect("byte_fallback type", "{\"model\": {\"type\": \"BPE\", \"byte_fallback\": 1, \"vocab\": " BPE_VOCAB
           ", \"merges\": []}}", UFORM_FORMAT, "model.byte_fallback is a number");

    /* Components */
    expect("normalizer type", "{\"normalizer\": {\"type\": \"Uppercase\"}, \"model\": " WORDPIECE_MODEL "}",
           UFORM_UNSUPPORTED, "normalizer: normalizer type \"Uppercase\"");
    expect("normalizer untyped", "{\"normalizer\": {\"lowercase\": true}, \"model\": " WORDPIECE_MODEL "}",
           UFORM_FORMAT, "normalizer.type is missing");
    expect("sequence child", "{\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFC\"}, "
           "{\"type\": \"Magic\"}]}, \"model\": " WORDPIECE_MODEL "}", UFORM_UNSUPPORTED,
           "normalizer.normalizers[1]: normalizer type \"Magic\"");
    /* The three Sequence lists: not a list, and a child's path (text/tokenizer_json.c's array and each). */
    expect("normalizers object", "{\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": {}}, \"model\": "
           WORDPIECE_MODEL "}", UFORM_FORMAT, "normalizer.normalizers is an object, expected an array");
    expect("normalizers missing", "{\"normalizer\": {\"type\": \"Sequence\"}, \"model\": " WORDPIECE_MODEL "}",
           UFORM_FORMAT, "normalizer.normalizers is missing, expected an array");
    expect("pretokenizers number", "{\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": 3}, \"model\": "
           WORDPIECE_MODEL "}", UFORM_FORMAT, "pre_tokenizer.pretokenizers is a number, expected an array");
    expect("processors string", "{\"post_processor\": {\"type\": \"Sequence\", \"processors\": \"x\"}, \"model\": "
           WORDPIECE_MODEL "}", UFORM_FORMAT, "post_processor.processors is a string, expected an array");
    expect("processors child", "{\"post_processor\": {\"type\": \"Sequence\", \"processors\": [{\"type\": "
           "\"ByteLevel\"}, {\"type\": \"Fancy\"}]}, \"model\": " WORDPIECE_MODEL "}", UFORM_UNSUPPORTED,
           "post_processor.processors[1]");
    expect("bert flag type", "{\"normalizer\": {\"type\": \"BertNormalizer\", \"lowercase\": \"yes\"}, \"model\": "
           WORDPIECE_MODEL "}", UFORM_FORMAT, "normalizer.lowercase is a string");
    expect("replace regex", "{\"normalizer\": {\"type\": \"Replace\", \"pattern\": {\"Regex\": \"(\"}, \"content\": "
           "\"\"}, \"model\": " WORDPIECE_MODEL "}", UFORM_FORMAT, "normalizer.pattern: the regular expression \"(\"");
    expect("replace pattern", "{\"normalizer\": {\"type\": \"Replace\", \"pattern\": \"x\", \"content\": \"\"}, "
           "\"model\": " WORDPIECE_MODEL "}", UFORM_FORMAT, "normalizer.pattern is a string");
    expect("pre-tokenizer type", "{\"pre_tokenizer\": {\"type\": \"UnicodeScripts\"}, \"model\": " WORDPIECE_MODEL "}",
           UFORM_UNSUPPORTED, "pre-tokenizer type \"UnicodeScripts\"");
    expect("split behavior", "{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, "
           "\"behavior\": \"Dropped\", \"invert\": false}, \"model\": " WORDPIECE_MODEL "}", UFORM_FORMAT,
           "pre_tokenizer.behavior is \"Dropped\"");
    expect("split regex", "{\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", "
           "\"pattern\": {\"Regex\": \"[a-\"}, \"behavior\": \"Removed\"}]}, \"model\": " WORDPIECE_MODEL "}",
           UFORM_FORMAT, "pre_tokenizer.pretokenizers[0].pattern");
    expect("delimiter", "{\"pre_tokenizer\": {\"type\": \"CharDelimiterSplit\", \"delimiter\": \"ab\"}, \"model\": "
           WORDPIECE_MODEL "}", UFORM_FORMAT, "delimiter must be one character");
    expect("post type", "{\"post_processor\": {\"type\": \"Fancy\"}, \"model\": " WORDPIECE_MODEL "}", UFORM_UNSUPPORTED,
           "post-processor type \"Fancy\"");
    expect("bert processing", "{\"post_processor\": {\"type\": \"BertProcessing\", \"sep\": [\"[SEP]\"], \"cls\": "
           "[\"[CLS]\", 1]}, \"model\": " WORDPIECE_MODEL "}", UFORM_FORMAT, "post_processor.sep is an array of another shape");
    expect("template token", "{\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": "
           "{\"id\": \"[X]\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], \"special_tokens\": {}}, "
           "\"model\": " WORDPIECE_MODEL "}", UFORM_FORMAT, "names the special token \"[X]\"");
    expect("template no sequence", "{\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [], "
           "\"special_tokens\": {}}, \"model\": " WORDPIECE_MODEL "}", UFORM_UNSUPPORTED, "does not hold the sequence");
    expect("template id", "{\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": "
           "{\"id\": \"[CLS]\"}}, {\"Sequence\": {\"id\": \"A\"}}], \"special_tokens\": {\"[CLS]\": {\"id\": \"[CLS]\", "
           "\"ids\": [\"1\"], \"tokens\": [\"[CLS]\"]}}}, \"model\": " WORDPIECE_MODEL "}", UFORM_FORMAT,
           "post_processor.special_tokens.[CLS].ids[0] is a string");

    /* Added tokens */
    expect("added not array", "{\"added_tokens\": {}, \"model\": " WORDPIECE_MODEL "}", UFORM_FORMAT,
           "added_tokens is an object");
    expect("added content", "{\"added_tokens\": [{\"id\": 0, \"special\": true}], \"model\": " WORDPIECE_MODEL "}",
           UFORM_FORMAT, "added_tokens[0].content is missing");
    expect("added id", "{\"added_tokens\": [{\"content\": \"[X]\", \"id\": -4}], \"model\": " WORDPIECE_MODEL "}",
           UFORM_FORMAT, "added_tokens[0].id is -4");
    expect("added flag", "{\"added_tokens\": [{\"content\": \"[X]\", \"id\": 9, \"lstrip\": 1}], \"model\": "
           WORDPIECE_MODEL "}", UFORM_FORMAT, "added_tokens[0].lstrip is a number");
}

static uform__tokenizer_t *load(const char *json) {
    uform_outcome_t outcome;
    memset(&outcome, 0, sizeof outcome);
    uform__tokenizer_t *tokenizer = NULL;
    uform_status_t status = uform__tokenizer_from_json(json, strlen(json), &tokenizer, &outcome);
    CHECK_MSG(status == UFORM_OK, "load: %s", outcome.message);
    return tokenizer;
}

static void call_errors(void) {
    uform_outcome_t outcome;
    memset(&outcome, 0, sizeof outcome);
    uform__tokenizer_t *tokenizer = NULL;
    CHECK_STATUS(uform__tokenizer_from_json(NULL, 0, &tokenizer, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(uform__tokenizer_from_json("{}", 2, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    uform__tokenizer_free(NULL);

    tokenizer = load("{\"post_processor\": {\"type\": \"BertProcessing\", \"sep\": [\"[SEP]\", 2], \"cls\": [\"[CLS]\", 1]},"
                     " \"pre_tokenizer\": {\"type\": \"WhitespaceSplit\"}, \"model\": " WORDPIECE_MODEL "}");
    if (!tokenizer) return;
    uform__text_ids_t ids = {0};
    CHECK_STATUS(uform__tokenizer_encode(NULL, "a", 1, 0, &ids, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(uform__tokenizer_encode(tokenizer, NULL, 1, 0, &ids, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(uform__tokenizer_encode(tokenizer, "a", 1, 0, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    /* max_length below the two special tokens: Python cannot honour it either. */
    CHECK_STATUS(uform__tokenizer_encode(tokenizer, "a", 1, 1, &ids, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK(strstr(outcome.message, "max_length 1 is below the 2 special tokens") != NULL);
    CHECK_EQ_INT(ids.count, 0);
    /* NULL text of length 0 is the empty text: just the special tokens. */
    CHECK_STATUS(uform__tokenizer_encode(tokenizer, NULL, 0, 0, &ids, &outcome), UFORM_OK);
    CHECK_EQ_INT(ids.count, 2);
    uform__text_ids_free(&ids);
    uform__tokenizer_free(tokenizer);

    /* The unknown token is needed but absent from the vocabulary: Python's "Missing [UNK] token". */
    tokenizer = load("{\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[NOPE]\", \"vocab\": " WORDPIECE_VOCAB "}}");
    if (!tokenizer) return;
    CHECK_STATUS(uform__tokenizer_encode(tokenizer, "hellos", 6, 0, &ids, &outcome), UFORM_OK);
    CHECK_EQ_INT(ids.count, 2);
    CHECK_STATUS(uform__tokenizer_encode(tokenizer, "zzz", 3, 0, &ids, &outcome), UFORM_FORMAT);
    CHECK(strstr(outcome.message, "\"[NOPE]\", which is not in its vocabulary") != NULL);
    CHECK_EQ_INT(ids.count, 0);
    uform__text_ids_free(&ids);
    uform__tokenizer_free(tokenizer);
}

int main(void) {
    file_errors();
    call_errors();
    return check_finish();
}
