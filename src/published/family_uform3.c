/*
 * UForm 3 (unum-cloud/uform3-image-text-*: its Python package's torch_encoders.py and
 * torch_processors.py; docs/checkpoints.md, "UForm 3"):
 *
 *   image  pre-norm ViT, LayerNorm eps 1e-6, exact GELU, LayerScale gammas after attention and MLP
 *          (folded into attn.out and mlp.output_layer at load); patches + pos_embed, then the class
 *          token and `num_reg_tokens` register rows put in front without positions; `norm` on every
 *          row; the class row ("cls" pooling) or the mean of all rows; embedding_projection
 *   text   post-norm BERT (eps 1e-12): LayerNorm(word[id] + position[k]) (RoBERTa-type towers count
 *          positions from padding_idx + 1); the blocks listed in multimodal_layers_ids carry cross-
 *          attention and are skipped whole when a text is embedded alone (TextEncoder.forward_features
 *          runs only the others); the [CLS] row or the mean of the text's rows; embedding_projection
 *
 * Texts are cut as UForm 3's TextProcessor cuts them: tokenised without a limit, then the ids
 * sliced at max_position_embeddings, so a long text loses its final [SEP]; the padding it adds is
 * masked out, so the engine runs the real ids alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "published/published.h"

/* The weights of one tower: <name>_encoder.safetensors or .pt, or one merged PyTorch file holding
 * both under "<name>_encoder." keys. */
static uform_status_t open_weights(uform__family_context_t *context, uform__tensor_set_t *set, const char *name) {
    const char *folder = context->published->folder;
    static const char *const merged[3] = {"torch_weight.pt", "weight.pt", "model.pt"};
    char file[64];
    static const char *const extensions[2] = {".safetensors", ".pt"};
    for (int i = 0; i < 2; ++i) {
        snprintf(file, sizeof file, "%s_encoder%s", name, extensions[i]);
        if (!uform__published_file_exists(folder, file)) continue;
        uform_status_t status = uform__tensor_set_open(set, folder, file, context->outcome, context->function);
        if (status == UFORM_OK) snprintf(set->prefix, sizeof set->prefix, "%s_encoder.", name);
        return status;
    }
    for (int i = 0; i < 3; ++i) {
        if (!uform__published_file_exists(folder, merged[i])) continue;
        uform_status_t status = uform__tensor_set_open(set, folder, merged[i], context->outcome, context->function);
        if (status == UFORM_OK) snprintf(set->prefix, sizeof set->prefix, "%s_encoder.", name);
        return status;
    }
    return uform__fail(context->outcome, UFORM_FORMAT, context->function,
                       "'%s' has a %s_encoder section in its config but no %s_encoder.safetensors, %s_encoder.pt or "
                       "merged torch_weight.pt",
                       folder, name, name, name);
}

/* The Matryoshka prefixes UForm 3's cards name below the whole width: 64 and 256 (the small, base
 * and multilingual cards, up to their 256), and 512 (the large card: 64, 256, 512, 768). */
static void matryoshka(uform_model_t tower) {
    uform__model_config_t *config = &tower->config;
    static const size_t prefixes[3] = {64, 256, 512};
    config->matryoshka_count = 0;
    for (int i = 0; i < 3; ++i)
        if (prefixes[i] < config->embedding) config->matryoshka[config->matryoshka_count++] = prefixes[i];
    config->matryoshka[config->matryoshka_count++] = config->embedding;
}

static uform_status_t image_tower(uform__family_context_t *context, const cJSON *section) {
    uform__published_t *published = context->published;
    uform__config_reader_t reader = {"config.json", "image_encoder", UFORM_OK, context->outcome, context->function};
    size_t d = uform__config_required(&reader, section, "dim");
    size_t p = uform__config_required(&reader, section, "patch_size");
    size_t size = uform__config_required(&reader, section, "image_size");
    size_t depth = uform__config_required(&reader, section, "num_layers");
    size_t heads = uform__config_required(&reader, section, "num_heads");
    size_t embedding = uform__config_required(&reader, section, "embedding_dim");
    const char *pooling = uform__config_string(&reader, section, "pooling", "cls");
    size_t registers = uform__config_size(&reader, section, "num_reg_tokens", 0);
    float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f}, std[3] = {0.26862954f, 0.26130258f, 0.27577711f};
    const char *keys[2] = {"normalization_means", "normalization_deviations"};
    for (int k = 0; k < 2 && reader.status == UFORM_OK; ++k) {
        const cJSON *values = cJSON_GetObjectItemCaseSensitive(section, keys[k]);
        if (!cJSON_IsArray(values) || cJSON_GetArraySize(values) != 3)
            return uform__fail(context->outcome, UFORM_FORMAT, context->function,
                               "config.json: image_encoder.%s is not 3 numbers", keys[k]);
        for (int c = 0; c < 3; ++c) {
            const cJSON *value = cJSON_GetArrayItem(values, c);
            if (!cJSON_IsNumber(value))
                return uform__fail(context->outcome, UFORM_FORMAT, context->function,
                                   "config.json: image_encoder.%s[%d] is not a number", keys[k], c);
            (k ? std : mean)[c] = (float)value->valuedouble;
        }
    }
    if (reader.status != UFORM_OK) return reader.status;
    if (p == 0 || size % p)
        return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                           "config.json: image_encoder patches of %zu on %zu pixels", p, size);
    uform__tensor_set_t *set = &published->sets[UFORM_MODALITY_IMAGE];
    uform_status_t status = open_weights(context, set, "image");
    if (status != UFORM_OK) return status;
    uform__tower_builder_t builder;
    uform_model_t tower = uform__tower_begin(&builder, context, set, UFORM_MODALITY_IMAGE, d, depth, heads, 4 * d, embedding);
    if (!tower) return builder.status;
    size_t patches = (size / p) * (size / p);
    uform__stem_t *stem = &tower->stems[UFORM_MODALITY_IMAGE];
    uform__tower_trunk(tower, UFORM__ACTIVATION_GELU, 1e-6,
                       strcmp(pooling, "cls") == 0 ? UFORM__POOLING_FIRST : UFORM__POOLING_MEAN);
    tower->config.image_size = size, tower->config.image_patch = p;
    matryoshka(tower);
    uform__tower_linear(&builder, &stem->patch, "patch_embed.weight", d, 3 * p * p, "patch_embed.bias", 0);
    stem->positions = uform__tower_floats(&builder, "pos_embed", patches, d);
    stem->position_rows = patches;
    stem->cls = uform__tower_floats(&builder, "cls_token", d, 0);
    if (registers) stem->registers = uform__tower_floats(&builder, "reg_token", registers, d);
    stem->register_count = registers;
    uform__block_names_t names = {
        .norm1 = "blocks.%zu.norm1.weight", .norm1_bias = "blocks.%zu.norm1.bias",
        .norm2 = "blocks.%zu.norm2.weight", .norm2_bias = "blocks.%zu.norm2.bias",
        .q = "blocks.%zu.attn.query.weight", .q_bias = "blocks.%zu.attn.query.bias",
        .k = "blocks.%zu.attn.key.weight", .k_bias = "blocks.%zu.attn.key.bias",
        .v = "blocks.%zu.attn.value.weight", .v_bias = "blocks.%zu.attn.value.bias",
        .out = "blocks.%zu.attn.out.weight", .out_bias = "blocks.%zu.attn.out.bias",
        .up = "blocks.%zu.mlp.hidden_layer.weight", .up_bias = "blocks.%zu.mlp.hidden_layer.bias",
        .down = "blocks.%zu.mlp.output_layer.weight", .down_bias = "blocks.%zu.mlp.output_layer.bias",
        .scale1 = "blocks.%zu.ls1.gamma", .scale2 = "blocks.%zu.ls2.gamma",
    };
    uform__tower_blocks(&builder, &names);
    uform__tower_norm(&builder, &stem->norm, "norm.weight", "norm.bias", d);
    uform__tower_linear(&builder, &stem->projection, "embedding_projection.weight", embedding, d, NULL, 0);
    if (builder.status != UFORM_OK) return builder.status;
    status = uform__published_processor(context, UFORM__SIGNAL_PIL_STYLE_UFORM3, size, mean, std);
    if (status == UFORM_OK) status = uform__published_processor_check(context, size);
    if (status != UFORM_OK) return status;
    tower->processor = &published->processor;
    return uform__tower_finish(&builder, context->parallel);
}

static uform_status_t text_tower(uform__family_context_t *context, const cJSON *section) {
    uform__published_t *published = context->published;
    uform__config_reader_t reader = {"config.json", "text_encoder", UFORM_OK, context->outcome, context->function};
    const char *model_type = uform__config_string(&reader, section, "model_type", "bert");
    size_t d = uform__config_required(&reader, section, "dim");
    size_t vocabulary = uform__config_required(&reader, section, "vocab_size");
    size_t padding = uform__config_size(&reader, section, "padding_idx", 0);
    size_t depth = uform__config_required(&reader, section, "num_layers");
    size_t heads = uform__config_required(&reader, section, "num_heads");
    size_t embedding = uform__config_required(&reader, section, "embedding_dim");
    size_t positions = uform__config_size(&reader, section, "max_position_embeddings", 77);
    const char *pooling = uform__config_string(&reader, section, "pooling", "cls");
    if (reader.status != UFORM_OK) return reader.status;
    int roberta = strcmp(model_type, "roberta") == 0;
    if (!roberta && strcmp(model_type, "bert") != 0)
        return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                           "config.json: text_encoder.model_type '%s' is neither bert nor roberta", model_type);
    size_t offset = roberta ? padding + 1 : 0;
    if (positions <= offset)
        return uform__fail(context->outcome, UFORM_FORMAT, context->function,
                           "config.json: text_encoder.max_position_embeddings %zu leaves no position past %zu", positions, offset);
    /* The layers that run on text alone: those not in multimodal_layers_ids, in order. */
    const cJSON *multimodal = cJSON_GetObjectItemCaseSensitive(section, "multimodal_layers_ids");
    if (multimodal && !cJSON_IsArray(multimodal))
        return uform__fail(context->outcome, UFORM_FORMAT, context->function,
                           "config.json: text_encoder.multimodal_layers_ids is not a list of layer numbers");
    size_t *layers = calloc(depth ? depth : 1, sizeof *layers), kept = 0;
    if (!layers) return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function, "cannot allocate the layer list");
    for (size_t i = 0; i < depth; ++i) {
        int skipped = 0;
        const cJSON *id;
        cJSON_ArrayForEach(id, multimodal) skipped |= cJSON_IsNumber(id) && id->valuedouble == (double)i;
        if (!skipped) layers[kept++] = i;
    }
    uform__tensor_set_t *set = &published->sets[UFORM_MODALITY_TEXT];
    uform_status_t status = open_weights(context, set, "text");
    if (status != UFORM_OK) return status;
    uform__tower_builder_t builder;
    uform_model_t tower = uform__tower_begin(&builder, context, set, UFORM_MODALITY_TEXT, d, kept, heads, 4 * d, embedding);
    if (!tower) {
        free(layers);
        return builder.status;
    }
    builder.layers = layers;
    uform__stem_t *stem = &tower->stems[UFORM_MODALITY_TEXT];
    tower->arch.post_norm = 1, tower->arch.activation = UFORM__ACTIVATION_GELU, tower->arch.eps = 1e-12f;
    tower->arch.pooling = strcmp(pooling, "cls") == 0 ? UFORM__POOLING_FIRST : UFORM__POOLING_MEAN;
    matryoshka(tower);
    uform__tower_token_table(&builder, "word_embeddings.weight", vocabulary);
    stem->positions = uform__tower_floats(&builder, "position_embeddings.weight", positions, d);
    stem->position_rows = positions, stem->position_offset = offset;
    stem->positions_from_ids = roberta;
    uform__tower_norm(&builder, &stem->embed_norm, "layer_norm.weight", "layer_norm.bias", d);
    stem->embed_eps = 1e-12f;
    uform__block_names_t names = {
        .norm1 = "blocks.%zu.norm_attn.weight", .norm1_bias = "blocks.%zu.norm_attn.bias",
        .norm2 = "blocks.%zu.norm_mlp.weight", .norm2_bias = "blocks.%zu.norm_mlp.bias",
        .q = "blocks.%zu.attention.query.weight", .q_bias = "blocks.%zu.attention.query.bias",
        .k = "blocks.%zu.attention.key.weight", .k_bias = "blocks.%zu.attention.key.bias",
        .v = "blocks.%zu.attention.value.weight", .v_bias = "blocks.%zu.attention.value.bias",
        .out = "blocks.%zu.attention.out.weight", .out_bias = "blocks.%zu.attention.out.bias",
        .up = "blocks.%zu.mlp.hidden_layer.weight", .up_bias = "blocks.%zu.mlp.hidden_layer.bias",
        .down = "blocks.%zu.mlp.output_layer.weight", .down_bias = "blocks.%zu.mlp.output_layer.bias",
    };
    uform__tower_blocks(&builder, &names);
    free(layers);
    builder.layers = NULL;
    uform__tower_linear(&builder, &stem->projection, "embedding_projection.weight", embedding, d, NULL, 0);
    if (builder.status != UFORM_OK) return builder.status;
    status = uform__published_tokenizer(context, "", NULL);
    if (status != UFORM_OK) return status;
    tower->text.tokenizer = published->tokenizer;
    tower->text.slice = 1;
    /* A RoBERTa-type tower's positions run from padding_idx + 1: its table holds that many fewer texts' tokens. */
    tower->text.max_tokens = positions - offset;
    tower->config.text_bytes = tower->text.max_tokens;
    return uform__tower_finish(&builder, context->parallel);
}

uform_status_t uform__family_uform3(uform__family_context_t *context, const cJSON *config) {
    const cJSON *image = cJSON_GetObjectItemCaseSensitive(config, "image_encoder");
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(config, "text_encoder");
    uform_status_t status = UFORM_OK;
    if (cJSON_IsObject(image)) status = image_tower(context, image);
    if (status == UFORM_OK && cJSON_IsObject(text)) status = text_tower(context, text);
    return status;
}
