/*
 * The fork-join team (src/exec/team.c) under churn: many short jobs back to back, with more threads
 * than cores so helpers are often descheduled and wake late. Every prong of every job must run
 * exactly once, within its job (never after the lead returned), and no two prongs with the same
 * thread index may overlap. Parked and spinning moods, 1 to 3 helpers. Under ThreadSanitizer (label
 * tsan) the same run checks the ticket protocol's ordering.
 */
#include <sched.h>
#include <string.h>

#include "common/check.h"
#include "exec/team.h"
#include "uform/uform.h"

enum { max_prongs = 9, max_threads = 4 };

typedef struct job_t {
    uint32_t runs[max_prongs];   /* atomic: how often each prong ran */
    uint32_t busy[max_threads];  /* atomic: a prong with this thread index is running */
    uint32_t overlaps;           /* atomic: prongs that found their thread index busy */
    uint32_t bad_thread;         /* atomic: prongs given a thread index out of range */
    uint32_t open;               /* atomic: 1 while the lead is inside for_n */
    uint32_t late;               /* atomic: prongs that ran while the job was not open */
    size_t threads;
    unsigned seed;
} job_t;

static void prong(void *context, size_t thread, size_t index) {
    job_t *job = context;
    if (thread >= job->threads) {
        __atomic_add_fetch(&job->bad_thread, 1, __ATOMIC_RELAXED);
        return;
    }
    if (!__atomic_load_n(&job->open, __ATOMIC_ACQUIRE)) __atomic_add_fetch(&job->late, 1, __ATOMIC_RELAXED);
    if (__atomic_exchange_n(&job->busy[thread], 1, __ATOMIC_ACQ_REL)) __atomic_add_fetch(&job->overlaps, 1, __ATOMIC_RELAXED);
    /* Uneven work, and now and then a yield, so prongs finish out of order. */
    unsigned spin = (job->seed * 2654435761u + (unsigned)index * 40503u) % 64u;
    for (volatile unsigned i = 0; i < spin * 8; ++i) {
    }
    if (spin == 7) sched_yield();
    __atomic_add_fetch(&job->runs[index], 1, __ATOMIC_RELAXED);
    __atomic_store_n(&job->busy[thread], 0, __ATOMIC_RELEASE);
}

static void churn(size_t helpers, uint32_t mood, size_t jobs) {
    uform__team_t team;
    CHECK_EQ_INT(uform__team_start(&team, helpers, &mood, NULL), 0);
    size_t wrong_runs = 0, overlaps = 0, late = 0, bad_thread = 0;
    job_t job;
    for (size_t j = 0; j < jobs; ++j) {
        memset(&job, 0, sizeof job);
        job.threads = helpers + 1;
        job.seed = (unsigned)j;
        size_t n = 2 + j % (max_prongs - 1);
        __atomic_store_n(&job.open, 1, __ATOMIC_RELEASE);
        uform__team_for_n(&team, n, prong, &job);
        __atomic_store_n(&job.open, 0, __ATOMIC_RELEASE);
        for (size_t p = 0; p < n; ++p) wrong_runs += __atomic_load_n(&job.runs[p], __ATOMIC_ACQUIRE) != 1;
        for (size_t p = n; p < max_prongs; ++p) wrong_runs += __atomic_load_n(&job.runs[p], __ATOMIC_ACQUIRE) != 0;
        overlaps += __atomic_load_n(&job.overlaps, __ATOMIC_ACQUIRE);
        late += __atomic_load_n(&job.late, __ATOMIC_ACQUIRE);
        bad_thread += __atomic_load_n(&job.bad_thread, __ATOMIC_ACQUIRE);
    }
    uform__team_stop(&team);
    /* A prong of this job run after the lead returned would show in the next job's memset window
     * as `late`, or as a wrong count: both are zero when the protocol holds. */
    CHECK_MSG(wrong_runs == 0, "%zu helpers, mood %u: %zu prongs ran other than once", helpers, mood, wrong_runs);
    CHECK_MSG(overlaps == 0, "%zu helpers, mood %u: %zu prongs overlapped on one thread index", helpers, mood, overlaps);
    CHECK_MSG(late == 0, "%zu helpers, mood %u: %zu prongs ran outside their job", helpers, mood, late);
    CHECK_MSG(bad_thread == 0, "%zu helpers, mood %u: %zu thread indexes out of range", helpers, mood, bad_thread);
}

/* A loop inside a prong runs inline on the prong's thread. */
typedef struct nested_t {
    uform__team_t *team;
    uint32_t inner_runs; /* atomic */
    uint32_t wrong_thread; /* atomic */
} nested_t;

typedef struct inner_t {
    nested_t *nested;
    size_t thread;
} inner_t;

static void inner_prong(void *context, size_t thread, size_t index) {
    (void)index;
    inner_t *inner = context;
    if (thread != inner->thread) __atomic_add_fetch(&inner->nested->wrong_thread, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&inner->nested->inner_runs, 1, __ATOMIC_RELAXED);
}

static void outer_prong(void *context, size_t thread, size_t index) {
    (void)index;
    nested_t *nested = context;
    inner_t inner = {nested, thread};
    uform__team_for_n(nested->team, 5, inner_prong, &inner);
}

int main(void) {
    const size_t jobs = 4000;
    for (size_t helpers = 1; helpers <= 3; ++helpers) {
        churn(helpers, UFORM_MOOD_PARKED, jobs);
        churn(helpers, UFORM_MOOD_SPINNING, jobs / 4);
    }
    uint32_t mood = UFORM_MOOD_PARKED;
    uform__team_t team;
    CHECK_EQ_INT(uform__team_start(&team, 2, &mood, NULL), 0);
    nested_t nested = {&team, 0, 0};
    uform__team_for_n(&team, 6, outer_prong, &nested);
    uform__team_stop(&team);
    CHECK_EQ_INT(nested.inner_runs, 30);
    CHECK_EQ_INT(nested.wrong_thread, 0);
    return check_finish();
}
