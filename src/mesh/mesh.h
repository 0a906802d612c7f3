/*
 * The mesh (docs/mesh.md): the members of one data-parallel run and the collectives between
 * them. src/train/ uses these functions; only src/mesh/ knows the collectives library.
 *
 * Files of this module, one idea each:
 *   facts.c            a member's facts: "key=value" lines, the agreed keys, comparison
 *   launcher.c         uform_mesh_launch_read: index, count and job from torchrun, MPI or Slurm
 *   bootstrap.c        uform_mesh_bootstrap / describe / free: the options, this member's facts, then
 *                      one of the two ways of meeting (bootstrap.h)
 *   rendezvous_folder.c  meeting in directory/job: claims, the hello barrier, stale folders
 *   rendezvous_store.c   the same through a key–value store (tcp:// or redis://)
 *   store_server.c     the tcp:// store member 0 hosts while the members meet (store.h)
 *   store_tcp.c        its client, and rendezvous URLs
 *   collectives.c      the collectives as the trainer sees them: statuses, messages, a broken mesh
 *   overlap.c          the gradients' buckets, all-reduced on a thread of their own during the backward
 *   gloo_load.c        opening the collectives module on the first mesh of more than one member
 *   gloo.cpp           the shim over Gloo (gloo.h), and gloo_store.cpp its rendezvous stores (Redis
 *                      among them): the project's only C++, not in libuform but in the module
 *                      libuform-gloo.so.4 (gloo_load.h)
 */
#ifndef UFORM_MESH_MESH_H
#define UFORM_MESH_MESH_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "mesh/gloo.h"
#include "mesh/gloo_load.h"
#include "uform/uform.h"

/* Protocol of the trainer's exchanges; bumped whenever a fixed-size record changes, and compared at
 * the bootstrap, so members never exchange records of different sizes. */
#define UFORM__MESH_PROTOCOL 2

struct uform_mesh_s {
    size_t index, count;          /* this member, of `count` */
    int64_t timeout_ms;           /* the bootstrap's wait and every collective's */
    uform_cpu_class_t cpu_class;  /* of the executor it was bootstrapped with */
    uform_mesh_launcher_t launcher; /* who started the members, and where this one is on its host */
    size_t local_index, local_count;
    uform_mesh_overlap_t overlap;
    char address[64];             /* where this member's collectives listen */
    const uform__gloo_api_t *gloo_api; /* the module's functions; NULL for a mesh of one */
    uform__gloo_t *gloo;          /* NULL for a mesh of one */
    uint32_t busy;                /* a call holds the mesh (atomic) */
    uint32_t broken;              /* a collective failed (atomic); everything after it fails */
    uform_status_t broken_status;
    char broken_message[UFORM_OUTCOME_MESSAGE_CAPACITY];
    /* Payload bytes handed to the collectives so far, per kind (all-reduce: the buffer; all-gather:
     * every member's part; broadcast: the buffer), for measurements (bench_mesh). Written only by the
     * call holding the mesh. */
    uint64_t payload_bytes[3];
    uint64_t collectives[3];
    struct uform__mesh_buckets_s *buckets; /* the gradients' all-reduce thread (overlap.c); NULL alone */
};

enum { UFORM__MESH_ALLREDUCE = 0, UFORM__MESH_ALLGATHER = 1, UFORM__MESH_BROADCAST = 2 };

/* Takes the mesh for one call: UFORM_CONTENDED while another call holds it, UFORM_PEER_LOST when it
 * is broken (repeating the first failure). Release with uform__mesh_release. */
uform_status_t uform__mesh_acquire(uform_mesh_t mesh, uform_outcome_t *outcome, const char *function);
void uform__mesh_release(uform_mesh_t mesh);

/* The collectives. Each answers UFORM_OK or fails `outcome` on behalf of `function`: UFORM_TIMEOUT
 * (a member did not answer within the timeout), UFORM_PEER_LOST (a member left, or the mesh broke
 * earlier) or UFORM_INTERNAL, and then marks the mesh broken and closes its connections so the other
 * members fail at once too. `what` names the exchange in the message ("the gradients"). */
uform_status_t uform__mesh_allreduce_f32(uform_mesh_t mesh, float *values, size_t count, const char *what,
                                         uform_outcome_t *outcome, const char *function);
uform_status_t uform__mesh_allreduce_f64(uform_mesh_t mesh, double *values, size_t count, const char *what,
                                         uform_outcome_t *outcome, const char *function);
/* output ← every member's input end to end; member r gives bytes[r] bytes. */
uform_status_t uform__mesh_allgather(uform_mesh_t mesh, const void *input, void *output, const size_t *bytes,
                                     const char *what, uform_outcome_t *outcome, const char *function);
uform_status_t uform__mesh_broadcast(uform_mesh_t mesh, void *data, size_t bytes, size_t root, const char *what,
                                     uform_outcome_t *outcome, const char *function);

/* Rounds until every member's work is done, so that long work can run on a thread of its own while
 * the mesh's timeout bounds only how long a dead member goes unnoticed: each round, a member with
 * work waits for `*done` (set with release order by the worker) up to 100 ms, then every member
 * all-gathers one byte saying whether its own work is done. `done` NULL: this member has nothing to
 * do. `flags` and `sizes` are scratch of one entry per member. The collectives' statuses. */
uform_status_t uform__mesh_rounds_until_done(uform_mesh_t mesh, const uint32_t *done, unsigned char *flags, size_t *sizes,
                                            const char *what, uform_outcome_t *outcome, const char *function);

/* Largest all-reduce issued at once (the gradients go in buckets of this many bytes at most). */
#define UFORM__MESH_BUCKET_BYTES ((size_t)64 << 20)

/* ---- overlap.c: the gradients' buckets, all-reduced by a thread of the mesh's own ----
 *
 * A step hands its gradients to the thread bucket by bucket (each a contiguous range of floats), in
 * the same order on every member, while its backward goes on; the thread all-reduces them one after
 * the other (sums, in place) through the collectives above, so exactly one thread uses the
 * collectives while buckets are in flight, and the step makes no other exchange until it has
 * waited for them. Every member hands over every bucket of a step, also after its own work failed,
 * so the members' collectives stay in step; the statuses are exchanged after. */

/* Starts the thread (bootstrap, meshes of more than one member). UFORM_OUT_OF_MEMORY when it cannot. */
uform_status_t uform__mesh_overlap_start(uform_mesh_t mesh, uform_outcome_t *outcome, const char *function);
/* Stops and joins the thread (uform_mesh_free). No-op without one. */
void uform__mesh_overlap_stop(uform_mesh_t mesh);
/* Hands values[count] to the thread; without a thread (a mesh of one) nothing happens. Never fails:
 * a failure is kept for uform__mesh_buckets_finish. */
void uform__mesh_bucket_submit(uform_mesh_t mesh, float *values, size_t count);
/* Waits until every bucket handed over has been reduced. UFORM_OK, or the first failure (the mesh is
 * then broken) on behalf of `function`. `waited`: seconds this call waited; `ran`: seconds the
 * thread spent reducing this round's buckets. */
uform_status_t uform__mesh_buckets_finish(uform_mesh_t mesh, uform_outcome_t *outcome,
                                          const char *function, double *waited, double *ran);

#endif
