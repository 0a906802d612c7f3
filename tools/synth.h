/*
 * The demo's generated world (`uform synth`): coloured shapes at places and sizes in pictures,
 * shapes moving in clips, and captions spoken by espeak-ng. This header holds the vocabulary, the
 * random numbers every item draws from, the rasteriser and the writers of each file kind; the
 * command itself is tools/uform_synth.c. A project tool: never linked into libuform.
 *
 * Everything is deterministic: an item's pixels, motion, voice and noise come from its own random
 * stream, seeded from (seed, split, index), so the same seed writes the same bytes.
 */
#ifndef UFORM_TOOLS_SYNTH_H
#define UFORM_TOOLS_SYNTH_H

#include <stddef.h>
#include <stdint.h>

/* ---- vocabulary (synth_world.c) ---- */

enum { SYNTH_SHAPES = 5, SYNTH_COLOURS = 8, SYNTH_PLACES = 5, SYNTH_SIZES = 2, SYNTH_MOTIONS = 4 };

extern const char *const synth_shape_names[SYNTH_SHAPES];   /* circle square triangle cross star */
extern const char *const synth_colour_names[SYNTH_COLOURS]; /* red orange yellow green blue purple pink black */
extern const uint8_t synth_colours[SYNTH_COLOURS][3];
extern const char *const synth_place_names[SYNTH_PLACES];   /* left right top bottom centre */
extern const char *const synth_place_phrases[SYNTH_PLACES]; /* "on the left" ... "in the centre" */
extern const char *const synth_size_names[SYNTH_SIZES];     /* small large */
extern const char *const synth_motion_names[SYNTH_MOTIONS]; /* left right up down */

/* What one item shows. Fields a modality does not use are -1. */
typedef struct synth_scene_t {
    int shape, colour, place, size, motion;
} synth_scene_t;

/* Captions: "a small red star at the top" (picture), "a blue circle moving left" (clip),
 * "a red star at the top" (speech: colour, shape and place, short enough to say in about 2 s). */
void synth_caption_image(const synth_scene_t *scene, char *text, size_t capacity);
void synth_caption_video(const synth_scene_t *scene, char *text, size_t capacity);
void synth_caption_speech(const synth_scene_t *scene, char *text, size_t capacity);

/* ---- random numbers ---- */

typedef struct synth_random_t {
    uint64_t state;
} synth_random_t;

/* A stream for item `index` of `split` (0 train, 1 held-out, 2 compositional) under `seed`. */
synth_random_t synth_random_for(uint64_t seed, unsigned split, unsigned modality, uint64_t index);
uint64_t synth_random_next(synth_random_t *random);
double synth_random_uniform(synth_random_t *random);           /* [0, 1) */
double synth_random_range(synth_random_t *random, double low, double high);
double synth_random_normal(synth_random_t *random);            /* N(0, 1), Box–Muller */

/* ---- pictures (synth_draw.c) ---- */

/* A light grey background (a random tint around 228) with per-pixel Gaussian noise of `noise`
 * levels: [height, width, 3] RGB8. */
void synth_draw_background(uint8_t *rgb, size_t width, size_t height, double noise, synth_random_t *random);

/* Blends shape `shape` of colour `rgb` centred at (cx, cy) pixels with half-extent `radius` over
 * the picture, antialiased: each pixel takes the coverage of its centre's signed distance to the
 * outline over one pixel (clamp(0.5 − d, 0, 1)). */
void synth_draw_shape(uint8_t *pixels, size_t width, size_t height, int shape, const uint8_t rgb[3], double cx,
                      double cy, double radius);

/* The signed distance (pixels, negative inside) from (x, y) to shape `shape` at (cx, cy, radius). */
double synth_shape_distance(int shape, double x, double y, double cx, double cy, double radius);

/* Where a picture puts its shape: centre and half-extent in pixels of a `size`-pixel square
 * picture, jittered from `random`: places at 29% / 50% / 71% of the side (± 2.5%), small shapes
 * 13–15% of the side and large ones 20–22% (a star reaches 1.2 radii, so a large one at the edge
 * still fits; at a 32-pixel model input a small star is 9–10 pixels across). */
void synth_place(const synth_scene_t *scene, size_t size, synth_random_t *random, double *cx, double *cy,
                 double *radius);

/* The frames of a clip of `frames` frames of `size` pixels: the shape crosses about half the
 * picture in the scene's motion direction; [frames, size, size, 3] RGB8 into `rgb`. */
void synth_draw_clip(const synth_scene_t *scene, size_t size, size_t frames, synth_random_t *random, uint8_t *rgb);

/* ---- files (synth_files.c: PNG, JPEG, WAV; synth_av.c: FFmpeg's MP4, WebM, FLAC) ---- */

/* Each answers 0, or -1 with a one-line reason in `error`. Files are written whole or not at all
 * (a temporary name, then rename). */
int synth_write_png(const char *path, const uint8_t *rgb, size_t width, size_t height, char *error, size_t capacity);
int synth_write_jpeg(const char *path, const uint8_t *rgb, size_t width, size_t height, char *error, size_t capacity);
int synth_write_wav(const char *path, const int16_t *samples, size_t count, int rate, char *error, size_t capacity);
int synth_write_file(const char *path, const void *bytes, size_t size, char *error, size_t capacity);

/* 1 when this build can write clips (FFmpeg), and the video codec the MP4 files get. */
int synth_av_available(void);
const char *synth_av_mp4_codec(void); /* "libx264" (H.264) when the build has it, else "mpeg4" */
/* A clip of [frames, size, size, 3] RGB8 at `fps`: `webm` 0 writes MP4, 1 writes WebM (VP9, else VP8). */
int synth_write_clip(const char *path, int webm, const uint8_t *rgb, size_t size, size_t frames, int fps, char *error,
                     size_t capacity);
/* Mono 16-bit samples as FLAC. */
int synth_write_flac(const char *path, const int16_t *samples, size_t count, int rate, char *error, size_t capacity);

/* ---- items (synth_items.c) ---- */

enum { SYNTH_IMAGE = 0, SYNTH_VIDEO = 1, SYNTH_AUDIO = 2 };

/* One file to make: item `index` of `kind` in `split` (0 train, 1 heldout, 2 novel). */
typedef struct synth_item_t {
    uint64_t seed;
    unsigned split;
    int kind;
    size_t index;
    synth_scene_t scene;
} synth_item_t;

/* Its path under DIR: "train/image-00012.jpg" (even indexes PNG, MP4, WAV; odd JPEG, WebM, FLAC). */
void synth_item_relative(const synth_item_t *item, char *relative, size_t capacity);

/* Makes the item's file under `dir` and formats its manifest line (with the newline) into `line`.
 * Speech items need synth_speech_start's rate and must not run on two threads at once. Answers 0,
 * or -1 with the reason in `error`. */
int synth_item_write(const synth_item_t *item, const char *dir, int speech_rate, char *line, size_t line_capacity,
                     char *error, size_t capacity);

/* ---- shards (synth_shards.c) ---- */

/* Writes the training items (split 0) of `items` into `shards` WebDataset shards DIR/shards/train-NNNNN.tar
 * in an order shuffled from `seed`: KEY.EXT (the file), KEY.txt (its caption), KEY.json (its manifest
 * line, from `lines`, one per item of `line_capacity` bytes). Answers 0, or -1 with the reason. */
int synth_write_shards(const synth_item_t *items, size_t count, const char *lines, size_t line_capacity, const char *dir,
                       size_t shards, uint64_t seed, char *error, size_t capacity);

/* ---- speech (synth_speech.c: espeak-ng's C library, one process) ---- */

enum { SYNTH_VOICES = 4 };
extern const char *const synth_voice_names[SYNTH_VOICES];

#define SYNTH_SPEECH_RATE 16000 /* Hz of the speech synth_speak answers */

/* 1 when this build links espeak-ng. */
int synth_speech_available(void);
/* Starts espeak-ng once per process; answers SYNTH_SPEECH_RATE, or -1 with the reason. */
int synth_speech_start(char *error, size_t capacity);
/* Speaks `text` with voice `voice` at `words_per_minute` and `pitch` (0–100), espeak-ng's breath
 * noise drawn from `noise_seed`: answers malloc'ed mono samples at SYNTH_SPEECH_RATE (free() them)
 * and their count, or NULL with the reason. */
int16_t *synth_speak(const char *text, int voice, int words_per_minute, int pitch, unsigned noise_seed, size_t *count,
                     char *error, size_t capacity);
void synth_speech_stop(void);

#endif
