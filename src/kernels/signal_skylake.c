/*
 * AVX-512 F horizontal pass of the antialiased resize (see signal.h): sixteen output pixels at a time,
 * each lane gathering its own source pixel and weight per tap. Lanes run past their own window
 * with the zero weights the table keeps up to `taps`, which adds exact zeros; multiplies and adds
 * stay separate (no FMA), so every sum is the serial loop's, bit for bit.
 *
 * Shapes: source one RGB8 row [columns->input, 3]; target [columns->count, 3] float.
 */
#include <immintrin.h>

#include "kernels/signal_x86.h"

__attribute__((target("avx512f"))) void uform__signal_resize_row_rgb8_skylake(const uform__signal_taps_t *columns,
                                                                          const uint8_t *source, float *target) {
    const size_t count = columns->count, taps = columns->taps, input = columns->input;
    size_t x = 0;
    /* A dword gather at byte 3p reads pixel p and the first byte of p + 1, so it may touch pixels
     * up to input − 2 only; indices must fit int32. Pixels past either limit go the serial way. */
    const int gatherable = input >= 2 && input < ((size_t)1 << 28) && count * taps < ((size_t)1 << 30);
    const __m512i byte_u32x16 = _mm512_set1_epi32(0xFF), three_i32x16 = _mm512_set1_epi32(3),
                  one_i32x16 = _mm512_set1_epi32(1), lanes_i32x16 = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (; gatherable && x + 16 <= count; x += 16) {
        size_t longest = 0, reach = 0;
        for (size_t l = 0; l < 16; ++l) {
            if (columns->size[x + l] > longest) longest = columns->size[x + l];
            if (columns->first[x + l] > reach) reach = columns->first[x + l];
        }
        if (reach + longest - 1 > input - 2) break; /* windows only move right: the rest is serial */
        int offsets[16];
        for (size_t l = 0; l < 16; ++l) offsets[l] = (int)(3 * columns->first[x + l]);
        __m512i offset_i32x16 = _mm512_loadu_si512(offsets);
        __m512i weight_i32x16 = _mm512_mullo_epi32(_mm512_add_epi32(lanes_i32x16, _mm512_set1_epi32((int)x)),
                                                  _mm512_set1_epi32((int)taps));
        __m512 red_f32x16 = _mm512_setzero_ps(), green_f32x16 = red_f32x16, blue_f32x16 = red_f32x16;
        for (size_t j = 0; j < longest; ++j) {
            const __m512i pixel_u32x16 = _mm512_i32gather_epi32(offset_i32x16, (const int *)source, 1);
            const __m512 w_f32x16 = _mm512_i32gather_ps(weight_i32x16, columns->weights, 4);
            const __m512 r_f32x16 = _mm512_cvtepi32_ps(_mm512_and_si512(pixel_u32x16, byte_u32x16));
            const __m512 g_f32x16 = _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(pixel_u32x16, 8), byte_u32x16));
            const __m512 b_f32x16 = _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(pixel_u32x16, 16), byte_u32x16));
            __m512 red_product_f32x16 = _mm512_mul_ps(r_f32x16, w_f32x16);
            __m512 green_product_f32x16 = _mm512_mul_ps(g_f32x16, w_f32x16);
            __m512 blue_product_f32x16 = _mm512_mul_ps(b_f32x16, w_f32x16);
            /* The products must round before the adds, as in the serial loop: an empty asm hides
             * them from the compiler, which would otherwise fuse mul + add into FMA (AVX-512 F
             * has it) and change the bits. */
            __asm__("" : "+v"(red_product_f32x16), "+v"(green_product_f32x16), "+v"(blue_product_f32x16));
            if (j == 0) {
                /* The serial loop starts from the first product, not from 0 + product. */
                red_f32x16 = red_product_f32x16;
                green_f32x16 = green_product_f32x16;
                blue_f32x16 = blue_product_f32x16;
            } else {
                red_f32x16 = _mm512_add_ps(red_f32x16, red_product_f32x16);
                green_f32x16 = _mm512_add_ps(green_f32x16, green_product_f32x16);
                blue_f32x16 = _mm512_add_ps(blue_f32x16, blue_product_f32x16);
            }
            offset_i32x16 = _mm512_add_epi32(offset_i32x16, three_i32x16);
            weight_i32x16 = _mm512_add_epi32(weight_i32x16, one_i32x16);
        }
        float red[16], green[16], blue[16];
        _mm512_storeu_ps(red, red_f32x16);
        _mm512_storeu_ps(green, green_f32x16);
        _mm512_storeu_ps(blue, blue_f32x16);
        for (size_t l = 0; l < 16; ++l) {
            target[3 * (x + l) + 0] = red[l];
            target[3 * (x + l) + 1] = green[l];
            target[3 * (x + l) + 2] = blue[l];
        }
    }
    uform__signal_resize_row_rgb8_serial(columns, x, source, target);
}
