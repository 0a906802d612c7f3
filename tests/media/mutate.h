/* Seeded mutations of fixtures for the bad-input and replay-fuzz tests, and the check that a decode
 * of arbitrary bytes answered a documented status with sane outputs. */
#ifndef UFORM_TESTS_MEDIA_MUTATE_H
#define UFORM_TESTS_MEDIA_MUTATE_H

#include <stdint.h>
#include <string.h>

#include "common/check.h"
#include "media/media.h"

/* Applies one of several mutations to `bytes` (in place, within `*size`, or shorter). */
static void media_mutate(uint8_t *bytes, size_t *size, uint64_t *seed) {
    if (*size == 0) return;
    uint64_t kind = check_random_next(seed) % 6;
    size_t at = (size_t)(check_random_next(seed) % *size);
    switch (kind) {
    case 0: /* flip one to eight random bits */
        for (uint64_t n = 1 + check_random_next(seed) % 8; n; --n)
            bytes[check_random_next(seed) % *size] ^= (uint8_t)(1u << (check_random_next(seed) % 8));
        break;
    case 1: { /* an interesting value, as parsers trip on limits */
        static const uint8_t values[] = {0x00, 0xFF, 0x7F, 0x80, 0x01, 0xFE};
        bytes[at] = values[check_random_next(seed) % sizeof values];
        break;
    }
    case 2: /* truncate */
        *size = at;
        break;
    case 3: /* a 32-bit size field set huge or zero */
        if (at + 4 <= *size) {
            uint32_t value = check_random_next(seed) & 1 ? 0xFFFFFFF0u : 0;
            memcpy(bytes + at, &value, 4);
        }
        break;
    case 4: { /* copy a block over another place, like a duplicated chunk */
        size_t from = (size_t)(check_random_next(seed) % *size), length = (size_t)(check_random_next(seed) % 64);
        if (from + length > *size) length = *size - from;
        if (at + length > *size) length = *size - at;
        memmove(bytes + at, bytes + from, length);
        break;
    }
    default: /* random bytes over a short run */
        for (size_t i = at, end = at + 1 + (size_t)(check_random_next(seed) % 16); i < end && i < *size; ++i)
            bytes[i] = (uint8_t)check_random_next(seed);
        break;
    }
}

/* Decodes `bytes` with all three entry points; checks statuses are documented ones, messages are
 * specific, failures leave outputs zeroed and successes are consistent. Answers how many decodes succeeded. */
static int media_decode_all(const uint8_t *bytes, size_t size, const char *what) {
    int succeeded = 0;
    uform_outcome_t outcome;
    uform__media_image_t image;
    memset(&outcome, 0, sizeof outcome);
    uform_status_t status = uform__media_image_decode(bytes, size, NULL, &image, &outcome);
    CHECK_MSG(status == UFORM_OK || status == UFORM_FORMAT || status == UFORM_UNSUPPORTED, "%s: image status %s: %s", what,
              uform_status_name(status), outcome.message);
    if (status == UFORM_OK) {
        CHECK_MSG(image.pixels && image.width && image.height, "%s: image OK without pixels", what);
        ++succeeded;
    } else {
        CHECK_MSG(outcome.message[0] != 0 && !image.pixels, "%s: image failure without a message or with pixels", what);
    }
    uform__media_image_free(&image);

    uform__media_audio_t audio;
    memset(&outcome, 0, sizeof outcome);
    status = uform__media_audio_decode(bytes, size, 0, NULL, &audio, &outcome);
    CHECK_MSG(status == UFORM_OK || status == UFORM_FORMAT || status == UFORM_UNSUPPORTED, "%s: audio status %s: %s", what,
              uform_status_name(status), outcome.message);
    if (status == UFORM_OK) {
        CHECK_MSG(audio.samples && audio.count && audio.rate, "%s: audio OK without samples", what);
        ++succeeded;
    } else {
        CHECK_MSG(outcome.message[0] != 0 && !audio.samples, "%s: audio failure without a message or with samples", what);
    }
    uform__media_audio_free(&audio);

    uform__media_video_t video;
    memset(&outcome, 0, sizeof outcome);
    status = uform__media_video_decode(bytes, size, 4, NULL, &video, &outcome);
    CHECK_MSG(status == UFORM_OK || status == UFORM_FORMAT || status == UFORM_UNSUPPORTED, "%s: video status %s: %s", what,
              uform_status_name(status), outcome.message);
    if (status == UFORM_OK) {
        CHECK_MSG(video.pixels && video.times && video.width && video.height && video.frames == 4, "%s: video OK without frames", what);
        ++succeeded;
    } else {
        CHECK_MSG(outcome.message[0] != 0 && !video.pixels, "%s: video failure without a message or with frames", what);
    }
    uform__media_video_free(&video);
    return succeeded;
}

#endif
