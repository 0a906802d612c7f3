/*
 * AVX-512 passes of Pillow's resize (signal_pil.h; the scheme is in signal_pil_x86.h): the
 * horizontal pass runs 16 source rows side by side, one row per lane, the vertical one 64 bytes
 * of an output row at a time. Sums are 32-bit integers (vpmulld, vpaddd), exact in any order, so
 * every byte equals the serial pass's. Partial blocks use byte masks, so nothing is read past
 * a row's last byte.
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
#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))

/* The first n bits set (n <= 64). */
static inline __mmask64 first_bits64(size_t n) { return n >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << n) - 1); }
static inline __mmask16 first_bits16(size_t n) { return (__mmask16)(n >= 16 ? 0xFFFFu : ((1u << n) - 1)); }

/* A 16 × 16 byte transpose in each 128-bit lane: on entry a[i] holds "row" i (four blocks of 16
 * bytes side by side); on exit a[m] holds byte m of every row, column m of block L in lane L.
 * Four rounds of interleaves: bytes, pairs, quads, octets. */
TARGET static inline void transpose16(__m512i a[16]) {
    __m512i t[16], q[16], o[16];
#pragma GCC unroll 8
    for (int p = 0; p < 8; ++p) { /* t[p]: rows 2p, 2p+1 paired, columns 0..7; t[p + 8]: columns 8..15 */
        t[p] = _mm512_unpacklo_epi8(a[2 * p], a[2 * p + 1]);
        t[p + 8] = _mm512_unpackhi_epi8(a[2 * p], a[2 * p + 1]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) { /* q[4g + r]: rows 4r .. 4r+3, columns 4g .. 4g+3 */
        q[0 + r] = _mm512_unpacklo_epi16(t[2 * r], t[2 * r + 1]);
        q[4 + r] = _mm512_unpackhi_epi16(t[2 * r], t[2 * r + 1]);
        q[8 + r] = _mm512_unpacklo_epi16(t[8 + 2 * r], t[8 + 2 * r + 1]);
        q[12 + r] = _mm512_unpackhi_epi16(t[8 + 2 * r], t[8 + 2 * r + 1]);
    }
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) { /* o[4g + 2h + s]: rows 8h .. 8h+7, columns 4g + 2s, 4g + 2s + 1 */
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            o[4 * g + 2 * h + 0] = _mm512_unpacklo_epi32(q[4 * g + 2 * h], q[4 * g + 2 * h + 1]);
            o[4 * g + 2 * h + 1] = _mm512_unpackhi_epi32(q[4 * g + 2 * h], q[4 * g + 2 * h + 1]);
        }
    }
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) { /* column 4g + m: rows 0..7 from o[4g + s], rows 8..15 from o[4g + 2 + s] */
        a[4 * g + 0] = _mm512_unpacklo_epi64(o[4 * g + 0], o[4 * g + 2]);
        a[4 * g + 1] = _mm512_unpackhi_epi64(o[4 * g + 0], o[4 * g + 2]);
        a[4 * g + 2] = _mm512_unpacklo_epi64(o[4 * g + 1], o[4 * g + 3]);
        a[4 * g + 3] = _mm512_unpackhi_epi64(o[4 * g + 1], o[4 * g + 3]);
    }
}

/* planes[k · 16 + r] = rows[r][k] for k < bytes: 64 columns per transpose, the last ones masked. */
TARGET static void planes_fill(const uint8_t *const rows[LANES], size_t bytes, uint8_t *planes) {
    __m512i a[LANES];
    for (size_t k = 0; k < bytes; k += 64) {
        const size_t n = bytes - k < 64 ? bytes - k : 64;
        if (n == 64) {
#pragma GCC unroll 16
            for (int r = 0; r < LANES; ++r) a[r] = _mm512_loadu_si512(rows[r] + k);
        } else {
            const __mmask64 kept = first_bits64(n);
            for (int r = 0; r < LANES; ++r) a[r] = _mm512_maskz_loadu_epi8(kept, rows[r] + k);
        }
        transpose16(a);
        if (n == 64) {
#pragma GCC unroll 16
            for (int m = 0; m < LANES; ++m) {
                _mm_storeu_si128((__m128i *)(planes + (k + m) * LANES), _mm512_extracti32x4_epi32(a[m], 0));
                _mm_storeu_si128((__m128i *)(planes + (k + 16 + m) * LANES), _mm512_extracti32x4_epi32(a[m], 1));
                _mm_storeu_si128((__m128i *)(planes + (k + 32 + m) * LANES), _mm512_extracti32x4_epi32(a[m], 2));
                _mm_storeu_si128((__m128i *)(planes + (k + 48 + m) * LANES), _mm512_extracti32x4_epi32(a[m], 3));
            }
        } else {
            /* The last, partial block: columns [k, k + n) only. */
            for (int m = 0; m < LANES; ++m) {
                uint8_t whole[64];
                _mm512_storeu_si512(whole, a[m]);
                for (size_t lane = 0; lane < 4; ++lane)
                    if (16 * lane + (size_t)m < n) memcpy(planes + (k + 16 * lane + (size_t)m) * LANES, whole + 16 * lane, 16);
            }
        }
    }
}

/* rows[r][k] = tile[k · 16 + r] for k < bytes and r < live: the inverse of planes_fill. Columns
 * past `bytes` in a last block read column 0 instead, and their bytes are not stored. */
TARGET static void tile_flush(const uint8_t *tile, size_t bytes, uint8_t *const rows[LANES], size_t live) {
    __m512i a[LANES];
    for (size_t k = 0; k < bytes; k += 64) {
        const size_t n = bytes - k < 64 ? bytes - k : 64;
#pragma GCC unroll 16
        for (int i = 0; i < LANES; ++i) {
            size_t column[4];
            for (int lane = 0; lane < 4; ++lane) {
                column[lane] = k + 16 * (size_t)lane + (size_t)i;
                if (column[lane] >= bytes) column[lane] = 0;
            }
            __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(tile + column[0] * LANES)));
            v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(tile + column[1] * LANES)), 1);
            v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(tile + column[2] * LANES)), 2);
            a[i] = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(tile + column[3] * LANES)), 3);
        }
        transpose16(a);
        if (n == 64 && live == LANES) {
#pragma GCC unroll 16
            for (int m = 0; m < LANES; ++m) _mm512_storeu_si512(rows[m] + k, a[m]);
        } else {
            const __mmask64 kept = first_bits64(n);
            for (size_t m = 0; m < live; ++m) _mm512_mask_storeu_epi8(rows[m] + k, kept, a[m]);
        }
    }
}

/* clip8 of 16 sums: the arithmetic shift, negative values to 0, then vpmovusdb saturates above 255. */
TARGET static inline __m128i clip16(__m512i sum) {
    return _mm512_cvtusepi32_epi8(_mm512_max_epi32(_mm512_srai_epi32(sum, SHIFT), _mm512_setzero_si512()));
}

TARGET void uform__signal_pil_horizontal_rgb8_skylake(const uform__signal_pil_axis_t *columns, const uint8_t *source,
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
            __m512i sums[3];
            for (int c = 0; c < 3; ++c) sums[c] = _mm512_set1_epi32(HALF);
            for (size_t j = 0; j < columns->size[x]; ++j, pixel += 3 * LANES) {
                const __m512i w = _mm512_set1_epi32(weight[j]);
#pragma GCC unroll 3
                for (int c = 0; c < 3; ++c) {
                    const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(pixel + LANES * c)));
                    sums[c] = _mm512_add_epi32(sums[c], _mm512_mullo_epi32(v, w));
                }
            }
#pragma GCC unroll 3
            for (int c = 0; c < 3; ++c) _mm_storeu_si128((__m128i *)(tile + (3 * x + c) * LANES), clip16(sums[c]));
        }
        tile_flush(tile, 3 * count, out, live);
    }
}

TARGET void uform__signal_pil_vertical_u8_skylake(const uint8_t *base, size_t stride, const int32_t *weights,
                                                  size_t taps, size_t length, uint8_t *target) {
    size_t k = 0;
    for (; k + 64 <= length; k += 64) {
        __m512i sums[4];
        for (int s = 0; s < 4; ++s) sums[s] = _mm512_set1_epi32(HALF);
        const uint8_t *row = base + k;
        for (size_t j = 0; j < taps; ++j, row += stride) {
            const __m512i w = _mm512_set1_epi32(weights[j]);
#pragma GCC unroll 4
            for (int s = 0; s < 4; ++s) {
                const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(row + 16 * s)));
                sums[s] = _mm512_add_epi32(sums[s], _mm512_mullo_epi32(v, w));
            }
        }
#pragma GCC unroll 4
        for (int s = 0; s < 4; ++s) _mm_storeu_si128((__m128i *)(target + k + 16 * s), clip16(sums[s]));
    }
    if (k < length) { /* the last 1 .. 63 bytes, masked */
        const size_t n = length - k, vectors = (n + 15) / 16;
        __m512i sums[4];
        __mmask16 kept[4];
        for (size_t s = 0; s < vectors; ++s) {
            sums[s] = _mm512_set1_epi32(HALF);
            kept[s] = first_bits16(n - 16 * s);
        }
        const uint8_t *row = base + k;
        for (size_t j = 0; j < taps; ++j, row += stride) {
            const __m512i w = _mm512_set1_epi32(weights[j]);
            for (size_t s = 0; s < vectors; ++s) {
                const __m512i v = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(kept[s], row + 16 * s));
                sums[s] = _mm512_add_epi32(sums[s], _mm512_mullo_epi32(v, w));
            }
        }
        for (size_t s = 0; s < vectors; ++s)
            _mm_mask_storeu_epi8(target + k + 16 * s, kept[s], clip16(sums[s]));
    }
}
