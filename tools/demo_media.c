#include "demo_media.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>
#include <webp/encode.h>

#if UFORM_WITH_FFMPEG
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#endif

void demo_draw(uint8_t *pixels, size_t width, size_t height, int shape, const uint8_t rgb[3], double cx, double cy,
               double radius) {
    for (size_t y = 0; y < height; ++y)
        for (size_t x = 0; x < width; ++x) {
            double dx = (double)x - cx, dy = (double)y - cy;
            int inside = shape == 0 ? dx * dx + dy * dy <= radius * radius : fabs(dx) <= radius && fabs(dy) <= radius;
            uint8_t *pixel = pixels + (y * width + x) * 3;
            for (int c = 0; c < 3; ++c) pixel[c] = inside ? rgb[c] : 255;
        }
}

unsigned char *demo_jpeg(const uint8_t *pixels, size_t width, size_t height, size_t *size) {
    tjhandle handle = tjInitCompress();
    unsigned char *jpeg = NULL;
    unsigned long length = 0;
    int failed = !handle || tjCompress2(handle, pixels, (int)width, 0, (int)height, TJPF_RGB, &jpeg, &length, TJSAMP_420,
                                        90, 0) != 0;
    unsigned char *copy = failed ? NULL : malloc(length);
    if (copy) memcpy(copy, jpeg, length), *size = length;
    if (jpeg) tjFree(jpeg);
    if (handle) tjDestroy(handle);
    return copy;
}

unsigned char *demo_webp(const uint8_t *pixels, size_t width, size_t height, size_t *size) {
    uint8_t *webp = NULL;
    size_t length = WebPEncodeRGB(pixels, (int)width, (int)height, (int)width * 3, 90, &webp);
    unsigned char *copy = length ? malloc(length) : NULL;
    if (copy) memcpy(copy, webp, length), *size = length;
    WebPFree(webp);
    return copy;
}

static void put16(unsigned char *at, unsigned value) { at[0] = (unsigned char)value, at[1] = (unsigned char)(value >> 8); }
static void put32(unsigned char *at, unsigned value) { put16(at, value & 0xFFFF), put16(at + 2, value >> 16); }

unsigned char *demo_wav(double hz, int rate, int channels, double seconds, size_t *size) {
    size_t frames = (size_t)(seconds * rate), bytes = frames * (size_t)channels * 2;
    unsigned char *wav = malloc(44 + bytes);
    if (!wav) return NULL;
    memcpy(wav, "RIFF", 4), put32(wav + 4, (unsigned)(36 + bytes)), memcpy(wav + 8, "WAVEfmt ", 8);
    put32(wav + 16, 16), put16(wav + 20, 1), put16(wav + 22, (unsigned)channels), put32(wav + 24, (unsigned)rate);
    put32(wav + 28, (unsigned)(rate * channels * 2)), put16(wav + 32, (unsigned)(channels * 2)), put16(wav + 34, 16);
    memcpy(wav + 36, "data", 4), put32(wav + 40, (unsigned)bytes);
    for (size_t i = 0; i < frames; ++i) {
        double t = (double)i / rate;
        double value = 0.5 * sin(2 * M_PI * hz * t) + 0.15 * sin(4 * M_PI * hz * t) + 0.05 * sin(6 * M_PI * hz * t);
        for (int c = 0; c < channels; ++c) put16(wav + 44 + (i * (size_t)channels + (size_t)c) * 2, (unsigned)(int16_t)(value * 20000));
    }
    *size = 44 + bytes;
    return wav;
}

#if UFORM_WITH_FFMPEG
unsigned char *demo_mp4(const uint8_t rgb[3], size_t width, size_t height, size_t frames, size_t *size) {
    const AVCodec *codec = avcodec_find_encoder(AV_CODEC_ID_MPEG4);
    AVFormatContext *format = NULL;
    AVCodecContext *encoder = NULL;
    AVFrame *frame = NULL;
    AVPacket *packet = av_packet_alloc();
    unsigned char *result = NULL, *buffer = NULL;
    uint8_t *pixels = malloc(width * height * 3);
    if (!codec || !packet || !pixels || avformat_alloc_output_context2(&format, NULL, "mp4", NULL) < 0) goto done;
    AVStream *stream = avformat_new_stream(format, NULL);
    encoder = avcodec_alloc_context3(codec);
    frame = av_frame_alloc();
    if (!stream || !encoder || !frame) goto done;
    encoder->width = (int)width, encoder->height = (int)height, encoder->pix_fmt = AV_PIX_FMT_YUV420P;
    encoder->time_base = (AVRational){1, 10}, encoder->framerate = (AVRational){10, 1}, encoder->gop_size = 5;
    encoder->bit_rate = 400000;
    if (format->oformat->flags & AVFMT_GLOBALHEADER) encoder->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    if (avcodec_open2(encoder, codec, NULL) < 0 || avcodec_parameters_from_context(stream->codecpar, encoder) < 0) goto done;
    stream->time_base = encoder->time_base;
    if (avio_open_dyn_buf(&format->pb) < 0 || avformat_write_header(format, NULL) < 0) goto done;
    frame->format = AV_PIX_FMT_YUV420P, frame->width = (int)width, frame->height = (int)height;
    if (av_frame_get_buffer(frame, 0) < 0) goto done;
    for (size_t f = 0; f <= frames; ++f) {
        AVFrame *sent = NULL;
        if (f < frames) {
            double cx = (double)width * (0.2 + 0.6 * (double)f / (double)(frames > 1 ? frames - 1 : 1));
            demo_draw(pixels, width, height, 0, rgb, cx, (double)height / 2, (double)height / 5);
            av_frame_make_writable(frame);
            /* RGB to BT.601 limited-range YUV 4:2:0. */
            for (size_t y = 0; y < height; ++y)
                for (size_t x = 0; x < width; ++x) {
                    const uint8_t *p = pixels + (y * width + x) * 3;
                    frame->data[0][y * (size_t)frame->linesize[0] + x] = (uint8_t)(16 + (65.738 * p[0] + 129.057 * p[1] + 25.064 * p[2]) / 256);
                    if (y % 2 == 0 && x % 2 == 0) {
                        frame->data[1][(y / 2) * (size_t)frame->linesize[1] + x / 2] =
                            (uint8_t)(128 + (-37.945 * p[0] - 74.494 * p[1] + 112.439 * p[2]) / 256);
                        frame->data[2][(y / 2) * (size_t)frame->linesize[2] + x / 2] =
                            (uint8_t)(128 + (112.439 * p[0] - 94.154 * p[1] - 18.285 * p[2]) / 256);
                    }
                }
            frame->pts = (int64_t)f;
            sent = frame;
        }
        if (avcodec_send_frame(encoder, sent) < 0) goto done;
        while (avcodec_receive_packet(encoder, packet) == 0) {
            av_packet_rescale_ts(packet, encoder->time_base, stream->time_base);
            packet->stream_index = stream->index;
            if (av_interleaved_write_frame(format, packet) < 0) goto done;
        }
    }
    if (av_write_trailer(format) < 0) goto done;
    int length = avio_close_dyn_buf(format->pb, &buffer);
    format->pb = NULL;
    if (length > 0 && (result = malloc((size_t)length))) memcpy(result, buffer, (size_t)length), *size = (size_t)length;
done:
    if (format && format->pb) avio_close_dyn_buf(format->pb, &buffer);
    av_free(buffer);
    avformat_free_context(format);
    avcodec_free_context(&encoder);
    av_frame_free(&frame);
    av_packet_free(&packet);
    free(pixels);
    return result;
}
#else
unsigned char *demo_mp4(const uint8_t rgb[3], size_t width, size_t height, size_t frames, size_t *size) {
    (void)rgb, (void)width, (void)height, (void)frames, (void)size;
    return NULL;
}
#endif
