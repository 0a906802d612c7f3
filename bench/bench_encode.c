/*
 * Encode throughput of the `small` shape (random weights) side by side with the PyTorch peer
 * (bench/encode_torch.py, same checkpoint, torch.inference_mode, F32 and BF16 autocast) in the
 * same run, reported as ratios; plus the fraction of the GEMM peak of the compute's products,
 * measured in the same run (bench_peak.h), that the encode reaches (MFU), the load time and the
 * peak RSS. Prints a table and writes JSON.
 *
 *   bench_encode [--checkpoint small.safetensors] [--json bench/results/encode.json] [--quick] [--no-torch]
 *                [--only text|text64|text256|image|audio|video] [--int8]
 *
 * --int8: the engine's I8 compute against its own F32 and BF16 computes (the best of the two is
 * "the best float mode") and against PyTorch's dynamic quantization of the same model
 * (encode_torch.py --qdynamic), with each side's cosine to its own F32 embeddings on the same
 * inputs (mean and worst over the batch); MFU against the INT8 product's peak.
 *
 * Inputs: texts of 64 and 256 bytes; 224×224 RGB8 pixels (the resize then keeps the size); 10 s of
 * 16 kHz samples (no resampling; the log-mel is included); 8 decoded frames per video item. The
 * PyTorch peer is handed preprocessed tensors, so the engine's numbers include a little more work.
 * The engine's computes take turns, round by round (engine_rates), and each reports its best round;
 * with --int8 also "i8/med": the median over rounds of I8 over the best float mode in the same
 * round, which a noisy host moves less than a ratio of bests. The PyTorch peer reports the best of
 * three timed repeats. Run with OMP_WAIT_POLICY=PASSIVE for the peer (set here for the child process).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"
#include "exec/call.h"
#include "kernels/gemm.h"
#include "model/encode.h"
#include "model/layout.h"
#include "uform/uform.h"
#include "bench_peak.h"

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

/* One encode of `batch` items; answers the FLOPs it counted, or a negative value on failure. With
 * `embeddings` (not NULL) the embeddings [batch, width] are copied there. */
static double encode_once(uform_model_t model, uform_executor_t executor, uform_arena_t arena, const case_t *c,
                          const unsigned char *data, const size_t *offsets, const size_t *sizes, float *embeddings,
                          size_t width) {
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
    static uform_encoded_t encoded;
    const uform_matrix_t *view = &encoded.embeddings;
    if (strcmp(c->modality, "text") == 0) status = uform_text_encode(&text), outcome = &text.outcome, view = &text.encoded.embeddings;
    else if (strcmp(c->modality, "image") == 0)
        status = uform_image_encode_pixels(&image), outcome = &image.outcome, view = &image.encoded.embeddings;
    else if (strcmp(c->modality, "audio") == 0)
        status = uform_audio_encode_samples(&audio), outcome = &audio.outcome, view = &audio.encoded.embeddings;
    else {
        static frames_request_t request;
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
    for (size_t i = 0; embeddings && i < c->batch; ++i) {
        const void *row = NULL;
        if (uform_matrix_row(view, i, &row) != UFORM_OK) return -1;
        memcpy(embeddings + i * width, row, width * sizeof(float));
    }
    return stats.flops;
}

/* Cosine of each row pair of a and b [rows, width] (unit rows): mean and worst. */
static void cosines(const float *a, const float *b, size_t rows, size_t width, double *mean, double *worst) {
    *mean = 0, *worst = 1;
    for (size_t i = 0; i < rows; ++i) {
        double dot = 0;
        for (size_t j = 0; j < width; ++j) dot += (double)a[i * width + j] * b[i * width + j];
        *mean += dot / (double)rows;
        if (dot < *worst) *worst = dot;
    }
}

/* Runs the PyTorch peer in `mode` ("", " --bf16" or " --qdynamic") and answers its items per
 * second (0 when it cannot run); for --qdynamic also its embeddings' cosine to its F32 ones. */
static double torch_rate(const char *checkpoint, const case_t *c, const char *mode, double *cosine_mean,
                         double *cosine_worst) {
    char command[1024];
    snprintf(command, sizeof command,
             "OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/encode_torch.py %s %s %zu %zu%s --text-bytes %zu 2>/dev/null",
             checkpoint, c->modality, c->batch, c->threads, mode, c->text_bytes ? c->text_bytes : 256);
    FILE *pipe = popen(command, "r");
    if (!pipe) return 0;
    char line[4096] = {0};
    double rate = 0;
    while (fgets(line, sizeof line, pipe)) {
        const char *key = strstr(line, "\"items_per_second\":");
        if (key) rate = atof(key + strlen("\"items_per_second\":"));
        const char *mean = strstr(line, "\"mean\":"), *worst = strstr(line, "\"min\":");
        if (mean && cosine_mean) *cosine_mean = atof(mean + strlen("\"mean\":"));
        if (worst && cosine_worst) *cosine_worst = atof(worst + strlen("\"min\":"));
    }
    pclose(pipe);
    return rate;
}

/* The engine's rates on one case with the computes first..last, their repeats interleaved (round r
 * times every compute once before round r + 1), so that a slow spell of a shared host falls on
 * all of them rather than on one: each compute's best round into rates[m] (rounds of at least
 * 1 s, 2 s without --quick, and two calls; 3 rounds, 5 without --quick), and into *median_ratio
 * the median over rounds of the last compute's rate over the best of the others in that same
 * round (0 with one compute). Its embeddings (from the warm-up call) into embeddings[m], the FLOPs
 * of one call into flops[m]; a rate of 0 on failure. */
static void engine_rates(const char *checkpoint, uform_executor_t executor, int first, int last, const case_t *c,
                         int quick, const unsigned char *data, const size_t *offsets, const size_t *sizes,
                         float *embeddings[3], size_t width, double rates[3], double flops[3], double load_seconds[3],
                         double *median_ratio) {
    uform_model_t models[3] = {NULL};
    uform_arena_t arena = NULL;
    uform_arena_for_executor(executor, &arena, NULL);
    for (int m = first; m <= last; ++m) {
        uform_ram_options_t options = {0};
        options.compute = (uform_compute_t)m;
        uform_outcome_t outcome = {0};
        double load_start = bench_seconds();
        if (uform_model_load_ram(executor, checkpoint, &options, &models[m], &outcome) != UFORM_OK) {
            fprintf(stderr, "bench_encode: load: %s\n", outcome.message);
            models[m] = NULL;
            continue;
        }
        double loaded = bench_seconds() - load_start;
        if (load_seconds[m] == 0 || loaded < load_seconds[m]) load_seconds[m] = loaded;
        flops[m] = encode_once(models[m], executor, arena, c, data, offsets, sizes, embeddings[m], width); /* warm-up */
        if (flops[m] < 0) uform_model_free(models[m]), models[m] = NULL;
    }
    enum { max_rounds = 5 };
    int rounds = quick ? 3 : max_rounds;
    double round_rates[max_rounds][3] = {{0}}, ratios[max_rounds];
    for (int round = 0; round < rounds; ++round)
        for (int m = first; m <= last; ++m) {
            if (!models[m]) continue;
            double start = bench_seconds(), elapsed = 0, call_flops = 0;
            size_t runs = 0;
            while (call_flops >= 0 && (runs < 2 || elapsed < (quick ? 1.0 : 2.0))) {
                call_flops = encode_once(models[m], executor, arena, c, data, offsets, sizes, NULL, 0);
                runs += 1;
                elapsed = bench_seconds() - start;
            }
            if (call_flops < 0) {
                uform_model_free(models[m]), models[m] = NULL;
                continue;
            }
            round_rates[round][m] = (double)(runs * c->batch) / elapsed;
        }
    int counted = 0;
    for (int m = first; m <= last; ++m) {
        rates[m] = 0;
        for (int round = 0; models[m] && round < rounds; ++round)
            if (round_rates[round][m] > rates[m]) rates[m] = round_rates[round][m];
        uform_model_free(models[m]);
    }
    for (int round = 0; round < rounds && last > first; ++round) {
        double others = 0;
        for (int m = first; m < last; ++m)
            if (round_rates[round][m] > others) others = round_rates[round][m];
        if (others > 0 && round_rates[round][last] > 0) ratios[counted++] = round_rates[round][last] / others;
    }
    for (int i = 1; i < counted; ++i) /* insertion sort of at most 5 */
        for (int j = i; j > 0 && ratios[j - 1] > ratios[j]; --j) {
            double swap = ratios[j];
            ratios[j] = ratios[j - 1], ratios[j - 1] = swap;
        }
    *median_ratio = counted == 0 ? 0 : counted % 2 ? ratios[counted / 2] : (ratios[counted / 2 - 1] + ratios[counted / 2]) / 2;
    uform_arena_free(arena);
}

int main(int argc, char **argv) {
    const char *checkpoint = "build/bench/small.safetensors", *json_path = "bench/results/encode.json";
    int quick = 0, with_torch = 1, int8 = 0;
    const char *only = NULL;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--checkpoint") == 0 && i + 1 < argc) checkpoint = argv[++i];
        else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) json_path = argv[++i];
        else if (strcmp(argv[i], "--quick") == 0) quick = 1;
        else if (strcmp(argv[i], "--no-torch") == 0) with_torch = 0;
        else if (strcmp(argv[i], "--int8") == 0) int8 = 1;
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
    if (int8)
        printf("%-6s %5s %3s %5s | %8s %8s %8s %7s %7s | %8s %8s %8s %7s | %15s %15s | %6s\n", "input", "batch", "thr", "bytes",
               "f32", "bf16", "i8", "i8/best", "i8/med", "torch32", "torch16", "torch q8", "i8/q8", "cos i8 mean/min", "cos q8 mean/min",
               "MFU i8");
    else
        printf("%-6s %5s %6s %7s | %10s %10s %10s | %7s %7s | %6s\n", "input", "batch", "thr", "bytes", "uform it/s",
               "torch f32", "torch bf16", "vs f32", "vs bf16", "MFU");
    uform_executor_t executors[3] = {NULL};
    for (size_t t = 1; t <= 2; ++t) uform_executor_for_ram(NULL, t, 0, &executors[t], NULL);
    /* The GEMM peaks of the computes measured, per thread count: [threads][compute]. */
    double peak[3][3] = {{0}};
    for (size_t t = 1; t <= 2; ++t)
        for (int m = int8 ? 0 : 1; m <= (int8 ? 2 : 1); ++m)
            peak[t][m] = bench_gemm_peak_for(executors[t], uform_executor_cpu_class(executors[t]), (uform_compute_t)m, 0);
    double load_seconds[3] = {0};
    size_t written = 0; /* cases in the JSON so far (--only skips some) */
    for (size_t i = 0; i < count; ++i) {
        const case_t *c = &cases[i];
        char label[32];
        snprintf(label, sizeof label, "%s%zu", c->modality, c->text_bytes);
        if (only && strcmp(only, c->modality) != 0 && strcmp(only, label) != 0) continue;
        uform_executor_t executor = executors[c->threads];
        uform__model_config_t config;
        uform__model_config_named("small", &config, NULL, "bench");
        size_t item_bytes = 0, side = config.image_size, frames = config.video_frames, width = config.embedding;
        if (strcmp(c->modality, "text") == 0) item_bytes = c->text_bytes;
        else if (strcmp(c->modality, "image") == 0) item_bytes = side * side * 3;
        else if (strcmp(c->modality, "audio") == 0) item_bytes = 16000 * config.audio_seconds * sizeof(float);
        else item_bytes = frames * side * side * 3;
        unsigned char *data = malloc(item_bytes * c->batch);
        size_t *offsets = malloc((c->batch + 1) * sizeof *offsets), *sizes = malloc(c->batch * sizeof *sizes);
        float *embeddings[3] = {calloc(c->batch * width, sizeof(float)), calloc(c->batch * width, sizeof(float)),
                                calloc(c->batch * width, sizeof(float))};
        for (size_t b = 0; b <= c->batch; ++b) offsets[b] = b * item_bytes;
        for (size_t b = 0; b < c->batch; ++b) sizes[b] = side;
        if (strcmp(c->modality, "audio") == 0) {
            float *samples = (float *)data;
            for (size_t s = 0; s < item_bytes * c->batch / 4; ++s) samples[s] = (float)(next_byte() - 128) / 256.0f;
        } else {
            for (size_t s = 0; s < item_bytes * c->batch; ++s) data[s] = strcmp(c->modality, "text") == 0 ? (uint8_t)(32 + next_byte() % 90) : next_byte();
        }
        /* The engine: BF16 compute (its fast float mode), and with --int8 F32 and I8 too. */
        double rates[3] = {0}, flops[3] = {0}, i8_median = 0;
        engine_rates(checkpoint, executor, int8 ? 0 : 1, int8 ? 2 : 1, c, quick, data, offsets, sizes, embeddings, width,
                     rates, flops, load_seconds, &i8_median);
        double torch_f32 = with_torch ? torch_rate(checkpoint, c, "", NULL, NULL) : 0;
        double torch_bf16 = with_torch ? torch_rate(checkpoint, c, " --bf16", NULL, NULL) : 0;
        double best_torch = torch_f32 > torch_bf16 ? torch_f32 : torch_bf16;
        if (!int8) {
            double mfu = flops[1] > 0 ? flops[1] * rates[1] / (double)c->batch / peak[c->threads][1] : 0;
            printf("%-6s %5zu %6zu %7zu | %10.1f %10.1f %10.1f | %6.2fx %6.2fx | %5.1f%%\n", c->modality, c->batch, c->threads,
                   c->text_bytes, rates[1], torch_f32, torch_bf16, torch_f32 > 0 ? rates[1] / torch_f32 : 0,
                   torch_bf16 > 0 ? rates[1] / torch_bf16 : 0, mfu * 100);
            if (json)
                fprintf(json,
                        "%s\n  {\"modality\": \"%s\", \"text_bytes\": %zu, \"batch\": %zu, \"threads\": %zu, \"uform_items_per_second\": %.3f, "
                        "\"torch_f32_items_per_second\": %.3f, \"torch_bf16_items_per_second\": %.3f, \"ratio_vs_best_torch\": %.3f, \"mfu\": %.4f}",
                        written++ ? "," : "", c->modality, c->text_bytes, c->batch, c->threads, rates[1], torch_f32, torch_bf16,
                        best_torch > 0 ? rates[1] / best_torch : 0, mfu);
        } else {
            double cos_mean = 0, cos_worst = 0, q8_mean = 0, q8_worst = 0;
            cosines(embeddings[2], embeddings[0], c->batch, width, &cos_mean, &cos_worst);
            double torch_q8 = with_torch ? torch_rate(checkpoint, c, " --qdynamic", &q8_mean, &q8_worst) : 0;
            double best_float = rates[0] > rates[1] ? rates[0] : rates[1];
            double mfu = flops[2] > 0 ? flops[2] * rates[2] / (double)c->batch / peak[c->threads][2] : 0;
            printf("%-6s %5zu %3zu %5zu | %8.2f %8.2f %8.2f %6.2fx %6.2fx | %8.2f %8.2f %8.2f %6.2fx | %7.5f %7.5f %7.5f %7.5f | %5.1f%%\n",
                   c->modality, c->batch, c->threads, c->text_bytes, rates[0], rates[1], rates[2],
                   best_float > 0 ? rates[2] / best_float : 0, i8_median, torch_f32, torch_bf16, torch_q8,
                   torch_q8 > 0 ? rates[2] / torch_q8 : 0, cos_mean, cos_worst, q8_mean, q8_worst, mfu * 100);
            if (json)
                fprintf(json,
                        "%s\n  {\"modality\": \"%s\", \"text_bytes\": %zu, \"batch\": %zu, \"threads\": %zu, "
                        "\"uform_f32\": %.3f, \"uform_bf16\": %.3f, \"uform_i8\": %.3f, \"i8_vs_best_float\": %.3f, \"i8_vs_best_float_median_round\": %.3f, "
                        "\"torch_f32\": %.3f, \"torch_bf16\": %.3f, \"torch_qdynamic\": %.3f, \"i8_vs_torch_qdynamic\": %.3f, "
                        "\"i8_cosine_to_f32\": [%.6f, %.6f], \"torch_qdynamic_cosine_to_f32\": [%.6f, %.6f], \"mfu_i8\": %.4f}",
                        written++ ? "," : "", c->modality, c->text_bytes, c->batch, c->threads, rates[0], rates[1], rates[2],
                        best_float > 0 ? rates[2] / best_float : 0, i8_median, torch_f32, torch_bf16, torch_q8,
                        torch_q8 > 0 ? rates[2] / torch_q8 : 0, cos_mean, cos_worst, q8_mean, q8_worst, mfu);
        }
        fflush(stdout);
        free(data), free(offsets), free(sizes), free(embeddings[0]), free(embeddings[1]), free(embeddings[2]);
    }
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    static const char *const names[3] = {"F32", "BF16", "INT8"};
    for (int m = int8 ? 0 : 1; m <= (int8 ? 2 : 1); ++m)
        printf("%s GEMM peak measured now (the MFU's reference): %.0f G op/s (1 thread), %.0f G op/s (2 threads); load %.1f ms\n",
               names[m], peak[1][m] * 1e-9, peak[2][m] * 1e-9, load_seconds[m] * 1e3);
    printf("checkpoint %s; peak RSS %.1f MiB\n", checkpoint, (double)usage.ru_maxrss / 1024.0);
    if (json) {
        fprintf(json, "\n], \"peak_gflops\": [%.1f, %.1f], \"peak_int8_gops\": [%.1f, %.1f], \"load_ms\": [%.2f, %.2f, %.2f], \"peak_rss_mib\": %.1f}\n",
                peak[1][1] * 1e-9, peak[2][1] * 1e-9, peak[1][2] * 1e-9, peak[2][2] * 1e-9, load_seconds[0] * 1e3,
                load_seconds[1] * 1e3, load_seconds[2] * 1e3, (double)usage.ru_maxrss / 1024.0);
        fclose(json);
    }
    for (size_t t = 1; t <= 2; ++t) uform_executor_free(executors[t]);
    return 0;
}
