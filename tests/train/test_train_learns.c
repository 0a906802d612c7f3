/*
 * It learns: the tiny model trained from scratch on generated captions of colours, shapes and
 * positions ("a red disc on the left") paired with pictures drawn in memory (JPEG) reaches a
 * held-out text→image recall@1 far above chance on fresh renders (new jitter) of the captions.
 * Chance is 1/24 (24 distinct captions); the test asserts R@1 ≥ 0.5, i.e. twelve times chance.
 * Runs well under a minute on two cores.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/check.h"
#include "train_test_batch.h"

#define COLOURS 6
#define SHAPES 2
#define PLACES 2
#define CAPTIONS (COLOURS * SHAPES * PLACES)

static const char *const colour_names[COLOURS] = {"red", "green", "blue", "yellow", "purple", "black"};
static const uint8_t colours[COLOURS][3] = {{220, 30, 30}, {30, 170, 40}, {30, 50, 220},
                                             {230, 200, 20}, {150, 40, 170}, {20, 20, 20}};
static const char *const shape_names[SHAPES] = {"disc", "square"};
static const char *const place_names[PLACES] = {"left", "right"};

static uint64_t random_state = 77;
static double uniform(void) {
    uint64_t z = (random_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (double)((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
}

static void caption(size_t c, char *text, size_t capacity) {
    size_t colour = c / (SHAPES * PLACES), shape = (c / PLACES) % SHAPES, place = c % PLACES;
    snprintf(text, capacity, "a %s %s on the %s", colour_names[colour], shape_names[shape], place_names[place]);
}

/* A fresh render of caption c: jittered centre and size. */
static unsigned char *render(size_t c, size_t *size) {
    size_t colour = c / (SHAPES * PLACES), shape = (c / PLACES) % SHAPES, place = c % PLACES;
    uint8_t pixels[48 * 40 * 3];
    double cx = (place ? 33 : 15) + 4 * (uniform() - 0.5), cy = 20 + 6 * (uniform() - 0.5);
    demo_draw(pixels, 48, 40, (int)shape, colours[colour], cx, cy, 8 + 3 * uniform());
    return demo_jpeg(pixels, 48, 40, size);
}

/* One step's batch: every caption once with a fresh render. */
static void make_batch(test_batch_t *batch) {
    free(batch->data);
    memset(batch, 0, sizeof *batch);
    char text[64];
    for (size_t c = 0; c < CAPTIONS; ++c) {
        size_t size;
        caption(c, text, sizeof text);
        test_batch_text(batch, text, NULL, 0);
        test_batch_media(batch, UFORM_MODALITY_IMAGE, render(c, &size), &size);
    }
    test_batch_pairs(batch, batch->count, 1);
}

static double seconds_now(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + (double)time.tv_nsec * 1e-9;
}

/* Held-out recall@1 text→image on fresh renders, through the inference verbs on a snapshot. */
static double recall_at_1(uform_trainer_t trainer, uform_executor_t executor, uform_arena_t arena) {
    uform_model_t model = NULL;
    uform_outcome_t outcome = {0};
    if (uform_trainer_snapshot(trainer, NULL, &model, &outcome) != UFORM_OK) return -1;
    test_batch_t held;
    memset(&held, 0, sizeof held);
    make_batch(&held);
    /* Texts are the even contents, images the odd ones: gather each kind into its own tape. */
    unsigned char *texts = malloc(held.used), *images = malloc(held.used);
    size_t text_offsets[CAPTIONS + 1] = {0}, image_offsets[CAPTIONS + 1] = {0};
    for (size_t c = 0; c < CAPTIONS; ++c) {
        size_t t0 = held.offsets[2 * c], t1 = held.offsets[2 * c + 1], i1 = held.offsets[2 * c + 2];
        memcpy(texts + text_offsets[c], held.data + t0, t1 - t0), text_offsets[c + 1] = text_offsets[c] + t1 - t0;
        memcpy(images + image_offsets[c], held.data + t1, i1 - t1), image_offsets[c + 1] = image_offsets[c] + i1 - t1;
    }
    float text_rows[CAPTIONS][64], image_rows[CAPTIONS][64];
    uform_text_encode_t text = {0};
    text.model = model, text.executor = executor, text.arena = arena;
    text.texts = (uform_tape_t){texts, text_offsets, CAPTIONS};
    int ok = uform_text_encode(&text) == UFORM_OK;
    for (size_t c = 0; ok && c < CAPTIONS; ++c) {
        const void *row = NULL;
        uform_matrix_row(&text.encoded.embeddings, c, &row);
        memcpy(text_rows[c], row, sizeof text_rows[c]);
    }
    uform_image_encode_t image = {0};
    image.model = model, image.executor = executor, image.arena = arena;
    image.images = (uform_tape_t){images, image_offsets, CAPTIONS};
    ok = ok && uform_image_encode(&image) == UFORM_OK;
    for (size_t c = 0; ok && c < CAPTIONS; ++c) {
        const void *row = NULL;
        uform_matrix_row(&image.encoded.embeddings, c, &row);
        memcpy(image_rows[c], row, sizeof image_rows[c]);
    }
    size_t hits = 0;
    for (size_t q = 0; ok && q < CAPTIONS; ++q) {
        size_t best = 0;
        double best_score = -INFINITY;
        for (size_t c = 0; c < CAPTIONS; ++c) {
            double score = 0;
            for (size_t k = 0; k < 64; ++k) score += (double)text_rows[q][k] * image_rows[c][k];
            if (score > best_score) best_score = score, best = c;
        }
        hits += best == q;
    }
    free(texts), free(images), free(held.data);
    uform_model_free(model);
    return ok ? (double)hits / CAPTIONS : -1;
}

int main(void) {
    uform_executor_t executor = NULL;
    uform_executor_for_ram(NULL, 2, 0, &executor, NULL);
    uform_arena_t arena = NULL;
    uform_arena_for_executor(executor, &arena, NULL);
    uform_trainer_config_t config = {0};
    config.seed = 1, config.warmup_steps = 30, config.total_steps = 400;
    config.modalities = (1u << UFORM_MODALITY_TEXT) | (1u << UFORM_MODALITY_IMAGE);
    uform_trainer_t trainer = NULL;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform_trainer_init_ram(executor, &config, &trainer, &outcome), UFORM_OK);
    if (!trainer) return check_finish();
    double before = recall_at_1(trainer, executor, arena);
    test_batch_t batch;
    memset(&batch, 0, sizeof batch);
    double start = seconds_now(), loss = 0;
    for (int s = 1; s <= (int)config.total_steps; ++s) {
        make_batch(&batch);
        uform_trainer_step_t step;
        test_batch_request(&batch, trainer, arena, &step);
        if (uform_trainer_step(&step) != UFORM_OK) {
            char line[640];
            uform_outcome_format(&step.outcome, line, sizeof line);
            fprintf(stderr, "step %d: %s\n", s, line);
            CHECK(0);
            break;
        }
        loss = step.loss;
        if (s % 100 == 0)
            printf("step %d: loss %.4f, held-out R@1 text->image %.3f (%.1f s)\n", s, loss,
                   recall_at_1(trainer, executor, arena), seconds_now() - start);
    }
    double after = recall_at_1(trainer, executor, arena);
    printf("held-out R@1 text->image: %.3f before training, %.3f after %.1f s (chance %.3f)\n", before, after,
           seconds_now() - start, 1.0 / CAPTIONS);
    CHECK_MSG(after >= 0.5, "held-out recall@1 %.3f is not far above chance %.3f", after, 1.0 / CAPTIONS);
    CHECK_MSG(loss < log((double)CAPTIONS) * 0.5, "final loss %.4f is not well below the uniform %.4f", loss,
              log((double)CAPTIONS));
    free(batch.data);
    uform_trainer_free(trainer);
    uform_arena_free(arena);
    uform_executor_free(executor);
    return check_finish();
}
