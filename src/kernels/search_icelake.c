/*
 * AVX-512 search kernels with VNNI and VPOPCNTDQ (ICELAKE; GENOA and later reuse all but
 * dot_bf16, see search_genoa.c). Rows go four at a time against one query, the block staying in
 * L1 while every query passes over it; a tail block repeats the last row in its unused slots, and
 * ragged columns come through zero-masked loads, so every row is summed by the same instructions
 * in the same order wherever it falls.
 *
 *   dot_f32   16-lane FMA accumulators, then _mm512_reduce_add_ps (a fixed shuffle tree).
 *   dot_bf16  BF16 widened to F32 by a shift (exact products), then as dot_f32.
 *   dot_i8    VPDPBUSD multiplies unsigned by signed bytes, so the query is biased to
 *             u = q + 128 (q XOR 0x80): Σ u·x = Σ q·x + 128·Σ x, and Σ x comes from one more
 *             VPDPBUSD with ones per row, shared by every query. Exact in int32 (64 products of
 *             at most 255·127 per lane and 64-byte chunk: below 2^31 for rows up to 2^14 bytes).
 *   hamming   VPOPCNTQ over XOR-ed 64-byte chunks.
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

static void block_rows(const void *base, size_t row_bytes, size_t r, size_t rows, const unsigned char *row[4]) {
    for (size_t slot = 0; slot < 4; ++slot)
        row[slot] = (const unsigned char *)base + (r + slot < rows ? r + slot : rows - 1) * row_bytes;
}

ICELAKE_TARGET void uform__search_dot_f32_icelake(size_t rows, size_t columns, const float *x, size_t x_stride,
                                                  size_t queries, const float *q, size_t q_stride, float *scores,
                                                  size_t scores_stride) {
    for (size_t r = 0; r < rows; r += 4) {
        const unsigned char *bytes[4];
        block_rows(x, x_stride * sizeof(float), r, rows, bytes);
        const float *row0 = (const float *)bytes[0], *row1 = (const float *)bytes[1], *row2 = (const float *)bytes[2],
                    *row3 = (const float *)bytes[3];
        const size_t count = rows - r < 4 ? rows - r : 4;
        for (size_t j = 0; j < queries; ++j) {
            const float *query = q + j * q_stride;
            __m512 sum0 = _mm512_setzero_ps(), sum1 = sum0, sum2 = sum0, sum3 = sum0;
            for (size_t c = 0; c < columns; c += 16) {
                const __mmask16 mask = mask16(columns - c);
                const __m512 query_f32x16 = _mm512_maskz_loadu_ps(mask, query + c);
                sum0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, row0 + c), query_f32x16, sum0);
                sum1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, row1 + c), query_f32x16, sum1);
                sum2 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, row2 + c), query_f32x16, sum2);
                sum3 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, row3 + c), query_f32x16, sum3);
            }
            const float sums[4] = {_mm512_reduce_add_ps(sum0), _mm512_reduce_add_ps(sum1), _mm512_reduce_add_ps(sum2),
                                   _mm512_reduce_add_ps(sum3)};
            for (size_t i = 0; i < count; ++i) scores[j * scores_stride + r + i] = sums[i];
        }
    }
}

ICELAKE_TARGET static inline __m512 load_bf16x16(const uint16_t *source, __mmask16 mask) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, source)), 16));
}

ICELAKE_TARGET static void dot_bf16_icelake(size_t rows, size_t columns, const uint16_t *x, size_t x_stride,
                                            size_t queries, const uint16_t *q, size_t q_stride, float *scores,
                                            size_t scores_stride) {
    for (size_t r = 0; r < rows; r += 4) {
        const unsigned char *bytes[4];
        block_rows(x, x_stride * sizeof(uint16_t), r, rows, bytes);
        const uint16_t *row0 = (const uint16_t *)bytes[0], *row1 = (const uint16_t *)bytes[1],
                       *row2 = (const uint16_t *)bytes[2], *row3 = (const uint16_t *)bytes[3];
        const size_t count = rows - r < 4 ? rows - r : 4;
        for (size_t j = 0; j < queries; ++j) {
            const uint16_t *query = q + j * q_stride;
            __m512 sum0 = _mm512_setzero_ps(), sum1 = sum0, sum2 = sum0, sum3 = sum0;
            for (size_t c = 0; c < columns; c += 16) {
                const __mmask16 mask = mask16(columns - c);
                const __m512 query_f32x16 = load_bf16x16(query + c, mask);
                sum0 = _mm512_fmadd_ps(load_bf16x16(row0 + c, mask), query_f32x16, sum0);
                sum1 = _mm512_fmadd_ps(load_bf16x16(row1 + c, mask), query_f32x16, sum1);
                sum2 = _mm512_fmadd_ps(load_bf16x16(row2 + c, mask), query_f32x16, sum2);
                sum3 = _mm512_fmadd_ps(load_bf16x16(row3 + c, mask), query_f32x16, sum3);
            }
            const float sums[4] = {_mm512_reduce_add_ps(sum0), _mm512_reduce_add_ps(sum1), _mm512_reduce_add_ps(sum2),
                                   _mm512_reduce_add_ps(sum3)};
            for (size_t i = 0; i < count; ++i) scores[j * scores_stride + r + i] = sums[i];
        }
    }
}

ICELAKE_TARGET void uform__search_dot_i8_icelake(size_t rows, size_t columns, const int8_t *x, size_t x_stride,
                                                 size_t queries, const int8_t *q, size_t q_stride, int32_t *scores,
                                                 size_t scores_stride) {
    const __m512i ones_u8x64 = _mm512_set1_epi8(1), bias_u8x64 = _mm512_set1_epi8((char)0x80);
    for (size_t r = 0; r < rows; r += 4) {
        const unsigned char *bytes[4];
        block_rows(x, x_stride, r, rows, bytes);
        const size_t count = rows - r < 4 ? rows - r : 4;
        /* Σ x per row, shared by every query. */
        __m512i total0 = _mm512_setzero_si512(), total1 = total0, total2 = total0, total3 = total0;
        for (size_t c = 0; c < columns; c += 64) {
            const __mmask64 mask = mask64(columns - c);
            total0 = _mm512_dpbusd_epi32(total0, ones_u8x64, _mm512_maskz_loadu_epi8(mask, bytes[0] + c));
            total1 = _mm512_dpbusd_epi32(total1, ones_u8x64, _mm512_maskz_loadu_epi8(mask, bytes[1] + c));
            total2 = _mm512_dpbusd_epi32(total2, ones_u8x64, _mm512_maskz_loadu_epi8(mask, bytes[2] + c));
            total3 = _mm512_dpbusd_epi32(total3, ones_u8x64, _mm512_maskz_loadu_epi8(mask, bytes[3] + c));
        }
        const int32_t bias[4] = {128 * _mm512_reduce_add_epi32(total0), 128 * _mm512_reduce_add_epi32(total1),
                                 128 * _mm512_reduce_add_epi32(total2), 128 * _mm512_reduce_add_epi32(total3)};
        for (size_t j = 0; j < queries; ++j) {
            const int8_t *query = q + j * q_stride;
            __m512i sum0 = _mm512_setzero_si512(), sum1 = sum0, sum2 = sum0, sum3 = sum0;
            for (size_t c = 0; c < columns; c += 64) {
                const __mmask64 mask = mask64(columns - c);
                /* Masked-out lanes read x = 0, so their biased query (128) adds nothing. */
                const __m512i query_u8x64 = _mm512_xor_si512(_mm512_maskz_loadu_epi8(mask, query + c), bias_u8x64);
                sum0 = _mm512_dpbusd_epi32(sum0, query_u8x64, _mm512_maskz_loadu_epi8(mask, bytes[0] + c));
                sum1 = _mm512_dpbusd_epi32(sum1, query_u8x64, _mm512_maskz_loadu_epi8(mask, bytes[1] + c));
                sum2 = _mm512_dpbusd_epi32(sum2, query_u8x64, _mm512_maskz_loadu_epi8(mask, bytes[2] + c));
                sum3 = _mm512_dpbusd_epi32(sum3, query_u8x64, _mm512_maskz_loadu_epi8(mask, bytes[3] + c));
            }
            const int32_t sums[4] = {_mm512_reduce_add_epi32(sum0) - bias[0], _mm512_reduce_add_epi32(sum1) - bias[1],
                                     _mm512_reduce_add_epi32(sum2) - bias[2], _mm512_reduce_add_epi32(sum3) - bias[3]};
            for (size_t i = 0; i < count; ++i) scores[j * scores_stride + r + i] = sums[i];
        }
    }
}

ICELAKE_TARGET void uform__search_hamming_b1_icelake(size_t rows, size_t bytes, const uint8_t *x, size_t x_stride,
                                                     size_t queries, const uint8_t *q, size_t q_stride,
                                                     uint32_t *distances, size_t distances_stride) {
    for (size_t r = 0; r < rows; ++r) {
        const uint8_t *row = x + r * x_stride;
        for (size_t j = 0; j < queries; ++j) {
            const uint8_t *query = q + j * q_stride;
            __m512i count_u64x8 = _mm512_setzero_si512();
            for (size_t c = 0; c < bytes; c += 64) {
                const __mmask64 mask = mask64(bytes - c);
                const __m512i difference = _mm512_xor_si512(_mm512_maskz_loadu_epi8(mask, row + c),
                                                            _mm512_maskz_loadu_epi8(mask, query + c));
                count_u64x8 = _mm512_add_epi64(count_u64x8, _mm512_popcnt_epi64(difference));
            }
            distances[j * distances_stride + r] = (uint32_t)_mm512_reduce_add_epi64(count_u64x8);
        }
    }
}

const uform__search_kernels_t uform__search_kernels_icelake = {
    UFORM_CPU_CLASS_INTEL_ICELAKE, uform__search_dot_f32_icelake, dot_bf16_icelake, uform__search_dot_i8_icelake,
    uform__search_hamming_b1_icelake,
};
