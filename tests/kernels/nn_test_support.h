/*
 * Shared helpers of the NN kernel tests: a small pthread-based uform__parallel_t (there is no
 * executor in these tests), array comparisons that print both values, and the list of classes
 * this machine runs.
 */
#ifndef UFORM_TESTS_NN_TEST_SUPPORT_H
#define UFORM_TESTS_NN_TEST_SUPPORT_H

#include <pthread.h>
#include <stdint.h>

#include "common/check.h"
#include "core/parallel.h"
#include "kernels/nn.h"
#include "uform/uform.h"

/* ---- A pool that starts its workers per call: simple and good enough for tests. ---- */

typedef struct test_pool_t {
    size_t threads;
    size_t n, next;
    uform__prong_fn fn;
    void *context;
    pthread_mutex_t lock;
} test_pool_t;

typedef struct test_worker_t {
    test_pool_t *pool;
    size_t thread;
} test_worker_t;

static void *test_pool_work(void *opaque) {
    test_worker_t *worker = opaque;
    test_pool_t *pool = worker->pool;
    for (;;) {
        pthread_mutex_lock(&pool->lock);
        size_t prong = pool->next < pool->n ? pool->next++ : pool->n;
        pthread_mutex_unlock(&pool->lock);
        if (prong >= pool->n) return NULL;
        pool->fn(pool->context, worker->thread, prong);
    }
}

static void test_pool_for_n(void *self, size_t n, uform__prong_fn fn, void *context) {
    test_pool_t *pool = self;
    pool->n = n, pool->next = 0, pool->fn = fn, pool->context = context;
    pthread_t handles[16];
    test_worker_t workers[16];
    size_t extra = pool->threads - 1;
    for (size_t t = 0; t < extra; ++t) {
        workers[t].pool = pool, workers[t].thread = t + 1;
        pthread_create(&handles[t], NULL, test_pool_work, &workers[t]);
    }
    test_worker_t self_worker = {pool, 0};
    test_pool_work(&self_worker);
    for (size_t t = 0; t < extra; ++t) pthread_join(handles[t], NULL);
}

/* Fills `parallel` to run over `threads` (1..16) threads backed by `pool`. */
static inline void test_parallel_init(uform__parallel_t *parallel, test_pool_t *pool, size_t threads) {
    pool->threads = threads;
    pthread_mutex_init(&pool->lock, NULL);
    parallel->threads = threads;
    parallel->for_n = test_pool_for_n;
    parallel->self = pool;
}

/* ---- Comparisons. ---- */

/* Passes when every |got − expected| ≤ absolute + relative·|expected| and nothing is NaN; prints
 * the first few failures with both values and the worst error. */
static inline void test_compare_f32(const char *what, const float *got, const double *expected, size_t n,
                                    double absolute, double relative) {
    size_t failures = 0, worst = 0;
    double worst_excess = -1.0;
    for (size_t i = 0; i < n; ++i) {
        double g = got[i], e = expected[i], tolerance = absolute + relative * fabs(e);
        int bad = isnan(g) || isnan(e) || fabs(g - e) > tolerance;
        if (bad && failures++ < 5)
            fprintf(stderr, "  %s[%zu]: got %.9g, expected %.9g (tolerance %.3g)\n", what, i, g, e, tolerance);
        double excess = isnan(g) || isnan(e) ? INFINITY : fabs(g - e) - tolerance;
        if (excess > worst_excess) worst_excess = excess, worst = i;
    }
    CHECK_MSG(failures == 0, "%s: %zu of %zu values out of tolerance (abs %.3g, rel %.3g); worst at %zu", what,
              failures, n, absolute, relative, worst);
}

static inline void test_compare_f32_f32(const char *what, const float *got, const float *expected, size_t n,
                                        double absolute, double relative) {
    double *wide = malloc((n ? n : 1) * sizeof(double));
    for (size_t i = 0; i < n; ++i) wide[i] = expected[i];
    test_compare_f32(what, got, wide, n, absolute, relative);
    free(wide);
}

static inline void test_compare_bits(const char *what, const void *got, const void *expected, size_t bytes) {
    const unsigned char *g = got, *e = expected;
    size_t first = bytes;
    for (size_t i = 0; i < bytes; ++i)
        if (g[i] != e[i]) {
            first = i;
            break;
        }
    CHECK_MSG(first == bytes, "%s: not bit-identical, first difference at byte %zu (0x%02x vs 0x%02x)", what, first,
              first < bytes ? g[first] : 0, first < bytes ? e[first] : 0);
}

/* Every class against SERIAL: call with k = 0 (SERIAL, whose result is kept in `slot`) first,
 * then with each other class's result for the same inputs. */
static float *test_serial_kept[32];
static size_t test_serial_kept_size[32];

static inline void test_versus_serial(size_t k, size_t slot, const char *what, const float *got, size_t n,
                                      double absolute, double relative) {
    if (k == 0) {
        free(test_serial_kept[slot]);
        test_serial_kept[slot] = malloc((n ? n : 1) * sizeof(float));
        memcpy(test_serial_kept[slot], got, n * sizeof(float));
        test_serial_kept_size[slot] = n;
        return;
    }
    char label[160];
    snprintf(label, sizeof label, "%s vs serial", what);
    CHECK_MSG(test_serial_kept_size[slot] == n, "%s: serial kept %zu values, got %zu", label,
              test_serial_kept_size[slot], n);
    if (test_serial_kept_size[slot] == n) test_compare_f32_f32(label, got, test_serial_kept[slot], n, absolute, relative);
}

static inline void test_fill(float *x, size_t n, uint64_t *state, float amplitude) {
    for (size_t i = 0; i < n; ++i) x[i] = amplitude * check_random_float(state);
}

/* The SIMD classes tested against SERIAL (each only where this machine runs it). */
static const uform_cpu_class_t test_simd_classes[] = {UFORM_CPU_CLASS_INTEL_HASWELL, UFORM_CPU_CLASS_INTEL_SKYLAKE,
                                                      UFORM_CPU_CLASS_INTEL_ICELAKE, UFORM_CPU_CLASS_AMD_GENOA};
enum { test_simd_class_count = sizeof test_simd_classes / sizeof test_simd_classes[0] };

#endif
