/*
 * Shards written by hand for the data fuzz targets' seeds (tar_seed.c): ustar members, pax 'x'
 * headers, GNU 'L' long names, and a gzip stream of stored deflate blocks, so no fixture is in git
 * and no tar or zlib library is needed to make them.
 */
#ifndef UFORM_TESTS_FUZZ_TAR_SEED_H
#define UFORM_TESTS_FUZZ_TAR_SEED_H

#include <stddef.h>
#include <stdint.h>

typedef struct tar_buffer_t {
    uint8_t *bytes;
    size_t size, capacity;
    int failed; /* set by the first allocation that failed; later calls do nothing */
} tar_buffer_t;

typedef enum tar_name_style_t {
    TAR_USTAR = 0,    /* the name in the header (at most 99 bytes) */
    TAR_PAX = 1,      /* a pax extended header with path=NAME before the member */
    TAR_GNU_LONG = 2  /* a GNU ././@LongLink 'L' member holding the name before the member */
} tar_name_style_t;

/* Appends one regular member named `name` holding `bytes`. */
void tar_add(tar_buffer_t *tar, tar_name_style_t style, const char *name, const void *bytes, size_t size);
/* Appends the two zero blocks that end an archive. */
void tar_end(tar_buffer_t *tar);
/* A gzip stream (RFC 1952) of `bytes` in stored deflate blocks (RFC 1951, 3.2.4): malloc'ed, NULL without memory. */
uint8_t *tar_gzip(const uint8_t *bytes, size_t size, size_t *out_size);

#endif
