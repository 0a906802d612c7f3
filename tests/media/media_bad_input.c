/*
 * Bad input gets its documented status and a specific message: empty items, NULL arguments,
 * garbage, decompression bombs (headers claiming enormous sizes), the wrong modality, truncation at
 * many offsets and random byte flips of every fixture (which must never crash).
 */
#include <stdint.h>

#include "common/check.h"
#include "media/common.h"
#include "media/media.h"
#include "media/mutate.h"
#include "media_fixtures.h"

static const char *fixtures[] = {
    "baseline.jpg", "progressive.jpg", "grey.jpg", "cmyk.jpg", "exif6.jpg", "rgb8.png", "rgb16.png", "rgba.png",
    "palette_trns.png", "grey_alpha.png", "lossy.webp", "lossless_alpha.webp", "pcm16.wav", "extensible24.wav", "float64.wav",
    "list16.wav", "exif6_motorola.jpg",
#if UFORM_WITH_FFMPEG
    "quadrants.bmp", "quadrants.gif", "stereo.flac", "stereo.ogg", "stereo.opus", "stereo.mp3", "stereo.m4a",
    "counter.mp4", "counter.webm", "counter.mkv", "rotated90.mp4", "live.webm",
#endif
};

/* CRC-32 of PNG chunks (ISO 3309), bit by bit: tiny inputs only. */
static uint32_t crc32_png(const uint8_t *bytes, size_t size) {
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < size; ++i) {
        crc ^= bytes[i];
        for (int bit = 0; bit < 8; ++bit) crc = crc & 1 ? (crc >> 1) ^ 0xEDB88320u : crc >> 1;
    }
    return ~crc;
}

static void put_be32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v; }

static void expect_image_failure(const uint8_t *bytes, size_t size, const uform__media_limits_t *limits, uform_status_t expected,
                                 const char *message) {
    uform__media_image_t image;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__media_image_decode(bytes, size, limits, &image, &outcome), expected);
    CHECK_CONTAINS(outcome.message, message);
    CHECK(image.pixels == NULL && image.width == 0);
}

static void check_empty_and_null(void) {
    uform_outcome_t outcome = {0};
    uform__media_image_t image;
    uform__media_audio_t audio;
    static const uint8_t one = 0;
    expect_image_failure(&one, 0, NULL, UFORM_FORMAT, "not an image: the item is empty (0 bytes)");
    CHECK_STATUS(uform__media_audio_decode(&one, 0, 0, NULL, &audio, &outcome), UFORM_FORMAT);
    CHECK_CONTAINS(outcome.message, "not a recording: the item is empty");
#if UFORM_WITH_FFMPEG
    uform__media_video_t video;
    CHECK_STATUS(uform__media_video_decode(&one, 0, 4, NULL, &video, &outcome), UFORM_FORMAT);
    CHECK_CONTAINS(outcome.message, "not a video: the item is empty");
#endif
    expect_image_failure(NULL, 10, NULL, UFORM_INVALID_ARGUMENT, "NULL bytes with size 10");
    CHECK_STATUS(uform__media_image_decode(&one, 1, NULL, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(uform__media_audio_decode(&one, 1, -1.0, NULL, &audio, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "crop_seconds");
    CHECK_STATUS(uform__media_audio_decode(&one, 1, 0, NULL, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(uform__media_video_decode(&one, 1, 4, NULL, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    /* A NULL outcome is allowed everywhere. */
    CHECK_STATUS(uform__media_image_decode(&one, 0, NULL, &image, NULL), UFORM_FORMAT);
}

static void check_garbage(void) {
    uint8_t garbage[1000];
    uint64_t seed = 1234;
    for (size_t i = 0; i < sizeof garbage; ++i) garbage[i] = (uint8_t)check_random_next(&seed);
    garbage[0] = 0x00, garbage[1] = 0x13;
    expect_image_failure(garbage, sizeof garbage, NULL, UFORM_FORMAT, "not an image: the first bytes match no known format (1000 bytes starting 00 13");
    media_decode_all(garbage, sizeof garbage, "garbage");
    /* A short item shows only the bytes it has, never zeros past its end. */
    expect_image_failure((const uint8_t *)"vm\n", 3, NULL, UFORM_FORMAT, "no known format (3 bytes: 76 6d 0a)");
    expect_image_failure(garbage, 1, NULL, UFORM_FORMAT, "no known format (1 byte: 00)");
    expect_image_failure(garbage, 8, NULL, UFORM_FORMAT, "no known format (8 bytes: 00 13 ");
    uform_modality_t modality;
    uform_outcome_t outcome = {0};
    static const uint8_t binary[5] = {0x00, 0x01, 0x02, 0x03, 0x04};
    CHECK_STATUS(uform_media_probe(binary, 2, &modality, &outcome), UFORM_FORMAT);
    CHECK_CONTAINS(outcome.message, "nor UTF-8 text (its bytes 00 01)");
    CHECK_STATUS(uform_media_probe(binary, 1, &modality, &outcome), UFORM_FORMAT);
    CHECK_CONTAINS(outcome.message, "nor UTF-8 text (its byte 00)");
    CHECK_STATUS(uform_media_probe(binary, 5, &modality, &outcome), UFORM_FORMAT);
    CHECK_CONTAINS(outcome.message, "nor UTF-8 text (first bytes 00 01 02 03)");
    const char text[] = "just some text, certainly not a picture or a recording";
    expect_image_failure((const uint8_t *)text, sizeof text, NULL, UFORM_FORMAT, "not an image");
    /* A JPEG start marker followed by nothing sensible: TurboJPEG may call this a success without a size. */
    const uint8_t fake_jpeg[] = {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    expect_image_failure(fake_jpeg, sizeof fake_jpeg, NULL, UFORM_FORMAT, "JPEG: ");
}

static void check_bombs(void) {
    /* A PNG header claiming 100000 x 100000 RGB pixels: signature, IHDR, an empty IDAT and IEND. */
    uint8_t png[8 + 25 + 12 + 12] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    uint8_t *chunk = png + 8;
    put_be32(chunk, 13), memcpy(chunk + 4, "IHDR", 4), put_be32(chunk + 8, 100000), put_be32(chunk + 12, 100000);
    chunk[16] = 8, chunk[17] = 2, chunk[18] = chunk[19] = chunk[20] = 0;
    put_be32(chunk + 21, crc32_png(chunk + 4, 17));
    chunk += 25;
    put_be32(chunk, 0), memcpy(chunk + 4, "IDAT", 4), put_be32(chunk + 8, crc32_png(chunk + 4, 4));
    chunk += 12;
    put_be32(chunk, 0), memcpy(chunk + 4, "IEND", 4), put_be32(chunk + 8, crc32_png(chunk + 4, 4));
    expect_image_failure(png, sizeof png, NULL, UFORM_FORMAT, "PNG: 100000 x 100000 pixels exceed the limit of 268435456 pixels (max_pixels)");

    /* The baseline JPEG with its frame header patched to 65000 x 65000 (libjpeg stops at 65500). */
    size_t size = 0;
    uint8_t *jpeg = media_read("baseline.jpg", &size);
    if (jpeg) {
        for (size_t i = 2; i + 9 < size; ++i)
            if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {
                jpeg[i + 5] = jpeg[i + 7] = 0xFD, jpeg[i + 6] = jpeg[i + 8] = 0xE8;
                break;
            }
        expect_image_failure(jpeg, size, NULL, UFORM_FORMAT, "JPEG: 65000 x 65000 pixels exceed the limit of 268435456 pixels (max_pixels)");
        free(jpeg);
    }
    uint8_t *webp = media_read("lossy.webp", &size);
    if (webp) {
        uform__media_limits_t limits = {.max_pixels = 100};
        expect_image_failure(webp, size, &limits, UFORM_FORMAT, "WebP: 64 x 48 pixels exceed the limit of 100 pixels (max_pixels)");
        free(webp);
    }
#if UFORM_WITH_FFMPEG
    uint8_t *gif = media_read("quadrants.gif", &size);
    if (gif) {
        gif[6] = gif[7] = gif[8] = gif[9] = 0xFF;
        expect_image_failure(gif, size, NULL, UFORM_FORMAT, "GIF image: 65535 x 65535 pixels exceed the limit");
        free(gif);
    }
    uint8_t *bmp = media_read("quadrants.bmp", &size);
    if (bmp) {
        put_be32(bmp + 18, 0xA0860100u); /* 100000 little-endian */
        put_be32(bmp + 22, 0xA0860100u);
        expect_image_failure(bmp, size, NULL, UFORM_FORMAT, "BMP image: 100000 x 100000 pixels exceed the limit");
        free(bmp);
    }
#endif
    /* A WAV whose data chunk claims 4 GB. */
    uint8_t *wav = media_read("pcm16.wav", &size);
    if (wav) {
        wav[40] = 0xF0, wav[41] = wav[42] = wav[43] = 0xFF;
        uform__media_audio_t audio;
        uform_outcome_t outcome = {0};
        CHECK_STATUS(uform__media_audio_decode(wav, size, 0, NULL, &audio, &outcome), UFORM_FORMAT);
        CHECK_CONTAINS(outcome.message, "WAV: the 'data' chunk claims 4294967280 bytes but only 64000 remain");
        free(wav);
    }
}

static void check_heif(void) {
    /* The start of an AVIF file: a 'ftyp' box with major brand 'avif'. */
    static const uint8_t avif[] = {0, 0, 0, 0x1C, 'f', 't', 'y', 'p', 'a', 'v', 'i', 'f', 0, 0, 0, 0,
                                   'a', 'v', 'i', 'f', 'm', 'i', 'f', '1', 'm', 'i', 'a', 'f'};
    expect_image_failure(avif, sizeof avif, NULL, UFORM_UNSUPPORTED, "HEIF/AVIF image: no decoder");
}

static void check_wrong_modality(void) {
    size_t size = 0;
    uform_outcome_t outcome = {0};
    uform__media_audio_t audio;
    uint8_t *jpeg = media_read("baseline.jpg", &size);
    if (jpeg) {
        CHECK_STATUS(uform__media_audio_decode(jpeg, size, 0, NULL, &audio, &outcome), UFORM_FORMAT);
        CHECK_CONTAINS(outcome.message, "not a recording: the bytes look like a JPEG image");
        free(jpeg);
    }
    uint8_t *wav = media_read("pcm16.wav", &size);
    if (wav) {
        expect_image_failure(wav, size, NULL, UFORM_FORMAT, "not an image: the bytes look like a WAV recording");
        free(wav);
    }
#if UFORM_WITH_FFMPEG
    uint8_t *mp4 = media_read("counter.mp4", &size);
    if (mp4) {
        CHECK_STATUS(uform__media_audio_decode(mp4, size, 0, NULL, &audio, &outcome), UFORM_FORMAT);
        CHECK_CONTAINS(outcome.message, "has no audio stream");
        expect_image_failure(mp4, size, NULL, UFORM_FORMAT, "not an image: the bytes look like an MP4 container");
        free(mp4);
    }
#else
    uint8_t *gif = media_read("rgb8.png", &size); /* stands in: without FFmpeg there is no GIF fixture */
    free(gif);
#endif
}

/* Truncation at many offsets: never a crash; JPEG, PNG and WebP cut well before their end must fail. */
/* Containers that reference other resources (an HLS playlist naming a local file) must not reach
 * them: decoding reads only the caller's bytes. */
static void check_no_nested_resources(void) {
#if UFORM_WITH_FFMPEG
    const char playlist[] = "#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10.0,\n/etc/hostname\n#EXT-X-ENDLIST\n";
    uform__media_audio_t audio;
    uform__media_video_t video;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__media_audio_decode(playlist, sizeof playlist - 1, 0, NULL, &audio, &outcome), UFORM_FORMAT);
    CHECK(audio.samples == NULL);
    CHECK_STATUS(uform__media_video_decode(playlist, sizeof playlist - 1, 4, NULL, &video, &outcome), UFORM_FORMAT);
    CHECK(video.pixels == NULL);
#endif
}

static void check_truncation(const char *name) {
    size_t size = 0;
    uint8_t *bytes = media_read(name, &size);
    if (!bytes) return;
    int strict = strstr(name, ".jpg") || strstr(name, ".png") || strstr(name, ".webp") || strstr(name, ".wav");
    size_t step = size / 97 + 1;
    for (size_t cut = 0; cut < size; cut += cut < 64 ? 1 : step) {
        uint8_t *copy = malloc(cut ? cut : 1);
        memcpy(copy, bytes, cut);
        char what[128];
        snprintf(what, sizeof what, "%s cut at %zu of %zu", name, cut, size);
        int succeeded = media_decode_all(copy, cut, what);
        if (strict && cut + 16 < size) CHECK_MSG(succeeded == 0, "%s: a decode succeeded", what);
        free(copy);
    }
    free(bytes);
}

static void check_flips(const char *name, uint64_t seed) {
    size_t size = 0;
    uint8_t *bytes = media_read(name, &size);
    if (!bytes) return;
    uint8_t *copy = malloc(size);
    for (int round = 0; round < 40; ++round) {
        memcpy(copy, bytes, size);
        size_t length = size;
        for (int n = 0; n < 1 + round % 3; ++n) media_mutate(copy, &length, &seed);
        char what[128];
        snprintf(what, sizeof what, "%s mutation %d (seed %llu)", name, round, (unsigned long long)seed);
        media_decode_all(copy, length, what);
    }
    free(copy);
    free(bytes);
}

int main(int argc, char **argv) {
    if (argc > 1) media_dir = argv[1];
    uint64_t seed = 20261129;
    printf("seed %llu\n", (unsigned long long)seed);
    check_empty_and_null();
    check_garbage();
    check_bombs();
    check_wrong_modality();
    check_heif();
    check_no_nested_resources();
    for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; ++i) check_truncation(fixtures[i]);
    for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; ++i) check_flips(fixtures[i], seed + i);
    return check_finish();
}
