/*
 * The portable inner loops of the signal kernels and the per-class dispatch tables.
 *
 * Summation orders follow the references (ATen's interpolate_aa_single_dim sums taps from the
 * first; a dot product sums in index order), so the serial loops are the ones every other class
 * is tested against. A slot without a specialised loop points at the serial one.
 */
#include "kernels/signal.h"
#include "kernels/signal_x86.h"

/* target [columns->count, 3] from one RGB8 row: each output pixel's taps summed from the first.
 * Four output pixels run side by side (twelve independent sums) over the taps they all have, so
 * the adds overlap instead of waiting on one another; each sum still runs in tap order, so the
 * result is bit-identical to one pixel at a time. */
static void resize_row_rgb8_serial(const uform__signal_taps_t *columns, const uint8_t *source, float *target) {
    size_t x = 0;
    for (; x + 4 <= columns->count; x += 4) {
        const uint8_t *pixel[4];
        const float *weight[4];
        float sum[4][3];
        size_t common = columns->size[x];
        for (size_t l = 0; l < 4; ++l) {
            pixel[l] = source + 3 * columns->first[x + l];
            weight[l] = columns->weights + (x + l) * columns->taps;
            if (columns->size[x + l] < common) common = columns->size[x + l];
            for (size_t c = 0; c < 3; ++c) sum[l][c] = (float)pixel[l][c] * weight[l][0];
        }
        for (size_t j = 1; j < common; ++j)
            for (size_t l = 0; l < 4; ++l)
                for (size_t c = 0; c < 3; ++c) sum[l][c] += (float)pixel[l][3 * j + c] * weight[l][j];
        for (size_t l = 0; l < 4; ++l) {
            for (size_t j = common > 1 ? common : 1; j < columns->size[x + l]; ++j)
                for (size_t c = 0; c < 3; ++c) sum[l][c] += (float)pixel[l][3 * j + c] * weight[l][j];
            for (size_t c = 0; c < 3; ++c) target[3 * (x + l) + c] = sum[l][c];
        }
    }
    for (; x < columns->count; ++x) {
        const uint8_t *pixel = source + 3 * columns->first[x];
        const float *weight = columns->weights + x * columns->taps;
        size_t size = columns->size[x];
        float red = (float)pixel[0] * weight[0], green = (float)pixel[1] * weight[0],
              blue = (float)pixel[2] * weight[0];
        for (size_t j = 1; j < size; ++j) {
            red += (float)pixel[3 * j + 0] * weight[j];
            green += (float)pixel[3 * j + 1] * weight[j];
            blue += (float)pixel[3 * j + 2] * weight[j];
        }
        target[3 * x + 0] = red;
        target[3 * x + 1] = green;
        target[3 * x + 2] = blue;
    }
}

/* target [width] = sum over j of weights[j] · rows[j][·], accumulated row by row so the inner loop
 * runs over contiguous floats (vectorisable) while each element still sums in j order. */
static void resize_column_f32_serial(const float *const *rows, const float *weights, size_t size, size_t width,
                                     float *target) {
    const float *row = rows[0];
    float weight = weights[0];
    for (size_t k = 0; k < width; ++k) target[k] = row[k] * weight;
    for (size_t j = 1; j < size; ++j) {
        row = rows[j];
        weight = weights[j];
        for (size_t k = 0; k < width; ++k) target[k] += row[k] * weight;
    }
}

void uform__signal_normalise_rgb_f32_serial(const float *row, size_t begin, size_t width, const float *mean,
                                            const float *std, float *planes, size_t plane_stride) {
    for (size_t c = 0; c < 3; ++c)
        for (size_t x = begin; x < width; ++x) planes[c * plane_stride + x] = (row[3 * x + c] / 255.0f - mean[c]) / std[c];
}

static void normalise_rgb_f32_serial(const float *row, size_t width, const float *mean, const float *std,
                                     float *planes, size_t plane_stride) {
    uform__signal_normalise_rgb_f32_serial(row, 0, width, mean, std, planes, plane_stride);
}

static float dot_f32_serial(const float *a, const float *b, size_t count) {
    float sum = 0.0f;
    for (size_t i = 0; i < count; ++i) sum += a[i] * b[i];
    return sum;
}

static void resize_rows_rgb8_serial(const uform__signal_taps_t *columns, const uint8_t *source, size_t stride,
                                    size_t rows, float *target, float *scratch) {
    (void)scratch;
    for (size_t r = 0; r < rows; ++r) resize_row_rgb8_serial(columns, source + r * stride, target + r * columns->count * 3);
}

size_t uform__signal_resize_rows_span(const uform__signal_taps_t *columns) {
    return columns->taps > UFORM__SIGNAL_ROWS_SPAN ? columns->taps : UFORM__SIGNAL_ROWS_SPAN;
}

size_t uform__signal_resize_run(const uform__signal_taps_t *columns, size_t x0, size_t *lo, size_t *hi) {
    const size_t span = uform__signal_resize_rows_span(columns), begin = columns->first[x0];
    size_t end = begin + columns->size[x0], x1 = x0 + 1;
    for (; x1 < columns->count && columns->first[x1] >= begin; ++x1) {
        const size_t last = columns->first[x1] + columns->size[x1], reach = last > end ? last : end;
        if (reach - begin > span) break;
        end = reach;
    }
    *lo = begin, *hi = end;
    return x1;
}

/* Planes [span, 3, lanes]. */
size_t uform__signal_resize_rows_scratch_floats(const uform__signal_taps_t *columns) {
    return uform__signal_resize_rows_span(columns) * 3 * UFORM__SIGNAL_ROWS_LANES;
}

static const uform__signal_kernels_t signal_kernels_serial = {
    .cpu_class = UFORM_CPU_CLASS_SERIAL,
    .resize_rows_rgb8 = resize_rows_rgb8_serial,
    .resize_column_f32 = resize_column_f32_serial,
    .normalise_rgb_f32 = normalise_rgb_f32_serial,
    .dot_f32 = dot_f32_serial,
};

static const uform__signal_kernels_t signal_kernels_haswell = {
    .cpu_class = UFORM_CPU_CLASS_INTEL_HASWELL,
    .resize_rows_rgb8 = uform__signal_resize_rows_rgb8_haswell,
    .resize_column_f32 = uform__signal_resize_column_f32_haswell,
    .normalise_rgb_f32 = uform__signal_normalise_rgb_f32_haswell,
    .dot_f32 = dot_f32_serial,
};

static const uform__signal_kernels_t signal_kernels_skylake = {
    .cpu_class = UFORM_CPU_CLASS_INTEL_SKYLAKE,
    .resize_rows_rgb8 = uform__signal_resize_rows_rgb8_skylake,
    .resize_column_f32 = uform__signal_resize_column_f32_skylake,
    .normalise_rgb_f32 = uform__signal_normalise_rgb_f32_skylake,
    .dot_f32 = dot_f32_serial,
};

const uform__signal_kernels_t *uform__signal_kernels(uform_cpu_class_t cpu_class) {
    switch (cpu_class) {
    case UFORM_CPU_CLASS_INTEL_HASWELL:
    case UFORM_CPU_CLASS_INTEL_SIERRA:
        return &signal_kernels_haswell;
    case UFORM_CPU_CLASS_INTEL_SKYLAKE:
    case UFORM_CPU_CLASS_INTEL_ICELAKE: /* VNNI, BF16 and AMX do nothing for float filters */
    case UFORM_CPU_CLASS_AMD_GENOA:
    case UFORM_CPU_CLASS_INTEL_SAPPHIRE:
    case UFORM_CPU_CLASS_INTEL_GRANITE:
    case UFORM_CPU_CLASS_INTEL_DIAMOND:
        return &signal_kernels_skylake;
    default: /* SERIAL, UNKNOWN, MONOVERSIONED and the non-x86 classes */
        return &signal_kernels_serial;
    }
}
