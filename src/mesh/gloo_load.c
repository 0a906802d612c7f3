/* The collectives module's function table (gloo_load.h), loaded by core/on_demand.c. */
#include "mesh/gloo_load.h"

#include <stddef.h>

#include "core/on_demand.h"

#define SLOT(field) offsetof(uform__gloo_api_t, field)
static const uform__on_demand_symbol_t symbols[] = {
    {0, "uform__gloo_connect", SLOT(connect)},
    {0, "uform__gloo_redis_open", SLOT(redis_open)},
    {0, "uform__gloo_allreduce_sum", SLOT(allreduce_sum)},
    {0, "uform__gloo_allgatherv", SLOT(allgatherv)},
    {0, "uform__gloo_broadcast", SLOT(broadcast)},
    {0, "uform__gloo_barrier", SLOT(barrier)},
    {0, "uform__gloo_close", SLOT(close)},
    {0, "uform__gloo_free", SLOT(free)},
};
#undef SLOT

static const uform__on_demand_module_t module = {
    .file = UFORM__GLOO_MODULE_NAME,
    .variable = UFORM__GLOO_MODULE_VARIABLE,
    .abi_function = "uform__gloo_module_abi",
    .abi = UFORM__GLOO_ABI,
};

static uform__gloo_api_t table;
static uform__on_demand_t loader = {
    .what = UFORM__GLOO_MODULE_NAME " (Gloo)",
    .module = &module,
    .symbols = symbols,
    .symbol_count = sizeof symbols / sizeof symbols[0],
    .table = &table,
};

uform_status_t uform__gloo_load(const uform__gloo_api_t **api, uform_outcome_t *outcome, const char *function) {
    uform_status_t status = uform__on_demand_require(&loader, "the mesh", function, outcome);
    *api = status == UFORM_OK ? &table : NULL;
    return status;
}
