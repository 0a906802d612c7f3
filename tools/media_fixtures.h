/*
 * What the media fixtures contain, shared by their generator (tools/media_fixtures.c) and the tests
 * (tests/media/): the checks are computed from these definitions, never from the decoder.
 */
#ifndef UFORM_TOOLS_MEDIA_FIXTURES_H
#define UFORM_TOOLS_MEDIA_FIXTURES_H

#include <stdint.h>

/* Images: four flat quadrants (top-left, top-right, bottom-left, bottom-right) of distinct colours,
 * so orientation and colour are both testable. Multiples of 16 keep JPEG blocks inside a quadrant. */
#define MEDIA_FIXTURE_WIDTH 64
#define MEDIA_FIXTURE_HEIGHT 48
static const uint8_t media_fixture_quadrants[4][3] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {255, 255, 0}};
/* Alpha per quadrant of the RGBA PNG and the lossless WebP. */
static const uint8_t media_fixture_alpha[4] = {255, 0, 128, 64};
/* Grey levels of the greyscale PNG and of the grey+alpha PNG (whose alpha is media_fixture_alpha). */
static const uint8_t media_fixture_grey[4] = {0, 85, 170, 255};

/* The quadrant (0 TL, 1 TR, 2 BL, 3 BR) of pixel (x, y) in a width × height image. */
static inline int media_fixture_quadrant(uint32_t x, uint32_t y, uint32_t width, uint32_t height) {
    return (x >= width / 2) + 2 * (y >= height / 2);
}

/* Audio: a sine of MEDIA_FIXTURE_HZ; left channel amplitude 0.6, right 0.2, so the equal-weight
 * mono mix has amplitude 0.4 (swresample's default 0.707 downmix would give 0.566). */
#define MEDIA_FIXTURE_HZ 440.0
#define MEDIA_FIXTURE_LEFT 0.6
#define MEDIA_FIXTURE_RIGHT 0.2
#define MEDIA_FIXTURE_MONO 0.5 /* amplitude of the mono WAV files */
#define MEDIA_FIXTURE_SECONDS 2.0

/* Video: frame i shows i in binary as MEDIA_FIXTURE_BITS vertical stripes over the top half (white =
 * 1, least significant bit on the left), mid grey below, at MEDIA_FIXTURE_FPS frames per second. */
#define MEDIA_FIXTURE_VIDEO_WIDTH 160
#define MEDIA_FIXTURE_VIDEO_HEIGHT 96
#define MEDIA_FIXTURE_BITS 10
#define MEDIA_FIXTURE_FPS 10
#define MEDIA_FIXTURE_FRAMES 40       /* counter clips: 4 s */
#define MEDIA_FIXTURE_LONG_FRAMES 300 /* long clip for seeking: 30 s, a keyframe every second */
#define MEDIA_FIXTURE_SHORT_FRAMES 3

/* Reads the counter back from an RGB8 frame: the mean of each stripe's centre column over the top half. */
static inline int media_fixture_counter(const uint8_t *rgb, uint32_t width, uint32_t height) {
    int value = 0;
    uint32_t stripe = width / MEDIA_FIXTURE_BITS;
    for (int bit = 0; bit < MEDIA_FIXTURE_BITS; ++bit) {
        uint32_t x = stripe * (uint32_t)bit + stripe / 2, sum = 0, count = 0;
        for (uint32_t y = height / 8; y < height * 3 / 8; ++y, ++count) sum += rgb[((size_t)y * width + x) * 3 + 1];
        if (sum / count > 128) value |= 1 << bit;
    }
    return value;
}

#endif
