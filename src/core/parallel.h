/*
 * The parallel loop that kernels and verbs use, whatever executor runs them.
 *
 * A kernel receives `const uform__parallel_t *parallel` (NULL means "run everything on this
 * thread") and splits its work into `n` prongs itself, with a split that depends only on the
 * shapes and on `uform__parallel_threads(parallel)`, never on timing. Prongs may run on any thread
 * in any order, so a prong writes only its own outputs; a reduction writes one partial per prong
 * and the caller combines the partials in prong order afterwards. That keeps results bit-identical
 * from run to run. `thread` (in [0, threads)) indexes per-thread scratch: no two prongs with the
 * same `thread` run at once.
 */
#ifndef UFORM_CORE_PARALLEL_H
#define UFORM_CORE_PARALLEL_H

#include <stddef.h>

typedef void (*uform__prong_fn)(void *context, size_t thread, size_t prong);

typedef struct uform__parallel_t {
    size_t threads;                                                        /* >= 1 */
    void (*for_n)(void *self, size_t n, uform__prong_fn fn, void *context); /* runs all n prongs, then returns */
    void *self;
} uform__parallel_t;

/* Runs fn(context, thread, prong) for every prong in [0, n) and returns when all are done.
 * NULL `parallel` (or one thread) runs them in order on the calling thread with thread 0. */
void uform__parallel_for(const uform__parallel_t *parallel, size_t n, uform__prong_fn fn, void *context);

/* How many threads may run prongs at once (1 for NULL). */
size_t uform__parallel_threads(const uform__parallel_t *parallel);

/* The half-open range [*begin, *end) of prong `prong` when `count` units are split into `prongs`
 * near-equal contiguous ranges (the first `count % prongs` ranges get one unit more). */
void uform__split_range(size_t count, size_t prongs, size_t prong, size_t *begin, size_t *end);

#endif
