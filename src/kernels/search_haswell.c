/*
 * AVX2 search kernels (also SIERRA's and SKYLAKE's). Every row is summed by the same
 * instructions in the same order wherever it falls, so equal rows get bit-identical scores, and
 * every query passes over a row (or block of rows) while it sits in L1, so the index streams from
 * memory once per call.
 *
 *   dot_f32   one row at a time (a single sequential stream), two 8-lane FMA accumulators, tail
 *             columns through a masked load (zeros add nothing), one fixed reduction (hadd tree).
 *   dot_bf16  BF16 widened to F32 (a shift), then as dot_f32: the products are exact.
 *   dot_i8    maddubs(|q|, sign(x, q)) gives q·x in 16-bit pairs without saturation
 *             (|q|, |x| ≤ 127: a pair sums to at most 32,258), madd with ones widens to int32.
 *   dot_i8    four rows at a time; a tail block repeats the last row in its unused slots.
 *   hamming   64-bit POPCNT per word; a ragged tail goes through a zeroed word.
 */
#include <immintrin.h>
#include <string.h>

#include "kernels/search.h"

#define HASWELL_TARGET __attribute__((target("avx2,fma,popcnt")))

/* The four row pointers of the block starting at row r (the last row repeated past `rows`). */
#define BLOCK_ROWS(type, rows_pointer, base, stride, r, rows)                                         \
    do {                                                                                              \
        for (size_t slot_ = 0; slot_ < 4; ++slot_)                                                    \
            (rows_pointer)[slot_] = (base) + ((r) + slot_ < (rows) ? (r) + slot_ : (rows) - 1) * (stride); \
    } while (0)

/* [r0 r1 r2 r3] = the lane sums of a0..a3, always by the same hadd tree. */
HASWELL_TARGET static inline __m128 reduce4_f32(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
    __m256 t0 = _mm256_hadd_ps(a0, a1), t1 = _mm256_hadd_ps(a2, a3);
    __m256 t2 = _mm256_hadd_ps(t0, t1);
    return _mm_add_ps(_mm256_castps256_ps128(t2), _mm256_extractf128_ps(t2, 1));
}

HASWELL_TARGET static inline __m128i reduce4_i32(__m256i a0, __m256i a1, __m256i a2, __m256i a3) {
    __m256i t0 = _mm256_hadd_epi32(a0, a1), t1 = _mm256_hadd_epi32(a2, a3);
    __m256i t2 = _mm256_hadd_epi32(t0, t1);
    return _mm_add_epi32(_mm256_castsi256_si128(t2), _mm256_extracti128_si256(t2, 1));
}

HASWELL_TARGET static inline __m256i tail_mask_f32(size_t count) {
    const int32_t lanes[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256((const __m256i *)(lanes + 8 - count));
}

/* One row at a time against every query (a single sequential stream, see search_icelake.c), two
 * 8-lane accumulators with chunks alternating between them, a masked tail, one fixed reduction. */
HASWELL_TARGET static void dot_f32_haswell(size_t rows, size_t columns, const float *x, size_t x_stride,
                                           size_t queries, const float *q, size_t q_stride, float *scores,
                                           size_t scores_stride) {
    const size_t full = columns / 16 * 16, tail8 = (columns - full) / 8 * 8;
    const __m256i mask = tail_mask_f32(columns - full - tail8);
    for (size_t r = 0; r < rows; ++r) {
        const float *row = x + r * x_stride;
        for (size_t j = 0; j < queries; ++j) {
            const float *query = q + j * q_stride;
            __m256 even_f32x8 = _mm256_setzero_ps(), odd_f32x8 = _mm256_setzero_ps();
            for (size_t c = 0; c < full; c += 16) {
                even_f32x8 = _mm256_fmadd_ps(_mm256_loadu_ps(row + c), _mm256_loadu_ps(query + c), even_f32x8);
                odd_f32x8 = _mm256_fmadd_ps(_mm256_loadu_ps(row + c + 8), _mm256_loadu_ps(query + c + 8), odd_f32x8);
            }
            if (tail8) even_f32x8 = _mm256_fmadd_ps(_mm256_loadu_ps(row + full), _mm256_loadu_ps(query + full), even_f32x8);
            if (full + tail8 < columns)
                odd_f32x8 = _mm256_fmadd_ps(_mm256_maskload_ps(row + full + tail8, mask),
                                            _mm256_maskload_ps(query + full + tail8, mask), odd_f32x8);
            __m128 sum = _mm_setzero_ps();
            sum = reduce4_f32(_mm256_add_ps(even_f32x8, odd_f32x8), _mm256_setzero_ps(), _mm256_setzero_ps(),
                              _mm256_setzero_ps());
            scores[j * scores_stride + r] = _mm_cvtss_f32(sum);
        }
    }
}

/* Eight BF16 values (a partial group is zero-filled through a copy) widened to F32. */
HASWELL_TARGET static inline __m256 load_bf16x8(const uint16_t *source, size_t count) {
    __m128i raw;
    if (count == 8) raw = _mm_loadu_si128((const __m128i *)source);
    else {
        uint16_t padded[8] = {0};
        memcpy(padded, source, count * sizeof(uint16_t));
        raw = _mm_loadu_si128((const __m128i *)padded);
    }
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
}

HASWELL_TARGET static void dot_bf16_haswell(size_t rows, size_t columns, const uint16_t *x, size_t x_stride,
                                            size_t queries, const uint16_t *q, size_t q_stride, float *scores,
                                            size_t scores_stride) {
    for (size_t r = 0; r < rows; ++r) {
        const uint16_t *row = x + r * x_stride;
        for (size_t j = 0; j < queries; ++j) {
            const uint16_t *query = q + j * q_stride;
            __m256 even_f32x8 = _mm256_setzero_ps(), odd_f32x8 = _mm256_setzero_ps();
            size_t c = 0;
            for (; c + 16 <= columns; c += 16) {
                even_f32x8 = _mm256_fmadd_ps(load_bf16x8(row + c, 8), load_bf16x8(query + c, 8), even_f32x8);
                odd_f32x8 = _mm256_fmadd_ps(load_bf16x8(row + c + 8, 8), load_bf16x8(query + c + 8, 8), odd_f32x8);
            }
            for (; c < columns; c += 8) {
                const size_t count = columns - c < 8 ? columns - c : 8;
                even_f32x8 = _mm256_fmadd_ps(load_bf16x8(row + c, count), load_bf16x8(query + c, count), even_f32x8);
            }
            __m128 sum = reduce4_f32(_mm256_add_ps(even_f32x8, odd_f32x8), _mm256_setzero_ps(), _mm256_setzero_ps(),
                                     _mm256_setzero_ps());
            scores[j * scores_stride + r] = _mm_cvtss_f32(sum);
        }
    }
}

HASWELL_TARGET static inline __m256i load_i8x32(const int8_t *source, size_t count) {
    if (count == 32) return _mm256_loadu_si256((const __m256i *)source);
    int8_t padded[32] = {0};
    memcpy(padded, source, count);
    return _mm256_loadu_si256((const __m256i *)padded);
}

/* q·x over 32 bytes into 8 int32 lanes. */
HASWELL_TARGET static inline __m256i dot_i8x32(__m256i query_abs, __m256i query, __m256i row, __m256i ones_i16x16) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(query_abs, _mm256_sign_epi8(row, query)), ones_i16x16);
}

HASWELL_TARGET static void dot_i8_haswell(size_t rows, size_t columns, const int8_t *x, size_t x_stride, size_t queries,
                                          const int8_t *q, size_t q_stride, int32_t *scores, size_t scores_stride) {
    const __m256i ones_i16x16 = _mm256_set1_epi16(1);
    for (size_t r = 0; r < rows; r += 4) {
        const int8_t *row[4];
        BLOCK_ROWS(const int8_t, row, x, x_stride, r, rows);
        for (size_t j = 0; j < queries; ++j) {
            const int8_t *query = q + j * q_stride;
            __m256i sum0 = _mm256_setzero_si256(), sum1 = sum0, sum2 = sum0, sum3 = sum0;
            for (size_t c = 0; c < columns; c += 32) {
                const size_t count = columns - c < 32 ? columns - c : 32;
                const __m256i query_i8x32 = load_i8x32(query + c, count), query_abs = _mm256_abs_epi8(query_i8x32);
                sum0 = _mm256_add_epi32(sum0, dot_i8x32(query_abs, query_i8x32, load_i8x32(row[0] + c, count), ones_i16x16));
                sum1 = _mm256_add_epi32(sum1, dot_i8x32(query_abs, query_i8x32, load_i8x32(row[1] + c, count), ones_i16x16));
                sum2 = _mm256_add_epi32(sum2, dot_i8x32(query_abs, query_i8x32, load_i8x32(row[2] + c, count), ones_i16x16));
                sum3 = _mm256_add_epi32(sum3, dot_i8x32(query_abs, query_i8x32, load_i8x32(row[3] + c, count), ones_i16x16));
            }
            int32_t lanes[4];
            _mm_storeu_si128((__m128i *)lanes, reduce4_i32(sum0, sum1, sum2, sum3));
            for (size_t i = 0; i < 4 && r + i < rows; ++i) scores[j * scores_stride + r + i] = lanes[i];
        }
    }
}

/* popcount(row XOR query) over `bytes` bytes, 64 bits at a time; a ragged tail through zeroed words. */
HASWELL_TARGET static inline uint32_t hamming_haswell(const uint8_t *row, const uint8_t *query, size_t bytes) {
    uint64_t distance = 0;
    size_t b = 0;
    for (; b + 8 <= bytes; b += 8) {
        uint64_t a, c;
        memcpy(&a, row + b, 8);
        memcpy(&c, query + b, 8);
        distance += (uint64_t)_mm_popcnt_u64(a ^ c);
    }
    if (b < bytes) {
        uint64_t a = 0, c = 0;
        memcpy(&a, row + b, bytes - b);
        memcpy(&c, query + b, bytes - b);
        distance += (uint64_t)_mm_popcnt_u64(a ^ c);
    }
    return (uint32_t)distance;
}

HASWELL_TARGET static void hamming_b1_haswell(size_t rows, size_t bytes, const uint8_t *x, size_t x_stride,
                                              size_t queries, const uint8_t *q, size_t q_stride, uint32_t *distances,
                                              size_t distances_stride) {
    for (size_t r = 0; r < rows; ++r)
        for (size_t j = 0; j < queries; ++j)
            distances[j * distances_stride + r] = hamming_haswell(x + r * x_stride, q + j * q_stride, bytes);
}

/* Query by query, 64 rows to a word; the rows of a block stay in L1 between queries. */
HASWELL_TARGET static void hamming_b1_within_haswell(size_t rows, size_t bytes, const uint8_t *x, size_t x_stride,
                                                     size_t queries, const uint8_t *q, size_t q_stride,
                                                     const uint32_t *limits, uint64_t *near, size_t near_stride) {
    for (size_t j = 0; j < queries; ++j)
        for (size_t word = 0; word * 64 < rows; ++word) {
            uint64_t bits = 0;
            for (size_t k = 0; k < 64 && word * 64 + k < rows; ++k)
                bits |= (uint64_t)(hamming_haswell(x + (word * 64 + k) * x_stride, q + j * q_stride, bytes) <= limits[j]) << k;
            near[j * near_stride + word] = bits;
        }
}

const uform__search_kernels_t uform__search_kernels_haswell = {
    UFORM_CPU_CLASS_INTEL_HASWELL, dot_f32_haswell, dot_bf16_haswell, dot_i8_haswell, hamming_b1_haswell,
    hamming_b1_within_haswell,
};
