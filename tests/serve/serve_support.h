/*
 * What the batcher tests share: a tiny model with its executors, generated inputs (texts, JPEG
 * pictures, WAV recordings, choices) with their references computed one at a time by direct calls
 * on the calling thread, and jobs that tests submit and wait for. Header-only (static functions),
 * one copy per test executable.
 */
#ifndef UFORM_TESTS_SERVE_SUPPORT_H
#define UFORM_TESTS_SERVE_SUPPORT_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batcher.h"
#include "demo_media.h"

enum { SUPPORT_TEXTS = 40, SUPPORT_IMAGES = 12, SUPPORT_RECORDINGS = 4, SUPPORT_CHOICES = 6, SUPPORT_MAX_ITEMS = 8,
       SUPPORT_WIDTH_MAX = 512 };

/* An input the tests can put in a job. */
typedef struct support_input_t {
    int queue;                       /* a modality or SERVE_QUEUE_CHOOSE */
    unsigned char *bytes;
    size_t size;
    const char *choices;             /* choose */
    float reference[SUPPORT_WIDTH_MAX]; /* its embedding alone (E floats), or its choice probabilities */
} support_input_t;

typedef struct support_t {
    uform_executor_t compute, decode;
    uform_model_t model;
    size_t width;                    /* E */
    support_input_t texts[SUPPORT_TEXTS], images[SUPPORT_IMAGES], recordings[SUPPORT_RECORDINGS], choices[SUPPORT_CHOICES];
    unsigned char garbage[600];      /* no image format */
    uint64_t spin_us;                /* the batchers' spin_us (0 at open) */
} support_t;

/* A job with room for its items and outputs; `calls` counts `done`. */
typedef struct support_job_t {
    serve_job_t job;
    serve_item_t items[SUPPORT_MAX_ITEMS];
    float outputs[SUPPORT_MAX_ITEMS][SUPPORT_WIDTH_MAX];
    const support_input_t *inputs[SUPPORT_MAX_ITEMS];
    pthread_mutex_t lock;
    pthread_cond_t finished;
    int calls;
} support_job_t;

static void support_done(serve_job_t *job) {
    support_job_t *own = job->context;
    pthread_mutex_lock(&own->lock);
    own->calls += 1;
    pthread_cond_broadcast(&own->finished);
    pthread_mutex_unlock(&own->lock);
}

static void support_job_init(support_job_t *own) {
    memset(&own->job, 0, sizeof own->job);
    own->job.items = own->items, own->job.done = support_done, own->job.context = own;
    own->calls = 0;
    pthread_mutex_init(&own->lock, NULL);
    pthread_cond_init(&own->finished, NULL);
}

static void support_job_destroy(support_job_t *own) {
    pthread_mutex_destroy(&own->lock);
    pthread_cond_destroy(&own->finished);
}

/* Appends an input as the job's next item. */
static void support_job_add(support_job_t *own, const support_input_t *input) {
    size_t i = own->job.count++;
    serve_item_t *item = &own->items[i];
    memset(item, 0, sizeof *item);
    item->job = &own->job, item->index = i, item->queue = input->queue;
    item->bytes = input->bytes, item->size = input->size, item->output = own->outputs[i];
    if (input->choices) item->choices = (const unsigned char *)input->choices, item->choices_size = strlen(input->choices);
    own->inputs[i] = input;
}

static void support_job_wait(support_job_t *own) {
    pthread_mutex_lock(&own->lock);
    while (own->calls == 0) pthread_cond_wait(&own->finished, &own->lock);
    pthread_mutex_unlock(&own->lock);
}

static int support_fail(const char *what, const uform_outcome_t *outcome) {
    char line[600];
    uform_outcome_format(outcome, line, sizeof line);
    fprintf(stderr, "%s: %s\n", what, line);
    return -1;
}

/* One input's embedding alone, on the calling thread. */
static int support_reference(support_t *s, support_input_t *input, uform_arena_t arena) {
    size_t offsets[2] = {0, input->size};
    uform_tape_t tape = {input->bytes, offsets, 1};
    uform_encoded_t *encoded;
    uform_outcome_t *outcome;
    uform_status_t status;
    uform_text_encode_t text = {s->model, NULL, UFORM_COMPLETION_BLOCKING, tape, UFORM_OUTPUTS_EMBEDDINGS, arena};
    uform_image_encode_t image = {s->model, NULL, UFORM_COMPLETION_BLOCKING, tape, UFORM_OUTPUTS_EMBEDDINGS, arena};
    uform_audio_encode_t audio = {s->model, NULL, UFORM_COMPLETION_BLOCKING, tape, UFORM_OUTPUTS_EMBEDDINGS, arena};
    if (input->queue == UFORM_MODALITY_TEXT) status = uform_text_encode(&text), encoded = &text.encoded, outcome = &text.outcome;
    else if (input->queue == UFORM_MODALITY_IMAGE) status = uform_image_encode(&image), encoded = &image.encoded, outcome = &image.outcome;
    else status = uform_audio_encode(&audio), encoded = &audio.encoded, outcome = &audio.outcome;
    if (status != UFORM_OK) return support_fail("reference encode", outcome);
    const void *row = NULL;
    uform_matrix_row(&encoded->embeddings, 0, &row);
    memcpy(input->reference, row, s->width * sizeof(float));
    return 0;
}

static int support_choice_reference(support_t *s, support_input_t *input, uform_arena_t arena) {
    size_t text_offsets[2] = {0, input->size}, choice_offsets[2] = {0, strlen(input->choices)};
    uform_text_choose_t request = {0};
    request.model = s->model, request.arena = arena;
    request.texts = (uform_tape_t){input->bytes, text_offsets, 1};
    request.choices = (uform_tape_t){input->choices, choice_offsets, 1};
    if (uform_text_choose(&request) != UFORM_OK) return support_fail("reference choose", &request.outcome);
    for (size_t c = 0; c < choice_offsets[1]; ++c) {
        const void *row = NULL;
        uform_matrix_row(&request.probabilities.matrix, c, &row);
        input->reference[c] = *(const float *)row;
    }
    return 0;
}

/* Loads the model and makes the inputs and their references. */
static int support_open(support_t *s, const char *checkpoint, size_t threads) {
    memset(s, 0, sizeof *s);
    uform_outcome_t outcome = {0};
    if (uform_executor_for_ram(NULL, threads, 0, &s->compute, &outcome) != UFORM_OK ||
        uform_executor_for_ram(NULL, 1, 0, &s->decode, &outcome) != UFORM_OK ||
        uform_model_load_ram(s->compute, checkpoint, NULL, &s->model, &outcome) != UFORM_OK)
        return support_fail("setup", &outcome);
    uform_model_describe_t describe = {s->model};
    uform_model_describe(&describe);
    s->width = describe.description.embedding;
    if (s->width > SUPPORT_WIDTH_MAX) return fprintf(stderr, "the model is wider than %d\n", SUPPORT_WIDTH_MAX), -1;
    uform_arena_t arena = NULL;
    uform_arena_for_host(&arena, NULL);
    static const char *const colours[] = {"red", "green", "blue", "yellow", "purple", "orange", "black", "white"};
    static const char *const shapes[] = {"circle", "square", "star", "cross", "triangle"};
    for (int i = 0; i < SUPPORT_TEXTS; ++i) {
        char text[96];
        int length = snprintf(text, sizeof text, "a %s %s, number %d%s", colours[i % 8], shapes[i % 5], i,
                              i % 7 == 0 ? " with a caption long enough to pass the model's sixty-four text bytes" : "");
        s->texts[i].queue = UFORM_MODALITY_TEXT, s->texts[i].bytes = (unsigned char *)strdup(text);
        s->texts[i].size = (size_t)length;
        if (support_reference(s, &s->texts[i], arena)) return -1;
    }
    for (int i = 0; i < SUPPORT_IMAGES; ++i) {
        size_t width = 48 + 8 * (size_t)i, height = 40 + 4 * (size_t)i;
        uint8_t *pixels = malloc(width * height * 3), rgb[3] = {(uint8_t)(40 * i), (uint8_t)(255 - 20 * i), (uint8_t)(90 + 13 * i)};
        demo_draw(pixels, width, height, i % 2, rgb, (double)width * (0.3 + 0.04 * i), (double)height / 2, (double)height / 4);
        s->images[i].queue = UFORM_MODALITY_IMAGE;
        s->images[i].bytes = demo_jpeg(pixels, width, height, &s->images[i].size);
        free(pixels);
        if (!s->images[i].bytes || support_reference(s, &s->images[i], arena)) return -1;
    }
    for (int i = 0; i < SUPPORT_RECORDINGS; ++i) {
        s->recordings[i].queue = UFORM_MODALITY_AUDIO;
        s->recordings[i].bytes = demo_wav(220.0 * (i + 1), 16000, 1 + i % 2, 0.5 + 0.25 * i, &s->recordings[i].size);
        if (!s->recordings[i].bytes || support_reference(s, &s->recordings[i], arena)) return -1;
    }
    static const char *const choices[SUPPORT_CHOICES] = {"oa", "yn", "abc", "01", "xyz!", "e"};
    for (int i = 0; i < SUPPORT_CHOICES; ++i) {
        /* One (with four choices) longer than the model's 64 text bytes: the library keeps its last bytes,
         * in a batch as alone. */
        char text[160];
        int length = snprintf(text, sizeof text, "%squestion %d: yes or n",
                              i == 4 ? "a long preamble that pushes the prefix past sixty-four bytes, "
                                                         "so that only its tail reaches the model: " : "", i);
        s->choices[i].queue = SERVE_QUEUE_CHOOSE, s->choices[i].bytes = (unsigned char *)strdup(text);
        s->choices[i].size = (size_t)length, s->choices[i].choices = choices[i];
        if (support_choice_reference(s, &s->choices[i], arena)) return -1;
    }
    for (size_t i = 0; i < sizeof s->garbage; ++i) s->garbage[i] = (unsigned char)(i * 37 + 11);

    uform_arena_free(arena);
    return 0;
}

static void support_close(support_t *s) {
    support_input_t *all[] = {s->texts, s->images, s->recordings, s->choices};
    size_t counts[] = {SUPPORT_TEXTS, SUPPORT_IMAGES, SUPPORT_RECORDINGS, SUPPORT_CHOICES};
    for (int k = 0; k < 4; ++k)
        for (size_t i = 0; i < counts[k]; ++i) free(all[k][i].bytes);
    uform_model_free(s->model);
    uform_executor_free(s->decode);
    uform_executor_free(s->compute);
}

static serve_batcher_t *support_batcher(support_t *s, size_t max_batch, uint64_t max_wait_us, size_t max_queue,
                                        serve_metrics_t *metrics) {
    serve_batcher_config_t config = {0};
    config.model = s->model, config.compute = s->compute, config.decode = s->decode;
    config.max_batch = max_batch, config.max_wait_us = max_wait_us, config.max_queue = max_queue, config.metrics = metrics;
    config.spin_us = s->spin_us;
    serve_batcher_t *batcher = NULL;
    char error[512];
    if (serve_batcher_start(&config, &batcher, error, sizeof error) != 0) fprintf(stderr, "batcher: %s\n", error);
    return batcher;
}

#endif
