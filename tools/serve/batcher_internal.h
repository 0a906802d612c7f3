/* The batcher's state, shared by its queue side (batcher.c) and its batch side (batcher_run.c). */
#ifndef UFORM_TOOLS_SERVE_BATCHER_INTERNAL_H
#define UFORM_TOOLS_SERVE_BATCHER_INTERNAL_H

#include <pthread.h>

#include "batcher.h"

typedef struct serve_queue_t {
    serve_item_t *head, *tail;
    size_t length;
} serve_queue_t;

typedef enum slot_state_t { SLOT_FREE = 0, SLOT_PREPARING, SLOT_READY, SLOT_COMPUTING } slot_state_t;

/* A media batch: its items' files end to end, decoded into the slot's own arena. */
typedef struct serve_slot_t {
    slot_state_t state;          /* guarded by the batcher's lock */
    uform_modality_t modality;
    size_t count;
    serve_item_t **items;        /* [max_batch]; NULL once an item is resolved (it failed to decode) */
    uint64_t oldest_ns;          /* its first item's queue time: how it competes with the queues */
    unsigned char *data;         /* grows to the largest batch of files seen */
    size_t capacity;
    size_t *offsets;             /* [max_batch + 1] */
    uform_arena_t arena;
    uform_media_prepare_t prepare;
} serve_slot_t;

struct serve_batcher_s {
    serve_batcher_config_t config;
    size_t embedding;

    pthread_mutex_t lock;
    pthread_cond_t compute_wakeup;  /* text or choose items, a ready slot, stopping */
    atomic_uint compute_signals;    /* counts those signals: what a spinning compute thread polls */
    pthread_cond_t prepare_wakeup;  /* media items, a free slot, stopping */
    serve_queue_t queues[SERVE_QUEUE_COUNT];
    size_t queued;                  /* items in all queues */
    int stopping;
    int flushing;                   /* batches no longer wait for company (set by flush and stop) */
    int preparer_exited;
    serve_slot_t slots[2];

    /* The compute thread's own buffers. */
    uform_arena_t arena;            /* encode and choose outputs */
    serve_item_t **batch;           /* [max_batch] */
    unsigned char *tape;            /* [tape_capacity]: the texts of a batch, whole */
    size_t tape_capacity;           /* grows to the largest batch of texts seen */
    unsigned char *choices;         /* [max_batch · 256]: their legal next bytes (choose) */
    size_t *offsets, *choice_offsets; /* [max_batch + 1] each */
    size_t *groups;                 /* [max_batch] */
    serve_item_t **followed;        /* [max_batch]: a batch's items whose jobs have a follow-up */
    serve_item_t **followup_items;  /* [max_batch]: those of the follow-up being run */

    pthread_t compute_thread, prepare_thread;
    int threads_started;
};

/* Both threads' loops (batcher_run.c). */
void *serve__compute_main(void *batcher);
void *serve__prepare_main(void *batcher);

/* Queue side (batcher.c), called with the lock held unless said otherwise. */
/* Moves every queued item whose job's deadline has passed onto `*expired`. */
void serve__expire_locked(serve_batcher_t *batcher, uint64_t now, serve_item_t **expired);
/* Takes up to max_batch items of `queue` into `out`; items of jobs that already failed go onto
 * `*dropped` instead. Answers how many were taken into `out`. */
size_t serve__take_locked(serve_batcher_t *batcher, int queue, serve_item_t **out, serve_item_t **dropped);
/* The earliest deadline of the items at the queues' heads (UINT64_MAX: none). */
uint64_t serve__earliest_deadline_locked(const serve_batcher_t *batcher);
/* Signals the compute thread (compute_wakeup and compute_signals). */
void serve__wake_compute_locked(serve_batcher_t *batcher);
/* Waits on `condition` until `until_ns` (UINT64_MAX: no limit). */
void serve__wait_locked(serve_batcher_t *batcher, pthread_cond_t *condition, uint64_t until_ns);

/* Resolution (no lock held). */
/* Marks `count` items of the job resolved; the last one calls `done`. */
void serve__resolve(serve_job_t *job, size_t count);
/* Resolves a chain of expired items (UFORM_TIMEOUT) or dropped ones (their job already failed). */
void serve__resolve_expired(serve_batcher_t *batcher, serve_item_t *expired);
void serve__resolve_dropped(serve_item_t *dropped);

#endif
