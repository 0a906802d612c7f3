/*
 * A training batch built in memory for the trainer's tests: contents (text, or media files made by
 * the codecs' encoders through tests/fixtures/demo_media.c), per-content choices and targets, and helpers to
 * fill a uform_trainer_step_t. Header-only; each test includes it once.
 */
#ifndef UFORM_TESTS_TRAIN_TEST_BATCH_H
#define UFORM_TESTS_TRAIN_TEST_BATCH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo_media.h"
#include "uform/uform.h"

#define TEST_BATCH_MAX 256

typedef struct test_batch_t {
    unsigned char *data;
    size_t offsets[TEST_BATCH_MAX + 1];
    uform_modality_t modalities[TEST_BATCH_MAX];
    char choices[4096];
    size_t choice_offsets[TEST_BATCH_MAX + 1];
    uint8_t targets[TEST_BATCH_MAX];
    size_t count, used, choice_used;
    /* the step's structure */
    size_t bags[TEST_BATCH_MAX + 1], bag_count;
    uint8_t sides[TEST_BATCH_MAX];
    size_t lefts[TEST_BATCH_MAX], rights[TEST_BATCH_MAX], groups[TEST_BATCH_MAX], relations;
} test_batch_t;

static inline void test_batch_add(test_batch_t *batch, uform_modality_t modality, const void *bytes, size_t length,
                           const char *legal, char target) {
    if (batch->count == TEST_BATCH_MAX) {
        fprintf(stderr, "test batch: more than %d contents\n", TEST_BATCH_MAX);
        exit(1);
    }
    batch->data = realloc(batch->data, batch->used + length + 1);
    memcpy(batch->data + batch->used, bytes, length);
    batch->used += length;
    size_t i = batch->count++;
    batch->offsets[0] = 0, batch->offsets[i + 1] = batch->used;
    batch->modalities[i] = modality;
    size_t legal_length = legal ? strlen(legal) : 0;
    memcpy(batch->choices + batch->choice_used, legal ? legal : "", legal_length);
    batch->choice_used += legal_length;
    batch->choice_offsets[0] = 0, batch->choice_offsets[i + 1] = batch->choice_used;
    batch->targets[i] = (uint8_t)target;
}

static inline void test_batch_text(test_batch_t *batch, const char *text, const char *legal, char target) {
    test_batch_add(batch, UFORM_MODALITY_TEXT, text, strlen(text), legal, target);
}

/* Takes a media file made by an encoder; `size` was written by the call that made `bytes`. */
static inline void test_batch_media(test_batch_t *batch, uform_modality_t modality, unsigned char *bytes, const size_t *size) {
    if (!bytes) {
        fprintf(stderr, "test batch: a media encoder failed\n");
        exit(1);
    }
    test_batch_add(batch, modality, bytes, *size, NULL, 0);
    free(bytes);
}

/* A 48×40 JPEG of a disc (shape 0) or square (shape 1) of colour `rgb` centred at (cx, 20). */
static inline unsigned char *test_picture(int shape, const uint8_t rgb[3], double cx, size_t *size) {
    uint8_t pixels[48 * 40 * 3];
    demo_draw(pixels, 48, 40, shape, rgb, cx, 20, 12);
    return demo_jpeg(pixels, 48, 40, size);
}

/* Makes bag j of content j for the first `bagged` contents, sides alternating 0, 1, and a relation
 * between every even bag and the next, in group r % groups. */
static inline void test_batch_pairs(test_batch_t *batch, size_t bagged, size_t groups) {
    batch->bag_count = bagged;
    for (size_t j = 0; j <= bagged; ++j) batch->bags[j] = j;
    for (size_t j = 0; j < bagged; ++j) batch->sides[j] = (uint8_t)(j % 2);
    batch->relations = bagged / 2;
    for (size_t r = 0; r < batch->relations; ++r)
        batch->lefts[r] = 2 * r, batch->rights[r] = 2 * r + 1, batch->groups[r] = r % groups;
}

/* Fills a step request with the batch (choices only when some content has them). */
static inline void test_batch_request(const test_batch_t *batch, uform_trainer_t trainer, uform_arena_t arena,
                               uform_trainer_step_t *step) {
    memset(step, 0, sizeof *step);
    step->trainer = trainer, step->arena = arena;
    step->modalities = batch->modalities;
    step->contents.data = batch->data, step->contents.offsets = batch->offsets, step->contents.count = batch->count;
    step->bags = batch->bag_count ? batch->bags : NULL, step->bag_count = batch->bag_count;
    step->sides = batch->bag_count ? batch->sides : NULL;
    step->relations.lefts = batch->lefts, step->relations.rights = batch->rights;
    step->relations.groups = batch->groups, step->relations.count = batch->relations;
    if (batch->choice_used) {
        step->choices.data = batch->choices, step->choices.offsets = batch->choice_offsets;
        step->choices.count = batch->count;
        step->choice_targets = batch->targets;
    }
}

#endif
