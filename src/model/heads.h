/* The heads: states, embeddings and token vectors (heads.c), and text_choose's head (choose.c). */
#ifndef UFORM_MODEL_HEADS_H
#define UFORM_MODEL_HEADS_H

#include "model/encode.h"

typedef struct uform__heads_scratch_t {
    float *states;     /* [T, d] when STATES are not kept */
    float *projected;  /* [T, W] with W = uform__heads_width */
    float *spare;      /* [T, W] for a tower's Dense modules (NULL without them) */
    float *cls;        /* [items, d] */
    float *mean, *rstd, *norms; /* [T] */
} uform__heads_scratch_t;

/* The widest row the heads of `model` write per token into `projected` (at least E and 256). */
size_t uform__heads_width(const uform_model_t model);

/* The absolute token index of the one row the embedding of item `item` is pooled from (chunk-
 * relative `offsets`, job item `job_item`), or SIZE_MAX when the pooling reads every row. */
size_t uform__heads_pool_row(const uform__encode_job_t *job, size_t job_item, const size_t *offsets, size_t item);

/* SigLIP's attention pooling (heads_pool.c): the states of `count` items (rows at `offsets`,
 * [T, d]) into pooled [count, d]. `scratch` holds T·2d + count·(d + mlp) floats. */
uform_status_t uform__heads_attention_pool(const uform__encode_job_t *job, uform__compute_t *compute,
                                           const float *states, size_t states_stride, size_t count,
                                           const size_t *offsets, float *pooled, float *scratch,
                                           uform__call_context_t *context);

/* Converts `rows` F32 rows into rows first_row.. of `target`, in its scalar kind. */
void uform__convert_rows(const uform__nn_kernels_t *nn, const float *source, size_t source_stride, size_t rows,
                         size_t columns, uform_matrix_t *target, size_t first_row);

/* Writes the outputs of items first..first+count (their trunk rows `x`, chunk-relative token
 * `offsets`, the chunk's first token `first_token` in the whole call) into the job's views. */
uform_status_t uform__heads_forward(const uform__encode_job_t *job, uform__compute_t *compute, const float *x,
                                    size_t first, size_t count, const size_t *offsets, size_t first_token,
                                    const uform__heads_scratch_t *scratch, uform__call_context_t *context);

/* text_choose: the [NEXT] rows of the chunk through choose.norm and choose.head, soft-maxed over
 * each text's legal bytes into the job's probabilities (rows from the text's choice offset). */
uform_status_t uform__choose_forward(const uform__encode_job_t *job, uform__compute_t *compute, const float *x,
                                     size_t first, size_t count, const size_t *offsets,
                                     const uform__heads_scratch_t *scratch, uform__call_context_t *context);

#endif
