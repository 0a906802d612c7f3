/*
 * uform_index_build's two halves: the reader thread (index_reader.c) turns the datasets' items into
 * work units — batches of one modality's bytes, checkpoint markers and the end — through a bounded
 * queue, so reading overlaps decoding and computing and memory holds a few batches; the build
 * (index_build.c) decodes, encodes and adds them, and writes checkpoints. Private to libuform.
 */
#ifndef UFORM_DATA_INDEX_BUILD_H
#define UFORM_DATA_INDEX_BUILD_H

#include <pthread.h>

#include "data/data.h"

/* A failure to list in the errors file. */
typedef struct uform__build_error_t {
    char *path;
    uform_status_t status;
    char *message;
    uform_data_error_t where;
} uform__build_error_t;

typedef enum uform__unit_kind_t { UFORM__UNIT_BATCH = 0, UFORM__UNIT_CHECKPOINT = 1, UFORM__UNIT_END = 2 } uform__unit_kind_t;

/* What the reader hands over, in item order. */
typedef struct uform__unit_t {
    uform__unit_kind_t kind;
    uform_modality_t modality;   /* batches */
    size_t count;                /* items */
    unsigned char *data;         /* the items' bytes end to end */
    size_t *offsets;             /* [count + 1] */
    size_t bytes, capacity, offsets_capacity;
    char **paths;                /* [count] the items' keys */
    uform__build_error_t *errors; /* items that failed before encoding, listed before this unit */
    size_t error_count, error_capacity;
    size_t consumed;             /* items consumed once this unit is done (checkpoints record it) */
    size_t position;             /* where the reader was when it handed the unit over, in the weights
                                    of index_build_mesh.c (an item, or a shard): members share by it */
    uform_media_prepare_t prepare; /* decoding ahead, owned by the build: must not move while deferred */
    int preparing;
} uform__unit_t;

void uform__unit_free(uform__unit_t *unit);

/* Keys already seen (resume and duplicates): a set of byte strings it owns. */
typedef struct uform__key_set_t {
    char **keys;
    size_t *lengths, capacity, count;
} uform__key_set_t;

/* Answers 1 when the key was there, 0 when it was added, -1 without memory. */
int uform__key_set_insert(uform__key_set_t *set, const char *key, size_t length);
void uform__key_set_free(uform__key_set_t *set);

typedef struct uform__reader_t {
    const uform_dataset_t *datasets;
    size_t dataset_count;
    size_t skip;                 /* items a resume passes over first */
    uform__key_set_t *seen;      /* keys indexed or listed so far (the reader's own while it runs) */
    const char *own[2];          /* the index and errors file's real paths: never indexed */
    unsigned modalities;         /* bits to index; others are counted as skipped */
    size_t batch;                /* items per batch */
    size_t batch_bytes;          /* a batch is handed over once its bytes reach this */
    size_t checkpoint;           /* flush and mark a checkpoint every this many items */
    size_t position;             /* the reader thread's own: see uform__unit_t's */
    volatile int *cancelled;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    uform__unit_t **queue;
    size_t capacity, head, length;
    int stop;                    /* the consumer gave up: pushes fail */
    size_t skipped, duplicates;  /* the reader's counts (read once it is joined) */
    uform_status_t failure;      /* the reader's own failure (memory), with `message` */
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
    pthread_t thread;
} uform__reader_t;

int uform__reader_start(uform__reader_t *reader, size_t capacity);
/* The next unit in order (blocking), or NULL when the reader stopped without an END unit. */
uform__unit_t *uform__reader_next(uform__reader_t *reader);
void uform__reader_stop(uform__reader_t *reader);

/* ---- over a mesh (index_build_mesh.c) ---- */

/* Member mesh->index's block (low, high] of the positions at which batches are handed over (the
 * items consumed then), of `items` in all; without a mesh, (0, items]. */
void uform__index_build_share(uform_mesh_t mesh, size_t items, size_t *low, size_t *high);
/* A dataset's weight in the positions members share by: its shards for shards (whose item count is
 * known only once read), else its items. */
size_t uform__index_build_weight(const uform_dataset_t dataset);
/* Collective, the first exchange of a shared build: whether every member could start (`ok`; one that
 * could not makes all fail, UFORM_PEER_LOST naming it), and whether each reads the same datasets
 * (fingerprints) and item count, and asks for the same approximate structure (`ann`: 0 for none,
 * else a hash of its settings), as member 0 (UFORM_CONFIG_MISMATCH naming the first that does not). */
uform_status_t uform__index_build_agree(uform_mesh_t mesh, int ok, const uform_dataset_t *datasets, size_t count, uint64_t items,
                                       uint64_t ann, uform_outcome_t *outcome, const char *function);
/* Collective: while this member's share is encoded on another thread, answers a round every 100 ms
 * saying whether it is done (*done, atomic), until every member's is; so a member that finishes
 * early waits at most a round for a live member, and the mesh's timeout bounds only how long a dead
 * one goes unnoticed. Answers the mesh's status. */
uform_status_t uform__index_build_rounds(uform_mesh_t mesh, const uint32_t *done, uform_outcome_t *outcome, const char *function);
/* Collective: gathers whether each member's share is done (`ok`; one not done makes every member
 * fail naming it), the members' item counts (their sum in *items) and their error lines, end to end
 * in member order, into a malloc'ed, NUL-terminated *all_errors. */
uform_status_t uform__index_build_gather(uform_mesh_t mesh, int ok, size_t count, const char *errors, size_t errors_length,
                                         size_t *items, char **all_errors, size_t *all_length, uform_outcome_t *outcome,
                                         const char *function);
/* Writes `length` bytes of error lines to `path` (created or truncated) and makes them durable. */
uform_status_t uform__index_build_write_errors(const char *path, const char *lines, size_t length, uform_outcome_t *outcome,
                                               const char *function);

#endif
