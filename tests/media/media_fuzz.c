/*
 * Replay fuzzing: many seeded mutations of every fixture fed to the image, audio and video entry
 * points (each input to all three, so wrong-modality paths are exercised too). Passes when every
 * call answers a documented status with consistent outputs and nothing crashes; run under ASan
 * (`-DUFORM_SANITIZE=address,undefined`) it also proves nothing leaks. Bounded by rounds and by
 * time so it stays under a minute: `media_fuzz DIR [SEED] [SECONDS]`.
 */
#include <stdint.h>
#include <time.h>

#include "common/check.h"
#include "media/common.h"
#include "media/media.h"
#include "media/mutate.h"
#include "media_fixtures.h"

static const char *fixtures[] = {
    "baseline.jpg", "progressive.jpg", "grey.jpg", "cmyk.jpg", "exif5.jpg", "rgb8.png", "rgb16.png", "rgba.png", "grey.png",
    "palette.png", "palette_trns.png", "grey_alpha.png", "lossy.webp", "lossless_alpha.webp", "pcm8.wav", "pcm16.wav",
    "pcm24.wav", "float32.wav", "extensible24.wav",
#if UFORM_WITH_FFMPEG
    "quadrants.bmp", "quadrants.gif", "stereo.flac", "stereo.ogg", "stereo.opus", "stereo.mp3", "stereo.m4a", "counter.mp4",
    "counter.webm", "counter.mkv", "short.mp4", "rotated270.mp4",
#endif
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc > 1) media_dir = argv[1];
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 42;
    double budget = argc > 3 ? atof(argv[3]) : 30.0, start = now();
    printf("seed %llu, budget %.0f s\n", (unsigned long long)seed, budget);
    enum { fixture_count = sizeof fixtures / sizeof fixtures[0] };
    uint8_t *originals[fixture_count];
    size_t sizes[fixture_count];
    for (size_t i = 0; i < fixture_count; ++i) {
        originals[i] = media_read(fixtures[i], &sizes[i]);
        CHECK_MSG(originals[i] != NULL, "fixture %s missing", fixtures[i]);
    }
    size_t calls = 0, successes = 0;
    for (int round = 0; round < 400 && now() - start < budget; ++round) {
        for (size_t i = 0; i < fixture_count; ++i) {
            if (!originals[i]) continue;
            size_t length = sizes[i];
            uint8_t *copy = malloc(length);
            memcpy(copy, originals[i], length);
            uint64_t case_seed = seed * 1000003u + (uint64_t)round * 131u + i;
            uint64_t state = case_seed;
            for (uint64_t n = 1 + check_random_next(&state) % 4; n; --n) media_mutate(copy, &length, &state);
            char what[160];
            snprintf(what, sizeof what, "%s round %d (replay: seed %llu)", fixtures[i], round, (unsigned long long)case_seed);
            successes += (size_t)media_decode_all(copy, length, what);
            calls += 3;
            free(copy);
        }
    }
    printf("%zu calls, %zu decoded despite mutations, %.1f s\n", calls, successes, now() - start);
    for (size_t i = 0; i < fixture_count; ++i) free(originals[i]);
    return check_finish();
}
