/*
 * A growing tape of items (bytes end to end with count + 1 offsets) for the command line's tools:
 * texts given on the command line, or whole files read into memory. Header-only.
 */
#ifndef UFORM_TOOLS_ITEM_LIST_H
#define UFORM_TOOLS_ITEM_LIST_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct item_list_t {
    unsigned char *data;
    size_t *offsets;
    size_t count, used, capacity;
} item_list_t;

/* Appends one item; 0, or -1 without memory (the list is unchanged). */
static inline int item_list_add(item_list_t *list, const void *bytes, size_t length) {
    if (list->used + length > list->capacity) {
        size_t capacity = (list->used + length) * 2 + 1024;
        unsigned char *grown = realloc(list->data, capacity);
        if (!grown) return -1;
        list->data = grown, list->capacity = capacity;
    }
    size_t *offsets = realloc(list->offsets, (list->count + 2) * sizeof *offsets);
    if (!offsets) return -1;
    list->offsets = offsets;
    if (list->count == 0) list->offsets[0] = 0;
    memcpy(list->data + list->used, bytes, length);
    list->used += length;
    list->offsets[++list->count] = list->used;
    return 0;
}

/* Appends a whole file as one item; 0, or -1 after printing "uform: cannot open/read 'path': ..."
 * on stderr. */
static inline int item_list_add_file(item_list_t *list, const char *path) {
    FILE *file = fopen(path, "rb");
    if (!file) {
        fprintf(stderr, "uform: cannot open '%s': %s\n", path, strerror(errno));
        return -1;
    }
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    unsigned char *bytes = malloc(size > 0 ? (size_t)size : 1);
    int ok = bytes && (size <= 0 || fread(bytes, 1, (size_t)size, file) == (size_t)size);
    fclose(file);
    if (!ok || item_list_add(list, bytes, size > 0 ? (size_t)size : 0) != 0) {
        fprintf(stderr, "uform: cannot read '%s'\n", path);
        free(bytes);
        return -1;
    }
    free(bytes);
    return 0;
}

static inline void item_list_free(item_list_t *list) {
    free(list->data), free(list->offsets);
    memset(list, 0, sizeof *list);
}

#endif
