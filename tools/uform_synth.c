/*
 * uform synth DIR [--seed N] [--pairs N] [--heldout N] [--modalities image,video,audio] — writes the
 * demo's data: pictures of coloured shapes, clips of moving shapes and spoken captions, with three
 * manifests in the format of `uform train`:
 *
 *   DIR/train.jsonl     --pairs renders per modality of the training captions
 *   DIR/heldout.jsonl   --heldout fresh renders per modality (new noise, jitter, voice, speed) of
 *                       training captions, as many distinct captions as fit
 *   DIR/novel.jsonl     the compositional set: one render per caption of the colour–shape
 *                       combinations no training line shows (every held-out shape has its colour
 *                       with other shapes, and other colours itself), up to --heldout per modality
 *
 * Files go to DIR/{train,heldout,novel}/{image,video,audio}-NNNNN.EXT, alternating PNG and JPEG,
 * MP4 and WebM, WAV and FLAC, so every decoder of the engine is exercised. Each manifest line also
 * names the attributes drawn ("shape", "colour", "place", "size", "motion", "voice", "wpm"), which
 * `uform train` ignores and tests check against the pixels. The same seed writes the same bytes.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "synth.h"

#define IMAGE_SIZE 64   /* pixels of a picture's side (the demo model reads 32 or more) */
#define CLIP_SIZE 64    /* pixels of a clip frame's side */
#define CLIP_FRAMES 8   /* 1 s at 8 frames/s; a 4-frame model reads frames 1, 3, 5 and 7 */
#define CLIP_FPS 8
#define SPEECH_SECONDS 2.0

static const char usage_text[] =
    "usage: uform synth DIR [--seed N] [--pairs N] [--heldout N] [--modalities image,video,audio] [--quiet]\n";

static const char help_text[] =
    "\n"
    "Writes the demo's generated data into DIR: pictures of 5 shapes x 8 colours x 5 places x 2 sizes\n"
    "(\"a small red star at the top\"; PNG and JPEG), 8-frame clips of a shape moving left, right, up or\n"
    "down (\"a blue circle moving left\"; MP4 and WebM) and captions spoken by espeak-ng (\"a red star at\n"
    "the top\"; WAV and FLAC, about 2 s), with the manifests train.jsonl, heldout.jsonl (fresh renders\n"
    "of training captions) and novel.jsonl (colour-shape combinations never shown in training).\n"
    "\n"
    "  --seed N            random seed of every render (default 0; the same seed writes the same bytes)\n"
    "  --pairs N           training pairs per modality (default 2000)\n"
    "  --heldout N         held-out pairs per modality, and the most compositional ones (default 200)\n"
    "  --modalities LIST   which of image, video, audio to write (default all three)\n"
    "  --quiet             no progress and no summary\n"
    "\n"
    "Exit status: 0 done; 1 failed (the reason is printed); 2 usage.\n";

static int usage_error(const char *why) {
    fprintf(stderr, "%suform synth: %s\n", usage_text, why);
    return 2;
}

/* ---- which captions each split uses ---- */

/* The colour each shape never has in training: circle orange, square blue, triangle black,
 * cross yellow, star purple (colour 3·shape + 1 mod 8: five distinct colours). */
static int novel_pair(int shape, int colour) { return colour == (3 * shape + 1) % SYNTH_COLOURS; }

enum { MOD_IMAGE = 0, MOD_VIDEO = 1, MOD_AUDIO = 2, MODALITIES = 3 };
static const char *const modality_names[MODALITIES] = {"image", "video", "audio"};

/* Every scene of a modality, in a fixed order; `novel` picks the compositional ones or the others. */
static size_t list_scenes(int modality, int novel, synth_scene_t *scenes) {
    size_t count = 0;
    for (int shape = 0; shape < SYNTH_SHAPES; ++shape)
        for (int colour = 0; colour < SYNTH_COLOURS; ++colour) {
            if (novel_pair(shape, colour) != novel) continue;
            int variants = modality == MOD_IMAGE ? SYNTH_PLACES * SYNTH_SIZES : modality == MOD_VIDEO ? SYNTH_MOTIONS : SYNTH_PLACES;
            for (int v = 0; v < variants; ++v) {
                synth_scene_t scene = {shape, colour, -1, -1, -1};
                if (modality == MOD_IMAGE) scene.place = v / SYNTH_SIZES, scene.size = v % SYNTH_SIZES;
                else if (modality == MOD_VIDEO) scene.motion = v;
                else scene.place = v;
                scenes[count++] = scene;
            }
        }
    return count;
}

/* ---- one item ---- */

typedef struct context_t {
    const char *dir;
    uint64_t seed;
    int speech_rate;
    FILE *manifest;
    char error[8400];
} context_t;

static const char *const split_names[3] = {"train", "heldout", "novel"};

/* Writes `text` as a JSON string (the captions and paths here are plain ASCII without quotes). */
static void put_string(FILE *file, const char *key, const char *text) { fprintf(file, ", \"%s\": \"%s\"", key, text); }

static int write_image(context_t *context, unsigned split, size_t index, const synth_scene_t *scene, const char *relative,
                       const char *path) {
    synth_random_t random = synth_random_for(context->seed, split, MOD_IMAGE, index);
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
    int status = index % 2 ? synth_write_jpeg(path, rgb, IMAGE_SIZE, IMAGE_SIZE, context->error, sizeof context->error)
                           : synth_write_png(path, rgb, IMAGE_SIZE, IMAGE_SIZE, context->error, sizeof context->error);
    if (status) return -1;
    char text[128];
    synth_caption_image(scene, text, sizeof text);
    fprintf(context->manifest, "{\"text\": \"%s\"", text);
    put_string(context->manifest, "image", relative);
    put_string(context->manifest, "shape", synth_shape_names[scene->shape]);
    put_string(context->manifest, "colour", synth_colour_names[scene->colour]);
    put_string(context->manifest, "place", synth_place_names[scene->place]);
    put_string(context->manifest, "size", synth_size_names[scene->size]);
    fprintf(context->manifest, ", \"x\": %.2f, \"y\": %.2f, \"radius\": %.2f}\n", cx, cy, radius);
    return 0;
}

static int write_video(context_t *context, unsigned split, size_t index, const synth_scene_t *scene, const char *relative,
                       const char *path) {
    synth_random_t random = synth_random_for(context->seed, split, MOD_VIDEO, index);
    static uint8_t rgb[CLIP_FRAMES * CLIP_SIZE * CLIP_SIZE * 3];
    synth_draw_clip(scene, CLIP_SIZE, CLIP_FRAMES, &random, rgb);
    if (synth_write_clip(path, (int)(index % 2), rgb, CLIP_SIZE, CLIP_FRAMES, CLIP_FPS, context->error, sizeof context->error))
        return -1;
    char text[128];
    synth_caption_video(scene, text, sizeof text);
    fprintf(context->manifest, "{\"text\": \"%s\"", text);
    put_string(context->manifest, "video", relative);
    put_string(context->manifest, "shape", synth_shape_names[scene->shape]);
    put_string(context->manifest, "colour", synth_colour_names[scene->colour]);
    put_string(context->manifest, "motion", synth_motion_names[scene->motion]);
    fprintf(context->manifest, "}\n");
    return 0;
}

/* A spoken caption: a random voice, speed and pitch, up to 150 ms of silence before it, faint
 * noise throughout, padded or cut to SPEECH_SECONDS. */
static int write_audio(context_t *context, unsigned split, size_t index, const synth_scene_t *scene, const char *relative,
                       const char *path) {
    synth_random_t random = synth_random_for(context->seed, split, MOD_AUDIO, index);
    char text[128];
    synth_caption_speech(scene, text, sizeof text);
    int voice = (int)(synth_random_next(&random) % SYNTH_VOICES);
    int wpm = (int)lrint(synth_random_range(&random, 190, 240)), pitch = (int)lrint(synth_random_range(&random, 30, 70));
    size_t spoken = 0;
    int16_t *speech = synth_speak(text, voice, wpm, pitch, &spoken, context->error, sizeof context->error);
    if (!speech) return -1;
    size_t total = (size_t)(SPEECH_SECONDS * context->speech_rate);
    size_t lead = (size_t)(synth_random_range(&random, 0, 0.15) * context->speech_rate);
    int16_t *samples = malloc(total * sizeof *samples);
    if (!samples) {
        free(speech);
        snprintf(context->error, sizeof context->error, "out of memory for '%s'", path);
        return -1;
    }
    double gain = synth_random_range(&random, 0.6, 1.0);
    for (size_t i = 0; i < total; ++i) {
        double value = 40.0 * synth_random_normal(&random);
        if (i >= lead && i - lead < spoken) value += gain * speech[i - lead];
        samples[i] = (int16_t)(value > 32767 ? 32767 : value < -32768 ? -32768 : lrint(value));
    }
    free(speech);
    int status = index % 2 ? synth_write_flac(path, samples, total, context->speech_rate, context->error, sizeof context->error)
                           : synth_write_wav(path, samples, total, context->speech_rate, context->error, sizeof context->error);
    free(samples);
    if (status) return -1;
    fprintf(context->manifest, "{\"text\": \"%s\"", text);
    put_string(context->manifest, "audio", relative);
    put_string(context->manifest, "shape", synth_shape_names[scene->shape]);
    put_string(context->manifest, "colour", synth_colour_names[scene->colour]);
    put_string(context->manifest, "place", synth_place_names[scene->place]);
    put_string(context->manifest, "voice", synth_voice_names[voice]);
    fprintf(context->manifest, ", \"wpm\": %d, \"pitch\": %d, \"spoken_seconds\": %.3f}\n", wpm, pitch,
            (double)spoken / context->speech_rate);
    return 0;
}

/* ---- the command ---- */

static int make_folder(const char *path) { return mkdir(path, 0755) == 0 || errno == EEXIST ? 0 : -1; }

static double now_seconds(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + (double)time.tv_nsec * 1e-9;
}

static int parse_count(const char *text, size_t *value) {
    char *end = NULL;
    errno = 0;
    unsigned long long number = strtoull(text, &end, 10);
    if (!end || *end || end == text || errno || text[0] == '-' || number > 1000000000ull) return -1;
    *value = (size_t)number;
    return 0;
}

static int parse_modalities(const char *list, int *mask) {
    *mask = 0;
    const char *at = list;
    while (*at) {
        size_t length = strcspn(at, ",");
        int found = -1;
        for (int m = 0; m < MODALITIES; ++m)
            if (length == strlen(modality_names[m]) && strncmp(at, modality_names[m], length) == 0) found = m;
        if (found < 0) return -1;
        *mask |= 1 << found;
        at += length + (at[length] == ',');
    }
    return *mask ? 0 : -1;
}

typedef struct plan_t {
    unsigned split;
    int modality;
    const synth_scene_t *scenes;
    size_t scene_count, items;
} plan_t;

int uform_command_synth(int argc, char **argv) {
    const char *dir = NULL;
    size_t pairs = 2000, heldout = 200, seed = 0;
    int mask = 7, quiet = 0;
    for (int i = 1; i < argc; ++i) {
        const char *flag = argv[i];
        if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
            printf("%s%s", usage_text, help_text);
            return 0;
        }
        if (flag[0] != '-') {
            if (dir) return usage_error("more than one DIR");
            dir = flag;
            continue;
        }
        if (strcmp(flag, "--quiet") == 0) {
            quiet = 1;
            continue;
        }
        int valued = !strcmp(flag, "--seed") || !strcmp(flag, "--pairs") || !strcmp(flag, "--heldout") ||
                     !strcmp(flag, "--modalities");
        char why[160];
        if (!valued || i + 1 >= argc) {
            snprintf(why, sizeof why, valued ? "%s needs a value" : "unknown flag %s", flag);
            return usage_error(why);
        }
        const char *value = argv[++i];
        int bad = !strcmp(flag, "--seed")      ? parse_count(value, &seed)
                  : !strcmp(flag, "--pairs")   ? parse_count(value, &pairs)
                  : !strcmp(flag, "--heldout") ? parse_count(value, &heldout)
                                               : parse_modalities(value, &mask);
        if (bad) {
            snprintf(why, sizeof why, "%s %s is not a valid value", flag, value);
            return usage_error(why);
        }
    }
    if (!dir) return usage_error("DIR is missing");
    if ((mask & (1 << MOD_VIDEO)) && !synth_av_available()) {
        fprintf(stderr, "uform: synth: clips need FFmpeg, and this build has none (--modalities image,audio)\n");
        return 1;
    }
    context_t context = {dir, (uint64_t)seed, 0, NULL, {0}};
    if ((mask & (1 << MOD_AUDIO)) && (context.speech_rate = synth_speech_start(context.error, sizeof context.error)) <= 0) {
        fprintf(stderr, "uform: synth: %s\n", context.error);
        return 1;
    }
    /* Scenes per modality: the training ones, then the compositional ones. */
    static synth_scene_t scenes[MODALITIES][2][SYNTH_SHAPES * SYNTH_COLOURS * SYNTH_PLACES * SYNTH_SIZES];
    size_t counts[MODALITIES][2];
    for (int m = 0; m < MODALITIES; ++m)
        for (int novel = 0; novel < 2; ++novel) counts[m][novel] = list_scenes(m, novel, scenes[m][novel]);
    plan_t plans[3 * MODALITIES];
    size_t plan_count = 0, total = 0;
    for (unsigned split = 0; split < 3; ++split)
        for (int m = 0; m < MODALITIES; ++m) {
            if (!(mask & (1 << m))) continue;
            size_t items = split == 0 ? pairs : split == 1 ? heldout : (heldout < counts[m][1] ? heldout : counts[m][1]);
            plans[plan_count++] = (plan_t){split, m, scenes[m][split == 2], counts[m][split == 2], items};
            total += items;
        }
    char path[4096], relative[128];
    int status = make_folder(dir);
    for (unsigned split = 0; status == 0 && split < 3; ++split) {
        snprintf(path, sizeof path, "%s/%s", dir, split_names[split]);
        status = make_folder(path);
    }
    if (status) {
        fprintf(stderr, "uform: synth: cannot create '%s': %s\n", path, strerror(errno));
        synth_speech_stop();
        return 1;
    }
    int bar = !quiet && isatty(2);
    double start = now_seconds(), last_draw = 0;
    size_t done = 0;
    char manifest_path[4096], manifest_temporary[4200];
    for (unsigned split = 0; status == 0 && split < 3; ++split) {
        snprintf(manifest_path, sizeof manifest_path, "%s/%s.jsonl", dir, split_names[split]);
        snprintf(manifest_temporary, sizeof manifest_temporary, "%s.part", manifest_path);
        context.manifest = fopen(manifest_temporary, "w");
        if (!context.manifest) {
            snprintf(context.error, sizeof context.error, "cannot write '%s': %s", manifest_temporary, strerror(errno));
            status = -1;
            break;
        }
        for (size_t p = 0; status == 0 && p < plan_count; ++p) {
            const plan_t *plan = &plans[p];
            if (plan->split != split) continue;
            static const char *const extensions[MODALITIES][2] = {{"png", "jpg"}, {"mp4", "webm"}, {"wav", "flac"}};
            for (size_t i = 0; status == 0 && i < plan->items; ++i) {
                /* Training items cycle through the captions; held-out ones spread over them, so up
                 * to one per caption they are all different. */
                size_t scene = split == 0 ? i % plan->scene_count : (i * plan->scene_count / plan->items) % plan->scene_count;
                snprintf(relative, sizeof relative, "%s/%s-%05zu.%s", split_names[split], modality_names[plan->modality], i,
                         extensions[plan->modality][i % 2]);
                snprintf(path, sizeof path, "%s/%s", dir, relative);
                status = plan->modality == MOD_IMAGE   ? write_image(&context, split, i, &plan->scenes[scene], relative, path)
                         : plan->modality == MOD_VIDEO ? write_video(&context, split, i, &plan->scenes[scene], relative, path)
                                                       : write_audio(&context, split, i, &plan->scenes[scene], relative, path);
                done += 1;
                double now = now_seconds();
                if (bar && (now - last_draw > 0.1 || done == total)) {
                    double rate = (double)done / (now - start);
                    fprintf(stderr, "\rsynth  %s %s  %zu/%zu files  %.0f files/s  ETA %.0f s   ", split_names[split],
                            modality_names[plan->modality], done, total, rate, (double)(total - done) / rate);
                    last_draw = now;
                }
            }
        }
        if (fclose(context.manifest) != 0 && status == 0) {
            snprintf(context.error, sizeof context.error, "cannot write '%s': %s", manifest_temporary, strerror(errno));
            status = -1;
        }
        if (status == 0 && rename(manifest_temporary, manifest_path) != 0) {
            snprintf(context.error, sizeof context.error, "cannot write '%s': %s", manifest_path, strerror(errno));
            status = -1;
        }
        if (status != 0) unlink(manifest_temporary);
    }
    synth_speech_stop();
    if (bar) fputc('\n', stderr);
    if (status) {
        fprintf(stderr, "uform: synth: %s\n", context.error);
        return 1;
    }
    if (!quiet) {
        double seconds = now_seconds() - start;
        fprintf(stderr, "uform: %zu files in %.1f s (%.0f files/s) in %s: train.jsonl, heldout.jsonl, novel.jsonl\n", done,
                seconds, seconds > 0 ? (double)done / seconds : 0.0, dir);
    }
    return 0;
}
