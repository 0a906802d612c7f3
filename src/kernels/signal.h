/*
 * Signal kernels for the media stems: the image resize, the real FFT and STFT, Whisper's log-mel
 * and the audio resampler. Private to libuform.
 *
 * Every kernel here reproduces a named PyTorch-family reference, and tests/kernels/test_signal_*.c
 * check it against that reference run by Debian's python3 (torch 1.13, torchvision 0.14,
 * torchaudio 0.13):
 *
 *   resize     torchvision.transforms.functional.resize(img.float(), S, antialias=True)
 *              (ATen's _upsample_bilinear2d_aa, triangle filter, align_corners=False)
 *   rfft       a double-precision DFT
 *   stft       torch.stft(x, 400, 160, window=hann_window(400), center=True, pad_mode='reflect')
 *   log-mel    Whisper's log_mel_spectrogram with librosa's Slaney mel filters
 *   resample   torchaudio.functional.resample(x, orig, new) with its defaults
 *
 * Plans. Each operation has a plan built once from its sizes (weight tables, twiddles, filters,
 * polyphase kernels; all computed here, in the precision the reference uses) and freed with the
 * matching `_free` (freeing a zeroed or already freed plan is a no-op). A plan is immutable after
 * init, except the resize plan's scratch, so one resize plan serves one call at a time while FFT,
 * mel and resample plans may serve many threads at once.
 *
 * Errors. Init functions check their sizes and answer UFORM_INVALID_ARGUMENT with a message naming
 * the argument, or UFORM_OUT_OF_MEMORY; apply functions that can fail take an outcome as well.
 * Nothing here aborts or prints.
 *
 * Parallelism. Functions taking `const uform__parallel_t *parallel` (NULL = serial) split their
 * work into prongs whose outputs are disjoint and computed in the same order whatever the split,
 * so results are bit-identical for any thread count.
 *
 * Dispatch. `uform__signal_kernels(cpu_class)` answers the inner loops for a CPU class; every slot
 * is filled. HASWELL and the AVX-512 classes have their own resize passes: the horizontal one
 * runs 8 or 16 source rows side by side, one row per lane, and the vertical one 8 or 16 floats of
 * a row at a time; each sum still runs in tap order without FMA, so every class is bit-identical
 * to SERIAL. The other slots are the serial loops, which the compiler vectorises well enough.
 * The apply functions take the table, NULL meaning the serial one; the caller checks that the
 * machine runs the class (uform_cpu_class_supported) before passing its table.
 */
#ifndef UFORM_KERNELS_SIGNAL_H
#define UFORM_KERNELS_SIGNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/parallel.h"
#include "uform/uform.h"

/* ------------------------------------------------------------------------------------------ */
/* Inner loops per CPU class.                                                                  */

/* One axis of a separable resize: output `i` reads `size[i]` consecutive source samples from
 * `first[i]`, weighted by `weights[i * taps .. + size[i]]`. */
typedef struct uform__signal_taps_t {
    size_t input;      /* source samples along the axis (every first[i] + size[i] <= input) */
    size_t count;      /* output samples along the axis */
    size_t taps;       /* weights reserved per output sample (>= every size[i]) */
    size_t *first;     /* [count] */
    size_t *size;      /* [count] */
    float *weights;    /* [count, taps] */
} uform__signal_taps_t;

typedef struct uform__signal_kernels_t {
    uform_cpu_class_t cpu_class;
    /* Horizontal pass over `rows` interleaved RGB8 rows (row r at source + r · stride bytes):
     * target[r, x, c] = sum_j w[x, j] · source[r, first[x] + j, c] for x in [0, columns->count),
     * summed in j order from j = 0, each product rounded before its add, as ATen's
     * interpolate_aa_single_dim does. target is [rows, columns->count, 3] floats; scratch holds
     * uform__signal_resize_rows_scratch_floats(columns) floats for this call alone. */
    void (*resize_rows_rgb8)(const uform__signal_taps_t *columns, const uint8_t *source, size_t stride, size_t rows,
                             float *target, float *scratch);
    /* Vertical pass for one output row: target[k] = sum_j weights[j] * rows[j][k] for k < width,
     * j in [0, size), in j order. */
    void (*resize_column_f32)(const float *const *rows, const float *weights, size_t size, size_t width,
                              float *target);
    /* The normalisation of one resized row into channel planes: planes[c · plane_stride + x] =
     * (row[3x + c] / 255 − mean[c]) / std[c] for x < width, each step rounded in float, in that
     * order (torchvision's ToTensor, then Normalize). */
    void (*normalise_rgb_f32)(const float *row, size_t width, const float *mean, const float *std, float *planes,
                              size_t plane_stride);
    /* Dot product of `count` floats, summed in index order (the resampler's polyphase taps). */
    float (*dot_f32)(const float *a, const float *b, size_t count);
} uform__signal_kernels_t;

/* The table for `cpu_class`: HASWELL and SIERRA get the AVX2 table, SKYLAKE, ICELAKE, GENOA,
 * SAPPHIRE, GRANITE and DIAMOND the AVX-512 one, every other class (UNKNOWN, MONOVERSIONED, the
 * non-x86 classes) SERIAL's. All slots are non-NULL. Never NULL. */
const uform__signal_kernels_t *uform__signal_kernels(uform_cpu_class_t cpu_class);

/* Floats of scratch one resize_rows_rgb8 call needs for `columns` (any class). */
size_t uform__signal_resize_rows_scratch_floats(const uform__signal_taps_t *columns);

/* ------------------------------------------------------------------------------------------ */
/* Antialiased bilinear resize of RGB8 images (signal_resize.c).                               */

/*
 * The filter is ATen's `_upsample_bilinear2d_aa` (what torchvision 0.14's
 * `resize(..., antialias=True)` calls on a tensor; PIL's `Image.resize(BILINEAR)` uses the same
 * triangle filter but rounds through 8-bit fixed point, so it differs by up to a few levels):
 * per axis with scale = in / out (in float), output i is centred at scale * (i + 0.5); the
 * triangle filter has support max(scale, 1) on each side, is evaluated at
 * (source index - centre + 0.5) / max(scale, 1), and its weights are normalised to sum 1 per
 * output sample. Weights are computed in float with ATen's promotions, the horizontal pass runs
 * first into a float buffer, then the vertical pass, each summing in tap order.
 *
 * Decision (shared with the image stem): the model resizes the RGB8 values as FLOAT, with no
 * rounding between the resize and the normalisation, i.e. it matches
 * `resize(torch.from_numpy(hwc).permute(2, 0, 1).float(), S, antialias=True)`, then `x / 255`,
 * then `(x - mean) / std`. The U8 output exists for callers that want bytes; it rounds half to even
 * and clamps as torchvision does for a uint8 tensor.
 *
 * A plan can produce only a window of the resized image (the centre crop), computing just the
 * rows and columns inside it; the filter still belongs to the whole resized size.
 */
typedef enum uform__signal_pixels_t {
    UFORM__SIGNAL_PIXELS_F32_HWC = 0,         /* float [crop_height, crop_width, 3], values 0..255 */
    UFORM__SIGNAL_PIXELS_U8_HWC = 1,          /* uint8 [crop_height, crop_width, 3], round half to even */
    UFORM__SIGNAL_PIXELS_F32_CHW_NORMALISED = 2, /* float [3, crop_height, crop_width], (v/255 - mean[c]) / std[c] */
    UFORM__SIGNAL_PIXELS_F32_PATCHES_NORMALISED = 3 /* float [(crop_height/p)·(crop_width/p), 3, t, p, p]: patches
                                                      row-major, each (c, frame, y, x); this image fills frame
                                                      slot `frame` of t (t = 1, frame = 0 for the image stem; the
                                                      video stem's tubelets use t = tubelet) */
} uform__signal_pixels_t;

/* Where and how a resize writes. */
typedef struct uform__signal_image_target_t {
    uform__signal_pixels_t pixels;
    void *data;                 /* the output, laid out as `pixels` says */
    const float *mean, *std;    /* [3] each, std non-zero: read by the normalised layouts only */
    size_t patch;               /* p, dividing both crop sides: read by the patch layout only */
    size_t frames, frame;       /* t >= 1 and the slot in [0, t): patch layout only */
} uform__signal_image_target_t;

typedef struct uform__signal_resize_plan_t {
    size_t source_height, source_width;   /* the image read */
    size_t resized_height, resized_width; /* the whole resized image the filter is defined on */
    size_t crop_top, crop_left;           /* the window of the resized image produced */
    size_t crop_height, crop_width;
    uform__signal_taps_t rows;            /* [crop_height] taps over source rows */
    uform__signal_taps_t columns;         /* [crop_width] taps over source columns */
    size_t source_row_begin, source_row_end; /* source rows the window reads */
    float *scratch;                       /* [source_row_end - source_row_begin, crop_width, 3] */
} uform__signal_resize_plan_t;

/* Plans the resize of a source_height × source_width image to resized_height × resized_width,
 * producing the window at (crop_top, crop_left) of crop_height × crop_width, which must lie inside
 * the resized image. All sizes >= 1. UFORM_INVALID_ARGUMENT or UFORM_OUT_OF_MEMORY otherwise. */
uform_status_t uform__signal_resize_plan_init(uform__signal_resize_plan_t *plan, size_t source_height,
                                              size_t source_width, size_t resized_height, size_t resized_width,
                                              size_t crop_top, size_t crop_left, size_t crop_height,
                                              size_t crop_width, uform_outcome_t *outcome);

/* The image stem's geometry: the shorter side scaled to `side` and the longer to
 * int(side * long / short), as torchvision 0.14's `_compute_resized_output_size`, then the centre
 * crop side × side at (int(round((H - side) / 2)), int(round((W - side) / 2))) with Python's round
 * (half to even), as `center_crop`. */
uform_status_t uform__signal_resize_plan_init_shorter_side(uform__signal_resize_plan_t *plan, size_t source_height,
                                                           size_t source_width, size_t side,
                                                           uform_outcome_t *outcome);

void uform__signal_resize_plan_free(uform__signal_resize_plan_t *plan);

/* Resizes `source` (RGB8 interleaved, row r at source + r * source_stride bytes, stride >=
 * 3 · source_width) through `plan` into `target`. `kernels` NULL means serial. UFORM_INVALID_ARGUMENT
 * names a bad argument; UFORM_OUT_OF_MEMORY if the per-thread output rows cannot be had. */
uform_status_t uform__signal_resize_rgb8(uform__signal_resize_plan_t *plan, const uint8_t *source,
                                         size_t source_stride, const uform__signal_image_target_t *target,
                                         const uform__signal_kernels_t *kernels, const uform__parallel_t *parallel,
                                         uform_outcome_t *outcome);

/* ------------------------------------------------------------------------------------------ */
/* Real FFT of any length (signal_fft.c).                                                      */

/*
 * Mixed-radix Stockham (self-sorting) complex FFT with radix 4, 2, 3, 5 butterflies and a generic
 * O(p²) butterfly for other prime factors up to 64; a length with a larger prime factor runs as
 * Bluestein's chirp-z convolution over a 2·3·5-smooth length L >= 2M − 1, so every length costs
 * O(N log N). Real input of even length N runs as a complex FFT of M = N/2 plus a split step; odd
 * lengths run as a complex FFT of M = N. Twiddles are computed in double, stored as float,
 * arithmetic is float. Matches numpy.fft.rfft: X[k] = sum_n x[n] exp(-2πi k n / N), k <= N/2.
 */
#define UFORM__SIGNAL_FFT_MAX_FACTORS 64

typedef struct uform__signal_fft_plan_t {
    size_t length;                                   /* N, real samples in */
    size_t complex_length;                           /* M: N/2 for even N, N for odd N */
    size_t stage_length;                             /* the stages' length: M, or Bluestein's L */
    size_t factor_count;
    size_t factors[UFORM__SIGNAL_FFT_MAX_FACTORS];   /* radices, product stage_length */
    size_t twiddle_offsets[UFORM__SIGNAL_FFT_MAX_FACTORS];
    size_t root_offsets[UFORM__SIGNAL_FFT_MAX_FACTORS];
    float *twiddles;        /* per stage, [stride, radix - 1] complex (re, im) */
    float *roots;           /* per stage of radix p > 5: [p] complex exp(-2πi t / p) */
    float *split;           /* [N/2 + 1] complex exp(-2πi k / N), the even-length split step */
    float *chirp;           /* Bluestein only: [M] complex exp(-πi t² / M), else NULL */
    float *chirp_spectrum;  /* Bluestein only: [L] complex FFT_L(conj chirp, cyclic) / L, else NULL */
} uform__signal_fft_plan_t;

/* Plans a real FFT of 1 <= `length` <= 2^28 samples. */
uform_status_t uform__signal_fft_plan_init(uform__signal_fft_plan_t *plan, size_t length, uform_outcome_t *outcome);
void uform__signal_fft_plan_free(uform__signal_fft_plan_t *plan);

/* Floats of scratch `uform__signal_rfft_f32` needs: 4 · stage_length. */
size_t uform__signal_fft_scratch_floats(const uform__signal_fft_plan_t *plan);

/* output [N/2 + 1, 2] (re, im) = rfft(input [N]). `scratch` holds scratch_floats floats; input and
 * output must not overlap scratch. */
void uform__signal_rfft_f32(const uform__signal_fft_plan_t *plan, const float *input, float *output, float *scratch);

/* ------------------------------------------------------------------------------------------ */
/* STFT, mel filterbank and Whisper's log-mel (signal_mel.c).                                  */

/*
 * STFT as torch.stft(x, n_fft, hop, window=torch.hann_window(n_fft) (periodic), center=True,
 * pad_mode='reflect', return_complex=True): the signal is reflect-padded by n_fft/2 on both sides
 * (so it needs more than n_fft/2 samples), frame t starts at t·hop of the padded signal, and there
 * are 1 + samples / hop frames. Power is re² + im² over n_fft/2 + 1 bins.
 *
 * Mel filters: librosa.filters.mel(sr, n_fft, n_mels, fmin, fmax, htk=False, norm='slaney') — the
 * Slaney mel scale (linear below 1 kHz at 200/3 Hz per mel, logarithmic above with step
 * ln(6.4)/27), M + 2 equally spaced mel points, triangles over the rfft bin frequencies k·sr/n_fft,
 * each scaled by 2 / (upper edge − lower edge) in Hz. Computed in double, stored as float like
 * librosa's float32 output (Whisper ships exactly those filters for sr 16000, n_fft 400).
 *
 * Log-mel: Whisper's `log_mel_spectrogram`: drop the last STFT frame, mel = filters · power,
 * log10(max(mel, 1e-10)), clamp below (max − 8) with max over the whole spectrogram, then
 * (x + 4) / 4. Output [frames − 1, M], frame-major.
 */
typedef struct uform__signal_mel_plan_t {
    size_t sample_rate, n_fft, hop, mels;
    uform__signal_fft_plan_t fft;
    float *window;          /* [n_fft] periodic Hann */
    size_t *filter_first;   /* [mels] first non-zero bin of each filter */
    size_t *filter_size;    /* [mels] non-zero bins */
    float *filters;         /* [mels, n_fft / 2 + 1], dense, zeros included */
} uform__signal_mel_plan_t;

/* Plans STFT and mel filters. n_fft >= 2, hop >= 1, mels >= 1, 0 <= fmin < fmax <= rate / 2
 * (pass fmax = 0 for rate / 2). Whisper: 16000, 400, 160, 80, 0, 8000. */
uform_status_t uform__signal_mel_plan_init(uform__signal_mel_plan_t *plan, size_t sample_rate, size_t n_fft,
                                           size_t hop, size_t mels, double fmin, double fmax,
                                           uform_outcome_t *outcome);
void uform__signal_mel_plan_free(uform__signal_mel_plan_t *plan);

/* Frames of the centred STFT of `samples` samples: 1 + samples / hop. */
size_t uform__signal_stft_frames(const uform__signal_mel_plan_t *plan, size_t samples);

/* power [frames, n_fft/2 + 1] = |STFT(samples)|². samples > n_fft / 2 (reflect padding needs it),
 * otherwise UFORM_INVALID_ARGUMENT. UFORM_OUT_OF_MEMORY if per-thread scratch cannot be had. */
uform_status_t uform__signal_stft_power_f32(const uform__signal_mel_plan_t *plan, const float *samples, size_t count,
                                            float *power, const uform__parallel_t *parallel,
                                            uform_outcome_t *outcome);

/* target [stft_frames(count) − 1, mels] = Whisper's log-mel of `samples`. Same statuses. */
uform_status_t uform__signal_log_mel_f32(const uform__signal_mel_plan_t *plan, const float *samples, size_t count,
                                         float *target, const uform__parallel_t *parallel, uform_outcome_t *outcome);

/* ------------------------------------------------------------------------------------------ */
/* Windowed-sinc resampler (signal_resample.c).                                                */

/*
 * torchaudio 0.13's `functional.resample(x, orig, new)` with its defaults (lowpass_filter_width 6,
 * rolloff 0.99, "sinc_interpolation" = Hann-windowed sinc): rates reduced by their gcd to o and n,
 * cutoff b = 0.99 · min(o, n), width = ceil(6 · o / b); phase i in [0, n) has taps
 * j in [0, 2·width + o) at t = clamp((−i/n + (j − width)/o) · b, −6, 6),
 * k = sinc(π t) · cos²(π t / 12) · b / o, computed in float as torchaudio does for a float
 * waveform; output m = q·n + i is Σ_j k_i[j] · x[q·o + j − width] (zeros outside x), and there are
 * ceil(n · L / o) outputs. Equal rates copy. Each phase applies only its taps inside the window
 * (|t| < 6); outside it torchaudio's float taps are ~1e-22 (cos(π/2)² in float is not 0), so
 * dropping them moves results by < 1e-20 of the signal and makes 44.1 kHz -> 16 kHz 14× cheaper.
 *
 * Quality (measured by test_signal_resample with unit sines, 48 kHz -> 16 kHz): gain within 0.02 dB
 * up to 4 kHz, −0.13 dB at 6 kHz, −1.8 dB at 7 kHz (the Hann-sinc of 6 zero crossings rolls off
 * well before the 7.92 kHz cutoff); tones above the new Nyquist alias at −11 dB (8.5 kHz),
 * −17 dB (9 kHz), below −45 dB from 10 kHz on (−55 dB at 12 kHz, −84 dB at 20 kHz). 44.1 kHz ->
 * 16 kHz behaves the same (12 kHz at −55 dB). That is torchaudio's design, kept for parity.
 */
typedef struct uform__signal_resample_plan_t {
    size_t source_rate, target_rate;   /* as given */
    size_t orig, next;                 /* reduced by the gcd; equal rates give 1 and 1 */
    size_t width;                      /* zero padding before the signal, in source samples */
    size_t taps;                       /* 2 · width + orig */
    size_t *first;                     /* [next] first non-zero tap of each phase */
    size_t *size;                      /* [next] non-zero taps of each phase */
    float *kernels;                    /* [next, taps] */
} uform__signal_resample_plan_t;

/* Plans resampling from `source_rate` to `target_rate` Hz (both >= 1). */
uform_status_t uform__signal_resample_plan_init(uform__signal_resample_plan_t *plan, size_t source_rate,
                                                size_t target_rate, uform_outcome_t *outcome);
void uform__signal_resample_plan_free(uform__signal_resample_plan_t *plan);

/* Output samples for `count` input samples: ceil(next · count / orig) (count for equal rates). */
size_t uform__signal_resample_length(const uform__signal_resample_plan_t *plan, size_t count);

/* How many leading source samples outputs [0, outputs) read: resampling just
 * min(count, source_needed(outputs)) samples gives those outputs bit for bit (a stem that crops to
 * 10 s need not resample a whole long recording). `outputs` for equal rates. */
size_t uform__signal_resample_source_needed(const uform__signal_resample_plan_t *plan, size_t outputs);

/* target [resample_length(count)] = resample(source [count]) through an initialised plan; target
 * may equal source only for equal rates. Cannot fail. */
void uform__signal_resample_f32(const uform__signal_resample_plan_t *plan, const float *source, size_t count,
                                float *target, const uform__signal_kernels_t *kernels,
                                const uform__parallel_t *parallel);

#endif
