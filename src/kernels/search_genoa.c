/*
 * GENOA's search table: ICELAKE's kernels, and dot_bf16 through VDPBF16PS, which multiplies BF16
 * pairs exactly and adds both products to an F32 lane (32 values per instruction, twice the
 * widening path's rate). Like every VDPBF16PS user here it counts BF16 values below 2^-126 in
 * magnitude as zero (far below anything a similarity of unit vectors can show). Rows go one at a
 * time against every query (one sequential stream, see search_icelake.c), two accumulators,
 * ragged columns through zero-masked loads: equal rows score identically wherever they fall.
 */
#include <immintrin.h>

#include "kernels/search.h"
#include "kernels/search_x86.h"

#define GENOA_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")))

GENOA_TARGET static void dot_bf16_genoa(size_t rows, size_t columns, const uint16_t *x, size_t x_stride, size_t queries,
                                        const uint16_t *q, size_t q_stride, float *scores, size_t scores_stride) {
    for (size_t r = 0; r < rows; ++r) {
        const uint16_t *row = x + r * x_stride;
        for (size_t j = 0; j < queries; ++j) {
            const uint16_t *query = q + j * q_stride;
            __m512 even_f32x16 = _mm512_setzero_ps(), odd_f32x16 = _mm512_setzero_ps();
            size_t c = 0;
            for (; c + 64 <= columns; c += 64) {
                even_f32x16 = _mm512_dpbf16_ps(even_f32x16, (__m512bh)_mm512_loadu_si512(row + c),
                                               (__m512bh)_mm512_loadu_si512(query + c));
                odd_f32x16 = _mm512_dpbf16_ps(odd_f32x16, (__m512bh)_mm512_loadu_si512(row + c + 32),
                                              (__m512bh)_mm512_loadu_si512(query + c + 32));
            }
            for (; c < columns; c += 32) { /* a ragged tail, zero-masked */
                const __mmask32 mask = columns - c >= 32 ? (__mmask32)0xFFFFFFFFu : (__mmask32)((1u << (columns - c)) - 1);
                even_f32x16 = _mm512_dpbf16_ps(even_f32x16, (__m512bh)_mm512_maskz_loadu_epi16(mask, row + c),
                                               (__m512bh)_mm512_maskz_loadu_epi16(mask, query + c));
            }
            scores[j * scores_stride + r] = _mm512_reduce_add_ps(_mm512_add_ps(even_f32x16, odd_f32x16));
        }
    }
}

const uform__search_kernels_t uform__search_kernels_genoa = {
    UFORM_CPU_CLASS_AMD_GENOA, uform__search_dot_f32_icelake, dot_bf16_genoa, uform__search_dot_i8_icelake,
    uform__search_hamming_b1_icelake, uform__search_hamming_b1_within_icelake,
};
