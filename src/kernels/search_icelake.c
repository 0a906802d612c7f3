/*
 * AVX-512 search kernels with VNNI and VPOPCNTDQ (ICELAKE; GENOA and later reuse all but
 * dot_bf16, see search_genoa.c). Every row is summed by the same instructions in the same order
 * wherever it falls (ragged columns come through zero-masked loads), so equal rows score equally.
 *
 *   dot_f32   one row at a time against every query, two 16-lane FMA accumulators, then
 *             _mm512_reduce_add_ps (a fixed shuffle tree).
 *   dot_bf16  BF16 widened to F32 by a shift (exact products), then as dot_f32.
 *   dot_i8    one row at a time too. VPDPBUSD multiplies unsigned by signed bytes, so the query
 *             is biased to u = q + 128 (q XOR 0x80): Σ u·x = Σ q·x + 128·Σ x, and Σ x comes from
 *             one more VPDPBUSD with ones per row, shared by every query. Exact in int32 (each
 *             instruction adds at most 4·255·127 per lane: below 2^31 for rows up to 2^14 bytes).
 *   hamming   and hamming_within: search_b1_icelake.c.
 */
#include <immintrin.h>

#include "kernels/search.h"
#include "kernels/search_x86.h"

#define ICELAKE_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vpopcntdq,fma")))

ICELAKE_TARGET static inline __mmask16 mask16(size_t count) {
    return count >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << count) - 1);
}

ICELAKE_TARGET static inline __mmask64 mask64(size_t count) {
    return count >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << count) - 1);
}

/* One row at a time, every query against it while it sits in L1: a single sequential stream per
 * thread, which the prefetchers follow at full bandwidth (four interleaved 1 KiB rows measured at
 * 2x the single stream's time on Zen 4). Two accumulators per query, chunks alternating between
 * them, so the FMA chain is half as long; the sum order depends on `columns` only. */
ICELAKE_TARGET void uform__search_dot_f32_icelake(size_t rows, size_t columns, const float *x, size_t x_stride,
                                                  size_t queries, const float *q, size_t q_stride, float *scores,
                                                  size_t scores_stride) {
    for (size_t r = 0; r < rows; ++r) {
        const float *row = x + r * x_stride;
        for (size_t j = 0; j < queries; ++j) {
            const float *query = q + j * q_stride;
            __m512 even_f32x16 = _mm512_setzero_ps(), odd_f32x16 = _mm512_setzero_ps();
            size_t c = 0;
            for (; c + 32 <= columns; c += 32) {
                even_f32x16 = _mm512_fmadd_ps(_mm512_loadu_ps(row + c), _mm512_loadu_ps(query + c), even_f32x16);
                odd_f32x16 = _mm512_fmadd_ps(_mm512_loadu_ps(row + c + 16), _mm512_loadu_ps(query + c + 16), odd_f32x16);
            }
            for (; c < columns; c += 16) { /* a ragged tail, zero-masked: zeros add nothing */
                const __mmask16 mask = mask16(columns - c);
                even_f32x16 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, row + c), _mm512_maskz_loadu_ps(mask, query + c),
                                              even_f32x16);
            }
            scores[j * scores_stride + r] = _mm512_reduce_add_ps(_mm512_add_ps(even_f32x16, odd_f32x16));
        }
    }
}

ICELAKE_TARGET static inline __m512 load_bf16x16(const uint16_t *source, __mmask16 mask) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, source)), 16));
}

/* As dot_f32, over BF16 widened to F32 by a shift (exact products). */
ICELAKE_TARGET static void dot_bf16_icelake(size_t rows, size_t columns, const uint16_t *x, size_t x_stride,
                                            size_t queries, const uint16_t *q, size_t q_stride, float *scores,
                                            size_t scores_stride) {
    for (size_t r = 0; r < rows; ++r) {
        const uint16_t *row = x + r * x_stride;
        for (size_t j = 0; j < queries; ++j) {
            const uint16_t *query = q + j * q_stride;
            __m512 even_f32x16 = _mm512_setzero_ps(), odd_f32x16 = _mm512_setzero_ps();
            size_t c = 0;
            for (; c + 32 <= columns; c += 32) {
                even_f32x16 = _mm512_fmadd_ps(load_bf16x16(row + c, 0xFFFF), load_bf16x16(query + c, 0xFFFF), even_f32x16);
                odd_f32x16 = _mm512_fmadd_ps(load_bf16x16(row + c + 16, 0xFFFF), load_bf16x16(query + c + 16, 0xFFFF),
                                             odd_f32x16);
            }
            for (; c < columns; c += 16) {
                const __mmask16 mask = mask16(columns - c);
                even_f32x16 = _mm512_fmadd_ps(load_bf16x16(row + c, mask), load_bf16x16(query + c, mask), even_f32x16);
            }
            scores[j * scores_stride + r] = _mm512_reduce_add_ps(_mm512_add_ps(even_f32x16, odd_f32x16));
        }
    }
}

ICELAKE_TARGET void uform__search_dot_i8_icelake(size_t rows, size_t columns, const int8_t *x, size_t x_stride,
                                                 size_t queries, const int8_t *q, size_t q_stride, int32_t *scores,
                                                 size_t scores_stride) {
    const __m512i ones_u8x64 = _mm512_set1_epi8(1), bias_u8x64 = _mm512_set1_epi8((char)0x80);
    for (size_t r = 0; r < rows; ++r) {
        const int8_t *row = x + r * x_stride;
        /* Σ x of the row, shared by every query. */
        __m512i total_i32x16 = _mm512_setzero_si512();
        for (size_t c = 0; c < columns; c += 64)
            total_i32x16 = _mm512_dpbusd_epi32(total_i32x16, ones_u8x64, _mm512_maskz_loadu_epi8(mask64(columns - c), row + c));
        const int32_t bias = 128 * _mm512_reduce_add_epi32(total_i32x16);
        for (size_t j = 0; j < queries; ++j) {
            const int8_t *query = q + j * q_stride;
            __m512i sum_i32x16 = _mm512_setzero_si512();
            for (size_t c = 0; c < columns; c += 64) {
                const __mmask64 mask = mask64(columns - c);
                /* Masked-out lanes read x = 0, so their biased query (128) adds nothing. */
                const __m512i query_u8x64 = _mm512_xor_si512(_mm512_maskz_loadu_epi8(mask, query + c), bias_u8x64);
                sum_i32x16 = _mm512_dpbusd_epi32(sum_i32x16, query_u8x64, _mm512_maskz_loadu_epi8(mask, row + c));
            }
            scores[j * scores_stride + r] = _mm512_reduce_add_epi32(sum_i32x16) - bias;
        }
    }
}

const uform__search_kernels_t uform__search_kernels_icelake = {
    UFORM_CPU_CLASS_INTEL_ICELAKE, uform__search_dot_f32_icelake, dot_bf16_icelake, uform__search_dot_i8_icelake,
    uform__search_hamming_b1_icelake, uform__search_hamming_b1_within_icelake,
};
