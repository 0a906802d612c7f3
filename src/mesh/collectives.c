/*
 * The collectives as the trainer sees them (mesh.h): a mesh of one answers at once; otherwise each
 * goes through the Gloo shim, and the first failure breaks the mesh for good — a Gloo context whose
 * pair has failed cannot be used again, and the members cannot know how far each other got — and
 * closes this member's connections so every other member's pending collective fails at once.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/outcome.h"
#include "mesh/mesh.h"

uform_status_t uform__mesh_acquire(uform_mesh_t mesh, uform_outcome_t *outcome, const char *function) {
    if (__atomic_load_n(&mesh->broken, __ATOMIC_ACQUIRE))
        return uform__fail(outcome, UFORM_PEER_LOST, function,
                           "the mesh broke in an earlier call (%s); restart the run from its last checkpoint",
                           mesh->broken_message);
    uint32_t expected = 0;
    if (!__atomic_compare_exchange_n(&mesh->busy, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return uform__fail(outcome, UFORM_CONTENDED, function,
                           "the mesh is serving another call (a mesh serves one trainer call at a time)");
    return UFORM_OK;
}

void uform__mesh_release(uform_mesh_t mesh) { __atomic_store_n(&mesh->busy, 0, __ATOMIC_RELEASE); }

static uform_status_t failed(uform_mesh_t mesh, uform_status_t status, const char *what, const char *said,
                             uform_outcome_t *outcome, const char *function) {
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
    if (status == UFORM_TIMEOUT)
        snprintf(message, sizeof message,
                 "member %zu of %zu: no answer from another member within %.3g s while exchanging %s (%s)",
                 mesh->index, mesh->count, (double)mesh->timeout_ms / 1000.0, what, said);
    else if (status == UFORM_PEER_LOST)
        snprintf(message, sizeof message, "member %zu of %zu: another member left while exchanging %s (%s)",
                 mesh->index, mesh->count, what, said);
    else
        snprintf(message, sizeof message, "member %zu of %zu: exchanging %s failed (%s)", mesh->index, mesh->count,
                 what, said);
    /* One call at a time holds the mesh, so only this thread writes here; the release store
     * publishes the message to whoever sees the flag. */
    if (!__atomic_load_n(&mesh->broken, __ATOMIC_ACQUIRE)) {
        mesh->broken_status = status;
        snprintf(mesh->broken_message, sizeof mesh->broken_message, "%s", message);
        __atomic_store_n(&mesh->broken, 1, __ATOMIC_RELEASE);
    }
    if (mesh->gloo) mesh->gloo_api->close(mesh->gloo);
    return uform__fail(outcome, status, function, "%s; the trainer is unchanged, and the mesh is broken: restart the "
                       "run from its last checkpoint", message);
}

static uform_status_t usable(uform_mesh_t mesh, uform_outcome_t *outcome, const char *function) {
    if (!__atomic_load_n(&mesh->broken, __ATOMIC_ACQUIRE)) return UFORM_OK;
    return uform__fail(outcome, UFORM_PEER_LOST, function, "the mesh is broken (%s)", mesh->broken_message);
}

static uform_status_t allreduce(uform_mesh_t mesh, void *values, size_t count, uform__gloo_scalar_t scalar,
                                const char *what, uform_outcome_t *outcome, const char *function) {
    uform_status_t status = usable(mesh, outcome, function);
    if (status != UFORM_OK || mesh->count == 1) return status;
    size_t element = scalar == UFORM__GLOO_F64 ? sizeof(double) : sizeof(float);
    mesh->payload_bytes[UFORM__MESH_ALLREDUCE] += count * element, mesh->collectives[UFORM__MESH_ALLREDUCE] += 1;
    size_t bucket = UFORM__MESH_BUCKET_BYTES / element;
    char said[256] = "";
    for (size_t first = 0; first < count; first += bucket) {
        size_t n = count - first < bucket ? count - first : bucket;
        status = mesh->gloo_api->allreduce_sum(mesh->gloo, (char *)values + first * element, n, scalar, said, sizeof said);
        if (status != UFORM_OK) return failed(mesh, status, what, said, outcome, function);
    }
    return UFORM_OK;
}

uform_status_t uform__mesh_allreduce_f32(uform_mesh_t mesh, float *values, size_t count, const char *what,
                                         uform_outcome_t *outcome, const char *function) {
    return allreduce(mesh, values, count, UFORM__GLOO_F32, what, outcome, function);
}

uform_status_t uform__mesh_allreduce_f64(uform_mesh_t mesh, double *values, size_t count, const char *what,
                                         uform_outcome_t *outcome, const char *function) {
    return allreduce(mesh, values, count, UFORM__GLOO_F64, what, outcome, function);
}

uform_status_t uform__mesh_allgather(uform_mesh_t mesh, const void *input, void *output, const size_t *bytes,
                                     const char *what, uform_outcome_t *outcome, const char *function) {
    uform_status_t status = usable(mesh, outcome, function);
    if (status != UFORM_OK) return status;
    if (mesh->count == 1) {
        if (bytes[0]) memmove(output, input, bytes[0]);
        return UFORM_OK;
    }
    for (size_t j = 0; j < mesh->count; ++j) mesh->payload_bytes[UFORM__MESH_ALLGATHER] += bytes[j];
    mesh->collectives[UFORM__MESH_ALLGATHER] += 1;
    char said[256] = "";
    status = mesh->gloo_api->allgatherv(mesh->gloo, input, output, bytes, said, sizeof said);
    return status == UFORM_OK ? status : failed(mesh, status, what, said, outcome, function);
}

uform_status_t uform__mesh_broadcast(uform_mesh_t mesh, void *data, size_t bytes, size_t root, const char *what,
                                     uform_outcome_t *outcome, const char *function) {
    uform_status_t status = usable(mesh, outcome, function);
    if (status != UFORM_OK || mesh->count == 1) return status;
    mesh->payload_bytes[UFORM__MESH_BROADCAST] += bytes, mesh->collectives[UFORM__MESH_BROADCAST] += 1;
    char said[256] = "";
    status = mesh->gloo_api->broadcast(mesh->gloo, data, bytes, root, said, sizeof said);
    return status == UFORM_OK ? status : failed(mesh, status, what, said, outcome, function);
}

uform_status_t uform__mesh_rounds_until_done(uform_mesh_t mesh, const uint32_t *done, unsigned char *flags, size_t *sizes,
                                            const char *what, uform_outcome_t *outcome, const char *function) {
    uform_status_t status = UFORM_OK;
    for (size_t r = 0; r < mesh->count; ++r) sizes[r] = 1;
    for (int all = 0; !all && status == UFORM_OK;) {
        /* A member with work waits for it up to one round; one without goes straight to the exchange,
         * where it waits for the others. */
        struct timespec step = {0, 5000000L};
        for (int slept = 0; done && slept < 20 && !__atomic_load_n(done, __ATOMIC_ACQUIRE); ++slept) nanosleep(&step, NULL);
        unsigned char mine = !done || __atomic_load_n(done, __ATOMIC_ACQUIRE) != 0;
        status = uform__mesh_allgather(mesh, &mine, flags, sizes, what, outcome, function);
        all = 1;
        for (size_t r = 0; r < mesh->count && status == UFORM_OK; ++r) all &= flags[r];
    }
    return status;
}
