/*
 * The sampler of shards: one partition of the stream (docs/data.md, "Shuffling and partitions").
 *
 * Epoch e's shard order is a Fisher–Yates shuffle of the list from (seed, e), the same for every
 * partition; partition p of P reads the shards at positions p, p + P, ... of it, or, with fewer
 * shards than partitions, every shard, keeping the samples whose position in the epoch's stream is
 * p modulo P. Samples pass through a shuffle buffer: it is filled to capacity, then each draw takes
 * a random slot (the random state seeded from (seed, p)) and refills that slot from the stream; at
 * the end of the epoch's shards the buffer drains, so every sample is drawn exactly once per epoch.
 * A sequential dataset has no shuffling at all: shards and samples in stored order, one pass.
 * A sample is usable when it has a text and one medium; others are bad (listed with skip_bad).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "data/data.h"

/* The salt of the shard order's seed (data.h, uform__data_epoch_order), fixed by every cursor written. */
#define SHARD_ORDER_SALT 0x8CB92BA72F3D8DD7ull

/* This epoch's shard sequence of the partition. */
static uform_status_t begin_epoch(uform__stream_t *stream) {
    const struct uform_dataset_s *dataset = stream->dataset;
    size_t n = dataset->items.shard_count;
    size_t *order = malloc((n + 1) * sizeof *order);
    if (!order) return UFORM_OUT_OF_MEMORY;
    uform__data_epoch_order(order, n, dataset->options.seed, SHARD_ORDER_SALT, stream->epoch, dataset->options.sequential);
    stream->by_sample = n < stream->partitions;
    stream->sequence_count = 0;
    for (size_t j = 0; j < n; ++j)
        if (stream->by_sample || j % stream->partitions == stream->partition) stream->sequence[stream->sequence_count++] = order[j];
    free(order);
    stream->at = 0, stream->counter = 0, stream->exhausted = 0, stream->epoch_samples = 0;
    return UFORM_OK;
}

uform_status_t uform__stream_init(uform__stream_t *stream, const struct uform_dataset_s *dataset, size_t partition,
                                  size_t partitions, uform__data_bad_fn on_bad, void *bad_context) {
    memset(stream, 0, sizeof *stream);
    stream->dataset = dataset, stream->partition = partition, stream->partitions = partitions ? partitions : 1;
    stream->on_bad = on_bad, stream->bad_context = bad_context;
    stream->rng = dataset->options.seed ^ (0x9E6C63D0676A9A99ull * (partition + 1));
    stream->buffer_capacity = dataset->options.sequential ? 1 : dataset->options.shuffle_buffer;
    stream->buffer = calloc(stream->buffer_capacity + 1, sizeof *stream->buffer);
    stream->sequence = malloc((dataset->items.shard_count + 1) * sizeof *stream->sequence);
    if (!stream->buffer || !stream->sequence || begin_epoch(stream) != UFORM_OK) {
        uform__stream_free(stream);
        return UFORM_OUT_OF_MEMORY;
    }
    return UFORM_OK;
}

void uform__stream_free(uform__stream_t *stream) {
    if (stream->reading) uform__shard_close(&stream->reader);
    for (size_t i = 0; stream->buffer && i < stream->buffer_count; ++i) uform__shard_sample_free(&stream->buffer[i]);
    free(stream->buffer), free(stream->sequence);
    memset(stream, 0, sizeof *stream);
}

/* Records a bad sample or shard: listed with skip_bad (answers 0), else the failure (answers -1). */
static int bad(uform__stream_t *stream, uform_status_t status, size_t shard, const char *key, const char *message,
               uform_data_error_t *error, uform_outcome_t *outcome, const char *function) {
    const struct uform_dataset_s *dataset = stream->dataset;
    uform_data_error_t found;
    uform__data_error_set(&found, status, 0, shard, dataset->items.shards[shard], key, "%s", message);
    if (dataset->options.skip_bad && status != UFORM_OUT_OF_MEMORY) {
        if (stream->on_bad) stream->on_bad(stream->bad_context, &found);
        return 0;
    }
    if (error) *error = found;
    char place[1200];
    uform__data_error_place(&found, place, sizeof place);
    uform__fail(outcome, status, function, "%s: %s", place, message);
    return -1;
}

/* The next usable sample of the stream; 1, 0 when this epoch's shards are read, -1 on failure. */
static int next_from_stream(uform__stream_t *stream, uform__shard_sample_t *sample, uform_data_error_t *error,
                            uform_outcome_t *outcome, const char *function) {
    const struct uform_dataset_s *dataset = stream->dataset;
    for (;;) {
        if (!stream->reading) {
            if (stream->at >= stream->sequence_count) {
                stream->exhausted = 1;
                return 0;
            }
            size_t shard = stream->sequence[stream->at];
            uform_outcome_t opened = {0};
            if (uform__shard_open(&stream->reader, dataset->items.shards[shard], shard, dataset->options.max_sample_bytes, &opened,
                                  function) != UFORM_OK) {
                stream->at += 1;
                if (bad(stream, uform_outcome_status(&opened), shard, NULL, opened.message, error, outcome, function)) return -1;
                continue;
            }
            stream->reading = 1;
        }
        uint64_t bytes_before = stream->reader.bytes_read;
        double seconds_before = stream->reader.seconds;
        int got = uform__shard_next(&stream->reader, 1, sample);
        stream->bytes_read += stream->reader.bytes_read - bytes_before;
        stream->read_seconds += stream->reader.seconds - seconds_before;
        if (got <= 0) {
            uform_status_t broken = stream->reader.broken;
            size_t shard = stream->reader.shard;
            char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
            snprintf(message, sizeof message, "%s", stream->reader.message);
            uform__shard_close(&stream->reader);
            stream->reading = 0, stream->at += 1;
            if (got < 0 && bad(stream, broken, shard, NULL, message, error, outcome, function)) return -1;
            continue;
        }
        size_t position = stream->counter++;
        if (stream->by_sample && position % stream->partitions != stream->partition) {
            uform__shard_sample_free(sample);
            continue;
        }
        const char *problem = sample->status != UFORM_OK ? sample->message
                              : sample->modality < 0     ? "no medium: a training sample needs a text and one image, video or recording"
                              : !sample->text            ? "no text: no .txt member and no .json \"caption\" or \"text\""
                                                         : NULL;
        if (problem) {
            uform_status_t status = sample->status != UFORM_OK ? sample->status : UFORM_FORMAT;
            int failed = bad(stream, status, sample->shard, sample->key, problem ? problem : "bad sample", error, outcome, function);
            uform__shard_sample_free(sample);
            if (failed) return -1;
            continue;
        }
        stream->epoch_samples += 1;
        return 1;
    }
}

static int same_text(const uform__shard_sample_t *a, const uform__shard_sample_t *b) {
    return a->text_hash == b->text_hash && a->text_length == b->text_length && memcmp(a->text, b->text, a->text_length) == 0;
}

static int twin_of(const uform__shard_sample_t *candidate, uform__shard_sample_t *const *picked, size_t count) {
    for (size_t i = 0; i < count; ++i)
        if (same_text(candidate, picked[i])) return 1;
    return 0;
}

int uform__stream_draw(uform__stream_t *stream, uform__shard_sample_t *const *picked, size_t count,
                       uform__shard_sample_t *sample, int *twins, uform_data_error_t *error, uform_outcome_t *outcome,
                       const char *function) {
    const struct uform_dataset_s *dataset = stream->dataset;
    for (int epochs = 0;; ++epochs) {
        while (stream->buffer_count < stream->buffer_capacity && !stream->exhausted) {
            int got = next_from_stream(stream, &stream->buffer[stream->buffer_count], error, outcome, function);
            if (got < 0) return -1;
            if (got == 1) stream->buffer_count += 1;
        }
        if (stream->buffer_count) break;
        /* The epoch is over: the buffer has drained. */
        if (dataset->options.sequential) return 0;
        if (stream->epoch_samples == 0 || epochs > 0) {
            uform__data_error_set(error, UFORM_FORMAT, 0, SIZE_MAX, dataset->items.shards[0], NULL,
                                  "partition %zu of %zu holds no usable sample", stream->partition, stream->partitions);
            uform__fail(outcome, UFORM_FORMAT, function, "partition %zu of %zu of the %zu shards holds no usable sample",
                        stream->partition, stream->partitions, dataset->items.shard_count);
            return -1;
        }
        stream->epoch += 1;
        if (begin_epoch(stream) != UFORM_OK) {
            uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the shard order of epoch %llu",
                        (unsigned long long)stream->epoch);
            return -1;
        }
    }
    size_t slot = 0, size = stream->buffer_count;
    if (size > 1) {
        slot = (size_t)(uform__splitmix64(&stream->rng) % size);
        /* Another slot while the chosen one is the text twin of a sample of the batch. */
        for (int attempt = 0; attempt < 8 && twin_of(&stream->buffer[slot], picked, count); ++attempt)
            slot = (size_t)(uform__splitmix64(&stream->rng) % size);
    }
    if (twin_of(&stream->buffer[slot], picked, count)) *twins = 1;
    *sample = stream->buffer[slot];
    memset(&stream->buffer[slot], 0, sizeof stream->buffer[slot]);
    int got = stream->exhausted ? 0 : next_from_stream(stream, &stream->buffer[slot], error, outcome, function);
    if (got < 0) {
        uform__shard_sample_free(sample);
        return -1;
    }
    if (got == 0) {
        stream->buffer[slot] = stream->buffer[stream->buffer_count - 1];
        memset(&stream->buffer[stream->buffer_count - 1], 0, sizeof stream->buffer[0]);
        stream->buffer_count -= 1;
    }
    return 1;
}

void uform__stream_state(const uform__stream_t *stream, uform__stream_state_t *state) {
    memset(state, 0, sizeof *state);
    state->epoch = stream->epoch, state->rng = stream->rng;
    state->at = stream->at, state->counter = stream->counter, state->epoch_samples = stream->epoch_samples;
    state->reading = stream->reading, state->exhausted = stream->exhausted;
    state->ordinal = stream->reading ? stream->reader.next_ordinal : 0;
}

/* Reads sample `ordinal` of `shard` into `sample` (the ones before passed over, headers only). */
static uform_status_t read_again(const struct uform_dataset_s *dataset, uform__shard_reader_t *reader, size_t *open_shard,
                                 size_t shard, size_t ordinal, uform__shard_sample_t *sample, uform_outcome_t *outcome,
                                 const char *function) {
    if (*open_shard != shard || reader->next_ordinal > ordinal) {
        if (*open_shard != SIZE_MAX) uform__shard_close(reader);
        *open_shard = SIZE_MAX;
        uform_status_t status =
            uform__shard_open(reader, dataset->items.shards[shard], shard, dataset->options.max_sample_bytes, outcome, function);
        if (status != UFORM_OK) return status;
        *open_shard = shard;
    }
    for (;;) {
        int wanted = reader->next_ordinal == ordinal;
        int got = uform__shard_next(reader, wanted, sample);
        if (got < 0 && reader->broken == UFORM_OUT_OF_MEMORY) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "%s", reader->message);
        if (got <= 0)
            return uform__fail(outcome, got < 0 ? reader->broken : UFORM_FORMAT, function,
                               "the cursor names sample %zu of shard '%s', which %s", ordinal, dataset->items.shards[shard],
                               got < 0 ? reader->message : "does not hold it");
        if (wanted) return UFORM_OK;
        uform__shard_sample_free(sample);
    }
}

typedef struct entry_t {
    size_t shard, ordinal, slot;
} entry_t;

static int compare_entries(const void *left, const void *right) {
    const entry_t *a = left, *b = right;
    if (a->shard != b->shard) return a->shard < b->shard ? -1 : 1;
    return a->ordinal < b->ordinal ? -1 : a->ordinal > b->ordinal;
}

uform_status_t uform__stream_restore(uform__stream_t *stream, const uform__stream_state_t *state, const size_t *entries,
                                     size_t entry_count, uform_outcome_t *outcome, const char *function) {
    const struct uform_dataset_s *dataset = stream->dataset;
    if (entry_count > stream->buffer_capacity)
        return uform__fail(outcome, UFORM_CONFIG_MISMATCH, function,
                           "the cursor holds %zu buffered samples, more than this dataset's shuffle buffer of %zu",
                           entry_count, stream->buffer_capacity);
    stream->epoch = state->epoch;
    if (begin_epoch(stream) != UFORM_OK) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the shard order");
    /* At the end of the sequence only once every shard was read: a shard being read is one of it. */
    if (state->at > stream->sequence_count || (state->reading && state->at >= stream->sequence_count))
        return uform__fail(outcome, UFORM_CONFIG_MISMATCH, function, "the cursor %s shard %zu of %zu",
                           state->reading ? "reads" : "is at", state->at, stream->sequence_count);
    stream->rng = state->rng, stream->at = state->at, stream->counter = state->counter;
    stream->epoch_samples = state->epoch_samples, stream->exhausted = state->exhausted;
    entry_t *sorted = malloc((entry_count + 1) * sizeof *sorted);
    if (!sorted) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the shuffle buffer's restoring");
    for (size_t i = 0; i < entry_count; ++i) {
        sorted[i] = (entry_t){entries[2 * i], entries[2 * i + 1], i};
        if (sorted[i].shard >= dataset->items.shard_count) {
            size_t named = sorted[i].shard;
            free(sorted);
            return uform__fail(outcome, UFORM_CONFIG_MISMATCH, function, "the cursor names shard %zu of %zu", named,
                               dataset->items.shard_count);
        }
    }
    qsort(sorted, entry_count, sizeof *sorted, compare_entries);
    uform__shard_reader_t reader;
    memset(&reader, 0, sizeof reader);
    size_t open_shard = SIZE_MAX;
    uform_status_t status = UFORM_OK;
    for (size_t i = 0; status == UFORM_OK && i < entry_count; ++i) {
        status = read_again(dataset, &reader, &open_shard, sorted[i].shard, sorted[i].ordinal, &stream->buffer[sorted[i].slot],
                            outcome, function);
    }
    /* Slot i holds the i-th entry of the cursor, filled in the shards' order: on a failure the
     * filled slots are scattered, so all are freed (a slot never filled is all zeros). */
    if (status == UFORM_OK) stream->buffer_count = entry_count;
    else
        for (size_t i = 0; i < entry_count; ++i) uform__shard_sample_free(&stream->buffer[i]);
    if (open_shard != SIZE_MAX) uform__shard_close(&reader);
    free(sorted);
    if (status == UFORM_OK && state->reading) {
        size_t shard = stream->sequence[stream->at];
        status = uform__shard_open(&stream->reader, dataset->items.shards[shard], shard, dataset->options.max_sample_bytes, outcome,
                                   function);
        if (status == UFORM_OK) stream->reading = 1;
        while (status == UFORM_OK && stream->reader.next_ordinal < state->ordinal) {
            uform__shard_sample_t skipped;
            int got = uform__shard_next(&stream->reader, 0, &skipped);
            uform__shard_sample_free(&skipped);
            if (got < 0 && stream->reader.broken == UFORM_OUT_OF_MEMORY)
                status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "%s", stream->reader.message);
            else if (got <= 0)
                status = uform__fail(outcome, UFORM_CONFIG_MISMATCH, function, "the cursor is at sample %zu of shard '%s', which %s",
                                     state->ordinal, dataset->items.shards[shard], got < 0 ? stream->reader.message : "ends before it");
        }
    }
    return status;
}
