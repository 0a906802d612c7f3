/* Arenas and the views into them. */
#include "core/arena.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/futex.h"
#include "core/huge_pages.h"
#include "core/numa.h"
#include "core/outcome.h"

struct uform__arena_chunk_t {
    uform__arena_chunk_t *next;
    size_t bytes;     /* mapping length, this header included */
    size_t used;      /* offset of the first free byte from the chunk's start */
};

static size_t round_up(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

static size_t page_size(void) {
    long size = sysconf(_SC_PAGESIZE);
    return size > 0 ? (size_t)size : 4096;
}

/* Maps `bytes` of zero pages, bound to the arena's nodes when it has any. Binding is advice: a
 * kernel without NUMA support refuses mbind, and the pages then come from wherever they fault. */
static void *map_pages(const struct uform_arena_s *arena, size_t bytes) {
    void *pages = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pages == MAP_FAILED) return NULL;
    /* Arenas are reused call after call: 2 MiB pages fault once per 2 MiB and cost fewer TLB
     * misses. */
    if (bytes >= UFORM__HUGE_PAGE) uform__advise_huge_pages(pages, bytes);
    uform__numa_place(pages, bytes, arena->node_mask);
    return pages;
}

static void unmap_pages(void *pages, size_t bytes) {
    if (pages) munmap(pages, bytes);
}

uform_status_t uform__arena_create(unsigned long node_mask, uform_arena_t *arena, uform_outcome_t *outcome,
                                   const char *function) {
    if (!arena) return uform__fail(outcome, UFORM_INVALID_ARGUMENT, function, "the arena out-pointer is NULL");
    *arena = NULL;
    struct uform_arena_s *made = calloc(1, sizeof *made);
    if (!made) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate an arena");
    made->generation = 1;
    made->node_mask = node_mask;
    *arena = made;
    return uform__succeed(outcome, function);
}

uform_status_t uform__arena_acquire(uform_arena_t arena, uform_outcome_t *outcome, const char *function) {
    uint32_t expected = 0;
    if (!__atomic_compare_exchange_n(&arena->held, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return uform__fail(outcome, UFORM_CONTENDED, function,
                           "the arena is held by another call that is not final yet; give every deferred call its own arena");
    return UFORM_OK;
}

void uform__arena_release(uform_arena_t arena) {
    __atomic_store_n(&arena->held, 0, __ATOMIC_RELEASE);
    uform__futex_wake_all(&arena->held);
}

void uform__arena_bump(uform_arena_t arena) { __atomic_add_fetch(&arena->generation, 1, __ATOMIC_ACQ_REL); }

static void free_overflow(uform_arena_t arena) {
    uform__arena_chunk_t *chunk = arena->overflow;
    while (chunk) {
        uform__arena_chunk_t *next = chunk->next;
        unmap_pages(chunk, chunk->bytes);
        chunk = next;
    }
    arena->overflow = NULL;
    arena->overflow_bytes = 0;
}

/* Replaces the main block by one of at least `bytes`. */
static int regrow(uform_arena_t arena, size_t bytes) {
    size_t capacity = round_up(bytes, page_size());
    void *block = map_pages(arena, capacity);
    if (!block) return 0;
    unmap_pages(arena->block, arena->capacity);
    arena->block = block;
    arena->capacity = capacity;
    arena->allocations += 1;
    return 1;
}

uform_status_t uform__arena_rewind(uform_arena_t arena, uform_outcome_t *outcome, const char *function) {
    size_t needed = arena->used + arena->overflow_bytes;
    if (needed > arena->high_water) arena->high_water = needed;
    free_overflow(arena);
    arena->used = 0;
    if (arena->high_water > arena->capacity && !regrow(arena, arena->high_water))
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot map %zu bytes for the arena",
                           arena->high_water);
    return UFORM_OK;
}

uform_status_t uform__arena_reserve(uform_arena_t arena, size_t bytes, uform_outcome_t *outcome, const char *function) {
    size_t needed = arena->used + bytes;
    if (needed < bytes) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "arena size overflows");
    if (needed <= arena->capacity) return UFORM_OK;
    if (arena->used != 0 || arena->overflow) return UFORM_OK; /* later allocations overflow; the next rewind folds */
    if (!regrow(arena, needed))
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot map %zu bytes for the arena", needed);
    if (needed > arena->high_water) arena->high_water = needed;
    return UFORM_OK;
}

void *uform__arena_alloc(uform_arena_t arena, size_t bytes, size_t alignment) {
    if (alignment < 16) alignment = 16;
    size_t start = round_up(arena->used, alignment);
    if (start >= arena->used && start + bytes >= start && start + bytes <= arena->capacity) {
        arena->used = start + bytes;
        return arena->block + start;
    }
    /* Overflow: a chunk of its own, or room left in the newest chunk. */
    uform__arena_chunk_t *chunk = arena->overflow;
    size_t header = round_up(sizeof(uform__arena_chunk_t), 64);
    if (chunk) {
        size_t offset = round_up(chunk->used, alignment);
        if (offset + bytes >= offset && offset + bytes <= chunk->bytes) {
            arena->overflow_bytes += offset - chunk->used + bytes;
            chunk->used = offset + bytes;
            return (unsigned char *)chunk + offset;
        }
    }
    if (bytes > SIZE_MAX / 2) return NULL;
    size_t length = round_up(header + bytes + alignment, page_size());
    size_t minimum = arena->capacity > (1u << 16) ? arena->capacity : (1u << 16);
    if (length < minimum) length = round_up(minimum, page_size());
    chunk = map_pages(arena, length);
    if (!chunk) return NULL;
    arena->allocations += 1;
    chunk->next = arena->overflow;
    chunk->bytes = length;
    size_t offset = round_up(header, alignment);
    chunk->used = offset + bytes;
    arena->overflow = chunk;
    arena->overflow_bytes += bytes + alignment;
    return (unsigned char *)chunk + offset;
}

UFORM_API size_t uform_scalar_row_bytes(uform_scalar_kind_t scalar, size_t columns) {
    switch (scalar) {
    case UFORM_SCALAR_F32: return columns * 4;
    case UFORM_SCALAR_F16:
    case UFORM_SCALAR_BF16: return columns * 2;
    case UFORM_SCALAR_I8: return columns;
    case UFORM_SCALAR_B1: return (columns + 7) / 8;
    default: return 0;
    }
}

uform_status_t uform__arena_matrix(uform_arena_t arena, size_t rows, size_t columns, uform_scalar_kind_t scalar,
                                   uform_matrix_t *view, uform_outcome_t *outcome, const char *function) {
    size_t row_bytes = uform_scalar_row_bytes(scalar, columns);
    size_t stride = round_up(row_bytes ? row_bytes : 1, 64);
    memset(view, 0, sizeof *view);
    if (rows && stride > SIZE_MAX / rows)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "a %zu x %zu output overflows size_t", rows, columns);
    void *data = uform__arena_alloc(arena, rows * stride, 64);
    if (!data && rows)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a %zu x %zu output in the arena",
                           rows, columns);
    view->data = data;
    view->rows = rows;
    view->columns = columns;
    view->stride_bytes = stride;
    view->scalar = scalar;
    view->arena = arena;
    view->generation = __atomic_load_n(&arena->generation, __ATOMIC_ACQUIRE);
    return UFORM_OK;
}

UFORM_API uform_status_t uform_arena_for_host(uform_arena_t *arena, uform_outcome_t *outcome) {
    return uform__arena_create(0, arena, outcome, __func__);
}

UFORM_API uint64_t uform_arena_generation(uform_arena_t arena) {
    return arena ? __atomic_load_n(&arena->generation, __ATOMIC_ACQUIRE) : 0;
}

UFORM_API size_t uform_arena_capacity(uform_arena_t arena) {
    return arena ? arena->capacity + arena->overflow_bytes : 0;
}

UFORM_API void uform_arena_free(uform_arena_t arena) {
    if (!arena) return;
    /* Wait for the deferred call holding it, if any. */
    for (;;) {
        uint32_t held = __atomic_load_n(&arena->held, __ATOMIC_ACQUIRE);
        if (!held) break;
        uform__futex_wait(&arena->held, held);
    }
    free_overflow(arena);
    unmap_pages(arena->block, arena->capacity);
    if (arena->release_owner) arena->release_owner(arena->owner);
    free(arena);
}

UFORM_API uform_status_t uform_matrix_check(const uform_matrix_t *view) {
    if (!view || !view->arena) return UFORM_INVALID_ARGUMENT;
    if (view->generation != __atomic_load_n(&view->arena->generation, __ATOMIC_ACQUIRE)) return UFORM_INVALID_ARGUMENT;
    return UFORM_OK;
}

UFORM_API uform_status_t uform_matrix_row(const uform_matrix_t *view, size_t row, const void **pointer) {
    if (pointer) *pointer = NULL;
    if (!pointer || uform_matrix_check(view) != UFORM_OK || row >= view->rows) return UFORM_INVALID_ARGUMENT;
    *pointer = (const unsigned char *)view->data + row * view->stride_bytes;
    return UFORM_OK;
}

UFORM_API uform_status_t uform_rows_item(const uform_rows_t *view, size_t item, uform_matrix_t *item_view) {
    if (!item_view) return UFORM_INVALID_ARGUMENT;
    memset(item_view, 0, sizeof *item_view);
    if (!view || !view->offsets || item >= view->count || uform_matrix_check(&view->matrix) != UFORM_OK)
        return UFORM_INVALID_ARGUMENT;
    size_t begin = view->offsets[item], end = view->offsets[item + 1];
    if (end < begin || end > view->matrix.rows) return UFORM_INVALID_ARGUMENT;
    *item_view = view->matrix;
    item_view->data = (unsigned char *)view->matrix.data + begin * view->matrix.stride_bytes;
    item_view->rows = end - begin;
    return UFORM_OK;
}
