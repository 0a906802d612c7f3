/*
 * The benchmarks' clocks, in seconds as doubles: wall-clock time (monotonic) for rates, the
 * process's CPU time (every thread, user and system) for rates per CPU-second, which survive other
 * processes sharing the cores where wall-clock rates do not, and any clock by id.
 */
#ifndef UFORM_BENCH_CLOCK_H
#define UFORM_BENCH_CLOCK_H

#include <time.h>

static inline double bench_clock_seconds(clockid_t clock) {
    struct timespec time;
    clock_gettime(clock, &time);
    return (double)time.tv_sec + (double)time.tv_nsec * 1e-9;
}

static inline double bench_seconds(void) { return bench_clock_seconds(CLOCK_MONOTONIC); }

static inline double bench_cpu_seconds(void) { return bench_clock_seconds(CLOCK_PROCESS_CPUTIME_ID); }

#endif
