/*
 * The portable passes of Pillow's resize (signal_pil.h) and the per-class dispatch table.
 *
 * A sum starts at 2^21 (half of the fixed-point one) and adds weight · byte in 32-bit integers;
 * the byte stored is clip(sum >> 22, 0, 255), which is Pillow's clip8 lookup for every sum its
 * weights can reach (plan init refuses weights whose sums could leave 32 bits). Integer sums do
 * not depend on their order, so the vectorised classes are free to reorder and still give these
 * bytes.
 */
#include "kernels/signal_pil.h"
#include "kernels/signal_pil_x86.h"

#define HALF ((int32_t)1 << (UFORM__SIGNAL_PIL_PRECISION_BITS - 1))

/* Pillow's clip8: the sum's integer part clamped to a byte (a negative sum's part is < 0). */
static inline uint8_t clip8(int32_t sum) {
    if (sum < 0) return 0;
    const int32_t value = sum >> UFORM__SIGNAL_PIL_PRECISION_BITS;
    return (uint8_t)(value > 255 ? 255 : value);
}

/* One row: three sums per output pixel, over its taps. */
static void horizontal_rgb8_serial(const uform__signal_pil_axis_t *columns, const uint8_t *source, size_t stride,
                                   size_t rows, uint8_t *target, size_t target_stride, uint8_t *scratch) {
    (void)scratch;
    for (size_t r = 0; r < rows; ++r) {
        const uint8_t *row = source + r * stride;
        uint8_t *out = target + r * target_stride;
        for (size_t x = 0; x < columns->count; ++x) {
            const uint8_t *pixel = row + 3 * columns->first[x];
            const int32_t *weight = columns->weights + x * columns->taps;
            int32_t red = HALF, green = HALF, blue = HALF;
            for (size_t j = 0; j < columns->size[x]; ++j) {
                red += weight[j] * pixel[3 * j + 0];
                green += weight[j] * pixel[3 * j + 1];
                blue += weight[j] * pixel[3 * j + 2];
            }
            out[3 * x + 0] = clip8(red);
            out[3 * x + 1] = clip8(green);
            out[3 * x + 2] = clip8(blue);
        }
    }
}

/* Blocks of 64 sums over all taps, so the inner loop runs over contiguous bytes (vectorisable)
 * and the sums stay in registers or L1. */
static void vertical_u8_serial(const uint8_t *base, size_t stride, const int32_t *weights, size_t taps,
                               size_t length, uint8_t *target) {
    int32_t sums[64];
    for (size_t k0 = 0; k0 < length; k0 += 64) {
        const size_t n = length - k0 < 64 ? length - k0 : 64;
        for (size_t k = 0; k < n; ++k) sums[k] = HALF;
        for (size_t j = 0; j < taps; ++j) {
            const uint8_t *row = base + j * stride + k0;
            const int32_t weight = weights[j];
            for (size_t k = 0; k < n; ++k) sums[k] += weight * row[k];
        }
        for (size_t k = 0; k < n; ++k) target[k0 + k] = clip8(sums[k]);
    }
}

void uform__signal_pil_columns_span(const uform__signal_pil_axis_t *columns, size_t *lo, size_t *hi) {
    size_t begin = columns->input, end = 0;
    for (size_t x = 0; x < columns->count; ++x) {
        if (columns->first[x] < begin) begin = columns->first[x];
        if (columns->first[x] + columns->size[x] > end) end = columns->first[x] + columns->size[x];
    }
    *lo = begin < end ? begin : 0;
    *hi = end;
}

size_t uform__signal_pil_horizontal_scratch(const uform__signal_pil_axis_t *columns) {
    /* The vectorised passes' planes of the source columns a block of rows reads and the block's
     * results, both transposed (signal_pil_x86.h), with room for a last 64-byte store. */
    size_t lo, hi;
    uform__signal_pil_columns_span(columns, &lo, &hi);
    return (hi - lo + columns->count) * 3 * UFORM__SIGNAL_PIL_LANES + 64;
}

static const uform__signal_pil_kernels_t pil_kernels_serial = {
    .cpu_class = UFORM_CPU_CLASS_SERIAL,
    .horizontal_rgb8 = horizontal_rgb8_serial,
    .vertical_u8 = vertical_u8_serial,
};

static const uform__signal_pil_kernels_t pil_kernels_haswell = {
    .cpu_class = UFORM_CPU_CLASS_INTEL_HASWELL,
    .horizontal_rgb8 = uform__signal_pil_horizontal_rgb8_haswell,
    .vertical_u8 = uform__signal_pil_vertical_u8_haswell,
};

static const uform__signal_pil_kernels_t pil_kernels_skylake = {
    .cpu_class = UFORM_CPU_CLASS_INTEL_SKYLAKE,
    .horizontal_rgb8 = uform__signal_pil_horizontal_rgb8_skylake,
    .vertical_u8 = uform__signal_pil_vertical_u8_skylake,
};

const uform__signal_pil_kernels_t *uform__signal_pil_kernels(uform_cpu_class_t cpu_class) {
    switch (cpu_class) {
    case UFORM_CPU_CLASS_INTEL_HASWELL:
    case UFORM_CPU_CLASS_INTEL_SIERRA:
        return &pil_kernels_haswell;
    case UFORM_CPU_CLASS_INTEL_SKYLAKE:
    case UFORM_CPU_CLASS_INTEL_ICELAKE:
    case UFORM_CPU_CLASS_AMD_GENOA:
    case UFORM_CPU_CLASS_INTEL_SAPPHIRE:
    case UFORM_CPU_CLASS_INTEL_GRANITE:
    case UFORM_CPU_CLASS_INTEL_DIAMOND:
        return &pil_kernels_skylake;
    default: /* SERIAL, UNKNOWN, MONOVERSIONED and the non-x86 classes */
        return &pil_kernels_serial;
    }
}
