/*
 * Recall (uform.h, "Data"): uform_recall ranks candidates by dot product in double precision and
 * counts the queries whose best-ranked hit (any candidate of the query's label) is among the first
 * k; uform_evaluate encodes a dataset's held-out pairs and asks it per modality, both ways, with
 * captions as labels (a hit is any item with the query's caption, since captions repeat).
 */
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "data/data.h"

UFORM_API uform_status_t uform_recall(uform_recall_t *request) {
    const char *function = __func__;
    if (!request) return UFORM_INVALID_ARGUMENT;
    memset(request->recall, 0, sizeof request->recall);
    uform_outcome_t *outcome = &request->outcome;
    size_t n = request->queries_count, m = request->candidates_count, E = request->columns;
    if (request->ks_count == 0 || request->ks_count > 8 || !request->ks)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "ks lists %zu cut-offs (1 to 8 are allowed)", request->ks_count);
    for (size_t i = 0; i < request->ks_count; ++i)
        if (request->ks[i] == 0) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "ks[%zu] is 0", i);
    if (E == 0) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "columns is 0");
    if ((n && (!request->queries || !request->query_labels)) || (m && (!request->candidates || !request->candidate_labels)))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s is NULL",
                           n && !request->queries ? "queries" : n && !request->query_labels ? "query_labels"
                           : !request->candidates ? "candidates" : "candidate_labels");
    if (n == 0) return uform__succeed(outcome, function);
    double *scores = malloc((m + 1) * sizeof *scores);
    if (!scores) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate %zu scores", m);
    size_t hits[8] = {0};
    for (size_t q = 0; q < n; ++q) {
        const float *query = request->queries + q * E;
        size_t best = SIZE_MAX;
        for (size_t c = 0; c < m; ++c) {
            const float *candidate = request->candidates + c * E;
            double dot = 0;
            for (size_t k = 0; k < E; ++k) dot += (double)query[k] * (double)candidate[k];
            scores[c] = dot;
            /* The best-ranked hit: the highest-scoring candidate of the query's label, ties by index. */
            if (request->candidate_labels[c] == request->query_labels[q] && (best == SIZE_MAX || dot > scores[best])) best = c;
        }
        if (best == SIZE_MAX) continue; /* no right answer at all: a miss */
        size_t rank = 0;
        for (size_t o = 0; o < m; ++o) rank += scores[o] > scores[best] || (scores[o] == scores[best] && o < best);
        for (size_t i = 0; i < request->ks_count; ++i) hits[i] += rank < request->ks[i];
    }
    free(scores);
    for (size_t i = 0; i < request->ks_count; ++i) request->recall[i] = (double)hits[i] / (double)n;
    return uform__succeed(outcome, function);
}

/* ---- evaluation ---- */

/* Captions to labels: equal captions get equal labels (an open-addressing table over the texts). */
typedef struct labels_t {
    char **texts;
    size_t *lengths;
    uint64_t *hashes, *ids;
    size_t capacity, count;
} labels_t;

static void labels_free(labels_t *labels) {
    for (size_t i = 0; i < labels->capacity; ++i) free(labels->texts ? labels->texts[i] : NULL);
    free(labels->texts), free(labels->lengths), free(labels->hashes), free(labels->ids);
    memset(labels, 0, sizeof *labels);
}

/* The label of a caption (the order in which captions were first seen), or UINT64_MAX without memory. */
static uint64_t label_of(labels_t *labels, const char *text, size_t length) {
    if (2 * (labels->count + 1) > labels->capacity) {
        labels_t grown = {0};
        grown.capacity = labels->capacity ? 2 * labels->capacity : 1024;
        grown.texts = calloc(grown.capacity, sizeof *grown.texts);
        grown.lengths = calloc(grown.capacity, sizeof *grown.lengths);
        grown.hashes = calloc(grown.capacity, sizeof *grown.hashes);
        grown.ids = calloc(grown.capacity, sizeof *grown.ids);
        if (!grown.texts || !grown.lengths || !grown.hashes || !grown.ids) {
            labels_free(&grown);
            return UINT64_MAX;
        }
        for (size_t i = 0; i < labels->capacity; ++i)
            if (labels->texts[i]) {
                size_t at = (size_t)labels->hashes[i] & (grown.capacity - 1);
                while (grown.texts[at]) at = (at + 1) & (grown.capacity - 1);
                grown.texts[at] = labels->texts[i], grown.lengths[at] = labels->lengths[i], grown.hashes[at] = labels->hashes[i];
                grown.ids[at] = labels->ids[i];
                labels->texts[i] = NULL;
            }
        grown.count = labels->count;
        labels_free(labels);
        *labels = grown;
    }
    uint64_t hash = uform__fnv1a64(text, length, UFORM__DATA_HASH_SEED);
    size_t at = (size_t)hash & (labels->capacity - 1);
    while (labels->texts[at]) {
        if (labels->hashes[at] == hash && labels->lengths[at] == length && memcmp(labels->texts[at], text, length) == 0)
            return labels->ids[at];
        at = (at + 1) & (labels->capacity - 1);
    }
    if (!(labels->texts[at] = malloc(length + 1))) return UINT64_MAX;
    memcpy(labels->texts[at], text, length), labels->texts[at][length] = 0;
    labels->lengths[at] = length, labels->hashes[at] = hash, labels->ids[at] = labels->count;
    return labels->count++;
}

/* One modality's held-out pairs as they are encoded. */
typedef struct side_t {
    float *texts, *media;         /* [n, E] */
    uint64_t *labels;             /* [n] */
    size_t count, capacity;
    /* the pending batch */
    unsigned char *text_bytes, *media_bytes;
    size_t *text_offsets, *media_offsets;
    size_t pending, text_used, media_used, pending_capacity, text_capacity, media_capacity;
    char **keys;                  /* the pending media's keys, for errors */
    uint64_t *pending_labels;
} side_t;

static void side_free(side_t *side) {
    for (size_t i = 0; i < side->pending; ++i) free(side->keys[i]);
    free(side->texts), free(side->media), free(side->labels), free(side->text_bytes), free(side->media_bytes);
    free(side->text_offsets), free(side->media_offsets), free(side->keys), free(side->pending_labels);
}

static int grow_bytes(unsigned char **bytes, size_t *capacity, size_t needed) {
    if (needed <= *capacity) return 0;
    size_t wanted = needed * 2 + 4096;
    unsigned char *grown = realloc(*bytes, wanted);
    if (!grown) return -1;
    *bytes = grown, *capacity = wanted;
    return 0;
}

/* Copies the rows of an F32 view into `out`. */
static void copy_rows(const uform_matrix_t *view, float *out, size_t E) {
    for (size_t r = 0; r < view->rows; ++r) {
        const void *row = NULL;
        uform_matrix_row(view, r, &row);
        memcpy(out + r * E, row, E * sizeof(float));
    }
}

typedef struct evaluation_t {
    uform_evaluate_t *request;
    size_t E, encoded, total;
    uform_arena_t prepared_arena;
} evaluation_t;

/* Encodes a side's pending batch and appends its rows. */
static uform_status_t flush(evaluation_t *evaluation, side_t *side, uform_modality_t modality, const char *function) {
    uform_evaluate_t *request = evaluation->request;
    size_t n = side->pending, E = evaluation->E;
    if (!n) return UFORM_OK;
    if (side->count + n > side->capacity) {
        size_t capacity = (side->count + n) * 2;
        float *texts = realloc(side->texts, capacity * E * sizeof(float));
        if (texts) side->texts = texts;
        float *media = realloc(side->media, capacity * E * sizeof(float));
        if (media) side->media = media;
        uint64_t *labels = realloc(side->labels, capacity * sizeof(uint64_t));
        if (labels) side->labels = labels;
        if (!texts || !media || !labels)
            return uform__fail(&request->outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate room for %zu embeddings", capacity);
        side->capacity = capacity;
    }
    uform_text_encode_t text = {0};
    text.model = request->model, text.executor = request->executor, text.arena = request->arena;
    text.texts = (uform_tape_t){side->text_bytes, side->text_offsets, n};
    uform_status_t status = uform_text_encode(&text);
    if (status != UFORM_OK) {
        uform__outcome_copy_text(&request->outcome, &text.outcome);
        return uform__fail(&request->outcome, status, function, "%s", text.outcome.message);
    }
    copy_rows(&text.encoded.embeddings, side->texts + side->count * E, E);
    uform_media_prepare_t prepare = {0};
    prepare.model = request->model, prepare.executor = request->executor, prepare.modality = modality;
    prepare.files = (uform_tape_t){side->media_bytes, side->media_offsets, n};
    prepare.arena = evaluation->prepared_arena;
    status = uform_media_prepare(&prepare);
    if (status != UFORM_OK) {
        uform__outcome_copy_text(&request->outcome, &prepare.outcome);
        return uform__fail(&request->outcome, status, function, "%s", prepare.outcome.message);
    }
    for (size_t i = 0; i < n; ++i)
        if (prepare.prepared.item_outcomes[i].status != UFORM_OK) {
            const uform_outcome_t *item = &prepare.prepared.item_outcomes[i];
            uform__data_error_set(&request->error, uform_outcome_status(item), 0, SIZE_MAX, NULL, side->keys[i], "%s", item->message);
            return uform__fail(&request->outcome, uform_outcome_status(item), function, "'%s': %s", side->keys[i], item->message);
        }
    uform_prepared_encode_t media = {0};
    media.model = request->model, media.executor = request->executor, media.prepared = &prepare.prepared;
    media.arena = request->arena;
    status = uform_prepared_encode(&media);
    if (status != UFORM_OK) {
        uform__outcome_copy_text(&request->outcome, &media.outcome);
        return uform__fail(&request->outcome, status, function, "%s", media.outcome.message);
    }
    copy_rows(&media.encoded.embeddings, side->media + side->count * E, E);
    side->count += n;
    for (size_t i = 0; i < n; ++i) free(side->keys[i]);
    side->pending = side->text_used = side->media_used = 0;
    evaluation->encoded += n;
    if (request->progress.callback &&
        request->progress.callback(evaluation->encoded, evaluation->total, request->progress.state) == UFORM_CANCEL)
        return uform__fail(&request->outcome, UFORM_CANCELLED, function, "cancelled by the progress handler after %zu items",
                           evaluation->encoded);
    return UFORM_OK;
}

static uform_status_t add_pair(side_t *side, const uform_dataset_item_t *item, uint64_t label, size_t batch,
                               uform_outcome_t *outcome, const char *function) {
    if (side->pending == side->pending_capacity) {
        size_t capacity = batch + 1;
        side->text_offsets = realloc(side->text_offsets, (capacity + 1) * sizeof(size_t));
        side->media_offsets = realloc(side->media_offsets, (capacity + 1) * sizeof(size_t));
        side->keys = realloc(side->keys, capacity * sizeof(char *));
        side->pending_labels = realloc(side->pending_labels, capacity * sizeof(uint64_t));
        if (!side->text_offsets || !side->media_offsets || !side->keys || !side->pending_labels)
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a batch's records");
        side->pending_capacity = capacity;
    }
    if (grow_bytes(&side->text_bytes, &side->text_capacity, side->text_used + item->text_length + 1) ||
        grow_bytes(&side->media_bytes, &side->media_capacity, side->media_used + item->size + 1))
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a batch's bytes");
    size_t i = side->pending;
    side->text_offsets[0] = side->media_offsets[0] = 0;
    memcpy(side->text_bytes + side->text_used, item->text, item->text_length);
    side->text_used += item->text_length, side->text_offsets[i + 1] = side->text_used;
    memcpy(side->media_bytes + side->media_used, item->bytes, item->size);
    side->media_used += item->size, side->media_offsets[i + 1] = side->media_used;
    side->keys[i] = strndup(item->key, item->key_length);
    if (!side->keys[i]) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate an item's key");
    side->pending_labels[i] = label; /* into `labels` once the flush has grown it */
    side->pending += 1;
    return UFORM_OK;
}

UFORM_API uform_status_t uform_evaluate(uform_evaluate_t *request) {
    const char *function = __func__;
    if (!request) return UFORM_INVALID_ARGUMENT;
    memset(request->results, 0, sizeof request->results);
    uform__data_error_clear(&request->error);
    uform_outcome_t *outcome = &request->outcome;
    if (!request->model || !request->dataset || !request->arena)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s is NULL",
                           !request->model ? "model" : !request->dataset ? "dataset" : "arena");
    size_t default_ks[2] = {1, 5};
    const size_t *ks = request->ks_count ? request->ks : default_ks;
    size_t ks_count = request->ks_count ? request->ks_count : 2;
    if (ks_count > 8 || !ks) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "ks lists %zu cut-offs (1 to 8)", ks_count);
    uform_model_describe_t describe = {request->model};
    uform_model_describe(&describe);
    size_t batch = request->batch ? request->batch : 32;
    evaluation_t evaluation = {request, describe.description.embedding, 0, 0, NULL};
    uform_dataset_description_t description;
    uform_dataset_describe(request->dataset, &description);
    evaluation.total = description.pairs[1] + description.pairs[2] + description.pairs[3];
    uform_status_t status = uform_arena_for_host(&evaluation.prepared_arena, outcome);
    side_t sides[4];
    memset(sides, 0, sizeof sides);
    labels_t labels = {0};
    uform__dataset_rewind(request->dataset);
    while (status == UFORM_OK) {
        uform_dataset_read_t read = {0};
        read.dataset = request->dataset;
        status = uform_dataset_read(&read);
        if (status != UFORM_OK) {
            request->error = read.error;
            uform__outcome_copy_text(outcome, &read.outcome);
            status = uform__fail(outcome, status, function, "%s", read.outcome.message);
            break;
        }
        if (read.done) break;
        const uform_dataset_item_t *item = &read.item;
        if (!item->text || item->modality == UFORM_MODALITY_TEXT) continue;
        if (!(describe.description.modalities & (1u << item->modality))) continue;
        uint64_t label = label_of(&labels, item->text, item->text_length);
        if (label == UINT64_MAX) {
            status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the table of captions");
            break;
        }
        side_t *side = &sides[item->modality];
        status = add_pair(side, item, label, batch, outcome, function);
        if (status == UFORM_OK && side->pending >= batch) {
            size_t first = side->count, n = side->pending;
            status = flush(&evaluation, side, item->modality, function);
            for (size_t i = 0; status == UFORM_OK && i < n; ++i) side->labels[first + i] = side->pending_labels[i];
        }
    }
    for (int m = 1; m < 4 && status == UFORM_OK; ++m) {
        side_t *side = &sides[m];
        size_t first = side->count, n = side->pending;
        status = flush(&evaluation, side, (uform_modality_t)m, function);
        for (size_t i = 0; status == UFORM_OK && i < n; ++i) side->labels[first + i] = side->pending_labels[i];
        if (status != UFORM_OK || side->count == 0) continue;
        uform_evaluation_t *result = &request->results[m];
        result->pairs = side->count;
        for (int way = 0; way < 2 && status == UFORM_OK; ++way) {
            uform_recall_t recall = {0};
            recall.queries = way ? side->media : side->texts, recall.candidates = way ? side->texts : side->media;
            recall.queries_count = recall.candidates_count = side->count;
            recall.columns = evaluation.E;
            recall.query_labels = recall.candidate_labels = side->labels;
            recall.ks = ks, recall.ks_count = ks_count;
            status = uform_recall(&recall);
            if (status != UFORM_OK) uform__fail(outcome, status, function, "%s", recall.outcome.message);
            memcpy(way ? result->media_to_text : result->text_to_media, recall.recall, sizeof recall.recall);
        }
    }
    uform__dataset_rewind(request->dataset);
    for (int m = 0; m < 4; ++m) side_free(&sides[m]);
    labels_free(&labels);
    uform_arena_free(evaluation.prepared_arena);
    return status == UFORM_OK ? uform__succeed(outcome, function) : status;
}
