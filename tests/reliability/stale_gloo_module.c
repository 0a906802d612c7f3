/* A collectives module of another interface revision, for reliability_mesh_stale: libuform must
 * refuse it (UFORM_UNSUPPORTED, "stale") before it looks up any other function. */
#include <stdint.h>

#include "mesh/gloo.h"

__attribute__((visibility("default"))) uint32_t uform__gloo_module_abi(void) { return UFORM__GLOO_ABI + 1; }
