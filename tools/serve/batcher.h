/*
 * The dynamic batcher of `uform serve`: requests from many connections become batches on one
 * executor.
 *
 * A request is a job of items. Each item enters the queue of its kind (one per modality, one for
 * text_choose); a batch takes up to `max_batch` items of one queue, or whatever arrived within
 * `max_wait_us` of its oldest item, so a request with more items than a batch is split across
 * batches and a batch mixes items of many requests. Every item's result goes straight to the
 * place its job gave it, so results come back in each request's order whatever the batches were.
 *
 * Two threads run it. The compute thread takes text and choose batches just in time (when the
 * executor is free: items that arrive while a batch computes join the next one) and runs every
 * batch on the compute executor. The prepare thread takes media batches and decodes them on the
 * decode executor (uform_media_prepare) into one of two slots while the compute thread encodes the
 * other (uform_prepared_encode): decoding runs beside compute. The batcher only encodes (and
 * chooses): what a route does with an embedding, such as searching an index, is the route's. A
 * route that wants its work to share the batch (one search call for every query of a batch, on
 * the compute executor) gives its jobs a follow-up (serve_followup_t), which the compute thread
 * runs right after the batch; the batcher knows nothing of what it does.
 *
 * It speaks the library's statuses, never HTTP: a job ends with a uform_status_t and a message,
 * and the HTTP layer alone turns those into answers (http_status.c).
 *
 * Nothing on that path allocates once the buffers have grown to the largest batch: tapes, offsets
 * and arenas belong to the batcher (a follow-up's buffers to its route), outputs to the jobs, and
 * queue links to the items.
 *
 * Why this lives in tools/ and not in libuform: it is a server's policy (how long to wait, how
 * deep to queue, when to give up), built entirely on the public ABI (blocking calls on executors,
 * arenas, prepare + prepared_encode), so it needs nothing internal; in the library it
 * would freeze an ABI for one caller and add threads that no executor owns. A C or Python program
 * that needs batching across its own threads calls the same verbs; `uform serve` is the batching
 * front end for everyone else.
 */
#ifndef UFORM_TOOLS_SERVE_BATCHER_H
#define UFORM_TOOLS_SERVE_BATCHER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics.h"
#include "uform/uform.h"

/* The batcher's queues: one per modality (numbered as uform_modality_t) and one for text_choose. */
enum { SERVE_QUEUE_CHOOSE = 4, SERVE_QUEUE_COUNT = 5 };

/* "text", "image", "video", "audio", "choose": a queue's name in messages and /metrics. */
const char *serve_queue_name(int queue);

typedef struct serve_job_t serve_job_t;
typedef struct serve_item_t serve_item_t;

/*
 * Work a route runs on the compute thread right after a batch has encoded items of its jobs:
 * `run` gets those items (their outputs written, none past its deadline) and the compute
 * executor, and records a job's failure with serve_job_fail. It must not allocate on every call
 * (its buffers are the route's, sized for max_batch items) nor block on anything but the executor.
 */
typedef struct serve_followup_t serve_followup_t;
struct serve_followup_t {
    void (*run)(serve_followup_t *followup, serve_item_t **items, size_t count, uform_executor_t compute);
};

/* One input of a job. The job's owner fills the fields marked "in" before submitting; the
 * batcher owns `next` and `queued_ns` while the item is queued. */
struct serve_item_t {
    struct serve_item_t *next;   /* batcher: the queue's link */
    uint64_t queued_ns;          /* batcher: when it was queued (CLOCK_MONOTONIC) */
    serve_job_t *job;            /* in */
    size_t index;                /* in: its position in the request (error messages name it) */
    int queue;                   /* in: a uform_modality_t, or SERVE_QUEUE_CHOOSE */
    const unsigned char *bytes;  /* in: the text, or the whole file; borrowed until the job is done */
    size_t size;
    const unsigned char *choices; /* in, choose: the legal next bytes (1..256, distinct) */
    size_t choices_size;
    size_t group;                /* in, choose: the temperature group */
    float *output;               /* in: where the result goes: E floats (the full, normalised
                                    embedding), or `choices_size` probabilities */
};

/*
 * A request's work. The owner allocates it with its items and outputs, fills the "in" fields and
 * submits it; the batcher calls `done` exactly once, on one of its threads, when every item is
 * resolved (computed, failed or timed out). After `done`, the job and its items belong to the
 * owner again; `failed` and `message` say how it ended.
 */
struct serve_job_t {
    serve_item_t *items;         /* in: [count] */
    size_t count;                /* in: at least 1 */
    uint64_t deadline_ns;        /* in: CLOCK_MONOTONIC time after which it fails UFORM_TIMEOUT; 0: none */
    serve_followup_t *followup;  /* in: NULL, or the route's work to run after its items are encoded */
    void (*done)(serve_job_t *job); /* in */
    void *context;               /* in: the owner's */
    atomic_size_t remaining;     /* batcher: items not yet resolved */
    atomic_int status;           /* out: UFORM_OK, or the uform_status_t of the first failure: UFORM_TIMEOUT past
                                    the deadline, UFORM_FORMAT or UFORM_UNSUPPORTED for an input that does not
                                    decode, else what the library answered (UFORM_OUT_OF_MEMORY ...) */
    char message[480];           /* out: that failure's message, naming the input ("input[3]: ...") */
};

typedef struct serve_batcher_config_t {
    uform_model_t model;
    uform_executor_t compute;    /* every encode and choose runs here */
    uform_executor_t decode;     /* media decoding; another executor than `compute` */
    size_t max_batch;            /* items per batch (≥ 1) */
    uint64_t max_wait_us;        /* how long a batch waits for more items after its oldest one */
    uint64_t spin_us;            /* how long the compute thread polls for work before it sleeps */
    size_t max_queue;            /* items queued (not yet in a batch), all queues together */
    serve_metrics_t *metrics;    /* may be NULL */
} serve_batcher_config_t;

typedef struct serve_batcher_s serve_batcher_t;

/* Starts the two threads and allocates every buffer for batches of `max_batch` (media tapes grow
 * with the largest files seen). Answers 0, or -1 with a message in `error`. */
int serve_batcher_start(const serve_batcher_config_t *config, serve_batcher_t **batcher, char *error, size_t capacity);

/* Queues every item of `job` (all or none). Thread-safe. Never calls `done` itself. Answers
 * UFORM_OK (queued: `done` will be called), or, with the reason in job->message:
 * UFORM_CONTENDED (the queues hold too many items now; try again later), UFORM_INVALID_ARGUMENT
 * (the job has more items than the queues ever hold), UFORM_CANCELLED (the batcher is stopping). */
uform_status_t serve_batcher_submit(serve_batcher_t *batcher, serve_job_t *job);

/* Records the first failure of a job (later ones are dropped): a uform_status_t and its message.
 * For a follow-up's failures; thread-safe. */
void serve_job_fail(serve_job_t *job, uform_status_t status, const char *format, ...) __attribute__((format(printf, 3, 4)));

/* Items queued now, per queue (a racy but exact-per-queue read, for /metrics). */
void serve_batcher_depths(serve_batcher_t *batcher, size_t depths[SERVE_QUEUE_COUNT]);

/* The embedding width E (every item's `output` holds E floats). */
size_t serve_batcher_embedding(const serve_batcher_t *batcher);

/* From now on batches take what is queued without waiting for more (a draining server still
 * accepts the requests it is reading). Thread-safe. */
void serve_batcher_flush(serve_batcher_t *batcher);

/* Refuses new jobs (submit answers UFORM_CANCELLED from now on), runs every queued item to the end
 * without waiting for batches to fill, and joins the threads: every submitted job's `done` has
 * been called when it returns. The batcher stays valid (for late submits) until freed. */
void serve_batcher_stop(serve_batcher_t *batcher);
/* Stops it if needed and frees it. NULL is a no-op. */
void serve_batcher_free(serve_batcher_t *batcher);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t serve_now_ns(void);

#endif
