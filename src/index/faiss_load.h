/*
 * Loading the approximate-index module, libuform-faiss.so.4, on first use: libuform links neither
 * FAISS nor BLAS, OpenMP or libstdc++; only the module does, and only building or opening an
 * approximate structure opens it, so exact search and everything else never map them.
 *
 * Where from, and the outcomes: core/on_demand.h (UForm's modules; the variable is
 * UFORM_FAISS_MODULE). The module must answer UFORM__FAISS_ABI (faiss.h) and define every function
 * of the table. A loaded module stays loaded (OpenMP's threads outlive any one call). Thread-safe.
 * Private to src/index/.
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
    __typeof__(uform__faiss_add_numbered) *add_numbered;
    __typeof__(uform__faiss_merge) *merge;
    __typeof__(uform__faiss_serialize) *serialize;
    __typeof__(uform__faiss_deserialize) *deserialize;
    __typeof__(uform__faiss_lists_take) *lists_take;
    __typeof__(uform__faiss_lists_describe) *lists_describe;
    __typeof__(uform__faiss_lists_count) *lists_count;
    __typeof__(uform__faiss_search) *search;
    __typeof__(uform__faiss_free) *free;
} uform__faiss_api_t;

/* Loads the module on the first call and sets `*api` to its table (valid for the life of the
 * process); on failure `*api` is NULL and `outcome` is failed on behalf of `function`. */
uform_status_t uform__faiss_load(const uform__faiss_api_t **api, uform_outcome_t *outcome, const char *function);

#endif
