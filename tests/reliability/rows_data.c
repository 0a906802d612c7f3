/*
 * The Data section's rows of the sweep: datasets (a manifest, a folder, WebDataset shards) opened
 * and read item by item, a loader over shards drawing batches across an epoch with its cursor and
 * stats and a second loader resumed from that cursor, recall, a held-out evaluation, and the index
 * pipeline over a manifest. Their files (a manifest naming a picture of the media fixtures, a
 * folder, a shard written in the ustar layout by hand: linking libarchive here would map libstdc++ into
 * the sweep, which the mesh_load row must load cold) are made in a private folder by a row's first
 * (unarmed) run and kept until the sweep exits; the trainer the loader rows use is kept the same
 * way, so every armed run sweeps the data calls alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rows.h"

static char folder[256];
static pid_t owner;

static void remove_folder(void) {
    if (!folder[0] || getpid() != owner) return; /* children of isolated rows leave it to the parent */
    const char *names[] = {"manifest.jsonl", "shard.tar", "pictures/1.jpg", "pictures/1.txt", "pictures/2.png", "pictures/2.txt",
                           "baseline.jpg"};
    char path[512];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) snprintf(path, sizeof path, "%s/%s", folder, names[i]), unlink(path);
    snprintf(path, sizeof path, "%s/pictures", folder);
    rmdir(path);
    rmdir(folder);
}

static unsigned char *read_all(const char *path, size_t *size) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    fseek(file, 0, SEEK_END);
    long length = ftell(file);
    fseek(file, 0, SEEK_SET);
    unsigned char *bytes = length > 0 ? malloc((size_t)length) : NULL;
    if (bytes && fread(bytes, 1, (size_t)length, file) != (size_t)length) free(bytes), bytes = NULL;
    fclose(file);
    *size = (size_t)length;
    return bytes;
}

static int write_all(const char *path, const void *bytes, size_t size) {
    FILE *file = fopen(path, "wb");
    int ok = file && fwrite(bytes, 1, size, file) == size;
    if (file) ok &= fclose(file) == 0;
    return ok ? 0 : -1;
}

/* One ustar member: a 512-byte header (name, mode, owner, size and time in octal, checksum, type
 * '0', magic "ustar" "00"), the data, zeros to the next 512 bytes. */
static int add_member(FILE *file, const char *name, const void *bytes, size_t size) {
    unsigned char header[512];
    memset(header, 0, sizeof header);
    snprintf((char *)header, 100, "%s", name);
    snprintf((char *)header + 100, 8, "%07o", 0644);
    snprintf((char *)header + 108, 8, "%07o", 0);
    snprintf((char *)header + 116, 8, "%07o", 0);
    snprintf((char *)header + 124, 12, "%011lo", (unsigned long)size);
    snprintf((char *)header + 136, 12, "%011o", 0);
    header[156] = '0';
    memcpy(header + 257, "ustar", 6), memcpy(header + 263, "00", 2);
    memset(header + 148, ' ', 8);
    unsigned sum = 0;
    for (size_t i = 0; i < 512; ++i) sum += header[i];
    snprintf((char *)header + 148, 8, "%06o", sum);
    static const unsigned char zeros[512];
    return fwrite(header, 1, 512, file) == 512 && fwrite(bytes, 1, size, file) == size &&
                   fwrite(zeros, 1, (512 - size % 512) % 512, file) == (512 - size % 512) % 512
               ? 0
               : -1;
}

/* The shard: samples 000000..000005, alternately the JPEG and the PNG of the fixtures, captioned. */
static int write_shard(const char *path, const unsigned char *jpeg, size_t jpeg_size, const unsigned char *png, size_t png_size) {
    FILE *file = fopen(path, "wb");
    if (!file) return -1;
    int ok = 1;
    for (int i = 0; ok && i < 6; ++i) {
        char name[32], caption[64];
        snprintf(caption, sizeof caption, "picture %d of a sweep", i % 4);
        snprintf(name, sizeof name, "%06d.%s", i, i % 2 ? "png" : "jpg");
        ok = add_member(file, name, i % 2 ? png : jpeg, i % 2 ? png_size : jpeg_size) == 0;
        snprintf(name, sizeof name, "%06d.txt", i);
        ok = ok && add_member(file, name, caption, strlen(caption)) == 0;
    }
    static const unsigned char end[1024];
    ok = ok && fwrite(end, 1, sizeof end, file) == sizeof end;
    return fclose(file) == 0 && ok ? 0 : -1;
}

/* The files, made once; answers the folder or NULL. */
static const char *data_folder(sweep_fixture_t *fixture) {
    if (folder[0]) return folder;
    snprintf(folder, sizeof folder, "/tmp/uform_sweep_data_XXXXXX");
    if (!mkdtemp(folder)) return folder[0] = 0, NULL;
    owner = getpid();
    atexit(remove_folder);
    char path[512];
    size_t jpeg_size = 0, png_size = 0;
    snprintf(path, sizeof path, "%s/baseline.jpg", fixture->fixtures);
    unsigned char *jpeg = read_all(path, &jpeg_size);
    snprintf(path, sizeof path, "%s/grey.png", fixture->fixtures);
    unsigned char *png = read_all(path, &png_size);
    int ok = jpeg && png;
    snprintf(path, sizeof path, "%s/baseline.jpg", folder);
    ok = ok && write_all(path, jpeg, jpeg_size) == 0;
    static const char manifest[] = "{\"text\": \"a picture\", \"image\": \"baseline.jpg\"}\n"
                                   "{\"text\": \"is it a picture? \", \"choices\": \"yn\", \"target\": \"y\"}\n"
                                   "{\"text\": \"another picture\", \"image\": \"baseline.jpg\"}\n"
                                   "{\"text\": \"a caption to index\", \"id\": \"caption\"}\n";
    snprintf(path, sizeof path, "%s/manifest.jsonl", folder);
    ok = ok && write_all(path, manifest, sizeof manifest - 1) == 0;
    snprintf(path, sizeof path, "%s/pictures", folder);
    ok = ok && mkdir(path, 0755) == 0;
    snprintf(path, sizeof path, "%s/pictures/1.jpg", folder);
    ok = ok && write_all(path, jpeg, jpeg_size) == 0;
    snprintf(path, sizeof path, "%s/pictures/1.txt", folder);
    ok = ok && write_all(path, "one", 3) == 0;
    snprintf(path, sizeof path, "%s/pictures/2.png", folder);
    ok = ok && write_all(path, png, png_size) == 0;
    snprintf(path, sizeof path, "%s/pictures/2.txt", folder);
    ok = ok && write_all(path, "two", 3) == 0;
    snprintf(path, sizeof path, "%s/shard.tar", folder);
    ok = ok && write_shard(path, jpeg, jpeg_size, png, png_size) == 0;
    free(jpeg), free(png);
    return ok ? folder : NULL;
}

static uform_dataset_t open_dataset(sweep_fixture_t *fixture, uform_dataset_source_t source, const char *name, int sequential,
                                    sweep_answer_t *answer) {
    const char *where = data_folder(fixture);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", where ? where : "/nonexistent", name);
    uform_dataset_options_t options;
    memset(&options, 0, sizeof options);
    options.source = source, options.path = path, options.sequential = sequential, options.seed = 3, options.shuffle_buffer = 4;
    uform_dataset_t dataset = NULL;
    uform_data_error_t error;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_dataset_open(&options, &dataset, &error, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) {
        uform_dataset_description_t description;
        uform_dataset_describe(dataset, &description);
        answer->digest = sweep_digest(answer->digest, &description.samples, sizeof description.samples);
    }
    return dataset;
}

/* Every item: a failed read answers its status; the keys and sizes go into the digest. */
static void read_items(uform_dataset_t dataset, sweep_answer_t *answer) {
    for (int i = 0; dataset && i < 32; ++i) {
        uform_dataset_read_t read;
        memset(&read, 0, sizeof read);
        read.dataset = dataset;
        uform_status_t status = uform_dataset_read(&read);
        if (read.done) break;
        if (status != UFORM_OK) {
            sweep_answer_status(answer, status, &read.outcome);
            if (status == UFORM_OUT_OF_MEMORY) break;
            continue;
        }
        answer->digest = sweep_digest(answer->digest, read.item.key, read.item.key_length);
        answer->digest = sweep_digest(answer->digest, &read.item.size, sizeof read.item.size);
    }
}

void sweep_run_data_manifest(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform_dataset_t dataset = open_dataset(fixture, UFORM_DATASET_MANIFEST, "manifest.jsonl", 1, answer);
    read_items(dataset, answer);
    uform_dataset_free(dataset);
}

void sweep_run_data_folder(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform_dataset_t dataset = open_dataset(fixture, UFORM_DATASET_FOLDER, "pictures", 1, answer);
    read_items(dataset, answer);
    uform_dataset_free(dataset);
}

void sweep_run_data_shards(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform_dataset_t dataset = open_dataset(fixture, UFORM_DATASET_SHARDS, "{shard,shard}.tar", 1, answer);
    read_items(dataset, answer);
    uform_dataset_free(dataset);
}

/* A trainer of text and 32x32 images, made once (unarmed) and kept. */
static uform_trainer_t kept_trainer(void) {
    static uform_trainer_t trainer;
    if (trainer) return trainer;
    uform_trainer_config_t config;
    memset(&config, 0, sizeof config);
    config.hidden = 32, config.depth = 1, config.heads = 2, config.mlp = 64, config.embedding = 16, config.text_bytes = 16;
    config.image_size = 32, config.image_patch = 16, config.seed = 1;
    config.modalities = 1u << UFORM_MODALITY_TEXT | 1u << UFORM_MODALITY_IMAGE;
    uform_trainer_init_ram(NULL, &config, &trainer, NULL);
    return trainer;
}

static uform_status_t draw(uform_loader_t loader, int batches, sweep_answer_t *answer) {
    for (int b = 0; b < batches; ++b) {
        uform_trainer_step_t step;
        memset(&step, 0, sizeof step);
        uform_loader_next_t next;
        memset(&next, 0, sizeof next);
        next.loader = loader, next.step = &step;
        uform_status_t status = uform_loader_next(&next);
        if (status != UFORM_OK) {
            sweep_answer_status(answer, status, &next.outcome);
            return status;
        }
        answer->digest = sweep_digest(answer->digest, step.contents.data, step.contents.offsets[step.contents.count]);
        if (step.prepared[UFORM_MODALITY_IMAGE]) answer->digest = sweep_digest_matrix(answer->digest, &step.prepared[UFORM_MODALITY_IMAGE]->rows);
    }
    return UFORM_OK;
}

void sweep_run_data_loader(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform_trainer_t trainer = kept_trainer();
    uform_dataset_t dataset = open_dataset(fixture, UFORM_DATASET_SHARDS, "{shard,shard}.tar", 0, answer);
    uform_loader_options_t options;
    memset(&options, 0, sizeof options);
    options.dataset = dataset, options.trainer = trainer, options.batch = 4, options.ahead = 1;
    uform_loader_t loader = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = dataset ? uform_loader_open(&options, &loader, &outcome) : UFORM_OK;
    if (dataset) sweep_answer_status(answer, status, &outcome);
    char cursor[16384] = "";
    if (loader && draw(loader, 4, answer) == UFORM_OK) { /* 16 samples of 12: past the epoch's end */
        size_t length = 0;
        status = uform_loader_cursor(loader, cursor, sizeof cursor, &length, &outcome);
        sweep_answer_status(answer, status, &outcome);
        uform_loader_stats_t stats;
        uform_data_error_t errors[4];
        size_t count = 0;
        uform_loader_stats(loader, &stats, errors, 4, &count);
        answer->digest = sweep_digest(answer->digest, &stats.batches, sizeof stats.batches);
    }
    uform_loader_free(loader);
    loader = NULL;
    if (cursor[0] && answer->ok) { /* a loader resumed from the cursor */
        options.cursor = cursor;
        status = uform_loader_open(&options, &loader, &outcome);
        sweep_answer_status(answer, status, &outcome);
        if (loader) draw(loader, 1, answer);
        uform_loader_free(loader);
    }
    uform_dataset_free(dataset);
}

void sweep_run_data_recall(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    (void)fixture;
    static const float rows[4][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0.6f, 0.8f, 0}};
    static const uint64_t labels[4] = {0, 1, 2, 1};
    static const size_t ks[2] = {1, 2};
    uform_recall_t recall;
    memset(&recall, 0, sizeof recall);
    recall.queries = &rows[0][0], recall.queries_count = 4, recall.columns = 3;
    recall.candidates = &rows[0][0], recall.candidates_count = 4;
    recall.query_labels = labels, recall.candidate_labels = labels, recall.ks = ks, recall.ks_count = 2;
    uform_status_t status = uform_recall(&recall);
    sweep_answer_status(answer, status, &recall.outcome);
    if (status == UFORM_OK) answer->digest = sweep_digest(0, recall.recall, 2 * sizeof(double));
    /* The schedule and the best compute allocate nothing: a row that calls them shows it. */
    double rate = uform_trainer_schedule(kept_trainer(), 1.5, 10);
    uform_compute_t compute = uform_compute_best(UFORM_CPU_CLASS_SERIAL);
    answer->digest = sweep_digest(answer->digest, &rate, sizeof rate);
    answer->digest = sweep_digest(answer->digest, &compute, sizeof compute);
}

void sweep_run_data_evaluate(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform_dataset_t dataset = open_dataset(fixture, UFORM_DATASET_MANIFEST, "manifest.jsonl", 1, answer);
    if (!dataset) return;
    uform_evaluate_t evaluate;
    memset(&evaluate, 0, sizeof evaluate);
    evaluate.model = fixture->model, evaluate.dataset = dataset, evaluate.arena = fixture->arena;
    uform_status_t status = uform_evaluate(&evaluate);
    sweep_answer_status(answer, status, &evaluate.outcome);
    if (status == UFORM_OK) answer->digest = sweep_digest(answer->digest, &evaluate.results[1], sizeof evaluate.results[1]);
    uform_dataset_free(dataset);
}

void sweep_run_data_index_build(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform_dataset_t dataset = open_dataset(fixture, UFORM_DATASET_MANIFEST, "manifest.jsonl", 1, answer);
    if (!dataset) return;
    char out[512], errors[560];
    snprintf(out, sizeof out, "%s/built.index", fixture->scratch);
    snprintf(errors, sizeof errors, "%s.errors.jsonl", out);
    uform_index_build_t build;
    memset(&build, 0, sizeof build);
    build.model = fixture->model, build.datasets = &dataset, build.dataset_count = 1, build.out = out, build.checkpoint = 2;
    uform_status_t status = uform_index_build(&build);
    sweep_answer_status(answer, status, &build.outcome);
    if (status == UFORM_OK) answer->digest = sweep_digest(answer->digest, &build.indexed, sizeof build.indexed);
    unlink(out), unlink(errors);
    uform_dataset_free(dataset);
}

/* uform_index_build over a mesh of one with `ann` (no collectives module; the same agreement,
 * shares, gather, write and members' structure build as with more members): the manifest's items,
 * then IVF2,Flat over the rows this member encoded, one FAISS thread, its lists on disk (the
 * members' rounds of batches, ann_members.c's stream_parts; index_ann_build_members sweeps the
 * in-memory merge); the three files removed. */
void sweep_run_data_index_build_members(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform_dataset_t dataset = open_dataset(fixture, UFORM_DATASET_MANIFEST, "manifest.jsonl", 1, answer);
    if (!dataset) return;
    char out[512], errors[560], structure[512], lists[512];
    snprintf(out, sizeof out, "%s/members.index", fixture->scratch);
    snprintf(errors, sizeof errors, "%s.errors.jsonl", out);
    snprintf(structure, sizeof structure, "%s/members.faiss", fixture->scratch);
    snprintf(lists, sizeof lists, "%s/members.ivfdata", fixture->scratch);
    uform_mesh_options_t mesh_options;
    memset(&mesh_options, 0, sizeof mesh_options);
    mesh_options.host_domain_count = 1;
    uform_mesh_t mesh = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_mesh_bootstrap(NULL, &mesh_options, &mesh, &outcome);
    if (status != UFORM_OK) sweep_answer_status(answer, status, &outcome);
    uform_index_ann_options_t ann = {"IVF2,Flat", 0, 1, 1};
    uform_index_build_t build;
    memset(&build, 0, sizeof build);
    build.model = fixture->model, build.datasets = &dataset, build.dataset_count = 1, build.out = out;
    build.mesh = mesh, build.ann = &ann, build.ann_path = structure;
    if (status == UFORM_OK) {
        status = uform_index_build(&build);
        sweep_answer_status(answer, status, &build.outcome);
    }
    if (status == UFORM_OK) {
        struct stat facts; /* stat allocates nothing: the digest must not depend on the failing allocator */
        long long size[2] = {stat(structure, &facts) == 0 ? (long long)facts.st_size : -1,
                             stat(lists, &facts) == 0 ? (long long)facts.st_size : -1};
        answer->digest = sweep_digest(answer->digest, &build.indexed, sizeof build.indexed);
        answer->digest = sweep_digest(answer->digest, size, sizeof size);
    }
    uform_mesh_free(mesh);
    unlink(out), unlink(errors), unlink(structure), unlink(lists);
    uform_dataset_free(dataset);
}

/* The training loop: a fresh trainer (the kept one must not move), two steps over the folder's two
 * pictures with a save after each and an evaluation at the end; the loss and the recall go into the
 * digest. */
void sweep_run_trainer_fit(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform_dataset_t dataset = open_dataset(fixture, UFORM_DATASET_FOLDER, "pictures", 0, answer);
    uform_dataset_t heldout = dataset ? open_dataset(fixture, UFORM_DATASET_FOLDER, "pictures", 1, answer) : NULL;
    uform_trainer_config_t config;
    memset(&config, 0, sizeof config);
    config.hidden = 32, config.depth = 1, config.heads = 2, config.mlp = 64, config.embedding = 16, config.text_bytes = 16;
    config.image_size = 32, config.image_patch = 16, config.seed = 1;
    config.modalities = 1u << UFORM_MODALITY_TEXT | 1u << UFORM_MODALITY_IMAGE;
    uform_trainer_t trainer = NULL;
    uform_outcome_t outcome = {0};
    if (heldout) sweep_answer_status(answer, uform_trainer_init_ram(NULL, &config, &trainer, &outcome), &outcome);
    if (trainer) {
        char out[512];
        snprintf(out, sizeof out, "%s/fit.safetensors", fixture->scratch);
        uform_trainer_fit_t fit;
        memset(&fit, 0, sizeof fit);
        fit.trainer = trainer, fit.dataset = dataset, fit.batch = 2, fit.steps = 2;
        fit.eval_datasets = &heldout, fit.eval_count = 1, fit.save_path = out, fit.save_every = 1;
        uform_status_t status = uform_trainer_fit(&fit);
        sweep_answer_status(answer, status, &fit.outcome);
        if (status == UFORM_OK) {
            answer->digest = sweep_digest(answer->digest, &fit.loss, sizeof fit.loss);
            answer->digest = sweep_digest(answer->digest, &fit.evaluation[UFORM_MODALITY_IMAGE], sizeof fit.evaluation[0]);
        }
        unlink(out);
    }
    uform_trainer_free(trainer);
    uform_dataset_free(heldout);
    uform_dataset_free(dataset);
}
