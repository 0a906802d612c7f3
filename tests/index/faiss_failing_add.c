/*
 * A stand-in for libuform-faiss.so.4 whose adds fail (tests/index/test_index_members_ivf.py): it
 * forwards every function of src/index/faiss.h to the real module, opened from the path it was
 * built with, except uform__faiss_add and uform__faiss_add_numbered, which answer
 * UFORM_OUT_OF_MEMORY with "injected add failure" — or, with UFORM_TEST_FAILING_FAISS_DIE=1 in the
 * environment, end the process at once, as a member that crashes while adding. With
 * UFORM_TEST_FAILING_FAISS_SLOW_TRAIN=S instead, adds are forwarded too and training first sleeps S
 * seconds: a member 0 that trains longer than the mesh's timeout. Pointed at by
 * UFORM_FAISS_MODULE for one member of a mesh, it makes that member fail inside the add step
 * without any hook in the library.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "index/faiss.h"

/* The real module's function `name`, looked up once per call site (a missing one ends the test
 * process: the stand-in cannot answer for it). */
static void *real(const char *name) {
    static void *module;
    if (!module && !(module = dlopen(UFORM_TEST_REAL_FAISS_MODULE, RTLD_NOW | RTLD_LOCAL))) _exit(71);
    void *function = dlsym(module, name);
    if (!function) _exit(72);
    return function;
}

#define FORWARD(name) ((__typeof__(name) *)real(#name))

uint32_t uform__faiss_module_abi(void) { return UFORM__FAISS_ABI; }

const char *uform__faiss_version(void) { return FORWARD(uform__faiss_version)(); }

uform_status_t uform__faiss_create(const char *recipe, size_t dimensions, uform__faiss_t **index, char *message,
                                   size_t capacity) {
    return FORWARD(uform__faiss_create)(recipe, dimensions, index, message, capacity);
}

void uform__faiss_describe(const uform__faiss_t *index, uform__faiss_facts_t *facts) {
    FORWARD(uform__faiss_describe)(index, facts);
}

uint64_t uform__faiss_centroids(const uform__faiss_t *index) { return FORWARD(uform__faiss_centroids)(index); }

/* The seconds of UFORM_TEST_FAILING_FAISS_SLOW_TRAIN, 0 without it. */
static unsigned slow_train(void) {
    const char *value = getenv("UFORM_TEST_FAILING_FAISS_SLOW_TRAIN");
    return value ? (unsigned)atoi(value) : 0;
}

uform_status_t uform__faiss_train(uform__faiss_t *index, size_t rows, const float *vectors, size_t threads,
                                  char *message, size_t capacity) {
    if (slow_train()) sleep(slow_train());
    return FORWARD(uform__faiss_train)(index, rows, vectors, threads, message, capacity);
}

static uform_status_t refuse(char *message, size_t capacity) {
    const char *die = getenv("UFORM_TEST_FAILING_FAISS_DIE");
    if (die && die[0] == '1') _exit(9);
    snprintf(message, capacity, "injected add failure (tests/index/faiss_failing_add.c)");
    return UFORM_OUT_OF_MEMORY;
}

uform_status_t uform__faiss_add(uform__faiss_t *index, size_t rows, const float *vectors, size_t threads, char *message,
                                size_t capacity) {
    if (slow_train()) return FORWARD(uform__faiss_add)(index, rows, vectors, threads, message, capacity);
    return refuse(message, capacity);
}

uform_status_t uform__faiss_add_numbered(uform__faiss_t *index, size_t rows, const float *vectors, uint64_t first_id,
                                         size_t threads, char *message, size_t capacity) {
    if (slow_train()) return FORWARD(uform__faiss_add_numbered)(index, rows, vectors, first_id, threads, message, capacity);
    return refuse(message, capacity);
}

uform_status_t uform__faiss_merge(uform__faiss_t *into, uform__faiss_t *from, char *message, size_t capacity) {
    return FORWARD(uform__faiss_merge)(into, from, message, capacity);
}

uform_status_t uform__faiss_serialize(const uform__faiss_t *index, int (*write)(void *, const void *, size_t), void *state,
                                      int *error, char *message, size_t capacity) {
    return FORWARD(uform__faiss_serialize)(index, write, state, error, message, capacity);
}

uform_status_t uform__faiss_deserialize(const void *bytes, size_t size, const char *lists_path, uint64_t lists_bytes,
                                        uform__faiss_t **index, char *message, size_t capacity) {
    return FORWARD(uform__faiss_deserialize)(bytes, size, lists_path, lists_bytes, index, message, capacity);
}

uform_status_t uform__faiss_lists_take(uform__faiss_t *into, uform__faiss_t *from, int (*write)(void *, const void *, size_t),
                                       void *state, uint64_t *sizes, int *error, char *message, size_t capacity) {
    return FORWARD(uform__faiss_lists_take)(into, from, write, state, sizes, error, message, capacity);
}

uform_status_t uform__faiss_lists_count(uform__faiss_t *index, uint64_t count, char *message, size_t capacity) {
    return FORWARD(uform__faiss_lists_count)(index, count, message, capacity);
}

uform_status_t uform__faiss_lists_describe(uform__faiss_t *index, const uint64_t *sizes, const char *name, char *message,
                                           size_t capacity) {
    return FORWARD(uform__faiss_lists_describe)(index, sizes, name, message, capacity);
}

uform_status_t uform__faiss_search(const uform__faiss_t *index, const uform__faiss_search_t *search, char *message,
                                   size_t capacity) {
    return FORWARD(uform__faiss_search)(index, search, message, capacity);
}

void uform__faiss_free(uform__faiss_t *index) { FORWARD(uform__faiss_free)(index); }
