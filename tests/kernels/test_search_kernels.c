/*
 * The search kernels of every class this machine runs, on shapes with 1, prime and ragged row and
 * column counts and 1..13 queries: dot_i8 and hamming_b1 equal exact integer references, and
 * hamming_b1_within marks exactly the rows those distances put within each query's limit; dot_f32
 * and dot_bf16 stay within F32 summation error of a double reference (the BF16 products are
 * exact). Equal rows must score bit-identically wherever they fall (first, middle, tail block),
 * because search orders ties by item. Inputs come from a fixed seed, printed on failure.
 */
#include <stdint.h>

#include "common/check.h"
#include "common/skip.h"
#include "kernels/search.h"

static uint64_t seed = 0x5EA4C4;
static uint32_t next_random(void) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(seed >> 33);
}
static float uniform(void) { return (float)next_random() / 2147483648.0f * 2.0f - 1.0f; }

static uint16_t to_bf16(float value) {
    uint32_t bits;
    memcpy(&bits, &value, 4);
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    return (uint16_t)(bits >> 16);
}
static double from_bf16(uint16_t value) {
    uint32_t bits = (uint32_t)value << 16;
    float result;
    memcpy(&result, &bits, 4);
    return result;
}

static const uform_cpu_class_t classes[] = {UFORM_CPU_CLASS_SERIAL, UFORM_CPU_CLASS_INTEL_HASWELL,
                                            UFORM_CPU_CLASS_INTEL_SKYLAKE, UFORM_CPU_CLASS_INTEL_ICELAKE,
                                            UFORM_CPU_CLASS_AMD_GENOA};

/* hamming_b1_within against the distances hamming_b1 just produced (checked above against the
 * popcount reference): every bit of every query's words, the bits past `rows` clear, the words
 * past ceil(rows / 64) untouched. Limits per query: 0, 255, 256, UINT32_MAX, a random value, and
 * the exact distance of some row (the test is "≤": that row must be marked, and one above it not). */
static void check_within(const uform__search_kernels_t *kernels, size_t rows, size_t bytes, const uint8_t *xbits,
                         size_t bits_stride, size_t queries, const uint8_t *qbits, size_t q_stride,
                         const uint32_t *distances, size_t distances_stride) {
    const size_t words = (rows + 63) / 64, near_stride = words + 1;
    uint64_t *near = malloc(queries * near_stride * sizeof(uint64_t));
    uint32_t *limits = malloc(queries * sizeof(uint32_t));
    for (size_t j = 0; j < queries; ++j) {
        const uint32_t fixed[4] = {0, 255, 256, UINT32_MAX};
        const uint32_t at_row = distances[j * distances_stride + (j * 7) % rows];
        const size_t choice = (j + rows) % 7;
        limits[j] = choice < 4 ? fixed[choice] : choice == 4 ? next_random() % (8 * (uint32_t)bytes + 2)
                  : choice == 5 ? at_row : (at_row ? at_row - 1 : 0);
    }
    for (size_t i = 0; i < queries * near_stride; ++i) near[i] = 0xA5A5A5A5A5A5A5A5ull;
    kernels->hamming_b1_within(rows, bytes, xbits, bits_stride, queries, qbits, q_stride, limits, near, near_stride);
    size_t mismatches = 0;
    for (size_t j = 0; j < queries; ++j) {
        for (size_t r = 0; r < words * 64; ++r) {
            const int marked = (int)(near[j * near_stride + r / 64] >> (r % 64) & 1);
            const int expected = r < rows && distances[j * distances_stride + r] <= limits[j];
            if (marked != expected && mismatches++ < 5)
                fprintf(stderr, "hamming_b1_within (%s, %zu rows of %zu bytes): query %zu row %zu limit %u: marked %d, expected %d\n",
                        uform_cpu_class_name(kernels->cpu_class), rows, bytes, j, r, limits[j], marked, expected);
        }
        CHECK_MSG(near[j * near_stride + words] == 0xA5A5A5A5A5A5A5A5ull, "hamming_b1_within wrote past word %zu", words);
    }
    CHECK_MSG(mismatches == 0, "hamming_b1_within: %zu wrong bits (%s, %zu rows, %zu bytes, %zu queries)", mismatches,
              uform_cpu_class_name(kernels->cpu_class), rows, bytes, queries);
    free(near), free(limits);
}

static void check_shape(const uform__search_kernels_t *kernels, size_t rows, size_t columns, size_t queries, int dense) {
    size_t stride = dense ? columns : columns + 3; /* rows need not be dense */
    float *x = calloc(rows * stride, sizeof(float)), *q = calloc(queries * stride, sizeof(float));
    uint16_t *xb = calloc(rows * stride, 2), *qb = calloc(queries * stride, 2);
    int8_t *xi = calloc(rows * stride, 1), *qi = calloc(queries * stride, 1);
    size_t bytes = (columns + 7) / 8, bits_stride = dense ? bytes : stride;
    uint8_t *xbits = calloc(rows * stride, 1), *qbits = calloc(queries * stride, 1);
    float *scores = calloc(queries * rows, sizeof(float));
    int32_t *integers = calloc(queries * rows, sizeof(int32_t));
    uint32_t *distances = calloc(queries * rows, sizeof(uint32_t));
    for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < columns; ++c) x[r * stride + c] = uniform() / sqrtf((float)columns);
    for (size_t j = 0; j < queries; ++j)
        for (size_t c = 0; c < columns; ++c) q[j * stride + c] = uniform() / sqrtf((float)columns);
    /* Duplicates: the last row equals the first, and row 5 (when present) too. */
    if (rows > 1) memcpy(x + (rows - 1) * stride, x, columns * sizeof(float));
    if (rows > 6) memcpy(x + 5 * stride, x, columns * sizeof(float));
    for (size_t i = 0; i < rows * stride; ++i) {
        xb[i] = to_bf16(x[i]);
        xi[i] = (int8_t)((int)(next_random() % 255) - 127);
        xbits[i] = (uint8_t)next_random();
    }
    for (size_t i = 0; i < queries * stride; ++i) {
        qb[i] = to_bf16(q[i]);
        qi[i] = (int8_t)((int)(next_random() % 255) - 127);
        qbits[i] = (uint8_t)next_random();
    }
    if (rows > 1) memcpy(xi + (rows - 1) * stride, xi, columns), memcpy(xbits + (rows - 1) * bits_stride, xbits, bytes);
    /* Distances 0 and 8·bytes (the largest, 256 for 32-byte rows): row 2 equals query 0's bits, row 3
     * their complement. */
    if (rows > 3)
        for (size_t b = 0; b < bytes; ++b) xbits[2 * bits_stride + b] = qbits[b], xbits[3 * bits_stride + b] = (uint8_t)~qbits[b];

    kernels->dot_f32(rows, columns, x, stride, queries, q, stride, scores, rows);
    for (size_t j = 0; j < queries; ++j)
        for (size_t r = 0; r < rows; ++r) {
            double expected = 0, magnitude = 0;
            for (size_t c = 0; c < columns; ++c) {
                expected += (double)q[j * stride + c] * x[r * stride + c];
                magnitude += fabs((double)q[j * stride + c] * x[r * stride + c]);
            }
            CHECK_NEAR(scores[j * rows + r], expected, 1e-6 * magnitude + 1e-30, 0);
        }
    for (size_t j = 0; j < queries && rows > 1; ++j) {
        CHECK_MSG(scores[j * rows] == scores[j * rows + rows - 1], "f32 equal rows: %.9g vs %.9g (%s, %zu x %zu)",
                  scores[j * rows], scores[j * rows + rows - 1], uform_cpu_class_name(kernels->cpu_class), rows, columns);
        if (rows > 6) CHECK(scores[j * rows] == scores[j * rows + 5]);
    }

    kernels->dot_bf16(rows, columns, xb, stride, queries, qb, stride, scores, rows);
    for (size_t j = 0; j < queries; ++j)
        for (size_t r = 0; r < rows; ++r) {
            double expected = 0, magnitude = 0;
            for (size_t c = 0; c < columns; ++c) {
                expected += from_bf16(qb[j * stride + c]) * from_bf16(xb[r * stride + c]);
                magnitude += fabs(from_bf16(qb[j * stride + c]) * from_bf16(xb[r * stride + c]));
            }
            CHECK_NEAR(scores[j * rows + r], expected, 1e-6 * magnitude + 1e-30, 0);
        }
    for (size_t j = 0; j < queries && rows > 1; ++j) CHECK(scores[j * rows] == scores[j * rows + rows - 1]);

    kernels->dot_i8(rows, columns, xi, stride, queries, qi, stride, integers, rows);
    for (size_t j = 0; j < queries; ++j)
        for (size_t r = 0; r < rows; ++r) {
            int32_t expected = 0;
            for (size_t c = 0; c < columns; ++c) expected += (int32_t)qi[j * stride + c] * xi[r * stride + c];
            CHECK_EQ_INT(integers[j * rows + r], expected);
        }

    kernels->hamming_b1(rows, bytes, xbits, bits_stride, queries, qbits, stride, distances, rows);
    for (size_t j = 0; j < queries; ++j)
        for (size_t r = 0; r < rows; ++r) {
            uint32_t expected = 0;
            for (size_t b = 0; b < bytes; ++b)
                expected += (uint32_t)__builtin_popcount((unsigned)(xbits[r * bits_stride + b] ^ qbits[j * stride + b]));
            CHECK_EQ_INT(distances[j * rows + r], expected);
        }
    check_within(kernels, rows, bytes, xbits, bits_stride, queries, qbits, stride, distances, rows);
    free(x), free(q), free(xb), free(qb), free(xi), free(qi), free(xbits), free(qbits);
    free(scores), free(integers), free(distances);
}

int main(void) {
    const size_t rows_list[] = {1, 2, 3, 4, 5, 7, 13, 64, 67};
    const size_t columns_list[] = {1, 7, 8, 16, 31, 33, 64, 65, 127, 256, 259};
    const size_t queries_list[] = {1, 2, 5, 13};
    for (size_t k = 0; k < sizeof classes / sizeof classes[0]; ++k) {
        if (!check_class_runs(classes[k])) {
            continue;
        }
        const uform__search_kernels_t *kernels = uform__search_kernels(classes[k]);
        size_t before = check_failed_count;
        for (size_t a = 0; a < sizeof rows_list / sizeof *rows_list; ++a)
            for (size_t b = 0; b < sizeof columns_list / sizeof *columns_list; ++b)
                for (size_t c = 0; c < sizeof queries_list / sizeof *queries_list; ++c)
                    check_shape(kernels, rows_list[a], columns_list[b], queries_list[c], 0);
        /* Dense packed rows (the index's layout), where B1 rows of 32 bytes take a special path. */
        for (size_t a = 0; a < sizeof rows_list / sizeof *rows_list; ++a)
            for (size_t c = 0; c < sizeof queries_list / sizeof *queries_list; ++c) {
                check_shape(kernels, rows_list[a], 256, queries_list[c], 1);
                check_shape(kernels, rows_list[a], 96, queries_list[c], 1);
            }
        /* Several 64-row words of 16-row steps with a ragged end (hamming_b1_within's packed path). */
        for (size_t c = 0; c < sizeof queries_list / sizeof *queries_list; ++c) check_shape(kernels, 1000, 256, queries_list[c], 1);
        printf("%s (table %s): %s\n", uform_cpu_class_name(classes[k]), uform_cpu_class_name(kernels->cpu_class),
               check_failed_count == before ? "ok" : "FAILED");
    }
    if (check_failed_count) fprintf(stderr, "seed 0x5EA4C4\n");
    return check_finish();
}
