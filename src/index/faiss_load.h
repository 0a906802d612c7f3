/*
 * Loading the approximate-index module, libuform-faiss.so.4, on first use: libuform links neither
 * FAISS nor BLAS, OpenMP or libstdc++; only the module does, and only building or opening an
 * approximate structure opens it, so exact search and everything else never map them.
 *
 * Where from, first match wins (the collectives module's rule, mesh/gloo_load.h):
 *   1. the path in the environment variable UFORM_FAISS_MODULE when it is set and not empty; then
 *      nothing else is tried, so a wrong path is reported rather than silently replaced;
 *   2. the folder of the binary that holds libuform (dladdr);
 *   3. the install libdir (UFORM_FAISS_INSTALL_DIR, CMake's CMAKE_INSTALL_FULL_LIBDIR);
 *   4. the build folder (UFORM_FAISS_BUILD_DIR, CMake's PROJECT_BINARY_DIR).
 * The module must answer UFORM__FAISS_ABI (faiss.h) and define every function of the table.
 *
 * Outcomes: UFORM_OK; UFORM_UNSUPPORTED naming the module's path (or the folders looked in) and
 * dlopen's reason — remembered, the same answer for every later call; UFORM_OUT_OF_MEMORY when
 * dlopen ran out of memory, not remembered. Never prints, exits or aborts; a loaded module stays
 * loaded (OpenMP's threads outlive any one call). Thread-safe. Private to src/index/.
 */
#ifndef UFORM_INDEX_FAISS_LOAD_H
#define UFORM_INDEX_FAISS_LOAD_H

#include "index/faiss.h"
#include "uform/uform.h"

#define UFORM__FAISS_MODULE_NAME "libuform-faiss.so.4"
#define UFORM__FAISS_MODULE_VARIABLE "UFORM_FAISS_MODULE"

typedef struct uform__faiss_api_t {
    __typeof__(uform__faiss_version) *version;
    __typeof__(uform__faiss_create) *create;
    __typeof__(uform__faiss_describe) *describe;
    __typeof__(uform__faiss_centroids) *centroids;
    __typeof__(uform__faiss_train) *train;
    __typeof__(uform__faiss_add) *add;
    __typeof__(uform__faiss_serialize) *serialize;
    __typeof__(uform__faiss_deserialize) *deserialize;
    __typeof__(uform__faiss_search) *search;
    __typeof__(uform__faiss_free) *free;
} uform__faiss_api_t;

/* Loads the module on the first call and sets `*api` to its table (valid for the life of the
 * process); on failure `*api` is NULL and `outcome` is failed on behalf of `function`. */
uform_status_t uform__faiss_load(const uform__faiss_api_t **api, uform_outcome_t *outcome, const char *function);

#endif
