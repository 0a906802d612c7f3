/*
 * The folder of a file's path, for the writers that put a temporary file beside their target and
 * the checks that the target's folder takes files.
 */
#ifndef UFORM_CORE_PATH_H
#define UFORM_CORE_PATH_H

#include <stdlib.h>
#include <string.h>

/* The folder that holds `path`, as a new string (the caller frees it): what stands before the last
 * '/', "/" for a file in the root, "." for a bare name. NULL when memory runs out. */
static inline char *uform__path_folder(const char *path) {
    const char *slash = strrchr(path, '/');
    size_t length = slash && slash != path ? (size_t)(slash - path) : 1;
    char *folder = malloc(length + 1);
    if (!folder) return NULL;
    if (slash) memcpy(folder, path, length);
    else folder[0] = '.';
    folder[length] = 0;
    return folder;
}

#endif
