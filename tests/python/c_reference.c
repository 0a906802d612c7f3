/*
 * The C side of the Python binding's parity tests: runs one verb through the public C API, the way
 * a C program would, on inputs the test wrote to files, and writes the outputs for the test to
 * compare with what the binding answered for the same inputs, byte for byte.
 *
 * Usage: c_reference CHECKPOINT DIR
 * DIR/request.txt holds "key value" lines: verb (text, image, pixels, video, audio, samples,
 * choose), threads (-1: the calling thread, else an executor of that many threads), compute (f32,
 * bf16), scalar (0-4), dims, outputs (flags), rate. Inputs, as raw little-endian files: data.bin and
 * offsets.bin (u64, count + 1) form the tape; heights.bin and widths.bin (u64) for pixels;
 * choices.bin, choice_offsets.bin and groups.bin (u64, optional) for choose.
 * Outputs: NAME.bin (rows packed, uform_scalar_row_bytes each, read with uform_matrix_row),
 * NAME_offsets.bin (u64) for ragged ones, and shapes.txt lines "NAME ROWS COLUMNS SCALAR".
 * Exit status 0 when the verb succeeded, 1 when it failed (its outcome line on stderr), 2 on a
 * usage or file error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/read_file.h"
#include "uform/uform.h"

typedef struct buffer_t {
    void *data;
    size_t size;
} buffer_t;

static const char *directory;

static int read_file(const char *name, buffer_t *buffer, int required) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", directory, name);
    buffer->size = 0;
    if (access(path, F_OK) != 0) {
        buffer->data = NULL;
        if (required) fprintf(stderr, "c_reference: cannot open %s\n", path);
        return required ? -1 : 0;
    }
    buffer->data = test_read_file(path, &buffer->size);
    if (!buffer->data) fprintf(stderr, "c_reference: cannot read %s\n", path);
    return buffer->data ? 0 : -1;
}

static int write_file(const char *name, const void *data, size_t size) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", directory, name);
    FILE *file = fopen(path, "wb");
    int ok = file && (size == 0 || fwrite(data, 1, size, file) == size);
    if (file) ok = (fclose(file) == 0) && ok;
    if (!ok) fprintf(stderr, "c_reference: cannot write %s\n", path);
    return ok ? 0 : -1;
}

/* Offsets files hold u64; the tapes take size_t (the same width on the 64-bit targets built here). */
static const size_t *as_offsets(const buffer_t *buffer, size_t *count) {
    *count = buffer->size / sizeof(uint64_t);
    return buffer->data;
}

/* Writes a matrix's rows (through the stale-checking accessor) and its shape line. */
static int dump_matrix(FILE *shapes, const char *name, const uform_matrix_t *view) {
    size_t row_bytes = uform_scalar_row_bytes(view->scalar, view->columns);
    unsigned char *packed = malloc(view->rows * row_bytes + 1);
    if (!packed) return -1;
    for (size_t r = 0; r < view->rows; ++r) {
        const void *row = NULL;
        if (uform_matrix_row(view, r, &row) != UFORM_OK) {
            fprintf(stderr, "c_reference: %s row %zu unreadable\n", name, r);
            free(packed);
            return -1;
        }
        memcpy(packed + r * row_bytes, row, row_bytes);
    }
    char file[256];
    snprintf(file, sizeof file, "%s.bin", name);
    int failed = write_file(file, packed, view->rows * row_bytes);
    free(packed);
    fprintf(shapes, "%s %zu %zu %d\n", name, view->rows, view->columns, (int)view->scalar);
    return failed;
}

static int dump_rows(FILE *shapes, const char *name, const uform_rows_t *view) {
    if (dump_matrix(shapes, name, &view->matrix)) return -1;
    uint64_t *offsets = malloc((view->count + 1) * sizeof *offsets);
    if (!offsets) return -1;
    for (size_t i = 0; i <= view->count; ++i) offsets[i] = view->offsets[i];
    char file[256];
    snprintf(file, sizeof file, "%s_offsets.bin", name);
    int failed = write_file(file, offsets, (view->count + 1) * sizeof *offsets);
    free(offsets);
    return failed;
}

typedef struct request_t {
    char verb[64], compute[64];
    long threads;
    int scalar;
    size_t dims, outputs, rate;
} request_t;

static int read_request(request_t *request) {
    char path[4096], key[64], value[64];
    snprintf(path, sizeof path, "%s/request.txt", directory);
    FILE *file = fopen(path, "r");
    if (!file) return -1;
    memset(request, 0, sizeof *request);
    request->threads = -1, request->outputs = UFORM_OUTPUTS_EMBEDDINGS;
    strcpy(request->compute, "f32");
    while (fscanf(file, "%63s %63s", key, value) == 2) {
        if (strcmp(key, "verb") == 0) snprintf(request->verb, sizeof request->verb, "%s", value);
        else if (strcmp(key, "compute") == 0) snprintf(request->compute, sizeof request->compute, "%s", value);
        else if (strcmp(key, "threads") == 0) request->threads = strtol(value, NULL, 10);
        else if (strcmp(key, "scalar") == 0) request->scalar = (int)strtol(value, NULL, 10);
        else if (strcmp(key, "dims") == 0) request->dims = strtoull(value, NULL, 10);
        else if (strcmp(key, "outputs") == 0) request->outputs = strtoull(value, NULL, 10);
        else if (strcmp(key, "rate") == 0) request->rate = strtoull(value, NULL, 10);
    }
    fclose(file);
    return 0;
}

static int report(const uform_outcome_t *outcome) {
    char line[640];
    uform_outcome_format(outcome, line, sizeof line);
    fprintf(stderr, "%s\n", line);
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: c_reference CHECKPOINT DIR\n");
        return 2;
    }
    directory = argv[2];
    request_t request;
    buffer_t data, offsets_file, heights, widths, choices, choice_offsets_file, groups;
    if (read_request(&request) || read_file("data.bin", &data, 1) || read_file("offsets.bin", &offsets_file, 1) ||
        read_file("heights.bin", &heights, 0) || read_file("widths.bin", &widths, 0) ||
        read_file("choices.bin", &choices, 0) || read_file("choice_offsets.bin", &choice_offsets_file, 0) ||
        read_file("groups.bin", &groups, 0))
        return 2;
    size_t offset_count = 0, choice_offset_count = 0;
    const size_t *offsets = as_offsets(&offsets_file, &offset_count);
    const size_t *choice_offsets = as_offsets(&choice_offsets_file, &choice_offset_count);
    uform_tape_t tape = {data.data, offsets, offset_count ? offset_count - 1 : 0};

    uform_outcome_t outcome = {0};
    uform_executor_t executor = NULL;
    if (request.threads >= 0 && uform_executor_for_ram(NULL, (size_t)request.threads, 0, &executor, &outcome) != UFORM_OK)
        return report(&outcome);
    uform_ram_options_t options = {0};
    options.compute = strcmp(request.compute, "bf16") == 0 ? UFORM_COMPUTE_BF16 : UFORM_COMPUTE_F32;
    uform_model_t model = NULL;
    if (uform_model_load_ram(executor, argv[1], &options, &model, &outcome) != UFORM_OK) return report(&outcome);
    uform_arena_t arena = NULL;
    if (uform_arena_for_executor(executor, &arena, &outcome) != UFORM_OK) return report(&outcome);

    uform_encode_config_t config = {0};
    config.outputs_scalar = (uform_scalar_kind_t)request.scalar;
    config.dimensions = request.dims;
    uform_outputs_t outputs = (uform_outputs_t)request.outputs;
    uform_encoded_t *encoded = NULL;
    uform_outcome_t *call_outcome = NULL;
    uform_status_t status;
    /* One request per verb, all on the stack as a C caller writes them. */
    uform_text_encode_t text = {model, executor, UFORM_COMPLETION_BLOCKING, tape, outputs, arena, config};
    uform_image_encode_t image = {model, executor, UFORM_COMPLETION_BLOCKING, tape, outputs, arena, config};
    uform_video_encode_t video = {model, executor, UFORM_COMPLETION_BLOCKING, tape, outputs, arena, config};
    uform_audio_encode_t audio = {model, executor, UFORM_COMPLETION_BLOCKING, tape, outputs, arena, config};
    uform_image_encode_pixels_t pixels = {model, executor, UFORM_COMPLETION_BLOCKING, tape, heights.data, widths.data,
                                          outputs, arena, config};
    uform_audio_encode_samples_t samples = {model, executor, UFORM_COMPLETION_BLOCKING, tape, request.rate, outputs,
                                            arena, config};
    uform_text_choose_t choose = {model, executor, UFORM_COMPLETION_BLOCKING, tape};
    choose.choices = (uform_tape_t){choices.data, choice_offsets, choice_offset_count ? choice_offset_count - 1 : 0};
    choose.groups = groups.data;
    choose.arena = arena;
    if (strcmp(request.verb, "text") == 0) status = uform_text_encode(&text), encoded = &text.encoded, call_outcome = &text.outcome;
    else if (strcmp(request.verb, "image") == 0) status = uform_image_encode(&image), encoded = &image.encoded, call_outcome = &image.outcome;
    else if (strcmp(request.verb, "video") == 0) status = uform_video_encode(&video), encoded = &video.encoded, call_outcome = &video.outcome;
    else if (strcmp(request.verb, "audio") == 0) status = uform_audio_encode(&audio), encoded = &audio.encoded, call_outcome = &audio.outcome;
    else if (strcmp(request.verb, "pixels") == 0) status = uform_image_encode_pixels(&pixels), encoded = &pixels.encoded, call_outcome = &pixels.outcome;
    else if (strcmp(request.verb, "samples") == 0) status = uform_audio_encode_samples(&samples), encoded = &samples.encoded, call_outcome = &samples.outcome;
    else if (strcmp(request.verb, "choose") == 0) status = uform_text_choose(&choose), call_outcome = &choose.outcome;
    else {
        fprintf(stderr, "c_reference: unknown verb '%s'\n", request.verb);
        return 2;
    }
    if (status != UFORM_OK) return report(call_outcome);

    char shapes_path[4096];
    snprintf(shapes_path, sizeof shapes_path, "%s/shapes.txt", directory);
    FILE *shapes = fopen(shapes_path, "w");
    if (!shapes) return 2;
    int failed = 0;
    if (!encoded) {
        failed |= dump_rows(shapes, "probabilities", &choose.probabilities);
    } else {
        if (outputs & UFORM_OUTPUTS_EMBEDDINGS) failed |= dump_matrix(shapes, "embeddings", &encoded->embeddings);
        if (outputs & UFORM_OUTPUTS_TOKEN_VECTORS) failed |= dump_rows(shapes, "token_vectors", &encoded->token_vectors);
        if (outputs & UFORM_OUTPUTS_STATES) failed |= dump_rows(shapes, "states", &encoded->states);
    }
    fclose(shapes);
    uform_arena_free(arena);
    uform_model_free(model);
    uform_executor_free(executor);
    free(data.data), free(offsets_file.data), free(heights.data), free(widths.data);
    free(choices.data), free(choice_offsets_file.data), free(groups.data);
    return failed ? 2 : 0;
}
