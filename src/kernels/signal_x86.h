/* The per-class signal loops that signal_serial.c puts in its tables. Private to src/kernels. */
#ifndef UFORM_KERNELS_SIGNAL_X86_H
#define UFORM_KERNELS_SIGNAL_X86_H

#include "kernels/signal.h"

/*
 * The vectorised horizontal passes run a block of source rows side by side, one row per lane.
 * Per block they first turn the source pixels that a run of output pixels reads into planes
 * [pixels, 3 channels, lanes] of floats (the rows' bytes transposed in registers as dwords, four
 * bytes of a row to a lane, then each byte position zero-extended by a byte shuffle and
 * converted: a quarter of the shuffles of transposing converted floats), then sum each output
 * pixel's taps from the planes with the weight broadcast to every lane, then transpose the sums
 * back to rows through a [lanes, lanes] tile of registers.
 * A run spans at most `uform__signal_resize_rows_span` source pixels, so its planes (24 KiB for
 * 16 lanes) stay in L1. No gathers: Zen 4 runs a 16-lane gather slower than the transposes.
 */
#define UFORM__SIGNAL_ROWS_LANES 16 /* the widest block (AVX-512); scratch is sized for it */
#define UFORM__SIGNAL_ROWS_SPAN 128 /* source pixels per run of outputs, unless one window is wider */

/* Source pixels a run of outputs may span: max(UFORM__SIGNAL_ROWS_SPAN, columns->taps). */
size_t uform__signal_resize_rows_span(const uform__signal_taps_t *columns);

/* The run of outputs from x0 that the planes hold at once: outputs [x0, returned) whose windows
 * all lie in source pixels [*lo, *hi), at most uform__signal_resize_rows_span pixels. */
size_t uform__signal_resize_run(const uform__signal_taps_t *columns, size_t x0, size_t *lo, size_t *hi);

/* AVX2 (signal_haswell.c) and AVX-512 F (signal_skylake.c) passes: same contracts and the same
 * bits as the serial ones. */
void uform__signal_resize_rows_rgb8_haswell(const uform__signal_taps_t *columns, const uint8_t *source, size_t stride,
                                            size_t rows, float *target, float *scratch);
void uform__signal_resize_rows_rgb8_skylake(const uform__signal_taps_t *columns, const uint8_t *source, size_t stride,
                                            size_t rows, float *target, float *scratch);
void uform__signal_resize_column_f32_haswell(const float *const *rows, const float *weights, size_t size, size_t width,
                                             float *target);
void uform__signal_resize_column_f32_skylake(const float *const *rows, const float *weights, size_t size, size_t width,
                                             float *target);
void uform__signal_normalise_rgb_f32_haswell(const float *row, size_t width, const float *mean, const float *std,
                                             float *planes, size_t plane_stride);
void uform__signal_normalise_rgb_f32_skylake(const float *row, size_t width, const float *mean, const float *std,
                                             float *planes, size_t plane_stride);

/* The serial normalisation of pixels [begin, width) only (the vectorised ones' tails). */
void uform__signal_normalise_rgb_f32_serial(const float *row, size_t begin, size_t width, const float *mean,
                                            const float *std, float *planes, size_t plane_stride);

#endif
