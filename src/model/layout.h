/*
 * The list of tensors a config implies (docs/model.md), in one place so the random checkpoint writer
 * and the trainer's checkpoints name and shape them exactly as the loader expects.
 */
#ifndef UFORM_MODEL_LAYOUT_H
#define UFORM_MODEL_LAYOUT_H

#include "model/config.h"

typedef enum uform__tensor_kind_t {
    UFORM__TENSOR_MATRIX = 0,      /* a linear layer's weight or a patch projection: BF16, weight decay */
    UFORM__TENSOR_BIAS = 1,        /* a linear layer's bias */
    UFORM__TENSOR_TABLE = 2,       /* embedding tables, positions, CLS rows, modality vectors */
    UFORM__TENSOR_POSITIONS = 3,   /* position tables (*.positions, video.space, video.time) */
    UFORM__TENSOR_NORM_WEIGHT = 4, /* LayerNorm weights: initialised to 1 */
    UFORM__TENSOR_NORM_BIAS = 5,   /* LayerNorm biases: initialised to 0 */
    UFORM__TENSOR_TEMPERATURES = 6 /* learned log-scales: initialised to ln(1/0.07) */
} uform__tensor_kind_t;

typedef struct uform__tensor_spec_t {
    char name[64];
    size_t rows, columns;   /* columns 0 for a vector */
    uform__tensor_kind_t kind;
} uform__tensor_spec_t;

/* Writes up to `capacity` specs into `specs` and answers how many the config implies. */
size_t uform__model_tensor_specs(const uform__model_config_t *config, uform__tensor_spec_t *specs, size_t capacity);

/* One standard normal draw from a SplitMix64 state (Box–Muller on two 53-bit uniforms): the same
 * sequence on every machine for a given seed. */
double uform__random_normal(uint64_t *state);

/* Writes a checkpoint of `config` with every tensor drawn from `seed` (docs/model.md, "The tiny
 * checkpoint"): matrices, biases and tables from N(0, 0.02), norms at 1 and 0, temperatures at
 * ln(1/0.07); matrices, biases and tables stored as BF16, norms and temperatures as F32. */
uform_status_t uform__model_write_random(const char *path, const uform__model_config_t *config, uint64_t seed,
                                         uform_outcome_t *outcome, const char *function);

#endif
