/*
 * media_fixtures OUTPUT_DIR: writes every media fixture the tests decode, with the encoders of the
 * libraries the build links (TurboJPEG, libspng, libwebp, FFmpeg), so no binary fixture lives in git.
 * Contents are defined in media_fixtures.h. Exit status 0 when every file was written.
 * `media_fixtures --photos COUNT DIR [WIDTH HEIGHT [QUALITY [SEED]]]` writes a corpus of textured
 * JPEG photos instead (224 × 224 at quality 90 by default) for the index tests and benchmarks.
 */
#include <errno.h>
#include <math.h>
#include <spng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <webp/encode.h>

#if UFORM_WITH_FFMPEG
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/display.h>
#include <libavutil/opt.h>
#endif

#if MEDIA_FIXTURES_LIBJPEG
#include <jpeglib.h>
static void write_plain_cmyk(void);
#endif

#include "media_fixtures.h"

static const char *output_dir;
static int failures;

static void fail(const char *name, const char *why) {
    fprintf(stderr, "media_fixtures: %s: %s\n", name, why);
    ++failures;
}

static void write_file(const char *name, const void *bytes, size_t size) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", output_dir, name);
    FILE *file = fopen(path, "wb");
    if (!file || fwrite(bytes, 1, size, file) != size || fclose(file) != 0) fail(name, strerror(errno));
}

/* ---- Images ---------------------------------------------------------------------------------- */

enum { W = MEDIA_FIXTURE_WIDTH, H = MEDIA_FIXTURE_HEIGHT };

static void quadrant_rgb(uint8_t *rgb) {
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) memcpy(rgb + (y * W + x) * 3, media_fixture_quadrants[media_fixture_quadrant(x, y, W, H)], 3);
}

static void quadrant_rgba(uint8_t *rgba) {
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
            int q = media_fixture_quadrant(x, y, W, H);
            memcpy(rgba + (y * W + x) * 4, media_fixture_quadrants[q], 3);
            rgba[(y * W + x) * 4 + 3] = media_fixture_alpha[q];
        }
}

/* `orientation` > 0 inserts an EXIF segment with that orientation, in little-endian TIFF order or,
 * with `big_endian`, in Motorola order. */
static void write_jpeg(const char *name, const uint8_t *pixels, int format, int subsampling, int flags, int orientation,
                       int big_endian) {
    tjhandle handle = tjInitCompress();
    unsigned char *jpeg = NULL;
    unsigned long size = 0;
    if (!handle || tjCompress2(handle, pixels, W, 0, H, format, &jpeg, &size, subsampling, 92, flags) != 0) {
        fail(name, handle ? tjGetErrorStr2(handle) : "tjInitCompress");
        if (handle) tjDestroy(handle);
        return;
    }
    if (orientation) {
        /* An EXIF APP1 segment right after SOI: "Exif\0\0", a little-endian TIFF header and IFD0
         * with one entry, Orientation (0x0112, SHORT, count 1). */
        uint8_t app1[] = {0xFF, 0xE1, 0, 34, 'E', 'x', 'i', 'f', 0, 0,
                          'I', 'I', 42, 0, 8, 0, 0, 0,            /* TIFF header, IFD0 at 8 */
                          1, 0,                                    /* one entry */
                          0x12, 0x01, 3, 0, 1, 0, 0, 0, (uint8_t)orientation, 0, 0, 0,
                          0, 0, 0, 0};                             /* no next IFD */
        if (big_endian) { /* the same structure in Motorola byte order */
            static const uint8_t motorola[] = {'M', 'M', 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1};
            memcpy(app1 + 10, motorola, sizeof motorola);
            app1[28] = 0, app1[29] = (uint8_t)orientation;
        }
        size_t total = size + sizeof app1;
        uint8_t *with = malloc(total);
        memcpy(with, jpeg, 2);
        memcpy(with + 2, app1, sizeof app1);
        memcpy(with + 2 + sizeof app1, jpeg + 2, size - 2);
        write_file(name, with, total);
        free(with);
    } else {
        write_file(name, jpeg, size);
    }
    tjFree(jpeg);
    tjDestroy(handle);
}

static void write_jpegs(void) {
    uint8_t rgb[W * H * 3], cmyk[W * H * 4];
    quadrant_rgb(rgb);
    write_jpeg("baseline.jpg", rgb, TJPF_RGB, TJSAMP_420, 0, 0, 0);
    write_jpeg("progressive.jpg", rgb, TJPF_RGB, TJSAMP_420, TJFLAG_PROGRESSIVE, 0, 0);
    write_jpeg("grey.jpg", rgb, TJPF_RGB, TJSAMP_GRAY, 0, 0, 0);
    for (int orientation = 2; orientation <= 8; ++orientation) {
        char name[32];
        snprintf(name, sizeof name, "exif%d.jpg", orientation);
        write_jpeg(name, rgb, TJPF_RGB, TJSAMP_444, 0, orientation, 0);
    }
    write_jpeg("exif6_motorola.jpg", rgb, TJPF_RGB, TJSAMP_444, 0, 6, 1);
    /* CMYK as Adobe stores it, inverted (255 = no ink): for a pure RGB colour K is no ink and each
     * C/M/Y stored value equals the matching R/G/B. TurboJPEG writes it as YCCK with an Adobe marker. */
    for (int i = 0; i < W * H; ++i) {
        cmyk[4 * i + 0] = rgb[3 * i + 0], cmyk[4 * i + 1] = rgb[3 * i + 1], cmyk[4 * i + 2] = rgb[3 * i + 2];
        cmyk[4 * i + 3] = 255;
    }
    write_jpeg("cmyk.jpg", cmyk, TJPF_CMYK, TJSAMP_444, 0, 0, 0);
#if MEDIA_FIXTURES_LIBJPEG
    write_plain_cmyk();
#endif
}

#if MEDIA_FIXTURES_LIBJPEG
/* Plain CMYK without the Adobe segment (stored ink amounts, 0 = no ink), which TurboJPEG cannot
 * write: through the libjpeg API, with the marker switched off after choosing the colour space. */
static void write_plain_cmyk(void) {
    uint8_t cmyk[W * H * 4];
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
            const uint8_t *rgb = media_fixture_quadrants[media_fixture_quadrant((uint32_t)x, (uint32_t)y, W, H)];
            uint8_t *p = cmyk + (y * W + x) * 4;
            p[0] = (uint8_t)(255 - rgb[0]), p[1] = (uint8_t)(255 - rgb[1]), p[2] = (uint8_t)(255 - rgb[2]), p[3] = 0;
        }
    struct jpeg_compress_struct compress;
    struct jpeg_error_mgr errors;
    compress.err = jpeg_std_error(&errors);
    jpeg_create_compress(&compress);
    unsigned char *output = NULL;
    unsigned long size = 0;
    jpeg_mem_dest(&compress, &output, &size);
    compress.image_width = W, compress.image_height = H, compress.input_components = 4, compress.in_color_space = JCS_CMYK;
    jpeg_set_defaults(&compress);
    jpeg_set_colorspace(&compress, JCS_CMYK);
    compress.write_Adobe_marker = FALSE;
    jpeg_set_quality(&compress, 92, TRUE);
    jpeg_start_compress(&compress, TRUE);
    for (int y = 0; y < H; ++y) {
        JSAMPROW row = cmyk + y * W * 4;
        jpeg_write_scanlines(&compress, &row, 1);
    }
    jpeg_finish_compress(&compress);
    write_file("cmyk_plain.jpg", output, size);
    free(output);
    jpeg_destroy_compress(&compress);
}
#endif

static void write_png(const char *name, const void *pixels, size_t size, int color_type, int bit_depth,
                      struct spng_plte *palette, struct spng_trns *transparency) {
    spng_ctx *context = spng_ctx_new(SPNG_CTX_ENCODER);
    struct spng_ihdr header = {.width = W, .height = H, .bit_depth = (uint8_t)bit_depth, .color_type = (uint8_t)color_type};
    int error = spng_set_option(context, SPNG_ENCODE_TO_BUFFER, 1);
    if (!error) error = spng_set_ihdr(context, &header);
    if (!error && palette) error = spng_set_plte(context, palette);
    if (!error && transparency) error = spng_set_trns(context, transparency);
    /* SPNG_FMT_RAW: samples as stored in PNG, 16-bit ones big-endian. */
    if (!error) error = spng_encode_image(context, pixels, size, SPNG_FMT_RAW, SPNG_ENCODE_FINALIZE);
    size_t length = 0;
    void *png = error ? NULL : spng_get_png_buffer(context, &length, &error);
    if (png) write_file(name, png, length);
    else fail(name, spng_strerror(error));
    free(png);
    spng_ctx_free(context);
}

static void write_pngs(void) {
    uint8_t rgb[W * H * 3], rgba[W * H * 4], rgb16[W * H * 6], grey[W * H], grey_alpha[W * H * 2], indexed[W * H];
    quadrant_rgb(rgb);
    quadrant_rgba(rgba);
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
            int i = y * W + x, q = media_fixture_quadrant(x, y, W, H);
            /* 16-bit: the high byte is the quadrant colour, the low byte a varying pattern a correct
             * 16→8 reduction (keep the high byte) must ignore. */
            for (int c = 0; c < 3; ++c) rgb16[6 * i + 2 * c] = rgb[3 * i + c], rgb16[6 * i + 2 * c + 1] = (uint8_t)(x * 4 + c);
            grey[i] = media_fixture_grey[q];
            grey_alpha[2 * i] = media_fixture_grey[q], grey_alpha[2 * i + 1] = media_fixture_alpha[q];
            indexed[i] = (uint8_t)q;
        }
    write_png("rgb8.png", rgb, sizeof rgb, SPNG_COLOR_TYPE_TRUECOLOR, 8, NULL, NULL);
    write_png("rgb16.png", rgb16, sizeof rgb16, SPNG_COLOR_TYPE_TRUECOLOR, 16, NULL, NULL);
    write_png("rgba.png", rgba, sizeof rgba, SPNG_COLOR_TYPE_TRUECOLOR_ALPHA, 8, NULL, NULL);
    write_png("grey.png", grey, sizeof grey, SPNG_COLOR_TYPE_GRAYSCALE, 8, NULL, NULL);
    write_png("grey_alpha.png", grey_alpha, sizeof grey_alpha, SPNG_COLOR_TYPE_GRAYSCALE_ALPHA, 8, NULL, NULL);
    struct spng_plte palette = {.n_entries = 4};
    for (int q = 0; q < 4; ++q)
        palette.entries[q] = (struct spng_plte_entry){media_fixture_quadrants[q][0], media_fixture_quadrants[q][1], media_fixture_quadrants[q][2], 255};
    write_png("palette.png", indexed, sizeof indexed, SPNG_COLOR_TYPE_INDEXED, 8, &palette, NULL);
    /* Truecolour with a tRNS key: the top-right quadrant's colour is fully transparent. */
    struct spng_trns key = {.red = media_fixture_quadrants[1][0], .green = media_fixture_quadrants[1][1], .blue = media_fixture_quadrants[1][2]};
    write_png("rgb_key.png", rgb, sizeof rgb, SPNG_COLOR_TYPE_TRUECOLOR, 8, NULL, &key);
    struct spng_trns transparency = {.n_type3_entries = 4};
    memcpy(transparency.type3_alpha, media_fixture_alpha, 4);
    write_png("palette_trns.png", indexed, sizeof indexed, SPNG_COLOR_TYPE_INDEXED, 8, &palette, &transparency);
}

static void write_webps(void) {
    uint8_t rgb[W * H * 3], rgba[W * H * 4];
    quadrant_rgb(rgb);
    quadrant_rgba(rgba);
    uint8_t *output = NULL;
    size_t size = WebPEncodeRGB(rgb, W, H, W * 3, 90.0f, &output);
    if (size) write_file("lossy.webp", output, size);
    else fail("lossy.webp", "WebPEncodeRGB");
    WebPFree(output);
    size = WebPEncodeLosslessRGBA(rgba, W, H, W * 4, &output);
    if (size) write_file("lossless_alpha.webp", output, size);
    else fail("lossless_alpha.webp", "WebPEncodeLosslessRGBA");
    WebPFree(output);
}

/* ---- WAV, written by hand: every sample format and the extensible header --------------------- */

static void put16(uint8_t **p, uint32_t v) { (*p)[0] = (uint8_t)v, (*p)[1] = (uint8_t)(v >> 8), *p += 2; }
static void put32(uint8_t **p, uint32_t v) { put16(p, v & 0xFFFF), put16(p, v >> 16); }

static double sine(double amplitude, size_t i, int rate) { return amplitude * sin(2 * M_PI * MEDIA_FIXTURE_HZ * (double)i / rate); }

/* `tag` 1 (integer PCM) or 3 (float); `extensible` wraps it in WAVE_FORMAT_EXTENSIBLE; `list` puts an
 * odd-sized LIST chunk (padded to even) before 'fmt ', as tagging tools do. */
static void write_wav_chunks(const char *name, int channels, int rate, int tag, int bits, int extensible, int list) {
    size_t frames = (size_t)(MEDIA_FIXTURE_SECONDS * rate), block = (size_t)channels * (size_t)bits / 8, data = frames * block;
    size_t header = (extensible ? 12 + 8 + 40 + 8 : 12 + 8 + 16 + 8) + (list ? 8 + 6 : 0);
    uint8_t *bytes = calloc(1, header + data), *p = bytes;
    memcpy(p, "RIFF", 4), p += 4, put32(&p, (uint32_t)(header + data - 8)), memcpy(p, "WAVE", 4), p += 4;
    if (list) memcpy(p, "LIST", 4), p += 4, put32(&p, 5), memcpy(p, "INFOx\0", 6), p += 6;
    memcpy(p, "fmt ", 4), p += 4, put32(&p, extensible ? 40 : 16);
    put16(&p, extensible ? 0xFFFE : (uint32_t)tag), put16(&p, (uint32_t)channels), put32(&p, (uint32_t)rate);
    put32(&p, (uint32_t)(rate * block)), put16(&p, (uint32_t)block), put16(&p, (uint32_t)bits);
    if (extensible) {
        static const uint8_t tail[14] = {0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71};
        put16(&p, 22), put16(&p, (uint32_t)bits), put32(&p, channels == 2 ? 3 : 4), put16(&p, (uint32_t)tag);
        memcpy(p, tail, 14), p += 14;
    }
    memcpy(p, "data", 4), p += 4, put32(&p, (uint32_t)data);
    for (size_t i = 0; i < frames; ++i)
        for (int c = 0; c < channels; ++c) {
            double v = channels == 1 ? sine(MEDIA_FIXTURE_MONO, i, rate) : sine(c == 0 ? MEDIA_FIXTURE_LEFT : MEDIA_FIXTURE_RIGHT, i, rate);
            if (tag == 3 && bits == 32) { float f = (float)v; memcpy(p, &f, 4); p += 4; }
            else if (tag == 3) { memcpy(p, &v, 8); p += 8; }
            else if (bits == 8) *p++ = (uint8_t)lrint(128 + v * 127);
            else {
                int64_t scaled = llrint(v * (double)((1ll << (bits - 1)) - 1));
                for (int b = 0; b < bits / 8; ++b) *p++ = (uint8_t)(scaled >> (8 * b));
            }
        }
    write_file(name, bytes, header + data);
    free(bytes);
}

static void write_wav(const char *name, int channels, int rate, int tag, int bits, int extensible) {
    write_wav_chunks(name, channels, rate, tag, bits, extensible, 0);
}

static void write_wavs(void) {
    write_wav_chunks("list16.wav", 1, 16000, 1, 16, 0, 1);
    write_wav("pcm16.wav", 1, 16000, 1, 16, 0);
    write_wav("pcm8.wav", 1, 8000, 1, 8, 0);
    write_wav("pcm24.wav", 1, 22050, 1, 24, 0);
    write_wav("pcm32.wav", 1, 48000, 1, 32, 0);
    write_wav("float32.wav", 1, 44100, 3, 32, 0);
    write_wav("float64.wav", 1, 32000, 3, 64, 0);
    write_wav("extensible24.wav", 2, 48000, 1, 24, 1);
    write_wav("stereo16.wav", 2, 44100, 1, 16, 0);
}

#if UFORM_WITH_FFMPEG
/* ---- FFmpeg encoders: compressed audio, video, BMP and GIF ----------------------------------- */

typedef struct muxer_t {
    AVFormatContext *format;
    AVCodecContext *encoder;
    AVStream *stream;
    AVPacket *packet;
    int ok;
} muxer_t;

/* Opens `path` with the container `container` and one stream encoded by `codec_name`; `setup`
 * fills the encoder's parameters before it opens. */
static int muxer_open(muxer_t *muxer, const char *name, const char *container, const char *codec_name,
                      void (*setup)(AVCodecContext *, const AVCodec *, void *), void *setup_data) {
    memset(muxer, 0, sizeof *muxer);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", output_dir, name);
    const AVCodec *codec = avcodec_find_encoder_by_name(codec_name);
    if (!codec) return fail(name, "encoder missing from this FFmpeg build"), 0;
    if (avformat_alloc_output_context2(&muxer->format, NULL, container, path) < 0) return fail(name, "no muxer"), 0;
    muxer->stream = avformat_new_stream(muxer->format, NULL);
    muxer->encoder = avcodec_alloc_context3(codec);
    muxer->packet = av_packet_alloc();
    setup(muxer->encoder, codec, setup_data);
    if (muxer->format->oformat->flags & AVFMT_GLOBALHEADER) muxer->encoder->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    char message[AV_ERROR_MAX_STRING_SIZE];
    int error = avcodec_open2(muxer->encoder, codec, NULL);
    if (error >= 0) error = avcodec_parameters_from_context(muxer->stream->codecpar, muxer->encoder);
    if (error >= 0) muxer->stream->time_base = muxer->encoder->time_base;
    if (error >= 0 && !(muxer->format->oformat->flags & AVFMT_NOFILE)) error = avio_open(&muxer->format->pb, path, AVIO_FLAG_WRITE);
    muxer->ok = error >= 0;
    if (!muxer->ok) fail(name, av_make_error_string(message, sizeof message, error));
    return muxer->ok;
}

static int muxer_header(muxer_t *muxer, const char *name) {
    if (avformat_write_header(muxer->format, NULL) < 0) return fail(name, "avformat_write_header"), muxer->ok = 0;
    return 1;
}

/* Sends a frame (NULL drains) and writes every packet that comes out. */
static void muxer_send(muxer_t *muxer, AVFrame *frame) {
    if (!muxer->ok || avcodec_send_frame(muxer->encoder, frame) < 0) { muxer->ok = 0; return; }
    while (avcodec_receive_packet(muxer->encoder, muxer->packet) >= 0) {
        /* Video encoders leave durations at 0; without them the muxer counts the stream one frame short. */
        if (muxer->packet->duration == 0 && muxer->encoder->codec_type == AVMEDIA_TYPE_VIDEO) muxer->packet->duration = 1;
        av_packet_rescale_ts(muxer->packet, muxer->encoder->time_base, muxer->stream->time_base);
        muxer->packet->stream_index = muxer->stream->index;
        if (av_interleaved_write_frame(muxer->format, muxer->packet) < 0) muxer->ok = 0;
    }
}

static void muxer_close(muxer_t *muxer, const char *name) {
    if (muxer->ok) {
        muxer_send(muxer, NULL);
        if (av_write_trailer(muxer->format) < 0) muxer->ok = 0;
        if (!muxer->ok) fail(name, "encoding or muxing failed");
    }
    if (muxer->format && muxer->format->pb && !(muxer->format->oformat->flags & AVFMT_NOFILE)) avio_closep(&muxer->format->pb);
    avcodec_free_context(&muxer->encoder);
    av_packet_free(&muxer->packet);
    avformat_free_context(muxer->format);
}

typedef struct audio_setup_t {
    int rate, bit_rate;
} audio_setup_t;

static void setup_audio(AVCodecContext *encoder, const AVCodec *codec, void *data) {
    audio_setup_t *setup = data;
    encoder->sample_fmt = codec->sample_fmts ? codec->sample_fmts[0] : AV_SAMPLE_FMT_S16;
    encoder->sample_rate = setup->rate;
    av_channel_layout_default(&encoder->ch_layout, 2);
    encoder->bit_rate = setup->bit_rate;
    encoder->time_base = (AVRational){1, setup->rate};
}

static void put_sample(AVFrame *frame, int channel, int index, double value) {
    enum AVSampleFormat format = (enum AVSampleFormat)frame->format;
    int planar = av_sample_fmt_is_planar(format), channels = frame->ch_layout.nb_channels;
    int bytes = av_get_bytes_per_sample(format);
    uint8_t *p = planar ? frame->extended_data[channel] + (size_t)index * bytes
                        : frame->extended_data[0] + ((size_t)index * channels + channel) * bytes;
    switch (av_get_packed_sample_fmt(format)) {
    case AV_SAMPLE_FMT_S16: { int16_t v = (int16_t)lrint(value * 32767); memcpy(p, &v, 2); break; }
    case AV_SAMPLE_FMT_S32: { int32_t v = (int32_t)lrint(value * 2147483647.0); memcpy(p, &v, 4); break; }
    case AV_SAMPLE_FMT_FLT: { float v = (float)value; memcpy(p, &v, 4); break; }
    case AV_SAMPLE_FMT_DBL: memcpy(p, &value, 8); break;
    default: break;
    }
}

/* Two seconds of stereo sine (left MEDIA_FIXTURE_LEFT, right MEDIA_FIXTURE_RIGHT). */
static void write_audio(const char *name, const char *container, const char *codec_name, int rate, int bit_rate) {
    muxer_t muxer;
    audio_setup_t setup = {rate, bit_rate};
    if (!muxer_open(&muxer, name, container, codec_name, setup_audio, &setup) || !muxer_header(&muxer, name)) {
        muxer_close(&muxer, name);
        return;
    }
    int frame_size = muxer.encoder->frame_size > 0 ? muxer.encoder->frame_size : 1024;
    int total = (int)(MEDIA_FIXTURE_SECONDS * rate);
    AVFrame *frame = av_frame_alloc();
    for (int start = 0; start < total && muxer.ok; start += frame_size) {
        int count = total - start < frame_size ? total - start : frame_size;
        /* Fixed-size encoders (Vorbis, AAC, Opus) pad the last frame themselves only if allowed. */
        if (!(muxer.encoder->codec->capabilities & AV_CODEC_CAP_VARIABLE_FRAME_SIZE) && muxer.encoder->frame_size > 0 && count < frame_size &&
            !(muxer.encoder->codec->capabilities & AV_CODEC_CAP_SMALL_LAST_FRAME))
            break;
        frame->format = muxer.encoder->sample_fmt;
        frame->nb_samples = count;
        frame->sample_rate = rate;
        av_channel_layout_copy(&frame->ch_layout, &muxer.encoder->ch_layout);
        if (av_frame_get_buffer(frame, 0) < 0) { muxer.ok = 0; break; }
        for (int i = 0; i < count; ++i) {
            put_sample(frame, 0, i, sine(MEDIA_FIXTURE_LEFT, (size_t)(start + i), rate));
            put_sample(frame, 1, i, sine(MEDIA_FIXTURE_RIGHT, (size_t)(start + i), rate));
        }
        frame->pts = start;
        muxer_send(&muxer, frame);
        av_frame_unref(frame);
    }
    av_frame_free(&frame);
    muxer_close(&muxer, name);
}

typedef struct video_setup_t {
    int width, height, fps, gop;
    enum AVPixelFormat format;
} video_setup_t;

static void setup_video(AVCodecContext *encoder, const AVCodec *codec, void *data) {
    video_setup_t *setup = data;
    encoder->width = setup->width, encoder->height = setup->height;
    encoder->pix_fmt = setup->format;
    encoder->time_base = (AVRational){1, setup->fps};
    encoder->framerate = (AVRational){setup->fps, 1};
    encoder->gop_size = setup->gop;
    if (!strcmp(codec->name, "libx264")) { /* B-frames on, so decoding order differs from presentation order */
        av_opt_set(encoder->priv_data, "preset", "veryfast", 0);
        encoder->max_b_frames = 2;
        encoder->keyint_min = setup->gop;
    }
    if (!strcmp(codec->name, "libvpx-vp9")) {
        av_opt_set(encoder->priv_data, "deadline", "realtime", 0);
        av_opt_set_int(encoder->priv_data, "cpu-used", 8, 0);
        encoder->bit_rate = 400000;
    }
}

/* Fills a YUV 4:2:0 frame: the counter stripes of frame `index`, or the colour quadrants. */
static void fill_yuv(AVFrame *frame, int index, int quadrants) {
    for (int y = 0; y < frame->height; ++y)
        for (int x = 0; x < frame->width; ++x) {
            double r, g, b;
            if (quadrants) {
                const uint8_t *c = media_fixture_quadrants[media_fixture_quadrant((uint32_t)x, (uint32_t)y, (uint32_t)frame->width, (uint32_t)frame->height)];
                r = c[0], g = c[1], b = c[2];
            } else if (y < frame->height / 2) {
                int bit = x / (frame->width / MEDIA_FIXTURE_BITS);
                r = g = b = bit < MEDIA_FIXTURE_BITS && (index >> bit & 1) ? 235 : 16;
            } else {
                r = g = b = 128;
            }
            /* BT.601 limited range, the encoder's default interpretation. */
            frame->data[0][y * frame->linesize[0] + x] = (uint8_t)lrint(16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255);
            if (!(x & 1) && !(y & 1)) {
                frame->data[1][(y / 2) * frame->linesize[1] + x / 2] = (uint8_t)lrint(128 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255);
                frame->data[2][(y / 2) * frame->linesize[2] + x / 2] = (uint8_t)lrint(128 + (112.0 * r - 93.786 * g - 18.214 * b) / 255);
            }
        }
}

/* `rotation` ≠ 0 stores a display matrix asking players to turn the picture clockwise by it. */
static void write_video_live(const char *name, const char *container, const char *codec_name, int frames, int gop, int quadrants,
                             int rotation, int live) {
    muxer_t muxer;
    video_setup_t setup = {quadrants ? W : MEDIA_FIXTURE_VIDEO_WIDTH, quadrants ? H : MEDIA_FIXTURE_VIDEO_HEIGHT, MEDIA_FIXTURE_FPS, gop,
                           AV_PIX_FMT_YUV420P};
    if (!muxer_open(&muxer, name, container, codec_name, setup_video, &setup)) {
        muxer_close(&muxer, name);
        return;
    }
    if (rotation) {
        uint8_t *matrix = av_stream_new_side_data(muxer.stream, AV_PKT_DATA_DISPLAYMATRIX, 9 * sizeof(int32_t));
        /* FFmpeg 5.1's av_display_rotation_set takes a clockwise angle (av_display_rotation_get answers a
         * counter-clockwise one): an iPhone portrait clip reads back as -90, to be turned 90° clockwise. */
        if (matrix) av_display_rotation_set((int32_t *)matrix, rotation);
    }
    AVDictionary *options = NULL;
    if (live) av_dict_set(&options, "live", "1", 0); /* WebM as a live recorder writes it: no duration, no cues */
    int error = avformat_write_header(muxer.format, &options);
    av_dict_free(&options);
    if (error < 0) {
        fail(name, "avformat_write_header");
        muxer.ok = 0;
        muxer_close(&muxer, name);
        return;
    }
    AVFrame *frame = av_frame_alloc();
    for (int i = 0; i < frames && muxer.ok; ++i) {
        frame->format = setup.format, frame->width = setup.width, frame->height = setup.height;
        if (av_frame_get_buffer(frame, 0) < 0) { muxer.ok = 0; break; }
        fill_yuv(frame, i, quadrants);
        frame->pts = i;
        muxer_send(&muxer, frame);
        av_frame_unref(frame);
    }
    av_frame_free(&frame);
    muxer_close(&muxer, name);
}

/* One still picture through an image encoder and muxer (BMP, GIF). */
static void write_still(const char *name, const char *container, const char *codec_name, enum AVPixelFormat format) {
    muxer_t muxer;
    video_setup_t setup = {W, H, 1, 1, format};
    if (!muxer_open(&muxer, name, container, codec_name, setup_video, &setup) || !muxer_header(&muxer, name)) {
        muxer_close(&muxer, name);
        return;
    }
    AVFrame *frame = av_frame_alloc();
    frame->format = format, frame->width = W, frame->height = H;
    if (av_frame_get_buffer(frame, 0) >= 0) {
        for (int y = 0; y < H; ++y)
            for (int x = 0; x < W; ++x) {
                int q = media_fixture_quadrant((uint32_t)x, (uint32_t)y, W, H);
                if (format == AV_PIX_FMT_PAL8) frame->data[0][y * frame->linesize[0] + x] = (uint8_t)q;
                else for (int c = 0; c < 3; ++c) frame->data[0][y * frame->linesize[0] + x * 3 + c] = media_fixture_quadrants[q][2 - c]; /* BGR */
            }
        if (format == AV_PIX_FMT_PAL8) {
            uint32_t *palette = (uint32_t *)frame->data[1];
            for (int i = 0; i < 256; ++i) palette[i] = 0xFF000000u;
            for (int q = 0; q < 4; ++q)
                palette[q] = 0xFF000000u | (uint32_t)media_fixture_quadrants[q][0] << 16 | (uint32_t)media_fixture_quadrants[q][1] << 8 |
                             media_fixture_quadrants[q][2];
        }
        frame->pts = 0;
        muxer_send(&muxer, frame);
    } else {
        muxer.ok = 0;
    }
    av_frame_free(&frame);
    muxer_close(&muxer, name);
}

static void write_video(const char *name, const char *container, const char *codec_name, int frames, int gop, int quadrants,
                        int rotation) {
    write_video_live(name, container, codec_name, frames, gop, quadrants, rotation, 0);
}

static void write_ffmpeg_fixtures(void) {
    av_log_set_level(AV_LOG_ERROR);
    write_audio("stereo.flac", "flac", "flac", 44100, 0);
    write_audio("stereo.ogg", "ogg", "libvorbis", 44100, 128000);
    write_audio("stereo.opus", "ogg", "libopus", 48000, 96000);
    write_audio("stereo.mp3", "mp3", "libmp3lame", 44100, 192000);
    write_audio("stereo.m4a", "mp4", "aac", 44100, 192000);
    write_video("counter.mp4", "mp4", "libx264", MEDIA_FIXTURE_FRAMES, 10, 0, 0);
    write_video("counter.webm", "webm", "libvpx-vp9", MEDIA_FIXTURE_FRAMES, 10, 0, 0);
    write_video("counter.mkv", "matroska", "libx264", MEDIA_FIXTURE_FRAMES, 10, 0, 0);
    write_video_live("live.webm", "webm", "libvpx-vp9", MEDIA_FIXTURE_FRAMES, 10, 0, 0, 1);
    write_video("long.mp4", "mp4", "libx264", MEDIA_FIXTURE_LONG_FRAMES, MEDIA_FIXTURE_FPS, 0, 0);
    write_video("short.mp4", "mp4", "libx264", MEDIA_FIXTURE_SHORT_FRAMES, 10, 0, 0);
    write_video("rotated90.mp4", "mp4", "libx264", 5, 10, 1, 90);
    write_video("rotated270.mp4", "mp4", "libx264", 5, 10, 1, 270);
    write_still("quadrants.bmp", "image2pipe", "bmp", AV_PIX_FMT_BGR24);
    write_still("quadrants.gif", "gif", "gif", AV_PIX_FMT_PAL8);
}
#endif

/* ---- Photos: a corpus for indexing tests and benchmarks ------------------------------------- */

/* `count` JPEG photos of `width` × `height` at `quality` into the output folder, photo_NNNNNN.jpg:
 * each a colour gradient under a few oriented gratings and soft discs (textured like a photo, so
 * it compresses like one and decodes at a realistic cost; not noise), drawn from `seed`. */
static int write_photos(size_t count, int width, int height, int quality, uint64_t seed) {
    uint8_t *rgb = malloc((size_t)width * height * 3);
    tjhandle handle = tjInitCompress();
    if (!rgb || !handle) return 1;
    for (size_t n = 0; n < count; ++n) {
        uint64_t state = seed * 0x9E3779B97F4A7C15ull + n * 0xD1B54A32D192ED03ull + 1;
        double random[24];
        for (int i = 0; i < 24; ++i) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            random[i] = (double)(state >> 11) / 9007199254740992.0;
        }
        for (int y = 0; y < height; ++y)
            for (int x = 0; x < width; ++x) {
                double u = (double)x / width, v = (double)y / height, value[3];
                for (int c = 0; c < 3; ++c) value[c] = 60 + 120 * (random[c] * u + random[3 + c] * v);
                for (int g = 0; g < 2; ++g) { /* gratings: 2..20 cycles at any angle, phase shifted per channel */
                    double angle = 6.2832 * random[6 + 3 * g], frequency = 2 + 18 * random[7 + 3 * g];
                    double phase = 6.2832 * frequency * (u * cos(angle) + v * sin(angle)), amplitude = 25 * random[8 + 3 * g];
                    double sine = sin(phase), cosine = cos(phase);
                    for (int c = 0; c < 3; ++c) value[c] += amplitude * (sine * cos((double)c) + cosine * sin((double)c));
                }
                for (int d = 0; d < 3; ++d) { /* soft discs, each brightening one channel */
                    double dx = u - random[12 + 3 * d], dy = v - random[13 + 3 * d], r = 0.05 + 0.2 * random[14 + 3 * d];
                    double inside = 1.0 / (1.0 + exp((sqrt(dx * dx + dy * dy) - r) * 60));
                    for (int c = 0; c < 3; ++c) value[c] += inside * (c == d ? 70 : -30);
                }
                for (int c = 0; c < 3; ++c)
                    rgb[((size_t)y * width + x) * 3 + c] = (uint8_t)(value[c] < 0 ? 0 : value[c] > 255 ? 255 : value[c]);
            }
        unsigned char *jpeg = NULL;
        unsigned long size = 0;
        char name[64];
        snprintf(name, sizeof name, "photo_%06zu.jpg", n);
        if (tjCompress2(handle, rgb, width, 0, height, TJPF_RGB, &jpeg, &size, TJSAMP_420, quality, 0) != 0)
            fail(name, tjGetErrorStr2(handle));
        else write_file(name, jpeg, size);
        tjFree(jpeg);
    }
    tjDestroy(handle);
    free(rgb);
    return failures ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc >= 4 && strcmp(argv[1], "--photos") == 0) {
        /* media_fixtures --photos COUNT OUTPUT_DIR [WIDTH HEIGHT [QUALITY [SEED]]] */
        output_dir = argv[3];
        if (mkdir(output_dir, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "media_fixtures: cannot create %s: %s\n", output_dir, strerror(errno));
            return 1;
        }
        int width = argc > 5 ? atoi(argv[4]) : 224, height = argc > 5 ? atoi(argv[5]) : 224;
        int quality = argc > 6 ? atoi(argv[6]) : 90;
        uint64_t seed = argc > 7 ? strtoull(argv[7], NULL, 10) : 1;
        return write_photos(strtoull(argv[2], NULL, 10), width, height, quality, seed);
    }
    if (argc != 2) {
        fprintf(stderr, "usage: media_fixtures OUTPUT_DIR\n"
                        "       media_fixtures --photos COUNT OUTPUT_DIR [WIDTH HEIGHT [QUALITY [SEED]]]\n");
        return 2;
    }
    output_dir = argv[1];
    if (mkdir(output_dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "media_fixtures: cannot create %s: %s\n", output_dir, strerror(errno));
        return 1;
    }
    write_jpegs();
    write_pngs();
    write_webps();
    write_wavs();
#if UFORM_WITH_FFMPEG
    write_ffmpeg_fixtures();
#endif
    if (failures) fprintf(stderr, "media_fixtures: %d fixtures failed\n", failures);
    return failures ? 1 : 0;
}
