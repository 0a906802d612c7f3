/*
 * A published model folder (published.h): which family it is, its JSON files, its tokenizer, and
 * the model that owns its towers.
 *
 * Which family, in this order (docs/checkpoints.md, "Recognising a folder"):
 *   config.json with "text_encoder" / "image_encoder" sections   UForm 3
 *   config.json "model_type" clip                                CLIP, transformers' layout
 *   config.json "model_type" siglip                              SigLIP
 *   config.json "model_type" bert, roberta, xlm-roberta          the encoder; with modules.json,
 *                                                                sentence-transformers' modules
 *   open_clip_config.json                                        OpenCLIP (laion's folders carry
 *                                                                both layouts: transformers' wins)
 *   modules.json whose Transformer module lives in a subfolder   sentence-transformers (older layout)
 * Anything else is UFORM_UNSUPPORTED naming what was found.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/outcome.h"
#include "io/json.h"
#include "published/published.h"
#include "text/sentencepiece.h"
#include "text/tokenizer.h"

/* The largest JSON file read (tokenizer.json of a 250k vocabulary is about 17 MB). */
#define JSON_FILE_MAX ((long)256 << 20)

int uform__published_file_exists(const char *folder, const char *name) {
    char path[4096];
    struct stat info;
    snprintf(path, sizeof path, "%s/%s", folder, name);
    return stat(path, &info) == 0 && S_ISREG(info.st_mode);
}

/* Reads a whole file into a NUL-terminated buffer. */
static uform_status_t read_file(const char *path, char **text, size_t *length, long limit, uform_outcome_t *outcome,
                                const char *function) {
    FILE *file = fopen(path, "rb");
    if (!file) /* fopen allocates: its ENOMEM is memory, not the file */
        return uform__fail(outcome, errno == ENOMEM ? UFORM_OUT_OF_MEMORY : UFORM_IO, function, "cannot open '%s': %s",
                           path, strerror(errno));
    long size = -1;
    if (fseek(file, 0, SEEK_END) == 0) size = ftell(file);
    if (size < 0 || fseek(file, 0, SEEK_SET) != 0) {
        fclose(file);
        return uform__fail(outcome, UFORM_IO, function, "cannot read '%s'", path);
    }
    if (size > limit) {
        fclose(file);
        return uform__fail(outcome, UFORM_FORMAT, function, "'%s' holds %ld bytes, more than the %ld a model's file may", path,
                           size, limit);
    }
    char *buffer = malloc((size_t)size + 1);
    if (!buffer) {
        fclose(file);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate %ld bytes to read '%s'", size, path);
    }
    size_t got = fread(buffer, 1, (size_t)size, file);
    fclose(file);
    if (got != (size_t)size) {
        free(buffer);
        return uform__fail(outcome, UFORM_IO, function, "cannot read '%s' whole", path);
    }
    buffer[got] = '\0';
    *text = buffer, *length = got;
    return UFORM_OK;
}

/* Keeps a file's text for the fingerprint: its name, a NUL, its bytes, a NUL. */
static uform_status_t keep_text(uform__published_t *published, const char *name, const char *text, size_t length,
                                uform_outcome_t *outcome, const char *function) {
    size_t name_length = strlen(name), grown = published->texts_length + name_length + length + 2;
    char *texts = realloc(published->texts, grown + 1);
    if (!texts) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate room to keep the text of '%s'", name);
    memcpy(texts + published->texts_length, name, name_length + 1);
    memcpy(texts + published->texts_length + name_length + 1, text, length);
    texts[grown - 1] = '\0', texts[grown] = '\0';
    published->texts = texts, published->texts_length = grown;
    return UFORM_OK;
}

uform_status_t uform__published_json(uform__published_t *published, const char *name, int optional, cJSON **root,
                                     uform_outcome_t *outcome, const char *function) {
    *root = NULL;
    if (!uform__published_file_exists(published->folder, name)) {
        if (optional) return UFORM_OK;
        return uform__fail(outcome, UFORM_FORMAT, function, "'%s' has no %s", published->folder, name);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", published->folder, name);
    char *text = NULL;
    size_t length = 0, error_at = 0;
    uform_status_t status = read_file(path, &text, &length, JSON_FILE_MAX, outcome, function);
    if (status != UFORM_OK) return status;
    status = uform__json_parse(text, length + 1, root, NULL, &error_at);
    if (status == UFORM_FORMAT) status = uform__fail(outcome, status, function, "%s is not valid JSON (byte %zu)", name, error_at);
    else if (status != UFORM_OK) status = uform__fail(outcome, status, function, "cannot parse %s: out of memory", name);
    if (status == UFORM_OK) status = keep_text(published, name, text, length, outcome, function);
    free(text);
    if (status != UFORM_OK) {
        cJSON_Delete(*root);
        *root = NULL;
    }
    return status;
}

/* ---- typed config reads ---- */

static const cJSON *config_item(uform__config_reader_t *reader, const cJSON *object, const char *key) {
    if (reader->status != UFORM_OK || !object) return NULL;
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, key);
    return item && !cJSON_IsNull(item) ? item : NULL;
}

static void config_fail(uform__config_reader_t *reader, const char *key, const char *expected) {
    if (reader->status != UFORM_OK) return;
    reader->status = uform__fail(reader->outcome, UFORM_FORMAT, reader->function, "%s: %s%s'%s' is not %s", reader->file,
                                 reader->path, reader->path[0] ? "." : "", key, expected);
}

size_t uform__config_size(uform__config_reader_t *reader, const cJSON *object, const char *key, size_t fallback) {
    const cJSON *item = config_item(reader, object, key);
    if (!item) return fallback;
    double value = cJSON_IsNumber(item) ? item->valuedouble : -1.0;
    if (value < 0 || value > 9007199254740991.0 || value != (double)(uint64_t)value) {
        config_fail(reader, key, "a whole number from 0 to 2^53");
        return fallback;
    }
    return (size_t)value;
}

size_t uform__config_required(uform__config_reader_t *reader, const cJSON *object, const char *key) {
    if (reader->status == UFORM_OK && !config_item(reader, object, key))
        reader->status = uform__fail(reader->outcome, UFORM_FORMAT, reader->function, "%s: the required key %s%s'%s' is missing",
                                     reader->file, reader->path, reader->path[0] ? "." : "", key);
    return uform__config_size(reader, object, key, 0);
}

double uform__config_number(uform__config_reader_t *reader, const cJSON *object, const char *key, double fallback) {
    const cJSON *item = config_item(reader, object, key);
    if (!item) return fallback;
    if (!cJSON_IsNumber(item)) {
        config_fail(reader, key, "a number");
        return fallback;
    }
    return item->valuedouble;
}

const char *uform__config_string(uform__config_reader_t *reader, const cJSON *object, const char *key,
                                 const char *fallback) {
    const cJSON *item = config_item(reader, object, key);
    if (!item) return fallback;
    if (!cJSON_IsString(item)) {
        config_fail(reader, key, "a string");
        return fallback;
    }
    return item->valuestring;
}

int uform__config_bool(uform__config_reader_t *reader, const cJSON *object, const char *key, int fallback) {
    const cJSON *item = config_item(reader, object, key);
    if (!item) return fallback;
    if (!cJSON_IsBool(item)) {
        config_fail(reader, key, "true or false");
        return fallback;
    }
    return cJSON_IsTrue(item);
}

/* ---- the tokenizer ---- */

uform_status_t uform__published_tokenizer(uform__family_context_t *context, const char *subfolder,
                                          const char *sentencepiece) {
    uform__published_t *published = context->published;
    char name[512];
    snprintf(name, sizeof name, "%stokenizer.json", subfolder);
    if (uform__published_file_exists(published->folder, name)) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", published->folder, name);
        char *text = NULL;
        size_t length = 0;
        uform_status_t status = read_file(path, &text, &length, JSON_FILE_MAX, context->outcome, context->function);
        if (status == UFORM_OK) status = keep_text(published, "tokenizer.json", text, length, context->outcome, context->function);
        if (status == UFORM_OK) status = uform__tokenizer_from_json(text, length, &published->tokenizer, context->outcome);
        free(text);
        if (status != UFORM_OK) {
            char message[sizeof context->outcome->message];
            snprintf(message, sizeof message, "%s", context->outcome->message);
            return uform__fail(context->outcome, status, context->function, "tokenizer.json: %s", message);
        }
        snprintf(published->tokenizer_kind, sizeof published->tokenizer_kind, "%s",
                 uform__tokenizer_kind(published->tokenizer));
        return UFORM_OK;
    }
    snprintf(name, sizeof name, "%s%s", subfolder, sentencepiece ? sentencepiece : "");
    if (sentencepiece && uform__published_file_exists(published->folder, name)) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", published->folder, name);
        /* SiglipTokenizer and T5Tokenizer(legacy=False) load the model without its dummy prefix. */
        uform__sp_model_options_t options = {-1};
        uform_status_t status = uform__sp_model_open(path, &options, &published->sentencepiece, context->outcome);
        if (status != UFORM_OK) {
            char message[sizeof context->outcome->message];
            snprintf(message, sizeof message, "%s", context->outcome->message);
            return uform__fail(context->outcome, status, context->function, "%s: %s", sentencepiece, message);
        }
        snprintf(published->tokenizer_kind, sizeof published->tokenizer_kind, "sentencepiece");
        return UFORM_OK;
    }
    return uform__fail(context->outcome, UFORM_FORMAT, context->function, "'%s/%s' has no tokenizer.json%s%s",
                       published->folder, subfolder, sentencepiece ? " nor " : "", sentencepiece ? sentencepiece : "");
}

/* ---- the model ---- */

void uform__published_free(uform__published_t *published) {
    if (!published) return;
    for (int m = 0; m < 4; ++m) uform__tensor_set_close(&published->sets[m]);
    for (int i = 0; i < UFORM__MAX_DENSE; ++i) uform__tensor_set_close(&published->dense[i]);
    uform__tokenizer_free(published->tokenizer);
    uform__sp_model_free(published->sentencepiece);
    free(published->folder);
    free(published->texts);
    free(published);
}

static void release(uform_model_t model) {
    for (int m = 0; m < 4; ++m) {
        uform_model_free(model->towers[m]);
        model->towers[m] = NULL;
    }
    uform__published_free(model->published);
    model->published = NULL;
}

static void each_tensor(const struct uform_model_s *model, void (*visit)(void *state, const uform__safetensors_tensor_t *),
                        void *state) {
    const uform__published_t *published = model->published;
    for (int m = 0; m < 4; ++m) uform__tensor_set_each(&published->sets[m], visit, state);
    for (int i = 0; i < UFORM__MAX_DENSE; ++i) uform__tensor_set_each(&published->dense[i], visit, state);
}

/* The folder's model describes what its towers share: the embedding width, the modalities. */
static uform_status_t assemble(uform__family_context_t *context) {
    uform_model_t model = context->model;
    uform__model_config_t *config = &model->config;
    uform_model_t first = NULL;
    for (int m = 0; m < 4; ++m) {
        uform_model_t tower = model->towers[m];
        if (!tower) continue;
        if (!first) first = tower;
        else if (tower->config.embedding != first->config.embedding)
            return uform__fail(context->outcome, UFORM_FORMAT, context->function,
                               "the %s tower embeds into %zu dimensions and the text tower into %zu: a model's towers must agree",
                               uform__modality_name((uform_modality_t)m), tower->config.embedding, first->config.embedding);
        config->modalities |= 1u << m;
        model->stems[m].present = 1;
        model->parameters += tower->parameters;
        model->weight_bytes += tower->weight_bytes;
    }
    if (!first) return uform__fail(context->outcome, UFORM_FORMAT, context->function, "'%s' holds no tower", context->published->folder);
    uform__model_config_t shared = first->config;
    shared.modalities = config->modalities;
    snprintf(shared.size, sizeof shared.size, "%.15s", context->published->family);
    *config = shared;
    if (model->towers[UFORM_MODALITY_IMAGE]) {
        config->image_size = model->towers[UFORM_MODALITY_IMAGE]->config.image_size;
        config->image_patch = model->towers[UFORM_MODALITY_IMAGE]->config.image_patch;
    }
    if (model->towers[UFORM_MODALITY_TEXT]) config->text_bytes = model->towers[UFORM_MODALITY_TEXT]->text.max_tokens;
    model->arch.published = 1;
    model->config_text = context->published->texts;
    return UFORM_OK;
}

void uform__published_describe(const uform_model_t model, uform_model_description_t *description) {
    const uform__published_t *published = model->published;
    snprintf(description->family, sizeof description->family, "%s", published->family);
    snprintf(description->tokenizer, sizeof description->tokenizer, "%s", published->tokenizer_kind);
    if (model->towers[UFORM_MODALITY_TEXT]) description->text_tokens = model->towers[UFORM_MODALITY_TEXT]->text.max_tokens;
}

static int model_type_is(const cJSON *config, const char *type) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(config, "model_type");
    return cJSON_IsString(item) && strcmp(item->valuestring, type) == 0;
}

static uform_status_t dispatch(uform__family_context_t *context) {
    uform__published_t *published = context->published;
    cJSON *config = NULL, *modules = NULL;
    uform_status_t status = uform__published_json(published, "config.json", 1, &config, context->outcome, context->function);
    if (status == UFORM_OK)
        status = uform__published_json(published, "modules.json", 1, &modules, context->outcome, context->function);
    if (status != UFORM_OK) {
        cJSON_Delete(config), cJSON_Delete(modules);
        return status;
    }
    const char *family = NULL;
    if (config && (cJSON_GetObjectItemCaseSensitive(config, "text_encoder") ||
                   cJSON_GetObjectItemCaseSensitive(config, "image_encoder"))) {
        family = "uform3";
        status = uform__family_uform3(context, config);
    } else if (config && model_type_is(config, "clip")) {
        family = "clip";
        status = uform__family_clip(context, config);
    } else if (config && model_type_is(config, "siglip")) {
        family = "siglip";
        status = uform__family_siglip(context, config);
    } else if (config && (model_type_is(config, "bert") || model_type_is(config, "roberta") ||
                          model_type_is(config, "xlm-roberta"))) {
        family = cJSON_GetObjectItemCaseSensitive(config, "model_type")->valuestring;
        status = modules ? uform__family_sentence_transformers(context, config, modules) : uform__family_bert(context, config);
    } else if (uform__published_file_exists(published->folder, "open_clip_config.json")) {
        family = "open_clip";
        cJSON *open_clip = NULL;
        status = uform__published_json(published, "open_clip_config.json", 0, &open_clip, context->outcome, context->function);
        if (status == UFORM_OK) status = uform__family_open_clip(context, open_clip);
        cJSON_Delete(open_clip);
    } else if (modules) {
        family = "sentence-transformers";
        status = uform__family_sentence_transformers(context, NULL, modules);
    } else if (config) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(config, "model_type");
        status = uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                             "config.json names model_type '%s': this engine runs bert, roberta, xlm-roberta, clip, "
                             "siglip, OpenCLIP and UForm 3 folders (docs/checkpoints.md)",
                             cJSON_IsString(type) ? type->valuestring : "(none)");
    } else {
        status = uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                             "'%s' holds no config.json, open_clip_config.json or modules.json: not a model folder this "
                             "engine knows (docs/checkpoints.md)",
                             published->folder);
    }
    if (status == UFORM_OK && !published->family[0]) snprintf(published->family, sizeof published->family, "%s", family);
    cJSON_Delete(config), cJSON_Delete(modules);
    return status;
}

uform_status_t uform__published_load(const char *path, uform_cpu_class_t cpu_class, uform_compute_t compute,
                                     uform_model_t *model, uform__call_context_t *context) {
    const char *function = context->function;
    *model = NULL;
    uform_model_t composite = calloc(1, sizeof *composite);
    uform__published_t *published = calloc(1, sizeof *published);
    size_t length = strlen(path);
    char *folder = malloc(length + 1);
    if (!composite || !published || !folder) {
        free(composite), free(published), free(folder);
        return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a model");
    }
    memcpy(folder, path, length + 1);
    while (length > 1 && folder[length - 1] == '/') folder[--length] = '\0';
    published->folder = folder;
    composite->published = published;
    composite->release = release;
    composite->each_tensor = each_tensor;
    composite->cpu_class = cpu_class;
    composite->compute = compute;
    uform__family_context_t family = {published, composite, cpu_class, compute, context->parallel, context->outcome, function};
    uform_status_t status = dispatch(&family);
    if (status == UFORM_OK) status = assemble(&family);
    if (status != UFORM_OK) {
        uform_model_free(composite);
        return status;
    }
    *model = composite;
    return UFORM_OK;
}
