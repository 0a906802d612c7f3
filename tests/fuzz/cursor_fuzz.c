/*
 * libFuzzer target for data cursors (src/data/cursor.c): the JSON text a checkpoint stores so that
 * a loader resumes where the last run stopped. Any bytes are offered as the cursor of two fixed
 * datasets, a manifest of pairs (its lines sampler) and a shard (its stream, shuffled), exactly as
 * uform_loader_open offers a stored one. The cursor is outside input: a malformed one must be
 * refused with a status and a message, one of another dataset, seed, batch size or partitioning
 * (a checkpoint of another run, another member count) must be refused as a mismatch, and one that
 * is accepted must leave a sampler that draws without reading outside its state.
 * Seeds (replay.h): the cursors the writer makes after a few batches of either dataset.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "data/data.h"
#include "replay.h"
#include "tar_seed.h"
#include "uform/uform.h"

const char *const replay_extension = ".json";

#define BATCH 3
#define PAIRS 10
#define SHARD_SAMPLES 12

static uform_dataset_t manifest, shards;

/* A memory file holding `bytes`, kept open for the process as descriptor `number`, so that its
 * path "/proc/self/fd/NUMBER" (and with it the dataset's fingerprint) is the same in the replay
 * driver that writes the seeds and in the libFuzzer binary that reads them. */
static int memory_file(const void *bytes, size_t size, int number, char path[64]) {
    int fd = memfd_create("uform-cursor-fuzz", MFD_CLOEXEC);
    if (fd < 0 || write(fd, bytes, size) != (ssize_t)size || dup2(fd, number) != number) return 0;
    close(fd);
    snprintf(path, 64, "/proc/self/fd/%d", number);
    return 1;
}

static uform_dataset_t open_dataset(uform_dataset_source_t source, const char *path) {
    uform_dataset_options_t options = {0};
    options.source = source;
    options.path = path;
    options.seed = 5;
    options.shuffle_buffer = 4;
    uform_dataset_t dataset = NULL;
    uform_outcome_t outcome = {0};
    if (uform_dataset_open(&options, &dataset, NULL, &outcome) != UFORM_OK) {
        fprintf(stderr, "cursor_fuzz: %s\n", outcome.message);
        return NULL;
    }
    return dataset;
}

/* The two datasets, made once per process (freed at exit, so a leak check sees only the rounds'). */
static void free_datasets(void) { uform_dataset_free(manifest), uform_dataset_free(shards); }

static int make_datasets(void) {
    if (manifest && shards) return 1;
    char text[PAIRS * 64] = "", path[64];
    for (int i = 0; i < PAIRS; ++i)
        snprintf(text + strlen(text), sizeof text - strlen(text), "{\"text\": \"caption %d\", \"image\": \"%d.jpg\"}\n", i, i);
    tar_buffer_t tar = {0};
    for (int i = 0; i < SHARD_SAMPLES; ++i) {
        char name[32], caption[32];
        snprintf(name, sizeof name, "%06d.jpg", i), tar_add(&tar, TAR_USTAR, name, "\xFF\xD8", 2);
        snprintf(caption, sizeof caption, "sample %d", i);
        snprintf(name, sizeof name, "%06d.txt", i), tar_add(&tar, TAR_USTAR, name, caption, strlen(caption));
    }
    tar_end(&tar);
    int ok = !tar.failed && memory_file(text, strlen(text), 900, path) && (manifest = open_dataset(UFORM_DATASET_MANIFEST, path));
    ok = ok && memory_file(tar.bytes, tar.size, 901, path) && (shards = open_dataset(UFORM_DATASET_SHARDS, path));
    free(tar.bytes);
    atexit(free_datasets);
    return ok;
}

static uform__cursor_head_t expected_head(uform_dataset_t dataset) {
    return (uform__cursor_head_t){dataset->options.source, dataset->fingerprint, dataset->options.seed, BATCH, 1, 0, 0};
}

/* A cursor accepted must be of this dataset, seed, batch and partitioning: anything else is trusted. */
static void check_head(const uform__cursor_head_t *head, const uform__cursor_head_t *expected) {
    if (head->source != expected->source || head->fingerprint != expected->fingerprint || head->seed != expected->seed ||
        head->batch != expected->batch || head->partitions != expected->partitions)
        __builtin_trap();
}

static void check_refusal(uform_status_t status, const uform_outcome_t *outcome) {
    if (status != UFORM_INVALID_ARGUMENT && status != UFORM_CONFIG_MISMATCH && status != UFORM_OUT_OF_MEMORY &&
        status != UFORM_IO && status != UFORM_FORMAT)
        __builtin_trap();
    if (!outcome->message[0]) __builtin_trap();
}

/* Answers 1 when the lines sampler took the cursor; draws two batches after it. */
static int try_lines(const char *text) {
    uform__lines_sampler_t sampler;
    if (uform__lines_sampler_init(&sampler, uform__dataset_training_lines(manifest), manifest->options.seed, 0) != UFORM_OK) return 0;
    uform__cursor_head_t expected = expected_head(manifest), head;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform__cursor_read(text, &expected, &head, &sampler, NULL, 0, &outcome, "cursor_fuzz");
    if (status == UFORM_OK) {
        check_head(&head, &expected);
        size_t picked[BATCH];
        int twins = 0;
        for (int batch = 0; batch < 2; ++batch)
            if (uform__lines_sampler_draw(&sampler, BATCH, NULL, 0, picked, &twins) < 0) break;
    } else {
        check_refusal(status, &outcome);
    }
    uform__lines_sampler_free(&sampler);
    return status == UFORM_OK;
}

/* Answers 1 when the stream took the cursor; draws a batch's samples after it. */
static int try_stream(const char *text) {
    uform__stream_t stream;
    if (uform__stream_init(&stream, shards, 0, 1, NULL, NULL) != UFORM_OK) return 0;
    uform__stream_t *streams[1] = {&stream};
    uform__cursor_head_t expected = expected_head(shards), head;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform__cursor_read(text, &expected, &head, NULL, streams, 1, &outcome, "cursor_fuzz");
    if (status == UFORM_OK) {
        check_head(&head, &expected);
        for (int draw = 0; draw < BATCH; ++draw) {
            uform__shard_sample_t sample = {0};
            uform_data_error_t error;
            uform_outcome_t drawn = {0};
            int twins = 0;
            int got = uform__stream_draw(&stream, NULL, 0, &sample, &twins, &error, &drawn, "cursor_fuzz");
            uform__shard_sample_free(&sample);
            if (got != 1) break;
        }
    } else {
        check_refusal(status, &outcome);
    }
    uform__stream_free(&stream);
    return status == UFORM_OK;
}

/* The text NUL-terminated, as a checkpoint's metadata hands it over; 1 when both sources took it. */
static int run(const uint8_t *data, size_t size, int *lines, int *stream) {
    if (!make_datasets()) __builtin_trap();
    char *text = malloc(size + 1);
    if (!text) return 0;
    if (size) memcpy(text, data, size);
    text[size] = 0;
    *lines = try_lines(text), *stream = try_stream(text);
    free(text);
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int lines, stream;
    run(data, size, &lines, &stream);
    return 0;
}

/* A seed is of one source: the other must refuse it as a mismatch, so accepted means exactly one. */
int replay_accepts(const uint8_t *data, size_t size) {
    int lines = 0, stream = 0;
    return run(data, size, &lines, &stream) && lines + stream == 1;
}

static int take(replay_seed_t *seed, char *text) {
    if (!text) return 0;
    seed->bytes = (uint8_t *)text, seed->size = strlen(text);
    return 1;
}

/* Hostile cursors made from the seeds by one edit: another run's batch size, member count (as
 * partitions), seed or data must be refused as a mismatch; a state out of range (a position past the
 * lines, a sample of a shard that is not in the list, a shard past the epoch's sequence) as malformed
 * or a mismatch, never trusted. Answers the count that were accepted. */
static int hostile_accepted(const replay_seed_t *seeds) {
    static const struct {
        int seed; /* index in replay_seeds' order: even manifests, odd shards */
        const char *from, *to;
        uform_status_t expected; /* UFORM_OK: any refusal */
    } edits[] = {
        {2, "\"batch\":3", "\"batch\":4", UFORM_CONFIG_MISMATCH},
        {3, "\"batch\":3", "\"batch\":6", UFORM_CONFIG_MISMATCH},
        {2, "\"partitions\":1", "\"partitions\":2", UFORM_CONFIG_MISMATCH},
        {3, "\"partitions\":1", "\"partitions\":4", UFORM_CONFIG_MISMATCH},
        {3, "\"partition\":0", "\"partition\":1", UFORM_CONFIG_MISMATCH},
        {2, "\"seed\":\"5\"", "\"seed\":\"6\"", UFORM_CONFIG_MISMATCH},
        /* The fingerprint of other data (the seed's own value moves to an unknown member "x"). */
        {2, "\"fingerprint\":\"", "\"fingerprint\":\"0123456789abcdef\",\"x\":\"", UFORM_CONFIG_MISMATCH},
        {3, "\"fingerprint\":\"", "\"fingerprint\":\"0123456789abcdef\",\"x\":\"", UFORM_CONFIG_MISMATCH},
        {2, "\"position\":6", "\"position\":600", UFORM_OK},
        {2, "\"swaps\":[]", "\"swaps\":[0,99]", UFORM_OK},
        {2, "\"bad\":[]", "\"bad\":[10]", UFORM_OK},
        {3, "\"buffer\":[0,", "\"buffer\":[1,", UFORM_OK},
        {3, "\"buffer\":[0,", "\"buffer\":[0,99,0,", UFORM_OK},
        {3, "\"at\":0", "\"at\":5", UFORM_OK},
        /* Reading the shard one past the epoch's sequence: read outside it (found by cursor_fuzz). */
        {3, "\"at\":0", "\"at\":1", UFORM_CONFIG_MISMATCH},
        {3, "\"ordinal\":10", "\"ordinal\":-1", UFORM_OK},
        {2, "\"source\":\"manifest\"", "\"source\":\"folder\"", UFORM_CONFIG_MISMATCH},
        /* Counts no size_t holds: converting them was undefined behaviour (found by cursor_fuzz). */
        {3, "\"batch\":3", "\"batch\":3e32", UFORM_INVALID_ARGUMENT},
        {2, "\"position\":6", "\"position\":1e300", UFORM_INVALID_ARGUMENT},
        {3, "\"buffer\":[0,", "\"buffer\":[2e19,", UFORM_INVALID_ARGUMENT},
    };
    int accepted = 0;
    for (size_t e = 0; e < sizeof edits / sizeof edits[0]; ++e) {
        const char *text = (const char *)seeds[edits[e].seed].bytes;
        const char *at = strstr(text, edits[e].from);
        if (!at) {
            fprintf(stderr, "hostile cursor %zu: the seed has no %s\n", e, edits[e].from);
            ++accepted;
            continue;
        }
        char edited[2048];
        snprintf(edited, sizeof edited, "%.*s%s%s", (int)(at - text), text, edits[e].to, at + strlen(edits[e].from));
        int lines = edits[e].seed % 2 == 0;
        uform_dataset_t dataset = lines ? manifest : shards;
        uform__lines_sampler_t sampler;
        uform__stream_t stream;
        uform__stream_t *streams[1] = {&stream};
        if (lines ? uform__lines_sampler_init(&sampler, uform__dataset_training_lines(dataset), dataset->options.seed, 0) != UFORM_OK
                  : uform__stream_init(&stream, dataset, 0, 1, NULL, NULL) != UFORM_OK)
            return ++accepted;
        uform__cursor_head_t expected = expected_head(dataset), head;
        uform_outcome_t outcome = {0};
        uform_status_t status = uform__cursor_read(edited, &expected, &head, lines ? &sampler : NULL, lines ? NULL : streams,
                                                   lines ? 0 : 1, &outcome, "cursor_fuzz");
        if (lines) uform__lines_sampler_free(&sampler);
        else uform__stream_free(&stream);
        int wrong = status == UFORM_OK || (edits[e].expected != UFORM_OK && status != edits[e].expected);
        if (wrong) fprintf(stderr, "hostile cursor %zu (%s -> %s) answered %s: %s\n", e, edits[e].from, edits[e].to,
                           uform_status_name(status), outcome.message);
        accepted += wrong;
    }
    return accepted;
}

/* Cursors after 0, 2 and 5 batches (the last one past the manifest's first epoch) of each source. */
size_t replay_seeds(replay_seed_t *seeds, size_t capacity) {
    static const int batches[3] = {0, 2, 5};
    if (capacity < 6 || !make_datasets()) return 0;
    size_t count = 0;
    for (int k = 0; k < 3; ++k) {
        uform__lines_sampler_t sampler;
        if (uform__lines_sampler_init(&sampler, uform__dataset_training_lines(manifest), manifest->options.seed, 0) != UFORM_OK) return 0;
        size_t picked[BATCH];
        int twins = 0;
        for (int b = 0; b < batches[k]; ++b) uform__lines_sampler_draw(&sampler, BATCH, NULL, 0, picked, &twins);
        uform__cursor_head_t head = expected_head(manifest);
        head.batches = (size_t)batches[k];
        count += (size_t)take(&seeds[count], uform__cursor_write(&head, &sampler, NULL, 0));
        uform__lines_sampler_free(&sampler);

        uform__stream_t stream;
        if (uform__stream_init(&stream, shards, 0, 1, NULL, NULL) != UFORM_OK) return 0;
        for (int d = 0; d < batches[k] * BATCH; ++d) {
            uform__shard_sample_t sample = {0};
            uform_data_error_t error;
            uform_outcome_t outcome = {0};
            uform__stream_draw(&stream, NULL, 0, &sample, &twins, &error, &outcome, "cursor_fuzz");
            uform__shard_sample_free(&sample);
        }
        const uform__stream_t *streams[1] = {&stream};
        head = expected_head(shards);
        head.batches = (size_t)batches[k];
        count += (size_t)take(&seeds[count], uform__cursor_write(&head, NULL, streams, 1));
        uform__stream_free(&stream);
    }
    if (count == 6 && hostile_accepted(seeds)) return fprintf(stderr, "hostile cursors were trusted\n"), 0;
    return count == 6 ? count : 0;
}
