/*
 * The monotonic clock, in the two units the library measures with: seconds as a double (progress,
 * timings in descriptions and statistics) and whole milliseconds (deadlines of the mesh's store and
 * rendezvous). CLOCK_MONOTONIC never jumps with the wall clock, so a deadline or an elapsed time
 * survives an NTP correction. Private to libuform.
 */
#ifndef UFORM_CORE_CLOCK_H
#define UFORM_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline double uform__seconds_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

static inline int64_t uform__milliseconds_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

#endif
