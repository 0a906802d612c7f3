/*
 * AVX2 horizontal pass of the antialiased resize (see signal.h): eight output pixels at a time,
 * each lane gathering its own source pixel and weight per tap. Lanes run past their own window
 * with the zero weights the table keeps up to `taps`, which adds exact zeros; multiplies and adds
 * stay separate (no FMA), so every sum is the serial loop's, bit for bit.
 *
 * Shapes: source one RGB8 row [columns->input, 3]; target [columns->count, 3] float.
 */
#include <immintrin.h>

#include "kernels/signal_x86.h"

__attribute__((target("avx2"))) void uform__signal_resize_row_rgb8_haswell(const uform__signal_taps_t *columns,
                                                                          const uint8_t *source, float *target) {
    const size_t count = columns->count, taps = columns->taps, input = columns->input;
    size_t x = 0;
    /* A dword gather at byte 3p reads pixel p and the first byte of p + 1, so it may touch pixels
     * up to input − 2 only; indices must fit int32. Pixels past either limit go the serial way. */
    const int gatherable = input >= 2 && input < ((size_t)1 << 28) && count * taps < ((size_t)1 << 30);
    const __m256i byte_u32x8 = _mm256_set1_epi32(0xFF), three_i32x8 = _mm256_set1_epi32(3),
                  one_i32x8 = _mm256_set1_epi32(1), lanes_i32x8 = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (; gatherable && x + 8 <= count; x += 8) {
        size_t longest = 0, reach = 0;
        for (size_t l = 0; l < 8; ++l) {
            if (columns->size[x + l] > longest) longest = columns->size[x + l];
            if (columns->first[x + l] > reach) reach = columns->first[x + l];
        }
        if (reach + longest - 1 > input - 2) break; /* windows only move right: the rest is serial */
        __m256i offset_i32x8 = _mm256_setr_epi32(
            (int)(3 * columns->first[x + 0]), (int)(3 * columns->first[x + 1]), (int)(3 * columns->first[x + 2]),
            (int)(3 * columns->first[x + 3]), (int)(3 * columns->first[x + 4]), (int)(3 * columns->first[x + 5]),
            (int)(3 * columns->first[x + 6]), (int)(3 * columns->first[x + 7]));
        __m256i weight_i32x8 = _mm256_mullo_epi32(_mm256_add_epi32(lanes_i32x8, _mm256_set1_epi32((int)x)),
                                                  _mm256_set1_epi32((int)taps));
        __m256 red_f32x8 = _mm256_setzero_ps(), green_f32x8 = red_f32x8, blue_f32x8 = red_f32x8;
        for (size_t j = 0; j < longest; ++j) {
            const __m256i pixel_u32x8 = _mm256_i32gather_epi32((const int *)source, offset_i32x8, 1);
            const __m256 w_f32x8 = _mm256_i32gather_ps(columns->weights, weight_i32x8, 4);
            const __m256 r_f32x8 = _mm256_cvtepi32_ps(_mm256_and_si256(pixel_u32x8, byte_u32x8));
            const __m256 g_f32x8 = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(pixel_u32x8, 8), byte_u32x8));
            const __m256 b_f32x8 = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(pixel_u32x8, 16), byte_u32x8));
            __m256 red_product_f32x8 = _mm256_mul_ps(r_f32x8, w_f32x8);
            __m256 green_product_f32x8 = _mm256_mul_ps(g_f32x8, w_f32x8);
            __m256 blue_product_f32x8 = _mm256_mul_ps(b_f32x8, w_f32x8);
            /* The products must round before the adds, as in the serial loop: an empty asm hides
             * them from the compiler, which would otherwise fuse mul + add into FMA (AVX-512 F
             * has it) and change the bits. */
            __asm__("" : "+v"(red_product_f32x8), "+v"(green_product_f32x8), "+v"(blue_product_f32x8));
            if (j == 0) {
                /* The serial loop starts from the first product, not from 0 + product. */
                red_f32x8 = red_product_f32x8;
                green_f32x8 = green_product_f32x8;
                blue_f32x8 = blue_product_f32x8;
            } else {
                red_f32x8 = _mm256_add_ps(red_f32x8, red_product_f32x8);
                green_f32x8 = _mm256_add_ps(green_f32x8, green_product_f32x8);
                blue_f32x8 = _mm256_add_ps(blue_f32x8, blue_product_f32x8);
            }
            offset_i32x8 = _mm256_add_epi32(offset_i32x8, three_i32x8);
            weight_i32x8 = _mm256_add_epi32(weight_i32x8, one_i32x8);
        }
        float red[8], green[8], blue[8];
        _mm256_storeu_ps(red, red_f32x8);
        _mm256_storeu_ps(green, green_f32x8);
        _mm256_storeu_ps(blue, blue_f32x8);
        for (size_t l = 0; l < 8; ++l) {
            target[3 * (x + l) + 0] = red[l];
            target[3 * (x + l) + 1] = green[l];
            target[3 * (x + l) + 2] = blue[l];
        }
    }
    uform__signal_resize_row_rgb8_serial(columns, x, source, target);
}
