/*
 * Encode throughput of the `small` shape (random weights) side by side with the PyTorch peer
 * (bench/encode_torch.py, same checkpoint, torch.inference_mode, F32 and BF16 autocast) in the
 * same run, reported as ratios; plus the fraction of the measured BF16 GEMM peak the encode
 * reaches (MFU), the load time and the peak RSS. Prints a table and writes JSON.
 *
 *   bench_encode [--checkpoint small.safetensors] [--json bench/results/encode.json] [--quick] [--no-torch]
 *                [--only text|text64|text256|image|audio|video]
 *
 * Inputs: texts of 64 and 256 bytes; 224×224 RGB8 pixels (the resize then keeps the size); 10 s of
 * 16 kHz samples (no resampling; the log-mel is included); 8 decoded frames per video item. The
 * PyTorch peer is handed preprocessed tensors, so the engine's numbers include a little more work.
 * Both sides report the best of three timed repeats. Run with OMP_WAIT_POLICY=PASSIVE for the peer
 * (set here for the child process).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "exec/call.h"
#include "kernels/gemm.h"
#include "model/encode.h"
#include "model/layout.h"
#include "uform/uform.h"
#include "bench_peak.h"

static double now_seconds(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + (double)time.tv_nsec * 1e-9;
}

static uint64_t state = 7;
static uint8_t next_byte(void) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint8_t)(state >> 56);
}

typedef struct case_t {
    const char *modality; /* text, image, audio, video */
    size_t text_bytes, batch, threads;
} case_t;

typedef struct frames_request_t {
    uform__encode_job_t job;
    uform_outcome_t outcome;
} frames_request_t;

static uform_status_t frames_run(void *pointer, uform__call_context_t *context) {
    return uform__encode_run(&((frames_request_t *)pointer)->job, context);
}

/* One encode of `batch` items; answers the FLOPs it counted, or a negative value on failure. */
static double encode_once(uform_model_t model, uform_executor_t executor, uform_arena_t arena, const case_t *c,
                          const unsigned char *data, const size_t *offsets, const size_t *sizes) {
    uform_encode_stats_t stats = {0};
    uform_encode_config_t config = {UFORM_SCALAR_F32, {0}, &stats, 0};
    uform_tape_t tape = {data, offsets, c->batch};
    uform_status_t status;
    uform_outcome_t *outcome;
    uform_text_encode_t text = {model, executor, UFORM_COMPLETION_BLOCKING, tape, UFORM_OUTPUTS_EMBEDDINGS, arena, config};
    uform_image_encode_pixels_t image = {model, executor, UFORM_COMPLETION_BLOCKING, tape, sizes, sizes,
                                         UFORM_OUTPUTS_EMBEDDINGS, arena, config};
    uform_audio_encode_samples_t audio = {model, executor, UFORM_COMPLETION_BLOCKING, tape, 16000,
                                          UFORM_OUTPUTS_EMBEDDINGS, arena, config};
    if (strcmp(c->modality, "text") == 0) status = uform_text_encode(&text), outcome = &text.outcome;
    else if (strcmp(c->modality, "image") == 0) status = uform_image_encode_pixels(&image), outcome = &image.outcome;
    else if (strcmp(c->modality, "audio") == 0) status = uform_audio_encode_samples(&audio), outcome = &audio.outcome;
    else {
        static frames_request_t request;
        static uform_encoded_t encoded;
        memset(&request, 0, sizeof request);
        request.job.model = model, request.job.modality = UFORM_MODALITY_VIDEO;
        request.job.source = UFORM__SOURCE_VIDEO_FRAMES, request.job.inputs = &tape;
        request.job.heights = sizes, request.job.widths = sizes, request.job.outputs = UFORM_OUTPUTS_EMBEDDINGS;
        request.job.config = &config, request.job.encoded = &encoded, request.job.inputs_name = "frames";
        uform__call_t call = {frames_run, &request, &request.outcome, UFORM_COMPLETION_BLOCKING, arena, NULL, "bench"};
        status = uform__executor_call(executor, &call);
        outcome = &request.outcome;
    }
    if (status != UFORM_OK) {
        char line[600];
        uform_outcome_format(outcome, line, sizeof line);
        fprintf(stderr, "bench_encode: %s\n", line);
        return -1;
    }
    return stats.flops;
}

/* Runs the PyTorch peer and answers its items per second (0 when it cannot run). */
static double torch_rate(const char *checkpoint, const case_t *c, int bf16) {
    char command[1024];
    snprintf(command, sizeof command,
             "OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/encode_torch.py %s %s %zu %zu%s --text-bytes %zu 2>/dev/null",
             checkpoint, c->modality, c->batch, c->threads, bf16 ? " --bf16" : "", c->text_bytes ? c->text_bytes : 256);
    FILE *pipe = popen(command, "r");
    if (!pipe) return 0;
    char line[4096] = {0};
    double rate = 0;
    while (fgets(line, sizeof line, pipe)) {
        const char *key = strstr(line, "\"items_per_second\":");
        if (key) rate = atof(key + strlen("\"items_per_second\":"));
    }
    pclose(pipe);
    return rate;
}

int main(int argc, char **argv) {
    const char *checkpoint = "build/bench/small.safetensors", *json_path = "bench/results/encode.json";
    int quick = 0, with_torch = 1;
    const char *only = NULL;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--checkpoint") == 0 && i + 1 < argc) checkpoint = argv[++i];
        else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) json_path = argv[++i];
        else if (strcmp(argv[i], "--quick") == 0) quick = 1;
        else if (strcmp(argv[i], "--no-torch") == 0) with_torch = 0;
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
    }
    if (access(checkpoint, R_OK) != 0) {
        uform__model_config_t config;
        uform__model_config_named("small", &config, NULL, "bench");
        uform_outcome_t outcome = {0};
        if (uform__model_write_random(checkpoint, &config, 11, &outcome, "bench") != UFORM_OK) {
            fprintf(stderr, "bench_encode: cannot write %s: %s\n", checkpoint, outcome.message);
            return 1;
        }
    }
    case_t cases[32];
    size_t count = 0;
    size_t batches[2] = {1, 32}, threads_list[2] = {1, 2};
    for (int t = 0; t < 2; ++t)
        for (int b = 0; b < 2; ++b) {
            if (quick && (b == 0 || t == 0)) continue;
            cases[count++] = (case_t){"text", 64, batches[b], threads_list[t]};
            cases[count++] = (case_t){"text", 256, batches[b], threads_list[t]};
            cases[count++] = (case_t){"image", 0, batches[b], threads_list[t]};
            cases[count++] = (case_t){"audio", 0, batches[b] == 32 ? 8 : 1, threads_list[t]};
            cases[count++] = (case_t){"video", 0, batches[b] == 32 ? 8 : 1, threads_list[t]};
        }
    FILE *json = fopen(json_path, "w");
    if (json) fprintf(json, "{\"cpu_class\": \"%s\", \"cases\": [", uform_cpu_class_name(uform_cpu_class_detect()));
    printf("%-6s %5s %6s %7s | %10s %10s %10s | %7s %7s | %6s\n", "input", "batch", "thr", "bytes", "uform it/s",
           "torch f32", "torch bf16", "vs f32", "vs bf16", "MFU");
    uform_executor_t executors[3] = {NULL};
    for (size_t t = 1; t <= 2; ++t) uform_executor_for_ram(NULL, t, 0, &executors[t], NULL);
    double peak[3] = {0};
    for (size_t t = 1; t <= 2; ++t) peak[t] = bench_gemm_peak(executors[t], uform_executor_cpu_class(executors[t]));
    double load_seconds = 0;
    for (size_t i = 0; i < count; ++i) {
        const case_t *c = &cases[i];
        char label[32];
        snprintf(label, sizeof label, "%s%zu", c->modality, c->text_bytes);
        if (only && strcmp(only, c->modality) != 0 && strcmp(only, label) != 0) continue;
        uform_executor_t executor = executors[c->threads];
        uform_ram_options_t options = {0};
        options.compute = UFORM_COMPUTE_BF16; /* the engine's fast mode; F32 compute is the parity mode */
        uform_model_t model = NULL;
        uform_outcome_t outcome = {0};
        double load_start = now_seconds();
        if (uform_model_load_ram(executor, checkpoint, &options, &model, &outcome) != UFORM_OK) {
            fprintf(stderr, "bench_encode: load: %s\n", outcome.message);
            return 1;
        }
        double loaded = now_seconds() - load_start;
        if (load_seconds == 0 || loaded < load_seconds) load_seconds = loaded;
        uform_model_describe_t describe = {model};
        uform_model_describe(&describe);
        size_t item_bytes = 0, side = describe.description.image_size;
        size_t frames = describe.description.video_frames;
        if (strcmp(c->modality, "text") == 0) item_bytes = c->text_bytes;
        else if (strcmp(c->modality, "image") == 0) item_bytes = side * side * 3;
        else if (strcmp(c->modality, "audio") == 0) item_bytes = 16000 * describe.description.audio_seconds * sizeof(float);
        else item_bytes = frames * side * side * 3;
        unsigned char *data = malloc(item_bytes * c->batch);
        size_t *offsets = malloc((c->batch + 1) * sizeof *offsets), *sizes = malloc(c->batch * sizeof *sizes);
        for (size_t b = 0; b <= c->batch; ++b) offsets[b] = b * item_bytes;
        for (size_t b = 0; b < c->batch; ++b) sizes[b] = side;
        if (strcmp(c->modality, "audio") == 0) {
            float *samples = (float *)data;
            for (size_t s = 0; s < item_bytes * c->batch / 4; ++s) samples[s] = (float)(next_byte() - 128) / 256.0f;
        } else {
            for (size_t s = 0; s < item_bytes * c->batch; ++s) data[s] = strcmp(c->modality, "text") == 0 ? (uint8_t)(32 + next_byte() % 90) : next_byte();
        }
        uform_arena_t arena = NULL;
        uform_arena_for_executor(executor, &arena, NULL);
        double flops = encode_once(model, executor, arena, c, data, offsets, sizes); /* warm-up */
        /* The best of three timed repeats, as the PyTorch peer reports (each at least 1 s, 3 s
         * without --quick, and two calls). */
        double rate = 0, flops_per_call = flops;
        for (int repeat = 0; repeat < 3 && flops >= 0; ++repeat) {
            double start = now_seconds(), elapsed = 0;
            size_t runs = 0;
            while (flops >= 0 && (runs < 2 || elapsed < (quick ? 1.0 : 3.0))) {
                flops = encode_once(model, executor, arena, c, data, offsets, sizes);
                runs += 1;
                elapsed = now_seconds() - start;
            }
            double repeat_rate = (double)(runs * c->batch) / elapsed;
            if (repeat_rate > rate) rate = repeat_rate, flops_per_call = flops;
        }
        double mfu = flops_per_call > 0 ? flops_per_call * rate / (double)c->batch / peak[c->threads] : 0;
        double torch_f32 = with_torch ? torch_rate(checkpoint, c, 0) : 0, torch_bf16 = with_torch ? torch_rate(checkpoint, c, 1) : 0;
        double best_torch = torch_f32 > torch_bf16 ? torch_f32 : torch_bf16;
        printf("%-6s %5zu %6zu %7zu | %10.1f %10.1f %10.1f | %6.2fx %6.2fx | %5.1f%%\n", c->modality, c->batch, c->threads,
               c->text_bytes, rate, torch_f32, torch_bf16, torch_f32 > 0 ? rate / torch_f32 : 0,
               torch_bf16 > 0 ? rate / torch_bf16 : 0, mfu * 100);
        fflush(stdout);
        if (json)
            fprintf(json,
                    "%s\n  {\"modality\": \"%s\", \"text_bytes\": %zu, \"batch\": %zu, \"threads\": %zu, \"uform_items_per_second\": %.3f, "
                    "\"torch_f32_items_per_second\": %.3f, \"torch_bf16_items_per_second\": %.3f, \"ratio_vs_best_torch\": %.3f, \"mfu\": %.4f}",
                    i ? "," : "", c->modality, c->text_bytes, c->batch, c->threads, rate, torch_f32, torch_bf16,
                    best_torch > 0 ? rate / best_torch : 0, mfu);
        uform_arena_free(arena);
        uform_model_free(model);
        free(data), free(offsets), free(sizes);
    }
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    printf("\nBF16 GEMM peak measured now: %.0f GFLOP/s (1 thread), %.0f GFLOP/s (2 threads)\n", peak[1] * 1e-9, peak[2] * 1e-9);
    printf("load of %s: %.1f ms (best); peak RSS %.1f MiB\n", checkpoint, load_seconds * 1e3, (double)usage.ru_maxrss / 1024.0);
    if (json) {
        fprintf(json, "\n], \"peak_gflops\": [%.1f, %.1f], \"load_ms\": %.2f, \"peak_rss_mib\": %.1f}\n", peak[1] * 1e-9,
                peak[2] * 1e-9, load_seconds * 1e3, (double)usage.ru_maxrss / 1024.0);
        fclose(json);
    }
    for (size_t t = 1; t <= 2; ++t) uform_executor_free(executors[t]);
    return 0;
}
