/*
 * The gradients' all-reduce beside the backward (mesh.h, "overlap.c"), as PyTorch's DDP reducer does
 * it: the step hands over each bucket of gradients as soon as the backward has finished the
 * parameters in it, and a thread of the mesh's own all-reduces the buckets in the order they came
 * while the step's threads compute the next ones. The thread is the only user of the collectives
 * between the first bucket of a round and the step's wait for the last, so Gloo is never entered
 * from two threads at once. The results do not depend on when a bucket is handed over, only on the
 * buckets and their order, which every member takes from the same plan (train/mesh_step.c): with
 * and without overlap the sums are bit for bit the same.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/outcome.h"
#include "core/clock.h"
#include "mesh/mesh.h"

typedef struct bucket_t {
    float *values;
    size_t count;
} bucket_t;

struct uform__mesh_buckets_s {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;          /* the thread waits here for buckets or the stop */
    pthread_cond_t done;          /* the step waits here for the round's last bucket */
    bucket_t *queue;
    size_t capacity, submitted, reduced; /* this round's; reset when the step has waited */
    int stopping;
    int failed;                   /* this round's first failure, kept in `failure` */
    uform_outcome_t failure;
    double ran;                   /* seconds spent in the collectives this round */
    uform_mesh_t mesh;
};

static void *run(void *pointer) {
    struct uform__mesh_buckets_s *buckets = pointer;
    pthread_mutex_lock(&buckets->lock);
    for (;;) {
        while (!buckets->stopping && buckets->reduced == buckets->submitted)
            pthread_cond_wait(&buckets->wake, &buckets->lock);
        if (buckets->reduced == buckets->submitted) break; /* stopping, and nothing left */
        bucket_t bucket = buckets->queue[buckets->reduced];
        int failed = buckets->failed;
        pthread_mutex_unlock(&buckets->lock);
        uform_outcome_t outcome;
        memset(&outcome, 0, sizeof outcome);
        double start = uform__seconds_now();
        /* After a failure the mesh is broken and every later bucket fails at once: skip them. */
        uform_status_t status = failed ? UFORM_OK
                                       : uform__mesh_allreduce_f32(buckets->mesh, bucket.values, bucket.count,
                                                                   "the gradients", &outcome, "uform_trainer_step");
        double ran = uform__seconds_now() - start;
        pthread_mutex_lock(&buckets->lock);
        buckets->ran += ran;
        if (status != UFORM_OK && !buckets->failed) buckets->failed = 1, buckets->failure = outcome;
        buckets->reduced += 1;
        if (buckets->reduced == buckets->submitted) pthread_cond_broadcast(&buckets->done);
    }
    pthread_mutex_unlock(&buckets->lock);
    return NULL;
}

uform_status_t uform__mesh_overlap_start(uform_mesh_t mesh, uform_outcome_t *outcome, const char *function) {
    struct uform__mesh_buckets_s *buckets = calloc(1, sizeof *buckets);
    if (!buckets) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the gradients' queue");
    buckets->mesh = mesh;
    pthread_mutex_init(&buckets->lock, NULL);
    pthread_cond_init(&buckets->wake, NULL);
    pthread_cond_init(&buckets->done, NULL);
    int started = pthread_create(&buckets->thread, NULL, run, buckets);
    if (started != 0) {
        pthread_mutex_destroy(&buckets->lock);
        pthread_cond_destroy(&buckets->wake), pthread_cond_destroy(&buckets->done);
        free(buckets);
        return uform__fail(outcome, started == EAGAIN || started == ENOMEM ? UFORM_OUT_OF_MEMORY : UFORM_INTERNAL,
                           function, "cannot allocate a thread for the gradients' all-reduce: %s", strerror(started));
    }
    mesh->buckets = buckets;
    return UFORM_OK;
}

void uform__mesh_overlap_stop(uform_mesh_t mesh) {
    struct uform__mesh_buckets_s *buckets = mesh->buckets;
    if (!buckets) return;
    pthread_mutex_lock(&buckets->lock);
    buckets->stopping = 1;
    pthread_cond_signal(&buckets->wake);
    pthread_mutex_unlock(&buckets->lock);
    pthread_join(buckets->thread, NULL);
    pthread_mutex_destroy(&buckets->lock);
    pthread_cond_destroy(&buckets->wake), pthread_cond_destroy(&buckets->done);
    free(buckets->queue);
    free(buckets);
    mesh->buckets = NULL;
}

void uform__mesh_bucket_submit(uform_mesh_t mesh, float *values, size_t count) {
    struct uform__mesh_buckets_s *buckets = mesh->buckets;
    if (!buckets) return;
    pthread_mutex_lock(&buckets->lock);
    if (buckets->submitted == buckets->capacity) {
        size_t capacity = buckets->capacity ? 2 * buckets->capacity : 64;
        bucket_t *grown = realloc(buckets->queue, capacity * sizeof *grown);
        if (!grown) {
            /* Without room to queue it the bucket is reduced here, in order (the queue is drained
             * first), so the members' collectives still match. */
            while (buckets->reduced != buckets->submitted) pthread_cond_wait(&buckets->done, &buckets->lock);
            int failed = buckets->failed;
            pthread_mutex_unlock(&buckets->lock);
            uform_outcome_t outcome;
            memset(&outcome, 0, sizeof outcome);
            uform_status_t status = failed ? UFORM_OK
                                           : uform__mesh_allreduce_f32(mesh, values, count, "the gradients", &outcome,
                                                                       "uform_trainer_step");
            pthread_mutex_lock(&buckets->lock);
            if (status != UFORM_OK && !buckets->failed) buckets->failed = 1, buckets->failure = outcome;
            pthread_mutex_unlock(&buckets->lock);
            return;
        }
        buckets->queue = grown, buckets->capacity = capacity;
    }
    buckets->queue[buckets->submitted++] = (bucket_t){values, count};
    pthread_cond_signal(&buckets->wake);
    pthread_mutex_unlock(&buckets->lock);
}

uform_status_t uform__mesh_buckets_finish(uform_mesh_t mesh, uform_outcome_t *outcome,
                                          const char *function, double *waited, double *ran) {
    struct uform__mesh_buckets_s *buckets = mesh->buckets;
    *waited = 0, *ran = 0;
    if (!buckets) return UFORM_OK;
    double start = uform__seconds_now();
    pthread_mutex_lock(&buckets->lock);
    while (buckets->reduced != buckets->submitted) pthread_cond_wait(&buckets->done, &buckets->lock);
    int failed = buckets->failed;
    uform_outcome_t failure = buckets->failure;
    *ran = buckets->ran;
    buckets->submitted = buckets->reduced = 0, buckets->failed = 0, buckets->ran = 0;
    pthread_mutex_unlock(&buckets->lock);
    *waited = uform__seconds_now() - start;
    if (!failed) return UFORM_OK;
    return uform__fail(outcome, (uform_status_t)failure.status, function, "%s", failure.message);
}
