/* The approximate-index module's function table (faiss_load.h), loaded by core/on_demand.c. */
#include "index/faiss_load.h"

#include <stddef.h>

#include "core/on_demand.h"

#define SLOT(field) offsetof(uform__faiss_api_t, field)
static const uform__on_demand_symbol_t symbols[] = {
    {0, "uform__faiss_version", SLOT(version)},
    {0, "uform__faiss_create", SLOT(create)},
    {0, "uform__faiss_describe", SLOT(describe)},
    {0, "uform__faiss_centroids", SLOT(centroids)},
    {0, "uform__faiss_train", SLOT(train)},
    {0, "uform__faiss_add", SLOT(add)},
    {0, "uform__faiss_add_numbered", SLOT(add_numbered)},
    {0, "uform__faiss_merge", SLOT(merge)},
    {0, "uform__faiss_serialize", SLOT(serialize)},
    {0, "uform__faiss_deserialize", SLOT(deserialize)},
    {0, "uform__faiss_lists_take", SLOT(lists_take)},
    {0, "uform__faiss_lists_describe", SLOT(lists_describe)},
    {0, "uform__faiss_lists_count", SLOT(lists_count)},
    {0, "uform__faiss_search", SLOT(search)},
    {0, "uform__faiss_free", SLOT(free)},
};
#undef SLOT

static const uform__on_demand_module_t module = {
    .file = UFORM__FAISS_MODULE_NAME,
    .variable = UFORM__FAISS_MODULE_VARIABLE,
    .abi_function = "uform__faiss_module_abi",
    .abi = UFORM__FAISS_ABI,
};

static uform__faiss_api_t table;
static uform__on_demand_t loader = {
    .what = UFORM__FAISS_MODULE_NAME " (FAISS)",
    .module = &module,
    .symbols = symbols,
    .symbol_count = sizeof symbols / sizeof symbols[0],
    .table = &table,
};

uform_status_t uform__faiss_load(const uform__faiss_api_t **api, uform_outcome_t *outcome, const char *function) {
    uform_status_t status = uform__on_demand_require(&loader, "approximate search", function, outcome);
    *api = status == UFORM_OK ? &table : NULL;
    return status;
}
