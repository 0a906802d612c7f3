/*
 * uform_index_build over a mesh (uform.h, uform_index_build_t's `mesh`; docs/indexes.md, "Many
 * members, one index"): which batches a member encodes, and the end, where the members' item
 * counts and error lines are gathered in member order, member 0 writes the errors file, and the
 * members' items stream to member 0, which writes the index (uform_index_builder_write_members).
 *
 * Why batches are shared by where they are handed over: the reader cuts batches of one modality,
 * so a mixed corpus's batches, and the order their items reach the builder, depend on every item
 * before them. Each member therefore reads every item (reading and probing, no decoding) and cuts
 * the very batches one process cuts; a batch belongs to the member whose block of item positions
 * holds the position at which the reader handed it over. Those positions never decrease from one
 * batch to the next, so each member's batches are a contiguous run of one process's batches, and
 * the runs laid end to end in member order are that process's builder. The batches themselves are
 * the same items in the same order, so the encodes give the same bits whatever batching does to
 * rounding.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/outcome.h"
#include "data/index_build.h"
#include "mesh/mesh.h"

size_t uform__index_build_weight(const uform_dataset_t dataset) {
    if (dataset->options.source == UFORM_DATASET_SHARDS) return dataset->items.shard_count;
    uform_dataset_description_t description;
    uform_dataset_describe(dataset, &description);
    return description.items;
}

void uform__index_build_share(uform_mesh_t mesh, size_t items, size_t *low, size_t *high) {
    *low = 0, *high = items;
    if (!mesh || !mesh->count) return;
    *low = items * mesh->index / mesh->count, *high = items * (mesh->index + 1) / mesh->count;
}

uform_status_t uform__index_build_agree(uform_mesh_t mesh, int ok, const uform_dataset_t *datasets, size_t count, uint64_t items,
                                       uint64_t ann, uform_outcome_t *outcome, const char *function) {
    /* Whether this member could start, what it will read (the datasets' fingerprints: their sources,
     * listed paths and lines; the item count the shares are cut from) and which approximate
     * structure it will build afterwards: a member that skipped it would leave the others waiting in
     * the structure's first exchange until the mesh's timeout. */
    enum { ITEMS, FINGERPRINT, OK, ANN, WORDS };
    uint64_t mine[WORDS] = {items, UFORM__DATA_HASH_SEED, (uint64_t)(ok != 0), ann};
    for (size_t d = 0; d < count; ++d)
        mine[FINGERPRINT] = uform__fnv1a64(&datasets[d]->fingerprint, sizeof datasets[d]->fingerprint, mine[FINGERPRINT]);
    uint64_t *all = calloc(mesh->count, sizeof mine);
    size_t *sizes = calloc(mesh->count, sizeof *sizes);
    uform_status_t status = all && sizes ? uform__mesh_acquire(mesh, outcome, function)
                                         : uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the members' inputs");
    if (status == UFORM_OK) {
        for (size_t r = 0; r < mesh->count; ++r) sizes[r] = sizeof mine;
        status = uform__mesh_allgather(mesh, mine, all, sizes, "the members' inputs", outcome, function);
        uform__mesh_release(mesh);
    }
    for (size_t r = 1; status == UFORM_OK && all[OK] && r < mesh->count; ++r) {
        const uint64_t *theirs = all + WORDS * r;
        if (theirs[OK] && (theirs[ITEMS] != all[ITEMS] || theirs[FINGERPRINT] != all[FINGERPRINT]))
            status = uform__fail(outcome, UFORM_CONFIG_MISMATCH, function,
                                 "member %zu reads other inputs than member 0 (%llu items, fingerprint %016llx against %llu, "
                                 "%016llx): every member must be given the same inputs",
                                 r, (unsigned long long)theirs[ITEMS], (unsigned long long)theirs[FINGERPRINT],
                                 (unsigned long long)all[ITEMS], (unsigned long long)all[FINGERPRINT]);
        else if (theirs[OK] && theirs[ANN] != all[ANN])
            status = uform__fail(outcome, UFORM_CONFIG_MISMATCH, function,
                                 "member %zu asks for %s approximate structure than member 0 (`ann`: its recipe and training "
                                 "rows): every member must pass the same",
                                 r, theirs[ANN] && all[ANN] ? "another" : theirs[ANN] ? "an" : "no");
    }
    for (size_t r = 0; status == UFORM_OK && r < mesh->count; ++r)
        if (!all[WORDS * r + OK])
            status = uform__fail(outcome, UFORM_PEER_LOST, function,
                                 "member %zu of %zu failed before the build (its own message says why); no index is written",
                                 r, (size_t)mesh->count);
    free(all), free(sizes);
    return status;
}

uform_status_t uform__index_build_rounds(uform_mesh_t mesh, const uint32_t *done, uform_outcome_t *outcome, const char *function) {
    unsigned char *all = calloc(mesh->count, 1);
    size_t *sizes = calloc(mesh->count, sizeof *sizes);
    uform_status_t status = all && sizes ? uform__mesh_acquire(mesh, outcome, function)
                                         : uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the rounds' bytes");
    if (status == UFORM_OK) {
        status = uform__mesh_rounds_until_done(mesh, done, all, sizes, "whether every member's share is encoded", outcome,
                                               function);
        uform__mesh_release(mesh);
    }
    free(all), free(sizes);
    return status;
}

uform_status_t uform__index_build_gather(uform_mesh_t mesh, int ok, size_t count, const char *mine, size_t length, size_t *items,
                                         char **all, size_t *all_length, uform_outcome_t *outcome, const char *function) {
    *items = 0, *all = NULL, *all_length = 0;
    const size_t members = mesh->count;
    /* Per member: whether its share is done, its items, the bytes of its error lines. */
    enum { OK, ITEMS, LENGTH, WORDS };
    uint64_t own[WORDS] = {(uint64_t)(ok != 0), count, length}, *records = calloc(members, sizeof own);
    size_t *sizes = calloc(members, sizeof *sizes);
    unsigned char *sent = malloc(length + 1), *received = NULL;
    uform_status_t status = records && sizes && sent
                                ? uform__mesh_acquire(mesh, outcome, function)
                                : uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the error lines' exchange");
    if (status != UFORM_OK) {
        /* A member out of memory here cannot answer: the others wait out the mesh's timeout, as they
         * do for a member that died. */
        free(records), free(sizes), free(sent);
        return status;
    }
    for (size_t r = 0; r < members; ++r) sizes[r] = sizeof own;
    status = uform__mesh_allgather(mesh, own, records, sizes, "the members' items and error line sizes", outcome, function);
    for (size_t r = 0; status == UFORM_OK && r < members; ++r)
        if (!records[r * WORDS + OK])
            status = uform__fail(outcome, UFORM_PEER_LOST, function,
                                 "member %zu of %zu failed before the gather (its own message says why); no index is written",
                                 r, members);
    size_t total = 0;
    for (size_t r = 0; status == UFORM_OK && r < members; ++r)
        sizes[r] = (size_t)records[r * WORDS + LENGTH] + 1, total += sizes[r], *items += (size_t)records[r * WORDS + ITEMS];
    if (status == UFORM_OK && !(received = malloc(total)))
        status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate %zu bytes of error lines", total);
    if (status == UFORM_OK) {
        /* One byte more than the lines, so no member sends nothing (the collectives want bytes). */
        if (length) memcpy(sent, mine, length);
        sent[length] = 0;
        status = uform__mesh_allgather(mesh, sent, received, sizes, "the members' error lines", outcome, function);
    }
    if (status == UFORM_OK) {
        /* Drop each member's extra byte: the lines in member order, then one terminator. */
        size_t at = 0, used = 0;
        for (size_t r = 0; r < members; ++r) {
            memmove(received + used, received + at, (size_t)records[r * WORDS + LENGTH]);
            used += (size_t)records[r * WORDS + LENGTH], at += sizes[r];
        }
        received[used] = 0;
        *all = (char *)received, *all_length = used, received = NULL;
    }
    uform__mesh_release(mesh);
    free(records), free(sizes), free(sent), free(received);
    return status;
}

uform_status_t uform__index_build_write_errors(const char *path, const char *lines, size_t length, uform_outcome_t *outcome,
                                               const char *function) {
    int file = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (file < 0)
        return uform__fail(outcome, errno == ENOMEM ? UFORM_OUT_OF_MEMORY : UFORM_IO, function, "cannot write '%s': %s", path,
                           strerror(errno));
    int failure = 0;
    for (size_t done = 0; done < length && !failure;) {
        ssize_t wrote = write(file, lines + done, length - done);
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote <= 0) failure = errno ? errno : EIO;
        else done += (size_t)wrote;
    }
    if (!failure && fsync(file) != 0) failure = errno;
    close(file);
    if (failure) return uform__fail(outcome, UFORM_IO, function, "cannot write '%s': %s", path, strerror(failure));
    return UFORM_OK;
}
