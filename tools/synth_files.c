/* The still-picture and WAV writers of `uform synth` (synth.h): PNG through libspng, JPEG through
 * TurboJPEG, WAV by hand; every file written under a temporary name and renamed into place. */
#include <errno.h>
#include <spng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>
#include <unistd.h>

#include "synth.h"

int synth_write_file(const char *path, const void *bytes, size_t size, char *error, size_t capacity) {
    size_t length = strlen(path);
    char *temporary = malloc(length + 8);
    if (!temporary) return snprintf(error, capacity, "out of memory writing '%s'", path), -1;
    snprintf(temporary, length + 8, "%s.part", path);
    FILE *file = fopen(temporary, "wb");
    int ok = file && fwrite(bytes, 1, size, file) == size;
    if (file && fclose(file) != 0) ok = 0;
    if (ok && rename(temporary, path) != 0) ok = 0;
    if (!ok) {
        snprintf(error, capacity, "cannot write '%s': %s", path, strerror(errno));
        unlink(temporary);
    }
    free(temporary);
    return ok ? 0 : -1;
}

int synth_write_png(const char *path, const uint8_t *rgb, size_t width, size_t height, char *error, size_t capacity) {
    spng_ctx *context = spng_ctx_new(SPNG_CTX_ENCODER);
    if (!context) return snprintf(error, capacity, "out of memory encoding '%s'", path), -1;
    struct spng_ihdr header = {.width = (uint32_t)width, .height = (uint32_t)height, .bit_depth = 8,
                               .color_type = SPNG_COLOR_TYPE_TRUECOLOR};
    int code = spng_set_option(context, SPNG_ENCODE_TO_BUFFER, 1);
    if (!code) code = spng_set_ihdr(context, &header);
    if (!code) code = spng_encode_image(context, rgb, width * height * 3, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
    size_t length = 0;
    void *png = code ? NULL : spng_get_png_buffer(context, &length, &code);
    int status = png ? synth_write_file(path, png, length, error, capacity)
                     : (snprintf(error, capacity, "cannot encode '%s': %s", path, spng_strerror(code)), -1);
    free(png);
    spng_ctx_free(context);
    return status;
}

int synth_write_jpeg(const char *path, const uint8_t *rgb, size_t width, size_t height, char *error, size_t capacity) {
    tjhandle handle = tjInitCompress();
    unsigned char *jpeg = NULL;
    unsigned long length = 0;
    int status = -1;
    if (!handle) snprintf(error, capacity, "cannot encode '%s': %s", path, tjGetErrorStr2(NULL));
    else if (tjCompress2(handle, rgb, (int)width, 0, (int)height, TJPF_RGB, &jpeg, &length, TJSAMP_420, 92, 0) != 0)
        snprintf(error, capacity, "cannot encode '%s': %s", path, tjGetErrorStr2(handle));
    else status = synth_write_file(path, jpeg, length, error, capacity);
    if (jpeg) tjFree(jpeg);
    if (handle) tjDestroy(handle);
    return status;
}

static void put16(unsigned char *at, unsigned value) { at[0] = (unsigned char)value, at[1] = (unsigned char)(value >> 8); }
static void put32(unsigned char *at, unsigned value) { put16(at, value & 0xFFFF), put16(at + 2, value >> 16); }

int synth_write_wav(const char *path, const int16_t *samples, size_t count, int rate, char *error, size_t capacity) {
    size_t bytes = count * 2;
    unsigned char *wav = malloc(44 + bytes);
    if (!wav) return snprintf(error, capacity, "out of memory writing '%s'", path), -1;
    /* RIFF/WAVE, one fmt chunk (PCM, mono, 16-bit), one data chunk. */
    memcpy(wav, "RIFF", 4), put32(wav + 4, (unsigned)(36 + bytes)), memcpy(wav + 8, "WAVEfmt ", 8);
    put32(wav + 16, 16), put16(wav + 20, 1), put16(wav + 22, 1), put32(wav + 24, (unsigned)rate);
    put32(wav + 28, (unsigned)rate * 2), put16(wav + 32, 2), put16(wav + 34, 16);
    memcpy(wav + 36, "data", 4), put32(wav + 40, (unsigned)bytes);
    for (size_t i = 0; i < count; ++i) put16(wav + 44 + 2 * i, (unsigned)(uint16_t)samples[i]);
    int status = synth_write_file(path, wav, 44 + bytes, error, capacity);
    free(wav);
    return status;
}
