/* Helpers shared by the media tests: reading fixtures and PIL references from the fixture folder. */
#ifndef UFORM_TESTS_MEDIA_COMMON_H
#define UFORM_TESTS_MEDIA_COMMON_H

#include <stdio.h>
#include <stdlib.h>

static const char *media_dir = ".";

/* Reads a whole file into a malloc'ed buffer, followed by a NUL byte not counted in `*size` (so
 * text headers can be parsed with sscanf); NULL (and a message) when missing. */
static uint8_t *media_read(const char *name, size_t *size) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", media_dir, name);
    FILE *file = fopen(path, "rb");
    if (!file) {
        fprintf(stderr, "missing fixture %s (run the media_fixtures test first)\n", path);
        *size = 0;
        return NULL;
    }
    fseek(file, 0, SEEK_END);
    long length = ftell(file);
    fseek(file, 0, SEEK_SET);
    uint8_t *bytes = malloc(length > 0 ? (size_t)length + 1 : 1);
    *size = fread(bytes, 1, (size_t)(length > 0 ? length : 0), file);
    bytes[*size] = 0;
    fclose(file);
    return bytes;
}

#endif
