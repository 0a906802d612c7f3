/*
 * Validation and planning of a training batch (batch.h).
 */
#include "train/batch.h"

#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "core/tape.h"
#include "model/stems.h"

/* Bags given (bags non-NULL, or a count): bag_count 0 with bags = {0} is a batch without bags, whose
 * contents enter only the choice loss (a mesh member whose share holds only choice examples). */
static int explicit_bags(const uform_trainer_step_t *request) { return request->bag_count || request->bags; }

static size_t bag_count_of(const uform_trainer_step_t *request) {
    return explicit_bags(request) ? request->bag_count : request->contents.count;
}

uform_status_t uform__train_batch_check(uform_trainer_t trainer, const uform_trainer_step_t *request,
                                        uform_outcome_t *outcome, const char *function) {
    const uform__model_config_t *config = &trainer->config;
    if (!request->arena)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "arena is NULL: the bag embeddings land in an arena (uform_arena_for_executor)");
    if (!(request->learning_rate_override >= 0) || request->learning_rate_override > 10)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "learning_rate_override = %g is not in [0, 10] (0 follows the schedule)",
                           request->learning_rate_override);
    if ((unsigned)request->outputs_scalar > UFORM_SCALAR_B1)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "outputs_scalar %d is not a uform_scalar_kind_t",
                           (int)request->outputs_scalar);
    uform_status_t status = uform__tape_check(&request->contents, "contents", outcome, function);
    if (status != UFORM_OK) return status;
    size_t n = request->contents.count;
    if (n == 0) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "contents is empty: a step needs a batch");
    if (!request->modalities) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "modalities is NULL");
    for (size_t i = 0; i < n; ++i) {
        unsigned m = (unsigned)request->modalities[i];
        if (m > UFORM_MODALITY_AUDIO)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "modalities[%zu] = %u is not a uform_modality_t",
                               i, m);
        if (!(config->modalities & (1u << m)))
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "modalities[%zu] is %s, which the model does not have", i,
                               uform__modality_name((uform_modality_t)m));
    }
    /* Bags. */
    size_t b = bag_count_of(request);
    if (explicit_bags(request)) {
        const size_t *bags = request->bags;
        if (!bags) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "bags is NULL but bag_count is %zu", b);
        if (bags[0] != 0)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "bags[0] = %zu, but the first bag starts at content 0",
                               bags[0]);
        for (size_t j = 0; j < b; ++j)
            if (bags[j + 1] <= bags[j])
                return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                                   "bags[%zu] = %zu is not above bags[%zu] = %zu: bag %zu has no contents", j + 1,
                                   bags[j + 1], j, bags[j], j);
        if (bags[b] > n)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "bags[%zu] = %zu is beyond the %zu contents", b, bags[b], n);
    }
    if (request->sides)
        for (size_t j = 0; j < b; ++j)
            if (request->sides[j] > 1)
                return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "sides[%zu] = %u is neither 0 nor 1", j,
                                   request->sides[j]);
    /* Relations. */
    const uform_relations_t *relations = &request->relations;
    if (relations->count && (!relations->lefts || !relations->rights))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "relations.%s is NULL but relations.count is %zu",
                           !relations->lefts ? "lefts" : "rights", relations->count);
    for (size_t r = 0; r < relations->count; ++r) {
        size_t l = relations->lefts[r], q = relations->rights[r];
        if (l >= b || q >= b)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "relations.%s[%zu] = %zu is not a bag (the batch has %zu)", l >= b ? "lefts" : "rights", r,
                               l >= b ? l : q, b);
        if (l == q)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "relations[%zu] relates bag %zu with itself", r, l);
        if (request->sides && request->sides[l] == request->sides[q])
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "relations[%zu] relates bags %zu and %zu, both on side %u (a relation joins opposite sides)",
                               r, l, q, request->sides[l]);
        if (relations->groups && relations->groups[r] >= config->temperature_groups)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "relations.groups[%zu] = %zu, but the model has %zu temperature groups", r,
                               relations->groups[r], config->temperature_groups);
    }
    /* Media decoded ahead: prepared[m] holds every content of modality m, in content order. */
    for (int m = 0; m < 4; ++m) {
        const uform_prepared_t *prepared = request->prepared[m];
        if (!prepared) continue;
        size_t count = 0;
        for (size_t i = 0; i < n; ++i) count += request->modalities[i] == (uform_modality_t)m;
        const char *name = uform__modality_name((uform_modality_t)m);
        if (m == UFORM_MODALITY_TEXT || prepared->modality != (uform_modality_t)m)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "prepared[%d] holds %s items, not %s media", m,
                               uform__modality_name(prepared->modality), name);
        if (prepared->count != count || prepared->failed)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "prepared[%d] holds %zu items (%zu failed), but the batch has %zu %s contents", m,
                               prepared->count, prepared->failed, count, name);
        size_t tokens = m == UFORM_MODALITY_IMAGE   ? uform__model_image_tokens(config)
                        : m == UFORM_MODALITY_VIDEO ? uform__model_video_tokens(config)
                                                    : uform__model_audio_tokens(config);
        size_t per_item = tokens - 1, width = uform__stem_patch_width(config, (uform_modality_t)m);
        if (count && (uform_matrix_check(&prepared->rows) != UFORM_OK || prepared->rows_per_item != per_item ||
                      prepared->rows.columns != width || prepared->rows.rows != count * per_item ||
                      prepared->rows.scalar != UFORM_SCALAR_F32 || !prepared->item_outcomes))
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                               "prepared[%d] is stale or was made for another geometry (%zu rows of %zu per item; the "
                               "trainer's %s stem takes %zu rows of %zu)",
                               m, prepared->rows_per_item, prepared->rows.columns, name, per_item, width);
    }
    /* Choices. */
    if (request->choices.count) {
        status = uform__tape_check(&request->choices, "choices", outcome, function);
        if (status != UFORM_OK) return status;
        if (request->choices.count != n)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "choices lists %zu entries for %zu contents",
                               request->choices.count, n);
        if (!request->choice_targets)
            return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "choice_targets is NULL but choices are given");
        for (size_t i = 0; i < n; ++i) {
            size_t length;
            const unsigned char *legal = uform__tape_item(&request->choices, i, &length);
            if (length == 0) continue;
            if (request->modalities[i] != UFORM_MODALITY_TEXT)
                return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                                   "choices[%zu] lists legal bytes, but content %zu is %s (choices need text)", i, i,
                                   uform__modality_name(request->modalities[i]));
            unsigned char seen[256] = {0};
            int found = 0;
            for (size_t c = 0; c < length; ++c) {
                if (seen[legal[c]])
                    return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "choices[%zu] lists byte %u twice", i,
                                       legal[c]);
                seen[legal[c]] = 1;
                found |= legal[c] == request->choice_targets[i];
            }
            if (!found)
                return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                                   "choice_targets[%zu] = %u is not among the %zu legal bytes of choices[%zu]", i,
                                   request->choice_targets[i], length, i);
        }
    }
    return UFORM_OK;
}

void uform__train_batch_free(uform__batch_plan_t *plan) {
    free(plan->sequence), free(plan->token_offsets), free(plan->bag_offsets), free(plan->bag_members);
    free(plan->sides), free(plan->text_ids), free(plan->position_ids), free(plan->time_ids), free(plan->keep);
    memset(plan, 0, sizeof *plan);
}

static size_t text_tokens(const uform__model_config_t *config, size_t length, int choose) {
    if (length > config->text_bytes) length = config->text_bytes;
    return 1 + length + (choose != 0);
}

uform_status_t uform__train_batch_plan(uform_trainer_t trainer, const uform_trainer_step_t *request,
                                       uform__batch_plan_t *plan, uform_outcome_t *outcome, const char *function) {
    const uform__model_config_t *config = &trainer->config;
    memset(plan, 0, sizeof *plan);
    size_t n = request->contents.count, b = bag_count_of(request);
    size_t in_bags = explicit_bags(request) ? request->bags[b] : n;
    size_t choices = 0;
    for (size_t i = 0; request->choices.count && i < n; ++i)
        choices += request->choices.offsets[i + 1] > request->choices.offsets[i];
    plan->contents = n, plan->bags = b, plan->embeddings = in_bags, plan->choices = choices;
    plan->sequences = in_bags + choices;
    plan->relations = request->relations.count;
    plan->lefts = request->relations.lefts, plan->rights = request->relations.rights;
    plan->groups = request->relations.groups;
    plan->choice_tape = request->choices.count ? &request->choices : NULL;
    plan->targets = request->choice_targets;
    plan->have_sides = request->sides != NULL;
    size_t s_count = plan->sequences;
    plan->sequence = calloc(s_count + 1, sizeof *plan->sequence);
    plan->token_offsets = calloc(s_count + 1, sizeof *plan->token_offsets);
    plan->bag_offsets = calloc(b + 1, sizeof *plan->bag_offsets);
    plan->bag_members = calloc(in_bags + 1, sizeof *plan->bag_members);
    plan->sides = calloc(b + 1, 1);
    plan->keep = calloc(s_count + 1, sizeof *plan->keep);
    if (!plan->sequence || !plan->token_offsets || !plan->bag_offsets || !plan->bag_members || !plan->sides ||
        !plan->keep) {
        uform__train_batch_free(plan);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the plan of %zu sequences", s_count);
    }
    if (request->sides) memcpy(plan->sides, request->sides, b);
    /* Which bag each content belongs to (one walk over the bags), and its embedding sequence. */
    size_t *bag_of = calloc(in_bags + 1, sizeof *bag_of), *sequence_of = calloc(in_bags + 1, sizeof *sequence_of);
    if (!bag_of || !sequence_of) {
        free(bag_of), free(sequence_of);
        uform__train_batch_free(plan);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the plan of %zu sequences", s_count);
    }
    int given = explicit_bags(request);
    for (size_t j = 0; j < b; ++j)
        for (size_t i = given ? request->bags[j] : j; i < (given ? request->bags[j + 1] : j + 1); ++i) bag_of[i] = j;
    size_t s = 0;
    for (int m = 0; m < 4; ++m) {
        plan->modality_first[m] = s;
        for (size_t i = 0; i < in_bags; ++i) {
            if ((int)request->modalities[i] != m) continue;
            sequence_of[i] = s;
            uform__sequence_t *sequence = &plan->sequence[s++];
            sequence->content = i, sequence->modality = (uform_modality_t)m;
            sequence->bag = bag_of[i];
        }
        plan->modality_count[m] = s - plan->modality_first[m];
    }
    for (size_t i = 0; plan->choice_tape && i < n; ++i) {
        if (request->choices.offsets[i + 1] == request->choices.offsets[i]) continue;
        uform__sequence_t *sequence = &plan->sequence[s++];
        sequence->content = i, sequence->modality = UFORM_MODALITY_TEXT, sequence->choose = 1;
        sequence->bag = SIZE_MAX;
    }
    /* Tokens, patches and the row each sequence's loss reads. */
    size_t patches[4] = {0};
    for (s = 0; s < s_count; ++s) {
        uform__sequence_t *sequence = &plan->sequence[s];
        size_t tokens;
        switch (sequence->modality) {
        case UFORM_MODALITY_TEXT:
            tokens = text_tokens(config, request->contents.offsets[sequence->content + 1] -
                                             request->contents.offsets[sequence->content],
                                 sequence->choose);
            break;
        case UFORM_MODALITY_IMAGE: tokens = uform__model_image_tokens(config); break;
        case UFORM_MODALITY_VIDEO: tokens = uform__model_video_tokens(config); break;
        default: tokens = uform__model_audio_tokens(config); break;
        }
        sequence->first_token = plan->token_offsets[s];
        sequence->tokens = tokens;
        plan->token_offsets[s + 1] = plan->token_offsets[s] + tokens;
        plan->keep[s] = sequence->first_token + (sequence->choose ? tokens - 1 : 0);
        if (sequence->modality != UFORM_MODALITY_TEXT) {
            sequence->first_patch = patches[sequence->modality];
            patches[sequence->modality] += tokens - 1;
        }
    }
    plan->tokens = plan->token_offsets[s_count];
    memcpy(plan->patch_rows, patches, sizeof patches);
    /* Bags' members, in bag order then content order. */
    for (s = 0; s < in_bags; ++s) plan->bag_offsets[plan->sequence[s].bag + 1] += 1;
    for (size_t j = 0; j < b; ++j) plan->bag_offsets[j + 1] += plan->bag_offsets[j];
    size_t *fill = calloc(b + 1, sizeof *fill);
    plan->text_ids = calloc(plan->tokens + 1, sizeof *plan->text_ids);
    plan->position_ids = calloc(plan->tokens + 1, sizeof *plan->position_ids);
    plan->time_ids = calloc(patches[UFORM_MODALITY_VIDEO] + 1, sizeof *plan->time_ids);
    if (!fill || !plan->text_ids || !plan->position_ids || !plan->time_ids) {
        free(fill), free(bag_of), free(sequence_of);
        uform__train_batch_free(plan);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the ids of %zu tokens", plan->tokens);
    }
    /* Members sorted by content within each bag: walk contents in order. */
    for (size_t i = 0; i < in_bags; ++i) {
        size_t j = bag_of[i];
        plan->bag_members[plan->bag_offsets[j] + fill[j]++] = sequence_of[i];
    }
    free(fill), free(bag_of), free(sequence_of);
    /* Token ids: text bytes (encoding keeps the first bytes, text_choose the last) and positions. */
    size_t side = config->video_patch ? config->video_size / config->video_patch : 0; /* 0 without video */
    size_t per_time = side ? side * side : 1;
    for (s = 0; s < s_count; ++s) {
        const uform__sequence_t *sequence = &plan->sequence[s];
        size_t first = sequence->first_token, tokens = sequence->tokens;
        for (size_t k = 0; k < tokens; ++k) {
            if (sequence->modality == UFORM_MODALITY_VIDEO) {
                plan->position_ids[first + k] = (uint32_t)(k == 0 ? 0 : (k - 1) % per_time + 1);
                if (k) plan->time_ids[sequence->first_patch + k - 1] = (uint32_t)((k - 1) / per_time);
            } else {
                plan->position_ids[first + k] = (uint32_t)k;
            }
        }
        if (sequence->modality != UFORM_MODALITY_TEXT) continue;
        size_t length;
        const unsigned char *bytes = uform__tape_item(&request->contents, sequence->content, &length);
        size_t kept = tokens - 1 - (size_t)sequence->choose;
        if (sequence->choose && length > kept) bytes += length - kept;
        plan->text_ids[first] = UFORM__TEXT_CLS;
        for (size_t k = 0; k < kept; ++k) plan->text_ids[first + 1 + k] = bytes[k];
        if (sequence->choose) plan->text_ids[first + tokens - 1] = UFORM__TEXT_NEXT;
    }
    return UFORM_OK;
}
