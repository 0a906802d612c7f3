/*
 * A step over a mesh (docs/mesh.md, "Data-parallel semantics"): the mesh's implementation of the
 * step's exchange (exchange.h), and the rules that keep every member in the same place. Private to
 * src/train/.
 *
 *   begin   once decoded: every member's shape and status (fixed-size records), so the sizes of
 *           the later exchanges are known everywhere before they are made
 *   losses  after the heads: the bag embeddings of the global batch (all-gather), the loss terms of
 *           this member's relations over them, then d e of every bag and the loss sums (all-reduce
 *           in double precision), and the backward of this member's own bags
 *   reduce  after the backward: the parameter gradients (all-reduce, in buckets) and every member's
 *           status — with overlap (the default) the buckets go while the backward runs, a trunk
 *           block's as soon as its backward is done (uform__train_mesh_block_done), the rest here,
 *           then the statuses; without, the statuses first and then every bucket
 *
 * Every member makes the same exchanges in the same order. A member whose own work failed still
 * takes part, carrying its status, so nobody waits for it; once a failure is known to all (or the
 * mesh broke) no further exchange is made, and every member's step fails before the update.
 */
#ifndef UFORM_TRAIN_MESH_STEP_H
#define UFORM_TRAIN_MESH_STEP_H

#include "mesh/mesh.h"
#include "train/work.h"

typedef struct uform__mesh_shape_t uform__mesh_shape_t;

/* The state of one step's exchanges. */
typedef struct uform__train_mesh_step_t {
    uform_mesh_t mesh;
    size_t members, me;
    int held;                       /* the mesh is acquired for this step */
    int settled;                    /* a failure is known to every member (or the mesh broke) */
    uform__mesh_shape_t *shapes;    /* [members] */
    size_t bags, rows, relations, choices;   /* the global batch */
    size_t bag_base, row_base;      /* this member's first bag and embedding row in it */
    int have_sides;                 /* the global batch's bags have sides */
    double learning_rate_override;  /* member 0's */
    uform_trainer_t trainer;
    int overlap;                    /* the buckets go during the backward */
    const uform__train_bucket_t *buckets; /* the trainer's, in the order every member hands them over */
    size_t bucket_count, submitted;
    double exchange_wait, exchange_ran; /* seconds: the step's wait for them, their all-reduce */
} uform__train_mesh_step_t;

#endif
