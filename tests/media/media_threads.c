/*
 * The model decodes items on several threads at once: decoding the same fixtures concurrently on
 * four threads must give exactly the serial results (no shared mutable state in src/media).
 * Labelled `tsan` so the ThreadSanitizer build runs it.
 */
#include <pthread.h>
#include <stdint.h>

#include "common/check.h"
#include "media/common.h"
#include "media/media.h"

static const char *fixtures[] = {
    "baseline.jpg", "cmyk.jpg", "exif6.jpg", "rgb16.png", "palette_trns.png", "lossless_alpha.webp", "stereo16.wav",
#if UFORM_WITH_FFMPEG
    "quadrants.gif", "stereo.flac", "stereo.mp3", "counter.mp4", "rotated90.mp4",
#endif
};
enum { fixture_count = sizeof fixtures / sizeof fixtures[0], thread_count = 4, repeats = 3 };

typedef struct result_t {
    uint8_t *bytes;
    size_t size;
    uint64_t hash; /* FNV-1a over the decoded output */
    int status;
} result_t;

static result_t serial[fixture_count];

static uint64_t fnv(uint64_t hash, const void *data, size_t size) {
    const uint8_t *p = data;
    for (size_t i = 0; i < size; ++i) hash = (hash ^ p[i]) * 0x100000001B3ull;
    return hash;
}

/* Decodes with the entry point the fixture's modality needs and hashes the output. */
static void decode(const uint8_t *bytes, size_t size, int *status, uint64_t *hash) {
    uform__media_kind_t kind = uform__media_sniff(bytes, size);
    uint64_t h = 0xCBF29CE484222325ull;
    if (uform__media_kind_is_image(kind)) {
        uform__media_image_t image;
        *status = uform__media_image_decode(bytes, size, NULL, &image, NULL);
        if (*status == UFORM_OK) h = fnv(h, image.pixels, (size_t)image.width * image.height * 3);
        uform__media_image_free(&image);
    } else if (kind == UFORM__MEDIA_MP4) {
        uform__media_video_t video;
        *status = uform__media_video_decode(bytes, size, 4, NULL, &video, NULL);
        if (*status == UFORM_OK) h = fnv(h, video.pixels, (size_t)video.frames * video.width * video.height * 3);
        uform__media_video_free(&video);
    } else {
        uform__media_audio_t audio;
        *status = uform__media_audio_decode(bytes, size, 0, NULL, &audio, NULL);
        if (*status == UFORM_OK) h = fnv(h, audio.samples, audio.count * sizeof(float));
        uform__media_audio_free(&audio);
    }
    *hash = h;
}

static void *worker(void *argument) {
    size_t offset = (size_t)(uintptr_t)argument, *mismatches = calloc(1, sizeof(size_t));
    for (int r = 0; r < repeats; ++r)
        for (size_t k = 0; k < fixture_count; ++k) {
            size_t i = (k + offset) % fixture_count; /* threads start on different fixtures */
            if (!serial[i].bytes) continue;
            int status;
            uint64_t hash;
            decode(serial[i].bytes, serial[i].size, &status, &hash);
            if (status != serial[i].status || hash != serial[i].hash) ++*mismatches;
        }
    return mismatches;
}

int main(int argc, char **argv) {
    if (argc > 1) media_dir = argv[1];
    for (size_t i = 0; i < fixture_count; ++i) {
        serial[i].bytes = media_read(fixtures[i], &serial[i].size);
        CHECK_MSG(serial[i].bytes != NULL, "%s missing", fixtures[i]);
        if (serial[i].bytes) decode(serial[i].bytes, serial[i].size, &serial[i].status, &serial[i].hash);
        CHECK_MSG(serial[i].status == UFORM_OK, "%s: serial decode failed", fixtures[i]);
    }
    pthread_t threads[thread_count];
    for (size_t t = 0; t < thread_count; ++t) pthread_create(&threads[t], NULL, worker, (void *)(uintptr_t)(t * 3));
    for (size_t t = 0; t < thread_count; ++t) {
        void *mismatches = NULL;
        pthread_join(threads[t], &mismatches);
        CHECK_MSG(mismatches && *(size_t *)mismatches == 0, "thread %zu: %zu decodes differ from the serial ones", t,
                  mismatches ? *(size_t *)mismatches : 0);
        free(mismatches);
    }
    for (size_t i = 0; i < fixture_count; ++i) free(serial[i].bytes);
    return check_finish();
}
