/*
 * Published checkpoints' image preprocessing (processor.h). PROVISIONAL: resizes with the engine's
 * own antialiased bilinear filter until the PIL-exact path (src/kernels/signal_pil.c) lands.
 */
#include <string.h>

#include "core/outcome.h"
#include "model/processor.h"

uform_status_t uform__image_processor_patches(const uform__image_processor_t *processor, const uint8_t *pixels,
                                              size_t height, size_t width, size_t patch, float *target,
                                              const uform__signal_kernels_t *signal, uform_outcome_t *outcome) {
    if (!height || !width) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, "", "the picture is empty");
    uform__signal_resize_plan_t plan;
    memset(&plan, 0, sizeof plan);
    float mean[3], std[3];
    for (int c = 0; c < 3; ++c) {
        mean[c] = processor->mean[c], std[c] = processor->std[c];
    }
    uform_status_t status;
    if (processor->style == UFORM__PROCESSOR_SIGLIP)
        status = uform__signal_resize_plan_init(&plan, height, width, processor->resize_height, processor->resize_width,
                                                0, 0, processor->resize_height, processor->resize_width, outcome);
    else
        status = uform__signal_resize_plan_init_shorter_side(&plan, height, width, processor->crop_height, outcome);
    if (status == UFORM_OK) {
        uform__signal_image_target_t out = {UFORM__SIGNAL_PIXELS_F32_PATCHES_NORMALISED, target, mean, std, patch, 1, 0};
        status = uform__signal_resize_rgb8(&plan, pixels, 3 * width, &out, signal, NULL, outcome);
    }
    uform__signal_resize_plan_free(&plan);
    return status;
}
