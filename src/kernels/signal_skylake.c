/*
 * AVX-512 F passes of the antialiased resize (see signal.h; the scheme is in signal_x86.h): the
 * horizontal pass runs 16 source rows side by side, one row per lane, the vertical one 16 floats
 * of an output row at a time. Multiplies and adds stay separate (no FMA) and every sum runs in
 * tap order from its first product, so each value is the serial loop's, bit for bit.
 *
 * Shapes: source rows [rows, stride bytes] RGB8; target [rows, columns->count, 3] float;
 * scratch planes [span, 3, 16] float.
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/signal_x86.h"

#define LANES 16

/* An empty asm hides a product from the compiler, which would otherwise fuse it with the add that
 * follows into an FMA (AVX-512 F has one) and change the bits. */
#define ROUNDED(v) __asm__("" : "+v"(v))

/* products[i] = x[i·LANES .. + LANES] · w for i < count (3 or 4, constant where inlined), each
 * product rounded: one tap of the sums that follow. */
__attribute__((target("avx512f"), always_inline)) static inline void products_f32x16(const float *x, size_t count, float w,
                                                                               __m512 products[4]) {
    const __m512 w_f32x16 = _mm512_set1_ps(w);
#pragma GCC unroll 4
    for (size_t i = 0; i < count; ++i) {
        products[i] = _mm512_mul_ps(_mm512_loadu_ps(x + i * LANES), w_f32x16);
        ROUNDED(products[i]);
    }
}

/* out[i] lane r = in[r] lane i: a 16 × 16 transpose in four rounds of in-lane and cross-lane shuffles. */
__attribute__((target("avx512f"), always_inline)) static inline void transpose16(const __m512 in[16], __m512 out[16]) {
    __m512 pairs[16], quads[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; i += 2) { /* rows i, i + 1 interleaved: columns (0, 1), (2, 3) of each 128-bit lane */
        pairs[i] = _mm512_unpacklo_ps(in[i], in[i + 1]);
        pairs[i + 1] = _mm512_unpackhi_ps(in[i], in[i + 1]);
    }
#pragma GCC unroll 16
    for (int g = 0; g < 16; g += 4) { /* rows g..g + 3 of column k, k + 4, k + 8, k + 12 in quads[g + k] */
        const __m512d lo0 = _mm512_castps_pd(pairs[g]), hi0 = _mm512_castps_pd(pairs[g + 1]),
                      lo1 = _mm512_castps_pd(pairs[g + 2]), hi1 = _mm512_castps_pd(pairs[g + 3]);
        quads[g + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo0, lo1));
        quads[g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo0, lo1));
        quads[g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(hi0, hi1));
        quads[g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(hi0, hi1));
    }
#pragma GCC unroll 16
    for (int k = 0; k < 4; ++k) { /* gather the four row groups of column k (+ 4, + 8, + 12) */
        const __m512 even_low = _mm512_shuffle_f32x4(quads[k], quads[4 + k], 0x88),
                     odd_low = _mm512_shuffle_f32x4(quads[k], quads[4 + k], 0xDD),
                     even_high = _mm512_shuffle_f32x4(quads[8 + k], quads[12 + k], 0x88),
                     odd_high = _mm512_shuffle_f32x4(quads[8 + k], quads[12 + k], 0xDD);
        out[k] = _mm512_shuffle_f32x4(even_low, even_high, 0x88);
        out[k + 8] = _mm512_shuffle_f32x4(even_low, even_high, 0xDD);
        out[k + 4] = _mm512_shuffle_f32x4(odd_low, odd_high, 0x88);
        out[k + 12] = _mm512_shuffle_f32x4(odd_low, odd_high, 0xDD);
    }
}

/* planes[k − 3·lo, lane] = source[lane's row, byte k] as float for k in [3·lo, 3·hi), i.e. pixel
 * p's channel c at (p − lo)·3 + c. 64 bytes of each live row at a time (masked: no read passes a
 * row's last byte, `row_bytes`; rows past `live_rows` hold 0) are transposed as 16 × 16 dwords, so
 * that register j holds bytes 4j .. 4j + 3 of every row; one byte shuffle per byte position then
 * zero-extends byte 4j + b of each lane, converted to float. A quarter of the shuffles of
 * transposing the converted floats, 16 values per lane at a time. */
__attribute__((target("avx512f,avx512bw"))) static void planes_fill(const uint8_t *block, size_t stride,
                                                                      size_t row_bytes, size_t live_rows, size_t lo,
                                                                      size_t hi, float *planes) {
    __m512 rows_u8x64[LANES], dwords_u8x64[LANES]; /* bytes, carried in float registers for transpose16 */
    /* Byte b of each dword, zero-extended: dword k of a 16-byte lane takes the lane's byte 4k + b,
     * and 0x80 clears its other three bytes. */
    __m512i pick_u8x64[4];
    for (int b = 0; b < 4; ++b)
        pick_u8x64[b] = _mm512_set4_epi32((int)(0x80808000u | (12u + b)), (int)(0x80808000u | (8u + b)),
                                          (int)(0x80808000u | (4u + b)), (int)(0x80808000u | b));
    for (size_t r = live_rows; r < LANES; ++r) rows_u8x64[r] = _mm512_setzero_ps();
    for (size_t k = 3 * lo; k < 3 * hi; k += 4 * LANES) {
        const size_t n = 3 * hi - k < 4 * LANES ? 3 * hi - k : 4 * LANES;
        if (live_rows == LANES && k + 4 * LANES <= row_bytes) { /* the usual block, unrolled */
#pragma GCC unroll 16
            for (size_t r = 0; r < LANES; ++r) rows_u8x64[r] = _mm512_loadu_ps(block + r * stride + k);
        } else {
            const size_t readable = row_bytes - k < 4 * LANES ? row_bytes - k : 4 * LANES;
            const __mmask64 kept = readable == 64 ? ~(__mmask64)0 : (((__mmask64)1 << readable) - 1);
            for (size_t r = 0; r < live_rows; ++r)
                rows_u8x64[r] = _mm512_castsi512_ps(_mm512_maskz_loadu_epi8(kept, block + r * stride + k));
        }
        transpose16(rows_u8x64, dwords_u8x64);
        float *plane = planes + (k - 3 * lo) * LANES;
        if (n == 4 * LANES) {
#pragma GCC unroll 16
            for (size_t j = 0; j < LANES; ++j)
#pragma GCC unroll 4
                for (size_t b = 0; b < 4; ++b)
                    _mm512_storeu_ps(plane + (4 * j + b) * LANES,
                                     _mm512_cvtepi32_ps(_mm512_shuffle_epi8(_mm512_castps_si512(dwords_u8x64[j]), pick_u8x64[b])));
        } else {
            for (size_t i = 0; i < n; ++i)
                _mm512_storeu_ps(plane + i * LANES,
                                 _mm512_cvtepi32_ps(_mm512_shuffle_epi8(_mm512_castps_si512(dwords_u8x64[i / 4]), pick_u8x64[i % 4])));
        }
    }
}

/* out[r, i] = tile[i] lane r for r < rows, i < values (out rows `width` floats apart). */
__attribute__((target("avx512f"), always_inline)) static inline void tile_flush(const __m512 tile[LANES], size_t values,
                                                                                size_t rows, float *out, size_t width) {
    __m512 rows_f32x16[LANES];
    transpose16(tile, rows_f32x16);
    if (values == LANES && rows == LANES) {
#pragma GCC unroll 16
        for (size_t r = 0; r < LANES; ++r) _mm512_storeu_ps(out + r * width, rows_f32x16[r]);
        return;
    }
    const __mmask16 kept = values >= LANES ? (__mmask16)0xFFFF : (__mmask16)((1u << values) - 1);
    for (size_t r = 0; r < rows; ++r) _mm512_mask_storeu_ps(out + r * width, kept, rows_f32x16[r]);
}

__attribute__((target("avx512f"))) void uform__signal_resize_rows_rgb8_skylake(const uform__signal_taps_t *columns,
                                                                           const uint8_t *source, size_t stride,
                                                                           size_t rows, float *target, float *scratch) {
    const size_t count = columns->count, taps = columns->taps, width = 3 * count, row_bytes = 3 * columns->input;
    float *planes = scratch; /* [span, 3, 16] */
    __m512 tile[LANES + 2];  /* sums of output values, one row per lane */
    for (size_t r0 = 0; r0 < rows; r0 += LANES) {
        const size_t live_rows = rows - r0 < LANES ? rows - r0 : LANES;
        const uint8_t *block = source + r0 * stride;
        float *out = target + r0 * width;
        size_t filled = 0, flushed = 0; /* sums waiting in the tile; output values already stored */
        for (size_t x0 = 0; x0 < count;) {
            size_t lo, hi;
            const size_t x1 = uform__signal_resize_run(columns, x0, &lo, &hi);
            planes_fill(block, stride, row_bytes, live_rows, lo, hi, planes);
            for (size_t x = x0; x < x1; ++x) {
                const float *plane = planes + (columns->first[x] - lo) * 3 * LANES, *weight = columns->weights + x * taps;
                __m512 sums[4], products[4]; /* red, green, blue */
                products_f32x16(plane, 3, weight[0], sums);
                for (size_t j = 1; j < columns->size[x]; ++j) {
                    products_f32x16(plane + j * 3 * LANES, 3, weight[j], products);
#pragma GCC unroll 3
                    for (size_t c = 0; c < 3; ++c) sums[c] = _mm512_add_ps(sums[c], products[c]);
                }
#pragma GCC unroll 3
                for (size_t c = 0; c < 3; ++c) tile[filled + c] = sums[c];
                filled += 3;
                if (filled >= LANES) {
                    tile_flush(tile, LANES, live_rows, out + flushed, width);
                    flushed += LANES;
                    filled -= LANES;
                    for (size_t k = 0; k < filled; ++k) tile[k] = tile[LANES + k];
                }
            }
            x0 = x1;
        }
        if (filled) {
            for (size_t k = filled; k < LANES; ++k) tile[k] = _mm512_setzero_ps();
            tile_flush(tile, filled, live_rows, out + flushed, width);
        }
    }
}

/* target[k] = Σ_j weights[j] · rows[j][k] in j order: 64 floats at a time, then 16 under a mask. */
__attribute__((target("avx512f"))) void uform__signal_resize_column_f32_skylake(const float *const *rows,
                                                                            const float *weights, size_t size,
                                                                            size_t width, float *target) {
    size_t k = 0;
    for (; k + 4 * LANES <= width; k += 4 * LANES) {
        __m512 sums[4], products[4];
        products_f32x16(rows[0] + k, 4, weights[0], sums);
        for (size_t j = 1; j < size; ++j) {
            products_f32x16(rows[j] + k, 4, weights[j], products);
#pragma GCC unroll 4
            for (size_t i = 0; i < 4; ++i) sums[i] = _mm512_add_ps(sums[i], products[i]);
        }
#pragma GCC unroll 4
        for (size_t i = 0; i < 4; ++i) _mm512_storeu_ps(target + k + i * LANES, sums[i]);
    }
    for (; k < width; k += LANES) {
        const __mmask16 kept = width - k >= LANES ? (__mmask16)0xFFFF : (__mmask16)((1u << (width - k)) - 1);
        __m512 sum = _mm512_mul_ps(_mm512_maskz_loadu_ps(kept, rows[0] + k), _mm512_set1_ps(weights[0]));
        ROUNDED(sum);
        for (size_t j = 1; j < size; ++j) {
            __m512 product = _mm512_mul_ps(_mm512_maskz_loadu_ps(kept, rows[j] + k), _mm512_set1_ps(weights[j]));
            ROUNDED(product);
            sum = _mm512_add_ps(sum, product);
        }
        _mm512_mask_storeu_ps(target + k, kept, sum);
    }
}

/* 16 pixels at a time: two two-source permutes pick a channel out of 48 interleaved floats
 * (lane l takes float 3l + c: from the first 32 by index, then the rest from the third vector),
 * then / 255, − mean, / std as the serial loop does. The last pixels go the serial way. */
__attribute__((target("avx512f"))) void uform__signal_normalise_rgb_f32_skylake(const float *row, size_t width,
                                                                            const float *mean, const float *std,
                                                                            float *planes, size_t plane_stride) {
    int first[3][LANES], second[3][LANES];
    for (int c = 0; c < 3; ++c)
        for (int l = 0; l < LANES; ++l) {
            const int s = 3 * l + c;
            first[c][l] = s < 2 * LANES ? s : 0;
            second[c][l] = s < 2 * LANES ? l : LANES + s - 2 * LANES;
        }
    __m512i first_i32x16[3], second_i32x16[3];
    __m512 mean_f32x16[3], std_f32x16[3];
    for (int c = 0; c < 3; ++c) {
        first_i32x16[c] = _mm512_loadu_si512(first[c]);
        second_i32x16[c] = _mm512_loadu_si512(second[c]);
        mean_f32x16[c] = _mm512_set1_ps(mean[c]);
        std_f32x16[c] = _mm512_set1_ps(std[c]);
    }
    const __m512 levels_f32x16 = _mm512_set1_ps(255.0f);
    size_t x = 0;
    for (; x + LANES <= width; x += LANES) {
        const __m512 a_f32x16 = _mm512_loadu_ps(row + 3 * x), b_f32x16 = _mm512_loadu_ps(row + 3 * x + LANES),
                     c_f32x16 = _mm512_loadu_ps(row + 3 * x + 2 * LANES);
        for (int c = 0; c < 3; ++c) {
            const __m512 two_f32x16 = _mm512_permutex2var_ps(a_f32x16, first_i32x16[c], b_f32x16);
            const __m512 channel_f32x16 = _mm512_permutex2var_ps(two_f32x16, second_i32x16[c], c_f32x16);
            const __m512 unit_f32x16 = _mm512_div_ps(channel_f32x16, levels_f32x16);
            _mm512_storeu_ps(planes + c * plane_stride + x,
                             _mm512_div_ps(_mm512_sub_ps(unit_f32x16, mean_f32x16[c]), std_f32x16[c]));
        }
    }
    uform__signal_normalise_rgb_f32_serial(row, x, width, mean, std, planes, plane_stride);
}
