/*
 * A published text tower's ids (model.h, uform__text_rules_t; docs/checkpoints.md): the folder's
 * tokenizer and the tower's own limit, padding and truncation, as the upstream Python call applies
 * them.
 */
#include <stdio.h>
#include <string.h>

#include "core/outcome.h"
#include "model/encode.h"
#include "text/sentencepiece.h"
#include "text/tokenizer.h"

uform_status_t uform__published_text_ids(const uform_model_t model, const char *text, size_t length,
                                         uform__text_ids_t *ids, uform_outcome_t *outcome) {
    const uform__text_rules_t *rules = &model->text;
    ids->count = 0;
    uform_status_t status;
    if (rules->sentencepiece) {
        /* SigLIP: transformers' SiglipTokenizer under the processor's padding="max_length". */
        uform__sp_siglip_options_t options;
        uform__sp_siglip_default(&options);
        options.max_length = rules->max_tokens, options.pad = rules->pad;
        return uform__sp_siglip_encode(rules->sentencepiece, text, length, &options, ids, outcome);
    }
    /* UForm 3 slices after tokenising without a limit; the others truncate keeping the specials. */
    status = uform__tokenizer_encode(rules->tokenizer, text, length, rules->slice ? 0 : rules->max_tokens, ids, outcome);
    if (status != UFORM_OK) return status;
    if (rules->slice && ids->count > rules->max_tokens) ids->count = rules->max_tokens;
    while (rules->pad && ids->count < rules->max_tokens)
        if (uform__text_ids_append(ids, rules->pad_id) != 0)
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, "", "cannot allocate %zu token ids", rules->max_tokens);
    return UFORM_OK;
}

UFORM_API uform_status_t uform_text_tokenize(uform_model_t model, const char *text, size_t length, uint32_t *ids,
                                             size_t capacity, size_t *count, uform_outcome_t *outcome) {
    const char *function = __func__;
    if (count) *count = 0;
    if (!model || !count || (!text && length))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s is NULL",
                           !model ? "model" : !count ? "count" : "text");
    uform_model_t tower = uform__model_tower(model, UFORM_MODALITY_TEXT);
    if (!(tower->config.modalities & (1u << UFORM_MODALITY_TEXT)))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "the model has no text tower");
    if (!tower->text.tokenizer && !tower->text.sentencepiece) {
        /* A native checkpoint: [CLS], then the text's first text_bytes bytes. */
        size_t kept = length < tower->config.text_bytes ? length : tower->config.text_bytes;
        *count = kept + 1;
        for (size_t k = 0; ids && k < *count && k < capacity; ++k)
            ids[k] = k == 0 ? UFORM__TEXT_CLS : (uint32_t)(unsigned char)text[k - 1];
        return uform__succeed(outcome, function);
    }
    uform__text_ids_t made;
    memset(&made, 0, sizeof made);
    uform_status_t status = uform__published_text_ids(tower, text ? text : "", length, &made, outcome);
    if (status != UFORM_OK) {
        uform__text_ids_free(&made);
        if (outcome) snprintf(outcome->function, sizeof outcome->function, "%s", function);
        return status;
    }
    *count = made.count;
    for (size_t k = 0; ids && k < made.count && k < capacity; ++k) ids[k] = made.data[k];
    uform__text_ids_free(&made);
    return uform__succeed(outcome, function);
}
