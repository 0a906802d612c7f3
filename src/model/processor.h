/*
 * How a published checkpoint's processor turns a picture into the tower's input (src/published/
 * reads it from preprocessor_config.json, open_clip_config.json or UForm 3's config.json;
 * docs/preprocessing.md, "Published checkpoints' preprocessing"). Private to libuform.
 */
#ifndef UFORM_MODEL_PROCESSOR_H
#define UFORM_MODEL_PROCESSOR_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/signal.h"
#include "uform/uform.h"

typedef enum uform__processor_style_t {
    UFORM__PROCESSOR_CLIP = 0,        /* transformers' CLIPImageProcessor: shortest edge, floor-centred crop */
    UFORM__PROCESSOR_SIGLIP = 1,      /* SiglipImageProcessor: both sides resized, no crop */
    UFORM__PROCESSOR_TORCHVISION = 2  /* torchvision Resize + CenterCrop on PIL pictures (OpenCLIP, UForm 3):
                                       * the crop offset rounds half to even */
} uform__processor_style_t;

typedef struct uform__image_processor_t {
    uform__processor_style_t style;
    int resample;                  /* PIL's filter number: 2 bilinear, 3 bicubic */
    int do_resize, do_crop, do_rescale, do_normalize;
    size_t shortest_edge;          /* CLIP and torchvision styles */
    size_t resize_height, resize_width; /* SigLIP style */
    size_t crop_height, crop_width;
    double rescale;                /* 1/255 */
    float mean[3], std[3];
} uform__image_processor_t;

/* The processor's picture of `height` × `width` RGB8 pixels (rows packed), as patch rows `target`
 * [(S/p)², 3·p·p] (patch k left to right then top to bottom, each c, y, x) for patches of side
 * `patch`. Statuses: UFORM_OK; UFORM_OUT_OF_MEMORY; UFORM_INVALID_ARGUMENT for an empty picture.
 * Thread-safe. */
uform_status_t uform__image_processor_patches(const uform__image_processor_t *processor, const uint8_t *pixels,
                                              size_t height, size_t width, size_t patch, float *target,
                                              const uform__signal_kernels_t *signal, uform_outcome_t *outcome);

#endif
