/*
 * GENOA's search table: ICELAKE's kernels, and dot_bf16 through VDPBF16PS, which multiplies BF16
 * pairs exactly and adds both products to an F32 lane (32 values per instruction, twice the
 * widening path's rate). Like every VDPBF16PS user here it counts BF16 values below 2^-126 in
 * magnitude as zero (normalised embeddings have none above 2^-20 that matter). Rows go four at a
 * time against one query, tail blocks repeat the last row, ragged columns come through
 * zero-masked loads: equal rows score identically wherever they fall.
 */
#include <immintrin.h>

#include "kernels/search.h"
#include "kernels/search_x86.h"

#define GENOA_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")))

GENOA_TARGET static void dot_bf16_genoa(size_t rows, size_t columns, const uint16_t *x, size_t x_stride, size_t queries,
                                        const uint16_t *q, size_t q_stride, float *scores, size_t scores_stride) {
    for (size_t r = 0; r < rows; r += 4) {
        const uint16_t *row[4];
        for (size_t slot = 0; slot < 4; ++slot) row[slot] = x + (r + slot < rows ? r + slot : rows - 1) * x_stride;
        const size_t count = rows - r < 4 ? rows - r : 4;
        for (size_t j = 0; j < queries; ++j) {
            const uint16_t *query = q + j * q_stride;
            __m512 sum0 = _mm512_setzero_ps(), sum1 = sum0, sum2 = sum0, sum3 = sum0;
            for (size_t c = 0; c < columns; c += 32) {
                const __mmask32 mask = columns - c >= 32 ? (__mmask32)0xFFFFFFFFu : (__mmask32)((1u << (columns - c)) - 1);
                const __m512bh query_bf16x32 = (__m512bh)_mm512_maskz_loadu_epi16(mask, query + c);
                sum0 = _mm512_dpbf16_ps(sum0, (__m512bh)_mm512_maskz_loadu_epi16(mask, row[0] + c), query_bf16x32);
                sum1 = _mm512_dpbf16_ps(sum1, (__m512bh)_mm512_maskz_loadu_epi16(mask, row[1] + c), query_bf16x32);
                sum2 = _mm512_dpbf16_ps(sum2, (__m512bh)_mm512_maskz_loadu_epi16(mask, row[2] + c), query_bf16x32);
                sum3 = _mm512_dpbf16_ps(sum3, (__m512bh)_mm512_maskz_loadu_epi16(mask, row[3] + c), query_bf16x32);
            }
            const float sums[4] = {_mm512_reduce_add_ps(sum0), _mm512_reduce_add_ps(sum1), _mm512_reduce_add_ps(sum2),
                                   _mm512_reduce_add_ps(sum3)};
            for (size_t i = 0; i < count; ++i) scores[j * scores_stride + r + i] = sums[i];
        }
    }
}

const uform__search_kernels_t uform__search_kernels_genoa = {
    UFORM_CPU_CLASS_AMD_GENOA, uform__search_dot_f32_icelake, dot_bf16_genoa, uform__search_dot_i8_icelake,
    uform__search_hamming_b1_icelake,
};
