/*
 * Many queries over F32 rows, where classes screen the rows by BF16 scores (GENOA and later) or INT8
 * scores (HASWELL, SKYLAKE, ICELAKE) before scoring the survivors exactly (index_search.c,
 * index_screen.h): checked against a NumPy brute force in float64 (index_screen_reference.py, run by
 * Debian's python3).
 *
 * 12,000 rows (11 full blocks and a partial one) of 64 and of 37 dimensions (an odd K: the BF16
 * pack's portable path), 300 queries (the screen starts at 256), top 10. The rows are made to
 * catch a screen that drops a row it must keep:
 *   - for each of the first 80 queries, 12 planted rows α_k·q + n with n ⟂ q (|n| = 0.05), in
 *     ascending order of α_k = 0.95 + k·10⁻⁴ (queries 0–39) or 0.95 + k·2·10⁻⁵ (40–79): their
 *     scores differ by far less than BF16's resolution (2⁻⁸ near 1) and INT8's, far more than
 *     F32's, so the screens' scores cannot order them and the answer must hold the top 10 of the
 *     12 in order. Queries 40–79 are ternary (entries −c, 0 and c, about a third each), which INT8 quantizes with
 *     no error: their screen's margin is then all the rows' quantization (a bound without that
 *     term drops planted rows there);
 *   - the best planted row of query 0 copied to the first and last rows (ties, in item order);
 *   - rows of norm 0.5, 1 and 2; two of norm 10¹⁹ (past the screen's 2⁶⁰, where it scores every
 *     row exactly); two of norm 10⁻³⁰; one zero row;
 *   - queries of norm 1, one of 10⁻³, one of 10³ and a zero query (every score 0: items 0-9).
 * Every search runs on the detected class with 1, 2 and 3 threads (the same bytes), and on one
 * thread of the HASWELL, SKYLAKE, ICELAKE and SERIAL classes where the CPU runs them, each answer
 * checked against NumPy; the test prints which screen each class ran (SERIAL none: its searches
 * take the unscreened path). Skips (77) without NumPy.
 *
 *   test_index_search_screen WORK_DIR PYTHON SCRIPT
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/check.h"
#include "common/other_classes.h"
#include "common/gaussian.h"
#include "common/skip.h"
#include "uform/uform.h"

#define ROWS 12000
#define QUERIES 300
#define PLANTED_QUERIES 80
#define TERNARY_FIRST 40 /* queries 40-79: entries −c, 0 and c, planted rows 2·10⁻⁵ apart */
#define PLANTED 12
#define PLANTED_STRIDE 11 /* planted row (j·PLANTED + k)·PLANTED_STRIDE + 7 */
#define TOP 10

/* The detected class on 1, 2 and 3 threads, then HASWELL, SKYLAKE, ICELAKE and SERIAL on one. */
#define EXECUTORS 7

/* Which screen a class runs (index_screen.h's rule, stated here for the log). */
static const char *screen_name(uform_cpu_class_t cpu_class) {
    if (cpu_class >= UFORM_CPU_CLASS_AMD_GENOA && cpu_class <= UFORM_CPU_CLASS_INTEL_DIAMOND) return "the BF16 screen";
    if (cpu_class >= UFORM_CPU_CLASS_INTEL_HASWELL && cpu_class <= UFORM_CPU_CLASS_INTEL_ICELAKE) return "the INT8 screen";
    return "no screen (the unscreened path)";
}

static uint64_t seed = 0x5C2EE11;
static double gaussian(void) { return test_gaussian(&seed); }

/* A random vector of `dims` with norm `length`, in double. */
static void random_vector(double *v, size_t dims, double length) {
    double sum = 0.0;
    for (size_t c = 0; c < dims; ++c) v[c] = gaussian(), sum += v[c] * v[c];
    for (size_t c = 0; c < dims; ++c) v[c] *= length / sqrt(sum);
}

static void store(float *row, const double *v, size_t dims) {
    for (size_t c = 0; c < dims; ++c) row[c] = (float)v[c];
}

/* The rows and queries of one case (see the header), `dims` wide. */
static void make_case(size_t dims, float *rows, float *queries) {
    double v[64], n[64];
    static const double scales[5] = {1.0, 1.0, 1.0, 0.5, 2.0};
    for (size_t j = 0; j < QUERIES; ++j) {
        random_vector(v, dims, j == QUERIES - 3 ? 1e-3 : j == QUERIES - 2 ? 1e3 : 1.0);
        if (j == QUERIES - 1) memset(v, 0, sizeof v); /* the zero query */
        if (j >= TERNARY_FIRST && j < PLANTED_QUERIES) { /* −c, 0 or c, about a third each, norm 1 */
            size_t nonzero = 0;
            for (size_t c = 0; c < dims; ++c) v[c] = v[c] > 0.054 ? 1.0 : v[c] < -0.054 ? -1.0 : 0.0, nonzero += v[c] != 0.0;
            for (size_t c = 0; c < dims; ++c) v[c] /= sqrt((double)(nonzero ? nonzero : 1));
        }
        store(queries + j * dims, v, dims);
    }
    for (size_t i = 0; i < ROWS; ++i) {
        random_vector(v, dims, scales[i % 5]);
        store(rows + i * dims, v, dims);
    }
    for (size_t j = 0; j < PLANTED_QUERIES; ++j) {
        const float *q = queries + j * dims;
        for (size_t k = 0; k < PLANTED; ++k) {
            random_vector(n, dims, 1.0); /* n ⟂ q, then |n| = 0.05 */
            double along = 0.0, qq = 0.0, sum = 0.0;
            for (size_t c = 0; c < dims; ++c) along += n[c] * q[c], qq += (double)q[c] * q[c];
            for (size_t c = 0; c < dims; ++c) n[c] -= along / qq * q[c], sum += n[c] * n[c];
            const double alpha = 0.95 + (double)k * (j < TERNARY_FIRST ? 1e-4 : 2e-5);
            for (size_t c = 0; c < dims; ++c) v[c] = alpha * q[c] + 0.05 * n[c] / sqrt(sum);
            store(rows + ((j * PLANTED + k) * PLANTED_STRIDE + 7) * dims, v, dims);
        }
    }
    const size_t best = (0 * PLANTED + PLANTED - 1) * PLANTED_STRIDE + 7; /* query 0's best planted row */
    memcpy(rows, rows + best * dims, dims * sizeof(float));
    memcpy(rows + (ROWS - 1) * dims, rows + best * dims, dims * sizeof(float));
    /* None of them planted: (r − 7) % PLANTED_STRIDE ≠ 0 or r past the last planted row (10,567). */
    const size_t odd[5] = {2001, 6007, 4003, 9001, 11003};
    for (int k = 0; k < 5; ++k) {
        random_vector(v, dims, k < 2 ? 1e19 : k < 4 ? 1e-30 : 0.0);
        store(rows + odd[k] * dims, v, dims);
    }
}

static int write_floats(const char *path, const float *values, size_t count) {
    FILE *file = fopen(path, "wb");
    if (!file) return -1;
    size_t written = fwrite(values, sizeof(float), count, file);
    return fclose(file) != 0 || written != count ? -1 : 0;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: test_index_search_screen WORK_DIR PYTHON SCRIPT\n");
        return 2;
    }
    const char *work = argv[1];
    mkdir(work, 0755);
    char command[4096], path[1024];
    snprintf(command, sizeof command, "%s -c 'import numpy' 2>/dev/null", argv[2]);
    if (system(command) != 0) return check_skip_missing("%s has no NumPy (python3-numpy)", argv[2]);

    uform_executor_t executors[EXECUTORS] = {NULL};
    uform_executor_for_ram(NULL, 1, 0, &executors[0], NULL);
    uform_executor_for_ram(NULL, 2, 0, &executors[1], NULL);
    uform_executor_for_ram(NULL, 3, 0, &executors[2], NULL);
    const uform_cpu_class_t detected = uform_executor_cpu_class(executors[0]);
    const uform_cpu_class_t others[EXECUTORS - 3] = {UFORM_CPU_CLASS_INTEL_HASWELL, UFORM_CPU_CLASS_INTEL_SKYLAKE,
                                                     UFORM_CPU_CLASS_INTEL_ICELAKE, UFORM_CPU_CLASS_SERIAL};
    test_class_executors(detected, others, EXECUTORS - 3, &executors[3]);
    for (int e = 0; e < EXECUTORS; ++e)
        if (executors[e] && e != 1 && e != 2) {
            const uform_cpu_class_t cpu_class = uform_executor_cpu_class(executors[e]);
            printf("class %s%s: its searches of 300 queries run %s\n", uform_cpu_class_name(cpu_class),
                   e == 0 ? " (detected)" : "", screen_name(cpu_class));
            printf("exercised: %s\n", uform_cpu_class_name(cpu_class));
        }
    uform_arena_t arena = NULL;
    uform_arena_for_host(&arena, NULL);

    const size_t widths[2] = {64, 37};
    float *rows = malloc((size_t)ROWS * 64 * sizeof(float)), *queries = malloc((size_t)QUERIES * 64 * sizeof(float));
    snprintf(path, sizeof path, "%s/hits.txt", work);
    FILE *hits = fopen(path, "w");
    if (!rows || !queries || !hits) {
        fprintf(stderr, "cannot allocate the rows or open %s\n", path);
        return 1;
    }
    for (int w = 0; w < 2; ++w) {
        const size_t dims = widths[w];
        make_case(dims, rows, queries);
        snprintf(path, sizeof path, "%s/rows_%zu.f32", work, dims);
        CHECK_MSG(write_floats(path, rows, (size_t)ROWS * dims) == 0, "cannot write %s", path);
        snprintf(path, sizeof path, "%s/queries_%zu.f32", work, dims);
        CHECK_MSG(write_floats(path, queries, (size_t)QUERIES * dims) == 0, "cannot write %s", path);

        uform_outcome_t outcome = {0};
        uform_index_builder_t builder = NULL;
        uform_index_t index = NULL;
        snprintf(path, sizeof path, "%s/screen_%zu.index", work, dims);
        CHECK_STATUS(uform_index_builder_create_vectors(dims, UFORM_SCALAR_F32, NULL, &builder, &outcome), UFORM_OK);
        CHECK_STATUS(uform_index_builder_add_vectors(builder, UFORM_MODALITY_IMAGE, rows, UFORM_SCALAR_F32, ROWS, dims, 0,
                                                     NULL, 0, &outcome),
                     UFORM_OK);
        CHECK_STATUS(uform_index_builder_write(builder, path, NULL, 0, &outcome), UFORM_OK);
        uform_index_builder_free(builder);
        CHECK_STATUS(uform_index_open(path, NULL, &index, &outcome), UFORM_OK);
        if (!index) break;

        uform_index_hit_t *first = NULL;
        for (int e = 0; e < EXECUTORS; ++e) {
            if (!executors[e]) continue;
            uform_index_search_t search = {0};
            search.index = index, search.executor = executors[e], search.arena = arena;
            search.queries = queries, search.queries_count = QUERIES, search.queries_columns = dims, search.top = TOP;
            CHECK_STATUS(uform_index_search(&search), UFORM_OK);
            if (search.outcome.status != UFORM_OK || search.hits_per_query != TOP) continue;
            const size_t total = (size_t)QUERIES * TOP;
            if (e == 0) {
                first = malloc(total * sizeof *first);
                memcpy(first, search.hits, total * sizeof *first);
            } else if (e < 3) {
                CHECK_MSG(first && memcmp(first, search.hits, total * sizeof *first) == 0,
                          "%zu dims: %d threads answer differently from 1", dims, e + 1);
                continue;
            }
            if (e == 0 || e >= 3) {
                fprintf(hits, "# %zu %s\n", dims, uform_cpu_class_name(uform_executor_cpu_class(executors[e])));
                for (size_t h = 0; h < total; ++h)
                    fprintf(hits, "%zu %zu %llu %.9g\n", h / TOP, h % TOP, (unsigned long long)search.hits[h].item,
                            (double)search.hits[h].score);
            }
        }
        free(first);
        uform_index_free(index);
    }
    fclose(hits);
    snprintf(command, sizeof command, "%s %s %s", argv[2], argv[3], work);
    int status = system(command);
    CHECK_MSG(status == 0, "the NumPy comparison failed (exit status %d)", status);
    uform_arena_free(arena);
    for (int e = 0; e < EXECUTORS; ++e) uform_executor_free(executors[e]);
    free(rows), free(queries);
    return check_finish();
}
