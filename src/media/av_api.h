/*
 * FFmpeg's functions as src/media calls them: a table of function pointers filled when the first
 * call that needs FFmpeg loads it (core/on_demand.h), so libuform itself links no FFmpeg library. The
 * headers are needed at build time only (UFORM_WITH_FFMPEG): struct layouts come from them and
 * every pointer below has the exact type of the function it holds. Compiled only with them.
 *
 * Usage, at the top of every entry point that decodes through FFmpeg:
 *
 *     const uform__av_t *av = NULL;
 *     uform_status_t status = uform__av_require(&av, "video", __func__, outcome);
 *     if (status != UFORM_OK) return status; // UNSUPPORTED naming the library, or OUT_OF_MEMORY
 *     av->avformat_open_input(...);
 *
 * and `uform__av()` in helpers only ever called after that. The versions this code was written
 * for are the headers' (FFmpeg 5.1: avutil 57.28, avcodec 59.37, avformat 59.27, swscale 6.7);
 * a library of the same major version and at least that minor is accepted.
 */
#ifndef UFORM_MEDIA_AV_API_H
#define UFORM_MEDIA_AV_API_H

#if UFORM_WITH_FFMPEG
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/display.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libavutil/pixdesc.h>
#include <libavutil/samplefmt.h>
#include <libswscale/swscale.h>

#include "uform/uform.h"

typedef struct uform__av_t {
    /* libavutil */
    __typeof__(&av_malloc) av_malloc;
    __typeof__(&av_free) av_free;
    __typeof__(&av_freep) av_freep;
    __typeof__(&av_strerror) av_strerror;
    __typeof__(&av_log_get_level) av_log_get_level;
    __typeof__(&av_log_set_level) av_log_set_level;
    __typeof__(&av_frame_alloc) av_frame_alloc;
    __typeof__(&av_frame_free) av_frame_free;
    __typeof__(&av_frame_unref) av_frame_unref;
    __typeof__(&av_frame_move_ref) av_frame_move_ref;
    __typeof__(&av_get_pix_fmt_name) av_get_pix_fmt_name;
    __typeof__(&av_get_sample_fmt_name) av_get_sample_fmt_name;
    __typeof__(&av_get_bytes_per_sample) av_get_bytes_per_sample;
    __typeof__(&av_sample_fmt_is_planar) av_sample_fmt_is_planar;
    __typeof__(&av_rescale_q) av_rescale_q;
    __typeof__(&av_display_rotation_get) av_display_rotation_get;
    /* libavcodec */
    __typeof__(&avcodec_find_decoder) avcodec_find_decoder;
    __typeof__(&avcodec_get_name) avcodec_get_name;
    __typeof__(&avcodec_alloc_context3) avcodec_alloc_context3;
    __typeof__(&avcodec_free_context) avcodec_free_context;
    __typeof__(&avcodec_parameters_alloc) avcodec_parameters_alloc;
    __typeof__(&avcodec_parameters_free) avcodec_parameters_free;
    __typeof__(&avcodec_parameters_to_context) avcodec_parameters_to_context;
    __typeof__(&avcodec_open2) avcodec_open2;
    __typeof__(&avcodec_send_packet) avcodec_send_packet;
    __typeof__(&avcodec_receive_frame) avcodec_receive_frame;
    __typeof__(&avcodec_flush_buffers) avcodec_flush_buffers;
    __typeof__(&av_packet_alloc) av_packet_alloc;
    __typeof__(&av_packet_free) av_packet_free;
    __typeof__(&av_packet_unref) av_packet_unref;
    __typeof__(&av_new_packet) av_new_packet;
    /* libavformat */
    __typeof__(&avformat_alloc_context) avformat_alloc_context;
    __typeof__(&avformat_open_input) avformat_open_input;
    __typeof__(&avformat_find_stream_info) avformat_find_stream_info;
    __typeof__(&avformat_close_input) avformat_close_input;
    __typeof__(&avio_alloc_context) avio_alloc_context;
    __typeof__(&avio_context_free) avio_context_free;
    __typeof__(&av_read_frame) av_read_frame;
    __typeof__(&av_seek_frame) av_seek_frame;
    __typeof__(&av_find_best_stream) av_find_best_stream;
    __typeof__(&av_index_search_timestamp) av_index_search_timestamp;
    __typeof__(&avformat_index_get_entries_count) avformat_index_get_entries_count;
    __typeof__(&avformat_index_get_entry) avformat_index_get_entry;
    __typeof__(&av_stream_get_side_data) av_stream_get_side_data;
    /* libswscale */
    __typeof__(&sws_getCachedContext) sws_getCachedContext;
    __typeof__(&sws_freeContext) sws_freeContext;
    __typeof__(&sws_scale) sws_scale;
    __typeof__(&sws_getCoefficients) sws_getCoefficients;
    __typeof__(&sws_getColorspaceDetails) sws_getColorspaceDetails;
    __typeof__(&sws_setColorspaceDetails) sws_setColorspaceDetails;
    __typeof__(&sws_isSupportedInput) sws_isSupportedInput;
    __typeof__(&sws_isSupportedOutput) sws_isSupportedOutput;
} uform__av_t;

/* Points `*av` at the table, loading FFmpeg on the first call. Answers UFORM_OK, or fills
 * `outcome` with UFORM_UNSUPPORTED (FFmpeg missing or too old: the message names the library and
 * where it was looked for) or UFORM_OUT_OF_MEMORY and sets `*av` to NULL. `what` names the
 * caller's modality for the message. */
uform_status_t uform__av_require(const struct uform__av_t **av, const char *what, const char *function, uform_outcome_t *outcome);

/* The table once uform__av_require has answered it (NULL before). */
const uform__av_t *uform__av(void);

#endif
#endif
