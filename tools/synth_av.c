/*
 * The FFmpeg writers of `uform synth` (synth.h): clips as MP4 (H.264 through libx264 when the build
 * has it, else MPEG-4 Part 2) and WebM (VP9, else VP8), and speech as FLAC. Single-threaded
 * encoders with the bit-exact flags, so the same frames give the same bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "synth.h"

#if UFORM_WITH_FFMPEG
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/opt.h>

int synth_av_available(void) { return 1; }

static const AVCodec *first_encoder(const char *const *names) {
    for (; *names; ++names) {
        const AVCodec *codec = avcodec_find_encoder_by_name(*names);
        if (codec) return codec;
    }
    return NULL;
}

static const char *const mp4_codecs[] = {"libx264", "mpeg4", NULL};
static const char *const webm_codecs[] = {"libvpx-vp9", "libvpx", NULL};

const char *synth_av_mp4_codec(void) {
    const AVCodec *codec = first_encoder(mp4_codecs);
    return codec ? codec->name : "none";
}

typedef struct writer_t {
    AVFormatContext *format;
    AVCodecContext *encoder;
    AVStream *stream;
    AVPacket *packet;
    char temporary[4096];
    int ok;
} writer_t;

/* Opens `path`.part with `container` and one stream of `codec`; `setup` has filled `encoder`. */
static int writer_open(writer_t *writer, const char *path, const char *container, const AVCodec *codec,
                       AVCodecContext *encoder, char *error, size_t capacity) {
    av_log_set_level(AV_LOG_ERROR); /* x264 prints statistics for every clip otherwise */
    writer->encoder = encoder;
    writer->packet = av_packet_alloc();
    snprintf(writer->temporary, sizeof writer->temporary, "%s.part", path);
    int code = avformat_alloc_output_context2(&writer->format, NULL, container, writer->temporary);
    if (code >= 0 && writer->packet && (writer->stream = avformat_new_stream(writer->format, NULL))) {
        writer->format->flags |= AVFMT_FLAG_BITEXACT;
        if (writer->format->oformat->flags & AVFMT_GLOBALHEADER) encoder->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
        code = avcodec_open2(encoder, codec, NULL);
        if (code >= 0) code = avcodec_parameters_from_context(writer->stream->codecpar, encoder);
        writer->stream->time_base = encoder->time_base;
        if (code >= 0) code = avio_open(&writer->format->pb, writer->temporary, AVIO_FLAG_WRITE);
        if (code >= 0) code = avformat_write_header(writer->format, NULL);
    } else if (code >= 0) {
        code = AVERROR(ENOMEM);
    }
    writer->ok = code >= 0;
    if (!writer->ok) {
        char reason[AV_ERROR_MAX_STRING_SIZE];
        snprintf(error, capacity, "cannot write '%s' (%s, %s): %s", path, container, codec->name,
                 av_make_error_string(reason, sizeof reason, code));
    }
    return writer->ok ? 0 : -1;
}

/* Sends a frame (NULL drains) and muxes every packet that comes out. */
static void writer_send(writer_t *writer, AVFrame *frame) {
    if (!writer->ok || avcodec_send_frame(writer->encoder, frame) < 0) {
        writer->ok = 0;
        return;
    }
    while (avcodec_receive_packet(writer->encoder, writer->packet) >= 0) {
        if (writer->packet->duration == 0 && writer->encoder->codec_type == AVMEDIA_TYPE_VIDEO) writer->packet->duration = 1;
        av_packet_rescale_ts(writer->packet, writer->encoder->time_base, writer->stream->time_base);
        writer->packet->stream_index = writer->stream->index;
        if (av_interleaved_write_frame(writer->format, writer->packet) < 0) writer->ok = 0;
    }
}

/* Drains, writes the trailer, closes, and renames the temporary file into place when all went well. */
static int writer_close(writer_t *writer, const char *path, char *error, size_t capacity, int opened) {
    if (opened && writer->ok) {
        writer_send(writer, NULL);
        if (av_write_trailer(writer->format) < 0) writer->ok = 0;
    }
    if (writer->format && writer->format->pb) avio_closep(&writer->format->pb);
    avcodec_free_context(&writer->encoder);
    av_packet_free(&writer->packet);
    avformat_free_context(writer->format);
    if (opened && writer->ok && rename(writer->temporary, path) != 0) writer->ok = 0;
    if (opened && !writer->ok) snprintf(error, capacity, "cannot encode or write '%s'", path);
    if (!writer->ok) unlink(writer->temporary);
    return writer->ok ? 0 : -1;
}

/* RGB8 to BT.601 limited-range YUV 4:2:0 (what decoders assume without colour metadata); chroma is
 * the mean of each 2×2 block. */
static void rgb_to_yuv420(const uint8_t *rgb, size_t size, AVFrame *frame) {
    for (size_t y = 0; y < size; ++y)
        for (size_t x = 0; x < size; ++x) {
            const uint8_t *p = rgb + (y * size + x) * 3;
            frame->data[0][y * (size_t)frame->linesize[0] + x] =
                (uint8_t)(16.5 + (65.481 * p[0] + 128.553 * p[1] + 24.966 * p[2]) / 255.0);
        }
    for (size_t y = 0; y < size / 2; ++y)
        for (size_t x = 0; x < size / 2; ++x) {
            double r = 0, g = 0, b = 0;
            for (int k = 0; k < 4; ++k) {
                const uint8_t *p = rgb + ((2 * y + (size_t)(k / 2)) * size + 2 * x + (size_t)(k % 2)) * 3;
                r += p[0] / 4.0, g += p[1] / 4.0, b += p[2] / 4.0;
            }
            frame->data[1][y * (size_t)frame->linesize[1] + x] = (uint8_t)(128.5 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255.0);
            frame->data[2][y * (size_t)frame->linesize[2] + x] = (uint8_t)(128.5 + (112.0 * r - 93.786 * g - 18.214 * b) / 255.0);
        }
}

int synth_write_clip(const char *path, int webm, const uint8_t *rgb, size_t size, size_t frames, int fps, char *error,
                     size_t capacity) {
    const AVCodec *codec = first_encoder(webm ? webm_codecs : mp4_codecs);
    if (!codec) return snprintf(error, capacity, "this FFmpeg has no %s encoder for '%s'", webm ? "VP9 or VP8" : "H.264 or MPEG-4", path), -1;
    writer_t writer = {0};
    AVCodecContext *encoder = avcodec_alloc_context3(codec);
    if (!encoder) return snprintf(error, capacity, "out of memory encoding '%s'", path), -1;
    encoder->width = (int)size, encoder->height = (int)size, encoder->pix_fmt = AV_PIX_FMT_YUV420P;
    encoder->time_base = (AVRational){1, fps}, encoder->framerate = (AVRational){fps, 1};
    encoder->gop_size = (int)frames, encoder->thread_count = 1, encoder->max_b_frames = 0;
    encoder->flags |= AV_CODEC_FLAG_BITEXACT;
    if (!strcmp(codec->name, "libx264")) {
        av_opt_set(encoder->priv_data, "preset", "veryfast", 0);
        av_opt_set(encoder->priv_data, "crf", "20", 0);
    } else if (webm) {
        av_opt_set(encoder->priv_data, "deadline", "realtime", 0);
        av_opt_set_int(encoder->priv_data, "cpu-used", 8, 0);
        av_opt_set_int(encoder->priv_data, "lag-in-frames", 0, 0);
        encoder->bit_rate = 300000;
    } else {
        encoder->bit_rate = 400000;
    }
    int opened = writer_open(&writer, path, webm ? "webm" : "mp4", codec, encoder, error, capacity) == 0;
    AVFrame *frame = opened ? av_frame_alloc() : NULL;
    for (size_t f = 0; frame && f < frames && writer.ok; ++f) {
        frame->format = AV_PIX_FMT_YUV420P, frame->width = (int)size, frame->height = (int)size;
        if (av_frame_get_buffer(frame, 0) < 0) {
            writer.ok = 0;
            break;
        }
        rgb_to_yuv420(rgb + f * size * size * 3, size, frame);
        frame->pts = (int64_t)f;
        writer_send(&writer, frame);
        av_frame_unref(frame);
    }
    if (opened && !frame) writer.ok = 0;
    av_frame_free(&frame);
    return writer_close(&writer, path, error, capacity, opened);
}

int synth_write_flac(const char *path, const int16_t *samples, size_t count, int rate, char *error, size_t capacity) {
    const AVCodec *codec = avcodec_find_encoder(AV_CODEC_ID_FLAC);
    if (!codec) return snprintf(error, capacity, "this FFmpeg has no FLAC encoder for '%s'", path), -1;
    writer_t writer = {0};
    AVCodecContext *encoder = avcodec_alloc_context3(codec);
    if (!encoder) return snprintf(error, capacity, "out of memory encoding '%s'", path), -1;
    encoder->sample_fmt = AV_SAMPLE_FMT_S16, encoder->sample_rate = rate, encoder->time_base = (AVRational){1, rate};
    av_channel_layout_default(&encoder->ch_layout, 1);
    encoder->flags |= AV_CODEC_FLAG_BITEXACT;
    int opened = writer_open(&writer, path, "flac", codec, encoder, error, capacity) == 0;
    AVFrame *frame = opened ? av_frame_alloc() : NULL;
    size_t frame_size = opened && encoder->frame_size > 0 ? (size_t)encoder->frame_size : 4096;
    for (size_t start = 0; frame && start < count && writer.ok; start += frame_size) {
        size_t n = count - start < frame_size ? count - start : frame_size;
        frame->format = AV_SAMPLE_FMT_S16, frame->nb_samples = (int)n, frame->sample_rate = rate;
        av_channel_layout_default(&frame->ch_layout, 1);
        if (av_frame_get_buffer(frame, 0) < 0) {
            writer.ok = 0;
            break;
        }
        memcpy(frame->data[0], samples + start, n * sizeof *samples);
        frame->pts = (int64_t)start;
        writer_send(&writer, frame);
        av_frame_unref(frame);
    }
    if (opened && !frame) writer.ok = 0;
    av_frame_free(&frame);
    return writer_close(&writer, path, error, capacity, opened);
}

#else

int synth_av_available(void) { return 0; }
const char *synth_av_mp4_codec(void) { return "none"; }

int synth_write_clip(const char *path, int webm, const uint8_t *rgb, size_t size, size_t frames, int fps, char *error,
                     size_t capacity) {
    (void)webm, (void)rgb, (void)size, (void)frames, (void)fps;
    snprintf(error, capacity, "cannot write '%s': this build has no FFmpeg (UFORM_WITH_FFMPEG=OFF)", path);
    return -1;
}

int synth_write_flac(const char *path, const int16_t *samples, size_t count, int rate, char *error, size_t capacity) {
    (void)samples, (void)count, (void)rate;
    snprintf(error, capacity, "cannot write '%s': this build has no FFmpeg (UFORM_WITH_FFMPEG=OFF)", path);
    return -1;
}

#endif
