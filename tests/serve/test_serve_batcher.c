/*
 * The dynamic batcher of `uform serve` (tools/serve/batcher.h) on the tiny checkpoint, against
 * each input computed alone by direct calls on the calling thread:
 *   1. 16 threads submit 400 jobs mixing single texts, texts, JPEG pictures, WAV recordings and
 *      choices: every item's result equals its own input's (cosine ≥ 0.99999, |Δ| ≤ 1e-4; choice
 *      probabilities within 1e-5), so no row moved between requests; `done` is called exactly
 *      once per job (searches are the search route's, tested end to end by test_serve_api and
 *      test_serve_ann against `uform search`);
 *   2. an undecodable picture fails its job with UFORM_FORMAT naming input[1]; a passed deadline
 *      UFORM_TIMEOUT (library statuses: the HTTP layer alone maps them to 422 and 504);
 *   3. limits: a full queue (UFORM_CONTENDED), a job larger than the queue
 *      (UFORM_INVALID_ARGUMENT), a stopped batcher (UFORM_CANCELLED); stopping runs what is queued
 *      without waiting for batches to fill;
 *   4. batching: max-batch items coalesce into one batch (text and pictures), a request larger
 *      than a batch is split and answered in order, a lone item waits max-wait for company;
 *   5. stop with 60 jobs in flight: each answered once;
 *   6. follow-ups: a batch of 4 texts, 3 of whose jobs name one follow-up, runs it once with those 3
 *      items (their outputs already written) before any of them resolves; a failure it records
 *      ends that job alone.
 * Run under ThreadSanitizer by `make tsan` (label tsan).
 * Usage: test_serve_batcher CHECKPOINT [SEED]
 */
#include <math.h>
#include <stdatomic.h>
#include <time.h>

#include "common/check.h"
#include "serve_support.h"

static support_t support;
static serve_batcher_t *shared;

/* Per-thread findings, merged by the main thread (CHECK is not thread-safe). */
typedef struct worker_t {
    pthread_t thread;
    uint64_t seed;
    size_t jobs, items, failures, double_calls;
    char first_failure[256];
} worker_t;

static void note(worker_t *worker, const char *format, double a, double b, size_t which) {
    if (worker->failures++ == 0)
        snprintf(worker->first_failure, sizeof worker->first_failure, format, a, b, which);
}

/* Checks one finished job against the references; answers the failures found. */
static void verify(worker_t *worker, const support_job_t *own) {
    const serve_job_t *job = &own->job;
    if (own->calls != 1) worker->double_calls += 1;
    if (atomic_load(&job->status) != UFORM_OK) {
        note(worker, "a job failed (%g %g) with %zu items", (double)atomic_load(&job->status), 0, job->count);
        return;
    }
    for (size_t i = 0; i < job->count; ++i) {
        const support_input_t *input = own->inputs[i];
        const float *output = own->outputs[i];
        worker->items += 1;
        if (input->queue == SERVE_QUEUE_CHOOSE) {
            for (size_t c = 0; c < strlen(input->choices); ++c)
                if (fabsf(output[c] - input->reference[c]) > 1e-5f)
                    note(worker, "choice probability %g, alone %g (item %zu)", output[c], input->reference[c], i);
            continue;
        }
        double dot = 0, worst = 0;
        for (size_t c = 0; c < support.width; ++c) {
            dot += (double)output[c] * input->reference[c];
            double difference = fabs((double)output[c] - input->reference[c]);
            if (difference > worst) worst = difference;
        }
        if (dot < 0.99999 || worst > 1e-4) note(worker, "cosine %g, largest difference %g (item %zu)", dot, worst, i);
    }
}

static void *work(void *pointer) {
    worker_t *worker = pointer;
    support_job_t *own = malloc(sizeof *own);
    for (size_t n = 0; n < 25; ++n) {
        support_job_init(own);
        uint64_t draw = check_random_next(&worker->seed);
        int kind = (int)(draw % 10);
        if (kind < 2) { /* one text alone (what the search route queues) */
            support_job_add(own, &support.texts[(draw >> 8) % SUPPORT_TEXTS]);
        } else if (kind == 2) {
            size_t count = 1 + (draw >> 8) % 3;
            for (size_t i = 0; i < count; ++i) support_job_add(own, &support.choices[(draw >> (12 + 4 * i)) % SUPPORT_CHOICES]);
        } else {
            size_t count = 1 + (draw >> 8) % 6;
            for (size_t i = 0; i < count; ++i) {
                uint64_t pick = check_random_next(&worker->seed);
                if (pick % 10 < 6) support_job_add(own, &support.texts[(pick >> 8) % SUPPORT_TEXTS]);
                else if (pick % 10 < 9) support_job_add(own, &support.images[(pick >> 8) % SUPPORT_IMAGES]);
                else support_job_add(own, &support.recordings[(pick >> 8) % SUPPORT_RECORDINGS]);
            }
        }
        uform_status_t submitted = serve_batcher_submit(shared, &own->job);
        if (submitted != UFORM_OK) {
            note(worker, "submit answered %g %g (job %zu)", (double)submitted, 0, n);
        } else {
            support_job_wait(own);
            verify(worker, own);
        }
        worker->jobs += 1;
        support_job_destroy(own);
    }
    free(own);
    return NULL;
}

static void test_concurrent(uint64_t seed) {
    serve_metrics_t *metrics = calloc(1, sizeof *metrics);
    shared = support_batcher(&support, 16, 0, 4096, metrics);
    CHECK(shared != NULL);
    if (!shared) return;
    enum { WORKERS = 16 };
    worker_t workers[WORKERS];
    memset(workers, 0, sizeof workers);
    for (int w = 0; w < WORKERS; ++w) {
        workers[w].seed = seed * 1000 + (uint64_t)w;
        pthread_create(&workers[w].thread, NULL, work, &workers[w]);
    }
    size_t jobs = 0, items = 0;
    for (int w = 0; w < WORKERS; ++w) {
        pthread_join(workers[w].thread, NULL);
        CHECK_MSG(workers[w].failures == 0, "worker %d: %zu failures, the first: %s", w, workers[w].failures,
                  workers[w].first_failure);
        CHECK_EQ_INT(workers[w].double_calls, 0);
        jobs += workers[w].jobs, items += workers[w].items;
    }
    CHECK_EQ_INT(jobs, WORKERS * 25);
    serve_batcher_free(shared);
    /* Every item went through some batch, and some batches held more than one item. */
    size_t batched = 0, batches = 0;
    for (int q = 0; q < SERVE_QUEUE_COUNT; ++q) {
        batched += metrics->batch_items[q];
        for (int b = 0; b <= SERVE_BATCH_BUCKETS; ++b) batches += metrics->batches[q][b];
    }
    CHECK_EQ_INT(batched, items);
    CHECK_MSG(batches < items, "%zu batches for %zu items: nothing was batched", batches, items);
    printf("concurrent: %zu jobs, %zu items in %zu batches\n", jobs, items, batches);
    free(metrics);
}

static void test_failures(void) {
    serve_batcher_t *batcher = support_batcher(&support, 8, 0, 64, NULL);
    CHECK(batcher != NULL);
    if (!batcher) return;
    support_job_t *own = malloc(sizeof *own);
    support_input_t garbage = {UFORM_MODALITY_IMAGE, support.garbage, sizeof support.garbage};
    support_job_init(own);
    support_job_add(own, &support.texts[0]);
    support_job_add(own, &garbage);
    support_job_add(own, &support.images[1]);
    CHECK_EQ_INT(serve_batcher_submit(batcher, &own->job), UFORM_OK);
    support_job_wait(own);
    CHECK_EQ_INT(atomic_load(&own->job.status), UFORM_FORMAT);
    CHECK_CONTAINS(own->job.message, "input[1]");
    CHECK_EQ_INT(own->calls, 1);
    support_job_destroy(own);

    support_job_init(own);
    support_job_add(own, &support.texts[1]);
    support_job_add(own, &support.images[2]);
    own->job.deadline_ns = 1; /* long past */
    CHECK_EQ_INT(serve_batcher_submit(batcher, &own->job), UFORM_OK);
    support_job_wait(own);
    CHECK_EQ_INT(atomic_load(&own->job.status), UFORM_TIMEOUT);
    CHECK_CONTAINS(own->job.message, "--timeout");
    CHECK_EQ_INT(own->calls, 1);
    support_job_destroy(own);
    free(own);
    serve_batcher_free(batcher);
}

static void test_limits(void) {
    /* Batches of 64 that wait 60 s to fill: queued items stay queued, so the queue fills. */
    serve_batcher_t *batcher = support_batcher(&support, 64, 60000000, 4, NULL);
    CHECK(batcher != NULL);
    if (!batcher) return;
    support_job_t *jobs = calloc(3, sizeof *jobs);
    for (int j = 0; j < 3; ++j) support_job_init(&jobs[j]);
    for (int i = 0; i < 3; ++i) support_job_add(&jobs[0], &support.texts[i]);
    for (int i = 0; i < 2; ++i) support_job_add(&jobs[1], &support.texts[i]);
    for (int i = 0; i < 5; ++i) support_job_add(&jobs[2], &support.texts[i]);
    uint64_t started = serve_now_ns();
    CHECK_EQ_INT(serve_batcher_submit(batcher, &jobs[0].job), UFORM_OK);
    CHECK_EQ_INT(serve_batcher_submit(batcher, &jobs[1].job), UFORM_CONTENDED);
    CHECK_CONTAINS(jobs[1].job.message, "full");
    CHECK_EQ_INT(serve_batcher_submit(batcher, &jobs[2].job), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(jobs[2].job.message, "5 items");
    serve_batcher_stop(batcher); /* runs the 3 queued texts now, without waiting 60 s */
    CHECK_EQ_INT(jobs[0].calls, 1);
    CHECK_EQ_INT(atomic_load(&jobs[0].job.status), UFORM_OK);
    CHECK(serve_now_ns() - started < 30000000000ull);
    /* The three texts were computed at the stop: each output is its text's embedding alone (within
     * the batched product's F32 rounding, as verify() allows), not the zeroed buffer. */
    for (int i = 0; i < 3; ++i) {
        double dot = 0, worst = 0;
        for (size_t c = 0; c < support.width; ++c) {
            dot += (double)jobs[0].outputs[i][c] * support.texts[i].reference[c];
            worst = fmax(worst, fabs((double)jobs[0].outputs[i][c] - support.texts[i].reference[c]));
        }
        CHECK_MSG(dot >= 0.99999 && worst <= 1e-4, "text %d computed at the stop: cosine %g with its embedding alone, "
                  "largest difference %g", i, dot, worst);
    }
    CHECK_EQ_INT(serve_batcher_submit(batcher, &jobs[1].job), UFORM_CANCELLED);
    CHECK_EQ_INT(jobs[1].calls + jobs[2].calls, 0);
    serve_batcher_free(batcher);
    for (int j = 0; j < 3; ++j) support_job_destroy(&jobs[j]);
    free(jobs);
}

static size_t batches_of(const serve_metrics_t *metrics, int queue, int bucket) { return metrics->batches[queue][bucket]; }

static void test_batching(void) {
    serve_metrics_t *metrics = calloc(1, sizeof *metrics);
    /* Batches of 4 that would wait 60 s: 4 single-item jobs make exactly one batch of 4. */
    serve_batcher_t *batcher = support_batcher(&support, 4, 60000000, 64, metrics);
    CHECK(batcher != NULL);
    if (!batcher) return;
    support_job_t *jobs = calloc(4, sizeof *jobs);
    for (int j = 0; j < 4; ++j) {
        support_job_init(&jobs[j]);
        support_job_add(&jobs[j], &support.texts[10 + j]);
        CHECK_EQ_INT(serve_batcher_submit(batcher, &jobs[j].job), UFORM_OK);
    }
    for (int j = 0; j < 4; ++j) support_job_wait(&jobs[j]);
    CHECK_EQ_INT(batches_of(metrics, UFORM_MODALITY_TEXT, 2), 1); /* the bucket "le 4" */
    CHECK_EQ_INT(metrics->batch_items[UFORM_MODALITY_TEXT], 4);
    for (int j = 0; j < 4; ++j) {
        support_job_destroy(&jobs[j]);
        support_job_init(&jobs[j]);
        support_job_add(&jobs[j], &support.images[j]);
        CHECK_EQ_INT(serve_batcher_submit(batcher, &jobs[j].job), UFORM_OK);
    }
    for (int j = 0; j < 4; ++j) {
        support_job_wait(&jobs[j]);
        CHECK_EQ_INT(atomic_load(&jobs[j].job.status), UFORM_OK);
        double dot = 0;
        for (size_t c = 0; c < support.width; ++c) dot += (double)jobs[j].outputs[0][c] * support.images[j].reference[c];
        CHECK_MSG(dot > 0.99999, "picture %d: cosine %g with itself alone", j, dot);
    }
    CHECK_EQ_INT(batches_of(metrics, UFORM_MODALITY_IMAGE, 2), 1);
    /* A job of 7 texts (more than a batch of 4, once padded by one more job to fill the second
     * batch) comes back in its own order. */
    support_job_destroy(&jobs[0]);
    support_job_init(&jobs[0]);
    for (int i = 0; i < 7; ++i) support_job_add(&jobs[0], &support.texts[20 + i]);
    support_job_destroy(&jobs[1]);
    support_job_init(&jobs[1]);
    support_job_add(&jobs[1], &support.texts[30]);
    CHECK_EQ_INT(serve_batcher_submit(batcher, &jobs[0].job), UFORM_OK);
    CHECK_EQ_INT(serve_batcher_submit(batcher, &jobs[1].job), UFORM_OK);
    support_job_wait(&jobs[0]);
    support_job_wait(&jobs[1]);
    for (int i = 0; i < 7; ++i) {
        double dot = 0;
        for (size_t c = 0; c < support.width; ++c) dot += (double)jobs[0].outputs[i][c] * support.texts[20 + i].reference[c];
        CHECK_MSG(dot > 0.99999, "item %d of a split job: cosine %g with its own input", i, dot);
    }
    CHECK_EQ_INT(batches_of(metrics, UFORM_MODALITY_TEXT, 2), 3);
    serve_batcher_free(batcher);

    /* A lone item waits max-wait (here 50 ms) for others before its batch runs. */
    batcher = support_batcher(&support, 64, 50000, 64, NULL);
    support_job_destroy(&jobs[0]);
    support_job_init(&jobs[0]);
    support_job_add(&jobs[0], &support.texts[3]);
    uint64_t started = serve_now_ns();
    CHECK_EQ_INT(serve_batcher_submit(batcher, &jobs[0].job), UFORM_OK);
    support_job_wait(&jobs[0]);
    CHECK_MSG(serve_now_ns() - started >= 50000000ull, "answered after %.3f ms, before max-wait's 50",
              (double)(serve_now_ns() - started) * 1e-6);
    serve_batcher_free(batcher);
    for (int j = 0; j < 4; ++j) support_job_destroy(&jobs[j]);
    free(jobs);
    free(metrics);
}

static void test_stop_in_flight(void) {
    serve_batcher_t *batcher = support_batcher(&support, 8, 0, 4096, NULL);
    CHECK(batcher != NULL);
    if (!batcher) return;
    enum { JOBS = 60 };
    support_job_t *jobs = calloc(JOBS, sizeof *jobs);
    for (int j = 0; j < JOBS; ++j) {
        support_job_init(&jobs[j]);
        support_job_add(&jobs[j], j % 3 == 0 ? &support.images[j % SUPPORT_IMAGES] : &support.texts[j % SUPPORT_TEXTS]);
        CHECK_EQ_INT(serve_batcher_submit(batcher, &jobs[j].job), UFORM_OK);
    }
    serve_batcher_free(batcher);
    size_t answered = 0, ok = 0;
    for (int j = 0; j < JOBS; ++j) answered += jobs[j].calls == 1, ok += atomic_load(&jobs[j].job.status) == UFORM_OK;
    CHECK_EQ_INT(answered, JOBS);
    CHECK_EQ_INT(ok, JOBS);
    for (int j = 0; j < JOBS; ++j) support_job_destroy(&jobs[j]);
    free(jobs);
}

/* A compute thread that polls after each batch: a job submitted while it polls, one submitted
 * after the polling ended (the thread asleep: the signal must wake it), and a stop while it polls
 * (which must end it, not wait out the spin). */
static void test_spin(void) {
    support.spin_us = 200000; /* 0.2 s: long enough that the stop below comes during it */
    serve_batcher_t *batcher = support_batcher(&support, 8, 0, 64, NULL);
    CHECK(batcher != NULL);
    if (!batcher) return;
    support_job_t *own = malloc(sizeof *own);
    for (int round = 0; round < 3; ++round) {
        support_job_init(own);
        support_job_add(own, &support.texts[30 + round]);
        CHECK_EQ_INT(serve_batcher_submit(batcher, &own->job), UFORM_OK);
        support_job_wait(own);
        CHECK_EQ_INT(own->calls, 1);
        CHECK_EQ_INT(atomic_load(&own->job.status), UFORM_OK);
        double dot = 0;
        for (size_t c = 0; c < support.width; ++c) dot += (double)own->outputs[0][c] * support.texts[30 + round].reference[c];
        CHECK_MSG(dot > 0.99999, "round %d: cosine %g with its own input", round, dot);
        support_job_destroy(own);
        if (round == 1) { /* past the spin: the thread sleeps on its condition, using no CPU */
            struct timespec pause = {0, 600000000}, before, after;
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &before);
            nanosleep(&pause, NULL);
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &after);
            double used = (double)(after.tv_sec - before.tv_sec) * 1e3 + (double)(after.tv_nsec - before.tv_nsec) * 1e-6;
            CHECK_MSG(used < 400, "%.0f ms of CPU in 600 ms idle: the 200 ms spin did not end", used);
        }
    }
    uint64_t stopping = serve_now_ns();
    serve_batcher_free(batcher); /* the thread is polling after round 2's batch */
    double waited = (double)(serve_now_ns() - stopping) * 1e-6;
    CHECK_MSG(waited < 150, "the stop took %.1f ms: it waited out the 200 ms spin", waited);
    free(own);
    support.spin_us = 0;
}

/* A follow-up that records what it was given and fails the job of one chosen text. */
typedef struct recorder_t {
    serve_followup_t followup; /* first */
    int runs;
    size_t items;
    int outputs_ready, resolved_before;
    const unsigned char *fail_bytes;
} recorder_t;

static void record(serve_followup_t *followup, serve_item_t **items, size_t count, uform_executor_t compute) {
    recorder_t *recorder = (recorder_t *)followup;
    (void)compute;
    recorder->runs += 1, recorder->items += count;
    for (size_t i = 0; i < count; ++i) {
        const support_job_t *own = items[i]->job->context;
        double dot = 0;
        for (size_t c = 0; c < support.width; ++c) dot += (double)items[i]->output[c] * own->inputs[0]->reference[c];
        recorder->outputs_ready += dot > 0.99999;
        recorder->resolved_before += own->calls != 0;
        if (items[i]->bytes == recorder->fail_bytes) serve_job_fail(items[i]->job, UFORM_IO, "the follow-up failed it");
    }
}

static void test_followup(void) {
    /* Batches of 4 that would wait 60 s: the 4 jobs make one batch. */
    serve_batcher_t *batcher = support_batcher(&support, 4, 60000000, 64, NULL);
    CHECK(batcher != NULL);
    if (!batcher) return;
    recorder_t recorder = {{record}, 0, 0, 0, 0, support.texts[2].bytes};
    support_job_t *jobs = calloc(4, sizeof *jobs);
    for (int j = 0; j < 4; ++j) {
        support_job_init(&jobs[j]);
        support_job_add(&jobs[j], &support.texts[j]);
        if (j != 3) jobs[j].job.followup = &recorder.followup;
        CHECK_EQ_INT(serve_batcher_submit(batcher, &jobs[j].job), UFORM_OK);
    }
    for (int j = 0; j < 4; ++j) support_job_wait(&jobs[j]);
    CHECK_EQ_INT(recorder.runs, 1);
    CHECK_EQ_INT(recorder.items, 3);
    CHECK_EQ_INT(recorder.outputs_ready, 3);
    CHECK_EQ_INT(recorder.resolved_before, 0);
    for (int j = 0; j < 4; ++j) {
        CHECK_EQ_INT(jobs[j].calls, 1);
        CHECK_EQ_INT(atomic_load(&jobs[j].job.status), j == 2 ? UFORM_IO : UFORM_OK);
    }
    CHECK_CONTAINS(jobs[2].job.message, "the follow-up failed it");
    serve_batcher_free(batcher);
    for (int j = 0; j < 4; ++j) support_job_destroy(&jobs[j]);
    free(jobs);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_serve_batcher CHECKPOINT [SEED]\n");
        return 2;
    }
    /* A fixed seed (docs/testing.md: seeds never come from the time); another as the second argument. */
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 20261201u;
    printf("seed %llu (another: the second argument)\n", (unsigned long long)seed);
    if (support_open(&support, argv[1], 2) != 0) return 1;
    test_concurrent(seed);
    test_failures();
    test_limits();
    test_batching();
    test_stop_in_flight();
    test_followup();
    test_spin();
    support.spin_us = 250; /* the server's default: the concurrent run again, with polling */
    test_concurrent(seed + 1);
    test_stop_in_flight();
    support.spin_us = 0;
    support_close(&support);
    return check_finish();
}
