/* Shared FFmpeg plumbing of src/media: reading from memory through a custom AVIOContext, opening a
 * decoder with limits, converting frames to RGB. Compiled only with UFORM_WITH_FFMPEG (the headers);
 * FFmpeg itself is loaded when first needed (av_api.h): every function here runs after that. */
#ifndef UFORM_MEDIA_AV_COMMON_H
#define UFORM_MEDIA_AV_COMMON_H

#if UFORM_WITH_FFMPEG
#include <errno.h>

#include "media/av_api.h"
#include "media/media.h"

#include "core/outcome.h"

/* FFmpeg's answer when an allocation failed: never skipped like a damaged packet. */
static inline int uform__media_av_enomem(int error) { return error == AVERROR(ENOMEM); }

/*
 * FFmpeg and memory exhaustion. FFmpeg allocates through posix_memalign, which leaves errno alone,
 * and offers no allocator hook, so a failed allocation inside it is seen only in what it answers:
 * AVERROR(ENOMEM) — which it also answers when a corrupt file declares a size beyond any
 * allocation it allows — or, as often, a plain decoding error ("invalid data", "no stream") after
 * a buffer it could not get. So an FFmpeg decode that fails with UFORM_FORMAT or
 * UFORM_OUT_OF_MEMORY is tried once more (memory may be back), and if the second attempt fails
 * too, a probe allocation decides: no memory left makes it UFORM_OUT_OF_MEMORY; memory to spare
 * leaves the file at fault (FFmpeg's ENOMEM then reads as UFORM_FORMAT). Call sites report
 * FFmpeg's ENOMEM through uform__media_av_fail_enomem, which marks the status as FFmpeg's.
 *
 *     uform__media_av_begin();
 *     status = attempt(...);
 *     if (uform__media_av_retry(status)) {
 *         free_outputs(...);
 *         status = uform__media_av_settle(attempt(...), outcome, __func__);
 *     }
 *
 * A damaged file thus decodes twice, to the same answer; a decode that met an allocation
 * failure gets a second chance, with memory that may be back.
 */
uform_status_t uform__media_av_fail_enomem(uform_outcome_t *outcome, const char *function, const char *format, ...)
    UFORM__PRINTF(3, 4);
/* Clears this thread's markers before a first attempt. */
void uform__media_av_begin(void);
/* Marks this thread's attempt incomplete: a packet FFmpeg refused was skipped (as players do with
 * a damaged packet), or decoding stopped at an error. FFmpeg refuses packets whose buffers it
 * could not allocate the same way, so such a result may be short of frames for lack of memory. */
void uform__media_av_skipped(void);
/* Whether a first attempt is worth a second: it failed with FORMAT or OUT_OF_MEMORY, or it
 * succeeded incomplete. Readies the markers for the second attempt, whose answer then stands
 * (settled); the caller frees the first attempt's outputs. */
int uform__media_av_retry(uform_status_t status);
/* The second attempt's `status`, settled as described above. */
uform_status_t uform__media_av_settle(uform_status_t status, uform_outcome_t *outcome, const char *function);

/* An input opened from borrowed bytes. Must not move while open: the AVIOContext points at it. */
typedef struct uform__media_av_input_t {
    const uint8_t *data;
    size_t size, position;
    AVIOContext *io;
    AVFormatContext *format;
} uform__media_av_input_t;

/* Opens a demuxer over `bytes` (borrowed until close) and reads stream info. Nested resources
 * (playlists, MOV references, concat lists) are refused: only these bytes are ever read.
 * `what` names the modality for messages ("recording", "video"). On failure nothing needs closing.
 * UFORM_FORMAT for bytes no demuxer reads, UFORM_OUT_OF_MEMORY when FFmpeg could not allocate. */
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
 * bytes. Answers 0, AVERROR(ENOMEM) when the scaler could not be allocated, or AVERROR(EINVAL) for a
 * pixel format libswscale does not convert. */
int uform__media_av_frame_to_packed(const AVFrame *frame, int channels, int width, int height, uint8_t *out,
                                    struct SwsContext **scaler);

/* Lowers FFmpeg's process-wide log level to quiet once, unless the host already chose one. */
void uform__media_av_quiet(void);

/* av_strerror into a caller's buffer of AV_ERROR_MAX_STRING_SIZE bytes; answers the buffer. */
const char *uform__media_av_error(int error, char *buffer);

#endif
#endif
