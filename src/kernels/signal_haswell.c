/*
 * AVX2 passes of the antialiased resize (see signal.h; the scheme is in signal_x86.h): the
 * horizontal pass runs 8 source rows side by side, one row per lane, the vertical one 8 floats of
 * an output row at a time. Multiplies and adds stay separate (no FMA) and every sum runs in tap
 * order from its first product, so each value is the serial loop's, bit for bit.
 *
 * Shapes: source rows [rows, stride bytes] RGB8; target [rows, columns->count, 3] float;
 * scratch planes [span, 3, 8] float.
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/signal_x86.h"

#define LANES 8

/* An empty asm hides a product from the compiler, which would otherwise fuse it with the add that
 * follows into an FMA where the CPU has one and change the bits. */
#define ROUNDED(v) __asm__("" : "+x"(v))

/* products[i] = x[i·LANES .. + LANES] · w for i < count (3 or 4, constant where inlined), each
 * product rounded: one tap of the sums that follow. */
__attribute__((target("avx2"), always_inline)) static inline void products_f32x8(const float *x, size_t count, float w,
                                                                               __m256 products[4]) {
    const __m256 w_f32x8 = _mm256_set1_ps(w);
#pragma GCC unroll 4
    for (size_t i = 0; i < count; ++i) {
        products[i] = _mm256_mul_ps(_mm256_loadu_ps(x + i * LANES), w_f32x8);
        ROUNDED(products[i]);
    }
}

/* out[i] lane r = in[r] lane i: an 8 × 8 transpose in three rounds of shuffles. */
__attribute__((target("avx2"), always_inline)) static inline void transpose8(const __m256 in[8], __m256 out[8]) {
    __m256 pairs[8], quads[8];
#pragma GCC unroll 16
    for (int i = 0; i < 8; i += 2) { /* rows i, i + 1 interleaved: columns (0, 1), (2, 3) of each 128-bit lane */
        pairs[i] = _mm256_unpacklo_ps(in[i], in[i + 1]);
        pairs[i + 1] = _mm256_unpackhi_ps(in[i], in[i + 1]);
    }
#pragma GCC unroll 16
    for (int g = 0; g < 8; g += 4) { /* rows g..g + 3 of column k and k + 4 in quads[g + k] */
        quads[g + 0] = _mm256_shuffle_ps(pairs[g], pairs[g + 2], 0x44);
        quads[g + 1] = _mm256_shuffle_ps(pairs[g], pairs[g + 2], 0xEE);
        quads[g + 2] = _mm256_shuffle_ps(pairs[g + 1], pairs[g + 3], 0x44);
        quads[g + 3] = _mm256_shuffle_ps(pairs[g + 1], pairs[g + 3], 0xEE);
    }
#pragma GCC unroll 16
    for (int k = 0; k < 4; ++k) {
        out[k] = _mm256_permute2f128_ps(quads[k], quads[4 + k], 0x20);
        out[k + 4] = _mm256_permute2f128_ps(quads[k], quads[4 + k], 0x31);
    }
}

/* planes[k − 3·lo, lane] = source[lane's row, byte k] as float for k in [3·lo, 3·hi), i.e. pixel
 * p's channel c at (p − lo)·3 + c. 32 bytes of each live row at a time (a row's last bytes through
 * a zeroed copy: no read passes `row_bytes`; rows past `live_rows` hold 0) are transposed as 8 × 8
 * dwords, so that register j holds bytes 4j .. 4j + 3 of every row; one byte shuffle per byte
 * position then zero-extends byte 4j + b of each lane, converted to float. A quarter of the
 * shuffles of transposing the converted floats. */
__attribute__((target("avx2"))) static void planes_fill(const uint8_t *block, size_t stride, size_t row_bytes,
                                                        size_t live_rows, size_t lo, size_t hi, float *planes) {
    __m256 rows_u8x32[LANES], dwords_u8x32[LANES]; /* bytes, carried in float registers for transpose8 */
    /* Byte b of each dword, zero-extended: dword k of a 16-byte lane takes the lane's byte 4k + b,
     * and 0x80 clears its other three bytes. */
    __m256i pick_u8x32[4];
    for (int b = 0; b < 4; ++b) {
        const __m128i lane_u8x16 = _mm_setr_epi32((int)(0x80808000u | b), (int)(0x80808000u | (4u + b)),
                                                  (int)(0x80808000u | (8u + b)), (int)(0x80808000u | (12u + b)));
        pick_u8x32[b] = _mm256_broadcastsi128_si256(lane_u8x16);
    }
    for (size_t r = live_rows; r < LANES; ++r) rows_u8x32[r] = _mm256_setzero_ps();
    for (size_t k = 3 * lo; k < 3 * hi; k += 4 * LANES) {
        const size_t n = 3 * hi - k < 4 * LANES ? 3 * hi - k : 4 * LANES;
        if (live_rows == LANES && k + 4 * LANES <= row_bytes) { /* the usual block, unrolled */
#pragma GCC unroll 8
            for (size_t r = 0; r < LANES; ++r) rows_u8x32[r] = _mm256_loadu_ps((const float *)(block + r * stride + k));
        } else {
            for (size_t r = 0; r < live_rows; ++r) {
                const uint8_t *bytes = block + r * stride + k;
                if (k + 4 * LANES <= row_bytes) {
                    rows_u8x32[r] = _mm256_loadu_ps((const float *)bytes);
                } else {
                    _Alignas(32) uint8_t tail[4 * LANES] = {0};
                    memcpy(tail, bytes, row_bytes - k);
                    rows_u8x32[r] = _mm256_load_ps((const float *)tail);
                }
            }
        }
        transpose8(rows_u8x32, dwords_u8x32);
        float *plane = planes + (k - 3 * lo) * LANES;
        if (n == 4 * LANES) {
#pragma GCC unroll 8
            for (size_t j = 0; j < LANES; ++j)
#pragma GCC unroll 4
                for (size_t b = 0; b < 4; ++b)
                    _mm256_storeu_ps(plane + (4 * j + b) * LANES,
                                     _mm256_cvtepi32_ps(_mm256_shuffle_epi8(_mm256_castps_si256(dwords_u8x32[j]), pick_u8x32[b])));
        } else {
            for (size_t i = 0; i < n; ++i)
                _mm256_storeu_ps(plane + i * LANES,
                                 _mm256_cvtepi32_ps(_mm256_shuffle_epi8(_mm256_castps_si256(dwords_u8x32[i / 4]), pick_u8x32[i % 4])));
        }
    }
}

/* A mask of the first `n` <= 8 lanes. */
__attribute__((target("avx2"))) static __m256i first_lanes(size_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* out[r, i] = tile[i] lane r for r < rows, i < values (out rows `width` floats apart). */
__attribute__((target("avx2"), always_inline)) static inline void tile_flush(const __m256 tile[LANES], size_t values,
                                                                             size_t rows, float *out, size_t width) {
    __m256 rows_f32x8[LANES];
    transpose8(tile, rows_f32x8);
    if (values == LANES && rows == LANES) {
#pragma GCC unroll 16
        for (size_t r = 0; r < LANES; ++r) _mm256_storeu_ps(out + r * width, rows_f32x8[r]);
        return;
    }
    const __m256i kept = first_lanes(values);
    for (size_t r = 0; r < rows; ++r) _mm256_maskstore_ps(out + r * width, kept, rows_f32x8[r]);
}

__attribute__((target("avx2"))) void uform__signal_resize_rows_rgb8_haswell(const uform__signal_taps_t *columns,
                                                                        const uint8_t *source, size_t stride,
                                                                        size_t rows, float *target, float *scratch) {
    const size_t count = columns->count, taps = columns->taps, width = 3 * count, row_bytes = 3 * columns->input;
    float *planes = scratch; /* [span, 3, 8] */
    __m256 tile[LANES + 2];  /* sums of output values, one row per lane */
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
                __m256 sums[4], products[4]; /* red, green, blue */
                products_f32x8(plane, 3, weight[0], sums);
                for (size_t j = 1; j < columns->size[x]; ++j) {
                    products_f32x8(plane + j * 3 * LANES, 3, weight[j], products);
#pragma GCC unroll 3
                    for (size_t c = 0; c < 3; ++c) sums[c] = _mm256_add_ps(sums[c], products[c]);
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
            for (size_t k = filled; k < LANES; ++k) tile[k] = _mm256_setzero_ps();
            tile_flush(tile, filled, live_rows, out + flushed, width);
        }
    }
}

/* target[k] = Σ_j weights[j] · rows[j][k] in j order: 32 floats at a time, then 8 under a mask. */
__attribute__((target("avx2"))) void uform__signal_resize_column_f32_haswell(const float *const *rows,
                                                                         const float *weights, size_t size,
                                                                         size_t width, float *target) {
    size_t k = 0;
    for (; k + 4 * LANES <= width; k += 4 * LANES) {
        __m256 sums[4], products[4];
        products_f32x8(rows[0] + k, 4, weights[0], sums);
        for (size_t j = 1; j < size; ++j) {
            products_f32x8(rows[j] + k, 4, weights[j], products);
#pragma GCC unroll 4
            for (size_t i = 0; i < 4; ++i) sums[i] = _mm256_add_ps(sums[i], products[i]);
        }
#pragma GCC unroll 4
        for (size_t i = 0; i < 4; ++i) _mm256_storeu_ps(target + k + i * LANES, sums[i]);
    }
    for (; k < width; k += LANES) {
        const __m256i kept = first_lanes(width - k < LANES ? width - k : LANES);
        __m256 sum = _mm256_mul_ps(_mm256_maskload_ps(rows[0] + k, kept), _mm256_set1_ps(weights[0]));
        ROUNDED(sum);
        for (size_t j = 1; j < size; ++j) {
            __m256 product = _mm256_mul_ps(_mm256_maskload_ps(rows[j] + k, kept), _mm256_set1_ps(weights[j]));
            ROUNDED(product);
            sum = _mm256_add_ps(sum, product);
        }
        _mm256_maskstore_ps(target + k, kept, sum);
    }
}

/* 8 pixels at a time: lane l takes float 3l + c of 24 interleaved ones; each of the three vectors
 * is permuted so that its floats land in the lanes that want them, and two blends keep the right
 * one per lane. Then / 255, − mean, / std as the serial loop does. The last pixels go the serial
 * way. */
__attribute__((target("avx2"))) void uform__signal_normalise_rgb_f32_haswell(const float *row, size_t width,
                                                                         const float *mean, const float *std,
                                                                         float *planes, size_t plane_stride) {
    int index[3][LANES], from_b[3][LANES], from_c[3][LANES];
    for (int c = 0; c < 3; ++c)
        for (int l = 0; l < LANES; ++l) {
            const int s = 3 * l + c;
            index[c][l] = s % LANES;
            from_b[c][l] = s / LANES == 1 ? -1 : 0;
            from_c[c][l] = s / LANES == 2 ? -1 : 0;
        }
    __m256i index_i32x8[3];
    __m256 from_b_f32x8[3], from_c_f32x8[3], mean_f32x8[3], std_f32x8[3];
    for (int c = 0; c < 3; ++c) {
        index_i32x8[c] = _mm256_loadu_si256((const __m256i *)index[c]);
        from_b_f32x8[c] = _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i *)from_b[c]));
        from_c_f32x8[c] = _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i *)from_c[c]));
        mean_f32x8[c] = _mm256_set1_ps(mean[c]);
        std_f32x8[c] = _mm256_set1_ps(std[c]);
    }
    const __m256 levels_f32x8 = _mm256_set1_ps(255.0f);
    size_t x = 0;
    for (; x + LANES <= width; x += LANES) {
        const __m256 a_f32x8 = _mm256_loadu_ps(row + 3 * x), b_f32x8 = _mm256_loadu_ps(row + 3 * x + LANES),
                     c_f32x8 = _mm256_loadu_ps(row + 3 * x + 2 * LANES);
        for (int c = 0; c < 3; ++c) {
            __m256 channel_f32x8 = _mm256_permutevar8x32_ps(a_f32x8, index_i32x8[c]);
            channel_f32x8 = _mm256_blendv_ps(channel_f32x8, _mm256_permutevar8x32_ps(b_f32x8, index_i32x8[c]), from_b_f32x8[c]);
            channel_f32x8 = _mm256_blendv_ps(channel_f32x8, _mm256_permutevar8x32_ps(c_f32x8, index_i32x8[c]), from_c_f32x8[c]);
            const __m256 unit_f32x8 = _mm256_div_ps(channel_f32x8, levels_f32x8);
            _mm256_storeu_ps(planes + c * plane_stride + x,
                             _mm256_div_ps(_mm256_sub_ps(unit_f32x8, mean_f32x8[c]), std_f32x8[c]));
        }
    }
    uform__signal_normalise_rgb_f32_serial(row, x, width, mean, std, planes, plane_stride);
}
