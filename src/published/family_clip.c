/*
 * CLIP (Radford et al. 2021) as transformers writes it (CLIPModel: config.json, model.safetensors)
 * and as OpenCLIP writes it (open_clip_config.json, open_clip_model.safetensors or
 * open_clip_pytorch_model.bin) — docs/checkpoints.md, "CLIP in transformers' layout" and "CLIP in
 * OpenCLIP's layout". Both towers are pre-norm with
 * LayerNorm eps 1e-5 and QuickGELU (OpenAI's weights) or GELU:
 *
 *   vision  x = pre_layrnorm([class + pos[0]; patch_k + pos[k + 1]]), blocks, post_layernorm(x[0]),
 *           visual_projection (no bias)
 *   text    x = token[id] + pos[k], causal blocks, final_layer_norm, the end-of-text row,
 *           text_projection (no bias)
 *
 * The end-of-text row is the first position of eos_token_id, or of the largest id where the config
 * says eos_token_id 2 (transformers' rule for configs written before it stored the real id), which
 * OpenCLIP always takes (its end-of-text token has the largest id).
 */
#include <stdio.h>
#include <string.h>

#include "core/outcome.h"
#include "published/published.h"

/* CLIP's normalisation constants (transformers' OPENAI_CLIP_MEAN / _STD). */
static const float clip_mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
static const float clip_std[3] = {0.26862954f, 0.26130258f, 0.27577711f};

/* A tower's sizes and options read from a config section. */
typedef struct tower_shape_t {
    size_t hidden, depth, heads, mlp, positions, vocabulary, image, patch;
    double eps;
    uform__activation_t activation;
    size_t eos;
    int argmax;
} tower_shape_t;

/* A tower's config section: `name` (text_config, vision_config) with the keys of the legacy
 * `<name>_dict` laid over it, as transformers' CLIPConfig merges them (OpenAI's config.json has
 * both). A new object the caller frees with cJSON_Delete (empty without either: every default); NULL
 * only when memory ran out. */
static cJSON *section(const cJSON *config, const char *name, const char *legacy) {
    const cJSON *base = cJSON_GetObjectItemCaseSensitive(config, name);
    const cJSON *over = cJSON_GetObjectItemCaseSensitive(config, legacy);
    cJSON *merged = cJSON_IsObject(base) ? cJSON_Duplicate(base, 1) : cJSON_CreateObject();
    if (!merged || !cJSON_IsObject(over)) return merged;
    const cJSON *item;
    cJSON_ArrayForEach(item, over) {
        cJSON *copy = cJSON_Duplicate(item, 1);
        int kept = copy && (cJSON_GetObjectItemCaseSensitive(merged, item->string)
                                ? cJSON_ReplaceItemInObjectCaseSensitive(merged, item->string, copy)
                                : cJSON_AddItemToObject(merged, item->string, copy));
        if (!kept) { /* out of memory: no half-merged section */
            cJSON_Delete(copy);
            cJSON_Delete(merged);
            return NULL;
        }
    }
    return merged;
}

/* transformers' CLIPTextConfig / CLIPVisionConfig, their defaults where a key is absent. */
static uform_status_t read_shape(uform__family_context_t *context, const cJSON *object, const char *path, int vision,
                                 tower_shape_t *shape) {
    uform__config_reader_t reader = {"config.json", path, UFORM_OK, context->outcome, context->function};
    shape->hidden = uform__config_size(&reader, object, "hidden_size", vision ? 768 : 512);
    shape->depth = uform__config_size(&reader, object, "num_hidden_layers", 12);
    shape->heads = uform__config_size(&reader, object, "num_attention_heads", vision ? 12 : 8);
    shape->mlp = uform__config_size(&reader, object, "intermediate_size", vision ? 3072 : 2048);
    shape->positions = uform__config_size(&reader, object, "max_position_embeddings", 77);
    shape->vocabulary = uform__config_size(&reader, object, "vocab_size", 49408);
    shape->image = uform__config_size(&reader, object, "image_size", 224);
    shape->patch = uform__config_size(&reader, object, "patch_size", 32);
    size_t channels = uform__config_size(&reader, object, "num_channels", 3);
    shape->eps = uform__config_number(&reader, object, "layer_norm_eps", 1e-5);
    shape->eos = uform__config_size(&reader, object, "eos_token_id", 49407);
    const char *act = uform__config_string(&reader, object, "hidden_act", "quick_gelu");
    if (reader.status != UFORM_OK) return reader.status;
    shape->argmax = shape->eos == 2;
    if (vision && (channels != 3 || shape->patch == 0 || shape->image % shape->patch))
        return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                           "config.json: vision_config has %zu channels and patches of %zu on %zu pixels: this engine "
                           "runs RGB pictures cut into whole patches",
                           channels, shape->patch, shape->image);
    return uform__published_activation(context, "config.json", act, &shape->activation);
}

/* The block names of transformers' CLIP and SigLIP encoders under `tower` ("text_model" ...). */
void uform__published_clip_block_names(uform__block_names_t *names, char storage[18][128], const char *tower) {
    static const char *const suffixes[18] = {
        "layer_norm1.weight", "layer_norm1.bias", "layer_norm2.weight", "layer_norm2.bias",
        "self_attn.q_proj.weight", "self_attn.q_proj.bias", "self_attn.k_proj.weight", "self_attn.k_proj.bias",
        "self_attn.v_proj.weight", "self_attn.v_proj.bias", "self_attn.out_proj.weight", "self_attn.out_proj.bias",
        "mlp.fc1.weight", "mlp.fc1.bias", "mlp.fc2.weight", "mlp.fc2.bias", NULL, NULL};
    for (int i = 0; i < 16; ++i) snprintf(storage[i], 128, "%s.encoder.layers.%%zu.%s", tower, suffixes[i]);
    memset(names, 0, sizeof *names);
    names->norm1 = storage[0], names->norm1_bias = storage[1], names->norm2 = storage[2], names->norm2_bias = storage[3];
    names->q = storage[4], names->q_bias = storage[5], names->k = storage[6], names->k_bias = storage[7];
    names->v = storage[8], names->v_bias = storage[9], names->out = storage[10], names->out_bias = storage[11];
    names->up = storage[12], names->up_bias = storage[13], names->down = storage[14], names->down_bias = storage[15];
}

void uform__published_clip_text_trunk(uform__tower_builder_t *builder, uform__stem_t *stem, size_t vocabulary,
                                      size_t positions, size_t d) {
    uform__tower_token_table(builder, "text_model.embeddings.token_embedding.weight", vocabulary);
    stem->positions = uform__tower_floats(builder, "text_model.embeddings.position_embedding.weight", positions, d);
    stem->position_rows = positions;
    char storage[18][128];
    uform__block_names_t names;
    uform__published_clip_block_names(&names, storage, "text_model");
    uform__tower_blocks(builder, &names);
    uform__tower_norm(builder, &stem->norm, "text_model.final_layer_norm.weight", "text_model.final_layer_norm.bias", d);
}

static uform_status_t clip_text(uform__family_context_t *context, const tower_shape_t *shape, size_t embedding,
                                const uform__tensor_set_t *set) {
    uform__tower_builder_t builder;
    uform_model_t tower = uform__tower_begin(&builder, context, set, UFORM_MODALITY_TEXT, shape->hidden, shape->depth,
                                             shape->heads, shape->mlp, embedding);
    if (!tower) return builder.status;
    size_t d = shape->hidden;
    uform__stem_t *stem = &tower->stems[UFORM_MODALITY_TEXT];
    uform__tower_trunk(tower, shape->activation, shape->eps, UFORM__POOLING_TOKEN);
    tower->arch.causal = 1;
    tower->arch.pool_token = (uint32_t)shape->eos;
    tower->arch.pool_argmax = shape->argmax;
    uform__published_clip_text_trunk(&builder, stem, shape->vocabulary, shape->positions, d);
    uform__tower_linear(&builder, &stem->projection, "text_projection.weight", embedding, d, NULL, 0);
    if (builder.status != UFORM_OK) return builder.status;
    uform_status_t status = uform__published_tokenizer(context, "", NULL);
    if (status != UFORM_OK) return status;
    tower->text.tokenizer = context->published->tokenizer;
    tower->text.max_tokens = shape->positions;
    tower->config.text_bytes = shape->positions;
    return uform__tower_finish(&builder, context->parallel);
}

static uform_status_t clip_vision(uform__family_context_t *context, const tower_shape_t *shape, size_t embedding,
                                  const uform__tensor_set_t *set) {
    uform__tower_builder_t builder;
    uform_model_t tower = uform__tower_begin(&builder, context, set, UFORM_MODALITY_IMAGE, shape->hidden, shape->depth,
                                             shape->heads, shape->mlp, embedding);
    if (!tower) return builder.status;
    size_t d = shape->hidden, p = shape->patch, patches = (shape->image / p) * (shape->image / p);
    uform__stem_t *stem = &tower->stems[UFORM_MODALITY_IMAGE];
    uform__tower_trunk(tower, shape->activation, shape->eps, UFORM__POOLING_FIRST);
    tower->config.image_size = shape->image, tower->config.image_patch = p;
    stem->cls = uform__tower_floats(&builder, "vision_model.embeddings.class_embedding", d, 0);
    stem->cls_positioned = 1;
    stem->positions = uform__tower_floats(&builder, "vision_model.embeddings.position_embedding.weight", patches + 1, d);
    stem->position_rows = patches + 1;
    uform__tower_linear(&builder, &stem->patch, "vision_model.embeddings.patch_embedding.weight", d, 3 * p * p, NULL, 0);
    uform__tower_norm(&builder, &stem->embed_norm, "vision_model.pre_layrnorm.weight", "vision_model.pre_layrnorm.bias", d);
    stem->embed_eps = (float)shape->eps;
    char storage[18][128];
    uform__block_names_t names;
    uform__published_clip_block_names(&names, storage, "vision_model");
    uform__tower_blocks(&builder, &names);
    uform__tower_norm(&builder, &stem->norm, "vision_model.post_layernorm.weight", "vision_model.post_layernorm.bias", d);
    uform__tower_linear(&builder, &stem->projection, "visual_projection.weight", embedding, d, NULL, 0);
    if (builder.status != UFORM_OK) return builder.status;
    uform_status_t status =
        uform__published_processor(context, UFORM__SIGNAL_PIL_STYLE_CLIP, shape->image, clip_mean, clip_std);
    if (status != UFORM_OK) return status;
    tower->processor = &context->published->processor;
    return uform__tower_finish(&builder, context->parallel);
}

uform_status_t uform__family_clip(uform__family_context_t *context, const cJSON *config) {
    uform__published_t *published = context->published;
    uform__config_reader_t reader = {"config.json", "", UFORM_OK, context->outcome, context->function};
    size_t embedding = uform__config_size(&reader, config, "projection_dim", 512);
    if (reader.status != UFORM_OK) return reader.status;
    tower_shape_t text, vision;
    cJSON *text_config = section(config, "text_config", "text_config_dict");
    cJSON *vision_config = section(config, "vision_config", "vision_config_dict");
    uform_status_t status = !text_config || !vision_config
                                ? uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function, "cannot allocate memory for config.json's sections")
                                : read_shape(context, text_config, "text_config", 0, &text);
    if (status == UFORM_OK) status = read_shape(context, vision_config, "vision_config", 1, &vision);
    cJSON_Delete(text_config), cJSON_Delete(vision_config);
    if (status == UFORM_OK)
        status = uform__tensor_set_open_transformers(&published->sets[0], published->folder, "", context->outcome,
                                                     context->function);
    if (status == UFORM_OK) status = clip_vision(context, &vision, embedding, &published->sets[0]);
    if (status == UFORM_OK) status = clip_text(context, &text, embedding, &published->sets[0]);
    return status;
}

/* ---- OpenCLIP ---- */

/* OpenCLIP's block names under `tower` ("visual.transformer" or "transformer"). */
static void open_clip_block_names(uform__block_names_t *names, char storage[20][128], const char *tower, int scaled) {
    static const char *const suffixes[14] = {"ln_1.weight", "ln_1.bias", "ln_2.weight", "ln_2.bias",
                                             "attn.in_proj_weight", "attn.in_proj_bias", "attn.out_proj.weight",
                                             "attn.out_proj.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
                                             "mlp.c_proj.weight", "mlp.c_proj.bias", "ls_1.gamma", "ls_2.gamma"};
    for (int i = 0; i < 14; ++i) snprintf(storage[i], 128, "%s.resblocks.%%zu.%s", tower, suffixes[i]);
    memset(names, 0, sizeof *names);
    names->norm1 = storage[0], names->norm1_bias = storage[1], names->norm2 = storage[2], names->norm2_bias = storage[3];
    names->qkv = storage[4], names->qkv_bias = storage[5], names->out = storage[6], names->out_bias = storage[7];
    names->up = storage[8], names->up_bias = storage[9], names->down = storage[10], names->down_bias = storage[11];
    if (scaled) names->scale1 = storage[12], names->scale2 = storage[13];
}

/* open_clip_config.json's "preprocess_cfg": mean, std, interpolation and resize_mode (OpenCLIP's
 * image_transform: Resize of the shortest side + CenterCrop, or "squash", a resize of both sides). */
static uform_status_t open_clip_preprocess(uform__family_context_t *context, const cJSON *preprocess) {
    uform__signal_pil_processor_t *processor = &context->published->processor;
    if (!preprocess) return UFORM_OK;
    uform__config_reader_t reader = {"open_clip_config.json", "preprocess_cfg", UFORM_OK, context->outcome, context->function};
    const char *interpolation = uform__config_string(&reader, preprocess, "interpolation", "bicubic");
    const char *mode = uform__config_string(&reader, preprocess, "resize_mode", "shortest");
    for (int key = 0; key < 2 && reader.status == UFORM_OK; ++key) {
        const cJSON *values = cJSON_GetObjectItemCaseSensitive(preprocess, key ? "std" : "mean");
        if (!values || cJSON_IsNull(values)) continue;
        if (!cJSON_IsArray(values) || cJSON_GetArraySize(values) != 3)
            return uform__fail(context->outcome, UFORM_FORMAT, context->function,
                               "open_clip_config.json: preprocess_cfg.%s is not 3 numbers", key ? "std" : "mean");
        for (int c = 0; c < 3; ++c) {
            const cJSON *value = cJSON_GetArrayItem(values, c);
            if (!cJSON_IsNumber(value))
                return uform__fail(context->outcome, UFORM_FORMAT, context->function,
                                   "open_clip_config.json: preprocess_cfg.%s[%d] is not a number", key ? "std" : "mean", c);
            (key ? processor->std : processor->mean)[c] = (float)value->valuedouble;
        }
    }
    if (reader.status != UFORM_OK) return reader.status;
    size_t fill = uform__config_size(&reader, preprocess, "fill_color", 0);
    if (reader.status != UFORM_OK) return reader.status;
    /* OpenCLIP's "random" interpolation is bicubic at inference. */
    if (strcmp(interpolation, "bicubic") == 0 || strcmp(interpolation, "random") == 0)
        processor->filter = UFORM__SIGNAL_PIL_BICUBIC;
    else if (strcmp(interpolation, "bilinear") == 0) processor->filter = UFORM__SIGNAL_PIL_BILINEAR;
    else
        return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                           "open_clip_config.json: preprocess_cfg.interpolation '%s' is none of bicubic, bilinear, random",
                           interpolation);
    if (strcmp(mode, "shortest") == 0) processor->resize_mode = UFORM__SIGNAL_PIL_SHORTEST;
    else if (strcmp(mode, "longest") == 0) processor->resize_mode = UFORM__SIGNAL_PIL_LONGEST;
    else if (strcmp(mode, "squash") == 0) processor->resize_mode = UFORM__SIGNAL_PIL_SQUASH;
    else
        return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                           "open_clip_config.json: preprocess_cfg.resize_mode '%s' is none of shortest, longest, squash", mode);
    if (fill > 255)
        return uform__fail(context->outcome, UFORM_FORMAT, context->function,
                           "open_clip_config.json: preprocess_cfg.fill_color %zu is not a byte", fill);
    processor->fill = (uint8_t)fill;
    return UFORM_OK;
}

/* The keys by which OpenCLIP configures towers other than its own ViT and text transformer (timm
 * and Hugging Face towers, ResNets, CoCa's attentional pooling, other poolings and projections):
 * UFORM_UNSUPPORTED naming the first one set. */
static uform_status_t open_clip_refuse(uform__family_context_t *context, const cJSON *tower, const char *name,
                                       int vision) {
    static const char *const named[4] = {"timm_model_name", "hf_model_name", "hf_tokenizer_name", "hf_pooler_type"};
    static const char *const flags[6] = {"attentional_pool", "final_ln_after_pool", "no_ln_pre", "embed_cls",
                                         "no_causal_mask", "proj_bias"};
    for (int i = 0; i < 4; ++i) {
        const cJSON *item = cJSON_GetObjectItemCaseSensitive(tower, named[i]);
        if (cJSON_IsString(item) && item->valuestring[0] && !(i == 2 && vision))
            return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                               "open_clip_config.json: %s.%s '%s': this engine runs OpenCLIP's own ViT and text "
                               "transformer, not towers from other libraries",
                               name, named[i], item->valuestring);
    }
    for (int i = 0; i < 6; ++i)
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(tower, flags[i])))
            return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                               "open_clip_config.json: %s.%s is set: an architecture this engine does not run", name,
                               flags[i]);
    if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(tower, "layers")))
        return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                           "open_clip_config.json: %s.layers is a list: a ResNet tower, not a ViT", name);
    const cJSON *pool = cJSON_GetObjectItemCaseSensitive(tower, "pool_type");
    const char *expected = vision ? "tok" : "argmax";
    if (cJSON_IsString(pool) && strcmp(pool->valuestring, expected) != 0)
        return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                           "open_clip_config.json: %s.pool_type '%s' (this engine pools '%s')", name, pool->valuestring,
                           expected);
    const cJSON *projection = cJSON_GetObjectItemCaseSensitive(tower, "proj_type");
    if (cJSON_IsString(projection) && strcmp(projection->valuestring, "linear") != 0)
        return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                           "open_clip_config.json: %s.proj_type '%s' (this engine runs the linear projection)", name,
                           projection->valuestring);
    return UFORM_OK;
}

uform_status_t uform__family_open_clip(uform__family_context_t *context, const cJSON *root) {
    uform__published_t *published = context->published;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model_cfg");
    if (!cJSON_IsObject(model))
        return uform__fail(context->outcome, UFORM_FORMAT, context->function, "open_clip_config.json has no \"model_cfg\" object");
    const cJSON *vision_cfg = cJSON_GetObjectItemCaseSensitive(model, "vision_cfg");
    const cJSON *text_cfg = cJSON_GetObjectItemCaseSensitive(model, "text_cfg");
    uform__config_reader_t reader = {"open_clip_config.json", "model_cfg", UFORM_OK, context->outcome, context->function};
    size_t embedding = uform__config_required(&reader, model, "embed_dim");
    int quick = uform__config_bool(&reader, model, "quick_gelu", 0);
    uform_status_t refused = open_clip_refuse(context, vision_cfg, "vision_cfg", 1);
    if (refused == UFORM_OK) refused = open_clip_refuse(context, text_cfg, "text_cfg", 0);
    if (refused != UFORM_OK) return refused;
    reader.path = "model_cfg.vision_cfg";
    tower_shape_t vision = {0}, text = {0};
    vision.hidden = uform__config_required(&reader, vision_cfg, "width");
    vision.depth = uform__config_required(&reader, vision_cfg, "layers");
    vision.image = uform__config_size(&reader, vision_cfg, "image_size", 224);
    vision.patch = uform__config_required(&reader, vision_cfg, "patch_size");
    size_t head_width = uform__config_size(&reader, vision_cfg, "head_width", 64);
    double ratio = uform__config_number(&reader, vision_cfg, "mlp_ratio", 4.0);
    double scale = uform__config_number(&reader, vision_cfg, "ls_init_value", 0.0);
    vision.heads = head_width ? vision.hidden / head_width : 0;
    vision.mlp = (size_t)(vision.hidden * ratio);
    reader.path = "model_cfg.text_cfg";
    text.hidden = uform__config_size(&reader, text_cfg, "width", 512);
    text.depth = uform__config_size(&reader, text_cfg, "layers", 12);
    text.heads = uform__config_size(&reader, text_cfg, "heads", 8);
    text.positions = uform__config_size(&reader, text_cfg, "context_length", 77);
    text.vocabulary = uform__config_size(&reader, text_cfg, "vocab_size", 49408);
    double text_ratio = uform__config_number(&reader, text_cfg, "mlp_ratio", 4.0);
    double text_scale = uform__config_number(&reader, text_cfg, "ls_init_value", 0.0);
    text.mlp = (size_t)(text.hidden * text_ratio);
    if (reader.status != UFORM_OK) return reader.status;
    if (vision.patch == 0 || vision.image % vision.patch || vision.heads == 0)
        return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                           "open_clip_config.json: vision_cfg patches of %zu on %zu pixels with heads of %zu", vision.patch,
                           vision.image, head_width);
    vision.eps = text.eps = 1e-5;
    vision.activation = text.activation = quick ? UFORM__ACTIVATION_QUICK_GELU : UFORM__ACTIVATION_GELU;
    uform__tensor_set_t *set = &published->sets[0];
    static const char *const files[2] = {"open_clip_model.safetensors", "open_clip_pytorch_model.bin"};
    uform_status_t status = UFORM_FORMAT;
    for (int i = 0; i < 2 && status != UFORM_OK; ++i) {
        if (!uform__published_file_exists(published->folder, files[i])) continue;
        status = uform__tensor_set_open(set, published->folder, files[i], context->outcome, context->function);
        if (status != UFORM_OK) return status;
    }
    if (status != UFORM_OK)
        return uform__fail(context->outcome, UFORM_FORMAT, context->function,
                           "'%s' has open_clip_config.json but neither open_clip_model.safetensors nor "
                           "open_clip_pytorch_model.bin",
                           published->folder);

    /* The vision tower. */
    uform__tower_builder_t builder;
    uform_model_t tower = uform__tower_begin(&builder, context, set, UFORM_MODALITY_IMAGE, vision.hidden, vision.depth,
                                             vision.heads, vision.mlp, embedding);
    if (!tower) return builder.status;
    size_t d = vision.hidden, p = vision.patch, patches = (vision.image / p) * (vision.image / p);
    uform__stem_t *stem = &tower->stems[UFORM_MODALITY_IMAGE];
    uform__tower_trunk(tower, vision.activation, 1e-5, UFORM__POOLING_FIRST);
    tower->config.image_size = vision.image, tower->config.image_patch = p;
    stem->cls = uform__tower_floats(&builder, "visual.class_embedding", d, 0);
    stem->cls_positioned = 1;
    stem->positions = uform__tower_floats(&builder, "visual.positional_embedding", patches + 1, d);
    stem->position_rows = patches + 1;
    uform__tower_linear(&builder, &stem->patch, "visual.conv1.weight", d, 3 * p * p, NULL, 0);
    uform__tower_norm(&builder, &stem->embed_norm, "visual.ln_pre.weight", "visual.ln_pre.bias", d);
    stem->embed_eps = 1e-5f;
    char storage[20][128];
    uform__block_names_t names;
    open_clip_block_names(&names, storage, "visual.transformer", scale > 0.0);
    uform__tower_blocks(&builder, &names);
    uform__tower_norm(&builder, &stem->norm, "visual.ln_post.weight", "visual.ln_post.bias", d);
    uform__tower_linear(&builder, &stem->projection, "visual.proj", embedding, d, NULL, 1);
    if (builder.status != UFORM_OK) return builder.status;
    status = uform__published_processor(context, UFORM__SIGNAL_PIL_STYLE_OPEN_CLIP, vision.image, clip_mean, clip_std);
    if (status == UFORM_OK) status = open_clip_preprocess(context, cJSON_GetObjectItemCaseSensitive(root, "preprocess_cfg"));
    if (status == UFORM_OK) status = uform__published_processor_check(context, vision.image);
    if (status != UFORM_OK) return status;
    tower->processor = &published->processor;
    status = uform__tower_finish(&builder, context->parallel);
    if (status != UFORM_OK) return status;

    /* The text tower needs a tokenizer the folder holds: OpenCLIP's own ships inside its package. */
    if (!uform__published_file_exists(published->folder, "tokenizer.json")) {
        snprintf(published->note, sizeof published->note,
                 "no text tower: the folder has no tokenizer.json (OpenCLIP's tokenizer ships inside its Python package)");
        return UFORM_OK;
    }
    tower = uform__tower_begin(&builder, context, set, UFORM_MODALITY_TEXT, text.hidden, text.depth, text.heads, text.mlp,
                               embedding);
    if (!tower) return builder.status;
    d = text.hidden;
    stem = &tower->stems[UFORM_MODALITY_TEXT];
    uform__tower_trunk(tower, text.activation, 1e-5, UFORM__POOLING_TOKEN);
    tower->arch.causal = 1, tower->arch.pool_argmax = 1;
    uform__tower_token_table(&builder, "token_embedding.weight", text.vocabulary);
    stem->positions = uform__tower_floats(&builder, "positional_embedding", text.positions, d);
    stem->position_rows = text.positions;
    open_clip_block_names(&names, storage, "transformer", text_scale > 0.0);
    uform__tower_blocks(&builder, &names);
    uform__tower_norm(&builder, &stem->norm, "ln_final.weight", "ln_final.bias", d);
    uform__tower_linear(&builder, &stem->projection, "text_projection", embedding, d, NULL, 1);
    if (builder.status != UFORM_OK) return builder.status;
    status = uform__published_tokenizer(context, "", NULL);
    if (status != UFORM_OK) return status;
    tower->text.tokenizer = published->tokenizer;
    tower->text.max_tokens = text.positions;
    tower->config.text_bytes = text.positions;
    return uform__tower_finish(&builder, context->parallel);
}
