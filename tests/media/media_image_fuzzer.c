/* libFuzzer target for the image, audio and video entry points (built with UFORM_FUZZ=ON and clang). */
#include <stddef.h>
#include <stdint.h>

#include "media/media.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uform__media_limits_t limits = {.max_pixels = 1u << 22, .max_seconds = 60};
    uform__media_image_t image;
    if (uform__media_image_decode(data, size, &limits, &image, NULL) == UFORM_OK) uform__media_image_free(&image);
    uform__media_audio_t audio;
    if (uform__media_audio_decode(data, size, 0, &limits, &audio, NULL) == UFORM_OK) uform__media_audio_free(&audio);
    uform__media_video_t video;
    if (uform__media_video_decode(data, size, 2, &limits, &video, NULL) == UFORM_OK) uform__media_video_free(&video);
    return 0;
}
