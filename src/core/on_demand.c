/* Shared libraries loaded on first use (av_load.h). */
#include "core/av_load.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void close_all(uform__av_loader_t *loader) {
    for (size_t i = 0; i < loader->library_count; ++i)
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

/* Loads everything or nothing; leaves the reason in `reason`. */
static load_result_t load(uform__av_loader_t *loader, char *reason, size_t capacity) {
    const char *directory = getenv(loader->directory_variable);
    if (directory && !directory[0]) directory = NULL;
    for (size_t i = 0; i < loader->library_count; ++i) {
        const uform__av_library_t *library = &loader->libraries[i];
        char soname[64], path[4096];
        snprintf(soname, sizeof soname, library->soname_format, library->major);
        if (directory) snprintf(path, sizeof path, "%s/%s", directory, soname);
        else snprintf(path, sizeof path, "%s", soname);
        loader->handles[i] = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!loader->handles[i]) {
            const char *why = dlerror();
            if (uform__dl_says_out_of_memory(why)) {
                snprintf(reason, capacity, "cannot allocate what loading %s needs (%s)", soname, why);
                return exhausted;
            }
            if (library->optional && uform__dl_says_missing(why)) continue;
            if (!uform__dl_says_missing(why)) {
                snprintf(reason, capacity, "%s does not load (%s)", soname, why ? why : "unknown reason");
                return refused;
            }
            if (directory)
                snprintf(reason, capacity, "%s cannot be loaded from %s=%s: %s", soname, loader->directory_variable, directory, why);
            else
                snprintf(reason, capacity, "%s cannot be loaded (%s); install %s or set %s to a folder holding its libraries", soname,
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
            snprintf(reason, capacity, "%s is version %u.%u.%u; this build was written for %u.%u or a newer %u.x", soname, found_major,
                     found_minor, found & 0xFF, library->major, library->minor, library->major);
            return absent;
        }
    }
    for (size_t s = 0; s < loader->symbol_count; ++s) {
        const uform__av_symbol_t *symbol = &loader->symbols[s];
        void *address = loader->handles[symbol->library] ? dlsym(loader->handles[symbol->library], symbol->name) : NULL;
        if (!address) {
            char soname[64];
            snprintf(soname, sizeof soname, loader->libraries[symbol->library].soname_format, loader->libraries[symbol->library].major);
            snprintf(reason, capacity, "%s has no function %s", soname, symbol->name);
            return absent;
        }
        memcpy((char *)loader->table + symbol->offset, &address, sizeof address);
    }
    return loaded;
}

uform_status_t uform__av_loader_require(uform__av_loader_t *loader, const char *caller_what, const char *function,
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
