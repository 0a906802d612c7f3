/*
 * The benchmark's thread pool behind uform__parallel_t: `threads − 1` pinned-free workers that
 * spin briefly for the next loop (GEMM issues a few loops per call back to back) and then sleep
 * on a condition variable, so they do not steal the cores OpenBLAS's and oneDNN's threads use
 * when those are measured. Prongs are taken from an atomic counter.
 */
#ifndef UFORM_BENCH_GEMM_POOL_H
#define UFORM_BENCH_GEMM_POOL_H

#include <immintrin.h>
#include <pthread.h>
#include <stdlib.h>

#include "core/parallel.h"

typedef struct bench_pool_t {
    uform__parallel_t parallel;
    size_t threads;
    pthread_t workers[64];
    pthread_mutex_t mutex;
    pthread_cond_t wake;
    size_t generation, finished, next, n; /* atomics */
    uform__prong_fn fn;
    void *context;
    int stop;
} bench_pool_t;

typedef struct bench_pool_worker_t {
    bench_pool_t *pool;
    size_t thread;
} bench_pool_worker_t;

static void bench_pool_drain(bench_pool_t *pool, size_t thread) {
    size_t n = __atomic_load_n(&pool->n, __ATOMIC_ACQUIRE);
    for (;;) {
        size_t prong = __atomic_fetch_add(&pool->next, 1, __ATOMIC_ACQ_REL);
        if (prong >= n) break;
        pool->fn(pool->context, thread, prong);
    }
}

static void *bench_pool_main(void *argument) {
    bench_pool_worker_t *worker = argument;
    bench_pool_t *pool = worker->pool;
    size_t seen = 0;
    for (;;) {
        size_t generation;
        int spins = 0;
        while ((generation = __atomic_load_n(&pool->generation, __ATOMIC_ACQUIRE)) == seen &&
               !__atomic_load_n(&pool->stop, __ATOMIC_ACQUIRE)) {
            if (++spins < 200000) {
                _mm_pause();
                continue;
            }
            pthread_mutex_lock(&pool->mutex);
            while (__atomic_load_n(&pool->generation, __ATOMIC_ACQUIRE) == seen && !pool->stop)
                pthread_cond_wait(&pool->wake, &pool->mutex);
            pthread_mutex_unlock(&pool->mutex);
        }
        if (__atomic_load_n(&pool->stop, __ATOMIC_ACQUIRE)) break;
        seen = generation;
        bench_pool_drain(pool, worker->thread);
        __atomic_fetch_add(&pool->finished, 1, __ATOMIC_ACQ_REL);
    }
    free(worker);
    return NULL;
}

static void bench_pool_for_n(void *self, size_t n, uform__prong_fn fn, void *context) {
    bench_pool_t *pool = self;
    pool->fn = fn;
    pool->context = context;
    __atomic_store_n(&pool->finished, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&pool->next, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&pool->n, n, __ATOMIC_RELEASE);
    pthread_mutex_lock(&pool->mutex);
    __atomic_add_fetch(&pool->generation, 1, __ATOMIC_ACQ_REL);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mutex);
    bench_pool_drain(pool, 0);
    while (__atomic_load_n(&pool->finished, __ATOMIC_ACQUIRE) != pool->threads - 1) _mm_pause();
}

static int bench_pool_start(bench_pool_t *pool, size_t threads) {
    if (threads < 1 || threads > 64) return -1;
    pool->threads = threads;
    pool->generation = pool->finished = pool->next = pool->n = 0;
    pool->stop = 0;
    pthread_mutex_init(&pool->mutex, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pool->parallel = (uform__parallel_t){.threads = threads, .for_n = bench_pool_for_n, .self = pool};
    for (size_t t = 1; t < threads; ++t) {
        bench_pool_worker_t *worker = malloc(sizeof *worker);
        if (!worker) return -1;
        *worker = (bench_pool_worker_t){.pool = pool, .thread = t};
        if (pthread_create(&pool->workers[t], NULL, bench_pool_main, worker) != 0) return -1;
    }
    return 0;
}

static void bench_pool_stop(bench_pool_t *pool) {
    pthread_mutex_lock(&pool->mutex);
    __atomic_store_n(&pool->stop, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mutex);
    for (size_t t = 1; t < pool->threads; ++t) pthread_join(pool->workers[t], NULL);
    pthread_mutex_destroy(&pool->mutex);
    pthread_cond_destroy(&pool->wake);
}

#endif
