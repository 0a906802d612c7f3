/*
 * Video: frames chosen at segment centres, checked three ways — the frame's own content (a binary
 * counter drawn by the generator) must equal the frame index its timestamp implies, the timestamp
 * must satisfy the rule (the last frame starting at or before the centre), and for the fixtures whose
 * frame count is known the index must be floor((f + ½)·N/F). Also rotation, short streams, seeking,
 * limits and wrong-modality input.
 */
#include <stdint.h>

#include "common/check.h"
#include "media/media.h"
#include "media/common.h"
#include "media_fixtures.h"

#if UFORM_WITH_FFMPEG
static void check_counter(const char *name, uint32_t frames, int total_frames, int expect_seeks) {
    size_t size = 0;
    uint8_t *bytes = media_read(name, &size);
    CHECK(bytes != NULL);
    if (!bytes) return;
    uform__media_video_t video;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform__media_video_decode(bytes, size, frames, NULL, &video, &outcome);
    CHECK_MSG(status == UFORM_OK, "%s: %s: %s", name, uform_status_name(status), outcome.message);
    if (status == UFORM_OK) {
        CHECK_EQ_INT(video.frames, frames);
        CHECK_EQ_INT(video.width, MEDIA_FIXTURE_VIDEO_WIDTH);
        CHECK_EQ_INT(video.height, MEDIA_FIXTURE_VIDEO_HEIGHT);
        CHECK_EQ_INT(video.rotation, 0);
        CHECK_NEAR(video.duration, (double)total_frames / MEDIA_FIXTURE_FPS, 1.0 / MEDIA_FIXTURE_FPS + 1e-9, 0);
        for (uint32_t f = 0; f < frames; ++f) {
            const uint8_t *pixels = video.pixels + (size_t)f * video.width * video.height * 3;
            int shown = media_fixture_counter(pixels, video.width, video.height);
            double time = video.times[f], target = (f + 0.5) * video.duration / frames;
            int from_time = (int)lround(time * MEDIA_FIXTURE_FPS);
            int expected = (int)floor((f + 0.5) * total_frames / frames);
            if (expected > total_frames - 1) expected = total_frames - 1;
            CHECK_MSG(shown == from_time, "%s frame %u: shows counter %d but its time %.4f s is frame %d", name, f, shown, time, from_time);
            CHECK_MSG(time <= target + 1e-6 && target < time + 1.0 / MEDIA_FIXTURE_FPS + 1e-6,
                      "%s frame %u: time %.4f s does not cover the centre %.4f s", name, f, time, target);
            /* A measured duration (live WebM) may end at the last frame's start: then only the rule holds. */
            if (fabs(video.duration - (double)total_frames / MEDIA_FIXTURE_FPS) < 1e-6)
                CHECK_MSG(shown == expected, "%s frame %u: counter %d, expected frame %d of %d", name, f, shown, expected, total_frames);
        }
        if (expect_seeks) {
            CHECK_MSG(video.seeks >= 1, "%s: %u seeks, expected some", name, video.seeks);
            CHECK_MSG(video.decoded < (uint32_t)total_frames, "%s: decoded %u of %d frames despite seeking", name, video.decoded, total_frames);
        }
        printf("%s: %u frames, %u decoded, %u seeks, duration %.3f s\n", name, frames, video.decoded, video.seeks, video.duration);
    }
    uform__media_video_free(&video);
    free(bytes);
}

/* A rotated clip of colour quadrants: `orientation_map` lists the source quadrant shown in each output
 * quadrant (TL, TR, BL, BR): 90° clockwise moves bottom-left to top-left. */
static void check_rotated(const char *name, int rotation, const int orientation_map[4]) {
    size_t size = 0;
    uint8_t *bytes = media_read(name, &size);
    CHECK(bytes != NULL);
    if (!bytes) return;
    uform__media_video_t video;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform__media_video_decode(bytes, size, 2, NULL, &video, &outcome);
    CHECK_MSG(status == UFORM_OK, "%s: %s: %s", name, uform_status_name(status), outcome.message);
    if (status == UFORM_OK) {
        CHECK_EQ_INT(video.rotation, rotation);
        CHECK_EQ_INT(video.width, MEDIA_FIXTURE_HEIGHT);
        CHECK_EQ_INT(video.height, MEDIA_FIXTURE_WIDTH);
        for (int q = 0; q < 4; ++q) {
            uint32_t x = (q & 1) ? video.width * 3 / 4 : video.width / 4, y = (q & 2) ? video.height * 3 / 4 : video.height / 4;
            const uint8_t *got = video.pixels + ((size_t)y * video.width + x) * 3, *want = media_fixture_quadrants[orientation_map[q]];
            int ok = 1;
            for (int k = 0; k < 3; ++k) ok &= abs((int)got[k] - (int)want[k]) <= 24; /* 4:2:0 YUV of saturated colours */
            CHECK_MSG(ok, "%s quadrant %d: got %d %d %d, expected %d %d %d", name, q, got[0], got[1], got[2], want[0], want[1], want[2]);
        }
    }
    uform__media_video_free(&video);
    free(bytes);
}

static void check_refusals(void) {
    size_t size = 0;
    uint8_t *bytes = media_read("counter.mp4", &size);
    uform__media_video_t video;
    uform_outcome_t outcome = {0};
    if (bytes) {
        uform__media_limits_t small = {.max_pixels = 1000};
        CHECK_STATUS(uform__media_video_decode(bytes, size, 4, &small, &video, &outcome), UFORM_FORMAT);
        CHECK_CONTAINS(outcome.message, "exceed the limit of 1000 pixels (max_pixels)");
        uform__media_limits_t short_limit = {.max_seconds = 1.0};
        CHECK_STATUS(uform__media_video_decode(bytes, size, 4, &short_limit, &video, &outcome), UFORM_FORMAT);
        CHECK_CONTAINS(outcome.message, "exceed the limit of 1.0 s (max_seconds)");
        CHECK_STATUS(uform__media_video_decode(bytes, size, 0, NULL, &video, &outcome), UFORM_INVALID_ARGUMENT);
        CHECK_CONTAINS(outcome.message, "0 frames requested");
        CHECK_STATUS(uform__media_video_decode(bytes, size, 5000, NULL, &video, &outcome), UFORM_INVALID_ARGUMENT);
        CHECK(video.pixels == NULL && video.times == NULL);
        free(bytes);
    }
    bytes = media_read("baseline.jpg", &size);
    if (bytes) {
        CHECK_STATUS(uform__media_video_decode(bytes, size, 4, NULL, &video, &outcome), UFORM_FORMAT);
        CHECK_CONTAINS(outcome.message, "not a video: the bytes look like a JPEG image");
        free(bytes);
    }
    bytes = media_read("stereo.ogg", &size);
    if (bytes) {
        CHECK_STATUS(uform__media_video_decode(bytes, size, 4, NULL, &video, &outcome), UFORM_FORMAT);
        CHECK_CONTAINS(outcome.message, "has no video stream");
        free(bytes);
    }
}

#endif

int main(int argc, char **argv) {
    if (argc > 1) media_dir = argv[1];
#if UFORM_WITH_FFMPEG
    check_counter("counter.mp4", 8, MEDIA_FIXTURE_FRAMES, 0);
    check_counter("counter.mp4", 4, MEDIA_FIXTURE_FRAMES, 0);
    check_counter("counter.webm", 8, MEDIA_FIXTURE_FRAMES, 0);
    check_counter("counter.mkv", 5, MEDIA_FIXTURE_FRAMES, 0);
    check_counter("live.webm", 6, MEDIA_FIXTURE_FRAMES, 0); /* no duration in the header: measured */
    check_counter("long.mp4", 4, MEDIA_FIXTURE_LONG_FRAMES, 1);
    check_counter("long.mp4", 16, MEDIA_FIXTURE_LONG_FRAMES, 1);
    check_counter("short.mp4", 8, MEDIA_FIXTURE_SHORT_FRAMES, 0);
    static const int clockwise[4] = {2, 0, 3, 1}, counter_clockwise[4] = {1, 3, 0, 2};
    check_rotated("rotated90.mp4", 90, clockwise);
    check_rotated("rotated270.mp4", 270, counter_clockwise);
    check_refusals();
#else
    size_t size = 0;
    uint8_t *bytes = media_read("pcm16.wav", &size);
    uform__media_video_t video;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__media_video_decode(bytes, size, 4, NULL, &video, &outcome), UFORM_UNSUPPORTED);
    CHECK_CONTAINS(outcome.message, "this build has none");
    free(bytes);
#endif
    return check_finish();
}
