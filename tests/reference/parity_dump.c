/*
 * parity_dump CHECKPOINT DIRECTORY [--quick | --int8]
 *
 * Runs the engine on generated inputs for every modality and output kind and writes what it was
 * given and what it answered into DIRECTORY (.npy files and manifest.json, the format
 * tests/reference/compare.py reads), so the independent PyTorch reference can check every output.
 * It also dumps the engine's preprocessing (resized images, resampled audio, log-mel) for the
 * separate preprocessing checks. Inputs are drawn from a fixed seed.
 *
 * --int8 dumps the I8 compute's cases instead (compute "i8": every modality, every output kind,
 * text_choose), each naming the float compute the load's class runs its float layers in
 * ("float_compute": "bf16" where the class has BF16 dot products, else "f32"), for the NumPy
 * implementation of the scheme (tests/reference/compare_int8.py). UFORM_CPU_CLASS picks the class.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/outcome.h"
#include "exec/call.h"
#include "kernels/signal.h"
#include "model/encode.h"
#include "model/model.h"
#include "common/base64.h"
#include "npy.h"
#include "uform/uform.h"

static const char *directory;
static FILE *manifest;
static int first_case = 1;
static uint64_t random_state = 2024;

static uint64_t next_random(void) {
    uint64_t z = (random_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void fail(const char *what, const uform_outcome_t *outcome) {
    char line[600];
    uform_outcome_format(outcome, line, sizeof line);
    fprintf(stderr, "parity_dump: %s: %s\n", what, line);
    exit(1);
}

static void path_of(char *path, size_t capacity, const char *name) { snprintf(path, capacity, "%s/%s", directory, name); }

static void write_array(const char *name, const char *descr, const size_t *shape, size_t rank, const void *data, size_t bytes) {
    char path[1024];
    path_of(path, sizeof path, name);
    if (npy_write(path, descr, shape, rank, data, bytes) != 0) {
        fprintf(stderr, "parity_dump: cannot write %s\n", path);
        exit(1);
    }
}

/* Writes a view's rows compactly (dropping the stride's padding). */
static void write_matrix(const char *name, const uform_matrix_t *view) {
    size_t row_bytes = uform_scalar_row_bytes(view->scalar, view->columns);
    unsigned char *compact = malloc(view->rows * row_bytes + 1);
    for (size_t r = 0; r < view->rows; ++r) {
        const void *row;
        if (uform_matrix_row(view, r, &row) != UFORM_OK) {
            fprintf(stderr, "parity_dump: %s: row %zu refused\n", name, r);
            exit(1);
        }
        memcpy(compact + r * row_bytes, row, row_bytes);
    }
    static const char *const descrs[] = {"<f4", "<u2", "<u2", "|i1", "|u1"};
    size_t shape[2] = {view->rows, view->scalar == UFORM_SCALAR_B1 ? row_bytes : view->columns};
    write_array(name, descrs[view->scalar], shape, 2, compact, view->rows * row_bytes);
    free(compact);
}

static void write_offsets(const char *name, const size_t *offsets, size_t count) {
    int64_t *values = malloc((count + 1) * sizeof *values);
    for (size_t i = 0; i <= count; ++i) values[i] = (int64_t)offsets[i];
    size_t shape[1] = {count + 1};
    write_array(name, "<i8", shape, 1, values, (count + 1) * sizeof *values);
    free(values);
}

static const char *scalar_name(uform_scalar_kind_t scalar) {
    static const char *const names[] = {"f32", "f16", "bf16", "i8", "b1"};
    return names[scalar];
}

/* --int8: the float compute of the I8 load's float layers, written into every case. */
static const char *float_compute = NULL;

static void begin_case(const char *name, const char *modality, const char *compute, size_t dimensions,
                       uform_scalar_kind_t scalar) {
    fprintf(manifest, "%s\n  {\"name\": \"%s\", \"modality\": \"%s\", \"compute\": \"%s\", \"dimensions\": %zu, \"scalar\": \"%s\"",
            first_case ? "" : ",", name, modality, compute, dimensions, scalar_name(scalar));
    if (float_compute) fprintf(manifest, ", \"float_compute\": \"%s\"", float_compute);
    first_case = 0;
}

static void write_outputs(const char *name, const uform_encoded_t *encoded) {
    char file[256], offsets[256];
    fprintf(manifest, ", \"outputs\": {");
    int first = 1;
    if (encoded->embeddings.data || encoded->embeddings.rows) {
        snprintf(file, sizeof file, "%s.embeddings.npy", name);
        write_matrix(file, &encoded->embeddings);
        fprintf(manifest, "\"embeddings\": \"%s\"", file);
        first = 0;
    }
    if (encoded->token_vectors.offsets) {
        snprintf(file, sizeof file, "%s.token_vectors.npy", name), snprintf(offsets, sizeof offsets, "%s.token_offsets.npy", name);
        write_matrix(file, &encoded->token_vectors.matrix);
        write_offsets(offsets, encoded->token_vectors.offsets, encoded->token_vectors.count);
        fprintf(manifest, "%s\"token_vectors\": \"%s\", \"token_offsets\": \"%s\"", first ? "" : ", ", file, offsets);
        first = 0;
    }
    if (encoded->states.offsets) {
        snprintf(file, sizeof file, "%s.states.npy", name), snprintf(offsets, sizeof offsets, "%s.state_offsets.npy", name);
        write_matrix(file, &encoded->states.matrix);
        write_offsets(offsets, encoded->states.offsets, encoded->states.count);
        fprintf(manifest, "%s\"states\": \"%s\", \"state_offsets\": \"%s\"", first ? "" : ", ", file, offsets);
    }
    fprintf(manifest, "}}");
}

/* ---- inputs ---- */

typedef struct tape_t {
    unsigned char *data;
    size_t *offsets;
    size_t count, used, capacity;
} tape_t;

static void tape_add(tape_t *tape, const void *bytes, size_t length) {
    if (tape->used + length > tape->capacity) {
        tape->capacity = (tape->used + length) * 2 + 64;
        tape->data = realloc(tape->data, tape->capacity);
    }
    tape->offsets = realloc(tape->offsets, (tape->count + 2) * sizeof(size_t));
    if (tape->count == 0) tape->offsets[0] = 0;
    if (length) memcpy(tape->data + tape->used, bytes, length); /* the first text is empty: data may be NULL */
    tape->used += length;
    tape->offsets[++tape->count] = tape->used;
}

static uform_tape_t tape_view(const tape_t *tape) { return (uform_tape_t){tape->data, tape->offsets, tape->count}; }

static void tape_free(tape_t *tape) { free(tape->data), free(tape->offsets), memset(tape, 0, sizeof *tape); }

static void texts_tape(tape_t *tape, size_t text_bytes) {
    const char *fixed[] = {"", "a", "a photo of a cat", "the sound of rain on a tin roof", "naïve café – 東京"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; ++i) tape_add(tape, fixed[i], strlen(fixed[i]));
    /* Longer than the model's T: truncated. */
    size_t length = text_bytes + 17;
    unsigned char *random_bytes = malloc(length);
    for (size_t i = 0; i < length; ++i) random_bytes[i] = (unsigned char)next_random();
    tape_add(tape, random_bytes, length);
    free(random_bytes);
}

static void write_texts(const tape_t *tape, const char *key) {
    fprintf(manifest, "\"%s\": [", key);
    for (size_t i = 0; i < tape->count; ++i) {
        if (i) fputs(", ", manifest);
        json_base64(manifest, tape->data + tape->offsets[i], tape->offsets[i + 1] - tape->offsets[i]);
    }
    fputc(']', manifest);
}

/* ---- cases ---- */

static void text_case(uform_model_t model, uform_arena_t arena, const char *name, const char *compute,
                      uform_outputs_t outputs, uform_scalar_kind_t scalar, size_t dimensions, size_t text_bytes) {
    tape_t tape = {0};
    texts_tape(&tape, text_bytes);
    uform_text_encode_t request = {0};
    request.model = model, request.texts = tape_view(&tape), request.arena = arena, request.outputs = outputs;
    request.config.outputs_scalar = scalar, request.config.dimensions = dimensions;
    if (uform_text_encode(&request) != UFORM_OK) fail(name, &request.outcome);
    begin_case(name, "text", compute, dimensions, scalar);
    fprintf(manifest, ", \"inputs\": {");
    write_texts(&tape, "texts");
    fprintf(manifest, "}");
    write_outputs(name, &request.encoded);
    tape_free(&tape);
}

static void pixels_case(uform_model_t model, uform_arena_t arena, const char *name, const char *compute, size_t size) {
    /* Up-scaled, down-scaled, square and extreme aspect ratios. */
    size_t heights[4] = {size / 2 + 3, size * 2 + 5, size, 3 * size + 1};
    size_t widths[4] = {size + 7, size * 3 + 1, size, size / 2 + 2};
    tape_t tape = {0};
    char file[256];
    fprintf(manifest, "%s", "");
    for (size_t i = 0; i < 4; ++i) {
        size_t bytes = heights[i] * widths[i] * 3;
        unsigned char *pixels = malloc(bytes);
        for (size_t b = 0; b < bytes; ++b) pixels[b] = (unsigned char)(next_random() >> 56);
        tape_add(&tape, pixels, bytes);
        free(pixels);
    }
    uform_image_encode_pixels_t request = {0};
    request.model = model, request.pixels = tape_view(&tape), request.heights = heights, request.widths = widths;
    request.arena = arena, request.outputs = UFORM_OUTPUTS_EMBEDDINGS | UFORM_OUTPUTS_TOKEN_VECTORS | UFORM_OUTPUTS_STATES;
    if (uform_image_encode_pixels(&request) != UFORM_OK) fail(name, &request.outcome);
    begin_case(name, "image", compute, 0, UFORM_SCALAR_F32);
    fprintf(manifest, ", \"inputs\": {\"pixels\": [");
    for (size_t i = 0; i < 4; ++i) {
        snprintf(file, sizeof file, "%s.pixels%zu.npy", name, i);
        size_t shape[3] = {heights[i], widths[i], 3};
        write_array(file, "|u1", shape, 3, tape.data + tape.offsets[i], heights[i] * widths[i] * 3);
        fprintf(manifest, "%s{\"npy\": \"%s\"}", i ? ", " : "", file);
    }
    fprintf(manifest, "]}, \"preprocessed\": {\"images\": [");
    /* The engine's own preprocessing of each image, for the separate check against torchvision. */
    const float *mean = model->config.image_mean, *std = model->config.image_std;
    for (size_t i = 0; i < 4; ++i) {
        uform__signal_resize_plan_t plan = {0};
        uform_outcome_t outcome = {0};
        float *chw = malloc(3 * size * size * sizeof(float));
        uform__signal_image_target_t target = {UFORM__SIGNAL_PIXELS_F32_CHW_NORMALISED, chw, mean, std, 0, 1, 0};
        if (uform__signal_resize_plan_init_shorter_side(&plan, heights[i], widths[i], size, &outcome) != UFORM_OK ||
            uform__signal_resize_rgb8(&plan, tape.data + tape.offsets[i], widths[i] * 3, &target, NULL, NULL, &outcome) != UFORM_OK)
            fail("resize", &outcome);
        uform__signal_resize_plan_free(&plan);
        snprintf(file, sizeof file, "%s.preprocessed%zu.npy", name, i);
        size_t shape[3] = {3, size, size};
        write_array(file, "<f4", shape, 3, chw, 3 * size * size * sizeof(float));
        fprintf(manifest, "%s\"%s\"", i ? ", " : "", file);
        free(chw);
    }
    fprintf(manifest, "]}");
    write_outputs(name, &request.encoded);
    tape_free(&tape);
}

static void samples_case(uform_model_t model, uform_arena_t arena, const char *name, const char *compute, size_t rate,
                         size_t seconds, size_t mels) {
    /* A chirp plus noise; shorter and longer than the model keeps. */
    size_t lengths[3] = {rate * seconds / 2 + 123, rate * seconds + 4000, rate / 3};
    tape_t tape = {0};
    for (size_t i = 0; i < 3; ++i) {
        float *samples = malloc(lengths[i] * sizeof(float));
        for (size_t s = 0; s < lengths[i]; ++s) {
            double t = (double)s / (double)rate;
            samples[s] = (float)(0.4 * sin(2 * M_PI * (200 + 900 * t * (double)(i + 1)) * t) +
                                 0.05 * ((double)(next_random() >> 11) / 9007199254740992.0 - 0.5));
        }
        tape_add(&tape, samples, lengths[i] * sizeof(float));
        free(samples);
    }
    uform_audio_encode_samples_t request = {0};
    request.model = model, request.samples = tape_view(&tape), request.sample_rate = rate, request.arena = arena;
    request.outputs = UFORM_OUTPUTS_EMBEDDINGS | UFORM_OUTPUTS_TOKEN_VECTORS | UFORM_OUTPUTS_STATES;
    if (uform_audio_encode_samples(&request) != UFORM_OK) fail(name, &request.outcome);
    begin_case(name, "audio", compute, 0, UFORM_SCALAR_F32);
    char file[256];
    fprintf(manifest, ", \"inputs\": {\"samples\": [");
    for (size_t i = 0; i < 3; ++i) {
        snprintf(file, sizeof file, "%s.samples%zu.npy", name, i);
        size_t shape[1] = {lengths[i]};
        write_array(file, "<f4", shape, 1, tape.data + tape.offsets[i], lengths[i] * sizeof(float));
        fprintf(manifest, "%s{\"npy\": \"%s\", \"rate\": %zu}", i ? ", " : "", file, rate);
    }
    /* The engine's resampling and log-mel, for the separate checks. */
    fprintf(manifest, "]}, \"preprocessed\": {\"resampled\": [");
    size_t wanted = 16000 * seconds;
    uform__signal_mel_plan_t mel = {0};
    uform_outcome_t outcome = {0};
    if (uform__signal_mel_plan_init(&mel, 16000, 400, 160, mels, 0, 0, &outcome) != UFORM_OK) fail("mel plan", &outcome);
    float **log_mels = calloc(3, sizeof *log_mels);
    size_t frames = uform__signal_stft_frames(&mel, wanted) - 1;
    for (size_t i = 0; i < 3; ++i) {
        uform__signal_resample_plan_t plan = {0};
        if (uform__signal_resample_plan_init(&plan, rate, 16000, &outcome) != UFORM_OK) fail("resample plan", &outcome);
        size_t length = uform__signal_resample_length(&plan, lengths[i]);
        float *resampled = malloc(length * sizeof(float)), *padded = calloc(wanted, sizeof(float));
        uform__signal_resample_f32(&plan, (const float *)(tape.data + tape.offsets[i]), lengths[i], resampled, NULL, NULL);
        memcpy(padded, resampled, (length < wanted ? length : wanted) * sizeof(float));
        snprintf(file, sizeof file, "%s.resampled%zu.npy", name, i);
        size_t shape[1] = {wanted};
        write_array(file, "<f4", shape, 1, padded, wanted * sizeof(float));
        fprintf(manifest, "%s\"%s\"", i ? ", " : "", file);
        log_mels[i] = malloc(frames * mels * sizeof(float));
        if (uform__signal_log_mel_f32(&mel, padded, wanted, log_mels[i], NULL, &outcome) != UFORM_OK) fail("log-mel", &outcome);
        uform__signal_resample_plan_free(&plan);
        free(resampled), free(padded);
    }
    fprintf(manifest, "], \"log_mels\": [");
    for (size_t i = 0; i < 3; ++i) {
        snprintf(file, sizeof file, "%s.log_mel%zu.npy", name, i);
        size_t shape[2] = {frames, mels};
        write_array(file, "<f4", shape, 2, log_mels[i], frames * mels * sizeof(float));
        fprintf(manifest, "%s\"%s\"", i ? ", " : "", file);
        free(log_mels[i]);
    }
    free(log_mels);
    uform__signal_mel_plan_free(&mel);
    fprintf(manifest, "]}");
    write_outputs(name, &request.encoded);
    tape_free(&tape);
}

/* Video from decoded frames goes through the internal frames source (the decoder is tested on its own). */
typedef struct frames_request_t {
    uform__encode_job_t job;
    uform_outcome_t outcome;
} frames_request_t;

static uform_status_t frames_run(void *pointer, uform__call_context_t *context) {
    return uform__encode_run(&((frames_request_t *)pointer)->job, context);
}

static void frames_case(uform_model_t model, uform_arena_t arena, const char *name, const char *compute, size_t frames,
                        size_t size) {
    size_t heights[2] = {size + 9, size * 2}, widths[2] = {size * 2 - 3, size + 1};
    tape_t tape = {0};
    for (size_t i = 0; i < 2; ++i) {
        size_t bytes = frames * heights[i] * widths[i] * 3;
        unsigned char *pixels = malloc(bytes);
        for (size_t b = 0; b < bytes; ++b) pixels[b] = (unsigned char)(next_random() >> 56);
        tape_add(&tape, pixels, bytes);
        free(pixels);
    }
    uform_tape_t view = tape_view(&tape);
    uform_encode_config_t config = {0};
    uform_encoded_t encoded;
    frames_request_t request;
    memset(&request, 0, sizeof request);
    request.job.model = model, request.job.modality = UFORM_MODALITY_VIDEO, request.job.source = UFORM__SOURCE_VIDEO_FRAMES;
    request.job.inputs = &view, request.job.heights = heights, request.job.widths = widths;
    request.job.outputs = UFORM_OUTPUTS_EMBEDDINGS | UFORM_OUTPUTS_TOKEN_VECTORS | UFORM_OUTPUTS_STATES;
    request.job.config = &config, request.job.encoded = &encoded, request.job.inputs_name = "frames";
    if (uform__encode_validate(&request.job, &request.outcome, name) != UFORM_OK) fail(name, &request.outcome);
    uform__call_t call = {frames_run, &request, &request.outcome, UFORM_COMPLETION_BLOCKING, arena, NULL, "frames"};
    if (uform__executor_call(NULL, &call) != UFORM_OK) fail(name, &request.outcome);
    begin_case(name, "video", compute, 0, UFORM_SCALAR_F32);
    char file[256];
    fprintf(manifest, ", \"inputs\": {\"frames\": [");
    for (size_t i = 0; i < 2; ++i) {
        snprintf(file, sizeof file, "%s.frames%zu.npy", name, i);
        size_t shape[4] = {frames, heights[i], widths[i], 3};
        write_array(file, "|u1", shape, 4, tape.data + tape.offsets[i], frames * heights[i] * widths[i] * 3);
        fprintf(manifest, "%s{\"npy\": \"%s\"}", i ? ", " : "", file);
    }
    fprintf(manifest, "]}");
    if (float_compute) { /* --int8: the engine's preprocessing of every frame, [F, 3, S, S] per item */
        const float *mean = model->config.image_mean, *std = model->config.image_std;
        fprintf(manifest, ", \"preprocessed\": {\"images\": [");
        for (size_t i = 0; i < 2; ++i) {
            float *chw = malloc(frames * 3 * size * size * sizeof(float));
            size_t frame_bytes = heights[i] * widths[i] * 3;
            for (size_t f = 0; f < frames; ++f) {
                uform__signal_resize_plan_t plan = {0};
                uform_outcome_t outcome = {0};
                uform__signal_image_target_t target = {UFORM__SIGNAL_PIXELS_F32_CHW_NORMALISED, chw + f * 3 * size * size,
                                                       mean, std, 0, 1, 0};
                if (uform__signal_resize_plan_init_shorter_side(&plan, heights[i], widths[i], size, &outcome) != UFORM_OK ||
                    uform__signal_resize_rgb8(&plan, tape.data + tape.offsets[i] + f * frame_bytes, widths[i] * 3, &target,
                                              NULL, NULL, &outcome) != UFORM_OK)
                    fail("resize", &outcome);
                uform__signal_resize_plan_free(&plan);
            }
            snprintf(file, sizeof file, "%s.preprocessed%zu.npy", name, i);
            size_t shape[4] = {frames, 3, size, size};
            write_array(file, "<f4", shape, 4, chw, frames * 3 * size * size * sizeof(float));
            fprintf(manifest, "%s\"%s\"", i ? ", " : "", file);
            free(chw);
        }
        fprintf(manifest, "]}");
    }
    write_outputs(name, &encoded);
    tape_free(&tape);
}

static void choose_case(uform_model_t model, uform_arena_t arena, const char *name, const char *compute,
                        size_t text_bytes, size_t groups_count) {
    tape_t texts = {0}, choices = {0};
    texts_tape(&texts, text_bytes);
    size_t *groups = malloc(texts.count * sizeof *groups);
    for (size_t i = 0; i < texts.count; ++i) {
        unsigned char legal[256], used[256] = {0};
        size_t length = 1 + next_random() % (i == 0 ? 1 : 40);
        if (i == 1) length = 256; /* every byte */
        for (size_t c = 0; c < length;) {
            unsigned char byte = i == 1 ? (unsigned char)c : (unsigned char)next_random();
            if (used[byte]) continue;
            used[byte] = 1, legal[c++] = byte;
        }
        tape_add(&choices, legal, length);
        groups[i] = i % groups_count;
    }
    uform_text_choose_t request = {0};
    request.model = model, request.texts = tape_view(&texts), request.choices = tape_view(&choices);
    request.groups = groups, request.arena = arena;
    if (uform_text_choose(&request) != UFORM_OK) fail(name, &request.outcome);
    begin_case(name, "choose", compute, 0, UFORM_SCALAR_F32);
    fprintf(manifest, ", \"inputs\": {");
    write_texts(&texts, "texts");
    fputs(", ", manifest);
    write_texts(&choices, "choices");
    fprintf(manifest, ", \"groups\": [");
    for (size_t i = 0; i < texts.count; ++i) fprintf(manifest, "%s%zu", i ? ", " : "", groups[i]);
    char file[256], offsets[256];
    snprintf(file, sizeof file, "%s.probabilities.npy", name), snprintf(offsets, sizeof offsets, "%s.choice_offsets.npy", name);
    size_t total = request.probabilities.matrix.rows;
    float *values = malloc((total + 1) * sizeof(float));
    for (size_t r = 0; r < total; ++r) {
        const void *row;
        if (uform_matrix_row(&request.probabilities.matrix, r, &row) != UFORM_OK) exit(1);
        values[r] = *(const float *)row;
    }
    size_t shape[1] = {total};
    write_array(file, "<f4", shape, 1, values, total * sizeof(float));
    write_offsets(offsets, request.probabilities.offsets, request.probabilities.count);
    fprintf(manifest, "]}, \"outputs\": {\"probabilities\": \"%s\", \"choice_offsets\": \"%s\"}}", file, offsets);
    free(values), free(groups);
    tape_free(&texts), tape_free(&choices);
}

/* ---- --int8: the trunk one block at a time ---- */

/* Runs block `block` of the model alone on x [tokens, d] (items at `offsets`), in place: the trunk
 * of a shallow copy that holds that one block, with the compute an encode call sets up. */
typedef struct block_request_t {
    uform_model_t model;
    size_t block, tokens, items;
    float *x;
    const size_t *offsets;
    uform_outcome_t outcome;
} block_request_t;

static uform_status_t block_run(void *pointer, uform__call_context_t *context) {
    block_request_t *request = pointer;
    struct uform_model_s single = *request->model;
    single.config.depth = 1;
    single.blocks = request->model->blocks + request->block;
    uform__compute_t compute;
    memset(&compute, 0, sizeof compute);
    compute.gemm = uform__gemm_kernels(context->cpu_class);
    compute.nn = uform__nn_kernels(context->cpu_class);
    compute.parallel = context->parallel;
    compute.packed = context->cpu_class == single.cpu_class;
    compute.compute = uform__gemm_rounds_to_bf16(compute.gemm) ? UFORM_COMPUTE_BF16 : UFORM_COMPUTE_F32;
    compute.i8 = uform__gemm_i8_kernels(context->cpu_class);
    float *trunk = malloc(uform__trunk_scratch_floats(&single.config, request->tokens) * sizeof(float) + 64);
    size_t i8_bytes = uform__i8_scratch_bytes(&single, &compute, request->tokens);
    void *i8 = aligned_alloc(64, (i8_bytes + 63) / 64 * 64);
    if (!trunk || !i8) {
        free(trunk), free(i8);
        return uform__fail(context->outcome, UFORM_OUT_OF_MEMORY, context->function, "block scratch");
    }
    uform__i8_scratch_carve(&single, &compute, request->tokens, i8);
    uform__trunk_scratch_t scratch;
    uform__trunk_scratch_carve(&single.config, request->tokens, (float *)(((uintptr_t)trunk + 63) / 64 * 64), &scratch);
    size_t done = 0;
    uform_status_t status = uform__trunk_forward(&single, &compute, request->x, request->tokens, request->offsets,
                                                 request->items, NULL, &scratch, context, &done);
    free(trunk), free(i8);
    return status;
}

/* Block `b` alone over x [offsets[items] tokens, d], in place, on `executor`. */
static void run_block(uform_model_t model, uform_executor_t executor, size_t b, float *x, const size_t *offsets,
                      size_t items) {
    block_request_t request = {model, b, offsets[items] - offsets[0], items, x, offsets, {0}};
    uform__call_t call = {block_run, &request, &request.outcome, UFORM_COMPLETION_BLOCKING, NULL, NULL, "block"};
    if (uform__executor_call(executor, &call) != UFORM_OK) fail("block", &request.outcome);
}

/* Items of random rows N(0, 1) (offsets [items + 1]), and the engine's rows after each block, each
 * block started from the engine's own rows before it: compare_int8.py checks every block alone
 * against the NumPy scheme. On two threads, a block of fewer than 384 rows runs unfused and one
 * of more runs fused (src/model/trunk_i8.c): a whole item per thread when the items split evenly
 * over the threads, else per block of rows; `name` says which this case is.
 * The fused case also runs each item alone (few rows: unfused) and requires the same bits, which
 * docs/int8.md promises. */
static void blocks_case(uform_model_t model, uform_executor_t executor, size_t depth, size_t d, const char *name,
                        const size_t *offsets, size_t items, int fused) {
    size_t tokens = offsets[items];
    float *x = malloc(tokens * d * sizeof(float)), *alone = malloc(tokens * d * sizeof(float));
    if (!x || !alone) {
        fprintf(stderr, "parity_dump: cannot allocate %zu rows\n", tokens);
        exit(1);
    }
    for (size_t i = 0; i < tokens * d; ++i) {
        double u1 = ((double)(next_random() >> 11) + 1.0) / 9007199254740993.0, u2 = (double)(next_random() >> 11) / 9007199254740992.0;
        x[i] = (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
    }
    char file[96];
    begin_case(name, "blocks", "i8", 0, UFORM_SCALAR_F32);
    size_t shape[2] = {tokens, d};
    snprintf(file, sizeof file, "%s.x0.npy", name);
    write_array(file, "<f4", shape, 2, x, tokens * d * sizeof(float));
    fprintf(manifest, ", \"inputs\": {\"x\": \"%s\"", file);
    snprintf(file, sizeof file, "%s.offsets.npy", name);
    write_offsets(file, offsets, items);
    fprintf(manifest, ", \"offsets\": \"%s\"}, \"outputs\": {\"blocks\": [", file);
    for (size_t b = 0; b < depth; ++b) {
        memcpy(alone, x, tokens * d * sizeof(float));
        run_block(model, executor, b, x, offsets, items);
        for (size_t i = 0; fused && i < items; ++i) {
            size_t item_offsets[2] = {0, offsets[i + 1] - offsets[i]};
            run_block(model, executor, b, alone + offsets[i] * d, item_offsets, 1);
        }
        if (fused && memcmp(alone, x, tokens * d * sizeof(float)) != 0) {
            fprintf(stderr, "parity_dump: %s: block %zu fused over %zu rows differs from its items run alone (unfused)\n",
                    name, b, tokens);
            exit(1);
        }
        snprintf(file, sizeof file, "%s.x%zu.npy", name, b + 1);
        write_array(file, "<f4", shape, 2, x, tokens * d * sizeof(float));
        fprintf(manifest, "%s\"%s\"", b ? ", " : "", file);
    }
    fprintf(manifest, "]}}");
    free(x), free(alone);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: parity_dump CHECKPOINT DIRECTORY [--quick | --int8]\n");
        return 2;
    }
    const char *checkpoint = argv[1];
    directory = argv[2];
    int quick = argc > 3 && strcmp(argv[3], "--quick") == 0, int8 = argc > 3 && strcmp(argv[3], "--int8") == 0;
    mkdir(directory, 0755);
    char path[1024];
    path_of(path, sizeof path, "manifest.json");
    manifest = fopen(path, "w");
    if (!manifest) return 1;
    char absolute[4096];
    if (!realpath(checkpoint, absolute)) snprintf(absolute, sizeof absolute, "%s", checkpoint);
    fprintf(manifest, "{\"checkpoint\": \"%s\", \"cases\": [", absolute);

    uform_outcome_t outcome = {0};
    uform_arena_t arena = NULL;
    uform_arena_for_host(&arena, NULL);
    if (int8) {
        uform_ram_options_t options = {0};
        options.compute = UFORM_COMPUTE_I8;
        uform_model_t model = NULL;
        if (uform_model_load_ram(NULL, checkpoint, &options, &model, &outcome) != UFORM_OK) fail("load", &outcome);
        uform_model_describe_t describe = {model};
        uform_model_describe(&describe);
        const uform_model_description_t *d = &describe.description;
        float_compute = uform__gemm_rounds_to_bf16(uform__gemm_kernels(d->cpu_class)) ? "bf16" : "f32";
        uform_outputs_t all = UFORM_OUTPUTS_EMBEDDINGS | UFORM_OUTPUTS_TOKEN_VECTORS | UFORM_OUTPUTS_STATES;
        text_case(model, arena, "text_i8", "i8", all, UFORM_SCALAR_F32, 0, d->text_bytes);
        text_case(model, arena, "text_embeddings_i8", "i8", UFORM_OUTPUTS_EMBEDDINGS, UFORM_SCALAR_F32, 0, d->text_bytes);
        pixels_case(model, arena, "image_i8", "i8", d->image_size);
        samples_case(model, arena, "audio_i8", "i8", 22050, d->audio_seconds, d->audio_mels);
        frames_case(model, arena, "video_i8", "i8", d->video_frames, d->video_size);
        choose_case(model, arena, "choose_i8", "i8", d->text_bytes, d->temperature_groups);
        /* Two threads whatever the machine: the blocks' fusion depends on rows per thread. */
        uform_executor_t two = NULL;
        if (uform_executor_for_ram(NULL, 2, 0, &two, &outcome) != UFORM_OK) fail("executor", &outcome);
        /* A short item, one across two attention blocks, one across three: 206 rows, unfused. */
        static const size_t unfused_offsets[4] = {0, 5, 75, 206};
        blocks_case(model, two, d->depth, d->hidden, "blocks_i8", unfused_offsets, 3, 0);
        /* 830 rows in four items of up to 270, fused a whole item per thread (two each): every
         * item alone has fewer than 384 rows, so runs unfused. */
        static const size_t fused_offsets[5] = {0, 64, 334, 560, 830};
        blocks_case(model, two, d->depth, d->hidden, "blocks_fused_i8", fused_offsets, 4, 1);
        /* 690 rows in three items, which do not split evenly over two threads: fused per 48 rows. */
        static const size_t rows_offsets[4] = {0, 150, 420, 690};
        blocks_case(model, two, d->depth, d->hidden, "blocks_rows_i8", rows_offsets, 3, 1);
        uform_executor_free(two);
        uform_model_free(model);
    }
    for (int bf16 = 0; bf16 <= 1 && !int8; ++bf16) {
        uform_ram_options_t options = {0};
        options.compute = bf16 ? UFORM_COMPUTE_BF16 : UFORM_COMPUTE_F32;
        uform_model_t model = NULL;
        if (uform_model_load_ram(NULL, checkpoint, &options, &model, &outcome) != UFORM_OK) fail("load", &outcome);
        uform_model_describe_t describe = {model};
        uform_model_describe(&describe);
        const uform_model_description_t *d = &describe.description;
        const char *compute = bf16 ? "bf16" : "f32";
        char name[64];
        uform_outputs_t all = UFORM_OUTPUTS_EMBEDDINGS | UFORM_OUTPUTS_TOKEN_VECTORS | UFORM_OUTPUTS_STATES;
        snprintf(name, sizeof name, "text_%s", compute);
        text_case(model, arena, name, compute, all, UFORM_SCALAR_F32, 0, d->text_bytes);
        snprintf(name, sizeof name, "image_%s", compute);
        pixels_case(model, arena, name, compute, d->image_size);
        /* Embeddings alone take the pruned last block (only the [CLS] rows past its K and V). */
        snprintf(name, sizeof name, "text_embeddings_%s", compute);
        text_case(model, arena, name, compute, UFORM_OUTPUTS_EMBEDDINGS, UFORM_SCALAR_F32, 0, d->text_bytes);
        if (bf16) {
            samples_case(model, arena, "audio_bf16", compute, 22050, d->audio_seconds, d->audio_mels);
            frames_case(model, arena, "video_bf16", compute, d->video_frames, d->video_size);
            choose_case(model, arena, "choose_bf16", compute, d->text_bytes, d->temperature_groups);
        }
        if (!bf16) {
            static const uform_scalar_kind_t scalars[4] = {UFORM_SCALAR_F16, UFORM_SCALAR_BF16, UFORM_SCALAR_I8, UFORM_SCALAR_B1};
            for (int s = 0; s < 4; ++s) {
                snprintf(name, sizeof name, "text_dims_%s", scalar_name(scalars[s]));
                text_case(model, arena, name, compute, UFORM_OUTPUTS_EMBEDDINGS | UFORM_OUTPUTS_TOKEN_VECTORS, scalars[s],
                          d->matryoshka[0], d->text_bytes);
            }
            samples_case(model, arena, "audio_44100", compute, 44100, d->audio_seconds, d->audio_mels);
            if (!quick) samples_case(model, arena, "audio_8000", compute, 8000, d->audio_seconds, d->audio_mels);
            frames_case(model, arena, "video_f32", compute, d->video_frames, d->video_size);
            choose_case(model, arena, "choose_f32", compute, d->text_bytes, d->temperature_groups);
        }
        uform_model_free(model);
    }
    fprintf(manifest, "\n]}\n");
    fclose(manifest);
    uform_arena_free(arena);
    printf("parity_dump: wrote %s/manifest.json\n", directory);
    return 0;
}
