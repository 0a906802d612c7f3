/* The per-class passes of Pillow's resize that signal_pil_serial.c puts in its tables. Private to
 * src/kernels. */
#ifndef UFORM_KERNELS_SIGNAL_PIL_X86_H
#define UFORM_KERNELS_SIGNAL_PIL_X86_H

#include "kernels/signal_pil.h"

/*
 * The vectorised horizontal passes run a block of 16 source rows side by side, one row per lane
 * of 32-bit sums. The block's bytes of the columns it reads are first transposed into planes
 * [byte k of a row, 16 rows] (16 × 16 byte transposes in registers), so one tap of one channel
 * for all 16 rows is 16 consecutive bytes: one zero-extending load, one multiply by the
 * broadcast weight, one add. Each output pixel's three sums go to a tile [3 · pixels, 16 rows]
 * of clipped bytes, transposed back into the block's rows at the end. The vertical passes sum
 * 8 or 16 bytes of an output row per register, the weight broadcast.
 */
#define UFORM__SIGNAL_PIL_LANES 16

/* The source columns the horizontal taps read: [*lo, *hi). */
void uform__signal_pil_columns_span(const uform__signal_pil_axis_t *columns, size_t *lo, size_t *hi);

/* AVX2 (signal_pil_haswell.c) and AVX-512 F/BW/VL (signal_pil_skylake.c): the serial contracts. */
void uform__signal_pil_horizontal_rgb8_haswell(const uform__signal_pil_axis_t *columns, const uint8_t *source,
                                               size_t stride, size_t rows, uint8_t *target, size_t target_stride,
                                               uint8_t *scratch);
void uform__signal_pil_horizontal_rgb8_skylake(const uform__signal_pil_axis_t *columns, const uint8_t *source,
                                               size_t stride, size_t rows, uint8_t *target, size_t target_stride,
                                               uint8_t *scratch);
void uform__signal_pil_vertical_u8_haswell(const uint8_t *base, size_t stride, const int32_t *weights, size_t taps,
                                           size_t length, uint8_t *target);
void uform__signal_pil_vertical_u8_skylake(const uint8_t *base, size_t stride, const int32_t *weights, size_t taps,
                                           size_t length, uint8_t *target);

#endif
