/*
 * The four published processor styles of signal_pil.h: the geometry each one's Python code gives a
 * picture (resized size, crop offsets, padding), its normalisation, and a pipeline that plans the
 * resize of only the part of the resized picture its crop keeps.
 *
 * Each rule below names the Python it follows: transformers' image_transforms
 * (get_resize_output_image_size, center_crop), torchvision 0.14's transforms.functional
 * (_compute_resized_output_size, center_crop), open_clip's transform.py (ResizeKeepRatio,
 * CenterCropOrPad, image_transform). Python's int / int is correctly rounded, as C's division of
 * the same exactly converted doubles is, so int(S · long / short) and round(side / ratio) agree.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "kernels/signal_pil.h"

static const char *const style_names[] = {"CLIP", "SIGLIP", "OPEN_CLIP", "UFORM3"};

/* get_resize_output_image_size(default_to_square=False) and torchvision's
 * _compute_resized_output_size for one requested shorter side: the shorter side becomes `side`,
 * the longer int(side · long / short); a square picture's width counts as the shorter. */
static void shortest_edge(size_t height, size_t width, size_t side, size_t *resized_height, size_t *resized_width) {
    const int width_is_short = width <= height;
    const size_t shorter = width_is_short ? width : height, longer = width_is_short ? height : width;
    const size_t resized_long = (size_t)((double)side * (double)longer / (double)shorter);
    *resized_height = width_is_short ? resized_long : side;
    *resized_width = width_is_short ? side : resized_long;
}

/* transformers' center_crop along one axis of `size` samples cropped to `crop`: top = (size −
 * crop) // 2 with Python's floor division. When the crop is longer, transformers pads
 * ceil((crop − size) / 2) before the picture and then crops at top + that padding = 0, so the
 * picture starts at −top, the same formula. */
static ptrdiff_t transformers_offset(size_t size, size_t crop) {
    const ptrdiff_t d = (ptrdiff_t)size - (ptrdiff_t)crop;
    return d >= 0 ? d / 2 : -((-d + 1) / 2);
}

/* torchvision's center_crop (and open_clip's CenterCropOrPad) along one axis: a longer crop pads
 * (crop − size) // 2 before the picture and crops the padded axis at 0; otherwise the crop starts
 * at int(round((size − crop) / 2.0)), half to even. */
static ptrdiff_t torchvision_offset(size_t size, size_t crop) {
    if (crop > size) return -(ptrdiff_t)((crop - size) / 2);
    return (ptrdiff_t)rint((double)(size - crop) / 2.0);
}

/* open_clip's ResizeKeepRatio.get_params without its random parts: ratio_h = h / target_h,
 * ratio_w = w / target_w, ratio = the larger (longest) or the smaller (shortest) of the two, each
 * side round(side / ratio), half to even. */
static void keep_ratio(size_t height, size_t width, size_t target_height, size_t target_width, int longest,
                       size_t *resized_height, size_t *resized_width) {
    const double ratio_h = (double)height / (double)target_height, ratio_w = (double)width / (double)target_width;
    const double ratio = longest ? (ratio_h > ratio_w ? ratio_h : ratio_w) : (ratio_h < ratio_w ? ratio_h : ratio_w);
    *resized_height = (size_t)rint((double)height / ratio);
    *resized_width = (size_t)rint((double)width / ratio);
}

uform_status_t uform__signal_pil_geometry(const uform__signal_pil_processor_t *processor, size_t height,
                                          size_t width, uform__signal_pil_geometry_t *geometry,
                                          uform_outcome_t *outcome) {
    if (!processor || !geometry)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "%s is NULL", !processor ? "processor" : "geometry");
    memset(geometry, 0, sizeof(*geometry));
    const size_t limit = UFORM__SIGNAL_PIL_MAX_SIDE;
    if (height == 0 || width == 0 || height > limit || width > limit)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "picture %zux%zu: sides must be 1 .. %zu", height,
                           width, limit);
    if ((unsigned)processor->style > (unsigned)UFORM__SIGNAL_PIL_STYLE_UFORM3)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "unknown processor style %d", (int)processor->style);
    const uform__signal_pil_style_t style = processor->style;
    const char *name = style_names[style];
    /* The sizes each style reads, checked before use. */
    const int clip_resize = style == UFORM__SIGNAL_PIL_STYLE_CLIP && processor->do_resize;
    if (clip_resize && processor->shortest_edge > limit)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "%s: size.shortest_edge %zu must be 1 .. %zu", name,
                           processor->shortest_edge, limit);
    const int sized = (clip_resize && processor->shortest_edge == 0) ||
                      (style == UFORM__SIGNAL_PIL_STYLE_SIGLIP && processor->do_resize) ||
                      style == UFORM__SIGNAL_PIL_STYLE_OPEN_CLIP || style == UFORM__SIGNAL_PIL_STYLE_UFORM3;
    if (sized && (processor->height == 0 || processor->width == 0 || processor->height > limit || processor->width > limit))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "%s: size %zux%zu: sides must be 1 .. %zu", name,
                           processor->height, processor->width, limit);
    if (style == UFORM__SIGNAL_PIL_STYLE_UFORM3 && processor->height != processor->width)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "UFORM3: image_size %zux%zu must be square",
                           processor->height, processor->width);
    const int clip_crop = style == UFORM__SIGNAL_PIL_STYLE_CLIP && processor->do_center_crop;
    if (clip_crop && (processor->crop_height == 0 || processor->crop_width == 0 || processor->crop_height > limit ||
                      processor->crop_width > limit))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "CLIP: crop_size %zux%zu: sides must be 1 .. %zu",
                           processor->crop_height, processor->crop_width, limit);
    if (style == UFORM__SIGNAL_PIL_STYLE_OPEN_CLIP && (unsigned)processor->resize_mode > (unsigned)UFORM__SIGNAL_PIL_SQUASH)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "OPEN_CLIP: unknown resize_mode %d",
                           (int)processor->resize_mode);

    size_t resized_height = height, resized_width = width, crop_height = 0, crop_width = 0;
    int resize = 0, crop = 0, transformers_crop = 0;
    uint8_t fill = 0;
    switch (style) {
    case UFORM__SIGNAL_PIL_STYLE_CLIP:
        /* CLIPImageProcessor.resize: {"shortest_edge"} keeps the aspect, {"height", "width"} is exact. */
        if (processor->do_resize) {
            resize = 1;
            if (processor->shortest_edge)
                shortest_edge(height, width, processor->shortest_edge, &resized_height, &resized_width);
            else
                resized_height = processor->height, resized_width = processor->width;
        }
        if (processor->do_center_crop)
            crop = 1, transformers_crop = 1, crop_height = processor->crop_height, crop_width = processor->crop_width;
        break;
    case UFORM__SIGNAL_PIL_STYLE_SIGLIP:
        if (processor->do_resize) resize = 1, resized_height = processor->height, resized_width = processor->width;
        break;
    case UFORM__SIGNAL_PIL_STYLE_OPEN_CLIP:
    case UFORM__SIGNAL_PIL_STYLE_UFORM3: {
        const uform__signal_pil_resize_mode_t mode =
            style == UFORM__SIGNAL_PIL_STYLE_UFORM3 ? UFORM__SIGNAL_PIL_SHORTEST : processor->resize_mode;
        const size_t target_height = processor->height, target_width = processor->width;
        resize = 1;
        if (mode == UFORM__SIGNAL_PIL_SQUASH) {
            resized_height = target_height, resized_width = target_width; /* Resize((h, w)), no crop */
            break;
        }
        if (mode == UFORM__SIGNAL_PIL_SHORTEST && target_height == target_width) /* Resize(S): the scalar form */
            shortest_edge(height, width, target_height, &resized_height, &resized_width);
        else
            keep_ratio(height, width, target_height, target_width, mode == UFORM__SIGNAL_PIL_LONGEST, &resized_height,
                       &resized_width);
        crop = 1, crop_height = target_height, crop_width = target_width;
        if (mode == UFORM__SIGNAL_PIL_LONGEST) fill = processor->fill; /* CenterCropOrPad(fill=fill_color) */
        break;
    }
    }
    if (resize && (resized_height != height || resized_width != width)) {
        if ((unsigned)processor->filter > (unsigned)UFORM__SIGNAL_PIL_HAMMING)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                               "%s: unknown PIL resampling filter %d (PIL numbers them 0 .. 5)", name,
                               (int)processor->filter);
        if (processor->filter == UFORM__SIGNAL_PIL_NEAREST)
            return uform__fail(outcome, UFORM_UNSUPPORTED, __func__,
                               "%s: PIL resampling filter NEAREST (0) is not supported", name);
    }
    if (resized_height == 0 || resized_width == 0 || resized_height > limit || resized_width > limit)
        return uform__fail(outcome, UFORM_UNSUPPORTED, __func__,
                           "%s: a %zux%zu picture would be resized to %zux%zu (sides must be 1 .. %zu)", name, height,
                           width, resized_height, resized_width, limit);
    geometry->resize = resize && (resized_height != height || resized_width != width);
    geometry->resized_height = resized_height;
    geometry->resized_width = resized_width;
    geometry->fill = fill;
    if (!crop) {
        geometry->output_height = resized_height;
        geometry->output_width = resized_width;
        return UFORM_OK;
    }
    geometry->output_height = crop_height;
    geometry->output_width = crop_width;
    if (transformers_crop) {
        geometry->crop_top = transformers_offset(resized_height, crop_height);
        geometry->crop_left = transformers_offset(resized_width, crop_width);
    } else {
        geometry->crop_top = torchvision_offset(resized_height, crop_height);
        geometry->crop_left = torchvision_offset(resized_width, crop_width);
    }
    return UFORM_OK;
}

void uform__signal_pil_processor_normalise(const uform__signal_pil_processor_t *processor,
                                           uform__signal_pil_normalise_t *normalise) {
    memset(normalise, 0, sizeof(*normalise));
    const int transformers =
        processor->style == UFORM__SIGNAL_PIL_STYLE_CLIP || processor->style == UFORM__SIGNAL_PIL_STYLE_SIGLIP;
    normalise->arithmetic = transformers ? UFORM__SIGNAL_PIL_TRANSFORMERS : UFORM__SIGNAL_PIL_TORCHVISION;
    normalise->rescale = transformers ? processor->do_rescale : 1;
    normalise->normalise = transformers ? processor->do_normalize : 1;
    normalise->rescale_factor = transformers ? processor->rescale_factor : 1.0 / 255.0;
    memcpy(normalise->mean, processor->mean, sizeof(normalise->mean));
    memcpy(normalise->std, processor->std, sizeof(normalise->std));
}

void uform__signal_pil_pipeline_free(uform__signal_pil_pipeline_t *pipeline) {
    if (!pipeline) return;
    uform__signal_pil_plan_free(&pipeline->plan);
    free(pipeline->window);
    memset(pipeline, 0, sizeof(*pipeline));
}

/* The part [*begin, *end) of [0, size) that [offset, offset + length) covers (empty: begin = end). */
static void overlap(ptrdiff_t offset, size_t length, size_t size, size_t *begin, size_t *end) {
    const ptrdiff_t low = offset < 0 ? 0 : offset, high = offset + (ptrdiff_t)length;
    const ptrdiff_t clipped = high > (ptrdiff_t)size ? (ptrdiff_t)size : high;
    *begin = (size_t)low;
    *end = clipped > low ? (size_t)clipped : (size_t)low;
}

uform_status_t uform__signal_pil_pipeline_init(uform__signal_pil_pipeline_t *pipeline,
                                               const uform__signal_pil_processor_t *processor, size_t height,
                                               size_t width, uform_outcome_t *outcome) {
    if (!pipeline) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "pipeline is NULL");
    memset(pipeline, 0, sizeof(*pipeline));
    uform_status_t status = uform__signal_pil_geometry(processor, height, width, &pipeline->geometry, outcome);
    if (status != UFORM_OK) return status;
    uform__signal_pil_processor_normalise(processor, &pipeline->normalise);
    pipeline->source_height = height;
    pipeline->source_width = width;
    const uform__signal_pil_geometry_t *g = &pipeline->geometry;
    if (!g->resize) return UFORM_OK; /* the crop reads the picture itself */
    size_t top, bottom, left, right;
    overlap(g->crop_top, g->output_height, g->resized_height, &top, &bottom);
    overlap(g->crop_left, g->output_width, g->resized_width, &left, &right);
    if (top == bottom || left == right) return UFORM_OK; /* nothing of the picture is kept: all fill */
    pipeline->window_top = top, pipeline->window_left = left;
    pipeline->window_height = bottom - top, pipeline->window_width = right - left;
    status = uform__signal_pil_plan_init(&pipeline->plan, height, width, g->resized_height, g->resized_width, top, left,
                                         bottom - top, right - left, processor->filter, outcome);
    if (status != UFORM_OK) {
        memset(pipeline, 0, sizeof(*pipeline));
        return status;
    }
    pipeline->window = malloc(pipeline->window_height * pipeline->window_width * 3);
    if (!pipeline->window) {
        const size_t rows = pipeline->window_height, columns = pipeline->window_width;
        uform__signal_pil_pipeline_free(pipeline);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "cannot allocate the resized %zux%zu window", rows,
                           columns);
    }
    return UFORM_OK;
}

uform_status_t uform__signal_pil_pipeline_apply(uform__signal_pil_pipeline_t *pipeline, const uint8_t *pixels,
                                                size_t stride, uform__signal_pil_layout_t layout, size_t patch,
                                                float *out, const uform__signal_pil_kernels_t *kernels,
                                                uform_outcome_t *outcome) {
    if (!pipeline || pipeline->source_height == 0)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "pipeline is NULL or not initialised");
    if (!pixels) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "pixels is NULL");
    const uform__signal_pil_geometry_t *g = &pipeline->geometry;
    if (!g->resize)
        return uform__signal_pil_crop_normalise(pixels, pipeline->source_height, pipeline->source_width, stride,
                                                g->crop_top, g->crop_left, g->output_height, g->output_width, g->fill,
                                                &pipeline->normalise, layout, patch, out, outcome);
    if (!pipeline->window) /* the crop keeps nothing of the resized picture */
        return uform__signal_pil_crop_normalise(NULL, 0, 0, 0, 0, 0, g->output_height, g->output_width, g->fill,
                                                &pipeline->normalise, layout, patch, out, outcome);
    if (stride < pipeline->source_width * 3)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__,
                           "stride %zu bytes is shorter than a row of %zu RGB8 pixels", stride, pipeline->source_width);
    const size_t row_bytes = pipeline->window_width * 3;
    const uform_status_t status =
        uform__signal_pil_plan_apply(&pipeline->plan, pixels, stride, pipeline->window, row_bytes, kernels, outcome);
    if (status != UFORM_OK) return status;
    return uform__signal_pil_crop_normalise(pipeline->window, pipeline->window_height, pipeline->window_width, row_bytes,
                                            g->crop_top - (ptrdiff_t)pipeline->window_top,
                                            g->crop_left - (ptrdiff_t)pipeline->window_left, g->output_height,
                                            g->output_width, g->fill, &pipeline->normalise, layout, patch, out,
                                            outcome);
}
