/*
 * Fuzz target for the SentencePiece readers: the first byte picks what the rest is read as,
 *   0: a .model (uform__sp_model_from_bytes), then, if it loads, encoded on fixed texts and on the
 *      input's own bytes, plain and through SigLIP's handling;
 *   1: a charsmap (uform__sp_precompiled_from_bytes), then normalising fixed texts and the input;
 *   2: a tokenizer.json entry (JSON) read as a Unigram model, a Precompiled normalizer and a
 *      Metaspace pre-tokenizer, each used when it loads.
 * Any status is fine; a crash, an over-read (ASan) or a failure without a message is not.
 *
 * Without UFORM_SP_LIBFUZZER this file carries its own replay driver, so a gcc build runs it as a
 * normal test:   sp_model_fuzz_replay [--rounds N] [--seed S]   mutates the seeds N times
 *                sp_model_fuzz_replay --seeds DIR                writes the seeds into DIR
 *                sp_model_fuzz_replay FILE...                    replays files (crashes, a corpus)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/json.h"
#include "text/sentencepiece.h"
#include "text/sp_sample.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const texts[] = {"Hello world", "  A\tB  c ", "\xE2\x96\x81x</s>y<unk>", "caf\xC3\xA9 \xE4\xBD\xA0",
                                    "\xFF\xFE"};

static void require_message(uform_status_t status, const uform_outcome_t *outcome) {
    if (status != UFORM_OK && outcome->message[0] == 0) __builtin_trap();
}

static void fuzz_model(const uint8_t *data, size_t size) {
    uform__sp_model_t *model = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform__sp_model_from_bytes(data, size, NULL, &model, &outcome);
    require_message(status, &outcome);
    if (status != UFORM_OK) return;
    for (size_t i = 0; i <= sizeof texts / sizeof texts[0]; ++i) {
        const char *text = i < sizeof texts / sizeof texts[0] ? texts[i] : (const char *)data;
        size_t length = i < sizeof texts / sizeof texts[0] ? strlen(text) : (size < 256 ? size : 256);
        uform__text_ids_t ids = {0};
        require_message(uform__sp_model_encode(model, text, length, &ids, &outcome), &outcome);
        for (size_t k = 0; k < ids.count; ++k)
            if (ids.data[k] >= uform__sp_model_size(model)) __builtin_trap();
        ids.count = 0;
        require_message(uform__sp_siglip_encode(model, text, length, NULL, &ids, &outcome), &outcome);
        uform__text_ids_free(&ids);
    }
    uform__sp_model_free(model);
}

static void fuzz_charsmap(const uint8_t *data, size_t size) {
    uform__sp_precompiled_t *precompiled = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform__sp_precompiled_from_bytes(data, size, &precompiled, &outcome);
    require_message(status, &outcome);
    if (status != UFORM_OK) return;
    for (size_t i = 0; i <= sizeof texts / sizeof texts[0]; ++i) {
        const char *text = i < sizeof texts / sizeof texts[0] ? texts[i] : (const char *)data;
        size_t length = i < sizeof texts / sizeof texts[0] ? strlen(text) : (size < 256 ? size : 256);
        uform__text_string_t out = {0};
        require_message(uform__sp_precompiled_normalize(precompiled, text, length, &out, &outcome), &outcome);
        uform__text_string_free(&out);
    }
    uform__sp_precompiled_free(precompiled);
}

static void fuzz_json(const uint8_t *data, size_t size) {
    cJSON *json = NULL;
    if (uform__json_parse((const char *)data, size, &json, NULL, NULL) != UFORM_OK) return;
    uform_outcome_t outcome = {0};
    uform__sp_unigram_t *unigram = NULL;
    uform_status_t status = uform__sp_unigram_from_json(json, &unigram, &outcome);
    require_message(status, &outcome);
    uform__sp_precompiled_t *precompiled = NULL;
    status = uform__sp_precompiled_from_json(json, &precompiled, &outcome);
    require_message(status, &outcome);
    uform__sp_metaspace_t metaspace;
    status = uform__sp_metaspace_from_json(json, &metaspace, &outcome);
    require_message(status, &outcome);
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; ++i) {
        uform__text_ids_t ids = {0};
        uform__text_string_t out = {0};
        uform__sp_spans_t words = {0};
        if (unigram) require_message(uform__sp_unigram_encode(unigram, texts[i], strlen(texts[i]), &ids, &outcome), &outcome);
        if (precompiled)
            require_message(uform__sp_precompiled_normalize(precompiled, texts[i], strlen(texts[i]), &out, &outcome), &outcome);
        if (status == UFORM_OK)
            require_message(uform__sp_metaspace_apply(&metaspace, texts[i], strlen(texts[i]), 1, &out, &words, &outcome), &outcome);
        uform__text_ids_free(&ids);
        uform__text_string_free(&out);
        uform__sp_spans_free(&words);
    }
    uform__sp_unigram_free(unigram);
    uform__sp_precompiled_free(precompiled);
    cJSON_Delete(json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    switch (data[0] % 3) {
    case 0: fuzz_model(data + 1, size - 1); break;
    case 1: fuzz_charsmap(data + 1, size - 1); break;
    default: fuzz_json(data + 1, size - 1); break;
    }
    return 0;
}

#ifndef UFORM_SP_LIBFUZZER
#define SEED_COUNT 4

/* The seeds: the sample model, the sample charsmap, a Unigram and a Metaspace entry; each led by its mode byte. */
static sp_buffer_t make_seed(int index) {
    sp_buffer_t seed = {0}, body = {0};
    unsigned char mode = (unsigned char)(index < 2 ? index : 2);
    sp_put(&seed, &mode, 1);
    if (index == 0) body = sp_sample_model();
    else if (index == 1) body = sp_sample_charsmap();
    else {
        const char *json = index == 2 ? "{\"type\":\"Unigram\",\"unk_id\":0,\"byte_fallback\":true,\"vocab\":[[\"<unk>\",0],"
                                        "[\"\\u2581\",-1],[\"a\",-2],[\"ab\",-1.5],[\"<0x41>\",0]]}"
                                      : "{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\",\"prepend_scheme\":\"first\"}";
        sp_put(&body, json, strlen(json));
    }
    sp_put(&seed, body.data, body.size);
    free(body.data);
    return seed;
}

static uint64_t next_random(uint64_t *state) {
    *state ^= *state << 13, *state ^= *state >> 7, *state ^= *state << 17;
    return *state;
}

static void run_one(const uint8_t *bytes, size_t size) {
    uint8_t *exact = malloc(size ? size : 1);
    if (!exact) exit(1);
    if (size) memcpy(exact, bytes, size);
    LLVMFuzzerTestOneInput(exact, size);
    free(exact);
}

int main(int argc, char **argv) {
    long rounds = 5000;
    uint64_t state = 0x5eed5eedULL;
    if (argc == 3 && strcmp(argv[1], "--seeds") == 0) {
        char command[4096];
        snprintf(command, sizeof command, "mkdir -p '%s'", argv[2]);
        if (system(command) != 0) return 1;
        for (int i = 0; i < SEED_COUNT; ++i) {
            sp_buffer_t seed = make_seed(i);
            char path[4096];
            snprintf(path, sizeof path, "%s/seed%d", argv[2], i);
            FILE *file = fopen(path, "wb");
            if (!file || fwrite(seed.data, 1, seed.size, file) != seed.size) return 1;
            fclose(file);
            free(seed.data);
        }
        return 0;
    }
    int replayed = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) rounds = atol(argv[++i]);
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) state = strtoull(argv[++i], NULL, 0) | 1;
        else {
            FILE *file = fopen(argv[i], "rb");
            if (!file) return 1;
            static uint8_t buffer[1 << 20];
            size_t size = fread(buffer, 1, sizeof buffer, file);
            fclose(file);
            run_one(buffer, size);
            ++replayed;
        }
    }
    if (replayed) {
        printf("%d passed, 0 failed\n", replayed);
        return 0;
    }
    sp_buffer_t seeds[SEED_COUNT];
    for (int i = 0; i < SEED_COUNT; ++i) seeds[i] = make_seed(i), run_one(seeds[i].data, seeds[i].size);
    uint8_t *work = malloc(1 << 16);
    if (!work) return 1;
    for (long round = 0; round < rounds; ++round) {
        const sp_buffer_t *seed = &seeds[next_random(&state) % SEED_COUNT];
        size_t size = seed->size;
        memcpy(work, seed->data, size);
        int edits = 1 + (int)(next_random(&state) % 4);
        for (int e = 0; e < edits; ++e) {
            uint64_t r = next_random(&state);
            size_t at = size > 1 ? 1 + (size_t)(r >> 8) % (size - 1) : 0;
            switch (r % 5) {
            case 0: if (size > 1) work[at] ^= (uint8_t)(1u << ((r >> 40) % 8)); break;      /* flip a bit */
            case 1: if (size > 1) work[at] = (uint8_t)(r >> 32); break;                      /* set a byte */
            case 2: if (size > 1) size = at; break;                                           /* truncate */
            case 3: if (size + 1 < (1 << 16)) {                                               /* insert a byte */
                        memmove(work + at + 1, work + at, size - at), work[at] = (uint8_t)(r >> 24), ++size;
                    }
                    break;
            default: if (size > at + 1) memmove(work + at, work + at + 1, size - at - 1), --size; /* delete */
            }
        }
        run_one(work, size);
    }
    free(work);
    for (int i = 0; i < SEED_COUNT; ++i) free(seeds[i].data);
    printf("%ld passed, 0 failed\n", rounds + SEED_COUNT);
    return 0;
}
#endif
