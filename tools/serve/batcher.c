/*
 * The batcher's queue side (batcher.h): start and stop, submitting jobs, the per-queue FIFOs,
 * deadlines, and resolving items. The batches themselves run in batcher_run.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "batcher_internal.h"

uint64_t serve_now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* ---- resolution ------------------------------------------------------------------------------ */

const char *serve_queue_name(int queue) {
    static const char *const names[SERVE_QUEUE_COUNT] = {"text", "image", "video", "audio", "choose"};
    return (unsigned)queue < SERVE_QUEUE_COUNT ? names[queue] : "unknown";
}

void serve_job_fail(serve_job_t *job, uform_status_t status, const char *format, ...) {
    int expected = UFORM_OK;
    if (!atomic_compare_exchange_strong_explicit(&job->status, &expected, (int)status, memory_order_acq_rel,
                                                 memory_order_relaxed))
        return;
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(job->message, sizeof job->message, format, arguments);
    va_end(arguments);
}

void serve__resolve(serve_job_t *job, size_t count) {
    /* acq_rel: the last resolver sees every result and message the others wrote before resolving. */
    if (atomic_fetch_sub_explicit(&job->remaining, count, memory_order_acq_rel) == count) job->done(job);
}

void serve__resolve_expired(serve_batcher_t *batcher, serve_item_t *expired) {
    while (expired) {
        serve_item_t *next = expired->next;
        serve_job_fail(expired->job, UFORM_TIMEOUT, "the request waited longer than --timeout before input[%zu] reached a batch",
                    expired->index);
        serve__resolve(expired->job, 1);
        expired = next;
    }
    (void)batcher;
}

void serve__resolve_dropped(serve_item_t *dropped) {
    while (dropped) {
        serve_item_t *next = dropped->next;
        serve__resolve(dropped->job, 1);
        dropped = next;
    }
}

/* ---- queues (lock held) ------------------------------------------------------------------------ */

static serve_item_t *pop_locked(serve_batcher_t *batcher, int queue) {
    serve_queue_t *q = &batcher->queues[queue];
    serve_item_t *item = q->head;
    if (!item) return NULL;
    q->head = item->next;
    if (!q->head) q->tail = NULL;
    q->length -= 1;
    batcher->queued -= 1;
    item->next = NULL;
    return item;
}

void serve__expire_locked(serve_batcher_t *batcher, uint64_t now, serve_item_t **expired) {
    /* Every request gets the same timeout from its headers' arrival, so deadlines grow along each
     * FIFO except behind a request whose body took long to arrive: only heads are checked, and an
     * item that expired behind a later head answers 504 when it reaches the head or when its batch
     * finishes (finish() checks again). */
    for (int queue = 0; queue < SERVE_QUEUE_COUNT; ++queue) {
        serve_item_t *head;
        while ((head = batcher->queues[queue].head) && head->job->deadline_ns && head->job->deadline_ns <= now) {
            serve_item_t *item = pop_locked(batcher, queue);
            item->next = *expired;
            *expired = item;
        }
    }
}

size_t serve__take_locked(serve_batcher_t *batcher, int queue, serve_item_t **out, serve_item_t **dropped) {
    size_t taken = 0;
    while (taken < batcher->config.max_batch && batcher->queues[queue].head) {
        serve_item_t *item = pop_locked(batcher, queue);
        if (atomic_load_explicit(&item->job->status, memory_order_acquire) != UFORM_OK) {
            item->next = *dropped;
            *dropped = item;
        } else {
            out[taken++] = item;
        }
    }
    return taken;
}

uint64_t serve__earliest_deadline_locked(const serve_batcher_t *batcher) {
    uint64_t earliest = UINT64_MAX;
    for (int queue = 0; queue < SERVE_QUEUE_COUNT; ++queue) {
        const serve_item_t *head = batcher->queues[queue].head;
        if (head && head->job->deadline_ns && head->job->deadline_ns < earliest) earliest = head->job->deadline_ns;
    }
    return earliest;
}

void serve__wake_compute_locked(serve_batcher_t *batcher) {
    atomic_fetch_add_explicit(&batcher->compute_signals, 1, memory_order_release);
    pthread_cond_signal(&batcher->compute_wakeup); /* one compute thread: a broadcast would wake no more */
}

void serve__wait_locked(serve_batcher_t *batcher, pthread_cond_t *condition, uint64_t until_ns) {
    if (until_ns == UINT64_MAX) {
        pthread_cond_wait(condition, &batcher->lock);
        return;
    }
    struct timespec until = {(time_t)(until_ns / 1000000000u), (long)(until_ns % 1000000000u)};
    pthread_cond_timedwait(condition, &batcher->lock, &until);
}

/* ---- the public side ------------------------------------------------------------------------- */

uform_status_t serve_batcher_submit(serve_batcher_t *batcher, serve_job_t *job) {
    if (job->count > batcher->config.max_queue) {
        snprintf(job->message, sizeof job->message, "the job holds %zu items; the queues hold at most %zu", job->count,
                 batcher->config.max_queue);
        return UFORM_INVALID_ARGUMENT;
    }
    atomic_store_explicit(&job->remaining, job->count, memory_order_relaxed);
    atomic_store_explicit(&job->status, UFORM_OK, memory_order_relaxed);
    job->message[0] = 0;
    uint64_t now = serve_now_ns();
    pthread_mutex_lock(&batcher->lock);
    uform_status_t answer = UFORM_OK;
    if (batcher->stopping) {
        answer = UFORM_CANCELLED;
        snprintf(job->message, sizeof job->message, "the batcher is stopping");
    } else if (batcher->queued + job->count > batcher->config.max_queue) {
        answer = UFORM_CONTENDED;
        snprintf(job->message, sizeof job->message, "the queues are full (%zu items)", batcher->config.max_queue);
    }
    if (answer != UFORM_OK) {
        pthread_mutex_unlock(&batcher->lock);
        return answer;
    }
    int media = 0, direct = 0;
    for (size_t i = 0; i < job->count; ++i) {
        serve_item_t *item = &job->items[i];
        serve_queue_t *q = &batcher->queues[item->queue];
        item->next = NULL, item->queued_ns = now;
        if (q->tail) q->tail->next = item;
        else q->head = item;
        q->tail = item;
        q->length += 1;
        if (item->queue == UFORM_MODALITY_TEXT || item->queue == SERVE_QUEUE_CHOOSE) direct = 1;
        else media = 1;
    }
    batcher->queued += job->count;
    if (direct) serve__wake_compute_locked(batcher);
    if (media) pthread_cond_signal(&batcher->prepare_wakeup);
    pthread_mutex_unlock(&batcher->lock);
    return UFORM_OK;
}

void serve_batcher_depths(serve_batcher_t *batcher, size_t depths[SERVE_QUEUE_COUNT]) {
    pthread_mutex_lock(&batcher->lock);
    for (int queue = 0; queue < SERVE_QUEUE_COUNT; ++queue) depths[queue] = batcher->queues[queue].length;
    pthread_mutex_unlock(&batcher->lock);
}

size_t serve_batcher_embedding(const serve_batcher_t *batcher) { return batcher->embedding; }

/* ---- start and stop -------------------------------------------------------------------------- */

static void release(serve_batcher_t *batcher) {
    for (int s = 0; s < 2; ++s) {
        free(batcher->slots[s].items), free(batcher->slots[s].data), free(batcher->slots[s].offsets);
        uform_arena_free(batcher->slots[s].arena);
    }
    uform_arena_free(batcher->arena);
    free(batcher->batch), free(batcher->tape), free(batcher->choices), free(batcher->offsets);
    free(batcher->choice_offsets), free(batcher->groups), free(batcher->followed);
    free(batcher->followup_items);
    pthread_mutex_destroy(&batcher->lock);
    pthread_cond_destroy(&batcher->compute_wakeup);
    pthread_cond_destroy(&batcher->prepare_wakeup);
    free(batcher);
}

static int failure(char *error, size_t capacity, const uform_outcome_t *outcome, const char *what) {
    if (outcome) {
        char line[600];
        uform_outcome_format(outcome, line, sizeof line);
        snprintf(error, capacity, "%s: %s", what, line);
    } else {
        snprintf(error, capacity, "%s", what);
    }
    return -1;
}

int serve_batcher_start(const serve_batcher_config_t *config, serve_batcher_t **out, char *error, size_t capacity) {
    *out = NULL;
    if (!config->model || !config->decode || config->decode == config->compute || config->max_batch == 0 ||
        config->max_queue == 0)
        return failure(error, capacity, NULL, "the batcher needs a model, a decode executor of its own, and batches and queues of at least 1");
    uform_model_describe_t describe = {config->model};
    if (uform_model_describe(&describe) != UFORM_OK) return failure(error, capacity, &describe.outcome, "cannot describe the model");
    serve_batcher_t *batcher = calloc(1, sizeof *batcher);
    if (!batcher) return failure(error, capacity, NULL, "out of memory");
    batcher->config = *config;
    batcher->embedding = describe.description.embedding;
    pthread_mutex_init(&batcher->lock, NULL);
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&batcher->compute_wakeup, &attributes);
    pthread_cond_init(&batcher->prepare_wakeup, &attributes);
    pthread_condattr_destroy(&attributes);

    size_t max_batch = config->max_batch;
    /* Room for a batch of short texts at first; gather_texts grows it. */
    batcher->tape_capacity = max_batch * 256;
    int failed = !(batcher->batch = calloc(max_batch, sizeof *batcher->batch)) ||
                 !(batcher->tape = malloc(batcher->tape_capacity)) || !(batcher->choices = malloc(max_batch * 256)) ||
                 !(batcher->offsets = calloc(max_batch + 1, sizeof(size_t))) ||
                 !(batcher->choice_offsets = calloc(max_batch + 1, sizeof(size_t))) ||
                 !(batcher->groups = calloc(max_batch, sizeof(size_t))) ||
                 !(batcher->followed = calloc(max_batch, sizeof *batcher->followed)) ||
                 !(batcher->followup_items = calloc(max_batch, sizeof *batcher->followup_items));
    for (int s = 0; s < 2 && !failed; ++s)
        failed = !(batcher->slots[s].items = calloc(max_batch, sizeof(serve_item_t *))) ||
                 !(batcher->slots[s].offsets = calloc(max_batch + 1, sizeof(size_t)));
    if (failed) {
        release(batcher);
        return failure(error, capacity, NULL, "out of memory for the batcher's buffers");
    }
    uform_outcome_t outcome = {0};
    if (uform_arena_for_executor(config->compute, &batcher->arena, &outcome) != UFORM_OK ||
        uform_arena_for_executor(config->decode, &batcher->slots[0].arena, &outcome) != UFORM_OK ||
        uform_arena_for_executor(config->decode, &batcher->slots[1].arena, &outcome) != UFORM_OK) {
        release(batcher);
        return failure(error, capacity, &outcome, "cannot make the batcher's arenas");
    }
    if (pthread_create(&batcher->prepare_thread, NULL, serve__prepare_main, batcher) != 0) {
        release(batcher);
        return failure(error, capacity, NULL, "cannot start the batcher's prepare thread");
    }
    if (pthread_create(&batcher->compute_thread, NULL, serve__compute_main, batcher) != 0) {
        pthread_mutex_lock(&batcher->lock);
        batcher->stopping = 1;
        pthread_cond_broadcast(&batcher->prepare_wakeup);
        pthread_mutex_unlock(&batcher->lock);
        pthread_join(batcher->prepare_thread, NULL);
        release(batcher);
        return failure(error, capacity, NULL, "cannot start the batcher's compute thread");
    }
    batcher->threads_started = 1;
    *out = batcher;
    return 0;
}

void serve_batcher_flush(serve_batcher_t *batcher) {
    if (!batcher) return;
    pthread_mutex_lock(&batcher->lock);
    batcher->flushing = 1;
    serve__wake_compute_locked(batcher);
    pthread_cond_broadcast(&batcher->prepare_wakeup);
    pthread_mutex_unlock(&batcher->lock);
}

void serve_batcher_stop(serve_batcher_t *batcher) {
    if (!batcher || !batcher->threads_started) return;
    pthread_mutex_lock(&batcher->lock);
    batcher->stopping = 1, batcher->flushing = 1;
    serve__wake_compute_locked(batcher);
    pthread_cond_broadcast(&batcher->prepare_wakeup);
    pthread_mutex_unlock(&batcher->lock);
    pthread_join(batcher->prepare_thread, NULL);
    pthread_join(batcher->compute_thread, NULL);
    batcher->threads_started = 0;
}

void serve_batcher_free(serve_batcher_t *batcher) {
    if (!batcher) return;
    serve_batcher_stop(batcher);
    release(batcher);
}
