/*
 * One index from many members (uform.h, uform_index_builder_gather; docs/indexes.md, "Many members,
 * one index"): every member's builder goes to every member through the mesh's all-gather, and each
 * makes a new builder holding member 0's items, then member 1's, and so on. When every member built
 * a contiguous block of the inputs in input order, that is the builder one process would have
 * made, so the file written from it is the same bytes.
 *
 * Four exchanges; the first two let every member fail at once, rather than after the mesh's
 * timeout, when another failed on its own, and the last keeps members from leaving too early:
 *   1. a fixed record per member (whether it has a builder, its shape, its sizes), checked alike by
 *      every member;
 *   2. one byte per member saying whether it could allocate the gathered bytes;
 *   3. the bytes: per member its modality bytes, path offsets, paths and rows of each modality;
 *   4. member 0's receipt (a broadcast byte), before which no member returns.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "index/index.h"
#include "index/index_members.h"
#include "mesh/mesh.h"

/* Bytes member `record` sends in exchange 3: modality [count], offsets [count + 1] uint64, paths, rows. */
static size_t payload_bytes(const uint64_t *record) {
    size_t bytes = (size_t)record[UFORM__MEMBER_COUNT] + ((size_t)record[UFORM__MEMBER_COUNT] + 1) * sizeof(uint64_t) +
                   (size_t)record[UFORM__MEMBER_PATHS];
    for (int m = 0; m < 4; ++m) bytes += (size_t)record[UFORM__MEMBER_ROWS + m];
    return bytes;
}

void uform__index_member_record(uform_index_builder_t builder, uint64_t *record) {
    memset(record, 0, UFORM__MEMBER_WORDS * sizeof *record);
    if (!builder) return;
    uform__index_builder_view_t view;
    uform__index_builder_view(builder, &view);
    record[UFORM__MEMBER_HAS] = 1, record[UFORM__MEMBER_DIMS] = view.dims, record[UFORM__MEMBER_SCALAR] = (uint64_t)view.scalar;
    record[UFORM__MEMBER_COUNT] = view.count, record[UFORM__MEMBER_PATHS] = view.paths_bytes;
    for (int m = 0; m < 4; ++m) record[UFORM__MEMBER_ROWS + m] = view.rows_bytes[m];
    memcpy(&record[UFORM__MEMBER_FINGERPRINT], view.fingerprint, UFORM_FINGERPRINT_CAPACITY);
}

uform_status_t uform__index_members_check(const uint64_t *records, size_t members, const char *when, uform_outcome_t *outcome,
                                          const char *function) {
    for (size_t r = 0; r < members; ++r)
        if (!records[r * UFORM__MEMBER_WORDS + UFORM__MEMBER_HAS])
            return uform__fail(outcome, UFORM_PEER_LOST, function,
                               "member %zu of %zu failed before %s (its own message says why); no index is written", r,
                               members, when);
    for (size_t r = 1; r < members; ++r) {
        const uint64_t *first = records, *other = records + r * UFORM__MEMBER_WORDS;
        if (other[UFORM__MEMBER_DIMS] != first[UFORM__MEMBER_DIMS] || other[UFORM__MEMBER_SCALAR] != first[UFORM__MEMBER_SCALAR] ||
            memcmp(&other[UFORM__MEMBER_FINGERPRINT], &first[UFORM__MEMBER_FINGERPRINT], UFORM_FINGERPRINT_CAPACITY) != 0)
            return uform__fail(outcome, UFORM_CONFIG_MISMATCH, function,
                               "member %zu's builder holds %llu dims of %s (fingerprint %.32s), member 0's %llu dims of %s "
                               "(fingerprint %.32s): every member must build the same kind of index",
                               r, (unsigned long long)other[UFORM__MEMBER_DIMS],
                               uform__index_scalar_name((uform_scalar_kind_t)other[UFORM__MEMBER_SCALAR]),
                               (const char *)&other[UFORM__MEMBER_FINGERPRINT], (unsigned long long)first[UFORM__MEMBER_DIMS],
                               uform__index_scalar_name((uform_scalar_kind_t)first[UFORM__MEMBER_SCALAR]),
                               (const char *)&first[UFORM__MEMBER_FINGERPRINT]);
    }
    return UFORM_OK;
}

/* Lays this member's arrays end to end in the order payload_bytes counts them. */
static void pack(uform_index_builder_t builder, unsigned char *out) {
    uform__index_builder_view_t view;
    uform__index_builder_view(builder, &view);
    size_t offsets_bytes = (view.count + 1) * sizeof(uint64_t);
    if (view.count) memcpy(out, view.modality, view.count);
    out += view.count;
    memcpy(out, view.offsets, offsets_bytes);
    out += offsets_bytes;
    if (view.paths_bytes) memcpy(out, view.paths, view.paths_bytes);
    out += view.paths_bytes;
    for (int m = 0; m < 4; ++m) {
        if (view.rows_bytes[m]) memcpy(out, view.rows[m], view.rows_bytes[m]);
        out += view.rows_bytes[m];
    }
}

/* Appends one member's packed items to `into`, in their order: runs of one modality at a time.
 * `offsets` is scratch for count + 1 size_t. Answers 0 when out of memory. */
static int unpack(uform_index_builder_t into, const uint64_t *record, const unsigned char *packed, size_t row_bytes,
                  size_t *offsets) {
    size_t count = (size_t)record[UFORM__MEMBER_COUNT];
    const unsigned char *modality = packed, *raw_offsets = packed + count;
    const unsigned char *paths = raw_offsets + (count + 1) * sizeof(uint64_t);
    const unsigned char *rows[4];
    rows[0] = paths + record[UFORM__MEMBER_PATHS];
    for (int m = 1; m < 4; ++m) rows[m] = rows[m - 1] + record[UFORM__MEMBER_ROWS + m - 1];
    for (size_t i = 0; i <= count; ++i) {
        uint64_t offset;
        memcpy(&offset, raw_offsets + i * sizeof offset, sizeof offset);
        offsets[i] = (size_t)offset;
    }
    if (!uform__index_builder_reserve(into, UFORM_MODALITY_TEXT, 0, (size_t)record[UFORM__MEMBER_PATHS])) return 0;
    size_t next_row[4] = {0, 0, 0, 0};
    for (size_t first = 0; first < count;) {
        size_t end = first + 1;
        while (end < count && modality[end] == modality[first]) ++end;
        uform_modality_t m = (uform_modality_t)(modality[first] & 3);
        uform_tape_t run = {paths, offsets + first, end - first};
        if (!uform__index_builder_reserve(into, m, end - first, offsets[end] - offsets[first])) return 0;
        uform__index_builder_append(into, m, rows[m] + next_row[m] * row_bytes, row_bytes, &run);
        next_row[m] += end - first, first = end;
    }
    return 1;
}

UFORM_API uform_status_t uform_index_builder_gather(uform_index_builder_t builder, uform_mesh_t mesh,
                                                    uform_index_builder_t *gathered, uform_outcome_t *outcome) {
    const char *function = __func__;
    if (gathered) *gathered = NULL;
    if (!mesh || !gathered)
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s is NULL", !mesh ? "mesh" : "gathered");
    uform_status_t status = uform__mesh_acquire(mesh, outcome, function);
    if (status != UFORM_OK) return status;
    const size_t members = mesh->count, self = mesh->index;
    uint64_t *records = calloc(members, UFORM__MEMBER_WORDS * sizeof *records);
    size_t *sizes = calloc(members, sizeof *sizes), *ones = calloc(members, sizeof *ones), *offsets = NULL;
    unsigned char *mine = NULL, *all = NULL, *allocated = calloc(members, 1), ok = 0;
    uint64_t record[UFORM__MEMBER_WORDS];
    int held = records && sizes && ones && allocated;
    uform__index_member_record(held ? builder : NULL, record);
    if (!held) {
        /* This member cannot even take part: the others see it as a member that failed before the
         * gather only if it answers, and it has nothing to answer with, so they wait out the mesh's
         * timeout (the same as a member that died). */
        status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the gather's records for %zu members",
                             members);
        goto done;
    }
    for (size_t r = 0; r < members; ++r) sizes[r] = UFORM__MEMBER_WORDS * sizeof *records, ones[r] = 1;
    status = uform__mesh_allgather(mesh, record, records, sizes, "the members' index shapes", outcome, function);
    if (status == UFORM_OK) status = uform__index_members_check(records, members, "the gather", outcome, function);
    if (status != UFORM_OK) goto done;
    size_t total = 0, largest = 0;
    for (size_t r = 0; r < members; ++r) {
        sizes[r] = payload_bytes(records + r * UFORM__MEMBER_WORDS);
        total += sizes[r];
        if (records[r * UFORM__MEMBER_WORDS + UFORM__MEMBER_COUNT] > largest) largest = (size_t)records[r * UFORM__MEMBER_WORDS + UFORM__MEMBER_COUNT];
    }
    mine = malloc(sizes[self] ? sizes[self] : 1);
    all = malloc(total ? total : 1);
    offsets = malloc((largest + 1) * sizeof *offsets);
    ok = mine && all && offsets;
    status = uform__mesh_allgather(mesh, &ok, allocated, ones, "whether every member can hold the index", outcome, function);
    if (status != UFORM_OK) goto done;
    for (size_t r = 0; r < members; ++r)
        if (!allocated[r]) {
            status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function,
                                 "member %zu of %zu cannot allocate the %zu bytes of the gathered index", r, members, total);
            goto done;
        }
    pack(builder, mine);
    status = uform__mesh_allgather(mesh, mine, all, sizes, "the members' index rows", outcome, function);
    free(mine); /* its bytes are in `all` now: one copy fewer while the gathered builder grows */
    mine = NULL;
    /* A member that returned from the all-gather may exit while its last bytes are still on their
     * way; closing then lost them now and then (member 0 waited out the timeout for rows member 1
     * had sent). So the others wait for member 0's word that it holds every row. */
    unsigned char received = 1;
    if (status == UFORM_OK)
        status = uform__mesh_broadcast(mesh, &received, 1, 0, "member 0's receipt of the rows", outcome, function);
    if (status != UFORM_OK) goto done;
    uform__index_builder_view_t view;
    uform__index_builder_view(builder, &view);
    uform_index_builder_t made = NULL;
    status = uform__index_builder_make(view.dims, view.scalar, view.fingerprint, &made, outcome, function);
    const unsigned char *packed = all;
    for (size_t r = 0; r < members && status == UFORM_OK; ++r) {
        if (!unpack(made, records + r * UFORM__MEMBER_WORDS, packed, view.row_bytes, offsets))
            status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the gathered index (%zu bytes)", total);
        packed += sizes[r];
    }
    if (status == UFORM_OK) *gathered = made, status = uform__succeed(outcome, function);
    else uform_index_builder_free(made);
done:
    free(records), free(sizes), free(ones), free(offsets), free(mine), free(all), free(allocated);
    uform__mesh_release(mesh);
    return status;
}
