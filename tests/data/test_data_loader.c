/*
 * Datasets and loaders (uform.h, "Data") on the corpus make_shards.py wrote with Python's tarfile:
 *   - a manifest, plain shards, .tar.gz shards and shards with pax long names give the same samples
 *     in the same order, and the same batches give the same trainer step, bit for bit;
 *   - shuffled, every sample comes once per epoch, in an order fixed by the seed;
 *   - a loader resumed from a cursor continues exactly, across shard and epoch boundaries;
 *   - k partitions read by k members are, end to end, the batches one process reading all k draws;
 *   - bad shards: a member renamed to garbage, a sample without text, an undecodable image and a
 *     truncated tar are each listed with skip_bad and named (shard, key, content) without it; a shard
 *     truncated at 20 random offsets never crashes and always names the shard;
 *   - shard lists: brace ranges with padding, "::" lists, malformed lists refused.
 * Usage: test_data_loader CORPUS (the folder make_shards.py wrote)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "uform/uform.h"

static const char *corpus;
static size_t corpus_samples;

/* CORPUS/relative, and every part of a "::" list prefixed alike. */
static char *path_of(const char *relative) {
    static char paths[8][4096];
    static int next = 0;
    char *path = paths[next++ % 8];
    size_t used = 0;
    for (const char *at = relative;;) {
        const char *separator = strstr(at, "::");
        size_t length = separator ? (size_t)(separator - at) : strlen(at);
        used += (size_t)snprintf(path + used, sizeof paths[0] - used, "%s%s/%.*s", used ? "::" : "", corpus, (int)length, at);
        if (!separator) break;
        at = separator + 2;
    }
    return path;
}

static uform_dataset_t open_dataset(uform_dataset_source_t source, const char *path, uint64_t seed, size_t buffer,
                                    int sequential, size_t partitions, int skip_bad) {
    uform_dataset_options_t options = {0};
    options.source = source, options.path = path, options.seed = seed, options.shuffle_buffer = buffer;
    options.sequential = sequential, options.partitions = partitions, options.skip_bad = skip_bad;
    uform_dataset_t dataset = NULL;
    uform_data_error_t error;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_dataset_open(&options, &dataset, &error, &outcome);
    CHECK_MSG(status == UFORM_OK, "open %s: %s", path, outcome.message);
    return dataset;
}

static uform_trainer_t make_trainer(uint64_t seed) {
    uform_trainer_config_t config = {0};
    config.hidden = 64, config.depth = 1, config.heads = 2, config.mlp = 128, config.embedding = 32;
    config.image_size = 32, config.image_patch = 8, config.modalities = 1u << UFORM_MODALITY_TEXT | 1u << UFORM_MODALITY_IMAGE;
    config.seed = seed, config.warmup_steps = 2;
    uform_trainer_t trainer = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_trainer_init_ram(NULL, &config, &trainer, &outcome);
    CHECK_MSG(status == UFORM_OK, "trainer: %s", outcome.message);
    return trainer;
}

static uform_loader_t open_loader(uform_dataset_t dataset, uform_trainer_t trainer, size_t batch, size_t member,
                                  size_t members, const char *cursor) {
    uform_loader_options_t options = {0};
    options.dataset = dataset, options.trainer = trainer, options.batch = batch;
    options.member = member, options.members = members, options.cursor = cursor, options.ahead = 2;
    uform_loader_t loader = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_loader_open(&options, &loader, &outcome);
    CHECK_MSG(status == UFORM_OK, "loader: %s", outcome.message);
    return loader;
}

/* A run of batches: every pair's caption in order, and a hash of every prepared row. */
typedef struct run_t {
    char **texts;
    size_t count, capacity;
    uint64_t rows_hash;
    size_t batches;
} run_t;

static void run_free(run_t *run) {
    for (size_t i = 0; i < run->count; ++i) free(run->texts[i]);
    free(run->texts);
    memset(run, 0, sizeof *run);
}

static void record(run_t *run, const uform_trainer_step_t *step) {
    for (size_t c = 0; c < step->contents.count; ++c) {
        if (step->modalities[c] != UFORM_MODALITY_TEXT) continue;
        if (run->count == run->capacity) {
            run->capacity = run->capacity ? 2 * run->capacity : 64;
            run->texts = realloc(run->texts, run->capacity * sizeof *run->texts);
        }
        size_t length = step->contents.offsets[c + 1] - step->contents.offsets[c];
        run->texts[run->count++] = strndup((const char *)step->contents.data + step->contents.offsets[c], length);
    }
    const uform_prepared_t *prepared = step->prepared[UFORM_MODALITY_IMAGE];
    if (prepared) {
        const unsigned char *bytes = prepared->rows.data;
        size_t size = prepared->rows.rows * prepared->rows.stride_bytes;
        for (size_t i = 0; i < size; ++i) run->rows_hash = (run->rows_hash ^ bytes[i]) * 1099511628211ull;
    }
    run->batches += 1;
}

/* Draws `batches` batches (fewer when a sequential pass ends); answers the last status. */
static uform_status_t draw(uform_loader_t loader, size_t batches, run_t *run, uform_data_error_t *error) {
    for (size_t b = 0; b < batches; ++b) {
        uform_trainer_step_t step = {0};
        uform_loader_next_t next = {0};
        next.loader = loader, next.step = &step;
        uform_status_t status = uform_loader_next(&next);
        if (error) *error = next.error;
        if (status != UFORM_OK) return status;
        if (next.done) break;
        record(run, &step);
    }
    return UFORM_OK;
}

static int same_runs(const run_t *a, const run_t *b) {
    if (a->count != b->count || a->rows_hash != b->rows_hash) return 0;
    for (size_t i = 0; i < a->count; ++i)
        if (strcmp(a->texts[i], b->texts[i]) != 0) return 0;
    return 1;
}

/* Every source reads the same samples in the same order (sequential). */
static void sources_agree(uform_trainer_t trainer) {
    const char *lists[4] = {"manifest.jsonl", "shards/{000..005}.tar", "gz/{000..005}.tar.gz", "pax/{000..002}.tar::pax/{003..005}.tar"};
    uform_dataset_source_t kinds[4] = {UFORM_DATASET_MANIFEST, UFORM_DATASET_SHARDS, UFORM_DATASET_SHARDS, UFORM_DATASET_SHARDS};
    run_t runs[4];
    memset(runs, 0, sizeof runs);
    for (int k = 0; k < 4; ++k) {
        uform_dataset_t dataset = open_dataset(kinds[k], path_of(lists[k]), 0, 0, 1, 0, 0);
        uform_loader_t loader = open_loader(dataset, trainer, 8, 0, 0, NULL);
        CHECK_STATUS(draw(loader, 100, &runs[k], NULL), UFORM_OK);
        CHECK_MSG(runs[k].count == corpus_samples, "%s: %zu samples of %zu", lists[k], runs[k].count, corpus_samples);
        uform_loader_free(loader);
        uform_dataset_free(dataset);
    }
    for (int k = 1; k < 4; ++k) CHECK_MSG(same_runs(&runs[0], &runs[k]), "%s differs from the manifest", lists[k]);
    /* In stored order: sample i's caption starts "sample i:". */
    for (size_t i = 0; i < runs[1].count; ++i) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "sample %zu:", i);
        CHECK_MSG(strncmp(runs[1].texts[i], prefix, strlen(prefix)) == 0, "item %zu is '%s'", i, runs[1].texts[i]);
    }
    for (int k = 0; k < 4; ++k) run_free(&runs[k]);
}

/* Shuffled: every sample once per epoch, fixed by the seed. */
static void epochs(uform_trainer_t trainer, uform_dataset_source_t source, const char *list) {
    run_t first = {0}, again = {0}, other = {0};
    uint64_t seeds[3] = {5, 5, 6};
    run_t *runs[3] = {&first, &again, &other};
    for (int r = 0; r < 3; ++r) {
        uform_dataset_t dataset = open_dataset(source, path_of(list), seeds[r], 16, 0, 0, 0);
        uform_loader_t loader = open_loader(dataset, trainer, 8, 0, 0, NULL);
        CHECK_STATUS(draw(loader, 2 * corpus_samples / 8, runs[r], NULL), UFORM_OK);
        uform_loader_stats_t stats;
        uform_loader_stats(loader, &stats, NULL, 0, NULL);
        CHECK_EQ_INT(stats.batches, 2 * corpus_samples / 8);
        uform_loader_free(loader);
        uform_dataset_free(dataset);
    }
    for (int epoch = 0; epoch < 2; ++epoch) {
        unsigned char *seen = calloc(corpus_samples, 1);
        for (size_t i = 0; i < corpus_samples; ++i) {
            size_t index = (size_t)strtoull(first.texts[epoch * corpus_samples + i] + 7, NULL, 10);
            CHECK_MSG(index < corpus_samples && !seen[index], "%s epoch %d: sample %zu again", list, epoch, index);
            if (index < corpus_samples) seen[index] = 1;
        }
        free(seen);
    }
    int reordered = 0, shuffled = 0;
    for (size_t i = 0; i < corpus_samples; ++i) {
        reordered |= strcmp(first.texts[i], first.texts[corpus_samples + i]) != 0;
        shuffled |= strtoull(first.texts[i] + 7, NULL, 10) != i;
    }
    CHECK_MSG(reordered && shuffled, "%s: the epochs are not reshuffled", list);
    CHECK_MSG(same_runs(&first, &again), "%s: the same seed gave another order", list);
    CHECK_MSG(!same_runs(&first, &other), "%s: another seed gave the same order", list);
    run_free(&first), run_free(&again), run_free(&other);
}

/* The same batches give the same step, bit for bit, whatever the source. */
static void same_steps(void) {
    const char *lists[2] = {"manifest.jsonl", "gz/{000..005}.tar.gz"};
    uform_dataset_source_t kinds[2] = {UFORM_DATASET_MANIFEST, UFORM_DATASET_SHARDS};
    double losses[2][3], norms[2][3];
    unsigned char *embeddings[2][3];
    size_t sizes[2][3];
    for (int k = 0; k < 2; ++k) {
        uform_trainer_t trainer = make_trainer(11);
        uform_dataset_t dataset = open_dataset(kinds[k], path_of(lists[k]), 0, 0, 1, 0, 0);
        uform_loader_t loader = open_loader(dataset, trainer, 8, 0, 0, NULL);
        uform_arena_t arena = NULL;
        uform_arena_for_host(&arena, NULL);
        for (int s = 0; s < 3; ++s) {
            uform_trainer_step_t step = {0};
            step.trainer = trainer, step.arena = arena;
            uform_loader_next_t next = {0};
            next.loader = loader, next.step = &step;
            CHECK_STATUS(uform_loader_next(&next), UFORM_OK);
            uform_status_t status = uform_trainer_step(&step);
            CHECK_MSG(status == UFORM_OK, "step: %s", step.outcome.message);
            losses[k][s] = step.loss, norms[k][s] = step.grad_norm;
            sizes[k][s] = step.bag_embeddings.rows * step.bag_embeddings.stride_bytes;
            embeddings[k][s] = malloc(sizes[k][s] + 1);
            memcpy(embeddings[k][s], step.bag_embeddings.data, sizes[k][s]);
        }
        uform_arena_free(arena);
        uform_loader_free(loader);
        uform_dataset_free(dataset);
        uform_trainer_free(trainer);
    }
    for (int s = 0; s < 3; ++s) {
        CHECK_MSG(memcmp(&losses[0][s], &losses[1][s], sizeof(double)) == 0, "step %d loss %.17g vs %.17g", s, losses[0][s], losses[1][s]);
        CHECK_MSG(memcmp(&norms[0][s], &norms[1][s], sizeof(double)) == 0, "step %d norm %.17g vs %.17g", s, norms[0][s], norms[1][s]);
        CHECK(sizes[0][s] == sizes[1][s] && memcmp(embeddings[0][s], embeddings[1][s], sizes[0][s]) == 0);
        free(embeddings[0][s]), free(embeddings[1][s]);
    }
}

/* A loader resumed from a cursor continues exactly (across shards and the epoch's end). */
static void resume(uform_trainer_t trainer, uform_dataset_source_t source, const char *list, size_t partitions, size_t members) {
    for (size_t member = 0; member < members; ++member) {
        run_t whole = {0}, split = {0};
        uform_dataset_t dataset = open_dataset(source, path_of(list), 7, 5, 0, partitions, 0);
        uform_loader_t loader = open_loader(dataset, trainer, 8, member, members, NULL);
        CHECK_STATUS(draw(loader, 9, &whole, NULL), UFORM_OK);
        uform_loader_free(loader);
        uform_dataset_free(dataset);

        dataset = open_dataset(source, path_of(list), 7, 5, 0, partitions, 0);
        loader = open_loader(dataset, trainer, 8, member, members, NULL);
        CHECK_STATUS(draw(loader, 4, &split, NULL), UFORM_OK);
        size_t length = 0;
        uform_outcome_t outcome = {0};
        CHECK_STATUS(uform_loader_cursor(loader, NULL, 0, &length, &outcome), UFORM_OK);
        char *cursor = malloc(length + 1);
        CHECK_STATUS(uform_loader_cursor(loader, cursor, length + 1, &length, &outcome), UFORM_OK);
        CHECK(strlen(cursor) == length);
        uform_loader_free(loader);
        uform_dataset_free(dataset);

        dataset = open_dataset(source, path_of(list), 7, 5, 0, partitions, 0);
        loader = open_loader(dataset, trainer, 8, member, members, cursor);
        CHECK_STATUS(draw(loader, 5, &split, NULL), UFORM_OK);
        uform_loader_free(loader);
        uform_dataset_free(dataset);
        CHECK_MSG(same_runs(&whole, &split), "%s, member %zu of %zu: 9 batches differ from 4 + resume + 5", list, member, members);

        /* A cursor of another seed or batch is refused, naming why. */
        dataset = open_dataset(source, path_of(list), 8, 5, 0, partitions, 0);
        uform_loader_options_t options = {0};
        options.dataset = dataset, options.trainer = trainer, options.batch = 8, options.member = member, options.members = members;
        options.cursor = cursor;
        uform_loader_t refused = NULL;
        CHECK_STATUS(uform_loader_open(&options, &refused, &outcome), UFORM_CONFIG_MISMATCH);
        CHECK(refused == NULL && strstr(outcome.message, "seed"));
        uform_dataset_free(dataset);
        free(cursor);
        run_free(&whole), run_free(&split);
    }
}

/* k members reading their partitions give, end to end, the batches one process reading all k draws. */
static void partitions(uform_trainer_t trainer, const char *list) {
    run_t one = {0}, members[2] = {{0}, {0}};
    uform_dataset_t dataset = open_dataset(UFORM_DATASET_SHARDS, path_of(list), 3, 6, 0, 2, 0);
    uform_loader_t loader = open_loader(dataset, trainer, 8, 0, 1, NULL);
    CHECK_STATUS(draw(loader, 8, &one, NULL), UFORM_OK);
    uform_loader_free(loader);
    uform_dataset_free(dataset);
    for (size_t m = 0; m < 2; ++m) {
        dataset = open_dataset(UFORM_DATASET_SHARDS, path_of(list), 3, 6, 0, 2, 0);
        loader = open_loader(dataset, trainer, 8, m, 2, NULL);
        CHECK_STATUS(draw(loader, 8, &members[m], NULL), UFORM_OK);
        uform_loader_free(loader);
        uform_dataset_free(dataset);
    }
    CHECK_EQ_INT(one.count, 64);
    CHECK_EQ_INT(members[0].count + members[1].count, 64);
    int same = one.count == 64 && members[0].count == 32 && members[1].count == 32;
    for (size_t b = 0; same && b < 8; ++b)
        for (size_t i = 0; i < 8; ++i) {
            const char *expected = i < 4 ? members[0].texts[4 * b + i] : members[1].texts[4 * b + i - 4];
            same &= strcmp(one.texts[8 * b + i], expected) == 0;
        }
    CHECK_MSG(same, "%s: the members' shares end to end differ from the one process's batches", list);
    run_free(&one), run_free(&members[0]), run_free(&members[1]);
}

/* ---- bad data ---- */

static int key_of(const char *text) { return (int)strtol(text, NULL, 10); }

static void bad_shards(uform_trainer_t trainer) {
    /* With skip_bad: every fault listed, the rest read. */
    uform_dataset_t dataset = open_dataset(UFORM_DATASET_SHARDS, path_of("bad/{000..003}.tar"), 0, 0, 1, 0, 1);
    uform_loader_t loader = open_loader(dataset, trainer, 4, 0, 0, NULL);
    run_t run = {0};
    CHECK_STATUS(draw(loader, 100, &run, NULL), UFORM_OK);
    uform_data_error_t errors[16];
    size_t count = 0;
    uform_loader_stats_t stats;
    uform_loader_stats(loader, &stats, errors, 16, &count);
    CHECK_MSG(count == 4 && stats.skipped == 4, "%zu bad samples listed (skipped %zu), expected 4", count, stats.skipped);
    int found[4] = {0};
    for (size_t i = 0; i < count && i < 16; ++i) {
        CHECK(errors[i].status == UFORM_FORMAT);
        if (errors[i].shard < 4) found[errors[i].shard] = 1;
        if (errors[i].shard < 3) CHECK_MSG(key_of(errors[i].key) == (int)(errors[i].shard * 8 + 2), "shard %zu names '%s'", errors[i].shard, errors[i].key);
        if (errors[i].shard == 2) CHECK(errors[i].content != SIZE_MAX); /* found decoding the batch */
        CHECK(strstr(errors[i].source, "bad/") != NULL && errors[i].message[0]);
    }
    CHECK(found[0] && found[1] && found[2] && found[3]);
    CHECK_MSG(run.count < 32 && run.count >= 3 * 7 + 1, "%zu good samples read", run.count);
    uform_loader_free(loader);
    uform_dataset_free(dataset);
    run_free(&run);

    /* Without: each stops the run, naming the shard and the sample. */
    const char *names[4] = {"bad/000.tar", "bad/001.tar", "bad/002.tar", "bad/003.tar"};
    const char *reasons[4] = {"no medium", "no text", "", "truncated"};
    for (int k = 0; k < 4; ++k) {
        dataset = open_dataset(UFORM_DATASET_SHARDS, path_of(names[k]), 0, 0, 1, 0, 0);
        loader = open_loader(dataset, trainer, 4, 0, 0, NULL);
        uform_data_error_t error;
        run_t partial = {0};
        uform_status_t status = draw(loader, 100, &partial, &error);
        CHECK_MSG(status == UFORM_FORMAT, "%s: status %s", names[k], uform_status_name(status));
        CHECK_MSG(error.shard == 0 && strstr(error.source, names[k]), "%s: error names shard %zu '%s'", names[k], error.shard, error.source);
        if (k < 3) CHECK_MSG(key_of(error.key) == k * 8 + 2, "%s: error names sample '%s'", names[k], error.key);
        if (reasons[k][0]) CHECK_MSG(strstr(error.message, reasons[k]) != NULL, "%s: '%s'", names[k], error.message);
        /* The failure stays the answer. */
        uform_trainer_step_t step = {0};
        uform_loader_next_t next = {0};
        next.loader = loader, next.step = &step;
        CHECK_STATUS(uform_loader_next(&next), UFORM_FORMAT);
        uform_loader_free(loader);
        uform_dataset_free(dataset);
        run_free(&partial);
    }
}

/* A shard cut at 20 random offsets: the samples before the cut are read, the shard is named. */
static void truncations(uform_trainer_t trainer, const char *work) {
    FILE *file = fopen(path_of("shards/000.tar"), "rb");
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    unsigned char *bytes = malloc((size_t)size);
    CHECK(fread(bytes, 1, (size_t)size, file) == (size_t)size);
    fclose(file);
    /* Cuts land before the last member's last byte (Python pads a tar with zeros to 10 KiB: a cut
     * there loses nothing). */
    long end = size;
    while (end > 0 && bytes[end - 1] == 0) --end;
    uint64_t state = 20250101;
    char cut[4200];
    snprintf(cut, sizeof cut, "%s/cut.tar", work);
    for (int trial = 0; trial < 20; ++trial) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        long offset = 1 + (long)((state >> 33) % (uint64_t)(end - 2));
        if (offset % 512 == 0) offset += 7; /* inside a block: the cut must show */
        FILE *out = fopen(cut, "wb");
        fwrite(bytes, 1, (size_t)offset, out);
        fclose(out);
        for (int skip = 0; skip < 2; ++skip) {
            uform_dataset_t dataset = open_dataset(UFORM_DATASET_SHARDS, cut, 0, 0, 1, 0, skip);
            uform_loader_t loader = open_loader(dataset, trainer, 3, 0, 0, NULL);
            uform_data_error_t error;
            run_t run = {0};
            uform_status_t status = draw(loader, 100, &run, &error);
            uform_loader_stats_t stats;
            uform_loader_stats(loader, &stats, NULL, 0, NULL);
            if (skip) CHECK_MSG(status == UFORM_OK && stats.skipped == 1, "cut at %ld: %s, %zu skipped", offset, uform_status_name(status), stats.skipped);
            else CHECK_MSG(status == UFORM_FORMAT && error.shard == 0 && strstr(error.source, "cut.tar"), "cut at %ld: %s (shard %zu)", offset,
                           uform_status_name(status), error.shard);
            CHECK_MSG(run.count < 8, "cut at %ld: %zu samples", offset, run.count);
            uform_loader_free(loader);
            uform_dataset_free(dataset);
            run_free(&run);
        }
        /* Read item by item, the cut is one failed item and the reading ends after it. */
        uform_dataset_t dataset = open_dataset(UFORM_DATASET_SHARDS, cut, 0, 0, 1, 0, 0);
        size_t good = 0, bad = 0;
        for (int i = 0; i < 100; ++i) {
            uform_dataset_read_t read = {0};
            read.dataset = dataset;
            uform_status_t status = uform_dataset_read(&read);
            if (read.done) break;
            if (status == UFORM_OK) good += 1;
            else {
                bad += 1;
                CHECK(read.error.shard == 0);
            }
        }
        CHECK_MSG(bad == 1 && good < 8, "cut at %ld: %zu items, %zu failed", offset, good, bad);
        uform_dataset_free(dataset);
    }
    remove(cut);
    free(bytes);
}

/* Items in stored order: keys, modalities, captions. */
static void items(void) {
    uform_dataset_t dataset = open_dataset(UFORM_DATASET_SHARDS, path_of("pax/{000..005}.tar"), 0, 0, 1, 0, 0);
    size_t count = 0;
    for (;;) {
        uform_dataset_read_t read = {0};
        read.dataset = dataset;
        read.skip = count == 0 ? 5 : 0; /* passed over without reading their bytes */
        CHECK_STATUS(uform_dataset_read(&read), UFORM_OK);
        if (read.done) break;
        size_t index = count + 5;
        char prefix[32];
        snprintf(prefix, sizeof prefix, "sample %zu:", index);
        CHECK_MSG(read.item.modality == UFORM_MODALITY_IMAGE && read.item.size > 100 && read.item.ordinal == index, "item %zu", index);
        CHECK_MSG(read.item.text && strncmp(read.item.text, prefix, strlen(prefix)) == 0, "item %zu caption", index);
        CHECK_MSG(strstr(read.item.key, ".tar:deep/xxx") != NULL, "item %zu key %.*s", index, (int)read.item.key_length, read.item.key);
        count += 1;
    }
    CHECK_EQ_INT(count, corpus_samples - 5);
    uform_dataset_free(dataset);
}

static void shard_lists(void) {
    const char *bad[] = {"shards/{1..}.tar", "shards/{000..005.tar", "shards/000..005}.tar", "shards/{a..b}.tar", "{{1,2}}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        uform_dataset_options_t options = {0};
        options.source = UFORM_DATASET_SHARDS, options.path = path_of(bad[i]);
        uform_dataset_t dataset = NULL;
        uform_outcome_t outcome = {0};
        CHECK_MSG(uform_dataset_open(&options, &dataset, NULL, &outcome) == UFORM_INVALID_ARGUMENT && !dataset, "'%s': %s", bad[i],
                  outcome.message);
    }
    /* Padding kept, ranges descending, alternatives, "::" lists, and a missing shard named. */
    const char *good[] = {"shards/{000..005}.tar", "shards/{005..000}.tar", "shards/00{0,1,2,3,4,5}.tar", "shards/{000..002}.tar::shards/{003..005}.tar"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; ++i) {
        uform_dataset_t dataset = open_dataset(UFORM_DATASET_SHARDS, path_of(good[i]), 0, 0, 1, 0, 0);
        uform_dataset_description_t description;
        uform_dataset_describe(dataset, &description);
        CHECK_MSG(description.shards == 6, "'%s': %zu shards", good[i], description.shards);
        uform_dataset_free(dataset);
    }
    uform_dataset_options_t options = {0};
    options.source = UFORM_DATASET_SHARDS, options.path = path_of("shards/{000..007}.tar");
    uform_dataset_t dataset = NULL;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform_dataset_open(&options, &dataset, NULL, &outcome), UFORM_IO);
    CHECK(strstr(outcome.message, "006.tar") != NULL);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_data_loader CORPUS WORK\n");
        return 2;
    }
    corpus = argv[1];
    FILE *expected = fopen(path_of("manifest.jsonl"), "r");
    if (!expected) {
        fprintf(stderr, "no corpus in %s (make_shards.py writes it)\n", corpus);
        return 1;
    }
    for (int c; (c = fgetc(expected)) != EOF;) corpus_samples += c == '\n';
    fclose(expected);
    uform_trainer_t trainer = make_trainer(1);
    sources_agree(trainer);
    epochs(trainer, UFORM_DATASET_SHARDS, "shards/{000..005}.tar");
    epochs(trainer, UFORM_DATASET_MANIFEST, "manifest.jsonl");
    same_steps();
    resume(trainer, UFORM_DATASET_SHARDS, "shards/{000..005}.tar", 0, 1);
    resume(trainer, UFORM_DATASET_SHARDS, "gz/{000..005}.tar.gz", 2, 2);
    resume(trainer, UFORM_DATASET_MANIFEST, "manifest.jsonl", 0, 1);
    partitions(trainer, "shards/{000..005}.tar");
    partitions(trainer, "shards/{000..000}.tar"); /* fewer shards than partitions: by sample */
    bad_shards(trainer);
    truncations(trainer, argv[2]);
    items();
    shard_lists();
    uform_trainer_free(trainer);
    return check_finish();
}
