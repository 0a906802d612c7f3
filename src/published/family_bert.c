/*
 * BERT, RoBERTa and XLM-RoBERTa encoders as transformers writes them (BertModel, RobertaModel,
 * XLMRobertaModel), and sentence-transformers' modules on top of them (docs/checkpoints.md, "BERT,
 * RoBERTa, XLM-RoBERTa and sentence-transformers"). The encoder is post-norm:
 *
 *   x = LayerNorm(word[id] + position[k + offset] + token_type[0])            embeddings
 *   x = LayerNorm1(x + attention(x));  x = LayerNorm2(x + mlp(x))              each layer
 *
 * with offset 0 for BERT and padding_idx + 1 for RoBERTa and XLM-R (their positions count from
 * the padding index), token type 0 for every token (one text), and the attention confined to the
 * text's own tokens, as transformers' attention mask confines it. sentence-transformers then pools
 * (CLS, mean, max or mean / √length over the text's tokens), applies its Dense modules and
 * normalises; a folder without modules.json is mean-pooled, as SentenceTransformer(folder) pools a
 * plain transformers model (the pooler's tanh layer, trained for next-sentence prediction, is not
 * used).
 */
#include <stdio.h>
#include <string.h>

#include "core/outcome.h"
#include "published/published.h"

/* What sentence-transformers adds around the encoder. */
typedef struct sentence_modules_t {
    const char *transformer_path; /* "" or "0_Transformer/" */
    uform__pooling_t pooling;
    size_t max_seq_length;        /* 0: the encoder's limit */
    size_t dense_count;
    char dense_paths[UFORM__MAX_DENSE][256];
} sentence_modules_t;

uform_status_t uform__published_activation(uform__family_context_t *context, const char *file, const char *name,
                                           uform__activation_t *activation) {
    if (strcmp(name, "gelu") == 0) *activation = UFORM__ACTIVATION_GELU;
    else if (strcmp(name, "gelu_new") == 0 || strcmp(name, "gelu_pytorch_tanh") == 0 || strcmp(name, "gelu_fast") == 0)
        *activation = UFORM__ACTIVATION_GELU_TANH;
    else if (strcmp(name, "quick_gelu") == 0) *activation = UFORM__ACTIVATION_QUICK_GELU;
    else if (strcmp(name, "relu") == 0) *activation = UFORM__ACTIVATION_RELU;
    else
        return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                           "%s: hidden_act '%s' is none of gelu, gelu_new, gelu_pytorch_tanh, quick_gelu, relu", file, name);
    return UFORM_OK;
}

/* Finds the encoder's names: at the top of the file, or under "bert." / "roberta." (a model with
 * heads saved whole). */
static void choose_prefix(uform__tensor_set_t *set) {
    static const char *const prefixes[4] = {"bert.", "roberta.", "xlm_roberta.", "model."};
    if (uform__tensor_set_find(set, "embeddings.word_embeddings.weight")) return;
    for (int i = 0; i < 4; ++i) {
        snprintf(set->prefix, sizeof set->prefix, "%s", prefixes[i]);
        if (uform__tensor_set_find(set, "embeddings.word_embeddings.weight")) return;
    }
    set->prefix[0] = '\0';
}

static uform_status_t build_encoder(uform__family_context_t *context, const cJSON *config, const char *config_file,
                                    const sentence_modules_t *modules) {
    uform__published_t *published = context->published;
    uform__config_reader_t reader = {config_file, "", UFORM_OK, context->outcome, context->function};
    const char *model_type = uform__config_string(&reader, config, "model_type", "bert");
    size_t d = uform__config_required(&reader, config, "hidden_size");
    size_t depth = uform__config_required(&reader, config, "num_hidden_layers");
    size_t heads = uform__config_required(&reader, config, "num_attention_heads");
    size_t mlp = uform__config_required(&reader, config, "intermediate_size");
    size_t vocabulary = uform__config_required(&reader, config, "vocab_size");
    size_t positions = uform__config_size(&reader, config, "max_position_embeddings", 512);
    size_t types = uform__config_size(&reader, config, "type_vocab_size", 2);
    size_t pad = uform__config_size(&reader, config, "pad_token_id", 0);
    double eps = uform__config_number(&reader, config, "layer_norm_eps", 1e-12);
    const char *act = uform__config_string(&reader, config, "hidden_act", "gelu");
    const char *position_type = uform__config_string(&reader, config, "position_embedding_type", "absolute");
    if (reader.status != UFORM_OK) return reader.status;
    if (strcmp(position_type, "absolute") != 0)
        return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                           "%s: position_embedding_type '%s' (this engine runs absolute positions)", config_file,
                           position_type);
    uform__activation_t activation;
    uform_status_t status = uform__published_activation(context, config_file, act, &activation);
    if (status != UFORM_OK) return status;
    int roberta = strcmp(model_type, "roberta") == 0 || strcmp(model_type, "xlm-roberta") == 0;
    size_t offset = roberta ? pad + 1 : 0;
    if (positions <= offset || types == 0)
        return uform__fail(context->outcome, UFORM_FORMAT, context->function,
                           "%s: max_position_embeddings %zu leaves no position past the padding offset %zu", config_file,
                           positions, offset);

    uform__tensor_set_t *set = &published->sets[UFORM_MODALITY_TEXT];
    status = uform__tensor_set_open_transformers(set, published->folder, modules->transformer_path, context->outcome,
                                                 context->function);
    if (status != UFORM_OK) return status;
    choose_prefix(set);

    /* The embedding: the Dense modules' last width, else d. */
    size_t embedding = d;
    uform__tower_builder_t builder;
    uform_model_t tower = uform__tower_begin(&builder, context, set, UFORM_MODALITY_TEXT, d, depth, heads, mlp, embedding);
    if (!tower) return builder.status;
    uform__stem_t *stem = &tower->stems[UFORM_MODALITY_TEXT];
    tower->arch.post_norm = 1;
    tower->arch.activation = activation;
    tower->arch.eps = (float)eps;
    tower->arch.pooling = modules->pooling;
    uform__tower_token_table(&builder, "embeddings.word_embeddings.weight", vocabulary);
    /* Positions with token type 0 folded in: row k is position k + type 0 (one text per item). */
    const float *table = uform__tower_floats(&builder, "embeddings.position_embeddings.weight", positions, d);
    const float *type = uform__tower_floats(&builder, "embeddings.token_type_embeddings.weight", types, d);
    if (table && type) {
        float *rows = (float *)table; /* owned by the tower: widened at load */
        for (size_t p = 0; p < positions; ++p)
            for (size_t c = 0; c < d; ++c) rows[p * d + c] += type[c];
    }
    stem->positions = table, stem->position_rows = positions, stem->position_offset = offset;
    stem->positions_from_ids = roberta; /* RoBERTa counts positions over the non-padding ids */
    uform__tower_norm(&builder, &stem->embed_norm, "embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias", d);
    stem->embed_eps = (float)eps;
    uform__block_names_t names = {
        .norm1 = "encoder.layer.%zu.attention.output.LayerNorm.weight",
        .norm1_bias = "encoder.layer.%zu.attention.output.LayerNorm.bias",
        .norm2 = "encoder.layer.%zu.output.LayerNorm.weight",
        .norm2_bias = "encoder.layer.%zu.output.LayerNorm.bias",
        .q = "encoder.layer.%zu.attention.self.query.weight",
        .q_bias = "encoder.layer.%zu.attention.self.query.bias",
        .k = "encoder.layer.%zu.attention.self.key.weight",
        .k_bias = "encoder.layer.%zu.attention.self.key.bias",
        .v = "encoder.layer.%zu.attention.self.value.weight",
        .v_bias = "encoder.layer.%zu.attention.self.value.bias",
        .out = "encoder.layer.%zu.attention.output.dense.weight",
        .out_bias = "encoder.layer.%zu.attention.output.dense.bias",
        .up = "encoder.layer.%zu.intermediate.dense.weight",
        .up_bias = "encoder.layer.%zu.intermediate.dense.bias",
        .down = "encoder.layer.%zu.output.dense.weight",
        .down_bias = "encoder.layer.%zu.output.dense.bias",
    };
    uform__tower_blocks(&builder, &names);

    /* sentence-transformers' Dense modules, each from its own folder. */
    size_t width = d;
    for (size_t i = 0; i < modules->dense_count && builder.status == UFORM_OK; ++i) {
        char file[320];
        snprintf(file, sizeof file, "%sconfig.json", modules->dense_paths[i]);
        cJSON *dense = NULL;
        builder.status = uform__published_json(published, file, 0, &dense, context->outcome, context->function);
        if (builder.status != UFORM_OK) break;
        uform__config_reader_t dense_reader = {file, "", UFORM_OK, context->outcome, context->function};
        size_t in = uform__config_required(&dense_reader, dense, "in_features");
        size_t out = uform__config_required(&dense_reader, dense, "out_features");
        int bias = uform__config_bool(&dense_reader, dense, "bias", 1);
        const char *function = uform__config_string(&dense_reader, dense, "activation_function",
                                                    "torch.nn.modules.activation.Tanh");
        uform__activation_t dense_activation = UFORM__ACTIVATION_IDENTITY;
        if (dense_reader.status == UFORM_OK) {
            if (strstr(function, "Tanh")) dense_activation = UFORM__ACTIVATION_TANH;
            else if (strstr(function, "Identity")) dense_activation = UFORM__ACTIVATION_IDENTITY;
            else if (strstr(function, "ReLU")) dense_activation = UFORM__ACTIVATION_RELU;
            else if (strstr(function, "GELU")) dense_activation = UFORM__ACTIVATION_GELU;
            else
                dense_reader.status = uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                                                  "%s: activation_function '%s' is none of Tanh, Identity, ReLU, GELU",
                                                  file, function);
        }
        if (dense_reader.status == UFORM_OK && in != width)
            dense_reader.status = uform__fail(context->outcome, UFORM_FORMAT, context->function,
                                              "%s: in_features %zu, but the rows before it are %zu wide", file, in, width);
        cJSON_Delete(dense);
        builder.status = dense_reader.status;
        if (builder.status != UFORM_OK) break;
        const char *subfolder = modules->dense_paths[i];
        builder.status = uform__tensor_set_open_transformers(&published->dense[i], published->folder, subfolder,
                                                             context->outcome, context->function);
        if (builder.status != UFORM_OK) break;
        builder.set = &published->dense[i];
        uform__tower_linear(&builder, &stem->dense[i], "linear.weight", out, in, bias ? "linear.bias" : NULL, 0);
        builder.set = set;
        stem->dense_activation[i] = dense_activation;
        stem->dense_count = i + 1;
        width = out;
    }
    if (builder.status != UFORM_OK) return builder.status;
    tower->config.embedding = width;
    tower->config.matryoshka[0] = width;
    /* The limit: sentence-transformers' max_seq_length within the positions the encoder has. */
    size_t limit = positions - offset;
    if (modules->max_seq_length && modules->max_seq_length < limit) limit = modules->max_seq_length;
    status = uform__published_tokenizer(context, modules->transformer_path, NULL);
    if (status != UFORM_OK) return status;
    tower->text.tokenizer = published->tokenizer;
    tower->text.max_tokens = limit;
    tower->config.text_bytes = limit;
    return uform__tower_finish(&builder, context->parallel);
}

uform_status_t uform__family_bert(uform__family_context_t *context, const cJSON *config) {
    sentence_modules_t modules;
    memset(&modules, 0, sizeof modules);
    modules.transformer_path = "";
    /* SentenceTransformer(folder) without modules.json builds Transformer + Pooling(mean). */
    modules.pooling = UFORM__POOLING_MEAN;
    return build_encoder(context, config, "config.json", &modules);
}

/* The pooling of sentence-transformers' Pooling module: exactly one mode. */
static uform_status_t pooling_of(uform__family_context_t *context, const char *file, const cJSON *pooling,
                                 uform__pooling_t *mode) {
    static const struct {
        const char *key;
        uform__pooling_t mode;
    } modes[4] = {{"pooling_mode_cls_token", UFORM__POOLING_FIRST},
                  {"pooling_mode_mean_tokens", UFORM__POOLING_MEAN},
                  {"pooling_mode_max_tokens", UFORM__POOLING_MAX},
                  {"pooling_mode_mean_sqrt_len_tokens", UFORM__POOLING_MEAN_SQRT}};
    static const char *const others[3] = {"pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken",
                                          "pooling_mode_weighted_mean_tokens"};
    uform__config_reader_t reader = {file, "", UFORM_OK, context->outcome, context->function};
    int chosen = 0;
    for (int i = 0; i < 4; ++i)
        /* sentence-transformers' Pooling turns the mean on unless its config says otherwise. */
        if (uform__config_bool(&reader, pooling, modes[i].key, modes[i].mode == UFORM__POOLING_MEAN))
            *mode = modes[i].mode, ++chosen;
    for (int i = 0; i < 3; ++i)
        if (uform__config_bool(&reader, pooling, others[i], 0))
            return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                               "%s: %s is not a pooling this engine runs (cls, mean, max, mean_sqrt_len)", file, others[i]);
    if (reader.status != UFORM_OK) return reader.status;
    if (chosen != 1)
        return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                           "%s sets %d pooling modes: this engine runs exactly one (their concatenation is not supported)",
                           file, chosen);
    return UFORM_OK;
}

static int type_is(const char *type, const char *module) {
    const char *dot = strrchr(type, '.');
    return strcmp(dot ? dot + 1 : type, module) == 0;
}

uform_status_t uform__family_sentence_transformers(uform__family_context_t *context, const cJSON *config,
                                                   const cJSON *list) {
    uform__published_t *published = context->published;
    snprintf(published->family, sizeof published->family, "sentence-transformers");
    sentence_modules_t modules;
    memset(&modules, 0, sizeof modules);
    modules.pooling = UFORM__POOLING_FIRST;
    char transformer[256] = "";
    int seen_transformer = 0;
    uform_status_t status = UFORM_OK;
    if (!cJSON_IsArray(list))
        return uform__fail(context->outcome, UFORM_FORMAT, context->function, "modules.json is not an array of modules");
    const cJSON *module;
    cJSON_ArrayForEach(module, list) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(module, "type");
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(module, "path");
        if (!cJSON_IsString(type) || !cJSON_IsString(path) || strstr(path->valuestring, "..") ||
            strlen(path->valuestring) + 2 > sizeof transformer)
            return uform__fail(context->outcome, UFORM_FORMAT, context->function,
                               "modules.json: a module without a string \"type\" and a folder \"path\" inside the model");
        char folder[256];
        snprintf(folder, sizeof folder, "%s%s", path->valuestring, path->valuestring[0] ? "/" : "");
        if (type_is(type->valuestring, "Transformer")) {
            if (seen_transformer++)
                return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function, "modules.json lists two Transformer modules");
            snprintf(transformer, sizeof transformer, "%s", folder);
        } else if (type_is(type->valuestring, "Pooling")) {
            char file[320];
            snprintf(file, sizeof file, "%sconfig.json", folder);
            cJSON *pooling = NULL;
            status = uform__published_json(published, file, 0, &pooling, context->outcome, context->function);
            if (status == UFORM_OK) status = pooling_of(context, file, pooling, &modules.pooling);
            cJSON_Delete(pooling);
            if (status != UFORM_OK) return status;
        } else if (type_is(type->valuestring, "Dense")) {
            if (modules.dense_count == UFORM__MAX_DENSE)
                return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                                   "modules.json lists more than %d Dense modules", UFORM__MAX_DENSE);
            snprintf(modules.dense_paths[modules.dense_count++], sizeof modules.dense_paths[0], "%s", folder);
        } else if (!type_is(type->valuestring, "Normalize")) {
            return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                               "modules.json: module '%s' is none of Transformer, Pooling, Dense, Normalize",
                               type->valuestring);
        }
    }
    if (!seen_transformer)
        return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function, "modules.json lists no Transformer module");
    modules.transformer_path = transformer;
    /* sentence_bert_config.json beside the encoder: its max_seq_length, and do_lower_case. */
    char file[320];
    snprintf(file, sizeof file, "%ssentence_bert_config.json", transformer);
    cJSON *sentence = NULL;
    status = uform__published_json(published, file, 1, &sentence, context->outcome, context->function);
    if (status != UFORM_OK) return status;
    uform__config_reader_t reader = {file, "", UFORM_OK, context->outcome, context->function};
    modules.max_seq_length = uform__config_size(&reader, sentence, "max_seq_length", 0);
    int lower = uform__config_bool(&reader, sentence, "do_lower_case", 0);
    cJSON_Delete(sentence);
    if (reader.status != UFORM_OK) return reader.status;
    if (lower)
        return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                           "%s sets do_lower_case: lower-casing before the tokenizer is not done by this engine", file);
    if (transformer[0]) {
        /* The older layout: the encoder's files in its own folder. */
        snprintf(file, sizeof file, "%sconfig.json", transformer);
        cJSON *inner = NULL;
        status = uform__published_json(published, file, 0, &inner, context->outcome, context->function);
        if (status == UFORM_OK) status = build_encoder(context, inner, file, &modules);
        cJSON_Delete(inner);
        return status;
    }
    if (!config) return uform__fail(context->outcome, UFORM_FORMAT, context->function, "'%s' has no config.json", published->folder);
    return build_encoder(context, config, "config.json", &modules);
}
