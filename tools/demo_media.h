/* Media the demo makes in memory with the codecs' own encoders (no files, no downloads). */
#ifndef UFORM_TOOLS_DEMO_MEDIA_H
#define UFORM_TOOLS_DEMO_MEDIA_H

#include <stddef.h>
#include <stdint.h>

/* A picture: white background with a filled disc (shape 0) or square (shape 1) of `rgb` colour. */
void demo_draw(uint8_t *pixels, size_t width, size_t height, int shape, const uint8_t rgb[3], double cx, double cy,
               double radius);

/* Encoders; each answers a malloc'ed buffer (free() it) and its size, or NULL. */
unsigned char *demo_jpeg(const uint8_t *pixels, size_t width, size_t height, size_t *size);
unsigned char *demo_webp(const uint8_t *pixels, size_t width, size_t height, size_t *size);
/* 16-bit PCM WAV of a sine (`hz`) with some harmonics, `channels` channels, `seconds` long. */
unsigned char *demo_wav(double hz, int rate, int channels, double seconds, size_t *size);
/* An MP4 (MPEG-4 Part 2 video) of a disc moving left to right; NULL without FFmpeg. */
unsigned char *demo_mp4(const uint8_t rgb[3], size_t width, size_t height, size_t frames, size_t *size);

#endif
