/*
 * `uform index` internals shared by its two files: the inputs (uform_index.c enumerates them),
 * and the reader thread (uform_index_reader.c) that turns them into work units — batches of one
 * modality's file bytes, checkpoint markers and the end — through a bounded queue, so reading
 * and probing files overlap decoding and computing, and memory holds a few batches at most.
 */
#ifndef UFORM_TOOLS_UFORM_INDEX_H
#define UFORM_TOOLS_UFORM_INDEX_H

#include <pthread.h>
#include <signal.h>

#include "uform/uform.h"

/* One input: a file to read, or an inline text from a manifest. */
typedef struct index_input_t {
    char *path;       /* the item's path as the index stores it */
    char *text;       /* inline text (manifest "text"), or NULL: read `path` */
    int modality;     /* a manifest's "modality", or -1: probe the bytes */
    char *error;      /* a problem found while enumerating (the manifest line's), or NULL */
} index_input_t;

/* A failure to list in INDEX.errors.jsonl. */
typedef struct index_error_t {
    char *path;
    uform_status_t status;
    char *message;
} index_error_t;

typedef enum index_unit_kind_t { UNIT_BATCH = 0, UNIT_CHECKPOINT = 1, UNIT_END = 2 } index_unit_kind_t;

/* What the reader hands over, in input order. */
typedef struct index_unit_t {
    index_unit_kind_t kind;
    uform_modality_t modality;   /* batches */
    size_t count;                /* items */
    unsigned char *data;         /* the items' bytes end to end (file contents, or inline text) */
    size_t *offsets;             /* [count + 1] */
    size_t bytes, capacity, offsets_capacity;
    char **paths;                /* [count] */
    index_error_t *errors;       /* inputs that failed before encoding (read, probe), listed before this unit */
    size_t error_count, error_capacity;
    size_t consumed;             /* inputs consumed once this unit is done (checkpoints record it) */
    /* Decoding ahead, owned by the main loop: the prepare request must not move while deferred. */
    uform_media_prepare_t prepare;
    int preparing;
} index_unit_t;

void index_unit_free(index_unit_t *unit);

/* The reader: what it reads, how it batches, and the queue it fills. */
typedef struct index_reader_t {
    const index_input_t *inputs;
    size_t input_count;
    const unsigned char *skip;   /* [input_count] non-zero: already in the index or its errors (resume) */
    unsigned modalities;         /* bits of the modalities to index; others are counted as skipped */
    size_t batch;                /* items per batch */
    size_t batch_bytes;          /* a batch is handed over once its bytes reach this */
    size_t checkpoint;           /* flush every batch and mark a checkpoint every this many inputs */
    volatile sig_atomic_t *interrupted;
    /* The queue (capacity units), guarded by `lock`. */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    index_unit_t **queue;
    size_t capacity, head, length;
    int stop;                    /* the consumer gave up: push fails */
    size_t skipped;              /* items of unselected modalities (reader-owned until joined) */
    pthread_t thread;
} index_reader_t;

/* Starts the reader thread; answers 0 on success. */
int index_reader_start(index_reader_t *reader, size_t capacity);
/* The next unit in order (blocking), or NULL when the reader stopped without an END unit. */
index_unit_t *index_reader_next(index_reader_t *reader);
/* Stops the reader (if still running), frees what is queued, joins the thread. */
void index_reader_stop(index_reader_t *reader);

#endif
