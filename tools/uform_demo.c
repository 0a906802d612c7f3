/*
 * `make demo`: the main job on an embedded default, end to end through the public verbs.
 *
 * It writes the tiny checkpoint (random weights from a fixed seed, model.md), makes a few images,
 * recordings and clips in memory with the codecs' own encoders, encodes texts, images, audio and
 * video on an executor with a progress bar, and prints the cross-modal cosine-similarity table of
 * the embeddings plus what each call measured. The weights are random until the trainer lands, so
 * the similarities show the pipeline working end to end, not meaning.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "demo_media.h"
#include "model/layout.h"
#include "uform/uform.h"

enum { max_items = 16, embedding_width = 64 };

typedef struct row_t {
    char label[40];
    float embedding[embedding_width];
} row_t;

static row_t rows[max_items];
static size_t row_count;

static int report(const char *what, const uform_outcome_t *outcome) {
    char line[640];
    uform_outcome_format(outcome, line, sizeof line);
    fprintf(stderr, "demo: %s: %s\n", what, line);
    return 1;
}

static uform_continuation_t bar(size_t completed, size_t total, void *state) {
    int width = 24, filled = total ? (int)(completed * (size_t)width / total) : width;
    fprintf(stderr, "\r  %-8s [%.*s%*s]", (const char *)state, filled, "########################", width - filled, "");
    if (completed == total) fputc('\n', stderr);
    return UFORM_CONTINUE;
}

typedef struct batch_t {
    unsigned char *data;
    size_t offsets[max_items + 1];
    size_t count, used;
    const char *labels[max_items];
} batch_t;

static void add(batch_t *batch, const char *label, const void *bytes, size_t size) {
    batch->data = realloc(batch->data, batch->used + size);
    memcpy(batch->data + batch->used, bytes, size);
    batch->offsets[batch->count] = batch->used;
    batch->used += size;
    batch->labels[batch->count++] = label;
    batch->offsets[batch->count] = batch->used;
}

static void keep(const batch_t *batch, const char *prefix, const uform_matrix_t *embeddings) {
    for (size_t i = 0; i < batch->count && row_count < max_items; ++i) {
        const void *row = NULL;
        if (uform_matrix_row(embeddings, i, &row) != UFORM_OK) continue;
        snprintf(rows[row_count].label, sizeof rows[row_count].label, "%s %s", prefix, batch->labels[i]);
        memcpy(rows[row_count].embedding, row, sizeof rows[row_count].embedding);
        row_count += 1;
    }
}

static void print_stats(const char *what, const uform_encode_stats_t *stats) {
    printf("  %-6s %zu items, %5zu tokens, decode %6.1f ms, compute %6.1f ms, %.2f GFLOP\n", what, stats->items,
           stats->tokens, stats->decode_seconds * 1e3, stats->compute_seconds * 1e3, stats->flops * 1e-9);
}

int main(int argc, char **argv) {
    const char *directory = argc > 1 ? argv[1] : "build/demo";
    char checkpoint[512], command[600];
    snprintf(command, sizeof command, "mkdir -p '%s'", directory);
    if (system(command) != 0) return 1;
    snprintf(checkpoint, sizeof checkpoint, "%s/tiny.safetensors", directory);
    int major, minor, patch;
    uform_version(&major, &minor, &patch);
    printf("UForm %d.%d.%d demo on %s\n\n", major, minor, patch, uform_cpu_class_name(uform_cpu_class_detect()));

    /* 1. The embedded default: the tiny checkpoint, every modality, weights from seed 42. */
    uform_outcome_t outcome = {0};
    uform__model_config_t config;
    uform__model_config_named("tiny", &config, NULL, "demo");
    if (uform__model_write_random(checkpoint, &config, 42, &outcome, "demo") != UFORM_OK) return report("checkpoint", &outcome);
    printf("1. Wrote %s (tiny: d=128, 2 blocks, 4 modalities; random weights, seed 42).\n", checkpoint);

    uform_executor_t executor = NULL;
    uform_model_t model = NULL;
    uform_arena_t arena = NULL;
    if (uform_executor_for_ram(NULL, 0, 0, &executor, &outcome) != UFORM_OK) return report("executor", &outcome);
    if (uform_model_load_ram(executor, checkpoint, NULL, &model, &outcome) != UFORM_OK) return report("load", &outcome);
    if (uform_arena_for_executor(executor, &arena, &outcome) != UFORM_OK) return report("arena", &outcome);
    printf("2. Loaded it on an executor with %zu thread(s).\n", uform_executor_threads(executor));

    /* 2. Media made in memory. */
    enum { side = 96 };
    static uint8_t pixels[side * side * 3];
    const uint8_t red[3] = {220, 30, 30}, blue[3] = {30, 60, 220}, green[3] = {40, 170, 60};
    batch_t images = {0}, sounds = {0}, clips = {0}, texts = {0};
    size_t size = 0;
    unsigned char *bytes;
    demo_draw(pixels, side, side, 0, red, side / 2.0, side / 2.0, side / 3.0);
    if ((bytes = demo_jpeg(pixels, side, side, &size))) add(&images, "red disc (JPEG)", bytes, size), free(bytes);
    demo_draw(pixels, side, side, 1, blue, side / 2.0, side / 2.0, side / 4.0);
    if ((bytes = demo_webp(pixels, side, side, &size))) add(&images, "blue square (WebP)", bytes, size), free(bytes);
    demo_draw(pixels, side, side, 0, green, side / 3.0, side / 3.0, side / 5.0);
    if ((bytes = demo_jpeg(pixels, side, side, &size))) add(&images, "green dot (JPEG)", bytes, size), free(bytes);
    if ((bytes = demo_wav(110, 44100, 2, 1.5, &size))) add(&sounds, "low hum (WAV)", bytes, size), free(bytes);
    if ((bytes = demo_wav(1760, 16000, 1, 1.0, &size))) add(&sounds, "whistle (WAV)", bytes, size), free(bytes);
    if ((bytes = demo_mp4(red, 64, 48, 12, &size))) add(&clips, "red ball (MP4)", bytes, size), free(bytes);
    if ((bytes = demo_mp4(blue, 64, 48, 12, &size))) add(&clips, "blue ball (MP4)", bytes, size), free(bytes);
    const char *phrases[] = {"a red disc", "a blue square", "a low hum", "a high whistle", "a rolling ball"};
    for (size_t i = 0; i < 5; ++i) add(&texts, phrases[i], phrases[i], strlen(phrases[i]));
    printf("3. Made %zu images, %zu recordings and %zu clips in memory; encoding them with %zu texts:\n", images.count,
           sounds.count, clips.count, texts.count);
    fflush(stdout);

    uform_encode_stats_t stats[4] = {{0}};
    int failures = 0;
    {
        uform_text_encode_t request = {model, executor, UFORM_COMPLETION_BLOCKING, {texts.data, texts.offsets, texts.count},
                                       UFORM_OUTPUTS_EMBEDDINGS, arena, {UFORM_SCALAR_F32, {bar, "texts", 0}, &stats[0], 0}};
        if (uform_text_encode(&request) == UFORM_OK) keep(&texts, "text ", &request.encoded.embeddings);
        else failures += report("texts", &request.outcome);
    }
    {
        uform_image_encode_t request = {model, executor, UFORM_COMPLETION_BLOCKING, {images.data, images.offsets, images.count},
                                        UFORM_OUTPUTS_EMBEDDINGS, arena, {UFORM_SCALAR_F32, {bar, "images", 0}, &stats[1], 0}};
        if (uform_image_encode(&request) == UFORM_OK) keep(&images, "image", &request.encoded.embeddings);
        else failures += report("images", &request.outcome);
    }
    {
        uform_audio_encode_t request = {model, executor, UFORM_COMPLETION_BLOCKING, {sounds.data, sounds.offsets, sounds.count},
                                        UFORM_OUTPUTS_EMBEDDINGS, arena, {UFORM_SCALAR_F32, {bar, "audio", 0}, &stats[2], 0}};
        if (uform_audio_encode(&request) == UFORM_OK) keep(&sounds, "audio", &request.encoded.embeddings);
        else failures += report("audio", &request.outcome);
    }
    if (clips.count) {
        uform_video_encode_t request = {model, executor, UFORM_COMPLETION_BLOCKING, {clips.data, clips.offsets, clips.count},
                                        UFORM_OUTPUTS_EMBEDDINGS, arena, {UFORM_SCALAR_F32, {bar, "video", 0}, &stats[3], 0}};
        if (uform_video_encode(&request) == UFORM_OK) keep(&clips, "video", &request.encoded.embeddings);
        else failures += report("video", &request.outcome);
    } else {
        printf("  (no clips: this build has no FFmpeg)\n");
    }
    const char *names[4] = {"texts", "images", "audio", "video"};
    printf("\n4. What each call measured:\n");
    for (int m = 0; m < 4; ++m)
        if (stats[m].items) print_stats(names[m], &stats[m]);

    printf("\n5. Cosine similarity of the embeddings (one shared %d-dimensional space):\n\n%-28s", embedding_width, "");
    for (size_t j = 0; j < row_count; ++j) printf(" %5zu", j + 1);
    printf("\n");
    for (size_t i = 0; i < row_count; ++i) {
        printf("%2zu %-25.25s", i + 1, rows[i].label);
        for (size_t j = 0; j < row_count; ++j) {
            double dot = 0;
            for (size_t c = 0; c < embedding_width; ++c) dot += (double)rows[i].embedding[c] * rows[j].embedding[c];
            printf(" %5.2f", dot);
        }
        printf("\n");
    }
    printf("\nThe weights are random (the trainer is not in the library yet), so these numbers show every\n"
           "modality travelling the whole pipeline into one space, not what the pictures mean.\n"
           "Next: `build/tools/uform encode %s --text \"a cat\"`, or `uform describe`.\n", checkpoint);
    free(images.data), free(sounds.data), free(clips.data), free(texts.data);
    uform_arena_free(arena);
    uform_model_free(model);
    uform_executor_free(executor);
    return failures ? 1 : 0;
}
