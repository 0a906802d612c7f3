/*
 * Fuzz target for the tokenizer.json pipeline (src/text/tokenizer*.c): an input is a tokenizer.json
 * text, optionally followed by a NUL byte and a text to encode (otherwise a fixed text with
 * specials, accents, CJK, emoji, digits, whitespace runs and ill-formed UTF-8 is encoded).
 * Promises checked (a broken one traps): loading answers OK with a tokenizer, or FORMAT /
 * UNSUPPORTED / OUT_OF_MEMORY with a message and no tokenizer; encoding answers OK, or FORMAT (an
 * unknown token missing from the vocabulary) / UNSUPPORTED (PCRE2's match limits) with no ids;
 * truncation to N ids gives at most N ids when the specials fit.
 *
 * Built two ways: as a libFuzzer target (-DUFORM_FUZZ=ON with clang, tests/fuzz/CMakeLists.txt)
 * and, with TOKENIZER_FUZZ_REPLAY defined, as a replay driver that any compiler builds:
 *     fuzz_tokenizer_json_replay [--rounds N] [--seed S]  mutates the seeds below N times
 *     fuzz_tokenizer_json_replay --seeds DIR              writes the seeds into DIR (libFuzzer's corpus)
 *     fuzz_tokenizer_json_replay FILE...                  replays files (a crash, a corpus)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "text/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char default_text[] =
    "Hello, WORLD! [CLS] caf\xc3\xa9 na\xc3\xafve <s>x</s> <mask> \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80 "
    "12345 \xd9\xa1\xd9\xa2 don't   \t\n  a\xcc\x81 \xff\xc3 <|endoftext|> \xe2\x80\x8b end";

static void encode_checked(const uform__tokenizer_t *tokenizer, const char *text, size_t length) {
    size_t before = 0, after = 0;
    uform__tokenizer_specials(tokenizer, &before, &after);
    uform__text_ids_t ids = {0};
    const size_t limits[] = {0, 1, 3, 8, 64};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; ++i) {
        uform_outcome_t outcome;
        memset(&outcome, 0, sizeof outcome);
        uform_status_t status = uform__tokenizer_encode(tokenizer, text, length, limits[i], &ids, &outcome);
        if (status == UFORM_OK) {
            if (limits[i] && ids.count > limits[i]) __builtin_trap();
            if (ids.count < before + after) __builtin_trap();
        } else if (status == UFORM_INVALID_ARGUMENT) {
            if (!limits[i] || limits[i] >= before + after) __builtin_trap();
        } else if ((status != UFORM_FORMAT && status != UFORM_UNSUPPORTED && status != UFORM_OUT_OF_MEMORY) ||
                   ids.count || !outcome.message[0]) {
            __builtin_trap();
        }
    }
    uform__text_ids_free(&ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *json = (const char *)data;
    const uint8_t *nul = size ? memchr(data, 0, size) : NULL;
    size_t json_length = nul ? (size_t)(nul - data) : size;
    uform_outcome_t outcome;
    memset(&outcome, 0, sizeof outcome);
    uform__tokenizer_t *tokenizer = NULL;
    uform_status_t status = uform__tokenizer_from_json(json ? json : "", json_length, &tokenizer, &outcome);
    if (status != UFORM_OK) {
        if ((status != UFORM_FORMAT && status != UFORM_UNSUPPORTED && status != UFORM_OUT_OF_MEMORY) || tokenizer ||
            !outcome.message[0])
            __builtin_trap();
        return 0;
    }
    if (!tokenizer) __builtin_trap();
    if (nul) encode_checked(tokenizer, (const char *)nul + 1, size - json_length - 1);
    else encode_checked(tokenizer, default_text, sizeof default_text - 1);
    uint32_t id;
    (void)uform__tokenizer_token_id(tokenizer, "[CLS]", &id);
    (void)uform__tokenizer_vocabulary_size(tokenizer);
    (void)uform__tokenizer_kind(tokenizer);
    uform__tokenizer_free(tokenizer);
    return 0;
}

#ifdef TOKENIZER_FUZZ_REPLAY

/* Small files of every component the pipeline reads, in the published files' shapes. */
static const char *const seeds[] = {
    "{\"version\": \"1.0\", \"added_tokens\": [{\"id\": 0, \"content\": \"[PAD]\", \"single_word\": false, "
    "\"lstrip\": false, \"rstrip\": false, \"normalized\": false, \"special\": true}, {\"id\": 1, \"content\": "
    "\"[UNK]\", \"special\": true, \"normalized\": false}, {\"id\": 2, \"content\": \"[CLS]\", \"special\": true}, "
    "{\"id\": 3, \"content\": \"[SEP]\", \"special\": true}], \"normalizer\": {\"type\": \"BertNormalizer\", "
    "\"clean_text\": true, \"handle_chinese_chars\": true, \"strip_accents\": null, \"lowercase\": true}, "
    "\"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"}, \"post_processor\": {\"type\": \"TemplateProcessing\", "
    "\"single\": [{\"SpecialToken\": {\"id\": \"[CLS]\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", "
    "\"type_id\": 0}}, {\"SpecialToken\": {\"id\": \"[SEP]\", \"type_id\": 0}}], \"pair\": [], \"special_tokens\": "
    "{\"[CLS]\": {\"id\": \"[CLS]\", \"ids\": [2], \"tokens\": [\"[CLS]\"]}, \"[SEP]\": {\"id\": \"[SEP]\", \"ids\": "
    "[3], \"tokens\": [\"[SEP]\"]}}}, \"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", "
    "\"continuing_subword_prefix\": \"##\", \"max_input_chars_per_word\": 100, \"vocab\": {\"[PAD]\": 0, "
    "\"[UNK]\": 1, \"[CLS]\": 2, \"[SEP]\": 3, \"hello\": 4, \"world\": 5, \"##s\": 6, \"h\": 7, \"##e\": 8, "
    "\"##l\": 9, \"##o\": 10, \"!\": 11, \"\xe4\xb8\xad\": 12}}}",

    "{\"added_tokens\": [{\"id\": 0, \"content\": \"<s>\", \"normalized\": true, \"special\": true}, {\"id\": 1, "
    "\"content\": \"</s>\", \"special\": true}, {\"id\": 9, \"content\": \"<mask>\", \"lstrip\": true, "
    "\"special\": true}], \"normalizer\": null, \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": "
    "false, \"trim_offsets\": true, \"use_regex\": true}, \"post_processor\": {\"type\": \"RobertaProcessing\", "
    "\"sep\": [\"</s>\", 1], \"cls\": [\"<s>\", 0], \"trim_offsets\": true, \"add_prefix_space\": false}, "
    "\"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, \"continuing_subword_prefix\": \"\", "
    "\"end_of_word_suffix\": \"\", \"fuse_unk\": false, \"byte_fallback\": false, \"vocab\": {\"<s>\": 0, "
    "\"</s>\": 1, \"\xc4\xa0\": 2, \"h\": 3, \"e\": 4, \"l\": 5, \"o\": 6, \"he\": 7, \"ll\": 8, \"<mask>\": 9, "
    "\"\xc4\xa0h\": 10, \"hell\": 11}, \"merges\": [\"h e\", \"l l\", \"\xc4\xa0 h\", [\"he\", \"ll\"]]}}",

    "{\"added_tokens\": [{\"id\": 6, \"content\": \"<|startoftext|>\", \"normalized\": true, \"special\": true}, "
    "{\"id\": 7, \"content\": \"<|endoftext|>\", \"special\": true}], \"normalizer\": {\"type\": \"Sequence\", "
    "\"normalizers\": [{\"type\": \"NFC\"}, {\"type\": \"Replace\", \"pattern\": {\"Regex\": \"\\\\s+\"}, "
    "\"content\": \" \"}, {\"type\": \"Lowercase\"}]}, \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": "
    "[{\"type\": \"Split\", \"pattern\": {\"Regex\": \"<\\\\|startoftext\\\\|>|<\\\\|endoftext\\\\|>|'s|'t|[\\\\p{L}]+|"
    "[\\\\p{N}]|[^\\\\s\\\\p{L}\\\\p{N}]+\"}, \"behavior\": \"Removed\", \"invert\": true}, {\"type\": \"ByteLevel\", "
    "\"add_prefix_space\": false, \"use_regex\": false}]}, \"post_processor\": {\"type\": \"RobertaProcessing\", "
    "\"sep\": [\"<|endoftext|>\", 7], \"cls\": [\"<|startoftext|>\", 6]}, \"model\": {\"type\": \"BPE\", "
    "\"unk_token\": \"<|endoftext|>\", \"end_of_word_suffix\": \"</w>\", \"vocab\": {\"a\": 0, \"b\": 1, "
    "\"a</w>\": 2, \"b</w>\": 3, \"ab</w>\": 4, \"ab\": 5, \"<|startoftext|>\": 6, \"<|endoftext|>\": 7}, "
    "\"merges\": [\"a b</w>\", \"a b\"]}}",

    "{\"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", \"special\": true}, {\"id\": 3, \"content\": "
    "\"hello world\", \"single_word\": true, \"rstrip\": true, \"special\": false, \"normalized\": true}], "
    "\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFKD\"}, {\"type\": \"StripAccents\"}, "
    "{\"type\": \"Strip\", \"strip_left\": true, \"strip_right\": false}, {\"type\": \"Prepend\", \"prepend\": "
    "\"_\"}, {\"type\": \"Nmt\"}, {\"type\": \"Replace\", \"pattern\": {\"String\": \"``\"}, \"content\": \"\\\"\"}]}, "
    "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Whitespace\"}, {\"type\": "
    "\"Punctuation\", \"behavior\": \"MergedWithNext\"}, {\"type\": \"Digits\", \"individual_digits\": true}, "
    "{\"type\": \"CharDelimiterSplit\", \"delimiter\": \"|\"}, {\"type\": \"Split\", \"pattern\": {\"String\": "
    "\"-\"}, \"behavior\": \"Contiguous\", \"invert\": false}, {\"type\": \"WhitespaceSplit\"}]}, "
    "\"post_processor\": {\"type\": \"Sequence\", \"processors\": [{\"type\": \"ByteLevel\"}, {\"type\": "
    "\"BertProcessing\", \"sep\": [\"b\", 2], \"cls\": [\"a\", 1]}]}, \"model\": {\"type\": \"WordLevel\", "
    "\"unk_token\": \"<unk>\", \"vocab\": {\"<unk>\": 0, \"a\": 1, \"b\": 2, \"_hello\": 4, \"1\": 5}}}",

    "{\"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", \"special\": true}], \"normalizer\": {\"type\": "
    "\"Sequence\", \"normalizers\": [{\"type\": \"NFC\"}]}, \"pre_tokenizer\": {\"type\": \"Sequence\", "
    "\"pretokenizers\": [{\"type\": \"WhitespaceSplit\"}, {\"type\": \"Punctuation\", \"behavior\": "
    "\"MergedWithPrevious\"}]}, \"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", "
    "\"continuing_subword_prefix\": \"##\", \"fuse_unk\": true, \"byte_fallback\": true, \"ignore_merges\": true, "
    "\"vocab\": {\"<unk>\": 0, \"<0x41>\": 1, \"<0xC3>\": 2, \"a\": 3, \"##b\": 4, \"ab\": 5, \"b\": 6, \"##a\": 7}, "
    "\"merges\": [\"a ##b\", \"#version: 0.2\"]}}",

    "{\"normalizer\": {\"type\": \"Precompiled\", \"precompiled_charsmap\": null}, \"pre_tokenizer\": {\"type\": "
    "\"Metaspace\", \"replacement\": \"\xe2\x96\x81\", \"prepend_scheme\": \"first\", \"split\": true}, "
    "\"model\": {\"type\": \"Unigram\", \"unk_id\": 0, \"vocab\": [[\"<unk>\", 0.0], [\"\xe2\x96\x81\", -1.0], "
    "[\"a\", -2.0], [\"\xe2\x96\x81" "ab\", -1.5], [\"b\", -2.5]], \"byte_fallback\": false}}",
};

#define SEED_COUNT (sizeof seeds / sizeof seeds[0])

static uint64_t next_random(uint64_t *state) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t x = *state;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    return x ^ (x >> 33);
}

static void run_one(const uint8_t *bytes, size_t size) {
    uint8_t *exact = malloc(size ? size : 1);
    if (!exact) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    if (size) memcpy(exact, bytes, size);
    LLVMFuzzerTestOneInput(size ? exact : NULL, size);
    free(exact);
}

/* One to four edits of the kinds a fuzzer makes, biased to JSON punctuation and UTF-8 edge bytes;
 * sometimes a text to encode is appended after a NUL. */
static size_t mutate(uint8_t *buffer, size_t size, size_t capacity, uint64_t *state) {
    static const uint8_t interesting[] = {'"', '{', '}', '[', ']', ',', ':', '0', '9', '-', '.', 'e', ' ', '\\',
                                          'u', 't', 'f', 'n', '#', '|', '(', '*', 0x7F, 0x80, 0xC3, 0xE2, 0xFF};
    int edits = 1 + (int)(next_random(state) % 4);
    for (int edit = 0; edit < edits && size; ++edit) {
        uint64_t draw = next_random(state);
        size_t at = (size_t)((draw >> 8) % size);
        switch ((draw >> 4) % 6) {
        case 0: buffer[at] ^= (uint8_t)(1u << ((draw >> 40) % 8)); break;
        case 1: buffer[at] = interesting[(draw >> 40) % sizeof interesting]; break;
        case 2: size = at; break;
        case 3: {
            size_t length = 1 + (size_t)((draw >> 40) % 8);
            if (length > size - at) length = size - at;
            memmove(buffer + at, buffer + at + length, size - at - length);
            size -= length;
            break;
        }
        case 4:
            if (size < capacity) {
                memmove(buffer + at + 1, buffer + at, size - at);
                buffer[at] = interesting[(draw >> 40) % sizeof interesting];
                ++size;
            }
            break;
        default: /* duplicate a run (repeats tokens, nests brackets) */
        {
            size_t length = 1 + (size_t)((draw >> 40) % 16);
            if (length > size - at) length = size - at;
            if (size + length <= capacity) {
                memmove(buffer + at + length, buffer + at, size - at);
                size += length;
            }
            break;
        }
        }
    }
    if (next_random(state) % 4 == 0 && size + 64 <= capacity) {
        static const char *const texts[] = {"a\xcc\x81 <mask>  hello world", "\xe2\x96\x81\xe2\x96\x81x ab ab",
                                            "[CLS]\xff[SEP] 123", ""};
        const char *text = texts[next_random(state) % 4];
        buffer[size++] = 0;
        memcpy(buffer + size, text, strlen(text));
        size += strlen(text);
    }
    return size;
}

static int replay_file(const char *path) {
    FILE *stream = fopen(path, "rb");
    if (!stream) {
        fprintf(stderr, "cannot open %s: %s\n", path, strerror(errno));
        return 1;
    }
    fseek(stream, 0, SEEK_END);
    long length = ftell(stream);
    fseek(stream, 0, SEEK_SET);
    uint8_t *bytes = malloc(length > 0 ? (size_t)length : 1);
    size_t got = bytes ? fread(bytes, 1, (size_t)length, stream) : 0;
    fclose(stream);
    if (!bytes || got != (size_t)length) {
        fprintf(stderr, "cannot read %s\n", path);
        free(bytes);
        return 1;
    }
    run_one(bytes, got);
    free(bytes);
    printf("replayed %s (%zu bytes)\n", path, got);
    return 0;
}

int main(int argc, char **argv) {
    long rounds = 5000;
    uint64_t seed = 20260101;
    const char *seed_directory = NULL;
    int files = 0, failures = 0;
    for (int index = 1; index < argc; ++index) {
        if (!strcmp(argv[index], "--rounds") && index + 1 < argc) rounds = strtol(argv[++index], NULL, 0);
        else if (!strcmp(argv[index], "--seed") && index + 1 < argc) seed = strtoull(argv[++index], NULL, 0);
        else if (!strcmp(argv[index], "--seeds") && index + 1 < argc) seed_directory = argv[++index];
        else {
            ++files;
            failures += replay_file(argv[index]);
        }
    }
    if (files) return failures ? 1 : 0;
    if (seed_directory) {
        mkdir(seed_directory, 0755);
        for (size_t index = 0; index < SEED_COUNT; ++index) {
            char path[4096];
            snprintf(path, sizeof path, "%s/seed-%zu.json", seed_directory, index);
            FILE *stream = fopen(path, "wb");
            if (!stream || fwrite(seeds[index], 1, strlen(seeds[index]), stream) != strlen(seeds[index])) {
                fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
                return 1;
            }
            fclose(stream);
        }
        printf("wrote %zu seeds into %s\n", (size_t)SEED_COUNT, seed_directory);
        return 0;
    }
    /* The seeds themselves must load, or the mutations test little. */
    size_t capacity = 0;
    for (size_t index = 0; index < SEED_COUNT; ++index) {
        uform__tokenizer_t *tokenizer = NULL;
        uform_outcome_t outcome;
        memset(&outcome, 0, sizeof outcome);
        if (uform__tokenizer_from_json(seeds[index], strlen(seeds[index]), &tokenizer, &outcome) != UFORM_OK) {
            fprintf(stderr, "seed %zu is refused: %s\n", index, outcome.message);
            return 1;
        }
        uform__tokenizer_free(tokenizer);
        if (strlen(seeds[index]) > capacity) capacity = strlen(seeds[index]);
    }
    capacity = capacity * 2 + 128;
    printf("seed %llu, %ld rounds\n", (unsigned long long)seed, rounds);
    uint64_t state = seed;
    uint8_t *buffer = malloc(capacity);
    size_t accepted = 0;
    for (long round = 0; round < rounds; ++round) {
        const char *base = seeds[next_random(&state) % SEED_COUNT];
        size_t size = strlen(base);
        memcpy(buffer, base, size);
        size = mutate(buffer, size, capacity, &state);
        run_one(buffer, size);
        uform__tokenizer_t *tokenizer = NULL;
        const uint8_t *nul = size ? memchr(buffer, 0, size) : NULL;
        if (uform__tokenizer_from_json((const char *)buffer, nul ? (size_t)(nul - buffer) : size, &tokenizer, NULL) ==
            UFORM_OK)
            ++accepted;
        uform__tokenizer_free(tokenizer);
    }
    printf("%ld inputs replayed, %zu loaded, no crash\n", rounds, accepted);
    printf("%ld passed, 0 failed\n", rounds);
    free(buffer);
    return 0;
}

#endif
