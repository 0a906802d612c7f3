/* An executor over a borrowed pool: an OpenMP team adapted to uform_pool_t in a few lines. */
#include <omp.h>
#include <stdlib.h>

#include "common/check.h"
#include "exec/test_verb.h"

static size_t omp_pool_threads(void *context) { return (size_t)*(int *)context; }

static void omp_pool_for_n(void *context, size_t n, uform_prong_t fn, void *fn_context) {
    int threads = *(int *)context;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (long prong = 0; prong < (long)n; ++prong) fn(fn_context, (size_t)omp_get_thread_num(), (size_t)prong);
}

int main(void) {
    int threads = 3;
    uform_pool_t pool = {&threads, omp_pool_threads, omp_pool_for_n};
    uform_executor_t executor = NULL;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform_executor_on_pool(&pool, NULL, 128, &executor, &outcome), UFORM_OK);
    CHECK_EQ_INT(uform_executor_threads(executor), 3);

    enum { prongs = 500 };
    uint32_t *hits = calloc(prongs, sizeof *hits);
    test_verb_t request = {0};
    request.executor = executor, request.units = 4, request.prongs = prongs, request.prong_hits = hits;
    CHECK_STATUS(test_verb(&request), UFORM_OK);
    CHECK_EQ_INT(request.threads_seen, 3);
    size_t exact = 0;
    for (size_t i = 0; i < prongs; ++i) exact += hits[i] == 4;
    CHECK_EQ_INT(exact, prongs);

    /* Deferred calls on a pool executor run in order on its internal thread. */
    enum { calls = 100 };
    test_verb_t *requests = calloc(calls, sizeof *requests);
    uint64_t log[calls];
    size_t log_count = 0;
    for (size_t i = 0; i < calls; ++i) {
        requests[i].executor = executor, requests[i].completion = UFORM_COMPLETION_DEFERRED;
        requests[i].units = 1, requests[i].prongs = 7, requests[i].sequence = i;
        requests[i].log = log, requests[i].log_count = &log_count;
        CHECK_STATUS(test_verb(&requests[i]), UFORM_DEFERRED);
    }
    CHECK_STATUS(uform_executor_drain(executor, UFORM_MOOD_PARKED, NULL), UFORM_OK);
    size_t in_order = 0;
    for (size_t i = 0; i < calls; ++i) in_order += log[i] == i && uform_outcome_status(&requests[i].outcome) == UFORM_OK;
    CHECK_EQ_INT(in_order, calls);
    uform_executor_free(executor);

    /* A pool without functions, or with no threads, is refused. */
    uform_pool_t broken = {&threads, NULL, omp_pool_for_n};
    CHECK_STATUS(uform_executor_on_pool(&broken, NULL, 0, &executor, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK(executor == NULL);
    CHECK_CONTAINS(outcome.message, "no threads() function");
    int zero = 0;
    uform_pool_t empty = {&zero, omp_pool_threads, omp_pool_for_n};
    CHECK_STATUS(uform_executor_on_pool(&empty, NULL, 0, &executor, &outcome), UFORM_INVALID_ARGUMENT);
    free(hits);
    free(requests);
    return check_finish();
}
