#include "exec/team.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/futex.h"
#include "uform/uform.h"

/* Polls this many times before a parked thread sleeps: long enough to catch the next layer's
 * loop (a few microseconds), short enough not to burn a core between calls. */
enum { spins_before_sleep = 4096 };

/* Set while a thread runs a prong, so a nested loop runs inline instead of deadlocking. */
static __thread size_t team_thread_index = (size_t)-1;

typedef struct helper_start_t {
    uform__team_t *team;
    size_t index;
} helper_start_t;

/* The ticket's prong half between jobs: no prong is that large, so nothing can be taken. */
#define team_closed ((uint64_t)UINT32_MAX)

/* Takes and runs prongs of whatever job the ticket names until it has none left.
 *
 * A thread reads the ticket, then the job's fields, then claims the prong with a compare-exchange
 * of the ticket it read. The lead closes the ticket before it rewrites the fields for a new job
 * and stores the fields with release, so a thread that read a newer job's field (acquire) sees
 * the closed ticket, or a later one, in its compare-exchange and fails it; and a job cannot end
 * while its ticket still offers a prong. A successful claim therefore runs the prong of the job
 * whose fields it read. */
static void take_prongs(uform__team_t *team, size_t thread) {
    uint64_t ticket = __atomic_load_n(&team->ticket, __ATOMIC_ACQUIRE);
    for (;;) {
        uform__prong_fn fn = __atomic_load_n(&team->fn, __ATOMIC_ACQUIRE);
        void *context = __atomic_load_n(&team->context, __ATOMIC_ACQUIRE);
        size_t n = __atomic_load_n(&team->n, __ATOMIC_ACQUIRE);
        uint64_t prong = ticket & 0xFFFFFFFFu;
        if (prong >= n) return;
        if (!__atomic_compare_exchange_n(&team->ticket, &ticket, ticket + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            continue; /* `ticket` now holds the current value */
        fn(context, thread, (size_t)prong);
        if (__atomic_add_fetch(&team->completed, 1, __ATOMIC_SEQ_CST) == n && __atomic_load_n(&team->lead_sleeping, __ATOMIC_SEQ_CST))
            uform__futex_wake_all(&team->completed);
        ticket = __atomic_load_n(&team->ticket, __ATOMIC_ACQUIRE);
    }
}

static void *helper_main(void *argument) {
    helper_start_t start = *(helper_start_t *)argument;
    free(argument);
    uform__team_t *team = start.team;
    team_thread_index = start.index;
    uint32_t seen = 0;
    for (;;) {
        uint32_t now;
        size_t spins = 0;
        while ((now = __atomic_load_n(&team->generation, __ATOMIC_ACQUIRE)) == seen) {
            int spinning = __atomic_load_n(team->mood, __ATOMIC_RELAXED) == UFORM_MOOD_SPINNING;
            if (spinning || spins < spins_before_sleep) {
                uform__spin_pause();
                ++spins;
            } else {
                /* Announce the sleep before re-checking, so the lead either sees a sleeper and wakes
                 * it, or the generation has already moved and futex_wait returns at once. */
                __atomic_add_fetch(&team->sleepers, 1, __ATOMIC_SEQ_CST);
                uform__futex_wait(&team->generation, seen);
                __atomic_sub_fetch(&team->sleepers, 1, __ATOMIC_SEQ_CST);
            }
        }
        seen = now;
        if (__atomic_load_n(&team->stop, __ATOMIC_ACQUIRE)) break;
        take_prongs(team, start.index);
    }
    return NULL;
}

int uform__team_start(uform__team_t *team, size_t helpers, const uint32_t *mood, const cpu_set_t *cpus) {
    memset(team, 0, sizeof *team);
    team->mood = mood;
    team->ticket = team_closed;
    if (helpers == 0) return 0;
    team->threads = calloc(helpers, sizeof *team->threads);
    if (!team->threads) return ENOMEM;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    if (cpus) pthread_attr_setaffinity_np(&attributes, sizeof *cpus, cpus);
    int error = 0;
    for (size_t i = 0; i < helpers; ++i) {
        helper_start_t *start = malloc(sizeof *start);
        if (!start) { error = ENOMEM; break; }
        start->team = team;
        start->index = i + 1;
        error = pthread_create(&team->threads[i], &attributes, helper_main, start);
        if (error) { free(start); break; }
        team->started = i + 1;
    }
    pthread_attr_destroy(&attributes);
    team->helpers = team->started;
    if (error) uform__team_stop(team);
    return error;
}

void uform__team_stop(uform__team_t *team) {
    if (team->started) {
        __atomic_store_n(&team->stop, 1, __ATOMIC_RELEASE);
        __atomic_add_fetch(&team->generation, 1, __ATOMIC_ACQ_REL);
        uform__futex_wake_all(&team->generation);
        for (size_t i = 0; i < team->started; ++i) pthread_join(team->threads[i], NULL);
    }
    free(team->threads);
    team->threads = NULL;
    team->started = team->helpers = 0;
}

void uform__team_for_n(void *self, size_t n, uform__prong_fn fn, void *context) {
    uform__team_t *team = self;
    if (team->helpers == 0 || n <= 1 || n >= UINT32_MAX || team_thread_index != (size_t)-1) {
        /* No helpers, a single prong, or a loop nested in a prong: run inline. */
        size_t thread = team_thread_index == (size_t)-1 ? 0 : team_thread_index;
        for (size_t prong = 0; prong < n; ++prong) fn(context, thread, prong);
        return;
    }
    /* Close the ticket under a new job number before the fields change (take_prongs says why). */
    uint64_t job = (__atomic_load_n(&team->ticket, __ATOMIC_RELAXED) >> 32) + 1;
    __atomic_store_n(&team->ticket, (job << 32) | team_closed, __ATOMIC_SEQ_CST);
    __atomic_store_n(&team->completed, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&team->fn, fn, __ATOMIC_RELEASE);
    __atomic_store_n(&team->context, context, __ATOMIC_RELEASE);
    __atomic_store_n(&team->n, n, __ATOMIC_RELEASE);
    __atomic_store_n(&team->ticket, job << 32, __ATOMIC_RELEASE);
    __atomic_add_fetch(&team->generation, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&team->sleepers, __ATOMIC_SEQ_CST)) uform__futex_wake_all(&team->generation);
    team_thread_index = 0;
    take_prongs(team, 0);
    team_thread_index = (size_t)-1;
    /* Every prong is taken; wait for those still running on helpers. */
    size_t spins = 0;
    for (;;) {
        uint32_t completed = __atomic_load_n(&team->completed, __ATOMIC_ACQUIRE);
        if (completed == n) break;
        if (spins < spins_before_sleep) {
            uform__spin_pause();
            ++spins;
            continue;
        }
        __atomic_store_n(&team->lead_sleeping, 1, __ATOMIC_SEQ_CST);
        completed = __atomic_load_n(&team->completed, __ATOMIC_SEQ_CST);
        if (completed != n) uform__futex_wait(&team->completed, completed);
        __atomic_store_n(&team->lead_sleeping, 0, __ATOMIC_SEQ_CST);
    }
}
