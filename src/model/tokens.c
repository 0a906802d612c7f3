/*
 * uform_model_tokens: how many positions a model's tower runs for one item of a modality. Callers
 * that report usage (`uform serve`'s prompt_tokens) ask here instead of re-deriving a count from
 * uform_model_describe's sizes, which cannot know a tower's class and register rows (SigLIP has no
 * class row, UForm 3's large towers add registers). Texts are counted as uform_text_tokenize counts
 * them; media items by the same function that sizes an item's rows for the stems.
 */
#include <stdio.h>
#include <string.h>

#include "core/outcome.h"
#include "model/stems.h"

UFORM_API uform_status_t uform_model_tokens(uform_model_t model, uform_modality_t modality, const void *bytes, size_t size,
                                            size_t *count, uform_outcome_t *outcome) {
    const char *function = __func__;
    if (count) *count = 0;
    if (!model || !count)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s is NULL", !model ? "model" : "count");
    if ((unsigned)modality > UFORM_MODALITY_AUDIO)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "modality %d is not a uform_modality_t (0 to 3)",
                           (int)modality);
    uform_model_t tower = uform__model_tower(model, modality);
    if (!(tower->config.modalities & (1u << modality)))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "the model has no %s tower",
                           uform__modality_name(modality));
    if (modality == UFORM_MODALITY_TEXT) {
        if (!bytes && size)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "bytes is NULL with a size of %zu", size);
        /* The text tower's own count: the tokenizer's ids after the tower's limit, or [CLS] and the
         * kept bytes; its failures (memory only, past the checks above) are reported as ours. */
        uform_status_t status = uform_text_tokenize(model, (const char *)bytes, size, NULL, 0, count, outcome);
        if (outcome) {
            memset(outcome->function, 0, sizeof outcome->function);
            snprintf(outcome->function, sizeof outcome->function, "%s", function);
        }
        return status;
    }
    /* Every media item is resized, sampled or cropped to the tower's fixed input, so its count does
     * not depend on the bytes: they are neither read nor decoded (a file that does not decode is
     * the encode's UFORM_FORMAT, not this count's). */
    *count = uform__stem_media_tokens(tower, modality);
    return uform__succeed(outcome, function);
}
