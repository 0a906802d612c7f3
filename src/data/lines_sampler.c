/*
 * The sampler of manifests and folders (every sample in memory): epoch e's order is a Fisher–Yates
 * shuffle from (seed, e); a batch takes, for each slot, the first sample of the rest of the epoch
 * that is neither in the batch already nor the text twin of one that is — a twin only when nothing
 * else fits — and swaps it to the epoch's next position. Those swaps are recorded, so a cursor
 * (epoch, position, swaps, bad lines) restores the order exactly without replaying the run.
 */
#include <stdlib.h>
#include <string.h>

#include "data/data.h"

/* The salt of the lines' order seed (data.h, uform__data_epoch_order), fixed by every cursor written. */
#define LINES_ORDER_SALT 0xD1B54A32D192ED03ull

/* Sets `order` to epoch `sampler->epoch`'s order, at position 0 with no swaps. */
static void shuffle(uform__lines_sampler_t *sampler) {
    uform__data_epoch_order(sampler->order, sampler->lines->count, sampler->seed, LINES_ORDER_SALT, sampler->epoch,
                            sampler->sequential);
    sampler->position = 0;
    sampler->swap_count = 0;
}

/* Exchanges two positions of this epoch's order. */
static void swap_positions(uform__lines_sampler_t *sampler, size_t a, size_t b) {
    size_t swap = sampler->order[a];
    sampler->order[a] = sampler->order[b], sampler->order[b] = swap;
}

void uform__lines_sampler_restore(uform__lines_sampler_t *sampler, uint64_t epoch, size_t position, size_t *swaps,
                                  size_t swap_count, const size_t *bad, size_t bad_count) {
    sampler->epoch = epoch;
    shuffle(sampler);
    for (size_t i = 0; i + 1 < swap_count; i += 2) swap_positions(sampler, swaps[i], swaps[i + 1]);
    free(sampler->swaps);
    sampler->swaps = swaps, sampler->swap_count = sampler->swap_capacity = swap_count;
    sampler->position = position;
    for (size_t i = 0; i < bad_count; ++i) sampler->bad[bad[i]] = 1;
}

uform_status_t uform__lines_sampler_init(uform__lines_sampler_t *sampler, const uform__lines_t *lines, uint64_t seed,
                                         int sequential) {
    memset(sampler, 0, sizeof *sampler);
    sampler->lines = lines, sampler->seed = seed, sampler->sequential = sequential;
    size_t n = lines->count;
    sampler->order = malloc((n + 1) * sizeof *sampler->order);
    sampler->bad = calloc(n + 1, 1);
    sampler->usable = calloc(n + 1, 1);
    if (!sampler->order || !sampler->bad || !sampler->usable) {
        uform__lines_sampler_free(sampler);
        return UFORM_OUT_OF_MEMORY;
    }
    for (size_t i = 0; i < n; ++i) {
        uform__line_kind_t kind = lines->items[i].kind;
        sampler->usable[i] = kind == UFORM__LINE_PAIR || kind == UFORM__LINE_CHOICE;
        sampler->usable_count += sampler->usable[i];
    }
    shuffle(sampler);
    return UFORM_OK;
}

void uform__lines_sampler_free(uform__lines_sampler_t *sampler) {
    free(sampler->order), free(sampler->bad), free(sampler->usable), free(sampler->swaps);
    memset(sampler, 0, sizeof *sampler);
}

static int same_text(const uform__line_t *a, const uform__line_t *b) {
    return a->text_hash == b->text_hash && a->text_length == b->text_length && memcmp(a->text, b->text, a->text_length) == 0;
}

/* 0 usable; 1 taken already; 2 only a text twin of one taken. */
static int conflict(const uform__lines_sampler_t *sampler, const size_t *taken, size_t taken_count, const size_t *picked,
                    size_t count, size_t candidate) {
    const uform__line_t *all = sampler->lines->items;
    int result = 0;
    for (int pass = 0; pass < 2; ++pass) {
        const size_t *list = pass ? picked : taken;
        size_t length = pass ? count : taken_count;
        for (size_t i = 0; i < length; ++i) {
            if (list[i] == candidate) return 1;
            if (same_text(&all[list[i]], &all[candidate])) result = 2;
        }
    }
    return result;
}

static int record_swap(uform__lines_sampler_t *sampler, size_t a, size_t b) {
    if (sampler->swap_count + 2 > sampler->swap_capacity) {
        size_t capacity = sampler->swap_capacity ? 2 * sampler->swap_capacity : 64;
        size_t *grown = realloc(sampler->swaps, capacity * sizeof *grown);
        if (!grown) return -1;
        sampler->swaps = grown, sampler->swap_capacity = capacity;
    }
    sampler->swaps[sampler->swap_count++] = a, sampler->swaps[sampler->swap_count++] = b;
    return 0;
}

static size_t usable_left(const uform__lines_sampler_t *sampler) {
    size_t left = 0;
    for (size_t i = 0; i < sampler->lines->count; ++i) left += sampler->usable[i] && !sampler->bad[i];
    return left;
}

long uform__lines_sampler_draw(uform__lines_sampler_t *sampler, size_t batch, const size_t *taken, size_t taken_count,
                               size_t *picked, int *twins) {
    size_t n = sampler->lines->count, count = 0;
    size_t usable = usable_left(sampler);
    if (sampler->sequential) {
        while (count < batch && sampler->position < n) {
            size_t line = sampler->order[sampler->position++];
            if (sampler->usable[line] && !sampler->bad[line]) picked[count++] = line;
        }
        return (long)count;
    }
    if (usable == 0) return 0;
    if (batch + taken_count >= usable) {
        /* Every usable line, in stored order: a batch as large as the data. */
        for (size_t i = 0; i < n && count < batch; ++i)
            if (sampler->usable[i] && !sampler->bad[i]) {
                int kind = conflict(sampler, taken, taken_count, picked, count, i);
                if (kind == 1) continue;
                if (kind == 2) *twins = 1;
                picked[count++] = i;
            }
        return (long)count;
    }
    int wrapped = 0;
    while (count < batch) {
        if (sampler->position == n) {
            sampler->epoch += 1;
            shuffle(sampler);
            if (wrapped++ > 2) break; /* nothing fits in two whole epochs: the batch ends short */
        }
        /* The first line of the rest of this epoch that fits; a text twin only when nothing else does. */
        size_t pick = SIZE_MAX, twin = SIZE_MAX;
        for (size_t j = sampler->position; j < n && pick == SIZE_MAX; ++j) {
            size_t line = sampler->order[j];
            if (!sampler->usable[line] || sampler->bad[line]) continue;
            int kind = conflict(sampler, taken, taken_count, picked, count, line);
            if (kind == 0) pick = j;
            else if (kind == 2 && twin == SIZE_MAX) twin = j;
        }
        if (pick == SIZE_MAX && twin != SIZE_MAX) pick = twin, *twins = 1;
        if (pick == SIZE_MAX) {
            sampler->position = n; /* nothing left in this epoch fits: the next epoch */
            continue;
        }
        if (pick != sampler->position) {
            if (record_swap(sampler, sampler->position, pick)) return -1;
            swap_positions(sampler, sampler->position, pick);
        }
        picked[count++] = sampler->order[sampler->position++];
    }
    return (long)count;
}
