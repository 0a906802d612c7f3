/*
 * One item of `uform synth` (synth.h): draws or speaks it from its own random stream, writes its
 * file, and formats its manifest line. Items are independent, so pictures and clips may be made on
 * several threads at once; speech goes through espeak-ng, one item at a time.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth.h"

#define IMAGE_SIZE 64   /* pixels of a picture's side (the demo model reads 32 or more) */
#define CLIP_SIZE 64    /* pixels of a clip frame's side */
#define CLIP_FRAMES 8   /* 1 s at 8 frames/s; a 4-frame model reads frames 1, 3, 5 and 7 */
#define CLIP_FPS 8
#define SPEECH_SECONDS 2.0

static const char *const split_names[3] = {"train", "heldout", "novel"};
static const char *const kind_names[3] = {"image", "video", "audio"};
static const char *const extensions[3][2] = {{"png", "jpg"}, {"mp4", "webm"}, {"wav", "flac"}};

void synth_item_relative(const synth_item_t *item, char *relative, size_t capacity) {
    snprintf(relative, capacity, "%s/%s-%05zu.%s", split_names[item->split], kind_names[item->kind], item->index,
             extensions[item->kind][item->index % 2]);
}

static int write_picture(const synth_item_t *item, const char *path, const char *relative, char *line, size_t line_capacity,
                         char *error, size_t capacity) {
    const synth_scene_t *scene = &item->scene;
    synth_random_t random = synth_random_for(item->seed, item->split, SYNTH_IMAGE, item->index);
    uint8_t rgb[IMAGE_SIZE * IMAGE_SIZE * 3];
    synth_draw_background(rgb, IMAGE_SIZE, IMAGE_SIZE, 5.0, &random);
    double cx, cy, radius;
    synth_place(scene, IMAGE_SIZE, &random, &cx, &cy, &radius);
    uint8_t colour[3];
    for (int c = 0; c < 3; ++c) {
        double value = synth_colours[scene->colour][c] + synth_random_range(&random, -12, 12);
        colour[c] = (uint8_t)(value < 0 ? 0 : value > 255 ? 255 : lrint(value));
    }
    synth_draw_shape(rgb, IMAGE_SIZE, IMAGE_SIZE, scene->shape, colour, cx, cy, radius);
    int status = item->index % 2 ? synth_write_jpeg(path, rgb, IMAGE_SIZE, IMAGE_SIZE, error, capacity)
                                 : synth_write_png(path, rgb, IMAGE_SIZE, IMAGE_SIZE, error, capacity);
    if (status) return -1;
    char text[128];
    synth_caption_image(scene, text, sizeof text);
    snprintf(line, line_capacity,
             "{\"text\": \"%s\", \"image\": \"%s\", \"shape\": \"%s\", \"colour\": \"%s\", \"place\": \"%s\", \"size\": \"%s\", "
             "\"x\": %.2f, \"y\": %.2f, \"radius\": %.2f}\n",
             text, relative, synth_shape_names[scene->shape], synth_colour_names[scene->colour],
             synth_place_names[scene->place], synth_size_names[scene->size], cx, cy, radius);
    return 0;
}

static int write_clip(const synth_item_t *item, const char *path, const char *relative, char *line, size_t line_capacity,
                      char *error, size_t capacity) {
    const synth_scene_t *scene = &item->scene;
    synth_random_t random = synth_random_for(item->seed, item->split, SYNTH_VIDEO, item->index);
    uint8_t *rgb = malloc(CLIP_FRAMES * CLIP_SIZE * CLIP_SIZE * 3);
    if (!rgb) return snprintf(error, capacity, "out of memory for '%s'", path), -1;
    synth_draw_clip(scene, CLIP_SIZE, CLIP_FRAMES, &random, rgb);
    int status = synth_write_clip(path, (int)(item->index % 2), rgb, CLIP_SIZE, CLIP_FRAMES, CLIP_FPS, error, capacity);
    free(rgb);
    if (status) return -1;
    char text[128];
    synth_caption_video(scene, text, sizeof text);
    snprintf(line, line_capacity, "{\"text\": \"%s\", \"video\": \"%s\", \"shape\": \"%s\", \"colour\": \"%s\", \"motion\": \"%s\"}\n",
             text, relative, synth_shape_names[scene->shape], synth_colour_names[scene->colour],
             synth_motion_names[scene->motion]);
    return 0;
}

/* A spoken caption: a random voice, speed and pitch, up to 150 ms of silence before it, faint
 * noise throughout, padded or cut to SPEECH_SECONDS. */
static int write_speech(const synth_item_t *item, const char *path, const char *relative, int rate, char *line,
                        size_t line_capacity, char *error, size_t capacity) {
    const synth_scene_t *scene = &item->scene;
    synth_random_t random = synth_random_for(item->seed, item->split, SYNTH_AUDIO, item->index);
    char text[128];
    synth_caption_speech(scene, text, sizeof text);
    int voice = (int)(synth_random_next(&random) % SYNTH_VOICES);
    int wpm = (int)lrint(synth_random_range(&random, 190, 240)), pitch = (int)lrint(synth_random_range(&random, 30, 70));
    size_t spoken = 0;
    const unsigned noise_seed = (unsigned)(synth_random_next(&random) >> 32);
    int16_t *speech = synth_speak(text, voice, wpm, pitch, noise_seed, &spoken, error, capacity);
    if (!speech) return -1;
    size_t total = (size_t)(SPEECH_SECONDS * rate), lead = (size_t)(synth_random_range(&random, 0, 0.15) * rate);
    int16_t *samples = malloc(total * sizeof *samples);
    if (!samples) {
        free(speech);
        return snprintf(error, capacity, "out of memory for '%s'", path), -1;
    }
    double gain = synth_random_range(&random, 0.6, 1.0);
    for (size_t i = 0; i < total; ++i) {
        double value = 40.0 * synth_random_normal(&random);
        if (i >= lead && i - lead < spoken) value += gain * speech[i - lead];
        samples[i] = (int16_t)(value > 32767 ? 32767 : value < -32768 ? -32768 : lrint(value));
    }
    free(speech);
    int status = item->index % 2 ? synth_write_flac(path, samples, total, rate, error, capacity)
                                 : synth_write_wav(path, samples, total, rate, error, capacity);
    free(samples);
    if (status) return -1;
    snprintf(line, line_capacity,
             "{\"text\": \"%s\", \"audio\": \"%s\", \"shape\": \"%s\", \"colour\": \"%s\", \"place\": \"%s\", \"voice\": \"%s\", "
             "\"wpm\": %d, \"pitch\": %d, \"spoken_seconds\": %.3f}\n",
             text, relative, synth_shape_names[scene->shape], synth_colour_names[scene->colour],
             synth_place_names[scene->place], synth_voice_names[voice], wpm, pitch, (double)spoken / rate);
    return 0;
}

int synth_item_write(const synth_item_t *item, const char *dir, int speech_rate, char *line, size_t line_capacity,
                     char *error, size_t capacity) {
    char relative[96], path[4200];
    synth_item_relative(item, relative, sizeof relative);
    snprintf(path, sizeof path, "%s/%s", dir, relative);
    switch (item->kind) {
    case SYNTH_IMAGE: return write_picture(item, path, relative, line, line_capacity, error, capacity);
    case SYNTH_VIDEO: return write_clip(item, path, relative, line, line_capacity, error, capacity);
    default: return write_speech(item, path, relative, speech_rate, line, line_capacity, error, capacity);
    }
}
