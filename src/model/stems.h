/* The stems: items to token rows (stems.c). Private to libuform. */
#ifndef UFORM_MODEL_STEMS_H
#define UFORM_MODEL_STEMS_H

#include "model/encode.h"

/* Tokens of item `item` of the job, [CLS] (and [NEXT] for text_choose) included. */
size_t uform__stem_item_tokens(const uform__encode_job_t *job, size_t item);

/* Rows a media item has besides its patch rows (class and register rows): 1 for a native model. */
size_t uform__stem_extra_rows(const uform_model_t model, uform_modality_t modality);

/* Patch rows of one media item (the rows uform__stem_decode_item writes). */
size_t uform__stem_patch_rows(const uform_model_t model, uform_modality_t modality);

/* Positions one media item runs through `model`'s trunk (`model` the modality's tower): its patch
 * rows and its class and register rows. The one count the stems size an item's rows by, and the
 * one uform_model_tokens answers (tokens.c), so the two cannot differ. */
size_t uform__stem_media_tokens(const uform_model_t model, uform_modality_t modality);

/* Values per patch row of a media modality (3·p·p, 3·t·p·p, 4·M); 0 for text. */
size_t uform__stem_patch_width(const uform__model_config_t *config, uform_modality_t modality);

/* Decodes and preprocesses media item `item` of the job (any media source) into its patch rows
 * `target` [tokens − 1, patch_width] (docs/preprocessing.md). Failures are written to `outcome` with an
 * empty function name and no item prefix (the caller adds them). Thread-safe for distinct targets. */
uform_status_t uform__stem_decode_item(const uform__encode_job_t *job, size_t item, float *target,
                                      const uform__signal_kernels_t *signal, uform_outcome_t *outcome);

/*
 * Fills x [T, d] with the stem rows of items first .. first+count, item i at chunk-relative token
 * offsets[i]. `patches` holds [T − count, patch_width] floats of scratch and `projected`
 * [T − count, d] (media only). Media failures name the item ("images[3]: ...").
 */
uform_status_t uform__stems_forward(const uform__encode_job_t *job, uform__compute_t *compute, size_t first,
                                    size_t count, const size_t *offsets, float *x, float *patches, float *projected,
                                    uform__call_context_t *context, double *decode_seconds);

#endif
