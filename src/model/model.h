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
    /* A published tower's layer (src/published/): its weight stays in the mapping at load and is
     * packed for the model's class and compute by the first call that needs it (lazy.c), so a load
     * copies no weight; under BF16 compute an F32 weight is packed as BF16 panels (BF16 compute
     * rounds weights to BF16, as PyTorch's BF16 weights are). `lazy_state` 0: not packed, 1: being
     * packed by a call, 2: `lazy_packed` ready, 3: packing failed (the layer runs unpacked). */
    int lazy;
    uint32_t lazy_state;
    const struct uform__lazy_packed_t *lazy_packed;
} uform__linear_t;

/* LayerNorm parameters, widened to F32. */
typedef struct uform__norm_t {
    const float *weight, *bias; /* [d] each */
} uform__norm_t;

/* A trunk block. Published checkpoints that store the queries, keys and values as three layers
 * (BERT, CLIP and SigLIP in transformers' layout, UForm 3) fill `q`, `k` and `v` and leave `qkv`
 * empty (weight NULL): their three products write the columns of one [T, 3d] buffer, so nothing is
 * concatenated at load. Native and OpenCLIP checkpoints store one fused [3d, d] matrix. */
typedef struct uform__block_t {
    uform__norm_t norm1, norm2;
    uform__linear_t qkv, out, up, down;
    uform__linear_t q, k, v;
} uform__block_t;

/* The activation of a trunk's MLP (and of a sentence-transformers Dense layer). */
typedef enum uform__activation_t {
    UFORM__ACTIVATION_GELU = 0,       /* ½x(1 + erf(x/√2)), torch.nn.GELU(): native, BERT, UForm 3 */
    UFORM__ACTIVATION_GELU_TANH = 1,  /* GELU's tanh form, GELU(approximate='tanh'): SigLIP, "gelu_new" */
    UFORM__ACTIVATION_QUICK_GELU = 2, /* x·σ(1.702x): OpenAI's CLIP */
    UFORM__ACTIVATION_RELU = 3,
    UFORM__ACTIVATION_TANH = 4,       /* sentence-transformers' Dense default */
    UFORM__ACTIVATION_IDENTITY = 5
} uform__activation_t;

/* How an item's final rows become the one row its embedding is made from. */
typedef enum uform__pooling_t {
    UFORM__POOLING_FIRST = 0,      /* the [CLS] row (native, BERT's CLS pooling, CLIP vision, UForm 3) */
    UFORM__POOLING_TOKEN = 1,      /* the row of the first `pool_token` id (CLIP text: end of text) */
    UFORM__POOLING_LAST = 2,       /* the last row (SigLIP text) */
    UFORM__POOLING_MEAN = 3,       /* the mean of the item's rows (sentence-transformers' mean) */
    UFORM__POOLING_MAX = 4,        /* the element-wise maximum */
    UFORM__POOLING_MEAN_SQRT = 5,  /* the sum divided by √rows (sentence-transformers' mean_sqrt_len_tokens) */
    UFORM__POOLING_ATTENTION = 6   /* SigLIP vision's multi-head attention pooling head */
} uform__pooling_t;

/*
 * Where a tower departs from the native trunk and heads (docs/model.md); zeroed for a native
 * checkpoint except eps (1e-6). docs/checkpoints.md names the families' values.
 */
typedef struct uform__architecture_t {
    int published;                 /* 1 for a tower of a published folder (src/published/) */
    int post_norm;                 /* BERT's order: x = norm1(x + attn(x)); x = norm2(x + mlp(x)) */
    int causal;                    /* a token sees itself and the tokens before it (CLIP text) */
    uform__activation_t activation;
    float eps;                     /* the trunk's LayerNorm epsilon */
    uform__pooling_t pooling;
    uint32_t pool_token;           /* UFORM__POOLING_TOKEN: the id whose first row is pooled */
    int pool_argmax;               /* ... or the row of the largest id (CLIP configs whose eos_token_id is 2) */
} uform__architecture_t;

/* A sentence-transformers Dense module (y = act(W·x + b)) after the pooling. */
#define UFORM__MAX_DENSE 4

/* SigLIP's attention pooling head (transformers' SiglipMultiheadAttentionPoolingHead): a learned
 * probe row attends over the item's states with torch.nn.MultiheadAttention, then
 * y = a + mlp(norm(a)) with a the attention's output; y is the pooled row. */
typedef struct uform__attention_pool_t {
    const float *probe;            /* [d] */
    float *query;                  /* [d] the probe's projected query, computed once at load */
    uform__linear_t keys, values;  /* the rows d..2d and 2d..3d of in_proj [3d, d] */
    uform__linear_t out;           /* out_proj */
    uform__norm_t norm;
    uform__linear_t up, down;      /* the MLP, activation as the tower's */
    size_t heads;
} uform__attention_pool_t;

/* A modality's stem and head. Tables are F32 [rows, d]. */
typedef struct uform__stem_t {
    int present;
    const float *modality;   /* modality.{name} [d]; NULL for published towers */
    const float *table;      /* text.bytes [260, d] */
    const float *positions;  /* text/image/audio positions, video.space */
    size_t position_rows;
    const float *time;       /* video.time [F/t, d] */
    const float *cls;        /* image/video/audio cls [d]; NULL where the tower has none (SigLIP) */
    uform__linear_t patch;   /* image/video/audio patch projection */
    uform__norm_t norm;      /* {modality}.norm: the states (weight NULL: states are the trunk's rows) */
    uform__linear_t projection; /* {modality}.projection [E, d]; weight NULL: none (E = d) */
    /* Published towers (src/published/): */
    const void *tokens;      /* the token embedding table [vocabulary, d], F32 or BF16, mapped */
    uform__gemm_dtype_t tokens_dtype;
    size_t vocabulary;
    size_t position_offset;  /* the position row of token 0 (RoBERTa: padding_idx + 1) */
    int positions_from_ids;  /* RoBERTa: token k's row is padding_idx + (non-padding ids among 0..k), and a
                              * padding id's own row is padding_idx (padding_idx = position_offset − 1) */
    int cls_positioned;      /* the class row takes positions[0] and patch k positions[k + 1] (CLIP);
                              * 0: patch k takes positions[k] and the class row none (UForm 3, SigLIP) */
    const float *registers;  /* [register_count, d], after the class row (UForm 3) */
    size_t register_count;
    uform__norm_t embed_norm;/* LayerNorm of the stem's rows before the trunk (BERT, CLIP's pre_layrnorm) */
    float embed_eps;
    uform__linear_t dense[UFORM__MAX_DENSE]; /* sentence-transformers Dense modules, in order */
    uform__activation_t dense_activation[UFORM__MAX_DENSE];
    size_t dense_count;
    uform__attention_pool_t pool; /* UFORM__POOLING_ATTENTION */
} uform__stem_t;

struct uform__published_t;
struct uform__tokenizer_t;
struct uform__sp_model_t;

/*
 * How a published text tower turns a text into its ids (text_ids.c, docs/checkpoints.md):
 * through the folder's tokenizer.json, or SigLIP's spiece.model with transformers'
 * SiglipTokenizer rules; then the tower's limit of `max_tokens` ids: truncated with the special
 * tokens kept (as transformers' truncation=True), or (`slice`, UForm 3's processor) cut by
 * slicing, so a long text loses its final special token; `pad` fills up to max_tokens with
 * `pad_id` for towers that attend to padding (SigLIP).
 */
typedef struct uform__text_rules_t {
    const struct uform__tokenizer_t *tokenizer;
    const struct uform__sp_model_t *sentencepiece;
    size_t max_tokens;
    int slice;
    int pad;
    uint32_t pad_id;
} uform__text_rules_t;

struct uform_model_s {
    uform__model_config_t config;
    uform__architecture_t arch;
    /* A published folder (src/published/) is one model per tower: `towers[m]` is the model that
     * encodes modality m (NULL when absent), each with its own config, blocks and stem; the folder's
     * model itself holds no blocks and owns the towers. A native checkpoint's towers are all NULL:
     * it is its own tower for every modality (uform__model_tower). */
    struct uform_model_s *towers[4];
    struct uform__published_t *published; /* the folder's files, tokenizer and texts (owned); NULL when native */
    uform__text_rules_t text;      /* a published text tower's tokenisation (borrowed from `published`) */
    /* A published folder's tensors for the fingerprint (set by src/published/, NULL otherwise): calls
     * `visit` for every tensor of every weight file, in a fixed order. */
    void (*each_tensor)(const struct uform_model_s *model, void (*visit)(void *state, const uform__safetensors_tensor_t *),
                        void *state);
    /* Frees what src/published/ attached (towers, files, tokenizer); called by uform_model_free. */
    void (*release)(struct uform_model_s *model);
    const struct uform__signal_pil_processor_t *processor; /* an image tower's preprocessing (src/published/) */
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

/* The model that encodes `modality`: a published folder's tower, or a native model itself. */
static inline uform_model_t uform__model_tower(uform_model_t model, uform_modality_t modality) {
    if (!model || (unsigned)modality >= 4) return model;
    return model->towers[modality] ? model->towers[modality] : model;
}

/* Memory the model owns, 64-byte aligned, freed with it (load.c); NULL when it cannot be had. */
void *uform__model_own(uform_model_t model, size_t bytes);

/* `count` elements of a checkpoint's float dtype (F32, BF16 or F16) at `bytes`, which need not be
 * aligned, widened to F32 into `values` (widen.c): what every loader does with a tensor it cannot
 * use in place (the native loader, the published towers, the trainer's checkpoints). */
void uform__model_widen(uform__safetensors_dtype_t dtype, const void *bytes, size_t count, float *values);

/* Packs `layer` once for the model's CPU class and compute (BF16 or F32 panels; nothing for a
 * layer I8 compute runs in int8), in memory the model owns. */
uform_status_t uform__model_pack(uform_model_t model, uform__linear_t *layer, const char *name, uform_outcome_t *outcome,
                                 const char *function);

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
