/*
 * The encode pipeline shared by every verb: items are cut into chunks of at most a few thousand
 * tokens; each chunk goes through its modality's stem (decoding media in parallel), the trunk and
 * the heads, and lands in output views allocated up front in the request's arena, where the chunk's
 * scratch lives too (so a steady loop allocates once). Private to libuform.
 */
#ifndef UFORM_MODEL_ENCODE_H
#define UFORM_MODEL_ENCODE_H

#include "exec/call.h"
#include "kernels/gemm.h"
#include "kernels/nn.h"
#include "kernels/signal.h"
#include "model/model.h"
#include "text/text.h"

/* Where an item's bytes come from. */
typedef enum uform__source_t {
    UFORM__SOURCE_TEXT = 0,
    UFORM__SOURCE_IMAGE_FILES = 1,
    UFORM__SOURCE_IMAGE_PIXELS = 2,
    UFORM__SOURCE_VIDEO_FILES = 3,
    UFORM__SOURCE_AUDIO_FILES = 4,
    UFORM__SOURCE_AUDIO_SAMPLES = 5,
    UFORM__SOURCE_CHOOSE = 6,
    UFORM__SOURCE_VIDEO_FRAMES = 7, /* internal (tests): decoded RGB8 frames [F, H, W, 3] per item, H and W per item */
    UFORM__SOURCE_PREPARED = 8      /* patch rows decoded ahead by uform_media_prepare (see prepare.c) */
} uform__source_t;

/* One call's arguments, gathered from whichever public request struct carried them. */
typedef struct uform__encode_job_t {
    uform_model_t model;
    uform_modality_t modality;
    uform__source_t source;
    const uform_tape_t *inputs;
    const size_t *heights, *widths; /* pixels, video frames */
    size_t sample_rate;             /* samples */
    uform_outputs_t outputs;
    const uform_encode_config_t *config;
    uform_encoded_t *encoded;       /* out (encode verbs) */
    const uform_tape_t *choices;    /* choose */
    const size_t *groups;           /* choose, may be NULL */
    uform_rows_t *probabilities;    /* out (choose) */
    const char *inputs_name;        /* "texts", "images" ... for messages */
    const float *prepared_rows;     /* prepared: [prepared items · rows per item, patch width] */
    size_t prepared_rows_per_item;
    const size_t *prepared_items;   /* prepared: [inputs->count] the prepared item behind each job item */
    /* A published text tower: every item's token ids end to end, item i's at id_offsets[i] ..
     * id_offsets[i + 1] (tokenised by uform__encode_run before the chunks are planned). */
    const uint32_t *ids;
    const size_t *id_offsets;
} uform__encode_job_t;

/* I8 compute's buffers for one call (linear_i8.c), carved from the call's arena. */
typedef struct uform__i8_scratch_t {
    int8_t *rows;           /* quantized activations [capacity rows, up to width bytes each] */
    float *scales;          /* [capacity rows] */
    int32_t *sums;          /* [capacity rows] */
    size_t capacity, width; /* rows and bytes per row the buffers hold */
    void *gemm;             /* the int8 products' scratch (the table's scratch_bytes) */
    size_t gemm_bytes;
    int8_t *unpacked;       /* a call of another class than the model's: one weight's rows ... */
    void *repacked;         /* ... and the same weight packed for the call's class */
    size_t repacked_bytes;
    /* The fused block (trunk_i8.c): per thread, one row block's quantized rows, norm and MLP
     * hidden rows, and its own product scratch; `fused_stride` bytes a thread, NULL when unused. */
    unsigned char *fused;
    size_t fused_stride, fused_threads;
} uform__i8_scratch_t;

/* The kernels and threads a call computes with. */
typedef struct uform__compute_t {
    const uform__gemm_kernels_t *gemm;
    const uform__nn_kernels_t *nn;
    const uform__signal_kernels_t *signal;
    const uform__parallel_t *parallel;
    int packed;                 /* the model's packed weights match this call's class */
    void *gemm_scratch;         /* the products' packing buffers, from the arena (reused by every product) */
    size_t gemm_scratch_bytes;
    /* The compute of the float products. Under the model's I8 compute, the float compute of the
     * layers it keeps float: BF16 where the class has BF16 dot products, else F32 (uform.h). */
    uform_compute_t compute;
    const uform__gemm_i8_kernels_t *i8; /* I8 compute: the call's int8 kernels; NULL otherwise */
    uform__i8_scratch_t i8_scratch;
    double flops;
} uform__compute_t;

/* A published text tower's ids for one text (text_ids.c): `ids` cleared, then filled by the
 * tower's rules (model.h, uform__text_rules_t). Failures name no item (the caller adds it). */
uform_status_t uform__published_text_ids(const uform_model_t model, const char *text, size_t length,
                                         uform__text_ids_t *ids, uform_outcome_t *outcome);

/* Checks what can be checked before submission (writes the request's outcome on failure). */
uform_status_t uform__encode_validate(const uform__encode_job_t *job, uform_outcome_t *outcome, const char *function);

/* Runs a validated job on the executor's thread (the body of every verb's call). */
uform_status_t uform__encode_run(const uform__encode_job_t *job, uform__call_context_t *context);

/* What a linear layer's product does after the sum: nothing, GELU, or add onto y (a residual);
 * or'ed with X_BF16 / Y_BF16 when x is read, or y written, as BF16 instead of F32 (only under BF16
 * compute with BF16 weights on a class whose products round to BF16 anyway, where it changes no
 * bit and saves the conversion pass and half the traffic). */
enum {
    UFORM__LINEAR_PLAIN = 0,
    UFORM__LINEAR_GELU = 1,
    UFORM__LINEAR_ACCUMULATE = 2,
    UFORM__LINEAR_X_BF16 = 4,
    UFORM__LINEAR_Y_BF16 = 8,
    UFORM__LINEAR_F32 = 16,       /* F32 activations even under BF16 compute */
    UFORM__LINEAR_QUICK_GELU = 32, /* x·σ(1.702x) after the bias (CLIP); not with ACCUMULATE */
    UFORM__LINEAR_GELU_TANH = 64,  /* GELU's tanh form after the bias (SigLIP); not with ACCUMULATE */
    UFORM__LINEAR_RELU = 128,
    UFORM__LINEAR_TANH = 256,      /* sentence-transformers' Dense default */
    UFORM__LINEAR_X_QUANTIZED = 512 /* I8: x's rows are already quantized in the call's I8 scratch
                                     * (uform__norm_quantize_i8); the product reads them there */
};

/* The epilogue flag of an activation (UFORM__LINEAR_GELU ... ; 0 for the identity). */
int uform__linear_activation_flag(uform__activation_t activation);
/* The activations the GEMM does not fuse (RELU, TANH: one `flag`) over y [rows, columns] (stride
 * ldy) in place (activation.c). QuickGELU and the tanh GELU are the GEMM's own epilogues. */
struct uform__compute_t;
void uform__linear_activation_apply(const struct uform__compute_t *compute, int flag, float *y, size_t rows,
                                    size_t columns, size_t ldy);
#define UFORM__LINEAR_UNFUSED_ACTIVATIONS (UFORM__LINEAR_RELU | UFORM__LINEAR_TANH)

/* y[m, :] = x[m, :]·Wᵀ + b for a layer (packed weights when `compute->packed`), then the
 * `epilogue` (UFORM__LINEAR_*): GELU, or y[m, :] += instead of =. Under BF16 compute the GELU is
 * the GEMM's fast erf form (|error| ≤ 2e-7·max(1,|x|), far below the BF16 rounding that follows);
 * under F32 compute the exact one. ldx and ldy count elements. */
uform_status_t uform__linear_forward(uform__compute_t *compute, const uform__linear_t *layer, size_t rows,
                                     const void *x, size_t ldx, void *y, size_t ldy, size_t out_rows, int epilogue,
                                     uform_outcome_t *outcome);

/* A published tower's layer packed on first use for the call's class (lazy.c): its panels, or NULL
 * when the call must read the weight unpacked (another call is packing it, or packing failed).
 * `bf16`: the panels the call's products read (BF16 pairs or F32). */
const uform__gemm_packed_t *uform__linear_lazy_packed(const uform__compute_t *compute, const uform__linear_t *layer,
                                                      int bf16);

/* Frees a layer's lazily packed panels (uform_model_free). */
void uform__linear_lazy_release(uform__linear_t *layer);

/* ---- I8 compute (linear_i8.c) ---- */

/* The GEMM epilogue of an int8 product's activation flags (its output is quantized or rounded
 * next, so the erf GELU takes its fast form). */
static inline int uform__linear_i8_gelu(int epilogue) {
    if (epilogue & UFORM__LINEAR_GELU) return UFORM__GEMM_GELU_FAST;
    if (epilogue & UFORM__LINEAR_QUICK_GELU) return UFORM__GEMM_GELU_QUICK;
    if (epilogue & UFORM__LINEAR_GELU_TANH) return UFORM__GEMM_GELU_TANH;
    return UFORM__GEMM_GELU_NONE;
}

/* Whether the product of `layer` runs in int8 in this call. */
static inline int uform__linear_is_i8(const uform__compute_t *compute, const uform__linear_t *layer) {
    return compute->i8 && layer->i8.data;
}

/* Bytes of I8 scratch a call needs for chunks of up to `tokens` rows (0 for other computes),
 * and its carving from `memory` (64-byte aligned) into compute->i8_scratch. */
size_t uform__i8_scratch_bytes(const uform_model_t model, const uform__compute_t *compute, size_t tokens);
void uform__i8_scratch_carve(const uform_model_t model, uform__compute_t *compute, size_t tokens, void *memory);

/* linear_forward for an int8 layer: x [rows, K] (F32, or BF16 with UFORM__LINEAR_X_BF16)
 * quantized per row into the scratch, then the int8 product with the bias, GELU (the fast erf
 * form: its output is quantized next) or accumulate of `epilogue`; y is F32. */
uform_status_t uform__linear_forward_i8(uform__compute_t *compute, const uform__linear_t *layer, size_t rows,
                                        const void *x, size_t ldx, float *y, size_t ldy, int epilogue,
                                        uform_outcome_t *outcome);

/* I8 compute: LayerNorm of x [rows, d] in place (the class's layernorm_forward, statistics into
 * mean and rstd [rows]), each row then quantized into the call's I8 scratch as the next int8
 * product's input, both on the same thread, one prong a range of rows. A post-norm block's norm
 * is followed by an int8 product of its rows (mlp.up; the next block's qkv), which then runs with
 * UFORM__LINEAR_X_QUANTIZED: one parallel loop and one pass over the rows instead of two each.
 * Norm and quantizer are the ones the unfused steps call, row by row, so the results are the same
 * bits. Answers 0 (and only normalises) when the scratch cannot hold the rows. */
int uform__norm_quantize_i8(uform__compute_t *compute, const uform__norm_t *norm, size_t rows, size_t d, float *x,
                            float *mean, float *rstd, float eps);

/* BF16 compute: rounds activations entering a product to BF16 values (nearest even, NaN kept), in
 * place, so the product sees exactly BF16 operands on a class whose BF16 kernels widen instead of
 * rounding (trunk.c). */
void uform__round_to_bf16(float *values, size_t count);

/* Whether a class's BF16 products round their F32 inputs to BF16 themselves (VDPBF16PS: Genoa
 * and later); elsewhere BF16 compute rounds them explicitly with uform__round_to_bf16. */
static inline int uform__gemm_rounds_to_bf16(const uform__gemm_kernels_t *gemm) {
    uform_cpu_class_t c = gemm->cpu_class;
    return c == UFORM_CPU_CLASS_AMD_GENOA || c == UFORM_CPU_CLASS_INTEL_SAPPHIRE || c == UFORM_CPU_CLASS_INTEL_GRANITE ||
           c == UFORM_CPU_CLASS_INTEL_DIAMOND;
}

/* ---- the trunk (trunk.c) ---- */

typedef struct uform__trunk_scratch_t {
    float *a;      /* [T, d] normalised rows */
    float *qkv;    /* [T, 3d] */
    float *att;    /* [T, d] attention out, then any [T, d] temporary */
    float *hidden; /* [T, mlp] */
    float *lse;    /* [H, T] */
    float *mean, *rstd; /* [T] */
} uform__trunk_scratch_t;

/* Floats the trunk's scratch needs for `tokens` tokens. */
size_t uform__trunk_scratch_floats(const uform__model_config_t *config, size_t tokens);
void uform__trunk_scratch_carve(const uform__model_config_t *config, size_t tokens, float *memory,
                                uform__trunk_scratch_t *scratch);

/* A block's products under I8 compute fused per block of rows (trunk_i8.c), bit-identical to the
 * unfused form. The bytes one thread's scratch takes (quantized rows of `width` bytes); whether a
 * block of `rows` rows runs fused on this call (its four products int8, the weights packed for
 * the call's class, the scratch carved, enough rows for every thread); the head
 * qkv [rows, 3d] = norm1(x)·Wqkvᵀ + b; the tail x += attn.out(att), then x += mlp(norm2(x)). */
size_t uform__trunk_i8_fused_stride(const uform__model_config_t *config, const uform__gemm_i8_kernels_t *i8,
                                    size_t width);
int uform__trunk_i8_fuses(const uform__compute_t *compute, const uform__block_t *block, size_t rows);
uform_status_t uform__trunk_i8_head(uform__compute_t *compute, const uform__model_config_t *config,
                                    const uform__block_t *block, size_t rows, const float *x, float *qkv, float eps,
                                    uform_outcome_t *outcome);
uform_status_t uform__trunk_i8_tail(uform__compute_t *compute, const uform__model_config_t *config,
                                    const uform__block_t *block, size_t rows, const float *att, float *x, float eps,
                                    uform_outcome_t *outcome);
/* A whole block per item, each item on one thread (head, attention over all its heads, tail), so
 * that its qkv and attention rows stay in that thread's caches; bit-identical too (attention is per
 * item, head and query block whatever the split). Whether it runs, for a block that fuses: the
 * items split evenly over the threads, two or more each. `lse` [T · H] is scratch here. */
typedef void (*uform__trunk_attention_fn)(const uform__attention_shape_t *shape, const float *qkv, float *out,
                                          float *lse, const uform__parallel_t *parallel);
int uform__trunk_i8_fuses_items(const uform__compute_t *compute, size_t items);
uform_status_t uform__trunk_i8_items(uform__compute_t *compute, const uform__model_config_t *config,
                                     const uform__block_t *block, float *x, const size_t *offsets, size_t items,
                                     uform__trunk_attention_fn attention, float *qkv, float *att, float *lse, float eps,
                                     uform_outcome_t *outcome);

/* x [T, d] (the stems' rows; items at token `offsets`) through every block, in place. Reports one
 * progress unit per block (`done` counts units so far) and stops on cancellation.
 *
 * `keep` (NULL, or [items] absolute token indices) names the one row per item whose final state
 * the caller reads — the [CLS] row when only embeddings are asked for, the [NEXT] row for
 * text_choose. The last block then runs its attention for those query rows only and its out
 * projection, norm and MLP on those rows only: about 3/4 of one block's products saved, so 1/16
 * of a 12-block trunk, with results equal to the full computation's rows (the rows not kept hold
 * the second-to-last block's states afterwards and must not be read). */
uform_status_t uform__trunk_forward(const uform_model_t model, uform__compute_t *compute, float *x, size_t tokens,
                                    const size_t *offsets, size_t items, const size_t *keep,
                                    const uform__trunk_scratch_t *scratch, uform__call_context_t *context,
                                    size_t *done);

#endif
