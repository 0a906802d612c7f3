/*
 * Search against a NumPy brute force (index_search_reference.py, run by Debian's python3) for every
 * scalar kind: random unit vectors of 100 dimensions (ragged for every kernel's vector width) in
 * 2,500 items spread over the four modalities, written by a builder; queries in batches of 1 (the
 * matrix-vector kernels), 9 (the GEMM for float rows), 32 (on 16-column GEMM panels, the queries
 * packed instead of the block) and 70 (two query groups), top 10, all modalities and images only.
 * Items 100, 700 and 1,500 are copies of item 42 and query 0 is item 42's vector, so the first four
 * hits tie exactly and must come in item order. Every search runs on executors of 1 and 3 threads
 * of the detected class, which must answer the same bytes, and on one thread of the HASWELL and
 * SERIAL classes where the CPU runs them, each checked against NumPy. Skips (77) without NumPy.
 *
 *   test_index_search WORK_DIR PYTHON SCRIPT
 */
#include <sys/stat.h>

#include "common/check.h"
#include "common/other_classes.h"
#include "common/skip.h"
#include "core/arena.h"
#include "kernels/nn.h"
#include "model/config.h"
#include "model/layout.h"
#include "uform/uform.h"

#define ITEMS 2500
#define DIMS 100

static uint64_t seed = 0x1DE85EA;
static double gaussian(void) {
    double sum = 0;
    for (int i = 0; i < 12; ++i) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        sum += (double)(seed >> 11) / 9007199254740992.0;
    }
    return sum - 6.0;
}

static void unit(float *row) {
    double norm = 0;
    for (int c = 0; c < DIMS; ++c) row[c] = (float)gaussian(), norm += (double)row[c] * row[c];
    for (int c = 0; c < DIMS; ++c) row[c] = (float)(row[c] / sqrt(norm));
}

static const char *const scalar_names[5] = {"f32", "f16", "bf16", "i8", "b1"};

/* Writes hits as text lines "query rank item modality score". */
static void dump(FILE *out, const char *label, const uform_index_search_t *search) {
    fprintf(out, "# %s %zu %zu\n", label, search->queries_count, search->hits_per_query);
    for (size_t j = 0; j < search->queries_count; ++j)
        for (size_t i = 0; i < search->hits_per_query; ++i) {
            const uform_index_hit_t *hit = &search->hits[j * search->hits_per_query + i];
            fprintf(out, "%zu %zu %llu %d %.9g\n", j, i, (unsigned long long)hit->item, (int)hit->modality, hit->score);
        }
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: test_index_search WORK_DIR PYTHON SCRIPT\n");
        return 2;
    }
    const char *work = argv[1];
    mkdir(work, 0755);
    char command[2048];
    snprintf(command, sizeof command, "%s -c 'import numpy' 2>/dev/null", argv[2]);
    if (system(command) != 0) {
        return check_skip_missing("%s has no NumPy (python3-numpy)", argv[2]);
    }
    float *vectors = malloc((size_t)ITEMS * DIMS * sizeof(float));
    uint8_t modalities[ITEMS];
    for (size_t i = 0; i < ITEMS; ++i) {
        unit(vectors + i * DIMS);
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        modalities[i] = (uint8_t)(seed >> 62);
    }
    const size_t copies[3] = {100, 700, 1500};
    for (int k = 0; k < 3; ++k) memcpy(vectors + copies[k] * DIMS, vectors + 42 * DIMS, DIMS * sizeof(float));
    float *queries = malloc(70 * DIMS * sizeof(float));
    memcpy(queries, vectors + 42 * DIMS, DIMS * sizeof(float));
    for (size_t j = 1; j < 70; ++j) unit(queries + j * DIMS);
    char path[1024];
    snprintf(path, sizeof path, "%s/queries.f32", work);
    FILE *file = fopen(path, "wb");
    fwrite(queries, sizeof(float), 70 * DIMS, file);
    fclose(file);

    /* The builder takes its fingerprint from a model: a tiny one with E = 128, so 100 dims fit. */
    uform__model_config_t config;
    uform__model_config_named("tiny", &config, NULL, "test");
    config.embedding = 128, config.matryoshka_count = 1, config.matryoshka[0] = 128;
    snprintf(path, sizeof path, "%s/wide.safetensors", work);
    uform_model_t model = NULL;
    if (uform__model_write_random(path, &config, 5, NULL, "test") != UFORM_OK ||
        uform_model_load_ram(NULL, path, NULL, &model, NULL) != UFORM_OK) {
        fprintf(stderr, "cannot write and load %s\n", path);
        return 1;
    }
    /* The detected class on 1 and 3 threads (the same answers, byte for byte), and the HASWELL and
     * SERIAL classes on one thread where this CPU runs them and they are not the detected one: each
     * of their answers goes to the NumPy comparison too (the classes differ in F32 rounding). */
    uform_executor_t executors[4] = {NULL, NULL, NULL, NULL};
    uform_executor_for_ram(NULL, 1, 0, &executors[0], NULL);
    uform_executor_for_ram(NULL, 3, 0, &executors[1], NULL);
    const uform_cpu_class_t detected = uform_executor_cpu_class(executors[0]);
    test_other_class_executors(detected, &executors[2]);
    const uform__nn_kernels_t *nn = uform__nn_kernels(UFORM_CPU_CLASS_SERIAL);
    uform_arena_t arena = NULL;
    uform_arena_for_host(&arena, NULL);
    snprintf(path, sizeof path, "%s/hits.txt", work);
    FILE *hits = fopen(path, "w");
    for (int s = 0; s < 5; ++s) {
        uform_scalar_kind_t scalar = (uform_scalar_kind_t)s;
        size_t row_bytes = uform_scalar_row_bytes(scalar, DIMS);
        unsigned char *rows = malloc(ITEMS * row_bytes);
        for (size_t i = 0; i < ITEMS; ++i) {
            const float *x = vectors + i * DIMS;
            unsigned char *row = rows + i * row_bytes;
            if (scalar == UFORM_SCALAR_F32) memcpy(row, x, row_bytes);
            else if (scalar == UFORM_SCALAR_F16) nn->f32_to_f16(DIMS, x, (uint16_t *)row);
            else if (scalar == UFORM_SCALAR_BF16) nn->f32_to_bf16(DIMS, x, (uint16_t *)row);
            else if (scalar == UFORM_SCALAR_I8) nn->f32_to_i8(DIMS, x, (int8_t *)row);
            else nn->f32_to_b1(DIMS, x, row);
        }
        /* Items go in one by one, so item i has modality modalities[i]. */
        uform_index_builder_t builder = NULL;
        CHECK_STATUS(uform_index_builder_create(model, DIMS, scalar, &builder, NULL), UFORM_OK);
        uform_arena_t rows_arena = NULL;
        uform_arena_for_host(&rows_arena, NULL);
        for (size_t i = 0; i < ITEMS; ++i) {
            char name[32];
            int length = snprintf(name, sizeof name, "item-%zu", i);
            size_t offsets[2] = {0, (size_t)length};
            uform_tape_t tape = {name, offsets, 1};
            uform_matrix_t view = {rows + i * row_bytes, 1, DIMS, row_bytes, scalar, rows_arena,
                                   uform_arena_generation(rows_arena)};
            uform_index_builder_add(builder, (uform_modality_t)modalities[i], &view, &tape, NULL);
        }
        snprintf(path, sizeof path, "%s/search_%s.index", work, scalar_names[s]);
        uform_outcome_t outcome = {0};
        CHECK_STATUS(uform_index_builder_write(builder, path, NULL, 0, &outcome), UFORM_OK);
        uform_index_t index = NULL;
        CHECK_STATUS(uform_index_open(path, NULL, &index, &outcome), UFORM_OK);
        /* 1 query: the search kernels; 9 and 70: the GEMM with the block packed; 32: on a class whose
         * GEMM panels have 16 columns (AVX2, serial), the GEMM with the queries packed instead. */
        const size_t batches[4] = {1, 9, 32, 70};
        for (int b = 0; b < 5; ++b) {
            size_t count = b < 4 ? batches[b] : 1;
            uform_index_hit_t *first = NULL;
            size_t first_count = 0;
            for (int e = 0; e < 4; ++e) {
                if (!executors[e]) continue;
                uform_index_search_t search = {0};
                search.index = index, search.executor = executors[e], search.arena = arena;
                search.queries = queries, search.queries_count = count, search.queries_columns = DIMS, search.top = 10;
                search.modalities = b == 4 ? 1u << UFORM_MODALITY_IMAGE : 0;
                CHECK_STATUS(uform_index_search(&search), UFORM_OK);
                size_t total = search.queries_count * search.hits_per_query;
                if (e >= 2) { /* another class: its own answers, checked by the NumPy comparison alone */
                    char label[64];
                    snprintf(label, sizeof label, "%s %s", scalar_names[s], b == 4 ? "image" : "all");
                    dump(hits, label, &search);
                } else if (e == 0) {
                    char label[64];
                    snprintf(label, sizeof label, "%s %s", scalar_names[s], b == 4 ? "image" : "all");
                    dump(hits, label, &search);
                    first = malloc(total * sizeof *first + 1);
                    memcpy(first, search.hits, total * sizeof *first);
                    first_count = total;
                } else {
                    CHECK_MSG(first_count == total && memcmp(first, search.hits, total * sizeof *first) == 0,
                              "%s, %zu queries: 1 and 3 threads answer differently", scalar_names[s], count);
                }
            }
            free(first);
        }
        uform_index_free(index);
        uform_index_builder_free(builder);
        uform_arena_free(rows_arena);
        free(rows);
    }
    fclose(hits);
    snprintf(command, sizeof command, "%s %s %s", argv[2], argv[3], work);
    int status = system(command);
    CHECK_MSG(status == 0, "the NumPy comparison failed (exit status %d)", status);
    uform_arena_free(arena);
    for (int e = 0; e < 4; ++e) uform_executor_free(executors[e]);
    uform_model_free(model);
    free(vectors), free(queries);
    return check_finish();
}
