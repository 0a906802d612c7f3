/* Executors: contention, ordering, drain, limits, cancellation, parallel loops, pools, free. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/check.h"
#include "exec/test_verb.h"

static uform_executor_t make_executor(size_t threads, size_t deferred_limit) {
    uform_executor_t executor = NULL;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform_executor_for_ram(NULL, threads, deferred_limit, &executor, &outcome), UFORM_OK);
    CHECK(executor != NULL);
    return executor;
}

/* ---- two threads racing a blocking call ---- */

typedef struct race_t {
    uform_executor_t executor;
    volatile uint32_t gate, started;
    uform_status_t status;
} race_t;

static void *race_holder(void *pointer) {
    race_t *race = pointer;
    test_verb_t request = {0};
    request.executor = race->executor;
    request.units = 1;
    request.gate = &race->gate;
    request.started = &race->started;
    race->status = test_verb(&request);
    return NULL;
}

static void test_blocking_race(void) {
    for (int round = 0; round < 20; ++round) {
        race_t race = {0};
        race.executor = make_executor(2, 0);
        pthread_t holder;
        pthread_create(&holder, NULL, race_holder, &race);
        while (!__atomic_load_n(&race.started, __ATOMIC_ACQUIRE)) sched_yield();
        test_verb_t second = {0};
        second.executor = race.executor;
        second.units = 1;
        uform_status_t status = test_verb(&second);
        CHECK_STATUS(status, UFORM_CONTENDED);
        CHECK_STATUS(uform_outcome_status(&second.outcome), UFORM_CONTENDED);
        CHECK_CONTAINS(second.outcome.message, "running another call");
        __atomic_store_n(&race.gate, 1, __ATOMIC_RELEASE);
        pthread_join(holder, NULL);
        CHECK_STATUS(race.status, UFORM_OK);
        /* Free again: the next blocking call succeeds. */
        CHECK_STATUS(test_verb(&second), UFORM_OK);
        uform_executor_free(race.executor);
    }
}

/* Two threads start together and both call; exactly one wins while the other is still running. */
typedef struct duel_t {
    uform_executor_t executor;
    pthread_barrier_t *barrier;
    volatile uint32_t *gate;
    uform_status_t status;
    volatile uint32_t started;
} duel_t;

static void *duel_main(void *pointer) {
    duel_t *duel = pointer;
    test_verb_t request = {0};
    request.executor = duel->executor;
    request.units = 1;
    request.gate = duel->gate;
    request.started = &duel->started;
    pthread_barrier_wait(duel->barrier);
    __atomic_store_n(&duel->status, test_verb(&request), __ATOMIC_RELEASE);
    return NULL;
}

static void test_blocking_duel(void) {
    uform_executor_t executor = make_executor(1, 0);
    for (int round = 0; round < 50; ++round) {
        pthread_barrier_t barrier;
        pthread_barrier_init(&barrier, NULL, 2);
        volatile uint32_t gate = 0;
        duel_t duels[2] = {{executor, &barrier, &gate, UFORM_DEFERRED, 0}, {executor, &barrier, &gate, UFORM_DEFERRED, 0}};
        pthread_t threads[2];
        for (int i = 0; i < 2; ++i) pthread_create(&threads[i], NULL, duel_main, &duels[i]);
        /* Hold the winner until the loser has answered. */
        for (;;) {
            int one_started = __atomic_load_n(&duels[0].started, __ATOMIC_ACQUIRE) ||
                              __atomic_load_n(&duels[1].started, __ATOMIC_ACQUIRE);
            int loser_done = __atomic_load_n(&duels[0].status, __ATOMIC_ACQUIRE) == UFORM_CONTENDED ||
                             __atomic_load_n(&duels[1].status, __ATOMIC_ACQUIRE) == UFORM_CONTENDED;
            if (one_started && loser_done) break;
            sched_yield();
        }
        __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
        for (int i = 0; i < 2; ++i) pthread_join(threads[i], NULL);
        int ok = (duels[0].status == UFORM_OK) + (duels[1].status == UFORM_OK);
        int contended = (duels[0].status == UFORM_CONTENDED) + (duels[1].status == UFORM_CONTENDED);
        CHECK_EQ_INT(ok, 1);
        CHECK_EQ_INT(contended, 1);
        pthread_barrier_destroy(&barrier);
    }
    uform_executor_free(executor);
}

/* ---- deferred calls ---- */

static void test_deferred_order_and_drain(void) {
    enum { calls = 1000 };
    uform_executor_t executor = make_executor(2, calls);
    test_verb_t *requests = calloc(calls, sizeof *requests);
    uint64_t *log = calloc(calls, sizeof *log);
    size_t log_count = 0;
    volatile uint32_t gate = 0;
    for (size_t i = 0; i < calls; ++i) {
        requests[i].executor = executor;
        requests[i].completion = UFORM_COMPLETION_DEFERRED;
        requests[i].units = 2;
        requests[i].prongs = 3;
        requests[i].sequence = i;
        requests[i].log = log;
        requests[i].log_count = &log_count;
        requests[i].gate = i == 0 ? &gate : NULL; /* hold the first so the queue fills */
        uform_status_t status = test_verb(&requests[i]);
        if (status != UFORM_DEFERRED) CHECK_STATUS(status, UFORM_DEFERRED);
    }
    CHECK_STATUS(uform_outcome_status(&requests[calls - 1].outcome), UFORM_DEFERRED);
    /* A blocking call while deferred ones are queued is contended. */
    test_verb_t blocking = {0};
    blocking.executor = executor;
    CHECK_STATUS(test_verb(&blocking), UFORM_CONTENDED);
    __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform_executor_drain(executor, UFORM_MOOD_PARKED, &outcome), UFORM_OK);
    size_t final = 0, in_order = 0;
    for (size_t i = 0; i < calls; ++i) {
        final += uform_outcome_status(&requests[i].outcome) == UFORM_OK;
        in_order += log[i] == i;
    }
    CHECK_EQ_INT(final, calls);
    CHECK_EQ_INT(log_count, calls);
    CHECK_EQ_INT(in_order, calls);
    /* Waiting answers the final status as often as asked. */
    CHECK_STATUS(uform_outcome_wait(&requests[7].outcome), UFORM_OK);
    CHECK_STATUS(uform_outcome_wait(&requests[7].outcome), UFORM_OK);
    free(requests);
    free(log);
    uform_executor_free(executor);
}

static void test_deferred_limit(void) {
    enum { limit = 4 };
    uform_executor_t executor = make_executor(1, limit);
    volatile uint32_t gate = 0, started = 0;
    test_verb_t requests[limit + 2];
    memset(requests, 0, sizeof requests);
    /* The first starts running (leaving the queue), then `limit` more fill the queue. */
    for (size_t i = 0; i < limit + 2; ++i) {
        requests[i].executor = executor;
        requests[i].completion = UFORM_COMPLETION_DEFERRED;
        requests[i].units = 1;
        if (i == 0) requests[i].gate = &gate, requests[i].started = &started;
        uform_status_t status = test_verb(&requests[i]);
        if (i == 0)
            while (!__atomic_load_n(&started, __ATOMIC_ACQUIRE)) sched_yield();
        if (i <= limit) CHECK_STATUS(status, UFORM_DEFERRED);
        else {
            CHECK_STATUS(status, UFORM_CONTENDED);
            CHECK_CONTAINS(requests[i].outcome.message, "queue is full");
        }
    }
    __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
    for (size_t i = 0; i <= limit; ++i) CHECK_STATUS(uform_outcome_wait(&requests[i].outcome), UFORM_OK);
    uform_executor_free(executor);
}

/* ---- arenas held by deferred calls ---- */

static void test_arena_contention(void) {
    uform_executor_t executor = make_executor(2, 0);
    uform_arena_t arena = NULL;
    CHECK_STATUS(uform_arena_for_executor(executor, &arena, NULL), UFORM_OK);
    volatile uint32_t gate = 0;
    test_verb_t first = {0}, second = {0};
    first.executor = executor, first.completion = UFORM_COMPLETION_DEFERRED, first.arena = arena, first.units = 3;
    first.gate = &gate;
    CHECK_STATUS(test_verb(&first), UFORM_DEFERRED);
    second.executor = NULL, second.arena = arena, second.units = 1; /* even on another executor */
    CHECK_STATUS(test_verb(&second), UFORM_CONTENDED);
    CHECK_CONTAINS(second.outcome.message, "arena is held");
    __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
    CHECK_STATUS(uform_outcome_wait(&first.outcome), UFORM_OK);
    const void *row = NULL;
    CHECK_STATUS(uform_matrix_row(&first.output, 2, &row), UFORM_OK);
    CHECK(row && *(const float *)row == 2.0f);
    CHECK_STATUS(test_verb(&second), UFORM_OK);
    CHECK_STATUS(uform_matrix_row(&first.output, 2, &row), UFORM_INVALID_ARGUMENT); /* stale now */
    uform_arena_free(arena);
    uform_executor_free(executor);
}

/* ---- cancellation at every progress step ---- */

typedef struct cancel_state_t {
    size_t calls, cancel_at;
    size_t last_completed;
    int after_final;
} cancel_state_t;

static uform_continuation_t cancel_handler(size_t completed, size_t total, void *state) {
    cancel_state_t *cancel = state;
    cancel->calls += 1;
    cancel->last_completed = completed;
    return cancel->calls == cancel->cancel_at ? UFORM_CANCEL : UFORM_CONTINUE;
}

static void test_cancellation(uform_executor_t executor, uform_completion_t completion) {
    uform_arena_t arena = NULL;
    CHECK_STATUS(uform_arena_for_executor(executor, &arena, NULL), UFORM_OK);
    for (size_t cancel_at = 1; cancel_at <= 11; ++cancel_at) {
        cancel_state_t state = {0, cancel_at, 0, 0};
        test_verb_t request = {0};
        request.executor = executor, request.completion = completion, request.arena = arena;
        request.units = 25, request.prongs = 4;
        request.progress.callback = cancel_handler, request.progress.state = &state, request.progress.steps = 10;
        test_verb(&request);
        uform_status_t status = uform_outcome_wait(&request.outcome);
        if (cancel_at <= 10) {
            CHECK_STATUS(status, UFORM_CANCELLED);
            CHECK_EQ_INT(state.calls, cancel_at);
            CHECK_STATUS(uform_matrix_check(&request.output), UFORM_INVALID_ARGUMENT); /* outputs not readable */
            char line[512];
            uform_outcome_format(&request.outcome, line, sizeof line);
            CHECK_CONTAINS(line, "UForm: cancelled [test_verb]: cancelled after unit");
        } else {
            CHECK_STATUS(status, UFORM_OK);
            CHECK_EQ_INT(state.calls, 10);
            CHECK_EQ_INT(state.last_completed, 25);
        }
        /* Everything stays usable: the same executor and arena serve the next call. */
        test_verb_t next = {0};
        next.executor = executor, next.arena = arena, next.units = 3, next.prongs = 2;
        CHECK_STATUS(test_verb(&next), UFORM_OK);
        CHECK_STATUS(uform_matrix_check(&next.output), UFORM_OK);
    }
    uform_arena_free(arena);
}

/* ---- the parallel loop runs each prong exactly once ---- */

static void test_parallel_coverage(void) {
    for (size_t threads = 1; threads <= 3; ++threads) {
        uform_executor_t executor = make_executor(threads, 0);
        CHECK_EQ_INT(uform_executor_threads(executor), threads);
        enum { prongs = 1000 };
        uint32_t *hits = calloc(prongs, sizeof *hits);
        test_verb_t request = {0};
        request.executor = executor, request.units = 10, request.prongs = prongs, request.prong_hits = hits;
        CHECK_STATUS(test_verb(&request), UFORM_OK);
        CHECK_EQ_INT(request.threads_seen, threads);
        size_t exact = 0;
        for (size_t i = 0; i < prongs; ++i) exact += hits[i] == 10;
        CHECK_EQ_INT(exact, prongs);
        /* Spinning mood gives the same coverage. */
        CHECK_STATUS(uform_executor_drain(executor, UFORM_MOOD_SPINNING, NULL), UFORM_OK);
        memset(hits, 0, prongs * sizeof *hits);
        CHECK_STATUS(test_verb(&request), UFORM_OK);
        exact = 0;
        for (size_t i = 0; i < prongs; ++i) exact += hits[i] == 10;
        CHECK_EQ_INT(exact, prongs);
        CHECK_STATUS(uform_executor_drain(executor, UFORM_MOOD_PARKED, NULL), UFORM_OK);
        free(hits);
        uform_executor_free(executor);
    }
}

/* ---- constructors and misuse ---- */

static void test_constructors(void) {
    uform_executor_t executor = (uform_executor_t)1;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform_executor_for_vram(NULL, NULL, 1, 0, 0, &executor, &outcome), UFORM_UNSUPPORTED);
    CHECK(executor == NULL);
    CHECK_CONTAINS(outcome.message, "no GPU support");

    /* A class this CPU cannot run: an Arm class never runs on this x86 build. */
    uform_ram_options_t options = {0};
    options.cpu_class = UFORM_CPU_CLASS_APPLE_M2;
    executor = (uform_executor_t)1;
    CHECK_STATUS(uform_executor_for_ram(&options, 1, 0, &executor, &outcome), UFORM_UNSUPPORTED);
    CHECK(executor == NULL);
    CHECK_CONTAINS(outcome.message, "apple_m2");

    /* Forcing a class the CPU runs: SERIAL always. */
    options.cpu_class = UFORM_CPU_CLASS_SERIAL;
    CHECK_STATUS(uform_executor_for_ram(&options, 1, 0, &executor, &outcome), UFORM_OK);
    CHECK_EQ_INT(uform_executor_cpu_class(executor), UFORM_CPU_CLASS_SERIAL);
    uform_executor_free(executor);

    /* Memory domains that do not exist. */
    size_t nodes[1] = {63};
    uform_ram_options_t placed = {nodes, 1, UFORM_CPU_CLASS_UNKNOWN};
    CHECK_STATUS(uform_executor_for_ram(&placed, 1, 0, &executor, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "memory_domains[0] = 63");
    /* Node 0 exists everywhere. */
    nodes[0] = 0;
    CHECK_STATUS(uform_executor_for_ram(&placed, 0, 0, &executor, &outcome), UFORM_OK);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    size_t expected = cores * 7 / 8 > 0 ? (size_t)(cores * 7 / 8) : 1;
    CHECK(uform_executor_threads(executor) >= 1 && uform_executor_threads(executor) <= expected);
    uform_executor_free(executor);

    CHECK_STATUS(uform_executor_for_ram(NULL, 1, 0, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(uform_executor_drain(NULL, UFORM_MOOD_SPINNING, &outcome), UFORM_OK);
    CHECK_STATUS(uform_executor_drain(NULL, (uform_mood_t)7, &outcome), UFORM_INVALID_ARGUMENT);
    uform_executor_free(NULL);

    /* A bad completion value is refused, not guessed. */
    test_verb_t request = {0};
    request.completion = (uform_completion_t)5;
    CHECK_STATUS(test_verb(&request), UFORM_INVALID_ARGUMENT);

    /* The environment override: a name that is no class makes executors refuse. */
    setenv("UFORM_CPU_CLASS", "pentium", 1);
    CHECK_STATUS(uform_executor_for_ram(NULL, 1, 0, &executor, &outcome), UFORM_UNSUPPORTED);
    CHECK_CONTAINS(outcome.message, "UFORM_CPU_CLASS='pentium'");
    setenv("UFORM_CPU_CLASS", "serial", 1);
    CHECK_STATUS(uform_executor_for_ram(NULL, 1, 0, &executor, &outcome), UFORM_OK);
    CHECK_EQ_INT(uform_executor_cpu_class(executor), UFORM_CPU_CLASS_SERIAL);
    CHECK_EQ_INT(uform_cpu_class_detect(), UFORM_CPU_CLASS_SERIAL);
    uform_executor_free(executor);
    unsetenv("UFORM_CPU_CLASS");
}

/* ---- free waits for calls in flight; the calling-thread executor runs deferred calls inline ---- */

static void test_free_waits(void) {
    uform_executor_t executor = make_executor(2, 0);
    test_verb_t requests[8];
    memset(requests, 0, sizeof requests);
    for (int i = 0; i < 8; ++i) {
        requests[i].executor = executor, requests[i].completion = UFORM_COMPLETION_DEFERRED;
        requests[i].units = 50, requests[i].prongs = 8;
        CHECK_STATUS(test_verb(&requests[i]), UFORM_DEFERRED);
    }
    uform_executor_free(executor);
    for (int i = 0; i < 8; ++i) CHECK_STATUS(uform_outcome_status(&requests[i].outcome), UFORM_OK);

    test_verb_t inline_call = {0};
    inline_call.completion = UFORM_COMPLETION_DEFERRED, inline_call.units = 2;
    CHECK_STATUS(test_verb(&inline_call), UFORM_OK);
    CHECK_STATUS(uform_outcome_status(&inline_call.outcome), UFORM_OK);
}

/* A progress handler that drains its own executor is refused instead of deadlocking. */
static uform_executor_t self_drain_executor;
static uform_status_t self_drain_status;
static uform_continuation_t self_drain_handler(size_t completed, size_t total, void *state) {
    self_drain_status = uform_executor_drain(self_drain_executor, UFORM_MOOD_PARKED, NULL);
    return UFORM_CONTINUE;
}

static void test_self_drain(void) {
    self_drain_executor = make_executor(1, 0);
    test_verb_t request = {0};
    request.executor = self_drain_executor, request.units = 1;
    request.progress.callback = self_drain_handler;
    CHECK_STATUS(test_verb(&request), UFORM_OK);
    CHECK_STATUS(self_drain_status, UFORM_INVALID_ARGUMENT);
    uform_executor_free(self_drain_executor);
}

/* ---- blocking calls leave a parked lead asleep ---- */

/* Busy for `microseconds` without sleeping (a sleep would itself be a voluntary switch). */
static void spin_for(long microseconds) {
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do clock_gettime(CLOCK_MONOTONIC, &now);
    while ((now.tv_sec - start.tv_sec) * 1000000L + (now.tv_nsec - start.tv_nsec) / 1000 < microseconds);
}

static long voluntary_switches(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_nvcsw;
}

/* A blocking call runs on its caller's thread; the lead of a parked executor with nothing queued
 * must sleep through it. Waking it after every call cost a futex wake and a context switch per
 * call: with that, 300 calls 300 µs apart (time for the woken lead to sleep again, as between
 * real calls) make about 300 voluntary switches; without, a handful. Then a deferred call queued while a blocking call holds
 * the executor still runs once it ends, and a spinning lead still takes deferred calls. */
static void test_parked_lead_sleeps(void) {
    uform_executor_t executor = make_executor(1, 0);
    test_verb_t request = {0};
    request.executor = executor, request.units = 1;
    CHECK_STATUS(test_verb(&request), UFORM_OK);
    usleep(20000); /* the lead parks */
    long before = voluntary_switches();
    enum { calls = 300 };
    for (int i = 0; i < calls; ++i) {
        memset(&request.outcome, 0, sizeof request.outcome);
        CHECK_STATUS(test_verb(&request), UFORM_OK);
        spin_for(300);
    }
    long switches = voluntary_switches() - before;
    CHECK_MSG(switches < calls / 10, "%ld voluntary context switches in %d blocking calls on a parked executor "
              "(the lead was woken for nothing)", switches, calls);

    race_t race = {.executor = executor};
    pthread_t holder;
    CHECK(pthread_create(&holder, NULL, race_holder, &race) == 0);
    while (!__atomic_load_n(&race.started, __ATOMIC_ACQUIRE)) sched_yield();
    test_verb_t queued = {0};
    queued.executor = executor, queued.completion = UFORM_COMPLETION_DEFERRED, queued.units = 1;
    CHECK_STATUS(test_verb(&queued), UFORM_DEFERRED);
    usleep(20000); /* the lead, poked by the submission, sees the blocking call and sleeps again */
    CHECK_STATUS(uform_outcome_status(&queued.outcome), UFORM_DEFERRED);
    __atomic_store_n(&race.gate, 1, __ATOMIC_RELEASE);
    pthread_join(holder, NULL);
    CHECK_STATUS(race.status, UFORM_OK);
    CHECK_STATUS(uform_outcome_wait(&queued.outcome), UFORM_OK);

    CHECK_STATUS(uform_executor_drain(executor, UFORM_MOOD_SPINNING, NULL), UFORM_OK);
    memset(&request.outcome, 0, sizeof request.outcome);
    CHECK_STATUS(test_verb(&request), UFORM_OK);
    test_verb_t spun = {0};
    spun.executor = executor, spun.completion = UFORM_COMPLETION_DEFERRED, spun.units = 1;
    CHECK_STATUS(test_verb(&spun), UFORM_DEFERRED);
    CHECK_STATUS(uform_outcome_wait(&spun.outcome), UFORM_OK);
    uform_executor_free(executor);
}

int main(void) {
    test_blocking_race();
    test_blocking_duel();
    test_deferred_order_and_drain();
    test_deferred_limit();
    test_arena_contention();
    uform_executor_t executor = make_executor(2, 0);
    test_cancellation(executor, UFORM_COMPLETION_BLOCKING);
    test_cancellation(executor, UFORM_COMPLETION_DEFERRED);
    uform_executor_free(executor);
    test_cancellation(NULL, UFORM_COMPLETION_BLOCKING);
    test_parallel_coverage();
    test_constructors();
    test_free_waits();
    test_self_drain();
    test_parked_lead_sleeps();
    return check_finish();
}
