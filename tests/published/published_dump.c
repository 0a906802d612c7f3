/*
 * published_dump FOLDER DUMP [--compute f32|bf16|i8] [--texts FILE] [--images FILE...] [--dimensions N]
 *
 * Loads a published model folder with uform_model_load_ram and writes what the engine answers for
 * the texts (one per line of FILE, "\n" escapes allowed as \\n) and the image files into DUMP, in
 * the format tests/published/<family>_compare.py reads:
 *   meta.json             {"folder", "compute", "texts", "images", "dimensions"}
 *   text_ids.json         the ids the text tower ran per text
 *   text_embeddings.npy   [N, E] F32, L2-normalised;  text_states.npy [rows, d], text_offsets.npy [N + 1]
 *   image_embeddings.npy  [M, E];  image_states.npy, image_offsets.npy
 * Exits non-zero, with the engine's message, when a call fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "npy.h"
#include "uform/uform.h"

static const char *directory;

static void fail(const char *what, const uform_outcome_t *outcome) {
    char line[800];
    uform_outcome_format(outcome, line, sizeof line);
    fprintf(stderr, "published_dump: %s: %s\n", what, line);
    exit(1);
}

static void write_array(const char *name, const char *descr, const size_t *shape, size_t rank, const void *data,
                        size_t bytes) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", directory, name);
    if (npy_write(path, descr, shape, rank, data, bytes) != 0) {
        fprintf(stderr, "published_dump: cannot write %s\n", path);
        exit(1);
    }
}

/* A view's rows, compact, as F32 .npy. */
static void write_matrix(const char *name, const uform_matrix_t *view) {
    size_t rows = view->rows, columns = view->columns;
    float *data = malloc((rows * columns + 1) * sizeof(float));
    if (!data) exit(2);
    for (size_t r = 0; r < rows; ++r) memcpy(data + r * columns, (const char *)view->data + r * view->stride_bytes, columns * 4);
    size_t shape[2] = {rows, columns};
    write_array(name, "<f4", shape, 2, data, rows * columns * sizeof(float));
    free(data);
}

static void write_offsets(const char *name, const size_t *offsets, size_t count) {
    int64_t *values = malloc((count + 1) * sizeof(int64_t));
    if (!values) exit(2);
    for (size_t i = 0; i <= count; ++i) values[i] = (int64_t)offsets[i];
    size_t shape[1] = {count + 1};
    write_array(name, "<i8", shape, 1, values, (count + 1) * sizeof(int64_t));
    free(values);
}

/* A JSON string of `length` bytes (control bytes and non-ASCII escaped as \u, bytes above 0x7F
 * passed through: the inputs are UTF-8). */
static void json_string(FILE *file, const char *text, size_t length) {
    fputc('"', file);
    for (size_t i = 0; i < length; ++i) {
        unsigned char c = (unsigned char)text[i];
        if (c == '"' || c == '\\') fprintf(file, "\\%c", c);
        else if (c < 0x20) fprintf(file, "\\u%04x", c);
        else fputc(c, file);
    }
    fputc('"', file);
}

static char *read_whole(const char *path, size_t *size) {
    FILE *file = fopen(path, "rb");
    if (!file) {
        fprintf(stderr, "published_dump: cannot open %s\n", path);
        exit(1);
    }
    fseek(file, 0, SEEK_END);
    long length = ftell(file);
    fseek(file, 0, SEEK_SET);
    char *bytes = malloc((size_t)length + 1);
    if (!bytes || fread(bytes, 1, (size_t)length, file) != (size_t)length) exit(2);
    fclose(file);
    bytes[length] = 0;
    *size = (size_t)length;
    return bytes;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: published_dump FOLDER DUMP [--compute f32|bf16|i8] [--texts FILE] [--images FILE...] "
                        "[--dimensions N]\n");
        return 2;
    }
    const char *folder = argv[1];
    directory = argv[2];
    mkdir(directory, 0755);
    const char *compute_name = "f32", *texts_path = NULL;
    const char **images = calloc((size_t)argc, sizeof *images);
    size_t image_count = 0, dimensions = 0;
    for (int i = 3; i < argc; ++i) {
        if (strcmp(argv[i], "--compute") == 0 && i + 1 < argc) compute_name = argv[++i];
        else if (strcmp(argv[i], "--texts") == 0 && i + 1 < argc) texts_path = argv[++i];
        else if (strcmp(argv[i], "--dimensions") == 0 && i + 1 < argc) dimensions = (size_t)atoll(argv[++i]);
        else if (strcmp(argv[i], "--images") == 0)
            while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) images[image_count++] = argv[++i];
        else {
            fprintf(stderr, "published_dump: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    uform_ram_options_t options;
    memset(&options, 0, sizeof options);
    options.compute = strcmp(compute_name, "bf16") == 0 ? UFORM_COMPUTE_BF16
                      : strcmp(compute_name, "i8") == 0 ? UFORM_COMPUTE_I8
                                                         : UFORM_COMPUTE_F32;
    uform_outcome_t outcome;
    memset(&outcome, 0, sizeof outcome);
    uform_executor_t executor = NULL;
    if (uform_executor_for_ram(NULL, 2, 0, &executor, &outcome) != UFORM_OK) fail("executor", &outcome);
    uform_model_t model = NULL;
    if (uform_model_load_ram(executor, folder, &options, &model, &outcome) != UFORM_OK) fail("load", &outcome);
    uform_arena_t arena = NULL;
    if (uform_arena_for_executor(executor, &arena, &outcome) != UFORM_OK) fail("arena", &outcome);

    /* Texts: one a line, with \n standing for a line break inside a text. */
    size_t text_count = 0;
    char *text_bytes = NULL;
    size_t *text_offsets = NULL;
    if (texts_path) {
        size_t size;
        char *raw = read_whole(texts_path, &size);
        text_bytes = malloc(size + 1);
        text_offsets = malloc((size + 2) * sizeof(size_t));
        size_t used = 0;
        text_offsets[0] = 0;
        for (size_t i = 0; i < size; ++i) {
            if (raw[i] == '\n') {
                text_offsets[++text_count] = used;
                continue;
            }
            if (raw[i] == '\\' && i + 1 < size && raw[i + 1] == 'n') text_bytes[used++] = '\n', ++i;
            else text_bytes[used++] = raw[i];
        }
        if (size && raw[size - 1] != '\n') text_offsets[++text_count] = used;
        free(raw);
    }

    FILE *meta = NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/meta.json", directory);
    meta = fopen(path, "w");
    char absolute[4096];
    if (!realpath(folder, absolute)) snprintf(absolute, sizeof absolute, "%s", folder);
    fprintf(meta, "{\"folder\": ");
    json_string(meta, absolute, strlen(absolute));
    fprintf(meta, ", \"compute\": \"%s\", \"dimensions\": %zu, \"texts\": [", compute_name, dimensions);
    for (size_t i = 0; i < text_count; ++i) {
        if (i) fputs(", ", meta);
        json_string(meta, text_bytes + text_offsets[i], text_offsets[i + 1] - text_offsets[i]);
    }
    fprintf(meta, "], \"images\": [");
    for (size_t i = 0; i < image_count; ++i) {
        char resolved[4096];
        if (!realpath(images[i], resolved)) snprintf(resolved, sizeof resolved, "%s", images[i]);
        if (i) fputs(", ", meta);
        json_string(meta, resolved, strlen(resolved));
    }
    fprintf(meta, "]}\n");
    fclose(meta);

    if (text_count) {
        /* The ids, as the public uform_text_tokenize answers them (what the text tower runs). */
        snprintf(path, sizeof path, "%s/text_ids.json", directory);
        FILE *ids_file = fopen(path, "w");
        fputc('[', ids_file);
        static uint32_t ids[1 << 16];
        for (size_t i = 0; i < text_count; ++i) {
            size_t count = 0;
            if (uform_text_tokenize(model, text_bytes + text_offsets[i], text_offsets[i + 1] - text_offsets[i], ids,
                                    sizeof ids / sizeof ids[0], &count, &outcome) != UFORM_OK)
                fail("uform_text_tokenize", &outcome);
            fprintf(ids_file, "%s[", i ? ", " : "");
            for (size_t k = 0; k < count && k < sizeof ids / sizeof ids[0]; ++k) fprintf(ids_file, "%s%u", k ? ", " : "", ids[k]);
            fputc(']', ids_file);
        }
        fputs("]\n", ids_file);
        fclose(ids_file);
        uform_tape_t tape = {text_bytes, text_offsets, text_count};
        uform_text_encode_t request;
        memset(&request, 0, sizeof request);
        request.model = model, request.executor = executor, request.texts = tape, request.arena = arena;
        request.outputs = UFORM_OUTPUTS_EMBEDDINGS | UFORM_OUTPUTS_STATES;
        request.config.dimensions = dimensions;
        if (uform_text_encode(&request) != UFORM_OK) fail("text_encode", &request.outcome);
        write_matrix("text_embeddings.npy", &request.encoded.embeddings);
        write_matrix("text_states.npy", &request.encoded.states.matrix);
        write_offsets("text_offsets.npy", request.encoded.states.offsets, text_count);
        /* Embeddings alone take the pruned path: they must equal the ones computed with the states. */
        uform_text_encode_t alone = request;
        alone.outputs = UFORM_OUTPUTS_EMBEDDINGS;
        if (uform_text_encode(&alone) != UFORM_OK) fail("text_encode (embeddings only)", &alone.outcome);
        write_matrix("text_embeddings_alone.npy", &alone.encoded.embeddings);
    }
    if (image_count) {
        size_t total = 0;
        char **files = calloc(image_count, sizeof *files);
        size_t *offsets = calloc(image_count + 1, sizeof *offsets), *sizes = calloc(image_count, sizeof *sizes);
        for (size_t i = 0; i < image_count; ++i) files[i] = read_whole(images[i], &sizes[i]), total += sizes[i];
        char *bytes = malloc(total + 1);
        for (size_t i = 0; i < image_count; ++i) {
            memcpy(bytes + offsets[i], files[i], sizes[i]);
            offsets[i + 1] = offsets[i] + sizes[i];
            free(files[i]);
        }
        uform_tape_t tape = {bytes, offsets, image_count};
        uform_image_encode_t request;
        memset(&request, 0, sizeof request);
        request.model = model, request.executor = executor, request.images = tape, request.arena = arena;
        request.outputs = UFORM_OUTPUTS_EMBEDDINGS | UFORM_OUTPUTS_STATES;
        request.config.dimensions = dimensions;
        if (uform_image_encode(&request) != UFORM_OK) fail("image_encode", &request.outcome);
        write_matrix("image_embeddings.npy", &request.encoded.embeddings);
        write_matrix("image_states.npy", &request.encoded.states.matrix);
        write_offsets("image_offsets.npy", request.encoded.states.offsets, image_count);
        uform_image_encode_t alone = request;
        alone.outputs = UFORM_OUTPUTS_EMBEDDINGS;
        if (uform_image_encode(&alone) != UFORM_OK) fail("image_encode (embeddings only)", &alone.outcome);
        write_matrix("image_embeddings_alone.npy", &alone.encoded.embeddings);
        free(bytes), free(files), free(offsets), free(sizes);
    }
    uform_arena_free(arena);
    uform_model_free(model);
    uform_executor_free(executor);
    free(text_bytes), free(text_offsets), free(images);
    return 0;
}
