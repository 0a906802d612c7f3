/*
 * The trainer (docs/training.md): F32 master weights, their gradients and AdamW moments in four
 * parallel blocks, BF16 copies of the matrices for BF16 compute, and a model view whose layers
 * point into them so the forward reuses the inference kernels' wrappers. Private to libuform.
 *
 * Files of this module, one idea each:
 *   trainer.c      init (fresh or resumed), free, describe, snapshot
 *   params.c       the parameter table, initialisation, the model views, BF16 refresh
 *   checkpoint.c   save (weights + optimizer state) and resume
 *   batch.c        validation of a step's batch and the plan of its sequences
 *   stems.c        the stems' forward and backward (text rows, media patches)
 *   blocks.c       the trunk's blocks with saved activations, and their backward
 *   heads.c        the embedding heads, the choose head, their backward
 *   contrastive.c  the Matryoshka contrastive loss and its gradient (double precision)
 *   optimizer.c    the schedule, the gradient norm and clipping, AdamW
 *   step.c         the step verb, written once: decode → forward → losses → backward → update
 *   accumulate.c   the batch in chunks: their plans, works and rows (the batch at once is one chunk)
 *   work.c         a step's working memory: one table of pieces for its size and its carving
 *   exchange.c     the step's exchange with its run (exchange.h): a process alone
 *   mesh_join.c    init over a mesh: the members' configs compared, member 0's state copied
 *   mesh_step.c    the step's exchange over a mesh: its three points (mesh_step.h)
 */
#ifndef UFORM_TRAIN_TRAINER_H
#define UFORM_TRAIN_TRAINER_H

#include <stddef.h>
#include <stdint.h>

#include "exec/call.h"
#include "model/encode.h"
#include "model/layout.h"
#include "model/model.h"

/* The optimizer's resolved settings (zeroes of the public config replaced by defaults). */
typedef struct uform__optimizer_t {
    double learning_rate, beta1, beta2, epsilon, weight_decay, clip_norm;
    uint64_t warmup_steps, total_steps;
    double contrastive_weight, choice_weight;
} uform__optimizer_t;

/* A bucket of the gradients: floats [first, first + count) of the trainer's gradient block. Trunk
 * buckets hold whole blocks (`lowest` is the first block in it, whose backward finishes it); the
 * last buckets hold the rest (temperatures, heads, stems: lowest SIZE_MAX, after the backward). */
typedef struct uform__train_bucket_t {
    size_t first, count, lowest;
} uform__train_bucket_t;

/* One parameter tensor: where it lives in the parallel F32 blocks and how it is treated. */
typedef struct uform__param_t {
    uform__tensor_spec_t spec; /* name, rows, columns (0 for a vector), kind */
    size_t count;              /* elements */
    size_t offset;             /* into weights / grads / m / v, in floats, a multiple of 16 */
    size_t bf16_offset;        /* into the BF16 copies, or SIZE_MAX when it has none */
    int decay;                 /* weight decay applies (rank 2, not a position table) */
    int wide;                  /* stored as F32 in checkpoints (norms, temperatures) */
} uform__param_t;

/* The activations and gradients a step needs, carved from one allocation the trainer keeps. */
typedef struct uform__train_memory_t {
    void *base;
    size_t bytes;
} uform__train_memory_t;

struct uform_trainer_s {
    uform_executor_t executor;      /* retained; NULL: the calling thread */
    uform_cpu_class_t cpu_class;    /* the kernels every call uses */
    uform_compute_t compute;
    uform__model_config_t config;
    uform__optimizer_t optimizer;
    uint64_t seed;
    uint64_t steps;                 /* updates applied so far */

    uform__param_t *params;
    size_t param_count;
    size_t total;                   /* floats in each F32 block */
    float *weights, *grads, *m, *v; /* [total] each, 64-byte aligned */
    uint16_t *bf16;                 /* [bf16_total]: BF16 copies of the product weights (BF16 compute) */
    size_t bf16_total;

    struct uform_model_s view;      /* layers over `weights` (or `bf16` for products under BF16 compute) */
    struct uform_model_s grad_view; /* the same layout over `grads` (F32) */
    char *user_metadata;            /* "uform.user" of the resumed checkpoint, or NULL */

    uform__train_memory_t memory;   /* step scratch, grown on demand and kept */
    uform_mesh_t mesh;              /* borrowed; NULL: a run in this process alone */
    uform__train_bucket_t *buckets; /* over a mesh: the gradients' buckets (mesh_step.c) */
    size_t bucket_count;
};

/* ---- params.c ---- */

/* Fills the parameter table and allocates the blocks for `trainer->config` (zeroing weights,
 * grads and moments). UFORM_OUT_OF_MEMORY on failure (the caller frees what was made). */
uform_status_t uform__train_params_create(uform_trainer_t trainer, uform_outcome_t *outcome, const char *function);

/* Draws fresh weights from `trainer->seed` (docs/training.md, "Initialisation"). */
void uform__train_params_initialise(uform_trainer_t trainer);

/* Points both model views' layers into the blocks (after create; the pointers never move). */
void uform__train_views_build(uform_trainer_t trainer);

/* Copies the product weights to BF16 (round to nearest even) for BF16 compute; no-op under F32. */
void uform__train_bf16_refresh(uform_trainer_t trainer, const uform__nn_kernels_t *nn);

/* The parameter called `name`, or NULL. */
uform__param_t *uform__train_param(uform_trainer_t trainer, const char *name);

/* Frees the blocks and the table (not the trainer). */
void uform__train_params_free(uform_trainer_t trainer);

/* ---- optimizer.c ---- */

/* The learning rate of step `step` (from 1): warmup, then cosine to 0.1·lr at total_steps. */
double uform__train_learning_rate(const uform__optimizer_t *optimizer, uint64_t step);

/* Replaces zeroes with docs/training.md's defaults; UFORM_INVALID_ARGUMENT names a value out of range. */
uform_status_t uform__train_optimizer_resolve(const uform__optimizer_t *given, uform__optimizer_t *resolved,
                                              uform_outcome_t *outcome, const char *function);

/* The global L2 norm of every gradient (a fixed order of fixed blocks: independent of threads). */
double uform__train_grad_norm(uform_trainer_t trainer, const uform__nn_kernels_t *nn, const uform__parallel_t *parallel);

/* Clips (when clip_norm > 0 and the norm exceeds it) and applies AdamW to every parameter with
 * the rate of step `step`, then refreshes the BF16 copies. */
void uform__train_update(uform_trainer_t trainer, double grad_norm, uint64_t step, double learning_rate,
                         const uform__nn_kernels_t *nn, const uform__parallel_t *parallel);

/* ---- checkpoint.c ---- */

typedef struct uform__save_job_t {
    const char *path;
    int with_optimizer;
    const char *user_metadata;
    const uform_progress_t *progress;
} uform__save_job_t;

/* Writes the checkpoint (atomic). Runs inside a call on the trainer's executor. */
uform_status_t uform__train_save(uform_trainer_t trainer, const uform__save_job_t *job,
                                 uform__call_context_t *context);

/* The checkpoint's bytes in one malloc'ed buffer (weights only), for snapshots. */
uform_status_t uform__train_encode_weights(uform_trainer_t trainer, uint8_t **bytes, size_t *size,
                                           uform_outcome_t *outcome, const char *function);

/* Reads `path` into the trainer: config (checked against `requested`'s non-zero fields), weights,
 * moments, step and optimizer settings. The parameter table is created here. */
uform_status_t uform__train_resume(uform_trainer_t trainer, const char *path, const uform_trainer_config_t *requested,
                                   uform__optimizer_t *stored, int *has_stored, uform_outcome_t *outcome,
                                   const char *function);

/* The optimizer settings as the JSON stored in "uform.optimizer" (malloc'ed; NULL without memory). */
char *uform__train_optimizer_json(const uform__optimizer_t *optimizer, uint64_t seed);

/* ---- mesh_step.c ---- */

/* The gradients' buckets of a trainer (the same plan on every member: it follows the config).
 * Trunk blocks are taken last first, each its own bucket unless under UFORM__TRAIN_BUCKET_MERGE bytes
 * (then merged with the block below), none over UFORM__MESH_BUCKET_BYTES. malloc'ed; NULL without
 * memory. */
#define UFORM__TRAIN_BUCKET_MERGE ((size_t)512 << 10)
uform__train_bucket_t *uform__train_buckets_plan(uform_trainer_t trainer, size_t *count);

/* ---- mesh_join.c ---- */

/* Every member's init meets here with its status so far (`trainer` NULL or unusable unless it is
 * UFORM_OK): statuses and resolved configs are compared, member 0's state is copied to every member,
 * and trainer->mesh is set. Answers the init's final status (a failure on any member fails all). */
uform_status_t uform__train_mesh_join(uform_trainer_t trainer, uform_mesh_t mesh, uform_status_t status,
                                      uform_outcome_t *outcome, const char *function);

#endif
