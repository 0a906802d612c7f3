/*
 * Loading shared libraries on first use, for FFmpeg (av_api.c) or any other heavy optional
 * dependency: libuform links none of them, so a process that never decodes a video never maps
 * FFmpeg and the ≈140 shared objects Debian's build drags in. This part knows no FFmpeg type, so
 * it compiles without FFmpeg's headers; av_api.h adds the typed function table on top.
 *
 * Where from: the directory in the environment variable named by `directory_variable`
 * (UFORM_FFMPEG_DIR for FFmpeg) when it is set, else the system's search path. Each library is
 * opened by its soname, in the order given (dependencies first), so that libraries taken from
 * that directory also satisfy each other's DT_NEEDED entries. Its version function must answer
 * the major version it was opened for and at least the minor version the code was written for.
 *
 * Outcomes: UFORM_OK; UFORM_UNSUPPORTED naming the library that is missing, too old, or lacks a
 * function (a permanent answer, remembered); UFORM_OUT_OF_MEMORY when loading ran out of memory
 * (glibc's dlerror names it, or a library refused twice while a probe allocation fails); a library
 * that is there and refused for another reason is UFORM_UNSUPPORTED, not remembered. Nothing but
 * a success and a missing library is remembered: the next call tries again. Loading runs the
 * libraries' constructors, which UForm does not own: under memory exhaustion some of Debian's
 * FFmpeg dependencies print (GnuTLS) or abort (C++ ones through bad_alloc, glibc's TLS setup).
 * Thread-safe: the first caller loads under a lock, later callers read the finished table.
 * Private to libuform.
 */
#ifndef UFORM_CORE_AV_LOAD_H
#define UFORM_CORE_AV_LOAD_H

#include <stddef.h>

#include "uform/uform.h"

/* One library: `soname_format` holds one %u for the major version ("libavutil.so.%u"). */
typedef struct uform__av_library_t {
    const char *soname_format;
    unsigned major, minor;       /* the version the code was written for (its headers') */
    const char *version_function; /* answers (major << 16 | minor << 8 | micro), e.g. "avutil_version";
                                     NULL: no check beyond the soname's major (libarchive's) */
    int optional;                /* loaded when present, so that others find it; not an error when absent */
} uform__av_library_t;

/* One function: which library defines it, its name, and where its address goes in the table. */
typedef struct uform__av_symbol_t {
    unsigned library; /* index into the library list */
    const char *name;
    size_t offset;    /* byte offset of its function pointer in the table */
} uform__av_symbol_t;

/* A set of libraries loaded together, and what became of the attempt. Zero-initialised statically;
 * `table` points at the caller's struct of function pointers. */
typedef struct uform__av_loader_t {
    const char *what;               /* "FFmpeg", for messages */
    const char *directory_variable; /* "UFORM_FFMPEG_DIR" */
    const uform__av_library_t *libraries;
    size_t library_count;
    const uform__av_symbol_t *symbols;
    size_t symbol_count;
    void *table;
    /* state, guarded by the loader's lock; `state` is read atomically */
    int state;                      /* 0 not tried or retry, 1 loaded, 2 failed for good */
    void *handles[8];
    char failure[UFORM_OUTCOME_MESSAGE_CAPACITY - 64];
} uform__av_loader_t;

/* Loads the libraries and fills the table on the first call; later calls answer at once.
 * On failure the outcome names `caller_what` (e.g. "video") and the library at fault, on behalf
 * of `function`. */
uform_status_t uform__av_loader_require(uform__av_loader_t *loader, const char *caller_what, const char *function,
                                        uform_outcome_t *outcome);

/* How to read dlerror's text, for this loader and the mesh's (mesh/gloo_load.c): non-zero when it
 * says dlopen ran out of memory, or that a file is not there. */
int uform__dl_says_out_of_memory(const char *reason);
int uform__dl_says_missing(const char *reason);

#endif
