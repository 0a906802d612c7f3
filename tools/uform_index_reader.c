/*
 * The reader thread of `uform index`: reads each input's bytes, decides its modality (a manifest's,
 * or uform_media_probe's by content), and fills one batch per modality; a full batch (by items or
 * bytes) goes into a bounded queue, so the files of batch n+1 are read while batch n decodes and
 * computes, and at most `capacity` units wait. Every `checkpoint` inputs it hands over all partial
 * batches and a checkpoint marker: a run and a resumed run then cut the same batches. Inputs that
 * cannot be read or recognised become error records, handed over with the next unit.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "uform_index.h"

/* Files above this are refused (the decoders take whole files in memory). */
#define MAX_FILE_BYTES ((size_t)4 << 30)

void index_unit_free(index_unit_t *unit) {
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

/* ---- the queue ---- */

static int push(index_reader_t *reader, index_unit_t *unit) {
    pthread_mutex_lock(&reader->lock);
    while (reader->length == reader->capacity && !reader->stop) pthread_cond_wait(&reader->changed, &reader->lock);
    int stopped = reader->stop;
    if (!stopped) {
        reader->queue[(reader->head + reader->length) % reader->capacity] = unit;
        reader->length += 1;
        pthread_cond_broadcast(&reader->changed);
    }
    pthread_mutex_unlock(&reader->lock);
    if (stopped) index_unit_free(unit);
    return stopped ? -1 : 0;
}

index_unit_t *index_reader_next(index_reader_t *reader) {
    pthread_mutex_lock(&reader->lock);
    while (reader->length == 0 && !reader->stop) pthread_cond_wait(&reader->changed, &reader->lock);
    index_unit_t *unit = NULL;
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
    index_reader_t *reader;
    index_unit_t *batches[4];    /* being filled, per modality */
    index_error_t *pending;      /* errors not handed over yet */
    size_t pending_count, pending_capacity;
    unsigned char *scratch;      /* the current file */
    size_t scratch_capacity;
} reading_t;

static void add_error(reading_t *reading, const char *path, uform_status_t status, const char *message) {
    if (grow((void **)&reading->pending, &reading->pending_capacity, reading->pending_count + 1, sizeof(index_error_t)))
        return;
    index_error_t *error = &reading->pending[reading->pending_count++];
    error->path = strdup(path), error->status = status, error->message = strdup(message);
}

/* Hands a unit over with the errors pending; answers -1 once the consumer stopped. */
static int hand_over(reading_t *reading, index_unit_t *unit) {
    unit->errors = reading->pending, unit->error_count = reading->pending_count;
    unit->error_capacity = reading->pending_capacity;
    reading->pending = NULL, reading->pending_count = reading->pending_capacity = 0;
    return push(reading->reader, unit);
}

static int flush_batches(reading_t *reading, size_t consumed) {
    for (int m = 0; m < 4; ++m) {
        index_unit_t *unit = reading->batches[m];
        if (!unit) continue;
        reading->batches[m] = NULL;
        unit->consumed = consumed;
        if (hand_over(reading, unit)) return -1;
    }
    return 0;
}

/* Reads a whole regular file into the scratch buffer; answers its size, or -1 with `message` set. */
static long long read_file(reading_t *reading, const char *path, char *message, size_t capacity, uform_status_t *status) {
    *status = UFORM_IO;
    int descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (descriptor < 0) {
        snprintf(message, capacity, "cannot open '%s': %s", path, strerror(errno));
        return -1;
    }
    struct stat info;
    if (fstat(descriptor, &info) != 0 || !S_ISREG(info.st_mode)) {
        snprintf(message, capacity, "'%s' is not a regular file", path);
        close(descriptor);
        return -1;
    }
    size_t size = (size_t)info.st_size;
    if (size > MAX_FILE_BYTES) {
        snprintf(message, capacity, "'%s' holds %zu bytes, more than the %zu this command reads", path, size, MAX_FILE_BYTES);
        *status = UFORM_FORMAT;
        close(descriptor);
        return -1;
    }
    if (grow((void **)&reading->scratch, &reading->scratch_capacity, size + 1, 1)) {
        snprintf(message, capacity, "cannot allocate %zu bytes for '%s'", size, path);
        *status = UFORM_OUT_OF_MEMORY;
        close(descriptor);
        return -1;
    }
    size_t done = 0;
    while (done < size) {
        ssize_t got = read(descriptor, reading->scratch + done, size - done);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break; /* the file shrank: index what is there */
        done += (size_t)got;
    }
    close(descriptor);
    return (long long)done;
}

/* Appends an item to its modality's batch, handing the batch over when full. */
static int add_item(reading_t *reading, uform_modality_t modality, const char *path, const void *bytes, size_t size,
                    size_t consumed) {
    index_reader_t *reader = reading->reader;
    index_unit_t *unit = reading->batches[modality];
    if (!unit) {
        unit = calloc(1, sizeof *unit);
        if (!unit) return -1;
        unit->kind = UNIT_BATCH, unit->modality = modality;
        reading->batches[modality] = unit;
    }
    if (grow((void **)&unit->data, &unit->capacity, unit->bytes + size + 1, 1) ||
        grow((void **)&unit->offsets, &unit->offsets_capacity, unit->count + 2, sizeof(size_t)) ||
        !(unit->paths = realloc(unit->paths, (unit->count + 1) * sizeof(char *))))
        return -1;
    if (size) memcpy(unit->data + unit->bytes, bytes, size);
    unit->offsets[0] = 0;
    unit->bytes += size;
    unit->offsets[++unit->count] = unit->bytes;
    unit->paths[unit->count - 1] = strdup(path);
    if (unit->count >= reader->batch || unit->bytes >= reader->batch_bytes) {
        reading->batches[modality] = NULL;
        unit->consumed = consumed;
        return hand_over(reading, unit);
    }
    return 0;
}

static int read_input(reading_t *reading, const index_input_t *input, size_t consumed) {
    index_reader_t *reader = reading->reader;
    if (input->error) {
        add_error(reading, input->path, UFORM_FORMAT, input->error);
        return 0;
    }
    const void *bytes;
    size_t size;
    if (input->text) {
        bytes = input->text, size = strlen(input->text);
    } else {
        char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
        uform_status_t status;
        long long got = read_file(reading, input->path, message, sizeof message, &status);
        if (got < 0) {
            add_error(reading, input->path, status, message);
            return 0;
        }
        bytes = reading->scratch, size = (size_t)got;
    }
    uform_modality_t modality = input->text ? UFORM_MODALITY_TEXT : UFORM_MODALITY_IMAGE;
    if (input->modality >= 0) modality = (uform_modality_t)input->modality;
    else if (!input->text) {
        uform_outcome_t outcome = {0};
        if (uform_media_probe(bytes, size, &modality, &outcome) != UFORM_OK) {
            add_error(reading, input->path, uform_outcome_status(&outcome), outcome.message);
            return 0;
        }
    }
    if (size == 0 && modality != UFORM_MODALITY_TEXT) {
        add_error(reading, input->path, UFORM_FORMAT, "the file is empty");
        return 0;
    }
    if (!(reader->modalities & (1u << modality))) {
        reader->skipped += 1;
        return 0;
    }
    return add_item(reading, modality, input->path, bytes, size, consumed);
}

static void *reader_main(void *pointer) {
    index_reader_t *reader = pointer;
    reading_t reading;
    memset(&reading, 0, sizeof reading);
    reading.reader = reader;
    int failed = 0;
    size_t consumed = 0;
    for (; consumed < reader->input_count && !failed; ++consumed) {
        if (*reader->interrupted) break;
        if (!reader->skip || !reader->skip[consumed]) failed = read_input(&reading, &reader->inputs[consumed], consumed + 1);
        size_t done = consumed + 1;
        if (!failed && reader->checkpoint && done % reader->checkpoint == 0 && done < reader->input_count) {
            failed = flush_batches(&reading, done);
            index_unit_t *marker = failed ? NULL : calloc(1, sizeof *marker);
            if (marker) {
                marker->kind = UNIT_CHECKPOINT, marker->consumed = done;
                failed = hand_over(&reading, marker);
            } else failed = -1;
        }
    }
    if (!failed && !*reader->interrupted && consumed == reader->input_count && flush_batches(&reading, consumed) == 0) {
        index_unit_t *end = calloc(1, sizeof *end);
        if (end) {
            end->kind = UNIT_END, end->consumed = consumed;
            hand_over(&reading, end);
        }
    }
    for (int m = 0; m < 4; ++m) index_unit_free(reading.batches[m]);
    for (size_t i = 0; i < reading.pending_count; ++i) free(reading.pending[i].path), free(reading.pending[i].message);
    free(reading.pending);
    free(reading.scratch);
    /* Wake the consumer in case it waits for a unit that will not come. */
    pthread_mutex_lock(&reader->lock);
    reader->stop = reader->stop || failed || *reader->interrupted || consumed < reader->input_count ? 1 : reader->stop;
    pthread_cond_broadcast(&reader->changed);
    pthread_mutex_unlock(&reader->lock);
    return NULL;
}

int index_reader_start(index_reader_t *reader, size_t capacity) {
    reader->queue = calloc(capacity, sizeof *reader->queue);
    if (!reader->queue) return -1;
    reader->capacity = capacity, reader->head = reader->length = 0, reader->stop = 0;
    pthread_mutex_init(&reader->lock, NULL);
    pthread_cond_init(&reader->changed, NULL);
    return pthread_create(&reader->thread, NULL, reader_main, reader) == 0 ? 0 : -1;
}

void index_reader_stop(index_reader_t *reader) {
    pthread_mutex_lock(&reader->lock);
    reader->stop = 1;
    pthread_cond_broadcast(&reader->changed);
    pthread_mutex_unlock(&reader->lock);
    pthread_join(reader->thread, NULL);
    for (size_t i = 0; i < reader->length; ++i) index_unit_free(reader->queue[(reader->head + i) % reader->capacity]);
    reader->length = 0;
    free(reader->queue);
    pthread_mutex_destroy(&reader->lock);
    pthread_cond_destroy(&reader->changed);
}
