/*
 * One approximate structure built by the members of a mesh (uform.h, uform_index_ann_build_members;
 * docs/indexes.md, "Many members, one index"). For IVF recipes the FAISS work is shared:
 *
 *   1. shapes: every member's block (its count, dims, scalar; member 0 also the whole index's)
 *      are all-gathered and checked alike everywhere, so a member that failed earlier, or a block
 *      that does not fit the index, fails every member at once;
 *   2. plan: member 0 makes the empty structure and broadcasts its recipe, whether its lists merge
 *      and the training sample's size;
 *   3. sample: every member walks the same selection sampling over the whole index's item numbers
 *      (ann.h, uform__ann_sampler_*) and widens the chosen items of its own block; the pieces are
 *      all-gathered in member order, which is the sample one process would draw, in its order;
 *   4. training: member 0 trains and broadcasts the trained, empty structure as FAISS's bytes;
 *   5. adding: every member adds its block to its copy under the items' numbers in the whole index
 *      (add_with_ids) and serialises it; the members' statuses are all-gathered, so one that failed
 *      fails every member with its message;
 *   6. merging: member r's bytes are broadcast from r, in member order, and member 0 merges each
 *      into its own with FAISS's merge_from, which appends list to list — so every list holds its
 *      items in item order, as one process's adds leave them;
 *   7. member 0 writes the file with the index's pairing record and broadcasts its status.
 *
 * With on-disk lists (options->ondisk, ann_ondisk.h), steps 5 and 6 go in rounds instead
 * (stream_parts): in round b every member adds its b-th batch of ADD_ROWS rows; member 0 writes its
 * batch's lists out to its runs, every other member packs its batch's lists into a buffer (the
 * runs' layout) and broadcasts it, in member order, and member 0 appends it to its runs. The number
 * of rounds is the largest block's number of batches, known to every member from step 1's shapes;
 * a member whose block has no such batch sends nothing that round. Member 0 lays the runs out by
 * their first items (item order) as X.ivfdata before the .faiss is written: the same lists in the
 * same order, so the same files for any K. Every member holds one batch's lists at a time (and the
 * batch of the member now broadcasting), whatever the size of its block.
 *
 * Recipes whose lists do not merge (HNSW graphs, refined or fast-scan IVFs, flat PQ) are built by
 * member 0 alone from the whole index, as uform_index_ann_build does; the others wait for step 7.
 *
 * The mesh offers all-gathers and broadcasts only (no gather to one member), so the sample and each
 * member's serialised lists (or, on disk, each batch of them) pass through every member's memory on
 * the way to member 0.
 *
 * Long work (training, adding, writing, a graph built alone) runs on a thread of its own while the
 * calling thread all-gathers one byte per member every 100 ms saying whether its work is done
 * (wait_for): every exchange then waits at most 100 ms for a live member, so the mesh's timeout
 * bounds how long a dead one goes unnoticed, not how long the work may take.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h> /* malloc_trim */
#endif

#include "core/outcome.h"
#include "index/ann.h"
#include "index/ann_ondisk.h"
#include "index/ann_write.h"
#include "mesh/mesh.h"

/* Rows widened to F32 per call to FAISS's add (as ann_build.c). */
#define ADD_ROWS 65536

/* Step 1's record, all uint64 so it has the same layout on every member. */
enum { SHAPE_OK, SHAPE_COUNT, SHAPE_DIMS, SHAPE_SCALAR, SHAPE_INDEX_COUNT, SHAPE_INDEX_DIMS, SHAPE_INDEX_SCALAR, SHAPE_WORDS };

/* A status as it travels between members: steps 2, 4, 5 and 7. */
typedef struct said_t {
    uint64_t status;   /* uform_status_t */
    uint64_t value;    /* a size the step announces (bytes, rows, or whether the lists merge) */
    uint64_t extra;    /* a second one (the training rows) */
    char text[UFORM__ANN_RECIPE_CAPACITY]; /* the recipe (step 2) */
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY / 2];
} said_t;

typedef struct members_t {
    uform_mesh_t mesh;
    uform_outcome_t *outcome;
    const char *function;
    const uform__faiss_api_t *api;
    size_t self, count;
    size_t *sizes;        /* [count] scratch for all-gathers' sizes */
    said_t *saids;        /* [count] what every member said */
    unsigned char *bytes; /* [count] one byte from each member */
} members_t;

static void say(said_t *said, uform_status_t status, const uform_outcome_t *outcome) {
    said->status = (uint64_t)status;
    if (status == UFORM_OK) return;
    /* The receiver's message names the member and the step around it, so the text is cut to fit. */
    size_t length = strnlen(outcome->message, sizeof said->message - 1);
    memcpy(said->message, outcome->message, length);
    said->message[length] = 0;
}

/* All-gathers every member's `mine` into m->saids; answers the first failure (that member's message
 * in this member's outcome, for the step `what`), or UFORM_OK. */
static uform_status_t agree(members_t *m, said_t *mine, const char *what) {
    said_t *saids = m->saids;
    for (size_t r = 0; r < m->count; ++r) m->sizes[r] = sizeof *saids;
    uform_status_t status = uform__mesh_allgather(m->mesh, mine, saids, m->sizes, what, m->outcome, m->function);
    if (status != UFORM_OK) return status;
    for (size_t r = 0; r < m->count; ++r)
        if (saids[r].status != UFORM_OK) {
            if (r == m->self) return (uform_status_t)saids[r].status; /* this member's outcome says why */
            return uform__fail(m->outcome, (uform_status_t)saids[r].status, m->function, "member %zu of %zu failed %s: %s",
                               r, m->count, what, saids[r].message);
        }
    return UFORM_OK;
}

/* Broadcasts member 0's `said`; a failure there fails the others with member 0's message. */
static uform_status_t hear(members_t *m, said_t *said, const char *what) {
    uform_status_t status = uform__mesh_broadcast(m->mesh, said, sizeof *said, 0, what, m->outcome, m->function);
    if (status != UFORM_OK) return status;
    if (said->status == UFORM_OK) return UFORM_OK;
    if (m->self == 0) return (uform_status_t)said->status;
    return uform__fail(m->outcome, (uform_status_t)said->status, m->function, "member 0 of %zu failed %s: %s", m->count,
                       what, said->message);
}

/* Walks a builder's items in order, keeping each modality's next row. */
typedef struct walker_t {
    uform__index_builder_view_t view;
    size_t item, row[4];
} walker_t;

/* Widens item `item` (≥ the last one asked for) of the builder into `out`. */
static void walk_to(walker_t *walker, size_t item, float *out) {
    for (; walker->item < item; ++walker->item) walker->row[walker->view.modality[walker->item] & 3] += 1;
    int modality = walker->view.modality[item] & 3;
    uform__ann_widen(walker->view.scalar, walker->view.dims,
                     walker->view.rows[modality] + walker->row[modality] * walker->view.row_bytes, out);
}

/* FAISS's bytes into a growing buffer. */
typedef struct buffer_t {
    unsigned char *bytes;
    size_t size, capacity;
} buffer_t;

static int buffer_write(void *state, const void *bytes, size_t size) {
    buffer_t *buffer = state;
    if (!size) return 0;
    if (size > buffer->capacity - buffer->size) {
        size_t capacity = buffer->capacity ? buffer->capacity : 4096;
        while (capacity - buffer->size < size) {
            if (capacity > SIZE_MAX / 2) return 12; /* ENOMEM */
            capacity *= 2;
        }
        unsigned char *grown = realloc(buffer->bytes, capacity);
        if (!grown) return 12; /* ENOMEM */
        buffer->bytes = grown, buffer->capacity = capacity;
    }
    memcpy(buffer->bytes + buffer->size, bytes, size);
    buffer->size += size;
    return 0;
}

static uform_status_t serialize(members_t *m, const uform__faiss_t *faiss, buffer_t *buffer, const char *what) {
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY - 96];
    int error = 0;
    uform_status_t status = m->api->serialize(faiss, buffer_write, buffer, &error, message, sizeof message);
    if (status == UFORM_IO)
        return uform__fail(m->outcome, UFORM_OUT_OF_MEMORY, m->function, "cannot hold %s in memory (%zu bytes so far)", what,
                           buffer->size);
    if (status != UFORM_OK)
        return uform__fail(m->outcome, status, m->function, "FAISS could not serialise %s: %s", what, message);
    return UFORM_OK;
}

static uform_status_t deserialize(members_t *m, const void *bytes, size_t size, uform__faiss_t **faiss, const char *what) {
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY - 96];
    uform_status_t status = m->api->deserialize(bytes, size, NULL, 0, faiss, message, sizeof message);
    if (status != UFORM_OK) return uform__fail(m->outcome, status, m->function, "FAISS could not read %s: %s", what, message);
    return UFORM_OK;
}

/* Step 1's checks, the same on every member from the same records: each must hold a block, of the
 * index's dims and scalar, and the blocks together must be the index's items. */
static uform_status_t check_shapes(members_t *m, const uint64_t *shapes, size_t *first) {
    for (size_t r = 0; r < m->count; ++r)
        if (!shapes[r * SHAPE_WORDS + SHAPE_OK])
            return uform__fail(m->outcome, UFORM_PEER_LOST, m->function,
                               "member %zu of %zu failed before the approximate structure was built (its own message says "
                               "why); no structure is written", r, m->count);
    const uint64_t *lead = shapes;
    uint64_t total = 0;
    for (size_t r = 0; r < m->count; ++r) {
        const uint64_t *shape = shapes + r * SHAPE_WORDS;
        if (r == m->self) *first = (size_t)total;
        total += shape[SHAPE_COUNT];
        if (shape[SHAPE_COUNT] && (shape[SHAPE_DIMS] != lead[SHAPE_INDEX_DIMS] || shape[SHAPE_SCALAR] != lead[SHAPE_INDEX_SCALAR]))
            return uform__fail(m->outcome, UFORM_CONFIG_MISMATCH, m->function,
                               "member %zu's rows have %llu dims of %s, the index %llu dims of %s", r,
                               (unsigned long long)shape[SHAPE_DIMS],
                               uform__index_scalar_name((uform_scalar_kind_t)shape[SHAPE_SCALAR]),
                               (unsigned long long)lead[SHAPE_INDEX_DIMS],
                               uform__index_scalar_name((uform_scalar_kind_t)lead[SHAPE_INDEX_SCALAR]));
    }
    if (total != lead[SHAPE_INDEX_COUNT])
        return uform__fail(m->outcome, UFORM_CONFIG_MISMATCH, m->function,
                           "the members' blocks hold %llu items together, the index %llu: each member must pass its "
                           "contiguous block of the index's items", (unsigned long long)total,
                           (unsigned long long)lead[SHAPE_INDEX_COUNT]);
    if (lead[SHAPE_INDEX_SCALAR] == UFORM_SCALAR_B1)
        return uform__fail(m->outcome, UFORM_UNSUPPORTED, m->function,
                           "the index holds b1 rows: approximate structures are built over f32, f16, bf16 or i8 indexes");
    if (total == 0) return uform__fail(m->outcome, UFORM_INVALID_ARGUMENT, m->function, "the index holds no items");
    return UFORM_OK;
}

/* All-gathers one byte per member saying whether it could allocate `what`; a member that could not
 * fails every member, naming it. */
static uform_status_t can_hold(members_t *m, int ok, const char *what) {
    unsigned char mine = ok ? 1 : 0;
    for (size_t r = 0; r < m->count; ++r) m->sizes[r] = 1;
    uform_status_t status =
        uform__mesh_allgather(m->mesh, &mine, m->bytes, m->sizes, "whether every member can allocate its buffers", m->outcome, m->function);
    if (status != UFORM_OK) return status;
    for (size_t r = 0; r < m->count; ++r)
        if (!m->bytes[r])
            return uform__fail(m->outcome, UFORM_OUT_OF_MEMORY, m->function, "member %zu of %zu cannot allocate %s", r, m->count,
                               what);
    return UFORM_OK;
}

/* Step 3: the training sample [train_rows, dims] on every member, in item order: each member widens
 * the sampled items of its own block and the pieces are all-gathered in member order. */
static uform_status_t gather_sample(members_t *m, uform_index_builder_t own, const uint64_t *shapes, size_t total,
                                    size_t dims, size_t train_rows, float **sample) {
    *sample = NULL;
    size_t *counts = calloc(m->count, sizeof *counts);
    float *mine = NULL;
    if (counts) {
        /* How many sampled items fall in each member's block: the same walk on every member. */
        uform__ann_sampler_t sampler;
        uform__ann_sampler_start(&sampler, total, train_rows);
        size_t r = 0, end = (size_t)shapes[SHAPE_COUNT];
        for (size_t item; (item = uform__ann_sampler_next(&sampler)) != SIZE_MAX; counts[r] += 1)
            while (item >= end) end += (size_t)shapes[++r * SHAPE_WORDS + SHAPE_COUNT];
        *sample = malloc(train_rows * dims * sizeof(float));
        mine = malloc(counts[m->self] ? counts[m->self] * dims * sizeof(float) : 1);
    }
    uform_status_t status = can_hold(m, counts && *sample && mine, "the training sample");
    if (status == UFORM_OK) {
        size_t first = 0;
        for (size_t r = 0; r < m->self; ++r) first += (size_t)shapes[r * SHAPE_WORDS + SHAPE_COUNT];
        size_t end = first + (size_t)shapes[m->self * SHAPE_WORDS + SHAPE_COUNT], taken = 0;
        walker_t walker = {0};
        uform__index_builder_view(own, &walker.view);
        uform__ann_sampler_t sampler;
        uform__ann_sampler_start(&sampler, total, train_rows);
        for (size_t item; (item = uform__ann_sampler_next(&sampler)) != SIZE_MAX && item < end;)
            if (item >= first) walk_to(&walker, item - first, mine + dims * taken++);
        for (size_t r = 0; r < m->count; ++r) m->sizes[r] = counts[r] * dims * sizeof(float);
        status = uform__mesh_allgather(m->mesh, mine, *sample, m->sizes, "the training sample", m->outcome, m->function);
    }
    free(counts), free(mine);
    if (status != UFORM_OK) free(*sample), *sample = NULL;
    return status;
}

/* Step 5 on this member (lists in memory): its block added to `faiss` under the items' numbers,
 * then serialised (members other than 0). */
/* Rows done..done + n - 1 of the walker's block widened into `rows` [n, dims] and added to `faiss`
 * under the items' numbers (first + done …): one batch of step 5. */
static uform_status_t add_batch(members_t *m, uform__faiss_t *faiss, walker_t *walker, float *rows, size_t done, size_t n,
                                size_t first, size_t threads) {
    const size_t dims = walker->view.dims;
    for (size_t k = 0; k < n; ++k) walk_to(walker, done + k, rows + k * dims);
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY - 96];
    uform_status_t status = m->api->add_numbered(faiss, n, rows, (uint64_t)(first + done), threads, message, sizeof message);
    if (status != UFORM_OK)
        return uform__fail(m->outcome, status, m->function, "FAISS could not add items %zu..%zu: %s", first + done,
                           first + done + n - 1, message);
    return UFORM_OK;
}

static uform_status_t add_block(members_t *m, uform__faiss_t *faiss, uform_index_builder_t own, size_t first,
                                size_t threads, buffer_t *lists) {
    walker_t walker = {0};
    uform__index_builder_view(own, &walker.view);
    size_t count = walker.view.count, dims = walker.view.dims;
    size_t chunk = count < ADD_ROWS ? count : ADD_ROWS;
    float *rows = malloc((chunk ? chunk : 1) * dims * sizeof(float));
    if (!rows) return uform__fail(m->outcome, UFORM_OUT_OF_MEMORY, m->function, "cannot allocate %zu rows widened to f32", chunk);
    uform_status_t status = UFORM_OK;
    for (size_t done = 0; done < count && status == UFORM_OK; done += chunk)
        status = add_batch(m, faiss, &walker, rows, done, count - done < chunk ? count - done : chunk, first, threads);
    free(rows);
    if (status == UFORM_OK && m->self != 0) status = serialize(m, faiss, lists, "this member's inverted lists");
    return status;
}

/* Step 6: member r's lists broadcast from r in member order; member 0 merges each into `faiss`.
 * Every member takes part in every broadcast (each holds a buffer of the largest part), also after
 * member 0's merge failed, so the exchanges stay in step; member 0 then reports the failure. */
static uform_status_t merge_parts(members_t *m, uform__faiss_t *faiss, buffer_t *lists, const said_t *sizes, said_t *result) {
    size_t largest = 0;
    for (size_t r = 1; r < m->count; ++r)
        if (sizes[r].value > largest) largest = (size_t)sizes[r].value;
    unsigned char *part = malloc(largest ? largest : 1);
    uform_status_t status = can_hold(m, part != NULL, "a buffer for the members' inverted lists");
    uform_outcome_t local = {0};
    for (size_t r = 1; r < m->count && status == UFORM_OK; ++r) {
        unsigned char *bytes = r == m->self ? lists->bytes : part;
        status = uform__mesh_broadcast(m->mesh, bytes, (size_t)sizes[r].value, r, "a member's inverted lists", m->outcome,
                                       m->function);
        if (status != UFORM_OK || m->self != 0 || result->status != UFORM_OK) continue;
        uform__faiss_t *other = NULL;
        members_t quiet = *m;
        quiet.outcome = &local;
        uform_status_t merged = deserialize(&quiet, bytes, (size_t)sizes[r].value, &other, "a member's inverted lists");
        if (merged == UFORM_OK) {
            char message[UFORM_OUTCOME_MESSAGE_CAPACITY - 96];
            merged = m->api->merge(faiss, other, message, sizeof message);
            if (merged != UFORM_OK) uform__fail(&local, merged, m->function, "FAISS could not merge member %zu's lists: %s", r, message);
        }
        m->api->free(other);
        if (merged != UFORM_OK) say(result, merged, &local);
    }
    free(part);
    return status;
}

/* Work one member does while the others wait (wait_for): `run` on a thread of its own, with a
 * copy of the members' context whose outcome is the job's. */
typedef struct job_t job_t;
struct job_t {
    uform_status_t (*run)(job_t *job);
    members_t m;
    uform_outcome_t outcome;
    uform_status_t status;
    uint32_t done; /* atomic */
    /* what the steps' jobs read and write */
    uform_index_t index;
    uform_index_builder_t own;
    uform__faiss_t *faiss;
    const float *sample;
    const unsigned char *bytes;
    size_t rows, first, threads;
    const char *recipe, *path;
    buffer_t *lists;
    const uform_index_ann_options_t *options;
    uform__ann_record_t *record;
    uform__ann_ondisk_t *ondisk; /* member 0 with on-disk lists, else NULL */
    /* on-disk lists' rounds (batch_job) */
    size_t batch;          /* the round: this member's batch of ADD_ROWS rows */
    walker_t walker;       /* over `own`, from round to round */
    float *widened;        /* [ADD_ROWS, dims] a batch widened to F32 */
    uint64_t *list_sizes;  /* [lists] scratch for packing */
    size_t list_count;     /* the structure's lists */
};

static void *job_thread(void *raw) {
    job_t *job = raw;
    job->status = job->run(job);
    __atomic_store_n(&job->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Runs `job` (NULL when this member has nothing to do) while answering the mesh's rounds
 * (uform__mesh_rounds_until_done) until every member's work is done. Answers the mesh's status
 * (UFORM_OK, or the failed exchange);
 * the job's own status is job->status, its failure copied into m->outcome. Without a thread (none
 * could be started) the job runs here first and the rounds follow. */
static uform_status_t wait_for(members_t *m, job_t *job) {
    pthread_t thread;
    int threaded = 0;
    if (job) {
        job->m = *m, job->m.outcome = &job->outcome;
        memset(&job->outcome, 0, sizeof job->outcome);
        job->status = UFORM_OK, job->done = 0;
        threaded = pthread_create(&thread, NULL, job_thread, job) == 0;
        if (!threaded) job_thread(job);
    }
    uform_status_t status = uform__mesh_rounds_until_done(m->mesh, job ? &job->done : NULL, m->bytes, m->sizes,
                                                          "whether every member's work is done", m->outcome, m->function);
    /* The work goes on to its end even when the mesh broke: it holds FAISS's structures. */
    if (threaded) pthread_join(thread, NULL);
    if (job && job->status != UFORM_OK && status == UFORM_OK)
        uform__fail(m->outcome, job->status, m->function, "%s", job->outcome.message);
    return status;
}

/* Step 4 on member 0: train on the gathered sample, then serialise the trained, empty structure. */
static uform_status_t train_job(job_t *job) {
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY - 96];
    uform_status_t status = job->m.api->train(job->faiss, job->rows, job->sample, job->threads, message, sizeof message);
    if (status != UFORM_OK)
        return uform__fail(job->m.outcome, status, job->m.function, "FAISS could not train '%s' on %zu rows: %s", job->recipe,
                           job->rows, message);
    return serialize(&job->m, job->faiss, job->lists, "the trained structure");
}

/* Step 5 on every member: read the trained bytes (members other than 0), add the block. */
static uform_status_t add_job(job_t *job) {
    uform_status_t status = UFORM_OK;
    if (!job->faiss) status = deserialize(&job->m, job->bytes, job->rows, &job->faiss, "the trained structure");
    if (status == UFORM_OK) status = add_block(&job->m, job->faiss, job->own, job->first, job->threads, job->lists);
    return status;
}

/* Steps 5 and 6 with on-disk lists, one round on one member: its batch `job->batch` added under the
 * items' numbers; member 0 moves the batch's lists to its runs, the others pack them into
 * job->lists to be sent (an empty buffer when the block has no such batch). The first round also
 * reads the trained bytes (members other than 0) or starts the runs (member 0). */
static uform_status_t batch_job(job_t *job) {
    members_t *m = &job->m;
    uform_status_t status = UFORM_OK;
    job->lists->size = 0;
    if (job->batch == 0) {
        if (!job->faiss) status = deserialize(m, job->bytes, job->rows, &job->faiss, "the trained structure");
        if (status == UFORM_OK) {
            uform__faiss_facts_t facts;
            m->api->describe(job->faiss, &facts);
            job->list_count = (size_t)facts.lists;
            uform__index_builder_view(job->own, &job->walker.view);
            size_t count = job->walker.view.count, chunk = count < ADD_ROWS ? count : ADD_ROWS;
            job->list_sizes = calloc(job->list_count ? job->list_count : 1, sizeof *job->list_sizes);
            job->widened = malloc((chunk ? chunk : 1) * job->walker.view.dims * sizeof(float));
            if (!job->list_sizes || !job->widened)
                status = uform__fail(m->outcome, UFORM_OUT_OF_MEMORY, m->function,
                                     "cannot allocate %zu rows widened to f32 and %zu lists' sizes", chunk, job->list_count);
        }
        if (status == UFORM_OK && job->ondisk)
            status = uform__ann_ondisk_start(job->ondisk, m->api, job->faiss, job->path, m->outcome, m->function);
    }
    size_t count = job->walker.view.count, done = job->batch * (size_t)ADD_ROWS;
    if (status != UFORM_OK || done >= count) return status;
    size_t n = count - done < ADD_ROWS ? count - done : ADD_ROWS, first = job->first + done;
    status = add_batch(m, job->faiss, &job->walker, job->widened, done, n, job->first, job->threads);
    if (status != UFORM_OK) return status;
    /* The block's last batch: its widened rows are not needed while the other members finish. */
    if (done + n == count) free(job->widened), job->widened = NULL;
    if (job->ondisk) return uform__ann_ondisk_take(job->ondisk, job->faiss, job->faiss, (uint64_t)first, m->outcome, m->function);
    return uform__ann_ondisk_pack(m->api, job->faiss, job->list_count, job->list_sizes, buffer_write, job->lists, m->outcome,
                                  m->function);
}

/* Steps 5 and 6 with on-disk lists: as many rounds as the largest block has batches of ADD_ROWS
 * rows (the same count on every member, from the shapes). In round b every member adds its batch b
 * (batch_job); the statuses and the packed sizes are all-gathered; then each member r > 0 with a
 * batch broadcasts it, in member order, and member 0 appends it to its runs as the run of its
 * first item. So a member holds one batch's lists at a time (and one other member's batch on the
 * way to member 0), whatever its block's size; the runs are put in item order when laid out. A
 * failure of member 0's append goes into `result` and reaches the others at the next round's
 * all-gather, or at step 7 after the last round. *faiss follows the job's structure. */
static uform_status_t stream_parts(members_t *m, job_t *job, const uint64_t *shapes, said_t *result, uform__faiss_t **faiss) {
    uint64_t *firsts = calloc(m->count, sizeof *firsts), *sizes = calloc(m->count, sizeof *sizes);
    unsigned char *part = NULL;
    size_t part_capacity = 0, rounds = 0;
    uform_status_t status = can_hold(m, firsts && sizes, "the records of the members' batches");
    for (size_t r = 0, at = 0; r < m->count && status == UFORM_OK; ++r) {
        size_t block = (size_t)shapes[r * SHAPE_WORDS + SHAPE_COUNT], batches = block / ADD_ROWS + (block % ADD_ROWS != 0);
        firsts[r] = at, at += block;
        if (batches > rounds) rounds = batches;
    }
    for (size_t b = 0; b < rounds && status == UFORM_OK; ++b) {
        job->batch = b;
        status = wait_for(m, job);
        *faiss = job->faiss;
        if (status != UFORM_OK) break;
        said_t said;
        memset(&said, 0, sizeof said);
        if (job->status == UFORM_OK && result->status != UFORM_OK) {
            /* Member 0's append failed in the last round: its message, as its own failure. */
            uform__fail(m->outcome, (uform_status_t)result->status, m->function, "%s", result->message);
            said = *result;
        } else {
            say(&said, job->status, m->outcome);
        }
        said.value = job->lists->size;
        if ((status = agree(m, &said, "while adding its rows")) != UFORM_OK) break;
        size_t largest = 0;
        for (size_t r = 1; r < m->count; ++r) {
            sizes[r] = m->saids[r].value;
            if (r != m->self && sizes[r] > largest) largest = (size_t)sizes[r];
        }
        if (largest > part_capacity) {
            unsigned char *grown = realloc(part, largest);
            if (grown) part = grown, part_capacity = largest;
        }
        status = can_hold(m, largest <= part_capacity, "a buffer for a batch of a member's inverted lists");
        for (size_t r = 1; r < m->count && status == UFORM_OK; ++r) {
            if (!sizes[r]) continue;
            unsigned char *bytes = r == m->self ? job->lists->bytes : part;
            status = uform__mesh_broadcast(m->mesh, bytes, (size_t)sizes[r], r, "a batch of a member's inverted lists", m->outcome,
                                           m->function);
            if (status != UFORM_OK || m->self != 0 || result->status != UFORM_OK) continue;
            uform_outcome_t local = {0};
            uform_status_t taken = uform__ann_ondisk_append(job->ondisk, *faiss, bytes, (size_t)sizes[r],
                                                            firsts[r] + (uint64_t)b * ADD_ROWS, &local, m->function);
            if (taken != UFORM_OK) say(result, taken, &local);
        }
    }
    free(firsts), free(sizes), free(part);
#ifdef __GLIBC__
    /* The batches' buffers were freed into glibc's heap, which keeps them (its mmap threshold rises
     * after each large free); the write that follows maps and hashes the whole index, so they are
     * handed back first (measured: member 0's peak during the build 157 → 127 MiB at 400,000 × 64,
     * IVF256,Flat, two members; bench/README.md). */
    malloc_trim(0);
#endif
    return status;
}

/* Step 7 on member 0: the file, with the whole index's pairing record. */
static uform_status_t write_job(job_t *job) {
    uform__ann_identity_of(job->index, &job->record->identity);
    if (!job->ondisk) return uform__ann_write(job->m.api, job->faiss, job->path, job->record, NULL, job->m.outcome, job->m.function);
    uform_status_t status = uform__ann_ondisk_finish(job->ondisk, job->faiss, job->record, job->m.outcome, job->m.function);
    uform__ann_before_rename_t lists_first = {uform__ann_ondisk_commit, job->ondisk};
    if (status == UFORM_OK)
        status = uform__ann_write(job->m.api, job->faiss, job->path, job->record, &lists_first, job->m.outcome, job->m.function);
    return status;
}

/* Recipes whose lists do not merge, on member 0: built from the whole index as one process does. */
static uform_status_t alone_job(job_t *job) {
    uform_index_ann_options_t alone = *job->options;
    alone.recipe = job->recipe;
    return uform_index_ann_build(job->index, job->path, &alone, job->m.outcome);
}

UFORM_API uform_status_t uform_index_ann_build_members(uform_index_t index, uform_index_builder_t own, uform_mesh_t mesh,
                                                       const char *path, const uform_index_ann_options_t *options,
                                                       uform_outcome_t *outcome) {
    const char *function = __func__;
    uform_index_ann_options_t defaults = {0};
    uform_outcome_t ignored = {0};
    if (!options) options = &defaults;
    if (!outcome) outcome = &ignored; /* the members' messages travel through it */
    if (!mesh) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "mesh is NULL");
    uform_status_t status = uform__mesh_acquire(mesh, outcome, function);
    if (status != UFORM_OK) return status;
    members_t m = {mesh, outcome, function, NULL, mesh->index, mesh->count, NULL, NULL, NULL};
    m.sizes = calloc(m.count, sizeof *m.sizes), m.saids = calloc(m.count, sizeof *m.saids), m.bytes = calloc(m.count, 1);
    uint64_t *shapes = calloc(m.count, SHAPE_WORDS * sizeof *shapes);
    uform__faiss_t *faiss = NULL;
    float *sample = NULL;
    buffer_t lists = {0};
    said_t said;
    memset(&said, 0, sizeof said);
    job_t job;
    memset(&job, 0, sizeof job);
    uform__ann_ondisk_t ondisk = {0};
    if (!m.sizes || !m.saids || !m.bytes || !shapes) {
        /* Without its records this member cannot answer: the others wait out the mesh's timeout. */
        status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the records of %zu members", m.count);
        goto done;
    }

    /* 1. shapes. A member without its block (its own work failed, or member 0 without the index)
     * still takes part, so the others stop at once. */
    uint64_t shape[SHAPE_WORDS] = {0};
    uform_outcome_t local = {0};
    int ready = own && (m.self != 0 || index) && (m.self != 0 || path);
    if (ready && uform__faiss_load(&m.api, &local, function) != UFORM_OK) {
        status = uform__fail(outcome, (uform_status_t)local.status, function, "%s", local.message);
        ready = 0;
    } else if (!ready) {
        status = uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "%s is NULL on member %zu", !own ? "own" : !index ? "index" : "path",
                             m.self);
    }
    if (ready) {
        uform__index_builder_view_t view;
        uform__index_builder_view(own, &view);
        shape[SHAPE_OK] = 1, shape[SHAPE_COUNT] = view.count, shape[SHAPE_DIMS] = view.dims, shape[SHAPE_SCALAR] = view.scalar;
        if (m.self == 0)
            shape[SHAPE_INDEX_COUNT] = index->count, shape[SHAPE_INDEX_DIMS] = index->dims, shape[SHAPE_INDEX_SCALAR] = index->scalar;
    }
    for (size_t r = 0; r < m.count; ++r) m.sizes[r] = sizeof shape;
    uform_status_t exchanged = uform__mesh_allgather(mesh, shape, shapes, m.sizes, "the members' blocks", ready ? outcome : &local, function);
    if (!ready) goto done;
    status = exchanged;
    size_t first = 0;
    if (status == UFORM_OK) status = check_shapes(&m, shapes, &first);
    if (status != UFORM_OK) goto done;
    size_t total = (size_t)shapes[SHAPE_INDEX_COUNT], dims = (size_t)shapes[SHAPE_INDEX_DIMS];

    /* 2. plan: member 0 makes the empty structure; its recipe, kind and sample size for everyone. */
    if (m.self == 0) {
        size_t train_rows = 0;
        uform_status_t made = uform__ann_prepare(m.api, total, dims, options, said.text, &faiss, &train_rows, outcome, function);
        say(&said, made, outcome);
        if (made == UFORM_OK) {
            uform__faiss_facts_t facts;
            m.api->describe(faiss, &facts);
            /* Bit 0: the lists merge; bit 1: they go to disk, streamed in rounds (stream_parts). */
            said.value = (uint64_t)(facts.mergeable ? 1 | (options->ondisk ? 2 : 0) : 0), said.extra = train_rows;
        }
    }
    if ((status = hear(&m, &said, "to make the structure")) != UFORM_OK) goto done;
    size_t train_rows = (size_t)said.extra;
    int streamed = (said.value & 2) != 0;
    char recipe[UFORM__ANN_RECIPE_CAPACITY];
    memcpy(recipe, said.text, sizeof recipe);
    recipe[sizeof recipe - 1] = 0;
    job.recipe = recipe, job.path = path, job.index = index, job.options = options, job.threads = options->threads;

    if (!(said.value & 1)) {
        /* Not mergeable: member 0 builds it from the whole index, as one process does. */
        if (m.self == 0) m.api->free(faiss), faiss = NULL, job.run = alone_job;
        if ((status = wait_for(&m, m.self == 0 ? &job : NULL)) != UFORM_OK) goto done;
        memset(&said, 0, sizeof said);
        if (m.self == 0) say(&said, job.status, outcome);
        status = hear(&m, &said, "to build the structure");
        goto done;
    }

    /* 3. the sample, 4. the training on member 0 and its bytes for everyone. */
    if (train_rows && (status = gather_sample(&m, own, shapes, total, dims, train_rows, &sample)) != UFORM_OK) goto done;
    if (!train_rows) {
        /* A structure that needs no training (its quantiser came trained) travels as it is. */
        if (m.self == 0) say(&said, serialize(&m, faiss, &lists, "the empty structure"), outcome);
    } else {
        if (m.self == 0) job.run = train_job, job.faiss = faiss, job.sample = sample, job.rows = train_rows, job.lists = &lists;
        if ((status = wait_for(&m, m.self == 0 ? &job : NULL)) != UFORM_OK) goto done;
        memset(&said, 0, sizeof said);
        if (m.self == 0) say(&said, job.status, outcome);
    }
    said.value = lists.size;
    free(sample), sample = NULL;
    if ((status = hear(&m, &said, "to train the structure")) != UFORM_OK) goto done;
    size_t trained_bytes = (size_t)said.value;
    if (m.self != 0) {
        lists.bytes = malloc(trained_bytes ? trained_bytes : 1), lists.capacity = trained_bytes, lists.size = trained_bytes;
        if (!lists.bytes) lists.capacity = lists.size = 0;
    }
    if ((status = can_hold(&m, lists.bytes != NULL, "the trained structure")) != UFORM_OK) goto done;
    status = uform__mesh_broadcast(mesh, lists.bytes, trained_bytes, 0, "the trained structure", outcome, function);
    if (status != UFORM_OK) goto done;

    /* 5. every member adds its block; the statuses and the sizes of the serialised lists. */
    buffer_t trained = lists;
    lists = (buffer_t){0};
    job.faiss = m.self == 0 ? faiss : NULL, job.bytes = trained.bytes, job.rows = trained.size;
    job.ondisk = m.self == 0 && streamed ? &ondisk : NULL;
    job.own = own, job.first = first, job.lists = &lists;
    if (streamed) {
        /* 5 and 6 in rounds, each member's lists to member 0's runs a batch at a time. */
        job.run = batch_job;
        memset(&said, 0, sizeof said);
        status = stream_parts(&m, &job, shapes, &said, &faiss);
        free(trained.bytes);
        if (status != UFORM_OK) goto done;
    } else {
        job.run = add_job;
        status = wait_for(&m, &job);
        free(trained.bytes);
        faiss = job.faiss; /* made by the job on members other than 0 */
        if (status != UFORM_OK) goto done;
        memset(&said, 0, sizeof said);
        say(&said, job.status, outcome);
        said.value = lists.size;
        if ((status = agree(&m, &said, "while adding its rows")) != UFORM_OK) goto done;

        /* 6. the merge on member 0. */
        said_t *sizes = calloc(m.count, sizeof *sizes);
        if (!sizes) {
            status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate %zu records", m.count);
            goto done;
        }
        memcpy(sizes, m.saids, m.count * sizeof *sizes);
        memset(&said, 0, sizeof said);
        status = merge_parts(&m, faiss, &lists, sizes, &said);
        free(sizes);
        if (status != UFORM_OK) goto done;
    }
    /* 7. the file, and member 0's word to everyone. */
    uform__ann_record_t record;
    memset(&record, 0, sizeof record);
    record.version = UFORM__ANN_RECORD_VERSION, record.train_rows = train_rows;
    memcpy(record.recipe, recipe, sizeof recipe);
    int writes = m.self == 0 && said.status == UFORM_OK;
    if (writes) job.run = write_job, job.faiss = faiss, job.record = &record;
    if ((status = wait_for(&m, writes ? &job : NULL)) != UFORM_OK) goto done;
    if (writes) say(&said, job.status, outcome);
    else if (m.self == 0) uform__fail(outcome, (uform_status_t)said.status, function, "%s", said.message);
    status = hear(&m, &said, "to merge and write the structure");
done:
    uform__ann_ondisk_end(&ondisk);
    free(job.widened), free(job.list_sizes);
    if (faiss) m.api->free(faiss);
    free(sample), free(lists.bytes), free(shapes), free(m.sizes), free(m.saids), free(m.bytes);
    uform__mesh_release(mesh);
    return status == UFORM_OK ? uform__succeed(outcome, function) : status;
}
