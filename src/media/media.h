/*
 * Media decoding: image, audio and video bytes held in memory become model inputs — RGB8 pixels
 * and float32 mono samples at the stream's native rate. Resizing and resampling are the kernels'
 * job (src/kernels/signal*.c); this module only decodes. Private to libuform.
 *
 * Usage:
 *
 *     uform__media_image_t image = {0};
 *     if (uform__media_image_decode(bytes, size, NULL, &image, &outcome) != UFORM_OK) return ...;
 *     use(image.pixels, image.width, image.height);   // [height, width, 3] RGB8, row-major
 *     uform__media_image_free(&image);
 *
 * Contracts shared by every entry point:
 * - Input bytes are borrowed for the duration of the call only; nothing is written to disk, nothing
 *   is printed, nothing aborts. Decoders answer UFORM_OK, UFORM_FORMAT (corrupt, truncated, not the
 *   expected modality, over a limit — the message names which), UFORM_UNSUPPORTED (a valid format
 *   this build cannot decode, e.g. MP3 without FFmpeg or with FFmpeg not loadable; the message says
 *   why and names the missing library), UFORM_INVALID_ARGUMENT
 *   (NULL pointers, zero frames), or UFORM_OUT_OF_MEMORY.
 * - Outputs are owned by the caller after UFORM_OK and must be released with the matching `_free`
 *   function (freeing a zeroed or already freed struct is a no-op). On any failure the output struct
 *   is left zeroed and nothing needs freeing.
 * - Thread safety: no global mutable state (every codec handle, context and scaler lives for one
 *   call), so different threads may decode different items at once. The exceptions are FFmpeg's
 *   function table, filled once under a lock by the first decode that needs FFmpeg (core/on_demand.c),
 *   and FFmpeg's process-wide log level: the first FFmpeg decode lowers it to AV_LOG_QUIET once,
 *   unless the host application already chose a level (see av_common.c), because the library must
 *   not print about bad input.
 * - Memory: a failed allocation, ours or a codec library's, is UFORM_OUT_OF_MEMORY, never
 *   UFORM_FORMAT: TurboJPEG's error text, libspng's own allocator, libwebp's status and errno, and
 *   for FFmpeg (which may report one as corrupt data) a second attempt and a probe allocation tell
 *   them apart (av_common.h).
 * - Formats are recognised from their first bytes (magic numbers), never from a file name.
 *
 * Alpha: transparent pixels are composited over WHITE, `rgb = (c·a + 255·(255 − a)) / 255` rounded
 * to nearest (computed exactly in integers as `(c·a + 255·(255 − a) + 127) / 255`).
 * CLIP-style pipelines call PIL's convert('RGB'), which drops alpha and exposes whatever colour the
 * encoder left under transparent pixels (often black, sometimes garbage), so the same logo gives
 * different inputs depending on the tool that saved it. White is what a viewer shows on a page and
 * what users expect for transparent logos and icons, and it is deterministic.
 */
#ifndef UFORM_MEDIA_MEDIA_H
#define UFORM_MEDIA_MEDIA_H

#include <stddef.h>
#include <stdint.h>

#include "uform/uform.h"

/* Defaults of the limits against decompression bombs; each is checked from headers before the big
 * allocation wherever the format says the size up front. */
#define UFORM__MEDIA_MAX_PIXELS (1ull << 28)  /* per image or video frame: 16384 × 16384 */
#define UFORM__MEDIA_MAX_SECONDS 3600.0       /* audio or video stream duration: one hour */
#define UFORM__MEDIA_MAX_FRAMES 1024u         /* video frames per item */
#define UFORM__MEDIA_MAX_VIDEO_PIXELS (1ull << 30) /* frames × width × height of one decoded video: 3 GiB */
#define UFORM__MEDIA_MAX_RATE 768000u         /* audio samples per second */
#define UFORM__MEDIA_MAX_CHANNELS 1024u       /* audio channels */

/* Limits; a zero field takes its default. A NULL `const uform__media_limits_t *` means all defaults. */
typedef struct uform__media_limits_t {
    uint64_t max_pixels;  /* width × height of an image or of one video frame */
    double max_seconds;   /* audio and video: the hard limit on decoded duration */
    uint32_t max_frames;  /* video: frames per item */
} uform__media_limits_t;

/* Fills every zero field of `*resolved` from `limits` (may be NULL) or the defaults. */
void uform__media_limits_resolve(const uform__media_limits_t *limits, uform__media_limits_t *resolved);

/* ---- Format recognition ---------------------------------------------------------------------- */

typedef enum uform__media_kind_t {
    UFORM__MEDIA_UNKNOWN = 0,
    /* images */
    UFORM__MEDIA_JPEG, UFORM__MEDIA_PNG, UFORM__MEDIA_WEBP, UFORM__MEDIA_GIF, UFORM__MEDIA_BMP,
    UFORM__MEDIA_TIFF, UFORM__MEDIA_PNM, UFORM__MEDIA_JPEG2000, UFORM__MEDIA_HEIF,
    /* recordings */
    UFORM__MEDIA_WAV, UFORM__MEDIA_FLAC, UFORM__MEDIA_OGG, UFORM__MEDIA_MP3, UFORM__MEDIA_ADTS,
    /* containers that may hold audio, video or both */
    UFORM__MEDIA_MP4, UFORM__MEDIA_MATROSKA, UFORM__MEDIA_AVI,
} uform__media_kind_t;

/* Recognises bytes by their magic numbers; UFORM__MEDIA_UNKNOWN when none matches. */
uform__media_kind_t uform__media_sniff(const uint8_t *bytes, size_t size);
/* "JPEG image", "WAV recording", "MP4 container", ... (static strings). */
const char *uform__media_kind_name(uform__media_kind_t kind);
int uform__media_kind_is_image(uform__media_kind_t kind);
/* "a" or "an", whichever reads right before uform__media_kind_name(kind). */
const char *uform__media_kind_article(uform__media_kind_t kind);
/* Writes the first min(size, count) bytes as lower-case hex pairs separated by spaces ("76 6d 0a"):
 * only the bytes there are, for messages about unrecognised data. `capacity` ≥ 3·count. */
void uform__media_head_hex(const uint8_t *bytes, size_t size, size_t count, char *text, size_t capacity);

/* ---- Images ---------------------------------------------------------------------------------- */

/* A decoded image: `pixels` is [height, width, 3] RGB8, rows packed (stride = 3·width), allocated by
 * the decoder with malloc and owned by the caller until uform__media_image_free. */
typedef struct uform__media_image_t {
    uint32_t width, height;
    uint8_t *pixels;
} uform__media_image_t;

/*
 * Decodes the first frame of an image: JPEG (TurboJPEG; baseline, progressive, greyscale, CMYK and
 * YCCK including Adobe-inverted CMYK; EXIF orientation 1–8 applied, for JPEG only, where cameras
 * write it), PNG (libspng; 1–16-bit grey, grey+alpha, RGB, RGBA, palette, tRNS; 16-bit keeps the
 * high byte like PIL), WebP (libwebp; lossy, lossless, alpha; animated WebP is UFORM_UNSUPPORTED),
 * and with FFmpeg GIF, BMP, TIFF, PNM and JPEG 2000 through libavcodec. HEIF/AVIF stills are recognised and answered UFORM_UNSUPPORTED (no
 * decoder in the dependencies). Alpha is composited over white (see the top of this file).
 * More than `max_pixels` is UFORM_FORMAT naming the limit, checked from the header before allocating.
 */
uform_status_t uform__media_image_decode(const void *bytes, size_t size, const uform__media_limits_t *limits,
                                         uform__media_image_t *image, uform_outcome_t *outcome);
void uform__media_image_free(uform__media_image_t *image);

/* ---- Audio ----------------------------------------------------------------------------------- */

/* Decoded audio: `samples` holds `count` float32 mono samples (channels averaged with equal weights,
 * the mix librosa and torchaudio use) at `rate` Hz, the stream's native rate; integer PCM is scaled
 * by 2^(bits−1) into [-1, 1). Allocated with malloc, owned by the caller until uform__media_audio_free. */
typedef struct uform__media_audio_t {
    float *samples;
    size_t count;
    uint32_t rate;
} uform__media_audio_t;

/*
 * Decodes a recording. WAV (PCM 8/16/24/32-bit integer, float32/64, WAVE_FORMAT_EXTENSIBLE) is parsed
 * here and works without FFmpeg; FLAC, Ogg Vorbis/Opus, MP3, AAC (ADTS or in MP4) and any other
 * container FFmpeg reads need a build with FFmpeg (otherwise UFORM_UNSUPPORTED).
 * `crop_seconds` > 0 decodes only the first `crop_seconds` (the model crops anyway); 0 decodes all.
 * A stream longer than `max_seconds` that is not cropped below it is UFORM_FORMAT naming the limit.
 * An empty stream (no samples) is UFORM_FORMAT.
 */
uform_status_t uform__media_audio_decode(const void *bytes, size_t size, double crop_seconds,
                                         const uform__media_limits_t *limits, uform__media_audio_t *audio,
                                         uform_outcome_t *outcome);
void uform__media_audio_free(uform__media_audio_t *audio);

/* Internal parts, one per file: the WAV parser (wav.c) and the FFmpeg path (av_audio.c). */
uform_status_t uform__media_wav_decode(const uint8_t *bytes, size_t size, double crop_seconds,
                                       const uform__media_limits_t *limits, uform__media_audio_t *audio,
                                       uform_outcome_t *outcome);
uform_status_t uform__media_av_audio_decode(const uint8_t *bytes, size_t size, double crop_seconds,
                                            const uform__media_limits_t *limits, uform__media_audio_t *audio,
                                            uform_outcome_t *outcome);

/* ---- Video ----------------------------------------------------------------------------------- */

/* Decoded video frames: `pixels` is [frames, height, width, 3] RGB8 and `times` [frames] holds the
 * presentation time, in seconds after the stream's start, of the stream frame chosen for each
 * output frame (for tests and diagnostics); both are allocated with malloc and owned by the caller
 * until uform__media_video_free. Width and height are after rotation; a stream that changes size
 * mid-way is scaled to its first chosen frame's size. */
typedef struct uform__media_video_t {
    uint32_t width, height, frames;
    uint8_t *pixels;
    double *times;
    double duration;    /* the stream's duration in seconds (header, or measured when absent) */
    int rotation;       /* clockwise degrees applied from the display matrix: 0, 90, 180 or 270 */
    uint32_t seeks;     /* seeks made (diagnostics: seeking only pays past an unread keyframe) */
    uint32_t decoded;   /* frames decoded */
} uform__media_video_t;

/*
 * Decodes `frames` frames (FFmpeg only) at the centres of `frames` equal segments of the stream's
 * duration: output f shows the frame whose presentation interval covers (f + ½)·duration/frames
 * after the first frame's time, i.e. the last frame starting at or before it (the first frame when
 * none does). So a stream with fewer frames than asked repeats frames in time order, each as long
 * as it is shown (3 frames, 8 asked: 0 0 0 1 1 1 2 2), and targets after the last decodable frame
 * (a header duration longer than the frames, a truncated file) repeat the last frame. Rotation
 * metadata (the display matrix, 90/180/270 degrees) is applied. The decoder seeks only when the next
 * target lies past a keyframe not decoded yet; otherwise it decodes forward. A duration missing from
 * the header (live WebM) is measured by reading the packets first. Limits (UFORM_FORMAT naming
 * them): max_pixels per frame, max_seconds of duration, frames × pixels ≤
 * UFORM__MEDIA_MAX_VIDEO_PIXELS; `frames` must be 1 to max_frames (else UFORM_INVALID_ARGUMENT).
 */
uform_status_t uform__media_video_decode(const void *bytes, size_t size, uint32_t frames,
                                         const uform__media_limits_t *limits, uform__media_video_t *video,
                                         uform_outcome_t *outcome);
void uform__media_video_free(uform__media_video_t *video);

/* ---- Helpers shared by the decoders (image.c) ------------------------------------------------ */

/* Per-format image decoders, called by uform__media_image_decode after sniffing. */
uform_status_t uform__media_jpeg_decode(const uint8_t *bytes, size_t size, const uform__media_limits_t *limits,
                                        uform__media_image_t *image, uform_outcome_t *outcome);
uform_status_t uform__media_png_decode(const uint8_t *bytes, size_t size, const uform__media_limits_t *limits,
                                       uform__media_image_t *image, uform_outcome_t *outcome);
uform_status_t uform__media_webp_decode(const uint8_t *bytes, size_t size, const uform__media_limits_t *limits,
                                        uform__media_image_t *image, uform_outcome_t *outcome);
uform_status_t uform__media_av_image_decode(uform__media_kind_t kind, const uint8_t *bytes, size_t size,
                                            const uform__media_limits_t *limits, uform__media_image_t *image,
                                            uform_outcome_t *outcome);

/* Composites `count` RGBA8 pixels over white into RGB8; `rgb` may alias `rgba` (it is written
 * front to back and never overtakes the read position). */
void uform__media_rgba_over_white(const uint8_t *rgba, size_t count, uint8_t *rgb);

/* Applies EXIF orientation 1–8 (the TIFF tag 0x0112 convention, as PIL's ImageOps.exif_transpose)
 * to an RGB8 image [height, width, 3]: answers a new buffer (malloc) and its new width and height,
 * or NULL when out of memory. Orientation 1 or anything outside 2–8 copies. */
uint8_t *uform__media_orient(const uint8_t *pixels, uint32_t width, uint32_t height, int orientation,
                             uint32_t *new_width, uint32_t *new_height);

/* Checks width × height against the pixel limit; UFORM_FORMAT naming the limit and `what` if over. */
uform_status_t uform__media_check_pixels(uint64_t width, uint64_t height, const uform__media_limits_t *limits,
                                         const char *what, const char *function, uform_outcome_t *outcome);

#endif
