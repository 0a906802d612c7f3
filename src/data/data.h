/*
 * Datasets (uform.h, "Data"; docs/data.md): manifests, folders and WebDataset shards, the samplers
 * that draw training batches from them, the cursor that resumes a sampler exactly, the loader that
 * decodes batches ahead of the trainer, recall, and the index pipeline. Private to libuform.
 *
 * The layers (source.h draws them): source.c at the bottom, the sources above it, then
 *
 *   dataset.c        open, describe, free: the sources through their tables (source.h)
 *   read.c           uform_dataset_read: items in stored order
 *   lines_sampler.c  the epoch sampler of manifests and folders (every line in memory), and the one
 *                    definition of an epoch's order, which a cursor restores through it
 *   stream.c         the sampler of shards: per-epoch shard order, partitions, the shuffle buffer
 *   cursor.c         the cursor: the samplers' state as JSON text, and back
 *   loader.c         uform_loader_*: batches for a trainer, decoded on a thread of their own
 *   recall.c         uform_recall, uform_evaluate
 *   index_build.c    uform_index_build (with index_reader.c, its reader thread)
 */
#ifndef UFORM_DATA_DATA_H
#define UFORM_DATA_DATA_H

#include <pthread.h>
#include <stdint.h>

#include "uform/uform.h"
#include "core/random.h"
#include "data/shard.h"
#include "data/source.h"

/* ---- samplers ---- */

/* The one definition of an epoch's order, which both samplers draw from and a restored cursor
 * rebuilds: the identity when sequential, else a Fisher–Yates shuffle (core/random.h) of 0..n-1
 * seeded from the dataset's seed, the epoch and a salt of the sampler's own (so the lines' order
 * and the shards' order of one seed differ). Every cursor written so far depends on these numbers. */
static inline void uform__data_epoch_order(size_t *order, size_t n, uint64_t seed, uint64_t salt, uint64_t epoch,
                                           int sequential) {
    if (sequential) {
        for (size_t i = 0; i < n; ++i) order[i] = i;
        return;
    }
    uform__shuffle_order(order, n, seed ^ (salt * (epoch + 1)));
}

/* The sampler of lines (manifests, folders): a reshuffled order per epoch. */
typedef struct uform__lines_sampler_t {
    const uform__lines_t *lines;
    uint64_t seed, epoch;
    size_t *order;            /* [count] this epoch's order */
    size_t position;          /* the next unused slot of `order` */
    unsigned char *bad;       /* [count] lines left out (skip_bad) */
    unsigned char *usable;    /* [count] lines that are samples (PAIR, CHOICE) */
    size_t usable_count;
    size_t *swaps;            /* this epoch's swaps of `order` (pairs), so a cursor restores it */
    size_t swap_count, swap_capacity;
    int sequential;
} uform__lines_sampler_t;

uform_status_t uform__lines_sampler_init(uform__lines_sampler_t *sampler, const uform__lines_t *lines, uint64_t seed,
                                         int sequential);
void uform__lines_sampler_free(uform__lines_sampler_t *sampler);
/* Puts a fresh sampler where a cursor says: epoch `epoch`'s order with the first `swap_count / 2`
 * recorded swaps (pairs of positions; the sampler takes `swaps`, malloc'ed, over), at `position`,
 * the lines `bad[0..bad_count)` left out. The indices must have been checked against the lines. */
void uform__lines_sampler_restore(uform__lines_sampler_t *sampler, uint64_t epoch, size_t position, size_t *swaps,
                                  size_t swap_count, const size_t *bad, size_t bad_count);
/* Draws up to `batch` usable line indices into `picked` (avoiding `taken[0..taken_count)` and text
 * twins while it can; *twins set when it could not). Sequential: the next ones in order, fewer at the
 * end. Answers how many; -1 without memory. */
long uform__lines_sampler_draw(uform__lines_sampler_t *sampler, size_t batch, const size_t *taken, size_t taken_count,
                               size_t *picked, int *twins);

/* A bad sample found while reading (skip_bad): the loader lists it. */
typedef void (*uform__data_bad_fn)(void *context, const uform_data_error_t *error);

/* One partition of a shard stream. */
typedef struct uform__stream_t {
    const struct uform_dataset_s *dataset;
    size_t partition, partitions;
    uform__data_bad_fn on_bad;
    void *bad_context;
    size_t *sequence;         /* this epoch's shards for this partition (indices into the list) */
    size_t sequence_count;
    int by_sample;            /* fewer shards than partitions: every partition reads every shard */
    uint64_t epoch;
    size_t at;                /* position in this epoch's shard sequence of the shard being read */
    size_t counter;           /* samples seen this epoch (fewer shards than partitions: the filter) */
    uint64_t rng;             /* the shuffle buffer's random state */
    uform__shard_sample_t *buffer;
    size_t buffer_count, buffer_capacity;
    uform__shard_reader_t reader;
    int reading;              /* the reader is open */
    int exhausted;            /* this epoch's shards are all read (the buffer drains) */
    size_t epoch_samples;     /* samples this partition took into the buffer this epoch */
    uint64_t bytes_read;      /* members read, over every shard so far */
    double read_seconds;
} uform__stream_t;

/* Makes partition `partition` of `partitions` of the dataset's shard stream (seeded from the dataset). */
uform_status_t uform__stream_init(uform__stream_t *stream, const struct uform_dataset_s *dataset, size_t partition,
                                  size_t partitions, uform__data_bad_fn on_bad, void *bad_context);
void uform__stream_free(uform__stream_t *stream);
/*
 * Draws the next sample of the partition into `sample` (moved out of the buffer: free it), avoiding
 * the texts of `picked[0..count)` while the buffer offers another (*twins set when it cannot).
 * Answers 1, 0 when a sequential pass has ended, or -1 with `error` and the outcome filled (a bad
 * sample or shard without skip_bad, a partition without samples, memory).
 */
int uform__stream_draw(uform__stream_t *stream, uform__shard_sample_t *const *picked, size_t count,
                       uform__shard_sample_t *sample, int *twins, uform_data_error_t *error, uform_outcome_t *outcome,
                       const char *function);

/* Where a partition's stream stands: what a cursor records of it besides its buffer. */
typedef struct uform__stream_state_t {
    uint64_t epoch, rng;
    size_t at, counter, epoch_samples;
    size_t ordinal;           /* the next sample of the shard being read (when reading) */
    int reading, exhausted;
} uform__stream_state_t;

void uform__stream_state(const uform__stream_t *stream, uform__stream_state_t *state);
/* Puts a fresh stream where `state` says, its buffer holding the samples `entries` name (pairs of
 * shard index and ordinal, in slot order), read again from their shards. */
uform_status_t uform__stream_restore(uform__stream_t *stream, const uform__stream_state_t *state, const size_t *entries,
                                     size_t entry_count, uform_outcome_t *outcome, const char *function);

/* ---- the cursor (cursor.c) ---- */

/* A cursor's top-level facts: what it must agree with. */
typedef struct uform__cursor_head_t {
    uform_dataset_source_t source;
    uint64_t fingerprint, seed;
    size_t batch, partitions, skipped, batches;
} uform__cursor_head_t;

/* Writes a cursor: the head, then the line sampler's state (lines) or every stream's (streams,
 * count of them). Answers malloc'ed text, or NULL without memory. */
char *uform__cursor_write(const uform__cursor_head_t *head, const uform__lines_sampler_t *lines,
                          const uform__stream_t *const *streams, size_t count);
/* Reads a cursor into `head` and restores the line sampler or the streams whose partitions it
 * holds (streams[i] of partition streams[i]->partition). UFORM_INVALID_ARGUMENT for malformed text,
 * UFORM_CONFIG_MISMATCH when it does not match `expected`. */
uform_status_t uform__cursor_read(const char *text, const uform__cursor_head_t *expected, uform__cursor_head_t *head,
                                  uform__lines_sampler_t *lines, uform__stream_t *const *streams, size_t count,
                                  uform_outcome_t *outcome, const char *function);

/* ---- the dataset ---- */

struct uform_dataset_s {
    uform_dataset_options_t options;
    uform__data_items_t items; /* what the sources hold (source.h) */
    uint64_t fingerprint;
    size_t open_bad;            /* lines found bad at open */
    int busy;                   /* a loader or a build reads it */
    /* uform_dataset_read's position and buffers */
    size_t read_next;           /* the next item's ordinal */
    size_t read_line;           /* lines: the next line */
    uform__shard_reader_t read_reader;
    int read_reading;
    size_t read_shard;
    uform__shard_sample_t read_sample;
    unsigned char *read_bytes;  /* the current item's bytes (lines) */
    char *read_key;
};

/* Puts uform_dataset_read back at the first item. */
void uform__dataset_rewind(struct uform_dataset_s *dataset);

/* The lines a training sampler draws from: a folder's samples, else the lines. */
const uform__lines_t *uform__dataset_training_lines(const struct uform_dataset_s *dataset);

#endif
