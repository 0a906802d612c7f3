/* Arenas and views: generations, stale views, ragged rows, a steady loop that allocates once. */
#include "common/check.h"
#include "core/arena.h"
#include "exec/test_verb.h"

static void test_views(void) {
    uform_arena_t arena = NULL;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform_arena_for_host(&arena, &outcome), UFORM_OK);
    CHECK_EQ_INT(uform_arena_generation(arena), 1);
    CHECK_STATUS(uform__arena_acquire(arena, &outcome, "t"), UFORM_OK);
    CHECK_STATUS(uform__arena_acquire(arena, &outcome, "t"), UFORM_CONTENDED);
    uform__arena_bump(arena);
    CHECK_STATUS(uform__arena_rewind(arena, &outcome, "t"), UFORM_OK);
    uform_matrix_t matrix;
    CHECK_STATUS(uform__arena_matrix(arena, 7, 13, UFORM_SCALAR_B1, &matrix, &outcome, "t"), UFORM_OK);
    CHECK_EQ_INT(matrix.stride_bytes % 64, 0);
    CHECK_EQ_INT(uform_scalar_row_bytes(UFORM_SCALAR_B1, 13), 2);
    CHECK_EQ_INT(uform_scalar_row_bytes(UFORM_SCALAR_BF16, 13), 26);
    CHECK_EQ_INT(uform_scalar_row_bytes((uform_scalar_kind_t)9, 13), 0);
    static const size_t offsets[4] = {0, 2, 2, 7};
    uform_rows_t rows = {matrix, offsets, 3};
    uform__arena_release(arena);

    const void *pointer = NULL;
    CHECK_STATUS(uform_matrix_row(&matrix, 6, &pointer), UFORM_OK);
    CHECK(pointer == (char *)matrix.data + 6 * matrix.stride_bytes);
    CHECK_STATUS(uform_matrix_row(&matrix, 7, &pointer), UFORM_INVALID_ARGUMENT);
    CHECK(pointer == NULL);
    uform_matrix_t item;
    CHECK_STATUS(uform_rows_item(&rows, 2, &item), UFORM_OK);
    CHECK_EQ_INT(item.rows, 5);
    CHECK(item.data == (char *)matrix.data + 2 * matrix.stride_bytes);
    CHECK_STATUS(uform_rows_item(&rows, 1, &item), UFORM_OK);
    CHECK_EQ_INT(item.rows, 0);
    CHECK_STATUS(uform_rows_item(&rows, 3, &item), UFORM_INVALID_ARGUMENT);

    /* The next call makes every view stale. */
    uform__arena_bump(arena);
    CHECK_STATUS(uform_matrix_check(&matrix), UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(uform_matrix_row(&matrix, 0, &pointer), UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(uform_rows_item(&rows, 0, &item), UFORM_INVALID_ARGUMENT);
    CHECK_STATUS(uform_matrix_check(NULL), UFORM_INVALID_ARGUMENT);
    uform_matrix_t detached = {0};
    CHECK_STATUS(uform_matrix_check(&detached), UFORM_INVALID_ARGUMENT);
    uform_arena_free(arena);
    uform_arena_free(NULL);
    CHECK_STATUS(uform_arena_for_host(NULL, &outcome), UFORM_INVALID_ARGUMENT);
}

static void test_steady_loop(void) {
    uform_arena_t arena = NULL;
    CHECK_STATUS(uform_arena_for_host(&arena, NULL), UFORM_OK);
    /* Calls of varying size below the first one's: after the first call, no allocation at all. */
    test_verb_t request = {0};
    request.arena = arena;
    request.units = 5000;
    CHECK_STATUS(test_verb(&request), UFORM_OK);
    size_t after_first = arena->allocations;
    for (int i = 0; i < 100; ++i) {
        request.units = 1000 + (size_t)i * 40;
        CHECK_STATUS(test_verb(&request), UFORM_OK);
    }
    CHECK_MSG(arena->allocations <= after_first + 1, "allocations %zu after first %zu", arena->allocations, after_first);
    size_t settled = arena->allocations;
    for (int i = 0; i < 100; ++i) CHECK_STATUS(test_verb(&request), UFORM_OK);
    CHECK_EQ_INT(arena->allocations, settled);
    const void *row;
    CHECK_STATUS(uform_matrix_row(&request.output, 3999, &row), UFORM_OK);
    CHECK(*(const float *)row == 3999.0f);
    CHECK_EQ_INT(uform_arena_generation(arena), 202);

    /* A verb that reserves its footprint first allocates exactly once, on the first call. */
    uform_arena_t reserved = NULL;
    CHECK_STATUS(uform_arena_for_host(&reserved, NULL), UFORM_OK);
    for (int i = 0; i < 50; ++i) {
        CHECK_STATUS(uform__arena_acquire(reserved, NULL, "t"), UFORM_OK);
        uform__arena_bump(reserved);
        CHECK_STATUS(uform__arena_rewind(reserved, NULL, "t"), UFORM_OK);
        CHECK_STATUS(uform__arena_reserve(reserved, 3 * 100 * 64 + 64 * 3, NULL, "t"), UFORM_OK);
        uform_matrix_t a, b, c;
        CHECK_STATUS(uform__arena_matrix(reserved, 100, 16, UFORM_SCALAR_F32, &a, NULL, "t"), UFORM_OK);
        CHECK_STATUS(uform__arena_matrix(reserved, 100, 16, UFORM_SCALAR_F32, &b, NULL, "t"), UFORM_OK);
        CHECK_STATUS(uform__arena_matrix(reserved, 100, 16, UFORM_SCALAR_F32, &c, NULL, "t"), UFORM_OK);
        memset(a.data, 1, 6400), memset(b.data, 2, 6400), memset(c.data, 3, 6400);
        CHECK(((unsigned char *)a.data)[6399] == 1 && ((unsigned char *)c.data)[0] == 3);
        uform__arena_release(reserved);
    }
    CHECK_EQ_INT(reserved->allocations, 1);
    uform_arena_free(reserved);
    uform_arena_free(arena);
}

int main(void) {
    test_views();
    test_steady_loop();
    return check_finish();
}
