/*
 * A published text tower's ids (model.h, uform__text_rules_t; docs/checkpoints.md): the folder's
 * tokenizer and the tower's own limit, padding and truncation, as the upstream Python call applies
 * them.
 */
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
