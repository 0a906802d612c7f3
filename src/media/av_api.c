/* The FFmpeg function table (av_api.h): which library holds each function, loaded by core/on_demand.c. */
#include "media/av_api.h"

#if UFORM_WITH_FFMPEG
#include <stddef.h>

#include <libswresample/version.h>

#include "core/on_demand.h"

enum { avutil, swresample, swscale, avcodec, avformat };

/* Dependencies first: a library taken from UFORM_FFMPEG_DIR then finds the others it needs already
 * loaded under their sonames. libswresample is not called here, but libavcodec needs it. */
static const uform__on_demand_library_t libraries[] = {
    [avutil] = {"libavutil.so.%u", LIBAVUTIL_VERSION_MAJOR, LIBAVUTIL_VERSION_MINOR, "avutil_version", 0},
    [swresample] = {"libswresample.so.%u", LIBSWRESAMPLE_VERSION_MAJOR, LIBSWRESAMPLE_VERSION_MINOR, "swresample_version", 1},
    [swscale] = {"libswscale.so.%u", LIBSWSCALE_VERSION_MAJOR, LIBSWSCALE_VERSION_MINOR, "swscale_version", 0},
    [avcodec] = {"libavcodec.so.%u", LIBAVCODEC_VERSION_MAJOR, LIBAVCODEC_VERSION_MINOR, "avcodec_version", 0},
    [avformat] = {"libavformat.so.%u", LIBAVFORMAT_VERSION_MAJOR, LIBAVFORMAT_VERSION_MINOR, "avformat_version", 0},
};

#define SLOT(name) offsetof(uform__av_t, name)
static const uform__on_demand_symbol_t symbols[] = {
    {avutil, "av_malloc", SLOT(av_malloc)},
    {avutil, "av_free", SLOT(av_free)},
    {avutil, "av_freep", SLOT(av_freep)},
    {avutil, "av_strerror", SLOT(av_strerror)},
    {avutil, "av_log_get_level", SLOT(av_log_get_level)},
    {avutil, "av_log_set_level", SLOT(av_log_set_level)},
    {avutil, "av_frame_alloc", SLOT(av_frame_alloc)},
    {avutil, "av_frame_free", SLOT(av_frame_free)},
    {avutil, "av_frame_unref", SLOT(av_frame_unref)},
    {avutil, "av_frame_move_ref", SLOT(av_frame_move_ref)},
    {avutil, "av_get_pix_fmt_name", SLOT(av_get_pix_fmt_name)},
    {avutil, "av_get_sample_fmt_name", SLOT(av_get_sample_fmt_name)},
    {avutil, "av_get_bytes_per_sample", SLOT(av_get_bytes_per_sample)},
    {avutil, "av_sample_fmt_is_planar", SLOT(av_sample_fmt_is_planar)},
    {avutil, "av_rescale_q", SLOT(av_rescale_q)},
    {avutil, "av_display_rotation_get", SLOT(av_display_rotation_get)},
    {avcodec, "avcodec_find_decoder", SLOT(avcodec_find_decoder)},
    {avcodec, "avcodec_get_name", SLOT(avcodec_get_name)},
    {avcodec, "avcodec_alloc_context3", SLOT(avcodec_alloc_context3)},
    {avcodec, "avcodec_free_context", SLOT(avcodec_free_context)},
    {avcodec, "avcodec_parameters_alloc", SLOT(avcodec_parameters_alloc)},
    {avcodec, "avcodec_parameters_free", SLOT(avcodec_parameters_free)},
    {avcodec, "avcodec_parameters_to_context", SLOT(avcodec_parameters_to_context)},
    {avcodec, "avcodec_open2", SLOT(avcodec_open2)},
    {avcodec, "avcodec_send_packet", SLOT(avcodec_send_packet)},
    {avcodec, "avcodec_receive_frame", SLOT(avcodec_receive_frame)},
    {avcodec, "avcodec_flush_buffers", SLOT(avcodec_flush_buffers)},
    {avcodec, "av_packet_alloc", SLOT(av_packet_alloc)},
    {avcodec, "av_packet_free", SLOT(av_packet_free)},
    {avcodec, "av_packet_unref", SLOT(av_packet_unref)},
    {avcodec, "av_new_packet", SLOT(av_new_packet)},
    {avformat, "avformat_alloc_context", SLOT(avformat_alloc_context)},
    {avformat, "avformat_open_input", SLOT(avformat_open_input)},
    {avformat, "avformat_find_stream_info", SLOT(avformat_find_stream_info)},
    {avformat, "avformat_close_input", SLOT(avformat_close_input)},
    {avformat, "avio_alloc_context", SLOT(avio_alloc_context)},
    {avformat, "avio_context_free", SLOT(avio_context_free)},
    {avformat, "av_read_frame", SLOT(av_read_frame)},
    {avformat, "av_seek_frame", SLOT(av_seek_frame)},
    {avformat, "av_find_best_stream", SLOT(av_find_best_stream)},
    {avformat, "av_index_search_timestamp", SLOT(av_index_search_timestamp)},
    {avformat, "avformat_index_get_entries_count", SLOT(avformat_index_get_entries_count)},
    {avformat, "avformat_index_get_entry", SLOT(avformat_index_get_entry)},
    {avformat, "av_stream_get_side_data", SLOT(av_stream_get_side_data)},
    {swscale, "sws_getCachedContext", SLOT(sws_getCachedContext)},
    {swscale, "sws_freeContext", SLOT(sws_freeContext)},
    {swscale, "sws_scale", SLOT(sws_scale)},
    {swscale, "sws_getCoefficients", SLOT(sws_getCoefficients)},
    {swscale, "sws_getColorspaceDetails", SLOT(sws_getColorspaceDetails)},
    {swscale, "sws_setColorspaceDetails", SLOT(sws_setColorspaceDetails)},
    {swscale, "sws_isSupportedInput", SLOT(sws_isSupportedInput)},
    {swscale, "sws_isSupportedOutput", SLOT(sws_isSupportedOutput)},
};
#undef SLOT

static uform__av_t table;
static uform__on_demand_t loader = {
    .what = "FFmpeg 5.1 (libavformat, libavcodec, libavutil, libswscale)",
    .directory_variable = "UFORM_FFMPEG_DIR",
    .libraries = libraries,
    .library_count = sizeof libraries / sizeof libraries[0],
    .symbols = symbols,
    .symbol_count = sizeof symbols / sizeof symbols[0],
    .table = &table,
};

uform_status_t uform__av_require(const uform__av_t **av, const char *what, const char *function, uform_outcome_t *outcome) {
    uform_status_t status = uform__on_demand_require(&loader, what, function, outcome);
    *av = status == UFORM_OK ? &table : NULL;
    return status;
}

const uform__av_t *uform__av(void) { return uform__on_demand_loaded(&loader) ? &table : NULL; }
#endif
