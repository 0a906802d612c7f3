/*
 * The in-process side of bench_serve: the same checkpoint, threads and inputs as the server gets,
 * called directly through the C API with no HTTP and no batcher, as the figures the server is held
 * to. Prints one JSON object:
 *   text_batch1_p50_us, text_batch1_p99_us   one text per blocking call on the executor (the
 *                                             latency floor of a lone request);
 *   text_batched_items_per_second            batches of --batch texts (the server's --max-batch);
 *   image_batched_items_per_second           batches of the given files (decoding included), as one
 *                                             batch-32 image request carries them.
 * Each throughput is the best of REPEATS timed repeats of about SECONDS each (bench_serve runs this
 * once per round, between the servers' runs, so that all sides see the same machine).
 *
 *   peer_serve_inproc CKPT COMPUTE THREADS BATCH SECONDS REPEATS TEXTS_FILE IMAGE...
 * COMPUTE is f32, bf16 or best (uform_compute_best: what `uform serve` runs unless told); TEXTS_FILE
 * holds one text a line (the texts the load generator sends).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"
#include "uform/uform.h"

static int fail(const uform_outcome_t *outcome) {
    char line[600];
    uform_outcome_format(outcome, line, sizeof line);
    fprintf(stderr, "peer_serve_inproc: %s\n", line);
    return 1;
}

static unsigned char *slurp(const char *path, size_t *size) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    fseek(file, 0, SEEK_END);
    long length = ftell(file);
    fseek(file, 0, SEEK_SET);
    unsigned char *bytes = malloc((size_t)length + 1);
    *size = bytes ? fread(bytes, 1, (size_t)length, file) : 0;
    fclose(file);
    return bytes;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 9) {
        fprintf(stderr, "usage: peer_serve_inproc CKPT f32|bf16|best THREADS BATCH SECONDS REPEATS TEXTS_FILE IMAGE...\n");
        return 2;
    }
    const char *checkpoint = argv[1];
    uform_ram_options_t options = {0};
    if (strcmp(argv[2], "f32") == 0) options.compute = UFORM_COMPUTE_F32;
    else if (strcmp(argv[2], "bf16") == 0) options.compute = UFORM_COMPUTE_BF16;
    else if (strcmp(argv[2], "best") == 0) options.compute = uform_compute_best(UFORM_CPU_CLASS_UNKNOWN);
    else return fprintf(stderr, "peer_serve_inproc: compute '%s' is not f32, bf16 or best\n", argv[2]), 2;
    size_t threads = strtoull(argv[3], NULL, 10), batch = strtoull(argv[4], NULL, 10);
    double seconds = strtod(argv[5], NULL);
    int repeats = atoi(argv[6]);
    argv += 2, argc -= 2; /* TEXTS_FILE and the images are argv[5] and on from here */
    uform_outcome_t outcome = {0};
    uform_executor_t executor = NULL;
    uform_model_t model = NULL;
    uform_arena_t arena = NULL;
    if (uform_executor_for_ram(NULL, threads, 0, &executor, &outcome) != UFORM_OK ||
        uform_model_load_ram(executor, checkpoint, &options, &model, &outcome) != UFORM_OK ||
        uform_arena_for_executor(executor, &arena, &outcome) != UFORM_OK)
        return fail(&outcome);

    /* The texts, end to end. */
    size_t size = 0;
    char *texts = (char *)slurp(argv[5], &size);
    if (!texts) return fprintf(stderr, "cannot read %s\n", argv[5]), 1;
    size_t count = 0, *offsets = malloc((size + 2) * sizeof *offsets), used = 0;
    char *packed = malloc(size + 1);
    offsets[0] = 0;
    for (char *line = strtok(texts, "\n"); line; line = strtok(NULL, "\n")) {
        size_t length = strlen(line);
        memcpy(packed + used, line, length);
        used += length;
        offsets[++count] = used;
    }
    if (count < batch) return fprintf(stderr, "fewer texts (%zu) than a batch (%zu)\n", count, batch), 1;

    /* Batch-1 latency: each call as a lone request's batch, on the executor; up to 4,000 calls or
     * SECONDS of them (a larger model), after 20 to warm up. */
    enum { CALLS = 4000 };
    double *times = malloc(CALLS * sizeof *times), began = 0;
    int calls = 0;
    for (int call = -20; call < CALLS; ++call) {
        size_t i = (size_t)(call < 0 ? -call : call) % count;
        uform_text_encode_t request = {0};
        request.model = model, request.executor = executor, request.arena = arena;
        request.texts = (uform_tape_t){packed, offsets + i, 1};
        double start = bench_seconds();
        if (call == 0) began = start;
        if (uform_text_encode(&request) != UFORM_OK) return fail(&request.outcome);
        if (call >= 0) times[calls++] = bench_seconds() - start;
        if (call >= 100 && bench_seconds() - began > seconds) break;
    }
    qsort(times, (size_t)calls, sizeof *times, compare);
    double p50 = times[calls / 2], p99 = times[calls * 99 / 100];

    /* Batched texts. */
    double text_best = 0, text_cpu_best = 0;
    for (int repeat = 0; repeat < repeats; ++repeat) {
        size_t items = 0, first = 0;
        double start = bench_seconds(), cpu_start = bench_cpu_seconds(), elapsed = 0;
        do {
            if (first + batch > count) first = 0;
            uform_text_encode_t request = {0};
            request.model = model, request.executor = executor, request.arena = arena;
            request.texts = (uform_tape_t){packed, offsets + first, batch};
            if (uform_text_encode(&request) != UFORM_OK) return fail(&request.outcome);
            items += batch, first += batch;
            elapsed = bench_seconds() - start;
        } while (elapsed < seconds);
        if (items / elapsed > text_best) text_best = (double)items / elapsed;
        double cpu = bench_cpu_seconds() - cpu_start;
        if (cpu > 0 && items / cpu > text_cpu_best) text_cpu_best = (double)items / cpu;
    }

    /* Batches of image files, decoding included. */
    size_t images = (size_t)argc - 6, image_bytes = 0;
    unsigned char **files = malloc(images * sizeof *files);
    size_t *sizes = malloc(images * sizeof *sizes), *image_offsets = malloc((images + 1) * sizeof *image_offsets);
    for (size_t i = 0; i < images; ++i) {
        files[i] = slurp(argv[6 + i], &sizes[i]);
        if (!files[i]) return fprintf(stderr, "cannot read %s\n", argv[6 + i]), 1;
        image_bytes += sizes[i];
    }
    unsigned char *tape = malloc(image_bytes);
    image_offsets[0] = 0;
    for (size_t i = 0; i < images; ++i) {
        memcpy(tape + image_offsets[i], files[i], sizes[i]);
        image_offsets[i + 1] = image_offsets[i] + sizes[i];
    }
    double image_best = 0, image_cpu_best = 0;
    for (int repeat = 0; repeat < repeats; ++repeat) {
        size_t items = 0;
        double start = bench_seconds(), cpu_start = bench_cpu_seconds(), elapsed = 0;
        do {
            uform_image_encode_t request = {0};
            request.model = model, request.executor = executor, request.arena = arena;
            request.images = (uform_tape_t){tape, image_offsets, images};
            if (uform_image_encode(&request) != UFORM_OK) return fail(&request.outcome);
            items += images;
            elapsed = bench_seconds() - start;
        } while (elapsed < seconds);
        if (items / elapsed > image_best) image_best = (double)items / elapsed;
        double cpu = bench_cpu_seconds() - cpu_start;
        if (cpu > 0 && items / cpu > image_cpu_best) image_cpu_best = (double)items / cpu;
    }
    printf("{\"threads\": %zu, \"batch\": %zu, \"text_batch1_p50_us\": %.2f, \"text_batch1_p99_us\": %.2f, "
           "\"text_batched_items_per_second\": %.1f, \"text_batched_items_per_cpu_second\": %.1f, \"image_batch\": %zu, "
           "\"image_batched_items_per_second\": %.1f, \"image_batched_items_per_cpu_second\": %.1f}\n",
           uform_executor_threads(executor), batch, p50 * 1e6, p99 * 1e6, text_best, text_cpu_best, images, image_best,
           image_cpu_best);
    uform_arena_free(arena);
    uform_model_free(model);
    uform_executor_free(executor);
    return 0;
}
