/*
 * The index API's rows of the sweep: a builder filled, described, read back and written; an index
 * opened, searched (F32 through the matrix-vector path and the GEMM path, and B1's two stages) and
 * read; a builder extended from an open index. The embeddings come from one text encode into an
 * arena of this file's own, made in a row's first (unarmed) run and kept, so every armed run sweeps
 * the index calls alone; the files the rows read are written the same way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/outcome.h"
#include "index/ann.h"
#include "index/ann_ondisk.h"
#include "rows.h"

enum { texts_count = 9 };

/* [texts_count, E] F32 embeddings of nine texts, current in a private arena; NULL when the encode
 * failed (the first run then fails, which the driver reports). */
static const uform_matrix_t *embeddings(sweep_fixture_t *fixture) {
    static uform_arena_t arena;
    static uform_matrix_t view;
    static int made;
    if (made) return &view;
    static const char texts[] = "a cata doga red stara blue squaretreesa housethe seaa green circlemusic";
    static const size_t offsets[texts_count + 1] = {0, 5, 10, 20, 33, 38, 45, 52, 66, 71};
    if (!arena && uform_arena_for_host(&arena, NULL) != UFORM_OK) return NULL;
    uform_text_encode_t request;
    memset(&request, 0, sizeof request);
    request.model = fixture->model;
    request.texts = (uform_tape_t){texts, offsets, texts_count};
    request.outputs = UFORM_OUTPUTS_EMBEDDINGS;
    request.arena = arena;
    if (uform_text_encode(&request) != UFORM_OK) return NULL;
    view = request.encoded.embeddings, made = 1;
    return &view;
}

/* The paths of the items: one tape over "item-0" .. "item-8". */
static uform_tape_t item_paths(size_t offsets[texts_count + 1]) {
    static const char paths[] = "item-0item-1item-2item-3item-4item-5item-6item-7item-8";
    for (size_t i = 0; i <= texts_count; ++i) offsets[i] = 6 * i;
    return (uform_tape_t){paths, offsets, texts_count};
}

/* The digest of what a builder or index holds. */
static uint64_t digest_description(uint64_t digest, const uform_index_description_t *description) {
    digest = sweep_digest(digest, &description->count, sizeof description->count);
    digest = sweep_digest(digest, description->counts, sizeof description->counts);
    return sweep_digest(digest, description->fingerprint, sizeof description->fingerprint);
}

/* A builder with the nine texts in F32, or NULL with the answer filled. */
static uform_index_builder_t filled_builder(sweep_fixture_t *fixture, uform_scalar_kind_t scalar, sweep_answer_t *answer) {
    const uform_matrix_t *rows = embeddings(fixture);
    if (!rows) {
        sweep_answer_status(answer, UFORM_INTERNAL, NULL);
        snprintf(answer->message, sizeof answer->message, "the texts to index could not be encoded");
        return NULL;
    }
    uform_index_builder_t builder = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_index_builder_create(fixture->model, 0, scalar, &builder, &outcome);
    size_t offsets[texts_count + 1];
    uform_tape_t paths = item_paths(offsets);
    if (status == UFORM_OK && scalar == UFORM_SCALAR_F32)
        status = uform_index_builder_add(builder, UFORM_MODALITY_TEXT, rows, &paths, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status != UFORM_OK) {
        uform_index_builder_free(builder);
        return NULL;
    }
    return builder;
}

/* Create, add, describe, item and write (with caller metadata), then free. */
void sweep_run_index_builder(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform_index_builder_t builder = filled_builder(fixture, UFORM_SCALAR_F32, answer);
    if (!builder) return;
    uform_index_description_t description;
    uform_index_builder_describe(builder, &description);
    uint64_t digest = digest_description(0, &description);
    uform_modality_t modality;
    const char *path = NULL;
    size_t length = 0;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_index_builder_item(builder, 4, &modality, &path, &length);
    if (status == UFORM_OK) digest = sweep_digest(digest, path, length);
    char file[300];
    snprintf(file, sizeof file, "%s/built.index", fixture->scratch);
    static const char *const metadata[2] = {"source", "sweep"};
    if (status == UFORM_OK) status = uform_index_builder_write(builder, file, metadata, 1, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) answer->digest = digest;
    uform_index_builder_free(builder);
    unlink(file);
}

/* The index file the reading rows open: the nine texts in `scalar`, written once, unarmed, and kept
 * until the sweep's scratch folder is cleaned. Answers its path, or NULL. */
static const char *index_file(sweep_fixture_t *fixture, uform_scalar_kind_t scalar) {
    static char paths[5][300];
    char *path = paths[scalar % 5];
    if (path[0]) return path;
    sweep_answer_t answer;
    memset(&answer, 0, sizeof answer);
    uform_index_builder_t builder = filled_builder(fixture, UFORM_SCALAR_F32, &answer);
    if (!builder) return NULL;
    snprintf(path, 300, "%s/search-%d.index", fixture->scratch, (int)scalar);
    uform_status_t status = UFORM_OK;
    if (scalar != UFORM_SCALAR_F32) {
        /* Another scalar: the rows again through an encode that writes it. */
        uform_index_builder_free(builder);
        builder = NULL;
        static uform_arena_t arena;
        if (!arena && uform_arena_for_host(&arena, NULL) != UFORM_OK) return NULL;
        static const char texts[] = "a cata doga red stara blue squaretreesa housethe seaa green circlemusic";
        static const size_t offsets[texts_count + 1] = {0, 5, 10, 20, 33, 38, 45, 52, 66, 71};
        uform_text_encode_t request;
        memset(&request, 0, sizeof request);
        request.model = fixture->model;
        request.texts = (uform_tape_t){texts, offsets, texts_count};
        request.outputs = UFORM_OUTPUTS_EMBEDDINGS;
        request.config.outputs_scalar = scalar;
        request.arena = arena;
        size_t path_offsets[texts_count + 1];
        uform_tape_t paths = item_paths(path_offsets);
        status = uform_text_encode(&request);
        if (status == UFORM_OK) status = uform_index_builder_create(fixture->model, 0, scalar, &builder, NULL);
        if (status == UFORM_OK)
            status = uform_index_builder_add(builder, UFORM_MODALITY_TEXT, &request.encoded.embeddings, &paths, NULL);
    }
    if (status == UFORM_OK) status = uform_index_builder_write(builder, path, NULL, 0, NULL);
    uform_index_builder_free(builder);
    if (status != UFORM_OK) path[0] = 0;
    return path[0] ? path : NULL;
}

/* Open (fingerprint checked), describe, metadata, item, a search of `queries` queries, free. With
 * `cpu_class` other than UNKNOWN, the search runs on a one-thread executor of that class. */
static void open_and_search(sweep_fixture_t *fixture, uform_scalar_kind_t scalar, size_t queries,
                            uform_cpu_class_t cpu_class, sweep_answer_t *answer) {
    const char *path = index_file(fixture, scalar);
    const uform_matrix_t *rows = embeddings(fixture);
    if (!path || !rows) {
        sweep_answer_status(answer, UFORM_INTERNAL, NULL);
        snprintf(answer->message, sizeof answer->message, "the index to search could not be written");
        return;
    }
    uform_index_t index = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_index_open(path, fixture->model, &index, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status != UFORM_OK) return;
    uform_index_description_t description;
    uform_index_describe(index, &description);
    uint64_t digest = digest_description(0, &description);
    const char *format = uform_index_metadata(index, "uform.index.format");
    if (format) digest = sweep_digest(digest, format, strlen(format));
    /* Queries: the first rows of the embeddings (F32, normalised), repeated to fill a GEMM batch (or
     * the 256 of the BF16 screen). */
    static float query_rows[256][1024];
    const size_t columns = rows->columns < 1024 ? rows->columns : 1024;
    if (queries > 256) queries = 256;
    for (size_t q = 0; q < queries; ++q) {
        const void *row = NULL;
        if (uform_matrix_row(rows, q % rows->rows, &row) == UFORM_OK) memcpy(query_rows[q], row, columns * sizeof(float));
    }
    uform_executor_t executor = NULL;
    if (cpu_class != UFORM_CPU_CLASS_UNKNOWN) {
        uform_ram_options_t forced = {.cpu_class = cpu_class};
        status = uform_executor_for_ram(&forced, 1, 0, &executor, &outcome);
        if (status != UFORM_OK) {
            sweep_answer_status(answer, status, &outcome);
            uform_index_free(index);
            return;
        }
    }
    uform_index_search_t search;
    memset(&search, 0, sizeof search);
    search.index = index, search.arena = fixture->arena, search.executor = executor;
    search.queries = &query_rows[0][0], search.queries_count = queries, search.queries_columns = columns;
    search.queries_stride = sizeof query_rows[0], search.top = 3;
    status = uform_index_search(&search);
    sweep_answer_status(answer, status, &search.outcome);
    if (status == UFORM_OK) {
        for (size_t i = 0; i < queries * search.hits_per_query; ++i)
            digest = sweep_digest(digest, &search.hits[i].item, sizeof search.hits[i].item);
        uform_modality_t modality;
        const char *item_path = NULL;
        size_t length = 0;
        if (uform_index_item(index, search.hits[0].item, &modality, &item_path, &length) == UFORM_OK)
            digest = sweep_digest(digest, item_path, length);
        answer->digest = digest;
    }
    uform_executor_free(executor);
    uform_index_free(index);
}

void sweep_run_index_search_f32(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    open_and_search(fixture, UFORM_SCALAR_F32, 2, UFORM_CPU_CLASS_UNKNOWN, answer);
}

void sweep_run_index_search_gemm(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    open_and_search(fixture, UFORM_SCALAR_F32, 9, UFORM_CPU_CLASS_UNKNOWN, answer);
}

/* 256 queries over F32 rows: the detected class's screen (index_screen.h: BF16 on GENOA and later,
 * INT8 on HASWELL to ICELAKE, none on SERIAL). */
void sweep_run_index_search_screen(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    open_and_search(fixture, UFORM_SCALAR_F32, 256, UFORM_CPU_CLASS_UNKNOWN, answer);
}

/* The same on one thread of the HASWELL class: the INT8 screen wherever the CPU runs AVX2. */
void sweep_run_index_search_screen_i8(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    open_and_search(fixture, UFORM_SCALAR_F32, 256, UFORM_CPU_CLASS_INTEL_HASWELL, answer);
}

void sweep_run_index_search_b1(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    open_and_search(fixture, UFORM_SCALAR_B1, 2, UFORM_CPU_CLASS_UNKNOWN, answer);
}

/* Resuming: a builder holding an open index's items, extended by the same rows again and written. */
void sweep_run_index_builder_from(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    const char *path = index_file(fixture, UFORM_SCALAR_F32);
    const uform_matrix_t *rows = embeddings(fixture);
    if (!path || !rows) {
        sweep_answer_status(answer, UFORM_INTERNAL, NULL);
        snprintf(answer->message, sizeof answer->message, "the index to extend could not be written");
        return;
    }
    uform_index_t index = NULL;
    uform_index_builder_t builder = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_index_open(path, fixture->model, &index, &outcome);
    if (status == UFORM_OK) status = uform_index_builder_from(index, &builder, &outcome);
    uform_index_free(index);
    size_t offsets[texts_count + 1];
    uform_tape_t paths = item_paths(offsets);
    if (status == UFORM_OK) status = uform_index_builder_add(builder, UFORM_MODALITY_TEXT, rows, &paths, &outcome);
    char file[300];
    snprintf(file, sizeof file, "%s/extended.index", fixture->scratch);
    if (status == UFORM_OK) status = uform_index_builder_write(builder, file, NULL, 0, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) {
        uform_index_description_t description;
        uform_index_builder_describe(builder, &description);
        answer->digest = digest_description(0, &description);
    }
    uform_index_builder_free(builder);
    unlink(file);
}

/* Indexes from vectors: a builder with no model, 300 rows of F16 vectors (more than one of the
 * add's chunks) normalised and stored as I8 under their row numbers, then 9 F32 rows with paths,
 * written, then freed. */
void sweep_run_index_builder_vectors(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    enum { rows = 300, dims = 24 };
    static uint16_t halves[rows * dims];
    static float floats[texts_count * dims];
    for (size_t i = 0; i < rows * dims; ++i) halves[i] = (uint16_t)(0x3000 + (i * 37) % 0x0C00) | (uint16_t)(i % 3 == 0) << 15;
    for (size_t i = 0; i < texts_count * dims; ++i) floats[i] = (float)((int)(i * 7 % 11) - 5) / 8.0f;
    uform_index_builder_t builder = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform_index_builder_create_vectors(dims, UFORM_SCALAR_I8, NULL, &builder, &outcome);
    if (status == UFORM_OK)
        status = uform_index_builder_add_vectors(builder, UFORM_MODALITY_IMAGE, halves, UFORM_SCALAR_F16, rows, dims, 0, NULL,
                                                 UFORM_INDEX_NORMALIZE, &outcome);
    size_t offsets[texts_count + 1];
    uform_tape_t paths = item_paths(offsets);
    if (status == UFORM_OK)
        status = uform_index_builder_add_vectors(builder, UFORM_MODALITY_TEXT, floats, UFORM_SCALAR_F32, texts_count, dims, 0,
                                                 &paths, 0, &outcome);
    uint64_t digest = 0;
    if (status == UFORM_OK) {
        uform_index_description_t description;
        uform_index_builder_describe(builder, &description);
        digest = digest_description(0, &description);
        const char *path = NULL;
        size_t length = 0;
        uform_index_builder_item(builder, 299, NULL, &path, &length);
        digest = sweep_digest(digest, path, length);
    }
    char file[300];
    snprintf(file, sizeof file, "%s/vectors.index", fixture->scratch);
    if (status == UFORM_OK) status = uform_index_builder_write(builder, file, NULL, 0, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) answer->digest = digest;
    uform_index_builder_free(builder);
    unlink(file);
}

/* ---- approximate structures (the FAISS module) ---- */

/* `recipe` built over the F32 index on one OpenMP thread (the same file every time) to `file`,
 * its inverted lists on disk beside it with `ondisk`. */
static uform_status_t build_ann(sweep_fixture_t *fixture, const char *recipe, int ondisk, const char *file,
                                uform_index_t *index, uform_outcome_t *outcome) {
    const char *path = index_file(fixture, UFORM_SCALAR_F32);
    if (!path) {
        snprintf(outcome->message, sizeof outcome->message, "the index to build over could not be written");
        return UFORM_INTERNAL;
    }
    uform_status_t status = uform_index_open(path, fixture->model, index, outcome);
    uform_index_ann_options_t options = {recipe, 0, 1, ondisk};
    if (status == UFORM_OK) status = uform_index_ann_build(*index, file, &options, outcome);
    return status;
}

/* Open, build `recipe` and write it (atomically: a failure leaves no file), then remove it; with
 * `ondisk` the lists file too (built.ivfdata, whose size joins the digest). */
static void build_row(sweep_fixture_t *fixture, const char *recipe, int ondisk, sweep_answer_t *answer) {
    char file[300], lists[300];
    snprintf(file, sizeof file, "%s/built.faiss", fixture->scratch);
    snprintf(lists, sizeof lists, "%s/built.ivfdata", fixture->scratch);
    uform_index_t index = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = build_ann(fixture, recipe, ondisk, file, &index, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) {
        struct stat facts; /* stat allocates nothing: the digest must not depend on the failing allocator */
        long long size[2] = {stat(file, &facts) == 0 ? (long long)facts.st_size : -1,
                             stat(lists, &facts) == 0 ? (long long)facts.st_size : -1};
        answer->digest = sweep_digest(0, size, sizeof size);
    }
    uform_index_free(index);
    unlink(file), unlink(lists);
}

void sweep_run_index_ann_build_graph(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    build_row(fixture, NULL, 0, answer); /* the default recipe at nine items: HNSW32 */
}

void sweep_run_index_ann_build_lists(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    build_row(fixture, "IVF2,Flat", 0, answer); /* k-means training, inverted lists */
}

void sweep_run_index_ann_build_ondisk(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    build_row(fixture, "IVF2,Flat", 1, answer); /* the lists' runs, their layout and the two renames */
}

/* uform_index_ann_build_members over a mesh of one (no collectives module; the same shapes, plan,
 * sample, training, numbered adds, serialisations and write as with more members): the F32
 * index's rows as this member's block (uform_index_builder_from), IVF2,Flat, then removed. */
void sweep_run_index_ann_build_members(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    char file[300];
    snprintf(file, sizeof file, "%s/members.faiss", fixture->scratch);
    const char *path = index_file(fixture, UFORM_SCALAR_F32);
    if (!path) {
        sweep_answer_status(answer, UFORM_INTERNAL, NULL);
        snprintf(answer->message, sizeof answer->message, "the index to build over could not be written");
        return;
    }
    uform_index_t index = NULL;
    uform_index_builder_t own = NULL;
    uform_mesh_t mesh = NULL;
    uform_outcome_t outcome = {0};
    uform_mesh_options_t mesh_options;
    memset(&mesh_options, 0, sizeof mesh_options);
    mesh_options.host_domain_count = 1;
    uform_index_ann_options_t options = {"IVF2,Flat", 0, 1};
    uform_status_t status = uform_index_open(path, fixture->model, &index, &outcome);
    if (status == UFORM_OK) status = uform_index_builder_from(index, &own, &outcome);
    if (status == UFORM_OK) status = uform_mesh_bootstrap(NULL, &mesh_options, &mesh, &outcome);
    if (status == UFORM_OK) status = uform_index_ann_build_members(index, own, mesh, file, &options, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) {
        struct stat facts; /* stat allocates nothing: the digest must not depend on the failing allocator */
        long long size = stat(file, &facts) == 0 ? (long long)facts.st_size : -1;
        answer->digest = sweep_digest(0, &size, sizeof size);
    }
    uform_mesh_free(mesh);
    uform_index_builder_free(own);
    uform_index_free(index);
    unlink(file);
}

/* Open a structure built once (unarmed), describe it, search two queries with a modality filter
 * and exact rescoring, free; with `ondisk`, one whose lists are on disk (the lists file checked,
 * hashed and mapped). */
static void search_row(sweep_fixture_t *fixture, sweep_answer_t *answer, int ondisk) {
    static char files[2][300];
    char *file = files[ondisk ? 1 : 0];
    const uform_matrix_t *rows = embeddings(fixture);
    uform_index_t index = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = UFORM_OK;
    if (!file[0]) {
        snprintf(file, sizeof files[0], "%s/search%s.faiss", fixture->scratch, ondisk ? "_ondisk" : "");
        status = build_ann(fixture, "IVF2,Flat", ondisk, file, &index, &outcome);
        uform_index_free(index);
        index = NULL;
        if (status != UFORM_OK) file[0] = 0;
    }
    const char *path = index_file(fixture, UFORM_SCALAR_F32);
    if (!file[0] || !path || !rows) {
        sweep_answer_status(answer, UFORM_INTERNAL, NULL);
        snprintf(answer->message, sizeof answer->message, "the structure to search could not be built");
        return;
    }
    uform_index_ann_t ann = NULL;
    status = uform_index_open(path, fixture->model, &index, &outcome);
    if (status == UFORM_OK) status = uform_index_ann_open(index, file, &ann, &outcome);
    sweep_answer_status(answer, status, &outcome);
    if (status != UFORM_OK) {
        uform_index_free(index);
        return;
    }
    uform_index_ann_description_t description;
    uform_index_ann_describe(ann, &description);
    uint64_t digest = sweep_digest(0, &description.lists, sizeof description.lists);
    static float query_rows[2][1024];
    const size_t columns = rows->columns < 1024 ? rows->columns : 1024;
    for (size_t q = 0; q < 2; ++q) {
        const void *row = NULL;
        if (uform_matrix_row(rows, q, &row) == UFORM_OK) memcpy(query_rows[q], row, columns * sizeof(float));
    }
    uform_index_ann_search_t search;
    memset(&search, 0, sizeof search);
    search.ann = ann, search.arena = fixture->arena;
    search.queries = &query_rows[0][0], search.queries_count = 2, search.queries_columns = columns;
    search.queries_stride = sizeof query_rows[0], search.top = 3, search.nprobe = 2, search.rerank = 5;
    search.modalities = 1u << UFORM_MODALITY_TEXT;
    status = uform_index_ann_search(&search);
    sweep_answer_status(answer, status, &search.outcome);
    if (status == UFORM_OK) {
        for (size_t i = 0; i < 2 * search.hits_per_query; ++i)
            digest = sweep_digest(digest, &search.hits[i].item, sizeof search.hits[i].item);
        answer->digest = digest;
    }
    uform_index_ann_free(ann);
    uform_index_free(index);
}

void sweep_run_index_ann_search(sweep_fixture_t *fixture, sweep_answer_t *answer) { search_row(fixture, answer, 0); }

void sweep_run_index_ann_search_ondisk(sweep_fixture_t *fixture, sweep_answer_t *answer) { search_row(fixture, answer, 1); }

/* The builder the members' rows share: 40 image rows, 9 text rows with paths, 40 image rows more,
 * so an index made from it meets three runs of modalities. */
enum { members_rows = 40, members_dims = 16 };

static uform_status_t members_builder(uform_index_builder_t *builder, uform_outcome_t *outcome) {
    static float floats[members_rows * members_dims];
    for (size_t i = 0; i < members_rows * members_dims; ++i) floats[i] = (float)((int)(i * 13 % 17) - 8) / 8.0f;
    uform_status_t status = uform_index_builder_create_vectors(members_dims, UFORM_SCALAR_F16, NULL, builder, outcome);
    if (status == UFORM_OK)
        status = uform_index_builder_add_vectors(*builder, UFORM_MODALITY_IMAGE, floats, UFORM_SCALAR_F32, members_rows,
                                                 members_dims, 0, NULL, 0, outcome);
    size_t offsets[texts_count + 1];
    uform_tape_t paths = item_paths(offsets);
    if (status == UFORM_OK)
        status = uform_index_builder_add_vectors(*builder, UFORM_MODALITY_TEXT, floats, UFORM_SCALAR_F32, texts_count,
                                                 members_dims, 0, &paths, 0, outcome);
    if (status == UFORM_OK)
        status = uform_index_builder_add_vectors(*builder, UFORM_MODALITY_IMAGE, floats, UFORM_SCALAR_F32, members_rows,
                                                 members_dims, 0, NULL, 0, outcome);
    return status;
}

static uform_status_t mesh_of_one(uform_mesh_t *mesh, uform_outcome_t *outcome) {
    uform_mesh_options_t options;
    memset(&options, 0, sizeof options);
    options.host_domain_count = 1;
    return uform_mesh_bootstrap(NULL, &options, mesh, outcome);
}

/* The members' rows' digest: an index's description and its last item's path. */
static uint64_t members_digest(const uform_index_description_t *description, const char *path, size_t length) {
    return sweep_digest(digest_description(0, description), path, length);
}

/* uform_index_builder_gather over a mesh of one (no collectives module; the same records, checks,
 * allocations and unpacking as with more members); the gathered builder's description and last
 * path are digested. */
void sweep_run_index_builder_gather(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    (void)fixture;
    uform_index_builder_t builder = NULL, gathered = NULL;
    uform_mesh_t mesh = NULL;
    uform_outcome_t outcome = {0};
    uform_status_t status = members_builder(&builder, &outcome);
    if (status == UFORM_OK) status = mesh_of_one(&mesh, &outcome);
    if (status == UFORM_OK) status = uform_index_builder_gather(builder, mesh, &gathered, &outcome);
    uint64_t digest = 0;
    if (status == UFORM_OK) {
        uform_index_description_t description;
        const char *path = NULL;
        size_t length = 0;
        uform_index_builder_describe(gathered, &description);
        uform_index_builder_item(gathered, 2 * members_rows + texts_count - 1, NULL, &path, &length);
        digest = members_digest(&description, path, length);
    }
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) answer->digest = digest;
    uform_index_builder_free(gathered);
    uform_index_builder_free(builder);
    uform_mesh_free(mesh);
}

/* uform_index_builder_write_members over a mesh of one (the records, the pieces, the writer's
 * thread and fill hook, the rounds and member 0's word, as with more members; no piece is sent):
 * the written file, opened, gives the digest: its description and last path. */
void sweep_run_index_builder_write_members(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    uform_index_builder_t builder = NULL;
    uform_index_t index = NULL;
    uform_mesh_t mesh = NULL;
    uform_outcome_t outcome = {0};
    char file[300];
    snprintf(file, sizeof file, "%s/members.index", fixture->scratch);
    const char *metadata[] = {"sweep.row", "write_members"};
    uform_status_t status = members_builder(&builder, &outcome);
    if (status == UFORM_OK) status = mesh_of_one(&mesh, &outcome);
    if (status == UFORM_OK) status = uform_index_builder_write_members(builder, mesh, file, metadata, 1, &outcome);
    if (status == UFORM_OK) status = uform_index_open(file, NULL, &index, &outcome);
    uint64_t digest = 0;
    if (status == UFORM_OK) {
        uform_index_description_t description;
        const char *path = NULL;
        size_t length = 0;
        uform_index_describe(index, &description);
        uform_index_item(index, 2 * members_rows + texts_count - 1, NULL, &path, &length);
        digest = members_digest(&description, path, length);
    }
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) answer->digest = digest;
    uform_index_free(index);
    uform_index_builder_free(builder);
    uform_mesh_free(mesh);
}

/* ---- the on-disk lists' exchange between members ---- */

enum { exchange_rows = 48, exchange_dims = 8 };

typedef struct exchange_buffer_t {
    unsigned char *bytes;
    size_t size, capacity;
} exchange_buffer_t;

/* A growing buffer for the packed run (a member's side of uform__ann_ondisk_pack); ENOMEM, as the
 * members' own buffer answers, when it cannot grow. */
static int exchange_write(void *state, const void *bytes, size_t size) {
    exchange_buffer_t *buffer = state;
    if (!size) return 0; /* FAISS writes empty vectors with a null pointer */
    if (size > buffer->capacity - buffer->size) {
        size_t capacity = 2 * (buffer->size + size);
        unsigned char *grown = realloc(buffer->bytes, capacity);
        if (!grown) return 12; /* ENOMEM */
        buffer->bytes = grown, buffer->capacity = capacity;
    }
    memcpy(buffer->bytes + buffer->size, bytes, size);
    buffer->size += size;
    return 0;
}

/* FAISS's bytes of `faiss` into `buffer`: a write that fails there is ENOMEM (UFORM_IO from the
 * shim), as in the members' own buffer. */
static uform_status_t exchange_serialize(const uform__faiss_api_t *api, const uform__faiss_t *faiss, exchange_buffer_t *buffer,
                                         char *message, size_t capacity) {
    int error = 0;
    uform_status_t status = api->serialize(faiss, exchange_write, buffer, &error, message, capacity);
    return status == UFORM_IO ? UFORM_OUT_OF_MEMORY : status;
}

/* What ann_members.c does between member 0 and another member with on-disk lists, which a mesh of
 * one never reaches (the members' rows over a mesh of one take member 0's runs only): IVF2,Flat over
 * 48 rows × 8 dims of a fixed pattern, trained, then copied through FAISS's bytes as the other
 * member reads the trained structure; items 24..47 added to the copy and packed into memory (the
 * other member's batch), items 0..23 added to the original and taken to its runs (member 0's
 * batch), the pack appended as the run of item 24, the runs laid out in item order, described and
 * committed; the lists file's size in the digest; both files removed. */
void sweep_run_index_ann_ondisk_exchange(sweep_fixture_t *fixture, sweep_answer_t *answer) {
    static float rows[exchange_rows * exchange_dims];
    for (size_t k = 0; k < exchange_rows * exchange_dims; ++k) rows[k] = (float)((k * 37 % 101) - 50) / 50.0f;
    char path[300], lists[300], message[256];
    snprintf(path, sizeof path, "%s/exchange.faiss", fixture->scratch);
    snprintf(lists, sizeof lists, "%s/exchange.ivfdata", fixture->scratch);
    const char *function = "sweep_run_index_ann_ondisk_exchange";
    uform_outcome_t outcome = {0};
    const uform__faiss_api_t *api = NULL;
    uform__faiss_t *faiss = NULL, *copy = NULL;
    uform__ann_ondisk_t ondisk = {0};
    exchange_buffer_t trained = {0}, packed = {0};
    uint64_t sizes[2];
    uform__ann_record_t record;
    memset(&record, 0, sizeof record);
    char recipe[UFORM__ANN_RECIPE_CAPACITY];
    size_t train_rows = 0;
    uform_index_ann_options_t options = {"IVF2,Flat", 0, 1, 1};
    uform_status_t status = uform__faiss_load(&api, &outcome, function);
    if (status == UFORM_OK)
        status = uform__ann_prepare(api, exchange_rows, exchange_dims, &options, recipe, &faiss, &train_rows, &outcome, function);
#define EXCHANGE_STEP(call, what)                                                                                         \
    if (status == UFORM_OK && (status = (call)) != UFORM_OK) uform__fail(&outcome, status, function, "%s: %s", what, message)
    EXCHANGE_STEP(api->train(faiss, exchange_rows, rows, 1, message, sizeof message), "train");
    EXCHANGE_STEP(exchange_serialize(api, faiss, &trained, message, sizeof message),
                  "cannot allocate memory for the trained structure's bytes");
    EXCHANGE_STEP(api->deserialize(trained.bytes, trained.size, NULL, 0, &copy, message, sizeof message), "deserialise");
    EXCHANGE_STEP(api->add_numbered(copy, 24, rows + 24 * exchange_dims, 24, 1, message, sizeof message), "add to the copy");
    EXCHANGE_STEP(api->add_numbered(faiss, 24, rows, 0, 1, message, sizeof message), "add");
#undef EXCHANGE_STEP
    if (status == UFORM_OK) status = uform__ann_ondisk_pack(api, copy, 2, sizes, exchange_write, &packed, &outcome, function);
    if (status == UFORM_OK) status = uform__ann_ondisk_start(&ondisk, api, faiss, path, &outcome, function);
    if (status == UFORM_OK) status = uform__ann_ondisk_take(&ondisk, faiss, faiss, 0, &outcome, function);
    if (status == UFORM_OK) status = uform__ann_ondisk_append(&ondisk, faiss, packed.bytes, packed.size, 24, &outcome, function);
    if (status == UFORM_OK) status = uform__ann_ondisk_finish(&ondisk, faiss, &record, &outcome, function);
    if (status == UFORM_OK) status = uform__ann_ondisk_commit(&ondisk, &outcome, function);
    sweep_answer_status(answer, status, &outcome);
    if (status == UFORM_OK) {
        struct stat facts; /* stat allocates nothing: the digest must not depend on the failing allocator */
        long long size = stat(lists, &facts) == 0 ? (long long)facts.st_size : -1;
        answer->digest = sweep_digest(0, &size, sizeof size);
    }
    uform__ann_ondisk_end(&ondisk);
    if (faiss) api->free(faiss);
    if (copy) api->free(copy);
    free(trained.bytes), free(packed.bytes);
    unlink(lists), unlink(path);
}
