/* The vocabulary, captions and random numbers of `uform synth` (synth.h). */
#include <math.h>
#include <stdio.h>

#include "synth.h"

const char *const synth_shape_names[SYNTH_SHAPES] = {"circle", "square", "triangle", "cross", "star"};
const char *const synth_colour_names[SYNTH_COLOURS] = {"red", "orange", "yellow", "green",
                                                       "blue", "purple", "pink", "black"};
/* Far apart in hue or lightness, so a 32-pixel picture still tells them apart after JPEG's chroma
 * subsampling. */
const uint8_t synth_colours[SYNTH_COLOURS][3] = {{215, 35, 35},  {245, 135, 20}, {235, 205, 25}, {35, 160, 55},
                                                 {35, 75, 215},  {135, 50, 185}, {245, 120, 195}, {30, 30, 30}};
const char *const synth_place_names[SYNTH_PLACES] = {"left", "right", "top", "bottom", "centre"};
const char *const synth_place_phrases[SYNTH_PLACES] = {"on the left", "on the right", "at the top", "at the bottom",
                                                       "in the centre"};
const char *const synth_size_names[SYNTH_SIZES] = {"small", "large"};
const char *const synth_motion_names[SYNTH_MOTIONS] = {"left", "right", "up", "down"};

void synth_caption_image(const synth_scene_t *scene, char *text, size_t capacity) {
    snprintf(text, capacity, "a %s %s %s %s", synth_size_names[scene->size], synth_colour_names[scene->colour],
             synth_shape_names[scene->shape], synth_place_phrases[scene->place]);
}

void synth_caption_video(const synth_scene_t *scene, char *text, size_t capacity) {
    snprintf(text, capacity, "a %s %s moving %s", synth_colour_names[scene->colour], synth_shape_names[scene->shape],
             synth_motion_names[scene->motion]);
}

void synth_caption_speech(const synth_scene_t *scene, char *text, size_t capacity) {
    snprintf(text, capacity, "a %s %s %s", synth_colour_names[scene->colour], synth_shape_names[scene->shape],
             synth_place_phrases[scene->place]);
}

/* SplitMix64: one 64-bit state, good enough statistics for pictures and cheap to seed per item. */
uint64_t synth_random_next(synth_random_t *random) {
    uint64_t z = (random->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

synth_random_t synth_random_for(uint64_t seed, unsigned split, unsigned modality, uint64_t index) {
    synth_random_t random = {seed * 0xD1B54A32D192ED03ull ^ ((uint64_t)split << 56) ^ ((uint64_t)modality << 48) ^ index};
    synth_random_next(&random); /* decorrelates neighbouring indexes */
    return random;
}

double synth_random_uniform(synth_random_t *random) { return (double)(synth_random_next(random) >> 11) * 0x1.0p-53; }

double synth_random_range(synth_random_t *random, double low, double high) {
    return low + (high - low) * synth_random_uniform(random);
}

double synth_random_normal(synth_random_t *random) {
    double u = synth_random_uniform(random), v = synth_random_uniform(random);
    return sqrt(-2.0 * log(1.0 - u)) * cos(2.0 * 3.14159265358979323846 * v);
}
