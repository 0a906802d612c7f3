/*
 * Training-step throughput of the `small` shape (random weights) side by side with the PyTorch peer
 * (bench/train_torch.py: the same model and losses, F32 and BF16 autocast, explicit threads,
 * OMP_WAIT_POLICY=PASSIVE) in the same run, reported as ratios; plus the fraction of the BF16 GEMM
 * peak measured in the same run that the step reaches (MFU, forward + backward flops as the
 * trainer counts them), the time split (decode, forward, backward, optimizer) and the peak RSS.
 *
 *   bench_train [--quick] [--no-torch] [--only image|text] [--mode f32|bf16] [--batch 32] [--threads 2]
 *               [--steps N] [--size small] [--json bench/results/train.json]
 *
 * Cases (as the peer's): `image` — 32 pairs of a 224×224 JPEG (decoded by the step) and a 32-byte
 * text; `text` — 32 pairs of 256-byte texts. Contrastive loss over the pairs (text side 0), group 0.
 * Each side reports its best step after one warm-up step. Both sides also count their CPU seconds
 * per step (all threads), so the ratio per CPU-second and the MFU per CPU-second ("cpu-MFU": the
 * step's flops per CPU-second against the GEMM's per CPU-second) hold even on shared cores.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench_peak.h"
#include "demo_media.h"
#include "uform/uform.h"

typedef struct batch_t {
    unsigned char *data;
    size_t used, *offsets;
    uform_modality_t *modalities;
    size_t *bags, *lefts, *rights;
    uint8_t *sides;
    size_t pairs;
} batch_t;

static uint64_t seed = 3;
static uint8_t next_byte(void) { return bench_peak_byte(&seed); }

static void append(batch_t *batch, const void *bytes, size_t length, uform_modality_t modality, size_t index) {
    batch->data = realloc(batch->data, batch->used + length);
    memcpy(batch->data + batch->used, bytes, length);
    batch->used += length;
    batch->offsets[index + 1] = batch->used;
    batch->modalities[index] = modality;
}

/* 224×224 pictures with smooth colour fields and a shape, so JPEG decoding costs what photos cost. */
static unsigned char *picture(size_t side, size_t index, size_t *size) {
    uint8_t *pixels = malloc(side * side * 3);
    for (size_t y = 0; y < side; ++y)
        for (size_t x = 0; x < side; ++x) {
            uint8_t *p = pixels + (y * side + x) * 3;
            p[0] = (uint8_t)(128 + 100 * sin((double)(x + 7 * index) / 23.0));
            p[1] = (uint8_t)(128 + 100 * cos((double)(y + 3 * index) / 31.0));
            p[2] = (uint8_t)((x + y + index * 11) & 0xFF);
        }
    uint8_t rgb[3] = {next_byte(), next_byte(), next_byte()};
    demo_draw(pixels, side, side, (int)(index % 2), rgb, (double)(side / 4 + index % (side / 2)), (double)side / 2,
              (double)side / 6);
    unsigned char *jpeg = demo_jpeg(pixels, side, side, size);
    free(pixels);
    return jpeg;
}

static void make_batch(batch_t *batch, const char *kind, size_t pairs, size_t image_side, size_t text_bytes) {
    memset(batch, 0, sizeof *batch);
    batch->pairs = pairs;
    batch->offsets = calloc(2 * pairs + 1, sizeof *batch->offsets);
    batch->modalities = calloc(2 * pairs, sizeof *batch->modalities);
    batch->bags = calloc(2 * pairs + 1, sizeof *batch->bags);
    batch->sides = calloc(2 * pairs, 1);
    batch->lefts = calloc(pairs, sizeof *batch->lefts), batch->rights = calloc(pairs, sizeof *batch->rights);
    char text[512];
    for (size_t p = 0; p < pairs; ++p) {
        size_t length = strcmp(kind, "image") == 0 ? 32 : text_bytes;
        for (size_t i = 0; i < length; ++i) text[i] = (char)(32 + next_byte() % 90);
        append(batch, text, length, UFORM_MODALITY_TEXT, 2 * p);
        if (strcmp(kind, "image") == 0) {
            size_t size = 0;
            unsigned char *jpeg = picture(image_side, p, &size);
            append(batch, jpeg, size, UFORM_MODALITY_IMAGE, 2 * p + 1);
            free(jpeg);
        } else {
            for (size_t i = 0; i < length; ++i) text[i] = (char)(32 + next_byte() % 90);
            append(batch, text, length, UFORM_MODALITY_TEXT, 2 * p + 1);
        }
        batch->lefts[p] = 2 * p, batch->rights[p] = 2 * p + 1;
    }
    for (size_t j = 0; j <= 2 * pairs; ++j) batch->bags[j] = j;
    for (size_t j = 0; j < 2 * pairs; ++j) batch->sides[j] = (uint8_t)(j % 2);
}

static void batch_free(batch_t *batch) {
    free(batch->data), free(batch->offsets), free(batch->modalities), free(batch->bags), free(batch->sides);
    free(batch->lefts), free(batch->rights);
}

typedef struct result_t {
    double seconds, cpu_seconds, rate, gflops, mfu, cpu_mfu;
    uform_trainer_stats_t stats;
} result_t;

static int run(uform_executor_t executor, const char *size, uform_compute_t compute, const batch_t *batch, size_t steps,
               int image, double peak, double cpu_peak, result_t *result) {
    uform_trainer_config_t config = {0};
    snprintf(config.size, sizeof config.size, "%s", size);
    config.compute = compute, config.seed = 1;
    config.modalities = (1u << UFORM_MODALITY_TEXT) | (image ? 1u << UFORM_MODALITY_IMAGE : 0);
    uform_trainer_t trainer = NULL;
    uform_outcome_t outcome = {0};
    if (uform_trainer_init_ram(executor, &config, &trainer, &outcome) != UFORM_OK) {
        fprintf(stderr, "bench_train: %s\n", outcome.message);
        return -1;
    }
    uform_arena_t arena = NULL;
    uform_arena_for_executor(executor, &arena, NULL);
    memset(result, 0, sizeof *result);
    result->seconds = INFINITY;
    for (size_t s = 0; s <= steps; ++s) { /* step 0 warms up */
        uform_trainer_stats_t stats = {0};
        uform_trainer_step_t step = {0};
        step.trainer = trainer, step.arena = arena, step.stats = &stats;
        step.modalities = batch->modalities;
        step.contents = (uform_tape_t){batch->data, batch->offsets, 2 * batch->pairs};
        step.bags = batch->bags, step.bag_count = 2 * batch->pairs, step.sides = batch->sides;
        step.relations = (uform_relations_t){batch->lefts, batch->rights, NULL, batch->pairs};
        double start = bench_seconds(), cpu_start = bench_cpu_seconds();
        if (uform_trainer_step(&step) != UFORM_OK) {
            fprintf(stderr, "bench_train: %s\n", step.outcome.message);
            uform_trainer_free(trainer);
            uform_arena_free(arena);
            return -1;
        }
        double seconds = bench_seconds() - start, cpu_seconds = bench_cpu_seconds() - cpu_start;
        if (s && seconds < result->seconds) result->seconds = seconds, result->stats = stats;
        if (s && (result->cpu_seconds == 0 || cpu_seconds < result->cpu_seconds)) result->cpu_seconds = cpu_seconds;
    }
    result->rate = (double)batch->pairs * (image ? 1.0 : 2.0) / result->seconds;
    result->gflops = result->stats.flops / result->seconds * 1e-9;
    result->mfu = peak > 0 ? result->stats.flops / result->seconds / peak : 0;
    result->cpu_mfu = cpu_peak > 0 ? result->stats.flops / result->cpu_seconds / cpu_peak : 0;
    uform_trainer_free(trainer);
    uform_arena_free(arena);
    return 0;
}

/* The PyTorch peer's rates (F32 and BF16) for one case; 0 where it could not run. */
static void torch_rates(const char *kind, const char *size, size_t batch, size_t threads, int quick, double rates[2],
                        double seconds[2][4], double cpu_seconds[2]) {
    char path[] = "/tmp/uform-bench-train-XXXXXX";
    int descriptor = mkstemp(path);
    if (descriptor < 0) return;
    close(descriptor);
    char command[1024];
    snprintf(command, sizeof command,
             "OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/train_torch.py --size %s --case %s --mode all --batch %zu "
             "--threads %zu%s --json %s > /dev/null 2>&1",
             size, kind, batch, threads, quick ? " --quick" : "", path);
    if (system(command) == 0) {
        FILE *file = fopen(path, "rb");
        char *text = NULL;
        size_t length = 0;
        if (file) {
            fseek(file, 0, SEEK_END);
            length = (size_t)ftell(file);
            fseek(file, 0, SEEK_SET);
            text = calloc(length + 1, 1);
            if (text && fread(text, 1, length, file) != length) text[0] = 0;
            fclose(file);
        }
        cJSON *root = text ? cJSON_Parse(text) : NULL;
        const cJSON *results = cJSON_GetObjectItemCaseSensitive(root, "results"), *item;
        cJSON_ArrayForEach(item, results) {
            const cJSON *mode = cJSON_GetObjectItemCaseSensitive(item, "mode");
            const cJSON *rate = cJSON_GetObjectItemCaseSensitive(item, strcmp(kind, "image") == 0 ? "images_per_second"
                                                                                                 : "sequences_per_second");
            int k = cJSON_IsString(mode) && strcmp(mode->valuestring, "bf16") == 0;
            if (cJSON_IsNumber(rate)) rates[k] = rate->valuedouble;
            const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(item, "cpu_seconds_per_step");
            if (cJSON_IsNumber(cpu)) cpu_seconds[k] = cpu->valuedouble;
            const char *keys[4] = {"seconds_per_step", "forward_seconds", "backward_seconds", "optimizer_seconds"};
            for (int j = 0; j < 4; ++j) {
                const cJSON *value = cJSON_GetObjectItemCaseSensitive(item, keys[j]);
                if (cJSON_IsNumber(value)) seconds[k][j] = value->valuedouble;
            }
        }
        cJSON_Delete(root);
        free(text);
    }
    remove(path);
}

int main(int argc, char **argv) {
    const char *json_path = "bench/results/train.json", *only = NULL, *size = "small", *mode = NULL;
    int quick = 0, with_torch = 1;
    size_t batch_size = 32, threads = 2, steps = 3;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--quick") == 0) quick = 1, steps = 1;
        else if (strcmp(argv[i], "--no-torch") == 0) with_torch = 0;
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
        else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) json_path = argv[++i];
        else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc) batch_size = (size_t)atol(argv[++i]);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = (size_t)atol(argv[++i]);
        else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc) steps = (size_t)atol(argv[++i]);
        else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) size = argv[++i];
        else if (strcmp(argv[i], "--mode") == 0 && i + 1 < argc) mode = argv[++i];
    }
    uform_executor_t executor = NULL;
    uform_outcome_t outcome = {0};
    if (uform_executor_for_ram(NULL, threads, 0, &executor, &outcome) != UFORM_OK) {
        fprintf(stderr, "bench_train: %s\n", outcome.message);
        return 1;
    }
    double peak = bench_gemm_peak(executor, uform_executor_cpu_class(executor));
    /* The same product per CPU-second of this process: the MFU that other processes on the cores
     * cannot lower (a step per CPU-second against the GEMM per CPU-second). */
    double cpu_peak = bench_gemm_peak_of(executor, uform_executor_cpu_class(executor), 1);
    FILE *json = fopen(json_path, "w");
    if (json)
        fprintf(json, "{\"cpu_class\": \"%s\", \"threads\": %zu, \"batch\": %zu, \"size\": \"%s\", \"peak_gflops\": %.1f, \"cases\": [",
                uform_cpu_class_name(uform_executor_cpu_class(executor)), threads, batch_size, size, peak * 1e-9);
    printf("%s, %zu threads, batch %zu, %s; BF16 GEMM peak measured now: %.0f GFLOP/s (%.0f per CPU-second)\n",
           uform_cpu_class_name(uform_executor_cpu_class(executor)), threads, batch_size, size, peak * 1e-9,
           cpu_peak * 1e-9);
    printf("%-6s %-5s | %9s %7s | %6s %6s %6s %6s | %7s %5s %7s | %9s %9s | %7s %7s\n", "case", "mode", "items/s",
           "s/step", "decode", "fwd", "bwd", "optim", "GFLOP/s", "MFU", "cpu-MFU", "torch f32", "torch bf16", "vs best",
           "per cpu");
    static const char *const kinds[2] = {"image", "text"};
    int first = 1;
    for (int c = 0; c < 2; ++c) {
        if (only && strcmp(only, kinds[c]) != 0) continue;
        int image = c == 0;
        batch_t batch;
        make_batch(&batch, kinds[c], batch_size, strcmp(size, "tiny") == 0 ? 32 : 224, strcmp(size, "tiny") == 0 ? 64 : 256);
        double torch[2] = {0, 0}, torch_seconds[2][4] = {{0}}, torch_cpu[2] = {0, 0};
        if (with_torch) torch_rates(kinds[c], size, batch_size, threads, quick, torch, torch_seconds, torch_cpu);
        double best_torch = fmax(torch[0], torch[1]);
        /* Items per CPU-second of the peer's best mode, to set against ours per CPU-second. */
        double items = (double)batch_size * (c == 0 ? 1.0 : 2.0), best_torch_cpu = 0;
        for (int k = 0; k < 2; ++k)
            if (torch_cpu[k] > 0) best_torch_cpu = fmax(best_torch_cpu, items / torch_cpu[k]);
        for (int m = 0; m < 2; ++m) {
            if (mode && strcmp(mode, m ? "bf16" : "f32") != 0) continue;
            result_t result;
            if (run(executor, size, m ? UFORM_COMPUTE_BF16 : UFORM_COMPUTE_F32, &batch, steps, image, peak, cpu_peak,
                    &result))
                continue;
            const uform_trainer_stats_t *s = &result.stats;
            double cpu_rate = items / result.cpu_seconds;
            printf("%-6s %-5s | %9.2f %7.3f | %6.3f %6.3f %6.3f %6.3f | %7.1f %4.0f%% %6.0f%% | %9.2f %9.2f | %6.2fx %6.2fx\n",
                   kinds[c], m ? "bf16" : "f32", result.rate, result.seconds, s->decode_seconds, s->forward_seconds,
                   s->backward_seconds, s->optimizer_seconds, result.gflops, result.mfu * 100, result.cpu_mfu * 100,
                   torch[0], torch[1], best_torch > 0 ? result.rate / best_torch : 0,
                   best_torch_cpu > 0 ? cpu_rate / best_torch_cpu : 0);
            fflush(stdout);
            if (json)
                fprintf(json,
                        "%s\n {\"case\": \"%s\", \"mode\": \"%s\", \"items_per_second\": %.3f, \"seconds_per_step\": %.4f, "
                        "\"decode_seconds\": %.4f, \"forward_seconds\": %.4f, \"backward_seconds\": %.4f, "
                        "\"optimizer_seconds\": %.4f, \"gflop_per_step\": %.2f, \"gflops\": %.1f, \"mfu\": %.4f, \"cpu_mfu\": %.4f, "
                        "\"torch_f32_items_per_second\": %.3f, \"torch_bf16_items_per_second\": %.3f, "
                        "\"torch_bf16_split\": [%.4f, %.4f, %.4f, %.4f], \"ratio_vs_best_torch\": %.3f, "
                        "\"items_per_cpu_second\": %.4f, \"ratio_vs_best_torch_per_cpu_second\": %.3f}",
                        first ? "" : ",", kinds[c], m ? "bf16" : "f32", result.rate, result.seconds, s->decode_seconds,
                        s->forward_seconds, s->backward_seconds, s->optimizer_seconds, s->flops * 1e-9, result.gflops,
                        result.mfu, result.cpu_mfu, torch[0], torch[1], torch_seconds[1][0], torch_seconds[1][1], torch_seconds[1][2],
                        torch_seconds[1][3], best_torch > 0 ? result.rate / best_torch : 0, items / result.cpu_seconds,
                        best_torch_cpu > 0 ? items / result.cpu_seconds / best_torch_cpu : 0);
            first = 0;
        }
        batch_free(&batch);
    }
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    printf("peak RSS %.0f MiB (this process; the peer's is in its JSON)\n", (double)usage.ru_maxrss / 1024.0);
    if (json) {
        fprintf(json, "\n], \"peak_rss_mib\": %.1f}\n", (double)usage.ru_maxrss / 1024.0);
        fclose(json);
    }
    uform_executor_free(executor);
    return 0;
}
