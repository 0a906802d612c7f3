/*
 * Executor overheads: the cost of an empty blocking call on each executor kind, a deferred round
 * trip, and the wake-up latency of a parked vs a spinning team (the time from the lead publishing a
 * parallel loop to a helper thread running its first prong). Prints a table and writes JSON
 * (argv[1], default bench/results/executor.json). Not a test: numbers drift on shared machines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_clock.h"
#include "exec/call.h"
#include "uform/uform.h"

typedef struct empty_request_t {
    uform_outcome_t outcome;
} empty_request_t;

static uform_status_t empty_run(void *request, uform__call_context_t *context) { return UFORM_OK; }

static uform_status_t empty_call(uform_executor_t executor, empty_request_t *request, uform_completion_t completion) {
    uform__call_t call = {empty_run, request, &request->outcome, completion, NULL, NULL, "bench_empty"};
    return uform__executor_call(executor, &call);
}

/* Median of `rounds` timings of `repeat` calls each, in nanoseconds per call. */
static double time_empty_calls(uform_executor_t executor, uform_completion_t completion) {
    enum { rounds = 15, repeat = 2000 };
    double best[rounds];
    empty_request_t request = {{0}};
    for (int round = 0; round < rounds; ++round) {
        double start = 1e9 * bench_seconds();
        for (int i = 0; i < repeat; ++i) {
            empty_call(executor, &request, completion);
            if (completion == UFORM_COMPLETION_DEFERRED) uform_outcome_wait(&request.outcome);
        }
        best[round] = (1e9 * bench_seconds() - start) / repeat;
    }
    for (int i = 1; i < rounds; ++i)
        for (int j = i; j > 0 && best[j] < best[j - 1]; --j) {
            double swap = best[j];
            best[j] = best[j - 1], best[j - 1] = swap;
        }
    return best[rounds / 2];
}

/* Wake-up latency: the lead stamps the time, publishes a 2-prong loop; prong 1 runs on the helper
 * (prong 0 is taken by the lead itself only after the stamp). We record when prong 1 starts. */
typedef struct wake_request_t {
    uform_outcome_t outcome;
    double samples[400];
    size_t count;
} wake_request_t;

typedef struct wake_loop_t {
    double published, helper_started;
    volatile int helper_seen;
} wake_loop_t;

static void wake_prong(void *context, size_t thread, size_t prong) {
    wake_loop_t *loop = context;
    if (thread != 0 && !loop->helper_seen) {
        loop->helper_started = 1e9 * bench_seconds();
        loop->helper_seen = 1;
    }
    if (thread == 0) /* keep the lead busy so the helper must pick up the other prong */
        while (!loop->helper_seen && 1e9 * bench_seconds() - loop->published < 5e6) {}
}

static uform_status_t wake_run(void *pointer, uform__call_context_t *context) {
    wake_request_t *request = pointer;
    for (size_t i = 0; i < sizeof request->samples / sizeof request->samples[0]; ++i) {
        /* Let helpers go idle (park, if parked) between loops. */
        struct timespec pause = {0, 200000};
        nanosleep(&pause, NULL);
        wake_loop_t loop = {1e9 * bench_seconds(), 0, 0};
        uform__parallel_for(context->parallel, 2, wake_prong, &loop);
        if (loop.helper_seen) request->samples[request->count++] = loop.helper_started - loop.published;
    }
    return UFORM_OK;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double wake_latency(uform_executor_t executor, uform_mood_t mood) {
    uform_executor_drain(executor, mood, NULL);
    static wake_request_t request;
    request.count = 0;
    uform__call_t call = {wake_run, &request, &request.outcome, UFORM_COMPLETION_BLOCKING, NULL, NULL, "bench_wake"};
    uform__executor_call(executor, &call);
    uform_executor_drain(executor, UFORM_MOOD_PARKED, NULL);
    if (!request.count) return -1;
    qsort(request.samples, request.count, sizeof(double), compare);
    return request.samples[request.count / 2];
}

static size_t pool_threads(void *context) { return 2; }
static void pool_for_n(void *context, size_t n, uform_prong_t fn, void *fn_context) {
    for (size_t i = 0; i < n; ++i) fn(fn_context, 0, i); /* an inline "pool": measures the adapter only */
}

int main(int argc, char **argv) {
    const char *json_path = argc > 1 ? argv[1] : "bench/results/executor.json";
    uform_executor_t one = NULL, two = NULL, pooled = NULL;
    uform_executor_for_ram(NULL, 1, 0, &one, NULL);
    uform_executor_for_ram(NULL, 2, 0, &two, NULL);
    uform_pool_t pool = {NULL, pool_threads, pool_for_n};
    uform_executor_on_pool(&pool, NULL, 0, &pooled, NULL);

    double calling = time_empty_calls(NULL, UFORM_COMPLETION_BLOCKING);
    double own1 = time_empty_calls(one, UFORM_COMPLETION_BLOCKING);
    double own2 = time_empty_calls(two, UFORM_COMPLETION_BLOCKING);
    double pool_blocking = time_empty_calls(pooled, UFORM_COMPLETION_BLOCKING);
    double deferred_parked = time_empty_calls(two, UFORM_COMPLETION_DEFERRED);
    uform_executor_drain(two, UFORM_MOOD_SPINNING, NULL);
    double deferred_spinning = time_empty_calls(two, UFORM_COMPLETION_DEFERRED);
    uform_executor_drain(two, UFORM_MOOD_PARKED, NULL);
    double wake_parked = wake_latency(two, UFORM_MOOD_PARKED);
    double wake_spinning = wake_latency(two, UFORM_MOOD_SPINNING);

    printf("%-52s %12s\n", "executor overhead (median)", "ns");
    printf("%-52s %12.0f\n", "empty blocking call, calling thread (NULL)", calling);
    printf("%-52s %12.0f\n", "empty blocking call, own threads, 1 thread", own1);
    printf("%-52s %12.0f\n", "empty blocking call, own threads, 2 threads", own2);
    printf("%-52s %12.0f\n", "empty blocking call, borrowed pool", pool_blocking);
    printf("%-52s %12.0f\n", "empty deferred call + wait, parked lead", deferred_parked);
    printf("%-52s %12.0f\n", "empty deferred call + wait, spinning lead", deferred_spinning);
    printf("%-52s %12.0f\n", "helper wake-up, parked (futex)", wake_parked);
    printf("%-52s %12.0f\n", "helper wake-up, spinning", wake_spinning);

    FILE *json = fopen(json_path, "w");
    if (json) {
        fprintf(json,
                "{\"cpu_class\": \"%s\", \"empty_blocking_ns\": {\"calling_thread\": %.1f, \"own_threads_1\": %.1f, "
                "\"own_threads_2\": %.1f, \"pool\": %.1f}, \"empty_deferred_roundtrip_ns\": {\"parked\": %.1f, "
                "\"spinning\": %.1f}, \"wake_latency_ns\": {\"parked\": %.1f, \"spinning\": %.1f}}\n",
                uform_cpu_class_name(uform_cpu_class_detect()), calling, own1, own2, pool_blocking, deferred_parked,
                deferred_spinning, wake_parked, wake_spinning);
        fclose(json);
    } else {
        fprintf(stderr, "cannot write %s\n", json_path);
    }
    uform_executor_free(one);
    uform_executor_free(two);
    uform_executor_free(pooled);
    return 0;
}
