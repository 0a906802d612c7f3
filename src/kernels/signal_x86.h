/* The per-class signal loops that signal_serial.c puts in its tables. Private to src/kernels. */
#ifndef UFORM_KERNELS_SIGNAL_X86_H
#define UFORM_KERNELS_SIGNAL_X86_H

#include "kernels/signal.h"

/* The serial horizontal pass over output pixels [begin, columns->count) only. */
void uform__signal_resize_row_rgb8_serial(const uform__signal_taps_t *columns, size_t begin, const uint8_t *source,
                                          float *target);

/* AVX2 (signal_haswell.c) and AVX-512 F (signal_skylake.c) horizontal passes: same contract and
 * the same bits as the serial one. */
void uform__signal_resize_row_rgb8_haswell(const uform__signal_taps_t *columns, const uint8_t *source, float *target);
void uform__signal_resize_row_rgb8_skylake(const uform__signal_taps_t *columns, const uint8_t *source, float *target);

#endif
