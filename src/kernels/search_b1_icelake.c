/*
 * Hamming distances between packed sign bits with VPOPCNTQ (ICELAKE's table; GENOA and later reuse
 * both kernels). Distances are exact integers, so the order of the sums does not matter here.
 *
 *   hamming_b1         every distance stored: rows of exactly 32 bytes (256 dimensions, the common
 *                      width) eight per step, others one at a time (one 256-bit group up to 32
 *                      bytes, 64-byte chunks beyond).
 *   hamming_b1_within  one bit per row, distance ≤ limit: rows of 32 bytes sixteen per step with
 *                      the sixteen distances packed into one register and compared at once (below);
 *                      others one at a time.
 */
#include <immintrin.h>

#include "kernels/search.h"
#include "kernels/search_x86.h"

#define ICELAKE_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vpopcntdq")))

ICELAKE_TARGET static inline __mmask64 mask64(size_t count) {
    return count >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << count) - 1);
}

/* popcount(row XOR query) of one row of `bytes` bytes, the ragged end through zero-masked loads. */
ICELAKE_TARGET static inline uint32_t hamming_row(const uint8_t *row, const uint8_t *query, size_t bytes) {
    if (bytes <= 32) {
        const __mmask32 mask = (__mmask32)mask64(bytes);
        const __m256i counts_u64x4 =
            _mm256_popcnt_epi64(_mm256_xor_si256(_mm256_maskz_loadu_epi8(mask, row), _mm256_maskz_loadu_epi8(mask, query)));
        const __m128i pair_u64x2 = _mm_add_epi64(_mm256_castsi256_si128(counts_u64x4), _mm256_extracti128_si256(counts_u64x4, 1));
        return (uint32_t)(_mm_cvtsi128_si64(pair_u64x2) + _mm_extract_epi64(pair_u64x2, 1));
    }
    __m512i count_u64x8 = _mm512_setzero_si512();
    for (size_t c = 0; c < bytes; c += 64) {
        const __mmask64 mask = mask64(bytes - c);
        const __m512i difference = _mm512_xor_si512(_mm512_maskz_loadu_epi8(mask, row + c), _mm512_maskz_loadu_epi8(mask, query + c));
        count_u64x8 = _mm512_add_epi64(count_u64x8, _mm512_popcnt_epi64(difference));
    }
    return (uint32_t)_mm512_reduce_add_epi64(count_u64x8);
}

/* Packed rows of exactly 32 bytes: eight rows per step, two per 512-bit load against the query
 * repeated twice; each row's four 64-bit counts are summed in registers (swap 64-bit halves and
 * add, swap 128-bit lanes and add: every lane of a row's half then holds its total) and the eight
 * totals gathered into one vector store. */
ICELAKE_TARGET static void hamming_32_icelake(size_t rows, const uint8_t *x, size_t queries, const uint8_t *q,
                                              size_t q_stride, uint32_t *distances, size_t distances_stride) {
    const __m512i pick_low = _mm512_setr_epi64(0, 4, 8, 12, 0, 0, 0, 0), pick_high = _mm512_setr_epi64(0, 0, 0, 0, 0, 4, 8, 12);
    for (size_t j = 0; j < queries; ++j) {
        const __m512i query_u8x64 = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(q + j * q_stride)));
        uint32_t *target = distances + j * distances_stride;
        size_t r = 0;
        for (; r + 8 <= rows; r += 8) {
            __m512i totals[4];
            for (int k = 0; k < 4; ++k) {
                __m512i count_u64x8 =
                    _mm512_popcnt_epi64(_mm512_xor_si512(_mm512_loadu_si512(x + (r + 2 * k) * 32), query_u8x64));
                count_u64x8 = _mm512_add_epi64(count_u64x8, _mm512_shuffle_epi32(count_u64x8, _MM_PERM_BADC));
                totals[k] = _mm512_add_epi64(count_u64x8, _mm512_shuffle_i64x2(count_u64x8, count_u64x8, 0xB1));
            }
            /* Rows 2k and 2k+1 sit in 64-bit lanes 0 and 4 of totals[k]. */
            const __m512i low = _mm512_permutex2var_epi64(totals[0], pick_low, totals[1]);
            const __m512i high = _mm512_permutex2var_epi64(totals[2], pick_high, totals[3]);
            _mm256_storeu_si256((__m256i *)(target + r), _mm512_cvtepi64_epi32(_mm512_mask_blend_epi64(0xF0, low, high)));
        }
        for (; r < rows; ++r) target[r] = hamming_row(x + r * 32, q + j * q_stride, 32);
    }
}

ICELAKE_TARGET void uform__search_hamming_b1_icelake(size_t rows, size_t bytes, const uint8_t *x, size_t x_stride,
                                                     size_t queries, const uint8_t *q, size_t q_stride,
                                                     uint32_t *distances, size_t distances_stride) {
    if (bytes == 32 && x_stride == 32) {
        hamming_32_icelake(rows, x, queries, q, q_stride, distances, distances_stride);
        return;
    }
    for (size_t r = 0; r < rows; ++r)
        for (size_t j = 0; j < queries; ++j)
            distances[j * distances_stride + r] = hamming_row(x + r * x_stride, q + j * q_stride, bytes);
}

/* Bits 0..7 of `bits` to the even bits 0, 2, .., 14. */
static inline uint32_t spread8(uint32_t bits) {
    bits = (bits | bits << 4) & 0x0F0Fu;
    bits = (bits | bits << 2) & 0x3333u;
    return (bits | bits << 1) & 0x5555u;
}

/* Rows r..r+15 of 32 bytes against one query: bit k set when row r+k lies within the limit.
 *
 * count[k] = VPOPCNTQ(rows 2k, 2k+1 XOR query), k = 0..7: u64 [8], row 2k's four counts in lanes
 * 0-3, row 2k+1's in lanes 4-7, each count ≤ 64. Counts of four registers are packed into 16-bit
 * fields of one (c0 | c1 << 16 | c2 << 32 | c3 << 48: shifts and ORs, no shuffles), so every
 * shuffle-and-add after that sums four rows at once: swapping 64-bit lanes within 128 bits and
 * adding leaves pair sums (≤ 128); registers `low` (rows 0-7) and `high` (rows 8-15) are blended
 * alternately and one swap of 128-bit lanes and add completes every total (≤ 256, no carry into
 * the next field). The 16-bit fields then hold, in 128-bit lane 0, rows 0 2 4 6 8 10 12 14 (words
 * 0-7) and in lane 2 rows 1 3 .. 15 (words 16-23); one unsigned compare with the limit gives a
 * 32-bit mask whose two bytes interleave into row order. Four shuffles for 16 rows, where storing
 * every distance takes twelve. */
ICELAKE_TARGET static inline uint32_t within_16x32(const uint8_t *x, __m512i query_u8x64, __m512i limit_u16x32) {
#define COUNT_U64X8(k) _mm512_popcnt_epi64(_mm512_xor_si512(_mm512_loadu_si512(x + 64 * (k)), query_u8x64))
    __m512i low_u16x32 = _mm512_ternarylogic_epi64(COUNT_U64X8(0), _mm512_slli_epi64(COUNT_U64X8(1), 16),
                                                   _mm512_slli_epi64(COUNT_U64X8(2), 32), 0xFE /* a | b | c */);
    low_u16x32 = _mm512_or_si512(low_u16x32, _mm512_slli_epi64(COUNT_U64X8(3), 48));
    __m512i high_u16x32 = _mm512_ternarylogic_epi64(COUNT_U64X8(4), _mm512_slli_epi64(COUNT_U64X8(5), 16),
                                                    _mm512_slli_epi64(COUNT_U64X8(6), 32), 0xFE);
    high_u16x32 = _mm512_or_si512(high_u16x32, _mm512_slli_epi64(COUNT_U64X8(7), 48));
#undef COUNT_U64X8
    low_u16x32 = _mm512_add_epi16(low_u16x32, _mm512_shuffle_epi32(low_u16x32, _MM_PERM_BADC));
    high_u16x32 = _mm512_add_epi16(high_u16x32, _mm512_shuffle_epi32(high_u16x32, _MM_PERM_BADC));
    __m512i totals_u16x32 = _mm512_mask_blend_epi64(0xAA, low_u16x32, high_u16x32);
    totals_u16x32 = _mm512_add_epi16(totals_u16x32, _mm512_shuffle_i64x2(totals_u16x32, totals_u16x32, 0xB1));
    const uint32_t mask = (uint32_t)_mm512_cmple_epu16_mask(totals_u16x32, limit_u16x32);
    if (!mask) return 0; /* nearly every step once the heaps are full */
    return spread8(mask & 0xFFu) | spread8(mask >> 16 & 0xFFu) << 1;
}

ICELAKE_TARGET void uform__search_hamming_b1_within_icelake(size_t rows, size_t bytes, const uint8_t *x,
                                                            size_t x_stride, size_t queries, const uint8_t *q,
                                                            size_t q_stride, const uint32_t *limits, uint64_t *near,
                                                            size_t near_stride) {
    const int packed = bytes == 32 && x_stride == 32;
    for (size_t j = 0; j < queries; ++j) {
        const uint8_t *query = q + j * q_stride;
        const uint32_t limit = limits[j];
        /* Distances never exceed 256, so any larger limit acts as 0xFFFF in 16-bit fields. */
        const __m512i limit_u16x32 = _mm512_set1_epi16((short)(limit > 0xFFFFu ? 0xFFFFu : limit));
        const __m512i query_u8x64 = packed ? _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)query))
                                           : _mm512_setzero_si512();
        for (size_t word = 0; word * 64 < rows; ++word) {
            const size_t first = word * 64, count = rows - first < 64 ? rows - first : 64;
            uint64_t bits = 0;
            size_t k = 0;
            if (packed)
                for (; k + 16 <= count; k += 16) bits |= (uint64_t)within_16x32(x + (first + k) * 32, query_u8x64, limit_u16x32) << k;
            for (; k < count; ++k) bits |= (uint64_t)(hamming_row(x + (first + k) * x_stride, query, bytes) <= limit) << k;
            near[j * near_stride + word] = bits;
        }
    }
}
