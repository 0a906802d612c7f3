/*
 * The index API end to end on the tiny checkpoint (argv[1]), with media made in memory:
 *   - uform_media_probe on every kind the demo encoders make, text, random bytes and nothing;
 *   - uform_media_prepare + uform_prepared_encode equal the encode verbs bit for bit, a bad item in
 *     the middle is reported in its own outcome without failing the call, misuse is refused;
 *   - fingerprints: stable per checkpoint, different for another seed; the same for the same config
 *     written otherwise, different for a changed config value or weight; an index carrying the
 *     fingerprint earlier builds gave a checkpoint (hashing its stored config text) still opens;
 *   - a builder's file reopens with the same items, paths, metadata; a copy through
 *     uform_index_builder_from writes the same bytes; another checkpoint is UFORM_CONFIG_MISMATCH;
 *     a truncated file and a checkpoint are UFORM_FORMAT;
 *   - search finds an item from its own embedding.
 */
#include <unistd.h>

#include "common/check.h"
#include "common/read_file.h"
#include "demo_media.h"
#include "model/config.h"
#include "model/layout.h"
#include "model/model.h"
#include "io/safetensors.h"
#include "uform/uform.h"

static const char *checkpoint;
static char work[256];

static void path_in_work(char *buffer, size_t capacity, const char *name) { snprintf(buffer, capacity, "%s/%s", work, name); }

/* A tape of `count` buffers. */
typedef struct files_t {
    unsigned char *data;
    size_t offsets[16];
    size_t count;
} files_t;

static void add(files_t *files, const void *bytes, size_t size) {
    size_t at = files->count ? files->offsets[files->count] : 0;
    files->data = realloc(files->data, at + size + 1);
    memcpy(files->data + at, bytes, size);
    files->offsets[0] = 0;
    files->offsets[++files->count] = at + size;
}

static void test_probe(void) {
    uint8_t pixels[64 * 48 * 3];
    const uint8_t red[3] = {200, 30, 30};
    demo_draw(pixels, 64, 48, 0, red, 32, 24, 12);
    size_t size = 0;
    uform_modality_t modality;
    uform_outcome_t outcome = {0};
    unsigned char *jpeg = demo_jpeg(pixels, 64, 48, &size);
    CHECK_STATUS(uform_media_probe(jpeg, size, &modality, &outcome), UFORM_OK);
    CHECK_EQ_INT(modality, UFORM_MODALITY_IMAGE);
    free(jpeg);
    unsigned char *wav = demo_wav(440, 16000, 2, 0.5, &size);
    CHECK_STATUS(uform_media_probe(wav, size, &modality, &outcome), UFORM_OK);
    CHECK_EQ_INT(modality, UFORM_MODALITY_AUDIO);
    free(wav);
#if UFORM_WITH_FFMPEG
    unsigned char *mp4 = demo_mp4(red, 64, 48, 8, &size);
    CHECK(mp4 != NULL);
    if (mp4) {
        CHECK_STATUS(uform_media_probe(mp4, size, &modality, &outcome), UFORM_OK);
        CHECK_EQ_INT(modality, UFORM_MODALITY_VIDEO);
        /* Cut before its track headers, the container is still called video (its brand is isom). */
        CHECK_STATUS(uform_media_probe(mp4, 40, &modality, &outcome), UFORM_OK);
        free(mp4);
    }
#endif
    const char text[] = "caf\xC3\xA9 au lait\n\ttwo lines";
    CHECK_STATUS(uform_media_probe(text, sizeof text - 1, &modality, &outcome), UFORM_OK);
    CHECK_EQ_INT(modality, UFORM_MODALITY_TEXT);
    const unsigned char noise[] = {0x13, 0x99, 0xFE, 0x00, 0x42, 0xC3};
    CHECK_STATUS(uform_media_probe(noise, sizeof noise, &modality, &outcome), UFORM_FORMAT);
    CHECK_CONTAINS(outcome.message, "neither media of a known format nor UTF-8 text");
    const char overlong[] = "\xC0\xAF";
    CHECK_STATUS(uform_media_probe(overlong, 2, &modality, &outcome), UFORM_FORMAT);
    CHECK_STATUS(uform_media_probe("", 0, &modality, &outcome), UFORM_FORMAT);
    CHECK_CONTAINS(outcome.message, "empty");
    CHECK_STATUS(uform_media_probe(NULL, 3, &modality, &outcome), UFORM_INVALID_ARGUMENT);
}

static int same_rows(const uform_matrix_t *a, const uform_matrix_t *b, size_t rows) {
    if (a->rows != rows || b->rows != rows || a->columns != b->columns) return 0;
    for (size_t r = 0; r < rows; ++r)
        if (memcmp((char *)a->data + r * a->stride_bytes, (char *)b->data + r * b->stride_bytes,
                   uform_scalar_row_bytes(a->scalar, a->columns)) != 0)
            return 0;
    return 1;
}

static void test_prepare(uform_model_t model, uform_executor_t executor) {
    uform_arena_t decoded = NULL, encoded = NULL, direct = NULL;
    uform_arena_for_executor(executor, &decoded, NULL);
    uform_arena_for_executor(executor, &encoded, NULL);
    uform_arena_for_executor(executor, &direct, NULL);
    uint8_t pixels[80 * 60 * 3];
    files_t good = {0}, mixed = {0};
    for (int i = 0; i < 3; ++i) {
        const uint8_t colour[3] = {(uint8_t)(60 * i), 120, (uint8_t)(200 - 50 * i)};
        demo_draw(pixels, 80, 60, i & 1, colour, 20 + 15 * i, 30, 10 + 3 * i);
        size_t size;
        unsigned char *bytes = i == 1 ? demo_webp(pixels, 80, 60, &size) : demo_jpeg(pixels, 80, 60, &size);
        add(&good, bytes, size);
        add(&mixed, bytes, size);
        if (i == 0) add(&mixed, "\xFF\xD8\xFF\xE0 truncated", 14); /* a JPEG that ends at once */
        free(bytes);
    }
    uform_media_prepare_t prepare = {0};
    prepare.model = model, prepare.executor = executor, prepare.modality = UFORM_MODALITY_IMAGE;
    prepare.files = (uform_tape_t){mixed.data, mixed.offsets, mixed.count};
    prepare.arena = decoded;
    CHECK_STATUS(uform_media_prepare(&prepare), UFORM_OK);
    CHECK_EQ_INT(prepare.prepared.count, 4);
    CHECK_EQ_INT(prepare.prepared.failed, 1);
    CHECK_STATUS(prepare.prepared.item_outcomes[1].status, UFORM_FORMAT);
    CHECK_STATUS(prepare.prepared.item_outcomes[0].status, UFORM_OK);
    CHECK_CONTAINS(prepare.prepared.item_outcomes[1].function, "uform_media_prepare");
    CHECK(prepare.prepared.item_outcomes[1].message[0] != 0);
    CHECK_EQ_INT(prepare.prepared.rows_per_item, 16); /* tiny: (32/8)² patches */

    uform_prepared_encode_t request = {0};
    request.model = model, request.executor = executor, request.prepared = &prepare.prepared, request.arena = encoded;
    request.outputs = UFORM_OUTPUTS_EMBEDDINGS | UFORM_OUTPUTS_TOKEN_VECTORS;
    CHECK_STATUS(uform_prepared_encode(&request), UFORM_OK);
    uform_image_encode_t reference = {0};
    reference.model = model, reference.executor = executor, reference.arena = direct;
    reference.images = (uform_tape_t){good.data, good.offsets, good.count};
    reference.outputs = UFORM_OUTPUTS_EMBEDDINGS | UFORM_OUTPUTS_TOKEN_VECTORS;
    CHECK_STATUS(uform_image_encode(&reference), UFORM_OK);
    CHECK_MSG(same_rows(&request.encoded.embeddings, &reference.encoded.embeddings, 3),
              "prepared embeddings differ from uform_image_encode's");
    CHECK(same_rows(&request.encoded.token_vectors.matrix, &reference.encoded.token_vectors.matrix, 3 * 17));
    CHECK_EQ_INT(request.encoded.token_vectors.count, 3);

    /* Misuse: the prepared rows' own arena; a stale prepared. */
    request.arena = decoded;
    CHECK_STATUS(uform_prepared_encode(&request), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(request.outcome.message, "own arena");
    request.arena = encoded;
    uform_media_prepare_t again = prepare;
    CHECK_STATUS(uform_media_prepare(&again), UFORM_OK); /* rewrites `decoded`: prepare.prepared is stale now */
    CHECK_STATUS(uform_prepared_encode(&request), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(request.outcome.message, "stale");
    uform_media_prepare_t text = prepare;
    text.modality = UFORM_MODALITY_TEXT;
    CHECK_STATUS(uform_media_prepare(&text), UFORM_INVALID_ARGUMENT);

    /* Audio: prepared equals uform_audio_encode. */
    files_t recordings = {0};
    for (int i = 0; i < 2; ++i) {
        size_t size;
        unsigned char *wav = demo_wav(300 + 200 * i, 22050, 1 + i, 0.7, &size);
        add(&recordings, wav, size);
        free(wav);
    }
    uform_media_prepare_t audio = {0};
    audio.model = model, audio.executor = executor, audio.modality = UFORM_MODALITY_AUDIO, audio.arena = decoded;
    audio.files = (uform_tape_t){recordings.data, recordings.offsets, recordings.count};
    CHECK_STATUS(uform_media_prepare(&audio), UFORM_OK);
    CHECK_EQ_INT(audio.prepared.failed, 0);
    uform_prepared_encode_t audio_encode = {0};
    audio_encode.model = model, audio_encode.executor = executor, audio_encode.prepared = &audio.prepared;
    audio_encode.arena = encoded;
    CHECK_STATUS(uform_prepared_encode(&audio_encode), UFORM_OK);
    uform_audio_encode_t audio_reference = {0};
    audio_reference.model = model, audio_reference.executor = executor, audio_reference.arena = direct;
    audio_reference.recordings = audio.files;
    CHECK_STATUS(uform_audio_encode(&audio_reference), UFORM_OK);
    CHECK(same_rows(&audio_encode.encoded.embeddings, &audio_reference.encoded.embeddings, 2));

    free(good.data), free(mixed.data), free(recordings.data);
    uform_arena_free(decoded), uform_arena_free(encoded), uform_arena_free(direct);
}

static void test_index(uform_model_t model, uform_executor_t executor) {
    char fingerprint[UFORM_FINGERPRINT_CAPACITY], again[UFORM_FINGERPRINT_CAPACITY];
    CHECK_STATUS(uform_model_fingerprint(model, fingerprint, NULL), UFORM_OK);
    CHECK_EQ_INT(strlen(fingerprint), 32);
    CHECK_STATUS(uform_model_fingerprint(model, again, NULL), UFORM_OK);
    CHECK(strcmp(fingerprint, again) == 0);
    /* A checkpoint this project wrote stores its config as printed: its fingerprint is the one
     * earlier builds gave it, so indexes built before keep opening. */
    CHECK(strcmp(uform__safetensors_metadata_find(model->file, "uform.config"), model->config_text) == 0);

    /* Another checkpoint: same shape, another seed. */
    char other_path[300];
    path_in_work(other_path, sizeof other_path, "other.safetensors");
    uform__model_config_t config;
    uform__model_config_named("tiny", &config, NULL, "test");
    CHECK_STATUS(uform__model_write_random(other_path, &config, 99, NULL, "test"), UFORM_OK);
    uform_model_t other = NULL;
    CHECK_STATUS(uform_model_load_ram(NULL, other_path, NULL, &other, NULL), UFORM_OK);
    char other_fingerprint[UFORM_FINGERPRINT_CAPACITY];
    CHECK_STATUS(uform_model_fingerprint(other, other_fingerprint, NULL), UFORM_OK);
    CHECK(strcmp(fingerprint, other_fingerprint) != 0);

    const char texts[] = "a red circlea blue squareaudio of a bellthe fourth";
    size_t offsets[] = {0, 12, 25, 40, 50};
    const char names[] = "one.txttwo.txtthree.txtfour";
    size_t name_offsets[] = {0, 7, 14, 23, 27};
    uform_arena_t arena = NULL;
    uform_arena_for_executor(executor, &arena, NULL);
    uform_text_encode_t encode = {0};
    encode.model = model, encode.executor = executor, encode.arena = arena;
    encode.texts = (uform_tape_t){texts, offsets, 4};
    encode.config.dimensions = 32;
    CHECK_STATUS(uform_text_encode(&encode), UFORM_OK);

    uform_index_builder_t builder = NULL;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform_index_builder_create(model, 32, UFORM_SCALAR_F32, &builder, &outcome), UFORM_OK);
    CHECK_STATUS(uform_index_builder_create(model, 999, UFORM_SCALAR_F32, &(uform_index_builder_t){NULL}, &outcome),
                 UFORM_INVALID_ARGUMENT);
    uform_matrix_t first_three = encode.encoded.embeddings, last = encode.encoded.embeddings;
    first_three.rows = 3;
    last.rows = 1, last.data = (char *)last.data + 3 * last.stride_bytes;
    uform_tape_t three_names = {names, name_offsets, 3}, last_name = {names, name_offsets + 3, 1};
    CHECK_STATUS(uform_index_builder_add(builder, UFORM_MODALITY_TEXT, &first_three, &three_names, &outcome), UFORM_OK);
    CHECK_STATUS(uform_index_builder_add(builder, UFORM_MODALITY_IMAGE, &last, &last_name, &outcome), UFORM_OK);
    /* Refusals leave the builder unchanged. */
    uform_tape_t two_names = {names, name_offsets, 2};
    CHECK_STATUS(uform_index_builder_add(builder, UFORM_MODALITY_TEXT, &first_three, &two_names, &outcome),
                 UFORM_INVALID_ARGUMENT);
    uform_matrix_t wrong = first_three;
    wrong.scalar = UFORM_SCALAR_BF16;
    CHECK_STATUS(uform_index_builder_add(builder, UFORM_MODALITY_TEXT, &wrong, &three_names, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "the index holds 32 of f32");
    uform_index_description_t description;
    uform_index_builder_describe(builder, &description);
    CHECK_EQ_INT(description.count, 4);
    CHECK_EQ_INT(description.counts[UFORM_MODALITY_TEXT], 3);
    CHECK_EQ_INT(description.counts[UFORM_MODALITY_IMAGE], 1);

    char index_path[300], copy_path[300];
    path_in_work(index_path, sizeof index_path, "one.index");
    path_in_work(copy_path, sizeof copy_path, "copy.index");
    const char *metadata[] = {"uform.cli.consumed", "4"}, *reserved[] = {"uform.index.count", "7"};
    CHECK_STATUS(uform_index_builder_write(builder, index_path, reserved, 1, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(uform_index_builder_write(builder, index_path, metadata, 1, &outcome), UFORM_OK);
    CHECK_STATUS(uform_index_builder_write(builder, "/nonexistent-folder/x.index", NULL, 0, &outcome), UFORM_IO);
    CHECK_CONTAINS(outcome.function, "uform_index_builder_write");

    uform_index_t index = NULL;
    CHECK_STATUS(uform_index_open(index_path, model, &index, &outcome), UFORM_OK);
    uform_index_describe(index, &description);
    CHECK_EQ_INT(description.count, 4);
    CHECK_EQ_INT(description.dimensions, 32);
    CHECK(strcmp(description.fingerprint, fingerprint) == 0);
    CHECK(uform_index_metadata(index, "uform.cli.consumed") && strcmp(uform_index_metadata(index, "uform.cli.consumed"), "4") == 0);
    const char *path;
    size_t length;
    uform_modality_t modality;
    CHECK_STATUS(uform_index_item(index, 2, &modality, &path, &length), UFORM_OK);
    CHECK(length == 9 && memcmp(path, "three.txt", 9) == 0 && modality == UFORM_MODALITY_TEXT);
    CHECK_STATUS(uform_index_item(index, 3, &modality, &path, &length), UFORM_OK);
    CHECK(length == 4 && memcmp(path, "four", 4) == 0 && modality == UFORM_MODALITY_IMAGE);
    CHECK_STATUS(uform_index_item(index, 4, &modality, &path, &length), UFORM_INVALID_ARGUMENT);

    /* A copy writes the same bytes. */
    uform_index_builder_t copy = NULL;
    CHECK_STATUS(uform_index_builder_from(index, &copy, &outcome), UFORM_OK);
    CHECK_STATUS(uform_index_builder_write(copy, copy_path, metadata, 1, &outcome), UFORM_OK);
    size_t size_a = 0, size_b = 0;
    unsigned char *a = test_read_file(index_path, &size_a), *b = test_read_file(copy_path, &size_b);
    CHECK(a && b && size_a == size_b && memcmp(a, b, size_a) == 0);

    /* Search: each text finds itself first, the image row too (scores near 1). */
    uform_index_search_t search = {0};
    search.index = index, search.executor = executor, search.arena = arena;
    search.queries = encode.encoded.embeddings.data, search.queries_count = 4, search.queries_columns = 32;
    search.queries_stride = encode.encoded.embeddings.stride_bytes, search.top = 2;
    uform_arena_t search_arena = NULL;
    uform_arena_for_executor(executor, &search_arena, NULL);
    search.arena = search_arena;
    CHECK_STATUS(uform_index_search(&search), UFORM_OK);
    CHECK_EQ_INT(search.hits_per_query, 2);
    for (size_t j = 0; j < 4; ++j) {
        CHECK_EQ_INT(search.hits[2 * j].item, j);
        CHECK_NEAR(search.hits[2 * j].score, 1.0, 1e-5, 0);
    }
    CHECK_EQ_INT(search.hits[6].modality, UFORM_MODALITY_IMAGE);
    search.modalities = 1u << UFORM_MODALITY_IMAGE, search.top = 5;
    CHECK_STATUS(uform_index_search(&search), UFORM_OK);
    CHECK_EQ_INT(search.hits_per_query, 1);
    search.queries_columns = 64;
    CHECK_STATUS(uform_index_search(&search), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(search.outcome.message, "the index holds 32");

    /* Another checkpoint is refused; so are a truncated index and a checkpoint. */
    uform_index_t refused = (uform_index_t)1;
    CHECK_STATUS(uform_index_open(index_path, other, &refused, &outcome), UFORM_CONFIG_MISMATCH);
    CHECK(refused == NULL);
    CHECK_CONTAINS(outcome.message, fingerprint);
    CHECK_CONTAINS(outcome.function, "uform_index_open");
    char truncated_path[300];
    path_in_work(truncated_path, sizeof truncated_path, "truncated.index");
    FILE *file = fopen(truncated_path, "wb");
    fwrite(a, 1, size_a / 2, file);
    fclose(file);
    CHECK_STATUS(uform_index_open(truncated_path, NULL, &refused, &outcome), UFORM_FORMAT);
    CHECK_STATUS(uform_index_open(checkpoint, NULL, &refused, &outcome), UFORM_FORMAT);
    CHECK_CONTAINS(outcome.message, "not a UForm index");
    char missing[300];
    path_in_work(missing, sizeof missing, "missing.index");
    CHECK_STATUS(uform_index_open(missing, NULL, &refused, &outcome), UFORM_IO);

    free(a), free(b);
    uform_index_free(index);
    uform_index_builder_free(copy);
    uform_index_builder_free(builder);
    uform_arena_free(arena), uform_arena_free(search_arena);
    uform_model_free(other);
    remove(other_path), remove(index_path), remove(copy_path), remove(truncated_path);
}

/* ---- the fingerprint hashes the config as printed (docs/model.md#fingerprint) ---- */

/* Writes a checkpoint of `config` (parsed from `text`, stored as `text` verbatim) whose every
 * element is `value`: BF16 for matrices, tables and biases, F32 for norms and temperatures. */
static void write_constant(const char *path, const char *text, float value) {
    uform__model_config_t config;
    CHECK_STATUS(uform__model_config_parse(text, &config, NULL, "test"), UFORM_OK);
    size_t count = uform__model_tensor_specs(&config, NULL, 0);
    uform__tensor_spec_t *specs = calloc(count, sizeof *specs);
    uform__safetensors_source_t *sources = calloc(count, sizeof *sources);
    uint64_t *shapes = calloc(2 * count, sizeof *shapes);
    uform__model_tensor_specs(&config, specs, count);
    size_t largest = 0;
    for (size_t i = 0; i < count; ++i)
        largest = specs[i].rows * (specs[i].columns ? specs[i].columns : 1) > largest
                      ? specs[i].rows * (specs[i].columns ? specs[i].columns : 1) : largest;
    float *wide = malloc(largest * sizeof *wide);
    uint16_t *narrow = malloc(largest * sizeof *narrow);
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    for (size_t e = 0; e < largest; ++e) wide[e] = value, narrow[e] = (uint16_t)(bits >> 16);
    for (size_t i = 0; i < count; ++i) {
        int f32 = specs[i].kind == UFORM__TENSOR_NORM_WEIGHT || specs[i].kind == UFORM__TENSOR_NORM_BIAS ||
                  specs[i].kind == UFORM__TENSOR_TEMPERATURES;
        shapes[2 * i] = specs[i].rows, shapes[2 * i + 1] = specs[i].columns;
        sources[i] = (uform__safetensors_source_t){specs[i].name, f32 ? UFORM__SAFETENSORS_F32 : UFORM__SAFETENSORS_BF16,
                                                   specs[i].columns ? 2 : 1, &shapes[2 * i],
                                                   f32 ? (const void *)wide : (const void *)narrow};
    }
    uform__safetensors_pair_t metadata[2] = {{"uform.format", "4"}, {"uform.config", text}};
    uform__safetensors_write_t request = {sources, count, metadata, 2, NULL, NULL};
    CHECK_STATUS(uform__safetensors_write(path, &request, NULL), UFORM_OK);
    free(specs), free(sources), free(shapes), free(wide), free(narrow);
}

static void fingerprint_of(const char *path, char fingerprint[UFORM_FINGERPRINT_CAPACITY], uform_model_t *kept) {
    uform_model_t model = NULL;
    fingerprint[0] = 0;
    CHECK_STATUS(uform_model_load_ram(NULL, path, NULL, &model, NULL), UFORM_OK);
    if (model) CHECK_STATUS(uform_model_fingerprint(model, fingerprint, NULL), UFORM_OK);
    if (kept) *kept = model;
    else uform_model_free(model);
}

/* Replaces the 32 hex digits `from` by `to` in the file at `path` (the index's fingerprint). */
static void replace_fingerprint(const char *path, const char *from, const char *to) {
    size_t size = 0;
    unsigned char *bytes = test_read_file(path, &size);
    int replaced = 0;
    for (size_t i = 0; bytes && i + 32 <= size && !replaced; ++i)
        if (memcmp(bytes + i, from, 32) == 0) memcpy(bytes + i, to, 32), replaced = 1;
    CHECK(replaced);
    FILE *file = fopen(path, "wb");
    fwrite(bytes, 1, size, file);
    fclose(file);
    free(bytes);
}

static void test_fingerprint_config(uform_executor_t executor) {
    /* Builds before the config was hashed as printed hashed the stored text: `legacy` is this file's
     * fingerprint as main at f60dcdb computed it, pinned so that old indexes keep opening. */
    static const char stored[] =
        "{\"format\": 4,\n \"hidden\": 8, \"depth\": 1, \"heads\": 2, \"mlp\": 16, \"embedding\": 4,\n"
        " \"modalities\": [\"text\"], \"text\": {\"bytes\": 8}, \"comment\": \"written by hand\"}";
    static const char legacy[] = "9817b9390f0a9f2017fc5ba39777e5fb";
    static const char reordered[] =
        "{\"text\":{\"bytes\":8},\"modalities\":[\"text\"],\"embedding\":4,\"mlp\":16,\"heads\":2,\"depth\":1,"
        "\"hidden\":8,\"format\":\"4\",\"matryoshka\":[1,2,4],\"temperature_groups\":1,\"norm_eps\":1e-6}";
    static const char changed[] =
        "{\"format\": 4, \"hidden\": 8, \"depth\": 1, \"heads\": 2, \"mlp\": 16, \"embedding\": 4, \"norm_eps\": 2e-6,"
        " \"modalities\": [\"text\"], \"text\": {\"bytes\": 8}}";
    char path[300], fingerprint[UFORM_FINGERPRINT_CAPACITY], other[UFORM_FINGERPRINT_CAPACITY];
    path_in_work(path, sizeof path, "constant.safetensors");
    uform_model_t model = NULL;
    write_constant(path, stored, 0.25f);
    fingerprint_of(path, fingerprint, &model);
    printf("fingerprint of the stored config: %s (earlier builds: %s)\n", fingerprint, legacy);
    /* The same config written otherwise (key order, spacing, "4" for 4, an unknown key, defaults
     * spelled out): the same fingerprint. */
    write_constant(path, reordered, 0.25f);
    fingerprint_of(path, other, NULL);
    CHECK_MSG(strcmp(fingerprint, other) == 0, "re-serialised config: %s, stored: %s", other, fingerprint);
    /* A value of the config, or of a weight, changed: another fingerprint. */
    write_constant(path, changed, 0.25f);
    fingerprint_of(path, other, NULL);
    CHECK_MSG(strcmp(fingerprint, other) != 0, "norm_eps changed, fingerprint %s kept", other);
    write_constant(path, stored, 0.5f);
    fingerprint_of(path, other, NULL);
    CHECK_MSG(strcmp(fingerprint, other) != 0, "weights changed, fingerprint %s kept", other);
    CHECK(strcmp(fingerprint, legacy) != 0); /* the stored text is not the printed one */

    /* An index carrying the earlier fingerprint of this checkpoint still opens with it. */
    if (!model) return;
    uform_index_builder_t builder = NULL;
    CHECK_STATUS(uform_index_builder_create(model, 0, UFORM_SCALAR_F32, &builder, NULL), UFORM_OK);
    char index_path[300];
    path_in_work(index_path, sizeof index_path, "legacy.index");
    CHECK_STATUS(uform_index_builder_write(builder, index_path, NULL, 0, NULL), UFORM_OK);
    uform_index_builder_free(builder);
    replace_fingerprint(index_path, fingerprint, legacy);
    uform_index_t index = NULL;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform_index_open(index_path, model, &index, &outcome), UFORM_OK);
    uform_index_free(index);
    char wrong[UFORM_FINGERPRINT_CAPACITY];
    memcpy(wrong, legacy, sizeof wrong);
    wrong[31] = wrong[31] == '0' ? '1' : '0';
    replace_fingerprint(index_path, legacy, wrong);
    CHECK_STATUS(uform_index_open(index_path, model, &index, &outcome), UFORM_CONFIG_MISMATCH);
    uform_model_free(model);
    unlink(index_path), unlink(path);
    (void)executor;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_index_api TINY_CHECKPOINT\n");
        return 2;
    }
    checkpoint = argv[1];
    snprintf(work, sizeof work, "/tmp/uform_index_api_XXXXXX");
    if (!mkdtemp(work)) return 1;
    uform_executor_t executor = NULL;
    uform_model_t model = NULL;
    uform_outcome_t outcome = {0};
    if (uform_executor_for_ram(NULL, 2, 0, &executor, &outcome) != UFORM_OK ||
        uform_model_load_ram(executor, checkpoint, NULL, &model, &outcome) != UFORM_OK) {
        fprintf(stderr, "setup: %s\n", outcome.message);
        return 1;
    }
    test_probe();
    test_prepare(model, executor);
    test_index(model, executor);
    test_fingerprint_config(executor);
    uform_model_free(model);
    uform_executor_free(executor);
    rmdir(work);
    return check_finish();
}
