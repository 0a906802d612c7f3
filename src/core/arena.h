/*
 * Arenas: the memory a call's outputs live in.
 *
 * An arena holds one main block and, when a call needs more than it holds, overflow chunks. The
 * next call's rewind folds everything into one main block sized for the largest call so far, so a
 * steady loop stops allocating after its first call — and not at all when the verb reserves its
 * whole footprint up front with `uform__arena_reserve`.
 */
#ifndef UFORM_CORE_ARENA_H
#define UFORM_CORE_ARENA_H

#include "uform/uform.h"

typedef struct uform__arena_chunk_t uform__arena_chunk_t;

struct uform_arena_s {
    uint32_t held;        /* 1 while a call owns the arena (atomic; futex for `uform_arena_free`) */
    uint32_t pad;
    uint64_t generation;  /* atomic; views carry the value they were made under */
    unsigned char *block; /* main block */
    size_t capacity;      /* bytes of the main block */
    size_t used;          /* bytes of the main block handed out since the last rewind */
    uform__arena_chunk_t *overflow; /* chunks allocated since the last rewind, newest first */
    size_t overflow_bytes;
    size_t high_water;    /* the largest total a call needed */
    size_t allocations;   /* system allocations ever made (tests check a steady loop makes none) */
    unsigned long node_mask; /* NUMA nodes to place pages on (0: anywhere) */
    void (*release_owner)(void *owner); /* drops the reference on the executor it was made for */
    void *owner;
};

/* Makes an arena whose pages are bound to the NUMA nodes in `node_mask` (0: no binding). */
uform_status_t uform__arena_create(unsigned long node_mask, uform_arena_t *arena, uform_outcome_t *outcome,
                                   const char *function);

/* Takes the arena for one call: UFORM_CONTENDED (with a message) when another call holds it. */
uform_status_t uform__arena_acquire(uform_arena_t arena, uform_outcome_t *outcome, const char *function);

/* Gives the arena back and wakes a `uform_arena_free` waiting for it. */
void uform__arena_release(uform_arena_t arena);

/* Makes every existing view stale (generation + 1). Done when a call is accepted. */
void uform__arena_bump(uform_arena_t arena);

/* Forgets every allocation of the previous call, folding overflow into one main block. Done by
 * the thread that runs the call, right before it writes outputs. */
uform_status_t uform__arena_rewind(uform_arena_t arena, uform_outcome_t *outcome, const char *function);

/* Makes sure `bytes` more fit in the main block without further allocation. */
uform_status_t uform__arena_reserve(uform_arena_t arena, size_t bytes, uform_outcome_t *outcome, const char *function);

/* `bytes` aligned to `alignment` (a power of two, at most 4096); NULL when memory runs out. */
void *uform__arena_alloc(uform_arena_t arena, size_t bytes, size_t alignment);

/* uform__arena_alloc of `bytes` (at least 1), 64-byte aligned, for a run of allocations checked once:
 * a failure sets *failed and answers NULL. */
static inline void *uform__arena_take(uform_arena_t arena, size_t bytes, int *failed) {
    void *memory = uform__arena_alloc(arena, bytes ? bytes : 1, 64);
    if (!memory) *failed = 1;
    return memory;
}

/* A view of `rows` × `columns` of `scalar` in a fresh allocation of the arena, rows 64-byte aligned
 * apart (stride rounded up to 64 bytes). Answers UFORM_OUT_OF_MEMORY with a message on failure. */
uform_status_t uform__arena_matrix(uform_arena_t arena, size_t rows, size_t columns, uform_scalar_kind_t scalar,
                                   uform_matrix_t *view, uform_outcome_t *outcome, const char *function);

#endif
