/*
 * The reader thread of uform_index_build: reads the datasets' items in order (uform_dataset_read:
 * files read and probed, shard members streamed), and fills one batch per modality; a full batch (by
 * items or bytes) goes into a bounded queue, so the items of batch n+1 are read while batch n decodes
 * and computes, and at most `capacity` units wait. Every `checkpoint` items it hands over all partial
 * batches and a checkpoint marker: a build and a resumed build then cut the same batches. Items that
 * cannot be read or recognised become error records, handed over with the next unit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/index_build.h"

void uform__unit_free(uform__unit_t *unit) {
    if (!unit) return;
    for (size_t i = 0; i < unit->count; ++i) free(unit->paths[i]);
    for (size_t i = 0; i < unit->error_count; ++i) free(unit->errors[i].path), free(unit->errors[i].message);
    free(unit->paths), free(unit->errors), free(unit->data), free(unit->offsets);
    free(unit);
}

static int grow(void **pointer, size_t *capacity, size_t needed, size_t element) {
    if (needed <= *capacity) return 0;
    size_t wanted = *capacity ? *capacity : 16;
    while (wanted < needed) wanted *= 2;
    void *grown = realloc(*pointer, wanted * element);
    if (!grown) return -1;
    *pointer = grown, *capacity = wanted;
    return 0;
}

/* ---- keys ---- */

int uform__key_set_insert(uform__key_set_t *set, const char *key, size_t length) {
    if (2 * (set->count + 1) > set->capacity) {
        uform__key_set_t grown = {0};
        grown.capacity = set->capacity ? set->capacity * 2 : 1024;
        grown.keys = calloc(grown.capacity, sizeof *grown.keys);
        grown.lengths = calloc(grown.capacity, sizeof *grown.lengths);
        if (!grown.keys || !grown.lengths) {
            free(grown.keys), free(grown.lengths);
            return -1;
        }
        for (size_t i = 0; i < set->capacity; ++i)
            if (set->keys[i]) {
                size_t at = (size_t)uform__fnv1a64(set->keys[i], set->lengths[i], UFORM__DATA_HASH_SEED) & (grown.capacity - 1);
                while (grown.keys[at]) at = (at + 1) & (grown.capacity - 1);
                grown.keys[at] = set->keys[i], grown.lengths[at] = set->lengths[i];
            }
        grown.count = set->count;
        free(set->keys), free(set->lengths);
        *set = grown;
    }
    size_t at = (size_t)uform__fnv1a64(key, length, UFORM__DATA_HASH_SEED) & (set->capacity - 1);
    while (set->keys[at]) {
        if (set->lengths[at] == length && memcmp(set->keys[at], key, length) == 0) return 1;
        at = (at + 1) & (set->capacity - 1);
    }
    if (!(set->keys[at] = malloc(length + 1))) return -1;
    memcpy(set->keys[at], key, length), set->keys[at][length] = 0;
    set->lengths[at] = length, set->count += 1;
    return 0;
}

void uform__key_set_free(uform__key_set_t *set) {
    for (size_t i = 0; i < set->capacity; ++i) free(set->keys[i]);
    free(set->keys), free(set->lengths);
    memset(set, 0, sizeof *set);
}

/* ---- the queue ---- */

static int push(uform__reader_t *reader, uform__unit_t *unit) {
    pthread_mutex_lock(&reader->lock);
    while (reader->length == reader->capacity && !reader->stop) pthread_cond_wait(&reader->changed, &reader->lock);
    int stopped = reader->stop;
    if (!stopped) {
        reader->queue[(reader->head + reader->length) % reader->capacity] = unit;
        reader->length += 1;
        pthread_cond_broadcast(&reader->changed);
    }
    pthread_mutex_unlock(&reader->lock);
    if (stopped) uform__unit_free(unit);
    return stopped ? -1 : 0;
}

uform__unit_t *uform__reader_next(uform__reader_t *reader) {
    pthread_mutex_lock(&reader->lock);
    while (reader->length == 0 && !reader->stop) pthread_cond_wait(&reader->changed, &reader->lock);
    uform__unit_t *unit = NULL;
    if (reader->length) {
        unit = reader->queue[reader->head];
        reader->head = (reader->head + 1) % reader->capacity;
        reader->length -= 1;
        pthread_cond_broadcast(&reader->changed);
    }
    pthread_mutex_unlock(&reader->lock);
    return unit;
}

/* ---- reading ---- */

typedef struct reading_t {
    uform__reader_t *reader;
    uform__unit_t *batches[4];   /* being filled, per modality */
    uform__build_error_t *pending;
    size_t pending_count, pending_capacity;
} reading_t;

static int add_error(reading_t *reading, const char *path, size_t length, uform_status_t status, const char *message,
                     const uform_data_error_t *where) {
    if (grow((void **)&reading->pending, &reading->pending_capacity, reading->pending_count + 1, sizeof(uform__build_error_t)))
        return -1;
    uform__build_error_t *error = &reading->pending[reading->pending_count];
    error->path = strndup(path, length), error->status = status, error->message = strdup(message);
    error->where = *where;
    if (!error->path || !error->message) {
        free(error->path), free(error->message);
        return -1;
    }
    reading->pending_count += 1;
    return 0;
}

static int hand_over(reading_t *reading, uform__unit_t *unit) {
    unit->position = reading->reader->position;
    unit->errors = reading->pending, unit->error_count = reading->pending_count;
    unit->error_capacity = reading->pending_capacity;
    reading->pending = NULL, reading->pending_count = reading->pending_capacity = 0;
    return push(reading->reader, unit);
}

static int flush_batches(reading_t *reading, size_t consumed) {
    for (int m = 0; m < 4; ++m) {
        uform__unit_t *unit = reading->batches[m];
        if (!unit) continue;
        reading->batches[m] = NULL;
        unit->consumed = consumed;
        if (hand_over(reading, unit)) return -1;
    }
    return 0;
}

static int add_item(reading_t *reading, const uform_dataset_item_t *item, size_t consumed) {
    uform__reader_t *reader = reading->reader;
    uform__unit_t *unit = reading->batches[item->modality];
    if (!unit) {
        unit = calloc(1, sizeof *unit);
        if (!unit) return -1;
        unit->kind = UFORM__UNIT_BATCH, unit->modality = item->modality;
        reading->batches[item->modality] = unit;
    }
    char **paths = realloc(unit->paths, (unit->count + 1) * sizeof *paths);
    if (paths) unit->paths = paths;
    if (!paths || grow((void **)&unit->data, &unit->capacity, unit->bytes + item->size + 1, 1) ||
        grow((void **)&unit->offsets, &unit->offsets_capacity, unit->count + 2, sizeof(size_t)))
        return -1;
    if (!(unit->paths[unit->count] = strndup(item->key, item->key_length))) return -1;
    if (item->size) memcpy(unit->data + unit->bytes, item->bytes, item->size);
    unit->offsets[0] = 0;
    unit->bytes += item->size;
    unit->offsets[++unit->count] = unit->bytes;
    if (unit->count >= reader->batch || unit->bytes >= reader->batch_bytes) {
        reading->batches[item->modality] = NULL;
        unit->consumed = consumed;
        return hand_over(reading, unit);
    }
    return 0;
}

/* Whether an item is one of the build's own outputs (an index written inside the folder it walks). */
static int is_own(const uform__reader_t *reader, const uform_dataset_item_t *item) {
    for (int k = 0; k < 2; ++k) {
        const char *own = reader->own[k];
        if (!own) continue;
        const char *name = strrchr(own, '/');
        name = name ? name + 1 : own;
        size_t name_length = strlen(name);
        if (item->key_length < name_length || memcmp(item->key + item->key_length - name_length, name, name_length) != 0) continue;
        char *path = strndup(item->key, item->key_length);
        char *resolved = path ? realpath(path, NULL) : NULL;
        int same = resolved && strcmp(resolved, own) == 0;
        free(path), free(resolved);
        if (same) return 1;
    }
    return 0;
}

/* Reads one item into its batch, or an error, or a count; answers -1 only when the consumer stopped
 * or memory ran out. */
static int read_one(reading_t *reading, const uform_dataset_read_t *read, size_t consumed) {
    uform__reader_t *reader = reading->reader;
    const uform_dataset_item_t *item = &read->item;
    if (uform_outcome_status(&read->outcome) == UFORM_OUT_OF_MEMORY) return -1;
    int seen = item->key ? uform__key_set_insert(reader->seen, item->key, item->key_length) : 0;
    if (seen < 0) return -1;
    if (seen == 1 || (item->key && is_own(reader, item))) {
        reader->duplicates += seen == 1;
        return 0;
    }
    if (uform_outcome_status(&read->outcome) != UFORM_OK)
        return add_error(reading, item->key ? item->key : "", item->key_length, uform_outcome_status(&read->outcome),
                         read->error.message[0] ? read->error.message : read->outcome.message, &read->error);
    if (!(reader->modalities & (1u << item->modality))) {
        reader->skipped += 1;
        return 0;
    }
    return add_item(reading, item, consumed);
}

static void *reader_main(void *pointer) {
    uform__reader_t *reader = pointer;
    reading_t reading;
    memset(&reading, 0, sizeof reading);
    reading.reader = reader;
    int failed = 0, ended = 1;
    size_t consumed = 0, to_skip = reader->skip, base = 0;
    reader->position = 0;
    for (size_t d = 0; d < reader->dataset_count && !failed && ended; ++d) {
        uform__dataset_rewind(reader->datasets[d]);
        /* Positions: the items (or, for shards, the shards opened) of the datasets read so far, so
         * they never decrease and every member computes the same ones (index_build_mesh.c). */
        size_t weight = uform__index_build_weight(reader->datasets[d]), first = consumed;
        int shards = reader->datasets[d]->options.source == UFORM_DATASET_SHARDS;
        for (;;) {
            if (*reader->cancelled) {
                ended = 0;
                break;
            }
            uform_dataset_read_t read = {0};
            read.dataset = reader->datasets[d];
            read.skip = to_skip;
            size_t before = read.dataset->read_next;
            uform_dataset_read(&read);
            /* Items a resume passes over (a dataset may hold fewer than there are to skip). */
            size_t passed = read.dataset->read_next - before - (read.done ? 0 : 1);
            consumed += passed, to_skip -= passed < to_skip ? passed : to_skip;
            if (read.done) break;
            size_t within = shards ? read.dataset->read_shard : consumed + 1 - first;
            reader->position = base + (within < weight ? within : weight);
            if (read_one(&reading, &read, consumed + 1) < 0) {
                failed = 1;
                break;
            }
            consumed += 1;
            if (reader->checkpoint && consumed % reader->checkpoint == 0) {
                failed = flush_batches(&reading, consumed);
                uform__unit_t *marker = failed ? NULL : calloc(1, sizeof *marker);
                if (marker) {
                    marker->kind = UFORM__UNIT_CHECKPOINT, marker->consumed = consumed;
                    failed = hand_over(&reading, marker);
                } else failed = 1;
                if (failed) break;
            }
        }
        base += weight, reader->position = base;
    }
    if (!failed && ended) {
        uform__unit_t *end = flush_batches(&reading, consumed) == 0 ? calloc(1, sizeof *end) : NULL;
        if (end) {
            end->kind = UFORM__UNIT_END, end->consumed = consumed;
            hand_over(&reading, end);
        } else {
            failed = 1; /* memory, or the consumer stopped (then no failure is recorded below) */
        }
    }
    for (int m = 0; m < 4; ++m) uform__unit_free(reading.batches[m]);
    for (size_t i = 0; i < reading.pending_count; ++i) free(reading.pending[i].path), free(reading.pending[i].message);
    free(reading.pending);
    pthread_mutex_lock(&reader->lock);
    if (failed && !reader->stop) {
        reader->failure = UFORM_OUT_OF_MEMORY;
        snprintf(reader->message, sizeof reader->message, "the reader ran out of memory after %zu items", consumed);
    }
    reader->stop = 1; /* the consumer takes what is queued, then sees the end */
    pthread_cond_broadcast(&reader->changed);
    pthread_mutex_unlock(&reader->lock);
    return NULL;
}

int uform__reader_start(uform__reader_t *reader, size_t capacity) {
    reader->queue = calloc(capacity, sizeof *reader->queue);
    if (!reader->queue) return -1;
    reader->capacity = capacity, reader->head = reader->length = 0, reader->stop = 0;
    pthread_mutex_init(&reader->lock, NULL);
    pthread_cond_init(&reader->changed, NULL);
    if (pthread_create(&reader->thread, NULL, reader_main, reader) != 0) {
        pthread_mutex_destroy(&reader->lock);
        pthread_cond_destroy(&reader->changed);
        free(reader->queue);
        reader->queue = NULL;
        return -1;
    }
    return 0;
}

void uform__reader_stop(uform__reader_t *reader) {
    pthread_mutex_lock(&reader->lock);
    reader->stop = 1;
    pthread_cond_broadcast(&reader->changed);
    pthread_mutex_unlock(&reader->lock);
    pthread_join(reader->thread, NULL);
    for (size_t i = 0; i < reader->length; ++i) uform__unit_free(reader->queue[(reader->head + i) % reader->capacity]);
    reader->length = 0;
    free(reader->queue);
    reader->queue = NULL;
    pthread_mutex_destroy(&reader->lock);
    pthread_cond_destroy(&reader->changed);
}
