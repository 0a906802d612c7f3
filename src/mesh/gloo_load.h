/*
 * Loading the collectives module, libuform-gloo.so.4, on first use. libuform links neither Gloo nor
 * libstdc++ (nor Gloo's own dependencies: hiredis, ibverbs, libnl, zlib): only the module does, and
 * only a mesh of more than one member opens it, so a process that encodes, searches or trains alone
 * never maps any of them (uform.h, "Mesh"; bench/README.md, "Footprint").
 *
 * Where from, first match wins:
 *   1. the path in the environment variable UFORM_MESH_MODULE when it is set and not empty; then
 *      nothing else is tried, so a wrong path is reported rather than silently replaced;
 *   2. the folder of the binary that holds libuform (dladdr): libuform.so's own folder, or the
 *      program's for one linked with libuform.a;
 *   3. the install libdir (UFORM_MESH_INSTALL_DIR, CMake's CMAKE_INSTALL_FULL_LIBDIR);
 *   4. the build folder (UFORM_MESH_BUILD_DIR, CMake's PROJECT_BINARY_DIR), for the tests and tools
 *      run from the build tree.
 * A candidate that does not exist is skipped; the first that exists is opened, and its outcome is
 * the answer. The module must answer UFORM__GLOO_ABI (gloo.h) from uform__gloo_module_abi and
 * define every function of the table; a stale module is refused.
 *
 * Outcomes: UFORM_OK; UFORM_UNSUPPORTED naming what is missing with dlerror's words (no module
 * anywhere, a dependency of the module such as libgloo.so.0, a stale module, a missing function) —
 * remembered, the same answer for every later call; UFORM_OUT_OF_MEMORY when dlopen ran out of
 * memory (av_load.h's reading of dlerror, and its second attempt), not remembered. Never prints,
 * exits or aborts; a module that loaded stays loaded (Gloo's threads may outlive any one mesh).
 * Thread-safe: the first caller loads under a lock, later callers read the finished table.
 * Private to src/mesh/.
 */
#ifndef UFORM_MESH_GLOO_LOAD_H
#define UFORM_MESH_GLOO_LOAD_H

#include "mesh/gloo.h"
#include "uform/uform.h"

/* The module's file name: the ABI major in the name, like libuform's soname, so that libuform.so.4
 * and a later libuform.so.5 can share a library folder without opening each other's module. */
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
