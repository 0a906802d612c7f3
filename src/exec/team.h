/*
 * A team of helper threads that join the lead thread in parallel loops (fork-join).
 *
 * The lead (whichever thread runs the call) publishes a job and takes prongs itself as thread 0;
 * helper `i` takes prongs as thread `i`. Prongs are handed out through one atomic ticket that holds
 * the job's number beside the next prong, so each runs exactly once and a helper that wakes late
 * can never take a prong of a job it did not read; kernels make their results independent of who
 * ran what (core/parallel.h). The lead waits for the job's prongs to finish, not for every helper
 * to check in: when a helper is slow to wake (its core busy with another process), the lead runs
 * the prongs itself and the loop costs what one thread would.
 * Idle helpers sleep on a futex (parked) or poll (spinning), per the executor's mood word.
 */
#ifndef UFORM_EXEC_TEAM_H
#define UFORM_EXEC_TEAM_H

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>

#include "core/parallel.h"

typedef struct uform__team_t {
    size_t helpers;            /* threads besides the lead */
    pthread_t *threads;
    size_t started;            /* helpers actually running */
    const uint32_t *mood;      /* the executor's mood word (uform_mood_t), read atomically */
    uint32_t generation;       /* futex: bumped once per job, and to stop (wakes helpers) */
    uint32_t completed;        /* futex: prongs of the current job finished (wakes the lead) */
    uint32_t lead_sleeping;    /* the lead is in (or entering) futex_wait on `completed` */
    uint32_t stop;
    uint32_t sleepers;         /* helpers inside futex_wait (or about to be): the lead wakes them */
    uint64_t ticket;           /* atomic: job number << 32 | next prong (team_closed between jobs) */
    uform__prong_fn fn;        /* the current job, stored and read atomically (see team.c) */
    void *context;
    size_t n;
} uform__team_t;

/* Starts `helpers` threads placed on `cpus` (NULL: anywhere). Answers 0 on success, else an errno. */
int uform__team_start(uform__team_t *team, size_t helpers, const uint32_t *mood, const cpu_set_t *cpus);

/* Stops and joins every helper. */
void uform__team_stop(uform__team_t *team);

/* The `for_n` of a uform__parallel_t over this team (self is the team). */
void uform__team_for_n(void *self, size_t n, uform__prong_fn fn, void *context);

#endif
