/*
 * Published checkpoints (docs/checkpoints.md): model folders as people download them — transformers
 * and sentence-transformers (BERT, RoBERTa, XLM-RoBERTa), CLIP in transformers' and OpenCLIP's
 * layouts, SigLIP, UForm 3 — loaded without a conversion step into the engine's towers. Private to
 * libuform.
 *
 *   published.h        this interface: the folder's shared state, the tensor set, tower building
 *   folder.c           uform__published_load: which family a folder is, its JSON files, the towers
 *   tensors.c          the tensor set: one safetensors file, sharded ones with their index, PyTorch files
 *   tower.c            a tower's model: vectors, tables, linear layers (mapped where they can be), blocks
 *   family_bert.c      BERT / RoBERTa / XLM-RoBERTa encoders and sentence-transformers' modules
 *   family_clip.c      CLIP as transformers and OpenCLIP write it
 *   family_siglip.c    SigLIP
 *   family_uform3.c    UForm 3
 *   processor_config.c the image processors' parameters (preprocessor_config.json and friends)
 *
 * A published folder loads as one uform_model_t that owns a model per tower (model.h, `towers`):
 * every encode verb runs on the tower of its modality, through the same stems, trunk and heads as a
 * native checkpoint, with the tower's uform__architecture_t naming where it departs.
 *
 * The model module's loader (load.c) hands a folder to uform__published_load: the one call from
 * src/model/ up into this module, which otherwise builds on model's internals.
 */
#ifndef UFORM_PUBLISHED_PUBLISHED_H
#define UFORM_PUBLISHED_PUBLISHED_H

#include <cJSON.h>

#include "exec/call.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "model/processor.h"

struct uform__family_context_t;

/* ---- the tensor set (tensors.c) ---- */

#define UFORM__TENSOR_FILES_MAX 64

/* The weight files of one tower, searched together by name. A name is found as given, or with
 * the set's `prefix` in front (transformers writes "bert." before a BertModel's names inside a
 * model with heads; a PyTorch file may nest its state dict under a key). */
typedef struct uform__tensor_set_t {
    uform__safetensors_t *safetensors[UFORM__TENSOR_FILES_MAX];
    size_t safetensors_count;
    struct uform__torch_file_t *torch[UFORM__TENSOR_FILES_MAX];
    size_t torch_count;
    char prefix[64];
    char description[512]; /* the files, for messages: "model.safetensors", "2 shards of model.safetensors.index.json" */
} uform__tensor_set_t;

/* Opens `name` (relative to `folder`) as a safetensors file, or a PyTorch file (.bin, .pt, .pth),
 * into the set. */
uform_status_t uform__tensor_set_open(uform__tensor_set_t *set, const char *folder, const char *name,
                                      uform_outcome_t *outcome, const char *function);

/* Opens every shard an index (model.safetensors.index.json, pytorch_model.bin.index.json) names. */
uform_status_t uform__tensor_set_open_index(uform__tensor_set_t *set, const char *folder, const char *index_name,
                                            uform_outcome_t *outcome, const char *function);

/* The tensor called `name` (or prefix + name), or NULL. */
const uform__safetensors_tensor_t *uform__tensor_set_find(const uform__tensor_set_t *set, const char *name);

/* Opens the weights of a transformers model in `folder` + `subfolder` (subfolder "" or ending in
 * '/'): model.safetensors, else model.safetensors.index.json's shards, else pytorch_model.bin,
 * else pytorch_model.bin.index.json's. UFORM_FORMAT when none exists. */
uform_status_t uform__tensor_set_open_transformers(uform__tensor_set_t *set, const char *folder, const char *subfolder,
                                                   uform_outcome_t *outcome, const char *function);

/* Calls `visit` for every tensor of every file (fingerprinting). */
void uform__tensor_set_each(const uform__tensor_set_t *set, void (*visit)(void *state, const uform__safetensors_tensor_t *),
                            void *state);

void uform__tensor_set_close(uform__tensor_set_t *set);

/* ---- the folder's shared state ---- */

typedef struct uform__published_t {
    char family[32];                /* "clip", "open_clip", "siglip", "bert", "roberta", "xlm-roberta", "uform3" */
    char tokenizer_kind[32];        /* "wordpiece", "bpe", "unigram", "sentencepiece" or "" (no text tower) */
    char *folder;
    uform__tensor_set_t sets[4];    /* by modality (towers that share files share slot 0) */
    uform__tensor_set_t dense[UFORM__MAX_DENSE]; /* sentence-transformers Dense modules' own files */
    struct uform__tokenizer_t *tokenizer;
    struct uform__sp_model_t *sentencepiece;
    uform__signal_pil_processor_t processor;
    char *texts;                    /* the JSON files the towers were built from, end to end (fingerprinted) */
    size_t texts_length;
    char note[256];                 /* what the folder has that the engine leaves out ("no text tower: ...") */
} uform__published_t;

/* Frees everything a folder's state owns (towers are freed by their model). NULL is a no-op. */
void uform__published_free(uform__published_t *published);

/*
 * Loads the folder at `path` into `*model` (a model that owns one tower per modality) inside a
 * call running on an executor (`context`): reads the family's JSON files, opens the weights,
 * builds every tower, the tokenizer and the image processor. UFORM_UNSUPPORTED names the
 * architecture, key or value the engine does not run; UFORM_FORMAT a malformed or missing file,
 * key or tensor (with the file and key); UFORM_IO; UFORM_OUT_OF_MEMORY.
 */
uform_status_t uform__published_load(const char *path, uform_cpu_class_t cpu_class, uform_compute_t compute,
                                     uform_model_t *model, uform__call_context_t *context);

/* Fills the published part of a model's description: family, tokenizer, text limit (folder.c). */
void uform__published_describe(const uform_model_t model, uform_model_description_t *description);

/* Whether `name` in `folder` is a regular file (stat: allocates nothing, so a failing allocation
 * cannot pass for a missing file). */
int uform__published_file_exists(const char *folder, const char *name);

/* ---- JSON files (folder.c) ---- */

/* Reads `name` in `folder` as JSON into `*root` (NULL with UFORM_OK when the file does not exist
 * and `optional`), appending its text to the folder's fingerprinted texts. */
uform_status_t uform__published_json(uform__published_t *published, const char *name, int optional, cJSON **root,
                                     uform_outcome_t *outcome, const char *function);

/* Typed reads of a config key with a default: the value, or `fallback` when the key is absent or
 * null. A present key of the wrong type fails the load: `*status` becomes UFORM_FORMAT (once;
 * later reads keep the first failure) with a message naming `file`, the object path and the key. */
typedef struct uform__config_reader_t {
    const char *file;   /* "config.json" */
    const char *path;   /* "text_config" or "" */
    uform_status_t status;
    uform_outcome_t *outcome;
    const char *function;
} uform__config_reader_t;
size_t uform__config_size(uform__config_reader_t *reader, const cJSON *object, const char *key, size_t fallback);
double uform__config_number(uform__config_reader_t *reader, const cJSON *object, const char *key, double fallback);
const char *uform__config_string(uform__config_reader_t *reader, const cJSON *object, const char *key,
                                 const char *fallback);
int uform__config_bool(uform__config_reader_t *reader, const cJSON *object, const char *key, int fallback);
/* A required size: absent is UFORM_FORMAT naming the key. */
size_t uform__config_required(uform__config_reader_t *reader, const cJSON *object, const char *key);

/* ---- building a tower (tower.c) ---- */

/* What a tower's builder reads and writes while it works: the first failure is kept in `status`
 * (every helper does nothing once it is set), tensors come from `set`. */
typedef struct uform__tower_builder_t {
    uform_model_t tower;
    const uform__tensor_set_t *set;
    const size_t *layers; /* uform__tower_blocks: the file's layer number of block i (NULL: i) */
    uform_status_t status;
    uform_outcome_t *outcome;
    const char *function;
} uform__tower_builder_t;

/* A new tower of one modality with the config fields the families share; NULL on memory failure
 * (the builder's status says so). The caller fills the rest and calls uform__tower_finish. */
uform_model_t uform__tower_new(uform__tower_builder_t *builder, uform_modality_t modality, size_t hidden, size_t depth,
                               size_t heads, size_t mlp, size_t embedding);

/* Memory the tower owns (freed with it). */
void *uform__tower_own(uform__tower_builder_t *builder, size_t bytes);

/* The tensor `name` of shape [rows, columns] ([rows] with columns 0) in a float dtype (BF16, F16,
 * F32), up to leading 1s and flattened trailing dimensions (a Conv2d's [d, 3, p, p] is a [d, 3·p·p]
 * matrix; pos_embed's [1, N, d] a [N, d] table). `shape` is the expected shape for the message.
 * NULL on failure. */
const uform__safetensors_tensor_t *uform__tower_tensor(uform__tower_builder_t *builder, const char *name,
                                                       size_t rows, size_t columns, const char *shape);

/* A vector or table widened to F32 (owned). */
const float *uform__tower_floats(uform__tower_builder_t *builder, const char *name, size_t rows, size_t columns);

/* A linear layer [rows, columns] (+ bias [rows] when `bias` is non-NULL): F32 and BF16 weights are
 * mapped in place, F16 widened; `transposed` reads a [columns, rows] matrix used as x·W (OpenCLIP's
 * proj) and lays it out [rows, columns] (a copy). */
void uform__tower_linear(uform__tower_builder_t *builder, uform__linear_t *layer, const char *weight, size_t rows,
                         size_t columns, const char *bias, int transposed);

/* A slice of rows [first, first + rows) of a [*, columns] matrix and its bias, as its own layer
 * (the keys and values of SigLIP's fused in_proj; mapped in place). */
void uform__tower_linear_rows(uform__tower_builder_t *builder, uform__linear_t *layer, const char *weight,
                              size_t total_rows, size_t first, size_t rows, size_t columns, const char *bias);

/* LayerNorm weight and bias [width] as F32 (`prefix`.weight and `prefix`.bias, or the names given). */
void uform__tower_norm(uform__tower_builder_t *builder, uform__norm_t *norm, const char *weight, const char *bias,
                       size_t width);

/* The token table [vocabulary, d]: F32 and BF16 mapped, F16 widened. */
void uform__tower_token_table(uform__tower_builder_t *builder, const char *name, size_t vocabulary);

/* Multiplies a layer's rows (and bias) by a per-row scale, as a copy the tower owns: LayerScale's
 * gamma folded into the product it scales (UForm 3). */
void uform__tower_scale_rows(uform__tower_builder_t *builder, uform__linear_t *layer, const float *scale);

/* The trunk's activation and pooling, and the LayerNorm epsilon of the trunk (as F32) and of the
 * heads (config.norm_eps): what every family but BERT and UForm 3's text tower sets the same way
 * (those two keep the heads' default epsilon). */
void uform__tower_trunk(uform_model_t tower, uform__activation_t activation, double eps, uform__pooling_t pooling);

/* Starts a tower of `modality` of the family's folder, reading tensors from `set`: the builder is
 * ready, the tower holds the load's class and compute, and the model holds the tower in its slot
 * for `modality` (and frees it with itself). NULL on memory failure. */
uform_model_t uform__tower_begin(uform__tower_builder_t *builder, const struct uform__family_context_t *context,
                                 const uform__tensor_set_t *set, uform_modality_t modality, size_t hidden, size_t depth,
                                 size_t heads, size_t mlp, size_t embedding);

/* The tensor names of one trunk block, as printf patterns with one %zu for the layer. Either the
 * fused qkv (OpenCLIP's in_proj) or q, k and v; `scale1` / `scale2` are LayerScale gammas folded
 * into attn.out and mlp.down (NULL without). */
typedef struct uform__block_names_t {
    const char *norm1, *norm1_bias, *norm2, *norm2_bias;
    const char *qkv, *qkv_bias;
    const char *q, *q_bias, *k, *k_bias, *v, *v_bias;
    const char *out, *out_bias, *up, *up_bias, *down, *down_bias;
    const char *scale1, *scale2;
} uform__block_names_t;

/* Every block of the tower from `names` (depth from the tower's config). */
void uform__tower_blocks(uform__tower_builder_t *builder, const uform__block_names_t *names);

/* Packs the trunk's products and the patch projection for the tower's class, prepares I8 compute,
 * and checks the head width; the last step of every family's builder. */
uform_status_t uform__tower_finish(uform__tower_builder_t *builder, const uform__parallel_t *parallel);

/* ---- the families ---- */

/* Each builds the towers of `published` into `model` (a fresh composite) from the parsed config. */
typedef struct uform__family_context_t {
    uform__published_t *published;
    uform_model_t model;
    uform_cpu_class_t cpu_class;
    uform_compute_t compute;
    const uform__parallel_t *parallel;
    uform_outcome_t *outcome;
    const char *function;
} uform__family_context_t;

uform_status_t uform__family_bert(uform__family_context_t *context, const cJSON *config);
uform_status_t uform__family_sentence_transformers(uform__family_context_t *context, const cJSON *config,
                                                   const cJSON *modules);
uform_status_t uform__family_clip(uform__family_context_t *context, const cJSON *config);
uform_status_t uform__family_open_clip(uform__family_context_t *context, const cJSON *config);
uform_status_t uform__family_siglip(uform__family_context_t *context, const cJSON *config);
uform_status_t uform__family_uform3(uform__family_context_t *context, const cJSON *config);

/* Loads the folder's tokenizer from `subfolder` ("" or ending in '/'): tokenizer.json when present,
 * else the SentencePiece model file `sentencepiece` names (NULL: none is read). UFORM_FORMAT when
 * neither exists; the readers' FORMAT / UNSUPPORTED with the file named. */
uform_status_t uform__published_tokenizer(uform__family_context_t *context, const char *subfolder,
                                          const char *sentencepiece);

/* The activation a config names ("gelu", "gelu_new", "gelu_pytorch_tanh", "quick_gelu", "relu");
 * UFORM_UNSUPPORTED naming another. */
uform_status_t uform__published_activation(uform__family_context_t *context, const char *file, const char *name,
                                           uform__activation_t *activation);

/* The image processor of `style` with its defaults for a tower of input side `size` (bicubic,
 * resize, crop where the style crops, rescale 1/255, `mean` and `std`), then, for the CLIP and
 * SigLIP styles, preprocessor_config.json's keys over them (transformers' CLIPImageProcessor and
 * SiglipImageProcessor). OpenCLIP and UForm 3 fill their own keys, then call the check. */
uform_status_t uform__published_processor(uform__family_context_t *context, uform__signal_pil_style_t style,
                                          size_t size, const float *mean, const float *std);

/* Checks the processor makes `size` × `size` pictures of every shape, with a filter it runs. */
uform_status_t uform__published_processor_check(uform__family_context_t *context, size_t size);

/* transformers' CLIP and SigLIP encoder block names under `tower` ("text_model", "vision_model"),
 * written into `storage`. */
void uform__published_clip_block_names(uform__block_names_t *names, char storage[18][128], const char *tower);

/* The text trunk of transformers' CLIPTextTransformer, which SigLIP's text model shares: the token
 * table [vocabulary, d], learned positions [positions, d], the encoder's blocks and the final
 * LayerNorm, all under "text_model.". The caller sets the pooling and the head. */
void uform__published_clip_text_trunk(uform__tower_builder_t *builder, uform__stem_t *stem, size_t vocabulary,
                                      size_t positions, size_t d);

#endif
