/*
 * Loaders (uform.h, "Data"): training batches of a dataset for a trainer, made on a thread of their
 * own. For each batch the thread draws this member's samples (lines_sampler.c or stream.c), reads
 * their files, lays out the step's inputs (each pair's text and medium a bag of its own, sides 0 and
 * 1, one relation in group modality − 1; choice examples after the bags), decodes the media of each
 * modality with uform_media_prepare on the trainer's geometry and CPU class, and writes the cursor
 * that follows the batch. With skip_bad, a sample that fails anywhere on the way is listed and
 * replaced by a fresh draw before the batch is handed over, so batches are the same whatever the
 * timing. `ahead` batches are made while the trainer steps the one it holds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/outcome.h"
#include "core/clock.h"
#include "data/data.h"
#include "mesh/mesh.h"
#include "train/trainer.h"

#define MAX_ERRORS_KEPT 10000

/* One sample of a batch. */
typedef struct sample_t {
    int choice;                    /* a choice example (else a pair) */
    uform_modality_t modality;     /* a pair's medium */
    const char *text;              /* borrowed from the line or `shard` */
    size_t text_length;
    size_t line;                   /* lines: the line's index; shards: SIZE_MAX */
    size_t partition;              /* shards: the stream it came from */
    uform__shard_sample_t shard;   /* shards: the sample (owned) */
    unsigned char *bytes;          /* lines: the medium read (owned) */
    size_t size;
    size_t content;                /* its medium's content (pairs), or its text's (choices) */
} sample_t;

typedef struct batch_t {
    sample_t *samples;
    size_t count, capacity;
    /* the step's inputs */
    unsigned char *data;
    size_t used, data_capacity;
    size_t *offsets, *bags, *lefts, *rights, *groups, *choice_offsets;
    uform_modality_t *modalities;
    uint8_t *sides, *targets;
    char *choices;
    size_t contents, pairs, choice_count, arrays_capacity;
    uform_arena_t arenas[4];
    uform_media_prepare_t prepare[4];
    int prepared[4];
    unsigned char *media;          /* one modality's media end to end, for its prepare (kept: no page faults) */
    size_t *media_offsets, *media_owners;
    size_t media_capacity, media_count_capacity;
    char *cursor;                  /* after this batch */
    uint64_t epoch;                /* the epoch the next batch draws from */
    int twins, done;
    uform_status_t status;
    uform_outcome_t outcome;
    uform_data_error_t error;
} batch_t;

struct uform_loader_s {
    uform_loader_options_t options;
    uform_dataset_t dataset;
    uform_trainer_t trainer;
    uform_executor_t decoder;
    uform__cursor_head_t head;
    /* the sampler */
    int use_lines;
    uform__lines_sampler_t lines;
    uform__stream_t *streams;      /* this member's partitions */
    size_t stream_count, first_partition, partitions;
    /* the thread and the slots */
    pthread_t thread;
    int started;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    batch_t *slots;
    size_t slot_count, produced, handed;
    int stop, finished;
    char *initial_cursor;
    /* what it did */
    uform_loader_stats_t stats;
    uform_data_error_t *errors;
    size_t error_count, error_capacity, errors_seen;
    char *gathered;                /* the mesh-wide cursor of `gathered_at` batches */
    size_t gathered_at;
    int have_gathered;
};

/* ---- bad samples ---- */

static void list_bad(void *context, const uform_data_error_t *error) {
    uform_loader_t loader = context;
    pthread_mutex_lock(&loader->lock);
    loader->errors_seen += 1, loader->stats.skipped += 1;
    if (loader->error_count < MAX_ERRORS_KEPT) {
        if (loader->error_count == loader->error_capacity) {
            size_t capacity = loader->error_capacity ? 2 * loader->error_capacity : 16;
            uform_data_error_t *grown = realloc(loader->errors, capacity * sizeof *grown);
            if (grown) loader->errors = grown, loader->error_capacity = capacity;
        }
        if (loader->error_count < loader->error_capacity) loader->errors[loader->error_count++] = *error;
    }
    pthread_mutex_unlock(&loader->lock);
}

/* The error of sample `s` of a batch, with `content` and the reason. */
static void sample_error(uform_loader_t loader, const sample_t *sample, uform_status_t status, const char *message,
                         uform_data_error_t *error) {
    if (sample->line != SIZE_MAX) {
        const uform__line_t *line = &uform__dataset_training_lines(loader->dataset)->items[sample->line];
        uform__data_error_set(error, status, line->number, SIZE_MAX, line->number ? line->source : line->path,
                              line->key ? line->key : line->path, "%s", message);
    } else {
        uform__data_error_set(error, status, 0, sample->shard.shard, loader->dataset->items.shards[sample->shard.shard],
                              sample->shard.key, "%s", message);
    }
    error->content = sample->content;
}

/* ---- batches ---- */

static void sample_free(sample_t *sample) {
    uform__shard_sample_free(&sample->shard);
    free(sample->bytes);
    memset(sample, 0, sizeof *sample);
}

static void batch_clear(batch_t *batch) {
    for (size_t i = 0; i < batch->count; ++i) sample_free(&batch->samples[i]);
    batch->count = 0, batch->contents = batch->pairs = batch->choice_count = batch->used = 0;
    batch->twins = batch->done = 0;
    batch->status = UFORM_OK;
    memset(&batch->outcome, 0, sizeof batch->outcome);
    uform__data_error_clear(&batch->error);
    memset(batch->prepared, 0, sizeof batch->prepared);
}

static void batch_free(batch_t *batch) {
    batch_clear(batch);
    free(batch->samples), free(batch->data), free(batch->offsets), free(batch->bags), free(batch->lefts);
    free(batch->rights), free(batch->groups), free(batch->choice_offsets), free(batch->modalities);
    free(batch->sides), free(batch->targets), free(batch->choices), free(batch->cursor);
    free(batch->media), free(batch->media_offsets), free(batch->media_owners);
    for (int m = 0; m < 4; ++m) uform_arena_free(batch->arenas[m]);
}

static int reserve_samples(batch_t *batch, size_t count) {
    if (count <= batch->capacity) return 0;
    sample_t *grown = realloc(batch->samples, count * sizeof *grown);
    if (!grown) return -1;
    batch->samples = grown, batch->capacity = count;
    return 0;
}

static int reserve_arrays(batch_t *batch, size_t samples, size_t choice_bytes) {
    size_t contents = 2 * samples + 1;
    if (contents > batch->arrays_capacity) {
#define GROW(field, count)                                                                                             \
    do {                                                                                                               \
        void *grown = realloc(batch->field, (count) * sizeof *batch->field);                                          \
        if (!grown) return -1;                                                                                         \
        batch->field = grown;                                                                                          \
    } while (0)
        GROW(offsets, contents + 1);
        GROW(bags, contents + 1);
        GROW(lefts, samples + 1);
        GROW(rights, samples + 1);
        GROW(groups, samples + 1);
        GROW(choice_offsets, contents + 1);
        GROW(modalities, contents);
        GROW(sides, contents);
        GROW(targets, contents);
#undef GROW
        batch->arrays_capacity = contents;
    }
    char *choices = realloc(batch->choices, choice_bytes + 1);
    if (!choices) return -1;
    batch->choices = choices;
    return 0;
}

static int append(batch_t *batch, const void *bytes, size_t length) {
    if (batch->used + length > batch->data_capacity) {
        size_t capacity = (batch->used + length) * 2 + 4096;
        unsigned char *grown = realloc(batch->data, capacity);
        if (!grown) return -1;
        batch->data = grown, batch->data_capacity = capacity;
    }
    if (length) memcpy(batch->data + batch->used, bytes, length);
    batch->used += length;
    return 0;
}

/* Lays out the step's inputs: pairs first (text then medium, each a bag), then the choice examples.
 * Media contents hold no bytes: their rows come prepared. */
static uform_status_t lay_out(uform_loader_t loader, batch_t *batch, uform_outcome_t *outcome, const char *function) {
    const uform__lines_t *lines = loader->use_lines ? uform__dataset_training_lines(loader->dataset) : NULL;
    size_t choice_bytes = 0;
    for (size_t i = 0; i < batch->count; ++i)
        if (batch->samples[i].choice) choice_bytes += lines->items[batch->samples[i].line].choices_length;
    if (reserve_arrays(batch, batch->count, choice_bytes))
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a batch of %zu samples", batch->count);
    batch->used = 0, batch->contents = 0, batch->pairs = 0, batch->choice_count = 0;
    batch->offsets[0] = 0;
    for (int pass = 0; pass < 2; ++pass)
        for (size_t i = 0; i < batch->count; ++i) {
            sample_t *sample = &batch->samples[i];
            if (sample->choice != (pass == 1)) continue;
            size_t c = batch->contents;
            if (append(batch, sample->text, sample->text_length))
                return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a batch's texts");
            batch->modalities[c] = UFORM_MODALITY_TEXT, batch->offsets[c + 1] = batch->used;
            batch->contents += 1;
            if (pass == 1) {
                sample->content = c;
                continue;
            }
            batch->modalities[c + 1] = sample->modality, batch->offsets[c + 2] = batch->used;
            batch->contents += 1;
            sample->content = c + 1;
            size_t p = batch->pairs++;
            batch->lefts[p] = c, batch->rights[p] = c + 1, batch->groups[p] = (size_t)sample->modality - 1;
        }
    for (size_t j = 0; j <= 2 * batch->pairs; ++j) batch->bags[j] = j;
    for (size_t j = 0; j < 2 * batch->pairs; ++j) batch->sides[j] = (uint8_t)(j % 2);
    size_t at = 0;
    batch->choice_offsets[0] = 0;
    for (size_t c = 0; c < batch->contents; ++c) batch->targets[c] = 0, batch->choice_offsets[c + 1] = 0;
    for (size_t i = 0; i < batch->count; ++i) {
        const sample_t *sample = &batch->samples[i];
        if (!sample->choice) continue;
        const uform__line_t *line = &lines->items[sample->line];
        batch->targets[sample->content] = line->target;
        batch->choice_count += 1;
        (void)line;
    }
    /* The choice tape in content order. */
    for (size_t c = 0; c < batch->contents; ++c) {
        const sample_t *owner = NULL;
        for (size_t i = 0; i < batch->count && !owner; ++i)
            if (batch->samples[i].choice && batch->samples[i].content == c) owner = &batch->samples[i];
        if (owner) {
            const uform__line_t *line = &lines->items[owner->line];
            memcpy(batch->choices + at, line->choices, line->choices_length);
            at += line->choices_length;
        }
        batch->choice_offsets[c + 1] = at;
    }
    return UFORM_OK;
}

/* Decodes every modality's media; answers OK, or the first failing item's status with *bad set to
 * its sample (then `message` says why), or the call's own failure (*bad SIZE_MAX). */
static uform_status_t decode(uform_loader_t loader, batch_t *batch, size_t *bad, char *message, size_t capacity,
                             uform_outcome_t *outcome, const char *function) {
    *bad = SIZE_MAX;
    for (int m = UFORM_MODALITY_IMAGE; m <= UFORM_MODALITY_AUDIO; ++m) {
        size_t count = 0;
        for (size_t i = 0; i < batch->count; ++i) count += !batch->samples[i].choice && batch->samples[i].modality == (uform_modality_t)m;
        batch->prepared[m] = 0;
        if (!count) continue;
        /* The tape of this modality's media, in content order (pairs are in sample order). */
        if (count + 1 > batch->media_count_capacity) {
            size_t *offsets = realloc(batch->media_offsets, (count + 1) * sizeof *offsets);
            if (offsets) batch->media_offsets = offsets;
            size_t *owners = realloc(batch->media_owners, (count + 1) * sizeof *owners);
            if (owners) batch->media_owners = owners;
            if (!offsets || !owners) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate %zu media records", count);
            batch->media_count_capacity = count + 1;
        }
        size_t *offsets = batch->media_offsets, *owners = batch->media_owners;
        size_t total = 0, k = 0;
        for (size_t i = 0; i < batch->count; ++i) {
            const sample_t *sample = &batch->samples[i];
            if (sample->choice || sample->modality != (uform_modality_t)m) continue;
            total += sample->line != SIZE_MAX ? sample->size : sample->shard.size;
            owners[k++] = i;
        }
        if (total + 1 > batch->media_capacity) {
            unsigned char *grown = realloc(batch->media, total + total / 2 + 1);
            if (!grown) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate %zu bytes of media", total);
            batch->media = grown, batch->media_capacity = total + total / 2 + 1;
        }
        unsigned char *data = batch->media;
        offsets[0] = 0;
        for (size_t j = 0; j < count; ++j) {
            const sample_t *sample = &batch->samples[owners[j]];
            const unsigned char *bytes = sample->line != SIZE_MAX ? sample->bytes : sample->shard.bytes;
            size_t size = sample->line != SIZE_MAX ? sample->size : sample->shard.size;
            if (size) memcpy(data + offsets[j], bytes, size);
            offsets[j + 1] = offsets[j] + size;
        }
        uform_media_prepare_t *prepare = &batch->prepare[m];
        memset(prepare, 0, sizeof *prepare);
        prepare->model = &loader->trainer->view;
        prepare->executor = loader->decoder;
        prepare->modality = (uform_modality_t)m;
        prepare->files = (uform_tape_t){data, offsets, count};
        prepare->arena = batch->arenas[m];
        double start = uform__seconds_now();
        uform_status_t status = uform_media_prepare(prepare);
        double seconds = uform__seconds_now() - start;
        pthread_mutex_lock(&loader->lock);
        loader->stats.decode_seconds += seconds;
        pthread_mutex_unlock(&loader->lock);
        if (status != UFORM_OK) {
            uform__outcome_copy_text(outcome, &prepare->outcome);
            return uform__fail(outcome, status, function, "%s", prepare->outcome.message);
        }
        batch->prepared[m] = 1;
        for (size_t j = 0; j < count; ++j)
            if (prepare->prepared.item_outcomes[j].status != UFORM_OK) {
                *bad = owners[j];
                snprintf(message, capacity, "%s", prepare->prepared.item_outcomes[j].message);
                return prepare->prepared.item_outcomes[j].status;
            }
    }
    return UFORM_OK;
}

/* Reads a line sample's medium; answers OK, or the file's failure with `message`. */
static uform_status_t load_line(uform_loader_t loader, sample_t *sample, char *message, size_t capacity) {
    if (sample->choice || sample->bytes) return UFORM_OK;
    const uform__line_t *line = &uform__dataset_training_lines(loader->dataset)->items[sample->line];
    uform_status_t status;
    double start = uform__seconds_now();
    sample->bytes = uform__data_read_file(line->path, loader->dataset->options.max_sample_bytes, &sample->size, &status,
                                          message, capacity);
    pthread_mutex_lock(&loader->lock);
    loader->stats.read_seconds += uform__seconds_now() - start;
    loader->stats.bytes_read += sample->size;
    pthread_mutex_unlock(&loader->lock);
    return sample->bytes ? UFORM_OK : status;
}

static void sample_from_line(uform_loader_t loader, sample_t *sample, size_t index) {
    const uform__line_t *line = &uform__dataset_training_lines(loader->dataset)->items[index];
    memset(sample, 0, sizeof *sample);
    sample->line = index;
    sample->choice = line->kind == UFORM__LINE_CHOICE;
    sample->modality = sample->choice ? UFORM_MODALITY_TEXT : (uform_modality_t)line->modality;
    sample->text = line->text, sample->text_length = line->text_length;
    sample->shard.modality = -1;
}

static void sample_from_shard(sample_t *sample, uform__shard_sample_t *shard, size_t partition) {
    memset(sample, 0, sizeof *sample);
    sample->line = SIZE_MAX, sample->partition = partition;
    sample->shard = *shard;
    memset(shard, 0, sizeof *shard);
    sample->modality = (uform_modality_t)sample->shard.modality;
    sample->text = sample->shard.text, sample->text_length = sample->shard.text_length;
}

/* Draws `want` more samples of partition `p` (shards) into the batch. 1 drawn (or fewer at the end
 * of a sequential pass), -1 on failure (in the batch). */
static int draw_stream(uform_loader_t loader, batch_t *batch, size_t s, size_t want, uform_outcome_t *outcome,
                       const char *function) {
    uform__stream_t *stream = &loader->streams[s];
    uform__shard_sample_t **picked = malloc((batch->count + want + 1) * sizeof *picked);
    if (!picked || reserve_samples(batch, batch->count + want + 1)) {
        free(picked);
        uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a batch");
        return -1;
    }
    size_t mine = 0;
    for (size_t i = 0; i < batch->count; ++i)
        if (batch->samples[i].partition == stream->partition) picked[mine++] = &batch->samples[i].shard;
    double read_before = stream->read_seconds;
    uint64_t bytes_before = stream->bytes_read;
    int result = 1;
    for (size_t k = 0; k < want; ++k) {
        uform__shard_sample_t drawn;
        int got = uform__stream_draw(stream, picked, mine, &drawn, &batch->twins, &batch->error, outcome, function);
        if (got < 0) {
            result = -1;
            break;
        }
        if (got == 0) break;
        sample_t *sample = &batch->samples[batch->count++];
        sample_from_shard(sample, &drawn, stream->partition);
        /* the pointers of `picked` move with realloc: the capacity was reserved above */
        picked[mine++] = &sample->shard;
    }
    free(picked);
    pthread_mutex_lock(&loader->lock);
    loader->stats.read_seconds += stream->read_seconds - read_before;
    loader->stats.bytes_read += stream->bytes_read - bytes_before;
    pthread_mutex_unlock(&loader->lock);
    return result;
}

/* Draws `want` more line samples into the batch, avoiding those in it. */
static int draw_lines(uform_loader_t loader, batch_t *batch, size_t want, uform_outcome_t *outcome, const char *function) {
    size_t *taken = malloc((batch->count + want + 1) * sizeof *taken);
    if (!taken || reserve_samples(batch, batch->count + want + 1)) {
        free(taken);
        uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a batch");
        return -1;
    }
    for (size_t i = 0; i < batch->count; ++i) taken[i] = batch->samples[i].line;
    size_t *picked = taken + batch->count;
    long got = uform__lines_sampler_draw(&loader->lines, want, taken, batch->count, picked, &batch->twins);
    if (got < 0) {
        free(taken);
        uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the record of the order's swaps");
        return -1;
    }
    for (long k = 0; k < got; ++k) sample_from_line(loader, &batch->samples[batch->count++], picked[k]);
    free(taken);
    return 1;
}

/* The share sizes of one global batch: partition p of P gets [B·p/P, B·(p+1)/P). */
static size_t share_of(size_t batch, size_t part, size_t parts) { return batch * (part + 1) / parts - batch * part / parts; }

/* This member's share of the next global batch, drawn. */
static int draw_batch(uform_loader_t loader, batch_t *batch, uform_outcome_t *outcome, const char *function) {
    size_t B = loader->options.batch;
    if (!loader->use_lines) {
        for (size_t s = 0; s < loader->stream_count; ++s)
            if (draw_stream(loader, batch, s, share_of(B, loader->streams[s].partition, loader->partitions), outcome, function) < 0)
                return -1;
        return 1;
    }
    /* Every member draws the whole global batch and keeps its contiguous share. */
    size_t *picked = malloc((B + 1) * sizeof *picked);
    if (!picked || reserve_samples(batch, B + 1)) {
        free(picked);
        uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a batch");
        return -1;
    }
    long got = uform__lines_sampler_draw(&loader->lines, B, NULL, 0, picked, &batch->twins);
    if (got < 0) {
        free(picked);
        uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the record of the order's swaps");
        return -1;
    }
    size_t members = loader->options.members ? loader->options.members : 1, member = loader->options.member;
    size_t first = (size_t)got * member / members, end = (size_t)got * (member + 1) / members;
    for (size_t k = first; k < end; ++k) sample_from_line(loader, &batch->samples[batch->count++], picked[k]);
    free(picked);
    return 1;
}

/* Takes sample `index` out of the batch as bad (listed; its line left out from now on) and draws
 * a replacement from the same partition. */
static int replace(uform_loader_t loader, batch_t *batch, size_t index, const uform_data_error_t *error,
                   uform_outcome_t *outcome, const char *function) {
    list_bad(loader, error);
    sample_t removed = batch->samples[index];
    if (removed.line != SIZE_MAX) loader->lines.bad[removed.line] = 1;
    memmove(&batch->samples[index], &batch->samples[index + 1], (batch->count - index - 1) * sizeof *batch->samples);
    batch->count -= 1;
    int result;
    if (removed.line != SIZE_MAX) result = draw_lines(loader, batch, 1, outcome, function);
    else {
        size_t s = 0;
        while (s + 1 < loader->stream_count && loader->streams[s].partition != removed.partition) ++s;
        result = draw_stream(loader, batch, s, 1, outcome, function);
    }
    sample_free(&removed);
    return result;
}

/* Makes the next batch in `batch`: drawn, read, laid out, decoded, and its cursor written. */
static void produce(uform_loader_t loader, batch_t *batch) {
    const char *function = "uform_loader_next";
    uform_outcome_t *outcome = &batch->outcome;
    batch_clear(batch);
    int skip_bad = loader->dataset->options.skip_bad;
    if (draw_batch(loader, batch, outcome, function) < 0) {
        batch->status = uform_outcome_status(outcome);
        return;
    }
    if (batch->count == 0) {
        batch->done = 1;
        return;
    }
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
    for (;;) {
        /* Read every line sample's file; a bad one is replaced (skip_bad) or fails the batch. */
        size_t bad = SIZE_MAX;
        uform_status_t status = UFORM_OK;
        for (size_t i = 0; i < batch->count && bad == SIZE_MAX; ++i)
            if (batch->samples[i].line != SIZE_MAX && (status = load_line(loader, &batch->samples[i], message, sizeof message)) != UFORM_OK)
                bad = i;
        if (bad == SIZE_MAX) {
            status = lay_out(loader, batch, outcome, function);
            if (status != UFORM_OK) {
                batch->status = status;
                return;
            }
            status = decode(loader, batch, &bad, message, sizeof message, outcome, function);
            if (status != UFORM_OK && bad == SIZE_MAX) {
                batch->status = status;
                return;
            }
        }
        if (bad == SIZE_MAX) break;
        uform_data_error_t error;
        sample_error(loader, &batch->samples[bad], status, message, &error);
        if (!skip_bad || status == UFORM_OUT_OF_MEMORY) {
            batch->error = error;
            char place[1200];
            uform__data_error_place(&error, place, sizeof place);
            batch->status = uform__fail(outcome, status, function, "%s: %s", place, message);
            return;
        }
        if (replace(loader, batch, bad, &error, outcome, function) < 0) {
            batch->status = uform_outcome_status(outcome);
            return;
        }
        if (batch->count == 0) {
            batch->done = 1;
            return;
        }
    }
    /* The cursor after this batch. */
    pthread_mutex_lock(&loader->lock);
    uform__cursor_head_t head = loader->head;
    head.skipped = loader->stats.skipped;
    head.batches = loader->head.batches + loader->produced + 1; /* a resumed loader counts on */
    pthread_mutex_unlock(&loader->lock);
    const uform__stream_t **streams = malloc((loader->stream_count + 1) * sizeof *streams);
    for (size_t s = 0; streams && s < loader->stream_count; ++s) streams[s] = &loader->streams[s];
    free(batch->cursor);
    batch->cursor = streams ? uform__cursor_write(&head, loader->use_lines ? &loader->lines : NULL,
                                                  loader->use_lines ? NULL : streams, loader->stream_count)
                            : NULL;
    free(streams);
    if (!batch->cursor) batch->status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the cursor's text");
    batch->epoch = loader->use_lines ? loader->lines.epoch : loader->stream_count ? loader->streams[0].epoch : 0;
}

static void *loader_main(void *pointer) {
    uform_loader_t loader = pointer;
    size_t ahead = loader->slot_count - 1;
    pthread_mutex_lock(&loader->lock);
    for (;;) {
        while (!loader->stop && loader->produced >= loader->handed + ahead) pthread_cond_wait(&loader->changed, &loader->lock);
        if (loader->stop) break;
        batch_t *batch = &loader->slots[loader->produced % loader->slot_count];
        pthread_mutex_unlock(&loader->lock);
        produce(loader, batch);
        pthread_mutex_lock(&loader->lock);
        loader->produced += 1;
        pthread_cond_broadcast(&loader->changed);
        if (batch->status != UFORM_OK || batch->done) break;
    }
    loader->finished = 1;
    pthread_cond_broadcast(&loader->changed);
    pthread_mutex_unlock(&loader->lock);
    return NULL;
}

/* ---- the public functions ---- */

static uform_status_t check_samples(uform_loader_t loader, uform_outcome_t *outcome, const char *function) {
    const uform__lines_t *lines = uform__dataset_training_lines(loader->dataset);
    size_t usable = 0;
    for (size_t i = 0; i < lines->count; ++i) {
        const uform__line_t *line = &lines->items[i];
        int sample = line->kind == UFORM__LINE_PAIR || line->kind == UFORM__LINE_CHOICE;
        usable += sample;
        if (sample) continue;
        uform_data_error_t error;
        const char *why = line->kind == UFORM__LINE_BAD ? line->message
                                                          : "an item to index ({\"path\"} or a text alone), not a pair or a choice example";
        uform__data_error_set(&error, UFORM_FORMAT, line->number, SIZE_MAX, line->number ? line->source : line->path,
                              line->number ? NULL : line->key, "%s", why);
        if (!loader->dataset->options.skip_bad) {
            char place[1200];
            uform__data_error_place(&error, place, sizeof place);
            return uform__fail(outcome, UFORM_FORMAT, function, "%s: %s", place, why);
        }
        list_bad(loader, &error);
    }
    if (!usable)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "the dataset holds no training sample (a text with one medium, or a choice example)");
    size_t members = loader->options.members ? loader->options.members : 1;
    if (usable < members)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%zu members need at least one sample each, the dataset holds %zu",
                           members, usable);
    return UFORM_OK;
}

UFORM_API uform_status_t uform_loader_open(const uform_loader_options_t *options, uform_loader_t *result,
                                           uform_outcome_t *outcome) {
    const char *function = __func__;
    if (!result) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "loader is NULL");
    *result = NULL;
    if (!options || !options->dataset || !options->trainer)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s is NULL",
                           !options ? "options" : !options->dataset ? "options.dataset" : "options.trainer");
    size_t members = options->members ? options->members : 1;
    if (!options->batch) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "batch is 0");
    if (options->member >= members)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "member %zu is not below members %zu", options->member, members);
    if (options->batch < members)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%zu members need at least one sample each per step: batch %zu",
                           members, options->batch);
    uform_dataset_t dataset = options->dataset;
    if (dataset->options.skip_bad && members > 1)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "skip_bad with %zu members: the members would disagree on the batch", members);
    size_t partitions = dataset->options.partitions ? dataset->options.partitions : members;
    if (dataset->options.source == UFORM_DATASET_SHARDS && partitions % members)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function,
                           "%zu partitions cannot be shared by %zu members (each member reads partitions/members of them)",
                           partitions, members);
    if (dataset->options.source == UFORM_DATASET_SHARDS && options->batch < partitions)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "batch %zu is smaller than the %zu partitions",
                           options->batch, partitions);
    if (__atomic_exchange_n(&dataset->busy, 1, __ATOMIC_ACQ_REL))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "the dataset is read by another loader or build");
    struct uform_loader_s *loader = calloc(1, sizeof *loader);
    if (!loader) {
        __atomic_store_n(&dataset->busy, 0, __ATOMIC_RELEASE);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a loader");
    }
    loader->options = *options;
    loader->options.cursor = NULL;
    loader->dataset = dataset, loader->trainer = options->trainer;
    loader->partitions = dataset->options.source == UFORM_DATASET_SHARDS ? partitions : 1;
    loader->use_lines = dataset->options.source != UFORM_DATASET_SHARDS;
    loader->head = (uform__cursor_head_t){dataset->options.source, dataset->fingerprint, dataset->options.seed, options->batch,
                                          loader->partitions, 0, 0};
    pthread_mutex_init(&loader->lock, NULL);
    pthread_cond_init(&loader->changed, NULL);
    size_t ahead = options->ahead ? options->ahead : 1;
    loader->slot_count = ahead + 1;
    uform_status_t status = UFORM_OK;
    loader->slots = calloc(loader->slot_count, sizeof *loader->slots);
    if (!loader->slots) status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the batches");
    for (size_t s = 0; status == UFORM_OK && s < loader->slot_count; ++s)
        for (int m = 1; status == UFORM_OK && m < 4; ++m) status = uform_arena_for_host(&loader->slots[s].arenas[m], outcome);
    if (status == UFORM_OK) {
        uform_ram_options_t ram = {0};
        ram.cpu_class = loader->trainer->cpu_class;
        status = uform_executor_for_ram(&ram, options->decode_threads ? options->decode_threads : 1, 0, &loader->decoder, outcome);
    }
    if (status == UFORM_OK && loader->use_lines) {
        status = check_samples(loader, outcome, function);
        if (status == UFORM_OK &&
            uform__lines_sampler_init(&loader->lines, uform__dataset_training_lines(dataset), dataset->options.seed,
                                      dataset->options.sequential) != UFORM_OK)
            status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the sampler");
        const uform__lines_t *lines = uform__dataset_training_lines(dataset);
        for (size_t i = 0; status == UFORM_OK && i < lines->count; ++i)
            if (lines->items[i].kind == UFORM__LINE_BAD) loader->lines.bad[i] = 1;
    }
    if (status == UFORM_OK && !loader->use_lines) {
        loader->stream_count = partitions / members;
        loader->first_partition = options->member * loader->stream_count;
        loader->streams = calloc(loader->stream_count, sizeof *loader->streams);
        if (!loader->streams) status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the streams");
        for (size_t s = 0; status == UFORM_OK && s < loader->stream_count; ++s)
            if (uform__stream_init(&loader->streams[s], dataset, loader->first_partition + s, partitions, list_bad, loader) != UFORM_OK)
                status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a stream");
    }
    if (status == UFORM_OK && options->cursor) {
        uform__cursor_head_t head;
        uform__stream_t **streams = calloc(loader->stream_count + 1, sizeof *streams);
        for (size_t s = 0; streams && s < loader->stream_count; ++s) streams[s] = &loader->streams[s];
        status = streams ? uform__cursor_read(options->cursor, &loader->head, &head, loader->use_lines ? &loader->lines : NULL,
                                              loader->use_lines ? NULL : streams, loader->stream_count, outcome, function)
                         : uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate memory to read the cursor");
        free(streams);
        if (status == UFORM_OK) loader->stats.skipped = head.skipped, loader->head.batches = head.batches;
    }
    if (status == UFORM_OK) {
        const uform__stream_t **streams = malloc((loader->stream_count + 1) * sizeof *streams);
        for (size_t s = 0; streams && s < loader->stream_count; ++s) streams[s] = &loader->streams[s];
        loader->head.skipped = loader->stats.skipped;
        loader->initial_cursor = streams ? uform__cursor_write(&loader->head, loader->use_lines ? &loader->lines : NULL,
                                                               loader->use_lines ? NULL : streams, loader->stream_count)
                                         : NULL;
        free(streams);
        if (!loader->initial_cursor) status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the cursor's text");
    }
    if (status == UFORM_OK) {
        if (pthread_create(&loader->thread, NULL, loader_main, loader) != 0)
            status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot start the loader's thread: %s", strerror(errno));
        else loader->started = 1;
    }
    if (status != UFORM_OK) {
        uform_loader_free(loader);
        return status;
    }
    *result = loader;
    return uform__succeed(outcome, function);
}

UFORM_API void uform_loader_free(uform_loader_t loader) {
    if (!loader) return;
    if (loader->started) {
        pthread_mutex_lock(&loader->lock);
        loader->stop = 1;
        pthread_cond_broadcast(&loader->changed);
        pthread_mutex_unlock(&loader->lock);
        pthread_join(loader->thread, NULL);
    }
    for (size_t s = 0; loader->slots && s < loader->slot_count; ++s) batch_free(&loader->slots[s]);
    for (size_t s = 0; loader->streams && s < loader->stream_count; ++s) uform__stream_free(&loader->streams[s]);
    free(loader->slots), free(loader->streams);
    uform__lines_sampler_free(&loader->lines);
    uform_executor_free(loader->decoder);
    free(loader->initial_cursor), free(loader->errors), free(loader->gathered);
    pthread_mutex_destroy(&loader->lock);
    pthread_cond_destroy(&loader->changed);
    __atomic_store_n(&loader->dataset->busy, 0, __ATOMIC_RELEASE);
    free(loader);
}

UFORM_API uform_status_t uform_loader_next(uform_loader_next_t *request) {
    const char *function = __func__;
    if (!request) return UFORM_INVALID_ARGUMENT;
    request->done = 0, request->samples = 0, request->twins = 0;
    uform__data_error_clear(&request->error);
    uform_loader_t loader = request->loader;
    if (!loader || !request->step)
        return uform__fail(&request->outcome, UFORM_INVALID_ARGUMENT, function, "%s is NULL", !loader ? "loader" : "step");
    double start = uform__seconds_now();
    pthread_mutex_lock(&loader->lock);
    /* A failed or finished batch stays the answer. */
    if (loader->handed > 0) {
        batch_t *last = &loader->slots[(loader->handed - 1) % loader->slot_count];
        if (last->status != UFORM_OK || last->done) {
            pthread_mutex_unlock(&loader->lock);
            request->done = last->done, request->error = last->error;
            uform__outcome_copy_text(&request->outcome, &last->outcome);
            return last->done ? uform__succeed(&request->outcome, function)
                              : uform__fail(&request->outcome, last->status, function, "%s", last->outcome.message);
        }
    }
    while (loader->produced <= loader->handed) pthread_cond_wait(&loader->changed, &loader->lock);
    batch_t *batch = &loader->slots[loader->handed % loader->slot_count];
    loader->handed += 1;
    loader->stats.wait_seconds += uform__seconds_now() - start;
    if (batch->status == UFORM_OK && !batch->done)
        loader->stats.batches += 1, loader->stats.samples += batch->count, loader->stats.epoch = batch->epoch;
    pthread_cond_broadcast(&loader->changed);
    pthread_mutex_unlock(&loader->lock);
    if (batch->done) {
        request->done = 1;
        return uform__succeed(&request->outcome, function);
    }
    if (batch->status != UFORM_OK) {
        request->error = batch->error;
        return uform__fail(&request->outcome, batch->status, function, "%s", batch->outcome.message);
    }
    uform_trainer_step_t *step = request->step;
    step->modalities = batch->modalities;
    step->contents = (uform_tape_t){batch->data, batch->offsets, batch->contents};
    step->bags = batch->bags, step->bag_count = 2 * batch->pairs, step->sides = batch->sides;
    step->relations = (uform_relations_t){batch->lefts, batch->rights, batch->groups, batch->pairs};
    if (batch->choice_count) {
        step->choices = (uform_tape_t){batch->choices, batch->choice_offsets, batch->contents};
        step->choice_targets = batch->targets;
    } else {
        memset(&step->choices, 0, sizeof step->choices);
        step->choice_targets = NULL;
    }
    for (int m = 0; m < 4; ++m) step->prepared[m] = batch->prepared[m] ? &batch->prepare[m].prepared : NULL;
    request->samples = batch->count, request->twins = batch->twins;
    return uform__succeed(&request->outcome, function);
}

/* The cursor of this member's own partitions (or the lines) after the batches handed over. */
static const char *own_cursor(uform_loader_t loader) {
    if (loader->handed == 0) return loader->initial_cursor;
    return loader->slots[(loader->handed - 1) % loader->slot_count].cursor;
}

/* Over a mesh with shards: every member's cursor gathered into one with every partition's stream. */
static uform_status_t gather(uform_loader_t loader, const char *mine, uform_outcome_t *outcome, const char *function) {
    uform_mesh_t mesh = loader->trainer->mesh;
    size_t K = mesh->count, length = strlen(mine) + 1;
    uform_status_t status = uform__mesh_acquire(mesh, outcome, function);
    if (status != UFORM_OK) return status;
    uint64_t *lengths = calloc(K, sizeof *lengths);
    size_t *sizes = calloc(K, sizeof *sizes);
    char *texts = NULL;
    if (!lengths || !sizes) status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the gathered cursors");
    uint64_t own = length;
    for (size_t j = 0; status == UFORM_OK && j < K; ++j) sizes[j] = sizeof(uint64_t);
    if (status == UFORM_OK) status = uform__mesh_allgather(mesh, &own, lengths, sizes, "the data cursors' lengths", outcome, function);
    size_t total = 0;
    for (size_t j = 0; status == UFORM_OK && j < K; ++j) sizes[j] = (size_t)lengths[j], total += sizes[j];
    if (status == UFORM_OK && !(texts = malloc(total + 1)))
        status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the gathered cursors");
    if (status == UFORM_OK) status = uform__mesh_allgather(mesh, mine, texts, sizes, "the data cursors", outcome, function);
    uform__mesh_release(mesh);
    /* Splice every member's "streams" entries into one list: each text ends with `]}`. */
    char *combined = NULL;
    if (status == UFORM_OK) {
        combined = malloc(total + 1);
        if (!combined) status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the gathered cursors");
    }
    if (status == UFORM_OK) {
        size_t used = 0, at = 0;
        for (size_t j = 0; j < K; at += sizes[j], ++j) {
            const char *text = texts + at;
            size_t n = strlen(text);
            const char *list = strstr(text, "\"streams\":[");
            if (!list || n < 2 || strcmp(text + n - 2, "]}") != 0) {
                status = uform__fail(outcome, UFORM_INTERNAL, function, "member %zu's cursor has no stream list", j);
                break;
            }
            size_t start = (size_t)(list - text) + strlen("\"streams\":[");
            if (j == 0) memcpy(combined, text, n - 2), used = n - 2;
            else {
                if (used && combined[used - 1] != '[') combined[used++] = ',';
                memcpy(combined + used, text + start, n - 2 - start), used += n - 2 - start;
            }
        }
        if (status == UFORM_OK) combined[used++] = ']', combined[used++] = '}', combined[used] = 0;
    }
    free(lengths), free(sizes), free(texts);
    if (status != UFORM_OK) {
        free(combined);
        return status;
    }
    free(loader->gathered);
    loader->gathered = combined, loader->gathered_at = loader->handed, loader->have_gathered = 1;
    return UFORM_OK;
}

UFORM_API uform_status_t uform_loader_cursor(uform_loader_t loader, char *buffer, size_t capacity, size_t *length,
                                             uform_outcome_t *outcome) {
    const char *function = __func__;
    if (!loader || !length) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s is NULL", !loader ? "loader" : "length");
    *length = 0;
    const char *text = own_cursor(loader);
    if (!text) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "no batch has been handed over successfully");
    uform_mesh_t mesh = loader->trainer->mesh;
    if (!loader->use_lines && mesh && mesh->count > 1) {
        if (!loader->have_gathered || loader->gathered_at != loader->handed) {
            uform_status_t status = gather(loader, text, outcome, function);
            if (status != UFORM_OK) return status;
        }
        text = loader->gathered;
    }
    *length = strlen(text);
    if (capacity) {
        size_t n = *length < capacity - 1 ? *length : capacity - 1;
        memcpy(buffer, text, n);
        buffer[n] = 0;
    }
    return uform__succeed(outcome, function);
}

UFORM_API void uform_loader_stats(uform_loader_t loader, uform_loader_stats_t *stats, uform_data_error_t *errors,
                                  size_t capacity, size_t *count) {
    if (stats) memset(stats, 0, sizeof *stats);
    if (count) *count = 0;
    if (!loader) return;
    pthread_mutex_lock(&loader->lock);
    if (stats) *stats = loader->stats;
    size_t n = loader->error_count < capacity ? loader->error_count : capacity;
    if (errors && n) memcpy(errors, loader->errors, n * sizeof *errors);
    if (count) *count = loader->errors_seen;
    pthread_mutex_unlock(&loader->lock);
}
