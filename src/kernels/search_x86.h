/* The AVX-512 search kernels ICELAKE's table defines (search_icelake.c, search_b1_icelake.c) and GENOA's
 * reuses. Private to src/kernels. */
#ifndef UFORM_KERNELS_SEARCH_X86_H
#define UFORM_KERNELS_SEARCH_X86_H

#include "kernels/search.h"

void uform__search_dot_f32_icelake(size_t rows, size_t columns, const float *x, size_t x_stride, size_t queries,
                                   const float *q, size_t q_stride, float *scores, size_t scores_stride);
void uform__search_dot_i8_icelake(size_t rows, size_t columns, const int8_t *x, size_t x_stride, size_t queries,
                                  const int8_t *q, size_t q_stride, int32_t *scores, size_t scores_stride);
void uform__search_hamming_b1_icelake(size_t rows, size_t bytes, const uint8_t *x, size_t x_stride, size_t queries,
                                      const uint8_t *q, size_t q_stride, uint32_t *distances,
                                      size_t distances_stride);
void uform__search_hamming_b1_within_icelake(size_t rows, size_t bytes, const uint8_t *x, size_t x_stride,
                                             size_t queries, const uint8_t *q, size_t q_stride, const uint32_t *limits,
                                             uint64_t *near, size_t near_stride);

#endif
