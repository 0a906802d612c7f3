/*
 * A steady request loop allocates nothing on the batcher's compute path: after a warm-up that
 * grows every buffer to its batch (arenas, tapes), rounds of text and choose jobs make no
 * allocation in the whole process (malloc family, mmap and thread creation, counted by
 * tests/reliability/failing_alloc.c, which interposes them). Media jobs are counted and printed:
 * their decoders (TurboJPEG, libspng) allocate inside the library's decode step.
 * Usage: test_serve_alloc CHECKPOINT
 */
#include "common/check.h"
#include "reliability/failing_alloc.h"
#include "serve_support.h"

static support_t support;

/* One round: `jobs_count` jobs of `items` items each, taken in turn from the `count` inputs
 * all submitted, then all waited for. */
static int round_of(serve_batcher_t *batcher, support_job_t *jobs, size_t jobs_count, size_t items,
                    support_input_t *inputs, size_t count) {
    for (size_t j = 0; j < jobs_count; ++j) {
        support_job_t *own = &jobs[j];
        own->job.count = 0, own->calls = 0;
        for (size_t i = 0; i < items; ++i) support_job_add(own, &inputs[(j * items + i) % count]);
        if (serve_batcher_submit(batcher, &own->job) != UFORM_OK) return -1;
    }
    int failed = 0;
    for (size_t j = 0; j < jobs_count; ++j) {
        support_job_wait(&jobs[j]);
        failed |= atomic_load(&jobs[j].job.status) != UFORM_OK;
    }
    return failed ? -1 : 0;
}

/* The warm-up starts with one job of BATCH items (the batcher's max_batch), which the batcher
 * queues at once: a full batch, whatever the timing. Rounds of one-item jobs make batches of
 * whatever was queued when the compute thread came back, so on a busy machine the warm-up rounds
 * alone could miss the largest batch, whose first arrival in a counted round then grew a buffer
 * (CI saw 2 allocations). */
enum { BATCH = 8 };
_Static_assert((int)BATCH <= (int)SUPPORT_MAX_ITEMS, "a full batch fits one support job");

static size_t counted_rounds(serve_batcher_t *batcher, support_job_t *jobs, support_input_t *inputs, size_t count, int rounds) {
    CHECK(round_of(batcher, jobs, 1, BATCH, inputs, count) == 0); /* warm-up: the largest batch, then rounds */
    for (int r = 0; r < 3; ++r) CHECK(round_of(batcher, jobs, count, 1, inputs, count) == 0);
    failing_alloc_arm(SIZE_MAX, FAILING_ALLOC_TRANSIENT);                                      /* count, never fail */
    for (int r = 0; r < rounds; ++r) CHECK(round_of(batcher, jobs, count, 1, inputs, count) == 0);
    size_t counted = failing_alloc_counted();
    failing_alloc_disarm();
    return counted;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_serve_alloc CHECKPOINT\n");
        return 2;
    }
    if (support_open(&support, argv[1], 2) != 0) return 1;
    serve_batcher_t *batcher = support_batcher(&support, BATCH, 0, 1024, NULL);
    CHECK(batcher != NULL);
    support_job_t *jobs = calloc(16, sizeof *jobs);
    for (int j = 0; j < 16; ++j) support_job_init(&jobs[j]);
    if (batcher) {
        size_t texts = counted_rounds(batcher, jobs, support.texts, 16, 20);
        size_t choices = counted_rounds(batcher, jobs, support.choices, SUPPORT_CHOICES, 20);
        size_t images = counted_rounds(batcher, jobs, support.images, SUPPORT_IMAGES, 5);
        size_t recordings = counted_rounds(batcher, jobs, support.recordings, SUPPORT_RECORDINGS, 5);
        printf("allocations in steady rounds: texts %zu (320 jobs), choices %zu (120), pictures %zu (60), "
               "recordings %zu (20)\n", texts, choices, images, recordings);
        CHECK_EQ_INT(texts, 0);
        CHECK_EQ_INT(choices, 0);
        serve_batcher_free(batcher);
    }
    for (int j = 0; j < 16; ++j) support_job_destroy(&jobs[j]);
    free(jobs);
    support_close(&support);
    return check_finish();
}
