/* The executor object, shared by the constructors, the call path and arenas. */
#ifndef UFORM_EXEC_EXECUTOR_H
#define UFORM_EXEC_EXECUTOR_H

#include <pthread.h>

#include "core/parallel.h"
#include "exec/call.h"
#include "exec/team.h"

typedef enum executor_kind_t { uform__executor_own_threads = 1, uform__executor_pool = 2 } uform__executor_kind_t;

struct uform_executor_s {
    uform__executor_kind_t kind;
    uform_cpu_class_t cpu_class;
    size_t threads;               /* compute threads a call uses */
    unsigned long node_mask;      /* NUMA nodes its threads and arenas live on (0: anywhere) */
    uint32_t references;          /* the executor itself plus each arena made for it */

    pthread_mutex_t lock;         /* guards everything below up to the futex words */
    int running;                  /* a call is running */
    int stopping;
    uform__call_t *queue;         /* ring of deferred calls not yet started */
    size_t queue_limit, queue_head, queue_count;
    uint64_t accepted, finished;  /* calls accepted and made final, in order */

    uint32_t lead_word;           /* futex: bumped when the lead may have work */
    uint32_t finished_word;       /* futex: bumped when a call becomes final */
    uint32_t mood;                /* uform_mood_t, read atomically by idle threads */
    uint32_t lead_sleeping;       /* the lead is (about to be) in futex_wait on lead_word */
    uint32_t drain_waiters;       /* threads (about to be) in futex_wait on finished_word */

    pthread_t lead;               /* runs deferred calls */
    int lead_started;
    uform__team_t team;           /* own-threads executors: helpers of the lead */
    uform_pool_t pool;            /* pool executors */
    uform__parallel_t parallel;   /* what calls see */
};

/* Takes and drops references (an arena made for the executor holds one). */
void uform__executor_retain(uform_executor_t executor);
void uform__executor_release(void *executor);

#endif
