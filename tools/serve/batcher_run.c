/*
 * The batcher's two threads (batcher.h): the prepare thread decodes media batches into slots, the
 * compute thread runs text and choose batches and prepared media slots on the compute executor
 * and hands every item's result to its job. Neither allocates once its buffers
 * have grown to the largest batch.
 */
#include <sched.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "batcher_internal.h"

/* ---- finishing a batch ------------------------------------------------------------------------ */

static void fail_all(serve_item_t **items, size_t count, const uform_outcome_t *outcome) {
    char line[600];
    uform_outcome_format(outcome, line, sizeof line);
    for (size_t i = 0; i < count; ++i) {
        if (!items[i]) continue;
        /* The inputs were checked before they were queued: a whole batch failing is the server's
         * trouble (the library's status says which), never an input's. */
        uform_status_t status = uform_outcome_status(outcome);
        serve_job_fail(items[i]->job, status == UFORM_FORMAT || status == UFORM_UNSUPPORTED ? UFORM_INTERNAL : status,
                    "input[%zu]: %s", items[i]->index, line);
        serve__resolve(items[i]->job, 1);
    }
}

/* Copies the rows of an embeddings view into the items' outputs (row k to items[k]). */
static int scatter_rows(serve_batcher_t *batcher, const uform_matrix_t *view, serve_item_t **items, size_t count) {
    for (size_t k = 0; k < count; ++k) {
        const void *row = NULL;
        if (uform_matrix_row(view, k, &row) != UFORM_OK) return -1;
        memcpy(items[k]->output, row, batcher->embedding * sizeof(float));
    }
    return 0;
}

/* Every item of a computed batch (its output written): late ones fail UFORM_TIMEOUT, items of
 * jobs with a follow-up get it run (one call per follow-up for all its items of the batch), then
 * everything resolves. NULL entries were resolved already. */
static void finish(serve_batcher_t *batcher, serve_item_t **items, size_t count) {
    uint64_t now = serve_now_ns();
    size_t pending = 0; /* items waiting for their follow-up, gathered in `followed` */
    for (size_t i = 0; i < count; ++i) {
        serve_item_t *item = items[i];
        if (!item) continue;
        serve_job_t *job = item->job;
        if (job->deadline_ns && now > job->deadline_ns) {
            serve_job_fail(job, UFORM_TIMEOUT, "the request took longer than --timeout (input[%zu] was computed too late)", item->index);
            serve__resolve(job, 1);
        } else if (job->followup) {
            batcher->followed[pending++] = item;
        } else {
            serve__resolve(job, 1);
        }
    }
    /* One run per distinct follow-up (a server has one: the search route's), in batch order. */
    while (pending) {
        serve_followup_t *followup = batcher->followed[0]->job->followup;
        size_t same = 0, rest = 0;
        for (size_t i = 0; i < pending; ++i) {
            serve_item_t *item = batcher->followed[i];
            if (item->job->followup == followup) batcher->followup_items[same++] = item;
            else batcher->followed[rest++] = item;
        }
        followup->run(followup, batcher->followup_items, same, batcher->config.compute);
        for (size_t i = 0; i < same; ++i) serve__resolve(batcher->followup_items[i]->job, 1);
        pending = rest;
    }
}

/* ---- the batches ------------------------------------------------------------------------------ */

/* The batch's texts end to end on the tape, whole: the library keeps what its model reads (a native
 * model's first text_bytes bytes, a choice prefix's last ones, a tokenizer's first tokens), so the
 * server never re-derives a truncation. The tape grows to the largest batch seen, then stays.
 * Answers 0, or -1 after failing every item (out of memory). */
static int gather_texts(serve_batcher_t *batcher, serve_item_t **items, size_t count) {
    size_t needed = 0, used = 0;
    for (size_t i = 0; i < count; ++i) needed += items[i]->size;
    if (needed > batcher->tape_capacity) {
        unsigned char *grown = realloc(batcher->tape, needed);
        if (!grown) {
            uform_outcome_t outcome = {0};
            snprintf(outcome.message, sizeof outcome.message, "out of memory for %zu bytes of texts", needed);
            outcome.status = UFORM_OUT_OF_MEMORY;
            fail_all(items, count, &outcome);
            return -1;
        }
        batcher->tape = grown, batcher->tape_capacity = needed;
    }
    batcher->offsets[0] = 0;
    for (size_t i = 0; i < count; ++i) {
        if (items[i]->size) memcpy(batcher->tape + used, items[i]->bytes, items[i]->size);
        used += items[i]->size;
        batcher->offsets[i + 1] = used;
    }
    return 0;
}

static void run_text(serve_batcher_t *batcher, size_t count) {
    serve_item_t **items = batcher->batch;
    if (gather_texts(batcher, items, count)) return;
    uform_text_encode_t request = {0};
    request.model = batcher->config.model, request.executor = batcher->config.compute;
    request.texts = (uform_tape_t){batcher->tape, batcher->offsets, count};
    request.outputs = UFORM_OUTPUTS_EMBEDDINGS, request.arena = batcher->arena;
    uint64_t started = serve_now_ns();
    uform_status_t status = uform_text_encode(&request);
    serve_metrics_batch(batcher->config.metrics, UFORM_MODALITY_TEXT, count, (double)(serve_now_ns() - started) * 1e-9);
    if (status != UFORM_OK || scatter_rows(batcher, &request.encoded.embeddings, items, count) != 0) {
        fail_all(items, count, &request.outcome);
        return;
    }
    finish(batcher, items, count);
}

static void run_choose(serve_batcher_t *batcher, size_t count) {
    serve_item_t **items = batcher->batch;
    if (gather_texts(batcher, items, count)) return;
    size_t chosen = 0;
    batcher->choice_offsets[0] = 0;
    for (size_t i = 0; i < count; ++i) {
        memcpy(batcher->choices + chosen, items[i]->choices, items[i]->choices_size);
        chosen += items[i]->choices_size;
        batcher->choice_offsets[i + 1] = chosen;
        batcher->groups[i] = items[i]->group;
    }
    uform_text_choose_t request = {0};
    request.model = batcher->config.model, request.executor = batcher->config.compute;
    request.texts = (uform_tape_t){batcher->tape, batcher->offsets, count};
    request.choices = (uform_tape_t){batcher->choices, batcher->choice_offsets, count};
    request.groups = batcher->groups, request.arena = batcher->arena;
    uint64_t started = serve_now_ns();
    uform_status_t status = uform_text_choose(&request);
    serve_metrics_batch(batcher->config.metrics, SERVE_QUEUE_CHOOSE, count, (double)(serve_now_ns() - started) * 1e-9);
    if (status == UFORM_OK) {
        for (size_t i = 0; i < count && status == UFORM_OK; ++i)
            for (size_t c = 0; c < items[i]->choices_size; ++c) {
                const void *row = NULL;
                if (uform_matrix_row(&request.probabilities.matrix, request.probabilities.offsets[i] + c, &row) != UFORM_OK) {
                    status = UFORM_INTERNAL;
                    break;
                }
                items[i]->output[c] = *(const float *)row;
            }
    }
    if (status != UFORM_OK) {
        fail_all(items, count, &request.outcome);
        return;
    }
    finish(batcher, items, count);
}

/* Decodes a slot's files on the decode executor; an item that does not decode answers 422 naming
 * it and leaves the batch. Answers how many items are left to encode. */
static size_t prepare_slot(serve_batcher_t *batcher, serve_slot_t *slot) {
    size_t bytes = 0;
    for (size_t i = 0; i < slot->count; ++i) bytes += slot->items[i]->size;
    if (bytes + 1 > slot->capacity) { /* grows to the largest batch of files, then stays */
        unsigned char *grown = realloc(slot->data, bytes + 1);
        if (!grown) {
            uform_outcome_t outcome = {UFORM_OUT_OF_MEMORY, 0, "uform serve", "cannot hold a batch of media files"};
            fail_all(slot->items, slot->count, &outcome);
            return 0;
        }
        slot->data = grown, slot->capacity = bytes + 1;
    }
    size_t used = 0;
    slot->offsets[0] = 0;
    for (size_t i = 0; i < slot->count; ++i) {
        memcpy(slot->data + used, slot->items[i]->bytes, slot->items[i]->size);
        used += slot->items[i]->size;
        slot->offsets[i + 1] = used;
    }
    uform_media_prepare_t *prepare = &slot->prepare;
    memset(prepare, 0, sizeof *prepare);
    prepare->model = batcher->config.model, prepare->executor = batcher->config.decode;
    prepare->modality = slot->modality;
    prepare->files = (uform_tape_t){slot->data, slot->offsets, slot->count};
    prepare->arena = slot->arena;
    if (uform_media_prepare(prepare) != UFORM_OK) {
        fail_all(slot->items, slot->count, &prepare->outcome);
        return 0;
    }
    size_t left = slot->count;
    for (size_t i = 0; i < slot->count; ++i) {
        const uform_outcome_t *outcome = &prepare->prepared.item_outcomes[i];
        if (outcome->status == UFORM_OK) continue;
        serve_item_t *item = slot->items[i];
        serve_job_fail(item->job, outcome->status, "input[%zu]: cannot decode the %s: %s", item->index,
                    serve_queue_name(slot->modality), outcome->message);
        serve__resolve(item->job, 1);
        slot->items[i] = NULL;
        left -= 1;
    }
    return left;
}

static void run_slot(serve_batcher_t *batcher, serve_slot_t *slot) {
    serve_item_t **items = batcher->batch; /* the slot's items that decoded, in order */
    size_t count = 0;
    for (size_t i = 0; i < slot->count; ++i)
        if (slot->items[i]) items[count++] = slot->items[i];
    uform_prepared_encode_t request = {0};
    request.model = batcher->config.model, request.executor = batcher->config.compute;
    request.prepared = &slot->prepare.prepared;
    request.outputs = UFORM_OUTPUTS_EMBEDDINGS, request.arena = batcher->arena;
    uint64_t started = serve_now_ns();
    uform_status_t status = uform_prepared_encode(&request);
    serve_metrics_batch(batcher->config.metrics, slot->modality, count, (double)(serve_now_ns() - started) * 1e-9);
    /* Row k belongs to the k-th item that decoded. */
    if (status != UFORM_OK || scatter_rows(batcher, &request.encoded.embeddings, items, count) != 0) {
        fail_all(items, count, &request.outcome);
        return;
    }
    finish(batcher, items, count);
}

/* ---- the threads ------------------------------------------------------------------------------ */

static uint64_t fill_deadline(const serve_batcher_t *batcher, const serve_item_t *head) {
    return head->queued_ns + batcher->config.max_wait_us * 1000u;
}

static uint64_t earlier(uint64_t a, uint64_t b) { return a < b ? a : b; }

/*
 * After a batch, the compute thread polls for the next signal for up to `spin_us` before it
 * sleeps on the condition, yielding its CPU at each poll, as ONNX Runtime's and OpenMP's pools spin
 * before they block. A lone client's next request then starts without the thread being woken, and
 * without its CPU having halted: on a virtual machine, waking a halted CPU took ~40 µs of each
 * request at concurrency 1. Any thread ready to run on the CPU (the HTTP threads, another process)
 * runs at the first yield, so the polling takes only time that would have been idle. Called
 * without the lock.
 */
static void spin_for_signal(serve_batcher_t *batcher, unsigned seen) {
    uint64_t until = serve_now_ns() + batcher->config.spin_us * 1000u;
    while (atomic_load_explicit(&batcher->compute_signals, memory_order_acquire) == seen && serve_now_ns() < until)
        sched_yield();
}

void *serve__compute_main(void *pointer) {
    serve_batcher_t *batcher = pointer;
    static const int direct[2] = {UFORM_MODALITY_TEXT, SERVE_QUEUE_CHOOSE};
    for (;;) {
        serve_item_t *expired = NULL, *dropped = NULL;
        serve_slot_t *slot = NULL;
        int queue = -1, exiting = 0, may_spin = batcher->config.spin_us > 0;
        size_t count = 0;
        pthread_mutex_lock(&batcher->lock);
        for (;;) {
            uint64_t now = serve_now_ns();
            serve__expire_locked(batcher, now, &expired);
            /* The oldest work first: a ready media slot, or the head of the text or choose queue. */
            uint64_t oldest = UINT64_MAX;
            int pick = -1;
            serve_slot_t *ready = NULL;
            for (int k = 0; k < 2; ++k) {
                const serve_item_t *head = batcher->queues[direct[k]].head;
                if (head && head->queued_ns < oldest) oldest = head->queued_ns, pick = direct[k];
            }
            for (int s = 0; s < 2; ++s)
                if (batcher->slots[s].state == SLOT_READY && batcher->slots[s].oldest_ns < oldest)
                    oldest = batcher->slots[s].oldest_ns, ready = &batcher->slots[s], pick = -1;
            if (ready) {
                ready->state = SLOT_COMPUTING;
                slot = ready;
                break;
            }
            if (pick >= 0) {
                serve_queue_t *q = &batcher->queues[pick];
                uint64_t fill = fill_deadline(batcher, q->head);
                if (q->length < batcher->config.max_batch && !batcher->flushing && now < fill) {
                    if (expired) break; /* answer those first, then come back */
                    serve__wait_locked(batcher, &batcher->compute_wakeup, earlier(fill, serve__earliest_deadline_locked(batcher)));
                    continue;
                }
                count = serve__take_locked(batcher, pick, batcher->batch, &dropped);
                queue = pick;
                break;
            }
            int slots_busy = batcher->slots[0].state != SLOT_FREE || batcher->slots[1].state != SLOT_FREE;
            if (batcher->stopping && batcher->preparer_exited && !slots_busy) {
                exiting = 1;
                break;
            }
            if (expired) break;
            if (may_spin) { /* once per idle spell: then sleep until signalled */
                may_spin = 0;
                unsigned seen = atomic_load_explicit(&batcher->compute_signals, memory_order_relaxed);
                pthread_mutex_unlock(&batcher->lock);
                spin_for_signal(batcher, seen);
                pthread_mutex_lock(&batcher->lock);
                continue;
            }
            serve__wait_locked(batcher, &batcher->compute_wakeup, serve__earliest_deadline_locked(batcher));
        }
        pthread_mutex_unlock(&batcher->lock);
        serve__resolve_expired(batcher, expired);
        serve__resolve_dropped(dropped);
        if (exiting) return NULL;
        if (slot) {
            run_slot(batcher, slot);
            pthread_mutex_lock(&batcher->lock);
            slot->state = SLOT_FREE;
            pthread_cond_signal(&batcher->prepare_wakeup);
            pthread_mutex_unlock(&batcher->lock);
        } else if (count && queue == UFORM_MODALITY_TEXT) {
            run_text(batcher, count);
        } else if (count) {
            run_choose(batcher, count);
        }
    }
}

void *serve__prepare_main(void *pointer) {
    serve_batcher_t *batcher = pointer;
    static const int media[3] = {UFORM_MODALITY_IMAGE, UFORM_MODALITY_VIDEO, UFORM_MODALITY_AUDIO};
    for (;;) {
        serve_item_t *expired = NULL, *dropped = NULL;
        serve_slot_t *slot = NULL;
        int exiting = 0;
        pthread_mutex_lock(&batcher->lock);
        for (;;) {
            uint64_t now = serve_now_ns();
            serve__expire_locked(batcher, now, &expired);
            int pick = -1;
            uint64_t oldest = UINT64_MAX;
            for (int k = 0; k < 3; ++k) {
                const serve_item_t *head = batcher->queues[media[k]].head;
                if (head && head->queued_ns < oldest) oldest = head->queued_ns, pick = media[k];
            }
            serve_slot_t *free_slot = batcher->slots[0].state == SLOT_FREE   ? &batcher->slots[0]
                                      : batcher->slots[1].state == SLOT_FREE ? &batcher->slots[1]
                                                                              : NULL;
            if (pick < 0 && batcher->stopping) {
                exiting = 1;
                batcher->preparer_exited = 1;
                serve__wake_compute_locked(batcher);
                break;
            }
            if (pick < 0 || !free_slot) {
                if (expired) break;
                serve__wait_locked(batcher, &batcher->prepare_wakeup, serve__earliest_deadline_locked(batcher));
                continue;
            }
            serve_queue_t *q = &batcher->queues[pick];
            uint64_t fill = fill_deadline(batcher, q->head);
            if (q->length < batcher->config.max_batch && !batcher->flushing && now < fill) {
                if (expired) break;
                serve__wait_locked(batcher, &batcher->prepare_wakeup, earlier(fill, serve__earliest_deadline_locked(batcher)));
                continue;
            }
            size_t count = serve__take_locked(batcher, pick, free_slot->items, &dropped);
            if (count) {
                slot = free_slot;
                slot->state = SLOT_PREPARING, slot->modality = (uform_modality_t)pick, slot->count = count;
                slot->oldest_ns = slot->items[0]->queued_ns;
            }
            break;
        }
        pthread_mutex_unlock(&batcher->lock);
        serve__resolve_expired(batcher, expired);
        serve__resolve_dropped(dropped);
        if (exiting) return NULL;
        if (!slot) continue;
        size_t left = prepare_slot(batcher, slot);
        pthread_mutex_lock(&batcher->lock);
        slot->state = left ? SLOT_READY : SLOT_FREE;
        if (left) serve__wake_compute_locked(batcher);
        pthread_mutex_unlock(&batcher->lock);
    }
}
