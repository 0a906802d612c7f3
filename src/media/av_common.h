/* Shared FFmpeg plumbing of src/media: reading from memory through a custom AVIOContext, opening a
 * decoder with limits, converting frames to RGB. Compiled only with UFORM_WITH_FFMPEG. */
#ifndef UFORM_MEDIA_AV_COMMON_H
#define UFORM_MEDIA_AV_COMMON_H

#if UFORM_WITH_FFMPEG
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libswscale/swscale.h>

#include "media/media.h"

/* An input opened from borrowed bytes. Must not move while open: the AVIOContext points at it. */
typedef struct uform__media_av_input_t {
    const uint8_t *data;
    size_t size, position;
    AVIOContext *io;
    AVFormatContext *format;
} uform__media_av_input_t;

/* Opens a demuxer over `bytes` (borrowed until close) and reads stream info. Nested resources
 * (playlists, MOV references, concat lists) are refused: only these bytes are ever read.
 * `what` names the modality for messages ("recording", "video"). On failure nothing needs closing. */
uform_status_t uform__media_av_open(uform__media_av_input_t *input, const uint8_t *bytes, size_t size, const char *what,
                                    const char *function, uform_outcome_t *outcome);
void uform__media_av_close(uform__media_av_input_t *input);

/* Opens a single-threaded decoder for `parameters` (the model parallelises across items);
 * `max_pixels` > 0 makes the decoder refuse bigger frames before allocating them. */
uform_status_t uform__media_av_open_decoder(const AVCodecParameters *parameters, AVRational time_base, uint64_t max_pixels,
                                            AVCodecContext **decoder, const char *what, const char *function,
                                            uform_outcome_t *outcome);

/* libswscale's packed-RGB writers store 8 bytes at a time and may run a few bytes past the last
 * pixel (found by the replay fuzz under valgrind): buffers it writes carry this much slack. */
#define UFORM__MEDIA_SWS_SLACK 256

/* Converts a decoded frame to packed RGB24 (`channels` 3) or RGBA (`channels` 4) of `width` × `height`
 * (the frame's own size, or another when a stream changes size mid-way) through `*scaler` (created or
 * reused; free with sws_freeContext). `out` must hold width·height·channels + UFORM__MEDIA_SWS_SLACK
 * bytes. Answers an AVERROR or 0. */
int uform__media_av_frame_to_packed(const AVFrame *frame, int channels, int width, int height, uint8_t *out,
                                    struct SwsContext **scaler);

/* Lowers FFmpeg's process-wide log level to quiet once, unless the host already chose one. */
void uform__media_av_quiet(void);

/* av_strerror into a caller's buffer of AV_ERROR_MAX_STRING_SIZE bytes; answers the buffer. */
const char *uform__media_av_error(int error, char *buffer);

#endif
#endif
