/*
 * uform_model_tokens against counts it does not compute: for native `tiny` and `small` checkpoints
 * and random-weight CLIP, SigLIP and UForm 3 (large: 4 register tokens) folders, every modality's
 * count is compared with
 *   - the published architecture's count, computed here from the checkpoint's description (native:
 *     (S/p)² + 1, (F/t)·(S/p)² + 1, ⌊rate·seconds/160⌋/4 + 1, min(bytes, T) + 1) or from the
 *     folder's config.json (CLIP (S/p)² + 1, SigLIP (S/p)² with no class token and texts padded to
 *     their max_position_embeddings, UForm 3 (S/p)² + 1 + num_reg_tokens, a long text cut at the
 *     text tower's positions);
 *   - the rows the encoder returns for that item (its `states` offsets and `stats.tokens`), where an
 *     encode is cheap (every tiny tower; `small`'s text and image only: its video and audio take
 *     seconds, and their counts come from the same function as the image's);
 * and the failures: NULL model or count, a modality outside the enum or without a tower, NULL text.
 * Usage: test_model_tokens TINY SMALL CLIP_FOLDER SIGLIP_FOLDER UFORM3_FOLDER
 */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/read_file.h"
#include "demo_media.h"
#include "uform/uform.h"

/* Media items made once: a JPEG, a WAV and an MP4 (NULL without FFmpeg). */
typedef struct media_t {
    unsigned char *bytes[4];
    size_t sizes[4];
} media_t;

static const char short_text[] = "a photo of a cat";
static char long_text[4096];

/* Encodes one item of `modality` asking for its states; answers the rows the encoder gave item 0
 * (and its stats' token count in *stats_tokens), or (size_t)-1 when the encode failed. */
static size_t encoded_rows(uform_model_t model, uform_arena_t arena, uform_modality_t modality, const void *bytes,
                           size_t size, size_t *stats_tokens) {
    size_t offsets[2] = {0, size};
    uform_tape_t tape = {bytes, offsets, 1};
    uform_encode_stats_t stats;
    memset(&stats, 0, sizeof stats);
    uform_encode_config_t config;
    memset(&config, 0, sizeof config);
    config.stats = &stats;
    uform_status_t status;
    uform_encoded_t encoded;
    uform_outcome_t outcome;
    /* The four verbs' requests share their layout, field by field; each is filled by name. */
    switch (modality) {
    case UFORM_MODALITY_TEXT: {
        uform_text_encode_t request;
        memset(&request, 0, sizeof request);
        request.model = model, request.texts = tape, request.outputs = UFORM_OUTPUTS_STATES, request.arena = arena;
        request.config = config;
        status = uform_text_encode(&request);
        encoded = request.encoded, outcome = request.outcome;
        break;
    }
    case UFORM_MODALITY_IMAGE: {
        uform_image_encode_t request;
        memset(&request, 0, sizeof request);
        request.model = model, request.images = tape, request.outputs = UFORM_OUTPUTS_STATES, request.arena = arena;
        request.config = config;
        status = uform_image_encode(&request);
        encoded = request.encoded, outcome = request.outcome;
        break;
    }
    case UFORM_MODALITY_VIDEO: {
        uform_video_encode_t request;
        memset(&request, 0, sizeof request);
        request.model = model, request.videos = tape, request.outputs = UFORM_OUTPUTS_STATES, request.arena = arena;
        request.config = config;
        status = uform_video_encode(&request);
        encoded = request.encoded, outcome = request.outcome;
        break;
    }
    default: {
        uform_audio_encode_t request;
        memset(&request, 0, sizeof request);
        request.model = model, request.recordings = tape, request.outputs = UFORM_OUTPUTS_STATES, request.arena = arena;
        request.config = config;
        status = uform_audio_encode(&request);
        encoded = request.encoded, outcome = request.outcome;
        break;
    }
    }
    CHECK_STATUS(status, UFORM_OK);
    if (status != UFORM_OK) {
        char line[640];
        uform_outcome_format(&outcome, line, sizeof line);
        fprintf(stderr, "  encode: %s\n", line);
        return (size_t)-1;
    }
    CHECK_EQ_INT(encoded.states.count, 1);
    if (encoded.states.count != 1 || !encoded.states.offsets) return (size_t)-1;
    *stats_tokens = stats.tokens;
    return encoded.states.offsets[1] - encoded.states.offsets[0];
}

/* One item's count from uform_model_tokens, compared with `expected` (the architecture's count,
 * or 0 for none) and, when `encode` is set, with the encoder's rows for the same item. */
static void check_item(const char *what, uform_model_t model, uform_arena_t arena, uform_modality_t modality,
                       const void *bytes, size_t size, size_t expected, int encode) {
    size_t count = 0;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform_model_tokens(model, modality, bytes, size, &count, &outcome), UFORM_OK);
    printf("  %-34s %5zu tokens (architecture %zu)\n", what, count, expected);
    CHECK_MSG(count > 0, "%s: no tokens", what);
    if (expected) CHECK_MSG(count == expected, "%s: %zu tokens, the architecture runs %zu", what, count, expected);
    if (encode) {
        size_t stats_tokens = 0, rows = encoded_rows(model, arena, modality, bytes, size, &stats_tokens);
        CHECK_MSG(rows == count, "%s: %zu tokens, the encoder returned %zu rows", what, count, rows);
        CHECK_MSG(stats_tokens == count, "%s: %zu tokens, the encode's stats counted %zu", what, count, stats_tokens);
    }
    if (modality == UFORM_MODALITY_TEXT) {
        size_t tokenized = 0;
        CHECK_STATUS(uform_text_tokenize(model, bytes, size, NULL, 0, &tokenized, NULL), UFORM_OK);
        CHECK_MSG(tokenized == count, "%s: %zu tokens, uform_text_tokenize counts %zu", what, count, tokenized);
    } else {
        /* A media count does not read the item: none at all gives the same count. */
        size_t without = 0;
        CHECK_STATUS(uform_model_tokens(model, modality, NULL, 0, &without, NULL), UFORM_OK);
        CHECK_MSG(without == count, "%s: %zu tokens with the item, %zu without", what, count, without);
    }
}

static void check_native(const char *path, const media_t *media, uform_arena_t arena, int encode_all) {
    printf("%s\n", path);
    uform_model_t model = NULL;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform_model_load_ram(NULL, path, NULL, &model, &outcome), UFORM_OK);
    if (!model) return;
    uform_model_describe_t describe = {model};
    CHECK_STATUS(uform_model_describe(&describe), UFORM_OK);
    const uform_model_description_t *d = &describe.description;
    CHECK_EQ_INT(d->modalities, 15u);
    CHECK(d->image_patch && d->video_patch && d->video_tubelet);
    if (d->modalities != 15u || !d->image_patch || !d->video_patch || !d->video_tubelet) {
        uform_model_free(model);
        return;
    }
    size_t image_side = d->image_size / d->image_patch, video_side = d->video_size / d->video_patch;
    size_t long_length = strlen(long_text);
    CHECK(long_length > d->text_bytes);
    check_item("text (short)", model, arena, UFORM_MODALITY_TEXT, short_text, strlen(short_text), strlen(short_text) + 1, 1);
    check_item("text (longer than text_bytes)", model, arena, UFORM_MODALITY_TEXT, long_text, long_length, d->text_bytes + 1, 1);
    check_item("text (empty)", model, arena, UFORM_MODALITY_TEXT, "", 0, 1, 1);
    check_item("image", model, arena, UFORM_MODALITY_IMAGE, media->bytes[1], media->sizes[1], image_side * image_side + 1, 1);
    /* Whisper's hop of 160 samples, 4 frames a token, one class token. */
    size_t audio = d->audio_rate * d->audio_seconds / 160 / 4 + 1;
    check_item("audio", model, arena, UFORM_MODALITY_AUDIO, media->bytes[3], media->sizes[3], audio, encode_all);
    size_t video = d->video_frames / d->video_tubelet * video_side * video_side + 1;
    check_item("video", model, arena, UFORM_MODALITY_VIDEO, media->bytes[2], media->sizes[2], video,
               encode_all && media->bytes[2]);
    uform_model_free(model);
}

/* A size from a config.json section, `fallback` where the key is absent (transformers' defaults). */
static size_t json_size(const cJSON *section, const char *key, size_t fallback) {
    const cJSON *value = cJSON_GetObjectItemCaseSensitive(section, key);
    return cJSON_IsNumber(value) ? (size_t)value->valuedouble : fallback;
}

typedef enum family_t { FAMILY_CLIP, FAMILY_SIGLIP, FAMILY_UFORM3 } family_t;

static void check_published(const char *folder, family_t family, const media_t *media, uform_arena_t arena) {
    printf("%s\n", folder);
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", folder);
    size_t length = 0;
    char *text = test_read_file(path, &length); /* not NUL-terminated: parse by length */
    CHECK_MSG(text != NULL, "cannot read %s", path);
    cJSON *root = text ? cJSON_ParseWithLength(text, length) : NULL;
    free(text);
    CHECK_MSG(root != NULL, "%s is not JSON", path);
    uform_model_t model = NULL;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform_model_load_ram(NULL, folder, NULL, &model, &outcome), UFORM_OK);
    if (!root || !model) {
        cJSON_Delete(root);
        uform_model_free(model);
        return;
    }
    /* The architecture's counts from config.json: patches of the vision tower, its class and
     * register rows; the text tower's positions (transformers' defaults where a key is absent). */
    const cJSON *vision = cJSON_GetObjectItemCaseSensitive(root, family == FAMILY_UFORM3 ? "image_encoder" : "vision_config");
    const cJSON *texts = cJSON_GetObjectItemCaseSensitive(root, family == FAMILY_UFORM3 ? "text_encoder" : "text_config");
    size_t side = json_size(vision, "image_size", 224) / json_size(vision, "patch_size", family == FAMILY_CLIP ? 32 : 16);
    size_t image = side * side + (family == FAMILY_SIGLIP ? 0 : 1) + json_size(vision, "num_reg_tokens", 0);
    size_t positions = json_size(texts, "max_position_embeddings", family == FAMILY_CLIP ? 77 : 64);
    check_item("image", model, arena, UFORM_MODALITY_IMAGE, media->bytes[1], media->sizes[1], image, 1);
    /* SigLIP pads every text to its positions (padding="max_length"); the others' short texts have
     * no count to compare but the encoder's. */
    check_item("text (short)", model, arena, UFORM_MODALITY_TEXT, short_text, strlen(short_text),
               family == FAMILY_SIGLIP ? positions : 0, 1);
    check_item("text (longer than the positions)", model, arena, UFORM_MODALITY_TEXT, long_text, strlen(long_text),
               positions, 1);
    /* No audio or video tower: a specific refusal. */
    size_t count = 7;
    CHECK_STATUS(uform_model_tokens(model, UFORM_MODALITY_AUDIO, NULL, 0, &count, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_EQ_INT(count, 0);
    CHECK_CONTAINS(outcome.message, "the model has no audio tower");
    CHECK_STATUS(uform_model_tokens(model, UFORM_MODALITY_VIDEO, NULL, 0, &count, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "the model has no video tower");
    cJSON_Delete(root);
    uform_model_free(model);
}

static void check_refusals(const char *path) {
    uform_model_t model = NULL;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform_model_load_ram(NULL, path, NULL, &model, &outcome), UFORM_OK);
    if (!model) return;
    size_t count = 0;
    CHECK_STATUS(uform_model_tokens(NULL, UFORM_MODALITY_TEXT, "a", 1, &count, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.function, "uform_model_tokens");
    CHECK_CONTAINS(outcome.message, "model is NULL");
    CHECK_STATUS(uform_model_tokens(model, UFORM_MODALITY_TEXT, "a", 1, NULL, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "count is NULL");
    CHECK_STATUS(uform_model_tokens(model, (uform_modality_t)4, "a", 1, &count, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "modality 4 is not a uform_modality_t");
    CHECK_STATUS(uform_model_tokens(model, (uform_modality_t)-1, "a", 1, &count, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "modality -1 is not a uform_modality_t");
    CHECK_STATUS(uform_model_tokens(model, UFORM_MODALITY_TEXT, NULL, 3, &count, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "bytes is NULL with a size of 3");
    /* A success names the function too, and a NULL outcome is allowed. */
    CHECK_STATUS(uform_model_tokens(model, UFORM_MODALITY_TEXT, "ab", 2, &count, &outcome), UFORM_OK);
    CHECK_CONTAINS(outcome.function, "uform_model_tokens");
    CHECK_STATUS(uform_model_tokens(model, UFORM_MODALITY_IMAGE, NULL, 0, &count, NULL), UFORM_OK);
    uform_model_free(model);
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: test_model_tokens TINY SMALL CLIP_FOLDER SIGLIP_FOLDER UFORM3_FOLDER\n");
        return 2;
    }
    /* A long text of words every tokenizer splits: well over any tower's positions and text_bytes. */
    while (strlen(long_text) + 32 < sizeof long_text) strcat(long_text, "a photo of a cat on the mat, ");
    media_t media;
    memset(&media, 0, sizeof media);
    static uint8_t pixels[48 * 64 * 3];
    const uint8_t blue[3] = {20, 40, 230};
    demo_draw(pixels, 64, 48, 0, blue, 30, 20, 10);
    media.bytes[1] = demo_jpeg(pixels, 64, 48, &media.sizes[1]);
    media.bytes[2] = demo_mp4(blue, 64, 48, 9, &media.sizes[2]);
    media.bytes[3] = demo_wav(440, 16000, 1, 0.5, &media.sizes[3]);
    CHECK(media.bytes[1] && media.bytes[3]);
#if UFORM_WITH_FFMPEG
    CHECK(media.bytes[2] != NULL);
#endif
    uform_arena_t arena = NULL;
    CHECK_STATUS(uform_arena_for_host(&arena, NULL), UFORM_OK);
    if (arena && media.bytes[1] && media.bytes[3]) {
        check_native(argv[1], &media, arena, 1);
        check_native(argv[2], &media, arena, 0);
        check_published(argv[3], FAMILY_CLIP, &media, arena);
        check_published(argv[4], FAMILY_SIGLIP, &media, arena);
        check_published(argv[5], FAMILY_UFORM3, &media, arena);
        check_refusals(argv[1]);
    }
    uform_arena_free(arena);
    for (int m = 0; m < 4; ++m) free(media.bytes[m]);
    return check_finish();
}
