/*
 * Indexes from vectors through the C API (uform_index_builder_create_vectors / _add_vectors) and
 * batched search across the kernel switch at 8 queries:
 *   - F32 rows round-trip bit for bit through a written and reopened file (negative zero, a
 *     subnormal and the largest float included), with the caller's paths or the row numbers, under
 *     the no-checkpoint fingerprint; F16 rows are widened exactly; --normalize divides by the norm;
 *   - each bad argument gets UFORM_INVALID_ARGUMENT with a message naming it, the builder unchanged;
 *   - 1, 7, 8, 32 and 1,024 queries (matrix-vector kernels below 8, the GEMM from 8) give the same
 *     top-10 items as a brute force in double in this file, for queries whose top 11 scores lie
 *     at least 1e-4 apart (so F32 rounding cannot reorder them), and the same items as one query
 *     at a time; the executor has 2 threads.
 *
 *   test_index_vectors WORK_DIR
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/check.h"
#include "index/index.h"
#include "uform/uform.h"

#define ROWS 3000
#define DIMS 48
#define TOP 10
#define MOST_QUERIES 1024

static uint64_t state = 0x7E57EC7025ull;

static void unit_row(float *row, size_t dims) {
    double norm = 0;
    for (size_t c = 0; c < dims; ++c) row[c] = check_random_float(&state), norm += (double)row[c] * row[c];
    for (size_t c = 0; c < dims; ++c) row[c] = (float)(row[c] / sqrt(norm));
}

/* The top TOP+1 rows of `query` by the double dot product, ties by row; answers 1 when the TOP+1
 * scores are pairwise at least `gap` apart (an answer F32 rounding cannot reorder). */
static int reference_top(const float *rows, const float *query, size_t *best, double gap) {
    double scores[TOP + 1];
    size_t kept = 0;
    for (size_t r = 0; r < ROWS; ++r) {
        double sum = 0;
        for (size_t c = 0; c < DIMS; ++c) sum += (double)rows[r * DIMS + c] * query[c];
        size_t at = kept < TOP + 1 ? kept++ : TOP + 1;
        if (at == TOP + 1 && !(sum > scores[TOP])) continue;
        if (at == TOP + 1) at = TOP;
        while (at > 0 && sum > scores[at - 1]) scores[at] = scores[at - 1], best[at] = best[at - 1], --at;
        scores[at] = sum, best[at] = r;
    }
    for (size_t k = 0; k < TOP; ++k)
        if (scores[k] - scores[k + 1] < gap) return 0;
    return 1;
}

static void round_trip(const char *work) {
    float rows[5 * 4] = {1.0f, -0.0f, 1e-40f, 3.4028235e38f, 0.25f, -0.5f, 0.125f, 2.0f};
    for (size_t i = 8; i < 20; ++i) rows[i] = check_random_float(&state);
    uform_outcome_t outcome = {0};
    uform_index_builder_t builder = NULL;
    CHECK_STATUS(uform_index_builder_create_vectors(4, UFORM_SCALAR_F32, NULL, &builder, &outcome), UFORM_OK);
    static const char names[] = "alphabetagamma";
    size_t offsets[4] = {0, 5, 9, 14};
    uform_tape_t paths = {names, offsets, 3};
    CHECK_STATUS(uform_index_builder_add_vectors(builder, UFORM_MODALITY_TEXT, rows, UFORM_SCALAR_F32, 3, 4, 0, &paths, 0,
                                                 &outcome), UFORM_OK);
    CHECK_STATUS(uform_index_builder_add_vectors(builder, UFORM_MODALITY_TEXT, rows + 12, UFORM_SCALAR_F32, 2, 4, 0, NULL, 0,
                                                 &outcome), UFORM_OK);
    char path[1024];
    snprintf(path, sizeof path, "%s/round_trip.index", work);
    CHECK_STATUS(uform_index_builder_write(builder, path, NULL, 0, &outcome), UFORM_OK);
    uform_index_builder_free(builder);
    uform_index_t index = NULL;
    CHECK_STATUS(uform_index_open(path, NULL, &index, &outcome), UFORM_OK);
    if (!index) return;
    uform_index_description_t description;
    uform_index_describe(index, &description);
    CHECK_EQ_INT(description.count, 5);
    CHECK_EQ_INT(description.counts[UFORM_MODALITY_TEXT], 5);
    CHECK(strcmp(description.fingerprint, UFORM_INDEX_NO_CHECKPOINT) == 0);
    CHECK(memcmp(index->parts[UFORM_MODALITY_TEXT].data, rows, sizeof rows) == 0); /* bit for bit */
    static const char *const expected[5] = {"alpha", "beta", "gamma", "3", "4"};   /* item numbers for NULL paths */
    for (size_t i = 0; i < 5; ++i) {
        const char *name = NULL;
        size_t length = 0;
        CHECK_STATUS(uform_index_item(index, i, NULL, &name, &length), UFORM_OK);
        CHECK_MSG(length == strlen(expected[i]) && memcmp(name, expected[i], length) == 0, "item %zu is '%.*s', expected '%s'",
                  i, (int)length, name, expected[i]);
    }
    uform_index_free(index);
}

static void widening_and_normalising(void) {
    /* F16 1.0, -2.0, 0.5, the smallest subnormal (2^-24) → F32 exactly. */
    const uint16_t halves[4] = {0x3C00, 0xC000, 0x3800, 0x0001};
    const float widened[4] = {1.0f, -2.0f, 0.5f, 5.9604645e-08f};
    const float unnormalised[4] = {3.0f, 0.0f, -4.0f, 0.0f}, zero[4] = {0};
    uform_outcome_t outcome = {0};
    uform_index_builder_t builder = NULL;
    CHECK_STATUS(uform_index_builder_create_vectors(4, UFORM_SCALAR_F32, "0123456789abcdef0123456789abcdef", &builder, &outcome),
                 UFORM_OK);
    CHECK_STATUS(uform_index_builder_add_vectors(builder, UFORM_MODALITY_AUDIO, halves, UFORM_SCALAR_F16, 1, 4, 0, NULL, 0,
                                                 &outcome), UFORM_OK);
    CHECK_STATUS(uform_index_builder_add_vectors(builder, UFORM_MODALITY_AUDIO, unnormalised, UFORM_SCALAR_F32, 1, 4, 0, NULL,
                                                 UFORM_INDEX_NORMALIZE, &outcome), UFORM_OK);
    CHECK_STATUS(uform_index_builder_add_vectors(builder, UFORM_MODALITY_AUDIO, zero, UFORM_SCALAR_F32, 1, 4, 0, NULL,
                                                 UFORM_INDEX_NORMALIZE, &outcome), UFORM_OK);
    uform_index_description_t description;
    uform_index_builder_describe(builder, &description);
    CHECK(strcmp(description.fingerprint, "0123456789abcdef0123456789abcdef") == 0);
    CHECK_EQ_INT(description.counts[UFORM_MODALITY_AUDIO], 3);
    /* The builder's rows are private: read them back from the written file. */
    char path[] = "/tmp/test_index_vectors_XXXXXX";
    int descriptor = mkstemp(path);
    CHECK(descriptor >= 0);
    if (descriptor >= 0) close(descriptor);
    CHECK_STATUS(uform_index_builder_write(builder, path, NULL, 0, &outcome), UFORM_OK);
    uform_index_builder_free(builder);
    uform_index_t index = NULL;
    CHECK_STATUS(uform_index_open(path, NULL, &index, &outcome), UFORM_OK);
    if (index) {
        const float *stored = (const float *)index->parts[UFORM_MODALITY_AUDIO].data;
        CHECK(memcmp(stored, widened, sizeof widened) == 0);
        CHECK_NEAR(stored[4], 0.6f, 0, 1e-7);
        CHECK_NEAR(stored[6], -0.8f, 0, 1e-7);
        CHECK(stored[5] == 0.0f && stored[7] == 0.0f);
        CHECK(memcmp(stored + 8, zero, sizeof zero) == 0); /* a zero row stays zero */
    }
    uform_index_free(index);
    remove(path);
}

/* The other scalar kinds against conversions written here: BF16 rounds to nearest even, I8 is
 * 127·x (exact) rounded half to even and clamped to ±127, B1 the sign bits, most
 * significant bit first, a set bit for x > 0. */
static void scalar_kinds(const char *work) {
    const float values[16] = {0.5f, -0.25f, 1.0f, -1.0f, 2.0f, -3.0f, 0.0f, -0.0f,
                              1.00390625f /* 1 + 2^-8: a BF16 tie, to even (1.0) */, 1.01171875f /* 1 + 3·2^-8: up */,
                              0.00393700787f, -0.5f / 127.0f, 0.7f, -0.7f, 1e-3f, -1e-3f};
    const uform_scalar_kind_t kinds[3] = {UFORM_SCALAR_BF16, UFORM_SCALAR_I8, UFORM_SCALAR_B1};
    for (int k = 0; k < 3; ++k) {
        uform_outcome_t outcome = {0};
        uform_index_builder_t builder = NULL;
        CHECK_STATUS(uform_index_builder_create_vectors(16, kinds[k], NULL, &builder, &outcome), UFORM_OK);
        CHECK_STATUS(uform_index_builder_add_vectors(builder, UFORM_MODALITY_VIDEO, values, UFORM_SCALAR_F32, 1, 16, 0, NULL, 0,
                                                     &outcome), UFORM_OK);
        char path[1024];
        snprintf(path, sizeof path, "%s/scalar%d.index", work, k);
        CHECK_STATUS(uform_index_builder_write(builder, path, NULL, 0, &outcome), UFORM_OK);
        uform_index_builder_free(builder);
        uform_index_t index = NULL;
        CHECK_STATUS(uform_index_open(path, NULL, &index, &outcome), UFORM_OK);
        if (!index) continue;
        const unsigned char *row = index->parts[UFORM_MODALITY_VIDEO].data;
        for (int c = 0; c < 16; ++c) {
            if (kinds[k] == UFORM_SCALAR_BF16) {
                uint32_t bits;
                memcpy(&bits, &values[c], 4);
                uint16_t expected = (uint16_t)((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16), stored;
                memcpy(&stored, row + 2 * c, 2);
                CHECK_MSG(stored == expected, "bf16 column %d: 0x%04x, expected 0x%04x", c, stored, expected);
            } else if (kinds[k] == UFORM_SCALAR_I8) {
                double scaled = nearbyint(127.0 * (double)values[c]); /* the exact product, half to even */
                int expected = scaled > 127 ? 127 : scaled < -127 ? -127 : (int)scaled;
                CHECK_MSG((int)(int8_t)row[c] == expected, "i8 column %d: %d, expected %d", c, (int)(int8_t)row[c], expected);
            } else {
                int bit = row[c / 8] >> (7 - c % 8) & 1;
                CHECK_MSG(bit == (values[c] > 0), "b1 column %d: bit %d for %g", c, bit, values[c]);
            }
        }
        uform_index_free(index);
        remove(path);
    }
}

static void bad_arguments(void) {
    float rows[3 * 4] = {0};
    uform_outcome_t outcome = {0};
    uform_index_builder_t builder = NULL;
    CHECK_STATUS(uform_index_builder_create_vectors(0, UFORM_SCALAR_F32, NULL, &builder, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "dimensions 0");
    CHECK(builder == NULL);
    CHECK_STATUS(uform_index_builder_create_vectors(4, (uform_scalar_kind_t)9, NULL, &builder, &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "scalar 9");
    CHECK_STATUS(uform_index_builder_create_vectors(4, UFORM_SCALAR_F32, "0123456789ABCDEF0123456789abcdef", &builder, &outcome),
                 UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "32 lower-case hex digits");
    CHECK_STATUS(uform_index_builder_create_vectors(4, UFORM_SCALAR_BF16, NULL, &builder, &outcome), UFORM_OK);
    CHECK_STATUS(uform_index_builder_add_vectors(builder, UFORM_MODALITY_IMAGE, rows, UFORM_SCALAR_F32, 3, 4, 0, NULL, 0,
                                                 &outcome), UFORM_OK);
    rows[2 * 4 + 1] = NAN;
    CHECK_STATUS(uform_index_builder_add_vectors(builder, UFORM_MODALITY_IMAGE, rows, UFORM_SCALAR_F32, 3, 4, 0, NULL, 0,
                                                 &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "row 2 column 1 is NaN");
    rows[2 * 4 + 1] = -INFINITY;
    CHECK_STATUS(uform_index_builder_add_vectors(builder, UFORM_MODALITY_IMAGE, rows, UFORM_SCALAR_F32, 3, 4, 0, NULL, 0,
                                                 &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "row 2 column 1 is -inf");
    const uint16_t half_nan[4] = {0, 0, 0, 0x7E00};
    CHECK_STATUS(uform_index_builder_add_vectors(builder, UFORM_MODALITY_IMAGE, half_nan, UFORM_SCALAR_F16, 1, 4, 0, NULL, 0,
                                                 &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "row 0 column 3 is NaN");
    rows[2 * 4 + 1] = 0;
    CHECK_STATUS(uform_index_builder_add_vectors(builder, UFORM_MODALITY_IMAGE, rows, UFORM_SCALAR_F32, 3, 5, 0, NULL, 0,
                                                 &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "vectors have 5 columns, the index holds 4");
    CHECK_STATUS(uform_index_builder_add_vectors(builder, UFORM_MODALITY_IMAGE, rows, UFORM_SCALAR_BF16, 3, 4, 0, NULL, 0,
                                                 &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "read as F32 or F16");
    CHECK_STATUS(uform_index_builder_add_vectors(builder, UFORM_MODALITY_IMAGE, rows, UFORM_SCALAR_F32, 3, 4, 12, NULL, 0,
                                                 &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "stride 12 is shorter than a row (16 bytes)");
    CHECK_STATUS(uform_index_builder_add_vectors(builder, UFORM_MODALITY_IMAGE, rows, UFORM_SCALAR_F32, 3, 4, 0, NULL, 4,
                                                 &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "flags 0x4");
    CHECK_STATUS(uform_index_builder_add_vectors(builder, (uform_modality_t)7, rows, UFORM_SCALAR_F32, 3, 4, 0, NULL, 0,
                                                 &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "modality 7");
    size_t offsets[3] = {0, 1, 2};
    uform_tape_t two = {"ab", offsets, 2};
    CHECK_STATUS(uform_index_builder_add_vectors(builder, UFORM_MODALITY_IMAGE, rows, UFORM_SCALAR_F32, 3, 4, 0, &two, 0,
                                                 &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "paths holds 2 items for 3 rows");
    CHECK_STATUS(uform_index_builder_add_vectors(builder, UFORM_MODALITY_IMAGE, NULL, UFORM_SCALAR_F32, 3, 4, 0, NULL, 0,
                                                 &outcome), UFORM_INVALID_ARGUMENT);
    CHECK_CONTAINS(outcome.message, "vectors is NULL");
    uform_index_description_t description;
    uform_index_builder_describe(builder, &description);
    CHECK_EQ_INT(description.count, 3); /* every failure left the builder as it was */
    uform_index_builder_free(builder);
}

/* Batches across the switch at 8 queries, against the double brute force and one query at a time. */
static void batches(const char *work) {
    float *rows = malloc(ROWS * DIMS * sizeof(float)), *queries = malloc(MOST_QUERIES * DIMS * sizeof(float));
    size_t *expected = malloc(MOST_QUERIES * (TOP + 1) * sizeof(size_t));
    CHECK(rows && queries && expected);
    if (!rows || !queries || !expected) return;
    for (size_t r = 0; r < ROWS; ++r) unit_row(rows + r * DIMS, DIMS);
    size_t drawn = 0;
    for (size_t j = 0; j < MOST_QUERIES; ++drawn) { /* keep the well-separated queries */
        unit_row(queries + j * DIMS, DIMS);
        if (reference_top(rows, queries + j * DIMS, expected + j * (TOP + 1), 1e-4)) ++j;
    }
    CHECK_MSG(drawn < 4 * MOST_QUERIES, "%zu queries drawn for %d well-separated ones", drawn, MOST_QUERIES);
    uform_outcome_t outcome = {0};
    uform_index_builder_t builder = NULL;
    char path[1024];
    snprintf(path, sizeof path, "%s/batches.index", work);
    CHECK_STATUS(uform_index_builder_create_vectors(DIMS, UFORM_SCALAR_F32, NULL, &builder, &outcome), UFORM_OK);
    CHECK_STATUS(uform_index_builder_add_vectors(builder, UFORM_MODALITY_IMAGE, rows, UFORM_SCALAR_F32, ROWS, DIMS, 0, NULL, 0,
                                                 &outcome), UFORM_OK);
    CHECK_STATUS(uform_index_builder_write(builder, path, NULL, 0, &outcome), UFORM_OK);
    uform_index_builder_free(builder);
    uform_index_t index = NULL;
    uform_executor_t executor = NULL;
    uform_arena_t arena = NULL;
    CHECK_STATUS(uform_index_open(path, NULL, &index, &outcome), UFORM_OK);
    CHECK_STATUS(uform_executor_for_ram(NULL, 2, 0, &executor, &outcome), UFORM_OK);
    CHECK_STATUS(uform_arena_for_executor(executor, &arena, &outcome), UFORM_OK);
    uint64_t *single = malloc(MOST_QUERIES * TOP * sizeof *single);
    if (!index || !executor || !arena || !single) return;
    for (size_t j = 0; j < MOST_QUERIES; ++j) { /* one query at a time: the matrix-vector kernels */
        uform_index_search_t search = {0};
        search.index = index, search.executor = executor, search.arena = arena;
        search.queries = queries + j * DIMS, search.queries_count = 1, search.queries_columns = DIMS, search.top = TOP;
        if (uform_index_search(&search) != UFORM_OK) {
            CHECK_MSG(0, "query %zu alone: %s", j, search.outcome.message);
            return;
        }
        for (size_t k = 0; k < TOP; ++k) single[j * TOP + k] = search.hits[k].item;
    }
    static const size_t sizes[] = {1, 7, 8, 32, MOST_QUERIES};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; ++s) {
        size_t count = sizes[s], wrong_reference = 0, wrong_single = 0;
        for (size_t first = 0; first + count <= MOST_QUERIES && first < 64 + count; first += count) {
            uform_index_search_t search = {0};
            search.index = index, search.executor = executor, search.arena = arena;
            search.queries = queries + first * DIMS, search.queries_count = count, search.queries_columns = DIMS;
            search.top = TOP;
            CHECK_STATUS(uform_index_search(&search), UFORM_OK);
            if (!search.hits) break;
            CHECK_EQ_INT(search.hits_per_query, TOP);
            for (size_t j = 0; j < count; ++j)
                for (size_t k = 0; k < TOP; ++k) {
                    uint64_t item = search.hits[j * TOP + k].item;
                    wrong_reference += item != expected[(first + j) * (TOP + 1) + k];
                    wrong_single += item != single[(first + j) * TOP + k];
                    if (k && search.hits[j * TOP + k].score > search.hits[j * TOP + k - 1].score) wrong_reference += 1;
                }
        }
        CHECK_MSG(wrong_reference == 0, "%zu queries: %zu hits differ from the double brute force", count, wrong_reference);
        CHECK_MSG(wrong_single == 0, "%zu queries: %zu hits differ from one query at a time", count, wrong_single);
    }
    free(single);
    uform_arena_free(arena);
    uform_executor_free(executor);
    uform_index_free(index);
    free(rows), free(queries), free(expected);
    remove(path);
}

int main(int argc, char **argv) {
    const char *work = argc > 1 ? argv[1] : "/tmp";
    mkdir(work, 0755);
    round_trip(work);
    widening_and_normalising();
    scalar_kinds(work);
    bad_arguments();
    batches(work);
    return check_finish();
}
