#include "model/config.h"

#include <float.h>
#include <stdarg.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "io/json.h"
#include "kernels/nn.h"
#include "model/layout.h"

static const float clip_mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
static const float clip_std[3] = {0.26862954f, 0.26130258f, 0.27577711f};
static const char *const modality_names[4] = {"text", "image", "video", "audio"};

/* The limits of docs/model.md ("The config"), each with the reason a message gives. */
#define EXACT_MAX 9007199254740991.0 /* 2^53 − 1 */
#define EXACT_REASON "2^53 - 1, the largest integer a JSON number holds exactly"
#define SIDE_MAX 16384.0
#define SIDE_REASON "16384, the largest side of a picture preprocessing makes (2^28 pixels, docs/preprocessing.md#limits)"
#define FRAMES_MAX 1024.0
#define FRAMES_REASON "1024, the most frames a video item has (docs/preprocessing.md#limits)"
/* A header is at most 100 MiB, and a block's 12 tensors take more than 800 bytes of it. */
#define DEPTH_MAX 131072.0
#define DEPTH_REASON "131072: a block's 12 tensors take over 800 bytes of a header of at most 100 MiB"
#define RATE_MAX 768000.0
#define RATE_REASON "768000 Hz, the highest sample rate preprocessing reads (docs/preprocessing.md#limits)"
#define SECONDS_MAX 3600.0
#define SECONDS_REASON "3600, one hour, the longest recording preprocessing reads (docs/preprocessing.md#limits)"
#define MELS_MAX 65536.0
#define MELS_REASON "65536, the most filters the mel filter bank makes"
/* The decoded-video limit of docs/preprocessing.md, which the frames the stem resizes to share. */
#define VIDEO_PIXELS_MAX ((size_t)1 << 30)
/* The largest end offset a checkpoint's data may have: the reader refuses 2^53 and more. */
#define DATA_MAX 9007199254740991ull

typedef struct parser_t {
    uform_outcome_t *outcome;
    const char *function;
    uform_status_t status;
} parser_t;

static int failed(parser_t *parser) { return parser->status != UFORM_OK; }

static void refuse(parser_t *parser, uform_status_t status, const char *format, ...) __attribute__((format(printf, 3, 4)));

static void refuse(parser_t *parser, uform_status_t status, const char *format, ...) {
    if (failed(parser)) return;
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(message, sizeof message, format, arguments);
    va_end(arguments);
    parser->status = uform__fail(parser->outcome, status, parser->function, "uform.config: %s", message);
}

/* An integer in [minimum, maximum] (`item`, or `object[key]` below), named `path` in messages; a
 * missing item takes `fallback`, and `fallback` 0 makes it required. `below` and `above` complete "'path' V is below ..." and "... exceeds ...". */
static size_t integer_of(parser_t *parser, const cJSON *item, const char *path, size_t fallback, double minimum,
                         const char *below, double maximum, const char *above) {
    if (failed(parser)) return 0;
    if (!item) {
        if (fallback) return fallback;
        refuse(parser, UFORM_FORMAT, "the required key '%s' is missing", path);
        return 0;
    }
    double value = cJSON_IsNumber(item) ? item->valuedouble : NAN;
    if (!cJSON_IsNumber(item)) refuse(parser, UFORM_FORMAT, "'%s' must be an integer, not %s", path,
                                      cJSON_IsString(item) ? "a string" : "another JSON type");
    else if (!isfinite(value) || value != floor(value)) refuse(parser, UFORM_FORMAT, "'%s' %.17g is not an integer", path, value);
    else if (value < minimum) refuse(parser, UFORM_FORMAT, "'%s' %.17g is below %s", path, value, below);
    else if (value > maximum) refuse(parser, UFORM_FORMAT, "'%s' %.17g exceeds %s", path, value, above);
    return failed(parser) ? 0 : (size_t)value;
}

static size_t read_integer(parser_t *parser, const cJSON *object, const char *key, const char *path, size_t fallback,
                           double minimum, const char *below, double maximum, const char *above) {
    const cJSON *item = object ? cJSON_GetObjectItemCaseSensitive(object, key) : NULL;
    return integer_of(parser, item, path, fallback, minimum, below, maximum, above);
}

static size_t read_size(parser_t *parser, const cJSON *object, const char *key, const char *path, size_t fallback) {
    return read_integer(parser, object, key, path, fallback, 1, "1", EXACT_MAX, EXACT_REASON);
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
        refuse(parser, UFORM_FORMAT, "'%s' must be an array of 3 numbers", path);
        return;
    }
    for (int i = 0; i < 3; ++i) {
        const cJSON *number = cJSON_GetArrayItem(item, i);
        if (!cJSON_IsNumber(number) || !isfinite(number->valuedouble)) {
            refuse(parser, UFORM_FORMAT, "'%s[%d]' must be a finite number", path, i);
            return;
        }
        values[i] = (float)number->valuedouble;
    }
}

/* Preprocessing maps a channel value x in [0, 1] to (x − mean) / std in F32 (signal_resize.c):
 * both ends must be finite, which refuses a zero std, a mean or std beyond F32's range, and a
 * std so small that the quotient overflows. */
static void check_normalisation(parser_t *parser, const char *section, const float *mean, const float *std) {
    for (int c = 0; c < 3 && !failed(parser); ++c) {
        volatile float low = (0.0f - mean[c]) / std[c], high = (1.0f - mean[c]) / std[c];
        if (!isfinite(low) || !isfinite(high))
            refuse(parser, UFORM_FORMAT,
                   "'%s.std[%d]' %.9g with '%s.mean[%d]' %.9g makes a normalised pixel (x - mean) / std %s in F32 "
                   "(x in [0, 1]); std must be non-zero and |x - mean| / |std| at most %.9g",
                   section, c, (double)std[c], section, c, (double)mean[c], std[c] == 0.0f ? "divide by zero" : "overflow",
                   (double)FLT_MAX);
    }
}

static const cJSON *section(parser_t *parser, const cJSON *root, const char *name) {
    if (failed(parser)) return NULL;
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, name);
    if (!cJSON_IsObject(item)) {
        refuse(parser, UFORM_FORMAT, "the required object '%s' is %s", name, item ? "not an object" : "missing");
        return NULL;
    }
    return item;
}

static void check(parser_t *parser, int condition, const char *format, size_t a, size_t b) {
    if (failed(parser) || condition) return;
    char message[256];
    snprintf(message, sizeof message, format, a, b);
    refuse(parser, UFORM_FORMAT, "%s", message);
}

static uint64_t saturating_multiply(uint64_t a, uint64_t b) { return a && b > UINT64_MAX / a ? UINT64_MAX : a * b; }
static uint64_t saturating_add(uint64_t a, uint64_t b) { return b > UINT64_MAX - a ? UINT64_MAX : a + b; }

/* The config keys a tensor's shape comes from, for the message of check_bytes. */
static const char *shaped_by(const char *name) {
    static const struct { const char *part, *keys; } table[] = {
        {"mlp.", "mlp x hidden"}, {"projection", "embedding x hidden"}, {"text.positions", "text.bytes x hidden"},
        {"image.patch.weight", "image.patch^2 x hidden"}, {"image.positions", "(image.size / image.patch)^2 x hidden"},
        {"video.patch.weight", "video.tubelet x video.patch^2 x hidden"},
        {"video.space", "(video.size / video.patch)^2 x hidden"}, {"video.time", "video.frames / video.tubelet x hidden"},
        {"audio.patch.weight", "audio.mels x hidden"}, {"audio.positions", "audio.rate x audio.seconds x hidden"},
        {"attn.qkv", "3 x hidden x hidden"}, {"attn.out", "hidden x hidden"}, {"text.bytes", "260 x hidden"},
        {"choose.head", "256 x hidden"}, {"temperatures", "temperature_groups"}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i)
        if (strstr(name, table[i].part)) return table[i].keys;
    return "hidden";
}

/* The tensors the config implies must fit a checkpoint: the reader refuses data that ends at 2^53
 * bytes or beyond, and every tensor takes at least 2 bytes an element (BF16 or F16). One block's
 * tensors are listed and counted depth times, so this costs the same for any depth. */
static void check_bytes(parser_t *parser, const uform__model_config_t *config) {
    if (failed(parser)) return;
    uform__model_config_t one = *config;
    one.depth = 1;
    uform__tensor_spec_t specs[64];
    size_t count = uform__model_tensor_specs(&one, specs, sizeof specs / sizeof specs[0]);
    uint64_t total = 0, largest = 0;
    size_t which = 0;
    for (size_t i = 0; i < count && i < sizeof specs / sizeof specs[0]; ++i) {
        uint64_t bytes = saturating_multiply(2, saturating_multiply(specs[i].rows, specs[i].columns ? specs[i].columns : 1));
        int per_block = strncmp(specs[i].name, "trunk.", 6) == 0;
        total = saturating_add(total, per_block ? saturating_multiply(bytes, config->depth) : bytes);
        if (bytes > largest) largest = bytes, which = i;
    }
    if (total <= DATA_MAX) return;
    char shape[64];
    if (specs[which].columns) snprintf(shape, sizeof shape, "[%zu, %zu]", specs[which].rows, specs[which].columns);
    else snprintf(shape, sizeof shape, "[%zu]", specs[which].rows);
    const char *name = specs[which].name;
    refuse(parser, UFORM_FORMAT,
           "its tensors would take %s%.3g bytes even as BF16 (with %zu trunk block%s), past the 2^53 - 1 bytes a "
           "checkpoint's data may span; the largest is '%s%s' %s (%s)",
           total == UINT64_MAX ? "over " : "", (double)total, config->depth, config->depth == 1 ? "" : "s",
           strncmp(name, "trunk.0.", 8) == 0 ? "trunk.{i}." : name, strncmp(name, "trunk.0.", 8) == 0 ? name + 8 : "",
           shape, shaped_by(name));
}

uform_status_t uform__model_config_parse(const char *json, uform__model_config_t *config, uform_outcome_t *outcome,
                                         const char *function) {
    memset(config, 0, sizeof *config);
    parser_t parser = {outcome, function, UFORM_OK};
    cJSON *root = NULL;
    /* The terminating NUL counts, as cJSON_Parse counts it. */
    uform_status_t parsed = json ? uform__json_parse(json, strlen(json) + 1, &root, NULL, NULL) : UFORM_FORMAT;
    if (parsed == UFORM_OUT_OF_MEMORY)
        return uform__fail(outcome, parsed, function, "cannot allocate the parsed uform.config (%zu bytes of JSON)", strlen(json));
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return uform__fail(outcome, UFORM_FORMAT, function, "uform.config is not a JSON object");
    }
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!format) {
        refuse(&parser, UFORM_FORMAT, "the required key 'format' is missing");
    } else if (!cJSON_IsNumber(format) && !cJSON_IsString(format)) {
        refuse(&parser, UFORM_FORMAT, "'format' must be 4");
    } else {
        double number = cJSON_IsNumber(format) ? format->valuedouble : atof(format->valuestring);
        if (number > 4) refuse(&parser, UFORM_UNSUPPORTED, "format %g is newer than this library reads (4)", number);
        else if (number != 4) refuse(&parser, UFORM_FORMAT, "format %g is not 4", number);
    }
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(root, "size");
    if (cJSON_IsString(size)) snprintf(config->size, sizeof config->size, "%s", size->valuestring);
    config->hidden = read_size(&parser, root, "hidden", "hidden", 0);
    config->depth = read_integer(&parser, root, "depth", "depth", 0, 1, "1", DEPTH_MAX, DEPTH_REASON);
    config->heads = read_size(&parser, root, "heads", "heads", 0);
    config->mlp = read_size(&parser, root, "mlp", "mlp", 0);
    config->embedding = read_size(&parser, root, "embedding", "embedding", 0);
    config->temperature_groups = read_size(&parser, root, "temperature_groups", "temperature_groups", 1);
    config->norm_eps = 1e-6;
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(root, "norm_eps");
    /* The heads' LayerNorms take it as F32: it must stay positive there. */
    if (!failed(&parser) && eps) {
        if (!cJSON_IsNumber(eps) || !((float)eps->valuedouble > 0.0f) || eps->valuedouble > 1)
            refuse(&parser, UFORM_FORMAT, "'norm_eps' must be in (0, 1] and positive as F32 (above 2^-150)");
        else
            config->norm_eps = eps->valuedouble;
    }
    if (!failed(&parser) && config->heads > config->hidden)
        refuse(&parser, UFORM_FORMAT, "'heads' %zu exceeds hidden %zu (a head is at least 1 wide)", config->heads,
               config->hidden);
    check(&parser, config->hidden % (config->heads ? config->heads : 1) == 0, "hidden %zu is not a multiple of heads %zu",
          config->hidden, config->heads);
    if (!failed(&parser) && config->hidden / config->heads > UFORM__NN_ATTENTION_MAX_HEAD_WIDTH)
        refuse(&parser, UFORM_UNSUPPORTED, "a head width of %zu (hidden %zu / heads %zu) exceeds the attention kernels' %d",
               config->hidden / config->heads, config->hidden, config->heads, UFORM__NN_ATTENTION_MAX_HEAD_WIDTH);

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
            refuse(&parser, UFORM_FORMAT, "'matryoshka' must be an array of 1 to %d sizes", UFORM__MODEL_MAX_MATRYOSHKA);
        } else {
            char path[32], embedding[48];
            snprintf(embedding, sizeof embedding, "embedding %zu", config->embedding);
            for (int i = 0; i < cJSON_GetArraySize(matryoshka) && !failed(&parser); ++i) {
                snprintf(path, sizeof path, "matryoshka[%d]", i);
                config->matryoshka[config->matryoshka_count++] = integer_of(
                    &parser, cJSON_GetArrayItem(matryoshka, i), path, 0, 1, "1", (double)config->embedding, embedding);
            }
        }
    }

    const cJSON *modalities = cJSON_GetObjectItemCaseSensitive(root, "modalities");
    if (!failed(&parser)) {
        if (!cJSON_IsArray(modalities)) {
            refuse(&parser, UFORM_FORMAT, "the required array 'modalities' is %s", modalities ? "not an array" : "missing");
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
                    refuse(&parser, UFORM_FORMAT, "'modalities' lists an unknown modality %s%s%s",
                           cJSON_IsString(item) ? "'" : "", cJSON_IsString(item) ? item->valuestring : "(not a string)",
                           cJSON_IsString(item) ? "'" : "");
                    break;
                }
            }
        }
    }
    if (config->modalities & (1u << UFORM_MODALITY_TEXT)) {
        const cJSON *text = section(&parser, root, "text");
        /* text.positions has T + 2 rows. */
        config->text_bytes = read_integer(&parser, text, "bytes", "text.bytes", 0, 1, "1", EXACT_MAX - 2,
                                          "2^53 - 3 (text.positions has text.bytes + 2 rows, an exact JSON integer)");
    }
    if (config->modalities & (1u << UFORM_MODALITY_IMAGE)) {
        const cJSON *image = section(&parser, root, "image");
        config->image_size = read_integer(&parser, image, "size", "image.size", 0, 1, "1", SIDE_MAX, SIDE_REASON);
        config->image_patch = read_integer(&parser, image, "patch", "image.patch", 0, 1, "1", SIDE_MAX, SIDE_REASON);
        read_triple(&parser, image, "mean", "image.mean", config->image_mean, clip_mean);
        read_triple(&parser, image, "std", "image.std", config->image_std, clip_std);
        check(&parser, config->image_size % (config->image_patch ? config->image_patch : 1) == 0,
              "image.size %zu is not a multiple of image.patch %zu", config->image_size, config->image_patch);
        if (!failed(&parser)) check_normalisation(&parser, "image", config->image_mean, config->image_std);
    }
    if (config->modalities & (1u << UFORM_MODALITY_VIDEO)) {
        const cJSON *video = section(&parser, root, "video");
        const cJSON *image = cJSON_GetObjectItemCaseSensitive(root, "image");
        config->video_size = read_integer(&parser, video, "size", "video.size", 0, 1, "1", SIDE_MAX, SIDE_REASON);
        config->video_patch = read_integer(&parser, video, "patch", "video.patch", 0, 1, "1", SIDE_MAX, SIDE_REASON);
        config->video_frames = read_integer(&parser, video, "frames", "video.frames", 0, 1, "1", FRAMES_MAX, FRAMES_REASON);
        config->video_tubelet = read_integer(&parser, video, "tubelet", "video.tubelet", 0, 1, "1", FRAMES_MAX, FRAMES_REASON);
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
        if (!failed(&parser) && config->video_frames * config->video_size * config->video_size > VIDEO_PIXELS_MAX)
            refuse(&parser, UFORM_FORMAT,
                   "video.frames %zu x video.size %zu^2 is %zu pixels, past the 2^30 of a decoded video "
                   "(docs/preprocessing.md#limits)",
                   config->video_frames, config->video_size, config->video_frames * config->video_size * config->video_size);
        if (!failed(&parser)) check_normalisation(&parser, "video", config->video_mean, config->video_std);
    }
    if (config->modalities & (1u << UFORM_MODALITY_AUDIO)) {
        const cJSON *audio = section(&parser, root, "audio");
        char below[64];
        snprintf(below, sizeof below, "%d Hz (twice the STFT's %d-sample window)", 2 * UFORM__AUDIO_N_FFT, UFORM__AUDIO_N_FFT);
        config->audio_rate = read_integer(&parser, audio, "rate", "audio.rate", 0, 2 * UFORM__AUDIO_N_FFT, below, RATE_MAX,
                                          RATE_REASON);
        config->audio_seconds = read_integer(&parser, audio, "seconds", "audio.seconds", 0, 1, "1", SECONDS_MAX, SECONDS_REASON);
        config->audio_mels = read_integer(&parser, audio, "mels", "audio.mels", 0, 1, "1", MELS_MAX, MELS_REASON);
    }
    cJSON_Delete(root);
    check_bytes(&parser, config);
    return parser.status;
}

/* Building the config's JSON, remembering whether any allocation failed: cJSON's Add functions
 * answer NULL then, and printing a tree with holes would write a checkpoint whose config lacks keys. */
typedef struct printer_t {
    int failed;
} printer_t;

static cJSON *add_object(printer_t *printer, cJSON *parent, const char *key) {
    cJSON *object = cJSON_AddObjectToObject(parent, key);
    printer->failed |= !object;
    return object;
}

static cJSON *add_array(printer_t *printer, cJSON *parent, const char *key) {
    cJSON *array = cJSON_AddArrayToObject(parent, key);
    printer->failed |= !array;
    return array;
}

static void add_number(printer_t *printer, cJSON *parent, const char *key, double value) {
    printer->failed |= !cJSON_AddNumberToObject(parent, key, value);
}

/* Appends `item` (which may be NULL after a failed allocation) to `array`, or frees it. */
static void append(printer_t *printer, cJSON *array, cJSON *item) {
    if (!item || !array || !cJSON_AddItemToArray(array, item)) {
        printer->failed = 1;
        cJSON_Delete(item);
    }
}

char *uform__model_config_print(const uform__model_config_t *config) {
    printer_t printer = {0};
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    add_number(&printer, root, "format", 4);
    printer.failed |= !cJSON_AddStringToObject(root, "size", config->size);
    add_number(&printer, root, "hidden", (double)config->hidden);
    add_number(&printer, root, "depth", (double)config->depth);
    add_number(&printer, root, "heads", (double)config->heads);
    add_number(&printer, root, "mlp", (double)config->mlp);
    add_number(&printer, root, "embedding", (double)config->embedding);
    cJSON *matryoshka = add_array(&printer, root, "matryoshka");
    for (size_t i = 0; i < config->matryoshka_count; ++i)
        append(&printer, matryoshka, cJSON_CreateNumber((double)config->matryoshka[i]));
    add_number(&printer, root, "temperature_groups", (double)config->temperature_groups);
    add_number(&printer, root, "norm_eps", config->norm_eps);
    cJSON *modalities = add_array(&printer, root, "modalities");
    for (int m = 0; m < 4; ++m)
        if (config->modalities & (1u << m)) append(&printer, modalities, cJSON_CreateString(modality_names[m]));
    if (config->modalities & (1u << UFORM_MODALITY_TEXT)) {
        cJSON *text = add_object(&printer, root, "text");
        add_number(&printer, text, "bytes", (double)config->text_bytes);
    }
    if (config->modalities & (1u << UFORM_MODALITY_IMAGE)) {
        cJSON *image = add_object(&printer, root, "image");
        add_number(&printer, image, "size", (double)config->image_size);
        add_number(&printer, image, "patch", (double)config->image_patch);
        cJSON *mean = add_array(&printer, image, "mean"), *std = add_array(&printer, image, "std");
        for (int c = 0; c < 3; ++c) {
            append(&printer, mean, cJSON_CreateNumber(config->image_mean[c]));
            append(&printer, std, cJSON_CreateNumber(config->image_std[c]));
        }
    }
    if (config->modalities & (1u << UFORM_MODALITY_VIDEO)) {
        cJSON *video = add_object(&printer, root, "video");
        add_number(&printer, video, "size", (double)config->video_size);
        add_number(&printer, video, "patch", (double)config->video_patch);
        add_number(&printer, video, "frames", (double)config->video_frames);
        add_number(&printer, video, "tubelet", (double)config->video_tubelet);
        /* Written only where they differ from what the parser would take in their absence (the
         * image's, else CLIP's), so a config without them prints as it always did. */
        int image = (config->modalities & (1u << UFORM_MODALITY_IMAGE)) != 0;
        const float *inferred_mean = image ? config->image_mean : clip_mean, *inferred_std = image ? config->image_std : clip_std;
        const float *values[2] = {config->video_mean, config->video_std}, *inferred[2] = {inferred_mean, inferred_std};
        static const char *const keys[2] = {"mean", "std"};
        for (int k = 0; k < 2; ++k) {
            if (memcmp(values[k], inferred[k], 3 * sizeof(float)) == 0) continue;
            cJSON *triple = add_array(&printer, video, keys[k]);
            for (int c = 0; c < 3; ++c) append(&printer, triple, cJSON_CreateNumber(values[k][c]));
        }
    }
    if (config->modalities & (1u << UFORM_MODALITY_AUDIO)) {
        cJSON *audio = add_object(&printer, root, "audio");
        add_number(&printer, audio, "rate", (double)config->audio_rate);
        add_number(&printer, audio, "seconds", (double)config->audio_seconds);
        add_number(&printer, audio, "mels", (double)config->audio_mels);
    }
    char *json = printer.failed ? NULL : cJSON_PrintUnformatted(root);
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
