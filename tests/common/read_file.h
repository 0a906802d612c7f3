/* Tests' whole-file reader: the bytes of PATH in a malloc'd buffer the caller frees (never NULL
 * for an empty file), and their count in *size when size is not NULL; NULL when the file cannot be
 * opened, read whole, or allocated. */
#ifndef UFORM_TESTS_READ_FILE_H
#define UFORM_TESTS_READ_FILE_H

#include <stdio.h>
#include <stdlib.h>

static inline void *test_read_file(const char *path, size_t *size) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    long length = fseek(file, 0, SEEK_END) == 0 ? ftell(file) : -1;
    unsigned char *bytes = length >= 0 && fseek(file, 0, SEEK_SET) == 0 ? malloc(length > 0 ? (size_t)length : 1) : NULL;
    if (bytes && length > 0 && fread(bytes, 1, (size_t)length, file) != (size_t)length) {
        free(bytes);
        bytes = NULL;
    }
    fclose(file);
    if (bytes && size) *size = (size_t)length;
    return bytes;
}

#endif
