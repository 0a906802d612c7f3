/*
 * A step's working memory and the passes that share it: stems, blocks and heads, each forward
 * with its backward (docs/training.md, "Backward passes"). Private to src/train/.
 *
 * Shapes: T tokens of the packed batch, d hidden, H heads, F = mlp, E embedding, S sequences
 * (N of them embeddings, C choices), P_m patch rows of media modality m with width w_m.
 */
#ifndef UFORM_TRAIN_WORK_H
#define UFORM_TRAIN_WORK_H

#include "train/batch.h"

/* What one block's forward keeps for its backward. */
typedef struct uform__block_saved_t {
    float *x;             /* [T, d] the block's input */
    float *a1;            /* [T, d] norm1(x) */
    float *qkv;           /* [T, 3d] */
    float *att;           /* [T, d] attention output (heads side by side) */
    float *lse;           /* [H, T] */
    float *h;             /* [T, d] x + attn.out(att) */
    float *a2;            /* [T, d] norm2(h) */
    float *u;             /* [T, F] mlp.up(a2), before GELU */
    float *g;             /* [T, F] gelu(u) */
    float *mean1, *rstd1, *mean2, *rstd2; /* [T] */
} uform__block_saved_t;

typedef struct uform__train_work_t {
    uform_trainer_t trainer;
    const uform__batch_plan_t *plan;
    const uform_trainer_step_t *request;
    const uform_trainer_step_t *whole;    /* the caller's request (a chunk's request is a part of it): prepared inputs */
    uform__compute_t compute;
    uform__call_context_t *context;
    size_t done;                          /* progress units */
    size_t failed_content, failed_member; /* what request->failed_content/member get (SIZE_MAX: none) */
    /* BF16 compute on a class whose BF16 products widen their F32 inputs: the inputs of every BF16
     * product (activations forward, upstream gradients backward) are rounded explicitly, so every
     * class computes the same BF16-operand products (uform__gemm_rounds_to_bf16). */
    int round_inputs;
    float *dy_rounded;                    /* [T, max(3d, F)] rounded upstream gradients (round_inputs) */

    float *patches[4];                    /* [P_m, w_m] decoded media inputs */
    float *projected;                     /* [max P_m, d] scratch for the patch products */
    uform__block_saved_t *blocks;         /* [L] */
    float *final;                         /* [S, d] the last block's output at each sequence's read row */
    float *lse_kept;                      /* [H, S] the last block's log-sum-exp at the read rows */

    /* heads */
    float *head_in;                       /* [S, d] the read rows ([CLS] of embeddings, [NEXT] of choices) */
    float *head_normed;                   /* [S, d] after {modality}.norm / choose.norm */
    float *head_mean, *head_rstd;         /* [S] */
    float *embeddings;                    /* [N, E] projected [CLS] states (F32, before normalising) */
    float *logits;                        /* [C, 256] */
    float *d_embeddings;                  /* [N, E] */
    float *d_logits;                      /* [C, 256] */
    float *d_temperatures;                /* [G] (double-accumulated, then added to the gradient) */

    /* backward scratch */
    float *dx, *dh, *dt;                  /* [T, d] */
    float *datt;                          /* [T, d] */
    float *dqkv;                          /* [T, 3d] */
    float *dg;                            /* [T, F] */
    float *deltas;                        /* [H, T] */

    double *contrastive_scratch;          /* uform__train_contrastive_doubles(...) doubles */
    double contrastive, choice;           /* the losses */
    float *bag_embeddings;                /* [B, E] full-width bag embeddings (F32) */
    size_t choice_total;                  /* choices of the global batch (a mesh), 0: plan->choices */
    size_t content_base;                  /* the request's index of this work's content 0 (a chunk's first) */
    /* Called after each trunk block's backward (the mesh's overlap), or NULL. */
    void (*block_done)(void *state, size_t block);
    void *block_done_state;
} uform__train_work_t;

/* The bags the contrastive loss sees: the step's own, or over a mesh the global batch's
 * (mesh_step.c), and the range of them this member owns. */
typedef struct uform__train_bags_t {
    const float *embeddings;              /* [N, E] projections of every embedding sequence */
    size_t N, B;
    const size_t *offsets;                /* [B + 1] into members */
    const size_t *members;                /* rows of `embeddings`, grouped by bag, in content order */
    const uint8_t *sides;                 /* [B] */
    int have_sides;
    size_t relations;                     /* the relations this member computes, in the view's bags */
    const size_t *lefts, *rights, *groups;
    size_t relations_total;               /* relations of the whole batch: the mean's divisor */
    size_t own_first_bag, own_bags;       /* this member's bags */
    size_t own_first_row, own_rows;       /* and their rows of `embeddings` */
} uform__train_bags_t;

/* ---- work.c ---- */
/* Which pieces of a work's memory: all of them, or only the losses' (embeddings and logits, their
 * gradients, d_temperatures, bag embeddings and the contrastive scratch). */
typedef enum uform__train_pieces_t {
    UFORM__TRAIN_PIECES_ALL = 0,
    UFORM__TRAIN_PIECES_LOSSES = 1
} uform__train_pieces_t;
/* A work over `plan` for one step of `request`: the kernels and the compute, nothing carved yet. */
void uform__train_work_begin(uform__train_work_t *work, uform_trainer_t trainer, const uform__batch_plan_t *plan,
                             const uform_trainer_step_t *request, uform__call_context_t *context);
/* Bytes of memory the pieces of work->plan need (all of them: with the GEMM's scratch for the
 * call's threads, after the rest). */
size_t uform__train_work_bytes(const uform__train_work_t *work, uform__train_pieces_t pieces);
/* Carves the pieces of work->plan out of `memory` (64-byte pieces; all of them: into work->blocks
 * [L] too, and the GEMM's scratch). */
void uform__train_work_carve(uform__train_work_t *work, uform__train_pieces_t pieces, void *memory);
/* Makes the trainer's kept step memory hold `bytes` (it only grows). */
uform_status_t uform__train_step_memory(uform_trainer_t trainer, size_t bytes, uform__call_context_t *context);

/* ---- accumulate.c ---- */
/* A step's batch in chunks (uform.h, "accumulate"); one chunk is the batch itself. */
typedef struct uform__train_chunk_t uform__train_chunk_t;
typedef struct uform__train_chunks_t {
    size_t count;                       /* K */
    uform__train_chunk_t *chunk;        /* [K] with K > 1 */
    size_t *embedding_of, *choice_of;   /* [n]: a content's row of the batch's embeddings or logits, or SIZE_MAX */
    void *loss_memory;                  /* the batch's losses' pieces (K > 1) */
    uform__block_saved_t *blocks;       /* [L], shared by the chunks' works */
    uform__train_work_t work;           /* a chunk's work (K > 1), begun anew for each use */
} uform__train_chunks_t;
/* The chunks `request` runs in: its accumulate, at most one a content, at least one. */
size_t uform__train_chunk_count(const uform_trainer_step_t *request);
/* Plans `count` chunks of the batch of `whole` (with several, the batch's losses' pieces get memory
 * of their own) and answers the working memory the largest chunk needs. */
uform_status_t uform__train_chunks_plan(uform__train_chunks_t *chunks, uform__train_work_t *whole, size_t count,
                                        size_t *bytes);
/* Chunk k's work, carved out of `memory` unless it is NULL: with one chunk `whole` itself, else a
 * work of its own whose progress continues the batch's. */
uform__train_work_t *uform__train_chunk_work(uform__train_chunks_t *chunks, uform__train_work_t *whole, size_t k,
                                             void *memory);
/* Chunk k's embeddings and logits into the batch's rows; the rows' gradients back into chunk k's
 * (nothing to copy when the chunk is the batch). */
void uform__train_chunk_gather(const uform__train_chunks_t *chunks, size_t k, const uform__train_work_t *work,
                               uform__train_work_t *whole);
void uform__train_chunk_scatter(const uform__train_chunks_t *chunks, size_t k, const uform__train_work_t *whole,
                                uform__train_work_t *work);
void uform__train_chunks_free(uform__train_chunks_t *chunks);

/* ---- stems.c ---- */
/* Decodes every media sequence (in parallel, one sequence per prong) into work->patches; the
 * first failing content in content order is reported ("contents[7]: ..."). */
uform_status_t uform__train_stems_decode(uform__train_work_t *work);
/* x [T, d] = the stems' rows of every sequence (the patch products included). */
uform_status_t uform__train_stems_forward(uform__train_work_t *work, float *x);
/* dx [T, d] → the gradients of text.bytes, the position tables, video.time, the CLS rows, the
 * modality vectors and the patch projections. `dx` may be overwritten. */
uform_status_t uform__train_stems_backward(uform__train_work_t *work, float *dx);

/* ---- blocks.c ---- */
/* Every block forward from blocks[0].x (the stems' rows), keeping what the backward needs. The
 * last block computes only what the losses read (as inference's trunk does when it keeps one row
 * per item): its attention for each sequence's read row (plan->keep) and its out projection, norm
 * and MLP on those S rows, into work->final [S, d]. Reports a progress unit per block. */
uform_status_t uform__train_blocks_forward(uform__train_work_t *work);
/* work->dx holds d final [S, d] (compact: row s is sequence s's read row); on return it holds
 * d x of the stems [T, d]. Accumulates every block's parameter gradients. Reports a progress unit
 * per block. */
uform_status_t uform__train_blocks_backward(uform__train_work_t *work);

/* ---- heads.c ---- */
/* Reads work->final (each sequence's read row), normalises them with their heads' norms, projects the
 * embeddings and computes the choice logits. */
uform_status_t uform__train_heads_forward(uform__train_work_t *work);
/* The choice loss (text_choose's distribution against the targets, mean over choices), its
 * gradient into work->d_logits (scaled by `weight`) and temperature 0's into d_temperatures. */
double uform__train_choice_loss(uform__train_work_t *work, double weight);
/* d embeddings and d logits → work->dx [S, d] (d final, compact) and the heads' gradients. */
uform_status_t uform__train_heads_backward(uform__train_work_t *work);

/* ---- contrastive.c ---- */
/* The Matryoshka contrastive loss (docs/training.md, "Losses") of the batch's relations from
 * work->embeddings; its gradient (times `weight`) into work->d_embeddings (overwritten) and the
 * temperatures' into work->d_temperatures (accumulated); the full-width bag embeddings into
 * work->bag_embeddings. Answers the loss (0 without relations). */
double uform__train_contrastive(uform__train_work_t *work, double weight);
/* Doubles of scratch the loss needs (work->contrastive_scratch) for a view of `sequences` rows. */
size_t uform__train_contrastive_doubles(size_t sequences, size_t bags, size_t embedding, size_t groups);
/* Σ of the Matryoshka prefixes: d e of every prefix is [bags, Σ P] doubles. */
size_t uform__train_contrastive_prefix_sum(const uform__model_config_t *config);
/* A mesh member's half before the exchange: the loss terms of the view's relations at every prefix
 * (answered: this member's share of the loss), d e of every bag and prefix into de_all [B, Σ P]
 * (overwritten), the temperatures' gradient (accumulated) and the own bags' full-width embeddings
 * [own_bags, E]. `scratch` holds uform__train_contrastive_doubles(N, B, E, groups) doubles. */
double uform__train_contrastive_forward(const uform__train_bags_t *bags, const uform__model_config_t *config,
                                        const float *temperatures, double weight, double *scratch, double *de_all,
                                        float *d_temperatures, float *own_embeddings);
/* And after it: d e of the own bags (summed over the members) → d_embeddings [own_rows, E] (overwritten). */
void uform__train_contrastive_backward(const uform__train_bags_t *bags, const uform__model_config_t *config,
                                       double *scratch, const double *de_all, float *d_embeddings);

/* ---- small helpers shared by the passes (blocks.c) ---- */
/* y[i] += x[i] over n values. */
void uform__train_add(size_t n, const float *x, float *y, const uform__parallel_t *parallel);
/* The backward of a linear layer y = x·Wᵀ + b over `rows` rows: dW += dyᵀ·x, db += Σ dy (when the
 * layer has a bias), and dx = dy·W when `dx` is not NULL. x holds F32 rows. */
uform_status_t uform__train_linear_backward(uform__train_work_t *work, const uform__linear_t *layer,
                                            const uform__linear_t *grad, size_t rows, const float *x, size_t ldx,
                                            const float *dy, size_t lddy, float *dx, size_t lddx);
/* The same with x of `x_dtype` (F32, or BF16 rows as the trunk keeps them under native BF16
 * compute, see uform__train_native_bf16); ldx in elements. */
uform_status_t uform__train_linear_backward_typed(uform__train_work_t *work, const uform__linear_t *layer,
                                                  const uform__linear_t *grad, size_t rows, const void *x,
                                                  uform__gemm_dtype_t x_dtype, size_t ldx, const float *dy,
                                                  size_t lddy, float *dx, size_t lddx);
/* BF16 compute on a class whose BF16 products round their own F32 inputs (GENOA and later): the
 * trunk then keeps the products' inputs norm1(x), norm2(h) and gelu(u) as BF16 rows, written
 * rounded by the pass that makes them, and the products read them in place (as inference does). */
static inline int uform__train_native_bf16(const uform__train_work_t *work) {
    return work->compute.compute == UFORM_COMPUTE_BF16 && !work->round_inputs;
}

#endif
