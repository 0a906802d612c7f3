/* The collectives module, loaded on first use (gloo_load.h). The same pattern as core/av_load.c:
 * a lock for the first load, an atomic state for everyone after, nothing allocated here. */
#include "mesh/gloo_load.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/outcome.h"
#include "core/av_load.h"

#ifndef UFORM_MESH_INSTALL_DIR
#define UFORM_MESH_INSTALL_DIR ""
#endif
#ifndef UFORM_MESH_BUILD_DIR
#define UFORM_MESH_BUILD_DIR ""
#endif

static const struct {
    const char *name;
    size_t offset;
} symbols[] = {
    {"uform__gloo_connect", offsetof(uform__gloo_api_t, connect)},
    {"uform__gloo_redis_open", offsetof(uform__gloo_api_t, redis_open)},
    {"uform__gloo_allreduce_sum", offsetof(uform__gloo_api_t, allreduce_sum)},
    {"uform__gloo_allgatherv", offsetof(uform__gloo_api_t, allgatherv)},
    {"uform__gloo_broadcast", offsetof(uform__gloo_api_t, broadcast)},
    {"uform__gloo_barrier", offsetof(uform__gloo_api_t, barrier)},
    {"uform__gloo_close", offsetof(uform__gloo_api_t, close)},
    {"uform__gloo_free", offsetof(uform__gloo_api_t, free)},
};

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static int state; /* 0 not tried or retry, 1 loaded, 2 failed for good; read atomically */
static uform__gloo_api_t api_table;
static char failure[UFORM_OUTCOME_MESSAGE_CAPACITY - 64];

/* What an attempt came to (as in av_load.c). */
typedef enum load_result_t {
    loaded,    /* the module and every function are there */
    absent,    /* no module, a dependency missing, a stale module: the same answer forever */
    exhausted, /* dlopen's own allocations failed (dlerror said so) */
    refused,   /* the module is there and would not load, for a reason dlerror did not name as memory */
} load_result_t;

/* A reason, cut to `capacity` (the outcome's message is shorter than a path can be). */
__attribute__((format(printf, 3, 4))) static void say(char *reason, size_t capacity, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(reason, capacity, format, arguments);
    va_end(arguments);
}

static int exists(const char *path) {
    struct stat info;
    return path[0] && stat(path, &info) == 0;
}

/* The folder of the binary that holds this function, into `folder` ("" when dladdr cannot say). */
static void own_folder(char *folder, size_t capacity) {
    folder[0] = 0;
    Dl_info info;
    if (!dladdr((void *)&uform__gloo_load, &info) || !info.dli_fname || !strchr(info.dli_fname, '/')) return;
    snprintf(folder, capacity, "%s", info.dli_fname);
    *strrchr(folder, '/') = 0;
}

/* Opens `path` and fills the table; on failure closes what it opened. */
static load_result_t open_module(const char *path, char *reason, size_t capacity) {
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        if (uform__dl_says_out_of_memory(why)) {
            say(reason, capacity, "cannot allocate what loading %s needs (%s)", path, why);
            return exhausted;
        }
        say(reason, capacity, "%s", why ? why : "dlopen gave no reason");
        return uform__dl_says_missing(why) ? absent : refused;
    }
    uint32_t (*abi)(void) = NULL;
    void *address = dlsym(handle, "uform__gloo_module_abi");
    memcpy(&abi, &address, sizeof abi);
    uint32_t found = abi ? abi() : 0;
    if (found != UFORM__GLOO_ABI) {
        say(reason, capacity, "%s is stale: its interface is %u.%u, this libuform needs %u.%u (reinstall UForm)", path,
                 (unsigned)(found >> 16), (unsigned)(found & 0xFFFF), (unsigned)(UFORM__GLOO_ABI >> 16),
                 (unsigned)(UFORM__GLOO_ABI & 0xFFFF));
        dlclose(handle);
        return absent;
    }
    uform__gloo_api_t table;
    for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; ++i) {
        address = dlsym(handle, symbols[i].name);
        if (!address) {
            say(reason, capacity, "%s has no function %s (a stale module: reinstall UForm)", path, symbols[i].name);
            dlclose(handle);
            return absent;
        }
        memcpy((char *)&table + symbols[i].offset, &address, sizeof address);
    }
    api_table = table;
    return loaded; /* never closed: Gloo's threads and handles may outlive any one mesh */
}

/* The search of gloo_load.h. */
static load_result_t load(char *reason, size_t capacity) {
    const char *variable = getenv(UFORM__GLOO_MODULE_VARIABLE);
    if (variable && variable[0]) {
        load_result_t result = open_module(variable, reason, capacity);
        if (result == absent || result == refused) {
            char said[sizeof failure];
            snprintf(said, sizeof said, "%s", reason);
            say(reason, capacity, "%s=%s: %s", UFORM__GLOO_MODULE_VARIABLE, variable, said);
        }
        return result;
    }
    char folders[3][PATH_MAX];
    own_folder(folders[0], sizeof folders[0]);
    snprintf(folders[1], sizeof folders[1], "%s", UFORM_MESH_INSTALL_DIR);
    snprintf(folders[2], sizeof folders[2], "%s", UFORM_MESH_BUILD_DIR);
    char looked[sizeof failure] = "";
    size_t used = 0;
    for (int i = 0; i < 3; ++i) {
        if (!folders[i][0] || (i > 0 && !strcmp(folders[i], folders[0])) || (i > 1 && !strcmp(folders[i], folders[1])))
            continue; /* the build folder is libuform.so's own when the tests run there */
        char path[PATH_MAX + sizeof UFORM__GLOO_MODULE_NAME + 1];
        int written = snprintf(path, sizeof path, "%s/%s", folders[i], UFORM__GLOO_MODULE_NAME);
        if (written > 0 && (size_t)written < sizeof path && exists(path)) return open_module(path, reason, capacity);
        written = snprintf(looked + used, sizeof looked - used, "%s%s", used ? ", " : "", folders[i]);
        if (written > 0) used = (size_t)written < sizeof looked - used ? used + (size_t)written : sizeof looked - 1;
    }
    say(reason, capacity, "%s is not installed (%s is unset; looked in %s)", UFORM__GLOO_MODULE_NAME,
        UFORM__GLOO_MODULE_VARIABLE, used ? looked : "no folder: dladdr could not say where libuform is");
    return absent;
}

uform_status_t uform__gloo_load(const uform__gloo_api_t **api, uform_outcome_t *outcome, const char *function) {
    *api = NULL;
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == 1) {
        *api = &api_table;
        return UFORM_OK;
    }
    pthread_mutex_lock(&load_lock);
    uform_status_t status = UFORM_OK;
    char reason[sizeof failure];
    reason[0] = 0;
    if (state == 0) {
        load_result_t result = load(reason, sizeof reason);
        if (result == refused) /* glibc reports some failed allocations vaguely: once more, memory may be back */
            result = load(reason, sizeof reason);
        if (result == refused) { /* twice: exhaustion if the allocator cannot serve a small block now */
            void *probe = malloc((size_t)1 << 16);
            if (!probe) result = exhausted;
            free(probe);
        }
        if (result == loaded) {
            __atomic_store_n(&state, 1, __ATOMIC_RELEASE);
        } else {
            if (result == absent) { /* the same answer for everyone from now on */
                memcpy(failure, reason, sizeof reason);
                state = 2;
            }
            status = result == exhausted ? UFORM_OUT_OF_MEMORY : UFORM_UNSUPPORTED;
        }
    } else if (state == 2) {
        status = UFORM_UNSUPPORTED;
        memcpy(reason, failure, sizeof reason);
    }
    pthread_mutex_unlock(&load_lock);
    if (status == UFORM_OK) {
        *api = &api_table;
        return UFORM_OK;
    }
    if (status == UFORM_OUT_OF_MEMORY)
        return uform__fail(outcome, status, function, "the mesh's collectives: %s", reason);
    return uform__fail(outcome, status, function, "the mesh's collectives need %s (Gloo): %s", UFORM__GLOO_MODULE_NAME,
                       reason);
}
