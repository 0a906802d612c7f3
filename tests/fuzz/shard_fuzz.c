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

/* What a read of every item found. */
typedef struct items_t {
    long whole, failed;
    uform_status_t failure; /* the last failed item's status */
    int found_key;          /* some item's key held `wanted` */
} items_t;

/* Reads every item. A shard has at most one item per 1,024 bytes (a member is two blocks), so the
 * loop ends; a gzipped one is bounded by what -max_len lets expand. */
static items_t read_items(uform_dataset_t dataset, const char *wanted) {
    items_t items = {0, 0, UFORM_OK, 0};
    uform_dataset_read_t request = {0};
    request.dataset = dataset;
    for (size_t round = 0; round < 1000000; ++round) {
        uform_status_t status = uform_dataset_read(&request);
        if (status == UFORM_OK && request.done) return items;
        if (status == UFORM_OK) ++items.whole;
        else if (!request.outcome.message[0] || !request.error.message[0]) __builtin_trap(); /* a refusal says why */
        else ++items.failed, items.failure = status;
        if (wanted && request.item.key && strstr(request.item.key, wanted)) items.found_key = 1;
        if (status == UFORM_OUT_OF_MEMORY || status == UFORM_INVALID_ARGUMENT) return ++items.failed, items;
    }
    __builtin_trap(); /* endless */
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

static items_t open_and_read(const uint8_t *data, size_t size, int samples, const char *wanted) {
    items_t none = {0, 1, UFORM_IO, 0};
    const char *path = data_fuzz_write(data, size);
    if (!path) return none;
    uform_dataset_options_t options = {0};
    options.source = UFORM_DATASET_SHARDS;
    options.path = path;
    options.sequential = 1;
    options.max_sample_bytes = 1 << 20;
    uform_dataset_t dataset = NULL;
    uform_outcome_t outcome = {0};
    if (uform_dataset_open(&options, &dataset, NULL, &outcome) != UFORM_OK) {
        if (dataset || !outcome.message[0]) __builtin_trap();
        return none;
    }
    items_t items = read_items(dataset, wanted);
    uform_dataset_free(dataset);
    if (samples) read_samples(path);
    return items;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    open_and_read(data, size, 1, NULL);
    return 0;
}

int replay_accepts(const uint8_t *data, size_t size) {
    items_t items = open_and_read(data, size, 0, NULL);
    return items.whole > 0 && items.failed == 0;
}

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

/* A gzip stream broken in the middle of a member with whole samples before it: 16 samples of 40 KiB
 * of incompressible bytes each (a shard of 640 KiB, ten times libarchive's read block, so it is
 * inflated as it is read, not whole on opening), cut inside the 11th sample's medium. The samples
 * before the cut come whole, then one failed item with UFORM_FORMAT, and nothing after it. */
static int big_gzip_cut_refused(void) {
    enum { SAMPLES = 16, MEDIUM = 40 << 10 };
    tar_buffer_t tar = {0};
    uint8_t *medium = malloc(MEDIUM);
    if (!medium) return 0;
    uint64_t state = 0x5EED;
    char name[64], caption[32];
    for (int sample = 0; sample < SAMPLES; ++sample) {
        for (size_t i = 0; i < MEDIUM; ++i) { /* xorshift64: bytes gzip cannot shrink */
            state ^= state << 13, state ^= state >> 7, state ^= state << 17;
            medium[i] = (uint8_t)(state >> 24);
        }
        snprintf(name, sizeof name, "g/%06d.jpg", sample);
        tar_add(&tar, TAR_USTAR, name, medium, MEDIUM);
        snprintf(name, sizeof name, "g/%06d.txt", sample);
        snprintf(caption, sizeof caption, "sample %d", sample);
        tar_add(&tar, TAR_USTAR, name, caption, strlen(caption));
    }
    free(medium);
    tar_end(&tar);
    if (tar.failed) return free(tar.bytes), 0;
    size_t zipped_size = 0;
    uint8_t *zipped = tar_gzip(tar.bytes, tar.size, &zipped_size);
    free(tar.bytes);
    if (!zipped) return 0;
    /* Each sample is ~41 KiB of tar and as much of gzip: 10.5 samples in lies inside the 11th's medium. */
    size_t cut = zipped_size * 21 / (2 * SAMPLES);
    items_t whole = open_and_read(zipped, zipped_size, 0, NULL);
    items_t broken = open_and_read(zipped, cut, 0, NULL);
    free(zipped);
    int ok = 1;
    if (whole.whole != SAMPLES || whole.failed != 0)
        fprintf(stderr, "the big gzip shard whole: %ld items, %ld failed (want %d, 0)\n", whole.whole, whole.failed, SAMPLES), ok = 0;
    if (broken.whole < 8 || broken.whole > 10 || broken.failed != 1 || broken.failure != UFORM_FORMAT)
        fprintf(stderr, "the big gzip shard cut in its 11th sample: %ld whole items, %ld failed, %s (want 8-10, 1, format)\n",
                broken.whole, broken.failed, uform_status_name(broken.failure)), ok = 0;
    fprintf(stderr, "the big gzip shard (%zu bytes) cut at %zu: %ld whole items, then %ld failed (%s)\n", zipped_size, cut,
            broken.whole, broken.failed, uform_status_name(broken.failure));
    return ok;
}

/* Shards damaged on purpose answer a failed item, UFORM_FORMAT with a message, after the whole
 * samples before the damage: a bad header checksum (the 5th member's), a gzip stream cut inside a
 * member; and the pax and GNU seeds' long names reach the items' keys. Answers 1 when all hold. */
static int damaged_shards_refused(const replay_seed_t *seeds, const char *long_key) {
    int ok = 1;
    uint8_t *copy = malloc(seeds[0].size);
    if (!copy) return 0;
    memcpy(copy, seeds[0].bytes, seeds[0].size);
    size_t header = 0;
    for (int member = 0; member < 4; ++member) /* past four members: a header and one data block each */
        header += 512 + (size_t)(strtoul((const char *)copy + header + 124, NULL, 8) + 511) / 512 * 512;
    copy[header + 148] = copy[header + 148] == '1' ? '2' : '1';
    /* The sample before the damaged header is whole; the one being grouped when it came is not known to be. */
    items_t damaged = open_and_read(copy, seeds[0].size, 0, NULL);
    if (damaged.whole != 1 || damaged.failed != 1 || damaged.failure != UFORM_FORMAT)
        fprintf(stderr, "a bad checksum in the 5th member: %ld whole items, %ld failed, %s (want 1, 1, format)\n", damaged.whole,
                damaged.failed, uform_status_name(damaged.failure)), ok = 0;
    free(copy);
    /* libarchive inflates this small shard whole when it opens it, so the cut shows there: a
     * format error (it was reported as out of memory before, found by this check). */
    items_t cut = open_and_read(seeds[4].bytes, seeds[4].size * 2 / 3, 0, NULL);
    if (cut.failed != 1 || cut.failure != UFORM_FORMAT)
        fprintf(stderr, "a gzip stream cut at 2/3: %ld failed, %s (want 1, format)\n", cut.failed, uform_status_name(cut.failure)), ok = 0;
    if (!big_gzip_cut_refused()) ok = 0;
    for (int seed = 1; seed <= 2; ++seed) {
        items_t named = open_and_read(seeds[seed].bytes, seeds[seed].size, 0, long_key);
        if (!named.found_key) fprintf(stderr, "seed %d: no item is keyed by the %zu-byte name\n", seed, strlen(long_key)), ok = 0;
    }
    return ok;
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
    if (!seeds[4].bytes) return 0;
    return damaged_shards_refused(seeds, long_key) ? 5 : 0;
}
