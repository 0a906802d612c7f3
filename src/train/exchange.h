/*
 * What a step exchanges with the other members of its run (docs/mesh.md, "Data-parallel
 * semantics"), behind one interface so that the step reads the same alone and over a mesh. Private
 * to src/train/.
 *
 *   begin   once the batch is decoded: the run's shapes and statuses, so the sizes of the later
 *           exchanges are known everywhere; settles the learning rate override and the overlap hook
 *   losses  after the heads: the losses over the run's batch, their sums, and the gradients with
 *           respect to this process's embeddings and logits
 *   reduce  after the backward: the parameter gradients summed over the run, and every status
 *   end     releases what begin took
 *
 * Each is called exactly once per step, in this order, whatever became of the step so far: it takes
 * the step's status and answers the status after the exchange (a failure anywhere in the run fails
 * the step everywhere before the update).
 *
 * Two implementations: alone (exchange.c: nothing to exchange; the losses are computed here) and
 * over a mesh (mesh_step.c).
 */
#ifndef UFORM_TRAIN_EXCHANGE_H
#define UFORM_TRAIN_EXCHANGE_H

#include "train/mesh_step.h"

typedef struct uform__train_exchange_t uform__train_exchange_t;

struct uform__train_exchange_t {
    /* `work` is the whole batch's (its plan, embeddings and logits, their gradients and the losses). */
    uform_status_t (*begin)(uform__train_exchange_t *exchange, uform__train_work_t *work, uform_status_t status);
    uform_status_t (*losses)(uform__train_exchange_t *exchange, uform__train_work_t *work, uform_status_t status);
    uform_status_t (*reduce)(uform__train_exchange_t *exchange, uform__train_work_t *work, uform_status_t status);
    void (*end)(uform__train_exchange_t *exchange);

    size_t member;                   /* this process's index in the run; SIZE_MAX alone */
    double learning_rate_override;   /* the run's (set by a successful begin) */
    /* Set by begin: called after each trunk block's backward of the batch's last chunk (the buckets
     * of a block go as soon as its gradients are final), or NULL. */
    void (*block_done)(void *state, size_t block);
    void *block_done_state;
    double wait_seconds, ran_seconds; /* the gradients' exchange: the step's wait for it, its run */
    uform__train_mesh_step_t mesh;   /* the mesh implementation's state */
};

/* The exchange of `trainer`'s steps: its mesh's, or the one of a process alone. */
void uform__train_exchange_open(uform__train_exchange_t *exchange, uform_trainer_t trainer);

/* ---- mesh_step.c ---- */
/* The exchange over trainer->mesh. */
void uform__train_exchange_mesh(uform__train_exchange_t *exchange, uform_trainer_t trainer);

#endif
