/* The approximate-index module, loaded on first use (faiss_load.h): a lock for the first load, an
 * atomic state for everyone after. */
#include "index/faiss_load.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/av_load.h"
#include "core/outcome.h"

#ifndef UFORM_FAISS_INSTALL_DIR
#define UFORM_FAISS_INSTALL_DIR ""
#endif
#ifndef UFORM_FAISS_BUILD_DIR
#define UFORM_FAISS_BUILD_DIR ""
#endif

static const struct {
    const char *name;
    size_t offset;
} symbols[] = {
    {"uform__faiss_version", offsetof(uform__faiss_api_t, version)},
    {"uform__faiss_create", offsetof(uform__faiss_api_t, create)},
    {"uform__faiss_describe", offsetof(uform__faiss_api_t, describe)},
    {"uform__faiss_centroids", offsetof(uform__faiss_api_t, centroids)},
    {"uform__faiss_train", offsetof(uform__faiss_api_t, train)},
    {"uform__faiss_add", offsetof(uform__faiss_api_t, add)},
    {"uform__faiss_serialize", offsetof(uform__faiss_api_t, serialize)},
    {"uform__faiss_deserialize", offsetof(uform__faiss_api_t, deserialize)},
    {"uform__faiss_search", offsetof(uform__faiss_api_t, search)},
    {"uform__faiss_free", offsetof(uform__faiss_api_t, free)},
};

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static int state; /* 0 not tried (or retry after exhaustion), 1 loaded, 2 failed for good; read atomically */
static uform__faiss_api_t api_table;
static char failure[UFORM_OUTCOME_MESSAGE_CAPACITY - 64];

typedef enum load_result_t { loaded, absent, exhausted } load_result_t;

/* Opens `path` and fills the table; on failure closes what it opened and says why in `reason`. */
static load_result_t open_module(const char *path, char *reason, size_t capacity) {
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        snprintf(reason, capacity, "%s: %s", path, why ? why : "dlopen gave no reason");
        return uform__dl_says_out_of_memory(why) ? exhausted : absent;
    }
    uint32_t (*abi)(void) = NULL;
    void *address = dlsym(handle, "uform__faiss_module_abi");
    memcpy(&abi, &address, sizeof abi);
    uint32_t found = abi ? abi() : 0;
    if (found != UFORM__FAISS_ABI) {
        snprintf(reason, capacity, "%s is stale: its interface is %u.%u, this libuform needs %u.%u (reinstall UForm)", path,
                 (unsigned)(found >> 16), (unsigned)(found & 0xFFFF), (unsigned)(UFORM__FAISS_ABI >> 16),
                 (unsigned)(UFORM__FAISS_ABI & 0xFFFF));
        dlclose(handle);
        return absent;
    }
    uform__faiss_api_t table;
    for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; ++i) {
        address = dlsym(handle, symbols[i].name);
        if (!address) {
            snprintf(reason, capacity, "%s has no function %s (a stale module: reinstall UForm)", path, symbols[i].name);
            dlclose(handle);
            return absent;
        }
        memcpy((char *)&table + symbols[i].offset, &address, sizeof address);
    }
    api_table = table;
    return loaded;
}

/* The folder of the binary that holds this function, into `folder` ("" when dladdr cannot say). */
static void own_folder(char *folder, size_t capacity) {
    folder[0] = 0;
    Dl_info info;
    if (!dladdr((void *)&uform__faiss_load, &info) || !info.dli_fname || !strchr(info.dli_fname, '/')) return;
    snprintf(folder, capacity, "%s", info.dli_fname);
    *strrchr(folder, '/') = 0;
}

static load_result_t load(char *reason, size_t capacity) {
    const char *variable = getenv(UFORM__FAISS_MODULE_VARIABLE);
    if (variable && variable[0]) {
        /* open_module's reason, sized so that the prefix and it fit `failure` whole */
        char said[sizeof failure - (sizeof UFORM__FAISS_MODULE_VARIABLE - 1) - (sizeof " is set: " - 1)];
        load_result_t result = open_module(variable, said, sizeof said);
        if (result != loaded) snprintf(reason, capacity, "%s is set: %s", UFORM__FAISS_MODULE_VARIABLE, said);
        return result;
    }
    char folders[3][PATH_MAX];
    own_folder(folders[0], sizeof folders[0]);
    snprintf(folders[1], sizeof folders[1], "%s", UFORM_FAISS_INSTALL_DIR);
    snprintf(folders[2], sizeof folders[2], "%s", UFORM_FAISS_BUILD_DIR);
    char looked[sizeof failure] = "";
    size_t used = 0;
    for (int i = 0; i < 3; ++i) {
        if (!folders[i][0] || (i > 0 && !strcmp(folders[i], folders[0])) || (i > 1 && !strcmp(folders[i], folders[1])))
            continue;
        char path[PATH_MAX + sizeof UFORM__FAISS_MODULE_NAME + 1];
        int written = snprintf(path, sizeof path, "%s/%s", folders[i], UFORM__FAISS_MODULE_NAME);
        struct stat info;
        if (written > 0 && (size_t)written < sizeof path && stat(path, &info) == 0) return open_module(path, reason, capacity);
        written = snprintf(looked + used, sizeof looked - used, "%s%s", used ? ", " : "", folders[i]);
        if (written > 0) used = (size_t)written < sizeof looked - used ? used + (size_t)written : sizeof looked - 1;
    }
    snprintf(reason, capacity, "%s is not installed (%s is unset; looked in %s)", UFORM__FAISS_MODULE_NAME,
             UFORM__FAISS_MODULE_VARIABLE, used ? looked : "no folder: dladdr could not say where libuform is");
    return absent;
}

uform_status_t uform__faiss_load(const uform__faiss_api_t **api, uform_outcome_t *outcome, const char *function) {
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
        if (result == loaded) {
            __atomic_store_n(&state, 1, __ATOMIC_RELEASE);
        } else if (result == absent) {
            memcpy(failure, reason, sizeof reason);
            state = 2;
            status = UFORM_UNSUPPORTED;
        } else {
            status = UFORM_OUT_OF_MEMORY;
        }
    } else if (state == 2) {
        memcpy(reason, failure, sizeof reason);
        status = UFORM_UNSUPPORTED;
    }
    pthread_mutex_unlock(&load_lock);
    if (status == UFORM_OK) {
        *api = &api_table;
        return UFORM_OK;
    }
    if (status == UFORM_OUT_OF_MEMORY)
        return uform__fail(outcome, status, function, "approximate indexes: cannot load the FAISS module: %s", reason);
    return uform__fail(outcome, status, function, "approximate indexes need %s (FAISS): %s", UFORM__FAISS_MODULE_NAME, reason);
}
