/*
 * Published checkpoints' image preprocessing (processor.h): the Python processor's geometry for the
 * picture's size, Pillow's resize of the part the crop keeps, then the crop, rescale and
 * normalisation straight into patch rows (kernels/signal_pil.h).
 */
#include <string.h>

#include "core/outcome.h"
#include "model/processor.h"

uform_status_t uform__image_processor_patches(const uform__signal_pil_processor_t *processor, const uint8_t *pixels,
                                              size_t height, size_t width, size_t patch, float *target,
                                              uform_cpu_class_t cpu_class, uform_outcome_t *outcome) {
    if (!height || !width) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, "", "the picture is empty");
    uform__signal_pil_pipeline_t pipeline;
    memset(&pipeline, 0, sizeof pipeline);
    uform_status_t status = uform__signal_pil_pipeline_init(&pipeline, processor, height, width, outcome);
    if (status == UFORM_OK)
        status = uform__signal_pil_pipeline_apply(&pipeline, pixels, 3 * width, UFORM__SIGNAL_PIL_PATCHES, patch, target,
                                                  uform__signal_pil_kernels(cpu_class), outcome);
    uform__signal_pil_pipeline_free(&pipeline);
    return status;
}
