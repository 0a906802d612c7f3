/*
 * train_parity_dump DIRECTORY [--bf16] [--steps N] [--lr X] [--seed N]
 *
 * Trains a fresh tiny model for N steps (3 by default) on one generated batch that has pairs of
 * every modality with text, a bag of several contents, sides, two temperature groups and choice
 * examples (one in a bag, two after the bags, one longer than text_bytes), and writes what the
 * independent PyTorch reference needs to replay the same steps (tests/reference/README.md, "Step
 * parity"): the starting checkpoint with its optimizer state, the batch with the engine's
 * preprocessed media, and after every step the logged values, the bag embeddings, the gradients
 * before clipping and the checkpoint with the optimizer's state.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/safetensors.h"
#include "model/config.h"
#include "model/encode.h"
#include "model/stems.h"
#include "common/base64.h"
#include "npy.h"
#include "train/trainer.h"
#include "train_test_batch.h"
#include "uform/uform.h"

static const char *directory;

static void fail(const char *what, const uform_outcome_t *outcome) {
    char line[600];
    uform_outcome_format(outcome, line, sizeof line);
    fprintf(stderr, "train_parity_dump: %s: %s\n", what, line);
    exit(1);
}

static void path_of(char *path, size_t capacity, const char *name) { snprintf(path, capacity, "%s/%s", directory, name); }

static void write_array(const char *name, const size_t *shape, size_t rank, const float *data) {
    char path[1024];
    path_of(path, sizeof path, name);
    size_t count = 1;
    for (size_t i = 0; i < rank; ++i) count *= shape[i];
    if (npy_write(path, "<f4", shape, rank, data, count * sizeof(float)) != 0) {
        fprintf(stderr, "train_parity_dump: cannot write %s\n", path);
        exit(1);
    }
}

/* ---- the engine's preprocessing, as the reference takes it ---- */

/* Patch rows of media content `item` (its decode through the inference code) rearranged into the
 * reference's inputs: image [3, S, S], video [F, 3, S, S], audio log-mel [4A, M]. */
static void write_input(uform_model_t model, const test_batch_t *batch, size_t item, const char *name, size_t shape[4],
                        size_t *rank) {
    const uform__model_config_t *config = &model->config;
    uform_tape_t tape = {batch->data, batch->offsets, batch->count};
    uform__encode_job_t job;
    memset(&job, 0, sizeof job);
    job.model = model, job.modality = batch->modalities[item], job.inputs = &tape;
    job.source = job.modality == UFORM_MODALITY_IMAGE   ? UFORM__SOURCE_IMAGE_FILES
                 : job.modality == UFORM_MODALITY_VIDEO ? UFORM__SOURCE_VIDEO_FILES
                                                        : UFORM__SOURCE_AUDIO_FILES;
    size_t tokens = uform__stem_item_tokens(&job, item) - 1, width = uform__stem_patch_width(config, job.modality);
    float *rows = malloc(tokens * width * sizeof(float)), *out = malloc(tokens * width * sizeof(float));
    uform_outcome_t outcome = {0};
    if (uform__stem_decode_item(&job, item, rows, uform__signal_kernels(UFORM_CPU_CLASS_SERIAL), &outcome) != UFORM_OK)
        fail(name, &outcome);
    if (job.modality == UFORM_MODALITY_AUDIO) {
        /* Token a holds frames 4a..4a+3, frame-major: already [4A, M] in memory. */
        memcpy(out, rows, tokens * width * sizeof(float));
        shape[0] = tokens * UFORM__AUDIO_FRAMES_PER_TOKEN, shape[1] = config->audio_mels, *rank = 2;
    } else {
        int video = job.modality == UFORM_MODALITY_VIDEO;
        size_t S = video ? config->video_size : config->image_size, p = video ? config->video_patch : config->image_patch;
        size_t t = video ? config->video_tubelet : 1, frames = video ? config->video_frames : 1, g = S / p;
        for (size_t row = 0; row < tokens; ++row) {
            size_t tau = row / (g * g), k = row % (g * g), gy = k / g, gx = k % g;
            for (size_t c = 0; c < 3; ++c)
                for (size_t f = 0; f < t; ++f)
                    for (size_t y = 0; y < p; ++y)
                        for (size_t x = 0; x < p; ++x) {
                            size_t frame = tau * t + f;
                            out[((frame * 3 + c) * S + gy * p + y) * S + gx * p + x] =
                                rows[row * width + ((c * t + f) * p + y) * p + x];
                        }
        }
        if (video) shape[0] = frames, shape[1] = 3, shape[2] = S, shape[3] = S, *rank = 4;
        else shape[0] = 3, shape[1] = S, shape[2] = S, *rank = 3;
    }
    write_array(name, shape, *rank, out);
    free(rows), free(out);
}

static void save(uform_trainer_t trainer, const char *name) {
    char path[1024];
    path_of(path, sizeof path, name);
    uform_trainer_save_t request = {0};
    request.trainer = trainer, request.path = path;
    if (uform_trainer_save(&request) != UFORM_OK) fail(name, &request.outcome);
}

/* The gradients of the last step before clipping, as F32 tensors named like the parameters. */
static void write_gradients(uform_trainer_t trainer, double norm, const char *name) {
    double unclip = trainer->optimizer.clip_norm > 0 && norm > trainer->optimizer.clip_norm
                        ? norm / trainer->optimizer.clip_norm
                        : 1.0;
    size_t n = trainer->param_count;
    uform__safetensors_source_t *sources = calloc(n, sizeof *sources);
    uint64_t *shapes = calloc(2 * n, sizeof *shapes);
    float *values = malloc(trainer->total * sizeof(float));
    for (size_t i = 0; i < trainer->total; ++i) values[i] = (float)(trainer->grads[i] * unclip);
    for (size_t i = 0; i < n; ++i) {
        const uform__param_t *param = &trainer->params[i];
        shapes[2 * i] = param->spec.rows, shapes[2 * i + 1] = param->spec.columns;
        sources[i].name = param->spec.name, sources[i].dtype = UFORM__SAFETENSORS_F32;
        sources[i].rank = param->spec.columns ? 2 : 1, sources[i].shape = &shapes[2 * i];
        sources[i].data = values + param->offset;
    }
    char path[1024];
    path_of(path, sizeof path, name);
    uform__safetensors_write_t request = {sources, n, NULL, 0, NULL, NULL};
    uform_outcome_t outcome = {0};
    if (uform__safetensors_write(path, &request, &outcome) != UFORM_OK) fail(name, &outcome);
    free(sources), free(shapes), free(values);
}

/* Draws the tensors a fresh trainer starts at constants (biases and CLS rows at 0, norms at 1 and 0,
 * every temperature group at ln(1/0.07)) away from them, so the comparison sees a swapped weight
 * and bias, one temperature group used for another, and no tensor whose scale is the first
 * update alone (where AdamW's epsilon makes the update of a near-zero gradient ill-conditioned). */
static void draw_constants(uform_trainer_t trainer) {
    uint64_t state = 99;
    for (size_t i = 0; i < trainer->param_count; ++i) {
        const uform__param_t *param = &trainer->params[i];
        float *values = trainer->weights + param->offset;
        switch (param->spec.kind) {
        case UFORM__TENSOR_BIAS:
        case UFORM__TENSOR_NORM_BIAS:
            for (size_t e = 0; e < param->count; ++e) values[e] = (float)(0.02 * uform__random_normal(&state));
            break;
        case UFORM__TENSOR_NORM_WEIGHT:
            for (size_t e = 0; e < param->count; ++e) values[e] = (float)(1.0 + 0.1 * uform__random_normal(&state));
            break;
        case UFORM__TENSOR_TABLE:
            if (param->count == trainer->config.hidden) /* CLS rows (modality vectors are drawn already) */
                for (size_t e = 0; e < param->count; ++e)
                    if (values[e] == 0.0f) values[e] = (float)(0.02 * uform__random_normal(&state));
            break;
        case UFORM__TENSOR_TEMPERATURES:
            for (size_t e = 0; e < param->count; ++e) values[e] = (float)(2.0 + 0.3 * (double)e);
            break;
        default: break;
        }
    }
    uform__train_bf16_refresh(trainer, uform__nn_kernels(trainer->cpu_class));
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: train_parity_dump DIRECTORY [--bf16] [--steps N] [--lr X] [--seed N]\n");
        return 2;
    }
    directory = argv[1];
    int bf16 = 0, steps = 3;
    uint64_t seed = 5; /* the starting point; others measure the BF16 spread (tests/reference/README.md) */
    double learning_rate = 0;
    for (int i = 2; i < argc; ++i) {
        if (strcmp(argv[i], "--bf16") == 0) bf16 = 1;
        else if (strcmp(argv[i], "--lr") == 0 && i + 1 < argc) learning_rate = atof(argv[++i]);
        else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc) steps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
    }
    mkdir(directory, 0755);
    uform_outcome_t outcome = {0};
    uform_executor_t executor = NULL;
    if (uform_executor_for_ram(NULL, 2, 0, &executor, &outcome) != UFORM_OK) fail("executor", &outcome);
    uform_trainer_config_t config = {0};
    config.seed = seed;
    config.compute = bf16 ? UFORM_COMPUTE_BF16 : UFORM_COMPUTE_F32;
    config.warmup_steps = 2, config.total_steps = 10;
    config.learning_rate = learning_rate;
#if !defined(UFORM_WITH_FFMPEG)
    config.modalities = 0xB; /* no video without FFmpeg */
#endif
    uform_trainer_t trainer = NULL;
    if (uform_trainer_init_ram(executor, &config, &trainer, &outcome) != UFORM_OK) fail("trainer", &outcome);
    draw_constants(trainer);
    save(trainer, "start.safetensors");

    test_batch_t batch;
    memset(&batch, 0, sizeof batch);
    static const uint8_t red[3] = {220, 30, 30}, blue[3] = {30, 40, 210};
    size_t size;
    /* bag 0 (side 0) ↔ bag 1 (side 1), group 0 */
    test_batch_text(&batch, "a red disc on the left", NULL, 0);
    test_batch_media(&batch, UFORM_MODALITY_IMAGE, test_picture(0, red, 14, &size), &size);
    /* bag 2 (side 0) ↔ bag 3 (side 1: a photo and a recording), group 1 */
    test_batch_text(&batch, "a blue square and a low hum", NULL, 0);
    test_batch_media(&batch, UFORM_MODALITY_IMAGE, test_picture(1, blue, 30, &size), &size);
    test_batch_media(&batch, UFORM_MODALITY_AUDIO, demo_wav(220.0, 22050, 1, 1.2, &size), &size);
    size_t *bags = batch.bags, bag_count = 4;
    bags[0] = 0, bags[1] = 1, bags[2] = 2, bags[3] = 3, bags[4] = 5;
#if defined(UFORM_WITH_FFMPEG)
    /* bag 4 ↔ bag 5 (a clip), group 0 */
    static const uint8_t green[3] = {40, 200, 60};
    test_batch_text(&batch, "a green disc moving right", NULL, 0);
    test_batch_media(&batch, UFORM_MODALITY_VIDEO, demo_mp4(green, 64, 48, 8, &size), &size);
    bags[++bag_count] = 6, bags[++bag_count] = 7;
#endif
    /* bag (side 0) ↔ bag (side 1: a recording), group 1; the text also has choices */
    test_batch_text(&batch, "a high tone? ", "yn", 'y');
    test_batch_media(&batch, UFORM_MODALITY_AUDIO, demo_wav(880.0, 16000, 2, 0.8, &size), &size);
    bags[bag_count + 1] = bags[bag_count] + 1, bags[bag_count + 2] = bags[bag_count] + 2;
    bag_count += 2;
    /* Choice examples after the bags; the first is longer than text_bytes (64). */
    test_batch_text(&batch, "the answer to this long question, which goes on past the sixty-four bytes a text keeps: ",
             "yn", 'n');
    test_batch_text(&batch, "pick a vowel: ", "aeiou", 'e');
    uint8_t *sides = batch.sides;
    size_t *lefts = batch.lefts, *rights = batch.rights, *groups = batch.groups, relations = bag_count / 2;
    batch.bag_count = bag_count, batch.relations = relations;
    for (size_t j = 0; j < bag_count; ++j) sides[j] = (uint8_t)(j % 2);
    for (size_t r = 0; r < relations; ++r) lefts[r] = 2 * r, rights[r] = 2 * r + 1, groups[r] = r % 2;

    uform_arena_t arena = NULL;
    if (uform_arena_for_executor(executor, &arena, &outcome) != UFORM_OK) fail("arena", &outcome);

    /* The engine's preprocessed media, from the start checkpoint's model (preprocessing has no weights). */
    char path[1024];
    path_of(path, sizeof path, "start.safetensors");
    uform_model_t model = NULL;
    if (uform_model_load_ram(NULL, path, NULL, &model, &outcome) != UFORM_OK) fail("model", &outcome);
    char manifest_path[1024];
    path_of(manifest_path, sizeof manifest_path, "manifest.json");
    FILE *manifest = fopen(manifest_path, "w");
    if (!manifest) {
        fprintf(stderr, "train_parity_dump: cannot write %s\n", manifest_path);
        return 1;
    }
    const uform__optimizer_t *optimizer = &trainer->optimizer;
    fprintf(manifest,
            "{\"checkpoint\": \"start.safetensors\", \"compute\": \"%s\",\n \"optimizer\": {\"learning_rate\": %.17g, "
            "\"beta1\": %.17g, \"beta2\": %.17g, \"epsilon\": %.17g, \"weight_decay\": %.17g, \"clip_norm\": %.17g, "
            "\"warmup\": %llu, \"total_steps\": %llu, \"contrastive_weight\": %.17g, \"choice_weight\": %.17g},\n \"steps\": [",
            bf16 ? "bf16" : "f32", optimizer->learning_rate, optimizer->beta1, optimizer->beta2, optimizer->epsilon,
            optimizer->weight_decay, optimizer->clip_norm, (unsigned long long)optimizer->warmup_steps,
            (unsigned long long)optimizer->total_steps, optimizer->contrastive_weight, optimizer->choice_weight);
    static const char *const modality_names[4] = {"text", "image", "video", "audio"};
    for (int s = 0; s < steps; ++s) {
        uform_trainer_step_t step;
        test_batch_request(&batch, trainer, arena, &step);
        if (uform_trainer_step(&step) != UFORM_OK) fail("step", &step.outcome);
        char name[64];
        fprintf(manifest, "%s\n  {\"batch\": {\"contents\": [", s ? "," : "");
        for (size_t i = 0; i < batch.count; ++i) {
            fprintf(manifest, "%s\n    {\"modality\": \"%s\", ", i ? "," : "", modality_names[batch.modalities[i]]);
            if (batch.modalities[i] == UFORM_MODALITY_TEXT) {
                fprintf(manifest, "\"text\": ");
                json_base64(manifest, batch.data + batch.offsets[i], batch.offsets[i + 1] - batch.offsets[i]);
            } else {
                size_t shape[4], rank;
                snprintf(name, sizeof name, "s%d_c%zu.npy", s, i);
                write_input(model, &batch, i, name, shape, &rank);
                fprintf(manifest, "\"input\": \"%s\"", name);
            }
            fprintf(manifest, "}");
        }
        fprintf(manifest, "],\n   \"bags\": [");
        for (size_t j = 0; j <= bag_count; ++j) fprintf(manifest, "%s%zu", j ? ", " : "", bags[j]);
        fprintf(manifest, "], \"sides\": [");
        for (size_t j = 0; j < bag_count; ++j) fprintf(manifest, "%s%u", j ? ", " : "", sides[j]);
        fprintf(manifest, "],\n   \"relations\": {\"lefts\": [");
        for (size_t r = 0; r < relations; ++r) fprintf(manifest, "%s%zu", r ? ", " : "", lefts[r]);
        fprintf(manifest, "], \"rights\": [");
        for (size_t r = 0; r < relations; ++r) fprintf(manifest, "%s%zu", r ? ", " : "", rights[r]);
        fprintf(manifest, "], \"groups\": [");
        for (size_t r = 0; r < relations; ++r) fprintf(manifest, "%s%zu", r ? ", " : "", groups[r]);
        fprintf(manifest, "]},\n   \"choices\": [");
        for (size_t i = 0; i < batch.count; ++i) {
            fprintf(manifest, "%s", i ? ", " : "");
            json_base64(manifest, (const unsigned char *)batch.choices + batch.choice_offsets[i],
                   batch.choice_offsets[i + 1] - batch.choice_offsets[i]);
        }
        fprintf(manifest, "], \"choice_targets\": [");
        for (size_t i = 0; i < batch.count; ++i) fprintf(manifest, "%s%u", i ? ", " : "", batch.targets[i]);
        fprintf(manifest, "]},\n   \"outputs\": {\"loss\": %.17g, \"contrastive\": %.17g, \"choice\": %.17g, "
                          "\"learning_rate\": %.17g, \"grad_norm\": %.17g, \"temperatures\": [",
                step.loss, step.contrastive, step.choice, step.learning_rate, step.grad_norm);
        const float *temperatures = step.temperatures.data;
        for (size_t g = 0; g < step.temperatures.columns; ++g)
            fprintf(manifest, "%s%.9g", g ? ", " : "", temperatures[g]);
        snprintf(name, sizeof name, "s%d_bags.npy", s);
        size_t E = step.bag_embeddings.columns, B = step.bag_embeddings.rows;
        float *compact = malloc(B * E * sizeof(float));
        for (size_t b = 0; b < B; ++b)
            memcpy(compact + b * E, (const char *)step.bag_embeddings.data + b * step.bag_embeddings.stride_bytes,
                   E * sizeof(float));
        size_t shape[2] = {B, E};
        write_array(name, shape, 2, compact);
        free(compact);
        fprintf(manifest, "], \"bag_embeddings\": \"%s\"},\n", name);
        snprintf(name, sizeof name, "s%d_grads.safetensors", s);
        write_gradients(trainer, step.grad_norm, name);
        fprintf(manifest, "   \"gradients\": \"%s\",\n", name);
        snprintf(name, sizeof name, "s%d_after.safetensors", s);
        save(trainer, name);
        fprintf(manifest, "   \"after\": \"%s\"}", name);
        printf("step %llu: loss %.6f (contrastive %.6f, choice %.6f), lr %.3g, grad norm %.5f\n",
               (unsigned long long)step.step, step.loss, step.contrastive, step.choice, step.learning_rate,
               step.grad_norm);
    }
    fprintf(manifest, "\n ]}\n");
    fclose(manifest);
    uform_model_free(model);
    uform_arena_free(arena);
    uform_trainer_free(trainer);
    uform_executor_free(executor);
    free(batch.data);
    return 0;
}
