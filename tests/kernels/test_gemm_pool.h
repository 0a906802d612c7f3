/*
 * A small pthread pool behind uform__parallel_t for the GEMM tests (there is no executor in
 * these tests): `threads − 1` workers plus the calling thread take prongs from a shared atomic
 * counter, so which thread runs which prong changes from run to run — exactly what the
 * determinism tests need to be meaningful.
 */
#ifndef UFORM_TESTS_KERNELS_TEST_GEMM_POOL_H
#define UFORM_TESTS_KERNELS_TEST_GEMM_POOL_H

#include <pthread.h>
#include <stdlib.h>

#include "core/parallel.h"

typedef struct test_pool_t {
    uform__parallel_t parallel;
    size_t threads;
    pthread_t *workers;
    pthread_mutex_t mutex;
    pthread_cond_t wake, done;
    size_t generation, finished, n;
    size_t next; /* atomic prong counter */
    uform__prong_fn fn;
    void *context;
    int stop;
} test_pool_t;

typedef struct test_pool_worker_t {
    test_pool_t *pool;
    size_t thread;
} test_pool_worker_t;

static void test_pool_drain(test_pool_t *pool, size_t thread) {
    for (;;) {
        size_t prong = __atomic_fetch_add(&pool->next, 1, __ATOMIC_ACQ_REL);
        if (prong >= pool->n) break;
        pool->fn(pool->context, thread, prong);
    }
}

static void *test_pool_main(void *argument) {
    test_pool_worker_t *worker = argument;
    test_pool_t *pool = worker->pool;
    size_t seen = 0;
    for (;;) {
        pthread_mutex_lock(&pool->mutex);
        while (pool->generation == seen && !pool->stop) pthread_cond_wait(&pool->wake, &pool->mutex);
        if (pool->stop) {
            pthread_mutex_unlock(&pool->mutex);
            break;
        }
        seen = pool->generation;
        pthread_mutex_unlock(&pool->mutex);
        test_pool_drain(pool, worker->thread);
        pthread_mutex_lock(&pool->mutex);
        if (++pool->finished == pool->threads - 1) pthread_cond_signal(&pool->done);
        pthread_mutex_unlock(&pool->mutex);
    }
    free(worker);
    return NULL;
}

static void test_pool_for_n(void *self, size_t n, uform__prong_fn fn, void *context) {
    test_pool_t *pool = self;
    pthread_mutex_lock(&pool->mutex);
    pool->n = n;
    pool->fn = fn;
    pool->context = context;
    pool->finished = 0;
    __atomic_store_n(&pool->next, 0, __ATOMIC_RELEASE);
    ++pool->generation;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mutex);
    test_pool_drain(pool, 0);
    pthread_mutex_lock(&pool->mutex);
    while (pool->finished != pool->threads - 1) pthread_cond_wait(&pool->done, &pool->mutex);
    pthread_mutex_unlock(&pool->mutex);
}

/* Starts `threads` − 1 workers; answers 0 on success. */
static int test_pool_start(test_pool_t *pool, size_t threads) {
    *pool = (test_pool_t){.threads = threads};
    pthread_mutex_init(&pool->mutex, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    pool->parallel = (uform__parallel_t){.threads = threads, .for_n = test_pool_for_n, .self = pool};
    pool->workers = calloc(threads, sizeof(pthread_t));
    if (!pool->workers) return -1;
    for (size_t t = 1; t < threads; ++t) {
        test_pool_worker_t *worker = malloc(sizeof *worker);
        if (!worker) return -1;
        *worker = (test_pool_worker_t){.pool = pool, .thread = t};
        if (pthread_create(&pool->workers[t], NULL, test_pool_main, worker) != 0) return -1;
    }
    return 0;
}

static void test_pool_stop(test_pool_t *pool) {
    pthread_mutex_lock(&pool->mutex);
    pool->stop = 1;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mutex);
    for (size_t t = 1; t < pool->threads; ++t) pthread_join(pool->workers[t], NULL);
    free(pool->workers);
    pthread_mutex_destroy(&pool->mutex);
    pthread_cond_destroy(&pool->wake);
    pthread_cond_destroy(&pool->done);
}

#endif
