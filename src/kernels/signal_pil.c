/*
 * Pillow's resize of RGB8 pictures (Image.resize with a filter other than NEAREST), planned once
 * per size and applied per picture. The algorithm is Pillow 9.4's libImaging/Resample.c, written
 * afresh from its description in signal_pil.h: coefficients in double, normalised, rounded to
 * 22-bit fixed point; a horizontal pass (when the width changes) over the source rows the
 * vertical pass reads, each output byte clipped and rounded; then the vertical pass (when the
 * height changes) over those bytes.
 *
 * Shapes: source [source_height, source_width, 3] bytes (row stride in bytes); middle
 * [row_end − row_begin, window_width, 3] bytes, the horizontal result of the source rows the
 * window's output rows read; out [window_height, window_width, 3] bytes.
 *
 * The coefficients are computed here in plain C (no target attributes) so that the compiler
 * cannot fuse their multiplies and adds on x86-64, as Pillow's baseline amd64 build cannot.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "kernels/signal_pil.h"

#define PIL_PI 3.14159265358979323846

/* Pillow's filters: the same expressions in the same order, in double. */
static double box_filter(double x) { return (x > -0.5 && x <= 0.5) ? 1.0 : 0.0; }

static double bilinear_filter(double x) {
    if (x < 0.0) x = -x;
    return x < 1.0 ? 1.0 - x : 0.0;
}

static double hamming_filter(double x) {
    if (x < 0.0) x = -x;
    if (x == 0.0) return 1.0;
    if (x >= 1.0) return 0.0;
    x = x * PIL_PI;
    /* 0.54f and 0.46f are float constants in Pillow, promoted to double. */
    return sin(x) / x * ((double)0.54f + (double)0.46f * cos(x));
}

/* Keys' cubic convolution with a = −0.5. */
static double bicubic_filter(double x) {
    const double a = -0.5;
    if (x < 0.0) x = -x;
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

static double sinc_filter(double x) {
    if (x == 0.0) return 1.0;
    x = x * PIL_PI;
    return sin(x) / x;
}

static double lanczos_filter(double x) {
    if (-3.0 <= x && x < 3.0) return sinc_filter(x) * sinc_filter(x / 3);
    return 0.0;
}

typedef struct filter_t {
    double (*function)(double x);
    double support;
} filter_t;

/* Indexed by uform__signal_pil_filter_t; NEAREST has no entry. */
static const filter_t filters[] = {
    {NULL, 0.0}, {lanczos_filter, 3.0}, {bilinear_filter, 1.0}, {bicubic_filter, 2.0}, {box_filter, 0.5},
    {hamming_filter, 1.0},
};

static const char *const filter_names[] = {"NEAREST", "LANCZOS", "BILINEAR", "BICUBIC", "BOX", "HAMMING"};

static void axis_free(uform__signal_pil_axis_t *axis) {
    free(axis->first);
    free(axis->size);
    free(axis->weights);
    memset(axis, 0, sizeof(*axis));
}

/*
 * The taps of outputs [begin, begin + count) of an axis resized from `input` to `output` samples
 * (Pillow's precompute_coeffs with box (0, in), then normalize_coeffs_8bpc). Answers 1, 0 when an
 * allocation fails, or −1 when a sum could leave 32 bits (Σ|weights| · 255 + 2^21 >= 2^31, which
 * no filter here reaches; checked so that the passes' signed sums provably never overflow).
 */
static int axis_init(uform__signal_pil_axis_t *axis, size_t input, size_t output, size_t begin, size_t count,
                     const filter_t *filter) {
    memset(axis, 0, sizeof(*axis));
    /* Pillow: scale = (double)(in1 − in0) / outSize with float box edges, exact below 2^24. */
    const double scale = (double)(float)input / (double)output;
    const double filterscale = scale < 1.0 ? 1.0 : scale;
    const double support = filter->support * filterscale;
    const size_t taps = (size_t)ceil(support) * 2 + 1;
    axis->input = input;
    axis->output = output;
    axis->begin = begin;
    axis->count = count;
    axis->taps = taps;
    axis->first = malloc(count * sizeof(size_t));
    axis->size = malloc(count * sizeof(size_t));
    axis->weights = malloc(count * taps * sizeof(int32_t));
    double *k = malloc(taps * sizeof(double));
    if (!axis->first || !axis->size || !axis->weights || !k) {
        free(k);
        axis_free(axis);
        return 0;
    }
    const double one = (double)(1 << UFORM__SIGNAL_PIL_PRECISION_BITS);
    for (size_t i = 0; i < count; ++i) {
        const size_t xx = begin + i;
        const double center = ((double)xx + 0.5) * scale;
        const double ss = 1.0 / filterscale;
        /* (int) truncates toward zero, as Pillow's cast; a negative start is clamped to 0 anyway. */
        long long xmin = (long long)(center - support + 0.5);
        if (xmin < 0) xmin = 0;
        long long xmax = (long long)(center + support + 0.5);
        if (xmax > (long long)input) xmax = (long long)input;
        xmax -= xmin;
        double ww = 0.0;
        for (long long x = 0; x < xmax; ++x) {
            const double w = filter->function(((double)(x + xmin) - center + 0.5) * ss);
            k[x] = w;
            ww += w;
        }
        int32_t *weight = axis->weights + i * taps;
        double magnitude = 0.0;
        for (long long x = 0; x < xmax; ++x) {
            const double normalised = ww != 0.0 ? k[x] / ww : k[x];
            /* normalize_coeffs_8bpc: round half away from zero by a truncating cast. */
            weight[x] = normalised < 0 ? (int32_t)(-0.5 + normalised * one) : (int32_t)(0.5 + normalised * one);
            magnitude += fabs((double)weight[x]);
        }
        for (long long x = xmax > 0 ? xmax : 0; x < (long long)taps; ++x) weight[x] = 0;
        if (xmax <= 0) {
            /* Pillow would read nothing and store clip8(2^21) = 0; one tap of weight 0 reads the
             * nearest sample and stores the same 0 (no filter here leaves a window empty). */
            xmin = xmin < (long long)input ? xmin : (long long)input - 1;
            xmax = 1;
        }
        if (magnitude * 255.0 + (double)(1 << (UFORM__SIGNAL_PIL_PRECISION_BITS - 1)) >= 2147483648.0) {
            free(k);
            axis_free(axis);
            return -1;
        }
        axis->first[i] = (size_t)xmin;
        axis->size[i] = (size_t)xmax;
    }
    free(k);
    return 1;
}

void uform__signal_pil_plan_free(uform__signal_pil_plan_t *plan) {
    if (!plan) return;
    axis_free(&plan->rows);
    axis_free(&plan->columns);
    free(plan->middle);
    free(plan->scratch);
    memset(plan, 0, sizeof(*plan));
}

uform_status_t uform__signal_pil_plan_init(uform__signal_pil_plan_t *plan, size_t source_height, size_t source_width,
                                           size_t resized_height, size_t resized_width, size_t window_top,
                                           size_t window_left, size_t window_height, size_t window_width,
                                           uform__signal_pil_filter_t filter, uform_outcome_t *outcome) {
    if (!plan) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "plan is NULL");
    memset(plan, 0, sizeof(*plan));
    if (source_height == 0 || source_width == 0 || resized_height == 0 || resized_width == 0 || window_height == 0 ||
        window_width == 0)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                           "sizes must be >= 1: source %zux%zu, resized %zux%zu, window %zux%zu", source_height,
                           source_width, resized_height, resized_width, window_height, window_width);
    const size_t limit = UFORM__SIGNAL_PIL_MAX_SIDE;
    if (source_height > limit || source_width > limit || resized_height > limit || resized_width > limit)
        return uform__fail(outcome, UFORM_UNSUPPORTED, __func__, "sides must be <= %zu: source %zux%zu, resized %zux%zu",
                           limit, source_height, source_width, resized_height, resized_width);
    if (window_top > resized_height || window_height > resized_height - window_top || window_left > resized_width ||
        window_width > resized_width - window_left)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                           "window %zux%zu at (%zu, %zu) leaves the resized %zux%zu picture", window_height,
                           window_width, window_top, window_left, resized_height, resized_width);
    if ((unsigned)filter > (unsigned)UFORM__SIGNAL_PIL_HAMMING)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                           "unknown PIL resampling filter %d (PIL numbers them 0 .. 5)", (int)filter);
    if (filter == UFORM__SIGNAL_PIL_NEAREST)
        return uform__fail(outcome, UFORM_UNSUPPORTED, __func__,
                           "PIL resampling filter NEAREST (0) is not supported: Pillow runs it as an affine "
                           "transform, not a resampling filter");
    plan->source_height = source_height;
    plan->source_width = source_width;
    plan->resized_height = resized_height;
    plan->resized_width = resized_width;
    plan->window_top = window_top;
    plan->window_left = window_left;
    plan->window_height = window_height;
    plan->window_width = window_width;
    plan->filter = filter;
    plan->horizontal = resized_width != source_width;
    plan->vertical = resized_height != source_height;
    const filter_t *chosen = &filters[filter];
    int made = 1;
    if (plan->vertical) made = axis_init(&plan->rows, source_height, resized_height, window_top, window_height, chosen);
    if (made == 1 && plan->horizontal)
        made = axis_init(&plan->columns, source_width, resized_width, window_left, window_width, chosen);
    if (made != 1) {
        uform__signal_pil_plan_free(plan);
        if (made == 0)
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__,
                               "cannot allocate %s weight tables for %zux%zu -> %zux%zu", filter_names[filter],
                               source_height, source_width, resized_height, resized_width);
        return uform__fail(outcome, UFORM_UNSUPPORTED, __func__,
                           "%s weights for %zux%zu -> %zux%zu could overflow 32-bit sums", filter_names[filter],
                           source_height, source_width, resized_height, resized_width);
    }
    /* The source rows the window reads: the vertical taps' span, or the window's own rows. */
    if (plan->vertical) {
        plan->row_begin = plan->rows.first[0];
        plan->row_end = plan->rows.first[window_height - 1] + plan->rows.size[window_height - 1];
        for (size_t y = 0; y < window_height; ++y) { /* windows move forward; the loop only guards that */
            if (plan->rows.first[y] < plan->row_begin) plan->row_begin = plan->rows.first[y];
            if (plan->rows.first[y] + plan->rows.size[y] > plan->row_end)
                plan->row_end = plan->rows.first[y] + plan->rows.size[y];
        }
    } else {
        plan->row_begin = window_top;
        plan->row_end = window_top + window_height;
    }
    if (plan->horizontal) {
        plan->middle = malloc((plan->row_end - plan->row_begin) * window_width * 3);
        plan->scratch = malloc(uform__signal_pil_horizontal_scratch(&plan->columns));
        if (!plan->middle || !plan->scratch) {
            const size_t rows = plan->row_end - plan->row_begin;
            uform__signal_pil_plan_free(plan);
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__,
                               "cannot allocate the horizontal pass's %zu rows of %zu pixels", rows, window_width);
        }
    }
    return UFORM_OK;
}

uform_status_t uform__signal_pil_plan_apply(uform__signal_pil_plan_t *plan, const uint8_t *pixels, size_t stride,
                                            uint8_t *out, size_t out_stride, const uform__signal_pil_kernels_t *kernels,
                                            uform_outcome_t *outcome) {
    if (!plan || plan->window_width == 0)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "plan is NULL or not initialised");
    if (!pixels || !out)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "%s is NULL", !pixels ? "pixels" : "out");
    if (stride < plan->source_width * 3)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                           "stride %zu bytes is shorter than a row of %zu RGB8 pixels", stride, plan->source_width);
    if (out_stride < plan->window_width * 3)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                           "out_stride %zu bytes is shorter than a row of %zu RGB8 pixels", out_stride,
                           plan->window_width);
    if (!kernels) kernels = uform__signal_pil_kernels(UFORM_CPU_CLASS_SERIAL);
    const size_t row_bytes = plan->window_width * 3;
    /* The rows the vertical pass (or the copy) reads: the horizontal result, or the source's
     * window columns in place. */
    const uint8_t *middle;
    size_t middle_stride;
    if (plan->horizontal) {
        kernels->horizontal_rgb8(&plan->columns, pixels + plan->row_begin * stride, stride,
                                 plan->row_end - plan->row_begin, plan->middle, row_bytes, plan->scratch);
        middle = plan->middle;
        middle_stride = row_bytes;
    } else {
        middle = pixels + plan->row_begin * stride + plan->window_left * 3;
        middle_stride = stride;
    }
    if (plan->vertical) {
        for (size_t y = 0; y < plan->window_height; ++y)
            kernels->vertical_u8(middle + (plan->rows.first[y] - plan->row_begin) * middle_stride, middle_stride,
                                 plan->rows.weights + y * plan->rows.taps, plan->rows.size[y], row_bytes,
                                 out + y * out_stride);
    } else {
        for (size_t y = 0; y < plan->window_height; ++y)
            memcpy(out + y * out_stride, middle + y * middle_stride, row_bytes);
    }
    return UFORM_OK;
}

uform_status_t uform__signal_pil_resize_rgb8(const uint8_t *pixels, size_t height, size_t width, size_t stride,
                                             uint8_t *out, size_t out_height, size_t out_width,
                                             uform__signal_pil_filter_t filter, uform_outcome_t *outcome) {
    uform__signal_pil_plan_t plan;
    uform_status_t status = uform__signal_pil_plan_init(&plan, height, width, out_height, out_width, 0, 0, out_height,
                                                        out_width, filter, outcome);
    if (status != UFORM_OK) return status;
    status = uform__signal_pil_plan_apply(&plan, pixels, stride, out, out_width * 3, NULL, outcome);
    uform__signal_pil_plan_free(&plan);
    return status;
}
