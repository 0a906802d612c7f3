/* Shared libraries loaded on first use (on_demand.h). */
#include "core/on_demand.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/outcome.h"

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

/* dlopen explains itself only in text. When its own allocations fail, glibc says "Cannot allocate
 * memory" (strerror of ENOMEM), "out of memory", "cannot allocate ..." or "cannot create ..."
 * ("shared object descriptor", "searchlist", "cache for search path", "RUNPATH/RPATH copy"). */
int uform__dl_says_out_of_memory(const char *reason) {
    return reason && (strstr(reason, "Cannot allocate memory") || strstr(reason, "out of memory") || strstr(reason, "cannot allocate") ||
                      strstr(reason, "cannot create "));
}

/* A library that is not there: the one failure worth remembering (with version and symbol checks). */
int uform__dl_says_missing(const char *reason) {
    return reason && strstr(reason, "No such file or directory");
}

#ifndef UFORM_MODULE_INSTALL_DIR
#define UFORM_MODULE_INSTALL_DIR ""
#endif
#ifndef UFORM_MODULE_BUILD_DIR
#define UFORM_MODULE_BUILD_DIR ""
#endif

static size_t handle_count(const uform__on_demand_t *loader) { return loader->module ? 1 : loader->library_count; }

static void close_all(uform__on_demand_t *loader) {
    for (size_t i = 0; i < handle_count(loader); ++i)
        if (loader->handles[i]) {
            dlclose(loader->handles[i]);
            loader->handles[i] = NULL;
        }
}

/* What an attempt to load came to. */
typedef enum load_result_t {
    loaded,    /* every library and function is there */
    absent,    /* a library is missing, too old, or lacks a function: the same answer forever */
    exhausted, /* the loader's own allocations failed (glibc said so) */
    refused,   /* a library is there and would not load, for a reason glibc did not name as memory */
} load_result_t;

/* A reason, cut to `capacity` (the outcome's message is shorter than a path can be). */
__attribute__((format(printf, 3, 4))) static void say(char *reason, size_t capacity, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(reason, capacity, format, arguments);
    va_end(arguments);
}

/* Opens the system libraries in order; leaves the reason in `reason`. */
static load_result_t load_libraries(uform__on_demand_t *loader, char *reason, size_t capacity) {
    const char *directory = getenv(loader->directory_variable);
    if (directory && !directory[0]) directory = NULL;
    for (size_t i = 0; i < loader->library_count; ++i) {
        const uform__on_demand_library_t *library = &loader->libraries[i];
        char soname[64], path[4096];
        snprintf(soname, sizeof soname, library->soname_format, library->major);
        if (directory) snprintf(path, sizeof path, "%s/%s", directory, soname);
        else snprintf(path, sizeof path, "%s", soname);
        loader->handles[i] = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!loader->handles[i]) {
            const char *why = dlerror();
            if (uform__dl_says_out_of_memory(why)) {
                say(reason, capacity, "cannot allocate what loading %s needs (%s)", soname, why);
                return exhausted;
            }
            if (library->optional && uform__dl_says_missing(why)) continue;
            if (!uform__dl_says_missing(why)) {
                say(reason, capacity, "%s does not load (%s)", soname, why ? why : "unknown reason");
                return refused;
            }
            if (directory)
                say(reason, capacity, "%s cannot be loaded from %s=%s: %s", soname, loader->directory_variable, directory, why);
            else
                say(reason, capacity, "%s cannot be loaded (%s); install %s or set %s to a folder holding its libraries", soname,
                    why, loader->what, loader->directory_variable);
            return absent;
        }
        if (!library->version_function) continue; /* the soname's major alone pins the ABI */
        unsigned (*version)(void) = NULL;
        void *address = dlsym(loader->handles[i], library->version_function);
        memcpy(&version, &address, sizeof version);
        unsigned found = version ? version() : 0;
        unsigned found_major = found >> 16, found_minor = found >> 8 & 0xFF;
        if (!version || found_major != library->major || found_minor < library->minor) {
            say(reason, capacity, "%s is version %u.%u.%u; this build was written for %u.%u or a newer %u.x", soname, found_major,
                found_minor, found & 0xFF, library->major, library->minor, library->major);
            return absent;
        }
    }
    return loaded;
}

/* Opens the module at `path` into handles[0] and checks its ABI. */
static load_result_t open_module(uform__on_demand_t *loader, const char *path, char *reason, size_t capacity) {
    const uform__on_demand_module_t *module = loader->module;
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
    void *address = dlsym(handle, module->abi_function);
    memcpy(&abi, &address, sizeof abi);
    uint32_t found = abi ? abi() : 0;
    if (found != module->abi) {
        say(reason, capacity, "%s is stale: its interface is %u.%u, this libuform needs %u.%u (reinstall UForm)", path,
            (unsigned)(found >> 16), (unsigned)(found & 0xFFFF), (unsigned)(module->abi >> 16), (unsigned)(module->abi & 0xFFFF));
        dlclose(handle);
        return absent;
    }
    loader->handles[0] = handle;
    return loaded;
}

/* The folder of the binary that holds libuform, into `folder` ("" when dladdr cannot say). */
static void own_folder(char *folder, size_t capacity) {
    folder[0] = 0;
    Dl_info info;
    if (!dladdr((void *)&uform__on_demand_require, &info) || !info.dli_fname || !strchr(info.dli_fname, '/')) return;
    snprintf(folder, capacity, "%s", info.dli_fname);
    *strrchr(folder, '/') = 0;
}

/* Finds and opens the module (on_demand.h's search). */
static load_result_t load_module(uform__on_demand_t *loader, char *reason, size_t capacity) {
    const uform__on_demand_module_t *module = loader->module;
    const char *variable = getenv(module->variable);
    if (variable && variable[0]) {
        char said[sizeof loader->failure];
        load_result_t result = open_module(loader, variable, said, sizeof said);
        if (result == absent || result == refused) say(reason, capacity, "%s=%s: %s", module->variable, variable, said);
        else if (result != loaded) say(reason, capacity, "%s", said);
        return result;
    }
    char folders[3][PATH_MAX];
    own_folder(folders[0], sizeof folders[0]);
    snprintf(folders[1], sizeof folders[1], "%s", UFORM_MODULE_INSTALL_DIR);
    snprintf(folders[2], sizeof folders[2], "%s", UFORM_MODULE_BUILD_DIR);
    char looked[sizeof loader->failure] = "";
    size_t used = 0;
    for (int i = 0; i < 3; ++i) {
        if (!folders[i][0] || (i > 0 && !strcmp(folders[i], folders[0])) || (i > 1 && !strcmp(folders[i], folders[1])))
            continue; /* the build folder is libuform.so's own when the tests run there */
        char path[PATH_MAX + 64];
        int written = snprintf(path, sizeof path, "%s/%s", folders[i], module->file);
        struct stat info;
        if (written > 0 && (size_t)written < sizeof path && stat(path, &info) == 0)
            return open_module(loader, path, reason, capacity);
        written = snprintf(looked + used, sizeof looked - used, "%s%s", used ? ", " : "", folders[i]);
        if (written > 0) used = (size_t)written < sizeof looked - used ? used + (size_t)written : sizeof looked - 1;
    }
    say(reason, capacity, "%s is not installed (%s is unset; looked in %s)", module->file, module->variable,
        used ? looked : "no folder: dladdr could not say where libuform is");
    return absent;
}

/* Loads everything or nothing; leaves the reason in `reason`. */
static load_result_t load(uform__on_demand_t *loader, char *reason, size_t capacity) {
    load_result_t result = loader->module ? load_module(loader, reason, capacity) : load_libraries(loader, reason, capacity);
    if (result != loaded) return result;
    for (size_t s = 0; s < loader->symbol_count; ++s) {
        const uform__on_demand_symbol_t *symbol = &loader->symbols[s];
        void *address = loader->handles[symbol->library] ? dlsym(loader->handles[symbol->library], symbol->name) : NULL;
        if (!address) {
            if (loader->module) {
                say(reason, capacity, "%s has no function %s (a stale module: reinstall UForm)", loader->module->file,
                    symbol->name);
            } else {
                char soname[64];
                snprintf(soname, sizeof soname, loader->libraries[symbol->library].soname_format,
                         loader->libraries[symbol->library].major);
                say(reason, capacity, "%s has no function %s", soname, symbol->name);
            }
            return absent;
        }
        memcpy((char *)loader->table + symbol->offset, &address, sizeof address);
    }
    return loaded;
}

int uform__on_demand_loaded(const uform__on_demand_t *loader) { return __atomic_load_n(&loader->state, __ATOMIC_ACQUIRE) == 1; }

uform_status_t uform__on_demand_require(uform__on_demand_t *loader, const char *caller_what, const char *function,
                                        uform_outcome_t *outcome) {
    if (__atomic_load_n(&loader->state, __ATOMIC_ACQUIRE) == 1) return UFORM_OK;
    pthread_mutex_lock(&load_lock);
    uform_status_t status = UFORM_OK;
    char reason[sizeof loader->failure];
    reason[0] = 0;
    if (loader->state == 0) {
        load_result_t result = load(loader, reason, sizeof reason);
        if (result == refused) { /* glibc reports some failed allocations vaguely: once more, memory may be back */
            close_all(loader);
            result = load(loader, reason, sizeof reason);
        }
        if (result == refused) { /* twice: exhaustion if the allocator cannot serve a small block now */
            void *probe = malloc((size_t)1 << 16);
            if (!probe) result = exhausted;
            free(probe);
        }
        if (result == loaded) {
            __atomic_store_n(&loader->state, 1, __ATOMIC_RELEASE);
        } else {
            close_all(loader);
            if (result == absent) { /* the same answer for everyone from now on */
                memcpy(loader->failure, reason, sizeof reason);
                loader->state = 2;
            }
            status = result == exhausted ? UFORM_OUT_OF_MEMORY : UFORM_UNSUPPORTED;
        }
    } else if (loader->state == 2) {
        status = UFORM_UNSUPPORTED;
        memcpy(reason, loader->failure, sizeof reason);
    }
    pthread_mutex_unlock(&load_lock);
    if (status == UFORM_OK) return UFORM_OK;
    if (status == UFORM_OUT_OF_MEMORY) return uform__fail(outcome, status, function, "%s: %s", caller_what, reason);
    return uform__fail(outcome, status, function, "%s needs %s: %s", caller_what, loader->what, reason);
}
