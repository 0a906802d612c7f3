/*
 * A published checkpoint's image processor (src/published/ reads its settings from
 * preprocessor_config.json, open_clip_config.json or UForm 3's config.json), run through the
 * Pillow-exact pipeline of kernels/signal_pil.h (docs/preprocessing.md, "Published checkpoints'
 * preprocessing"). Private to libuform.
 */
#ifndef UFORM_MODEL_PROCESSOR_H
#define UFORM_MODEL_PROCESSOR_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/signal.h"
#include "kernels/signal_pil.h"
#include "uform/uform.h"

/* The processor's picture of `height` × `width` RGB8 pixels (rows packed), as patch rows `target`
 * [(S/p)², 3·p·p] (patch k left to right then top to bottom, each c, y, x) for patches of side
 * `patch`, with the resize kernels of `cpu_class`. Statuses: UFORM_OK; UFORM_OUT_OF_MEMORY;
 * UFORM_INVALID_ARGUMENT for an empty picture. Thread-safe. */
uform_status_t uform__image_processor_patches(const uform__signal_pil_processor_t *processor, const uint8_t *pixels,
                                              size_t height, size_t width, size_t patch, float *target,
                                              uform_cpu_class_t cpu_class, uform_outcome_t *outcome);

#endif
