/*
 * libFuzzer target for WebDataset shards (src/data/shard_read.c, read.c, dataset.c): any bytes are
 * a shard file (plain tar or tar.gz, which libarchive tells apart) opened as a SHARDS dataset and
 * read item by item to its end, then read again as training samples with their bytes, the way the
 * loader's streams read them. Every item answers a status (a broken shard a status with a message),
 * never a crash, a leak or a hang. Seeds (replay.h): shards of ustar, pax and GNU long-name members
 * grouped by key, captions from .txt and .json, plain and gzipped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/data.h"
#include "data_fuzz_file.h"
#include "replay.h"
#include "tar_seed.h"
#include "uform/uform.h"

const char *const replay_extension = ".tar";

/* Reads every item; answers the items read whole, or -1 when one failed. A shard has at most one
 * item per 1,024 bytes (a member is two blocks), so the loop ends. */
static long read_items(uform_dataset_t dataset, size_t size) {
    long whole = 0;
    int failed = 0;
    uform_dataset_read_t request = {0};
    request.dataset = dataset;
    for (size_t round = 0; round <= size / 512 + 2; ++round) {
        uform_status_t status = uform_dataset_read(&request);
        if (status == UFORM_OK && request.done) return failed ? -1 : whole;
        if (status == UFORM_OK) ++whole;
        else if (!request.outcome.message[0]) __builtin_trap(); /* a refusal says why */
        else failed = 1;
        if (status == UFORM_OUT_OF_MEMORY || status == UFORM_INVALID_ARGUMENT) return -1;
    }
    __builtin_trap(); /* more items than the shard can hold */
}

/* The loader's way: samples grouped by key, with their bytes. */
static void read_samples(const char *path) {
    uform__shard_reader_t reader;
    uform_outcome_t outcome = {0};
    if (uform__shard_open(&reader, path, 0, 1 << 20, &outcome, "shard_fuzz") != UFORM_OK) return;
    for (int count = 0; count < 100000; ++count) {
        uform__shard_sample_t sample = {0};
        int got = uform__shard_next(&reader, 1, &sample);
        uform__shard_sample_free(&sample);
        if (got != 1) break;
    }
    uform__shard_close(&reader);
}

static long open_and_read(const uint8_t *data, size_t size, int samples) {
    const char *path = data_fuzz_write(data, size);
    if (!path) return -1;
    uform_dataset_options_t options = {0};
    options.source = UFORM_DATASET_SHARDS;
    options.path = path;
    options.sequential = 1;
    options.max_sample_bytes = 1 << 20;
    uform_dataset_t dataset = NULL;
    uform_outcome_t outcome = {0};
    if (uform_dataset_open(&options, &dataset, NULL, &outcome) != UFORM_OK) {
        if (dataset || !outcome.message[0]) __builtin_trap();
        return -1;
    }
    long whole = read_items(dataset, size);
    uform_dataset_free(dataset);
    if (samples) read_samples(path);
    return whole;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    open_and_read(data, size, 1);
    return 0;
}

int replay_accepts(const uint8_t *data, size_t size) { return open_and_read(data, size, 0) > 0; }

/* ---- seeds ---- */

static void add_sample(tar_buffer_t *tar, tar_name_style_t style, const char *key, const char *medium, const char *caption,
                       int json) {
    static const uint8_t fake_jpeg[] = {0xFF, 0xD8, 0xFF, 0xE0, 0, 16, 'J', 'F', 'I', 'F', 0, 0xFF, 0xD9};
    char name[400], text[256];
    snprintf(name, sizeof name, "%s.%s", key, medium);
    tar_add(tar, style, name, fake_jpeg, sizeof fake_jpeg);
    if (json) snprintf(text, sizeof text, "{\"caption\": \"%s\", \"width\": 1}", caption);
    else snprintf(text, sizeof text, "%s\n", caption);
    snprintf(name, sizeof name, "%s.%s", key, json ? "json" : "txt");
    tar_add(tar, style, name, text, strlen(text));
}

static int take(replay_seed_t *seed, tar_buffer_t *tar) {
    tar_end(tar);
    if (tar->failed) return free(tar->bytes), 0;
    seed->bytes = tar->bytes, seed->size = tar->size;
    return 1;
}

size_t replay_seeds(replay_seed_t *seeds, size_t capacity) {
    if (capacity < 5) return 0;
    char long_key[300];
    memset(long_key, 'k', 200), long_key[0] = 'd', long_key[1] = '/';
    snprintf(long_key + 200, sizeof long_key - 200, "/000002");
    tar_buffer_t tars[4] = {{0}};
    /* 0: ustar, three samples, a .txt and a .json caption, a member of another key alone at the end. */
    add_sample(&tars[0], TAR_USTAR, "a/000000", "jpg", "a red square", 0);
    add_sample(&tars[0], TAR_USTAR, "a/000001", "png", "two birds", 1);
    add_sample(&tars[0], TAR_USTAR, "a/000002", "webp", "ein Vogel", 0);
    tar_add(&tars[0], TAR_USTAR, "a/000003.txt", "only a caption", 14);
    /* 1: pax names, 2: GNU long names (a key longer than ustar's 100 bytes). */
    add_sample(&tars[1], TAR_PAX, "b/000000", "jpg", "pax named", 0);
    add_sample(&tars[1], TAR_PAX, long_key, "jpg", "a long pax key", 1);
    add_sample(&tars[2], TAR_GNU_LONG, "c/000000", "jpeg", "gnu named", 1);
    add_sample(&tars[2], TAR_GNU_LONG, long_key, "jpg", "a long gnu key", 0);
    /* 3: the styles mixed within one sample. */
    add_sample(&tars[3], TAR_USTAR, "m/000000", "jpg", "mixed", 0);
    tar_add(&tars[3], TAR_PAX, "m/000001.png", "\x89PNG", 4);
    tar_add(&tars[3], TAR_GNU_LONG, "m/000001.txt", "mixed two", 9);
    size_t count = 0;
    for (int i = 0; i < 4; ++i) count += (size_t)take(&seeds[count], &tars[i]);
    if (count != 4) return 0;
    /* 4: the first shard gzipped. */
    seeds[4].bytes = tar_gzip(seeds[0].bytes, seeds[0].size, &seeds[4].size);
    return seeds[4].bytes ? 5 : 0;
}
