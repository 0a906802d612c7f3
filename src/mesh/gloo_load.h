/*
 * Loading the collectives module, libuform-gloo.so.4, on first use. libuform links neither Gloo nor
 * libstdc++ (nor Gloo's own dependencies: hiredis, ibverbs, libnl, zlib): only the module does, and
 * only a mesh of more than one member opens it, so a process that encodes, searches or trains alone
 * never maps any of them (uform.h, "Mesh"; bench/README.md, "Footprint").
 *
 * Where from, and the outcomes: core/on_demand.h (UForm's modules; the variable is
 * UFORM_MESH_MODULE). The module must answer UFORM__GLOO_ABI (gloo.h) from uform__gloo_module_abi
 * and define every function of the table; a stale module is refused. A module that loaded stays
 * loaded (Gloo's threads may outlive any one mesh). Thread-safe. Private to src/mesh/.
 */
#ifndef UFORM_MESH_GLOO_LOAD_H
#define UFORM_MESH_GLOO_LOAD_H

#include "mesh/gloo.h"
#include "uform/uform.h"

/* The module's file name, with libuform's ABI major in it (core/on_demand.h says why). */
#define UFORM__GLOO_MODULE_NAME "libuform-gloo.so.4"

/* The environment variable that names the module's path (tests, relocated installs). */
#define UFORM__GLOO_MODULE_VARIABLE "UFORM_MESH_MODULE"

/* The module's functions, typed by their declarations in gloo.h. */
typedef struct uform__gloo_api_t {
    __typeof__(uform__gloo_connect) *connect;
    __typeof__(uform__gloo_redis_open) *redis_open;
    __typeof__(uform__gloo_allreduce_sum) *allreduce_sum;
    __typeof__(uform__gloo_allgatherv) *allgatherv;
    __typeof__(uform__gloo_broadcast) *broadcast;
    __typeof__(uform__gloo_barrier) *barrier;
    __typeof__(uform__gloo_close) *close;
    __typeof__(uform__gloo_free) *free;
} uform__gloo_api_t;

/* Loads the module on the first call and sets `*api` to its table (valid for the life of the
 * process); later calls answer at once. On failure `*api` is NULL and `outcome` is failed on behalf
 * of `function`. */
uform_status_t uform__gloo_load(const uform__gloo_api_t **api, uform_outcome_t *outcome, const char *function);

#endif
