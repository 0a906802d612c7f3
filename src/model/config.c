#include "model/config.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"

static const float clip_mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
static const float clip_std[3] = {0.26862954f, 0.26130258f, 0.27577711f};
static const char *const modality_names[4] = {"text", "image", "video", "audio"};

typedef struct parser_t {
    uform_outcome_t *outcome;
    const char *function;
    uform_status_t status;
} parser_t;

static int failed(parser_t *parser) { return parser->status != UFORM_OK; }

/* A positive integer at `object[key]`, named `path` in messages; `fallback` 0 makes it required. */
static size_t read_size(parser_t *parser, const cJSON *object, const char *key, const char *path, size_t fallback) {
    if (failed(parser)) return 0;
    const cJSON *item = object ? cJSON_GetObjectItemCaseSensitive(object, key) : NULL;
    if (!item) {
        if (fallback) return fallback;
        parser->status = uform__fail(parser->outcome, UFORM_FORMAT, parser->function,
                                     "uform.config: the required key '%s' is missing", path);
        return 0;
    }
    double value = cJSON_IsNumber(item) ? item->valuedouble : -1;
    if (!cJSON_IsNumber(item) || value < 1 || value > 1e9 || value != floor(value)) {
        parser->status = uform__fail(parser->outcome, UFORM_FORMAT, parser->function,
                                     "uform.config: '%s' must be a positive integer", path);
        return 0;
    }
    return (size_t)value;
}

static void read_triple(parser_t *parser, const cJSON *object, const char *key, const char *path, float *values,
                        const float *fallback) {
    if (failed(parser)) return;
    const cJSON *item = object ? cJSON_GetObjectItemCaseSensitive(object, key) : NULL;
    if (!item) {
        memcpy(values, fallback, 3 * sizeof(float));
        return;
    }
    if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) != 3) {
        parser->status = uform__fail(parser->outcome, UFORM_FORMAT, parser->function,
                                     "uform.config: '%s' must be an array of 3 numbers", path);
        return;
    }
    for (int i = 0; i < 3; ++i) {
        const cJSON *number = cJSON_GetArrayItem(item, i);
        if (!cJSON_IsNumber(number) || !isfinite(number->valuedouble)) {
            parser->status = uform__fail(parser->outcome, UFORM_FORMAT, parser->function,
                                         "uform.config: '%s[%d]' must be a finite number", path, i);
            return;
        }
        values[i] = (float)number->valuedouble;
    }
}

static const cJSON *section(parser_t *parser, const cJSON *root, const char *name) {
    if (failed(parser)) return NULL;
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, name);
    if (!cJSON_IsObject(item)) {
        parser->status = uform__fail(parser->outcome, UFORM_FORMAT, parser->function,
                                     "uform.config: the required object '%s' is %s", name, item ? "not an object" : "missing");
        return NULL;
    }
    return item;
}

static void check(parser_t *parser, int condition, const char *format, size_t a, size_t b) {
    if (failed(parser) || condition) return;
    char message[256];
    snprintf(message, sizeof message, format, a, b);
    parser->status = uform__fail(parser->outcome, UFORM_FORMAT, parser->function, "uform.config: %s", message);
}

uform_status_t uform__model_config_parse(const char *json, uform__model_config_t *config, uform_outcome_t *outcome,
                                         const char *function) {
    memset(config, 0, sizeof *config);
    parser_t parser = {outcome, function, UFORM_OK};
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return uform__fail(outcome, UFORM_FORMAT, function, "uform.config is not a JSON object");
    }
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!format) {
        parser.status = uform__fail(outcome, UFORM_FORMAT, function, "uform.config: the required key 'format' is missing");
    } else if (!cJSON_IsNumber(format) && !cJSON_IsString(format)) {
        parser.status = uform__fail(outcome, UFORM_FORMAT, function, "uform.config: 'format' must be 4");
    } else {
        double number = cJSON_IsNumber(format) ? format->valuedouble : atof(format->valuestring);
        if (number > 4)
            parser.status = uform__fail(outcome, UFORM_UNSUPPORTED, function,
                                        "uform.config: format %g is newer than this library reads (4)", number);
        else if (number != 4)
            parser.status = uform__fail(outcome, UFORM_FORMAT, function, "uform.config: format %g is not 4", number);
    }
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(root, "size");
    if (cJSON_IsString(size)) snprintf(config->size, sizeof config->size, "%s", size->valuestring);
    config->hidden = read_size(&parser, root, "hidden", "hidden", 0);
    config->depth = read_size(&parser, root, "depth", "depth", 0);
    config->heads = read_size(&parser, root, "heads", "heads", 0);
    config->mlp = read_size(&parser, root, "mlp", "mlp", 0);
    config->embedding = read_size(&parser, root, "embedding", "embedding", 0);
    config->temperature_groups = read_size(&parser, root, "temperature_groups", "temperature_groups", 1);
    config->norm_eps = 1e-6;
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(root, "norm_eps");
    if (!failed(&parser) && eps) {
        if (!cJSON_IsNumber(eps) || !(eps->valuedouble > 0) || eps->valuedouble > 1)
            parser.status = uform__fail(outcome, UFORM_FORMAT, function, "uform.config: 'norm_eps' must be in (0, 1]");
        else
            config->norm_eps = eps->valuedouble;
    }
    check(&parser, config->hidden % (config->heads ? config->heads : 1) == 0, "hidden %zu is not a multiple of heads %zu",
          config->hidden, config->heads);

    const cJSON *matryoshka = cJSON_GetObjectItemCaseSensitive(root, "matryoshka");
    if (!failed(&parser)) {
        if (!matryoshka) {
            size_t e = config->embedding;
            size_t defaults[3] = {e / 4, e / 2, e};
            for (size_t i = 0; i < 3; ++i)
                if (defaults[i] && (config->matryoshka_count == 0 || defaults[i] != config->matryoshka[config->matryoshka_count - 1]))
                    config->matryoshka[config->matryoshka_count++] = defaults[i];
        } else if (!cJSON_IsArray(matryoshka) || cJSON_GetArraySize(matryoshka) < 1 ||
                   cJSON_GetArraySize(matryoshka) > UFORM__MODEL_MAX_MATRYOSHKA) {
            parser.status = uform__fail(outcome, UFORM_FORMAT, function,
                                        "uform.config: 'matryoshka' must be an array of 1 to %d sizes",
                                        UFORM__MODEL_MAX_MATRYOSHKA);
        } else {
            char path[32];
            for (int i = 0; i < cJSON_GetArraySize(matryoshka) && !failed(&parser); ++i) {
                snprintf(path, sizeof path, "matryoshka[%d]", i);
                const cJSON *item = cJSON_GetArrayItem(matryoshka, i);
                cJSON wrapper;
                (void)wrapper;
                double value = cJSON_IsNumber(item) ? item->valuedouble : -1;
                if (value < 1 || value != floor(value) || value > (double)config->embedding) {
                    parser.status = uform__fail(outcome, UFORM_FORMAT, function,
                                                "uform.config: '%s' must be an integer in 1..embedding (%zu)", path,
                                                config->embedding);
                    break;
                }
                config->matryoshka[config->matryoshka_count++] = (size_t)value;
            }
        }
    }

    const cJSON *modalities = cJSON_GetObjectItemCaseSensitive(root, "modalities");
    if (!failed(&parser)) {
        if (!cJSON_IsArray(modalities)) {
            parser.status = uform__fail(outcome, UFORM_FORMAT, function,
                                        "uform.config: the required array 'modalities' is %s",
                                        modalities ? "not an array" : "missing");
        } else {
            const cJSON *item;
            cJSON_ArrayForEach(item, modalities) {
                int known = 0;
                for (int m = 0; m < 4; ++m)
                    if (cJSON_IsString(item) && strcmp(item->valuestring, modality_names[m]) == 0) {
                        config->modalities |= 1u << m;
                        known = 1;
                    }
                if (!known) {
                    parser.status = uform__fail(outcome, UFORM_FORMAT, function,
                                                "uform.config: 'modalities' lists an unknown modality %s%s%s",
                                                cJSON_IsString(item) ? "'" : "",
                                                cJSON_IsString(item) ? item->valuestring : "(not a string)",
                                                cJSON_IsString(item) ? "'" : "");
                    break;
                }
            }
        }
    }
    if (config->modalities & (1u << UFORM_MODALITY_TEXT)) {
        const cJSON *text = section(&parser, root, "text");
        config->text_bytes = read_size(&parser, text, "bytes", "text.bytes", 0);
    }
    if (config->modalities & (1u << UFORM_MODALITY_IMAGE)) {
        const cJSON *image = section(&parser, root, "image");
        config->image_size = read_size(&parser, image, "size", "image.size", 0);
        config->image_patch = read_size(&parser, image, "patch", "image.patch", 0);
        read_triple(&parser, image, "mean", "image.mean", config->image_mean, clip_mean);
        read_triple(&parser, image, "std", "image.std", config->image_std, clip_std);
        check(&parser, config->image_size % (config->image_patch ? config->image_patch : 1) == 0,
              "image.size %zu is not a multiple of image.patch %zu", config->image_size, config->image_patch);
    }
    if (config->modalities & (1u << UFORM_MODALITY_VIDEO)) {
        const cJSON *video = section(&parser, root, "video");
        const cJSON *image = cJSON_GetObjectItemCaseSensitive(root, "image");
        config->video_size = read_size(&parser, video, "size", "video.size", 0);
        config->video_patch = read_size(&parser, video, "patch", "video.patch", 0);
        config->video_frames = read_size(&parser, video, "frames", "video.frames", 0);
        config->video_tubelet = read_size(&parser, video, "tubelet", "video.tubelet", 0);
        /* Frames are preprocessed like images: the video's own mean/std, else the image's, else CLIP's. */
        float image_mean[3], image_std[3];
        read_triple(&parser, cJSON_IsObject(image) ? image : NULL, "mean", "image.mean", image_mean, clip_mean);
        read_triple(&parser, cJSON_IsObject(image) ? image : NULL, "std", "image.std", image_std, clip_std);
        read_triple(&parser, video, "mean", "video.mean", config->video_mean, image_mean);
        read_triple(&parser, video, "std", "video.std", config->video_std, image_std);
        check(&parser, config->video_size % (config->video_patch ? config->video_patch : 1) == 0,
              "video.size %zu is not a multiple of video.patch %zu", config->video_size, config->video_patch);
        check(&parser, config->video_frames % (config->video_tubelet ? config->video_tubelet : 1) == 0,
              "video.frames %zu is not a multiple of video.tubelet %zu", config->video_frames, config->video_tubelet);
    }
    if (config->modalities & (1u << UFORM_MODALITY_AUDIO)) {
        const cJSON *audio = section(&parser, root, "audio");
        config->audio_rate = read_size(&parser, audio, "rate", "audio.rate", 0);
        config->audio_seconds = read_size(&parser, audio, "seconds", "audio.seconds", 0);
        config->audio_mels = read_size(&parser, audio, "mels", "audio.mels", 0);
        check(&parser, config->audio_rate >= 2 * UFORM__AUDIO_N_FFT, "audio.rate %zu is below %zu Hz",
              config->audio_rate, 2 * UFORM__AUDIO_N_FFT);
        check(&parser, uform__model_audio_tokens(config) >= 2, "audio.seconds %zu gives no audio tokens%.0zu",
              config->audio_seconds, (size_t)0);
    }
    cJSON_Delete(root);
    for (size_t m = 0; m < config->matryoshka_count && !failed(&parser); ++m)
        check(&parser, config->matryoshka[m] <= config->embedding, "matryoshka %zu exceeds embedding %zu",
              config->matryoshka[m], config->embedding);
    return parser.status;
}

char *uform__model_config_print(const uform__model_config_t *config) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    cJSON_AddNumberToObject(root, "format", 4);
    cJSON_AddStringToObject(root, "size", config->size);
    cJSON_AddNumberToObject(root, "hidden", (double)config->hidden);
    cJSON_AddNumberToObject(root, "depth", (double)config->depth);
    cJSON_AddNumberToObject(root, "heads", (double)config->heads);
    cJSON_AddNumberToObject(root, "mlp", (double)config->mlp);
    cJSON_AddNumberToObject(root, "embedding", (double)config->embedding);
    cJSON *matryoshka = cJSON_AddArrayToObject(root, "matryoshka");
    for (size_t i = 0; matryoshka && i < config->matryoshka_count; ++i)
        cJSON_AddItemToArray(matryoshka, cJSON_CreateNumber((double)config->matryoshka[i]));
    cJSON_AddNumberToObject(root, "temperature_groups", (double)config->temperature_groups);
    cJSON_AddNumberToObject(root, "norm_eps", config->norm_eps);
    cJSON *modalities = cJSON_AddArrayToObject(root, "modalities");
    for (int m = 0; modalities && m < 4; ++m)
        if (config->modalities & (1u << m)) cJSON_AddItemToArray(modalities, cJSON_CreateString(modality_names[m]));
    if (config->modalities & (1u << UFORM_MODALITY_TEXT)) {
        cJSON *text = cJSON_AddObjectToObject(root, "text");
        cJSON_AddNumberToObject(text, "bytes", (double)config->text_bytes);
    }
    if (config->modalities & (1u << UFORM_MODALITY_IMAGE)) {
        cJSON *image = cJSON_AddObjectToObject(root, "image");
        cJSON_AddNumberToObject(image, "size", (double)config->image_size);
        cJSON_AddNumberToObject(image, "patch", (double)config->image_patch);
        cJSON *mean = cJSON_AddArrayToObject(image, "mean"), *std = cJSON_AddArrayToObject(image, "std");
        for (int c = 0; c < 3; ++c) {
            cJSON_AddItemToArray(mean, cJSON_CreateNumber(config->image_mean[c]));
            cJSON_AddItemToArray(std, cJSON_CreateNumber(config->image_std[c]));
        }
    }
    if (config->modalities & (1u << UFORM_MODALITY_VIDEO)) {
        cJSON *video = cJSON_AddObjectToObject(root, "video");
        cJSON_AddNumberToObject(video, "size", (double)config->video_size);
        cJSON_AddNumberToObject(video, "patch", (double)config->video_patch);
        cJSON_AddNumberToObject(video, "frames", (double)config->video_frames);
        cJSON_AddNumberToObject(video, "tubelet", (double)config->video_tubelet);
    }
    if (config->modalities & (1u << UFORM_MODALITY_AUDIO)) {
        cJSON *audio = cJSON_AddObjectToObject(root, "audio");
        cJSON_AddNumberToObject(audio, "rate", (double)config->audio_rate);
        cJSON_AddNumberToObject(audio, "seconds", (double)config->audio_seconds);
        cJSON_AddNumberToObject(audio, "mels", (double)config->audio_mels);
    }
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return json;
}

uform_status_t uform__model_config_named(const char *size, uform__model_config_t *config, uform_outcome_t *outcome,
                                         const char *function) {
    memset(config, 0, sizeof *config);
    size_t hidden, depth, heads, mlp, embedding, image, patch, bytes, seconds, frames;
    if (size && strcmp(size, "tiny") == 0)
        hidden = 128, depth = 2, heads = 2, mlp = 512, embedding = 64, image = 32, patch = 8, bytes = 64, seconds = 1, frames = 4;
    else if (size && strcmp(size, "small") == 0)
        hidden = 384, depth = 12, heads = 6, mlp = 1536, embedding = 256, image = 224, patch = 16, bytes = 256, seconds = 10, frames = 8;
    else if (size && strcmp(size, "base") == 0)
        hidden = 768, depth = 12, heads = 12, mlp = 3072, embedding = 512, image = 224, patch = 16, bytes = 256, seconds = 10, frames = 8;
    else
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "size '%s' is not tiny, small or base",
                           size ? size : "(null)");
    snprintf(config->size, sizeof config->size, "%s", size);
    config->hidden = hidden, config->depth = depth, config->heads = heads, config->mlp = mlp;
    config->embedding = embedding;
    config->matryoshka[0] = embedding / 4, config->matryoshka[1] = embedding / 2, config->matryoshka[2] = embedding;
    config->matryoshka_count = 3;
    config->temperature_groups = 4;
    config->norm_eps = 1e-6;
    config->modalities = 0xF;
    config->text_bytes = bytes;
    config->image_size = image, config->image_patch = patch;
    memcpy(config->image_mean, clip_mean, sizeof clip_mean), memcpy(config->image_std, clip_std, sizeof clip_std);
    config->video_size = image, config->video_patch = patch, config->video_frames = frames, config->video_tubelet = 2;
    memcpy(config->video_mean, clip_mean, sizeof clip_mean), memcpy(config->video_std, clip_std, sizeof clip_std);
    config->audio_rate = 16000, config->audio_seconds = seconds, config->audio_mels = 80;
    return UFORM_OK;
}

size_t uform__model_image_tokens(const uform__model_config_t *config) {
    size_t side = config->image_size / config->image_patch;
    return 1 + side * side;
}

size_t uform__model_video_tokens(const uform__model_config_t *config) {
    size_t side = config->video_size / config->video_patch;
    return 1 + (config->video_frames / config->video_tubelet) * side * side;
}

size_t uform__model_audio_samples(const uform__model_config_t *config) { return config->audio_rate * config->audio_seconds; }

size_t uform__model_audio_tokens(const uform__model_config_t *config) {
    /* Whisper's centred STFT gives samples/hop + 1 frames; the last is dropped. */
    size_t frames = uform__model_audio_samples(config) / UFORM__AUDIO_HOP;
    return 1 + frames / UFORM__AUDIO_FRAMES_PER_TOKEN;
}

void uform__model_config_describe(const uform__model_config_t *config, uform_model_description_t *description) {
    snprintf(description->size, sizeof description->size, "%s", config->size);
    description->hidden = config->hidden, description->depth = config->depth, description->heads = config->heads;
    description->mlp = config->mlp, description->embedding = config->embedding;
    memcpy(description->matryoshka, config->matryoshka, sizeof description->matryoshka);
    description->matryoshka_count = config->matryoshka_count;
    description->temperature_groups = config->temperature_groups;
    description->modalities = config->modalities;
    description->text_bytes = config->text_bytes;
    description->image_size = config->image_size, description->image_patch = config->image_patch;
    description->video_size = config->video_size, description->video_patch = config->video_patch;
    description->video_frames = config->video_frames, description->video_tubelet = config->video_tubelet;
    description->audio_rate = config->audio_rate, description->audio_seconds = config->audio_seconds;
    description->audio_mels = config->audio_mels;
}
