/*
 * AVX2 passes of Pillow's resize (signal_pil.h; the scheme is in signal_pil_x86.h): the
 * horizontal pass runs 16 source rows side by side as two registers of 8 lanes, the vertical one
 * 32 bytes of an output row at a time. Sums are 32-bit integers (vpmulld, vpaddd), exact in any
 * order, so every byte equals the serial pass's.
 *
 * Shapes: planes [3 · span, 16] bytes (byte k of each of the block's rows, from the first column
 * read); tile [3 · count, 16] bytes (output byte k of each row).
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/signal_pil_x86.h"

#define LANES UFORM__SIGNAL_PIL_LANES
#define SHIFT UFORM__SIGNAL_PIL_PRECISION_BITS
#define HALF (1 << (SHIFT - 1))
#define TARGET __attribute__((target("avx2")))

/* A 16 × 16 byte transpose in each 128-bit lane: on entry a[i] holds "row" i (two blocks of 16
 * bytes side by side); on exit a[m] holds byte m of every row, i.e. column m of the low block in
 * lane 0 and of the high block in lane 1. Four rounds of interleaves: bytes, pairs, quads, octets. */
TARGET static inline void transpose16(__m256i a[16]) {
    __m256i t[16], q[16], o[16];
#pragma GCC unroll 8
    for (int p = 0; p < 8; ++p) { /* t[p]: rows 2p, 2p+1 paired, columns 0..7; t[p + 8]: columns 8..15 */
        t[p] = _mm256_unpacklo_epi8(a[2 * p], a[2 * p + 1]);
        t[p + 8] = _mm256_unpackhi_epi8(a[2 * p], a[2 * p + 1]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) { /* q[4g + r]: rows 4r .. 4r+3, columns 4g .. 4g+3 */
        q[0 + r] = _mm256_unpacklo_epi16(t[2 * r], t[2 * r + 1]);
        q[4 + r] = _mm256_unpackhi_epi16(t[2 * r], t[2 * r + 1]);
        q[8 + r] = _mm256_unpacklo_epi16(t[8 + 2 * r], t[8 + 2 * r + 1]);
        q[12 + r] = _mm256_unpackhi_epi16(t[8 + 2 * r], t[8 + 2 * r + 1]);
    }
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) { /* o[4g + 2h + s]: rows 8h .. 8h+7, columns 4g + 2s, 4g + 2s + 1 */
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            o[4 * g + 2 * h + 0] = _mm256_unpacklo_epi32(q[4 * g + 2 * h], q[4 * g + 2 * h + 1]);
            o[4 * g + 2 * h + 1] = _mm256_unpackhi_epi32(q[4 * g + 2 * h], q[4 * g + 2 * h + 1]);
        }
    }
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) { /* column 4g + m: rows 0..7 from o[4g + s], rows 8..15 from o[4g + 2 + s] */
        a[4 * g + 0] = _mm256_unpacklo_epi64(o[4 * g + 0], o[4 * g + 2]);
        a[4 * g + 1] = _mm256_unpackhi_epi64(o[4 * g + 0], o[4 * g + 2]);
        a[4 * g + 2] = _mm256_unpacklo_epi64(o[4 * g + 1], o[4 * g + 3]);
        a[4 * g + 3] = _mm256_unpackhi_epi64(o[4 * g + 1], o[4 * g + 3]);
    }
}

/* planes[k · 16 + r] = rows[r][k] for k < bytes: 32 columns per transpose, then 16, then bytes. */
TARGET static void planes_fill(const uint8_t *const rows[LANES], size_t bytes, uint8_t *planes) {
    __m256i a[LANES];
    size_t k = 0;
    for (; k + 32 <= bytes; k += 32) {
#pragma GCC unroll 16
        for (int r = 0; r < LANES; ++r) a[r] = _mm256_loadu_si256((const __m256i *)(rows[r] + k));
        transpose16(a);
#pragma GCC unroll 16
        for (int m = 0; m < LANES; ++m) {
            _mm_storeu_si128((__m128i *)(planes + (k + m) * LANES), _mm256_castsi256_si128(a[m]));
            _mm_storeu_si128((__m128i *)(planes + (k + 16 + m) * LANES), _mm256_extracti128_si256(a[m], 1));
        }
    }
    if (k + 16 <= bytes) {
        for (int r = 0; r < LANES; ++r) a[r] = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(rows[r] + k)));
        transpose16(a);
        for (int m = 0; m < LANES; ++m) _mm_storeu_si128((__m128i *)(planes + (k + m) * LANES), _mm256_castsi256_si128(a[m]));
        k += 16;
    }
    for (; k < bytes; ++k)
        for (int r = 0; r < LANES; ++r) planes[k * LANES + r] = rows[r][k];
}

/* rows[r][k] = tile[k · 16 + r] for k < bytes and r < live: the inverse of planes_fill. */
TARGET static void tile_flush(const uint8_t *tile, size_t bytes, uint8_t *const rows[LANES], size_t live) {
    __m256i a[LANES];
    size_t k = 0;
    for (; k + 32 <= bytes; k += 32) {
#pragma GCC unroll 16
        for (int i = 0; i < LANES; ++i)
            a[i] = _mm256_inserti128_si256(
                _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(tile + (k + i) * LANES))),
                _mm_loadu_si128((const __m128i *)(tile + (k + 16 + i) * LANES)), 1);
        transpose16(a);
        if (live == LANES) {
#pragma GCC unroll 16
            for (int m = 0; m < LANES; ++m) _mm256_storeu_si256((__m256i *)(rows[m] + k), a[m]);
        } else
            for (size_t m = 0; m < live; ++m) _mm256_storeu_si256((__m256i *)(rows[m] + k), a[m]);
    }
    if (k + 16 <= bytes) {
        for (int i = 0; i < LANES; ++i)
            a[i] = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(tile + (k + i) * LANES)));
        transpose16(a);
        for (size_t m = 0; m < live; ++m) _mm_storeu_si128((__m128i *)(rows[m] + k), _mm256_castsi256_si128(a[m]));
        k += 16;
    }
    for (; k < bytes; ++k)
        for (size_t m = 0; m < live; ++m) rows[m][k] = tile[k * LANES + m];
}

/* 16 bytes = clip8 of the 16 sums in low (lanes 0..7) and high (lanes 8..15): the arithmetic
 * shift, then saturating packs to int16 (the shifted sums lie in [−512, 511]) and to unsigned
 * bytes, which clamps to [0, 255] exactly as Pillow's clip8. */
TARGET static inline __m128i clip16(__m256i low, __m256i high) {
    low = _mm256_srai_epi32(low, SHIFT);
    high = _mm256_srai_epi32(high, SHIFT);
    /* Lane order for the in-lane packs: [low 0..3, high 0..3] and [low 4..7, high 4..7]. */
    const __m256i first = _mm256_permute2x128_si256(low, high, 0x20), second = _mm256_permute2x128_si256(low, high, 0x31);
    const __m256i words = _mm256_packs_epi32(first, second); /* [low 0..7 | high 0..7] */
    const __m128i bytes = _mm_packus_epi16(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1));
    return bytes;
}

TARGET void uform__signal_pil_horizontal_rgb8_haswell(const uform__signal_pil_axis_t *columns, const uint8_t *source,
                                                      size_t stride, size_t rows, uint8_t *target,
                                                      size_t target_stride, uint8_t *scratch) {
    size_t lo, hi;
    uform__signal_pil_columns_span(columns, &lo, &hi);
    const size_t count = columns->count, taps = columns->taps;
    uint8_t *planes = scratch, *tile = scratch + (hi - lo) * 3 * LANES;
    for (size_t r0 = 0; r0 < rows; r0 += LANES) {
        const size_t live = rows - r0 < LANES ? rows - r0 : LANES;
        const uint8_t *in[LANES];
        uint8_t *out[LANES];
        /* Rows past the picture's last repeat its first row of the block; their sums are dropped. */
        for (size_t r = 0; r < LANES; ++r) {
            in[r] = source + (r0 + (r < live ? r : 0)) * stride + 3 * lo;
            out[r] = target + (r0 + (r < live ? r : 0)) * target_stride;
        }
        planes_fill(in, 3 * (hi - lo), planes);
        for (size_t x = 0; x < count; ++x) {
            const uint8_t *pixel = planes + (columns->first[x] - lo) * 3 * LANES;
            const int32_t *weight = columns->weights + x * taps;
            __m256i sums[6];
            for (int s = 0; s < 6; ++s) sums[s] = _mm256_set1_epi32(HALF);
            for (size_t j = 0; j < columns->size[x]; ++j, pixel += 3 * LANES) {
                const __m256i w = _mm256_set1_epi32(weight[j]);
#pragma GCC unroll 6
                for (int s = 0; s < 6; ++s) {
                    const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(pixel + 8 * s)));
                    sums[s] = _mm256_add_epi32(sums[s], _mm256_mullo_epi32(v, w));
                }
            }
#pragma GCC unroll 3
            for (int c = 0; c < 3; ++c)
                _mm_storeu_si128((__m128i *)(tile + (3 * x + c) * LANES), clip16(sums[2 * c], sums[2 * c + 1]));
        }
        tile_flush(tile, 3 * count, out, live);
    }
}

TARGET void uform__signal_pil_vertical_u8_haswell(const uint8_t *base, size_t stride, const int32_t *weights,
                                                  size_t taps, size_t length, uint8_t *target) {
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    size_t k = 0;
    for (; k + 32 <= length; k += 32) {
        __m256i sums[4];
        for (int s = 0; s < 4; ++s) sums[s] = _mm256_set1_epi32(HALF);
        const uint8_t *row = base + k;
        for (size_t j = 0; j < taps; ++j, row += stride) {
            const __m256i w = _mm256_set1_epi32(weights[j]);
#pragma GCC unroll 4
            for (int s = 0; s < 4; ++s) {
                const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(row + 8 * s)));
                sums[s] = _mm256_add_epi32(sums[s], _mm256_mullo_epi32(v, w));
            }
        }
        for (int s = 0; s < 4; ++s) sums[s] = _mm256_srai_epi32(sums[s], SHIFT);
        /* In-lane packs leave dwords [s0 0..3, s1 0..3, s2 0..3, s3 0..3 | s0 4..7, ...]; the
         * permutation puts each register's two halves together. */
        const __m256i words01 = _mm256_packs_epi32(sums[0], sums[1]), words23 = _mm256_packs_epi32(sums[2], sums[3]);
        const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(words01, words23), order);
        _mm256_storeu_si256((__m256i *)(target + k), bytes);
    }
    for (; k + 8 <= length; k += 8) {
        __m256i sum = _mm256_set1_epi32(HALF);
        const uint8_t *row = base + k;
        for (size_t j = 0; j < taps; ++j, row += stride)
            sum = _mm256_add_epi32(sum, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)row)),
                                                           _mm256_set1_epi32(weights[j])));
        sum = _mm256_srai_epi32(sum, SHIFT);
        const __m256i words = _mm256_packs_epi32(sum, sum);
        const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(words, words), order);
        _mm_storel_epi64((__m128i *)(target + k), _mm256_castsi256_si128(bytes));
    }
    for (; k < length; ++k) {
        int32_t sum = HALF;
        for (size_t j = 0; j < taps; ++j) sum += weights[j] * base[j * stride + k];
        const int32_t value = sum < 0 ? 0 : sum >> SHIFT;
        target[k] = (uint8_t)(value > 255 ? 255 : value);
    }
}
