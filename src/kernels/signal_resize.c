/*
 * Antialiased bilinear (triangle-filter) resize of RGB8 images, matching ATen's
 * `_upsample_bilinear2d_aa` on a float tensor, which torchvision 0.14's
 * `resize(..., antialias=True)` calls. See signal.h for the contract and the float-vs-uint8 choice.
 *
 * Shapes: source [source_height, source_width, 3] uint8 (row stride in bytes); the horizontal pass
 * writes scratch [source rows the window reads, crop_width, 3] float; the vertical pass writes one
 * [crop_width, 3] row per output row and stores it in the requested layout.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "kernels/signal.h"

/* ATen's aa bilinear filter (UpSampleKernel.cpp, HelperInterpLinear::aa_filter), in float. */
static float triangle(float x) {
    if (x < 0.0f) x = -x;
    if (x < 1.0f) return (float)(1.0 - x);
    return 0.0f;
}

static void taps_free(uform__signal_taps_t *taps) {
    free(taps->first);
    free(taps->size);
    free(taps->weights);
    memset(taps, 0, sizeof(*taps));
}

/*
 * Taps of output samples [begin, begin + count) of an axis resized from `input` to `output`
 * samples. Mirrors ATen's `_compute_indices_min_size_weights_aa` for scalar_t = float, keeping its
 * mixed float/double promotions so the weights agree bit for bit: scale and support in float, the
 * centre computed in double and stored in float, the window bounds truncated from double.
 */
static int taps_init(uform__signal_taps_t *taps, size_t input, size_t output, size_t begin, size_t count) {
    memset(taps, 0, sizeof(*taps));
    const float scale = (float)input / (float)output;
    const float support = (scale >= 1.0f) ? (float)((2 * 0.5) * scale) : (float)(2 * 0.5);
    const float invscale = (scale >= 1.0f) ? (float)(1.0 / scale) : 1.0f;
    const size_t reserved = (size_t)ceilf(support) * 2 + 1;
    taps->input = input;
    taps->count = count;
    taps->taps = reserved;
    taps->first = malloc(count * sizeof(size_t));
    taps->size = malloc(count * sizeof(size_t));
    taps->weights = calloc(count * reserved, sizeof(float));
    if (!taps->first || !taps->size || !taps->weights) {
        taps_free(taps);
        return 0;
    }
    for (size_t k = 0; k < count; ++k) {
        const size_t i = begin + k;
        const float center = (float)(scale * ((double)i + 0.5));
        long long low = (long long)((double)(center - support) + 0.5);
        long long high = (long long)((double)(center + support) + 0.5);
        if (low < 0) low = 0;
        if (high > (long long)input) high = (long long)input;
        long long size = high - low;
        if (size > (long long)reserved) size = (long long)reserved; /* ATen clips rare rounding overshoots */
        float *weight = taps->weights + k * reserved;
        float total = 0.0f;
        for (long long j = 0; j < size; ++j) {
            /* (j + xmin - center) is float in ATen; + 0.5 and * invscale happen in double. */
            const float offset = (float)(j + low) - center;
            const float w = triangle((float)(((double)offset + 0.5) * (double)invscale));
            weight[j] = w;
            total += w;
        }
        if (total != 0.0f)
            for (long long j = 0; j < size; ++j) weight[j] /= total;
        if (size <= 0) {
            /* An empty window reads one sample with weight 0, as ATen's zero-filled table does. */
            size = 1;
            if (low >= (long long)input) low = (long long)input - 1;
            weight[0] = 0.0f;
        }
        taps->first[k] = (size_t)low;
        taps->size[k] = (size_t)size;
    }
    return 1;
}

void uform__signal_resize_plan_free(uform__signal_resize_plan_t *plan) {
    if (!plan) return;
    taps_free(&plan->rows);
    taps_free(&plan->columns);
    free(plan->scratch);
    memset(plan, 0, sizeof(*plan));
}

uform_status_t uform__signal_resize_plan_init(uform__signal_resize_plan_t *plan, size_t source_height,
                                              size_t source_width, size_t resized_height, size_t resized_width,
                                              size_t crop_top, size_t crop_left, size_t crop_height,
                                              size_t crop_width, uform_outcome_t *outcome) {
    if (!plan) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "plan is NULL");
    memset(plan, 0, sizeof(*plan));
    const size_t limit = (size_t)1 << 24; /* keeps every float index and product exact */
    if (source_height == 0 || source_width == 0 || resized_height == 0 || resized_width == 0 || crop_height == 0 ||
        crop_width == 0)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                           "sizes must be >= 1: source %zux%zu, resized %zux%zu, crop %zux%zu", source_height,
                           source_width, resized_height, resized_width, crop_height, crop_width);
    if (source_height > limit || source_width > limit || resized_height > limit || resized_width > limit)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                           "sizes must be <= %zu: source %zux%zu, resized %zux%zu", limit, source_height,
                           source_width, resized_height, resized_width);
    if (crop_top > resized_height || crop_height > resized_height - crop_top || crop_left > resized_width ||
        crop_width > resized_width - crop_left)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                           "crop %zux%zu at (%zu, %zu) leaves the resized %zux%zu image", crop_height, crop_width,
                           crop_top, crop_left, resized_height, resized_width);
    plan->source_height = source_height;
    plan->source_width = source_width;
    plan->resized_height = resized_height;
    plan->resized_width = resized_width;
    plan->crop_top = crop_top;
    plan->crop_left = crop_left;
    plan->crop_height = crop_height;
    plan->crop_width = crop_width;
    if (!taps_init(&plan->rows, source_height, resized_height, crop_top, crop_height) ||
        !taps_init(&plan->columns, source_width, resized_width, crop_left, crop_width)) {
        uform__signal_resize_plan_free(plan);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "cannot allocate resize weight tables for %zux%zu",
                           crop_height, crop_width);
    }
    size_t begin = source_height, end = 0;
    for (size_t k = 0; k < crop_height; ++k) {
        if (plan->rows.first[k] < begin) begin = plan->rows.first[k];
        if (plan->rows.first[k] + plan->rows.size[k] > end) end = plan->rows.first[k] + plan->rows.size[k];
    }
    plan->source_row_begin = begin;
    plan->source_row_end = end;
    plan->scratch = malloc((end - begin) * crop_width * 3 * sizeof(float));
    if (!plan->scratch) {
        uform__signal_resize_plan_free(plan);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "cannot allocate resize scratch of %zu rows x %zu pixels",
                           end - begin, crop_width);
    }
    return UFORM_OK;
}

uform_status_t uform__signal_resize_plan_init_shorter_side(uform__signal_resize_plan_t *plan, size_t source_height,
                                                           size_t source_width, size_t side,
                                                           uform_outcome_t *outcome) {
    if (source_height == 0 || source_width == 0 || side == 0) {
        if (plan) memset(plan, 0, sizeof(*plan));
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                           "sizes must be >= 1: source %zux%zu, side %zu", source_height, source_width, side);
    }
    /* torchvision: short, long = sorted sides; new_long = int(side * long / short) in double. */
    const int width_is_short = source_width <= source_height;
    const size_t shorter = width_is_short ? source_width : source_height;
    const size_t longer = width_is_short ? source_height : source_width;
    const size_t resized_long = (size_t)((double)side * (double)longer / (double)shorter);
    const size_t resized_height = width_is_short ? resized_long : side;
    const size_t resized_width = width_is_short ? side : resized_long;
    /* center_crop: int(round((size - side) / 2.0)), Python's round is half to even (rint). */
    const size_t top = (size_t)rint((double)(resized_height - side) / 2.0);
    const size_t left = (size_t)rint((double)(resized_width - side) / 2.0);
    return uform__signal_resize_plan_init(plan, source_height, source_width, resized_height, resized_width, top,
                                          left, side, side, outcome);
}

typedef struct resize_context_t {
    const uform__signal_resize_plan_t *plan;
    const uform__signal_kernels_t *kernels;
    const uint8_t *source;
    size_t source_stride;
    const uform__signal_image_target_t *target;
    float *rows;              /* [threads, 2, crop_width · 3] per-thread output rows and channel planes */
    float *scratch;           /* [threads, scratch_floats] per-thread scratch of the horizontal pass */
    size_t scratch_floats;
    size_t prongs;
} resize_context_t;

static void horizontal_prong(void *opaque, size_t thread, size_t prong) {
    const resize_context_t *context = opaque;
    const uform__signal_resize_plan_t *plan = context->plan;
    size_t begin, end;
    uform__split_range(plan->source_row_end - plan->source_row_begin, context->prongs, prong, &begin, &end);
    if (begin == end) return;
    context->kernels->resize_rows_rgb8(&plan->columns,
                                       context->source + (plan->source_row_begin + begin) * context->source_stride,
                                       context->source_stride, end - begin, plan->scratch + begin * plan->crop_width * 3,
                                       context->scratch + thread * context->scratch_floats);
}

/* target[0, n) = source[0, n): eight floats per fixed-size copy, which compiles to vector moves
 * (a patch row is 8–16 floats, too short for a memcpy call to pay). */
static void copy_floats(float *target, const float *source, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) memcpy(target + i, source + i, 8 * sizeof(float));
    for (; i < n; ++i) target[i] = source[i];
}

/* Stores output row `y` ([crop_width, 3] floats, values 0..255) in the target layout; `planes`
 * is this thread's [3, crop_width] floats. */
static void store_row(const resize_context_t *context, size_t y, const float *row, float *planes) {
    const uform__signal_resize_plan_t *plan = context->plan;
    const uform__signal_image_target_t *target = context->target;
    const size_t width = plan->crop_width;
    switch (target->pixels) {
    case UFORM__SIGNAL_PIXELS_F32_HWC:
        memcpy((float *)target->data + y * width * 3, row, width * 3 * sizeof(float));
        break;
    case UFORM__SIGNAL_PIXELS_U8_HWC: {
        /* torchvision rounds a uint8 image's float result half to even before the cast. */
        uint8_t *out = (uint8_t *)target->data + y * width * 3;
        for (size_t k = 0; k < width * 3; ++k) {
            float v = nearbyintf(row[k]);
            out[k] = (uint8_t)(v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v);
        }
        break;
    }
    case UFORM__SIGNAL_PIXELS_F32_CHW_NORMALISED:
        /* [3, crop_height, crop_width]: row y of plane c is crop_height · crop_width floats after plane c − 1's. */
        context->kernels->normalise_rgb_f32(row, width, target->mean, target->std, (float *)target->data + y * width,
                                            plan->crop_height * width);
        break;
    case UFORM__SIGNAL_PIXELS_F32_PATCHES_NORMALISED: {
        /* [(H/p)·(W/p), 3, t, p, p]: patch (y/p, x/p) row-major, inside it (c, frame, y % p, x % p),
         * so each channel of a patch's row is p floats in a row. */
        const size_t p = target->patch, t = target->frames, across = width / p, area = p * p;
        context->kernels->normalise_rgb_f32(row, width, target->mean, target->std, planes, width);
        float *out = (float *)target->data + (y / p) * across * 3 * t * area + target->frame * area + (y % p) * p;
        for (size_t column = 0; column < across; ++column)
            for (size_t c = 0; c < 3; ++c)
                copy_floats(out + column * 3 * t * area + c * t * area, planes + c * width + column * p, p);
        break;
    }
    }
}

static void vertical_prong(void *opaque, size_t thread, size_t prong) {
    const resize_context_t *context = opaque;
    const uform__signal_resize_plan_t *plan = context->plan;
    const size_t width = plan->crop_width * 3;
    float *row = context->rows + thread * 2 * width, *planes = row + width;
    const float *inputs[64];
    size_t begin, end;
    uform__split_range(plan->crop_height, context->prongs, prong, &begin, &end);
    for (size_t y = begin; y < end; ++y) {
        const size_t first = plan->rows.first[y] - plan->source_row_begin, size = plan->rows.size[y];
        const float *weights = plan->rows.weights + y * plan->rows.taps;
        /* Long filters (extreme downscales) go through in chunks of 64 rows, accumulating on top. */
        for (size_t done = 0; done < size; done += 64) {
            const size_t chunk = size - done < 64 ? size - done : 64;
            for (size_t j = 0; j < chunk; ++j) inputs[j] = plan->scratch + (first + done + j) * width;
            if (done == 0) context->kernels->resize_column_f32(inputs, weights, chunk, width, row);
            else
                for (size_t j = 0; j < chunk; ++j)
                    for (size_t k = 0; k < width; ++k) row[k] += inputs[j][k] * weights[done + j];
        }
        store_row(context, y, row, planes);
    }
}

uform_status_t uform__signal_resize_rgb8(uform__signal_resize_plan_t *plan, const uint8_t *source,
                                         size_t source_stride, const uform__signal_image_target_t *target,
                                         const uform__signal_kernels_t *kernels, const uform__parallel_t *parallel,
                                         uform_outcome_t *outcome) {
    if (!plan || !plan->scratch)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "plan is NULL or not initialised");
    if (!source || !target || !target->data)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "%s is NULL",
                           !source ? "source" : !target ? "target" : "target data");
    if (source_stride < plan->source_width * 3)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                           "source stride %zu bytes is shorter than a row of %zu RGB8 pixels", source_stride,
                           plan->source_width);
    const uform__signal_pixels_t pixels = target->pixels;
    if ((unsigned)pixels > (unsigned)UFORM__SIGNAL_PIXELS_F32_PATCHES_NORMALISED)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "unknown pixel layout %d", (int)pixels);
    if (pixels == UFORM__SIGNAL_PIXELS_F32_CHW_NORMALISED || pixels == UFORM__SIGNAL_PIXELS_F32_PATCHES_NORMALISED) {
        if (!target->mean || !target->std)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "normalised layouts need mean and std");
        for (size_t c = 0; c < 3; ++c)
            if (!(target->std[c] != 0.0f) || !isfinite(target->std[c]) || !isfinite(target->mean[c]))
                return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                                   "channel %zu: mean %g and std %g must be finite and std non-zero", c,
                                   (double)target->mean[c], (double)target->std[c]);
    }
    if (pixels == UFORM__SIGNAL_PIXELS_F32_PATCHES_NORMALISED) {
        if (target->patch == 0 || plan->crop_height % target->patch || plan->crop_width % target->patch)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "patch %zu does not divide the %zux%zu crop",
                               target->patch, plan->crop_height, plan->crop_width);
        if (target->frames == 0 || target->frame >= target->frames)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                               "frame slot %zu is outside a tubelet of %zu frames", target->frame, target->frames);
    }
    resize_context_t context = {
        .plan = plan,
        .kernels = kernels ? kernels : uform__signal_kernels(UFORM_CPU_CLASS_SERIAL),
        .source = source,
        .source_stride = source_stride,
        .target = target,
    };
    const size_t threads = uform__parallel_threads(parallel);
    context.scratch_floats = uform__signal_resize_rows_scratch_floats(&plan->columns);
    context.rows = malloc(threads * (2 * plan->crop_width * 3 + context.scratch_floats) * sizeof(float));
    if (!context.rows)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "cannot allocate %zu output rows of %zu pixels", threads,
                           plan->crop_width);
    context.scratch = context.rows + threads * 2 * plan->crop_width * 3;
    /* One prong per thread per pass: every output value is computed the same way whatever the split. */
    const size_t source_rows = plan->source_row_end - plan->source_row_begin;
    context.prongs = threads < source_rows ? threads : source_rows;
    uform__parallel_for(parallel, context.prongs, horizontal_prong, &context);
    context.prongs = threads < plan->crop_height ? threads : plan->crop_height;
    uform__parallel_for(parallel, context.prongs, vertical_prong, &context);
    free(context.rows);
    return UFORM_OK;
}
