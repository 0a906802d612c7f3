/*
 * Loading shared libraries on first use: FFmpeg (media/av_api.c), libarchive (data/archive_api.c)
 * and UForm's own C++ modules, the mesh's collectives on Gloo (mesh/gloo_load.c) and approximate
 * indexes on FAISS (index/faiss_load.c). libuform links none of them, so a process that never
 * decodes a video, reads a shard, joins a mesh or opens an approximate index never maps them (nor
 * the ≈140 shared objects Debian's FFmpeg drags in, nor libstdc++). This part knows none of their
 * types, so it compiles without their headers; each caller adds its typed function table on top.
 *
 * Where from, for a system library (`libraries`): the directory in the environment variable named
 * by `directory_variable` (UFORM_FFMPEG_DIR for FFmpeg) when it is set, else the system's search
 * path. Each library is opened by its soname, in the order given (dependencies first), so that
 * libraries taken from that directory also satisfy each other's DT_NEEDED entries. Its version
 * function must answer the major version it was opened for and at least the minor version the
 * code was written for.
 *
 * Where from, for one of UForm's modules (`module` set), first match wins:
 *   1. the path in the module's environment variable (UFORM_MESH_MODULE, UFORM_FAISS_MODULE) when
 *      it is set and not empty; then nothing else is tried, so a wrong path is reported rather than
 *      silently replaced;
 *   2. the folder of the binary that holds libuform (dladdr): libuform.so's own folder, or the
 *      program's for one linked with libuform.a;
 *   3. the install libdir (UFORM_MODULE_INSTALL_DIR, CMake's CMAKE_INSTALL_FULL_LIBDIR);
 *   4. the build folder (UFORM_MODULE_BUILD_DIR, CMake's PROJECT_BINARY_DIR), for the tests and
 *      tools run from the build tree.
 * A candidate that does not exist is skipped; the first that exists is opened, and its outcome is
 * the answer. The module's ABI function must answer the ABI this libuform was built with, exactly,
 * and the module must define every function of the table; a stale module is refused. The file name
 * carries libuform's ABI major ("libuform-gloo.so.4"), so that libuform.so.4 and a later
 * libuform.so.5 can share a library folder without opening each other's modules.
 *
 * Outcomes: UFORM_OK; UFORM_UNSUPPORTED naming the library that is missing, too old or stale, or
 * lacks a function (a permanent answer, remembered); UFORM_OUT_OF_MEMORY when loading ran out of
 * memory (glibc's dlerror names it, or a library refused twice while a probe allocation fails); a
 * library that is there and refused for another reason is UFORM_UNSUPPORTED, not remembered. Nothing
 * but a success and a missing library is remembered: the next call tries again. What loaded stays
 * loaded (Gloo's threads may outlive any one mesh). Loading runs the libraries' constructors, which
 * UForm does not own: under memory exhaustion some of Debian's FFmpeg dependencies print (GnuTLS)
 * or abort (C++ ones through bad_alloc, glibc's TLS setup). Never prints, exits or aborts itself.
 * Thread-safe: the first caller loads under a lock, later callers read the finished table.
 * Private to libuform.
 */
#ifndef UFORM_CORE_ON_DEMAND_H
#define UFORM_CORE_ON_DEMAND_H

#include <stddef.h>
#include <stdint.h>

#include "uform/uform.h"

/* One system library: `soname_format` holds one %u for the major version ("libavutil.so.%u"). */
typedef struct uform__on_demand_library_t {
    const char *soname_format;
    unsigned major, minor;       /* the version the code was written for (its headers') */
    const char *version_function; /* answers (major << 16 | minor << 8 | micro), e.g. "avutil_version";
                                     NULL: no check beyond the soname's major (libarchive's) */
    int optional;                /* loaded when present, so that others find it; not an error when absent */
} uform__on_demand_library_t;

/* One of UForm's own modules, found as the comment above says. */
typedef struct uform__on_demand_module_t {
    const char *file;         /* "libuform-gloo.so.4" */
    const char *variable;     /* "UFORM_MESH_MODULE" */
    const char *abi_function; /* "uform__gloo_module_abi", answering (major << 16 | minor) */
    uint32_t abi;             /* what it must answer */
} uform__on_demand_module_t;

/* One function: which library defines it (0 for a module), its name, and where its address goes
 * in the table. */
typedef struct uform__on_demand_symbol_t {
    unsigned library; /* index into the library list */
    const char *name;
    size_t offset;    /* byte offset of its function pointer in the table */
} uform__on_demand_symbol_t;

/* A set of libraries loaded together (or one module), and what became of the attempt.
 * Zero-initialised statically; `table` points at the caller's struct of function pointers. */
typedef struct uform__on_demand_t {
    const char *what;               /* "FFmpeg", "libuform-gloo.so.4 (Gloo)", for messages */
    const char *directory_variable; /* "UFORM_FFMPEG_DIR"; NULL for a module */
    const uform__on_demand_library_t *libraries; /* NULL for a module */
    size_t library_count;
    const uform__on_demand_module_t *module;     /* NULL for system libraries */
    const uform__on_demand_symbol_t *symbols;
    size_t symbol_count;
    void *table;
    /* state, guarded by the loaders' lock; `state` is read atomically */
    int state;                      /* 0 not tried or retry, 1 loaded, 2 failed for good */
    void *handles[8];
    char failure[UFORM_OUTCOME_MESSAGE_CAPACITY - 64];
} uform__on_demand_t;

/* Loads the libraries and fills the table on the first call; later calls answer at once.
 * On failure the outcome says "<caller_what> needs <what>: <reason>" (or "<caller_what>: <reason>"
 * when memory ran out), on behalf of `function`. */
uform_status_t uform__on_demand_require(uform__on_demand_t *loader, const char *caller_what, const char *function,
                                        uform_outcome_t *outcome);

/* Whether the libraries are loaded (for a caller's cheap "is it there yet" check). */
int uform__on_demand_loaded(const uform__on_demand_t *loader);

/* How to read dlerror's text: non-zero when it says dlopen ran out of memory, or that a file is
 * not there. */
int uform__dl_says_out_of_memory(const char *reason);
int uform__dl_says_missing(const char *reason);

#endif
