/*
 * One index file from the builders of a mesh's members, written by member 0 as the items stream in
 * (uform.h, uform_index_builder_write_members; docs/indexes.md, "Many members, one index"). The
 * file is the one uform_index_builder_gather and uform_index_builder_write make together, but no
 * member holds more than its own builder and two pieces of PIECE bytes (member 0 also the writer's
 * 8 MiB chunk).
 *
 * Exchanges, in the same order on every member:
 *   1. the members' records (index_members.h), checked alike by all;
 *   2. one byte per member saying whether it could allocate its pieces;
 *   3. the stream: the file's tensors in data order (uform__index_data_order), each as member 0's
 *      part, then member 1's, and so on, each part in pieces of at most PIECE bytes, a piece
 *      broadcast from the member that holds it (member 0's own parts are not sent). Every member
 *      knows every part's size from the records, so all make the same broadcasts. A part of the
 *      path offsets from member r > 0 leaves out its leading 0 and is shifted by the path bytes of
 *      the members before it, so the parts end to end are the whole index's offsets;
 *   4. rounds (uform__mesh_rounds_until_done) while member 0's writer flushes and renames;
 *   5. member 0's status and message, broadcast, before which no member returns.
 *
 * Member 0 runs the safetensors writer on a thread of its own, and hands it the pieces one at a
 * time (`handoff_t`): the writer's fill hook copies them into its chunks while this thread already
 * receives the next piece into the other buffer. Every exchange is made by the calling thread. A
 * writer that fails early stops taking pieces; the stream still runs to its end (the other members
 * are in it), its pieces dropped, and every member then answers member 0's failure.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "index/index.h"
#include "index/index_members.h"
#include "mesh/mesh.h"

/* The most bytes of one broadcast. */
#define PIECE ((size_t)1 << 20)

/* Member 0: one piece in flight from the stream to the writer's fill hook. */
typedef struct handoff_t {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    const unsigned char *piece; /* NULL: none waiting */
    size_t size, used;
    int ended;       /* no piece will come any more (the stream ended, or an exchange failed) */
    int writer_gone; /* the writer returned: pieces are dropped */
} handoff_t;

/* Member 0's writer thread. */
typedef struct writer_t {
    handoff_t handoff;
    const char *path;
    const uform__index_layout_t *layout;
    const char *const *metadata;
    size_t metadata_count;
    const char *function;
    uform_outcome_t outcome;
    uform_status_t status;
    uint32_t done; /* atomic: set when the write returned */
} writer_t;

/* The writer's fill hook: copies the next `bytes` of the stream, waiting for pieces. */
static int fill(void *state, size_t tensor, uint64_t offset, void *buffer, size_t bytes) {
    (void)tensor, (void)offset; /* the stream runs in the writer's order: see the file's comment */
    handoff_t *handoff = state;
    unsigned char *out = buffer;
    pthread_mutex_lock(&handoff->lock);
    while (bytes) {
        while (!handoff->piece && !handoff->ended) pthread_cond_wait(&handoff->changed, &handoff->lock);
        if (!handoff->piece) break; /* the stream ended early: an exchange failed */
        size_t take = handoff->size - handoff->used < bytes ? handoff->size - handoff->used : bytes;
        memcpy(out, handoff->piece + handoff->used, take);
        out += take, bytes -= take, handoff->used += take;
        if (handoff->used == handoff->size) handoff->piece = NULL, pthread_cond_broadcast(&handoff->changed);
    }
    pthread_mutex_unlock(&handoff->lock);
    return bytes != 0;
}

static void *writer_main(void *raw) {
    writer_t *writer = raw;
    writer->status = uform__index_write(writer->path, writer->layout, writer->metadata, writer->metadata_count, fill,
                                        &writer->handoff, &writer->outcome, writer->function);
    pthread_mutex_lock(&writer->handoff.lock);
    writer->handoff.writer_gone = 1;
    pthread_cond_broadcast(&writer->handoff.changed);
    pthread_mutex_unlock(&writer->handoff.lock);
    __atomic_store_n(&writer->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Hands one piece to the writer once it took the last (dropped when it is gone). */
static void deliver(handoff_t *handoff, const unsigned char *piece, size_t size) {
    pthread_mutex_lock(&handoff->lock);
    while (handoff->piece && !handoff->writer_gone) pthread_cond_wait(&handoff->changed, &handoff->lock);
    if (!handoff->writer_gone) {
        handoff->piece = piece, handoff->size = size, handoff->used = 0;
        pthread_cond_broadcast(&handoff->changed);
    }
    pthread_mutex_unlock(&handoff->lock);
}

/* Tells the writer no piece will come any more, and waits until it took the last. */
static void end_stream(handoff_t *handoff) {
    pthread_mutex_lock(&handoff->lock);
    while (handoff->piece && !handoff->writer_gone) pthread_cond_wait(&handoff->changed, &handoff->lock);
    handoff->ended = 1;
    pthread_cond_broadcast(&handoff->changed);
    pthread_mutex_unlock(&handoff->lock);
}

/* The stream's state on one member. */
typedef struct stream_t {
    uform_mesh_t mesh;
    size_t members, self;
    const uint64_t *records;     /* [members, UFORM__MEMBER_WORDS] */
    uform__index_builder_view_t view; /* this member's builder */
    unsigned char *buffers[2];   /* [PIECE] each: received pieces, or this member's shifted offsets */
    int next;                    /* which buffer the next received piece goes to */
    writer_t *writer;            /* member 0 with a running writer, else NULL */
    uform_outcome_t *outcome;
    const char *function;
} stream_t;

/* Bytes of member r's part of tensor t (0-6, as uform__index_layout_t's data). */
static size_t part_bytes(const uint64_t *record, size_t r, size_t t) {
    if (t < 4) return (size_t)record[UFORM__MEMBER_ROWS + t];
    size_t count = (size_t)record[UFORM__MEMBER_COUNT];
    if (t == UFORM__INDEX_MODALITY) return count;
    if (t == UFORM__INDEX_OFFSETS) return (r == 0 ? count + 1 : count) * sizeof(uint64_t);
    return (size_t)record[UFORM__MEMBER_PATHS];
}

/* This member's bytes [at, at + size) of its part of tensor t: in its builder, or (shifted path
 * offsets of a member after the first) made in `scratch`. */
static const unsigned char *own_piece(const stream_t *s, size_t t, size_t at, size_t size, unsigned char *scratch) {
    const uform__index_builder_view_t *v = &s->view;
    if (t < 4) return v->rows[t] + at;
    if (t == UFORM__INDEX_MODALITY) return v->modality + at;
    if (t == UFORM__INDEX_PATHS) return v->paths + at;
    if (s->self == 0) return v->offsets + at;
    uint64_t base = 0;
    for (size_t r = 0; r < s->self; ++r) base += s->records[r * UFORM__MEMBER_WORDS + UFORM__MEMBER_PATHS];
    for (size_t k = 0; k < size / sizeof(uint64_t); ++k) {
        uint64_t offset;
        memcpy(&offset, v->offsets + sizeof offset + at + k * sizeof offset, sizeof offset); /* past the leading 0 */
        offset += base;
        memcpy(scratch + k * sizeof offset, &offset, sizeof offset);
    }
    return scratch;
}

/* Exchange 3 (the file's comment): every part of every tensor, piece by piece. */
static uform_status_t run_stream(stream_t *s) {
    size_t order[UFORM__INDEX_TENSORS];
    uform__index_data_order((uform_scalar_kind_t)s->records[UFORM__MEMBER_SCALAR], order);
    for (size_t i = 0; i < UFORM__INDEX_TENSORS; ++i) {
        size_t t = order[i];
        for (size_t r = 0; r < s->members; ++r) {
            if (r == 0 && s->self != 0) continue; /* member 0's parts go to its writer alone */
            size_t bytes = part_bytes(s->records + r * UFORM__MEMBER_WORDS, r, t);
            for (size_t at = 0; at < bytes; at += PIECE) {
                size_t size = bytes - at < PIECE ? bytes - at : PIECE;
                unsigned char *buffer = s->buffers[s->next];
                const unsigned char *piece = buffer;
                if (r == s->self) {
                    piece = own_piece(s, t, at, size, buffer);
                    if (s->self != 0) {
                        uform_status_t status = uform__mesh_broadcast(s->mesh, (void *)piece, size, r, "the index's rows",
                                                                      s->outcome, s->function);
                        if (status != UFORM_OK) return status;
                        continue;
                    }
                } else {
                    uform_status_t status = uform__mesh_broadcast(s->mesh, buffer, size, r, "the index's rows", s->outcome,
                                                                  s->function);
                    if (status != UFORM_OK) return status;
                    s->next ^= 1; /* the writer may still read this one while the next arrives */
                }
                if (s->writer) deliver(&s->writer->handoff, piece, size);
            }
        }
    }
    return UFORM_OK;
}

/* Member 0's result as broadcast in exchange 5. */
typedef struct result_t {
    uint32_t status;
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
} result_t;

UFORM_API uform_status_t uform_index_builder_write_members(uform_index_builder_t builder, uform_mesh_t mesh, const char *path,
                                                           const char *const *metadata, size_t metadata_count,
                                                           uform_outcome_t *outcome) {
    const char *function = __func__;
    if (!mesh) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "mesh is NULL");
    uform_status_t status = uform__mesh_acquire(mesh, outcome, function);
    if (status != UFORM_OK) return status;
    const size_t members = mesh->count, self = mesh->index;
    uint64_t *records = calloc(members, UFORM__MEMBER_WORDS * sizeof *records);
    size_t *sizes = calloc(members, sizeof *sizes);
    unsigned char *flags = calloc(members, 1), ok = 0;
    stream_t stream = {mesh, members, self, records, .outcome = outcome, .function = function};
    writer_t *writer = NULL;
    pthread_t thread;
    int threaded = 0;
    uint64_t record[UFORM__MEMBER_WORDS];
    uform__index_member_record(records && sizes && flags ? builder : NULL, record);
    if (!records || !sizes || !flags) {
        /* As in the gather: a member that cannot answer leaves the others to the mesh's timeout. */
        status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the records of %zu members", members);
        goto done;
    }
    for (size_t r = 0; r < members; ++r) sizes[r] = UFORM__MEMBER_WORDS * sizeof *records;
    status = uform__mesh_allgather(mesh, record, records, sizes, "the members' index shapes", outcome, function);
    if (status == UFORM_OK) status = uform__index_members_check(records, members, "the gather", outcome, function);
    if (status != UFORM_OK) goto done;

    /* Exchange 2: this member's pieces (and member 0's writer state). */
    stream.buffers[0] = malloc(PIECE), stream.buffers[1] = malloc(PIECE);
    if (self == 0) writer = calloc(1, sizeof *writer);
    ok = stream.buffers[0] && stream.buffers[1] && (self != 0 || writer);
    for (size_t r = 0; r < members; ++r) sizes[r] = 1;
    status = uform__mesh_allgather(mesh, &ok, flags, sizes, "whether every member can stream its rows", outcome, function);
    for (size_t r = 0; status == UFORM_OK && r < members; ++r)
        if (!flags[r])
            status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "member %zu of %zu cannot allocate %zu bytes to stream its rows",
                                 r, members, 2 * PIECE);
    if (status != UFORM_OK) goto done;
    uform__index_builder_view(builder, &stream.view);

    /* Member 0's writer, over the whole index's shapes. */
    uform__index_layout_t layout = {stream.view.dims, stream.view.row_bytes, stream.view.scalar, stream.view.fingerprint};
    for (size_t r = 0; r < members; ++r) {
        const uint64_t *theirs = records + r * UFORM__MEMBER_WORDS;
        for (int m = 0; m < 4; ++m) layout.rows[m] += theirs[UFORM__MEMBER_ROWS + m] / stream.view.row_bytes;
        layout.count += theirs[UFORM__MEMBER_COUNT], layout.paths_bytes += theirs[UFORM__MEMBER_PATHS];
    }
    if (writer) {
        *writer = (writer_t){.path = path, .layout = &layout, .metadata = metadata, .metadata_count = metadata_count,
                             .function = function};
        pthread_mutex_init(&writer->handoff.lock, NULL);
        pthread_cond_init(&writer->handoff.changed, NULL);
        threaded = pthread_create(&thread, NULL, writer_main, writer) == 0;
        if (!threaded) {
            writer->status = uform__fail(&writer->outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the thread that writes %s",
                                         path ? path : "the index");
            writer->handoff.writer_gone = 1, writer->done = 1;
        }
        stream.writer = writer;
    }

    status = run_stream(&stream);
    if (writer) end_stream(&writer->handoff);
    /* Exchange 4: member 0's writer flushes and renames while the members answer rounds. */
    if (status == UFORM_OK)
        status = uform__mesh_rounds_until_done(mesh, writer ? &writer->done : NULL, flags, sizes, "whether the index is written",
                                               outcome, function);
    if (threaded) pthread_join(thread, NULL);
    if (status != UFORM_OK) goto done;

    /* Exchange 5: member 0's word. */
    result_t result = {0};
    if (writer) {
        result.status = (uint32_t)writer->status;
        if (writer->status != UFORM_OK) memcpy(result.message, writer->outcome.message, sizeof result.message);
    }
    status = uform__mesh_broadcast(mesh, &result, sizeof result, 0, "member 0's word on the index", outcome, function);
    if (status != UFORM_OK) goto done;
    result.message[sizeof result.message - 1] = 0;
    if (writer && writer->status != UFORM_OK) {
        uform__outcome_copy_text(outcome, &writer->outcome);
        status = uform__fail(outcome, writer->status, function, "%s", writer->outcome.message);
    } else if (result.status != UFORM_OK) {
        status = uform__fail(outcome, (uform_status_t)result.status, function, "member 0 of %zu could not write the index: %s",
                             members, result.message);
    } else {
        status = uform__succeed(outcome, function);
    }
done:
    if (writer) {
        if (writer->layout) pthread_mutex_destroy(&writer->handoff.lock), pthread_cond_destroy(&writer->handoff.changed);
        free(writer);
    }
    free(stream.buffers[0]), free(stream.buffers[1]);
    free(records), free(sizes), free(flags);
    uform__mesh_release(mesh);
    return status;
}
