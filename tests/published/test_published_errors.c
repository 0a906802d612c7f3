/*
 * test_published_errors MINILM_FOLDER CLIP_FOLDER WORK
 *
 * Folders the engine cannot run get their documented status and a message naming the cause
 * (docs/checkpoints.md): each case copies a good folder written at test time (a tiny all-MiniLM and
 * a tiny CLIP), breaks one thing, and loads it. Also: what a published model refuses to do
 * (text_choose, uform_model_quantize, a trainer resuming from a folder).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/check.h"
#include "common/read_file.h"
#include "io/safetensors.h"
#include "uform/uform.h"

static const char *minilm, *clip, *work;
static int case_number = 0;

static void copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    if (!in || !out) {
        fprintf(stderr, "cannot copy %s to %s\n", from, to);
        exit(2);
    }
    char buffer[1 << 16];
    size_t got;
    while ((got = fread(buffer, 1, sizeof buffer, in)) > 0) fwrite(buffer, 1, got, out);
    fclose(in), fclose(out);
}

/* Copies the files of `from` into `to` (made here), and its subfolders' the same way. */
static void copy_tree(const char *from, const char *to) {
    mkdir(to, 0755);
    DIR *dir = opendir(from);
    struct dirent *entry;
    while (dir && (entry = readdir(dir))) {
        if (entry->d_name[0] == '.') continue;
        char source[4096], target[4096];
        snprintf(source, sizeof source, "%s/%s", from, entry->d_name);
        snprintf(target, sizeof target, "%s/%s", to, entry->d_name);
        struct stat info;
        stat(source, &info);
        if (S_ISDIR(info.st_mode)) copy_tree(source, target);
        else copy_file(source, target);
    }
    if (dir) closedir(dir);
}

/* A fresh copy of `folder` (with its subfolders) under WORK; answers its path. */
static const char *copy_folder(const char *folder) {
    static char path[2048];
    snprintf(path, sizeof path, "%s/case%d", work, ++case_number);
    copy_tree(folder, path);
    return path;
}

static void write_text(const char *folder, const char *name, const char *text) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", folder, name);
    FILE *file = fopen(path, "w");
    fputs(text, file);
    fclose(file);
}

/* Replaces `from` by `to` (first occurrence) in a file of the folder. */
static void edit(const char *folder, const char *name, const char *from, const char *to) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", folder, name);
    size_t length = 0;
    char *text = test_read_file(path, &length);
    if (!text || !(text = realloc(text, length + 1))) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(2);
    }
    text[length] = 0;
    char *at = strstr(text, from);
    if (!at) {
        fprintf(stderr, "%s does not hold '%s'\n", path, from);
        exit(2);
    }
    FILE *file = fopen(path, "wb");
    fwrite(text, 1, (size_t)(at - text), file);
    fputs(to, file);
    fputs(at + strlen(from), file);
    fclose(file);
    free(text);
}

/* Rewrites model.safetensors without tensor `drop`, or with `reshape` laid out as [count] (the
 * same bytes read as a vector of another length, for a wrong-shape case). */
static void rewrite_weights(const char *folder, const char *drop, const char *reshape) {
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", folder);
    uform__safetensors_t *file = NULL;
    uform_outcome_t outcome = {0};
    if (uform__safetensors_open(path, &file, &outcome) != UFORM_OK) exit(2);
    size_t count = uform__safetensors_count(file), kept = 0;
    uform__safetensors_source_t *sources = calloc(count, sizeof *sources);
    uint64_t *shapes = calloc(count, sizeof(uint64_t) * UFORM__SAFETENSORS_MAX_RANK);
    for (size_t i = 0; i < count; ++i) {
        const uform__safetensors_tensor_t *tensor = uform__safetensors_at(file, i);
        if (drop && strcmp(tensor->name, drop) == 0) continue;
        uint64_t *shape = shapes + kept * UFORM__SAFETENSORS_MAX_RANK;
        memcpy(shape, tensor->shape, sizeof tensor->shape);
        uint32_t rank = tensor->rank;
        if (reshape && strcmp(tensor->name, reshape) == 0) shape[0] = tensor->element_count, rank = 1;
        sources[kept++] = (uform__safetensors_source_t){strdup(tensor->name), tensor->dtype, rank, shape, tensor->data};
    }
    char temporary[4096];
    snprintf(temporary, sizeof temporary, "%s/rewritten.safetensors", folder);
    uform__safetensors_write_t request = {sources, kept, NULL, 0, NULL, NULL};
    if (uform__safetensors_write(temporary, &request, &outcome) != UFORM_OK) exit(2);
    uform__safetensors_close(file);
    rename(temporary, path);
    for (size_t i = 0; i < kept; ++i) free((char *)sources[i].name);
    free(sources), free(shapes);
}

static void remove_file(const char *folder, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", folder, name);
    remove(path);
}

/* Loads `folder` and checks the status and that the message holds `needle`. */
static void expect(const char *folder, uform_status_t status, const char *needle, const char *what) {
    uform_model_t model = NULL;
    uform_outcome_t outcome;
    memset(&outcome, 0, sizeof outcome);
    uform_status_t got = uform_model_load_ram(NULL, folder, NULL, &model, &outcome);
    CHECK_MSG(got == status, "%s: status %s, expected %s (%s)", what, uform_status_name(got), uform_status_name(status),
              outcome.message);
    CHECK_MSG(strstr(outcome.message, needle) != NULL, "%s: message '%s' lacks '%s'", what, outcome.message, needle);
    CHECK_MSG(model == NULL, "%s: a failed load left a model", what);
    uform_model_free(model);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: test_published_errors MINILM_FOLDER CLIP_FOLDER WORK\n");
        return 2;
    }
    minilm = argv[1], clip = argv[2], work = argv[3];
    mkdir(work, 0755);
    const char *folder;

    /* Both good folders load, and describe says what they are. */
    uform_model_t model = NULL;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform_model_load_ram(NULL, minilm, NULL, &model, &outcome), UFORM_OK);
    uform_model_describe_t describe = {model};
    CHECK_STATUS(uform_model_describe(&describe), UFORM_OK);
    CHECK_CONTAINS(describe.description.family, "sentence-transformers");
    CHECK_CONTAINS(describe.description.tokenizer, "wordpiece");
    CHECK_EQ_INT(describe.description.text_tokens, 256);
    CHECK_EQ_INT(describe.description.modalities, 1);
    /* What a published model refuses: text_choose has no next-byte head. */
    uform_arena_t arena = NULL;
    CHECK_STATUS(uform_arena_for_host(&arena, &outcome), UFORM_OK);
    size_t offsets[2] = {0, 3};
    uform_text_choose_t choose = {model};
    choose.texts = (uform_tape_t){"abc", offsets, 1};
    choose.choices = (uform_tape_t){"abc", offsets, 1};
    choose.arena = arena;
    CHECK_STATUS(uform_text_choose(&choose), UFORM_UNSUPPORTED);
    CHECK_CONTAINS(choose.outcome.message, "next-byte head");
    uform_arena_free(arena);
    uform_model_free(model);
    CHECK_STATUS(uform_model_load_ram(NULL, clip, NULL, &model, &outcome), UFORM_OK);
    describe.model = model;
    CHECK_STATUS(uform_model_describe(&describe), UFORM_OK);
    CHECK_CONTAINS(describe.description.family, "clip");
    CHECK_EQ_INT(describe.description.modalities, 3);
    CHECK(describe.description.towers[0].hidden != 0 && describe.description.towers[1].hidden != 0);
    uform_model_free(model);
    char output[4096];
    snprintf(output, sizeof output, "%s/quantized.safetensors", work);
    CHECK_STATUS(uform_model_quantize(clip, output, &outcome), UFORM_UNSUPPORTED);
    CHECK_CONTAINS(outcome.message, "published model folder");

    /* Not a model folder, or another architecture. */
    folder = copy_folder(minilm);
    remove_file(folder, "config.json"), remove_file(folder, "modules.json");
    expect(folder, UFORM_UNSUPPORTED, "holds no config.json", "an empty folder");
    folder = copy_folder(minilm);
    remove_file(folder, "modules.json");
    edit(folder, "config.json", "\"model_type\": \"bert\"", "\"model_type\": \"gpt2\"");
    expect(folder, UFORM_UNSUPPORTED, "model_type 'gpt2'", "another model type");
    folder = copy_folder(minilm);
    write_text(folder, "config.json", "{\"model_type\": \"bert\", \"hidden_size\": 64,");
    expect(folder, UFORM_FORMAT, "config.json is not valid JSON", "malformed config.json");
    folder = copy_folder(minilm);
    edit(folder, "config.json", "\"hidden_size\"", "\"hidden_width\"");
    expect(folder, UFORM_FORMAT, "the required key 'hidden_size' is missing", "a missing config key");
    folder = copy_folder(minilm);
    edit(folder, "config.json", "\"num_hidden_layers\": 2", "\"num_hidden_layers\": \"two\"");
    expect(folder, UFORM_FORMAT, "'num_hidden_layers' is not a whole number", "a mistyped config key");
    folder = copy_folder(minilm);
    edit(folder, "config.json", "\"hidden_act\": \"gelu\"", "\"hidden_act\": \"swish\"");
    expect(folder, UFORM_UNSUPPORTED, "hidden_act 'swish'", "an unknown activation");
    folder = copy_folder(minilm);
    edit(folder, "config.json", "\"position_embedding_type\": \"absolute\"", "\"position_embedding_type\": \"relative_key\"");
    expect(folder, UFORM_UNSUPPORTED, "position_embedding_type 'relative_key'", "relative positions");

    /* Weights: none, a tensor missing, a tensor of the wrong shape. */
    folder = copy_folder(minilm);
    remove_file(folder, "model.safetensors");
    expect(folder, UFORM_FORMAT, "holds no weights", "no weight file");
    folder = copy_folder(minilm);
    rewrite_weights(folder, "encoder.layer.1.output.dense.weight", NULL);
    expect(folder, UFORM_FORMAT, "'encoder.layer.1.output.dense.weight'", "a missing tensor");
    folder = copy_folder(minilm);
    rewrite_weights(folder, NULL, "embeddings.position_embeddings.weight");
    expect(folder, UFORM_FORMAT, "has shape [", "a table stored as a vector of its elements");
    folder = copy_folder(minilm);
    edit(folder, "config.json", "\"intermediate_size\": 256", "\"intermediate_size\": 255");
    expect(folder, UFORM_FORMAT, "expected [255, 64]", "a tensor of another shape than the config's");
    folder = copy_folder(minilm);
    edit(folder, "modules.json", "\"path\": \"1_Pooling\"", "\"path\": \"../../etc\"");
    expect(folder, UFORM_FORMAT, "a folder \"path\" inside the model", "a module path leaving the folder");
    folder = copy_folder(minilm);
    write_text(folder, "model.safetensors", "not a safetensors file at all, but long enough to have a header");
    expect(folder, UFORM_FORMAT, "", "a corrupt weight file");

    /* sentence-transformers modules. */
    folder = copy_folder(minilm);
    edit(folder, "modules.json", "sentence_transformers.models.Normalize", "sentence_transformers.models.CNN");
    expect(folder, UFORM_UNSUPPORTED, "module 'sentence_transformers.models.CNN'", "an unknown module");
    folder = copy_folder(minilm);
    edit(folder, "1_Pooling/config.json", "\"pooling_mode_max_tokens\": false", "\"pooling_mode_max_tokens\": true");
    expect(folder, UFORM_UNSUPPORTED, "2 pooling modes", "two pooling modes at once");
    folder = copy_folder(minilm);
    edit(folder, "sentence_bert_config.json", "\"do_lower_case\": false", "\"do_lower_case\": true");
    expect(folder, UFORM_UNSUPPORTED, "do_lower_case", "lower-casing before the tokenizer");

    /* The tokenizer. */
    folder = copy_folder(minilm);
    remove_file(folder, "tokenizer.json");
    expect(folder, UFORM_FORMAT, "has no tokenizer.json", "no tokenizer");
    folder = copy_folder(minilm);
    write_text(folder, "tokenizer.json", "{\"version\": \"1.0\", \"model\": {\"type\": \"Magic\"}}");
    expect(folder, UFORM_UNSUPPORTED, "tokenizer.json", "an unknown tokenizer model");

    /* CLIP's image processor and towers. */
    folder = copy_folder(clip);
    edit(folder, "preprocessor_config.json", "\"resample\": 3", "\"resample\": 0");
    expect(folder, UFORM_UNSUPPORTED, "PIL filter 0", "nearest-neighbour resampling");
    folder = copy_folder(clip);
    edit(folder, "preprocessor_config.json", "\"crop_size\"", "\"crop_size_old\"");
    edit(folder, "preprocessor_config.json", "\"do_center_crop\": true", "\"do_center_crop\": false");
    expect(folder, UFORM_UNSUPPORTED, "the image processor makes", "a processor whose pictures are not the tower's size");
    folder = copy_folder(clip);
    edit(folder, "config.json", "\"projection_dim\": 40", "\"projection_dim\": 7");
    expect(folder, UFORM_FORMAT, "expected [7,", "a projection of another width than the config's");

    /* A trainer does not resume from a folder. */
    uform_trainer_config_t config;
    memset(&config, 0, sizeof config);
    config.resume = minilm;
    uform_trainer_t trainer = NULL;
    uform_status_t status = uform_trainer_init_ram(NULL, &config, &trainer, &outcome);
    CHECK_MSG(status == UFORM_UNSUPPORTED, "a trainer from a folder: status %s (%s)", uform_status_name(status),
              outcome.message);
    CHECK_CONTAINS(outcome.message, "published model folders");
    uform_trainer_free(trainer);
    return check_finish();
}
