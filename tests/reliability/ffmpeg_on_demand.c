/*
 * FFmpeg is loaded only when a call needs it. Linked against the shared libuform, like a user's
 * program, through the public header only.
 *
 *   reliability_ffmpeg_on_demand CHECKPOINT FIXTURES [--missing]
 *
 * Text, JPEG, PNG, WebP and WAV encode with no FFmpeg library mapped (checked in
 * /proc/self/maps), and neither is libnuma, nor the collectives (the module libuform-gloo.so.4,
 * Gloo, libstdc++: mesh_on_demand.c). Then:
 *   default     a video encode succeeds, and only now are libavcodec and libavformat mapped;
 *   --missing   (run with UFORM_FFMPEG_DIR pointing at an empty folder) video, MP3 and GIF answer
 *               UFORM_UNSUPPORTED with a message naming libavutil.so.57 and UFORM_FFMPEG_DIR, and
 *               everything else still works afterwards; still no FFmpeg mapped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "reliability/mapped.h"
#include "uform/uform.h"

static const char *fixtures;

static unsigned char *read_fixture(const char *name, size_t *size) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", fixtures, name);
    FILE *file = fopen(path, "rb");
    if (!file) {
        fprintf(stderr, "missing fixture %s\n", path);
        exit(1);
    }
    fseek(file, 0, SEEK_END);
    long length = ftell(file);
    fseek(file, 0, SEEK_SET);
    unsigned char *bytes = malloc((size_t)length);
    if (!bytes || fread(bytes, 1, (size_t)length, file) != (size_t)length) exit(1);
    fclose(file);
    *size = (size_t)length;
    return bytes;
}

typedef enum { kind_text, kind_image, kind_audio, kind_video } kind_t;

/* Encodes one item; answers the status and copies the outcome's message. */
static uform_status_t encode(uform_model_t model, uform_arena_t arena, kind_t kind, const char *name, char *message) {
    size_t size = 0, offsets[2];
    unsigned char *bytes = kind == kind_text ? (unsigned char *)strdup(name) : read_fixture(name, &size);
    if (kind == kind_text) size = strlen(name);
    offsets[0] = 0, offsets[1] = size;
    uform_tape_t tape = {bytes, offsets, 1};
    uform_status_t status;
    uform_outcome_t outcome = {0};
    if (kind == kind_text) {
        uform_text_encode_t request = {model, NULL, UFORM_COMPLETION_BLOCKING, tape, UFORM_OUTPUTS_EMBEDDINGS, arena};
        status = uform_text_encode(&request);
        outcome = request.outcome;
    } else if (kind == kind_image) {
        uform_image_encode_t request = {model, NULL, UFORM_COMPLETION_BLOCKING, tape, UFORM_OUTPUTS_EMBEDDINGS, arena};
        status = uform_image_encode(&request);
        outcome = request.outcome;
    } else if (kind == kind_audio) {
        uform_audio_encode_t request = {model, NULL, UFORM_COMPLETION_BLOCKING, tape, UFORM_OUTPUTS_EMBEDDINGS, arena};
        status = uform_audio_encode(&request);
        outcome = request.outcome;
    } else {
        uform_video_encode_t request = {model, NULL, UFORM_COMPLETION_BLOCKING, tape, UFORM_OUTPUTS_EMBEDDINGS, arena};
        status = uform_video_encode(&request);
        outcome = request.outcome;
    }
    snprintf(message, UFORM_OUTCOME_MESSAGE_CAPACITY, "%s", outcome.message);
    free(bytes);
    return status;
}

/* Everything that never needs FFmpeg. */
static void encode_without_ffmpeg(uform_model_t model, uform_arena_t arena) {
    static const struct { kind_t kind; const char *name; } items[] = {
        {kind_text, "a text needs no codec"}, {kind_image, "baseline.jpg"}, {kind_image, "rgba.png"},
        {kind_image, "lossy.webp"},           {kind_audio, "pcm16.wav"},
    };
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
    for (size_t i = 0; i < sizeof items / sizeof items[0]; ++i) {
        uform_status_t status = encode(model, arena, items[i].kind, items[i].name, message);
        CHECK_MSG(status == UFORM_OK, "%s: %s: %s", items[i].name, uform_status_name(status), message);
    }
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: reliability_ffmpeg_on_demand CHECKPOINT FIXTURES [--missing]\n");
        return 2;
    }
    fixtures = argv[2];
    int missing = argc > 3 && !strcmp(argv[3], "--missing");
    uform_model_t model = NULL;
    uform_arena_t arena = NULL;
    uform_outcome_t outcome = {0};
    if (uform_model_load_ram(NULL, argv[1], NULL, &model, &outcome) != UFORM_OK || uform_arena_for_host(&arena, &outcome) != UFORM_OK) {
        fprintf(stderr, "setup: %s\n", outcome.message);
        return 1;
    }
    CHECK_EQ_INT(mapped("libav", 0), 0);
    CHECK_EQ_INT(mapped("libsw", 0), 0);
    CHECK_EQ_INT(mapped("libnuma", 0), 0);
    encode_without_ffmpeg(model, arena);
    CHECK_EQ_INT(mapped("libav", 1), 0); /* a text-, image- and WAV-only process never maps FFmpeg */
    CHECK_EQ_INT(mapped("libsw", 0), 0);
    CHECK_EQ_INT(mapped("libuform-gloo", 0), 0); /* nor the collectives, nor the C++ runtime they need */
    CHECK_EQ_INT(mapped("libgloo", 0), 0);
#ifndef UFORM_TEST_SANITIZED /* the sanitizers' runtimes (libasan, libubsan, libtsan) map libstdc++ themselves */
    CHECK_EQ_INT(mapped("libstdc++", 0), 0);
#endif

    char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
    if (missing) {
        const char *directory = getenv("UFORM_FFMPEG_DIR");
        CHECK_MSG(directory && directory[0], "run --missing with UFORM_FFMPEG_DIR set to an empty folder");
        static const struct { kind_t kind; const char *name; } needs[] = {
            {kind_video, "counter.mp4"}, {kind_audio, "stereo.mp3"}, {kind_image, "quadrants.gif"}, {kind_video, "counter.webm"}};
        for (size_t i = 0; i < sizeof needs / sizeof needs[0]; ++i) {
            uform_status_t status = encode(model, arena, needs[i].kind, needs[i].name, message);
            CHECK_MSG(status == UFORM_UNSUPPORTED, "%s: got %s (%s), expected unsupported", needs[i].name, uform_status_name(status), message);
            CHECK_CONTAINS(message, "libavutil.so.57");
            CHECK_CONTAINS(message, "UFORM_FFMPEG_DIR");
            if (i == 0) printf("%s: %s\n", needs[i].name, message);
        }
        encode_without_ffmpeg(model, arena); /* and everything else still works */
        CHECK_EQ_INT(mapped("libav", 1), 0);
    } else {
        uform_status_t status = encode(model, arena, kind_video, "counter.mp4", message);
        CHECK_MSG(status == UFORM_OK, "counter.mp4: %s: %s", uform_status_name(status), message);
        CHECK_MSG(mapped("libavcodec", 0) == 1 && mapped("libavformat", 0) == 1, "a video encode maps libavcodec and libavformat");
        mapped("", 1);
        status = encode(model, arena, kind_audio, "stereo.mp3", message);
        CHECK_MSG(status == UFORM_OK, "stereo.mp3: %s: %s", uform_status_name(status), message);
    }
    uform_arena_free(arena);
    uform_model_free(model);
    return check_finish();
}
