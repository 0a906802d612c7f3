/*
 * SigLIP (Zhai et al. 2023) as transformers writes it (SiglipModel; docs/checkpoints.md, "SigLIP"):
 * pre-norm towers with LayerNorm eps 1e-6 and GELU's tanh form, like CLIP's but
 *
 *   vision  no class token: x = patch_k + pos[k]; blocks; post_layernorm on every row; the
 *           attention pooling head (a probe attending over the rows, then a residual MLP); no
 *           projection (the embedding is d wide)
 *   text    x = token[id] + pos[k] over the text padded to 64 ids with the pad id and attended
 *           WITHOUT a mask (as SigLIP was trained), final_layer_norm, the LAST row, then `head`,
 *           a linear layer with a bias
 *
 * google/siglip-* folders ship spiece.model and no tokenizer.json: their ids are transformers'
 * SiglipTokenizer's (text/sentencepiece.h, uform__sp_siglip_encode).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/outcome.h"
#include "kernels/nn.h"
#include "published/published.h"
#include "text/tokenizer.h"

typedef struct siglip_shape_t {
    size_t hidden, depth, heads, mlp, positions, vocabulary, image, patch, projection;
    double eps;
    uform__activation_t activation;
    int head;
} siglip_shape_t;

static uform_status_t read_shape(uform__family_context_t *context, const cJSON *object, const char *path, int vision,
                                 siglip_shape_t *shape) {
    uform__config_reader_t reader = {"config.json", path, UFORM_OK, context->outcome, context->function};
    shape->hidden = uform__config_size(&reader, object, "hidden_size", 768);
    shape->depth = uform__config_size(&reader, object, "num_hidden_layers", 12);
    shape->heads = uform__config_size(&reader, object, "num_attention_heads", 12);
    shape->mlp = uform__config_size(&reader, object, "intermediate_size", 3072);
    shape->positions = uform__config_size(&reader, object, "max_position_embeddings", 64);
    shape->vocabulary = uform__config_size(&reader, object, "vocab_size", 32000);
    shape->image = uform__config_size(&reader, object, "image_size", 224);
    shape->patch = uform__config_size(&reader, object, "patch_size", 16);
    shape->projection = uform__config_size(&reader, object, "projection_size", shape->hidden);
    size_t channels = uform__config_size(&reader, object, "num_channels", 3);
    shape->eps = uform__config_number(&reader, object, "layer_norm_eps", 1e-6);
    shape->head = uform__config_bool(&reader, object, "vision_use_head", 1);
    const char *act = uform__config_string(&reader, object, "hidden_act", "gelu_pytorch_tanh");
    if (reader.status != UFORM_OK) return reader.status;
    if (vision && (channels != 3 || shape->patch == 0 || shape->image % shape->patch))
        return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                           "config.json: vision_config has %zu channels and patches of %zu on %zu pixels", channels,
                           shape->patch, shape->image);
    if (vision && !shape->head)
        return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                           "config.json: vision_config.vision_use_head is false: the tower has no pooling head to embed with");
    return uform__published_activation(context, "config.json", act, &shape->activation);
}

static uform_status_t siglip_vision(uform__family_context_t *context, const siglip_shape_t *shape,
                                    const uform__tensor_set_t *set) {
    uform__tower_builder_t builder;
    size_t d = shape->hidden, p = shape->patch, patches = (shape->image / p) * (shape->image / p);
    uform_model_t tower =
        uform__tower_begin(&builder, context, set, UFORM_MODALITY_IMAGE, d, shape->depth, shape->heads, shape->mlp, d);
    if (!tower) return builder.status;
    uform__stem_t *stem = &tower->stems[UFORM_MODALITY_IMAGE];
    uform__tower_trunk(tower, shape->activation, shape->eps, UFORM__POOLING_ATTENTION);
    tower->config.image_size = shape->image, tower->config.image_patch = p;
    stem->positions = uform__tower_floats(&builder, "vision_model.embeddings.position_embedding.weight", patches, d);
    stem->position_rows = patches;
    uform__tower_linear(&builder, &stem->patch, "vision_model.embeddings.patch_embedding.weight", d, 3 * p * p,
                        "vision_model.embeddings.patch_embedding.bias", 0);
    char storage[18][128];
    uform__block_names_t names;
    uform__published_clip_block_names(&names, storage, "vision_model");
    uform__tower_blocks(&builder, &names);
    uform__tower_norm(&builder, &stem->norm, "vision_model.post_layernorm.weight", "vision_model.post_layernorm.bias", d);
    /* The pooling head: the probe's query once, keys and values as one [2d, d] product. */
    uform__attention_pool_t *pool = &stem->pool;
    pool->heads = shape->heads;
    pool->probe = uform__tower_floats(&builder, "vision_model.head.probe", d, 0);
    uform__linear_t query;
    uform__tower_linear_rows(&builder, &query, "vision_model.head.attention.in_proj_weight", 3 * d, 0, d, d,
                             "vision_model.head.attention.in_proj_bias");
    uform__tower_linear_rows(&builder, &pool->keys, "vision_model.head.attention.in_proj_weight", 3 * d, d, 2 * d, d,
                             "vision_model.head.attention.in_proj_bias");
    /* in_proj and its bias were read twice (queries, then keys and values): count them once. */
    const uform__safetensors_tensor_t *in_proj = uform__tensor_set_find(set, "vision_model.head.attention.in_proj_weight");
    const uform__safetensors_tensor_t *in_bias = uform__tensor_set_find(set, "vision_model.head.attention.in_proj_bias");
    if (builder.status == UFORM_OK && in_proj && in_bias) {
        builder.tower->parameters -= in_proj->element_count + in_bias->element_count;
        builder.tower->weight_bytes -= in_proj->length + in_bias->length;
    }
    uform__tower_linear(&builder, &pool->out, "vision_model.head.attention.out_proj.weight", d, d,
                        "vision_model.head.attention.out_proj.bias", 0);
    uform__tower_norm(&builder, &pool->norm, "vision_model.head.layernorm.weight", "vision_model.head.layernorm.bias", d);
    uform__tower_linear(&builder, &pool->up, "vision_model.head.mlp.fc1.weight", shape->mlp, d,
                        "vision_model.head.mlp.fc1.bias", 0);
    uform__tower_linear(&builder, &pool->down, "vision_model.head.mlp.fc2.weight", d, shape->mlp,
                        "vision_model.head.mlp.fc2.bias", 0);
    float *q = uform__tower_own(&builder, d * sizeof(float));
    if (builder.status != UFORM_OK) return builder.status;
    for (size_t r = 0; r < d; ++r) { /* q = probe·Wqᵀ + bq, in double */
        double sum = query.bias[r];
        for (size_t c = 0; c < d; ++c) {
            float w = query.dtype == UFORM__GEMM_F32 ? ((const float *)query.weight)[r * d + c]
                                                    : uform__nn_bf16_to_f32_one(((const uint16_t *)query.weight)[r * d + c]);
            sum += (double)w * pool->probe[c];
        }
        q[r] = (float)sum;
    }
    pool->query = q;
    static const float half[3] = {0.5f, 0.5f, 0.5f};
    uform_status_t status = uform__published_processor(context, UFORM__SIGNAL_PIL_STYLE_SIGLIP, shape->image, half, half);
    if (status != UFORM_OK) return status;
    tower->processor = &context->published->processor;
    return uform__tower_finish(&builder, context->parallel);
}

static uform_status_t siglip_text(uform__family_context_t *context, const siglip_shape_t *shape,
                                  const uform__tensor_set_t *set) {
    uform__tower_builder_t builder;
    size_t d = shape->hidden;
    uform_model_t tower = uform__tower_begin(&builder, context, set, UFORM_MODALITY_TEXT, d, shape->depth, shape->heads,
                                             shape->mlp, shape->projection);
    if (!tower) return builder.status;
    uform__stem_t *stem = &tower->stems[UFORM_MODALITY_TEXT];
    uform__tower_trunk(tower, shape->activation, shape->eps, UFORM__POOLING_LAST);
    uform__published_clip_text_trunk(&builder, stem, shape->vocabulary, shape->positions, d);
    uform__tower_linear(&builder, &stem->projection, "text_model.head.weight", shape->projection, d,
                        "text_model.head.bias", 0);
    if (builder.status != UFORM_OK) return builder.status;
    uform_status_t status = uform__published_tokenizer(context, "", "spiece.model");
    if (status != UFORM_OK) return status;
    uform__published_t *published = context->published;
    tower->text.tokenizer = published->tokenizer;
    tower->text.sentencepiece = published->tokenizer ? NULL : published->sentencepiece;
    tower->text.max_tokens = shape->positions;
    tower->text.pad = 1;
    if (published->tokenizer) {
        /* A tokenizer.json pads with its "</s>" (SigLIP's pad token). */
        uint32_t id = 1;
        if (!uform__tokenizer_token_id(published->tokenizer, "</s>", &id) &&
            !uform__tokenizer_token_id(published->tokenizer, "<pad>", &id))
            return uform__fail(context->outcome, UFORM_FORMAT, context->function,
                               "tokenizer.json has neither </s> nor <pad> to pad SigLIP's texts with");
        tower->text.pad_id = id;
    }
    tower->config.text_bytes = shape->positions;
    return uform__tower_finish(&builder, context->parallel);
}

uform_status_t uform__family_siglip(uform__family_context_t *context, const cJSON *config) {
    uform__published_t *published = context->published;
    siglip_shape_t text, vision;
    uform_status_t status = read_shape(context, cJSON_GetObjectItemCaseSensitive(config, "text_config"), "text_config", 0, &text);
    if (status == UFORM_OK)
        status = read_shape(context, cJSON_GetObjectItemCaseSensitive(config, "vision_config"), "vision_config", 1, &vision);
    if (status == UFORM_OK && text.projection != vision.hidden)
        status = uform__fail(context->outcome, UFORM_FORMAT, context->function,
                             "config.json: the text head projects to %zu but the vision tower embeds %zu wide",
                             text.projection, vision.hidden);
    if (status == UFORM_OK)
        status = uform__tensor_set_open_transformers(&published->sets[0], published->folder, "", context->outcome,
                                                     context->function);
    if (status == UFORM_OK) status = siglip_vision(context, &vision, &published->sets[0]);
    if (status == UFORM_OK) status = siglip_text(context, &text, &published->sets[0]);
    return status;
}
