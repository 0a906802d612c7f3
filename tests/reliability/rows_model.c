/* Sweep rows for the model: load, describe, the checkpoint writer and quantizer, every encode verb
 * on every media kind, and text_choose. Encodes share the fixture's model and arena, so a failure
 * that damaged either shows up as a different digest on the next run. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "model/config.h"
#include "model/layout.h"
#include "rows.h"
#include "failing_alloc.h"

static const uform_outputs_t all_outputs = UFORM_OUTPUTS_EMBEDDINGS | UFORM_OUTPUTS_TOKEN_VECTORS | UFORM_OUTPUTS_STATES;

static uint64_t digest_encoded(const uform_encoded_t *encoded) {
    uint64_t digest = sweep_digest_matrix(0, &encoded->embeddings);
    digest = sweep_digest_rows(digest, &encoded->token_vectors);
    return sweep_digest_rows(digest, &encoded->states);
}

/* Loads `path` on no executor; the digest is the parameter count the description gives. */
static void load_and_describe(const char *path, sweep_answer_t *answer) {
    uform_model_t model = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_model_load_ram(NULL, path, NULL, &model, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) {
        uform_model_describe_t describe = {model};
        uform_model_describe(&describe);
        answer->digest = sweep_digest(0, &describe.description.parameters, sizeof describe.description.parameters);
    }
    uform_model_free(model);
}

void sweep_run_model_load(sweep_fixture_t *fixture, sweep_answer_t *answer) { load_and_describe(fixture->checkpoint, answer); }

/* The load on an executor, BF16 compute: packing runs on the executor's threads. */
void sweep_run_model_load_on_executor(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform_ram_options_t options = {NULL, 0, UFORM_CPU_CLASS_UNKNOWN, UFORM_COMPUTE_BF16};
    uform_model_t model = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_model_load_ram(sweep_executor(fixture), fixture->checkpoint, &options, &model, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) {
        uform_model_describe_t describe = {model};
        uform_model_describe(&describe);
        answer->digest = sweep_digest(0, &describe.description, sizeof describe.description.weight_bytes);
    }
    uform_model_free(model);
}

void sweep_run_model_describe(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform_model_describe_t request = {fixture->model};
    uform_status_t status = uform_model_describe(&request);
    sweep_answer_status(answer, status, &request.outcome);
    if (status == UFORM_OK) answer->digest = sweep_digest(0, request.description.size, sizeof request.description.size);
}

/* The checkpoint writer (config printed with cJSON, tensors through the safetensors writer), as
 * the trainer's save will use it; then the written file must load (a config printed with holes
 * would not). */
void sweep_run_model_write(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    char path[300];
    snprintf(path, sizeof path, "%s/written.safetensors", fixture->scratch);
    unlink(path);
    uform__model_config_t config;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform__model_config_named("tiny", &config, &outcome, "model_write");
    /* Smaller than tiny, so thousands of runs stay cheap: drawing the weights dominates. */
    config.hidden = 32, config.depth = 1, config.heads = 2, config.mlp = 64, config.embedding = 16;
    config.matryoshka[0] = 4, config.matryoshka[1] = 8, config.matryoshka[2] = 16;
    config.text_bytes = 16;
    if (status == UFORM_OK) status = uform__model_write_random(path, &config, 7, &outcome, "model_write");
    sweep_answer_status(answer, status, &outcome);
    if (status != UFORM_OK) return;
    /* What was written must be a whole checkpoint: load it (may itself run out of memory). */
    uform_model_t model = NULL;
    status = uform_model_load_ram(NULL, path, NULL, &model, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) {
        uform_model_describe_t describe = {model};
        uform_model_describe(&describe);
        answer->digest = sweep_digest(0, &describe.description.parameters, sizeof describe.description.parameters);
    }
    uform_model_free(model);
}

/* The quantized checkpoint's writer (uform_model_quantize: the trunk's matrices to I8 and their
 * scales, the rest copied); then the written file must load with I8 compute. */
void sweep_run_model_quantize(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    char path[300];
    snprintf(path, sizeof path, "%s/quantized.safetensors", fixture->scratch);
    unlink(path);
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_model_quantize(fixture->checkpoint, path, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status != UFORM_OK) return;
    uform_ram_options_t options = {NULL, 0, UFORM_CPU_CLASS_UNKNOWN, UFORM_COMPUTE_I8};
    uform_model_t model = NULL;
    status = uform_model_load_ram(NULL, path, &options, &model, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) {
        uform_model_describe_t describe = {model};
        uform_model_describe(&describe);
        answer->digest = sweep_digest(0, &describe.description.weight_bytes, sizeof describe.description.weight_bytes);
    }
    uform_model_free(model);
}

/* Three texts, one of them empty, every output. */
static void text_encode(sweep_fixture_t *fixture, uform_executor_t executor, uform_completion_t completion,
                        sweep_answer_t *answer) {
    static const char texts[] = "a photo of a catUForm";
    size_t offsets[4] = {0, 16, 16, 21};
    uform_text_encode_t request;
    memset(&request, 0, sizeof request);
    request.model = fixture->model, request.executor = executor, request.completion = completion;
    request.texts = (uform_tape_t){texts, offsets, 3};
    request.outputs = all_outputs;
    request.arena = fixture->arena;
    uform_status_t status = uform_text_encode(&request);
    if (status == UFORM_DEFERRED) status = uform_outcome_wait(&request.outcome);
    sweep_answer_status(answer, status, &request.outcome);
    if (status == UFORM_OK) answer->digest = digest_encoded(&request.encoded);
}

void sweep_run_text_encode(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    text_encode(fixture, NULL, UFORM_COMPLETION_BLOCKING, answer);
}

void sweep_run_text_encode_on_executor(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    text_encode(fixture, sweep_executor(fixture), UFORM_COMPLETION_BLOCKING, answer);
}

void sweep_run_text_encode_deferred(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    text_encode(fixture, sweep_executor(fixture), UFORM_COMPLETION_DEFERRED, answer);
}

/* A text encode into an arena of its own: the arena's first growth happens inside the call. */
void sweep_run_text_encode_fresh_arena(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform_arena_t arena = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_arena_for_host(&arena, &outcome);
    if (status != UFORM_OK) {
        sweep_answer_status(answer, status, &outcome);
        return;
    }
    uform_arena_t shared = fixture->arena;
    fixture->arena = arena;
    text_encode(fixture, NULL, UFORM_COMPLETION_BLOCKING, answer);
    fixture->arena = shared;
    uform_arena_free(arena);
}

void sweep_run_text_choose(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    static const char texts[] = "the answer is yes or n";
    static const char choices[] = "oaey";
    size_t text_offsets[3] = {0, 14, 22}, choice_offsets[3] = {0, 2, 4};
    uform_text_choose_t request;
    memset(&request, 0, sizeof request);
    request.model = fixture->model;
    request.texts = (uform_tape_t){texts, text_offsets, 2};
    request.choices = (uform_tape_t){choices, choice_offsets, 2};
    request.arena = fixture->arena;
    uform_status_t status = uform_text_choose(&request);
    sweep_answer_status(answer, status, &request.outcome);
    if (status == UFORM_OK) answer->digest = sweep_digest_rows(0, &request.probabilities);
}

/* One image file through uform_image_encode. */
static void image_encode(sweep_fixture_t *fixture, const char *name, sweep_answer_t *answer) {
    const sweep_bytes_t *bytes = sweep_media(fixture, name);
    if (!bytes) {
        sweep_answer_status(answer, UFORM_IO, NULL);
        snprintf(answer->message, sizeof answer->message, "fixture %s/%s is missing", fixture->fixtures, name);
        return;
    }
    size_t offsets[2];
    uform_image_encode_t request;
    memset(&request, 0, sizeof request);
    request.model = fixture->model;
    request.images = sweep_tape(bytes->data, bytes->size, offsets);
    request.outputs = all_outputs;
    request.arena = fixture->arena;
    uform_status_t status = uform_image_encode(&request);
    sweep_answer_status(answer, status, &request.outcome);
    if (status == UFORM_OK) answer->digest = digest_encoded(&request.encoded);
}

void sweep_run_image_jpeg(sweep_fixture_t *fixture, sweep_answer_t *answer) { image_encode(fixture, "baseline.jpg", answer); }
void sweep_run_image_jpeg_progressive(sweep_fixture_t *fixture, sweep_answer_t *answer) { image_encode(fixture, "progressive.jpg", answer); }
void sweep_run_image_jpeg_exif(sweep_fixture_t *fixture, sweep_answer_t *answer) { image_encode(fixture, "exif6.jpg", answer); }
void sweep_run_image_jpeg_cmyk(sweep_fixture_t *fixture, sweep_answer_t *answer) { image_encode(fixture, "cmyk.jpg", answer); }
void sweep_run_image_png(sweep_fixture_t *fixture, sweep_answer_t *answer) { image_encode(fixture, "rgba.png", answer); }
void sweep_run_image_png16(sweep_fixture_t *fixture, sweep_answer_t *answer) { image_encode(fixture, "rgb16.png", answer); }
void sweep_run_image_webp(sweep_fixture_t *fixture, sweep_answer_t *answer) { image_encode(fixture, "lossy.webp", answer); }
void sweep_run_image_webp_alpha(sweep_fixture_t *fixture, sweep_answer_t *answer) { image_encode(fixture, "lossless_alpha.webp", answer); }
void sweep_run_image_gif(sweep_fixture_t *fixture, sweep_answer_t *answer) { image_encode(fixture, "quadrants.gif", answer); }
void sweep_run_image_bmp(sweep_fixture_t *fixture, sweep_answer_t *answer) { image_encode(fixture, "quadrants.bmp", answer); }

/* A 20 × 12 gradient as RGB8 pixels, on the executor (resizing runs on its threads). */
void sweep_run_image_pixels(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    static unsigned char pixels[12][20][3];
    for (int y = 0; y < 12; ++y)
        for (int x = 0; x < 20; ++x) pixels[y][x][0] = (unsigned char)(x * 12), pixels[y][x][1] = (unsigned char)(y * 20), pixels[y][x][2] = 77;
    size_t offsets[2], heights[1] = {12}, widths[1] = {20};
    uform_image_encode_pixels_t request;
    memset(&request, 0, sizeof request);
    request.model = fixture->model;
    request.executor = sweep_executor(fixture);
    request.pixels = sweep_tape(pixels, sizeof pixels, offsets);
    request.heights = heights, request.widths = widths;
    request.outputs = UFORM_OUTPUTS_EMBEDDINGS;
    request.arena = fixture->arena;
    uform_status_t status = uform_image_encode_pixels(&request);
    sweep_answer_status(answer, status, &request.outcome);
    if (status == UFORM_OK) answer->digest = digest_encoded(&request.encoded);
}

static void video_encode(sweep_fixture_t *fixture, const char *name, sweep_answer_t *answer) {
    const sweep_bytes_t *bytes = sweep_media(fixture, name);
    if (!bytes) {
        sweep_answer_status(answer, UFORM_IO, NULL);
        snprintf(answer->message, sizeof answer->message, "fixture %s/%s is missing", fixture->fixtures, name);
        return;
    }
    size_t offsets[2];
    uform_video_encode_t request;
    memset(&request, 0, sizeof request);
    request.model = fixture->model;
    request.videos = sweep_tape(bytes->data, bytes->size, offsets);
    request.outputs = UFORM_OUTPUTS_EMBEDDINGS;
    request.arena = fixture->arena;
    uform_status_t status = uform_video_encode(&request);
    sweep_answer_status(answer, status, &request.outcome);
    if (status == UFORM_OK) answer->digest = digest_encoded(&request.encoded);
}

void sweep_run_video_mp4(sweep_fixture_t *fixture, sweep_answer_t *answer) { video_encode(fixture, "counter.mp4", answer); }
void sweep_run_video_webm(sweep_fixture_t *fixture, sweep_answer_t *answer) { video_encode(fixture, "counter.webm", answer); }
void sweep_run_video_rotated(sweep_fixture_t *fixture, sweep_answer_t *answer) { video_encode(fixture, "rotated90.mp4", answer); }
void sweep_run_video_live_webm(sweep_fixture_t *fixture, sweep_answer_t *answer) { video_encode(fixture, "live.webm", answer); }

static void audio_encode(sweep_fixture_t *fixture, const char *name, sweep_answer_t *answer) {
    const sweep_bytes_t *bytes = sweep_media(fixture, name);
    if (!bytes) {
        sweep_answer_status(answer, UFORM_IO, NULL);
        snprintf(answer->message, sizeof answer->message, "fixture %s/%s is missing", fixture->fixtures, name);
        return;
    }
    size_t offsets[2];
    uform_audio_encode_t request;
    memset(&request, 0, sizeof request);
    request.model = fixture->model;
    request.recordings = sweep_tape(bytes->data, bytes->size, offsets);
    request.outputs = UFORM_OUTPUTS_EMBEDDINGS;
    request.arena = fixture->arena;
    uform_status_t status = uform_audio_encode(&request);
    sweep_answer_status(answer, status, &request.outcome);
    if (status == UFORM_OK) answer->digest = digest_encoded(&request.encoded);
}

void sweep_run_audio_wav(sweep_fixture_t *fixture, sweep_answer_t *answer) { audio_encode(fixture, "pcm16.wav", answer); }
void sweep_run_audio_flac(sweep_fixture_t *fixture, sweep_answer_t *answer) { audio_encode(fixture, "stereo.flac", answer); }
void sweep_run_audio_mp3(sweep_fixture_t *fixture, sweep_answer_t *answer) { audio_encode(fixture, "stereo.mp3", answer); }
void sweep_run_audio_ogg(sweep_fixture_t *fixture, sweep_answer_t *answer) { audio_encode(fixture, "stereo.ogg", answer); }
void sweep_run_audio_m4a(sweep_fixture_t *fixture, sweep_answer_t *answer) { audio_encode(fixture, "stereo.m4a", answer); }

void sweep_run_audio_samples(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    static float samples[8000];
    for (int i = 0; i < 8000; ++i) samples[i] = (float)((i % 40) - 20) / 40.0f; /* a 200 Hz saw at 8 kHz */
    size_t offsets[2];
    uform_audio_encode_samples_t request;
    memset(&request, 0, sizeof request);
    request.model = fixture->model;
    request.samples = sweep_tape(samples, sizeof samples, offsets);
    request.sample_rate = 8000;
    request.outputs = UFORM_OUTPUTS_EMBEDDINGS;
    request.arena = fixture->arena;
    uform_status_t status = uform_audio_encode_samples(&request);
    sweep_answer_status(answer, status, &request.outcome);
    if (status == UFORM_OK) answer->digest = digest_encoded(&request.encoded);
}

#if UFORM_WITH_FFMPEG
#include "media/av_api.h"

/* Loading FFmpeg itself (≈2,200 allocations: dlopen of the libraries and everything they bring,
 * their constructors, the symbol table), in a process that has not loaded it yet (SWEEP_COLD). */
void sweep_run_ffmpeg_load(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    const uform__av_t *av = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform__av_require(&av, "video", "ffmpeg_load", &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) answer->digest = av && av->avcodec_find_decoder(AV_CODEC_ID_H264) ? 1 : 2;
}
#endif

/* A fresh model's fingerprint (the first call hashes the whole checkpoint; the model keeps it). The
 * model is model_write's small one, written once by the row's first (unarmed) run: the load's own
 * allocations are model_load's row, and fewer tensors keep this row cheap. */
void sweep_run_model_fingerprint(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    static char path[300];
    uform_outcome_t outcome = {0};
    if (!path[0]) {
        snprintf(path, sizeof path, "%s/fingerprinted.safetensors", fixture->scratch);
        uform__model_config_t config;
        uform_status_t status = uform__model_config_named("tiny", &config, &outcome, "model_fingerprint");
        config.hidden = 32, config.depth = 1, config.heads = 2, config.mlp = 64, config.embedding = 16;
        config.matryoshka[0] = 4, config.matryoshka[1] = 8, config.matryoshka[2] = 16;
        config.text_bytes = 16;
        if (status == UFORM_OK) status = uform__model_write_random(path, &config, 5, &outcome, "model_fingerprint");
        if (status != UFORM_OK) {
            path[0] = 0;
            sweep_answer_status(answer, status, &outcome);
            return;
        }
    }
    uform_model_t model = NULL;
    uform_status_t status = uform_model_load_ram(NULL, path, NULL, &model, &outcome);
    char fingerprint[UFORM_FINGERPRINT_CAPACITY];
    if (status == UFORM_OK) status = uform_model_fingerprint(model, fingerprint, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) answer->digest = sweep_digest(0, fingerprint, sizeof fingerprint);
    uform_model_free(model);
}

/* uform_text_tokenize on the native checkpoint: [CLS] and the bytes, nothing allocated. */
void sweep_run_text_tokenize(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uint32_t ids[64];
    size_t count = 0;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_text_tokenize(fixture->model, "a photo", 7, ids, 64, &count, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) answer->digest = sweep_digest(0, ids, count * sizeof ids[0]);
}

/* uform_model_tokens: the native checkpoint's text and image counts (nothing allocated), then a
 * published folder's text count, which runs its tokenizer; the folder's load runs held, as in
 * published_text (published_load sweeps it). */
void sweep_run_model_tokens(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    size_t counts[3] = {0, 0, 0};
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_model_tokens(fixture->model, UFORM_MODALITY_TEXT, "a photo", 7, &counts[0], &outcome);
    if (status == UFORM_OK) status = uform_model_tokens(fixture->model, UFORM_MODALITY_IMAGE, NULL, 0, &counts[1], &outcome);
    uform_model_t model = NULL;
    if (status == UFORM_OK && fixture->published) {
        failing_alloc_hold(1);
        status = uform_model_load_ram(NULL, fixture->published, NULL, &model, &outcome);
        failing_alloc_hold(0);
        if (status == UFORM_OK)
            status = uform_model_tokens(model, UFORM_MODALITY_TEXT, "a photo of a catnaïve café", 28, &counts[2], &outcome);
    }
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) answer->digest = sweep_digest(0, counts, sizeof counts);
    uform_model_free(model);
}

/* uform_embedding_truncate: a prefix of a unit row renormalised, in place; nothing allocated. */
void sweep_run_embedding_truncate(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    (void)fixture;
    float row[8] = {0.5f, -0.5f, 0.5f, -0.5f, 0, 0, 0, 0};
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_embedding_truncate(row, 8, 3, row, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) answer->digest = sweep_digest(0, row, 3 * sizeof row[0]);
}

/* A published folder's load: config.json, modules.json, the pooling config, tokenizer.json and the
 * weights (docs/checkpoints.md). */
void sweep_run_published_load(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    if (!fixture->published) { /* no folder given: nothing to try */
        sweep_answer_status(answer, UFORM_OK, NULL);
        return;
    }
    load_and_describe(fixture->published, answer);
}

/* The folder's text tower: tokenize, then encode two texts (the ids, then every output). A fresh
 * model each run, so the first encode's packing of the weights (src/model/lazy.c) is swept too; its
 * load runs held (uncounted and never failed), since published_load sweeps every allocation of it. */
void sweep_run_published_text(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    if (!fixture->published) {
        sweep_answer_status(answer, UFORM_OK, NULL);
        return;
    }
    uform_model_t model = NULL;
    uform_outcome_t outcome = {0};
    failing_alloc_hold(1);
    uform_status_t status = uform_model_load_ram(NULL, fixture->published, NULL, &model, &outcome);
    failing_alloc_hold(0);
    sweep_answer_status(answer, status, &outcome);
    if (status != UFORM_OK) return;
    static const char texts[] = "a photo of a catnaïve café";
    uint32_t ids[64];
    size_t count = 0;
    status = uform_text_tokenize(model, texts, 16, ids, 64, &count, &outcome);
    sweep_answer_status(answer, status, &outcome);
    uint64_t digest = status == UFORM_OK ? sweep_digest(0, ids, count * sizeof ids[0]) : 0;
    if (status == UFORM_OK) {
        size_t offsets[3] = {0, 16, sizeof texts - 1};
        uform_text_encode_t request;
        memset(&request, 0, sizeof request);
        request.model = model, request.texts = (uform_tape_t){texts, offsets, 2};
        request.outputs = all_outputs, request.arena = fixture->arena;
        status = uform_text_encode(&request);
        sweep_answer_status(answer, status, &request.outcome);
        if (status == UFORM_OK) answer->digest = digest_encoded(&request.encoded) ^ digest;
    }
    uform_model_free(model);
}
