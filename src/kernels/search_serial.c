/*
 * Portable search kernels (the reference the other classes are tested against) and the table
 * dispatch. Sums run left to right in one F32 (dot_f32, dot_bf16) or int32 accumulator.
 */
#include <string.h>

#include "kernels/search.h"

static void dot_f32_serial(size_t rows, size_t columns, const float *x, size_t x_stride, size_t queries, const float *q,
                           size_t q_stride, float *scores, size_t scores_stride) {
    for (size_t j = 0; j < queries; ++j)
        for (size_t r = 0; r < rows; ++r) {
            const float *row = x + r * x_stride, *query = q + j * q_stride;
            float sum = 0.0f;
            for (size_t c = 0; c < columns; ++c) sum += query[c] * row[c];
            scores[j * scores_stride + r] = sum;
        }
}

static float widen(uint16_t value) {
    uint32_t bits = (uint32_t)value << 16;
    float result;
    memcpy(&result, &bits, sizeof result);
    return result;
}

static void dot_bf16_serial(size_t rows, size_t columns, const uint16_t *x, size_t x_stride, size_t queries,
                            const uint16_t *q, size_t q_stride, float *scores, size_t scores_stride) {
    for (size_t j = 0; j < queries; ++j)
        for (size_t r = 0; r < rows; ++r) {
            const uint16_t *row = x + r * x_stride, *query = q + j * q_stride;
            float sum = 0.0f;
            /* A product of two BF16 values has at most 16 significant bits: exact in F32. */
            for (size_t c = 0; c < columns; ++c) sum += widen(query[c]) * widen(row[c]);
            scores[j * scores_stride + r] = sum;
        }
}

static void dot_i8_serial(size_t rows, size_t columns, const int8_t *x, size_t x_stride, size_t queries,
                          const int8_t *q, size_t q_stride, int32_t *scores, size_t scores_stride) {
    for (size_t j = 0; j < queries; ++j)
        for (size_t r = 0; r < rows; ++r) {
            const int8_t *row = x + r * x_stride, *query = q + j * q_stride;
            int32_t sum = 0;
            for (size_t c = 0; c < columns; ++c) sum += (int32_t)query[c] * (int32_t)row[c];
            scores[j * scores_stride + r] = sum;
        }
}

static uint32_t popcount8(uint8_t byte) {
    byte = (uint8_t)(byte - ((byte >> 1) & 0x55));
    byte = (uint8_t)((byte & 0x33) + ((byte >> 2) & 0x33));
    return (uint32_t)((byte + (byte >> 4)) & 0x0F);
}

static void hamming_b1_serial(size_t rows, size_t bytes, const uint8_t *x, size_t x_stride, size_t queries,
                              const uint8_t *q, size_t q_stride, uint32_t *distances, size_t distances_stride) {
    for (size_t j = 0; j < queries; ++j)
        for (size_t r = 0; r < rows; ++r) {
            const uint8_t *row = x + r * x_stride, *query = q + j * q_stride;
            uint32_t distance = 0;
            for (size_t b = 0; b < bytes; ++b) distance += popcount8((uint8_t)(row[b] ^ query[b]));
            distances[j * distances_stride + r] = distance;
        }
}

static void hamming_b1_within_serial(size_t rows, size_t bytes, const uint8_t *x, size_t x_stride, size_t queries,
                                     const uint8_t *q, size_t q_stride, const uint32_t *limits, uint64_t *near,
                                     size_t near_stride) {
    for (size_t j = 0; j < queries; ++j) {
        const uint8_t *query = q + j * q_stride;
        for (size_t word = 0; word * 64 < rows; ++word) {
            uint64_t bits = 0;
            for (size_t k = 0; k < 64 && word * 64 + k < rows; ++k) {
                const uint8_t *row = x + (word * 64 + k) * x_stride;
                uint32_t distance = 0;
                for (size_t b = 0; b < bytes; ++b) distance += popcount8((uint8_t)(row[b] ^ query[b]));
                bits |= (uint64_t)(distance <= limits[j]) << k;
            }
            near[j * near_stride + word] = bits;
        }
    }
}

const uform__search_kernels_t uform__search_kernels_serial = {
    UFORM_CPU_CLASS_SERIAL, dot_f32_serial, dot_bf16_serial, dot_i8_serial, hamming_b1_serial, hamming_b1_within_serial,
};

const uform__search_kernels_t *uform__search_kernels(uform_cpu_class_t cpu_class) {
    switch (cpu_class) {
    case UFORM_CPU_CLASS_INTEL_HASWELL:
    case UFORM_CPU_CLASS_INTEL_SIERRA:
    case UFORM_CPU_CLASS_INTEL_SKYLAKE: return &uform__search_kernels_haswell;
    case UFORM_CPU_CLASS_INTEL_ICELAKE: return &uform__search_kernels_icelake;
    case UFORM_CPU_CLASS_AMD_GENOA:
    case UFORM_CPU_CLASS_INTEL_SAPPHIRE:
    case UFORM_CPU_CLASS_INTEL_GRANITE:
    case UFORM_CPU_CLASS_INTEL_DIAMOND: return &uform__search_kernels_genoa;
    default: return &uform__search_kernels_serial;
    }
}
