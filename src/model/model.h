/*
 * The loaded model: its config, its weights (mapped from the checkpoint, or widened/packed once at
 * load) and the plans its preprocessing reuses. Immutable after load, so any number of calls on any
 * executors may read it at once. Private to libuform.
 */
#ifndef UFORM_MODEL_MODEL_H
#define UFORM_MODEL_MODEL_H

#include "io/safetensors.h"
#include "kernels/gemm.h"
#include "kernels/gemm_i8.h"
#include "kernels/signal.h"
#include "model/config.h"

/* A linear layer y = x·Wᵀ + b with W [rows = out, columns = in] as the checkpoint stores it. */
typedef struct uform__linear_t {
    const void *weight;         /* [rows, columns] in `dtype`, row-major (into the mapping, or owned); NULL
                                 * when the checkpoint holds it quantized and I8 compute runs it */
    uform__gemm_dtype_t dtype;  /* F32 or BF16 */
    size_t rows, columns;
    uform__gemm_packed_t packed; /* for the model's CPU class; `packed.data` NULL when not packed */
    const float *bias;          /* [rows] or NULL */
    /* I8 compute (quantize.c): the weight quantized per output channel and packed for the model's
     * class; `i8.data` NULL for a layer that stays float. `q` [rows, columns] and `q_scale` [rows]
     * are the quantized rows a quantized checkpoint holds (NULL when it held floats). */
    uform__gemm_i8_packed_t i8;
    const int8_t *q;
    const float *q_scale;
} uform__linear_t;

/* LayerNorm parameters, widened to F32. */
typedef struct uform__norm_t {
    const float *weight, *bias; /* [d] each */
} uform__norm_t;

typedef struct uform__block_t {
    uform__norm_t norm1, norm2;
    uform__linear_t qkv, out, up, down;
} uform__block_t;

/* A modality's stem and head. Tables are F32 [rows, d]. */
typedef struct uform__stem_t {
    int present;
    const float *modality;   /* modality.{name} [d] */
    const float *table;      /* text.bytes [260, d] */
    const float *positions;  /* text/image/audio positions, video.space */
    size_t position_rows;
    const float *time;       /* video.time [F/t, d] */
    const float *cls;        /* image/video/audio cls [d] */
    uform__linear_t patch;   /* image/video/audio patch projection */
    uform__norm_t norm;      /* {modality}.norm: the states */
    uform__linear_t projection; /* {modality}.projection [E, d], no bias */
} uform__stem_t;

struct uform_model_s {
    uform__model_config_t config;
    uform__safetensors_t *file;
    uform_cpu_class_t cpu_class;   /* the class weights were packed for */
    uform_compute_t compute;
    uform__block_t *blocks;        /* [depth] */
    uform__stem_t stems[4];        /* by uform_modality_t */
    uform__norm_t choose_norm;
    uform__linear_t choose_head;   /* [256, d] + bias */
    const float *temperatures;     /* [G] learned log-scales */
    uform__signal_mel_plan_t mel;  /* audio: STFT and mel filters at the model's rate */
    int mel_ready;
    void **owned;                  /* allocations made at load (widened tables, packed weights) */
    size_t owned_count, owned_capacity;
    uint64_t parameters, weight_bytes;
    char *config_text;             /* the config as uform__model_config_print writes it (owned): fingerprinted */
    uint32_t fingerprint_state;    /* 0: not computed, 1: being stored, 2: `fingerprint` ready (atomic) */
    unsigned char fingerprint[16]; /* see fingerprint.c */
};

/* Whether `fingerprint` (32 hex digits, an index's) names this model: its fingerprint, or the one
 * earlier builds gave it, which hashed the checkpoint's config text as stored rather than as
 * printed (docs/model.md#fingerprint). Allocates nothing. */
int uform__model_fingerprint_matches(uform_model_t model, const char *fingerprint);

/* Loads a checkpoint held in RAM (`size` bytes, malloc'ed) inside a call already running on an
 * executor (`context`), as uform_model_load_ram would load the same bytes from a file; the model
 * owns the bytes (they are freed with it, or at once when the load fails). cpu_class UNKNOWN:
 * the call's class. */
struct uform__call_context_t;
uform_status_t uform__model_load_bytes(void *bytes, size_t size, uform_cpu_class_t cpu_class, uform_compute_t compute,
                                      uform_model_t *model, struct uform__call_context_t *context);

/* Names a modality ("text" ...). */
const char *uform__modality_name(uform_modality_t modality);

/* ---- I8 compute (quantize.c) ---- */

/* Whether I8 compute runs the layer named `name` (a checkpoint tensor name) in int8: the trunk's
 * four products. The one place that decides (docs/int8.md, "Which layers, and why"). */
int uform__i8_quantizes(const char *name);

/* The scale tensor of a quantized matrix `name` ("trunk.0.attn.qkv.weight" → "..._scale"). */
void uform__i8_scale_name(const char *name, char *buffer, size_t capacity);

/* Quantizes (or takes the quantized rows of) and packs every layer that I8 compute runs in int8,
 * for the model's class, in parallel over layers: allocations from `allocate` (owned by the
 * model). Fails only for memory (UFORM_OUT_OF_MEMORY) or an impossible shape. */
typedef void *(*uform__i8_allocate_fn)(void *state, size_t bytes);
uform_status_t uform__i8_prepare(uform_model_t model, const uform__parallel_t *parallel, uform__i8_allocate_fn allocate,
                                 void *state, uform_outcome_t *outcome, const char *function);

#endif
